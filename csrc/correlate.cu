// 1-D correlation along one axis (scipy.ndimage.correlate1d), the pass
// Gaussian filters are made of: an array seen as outer x n x inner
// (row-major), out[o][i][c] = sum_j w[j] in[o][extend(i + first + j)][c].
//
// Memory-bound for the Gaussian's tap counts: each thread computes
// KP_CORRELATE_OUTPUTS (B) consecutive outputs along the axis from a window
// of 2B inputs in registers, so each input it loads serves B outputs and
// the taps cost FMAs, not loads. The weights are a kernel parameter (the
// constant bank, read at a uniform index). Two layouts:
// - correlate_strided (inner > 1): a thread per column c, the warp's 32
//   columns side by side, so every load of the walk is one coalesced row
//   of 32 values;
// - correlate_lines (inner == 1, the axis is contiguous): a warp per span of
//   32 B outputs of one line; the span and its halo go through shared
//   memory, stored skewed so that lanes B values apart hit distinct banks.
// Sums run in T, tap by tap in index order, with FMAs.
#include "kernpack_params.h"
#include "boundary.cuh"
#include "common.cuh"

namespace kp {
namespace correlate {

constexpr int B = KP_CORRELATE_OUTPUTS;
constexpr int MAX_TAPS = KP_CORRELATE_MAX_TAPS;

template <typename T> using Weights = kp::Weights<T, MAX_TAPS>;

// acc[k] += sum_{j < taps} w[j] at(k + j), k < B, for any `at(t)` giving
// the t-th input of the thread's window (t < max(taps, B) + 2B). A window
// of 2B inputs slides in steps of B taps, B x B FMAs each; the next step's
// B inputs are loaded before this step's FMAs, so that their latency hides
// behind them. The last, partial step sums only the taps that exist
// (0 * inf would be NaN) from inputs already loaded.
template <typename T, typename At>
__device__ __forceinline__ void correlate_window(const Weights<T>& w, int taps, At at, T (&acc)[B]) {
    T win[2 * B];
#pragma unroll
    for (int k = 0; k < 2 * B; ++k) win[k] = at(k);
    int j = 0;
    for (; j + B <= taps; j += B) {
        T next[B];
#pragma unroll
        for (int k = 0; k < B; ++k) next[k] = at(j + 2 * B + k);
#pragma unroll
        for (int m = 0; m < B; ++m) {
            const T wm = w.w[j + m];
#pragma unroll
            for (int k = 0; k < B; ++k) acc[k] = fma(wm, win[k + m], acc[k]);
        }
#pragma unroll
        for (int k = 0; k < B; ++k) {
            win[k] = win[B + k];
            win[B + k] = next[k];
        }
    }
    const int rest = taps - j;
#pragma unroll
    for (int m = 0; m < B - 1; ++m) {
        if (m < rest) {
            const T wm = w.w[j + m];
#pragma unroll
            for (int k = 0; k < B; ++k) acc[k] = fma(wm, win[k + m], acc[k]);
        }
    }
}

// Input i of a line (stride `inner`) outside it, through the boundary
// mode: out of line, as only the edges need it.
template <typename T>
__device__ __noinline__ T line_outside(const T* __restrict__ line, int64_t i, int64_t n, int64_t inner, int mode,
                                       double cval) {
    const int64_t at = kp::stencil::extend(i, n, mode);
    return at < 0 ? (T)cval : __ldg(line + at * inner);
}

// Input i of a line (stride `inner`), any i.
template <typename T>
__device__ __forceinline__ T line_value(const T* __restrict__ line, int64_t i, const kp_correlate_params& p) {
    return i >= 0 && i < p.n ? __ldg(line + i * p.inner) : line_outside(line, i, p.n, p.inner, p.mode, p.cval);
}

template <typename T>
__device__ __forceinline__ void store(T* out, const kp_correlate_params& p, T value) {
    *out = p.accumulate ? *out + value : value;
}

// A thread per column (o, c) and chunk q of p.chunk outputs along n, c
// fastest: the 32 lanes of a warp are (mostly) 32 consecutive columns.
template <typename T>
__device__ void correlate_strided(const T* __restrict__ in, T* __restrict__ out, const kp_correlate_params& p,
                                  const Weights<T>& w) {
    const int64_t t = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= p.units) return;
    const int64_t chunks = (p.n + p.chunk - 1) / p.chunk;
    const int64_t c = t % p.inner, q = (t / p.inner) % chunks, o = t / p.inner / chunks;
    const T* line = in + o * p.n * p.inner + c;
    T* out_line = out + o * p.n * p.inner + c;
    const int64_t end = min(p.n, (q + 1) * p.chunk);
    for (int64_t i0 = q * p.chunk; i0 < end; i0 += B) {
        T acc[B];
#pragma unroll
        for (int k = 0; k < B; ++k) acc[k] = T(0);
        const int64_t from = i0 + p.first;
        if (from >= 0 && from + max(p.taps, (int64_t)B) + 2 * B <= p.n) {  // every load inside: plain strided loads
            const T* at = line + from * p.inner;
            correlate_window(w, (int)p.taps, [&](int t) { return __ldg(at + t * p.inner); }, acc);
        } else {
            correlate_window(w, (int)p.taps, [&](int t) { return line_value(line, from + t, p); }, acc);
        }
#pragma unroll
        for (int k = 0; k < B; ++k)
            if (i0 + k < end) store(out_line + (i0 + k) * p.inner, p, acc[k]);
    }
}

// Values of a warp's tile: what correlate_window reads for lane 31
// (31 B + max(taps, B) + 2 B), plus the skew (one slot per 32 4-byte banks'
// worth of values).
template <typename T> struct Tile {
    static constexpr int SHIFT = sizeof(T) == 4 ? 5 : 4;
    __device__ static int span(int taps) { return 34 * B + taps; }
    static constexpr int SPAN = 34 * B + MAX_TAPS;
    static constexpr int PER_LANE = (SPAN + 31) / 32;
    static constexpr int SIZE = SPAN + (SPAN >> SHIFT) + 1;
    __device__ static int at(int t) { return t + (t >> SHIFT); }
};

// A warp per (line o, span s of 32 B outputs), p.units of them.
template <typename T>
__device__ void correlate_lines(const T* __restrict__ in, T* __restrict__ out, const kp_correlate_params& p,
                                const Weights<T>& w, T* tile) {
    const int lane = threadIdx.x % 32;
    const int64_t unit = ((int64_t)blockIdx.x * blockDim.x + threadIdx.x) / 32;
    if (unit >= p.units) return;  // whole warps: no warp is split
    const int64_t spans = (p.n + 32 * B - 1) / (32 * B);
    const int64_t o = unit / spans, s = unit % spans;
    const T* line = in + o * p.n;
    const int64_t i0 = s * 32 * B;
    const int64_t from = i0 + p.first;
    const int count = Tile<T>::span((int)p.taps);
    // Every load inside the line is issued before any is stored (a loop of
    // load-then-store waits for each load in turn). A tile inside the line
    // loads it all; one that reaches past an end (every tile of short lines)
    // loads what is inside, then maps the rest through the boundary mode,
    // out of line. On an H200 the split is worth it both ways: the general
    // path alone took 0.35 ms against 0.30 for 8192^2 f32 along the rows;
    // the old edge path (a loop of line_value) 0.79 ms against 0.68 for
    // 512^3 f32 along lines of 512.
    T v[Tile<T>::PER_LANE];
    if (from >= 0 && from + count <= p.n) {
#pragma unroll
        for (int q = 0; q < Tile<T>::PER_LANE; ++q)
            if (lane + 32 * q < count) v[q] = __ldg(line + from + lane + 32 * q);
#pragma unroll
        for (int q = 0; q < Tile<T>::PER_LANE; ++q)
            if (lane + 32 * q < count) tile[Tile<T>::at(lane + 32 * q)] = v[q];
    } else {
#pragma unroll
        for (int q = 0; q < Tile<T>::PER_LANE; ++q) {
            const int64_t i = from + lane + 32 * q;
            if (lane + 32 * q < count && i >= 0 && i < p.n) v[q] = __ldg(line + i);
        }
#pragma unroll
        for (int q = 0; q < Tile<T>::PER_LANE; ++q) {
            const int64_t i = from + lane + 32 * q;
            if (lane + 32 * q < count) {
                if (i < 0 || i >= p.n) v[q] = line_outside(line, i, p.n, (int64_t)1, p.mode, p.cval);
                tile[Tile<T>::at(lane + 32 * q)] = v[q];
            }
        }
    }
    __syncwarp();
    T acc[B];
#pragma unroll
    for (int k = 0; k < B; ++k) acc[k] = T(0);
    correlate_window(w, (int)p.taps, [&](int t) { return tile[Tile<T>::at(B * lane + t)]; }, acc);
    // The outputs go back through the tile, so that the stores are
    // coalesced: lane l holds outputs B l .. B l + B - 1, the warp stores
    // 32 consecutive ones at a time.
    __syncwarp();
#pragma unroll
    for (int k = 0; k < B; ++k) tile[Tile<T>::at(B * lane + k)] = acc[k];
    __syncwarp();
    T* out_line = out + o * p.n;
#pragma unroll
    for (int k = 0; k < B; ++k) {
        const int64_t i = i0 + 32 * k + lane;
        if (i < p.n) store(out_line + i, p, tile[Tile<T>::at(32 * k + lane)]);
    }
}

}  // namespace correlate
}  // namespace kp

