/* End-to-end test of the kernpack C ABI for streams, events, pinned memory,
 * asynchronous copies, sums and normalisation (one array and batches),
 * written as a C99 user would. Exit status 0 when every check passes.
 *
 * On a GPU (AUTO context) every function runs for real and results are held
 * to a computation here in C; on a CPU context the host functions must work
 * (the CPU backend) and the GPU-only ones answer KP_ERROR_NO_GPU. With
 * KERNPACK_REQUIRE_GPU=1 a missing GPU is a failure.
 *
 * Built and run by tests/ffi_programs.rs. */
#include "kernpack.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define N 300007        /* one long array: several reduction blocks */
#define NARRAYS 9
#define NSTREAMS 3
#define POISON (-12345.0)

static const char *group = "setup";

#define CHECK(cond, ...)                                                                  \
    do {                                                                                  \
        if (!(cond)) {                                                                    \
            fprintf(stderr, "FAIL [%s] streams.c:%d: check `%s`: ", group, __LINE__, #cond); \
            fprintf(stderr, __VA_ARGS__);                                                 \
            fprintf(stderr, "\n");                                                        \
            exit(1);                                                                      \
        }                                                                                 \
    } while (0)

#define EXPECT(call, want)                                                                  \
    do {                                                                                    \
        kp_status s_ = (call);                                                              \
        CHECK(s_ == (want), "%s returned %d, expected %d: \"%s\"", #call, (int)s_, (int)(want), \
              kp_last_error_message());                                                     \
    } while (0)
#define EXPECT_OK(call) EXPECT(call, KP_OK)

static void group_done(void)
{
    printf("ok   %s\n", group);
    fflush(stdout);
}

static uint64_t rng_state = 0x9e3779b97f4a7c15ULL;
static double uniform(void)
{
    rng_state = rng_state * 6364136223846793005ULL + 1442695040888963407ULL;
    return (double)(rng_state >> 11) / 9007199254740992.0;
}

/* The reference: the sum in long double, in index order. Any two f64
 * summation orders are within n eps sum|x| of it. */
static long double ref_sum_f(const float *x, size_t n, double *magnitude)
{
    long double s = 0, m = 0;
    size_t i;
    for (i = 0; i < n; i++)
        s += x[i], m += fabsl((long double)x[i]);
    *magnitude = (double)m;
    return s;
}

static int close_sum(double got, long double want, size_t n, double magnitude)
{
    return fabsl((long double)got - want) <= (long double)(n + 1) * 2.3e-16L * magnitude + 1e-300L;
}

/* ---- arrays: lengths with an empty one, a single value, a zero sum ---- */
static const size_t LENGTHS[NARRAYS] = {1000, 0, 1, 5000, 4, 70001, 333, 2, 12345};
static int64_t OFFSETS[NARRAYS + 1];
static float XF[1000 + 0 + 1 + 5000 + 4 + 70001 + 333 + 2 + 12345];
static double XD[sizeof XF / sizeof XF[0]];
#define TOTAL (sizeof XF / sizeof XF[0])

static void make_arrays(void)
{
    size_t a, i, at = 0;
    OFFSETS[0] = 0;
    for (a = 0; a < NARRAYS; a++) {
        for (i = 0; i < LENGTHS[a]; i++, at++) {
            XD[at] = 0.25 + uniform();
            XF[at] = (float)XD[at];
        }
        OFFSETS[a + 1] = at;
    }
    /* array 4: 1, -1, 0.5, -0.5: exactly 0 in any order */
    at = (size_t)OFFSETS[4];
    XF[at] = 1.0f, XF[at + 1] = -1.0f, XF[at + 2] = 0.5f, XF[at + 3] = -0.5f;
    for (i = 0; i < 4; i++)
        XD[at + i] = XF[at + i];
    /* array 7: a NaN */
    XF[OFFSETS[7]] = NAN;
    XD[OFFSETS[7]] = NAN;
}

static int bad_array(size_t a) { return a == 1 || a == 4 || a == 7; }

static int same_f(const float *a, const float *b, size_t n)
{
    return n == 0 || memcmp(a, b, n * sizeof *a) == 0;
}

/* ---- host entry points: any backend ---- */
static void check_host(const kp_context *ctx, const char *name)
{
    static char title[64];
    static float x[N], copy[N], xb[TOTAL];
    static double xd[N];
    double sum = POISON, mag, sums[NARRAYS];
    int32_t status[NARRAYS];
    long double want;
    size_t i, a;

    snprintf(title, sizeof title, "host sum and normalise (%s)", name);
    group = title;
    for (i = 0; i < N; i++)
        x[i] = (float)(uniform() - 0.3), xd[i] = x[i];
    want = ref_sum_f(x, N, &mag);
    EXPECT_OK(kp_sum_f32(ctx, x, N, &sum));
    CHECK(close_sum(sum, want, N, mag), "f32 sum %.17g vs %.17Lg", sum, want);
    sum = POISON;
    EXPECT_OK(kp_sum_f64(ctx, xd, N, &sum));
    CHECK(close_sum(sum, want, N, mag), "f64 sum %.17g vs %.17Lg", sum, want);

    memcpy(copy, x, sizeof x);
    sum = POISON;
    EXPECT_OK(kp_normalize_f32(ctx, x, N, &sum));
    CHECK(close_sum(sum, want, N, mag), "normalise sum %.17g", sum);
    for (i = 0; i < N; i++)
        CHECK(x[i] == (float)((double)copy[i] * (1.0 / sum)), "x[%zu] = %g, want %g", i, (double)x[i],
              (double)copy[i] / sum);
    EXPECT_OK(kp_normalize_f64(ctx, xd, N, NULL));
    {
        double check = 0;
        for (i = 0; i < N; i++)
            check += xd[i];
        CHECK(fabs(check - 1.0) < 1e-9, "f64 normalised sum %.17g", check);
    }
    /* A zero sum: an error, x and sum untouched. */
    x[0] = 2.0f, x[1] = -2.0f;
    sum = POISON;
    EXPECT(kp_normalize_f32(ctx, x, 2, &sum), KP_ERROR_INVALID_ARGUMENT);
    CHECK(x[0] == 2.0f && x[1] == -2.0f && sum == POISON, "changed on failure");
    EXPECT(kp_normalize_f32(ctx, x, 0, &sum), KP_ERROR_INVALID_ARGUMENT);
    EXPECT(kp_normalize_f32(ctx, NULL, 5, &sum), KP_ERROR_NULL_POINTER);
    EXPECT(kp_sum_f32(ctx, NULL, 5, &sum), KP_ERROR_NULL_POINTER);
    EXPECT(kp_sum_f32(ctx, x, 5, NULL), KP_ERROR_NULL_POINTER);
    EXPECT(kp_sum_f64(NULL, xd, 5, &sum), KP_ERROR_NULL_POINTER);
    group_done();

    snprintf(title, sizeof title, "host batched normalise (%s)", name);
    group = title;
    memcpy(xb, XF, sizeof XF);
    for (a = 0; a < NARRAYS; a++)
        sums[a] = POISON, status[a] = -7;
    EXPECT_OK(kp_normalize_batched_f32(ctx, xb, OFFSETS, NARRAYS, sums, status));
    for (a = 0; a < NARRAYS; a++) {
        size_t lo = (size_t)OFFSETS[a], n = LENGTHS[a];
        CHECK(status[a] == (bad_array(a) ? 1 : 0), "array %zu: status %d", a, (int)status[a]);
        if (bad_array(a)) {
            CHECK(same_f(xb + lo, XF + lo, n), "array %zu changed although it failed", a);
            continue;
        }
        want = ref_sum_f(XF + lo, n, &mag);
        CHECK(close_sum(sums[a], want, n, mag), "array %zu: sum %.17g vs %.17Lg", a, sums[a], want);
        if (!strstr(name, "cpu")) {
            /* GPU: the sum has the bits of kp_sum_f32 of the array alone. */
            double alone;
            EXPECT_OK(kp_sum_f32(ctx, XF + lo, n, &alone));
            CHECK(memcmp(&alone, &sums[a], sizeof alone) == 0, "array %zu: %.17g vs alone %.17g", a,
                  sums[a], alone);
        }
        for (i = 0; i < n; i++)
            CHECK(xb[lo + i] == (float)((double)XF[lo + i] * (1.0 / sums[a])), "array %zu value %zu", a, i);
    }
    {
        static double xdb[TOTAL];
        memcpy(xdb, XD, sizeof XD);
        EXPECT_OK(kp_normalize_batched_f64(ctx, xdb, OFFSETS, NARRAYS, sums, status));
        for (a = 0; a < NARRAYS; a++)
            CHECK(status[a] == (bad_array(a) ? 1 : 0), "f64 array %zu: status %d", a, (int)status[a]);
    }
    /* Bad offsets: an error, nothing written. */
    {
        int64_t bad[3] = {0, 10, 5};
        memcpy(xb, XF, sizeof XF);
        sums[0] = POISON;
        EXPECT(kp_normalize_batched_f32(ctx, xb, bad, 2, sums, status), KP_ERROR_INVALID_ARGUMENT);
        CHECK(same_f(xb, XF, TOTAL) && sums[0] == POISON, "bad offsets changed something");
        EXPECT(kp_normalize_batched_f32(ctx, xb, NULL, 2, sums, status), KP_ERROR_NULL_POINTER);
        EXPECT(kp_normalize_batched_f32(ctx, xb, OFFSETS, NARRAYS, NULL, status), KP_ERROR_NULL_POINTER);
        EXPECT(kp_normalize_batched_f32(ctx, xb, OFFSETS, NARRAYS, sums, NULL), KP_ERROR_NULL_POINTER);
    }
    group_done();
}

/* ---- GPU-only entry points on a CPU context ---- */
static void check_cpu_has_no_device(const kp_context *cpu)
{
    uint64_t handle = 77;
    void *ptr = &handle;
    float ms = -1.0f;
    double host[2] = {1, 2};
    const uint64_t fake = 0x10000;
    group = "GPU-only functions on a CPU context";
    EXPECT(kp_stream_create(cpu, &handle), KP_ERROR_NO_GPU);
    EXPECT(kp_event_create(cpu, &handle), KP_ERROR_NO_GPU);
    CHECK(handle == 77, "a failed create wrote its output");
    EXPECT(kp_stream_destroy(cpu, fake), KP_ERROR_NO_GPU);
    EXPECT(kp_event_destroy(cpu, fake), KP_ERROR_NO_GPU);
    EXPECT(kp_event_record(cpu, fake, 0), KP_ERROR_NO_GPU);
    EXPECT(kp_event_synchronize(cpu, fake), KP_ERROR_NO_GPU);
    EXPECT(kp_event_elapsed_ms(cpu, fake, fake, &ms), KP_ERROR_NO_GPU);
    CHECK(ms == -1.0f, "ms written");
    EXPECT(kp_stream_wait_event(cpu, 0, fake), KP_ERROR_NO_GPU);
    EXPECT(kp_host_alloc_pinned(cpu, 64, &ptr), KP_ERROR_NO_GPU);
    CHECK(ptr == &handle, "ptr written");
    EXPECT(kp_host_free_pinned(cpu, ptr), KP_ERROR_NO_GPU);
    EXPECT(kp_memcpy_htod_async(cpu, fake, host, sizeof host, 0), KP_ERROR_NO_GPU);
    EXPECT(kp_memcpy_dtoh_async(cpu, host, fake, sizeof host, 0), KP_ERROR_NO_GPU);
    CHECK(host[0] == 1 && host[1] == 2, "dst written");
    EXPECT(kp_sum_device_f32(cpu, fake, 4, fake, 0), KP_ERROR_NO_GPU);
    EXPECT(kp_sum_device_f64(cpu, fake, 4, fake, 0), KP_ERROR_NO_GPU);
    EXPECT(kp_normalize_device_f32(cpu, fake, 4, fake, fake, 0), KP_ERROR_NO_GPU);
    EXPECT(kp_normalize_device_f64(cpu, fake, 4, fake, fake, 0), KP_ERROR_NO_GPU);
    EXPECT(kp_normalize_batched_device_f32(cpu, fake, 4, fake, 1, fake, fake, 0), KP_ERROR_NO_GPU);
    EXPECT(kp_normalize_batched_device_f64(cpu, fake, 4, fake, 1, fake, fake, 0), KP_ERROR_NO_GPU);
    EXPECT(kp_stream_create(NULL, &handle), KP_ERROR_NULL_POINTER);
    group_done();
}

/* ---- the GPU: streams, events, pinned memory, async copies, device calls ---- */
static void check_gpu(const kp_context *gpu)
{
    uint64_t streams[NSTREAMS], start, stop, dx[NARRAYS], dsum[NARRAYS], dstatus[NARRAYS];
    float *pinned[NARRAYS];
    double *sum_host;
    int32_t *status_host;
    float ms = -1.0f;
    size_t a, i;
    double mag;

    group = "streams, events, pinned memory";
    for (i = 0; i < NSTREAMS; i++) {
        EXPECT_OK(kp_stream_create(gpu, &streams[i]));
        CHECK(streams[i] != 0, "stream 0 returned");
    }
    EXPECT_OK(kp_event_create(gpu, &start));
    EXPECT_OK(kp_event_create(gpu, &stop));
    EXPECT(kp_event_elapsed_ms(gpu, start, stop, &ms), KP_ERROR_INVALID_ARGUMENT); /* never recorded */
    CHECK(ms == -1.0f, "ms written on failure");
    EXPECT_OK(kp_host_alloc_pinned(gpu, NARRAYS * sizeof(double), (void **)&sum_host));
    EXPECT_OK(kp_host_alloc_pinned(gpu, NARRAYS * sizeof(int32_t), (void **)&status_host));
    EXPECT(kp_host_alloc_pinned(gpu, 0, (void **)&sum_host), KP_ERROR_INVALID_ARGUMENT);
    group_done();

    /* Normalising arrays on several streams: each array copied in, normalised
     * and copied out on its own stream (round robin), timed with events from
     * the first stream. */
    group = "normalise on several streams";
    EXPECT_OK(kp_event_record(gpu, start, streams[0]));
    for (a = 0; a < NARRAYS; a++) {
        size_t n = LENGTHS[a] ? LENGTHS[a] : 1, bytes = n * sizeof(float);
        uint64_t s = streams[a % NSTREAMS];
        EXPECT_OK(kp_host_alloc_pinned(gpu, bytes, (void **)&pinned[a]));
        memcpy(pinned[a], XF + OFFSETS[a], LENGTHS[a] * sizeof(float));
        if (!LENGTHS[a])
            pinned[a][0] = 0.0f; /* stands for the empty array: a zero sum */
        EXPECT_OK(kp_device_alloc(gpu, bytes, &dx[a]));
        EXPECT_OK(kp_device_alloc(gpu, sizeof(double), &dsum[a]));
        EXPECT_OK(kp_device_alloc(gpu, sizeof(int32_t), &dstatus[a]));
        /* The first stream waits for the start event of the others' work too. */
        EXPECT_OK(kp_stream_wait_event(gpu, s, start));
        EXPECT_OK(kp_memcpy_htod_async(gpu, dx[a], pinned[a], bytes, s));
        if (a % 2)
            EXPECT_OK(kp_normalize_device_f32(gpu, dx[a], n, dsum[a], dstatus[a], s));
        else {
            /* the same through a sum first, then the normalise recomputing it */
            EXPECT_OK(kp_sum_device_f32(gpu, dx[a], n, dsum[a], s));
            EXPECT_OK(kp_normalize_device_f32(gpu, dx[a], n, dsum[a], dstatus[a], s));
        }
        EXPECT_OK(kp_memcpy_dtoh_async(gpu, pinned[a], dx[a], bytes, s));
        EXPECT_OK(kp_memcpy_dtoh_async(gpu, sum_host + a, dsum[a], sizeof(double), s));
        EXPECT_OK(kp_memcpy_dtoh_async(gpu, status_host + a, dstatus[a], sizeof(int32_t), s));
    }
    for (i = 1; i < NSTREAMS; i++) { /* the first stream joins the others */
        uint64_t joined;
        EXPECT_OK(kp_event_create(gpu, &joined));
        EXPECT_OK(kp_event_record(gpu, joined, streams[i]));
        EXPECT_OK(kp_stream_wait_event(gpu, streams[0], joined));
        EXPECT_OK(kp_event_destroy(gpu, joined));
    }
    EXPECT_OK(kp_event_record(gpu, stop, streams[0]));
    EXPECT_OK(kp_event_synchronize(gpu, stop));
    EXPECT_OK(kp_event_elapsed_ms(gpu, start, stop, &ms));
    CHECK(ms > 0.0f && ms < 10000.0f, "elapsed %g ms", (double)ms);
    for (i = 0; i < NSTREAMS; i++)
        EXPECT_OK(kp_stream_synchronize(gpu, streams[i]));
    for (a = 0; a < NARRAYS; a++) {
        size_t lo = (size_t)OFFSETS[a], n = LENGTHS[a];
        int bad = bad_array(a);
        CHECK(status_host[a] == bad, "array %zu: status %d", a, (int)status_host[a]);
        if (bad) {
            CHECK(same_f(pinned[a], XF + lo, n), "array %zu changed although it failed", a);
            continue;
        }
        CHECK(close_sum(sum_host[a], ref_sum_f(XF + lo, n, &mag), n, mag), "array %zu: sum %.17g", a,
              sum_host[a]);
        for (i = 0; i < n; i++)
            CHECK(pinned[a][i] == (float)((double)XF[lo + i] * (1.0 / sum_host[a])), "array %zu value %zu",
                  a, i);
    }
    printf("     %d arrays on %d streams: %.3f ms\n", NARRAYS, NSTREAMS, (double)ms);
    group_done();

    group = "batched normalise on the device";
    {
        uint64_t dflat, doff, dsums, dst;
        int64_t off64[NARRAYS + 1];
        static float back[TOTAL];
        double sums[NARRAYS];
        int32_t status[NARRAYS];
        for (a = 0; a <= NARRAYS; a++)
            off64[a] = (int64_t)OFFSETS[a];
        EXPECT_OK(kp_device_alloc(gpu, sizeof XF, &dflat));
        EXPECT_OK(kp_device_alloc(gpu, sizeof off64, &doff));
        EXPECT_OK(kp_device_alloc(gpu, sizeof sums, &dsums));
        EXPECT_OK(kp_device_alloc(gpu, sizeof status, &dst));
        EXPECT_OK(kp_memcpy_htod_async(gpu, dflat, XF, sizeof XF, streams[1]));
        EXPECT_OK(kp_memcpy_htod_async(gpu, doff, off64, sizeof off64, streams[1]));
        EXPECT_OK(kp_normalize_batched_device_f32(gpu, dflat, TOTAL, doff, NARRAYS, dsums, dst, streams[1]));
        EXPECT_OK(kp_memcpy_dtoh_async(gpu, back, dflat, sizeof back, streams[1]));
        EXPECT_OK(kp_memcpy_dtoh_async(gpu, sums, dsums, sizeof sums, streams[1]));
        EXPECT_OK(kp_memcpy_dtoh_async(gpu, status, dst, sizeof status, streams[1]));
        EXPECT_OK(kp_stream_synchronize(gpu, streams[1]));
        for (a = 0; a < NARRAYS; a++) {
            size_t lo = (size_t)OFFSETS[a];
            CHECK(status[a] == bad_array(a), "array %zu: status %d", a, (int)status[a]);
            for (i = 0; i < LENGTHS[a] && !bad_array(a); i++)
                CHECK(back[lo + i] == (float)((double)XF[lo + i] * (1.0 / sums[a])), "array %zu value %zu", a, i);
        }
        /* f64, with offsets beyond the buffer: status 2 everywhere, nothing touched. */
        {
            uint64_t dflatd;
            static double backd[TOTAL];
            off64[3] = (int64_t)TOTAL + 100;
            EXPECT_OK(kp_device_alloc(gpu, sizeof XD, &dflatd));
            EXPECT_OK(kp_memcpy_htod_async(gpu, dflatd, XD, sizeof XD, 0));
            EXPECT_OK(kp_memcpy_htod_async(gpu, doff, off64, sizeof off64, 0));
            EXPECT_OK(kp_normalize_batched_device_f64(gpu, dflatd, TOTAL, doff, NARRAYS, dsums, dst, 0));
            EXPECT_OK(kp_memcpy_dtoh_async(gpu, backd, dflatd, sizeof backd, 0));
            EXPECT_OK(kp_memcpy_dtoh_async(gpu, status, dst, sizeof status, 0));
            EXPECT_OK(kp_stream_synchronize(gpu, 0));
            CHECK(memcmp(backd, XD, sizeof XD) == 0, "bad offsets changed x");
            for (a = 0; a < NARRAYS; a++)
                CHECK(status[a] == 2, "array %zu: status %d with bad offsets", a, (int)status[a]);
            EXPECT_OK(kp_device_free(gpu, dflatd));
        }
        /* f64 sums on the device. */
        {
            double s = 0;
            EXPECT_OK(kp_memcpy_htod(gpu, dflat, XD, 1000 * sizeof(double)));
            EXPECT_OK(kp_sum_device_f64(gpu, dflat, 1000, dsums, 0));
            EXPECT_OK(kp_normalize_device_f64(gpu, dflat, 1000, dsums, dst, 0));
            EXPECT_OK(kp_memcpy_dtoh(gpu, &s, dsums, sizeof s));
            for (i = 0, mag = 0; i < 1000; i++)
                mag += XD[i];
            CHECK(fabs(s - mag) <= 1e-12 * fabs(mag), "f64 device sum %.17g vs %.17g", s, mag);
        }
        EXPECT(kp_normalize_batched_device_f32(gpu, 0, TOTAL, doff, NARRAYS, dsums, dst, 0), KP_ERROR_NULL_POINTER);
        EXPECT(kp_normalize_device_f32(gpu, dflat, 4, 0, dst, 0), KP_ERROR_NULL_POINTER);
        EXPECT(kp_sum_device_f64(gpu, dflat, 4, 0, 0), KP_ERROR_NULL_POINTER);
        EXPECT_OK(kp_device_free(gpu, dflat));
        EXPECT_OK(kp_device_free(gpu, doff));
        EXPECT_OK(kp_device_free(gpu, dsums));
        EXPECT_OK(kp_device_free(gpu, dst));
    }
    group_done();

    group = "releasing, double frees rejected";
    for (a = 0; a < NARRAYS; a++) {
        EXPECT_OK(kp_host_free_pinned(gpu, pinned[a]));
        EXPECT(kp_host_free_pinned(gpu, pinned[a]), KP_ERROR_INVALID_ARGUMENT);
        EXPECT_OK(kp_device_free(gpu, dx[a]));
        EXPECT_OK(kp_device_free(gpu, dsum[a]));
        EXPECT_OK(kp_device_free(gpu, dstatus[a]));
    }
    EXPECT_OK(kp_host_free_pinned(gpu, sum_host));
    EXPECT_OK(kp_host_free_pinned(gpu, status_host));
    EXPECT_OK(kp_host_free_pinned(gpu, NULL));
    EXPECT(kp_host_free_pinned(gpu, XF), KP_ERROR_INVALID_ARGUMENT); /* never pinned here */
    for (i = 0; i < NSTREAMS; i++) {
        EXPECT_OK(kp_stream_destroy(gpu, streams[i]));
        EXPECT(kp_stream_destroy(gpu, streams[i]), KP_ERROR_INVALID_ARGUMENT);
    }
    EXPECT(kp_stream_destroy(gpu, 0), KP_ERROR_NULL_POINTER);
    EXPECT(kp_stream_destroy(gpu, start), KP_ERROR_INVALID_ARGUMENT); /* an event, not a stream */
    EXPECT_OK(kp_event_destroy(gpu, start));
    EXPECT_OK(kp_event_destroy(gpu, stop));
    EXPECT(kp_event_destroy(gpu, stop), KP_ERROR_INVALID_ARGUMENT);
    EXPECT(kp_event_record(gpu, stop, 0), KP_ERROR_INVALID_ARGUMENT);
    EXPECT(kp_event_synchronize(gpu, 0), KP_ERROR_NULL_POINTER);
    EXPECT(kp_stream_create(gpu, NULL), KP_ERROR_NULL_POINTER);
    EXPECT(kp_event_create(gpu, NULL), KP_ERROR_NULL_POINTER);
    EXPECT(kp_host_alloc_pinned(gpu, 8, NULL), KP_ERROR_NULL_POINTER);
    EXPECT(kp_memcpy_htod_async(gpu, 0, XF, 4, 0), KP_ERROR_NULL_POINTER);
    EXPECT(kp_memcpy_dtoh_async(gpu, NULL, 0x10000, 4, 0), KP_ERROR_NULL_POINTER);
    group_done();
}

int main(void)
{
    kp_context *cpu = NULL, *autoctx = NULL;
    int32_t is_gpu = 0;
    const char *require = getenv("KERNPACK_REQUIRE_GPU");

    make_arrays();
    group = "contexts";
    EXPECT_OK(kp_context_create(KP_BACKEND_CPU, &cpu));
    EXPECT_OK(kp_context_create(KP_BACKEND_AUTO, &autoctx));
    EXPECT_OK(kp_context_is_gpu(autoctx, &is_gpu));
    CHECK(is_gpu || require == NULL || strcmp(require, "1") != 0,
          "KERNPACK_REQUIRE_GPU=1 but the AUTO context runs on the CPU");
    printf("     AUTO context runs on the %s\n", is_gpu ? "GPU" : "CPU");
    group_done();

    check_host(cpu, "cpu");
    check_cpu_has_no_device(cpu);
    if (is_gpu) {
        check_host(autoctx, "auto = gpu");
        check_gpu(autoctx);
    }
    kp_context_destroy(autoctx);
    kp_context_destroy(cpu);
    printf("all checks passed (C, %s)\n", is_gpu ? "GPU" : "CPU only");
    return 0;
}
