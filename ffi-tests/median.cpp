// The rank filter C ABI from C++17: std::vector arrays of the element types
// median.c leaves out (int8, uint16, uint32, int64, uint64 with values past
// 2^53) and float, a templated direct implementation (std::nth_element over
// each window) for every rank choice and boundary mode, the device entry
// point on a stream of the user's own against the host one (RAII around the
// context, stream and buffers), and a refused call leaving the output as it
// was. Built and run by tests/ffi_programs.rs; exit status 0 when every
// check passes.
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
        std::fprintf(stderr, "FAIL median.cpp: %s (%s)\n", what.c_str(), kp_last_error_message());
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

// Random values of T: a pool of 6 (ties) spread over the whole type.
template <typename T>
std::vector<T> random_values(size_t n)
{
    std::array<T, 6> pool;
    for (auto& v : pool) {
        if constexpr (std::is_floating_point_v<T>)
            v = T(double(int64_t(next() % 2001) - 1000) / 8.0);
        else
            v = T(next());  // every bit pattern of T
    }
    std::vector<T> out(n);
    for (auto& v : out) v = pool[next() % pool.size()];
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

// The 2-D rank filter of a rows x cols box with `mask`, each window's
// value of the selected rank by std::nth_element.
template <typename T>
std::vector<T> reference(const std::vector<T>& in, long rows, long cols, const kp_rank_options& o, T cval)
{
    const long fr = long(o.size[0]), fc = long(o.size[1]);
    long count = 0;
    for (long p = 0; p < fr * fc; ++p) count += o.footprint[p] != 0;
    long rank = count / 2;
    if (o.rank_by == KP_RANK_BY_INDEX) rank = o.rank < 0 ? o.rank + count : o.rank;
    if (o.rank_by == KP_RANK_BY_PERCENTILE) {
        const double p = o.percentile < 0 ? o.percentile + 100 : o.percentile;
        rank = p == 100 ? count - 1 : long(double(count) * p / 100);
    }
    std::vector<T> out(in.size()), window;
    for (long r = 0; r < rows; ++r)
        for (long c = 0; c < cols; ++c) {
            window.clear();
            for (long i = 0; i < fr; ++i)
                for (long j = 0; j < fc; ++j) {
                    if (!o.footprint[i * fc + j]) continue;
                    const long y = extend(r + i - (fr / 2 + o.origin[0]), rows, o.mode);
                    const long x = extend(c + j - (fc / 2 + o.origin[1]), cols, o.mode);
                    window.push_back(y < 0 || x < 0 ? cval : in[size_t(y * cols + x)]);
                }
            std::nth_element(window.begin(), window.begin() + rank, window.end());
            out[size_t(r * cols + c)] = window[size_t(rank)];
        }
    return out;
}

template <typename T>
kp_status filter(const kp_context* ctx, const std::vector<T>& in, std::vector<T>& out,
                 const std::array<size_t, 2>& shape, const kp_rank_options* o)
{
    return kp_rank_filter(ctx, dtype_of<T>(), in.data(), out.data(), shape.data(), shape.size(), o);
}

template <typename T>
void run(const kp_context* ctx, bool gpu)
{
    const std::array<size_t, 2> shape = {21, 17};
    const size_t n = shape[0] * shape[1];
    const std::vector<T> in = random_values<T>(n);
    // A 3 x 5 box without its corners, origin (1, -2).
    const std::array<size_t, 2> size = {3, 5};
    const std::array<int64_t, 2> origin = {1, -2};
    const std::array<uint8_t, 15> mask = {0, 1, 1, 1, 0, 1, 1, 1, 1, 1, 0, 1, 1, 1, 0};
    const T cval = std::is_signed_v<T> ? T(-7) : T(7);
    std::vector<T> out(n);
    for (uint32_t mode = KP_BOX_REFLECT; mode <= KP_BOX_WRAP; ++mode)
        for (uint32_t by = KP_RANK_BY_MEDIAN; by <= KP_RANK_BY_PERCENTILE; ++by) {
            kp_rank_options o = kp_rank_options_default();
            o.size = size.data(), o.footprint = mask.data(), o.origin = origin.data();
            o.mode = mode, o.rank_by = by, o.rank = -2, o.percentile = -75.0, o.cval = double(cval);
            std::fill(out.begin(), out.end(), T(42));
            check(filter(ctx, in, out, shape, &o) == KP_OK, "rank filter");
            const std::vector<T> want = reference(in, long(shape[0]), long(shape[1]), o, cval);
            check(std::memcmp(out.data(), want.data(), n * sizeof(T)) == 0,
                  "as the direct loop: mode " + std::to_string(mode) + ", rank_by " + std::to_string(by));
        }

    // A refused call (the rank past the 11 points) writes nothing.
    std::vector<T> kept = out;
    kp_rank_options bad = kp_rank_options_default();
    bad.size = size.data(), bad.footprint = mask.data(), bad.rank_by = KP_RANK_BY_INDEX, bad.rank = 11;
    check(filter(ctx, in, out, shape, &bad) == KP_ERROR_INVALID_ARGUMENT, "rank 11 of 11 points refused");
    check(std::string(kp_last_error_message()).find("11 points") != std::string::npos, "the message names the count");
    check(std::memcmp(kept.data(), out.data(), n * sizeof(T)) == 0, "output untouched");

    if (!gpu) return;
    // On a stream of our own: the device entry point, the host bits.
    uint64_t stream = 0;
    check(kp_stream_create(ctx, &stream) == KP_OK, "stream");
    {
        DeviceBuffer din(ctx, n * sizeof(T)), dout(ctx, n * sizeof(T));
        check(kp_memcpy_htod(ctx, din.ptr, in.data(), n * sizeof(T)) == KP_OK, "htod");
        kp_rank_options o = kp_rank_options_default();
        o.size = size.data(), o.footprint = mask.data(), o.origin = origin.data();
        o.mode = KP_BOX_NEAREST, o.rank_by = KP_RANK_BY_PERCENTILE, o.percentile = 25.0;
        check(filter(ctx, in, out, shape, &o) == KP_OK, "host rank filter");
        check(kp_rank_filter_device(ctx, dtype_of<T>(), din.ptr, dout.ptr, shape.data(), 2, &o, stream) == KP_OK,
              "device rank filter");
        check(kp_stream_synchronize(ctx, stream) == KP_OK, "sync");
        std::vector<T> back(n);
        check(kp_memcpy_dtoh(ctx, back.data(), dout.ptr, n * sizeof(T)) == KP_OK, "dtoh");
        check(std::memcmp(back.data(), out.data(), n * sizeof(T)) == 0, "device bits == host bits");
        // An unknown dtype is refused, and writes nothing.
        check(kp_rank_filter_device(ctx, 0, din.ptr, dout.ptr, shape.data(), 2, &o, stream) ==
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
