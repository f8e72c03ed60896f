#!/usr/bin/env python3
"""Adaptive Lorenz 63 ensembles side by side on the GPU machine: kernpack
(its CLI bench: one launch, CUDA events, each member its own step size)
against SciPy's solve_ivp(RK45) per member (timed on a sample of members)
and against an array-library Dormand-Prince vectorised over members (CuPy
elementwise operations with one step size for the whole ensemble, the error
norm taken over every member: the shape of a torchdiffeq / JAX ensemble).
Also checks kernpack's float64 states and step counts against SciPy on the
sample.

usage: python3 benches/compare_lorenz63_adaptive.py PATH/TO/kernpack [--members N]

Workload (the published GPU ODE benchmark's): u0 = (1, 0, 0), sigma = 10,
beta = 2.666, rho per member evenly from 0 to 21, t from 0 to 1, first step
0.001, rtol = atol = 1e-8; 8,388,608 members, f32. Published (V100): MPGOS
49 ms, DiffEqGPU 69 ms (adaptive Tsit5); the target for kernpack is <= 10 ms.
"""
import argparse
import re
import subprocess
import time

import numpy as np
from scipy.integrate import solve_ivp

try:
    import cupy as cp
except Exception:  # CuPy is optional
    cp = None

TOL, FIRST, T_END = 1e-8, 1e-3, 1.0


def kernpack_cli(exe, members, dtype, backend="gpu", reps=10):
    args = [exe, "bench", "lorenz63-adaptive", "--members", str(members), "--dtype", dtype, "--reps", str(reps)]
    if backend == "cpu":
        args += ["--backend", "cpu"]
    out = subprocess.run(args, check=True, capture_output=True, text=True).stdout
    line = next(ln for ln in out.splitlines() if ln.startswith("RESULT"))
    return {k: float(v) for k, v in re.findall(r"(\w+)=([0-9.e+-]+)", line) if k not in ("backend", "dtype")}


def rhos(members):
    return 21.0 * np.arange(members) / max(members - 1, 1)


