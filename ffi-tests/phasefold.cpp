// The phase-folding searches' C ABI from C++17: one templated code path over
// the twenty-four kp_pdm_* and kp_conditional_entropy_* functions (overloads
// by dtype and option struct), std::vector buffers, RAII around the contexts.
// A batch of five light curves (a sinusoid, a box-shaped dip and a sawtooth,
// each with a period of its own, then a constant curve and a curve of one
// sample, which have no statistic: NaN) searched with PDM (16 bins, with
// errors) and conditional entropy (12 x 6 bins, overlaps 1 and 1) on a
// uniform grid: each planted period is the lowest value of its row; each
// row equals its own single-series call bit for bit; in double the array
// of the grid's frequencies gives the same bits; the best two peaks of each
// row (the `_peaks` forms) start at its lowest value, with the row's value,
// and the curves with no statistic have none; the CPU and AUTO contexts
// agree bit for bit; refused calls leave the outputs as they were. Built and
// run by tests/ffi_programs.rs; exit status 0 when every check passes. With
// KERNPACK_REQUIRE_GPU=1 a missing GPU fails.
#include "checks.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <type_traits>
#include <vector>

namespace {

using checks::check;

constexpr double kPoison = -4242.0;
constexpr double kF0 = 0.2, kDf = 0.0005;
constexpr std::size_t kNf = 1200;  // 0.2 .. 0.8: no subharmonic of the box
constexpr double kPeriods[3] = {2.0, 3.1, 1.6};

// The twenty-four entry points as six overload sets: the dtype and the
// option struct (the statistic) pick the function.
#define KP_FOLD_OVERLOADS(T, O, NAME, SUFFIX)                                                     \
    kp_status fold(const kp_context* c, const O* o, const T* t, const T* y, const T* dy,          \
                   std::size_t n, const T* f, std::size_t nf, T* out)                             \
    {                                                                                             \
        return NAME##_##SUFFIX(c, o, t, y, dy, n, f, nf, out);                                    \
    }                                                                                             \
    kp_status fold_uniform(const kp_context* c, const O* o, const T* t, const T* y, const T* dy,  \
                           std::size_t n, double f0, double df, std::size_t nf, T* out)           \
    {                                                                                             \
        return NAME##_uniform_##SUFFIX(c, o, t, y, dy, n, f0, df, nf, out);                       \
    }                                                                                             \
    kp_status fold_batch(const kp_context* c, const O* o, const T* t, const T* y, const T* dy,    \
                         const std::int64_t* off, std::size_t ns, const T* f, std::size_t nf,     \
                         T* out)                                                                  \
    {                                                                                             \
        return NAME##_batch_##SUFFIX(c, o, t, y, dy, off, ns, f, nf, out);                        \
    }                                                                                             \
    kp_status fold_batch_uniform(const kp_context* c, const O* o, const T* t, const T* y,         \
                                 const T* dy, const std::int64_t* off, std::size_t ns, double f0, \
                                 double df, std::size_t nf, T* out)                               \
    {                                                                                             \
        return NAME##_batch_uniform_##SUFFIX(c, o, t, y, dy, off, ns, f0, df, nf, out);           \
    }                                                                                             \
    kp_status fold_batch_peaks(const kp_context* c, const O* o, const T* t, const T* y,           \
                               const T* dy, const std::int64_t* off, std::size_t ns, const T* f,  \
                               std::size_t nf, const kp_peak_options* p, std::int64_t* index,     \
                               double* value)                                                     \
    {                                                                                             \
        return NAME##_batch_peaks_##SUFFIX(c, o, t, y, dy, off, ns, f, nf, p, index, value);      \
    }                                                                                             \
    kp_status fold_batch_uniform_peaks(const kp_context* c, const O* o, const T* t, const T* y,   \
                                       const T* dy, const std::int64_t* off, std::size_t ns,      \
                                       double f0, double df, std::size_t nf,                      \
                                       const kp_peak_options* p, std::int64_t* index,             \
                                       double* value)                                             \
    {                                                                                             \
        return NAME##_batch_uniform_peaks_##SUFFIX(c, o, t, y, dy, off, ns, f0, df, nf, p, index, \
                                                   value);                                        \
    }

KP_FOLD_OVERLOADS(float, kp_pdm_options, kp_pdm, f32)
KP_FOLD_OVERLOADS(double, kp_pdm_options, kp_pdm, f64)
KP_FOLD_OVERLOADS(float, kp_ce_options, kp_conditional_entropy, f32)
KP_FOLD_OVERLOADS(double, kp_ce_options, kp_conditional_entropy, f64)
#undef KP_FOLD_OVERLOADS

template <typename T>
const char* dtype()
{
    return std::is_same_v<T, float> ? "f32" : "f64";
}

