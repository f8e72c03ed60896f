#!/usr/bin/env python3
"""Lorenz ensembles side by side on the GPU machine: kernpack (its CLI bench,
CUDA events, one launch per run) against a Numba CPU ensemble
(@njit(parallel=True), prange over members, all cores) and a CuPy version
vectorised over members (cp.roll sums), all with the formulas and summation
order of MODELS.md. Also checks that kernpack's final states equal Numba's on
a short run from the same initial states.

usage: python3 benches/compare_lorenz.py PATH/TO/kernpack [--quick]

Workloads (f64): Lorenz 2005 Model III (DART defaults, N = 960) with 40
members x 1000 steps and 1000 members x 1000 steps; Lorenz 96 (N = 40) with
1e5 members x 1000 steps. Slow alternatives run fewer steps and are scaled
to 1000 (marked "scaled" in the table): every step costs the same.
"""
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np
from numba import njit, prange

try:
    import cupy as cp
except Exception:  # CuPy is optional
    cp = None

# DART defaults (MODELS.md section 3) and Lorenz 96 (section 2).
N05, F05, K05, J05, B05, C05, DT05 = 960, 15.0, 32, 12, 10.0, 3.0, 0.001
N96, F96, DT96 = 40, 8.0, 0.05


def model3_weights(j):
    jf = float(j)
    alpha = (3.0 * jf * jf + 3.0) / (2.0 * jf * jf * jf + 4.0 * jf)
    beta = (2.0 * jf * jf + 1.0) / (jf * jf * jf * jf + 2.0 * jf * jf)
    w = np.array([alpha - beta * abs(m - j) for m in range(2 * j + 1)])
    w[0] *= 0.5
    w[-1] *= 0.5
    return w


# ---------------------------------------------------------------- Numba CPU
@njit(inline="always")
def l05_tendency(z, dz, x, y, wv, weights, n, K, J, F, b, c):
    H = K // 2
    L = 2 * J + 1
    for i in range(n):
        acc = weights[0] * z[(i + J) % n]
        for m in range(1, L):
            acc += weights[m] * z[(i + J - m) % n]
        x[i] = acc
        y[i] = z[i] - acc
    for i in range(n):
        acc = x[(i + H) % n] / 2.0
        for j in range(-H + 1, H):
            acc += x[(i - j) % n]
        acc += x[(i - H) % n] / 2.0
        wv[i] = acc / K
    b2 = b * b
    for i in range(n):
        s = wv[(i - K - H) % n] * x[(i + K - H) % n] / 2.0
        for j in range(-H + 1, H):
            s += wv[(i - K + j) % n] * x[(i + K + j) % n]
        s += wv[(i - K + H) % n] * x[(i + K + H) % n] / 2.0
        xx = -wv[(i - 2 * K) % n] * wv[(i - K) % n] + s / K
        im2, im1, ip1 = (i - 2) % n, (i - 1) % n, (i + 1) % n
        dz[i] = (xx + b2 * (-y[im2] * y[im1] + y[im1] * y[ip1])
                 + c * (-y[im2] * x[im1] + y[im1] * x[ip1]) - x[i] - b * y[i] + F)


@njit(inline="always")
def rk4_update(st, dt, d, z, s, inc):
    """Stage st of MODELS.md's RK4: k = dt f; the increment summed first, added once."""
    for i in range(z.shape[0]):
        k = dt * d[i]
        if st == 0:
            inc[i] = k / 6.0; s[i] = z[i] + k * 0.5
        elif st == 1:
            inc[i] += k / 3.0; s[i] = z[i] + k * 0.5
        elif st == 2:
            inc[i] += k / 3.0; s[i] = z[i] + k
        else:
            inc[i] += k / 6.0; z[i] += inc[i]


@njit(parallel=True)
def numba_l05(z0, steps, K, J, F, b, c, dt, weights):
    members, n = z0.shape
    out = z0.copy()
    for m in prange(members):
        z = out[m].copy()
        s = np.empty(n); d = np.empty(n); inc = np.empty(n)
        x = np.empty(n); y = np.empty(n); wv = np.empty(n)
        for _ in range(steps):
            s[:] = z
            for st in range(4):
                l05_tendency(s, d, x, y, wv, weights, n, K, J, F, b, c)
                rk4_update(st, dt, d, z, s, inc)
        out[m] = z
    return out


