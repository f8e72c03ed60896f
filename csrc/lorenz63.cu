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
#include "common.cuh"

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

}  // namespace lorenz63
}  // namespace kp

#define KP_LORENZ63_ENTRY_POINTS(T, SUFFIX)                                                            \
    extern "C" __global__ void __launch_bounds__(kp::lorenz63::BLOCK)                                 \
        lorenz63_rk4_##SUFFIX(const T* in, T* out, T* saved, int64_t members, const T* sigma,       \
                              const T* rho, const T* beta, double sigma_all, double rho_all,         \
                              double beta_all, double dt, int64_t steps) {                           \
        kp::lorenz63::rk4_run<T>(in, out, saved, members, sigma, rho, beta, sigma_all, rho_all,      \
                                 beta_all, dt, steps);                                               \
    }

KP_LORENZ63_ENTRY_POINTS(float, f32)
KP_LORENZ63_ENTRY_POINTS(double, f64)
