// Box Least Squares transit search (astropy's BoxLeastSquares semantics, see
// src/params/bls.rs): for each (series, period) the best box over every
// duration and start bin of the phase histogram.
//
// One block per (series, period) item, items in a grid-stride loop. The
// histogram of fixed-point sums (two int64 per bin: w (y - centre) and w)
// lives in dynamic shared memory when it fits, else in a slice of global
// scratch per block. Integer sums are exact in any order, so the atomics'
// order cannot change a result: the box found equals the CPU backend's.
//
// The double-precision arithmetic that decides bins and objectives uses the
// _rn intrinsics: the pack is built with --use_fast_math, which lets nvcc fuse
// a * b + c into one FMA, and these values must round as the host's do.
#include <stdint.h>

#include "kernpack_params.h"

namespace kp {
namespace bls {

constexpr int BLOCK = 256;
// Start bins examined per round of the box search.
constexpr int TILE = 8 * BLOCK;

// trunc(wrap(dt, period) / bin) + 1, as params::bls::BlsGrid::phase_bin.
__device__ __forceinline__ long long phase_bin(double dt, double period, double bin) {
    double turns = floor(__ddiv_rn(dt, period));
    double x = __dsub_rn(dt, __dmul_rn(period, turns));
    return (long long)__ddiv_rn(x, bin) + 1;
}

// The objective of a box, or -inf when params::bls::BoxFit::objective
// returns None; the same operations in the same order.
__device__ __forceinline__ double objective(double wy_in, double w_in, double wy_out,
                                            double w_out, int snr) {
    const double eps = 2.220446049250313e-16;
    if (w_in < eps || w_out < eps) return -INFINITY;
    double depth = __dsub_rn(__ddiv_rn(wy_out, w_out), __ddiv_rn(wy_in, w_in));
    if (!(depth >= 0.0)) return -INFINITY;
    if (snr) {
        double var = __dadd_rn(__ddiv_rn(1.0, w_in), __ddiv_rn(1.0, w_out));
        return __ddiv_rn(depth, __dsqrt_rn(var));
    }
    return __dmul_rn(__dmul_rn(__dmul_rn(0.5, w_in), depth), depth);
}

// A candidate box in the search's order: larger objective first, then the
// earlier duration, then the earlier start.
struct Candidate {
    double value;
    long long duration;
    long long start;
    long long wy_in;
    long long w_in;
};

__device__ __forceinline__ bool beats(const Candidate& a, const Candidate& b) {
    if (a.value != b.value) return a.value > b.value;
    if (a.duration != b.duration) return a.duration < b.duration;
    return a.start < b.start;
}

__device__ __forceinline__ Candidate shuffle_down(const Candidate& c, int delta) {
    Candidate o;
    o.value = __shfl_down_sync(0xffffffffu, c.value, delta);
    o.duration = __shfl_down_sync(0xffffffffu, c.duration, delta);
    o.start = __shfl_down_sync(0xffffffffu, c.start, delta);
    o.wy_in = __shfl_down_sync(0xffffffffu, c.wy_in, delta);
    o.w_in = __shfl_down_sync(0xffffffffu, c.w_in, delta);
    return o;
}

// Exclusive prefix of one int64 pair per thread over the block.
__device__ __forceinline__ void block_exclusive_scan(long long& a, long long& b, long long* sa,
                                                     long long* sb) {
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    long long ia = a, ib = b;
    for (int d = 1; d < 32; d <<= 1) {
        long long ta = __shfl_up_sync(0xffffffffu, ia, d);
        long long tb = __shfl_up_sync(0xffffffffu, ib, d);
        if (lane >= d) {
            ia += ta;
            ib += tb;
        }
    }
    if (lane == 31) {
        sa[warp] = ia;
        sb[warp] = ib;
    }
    __syncthreads();
    if (warp == 0) {
        long long wa = lane < BLOCK / 32 ? sa[lane] : 0;
        long long wb = lane < BLOCK / 32 ? sb[lane] : 0;
        for (int d = 1; d < 32; d <<= 1) {
            long long ta = __shfl_up_sync(0xffffffffu, wa, d);
            long long tb = __shfl_up_sync(0xffffffffu, wb, d);
            if (lane >= d) {
                wa += ta;
                wb += tb;
            }
        }
        if (lane < BLOCK / 32) {
            sa[lane] = wa;
            sb[lane] = wb;
        }
    }
    __syncthreads();
    long long before_a = warp ? sa[warp - 1] : 0, before_b = warp ? sb[warp - 1] : 0;
    a = before_a + ia - a;
    b = before_b + ib - b;
    __syncthreads();
}

}  // namespace bls
}  // namespace kp

