/* End-to-end test of the kernpack C ABI for the Box Least Squares transit
 * search (astropy's BoxLeastSquares), written as a C99 user would: a light
 * curve with a planted transit, searched with kp_bls_f64 and kp_bls_f32 on
 * a CPU context and on the AUTO context (the GPU when there is one), must
 * peak at the planted period with the planted duration, depth and
 * mid-transit time; a batch of two curves (the second with another period)
 * must find both, its first series equal to the single call bit for bit;
 * the two contexts must agree bit for bit; the batch's best periods
 * (kp_bls_batch_peaks_f64, K of them a curve and with NULL peak options)
 * must be local maxima of the batch's power, best first, apart in period,
 * the first the highest power of its row, each with the batch's results at
 * its period; and bad calls must fail with the right status and a message
 * naming the argument, the outputs untouched.
 *
 * Exit status 0 when every check passes. With KERNPACK_REQUIRE_GPU=1 a
 * missing GPU fails. Built and run by tests/ffi_programs.rs. */
#include "checks.h"

#include <math.h>

#define N 1500          /* samples of the first curve */
#define N2 1200         /* samples of the second */
#define NP 300          /* trial periods: 1.8 + 0.004 k */
#define ND 3            /* trial durations */
#define PEAK 137        /* the planted period is PERIODS[PEAK] = 2.348 */
#define PEAK2 275       /* the second curve's: 2.9 */
#define DURATION 0.12   /* planted, and DURATIONS[1] */
#define MID 0.7         /* a mid-transit time of the first curve */
#define DEPTH 0.01
#define POISON (-4242.0)
#define POISON_INDEX (-4242)
#define K 4             /* best periods a curve */
#define SEPARATION 0.05 /* between them, in period: 12.5 trial periods */

/* ---- data ---------------------------------------------------------------- */

static uint64_t rng_state = 0x2545f4914f6cdd1dULL;
static double uniform(void)
{
    return lcg_uniform(&rng_state);
}

/* Both curves one after the other (offsets 0, N, N + N2), times over 40
 * units from 58000 (MJD-like), flux 1 with noise of +-0.002 and a box of
 * depth DEPTH and width DURATION once per period; errors 0.001 to 0.002. */
static double T[N + N2], Y[N + N2], DY[N + N2];
static float TF[N + N2], YF[N + N2], DYF[N + N2];
static double PERIODS[NP], DURATIONS[ND] = {0.06, DURATION, 0.18};
static float PERIODSF[NP], DURATIONSF[ND];
static const int64_t OFFSETS[3] = {0, N, N + N2};

static double wrap(double x, double period)
{
    return x - period * floor(x / period);
}

static void make_data(void)
{
    size_t i;
    for (i = 0; i < NP; i++)
        PERIODS[i] = 1.8 + 0.004 * (double)i;
    for (i = 0; i < N + N2; i++) {
        int first = i < N;
        double period = first ? PERIODS[PEAK] : PERIODS[PEAK2];
        double mid = first ? MID : 1.9;
        double t = 58000.0 + 40.0 * uniform();
        /* distance in phase from the nearest mid-transit */
        double x = wrap(t - 58000.0 - mid + 0.5 * period, period) - 0.5 * period;
        T[i] = t;
        Y[i] = 1.0 + 0.004 * (uniform() - 0.5) - (fabs(x) < 0.5 * DURATION ? DEPTH : 0.0);
        DY[i] = 0.001 + 0.001 * uniform();
        TF[i] = (float)T[i];
        YF[i] = (float)Y[i];
        DYF[i] = (float)DY[i];
    }
    for (i = 0; i < NP; i++)
        PERIODSF[i] = (float)PERIODS[i];
    for (i = 0; i < ND; i++)
        DURATIONSF[i] = (float)DURATIONS[i];
}

/* ---- the seven outputs ----------------------------------------------------- */

/* One search's results, in double whatever the dtype (converted after the
 * call), each field one value longer than needed (that value stays POISON). */
#define MAXP (2 * NP)
typedef struct {
    double f[7][MAXP + 1];
} results;

typedef struct {
    float f[7][MAXP + 1];
} results_f;

static const char *const FIELDS[7] = {"power", "depth", "depth_err", "duration",
                                      "transit_time", "depth_snr", "log_likelihood"};

static void poison(results *r)
{
    size_t k, i;
    for (k = 0; k < 7; k++)
        for (i = 0; i <= MAXP; i++)
            r->f[k][i] = POISON;
}

