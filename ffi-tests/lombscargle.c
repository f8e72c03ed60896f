/* End-to-end test of the kernpack C ABI (Lomb-Scargle), written as a C99
 * user would: include "kernpack.h", link libkernpack (static or shared).
 *
 * Exit status 0 when every check passes; otherwise the first failed check is
 * printed to stderr and the program exits with 1. One line per check group
 * goes to stdout.
 *
 * The groups: periodograms that peak at the planted frequency in f32 and
 * f64, the multi-term periodogram, the multiband one (the signal in three
 * bands; a batch's best peaks, kp_lombscargle_multiband_batch_peaks_f64/_f32,
 * against the batch's periodograms), amplitude mode, the backends agreeing,
 * a batch's best peaks (kp_lombscargle_batch_top_peaks_f64/_f32: local
 * maxima of the batch's periodograms, best first, apart, the first the
 * highest value), the multi-term batch's peaks refined and with FAPs,
 * bootstrap false-alarm maxima (single- and multi-term), refused calls, and
 * the device path.
 *
 * With a GPU the AUTO context runs on it and the device-pointer entry points
 * are exercised; without one they must answer KP_ERROR_NO_GPU. When the
 * environment variable KERNPACK_REQUIRE_GPU is "1", a missing GPU is a
 * failure (so a run on the GPU machine can never pass by skipping).
 *
 * Built and run by tests/ffi_programs.rs. */
#include "kernpack.h"

#include <ctype.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NX 300
#define NF 400
/* The signal's angular frequency is freqs[PEAK] exactly. */
#define PEAK 114
#define AMPLITUDE 2.0
#define POISON (-12345.0)

static const char *group = "setup";

static void fail(int line, const char *check, const char *fmt, ...)
{
    va_list args;
    fprintf(stderr, "FAIL [%s] lombscargle.c:%d: check `%s`: ", group, line, check);
    va_start(args, fmt);
    vfprintf(stderr, fmt, args);
    va_end(args);
    fprintf(stderr, "\n");
    exit(1);
}

