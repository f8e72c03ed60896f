// 2D box filter (seed 002's 3x3 smoothing, generalised to scipy.ndimage's
// uniform_filter): out = the mean of the size x size window around each point,
// size = 2 r + 1, with SciPy's boundary modes.
//
// Memory-bound: each block stages one tile plus its halo in shared memory (one
// coalesced read of the image, halos mostly from L2), sums each row of the
// staged tile over the window (horizontal pass, into shared memory), then each
// column of those sums (vertical pass), and writes the tile once. The sums run
// in index order, first d = -r, so the CPU reference can follow them exactly.
#include "kernpack_params.h"

namespace kp {
namespace stencil {

constexpr int BLOCK = 256;
constexpr int WARPS = BLOCK / 32;

// Where SciPy reads index i of a line of n points (i may be far outside: a
// window wider than the line reflects again and again). -1: the constant cval.
__device__ __forceinline__ int64_t extend(int64_t i, int64_t n, int mode) {
    if (i >= 0 && i < n) return i;
    switch (mode) {
        case KP_BOX_CONSTANT: return -1;
        case KP_BOX_REFLECT: {
            const int64_t m = ((i % (2 * n)) + 2 * n) % (2 * n);
            return m < n ? m : 2 * n - 1 - m;
        }
        case KP_BOX_MIRROR: {
            if (n == 1) return 0;
            const int64_t p = 2 * n - 2;
            const int64_t m = ((i % p) + p) % p;
            return m < n ? m : p - m;
        }
        case KP_BOX_WRAP: return ((i % n) + n) % n;
        default: return i < 0 ? 0 : n - 1;  // nearest (interior mode never uses the value)
    }
}

// 16 bytes of T, for wide global and shared-memory accesses.
template <typename T> struct Vec16;
template <> struct Vec16<float> { using type = float4; static constexpr int N = 4; };
template <> struct Vec16<double> { using type = double2; static constexpr int N = 2; };

// Windows of 3 to 9 (radius R known at compile time, everything unrolled).
// Each thread owns VW = 16 bytes of columns over RT rows of a TH x TW tile:
// it sums its own rows of the staged tile (a halo of R rows above and below
// is summed twice by neighbouring threads, cheaper than a second barrier and
// buffer) and keeps them in registers for the column sums. The staged tile
// keeps HALO = 4 columns each side so that its rows stay 16-byte aligned.
template <typename T, int R>
struct FixedTile {
    static constexpr int VW = Vec16<T>::N;
    static constexpr int HALO = 4;
    static constexpr int TW = 32 * VW;             // a warp spans the tile's width
    static constexpr int RT = 4;                   // rows per thread
    static constexpr int TH = WARPS * RT;
    static constexpr int ROWS = TH + 2 * R;        // staged rows
    static constexpr int COLS = TW + 2 * HALO;     // staged columns
    static constexpr int VECS = COLS / VW;         // 16-byte vectors per staged row
};

template <typename T, int R>
__device__ void box_filter_fixed(const T* __restrict__ in, T* __restrict__ out, const kp_box_params p) {
    using Tile = FixedTile<T, R>;
    using V = typename Vec16<T>::type;
    constexpr int VW = Tile::VW, HALO = Tile::HALO, TW = Tile::TW, TH = Tile::TH, RT = Tile::RT;
    constexpr int ROWS = Tile::ROWS, COLS = Tile::COLS, VECS = Tile::VECS;
    __shared__ __align__(16) T staged[ROWS][COLS];
    const int64_t x0 = (int64_t)(blockIdx.x % p.tiles_x) * TW;
    const int64_t y0 = (int64_t)(blockIdx.x / p.tiles_x) * TH;

    // Stage rows y0 - R .. y0 + TH + R and columns x0 - HALO .. x0 + TW + HALO.
    const bool inside = x0 - HALO >= 0 && x0 + TW + HALO <= p.cols && y0 - R >= 0 && y0 + TH + R <= p.rows;
    const bool aligned = reinterpret_cast<uintptr_t>(in) % 16 == 0 && p.in_pitch % VW == 0;
    if (inside && aligned) {
        const T* origin = in + (y0 - R) * p.in_pitch + (x0 - HALO);
        for (int i = threadIdx.x; i < ROWS * VECS; i += BLOCK) {
            const int sr = i / VECS, sv = i % VECS;
            reinterpret_cast<V*>(&staged[sr][0])[sv] =
                *reinterpret_cast<const V*>(origin + sr * p.in_pitch + sv * VW);
        }
    } else if (inside) {
        const T* origin = in + (y0 - R) * p.in_pitch + (x0 - HALO);
        for (int i = threadIdx.x; i < ROWS * COLS; i += BLOCK) {
            const int sr = i / COLS, sc = i % COLS;
            staged[sr][sc] = origin[sr * p.in_pitch + sc];
        }
    } else {
        const T cval = (T)p.cval;
        for (int i = threadIdx.x; i < ROWS * COLS; i += BLOCK) {
            const int sr = i / COLS, sc = i % COLS;
            const int64_t y = extend(y0 - R + sr, p.rows, p.mode);
            const int64_t x = extend(x0 - HALO + sc, p.cols, p.mode);
            staged[sr][sc] = (y < 0 || x < 0) ? cval : in[y * p.in_pitch + x];
        }
    }
    __syncthreads();

    const int c = (threadIdx.x % 32) * VW;     // first column of this thread, in the tile
    const int r0 = (threadIdx.x / 32) * RT;    // first output row, in the tile
    // Row sums of staged rows r0 .. r0 + RT + 2R for columns c .. c + VW.
    T row_sum[RT + 2 * R][VW];
#pragma unroll
    for (int s = 0; s < RT + 2 * R; ++s) {
        T window[VW + 2 * HALO];
#pragma unroll
        for (int v = 0; v < (VW + 2 * HALO) / VW; ++v) {
            const V w = reinterpret_cast<const V*>(&staged[r0 + s][c])[v];
            memcpy(&window[v * VW], &w, sizeof(V));
        }
#pragma unroll
        for (int j = 0; j < VW; ++j) {
            T acc = window[HALO + j - R];
#pragma unroll
            for (int d = 1; d <= 2 * R; ++d) acc += window[HALO + j - R + d];
            row_sum[s][j] = acc;
        }
    }

    const T scale = (T)p.scale;
    const int64_t x = x0 + c;
    const bool store_vector = x + VW <= p.cols && reinterpret_cast<uintptr_t>(out) % 16 == 0 && p.out_pitch % VW == 0;
#pragma unroll
    for (int t = 0; t < RT; ++t) {
        const int64_t y = y0 + r0 + t;
        if (y >= p.rows) break;
        T result[VW];
#pragma unroll
        for (int j = 0; j < VW; ++j) {
            T acc = row_sum[t][j];
#pragma unroll
            for (int d = 1; d <= 2 * R; ++d) acc += row_sum[t + d][j];
            result[j] = acc * scale;
            if (p.mode == KP_BOX_INTERIOR &&
                (y < R || y >= p.rows - R || x + j < R || x + j >= p.cols - R))
                result[j] = staged[r0 + t + R][HALO + c + j];  // the window does not fit: keep the input
        }
        T* dst = out + y * p.out_pitch + x;
        if (store_vector) {
            V v;
            memcpy(&v, result, sizeof(V));
            *reinterpret_cast<V*>(dst) = v;
        } else {
#pragma unroll
            for (int j = 0; j < VW; ++j)
                if (x + j < p.cols) dst[j] = result[j];
        }
    }
}

// Windows up to 33, radius at run time: tile of TH x TW outputs, R the largest
// radius the shared arrays hold.
template <typename T, int R, int TW, int TH>
__device__ void box_filter(const T* __restrict__ in, T* __restrict__ out, const kp_box_params p) {
    __shared__ T staged[TH + 2 * R][TW + 2 * R];
    __shared__ T row_sums[TH + 2 * R][TW];
    const int r = p.radius;
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    const int64_t x0 = (int64_t)(blockIdx.x % p.tiles_x) * TW;
    const int64_t y0 = (int64_t)(blockIdx.x / p.tiles_x) * TH;
    const int staged_rows = TH + 2 * r, staged_cols = TW + 2 * r;

    // Stage rows y0 - r .. y0 + TH + r and columns x0 - r .. x0 + TW + r: one
    // warp per row, consecutive lanes on consecutive columns (coalesced).
    const bool inside = x0 - r >= 0 && x0 + TW + r <= p.cols && y0 - r >= 0 && y0 + TH + r <= p.rows;
    if (inside) {
        for (int sr = warp; sr < staged_rows; sr += WARPS) {
            const T* src = in + (y0 - r + sr) * p.in_pitch + (x0 - r);
            for (int sc = lane; sc < staged_cols; sc += 32) staged[sr][sc] = src[sc];
        }
    } else {
        const T cval = (T)p.cval;
        for (int sr = warp; sr < staged_rows; sr += WARPS) {
            const int64_t y = extend(y0 - r + sr, p.rows, p.mode);
            for (int sc = lane; sc < staged_cols; sc += 32) {
                const int64_t x = extend(x0 - r + sc, p.cols, p.mode);
                staged[sr][sc] = (y < 0 || x < 0) ? cval : in[y * p.in_pitch + x];
            }
        }
    }
    __syncthreads();

    for (int sr = warp; sr < staged_rows; sr += WARPS) {
        for (int c = lane; c < TW; c += 32) {
            T acc = staged[sr][c];
            for (int d = 1; d <= 2 * r; ++d) acc += staged[sr][c + d];
            row_sums[sr][c] = acc;
        }
    }
    __syncthreads();

    const T scale = (T)p.scale;
    for (int tr = warp; tr < TH; tr += WARPS) {
        const int64_t y = y0 + tr;
        if (y >= p.rows) break;
        for (int c = lane; c < TW; c += 32) {
            const int64_t x = x0 + c;
            if (x >= p.cols) break;
            T acc = row_sums[tr][c];
            for (int d = 1; d <= 2 * r; ++d) acc += row_sums[tr + d][c];
            T value = acc * scale;
            if (p.mode == KP_BOX_INTERIOR &&
                (y < r || y >= p.rows - r || x < r || x >= p.cols - r))
                value = staged[tr + r][c + r];  // the window does not fit: keep the input
            out[y * p.out_pitch + x] = value;
        }
    }
}

}  // namespace stencil
}  // namespace kp

