// The streams / events / pinned memory / normalise C ABI from C++17, with
// RAII owners for every handle kernpack gives out. Exit status 0 when every
// check passes; built and run by tests/ffi_programs.rs.
#include "kernpack.h"

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

namespace {

std::string where;

[[noreturn]] void fail(int line, const std::string &what)
{
    std::fprintf(stderr, "FAIL [%s] streams.cpp:%d: %s\n", where.c_str(), line, what.c_str());
    std::exit(1);
}

#define CHECK(cond, msg)                                  \
    do {                                                  \
        if (!(cond))                                      \
            fail(__LINE__, std::string(#cond ": ") + (msg)); \
    } while (0)

void expect(int line, kp_status got, kp_status want, const char *call)
{
    if (got != want)
        fail(line, std::string(call) + " returned " + std::to_string(got) + ", expected " +
                       std::to_string(want) + ": " + kp_last_error_message());
}
#define EXPECT(call, want) expect(__LINE__, (call), (want), #call)
#define EXPECT_OK(call) EXPECT(call, KP_OK)

void done() { std::printf("ok   %s\n", where.c_str()); }

using Context = std::unique_ptr<kp_context, decltype(&kp_context_destroy)>;

Context make_context(kp_backend backend)
{
    kp_context *raw = nullptr;
    if (kp_context_create(backend, &raw) != KP_OK)
        throw std::runtime_error(kp_last_error_message());
    return Context(raw, &kp_context_destroy);
}

// Owners of a stream, an event, pinned memory and device memory.
struct Stream {
    const kp_context *ctx;
    uint64_t handle = 0;
    explicit Stream(const kp_context *c) : ctx(c) { EXPECT_OK(kp_stream_create(ctx, &handle)); }
    ~Stream() { EXPECT_OK(kp_stream_destroy(ctx, handle)); }
    Stream(const Stream &) = delete;
    Stream &operator=(const Stream &) = delete;
};

struct Event {
    const kp_context *ctx;
    uint64_t handle = 0;
    explicit Event(const kp_context *c) : ctx(c) { EXPECT_OK(kp_event_create(ctx, &handle)); }
    ~Event() { EXPECT_OK(kp_event_destroy(ctx, handle)); }
    Event(const Event &) = delete;
    Event &operator=(const Event &) = delete;
};

template <typename T> struct Pinned {
    const kp_context *ctx;
    T *ptr = nullptr;
    size_t n;
    Pinned(const kp_context *c, size_t count) : ctx(c), n(count)
    {
        void *p = nullptr;
        EXPECT_OK(kp_host_alloc_pinned(ctx, n * sizeof(T), &p));
        ptr = static_cast<T *>(p);
    }
    ~Pinned() { EXPECT_OK(kp_host_free_pinned(ctx, ptr)); }
    Pinned(const Pinned &) = delete;
    Pinned &operator=(const Pinned &) = delete;
};

struct Device {
    const kp_context *ctx;
    uint64_t ptr = 0;
    Device(const kp_context *c, size_t bytes) : ctx(c) { EXPECT_OK(kp_device_alloc(ctx, bytes, &ptr)); }
    ~Device() { EXPECT_OK(kp_device_free(ctx, ptr)); }
    Device(const Device &) = delete;
    Device &operator=(const Device &) = delete;
};

template <typename T> std::vector<T> random_vector(std::mt19937_64 &rng, size_t n, double lo, double hi)
{
    std::uniform_real_distribution<double> u(lo, hi);
    std::vector<T> v(n);
    for (auto &x : v)
        x = static_cast<T>(u(rng));
    return v;
}

double exact_sum(const std::vector<double> &v)
{
    long double s = 0;
    for (double x : v)
        s += x;
    return static_cast<double>(s);
}

// Host entry points on any backend: the same results as a computation here.
void check_host(const kp_context *ctx, const std::string &name, std::mt19937_64 &rng)
{
    where = "host sums and batches (" + name + ")";
    auto x = random_vector<double>(rng, 54321, -0.2, 1.0);
    double sum = NAN;
    EXPECT_OK(kp_sum_f64(ctx, x.data(), x.size(), &sum));
    CHECK(std::fabs(sum - exact_sum(x)) <= 1e-11 * std::fabs(sum), std::to_string(sum));
    auto xf = random_vector<float>(rng, 777, 0.0, 1.0);
    auto xf0 = xf;
    EXPECT_OK(kp_normalize_f32(ctx, xf.data(), xf.size(), &sum));
    for (size_t i = 0; i < xf.size(); i++)
        CHECK(xf[i] == static_cast<float>(static_cast<double>(xf0[i]) * (1.0 / sum)), std::to_string(i));
    float fsum_in[3] = {1.0f, 2.0f, 3.0f};
    double fsum = 0;
    EXPECT_OK(kp_sum_f32(ctx, fsum_in, 3, &fsum));
    CHECK(fsum == 6.0, std::to_string(fsum));
    std::vector<double> zero{3.0, -3.0};
    EXPECT(kp_normalize_f64(ctx, zero.data(), zero.size(), nullptr), KP_ERROR_INVALID_ARGUMENT);
    CHECK(zero[0] == 3.0 && zero[1] == -3.0, "changed on failure");

    // Batches: lengths 0, 1, many; one zero sum.
    std::vector<int64_t> offsets{0, 0, 1, 1001, 1003, 6003};
    auto flat = random_vector<double>(rng, 6003, 0.5, 1.5);
    flat[1001] = 2.0, flat[1002] = -2.0;
    auto before = flat;
    std::vector<double> sums(5, NAN);
    std::vector<int32_t> status(5, -1);
    EXPECT_OK(kp_normalize_batched_f64(ctx, flat.data(), offsets.data(), 5, sums.data(), status.data()));
    const int32_t want[5] = {1, 0, 0, 1, 0};
    for (size_t a = 0; a < 5; a++) {
        CHECK(status[a] == want[a], "array " + std::to_string(a));
        for (size_t i = (size_t)offsets[a]; i < (size_t)offsets[a + 1]; i++) {
            double expected = want[a] ? before[i] : before[i] * (1.0 / sums[a]);
            CHECK(flat[i] == expected, "array " + std::to_string(a) + " value " + std::to_string(i));
        }
    }
    std::vector<float> flatf(6003, 1.0f);
    EXPECT_OK(kp_normalize_batched_f32(ctx, flatf.data(), offsets.data(), 5, sums.data(), status.data()));
    CHECK(sums[4] == 5000.0 && flatf[6002] == static_cast<float>(1.0 * (1.0 / 5000.0)), std::to_string(sums[4]));
    done();
}

void check_gpu(const kp_context *gpu, std::mt19937_64 &rng)
{
    where = "streams, events, pinned copies, device normalise (gpu)";
    constexpr size_t n = 1 << 20, arrays = 4;
    std::vector<std::unique_ptr<Stream>> streams;
    for (int i = 0; i < 2; i++)
        streams.push_back(std::make_unique<Stream>(gpu));
    Event start(gpu), stop(gpu);
    float ms = -1.0f;
    EXPECT(kp_event_elapsed_ms(gpu, start.handle, stop.handle, &ms), KP_ERROR_INVALID_ARGUMENT);
    std::vector<std::unique_ptr<Pinned<float>>> host;
    std::vector<std::unique_ptr<Device>> dev;
    Device sums(gpu, arrays * sizeof(double)), statuses(gpu, arrays * sizeof(int32_t));
    Pinned<double> sums_host(gpu, arrays);
    Pinned<int32_t> status_host(gpu, arrays);
    std::vector<std::vector<float>> inputs;
    EXPECT_OK(kp_event_record(gpu, start.handle, streams[0]->handle));
    for (size_t a = 0; a < arrays; a++) {
        uint64_t s = streams[a % 2]->handle;
        inputs.push_back(random_vector<float>(rng, n, 0.0, 2.0));
        host.push_back(std::make_unique<Pinned<float>>(gpu, n));
        std::memcpy(host[a]->ptr, inputs[a].data(), n * sizeof(float));
        dev.push_back(std::make_unique<Device>(gpu, n * sizeof(float)));
        EXPECT_OK(kp_stream_wait_event(gpu, s, start.handle));
        EXPECT_OK(kp_memcpy_htod_async(gpu, dev[a]->ptr, host[a]->ptr, n * sizeof(float), s));
        EXPECT_OK(kp_sum_device_f32(gpu, dev[a]->ptr, n, sums.ptr + a * sizeof(double), s));
        EXPECT_OK(kp_normalize_device_f32(gpu, dev[a]->ptr, n, sums.ptr + a * sizeof(double),
                                          statuses.ptr + a * sizeof(int32_t), s));
        EXPECT_OK(kp_memcpy_dtoh_async(gpu, host[a]->ptr, dev[a]->ptr, n * sizeof(float), s));
        EXPECT_OK(kp_memcpy_dtoh_async(gpu, sums_host.ptr + a, sums.ptr + a * sizeof(double), sizeof(double), s));
        EXPECT_OK(kp_memcpy_dtoh_async(gpu, status_host.ptr + a, statuses.ptr + a * sizeof(int32_t),
                                       sizeof(int32_t), s));
    }
    Event joined(gpu);
    EXPECT_OK(kp_event_record(gpu, joined.handle, streams[1]->handle));
    EXPECT_OK(kp_stream_wait_event(gpu, streams[0]->handle, joined.handle));
    EXPECT_OK(kp_event_record(gpu, stop.handle, streams[0]->handle));
    EXPECT_OK(kp_event_synchronize(gpu, stop.handle));
    EXPECT_OK(kp_event_elapsed_ms(gpu, start.handle, stop.handle, &ms));
    CHECK(ms > 0.0f, std::to_string(ms));
    for (size_t a = 0; a < arrays; a++) {
        CHECK(status_host.ptr[a] == 0, "status of array " + std::to_string(a));
        double inv = 1.0 / sums_host.ptr[a];
        for (size_t i = 0; i < n; i += 997)
            CHECK(host[a]->ptr[i] == static_cast<float>(static_cast<double>(inputs[a][i]) * inv),
                  "array " + std::to_string(a) + " value " + std::to_string(i));
    }
    std::printf("     %zu arrays of %zu floats on 2 streams: %.3f ms\n", arrays, n, static_cast<double>(ms));

    // The batch on the device, f64, on the second stream.
    std::vector<int64_t> offsets{0, 3, 3, 1000};
    auto flat = random_vector<double>(rng, 1000, 1.0, 2.0);
    Device dflat(gpu, flat.size() * sizeof(double)), doff(gpu, offsets.size() * sizeof(int64_t));
    uint64_t s = streams[1]->handle;
    EXPECT_OK(kp_memcpy_htod_async(gpu, dflat.ptr, flat.data(), flat.size() * sizeof(double), s));
    EXPECT_OK(kp_memcpy_htod_async(gpu, doff.ptr, offsets.data(), offsets.size() * sizeof(int64_t), s));
    EXPECT_OK(kp_normalize_batched_device_f64(gpu, dflat.ptr, flat.size(), doff.ptr, 3, sums.ptr, statuses.ptr, s));
    std::vector<double> back(flat.size()), bsums(3);
    std::vector<int32_t> bstatus(3);
    EXPECT_OK(kp_memcpy_dtoh_async(gpu, back.data(), dflat.ptr, back.size() * sizeof(double), s));
    EXPECT_OK(kp_memcpy_dtoh_async(gpu, bsums.data(), sums.ptr, 3 * sizeof(double), s));
    EXPECT_OK(kp_memcpy_dtoh_async(gpu, bstatus.data(), statuses.ptr, 3 * sizeof(int32_t), s));
    EXPECT_OK(kp_stream_synchronize(gpu, s));
    CHECK(bstatus[0] == 0 && bstatus[1] == 1 && bstatus[2] == 0, "batch statuses");
    CHECK(back[999] == flat[999] * (1.0 / bsums[2]), "batch value");
    std::vector<float> flatf(1000, 0.5f);
    Device dflatf(gpu, 1000 * sizeof(float));
    EXPECT_OK(kp_memcpy_htod(gpu, dflatf.ptr, flatf.data(), 1000 * sizeof(float)));
    EXPECT_OK(kp_normalize_batched_device_f32(gpu, dflatf.ptr, 1000, doff.ptr, 3, sums.ptr, statuses.ptr, 0));
    EXPECT_OK(kp_sum_device_f64(gpu, dflat.ptr, 3, sums.ptr, 0));
    EXPECT_OK(kp_normalize_device_f64(gpu, dflat.ptr, 3, sums.ptr, statuses.ptr, 0));
    EXPECT_OK(kp_memcpy_dtoh(gpu, flatf.data(), dflatf.ptr, 1000 * sizeof(float)));
    CHECK(flatf[999] == static_cast<float>(0.5 * (1.0 / 498.5)), std::to_string(flatf[999]));

    // A second destroy of the same handle is rejected, never passed to the driver.
    uint64_t extra = 0;
    EXPECT_OK(kp_event_create(gpu, &extra));
    EXPECT_OK(kp_event_destroy(gpu, extra));
    EXPECT(kp_event_destroy(gpu, extra), KP_ERROR_INVALID_ARGUMENT);
    EXPECT(kp_stream_destroy(gpu, extra), KP_ERROR_INVALID_ARGUMENT);
    done();
}

}  // namespace

int main()
{
    try {
        std::mt19937_64 rng(0x5eed0004);
        Context cpu = make_context(KP_BACKEND_CPU);
        Context autoctx = make_context(KP_BACKEND_AUTO);
        int32_t is_gpu = 0;
        EXPECT_OK(kp_context_is_gpu(autoctx.get(), &is_gpu));
        const char *require = std::getenv("KERNPACK_REQUIRE_GPU");
        where = "contexts";
        CHECK(is_gpu || !require || std::string(require) != "1", "KERNPACK_REQUIRE_GPU=1 but no GPU");
        std::printf("     AUTO context runs on the %s\n", is_gpu ? "GPU" : "CPU");

        check_host(cpu.get(), "cpu", rng);
        where = "GPU-only functions on a CPU context";
        uint64_t handle = 5;
        void *p = nullptr;
        EXPECT(kp_stream_create(cpu.get(), &handle), KP_ERROR_NO_GPU);
        EXPECT(kp_event_create(cpu.get(), &handle), KP_ERROR_NO_GPU);
        EXPECT(kp_host_alloc_pinned(cpu.get(), 16, &p), KP_ERROR_NO_GPU);
        EXPECT(kp_normalize_device_f32(cpu.get(), 0x1000, 4, 0x1000, 0x1000, 0), KP_ERROR_NO_GPU);
        EXPECT(kp_normalize_batched_device_f64(cpu.get(), 0x1000, 4, 0x1000, 1, 0x1000, 0x1000, 0), KP_ERROR_NO_GPU);
        CHECK(handle == 5 && p == nullptr, "outputs written on failure");
        done();
        if (is_gpu) {
            check_host(autoctx.get(), "auto = gpu", rng);
            check_gpu(autoctx.get(), rng);
        }
        std::printf("all checks passed (C++, %s)\n", is_gpu ? "GPU" : "CPU only");
        return 0;
    } catch (const std::exception &e) {
        std::fprintf(stderr, "FAIL: %s\n", e.what());
        return 1;
    }
}