#define CHECK(cond, ...)                          \
    do {                                          \
        if (!(cond))                              \
            fail(__LINE__, #cond, __VA_ARGS__);   \
    } while (0)

static void group_done(void)
{
    printf("ok   %s\n", group);
    fflush(stdout);
}

/* kp_status_string only for values the enum has: kp_status is a C enum
 * parameter on the Rust side, so passing anything else would be undefined. */
static const char *status_name(kp_status s)
{
    return ((int)s >= KP_OK && (int)s <= KP_ERROR_INTERNAL) ? kp_status_string(s) : "(not a kp_status)";
}

static void expect_status(int line, kp_status got, kp_status want, const char *call)
{
    if (got != want) {
        /* Copy the message first: it is only valid until the next kernpack call. */
        char message[512];
        snprintf(message, sizeof message, "%s", kp_last_error_message());
        fail(line, call, "returned %d (%s), expected %d (%s); kp_last_error_message: \"%s\"",
             (int)got, status_name(got), (int)want, status_name(want), message);
    }
}

#define EXPECT(call, want) expect_status(__LINE__, (call), (want), #call)
#define EXPECT_OK(call) EXPECT(call, KP_OK)

/* `name` occurs in `msg` as a whole word. */
static int names_argument(const char *msg, const char *name)
{
    size_t n = strlen(name);
    const char *p = msg;
    while ((p = strstr(p, name)) != NULL) {
        int before = p == msg || !(isalnum((unsigned char)p[-1]) || p[-1] == '_');
        int after = !(isalnum((unsigned char)p[n]) || p[n] == '_');
        if (before && after)
            return 1;
        p++;
    }
    return 0;
}

/* A failing call: status `want`, a non-empty message that names `arg` (when not NULL). */
static void expect_error(int line, kp_status got, kp_status want, const char *arg, const char *call)
{
    const char *msg;
    expect_status(line, got, want, call);
    msg = kp_last_error_message();
    if (msg == NULL || msg[0] == '\0')
        fail(line, call, "failed as expected but kp_last_error_message() is %s",
             msg == NULL ? "NULL" : "empty");
    if (arg != NULL && !names_argument(msg, arg))
        fail(line, call, "kp_last_error_message() \"%s\" does not name the argument `%s`", msg, arg);
}

#define EXPECT_ERR(call, want, arg) expect_error(__LINE__, (call), (want), (arg), #call)

static void expect_no_message(int line)
{
    const char *msg = kp_last_error_message();
    if (msg == NULL || msg[0] != '\0')
        fail(line, "kp_last_error_message()[0] == '\\0'", "after a successful call it is \"%s\"",
             msg == NULL ? "(NULL)" : msg);
}

/* ---- test data ------------------------------------------------------- */

static double T[NX], Y[NX], W[NX], F[NF];
static float TF[NX], YF[NX], WF[NX], FF[NF];

static uint64_t rng_state = 0x2545f4914f6cdd1dULL;
static double uniform(void)
{
    rng_state = rng_state * 6364136223846793005ULL + 1442695040888963407ULL;
    return (double)(rng_state >> 11) / 9007199254740992.0;
}

/* Irregular times over 100 units, a sinusoid of amplitude 2 at angular
 * frequency F[PEAK] plus uniform noise, positive weights. */
static void make_signal(void)
{
    const double span = 100.0;
    double omega;
    int i;
    for (i = 0; i < NF; i++)
        F[i] = 0.01 + 0.0075 * i;
    omega = F[PEAK];
    for (i = 0; i < NX; i++) {
        T[i] = span * (i + 0.8 * uniform()) / NX;
        Y[i] = AMPLITUDE * sin(omega * T[i] + 0.4) + 0.5 * (uniform() - 0.5);
        W[i] = 0.5 + uniform();
        TF[i] = (float)T[i];
        YF[i] = (float)Y[i];
        WF[i] = (float)W[i];
    }
    for (i = 0; i < NF; i++)
        FF[i] = (float)F[i];
}

static void fill_d(double *v, size_t n, double x)
{
    size_t i;
    for (i = 0; i < n; i++)
        v[i] = x;
}

static void fill_f(float *v, size_t n, float x)
{
    size_t i;
    for (i = 0; i < n; i++)
        v[i] = x;
}

static int all_equal_d(const double *v, size_t n, double x)
{
    size_t i;
    for (i = 0; i < n; i++)
        if (v[i] != x)
            return 0;
    return 1;
}

static int all_equal_f(const float *v, size_t n, float x)
{
    size_t i;
    for (i = 0; i < n; i++)
        if (v[i] != x)
            return 0;
    return 1;
}

static size_t argmax_d(const double *v, size_t n)
{
    size_t i, best = 0;
    for (i = 1; i < n; i++)
        if (v[i] > v[best])
            best = i;
    return best;
}

static size_t argmax_f(const float *v, size_t n)
{
    size_t i, best = 0;
    for (i = 1; i < n; i++)
        if (v[i] > v[best])
            best = i;
    return best;
}

/* max |a - b| / max |b| */
static double scaled_diff_d(const double *a, const double *b, size_t n)
{
    double err = 0.0, scale = 0.0;
    size_t i;
    for (i = 0; i < n; i++) {
        double d = fabs(a[i] - b[i]);
        if (!(d <= err))
            err = d; /* also propagates NaN */
        if (fabs(b[i]) > scale)
            scale = fabs(b[i]);
    }
    return scale > 0.0 ? err / scale : err;
}

static double scaled_diff_f(const float *a, const float *b, size_t n)
{
    double err = 0.0, scale = 0.0;
    size_t i;
    for (i = 0; i < n; i++) {
        double d = fabs((double)a[i] - (double)b[i]);
        if (!(d <= err))
            err = d;
        if (fabs((double)b[i]) > scale)
            scale = fabs((double)b[i]);
    }
    return scale > 0.0 ? err / scale : err;
}

static int all_finite_d(const double *v, size_t n)
{
    size_t i;
    for (i = 0; i < n; i++)
        if (!isfinite(v[i]))
            return 0;
    return 1;
}

static kp_lombscargle_options options(uint32_t normalize, uint32_t floating_mean, uint32_t precenter)
{
    kp_lombscargle_options o = kp_lombscargle_options_default();
    o.normalize = normalize;
    o.floating_mean = floating_mean;
    o.precenter = precenter;
    return o;
}

/* ---- check groups ---------------------------------------------------- */

static void check_status_strings(void)
{
    int a, b;
    group = "status strings";
    for (a = KP_OK; a <= KP_ERROR_INTERNAL; a++) {
        const char *s = kp_status_string((kp_status)a);
        CHECK(s != NULL, "kp_status_string(%d) is NULL", a);
        CHECK(s[0] != '\0', "kp_status_string(%d) is empty", a);
        for (b = KP_OK; b < a; b++)
            CHECK(strcmp(s, kp_status_string((kp_status)b)) != 0,
                  "statuses %d and %d share the description \"%s\"", a, b, s);
    }
    group_done();
}

static int sentinel_object;

/* Creates the CPU and AUTO contexts; *auto_is_gpu tells what AUTO chose. */
static void check_contexts(kp_context **cpu, kp_context **autoctx, int *auto_is_gpu)
{
    kp_context *const untouched = (kp_context *)(void *)&sentinel_object;
    kp_context *c = untouched;
    int32_t is_gpu = -1;

    group = "contexts";
    CHECK(kp_last_error_message() != NULL, "kp_last_error_message() is NULL");
    CHECK(kp_last_error_message()[0] == '\0', "no call has failed yet, but the message is \"%s\"",
          kp_last_error_message());

    kp_context_destroy(NULL); /* accepted and ignored */

    EXPECT_OK(kp_context_create(KP_BACKEND_CPU, cpu));
    CHECK(*cpu != NULL, "kp_context_create(KP_BACKEND_CPU) returned KP_OK and a NULL handle");
    EXPECT_OK(kp_context_is_gpu(*cpu, &is_gpu));
    CHECK(is_gpu == 0, "a CPU context reports is_gpu = %d", (int)is_gpu);

    EXPECT_OK(kp_context_create(KP_BACKEND_AUTO, autoctx));
    CHECK(*autoctx != NULL, "kp_context_create(KP_BACKEND_AUTO) returned KP_OK and a NULL handle");
    is_gpu = -1;
    EXPECT_OK(kp_context_is_gpu(*autoctx, &is_gpu));
    CHECK(is_gpu == 0 || is_gpu == 1, "is_gpu = %d", (int)is_gpu);
    *auto_is_gpu = is_gpu;
    expect_no_message(__LINE__);

    /* An explicit GPU context: fine with a GPU, KP_ERROR_NO_GPU without. */
    c = untouched;
    if (*auto_is_gpu) {
        EXPECT_OK(kp_context_create(KP_BACKEND_GPU, &c));
        is_gpu = -1;
        EXPECT_OK(kp_context_is_gpu(c, &is_gpu));
        CHECK(is_gpu == 1, "a KP_BACKEND_GPU context reports is_gpu = %d", (int)is_gpu);
        kp_context_destroy(c);
    } else {
        const char *require = getenv("KERNPACK_REQUIRE_GPU");
        kp_status s = kp_context_create(KP_BACKEND_GPU, &c);
        if (require != NULL && strcmp(require, "1") == 0)
            fail(__LINE__, "a GPU is present", "KERNPACK_REQUIRE_GPU=1 but the AUTO context runs on "
                 "the CPU; kp_context_create(KP_BACKEND_GPU) says %d (%s): \"%s\"",
                 (int)s, status_name(s), kp_last_error_message());
        EXPECT_ERR(s, KP_ERROR_NO_GPU, NULL);
        CHECK(c == untouched, "a failed kp_context_create wrote *out");
    }

    /* Devices: as many as AUTO implies; a context on each chosen by ordinal. */
    {
        int32_t count = -1;
        kp_device_info info;
        EXPECT_OK(kp_device_count(&count));
        CHECK(*auto_is_gpu ? count >= 1 : count == 0, "kp_device_count says %d, AUTO is_gpu %d",
              (int)count, *auto_is_gpu);
        for (int32_t d = 0; d < count; d++) {
            memset(&info, 0x5a, sizeof info);
            EXPECT_OK(kp_device_get_info(d, &info));
            CHECK(info.ordinal == d && info.name[0] != '\0' && memchr(info.name, '\0', KP_DEVICE_NAME_LEN) != NULL,
                  "kp_device_get_info(%d): ordinal %d, name not a C string", (int)d, (int)info.ordinal);
            CHECK(info.compute_capability_major >= 3 && info.multiprocessors > 0 && info.total_bytes > 0 &&
                      info.free_bytes <= info.total_bytes,
                  "kp_device_get_info(%d): %s sm_%d%d, %d SMs, %llu of %llu bytes free", (int)d, info.name,
                  (int)info.compute_capability_major, (int)info.compute_capability_minor,
                  (int)info.multiprocessors, (unsigned long long)info.free_bytes,
                  (unsigned long long)info.total_bytes);
            c = untouched;
            EXPECT_OK(kp_context_create_on_device(d, &c));
            is_gpu = -1;
            EXPECT_OK(kp_context_is_gpu(c, &is_gpu));
            CHECK(is_gpu == 1, "a context on GPU %d reports is_gpu = %d", (int)d, (int)is_gpu);
            kp_context_destroy(c);
        }
        c = untouched;
        EXPECT_ERR(kp_context_create_on_device(count, &c), count ? KP_ERROR_INVALID_ARGUMENT : KP_ERROR_NO_GPU,
                   NULL);
        CHECK(c == untouched, "a failed kp_context_create_on_device wrote *out");
        EXPECT_ERR(kp_context_create_on_device(-1, &c), KP_ERROR_INVALID_ARGUMENT, NULL);
        CHECK(c == untouched, "a failed kp_context_create_on_device wrote *out");
        EXPECT_ERR(kp_device_get_info(count, &info), count ? KP_ERROR_INVALID_ARGUMENT : KP_ERROR_NO_GPU, NULL);
        EXPECT_ERR(kp_device_count(NULL), KP_ERROR_NULL_POINTER, "count");
        EXPECT_ERR(kp_device_get_info(0, NULL), KP_ERROR_NULL_POINTER, "out");
    }

    /* CPU threads: a process-wide count; 0 restores the default; a garbage count is refused. */
    {
        size_t threads = 0, before = 0;
        EXPECT_OK(kp_get_cpu_threads(&before));
        CHECK(before >= 1, "kp_get_cpu_threads says %zu", before);
        EXPECT_OK(kp_set_cpu_threads(3));
        EXPECT_OK(kp_get_cpu_threads(&threads));
        CHECK(threads == 3, "after kp_set_cpu_threads(3), %zu threads", threads);
        EXPECT_ERR(kp_set_cpu_threads((size_t)-1), KP_ERROR_INVALID_ARGUMENT, "4096");
        EXPECT_OK(kp_get_cpu_threads(&threads));
        CHECK(threads == 3, "a refused kp_set_cpu_threads changed the count to %zu", threads);
        EXPECT_OK(kp_set_cpu_threads(0));
        EXPECT_OK(kp_get_cpu_threads(&threads));
        CHECK(threads == before, "kp_set_cpu_threads(0) gave %zu threads, not the default %zu", threads, before);
        EXPECT_ERR(kp_get_cpu_threads(NULL), KP_ERROR_NULL_POINTER, "threads");
    }

    c = untouched;
    EXPECT_ERR(kp_context_create(99, &c), KP_ERROR_INVALID_ARGUMENT, NULL);
    CHECK(c == untouched, "a failed kp_context_create wrote *out");
    CHECK(strstr(kp_last_error_message(), "99") != NULL, "the message \"%s\" does not mention 99",
          kp_last_error_message());
    EXPECT_ERR(kp_context_create(KP_BACKEND_CPU, NULL), KP_ERROR_NULL_POINTER, "out");
    EXPECT_ERR(kp_context_is_gpu(NULL, &is_gpu), KP_ERROR_NULL_POINTER, "ctx");
    EXPECT_ERR(kp_context_is_gpu(*cpu, NULL), KP_ERROR_NULL_POINTER, "is_gpu");

    /* A success clears the previous failure's message. */
    EXPECT_OK(kp_context_is_gpu(*cpu, &is_gpu));
    expect_no_message(__LINE__);
    group_done();
}

static void check_output_len(void)
{
    kp_lombscargle_options o = kp_lombscargle_options_default();
    group = "output length";
    CHECK(o.normalize == KP_NORMALIZE_POWER && o.floating_mean == 0 && o.precenter == 0,
          "kp_lombscargle_options_default() is {%u, %u, %u}", o.normalize, o.floating_mean,
          o.precenter);
    CHECK(kp_lombscargle_output_len(NF, NULL) == NF, "NULL options");
    CHECK(kp_lombscargle_output_len(NF, &o) == NF, "power");
    o.normalize = KP_NORMALIZE_NORMALIZE;
    CHECK(kp_lombscargle_output_len(NF, &o) == NF, "normalize");
    o.normalize = KP_NORMALIZE_AMPLITUDE;
    CHECK(kp_lombscargle_output_len(NF, &o) == 2 * NF, "amplitude: %zu",
          kp_lombscargle_output_len(NF, &o));
    o.normalize = 7;
    CHECK(kp_lombscargle_output_len(NF, &o) == 0, "invalid mode 7: %zu",
          kp_lombscargle_output_len(NF, &o));
    group_done();
}

/* Power spectra in both precisions peak at F[PEAK], at about A^2 N / 4. */
static void check_peaks(const kp_context *ctx, const char *name, double *power64)
{
    static char title[64];
    static double out[NF + 1];
    static float outf[NF + 1];
    const double expected = AMPLITUDE * AMPLITUDE * NX / 4.0;
    size_t k;

    snprintf(title, sizeof title, "peaks f64 + f32 (%s)", name);
    group = title;

    fill_d(out, NF + 1, POISON);
    EXPECT_OK(kp_lombscargle_f64(ctx, T, Y, NULL, NX, F, NF, NULL, out, NF));
    expect_no_message(__LINE__);
    CHECK(out[NF] == POISON, "kp_lombscargle_f64 wrote past out_len");
    CHECK(all_finite_d(out, NF), "non-finite power");
    k = argmax_d(out, NF);
    CHECK(k + 1 >= PEAK && k <= PEAK + 1, "f64 peak at index %zu (freq %g), expected %d (freq %g)",
          k, F[k], PEAK, F[PEAK]);
    CHECK(out[k] > 0.7 * expected && out[k] < 1.3 * expected, "f64 peak power %g, expected ~%g",
          out[k], expected);
    memcpy(power64, out, NF * sizeof(double));

    fill_f(outf, NF + 1, (float)POISON);
    EXPECT_OK(kp_lombscargle_f32(ctx, TF, YF, NULL, NX, FF, NF, NULL, outf, NF));
    CHECK(outf[NF] == (float)POISON, "kp_lombscargle_f32 wrote past out_len");
    k = argmax_f(outf, NF);
    CHECK(k + 1 >= PEAK && k <= PEAK + 1, "f32 peak at index %zu (freq %g), expected %d (freq %g)",
          k, (double)FF[k], PEAK, (double)FF[PEAK]);
    CHECK(outf[k] > 0.7 * expected && outf[k] < 1.3 * expected, "f32 peak power %g, expected ~%g",
          (double)outf[k], expected);
    {
        /* f32 agrees with f64 to single precision (relative to the peak). */
        static float p64f[NF];
        for (k = 0; k < NF; k++)
            p64f[k] = (float)power64[k];
        CHECK(scaled_diff_f(outf, p64f, NF) < 1e-3, "f32 vs f64: scaled difference %g",
              scaled_diff_f(outf, p64f, NF));
    }
    group_done();
}

/* ---- a batch's best peaks ----------------------------------------------- */

#define K 4             /* peaks a series */
#define SEPARATION 0.05 /* between their angular frequencies: 6.7 grid steps */
#define POISON_INDEX (-4242)

/* The signal cut in two series (the first and the second half of the
 * samples), both on the grid of F. */
static const int64_t HALVES[3] = {0, NX / 2, NX};

/* The peaks of each of the two rows of `rows` (double, NF a row, at the
 * frequencies `axis`): `index` and `value` (`k` a row) must be local maxima
 * of the row with its values bit for bit, best first, at least `separation`
 * apart in `axis`, the first the row's first highest value. */
static void check_top_peaks_of(const double *rows, const double *axis, const int64_t *index,
                               const double *value, size_t k, double separation, const char *what)
{
    size_t s, j, m;
    for (s = 0; s < 2; s++) {
        const double *row = rows + s * NF;
        CHECK(index[s * k] == (int64_t)argmax_d(row, NF), "%s, series %zu: best peak at %lld, argmax %zu",
              what, s, (long long)index[s * k], argmax_d(row, NF));
        for (j = 0; j < k; j++) {
            int64_t i = index[s * k + j];
            /* A noisy periodogram over NF frequencies: many maxima, no padding. */
            CHECK(i >= 0 && i < NF, "%s, series %zu: peak %zu at %lld", what, s, j, (long long)i);
            CHECK(memcmp(&value[s * k + j], &row[i], sizeof(double)) == 0,
                  "%s, series %zu: peak %zu has %g, the periodogram %g", what, s, j,
                  value[s * k + j], row[i]);
            CHECK((i == 0 || row[i - 1] < row[i]) && (i + 1 == NF || row[i + 1] <= row[i]),
                  "%s, series %zu: peak %zu (index %lld) is no maximum", what, s, j, (long long)i);
            CHECK(j == 0 || value[s * k + j] <= value[s * k + j - 1],
                  "%s, series %zu: peak %zu beats the one before", what, s, j);
            for (m = 0; m < j; m++)
                CHECK(fabs(axis[i] - axis[index[s * k + m]]) >= separation - 1e-12,
                      "%s, series %zu: peaks %zu and %zu closer than %g", what, s, m, j, separation);
        }
    }
}

/* kp_lombscargle_batch_top_peaks_f64/_f32 on the two halves against the
 * batch's periodograms; its first peaks are kp_lombscargle_batch_peaks';
 * refused calls (an amplitude periodogram, bad peak options, bad outputs)
 * leave index and value alone. */
static void check_top_peaks(const kp_context *ctx, const char *name)
{
    static char title[64];
    static double rows[2 * NF], rowsd[2 * NF], value[2 * K + 1], one_value[2];
    static float rowsf[2 * NF];
    static int64_t index[2 * K + 1], one_index[2];
    const double f0 = F[0], df = F[1] - F[0];
    kp_lombscargle_options o = options(KP_NORMALIZE_NORMALIZE, 1, 0);
    kp_lombscargle_options amp = options(KP_NORMALIZE_AMPLITUDE, 1, 0);
    kp_peak_options peaks = kp_peak_options_default();
    size_t i;

    snprintf(title, sizeof title, "batch top peaks (%s)", name);
    group = title;
    peaks.k = K;
    peaks.separation = SEPARATION;

    EXPECT_OK(kp_lombscargle_batch_f64(ctx, T, Y, W, HALVES, 2, &f0, &df, 1, NF, &o, rows, 2 * NF));
    for (i = 0; i <= 2 * K; i++) {
        index[i] = POISON_INDEX;
        value[i] = POISON;
    }
    EXPECT_OK(kp_lombscargle_batch_top_peaks_f64(ctx, T, Y, W, HALVES, 2, &f0, &df, 1, NF, &o,
                                                 &peaks, index, value));
    expect_no_message(__LINE__);
    CHECK(index[2 * K] == POISON_INDEX && value[2 * K] == POISON,
          "kp_lombscargle_batch_top_peaks_f64 wrote past nseries x k");
    check_top_peaks_of(rows, F, index, value, K, SEPARATION, "f64");
    /* The best peaks are the highest values: kp_lombscargle_batch_peaks'. */
    EXPECT_OK(kp_lombscargle_batch_peaks_f64(ctx, T, Y, W, HALVES, 2, &f0, &df, 1, NF, &o,
                                             one_index, one_value));
    for (i = 0; i < 2; i++)
        CHECK(one_index[i] == index[i * K] && memcmp(&one_value[i], &value[i * K], sizeof(double)) == 0,
              "series %zu: top peak (%lld, %g), highest peak (%lld, %g)", i, (long long)index[i * K],
              value[i * K], (long long)one_index[i], one_value[i]);

    /* f32, NULL peak options: one peak a series. */
    EXPECT_OK(kp_lombscargle_batch_f32(ctx, TF, YF, WF, HALVES, 2, &f0, &df, 1, NF, &o, rowsf,
                                       2 * NF));
    for (i = 0; i < 2 * NF; i++)
        rowsd[i] = (double)rowsf[i];
    for (i = 0; i <= 2 * K; i++) {
        index[i] = POISON_INDEX;
        value[i] = POISON;
    }
    EXPECT_OK(kp_lombscargle_batch_top_peaks_f32(ctx, TF, YF, WF, HALVES, 2, &f0, &df, 1, NF, &o,
                                                 NULL, index, value));
    CHECK(index[2] == POISON_INDEX && value[2] == POISON,
          "NULL peak options wrote more than one peak a series");
    check_top_peaks_of(rowsd, F, index, value, 1, 0.0, "f32, NULL peak options");

    /* Refusals. */
    for (i = 0; i <= 2 * K; i++) {
        index[i] = POISON_INDEX;
        value[i] = POISON;
    }
    EXPECT_ERR(kp_lombscargle_batch_top_peaks_f64(ctx, T, Y, W, HALVES, 2, &f0, &df, 1, NF, &amp,
                                                  &peaks, index, value),
               KP_ERROR_INVALID_ARGUMENT, "amplitude");
    peaks.k = 0;
    EXPECT_ERR(kp_lombscargle_batch_top_peaks_f64(ctx, T, Y, W, HALVES, 2, &f0, &df, 1, NF, &o,
                                                  &peaks, index, value),
               KP_ERROR_INVALID_ARGUMENT, "k");
    peaks.k = 2;
    peaks.separation = INFINITY;
    EXPECT_ERR(kp_lombscargle_batch_top_peaks_f64(ctx, T, Y, W, HALVES, 2, &f0, &df, 1, NF, &o,
                                                  &peaks, index, value),
               KP_ERROR_INVALID_ARGUMENT, "separation");
    EXPECT_ERR(kp_lombscargle_batch_top_peaks_f64(ctx, T, Y, W, HALVES, 2, &f0, &df, 1, NF, &o,
                                                  NULL, NULL, value),
               KP_ERROR_NULL_POINTER, "index");
    EXPECT_ERR(kp_lombscargle_batch_top_peaks_f64(ctx, T, Y, W, HALVES, 2, &f0, &df, 1, NF, &o,
                                                  NULL, index, Y),
               KP_ERROR_INVALID_ARGUMENT, "value");
    for (i = 0; i <= 2 * K; i++)
        CHECK(index[i] == POISON_INDEX && value[i] == POISON,
              "a failing call wrote index or value (%zu)", i);
    group_done();
}

/* The multi-term periodogram (two harmonics, astropy's standard
 * normalization, frequencies in cycles per unit time): its peak at the
 * signal's frequency, powers in [0, 1], and bad calls leaving out alone. */
static void check_chi2(const kp_context *ctx, const char *name)
{
    static char title[64];
    static double cycles[NF], out[NF + 1];
    kp_chi2_options opts = kp_chi2_options_default();
    size_t k;

    snprintf(title, sizeof title, "chi2 multi-term (%s)", name);
    group = title;
    for (k = 0; k < NF; k++)
        cycles[k] = F[k] / (2.0 * 3.14159265358979323846);
    opts.nterms = 2;
    fill_d(out, NF + 1, POISON);
    EXPECT_OK(kp_lombscargle_chi2_f64(ctx, &opts, T, Y, NULL, NX, cycles, NF, out));
    expect_no_message(__LINE__);
    CHECK(out[NF] == POISON, "kp_lombscargle_chi2_f64 wrote past nf");
    for (k = 0; k < NF; k++)
        CHECK(out[k] >= 0.0 && out[k] <= 1.0 + 1e-12, "power %g at %zu outside [0, 1]", out[k], k);
    k = argmax_d(out, NF);
    CHECK(k + 1 >= PEAK && k <= PEAK + 1, "chi2 peak at index %zu, expected %d", k, PEAK);
    CHECK(out[k] > 0.8, "chi2 peak power %g, expected near 1", out[k]);

    fill_d(out, NF + 1, POISON);
    EXPECT_ERR(kp_lombscargle_chi2_f64(ctx, &opts, T, NULL, NULL, NX, cycles, NF, out),
               KP_ERROR_NULL_POINTER, "y");
    opts.nterms = 0;
    EXPECT_ERR(kp_lombscargle_chi2_f64(ctx, &opts, T, Y, NULL, NX, cycles, NF, out),
               KP_ERROR_INVALID_ARGUMENT, "nterms");
    CHECK(all_equal_d(out, NF + 1, POISON), "a failed chi2 call wrote its output");
    group_done();
}

/* Bootstrap false-alarm statistics, single- and multi-term: the maxima are
 * reproducible from the seed and another seed draws others; the multi-term
 * call with one harmonic gives the single-term call's maxima (the same
 * draws, the same floating-mean fit); every maximum lies in [0, 1] and below
 * the planted signal's peak (resampling y with t fixed destroys the signal);
 * f32 is near f64; refused calls leave the maxima alone. */
static void check_bootstrap(const kp_context *ctx, const char *name)
{
    enum { R = 64 };
    static char title[64];
    static double first[R + 1], again[R + 1], other[R + 1], chi2[R + 1], single[R + 1];
    const double fmax = 0.5, spp = 5.0;
    kp_chi2_options opts = kp_chi2_options_default();
    int differs = 0;
    size_t r;

    snprintf(title, sizeof title, "bootstrap FAP (%s)", name);
    group = title;
    fill_d(first, R + 1, POISON);
    fill_d(again, R + 1, POISON);
    fill_d(other, R + 1, POISON);
    EXPECT_OK(kp_lombscargle_bootstrap_f64(ctx, T, Y, W, NX, fmax, KP_POWER_STANDARD, R, 7, spp, first));
    expect_no_message(__LINE__);
    EXPECT_OK(kp_lombscargle_bootstrap_f64(ctx, T, Y, W, NX, fmax, KP_POWER_STANDARD, R, 7, spp, again));
    EXPECT_OK(kp_lombscargle_bootstrap_f64(ctx, T, Y, W, NX, fmax, KP_POWER_STANDARD, R, 8, spp, other));
    CHECK(first[R] == POISON && again[R] == POISON, "kp_lombscargle_bootstrap_f64 wrote past resamples");
    for (r = 0; r < R; r++) {
        CHECK(first[r] >= 0.0 && first[r] < 0.5, "maximum %zu is %g: not below the signal's peak", r, first[r]);
        CHECK(first[r] == again[r], "seed 7 twice: maximum %zu %g then %g", r, first[r], again[r]);
        differs |= first[r] != other[r];
    }
    CHECK(differs, "seeds 7 and 8 gave the same %d maxima", R);

    fill_d(chi2, R + 1, POISON);
    opts.nterms = 1;
    EXPECT_OK(kp_lombscargle_chi2_bootstrap_f64(ctx, &opts, T, Y, W, NX, fmax, R, 7, spp, chi2));
    expect_no_message(__LINE__);
    CHECK(chi2[R] == POISON, "kp_lombscargle_chi2_bootstrap_f64 wrote past resamples");
    for (r = 0; r < R; r++)
        CHECK(fabs(chi2[r] - first[r]) <= 1e-9, "one harmonic: maximum %zu %.17g, single-term %.17g", r,
              chi2[r], first[r]);
    opts.nterms = 3;
    EXPECT_OK(kp_lombscargle_chi2_bootstrap_f64(ctx, &opts, T, Y, W, NX, fmax, R, 7, spp, chi2));
    for (r = 0; r < R; r++)
        CHECK(chi2[r] >= first[r] - 1e-9 && chi2[r] <= 1.0 + 1e-12,
              "three harmonics: maximum %zu %g below one harmonic's %g (more terms fit better)", r,
              chi2[r], first[r]);

    fill_d(single, R + 1, POISON);
    EXPECT_OK(kp_lombscargle_bootstrap_f32(ctx, TF, YF, WF, NX, fmax, KP_POWER_STANDARD, R, 7, spp, single));
    for (r = 0; r < R; r++)
        CHECK(fabs(single[r] - first[r]) <= 1e-3, "f32 maximum %zu %g, f64 %g", r, single[r], first[r]);

    fill_d(other, R + 1, POISON);
    EXPECT_ERR(kp_lombscargle_bootstrap_f64(ctx, T, Y, W, NX, fmax, KP_POWER_STANDARD, R, 7, spp, NULL),
               KP_ERROR_NULL_POINTER, "maxima");
    EXPECT_ERR(kp_lombscargle_bootstrap_f64(ctx, T, Y, W, NX, -1.0, KP_POWER_STANDARD, R, 7, spp, other),
               KP_ERROR_INVALID_ARGUMENT, "fmax");
    EXPECT_ERR(kp_lombscargle_bootstrap_f64(ctx, T, Y, W, NX, fmax, 99, R, 7, spp, other),
               KP_ERROR_INVALID_ARGUMENT, "normalization");
    opts.nterms = 0;
    EXPECT_ERR(kp_lombscargle_chi2_bootstrap_f64(ctx, &opts, T, Y, W, NX, fmax, R, 7, spp, other),
               KP_ERROR_INVALID_ARGUMENT, "nterms");
    opts.nterms = 2;
    EXPECT_ERR(kp_lombscargle_chi2_bootstrap_f64(ctx, &opts, T, Y, W, NX, fmax, R, 7, spp, (double *)Y),
               KP_ERROR_INVALID_ARGUMENT, "maxima");
    CHECK(all_equal_d(other, R + 1, POISON), "a refused bootstrap call wrote its maxima");
    group_done();
}

/* The best peaks of the multiband batch of the two halves of the signal
 * (values `yb`, labels `bands`) on the grid `cycles`, in f64 with K peaks
 * apart and in f32 with NULL peak options (one): those of the batch's
 * periodograms (check_top_peaks_of); refused calls (a k out of range, a
 * NULL or overlapping output, decreasing offsets) leave index and value
 * alone. */
static void check_multiband_peaks(const kp_context *ctx, const double *cycles, const double *yb,
                                  const uint32_t *bands)
{
    static double rows[2 * NF], rowsd[2 * NF], value[2 * K + 1];
    static float rowsf[2 * NF], ybf[NX];
    static int64_t index[2 * K + 1];
    static const int64_t decreasing[3] = {0, NX / 2, NX / 2 - 1};
    const double f0 = cycles[0], df = cycles[1] - cycles[0];
    const double separation = SEPARATION / (2.0 * 3.14159265358979323846);
    kp_peak_options peaks = kp_peak_options_default();
    size_t i;

    peaks.k = K;
    peaks.separation = separation;
    EXPECT_OK(kp_lombscargle_multiband_batch_f64(ctx, NULL, T, yb, W, bands, HALVES, 2, f0, df, NF,
                                                 rows));
    for (i = 0; i <= 2 * K; i++) {
        index[i] = POISON_INDEX;
        value[i] = POISON;
    }
    EXPECT_OK(kp_lombscargle_multiband_batch_peaks_f64(ctx, NULL, T, yb, W, bands, HALVES, 2, f0, df,
                                                       NF, &peaks, index, value));
    expect_no_message(__LINE__);
    CHECK(index[2 * K] == POISON_INDEX && value[2 * K] == POISON,
          "kp_lombscargle_multiband_batch_peaks_f64 wrote past nseries x k");
    check_top_peaks_of(rows, cycles, index, value, K, separation, "multiband f64");

    /* f32, NULL peak options: one peak a series. */
    for (i = 0; i < NX; i++)
        ybf[i] = (float)yb[i];
    EXPECT_OK(kp_lombscargle_multiband_batch_f32(ctx, NULL, TF, ybf, WF, bands, HALVES, 2, f0, df,
                                                 NF, rowsf));
    for (i = 0; i < 2 * NF; i++)
        rowsd[i] = (double)rowsf[i];
    for (i = 0; i <= 2 * K; i++) {
        index[i] = POISON_INDEX;
        value[i] = POISON;
    }
    EXPECT_OK(kp_lombscargle_multiband_batch_peaks_f32(ctx, NULL, TF, ybf, WF, bands, HALVES, 2, f0,
                                                       df, NF, NULL, index, value));
    CHECK(index[2] == POISON_INDEX && value[2] == POISON,
          "NULL peak options wrote more than one peak a series");
    check_top_peaks_of(rowsd, cycles, index, value, 1, 0.0, "multiband f32, NULL peak options");

    /* Refusals. */
    for (i = 0; i <= 2 * K; i++) {
        index[i] = POISON_INDEX;
        value[i] = POISON;
    }
    peaks.k = 0;
    EXPECT_ERR(kp_lombscargle_multiband_batch_peaks_f64(ctx, NULL, T, yb, W, bands, HALVES, 2, f0,
                                                        df, NF, &peaks, index, value),
               KP_ERROR_INVALID_ARGUMENT, "k");
    peaks.k = KP_MAX_PEAKS + 1;
    EXPECT_ERR(kp_lombscargle_multiband_batch_peaks_f64(ctx, NULL, T, yb, W, bands, HALVES, 2, f0,
                                                        df, NF, &peaks, index, value),
               KP_ERROR_INVALID_ARGUMENT, "k");
    peaks.k = 2;
    peaks.separation = -1.0;
    EXPECT_ERR(kp_lombscargle_multiband_batch_peaks_f64(ctx, NULL, T, yb, W, bands, HALVES, 2, f0,
                                                        df, NF, &peaks, index, value),
               KP_ERROR_INVALID_ARGUMENT, "separation");
    EXPECT_ERR(kp_lombscargle_multiband_batch_peaks_f64(ctx, NULL, T, yb, W, bands, HALVES, 2, f0,
                                                        df, NF, NULL, NULL, value),
               KP_ERROR_NULL_POINTER, "index");
    EXPECT_ERR(kp_lombscargle_multiband_batch_peaks_f64(ctx, NULL, T, yb, W, NULL, HALVES, 2, f0,
                                                        df, NF, NULL, index, value),
               KP_ERROR_NULL_POINTER, "bands");
    EXPECT_ERR(kp_lombscargle_multiband_batch_peaks_f64(ctx, NULL, T, yb, W, bands, HALVES, 2, f0,
                                                        df, NF, NULL, index, (double *)yb),
               KP_ERROR_INVALID_ARGUMENT, "value");
    EXPECT_ERR(kp_lombscargle_multiband_batch_peaks_f64(ctx, NULL, T, yb, W, bands, decreasing, 2,
                                                        f0, df, NF, NULL, index, value),
               KP_ERROR_INVALID_ARGUMENT, "offsets");
    for (i = 0; i <= 2 * K; i++)
        CHECK(index[i] == POISON_INDEX && value[i] == POISON,
              "a failing multiband peaks call wrote index or value (%zu)", i);
}

/* kp_lombscargle_chi2_batch_peaks_f64/_f32 on the two halves (one term,
 * cycles per unit time): the coarse peaks are the local maxima of
 * kp_lombscargle_chi2_batch_f64's rows, bit for bit; refined ones never
 * lower, within one step; FAPs in [0, 1] when asked, NaN-free; a
 * multi-term FAP is refused, every output left alone. */
static void check_chi2_peaks(const kp_context *ctx, const char *name)
{
    static char title[64];
    static double rows[2 * NF], frequency[2 * K + 1], power[2 * K + 1], fap[2 * K + 1];
    static double coarse[2 * K];
    static int64_t index[2 * K + 1], coarse_index[2 * K];
    const double f0 = F[0] / (2.0 * 3.14159265358979323846);
    const double df = (F[1] - F[0]) / (2.0 * 3.14159265358979323846);
    kp_chi2_options opts = kp_chi2_options_default();
    kp_peak_options peaks = kp_peak_options_default();
    kp_refined_peak_options search = kp_refined_peak_options_default();
    size_t i, s;

    snprintf(title, sizeof title, "chi2 batch peaks (%s)", name);
    group = title;
    CHECK(search.refine_points == 0 && search.refine_steps == 1 && search.fap == 0 &&
              search.fap_method == KP_FAP_BALUEV,
          "default search options");
    peaks.k = K;
    EXPECT_OK(kp_lombscargle_chi2_batch_f64(ctx, &opts, T, Y, NULL, HALVES, 2, f0, df, NF, rows));
    for (i = 0; i <= 2 * K; i++) {
        index[i] = POISON_INDEX;
        frequency[i] = power[i] = fap[i] = POISON;
    }
    EXPECT_OK(kp_lombscargle_chi2_batch_peaks_f64(ctx, &opts, T, Y, NULL, HALVES, 2, f0, df, NF, &peaks,
                                                  NULL, index, frequency, power, NULL));
    expect_no_message(__LINE__);
    CHECK(index[2 * K] == POISON_INDEX && power[2 * K] == POISON, "wrote past nseries x k");
    for (s = 0; s < 2; s++)
        for (i = 0; i < K; i++) {
            int64_t j = index[s * K + i];
            const double *row = rows + s * NF;
            CHECK(j >= 0 && j < NF, "series %zu: peak %zu at %lld", s, i, (long long)j);
            CHECK(memcmp(&power[s * K + i], &row[j], sizeof(double)) == 0, "series %zu: peak %zu value", s, i);
            CHECK((j == 0 || row[j - 1] < row[j]) && (j + 1 == NF || row[j + 1] <= row[j]),
                  "series %zu: peak %zu is no maximum", s, i);
            CHECK(frequency[s * K + i] == f0 + (double)j * df, "series %zu: peak %zu frequency", s, i);
            CHECK(i > 0 || (size_t)j == argmax_d(row, NF), "series %zu: the best peak is not the argmax", s);
        }
    memcpy(coarse, power, sizeof coarse);
    memcpy(coarse_index, index, sizeof coarse_index);

    /* Refined on 8 points a step, one step each side, with Baluev's FAP. */
    search.refine_points = 8;
    search.fap = 1;
    EXPECT_OK(kp_lombscargle_chi2_batch_peaks_f64(ctx, &opts, T, Y, NULL, HALVES, 2, f0, df, NF, &peaks,
                                                  &search, index, frequency, power, fap));
    for (i = 0; i < 2 * K; i++) {
        CHECK(index[i] == coarse_index[i], "refined peak %zu moved its coarse index", i);
        CHECK(power[i] >= coarse[i], "refined peak %zu lower: %g < %g", i, power[i], coarse[i]);
        CHECK(fabs(frequency[i] - (f0 + (double)index[i] * df)) <= df * (1 + 1e-12),
              "refined peak %zu moved more than a step", i);
        CHECK(fap[i] >= 0.0 && fap[i] <= 1.0, "fap %g of peak %zu", fap[i], i);
    }

    /* f32 with NULL options: one peak a series. */
    {
        static float tf[NX], yf[NX];
        for (i = 0; i < NX; i++) {
            tf[i] = (float)T[i];
            yf[i] = (float)Y[i];
        }
        for (i = 0; i <= 2 * K; i++)
            index[i] = POISON_INDEX;
        EXPECT_OK(kp_lombscargle_chi2_batch_peaks_f32(ctx, NULL, tf, yf, NULL, HALVES, 2, f0, df, NF, NULL,
                                                      NULL, index, frequency, power, NULL));
        CHECK(index[0] >= 0 && index[1] >= 0 && index[2] == POISON_INDEX, "NULL peak options: one a series");
    }

    /* Refusals leave every output alone. */
    for (i = 0; i <= 2 * K; i++) {
        index[i] = POISON_INDEX;
        frequency[i] = power[i] = fap[i] = POISON;
    }
    opts.nterms = 2;
    EXPECT_ERR(kp_lombscargle_chi2_batch_peaks_f64(ctx, &opts, T, Y, NULL, HALVES, 2, f0, df, NF, &peaks,
                                                   &search, index, frequency, power, fap),
               KP_ERROR_INVALID_ARGUMENT, "multi-term");
    opts.nterms = 1;
    EXPECT_ERR(kp_lombscargle_chi2_batch_peaks_f64(ctx, &opts, T, Y, NULL, HALVES, 2, f0, df, NF, &peaks,
                                                   &search, index, frequency, power, NULL),
               KP_ERROR_NULL_POINTER, "fap");
    search.refine_points = 1;
    EXPECT_ERR(kp_lombscargle_chi2_batch_peaks_f64(ctx, &opts, T, Y, NULL, HALVES, 2, f0, df, NF, &peaks,
                                                   &search, index, frequency, power, fap),
               KP_ERROR_INVALID_ARGUMENT, "points");
    for (i = 0; i <= 2 * K; i++)
        CHECK(index[i] == POISON_INDEX && frequency[i] == POISON && power[i] == POISON && fap[i] == POISON,
              "a failing call wrote an output (%zu)", i);
    group_done();
}

/* The multiband periodogram (astropy's LombScargleMultiband, frequencies in
 * cycles per unit time): the signal split over three bands, each with a
 * level and a gain of its own; with the defaults (flexible, reg_base NaN
 * for none) and with the fast method, the peak at the signal's frequency
 * and powers in [0, 1]; bad calls leave out alone; a batch's best peaks
 * (check_multiband_peaks). */
static void check_multiband(const kp_context *ctx, const char *name)
{
    static char title[64];
    static double cycles[NF], out[NF + 1], yb[NX];
    static uint32_t bands[NX];
    static const uint32_t labels[3] = {7u, 42u, 4000000000u};
    static const double level[3] = {0.0, 3.0, -1.5}, gain[3] = {1.0, 0.6, 1.4};
    kp_multiband_options opts = kp_multiband_options_default();
    uint32_t method;
    size_t k;

    snprintf(title, sizeof title, "multiband (%s)", name);
    group = title;
    CHECK(opts.method == KP_MULTIBAND_FLEXIBLE && opts.nterms_base == 1 && opts.nterms_band == 1,
          "default method %u, nterms %u and %u", opts.method, opts.nterms_base, opts.nterms_band);
    CHECK(isnan(opts.reg_base) && opts.reg_band == 1e-6, "default ridges %g and %g",
          opts.reg_base, opts.reg_band);
    CHECK(opts.regularize_by_trace && opts.center_data && opts.fit_mean &&
              opts.normalization == KP_CHI2_STANDARD,
          "default flags");
    for (k = 0; k < NF; k++)
        cycles[k] = F[k] / (2.0 * 3.14159265358979323846);
    for (k = 0; k < NX; k++) {
        bands[k] = labels[k % 3];
        yb[k] = level[k % 3] + gain[k % 3] * Y[k];
    }
    for (method = KP_MULTIBAND_FLEXIBLE; method <= KP_MULTIBAND_FAST; method++) {
        opts.method = method;
        fill_d(out, NF + 1, POISON);
        EXPECT_OK(kp_lombscargle_multiband_f64(ctx, &opts, T, yb, method ? W : NULL, bands, NX,
                                               cycles, NF, out));
        expect_no_message(__LINE__);
        CHECK(out[NF] == POISON, "kp_lombscargle_multiband_f64 wrote past nf");
        for (k = 0; k < NF; k++)
            CHECK(out[k] >= 0.0 && out[k] <= 1.0 + 1e-12, "method %u: power %g at %zu outside [0, 1]",
                  method, out[k], k);
        k = argmax_d(out, NF);
        CHECK(k + 1 >= PEAK && k <= PEAK + 1, "method %u: peak at index %zu, expected %d", method,
              k, PEAK);
        CHECK(out[k] > 0.8, "method %u: peak power %g, expected near 1", method, out[k]);
    }

    fill_d(out, NF + 1, POISON);
    EXPECT_ERR(kp_lombscargle_multiband_f64(ctx, NULL, T, yb, NULL, NULL, NX, cycles, NF, out),
               KP_ERROR_NULL_POINTER, "bands");
    opts = kp_multiband_options_default();
    opts.reg_band = -1.0;
    EXPECT_ERR(kp_lombscargle_multiband_f64(ctx, &opts, T, yb, NULL, bands, NX, cycles, NF, out),
               KP_ERROR_INVALID_ARGUMENT, "reg_band");
    opts = kp_multiband_options_default();
    opts.method = 2;
    EXPECT_ERR(kp_lombscargle_multiband_f64(ctx, &opts, T, yb, NULL, bands, NX, cycles, NF, out),
               KP_ERROR_INVALID_ARGUMENT, "method");
    /* out over an input (y): refused, y unchanged. */
    EXPECT_ERR(kp_lombscargle_multiband_f64(ctx, NULL, T, yb, NULL, bands, NX, cycles, NX, yb),
               KP_ERROR_INVALID_ARGUMENT, "out");
    CHECK(yb[0] == level[0] + gain[0] * Y[0], "a refused call wrote over y");
    CHECK(all_equal_d(out, NF + 1, POISON), "a failed multiband call wrote its output");
    check_multiband_peaks(ctx, cycles, yb, bands);
    CHECK(yb[0] == level[0] + gain[0] * Y[0], "a refused peaks call wrote over y");
    group_done();
}

/* Amplitude mode writes exactly 2 nf values: interleaved (re, im). */
static void check_amplitude(const kp_context *ctx, const char *name, double *amp)
{
    static char title[64];
    kp_lombscargle_options o = options(KP_NORMALIZE_AMPLITUDE, 1, 0);
    size_t len = kp_lombscargle_output_len(NF, &o);
    double modulus;
    size_t i;

    snprintf(title, sizeof title, "amplitude mode (%s)", name);
    group = title;
    CHECK(len == 2 * NF, "kp_lombscargle_output_len = %zu", len);
    fill_d(amp, len + 1, POISON);
    EXPECT_OK(kp_lombscargle_f64(ctx, T, Y, W, NX, F, NF, &o, amp, len));
    CHECK(amp[len] == POISON, "wrote past 2 nf values");
    for (i = 0; i < len; i++)
        CHECK(amp[i] != POISON && isfinite(amp[i]), "amp[%zu] = %g was not written", i, amp[i]);
    modulus = hypot(amp[2 * PEAK], amp[2 * PEAK + 1]);
    CHECK(fabs(modulus - AMPLITUDE) < 0.25, "|amplitude| at the peak is %g, expected ~%g", modulus,
          AMPLITUDE);

    /* Too short by the imaginary halves: rejected, untouched. */
    fill_d(amp, len + 1, POISON);
    EXPECT_ERR(kp_lombscargle_f64(ctx, T, Y, W, NX, F, NF, &o, amp, NF), KP_ERROR_INVALID_ARGUMENT,
               NULL);
    CHECK(all_equal_d(amp, len + 1, POISON), "out changed on failure");
    /* restore the result for the caller */
    EXPECT_OK(kp_lombscargle_f64(ctx, T, Y, W, NX, F, NF, &o, amp, len));
    group_done();
}

/* CPU and AUTO (the GPU on a GPU machine) agree in f64 for every mode. */
static void check_backends_agree(const kp_context *cpu, const kp_context *autoctx, int auto_is_gpu)
{
    static double a[2 * NF], b[2 * NF];
    static float af[2 * NF], bf[2 * NF];
    kp_lombscargle_options modes[4];
    int m;

    group = auto_is_gpu ? "cpu vs auto (gpu) agree" : "cpu vs auto (cpu) agree";
    modes[0] = options(KP_NORMALIZE_POWER, 0, 0);
    modes[1] = options(KP_NORMALIZE_NORMALIZE, 1, 0);
    modes[2] = options(KP_NORMALIZE_AMPLITUDE, 1, 1);
    modes[3] = options(KP_NORMALIZE_POWER, 1, 1);
    for (m = 0; m < 4; m++) {
        size_t len = kp_lombscargle_output_len(NF, &modes[m]);
        const double *w = (m % 2) ? W : NULL;
        const float *wf = (m % 2) ? WF : NULL;
        double e;
        EXPECT_OK(kp_lombscargle_f64(cpu, T, Y, w, NX, F, NF, &modes[m], a, len));
        EXPECT_OK(kp_lombscargle_f64(autoctx, T, Y, w, NX, F, NF, &modes[m], b, len));
        e = scaled_diff_d(b, a, len);
        CHECK(e <= 1e-9, "mode %d: f64 scaled difference %g", m, e);
        EXPECT_OK(kp_lombscargle_f32(cpu, TF, YF, wf, NX, FF, NF, &modes[m], af, len));
        EXPECT_OK(kp_lombscargle_f32(autoctx, TF, YF, wf, NX, FF, NF, &modes[m], bf, len));
        e = scaled_diff_f(bf, af, len);
        CHECK(e <= 1e-2, "mode %d: f32 scaled difference %g", m, e);
    }
    group_done();
}

/* Every rejected call returns the right status, says why, and leaves out alone. */
static void check_errors(const kp_context *ctx, const char *name)
{
    static char title[64];
    static double out[2 * NF + 1], bad[NX], badf[NF];
    static float outf[NF + 1], badff[NX];
    kp_lombscargle_options amp = options(KP_NORMALIZE_AMPLITUDE, 0, 0);
    kp_lombscargle_options seven = options(7, 0, 0);
    size_t i;

    snprintf(title, sizeof title, "error paths (%s)", name);
    group = title;

#define UNTOUCHED() CHECK(all_equal_d(out, 2 * NF + 1, POISON), "out was written by a failing call")
#define UNTOUCHED_F() CHECK(all_equal_f(outf, NF + 1, (float)POISON), "out was written by a failing call")
    fill_d(out, 2 * NF + 1, POISON);
    fill_f(outf, NF + 1, (float)POISON);

    EXPECT_ERR(kp_lombscargle_f64(NULL, T, Y, NULL, NX, F, NF, NULL, out, NF),
               KP_ERROR_NULL_POINTER, "ctx");
    UNTOUCHED();
    EXPECT_ERR(kp_lombscargle_f64(ctx, NULL, Y, NULL, NX, F, NF, NULL, out, NF),
               KP_ERROR_NULL_POINTER, "t");
    UNTOUCHED();
    EXPECT_ERR(kp_lombscargle_f64(ctx, T, NULL, NULL, NX, F, NF, NULL, out, NF),
               KP_ERROR_NULL_POINTER, "y");
    UNTOUCHED();
    EXPECT_ERR(kp_lombscargle_f64(ctx, T, Y, NULL, NX, NULL, NF, NULL, out, NF),
               KP_ERROR_NULL_POINTER, "freqs");
    UNTOUCHED();
    EXPECT_ERR(kp_lombscargle_f64(ctx, T, Y, NULL, NX, F, NF, NULL, NULL, NF),
               KP_ERROR_NULL_POINTER, "out");

    EXPECT_ERR(kp_lombscargle_f64(ctx, T, Y, NULL, NX, F, NF, NULL, out, NF - 1),
               KP_ERROR_INVALID_ARGUMENT, "out_len");
    UNTOUCHED();
    EXPECT_ERR(kp_lombscargle_f64(ctx, T, Y, NULL, NX, F, NF, NULL, out, NF + 1),
               KP_ERROR_INVALID_ARGUMENT, "out_len");
    UNTOUCHED();
    EXPECT_ERR(kp_lombscargle_f64(ctx, T, Y, NULL, NX, F, NF, NULL, out, 0),
               KP_ERROR_INVALID_ARGUMENT, "out_len");
    UNTOUCHED();
    EXPECT_ERR(kp_lombscargle_f64(ctx, T, Y, NULL, NX, F, NF, &amp, out, NF),
               KP_ERROR_INVALID_ARGUMENT, "out_len");
    UNTOUCHED();

    /* A negative frequency. */
    memcpy(badf, F, sizeof F);
    badf[NF / 2] = -0.5;
    EXPECT_ERR(kp_lombscargle_f64(ctx, T, Y, NULL, NX, badf, NF, NULL, out, NF),
               KP_ERROR_INVALID_ARGUMENT, NULL);
    UNTOUCHED();
    EXPECT_ERR(kp_lombscargle_f64(ctx, T, Y, NULL, NX, badf, NF, &amp, out, 2 * NF),
               KP_ERROR_INVALID_ARGUMENT, NULL);
    UNTOUCHED();
    /* A NaN in y. */
    memcpy(bad, Y, sizeof Y);
    bad[17] = NAN;
    EXPECT_ERR(kp_lombscargle_f64(ctx, T, bad, NULL, NX, F, NF, NULL, out, NF),
               KP_ERROR_INVALID_ARGUMENT, NULL);
    UNTOUCHED();
    /* An infinite time. */
    memcpy(bad, T, sizeof T);
    bad[NX - 1] = INFINITY;
    EXPECT_ERR(kp_lombscargle_f64(ctx, bad, Y, NULL, NX, F, NF, NULL, out, NF),
               KP_ERROR_INVALID_ARGUMENT, NULL);
    UNTOUCHED();
    /* A negative weight. */
    memcpy(bad, W, sizeof W);
    bad[3] = -1.0;
    EXPECT_ERR(kp_lombscargle_f64(ctx, T, Y, bad, NX, F, NF, NULL, out, NF),
               KP_ERROR_INVALID_ARGUMENT, NULL);
    UNTOUCHED();
    /* Weights that sum to zero. */
    fill_d(bad, NX, 0.0);
    EXPECT_ERR(kp_lombscargle_f64(ctx, T, Y, bad, NX, F, NF, NULL, out, NF),
               KP_ERROR_INVALID_ARGUMENT, NULL);
    UNTOUCHED();
    /* Empty inputs. */
    EXPECT_ERR(kp_lombscargle_f64(ctx, T, Y, NULL, 0, F, NF, NULL, out, NF),
               KP_ERROR_INVALID_ARGUMENT, NULL);
    UNTOUCHED();
    EXPECT_ERR(kp_lombscargle_f64(ctx, T, Y, NULL, NX, F, 0, NULL, out, 0),
               KP_ERROR_INVALID_ARGUMENT, NULL);
    UNTOUCHED();
    /* Normalize mode on an all-zero series (zero variance). */
    {
        kp_lombscargle_options norm = options(KP_NORMALIZE_NORMALIZE, 1, 0);
        fill_d(bad, NX, 0.0);
        EXPECT_ERR(kp_lombscargle_f64(ctx, T, bad, NULL, NX, F, NF, &norm, out, NF),
                   KP_ERROR_INVALID_ARGUMENT, NULL);
        UNTOUCHED();
    }
    /* An unknown normalize value. */
    EXPECT_ERR(kp_lombscargle_f64(ctx, T, Y, NULL, NX, F, NF, &seven, out, NF),
               KP_ERROR_INVALID_ARGUMENT, NULL);
    UNTOUCHED();
    CHECK(strstr(kp_last_error_message(), "7") != NULL, "the message \"%s\" does not mention 7",
          kp_last_error_message());

    /* Single precision: the same checks, a representative subset. */
    EXPECT_ERR(kp_lombscargle_f32(NULL, TF, YF, NULL, NX, FF, NF, NULL, outf, NF),
               KP_ERROR_NULL_POINTER, "ctx");
    UNTOUCHED_F();
    EXPECT_ERR(kp_lombscargle_f32(ctx, NULL, YF, NULL, NX, FF, NF, NULL, outf, NF),
               KP_ERROR_NULL_POINTER, "t");
    UNTOUCHED_F();
    EXPECT_ERR(kp_lombscargle_f32(ctx, TF, NULL, NULL, NX, FF, NF, NULL, outf, NF),
               KP_ERROR_NULL_POINTER, "y");
    UNTOUCHED_F();
    EXPECT_ERR(kp_lombscargle_f32(ctx, TF, YF, NULL, NX, NULL, NF, NULL, outf, NF),
               KP_ERROR_NULL_POINTER, "freqs");
    UNTOUCHED_F();
    EXPECT_ERR(kp_lombscargle_f32(ctx, TF, YF, NULL, NX, FF, NF, NULL, NULL, NF),
               KP_ERROR_NULL_POINTER, "out");
    EXPECT_ERR(kp_lombscargle_f32(ctx, TF, YF, NULL, NX, FF, NF, NULL, outf, NF - 1),
               KP_ERROR_INVALID_ARGUMENT, "out_len");
    UNTOUCHED_F();
    for (i = 0; i < NX; i++)
        badff[i] = YF[i];
    badff[0] = (float)NAN;
    EXPECT_ERR(kp_lombscargle_f32(ctx, TF, badff, NULL, NX, FF, NF, NULL, outf, NF),
               KP_ERROR_INVALID_ARGUMENT, NULL);
    UNTOUCHED_F();
    for (i = 0; i < NX; i++)
        badff[i] = WF[i];
    badff[NX - 1] = -0.25f;
    EXPECT_ERR(kp_lombscargle_f32(ctx, TF, YF, badff, NX, FF, NF, NULL, outf, NF),
               KP_ERROR_INVALID_ARGUMENT, NULL);
    UNTOUCHED_F();
    {
        static float negf[NF];
        memcpy(negf, FF, sizeof FF);
        negf[0] = -1.0f;
        EXPECT_ERR(kp_lombscargle_f32(ctx, TF, YF, NULL, NX, negf, NF, NULL, outf, NF),
                   KP_ERROR_INVALID_ARGUMENT, NULL);
        UNTOUCHED_F();
    }
    EXPECT_ERR(kp_lombscargle_f32(ctx, TF, YF, NULL, NX, FF, NF, &seven, outf, NF),
               KP_ERROR_INVALID_ARGUMENT, NULL);
    UNTOUCHED_F();
#undef UNTOUCHED
#undef UNTOUCHED_F

    /* A success afterwards clears the message. */
    EXPECT_OK(kp_lombscargle_f32(ctx, TF, YF, NULL, NX, FF, NF, NULL, outf, NF));
    expect_no_message(__LINE__);
    group_done();
}

/* GPU-only functions on a CPU context: KP_ERROR_NO_GPU, nothing written. */
static void check_cpu_context_has_no_device(const kp_context *cpu)
{
    /* Never dereferenced: the context check comes first. */
    const uint64_t fake = 0x10000;
    uint64_t dptr = 77;
    double host[4] = {1, 2, 3, 4};
    kp_status s;

    group = "device functions on a CPU context";
    EXPECT_ERR(kp_lombscargle_device_f64(cpu, fake, fake, 0, NX, fake, NF, NULL, fake, NF, 0),
               KP_ERROR_NO_GPU, NULL);
    EXPECT_ERR(kp_lombscargle_device_f32(cpu, fake, fake, fake, NX, fake, NF, NULL, fake, NF, 0),
               KP_ERROR_NO_GPU, NULL);
    EXPECT_ERR(kp_device_alloc(cpu, 64, &dptr), KP_ERROR_NO_GPU, NULL);
    CHECK(dptr == 77, "a failed kp_device_alloc wrote *dptr");
    EXPECT_ERR(kp_device_free(cpu, fake), KP_ERROR_NO_GPU, NULL);
    EXPECT_ERR(kp_memcpy_htod(cpu, fake, (const uint8_t *)host, sizeof host), KP_ERROR_NO_GPU, NULL);
    EXPECT_ERR(kp_memcpy_dtoh(cpu, (uint8_t *)host, fake, sizeof host), KP_ERROR_NO_GPU, NULL);
    CHECK(host[0] == 1 && host[3] == 4, "a failed kp_memcpy_dtoh wrote dst");
    EXPECT_ERR(kp_stream_synchronize(cpu, 0), KP_ERROR_NO_GPU, NULL);
    EXPECT_ERR(kp_lombscargle_device_f64(NULL, fake, fake, 0, NX, fake, NF, NULL, fake, NF, 0),
               KP_ERROR_NULL_POINTER, "ctx");
    /* NULL device pointers on a CPU context: either answer is reasonable. */
    s = kp_lombscargle_device_f64(cpu, 0, fake, 0, NX, fake, NF, NULL, fake, NF, 0);
    CHECK(s == KP_ERROR_NULL_POINTER || s == KP_ERROR_NO_GPU, "t == 0 on a CPU context: %d (%s)",
          (int)s, status_name(s));
    group_done();
}

static uint64_t upload(const kp_context *gpu, const void *src, size_t bytes)
{
    uint64_t dptr = 0;
    EXPECT_OK(kp_device_alloc(gpu, bytes, &dptr));
    CHECK(dptr != 0, "kp_device_alloc returned KP_OK and address 0");
    EXPECT_OK(kp_memcpy_htod(gpu, dptr, (const uint8_t *)src, bytes));
    return dptr;
}

/* Device pointers in and out, on the default stream, against the host-pointer
 * entry points of the same context. */
static void check_device_path(const kp_context *gpu)
{
    static double host[2 * NF], dev[2 * NF + 1];
    static float hostf[2 * NF], devf[2 * NF + 1];
    kp_lombscargle_options power = kp_lombscargle_options_default();
    kp_lombscargle_options amp = options(KP_NORMALIZE_AMPLITUDE, 1, 0);
    kp_lombscargle_options seven = options(7, 0, 0);
    uint64_t dt, dy, dw, df, dout, dtf, dyf, dwf, dff, doutf, dummy = 0;
    double e;

    group = "device pointers (gpu, stream 0)";
    dt = upload(gpu, T, sizeof T);
    dy = upload(gpu, Y, sizeof Y);
    dw = upload(gpu, W, sizeof W);
    df = upload(gpu, F, sizeof F);
    EXPECT_OK(kp_device_alloc(gpu, 2 * NF * sizeof(double), &dout));
    dtf = upload(gpu, TF, sizeof TF);
    dyf = upload(gpu, YF, sizeof YF);
    dwf = upload(gpu, WF, sizeof WF);
    dff = upload(gpu, FF, sizeof FF);
    EXPECT_OK(kp_device_alloc(gpu, 2 * NF * sizeof(float), &doutf));

    /* f64, power, no weights */
    EXPECT_OK(kp_lombscargle_device_f64(gpu, dt, dy, 0, NX, df, NF, NULL, dout, NF, 0));
    EXPECT_OK(kp_stream_synchronize(gpu, 0));
    fill_d(dev, 2 * NF + 1, POISON);
    EXPECT_OK(kp_memcpy_dtoh(gpu, (uint8_t *)dev, dout, NF * sizeof(double)));
    EXPECT_OK(kp_lombscargle_f64(gpu, T, Y, NULL, NX, F, NF, &power, host, NF));
    e = scaled_diff_d(dev, host, NF);
    CHECK(e <= 1e-12, "f64 power: device vs host pointers, scaled difference %g", e);
    CHECK(argmax_d(dev, NF) + 1 >= PEAK && argmax_d(dev, NF) <= PEAK + 1, "device f64 peak at %zu",
          argmax_d(dev, NF));

    /* f64, amplitude, weighted, floating mean: 2 nf values */
    EXPECT_OK(kp_lombscargle_device_f64(gpu, dt, dy, dw, NX, df, NF, &amp, dout, 2 * NF, 0));
    EXPECT_OK(kp_stream_synchronize(gpu, 0));
    fill_d(dev, 2 * NF + 1, POISON);
    EXPECT_OK(kp_memcpy_dtoh(gpu, (uint8_t *)dev, dout, 2 * NF * sizeof(double)));
    EXPECT_OK(kp_lombscargle_f64(gpu, T, Y, W, NX, F, NF, &amp, host, 2 * NF));
    e = scaled_diff_d(dev, host, 2 * NF);
    CHECK(e <= 1e-12, "f64 amplitude: device vs host pointers, scaled difference %g", e);

    /* f32, power, weighted */
    EXPECT_OK(kp_lombscargle_device_f32(gpu, dtf, dyf, dwf, NX, dff, NF, &power, doutf, NF, 0));
    EXPECT_OK(kp_stream_synchronize(gpu, 0));
    fill_f(devf, 2 * NF + 1, (float)POISON);
    EXPECT_OK(kp_memcpy_dtoh(gpu, (uint8_t *)devf, doutf, NF * sizeof(float)));
    EXPECT_OK(kp_lombscargle_f32(gpu, TF, YF, WF, NX, FF, NF, &power, hostf, NF));
    e = scaled_diff_f(devf, hostf, NF);
    CHECK(e <= 1e-6, "f32 power: device vs host pointers, scaled difference %g", e);
    CHECK(argmax_f(devf, NF) + 1 >= PEAK && argmax_f(devf, NF) <= PEAK + 1,
          "device f32 peak at %zu", argmax_f(devf, NF));

    /* f32, amplitude */
    EXPECT_OK(kp_lombscargle_device_f32(gpu, dtf, dyf, 0, NX, dff, NF, &amp, doutf, 2 * NF, 0));
    EXPECT_OK(kp_stream_synchronize(gpu, 0));
    EXPECT_OK(kp_memcpy_dtoh(gpu, (uint8_t *)devf, doutf, 2 * NF * sizeof(float)));
    EXPECT_OK(kp_lombscargle_f32(gpu, TF, YF, NULL, NX, FF, NF, &amp, hostf, 2 * NF));
    e = scaled_diff_f(devf, hostf, 2 * NF);
    CHECK(e <= 1e-6, "f32 amplitude: device vs host pointers, scaled difference %g", e);
    expect_no_message(__LINE__);

    /* Errors of the device path. */
    EXPECT_ERR(kp_lombscargle_device_f64(gpu, 0, dy, 0, NX, df, NF, NULL, dout, NF, 0),
               KP_ERROR_NULL_POINTER, "t");
    EXPECT_ERR(kp_lombscargle_device_f32(gpu, 0, dyf, 0, NX, dff, NF, NULL, doutf, NF, 0),
               KP_ERROR_NULL_POINTER, "t");
    EXPECT_ERR(kp_lombscargle_device_f64(gpu, dt, 0, 0, NX, df, NF, NULL, dout, NF, 0),
               KP_ERROR_NULL_POINTER, "y");
    EXPECT_ERR(kp_lombscargle_device_f64(gpu, dt, dy, 0, NX, 0, NF, NULL, dout, NF, 0),
               KP_ERROR_NULL_POINTER, "freqs");
    EXPECT_ERR(kp_lombscargle_device_f64(gpu, dt, dy, 0, NX, df, NF, NULL, 0, NF, 0),
               KP_ERROR_NULL_POINTER, "out");
    EXPECT_ERR(kp_lombscargle_device_f64(NULL, dt, dy, 0, NX, df, NF, NULL, dout, NF, 0),
               KP_ERROR_NULL_POINTER, "ctx");
    EXPECT_ERR(kp_lombscargle_device_f64(gpu, dt, dy, 0, NX, df, NF, &seven, dout, NF, 0),
               KP_ERROR_INVALID_ARGUMENT, NULL);
    EXPECT_ERR(kp_lombscargle_device_f64(gpu, dt, dy, 0, 0, df, NF, NULL, dout, NF, 0),
               KP_ERROR_INVALID_ARGUMENT, NULL);
    EXPECT_ERR(kp_lombscargle_device_f64(gpu, dt, dy, 0, NX, df, NF, &amp, dout, NF, 0),
               KP_ERROR_INVALID_ARGUMENT, "out_len");
    EXPECT_ERR(kp_lombscargle_device_f64(gpu, dt, dy, 0, NX, df, 0, NULL, dout, NF, 0),
               KP_ERROR_INVALID_ARGUMENT, NULL);
    EXPECT_ERR(kp_device_alloc(gpu, 0, &dummy), KP_ERROR_INVALID_ARGUMENT, NULL);
    EXPECT_ERR(kp_device_alloc(gpu, 8, NULL), KP_ERROR_NULL_POINTER, "dptr");
    EXPECT_ERR(kp_memcpy_htod(gpu, dt, NULL, 8), KP_ERROR_NULL_POINTER, "src");
    EXPECT_ERR(kp_memcpy_htod(gpu, 0, (const uint8_t *)T, 8), KP_ERROR_NULL_POINTER, "dst");
    EXPECT_ERR(kp_memcpy_dtoh(gpu, NULL, dt, 8), KP_ERROR_NULL_POINTER, "dst");
    EXPECT_ERR(kp_memcpy_dtoh(gpu, (uint8_t *)host, 0, 8), KP_ERROR_NULL_POINTER, "src");

    EXPECT_OK(kp_device_free(gpu, 0));
    EXPECT_OK(kp_device_free(gpu, dt));
    EXPECT_OK(kp_device_free(gpu, dy));
    EXPECT_OK(kp_device_free(gpu, dw));
    EXPECT_OK(kp_device_free(gpu, df));
    EXPECT_OK(kp_device_free(gpu, dout));
    EXPECT_OK(kp_device_free(gpu, dtf));
    EXPECT_OK(kp_device_free(gpu, dyf));
    EXPECT_OK(kp_device_free(gpu, dwf));
    EXPECT_OK(kp_device_free(gpu, dff));
    EXPECT_OK(kp_device_free(gpu, doutf));
    group_done();
}

int main(void)
{
    kp_context *cpu = NULL, *autoctx = NULL;
    int auto_is_gpu = 0;
    static double power_cpu[NF], power_auto[NF], amp_cpu[2 * NF + 1], amp_auto[2 * NF + 1];

    make_signal();
    check_status_strings();
    check_contexts(&cpu, &autoctx, &auto_is_gpu);
    printf("     AUTO context runs on the %s\n", auto_is_gpu ? "GPU" : "CPU");
    check_output_len();
    check_peaks(cpu, "cpu", power_cpu);
    check_peaks(autoctx, auto_is_gpu ? "auto = gpu" : "auto = cpu", power_auto);
    check_amplitude(cpu, "cpu", amp_cpu);
    check_chi2(cpu, "cpu");
    check_chi2(autoctx, auto_is_gpu ? "auto = gpu" : "auto = cpu");
    check_chi2_peaks(cpu, "cpu");
    check_bootstrap(cpu, "cpu");
    check_bootstrap(autoctx, auto_is_gpu ? "auto = gpu" : "auto = cpu");
    check_chi2_peaks(autoctx, auto_is_gpu ? "auto = gpu" : "auto = cpu");
    check_multiband(cpu, "cpu");
    check_multiband(autoctx, auto_is_gpu ? "auto = gpu" : "auto = cpu");
    check_amplitude(autoctx, auto_is_gpu ? "auto = gpu" : "auto = cpu", amp_auto);
    check_backends_agree(cpu, autoctx, auto_is_gpu);
    check_top_peaks(cpu, "cpu");
    check_top_peaks(autoctx, auto_is_gpu ? "auto = gpu" : "auto = cpu");
    check_errors(cpu, "cpu");
    check_errors(autoctx, auto_is_gpu ? "auto = gpu" : "auto = cpu");
    check_cpu_context_has_no_device(cpu);
    if (auto_is_gpu)
        check_device_path(autoctx);
    else
        printf("     no GPU: device-pointer path checked on the CPU context only\n");

    kp_context_destroy(autoctx);
    kp_context_destroy(cpu);
    printf("all checks passed (C, %s)\n", auto_is_gpu ? "GPU" : "CPU only");
    return 0;
}
