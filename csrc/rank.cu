// Rank filters (median, percentile, rank) over a footprint of an up to 4-D
// array. Three kernels, picked on the host (src/gpu/rank.rs):
//   rank_network<CAP>: footprints of up to CAP points (9, 25, 49, 81; 9 and
//     25 for 8-byte values). Each
//     thread loads its window's keys into registers and sorts them with
//     Batcher's odd-even merge network, pruned at compile time to CAP inputs.
//   rank_sliding: 8-bit values, box footprints. Each thread slides down a
//     segment along n[2] keeping a 256-bin histogram of its window in shared
//     memory (Huang's method): per step, the leaving and entering slabs of
//     the box, then the rank bin moves from where it was.
//   rank_digits: any footprint and width. Radix selection, one byte of the
//     key per pass, through a 256-bin histogram per thread in shared memory.
//   median3x3: the median of 3 x 3 boxes along the last two axes, each
//     row's three values sorted once for the three outputs that share them.
// Values are compared as unsigned keys of their width: the bits as they are
// (unsigned), the sign flipped (signed), or the IEEE order with every NaN
// above +inf (float).
#include "boundary.cuh"
#include "kernpack_params.h"

namespace kp {
namespace rank {

// Values travel as raw bits: `Bits32` for elements of 1, 2 or 4 bytes (the
// width a run-time parameter, keys of 32 bits), `Bits64` for 8 bytes.
struct Bits32 {
    typedef uint32_t K;
    typedef unsigned char Raw;
    __device__ static uint32_t load(const unsigned char* in, int64_t i, int width) {
        if (width == 1) return __ldg(in + i);
        if (width == 2) return __ldg(reinterpret_cast<const unsigned short*>(in) + i);
        return __ldg(reinterpret_cast<const unsigned int*>(in) + i);
    }
    __device__ static void store(unsigned char* out, int64_t i, int width, uint32_t v) {
        if (width == 1) out[i] = (unsigned char)v;
        else if (width == 2) reinterpret_cast<unsigned short*>(out)[i] = (unsigned short)v;
        else reinterpret_cast<unsigned int*>(out)[i] = v;
    }
};
struct Bits64 {
    typedef unsigned long long K;
    typedef unsigned long long Raw;
    __device__ static K load(const unsigned long long* in, int64_t i, int) { return __ldg(in + i); }
    __device__ static void store(unsigned long long* out, int64_t i, int, K v) { out[i] = v; }
};

// The order-preserving key of raw bits of `width` bytes.
template <typename K> __device__ __forceinline__ K to_key(K b, int width, int kind) {
    const K sign = K(1) << (8 * width - 1);
    const K all = sign | (sign - 1);
    if (kind == KP_RANK_FLOAT) {
        // Every NaN as the positive quiet NaN (floats are 4 or 8 bytes).
        const K inf = width == 4 ? K(0x7f800000u) : K(0x7ff0000000000000ull);
        const K qnan = width == 4 ? K(0x7fc00000u) : K(0x7ff8000000000000ull);
        if ((b & ~sign) > inf) b = qnan;
        return (b & sign) ? (~b & all) : (b | sign);
    }
    return kind == KP_RANK_SIGNED ? b ^ sign : b;
}

template <typename K> __device__ __forceinline__ K from_key(K k, int width, int kind) {
    const K sign = K(1) << (8 * width - 1);
    const K all = sign | (sign - 1);
    if (kind == KP_RANK_FLOAT) return (k & sign) ? (k & ~sign) : (~k & all);
    return kind == KP_RANK_SIGNED ? k ^ sign : k;
}

template <typename K> __device__ __forceinline__ void exchange(K& a, K& b) {
    const K lo = min(a, b);
    b = max(a, b);
    a = lo;
}

// Batcher's odd-even merge sort of a[LO .. LO + N) (N a power of two), with
// the comparators that touch an index >= CAP left out: those points are
// padding above every key and would never move.
template <int LO, int N, int R, int CAP, typename K> __device__ __forceinline__ void merge(K (&a)[CAP]) {
    constexpr int STEP = 2 * R;
    if constexpr (STEP < N) {
        merge<LO, N, STEP>(a);
        merge<LO + R, N, STEP>(a);
#pragma unroll
        for (int i = LO + R; i + R < LO + N; i += STEP) {
            if (i + R < CAP) exchange(a[i], a[i + R]);
        }
    } else if constexpr (LO + R < CAP) {
        exchange(a[LO], a[LO + R]);
    }
}

template <int LO, int N, int CAP, typename K> __device__ __forceinline__ void sort(K (&a)[CAP]) {
    if constexpr (N > 1 && LO < CAP) {
        sort<LO, N / 2>(a);
        sort<LO + N / 2, N / 2>(a);
        merge<LO, N, 1>(a);
    }
}

__host__ __device__ constexpr int pow2_at_least(int n) { return n <= 1 ? 1 : 2 * pow2_at_least((n + 1) / 2); }

// The work units of a 1-D grid: (block of x along n[3], segment of rows
// along n[2], plane of n[0] x n[1]); each thread walks the rows of its
// segment at its x. The divisions happen once per unit.
#define KP_RANK_FOR_EACH_UNIT(p, x, c, r_end, ...)                                                  \
    for (int64_t u = blockIdx.x; u < (p).units; u += gridDim.x) {                                 \
        const int64_t rest = u / (p).xblocks;                                                    \
        const int64_t x = (u - rest * (p).xblocks) * blockDim.x + threadIdx.x;                  \
        const int64_t plane = rest / (p).segments;                                               \
        int64_t c[4];                                                                            \
        c[0] = plane / (p).n[1];                                                                 \
        c[1] = plane - c[0] * (p).n[1];                                                          \
        c[2] = (rest - plane * (p).segments) * (p).segment;                                      \
        c[3] = x;                                                                                \
        const int64_t r_end = min(c[2] + (p).segment, (p).n[2]);                                 \
        if (x < (p).n[3]) {                                                                      \
            __VA_ARGS__                                                                          \
        }                                                                                        \
    }

__device__ __forceinline__ bool inside(const kp_rank_params& p, const int64_t (&c)[4]) {
    bool in = true;
#pragma unroll
    for (int a = 0; a < 4; ++a) in = in && p.lo[a] <= c[a] && c[a] < p.hi[a];
    return in;
}

__device__ __forceinline__ int64_t flat(const kp_rank_params& p, const int64_t (&c)[4]) {
    return ((c[0] * p.n[1] + c[1]) * p.n[2] + c[2]) * p.n[3] + c[3];
}

// Where index i of an axis of n points reads (-1: the constant). Not
// inlined: its 64-bit remainders are large, and every edge path calls it.
__device__ __noinline__ int64_t extend_at(int64_t i, int64_t n, int mode) { return stencil::extend(i, n, mode); }

// The key of footprint point j for the output at c, through the boundary mode.
template <typename Bits>
__device__ __noinline__ typename Bits::K edge_key(const typename Bits::Raw* in, const int64_t* taps, int64_t j,
                                                  const kp_rank_params& p, const int64_t* c,
                                                  typename Bits::K cval) {
    int64_t at = 0;
    for (int a = 0; a < 4; ++a) {
        const int64_t i = extend_at(c[a] + __ldg(taps + 5 * j + 1 + a), p.n[a], p.mode);
        if (i < 0) return cval;
        at = at * p.n[a] + i;
    }
    return to_key(Bits::load(in, at, p.width), p.width, p.kind);
}

// `edge`: KP_RANK_NETWORK_THREADS x CAP keys of shared memory, where outputs
// near an edge gather their window in a loop (the unrolled gather of the
// others would otherwise carry the boundary code at every point).
template <typename Bits, int CAP>
__device__ __forceinline__ void rank_network(const typename Bits::Raw* __restrict__ in,
                                             typename Bits::Raw* __restrict__ out, const int64_t* __restrict__ taps,
                                             const kp_rank_params& p, typename Bits::K* edge) {
    typedef typename Bits::K K;
    __shared__ int64_t offsets[CAP];
    for (int j = threadIdx.x; j < CAP; j += blockDim.x) offsets[j] = j < p.count ? taps[5 * j] : 0;
    __syncthreads();
    const int t = threadIdx.x;
    const K cval = to_key((K)p.cval, p.width, p.kind);
    const int count = (int)p.count, rank = (int)p.rank;
    KP_RANK_FOR_EACH_UNIT(p, x, c, r_end, for (; c[2] < r_end; ++c[2]) {
        const int64_t o = flat(p, c);
        K a[CAP];
        if (inside(p, c)) {
#pragma unroll
            for (int j = 0; j < CAP; ++j) a[j] = j < count ? to_key(Bits::load(in, o + offsets[j], p.width), p.width, p.kind) : ~K(0);
        } else {
            for (int j = 0; j < count; ++j) edge[j * KP_RANK_NETWORK_THREADS + t] = edge_key<Bits>(in, taps, j, p, c, cval);
#pragma unroll
            for (int j = 0; j < CAP; ++j) a[j] = j < count ? edge[j * KP_RANK_NETWORK_THREADS + t] : ~K(0);
        }
        sort<0, pow2_at_least(CAP)>(a);
        // The OR of the keys masked by rank: an `a[rank]` would put the
        // array in local memory.
        K r = 0;
#pragma unroll
        for (int j = 0; j < CAP; ++j) r |= a[j] & (K(0) - K(j == rank));
        Bits::store(out, o, p.width, from_key(r, p.width, p.kind));
    })
}

template <typename Bits>
__device__ __forceinline__ void rank_digits(const typename Bits::Raw* __restrict__ in,
                                            typename Bits::Raw* __restrict__ out, const int64_t* __restrict__ taps,
                                            const kp_rank_params& p, uint32_t* hist) {
    typedef typename Bits::K K;
    const int t = threadIdx.x;
    for (int b = 0; b < 256; ++b) hist[b * KP_RANK_DIGIT_THREADS + t] = 0;
    const K cval = to_key((K)p.cval, p.width, p.kind);
    KP_RANK_FOR_EACH_UNIT(p, x, c, r_end, for (; c[2] < r_end; ++c[2]) {
        const int64_t o = flat(p, c);
        const bool in_array = inside(p, c);
        K prefix = 0, known = 0;
        int64_t want = p.rank;
        for (int shift = 8 * p.width - 8; shift >= 0; shift -= 8) {
            for (int64_t j = 0; j < p.count; ++j) {
                const K k = in_array ? to_key(Bits::load(in, o + __ldg(taps + 5 * j), p.width), p.width, p.kind)
                                     : edge_key<Bits>(in, taps, j, p, c, cval);
                if ((k & known) == prefix) ++hist[((k >> shift) & 255) * KP_RANK_DIGIT_THREADS + t];
            }
            // The digit holding rank `want`; the histogram cleared on the way.
            int digit = -1;
            int64_t below = 0;
            for (int b = 0; b < 256; ++b) {
                const uint32_t h = hist[b * KP_RANK_DIGIT_THREADS + t];
                hist[b * KP_RANK_DIGIT_THREADS + t] = 0;
                if (digit < 0) {
                    if (below + h > want) digit = b;
                    else below += h;
                }
            }
            want -= below;
            prefix |= (K)digit << shift;
            known |= (K)255 << shift;
        }
        Bits::store(out, o, p.width, from_key(prefix, p.width, p.kind));
    })
}

// 8-bit values, a box footprint: each thread slides down its unit's segment
// of rows.
__device__ __forceinline__ void rank_sliding(const unsigned char* __restrict__ in, unsigned char* __restrict__ out,
                                             const kp_rank_params& p, uint16_t* hist) {
    const int t = threadIdx.x;
    for (int b = 0; b < 256; ++b) hist[b * KP_RANK_SLIDING_THREADS + t] = 0;
    const int cval = (int)to_key((uint32_t)p.cval, 1, p.kind);
    KP_RANK_FOR_EACH_UNIT(p, x, c, r_end, {
        const bool cols_inside = x + p.first[3] >= 0 && x + p.first[3] + p.size[3] <= p.n[3];
        int m = 0;       // the bin of the rank
        int64_t lt = 0;  // points of the window below bin m
        // Adds d (+1 or -1) for every point of the box's slab at row r.
        auto slab = [&](int64_t r, int d) {
            const int64_t rr = extend_at(r, p.n[2], p.mode);
            for (int64_t a0 = 0; a0 < p.size[0]; ++a0) {
                const int64_t i0 = extend_at(c[0] + p.first[0] + a0, p.n[0], p.mode);
                for (int64_t a1 = 0; a1 < p.size[1]; ++a1) {
                    const int64_t i1 = extend_at(c[1] + p.first[1] + a1, p.n[1], p.mode);
                    if (rr < 0 || i0 < 0 || i1 < 0) {
                        hist[cval * KP_RANK_SLIDING_THREADS + t] += d * (int)p.size[3];
                        lt += cval < m ? d * p.size[3] : 0;
                        continue;
                    }
                    const unsigned char* line = in + ((i0 * p.n[1] + i1) * p.n[2] + rr) * p.n[3];
                    for (int64_t a3 = 0; a3 < p.size[3]; ++a3) {
                        int k;
                        if (cols_inside) {
                            k = (int)to_key((uint32_t)__ldg(line + x + p.first[3] + a3), 1, p.kind);
                        } else {
                            const int64_t i3 = extend_at(x + p.first[3] + a3, p.n[3], p.mode);
                            k = i3 < 0 ? cval : (int)to_key((uint32_t)__ldg(line + i3), 1, p.kind);
                        }
                        hist[k * KP_RANK_SLIDING_THREADS + t] += d;
                        lt += k < m ? d : 0;
                    }
                }
            }
        };
        // Slides the window down one row: the slab at row `leaving` out, the
        // one `size[2]` rows below in, read side by side.
        auto move = [&](int64_t leaving) {
            const int64_t r_out = extend_at(leaving, p.n[2], p.mode);
            const int64_t r_in = extend_at(leaving + p.size[2], p.n[2], p.mode);
            if (r_out < 0 || r_in < 0 || !cols_inside) {
                slab(leaving, -1);
                slab(leaving + p.size[2], 1);
                return;
            }
            for (int64_t a0 = 0; a0 < p.size[0]; ++a0) {
                const int64_t i0 = extend_at(c[0] + p.first[0] + a0, p.n[0], p.mode);
                for (int64_t a1 = 0; a1 < p.size[1]; ++a1) {
                    const int64_t i1 = extend_at(c[1] + p.first[1] + a1, p.n[1], p.mode);
                    if (i0 < 0 || i1 < 0) continue;  // the constant leaves as it enters
                    const int64_t plane = (i0 * p.n[1] + i1) * p.n[2];
                    const unsigned char* out_line = in + (plane + r_out) * p.n[3] + x + p.first[3];
                    const unsigned char* in_line = in + (plane + r_in) * p.n[3] + x + p.first[3];
                    const int width = (int)p.size[3];
#pragma unroll 4
                    for (int a3 = 0; a3 < width; ++a3) {
                        const int k_out = (int)to_key((uint32_t)__ldg(out_line + a3), 1, p.kind);
                        const int k_in = (int)to_key((uint32_t)__ldg(in_line + a3), 1, p.kind);
                        hist[k_out * KP_RANK_SLIDING_THREADS + t] -= 1;
                        hist[k_in * KP_RANK_SLIDING_THREADS + t] += 1;
                        lt += (k_in < m) - (k_out < m);
                    }
                }
            }
        };
        const int64_t r0 = c[2];
        for (int64_t a2 = 0; a2 < p.size[2]; ++a2) slab(r0 + p.first[2] + a2, 1);
        for (int64_t r = r0; r < r_end; ++r) {
            if (r > r0) move(r - 1 + p.first[2]);
            while (lt > p.rank) {
                --m;
                lt -= hist[m * KP_RANK_SLIDING_THREADS + t];
            }
            while (lt + hist[m * KP_RANK_SLIDING_THREADS + t] <= p.rank) {
                lt += hist[m * KP_RANK_SLIDING_THREADS + t];
                ++m;
            }
            c[2] = r;
            out[flat(p, c)] = (unsigned char)from_key((uint32_t)m, 1, p.kind);
        }
        // The next unit starts from an empty histogram.
        for (int b = 0; b < 256; ++b) hist[b * KP_RANK_SLIDING_THREADS + t] = 0;
    })
}

// The median of 3 x 3 boxes (footprint 1 x 1 x 3 x 3, rank 4): each row's
// three keys are sorted once and shared by the three outputs whose windows
// hold that row; the median of nine is the median of the largest low, the
// middle middle and the smallest high of the three sorted rows.
template <typename K> __device__ __forceinline__ K median3(K a, K b, K c) { return max(min(a, b), min(max(a, b), c)); }

template <typename Bits>
__device__ __forceinline__ void median3x3(const typename Bits::Raw* __restrict__ in,
                                          typename Bits::Raw* __restrict__ out, const kp_rank_params& p) {
    typedef typename Bits::K K;
    const K cval = to_key((K)p.cval, p.width, p.kind);
    KP_RANK_FOR_EACH_UNIT(p, x, c, r_end, {
        int64_t col[3];
#pragma unroll
        for (int k = 0; k < 3; ++k) {
            const int64_t i = x + p.first[3] + k;
            col[k] = i >= 0 && i < p.n[3] ? i : extend_at(i, p.n[3], p.mode);
        }
        const int64_t plane = (c[0] * p.n[1] + c[1]) * p.n[2];
        // The sorted keys of input row i: lo <= mid <= hi.
        auto sorted_row = [&](int64_t i, K& lo, K& mid, K& hi) {
            const int64_t r = i >= 0 && i < p.n[2] ? i : extend_at(i, p.n[2], p.mode);
            K v[3];
#pragma unroll
            for (int k = 0; k < 3; ++k) {
                v[k] = r < 0 || col[k] < 0 ? cval : to_key(Bits::load(in, (plane + r) * p.n[3] + col[k], p.width), p.width, p.kind);
            }
            exchange(v[0], v[1]);
            exchange(v[1], v[2]);
            exchange(v[0], v[1]);
            lo = v[0];
            mid = v[1];
            hi = v[2];
        };
        K lo0, mid0, hi0, lo1, mid1, hi1;
        sorted_row(c[2] + p.first[2], lo0, mid0, hi0);
        sorted_row(c[2] + p.first[2] + 1, lo1, mid1, hi1);
        for (int64_t r = c[2]; r < r_end; ++r) {
            K lo2, mid2, hi2;
            sorted_row(r + p.first[2] + 2, lo2, mid2, hi2);
            const K lo = max(max(lo0, lo1), lo2);
            const K mid = median3(mid0, mid1, mid2);
            const K hi = min(min(hi0, hi1), hi2);
            Bits::store(out, (plane + r) * p.n[3] + x, p.width, from_key(median3(lo, mid, hi), p.width, p.kind));
            lo0 = lo1;
            mid0 = mid1;
            hi0 = hi1;
            lo1 = lo2;
            mid1 = mid2;
            hi1 = hi2;
        }
    })
}

}  // namespace rank
}  // namespace kp

