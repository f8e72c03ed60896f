/* End-to-end test of the kernpack C ABI for the phase-folding period
 * searches (PDM and conditional entropy), written as a C99 user would: a
 * light curve with a planted period, searched with kp_pdm_* and
 * kp_conditional_entropy_* (f64 and f32, a frequency array and a uniform
 * grid) on a CPU context and on the AUTO context (the GPU when there is
 * one), must have its lowest value at the planted frequency; a batch of
 * two curves (the second with another period) must find both, each row
 * equal to the single call bit for bit; NULL options must be the defaults;
 * the two contexts must agree bit for bit; the batch's best peaks
 * (kp_pdm_batch_uniform_peaks_f64, kp_conditional_entropy_batch_peaks_f64)
 * must be minima of the batch's statistic, best first, apart, the first the
 * lowest value of its row; and bad calls must fail with the right status
 * and a message naming the argument, the outputs untouched.
 *
 * Exit status 0 when every check passes. With KERNPACK_REQUIRE_GPU=1 a
 * missing GPU fails. Built and run by tests/ffi_programs.rs. */
#include "checks.h"

#include <math.h>

#define N 900        /* samples of the first curve */
#define N2 700       /* samples of the second */
#define NF 400       /* trial frequencies: F0 + DF k */
#define F0 0.3
#define DF 0.00075
#define PERIOD 2.345 /* planted in the first curve */
#define PERIOD2 1.9  /* and in the second */
#define POISON (-4242.0)
#define POISON_INDEX (-4242)
#define K 3             /* peaks per curve */
#define SEPARATION 0.02 /* between their frequencies: about 27 DF */

/* Both curves one after the other (offsets 0, N, N + N2): times over 120
 * units from 58000, a sinusoid of amplitude 1 plus noise of +-0.4, errors
 * 0.1 to 0.3. */
static double T[N + N2], Y[N + N2], DY[N + N2], FREQS[NF];
static float TF[N + N2], YF[N + N2], DYF[N + N2], FREQSF[NF];
static const int64_t OFFSETS[3] = {0, N, N + N2};

static uint64_t rng_state = 0x853c49e6748fea9bULL;
static double uniform(void)
{
    return lcg_uniform(&rng_state);
}

static void make_data(void)
{
    size_t i;
    for (i = 0; i < N + N2; i++) {
        double period = i < N ? PERIOD : PERIOD2;
        double t = 58000.0 + 120.0 * uniform();
        T[i] = t;
        Y[i] = 3.0 + sin(6.283185307179586 * (t - 58000.0) / period) + 0.8 * (uniform() - 0.5);
        DY[i] = 0.1 + 0.2 * uniform();
        TF[i] = (float)T[i];
        YF[i] = (float)Y[i];
        DYF[i] = (float)DY[i];
    }
    /* The grid's frequencies, as kernpack forms them (f0 + k df, in f64). */
    for (i = 0; i < NF; i++) {
        FREQS[i] = F0 + (double)i * DF;
        FREQSF[i] = (float)FREQS[i];
    }
}

/* Outputs: two rows and one value more, which stays POISON; K peaks of
 * two curves and one more. */
static double OUT[2 * NF + 1], OUT2[2 * NF + 1];
static float OUTF[2 * NF + 1];
static int64_t INDEX[2 * K + 1];
static double VALUE[2 * K + 1];

static void poison(double *out)
{
    size_t i;
    for (i = 0; i <= 2 * NF; i++)
        out[i] = POISON;
}

static int untouched_from(const double *out, size_t from)
{
    size_t i;
    for (i = from; i <= 2 * NF; i++)
        if (out[i] != POISON)
            return 0;
    return 1;
}

static void poison_peaks(void)
{
    size_t i;
    for (i = 0; i <= 2 * K; i++) {
        INDEX[i] = POISON_INDEX;
        VALUE[i] = POISON;
    }
}

static int peaks_untouched(void)
{
    size_t i;
    for (i = 0; i <= 2 * K; i++)
        if (INDEX[i] != POISON_INDEX || VALUE[i] != POISON)
            return 0;
    return 1;
}

/* The index of the first lowest of the NF values from `values`. */
static size_t first_lowest(const double *values)
{
    size_t i, b = 0;
    for (i = 1; i < NF; i++)
        if (values[i] < values[b])
            b = i;
    return b;
}

/* The frequency of the lowest of the NF values from `values`. */
static double lowest(const double *values)
{
    return FREQS[first_lowest(values)];
}

static void check_lowest(const double *values, double period, const char *what)
{
    double f = lowest(values);
    CHECK(fabs(f - 1.0 / period) < 0.003, "%s: lowest at frequency %g, planted %g", what, f,
          1.0 / period);
}