// Per type: windows 3, 5, 7, 9 unrolled (tiles of 32 x 128 or 32 x 64 with
// rows of 512 bytes), and windows up to 33 with a run-time radius.
#define KP_BOX_FIXED(T, SUFFIX, R)                                                                \
    extern "C" __global__ void __launch_bounds__(kp::stencil::BLOCK)                             \
        box_filter_r##R##_##SUFFIX(const T* __restrict__ in, T* __restrict__ out, const kp_box_params p) { \
        kp::stencil::box_filter_fixed<T, R>(in, out, p);                                         \
    }
#define KP_BOX_LARGE(T, SUFFIX, TW, TH)                                                           \
    extern "C" __global__ void __launch_bounds__(kp::stencil::BLOCK)                             \
        box_filter_large_##SUFFIX(const T* __restrict__ in, T* __restrict__ out, const kp_box_params p) { \
        kp::stencil::box_filter<T, 16, TW, TH>(in, out, p);                                      \
    }
#define KP_BOX_ENTRIES(T, SUFFIX, TW, TH)                                                         \
    KP_BOX_FIXED(T, SUFFIX, 1)                                                                    \
    KP_BOX_FIXED(T, SUFFIX, 2)                                                                    \
    KP_BOX_FIXED(T, SUFFIX, 3)                                                                    \
    KP_BOX_FIXED(T, SUFFIX, 4)                                                                    \
    KP_BOX_LARGE(T, SUFFIX, TW, TH)
KP_BOX_ENTRIES(float, f32, 64, 32)
KP_BOX_ENTRIES(double, f64, 32, 16)
#undef KP_BOX_ENTRIES
#undef KP_BOX_LARGE
#undef KP_BOX_FIXED
