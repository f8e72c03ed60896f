// Multi-term generalised Lomb-Scargle with astropy's chi2 semantics
// (LombScargle(nterms=K).power(method='chi2')): per frequency, the weighted
// least-squares fit of an offset plus K harmonics, power = b^T A^-1 b.
//
// The host prepares each series in f64 (src/params/lombscargle_chi2.rs):
// normalised weights w_i (sum 1) and w_i * yhat_i (yhat: y minus its weighted
// mean when centring), and per series (chi2_ref / W, W) with W = sum dy^-2.
//
// Per frequency f (cycles per unit time), with theta_i = 2 pi f t_i, the
// kernel accumulates
//   C_m = sum w cos(m theta), S_m = sum w sin(m theta)          m = 0..2K
//   YC_k = sum w yhat cos(k theta), YS_k = sum w yhat sin(k theta)  k = 0..K
// from one sincos per sample and the angle-addition recurrence
// z^m = z^(m-1) z (z = e^{i theta}; after 2K <= 16 unit-modulus products the
// error is ~32 eps of T, far below what the solve amplifies). The normal
// matrix follows by product-to-sum identities (sin j sin k = (C_|j-k| -
// C_j+k)/2, ...), and the power is |L^-1 b|^2 with A = L L^T.
//
// Layout: a block of BLOCK threads serves 32 frequencies of one series; lane
// = frequency, warp = a slice of the samples (each warp takes every
// WARPS-th sample of a tile staged in shared memory, so a warp's lanes read
// the same sample: a broadcast). The warps' sums are then added in shared
// memory, and warp 0 solves. Blocks are (series, group of 32 frequencies).
//
// Precision: the phase f t is formed in double and reduced to [-1/2, 1/2]
// turn before the sincos, for both types (an f32 product would lose
// eps_f32 |f t| turns, 1e-3 turns at f t ~ 1e4). f64 accumulates in double;
// f32 accumulates each tile's few samples in float and adds them to double
// totals (a tile of BLOCK samples is BLOCK / WARPS = 32 terms per warp),
// and solves in double.
#include "common.cuh"