@njit(parallel=True)
def numba_l96(z0, steps, F, dt):
    members, n = z0.shape
    out = z0.copy()
    for m in prange(members):
        z = out[m].copy()
        s = np.empty(n); d = np.empty(n); inc = np.empty(n)
        for _ in range(steps):
            s[:] = z
            for st in range(4):
                for k in range(n):
                    d[k] = (s[(k + 1) % n] - s[(k - 2) % n]) * s[(k - 1) % n] - s[k] + F
                rk4_update(st, dt, d, z, s, inc)
        out[m] = z
    return out


# ---------------------------------------------------------------- CuPy
def cupy_rk4(z, steps, dt, f):
    for _ in range(steps):
        k1 = dt * f(z)
        k2 = dt * f(z + k1 * 0.5)
        k3 = dt * f(z + k2 * 0.5)
        k4 = dt * f(z + k3)
        z = z + (k1 / 6.0 + k2 / 3.0 + k3 / 3.0 + k4 / 6.0)
    return z


def cupy_l05_tendency(weights):
    H = K05 // 2

    def at(a, off):  # a[:, idx(i + off)]
        return cp.roll(a, -off, axis=1)

    def f(z):
        x = weights[0] * at(z, J05)
        for m in range(1, 2 * J05 + 1):
            x = x + weights[m] * at(z, J05 - m)
        y = z - x
        acc = at(x, H) / 2.0
        for j in range(-H + 1, H):
            acc = acc + at(x, -j)
        wv = (acc + at(x, -H) / 2.0) / K05
        s = at(wv, -K05 - H) * at(x, K05 - H) / 2.0
        for j in range(-H + 1, H):
            s = s + at(wv, -K05 + j) * at(x, K05 + j)
        s = s + at(wv, -K05 + H) * at(x, K05 + H) / 2.0
        xx = -at(wv, -2 * K05) * at(wv, -K05) + s / K05
        ym2, ym1, yp1 = at(y, -2), at(y, -1), at(y, 1)
        return (xx + B05 * B05 * (-ym2 * ym1 + ym1 * yp1)
                + C05 * (-ym2 * at(x, -1) + ym1 * at(x, 1)) - x - B05 * y + F05)
    return f


def cupy_l96(z):
    return (cp.roll(z, -1, axis=1) - cp.roll(z, 2, axis=1)) * cp.roll(z, 1, axis=1) - z + F96


def cupy_time(z0, steps, f, dt, reps=3):
    z = cp.asarray(z0)
    cupy_rk4(z, 1, dt, f)  # warm-up (kernel compilation)
    cp.cuda.Device().synchronize()
    times = []
    for _ in range(reps):
        start, stop = cp.cuda.Event(), cp.cuda.Event()
        start.record()
        cupy_rk4(z, steps, dt, f)
        stop.record()
        stop.synchronize()
        times.append(cp.cuda.get_elapsed_time(start, stop))
    return statistics.median(times)


# ---------------------------------------------------------------- kernpack
def kernpack_bench(exe, family, members, steps, extra=(), reps=10):
    cmd = [exe, "bench", family, "--members", str(members), "--steps", str(steps),
           "--dtype", "f64", "--reps", str(reps), *extra]
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    m = re.search(r"median_ms=([0-9.]+)", out)
    if not m:
        sys.exit(f"no RESULT line from {' '.join(cmd)}:\n{out}")
    return float(m.group(1))


def kernpack_run(exe, family, z0, steps, extra=()):
    with tempfile.TemporaryDirectory() as tmp:
        init, out = os.path.join(tmp, "init.csv"), os.path.join(tmp, "out.csv")
        np.savetxt(init, z0, delimiter=",", fmt="%.17g")
        subprocess.run([exe, family, "--init", init, "--steps", str(steps), "--backend", "gpu",
                        "--out", out, *extra], check=True, capture_output=True)
        return np.loadtxt(out, delimiter=",", skiprows=1)[:, 2:]


def initial(members, n, forcing, seed=1):
    rng = np.random.default_rng(seed)
    z = np.full((members, n), forcing)
    z[:, 0] = 1.001 * forcing
    return z + 1e-3 * rng.uniform(-1.0, 1.0, size=z.shape)


