// Phase-folding period searches (src/params/phasefold.rs): phase dispersion
// minimisation (PDM) and conditional entropy (CE) of each series at each
// trial frequency.
//
// One thread per (series, frequency): a block takes blockDim.x frequencies
// of one series, items (series, frequency tile) in a grid-stride loop. The
// block stages the series' samples in shared memory a chunk at a time and
// each thread folds them at its frequency into its own accumulators (PDM:
// two f64 sums per phase bin; CE: a u32 count per cell). Accumulators are
// laid out [cell][thread], in dynamic shared memory when they fit, else in
// a slice of global scratch per block: threads of a warp touch consecutive
// words whatever bins their samples fall in, so there are no bank conflicts
// and no atomics. Each thread adds its samples in order, and the double
// arithmetic uses the _rn intrinsics (the pack is built with
// --use_fast_math, which would fuse multiply-adds): the values equal the CPU
// backend's bit for bit.
#include <stdint.h>

#include "kernpack_params.h"

namespace kp {
namespace phasefold {

// Frequencies per block (the block's threads).
constexpr int BLOCK = 128;
// Samples staged in shared memory per round.
constexpr int CHUNK = 256;

// floor(frac(dt f) bins), at most bins - 1: params::phasefold::phase_bin.
__device__ __forceinline__ int phase_bin(double dt, double f, int bins) {
    double x = __dmul_rn(dt, f);
    double frac = __dsub_rn(x, floor(x));
    int b = (int)__dmul_rn(frac, (double)bins);
    return min(b, bins - 1);
}

struct Staged {
    double* dt;
    double* wy;
    double* w;
    int* mag;
};

template <int STATISTIC>
__device__ void fold(const kp_phasefold_params& p, const int64_t* __restrict__ offsets,
                     const double* __restrict__ dt, const double* __restrict__ wy,
                     const double* __restrict__ w, const int* __restrict__ mag,
                     const double* __restrict__ scale, const double* __restrict__ freqs,
                     const double* __restrict__ nlogn, void* cells_base, Staged st,
                     unsigned char* __restrict__ out) {
    const int T = blockDim.x, tid = threadIdx.x;
    const int64_t tiles = (p.nf + T - 1) / T;
    const int bins = p.phase_bins, nm = p.mag_bins;
    double* sums = (double*)cells_base;          // PDM: sw[bins][T], swy[bins][T]
    unsigned int* counts = (unsigned int*)cells_base;  // CE: counts[bins * nm][T]
    for (int64_t item = blockIdx.x; item < p.nseries * tiles; item += gridDim.x) {
        const int64_t s = item / tiles, k = (item % tiles) * T + tid;
        const bool active = k < p.nf;
        const double f = active ? freqs[k] : 0.0;
        const int64_t lo = offsets[s], hi = offsets[s + 1];
        if (STATISTIC == 0) {
            for (int c = 0; c < 2 * bins; c++) sums[(int64_t)c * T + tid] = 0.0;
        } else {
            for (int c = 0; c < bins * nm; c++) counts[(int64_t)c * T + tid] = 0u;
        }
        for (int64_t base = lo; base < hi; base += CHUNK) {
            const int len = (int)min((int64_t)CHUNK, hi - base);
            __syncthreads();  // the previous chunk (or item) is done with the staging
            for (int j = tid; j < len; j += T) {
                st.dt[j] = dt[base + j];
                if (STATISTIC == 0) {
                    st.wy[j] = wy[base + j];
                    st.w[j] = w[base + j];
                } else {
                    st.mag[j] = mag[base + j];
                }
            }
            __syncthreads();
            if (!active) continue;
            for (int j = 0; j < len; j++) {
                const int b = phase_bin(st.dt[j], f, bins);
                if (STATISTIC == 0) {
                    double* sw = &sums[(int64_t)b * T + tid];
                    double* swy = &sums[((int64_t)bins + b) * T + tid];
                    *sw = __dadd_rn(*sw, st.w[j]);
                    *swy = __dadd_rn(*swy, st.wy[j]);
                } else {
                    const int m = st.mag[j];
                    for (int q = 0; q <= p.phase_overlap; q++) {
                        const int ph = b >= q ? b - q : b + bins - q;
                        for (int mm = max(0, m - p.mag_overlap); mm <= m; mm++)
                            counts[((int64_t)ph * nm + mm) * T + tid] += 1u;
                    }
                }
            }
        }
        if (!active) continue;
        const double sc = scale[s];
        double value;
        if (sc == 0.0) {
            value = __longlong_as_double(0x7ff8000000000000LL);  // NaN: no spread
        } else if (STATISTIC == 0) {
            // params::phasefold::pdm_theta
            double between = 0.0;
            for (int b = 0; b < bins; b++) {
                const double sw = sums[(int64_t)b * T + tid];
                const double swy = sums[((int64_t)bins + b) * T + tid];
                if (sw > 0.0) between = __dadd_rn(between, __ddiv_rn(__dmul_rn(swy, swy), sw));
            }
            value = __ddiv_rn(__dsub_rn(sc, between), sc);
        } else {
            // params::phasefold::ce_entropy
            double acc = 0.0;
            unsigned long long total = 0;
            for (int ph = 0; ph < bins; ph++) {
                unsigned int np = 0;
                for (int mm = 0; mm < nm; mm++) np += counts[((int64_t)ph * nm + mm) * T + tid];
                acc = __dadd_rn(acc, nlogn[np]);
                for (int mm = 0; mm < nm; mm++)
                    acc = __dsub_rn(acc, nlogn[counts[((int64_t)ph * nm + mm) * T + tid]]);
                total += np;
            }
            value = __ddiv_rn(acc, (double)total);
        }
        if (p.out_f32)
            ((float*)out)[s * p.nf + k] = (float)value;
        else
            ((double*)out)[s * p.nf + k] = value;
    }
}

}  // namespace phasefold
}  // namespace kp

