// Tuning harness for the band box filter of csrc/stencil.cu (windows with
// a ring of size_y rows in shared memory; not part of the pack): times
// variants (band columns per thread C, rows per step R, blocks per chunk)
// beside the warp-per-segment running-sum kernel and a device-to-device copy
// of the same bytes, in one process, with CUDA events (3 warm-up runs,
// median of 20), and checks every output against a CPU reference of the
// reflect mode (direct double sums over sampled rows: the first and last 40
// and every 97th).
//
// Build (here, with the pinned toolchain) and run (on the GPU machine):
//   bash scripts/build-variants.sh box_filter_band  ->  .gpu/box_filter_band
//   .gpu/box_filter_band [rows cols [sizes...]]   (sizes: 31 or 17x40)
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "../csrc/stencil.cu"
#include "harness.cuh"

template <typename T, int C, int R, int MINB>
__global__ void __launch_bounds__(KP_BOX_BAND_THREADS, MINB)
    band_variant(const T* __restrict__ in, T* __restrict__ out, const kp_box_run_params p) {
    extern __shared__ double variant_smem[];
    kp::stencil::box_filter_band<T, C, R>(in, out, p, variant_smem);
}

template <typename T, int K>
__global__ void __launch_bounds__(32 * KP_BOX_RUN_WARPS)
    running_variant(const T* __restrict__ in, T* __restrict__ out, const kp_box_run_params p) {
    __shared__ double prefix[KP_BOX_RUN_WARPS][32 * K + 1];
    kp::stencil::box_filter_running<T, K>(in, out, p, prefix[threadIdx.x / 32]);
}

static int64_t refl(int64_t i, int64_t n) {
    while (i < 0 || i >= n) i = i < 0 ? -i - 1 : 2 * n - 1 - i;
    return i;
}

// Worst |reference - out| over the sampled rows.
template <typename T>
static double max_error(const std::vector<T>& in, const std::vector<T>& out, int64_t rows, int64_t cols, int sy,
                        int sx) {
    const int by = sy / 2, bx = sx / 2;
    double worst = 0;
    std::vector<double> colsum(cols);
    for (int64_t y = 0; y < rows; y += (y < 40 || y > rows - 40) ? 1 : 97) {
        for (int64_t x = 0; x < cols; ++x) {
            double s = 0;
            for (int d = 0; d < sy; ++d) s += (double)in[refl(y - by + d, rows) * cols + x];
            colsum[x] = s;
        }
        for (int64_t x = 0; x < cols; ++x) {
            double s = 0;
            for (int d = 0; d < sx; ++d) s += colsum[refl(x - bx + d, cols)];
            const double want = s / ((double)sy * sx);
            const double e = std::fabs(want - (double)out[y * cols + x]);
            if (!(e <= worst)) worst = e;
        }
    }
    return worst;
}

template <typename T>
struct Bench {
    int64_t rows, cols;
    T *in, *out;
    std::vector<T> host_in;
    float copy_ms;
    int sms;

    Bench(int64_t rows_, int64_t cols_) : rows(rows_), cols(cols_), host_in(rows_ * cols_) {
        std::mt19937_64 rng(std::random_device{}());
        std::uniform_real_distribution<double> u(-1, 1);
        for (auto& v : host_in) v = (T)u(rng);
        CHECK(cudaMalloc(&in, bytes()));
        CHECK(cudaMalloc(&out, bytes()));
        CHECK(cudaMemcpy(in, host_in.data(), bytes(), cudaMemcpyHostToDevice));
        copy_ms = median_event_ms([&] { CHECK(cudaMemcpyAsync(out, in, bytes(), cudaMemcpyDeviceToDevice)); }, 3,
                                  20);
        CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
        printf("%s %lld x %lld: copy %.4f ms (%.2f TB/s, one read + one write)\n", name(), (long long)rows,
               (long long)cols, copy_ms, 2.0 * bytes() / copy_ms / 1e9);
    }
    ~Bench() {
        cudaFree(in);
        cudaFree(out);
    }
    size_t bytes() const { return rows * cols * sizeof(T); }
    static const char* name() { return sizeof(T) == 4 ? "f32" : "f64"; }

    kp_box_run_params params(int sy, int sx, int64_t width, int64_t chunk_rows) const {
        kp_box_run_params p{};
        p.rows = rows;
        p.cols = cols;
        p.in_pitch = cols;
        p.out_pitch = cols;
        p.tiles_x = (cols + width - 1) / width;
        p.chunk_rows = chunk_rows;
        p.size_y = sy;
        p.size_x = sx;
        p.before_y = sy / 2;
        p.before_x = sx / 2;
        p.scale = 1.0 / ((double)sy * sx);
        p.mode = KP_BOX_REFLECT;
        return p;
    }

    std::function<void()> last_launch;
    void report(const std::string& label, int sy, int sx, float ms) {
        CHECK(cudaMemset(out, 0xff, bytes()));  // NaN poison: an unwritten point fails the check
        std::vector<T> host_out(rows * cols);
        last_launch();
        CHECK(cudaDeviceSynchronize());
        CHECK(cudaMemcpy(host_out.data(), out, bytes(), cudaMemcpyDeviceToHost));
        const double err = max_error(host_in, host_out, rows, cols, sy, sx);
        const bool ok = err < (sizeof(T) == 4 ? 2e-6 : 1e-13);  // values in [-1, 1]
        printf("  %-56s %8.4f ms  %5.1f%% of copy  max err %.1e %s\n", label.c_str(), ms, 100.0 * copy_ms / ms, err,
               ok ? "ok" : "WRONG");
    }