/* ---- check groups -------------------------------------------------------- */

/* One statistic of the first curve, in f64 on the array and the grid and in
 * f32 on the array: the planted frequency; the grid equals the array. */
static void check_single(const kp_context *ctx, const char *name, double *keep_pdm,
                         double *keep_ce)
{
    kp_pdm_options pdm = kp_pdm_options_default();
    kp_ce_options ce = kp_ce_options_default();
    size_t i;

    poison(OUT);
    EXPECT_OK(kp_pdm_f64(ctx, &pdm, T, Y, DY, N, FREQS, NF, OUT));
    CHECK(untouched_from(OUT, NF), "%s: kp_pdm_f64 wrote past nf", name);
    for (i = 0; i < NF; i++)
        CHECK(OUT[i] >= 0.0 && OUT[i] <= 1.0, "%s: theta[%u] = %g", name, (unsigned)i, OUT[i]);
    check_lowest(OUT, PERIOD, "kp_pdm_f64");
    memcpy(keep_pdm, OUT, NF * sizeof(double));
    /* NULL options are the defaults; the grid is the array's frequencies. */
    poison(OUT2);
    EXPECT_OK(kp_pdm_uniform_f64(ctx, NULL, T, Y, DY, N, F0, DF, NF, OUT2));
    CHECK(memcmp(OUT, OUT2, NF * sizeof(double)) == 0 && untouched_from(OUT2, NF),
          "%s: kp_pdm_uniform_f64 differs from kp_pdm_f64 on the same frequencies", name);

    poison(OUT);
    EXPECT_OK(kp_conditional_entropy_f64(ctx, &ce, T, Y, NULL, N, FREQS, NF, OUT));
    CHECK(untouched_from(OUT, NF), "%s: kp_conditional_entropy_f64 wrote past nf", name);
    check_lowest(OUT, PERIOD, "kp_conditional_entropy_f64");
    memcpy(keep_ce, OUT, NF * sizeof(double));
    poison(OUT2);
    EXPECT_OK(kp_conditional_entropy_uniform_f64(ctx, NULL, T, Y, NULL, N, F0, DF, NF, OUT2));
    CHECK(memcmp(OUT, OUT2, NF * sizeof(double)) == 0,
          "%s: the CE grid differs from the CE array", name);
    /* dy does not enter CE. */
    EXPECT_OK(kp_conditional_entropy_f64(ctx, &ce, T, Y, DY, N, FREQS, NF, OUT2));
    CHECK(memcmp(OUT, OUT2, NF * sizeof(double)) == 0, "%s: dy changed CE", name);

    /* f32 finds the period too. */
    for (i = 0; i <= 2 * NF; i++)
        OUTF[i] = (float)POISON;
    EXPECT_OK(kp_pdm_f32(ctx, NULL, TF, YF, DYF, N, FREQSF, NF, OUTF));
    CHECK(OUTF[NF] == (float)POISON, "%s: kp_pdm_f32 wrote past nf", name);
    for (i = 0; i < NF; i++)
        OUT[i] = (double)OUTF[i];
    check_lowest(OUT, PERIOD, "kp_pdm_f32");
    EXPECT_OK(kp_conditional_entropy_uniform_f32(ctx, NULL, TF, YF, NULL, N, F0, DF, NF, OUTF));
    for (i = 0; i < NF; i++)
        OUT[i] = (double)OUTF[i];
    check_lowest(OUT, PERIOD, "kp_conditional_entropy_uniform_f32");
    printf("ok   single series (%s)\n", name);
}

