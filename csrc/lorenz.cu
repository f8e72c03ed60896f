// Lorenz 96 and Lorenz 2005 Model II / III ensembles (DART's Lorenz 04
// model): a whole RK4 run of every member in one launch, the step
// loop inside the kernel, no host round trip per step. Also the periodic
// weighted window sum (`calx` in Python ports) as a kernel of its own.
//
// Summation orders are those of MODELS.md and of the CPU reference
// (src/reference/lorenz.rs), term by term; the GPU contracts a*b+c into FMAs
// where the reference rounds twice, which is why f64 agrees to ~1e-12
// relative rather than bitwise.
#include "kernpack_params.h"
#include "common.cuh"
#include "counter_rng.cuh"

namespace kp {
namespace lorenz {

// Threads per member block of Lorenz 2005: with N = 960 every thread has about
// one point per phase, so all 32 warps of an SM are busy even when only 40
// members (40 SMs) run.
constexpr int L05_BLOCK = 1024;
// Lorenz 96 packs several members into one block (see l96_run) where the
// lane kernels (l96_lanes_run) do not take its N.
constexpr int L96_BLOCK = 256;
constexpr int L96_POINTS = 8;  // points per thread, held in registers

// x / d correctly rounded for the constants used here, without a division
// routine: q = x * RN(1/d), then one FMA-computed residual corrects q
// (Markstein). Checked against IEEE division on 5e7 random values of each
// divisor used (3, 6, K); the CPU reference divides.
__device__ inline float reciprocal_rn(float x) { return __frcp_rn(x); }
__device__ inline double reciprocal_rn(double x) { return __drcp_rn(x); }
template <typename T> struct Divisor {
    T d, r;
    __device__ explicit Divisor(T divisor) : d(divisor), r(reciprocal_rn(divisor)) {}
    __device__ T operator()(T x) const {
        const T q = x * r;
        const T e = fma(-q, d, x);
        return fma(e, r, q);
    }
};

// i in [-n, 2n) mapped to [0, n): the stencils' offsets are below n (validated on the host).
__device__ __forceinline__ int wrap(int i, int n) { return i < 0 ? i + n : (i >= n ? i - n : i); }

// One RK4 stage update of a point, the same for every model:
// k = dt * f(stage input); the increment accumulates k1/6 + k2/3 + k3/3 + k4/6
// in that order and is added to z once, after the fourth stage. Returns the
// next stage's input (after stage 3: the new state, also stored in z).
template <typename T>
__device__ __forceinline__ T rk4_stage(int stage, T k, T& z, T& inc, const Divisor<T>& by3, const Divisor<T>& by6) {
    switch (stage) {
        case 0: inc = by6(k); return z + k * T(0.5);
        case 1: inc = inc + by3(k); return z + k * T(0.5);
        case 2: inc = inc + by3(k); return z + k;
        default: inc = inc + by6(k); z = z + inc; return z;
    }
}

// ---------------------------------------------------------------------------
// Periodic weighted window sum, batched over rows:
//   out[r][i] = sum_{m=0}^{L-1} w[m] x[r][idx(i + J - m)],  L = 2J + 1,
// summed in m order. With w[m] = a'_{m-J} (Model III weights, end weights
// halved) it is MODELS.md section 3 phase 1: first end term Z[i+J], j
// ascending (index descending), last end term Z[i-J].

constexpr int WINDOW_BLOCK = 256;

template <typename T>
__device__ void window_sum(const T* __restrict__ x, const T* __restrict__ w, int L, T* __restrict__ out,
                           int64_t rows, int64_t n, int64_t pitch) {
    const int64_t J = (L - 1) / 2;
    const int64_t total = rows * n;
    for (int64_t g = (int64_t)blockIdx.x * WINDOW_BLOCK + threadIdx.x; g < total;
         g += (int64_t)gridDim.x * WINDOW_BLOCK) {
        const int64_t r = g / n, i = g - r * n;
        const T* row = x + r * pitch;
        int64_t e = (i + J) % n;
        T acc = T(0);
        for (int m = 0; m < L; ++m) {
            acc = fma(__ldg(w + m), row[e], acc);
            e = e == 0 ? n - 1 : e - 1;
        }
        out[r * pitch + i] = acc;
    }
}

// Lorenz 2005's F, b, c of one member: its value where a per-member array is
// given (non-NULL), else the scalar, converted to T as the scalar path does.
template <typename T> struct MemberParams {
    T F, b, c;
    __device__ __forceinline__ MemberParams(int64_t member, double forcing, double b_, double c_,
                                            const T* __restrict__ forcing_each, const T* __restrict__ b_each,
                                            const T* __restrict__ c_each)
        : F(forcing_each ? forcing_each[member] : T(forcing)),
          b(b_each ? b_each[member] : T(b_)),
          c(c_each ? c_each[member] : T(c_)) {}
};

// ---------------------------------------------------------------------------
// Lorenz 2005 Model II (model 2) and Model III (model 3). One block per
// member; the member's arrays live in dynamic shared memory:
//   model 3: w[2J+1], s, W, z, inc, X, Y   (s: stage input, also read as Z)
//   model 2: s, W, z, inc, s2               (X is the stage input itself,
//            so the next stage input goes to the other buffer, s2)
// Thread t owns points t, t + BLOCK, ...: z (state at the step start) and inc
// (the RK4 increment) are read and written by their owner only. Barriers sit
// only where a phase reads other points' outputs: after phase 1 (X, Y),
// after phase 2 (W), after phase 3/4 (next stage input): 3 per stage (2 for model 2).
template <typename T>
__device__ void l05_run(const T* __restrict__ z0, T* __restrict__ out, T* __restrict__ traj, int64_t members,
                        int n, int K, int J, int model, double alpha, double beta, double forcing, double b_,
                        double c_, const T* __restrict__ forcing_each, const T* __restrict__ b_each,
                        const T* __restrict__ c_each, double dt_, int64_t steps, int64_t every) {
    extern __shared__ double smem_l05[];  // double: 8-byte alignment for either T
    const bool three = model == 3;
    const int L = three ? 2 * J + 1 : 0;
    const int H = K / 2;
    T* w = reinterpret_cast<T*>(smem_l05);
    T* s = w + L;
    T* W = s + n;
    T* z = W + n;
    T* inc = z + n;
    T* X = three ? inc + n : s;
    T* Y = three ? X + n : nullptr;
    T* s_next = three ? s : inc + n;  // model 2: ping-pong with s

    const T dt = T(dt_);
    const Divisor<T> by3{T(3)}, by6{T(6)}, byK{T(K)};
    // Weights a_j = alpha - beta |j|, the two ends halved once: rounded
    // exactly as the reference does (no contraction), then converted to T.
    for (int m = threadIdx.x; m < L; m += L05_BLOCK) {
        const int j = m - J;
        double a = __dsub_rn(alpha, __dmul_rn(beta, (double)abs(j)));
        if (j == -J || j == J) a *= 0.5;
        w[m] = T(a);
    }

    for (int64_t member = blockIdx.x; member < members; member += gridDim.x) {
        // F, b, c of this member (read once, kept in registers), b^2 as the scalar path forms it.
        const MemberParams<T> mp(member, forcing, b_, c_, forcing_each, b_each, c_each);
        const T F = mp.F, b = mp.b, c = mp.c, b2 = b * b;
        const T* start = z0 + member * n;
        for (int i = threadIdx.x; i < n; i += L05_BLOCK) {
            z[i] = start[i];
            s[i] = start[i];
            if (traj) traj[member * n + i] = start[i];
        }
        __syncthreads();
        int64_t until_frame = every;
        for (int64_t step = 0; step < steps; ++step) {
            for (int stage = 0; stage < 4; ++stage) {
                if (three) {
                    // Phase 1: X_i = sum_m w[m] Z[i + J - m]; Y = Z - X.
                    for (int i = threadIdx.x; i < n; i += L05_BLOCK) {
                        int e = wrap(i + J, n);
                        T acc = T(0);
                        for (int m = 0; m < L; ++m) {
                            acc = fma(w[m], s[e], acc);
                            e = e == 0 ? n - 1 : e - 1;
                        }
                        X[i] = acc;
                        Y[i] = s[i] - acc;
                    }
                    __syncthreads();
                }
                // Phase 2: W_i = (X[i+H]/2 + sum_{j=-H+1}^{H-1} X[i-j] + X[i-H]/2) / K.
                for (int i = threadIdx.x; i < n; i += L05_BLOCK) {
                    int e = wrap(i + H, n);
                    T acc = X[e] * T(0.5);
                    for (int j = -H + 1; j < H; ++j) {
                        e = e == 0 ? n - 1 : e - 1;
                        acc = acc + X[e];
                    }
                    e = e == 0 ? n - 1 : e - 1;
                    acc = acc + X[e] * T(0.5);
                    W[i] = byK(acc);
                }
                __syncthreads();
                // Phases 3 and 4: the bracket [X, X]_K, the tendency, the RK4 update.
                for (int i = threadIdx.x; i < n; i += L05_BLOCK) {
                    int a = wrap(i - K - H, n), x = wrap(i + K - H, n);
                    T acc = W[a] * X[x] * T(0.5);
                    for (int j = -H + 1; j < H; ++j) {
                        a = a == n - 1 ? 0 : a + 1;
                        x = x == n - 1 ? 0 : x + 1;
                        acc = fma(W[a], X[x], acc);
                    }
                    a = a == n - 1 ? 0 : a + 1;
                    x = x == n - 1 ? 0 : x + 1;
                    acc = acc + W[a] * X[x] * T(0.5);
                    const T xx = -W[wrap(i - 2 * K, n)] * W[wrap(i - K, n)] + byK(acc);
                    const int im2 = wrap(i - 2, n), im1 = wrap(i - 1, n), ip1 = wrap(i + 1, n);
                    T dz;
                    if (three) {
                        dz = xx + b2 * (-Y[im2] * Y[im1] + Y[im1] * Y[ip1]) +
                             c * (-Y[im2] * X[im1] + Y[im1] * X[ip1]) - X[i] - b * Y[i] + F;
                    } else {
                        dz = xx - X[i] + F;
                    }
                    s_next[i] = rk4_stage(stage, dt * dz, z[i], inc[i], by3, by6);
                }
                if (!three) {
                    T* t = s;
                    s = s_next, s_next = t;
                    X = s;
                }
                __syncthreads();
            }
            if (traj && --until_frame == 0) {
                until_frame = every;
                T* frame = traj + ((step + 1) / every) * members * n + member * n;
                for (int i = threadIdx.x; i < n; i += L05_BLOCK) frame[i] = z[i];
            }
        }
        for (int i = threadIdx.x; i < n; i += L05_BLOCK) out[member * n + i] = z[i];
        __syncthreads();  // the next member reuses the arrays
    }
}

// ---------------------------------------------------------------------------
// Model III specialised for compile-time K and J (DART's K = 32, J = 12), for
// N <= L05_FIXED_SITES. Same phases, barriers and per-site summation order as
// l05_run; what changes is how the operands reach the FMAs:
//
// * Register blocking: thread t owns the P adjacent sites i0 = P t .. i0+P-1
//   and walks each stencil once along a diagonal: a value loaded for offset o
//   feeds the term of every owned site whose window holds o. Per site the
//   terms still come in the MODELS.md order (first end term, j ascending, last
//   end term); only the sites' chains are interleaved. Shared loads per site
//   and stage drop from ~150 (l05_run) to ~44 with P = 4 (K = 32, J = 12:
//   175 per thread in the sm_90 SASS), ~74 with P = 2.
// * Phased layout: an array element at extended index x lives in plane x % P
//   at position x / P. The warp's lanes read P-strided sites, i.e. consecutive
//   words of one plane: conflict-free (2 wavefronts per f64 warp load), where
//   a natural layout would cost P times as many.
// * Halos: every array is stored with copies of the sites near the ends
//   (written by the owner of the site when the phase writes it, before the
//   barrier), so stencils read linear indices: no wrap in the inner loops, and
//   every address is the thread's base plus an immediate.
// * z and the RK4 increment stay in registers (only their owner reads them);
//   the weights come as a kernel parameter (constant bank operands of the FMAs).
constexpr int L05_FIXED_SITES = 1024;

template <typename T, int P, int K, int J> struct Fixed {
    static_assert(P == 1 || P == 2 || P == 4 || P == 8, "P: a power of two");
    static_assert(K % 2 == 0 && K > 0 && J > 0, "K even, J >= 1");
    static constexpr int BLOCK = L05_FIXED_SITES / P;
    static constexpr int H = K / 2, L = 2 * J + 1;
    // Halo reach of each array (sites read left / right of the reading site).
    static constexpr int S_LEFT = J, S_RIGHT = J;                   // phase 1
    static constexpr int X_LEFT = H > 1 ? H : 1, X_RIGHT = K + H;   // phases 2, 3, 4
    static constexpr int Y_LEFT = 2, Y_RIGHT = 1;                   // phase 4
    static constexpr int W_LEFT = 2 * K, W_RIGHT = 0;               // phase 3
    // Extended index x = LEFT + site. LEFT covers the widest left reach and is
    // a multiple of P (so site i0 + c is in plane c mod P); RIGHT covers the
    // widest right reach from the last owned site, which may be up to P - 1
    // past N - 1 (such sites are computed from garbage and never stored).
    static constexpr int LEFT = (W_LEFT + P - 1) / P * P;
    static constexpr int RIGHT = (X_RIGHT > S_RIGHT ? X_RIGHT : S_RIGHT) + P - 1;
    static_assert(LEFT >= S_LEFT && LEFT >= X_LEFT && LEFT >= Y_LEFT, "LEFT covers every reach");
    static constexpr int PLANE = (LEFT + L05_FIXED_SITES + RIGHT + P - 1) / P;
    static constexpr int ARRAY = P * PLANE;
    enum Array { S = 0, X = 1, Y = 2, W = 3 };
    static constexpr int ARRAYS = 4;

    // The element at site i0 + c of array a, from mine = smem + threadIdx.x:
    // with unrolled loops c is a constant and this is one load at an immediate.
    __device__ __forceinline__ static T& at(T* mine, int a, int c) {
        const int r = ((c % P) + P) % P;
        return mine[a * ARRAY + r * PLANE + LEFT / P + (c - r) / P];
    }
    // Site i of array a, at extended index x (runtime; halo copies only).
    __device__ __forceinline__ static T& at_x(T* smem, int a, int x) {
        return smem[a * ARRAY + (x % P) * PLANE + x / P];
    }
    // Owned site i0 + q gets v, and so do its halo copies within the reach.
    __device__ __forceinline__ static void put(T* smem, T* mine, int a, int q, int i, int n, int left,
                                               int right, T v) {
        at(mine, a, q) = v;
        if (i < right) at_x(smem, a, LEFT + i + n) = v;
        if (i >= n - left) at_x(smem, a, LEFT + i - n) = v;
    }
};

// x / K: a multiply when K is a power of two (exact scaling, so the same
// correctly rounded result as the division), else the Divisor.
template <typename T, int K> __device__ __forceinline__ T div_k(T x, const Divisor<T>& byK) {
    if constexpr ((K & (K - 1)) == 0) {
        return x * (T(1) / T(K));
    } else {
        return byK(x);
    }
}

template <typename T, int P, int K, int J>
__device__ void l05_fixed_run(const T* __restrict__ z0, T* __restrict__ out, T* __restrict__ traj,
                              int64_t members, int n, const Weights<T, 2 * J + 1> weights, double forcing,
                              double b_, double c_, const T* __restrict__ forcing_each,
                              const T* __restrict__ b_each, const T* __restrict__ c_each, double dt_,
                              int64_t steps, int64_t every) {
    using F_ = Fixed<T, P, K, J>;
    constexpr int H = F_::H, L = F_::L;
    constexpr int S = F_::S, X = F_::X, Y = F_::Y, W = F_::W;
    __shared__ T smem[F_::ARRAYS * F_::ARRAY];
    T* mine = smem + threadIdx.x;
    const int i0 = P * (int)threadIdx.x;
    // Threads past N only meet the barriers.
    const bool active = i0 < n;

    const T dt = T(dt_);
    const Divisor<T> by3{T(3)}, by6{T(6)}, byK{T(K)};

    for (int64_t member = blockIdx.x; member < members; member += gridDim.x) {
        const MemberParams<T> mp(member, forcing, b_, c_, forcing_each, b_each, c_each);
        const T F = mp.F, b = mp.b, c = mp.c, b2 = b * b;
        T z[P], inc[P];
        const T* start = z0 + member * n;
#pragma unroll
        for (int q = 0; q < P; ++q) {
            const int i = i0 + q;
            inc[q] = T(0);
            z[q] = i < n ? start[i] : T(0);
            if (i < n) {
                F_::put(smem, mine, S, q, i, n, F_::S_LEFT, F_::S_RIGHT, z[q]);
                if (traj) traj[member * n + i] = z[q];
            }
        }
        __syncthreads();
        int64_t until_frame = every;
        for (int64_t step = 0; step < steps; ++step) {
            for (int stage = 0; stage < 4; ++stage) {
                // Phase 1: X_i = sum_m w[m] s[i + J - m], Y = s - X. The offsets
                // o = J + P - 1 down to -J (2J + P loads for P sites); site q
                // takes tap m = q + J - o, so m ascends as o descends.
                if (active) {
                    T acc[P];
#pragma unroll
                    for (int q = 0; q < P; ++q) acc[q] = T(0);
#pragma unroll
                    for (int o = J + P - 1; o >= -J; --o) {
                        const T v = F_::at(mine, S, o);
#pragma unroll
                        for (int q = 0; q < P; ++q) {
                            const int m = q + J - o;
                            if (m >= 0 && m < L) acc[q] = fma(weights.w[m], v, acc[q]);
                        }
                    }
#pragma unroll
                    for (int q = 0; q < P; ++q) {
                        const int i = i0 + q;
                        if (i < n) {
                            F_::put(smem, mine, X, q, i, n, F_::X_LEFT, F_::X_RIGHT, acc[q]);
                            F_::put(smem, mine, Y, q, i, n, F_::Y_LEFT, F_::Y_RIGHT, F_::at(mine, S, q) - acc[q]);
                        }
                    }
                }
                __syncthreads();
                // Phase 2: W_i = (X[i+H]/2 + sum_{j=-H+1}^{H-1} X[i-j] + X[i-H]/2) / K,
                // offsets H + P - 1 down to -H: 2H + P loads for P sites.
                if (active) {
                    T acc[P];
#pragma unroll
                    for (int o = H + P - 1; o >= -H; --o) {
                        const T v = F_::at(mine, X, o);
#pragma unroll
                        for (int q = 0; q < P; ++q) {
                            const int j = o - q;  // X[i + j]: j = H first, -H last
                            if (j == H) acc[q] = v * T(0.5);
                            else if (j == -H) acc[q] = acc[q] + v * T(0.5);
                            else if (j > -H && j < H) acc[q] = acc[q] + v;
                        }
                    }
#pragma unroll
                    for (int q = 0; q < P; ++q) {
                        const int i = i0 + q;
                        if (i < n) F_::put(smem, mine, W, q, i, n, F_::W_LEFT, F_::W_RIGHT, div_k<T, K>(acc[q], byK));
                    }
                }
                __syncthreads();
                // Phases 3 and 4. The bracket's terms W[i-K+j] X[i+K+j], j = -H..H,
                // along the diagonal d = q + j = -H .. H + P - 1: 2 (2H + P) loads
                // for P sites, each site's j ascending.
                if (active) {
                    T acc[P];
#pragma unroll
                    for (int d = -H; d <= H + P - 1; ++d) {
                        const T wv = F_::at(mine, W, d - K), xv = F_::at(mine, X, d + K);
#pragma unroll
                        for (int q = 0; q < P; ++q) {
                            const int j = d - q;
                            if (j == -H) acc[q] = wv * xv * T(0.5);
                            else if (j == H) acc[q] = acc[q] + wv * xv * T(0.5);
                            else if (j > -H && j < H) acc[q] = fma(wv, xv, acc[q]);
                        }
                    }
#pragma unroll
                    for (int q = 0; q < P; ++q) {
                        const T xx = -F_::at(mine, W, q - 2 * K) * F_::at(mine, W, q - K) + div_k<T, K>(acc[q], byK);
                        const T ym2 = F_::at(mine, Y, q - 2), ym1 = F_::at(mine, Y, q - 1), yi = F_::at(mine, Y, q),
                                yp1 = F_::at(mine, Y, q + 1);
                        const T xm1 = F_::at(mine, X, q - 1), xi = F_::at(mine, X, q), xp1 = F_::at(mine, X, q + 1);
                        const T dz = xx + b2 * (-ym2 * ym1 + ym1 * yp1) + c * (-ym2 * xm1 + ym1 * xp1) - xi - b * yi + F;
                        const T next = rk4_stage(stage, dt * dz, z[q], inc[q], by3, by6);
                        const int i = i0 + q;
                        if (i < n) F_::put(smem, mine, S, q, i, n, F_::S_LEFT, F_::S_RIGHT, next);
                    }
                }
                __syncthreads();
            }
            if (traj && --until_frame == 0) {
                until_frame = every;
                T* frame = traj + ((step + 1) / every) * members * n + member * n;
#pragma unroll
                for (int q = 0; q < P; ++q)
                    if (i0 + q < n) frame[i0 + q] = z[q];
            }
        }
#pragma unroll
        for (int q = 0; q < P; ++q)
            if (i0 + q < n) out[member * n + i0 + q] = z[q];
        // The next member's first writes (s) come after no read of s by
        // another thread: the last stage's barrier ordered them.
    }
}

// ---------------------------------------------------------------------------
// What both Lorenz 96 kernels take beyond the states: kp_l96_run (kernpack_params.h).
using L96Run = kp_l96_run;

// W for member `member` (in the whole ensemble) at step `step` of this launch
// (step r.first_step + step of the run), site `site`.
template <typename T>
__device__ __forceinline__ T l96_noise(const L96Run& r, int64_t member, int64_t step, int site) {
    const rng::Words d = rng::draw(r.seed, (uint64_t)member, (uint64_t)(r.first_step + step), (uint32_t)site);
    return T(r.noise) * rng::standard_normal(d, T(0));
}

// ---------------------------------------------------------------------------
// Lorenz 96: dX_k/dt = (X_{k+1} - X_{k-2}) X_{k-1} - X_k + F.
//
// A member has few points (N = 40 by default) and ~10 flops per point and
// stage, so one block per member would leave most threads idle. Instead a
// block takes `mpb` consecutive members and treats their mpb * N points as one
// flat range: thread t owns flat points t + p * BLOCK (p < L96_POINTS), keeping
// z, the increment and its stage input in registers; only the stage inputs go
// through shared memory (ping-pong buffers: one barrier per stage). Members are
// contiguous in memory, so the flat range is a contiguous, coalesced slice of
// z0, out and each trajectory frame.
template <typename T>
__device__ void l96_run(const T* __restrict__ z0, T* __restrict__ out, T* __restrict__ traj, int64_t members,
                        int mpb, const L96Run& r) {
    constexpr int P = L96_POINTS;
    __shared__ T buffers[2][P * L96_BLOCK];
    const int n = r.n;
    const int64_t stride = r.forced ? 2 * (int64_t)n : n;  // values per member
    const T dt = T(r.dt);
    const Divisor<T> by3{T(3)}, by6{T(6)};
    const int64_t groups = (members + mpb - 1) / mpb;
    for (int64_t group = blockIdx.x; group < groups; group += gridDim.x) {
        const int64_t first = group * mpb;
        const int count = (int)min((int64_t)mpb, members - first);
        const int total = count * n;
        T z[P], inc[P], s[P], F[P];
        int im2[P], im1[P], ip1[P];
        int64_t at[P];  // the point's X in the states (members x stride)
        T* cur = buffers[0];
        T* nxt = buffers[1];
#pragma unroll
        for (int p = 0; p < P; ++p) {
            const int g = threadIdx.x + p * L96_BLOCK;
            inc[p] = T(0);
            if (g < total) {
                const int i = g % n, base = g - i;
                im2[p] = base + wrap(i - 2, n);
                im1[p] = base + wrap(i - 1, n);
                ip1[p] = base + wrap(i + 1, n);
                at[p] = (first + g / n) * stride + i;
                z[p] = z0[at[p]];
                F[p] = r.forced ? z0[at[p] + n] : T(r.forcing);
                s[p] = z[p];
                cur[g] = z[p];
                if (traj) {
                    traj[at[p]] = z[p];
                    if (r.forced) traj[at[p] + n] = F[p];
                }
            } else {
                im2[p] = im1[p] = ip1[p] = 0;
                at[p] = 0;
                z[p] = s[p] = F[p] = T(0);
            }
        }
        __syncthreads();
        int64_t until_frame = r.every;
        for (int64_t step = 0; step < r.steps; ++step) {
            T w[P];
#pragma unroll
            for (int p = 0; p < P; ++p) {
                const int g = threadIdx.x + p * L96_BLOCK;
                w[p] = (r.noise != 0.0 && g < total)
                           ? l96_noise<T>(r, r.first_member + first + g / n, step, g % n)
                           : T(0);
            }
            for (int stage = 0; stage < 4; ++stage) {
#pragma unroll
                for (int p = 0; p < P; ++p) {
                    const int g = threadIdx.x + p * L96_BLOCK;
                    if (g < total) {
                        const T d = (cur[ip1[p]] - cur[im2[p]]) * cur[im1[p]] - s[p] + F[p];
                        s[p] = rk4_stage(stage, dt * d + w[p], z[p], inc[p], by3, by6);
                        nxt[g] = s[p];
                    }
                }
                T* t = cur;
                cur = nxt, nxt = t;
                __syncthreads();
            }
            if (traj && --until_frame == 0) {
                until_frame = r.every;
                T* frame = traj + ((step + 1) / r.every) * members * stride;
#pragma unroll
                for (int p = 0; p < P; ++p) {
                    const int g = threadIdx.x + p * L96_BLOCK;
                    if (g < total) {
                        frame[at[p]] = z[p];
                        if (r.forced) frame[at[p] + n] = F[p];
                    }
                }
            }
        }
#pragma unroll
        for (int p = 0; p < P; ++p) {
            const int g = threadIdx.x + p * L96_BLOCK;
            if (g < total) {
                out[at[p]] = z[p];
                if (r.forced) out[at[p] + n] = F[p];
            }
        }
        __syncthreads();  // the next group reuses the buffers
    }
}

// ---------------------------------------------------------------------------
// Lorenz 96 with each member in registers of a few lanes of a warp: the N =
// lanes * P sites of a member sit on `lanes` consecutive lanes (a power of
// two), P adjacent sites per lane. The stencil reaches two sites to the left
// and one to the right, so a lane needs three values from its neighbours per
// stage; they come by warp shuffles (width `lanes`, which also wraps the
// member's periodic boundary), with no shared memory and no barrier. Each lane
// then does ~5 FP64 operations per site and stage on registers alone, which
// is what brings the step to the FP64 units' throughput.
//
// RK4 as MODELS.md, with the increment summed first and added once; the
// increment is accumulated as d1 + 2 d2 + 2 d3 + d4 of the tendencies and
// scaled by dt / 6 once (the same sum, rounded differently from k1/6 + k2/3
// + k3/3 + k4/6: ~1 ulp per step, inside the tests' tolerance).
constexpr int L96_LANES_BLOCK = 128;

// The tangent linear model's perturbations (lorenz96_tangent_lanes_*): K
// vectors per member, members x K x N, propagated by the derivative of each
// RK4 step: the RK4 step of the joint system (x, v) with dv/dt = J(x) v, which
// is exactly that derivative since the stages are linear in v. Lane group g
// runs member g / K with its perturbation g % K (x is integrated K times, once
// per group, so that every group keeps all it needs in registers).
template <typename T>
struct Tangents {
    const T* v0;  // members x K x N
    T* v;         // the same layout, written
    int k;        // perturbations per member; 0: no tangent run
};

// x (and v) of P sites, one RK4 stage's shuffles and tendencies.
template <typename T, int P>
struct LaneSites {
    T z[P], s[P], acc[P], d[P];

