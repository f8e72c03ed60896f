// Lorenz 63 ensembles, fixed-step classical RK4, one member per thread:
//   dx/dt = sigma (y - x),  dy/dt = x (rho - z) - y,  dz/dt = x y - beta z,
// sigma, rho, beta per member (an array) or one value for all (NULL array).
// The member's state and parameters live in registers and the whole loop over
// steps runs here; states are members x 3 (x, y, z interleaved). A warp's
// three loads (or stores) cover 384 contiguous bytes, served from the same
// cache lines, so the interleaved layout costs nothing once per launch.
//
// One launch runs one segment of a run (the host cuts a run at its saved
// steps): it reads the states at `in`, writes them after `steps` steps to
// `out` (which may be `in`: each thread reads its member before writing it)
// and, when `saved` is not NULL, to `saved` as well.
//
// RK4 as MODELS.md: k_i = dt f(stage input), the increment summed first and
// added once. It is summed here as (k1 + 2 k2 + 2 k3 + k4) / 6, the same sum
// with fewer roundings than k1/6 + k2/3 + k3/3 + k4/6 (the reference), and
// dt is folded into the parameters (dt sigma, dt rho, dt beta), so one
// tendency is 7 FP instructions and one step 49:
//   dt f_x = (dt sigma)(y - x)
//   dt f_y = x (dt rho - dt z) - dt y          = fma(x, fma(-dt, z, dt rho), -dt y)
//   dt f_z = x (dt y) - (dt beta) z            = fma(x, dt y, -(dt beta) z)
//
// The adaptive run (lorenz63_dopri5_T) takes SciPy RK45's steps per member:
// the Dormand-Prince 5(4) pair, each member's step size controlled on its own
// (SciPy's controller, the error an RMS over x, y, z), the states at the save
// times from the step's fourth-order dense output, the time and step size in
// double in both precisions (a few operations a step). A warp runs until its
// slowest member is done; members with neighbouring parameters take similar
// step counts.
#include "common.cuh"
#include "kernpack_params.h"

