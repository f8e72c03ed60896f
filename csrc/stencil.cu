// 2D box filter (a 3x3 smoothing stencil, generalised to scipy.ndimage's
// uniform_filter): out = the mean of the window around each point, any size
// and origin per axis, with SciPy's boundary modes.
//
// Memory-bound: one read and one write of the image, separable (the sums of
// each row's window, then the sum of those row sums). Square centred windows
// 3 to 9 keep everything in registers (box_filter_strips) and sum in index
// order, first d = -r, as the CPU reference does; every other window runs
// on running sums whose cost does not grow with it (box_filter_running).
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

}  // namespace stencil
}  // namespace kp


// Any window, its cost independent of the size (sizes and origins per axis,
// windows larger than the image): running sums in double. A block owns a
// strip of KP_BOX_RUN_COLS output columns (one per thread) and a chunk of
// chunk_rows output rows, and walks down them. It keeps, for every column
// of its extended segment (the strip plus size_x - 1 halo columns, mapped
// through the boundary mode), the vertical window sum V of the current
// output row, in registers: moving down a row adds the entering row's value
// and subtracts the leaving one's (re-read: the block read it size_y rows
// ago, an L2 hit). The horizontal window sum of output column t is then the
// difference of two prefix sums of V over the segment (a block scan in
// shared memory). So each output costs a few loads and adds, whatever the
// window: the image is read from DRAM about once (the halo columns and the
// chunk's first size_y - 1 rows again, mostly from L2, as neighbouring
// blocks run side by side) and written once.
//
// Accuracy: V after k running steps is off by at most (size_y + 2k) eps64
// size_y M (M the largest |value|); a prefix difference by 2 segment eps64
// size_y M; the chunk re-seeds V by a direct sum, so the error is bounded by
// the chunk and the segment, not the image (about 1e-12 M for the largest
// chunks and segments: below an f32 ulp, some thousand f64 ulps of M).
//
// Non-finite values: a running sum that met one stays non-finite (inf - inf),
// so a block whose sums stop being finite computes the rest of its chunk by
// direct sums over each window (slow, but exactly the windows that hold the
// value are spoilt, as in a direct sum). A non-finite cval (constant mode)
// is summed as 0 and added to the outputs whose window reaches outside.
namespace kp {
namespace stencil {

constexpr int RUN_BLOCK = KP_BOX_RUN_COLS;
constexpr int RUN_MIN_BLOCKS = 2;
// Rows whose entering and leaving values are loaded before any is used: 32
// bytes of each per thread (f32 8 rows, f64 4), with 2 blocks of 256 threads
// 16 KB of DRAM loads in flight per SM, about what HBM3 needs at its
// latency (bandwidth x latency / SMs).
template <typename T>
struct RunAhead {
    static constexpr int ROWS = 32 / (int)sizeof(T);
};

// The value at (row y, mapped column c) of the extended image: c < 0 or a
// row outside in constant mode give cval.
template <typename T>
__device__ __forceinline__ double run_value(const T* __restrict__ in, const kp_box_run_params& p,
                                            int64_t y, int64_t c) {
    const int64_t sy = extend(y, p.rows, p.mode);
    return (sy < 0 || c < 0) ? p.cval : (double)in[sy * p.in_pitch + c];
}

// As run_value, in T (the prefetched rows: half the registers for f32; a
// cval then rounds to T, as the other kernels read it).
template <typename T>
__device__ __forceinline__ T run_load(const T* __restrict__ in, const kp_box_run_params& p, int64_t y,
                                      int64_t c) {
    const int64_t sy = extend(y, p.rows, p.mode);
    return (sy < 0 || c < 0) ? (T)p.cval : in[sy * p.in_pitch + c];
}

// The direct sum over the window of output (y, x), rows then columns.
template <typename T>
__device__ double run_direct(const T* __restrict__ in, const kp_box_run_params& p, int64_t y, int64_t x) {
    double acc = 0.0;
    for (int64_t wy = y - p.before_y; wy < y - p.before_y + p.size_y; ++wy) {
        double row = 0.0;
        for (int64_t wx = x - p.before_x; wx < x - p.before_x + p.size_x; ++wx)
            row += run_value(in, p, wy, extend(wx, p.cols, p.mode));
        acc += row;
    }
    return acc;
}

// RUN_PER_THREAD segment columns per thread: the segment holds up to
// RUN_PER_THREAD * RUN_BLOCK columns (2: windows up to 257 columns wide, 8:
// up to KP_BOX_RUN_SEGMENT - 255; the narrow one needs fewer registers).
template <typename T, int RUN_PER_THREAD>
__device__ void box_filter_running(const T* __restrict__ in, T* __restrict__ out, const kp_box_run_params p) {
    constexpr int RUN_SEG = RUN_PER_THREAD * RUN_BLOCK;
    constexpr int RUN_AHEAD = RunAhead<T>::ROWS;
    __shared__ double column_sums[RUN_SEG];
    __shared__ double prefix[RUN_SEG + 1];  // prefix[j] = column_sums[0] + .. + column_sums[j - 1]
    __shared__ double warp_totals[RUN_BLOCK / 32];
    const int t = threadIdx.x, lane = t % 32, warp = t / 32;
    const int64_t x0 = (int64_t)(blockIdx.x % p.tiles_x) * RUN_BLOCK;
    const int64_t y0 = (int64_t)(blockIdx.x / p.tiles_x) * p.chunk_rows;
    const int64_t y_end = min(y0 + p.chunk_rows, p.rows);
    const int64_t seg = RUN_BLOCK + p.size_x - 1;  // segment columns, <= RUN_SEG (checked by the host)
    const int64_t seg_x0 = x0 - p.before_x;
    const int64_t x = x0 + t;

    // This thread's segment columns j = t + k RUN_BLOCK (consecutive threads,
    // consecutive columns), mapped through the mode; -1: cval; unused past seg.
    int64_t col[RUN_PER_THREAD];
    double v[RUN_PER_THREAD];
#pragma unroll
    for (int k = 0; k < RUN_PER_THREAD; ++k) {
        const int64_t j = t + k * RUN_BLOCK;
        col[k] = j < seg ? extend(seg_x0 + j, p.cols, p.mode) : -1;
        v[k] = 0.0;
        if (j < seg)  // seeded by a direct sum, top to bottom (8 loads in flight)
#pragma unroll 8
            for (int64_t wy = y0 - p.before_y; wy < y0 - p.before_y + p.size_y; ++wy)
                v[k] += run_value(in, p, wy, col[k]);
    }
    bool tainted = false;

    for (int64_t base = y0; base < y_end; base += RUN_AHEAD) {
        // The entering and leaving values of the next RUN_AHEAD rows, loaded
        // before any is used (bytes in flight for HBM).
        T enter[RUN_AHEAD][RUN_PER_THREAD], leave[RUN_AHEAD][RUN_PER_THREAD];
#pragma unroll
        for (int u = 0; u < RUN_AHEAD; ++u)
#pragma unroll
            for (int k = 0; k < RUN_PER_THREAD; ++k) {
                const int64_t y = base + u;
                const bool used = y > y0 && y < y_end && t + k * RUN_BLOCK < seg && !tainted;
                enter[u][k] = used ? run_load(in, p, y - p.before_y + p.size_y - 1, col[k]) : (T)0;
                leave[u][k] = used ? run_load(in, p, y - p.before_y - 1, col[k]) : (T)0;
            }
#pragma unroll
        for (int u = 0; u < RUN_AHEAD; ++u) {
            const int64_t y = base + u;
            if (y >= y_end) continue;  // the whole block (y_end is the block's)
            bool finite = true;
#pragma unroll
            for (int k = 0; k < RUN_PER_THREAD; ++k) {
                if (y > y0) {
                    // A window of one row is that row, exactly.
                    const double in_value = (double)enter[u][k], out_value = (double)leave[u][k];
                    v[k] = p.size_y == 1 ? in_value : v[k] + in_value - out_value;
                }
                finite = finite && isfinite(v[k]);
                if (t + k * RUN_BLOCK < RUN_SEG) column_sums[t + k * RUN_BLOCK] = v[k];
            }
            tainted = __syncthreads_or(tainted || !finite);
            double h = 0.0;
            if (!tainted) {
                // prefix: each thread scans RUN_PER_THREAD consecutive values,
                // then the warps' and the block's totals.
                double local[RUN_PER_THREAD], total = 0.0;
#pragma unroll
                for (int k = 0; k < RUN_PER_THREAD; ++k) {
                    total += column_sums[t * RUN_PER_THREAD + k];
                    local[k] = total;
                }
                double scan = total;  // inclusive scan of the totals within the warp
#pragma unroll
                for (int d = 1; d < 32; d *= 2) {
                    const double other = __shfl_up_sync(0xffffffffu, scan, d);
                    if (lane >= d) scan += other;
                }
                if (lane == 31) warp_totals[warp] = scan;
                __syncthreads();
                double offset = scan - total;
                for (int w = 0; w < warp; ++w) offset += warp_totals[w];
#pragma unroll
                for (int k = 0; k < RUN_PER_THREAD; ++k) prefix[t * RUN_PER_THREAD + k + 1] = offset + local[k];
                if (t == 0) prefix[0] = 0.0;
                __syncthreads();
                // A window of one column is that column, exactly.
                h = p.size_x == 1 ? column_sums[t] : prefix[t + p.size_x] - prefix[t];
            }
            if (x < p.cols) {
                if (tainted) h = run_direct(in, p, y, x);
                T value = (T)(h * p.scale);
                const bool outside = y - p.before_y < 0 || y - p.before_y + p.size_y > p.rows ||
                                     x - p.before_x < 0 || x - p.before_x + p.size_x > p.cols;
                if (p.pad_outside && outside) value = (T)(h * p.scale + p.pad_cval);
                if (p.mode == KP_BOX_INTERIOR && outside) value = in[y * p.in_pitch + x];
                out[y * p.out_pitch + x] = value;
            }
            __syncthreads();  // column_sums and prefix are rewritten for the next row
        }
    }
}

}  // namespace stencil
}  // namespace kp