// The options of the two searches.
kp_pdm_options pdm16()
{
    kp_pdm_options o = kp_pdm_options_default();
    o.bins = 16;
    return o;
}
kp_ce_options ce_overlapping()
{
    kp_ce_options o = kp_ce_options_default();
    o.phase_bins = 12;
    o.mag_bins = 6;
    o.phase_overlap = 1;
    o.mag_overlap = 1;
    return o;
}
const char* statistic(const kp_pdm_options*) { return "PDM"; }
const char* statistic(const kp_ce_options*) { return "CE"; }

// The five curves one after another, with errors.
template <typename T>
struct Data {
    std::vector<T> t, y, dy;
    std::vector<std::int64_t> offsets{0};
};

template <typename T>
Data<T> make_data()
{
    checks::Lcg uniform(0x2545f4914f6cdd1dULL);
    Data<T> d;
    auto add = [&](std::size_t n, auto shape) {
        for (std::size_t i = 0; i < n; ++i) {
            const double t = 2000.0 + 150.0 * uniform();
            d.t.push_back(static_cast<T>(t));
            d.y.push_back(static_cast<T>(shape(t - 2000.0) + 0.3 * (uniform() - 0.5)));
            d.dy.push_back(static_cast<T>(0.05 + 0.1 * uniform()));
        }
        d.offsets.push_back(static_cast<std::int64_t>(d.t.size()));
    };
    const double tau = 6.283185307179586;
    add(600, [&](double t) { return std::sin(tau * t / kPeriods[0]); });
    add(800, [&](double t) { return std::fmod(t, kPeriods[1]) < 0.4 ? -1.0 : 0.0; });
    add(500, [&](double t) { return std::fmod(t, kPeriods[2]) / kPeriods[2]; });
    // No spread: a constant curve (the noise is drawn, then not used) and
    // a single sample.
    const std::size_t start = d.t.size();
    add(50, [](double) { return 0.0; });
    for (std::size_t i = start; i < d.t.size(); ++i) d.y[i] = T(4);
    add(1, [](double) { return 1.0; });
    return d;
}

// The best two peaks of every curve of `d` by statistic `O` on the grid,
// against `all`, the batch's statistic there: the first is the row's first
// lowest value, the second a worse one, each with the row's value; the
// curves with no statistic (from the fourth) have none: index -1, value
// NaN. In double the array of the grid's frequencies gives the same peaks.
template <typename T, typename O>
void check_peaks(const kp_context* ctx, const O& o, const Data<T>& d, const std::vector<T>& all,
                 const std::string& what)
{
    const std::size_t ns = d.offsets.size() - 1;
    kp_peak_options two = kp_peak_options_default();
    two.k = 2;
    std::vector<std::int64_t> index(2 * ns + 1, -4242);
    std::vector<double> value(2 * ns + 1, kPoison);
    check(fold_batch_uniform_peaks(ctx, &o, d.t.data(), d.y.data(), d.dy.data(), d.offsets.data(),
                                   ns, kF0, kDf, kNf, &two, index.data(), value.data()) == KP_OK,
          "peaks on the grid " + what);
    check(index[2 * ns] == -4242 && value[2 * ns] == kPoison,
          "the peaks wrote past nseries x k " + what);
    for (std::size_t s = 0; s < ns; ++s) {
        const T* row = all.data() + s * kNf;
        const std::int64_t* i = index.data() + 2 * s;
        const double* v = value.data() + 2 * s;
        const std::string series = "series " + std::to_string(s) + " ";
        if (s >= 3) {
            check(i[0] == -1 && i[1] == -1 && std::isnan(v[0]) && std::isnan(v[1]),
                  series + "has no statistic, yet peaks " + what);
            continue;
        }
        const std::int64_t b = std::min_element(row, row + kNf) - row;
        check(i[0] == b && v[0] == static_cast<double>(row[b]),
              series + "best peak " + std::to_string(i[0]) + ", lowest " + std::to_string(b) +
                  " " + what);
        check(i[1] >= 0 && i[1] < static_cast<std::int64_t>(kNf) && v[1] >= v[0] &&
                  v[1] == static_cast<double>(row[i[1]]),
              series + "second peak " + std::to_string(i[1]) + " " + what);
    }
    if constexpr (std::is_same_v<T, double>) {
        std::vector<double> freqs(kNf);
        for (std::size_t k = 0; k < kNf; ++k) freqs[k] = kF0 + static_cast<double>(k) * kDf;
        std::vector<std::int64_t> by_array_index(2 * ns + 1, -4242);
        std::vector<double> by_array_value(2 * ns + 1, kPoison);
        check(fold_batch_peaks(ctx, &o, d.t.data(), d.y.data(), d.dy.data(), d.offsets.data(), ns,
                               freqs.data(), kNf, &two, by_array_index.data(),
                               by_array_value.data()) == KP_OK,
              "peaks on the array " + what);
        const std::size_t bytes = value.size() * sizeof(double);
        check(by_array_index == index &&
                  std::memcmp(by_array_value.data(), value.data(), bytes) == 0,
              "the peaks on the array of the grid's frequencies differ from the grid's " + what);
    }
}

