// Lomb-Scargle periodogram, direct method, SciPy >= 1.15 semantics
// (weights, floating_mean, normalize = power | normalize | amplitude, precenter).
//
// Per dtype, all on the caller's stream:
//   lombscargle_prepare_*  one block: mean(t), sum(w), mean(y), Y, YY  -> kp_ls_stats
//   lombscargle_direct_*   one sincos per (sample, frequency) pair: the sums
//                          C, S, YC, YS, CC, CS at the raw phase w t; tau and the
//                          second-pass sums of SciPy follow by rotating those sums,
//                          so the phase w t - tau needs no second sincos.
//   lombscargle_uniform_*  frequencies f0 + k df: per sample, one exact sincos
//                          seeds a thread's run of F frequencies, and the
//                          three-term recurrence z_{k+1} = 2 cos(df t) z_k - z_{k-1}
//                          gives the rest at 2 FMA each (error <= ~F^2/2 eps).
//   lombscargle_peaks_*    the highest value of each periodogram of a batch.
#include "kernpack_params.h"
#include "common.cuh"

namespace kp {
namespace ls {

constexpr int PREP_BLOCK = 256;
constexpr int BLOCK = 128;  // the hand-written Numba kernel's shape; the host reads it back from the launch bounds
constexpr int FPT = KP_LS_FREQS_PER_THREAD;  // each staged sample serves FPT phases
constexpr int TILE = 256;   // samples staged in shared memory per pass

// One sample as the inner loop wants it: shifted time, normalised weight, weight * y.
template <typename T> struct alignas(4 * sizeof(T)) Sample { T t, w, wy, unused; };

template <typename T>
__device__ void prepare(const kp_ls_params p, const T* __restrict__ t, const T* __restrict__ y,
                        const T* __restrict__ w, kp_ls_stats* __restrict__ stats) {
    __shared__ double scratch[PREP_BLOCK];
    double st = 0.0, sy = 0.0, sw = 0.0, swy = 0.0;
    for (int64_t i = threadIdx.x; i < p.nx; i += PREP_BLOCK) {
        const double wi = p.has_weights ? (double)w[i] : 1.0;
        st += t[i];
        sy += y[i];
        sw += wi;
        swy += wi * (double)y[i];
    }
    st = block_sum<double, PREP_BLOCK>(st, scratch);
    sy = block_sum<double, PREP_BLOCK>(sy, scratch);
    sw = block_sum<double, PREP_BLOCK>(sw, scratch);
    swy = block_sum<double, PREP_BLOCK>(swy, scratch);
    const double y_center = p.precenter ? sy / (double)p.nx : 0.0;
    const double y_mean = swy / sw - y_center;  // first estimate of Y, refined below

    // Second pass: moments about y_center and about the weighted mean, so that
    // neither needs the cancelling sum(w y^2) - sum(w y)^2 (y = 1e6 + noise).
    double sdev = 0.0, sdev2 = 0.0, syy = 0.0;
    for (int64_t i = threadIdx.x; i < p.nx; i += PREP_BLOCK) {
        const double wi = p.has_weights ? (double)w[i] : 1.0;
        const double yc = (double)y[i] - y_center;
        const double dev = yc - y_mean;
        sdev += wi * dev;
        sdev2 += wi * dev * dev;
        syy += wi * yc * yc;
    }
    sdev = block_sum<double, PREP_BLOCK>(sdev, scratch);
    sdev2 = block_sum<double, PREP_BLOCK>(sdev2, scratch);
    syy = block_sum<double, PREP_BLOCK>(syy, scratch);
    if (threadIdx.x == 0) {
        const double correction = sdev / sw;  // rounding left in y_mean
        stats->t_shift = st / (double)p.nx;
        stats->inv_wsum = 1.0 / sw;
        stats->y_center = y_center;
        stats->Y = y_mean + correction;
        stats->YY = syy / sw;
        stats->YY_about_Y = sdev2 / sw - correction * correction;
    }
}

// SciPy's formulas, given the raw weighted sums at phase w t (weights summing to 1).
template <typename T>
__device__ __forceinline__ void finish(const kp_ls_params& p, const kp_ls_stats& st, double omega, T C, T S, T YCr,
                       T YSr, T CCr, T CSr, T* __restrict__ out, int64_t f) {
    const bool fm = p.floating_mean != 0;
    const T Y = (T)st.Y;
    T CC = CCr, SS = T(1) - CCr, CS = CSr;
    if (fm) {
        CC -= C * C;
        SS -= S * S;
        CS -= C * S;
    }
    const T tau = T(0.5) * atan2_t(T(2) * CS, CC - SS);
    T stau, ctau;
    sincos_t(tau, &stau, &ctau);

    // Sums at phase w t - tau, by rotation.
    T YC = ctau * YCr + stau * YSr;
    T YS = ctau * YSr - stau * YCr;
    T CCt = ctau * ctau * CCr + T(2) * ctau * stau * CSr + stau * stau * (T(1) - CCr);
    T SSt = T(1) - CCt;
    if (fm) {
        const T Ct = ctau * C + stau * S;
        const T St = ctau * S - stau * C;
        YC -= Y * Ct;
        YS -= Y * St;
        CCt -= Ct * Ct;
        SSt -= St * St;
    }
    // SciPy clamps these denominators to epsneg, which turns 0/0 into rounding
    // noise (e.g. its amplitude at f = 0 with floating_mean). A denominator at
    // rounding level (sums of nx terms: ~sqrt(nx) eps) means the numerator is
    // too (Cauchy-Schwarz), so its term is 0. Same rule as the CPU reference.
    const T tol = T(32) * limits<T>::eps * sqrt(T(p.nx));
    const T a = CCt > tol ? YC / CCt : T(0);
    const T b = SSt > tol ? YS / SSt : T(0);

    if (p.normalize == KP_LS_AMPLITUDE) {
        // (a + ib) e^{i tau}, moved from the shifted time origin back to t = 0.
        double sp, cp;
        sincos((double)tau + omega * st.t_shift, &sp, &cp);
        out[2 * f] = (T)((double)a * cp - (double)b * sp);
        out[2 * f + 1] = (T)((double)a * sp + (double)b * cp);
        return;
    }
    T power = T(2) * (a * YC + b * YS);
    if (p.normalize == KP_LS_POWER) {
        power *= (T)p.nx * T(0.25);
    } else {
        const double yy = fm ? st.YY_about_Y : st.YY;
        power *= (T)(0.5 / yy);
    }
    out[f] = power;
}

// The uniform kernel unrolls over 16 frequencies per thread: an outlined copy
// of `finish` (atan2, sincos) keeps its code at one copy instead of sixteen,
// halving the fatbin at no measurable cost (it runs once per frequency).
template <typename T>
__device__ __noinline__ void finish_outlined(const kp_ls_params& p, const kp_ls_stats& st, double omega, T C,
                                             T S, T YCr, T YSr, T CCr, T CSr, T* __restrict__ out, int64_t f) {
    finish(p, st, omega, C, S, YCr, YSr, CCr, CSr, out, f);
}

template <typename T>
__device__ void direct(const kp_ls_params p, const T* __restrict__ t, const T* __restrict__ y,
                       const T* __restrict__ w, const T* __restrict__ freqs,
                       const kp_ls_stats* __restrict__ stats_ptr, T* __restrict__ out) {
    __shared__ Sample<T> tile[TILE];
    __shared__ typename PhaseTrig<T>::Table trig;
    PhaseTrig<T>::init(trig);  // published by the first __syncthreads of the tile loop
    const kp_ls_stats stats = *stats_ptr;
    const int64_t per_block = (int64_t)BLOCK * FPT;

    for (int64_t base = (int64_t)blockIdx.x * per_block; base < p.nf;
         base += (int64_t)gridDim.x * per_block) {
        T omega[FPT], scaled[FPT];
#pragma unroll
        for (int j = 0; j < FPT; ++j) {
            const int64_t f = base + j * BLOCK + threadIdx.x;
            omega[j] = f < p.nf ? freqs[f] : T(0);
            scaled[j] = PhaseTrig<T>::scale(omega[j]);
        }
        T C[FPT] = {}, S[FPT] = {}, YC[FPT] = {}, YS[FPT] = {}, CC[FPT] = {}, CS[FPT] = {};

        for (int64_t start = 0; start < p.nx; start += TILE) {
            const int n = (int)min((int64_t)TILE, p.nx - start);
            __syncthreads();  // the previous tile is consumed
            for (int i = threadIdx.x; i < n; i += BLOCK) {
                const int64_t k = start + i;
                // Shift and normalise in double: the periodogram is shift-invariant,
                // and small |t| keeps the f32 phase w t accurate.
                const double wk = (p.has_weights ? (double)w[k] : 1.0) * stats.inv_wsum;
                tile[i] = Sample<T>{(T)((double)t[k] - stats.t_shift), (T)wk,
                                    (T)(wk * ((double)y[k] - stats.y_center)), T(0)};
            }
            __syncthreads();

            // Per-tile partial sums, added to the totals once per tile: blocked
            // summation keeps the f32 error growth at ~(TILE + nx/TILE) eps.
            T pC[FPT] = {}, pS[FPT] = {}, pYC[FPT] = {}, pYS[FPT] = {}, pCC[FPT] = {}, pCS[FPT] = {};
#pragma unroll 4
            for (int i = 0; i < n; ++i) {
                const Sample<T> s = tile[i];
#pragma unroll
                for (int j = 0; j < FPT; ++j) {
                    T sn, cs;
                    PhaseTrig<T>::sincos(trig, scaled[j], s.t, &sn, &cs);
                    const T wc = s.w * cs;
                    pC[j] += wc;
                    pS[j] += s.w * sn;
                    pYC[j] += s.wy * cs;
                    pYS[j] += s.wy * sn;
                    pCC[j] += wc * cs;
                    pCS[j] += wc * sn;
                }
            }
#pragma unroll
            for (int j = 0; j < FPT; ++j) {
                C[j] += pC[j];
                S[j] += pS[j];
                YC[j] += pYC[j];
                YS[j] += pYS[j];
                CC[j] += pCC[j];
                CS[j] += pCS[j];
            }
        }
#pragma unroll
        for (int j = 0; j < FPT; ++j) {
            const int64_t f = base + j * BLOCK + threadIdx.x;
            if (f < p.nf) finish(p, stats, (double)omega[j], C[j], S[j], YC[j], YS[j], CC[j], CS[j], out, f);
        }
    }
}

// ---------------------------------------------------------------------------
// Uniform frequency grid.

constexpr int UNIFORM_BLOCK = 128;
constexpr int UNIFORM_TILE = 128;

// One staged sample. Phases are kept in turns and in double, so the seed of
// every thread is exact whatever the absolute time and frequency: the phase of
// frequency kb + m at time t is frac(a + m b) turns.
//
// The recurrence runs on u = sqrt(w) e^{i w t} (it is linear, so the scale
// carries through), which turns the weighted sums into plain products:
// CC = sum u_c^2, CS = sum u_c u_s, YC = sum g u_c with g = sqrt(w) (y - y_center),
// C = sum sqrt(w) u_c: 2 FMA per pair for the recurrence and 4 (6 with a
// floating mean) for the sums.
template <typename T> struct UniformSample {
    double a;               // frac(nu_kb t): phase of the block's first frequency, turns
    double b;               // frac(dnu t): phase step per frequency, turns
    T sqrt_w, g;            // sqrt(normalised weight), sqrt(w) * (y - y_center)
    T cos_step, sin_step;   // e^{i df t}
};

// Sums of one thread: F frequencies x (YC, YS, CC, CS[, C, S]).
template <typename T, bool FM> struct UniformRun {
    static constexpr int F = FM ? KP_LS_UNIFORM_FREQS_PER_THREAD_FM : KP_LS_UNIFORM_FREQS_PER_THREAD;
    static constexpr int SUMS = FM ? 6 : 4;
    // float sums are taken per tile in registers and added once per tile to
    // totals in shared memory (blocked summation, as in the direct kernel,
    // without doubling the registers: occupancy decides this kernel's speed);
    // double sums go straight into the registers.
    static constexpr bool BLOCKED = sizeof(T) == 4;

    T yc[F], ys[F], cc[F], cs[F], c[F], s[F];
    T* totals;  // [SUMS][F][UNIFORM_BLOCK] in shared memory (float only)

    __device__ void zero(T (&v)[F]) {
#pragma unroll
        for (int q = 0; q < F; ++q) v[q] = T(0);
    }
    __device__ T& total(int sum, int q) const { return totals[(sum * F + q) * UNIFORM_BLOCK + threadIdx.x]; }
    __device__ void reset() {
        zero(yc), zero(ys), zero(cc), zero(cs), zero(c), zero(s);
        if constexpr (BLOCKED) {
#pragma unroll
            for (int q = 0; q < F; ++q)
                for (int sum = 0; sum < SUMS; ++sum) total(sum, q) = T(0);
        }
    }
    __device__ void flush() {
        if constexpr (BLOCKED) {
#pragma unroll
            for (int q = 0; q < F; ++q) {
                total(0, q) += yc[q], total(1, q) += ys[q], total(2, q) += cc[q], total(3, q) += cs[q];
                if (FM) total(4, q) += c[q], total(5, q) += s[q];
            }
            zero(yc), zero(ys), zero(cc), zero(cs), zero(c), zero(s);
        }
    }
    // After the last flush, the whole sums.
    __device__ T sum_of(const T (&part)[F], int sum, int q) const {
        return BLOCKED ? total(sum, q) : part[q];
    }
    // uc, us: sqrt(w) cos, sqrt(w) sin of one frequency's phase.
    __device__ __forceinline__ void add(int q, T sqrt_w, T g, T uc, T us) {
        cc[q] += uc * uc;
        cs[q] += uc * us;
        yc[q] += g * uc;
        ys[q] += g * us;
        if (FM) {
            c[q] += sqrt_w * uc;
            s[q] += sqrt_w * us;
        }
    }
    // All F frequencies of this thread for one sample.
    __device__ __forceinline__ void sample(const typename PhaseTrig<T>::Table& trig,
                                           const UniformSample<T>& smp, double m) {
        T s0, c0;
        PhaseTrig<T>::sincos_turns(trig, fma(m, smp.b, smp.a), &s0, &c0);
        s0 *= smp.sqrt_w;
        c0 *= smp.sqrt_w;
        T c_prev = c0, s_prev = s0;
        T c_cur = c0 * smp.cos_step - s0 * smp.sin_step;
        T s_cur = s0 * smp.cos_step + c0 * smp.sin_step;
        const T two_cos = smp.cos_step + smp.cos_step;
        add(0, smp.sqrt_w, smp.g, c_prev, s_prev);
        add(1, smp.sqrt_w, smp.g, c_cur, s_cur);
#pragma unroll
        for (int q = 2; q < F; ++q) {
            const T c_next = two_cos * c_cur - c_prev;
            const T s_next = two_cos * s_cur - s_prev;
            c_prev = c_cur, s_prev = s_cur, c_cur = c_next, s_cur = s_next;
            add(q, smp.sqrt_w, smp.g, c_cur, s_cur);
        }
    }

    // One chunk: frequencies kb .. kb + UNIFORM_BLOCK * F - 1 of one series.
    __device__ void chunk(const kp_ls_params& p, const kp_ls_grid& grid, const T* __restrict__ t,
                          const T* __restrict__ y, const T* __restrict__ w, const kp_ls_stats& stats,
                          T* __restrict__ out, UniformSample<T>* tile,
                          const typename PhaseTrig<T>::Table& trig, int64_t kb) {
        const double turns_per_rad = 0.15915494309189533576888376337251;
        const double m = (double)(threadIdx.x * F);
        const double nu_kb = (grid.f0 + (double)kb * grid.df) * turns_per_rad;
        const double dnu = grid.df * turns_per_rad;
        reset();
        for (int64_t start = 0; start < p.nx; start += UNIFORM_TILE) {
            const int n = (int)min((int64_t)UNIFORM_TILE, p.nx - start);
            __syncthreads();  // the previous tile is consumed
            for (int i = threadIdx.x; i < n; i += UNIFORM_BLOCK) {
                const int64_t k = start + i;
                const double tk = (double)t[k] - stats.t_shift;
                const double wk = (p.has_weights ? (double)w[k] : 1.0) * stats.inv_wsum;
                const double b = frac_turns(dnu * tk);
                double sb, cb;
                sincospi(2.0 * b, &sb, &cb);
                const double sqrt_w = sqrt(wk);
                tile[i] = UniformSample<T>{frac_turns(nu_kb * tk), b, (T)sqrt_w,
                                           (T)(sqrt_w * ((double)y[k] - stats.y_center)), (T)cb, (T)sb};
            }
            __syncthreads();
#pragma unroll 2
            for (int i = 0; i < n; ++i) sample(trig, tile[i], m);
            flush();
        }
#pragma unroll
        for (int q = 0; q < F; ++q) {
            const int64_t f = kb + (int64_t)threadIdx.x * F + q;
            if (f < p.nf) {
                const T zero_sum = T(0);
                finish_outlined(p, stats, grid.f0 + (double)f * grid.df,
                       FM ? sum_of(c, 4, q) : zero_sum, FM ? sum_of(s, 5, q) : zero_sum,
                       sum_of(yc, 0, q), sum_of(ys, 1, q), sum_of(cc, 2, q), sum_of(cs, 3, q), out, f);
            }
        }
    }

    static constexpr int64_t PER_CHUNK = (int64_t)UNIFORM_BLOCK * F;
};

// Resident blocks per SM the uniform kernel is built for: 4 x 128 threads of
// float (<= 128 registers), 2 of double (its sums need the registers).
template <typename T> struct UniformOccupancy { static constexpr int value = sizeof(T) == 4 ? 4 : 2; };

// Shared memory of the uniform kernels, and the dispatch on floating_mean.
template <typename T> struct UniformBlock {
    static constexpr int NO_FM = UniformRun<T, false>::SUMS * UniformRun<T, false>::F;
    static constexpr int WITH_FM = UniformRun<T, true>::SUMS * UniformRun<T, true>::F;
    static constexpr int TOTALS = sizeof(T) == 4 ? (NO_FM > WITH_FM ? NO_FM : WITH_FM) * UNIFORM_BLOCK : 1;
    UniformSample<T> tile[UNIFORM_TILE];
    typename PhaseTrig<T>::Table trig;
    T totals[TOTALS];

    // Calls work(run) with the UniformRun matching p.floating_mean.
    template <typename Work> __device__ void dispatch(const kp_ls_params& p, Work work) {
        if (p.floating_mean) {
            UniformRun<T, true> run;
            run.totals = totals;
            work(run);
        } else {
            UniformRun<T, false> run;
            run.totals = totals;
            work(run);
        }
    }
};

// Samples offsets[s] .. offsets[s+1]-1 of a batch whose t, y, w hold nx
// readable values: [begin, begin + length). Offsets the host could not check
// (a caller's device array) that leave [0, nx] or decrease give an empty
// series, whose periodogram is NaN, rather than reads outside the buffers (a
// fault would poison the context).
struct Span {
    int64_t begin, length;
};
__device__ inline Span series_span(const int64_t* __restrict__ offsets, int64_t s, int64_t nx) {
    const int64_t a = offsets[s], b = offsets[s + 1];
    return (0 <= a && a <= b && b <= nx) ? Span{a, b - a} : Span{0, 0};
}

// One series (offsets == nullptr: nx = p.nx, grid = `grid`) or many in one
// launch: series s is samples offsets[s] .. offsets[s+1]-1 of the concatenated
// t, y, w (p.nx of them readable; see series_span), with the grid (f0[s],
// df[s]) (or f0[0], df[0] for all when per_series_grid is 0) and its
// periodogram at out + s * nf * width. The work units are (series, chunk of
// frequencies), taken in grid-stride order: units of similar cost, many per
// block, so short and long series mix evenly. A series gives the same bits
// alone or in a batch.
struct Series {
    int64_t nseries;
    const int64_t* offsets;
    const double* f0;
    const double* df;
    int per_series_grid;
    kp_ls_grid grid;  // the grid of a single series