// Per type: windows 3, 5, 7, 9 unrolled (strips of KP_BOX_STRIP_ROWS rows by
// 32 - 2 HV lanes of 16 bytes per warp), and any other window on running sums
// (narrow: up to 257 columns; wide: up to KP_BOX_RUN_SEGMENT - 255).
#define KP_BOX_FIXED(T, SUFFIX, R)                                                                \
    extern "C" __global__ void __launch_bounds__(kp::stencil::BLOCK, kp::stencil::STRIP_MIN_BLOCKS) \
        box_filter_r##R##_##SUFFIX(const T* __restrict__ in, T* __restrict__ out, const kp_box_params p) { \
        kp::stencil::box_filter_strips<T, R, kp::stencil::DefaultStripPolicy>(in, out, p);        \
    }
#define KP_BOX_RUNNING(T, SUFFIX, NAME, PER_THREAD)                                               \
    extern "C" __global__ void __launch_bounds__(kp::stencil::RUN_BLOCK, kp::stencil::RUN_MIN_BLOCKS) \
        NAME##_##SUFFIX(const T* __restrict__ in, T* __restrict__ out, const kp_box_run_params p) { \
        kp::stencil::box_filter_running<T, PER_THREAD>(in, out, p);                              \
    }
#define KP_BOX_ENTRIES(T, SUFFIX)                                                         \
    KP_BOX_FIXED(T, SUFFIX, 1)                                                                    \
    KP_BOX_FIXED(T, SUFFIX, 2)                                                                    \
    KP_BOX_FIXED(T, SUFFIX, 3)                                                                    \
    KP_BOX_FIXED(T, SUFFIX, 4)                                                                    \
    KP_BOX_RUNNING(T, SUFFIX, box_filter_running, 2)                                              \
    KP_BOX_RUNNING(T, SUFFIX, box_filter_running_wide, KP_BOX_RUN_SEGMENT / KP_BOX_RUN_COLS)
KP_BOX_ENTRIES(float, f32)
KP_BOX_ENTRIES(double, f64)
#undef KP_BOX_ENTRIES
#undef KP_BOX_FIXED
#undef KP_BOX_RUNNING
