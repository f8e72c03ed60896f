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
#include "boundary.cuh"

namespace kp {
namespace stencil {

constexpr int BLOCK = 256;
constexpr int WARPS = BLOCK / 32;

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
// windows larger than the image): running sums in double, one warp per strip
// of columns, with no barrier but __syncwarp. A warp owns SEG = 32 K
// consecutive columns of the image extended by the boundary mode (its
// segment: `width = SEG - size_x + 1` output columns plus size_x - 1 halo
// columns) and a chunk of chunk_rows output rows, and walks down them. Lane
// l keeps, for segment columns l + 32 i (i < K: consecutive lanes read
// consecutive addresses), the vertical window sum V of the current output
// row in registers: moving down a row adds the entering row's value and
// subtracts the leaving one's (re-read: the warp read it size_y rows ago,
// an L2 hit), both loaded a row ahead. The horizontal window sum of output
// column j is P[j + size_x] - P[j], P the exclusive prefix sum of V over the
// segment: V goes to shared memory in column order, each lane sums K
// consecutive values (K odd: no bank conflicts), the lanes' totals are
// scanned with shuffles, and each lane writes its prefixes back. So an
// output costs a few loads and adds whatever the window: the image is read
// from DRAM about once (the halo columns again, from L2, and each chunk's
// first size_y - 1 rows: the host makes chunks long against size_y) and
// written once.
//
// Accuracy: V after k running steps is off by at most (size_y + 2k) eps64
// size_y M (M the largest |value|); a prefix difference adds 2 SEG eps64
// size_y M; each chunk re-seeds V by a direct sum, so the error is bounded
// by the chunk and the segment, not the image (about 1e-12 M for the
// longest chunks: below an f32 ulp, some thousand f64 ulps of M).
//
// Windows far larger than the image: a direct sum along a line costs at most
// about 4 line lengths (line_sum counts the points outside that read an edge
// or the constant, and sums whole periods of the repeating modes once).
//
// Non-finite values: a running sum that met one stays non-finite (inf - inf),
// so a warp whose sums stop being finite computes the rest of its chunk by
// direct sums over each window (slow, but exactly the windows that hold the
// value are spoilt, as in a direct sum). A non-finite cval (constant mode)
// is summed as 0 and added to the outputs whose window reaches outside.
namespace kp {
namespace stencil {

// Where a point of the segment reads: its column (the common case, inline)
// or, outside the image, the mode's (out of line: the modulo arithmetic is
// for the edges only).
__device__ __noinline__ int64_t extend_outside(int64_t i, int64_t n, int mode) { return extend(i, n, mode); }
__device__ __forceinline__ int64_t run_extend(int64_t i, int64_t n, int mode) {
    return i >= 0 && i < n ? i : extend_outside(i, n, mode);
}

// The sum of value(i) over points first .. first + len - 1 of a line of n
// points extended by mode (cval outside in constant mode), at a cost of at
// most about min(len, 4 n) values.
template <typename F>
__device__ double line_sum(int64_t first, int64_t len, int64_t n, int mode, double cval, F value) {
    auto direct = [&](int64_t lo, int64_t hi) {
        double sum = 0.0;
        for (int64_t i = lo; i < hi; ++i) {
            const int64_t at = run_extend(i, n, mode);
            sum += at < 0 ? cval : value(at);
        }
        return sum;
    };
    if (len <= n) return direct(first, first + len);
    const int64_t below = min(max(-first, (int64_t)0), len), above = min(max(first + len - n, (int64_t)0), len);
    const int64_t lo = max(first, (int64_t)0), hi = max(min(first + len, n), lo);
    switch (mode) {
        case KP_BOX_CONSTANT: return direct(lo, hi) + (double)(below + above) * cval;
        case KP_BOX_REFLECT:
        case KP_BOX_MIRROR:
        case KP_BOX_WRAP: {
            const int64_t period = mode == KP_BOX_REFLECT ? 2 * n : mode == KP_BOX_WRAP ? n : max(2 * n - 2, (int64_t)1);
            return (double)(len / period) * direct(0, period) + direct(first, first + len % period);
        }
        default: return direct(lo, hi) + (double)below * value(0) + (double)above * value(n - 1);
    }
}

// The sum over the window of rows first_row .. first_row + size_y - 1 of
// mapped column c (-1: a column of cval): a chunk's seed (out of line, as
// it runs once per chunk).
template <typename T>
__device__ __noinline__ double run_column_sum(const T* __restrict__ in, const kp_box_run_params& p, int64_t c,
                                              int64_t first_row) {
    if (c < 0) return (double)p.size_y * p.cval;
    return line_sum(first_row, p.size_y, p.rows, p.mode, p.cval,
                    [&](int64_t r) { return (double)in[r * p.in_pitch + c]; });
}

// The sum over the window of row r, columns x - before_x ..
template <typename T>
__device__ __noinline__ double run_row_sum(const T* __restrict__ in, const kp_box_run_params& p, int64_t r,
                                           int64_t x) {
    return line_sum(x - p.before_x, p.size_x, p.cols, p.mode, p.cval,
                    [&](int64_t c) { return (double)in[r * p.in_pitch + c]; });
}

// Output (y, x) from its window sum h: the mean, or with a non-finite cval
// that cval where the window reaches outside, or in interior mode the input
// there.
template <typename T>
__device__ __forceinline__ void run_store(const T* __restrict__ in, T* __restrict__ out, const kp_box_run_params& p,
                                          int64_t y, int64_t x, double h) {
    T value = (T)(h * p.scale);
    const bool outside = y - p.before_y < 0 || y - p.before_y + p.size_y > p.rows || x - p.before_x < 0 ||
                         x - p.before_x + p.size_x > p.cols;
    if (p.pad_outside && outside) value = (T)(h * p.scale + p.pad_cval);
    if (p.mode == KP_BOX_INTERIOR && outside) value = in[y * p.in_pitch + x];
    out[y * p.out_pitch + x] = value;
}

// The sum of `total` over the lanes below this one (an exclusive scan of
// the warp's lane totals, by shuffles): both running-sum kernels turn a
// row of window sums into its prefix sums with it.
__device__ __forceinline__ double lanes_before(double total, int lane) {
    double scan = total;
#pragma unroll
    for (int d = 1; d < 32; d *= 2) {
        const double other = __shfl_up_sync(0xffffffffu, scan, d);
        if (lane >= d) scan += other;
    }
    return scan - total;
}

// Row y of a warp whose running sums met a non-finite value: each output by
// a direct sum over its window (rows of row sums).
template <typename T>
__device__ __noinline__ void run_direct_row(const T* __restrict__ in, T* __restrict__ out, const kp_box_run_params& p,
                                            int64_t y, int64_t x0, int64_t width, int lane) {
    for (int64_t j = lane; j < width && x0 + j < p.cols; j += 32) {
        const int64_t x = x0 + j;
        const double h = line_sum(y - p.before_y, p.size_y, p.rows, p.mode, (double)p.size_x * p.cval,
                                  [&](int64_t r) { return run_row_sum(in, p, r, x); });
        run_store(in, out, p, y, x, h);
    }
}

template <typename T, int K>
__device__ void box_filter_running(const T* __restrict__ in, T* __restrict__ out, const kp_box_run_params p,
                                   double* __restrict__ sm) {
    constexpr int SEG = 32 * K;
    static_assert(K % 2 == 1, "an odd K keeps the lanes' consecutive reads free of bank conflicts");
    const int lane = threadIdx.x % 32;
    const int64_t chunks = (p.rows + p.chunk_rows - 1) / p.chunk_rows;
    const int64_t id = (int64_t)blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32;
    if (id >= p.tiles_x * chunks) return;  // the whole warp
    const int64_t width = SEG - p.size_x + 1;  // output columns (the host keeps size_x <= SEG - 31)
    const int64_t x0 = (id % p.tiles_x) * width, seg_x0 = x0 - p.before_x;
    const int64_t y0 = (id / p.tiles_x) * p.chunk_rows, y_end = min(y0 + p.chunk_rows, p.rows);
    // Segment column l + 32 i mapped through the mode (-1: cval, constant
    // mode; 32 bits: the host keeps cols below 2^31), and its vertical window
    // sum at row y0. Both are computed in a loop that is not unrolled (the
    // modulo arithmetic and the seeds' sums are out of line), through sm.
    int col[K];
    double v[K];
#pragma unroll 1
    for (int i = 0; i < K; ++i) sm[lane + 32 * i] = (double)run_extend(seg_x0 + lane + 32 * i, p.cols, p.mode);
#pragma unroll
    for (int i = 0; i < K; ++i) col[i] = (int)sm[lane + 32 * i];
#pragma unroll 1
    for (int i = 0; i < K; ++i) sm[lane + 32 * i] = run_column_sum(in, p, (int)sm[lane + 32 * i], y0 - p.before_y);
    bool tainted = false;
#pragma unroll
    for (int i = 0; i < K; ++i) {
        v[i] = sm[lane + 32 * i];
        tainted = tainted || !isfinite(v[i]);
    }
    tainted = __any_sync(0xffffffffu, tainted);

    // The entering and leaving rows' values of row y + 1, loaded while row y
    // is done (narrow segments; the wide one's registers hold only a row:
    // it loads row y's at row y).
    constexpr bool AHEAD = K <= 16;
    T enter[K], leave[K];
    int64_t enter_row = -1, leave_row = -1;
    auto load = [&](int64_t y) {
        enter_row = extend(y - p.before_y + p.size_y - 1, p.rows, p.mode);
        leave_row = extend(y - p.before_y - 1, p.rows, p.mode);
#pragma unroll
        for (int i = 0; i < K; ++i) {
            const int c = col[i];
            enter[i] = enter_row < 0 || c < 0 ? (T)0 : in[enter_row * p.in_pitch + c];
            leave[i] = leave_row < 0 || c < 0 ? (T)0 : in[leave_row * p.in_pitch + c];
        }
    };
    if (AHEAD && y0 + 1 < y_end && !tainted) load(y0 + 1);

    int64_t y = y0;
    for (; y < y_end && !tainted; ++y) {
        if (y > y0) {
            if (!AHEAD) load(y);
            bool finite = true;
#pragma unroll
            for (int i = 0; i < K; ++i) {
                const bool outside = col[i] < 0;
                const double e = enter_row < 0 || outside ? p.cval : (double)enter[i];
                const double l = leave_row < 0 || outside ? p.cval : (double)leave[i];
                v[i] = p.size_y == 1 ? e : v[i] + e - l;  // a window of one row is that row, exactly
                finite = finite && isfinite(v[i]);
            }
            tainted = __any_sync(0xffffffffu, !finite);
            if (tainted) break;
            if (AHEAD && y + 1 < y_end) load(y + 1);
        }
        {
            // sm[j] = V[0] + .. + V[j - 1] for j <= SEG.
#pragma unroll
            for (int i = 0; i < K; ++i) sm[lane + 32 * i] = v[i];
            __syncwarp();
            double total = 0.0;
#pragma unroll
            for (int i = 0; i < K; ++i) total += sm[lane * K + i];
            double run = lanes_before(total, lane);
#pragma unroll
            for (int i = 0; i < K; ++i) {  // each lane rewrites only its own values
                const double value = sm[lane * K + i];
                sm[lane * K + i] = run;
                run += value;
            }
            if (lane == 31) sm[SEG] = run;
            __syncwarp();
        }
#pragma unroll
        for (int i = 0; i < K; ++i) {
            const int64_t j = lane + 32 * i, x = x0 + j;
            // A window of one column is that column, exactly.
            if (j < width && x < p.cols) run_store(in, out, p, y, x, p.size_x == 1 ? v[i] : sm[j + p.size_x] - sm[j]);
        }
        __syncwarp();  // sm is rewritten for the next row
    }
    // The running sums met a non-finite value: the rest by direct sums.
    for (; y < y_end; ++y) run_direct_row(in, out, p, y, x0, width, lane);
}

}  // namespace stencil
}  // namespace kp

// Windows of any size up to a band's limits, at the copy speed (2D,
// box_filter_band): a block of KP_BOX_BAND_THREADS threads owns a band of
// IW = C x KP_BOX_BAND_THREADS consecutive columns of the extended image
// (its `IW - size_x + 1` output columns plus the halo) and a chunk of output
// rows, and walks down them R rows at a time.
// - Vertical sums: thread t owns band columns t + j NT (j < C) and keeps
//   their window sums V in double. Moving down a row adds the entering value
//   and subtracts the one that leaves, which the thread stored size_y rows
//   before in a ring of size_y rows in shared memory: the image is read from
//   DRAM once (the warp-per-segment kernel above re-reads the leaving row,
//   which misses L2 for tall windows).
// - Horizontal sums: the R rows of V go to shared memory; warp w then scans
//   rows w, w + WARPS, .. (an exclusive prefix P over the band: each lane
//   sums IW / 32 consecutive values, the lanes' totals by shuffles), and the
//   output at band column j is P[j + size_x] - P[j], stored by consecutive
//   lanes.
// - The loads of the next R rows are issued before the scan, so they are in
//   flight while it runs.
// The ring costs size_y IW sizeof(T) bytes of shared memory per block: the
// host takes this kernel for windows whose ring fits (and keeps the others
// on the warp-per-segment kernel). Accuracy as that kernel's (double sums,
// re-seeded each chunk); a non-finite value switches the rest of the chunk to
// direct sums, as there.
namespace kp {
namespace stencil {

template <typename T, int C, int R>
struct Band {
    static constexpr int NT = KP_BOX_BAND_THREADS, WARPS = NT / 32;
    static constexpr int IW = C * NT;  // band columns
    static constexpr int K = IW / 32;  // values per lane in the scan
    // A row of V (and its prefix P, P[IW] the total) padded by one double
    // per 16: lanes scanning K consecutive values (K a multiple of 8) would
    // otherwise meet in the same banks.
    static constexpr int STRIDE = IW + IW / 16 + 1;
    __host__ __device__ static constexpr int padded(int j) { return j + j / 16; }
    // Shared memory: R rows of V (double), then the ring of size_y rows of T.
    __host__ __device__ static constexpr size_t bytes(int64_t size_y) {
        return sizeof(double) * R * STRIDE + sizeof(T) * (size_t)size_y * IW;
    }
};

template <typename T, int C, int R>
__device__ void box_filter_band(const T* __restrict__ in, T* __restrict__ out, const kp_box_run_params p,
                                double* __restrict__ sm) {
    using B = Band<T, C, R>;
    constexpr int NT = B::NT, IW = B::IW, K = B::K;
    const int tid = threadIdx.x, lane = tid % 32, warp = tid / 32;
    const int64_t chunks = (p.rows + p.chunk_rows - 1) / p.chunk_rows;
    const int64_t block = blockIdx.x;
    if (block >= p.tiles_x * chunks) return;  // the whole block
    const int width = IW - (int)p.size_x + 1;  // output columns (the host keeps size_x < IW)
    const int64_t x0 = (block % p.tiles_x) * width, band_x0 = x0 - p.before_x;
    const int64_t y0 = (block / p.tiles_x) * p.chunk_rows, y_end = min(y0 + p.chunk_rows, p.rows);
    const int outputs = (int)min((int64_t)width, p.cols - x0);  // output columns inside the image
    double* vt = sm;
    T* ring = reinterpret_cast<T*>(sm + R * B::STRIDE);
    const int sy = (int)p.size_y;  // the host keeps the ring, size_y rows, in shared memory
    const bool constant = p.mode == KP_BOX_CONSTANT;
    // The mean and nothing else (no pad, no kept input): the common store.
    const bool plain_store = !p.pad_outside && p.mode != KP_BOX_INTERIOR;

    int col[C];  // the image column band column tid + j NT reads (-1: cval)
#pragma unroll
    for (int j = 0; j < C; ++j) col[j] = (int)run_extend(band_x0 + tid + j * NT, p.cols, p.mode);
    // Step k reads virtual row first + k (it enters the window) and, from
    // k = size_y on, takes row first + k - size_y away; after step k >=
    // size_y - 1, V is the window of output row y0 + k - (size_y - 1).
    const int64_t first = y0 - p.before_y;
    const int64_t steps = sy - 1 + (y_end - y0);
    const double cval = p.cval;

    // The values of steps k0 .. k0 + R - 1 (0 for a cval row or column; the
    // vertical step puts cval in), loaded a batch ahead.
    const T* column[C];
#pragma unroll
    for (int j = 0; j < C; ++j) column[j] = in + max(col[j], 0);
    T next[R][C];
    auto load = [&](int64_t k0) {
        if (first + k0 >= 0 && first + k0 + R <= p.rows) {  // every row inside: no mapping
            const int64_t at = (first + k0) * p.in_pitch;
#pragma unroll
            for (int i = 0; i < R; ++i)
#pragma unroll
                for (int j = 0; j < C; ++j) next[i][j] = col[j] < 0 ? (T)0 : column[j][at + i * p.in_pitch];
        } else {
#pragma unroll
            for (int i = 0; i < R; ++i) {
                const int64_t r = k0 + i < steps ? run_extend(first + k0 + i, p.rows, p.mode) : -1;
#pragma unroll
                for (int j = 0; j < C; ++j) next[i][j] = r < 0 || col[j] < 0 ? (T)0 : in[r * p.in_pitch + col[j]];
            }
        }
    };

    double v[C];
#pragma unroll
    for (int j = 0; j < C; ++j) v[j] = 0.0;
    load(0);
    int slot = 0;  // the ring's slot of step k0 (k0 mod size_y)
    // One batch, steps k0 .. k0 + R - 1; false when the running sums met a
    // non-finite value (nothing of it stored).
    auto batch = [&](int64_t k0) -> bool {
        // Vertical: R steps of every owned column.
        bool finite = true;
        const bool inside = k0 >= sy && k0 + R <= steps && first + k0 - sy >= 0 && first + k0 + R <= p.rows;
        if (inside && sy > 1) {
            // Almost every batch: every entering and leaving row inside the
            // image and in the window (a cval column holds 0 in the ring and
            // in next, so its sum keeps its seed, size_y cval).
#pragma unroll
            for (int i = 0; i < R; ++i) {
#pragma unroll
                for (int j = 0; j < C; ++j) {
                    T* cell = ring + slot * IW + tid + j * NT;
                    const T leave = *cell;
                    *cell = next[i][j];
                    v[j] += (double)next[i][j] - (double)leave;
                    vt[i * B::STRIDE + B::padded(tid + j * NT)] = v[j];
                }
                slot = slot + 1 == sy ? 0 : slot + 1;
            }
#pragma unroll
            for (int j = 0; j < C; ++j) finite = finite && isfinite(v[j]);
        } else {
            // The seed steps, the image's top and bottom edges, the chunk's end.
#pragma unroll
            for (int i = 0; i < R; ++i) {
                const int64_t k = k0 + i, enter = first + k, leave = enter - sy;
                const bool enter_cval = constant && (enter < 0 || enter >= p.rows);
                const bool leave_cval = constant && (leave < 0 || leave >= p.rows);
#pragma unroll
                for (int j = 0; j < C; ++j) {
                    if (k < steps) {
                        T* cell = ring + slot * IW + tid + j * NT;
                        const double e = enter_cval || col[j] < 0 ? cval : (double)next[i][j];
                        const double l = k < sy ? 0.0 : leave_cval || col[j] < 0 ? cval : (double)*cell;
                        *cell = next[i][j];
                        v[j] = sy == 1 ? e : v[j] + e - l;  // a window of one row is that row, exactly
                        finite = finite && isfinite(v[j]);
                    }
                    vt[i * B::STRIDE + B::padded(tid + j * NT)] = v[j];
                }
                slot = slot + 1 == sy ? 0 : slot + 1;
            }
        }
        if (k0 + R < steps) load(k0 + R);  // in flight during the scans
        if (__syncthreads_or(!finite)) return false;
        // Horizontal: warp w scans rows w, w + WARPS, .. and stores them.
#pragma unroll
        for (int i = warp; i < R; i += B::WARPS) {
            const int64_t y = y0 + k0 + i - (sy - 1);
            if (y < y0 || y >= y_end) continue;  // a seed step, or past the chunk (whole warps)
            double* row = vt + i * B::STRIDE;
            if (p.size_x > 1) {  // a window of one column is that column, exactly: no scan
                double vals[K];
                double total = 0.0;
#pragma unroll
                for (int m = 0; m < K; ++m) {
                    vals[m] = row[B::padded(lane * K + m)];
                    total += vals[m];
                }
                double run = lanes_before(total, lane);
#pragma unroll
                for (int m = 0; m < K; ++m) {  // each lane rewrites only its own values
                    row[B::padded(lane * K + m)] = run;
                    run += vals[m];
                }
                if (lane == 31) row[B::padded(IW)] = run;
                __syncwarp();
            }
            const int dx = p.size_x > 1 ? (int)p.size_x : 0;  // P[j + size_x] - P[j], or V[j]
            if (plain_store) {
                // Output lane + 32 m reads P at padded(lane + 32 m [+ dx]) =
                // padded(lane [+ dx]) + 34 m: constant offsets from two bases.
                const double* hi = row + B::padded(lane + dx);
                const double* lo = row + B::padded(lane);
                T* dst = out + y * p.out_pitch + x0 + lane;
                const double scale = p.scale;
#pragma unroll
                for (int m = 0; m < K; ++m)
                    if (lane + 32 * m < outputs) dst[32 * m] = (T)((hi[34 * m] - (dx ? lo[34 * m] : 0.0)) * scale);
            } else {
                for (int jx = lane; jx < outputs; jx += 32)
                    run_store(in, out, p, y, x0 + jx, row[B::padded(jx + dx)] - (dx ? row[B::padded(jx)] : 0.0));
            }
            __syncwarp();  // row is rewritten by the next rows of this warp
        }
        __syncthreads();  // vt is rewritten by the next steps
        return true;
    };
    int64_t k0 = 0;
    while (k0 < steps && batch(k0)) k0 += R;
    if (k0 >= steps) return;
    // The running sums met a non-finite value: this batch's rows and the rest
    // of the chunk by direct sums.
    const int64_t from = max(y0, y0 + k0 - (sy - 1));
    for (int64_t y = from + warp; y < y_end; y += B::WARPS) run_direct_row(in, out, p, y, x0, width, lane);
}

}  // namespace stencil
}  // namespace kp

// Per type: windows 3, 5, 7, 9 unrolled (strips of KP_BOX_STRIP_ROWS rows by
// 32 - 2 HV lanes of 16 bytes per warp), and any other window on running sums
// (narrow: segments of 32 KP_BOX_RUN_K_NARROW columns, wide: 32
// KP_BOX_RUN_K_WIDE; KP_BOX_RUN_WARPS warps per block).
#define KP_BOX_FIXED(T, SUFFIX, R)                                                                \
    extern "C" __global__ void __launch_bounds__(kp::stencil::BLOCK, kp::stencil::STRIP_MIN_BLOCKS) \
        box_filter_r##R##_##SUFFIX(const T* __restrict__ in, T* __restrict__ out, const kp_box_params p) { \
        kp::stencil::box_filter_strips<T, R, kp::stencil::DefaultStripPolicy>(in, out, p);        \
    }
#define KP_BOX_RUNNING(T, SUFFIX, NAME, K)                                                        \
    extern "C" __global__ void __launch_bounds__(32 * KP_BOX_RUN_WARPS)                           \
        NAME##_##SUFFIX(const T* __restrict__ in, T* __restrict__ out, const kp_box_run_params p) { \
        __shared__ double prefix[KP_BOX_RUN_WARPS][32 * K + 1];                                   \
        kp::stencil::box_filter_running<T, K>(in, out, p, prefix[threadIdx.x / 32]);              \
    }