/* Both curves in one call: each its own period, row 0 the single call's. */
static void check_batch(const kp_context *ctx, const char *name, const double *pdm,
                        const double *ce)
{
    kp_ce_options o = kp_ce_options_default();
    poison(OUT);
    EXPECT_OK(kp_pdm_batch_f64(ctx, NULL, T, Y, DY, OFFSETS, 2, FREQS, NF, OUT));
    CHECK(untouched_from(OUT, 2 * NF), "%s: kp_pdm_batch_f64 wrote past nseries x nf", name);
    check_lowest(OUT, PERIOD, "kp_pdm_batch_f64, series 0");
    check_lowest(OUT + NF, PERIOD2, "kp_pdm_batch_f64, series 1");
    CHECK(memcmp(OUT, pdm, NF * sizeof(double)) == 0,
          "%s: series 0 of the PDM batch differs from the single call", name);
    poison(OUT2);
    EXPECT_OK(kp_pdm_batch_uniform_f64(ctx, NULL, T, Y, DY, OFFSETS, 2, F0, DF, NF, OUT2));
    CHECK(memcmp(OUT, OUT2, 2 * NF * sizeof(double)) == 0 && untouched_from(OUT2, 2 * NF),
          "%s: the PDM batch on the grid differs from it on the array", name);

    poison(OUT);
    EXPECT_OK(kp_conditional_entropy_batch_uniform_f64(ctx, &o, T, Y, NULL, OFFSETS, 2, F0, DF, NF,
                                                       OUT));
    check_lowest(OUT, PERIOD, "kp_conditional_entropy_batch_uniform_f64, series 0");
    check_lowest(OUT + NF, PERIOD2, "kp_conditional_entropy_batch_uniform_f64, series 1");
    CHECK(memcmp(OUT, ce, NF * sizeof(double)) == 0,
          "%s: series 0 of the CE batch differs from the single call", name);
    poison(OUT2);
    EXPECT_OK(kp_conditional_entropy_batch_f64(ctx, &o, T, Y, NULL, OFFSETS, 2, FREQS, NF, OUT2));
    CHECK(memcmp(OUT, OUT2, 2 * NF * sizeof(double)) == 0,
          "%s: the CE batch on the array differs from it on the grid", name);
    printf("ok   batch (%s)\n", name);
}

/* The `k` peaks of each of the two rows of `stat` (index and value `k` a
 * row): each a local minimum of its row, with the row's value; best
 * first; at least `separation` apart in frequency; the first the row's
 * first lowest value. */
static void check_peaks_of(const double *stat, size_t k, double separation, const char *what)
{
    size_t s, j, m;
    for (s = 0; s < 2; s++) {
        const double *row = stat + s * NF;
        const int64_t *index = INDEX + s * k;
        const double *value = VALUE + s * k;
        CHECK(index[0] == (int64_t)first_lowest(row),
              "%s, series %u: best peak at %lld, lowest at %u", what, (unsigned)s,
              (long long)index[0], (unsigned)first_lowest(row));
        for (j = 0; j < k; j++) {
            size_t i = (size_t)index[j];
            /* Every curve has many minima over NF frequencies: no padding. */
            CHECK(index[j] >= 0 && index[j] < NF, "%s, series %u: peak %u at %lld", what,
                  (unsigned)s, (unsigned)j, (long long)index[j]);
            CHECK(memcmp(&value[j], &row[i], sizeof(double)) == 0,
                  "%s, series %u: peak %u has %g, the statistic %g there", what, (unsigned)s,
                  (unsigned)j, value[j], row[i]);
            CHECK((i == 0 || row[i - 1] > row[i]) && (i + 1 == NF || row[i + 1] >= row[i]),
                  "%s, series %u: peak %u (index %u) is no minimum", what, (unsigned)s,
                  (unsigned)j, (unsigned)i);
            CHECK(j == 0 || value[j] >= value[j - 1], "%s, series %u: peak %u beats the one before",
                  what, (unsigned)s, (unsigned)j);
            for (m = 0; m < j; m++)
                CHECK(fabs(FREQS[i] - FREQS[index[m]]) >= separation - 1e-12,
                      "%s, series %u: peaks %u and %u closer than %g", what, (unsigned)s,
                      (unsigned)m, (unsigned)j, separation);
        }
    }
}

/* The best peaks of both curves against the batch's statistic: K by PDM on
 * the grid, and one (NULL peak options) by CE on the array. */
static void check_peaks(const kp_context *ctx, const char *name)
{
    kp_peak_options peaks = kp_peak_options_default();
    peaks.k = K;
    peaks.separation = SEPARATION;

    poison(OUT);
    EXPECT_OK(kp_pdm_batch_uniform_f64(ctx, NULL, T, Y, DY, OFFSETS, 2, F0, DF, NF, OUT));
    poison_peaks();
    EXPECT_OK(kp_pdm_batch_uniform_peaks_f64(ctx, NULL, T, Y, DY, OFFSETS, 2, F0, DF, NF, &peaks,
                                             INDEX, VALUE));
    CHECK(INDEX[2 * K] == POISON_INDEX && VALUE[2 * K] == POISON,
          "%s: kp_pdm_batch_uniform_peaks_f64 wrote past nseries x k", name);
    check_peaks_of(OUT, K, SEPARATION, "kp_pdm_batch_uniform_peaks_f64");

    poison(OUT);
    EXPECT_OK(kp_conditional_entropy_batch_f64(ctx, NULL, T, Y, NULL, OFFSETS, 2, FREQS, NF, OUT));
    poison_peaks();
    EXPECT_OK(kp_conditional_entropy_batch_peaks_f64(ctx, NULL, T, Y, NULL, OFFSETS, 2, FREQS, NF,
                                                     NULL, INDEX, VALUE));
    CHECK(INDEX[2] == POISON_INDEX && VALUE[2] == POISON,
          "%s: NULL peak options wrote more than one peak a series", name);
    check_peaks_of(OUT, 1, 0.0, "kp_conditional_entropy_batch_peaks_f64");
    printf("ok   peaks (%s)\n", name);
}