// Entry points per key width: b32 for elements of 1, 2 or 4 bytes (p.width),
// b64 for 8 bytes. The 64-bit networks stop at 25 points (larger ones run
// the digit kernel): their registers would spill.
#define KP_RANK_NETWORK_ENTRY(BITS, RAW, SUFFIX, CAP)                                                          \
    extern "C" __global__ void __launch_bounds__(KP_RANK_NETWORK_THREADS)                                     \
        rank_network##CAP##_##SUFFIX(const RAW* __restrict__ in, RAW* __restrict__ out,                       \
                                      const int64_t* __restrict__ taps, const kp_rank_params p) {             \
        __shared__ BITS::K edge[CAP * KP_RANK_NETWORK_THREADS];                                               \
        kp::rank::rank_network<BITS, CAP>(in, out, taps, p, edge);                                            \
    }
#define KP_RANK_DIGITS_ENTRY(BITS, RAW, SUFFIX)                                                                \
    extern "C" __global__ void __launch_bounds__(KP_RANK_DIGIT_THREADS)                                       \
        rank_digits_##SUFFIX(const RAW* __restrict__ in, RAW* __restrict__ out, const int64_t* __restrict__ taps, \
                             const kp_rank_params p) {                                                        \
        __shared__ uint32_t hist[256 * KP_RANK_DIGIT_THREADS];                                                \
        kp::rank::rank_digits<BITS>(in, out, taps, p, hist);                                                  \
    }
