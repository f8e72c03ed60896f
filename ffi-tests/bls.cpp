// The BLS transit search's C ABI from C++17: one templated code path over
// kp_bls_f32/_f64 and kp_bls_batch_f32/_f64 (overloads), std::vector
// buffers, RAII around the contexts. A batch of three light curves, each
// with a transit of its own period, depth and duration planted, plus a
// curve of one sample (no box can be fitted: power -inf, the rest NaN),
// searched with the SNR objective and oversample 5: each curve's highest
// power is at its planted period; each series of the batch equals its own
// single-series call bit for bit; the best three periods of each curve
// (kp_bls_batch_peaks) start at its highest power, with the batch's
// results there, and the one-sample curve has none (index -1, every field
// NaN); the CPU and AUTO contexts agree bit for bit; refused calls leave
// every output as it was. Built and run by
// tests/ffi_programs.rs; exit status 0 when every check passes. With
// KERNPACK_REQUIRE_GPU=1 a missing GPU fails.
#include "checks.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <limits>
#include <type_traits>
#include <vector>

namespace {

using checks::check;

constexpr double kPoison = -4242.0;
const char* const kFields[7] = {"power", "depth", "depth_err", "duration",
                                "transit_time", "depth_snr", "log_likelihood"};

// The seven outputs of `len` values, poisoned, one value longer each.
template <typename T>
struct Results {
    std::array<std::vector<T>, 7> f;
    std::size_t len;
    explicit Results(std::size_t n) : len(n)
    {
        for (auto& v : f) v.assign(n + 1, static_cast<T>(kPoison));
    }
    bool untouched() const
    {
        for (const auto& v : f)
            for (T x : v)
                if (x != static_cast<T>(kPoison)) return false;
        return true;
    }
    bool tails_untouched() const
    {
        for (const auto& v : f)
            if (v[len] != static_cast<T>(kPoison)) return false;
        return true;
    }
};

// One overload set per entry point, so the code below is one template.
kp_status bls(const kp_context* c, const kp_bls_options* o, const float* t, const float* y,
              const float* dy, std::size_t n, const float* p, std::size_t np, const float* d,
              std::size_t nd, std::array<float*, 7> r)
{
    return kp_bls_f32(c, o, t, y, dy, n, p, np, d, nd, r[0], r[1], r[2], r[3], r[4], r[5], r[6]);
}
kp_status bls(const kp_context* c, const kp_bls_options* o, const double* t, const double* y,
              const double* dy, std::size_t n, const double* p, std::size_t np, const double* d,
              std::size_t nd, std::array<double*, 7> r)
{
    return kp_bls_f64(c, o, t, y, dy, n, p, np, d, nd, r[0], r[1], r[2], r[3], r[4], r[5], r[6]);
}
kp_status bls_batch(const kp_context* c, const kp_bls_options* o, const float* t, const float* y,
                    const float* dy, const std::int64_t* off, std::size_t ns, const float* p,
                    std::size_t np, const float* d, std::size_t nd, std::array<float*, 7> r)
{
    return kp_bls_batch_f32(c, o, t, y, dy, off, ns, p, np, d, nd, r[0], r[1], r[2], r[3], r[4],
                            r[5], r[6]);
}
kp_status bls_batch(const kp_context* c, const kp_bls_options* o, const double* t,
                    const double* y, const double* dy, const std::int64_t* off, std::size_t ns,
                    const double* p, std::size_t np, const double* d, std::size_t nd,
                    std::array<double*, 7> r)
{
    return kp_bls_batch_f64(c, o, t, y, dy, off, ns, p, np, d, nd, r[0], r[1], r[2], r[3], r[4],
                            r[5], r[6]);
}

template <typename T>
kp_status bls_batch_peaks(const kp_context* c, const kp_bls_options* o, const T* t, const T* y,
                          const T* dy, const std::int64_t* off, std::size_t ns, const T* p,
                          std::size_t np, const T* d, std::size_t nd, const kp_peak_options* k,
                          std::int64_t* i, std::array<T*, 7> r)
{
    if constexpr (std::is_same_v<T, float>)
        return kp_bls_batch_peaks_f32(c, o, t, y, dy, off, ns, p, np, d, nd, k, i, r[0], r[1], r[2], r[3], r[4], r[5], r[6]);
    else
        return kp_bls_batch_peaks_f64(c, o, t, y, dy, off, ns, p, np, d, nd, k, i, r[0], r[1], r[2], r[3], r[4], r[5], r[6]);
}

template <typename T>
std::array<T*, 7> pointers(Results<T>& r)
{
    std::array<T*, 7> p{};
    for (std::size_t k = 0; k < 7; ++k) p[k] = r.f[k].data();
    return p;
}

template <typename T>
const char* dtype()
{
    return std::is_same_v<T, float> ? "f32" : "f64";
}

// A planted transit.
struct Planted {
    std::size_t n;
    double period, duration, depth;
};
// Durations are whole phase bins (min(durations) / oversample = 0.02).
const Planted kPlanted[3] = {{900, 3.1, 0.16, 0.02}, {1100, 4.45, 0.24, 0.008}, {700, 2.2, 0.1, 0.03}};

// The curves (the three planted ones and one of one sample), the periods
// (2 to 5 in steps of 0.005; every planted period is one of them) and the
// durations (every planted duration is one of them).
template <typename T>
struct Data {
    std::vector<T> t, y, dy, periods, durations{T(0.1), T(0.16), T(0.24)};
    std::vector<std::int64_t> offsets{0};
};

template <typename T>
Data<T> make_data()
{
    checks::Lcg uniform(0x9e3779b97f4a7c15ULL);
    Data<T> d;
    for (int k = 0; k <= 600; ++k) d.periods.push_back(static_cast<T>(2.0 + 0.005 * k));
    for (const Planted& p : kPlanted) {
        for (std::size_t i = 0; i < p.n; ++i) {
            const double t = 100.0 + 60.0 * uniform();
            const double phase = std::fmod(t - 100.0, p.period);
            d.t.push_back(static_cast<T>(t));
            d.y.push_back(static_cast<T>(5.0 + 0.006 * (uniform() - 0.5) -
                                         (phase < p.duration ? p.depth : 0.0)));
            d.dy.push_back(static_cast<T>(0.003 + 0.002 * uniform()));
        }
        d.offsets.push_back(static_cast<std::int64_t>(d.t.size()));
    }
    d.t.push_back(T(130));
    d.y.push_back(T(5));
    d.dy.push_back(T(0.004));
    d.offsets.push_back(static_cast<std::int64_t>(d.t.size()));
    return d;
}

kp_bls_options snr5()
{
    kp_bls_options o = kp_bls_options_default();
    o.objective = KP_BLS_SNR;
    o.oversample = 5;
    return o;
}

// The best three periods of every curve of `d` (0.1 apart in period)
// against `all`, the batch's results at every period: the first the
// curve's first highest power, the others local maxima, no better, apart;
// every field the batch's at each; the one-sample curve (the fourth) has
// none: index -1 and NaN in every field, power too.
template <typename T>
void check_peaks(const kp_context* ctx, const Data<T>& d, const Results<T>& all,
                 const std::string& what)
{
    const std::size_t np = d.periods.size(), nd = d.durations.size(), ns = d.offsets.size() - 1;
    const std::size_t k = 3;
    const kp_bls_options o = snr5();
    kp_peak_options three = kp_peak_options_default();
    three.k = k;
    three.separation = 0.1;
    Results<T> r(ns * k);
    std::vector<std::int64_t> index(ns * k + 1, -4242);
    check(bls_batch_peaks(ctx, &o, d.t.data(), d.y.data(), d.dy.data(), d.offsets.data(), ns,
                          d.periods.data(), np, d.durations.data(), nd, &three, index.data(),
                          pointers(r)) == KP_OK,
          "kp_bls_batch_peaks " + what);
    check(r.tails_untouched() && index[ns * k] == -4242,
          "the best periods wrote past nseries x k " + what);
    for (std::size_t s = 0; s < ns; ++s) {
        const std::string series = "series " + std::to_string(s) + " ";
        const std::int64_t* i = index.data() + s * k;
        if (s == 3) {
            for (std::size_t j = 0; j < k; ++j) {
                check(i[j] == -1, series + "has no box, yet a best period " + what);
                for (std::size_t f = 0; f < 7; ++f)
                    check(std::isnan(r.f[f][s * k + j]),
                          series + "padding: " + kFields[f] + " is not NaN " + what);
            }
            continue;
        }
        const T* power = all.f[0].data() + s * np;
        const std::int64_t b = std::max_element(power, power + np) - power;
        check(i[0] == b, series + "best period " + std::to_string(i[0]) + ", highest power " +
                             std::to_string(b) + " " + what);
        for (std::size_t j = 0; j < k; ++j) {
            check(i[j] >= 0 && i[j] < static_cast<std::int64_t>(np),
                  series + "period " + std::to_string(j) + " " + what);
            const std::size_t at = static_cast<std::size_t>(i[j]);
            for (std::size_t f = 0; f < 7; ++f)
                check(std::memcmp(&r.f[f][s * k + j], &all.f[f][s * np + at], sizeof(T)) == 0,
                      series + "period " + std::to_string(j) + ": " + kFields[f] +
                          " differs from the batch's " + what);
            check((at == 0 || power[at - 1] < power[at]) &&
                      (at + 1 == np || power[at + 1] <= power[at]),
                  series + "period " + std::to_string(j) + " is no maximum " + what);
            check(j == 0 || r.f[0][s * k + j] <= r.f[0][s * k + j - 1],
                  series + "period " + std::to_string(j) + " beats the one before " + what);
            for (std::size_t m = 0; m < j; ++m) {
                const double apart = std::abs(static_cast<double>(d.periods[at]) -
                                              static_cast<double>(d.periods[i[m]]));
                check(apart >= static_cast<double>(static_cast<T>(0.1)) - 1e-6,
                      series + "two best periods closer than 0.1 " + what);
            }
        }
    }
}

// The batch on `ctx`: the planted periods found, each series equal to its
// single-series call, the one-sample series power -inf and NaN elsewhere;
// its best periods.
template <typename T>
Results<T> check_batch(const kp_context* ctx, const std::string& name)
{
    const Data<T> d = make_data<T>();
    const std::size_t np = d.periods.size(), nd = d.durations.size(), ns = d.offsets.size() - 1;
    const kp_bls_options o = snr5();
    const std::string what = std::string(dtype<T>()) + " (" + name + ")";
    Results<T> all(ns * np);
    check(bls_batch(ctx, &o, d.t.data(), d.y.data(), d.dy.data(), d.offsets.data(), ns,
                    d.periods.data(), np, d.durations.data(), nd, pointers(all)) == KP_OK,
          "kp_bls_batch " + what);
    check(all.tails_untouched(), "the batch wrote past nseries x nperiods " + what);
    for (std::size_t s = 0; s < ns; ++s) {
        const std::size_t from = static_cast<std::size_t>(d.offsets[s]);
        const std::size_t n = static_cast<std::size_t>(d.offsets[s + 1]) - from;
        Results<T> one(np);
        check(bls(ctx, &o, d.t.data() + from, d.y.data() + from, d.dy.data() + from, n,
                  d.periods.data(), np, d.durations.data(), nd, pointers(one)) == KP_OK,
              "kp_bls series " + std::to_string(s) + " " + what);
        check(one.tails_untouched(), "kp_bls wrote past nperiods " + what);
        for (std::size_t k = 0; k < 7; ++k)
            check(std::memcmp(one.f[k].data(), all.f[k].data() + s * np, np * sizeof(T)) == 0,
                  "series " + std::to_string(s) + " of the batch differs from its own call in " +
                      kFields[k] + " " + what);
        const T* power = all.f[0].data() + s * np;
        if (s == 3) {  // one sample: nothing is ever out of transit
            for (std::size_t i = 0; i < np; ++i) {
                check(std::isinf(power[i]) && power[i] < 0, "no box: power is -inf " + what);
                for (std::size_t k = 1; k < 7; ++k)
                    check(std::isnan(all.f[k][s * np + i]),
                          std::string("no box: ") + kFields[k] + " is NaN " + what);
            }
            continue;
        }
        const std::size_t b = static_cast<std::size_t>(std::max_element(power, power + np) - power);
        const Planted& p = kPlanted[s];
        const double found = static_cast<double>(d.periods[b]);
        check(std::abs(found - p.period) < 0.006,
              "series " + std::to_string(s) + ": best period " + std::to_string(found) +
                  ", planted " + std::to_string(p.period) + " " + what);
        const double duration = static_cast<double>(all.f[3][s * np + b]);
        check(std::abs(duration - p.duration) < 1e-4,
              "series " + std::to_string(s) + ": duration " + std::to_string(duration) + " " + what);
        const double depth = static_cast<double>(all.f[1][s * np + b]);
        check(std::abs(depth - p.depth) < 0.2 * p.depth,
              "series " + std::to_string(s) + ": depth " + std::to_string(depth) + " " + what);
        // SNR objective: the power is depth_snr.
        check(all.f[0][s * np + b] == all.f[5][s * np + b], "snr power is depth_snr " + what);
    }
    check_peaks(ctx, d, all, what);
    std::printf("ok   batch, single series and best periods %s\n", what.c_str());
    return all;
}

// Refused calls: the status, a message, every output untouched.
template <typename T>
void check_errors(const kp_context* ctx, const std::string& name)
{
    const Data<T> d = make_data<T>();
    const std::size_t np = d.periods.size(), nd = d.durations.size(), n = d.t.size();
    const std::string what = std::string(dtype<T>()) + " (" + name + ")";
    Results<T> r(np);
    const auto out = pointers(r);
    const kp_bls_options o = snr5();
    std::vector<T> nan_t(d.t), negative_period(d.periods), tiny{T(1e-4)}, far{T(1e6)};
    nan_t[42] = std::numeric_limits<T>::quiet_NaN();
    negative_period[3] = T(-1);
    auto same = out;
    same[2] = same[5];
    const std::int64_t negative[3] = {0, -4, 3};
    std::vector<std::int64_t> index(4, -4242);
    kp_peak_options backwards = kp_peak_options_default();
    backwards.separation = -0.5;
    const std::vector<checks::Refusal> cases = {
        {"NULL durations",
         [&] { return bls(ctx, &o, d.t.data(), d.y.data(), nullptr, n, d.periods.data(), np, nullptr, nd, out); },
         KP_ERROR_NULL_POINTER, "durations is NULL"},
        {"nperiods 0",
         [&] { return bls(ctx, &o, d.t.data(), d.y.data(), nullptr, n, d.periods.data(), 0, d.durations.data(), nd, out); },
         KP_ERROR_INVALID_ARGUMENT, "no periods"},
        {"NaN in t",
         [&] { return bls(ctx, &o, nan_t.data(), d.y.data(), d.dy.data(), n, d.periods.data(), np, d.durations.data(), nd, out); },
         KP_ERROR_INVALID_ARGUMENT, "t[42]"},
        {"negative period",
         [&] { return bls(ctx, &o, d.t.data(), d.y.data(), nullptr, n, negative_period.data(), np, d.durations.data(), nd, out); },
         KP_ERROR_INVALID_ARGUMENT, "period[3]"},
        {"too many phase bins",
         [&] { return bls(ctx, &o, d.t.data(), d.y.data(), nullptr, n, far.data(), 1, tiny.data(), 1, out); },
         KP_ERROR_INVALID_ARGUMENT, "phase bins"},
        {"two outputs in one buffer",
         [&] { return bls(ctx, &o, d.t.data(), d.y.data(), nullptr, n, d.periods.data(), np, d.durations.data(), nd, same); },
         KP_ERROR_INVALID_ARGUMENT, "depth_err and depth_snr overlap"},
        {"a negative offset",
         [&] { return bls_batch(ctx, &o, d.t.data(), d.y.data(), nullptr, negative, 2, d.periods.data(), 1, d.durations.data(), nd, out); },
         KP_ERROR_INVALID_ARGUMENT, "offsets[1] = -4 is negative"},
        {"a negative separation",
         [&] { return bls_batch_peaks<T>(ctx, &o, d.t.data(), d.y.data(), nullptr, d.offsets.data(), 2, d.periods.data(), np, d.durations.data(), nd, &backwards, index.data(), out); },
         KP_ERROR_INVALID_ARGUMENT, "separation = -0.5 must be finite and >= 0"},
        {"index over the offsets",
         [&] { return bls_batch_peaks<T>(ctx, &o, d.t.data(), d.y.data(), nullptr, d.offsets.data(), 2, d.periods.data(), np, d.durations.data(), nd, nullptr, const_cast<std::int64_t*>(d.offsets.data()), out); },
         KP_ERROR_INVALID_ARGUMENT, "index and offsets overlap"},
    };
    const auto untouched = [&] {
        return r.untouched() &&
               std::all_of(index.begin(), index.end(), [](std::int64_t i) { return i == -4242; });
    };
    checks::expect_refused(cases, untouched, what);
    std::printf("ok   errors %s\n", what.c_str());
}

}  // namespace

