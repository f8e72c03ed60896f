/* End-to-end test of the kernpack C ABI for the ODE ensembles (Lorenz 96,
 * Lorenz 2005 Model II / III, states at chosen steps, adaptive Lorenz 63) and the periodic window
 * sum, written as a C99 user would. Results are checked against a tiny
 * re-implementation of MODELS.md below (same summation order; for the
 * adaptive run, a fine fixed-step RK4 run), and bad parameters against
 * their status codes, with outputs left untouched.
 *
 * Exit status 0 when every check passes; the first failed check is printed
 * to stderr and the program exits with 1. With KERNPACK_REQUIRE_GPU=1 a
 * missing GPU is a failure. Built and run by tests/ffi_programs.rs. */
#include "kernpack.h"

#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define POISON (-12345.0)
#define MAXN 256

static const char *group = "setup";

static void fail(int line, const char *check, const char *fmt, ...)
{
    va_list args;
    fprintf(stderr, "FAIL [%s] ode_lorenz.c:%d: check `%s`: ", group, line, check);
    va_start(args, fmt);
    vfprintf(stderr, fmt, args);
    va_end(args);
    fprintf(stderr, "\n  kp_last_error_message: \"%s\"\n", kp_last_error_message());
    exit(1);
}

#define CHECK(cond, ...)                        \
    do {                                        \
        if (!(cond))                            \
            fail(__LINE__, #cond, __VA_ARGS__); \
    } while (0)
#define EXPECT_STATUS(call, want) \
    do { kp_status s_ = (call); CHECK(s_ == (want), "status %d, expected %d", (int)s_, (int)(want)); } while (0)

static int idx(int k, int n) { return ((k % n) + n) % n; }

/* --- the reference: MODELS.md sections 2 and 3, in their summation order --- */
static void l96_f(const kp_lorenz96_params *p, const double *x, double *dx)
{
    int n = (int)p->n;
    for (int k = 0; k < n; ++k)
        dx[k] = (x[idx(k + 1, n)] - x[idx(k - 2, n)]) * x[idx(k - 1, n)] - x[k] + p->forcing;
}

static void l05_f(const kp_lorenz05_params *p, const double *z, double *dz)
{
    int n = (int)p->n, K = (int)p->k, H = K / 2, J = (int)p->j;
    double X[MAXN], Y[MAXN], W[MAXN];
    if (p->model == 3) {
        double jf = J, alpha = (3.0 * jf * jf + 3.0) / (2.0 * jf * jf * jf + 4.0 * jf);
        double beta = (2.0 * jf * jf + 1.0) / (jf * jf * jf * jf + 2.0 * jf * jf);
        for (int i = 0; i < n; ++i) {
            double acc = 0.0;
            for (int j = -J; j <= J; ++j) {
                double a = alpha - beta * (double)abs(j);
                if (j == -J || j == J) a *= 0.5;
                acc = j == -J ? a * z[idx(i - j, n)] : acc + a * z[idx(i - j, n)];
            }
            X[i] = acc;
            Y[i] = z[i] - acc;
        }
    } else {
        for (int i = 0; i < n; ++i) X[i] = z[i], Y[i] = 0.0;
    }
    for (int i = 0; i < n; ++i) {
        double acc = X[idx(i + H, n)] / 2.0;
        for (int j = -H + 1; j < H; ++j) acc += X[idx(i - j, n)];
        acc += X[idx(i - H, n)] / 2.0;
        W[i] = acc / K;
    }
    for (int i = 0; i < n; ++i) {
        double s = W[idx(i - K - H, n)] * X[idx(i + K - H, n)] / 2.0;
        for (int j = -H + 1; j < H; ++j) s += W[idx(i - K + j, n)] * X[idx(i + K + j, n)];
        s += W[idx(i - K + H, n)] * X[idx(i + K + H, n)] / 2.0;
        double xx = -W[idx(i - 2 * K, n)] * W[idx(i - K, n)] + s / K;
        int m2 = idx(i - 2, n), m1 = idx(i - 1, n), p1 = idx(i + 1, n);
        if (p->model == 3)
            dz[i] = xx + p->b * p->b * (-Y[m2] * Y[m1] + Y[m1] * Y[p1]) +
                    p->c * (-Y[m2] * X[m1] + Y[m1] * X[p1]) - X[i] - p->b * Y[i] + p->forcing;
        else
            dz[i] = xx - X[i] + p->forcing;
    }
}

typedef void (*tendency)(const void *, const double *, double *);

static void rk4(const void *p, tendency f, int n, double dt, double *z)
{
    double s[MAXN], d[MAXN], inc[MAXN];
    memcpy(s, z, n * sizeof(double));
    for (int st = 0; st < 4; ++st) {
        f(p, s, d);
        for (int i = 0; i < n; ++i) {
            double k = dt * d[i];
            if (st == 0) inc[i] = k / 6.0, s[i] = z[i] + k * 0.5;
            else if (st == 1) inc[i] += k / 3.0, s[i] = z[i] + k * 0.5;
            else if (st == 2) inc[i] += k / 3.0, s[i] = z[i] + k;
            else inc[i] += k / 6.0, z[i] += inc[i];
        }
    }
}

/* Lorenz 63, one member. */
typedef struct { double sigma, rho, beta; } l63_params;
static void l63_f(const l63_params *p, const double *s, double *d)
{
    d[0] = p->sigma * (s[1] - s[0]);
    d[1] = s[0] * (p->rho - s[2]) - s[1];
    d[2] = s[0] * s[1] - p->beta * s[2];
}

static double rel_err(const double *a, const double *b, size_t len)
{
    double err = 0.0, scale = 0.0;
    for (size_t i = 0; i < len; ++i) {
        err = fmax(err, fabs(a[i] - b[i]));
        scale = fmax(scale, fabs(b[i]));
    }
    return err / scale;
}

static uint64_t rng_state = 0x1234567;
static double uniform(double lo, double hi)
{
    rng_state = rng_state * 6364136223846793005ull + 1442695040888963407ull;
    return lo + (hi - lo) * (double)(rng_state >> 11) / 9007199254740992.0;
}

/* --- checks --- */
#define MEMBERS 3
#define STEPS 6
#define EVERY 3

static void check_l96(kp_context *ctx)
{
    kp_lorenz96_params p = kp_lorenz96_default_params();
    CHECK(p.n == 40 && p.forcing == 8.0 && p.dt == 0.05, "defaults %zu %g %g", (size_t)p.n, p.forcing, p.dt);
    size_t len = MEMBERS * p.n, tlen = kp_lorenz_trajectory_len(MEMBERS, p.n, STEPS, EVERY);
    CHECK(tlen == 3 * len, "trajectory_len %zu", tlen);
    double z0[MEMBERS * 40], want[MEMBERS * 40], out[MEMBERS * 40], traj[3 * MEMBERS * 40];
    for (size_t i = 0; i < len; ++i) z0[i] = uniform(-5.0, 10.0), want[i] = z0[i], out[i] = POISON;
    for (size_t i = 0; i < tlen; ++i) traj[i] = POISON;
    for (int m = 0; m < MEMBERS; ++m)
        for (int s = 0; s < STEPS; ++s) rk4(&p, (tendency)l96_f, (int)p.n, p.dt, want + m * p.n);
    EXPECT_STATUS(kp_lorenz96_f64(ctx, &p, z0, MEMBERS, STEPS, EVERY, out, traj, tlen), KP_OK);
    CHECK(rel_err(out, want, len) < 1e-12, "L96 error %g", rel_err(out, want, len));
    CHECK(memcmp(traj, z0, sizeof z0) == 0, "frame 0 is not the initial state");
    CHECK(rel_err(traj + 2 * len, want, len) < 1e-12, "last frame error %g", rel_err(traj + 2 * len, want, len));

    /* f32: fast-math f32 against the f64 reference, 6 steps. */
    float z32[MEMBERS * 40], out32[MEMBERS * 40];
    double back[MEMBERS * 40];
    for (size_t i = 0; i < len; ++i) z32[i] = (float)z0[i], out32[i] = (float)POISON;
    EXPECT_STATUS(kp_lorenz96_f32(ctx, NULL, z32, MEMBERS, STEPS, 0, out32, NULL, 0), KP_OK);
    for (size_t i = 0; i < len; ++i) back[i] = out32[i];
    CHECK(rel_err(back, want, len) < 1e-4, "L96 f32 error %g", rel_err(back, want, len));

    /* The forcing in the state, F = 8 at every site: the plain run's X, F kept. */
    kp_lorenz96_params forced = p;
    forced.forcing_in_state = 1, forced.forcing = -1e300; /* unused */
    double zf[2 * MEMBERS * 40], outf[2 * MEMBERS * 40];
    for (int m = 0; m < MEMBERS; ++m)
        for (size_t i = 0; i < p.n; ++i)
            zf[2 * m * p.n + i] = z0[m * p.n + i], zf[(2 * m + 1) * p.n + i] = p.forcing;
    EXPECT_STATUS(kp_lorenz96_f64(ctx, &forced, zf, MEMBERS, STEPS, 0, outf, NULL, 0), KP_OK);
    for (int m = 0; m < MEMBERS; ++m)
        for (size_t i = 0; i < p.n; ++i) {
            CHECK(fabs(outf[2 * m * p.n + i] - out[m * p.n + i]) <= 1e-12 * fabs(out[m * p.n + i]) + 1e-12,
                  "forced member %d site %zu", m, i);
            CHECK(outf[(2 * m + 1) * p.n + i] == p.forcing, "F changed at member %d site %zu", m, i);
        }

    /* Noise: the same seed draws the same noise, another seed another. */
    kp_lorenz96_params noisy = p;
    noisy.noise = 0.5, noisy.seed = 99;
    double n1[MEMBERS * 40], n2[MEMBERS * 40];
    EXPECT_STATUS(kp_lorenz96_f64(ctx, &noisy, z0, MEMBERS, STEPS, 0, n1, NULL, 0), KP_OK);
    EXPECT_STATUS(kp_lorenz96_f64(ctx, &noisy, z0, MEMBERS, STEPS, 0, n2, NULL, 0), KP_OK);
    CHECK(memcmp(n1, n2, sizeof n1) == 0, "a seed drew different noise twice");
    CHECK(rel_err(n1, out, len) > 1e-6, "noise changed nothing (%g)", rel_err(n1, out, len));
    noisy.seed = 100;
    EXPECT_STATUS(kp_lorenz96_f64(ctx, &noisy, z0, MEMBERS, STEPS, 0, n2, NULL, 0), KP_OK);
    CHECK(memcmp(n1, n2, sizeof n1) != 0, "two seeds drew the same noise");
    /* step_offset: the run continued in a second call (the steps before it
     * as the offset) is bitwise the run in one call. */
    double head[MEMBERS * 40], tail[MEMBERS * 40];
    EXPECT_STATUS(kp_lorenz96_f64(ctx, &noisy, z0, MEMBERS, 2, 0, head, NULL, 0), KP_OK);
    noisy.step_offset = 2;
    EXPECT_STATUS(kp_lorenz96_f64(ctx, &noisy, head, MEMBERS, STEPS - 2, 0, tail, NULL, 0), KP_OK);
    CHECK(memcmp(tail, n2, sizeof tail) == 0, "a run continued with step_offset differs from the whole run");
    noisy.step_offset = 0;
    EXPECT_STATUS(kp_lorenz96_f64(ctx, &noisy, head, MEMBERS, STEPS - 2, 0, tail, NULL, 0), KP_OK);
    CHECK(memcmp(tail, n2, sizeof tail) != 0, "without step_offset the continuation drew the same noise");

    /* Bad input: an error, and out untouched. */
    for (size_t i = 0; i < len; ++i) out[i] = POISON;
    kp_lorenz96_params bad = p;
    bad.noise = -1.0;
    EXPECT_STATUS(kp_lorenz96_f64(ctx, &bad, z0, 1, 1, 0, out, NULL, 0), KP_ERROR_INVALID_ARGUMENT);
    CHECK(strstr(kp_last_error_message(), "noise") != NULL, "message lacks noise");
    bad.noise = NAN;
    EXPECT_STATUS(kp_lorenz96_f64(ctx, &bad, z0, 1, 1, 0, out, NULL, 0), KP_ERROR_INVALID_ARGUMENT);
    bad = p, bad.step_offset = ((uint64_t)1 << 62) + 1;
    EXPECT_STATUS(kp_lorenz96_f64(ctx, &bad, z0, 1, 1, 0, out, NULL, 0), KP_ERROR_INVALID_ARGUMENT);
    CHECK(strstr(kp_last_error_message(), "step_offset") != NULL, "message lacks step_offset");
    bad = p;
    bad.n = 3;
    EXPECT_STATUS(kp_lorenz96_f64(ctx, &bad, z0, 1, 1, 0, out, NULL, 0), KP_ERROR_INVALID_ARGUMENT);
    bad = p, bad.dt = -1.0;
    EXPECT_STATUS(kp_lorenz96_f64(ctx, &bad, z0, 1, 1, 0, out, NULL, 0), KP_ERROR_INVALID_ARGUMENT);
    CHECK(strstr(kp_last_error_message(), "dt") != NULL, "message lacks dt");
    EXPECT_STATUS(kp_lorenz96_f64(ctx, &p, z0, 0, 1, 0, out, NULL, 0), KP_ERROR_INVALID_ARGUMENT);
    EXPECT_STATUS(kp_lorenz96_f64(ctx, &p, NULL, 1, 1, 0, out, NULL, 0), KP_ERROR_NULL_POINTER);
    EXPECT_STATUS(kp_lorenz96_f64(ctx, &p, z0, 1, 4, 2, out, NULL, 0), KP_ERROR_NULL_POINTER);
    EXPECT_STATUS(kp_lorenz96_f64(ctx, &p, z0, 1, 4, 2, out, traj, 7), KP_ERROR_INVALID_ARGUMENT);
    EXPECT_STATUS(kp_lorenz96_f64(NULL, &p, z0, 1, 1, 0, out, NULL, 0), KP_ERROR_NULL_POINTER);
    for (size_t i = 0; i < len; ++i) CHECK(out[i] == POISON, "out written on failure at %zu", i);
}

static void check_l05(kp_context *ctx, int model)
{
    kp_lorenz05_params p = kp_lorenz05_default_params();
    CHECK(p.n == 960 && p.k == 32 && p.j == 12 && p.model == 3 && p.c == 3.0 && p.dt == 0.001,
          "DART defaults");
    /* A small system: N = 90, K = 8, J = 4, so the C reference stays tiny. */
    p.n = 90, p.k = 8, p.j = 4, p.model = model;
    size_t len = MEMBERS * p.n;
    double z0[MEMBERS * 90], want[MEMBERS * 90], out[MEMBERS * 90];
    for (size_t i = 0; i < len; ++i) {
        double phase = 6.283185307179586 * (double)(i % p.n) / (double)p.n;
        z0[i] = 3.0 + 4.0 * sin(3.0 * phase + (double)(i / p.n)) + uniform(-0.3, 0.3);
        want[i] = z0[i], out[i] = POISON;
    }
    for (int m = 0; m < MEMBERS; ++m)
        for (int s = 0; s < STEPS; ++s) rk4(&p, (tendency)l05_f, (int)p.n, p.dt, want + m * p.n);
    EXPECT_STATUS(kp_lorenz05_f64(ctx, &p, z0, MEMBERS, NULL, NULL, NULL, STEPS, 0, out, NULL, 0), KP_OK);
    CHECK(rel_err(out, want, len) < 1e-12, "model %d error %g", model, rel_err(out, want, len));

    /* dZ = 0 at Z == F: the rest state stays put. */
    double rest[90], rest_out[90];
    for (size_t i = 0; i < p.n; ++i) rest[i] = p.forcing;
    EXPECT_STATUS(kp_lorenz05_f64(ctx, &p, rest, 1, NULL, NULL, NULL, 20, 0, rest_out, NULL, 0), KP_OK);
    for (size_t i = 0; i < p.n; ++i)
        CHECK(fabs(rest_out[i] - p.forcing) < 1e-10, "rest state moved to %g", rest_out[i]);

    for (size_t i = 0; i < len; ++i) out[i] = POISON;
    kp_lorenz05_params bad = p;
    bad.k = 7;
    EXPECT_STATUS(kp_lorenz05_f64(ctx, &bad, z0, 1, NULL, NULL, NULL, 1, 0, out, NULL, 0), KP_ERROR_INVALID_ARGUMENT);
    CHECK(strstr(kp_last_error_message(), "even") != NULL, "message lacks 'even'");
    bad = p, bad.model = 4;
    EXPECT_STATUS(kp_lorenz05_f64(ctx, &bad, z0, 1, NULL, NULL, NULL, 1, 0, out, NULL, 0), KP_ERROR_INVALID_ARGUMENT);
    bad = p, bad.n = 16; /* N <= 2K */
    EXPECT_STATUS(kp_lorenz05_f64(ctx, &bad, z0, 1, NULL, NULL, NULL, 1, 0, out, NULL, 0), KP_ERROR_INVALID_ARGUMENT);
    bad = p, bad.j = 0;
    EXPECT_STATUS(kp_lorenz05_f64(ctx, &bad, z0, 1, NULL, NULL, NULL, 1, 0, out, NULL, 0),
                  model == 3 ? KP_ERROR_INVALID_ARGUMENT : KP_OK);
    if (model == 2)
        for (size_t i = 0; i < len; ++i) out[i] = POISON;
    for (size_t i = 0; i < len; ++i) CHECK(out[i] == POISON, "out written on failure at %zu", i);

    /* F, b, c per member: member m runs as it would alone with its values in params. */
    double f[MEMBERS], b[MEMBERS], c[MEMBERS];
    for (int m = 0; m < MEMBERS; ++m) f[m] = uniform(8.0, 18.0), b[m] = uniform(5.0, 12.0), c[m] = uniform(1.0, 4.0);
    double each_out[MEMBERS * 90], alone[90];
    for (size_t i = 0; i < len; ++i) each_out[i] = POISON;
    EXPECT_STATUS(kp_lorenz05_f64(ctx, &p, z0, MEMBERS, f, b, c, STEPS, 0, each_out, NULL, 0), KP_OK);
    for (int m = 0; m < MEMBERS; ++m) {
        kp_lorenz05_params q = p;
        q.forcing = f[m], q.b = b[m], q.c = c[m];
        EXPECT_STATUS(kp_lorenz05_f64(ctx, &q, z0 + m * p.n, 1, NULL, NULL, NULL, STEPS, 0, alone, NULL, 0), KP_OK);
        CHECK(memcmp(alone, each_out + m * p.n, p.n * sizeof(double)) == 0, "member %d differs from its run alone",
              m);
        double ref[90];
        memcpy(ref, z0 + m * p.n, p.n * sizeof(double));
        for (int s = 0; s < STEPS; ++s) rk4(&q, (tendency)l05_f, (int)p.n, p.dt, ref);
        CHECK(rel_err(alone, ref, p.n) < 1e-12, "member %d: error %g", m, rel_err(alone, ref, p.n));
    }
    /* Only b per member: F and c from params. */
    EXPECT_STATUS(kp_lorenz05_f64(ctx, &p, z0, MEMBERS, NULL, b, NULL, STEPS, 0, each_out, NULL, 0), KP_OK);
    {
        kp_lorenz05_params q = p;
        q.b = b[1];
        EXPECT_STATUS(kp_lorenz05_f64(ctx, &q, z0 + p.n, 1, NULL, NULL, NULL, STEPS, 0, alone, NULL, 0), KP_OK);
        CHECK(memcmp(alone, each_out + p.n, p.n * sizeof(double)) == 0, "b alone: member 1 differs");
    }
    /* A non-finite per-member value: refused, naming it, the output untouched. */
    for (size_t i = 0; i < len; ++i) each_out[i] = POISON;
    double saved_c = c[1];
    c[1] = NAN;
    EXPECT_STATUS(kp_lorenz05_f64(ctx, &p, z0, MEMBERS, f, b, c, 1, 0, each_out, NULL, 0), KP_ERROR_INVALID_ARGUMENT);
    CHECK(strstr(kp_last_error_message(), "c[1]") != NULL, "message lacks c[1]");
    c[1] = INFINITY;
    EXPECT_STATUS(kp_lorenz05_f64(ctx, &p, z0, MEMBERS, NULL, NULL, c, 1, 0, each_out, NULL, 0),
                  KP_ERROR_INVALID_ARGUMENT);
    c[1] = saved_c;
    /* A per-member array over the output: refused. */
    EXPECT_STATUS(kp_lorenz05_f64(ctx, &p, z0, MEMBERS, each_out, NULL, NULL, 1, 0, each_out, NULL, 0),
                  KP_ERROR_INVALID_ARGUMENT);
    for (size_t i = 0; i < len; ++i) CHECK(each_out[i] == POISON, "out written on failure at %zu", i);
}

static void check_window(kp_context *ctx)
{
    enum { ROWS = 3, N = 50, L = 9 };
    double x[ROWS * N], w[L], out[ROWS * N];
    for (int i = 0; i < ROWS * N; ++i) x[i] = uniform(-2.0, 2.0), out[i] = POISON;
    for (int m = 0; m < L; ++m) w[m] = uniform(-1.0, 1.0);
    EXPECT_STATUS(kp_window_sum_f64(ctx, x, w, L, ROWS, N, out), KP_OK);
    for (int r = 0; r < ROWS; ++r)
        for (int i = 0; i < N; ++i) {
            double acc = 0.0;
            for (int m = 0; m < L; ++m) acc += w[m] * x[r * N + idx(i + L / 2 - m, N)];
            CHECK(fabs(out[r * N + i] - acc) < 1e-13, "window sum row %d site %d: %g vs %g", r, i,
                  out[r * N + i], acc);
        }
    EXPECT_STATUS(kp_window_sum_f64(ctx, x, w, 8, ROWS, N, out), KP_ERROR_INVALID_ARGUMENT);
    EXPECT_STATUS(kp_window_sum_f64(ctx, x, NULL, L, ROWS, N, out), KP_ERROR_NULL_POINTER);
}

/* Adaptive Lorenz 63 (Dormand-Prince 5(4), SciPy RK45's step control):
 * tight tolerances against RK4 at dt = 1e-4, the save times at the ends
 * exact, an early stop reported per member, and refusals. */
#define L63M 3
static void check_l63_adaptive(kp_context *ctx)
{
    kp_lorenz63_adaptive_params p = kp_lorenz63_adaptive_default_params();
    CHECK(p.sigma_all == 10.0 && p.rho_all == 28.0 && p.beta_all == 8.0 / 3.0, "classic defaults");
    CHECK(p.t0 == 0.0 && p.t_end == 1.0 && p.rtol == 1e-3 && p.atol == 1e-6, "span / tolerance defaults");
    CHECK(p.first_step == 0.0 && isinf(p.max_step) && p.max_steps == 100000, "step defaults");
    const double y0[3 * L63M] = {1.0, 1.0, 20.0, -5.0, 3.0, 30.0, 0.5, -0.5, 10.0};
    const double rho[L63M] = {28.0, 24.0, 35.0};
    const double times[3] = {0.0, 0.25, 0.5};
    double out[3 * L63M], saved[3 * 3 * L63M], want[3 * L63M], mid[3 * L63M];
    uint32_t accepted[L63M], rejected[L63M], status[L63M];
    for (int i = 0; i < 3 * L63M; ++i) out[i] = POISON;
    p.t_end = 0.5, p.rtol = 1e-10, p.atol = 1e-12;
    EXPECT_STATUS(kp_lorenz63_adaptive_f64(ctx, &p, y0, L63M, NULL, rho, NULL, times, 3, out, saved, accepted,
                                           rejected, status),
                  KP_OK);
    memcpy(want, y0, sizeof want);
    for (int m = 0; m < L63M; ++m) {
        l63_params q = {10.0, rho[m], 8.0 / 3.0};
        for (int s = 0; s < 5000; ++s) {
            rk4(&q, (tendency)l63_f, 3, 1e-4, want + 3 * m);
            if (s == 2499) memcpy(mid + 3 * m, want + 3 * m, 3 * sizeof(double));
        }
        CHECK(status[m] == KP_LORENZ63_REACHED, "member %d status %u", m, (unsigned)status[m]);
        CHECK(accepted[m] > 10 && rejected[m] < accepted[m], "member %d: %u accepted, %u rejected", m,
              (unsigned)accepted[m], (unsigned)rejected[m]);
    }
    CHECK(rel_err(out, want, 3 * L63M) < 1e-6, "adaptive L63 error %g", rel_err(out, want, 3 * L63M));
    CHECK(rel_err(saved + 3 * L63M, mid, 3 * L63M) < 1e-6, "t = 0.25 error %g",
          rel_err(saved + 3 * L63M, mid, 3 * L63M));
    CHECK(memcmp(saved, y0, sizeof y0) == 0, "the frame at t0 is not the initial state");
    CHECK(memcmp(saved + 6 * L63M, out, sizeof out) == 0, "the frame at t_end is not the final state");

    /* f32, NULL params (the defaults), NULL optional outputs. */
    float y32[3 * L63M], out32[3 * L63M];
    for (int i = 0; i < 3 * L63M; ++i) y32[i] = (float)y0[i], out32[i] = (float)POISON;
    EXPECT_STATUS(kp_lorenz63_adaptive_f32(ctx, NULL, y32, L63M, NULL, NULL, NULL, NULL, 0, out32, NULL, NULL,
                                           NULL, NULL),
                  KP_OK);
    for (int i = 0; i < 3 * L63M; ++i) CHECK(isfinite(out32[i]) && out32[i] != (float)POISON, "f32 value %d", i);

    /* Out of attempts: KP_LORENZ63_MAX_STEPS, NaN at the later save times. */
    kp_lorenz63_adaptive_params few = p;
    few.max_steps = 4;
    EXPECT_STATUS(kp_lorenz63_adaptive_f64(ctx, &few, y0, L63M, NULL, NULL, NULL, times, 3, out, saved, accepted,
                                           rejected, status),
                  KP_OK);
    for (int m = 0; m < L63M; ++m) {
        CHECK(status[m] == KP_LORENZ63_MAX_STEPS, "member %d status %u", m, (unsigned)status[m]);
        CHECK(accepted[m] + rejected[m] == 4, "member %d: %u attempts", m, (unsigned)(accepted[m] + rejected[m]));
        CHECK(isnan(saved[6 * L63M + 3 * m]), "member %d has a state at t_end", m);
    }

    /* Refused: status codes, every output untouched. */
    for (int i = 0; i < 3 * L63M; ++i) out[i] = POISON;
    for (int i = 0; i < 9 * L63M; ++i) saved[i] = POISON;
    for (int m = 0; m < L63M; ++m) accepted[m] = rejected[m] = status[m] = 77;
    kp_lorenz63_adaptive_params bad = p;
    bad.t_end = -1.0;
    EXPECT_STATUS(kp_lorenz63_adaptive_f64(ctx, &bad, y0, L63M, NULL, NULL, NULL, NULL, 0, out, NULL, accepted,
                                           rejected, status),
                  KP_ERROR_INVALID_ARGUMENT);
    CHECK(strstr(kp_last_error_message(), "t_end") != NULL, "message lacks t_end");
    bad = p, bad.max_steps = 0;
    EXPECT_STATUS(kp_lorenz63_adaptive_f64(ctx, &bad, y0, L63M, NULL, NULL, NULL, NULL, 0, out, NULL, accepted,
                                           rejected, status),
                  KP_ERROR_INVALID_ARGUMENT);
    CHECK(strstr(kp_last_error_message(), "max_steps") != NULL, "message lacks max_steps");
    bad = p, bad.first_step = 1.0; /* longer than the span */
    EXPECT_STATUS(kp_lorenz63_adaptive_f64(ctx, &bad, y0, L63M, NULL, NULL, NULL, NULL, 0, out, NULL, accepted,
                                           rejected, status),
                  KP_ERROR_INVALID_ARGUMENT);
    const double unsorted[3] = {0.25, 0.0, 0.5};
    EXPECT_STATUS(kp_lorenz63_adaptive_f64(ctx, &p, y0, L63M, NULL, NULL, NULL, unsorted, 3, out, saved, accepted,
                                           rejected, status),
                  KP_ERROR_INVALID_ARGUMENT);
    CHECK(strstr(kp_last_error_message(), "sorted") != NULL, "message lacks sorted");
    EXPECT_STATUS(kp_lorenz63_adaptive_f64(ctx, &p, y0, L63M, NULL, NULL, NULL, times, 3, out, NULL, accepted,
                                           rejected, status),
                  KP_ERROR_NULL_POINTER);
    EXPECT_STATUS(kp_lorenz63_adaptive_f64(ctx, &p, NULL, L63M, NULL, NULL, NULL, NULL, 0, out, NULL, NULL, NULL,
                                           NULL),
                  KP_ERROR_NULL_POINTER);
    EXPECT_STATUS(kp_lorenz63_adaptive_f64(ctx, &p, y0, L63M, NULL, NULL, NULL, NULL, 0, out, NULL, accepted,
                                           accepted, status),
                  KP_ERROR_INVALID_ARGUMENT);
    CHECK(strstr(kp_last_error_message(), "overlap") != NULL, "message lacks overlap");
    for (int i = 0; i < 3 * L63M; ++i) CHECK(out[i] == POISON, "out written on failure at %d", i);
    for (int i = 0; i < 9 * L63M; ++i) CHECK(saved[i] == POISON, "saved written on failure at %d", i);
    for (int m = 0; m < L63M; ++m)
        CHECK(accepted[m] == 77 && rejected[m] == 77 && status[m] == 77, "counts written on failure (%d)", m);
}

/* States at chosen steps: a noisy Lorenz 96 run (cut into segments that
 * draw the noise of their steps in the whole run) ends bitwise where the run
 * without saved steps ends, its frames bitwise the `every` = 1 trajectory's
 * at those steps; Lorenz 2005 alike; bad lists refused, outputs untouched. */
static void check_save_at(kp_context *ctx)
{
    kp_lorenz96_params p = kp_lorenz96_default_params();
    p.noise = 0.4, p.seed = 7;
    enum { L = MEMBERS * 40, FRAMES = STEPS + 1 };
    double z0[L], out[L], plain[L], traj[FRAMES * L], saved[4 * L];
    const uint64_t at[4] = {0, 2, 5, STEPS};
    for (size_t i = 0; i < L; ++i) z0[i] = uniform(-5.0, 10.0);
    for (size_t i = 0; i < 4 * L; ++i) saved[i] = POISON;
    EXPECT_STATUS(kp_lorenz96_f64(ctx, &p, z0, MEMBERS, STEPS, 1, plain, traj, FRAMES * L), KP_OK);
    EXPECT_STATUS(kp_lorenz96_save_at_f64(ctx, &p, z0, MEMBERS, STEPS, at, 4, out, saved), KP_OK);
    CHECK(memcmp(out, plain, sizeof out) == 0, "L96 save_at: final states differ from the run without");
    for (int k = 0; k < 4; ++k)
        CHECK(memcmp(saved + k * L, traj + at[k] * L, L * sizeof(double)) == 0, "L96 frame %d (step %d) differs", k,
              (int)at[k]);
    /* A list ending before the last step, f32, NULL params (the defaults). */
    float z32[L], out32[L], plain32[L], saved32[L];
    for (size_t i = 0; i < L; ++i) z32[i] = (float)z0[i];
    const uint64_t one[1] = {3};
    EXPECT_STATUS(kp_lorenz96_f32(ctx, NULL, z32, MEMBERS, STEPS, 0, plain32, NULL, 0), KP_OK);
    EXPECT_STATUS(kp_lorenz96_save_at_f32(ctx, NULL, z32, MEMBERS, STEPS, one, 1, out32, saved32), KP_OK);
    CHECK(memcmp(out32, plain32, sizeof out32) == 0, "L96 f32 save_at: final states differ");
    EXPECT_STATUS(kp_lorenz96_f32(ctx, NULL, z32, MEMBERS, 3, 0, plain32, NULL, 0), KP_OK);
    CHECK(memcmp(saved32, plain32, sizeof saved32) == 0, "L96 f32 save_at: the frame of step 3 differs");
    /* An empty list: the final states only. */
    EXPECT_STATUS(kp_lorenz96_save_at_f64(ctx, &p, z0, MEMBERS, STEPS, NULL, 0, out, NULL), KP_OK);
    CHECK(memcmp(out, plain, sizeof out) == 0, "L96 empty save_at: final states differ");

    /* Lorenz 2005 Model III (DART's N, K, J: the specialised kernel). */
    kp_lorenz05_params q = kp_lorenz05_default_params();
    size_t n5 = q.n;
    double *y0 = malloc(n5 * sizeof *y0), *y1 = malloc(n5 * sizeof *y1), *y2 = malloc(n5 * sizeof *y2);
    double *ytraj = malloc(FRAMES * n5 * sizeof *ytraj), *ysaved = malloc(2 * n5 * sizeof *ysaved);
    for (size_t i = 0; i < n5; ++i) y0[i] = q.forcing + uniform(-2.0, 2.0);
    const uint64_t at5[2] = {1, 4};
    EXPECT_STATUS(kp_lorenz05_f64(ctx, &q, y0, 1, NULL, NULL, NULL, STEPS, 1, y1, ytraj, FRAMES * n5), KP_OK);
    EXPECT_STATUS(kp_lorenz05_save_at_f64(ctx, &q, y0, 1, NULL, NULL, NULL, STEPS, at5, 2, y2, ysaved), KP_OK);
    CHECK(memcmp(y1, y2, n5 * sizeof(double)) == 0, "L05 save_at: final states differ");
    for (int k = 0; k < 2; ++k)
        CHECK(memcmp(ysaved + k * n5, ytraj + at5[k] * n5, n5 * sizeof(double)) == 0, "L05 frame %d differs", k);
    free(y0), free(y1), free(y2), free(ytraj), free(ysaved);

    /* F and b per member (c from params) with chosen steps: the states of
     * the per-member run with a frame every step, at those steps. */
    {
        kp_lorenz05_params r = kp_lorenz05_default_params();
        r.n = 40, r.k = 4, r.j = 2;
        enum { L5 = MEMBERS * 40 };
        double z5[L5], f[MEMBERS], b[MEMBERS], last[L5], every_last[L5], frames[FRAMES * L5], kept[2 * L5];
        for (size_t i = 0; i < L5; ++i) z5[i] = uniform(-2.0, 8.0);
        for (int m = 0; m < MEMBERS; ++m) f[m] = uniform(8.0, 18.0), b[m] = uniform(5.0, 12.0);
        EXPECT_STATUS(kp_lorenz05_f64(ctx, &r, z5, MEMBERS, f, b, NULL, STEPS, 1, every_last, frames, FRAMES * L5),
                      KP_OK);
        EXPECT_STATUS(kp_lorenz05_save_at_f64(ctx, &r, z5, MEMBERS, f, b, NULL, STEPS, at5, 2, last, kept), KP_OK);
        CHECK(memcmp(last, every_last, sizeof last) == 0, "L05 per-member save_at: final states differ");
        for (int k = 0; k < 2; ++k)
            CHECK(memcmp(kept + k * L5, frames + at5[k] * L5, L5 * sizeof(double)) == 0,
                  "L05 per-member save_at: frame %d differs", k);
    }

    /* Bad lists: an error naming the reason, and the outputs untouched. */
    for (size_t i = 0; i < L; ++i) out[i] = POISON;
    for (size_t i = 0; i < 4 * L; ++i) saved[i] = POISON;
    const uint64_t unsorted[2] = {3, 1}, repeated[2] = {2, 2}, late[2] = {1, STEPS + 1};
    EXPECT_STATUS(kp_lorenz96_save_at_f64(ctx, &p, z0, MEMBERS, STEPS, unsorted, 2, out, saved),
                  KP_ERROR_INVALID_ARGUMENT);
    CHECK(strstr(kp_last_error_message(), "sorted") != NULL, "message lacks sorted");
    EXPECT_STATUS(kp_lorenz96_save_at_f64(ctx, &p, z0, MEMBERS, STEPS, repeated, 2, out, saved),
                  KP_ERROR_INVALID_ARGUMENT);
    EXPECT_STATUS(kp_lorenz96_save_at_f64(ctx, &p, z0, MEMBERS, STEPS, late, 2, out, saved),
                  KP_ERROR_INVALID_ARGUMENT);
    CHECK(strstr(kp_last_error_message(), "past the last step") != NULL, "message lacks past the last step");
    EXPECT_STATUS(kp_lorenz96_save_at_f64(ctx, &p, z0, MEMBERS, STEPS, NULL, 2, out, saved), KP_ERROR_NULL_POINTER);
    EXPECT_STATUS(kp_lorenz96_save_at_f64(ctx, &p, z0, MEMBERS, STEPS, at, 4, out, NULL), KP_ERROR_NULL_POINTER);
    EXPECT_STATUS(kp_lorenz96_save_at_f64(ctx, &p, NULL, MEMBERS, STEPS, at, 4, out, saved), KP_ERROR_NULL_POINTER);
    EXPECT_STATUS(kp_lorenz05_save_at_f64(ctx, &q, z0, 1, NULL, NULL, NULL, STEPS, late, 2, out, saved),
                  KP_ERROR_INVALID_ARGUMENT);
    for (size_t i = 0; i < L; ++i) CHECK(out[i] == POISON, "out written on failure at %zu", i);
    for (size_t i = 0; i < 4 * L; ++i) CHECK(saved[i] == POISON, "saved written on failure at %zu", i);
}

/* The device-pointer entry points give what the host ones give. */
static void check_device(kp_context *ctx, int is_gpu)
{
    kp_lorenz05_params p = kp_lorenz05_default_params();
    size_t len = 2 * p.n;
    double *z0 = malloc(len * sizeof *z0), *host = malloc(len * sizeof *host), *dev = malloc(len * sizeof *dev);
    for (size_t i = 0; i < len; ++i) z0[i] = p.forcing + uniform(-1.0, 1.0);
    uint64_t dz = 0, dout = 0;
    if (!is_gpu) {
        EXPECT_STATUS(kp_lorenz05_device_f64(ctx, &p, 1, 2, 0, 0, 0, 5, 0, 1, 0, 0, 0), KP_ERROR_NO_GPU);
        EXPECT_STATUS(kp_lorenz96_save_at_device_f64(ctx, NULL, 1, 2, 5, NULL, 0, 2, 0, 0), KP_ERROR_NO_GPU);
        EXPECT_STATUS(kp_lorenz63_adaptive_device_f64(ctx, NULL, 1, 1, 0, 0, 0, NULL, 0, 2, 0, 0, 0),
                      KP_ERROR_NO_GPU);
        free(z0), free(host), free(dev);
        return;
    }
    EXPECT_STATUS(kp_device_alloc(ctx, len * sizeof(double), &dz), KP_OK);
    EXPECT_STATUS(kp_device_alloc(ctx, len * sizeof(double), &dout), KP_OK);
    EXPECT_STATUS(kp_memcpy_htod(ctx, dz, z0, len * sizeof(double)), KP_OK);
    EXPECT_STATUS(kp_lorenz05_device_f64(ctx, &p, dz, 2, 0, 0, 0, 5, 0, dout, 0, 0, 0), KP_OK);
    EXPECT_STATUS(kp_stream_synchronize(ctx, 0), KP_OK);
    EXPECT_STATUS(kp_memcpy_dtoh(ctx, dev, dout, len * sizeof(double)), KP_OK);
    EXPECT_STATUS(kp_lorenz05_f64(ctx, &p, z0, 2, NULL, NULL, NULL, 5, 0, host, NULL, 0), KP_OK);
    CHECK(memcmp(dev, host, len * sizeof(double)) == 0, "device and host entry points differ");
    EXPECT_STATUS(kp_lorenz05_device_f64(ctx, &p, 0, 2, 0, 0, 0, 5, 0, dout, 0, 0, 0), KP_ERROR_NULL_POINTER);

    /* F, b, c per member from device arrays: as the host entry point with host arrays. */
    {
        double f[2] = {12.0, 17.5}, b[2] = {9.0, 11.0}, c[2] = {2.5, 3.5};
        uint64_t df = 0, db = 0, dc = 0;
        EXPECT_STATUS(kp_device_alloc(ctx, sizeof f, &df), KP_OK);
        EXPECT_STATUS(kp_device_alloc(ctx, sizeof b, &db), KP_OK);
        EXPECT_STATUS(kp_device_alloc(ctx, sizeof c, &dc), KP_OK);
        EXPECT_STATUS(kp_memcpy_htod(ctx, df, f, sizeof f), KP_OK);
        EXPECT_STATUS(kp_memcpy_htod(ctx, db, b, sizeof b), KP_OK);
        EXPECT_STATUS(kp_memcpy_htod(ctx, dc, c, sizeof c), KP_OK);
        EXPECT_STATUS(kp_lorenz05_device_f64(ctx, &p, dz, 2, df, db, dc, 5, 0, dout, 0, 0, 0), KP_OK);
        EXPECT_STATUS(kp_stream_synchronize(ctx, 0), KP_OK);
        EXPECT_STATUS(kp_memcpy_dtoh(ctx, dev, dout, len * sizeof(double)), KP_OK);
        EXPECT_STATUS(kp_lorenz05_f64(ctx, &p, z0, 2, f, b, c, 5, 0, host, NULL, 0), KP_OK);
        CHECK(memcmp(dev, host, len * sizeof(double)) == 0, "per member: device and host entry points differ");
        /* A per-member array of one value where two members need two. */
        uint64_t short_f = 0;
        EXPECT_STATUS(kp_device_alloc(ctx, sizeof(double), &short_f), KP_OK);
        EXPECT_STATUS(kp_lorenz05_device_f64(ctx, &p, dz, 2, short_f, 0, 0, 5, 0, dout, 0, 0, 0),
                      KP_ERROR_INVALID_ARGUMENT);
        EXPECT_STATUS(kp_device_free(ctx, short_f), KP_OK);
        EXPECT_STATUS(kp_device_free(ctx, df), KP_OK);
        EXPECT_STATUS(kp_device_free(ctx, db), KP_OK);
        EXPECT_STATUS(kp_device_free(ctx, dc), KP_OK);
    }

    /* States at chosen steps on device memory: Lorenz 2005 (2 members) and
     * a noisy Lorenz 96 (the first 4 x 40 values), each against its host
     * entry point, bitwise. */
    {
        const uint64_t at[3] = {0, 3, 5};
        uint64_t dsaved = 0;
        double *saved = malloc(3 * len * sizeof *saved), *want = malloc(3 * len * sizeof *want);
        EXPECT_STATUS(kp_device_alloc(ctx, 3 * len * sizeof(double), &dsaved), KP_OK);
        EXPECT_STATUS(kp_lorenz05_save_at_device_f64(ctx, &p, dz, 2, 0, 0, 0, 5, at, 3, dout, dsaved, 0), KP_OK);
        EXPECT_STATUS(kp_stream_synchronize(ctx, 0), KP_OK);
        EXPECT_STATUS(kp_memcpy_dtoh(ctx, dev, dout, len * sizeof(double)), KP_OK);
        EXPECT_STATUS(kp_memcpy_dtoh(ctx, saved, dsaved, 3 * len * sizeof(double)), KP_OK);
        EXPECT_STATUS(kp_lorenz05_save_at_f64(ctx, &p, z0, 2, NULL, NULL, NULL, 5, at, 3, host, want), KP_OK);
        CHECK(memcmp(dev, host, len * sizeof(double)) == 0, "L05 save_at: device and host final states differ");
        CHECK(memcmp(saved, want, 3 * len * sizeof(double)) == 0, "L05 save_at: device and host frames differ");
        kp_lorenz96_params q = kp_lorenz96_default_params();
        q.noise = 0.3, q.seed = 5;
        size_t l96 = 4 * q.n;
        for (size_t i = 0; i < l96; ++i) z0[i] = uniform(-5.0, 10.0);
        EXPECT_STATUS(kp_memcpy_htod(ctx, dz, z0, l96 * sizeof(double)), KP_OK);
        EXPECT_STATUS(kp_lorenz96_save_at_device_f64(ctx, &q, dz, 4, 5, at, 3, dout, dsaved, 0), KP_OK);
        EXPECT_STATUS(kp_stream_synchronize(ctx, 0), KP_OK);
        EXPECT_STATUS(kp_memcpy_dtoh(ctx, dev, dout, l96 * sizeof(double)), KP_OK);
        EXPECT_STATUS(kp_memcpy_dtoh(ctx, saved, dsaved, 3 * l96 * sizeof(double)), KP_OK);
        EXPECT_STATUS(kp_lorenz96_save_at_f64(ctx, &q, z0, 4, 5, at, 3, host, want), KP_OK);
        CHECK(memcmp(dev, host, l96 * sizeof(double)) == 0, "L96 save_at: device and host final states differ");
        CHECK(memcmp(saved, want, 3 * l96 * sizeof(double)) == 0, "L96 save_at: device and host frames differ");
        /* Bad lists and a missing saved-states buffer. */
        const uint64_t unsorted[2] = {3, 1}, late[1] = {6};
        EXPECT_STATUS(kp_lorenz96_save_at_device_f64(ctx, &q, dz, 4, 5, unsorted, 2, dout, dsaved, 0),
                      KP_ERROR_INVALID_ARGUMENT);
        EXPECT_STATUS(kp_lorenz96_save_at_device_f64(ctx, &q, dz, 4, 5, late, 1, dout, dsaved, 0),
                      KP_ERROR_INVALID_ARGUMENT);
        EXPECT_STATUS(kp_lorenz96_save_at_device_f64(ctx, &q, dz, 4, 5, at, 3, dout, 0, 0), KP_ERROR_NULL_POINTER);
        EXPECT_STATUS(kp_lorenz96_save_at_device_f64(ctx, &q, dz, 4, 5, NULL, 3, dout, dsaved, 0),
                      KP_ERROR_NULL_POINTER);
        EXPECT_STATUS(kp_device_free(ctx, dsaved), KP_OK);
        free(saved), free(want);
    }

    /* Adaptive Lorenz 63 on the first 2 x 3 values: states and per-member
     * (accepted, rejected, status) triples as the host entry point's. */
    const double times[2] = {0.0, 1.0};
    double l63_host[6], l63_saved[12], l63_dev[6], l63_dev_saved[12];
    uint32_t acc[2], rej[2], st[2], stats[6];
    uint64_t dsaved = 0, dstats = 0;
    for (size_t i = 0; i < 6; ++i) z0[i] = uniform(-10.0, 10.0) + (i % 3 == 2 ? 25.0 : 0.0);
    EXPECT_STATUS(kp_device_alloc(ctx, sizeof l63_saved, &dsaved), KP_OK);
    EXPECT_STATUS(kp_device_alloc(ctx, sizeof stats, &dstats), KP_OK);
    EXPECT_STATUS(kp_memcpy_htod(ctx, dz, z0, 6 * sizeof(double)), KP_OK);
    EXPECT_STATUS(kp_lorenz63_adaptive_device_f64(ctx, NULL, dz, 2, 0, 0, 0, times, 2, dout, dsaved, dstats, 0),
                  KP_OK);
    EXPECT_STATUS(kp_stream_synchronize(ctx, 0), KP_OK);
    EXPECT_STATUS(kp_memcpy_dtoh(ctx, l63_dev, dout, sizeof l63_dev), KP_OK);
    EXPECT_STATUS(kp_memcpy_dtoh(ctx, l63_dev_saved, dsaved, sizeof l63_dev_saved), KP_OK);
    EXPECT_STATUS(kp_memcpy_dtoh(ctx, stats, dstats, sizeof stats), KP_OK);
    EXPECT_STATUS(kp_lorenz63_adaptive_f64(ctx, NULL, z0, 2, NULL, NULL, NULL, times, 2, l63_host, l63_saved, acc,
                                           rej, st),
                  KP_OK);
    CHECK(memcmp(l63_dev, l63_host, sizeof l63_host) == 0, "adaptive L63: device and host entry points differ");
    CHECK(memcmp(l63_dev_saved, l63_saved, sizeof l63_saved) == 0, "adaptive L63: saved states differ");
    for (int m = 0; m < 2; ++m)
        CHECK(stats[3 * m] == acc[m] && stats[3 * m + 1] == rej[m] && stats[3 * m + 2] == st[m] &&
                  st[m] == KP_LORENZ63_REACHED,
              "adaptive L63 member %d: stats %u %u %u", m, (unsigned)stats[3 * m], (unsigned)stats[3 * m + 1],
              (unsigned)stats[3 * m + 2]);
    /* save_len > 0 needs a saved-states buffer. */
    EXPECT_STATUS(kp_lorenz63_adaptive_device_f64(ctx, NULL, dz, 2, 0, 0, 0, times, 2, dout, 0, 0, 0),
                  KP_ERROR_NULL_POINTER);
    EXPECT_STATUS(kp_device_free(ctx, dsaved), KP_OK);
    EXPECT_STATUS(kp_device_free(ctx, dstats), KP_OK);
    EXPECT_STATUS(kp_device_free(ctx, dz), KP_OK);
    EXPECT_STATUS(kp_device_free(ctx, dout), KP_OK);
    free(z0), free(host), free(dev);
}

int main(void)
{
    kp_context *cpu = NULL, *autoctx = NULL;
    int32_t is_gpu = 0;
    group = "contexts";
    EXPECT_STATUS(kp_context_create(KP_BACKEND_CPU, &cpu), KP_OK);
    EXPECT_STATUS(kp_context_create(KP_BACKEND_AUTO, &autoctx), KP_OK);
    EXPECT_STATUS(kp_context_is_gpu(autoctx, &is_gpu), KP_OK);
    const char *require = getenv("KERNPACK_REQUIRE_GPU");
    if (require != NULL && strcmp(require, "1") == 0)
        CHECK(is_gpu, "KERNPACK_REQUIRE_GPU=1 but the AUTO context runs on the CPU");
    kp_context *ctxs[2] = {cpu, autoctx};
    for (int c = 0; c < 2; ++c) {
        group = c == 0 ? "lorenz96 (CPU)" : "lorenz96 (AUTO)";
        check_l96(ctxs[c]);
        printf("ok   %s\n", group);
        group = c == 0 ? "lorenz05 (CPU)" : "lorenz05 (AUTO)";
        check_l05(ctxs[c], 3);
        check_l05(ctxs[c], 2);
        printf("ok   %s\n", group);
        group = c == 0 ? "window sum (CPU)" : "window sum (AUTO)";
        check_window(ctxs[c]);
        printf("ok   %s\n", group);
        group = c == 0 ? "save_at (CPU)" : "save_at (AUTO)";
        check_save_at(ctxs[c]);
        printf("ok   %s\n", group);
        group = c == 0 ? "adaptive lorenz63 (CPU)" : "adaptive lorenz63 (AUTO)";
        check_l63_adaptive(ctxs[c]);
        printf("ok   %s\n", group);
    }
    group = "device pointers";
    check_device(is_gpu ? autoctx : cpu, is_gpu);
    printf("ok   %s\n", group);
    printf("     AUTO context runs on the %s\n", is_gpu ? "GPU" : "CPU");
    kp_context_destroy(cpu);
    kp_context_destroy(autoctx);
    printf("all checks passed (C, %s)\n", is_gpu ? "GPU" : "CPU only");
    return 0;
}
