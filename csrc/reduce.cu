// Reductions: deterministic sum (f64 accumulation for every input type) and
// normalisation in place, a <- a / sum(a) (seeds 000 and 004).
//
// Bitwise deterministic: the split into blocks depends on n only, each block
// sums a fixed contiguous chunk in a fixed order, and one block adds the
// partial sums in index order. No atomics: the seed 000 race cannot happen.
#include <cooperative_groups.h>

#include "kernpack_params.h"
#include "common.cuh"
#include "reduce.cuh"

namespace kp {
namespace reduce {

// Block b sums x[b * chunk, min((b + 1) * chunk, n)) (chunk_sum in reduce.cuh).
template <typename T>
__device__ void partial_sums(const T* __restrict__ x, int64_t n, int64_t chunk, double* __restrict__ partials) {
    __shared__ double scratch[BLOCK];
    const int64_t begin = (int64_t)blockIdx.x * chunk;
    const double total = chunk_sum(x, begin, min(begin + chunk, n), scratch);
    if (threadIdx.x == 0) partials[blockIdx.x] = total;
}

// 16 bytes of T, for wide loads and stores.
template <typename T> struct Vec16;
template <> struct Vec16<float> { using type = float4; static constexpr int N = 4; };
template <> struct Vec16<double> { using type = double2; static constexpr int N = 2; };

__device__ __forceinline__ void scale(float4& v, double inv) {
    v.x = (float)((double)v.x * inv), v.y = (float)((double)v.y * inv);
    v.z = (float)((double)v.z * inv), v.w = (float)((double)v.w * inv);
}
__device__ __forceinline__ void scale(double2& v, double inv) { v.x *= inv, v.y *= inv; }

// x <- x / sum, unless the sum is zero or not finite: then x is left as it is
// and *status is set to 1 (the host reports the error). 16-byte accesses when
// x is aligned for them (each element gets the same arithmetic either way).
template <typename T>
__device__ void normalize(T* __restrict__ x, int64_t n, const double* __restrict__ sum, int* __restrict__ status) {
    const double s = *sum;
    const bool ok = s != 0.0 && isfinite(s);
    if (blockIdx.x == 0 && threadIdx.x == 0) *status = ok ? 0 : 1;
    if (!ok) return;
    const double inv = 1.0 / s;
    const int64_t stride = (int64_t)gridDim.x * BLOCK;
    const int64_t first = (int64_t)blockIdx.x * BLOCK + threadIdx.x;
    int64_t scalar_from = 0;
    if (reinterpret_cast<uintptr_t>(x) % 16 == 0) {
        using V = typename Vec16<T>::type;
        V* xv = reinterpret_cast<V*>(x);
        const int64_t nv = n / Vec16<T>::N;
        for (int64_t i = first; i < nv; i += stride) {
            V v = xv[i];
            scale(v, inv);
            xv[i] = v;
        }
        scalar_from = nv * Vec16<T>::N;
    }
    for (int64_t i = scalar_from + first; i < n; i += stride) x[i] = (T)((double)x[i] * inv);
}

// Normalisation in one cooperative launch (grid = resident blocks): each block
// sums its own chunk, the grid synchronises, every block adds the partial sums
// in the same fixed order (so all agree bit for bit), then scales its own
// chunk, which it has just read: for arrays that fit in L2 the second read
// costs no DRAM traffic, and there is one launch instead of three.
template <typename T>
__device__ void normalize_fused(T* __restrict__ x, int64_t n, double* __restrict__ partials,
                                double* __restrict__ sum, int* __restrict__ status) {
    __shared__ double scratch[BLOCK];
    using V = typename Vec16<T>::type;
    constexpr int W = Vec16<T>::N;
    const bool aligned = reinterpret_cast<uintptr_t>(x) % 16 == 0;
    // Chunks of whole vectors, so every chunk but the last starts aligned.
    const int64_t chunk = ((n + gridDim.x - 1) / gridDim.x + W - 1) / W * W;
    const int64_t begin = min((int64_t)blockIdx.x * chunk, n), end = min(begin + chunk, n);
    const int64_t vend = aligned ? begin + (end - begin) / W * W : begin;

    // Two vectors per thread and step: more loads in flight.
    double acc = 0.0, acc2 = 0.0;
    const int64_t step = (int64_t)BLOCK * W;
    int64_t i = begin + (int64_t)threadIdx.x * W;
    for (; i + step < vend; i += 2 * step) {
        const V v = *reinterpret_cast<const V*>(x + i);
        const V u = *reinterpret_cast<const V*>(x + i + step);
        const T* e = reinterpret_cast<const T*>(&v);
        const T* f = reinterpret_cast<const T*>(&u);
#pragma unroll
        for (int k = 0; k < W; ++k) acc += (double)e[k], acc2 += (double)f[k];
    }
    for (; i < vend; i += step) {
        const V v = *reinterpret_cast<const V*>(x + i);
        const T* e = reinterpret_cast<const T*>(&v);
#pragma unroll
        for (int k = 0; k < W; ++k) acc += (double)e[k];
    }
    for (int64_t j = vend + threadIdx.x; j < end; j += BLOCK) acc += (double)x[j];
    acc += acc2;
    const double mine = block_sum<double, BLOCK>(acc, scratch);
    if (threadIdx.x == 0) partials[blockIdx.x] = mine;
    cooperative_groups::this_grid().sync();

    double part = 0.0;
    for (int64_t b = threadIdx.x; b < gridDim.x; b += BLOCK) part += partials[b];
    const double total = block_sum<double, BLOCK>(part, scratch);
    const bool ok = total != 0.0 && isfinite(total);
    if (blockIdx.x == 0 && threadIdx.x == 0) *sum = total, *status = ok ? 0 : 1;
    if (!ok) return;
    const double inv = 1.0 / total;
    // Backwards: the end of the chunk was read last, so it is the likeliest
    // still to be in L2 when the array is about the L2's size.
    const int64_t vectors = (vend - begin) / W;
    for (int64_t k = vectors - 1 - threadIdx.x; k >= 0; k -= BLOCK) {
        T* at = x + begin + k * W;
        V v = *reinterpret_cast<V*>(at);
        scale(v, inv);
        *reinterpret_cast<V*>(at) = v;
    }
    for (int64_t i = vend + threadIdx.x; i < end; i += BLOCK) x[i] = (T)((double)x[i] * inv);
}

}  // namespace reduce
}  // namespace kp