namespace kp {
namespace lorenz63 {

constexpr int BLOCK = 256;

// dt and the member's parameters times dt.
template <typename T> struct Scaled {
    T dt, sigma, rho, beta;
};

// k = dt f(x, y, z).
template <typename T>
__device__ __forceinline__ void tendency(const Scaled<T>& p, T x, T y, T z, T& kx, T& ky, T& kz) {
    const T dty = p.dt * y;
    kx = p.sigma * (y - x);
    ky = fma(x, fma(-p.dt, z, p.rho), -dty);
    kz = fma(x, dty, -(p.beta * z));
}

// One classical RK4 step of (x, y, z) in place.
template <typename T>
__device__ __forceinline__ void rk4_step(const Scaled<T>& p, T& x, T& y, T& z) {
    const T half = T(0.5), two = T(2), sixth = T(1) / T(6);
    T kx, ky, kz;
    tendency(p, x, y, z, kx, ky, kz);
    T ix = kx, iy = ky, iz = kz;
    tendency(p, fma(kx, half, x), fma(ky, half, y), fma(kz, half, z), kx, ky, kz);
    ix = fma(kx, two, ix), iy = fma(ky, two, iy), iz = fma(kz, two, iz);
    tendency(p, fma(kx, half, x), fma(ky, half, y), fma(kz, half, z), kx, ky, kz);
    ix = fma(kx, two, ix), iy = fma(ky, two, iy), iz = fma(kz, two, iz);
    tendency(p, x + kx, y + ky, z + kz, kx, ky, kz);
    ix = ix + kx, iy = iy + ky, iz = iz + kz;
    x = fma(ix, sixth, x), y = fma(iy, sixth, y), z = fma(iz, sixth, z);
}

template <typename T>
__device__ __forceinline__ T member_value(const T* __restrict__ each, double all, int64_t m) {
    return each != nullptr ? __ldg(each + m) : T(all);
}

// `in` and `out` may be the same buffer (no __restrict__ on them).
template <typename T>
__device__ void rk4_run(const T* in, T* out, T* __restrict__ saved, int64_t members,
                        const T* __restrict__ sigma, const T* __restrict__ rho, const T* __restrict__ beta,
                        double sigma_all, double rho_all, double beta_all, double dt, int64_t steps) {
    const T h = T(dt);
    for (int64_t m = (int64_t)blockIdx.x * BLOCK + threadIdx.x; m < members; m += (int64_t)gridDim.x * BLOCK) {
        const Scaled<T> p{h, h * member_value(sigma, sigma_all, m), h * member_value(rho, rho_all, m),
                          h * member_value(beta, beta_all, m)};
        T x = in[3 * m], y = in[3 * m + 1], z = in[3 * m + 2];
        // A 32-bit counter when it suffices (every realistic run): one
        // integer add and compare per step instead of two.
        if (steps <= INT32_MAX) {
            const int n = (int)steps;
#pragma unroll 4
            for (int s = 0; s < n; ++s) rk4_step(p, x, y, z);
        } else {
            for (int64_t s = 0; s < steps; ++s) rk4_step(p, x, y, z);
        }
        out[3 * m] = x, out[3 * m + 1] = y, out[3 * m + 2] = z;
        if (saved != nullptr) saved[3 * m] = x, saved[3 * m + 1] = y, saved[3 * m + 2] = z;
    }
}


// ---- adaptive Dormand-Prince 5(4) ----

// Status codes of `stats` (AdaptiveStatus in src/params/lorenz63.rs).
constexpr uint32_t REACHED = 0, MAX_STEPS = 1, STEP_TOO_SMALL = 2;

template <typename T> struct V3 {
    T x, y, z;
};

template <typename T> __device__ __forceinline__ V3<T> operator+(V3<T> a, V3<T> b) { return {a.x + b.x, a.y + b.y, a.z + b.z}; }
template <typename T> __device__ __forceinline__ V3<T> operator*(T c, V3<T> a) { return {c * a.x, c * a.y, c * a.z}; }

// f(x, y, z) with the member's (unscaled) sigma, rho, beta.
template <typename T> struct System {
    T sigma, rho, beta;
    __device__ __forceinline__ V3<T> operator()(V3<T> v) const {
        return {sigma * (v.y - v.x), fma(v.x, rho - v.z, -v.y), fma(v.x, v.y, -(beta * v.z))};
    }
};

// The tableau (src/params/dopri5.rs, as SciPy's RK45).
template <typename T> struct Dopri5 {
    // Stage inputs y + h sum a_sj k_j.
    static constexpr double a21 = 1.0 / 5.0;
    static constexpr double a31 = 3.0 / 40.0, a32 = 9.0 / 40.0;
    static constexpr double a41 = 44.0 / 45.0, a42 = -56.0 / 15.0, a43 = 32.0 / 9.0;
    static constexpr double a51 = 19372.0 / 6561.0, a52 = -25360.0 / 2187.0, a53 = 64448.0 / 6561.0,
                            a54 = -212.0 / 729.0;
    static constexpr double a61 = 9017.0 / 3168.0, a62 = -355.0 / 33.0, a63 = 46732.0 / 5247.0,
                            a64 = 49.0 / 176.0, a65 = -5103.0 / 18656.0;
    // Fifth-order weights (b2 = 0).
    static constexpr double b1 = 35.0 / 384.0, b3 = 500.0 / 1113.0, b4 = 125.0 / 192.0,
                            b5 = -2187.0 / 6784.0, b6 = 11.0 / 84.0;
    // Error weights (e2 = 0).
    static constexpr double e1 = -71.0 / 57600.0, e3 = 71.0 / 16695.0, e4 = -71.0 / 1920.0,
                            e5 = 17253.0 / 339200.0, e6 = -22.0 / 525.0, e7 = 1.0 / 40.0;
};

// Dense output coefficients P[j][i] of x^(i+1), j = 1..7 (row 2 is zero).
__constant__ double DENSE[7][4] = {
    {1.0, -8048581381.0 / 2820520608.0, 8663915743.0 / 2820520608.0, -12715105075.0 / 11282082432.0},
    {0.0, 0.0, 0.0, 0.0},
    {0.0, 131558114200.0 / 32700410799.0, -68118460800.0 / 10900136933.0, 87487479700.0 / 32700410799.0},
    {0.0, -1754552775.0 / 470086768.0, 14199869525.0 / 1410260304.0, -10690763975.0 / 1880347072.0},
    {0.0, 127303824393.0 / 49829197408.0, -318862633887.0 / 49829197408.0, 701980252875.0 / 199316789632.0},
    {0.0, -282668133.0 / 205662961.0, 2019193451.0 / 616988883.0, -1453857185.0 / 822651844.0},
    {0.0, 40617522.0 / 29380423.0, -110615467.0 / 29380423.0, 69997945.0 / 29380423.0},
};

template <typename T> __device__ __forceinline__ T rms(T a, T b, T c) {
    return sqrt((a * a + b * b + c * c) / T(3));
}

// Ten times the spacing of doubles at t, toward +infinity (SciPy's
// 10 |nextafter(t, inf) - t|), by the bits.
__device__ __forceinline__ double min_step(double t) {
    const long long bits = __double_as_longlong(t);
    return 10.0 * fabs(__longlong_as_double(t >= 0.0 ? bits + 1 : bits - 1) - t);
}

// SciPy's select_initial_step for an error of order 4, once per member, in T
// (so the f32 kernel carries no double pow and division: half its code).
template <typename T>
__device__ double initial_step(const System<T>& f, V3<T> y0, V3<T> f0, double interval, T rtol, T atol,
                               double max_step) {
    if (interval == 0.0) return 0.0;
    const V3<T> s{atol + fabs(y0.x) * rtol, atol + fabs(y0.y) * rtol, atol + fabs(y0.z) * rtol};
    const T d0 = rms(y0.x / s.x, y0.y / s.y, y0.z / s.z);
    const T d1 = rms(f0.x / s.x, f0.y / s.y, f0.z / s.z);
    T h0 = (d0 < T(1e-5) || d1 < T(1e-5)) ? T(1e-6) : T(0.01) * d0 / d1;
    h0 = fmin(h0, T(interval));
    const V3<T> f1 = f(y0 + h0 * f0);
    const T d2 = rms((f1.x - f0.x) / s.x, (f1.y - f0.y) / s.y, (f1.z - f0.z) / s.z) / h0;
    const T h1 =
        (d1 <= T(1e-15) && d2 <= T(1e-15)) ? fmax(T(1e-6), h0 * T(1e-3)) : pow(T(0.01) / fmax(d1, d2), T(0.2));
    return fmin(fmin(100.0 * double(h0), double(h1)), fmin(interval, max_step));
}

template <typename T> __device__ __forceinline__ void store(T* at, V3<T> v) { at[0] = v.x, at[1] = v.y, at[2] = v.z; }

template <typename T>
__device__ void dopri5_run(const T* __restrict__ in, T* __restrict__ out, T* __restrict__ saved,
                           uint32_t* __restrict__ stats, int64_t members, const T* __restrict__ sigma,
                           const T* __restrict__ rho, const T* __restrict__ beta, double sigma_all, double rho_all,
                           double beta_all, const double* __restrict__ save_times, kp_l63_adaptive run) {
    using D = Dopri5<T>;
    const double t0 = run.t0, t_end = run.t_end, rtol = run.rtol, atol = run.atol, max_step = run.max_step;
    const int64_t frames = run.frames;
    const uint32_t max_steps = run.max_steps;
    const T Ta = T(atol), Tr = T(rtol);
    for (int64_t m = (int64_t)blockIdx.x * BLOCK + threadIdx.x; m < members; m += (int64_t)gridDim.x * BLOCK) {
        const System<T> f{member_value(sigma, sigma_all, m), member_value(rho, rho_all, m),
                          member_value(beta, beta_all, m)};
        V3<T> y{in[3 * m], in[3 * m + 1], in[3 * m + 2]};
        V3<T> k1 = f(y);
        double t = t0;
        double h_abs = run.first_step > 0.0 ? run.first_step : initial_step(f, y, k1, t_end - t0, Tr, Ta, max_step);
        uint32_t accepted = 0, rejected = 0, status = REACHED;
        int64_t frame = 0;
        while (t < t_end && status == REACHED) {
            const double min_h = min_step(t);
            h_abs = h_abs > max_step ? max_step : (h_abs < min_h ? min_h : h_abs);
            bool rejected_here = false;
            for (;;) {
                if (accepted + rejected >= max_steps) { status = MAX_STEPS; break; }
                if (h_abs < min_h) { status = STEP_TOO_SMALL; break; }
                const double t_new = fmin(t + h_abs, t_end);
                const double h = t_new - t;
                h_abs = h;
                const T hT = T(h);
                const V3<T> k2 = f(y + hT * (T(D::a21) * k1));
                const V3<T> k3 = f(y + hT * (T(D::a31) * k1 + T(D::a32) * k2));
                const V3<T> k4 = f(y + hT * (T(D::a41) * k1 + T(D::a42) * k2 + T(D::a43) * k3));
                const V3<T> k5 = f(y + hT * (T(D::a51) * k1 + T(D::a52) * k2 + T(D::a53) * k3 + T(D::a54) * k4));
                const V3<T> k6 = f(y + hT * (T(D::a61) * k1 + T(D::a62) * k2 + T(D::a63) * k3 + T(D::a64) * k4 +
                                             T(D::a65) * k5));
                const V3<T> y_new =
                    y + hT * (T(D::b1) * k1 + T(D::b3) * k3 + T(D::b4) * k4 + T(D::b5) * k5 + T(D::b6) * k6);
                const V3<T> k7 = f(y_new);
                const V3<T> e = hT * (T(D::e1) * k1 + T(D::e3) * k3 + T(D::e4) * k4 + T(D::e5) * k5 +
                                      T(D::e6) * k6 + T(D::e7) * k7);
                const T err = rms(e.x / (Ta + fmax(fabs(y.x), fabs(y_new.x)) * Tr),
                                  e.y / (Ta + fmax(fabs(y.y), fabs(y_new.y)) * Tr),
                                  e.z / (Ta + fmax(fabs(y.z), fabs(y_new.z)) * Tr));
                if (err < T(1)) {
                    T factor = err == T(0) ? T(10) : fmin(T(10), T(0.9) * pow(err, T(-0.2)));
                    if (rejected_here) factor = fmin(factor, T(1));
                    h_abs *= double(factor);
                    ++accepted;
                    // The save times in (t, t_new]: the dense output, the step's end state at its end.
                    for (; frame < frames && save_times[frame] <= t_new; ++frame) {
                        V3<T> at = y_new;
                        if (save_times[frame] != t_new) {
                            const T x = T((save_times[frame] - t) / h);
                            const T p[4] = {x, x * x, x * x * x, x * x * x * x};
                            T c[7];
                            for (int j = 0; j < 7; ++j)
                                c[j] = hT * (T(DENSE[j][0]) * p[0] + T(DENSE[j][1]) * p[1] + T(DENSE[j][2]) * p[2] +
                                             T(DENSE[j][3]) * p[3]);
                            at = y + (c[0] * k1 + c[2] * k3 + c[3] * k4 + c[4] * k5 + c[5] * k6 + c[6] * k7);
                        }
                        store(saved + (frame * members + m) * 3, at);
                    }
                    t = t_new, y = y_new, k1 = k7;
                    break;
                }
                // A NaN error compares false: the factor is then the smallest, as SciPy's max.
                const T shrink = T(0.9) * pow(err, T(-0.2));
                h_abs *= double(shrink > T(0.2) ? shrink : T(0.2));
                rejected_here = true;
                ++rejected;
            }
        }
        // Save times at t0 of a run without steps are the initial state;
        // those after a stop are NaN.
        const V3<T> nan{T(NAN), T(NAN), T(NAN)};
        for (; frame < frames; ++frame) store(saved + (frame * members + m) * 3, status == REACHED ? y : nan);
        store(out + 3 * m, y);
        if (stats != nullptr) stats[3 * m] = accepted, stats[3 * m + 1] = rejected, stats[3 * m + 2] = status;
    }
}

}  // namespace lorenz63
}  // namespace kp

