// The coupled F/G system, whole RK4 runs on
// the device:
//     dF/dt = -2i F - i delta (2G - 1),   dG/dt = -i (conj(delta) F - delta conj(F))
// elementwise over N x N complex F and G, delta held constant within a step,
// then delta = sum(F), recorded after every step.
//
// Every element's step is independent given delta, so a step is: RK4 of each
// element (four stages fused in registers), then one global sum.
//
// Determinism. The sum has a fixed shape that depends on the element count M
// alone, never on the grid or the device:
//   - chunk c = elements [c * CHUNK, (c + 1) * CHUNK), element c*CHUNK + t held
//     by thread t of the block that owns the chunk (0 past the end);
//   - chunk sum: each warp's 32 values by the shuffle tree `warp_tree`, then
//     the 32 warp sums by the same tree;
//   - delta: lane l of one warp adds chunk sums l, l + 32, l + 64, ... in that
//     order, then `warp_tree` over the 32 lanes.
// Sums are in f64 for both element types (the f32 elements convert exactly)
// and rounded once to the element type. Element arithmetic uses explicitly
// rounded IEEE operations (no FMA contraction), in the order written here.
// So the cooperative path, the per-step launch path and the CPU reference
// (src/reference/fg.rs, which replays the same operations and tree) perform
// the same operations in the same order: results are bitwise identical from
// run to run and between the two GPU paths; the CPU reference differs only
// where single precision meets subnormals (the pack flushes them to zero).
#include <cooperative_groups.h>

#include "common.cuh"

