// End-to-end test of the kernpack C ABI for the ODE ensembles from C++17:
// an RAII context, std::vector buffers, one templated code path for f32 and
// f64. Lorenz 96 is checked against a small C++ re-implementation of
// MODELS.md, Lorenz 2005 against its rest state (dZ = 0 at Z == F) and a
// trajectory's consistency, states at chosen steps against the every-step
// trajectory (bitwise), the adaptive Lorenz 63 run against a tight f64
// run of itself, bad parameters against their status codes.
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
#include <limits>
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
kp_status lorenz96_save_at(kp_context* c, const kp_lorenz96_params* p, const T* z, size_t m, uint64_t s,
                           const uint64_t* at, size_t n_at, T* out, T* saved) {
    if constexpr (std::is_same_v<T, float>) return kp_lorenz96_save_at_f32(c, p, z, m, s, at, n_at, out, saved);
    else return kp_lorenz96_save_at_f64(c, p, z, m, s, at, n_at, out, saved);
}
template <typename T>
kp_status lorenz05(kp_context* c, const kp_lorenz05_params* p, const T* z, size_t m, uint64_t s, uint64_t e,
                   T* out, T* traj, size_t tlen, const T* f = nullptr, const T* b = nullptr,
                   const T* cc = nullptr) {
    if constexpr (std::is_same_v<T, float>) return kp_lorenz05_f32(c, p, z, m, f, b, cc, s, e, out, traj, tlen);
    else return kp_lorenz05_f64(c, p, z, m, f, b, cc, s, e, out, traj, tlen);
}

template <typename T>
kp_status lorenz63_adaptive(kp_context* c, const kp_lorenz63_adaptive_params* p, const std::vector<T>& y0,
                            const T* sigma, const std::vector<double>& times, T* out, T* saved,
                            uint32_t* accepted, uint32_t* rejected, uint32_t* status) {
    const size_t m = y0.size() / 3;
    if constexpr (std::is_same_v<T, float>)
        return kp_lorenz63_adaptive_f32(c, p, y0.data(), m, sigma, nullptr, nullptr, times.data(), times.size(), out,
                                        saved, accepted, rejected, status);
    else
        return kp_lorenz63_adaptive_f64(c, p, y0.data(), m, sigma, nullptr, nullptr, times.data(), times.size(), out,
                                        saved, accepted, rejected, status);
}

