// The N-D box filter C ABI from C++17: std::vector arrays of the element
// types uniform.c leaves out (int8, uint16, uint32, int64, uint64 with
// values past 2^53, whose sums are exact) and float, a templated direct
// implementation (one pass per axis, each window summed point by point) for
// every pair of boundary modes along the two axes, even windows, a window
// past the array and origins; only the size given is origin 0 and reflect;
// the device entry point on a stream of the user's own against the host
// one (RAII around the context, stream and buffers), and refused calls
// leaving the output as it was. Built and run by tests/ffi_programs.rs;
// exit status 0 when every check passes.
#include "kernpack.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <type_traits>
#include <vector>

namespace {

void check(bool ok, const std::string& what)
{
    if (!ok) {
        std::fprintf(stderr, "FAIL uniform.cpp: %s (%s)\n", what.c_str(), kp_last_error_message());
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

template <typename T> constexpr kp_dtype dtype_of();
template <> constexpr kp_dtype dtype_of<int8_t>() { return KP_DTYPE_I8; }
template <> constexpr kp_dtype dtype_of<uint16_t>() { return KP_DTYPE_U16; }
template <> constexpr kp_dtype dtype_of<uint32_t>() { return KP_DTYPE_U32; }
template <> constexpr kp_dtype dtype_of<int64_t>() { return KP_DTYPE_I64; }
template <> constexpr kp_dtype dtype_of<uint64_t>() { return KP_DTYPE_U64; }
template <> constexpr kp_dtype dtype_of<float>() { return KP_DTYPE_F32; }

uint64_t rng_state = 0x853c49e6748fea9bULL;
uint64_t next()
{
    rng_state = rng_state * 6364136223846793005ULL + 1442695040888963407ULL;
    return rng_state ^ (rng_state >> 29);
}

// Random values of T: every bit pattern of the 8- to 32-bit integers,
// 64-bit ones within +-2^58 (sums of 30 of them fit 64 bits, and are exact
// where a double's are not), eighths within +-125 for float.
template <typename T>
std::vector<T> random_values(size_t n)
{
    std::vector<T> out(n);
    for (auto& v : out) {
        if constexpr (std::is_floating_point_v<T>)
            v = T(double(int64_t(next() % 2001) - 1000) / 8.0);
        else if constexpr (sizeof(T) == 8 && std::is_signed_v<T>)
            v = T(int64_t(next() >> 5) - (int64_t(1) << 58));
        else if constexpr (sizeof(T) == 8)
            v = T(next() >> 6);
        else
            v = T(next());
    }
    return out;
}

// SciPy's extension of index i of a line of n points; -1: the constant.
long extend(long i, long n, uint32_t mode)
{
    if (i >= 0 && i < n) return i;
    switch (mode) {
    case KP_BOX_CONSTANT: return -1;
    case KP_BOX_REFLECT: { long m = ((i % (2 * n)) + 2 * n) % (2 * n); return m < n ? m : 2 * n - 1 - m; }
    case KP_BOX_MIRROR: {
        if (n == 1) return 0;
        long m = ((i % (2 * n - 2)) + 2 * n - 2) % (2 * n - 2);
        return m < n ? m : 2 * n - 2 - m;
    }
    case KP_BOX_WRAP: return ((i % n) + n) % n;
    default: return i < 0 ? 0 : n - 1;
    }
}

// The sum of a window of T: double for float, 64-bit integers otherwise
// (exact here; the division truncates toward zero, as SciPy's cast).
template <typename T>
using Sum = std::conditional_t<std::is_floating_point_v<T>, double,
                               std::conditional_t<std::is_signed_v<T>, int64_t, uint64_t>>;

// The 2-D box filter: a pass along the rows, then along the columns, each
// storing its means as T.
template <typename T>
std::vector<T> reference(std::vector<T> data, long rows, long cols, const size_t* size, const int64_t* origin,
                         const uint32_t* mode, T cval)
{
    for (int axis = 0; axis < 2; ++axis) {
        const long s = long(size[axis]), first = -(s / 2 + long(origin[axis]));
        const long len = axis == 0 ? rows : cols;
        if (s == 1) continue;
        std::vector<T> out(data.size());
        for (long r = 0; r < rows; ++r)
            for (long c = 0; c < cols; ++c) {
                const long i = axis == 0 ? r : c;
                Sum<T> sum = 0;
                for (long j = 0; j < s; ++j) {
                    const long at = extend(i + first + j, len, mode[axis]);
                    const T v = at < 0 ? cval : data[size_t(axis == 0 ? at * cols + c : r * cols + at)];
                    sum += Sum<T>(v);
                }
                out[size_t(r * cols + c)] = T(sum / Sum<T>(s));
            }
        data = out;
    }
    return data;
}

// Integers bit for bit; floats within a bound on the rounding of the
// running sums (the GPU's may differ in the last bits).
template <typename T>
bool same(const std::vector<T>& got, const std::vector<T>& want)
{
    if constexpr (std::is_floating_point_v<T>) {
        for (size_t i = 0; i < got.size(); ++i)
            if (!(std::fabs(double(got[i]) - double(want[i])) <= 1e-5 * 125.0)) return false;
        return true;
    } else {
        return std::memcmp(got.data(), want.data(), got.size() * sizeof(T)) == 0;
    }
}

template <typename T>
kp_status filter(const kp_context* ctx, const std::vector<T>& in, std::vector<T>& out,
                 const std::array<size_t, 2>& shape, const kp_uniform_nd_options* o)
{
    return kp_uniform_filter_nd(ctx, dtype_of<T>(), in.data(), out.data(), shape.data(), shape.size(), o);
}

template <typename T>
void run(const kp_context* ctx, bool gpu)
{
    const std::array<size_t, 2> shape = {21, 17};
    const size_t n = shape[0] * shape[1];
    const std::vector<T> in = random_values<T>(n);
    // An even window off centre, and one past the array's 21 rows.
    const std::array<std::array<size_t, 2>, 2> sizes = {{{4, 7}, {30, 1}}};
    const std::array<std::array<int64_t, 2>, 2> origins = {{{-2, 3}, {5, 0}}};
    const T cval = std::is_signed_v<T> ? T(-7) : T(7);
    std::vector<T> out(n);
    for (size_t w = 0; w < sizes.size(); ++w)
        for (uint32_t m0 = KP_BOX_REFLECT; m0 <= KP_BOX_WRAP; ++m0)
            for (uint32_t m1 = KP_BOX_REFLECT; m1 <= KP_BOX_WRAP; ++m1) {
                const std::array<uint32_t, 2> mode = {m0, m1};
                kp_uniform_nd_options o = kp_uniform_nd_options_default();
                o.size = sizes[w].data(), o.origin = origins[w].data(), o.mode = mode.data(), o.cval = double(cval);
                std::fill(out.begin(), out.end(), T(42));
                check(filter(ctx, in, out, shape, &o) == KP_OK, "box filter");
                const std::vector<T> want =
                    reference(in, long(shape[0]), long(shape[1]), o.size, o.origin, o.mode, cval);
                check(same(out, want), "as the direct loop: window " + std::to_string(w) + ", modes " +
                                           std::to_string(m0) + " " + std::to_string(m1));
            }

    // Only the size given: origin 0 and reflect along both axes.
    {
        const std::array<int64_t, 2> zero = {0, 0};
        const std::array<uint32_t, 2> reflect = {KP_BOX_REFLECT, KP_BOX_REFLECT};
        kp_uniform_nd_options o = kp_uniform_nd_options_default();
        o.size = sizes[0].data();
        check(filter(ctx, in, out, shape, &o) == KP_OK, "size alone");
        std::vector<T> explicit_out(n);
        o.origin = zero.data(), o.mode = reflect.data();
        check(filter(ctx, in, explicit_out, shape, &o) == KP_OK, "origin 0, reflect");
        check(std::memcmp(out.data(), explicit_out.data(), n * sizeof(T)) == 0, "defaults are origin 0, reflect");
    }

    // Refused calls write nothing.
    std::vector<T> kept = out;
    const std::array<int64_t, 2> far = {2, 0};
    const std::array<uint32_t, 2> unknown = {KP_BOX_WRAP, 7};
    kp_uniform_nd_options bad = kp_uniform_nd_options_default();
    bad.size = sizes[0].data(), bad.origin = far.data();
    check(filter(ctx, in, out, shape, &bad) == KP_ERROR_INVALID_ARGUMENT, "origin 2 of a window of 4 refused");
    check(std::string(kp_last_error_message()).find("origin 2 along axis 0") != std::string::npos,
          "the message names the origin and the axis");
    bad.origin = nullptr, bad.mode = unknown.data();
    check(filter(ctx, in, out, shape, &bad) == KP_ERROR_INVALID_ARGUMENT, "mode 7 refused");
    check(std::string(kp_last_error_message()).find("along axis 1") != std::string::npos, "the message names the axis");
    bad.mode = nullptr, bad.cval = 0.5;
    const kp_status fractional = filter(ctx, in, out, shape, &bad);
    if constexpr (std::is_floating_point_v<T>) {
        check(fractional == KP_OK, "a fractional cval is a float's");
        out = kept;
    } else {
        check(fractional == KP_ERROR_INVALID_ARGUMENT, "a fractional cval refused for an integer type");
        check(std::string(kp_last_error_message()).find("cval 0.5") != std::string::npos, "the message names cval");
    }
    check(filter(ctx, in, out, shape, nullptr) == KP_ERROR_NULL_POINTER, "NULL options refused");
    check(std::memcmp(kept.data(), out.data(), n * sizeof(T)) == 0, "output untouched");

    if (!gpu) return;
    // On a stream of our own: the device entry point, the host bits.
    uint64_t stream = 0;
    check(kp_stream_create(ctx, &stream) == KP_OK, "stream");
    {
        DeviceBuffer din(ctx, n * sizeof(T)), dout(ctx, n * sizeof(T));
        check(kp_memcpy_htod(ctx, din.ptr, in.data(), n * sizeof(T)) == KP_OK, "htod");
        const std::array<uint32_t, 2> mode = {KP_BOX_NEAREST, KP_BOX_WRAP};
        kp_uniform_nd_options o = kp_uniform_nd_options_default();
        o.size = sizes[0].data(), o.origin = origins[0].data(), o.mode = mode.data();
        check(filter(ctx, in, out, shape, &o) == KP_OK, "host box filter");
        check(kp_uniform_filter_nd_device(ctx, dtype_of<T>(), din.ptr, dout.ptr, shape.data(), 2, &o, stream) ==
                  KP_OK,
              "device box filter");
        check(kp_stream_synchronize(ctx, stream) == KP_OK, "sync");
        std::vector<T> back(n);
        check(kp_memcpy_dtoh(ctx, back.data(), dout.ptr, n * sizeof(T)) == KP_OK, "dtoh");
        check(std::memcmp(back.data(), out.data(), n * sizeof(T)) == 0, "device bits == host bits");
        // An unknown dtype is refused, and writes nothing.
        check(kp_uniform_filter_nd_device(ctx, 0, din.ptr, dout.ptr, shape.data(), 2, &o, stream) ==
                  KP_ERROR_INVALID_ARGUMENT,
              "dtype 0 refused");
        check(kp_memcpy_dtoh(ctx, back.data(), dout.ptr, n * sizeof(T)) == KP_OK, "dtoh");
        check(std::memcmp(back.data(), out.data(), n * sizeof(T)) == 0, "refused device call wrote nothing");
    }
    check(kp_stream_destroy(ctx, stream) == KP_OK, "stream destroy");
}

template <typename... T>
void run_all(const kp_context* ctx, bool gpu)
{
    (run<T>(ctx, gpu), ...);
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
    run_all<int8_t, uint16_t, uint32_t, int64_t, uint64_t, float>(ctx.get(), is_gpu != 0);
    Context cpu = make_context(KP_BACKEND_CPU);
    run_all<int8_t, uint16_t, uint32_t, int64_t, uint64_t, float>(cpu.get(), false);
    std::printf("all checks passed (C++, %s)\n", is_gpu ? "GPU" : "CPU");
    return 0;
}
