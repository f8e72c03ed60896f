// 2D box filter (a 3x3 smoothing stencil, generalised to scipy.ndimage's
// uniform_filter): out = the mean of the size x size window around each point,
// size = 2 r + 1, with SciPy's boundary modes.
//
// Memory-bound: one read and one write of the image, separable (the sums of
// each row's window, then the sum of 2r + 1 of those row sums). Windows 3 to
// 9 keep everything in registers (box_filter_strips) and sum in index order,
// first d = -r, as the CPU reference does; other sizes stage tiles in shared
// memory and slide their sums (box_filter).
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
// It replaced a shared-memory tile kernel that reached 70% of the copy
// bandwidth on an H200 (f32, 3 x 3) against ~90% for this one. Each warp
// walks a strip of columns top to bottom, one 16-byte vector of a
// row per lane, with no shared memory and no barrier: a row's horizontal
// window comes from the neighbouring lanes by shuffles, the vertical window
// is a ring of the last 2R + 1 row sums in registers. The HV lanes at each
// end of the warp only load the horizontal halo (the warps' spans overlap by
// 2 HV vectors, read twice from L2, once from DRAM), so no lane needs a
// scattered extra load. Rows are loaded U at a time before any is used, to
// keep enough bytes in flight for HBM.
template <typename T, int R>
struct StripShape {
    static constexpr int VW = Vec16<T>::N;               // values per lane and row
    static constexpr int HV = (R + VW - 1) / VW;         // halo lanes at each end
    static constexpr int TW = (32 - 2 * HV) * VW;        // output columns per warp
};

// Tuning knobs of the strip kernel (benches/box_filter_variants.cu sweeps
// them): H output rows per warp, U rows loaded before any is used. Measured
// on an H200 (PERF.md): 8 rows per warp, 10 rows loaded at once and 3 blocks
// per SM (80 registers) is the best or within noise of it for every radius;
// taller strips, fewer rows in flight, 4 blocks per SM (64 registers: spills
// or too few loads in flight), warps side by side, L2 256-byte prefetch
// hints and streaming stores were all slower or no faster.
template <int H_, int U_>
struct StripPolicy {
    static constexpr int H = H_, U = U_;
};
using DefaultStripPolicy = StripPolicy<KP_BOX_STRIP_ROWS, 10>;
constexpr int STRIP_MIN_BLOCKS = 3;

// How a warp reads its rows: 16-byte vectors with no boundary mapping (its
// whole span and all its rows lie inside: almost every warp), 16-byte vectors
// of rows mapped through the boundary (columns inside), or gathers through
// the boundary mapping of both.
enum StripLoad { LOAD_DIRECT, LOAD_MAPPED_ROWS, LOAD_GATHER };

// One lane's values of row y.
template <typename T, int LOAD>
__device__ __forceinline__ void load_row(const T* __restrict__ in, const kp_box_params& p, int64_t y,
                                         int64_t x, const int64_t (&src_col)[Vec16<T>::N],
                                         T (&v)[Vec16<T>::N]) {
    using V = typename Vec16<T>::type;
    constexpr int VW = Vec16<T>::N;
    if constexpr (LOAD == LOAD_DIRECT) {
        const V w = *reinterpret_cast<const V*>(in + y * p.in_pitch + x);
        memcpy(v, &w, sizeof(V));
        return;
    }
    const int64_t sy = extend(y, p.rows, p.mode);
    const T cval = (T)p.cval;
    if constexpr (LOAD == LOAD_MAPPED_ROWS) {
        if (sy < 0) {
#pragma unroll
            for (int j = 0; j < VW; ++j) v[j] = cval;
        } else {
            const V w = *reinterpret_cast<const V*>(in + sy * p.in_pitch + x);
            memcpy(v, &w, sizeof(V));
        }
    } else {
#pragma unroll
        for (int j = 0; j < VW; ++j)
            v[j] = (sy < 0 || src_col[j] < 0) ? cval : in[sy * p.in_pitch + src_col[j]];
    }
}

