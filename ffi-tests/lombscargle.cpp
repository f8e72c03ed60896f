// End-to-end test of the kernpack C ABI (Lomb-Scargle) from C++17, written as
// a C++ user would: RAII handles over the C objects, std::vector buffers, a
// std::complex view of the amplitude output, one code path for both dtypes;
// the multi-term and multiband periodograms; bootstrap false-alarm maxima
// (single- and multi-term); a batch's best peaks
// (kp_lombscargle_batch_top_peaks, kp_lombscargle_multiband_batch_peaks)
// against the batch's periodograms.
//
// Exit status 0 when every check passes; otherwise the first failed check is
// printed to stderr and the program exits with 1. One line per check group
// goes to stdout. With KERNPACK_REQUIRE_GPU=1 a missing GPU is a failure.
//
// Built and run by tests/ffi_programs.rs.
#include "kernpack.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <complex>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <limits>
#include <memory>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

namespace {

constexpr std::size_t kNx = 257;
constexpr std::size_t kNf = 333;
constexpr std::size_t kPeak = 101;  // the signal's angular frequency is freqs[kPeak]
constexpr double kAmplitude = 1.5;
constexpr double kPoison = -12345.0;

std::string group = "setup";

struct CheckFailure : std::runtime_error {
    using std::runtime_error::runtime_error;
};

// The message is copied at once: it is only valid until the next kernpack
// call on this thread, and RAII destructors make such calls while unwinding.
[[noreturn]] void fail(int line, const std::string& what) {
    const char* msg = kp_last_error_message();
    throw CheckFailure("[" + group + "] lombscargle.cpp:" + std::to_string(line) + ": " + what +
                       "\n  kp_last_error_message: \"" + (msg ? msg : "(NULL)") + "\"");
}

#define CHECK(cond, msg)                                                              \
    do {                                                                              \
        if (!(cond)) fail(__LINE__, std::string("check `" #cond "` failed: ") + (msg)); \
    } while (0)

void group_done() {
    std::printf("ok   %s\n", group.c_str());
    std::fflush(stdout);
}

std::string status_name(kp_status s) {
    // Only values of the enum may be passed to kp_status_string.
    const int v = static_cast<int>(s);
    const char* name = (v >= KP_OK && v <= KP_ERROR_INTERNAL) ? kp_status_string(s) : "?";
    return std::to_string(v) + " (" + name + ")";
}

std::string last_error() {
    const char* msg = kp_last_error_message();
    return msg ? msg : "(NULL)";
}

void expect_status(int line, kp_status got, kp_status want, const char* call) {
    if (got != want)
        fail(line, std::string(call) + " returned " + status_name(got) + ", expected " +
                       status_name(want));
}

bool names_argument(const std::string& msg, const std::string& name) {
    auto word = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; };
    for (auto pos = msg.find(name); pos != std::string::npos; pos = msg.find(name, pos + 1)) {
        const bool before = pos == 0 || !word(msg[pos - 1]);
        const bool after = pos + name.size() >= msg.size() || !word(msg[pos + name.size()]);
        if (before && after) return true;
    }
    return false;
}

void expect_error(int line, kp_status got, kp_status want, const char* arg, const char* call) {
    expect_status(line, got, want, call);
    const std::string msg = last_error();
    if (msg.empty()) fail(line, std::string(call) + " failed but kp_last_error_message() is empty");
    if (arg && !names_argument(msg, arg))
        fail(line, std::string(call) + ": the message does not name `" + arg + "`");
}

#define EXPECT_OK(call) expect_status(__LINE__, (call), KP_OK, #call)
#define EXPECT_ERR(call, want, arg) expect_error(__LINE__, (call), (want), (arg), #call)

// ---- RAII over the C handles ------------------------------------------------

struct ContextDeleter {
    void operator()(kp_context* ctx) const noexcept { kp_context_destroy(ctx); }
};
using Context = std::unique_ptr<kp_context, ContextDeleter>;

Context make_context(kp_backend backend) {
    kp_context* raw = nullptr;
    const kp_status s = kp_context_create(backend, &raw);
    if (s != KP_OK)
        fail(__LINE__, "kp_context_create(" + std::to_string(backend) + ") returned " +
                           status_name(s));
    CHECK(raw != nullptr, "KP_OK with a NULL handle");
    return Context(raw);
}

bool is_gpu(const Context& ctx) {
    std::int32_t flag = -1;
    EXPECT_OK(kp_context_is_gpu(ctx.get(), &flag));
    CHECK(flag == 0 || flag == 1, "is_gpu = " + std::to_string(flag));
    return flag == 1;
}

// Device memory of one context, freed on scope exit.
class DeviceBuffer {
  public:
    DeviceBuffer(const kp_context* ctx, std::size_t bytes) : ctx_(ctx), bytes_(bytes) {
        EXPECT_OK(kp_device_alloc(ctx_, bytes_, &ptr_));
        CHECK(ptr_ != 0, "kp_device_alloc gave address 0");
    }
    template <typename T>
    DeviceBuffer(const kp_context* ctx, const std::vector<T>& host)
        : DeviceBuffer(ctx, host.size() * sizeof(T)) {
        EXPECT_OK(kp_memcpy_htod(ctx_, ptr_, reinterpret_cast<const std::uint8_t*>(host.data()),
                                 bytes_));
    }
    DeviceBuffer(const DeviceBuffer&) = delete;
    DeviceBuffer& operator=(const DeviceBuffer&) = delete;
    ~DeviceBuffer() {
        if (ptr_ != 0) kp_device_free(ctx_, ptr_);
    }
    std::uint64_t get() const { return ptr_; }
    template <typename T>
    std::vector<T> download() const {
        std::vector<T> host(bytes_ / sizeof(T), static_cast<T>(kPoison));
        EXPECT_OK(kp_memcpy_dtoh(ctx_, reinterpret_cast<std::uint8_t*>(host.data()), ptr_, bytes_));
        return host;
    }

  private:
    const kp_context* ctx_;
    std::size_t bytes_;
    std::uint64_t ptr_ = 0;
};

// ---- one call per dtype -----------------------------------------------------

kp_status lombscargle(const kp_context* c, const float* t, const float* y, const float* w,
                      std::size_t nx, const float* f, std::size_t nf,
                      const kp_lombscargle_options* o, float* out, std::size_t out_len) {
    return kp_lombscargle_f32(c, t, y, w, nx, f, nf, o, out, out_len);
}
kp_status lombscargle(const kp_context* c, const double* t, const double* y, const double* w,
                      std::size_t nx, const double* f, std::size_t nf,
                      const kp_lombscargle_options* o, double* out, std::size_t out_len) {
    return kp_lombscargle_f64(c, t, y, w, nx, f, nf, o, out, out_len);
}
template <typename T>
kp_status lombscargle_device(const kp_context* c, std::uint64_t t, std::uint64_t y,
                             std::uint64_t w, std::size_t nx, std::uint64_t f, std::size_t nf,
                             const kp_lombscargle_options* o, std::uint64_t out,
                             std::uint64_t stream) {
    if constexpr (std::is_same_v<T, float>)
        return kp_lombscargle_device_f32(c, t, y, w, nx, f, nf, o, out, kp_lombscargle_output_len(nf, o), stream);
    else
        return kp_lombscargle_device_f64(c, t, y, w, nx, f, nf, o, out, kp_lombscargle_output_len(nf, o), stream);
}

template <typename T>
const char* dtype() {
    return std::is_same_v<T, float> ? "f32" : "f64";
}

template <typename T>
struct Series {
    std::vector<T> t, y, w, f;
};

// Irregular times over 60 units, a sinusoid of amplitude kAmplitude at
// angular frequency f[kPeak] plus uniform noise, positive weights.
template <typename T>
Series<T> make_series() {
    std::uint64_t state = 0x9e3779b97f4a7c15ULL;
    auto uniform = [&state] {
        state = state * 6364136223846793005ULL + 1442695040888963407ULL;
        return static_cast<double>(state >> 11) / 9007199254740992.0;
    };
    const double span = 60.0;
    Series<T> s;
    std::vector<double> f(kNf);
    for (std::size_t k = 0; k < kNf; ++k) f[k] = 0.02 + 0.009 * static_cast<double>(k);
    for (std::size_t i = 0; i < kNx; ++i) {
        const double t = span * (static_cast<double>(i) + 0.9 * uniform()) / kNx;
        s.t.push_back(static_cast<T>(t));
        s.y.push_back(static_cast<T>(kAmplitude * std::cos(f[kPeak] * t - 1.1) +
                                     0.4 * (uniform() - 0.5)));
        s.w.push_back(static_cast<T>(0.25 + 2.0 * uniform()));
    }
    for (double v : f) s.f.push_back(static_cast<T>(v));
    return s;
}

kp_lombscargle_options options(std::uint32_t normalize, bool floating_mean = false,
                               bool precenter = false) {
    kp_lombscargle_options o = kp_lombscargle_options_default();
    o.normalize = normalize;
    o.floating_mean = floating_mean ? 1 : 0;
    o.precenter = precenter ? 1 : 0;
    return o;
}

// The periodogram through the host-pointer entry point, into a buffer one
// value longer than needed, which must stay untouched.
template <typename T>
std::vector<T> periodogram(const kp_context* ctx, const Series<T>& s,
                           const kp_lombscargle_options& o, bool weighted) {
    const std::size_t len = kp_lombscargle_output_len(s.f.size(), &o);
    CHECK(len != 0, "kp_lombscargle_output_len is 0 for a valid mode");
    std::vector<T> out(len + 1, static_cast<T>(kPoison));
    EXPECT_OK(lombscargle(ctx, s.t.data(), s.y.data(), weighted ? s.w.data() : nullptr,
                          s.t.size(), s.f.data(), s.f.size(), &o, out.data(), len));
    CHECK(out.back() == static_cast<T>(kPoison), "wrote past out_len");
    CHECK(last_error().empty(), "a successful call left the message \"" + last_error() + "\"");
    out.pop_back();
    return out;
}

// max |a - b| / max |b|
template <typename T>
double scaled_diff(const std::vector<T>& a, const std::vector<T>& b) {
    CHECK(a.size() == b.size(), "sizes differ");
    double err = 0.0, scale = 0.0;
    for (std::size_t i = 0; i < a.size(); ++i) {
        const double d = std::abs(static_cast<double>(a[i]) - static_cast<double>(b[i]));
        if (!(d <= err)) err = d;  // NaN wins
        scale = std::max(scale, std::abs(static_cast<double>(b[i])));
    }
    return scale > 0.0 ? err / scale : err;
}

// ---- check groups -----------------------------------------------------------

void check_status_strings() {
    group = "status strings";
    std::vector<std::string> seen;
    for (int s = KP_OK; s <= KP_ERROR_INTERNAL; ++s) {
        const char* text = kp_status_string(static_cast<kp_status>(s));
        CHECK(text != nullptr, "kp_status_string(" + std::to_string(s) + ") is NULL");
        CHECK(text[0] != '\0', "kp_status_string(" + std::to_string(s) + ") is empty");
        CHECK(std::find(seen.begin(), seen.end(), text) == seen.end(), "duplicate description");
        seen.emplace_back(text);
    }
    group_done();
}

void check_contexts(bool auto_is_gpu) {
    group = "contexts";
    kp_context_destroy(nullptr);  // accepted and ignored
    int sentinel = 0;
    kp_context* const untouched = reinterpret_cast<kp_context*>(&sentinel);
    kp_context* raw = untouched;
    EXPECT_ERR(kp_context_create(99, &raw), KP_ERROR_INVALID_ARGUMENT, nullptr);
    CHECK(raw == untouched, "a failed kp_context_create wrote *out");
    EXPECT_ERR(kp_context_create(KP_BACKEND_CPU, nullptr), KP_ERROR_NULL_POINTER, "out");
    std::int32_t flag = 0;
    EXPECT_ERR(kp_context_is_gpu(nullptr, &flag), KP_ERROR_NULL_POINTER, "ctx");

    if (auto_is_gpu) {
        Context gpu = make_context(KP_BACKEND_GPU);
        CHECK(is_gpu(gpu), "a KP_BACKEND_GPU context is not on the GPU");
    } else {
        raw = untouched;
        const kp_status s = kp_context_create(KP_BACKEND_GPU, &raw);
        const char* require = std::getenv("KERNPACK_REQUIRE_GPU");
        if (require && std::string(require) == "1")
            fail(__LINE__, "KERNPACK_REQUIRE_GPU=1 but the AUTO context runs on the CPU; "
                           "kp_context_create(KP_BACKEND_GPU) returned " + status_name(s));
        EXPECT_ERR(s, KP_ERROR_NO_GPU, nullptr);
        CHECK(raw == untouched, "a failed kp_context_create wrote *out");
    }
    // A success clears the message of the failure before it.
    EXPECT_ERR(kp_context_create(7, &raw), KP_ERROR_INVALID_ARGUMENT, nullptr);
    Context cpu = make_context(KP_BACKEND_CPU);
    CHECK(last_error().empty(), "after a success the message is \"" + last_error() + "\"");
    group_done();
}

// The multi-term periodogram, both dtypes through one overload set: two
// harmonics on the batch entry point (the same series twice), powers in
// [0, 1] peaking at the signal's frequency (cycles = angular / 2 pi), and a
// batch whose offsets decrease failing with out untouched; then the batch's
// best peaks (kp_lombscargle_chi2_batch_peaks), refined and with FAPs.
kp_status chi2_batch(const kp_context* c, const kp_chi2_options* o, const float* t, const float* y,
                     const std::int64_t* offsets, std::size_t nseries, double f0, double df,
                     std::size_t nf, float* out) {
    return kp_lombscargle_chi2_batch_f32(c, o, t, y, nullptr, offsets, nseries, f0, df, nf, out);
}
kp_status chi2_batch(const kp_context* c, const kp_chi2_options* o, const double* t,
                     const double* y, const std::int64_t* offsets, std::size_t nseries, double f0,
                     double df, std::size_t nf, double* out) {
    return kp_lombscargle_chi2_batch_f64(c, o, t, y, nullptr, offsets, nseries, f0, df, nf, out);
}

kp_status chi2_batch_peaks(const kp_context* c, const kp_chi2_options* o, const float* t,
                          const float* y, const std::int64_t* offsets, double f0, double df,
                          const kp_peak_options* p, const kp_refined_peak_options* s,
                          std::int64_t* index, double* frequency, double* power, double* fap) {
    return kp_lombscargle_chi2_batch_peaks_f32(c, o, t, y, nullptr, offsets, 2, f0, df, kNf, p, s,
                                               index, frequency, power, fap);
}
kp_status chi2_batch_peaks(const kp_context* c, const kp_chi2_options* o, const double* t,
                          const double* y, const std::int64_t* offsets, double f0, double df,
                          const kp_peak_options* p, const kp_refined_peak_options* s,
                          std::int64_t* index, double* frequency, double* power, double* fap) {
    return kp_lombscargle_chi2_batch_peaks_f64(c, o, t, y, nullptr, offsets, 2, f0, df, kNf, p, s,
                                               index, frequency, power, fap);
}

template <typename T>
void check_chi2(const Context& ctx, const char* name) {
    group = std::string("chi2 batch ") + dtype<T>() + " (" + name + ")";
    const Series<T> s = make_series<T>();
    std::vector<T> t(s.t), y(s.y);
    t.insert(t.end(), s.t.begin(), s.t.end());
    y.insert(y.end(), s.y.begin(), s.y.end());
    const std::int64_t n = static_cast<std::int64_t>(s.t.size());
    const std::vector<std::int64_t> offsets{0, n, 2 * n};
    const double two_pi = 6.283185307179586;
    const double f0 = 0.02 / two_pi, df = 0.009 / two_pi;
    kp_chi2_options o = kp_chi2_options_default();
    o.nterms = 2;
    std::vector<T> out(2 * kNf + 1, static_cast<T>(kPoison));
    EXPECT_OK(chi2_batch(ctx.get(), &o, t.data(), y.data(), offsets.data(), 2, f0, df, kNf,
                         out.data()));
    CHECK(out.back() == static_cast<T>(kPoison), "wrote past nseries x nf");
    for (std::size_t series = 0; series < 2; ++series) {
        const auto first = out.begin() + static_cast<std::ptrdiff_t>(series * kNf);
        for (auto v = first; v != first + kNf; ++v)
            CHECK(*v >= T(0) && *v <= T(1 + 1e-6), "chi2 power out of [0, 1]");
        const auto k = static_cast<std::size_t>(std::max_element(first, first + kNf) - first);
        CHECK(k + 1 >= kPeak && k <= kPeak + 1, "chi2 peak at index " + std::to_string(k));
    }
    std::fill(out.begin(), out.end(), static_cast<T>(kPoison));
    const std::vector<std::int64_t> bad{0, n, n - 1};
    EXPECT_ERR(chi2_batch(ctx.get(), &o, t.data(), y.data(), bad.data(), 2, f0, df, kNf,
                          out.data()),
               KP_ERROR_INVALID_ARGUMENT, "offsets");
    for (T v : out) CHECK(v == static_cast<T>(kPoison), "a failed chi2 call wrote its output");

    // The best peaks of the same batch (one term), refined, with FAPs: the
    // best at the signal's frequency, refining never lowering a peak.
    o.nterms = 1;
    kp_peak_options peaks = kp_peak_options_default();
    peaks.k = 3;
    kp_refined_peak_options search = kp_refined_peak_options_default();
    search.refine_points = 4;
    search.fap = 1;
    std::vector<std::int64_t> index(7, -4242);
    std::vector<double> frequency(7, kPoison), power(7, kPoison), fap(7, kPoison);
    EXPECT_OK(chi2_batch_peaks(ctx.get(), &o, t.data(), y.data(), offsets.data(), f0, df, &peaks,
                               nullptr, index.data(), frequency.data(), power.data(), nullptr));
    const std::vector<double> coarse(power);
    EXPECT_OK(chi2_batch_peaks(ctx.get(), &o, t.data(), y.data(), offsets.data(), f0, df, &peaks,
                               &search, index.data(), frequency.data(), power.data(), fap.data()));
    CHECK(index[6] == -4242 && fap[6] == kPoison, "peaks written past nseries x k");
    for (std::size_t series = 0; series < 2; ++series) {
        const auto best = static_cast<std::size_t>(index[series * 3]);
        CHECK(best + 1 >= kPeak && best <= kPeak + 1, "best peak at index " + std::to_string(best));
    }
    for (std::size_t i = 0; i < 6; ++i) {
        CHECK(index[i] >= 0 && power[i] >= coarse[i], "refining lowered peak " + std::to_string(i));
        CHECK(fap[i] >= 0.0 && fap[i] <= 1.0, "fap out of [0, 1]");
    }
    std::fill(index.begin(), index.end(), -4242);
    o.nterms = 2;
    EXPECT_ERR(chi2_batch_peaks(ctx.get(), &o, t.data(), y.data(), offsets.data(), f0, df, &peaks,
                                &search, index.data(), frequency.data(), power.data(), fap.data()),
               KP_ERROR_INVALID_ARGUMENT, "multi-term");
    for (std::int64_t i : index) CHECK(i == -4242, "a failed peaks call wrote its output");
    group_done();
}

// Bootstrap false-alarm maxima, both dtypes through one overload set: the
// same seed the same maxima, another seed others, the multi-term call with
// one harmonic the single-term call's maxima, three harmonics never below
// one, every maximum below the planted signal's peak; refused calls leave
// the maxima alone.
kp_status bootstrap(const kp_context* c, const Series<float>& s, double fmax, std::size_t r,
                    std::uint64_t seed, double* maxima) {
    return kp_lombscargle_bootstrap_f32(c, s.t.data(), s.y.data(), s.w.data(), s.t.size(), fmax,
                                        KP_POWER_STANDARD, r, seed, 5.0, maxima);
}
kp_status bootstrap(const kp_context* c, const Series<double>& s, double fmax, std::size_t r,
                    std::uint64_t seed, double* maxima) {
    return kp_lombscargle_bootstrap_f64(c, s.t.data(), s.y.data(), s.w.data(), s.t.size(), fmax,
                                        KP_POWER_STANDARD, r, seed, 5.0, maxima);
}
kp_status chi2_bootstrap(const kp_context* c, const kp_chi2_options* o, const Series<float>& s,
                         double fmax, std::size_t r, std::uint64_t seed, double* maxima) {
    return kp_lombscargle_chi2_bootstrap_f32(c, o, s.t.data(), s.y.data(), s.w.data(), s.t.size(),
                                             fmax, r, seed, 5.0, maxima);
}
kp_status chi2_bootstrap(const kp_context* c, const kp_chi2_options* o, const Series<double>& s,
                         double fmax, std::size_t r, std::uint64_t seed, double* maxima) {
    return kp_lombscargle_chi2_bootstrap_f64(c, o, s.t.data(), s.y.data(), s.w.data(), s.t.size(),
                                             fmax, r, seed, 5.0, maxima);
}

template <typename T>
void check_bootstrap(const Context& ctx, const char* name) {
    group = std::string("bootstrap FAP ") + dtype<T>() + " (" + name + ")";
    constexpr std::size_t kR = 48;
    const Series<T> s = make_series<T>();
    const double fmax = 0.4;  // cycles per unit time; the signal is at 0.148
    // Two paths to the same maxima (the single-term kernels, the multi-term
    // least squares): f64 agrees to its rounding; in f32 the paths round
    // differently (1.1e-4 apart seen on maxima near 0.12).
    const double tol = std::is_same<T, float>::value ? 1e-3 : 1e-9;
    std::vector<double> first(kR + 1, kPoison), again(kR + 1, kPoison), other(kR + 1, kPoison);
    EXPECT_OK(bootstrap(ctx.get(), s, fmax, kR, 11, first.data()));
    EXPECT_OK(bootstrap(ctx.get(), s, fmax, kR, 11, again.data()));
    EXPECT_OK(bootstrap(ctx.get(), s, fmax, kR, 12, other.data()));
    CHECK(first[kR] == kPoison, "kp_lombscargle_bootstrap wrote past resamples");
    CHECK(first == again, "the same seed gave other maxima");
    CHECK(!std::equal(first.begin(), first.begin() + kR, other.begin()), "seeds 11 and 12 agree");
    for (std::size_t r = 0; r < kR; ++r)
        CHECK(first[r] >= 0.0 && first[r] < 0.5, "maximum " + std::to_string(first[r]));

    kp_chi2_options o = kp_chi2_options_default();
    o.nterms = 1;
    std::vector<double> one(kR + 1, kPoison), three(kR + 1, kPoison);
    EXPECT_OK(chi2_bootstrap(ctx.get(), &o, s, fmax, kR, 11, one.data()));
    o.nterms = 3;
    EXPECT_OK(chi2_bootstrap(ctx.get(), &o, s, fmax, kR, 11, three.data()));
    CHECK(one[kR] == kPoison && three[kR] == kPoison, "chi2 bootstrap wrote past resamples");
    for (std::size_t r = 0; r < kR; ++r) {
        CHECK(std::fabs(one[r] - first[r]) <= tol,
              "one harmonic " + std::to_string(one[r]) + ", single-term " + std::to_string(first[r]));
        CHECK(three[r] >= one[r] - tol && three[r] <= 1.0 + tol, "three harmonics below one");
    }

    std::fill(other.begin(), other.end(), kPoison);
    EXPECT_ERR(bootstrap(ctx.get(), s, fmax, kR, 11, nullptr), KP_ERROR_NULL_POINTER, "maxima");
    EXPECT_ERR(bootstrap(ctx.get(), s, -1.0, kR, 11, other.data()), KP_ERROR_INVALID_ARGUMENT,
               "fmax");
    o.nterms = 0;
    EXPECT_ERR(chi2_bootstrap(ctx.get(), &o, s, fmax, kR, 11, other.data()),
               KP_ERROR_INVALID_ARGUMENT, "nterms");
    for (double v : other) CHECK(v == kPoison, "a refused bootstrap call wrote its maxima");
    group_done();
}

// The multiband periodogram, both dtypes through one overload set: the
// series split over three bands (labels 7, 42 and 4e9, each band a level and
// a gain of its own), twice in a batch; with the defaults (flexible) and the
// fast method, powers in [0, 1] peaking at the signal's frequency; a batch
// whose offsets decrease, or with a NaN in its second series, fails naming
// the offsets or the series, out untouched. The batch's best peaks (three a
// series, apart): local maxima of its periodograms with their values, best
// first, the first the highest; refused for a k out of range or a NULL
// index, index and value untouched.
kp_status multiband_batch(const kp_context* c, const kp_multiband_options* o, const float* t,
                          const float* y, const std::uint32_t* bands,
                          const std::int64_t* offsets, std::size_t nseries, double f0, double df,
                          std::size_t nf, float* out) {
    return kp_lombscargle_multiband_batch_f32(c, o, t, y, nullptr, bands, offsets, nseries, f0,
                                              df, nf, out);
}
kp_status multiband_batch(const kp_context* c, const kp_multiband_options* o, const double* t,
                          const double* y, const std::uint32_t* bands,
                          const std::int64_t* offsets, std::size_t nseries, double f0, double df,
                          std::size_t nf, double* out) {
    return kp_lombscargle_multiband_batch_f64(c, o, t, y, nullptr, bands, offsets, nseries, f0,
                                              df, nf, out);
}
kp_status multiband_batch_peaks(const kp_context* c, const kp_multiband_options* o, const float* t,
                                const float* y, const std::uint32_t* bands,
                                const std::int64_t* offsets, std::size_t nseries, double f0,
                                double df, std::size_t nf, const kp_peak_options* peaks,
                                std::int64_t* index, double* value) {
    return kp_lombscargle_multiband_batch_peaks_f32(c, o, t, y, nullptr, bands, offsets, nseries,
                                                    f0, df, nf, peaks, index, value);
}
kp_status multiband_batch_peaks(const kp_context* c, const kp_multiband_options* o,
                                const double* t, const double* y, const std::uint32_t* bands,
                                const std::int64_t* offsets, std::size_t nseries, double f0,
                                double df, std::size_t nf, const kp_peak_options* peaks,
                                std::int64_t* index, double* value) {
    return kp_lombscargle_multiband_batch_peaks_f64(c, o, t, y, nullptr, bands, offsets, nseries,
                                                    f0, df, nf, peaks, index, value);
}

template <typename T>
void check_multiband(const Context& ctx, const char* name) {
    group = std::string("multiband batch ") + dtype<T>() + " (" + name + ")";
    const Series<T> s = make_series<T>();
    const std::uint32_t labels[3] = {7u, 42u, 4000000000u};
    const double level[3] = {0.0, 3.0, -1.5}, gain[3] = {1.0, 0.6, 1.4};
    std::vector<T> t, y;
    std::vector<std::uint32_t> bands;
    for (int copy = 0; copy < 2; ++copy) {
        for (std::size_t i = 0; i < s.t.size(); ++i) {
            t.push_back(s.t[i]);
            y.push_back(static_cast<T>(level[i % 3] + gain[i % 3] * s.y[i]));
            bands.push_back(labels[i % 3]);
        }
    }
    const std::int64_t n = static_cast<std::int64_t>(s.t.size());
    const std::vector<std::int64_t> offsets{0, n, 2 * n};
    const double two_pi = 6.283185307179586;
    const double f0 = 0.02 / two_pi, df = 0.009 / two_pi;
    kp_multiband_options o = kp_multiband_options_default();
    CHECK(o.method == KP_MULTIBAND_FLEXIBLE && std::isnan(o.reg_base) && o.reg_band == 1e-6,
          "astropy's defaults");
    std::vector<T> out(2 * kNf + 1, static_cast<T>(kPoison));
    for (std::uint32_t method : {KP_MULTIBAND_FLEXIBLE, KP_MULTIBAND_FAST}) {
        o.method = method;
        std::fill(out.begin(), out.end(), static_cast<T>(kPoison));
        EXPECT_OK(multiband_batch(ctx.get(), &o, t.data(), y.data(), bands.data(), offsets.data(),
                                  2, f0, df, kNf, out.data()));
        CHECK(out.back() == static_cast<T>(kPoison), "wrote past nseries x nf");
        for (std::size_t series = 0; series < 2; ++series) {
            const auto first = out.begin() + static_cast<std::ptrdiff_t>(series * kNf);
            for (auto v = first; v != first + kNf; ++v)
                CHECK(*v >= T(0) && *v <= T(1 + 1e-6), "multiband power out of [0, 1]");
            const auto k = static_cast<std::size_t>(std::max_element(first, first + kNf) - first);
            CHECK(k + 1 >= kPeak && k <= kPeak + 1,
                  "method " + std::to_string(method) + ": peak at index " + std::to_string(k));
        }
    }
    std::fill(out.begin(), out.end(), static_cast<T>(kPoison));
    const std::vector<std::int64_t> bad{0, n, n - 1};
    EXPECT_ERR(multiband_batch(ctx.get(), &o, t.data(), y.data(), bands.data(), bad.data(), 2, f0,
                               df, kNf, out.data()),
               KP_ERROR_INVALID_ARGUMENT, "offsets");
    std::vector<T> nan_y(y);
    nan_y[static_cast<std::size_t>(n) + 5] = std::numeric_limits<T>::quiet_NaN();
    EXPECT_ERR(multiband_batch(ctx.get(), &o, t.data(), nan_y.data(), bands.data(),
                               offsets.data(), 2, f0, df, kNf, out.data()),
               KP_ERROR_INVALID_ARGUMENT, "series");
    EXPECT_ERR(multiband_batch(ctx.get(), &o, t.data(), y.data(), nullptr, offsets.data(), 2, f0,
                               df, kNf, out.data()),
               KP_ERROR_NULL_POINTER, "bands");
    for (T v : out) CHECK(v == static_cast<T>(kPoison), "a failed multiband call wrote its output");

    // The best peaks of the same batch (the defaults: flexible).
    o = kp_multiband_options_default();
    constexpr std::size_t k = 3;
    const double separation = 0.05 / two_pi;
    kp_peak_options three = kp_peak_options_default();
    three.k = k;
    three.separation = separation;
    std::vector<std::int64_t> index(2 * k + 1, -4242);
    std::vector<double> value(2 * k + 1, kPoison);
    EXPECT_OK(multiband_batch(ctx.get(), &o, t.data(), y.data(), bands.data(), offsets.data(), 2,
                              f0, df, kNf, out.data()));
    EXPECT_OK(multiband_batch_peaks(ctx.get(), &o, t.data(), y.data(), bands.data(),
                                    offsets.data(), 2, f0, df, kNf, &three, index.data(),
                                    value.data()));
    CHECK(index[2 * k] == -4242 && value[2 * k] == kPoison, "peaks wrote past nseries x k");
    for (std::size_t series = 0; series < 2; ++series) {
        const T* row = out.data() + series * kNf;
        const std::int64_t* i = index.data() + series * k;
        const double* v = value.data() + series * k;
        const std::string which = "series " + std::to_string(series) + ": ";
        CHECK(i[0] == std::max_element(row, row + kNf) - row, which + "best peak not the highest value");
        for (std::size_t j = 0; j < k; ++j) {
            CHECK(i[j] >= 0 && i[j] < static_cast<std::int64_t>(kNf),
                  which + "peak " + std::to_string(j) + " at " + std::to_string(i[j]));
            const std::size_t at = static_cast<std::size_t>(i[j]);
            CHECK(v[j] == static_cast<double>(row[at]), which + "a peak's value is not the row's");
            CHECK((at == 0 || row[at - 1] < row[at]) && (at + 1 == kNf || row[at + 1] <= row[at]),
                  which + "peak " + std::to_string(j) + " is no maximum");
            CHECK(j == 0 || v[j] <= v[j - 1], which + "a peak beats the one before");
            for (std::size_t m = 0; m < j; ++m)
                CHECK(std::abs(static_cast<double>(i[j] - i[m])) * df >= separation - 1e-12,
                      which + "two peaks closer than the separation");
        }
    }
    std::fill(index.begin(), index.end(), -4242);
    std::fill(value.begin(), value.end(), kPoison);
    kp_peak_options many = three;
    many.k = KP_MAX_PEAKS + 1;
    EXPECT_ERR(multiband_batch_peaks(ctx.get(), &o, t.data(), y.data(), bands.data(),
                                     offsets.data(), 2, f0, df, kNf, &many, index.data(),
                                     value.data()),
               KP_ERROR_INVALID_ARGUMENT, "k");
    EXPECT_ERR(multiband_batch_peaks(ctx.get(), &o, t.data(), y.data(), bands.data(),
                                     offsets.data(), 2, f0, df, kNf, &three, nullptr,
                                     value.data()),
               KP_ERROR_NULL_POINTER, "index");
    EXPECT_ERR(multiband_batch_peaks(ctx.get(), &o, t.data(), nan_y.data(), bands.data(),
                                     offsets.data(), 2, f0, df, kNf, &three, index.data(),
                                     value.data()),
               KP_ERROR_INVALID_ARGUMENT, "series");
    for (std::size_t j = 0; j < index.size(); ++j)
        CHECK(index[j] == -4242 && value[j] == kPoison, "a refused peaks call wrote index or value");
    group_done();
}

// A batch's best peaks, both dtypes through one template: the series and
// its first 150 samples, each on a grid of its own (normalised, weighted,
// floating mean); kp_lombscargle_batch_top_peaks gives three peaks a
// series, 0.05 apart in angular frequency: local maxima of what
// kp_lombscargle_batch gives, with its values, best first, the first the
// highest (the planted frequency for the whole series); refused for an
// amplitude periodogram and a k out of range, index and value untouched.
template <typename T>
void check_top_peaks(const Context& ctx, const char* name) {
    group = std::string("batch top peaks ") + dtype<T>() + " (" + name + ")";
    const Series<T> s = make_series<T>();
    std::vector<T> t(s.t), y(s.y), w(s.w);
    t.insert(t.end(), s.t.begin(), s.t.begin() + 150);
    y.insert(y.end(), s.y.begin(), s.y.begin() + 150);
    w.insert(w.end(), s.w.begin(), s.w.begin() + 150);
    const std::int64_t n = static_cast<std::int64_t>(s.t.size());
    const std::vector<std::int64_t> offsets{0, n, n + 150};
    const double f0[2] = {0.02, 0.025}, df[2] = {0.009, 0.0085};
    const kp_lombscargle_options o = options(KP_NORMALIZE_NORMALIZE, true);
    constexpr std::size_t k = 3;
    constexpr double separation = 0.05;
    kp_peak_options three = kp_peak_options_default();
    three.k = k;
    three.separation = separation;
    std::vector<T> all(2 * kNf);
    std::vector<std::int64_t> index(2 * k + 1, -4242);
    std::vector<double> value(2 * k + 1, kPoison);
    // The two entry points of the dtype, on this batch.
    const auto batch = [&] {
        if constexpr (std::is_same_v<T, float>)
            return kp_lombscargle_batch_f32(ctx.get(), t.data(), y.data(), w.data(), offsets.data(), 2, f0, df, 2, kNf, &o, all.data(), all.size());
        else
            return kp_lombscargle_batch_f64(ctx.get(), t.data(), y.data(), w.data(), offsets.data(), 2, f0, df, 2, kNf, &o, all.data(), all.size());
    };
    const auto top = [&](const kp_lombscargle_options* opts, const kp_peak_options* peaks) {
        if constexpr (std::is_same_v<T, float>)
            return kp_lombscargle_batch_top_peaks_f32(ctx.get(), t.data(), y.data(), w.data(), offsets.data(), 2, f0, df, 2, kNf, opts, peaks, index.data(), value.data());
        else
            return kp_lombscargle_batch_top_peaks_f64(ctx.get(), t.data(), y.data(), w.data(), offsets.data(), 2, f0, df, 2, kNf, opts, peaks, index.data(), value.data());
    };
    EXPECT_OK(batch());
    EXPECT_OK(top(&o, &three));
    CHECK(index[2 * k] == -4242 && value[2 * k] == kPoison, "wrote past nseries x k");
    for (std::size_t series = 0; series < 2; ++series) {
        const T* row = all.data() + series * kNf;
        const std::int64_t* i = index.data() + series * k;
        const double* v = value.data() + series * k;
        const std::string which = "series " + std::to_string(series) + ": ";
        const auto best = std::max_element(row, row + kNf) - row;
        CHECK(i[0] == best, which + "best peak " + std::to_string(i[0]) + ", highest value at " +
                                std::to_string(best));
        if (series == 0)
            CHECK(i[0] + 1 >= static_cast<std::int64_t>(kPeak) &&
                      i[0] <= static_cast<std::int64_t>(kPeak) + 1,
                  which + "best peak away from the planted frequency");
        for (std::size_t j = 0; j < k; ++j) {
            CHECK(i[j] >= 0 && i[j] < static_cast<std::int64_t>(kNf),
                  which + "peak " + std::to_string(j) + " at " + std::to_string(i[j]));
            const std::size_t at = static_cast<std::size_t>(i[j]);
            CHECK(v[j] == static_cast<double>(row[at]), which + "a peak's value is not the row's");
            CHECK((at == 0 || row[at - 1] < row[at]) && (at + 1 == kNf || row[at + 1] <= row[at]),
                  which + "peak " + std::to_string(j) + " is no maximum");
            CHECK(j == 0 || v[j] <= v[j - 1], which + "a peak beats the one before");
            for (std::size_t m = 0; m < j; ++m)
                CHECK(std::abs(static_cast<double>(i[j] - i[m])) * df[series] >= separation - 1e-12,
                      which + "two peaks closer than the separation");
        }
    }
    std::fill(index.begin(), index.end(), -4242);
    std::fill(value.begin(), value.end(), kPoison);
    const kp_lombscargle_options amp = options(KP_NORMALIZE_AMPLITUDE, true);
    kp_peak_options many = kp_peak_options_default();
    many.k = KP_MAX_PEAKS + 1;
    EXPECT_ERR(top(&amp, &three), KP_ERROR_INVALID_ARGUMENT, "amplitude");
    EXPECT_ERR(top(&o, &many), KP_ERROR_INVALID_ARGUMENT, "k");
    for (std::size_t j = 0; j < index.size(); ++j)
        CHECK(index[j] == -4242 && value[j] == kPoison, "a refused call wrote index or value");
    group_done();
}

template <typename T>
void check_peaks(const Context& ctx, const char* name) {
    group = std::string("peaks ") + dtype<T>() + " (" + name + ")";
    const Series<T> s = make_series<T>();
    const auto power = periodogram(ctx.get(), s, kp_lombscargle_options_default(), false);
    CHECK(power.size() == kNf, "power has " + std::to_string(power.size()) + " values");
    const auto k = static_cast<std::size_t>(
        std::max_element(power.begin(), power.end()) - power.begin());
    CHECK(k + 1 >= kPeak && k <= kPeak + 1,
          "peak at index " + std::to_string(k) + ", expected " + std::to_string(kPeak));
    const double expected = kAmplitude * kAmplitude * kNx / 4.0;
    CHECK(power[k] > 0.7 * expected && power[k] < 1.3 * expected,
          "peak power " + std::to_string(power[k]) + ", expected ~" + std::to_string(expected));

    // Weighted and normalized: in [0, 1], same peak.
    const auto norm = periodogram(ctx.get(), s, options(KP_NORMALIZE_NORMALIZE, true), true);
    for (T v : norm) CHECK(v >= T(-1e-6) && v <= T(1 + 1e-6), "normalized value out of [0, 1]");
    const auto kn = static_cast<std::size_t>(
        std::max_element(norm.begin(), norm.end()) - norm.begin());
    CHECK(kn + 1 >= kPeak && kn <= kPeak + 1, "normalized peak at " + std::to_string(kn));
    group_done();
}

template <typename T>
void check_amplitude(const Context& ctx, const char* name) {
    group = std::string("amplitude ") + dtype<T>() + " (" + name + ")";
    const Series<T> s = make_series<T>();
    const auto o = options(KP_NORMALIZE_AMPLITUDE, true);
    CHECK(kp_lombscargle_output_len(kNf, &o) == 2 * kNf, "output length of amplitude mode");
    const std::vector<T> amp = periodogram(ctx.get(), s, o, true);
    CHECK(amp.size() == 2 * kNf, "amplitude has " + std::to_string(amp.size()) + " values");
    for (T v : amp)
        CHECK(v != static_cast<T>(kPoison) && std::isfinite(v), "a value was not written");
    // Interleaved (re, im) pairs are laid out as std::complex<T> ([complex.numbers.general]/4).
    const auto* z = reinterpret_cast<const std::complex<T>*>(amp.data());
    const double modulus = std::abs(z[kPeak]);
    CHECK(std::abs(modulus - kAmplitude) < 0.2,
          "|amplitude| at the peak is " + std::to_string(modulus));
    std::size_t strongest = 0;
    for (std::size_t k = 1; k < kNf; ++k)
        if (std::norm(z[k]) > std::norm(z[strongest])) strongest = k;
    CHECK(strongest + 1 >= kPeak && strongest <= kPeak + 1,
          "largest |amplitude| at " + std::to_string(strongest));
    group_done();
}

void check_backends_agree(const Context& cpu, const Context& autoctx, bool auto_is_gpu) {
    group = auto_is_gpu ? "cpu vs auto (gpu) agree" : "cpu vs auto (cpu) agree";
    const Series<double> s = make_series<double>();
    const Series<float> sf = make_series<float>();
    const kp_lombscargle_options modes[] = {
        options(KP_NORMALIZE_POWER), options(KP_NORMALIZE_NORMALIZE, true),
        options(KP_NORMALIZE_AMPLITUDE, true, true), options(KP_NORMALIZE_POWER, false, true)};
    for (const auto& o : modes) {
        for (bool weighted : {false, true}) {
            const double e = scaled_diff(periodogram(autoctx.get(), s, o, weighted),
                                         periodogram(cpu.get(), s, o, weighted));
            CHECK(e <= 1e-9, "f64 scaled difference " + std::to_string(e));
            const double ef = scaled_diff(periodogram(autoctx.get(), sf, o, weighted),
                                          periodogram(cpu.get(), sf, o, weighted));
            CHECK(ef <= 1e-2, "f32 scaled difference " + std::to_string(ef));
        }
    }
    group_done();
}

template <typename T>
void check_errors(const Context& context, const char* name) {
    group = std::string("error paths ") + dtype<T>() + " (" + name + ")";
    const kp_context* ctx = context.get();
    const Series<T> s = make_series<T>();
    const std::size_t nx = s.t.size(), nf = s.f.size();
    std::vector<T> out(2 * nf + 1, static_cast<T>(kPoison));
    auto untouched = [&out] {
        return std::all_of(out.begin(), out.end(), [](T v) { return v == static_cast<T>(kPoison); });
    };
    const T *t = s.t.data(), *y = s.y.data(), *w = s.w.data(), *f = s.f.data();
    T* o = out.data();
    const auto amp = options(KP_NORMALIZE_AMPLITUDE);
    const auto seven = options(7);
    auto with = [](std::vector<T> v, std::size_t i, T value) {
        v.at(i) = value;
        return v;
    };
    const auto neg_f = with(s.f, nf / 3, T(-0.25));
    const auto nan_y = with(s.y, 5, std::numeric_limits<T>::quiet_NaN());
    const auto inf_t = with(s.t, 0, std::numeric_limits<T>::infinity());
    const auto neg_w = with(s.w, nx - 1, T(-1));
    const auto nan_w = with(s.w, 2, std::numeric_limits<T>::quiet_NaN());
    const auto zero_w = std::vector<T>(nx, T(0));

    struct Case {
        const char* what;
        std::function<kp_status()> call;
        kp_status want;
        const char* arg;  // the argument the message must name, if any
    };
    const Case cases[] = {
        {"NULL ctx", [&] { return lombscargle(nullptr, t, y, nullptr, nx, f, nf, nullptr, o, nf); },
         KP_ERROR_NULL_POINTER, "ctx"},
        {"NULL t", [&] { return lombscargle(ctx, nullptr, y, nullptr, nx, f, nf, nullptr, o, nf); },
         KP_ERROR_NULL_POINTER, "t"},
        {"NULL y", [&] { return lombscargle(ctx, t, nullptr, nullptr, nx, f, nf, nullptr, o, nf); },
         KP_ERROR_NULL_POINTER, "y"},
        {"NULL freqs",
         [&] { return lombscargle(ctx, t, y, nullptr, nx, nullptr, nf, nullptr, o, nf); },
         KP_ERROR_NULL_POINTER, "freqs"},
        {"NULL out",
         [&] { return lombscargle(ctx, t, y, nullptr, nx, f, nf, nullptr, static_cast<T*>(nullptr), nf); },
         KP_ERROR_NULL_POINTER, "out"},
        {"out_len nf - 1",
         [&] { return lombscargle(ctx, t, y, nullptr, nx, f, nf, nullptr, o, nf - 1); },
         KP_ERROR_INVALID_ARGUMENT, "out_len"},
        {"out_len nf + 1",
         [&] { return lombscargle(ctx, t, y, nullptr, nx, f, nf, nullptr, o, nf + 1); },
         KP_ERROR_INVALID_ARGUMENT, "out_len"},
        {"amplitude, out_len nf",
         [&] { return lombscargle(ctx, t, y, nullptr, nx, f, nf, &amp, o, nf); },
         KP_ERROR_INVALID_ARGUMENT, "out_len"},
        {"negative frequency",
         [&] { return lombscargle(ctx, t, y, nullptr, nx, neg_f.data(), nf, nullptr, o, nf); },
         KP_ERROR_INVALID_ARGUMENT, "freqs"},
        {"NaN in y",
         [&] { return lombscargle(ctx, t, nan_y.data(), nullptr, nx, f, nf, nullptr, o, nf); },
         KP_ERROR_INVALID_ARGUMENT, "y"},
        {"Inf in t",
         [&] { return lombscargle(ctx, inf_t.data(), y, nullptr, nx, f, nf, nullptr, o, nf); },
         KP_ERROR_INVALID_ARGUMENT, "t"},
        {"negative weight",
         [&] { return lombscargle(ctx, t, y, neg_w.data(), nx, f, nf, nullptr, o, nf); },
         KP_ERROR_INVALID_ARGUMENT, "weights"},
        {"NaN weight",
         [&] { return lombscargle(ctx, t, y, nan_w.data(), nx, f, nf, nullptr, o, nf); },
         KP_ERROR_INVALID_ARGUMENT, "weights"},
        {"weights sum to zero",
         [&] { return lombscargle(ctx, t, y, zero_w.data(), nx, f, nf, nullptr, o, nf); },
         KP_ERROR_INVALID_ARGUMENT, "weights"},
        {"normalize 7", [&] { return lombscargle(ctx, t, y, w, nx, f, nf, &seven, o, nf); },
         KP_ERROR_INVALID_ARGUMENT, "normalize"},
        {"nx 0", [&] { return lombscargle(ctx, t, y, nullptr, 0, f, nf, nullptr, o, nf); },
         KP_ERROR_INVALID_ARGUMENT, nullptr},
        {"nf 0", [&] { return lombscargle(ctx, t, y, nullptr, nx, f, 0, nullptr, o, 0); },
         KP_ERROR_INVALID_ARGUMENT, nullptr},
    };
    for (const Case& c : cases) {
        expect_error(__LINE__, c.call(), c.want, c.arg, c.what);
        CHECK(untouched(), std::string(c.what) + ": out was written by a failing call");
    }

    // And a success clears the message.
    EXPECT_OK(lombscargle(ctx, t, y, w, nx, f, nf, nullptr, o, nf));
    CHECK(last_error().empty(), "after a success the message is \"" + last_error() + "\"");
    CHECK(out[nf] == static_cast<T>(kPoison), "wrote past out_len");
    group_done();
}

void check_cpu_context_has_no_device(const Context& cpu) {
    group = "device functions on a CPU context";
    const std::uint64_t fake = 0x20000;  // never dereferenced: the context is checked first
    EXPECT_ERR(lombscargle_device<double>(cpu.get(), fake, fake, 0, kNx, fake, kNf, nullptr, fake, 0),
               KP_ERROR_NO_GPU, nullptr);
    EXPECT_ERR(lombscargle_device<float>(cpu.get(), fake, fake, 0, kNx, fake, kNf, nullptr, fake, 0),
               KP_ERROR_NO_GPU, nullptr);
    std::uint64_t dptr = 5;
    EXPECT_ERR(kp_device_alloc(cpu.get(), 16, &dptr), KP_ERROR_NO_GPU, nullptr);
    CHECK(dptr == 5, "a failed kp_device_alloc wrote *dptr");
    EXPECT_ERR(kp_stream_synchronize(cpu.get(), 0), KP_ERROR_NO_GPU, nullptr);
    group_done();
}

template <typename T>
void check_device_path(const Context& gpu) {
    group = std::string("device pointers ") + dtype<T>() + " (gpu, stream 0)";
    const kp_context* ctx = gpu.get();
    const Series<T> s = make_series<T>();
    const DeviceBuffer t(ctx, s.t), y(ctx, s.y), w(ctx, s.w), f(ctx, s.f);
    const double tol = std::is_same_v<T, float> ? 1e-6 : 1e-12;
    for (const auto& o : {options(KP_NORMALIZE_POWER), options(KP_NORMALIZE_NORMALIZE, true),
                          options(KP_NORMALIZE_AMPLITUDE, true)}) {
        for (bool weighted : {false, true}) {
            const std::size_t len = kp_lombscargle_output_len(kNf, &o);
            const DeviceBuffer out(ctx, len * sizeof(T));
            EXPECT_OK(lombscargle_device<T>(ctx, t.get(), y.get(), weighted ? w.get() : 0, kNx,
                                            f.get(), kNf, &o, out.get(), 0));
            EXPECT_OK(kp_stream_synchronize(ctx, 0));
            const std::vector<T> dev = out.download<T>();
            const std::vector<T> host = periodogram(ctx, s, o, weighted);
            const double e = scaled_diff(dev, host);
            CHECK(e <= tol, "device vs host pointers (normalize " + std::to_string(o.normalize) +
                                ", weighted " + std::to_string(weighted) +
                                "): scaled difference " + std::to_string(e));
        }
    }
    const DeviceBuffer out(ctx, kNf * sizeof(T));
    EXPECT_ERR(lombscargle_device<T>(ctx, 0, y.get(), 0, kNx, f.get(), kNf, nullptr, out.get(), 0),
               KP_ERROR_NULL_POINTER, "t");
    EXPECT_ERR(lombscargle_device<T>(ctx, t.get(), y.get(), 0, kNx, f.get(), kNf, nullptr, 0, 0),
               KP_ERROR_NULL_POINTER, "out");
    const auto seven = options(7);
    EXPECT_ERR(lombscargle_device<T>(ctx, t.get(), y.get(), 0, kNx, f.get(), kNf, &seven,
                                     out.get(), 0),
               KP_ERROR_INVALID_ARGUMENT, nullptr);
    group_done();
}

void run() {
    check_status_strings();
    const Context cpu = make_context(KP_BACKEND_CPU);
    CHECK(!is_gpu(cpu), "a CPU context reports is_gpu = 1");
    const Context autoctx = make_context(KP_BACKEND_AUTO);
    const bool auto_is_gpu = is_gpu(autoctx);
    const char* auto_name = auto_is_gpu ? "auto = gpu" : "auto = cpu";
    check_contexts(auto_is_gpu);
    std::printf("     AUTO context runs on the %s\n", auto_is_gpu ? "GPU" : "CPU");

    check_peaks<double>(cpu, "cpu");
    check_peaks<float>(cpu, "cpu");
    check_peaks<double>(autoctx, auto_name);
    check_peaks<float>(autoctx, auto_name);
    check_amplitude<double>(cpu, "cpu");
    check_amplitude<float>(cpu, "cpu");
    check_amplitude<double>(autoctx, auto_name);
    check_amplitude<float>(autoctx, auto_name);
    check_chi2<double>(cpu, "cpu");
    check_chi2<float>(cpu, "cpu");
    check_chi2<double>(autoctx, auto_name);
    check_chi2<float>(autoctx, auto_name);
    check_bootstrap<double>(cpu, "cpu");
    check_bootstrap<float>(cpu, "cpu");
    check_bootstrap<double>(autoctx, auto_name);
    check_bootstrap<float>(autoctx, auto_name);
    check_multiband<double>(cpu, "cpu");
    check_multiband<float>(cpu, "cpu");
    check_multiband<double>(autoctx, auto_name);
    check_multiband<float>(autoctx, auto_name);
    check_backends_agree(cpu, autoctx, auto_is_gpu);
    check_top_peaks<double>(cpu, "cpu");
    check_top_peaks<float>(cpu, "cpu");
    check_top_peaks<double>(autoctx, auto_name);
    check_top_peaks<float>(autoctx, auto_name);
    check_errors<double>(cpu, "cpu");
    check_errors<float>(cpu, "cpu");
    check_errors<double>(autoctx, auto_name);
    check_errors<float>(autoctx, auto_name);
    check_cpu_context_has_no_device(cpu);
    if (auto_is_gpu) {
        check_device_path<double>(autoctx);
        check_device_path<float>(autoctx);
    } else {
        std::printf("     no GPU: device-pointer path checked on the CPU context only\n");
    }
    std::printf("all checks passed (C++, %s)\n", auto_is_gpu ? "GPU" : "CPU only");
}

}  // namespace

int main() {
    try {
        run();
        return 0;
    } catch (const CheckFailure& e) {
        std::fprintf(stderr, "FAIL %s\n", e.what());
    } catch (const std::exception& e) {
        std::fprintf(stderr, "FAIL [%s] unexpected exception: %s\n", group.c_str(), e.what());
    }
    return 1;
}