static void check_errors(const kp_context *ctx, const char *name)
{
    kp_peak_options peaks = kp_peak_options_default();
    kp_pdm_options pdm = kp_pdm_options_default();
    kp_ce_options ce = kp_ce_options_default();
    const int64_t decreasing[3] = {0, N, N - 1};
    static double bad_dy[N], bad_freqs[NF];
    memcpy(bad_dy, DY, sizeof bad_dy);
    memcpy(bad_freqs, FREQS, sizeof bad_freqs);
    bad_dy[17] = 0.0;
    bad_freqs[5] = -1.0;
    poison(OUT);
    poison_peaks();

    EXPECT_ERR(kp_pdm_f64(ctx, NULL, NULL, Y, DY, N, FREQS, NF, OUT), KP_ERROR_NULL_POINTER, "t");
    EXPECT_ERR(kp_pdm_f64(ctx, NULL, T, Y, DY, N, FREQS, NF, NULL), KP_ERROR_NULL_POINTER, "out");
    EXPECT_ERR(kp_pdm_f64(NULL, NULL, T, Y, DY, N, FREQS, NF, OUT), KP_ERROR_NULL_POINTER, "ctx");
    EXPECT_ERR(kp_pdm_f64(ctx, NULL, T, Y, bad_dy, N, FREQS, NF, OUT), KP_ERROR_INVALID_ARGUMENT,
               "dy");
    EXPECT_ERR(kp_conditional_entropy_f64(ctx, NULL, T, Y, NULL, N, bad_freqs, NF, OUT),
               KP_ERROR_INVALID_ARGUMENT, "frequency");
    EXPECT_ERR(kp_pdm_f64(ctx, NULL, T, Y, DY, 0, FREQS, NF, OUT), KP_ERROR_INVALID_ARGUMENT,
               "sample");
    EXPECT_ERR(kp_pdm_uniform_f64(ctx, NULL, T, Y, DY, N, -0.1, DF, NF, OUT),
               KP_ERROR_INVALID_ARGUMENT, "f0");
    EXPECT_ERR(kp_conditional_entropy_uniform_f64(ctx, NULL, T, Y, DY, N, F0, 0.0, NF, OUT),
               KP_ERROR_INVALID_ARGUMENT, "df");
    pdm.bins = 1;
    EXPECT_ERR(kp_pdm_f64(ctx, &pdm, T, Y, DY, N, FREQS, NF, OUT), KP_ERROR_INVALID_ARGUMENT,
               "bins");
    pdm.bins = KP_PDM_MAX_BINS + 1;
    EXPECT_ERR(kp_pdm_batch_f64(ctx, &pdm, T, Y, DY, OFFSETS, 2, FREQS, NF, OUT),
               KP_ERROR_INVALID_ARGUMENT, "bins");
    ce.mag_overlap = ce.mag_bins;
    EXPECT_ERR(kp_conditional_entropy_f64(ctx, &ce, T, Y, NULL, N, FREQS, NF, OUT),
               KP_ERROR_INVALID_ARGUMENT, "mag_overlap");
    ce = kp_ce_options_default();
    ce.phase_bins = 0;
    EXPECT_ERR(kp_conditional_entropy_batch_uniform_f64(ctx, &ce, T, Y, NULL, OFFSETS, 2, F0, DF,
                                                        NF, OUT),
               KP_ERROR_INVALID_ARGUMENT, "phase_bins");
    EXPECT_ERR(kp_pdm_batch_f64(ctx, NULL, T, Y, DY, decreasing, 2, FREQS, NF, OUT),
               KP_ERROR_INVALID_ARGUMENT, "offsets");
    EXPECT_ERR(kp_conditional_entropy_batch_f64(ctx, NULL, T, Y, DY, NULL, 2, FREQS, NF, OUT),
               KP_ERROR_NULL_POINTER, "offsets");
    EXPECT_ERR(kp_pdm_batch_uniform_f64(ctx, NULL, T, Y, bad_dy, OFFSETS, 2, F0, DF, NF, OUT),
               KP_ERROR_INVALID_ARGUMENT, "series");
    /* The output over an input. */
    EXPECT_ERR(kp_pdm_f64(ctx, NULL, T, Y, DY, N, FREQS, NF, Y + 3), KP_ERROR_INVALID_ARGUMENT,
               "out");
    /* The peaks: their options and outputs. */
    peaks.k = 0;
    EXPECT_ERR(kp_pdm_batch_peaks_f64(ctx, NULL, T, Y, DY, OFFSETS, 2, FREQS, NF, &peaks, INDEX,
                                      VALUE),
               KP_ERROR_INVALID_ARGUMENT, "k");
    peaks.k = KP_MAX_PEAKS + 1;
    EXPECT_ERR(kp_conditional_entropy_batch_uniform_peaks_f64(ctx, NULL, T, Y, NULL, OFFSETS, 2, F0,
                                                              DF, NF, &peaks, INDEX, VALUE),
               KP_ERROR_INVALID_ARGUMENT, "k");
    peaks.k = 2;
    peaks.separation = NAN;
    EXPECT_ERR(kp_pdm_batch_uniform_peaks_f64(ctx, NULL, T, Y, DY, OFFSETS, 2, F0, DF, NF, &peaks,
                                              INDEX, VALUE),
               KP_ERROR_INVALID_ARGUMENT, "separation");
    EXPECT_ERR(kp_pdm_batch_peaks_f64(ctx, NULL, T, Y, DY, OFFSETS, 2, FREQS, NF, NULL, NULL,
                                      VALUE),
               KP_ERROR_NULL_POINTER, "index");
    EXPECT_ERR(kp_conditional_entropy_batch_peaks_f64(ctx, NULL, T, Y, NULL, OFFSETS, 2, FREQS, NF,
                                                      NULL, INDEX, Y),
               KP_ERROR_INVALID_ARGUMENT, "value");
    CHECK(untouched_from(OUT, 0), "%s: a failing call wrote the output", name);
    CHECK(peaks_untouched(), "%s: a failing call wrote the peaks", name);
    printf("ok   errors (%s)\n", name);
}

