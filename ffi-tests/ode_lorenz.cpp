// End-to-end test of the kernpack C ABI for the ODE ensembles from C++17:
// an RAII context, std::vector buffers, one templated code path for f32 and
// f64. Lorenz 96 is checked against a small C++ re-implementation of
// MODELS.md, Lorenz 2005 against its rest state (dZ = 0 at Z == F) and a
// trajectory's consistency, bad parameters against their status codes.
//
// Exit status 0 when every check passes; the first failed check is printed to
// stderr and the program exits with 1. With KERNPACK_REQUIRE_GPU=1 a missing
// GPU is a failure. Built and run by tests/ffi_programs.rs.
#include "kernpack.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <random>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

namespace {

std::string group = "setup";

[[noreturn]] void fail(int line, const std::string& what) {
    const char* msg = kp_last_error_message();
    throw std::runtime_error("[" + group + "] ode_lorenz.cpp:" + std::to_string(line) + ": " + what +
                             "\n  kp_last_error_message: \"" + (msg ? msg : "(NULL)") + "\"");
}

#define CHECK(cond, msg)                                  \
    do {                                                  \
        if (!(cond)) fail(__LINE__, std::string(#cond) + ": " + (msg)); \
    } while (0)
#define EXPECT_STATUS(call, want) \
    do { kp_status s_ = (call); CHECK(s_ == (want), "status " + std::to_string((int)s_)); } while (0)

using Context = std::unique_ptr<kp_context, decltype(&kp_context_destroy)>;

Context make_context(uint32_t backend) {
    kp_context* raw = nullptr;
    if (kp_context_create(backend, &raw) != KP_OK) throw std::runtime_error(kp_last_error_message());
    return Context(raw, &kp_context_destroy);
}

// Lorenz 96 RK4 as MODELS.md states it, in double.
void l96_step(const kp_lorenz96_params& p, std::vector<double>& z) {
    const int n = static_cast<int>(p.n);
    auto f = [&](const std::vector<double>& x, std::vector<double>& dx) {
        for (int k = 0; k < n; ++k)
            dx[k] = (x[(k + 1) % n] - x[(k + n - 2) % n]) * x[(k + n - 1) % n] - x[k] + p.forcing;
    };
    std::vector<double> s = z, d(n), inc(n);
    for (int st = 0; st < 4; ++st) {
        f(s, d);
        for (int i = 0; i < n; ++i) {
            const double k = p.dt * d[i];
            if (st == 0) inc[i] = k / 6.0, s[i] = z[i] + k * 0.5;
            else if (st == 1) inc[i] += k / 3.0, s[i] = z[i] + k * 0.5;
            else if (st == 2) inc[i] += k / 3.0, s[i] = z[i] + k;
            else inc[i] += k / 6.0, z[i] += inc[i];
        }
    }
}

template <typename T>
kp_status lorenz96(kp_context* c, const kp_lorenz96_params* p, const T* z, size_t m, uint64_t s, uint64_t e,
                   T* out, T* traj, size_t tlen) {
    if constexpr (std::is_same_v<T, float>) return kp_lorenz96_f32(c, p, z, m, s, e, out, traj, tlen);
    else return kp_lorenz96_f64(c, p, z, m, s, e, out, traj, tlen);
}
template <typename T>
kp_status lorenz05(kp_context* c, const kp_lorenz05_params* p, const T* z, size_t m, uint64_t s, uint64_t e,
                   T* out, T* traj, size_t tlen) {
    if constexpr (std::is_same_v<T, float>) return kp_lorenz05_f32(c, p, z, m, s, e, out, traj, tlen);
    else return kp_lorenz05_f64(c, p, z, m, s, e, out, traj, tlen);
}

template <typename T>
void check_dtype(kp_context* ctx) {
    // f64: same operations in the same order, 1e-12; f32: fast-math f32 over 8 steps, 1e-4.
    const double tol = std::is_same_v<T, float> ? 1e-4 : 1e-12;
    std::mt19937_64 rng(7);
    std::uniform_real_distribution<double> u(-5.0, 10.0);
    const kp_lorenz96_params p = kp_lorenz96_default_params();
    const size_t members = 5, len = members * p.n, steps = 8;
    std::vector<double> want(len);
    std::vector<T> z(len), out(len, T(-1e9));
    for (size_t i = 0; i < len; ++i) z[i] = static_cast<T>(u(rng)), want[i] = static_cast<double>(z[i]);
    for (size_t m = 0; m < members; ++m) {
        std::vector<double> zm(want.begin() + m * p.n, want.begin() + (m + 1) * p.n);
        for (size_t s = 0; s < steps; ++s) l96_step(p, zm);
        std::copy(zm.begin(), zm.end(), want.begin() + m * p.n);
    }
    EXPECT_STATUS(lorenz96<T>(ctx, &p, z.data(), members, steps, 0, out.data(), nullptr, 0), KP_OK);
    double err = 0, scale = 0;
    for (size_t i = 0; i < len; ++i) err = std::max(err, std::abs(out[i] - want[i])), scale = std::max(scale, std::abs(want[i]));
    CHECK(err <= tol * scale, "L96 relative error " + std::to_string(err / scale));

    // Lorenz 2005 Model III, DART defaults: the rest state Z == F does not move,
    // and the trajectory's last frame is the final state.
    const kp_lorenz05_params q = kp_lorenz05_default_params();
    std::vector<T> rest(2 * q.n, static_cast<T>(q.forcing)), fin(2 * q.n);
    const size_t tlen = kp_lorenz_trajectory_len(2, q.n, 6, 3);
    std::vector<T> traj(tlen, T(-1e9));
    EXPECT_STATUS(lorenz05<T>(ctx, &q, rest.data(), 2, 6, 3, fin.data(), traj.data(), tlen), KP_OK);
    for (size_t i = 0; i < fin.size(); ++i)
        CHECK(std::abs(fin[i] - q.forcing) < (std::is_same_v<T, float> ? 1e-4 : 1e-10), "rest state moved");
    CHECK(std::equal(fin.begin(), fin.end(), traj.end() - fin.size()), "last frame != final state");

    // Bad parameters: status codes, outputs untouched.
    std::vector<T> poison(len, T(-7));
    kp_lorenz05_params bad = q;
    bad.k = 0;
    EXPECT_STATUS(lorenz05<T>(ctx, &bad, rest.data(), 2, 1, 0, poison.data(), nullptr, 0), KP_ERROR_INVALID_ARGUMENT);
    bad = q, bad.dt = std::nan("");
    EXPECT_STATUS(lorenz05<T>(ctx, &bad, rest.data(), 2, 1, 0, poison.data(), nullptr, 0), KP_ERROR_INVALID_ARGUMENT);
    bad = q, bad.c = INFINITY;
    EXPECT_STATUS(lorenz05<T>(ctx, &bad, rest.data(), 2, 1, 0, poison.data(), nullptr, 0), KP_ERROR_INVALID_ARGUMENT);
    EXPECT_STATUS(lorenz05<T>(ctx, &q, rest.data(), 2, 1, 0, nullptr, nullptr, 0), KP_ERROR_NULL_POINTER);
    EXPECT_STATUS(lorenz96<T>(ctx, &p, z.data(), members, 2, 3, poison.data(), poison.data(), len), KP_ERROR_INVALID_ARGUMENT);
    CHECK(std::all_of(poison.begin(), poison.end(), [](T v) { return v == T(-7); }), "output written on failure");
}

}  // namespace

int main() {
    try {
        group = "contexts";
        Context cpu = make_context(KP_BACKEND_CPU);
        Context autoctx = make_context(KP_BACKEND_AUTO);
        int32_t is_gpu = 0;
        EXPECT_STATUS(kp_context_is_gpu(autoctx.get(), &is_gpu), KP_OK);
        const char* require = std::getenv("KERNPACK_REQUIRE_GPU");
        if (require && std::strcmp(require, "1") == 0)
            CHECK(is_gpu, "KERNPACK_REQUIRE_GPU=1 but the AUTO context runs on the CPU");
        for (kp_context* ctx : {cpu.get(), autoctx.get()}) {
            group = ctx == cpu.get() ? "CPU f64" : "AUTO f64";
            check_dtype<double>(ctx);
            std::printf("ok   %s\n", group.c_str());
            group = ctx == cpu.get() ? "CPU f32" : "AUTO f32";
            check_dtype<float>(ctx);
            std::printf("ok   %s\n", group.c_str());
        }
        std::printf("     AUTO context runs on the %s\n", is_gpu ? "GPU" : "CPU");
        std::printf("all checks passed (C++, %s)\n", is_gpu ? "GPU" : "CPU only");
        return 0;
    } catch (const std::exception& e) {
        std::fprintf(stderr, "FAIL %s\n", e.what());
        return 1;
    }
}