namespace kp {
namespace fg {

constexpr int CHUNK = 1024;  // threads per block = elements per chunk = 32 warps of 32
constexpr int WARPS = CHUNK / 32;
constexpr unsigned FULL_MASK = 0xffffffffu;

template <typename T> struct Vec2;
template <> struct Vec2<float> { using type = float2; };
template <> struct Vec2<double> { using type = double2; };

// Explicitly rounded IEEE operations: the compiler may not fuse a multiply
// and an add into an FMA, so each result is rounded as the CPU reference rounds it.
__device__ __forceinline__ float mul(float a, float b) { return __fmul_rn(a, b); }
__device__ __forceinline__ double mul(double a, double b) { return __dmul_rn(a, b); }
__device__ __forceinline__ float add(float a, float b) { return __fadd_rn(a, b); }
__device__ __forceinline__ double add(double a, double b) { return __dadd_rn(a, b); }
__device__ __forceinline__ float sub(float a, float b) { return __fsub_rn(a, b); }
__device__ __forceinline__ double sub(double a, double b) { return __dsub_rn(a, b); }

// One element of the state. G's derivative is real (see rhs), so Im G never
// changes and is kept as a constant.
template <typename T>
struct Element {
    T fr, fi, gr, gi;
};

// Derivatives at (F, G) for a given delta:
//   dF = -2i F - i delta w, w = 2G - 1:  (2 fi + (dr wi + di wr),  -2 fr - (dr wr - di wi))
//   dG = -i (conj(delta) F - delta conj(F)) = 2 (dr fi - di fr), purely real.
template <typename T>
__device__ __forceinline__ void rhs(T fr, T fi, T gr, T gi, T dr, T di, T& dfr, T& dfi, T& dgr) {
    const T wr = sub(add(gr, gr), T(1));
    const T wi = add(gi, gi);
    dfr = add(add(fi, fi), add(mul(dr, wi), mul(di, wr)));
    dfi = sub(-add(fr, fr), sub(mul(dr, wr), mul(di, wi)));
    const T s = sub(mul(dr, fi), mul(di, fr));
    dgr = add(s, s);
}

// Classic RK4 in MODELS.md's order: k = dt f(.), stages at z + k1/2, z + k2/2,
// z + k3, and z += ((k1/6 + k2/3) + k3/3) + k4/6 (the increment summed first).
template <typename T>
__device__ __forceinline__ void rk4(Element<T>& z, T dr, T di, T dt) {
    const T half = T(0.5), sixth = T(1.0 / 6.0), third = T(1.0 / 3.0);
    T a, b, c;
    rhs(z.fr, z.fi, z.gr, z.gi, dr, di, a, b, c);
    const T k1f = mul(dt, a), k1i = mul(dt, b), k1g = mul(dt, c);
    rhs(add(z.fr, mul(k1f, half)), add(z.fi, mul(k1i, half)), add(z.gr, mul(k1g, half)), z.gi, dr, di, a, b, c);
    const T k2f = mul(dt, a), k2i = mul(dt, b), k2g = mul(dt, c);
    rhs(add(z.fr, mul(k2f, half)), add(z.fi, mul(k2i, half)), add(z.gr, mul(k2g, half)), z.gi, dr, di, a, b, c);
    const T k3f = mul(dt, a), k3i = mul(dt, b), k3g = mul(dt, c);
    rhs(add(z.fr, k3f), add(z.fi, k3i), add(z.gr, k3g), z.gi, dr, di, a, b, c);
    const T k4f = mul(dt, a), k4i = mul(dt, b), k4g = mul(dt, c);
    z.fr = add(z.fr, add(add(add(mul(k1f, sixth), mul(k2f, third)), mul(k3f, third)), mul(k4f, sixth)));
    z.fi = add(z.fi, add(add(add(mul(k1i, sixth), mul(k2i, third)), mul(k3i, third)), mul(k4i, sixth)));
    z.gr = add(z.gr, add(add(add(mul(k1g, sixth), mul(k2g, third)), mul(k3g, third)), mul(k4g, sixth)));
}

__device__ __forceinline__ double2 add2(double2 a, double2 b) {
    return make_double2(__dadd_rn(a.x, b.x), __dadd_rn(a.y, b.y));
}

// Sum over the 32 lanes of a warp, the result in lane 0: at each level lane i
// adds lane i + off (off = 16, 8, 4, 2, 1). The CPU reference replays this tree.
__device__ __forceinline__ double2 warp_tree(double2 v) {
#pragma unroll
    for (int off = 16; off > 0; off >>= 1) {
        v.x = __dadd_rn(v.x, __shfl_down_sync(FULL_MASK, v.x, off));
        v.y = __dadd_rn(v.y, __shfl_down_sync(FULL_MASK, v.y, off));
    }
    return v;
}

// Sums of K chunks at once (one value per thread and chunk), each the warp
// trees then the tree of the 32 warp sums; valid in warp 0 lane 0. Ends with
// warp 0 having read `scratch`: the caller synchronises before reusing it.
template <int K>
__device__ __forceinline__ void chunk_sums(double2 (&v)[K], double2 (&scratch)[K][WARPS]) {
    const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
#pragma unroll
    for (int j = 0; j < K; ++j) {
        const double2 w = warp_tree(v[j]);
        if (lane == 0) scratch[j][warp] = w;
    }
    __syncthreads();
    if (warp == 0) {
#pragma unroll
        for (int j = 0; j < K; ++j) v[j] = warp_tree(scratch[j][lane]);
    }
}

// delta from the chunk sums, called by one whole warp: lane l adds chunk sums
// l, l + 32, ... in order, then the lane tree; valid in lane 0. The sums were
// written during this kernel (or the previous one), so the loads bypass L1.
__device__ __forceinline__ double2 total(const double2* __restrict__ partials, int64_t nchunks) {
    double2 acc = make_double2(0.0, 0.0);
#pragma unroll 8
    for (int64_t i = threadIdx.x % 32; i < nchunks; i += 32) acc = add2(acc, __ldcg(partials + i));
    return warp_tree(acc);
}

template <typename T>
__device__ __forceinline__ Element<T> load(const typename Vec2<T>::type* F, const typename Vec2<T>::type* G, int64_t e) {
    const auto f = F[e], g = G[e];
    return Element<T>{f.x, f.y, g.x, g.y};
}

template <typename T>
__device__ __forceinline__ void store(typename Vec2<T>::type* F, typename Vec2<T>::type* G, int64_t e, const Element<T>& z) {
    typename Vec2<T>::type f, g;
    f.x = z.fr, f.y = z.fi, g.x = z.gr, g.y = z.gi;
    F[e] = f, G[e] = g;
}

template <typename T>
__device__ __forceinline__ typename Vec2<T>::type round_to(double2 v) {
    typename Vec2<T>::type r;
    r.x = (T)v.x, r.y = (T)v.y;
    return r;
}

// The whole run in one cooperative launch, the state in registers: block b
// owns chunks b, b + gridDim.x, ..., at most K of them (the host picks K and a
// grid with gridDim.x * K >= nchunks). Per step: RK4 of the block's elements,
// their chunk sums to partials, ONE grid sync, then every block computes delta
// from all chunk sums in the same fixed order, so every block gets the same bits.
//
// Why one grid sync per step is enough: the chunk sums of step s go to half
// s % 2 of `partials`. A block that has passed the sync of step s and races
// ahead writes step s + 1's sums to the other half, which nobody is reading;
// it cannot write to half s % 2 again (step s + 2) before passing the sync of
// step s + 1, which every block reaches only after it has finished reading
// step s's sums. Shared memory needs no more: `scratch` is rewritten only
// after the grid sync that follows its last read, and `shared_delta` is read
// by the block before it reaches the __syncthreads inside the next step's
// chunk_sums, which precedes the next write.
template <typename T, int K>
__device__ void run_cooperative(typename Vec2<T>::type* __restrict__ F, typename Vec2<T>::type* __restrict__ G,
                                int64_t n, int64_t nchunks, int64_t nsteps, double dt_in, double d0_re,
                                double d0_im, typename Vec2<T>::type* __restrict__ history,
                                double2* __restrict__ partials) {
    __shared__ double2 scratch[K][WARPS];
    __shared__ double2 shared_delta;
    const T dt = (T)dt_in;
    T dr = (T)d0_re, di = (T)d0_im;
    if (blockIdx.x == 0 && threadIdx.x == 0) history[0] = round_to<T>(make_double2(d0_re, d0_im));

    Element<T> z[K];
    bool valid[K];
#pragma unroll
    for (int j = 0; j < K; ++j) {
        const int64_t e = ((int64_t)blockIdx.x + (int64_t)j * gridDim.x) * CHUNK + threadIdx.x;
        valid[j] = e < n;
        z[j] = valid[j] ? load<T>(F, G, e) : Element<T>{};
    }
    cooperative_groups::grid_group grid = cooperative_groups::this_grid();
    for (int64_t s = 0; s < nsteps; ++s) {
        double2 v[K];
#pragma unroll
        for (int j = 0; j < K; ++j) {
            if (valid[j]) rk4(z[j], dr, di, dt);
            v[j] = valid[j] ? make_double2((double)z[j].fr, (double)z[j].fi) : make_double2(0.0, 0.0);
        }
        chunk_sums<K>(v, scratch);
        double2* half = partials + (s % 2) * nchunks;
        if (threadIdx.x == 0) {
#pragma unroll
            for (int j = 0; j < K; ++j) {
                const int64_t c = (int64_t)blockIdx.x + (int64_t)j * gridDim.x;
                if (c < nchunks) half[c] = v[j];
            }
        }
        grid.sync();
        if (threadIdx.x < 32) {
            const double2 sum = total(half, nchunks);
            if (threadIdx.x == 0) {
                const auto d = round_to<T>(sum);
                shared_delta = make_double2(d.x, d.y);
                if (blockIdx.x == 0) history[s + 1] = d;
            }
        }
        __syncthreads();
        dr = (T)shared_delta.x, di = (T)shared_delta.y;
    }
#pragma unroll
    for (int j = 0; j < K; ++j) {
        const int64_t e = ((int64_t)blockIdx.x + (int64_t)j * gridDim.x) * CHUNK + threadIdx.x;
        if (valid[j]) store<T>(F, G, e, z[j]);
    }
}

// Fallback without cooperative launch (or for states too large for
// registers): one launch per step. Step s takes delta from history[s] (the
// previous step's `finish`, or delta0 at step 0), integrates the chunks of
// this block in place and writes their sums; `finish` then adds them up.
// Kernel boundaries order the steps, so one buffer of chunk sums suffices.
template <typename T>
__device__ void step(typename Vec2<T>::type* __restrict__ F, typename Vec2<T>::type* __restrict__ G, int64_t n,
                     int64_t nchunks, int64_t s, double dt_in, double d0_re, double d0_im,
                     typename Vec2<T>::type* __restrict__ history, double2* __restrict__ partials) {
    __shared__ double2 scratch[1][WARPS];
    typename Vec2<T>::type d;
    if (s == 0) {
        d = round_to<T>(make_double2(d0_re, d0_im));
        if (blockIdx.x == 0 && threadIdx.x == 0) history[0] = d;
    } else {
        d = __ldcg(history + s);
    }
    const T dt = (T)dt_in;
    for (int64_t c = blockIdx.x; c < nchunks; c += gridDim.x) {
        const int64_t e = c * CHUNK + threadIdx.x;
        double2 v[1] = {make_double2(0.0, 0.0)};
        if (e < n) {
            Element<T> z = load<T>(F, G, e);
            rk4(z, d.x, d.y, dt);
            store<T>(F, G, e, z);
            v[0] = make_double2((double)z.fr, (double)z.fi);
        }
        chunk_sums<1>(v, scratch);
        if (threadIdx.x == 0) partials[c] = v[0];
        __syncthreads();  // scratch is reused by the next chunk
    }
}

template <typename T>
__device__ void finish(const double2* __restrict__ partials, int64_t nchunks, int64_t s,
                       typename Vec2<T>::type* __restrict__ history) {
    const double2 sum = total(partials, nchunks);
    if (threadIdx.x == 0) history[s + 1] = round_to<T>(sum);
}

}  // namespace fg
}  // namespace kp