// Adaptive Lorenz 63, per-member sigma, three save times: within the
// tolerance of a tight f64 run (f64 at rtol 1e-9: 1e-6; fast-math f32 at
// rtol 1e-6: 1e-3; both above 200 rtol plus the rounding, the bound
// tests/lorenz63_adaptive.rs holds the backends to);
// an early stop and refused calls with their status codes.
template <typename T>
void check_l63_adaptive(kp_context* ctx) {
    const bool f32 = std::is_same_v<T, float>;
    const size_t members = 4;
    std::mt19937_64 rng(63);
    std::uniform_real_distribution<double> u(-10.0, 10.0);
    std::vector<double> y0(3 * members);
    for (size_t i = 0; i < y0.size(); ++i) y0[i] = u(rng) + (i % 3 == 2 ? 25.0 : 0.0);
    std::vector<T> y(y0.begin(), y0.end());
    std::vector<double> y64(y.begin(), y.end());  // the T values, exactly
    const std::vector<T> sigma = {T(10), T(9), T(11), T(10.5)};
    const std::vector<double> sigma64(sigma.begin(), sigma.end());
    const std::vector<double> times = {0.25, 0.5, 0.75};
    kp_lorenz63_adaptive_params p = kp_lorenz63_adaptive_default_params();
    p.t0 = 0.25, p.t_end = 0.75, p.rtol = 1e-11, p.atol = 1e-12;
    std::vector<double> want(3 * members), want_saved(9 * members);
    EXPECT_STATUS(lorenz63_adaptive<double>(ctx, &p, y64, sigma64.data(), times, want.data(), want_saved.data(),
                                            nullptr, nullptr, nullptr),
                  KP_OK);
    p.rtol = f32 ? 1e-6 : 1e-9, p.atol = f32 ? 1e-6 : 1e-10;
    std::vector<T> out(3 * members, T(-1e9)), saved(9 * members, T(-1e9));
    std::vector<uint32_t> accepted(members, 99), rejected(members, 99), status(members, 99);
    EXPECT_STATUS(lorenz63_adaptive<T>(ctx, &p, y, sigma.data(), times, out.data(), saved.data(), accepted.data(),
                                       rejected.data(), status.data()),
                  KP_OK);
    double err = 0, scale = 0;
    for (size_t i = 0; i < out.size(); ++i)
        err = std::max(err, std::abs(out[i] - want[i])), scale = std::max(scale, std::abs(want[i]));
    for (size_t i = 0; i < saved.size(); ++i) err = std::max(err, std::abs(saved[i] - want_saved[i]));
    CHECK(err <= (f32 ? 1e-3 : 1e-6) * scale, "adaptive L63 relative error " + std::to_string(err / scale));
    CHECK(std::equal(y.begin(), y.end(), saved.begin()), "the frame at t0 is not the initial state");
    CHECK(std::equal(out.begin(), out.end(), saved.end() - out.size()), "the frame at t_end != final state");
    for (size_t m = 0; m < members; ++m)
        CHECK(status[m] == KP_LORENZ63_REACHED && accepted[m] > 0 && accepted[m] < 100000,
              "member " + std::to_string(m) + " status " + std::to_string(status[m]));

    // Out of attempts: the status says so, the later frames are NaN.
    kp_lorenz63_adaptive_params few = p;
    few.max_steps = 3;
    EXPECT_STATUS(lorenz63_adaptive<T>(ctx, &few, y, nullptr, times, out.data(), saved.data(), accepted.data(),
                                       rejected.data(), status.data()),
                  KP_OK);
    for (size_t m = 0; m < members; ++m) {
        CHECK(status[m] == KP_LORENZ63_MAX_STEPS && accepted[m] + rejected[m] == 3, "early stop not reported");
        CHECK(std::isnan(saved[6 * members + 3 * m]), "a state after the stop");
    }

    // Refused: status codes, every output untouched.
    std::vector<T> poison(3 * members, T(-7)), poison_saved(9 * members, T(-7));
    std::vector<uint32_t> counts(members, 7);
    kp_lorenz63_adaptive_params bad = p;
    bad.rtol = 0.0, bad.atol = 0.0;
    EXPECT_STATUS(lorenz63_adaptive<T>(ctx, &bad, y, nullptr, times, poison.data(), poison_saved.data(),
                                       counts.data(), nullptr, nullptr),
                  KP_ERROR_INVALID_ARGUMENT);
    bad = p, bad.max_step = std::nan("");
    EXPECT_STATUS(lorenz63_adaptive<T>(ctx, &bad, y, nullptr, times, poison.data(), poison_saved.data(),
                                       counts.data(), nullptr, nullptr),
                  KP_ERROR_INVALID_ARGUMENT);
    CHECK(std::strstr(kp_last_error_message(), "max_step") != nullptr, "message lacks max_step");
    const std::vector<double> outside = {0.25, 1.5};
    EXPECT_STATUS(lorenz63_adaptive<T>(ctx, &p, y, nullptr, outside, poison.data(), poison_saved.data(),
                                       counts.data(), nullptr, nullptr),
                  KP_ERROR_INVALID_ARGUMENT);
    const std::vector<T> bad_sigma = {T(10), T(INFINITY), T(10), T(10)};
    EXPECT_STATUS(lorenz63_adaptive<T>(ctx, &p, y, bad_sigma.data(), times, poison.data(), poison_saved.data(),
                                       counts.data(), nullptr, nullptr),
                  KP_ERROR_INVALID_ARGUMENT);
    CHECK(std::strstr(kp_last_error_message(), "sigma[1]") != nullptr, "message lacks sigma[1]");
    EXPECT_STATUS(lorenz63_adaptive<T>(ctx, &p, y, nullptr, times, poison.data(), nullptr, counts.data(), nullptr,
                                       nullptr),
                  KP_ERROR_NULL_POINTER);
    CHECK(std::all_of(poison.begin(), poison.end(), [](T v) { return v == T(-7); }), "out written on failure");
    CHECK(std::all_of(poison_saved.begin(), poison_saved.end(), [](T v) { return v == T(-7); }),
          "saved written on failure");
    CHECK(std::all_of(counts.begin(), counts.end(), [](uint32_t v) { return v == 7; }), "counts written on failure");
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

    // States at chosen steps of a noisy Lorenz 96 run: frames and final
    // states bitwise those of the every-step trajectory; bad lists refused.
    kp_lorenz96_params noisy = p;
    noisy.noise = 0.5, noisy.seed = 42;
    const std::vector<uint64_t> at = {1, 4, 8};
    const size_t frames = steps + 1;
    std::vector<T> every_traj(frames * len), every_out(len), saved(at.size() * len, T(-7)), out2(len, T(-7));
    EXPECT_STATUS(lorenz96<T>(ctx, &noisy, z.data(), members, steps, 1, every_out.data(), every_traj.data(),
                              every_traj.size()),
                  KP_OK);
    EXPECT_STATUS(lorenz96_save_at<T>(ctx, &noisy, z.data(), members, steps, at.data(), at.size(), out2.data(),
                                      saved.data()),
                  KP_OK);
    CHECK(std::memcmp(out2.data(), every_out.data(), len * sizeof(T)) == 0, "save_at final states differ");
    for (size_t k = 0; k < at.size(); ++k)
        CHECK(std::memcmp(saved.data() + k * len, every_traj.data() + at[k] * len, len * sizeof(T)) == 0,
              "save_at frame " + std::to_string(k) + " differs");
    const std::vector<uint64_t> repeated = {4, 4};
    std::fill(saved.begin(), saved.end(), T(-7));
    EXPECT_STATUS(lorenz96_save_at<T>(ctx, &noisy, z.data(), members, steps, repeated.data(), repeated.size(),
                                      poison.data(), saved.data()),
                  KP_ERROR_INVALID_ARGUMENT);
    CHECK(std::all_of(saved.begin(), saved.end(), [](T v) { return v == T(-7); }), "saved written on failure");
    // F, b, c per member (in T): each member as it runs alone with its values
    // in the parameters, bit for bit; a wrong value refused, outputs untouched.
    {
        kp_lorenz05_params small = q;
        small.n = 90, small.k = 8, small.j = 4;
        const size_t m3 = 3;
        std::vector<T> z0(m3 * small.n), each(m3 * small.n), alone(small.n);
        for (size_t i = 0; i < z0.size(); ++i) z0[i] = static_cast<T>(3.0 + 4.0 * std::sin(0.37 * double(i)));
        const std::vector<T> f{T(12), T(15.5), T(17)}, b{T(8), T(10), T(11.25)}, c{T(2.5), T(3), T(3.75)};
        EXPECT_STATUS(lorenz05<T>(ctx, &small, z0.data(), m3, 7, 0, each.data(), nullptr, 0, f.data(), b.data(),
                                  c.data()),
                      KP_OK);
        for (size_t m = 0; m < m3; ++m) {
            kp_lorenz05_params one = small;
            one.forcing = f[m], one.b = b[m], one.c = c[m];
            EXPECT_STATUS(lorenz05<T>(ctx, &one, z0.data() + m * small.n, 1, 7, 0, alone.data(), nullptr, 0), KP_OK);
            CHECK(std::equal(alone.begin(), alone.end(), each.begin() + m * small.n),
                  "per-member run differs from member " + std::to_string(m) + " alone");
        }
        std::vector<T> bad_c = c, untouched(m3 * small.n, T(-7));
        bad_c[2] = std::numeric_limits<T>::quiet_NaN();
        EXPECT_STATUS(lorenz05<T>(ctx, &small, z0.data(), m3, 1, 0, untouched.data(), nullptr, 0, nullptr, nullptr,
                                  bad_c.data()),
                      KP_ERROR_INVALID_ARGUMENT);
        CHECK(std::string(kp_last_error_message()).find("c[2]") != std::string::npos, "message lacks c[2]");
        CHECK(std::all_of(untouched.begin(), untouched.end(), [](T v) { return v == T(-7); }),
              "output written on failure");
    }

    check_l63_adaptive<T>(ctx);
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