    // The three values of s from the neighbouring lanes and d = the tendency
    // (with `x` the base state's stage input, for the tangent: J(x) s).
    __device__ __forceinline__ void neighbours(int left, int right, int lanes, T& m2, T& m1, T& p1) const {
        m2 = __shfl_sync(0xffffffffu, s[P - 2], left, lanes);
        m1 = __shfl_sync(0xffffffffu, s[P - 1], left, lanes);
        p1 = __shfl_sync(0xffffffffu, s[0], right, lanes);
    }
    __device__ __forceinline__ T at(int p, int offset, T m2, T m1, T p1) const {
        // s at p + offset, offset in {-2, -1, +1}, from the neighbours past the ends.
        const int q = p + offset;
        return q >= 0 ? (q < P ? s[q] : p1) : (q == -1 ? m1 : m2);
    }
    // RK4 bookkeeping of stage `stage` after d: k = dt d + W (W only for x).
    __device__ __forceinline__ void advance(int stage, T dt, T half_dt, T sixth_dt, const T* w) {
#pragma unroll
        for (int p = 0; p < P; ++p) {
            const T half_w = w ? T(0.5) * w[p] : T(0);
            if (stage == 0) {
                acc[p] = d[p];
                s[p] = z[p] + half_dt * d[p];
                if (w) s[p] += half_w;
            } else if (stage == 1) {
                acc[p] = acc[p] + T(2) * d[p];
                s[p] = z[p] + half_dt * d[p];
                if (w) s[p] += half_w;
            } else if (stage == 2) {
                acc[p] = acc[p] + T(2) * d[p];
                s[p] = z[p] + dt * d[p];
                if (w) s[p] += w[p];
            } else {
                acc[p] = acc[p] + d[p];
                z[p] = z[p] + sixth_dt * acc[p];
                if (w) z[p] += w[p];
                s[p] = z[p];
            }
        }
    }
};

template <typename T, int P, bool NOISY, bool TANGENT>
__device__ void l96_lanes_loop(const T* __restrict__ z0, T* __restrict__ out, T* __restrict__ traj,
                               int64_t members, int lanes, const L96Run& r, Tangents<T> tan) {
    const int n = r.n;
    const int64_t stride = r.forced ? 2 * (int64_t)n : n;  // values per member
    const int k = TANGENT ? tan.k : 1;                      // lane groups per member
    const int64_t groups = members * k;
    const int lane = threadIdx.x & 31;
    const int part = lane & (lanes - 1);
    const int per_warp = 32 / lanes;
    const int64_t warp = ((int64_t)blockIdx.x * L96_LANES_BLOCK + threadIdx.x) >> 5;
    const int64_t warps = ((int64_t)gridDim.x * L96_LANES_BLOCK) >> 5;
    const T dt = T(r.dt), half_dt = T(0.5 * r.dt), sixth_dt = T(r.dt / 6.0);
    const int left = (part + lanes - 1) & (lanes - 1), right = (part + 1) & (lanes - 1);
    // Every lane of a warp runs the same number of groups and steps, so the
    // full-mask shuffles below always find their partners; lanes past the
    // last group carry zeros and store nothing.
    for (int64_t first = warp * per_warp; first < groups; first += warps * per_warp) {
        const int64_t group = first + lane / lanes;
        const bool live = group < groups;
        const int64_t member = group / k;
        // The tangent's x is stored by the member's first group only.
        const bool owner = live && group % k == 0;
        const int64_t at = member * stride + (int64_t)part * P;  // this lane's first X
        const int64_t vat = group * n + (int64_t)part * P;       // and first v
        LaneSites<T, P> x, v;
        T F[P], w[P];
#pragma unroll
        for (int p = 0; p < P; ++p) {
            x.z[p] = live ? z0[at + p] : T(0);
            F[p] = !r.forced ? T(r.forcing) : (live ? z0[at + n + p] : T(0));
            x.s[p] = x.z[p];
            if (TANGENT) v.s[p] = v.z[p] = live ? tan.v0[vat + p] : T(0);
            w[p] = T(0);
            if (owner && traj) {
                traj[at + p] = x.z[p];
                if (r.forced) traj[at + n + p] = F[p];
            }
        }
        int64_t until_frame = r.every;
        for (int64_t step = 0; step < r.steps; ++step) {
            if (NOISY) {
#pragma unroll
                for (int p = 0; p < P; ++p) w[p] = l96_noise<T>(r, r.first_member + member, step, part * P + p);
            }
#pragma unroll
            for (int stage = 0; stage < 4; ++stage) {
                T m2, m1, p1, vm2, vm1, vp1;
                x.neighbours(left, right, lanes, m2, m1, p1);
                if (TANGENT) v.neighbours(left, right, lanes, vm2, vm1, vp1);
#pragma unroll
                for (int p = 0; p < P; ++p) {
                    const T xm2 = x.at(p, -2, m2, m1, p1), xm1 = x.at(p, -1, m2, m1, p1);
                    const T xp1 = x.at(p, 1, m2, m1, p1);
                    x.d[p] = (xp1 - xm2) * xm1 + (F[p] - x.s[p]);
                    if (TANGENT) {
                        const T dm2 = v.at(p, -2, vm2, vm1, vp1), dm1 = v.at(p, -1, vm2, vm1, vp1);
                        const T dp1 = v.at(p, 1, vm2, vm1, vp1);
                        v.d[p] = (dp1 - dm2) * xm1 + (xp1 - xm2) * dm1 - v.s[p];
                    }
                }
                x.advance(stage, dt, half_dt, sixth_dt, NOISY ? w : nullptr);
                if (TANGENT) v.advance(stage, dt, half_dt, sixth_dt, nullptr);
            }
            if (traj && --until_frame == 0) {
                until_frame = r.every;
                T* frame = traj + ((step + 1) / r.every) * members * stride;
#pragma unroll
                for (int p = 0; p < P; ++p) {
                    if (owner) {
                        frame[at + p] = x.z[p];
                        if (r.forced) frame[at + n + p] = F[p];
                    }
                }
            }
        }
#pragma unroll
        for (int p = 0; p < P; ++p) {
            if (owner) {
                out[at + p] = x.z[p];
                if (r.forced) out[at + n + p] = F[p];
            }
            if (TANGENT && live) tan.v[vat + p] = v.z[p];
        }
    }
}

template <typename T, int P, bool TANGENT>
__device__ void l96_lanes_run(const T* __restrict__ z0, T* __restrict__ out, T* __restrict__ traj,
                              int64_t members, int lanes, const L96Run& r, Tangents<T> tan) {
    static_assert(P >= 2, "the left neighbour lane must hold both sites k-2 and k-1");
    if (r.noise != 0.0)
        l96_lanes_loop<T, P, true, TANGENT>(z0, out, traj, members, lanes, r, tan);
    else
        l96_lanes_loop<T, P, false, TANGENT>(z0, out, traj, members, lanes, r, tan);
}

}  // namespace lorenz
}  // namespace kp