// Entry points: c64 = interleaved float (re, im), c128 = interleaved double.
// K = 1, 2, 4 chunks per block in registers (K = 8 spills on sm_90; larger
// states take the per-step launches, which are memory-bound there anyway).
// F, G: n complex values each, integrated in place; history: nsteps + 1
// complex values; partials: 2 * nchunks (cooperative) or nchunks (step)
// double2 of scratch.
#define KP_FG_COOPERATIVE(T, V, SUFFIX, K)                                                                \
    extern "C" __global__ void __launch_bounds__(kp::fg::CHUNK) fg_cooperative_k##K##_##SUFFIX(          \
        V* F, V* G, int64_t n, int64_t nchunks, int64_t nsteps, double dt, double d0_re, double d0_im, \
        V* history, double2* partials) {                                                                  \
        kp::fg::run_cooperative<T, K>(F, G, n, nchunks, nsteps, dt, d0_re, d0_im, history, partials);    \
    }

#define KP_FG_ENTRY_POINTS(T, V, SUFFIX)                                                                \
    KP_FG_COOPERATIVE(T, V, SUFFIX, 1)                                                                  \
    KP_FG_COOPERATIVE(T, V, SUFFIX, 2)                                                                  \
    KP_FG_COOPERATIVE(T, V, SUFFIX, 4)                                                                  \
    extern "C" __global__ void __launch_bounds__(kp::fg::CHUNK)                                         \
        fg_step_##SUFFIX(V* F, V* G, int64_t n, int64_t nchunks, int64_t s, double dt, double d0_re,    \
                         double d0_im, V* history, double2* partials) {                                 \
        kp::fg::step<T>(F, G, n, nchunks, s, dt, d0_re, d0_im, history, partials);                      \
    }                                                                                                   \
    extern "C" __global__ void __launch_bounds__(32)                                                    \
        fg_finish_##SUFFIX(const double2* partials, int64_t nchunks, int64_t s, V* history) {           \
        kp::fg::finish<T>(partials, nchunks, s, history);                                               \
    }

KP_FG_ENTRY_POINTS(float, float2, c64)
KP_FG_ENTRY_POINTS(double, double2, c128)