namespace kp {
namespace chi2 {

constexpr int BLOCK = 256;
constexpr int WARPS = BLOCK / 32;
constexpr int FREQS_PER_BLOCK = 32;

template <typename T, int K> struct Sums {
    T c[2 * K + 1];   // C_m
    T s[2 * K + 1];   // S_m (s[0] unused)
    T yc[K + 1];      // YC_k
    T ys[K + 1];      // YS_k (ys[0] unused)

    __device__ void zero() {
#pragma unroll
        for (int m = 0; m <= 2 * K; ++m) c[m] = s[m] = T(0);
#pragma unroll
        for (int k = 0; k <= K; ++k) yc[k] = ys[k] = T(0);
    }
    template <typename U> __device__ void add(const Sums<U, K>& o) {
#pragma unroll
        for (int m = 0; m <= 2 * K; ++m) { c[m] += o.c[m]; s[m] += o.s[m]; }
#pragma unroll
        for (int k = 0; k <= K; ++k) { yc[k] += o.yc[k]; ys[k] += o.ys[k]; }
    }
};

// Where a thread accumulates a tile (`tile()`) and its running totals in
// double (`flush()` after each tile): one set of double sums for f64, float
// tile sums added to double totals for f32.
template <typename T, int K> struct Accumulators;

template <int K> struct Accumulators<double, K> {
    Sums<double, K> total;
    __device__ void zero() { total.zero(); }
    __device__ Sums<double, K>& tile() { return total; }
    __device__ void flush() {}
};

template <int K> struct Accumulators<float, K> {
    Sums<float, K> part;
    Sums<double, K> total;
    __device__ void zero() { part.zero(); total.zero(); }
    __device__ Sums<float, K>& tile() { return part; }
    __device__ void flush() { total.add(part); part.zero(); }
};

// One sample's contributions: sincos once, harmonics by recurrence.
template <typename T, int K>
__device__ __forceinline__ void accumulate(Sums<T, K>& acc, T sn, T cs, T w, T wy) {
    T cm = cs, sm = sn;  // cos, sin of m theta, m = 1
    acc.c[0] += w;
    acc.yc[0] += wy;
#pragma unroll
    for (int m = 1; m <= 2 * K; ++m) {
        acc.c[m] = fma(w, cm, acc.c[m]);
        acc.s[m] = fma(w, sm, acc.s[m]);
        if (m <= K) {
            acc.yc[m] = fma(wy, cm, acc.yc[m]);
            acc.ys[m] = fma(wy, sm, acc.ys[m]);
        }
        if (m < 2 * K) {
            const T next_c = cm * cs - sm * sn;
            sm = sm * cs + cm * sn;
            cm = next_c;
        }
    }
}

// Relative pivot below which an unknown is dropped (its column lies in the
// span of the earlier ones to within the sums' rounding): the power is then
// that of the fit without it, finite, as on the CPU backend.
template <typename T> struct Pivot;
template <> struct Pivot<double> { static constexpr double tolerance = 1e-12; };
template <> struct Pivot<float> { static constexpr double tolerance = 1e-5; };

// b^T A^-1 b from the sums. Unknown 0 is the offset (dropped without
// fit_mean: exactly the fit without that column), then sin 1, cos 1, ...
template <typename T, int K>
__device__ double power_from_sums(const Sums<double, K>& s, bool fit_mean) {
    constexpr int M = 2 * K + 1;
    // A entry between unknowns i and j (product-to-sum).
    auto entry = [&](int i, int j) -> double {
        if (i == 0 && j == 0) return s.c[0];
        if (i == 0 || j == 0) {
            const int o = i + j;  // the other unknown
            const int k = (o + 1) / 2;
            return (o & 1) ? s.s[k] : s.c[k];
        }
        const int ki = (i + 1) / 2, kj = (j + 1) / 2;
        const bool si = i & 1, sj = j & 1;
        const int diff = ki > kj ? ki - kj : kj - ki, sum = ki + kj;
        if (si && sj) return 0.5 * (s.c[diff] - s.c[sum]);
        if (!si && !sj) return 0.5 * (s.c[diff] + s.c[sum]);
        // sin a cos b = (sin(a+b) + sin(a-b)) / 2, a the sine's harmonic.
        const int a = si ? ki : kj, b = si ? kj : ki;
        const double s_diff = a >= b ? s.s[a - b] : -s.s[b - a];
        return 0.5 * (s.s[sum] + s_diff);
    };
    auto rhs = [&](int i) -> double {
        if (i == 0) return s.yc[0];
        const int k = (i + 1) / 2;
        return (i & 1) ? s.ys[k] : s.yc[k];
    };
    // Once per frequency: rolled loops, L in local memory, so the solve does
    // not raise the register count of the accumulation loop (occupancy).
    double l[M][M];
    double z[M];
    double power = 0.0;
#pragma unroll 1
    for (int i = 0; i < M; ++i) {
#pragma unroll 1
        for (int j = 0; j <= i; ++j) {
            double dot = 0.0;
#pragma unroll 1
            for (int k = 0; k < j; ++k) dot += l[i][k] * l[j][k];
            const double a = entry(i, j);
            if (i == j) {
                const double d = a - dot;
                const bool keep = (i > 0 || fit_mean) && d > Pivot<T>::tolerance * fabs(a);
                l[i][i] = keep ? sqrt(d) : 0.0;
            } else {
                l[i][j] = l[j][j] != 0.0 ? (a - dot) / l[j][j] : 0.0;
            }
        }
        double dot = 0.0;
#pragma unroll 1
        for (int k = 0; k < i; ++k) dot += l[i][k] * z[k];
        z[i] = l[i][i] != 0.0 ? (rhs(i) - dot) / l[i][i] : 0.0;
        power += z[i] * z[i];
    }
    return power;
}

__device__ __forceinline__ double normalized(double p, int normalization, double chi2_ref,
                                             double weight_sum) {
    switch (normalization) {
        case 0: return p / chi2_ref;                 // standard
        case 1: return p / (chi2_ref - p);           // model
        case 2: return -log(1.0 - p / chi2_ref);     // log
        default: return 0.5 * p * weight_sum;        // psd
    }
}

// stats: (chi2_ref / W, W) per series. The frequencies of series s are
// freqs[g nf .. (g + 1) nf] or, when freqs is NULL, the uniform grid
// f0[g] + k df[g], with g = s (per_series_grid) or 0 (one shared grid).
template <typename T, int K>
__device__ void periodogram(const int64_t nseries, const int64_t* offsets, const T* t, const T* w,
                            const T* wy, const double* stats, const T* freqs, const double* f0,
                            const double* df, const int per_series_grid, const int64_t nf,
                            const int fit_mean, const int normalization, T* out) {
    __shared__ typename PhaseTrig<T>::Table table;
    __shared__ T st[BLOCK], sw[BLOCK], swy[BLOCK];
    __shared__ double reduce[BLOCK];
    PhaseTrig<T>::init(table);

    const int64_t groups = (nf + FREQS_PER_BLOCK - 1) / FREQS_PER_BLOCK;
    const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
    for (int64_t unit = blockIdx.x; unit < nseries * groups; unit += gridDim.x) {
        const int64_t series = unit / groups;
        const int64_t k = (unit % groups) * FREQS_PER_BLOCK + lane;
        const bool active = k < nf;
        const int64_t g = per_series_grid ? series : 0;
        double f = 0.0;
        if (active) f = freqs ? (double)freqs[g * nf + k] : f0[g] + (double)k * df[g];
        const int64_t begin = offsets[series], end = offsets[series + 1];

        Accumulators<T, K> acc;
        acc.zero();
        for (int64_t tile = begin; tile < end; tile += BLOCK) {
            __syncthreads();  // the previous tile (and the table) are done with
            const int64_t i = tile + threadIdx.x;
            if (i < end) { st[threadIdx.x] = t[i]; sw[threadIdx.x] = w[i]; swy[threadIdx.x] = wy[i]; }
            __syncthreads();
            const int count = end - tile < BLOCK ? (int)(end - tile) : BLOCK;
            for (int j = warp; j < count; j += WARPS) {
                T sn, cs;
                PhaseTrig<T>::sincos_turns(table, f * (double)st[j], &sn, &cs);
                accumulate<T, K>(acc.tile(), sn, cs, sw[j], swy[j]);
            }
            acc.flush();
        }

        // The warps' sums, added by warp 0 in a fixed order.
        Sums<double, K>& total = acc.total;
        auto gather = [&](double& v) {
            __syncthreads();
            reduce[threadIdx.x] = v;
            __syncthreads();
            if (warp == 0) {
                double sum = 0.0;
#pragma unroll
                for (int q = 0; q < WARPS; ++q) sum += reduce[q * 32 + lane];
                v = sum;
            }
        };
#pragma unroll
        for (int m = 0; m <= 2 * K; ++m) { gather(total.c[m]); gather(total.s[m]); }
#pragma unroll
        for (int q = 0; q <= K; ++q) { gather(total.yc[q]); gather(total.ys[q]); }

        if (warp == 0 && active) {
            const double p = power_from_sums<T, K>(total, fit_mean != 0);
            const double v = normalized(p, normalization, stats[2 * series], stats[2 * series + 1]);
            out[series * nf + k] = (T)v;
        }
    }
}

}  // namespace chi2
}  // namespace kp