#define KP_LORENZ_ENTRY_POINTS(T, SUFFIX)                                                            \
    extern "C" __global__ void __launch_bounds__(kp::lorenz::WINDOW_BLOCK)                           \
        window_sum_##SUFFIX(const T* x, const T* w, int L, T* out, int64_t rows, int64_t n,          \
                            int64_t pitch) {                                                         \
        kp::lorenz::window_sum<T>(x, w, L, out, rows, n, pitch);                                     \
    }                                                                                                \
    extern "C" __global__ void __launch_bounds__(kp::lorenz::L05_BLOCK)                              \
        lorenz05_##SUFFIX(const T* z0, T* out, T* traj, int64_t members, int n, int K, int J,        \
                          int model, double alpha, double beta, double forcing, double b, double c,  \
                          const T* forcing_each, const T* b_each, const T* c_each, double dt,        \
                          int64_t steps, int64_t every) {                                            \
        kp::lorenz::l05_run<T>(z0, out, traj, members, n, K, J, model, alpha, beta, forcing, b, c,   \
                               forcing_each, b_each, c_each, dt, steps, every);                      \
    }                                                                                                \
    extern "C" __global__ void __launch_bounds__(kp::lorenz::L96_BLOCK)                              \
        lorenz96_##SUFFIX(const T* z0, T* out, T* traj, int64_t members, int mpb, kp_l96_run r) {     \
        kp::lorenz::l96_run<T>(z0, out, traj, members, mpb, r);                                      \
    }