    __device__ Span span(int64_t s, int64_t nx) const { return offsets ? series_span(offsets, s, nx) : Span{0, nx}; }
    __device__ kp_ls_grid grid_of(int64_t s) const {
        if (!f0) return grid;
        const int64_t g = per_series_grid ? s : 0;
        return kp_ls_grid{f0[g], df[g]};
    }
};

template <typename T>
__device__ void uniform(const kp_ls_params p, const Series series, const T* __restrict__ t,
                        const T* __restrict__ y, const T* __restrict__ w,
                        const kp_ls_stats* __restrict__ stats, T* __restrict__ out) {
    __shared__ UniformBlock<T> shared;
    PhaseTrig<T>::init(shared.trig);  // published by the first __syncthreads of the tile loop
    const int64_t width = p.normalize == KP_LS_AMPLITUDE ? 2 : 1;
    shared.dispatch(p, [&](auto& run) {
        const int64_t per_chunk = run.PER_CHUNK;
        const int64_t chunks = (p.nf + per_chunk - 1) / per_chunk;
        for (int64_t unit = blockIdx.x; unit < series.nseries * chunks; unit += gridDim.x) {
            const int64_t s = unit / chunks, c = unit % chunks;
            const Span span = series.span(s, p.nx);
            const int64_t begin = span.begin;
            kp_ls_params ps = p;
            ps.nx = span.length;
            run.chunk(ps, series.grid_of(s), t + begin, y + begin, w ? w + begin : w, stats[s],
                      out + s * p.nf * width, shared.tile, shared.trig, c * per_chunk);
        }
    });
}

template <typename T>
__device__ void prepare_series(const kp_ls_params p, const int64_t nseries, const int64_t* __restrict__ offsets,
                               const T* __restrict__ t, const T* __restrict__ y, const T* __restrict__ w,
                               kp_ls_stats* __restrict__ stats) {
    for (int64_t s = blockIdx.x; s < nseries; s += gridDim.x) {
        const Span span = offsets ? series_span(offsets, s, p.nx) : Span{0, p.nx};
        const int64_t begin = span.begin;
        kp_ls_params ps = p;
        ps.nx = span.length;
        prepare<T>(ps, t + begin, y + begin, w ? w + begin : w, stats + s);
        __syncthreads();  // prepare's scratch is reused by the next series
    }
}

// The highest peak of each periodogram of a batch, so that a survey's
// periodograms (40 KB each at 10^4 frequencies) never leave the GPU: one block
// per series (grid-strided), each thread the best of a strided slice, then a
// tree over the block. The winner is the highest non-NaN value (the modulus
// for 'amplitude', in double) and, among equal values, the lowest index, so
// the result does not depend on the block or grid size; -1 and NaN when every
// value is NaN.
constexpr int PEAK_BLOCK = 256;

struct Peak {
    double value;
    int64_t index;  // -1: none yet
};

__device__ inline Peak higher(const Peak a, const Peak b) {
    if (b.index < 0) return a;
    if (a.index < 0) return b;
    return (b.value > a.value || (b.value == a.value && b.index < a.index)) ? b : a;
}

template <typename T>
__device__ void batch_peaks(const int64_t nseries, const int64_t nf, const int amplitude,
                            const T* __restrict__ pgrams, int64_t* __restrict__ index,
                            double* __restrict__ value) {
    __shared__ double values[PEAK_BLOCK];
    __shared__ int64_t indices[PEAK_BLOCK];
    const int64_t width = amplitude ? 2 : 1;
    for (int64_t s = blockIdx.x; s < nseries; s += gridDim.x) {
        const T* pg = pgrams + s * nf * width;
        Peak mine{0.0, -1};
        // Indices rise along a thread's slice, so a strict > keeps its first maximum.
        for (int64_t k = threadIdx.x; k < nf; k += PEAK_BLOCK) {
            const double v = amplitude ? hypot((double)pg[2 * k], (double)pg[2 * k + 1]) : (double)pg[k];
            if (!isnan(v) && (mine.index < 0 || v > mine.value)) mine = Peak{v, k};
        }
        values[threadIdx.x] = mine.value;
        indices[threadIdx.x] = mine.index;
        __syncthreads();
        for (int half = PEAK_BLOCK / 2; half > 0; half /= 2) {
            if (threadIdx.x < half) {
                const Peak h = higher(Peak{values[threadIdx.x], indices[threadIdx.x]},
                                      Peak{values[threadIdx.x + half], indices[threadIdx.x + half]});
                values[threadIdx.x] = h.value;
                indices[threadIdx.x] = h.index;
            }
            __syncthreads();
        }
        if (threadIdx.x == 0) {
            index[s] = indices[0];
            value[s] = indices[0] < 0 ? __longlong_as_double(0x7ff8000000000000LL) : values[0];
        }
        __syncthreads();  // the shared arrays serve the next series
    }
}

}  // namespace ls
}  // namespace kp