static void poison_f(results_f *r)
{
    size_t k, i;
    for (k = 0; k < 7; k++)
        for (i = 0; i <= MAXP; i++)
            r->f[k][i] = (float)POISON;
}

/* Every value from `from` on is still POISON. */
static int untouched_from(const results *r, size_t from)
{
    size_t k, i;
    for (k = 0; k < 7; k++)
        for (i = from; i <= MAXP; i++)
            if (r->f[k][i] != POISON)
                return 0;
    return 1;
}

static int untouched_from_f(const results_f *r, size_t from)
{
    size_t k, i;
    for (k = 0; k < 7; k++)
        for (i = from; i <= MAXP; i++)
            if (r->f[k][i] != (float)POISON)
                return 0;
    return 1;
}

static kp_status bls64(const kp_context *ctx, const kp_bls_options *o, const double *t,
                       const double *y, const double *dy, size_t n, const double *periods,
                       size_t np, results *r)
{
    return kp_bls_f64(ctx, o, t, y, dy, n, periods, np, DURATIONS, ND, r->f[0], r->f[1], r->f[2],
                      r->f[3], r->f[4], r->f[5], r->f[6]);
}

static kp_status bls32(const kp_context *ctx, const kp_bls_options *o, results_f *r)
{
    return kp_bls_f32(ctx, o, TF, YF, DYF, N, PERIODSF, NP, DURATIONSF, ND, r->f[0], r->f[1],
                      r->f[2], r->f[3], r->f[4], r->f[5], r->f[6]);
}

static kp_status batch64(const kp_context *ctx, const kp_bls_options *o, const int64_t *offsets,
                         size_t nseries, results *r)
{
    return kp_bls_batch_f64(ctx, o, T, Y, DY, offsets, nseries, PERIODS, NP, DURATIONS, ND,
                            r->f[0], r->f[1], r->f[2], r->f[3], r->f[4], r->f[5], r->f[6]);
}

/* The index of the highest power among np values from `from`. */
static size_t best(const double *power, size_t from, size_t np)
{
    size_t i, b = from;
    for (i = from; i < from + np; i++)
        if (power[i] > power[b])
            b = i;
    return b - from;
}

/* The planted transit of period PERIODS[peak] (mid-transit `mid`) is what
 * series `s` of `r` (fields as doubles) has at its highest power. */
static void check_planted(const results *r, size_t s, size_t peak, double mid, const char *what)
{
    size_t o = s * NP, b = best(r->f[0], o, NP);
    double period = PERIODS[b], off;
    CHECK(b == peak || b + 1 == peak || b == peak + 1,
          "%s: highest power at period %g (index %u), planted %g", what, period, (unsigned)b,
          PERIODS[peak]);
    CHECK(fabs(r->f[3][o + b] - DURATION) < 1e-4, "%s: duration %g, planted %g", what,
          r->f[3][o + b], DURATION);
    CHECK(fabs(r->f[1][o + b] - DEPTH) < 0.1 * DEPTH, "%s: depth %g, planted %g", what,
          r->f[1][o + b], DEPTH);
    CHECK(r->f[2][o + b] > 0.0 && r->f[2][o + b] < 0.1 * DEPTH, "%s: depth_err %g", what,
          r->f[2][o + b]);
    CHECK(fabs(r->f[5][o + b] - r->f[1][o + b] / r->f[2][o + b]) < 1e-3 * r->f[5][o + b],
          "%s: depth_snr %g is not depth / depth_err", what, r->f[5][o + b]);
    off = wrap(r->f[4][o + b] - 58000.0 - mid + 0.5 * period, period) - 0.5 * period;
    CHECK(fabs(off) < 0.02, "%s: transit_time %.6f is %g from a planted mid-transit", what,
          r->f[4][o + b], off);
}

/* ---- the best periods ---------------------------------------------------------- */

/* K periods of two curves and one more, which stays POISON_INDEX. */
static int64_t INDEX[2 * K + 1];

static void poison_index(void)
{
    size_t i;
    for (i = 0; i <= 2 * K; i++)
        INDEX[i] = POISON_INDEX;
}

static int index_untouched(void)
{
    size_t i;
    for (i = 0; i <= 2 * K; i++)
        if (INDEX[i] != POISON_INDEX)
            return 0;
    return 1;
}

static kp_status peaks64(const kp_context *ctx, const kp_peak_options *peaks, int64_t *index,
                         results *r)
{
    return kp_bls_batch_peaks_f64(ctx, NULL, T, Y, DY, OFFSETS, 2, PERIODS, NP, DURATIONS, ND,
                                  peaks, index, r->f[0], r->f[1], r->f[2], r->f[3], r->f[4],
                                  r->f[5], r->f[6]);
}