#define KP_RANK_MEDIAN3X3_ENTRY(BITS, RAW, SUFFIX)                                                             \
    extern "C" __global__ void __launch_bounds__(KP_RANK_NETWORK_THREADS)                                     \
        rank_median3x3_##SUFFIX(const RAW* __restrict__ in, RAW* __restrict__ out, const kp_rank_params p) {  \
        kp::rank::median3x3<BITS>(in, out, p);                                                                \
    }
static_assert(KP_RANK_NETWORK_MAX == 81, "the entries below spell the capacities out");
KP_RANK_NETWORK_ENTRY(kp::rank::Bits32, unsigned char, b32, 9)
KP_RANK_NETWORK_ENTRY(kp::rank::Bits32, unsigned char, b32, 25)
KP_RANK_NETWORK_ENTRY(kp::rank::Bits32, unsigned char, b32, 49)
KP_RANK_NETWORK_ENTRY(kp::rank::Bits32, unsigned char, b32, 81)
KP_RANK_NETWORK_ENTRY(kp::rank::Bits64, unsigned long long, b64, 9)
KP_RANK_NETWORK_ENTRY(kp::rank::Bits64, unsigned long long, b64, 25)
KP_RANK_DIGITS_ENTRY(kp::rank::Bits32, unsigned char, b32)
KP_RANK_DIGITS_ENTRY(kp::rank::Bits64, unsigned long long, b64)
KP_RANK_MEDIAN3X3_ENTRY(kp::rank::Bits32, unsigned char, b32)
KP_RANK_MEDIAN3X3_ENTRY(kp::rank::Bits64, unsigned long long, b64)
#undef KP_RANK_MEDIAN3X3_ENTRY
#undef KP_RANK_DIGITS_ENTRY
#undef KP_RANK_NETWORK_ENTRY

extern "C" __global__ void __launch_bounds__(KP_RANK_SLIDING_THREADS)
    rank_sliding_b8(const unsigned char* __restrict__ in, unsigned char* __restrict__ out, const kp_rank_params p) {
    __shared__ uint16_t hist[256 * KP_RANK_SLIDING_THREADS];
    kp::rank::rank_sliding(in, out, p, hist);
}