// The statistic (p.statistic: 0 PDM, 1 CE) of series s (samples offsets[s]
// .. offsets[s + 1] of dt, and of wy and w for PDM or mag for CE; scale[s])
// at each frequency of freqs, into out[s * nf + k] (float when p.out_f32,
// else double: the value rounded once). nlogn: k ln k for CE's
// counts (NULL for PDM). Dynamic shared memory: the staging (CHUNK samples)
// and, when p.in_shared, the accumulators of blockDim.x threads; otherwise
// scratch holds them, one slice of p.cells x blockDim.x per block.
extern "C" __global__ void __launch_bounds__(kp::phasefold::BLOCK)
    phasefold(kp_phasefold_params p, const int64_t* __restrict__ offsets,
                                     const double* __restrict__ dt,
                                     const double* __restrict__ wy,
                                     const double* __restrict__ w, const int* __restrict__ mag,
                                     const double* __restrict__ scale,
                                     const double* __restrict__ freqs,
                                     const double* __restrict__ nlogn, unsigned char* scratch,
                                     unsigned char* __restrict__ out) {
    using namespace kp::phasefold;
    extern __shared__ double smem[];
    Staged st;
    st.dt = smem;
    st.wy = smem + CHUNK;
    st.w = smem + 2 * CHUNK;
    st.mag = (int*)(smem + 3 * CHUNK);
    void* cells = p.in_shared
                      ? (void*)(smem + 4 * CHUNK)
                      : (void*)(scratch + (int64_t)blockIdx.x * p.cells * p.cell_bytes *
                                                     blockDim.x);
    if (p.statistic == 0)
        fold<0>(p, offsets, dt, wy, w, mag, scale, freqs, nlogn, cells, st, out);
    else
        fold<1>(p, offsets, dt, wy, w, mag, scale, freqs, nlogn, cells, st, out);
}
