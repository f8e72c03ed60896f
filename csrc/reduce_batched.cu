// Batched normalisation: many arrays of one flat buffer (array a is
// x[offsets[a], offsets[a+1])) normalised in place with one fixed sequence of
// four launches, whatever the number of arrays.
//
// Every array is cut into the same chunks as a lone array of its length (the
// split in src/api/reduce.rs, whose two constants the host passes in), each
// chunk is summed by chunk_sum and the chunk sums by final_sum (reduce.cuh):
// the per-array sums are the bits the single-array sum gives, on every run.
// A (array, chunk) pair is a "piece"; pieces are numbered array after array,
// and grid-strided blocks take them in any order without changing a result.
//
// Status per array: 0 normalised, 1 sum zero or not finite (array untouched),
// 2 offsets invalid (the whole batch is untouched).
#include "common.cuh"
#include "reduce.cuh"

namespace kp {
namespace reduce_batched {

using reduce::BLOCK;

enum : int { OK = 0, BAD_SUM = 1, BAD_OFFSETS = 2 };

// Chunks of an array of n elements: the host's split(n).
struct Split {
    int64_t blocks, chunk;
};
__device__ __forceinline__ Split split(int64_t n, int64_t per_block, int64_t max_blocks) {
    const int64_t blocks = min(max((n + per_block - 1) / per_block, (int64_t)1), max_blocks);
    return {blocks, max((n + blocks - 1) / blocks, (int64_t)1)};
}

// plan[a] = index of array a's first piece, plan[narrays] = pieces in all,
// plan[narrays + 1] = 1 when the offsets are valid (0 <= offsets[a] <=
// offsets[a+1] <= n for all a), else 0 and no piece at all. One block.
__device__ void make_plan(const int64_t* __restrict__ offsets, int64_t narrays, int64_t n, int64_t per_block,
                          int64_t max_blocks, int64_t* __restrict__ plan) {
    __shared__ int64_t scan[BLOCK];
    int bad = 0;
    for (int64_t a = threadIdx.x; a < narrays; a += BLOCK) {
        const int64_t lo = offsets[a], hi = offsets[a + 1];
        bad |= lo < 0 || hi < lo || hi > n;
    }
    const bool valid = !__syncthreads_or(bad);
    int64_t carry = 0;
    for (int64_t base = 0; base < narrays; base += BLOCK) {
        const int64_t a = base + threadIdx.x;
        const int64_t mine = (valid && a < narrays) ? split(offsets[a + 1] - offsets[a], per_block, max_blocks).blocks : 0;
        scan[threadIdx.x] = mine;
        __syncthreads();
        for (int width = 1; width < BLOCK; width *= 2) {  // inclusive scan (Hillis-Steele)
            const int64_t add = threadIdx.x >= width ? scan[threadIdx.x - width] : 0;
            __syncthreads();
            scan[threadIdx.x] += add;
            __syncthreads();
        }
        if (a < narrays) plan[a] = carry + scan[threadIdx.x] - mine;
        carry += scan[BLOCK - 1];
        __syncthreads();  // scan is rewritten by the next tile
    }
    if (threadIdx.x == 0) plan[narrays] = carry, plan[narrays + 1] = valid;
}

// Where piece p lies: the array, the array's first element, and the piece's
// element range within the array.
struct Piece {
    int64_t array, base, begin, end;
};

// Every array has at least one piece, so plan[0..narrays] increases strictly
// and one binary search finds the array of p. Thread 0 searches, all read.
__device__ Piece locate(int64_t p, const int64_t* __restrict__ plan, const int64_t* __restrict__ offsets,
                        int64_t narrays, int64_t per_block, int64_t max_blocks) {
    __shared__ int64_t found;
    if (threadIdx.x == 0) {
        int64_t lo = 0, hi = narrays - 1;  // the last a with plan[a] <= p
        while (lo < hi) {
            const int64_t mid = (lo + hi + 1) / 2;
            if (plan[mid] <= p) lo = mid; else hi = mid - 1;
        }
        found = lo;
    }
    __syncthreads();
    const int64_t a = found;
    __syncthreads();  // `found` is rewritten by the next call
    const int64_t base = offsets[a], n = offsets[a + 1] - base;
    const int64_t chunk = split(n, per_block, max_blocks).chunk;
    const int64_t begin = (p - plan[a]) * chunk;
    return {a, base, begin, min(begin + chunk, n)};
}

template <typename T>
__device__ void piece_sums(const T* __restrict__ x, const int64_t* __restrict__ offsets, int64_t narrays,
                           int64_t per_block, int64_t max_blocks, const int64_t* __restrict__ plan,
                           double* __restrict__ partials) {
    __shared__ double scratch[BLOCK];
    const int64_t pieces = plan[narrays];
    for (int64_t p = blockIdx.x; p < pieces; p += gridDim.x) {
        const Piece c = locate(p, plan, offsets, narrays, per_block, max_blocks);
        const double total = reduce::chunk_sum(x + c.base, c.begin, c.end, scratch);
        if (threadIdx.x == 0) partials[p] = total;
    }
}

// One block per array (grid-strided): its sum and status.
__device__ void array_sums(const int64_t* __restrict__ plan, int64_t narrays, const double* __restrict__ partials,
                           double* __restrict__ sums, int* __restrict__ status) {
    const bool valid = plan[narrays + 1] != 0;
    for (int64_t a = blockIdx.x; a < narrays; a += gridDim.x) {
        if (!valid) {
            if (threadIdx.x == 0) sums[a] = nan(""), status[a] = BAD_OFFSETS;
            continue;
        }
        reduce::final_sum(partials + plan[a], plan[a + 1] - plan[a], sums + a);
        if (threadIdx.x == 0) {
            const double s = sums[a];
            status[a] = normalizable(s) ? OK : BAD_SUM;
        }
    }
}

// x <- x / sum per piece, with the single-array kernel's arithmetic
// (x * (1 / sum) in double, rounded once to T); arrays with a bad status are skipped.
template <typename T>
__device__ void scale_pieces(T* __restrict__ x, const int64_t* __restrict__ offsets, int64_t narrays,
                             int64_t per_block, int64_t max_blocks, const int64_t* __restrict__ plan,
                             const double* __restrict__ sums, const int* __restrict__ status) {
    const int64_t pieces = plan[narrays];
    for (int64_t p = blockIdx.x; p < pieces; p += gridDim.x) {
        const Piece c = locate(p, plan, offsets, narrays, per_block, max_blocks);
        if (status[c.array] != OK) continue;
        const double inv = 1.0 / sums[c.array];
        T* xa = x + c.base;
        for (int64_t i = c.begin + threadIdx.x; i < c.end; i += BLOCK) xa[i] = (T)((double)xa[i] * inv);
    }
}

}  // namespace reduce_batched
}  // namespace kp

