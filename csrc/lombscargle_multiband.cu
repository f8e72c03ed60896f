// Multiband Lomb-Scargle, astropy's flexible method
// (LombScargleMultiband(...).power(method='flexible')): per frequency, the
// regularised least-squares fit of a base model (offset + nterms_base
// harmonics) and, per band, a band model (offset + nterms_band harmonics,
// zero outside the band); power = z^T M^-1 z / chi2_ref.
//
// The host prepares each series in f64 (src/params/lombscargle_multiband.rs):
// samples grouped by band, normalised weights w (sum 1) and w * yhat (yhat
// centred per band when asked), and per series (chi2_ref, ridge on the base
// diagonal, ridge on the band diagonal).
//
// Per frequency and band the kernel accumulates, as the multi-term kernel,
//   C_m = sum w cos(m theta), S_m = sum w sin(m theta)        m = 0..2H
//   YC_k = sum w yhat cos(k theta), YS_k = sum w yhat sin(k theta)   k = 0..H
// (H = max(nterms_base, nterms_band)) from one sincos per sample and angle
// addition; every normal-matrix entry follows by product-to-sum identities.
// Bands never share an unknown, so with the band blocks eliminated first the
// Cholesky factor has no fill between them: each band's block is factored as
// soon as its sums are complete and folded into the base block's Schur
// complement, which is factored last (src/cpu/lombscargle_multiband.rs is the
// same on the CPU). Unknowns with a pivot at rounding level are dropped.
//
// Layout: a block of BLOCK threads serves BLOCK frequencies of one series
// (thread = frequency); the series' samples pass through shared memory a
// tile at a time, band after band, every thread reading the same sample (a
// broadcast). Blocks are (series, group of BLOCK frequencies).
//
// Precision: the same for both types, as on the CPU backend: the phase f t
// in double, its sincos from a table and short polynomials (a few ulp of
// double), the recurrences, sums and solve in double; only the result is
// rounded to float for f32 calls (so one kernel serves both). (Single-precision trigonometry and recurrences, ~1e-7 per
// harmonic, put errors of 1e-2 into the powers of ill-conditioned fits
// without centring and with three base harmonics.)
#include "common.cuh"

