// Reductions: deterministic sum (f64 accumulation for every input type) and
// normalisation in place, a <- a / sum(a) (the reductions users write by hand).
//
// Bitwise deterministic: the split into blocks depends on n only, each block
// sums a fixed contiguous chunk in a fixed order, and one block adds the
// partial sums in index order. No atomics: the race of an atomicAdd-per-block reduction cannot happen.
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

// x <- x / sum, unless the sum cannot be divided by (kp::normalizable): then x is left as it is
// and *status is set to 1 (the host reports the error). 16-byte accesses when
// x is aligned for them (each element gets the same arithmetic either way).
template <typename T>
__device__ void normalize(T* __restrict__ x, int64_t n, const double* __restrict__ sum, int* __restrict__ status) {
    const double s = *sum;
    const bool ok = normalizable(s);
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
// chunk, which it has just read: the first KEEP vectors per thread of it from
// shared memory, where the sum phase left them, the rest from L2 (arrays
// that fit in L2 only: their second read costs no DRAM traffic). One launch
// instead of three. THREADS per block, VECS vectors in flight per thread and
// KEEP are tuning knobs (benches/normalize_variants.cu; PERF.md).
template <typename T, int THREADS, int VECS, int KEEP>
__device__ void normalize_fused(T* __restrict__ x, int64_t n, double* __restrict__ partials,
                                double* __restrict__ sum, int* __restrict__ status) {
    using V = typename Vec16<T>::type;
    constexpr int W = Vec16<T>::N;
    __shared__ double scratch[THREADS];
    __shared__ V kept[KEEP > 0 ? KEEP * THREADS : 1];  // vectors 0 .. KEEP * THREADS - 1 of the chunk
    const bool aligned = reinterpret_cast<uintptr_t>(x) % 16 == 0;
    // Chunks of whole vectors, so every chunk but the last starts aligned.
    const int64_t chunk = ((n + gridDim.x - 1) / gridDim.x + W - 1) / W * W;
    const int64_t begin = min((int64_t)blockIdx.x * chunk, n), end = min(begin + chunk, n);
    const int64_t vend = aligned ? begin + (end - begin) / W * W : begin;
    const int64_t vectors = (vend - begin) / W;
    V* xv = reinterpret_cast<V*>(x + begin);

    double acc[VECS] = {};
    int64_t k = threadIdx.x;
    for (; k + (VECS - 1) * THREADS < vectors; k += VECS * THREADS) {
        V v[VECS];
#pragma unroll
        for (int u = 0; u < VECS; ++u) v[u] = xv[k + u * THREADS];
#pragma unroll
        for (int u = 0; u < VECS; ++u) {
            const T* e = reinterpret_cast<const T*>(&v[u]);
#pragma unroll
            for (int j = 0; j < W; ++j) acc[u] += (double)e[j];
            if (k + u * THREADS < KEEP * THREADS) kept[k + u * THREADS] = v[u];
        }
    }
    for (; k < vectors; k += THREADS) {  // fewer than VECS vectors per thread left
        const V v = xv[k];
        const T* e = reinterpret_cast<const T*>(&v);
#pragma unroll
        for (int j = 0; j < W; ++j) acc[0] += (double)e[j];
        if (k < KEEP * THREADS) kept[k] = v;
    }
    for (int64_t j = vend + threadIdx.x; j < end; j += THREADS) acc[0] += (double)x[j];
    double mine = 0.0;
#pragma unroll
    for (int u = 0; u < VECS; ++u) mine += acc[u];
    const double block_total = block_sum<double, THREADS>(mine, scratch);
    if (threadIdx.x == 0) partials[blockIdx.x] = block_total;
    cooperative_groups::this_grid().sync();

    double part = 0.0;
    for (int64_t b = threadIdx.x; b < gridDim.x; b += THREADS) part += partials[b];
    const double total = block_sum<double, THREADS>(part, scratch);
    const bool ok = normalizable(total);
    if (blockIdx.x == 0 && threadIdx.x == 0) *sum = total, *status = ok ? 0 : 1;
    if (!ok) return;
    const double inv = 1.0 / total;
    // From L2 first, backwards: the end of the chunk was read last, so it is
    // the likeliest still to be there.
    const int64_t kept_vectors = min((int64_t)KEEP * THREADS, vectors);
    for (int64_t k = vectors - 1 - threadIdx.x; k >= kept_vectors; k -= THREADS) {
        V v = xv[k];
        scale(v, inv);
        xv[k] = v;
    }
    for (int64_t k = threadIdx.x; k < kept_vectors; k += THREADS) {  // each thread its own kept vectors
        V v = kept[k];
        scale(v, inv);
        xv[k] = v;
    }
    for (int64_t i = vend + threadIdx.x; i < end; i += THREADS) x[i] = (T)((double)x[i] * inv);
}

// The fused kernel's shape: 512 threads, 4 vectors in flight, 5 kept per
// thread (40 KB of static shared memory: 4 blocks and 160 KB per SM).
constexpr int FUSED_THREADS = 512, FUSED_VECS = 4, FUSED_KEEP = 5;

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
    extern "C" __global__ void __launch_bounds__(kp::reduce::FUSED_THREADS)                       \
        normalize_fused_##SUFFIX(T* x, int64_t n, double* partials, double* sum, int* status) {   \
        using namespace kp::reduce;                                                               \
        normalize_fused<T, FUSED_THREADS, FUSED_VECS, FUSED_KEEP>(x, n, partials, sum, status);   \
    }

KP_REDUCE_ENTRY_POINTS(float, f32)
KP_REDUCE_ENTRY_POINTS(double, f64)