KP_LORENZ_ENTRY_POINTS(float, f32)
KP_LORENZ_ENTRY_POINTS(double, f64)

// Lorenz 96 on lanes, one entry point per sites-per-lane P and T (the host
// picks P and the lane count from N; other N run lorenz96_T), and its tangent
// linear model on the same layout.
#define KP_LORENZ96_LANES(T, SUFFIX, P)                                                               \
    extern "C" __global__ void __launch_bounds__(kp::lorenz::L96_LANES_BLOCK)                         \
        lorenz96_lanes_p##P##_##SUFFIX(const T* z0, T* out, T* traj, int64_t members, int lanes,      \
                                       kp_l96_run r) {                                                \
        kp::lorenz::l96_lanes_run<T, P, false>(z0, out, traj, members, lanes, r,                      \
                                               kp::lorenz::Tangents<T>{nullptr, nullptr, 0});         \
    }                                                                                                 \
    extern "C" __global__ void __launch_bounds__(kp::lorenz::L96_LANES_BLOCK)                         \
        lorenz96_tangent_p##P##_##SUFFIX(const T* z0, T* out, const T* v0, T* v, int k, int64_t members, \
                                         int lanes, kp_l96_run r) {                                   \
        kp::lorenz::l96_lanes_run<T, P, true>(z0, out, nullptr, members, lanes, r,                    \
                                              kp::lorenz::Tangents<T>{v0, v, k});                     \
    }
