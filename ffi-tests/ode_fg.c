/* End-to-end test of the kernpack C ABI for the coupled F/G system,
 * written as a C99 user would: include "kernpack.h", link libkernpack.
 *
 * Checks a few RK4 steps of a small system against a straightforward C
 * reference (C99 complex arithmetic), the exact invariants (Im G constant,
 * nsteps = 0), error codes with outputs left untouched, and with a GPU the
 * device-pointer entry point against the host one.
 *
 * Exit status 0 when every check passes; otherwise the first failed check is
 * printed to stderr and the program exits with 1. With KERNPACK_REQUIRE_GPU=1
 * a missing GPU is a failure. Built and run by tests/ffi_programs.rs. */
#include "kernpack.h"

#include <complex.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define N 7
#define M (N * N)
#define STEPS 4
#define DT 1e-3
#define POISON (-12345.0)

static const char *group = "setup";

static void fail(int line, const char *check, const char *fmt, ...)
{
    va_list args;
    fprintf(stderr, "FAIL [%s] ode_fg.c:%d: check `%s`: ", group, line, check);
    va_start(args, fmt);
    vfprintf(stderr, fmt, args);
    va_end(args);
    fprintf(stderr, "\n");
    exit(1);
}

#define CHECK(cond, ...)                        \
    do {                                        \
        if (!(cond))                            \
            fail(__LINE__, #cond, __VA_ARGS__); \
    } while (0)

#define EXPECT(call, status)                                                                       \
    do {                                                                                           \
        kp_status got_ = (call);                                                                   \
        CHECK(got_ == (status), "status %d, expected %d (%s)", (int)got_, (int)(status),           \
              kp_last_error_message());                                                            \
    } while (0)

static void group_done(void)
{
    printf("ok   %s\n", group);
    fflush(stdout);
}

/* Deterministic pseudo-random values in [-1, 1]. */
static double draw(uint64_t *s)
{
    *s = *s * 6364136223846793005ULL + 1442695040888963407ULL;
    return (double)(*s >> 11) / 9007199254740992.0 * 2.0 - 1.0;
}

/* The system in plain complex arithmetic, straight from MODELS.md. */
static void rhs(double complex f, double complex g, double complex d, double complex *df, double complex *dg)
{
    *df = -2.0 * I * f - I * d * (2.0 * g - 1.0);
    *dg = -I * (conj(d) * f - d * conj(f));
}

static void reference(double complex *f, double complex *g, double complex d0, double dt, int steps,
                      double complex *delta)
{
    delta[0] = d0;
    for (int s = 0; s < steps; ++s) {
        double complex sum = 0;
        for (int j = 0; j < M; ++j) {
            double complex k1f, k1g, k2f, k2g, k3f, k3g, k4f, k4g;
            rhs(f[j], g[j], delta[s], &k1f, &k1g);
            rhs(f[j] + 0.5 * dt * k1f, g[j] + 0.5 * dt * k1g, delta[s], &k2f, &k2g);
            rhs(f[j] + 0.5 * dt * k2f, g[j] + 0.5 * dt * k2g, delta[s], &k3f, &k3g);
            rhs(f[j] + dt * k3f, g[j] + dt * k3g, delta[s], &k4f, &k4g);
            f[j] += dt * (k1f / 6 + k2f / 3 + k3f / 3 + k4f / 6);
            g[j] += dt * (k1g / 6 + k2g / 3 + k3g / 3 + k4g / 6);
            sum += f[j];
        }
        delta[s + 1] = sum;
    }
}

static double f0[2 * M], g0[2 * M];
static const double D0_RE = 0.75, D0_IM = -0.5;

/* Runs the c128 and c64 host entry points on `ctx` against the C reference. */
static void check_against_reference(kp_context *ctx, const char *name)
{
    double complex rf[M], rg[M], rdelta[STEPS + 1];
    for (int j = 0; j < M; ++j) {
        rf[j] = f0[2 * j] + I * f0[2 * j + 1];
        rg[j] = g0[2 * j] + I * g0[2 * j + 1];
    }
    reference(rf, rg, D0_RE + I * D0_IM, DT, STEPS, rdelta);
    double scale = 0;
    for (int j = 0; j < M; ++j) scale += cabs(rf[j]);

    group = name;
    double f[2 * M], g[2 * M], delta[2 * (STEPS + 1)];
    memcpy(f, f0, sizeof f);
    memcpy(g, g0, sizeof g);
    EXPECT(kp_fg_integrate_c128(ctx, N, f, g, D0_RE, D0_IM, DT, STEPS, delta, STEPS + 1), KP_OK);
    /* Different summation order and operation grouping: rounding only, a
     * few steps of a small system do not amplify it much. */
    for (int k = 0; k <= STEPS; ++k) {
        double err = cabs(delta[2 * k] + I * delta[2 * k + 1] - rdelta[k]);
        CHECK(err <= 1e-12 * scale, "c128 delta[%d] off by %g", k, err);
    }
    for (int j = 0; j < M; ++j) {
        CHECK(cabs(f[2 * j] + I * f[2 * j + 1] - rf[j]) <= 1e-12, "c128 F[%d]", j);
        CHECK(cabs(g[2 * j] + I * g[2 * j + 1] - rg[j]) <= 1e-12, "c128 G[%d]", j);
        CHECK(g[2 * j + 1] == g0[2 * j + 1], "Im G[%d] changed", j);
    }

    float f32[2 * M], g32[2 * M], delta32[2 * (STEPS + 1)];
    for (int i = 0; i < 2 * M; ++i) f32[i] = (float)f0[i], g32[i] = (float)g0[i];
    EXPECT(kp_fg_integrate_c64(ctx, N, f32, g32, (float)D0_RE, (float)D0_IM, (float)DT, STEPS, delta32, STEPS + 1),
           KP_OK);
    for (int k = 0; k <= STEPS; ++k) {
        double err = cabs(delta32[2 * k] + I * delta32[2 * k + 1] - rdelta[k]);
        CHECK(err <= 1e-5 * scale, "c64 delta[%d] off by %g", k, err);
    }
    group_done();
}

static void check_errors(kp_context *ctx)
{
    group = "errors leave outputs untouched";
    double f[2 * M], g[2 * M], delta[2 * (STEPS + 1)];
    memcpy(f, f0, sizeof f);
    memcpy(g, g0, sizeof g);
    for (int i = 0; i < 2 * (STEPS + 1); ++i) delta[i] = POISON;
    EXPECT(kp_fg_integrate_c128(NULL, N, f, g, 1, 0, DT, STEPS, delta, STEPS + 1), KP_ERROR_NULL_POINTER);
    EXPECT(kp_fg_integrate_c128(ctx, N, NULL, g, 1, 0, DT, STEPS, delta, STEPS + 1), KP_ERROR_NULL_POINTER);
    EXPECT(kp_fg_integrate_c128(ctx, N, f, g, 1, 0, DT, STEPS, NULL, STEPS + 1), KP_ERROR_NULL_POINTER);
    EXPECT(kp_fg_integrate_c128(ctx, 0, f, g, 1, 0, DT, STEPS, delta, STEPS + 1), KP_ERROR_INVALID_ARGUMENT);
    CHECK(strstr(kp_last_error_message(), "N is 0") != NULL, "message: %s", kp_last_error_message());
    EXPECT(kp_fg_integrate_c128(ctx, N, f, g, 1, 0, DT, STEPS, delta, STEPS), KP_ERROR_INVALID_ARGUMENT);
    EXPECT(kp_fg_integrate_c128(ctx, N, f, g, 1, 0, NAN, STEPS, delta, STEPS + 1), KP_ERROR_INVALID_ARGUMENT);
    EXPECT(kp_fg_integrate_c128(ctx, N, f, g, INFINITY, 0, DT, STEPS, delta, STEPS + 1), KP_ERROR_INVALID_ARGUMENT);
    f[5] = NAN;
    EXPECT(kp_fg_integrate_c128(ctx, N, f, g, 1, 0, DT, STEPS, delta, STEPS + 1), KP_ERROR_INVALID_ARGUMENT);
    f[5] = f0[5];
    CHECK(memcmp(f, f0, sizeof f) == 0 && memcmp(g, g0, sizeof g) == 0, "F or G written on failure");
    for (int i = 0; i < 2 * (STEPS + 1); ++i) CHECK(delta[i] == POISON, "delta[%d] written on failure", i);
    group_done();

    group = "nsteps = 0";
    EXPECT(kp_fg_integrate_c128(ctx, N, f, g, 0.25, 0.5, DT, 0, delta, 1), KP_OK);
    CHECK(delta[0] == 0.25 && delta[1] == 0.5 && delta[2] == POISON, "delta %g %g %g", delta[0], delta[1], delta[2]);
    CHECK(memcmp(f, f0, sizeof f) == 0 && memcmp(g, g0, sizeof g) == 0, "state changed");
    group_done();
}

/* The device entry point gives the same bits as the host one on the same GPU. */
static void check_device(kp_context *gpu)
{
    group = "device pointers";
    double f[2 * M], g[2 * M], delta[2 * (STEPS + 1)];
    memcpy(f, f0, sizeof f);
    memcpy(g, g0, sizeof g);
    EXPECT(kp_fg_integrate_c128(gpu, N, f, g, D0_RE, D0_IM, DT, STEPS, delta, STEPS + 1), KP_OK);

    uint64_t df = 0, dg = 0, dd = 0;
    EXPECT(kp_device_alloc(gpu, sizeof f0, &df), KP_OK);
    EXPECT(kp_device_alloc(gpu, sizeof g0, &dg), KP_OK);
    EXPECT(kp_device_alloc(gpu, sizeof delta, &dd), KP_OK);
    double poison[2 * (STEPS + 1)];
    for (int i = 0; i < 2 * (STEPS + 1); ++i) poison[i] = NAN;
    EXPECT(kp_memcpy_htod(gpu, df, f0, sizeof f0), KP_OK);
    EXPECT(kp_memcpy_htod(gpu, dg, g0, sizeof g0), KP_OK);
    EXPECT(kp_memcpy_htod(gpu, dd, poison, sizeof poison), KP_OK);
    EXPECT(kp_fg_integrate_device_c128(gpu, N, df, dg, D0_RE, D0_IM, DT, STEPS, dd, STEPS + 1, 0), KP_OK);
    EXPECT(kp_stream_synchronize(gpu, 0), KP_OK);
    double hf[2 * M], hg[2 * M], hd[2 * (STEPS + 1)];
    EXPECT(kp_memcpy_dtoh(gpu, hf, df, sizeof hf), KP_OK);
    EXPECT(kp_memcpy_dtoh(gpu, hg, dg, sizeof hg), KP_OK);
    EXPECT(kp_memcpy_dtoh(gpu, hd, dd, sizeof hd), KP_OK);
    CHECK(memcmp(hf, f, sizeof f) == 0 && memcmp(hg, g, sizeof g) == 0, "device state differs from host call");
    CHECK(memcmp(hd, delta, sizeof delta) == 0, "device delta differs from host call");
    EXPECT(kp_fg_integrate_device_c128(gpu, N, 0, dg, 1, 0, DT, STEPS, dd, STEPS + 1, 0), KP_ERROR_NULL_POINTER);
    EXPECT(kp_fg_integrate_device_c128(gpu, N, df, dg, 1, 0, DT, STEPS, dd, STEPS + 2, 0),
           KP_ERROR_INVALID_ARGUMENT);
    EXPECT(kp_device_free(gpu, df), KP_OK);
    EXPECT(kp_device_free(gpu, dg), KP_OK);
    EXPECT(kp_device_free(gpu, dd), KP_OK);
    group_done();
}

int main(void)
{
    uint64_t s = 2024;
    for (int i = 0; i < 2 * M; ++i) f0[i] = draw(&s), g0[i] = draw(&s);

    kp_context *cpu = NULL, *autoctx = NULL;
    EXPECT(kp_context_create(KP_BACKEND_CPU, &cpu), KP_OK);
    EXPECT(kp_context_create(KP_BACKEND_AUTO, &autoctx), KP_OK);
    int32_t is_gpu = -1;
    EXPECT(kp_context_is_gpu(autoctx, &is_gpu), KP_OK);
    const char *require = getenv("KERNPACK_REQUIRE_GPU");
    if (is_gpu) {
        printf("AUTO context runs on the GPU\n");
    } else {
        CHECK(!(require && strcmp(require, "1") == 0), "KERNPACK_REQUIRE_GPU=1 but the AUTO context runs on the CPU");
        printf("AUTO context runs on the CPU (no GPU)\n");
    }

    check_against_reference(cpu, "CPU context vs C reference");
    check_against_reference(autoctx, "AUTO context vs C reference");
    check_errors(cpu);
    check_errors(autoctx);
    if (is_gpu) {
        check_device(autoctx);
    } else {
        group = "device pointers without a GPU";
        EXPECT(kp_fg_integrate_device_c64(cpu, N, 1, 1, 1, 0, (float)DT, STEPS, 1, STEPS + 1, 0), KP_ERROR_NO_GPU);
        group_done();
    }
    kp_context_destroy(cpu);
    kp_context_destroy(autoctx);
    printf("all checks passed\n");
    return 0;
}
