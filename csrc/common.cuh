// Helpers shared by the kernel families.
#pragma once
#include <stdint.h>

namespace kp {

// Fast single-precision trig: the pack is built with --use_fast_math, so sincosf
// maps to the SFU (MUFU.SIN/COS); double precision keeps the accurate routine.
__device__ __forceinline__ void sincos_t(float x, float* s, float* c) { __sincosf(x, s, c); }
__device__ __forceinline__ void sincos_t(double x, double* s, double* c) { sincos(x, s, c); }
__device__ __forceinline__ float atan2_t(float y, float x) { return atan2f(y, x); }
__device__ __forceinline__ double atan2_t(double y, double x) { return atan2(y, x); }

// Machine epsilon of the accumulation type.
template <typename T> struct limits;
template <> struct limits<float> { static constexpr float eps = 1.1920929e-7f; };
template <> struct limits<double> { static constexpr double eps = 2.220446049250313e-16; };

// Deterministic sum of one value per thread over a block: fixed tree order,
// so the same inputs give the same bits on every run. `scratch` holds blockDim.x.
template <typename T, int BLOCK>
__device__ T block_sum(T v, T* scratch) {
    scratch[threadIdx.x] = v;
    __syncthreads();
#pragma unroll
    for (int width = BLOCK / 2; width > 0; width /= 2) {
        if (threadIdx.x < width) scratch[threadIdx.x] += scratch[threadIdx.x + width];
        __syncthreads();
    }
    T total = scratch[0];
    __syncthreads();  // scratch may be reused right after
    return total;
}

}  // namespace kp