// Every search of statistic `O` in dtype `T` on `ctx`: returns the batch.
template <typename T, typename O>
std::vector<T> check_batch(const kp_context* ctx, const O& o, const std::string& name)
{
    const Data<T> d = make_data<T>();
    const std::size_t ns = d.offsets.size() - 1;
    const std::string what = std::string(statistic(&o)) + " " + dtype<T>() + " (" + name + ")";
    std::vector<T> all(ns * kNf + 1, static_cast<T>(kPoison));
    check(fold_batch_uniform(ctx, &o, d.t.data(), d.y.data(), d.dy.data(), d.offsets.data(), ns,
                             kF0, kDf, kNf, all.data()) == KP_OK,
          "batch on the grid " + what);
    check(all[ns * kNf] == static_cast<T>(kPoison), "the batch wrote past nseries x nf " + what);
    for (std::size_t s = 0; s < ns; ++s) {
        const std::size_t from = static_cast<std::size_t>(d.offsets[s]);
        const std::size_t n = static_cast<std::size_t>(d.offsets[s + 1]) - from;
        const T* row = all.data() + s * kNf;
        std::vector<T> one(kNf + 1, static_cast<T>(kPoison));
        check(fold_uniform(ctx, &o, d.t.data() + from, d.y.data() + from, d.dy.data() + from, n,
                           kF0, kDf, kNf, one.data()) == KP_OK,
              "series " + std::to_string(s) + " on the grid " + what);
        check(one[kNf] == static_cast<T>(kPoison), "a single call wrote past nf " + what);
        check(std::memcmp(one.data(), row, kNf * sizeof(T)) == 0,
              "series " + std::to_string(s) + " of the batch differs from its own call " + what);
        if (s >= 3) {
            check(std::all_of(row, row + kNf, [](T v) { return std::isnan(v); }),
                  "no spread: NaN everywhere, series " + std::to_string(s) + " " + what);
            continue;
        }
        const std::size_t b = static_cast<std::size_t>(std::min_element(row, row + kNf) - row);
        const double found = kF0 + static_cast<double>(b) * kDf;
        check(std::abs(found - 1.0 / kPeriods[s]) < 0.002,
              "series " + std::to_string(s) + ": lowest at " + std::to_string(found) +
                  ", planted " + std::to_string(1.0 / kPeriods[s]) + " " + what);
    }
    if constexpr (std::is_same_v<T, double>) {
        // The grid's frequencies as an array (formed as kernpack forms them).
        std::vector<double> freqs(kNf);
        for (std::size_t k = 0; k < kNf; ++k) freqs[k] = kF0 + static_cast<double>(k) * kDf;
        std::vector<double> by_array(ns * kNf + 1, kPoison);
        check(fold_batch(ctx, &o, d.t.data(), d.y.data(), d.dy.data(), d.offsets.data(), ns,
                         freqs.data(), kNf, by_array.data()) == KP_OK,
              "batch on the array " + what);
        check(std::memcmp(by_array.data(), all.data(), (ns * kNf + 1) * sizeof(double)) == 0,
              "the array of the grid's frequencies differs from the grid " + what);
        std::vector<double> one(kNf, kPoison);
        check(fold(ctx, &o, d.t.data(), d.y.data(), d.dy.data(),
                   static_cast<std::size_t>(d.offsets[1]), freqs.data(), kNf, one.data()) == KP_OK,
              "series 0 on the array " + what);
        check(std::memcmp(one.data(), all.data(), kNf * sizeof(double)) == 0,
              "series 0 on the array differs from the grid " + what);
    }
    check_peaks(ctx, o, d, all, what);
    std::printf("ok   batch, single series and peaks %s\n", what.c_str());
    return all;
}

