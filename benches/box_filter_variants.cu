// Tuning harness for the box filter's windows 3 to 9 (not part of the pack):
// times variants of the strip kernel of csrc/stencil.cu (rows per warp H,
// rows loaded before use U, blocks per SM asked of the register allocator)
// against a device-to-device copy of the same bytes, in one process, with
// CUDA events (3 warm-up runs, median of 20), and checks every variant's
// output against a CPU reference of the reflect mode.
//
// Build (here, with the pinned toolchain) and run (on the GPU machine):
//   bash scripts/build-variants.sh box_filter_variants  ->  .gpu/box_filter_variants
//   .gpu/box_filter_variants [rows cols]
// The script also compiles in the box filter of git revision $BASELINE
// (default HEAD, its names prefixed old_) and times it as the baseline.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <random>
#include <vector>

#include "../csrc/stencil.cu"
#ifdef KP_OLD_STENCIL
#include KP_OLD_STENCIL
#endif

#include "harness.cuh"

template <typename T, int R, typename P, int MINB>
__global__ void __launch_bounds__(kp::stencil::BLOCK, MINB)
    variant(const T* __restrict__ in, T* __restrict__ out, const kp_box_params p) {
    kp::stencil::box_filter_strips<T, R, P>(in, out, p);
}

template <typename F>
static float time_ms(F launch) {
    return median_event_ms(launch, 3, 20);
}

