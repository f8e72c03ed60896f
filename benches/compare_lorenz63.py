#!/usr/bin/env python3
"""Lorenz 63 ensembles side by side on the GPU machine: kernpack (its CLI
bench: one launch per run, CUDA events; and kernpack.ode.lorenz63 on CuPy
arrays, CUDA events) against an array-library RK4 vectorised over members
(CuPy elementwise operations, a few dozen launches per step: the shape of a
JAX/PyTorch ensemble), with published GPU ODE-solver figures for context.
Also checks kernpack's final states against the CuPy RK4 on a short run.

usage: python3 benches/compare_lorenz63.py PATH/TO/kernpack [--quick]

Workload: 8,388,608 members x 1000 fixed RK4 steps of dt = 0.01, f32,
sigma = 10, rho = 28, beta = 8/3 (also with per-member parameters). The CuPy
version runs fewer steps, scaled to 1000 (every step costs the same).
Published (V100, same workload): MPGOS 94 ms, DiffEqGPU 145 ms; the target
for kernpack on an H100 is <= 15 ms of kernel time.
"""
import re
import subprocess
import sys

import numpy as np

try:
    import cupy as cp
except Exception:  # CuPy is optional
    cp = None

MEMBERS, STEPS, DT = 8_388_608, 1000, 0.01


def kernpack_cli(exe, members, steps, per_member):
    args = [exe, "bench", "lorenz63", "--members", str(members), "--steps", str(steps), "--dtype", "f32"]
    if per_member:
        args.append("--per-member")
    out = subprocess.run(args, check=True, capture_output=True, text=True).stdout
    return float(re.search(r"median_ms=([0-9.]+)", out).group(1))


def cupy_rk4(z, sigma, rho, beta, dt, steps):
    """Classical RK4 over members with CuPy array operations (k = dt f(z),
    z += k1/6 + k2/3 + k3/3 + k4/6)."""
    x, y, w = z[:, 0].copy(), z[:, 1].copy(), z[:, 2].copy()
    dt = z.dtype.type(dt)

    def f(x, y, w):
        return dt * sigma * (y - x), dt * (x * (rho - w) - y), dt * (x * y - beta * w)

    for _ in range(steps):
        k1 = f(x, y, w)
        k2 = f(x + k1[0] / 2, y + k1[1] / 2, w + k1[2] / 2)
        k3 = f(x + k2[0] / 2, y + k2[1] / 2, w + k2[2] / 2)
        k4 = f(x + k3[0], y + k3[1], w + k3[2])
        x = x + (k1[0] / 6 + k2[0] / 3 + k3[0] / 3 + k4[0] / 6)
        y = y + (k1[1] / 6 + k2[1] / 3 + k3[1] / 3 + k4[1] / 6)
        w = w + (k1[2] / 6 + k2[2] / 3 + k3[2] / 3 + k4[2] / 6)
    return cp.stack([x, y, w], axis=1)


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    exe, quick = sys.argv[1], "--quick" in sys.argv
    members = MEMBERS // 16 if quick else MEMBERS
    rows = []
    for per_member in (False, True):
        ms = kernpack_cli(exe, members, STEPS, per_member)
        rows.append((f"kernpack CLI bench (per_member={per_member})", ms, ""))
    if cp is not None:
        from gpu_timing import cuda_time

        import kernpack.ode

        rng = np.random.default_rng(1)
        z = cp.asarray((1.0 + 1e-3 * (2 * rng.random((members, 3)) - 1)).astype(np.float32))
        ms = cuda_time(lambda: kernpack.ode.lorenz63(z, dt=DT, steps=STEPS), reps=10, warm=2)
        rows.append(("kernpack.ode.lorenz63 (CuPy arrays)", ms, ""))
        sigma, rho, beta = (np.float32(v) for v in (10.0, 28.0, 8.0 / 3.0))
        few = 20
        ms = cuda_time(lambda: cupy_rk4(z, sigma, rho, beta, DT, few), reps=3, warm=1) * STEPS / few
        rows.append(("CuPy array RK4 (scaled)", ms, f"{few} steps x {STEPS // few}"))
        # Agreement on a short run (100 steps: one time unit, rounding-level
        # differences amplified by at most ~e^4 by the flow).
        small = z[:4096]
        ours = cp.asnumpy(kernpack.ode.lorenz63(small, dt=DT, steps=100).final).astype(np.float64)
        theirs = cp.asnumpy(cupy_rk4(small.astype(cp.float64), 10.0, 28.0, 8.0 / 3.0, DT, 100))
        err = np.max(np.abs(ours - theirs)) / np.max(np.abs(theirs))
        print(f"agreement after 100 steps (f32 kernpack vs f64 CuPy), scaled max error: {err:.2e}")
    print(f"\nLorenz 63, {members} members x {STEPS} RK4 steps, f32")
    print(f"{'implementation':45s} {'ms':>10s}  note")
    for name, ms, note in rows:
        print(f"{name:45s} {ms:10.3f}  {note}")
    print(f"{'MPGOS, V100 (published)':45s} {94.0:10.3f}")
    print(f"{'DiffEqGPU, V100 (published)':45s} {145.0:10.3f}")


if __name__ == "__main__":
    main()
