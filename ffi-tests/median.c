/* End-to-end test of the kernpack C ABI for rank filters (median, rank and
 * percentile filters of N-D arrays, SciPy's semantics), written as a C99
 * user would: kp_rank_filter on several element types, every boundary mode,
 * footprints, origins and each way of choosing the rank, held to a direct
 * implementation here in C (gather the window, sort, pick); the defaults
 * (NULL options: the 3 x 3 median); the device entry point against the host
 * one; and bad input rejected with the output untouched. Exit status 0 when
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
#define MAXW 64

#define CHECK(cond, ...)                                                       \
    do {                                                                       \
        if (!(cond)) {                                                         \
            fprintf(stderr, "FAIL median.c:%d: check `%s`: ", __LINE__, #cond); \
            fprintf(stderr, __VA_ARGS__);                                      \
            fprintf(stderr, "\n");                                             \
            exit(1);                                                           \
        }                                                                      \
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

/* Random values of d: small integers with ties, or quarter steps for floats. */
static void fill(kp_dtype d, void *a, size_t n)
{
    size_t i;
    for (i = 0; i < n; i++) {
        double v;
        if (d == KP_DTYPE_U8)
            v = floor(uniform() * 256.0);
        else if (d == KP_DTYPE_F32 || d == KP_DTYPE_F64)
            v = floor(uniform() * 80.0 - 40.0) / 4.0;
        else
            v = floor(uniform() * 60.0 - 30.0) * (d == KP_DTYPE_I32 ? 100000.0 : 1000.0);
        set(d, a, i, v);
    }
}