// Entry points per harmonic count K (1..8) and type. `offsets` holds
// nseries + 1 sample offsets; `freqs` NULL selects the uniform grids.
#define KP_CHI2_ENTRY_POINT(T, SUFFIX, K)                                                          \
    extern "C" __global__ void __launch_bounds__(kp::chi2::BLOCK)                                  \
        lombscargle_chi2_k##K##_##SUFFIX(const int64_t nseries, const int64_t* offsets,           \
                                         const T* t, const T* w, const T* wy,                      \
                                         const double* stats, const T* freqs, const double* f0,    \
                                         const double* df, const int per_series_grid,             \
                                         const int64_t nf, const int fit_mean,                    \
                                         const int normalization, T* out) {                        \
        kp::chi2::periodogram<T, K>(nseries, offsets, t, w, wy, stats, freqs, f0, df,             \
                                    per_series_grid, nf, fit_mean, normalization, out);           \
    }

#define KP_CHI2_ENTRY_POINTS(T, SUFFIX)                                                            \
    KP_CHI2_ENTRY_POINT(T, SUFFIX, 1)                                                              \
    KP_CHI2_ENTRY_POINT(T, SUFFIX, 2)                                                              \
    KP_CHI2_ENTRY_POINT(T, SUFFIX, 3)                                                              \
    KP_CHI2_ENTRY_POINT(T, SUFFIX, 4)                                                              \
    KP_CHI2_ENTRY_POINT(T, SUFFIX, 5)                                                              \
    KP_CHI2_ENTRY_POINT(T, SUFFIX, 6)                                                              \
    KP_CHI2_ENTRY_POINT(T, SUFFIX, 7)                                                              \
    KP_CHI2_ENTRY_POINT(T, SUFFIX, 8)

KP_CHI2_ENTRY_POINTS(float, f32)
KP_CHI2_ENTRY_POINTS(double, f64)
