// One pass of the N-D box filter (scipy.ndimage.uniform_filter1d along one
// axis of an N-D array) for every element type: the array seen as
// outer x n x inner (row-major), out[o][i][c] = the mean of
// in[o][extend(i + first + j)][c] over j < size, the line extended by the
// boundary mode. Floats sum in double (NaNs and infinities counted apart, so
// that they leave the window with their values); integers sum exactly and
// truncate the mean toward zero, as SciPy's cast of its mean does.
//
// Running sums: each output adds the entering value and takes the leaving
// one away, so the cost does not grow with the window. Two layouts:
// - uniform_strided (inner > 1, or windows over KP_UNIFORM_LINES_MAX_SIZE):
//   a thread per (o, chunk of p.chunk outputs, column c), c fastest, so the
//   warp's loads are rows of 32 consecutive values; each chunk seeds its sum
//   directly (window_sum: whole periods of the repeating modes counted once).
// - uniform_lines (inner == 1, the axis contiguous): a warp per span of
//   32 K outputs of a line; the span and its halo go through shared memory
//   (skewed, so that lanes K values apart hit distinct banks), lane l seeds
//   the sum of its first output from the tile and runs over its K outputs,
//   and the results go back through the tile so that the stores coalesce.
#include "kernpack_params.h"
#include "boundary.cuh"

namespace kp {
namespace uniform {

constexpr int K = KP_UNIFORM_LINE_OUTPUTS;

// Integers of 1, 2 or 4 bytes (the width and signedness at run time, one
// build for six types): values and exact sums in 64 bits.
struct NarrowInt {
    using Elem = unsigned char;
    using Value = long long;
    struct Sum {
        long long s;
        __device__ void add(Value v) { s += v; }
        __device__ void sub(Value v) { s -= v; }
        __device__ void add_times(const Sum& o, long long k) { s += o.s * k; }
    };
    int width;
    bool is_signed;

    __device__ Value from_bits(unsigned long long bits) const {
        const int shift = 64 - 8 * width;
        return is_signed ? (long long)(bits << shift) >> shift : (long long)bits;
    }
    __device__ Value load(const Elem* p, int64_t i) const {
        if (width == 1) return from_bits(__ldg(p + i));
        if (width == 2) return from_bits(__ldg(reinterpret_cast<const unsigned short*>(p) + i));
        return from_bits(__ldg(reinterpret_cast<const unsigned int*>(p) + i));
    }
    __device__ void store(Elem* p, int64_t i, Value v) const {
        if (width == 1) p[i] = (unsigned char)v;
        else if (width == 2) reinterpret_cast<unsigned short*>(p)[i] = (unsigned short)v;
        else reinterpret_cast<unsigned int*>(p)[i] = (unsigned int)v;
    }
    // s / size truncated toward zero, without a 64-bit division (slow on
    // GPUs): the means of 32-bit values are below 2^32 in magnitude, so the
    // double quotient is within one of the exact one; the remainder fixes it.
    __device__ Value mean(const Sum& s, int64_t size, double inv) const {
        long long q = (long long)((double)s.s * inv);
        long long r = s.s - q * size;
        if (s.s >= 0) {
            if (r < 0) { --q; r += size; }
            else if (r >= size) { ++q; }
        } else {
            if (r > 0) { ++q; r -= size; }
            else if (r <= -size) { --q; }
        }
        return q;
    }
};

// Integers of 8 bytes, signed or not (at run time): each value split into
// its high 32 bits (signed for int64) and low 32 bits, summed apart, so
// that a window of up to 2^31 - 1 values sums exactly in two 64-bit words.
struct WideInt {
    using Elem = unsigned long long;
    using Value = unsigned long long;
    struct Sum {
        long long hi;
        unsigned long long lo;
        bool is_signed;
        __device__ long long high(Value v) const { return is_signed ? (long long)v >> 32 : (long long)(v >> 32); }
        __device__ void add(Value v) {
            hi += high(v);
            lo += v & 0xffffffffull;
        }
        __device__ void sub(Value v) {
            hi -= high(v);
            lo -= v & 0xffffffffull;
        }
        __device__ void add_times(const Sum& o, long long k) {
            hi += o.hi * k;
            lo += o.lo * (unsigned long long)k;
        }
    };
    bool is_signed;