#define KP_BOX_BAND(T, SUFFIX)                                                                    \
    extern "C" __global__ void __launch_bounds__(KP_BOX_BAND_THREADS)                             \
        box_filter_band_##SUFFIX(const T* __restrict__ in, T* __restrict__ out, const kp_box_run_params p) { \
        extern __shared__ double band_smem[];                                                     \
        kp::stencil::box_filter_band<T, KP_BOX_BAND_COLS, KP_BOX_BAND_ROWS>(in, out, p, band_smem); \
    }
#define KP_BOX_ENTRIES(T, SUFFIX)                                                         \
    KP_BOX_FIXED(T, SUFFIX, 1)                                                                    \
    KP_BOX_FIXED(T, SUFFIX, 2)                                                                    \
    KP_BOX_FIXED(T, SUFFIX, 3)                                                                    \
    KP_BOX_FIXED(T, SUFFIX, 4)                                                                    \
    KP_BOX_RUNNING(T, SUFFIX, box_filter_running, KP_BOX_RUN_K_NARROW)                            \
    KP_BOX_RUNNING(T, SUFFIX, box_filter_running_wide, KP_BOX_RUN_K_WIDE)                        \
    KP_BOX_BAND(T, SUFFIX)
KP_BOX_ENTRIES(float, f32)
KP_BOX_ENTRIES(double, f64)
#undef KP_BOX_ENTRIES
#undef KP_BOX_FIXED
#undef KP_BOX_RUNNING
#undef KP_BOX_BAND
