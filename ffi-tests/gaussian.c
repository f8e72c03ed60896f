/* End-to-end test of the kernpack C ABI for 1-D correlations and Gaussian
 * filters of N-D arrays, written as a C99 user would: the Gaussian of an
 * impulse is the normalised Gaussian weights (sum 1, symmetric, zero past
 * the radius; the outer product of them in 2-D), a correlation along each
 * axis of a 3-D array held to a direct implementation here in C, the device
 * entry points against the host ones, and bad input rejected with the
 * output untouched. Exit status 0 when every check passes. With
 * KERNPACK_REQUIRE_GPU=1 a missing GPU fails.
 *
 * Built and run by tests/ffi_programs.rs. */
#include "kernpack.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define N 41
#define CENTRE 20
#define POISON (-12345.0)
#define D0 5
#define D1 7
#define D2 9
#define LEN3 (D0 * D1 * D2)

#define CHECK(cond, ...)                                                         \
    do {                                                                         \
        if (!(cond)) {                                                           \
            fprintf(stderr, "FAIL gaussian.c:%d: check `%s`: ", __LINE__, #cond); \
            fprintf(stderr, __VA_ARGS__);                                        \
            fprintf(stderr, "\n");                                               \
            exit(1);                                                             \
        }                                                                        \
    } while (0)

#define EXPECT(call, want)                                                                        \
    do {                                                                                          \
        kp_status s_ = (call);                                                                    \
        CHECK(s_ == (want), "%s returned %d, expected %d: \"%s\"", #call, (int)s_, (int)(want), \
              kp_last_error_message());                                                           \
    } while (0)

static uint64_t rng_state = 0x9e3779b97f4a7c15ULL;
static double uniform(void)
{
    rng_state = rng_state * 6364136223846793005ULL + 1442695040888963407ULL;
    return (double)(rng_state >> 11) / 9007199254740992.0;
}

/* exp(-k^2 / (2 sigma^2)) for k = -radius .. radius, normalised to sum 1. */
static void gaussian_weights(double sigma, long radius, double *w)
{
    double total = 0;
    long k;
    for (k = -radius; k <= radius; k++) total += w[k + radius] = exp(-0.5 * (double)(k * k) / (sigma * sigma));
    for (k = 0; k <= 2 * radius; k++) w[k] /= total;
}

/* SciPy's extension of index i of a line of n points; -1: the constant. */
static long extend(long i, long n, unsigned mode)
{
    long m;
    if (i >= 0 && i < n) return i;
    switch (mode) {
    case KP_BOX_CONSTANT: return -1;
    case KP_BOX_REFLECT: m = ((i % (2 * n)) + 2 * n) % (2 * n); return m < n ? m : 2 * n - 1 - m;
    case KP_BOX_MIRROR:
        if (n == 1) return 0;
        m = ((i % (2 * n - 2)) + 2 * n - 2) % (2 * n - 2);
        return m < n ? m : 2 * n - 2 - m;
    case KP_BOX_WRAP: return ((i % n) + n) % n;
    default: return i < 0 ? 0 : n - 1;
    }
}

static double impulse_d[N], out_d[N], dev_d[N];
static float impulse_f[N], out_f[N];

static void check_impulse(const kp_context *ctx, int gpu)
{
    const double sigma = 2.5;
    const long radius = (long)(4.0 * sigma + 0.5); /* the default truncate */
    double w[2 * 10 + 1], sum = 0;
    size_t shape[1] = {N};
    kp_gaussian_options g = kp_gaussian_options_default();
    long i;
    CHECK(g.sigma == 1.0 && g.order == 0 && g.truncate == 4.0 && g.radius == -1 && g.mode == KP_BOX_REFLECT &&
              g.cval == 0.0,
          "Gaussian defaults");
    CHECK(radius == 10, "radius %ld", radius);
    gaussian_weights(sigma, radius, w);
    g.sigma = sigma, g.mode = KP_BOX_CONSTANT;
    for (i = 0; i < N; i++) out_d[i] = POISON, out_f[i] = (float)POISON;
    EXPECT(kp_gaussian_filter_f64(ctx, impulse_d, out_d, shape, 1, &g), KP_OK);
    EXPECT(kp_gaussian_filter_f32(ctx, impulse_f, out_f, shape, 1, &g), KP_OK);
    for (i = 0; i < N; i++) {
        long k = i - CENTRE;
        double want = (k < -radius || k > radius) ? 0.0 : w[k + radius];
        sum += out_d[i];
        CHECK(fabs(out_d[i] - want) <= 1e-15, "f64 impulse response at %ld: %.17g vs %.17g", k, out_d[i], want);
        CHECK(fabs(out_f[i] - want) <= 1e-7, "f32 impulse response at %ld: %.9g vs %.17g", k, (double)out_f[i], want);
        CHECK(out_d[i] == out_d[2 * CENTRE - i], "f64 response not symmetric at %ld", k);
        CHECK(out_f[i] == out_f[2 * CENTRE - i], "f32 response not symmetric at %ld", k);
    }
    CHECK(fabs(sum - 1.0) <= 1e-14, "f64 response sums to %.17g", sum);
    if (gpu) {
        /* The device entry point gives the host one's bits. */
        uint64_t din = 0, dout = 0;
        EXPECT(kp_device_alloc(ctx, sizeof impulse_d, &din), KP_OK);
        EXPECT(kp_device_alloc(ctx, sizeof out_d, &dout), KP_OK);
        EXPECT(kp_memcpy_htod(ctx, din, impulse_d, sizeof impulse_d), KP_OK);
        EXPECT(kp_gaussian_filter_device_f64(ctx, din, dout, shape, 1, &g, 0), KP_OK);
        EXPECT(kp_memcpy_dtoh(ctx, dev_d, dout, sizeof dev_d), KP_OK);
        CHECK(memcmp(dev_d, out_d, sizeof dev_d) == 0, "device and host impulse responses differ");
        /* Overlapping device buffers are refused, the output kept. */
        EXPECT(kp_gaussian_filter_device_f64(ctx, din, din + 8, shape, 1, &g, 0), KP_ERROR_INVALID_ARGUMENT);
        EXPECT(kp_memcpy_dtoh(ctx, dev_d, dout, sizeof dev_d), KP_OK);
        CHECK(memcmp(dev_d, out_d, sizeof dev_d) == 0, "a refused device call wrote");
        EXPECT(kp_device_free(ctx, din), KP_OK);
        EXPECT(kp_device_free(ctx, dout), KP_OK);
    }
    printf("ok   Gaussian of an impulse: the normalised weights, host%s\n", gpu ? " and device" : "");
}

/* In 2-D the response to an impulse is the outer product of the weights
 * (sigma 1.5 along the rows, 0.8 along the columns, axis by axis). */
static void check_impulse_2d(const kp_context *ctx)
{
    enum { R = 21, C = 13 };
    static double in[R * C], out[R * C];
    double wr[2 * 6 + 1], wc[2 * 3 + 1];
    size_t shape[2] = {R, C};
    kp_gaussian_options g[2];
    long y, x;
    g[0] = g[1] = kp_gaussian_options_default();
    g[0].sigma = 1.5, g[0].mode = KP_BOX_CONSTANT;
    g[1].sigma = 0.8, g[1].mode = KP_BOX_CONSTANT;
    gaussian_weights(1.5, 6, wr);
    gaussian_weights(0.8, 3, wc);
    memset(in, 0, sizeof in);
    in[10 * C + 6] = 1.0;
    EXPECT(kp_gaussian_filter_f64(ctx, in, out, shape, 2, g), KP_OK);
    for (y = 0; y < R; y++)
        for (x = 0; x < C; x++) {
            long ky = y - 10, kx = x - 6;
            double want = (ky < -6 || ky > 6 || kx < -3 || kx > 3) ? 0.0 : wr[ky + 6] * wc[kx + 3];
            CHECK(fabs(out[y * C + x] - want) <= 1e-15, "2-D response at (%ld, %ld): %.17g vs %.17g", ky, kx,
                  out[y * C + x], want);
        }
    /* sigma 0 skips an axis: only the columns are smoothed. */
    g[0].sigma = 0;
    EXPECT(kp_gaussian_filter_f64(ctx, in, out, shape, 2, g), KP_OK);
    for (y = 0; y < R; y++)
        for (x = 0; x < C; x++) {
            long kx = x - 6;
            double want = (y != 10 || kx < -3 || kx > 3) ? 0.0 : wc[kx + 3];
            CHECK(fabs(out[y * C + x] - want) <= 1e-15, "rows skipped at (%ld, %ld)", y, x);
        }
    printf("ok   2-D impulse: the outer product of the weights; sigma 0 skips its axis\n");
}

/* kp_correlate1d along each axis of a 3-D array, every mode, held to a
 * direct loop. */
static void check_correlate(const kp_context *ctx)
{
    static double in[LEN3], out[LEN3];
    static const double w[4] = {0.5, -1.0, 2.0, 0.25};
    const size_t shape[3] = {D0, D1, D2};
    const long dims[3] = {D0, D1, D2}, strides[3] = {D1 * D2, D2, 1};
    unsigned mode;
    size_t axis;
    long i, j;
    for (i = 0; i < LEN3; i++) in[i] = 2.0 * uniform() - 1.0;
    for (axis = 0; axis < 3; axis++)
        for (mode = KP_BOX_REFLECT; mode <= KP_BOX_WRAP; mode++) {
            kp_correlate_options o = kp_correlate_options_default();
            o.mode = mode, o.cval = 0.75, o.origin = -1;
            for (i = 0; i < LEN3; i++) out[i] = POISON;
            EXPECT(kp_correlate1d_f64(ctx, in, out, shape, 3, axis, w, 4, &o), KP_OK);
            for (i = 0; i < LEN3; i++) {
                long n = dims[axis], s = strides[axis], pos = (i / s) % n, base = i - pos * s;
                double want = 0;
                for (j = 0; j < 4; j++) {
                    /* input i + j - (nweights / 2 + origin) along the axis */
                    long at = extend(pos + j - (4 / 2 + o.origin), n, mode);
                    want += w[j] * (at < 0 ? o.cval : in[base + at * s]);
                }
                CHECK(fabs(out[i] - want) <= 1e-14, "axis %u mode %u at %ld: %.17g vs %.17g", (unsigned)axis, mode,
                      i, out[i], want);
            }
        }
    printf("ok   correlate1d along each axis of a 3-D array, every mode\n");
}

static void check_errors(const kp_context *ctx)
{
    size_t shape[1] = {N}, zero_ndim_shape[1] = {1}, too_large[2] = {SIZE_MAX, 2};
    const double w[3] = {1.0, 2.0, 1.0};
    double nan_w[3];
    kp_gaussian_options g = kp_gaussian_options_default();
    kp_correlate_options o = kp_correlate_options_default();
    long i;
    CHECK(o.origin == 0 && o.cval == 0.0 && o.mode == KP_BOX_REFLECT, "correlate defaults");
    nan_w[0] = 1.0, nan_w[1] = nan(""), nan_w[2] = 1.0;
    for (i = 0; i < N; i++) out_d[i] = POISON;
    /* Gaussian: negative, NaN sigma; an unknown or the interior mode; too high an order. */
    g.sigma = -1.0;
    EXPECT(kp_gaussian_filter_f64(ctx, impulse_d, out_d, shape, 1, &g), KP_ERROR_INVALID_ARGUMENT);
    CHECK(strstr(kp_last_error_message(), "sigma") != NULL, "message: %s", kp_last_error_message());
    g.sigma = nan("");
    EXPECT(kp_gaussian_filter_f64(ctx, impulse_d, out_d, shape, 1, &g), KP_ERROR_INVALID_ARGUMENT);
    g = kp_gaussian_options_default(), g.mode = KP_BOX_INTERIOR;
    EXPECT(kp_gaussian_filter_f64(ctx, impulse_d, out_d, shape, 1, &g), KP_ERROR_INVALID_ARGUMENT);
    g.mode = 17;
    EXPECT(kp_gaussian_filter_f64(ctx, impulse_d, out_d, shape, 1, &g), KP_ERROR_INVALID_ARGUMENT);
    g = kp_gaussian_options_default(), g.order = 11;
    EXPECT(kp_gaussian_filter_f64(ctx, impulse_d, out_d, shape, 1, &g), KP_ERROR_INVALID_ARGUMENT);
    /* NULL pointers, a shape whose size overflows, in place. */
    EXPECT(kp_gaussian_filter_f64(ctx, impulse_d, out_d, NULL, 1, NULL), KP_ERROR_NULL_POINTER);
    EXPECT(kp_gaussian_filter_f64(ctx, NULL, out_d, shape, 1, NULL), KP_ERROR_NULL_POINTER);
    EXPECT(kp_gaussian_filter_f64(NULL, impulse_d, out_d, shape, 1, NULL), KP_ERROR_NULL_POINTER);
    EXPECT(kp_gaussian_filter_f64(ctx, impulse_d, out_d, too_large, 2, NULL), KP_ERROR_INVALID_ARGUMENT);
    EXPECT(kp_gaussian_filter_f64(ctx, out_d, out_d, shape, 1, NULL), KP_ERROR_INVALID_ARGUMENT);
    /* Correlation: no weights, a NaN weight, axis out of range (also ndim 0),
     * origin out of range, the interior mode, output over the weights. */
    EXPECT(kp_correlate1d_f64(ctx, impulse_d, out_d, shape, 1, 0, w, 0, NULL), KP_ERROR_INVALID_ARGUMENT);
    EXPECT(kp_correlate1d_f64(ctx, impulse_d, out_d, shape, 1, 0, NULL, 3, NULL), KP_ERROR_NULL_POINTER);
    EXPECT(kp_correlate1d_f64(ctx, impulse_d, out_d, shape, 1, 0, nan_w, 3, NULL), KP_ERROR_INVALID_ARGUMENT);
    EXPECT(kp_correlate1d_f64(ctx, impulse_d, out_d, shape, 1, 1, w, 3, NULL), KP_ERROR_INVALID_ARGUMENT);
    CHECK(strstr(kp_last_error_message(), "axis 1") != NULL, "message: %s", kp_last_error_message());
    EXPECT(kp_correlate1d_f64(ctx, impulse_d, out_d, zero_ndim_shape, 0, 0, w, 3, NULL), KP_ERROR_INVALID_ARGUMENT);
    o.origin = 2;
    EXPECT(kp_correlate1d_f64(ctx, impulse_d, out_d, shape, 1, 0, w, 3, &o), KP_ERROR_INVALID_ARGUMENT);
    o.origin = 0, o.mode = KP_BOX_INTERIOR;
    EXPECT(kp_correlate1d_f64(ctx, impulse_d, out_d, shape, 1, 0, w, 3, &o), KP_ERROR_INVALID_ARGUMENT);
    EXPECT(kp_correlate1d_f64(ctx, impulse_d, out_d, shape, 1, 0, out_d, 3, NULL), KP_ERROR_INVALID_ARGUMENT);
    CHECK(strstr(kp_last_error_message(), "overlap") != NULL, "message: %s", kp_last_error_message());
    for (i = 0; i < N; i++) CHECK(out_d[i] == POISON, "output changed on error at %ld", i);
    /* NULL options are the defaults: sigma 1, reflect, on every axis. */
    EXPECT(kp_gaussian_filter_f64(ctx, impulse_d, out_d, shape, 1, NULL), KP_OK);
    {
        double w1[9];
        gaussian_weights(1.0, 4, w1);
        CHECK(fabs(out_d[CENTRE + 2] - w1[4 + 2]) <= 1e-15, "defaults applied: %.17g vs %.17g", out_d[CENTRE + 2],
              w1[4 + 2]);
    }
    /* Device entry points need a GPU context. */
    {
        kp_context *cpu = NULL;
        EXPECT(kp_context_create(KP_BACKEND_CPU, &cpu), KP_OK);
        EXPECT(kp_gaussian_filter_device_f32(cpu, 8, 4096, shape, 1, NULL, 0), KP_ERROR_NO_GPU);
        EXPECT(kp_correlate1d_device_f64(cpu, 8, 4096, shape, 1, 0, w, 3, NULL, 0), KP_ERROR_NO_GPU);
        kp_context_destroy(cpu);
    }
    printf("ok   bad input rejected, nothing written\n");
}

int main(void)
{
    const char *require = getenv("KERNPACK_REQUIRE_GPU");
    kp_context *ctx = NULL;
    int is_gpu = 0;
    memset(impulse_d, 0, sizeof impulse_d);
    memset(impulse_f, 0, sizeof impulse_f);
    impulse_d[CENTRE] = 1.0, impulse_f[CENTRE] = 1.0f;
    EXPECT(kp_context_create(KP_BACKEND_AUTO, &ctx), KP_OK);
    EXPECT(kp_context_is_gpu(ctx, &is_gpu), KP_OK);
    if (is_gpu)
        printf("     AUTO context runs on the GPU\n");
    else
        CHECK(!(require && strcmp(require, "1") == 0), "KERNPACK_REQUIRE_GPU=1 but the AUTO context has no GPU");
    check_impulse(ctx, is_gpu);
    check_impulse_2d(ctx);
    check_correlate(ctx);
    check_errors(ctx);
    kp_context_destroy(ctx);
    EXPECT(kp_context_create(KP_BACKEND_CPU, &ctx), KP_OK);
    check_impulse(ctx, 0);
    check_correlate(ctx);
    kp_context_destroy(ctx);
    printf("all checks passed (C, %s)\n", is_gpu ? "GPU" : "CPU");
    return 0;
}