namespace kp {
namespace multiband {

constexpr int BLOCK = 128;

template <int H> struct Sums {
    double c[2 * H + 1];  // C_m
    double s[2 * H + 1];  // S_m (s[0] unused)
    double yc[H + 1];     // YC_k
    double ys[H + 1];     // YS_k (ys[0] unused)

    __device__ void zero() {
#pragma unroll
        for (int m = 0; m <= 2 * H; ++m) c[m] = s[m] = 0.0;
#pragma unroll
        for (int k = 0; k <= H; ++k) yc[k] = ys[k] = 0.0;
    }
    __device__ void copy(const Sums& o) {
#pragma unroll
        for (int m = 0; m <= 2 * H; ++m) { c[m] = o.c[m]; s[m] = o.s[m]; }
#pragma unroll
        for (int k = 0; k <= H; ++k) { yc[k] = o.yc[k]; ys[k] = o.ys[k]; }
    }
    __device__ void add(const Sums& o) {
#pragma unroll
        for (int m = 0; m <= 2 * H; ++m) { c[m] += o.c[m]; s[m] += o.s[m]; }
#pragma unroll
        for (int k = 0; k <= H; ++k) { yc[k] += o.yc[k]; ys[k] += o.ys[k]; }
    }
};

// One sample's contributions: sincos once, harmonics by recurrence.
template <int H>
__device__ __forceinline__ void accumulate(Sums<H>& acc, double sn, double cs, double w, double wy) {
    double cm = cs, sm = sn;
    acc.c[0] += w;
    acc.yc[0] += wy;
#pragma unroll
    for (int m = 1; m <= 2 * H; ++m) {
        acc.c[m] = fma(w, cm, acc.c[m]);
        acc.s[m] = fma(w, sm, acc.s[m]);
        if (m <= H) {
            acc.yc[m] = fma(wy, cm, acc.yc[m]);
            acc.ys[m] = fma(wy, sm, acc.ys[m]);
        }
        if (m < 2 * H) {
            const double next_c = cm * cs - sm * sn;
            sm = sm * cs + cm * sn;
            cm = next_c;
        }
    }
}

// Relative pivot below which an unknown is dropped (the CPU backend's).
constexpr double PIVOT_TOLERANCE = 1e-12;

// Normal-matrix entry of columns i and j of a model (0: offset, 2k-1: sin k,
// 2k: cos k) over the samples of `s`.
template <int H> __device__ double entry(const Sums<H>& s, int i, int j) {
    if (i == 0 && j == 0) return s.c[0];
    if (i == 0 || j == 0) {
        const int o = i + j;
        const int k = (o + 1) / 2;
        return (o & 1) ? s.s[k] : s.c[k];
    }
    const int ki = (i + 1) / 2, kj = (j + 1) / 2;
    const bool si = i & 1, sj = j & 1;
    const int diff = ki > kj ? ki - kj : kj - ki, sum = ki + kj;
    if (si && sj) return 0.5 * (s.c[diff] - s.c[sum]);
    if (!si && !sj) return 0.5 * (s.c[diff] + s.c[sum]);
    const int a = si ? ki : kj, b = si ? kj : ki;  // the sine's harmonic, the cosine's
    const double s_diff = a >= b ? s.s[a - b] : -s.s[b - a];
    return 0.5 * (s.s[sum] + s_diff);
}

template <int H> __device__ double rhs(const Sums<H>& s, int i) {
    const int k = (i + 1) / 2;
    return (i & 1) ? s.ys[k] : s.yc[k];
}

__device__ double pivot(double d, double a) {
    return d > PIVOT_TOLERANCE * fabs(a) ? sqrt(d) : 0.0;
}

// The band-by-band elimination (one thread, one frequency). Rolled loops
// and local arrays: once per band, not per sample.
template <int H> struct ArrowSolve {
    static constexpr int C = 2 * H + 1;  // most columns of a model
    double schur[C][C];                  // sum over bands of G G^T (lower triangle)
    double schur_rhs[C];                 // sum over bands of G z_b
    Sums<H> total;
    double power;

    __device__ void zero() {
#pragma unroll 1
        for (int p = 0; p < C; ++p) {
            schur_rhs[p] = 0.0;
#pragma unroll 1
            for (int q = 0; q < C; ++q) schur[p][q] = 0.0;
        }
        total.zero();
        power = 0.0;
    }

    __device__ void add_band(const Sums<H>& s, int base, int band, double ridge) {
        double l[C][C], z[C], g[C][C];
#pragma unroll 1
        for (int i = 0; i < band; ++i) {
#pragma unroll 1
            for (int j = 0; j <= i; ++j) {
                double dot = 0.0;
#pragma unroll 1
                for (int k = 0; k < j; ++k) dot += l[i][k] * l[j][k];
                const double a = entry(s, i, j);
                if (i == j) l[i][i] = pivot(a + ridge - dot, a + ridge);
                else l[i][j] = l[j][j] != 0.0 ? (a - dot) / l[j][j] : 0.0;
            }
            double dot = 0.0;
#pragma unroll 1
            for (int k = 0; k < i; ++k) dot += l[i][k] * z[k];
            z[i] = l[i][i] != 0.0 ? (rhs(s, i) - dot) / l[i][i] : 0.0;
            power += z[i] * z[i];
        }
        // G = C L^-T: row p is base column p against the band's columns.
#pragma unroll 1
        for (int p = 0; p < base; ++p) {
#pragma unroll 1
            for (int i = 0; i < band; ++i) {
                double dot = 0.0;
#pragma unroll 1
                for (int k = 0; k < i; ++k) dot += g[p][k] * l[i][k];
                g[p][i] = l[i][i] != 0.0 ? (entry(s, p, i) - dot) / l[i][i] : 0.0;
            }
        }
#pragma unroll 1
        for (int p = 0; p < base; ++p) {
            double r = 0.0;
#pragma unroll 1
            for (int i = 0; i < band; ++i) r += g[p][i] * z[i];
            schur_rhs[p] += r;
#pragma unroll 1
            for (int q = 0; q <= p; ++q) {
                double v = 0.0;
#pragma unroll 1
                for (int i = 0; i < band; ++i) v += g[p][i] * g[q][i];
                schur[p][q] += v;
            }
        }
        total.add(s);
    }

    // The base block over every band's samples, with its ridge, less the
    // Schur terms, factored; returns the reduction of chi^2.
    __device__ double finish(int base, double ridge) {
        double l[C][C], z[C];
#pragma unroll 1
        for (int i = 0; i < base; ++i) {
#pragma unroll 1
            for (int j = 0; j <= i; ++j) {
                double dot = 0.0;
#pragma unroll 1
                for (int k = 0; k < j; ++k) dot += l[i][k] * l[j][k];
                const double a = entry(total, i, j);
                if (i == j) l[i][i] = pivot(a + ridge - schur[i][i] - dot, a + ridge);
                else l[i][j] = l[j][j] != 0.0 ? (a - schur[i][j] - dot) / l[j][j] : 0.0;
            }
            double dot = 0.0;
#pragma unroll 1
            for (int k = 0; k < i; ++k) dot += l[i][k] * z[k];
            z[i] = l[i][i] != 0.0 ? (rhs(total, i) - schur_rhs[i] - dot) / l[i][i] : 0.0;
            power += z[i] * z[i];
        }
        return power;
    }
};

// Series s holds band segments series_bands[s] .. series_bands[s + 1] - 1;
// segment j holds samples band_starts[j] .. band_starts[j + 1] - 1. stats:
// (chi2_ref, ridge_base, ridge_band) per series. Frequencies as in the
// multi-term kernel: freqs[g nf + k], or with freqs NULL f0[g] + k df[g]
// (g = s with per_series_grid, else 0).
template <int H>
__device__ void periodogram(const int64_t nseries, const int64_t* series_bands,
                            const int64_t* band_starts, const double* t, const double* w,
                            const double* wy, const double* stats, const double* freqs,
                            const double* f0, const double* df, const int per_series_grid,
                            const int64_t nf, const int nterms_base, const int nterms_band,
                            const int out_f32, unsigned char* out) {
    __shared__ PhaseTrig<double>::Table table;
    __shared__ double st[BLOCK], sw[BLOCK], swy[BLOCK];
    PhaseTrig<double>::init(table);

    const int base = 1 + 2 * nterms_base, band = 1 + 2 * nterms_band;
    const int64_t groups = (nf + BLOCK - 1) / BLOCK;
    for (int64_t unit = blockIdx.x; unit < nseries * groups; unit += gridDim.x) {
        const int64_t series = unit / groups;
        const int64_t k = (unit % groups) * BLOCK + threadIdx.x;
        const bool active = k < nf;
        const int64_t g = per_series_grid ? series : 0;
        double f = 0.0;
        if (active) f = freqs ? freqs[g * nf + k] : f0[g] + (double)k * df[g];
        const double ridge_base = stats[3 * series + 1], ridge_band = stats[3 * series + 2];

        ArrowSolve<H> solve;
        solve.zero();
        for (int64_t seg = series_bands[series]; seg < series_bands[series + 1]; ++seg) {
            const int64_t begin = band_starts[seg], end = band_starts[seg + 1];
            Sums<H> sums;
            sums.zero();
            for (int64_t tile = begin; tile < end; tile += BLOCK) {
                __syncthreads();  // the previous tile (and the table) are done with
                const int64_t i = tile + threadIdx.x;
                if (i < end) { st[threadIdx.x] = t[i]; sw[threadIdx.x] = w[i]; swy[threadIdx.x] = wy[i]; }
                __syncthreads();
                const int count = end - tile < BLOCK ? (int)(end - tile) : BLOCK;
                for (int j = 0; j < count; ++j) {
                    double sn, cs;
                    PhaseTrig<double>::sincos_turns(table, f * st[j], &sn, &cs);
                    accumulate<H>(sums, sn, cs, sw[j], swy[j]);
                }
            }
            // A copy for the solve's indexed reads: the accumulators stay in
            // registers.
            Sums<H> frozen;
            frozen.copy(sums);
            solve.add_band(frozen, base, band, ridge_band);
        }
        const double p = solve.finish(base, ridge_base);
        if (active) {
            const double power = p / stats[3 * series];
            if (out_f32) ((float*)out)[series * nf + k] = (float)power;
            else ((double*)out)[series * nf + k] = power;
        }
    }
}

}  // namespace multiband
}  // namespace kp

