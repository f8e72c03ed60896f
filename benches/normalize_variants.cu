// Tuning harness for the fused normalisation of arrays that fit in L2 (not
// part of the pack): variants of csrc/reduce.cu's normalize_fused (threads
// per block, vectors in flight per thread, how much of each block's chunk it
// keeps in shared memory across the grid sync) timed
// with CUDA events (3 warm-up runs, median of 50) against the production
// kernel on 10^7 f32, every result on the same input checked against the
// production kernel's.
//
//   bash scripts/build-variants.sh normalize_variants  ->  .gpu/normalize_variants [n]
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <random>
#include <vector>

#include "../csrc/reduce.cu"

#include "harness.cuh"

template <int THREADS, int VECS, int KEEP>
__global__ void __launch_bounds__(THREADS)
    variant(float* x, int64_t n, double* partials, double* sum, int* status) {
    kp::reduce::normalize_fused<float, THREADS, VECS, KEEP>(x, n, partials, sum, status);
}

struct Bench {
    int64_t n;
    float *x, *pristine;
    double *partials, *sum;
    int* status;
    std::vector<float> reference;  // the production kernel's result
    int sms;

    explicit Bench(int64_t n_) : n(n_) {
        cudaDeviceProp prop;
        CHECK(cudaGetDeviceProperties(&prop, 0));
        sms = prop.multiProcessorCount;
        printf("%s, %d SMs, L2 %d MB; n = %lld f32\n", prop.name, sms, prop.l2CacheSize >> 20, (long long)n);
        std::vector<float> host(n);
        std::mt19937_64 rng(7);
        std::uniform_real_distribution<float> u(0.0f, 1.0f);
        for (auto& v : host) v = u(rng);
        CHECK(cudaMalloc(&x, n * sizeof(float)));
        CHECK(cudaMalloc(&pristine, n * sizeof(float)));
        CHECK(cudaMalloc(&partials, 65536 * sizeof(double)));
        CHECK(cudaMalloc(&sum, sizeof(double)));
        CHECK(cudaMalloc(&status, sizeof(int)));
        CHECK(cudaMemcpy(pristine, host.data(), n * sizeof(float), cudaMemcpyHostToDevice));
    }

    // Median of 50 event timings of `launch` after 3 warm-ups, normalising the
    // same array again and again (as `kernpack bench reduce` does); then one
    // run on the pristine input, whose result is returned by result().
    float time(const std::function<void()>& launch) {
        CHECK(cudaMemcpy(x, pristine, n * sizeof(float), cudaMemcpyDeviceToDevice));
        const float ms = median_event_ms(launch, 3, 50);
        CHECK(cudaMemcpy(x, pristine, n * sizeof(float), cudaMemcpyDeviceToDevice));
        launch();
        CHECK(cudaDeviceSynchronize());
        return ms;
    }

    std::vector<float> result() {
        std::vector<float> out(n);
        CHECK(cudaMemcpy(out.data(), x, n * sizeof(float), cudaMemcpyDeviceToHost));
        return out;
    }

    template <typename K>
    unsigned full_grid(K kernel, int threads, size_t smem) {
        int per_sm = 0;
        CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, threads, smem));
        return (unsigned)(per_sm * sms);
    }

    void production() {
        auto k = normalize_fused_f32;
        const unsigned grid = full_grid(k, kp::reduce::FUSED_THREADS, 0);
        auto launch = [&] {
            void* args[] = {&x, &n, &partials, &sum, &status};
            CHECK(cudaLaunchCooperativeKernel((void*)k, grid, kp::reduce::FUSED_THREADS, args, 0, 0));
        };
        const float ms = time(launch);
        reference = result();
        printf("  %-44s %8.2f us  (grid %u)\n", "production normalize_fused_f32", ms * 1e3, grid);
    }

    template <int THREADS, int VECS, int KEEP>
    void variant() {
        auto k = ::variant<THREADS, VECS, KEEP>;
        const unsigned grid = full_grid(k, THREADS, 0);
        auto launch = [&] {
            void* args[] = {&x, &n, &partials, &sum, &status};
            CHECK(cudaLaunchCooperativeKernel((void*)k, grid, THREADS, args, 0, 0));
        };
        const float ms = time(launch);
        // The chunks follow the grid, so other grids sum in another order: compare within 2 ulp.
        const std::vector<float> got = result();
        double worst = 0;
        for (int64_t i = 0; i < n; ++i)
            worst = std::max(worst, (double)std::fabs(got[i] - reference[i]) / std::fabs(reference[i]));
        const char* check = worst == 0 ? "bitwise equal" : worst < 2.4e-7 ? "within 2 ulp" : "WRONG";
        char label[96];
        snprintf(label, sizeof label, "%d threads, %d in flight, keep %d", THREADS, VECS, KEEP);
        printf("  %-44s %8.2f us  (grid %u) %s\n", label, ms * 1e3, grid, check);
    }
};

int main(int argc, char** argv) {
    Bench b(argc > 1 ? atoll(argv[1]) : 10000000);
    b.production();  // FUSED_THREADS, FUSED_VECS, FUSED_KEEP
    b.variant<256, 2, 0>();  // the previous production kernel
    b.variant<512, 4, 0>();
    b.variant<256, 4, 8>();
    b.variant<256, 8, 8>();
    b.variant<512, 8, 5>();
    b.variant<1024, 4, 2>();
    b.production();
    return 0;
}