int main(void)
{
    kp_context *cpu = NULL, *autoctx = NULL;
    static double pdm_cpu[NF], ce_cpu[NF], pdm_auto[NF], ce_auto[NF];
    int is_gpu;

    make_data();
    is_gpu = open_contexts(&cpu, &autoctx);
    {
        kp_pdm_options p = kp_pdm_options_default();
        kp_ce_options c = kp_ce_options_default();
        CHECK(p.bins == 10, "kp_pdm_options_default().bins = %u", (unsigned)p.bins);
        CHECK(c.phase_bins == 10 && c.mag_bins == 5 && c.phase_overlap == 0 && c.mag_overlap == 0,
              "kp_ce_options_default() = {%u, %u, %u, %u}", (unsigned)c.phase_bins,
              (unsigned)c.mag_bins, (unsigned)c.phase_overlap, (unsigned)c.mag_overlap);
        kp_peak_options k = kp_peak_options_default();
        CHECK(KP_PDM_MAX_BINS == 4096 && KP_CE_MAX_CELLS == 65536, "the limits");
        CHECK(k.k == 1 && k.separation == 0.0 && KP_MAX_PEAKS == 256,
              "kp_peak_options_default() = {%u, %g}, KP_MAX_PEAKS %u", (unsigned)k.k, k.separation,
              (unsigned)KP_MAX_PEAKS);
    }

    check_single(cpu, "cpu", pdm_cpu, ce_cpu);
    check_single(autoctx, is_gpu ? "auto = gpu" : "auto = cpu", pdm_auto, ce_auto);
    check_batch(cpu, "cpu", pdm_cpu, ce_cpu);
    check_batch(autoctx, is_gpu ? "auto = gpu" : "auto = cpu", pdm_auto, ce_auto);
    /* The backends bin every sample alike and add in the same order. */
    CHECK(memcmp(pdm_cpu, pdm_auto, sizeof pdm_cpu) == 0,
          "PDM differs between the CPU and the AUTO context");
    CHECK(memcmp(ce_cpu, ce_auto, sizeof ce_cpu) == 0,
          "CE differs between the CPU and the AUTO context");
    printf("ok   cpu and auto contexts agree bit for bit\n");
    check_peaks(cpu, "cpu");
    check_peaks(autoctx, is_gpu ? "auto = gpu" : "auto = cpu");
    check_errors(cpu, "cpu");
    check_errors(autoctx, is_gpu ? "auto = gpu" : "auto = cpu");

    return close_contexts(cpu, autoctx, is_gpu);
}