def numba_time(fn, args, reps=3):
    fn(*args)  # compile / warm-up
    times = []
    for _ in range(reps):
        t = time.perf_counter()
        fn(*args)
        times.append((time.perf_counter() - t) * 1e3)
    return statistics.median(times)


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    exe, quick = sys.argv[1], "--quick" in sys.argv
    w = model3_weights(J05)

    # Agreement on a short run from the same initial states.
    z = initial(8, N05, F05)
    ref = numba_l05(z, 100, K05, J05, F05, B05, C05, DT05, w)
    got = kernpack_run(exe, "lorenz05", z, 100)
    err05 = np.abs(got - ref).max() / np.abs(ref).max()
    # Lorenz 96 over 10 steps only: its rounding differences (the GPU fuses
    # a*b+c, Numba may not) grow with the chaos, doubling every ~0.41 time
    # units, so 100 steps (5 units) amplify them ~2^12 = 4000x (measured
    # 2.6e-10 on the H100), 10 steps (0.5 units) only ~2.3x: ~1e-13 expected,
    # 1e-11 flags a real difference. Model III's doubling time is longer and
    # its first 0.1 units barely amplify (measured 8e-15 over 100 steps).
    L96_STEPS = 10
    z96 = initial(64, N96, F96)
    ref96 = numba_l96(z96, L96_STEPS, F96, DT96)
    got96 = kernpack_run(exe, "lorenz96", z96, L96_STEPS)
    err96 = np.abs(got96 - ref96).max() / np.abs(ref96).max()
    print(f"agreement, kernpack vs Numba (max |diff| / max |z|, f64): "
          f"Model III 8 x 100 steps {err05:.2e}, Lorenz 96 64 x {L96_STEPS} steps {err96:.2e}")
    ok = err05 < 1e-10 and err96 < 1e-11

    rows = []
    # (label, family, members, steps, and the fewer steps the slow ones run:
    # Numba, CuPy, kernpack's CPU backend)
    cases = [
        ("Model III N=960, 40 x 1000", "lorenz05", 40, 1000, 1000, 10, 200),
        ("Model III N=960, 1000 x 1000", "lorenz05", 1000, 1000, 100, 10, 20),
        ("Lorenz 96 N=40, 1e5 x 1000", "lorenz96", 100_000, 1000, 100, 20, 50),
    ]
    for label, family, members, steps, numba_steps, cupy_steps, cpu_steps in cases:
        if quick:
            numba_steps, cupy_steps = max(1, numba_steps // 10), max(1, cupy_steps // 5)
            cpu_steps = max(1, cpu_steps // 10)
        kp_ms = kernpack_bench(exe, family, members, steps)
        kp_cpu = kernpack_bench(exe, family, members, cpu_steps, ("--backend", "cpu"), reps=1) * steps / cpu_steps
        if family == "lorenz05":
            z = initial(members, N05, F05)
            nb = numba_time(numba_l05, (z, numba_steps, K05, J05, F05, B05, C05, DT05, w))
            cu = (cupy_time(z, cupy_steps, cupy_l05_tendency(cp.asarray(w)), DT05)
                  if cp is not None and members <= 40 else None)
        else:
            z = initial(members, N96, F96)
            nb = numba_time(numba_l96, (z, numba_steps, F96, DT96))
            cu = cupy_time(z, cupy_steps, cupy_l96, DT96) if cp is not None else None
        nb *= steps / numba_steps
        cu = None if cu is None else cu * steps / cupy_steps
        rows.append((label, kp_ms, nb, numba_steps != steps, cu, cupy_steps != steps, kp_cpu))

    print(f"\n{'workload (f64)':32} {'kernpack ms':>12} {'Numba CPU ms':>14} {'x':>7} {'CuPy ms':>10} {'x':>7}"
          f" {'kernpack CPU ms':>16} {'x':>7}")
    for label, kp_ms, nb, nb_scaled, cu, cu_scaled, kp_cpu in rows:
        nb_s = f"{nb:.1f}{'*' if nb_scaled else ''}"
        cu_s = "-" if cu is None else f"{cu:.1f}{'*' if cu_scaled else ''}"
        cu_x = "-" if cu is None else f"{cu / kp_ms:.0f}"
        print(f"{label:32} {kp_ms:12.3f} {nb_s:>14} {nb / kp_ms:7.0f} {cu_s:>10} {cu_x:>7}"
              f" {kp_cpu:15.1f}* {kp_cpu / kp_ms:7.0f}")
    print(f"* scaled to 1000 steps from fewer (Numba and kernpack's CPU backend on {os.cpu_count()} CPU threads)")
    if not ok:
        sys.exit("kernpack and Numba disagree")


if __name__ == "__main__":
    main()