/* The `k` best periods of each of the two curves (`index` and the fields
 * of `p`, `k` a curve) against `all`, the batch's results at every period:
 * each a local maximum of its row's power, best first, at least
 * `separation` apart in period, the first the row's first highest power;
 * every field the batch's at that period, bit for bit. */
static void check_peaks_of(const results *all, const int64_t *index, const results *p, size_t k,
                           double separation, const char *what)
{
    size_t s, j, m, f;
    for (s = 0; s < 2; s++) {
        const double *power = all->f[0] + s * NP;
        CHECK(index[s * k] == (int64_t)best(all->f[0], s * NP, NP),
              "%s, series %u: best period at %lld, highest power at %u", what, (unsigned)s,
              (long long)index[s * k], (unsigned)best(all->f[0], s * NP, NP));
        for (j = 0; j < k; j++) {
            int64_t i = index[s * k + j];
            /* A transit over 300 periods: many maxima, no padding. */
            CHECK(i >= 0 && i < NP, "%s, series %u: period %u at %lld", what, (unsigned)s,
                  (unsigned)j, (long long)i);
            for (f = 0; f < 7; f++)
                CHECK(memcmp(&p->f[f][s * k + j], &all->f[f][s * NP + (size_t)i],
                             sizeof(double)) == 0,
                      "%s, series %u: period %u has %s %g, the batch %g", what, (unsigned)s,
                      (unsigned)j, FIELDS[f], p->f[f][s * k + j], all->f[f][s * NP + (size_t)i]);
            CHECK((i == 0 || power[i - 1] < power[i]) && (i + 1 == NP || power[i + 1] <= power[i]),
                  "%s, series %u: period %u (index %lld) is no maximum", what, (unsigned)s,
                  (unsigned)j, (long long)i);
            CHECK(j == 0 || p->f[0][s * k + j] <= p->f[0][s * k + j - 1],
                  "%s, series %u: period %u beats the one before", what, (unsigned)s, (unsigned)j);
            for (m = 0; m < j; m++)
                CHECK(fabs(PERIODS[i] - PERIODS[index[s * k + m]]) >= separation - 1e-12,
                      "%s, series %u: periods %u and %u closer than %g", what, (unsigned)s,
                      (unsigned)m, (unsigned)j, separation);
        }
    }
}

static void check_peaks(const kp_context *ctx, const char *name)
{
    results *all = malloc(sizeof *all), *p = malloc(sizeof *p);
    kp_peak_options peaks = kp_peak_options_default();
    CHECK(all != NULL && p != NULL, "out of memory");
    peaks.k = K;
    peaks.separation = SEPARATION;

    poison(all);
    EXPECT_OK(batch64(ctx, NULL, OFFSETS, 2, all));
    poison(p);
    poison_index();
    EXPECT_OK(peaks64(ctx, &peaks, INDEX, p));
    CHECK(INDEX[2 * K] == POISON_INDEX && untouched_from(p, 2 * K),
          "%s: kp_bls_batch_peaks_f64 wrote past nseries x k", name);
    check_peaks_of(all, INDEX, p, K, SEPARATION, "kp_bls_batch_peaks_f64");
    /* The planted transits are the best periods. */
    CHECK(INDEX[0] == PEAK || INDEX[0] + 1 == PEAK || INDEX[0] == PEAK + 1,
          "%s: best period of the first curve at %lld, planted %d", name, (long long)INDEX[0], PEAK);
    CHECK(INDEX[K] == PEAK2 || INDEX[K] + 1 == PEAK2 || INDEX[K] == PEAK2 + 1,
          "%s: best period of the second curve at %lld, planted %d", name, (long long)INDEX[K],
          PEAK2);

    /* NULL peak options: one a curve, the best of the K. */
    poison(p);
    poison_index();
    EXPECT_OK(peaks64(ctx, NULL, INDEX, p));
    CHECK(INDEX[2] == POISON_INDEX && untouched_from(p, 2),
          "%s: NULL peak options wrote more than one period a curve", name);
    check_peaks_of(all, INDEX, p, 1, 0.0, "kp_bls_batch_peaks_f64, NULL peaks");
    free(all);
    free(p);
    printf("ok   best periods (%s)\n", name);
}

/* ---- check groups ------------------------------------------------------------ */