int main()
{
    const checks::Contexts c = checks::open_contexts();
    const kp_context* cpu = c.cpu.get();
    const kp_context* autoctx = c.autoctx.get();
    const std::string& auto_name = c.auto_name;

    const Results<double> cpu64 = check_batch<double>(cpu, "cpu");
    const Results<double> auto64 = check_batch<double>(autoctx, auto_name);
    const Results<float> cpu32 = check_batch<float>(cpu, "cpu");
    const Results<float> auto32 = check_batch<float>(autoctx, auto_name);
    for (std::size_t k = 0; k < 7; ++k) {
        check(std::memcmp(cpu64.f[k].data(), auto64.f[k].data(), cpu64.len * sizeof(double)) == 0,
              std::string("f64 ") + kFields[k] + " differs between the CPU and AUTO contexts");
        check(std::memcmp(cpu32.f[k].data(), auto32.f[k].data(), cpu32.len * sizeof(float)) == 0,
              std::string("f32 ") + kFields[k] + " differs between the CPU and AUTO contexts");
    }
    std::printf("ok   cpu and auto contexts agree bit for bit\n");
    check_errors<double>(cpu, "cpu");
    check_errors<float>(cpu, "cpu");
    check_errors<double>(autoctx, auto_name);
    check_errors<float>(autoctx, auto_name);
    std::printf("all checks passed (C++, %s)\n", c.is_gpu ? "GPU" : "CPU");
    return 0;
}