/* `cval` as the element type stores it: integers truncated toward zero. */
static double as_stored(kp_dtype d, double cval)
{
    return (d == KP_DTYPE_F32) ? (double)(float)cval : (d == KP_DTYPE_F64) ? cval : trunc(cval);
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* The rank the options select among `count` points. */
static long selected_rank(const kp_rank_options *o, long count)
{
    if (o->rank_by == KP_RANK_BY_MEDIAN) return count / 2;
    if (o->rank_by == KP_RANK_BY_INDEX) return o->rank < 0 ? o->rank + count : o->rank;
    {
        double p = o->percentile < 0 ? o->percentile + 100.0 : o->percentile;
        return p == 100.0 ? count - 1 : (long)((double)count * p / 100.0);
    }
}

/* The rank filter of `o` (its size, footprint and origin all given) over
 * the array of `ndim` (at most 3) sizes: gather each window, sort, pick. */
static void reference(kp_dtype d, const void *in, double *out, const size_t *shape, size_t ndim,
                      const kp_rank_options *o)
{
    long n[3] = {1, 1, 1}, f[3] = {1, 1, 1}, org[3] = {0, 0, 0}, count = 0, rank, i[3], j[3];
    double window[MAXW];
    const double cval = as_stored(d, o->cval);
    size_t a, p, points = 1;
    /* Pad in front to 3 axes. */
    for (a = 0; a < ndim; a++) {
        n[3 - ndim + a] = (long)shape[a];
        f[3 - ndim + a] = (long)o->size[a];
        org[3 - ndim + a] = (long)o->origin[a];
        points *= o->size[a];
    }
    for (p = 0; p < points; p++) count += o->footprint[p] != 0;
    rank = selected_rank(o, count);
    for (i[0] = 0; i[0] < n[0]; i[0]++)
        for (i[1] = 0; i[1] < n[1]; i[1]++)
            for (i[2] = 0; i[2] < n[2]; i[2]++) {
                long k = 0;
                p = 0;
                for (j[0] = 0; j[0] < f[0]; j[0]++)
                    for (j[1] = 0; j[1] < f[1]; j[1]++)
                        for (j[2] = 0; j[2] < f[2]; j[2]++, p++) {
                            long at[3], b, flat = 0;
                            int outside = 0;
                            if (!o->footprint[p]) continue;
                            for (b = 0; b < 3; b++) {
                                at[b] = extend(i[b] + j[b] - (f[b] / 2 + org[b]), n[b], o->mode);
                                outside |= at[b] < 0;
                                flat = flat * n[b] + at[b];
                            }
                            window[k++] = outside ? cval : get(d, in, (size_t)flat);
                        }
                qsort(window, (size_t)count, sizeof window[0], cmp_double);
                out[(i[0] * n[1] + i[1]) * n[2] + i[2]] = window[rank];
            }
}

static void *in_buf, *out_buf, *dev_buf;
static double want[MAXN];

static void poison(void *a) { memset(a, 0xa5, MAXN * 8); }

/* NULL options: the median of a 3 x 3 box, reflect (SciPy's median_filter(size=3)). */
static void check_defaults(const kp_context *ctx)
{
    const size_t shape[2] = {13, 17}, size[2] = {3, 3};
    const int64_t origin[2] = {0, 0};
    const uint8_t box[9] = {1, 1, 1, 1, 1, 1, 1, 1, 1};
    kp_rank_options o = kp_rank_options_default();
    size_t i;
    CHECK(o.size == NULL && o.footprint == NULL && o.origin == NULL && o.rank_by == KP_RANK_BY_MEDIAN &&
              o.mode == KP_BOX_REFLECT && o.rank == 0 && o.percentile == 50.0 && o.cval == 0.0,
          "rank filter defaults");
    fill(KP_DTYPE_U8, in_buf, 13 * 17);
    poison(out_buf);
    EXPECT(kp_rank_filter(ctx, KP_DTYPE_U8, in_buf, out_buf, shape, 2, NULL), KP_OK);
    o.size = size, o.footprint = box, o.origin = origin;
    reference(KP_DTYPE_U8, in_buf, want, shape, 2, &o);
    for (i = 0; i < 13 * 17; i++)
        CHECK(get(KP_DTYPE_U8, out_buf, i) == want[i], "3 x 3 median at %lu: %g vs %g", (unsigned long)i,
              get(KP_DTYPE_U8, out_buf, i), want[i]);
    printf("ok   NULL options: the 3 x 3 median, reflect\n");
}

/* Every dtype, mode and rank choice over a 3-D array, with a footprint that
 * is not a full box and origins off centre. */
static void check_footprints(const kp_context *ctx)
{
    const size_t shape[3] = {5, 6, 7}, size[3] = {3, 1, 4}, n = 5 * 6 * 7;
    const int64_t origin[3] = {1, 0, -2};
    uint8_t fp[12];
    size_t t, i, p;
    unsigned mode, by;
    for (p = 0; p < 12; p++) fp[p] = (uint8_t)(p % 3 != 1 ? 1 + p : 0); /* 8 points */
    for (t = 0; t < 5; t++)
        for (mode = KP_BOX_REFLECT; mode <= KP_BOX_WRAP; mode++)
            for (by = KP_RANK_BY_MEDIAN; by <= KP_RANK_BY_PERCENTILE; by++) {
                const kp_dtype d = DTYPES[t];
                kp_rank_options o = kp_rank_options_default();
                o.size = size, o.footprint = fp, o.origin = origin, o.mode = mode, o.rank_by = by;
                o.rank = -3, o.percentile = 30.0;
                o.cval = d == KP_DTYPE_U8 ? 200.75 : -3.75;
                fill(d, in_buf, n);
                poison(out_buf);
                EXPECT(kp_rank_filter(ctx, d, in_buf, out_buf, shape, 3, &o), KP_OK);
                reference(d, in_buf, want, shape, 3, &o);
                for (i = 0; i < n; i++)
                    CHECK(get(d, out_buf, i) == want[i], "%s mode %u rank_by %u at %lu: %g vs %g", dtype_name(d),
                          mode, by, (unsigned long)i, get(d, out_buf, i), want[i]);
            }
    printf("ok   footprint, origins, every mode and rank choice, 5 dtypes: as the direct loop\n");
}

/* The device entry point gives the host one's bits. */
static void check_device(const kp_context *ctx)
{
    const size_t shape[2] = {19, 23}, n = 19 * 23;
    kp_rank_options o = kp_rank_options_default();
    uint64_t din = 0, dout = 0;
    size_t t;
    o.rank_by = KP_RANK_BY_PERCENTILE, o.percentile = 80.0, o.mode = KP_BOX_MIRROR;
    for (t = 0; t < 5; t++) {
        const kp_dtype d = DTYPES[t];
        const size_t bytes = n * dtype_size(d);
        fill(d, in_buf, n);
        EXPECT(kp_rank_filter(ctx, d, in_buf, out_buf, shape, 2, &o), KP_OK);
        EXPECT(kp_device_alloc(ctx, bytes, &din), KP_OK);
        EXPECT(kp_device_alloc(ctx, bytes, &dout), KP_OK);
        EXPECT(kp_memcpy_htod(ctx, din, in_buf, bytes), KP_OK);
        EXPECT(kp_rank_filter_device(ctx, d, din, dout, shape, 2, &o, 0), KP_OK);
        EXPECT(kp_memcpy_dtoh(ctx, dev_buf, dout, bytes), KP_OK);
        CHECK(memcmp(dev_buf, out_buf, bytes) == 0, "%s: device and host differ", dtype_name(d));
        /* In place on the device is refused, the output kept. */
        EXPECT(kp_rank_filter_device(ctx, d, dout, dout, shape, 2, &o, 0), KP_ERROR_INVALID_ARGUMENT);
        EXPECT(kp_memcpy_dtoh(ctx, dev_buf, dout, bytes), KP_OK);
        CHECK(memcmp(dev_buf, out_buf, bytes) == 0, "%s: a refused device call wrote", dtype_name(d));
        EXPECT(kp_device_free(ctx, din), KP_OK);
        EXPECT(kp_device_free(ctx, dout), KP_OK);
    }
    printf("ok   device entry point: the host bits; in place refused\n");
}

static void check_errors(const kp_context *ctx)
{
    const size_t shape[2] = {8, 9}, too_large[2] = {SIZE_MAX, 2}, size2[2] = {3, 2}, zero_size[2] = {3, 0};
    const int64_t far[2] = {0, 1};
    const uint8_t none[9] = {0};
    kp_rank_options o;
    size_t i;
    fill(KP_DTYPE_F64, in_buf, 72);
    poison(out_buf);
    /* NULL pointers, an unknown dtype, a shape whose size overflows, in place. */
    EXPECT(kp_rank_filter(NULL, KP_DTYPE_F64, in_buf, out_buf, shape, 2, NULL), KP_ERROR_NULL_POINTER);
    EXPECT(kp_rank_filter(ctx, KP_DTYPE_F64, NULL, out_buf, shape, 2, NULL), KP_ERROR_NULL_POINTER);
    EXPECT(kp_rank_filter(ctx, KP_DTYPE_F64, in_buf, NULL, shape, 2, NULL), KP_ERROR_NULL_POINTER);
    EXPECT(kp_rank_filter(ctx, KP_DTYPE_F64, in_buf, out_buf, NULL, 2, NULL), KP_ERROR_NULL_POINTER);
    EXPECT(kp_rank_filter(ctx, 0, in_buf, out_buf, shape, 2, NULL), KP_ERROR_INVALID_ARGUMENT);
    CHECK(strstr(kp_last_error_message(), "dtype") != NULL, "message: %s", kp_last_error_message());
    EXPECT(kp_rank_filter(ctx, 42, in_buf, out_buf, shape, 2, NULL), KP_ERROR_INVALID_ARGUMENT);
    EXPECT(kp_rank_filter(ctx, KP_DTYPE_F64, in_buf, out_buf, too_large, 2, NULL), KP_ERROR_INVALID_ARGUMENT);
    EXPECT(kp_rank_filter(ctx, KP_DTYPE_F64, out_buf, out_buf, shape, 2, NULL), KP_ERROR_INVALID_ARGUMENT);
    CHECK(strstr(kp_last_error_message(), "overlap") != NULL, "message: %s", kp_last_error_message());
    /* Options: an unknown rank choice or mode, the interior mode, an empty
     * box, an origin past the box, no point set, a rank or percentile out
     * of range, a cval the type cannot hold. */
    o = kp_rank_options_default(), o.rank_by = 3;
    EXPECT(kp_rank_filter(ctx, KP_DTYPE_F64, in_buf, out_buf, shape, 2, &o), KP_ERROR_INVALID_ARGUMENT);
    o = kp_rank_options_default(), o.mode = 9;
    EXPECT(kp_rank_filter(ctx, KP_DTYPE_F64, in_buf, out_buf, shape, 2, &o), KP_ERROR_INVALID_ARGUMENT);
    o.mode = KP_BOX_INTERIOR;
    EXPECT(kp_rank_filter(ctx, KP_DTYPE_F64, in_buf, out_buf, shape, 2, &o), KP_ERROR_INVALID_ARGUMENT);
    o = kp_rank_options_default(), o.size = zero_size;
    EXPECT(kp_rank_filter(ctx, KP_DTYPE_F64, in_buf, out_buf, shape, 2, &o), KP_ERROR_INVALID_ARGUMENT);
    o = kp_rank_options_default(), o.size = size2, o.origin = far;
    EXPECT(kp_rank_filter(ctx, KP_DTYPE_F64, in_buf, out_buf, shape, 2, &o), KP_ERROR_INVALID_ARGUMENT);
    CHECK(strstr(kp_last_error_message(), "origin 1 along axis 1") != NULL, "message: %s", kp_last_error_message());
    o = kp_rank_options_default(), o.footprint = none;
    EXPECT(kp_rank_filter(ctx, KP_DTYPE_F64, in_buf, out_buf, shape, 2, &o), KP_ERROR_INVALID_ARGUMENT);
    CHECK(strstr(kp_last_error_message(), "no point") != NULL, "message: %s", kp_last_error_message());
    o = kp_rank_options_default(), o.rank_by = KP_RANK_BY_INDEX, o.rank = 9;
    EXPECT(kp_rank_filter(ctx, KP_DTYPE_F64, in_buf, out_buf, shape, 2, &o), KP_ERROR_INVALID_ARGUMENT);
    o.rank = -10;
    EXPECT(kp_rank_filter(ctx, KP_DTYPE_F64, in_buf, out_buf, shape, 2, &o), KP_ERROR_INVALID_ARGUMENT);
    o = kp_rank_options_default(), o.rank_by = KP_RANK_BY_PERCENTILE, o.percentile = 150.0;
    EXPECT(kp_rank_filter(ctx, KP_DTYPE_F64, in_buf, out_buf, shape, 2, &o), KP_ERROR_INVALID_ARGUMENT);
    o.percentile = nan("");
    EXPECT(kp_rank_filter(ctx, KP_DTYPE_F64, in_buf, out_buf, shape, 2, &o), KP_ERROR_INVALID_ARGUMENT);
    o = kp_rank_options_default(), o.mode = KP_BOX_CONSTANT, o.cval = 256.0;
    EXPECT(kp_rank_filter(ctx, KP_DTYPE_U8, in_buf, out_buf, shape, 2, &o), KP_ERROR_INVALID_ARGUMENT);
    CHECK(strstr(kp_last_error_message(), "uint8") != NULL, "message: %s", kp_last_error_message());
    for (i = 0; i < MAXN * 8; i++)
        CHECK(((uint8_t *)out_buf)[i] == 0xa5, "output changed on error at byte %lu", (unsigned long)i);
    /* -0.5 truncates to 0, which uint8 holds. */
    o.cval = -0.5;
    EXPECT(kp_rank_filter(ctx, KP_DTYPE_U8, in_buf, out_buf, shape, 2, &o), KP_OK);
    /* The device entry point needs a GPU context. */
    {
        kp_context *cpu = NULL;
        EXPECT(kp_context_create(KP_BACKEND_CPU, &cpu), KP_OK);
        EXPECT(kp_rank_filter_device(cpu, KP_DTYPE_F32, 8, 4096, shape, 2, NULL, 0), KP_ERROR_NO_GPU);
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
    check_footprints(ctx);
    if (is_gpu) check_device(ctx);
    check_errors(ctx);
    kp_context_destroy(ctx);
    EXPECT(kp_context_create(KP_BACKEND_CPU, &ctx), KP_OK);
    check_defaults(ctx);
    check_footprints(ctx);
    check_errors(ctx);
    kp_context_destroy(ctx);
    free(in_buf), free(out_buf), free(dev_buf);
    printf("all checks passed (C, %s)\n", is_gpu ? "GPU" : "CPU");
    return 0;
}