// Per type; L: the weights' capacity, KP_CORRELATE_MAX_TAPS spelled out
// (the tests read the parameter types from this file).
#define KP_CORRELATE_ENTRIES(T, SUFFIX, L)                                                                       \
    extern "C" __global__ void __launch_bounds__(32 * KP_CORRELATE_WARPS)                                    \
        correlate_strided_##SUFFIX(const T* __restrict__ in, T* __restrict__ out, const kp_correlate_params p, \
                                   const kp::Weights<T, L> w) {                                      \
        kp::correlate::correlate_strided<T>(in, out, p, w);                                                  \
    }                                                                                                        \
    extern "C" __global__ void __launch_bounds__(32 * KP_CORRELATE_WARPS)                                    \
        correlate_lines_##SUFFIX(const T* __restrict__ in, T* __restrict__ out, const kp_correlate_params p,   \
                                 const kp::Weights<T, L> w) {                                        \
        __shared__ T tiles[KP_CORRELATE_WARPS][kp::correlate::Tile<T>::SIZE];                               \
        kp::correlate::correlate_lines<T>(in, out, p, w, tiles[threadIdx.x / 32]);                           \
    }
static_assert(KP_CORRELATE_MAX_TAPS == 256, "the entries below spell it out");
KP_CORRELATE_ENTRIES(float, f32, 256)
KP_CORRELATE_ENTRIES(double, f64, 256)
#undef KP_CORRELATE_ENTRIES
