// Helpers shared by the kernel families.
#pragma once
#include <stdint.h>

namespace kp {

// Filter weights passed by value as a kernel parameter: they sit in the
// constant bank, read at a uniform index (Model III's sums, the 1-D
// correlation's taps).
template <typename T, int L> struct Weights {
    T w[L];
};

// A sum x can be divided by, as x * (1 / sum): finite, and its reciprocal
// too (zero and sums below 2^-1024 are not). The host rules match.
__device__ __forceinline__ bool normalizable(double s) { return isfinite(s) && isfinite(1.0 / s); }


// Fast single-precision trig: the pack is built with --use_fast_math, so sincosf
// maps to the SFU (MUFU.SIN/COS); double precision keeps the accurate routine.
__device__ __forceinline__ void sincos_t(float x, float* s, float* c) { __sincosf(x, s, c); }
__device__ __forceinline__ void sincos_t(double x, double* s, double* c) { sincos(x, s, c); }
__device__ __forceinline__ float atan2_t(float y, float x) { return atan2f(y, x); }
__device__ __forceinline__ double atan2_t(double y, double x) { return atan2(y, x); }

// x - rint(x), in [-0.5, 0.5], with two additions instead of a rounding
// instruction (valid for |x| < 2^51): the fractional turns of a phase.
__device__ __forceinline__ double frac_turns(double x) {
    const double magic = 6755399441055744.0;  // 1.5 * 2^52
    return x - ((x + magic) - magic);
}

// sin and cos of the phase omega * t in the inner loops.
//
// float: the SFU (__sincosf, one MUFU.SIN + MUFU.COS) is the fastest unit for it.
// double: the libdevice sincos spends ~25 FP64 operations on range reduction and
// two long polynomials. Here the phase is taken in units of 1/2048 turn, split
// into a table index k and a remainder |b| <= pi/2048, and
// sin(a + b) = sin a cos b + cos a sin b with two-term polynomials for b: ~13
// FP64 operations and one shared-memory load, accurate to a few ulp of the phase.
template <typename T> struct PhaseTrig;

template <> struct PhaseTrig<float> {
    struct Table {};
    __device__ static void init(Table&) {}
    __device__ static float scale(float omega) { return omega; }
    __device__ static void sincos(const Table&, float scaled, float t, float* s, float* c) {
        __sincosf(scaled * t, s, c);
    }
    // Any turns: reduced to [-0.5, 0.5] first, where the SFU is accurate to
    // ~2^-21 (and the conversion to float loses nothing that matters).
    __device__ static void sincos_turns(const Table&, double turns, float* s, float* c) {
        __sincosf((float)frac_turns(turns) * 6.2831853f, s, c);
    }
};

template <> struct PhaseTrig<double> {
    // Table entries per turn: 2048 (32 KB of shared memory) keeps |b| <= pi/2048,
    // where two-term polynomials are exact to < 7.2e-17 absolute.
    static constexpr int N = 2048;
    struct Table { double2 cos_sin[N]; };
    // Needs a __syncthreads() before the first sincos.
    __device__ static void init(Table& table) {
        for (int k = threadIdx.x; k < N; k += blockDim.x) {
            double s, c;
            sincospi(k / (N / 2.0), &s, &c);
            table.cos_sin[k] = make_double2(c, s);
        }
    }
    // omega (rad per time unit) -> 1/N turns per time unit.
    __device__ static double scale(double omega) { return omega * (N / 6.283185307179586476925286766559); }
    __device__ static void sincos(const Table& table, double scaled, double t, double* s, double* c) {
        const double x = scaled * t;
        // x + 1.5 * 2^52 rounds x to an integer k held in the low mantissa bits
        // (valid for |x| < 2^51); then x - k is exact.
        const double magic = 6755399441055744.0;
        const double rounded = x + magic;
        const int k = __double2loint(rounded) & (N - 1);
        const double b = (x - (rounded - magic)) * (6.283185307179586476925286766559 / N);
        const double b2 = b * b;
        // The next Taylor terms are b^5/120 <= 7.2e-17 and b^6/720 <= 2e-20.
        const double sin_b = b + (b * b2) * (-1.0 / 6);
        const double cos_b = 1.0 + b2 * (-0.5 + b2 * (1.0 / 24));
        const double2 a = table.cos_sin[k];
        *s = a.y * cos_b + a.x * sin_b;
        *c = a.x * cos_b - a.y * sin_b;
    }
    // Any turns (|turns| < 2^43): N * turns is exact (N is a power of two) and
    // the table index takes it modulo a turn, so no separate reduction is needed.
    __device__ static void sincos_turns(const Table& table, double turns, double* s, double* c) {
        sincos(table, N, turns, s, c);
    }
};


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