// Reflect-mode reference (f64 accumulation) of the rows [0, check_rows) and the last rows.
static int64_t worst_at[2];
template <typename T>
static double max_error(const std::vector<T>& in, const std::vector<T>& out, int64_t rows, int64_t cols, int r) {
    auto refl = [](int64_t i, int64_t n) { return i < 0 ? -i - 1 : (i >= n ? 2 * n - 1 - i : i); };
    double worst = 0;
    for (int64_t y = 0; y < rows; y += (y < 40 || y > rows - 40) ? 1 : 97) {
        for (int64_t x = 0; x < cols; ++x) {
            double acc = 0;
            for (int dy = -r; dy <= r; ++dy)
                for (int dx = -r; dx <= r; ++dx) acc += (double)in[refl(y + dy, rows) * cols + refl(x + dx, cols)];
            acc /= (2 * r + 1) * (2 * r + 1);
            const double e = std::fabs(acc - (double)out[y * cols + x]);
            if (!(e <= worst)) {
                worst = e;
                worst_at[0] = y;
                worst_at[1] = x;
            }
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

    Bench(int64_t rows_, int64_t cols_) : rows(rows_), cols(cols_), host_in(rows_ * cols_) {
        std::mt19937_64 rng(12345);
        std::uniform_real_distribution<double> u(-1, 1);
        for (auto& v : host_in) v = (T)u(rng);
        CHECK(cudaMalloc(&in, bytes()));
        CHECK(cudaMalloc(&out, bytes()));
        CHECK(cudaMemcpy(in, host_in.data(), bytes(), cudaMemcpyHostToDevice));
        copy_ms = time_ms([&] { CHECK(cudaMemcpyAsync(out, in, bytes(), cudaMemcpyDeviceToDevice)); });
        printf("%s %lld x %lld: copy %.4f ms (%.2f TB/s, one read + one write)\n", name(), (long long)rows,
               (long long)cols, copy_ms, 2.0 * bytes() / copy_ms / 1e9);
    }
    ~Bench() {
        cudaFree(in);
        cudaFree(out);
    }
    size_t bytes() const { return rows * cols * sizeof(T); }
    static const char* name() { return sizeof(T) == 4 ? "f32" : "f64"; }

    kp_box_params params(int r, int64_t tw, int64_t th) const {
        kp_box_params p{};
        p.rows = rows;
        p.cols = cols;
        p.in_pitch = cols;
        p.out_pitch = cols;
        p.tiles_x = (cols + tw - 1) / tw;
        p.scale = 1.0 / ((2 * r + 1) * (2 * r + 1));
        p.radius = r;
        p.mode = KP_BOX_REFLECT;
        return p;
    }

    void report(const char* label, int r, float ms) {
        CHECK(cudaMemset(out, 0xff, bytes()));  // NaN poison: an unwritten point fails the check
        std::vector<T> host_out(rows * cols);
        last_launch();
        CHECK(cudaDeviceSynchronize());
        CHECK(cudaMemcpy(host_out.data(), out, bytes(), cudaMemcpyDeviceToHost));
        const double err = max_error(host_in, host_out, rows, cols, r);
        const bool ok = err < (sizeof(T) == 4 ? 1e-5 : 1e-13);  // values in [-1, 1]
        printf("  %-34s %8.4f ms  %5.1f%% of copy  max err %.1e %s", label, ms, 100.0 * copy_ms / ms, err,
               ok ? "ok\n" : "WRONG");
        if (!ok) printf(" at (%lld, %lld)\n", (long long)worst_at[0], (long long)worst_at[1]);
    }
    std::function<void()> last_launch;

    template <int R, int H, int U, int MINB>
    void strips() {
        using S = kp::stencil::StripShape<T, R>;
        const int64_t block_rows = kp::stencil::WARPS * H;
        const kp_box_params p = params(R, S::TW, block_rows);
        const unsigned grid = (unsigned)(p.tiles_x * ((rows + block_rows - 1) / block_rows));
        auto k = variant<T, R, kp::stencil::StripPolicy<H, U>, MINB>;
        cudaFuncAttributes attr;
        CHECK(cudaFuncGetAttributes(&attr, k));
        last_launch = [=] { k<<<grid, kp::stencil::BLOCK>>>(in, out, p); };
        const float ms = time_ms(last_launch);
        char label[96];
        snprintf(label, sizeof label, "r%d H=%d U=%d minb=%d (%d regs)", R, H, U, MINB, attr.numRegs);
        report(label, R, ms);
    }

#ifdef KP_OLD_STENCIL
    template <int R>
    void old_kernel(void (*k)(const T*, T*, kp_box_params)) {
        const int64_t tw = sizeof(T) == 4 ? 128 : 64, th = 32;
        const kp_box_params p = params(R, tw, th);
        const unsigned grid = (unsigned)(p.tiles_x * ((rows + th - 1) / th));
        last_launch = [=] { k<<<grid, kp::stencil::BLOCK>>>(in, out, p); };
        const float ms = time_ms(last_launch);
        char label[64];
        snprintf(label, sizeof label, "r%d previous kernel (shared tile)", R);
        report(label, R, ms);
    }
#endif
};

// The production choice first (DefaultStripPolicy: H = 8, 10 rows at once, 3
// blocks per SM), then its neighbours.
template <typename T, int R>
static void sweep(Bench<T>& b) {
    b.template strips<R, 8, 10, 3>();
    b.template strips<R, 8, 4, 4>();
    b.template strips<R, 8, 8 + 2 * R, 3>();
    b.template strips<R, 8, 8 + 2 * R, 4>();
    b.template strips<R, 8, 6, 3>();
    b.template strips<R, 16, 16 + 2 * R, 2>();
    b.template strips<R, 6, 6 + 2 * R, 3>();
}

template <typename T>
static void run(int64_t rows, int64_t cols, void (*old_r1)(const T*, T*, kp_box_params)) {
    Bench<T> b(rows, cols);
#ifdef KP_OLD_STENCIL
    b.template old_kernel<1>(old_r1);
#endif
    (void)old_r1;
    sweep<T, 1>(b);
    sweep<T, 2>(b);
    sweep<T, 3>(b);
    sweep<T, 4>(b);
}

int main(int argc, char** argv) {
    const int64_t rows = argc > 1 ? atoll(argv[1]) : 8192, cols = argc > 2 ? atoll(argv[2]) : 8192;
    cudaDeviceProp prop;
    CHECK(cudaGetDeviceProperties(&prop, 0));
    printf("%s, %d SMs\n", prop.name, prop.multiProcessorCount);
#ifdef KP_OLD_STENCIL
    run<float>(rows, cols, old_box_filter_r1_f32);
    run<double>(rows, cols, old_box_filter_r1_f64);
#else
    run<float>(rows, cols, nullptr);
    run<double>(rows, cols, nullptr);
#endif
    return 0;
}
