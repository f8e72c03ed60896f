// The pieces of the deterministic sum that the single-array (reduce.cu) and
// batched (reduce_batched.cu) kernels share, so both add every array in the
// same order and give the same bits.
#pragma once

#include "common.cuh"

namespace kp {
namespace reduce {

constexpr int BLOCK = 256;
constexpr int LANES = 4;  // independent accumulators per thread: loads in flight

// Sum of x[begin, end) by one block: thread i takes elements begin + i,
// begin + i + BLOCK, ... in LANES interleaved accumulators, then a fixed tree.
// The order depends on (begin, end) only. `scratch` holds BLOCK doubles.
template <typename T>
__device__ double chunk_sum(const T* __restrict__ x, int64_t begin, int64_t end, double* scratch) {
    double acc[LANES] = {};
    int64_t i = begin + threadIdx.x;
    for (; i + (LANES - 1) * BLOCK < end; i += LANES * BLOCK) {
#pragma unroll
        for (int l = 0; l < LANES; ++l) acc[l] += (double)x[i + l * BLOCK];
    }
    for (; i < end; i += BLOCK) acc[0] += (double)x[i];  // the tail, fewer than LANES per thread
    const double mine = (acc[0] + acc[1]) + (acc[2] + acc[3]);
    return block_sum<double, BLOCK>(mine, scratch);
}

// One block: the partial sums in index order, as the same fixed tree.
__device__ inline void final_sum(const double* __restrict__ partials, int64_t count, double* __restrict__ sum) {
    __shared__ double scratch[BLOCK];
    double mine = 0.0;
    for (int64_t i = threadIdx.x; i < count; i += BLOCK) mine += partials[i];
    const double total = block_sum<double, BLOCK>(mine, scratch);
    if (threadIdx.x == 0) *sum = total;
}

}  // namespace reduce
}  // namespace kp