    __device__ Sum zero() const { return Sum{0, 0, is_signed}; }
    __device__ Value from_bits(unsigned long long bits) const { return bits; }
    __device__ Value load(const Elem* p, int64_t i) const { return __ldg(p + i); }
    __device__ void store(Elem* p, int64_t i, Value v) const { p[i] = v; }
    // trunc((hi 2^32 + lo) / size): hi = qh size + rh (floor division,
    // 0 <= rh < size), so the floor quotient is qh 2^32 + (rh 2^32 + lo) /
    // size, whose dividend is below 2^64; a negative quotient with a
    // remainder rounds up toward zero.
    __device__ Value mean(const Sum& s, int64_t size, double) const {
        long long qh = s.hi / size, rh = s.hi % size;
        if (rh < 0) {
            rh += size;
            qh -= 1;
        }
        const unsigned long long rest = ((unsigned long long)rh << 32) + s.lo;
        const unsigned long long q = ((unsigned long long)qh << 32) + rest / (unsigned long long)size;
        const bool negative = is_signed && (long long)q < 0;
        return q + (negative && rest % (unsigned long long)size != 0 ? 1 : 0);
    }
};

// f32 or f64: finite values summed in double, NaNs and infinities counted.
template <typename T> struct Float {
    using Elem = T;
    using Value = T;
    // The non-finite values are rare: counted on a branch that is almost
    // never taken (counts fit 32 bits: a window holds below 2^31 values).
    struct Sum {
        double finite;
        int nan, pos, neg;
        __device__ void count(Value v, int by) {
            if (isnan(v)) nan += by;
            else if (v > 0) pos += by;
            else neg += by;
        }
        __device__ void add(Value v) {
            if (isfinite(v)) finite += (double)v;
            else count(v, 1);
        }
        __device__ void sub(Value v) {
            if (isfinite(v)) finite -= (double)v;
            else count(v, -1);
        }
        __device__ void add_times(const Sum& o, long long k) {
            finite += o.finite * (double)k;
            nan += o.nan * (int)k;
            pos += o.pos * (int)k;
            neg += o.neg * (int)k;
        }
    };
    __device__ Sum zero() const { return Sum{0.0, 0, 0, 0}; }
    __device__ Value from_bits(unsigned long long bits) const {
        if constexpr (sizeof(T) == 4) return __uint_as_float((unsigned int)bits);
        else return __longlong_as_double((long long)bits);
    }
    __device__ Value load(const Elem* p, int64_t i) const { return __ldg(p + i); }
    __device__ void store(Elem* p, int64_t i, Value v) const { p[i] = v; }
    // The sum times 1 / size: within an ulp of the double quotient.
    __device__ Value mean(const Sum& s, int64_t, double inv) const {
        if ((s.nan | s.pos | s.neg) != 0) {
            if (s.nan > 0 || (s.pos > 0 && s.neg > 0)) return T(NAN);
            return s.pos > 0 ? T(INFINITY) : T(-INFINITY);
        }
        return (T)(s.finite * inv);
    }
};

template <class Kind> __device__ __forceinline__ typename Kind::Sum zero(const Kind& k) {
    if constexpr (sizeof(typename Kind::Sum) == sizeof(long long)) return typename Kind::Sum{0};
    else return k.zero();
}

// Point i (any i) of the line starting at element `line` (stride p.inner),
// through the mode.
template <class Kind>
__device__ __forceinline__ typename Kind::Value read(const Kind& k, const typename Kind::Elem* in, int64_t line,
                                                     int64_t i, const kp_uniform_params& p,
                                                     typename Kind::Value cval) {
    if (i >= 0 && i < p.n) return k.load(in, line + i * p.inner);
    const int64_t at = kp::stencil::extend(i, p.n, p.mode);
    return at < 0 ? cval : k.load(in, line + at * p.inner);
}

// The sum over points first .. first + len - 1 of the extended line, at a
// cost of about min(len, 4 n) loads (the host twin is
// params::uniform::window_sum).
template <class Kind>
__device__ typename Kind::Sum window_sum(const Kind& k, const typename Kind::Elem* in, int64_t line, int64_t first,
                                         int64_t len, const kp_uniform_params& p, typename Kind::Value cval) {
    using Sum = typename Kind::Sum;
    auto direct = [&](int64_t lo, int64_t hi) {
        Sum s = zero(k);
        for (int64_t i = lo; i < hi; ++i) s.add(read(k, in, line, i, p, cval));
        return s;
    };
    const int64_t n = p.n;
    if (len <= n) return direct(first, first + len);
    if (p.mode == KP_BOX_CONSTANT || p.mode == KP_BOX_NEAREST) {
        const int64_t lo = max(first, (int64_t)0), hi = max(min(first + len, n), lo);
        const int64_t below = min(max(-first, (int64_t)0), len), above = min(max(first + len - n, (int64_t)0), len);
        Sum s = direct(lo, hi), before = zero(k), after = zero(k);
        const bool constant = p.mode == KP_BOX_CONSTANT;
        before.add(constant ? cval : k.load(in, line));
        after.add(constant ? cval : k.load(in, line + (n - 1) * p.inner));
        s.add_times(before, below);
        s.add_times(after, above);
        return s;
    }
    const int64_t period = p.mode == KP_BOX_REFLECT ? 2 * n : p.mode == KP_BOX_MIRROR ? max(2 * n - 2, (int64_t)1) : n;
    Sum s = direct(first, first + len % period);
    s.add_times(direct(0, period), len / period);
    return s;
}

// Outputs the strided kernel loads ahead: U entering and U leaving values
// in flight per thread, so that each thread keeps HBM busy.
constexpr int U = 8;

// A thread per (line o, chunk q of p.chunk outputs, column c), c fastest.
template <class Kind>
__device__ void strided(const Kind& k, const typename Kind::Elem* __restrict__ in, typename Kind::Elem* __restrict__ out,
                        const kp_uniform_params& p) {
    const auto cval = k.from_bits(p.cval);
    const double inv = 1.0 / (double)p.size;
    const int64_t chunks = (p.n + p.chunk - 1) / p.chunk;
    for (int64_t u = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; u < p.units; u += (int64_t)gridDim.x * blockDim.x) {
        const int64_t c = u % p.inner, q = (u / p.inner) % chunks, o = u / p.inner / chunks;
        const int64_t line = o * p.n * p.inner + c;
        const int64_t i0 = q * p.chunk, end = min(p.n, i0 + p.chunk);
        auto s = window_sum(k, in, line, i0 + p.first, p.size, p, cval);
        int64_t i = i0;
        // Every read of the chunk inside the line: U loads of each kind at a time.
        if (i0 + p.first >= 0 && end + p.first + p.size <= p.n) {
            const int64_t step = p.inner;
            for (; i + U <= end; i += U) {
                typename Kind::Value enter[U], leave[U];
#pragma unroll
                for (int m = 0; m < U; ++m) {
                    enter[m] = k.load(in, line + (i + m + p.first + p.size) * step);
                    leave[m] = k.load(in, line + (i + m + p.first) * step);
                }
#pragma unroll
                for (int m = 0; m < U; ++m) {
                    k.store(out, line + (i + m) * step, k.mean(s, p.size, inv));
                    s.add(enter[m]);
                    s.sub(leave[m]);
                }
            }
        }
        for (; i < end; ++i) {
            k.store(out, line + i * p.inner, k.mean(s, p.size, inv));
            s.add(read(k, in, line, i + p.first + p.size, p, cval));
            s.sub(read(k, in, line, i + p.first, p, cval));
        }
    }
}

// Shared-memory index of tile value t: one pad slot per 32 values.
__device__ __forceinline__ int64_t at(int64_t t) { return t + (t >> 5); }

// A warp per (line o, span of 32 K outputs); `tile` is the warp's p.tile values.
template <class Kind>
__device__ void lines(const Kind& k, const typename Kind::Elem* __restrict__ in, typename Kind::Elem* __restrict__ out,
                      const kp_uniform_params& p, typename Kind::Value* tile) {
    const auto cval = k.from_bits(p.cval);
    const double inv = 1.0 / (double)p.size;
    const int lane = threadIdx.x % 32;
    const int64_t spans = (p.n + 32 * K - 1) / (32 * K);
    const int64_t count = 32 * K + p.size - 1;
    const int64_t warps = (int64_t)gridDim.x * blockDim.x / 32;
    for (int64_t u = ((int64_t)blockIdx.x * blockDim.x + threadIdx.x) / 32; u < p.units; u += warps) {
        const int64_t o = u / spans, i0 = u % spans * 32 * K, from = i0 + p.first;
        const int64_t line = o * p.n;
        if (from >= 0 && from + count <= p.n) {
            for (int64_t t = lane; t < count; t += 32) tile[at(t)] = k.load(in, line + from + t);
        } else {
            for (int64_t t = lane; t < count; t += 32) tile[at(t)] = read(k, in, line, from + t, p, cval);
        }
        __syncwarp();
        const int64_t base = (int64_t)lane * K;
        auto s = zero(k);
        for (int64_t j = 0; j < p.size; ++j) s.add(tile[at(base + j)]);
        typename Kind::Value result[K];
#pragma unroll
        for (int m = 0; m < K; ++m) {
            result[m] = k.mean(s, p.size, inv);
            if (m + 1 < K) {
                s.add(tile[at(base + m + p.size)]);
                s.sub(tile[at(base + m)]);
            }
        }
        __syncwarp();
#pragma unroll
        for (int m = 0; m < K; ++m) tile[at(base + m)] = result[m];
        __syncwarp();
#pragma unroll
        for (int m = 0; m < K; ++m) {
            const int64_t i = i0 + 32 * m + lane;
            if (i < p.n) k.store(out, line + i, tile[at(32 * m + lane)]);
        }
        __syncwarp();
    }
}

}  // namespace uniform
}  // namespace kp