// One warp's strip: input rows y0 - R .. y0 + H + R - 1, output rows y0 .. y0 + H - 1.
template <typename T, int R, int H, int U, int LOAD>
__device__ __forceinline__ void box_filter_strip_walk(const T* __restrict__ in, T* __restrict__ out,
                                                      const kp_box_params& p, int64_t x, int64_t y0,
                                                      bool vector_store, bool output_lane) {
    using V = typename Vec16<T>::type;
    constexpr int VW = Vec16<T>::N;
    constexpr int IN_ROWS = H + 2 * R;
    const unsigned all = 0xffffffffu;

    int64_t src_col[VW];
#pragma unroll
    for (int j = 0; j < VW; ++j) src_col[j] = LOAD == LOAD_GATHER ? extend(x + j, p.cols, p.mode) : x + j;
    // A direct warp's outputs all have their whole window inside the image.
    const bool keep_border = LOAD != LOAD_DIRECT && p.mode == KP_BOX_INTERIOR;
    const T scale = (T)p.scale;
    T ring[2 * R + 1][VW] = {};  // row sums of the last 2R + 1 input rows; ring[2R] the newest

    // Input row i (of this strip): its row sums into the ring, and output row
    // i - 2R once the ring holds its whole window. False: past the image.
    auto step = [&](int i, const T(&row)[VW]) -> bool {
        // The window of this lane's columns, k = -R .. VW + R - 1, from its neighbours.
        T w[VW + 2 * R];
#pragma unroll
        for (int k = -R; k < VW + R; ++k) {
            const int comp = ((k % VW) + VW) % VW;
            const int from = (k - comp) / VW;  // lanes to the right (>0) or left (<0)
            T value = row[comp];
            if (from < 0) value = __shfl_up_sync(all, value, -from);
            if (from > 0) value = __shfl_down_sync(all, value, from);
            w[k + R] = value;
        }
#pragma unroll
        for (int s = 0; s < 2 * R; ++s)
#pragma unroll
            for (int j = 0; j < VW; ++j) ring[s][j] = ring[s + 1][j];
#pragma unroll
        for (int j = 0; j < VW; ++j) {
            T acc = w[j];
#pragma unroll
            for (int d = 1; d <= 2 * R; ++d) acc += w[j + d];
            ring[2 * R][j] = acc;
        }
        if (i < 2 * R) return true;
        const int64_t y = y0 + i - 2 * R;
        if (LOAD != LOAD_DIRECT && y >= p.rows) return false;  // the whole warp
        T result[VW];
#pragma unroll
        for (int j = 0; j < VW; ++j) {
            T acc = ring[0][j];
#pragma unroll
            for (int d = 1; d <= 2 * R; ++d) acc += ring[d][j];
            result[j] = acc * scale;
            if (keep_border && output_lane && x + j < p.cols &&
                (y < R || y >= p.rows - R || x + j < R || x + j >= p.cols - R))
                result[j] = in[y * p.in_pitch + x + j];  // the window does not fit: keep the input
        }
        // The halo lanes computed along (no divergence around the shuffles) but store nothing.
        T* dst = out + y * p.out_pitch + x;
        if (output_lane && vector_store) {
            V v;
            memcpy(&v, result, sizeof(V));
            *reinterpret_cast<V*>(dst) = v;
        } else if (output_lane) {
#pragma unroll
            for (int j = 0; j < VW; ++j)
                if (x + j < p.cols) dst[j] = result[j];
        }
        return true;
    };

    if constexpr (LOAD == LOAD_DIRECT) {
        // Almost every warp: unrolled, U rows in flight before the first is used.
#pragma unroll
        for (int base = 0; base < IN_ROWS; base += U) {
            T raw[U][VW];
#pragma unroll
            for (int u = 0; u < U && base + u < IN_ROWS; ++u)
                load_row<T, LOAD>(in, p, y0 - R + base + u, x, src_col, raw[u]);
#pragma unroll
            for (int u = 0; u < U && base + u < IN_ROWS; ++u) step(base + u, raw[u]);
        }
    } else {
        // Warps at the image's edges: a rolled loop keeps the code small.
#pragma unroll 1
        for (int i = 0; i < IN_ROWS; ++i) {
            T row[VW];
            load_row<T, LOAD>(in, p, y0 - R + i, x, src_col, row);
            if (!step(i, row)) return;
        }
    }
}

