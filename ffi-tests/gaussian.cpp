// The correlation and Gaussian filter C ABI from C++17: std::vector arrays,
// the Gaussian of an impulse in 3-D (the outer product of the normalised
// weights, summing to 1), a first-derivative filter (odd, -k / sigma^2 times
// the weights), the device entry points on a stream of the user's own
// against the host ones (RAII around the context, stream and buffers), and a
// refused call leaving the output as it was.
// Built and run by tests/ffi_programs.rs; exit status 0 when every check passes.
#include "kernpack.h"

#include <array>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

namespace {

void check(bool ok, const std::string& what)
{
    if (!ok) {
        std::fprintf(stderr, "FAIL gaussian.cpp: %s (%s)\n", what.c_str(), kp_last_error_message());
        std::exit(1);
    }
}

struct ContextDeleter {
    void operator()(kp_context* c) const { kp_context_destroy(c); }
};
using Context = std::unique_ptr<kp_context, ContextDeleter>;

Context make_context(kp_backend backend)
{
    kp_context* raw = nullptr;
    check(kp_context_create(backend, &raw) == KP_OK, "context");
    return Context(raw);
}

// A device buffer freed on scope exit.
struct DeviceBuffer {
    const kp_context* ctx;
    uint64_t ptr = 0;
    DeviceBuffer(const kp_context* c, size_t bytes) : ctx(c) { check(kp_device_alloc(c, bytes, &ptr) == KP_OK, "alloc"); }
    ~DeviceBuffer() { kp_device_free(ctx, ptr); }
    DeviceBuffer(const DeviceBuffer&) = delete;
    DeviceBuffer& operator=(const DeviceBuffer&) = delete;
};

// exp(-k^2 / (2 sigma^2)), k = -radius .. radius, normalised to sum 1.
std::vector<double> weights(double sigma, long radius)
{
    std::vector<double> w;
    double total = 0;
    for (long k = -radius; k <= radius; ++k) {
        w.push_back(std::exp(-0.5 * double(k * k) / (sigma * sigma)));
        total += w.back();
    }
    for (auto& v : w) v /= total;
    return w;
}

template <typename T>
kp_status gaussian(const kp_context* ctx, const std::vector<T>& in, std::vector<T>& out, const std::vector<size_t>& shape,
                   const kp_gaussian_options* per_axis)
{
    if constexpr (sizeof(T) == 4)
        return kp_gaussian_filter_f32(ctx, in.data(), out.data(), shape.data(), shape.size(), per_axis);
    else
        return kp_gaussian_filter_f64(ctx, in.data(), out.data(), shape.data(), shape.size(), per_axis);
}

template <typename T>
kp_status correlate(const kp_context* ctx, const std::vector<T>& in, std::vector<T>& out,
                    const std::vector<size_t>& shape, size_t axis, const double (&taps)[3],
                    const kp_correlate_options* o)
{
    if constexpr (sizeof(T) == 4)
        return kp_correlate1d_f32(ctx, in.data(), out.data(), shape.data(), shape.size(), axis, taps, 3, o);
    else
        return kp_correlate1d_f64(ctx, in.data(), out.data(), shape.data(), shape.size(), axis, taps, 3, o);
}

template <typename T>
void run(const kp_context* ctx, bool gpu)
{
    const double tol = sizeof(T) == 4 ? 1e-7 : 1e-15;
    const std::vector<size_t> shape = {9, 15, 11};
    const std::array<long, 3> centre = {4, 7, 5};
    const std::array<double, 3> sigma = {0.9, 1.7, 1.2};
    const size_t n = shape[0] * shape[1] * shape[2];
    auto at = [&](long a, long b, long c) { return size_t((a * long(shape[1]) + b) * long(shape[2]) + c); };
    std::vector<T> impulse(n, T(0));
    impulse[at(centre[0], centre[1], centre[2])] = T(1);
    std::array<kp_gaussian_options, 3> per_axis;
    std::array<std::vector<double>, 3> w;
    std::array<long, 3> radius;
    for (size_t a = 0; a < 3; ++a) {
        per_axis[a] = kp_gaussian_options_default();
        per_axis[a].sigma = sigma[a];
        per_axis[a].mode = KP_BOX_CONSTANT;
        radius[a] = long(4.0 * sigma[a] + 0.5);
        w[a] = weights(sigma[a], radius[a]);
    }
    std::vector<T> out(n, T(-7));
    check(gaussian(ctx, impulse, out, shape, per_axis.data()) == KP_OK, "3-D Gaussian");
    double sum = 0;
    for (long a = 0; a < long(shape[0]); ++a)
        for (long b = 0; b < long(shape[1]); ++b)
            for (long c = 0; c < long(shape[2]); ++c) {
                const long k[3] = {a - centre[0], b - centre[1], c - centre[2]};
                double want = 1;
                for (size_t d = 0; d < 3; ++d)
                    want *= std::labs(k[d]) > radius[d] ? 0.0 : w[d][size_t(k[d] + radius[d])];
                const double got = double(out[at(a, b, c)]);
                sum += got;
                check(std::fabs(got - want) <= tol, "impulse response at (" + std::to_string(k[0]) + ", " +
                                                        std::to_string(k[1]) + ", " + std::to_string(k[2]) + ")");
                check(out[at(a, b, c)] == out[at(2 * centre[0] - a, 2 * centre[1] - b, 2 * centre[2] - c)],
                      "impulse response symmetric");
            }
    check(std::fabs(sum - 1.0) <= (sizeof(T) == 4 ? 1e-5 : 1e-13), "impulse response sums to 1");

    // First derivative along the last axis only: odd, -k / sigma^2 times the weights.
    std::array<kp_gaussian_options, 3> deriv = per_axis;
    deriv[0].sigma = deriv[1].sigma = 0;
    deriv[2].order = 1;
    check(gaussian(ctx, impulse, out, shape, deriv.data()) == KP_OK, "derivative");
    for (long k = -radius[2]; k <= radius[2]; ++k) {
        const double want = -double(k) / (sigma[2] * sigma[2]) * w[2][size_t(k + radius[2])];
        const double got = double(out[at(centre[0], centre[1], centre[2] + k)]);
        check(std::fabs(got - want) <= 4 * tol, "derivative at " + std::to_string(k));
        check(out[at(centre[0], centre[1], centre[2] + k)] == -out[at(centre[0], centre[1], centre[2] - k)],
              "derivative odd");
    }

    // A refused call (a negative sigma on the second axis) writes nothing.
    std::vector<T> kept = out;
    std::array<kp_gaussian_options, 3> bad = per_axis;
    bad[1].sigma = -2;
    check(gaussian(ctx, impulse, out, shape, bad.data()) == KP_ERROR_INVALID_ARGUMENT, "negative sigma refused");
    check(std::string(kp_last_error_message()).find("axis 1") != std::string::npos, "the message names the axis");
    check(std::memcmp(kept.data(), out.data(), n * sizeof(T)) == 0, "output untouched");

    if (!gpu) return;
    // On a stream of our own: the device entry points, the host bits.
    uint64_t stream = 0;
    check(kp_stream_create(ctx, &stream) == KP_OK, "stream");
    {
        DeviceBuffer din(ctx, n * sizeof(T)), dout(ctx, n * sizeof(T));
        check(kp_memcpy_htod(ctx, din.ptr, impulse.data(), n * sizeof(T)) == KP_OK, "htod");
        check(gaussian(ctx, impulse, out, shape, per_axis.data()) == KP_OK, "host Gaussian");
        kp_status s = sizeof(T) == 4
            ? kp_gaussian_filter_device_f32(ctx, din.ptr, dout.ptr, shape.data(), 3, per_axis.data(), stream)
            : kp_gaussian_filter_device_f64(ctx, din.ptr, dout.ptr, shape.data(), 3, per_axis.data(), stream);
        check(s == KP_OK, "device Gaussian");
        check(kp_stream_synchronize(ctx, stream) == KP_OK, "sync");
        std::vector<T> back(n);
        check(kp_memcpy_dtoh(ctx, back.data(), dout.ptr, n * sizeof(T)) == KP_OK, "dtoh");
        check(std::memcmp(back.data(), out.data(), n * sizeof(T)) == 0, "device Gaussian bits == host bits");
        const double taps[3] = {0.25, 0.5, 0.25};
        kp_correlate_options o = kp_correlate_options_default();
        o.mode = KP_BOX_WRAP;
        check(correlate(ctx, impulse, out, shape, 1, taps, &o) == KP_OK, "host correlation");
        s = sizeof(T) == 4 ? kp_correlate1d_device_f32(ctx, din.ptr, dout.ptr, shape.data(), 3, 1, taps, 3, &o, stream)
                           : kp_correlate1d_device_f64(ctx, din.ptr, dout.ptr, shape.data(), 3, 1, taps, 3, &o, stream);
        check(s == KP_OK, "device correlation");
        check(kp_memcpy_dtoh(ctx, back.data(), dout.ptr, n * sizeof(T)) == KP_OK, "dtoh");
        check(std::memcmp(back.data(), out.data(), n * sizeof(T)) == 0, "device correlation bits == host bits");
        // In place on the device is refused, and writes nothing.
        s = sizeof(T) == 4 ? kp_correlate1d_device_f32(ctx, dout.ptr, dout.ptr, shape.data(), 3, 1, taps, 3, &o, stream)
                           : kp_correlate1d_device_f64(ctx, dout.ptr, dout.ptr, shape.data(), 3, 1, taps, 3, &o, stream);
        check(s == KP_ERROR_INVALID_ARGUMENT, "in place refused");
        check(kp_memcpy_dtoh(ctx, back.data(), dout.ptr, n * sizeof(T)) == KP_OK, "dtoh");
        check(std::memcmp(back.data(), out.data(), n * sizeof(T)) == 0, "refused device call wrote nothing");
    }
    check(kp_stream_destroy(ctx, stream) == KP_OK, "stream destroy");
}

}  // namespace

int main()
{
    const char* require = std::getenv("KERNPACK_REQUIRE_GPU");
    Context ctx = make_context(KP_BACKEND_AUTO);
    int is_gpu = 0;
    check(kp_context_is_gpu(ctx.get(), &is_gpu) == KP_OK, "is_gpu");
    if (is_gpu)
        std::printf("     AUTO context runs on the GPU\n");
    else
        check(!(require && std::string(require) == "1"), "KERNPACK_REQUIRE_GPU=1 but no GPU");
    run<float>(ctx.get(), is_gpu != 0);
    run<double>(ctx.get(), is_gpu != 0);
    Context cpu = make_context(KP_BACKEND_CPU);
    run<double>(cpu.get(), false);
    std::printf("all checks passed (C++, %s)\n", is_gpu ? "GPU" : "CPU");
    return 0;
}
