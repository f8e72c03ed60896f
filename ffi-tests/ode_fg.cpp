// End-to-end test of the kernpack C ABI for the coupled F/G system
// from C++17: std::vector<std::complex<T>> buffers passed as interleaved
// T pointers, one templated code path for complex64 and complex128.
//
// Checks the delta = 0 invariant (F rotates by the RK4 factor of
// dF/dt = -2i F with |F| kept, G constant, delta stays exactly 0), a few steps
// against a std::complex reference, and error codes.
//
// Exit status 0 when every check passes; otherwise the first failed check is
// printed to stderr and the program exits with 1. With KERNPACK_REQUIRE_GPU=1
// a missing GPU is a failure. Built and run by tests/ffi_programs.rs.
#include "kernpack.h"

#include <algorithm>
#include <cmath>
#include <complex>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

namespace {

std::string group = "setup";

struct CheckFailure : std::runtime_error {
    using std::runtime_error::runtime_error;
};

#define CHECK(cond, what)                                                                        \
    do {                                                                                         \
        if (!(cond))                                                                             \
            throw CheckFailure(std::string("ode_fg.cpp:") + std::to_string(__LINE__) + ": `" +  \
                               #cond + "`: " + (what));                                          \
    } while (0)

struct Context {
    kp_context* raw = nullptr;
    explicit Context(kp_backend backend) {
        CHECK(kp_context_create(backend, &raw) == KP_OK, kp_last_error_message());
    }
    ~Context() { kp_context_destroy(raw); }
    Context(const Context&) = delete;
    Context& operator=(const Context&) = delete;
};

template <typename T> struct Api;
template <> struct Api<float> {
    static constexpr const char* name = "c64";
    static constexpr double eps = 1.2e-7;
    static kp_status run(kp_context* c, std::size_t n, float* f, float* g, std::complex<float> d0, float dt,
                         std::size_t steps, float* delta, std::size_t len) {
        return kp_fg_integrate_c64(c, n, f, g, d0.real(), d0.imag(), dt, steps, delta, len);
    }
};
template <> struct Api<double> {
    static constexpr const char* name = "c128";
    static constexpr double eps = 2.3e-16;
    static kp_status run(kp_context* c, std::size_t n, double* f, double* g, std::complex<double> d0, double dt,
                         std::size_t steps, double* delta, std::size_t len) {
        return kp_fg_integrate_c128(c, n, f, g, d0.real(), d0.imag(), dt, steps, delta, len);
    }
};

template <typename T>
T* flat(std::vector<std::complex<T>>& v) {
    // std::complex<T> is layout-compatible with T[2] ([complex.numbers]).
    return reinterpret_cast<T*>(v.data());
}

struct Draw {
    std::uint64_t s;
    double operator()() {
        s = s * 6364136223846793005ULL + 1442695040888963407ULL;
        return static_cast<double>(s >> 11) / 9007199254740992.0 * 2.0 - 1.0;
    }
};

// delta = 0: with every warp of 32 values holding 16 values and their
// negatives 16 lanes on, kernpack's fixed summation tree adds each value to
// its negative first, so delta stays exactly 0, G stays put and each F
// rotates by R^steps, R = sum_{j<=4} (-2i dt)^j / j!.
template <typename T>
void check_rotation(kp_context* ctx) {
    group = std::string(Api<T>::name) + " delta = 0 rotation";
    const std::size_t n = 16;  // 256 values = 8 warps of 32
    const std::size_t steps = 100;
    const double dt = 1e-2;
    Draw draw{7};
    std::vector<std::complex<T>> f(n * n), g(n * n);
    for (std::size_t w = 0; w < n * n; w += 32) {
        for (std::size_t i = 0; i < 16; ++i) {
            f[w + i] = std::complex<T>(T(draw()), T(draw()));
            f[w + i + 16] = -f[w + i];
        }
    }
    for (auto& z : g) z = std::complex<T>(T(draw()), T(draw()));
    const auto f0 = f, g0 = g;
    std::vector<std::complex<T>> delta(steps + 1, std::complex<T>(std::numeric_limits<T>::quiet_NaN(), 0));
    CHECK(Api<T>::run(ctx, n, flat(f), flat(g), {}, T(dt), steps, flat(delta), delta.size()) == KP_OK,
          kp_last_error_message());
    for (const auto& d : delta) CHECK(d == std::complex<T>(0, 0), "delta left 0");
    for (std::size_t j = 0; j < g.size(); ++j) CHECK(g[j] == g0[j], "G changed");
    std::complex<double> r = 1, term = 1, rot = 1;
    for (int j = 1; j <= 4; ++j) {
        term *= std::complex<double>(0, -2.0 * double(T(dt))) / double(j);
        r += term;
    }
    for (std::size_t k = 0; k < steps; ++k) rot *= r;
    for (std::size_t j = 0; j < f.size(); ++j) {
        const std::complex<double> want = std::complex<double>(f0[j]) * rot;
        const double err = std::abs(std::complex<double>(f[j]) - want);
        CHECK(err <= 1000 * Api<T>::eps * std::max(1.0, std::abs(want)), "F off its rotation");
    }
    std::printf("ok   %s\n", group.c_str());
}

template <typename T>
void check_steps(kp_context* ctx) {
    group = std::string(Api<T>::name) + " steps vs std::complex reference";
    const std::size_t n = 9, steps = 3;
    const double dt = 5e-4;
    const std::complex<double> d0(-0.5, 1.25);
    Draw draw{99};
    std::vector<std::complex<double>> rf(n * n), rg(n * n);
    for (auto& z : rf) z = {draw(), draw()};
    for (auto& z : rg) z = {draw(), draw()};
    std::vector<std::complex<T>> f(rf.begin(), rf.end()), g(rg.begin(), rg.end());
    // The reference starts from the values kernpack sees (rounded to T).
    for (std::size_t j = 0; j < rf.size(); ++j) rf[j] = std::complex<double>(f[j]), rg[j] = std::complex<double>(g[j]);
    const T dt_t = T(dt);
    const std::complex<T> d0_t(d0);
    std::vector<std::complex<double>> want{std::complex<double>(d0_t)};
    const std::complex<double> i(0, 1);
    auto rhs = [&](std::complex<double> a, std::complex<double> b, std::complex<double> d, std::complex<double>& da,
                   std::complex<double>& db) {
        da = -2.0 * i * a - i * d * (2.0 * b - 1.0);
        db = -i * (std::conj(d) * a - d * std::conj(a));
    };
    const double h = double(dt_t);
    double scale = 0;
    for (std::size_t s = 0; s < steps; ++s) {
        std::complex<double> sum = 0;
        scale = 0;
        for (std::size_t j = 0; j < rf.size(); ++j) {
            std::complex<double> k1f, k1g, k2f, k2g, k3f, k3g, k4f, k4g;
            rhs(rf[j], rg[j], want[s], k1f, k1g);
            rhs(rf[j] + 0.5 * h * k1f, rg[j] + 0.5 * h * k1g, want[s], k2f, k2g);
            rhs(rf[j] + 0.5 * h * k2f, rg[j] + 0.5 * h * k2g, want[s], k3f, k3g);
            rhs(rf[j] + h * k3f, rg[j] + h * k3g, want[s], k4f, k4g);
            rf[j] += h * (k1f + 2.0 * k2f + 2.0 * k3f + k4f) / 6.0;
            rg[j] += h * (k1g + 2.0 * k2g + 2.0 * k3g + k4g) / 6.0;
            sum += rf[j];
            scale += std::abs(rf[j]);
        }
        want.push_back(std::complex<double>(std::complex<T>(sum)));  // delta is held in T
    }
    std::vector<std::complex<T>> delta(steps + 1);
    CHECK(Api<T>::run(ctx, n, flat(f), flat(g), d0_t, dt_t, steps, flat(delta), delta.size()) == KP_OK,
          kp_last_error_message());
    // Rounding only (a different summation order), over 3 steps of a small system.
    for (std::size_t k = 0; k <= steps; ++k)
        CHECK(std::abs(std::complex<double>(delta[k]) - want[k]) <= 100 * Api<T>::eps * scale,
              "delta[" + std::to_string(k) + "]");
    std::printf("ok   %s\n", group.c_str());
}

template <typename T>
void check_errors(kp_context* ctx) {
    group = std::string(Api<T>::name) + " errors";
    std::vector<std::complex<T>> f(16, {T(0.5), T(-0.5)}), g(16, {T(0.25), T(1)}), delta(3, {T(-7), T(-7)});
    const auto f0 = f, g0 = g, delta0 = delta;
    CHECK(Api<T>::run(ctx, 4, flat(f), flat(g), {1, 0}, T(1e-3), 3, flat(delta), 3) == KP_ERROR_INVALID_ARGUMENT,
          "delta_len = nsteps must be rejected");
    CHECK(std::strstr(kp_last_error_message(), "delta_len") != nullptr, kp_last_error_message());
    CHECK(Api<T>::run(ctx, 0, flat(f), flat(g), {1, 0}, T(1e-3), 2, flat(delta), 3) == KP_ERROR_INVALID_ARGUMENT,
          "N = 0 must be rejected");
    g[3] = {std::numeric_limits<T>::infinity(), 0};
    CHECK(Api<T>::run(ctx, 4, flat(f), flat(g), {1, 0}, T(1e-3), 2, flat(delta), 3) == KP_ERROR_INVALID_ARGUMENT,
          "G with Inf must be rejected");
    g[3] = g0[3];
    CHECK(Api<T>::run(ctx, 4, nullptr, flat(g), {1, 0}, T(1e-3), 2, flat(delta), 3) == KP_ERROR_NULL_POINTER,
          "NULL f");
    CHECK(f == f0 && g == g0 && delta == delta0, "outputs written on failure");
    std::printf("ok   %s\n", group.c_str());
}

template <typename T>
void check_all(kp_context* ctx) {
    check_rotation<T>(ctx);
    check_steps<T>(ctx);
    check_errors<T>(ctx);
}

}  // namespace

int main() {
    try {
        Context cpu(KP_BACKEND_CPU), autoctx(KP_BACKEND_AUTO);
        int32_t is_gpu = -1;
        CHECK(kp_context_is_gpu(autoctx.raw, &is_gpu) == KP_OK, kp_last_error_message());
        const char* require = std::getenv("KERNPACK_REQUIRE_GPU");
        if (is_gpu == 1) {
            std::printf("AUTO context runs on the GPU\n");
        } else {
            CHECK(!(require && std::string(require) == "1"), "KERNPACK_REQUIRE_GPU=1 but no GPU");
            std::printf("AUTO context runs on the CPU (no GPU)\n");
        }
        for (kp_context* ctx : {cpu.raw, autoctx.raw}) {
            check_all<float>(ctx);
            check_all<double>(ctx);
        }
    } catch (const CheckFailure& e) {
        std::fprintf(stderr, "FAIL [%s] %s\n", group.c_str(), e.what());
        return 1;
    }
    std::printf("all checks passed\n");
    return 0;
}