template <typename T, int R, typename Policy>
__device__ void box_filter_strips(const T* __restrict__ in, T* __restrict__ out, const kp_box_params p) {
    using S = StripShape<T, R>;
    constexpr int VW = S::VW, HV = S::HV, TW = S::TW, H = Policy::H;
    const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
    // A block's warps walk strips one above the other.
    const int64_t x0 = (int64_t)(blockIdx.x % p.tiles_x) * TW;
    const int64_t y0 = ((int64_t)(blockIdx.x / p.tiles_x) * WARPS + warp) * H;
    if (y0 >= p.rows || x0 >= p.cols) return;  // whole warps only: the shuffles need every lane
    const int64_t x = x0 + (int64_t)(lane - HV) * VW;  // this lane's first column, maybe outside
    const bool output_lane = lane >= HV && lane < 32 - HV && x < p.cols;
    const bool vec_in = reinterpret_cast<uintptr_t>(in) % 16 == 0 && p.in_pitch % VW == 0 &&
                        x0 - HV * VW >= 0 && x0 + (32 - HV) * VW <= p.cols;
    const bool rows_in = y0 - R >= 0 && y0 + H + R <= p.rows;
    const bool vector_store =
        x + VW <= p.cols && reinterpret_cast<uintptr_t>(out) % 16 == 0 && p.out_pitch % VW == 0;
    constexpr int U = Policy::U;
    if (vec_in && rows_in)
        box_filter_strip_walk<T, R, H, U, LOAD_DIRECT>(in, out, p, x, y0, vector_store, output_lane);
    else if (vec_in)
        box_filter_strip_walk<T, R, H, 1, LOAD_MAPPED_ROWS>(in, out, p, x, y0, vector_store, output_lane);
    else
        box_filter_strip_walk<T, R, H, 1, LOAD_GATHER>(in, out, p, x, y0, vector_store, output_lane);
}

// Windows up to 33, radius at run time: tile of TH x TW outputs, R the largest
// radius the shared arrays hold. Both passes slide: a thread sums the first
// window of a run of SEG outputs in index order, then adds the entering and
// subtracts the leaving term (a few loads per output instead of 2r + 1; the
// rounding of a run of SEG steps, far inside the tests' tolerance). Staged
// rows are padded by one element, so threads on consecutive rows of one
// column hit different banks.
template <typename T, int R, int TW, int TH>
__device__ void box_filter(const T* __restrict__ in, T* __restrict__ out, const kp_box_params p) {
    constexpr int SEG = TW * TH / BLOCK;  // outputs per thread and pass
    static_assert(SEG >= 1 && TW % SEG == 0 && TH % SEG == 0, "tile and block do not divide");
    __shared__ T staged[TH + 2 * R][TW + 2 * R + 1];
    __shared__ T row_sums[TH + 2 * R][TW + 1];
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

    // Horizontal: consecutive threads on consecutive rows, each a run of SEG columns.
    for (int t = threadIdx.x; t < staged_rows * (TW / SEG); t += BLOCK) {
        const int sr = t % staged_rows, c0 = t / staged_rows * SEG;
        T acc = staged[sr][c0];
        for (int d = 1; d <= 2 * r; ++d) acc += staged[sr][c0 + d];
        row_sums[sr][c0] = acc;
#pragma unroll
        for (int c = c0 + 1; c < c0 + SEG; ++c) {
            // Size 1 (r = 0) stays exact: the identity.
            acc = r == 0 ? staged[sr][c] : acc + staged[sr][c + 2 * r] - staged[sr][c - 1];
            row_sums[sr][c] = acc;
        }
    }
    __syncthreads();

    // Vertical: consecutive threads on consecutive columns, each a run of SEG rows.
    const T scale = (T)p.scale;
    const int c = threadIdx.x % TW, tr0 = threadIdx.x / TW * SEG;
    const int64_t x = x0 + c;
    T acc = row_sums[tr0][c];
    for (int d = 1; d <= 2 * r; ++d) acc += row_sums[tr0 + d][c];
#pragma unroll
    for (int tr = tr0; tr < tr0 + SEG; ++tr) {
        if (tr > tr0) acc = r == 0 ? row_sums[tr][c] : acc + row_sums[tr + 2 * r][c] - row_sums[tr - 1][c];
        const int64_t y = y0 + tr;
        if (y >= p.rows || x >= p.cols) break;
        T value = acc * scale;
        if (p.mode == KP_BOX_INTERIOR && (y < r || y >= p.rows - r || x < r || x >= p.cols - r))
            value = staged[tr + r][c + r];  // the window does not fit: keep the input
        out[y * p.out_pitch + x] = value;
    }
}

