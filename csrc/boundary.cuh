// SciPy's boundary modes on the device: where a filter reads index i of a
// line of n points extended past its ends (the box filter and the 1-D
// correlation; the host twin is params::stencil::extend).
#pragma once
#include "kernpack_params.h"

namespace kp {
namespace stencil {

// Where SciPy reads index i of a line of n points (i may be far outside: a
// window wider than the line reflects again and again). -1: the constant cval.
__device__ __forceinline__ int64_t extend(int64_t i, int64_t n, int mode) {
    if (i >= 0 && i < n) return i;
    switch (mode) {
        case KP_BOX_CONSTANT: return -1;
        case KP_BOX_REFLECT: {
            const int64_t m = ((i % (2 * n)) + 2 * n) % (2 * n);
            return m < n ? m : 2 * n - 1 - m;
        }
        case KP_BOX_MIRROR: {
            if (n == 1) return 0;
            const int64_t p = 2 * n - 2;
            const int64_t m = ((i % p) + p) % p;
            return m < n ? m : p - m;
        }
        case KP_BOX_WRAP: return ((i % n) + n) % n;
        default: return i < 0 ? 0 : n - 1;  // nearest (interior mode never uses the value)
    }
}

}  // namespace stencil
}  // namespace kp