#define KP_LORENZ63_ENTRY_POINTS(T, SUFFIX)                                                            \
    extern "C" __global__ void __launch_bounds__(kp::lorenz63::BLOCK)                                 \
        lorenz63_rk4_##SUFFIX(const T* in, T* out, T* saved, int64_t members, const T* sigma,       \
                              const T* rho, const T* beta, double sigma_all, double rho_all,         \
                              double beta_all, double dt, int64_t steps) {                           \
        kp::lorenz63::rk4_run<T>(in, out, saved, members, sigma, rho, beta, sigma_all, rho_all,      \
                                 beta_all, dt, steps);                                               \
    }                                                                                                       \
    extern "C" __global__ void __launch_bounds__(kp::lorenz63::BLOCK) lorenz63_dopri5_##SUFFIX(                  \
        const T* in, T* out, T* saved, uint32_t* stats, int64_t members, const T* sigma, const T* rho,     \
        const T* beta, double sigma_all, double rho_all, double beta_all, const double* save_times,         \
        kp_l63_adaptive run) {                                                                              \
        kp::lorenz63::dopri5_run<T>(in, out, saved, stats, members, sigma, rho, beta, sigma_all, rho_all,  \
                                    beta_all, save_times, run);                                            \
    }

KP_LORENZ63_ENTRY_POINTS(float, f32)
KP_LORENZ63_ENTRY_POINTS(double, f64)
