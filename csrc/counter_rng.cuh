// Counter-based random numbers: Philox-4x32-10, as src/params/counter_rng.rs
// (the same words for the same key and counter on every backend), and the
// standard normal values made from them.
#pragma once
#include <stdint.h>

namespace kp {
namespace rng {

struct Words {
    uint32_t w[4];
};

__device__ __forceinline__ Words philox4x32_10(uint32_t c0, uint32_t c1, uint32_t c2, uint32_t c3, uint32_t k0,
                                               uint32_t k1) {
#pragma unroll
    for (int round = 0; round < 10; ++round) {
        if (round > 0) {
            k0 += 0x9E3779B9u;
            k1 += 0xBB67AE85u;
        }
        const uint32_t lo0 = 0xD2511F53u * c0, hi0 = __umulhi(0xD2511F53u, c0);
        const uint32_t lo1 = 0xCD9E8D57u * c2, hi1 = __umulhi(0xCD9E8D57u, c2);
        const uint32_t n0 = hi1 ^ c1 ^ k0, n2 = hi0 ^ c3 ^ k1;
        c0 = n0, c1 = lo1, c2 = n2, c3 = lo0;
    }
    return Words{{c0, c1, c2, c3}};
}

// The draw of (seed, stream, index, lane): counter (lane, index, stream), key the seed.
__device__ __forceinline__ Words draw(uint64_t seed, uint64_t stream, uint64_t index, uint32_t lane) {
    return philox4x32_10(lane, (uint32_t)index, (uint32_t)(index >> 32), (uint32_t)stream, (uint32_t)seed,
                         (uint32_t)(seed >> 32));
}

// Box-Muller, cosine branch; the first uniform in (0, 1].
__device__ __forceinline__ double standard_normal(Words d, double) {
    const uint64_t a = ((uint64_t)d.w[0] << 32 | d.w[1]) >> 11;
    const uint64_t b = ((uint64_t)d.w[2] << 32 | d.w[3]) >> 11;
    const double scale = 1.0 / 9007199254740992.0;  // 2^-53
    const double u1 = (double)(a + 1) * scale, u2 = (double)b * scale;
    return sqrt(-2.0 * log(u1)) * cospi(2.0 * u2);
}
__device__ __forceinline__ float standard_normal(Words d, float) {
    const float scale = 1.0f / 16777216.0f;  // 2^-24
    const float u1 = (float)((d.w[0] >> 8) + 1) * scale, u2 = (float)(d.w[2] >> 8) * scale;
    return sqrtf(-2.0f * logf(u1)) * cospif(2.0f * u2);
}

}  // namespace rng
}  // namespace kp