#define KP_UNIFORM_ENTRIES(ELEM, SUFFIX, KIND)                                                                      \
    extern "C" __global__ void __launch_bounds__(KP_UNIFORM_THREADS)                                             \
        uniform_strided_##SUFFIX(const ELEM* __restrict__ in, ELEM* __restrict__ out, const kp_uniform_params p) { \
        kp::uniform::strided(KIND, in, out, p);                                                                  \
    }                                                                                                            \
    extern "C" __global__ void __launch_bounds__(KP_UNIFORM_THREADS)                                             \
        uniform_lines_##SUFFIX(const ELEM* __restrict__ in, ELEM* __restrict__ out, const kp_uniform_params p) {   \
        extern __shared__ long long uniform_tiles[];                                                            \
        using Value = decltype(KIND)::Value;                                                                     \
        Value* tile = reinterpret_cast<Value*>(uniform_tiles) + (threadIdx.x / 32) * p.tile;                     \
        kp::uniform::lines(KIND, in, out, p, tile);                                                              \
    }
KP_UNIFORM_ENTRIES(unsigned char, int, (kp::uniform::NarrowInt{p.width, p.is_signed != 0}))
KP_UNIFORM_ENTRIES(unsigned long long, int64, (kp::uniform::WideInt{p.is_signed != 0}))
KP_UNIFORM_ENTRIES(float, f32, (kp::uniform::Float<float>{}))
KP_UNIFORM_ENTRIES(double, f64, (kp::uniform::Float<double>{}))
#undef KP_UNIFORM_ENTRIES
