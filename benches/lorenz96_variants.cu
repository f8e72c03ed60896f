// Tuning harness for the Lorenz 96 kernels (not part of the pack): times the
// block kernel (lorenz96_T, several members per 256-thread block through
// shared memory) against the lane kernels (lorenz96_lanes_pP_T, a member on
// N / P lanes of a warp, shuffles between lanes) for N = 40, in one process,
// with CUDA events (2 warm-up runs, median of 7), and reports how far the lane
// kernels' states are from the block kernel's after 10 steps.
//
// Build (here, with the pinned toolchain) and run (on the GPU machine):
//   bash scripts/build-variants.sh lorenz96_variants  ->  .gpu/lorenz96_variants
//   .gpu/lorenz96_variants [members steps]
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <vector>

#include <cuda_runtime.h>

#include "../csrc/lorenz.cu"
#include "harness.cuh"

template <typename T>
struct Run {
    int64_t members, steps;
    int n;
    T *z0, *out;
    int sms;
    void block(int64_t steps_) const {
        const int mpb = (int)std::min<int64_t>(std::max<int64_t>((members + 2 * sms - 1) / (2 * sms), 1),
                                               2048 / n);
        const int64_t grid = (members + mpb - 1) / mpb;
        launch_block(grid, mpb, steps_);
    }
    void launch_block(int64_t grid, int mpb, int64_t steps_) const;
    template <int P>
    void lanes(int64_t steps_) const {
        const int lanes_ = n / P, per_warp = 32 / lanes_;
        const int64_t warps = (members + per_warp - 1) / per_warp;
        const int64_t grid = (warps * 32 + kp::lorenz::L96_LANES_BLOCK - 1) / kp::lorenz::L96_LANES_BLOCK;
        launch_lanes<P>(grid, lanes_, steps_);
    }
    template <int P>
    void launch_lanes(int64_t grid, int lanes_, int64_t steps_) const;
};

// F = 8, dt = 0.01, no trajectory; `noise` the stochastic forcing's s sqrt(dt) (0: none).
static double noise = 0.0;
static kp_l96_run run_of(int n, int64_t steps) { return kp_l96_run{8.0, 0.01, noise, 7, 0, steps, 0, n, 0}; }

template <>
void Run<double>::launch_block(int64_t grid, int mpb, int64_t s) const {
    lorenz96_f64<<<grid, kp::lorenz::L96_BLOCK>>>(z0, out, nullptr, members, mpb, run_of(n, s));
}
template <>
void Run<float>::launch_block(int64_t grid, int mpb, int64_t s) const {
    lorenz96_f32<<<grid, kp::lorenz::L96_BLOCK>>>(z0, out, nullptr, members, mpb, run_of(n, s));
}
#define LANES(P)                                                                                        \
    template <>                                                                                         \
    template <>                                                                                         \
    void Run<double>::launch_lanes<P>(int64_t grid, int l, int64_t s) const {                           \
        lorenz96_lanes_p##P##_f64<<<grid, kp::lorenz::L96_LANES_BLOCK>>>(z0, out, nullptr, members, l,  \
                                                                         run_of(n, s));                 \
    }                                                                                                   \
    template <>                                                                                         \
    template <>                                                                                         \
    void Run<float>::launch_lanes<P>(int64_t grid, int l, int64_t s) const {                            \
        lorenz96_lanes_p##P##_f32<<<grid, kp::lorenz::L96_LANES_BLOCK>>>(z0, out, nullptr, members, l,  \
                                                                         run_of(n, s));                 \
    }
LANES(5)
LANES(10)

template <typename T>
static std::vector<T> fetch(const T* d, size_t count) {
    std::vector<T> h(count);
    CHECK(cudaMemcpy(h.data(), d, count * sizeof(T), cudaMemcpyDeviceToHost));
    return h;
}

template <typename T>
static double worst_relative(const std::vector<T>& a, const std::vector<T>& b) {
    double worst = 0, scale = 0;
    for (size_t i = 0; i < a.size(); ++i) {
        worst = std::max(worst, std::fabs((double)a[i] - (double)b[i]));
        scale = std::max(scale, std::fabs((double)b[i]));
    }
    return worst / scale;
}

template <typename T>
static void measure(const char* name, int64_t members, int64_t steps) {
    const int n = 40;
    const size_t count = (size_t)members * n;
    std::vector<T> h(count);
    std::mt19937_64 rng(7);
    std::uniform_real_distribution<double> u(-1.0, 1.0);
    for (auto& v : h) v = T(8.0 + u(rng));
    Run<T> r{members, steps, n, nullptr, nullptr, 0};
    CHECK(cudaDeviceGetAttribute(&r.sms, cudaDevAttrMultiProcessorCount, 0));
    CHECK(cudaMalloc(&r.z0, count * sizeof(T)));
    CHECK(cudaMalloc(&r.out, count * sizeof(T)));
    CHECK(cudaMemcpy(r.z0, h.data(), count * sizeof(T), cudaMemcpyHostToDevice));
    r.block(10);
    CHECK(cudaDeviceSynchronize());
    const auto want = fetch(r.out, count);
    r.template lanes<5>(10);
    const auto p5 = fetch(r.out, count);
    r.template lanes<10>(10);
    const auto p10 = fetch(r.out, count);
    const float block = median_event_ms([&] { r.block(steps); }, 2, 7);
    const float l5 = median_event_ms([&] { r.template lanes<5>(steps); }, 2, 7);
    const float l10 = median_event_ms([&] { r.template lanes<10>(steps); }, 2, 7);
    // ~21 FP64 (or FP32) instructions per site and step on the lanes kernels:
    // per stage 3 for the tendency, 1 increment FMA, 1 stage-input FMA; 1 more at the end.
    noise = 0.1 * std::sqrt(0.01);
    const float noisy = median_event_ms([&] { r.template lanes<10>(steps); }, 2, 7);
    noise = 0.0;
    const double ops = 21.0 * members * n * steps;
    printf("%s N=40 members=%lld steps=%lld: block %.3f ms | lanes P=5 %.3f ms (%.2e rel after 10 steps) | "
           "lanes P=10 %.3f ms (%.2e), with noise %.3f ms | %.1f G site-steps/s, %.2f T instr/s at the best\n",
           name, (long long)members, (long long)steps, block, l5, worst_relative(p5, want), l10,
           worst_relative(p10, want), noisy, members * n * steps / (std::min(l5, l10) * 1e6),
           ops / (std::min(l5, l10) * 1e9));
    CHECK(cudaFree(r.z0));
    CHECK(cudaFree(r.out));
}

int main(int argc, char** argv) {
    const int64_t members = argc > 1 ? atoll(argv[1]) : 100000;
    const int64_t steps = argc > 2 ? atoll(argv[2]) : 1000;
    measure<double>("f64", members, steps);
    measure<float>("f32", members, steps);
    return 0;
}