// p: the phase grid (kernpack_params.h). Per series s (samples offsets[s]..offsets[s+1]): dt = t - min t, and the
// fixed-point wy and w of each sample; totals[2s..] = (sum wy, sum w) and
// units[2s..] = (wy unit, w unit). Per period p: periods[p]; per duration k:
// duration_bins[k]. scratch: null to hold the histogram in dynamic shared
// memory (2 (max_bins + 1) int64), else gridDim.x slices of that size.
// out: four int64 per (series, period), series-major: the duration index
// (-1: no box), start bin, sum wy and sum w in transit. power: NULL, or one
// double per (series, period): the best box's objective (-inf: no box).
extern "C" __global__ void __launch_bounds__(kp::bls::BLOCK)
    bls_binned(kp_bls_params prm, int64_t nseries, const int64_t* offsets, const double* dt,
               const int64_t* wy, const int64_t* w, const int64_t* totals, const double* units,
               int64_t nperiods, const double* periods, const int64_t* duration_bins,
               unsigned long long* scratch, int64_t* out, double* power) {
    using namespace kp::bls;
    const double bin = prm.bin;
    const long long max_bins = prm.max_bins, oversample = prm.oversample;
    const int snr = prm.snr, ndurations = prm.ndurations;
    extern __shared__ unsigned long long shared_bins[];
    __shared__ long long scan_a[BLOCK / 32], scan_b[BLOCK / 32];
    __shared__ Candidate warp_best[BLOCK / 32];
    __shared__ int listed[TILE];
    __shared__ int count;
    if (threadIdx.x == 0) count = 0;
    unsigned long long* hist =
        scratch ? scratch + (size_t)blockIdx.x * 2 * (size_t)(max_bins + 1) : shared_bins;
    const long long items = nseries * nperiods;
    for (long long item = blockIdx.x; item < items; item += gridDim.x) {
        const long long s = item / nperiods, p = item % nperiods;
        const double period = periods[p];
        const long long bins = (long long)ceil(__ddiv_rn(period, bin)) + oversample;
        const long long len = bins + 1, first_copy = bins - oversample;
        for (long long i = threadIdx.x; i < 2 * len; i += BLOCK) hist[i] = 0;
        __syncthreads();
        // Placements, as params::bls::BlsGrid::placements.
        for (long long i = offsets[s] + threadIdx.x; i < offsets[s + 1]; i += BLOCK) {
            long long b = phase_bin(dt[i], period, bin);
            unsigned long long vy = (unsigned long long)wy[i], vw = (unsigned long long)w[i];
            long long at[2] = {-1, -1};
            if (b <= oversample) {
                at[0] = b;
                at[1] = first_copy + b - 1;
            } else if (b < first_copy || b == bins) {
                at[0] = b;
            }
            for (int j = 0; j < 2; ++j) {
                if (at[j] >= 0) {
                    atomicAdd(&hist[2 * at[j]], vy);
                    atomicAdd(&hist[2 * at[j] + 1], vw);
                }
            }
        }
        __syncthreads();
        // Inclusive prefix sums over the bins: each thread a contiguous run.
        const long long run = (len + BLOCK - 1) / BLOCK;
        const long long lo = min(len, run * threadIdx.x), hi = min(len, lo + run);
        long long sum_y = 0, sum_w = 0;
        for (long long i = lo; i < hi; ++i) {
            sum_y += (long long)hist[2 * i];
            sum_w += (long long)hist[2 * i + 1];
        }
        block_exclusive_scan(sum_y, sum_w, scan_a, scan_b);
        for (long long i = lo; i < hi; ++i) {
            sum_y += (long long)hist[2 * i];
            sum_w += (long long)hist[2 * i + 1];
            hist[2 * i] = (unsigned long long)sum_y;
            hist[2 * i + 1] = (unsigned long long)sum_w;
        }
        __syncthreads();
        // The boxes whose contents differ from the box one bin earlier (start
        // 0, or bin `start` or bin `start + d` holds samples): a box skipped
        // has the sums, so the value, of an earlier one of the same duration,
        // which the search's order prefers. Each tile's such starts are listed
        // in shared memory, then judged by all threads.
        const long long all_y = totals[2 * s], all_w = totals[2 * s + 1];
        const double unit_y = units[2 * s], unit_w = units[2 * s + 1];
        auto changes = [&](long long b) {
            return hist[2 * b] != hist[2 * b - 2] || hist[2 * b + 1] != hist[2 * b - 1];
        };
        Candidate best = {-INFINITY, -1, 0, 0, 0};
        for (int k = 0; k < ndurations; ++k) {
            const long long d = duration_bins[k];
            for (long long base = 0; base + d <= bins; base += TILE) {
                for (int j = threadIdx.x; j < TILE; j += BLOCK) {
                    long long start = base + j;
                    if (start + d <= bins && (start == 0 || changes(start) || changes(start + d)))
                        listed[atomicAdd(&count, 1)] = j;
                }
                __syncthreads();
                const int n_listed = count;
                for (int i = threadIdx.x; i < n_listed; i += BLOCK) {
                    const long long start = base + listed[i];
                    long long in_y = (long long)hist[2 * (start + d)] - (long long)hist[2 * start];
                    long long in_w =
                        (long long)hist[2 * (start + d) + 1] - (long long)hist[2 * start + 1];
                    double value = objective(
                        __dmul_rn((double)in_y, unit_y), __dmul_rn((double)in_w, unit_w),
                        __dmul_rn((double)(all_y - in_y), unit_y),
                        __dmul_rn((double)(all_w - in_w), unit_w), snr);
                    Candidate c = {value, k, start, in_y, in_w};
                    if (value > -INFINITY && beats(c, best)) best = c;
                }
                __syncthreads();
                if (threadIdx.x == 0) count = 0;
                __syncthreads();
            }
        }
        for (int delta = 16; delta > 0; delta >>= 1) {
            Candidate other = shuffle_down(best, delta);
            if (beats(other, best)) best = other;
        }
        if ((threadIdx.x & 31) == 0) warp_best[threadIdx.x >> 5] = best;
        __syncthreads();
        if (threadIdx.x == 0) {
            for (int j = 1; j < BLOCK / 32; ++j)
                if (beats(warp_best[j], best)) best = warp_best[j];
            int64_t* o = out + 4 * item;
            bool found = best.value > -INFINITY;
            o[0] = found ? best.duration : -1;
            o[1] = found ? best.start : 0;
            o[2] = found ? best.wy_in : 0;
            o[3] = found ? best.w_in : 0;
            if (power) power[item] = best.value;
        }
        __syncthreads();
    }
}