def scipy_sample(sample):
    """SciPy per member on `sample` rho values: seconds per member, final
    states, accepted and rejected steps."""
    finals, accepted, rejected = [], [], []
    started = time.perf_counter()
    for rho in sample:
        def f(t, z, rho=rho):
            x, y, w = z
            return [10.0 * (y - x), rho * x - y - x * w, x * y - 2.666 * w]

        sol = solve_ivp(f, (0.0, T_END), [1.0, 0.0, 0.0], method="RK45", rtol=TOL, atol=TOL, first_step=FIRST)
        finals.append(sol.y[:, -1])
        accepted.append(len(sol.t) - 1)
        rejected.append((sol.nfev - 1) // 6 - accepted[-1])
    return (time.perf_counter() - started) / len(sample), np.array(finals), np.array(accepted), np.array(rejected)


A = [[], [1 / 5], [3 / 40, 9 / 40], [44 / 45, -56 / 15, 32 / 9],
     [19372 / 6561, -25360 / 2187, 64448 / 6561, -212 / 729],
     [9017 / 3168, -355 / 33, 46732 / 5247, 49 / 176, -5103 / 18656]]
B = [35 / 384, 0, 500 / 1113, 125 / 192, -2187 / 6784, 11 / 84]
E = [-71 / 57600, 0, 71 / 16695, -71 / 1920, 17253 / 339200, -22 / 525, 1 / 40]


def cupy_dopri5(members, dtype):
    """The whole ensemble as one system: one step size, SciPy's controller
    on the RMS error over every member. Returns seconds and steps."""
    z = cp.zeros((3, members), dtype=dtype)
    z[0] = 1
    rho = cp.asarray(rhos(members), dtype=dtype)

    def f(z):
        x, y, w = z
        return cp.stack([10 * (y - x), rho * x - y - x * w, x * y - dtype(2.666) * w])

    cp.cuda.Device().synchronize()
    start = cp.cuda.Event()
    stop = cp.cuda.Event()
    start.record()
    t, h, k1, steps = 0.0, FIRST, f(z), 0
    while t < T_END:
        h = min(h, T_END - t)
        k = [k1]
        for s in range(1, 6):
            k.append(f(z + h * sum(a * kj for a, kj in zip(A[s], k))))
        z_new = z + h * sum(b * kj for b, kj in zip(B, k) if b)
        k.append(f(z_new))
        err = h * sum(e * kj for e, kj in zip(E, k) if e)
        scale = TOL + TOL * cp.maximum(cp.abs(z), cp.abs(z_new))
        norm = float(cp.sqrt(cp.mean((err / scale) ** 2)))
        if norm < 1:
            t, z, k1, steps = t + h, z_new, k[6], steps + 1
            h *= min(10.0, 0.9 * norm ** -0.2) if norm > 0 else 10.0
        else:
            h *= max(0.2, 0.9 * norm ** -0.2)
    stop.record()
    stop.synchronize()
    return cp.cuda.get_elapsed_time(start, stop) / 1e3, steps


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("exe")
    ap.add_argument("--members", type=int, default=8_388_608)
    ap.add_argument("--cpu-members", type=int, default=1 << 20)
    ap.add_argument("--sample", type=int, default=64)
    args = ap.parse_args()
    n = args.members
    print(f"# adaptive Lorenz 63, {n} members, t 0..{T_END}, tol {TOL}, first step {FIRST}")
    for dtype in ("f32", "f64"):
        r = kernpack_cli(args.exe, n, dtype)
        print(f"kernpack GPU {dtype}: {r['median_ms']:.3f} ms, accepted steps mean {r['accepted_mean']:.1f} "
              f"max {r['accepted_max']:.0f}, rejected mean {r['rejected_mean']:.2f}")
    r = kernpack_cli(args.exe, args.cpu_members, "f64", backend="cpu", reps=3)
    per_member_cpu = r["median_ms"] / 1e3 / args.cpu_members
    print(f"kernpack CPU backend f64 ({args.cpu_members} members): {r['median_ms']:.1f} ms, "
          f"{per_member_cpu * 1e6:.3f} us per member (all cores)")
    sample = rhos(n)[np.linspace(0, n - 1, args.sample).astype(np.int64)]
    per_member, finals, accepted, rejected = scipy_sample(sample)
    print(f"SciPy solve_ivp RK45 f64: {per_member * 1e3:.2f} ms per member (one core): "
          f"{per_member * n:.0f} s for the ensemble; kernpack CPU backend {per_member / per_member_cpu:.0f}x")
    # kernpack f64 on the same sample, through Python (the same kernel).
    try:
        import kernpack.ode as ode

        x0 = np.tile([1.0, 0.0, 0.0], (len(sample), 1))
        got = ode.lorenz63_adaptive(x0, 10.0, sample, 2.666, t_span=(0, T_END), rtol=TOL, atol=TOL,
                                    first_step=FIRST, backend="gpu")
        err = np.max(np.abs(got.final - finals) / np.maximum(np.abs(finals).max(axis=1, keepdims=True), 1e-300))
        same = np.mean((got.accepted == accepted) & (got.rejected == rejected))
        print(f"kernpack GPU f64 vs SciPy on the sample: max relative error {err:.2e}, "
              f"same accepted/rejected counts for {100 * same:.0f}% of members")
    except ImportError:
        print("kernpack Python package not installed: accuracy check skipped")
    if cp is not None:
        for dtype in (np.float32, np.float64):
            cupy_dopri5(1 << 16, dtype)  # warm-up
            seconds, steps = cupy_dopri5(n, dtype)
            print(f"CuPy Dormand-Prince, one step size for all ({np.dtype(dtype).name}): {seconds * 1e3:.1f} ms, "
                  f"{steps} steps")


if __name__ == "__main__":
    main()
