// The box filter C ABI from C++17: RAII around the context and device
// buffers, std::vector images with row gaps, a direct reference in C++, the
// device entry point on a stream of the user's own against the host one.
// Built and run by tests/ffi_programs.rs; exit status 0 when every check passes.
#include "kernpack.h"

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <vector>

namespace {

void check(bool ok, const std::string& what)
{
    if (!ok) {
        std::fprintf(stderr, "FAIL stencil.cpp: %s (%s)\n", what.c_str(), kp_last_error_message());
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

constexpr size_t rows = 70, cols = 133, in_pitch = 136, out_pitch = 133;

long extend(long i, long n, unsigned mode)
{
    if (i >= 0 && i < n) return i;
    switch (mode) {
    case KP_BOX_CONSTANT: return -1;
    case KP_BOX_REFLECT: { long m = ((i % (2 * n)) + 2 * n) % (2 * n); return m < n ? m : 2 * n - 1 - m; }
    case KP_BOX_MIRROR: { long p = 2 * n - 2, m = ((i % p) + p) % p; return m < n ? m : p - m; }
    case KP_BOX_WRAP: return ((i % n) + n) % n;
    default: return i < 0 ? 0 : n - 1;
    }
}

template <typename T>
std::vector<double> reference(const std::vector<T>& in, kp_box_filter_options o)
{
    std::vector<double> out(rows * cols);
    const long r = long(o.size / 2), R = long(rows), C = long(cols);
    for (long y = 0; y < R; ++y)
        for (long x = 0; x < C; ++x) {
            if (o.mode == KP_BOX_INTERIOR && (y < r || y >= R - r || x < r || x >= C - r)) {
                out[y * C + x] = double(in[y * in_pitch + x]);
                continue;
            }
            double acc = 0;
            for (long dy = -r; dy <= r; ++dy)
                for (long dx = -r; dx <= r; ++dx) {
                    long yy = extend(y + dy, R, o.mode), xx = extend(x + dx, C, o.mode);
                    acc += (yy < 0 || xx < 0) ? o.cval : double(in[yy * in_pitch + xx]);
                }
            out[y * C + x] = acc / double(o.size * o.size);
        }
    return out;
}

template <typename T>
void run(const kp_context* ctx, bool gpu, std::mt19937_64& rng)
{
    std::uniform_real_distribution<double> dist(-2.0, 2.0);
    const size_t in_len = (rows - 1) * in_pitch + cols, out_len = (rows - 1) * out_pitch + cols;
    std::vector<T> in(in_len);
    for (auto& v : in) v = T(dist(rng));
    const double tol = sizeof(T) == 4 ? 4e-5 : 1e-13;
    auto filter = [](auto... args) {
        if constexpr (sizeof(T) == 4) return kp_box_filter_f32(args...);
        else return kp_box_filter_f64(args...);
    };
    for (unsigned mode = KP_BOX_REFLECT; mode <= KP_BOX_INTERIOR; ++mode)
        for (unsigned size : {3u, 7u, 31u}) {
            kp_box_filter_options o = kp_box_filter_options_default();
            o.size = size, o.mode = mode, o.cval = -0.5;
            std::vector<T> out(out_len, T(-9));
            check(filter(ctx, in.data(), in_pitch, out.data(), out_pitch, rows, cols, &o) == KP_OK, "filter");
            const auto want = reference(in, o);
            for (size_t y = 0; y < rows; ++y)
                for (size_t x = 0; x < cols; ++x)
                    check(std::fabs(double(out[y * out_pitch + x]) - want[y * cols + x]) <= tol,
                          "mode " + std::to_string(mode) + " size " + std::to_string(size) + " at (" +
                              std::to_string(y) + ", " + std::to_string(x) + ")");
            if (!gpu) continue;
            // On a stream of our own: the device entry point, the same bits.
            uint64_t stream = 0;
            check(kp_stream_create(ctx, &stream) == KP_OK, "stream");
            DeviceBuffer din(ctx, in_len * sizeof(T)), dout(ctx, out_len * sizeof(T));
            check(kp_memcpy_htod(ctx, din.ptr, in.data(), in_len * sizeof(T)) == KP_OK, "htod");
            kp_status s = sizeof(T) == 4
                ? kp_box_filter_device_f32(ctx, din.ptr, in_pitch, dout.ptr, out_pitch, rows, cols, &o, stream)
                : kp_box_filter_device_f64(ctx, din.ptr, in_pitch, dout.ptr, out_pitch, rows, cols, &o, stream);
            check(s == KP_OK, "device filter");
            check(kp_stream_synchronize(ctx, stream) == KP_OK, "sync");
            std::vector<T> back(out_len);
            check(kp_memcpy_dtoh(ctx, back.data(), dout.ptr, out_len * sizeof(T)) == KP_OK, "dtoh");
            check(std::memcmp(back.data(), out.data(), out_len * sizeof(T)) == 0, "device bits == host bits");
            check(kp_stream_destroy(ctx, stream) == KP_OK, "stream destroy");
        }
}

}  // namespace

int main()
{
    const char* require = std::getenv("KERNPACK_REQUIRE_GPU");
    std::mt19937_64 rng(20261122);
    Context ctx = make_context(KP_BACKEND_AUTO);
    int is_gpu = 0;
    check(kp_context_is_gpu(ctx.get(), &is_gpu) == KP_OK, "is_gpu");
    if (is_gpu)
        std::printf("     AUTO context runs on the GPU\n");
    else
        check(!(require && std::string(require) == "1"), "KERNPACK_REQUIRE_GPU=1 but no GPU");
    run<float>(ctx.get(), is_gpu != 0, rng);
    run<double>(ctx.get(), is_gpu != 0, rng);
    Context cpu = make_context(KP_BACKEND_CPU);
    run<double>(cpu.get(), false, rng);
    std::printf("all checks passed (C++, %s)\n", is_gpu ? "GPU" : "CPU");
    return 0;
}