// Explicit per-dtype entry points from the one template. `offsets` may be
// NULL (one series of p.nx samples); with offsets, p.nx is the count of
// samples readable at t, y and w; see kp::ls::Series.
#define KP_LOMBSCARGLE_ENTRY_POINTS(T, SUFFIX)                                                    \
    extern "C" __global__ void __launch_bounds__(kp::ls::PREP_BLOCK)                              \
        lombscargle_prepare_##SUFFIX(const kp_ls_params p, const int64_t nseries,                 \
                                     const int64_t* offsets, const T* t, const T* y, const T* w,  \
                                     kp_ls_stats* stats) {                                        \
        kp::ls::prepare_series<T>(p, nseries, offsets, t, y, w, stats);                           \
    }                                                                                             \
    extern "C" __global__ void __launch_bounds__(kp::ls::BLOCK)                                   \
        lombscargle_direct_##SUFFIX(const kp_ls_params p, const T* t, const T* y, const T* w,     \
                                    const T* freqs, const kp_ls_stats* stats, T* out) {           \
        kp::ls::direct<T>(p, t, y, w, freqs, stats, out);                                         \
    }                                                                                             \
    extern "C" __global__ void __launch_bounds__(kp::ls::UNIFORM_BLOCK,                           \
                                                 kp::ls::UniformOccupancy<T>::value)              \
        lombscargle_uniform_##SUFFIX(const kp_ls_params p, const kp_ls_grid grid,                 \
                                     const int64_t nseries, const int64_t* offsets,               \
                                     const double* f0, const double* df,                          \
                                     const int per_series_grid, const T* t, const T* y,           \
                                     const T* w, const kp_ls_stats* stats, T* out) {              \
        const kp::ls::Series series{nseries, offsets, f0, df, per_series_grid, grid};             \
        kp::ls::uniform<T>(p, series, t, y, w, stats, out);                                       \
    }                                                                                             \
    extern "C" __global__ void __launch_bounds__(kp::ls::PEAK_BLOCK)                              \
        lombscargle_peaks_##SUFFIX(const int64_t nseries, const int64_t nf, const int amplitude,  \
                                   const T* pgrams, int64_t* index, double* value) {              \
        kp::ls::batch_peaks<T>(nseries, nf, amplitude, pgrams, index, value);                     \
    }

KP_LOMBSCARGLE_ENTRY_POINTS(float, f32)
KP_LOMBSCARGLE_ENTRY_POINTS(double, f64)
