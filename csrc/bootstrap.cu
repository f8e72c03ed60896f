// Bootstrap resampling of one series for the false-alarm probability of a
// periodogram peak: `nresamples` copies of the series laid end to end (the
// batch layout of csrc/lombscargle.cu), copy r taking at position i the
// sample draw(seed, r, i) of the n, with replacement; the times stay in
// place, values and weights move together.
//
// The draws come from the counter-based generator of counter_rng.cuh keyed
// by (seed, r, i), the same as kernpack::params::significance::resample_index
// on the host: every backend, block size and split of the copies over GPUs
// draws the same samples.
#include <stdint.h>

#include "counter_rng.cuh"

namespace kp {
namespace bootstrap {

constexpr int BLOCK = 256;

// The sample position i of copy r takes: the high half of bits * n, in [0, n),
// bits the first 64 of the counter-based draw (seed, r, i, 0).
__device__ __forceinline__ int64_t draw(uint64_t seed, uint64_t r, uint64_t i, uint64_t n) {
    const rng::Words w = rng::draw(seed, r, i, 0);
    return (int64_t)__umul64hi((uint64_t)w.w[0] << 32 | w.w[1], n);
}

// w may be NULL (no weights): then out_w is not written.
template <typename T>
__device__ void resample(const int64_t n, const int64_t nresamples, const int64_t seed,
                         const T* __restrict__ t, const T* __restrict__ y, const T* __restrict__ w,
                         T* __restrict__ out_t, T* __restrict__ out_y, T* __restrict__ out_w) {
    const int64_t total = n * nresamples;
    const int64_t stride = (int64_t)gridDim.x * blockDim.x;
    for (int64_t k = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; k < total; k += stride) {
        const int64_t r = k / n, i = k - r * n;
        const int64_t s = draw((uint64_t)seed, (uint64_t)r, (uint64_t)i, (uint64_t)n);
        out_t[k] = t[i];
        out_y[k] = y[s];
        if (w != nullptr) out_w[k] = w[s];
    }
}

}  // namespace bootstrap
}  // namespace kp

#define KP_BOOTSTRAP_ENTRY_POINTS(T, SUFFIX)                                                      \
    extern "C" __global__ void __launch_bounds__(kp::bootstrap::BLOCK)                            \
        bootstrap_resample_##SUFFIX(const int64_t n, const int64_t nresamples, const int64_t seed,\
                                    const T* t, const T* y, const T* w, T* out_t, T* out_y,       \
                                    T* out_w) {                                                   \
        kp::bootstrap::resample<T>(n, nresamples, seed, t, y, w, out_t, out_y, out_w);            \
    }

KP_BOOTSTRAP_ENTRY_POINTS(float, f32)
KP_BOOTSTRAP_ENTRY_POINTS(double, f64)