// Constant mode with a non-finite cval (an infinity or a NaN) for the large
// windows: box_filter runs with cval 0, whose sliding sums then only ever add
// and subtract the image's values, and this pass adds cval to every output
// whose window reaches past the edge. That is the mean of its padded window:
// x + inf = inf, x + NaN = NaN, -inf + inf = NaN, as the direct sum gives.
// (Windows 3 to 9 sum every window directly and take the cval as it is.)
template <typename T>
__device__ void box_filter_pad_non_finite(T* out, const kp_box_params p) {
    const int64_t r = p.radius, n = p.rows * p.cols;
    const T cval = (T)p.cval;
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x) {
        const int64_t y = i / p.cols, x = i % p.cols;
        if (y < r || y >= p.rows - r || x < r || x >= p.cols - r) out[y * p.out_pitch + x] += cval;
    }
}

}  // namespace stencil
}  // namespace kp

// Per type: windows 3, 5, 7, 9 unrolled (strips of KP_BOX_STRIP_ROWS rows by
// 32 - 2 HV lanes of 16 bytes per warp), and windows up to 33 with a run-time radius.
#define KP_BOX_FIXED(T, SUFFIX, R)                                                                \
    extern "C" __global__ void __launch_bounds__(kp::stencil::BLOCK, kp::stencil::STRIP_MIN_BLOCKS) \
        box_filter_r##R##_##SUFFIX(const T* __restrict__ in, T* __restrict__ out, const kp_box_params p) { \
        kp::stencil::box_filter_strips<T, R, kp::stencil::DefaultStripPolicy>(in, out, p);        \
    }
#define KP_BOX_LARGE(T, SUFFIX, TW, TH)                                                           \
    extern "C" __global__ void __launch_bounds__(kp::stencil::BLOCK)                             \
        box_filter_large_##SUFFIX(const T* __restrict__ in, T* __restrict__ out, const kp_box_params p) { \
        kp::stencil::box_filter<T, 16, TW, TH>(in, out, p);                                      \
    }
#define KP_BOX_PAD(T, SUFFIX)                                                                     \
    extern "C" __global__ void __launch_bounds__(kp::stencil::BLOCK)                             \
        box_filter_pad_##SUFFIX(T* out, const kp_box_params p) {                                 \
        kp::stencil::box_filter_pad_non_finite<T>(out, p);                                       \
    }
#define KP_BOX_ENTRIES(T, SUFFIX, TW, TH)                                                         \
    KP_BOX_FIXED(T, SUFFIX, 1)                                                                    \
    KP_BOX_FIXED(T, SUFFIX, 2)                                                                    \
    KP_BOX_FIXED(T, SUFFIX, 3)                                                                    \
    KP_BOX_FIXED(T, SUFFIX, 4)                                                                    \
    KP_BOX_LARGE(T, SUFFIX, TW, TH)                                                               \
    KP_BOX_PAD(T, SUFFIX)
KP_BOX_ENTRIES(float, f32, 64, 32)
KP_BOX_ENTRIES(double, f64, 32, 16)
#undef KP_BOX_ENTRIES
#undef KP_BOX_LARGE
#undef KP_BOX_PAD
#undef KP_BOX_FIXED