    // waves: resident blocks x waves blocks in all (chunks of rows as long as that gives).
    template <int C, int R, int MINB>
    void band(int sy, int sx, double waves) {
        using B = kp::stencil::Band<T, C, R>;
        auto k = band_variant<T, C, R, MINB>;
        const size_t smem = B::bytes(sy);
        if (smem > 227 * 1024) return;
        CHECK(cudaFuncSetAttribute(k, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem));
        int per_sm = 0;
        CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, k, KP_BOX_BAND_THREADS, smem));
        const int64_t width = B::IW - sx + 1;
        if (width < 32) return;
        const int64_t tiles_x = (cols + width - 1) / width;
        const int64_t blocks_wanted = std::max<int64_t>(1, (int64_t)(per_sm * sms * waves));
        const int64_t chunks = std::max<int64_t>(1, std::min<int64_t>(rows, blocks_wanted / tiles_x));
        const int64_t chunk_rows = (rows + chunks - 1) / chunks;
        const kp_box_run_params p = params(sy, sx, width, chunk_rows);
        const unsigned grid = (unsigned)(tiles_x * ((rows + chunk_rows - 1) / chunk_rows));
        cudaFuncAttributes attr;
        CHECK(cudaFuncGetAttributes(&attr, k));
        last_launch = [=] { k<<<grid, KP_BOX_BAND_THREADS, smem>>>(in, out, p); };
        const float ms = median_event_ms(last_launch, 3, 20);
        char label[128];
        snprintf(label, sizeof label, "band C=%d R=%d minb %d w%.0f (%d/SM, %lld rows, %d regs)", C, R, MINB, waves,
                 per_sm, (long long)chunk_rows, attr.numRegs);
        report(label, sy, sx, ms);
    }

    // The warp-per-segment kernel as launch_running (src/gpu/stencil.rs) runs it.
    void running(int sy, int sx) {
        const bool wide = sx + 128 > 32 * KP_BOX_RUN_K_NARROW + 1;
        const int64_t segment = 32 * (wide ? KP_BOX_RUN_K_WIDE : KP_BOX_RUN_K_NARROW);
        const int64_t width = segment + 1 - sx;
        const int64_t tiles_x = (cols + width - 1) / width;
        const int64_t seed_rows = std::min<int64_t>(sy, 4 * rows);
        const int64_t for_warps = (rows * tiles_x + 16 * sms - 1) / (16 * sms);
        const int64_t chunk_rows = std::min(std::max(std::max(for_warps, 4 * seed_rows), (int64_t)32), rows);
        const int64_t warps = tiles_x * ((rows + chunk_rows - 1) / chunk_rows);
        const unsigned grid = (unsigned)((warps + KP_BOX_RUN_WARPS - 1) / KP_BOX_RUN_WARPS);
        const kp_box_run_params p = params(sy, sx, width, chunk_rows);
        auto k = wide ? running_variant<T, KP_BOX_RUN_K_WIDE> : running_variant<T, KP_BOX_RUN_K_NARROW>;
        last_launch = [=] { k<<<grid, 32 * KP_BOX_RUN_WARPS>>>(in, out, p); };
        report("warp per segment (running, as shipped)", sy, sx, median_event_ms(last_launch, 3, 20));
    }
};

template <typename T>
static void run(int64_t rows, int64_t cols, const std::vector<std::pair<int, int>>& sizes) {
    Bench<T> b(rows, cols);
    for (auto [sy, sx] : sizes) {
        printf(" %d x %d\n", sy, sx);
        b.running(sy, sx);
        // The shipped shape (C = 1, R = 8) first. Measured on an H200 and
        // dropped (PERF.md): two batches of loads in flight, 3 blocks per SM
        // (80 registers), C = 2, R = 4.
        b.template band<1, 8, 1>(sy, sx, 1.0);
        b.template band<1, 8, 1>(sy, sx, 2.0);
        b.template band<1, 16, 1>(sy, sx, 1.0);
    }
}

int main(int argc, char** argv) {
    const int64_t rows = argc > 1 ? atoll(argv[1]) : 8192, cols = argc > 2 ? atoll(argv[2]) : 8192;
    std::vector<std::pair<int, int>> sizes;
    for (int a = 3; a < argc; ++a) {
        int sy = 0, sx = 0;
        if (sscanf(argv[a], "%dx%d", &sy, &sx) == 2) sizes.push_back({sy, sx});
        else sizes.push_back({atoi(argv[a]), atoi(argv[a])});
    }
    if (sizes.empty()) sizes = {{3, 3}, {9, 9}, {15, 15}, {31, 31}, {45, 45}, {63, 63}, {8, 8}, {17, 40}};
    cudaDeviceProp prop;
    CHECK(cudaGetDeviceProperties(&prop, 0));
    printf("%s, %d SMs\n", prop.name, prop.multiProcessorCount);
    run<float>(rows, cols, sizes);
    run<double>(rows, cols, sizes);
    return 0;
}
