// The checks of the C++ programs of ffi-tests/ (C++17), for those that
// include it: check() (a failure prints the message and the last error, and
// exits 1), expect_refused() over a table of bad calls, RAII around a
// context, a generator of test data, and the CPU and AUTO contexts.
#ifndef KP_FFI_TESTS_CHECKS_HPP
#define KP_FFI_TESTS_CHECKS_HPP

#include "kernpack.h"

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace checks {

inline void check(bool ok, const std::string& what)
{
    if (!ok) {
        std::fprintf(stderr, "FAIL: %s (last error: \"%s\")\n", what.c_str(),
                     kp_last_error_message());
        std::exit(1);
    }
}

struct ContextDeleter {
    void operator()(kp_context* c) const { kp_context_destroy(c); }
};
using Context = std::unique_ptr<kp_context, ContextDeleter>;

inline Context make_context(kp_backend backend)
{
    kp_context* raw = nullptr;
    check(kp_context_create(backend, &raw) == KP_OK && raw != nullptr, "kp_context_create");
    return Context(raw);
}

// A call that must be refused: what it is, the call, the status and a
// piece of the message.
struct Refusal {
    const char* what;
    std::function<kp_status()> call;
    kp_status want;
    const char* needle;
};

// Each call is refused as stated, and `untouched()` (the outputs as they
// were) holds after it; `what` names the group in failures.
inline void expect_refused(const std::vector<Refusal>& cases, const std::function<bool()>& untouched,
                           const std::string& what)
{
    for (const Refusal& c : cases) {
        const kp_status s = c.call();
        const std::string msg = kp_last_error_message();
        check(s == c.want, std::string(c.what) + ": status " + std::to_string(static_cast<int>(s)) + " " + what);
        check(msg.find(c.needle) != std::string::npos,
              std::string(c.what) + ": \"" + msg + "\" lacks \"" + c.needle + "\" " + what);
        check(untouched(), std::string(c.what) + ": a failing call wrote an output " + what);
    }
}

// A linear congruential generator of uniform doubles in [0, 1).
class Lcg {
public:
    explicit Lcg(std::uint64_t seed) : state_(seed) {}
    double operator()()
    {
        state_ = state_ * 6364136223846793005ULL + 1442695040888963407ULL;
        return static_cast<double>(state_ >> 11) / 9007199254740992.0;
    }

private:
    std::uint64_t state_;
};

// A CPU context and an AUTO one; whether the AUTO one runs on the GPU
// (said on stdout; without one, KERNPACK_REQUIRE_GPU=1 fails), and its name
// in messages.
struct Contexts {
    Context cpu, autoctx;
    bool is_gpu;
    std::string auto_name;
};

inline Contexts open_contexts()
{
    Contexts c{make_context(KP_BACKEND_CPU), make_context(KP_BACKEND_AUTO), false, ""};
    std::int32_t is_gpu = -1;
    check(kp_context_is_gpu(c.autoctx.get(), &is_gpu) == KP_OK, "kp_context_is_gpu");
    std::printf("     AUTO context runs on the %s\n", is_gpu ? "GPU" : "CPU");
    const char* require = std::getenv("KERNPACK_REQUIRE_GPU");
    check(is_gpu || !(require && std::string(require) == "1"), "KERNPACK_REQUIRE_GPU=1 but no GPU");
    c.is_gpu = is_gpu != 0;
    c.auto_name = c.is_gpu ? "auto = gpu" : "auto = cpu";
    return c;
}

}  // namespace checks

#endif