extern "C" __global__ void __launch_bounds__(kp::reduce::BLOCK)
    reduce_batched_plan(const int64_t* offsets, int64_t narrays, int64_t n, int64_t per_block, int64_t max_blocks,
                        int64_t* plan) {
    kp::reduce_batched::make_plan(offsets, narrays, n, per_block, max_blocks, plan);
}

extern "C" __global__ void __launch_bounds__(kp::reduce::BLOCK)
    reduce_batched_final(const int64_t* plan, int64_t narrays, const double* partials, double* sums, int* status) {
    kp::reduce_batched::array_sums(plan, narrays, partials, sums, status);
}

#define KP_REDUCE_BATCHED_ENTRY_POINTS(T, SUFFIX)                                                              \
    extern "C" __global__ void __launch_bounds__(kp::reduce::BLOCK)                                           \
        reduce_batched_partial_##SUFFIX(const T* x, const int64_t* offsets, int64_t narrays, int64_t per_block, \
                                        int64_t max_blocks, const int64_t* plan, double* partials) {           \
        kp::reduce_batched::piece_sums<T>(x, offsets, narrays, per_block, max_blocks, plan, partials);         \
    }                                                                                                         \
    extern "C" __global__ void __launch_bounds__(kp::reduce::BLOCK)                                           \
        normalize_batched_##SUFFIX(T* x, const int64_t* offsets, int64_t narrays, int64_t per_block,            \
                                   int64_t max_blocks, const int64_t* plan, const double* sums,               \
                                   const int* status) {                                                       \
        kp::reduce_batched::scale_pieces<T>(x, offsets, narrays, per_block, max_blocks, plan, sums, status);   \
    }

KP_REDUCE_BATCHED_ENTRY_POINTS(float, f32)
KP_REDUCE_BATCHED_ENTRY_POINTS(double, f64)