static void check_single(const kp_context *ctx, const char *name, results *r64, results_f *r32)
{
    results *from32 = malloc(sizeof *from32);
    size_t k, i;
    CHECK(from32 != NULL, "out of memory");

    poison(r64);
    EXPECT_OK(bls64(ctx, NULL, T, Y, DY, N, PERIODS, NP, r64));
    CHECK(untouched_from(r64, NP), "%s: kp_bls_f64 wrote past nperiods", name);
    check_planted(r64, 0, PEAK, MID, name);

    poison_f(r32);
    EXPECT_OK(bls32(ctx, NULL, r32));
    CHECK(untouched_from_f(r32, NP), "%s: kp_bls_f32 wrote past nperiods", name);
    poison(from32);
    for (k = 0; k < 7; k++)
        for (i = 0; i < NP; i++)
            from32->f[k][i] = r32->f[k][i];
    check_planted(from32, 0, PEAK, MID, name);

    /* The SNR objective finds it too, and power is then depth_snr. */
    {
        kp_bls_options o = kp_bls_options_default();
        o.objective = KP_BLS_SNR;
        poison(from32);
        EXPECT_OK(bls64(ctx, &o, T, Y, DY, N, PERIODS, NP, from32));
        check_planted(from32, 0, PEAK, MID, name);
        for (i = 0; i < NP; i++)
            CHECK(from32->f[0][i] == from32->f[5][i], "%s: snr power %g, depth_snr %g", name,
                  from32->f[0][i], from32->f[5][i]);
    }
    free(from32);
    printf("ok   single series (%s)\n", name);
}

static void check_batch(const kp_context *ctx, const char *name, const results *single)
{
    results *r = malloc(sizeof *r);
    size_t k;
    CHECK(r != NULL, "out of memory");
    poison(r);
    EXPECT_OK(batch64(ctx, NULL, OFFSETS, 2, r));
    CHECK(untouched_from(r, 2 * NP), "%s: kp_bls_batch_f64 wrote past nseries x nperiods", name);
    check_planted(r, 0, PEAK, MID, name);
    check_planted(r, 1, PEAK2, 1.9, name);
    for (k = 0; k < 7; k++)
        CHECK(memcmp(r->f[k], single->f[k], NP * sizeof(double)) == 0,
              "%s: series 0 of the batch differs from the single call in %s", name, FIELDS[k]);
    free(r);
    printf("ok   batch (%s)\n", name);
}

