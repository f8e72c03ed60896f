"""Lorenz 96 ensemble RK4 in Numba, written the natural way: prange over
members, inner loops over sites, the RK4 of MODELS.md (k1/6 + k2/3 + k3/3 +
k4/6 summed, then added). The peer of kernpack's CPU backend
(`kernpack lorenz96 --backend cpu`).

Usage: python lorenz96_numba.py [members] [steps] [repeats]
(defaults 100000 1000 5; N = 40, F = 8, dt = 0.05). Threads: NUMBA_NUM_THREADS.
"""
import sys
import time

import numba
import numpy as np


@numba.njit(inline="always")
def _tendency(x, F, out):
    n = x.shape[0]
    for k in range(n):
        out[k] = (x[(k + 1) % n] - x[(k - 2) % n]) * x[(k - 1) % n] - x[k] + F


@numba.njit(parallel=True)
def integrate(z0, F, dt, steps):
    """RK4 `steps` steps of every row of z0 (members x N); returns the final states."""
    members, n = z0.shape
    z = z0.copy()
    for m in numba.prange(members):
        x = z[m].copy()
        k1 = np.empty(n)
        k2 = np.empty(n)
        k3 = np.empty(n)
        k4 = np.empty(n)
        tmp = np.empty(n)
        for _ in range(steps):
            _tendency(x, F, k1)
            for i in range(n):
                k1[i] *= dt
                tmp[i] = x[i] + k1[i] * 0.5
            _tendency(tmp, F, k2)
            for i in range(n):
                k2[i] *= dt
                tmp[i] = x[i] + k2[i] * 0.5
            _tendency(tmp, F, k3)
            for i in range(n):
                k3[i] *= dt
                tmp[i] = x[i] + k3[i]
            _tendency(tmp, F, k4)
            for i in range(n):
                k4[i] *= dt
                x[i] += k1[i] / 6.0 + k2[i] / 3.0 + k3[i] / 3.0 + k4[i] / 6.0
        z[m] = x
    return z


def main():
    members = int(sys.argv[1]) if len(sys.argv) > 1 else 100_000
    steps = int(sys.argv[2]) if len(sys.argv) > 2 else 1000
    repeats = int(sys.argv[3]) if len(sys.argv) > 3 else 5
    n, F, dt = 40, 8.0, 0.05
    rng = np.random.default_rng(1)
    z0 = F + rng.normal(size=(members, n))
    integrate(z0[:8], F, dt, 2)  # compile
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        out = integrate(z0, F, dt, steps)
        times.append(time.perf_counter() - t0)
    print(
        f"numba lorenz96 N={n} members={members} steps={steps} threads={numba.get_num_threads()}: "
        f"median {np.median(times):.3f} s, min {min(times):.3f} s over {repeats} "
        f"(checksum {out.sum():.6e})"
    )


if __name__ == "__main__":
    main()
