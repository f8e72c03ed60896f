// The best few peaks of each row of a batch (src/params/peaks.rs): a search
// statistic per (series, trial frequency) reduced on the device to k
// (index, value) pairs per series, so that only those cross the bus.
//
// One block per row (grid-strided). Peaks are taken in k rounds: in each,
// every thread finds the best admissible peak of a strided slice of the row
// (a peak not taken yet and at least `separation` away from those taken),
// then a tree over the block keeps the best, the lower index among equal
// scores. The scores are the row's values widened to double (negated where
// lower is better) and every comparison is exact, so the result does not
// depend on the block or grid size and equals the CPU backend's. A peak may
// carry a payload: `payload_bytes` bytes per value (e.g. the BLS box behind
// a power), copied out beside it.
#include <math.h>
#include <stdint.h>

namespace kp {
namespace peaks {

constexpr int BLOCK = 256;
// params::peaks::MAX_PEAKS.
constexpr int MAX_PEAKS = 256;

// Trial frequency i of row s: axis[i], or with no axis the uniform grid
// f0[g] + i df[g] (g = s for per-series grids, else 0), rounded as the host's
// UniformGrid::frequency.
__device__ __forceinline__ double frequency(const double* axis, const double* f0, const double* df,
                                            const int per_series_grid, const int64_t s,
                                            const int64_t i) {
    if (axis) return axis[i];
    const int64_t g = per_series_grid ? s : 0;
    return __dadd_rn(f0[g], __dmul_rn((double)i, df[g]));
}

// Larger is better; -inf for NaN and past the row's ends.
template <typename T>
__device__ __forceinline__ double score(const T* row, const int64_t i, const int64_t nf,
                                        const int lowest) {
    if (i < 0 || i >= nf) return -INFINITY;
    const double v = (double)row[i];
    if (isnan(v)) return -INFINITY;
    return lowest ? -v : v;
}

// Bytes of item `from` of `payload` (zeros for -1) to item `to` of `out`,
// by the block's threads.
__device__ __forceinline__ void copy_payload(const unsigned char* payload, const int64_t bytes,
                                             const int64_t from, const int64_t to,
                                             unsigned char* out) {
    for (int64_t b = threadIdx.x; b < bytes; b += BLOCK)
        out[to * bytes + b] = from < 0 ? 0 : payload[from * bytes + b];
}

struct Best {
    double score;
    int64_t index;  // -1: none
};

__device__ __forceinline__ Best better(const Best a, const Best b) {
    if (b.index < 0) return a;
    if (a.index < 0) return b;
    return (b.score > a.score || (b.score == a.score && b.index < a.index)) ? b : a;
}

template <typename T>
__device__ void best_peaks(const int64_t nseries, const int64_t nf, const int k, const int lowest,
                           const double separation, const T* __restrict__ values,
                           const double* __restrict__ axis, const double* __restrict__ f0,
                           const double* __restrict__ df, const int per_series_grid,
                           const int64_t payload_bytes,
                           const unsigned char* __restrict__ payload, int64_t* __restrict__ index,
                           double* __restrict__ value, unsigned char* __restrict__ payload_out) {
    __shared__ double scores[BLOCK];
    __shared__ int64_t indices[BLOCK];
    __shared__ int64_t taken[MAX_PEAKS];
    __shared__ double taken_at[MAX_PEAKS];
    for (int64_t s = blockIdx.x; s < nseries; s += gridDim.x) {
        const T* row = values + s * nf;
        int rounds = 0;
        for (; rounds < k; ++rounds) {
            Best mine{-INFINITY, -1};
            // Indices rise along a thread's slice, so a strict > keeps its first best.
            for (int64_t i = threadIdx.x; i < nf; i += BLOCK) {
                const double sc = score(row, i, nf, lowest);
                if (!(sc > -INFINITY) || (mine.index >= 0 && !(sc > mine.score))) continue;
                if (!(sc > score(row, i - 1, nf, lowest) && sc >= score(row, i + 1, nf, lowest)))
                    continue;
                bool apart = true;
                const double at = rounds ? frequency(axis, f0, df, per_series_grid, s, i) : 0.0;
                for (int j = 0; j < rounds && apart; ++j)
                    apart = taken[j] != i && fabs(__dsub_rn(at, taken_at[j])) >= separation;
                if (apart) mine = Best{sc, i};
            }
            scores[threadIdx.x] = mine.score;
            indices[threadIdx.x] = mine.index;
            __syncthreads();
            for (int half = BLOCK / 2; half > 0; half /= 2) {
                if (threadIdx.x < half) {
                    const Best b = better(Best{scores[threadIdx.x], indices[threadIdx.x]},
                                          Best{scores[threadIdx.x + half], indices[threadIdx.x + half]});
                    scores[threadIdx.x] = b.score;
                    indices[threadIdx.x] = b.index;
                }
                __syncthreads();
            }
            const int64_t got = indices[0];
            if (payload_bytes > 0)
                copy_payload(payload, payload_bytes, got < 0 ? -1 : s * nf + got, s * k + rounds,
                             payload_out);
            if (threadIdx.x == 0) {
                index[s * k + rounds] = got;
                value[s * k + rounds] = got < 0 ? (double)NAN : (double)row[got];
                if (got >= 0) {
                    taken[rounds] = got;
                    taken_at[rounds] = frequency(axis, f0, df, per_series_grid, s, got);
                }
            }
            __syncthreads();  // taken[] for the next round, scores[] free again
            if (got < 0) break;
        }
        // No peak left: the remaining ranks are empty.
        for (int r = rounds + 1 + threadIdx.x; r < k; r += BLOCK) {
            index[s * k + r] = -1;
            value[s * k + r] = (double)NAN;
        }
        for (int r = rounds + 1; r < k && payload_bytes > 0; ++r)
            copy_payload(payload, payload_bytes, -1, s * k + r, payload_out);
        __syncthreads();  // the shared arrays serve the next row
    }
}

}  // namespace peaks
}  // namespace kp

// `values`: nseries rows of nf values; `axis`: the nf trial frequencies of
// every row, or NULL for the uniform grids f0[g] + i df[g] (g = s when
// per_series_grid, else 0); `index`, `value`: k per row, best first (-1 and NaN past the
// row's last peak). `lowest`: 1 where lower values are better. With
// payload_bytes > 0, `payload` holds that many bytes per value and
// `payload_out` receives those of each peak (zeros past the last).
#define KP_PEAKS_ENTRY_POINTS(T, SUFFIX)                                                          \
    extern "C" __global__ void __launch_bounds__(kp::peaks::BLOCK)                                \
        best_peaks_##SUFFIX(const int64_t nseries, const int64_t nf, const int k,                 \
                            const int lowest, const double separation, const T* values,           \
                            const double* axis, const double* f0, const double* df,               \
                            const int per_series_grid, const int64_t payload_bytes,               \
                            const unsigned char* payload, int64_t* index, double* value,          \
                            unsigned char* payload_out) {                                         \
        kp::peaks::best_peaks<T>(nseries, nf, k, lowest, separation, values, axis, f0, df,        \
                                 per_series_grid, payload_bytes, payload, index, value,           \
                                 payload_out);                                                    \
    }

KP_PEAKS_ENTRY_POINTS(float, f32)
KP_PEAKS_ENTRY_POINTS(double, f64)
