/* End-to-end test of the kernpack C ABI for the N-D box filter (SciPy's
 * uniform_filter with a size, origin and mode per axis), written as a C99
 * user would: kp_uniform_filter_nd on several element types, every
 * boundary mode along every axis, even windows, windows past the array,
 * origins, held to a direct implementation here in C (one pass per axis,
 * each window summed point by point, the mean stored as the element type
 * stores it: integers truncated toward zero); the defaults (only the size
 * set: origin 0, reflect); the device entry point against the host one;
 * and bad input rejected with the output untouched. Exit status 0 when
 * every check passes. With KERNPACK_REQUIRE_GPU=1 a missing GPU fails.
 *
 * Built and run by tests/ffi_programs.rs. */
#include "kernpack.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAXN 512

#define CHECK(cond, ...)                                                        \
    do {                                                                        \
        if (!(cond)) {                                                          \
            fprintf(stderr, "FAIL uniform.c:%d: check `%s`: ", __LINE__, #cond); \
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

#define HAS(needle) \
    CHECK(strstr(kp_last_error_message(), needle) != NULL, "message: %s", kp_last_error_message())

static uint64_t rng_state = 0x9e3779b97f4a7c15ULL;
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

/* The element types this program tries, their sizes and names. */
static const kp_dtype DTYPES[5] = {KP_DTYPE_U8, KP_DTYPE_I16, KP_DTYPE_I32, KP_DTYPE_F32, KP_DTYPE_F64};
static size_t dtype_size(kp_dtype d)
{
    return d == KP_DTYPE_U8 ? 1 : d == KP_DTYPE_I16 ? 2 : (d == KP_DTYPE_I32 || d == KP_DTYPE_F32) ? 4 : 8;
}
static const char *dtype_name(kp_dtype d)
{
    return d == KP_DTYPE_U8 ? "uint8" : d == KP_DTYPE_I16 ? "int16" : d == KP_DTYPE_I32 ? "int32" :
           d == KP_DTYPE_F32 ? "float" : "double";
}
static int is_float(kp_dtype d) { return d == KP_DTYPE_F32 || d == KP_DTYPE_F64; }

/* Value i of an array of dtype d, as a double (exact for these types). */
static double get(kp_dtype d, const void *a, size_t i)
{
    switch (d) {
    case KP_DTYPE_U8: return ((const uint8_t *)a)[i];
    case KP_DTYPE_I16: return ((const int16_t *)a)[i];
    case KP_DTYPE_I32: return ((const int32_t *)a)[i];
    case KP_DTYPE_F32: return ((const float *)a)[i];
    default: return ((const double *)a)[i];
    }
}

static void set(kp_dtype d, void *a, size_t i, double v)
{
    switch (d) {
    case KP_DTYPE_U8: ((uint8_t *)a)[i] = (uint8_t)v; break;
    case KP_DTYPE_I16: ((int16_t *)a)[i] = (int16_t)v; break;
    case KP_DTYPE_I32: ((int32_t *)a)[i] = (int32_t)v; break;
    case KP_DTYPE_F32: ((float *)a)[i] = (float)v; break;
    default: ((double *)a)[i] = v;
    }
}

/* Random values of d over most of its range, quarter steps for floats. */
static void fill(kp_dtype d, void *a, size_t n)
{
    size_t i;
    for (i = 0; i < n; i++) {
        double v;
        if (d == KP_DTYPE_U8)
            v = floor(uniform() * 256.0);
        else if (d == KP_DTYPE_I16)
            v = floor(uniform() * 65536.0) - 32768.0;
        else if (d == KP_DTYPE_I32)
            v = floor(uniform() * 4294967296.0) - 2147483648.0;
        else
            v = floor(uniform() * 320.0 - 160.0) / 4.0;
        set(d, a, i, v);
    }
}

/* The box filter of `size`, `origin`, `mode` (all given) over the array of
 * `ndim` (at most 3) sizes: one pass per axis of a size above 1, each
 * window summed point by point (integers in 64 bits, exactly; floats in
 * double), the mean stored as d stores it. */
static void reference(kp_dtype d, const void *in, double *out, const size_t *shape, size_t ndim,
                      const size_t *size, const int64_t *origin, const uint32_t *mode, double cval)
{
    static double from[MAXN];
    long n[3] = {1, 1, 1}, at, i, j, k, c;
    size_t a, total = 1, p;
    for (a = 0; a < ndim; a++) n[3 - ndim + a] = (long)shape[a], total *= shape[a];
    for (p = 0; p < total; p++) out[p] = get(d, in, p);
    for (a = 0; a < ndim; a++) {
        const long s = (long)size[a], first = -(s / 2 + (long)origin[a]);
        const long axis = (long)(3 - ndim + a);
        long outer = 1, inner = 1, len = n[axis];
        if (s == 1) continue;
        for (k = 0; k < axis; k++) outer *= n[k];
        for (k = axis + 1; k < 3; k++) inner *= n[k];
        memcpy(from, out, total * sizeof from[0]);
        for (k = 0; k < outer; k++)
            for (i = 0; i < len; i++)
                for (c = 0; c < inner; c++) {
                    long long isum = 0;
                    double fsum = 0.0;
                    for (j = 0; j < s; j++) {
                        double v;
                        at = extend(i + first + j, len, mode[a]);
                        v = at < 0 ? cval : from[(k * len + at) * inner + c];
                        if (is_float(d))
                            fsum += v;
                        else
                            isum += (long long)v;
                    }
                    out[(k * len + i) * inner + c] =
                        d == KP_DTYPE_F32   ? (double)(float)(fsum / (double)s)
                        : d == KP_DTYPE_F64 ? fsum / (double)s
                                            : (double)(isum / s); /* C truncates toward zero */
                }
    }
}

/* Integers exactly; floats within a bound on the rounding of the running
 * sums (relative to the largest value), as the GPU's may differ in the
 * last bits. */
static int same(kp_dtype d, double got, double want, double scale)
{
    if (!is_float(d)) return got == want;
    return fabs(got - want) <= (d == KP_DTYPE_F32 ? 1e-5 : 1e-10) * scale;
}

static void *in_buf, *out_buf, *dev_buf;
static double want[MAXN];

static void poison(void *a) { memset(a, 0xa5, MAXN * 8); }

/* Options: the size alone means origin 0 and reflect along every axis. */
static void check_defaults(const kp_context *ctx)
{
    const size_t shape[2] = {13, 17}, size[2] = {3, 4};
    const int64_t origin[2] = {0, 0};
    const uint32_t mode[2] = {KP_BOX_REFLECT, KP_BOX_REFLECT};
    kp_uniform_nd_options o = kp_uniform_nd_options_default();
    size_t i;
    CHECK(o.size == NULL && o.origin == NULL && o.mode == NULL && o.cval == 0.0, "box filter defaults");
    fill(KP_DTYPE_U8, in_buf, 13 * 17);
    poison(out_buf);
    /* The size is required. */
    EXPECT(kp_uniform_filter_nd(ctx, KP_DTYPE_U8, in_buf, out_buf, shape, 2, &o), KP_ERROR_NULL_POINTER);
    HAS("size is NULL");
    EXPECT(kp_uniform_filter_nd(ctx, KP_DTYPE_U8, in_buf, out_buf, shape, 2, NULL), KP_ERROR_NULL_POINTER);
    HAS("options is NULL");
    o.size = size;
    EXPECT(kp_uniform_filter_nd(ctx, KP_DTYPE_U8, in_buf, out_buf, shape, 2, &o), KP_OK);
    reference(KP_DTYPE_U8, in_buf, want, shape, 2, size, origin, mode, 0.0);
    for (i = 0; i < 13 * 17; i++)
        CHECK(get(KP_DTYPE_U8, out_buf, i) == want[i], "3 x 4 box at %lu: %g vs %g", (unsigned long)i,
              get(KP_DTYPE_U8, out_buf, i), want[i]);
    printf("ok   size alone: origin 0, reflect along every axis\n");
}

/* Every dtype, and every mode along every axis of a 3-D array, with even
 * windows, windows past the array and origins off centre. */
static void check_windows(const kp_context *ctx)
{
    const size_t shape[3] = {5, 6, 7}, n = 5 * 6 * 7;
    const size_t sizes[2][3] = {{3, 2, 4}, {7, 1, 10}};
    const int64_t origins[2][3] = {{1, 0, -2}, {-3, 0, 4}};
    size_t t, i, w, a;
    unsigned m;
    for (t = 0; t < 5; t++)
        for (w = 0; w < 2; w++)
            for (m = 0; m < 5; m++) {
                const kp_dtype d = DTYPES[t];
                uint32_t mode[3];
                double scale = 0.0;
                kp_uniform_nd_options o = kp_uniform_nd_options_default();
                for (a = 0; a < 3; a++) mode[a] = (m + a) % 5; /* KP_BOX_REFLECT .. KP_BOX_WRAP */
                o.size = sizes[w], o.origin = origins[w], o.mode = mode;
                o.cval = d == KP_DTYPE_U8 ? 200.0 : is_float(d) ? -3.75 : -3.0;
                fill(d, in_buf, n);
                for (i = 0; i < n; i++) scale = fmax(scale, fabs(get(d, in_buf, i)));
                poison(out_buf);
                EXPECT(kp_uniform_filter_nd(ctx, d, in_buf, out_buf, shape, 3, &o), KP_OK);
                reference(d, in_buf, want, shape, 3, o.size, o.origin, o.mode, o.cval);
                for (i = 0; i < n; i++)
                    CHECK(same(d, get(d, out_buf, i), want[i], scale), "%s window %lu modes %u %u %u at %lu: %.17g vs %.17g",
                          dtype_name(d), (unsigned long)w, mode[0], mode[1], mode[2], (unsigned long)i,
                          get(d, out_buf, i), want[i]);
            }
    printf("ok   every mode along every axis, even and wide windows, origins, 5 dtypes: as the direct loop\n");
}

/* The device entry point gives the host one's bits. */
static void check_device(const kp_context *ctx)
{
    const size_t shape[2] = {19, 23}, n = 19 * 23, size[2] = {4, 5};
    const uint32_t mode[2] = {KP_BOX_MIRROR, KP_BOX_CONSTANT};
    kp_uniform_nd_options o = kp_uniform_nd_options_default();
    uint64_t din = 0, dout = 0;
    size_t t;
    o.size = size, o.mode = mode, o.cval = 5.0;
    for (t = 0; t < 5; t++) {
        const kp_dtype d = DTYPES[t];
        const size_t bytes = n * dtype_size(d);
        fill(d, in_buf, n);
        EXPECT(kp_uniform_filter_nd(ctx, d, in_buf, out_buf, shape, 2, &o), KP_OK);
        EXPECT(kp_device_alloc(ctx, bytes, &din), KP_OK);
        EXPECT(kp_device_alloc(ctx, bytes, &dout), KP_OK);
        EXPECT(kp_memcpy_htod(ctx, din, in_buf, bytes), KP_OK);
        EXPECT(kp_uniform_filter_nd_device(ctx, d, din, dout, shape, 2, &o, 0), KP_OK);
        EXPECT(kp_memcpy_dtoh(ctx, dev_buf, dout, bytes), KP_OK);
        CHECK(memcmp(dev_buf, out_buf, bytes) == 0, "%s: device and host differ", dtype_name(d));
        /* In place on the device is refused, the output kept. */
        EXPECT(kp_uniform_filter_nd_device(ctx, d, dout, dout, shape, 2, &o, 0), KP_ERROR_INVALID_ARGUMENT);
        EXPECT(kp_memcpy_dtoh(ctx, dev_buf, dout, bytes), KP_OK);
        CHECK(memcmp(dev_buf, out_buf, bytes) == 0, "%s: a refused device call wrote", dtype_name(d));
        EXPECT(kp_device_free(ctx, din), KP_OK);
        EXPECT(kp_device_free(ctx, dout), KP_OK);
    }
    printf("ok   device entry point: the host bits; in place refused\n");
}

static void check_errors(const kp_context *ctx)
{
    const size_t shape[2] = {8, 9}, too_large[2] = {SIZE_MAX, 2}, size[2] = {3, 3}, zero_size[2] = {3, 0};
    const int64_t far[2] = {0, 2};
    const uint32_t unknown[2] = {KP_BOX_REFLECT, 9}, interior[2] = {KP_BOX_INTERIOR, KP_BOX_REFLECT};
    kp_uniform_nd_options o = kp_uniform_nd_options_default();
    size_t i;
    o.size = size;
    fill(KP_DTYPE_F64, in_buf, 72);
    poison(out_buf);
    /* NULL pointers, an unknown dtype, a shape whose size overflows, in place. */
    EXPECT(kp_uniform_filter_nd(NULL, KP_DTYPE_F64, in_buf, out_buf, shape, 2, &o), KP_ERROR_NULL_POINTER);
    EXPECT(kp_uniform_filter_nd(ctx, KP_DTYPE_F64, NULL, out_buf, shape, 2, &o), KP_ERROR_NULL_POINTER);
    EXPECT(kp_uniform_filter_nd(ctx, KP_DTYPE_F64, in_buf, NULL, shape, 2, &o), KP_ERROR_NULL_POINTER);
    EXPECT(kp_uniform_filter_nd(ctx, KP_DTYPE_F64, in_buf, out_buf, NULL, 2, &o), KP_ERROR_NULL_POINTER);
    EXPECT(kp_uniform_filter_nd(ctx, 0, in_buf, out_buf, shape, 2, &o), KP_ERROR_INVALID_ARGUMENT);
    HAS("dtype");
    EXPECT(kp_uniform_filter_nd(ctx, 42, in_buf, out_buf, shape, 2, &o), KP_ERROR_INVALID_ARGUMENT);
    EXPECT(kp_uniform_filter_nd(ctx, KP_DTYPE_F64, in_buf, out_buf, too_large, 2, &o), KP_ERROR_INVALID_ARGUMENT);
    EXPECT(kp_uniform_filter_nd(ctx, KP_DTYPE_F64, in_buf, out_buf, shape, SIZE_MAX, &o), KP_ERROR_INVALID_ARGUMENT);
    EXPECT(kp_uniform_filter_nd(ctx, KP_DTYPE_F64, out_buf, out_buf, shape, 2, &o), KP_ERROR_INVALID_ARGUMENT);
    HAS("overlap");
    /* Options: an unknown mode, the interior mode, an empty window, an
     * origin past the window, a cval an integer type cannot hold. */
    o.mode = unknown;
    EXPECT(kp_uniform_filter_nd(ctx, KP_DTYPE_F64, in_buf, out_buf, shape, 2, &o), KP_ERROR_INVALID_ARGUMENT);
    HAS("unknown boundary mode 9 along axis 1");
    o.mode = interior;
    EXPECT(kp_uniform_filter_nd(ctx, KP_DTYPE_F64, in_buf, out_buf, shape, 2, &o), KP_ERROR_INVALID_ARGUMENT);
    HAS("interior");
    o.mode = NULL, o.size = zero_size;
    EXPECT(kp_uniform_filter_nd(ctx, KP_DTYPE_F64, in_buf, out_buf, shape, 2, &o), KP_ERROR_INVALID_ARGUMENT);
    HAS("size 0 along axis 1");
    o.size = size, o.origin = far;
    EXPECT(kp_uniform_filter_nd(ctx, KP_DTYPE_F64, in_buf, out_buf, shape, 2, &o), KP_ERROR_INVALID_ARGUMENT);
    HAS("origin 2 along axis 1");
    o.origin = NULL, o.cval = 0.5;
    EXPECT(kp_uniform_filter_nd(ctx, KP_DTYPE_I32, in_buf, out_buf, shape, 2, &o), KP_ERROR_INVALID_ARGUMENT);
    HAS("cval 0.5");
    o.cval = 256.0;
    EXPECT(kp_uniform_filter_nd(ctx, KP_DTYPE_U8, in_buf, out_buf, shape, 2, &o), KP_ERROR_INVALID_ARGUMENT);
    HAS("uint8");
    for (i = 0; i < MAXN * 8; i++)
        CHECK(((uint8_t *)out_buf)[i] == 0xa5, "output changed on error at byte %lu", (unsigned long)i);
    /* A fractional cval is a float's. */
    o.cval = 0.5;
    EXPECT(kp_uniform_filter_nd(ctx, KP_DTYPE_F32, in_buf, out_buf, shape, 2, &o), KP_OK);
    /* The device entry point needs a GPU context. */
    {
        kp_context *cpu = NULL;
        EXPECT(kp_context_create(KP_BACKEND_CPU, &cpu), KP_OK);
        EXPECT(kp_uniform_filter_nd_device(cpu, KP_DTYPE_F32, 8, 4096, shape, 2, &o, 0), KP_ERROR_NO_GPU);
        kp_context_destroy(cpu);
    }
    printf("ok   bad input rejected, nothing written\n");
}

int main(void)
{
    const char *require = getenv("KERNPACK_REQUIRE_GPU");
    kp_context *ctx = NULL;
    int is_gpu = 0;
    in_buf = malloc(MAXN * 8), out_buf = malloc(MAXN * 8), dev_buf = malloc(MAXN * 8);
    CHECK(in_buf && out_buf && dev_buf, "malloc");
    EXPECT(kp_context_create(KP_BACKEND_AUTO, &ctx), KP_OK);
    EXPECT(kp_context_is_gpu(ctx, &is_gpu), KP_OK);
    if (is_gpu)
        printf("     AUTO context runs on the GPU\n");
    else
        CHECK(!(require && strcmp(require, "1") == 0), "KERNPACK_REQUIRE_GPU=1 but the AUTO context has no GPU");
    check_defaults(ctx);
    check_windows(ctx);
    if (is_gpu) check_device(ctx);
    check_errors(ctx);
    kp_context_destroy(ctx);
    EXPECT(kp_context_create(KP_BACKEND_CPU, &ctx), KP_OK);
    check_defaults(ctx);
    check_windows(ctx);
    check_errors(ctx);
    kp_context_destroy(ctx);
    free(in_buf), free(out_buf), free(dev_buf);
    printf("all checks passed (C, %s)\n", is_gpu ? "GPU" : "CPU");
    return 0;
}