// Entry points per harmonic count H = max(nterms_base, nterms_band) (1..3),
// one for both types: the inputs are double (the host prepares them so),
// the values are written as float when out_f32, else double (rounded once).
// `series_bands` holds nseries + 1 segment offsets, `band_starts` one more
// than the segments; `freqs` NULL selects the uniform grids.
#define KP_MULTIBAND_ENTRY_POINT(H)                                                                \
    extern "C" __global__ void __launch_bounds__(kp::multiband::BLOCK) lombscargle_multiband_h##H( \
        const int64_t nseries, const int64_t* series_bands, const int64_t* band_starts,           \
        const double* t, const double* w, const double* wy, const double* stats,                  \
        const double* freqs, const double* f0, const double* df, const int per_series_grid,       \
        const int64_t nf, const int nterms_base, const int nterms_band, const int out_f32,        \
        unsigned char* out) {                                                                      \
        kp::multiband::periodogram<H>(nseries, series_bands, band_starts, t, w, wy, stats, freqs, \
                                      f0, df, per_series_grid, nf, nterms_base, nterms_band,      \
                                      out_f32, out);                                               \
    }

KP_MULTIBAND_ENTRY_POINT(1)
KP_MULTIBAND_ENTRY_POINT(2)
KP_MULTIBAND_ENTRY_POINT(3)