// Refused calls: the status, a message, the output untouched.
template <typename T, typename O>
void check_errors(const kp_context* ctx, const O& o, const std::string& name)
{
    const Data<T> d = make_data<T>();
    const std::size_t n = static_cast<std::size_t>(d.offsets[1]);
    const std::string what = std::string(statistic(&o)) + " " + dtype<T>() + " (" + name + ")";
    std::vector<T> out(2 * kNf, static_cast<T>(kPoison));
    std::vector<std::int64_t> index(4, -4242);
    std::vector<double> value(4, kPoison);
    kp_peak_options none = kp_peak_options_default();
    none.k = 0;
    std::vector<T> nan_y(d.y), freqs{T(0.2), T(-0.3)};
    nan_y[42] = std::numeric_limits<T>::quiet_NaN();
    O zero = o;
    std::memset(&zero, 0, sizeof zero);  // every field 0: out of range
    const std::int64_t negative[3] = {0, -4, 3};
    const std::int64_t beyond[2] = {1, 5};
    const std::vector<checks::Refusal> cases = {
        {"NULL y",
         [&] { return fold_uniform(ctx, &o, d.t.data(), nullptr, nullptr, n, kF0, kDf, kNf, out.data()); },
         KP_ERROR_NULL_POINTER, "y is NULL"},
        {"NaN in y",
         [&] { return fold_uniform(ctx, &o, d.t.data(), nan_y.data(), nullptr, n, kF0, kDf, kNf, out.data()); },
         KP_ERROR_INVALID_ARGUMENT, "y[42] = NaN"},
        {"a negative frequency",
         [&] { return fold(ctx, &o, d.t.data(), d.y.data(), nullptr, n, freqs.data(), 2, out.data()); },
         KP_ERROR_INVALID_ARGUMENT, "frequency[1] = -0.3"},
        {"no frequencies",
         [&] { return fold_uniform(ctx, &o, d.t.data(), d.y.data(), nullptr, n, kF0, kDf, 0, out.data()); },
         KP_ERROR_INVALID_ARGUMENT, "nf = 0"},
        {"options out of range",
         [&] { return fold_uniform(ctx, &zero, d.t.data(), d.y.data(), nullptr, n, kF0, kDf, kNf, out.data()); },
         KP_ERROR_INVALID_ARGUMENT, "bins = 0"},
        {"out over t",
         [&] { return fold_uniform(ctx, &o, d.t.data(), d.y.data(), nullptr, n, kF0, kDf, kNf, const_cast<T*>(d.t.data())); },
         KP_ERROR_INVALID_ARGUMENT, "out and t overlap"},
        {"a negative offset",
         [&] { return fold_batch_uniform(ctx, &o, d.t.data(), d.y.data(), nullptr, negative, 2, kF0, kDf, 1, out.data()); },
         KP_ERROR_INVALID_ARGUMENT, "offsets[1] = -4 is negative"},
        {"offsets not from 0",
         [&] { return fold_batch(ctx, &o, d.t.data(), d.y.data(), nullptr, beyond, 1, freqs.data(), 1, out.data()); },
         KP_ERROR_INVALID_ARGUMENT, "offsets must start at 0"},
        {"no peaks asked for",
         [&] { return fold_batch_uniform_peaks(ctx, &o, d.t.data(), d.y.data(), nullptr, d.offsets.data(), 2, kF0, kDf, kNf, &none, index.data(), value.data()); },
         KP_ERROR_INVALID_ARGUMENT, "k = 0 peaks per series is out of range"},
        {"NULL value",
         [&] { return fold_batch_peaks(ctx, &o, d.t.data(), d.y.data(), nullptr, d.offsets.data(), 2, freqs.data(), 2, nullptr, index.data(), nullptr); },
         KP_ERROR_NULL_POINTER, "value is NULL"},
    };
    const auto untouched = [&] {
        return std::all_of(out.begin(), out.end(), [](T v) { return v == static_cast<T>(kPoison); }) &&
               std::all_of(index.begin(), index.end(), [](std::int64_t i) { return i == -4242; }) &&
               std::all_of(value.begin(), value.end(), [](double v) { return v == kPoison; });
    };
    checks::expect_refused(cases, untouched, what);
    std::printf("ok   errors %s\n", what.c_str());
}

// The batches of both statistics and dtypes on the CPU and AUTO contexts
// agree bit for bit.
template <typename T, typename O>
void check_contexts(const checks::Contexts& c, const O& o)
{
    const std::vector<T> a = check_batch<T>(c.cpu.get(), o, "cpu");
    const std::vector<T> b = check_batch<T>(c.autoctx.get(), o, c.auto_name);
    check(std::memcmp(a.data(), b.data(), a.size() * sizeof(T)) == 0,
          std::string(statistic(&o)) + " " + dtype<T>() + " differs between the CPU and AUTO contexts");
    check_errors<T>(c.cpu.get(), o, "cpu");
    check_errors<T>(c.autoctx.get(), o, c.auto_name);
}

}  // namespace

int main()
{
    const checks::Contexts c = checks::open_contexts();
    check_contexts<double>(c, pdm16());
    check_contexts<float>(c, pdm16());
    check_contexts<double>(c, ce_overlapping());
    check_contexts<float>(c, ce_overlapping());
    std::printf("ok   cpu and auto contexts agree bit for bit\n");
    std::printf("all checks passed (C++, %s)\n", c.is_gpu ? "GPU" : "CPU");
    return 0;
}