static void check_errors(const kp_context *ctx, const char *name)
{
    results *r = malloc(sizeof *r);
    kp_bls_options o = kp_bls_options_default();
    const double long_periods[1] = {0.15};
    const int64_t decreasing[3] = {0, N, N - 1};
    double bad_dy[N];
    CHECK(r != NULL, "out of memory");
    memcpy(bad_dy, DY, sizeof bad_dy);
    bad_dy[17] = 0.0;
    poison(r);

    EXPECT_ERR(bls64(ctx, NULL, NULL, Y, DY, N, PERIODS, NP, r), KP_ERROR_NULL_POINTER, "t");
    EXPECT_ERR(kp_bls_f64(ctx, NULL, T, Y, DY, N, PERIODS, NP, DURATIONS, ND, r->f[0], r->f[1],
                          r->f[2], r->f[3], NULL, r->f[5], r->f[6]),
               KP_ERROR_NULL_POINTER, "transit_time");
    EXPECT_ERR(bls64(NULL, NULL, T, Y, DY, N, PERIODS, NP, r), KP_ERROR_NULL_POINTER, "ctx");
    EXPECT_ERR(bls64(ctx, NULL, T, Y, bad_dy, N, PERIODS, NP, r), KP_ERROR_INVALID_ARGUMENT, "dy");
    /* Durations up to 0.18, a period of 0.15. */
    EXPECT_ERR(bls64(ctx, NULL, T, Y, DY, N, long_periods, 1, r), KP_ERROR_INVALID_ARGUMENT,
               "duration");
    EXPECT_ERR(bls64(ctx, NULL, T, Y, DY, 0, PERIODS, NP, r), KP_ERROR_INVALID_ARGUMENT, "sample");
    o.oversample = 0;
    EXPECT_ERR(bls64(ctx, &o, T, Y, DY, N, PERIODS, NP, r), KP_ERROR_INVALID_ARGUMENT,
               "oversample");
    o = kp_bls_options_default();
    o.objective = 7;
    EXPECT_ERR(bls64(ctx, &o, T, Y, DY, N, PERIODS, NP, r), KP_ERROR_INVALID_ARGUMENT,
               "objective");
    EXPECT_ERR(batch64(ctx, NULL, decreasing, 2, r), KP_ERROR_INVALID_ARGUMENT, "offsets");
    EXPECT_ERR(batch64(ctx, NULL, NULL, 2, r), KP_ERROR_NULL_POINTER, "offsets");
    /* An output over an input. */
    EXPECT_ERR(kp_bls_f64(ctx, NULL, T, Y, DY, N, PERIODS, NP, DURATIONS, ND, r->f[0], r->f[1],
                          r->f[2], r->f[3], r->f[4], r->f[5], Y),
               KP_ERROR_INVALID_ARGUMENT, "log_likelihood");
    /* The best periods: their options and outputs. */
    poison_index();
    {
        kp_peak_options peaks = kp_peak_options_default();
        peaks.k = 0;
        EXPECT_ERR(peaks64(ctx, &peaks, INDEX, r), KP_ERROR_INVALID_ARGUMENT, "k");
        peaks.k = KP_MAX_PEAKS + 1;
        EXPECT_ERR(peaks64(ctx, &peaks, INDEX, r), KP_ERROR_INVALID_ARGUMENT, "k");
        peaks.k = 2;
        peaks.separation = -1.0;
        EXPECT_ERR(peaks64(ctx, &peaks, INDEX, r), KP_ERROR_INVALID_ARGUMENT, "separation");
    }
    EXPECT_ERR(peaks64(ctx, NULL, NULL, r), KP_ERROR_NULL_POINTER, "index");
    EXPECT_ERR(peaks64(ctx, NULL, (int64_t *)r->f[0], r), KP_ERROR_INVALID_ARGUMENT, "index");
    EXPECT_ERR(kp_bls_batch_peaks_f64(ctx, NULL, T, Y, DY, decreasing, 2, PERIODS, NP, DURATIONS,
                                      ND, NULL, INDEX, r->f[0], r->f[1], r->f[2], r->f[3], r->f[4],
                                      r->f[5], r->f[6]),
               KP_ERROR_INVALID_ARGUMENT, "offsets");
    EXPECT_ERR(kp_bls_batch_peaks_f64(ctx, NULL, T, Y, DY, OFFSETS, 2, PERIODS, NP, DURATIONS, ND,
                                      NULL, INDEX, r->f[0], r->f[1], r->f[2], NULL, r->f[4],
                                      r->f[5], r->f[6]),
               KP_ERROR_NULL_POINTER, "duration");
    CHECK(untouched_from(r, 0), "%s: a failing call wrote an output", name);
    CHECK(index_untouched(), "%s: a failing call wrote the best periods", name);
    free(r);
    printf("ok   errors (%s)\n", name);
}

int main(void)
{
    kp_context *cpu = NULL, *autoctx = NULL;
    int is_gpu;
    static results single_cpu, single_auto;
    static results_f single_cpu_f, single_auto_f;
    size_t k;

    make_data();
    is_gpu = open_contexts(&cpu, &autoctx);
    {
        kp_bls_options d = kp_bls_options_default();
        kp_peak_options k = kp_peak_options_default();
        CHECK(d.objective == KP_BLS_LIKELIHOOD && d.oversample == 10,
              "kp_bls_options_default() is {%u, %u}", (unsigned)d.objective, (unsigned)d.oversample);
        CHECK(k.k == 1 && k.separation == 0.0, "kp_peak_options_default() = {%u, %g}",
              (unsigned)k.k, k.separation);
    }

    check_single(cpu, "cpu", &single_cpu, &single_cpu_f);
    check_single(autoctx, is_gpu ? "auto = gpu" : "auto = cpu", &single_auto, &single_auto_f);
    check_batch(cpu, "cpu", &single_cpu);
    check_batch(autoctx, is_gpu ? "auto = gpu" : "auto = cpu", &single_auto);
    /* The backends pick the same boxes and compute them alike. */
    for (k = 0; k < 7; k++) {
        CHECK(memcmp(single_cpu.f[k], single_auto.f[k], NP * sizeof(double)) == 0,
              "f64 %s differs between the CPU and the AUTO context", FIELDS[k]);
        CHECK(memcmp(single_cpu_f.f[k], single_auto_f.f[k], NP * sizeof(float)) == 0,
              "f32 %s differs between the CPU and the AUTO context", FIELDS[k]);
    }
    printf("ok   cpu and auto contexts agree bit for bit\n");
    check_peaks(cpu, "cpu");
    check_peaks(autoctx, is_gpu ? "auto = gpu" : "auto = cpu");
    check_errors(cpu, "cpu");
    check_errors(autoctx, is_gpu ? "auto = gpu" : "auto = cpu");

    return close_contexts(cpu, autoctx, is_gpu);
}