#define KP_LORENZ96_LANES_ALL(P)         \
    KP_LORENZ96_LANES(float, f32, P)     \
    KP_LORENZ96_LANES(double, f64, P)
KP_LORENZ96_LANES_ALL(2)
KP_LORENZ96_LANES_ALL(3)
KP_LORENZ96_LANES_ALL(4)
KP_LORENZ96_LANES_ALL(5)
KP_LORENZ96_LANES_ALL(6)
KP_LORENZ96_LANES_ALL(7)
KP_LORENZ96_LANES_ALL(8)
KP_LORENZ96_LANES_ALL(9)
KP_LORENZ96_LANES_ALL(10)
KP_LORENZ96_LANES_ALL(12)
KP_LORENZ96_LANES_ALL(16)

// Model III with K and J fixed at compile time, P sites per thread: one entry
// point per (K, J, P, T), since the loader reads each block size from its
// __launch_bounds__. Two resident blocks per SM are asked for, so that with
// more members than SMs one member's barrier waits overlap another's work.
#define KP_LORENZ05_FIXED(T, SUFFIX, K, J, P)                                                          \
    extern "C" __global__ void __launch_bounds__(kp::lorenz::Fixed<T, P, K, J>::BLOCK, 2)              \
        lorenz05_k##K##j##J##_p##P##_##SUFFIX(const T* z0, T* out, T* traj, int64_t members, int n,      \
                                              kp::Weights<T, 2 * J + 1> weights, double forcing, \
                                              double b, double c, const T* forcing_each,                \
                                              const T* b_each, const T* c_each, double dt,              \
                                              int64_t steps, int64_t every) {                           \
        kp::lorenz::l05_fixed_run<T, P, K, J>(z0, out, traj, members, n, weights, forcing, b, c,        \
                                              forcing_each, b_each, c_each, dt, steps, every);          \
    }

KP_LORENZ05_FIXED(float, f32, 32, 12, 2)
KP_LORENZ05_FIXED(float, f32, 32, 12, 4)
KP_LORENZ05_FIXED(double, f64, 32, 12, 2)
KP_LORENZ05_FIXED(double, f64, 32, 12, 4)