extern "C" __global__ void __launch_bounds__(kp::reduce::BLOCK)
    reduce_final(const double* partials, int64_t count, double* sum) {
    kp::reduce::final_sum(partials, count, sum);
}

#define KP_REDUCE_ENTRY_POINTS(T, SUFFIX)                                                         \
    extern "C" __global__ void __launch_bounds__(kp::reduce::BLOCK)                               \
        reduce_partial_##SUFFIX(const T* x, int64_t n, int64_t chunk, double* partials) {         \
        kp::reduce::partial_sums<T>(x, n, chunk, partials);                                       \
    }                                                                                             \
    extern "C" __global__ void __launch_bounds__(kp::reduce::BLOCK)                               \
        normalize_##SUFFIX(T* x, int64_t n, const double* sum, int* status) {                     \
        kp::reduce::normalize<T>(x, n, sum, status);                                              \
    }                                                                                             \
    extern "C" __global__ void __launch_bounds__(kp::reduce::BLOCK)                               \
        normalize_fused_##SUFFIX(T* x, int64_t n, double* partials, double* sum, int* status) {   \
        kp::reduce::normalize_fused<T>(x, n, partials, sum, status);                              \
    }

KP_REDUCE_ENTRY_POINTS(float, f32)
KP_REDUCE_ENTRY_POINTS(double, f64)
