/* End-to-end test of the kernpack C ABI for the 2D box filter, written as a
 * C99 user would: every mode and several windows on an image with row gaps,
 * held to a direct implementation here in C; the device entry point against
 * the host one; bad input rejected with the output untouched. Exit status 0
 * when every check passes. With KERNPACK_REQUIRE_GPU=1 a missing GPU fails.
 *
 * Built and run by tests/ffi_programs.rs. */
#include "kernpack.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define ROWS 37
#define COLS 45
#define IN_PITCH 48
#define OUT_PITCH 50
#define IN_LEN ((ROWS - 1) * IN_PITCH + COLS)
#define OUT_LEN ((ROWS - 1) * OUT_PITCH + COLS)
#define POISON (-12345.0)

#define CHECK(cond, ...)                                                        \
    do {                                                                        \
        if (!(cond)) {                                                          \
            fprintf(stderr, "FAIL stencil.c:%d: check `%s`: ", __LINE__, #cond); \
            fprintf(stderr, __VA_ARGS__);                                       \
            fprintf(stderr, "\n");                                              \
            exit(1);                                                            \
        }                                                                       \
    } while (0)

#define EXPECT(call, want)                                                                        \
    do {                                                                                          \
        kp_status s_ = (call);                                                                    \
        CHECK(s_ == (want), "%s returned %d, expected %d: \"%s\"", #call, (int)s_, (int)(want), \
              kp_last_error_message());                                                           \
    } while (0)

static uint64_t rng_state = 0x2545f4914f6cdd1dULL;
static double uniform(void)
{
    rng_state = rng_state * 6364136223846793005ULL + 1442695040888963407ULL;
    return (double)(rng_state >> 11) / 9007199254740992.0;
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

/* The mean of the window around (y, x), in double. */
static double expected(const double *in, long y, long x, kp_box_filter_options o)
{
    long r = (long)o.size / 2, dy, dx;
    double acc = 0;
    if (o.mode == KP_BOX_INTERIOR && (y < r || y >= ROWS - r || x < r || x >= COLS - r))
        return in[y * IN_PITCH + x];
    for (dy = -r; dy <= r; dy++)
        for (dx = -r; dx <= r; dx++) {
            long yy = extend(y + dy, ROWS, o.mode), xx = extend(x + dx, COLS, o.mode);
            acc += (yy < 0 || xx < 0) ? o.cval : in[yy * IN_PITCH + xx];
        }
    return acc / (double)(o.size * o.size);
}

static double in_d[IN_LEN], out_d[OUT_LEN], dev_d[OUT_LEN];
static float in_f[IN_LEN], out_f[OUT_LEN];

static void check_modes(const kp_context *ctx, int gpu)
{
    static const unsigned sizes[] = {1, 3, 5, 9, 11, 33};
    unsigned mode, s;
    long y, x;
    for (mode = KP_BOX_REFLECT; mode <= KP_BOX_INTERIOR; mode++)
        for (s = 0; s < sizeof sizes / sizeof sizes[0]; s++) {
            kp_box_filter_options o = kp_box_filter_options_default();
            o.size = sizes[s], o.mode = mode, o.cval = 0.75;
            for (x = 0; x < OUT_LEN; x++) out_d[x] = POISON, out_f[x] = (float)POISON;
            EXPECT(kp_box_filter_f64(ctx, in_d, IN_PITCH, out_d, OUT_PITCH, ROWS, COLS, &o), KP_OK);
            EXPECT(kp_box_filter_f32(ctx, in_f, IN_PITCH, out_f, OUT_PITCH, ROWS, COLS, &o), KP_OK);
            for (y = 0; y < ROWS; y++)
                for (x = 0; x < OUT_PITCH && y * OUT_PITCH + x < OUT_LEN; x++) {
                    long i = y * OUT_PITCH + x;
                    if (x >= COLS) {
                        CHECK(out_d[i] == POISON && out_f[i] == (float)POISON, "gap (%ld, %ld) written", y, x);
                        continue;
                    }
                    {
                        double want = expected(in_d, y, x, o);
                        /* values in [-1, 2]: sums of up to 1089 terms */
                        CHECK(fabs(out_d[i] - want) <= 1e-13, "f64 mode %u size %u (%ld, %ld): %.17g vs %.17g",
                              mode, o.size, y, x, out_d[i], want);
                        CHECK(fabs(out_f[i] - want) <= 2e-5, "f32 mode %u size %u (%ld, %ld): %.9g vs %.17g",
                              mode, o.size, y, x, (double)out_f[i], want);
                    }
                }
            if (gpu) {
                /* The device entry point gives the host one's bits. */
                uint64_t din = 0, dout = 0;
                EXPECT(kp_device_alloc(ctx, sizeof in_d, &din), KP_OK);
                EXPECT(kp_device_alloc(ctx, sizeof out_d, &dout), KP_OK);
                EXPECT(kp_memcpy_htod(ctx, din, in_d, sizeof in_d), KP_OK);
                for (x = 0; x < OUT_LEN; x++) dev_d[x] = POISON;
                EXPECT(kp_memcpy_htod(ctx, dout, dev_d, sizeof dev_d), KP_OK);
                EXPECT(kp_box_filter_device_f64(ctx, din, IN_PITCH, dout, OUT_PITCH, ROWS, COLS, &o, 0), KP_OK);
                EXPECT(kp_stream_synchronize(ctx, 0), KP_OK);
                EXPECT(kp_memcpy_dtoh(ctx, dev_d, dout, sizeof dev_d), KP_OK);
                CHECK(memcmp(dev_d, out_d, sizeof dev_d) == 0, "device and host results differ (mode %u size %u)",
                      mode, o.size);
                /* Overlapping device buffers are refused. */
                EXPECT(kp_box_filter_device_f64(ctx, din, IN_PITCH, din + 8, OUT_PITCH, ROWS, COLS, &o, 0),
                       KP_ERROR_INVALID_ARGUMENT);
                EXPECT(kp_device_free(ctx, din), KP_OK);
                EXPECT(kp_device_free(ctx, dout), KP_OK);
            }
        }
    printf("ok   every mode and window, host%s\n", gpu ? " and device" : "");
}

static void check_errors(const kp_context *ctx)
{
    kp_box_filter_options o = kp_box_filter_options_default();
    long i;
    for (i = 0; i < OUT_LEN; i++) out_d[i] = POISON;
    /* Even sizes and sizes past the old limit of 33 are windows like any other. */
    o.size = 4;
    EXPECT(kp_box_filter_f64(ctx, in_d, IN_PITCH, out_d, OUT_PITCH, ROWS, COLS, &o), KP_OK);
    o.size = 35;
    EXPECT(kp_box_filter_f64(ctx, in_d, IN_PITCH, out_d, OUT_PITCH, ROWS, COLS, &o), KP_OK);
    for (i = 0; i < OUT_LEN; i++) out_d[i] = POISON;
    o = kp_box_filter_options_default();
    o.mode = 6;
    EXPECT(kp_box_filter_f64(ctx, in_d, IN_PITCH, out_d, OUT_PITCH, ROWS, COLS, &o), KP_ERROR_INVALID_ARGUMENT);
    o.mode = KP_BOX_CONSTANT, o.size = 0;
    EXPECT(kp_box_filter_f64(ctx, in_d, IN_PITCH, out_d, OUT_PITCH, ROWS, COLS, &o), KP_ERROR_INVALID_ARGUMENT);
    EXPECT(kp_box_filter_f64(ctx, in_d, COLS - 1, out_d, OUT_PITCH, ROWS, COLS, NULL), KP_ERROR_INVALID_ARGUMENT);
    EXPECT(kp_box_filter_f64(ctx, NULL, IN_PITCH, out_d, OUT_PITCH, ROWS, COLS, NULL), KP_ERROR_NULL_POINTER);
    EXPECT(kp_box_filter_f64(ctx, in_d, IN_PITCH, NULL, OUT_PITCH, ROWS, COLS, NULL), KP_ERROR_NULL_POINTER);
    EXPECT(kp_box_filter_f64(NULL, in_d, IN_PITCH, out_d, OUT_PITCH, ROWS, COLS, NULL), KP_ERROR_NULL_POINTER);
    /* In place is refused. */
    EXPECT(kp_box_filter_f64(ctx, out_d, OUT_PITCH, out_d, OUT_PITCH, ROWS, COLS, NULL), KP_ERROR_INVALID_ARGUMENT);
    for (i = 0; i < OUT_LEN; i++) CHECK(out_d[i] == POISON, "output changed on error at %ld", i);
    /* NULL options are the defaults (3 x 3 reflect). */
    EXPECT(kp_box_filter_f64(ctx, in_d, IN_PITCH, out_d, OUT_PITCH, ROWS, COLS, NULL), KP_OK);
    {
        kp_box_filter_options d = kp_box_filter_options_default();
        CHECK(d.size == 3 && d.mode == KP_BOX_REFLECT && d.cval == 0.0, "defaults");
        CHECK(fabs(out_d[5 * OUT_PITCH + 7] - expected(in_d, 5, 7, d)) <= 1e-13, "defaults applied");
    }
    printf("ok   bad input rejected, nothing written\n");
}

int main(void)
{
    const char *require = getenv("KERNPACK_REQUIRE_GPU");
    kp_context *ctx = NULL;
    int is_gpu = 0;
    long i;
    for (i = 0; i < IN_LEN; i++) {
        in_d[i] = 3.0 * uniform() - 1.0;
        in_f[i] = (float)in_d[i];
        in_d[i] = in_f[i]; /* the same values in both precisions */
    }
    EXPECT(kp_context_create(KP_BACKEND_AUTO, &ctx), KP_OK);
    EXPECT(kp_context_is_gpu(ctx, &is_gpu), KP_OK);
    if (is_gpu)
        printf("     AUTO context runs on the GPU\n");
    else
        CHECK(!(require && strcmp(require, "1") == 0), "KERNPACK_REQUIRE_GPU=1 but the AUTO context has no GPU");
    check_modes(ctx, is_gpu);
    check_errors(ctx);
    kp_context_destroy(ctx);
    EXPECT(kp_context_create(KP_BACKEND_CPU, &ctx), KP_OK);
    check_modes(ctx, 0);
    kp_context_destroy(ctx);
    printf("all checks passed (C, %s)\n", is_gpu ? "GPU" : "CPU");
    return 0;
}
