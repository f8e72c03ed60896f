#!/usr/bin/env python3
"""Side-by-side timing of the coupled F/G system on the GPU machine
(N = 512, 100 RK4 steps of dt = 1e-4, complex64, F = G = 1, delta0 = 1):

  1. the accepted Numba answer to this problem, reproduced as published:
     `@vectorize` RK4 kernels for F and G (ping-pong buffers, scalars as N x N
     device arrays), `@cuda.reduce` for sum(F), a `distribute` kernel to
     broadcast it, and one complex copied to the host per step;
  2. CuPy fused: one ElementwiseKernel for the whole RK4 step of F and G, then
     `F.sum()` on the device feeding the next step, a Python loop, no host copy;
  3. kernpack via `kernpack bench fg --path both` (CUDA events; the cooperative
     single launch and the per-step launches).

Prints microseconds per step and speed-ups, and delta[1], delta[2] of all three
against the values printed with that answer and a complex128 kernpack run.

    python3 benches/compare_fg.py KERNPACK_BINARY [N STEPS]
"""
import json
import os
import re
import subprocess
import sys
import time

import numpy as np

np.row_stack = np.vstack  # NumPy 2.4 removed it; numba-cuda still imports it
import cupy as cp  # noqa: E402
from gpu_timing import cuda_time  # noqa: E402 (benches/gpu_timing.py)
from numba import cuda, vectorize  # noqa: E402

DT = 1e-4
SEED_DELTA = {1: 262143.98 - 78.64321j, 2: 1361288.4 + 3141394700j}


# ---- 1. the accepted Numba answer, as published ----

@cuda.jit(device=True)
def dFdt(F, G, delta):
    first_factor = -2j * F
    second_factor = -1j * delta * (2 * G - 1)
    return first_factor + second_factor


@cuda.jit(device=True)
def dGdt(F, G, delta):
    prefactor = -1j
    secondfactor = (delta.conjugate()) * F - delta * F.conjugate()
    return prefactor * secondfactor


@vectorize(['c8(c8,c8,c8,c8,c8)'], target='cuda')
def RK4_step_F(G, F, delta, dt, index):
    G1 = dGdt(F, G, delta)
    F1 = dFdt(F, G, delta)
    G2 = dGdt(F + dt / 2 * F1, G + dt / 2 * G1, delta)
    F2 = dFdt(F + dt / 2 * F1, G + dt / 2 * G1, delta)
    G3 = dGdt(F + dt / 2 * F2, G + dt / 2 * G2, delta)
    F3 = dFdt(F + dt / 2 * F2, G + dt / 2 * G2, delta)
    F4 = dFdt(F + dt * F3, G + dt * G3, delta)
    return (F + (dt / 6) * (F1 + (2 * F2) + (2 * F3) + F4))


@vectorize(['c8(c8,c8,c8,c8,c8)'], target='cuda')
def RK4_step_G(G, F, delta, dt, index):
    G1 = dGdt(F, G, delta)
    F1 = dFdt(F, G, delta)
    G2 = dGdt(F + dt / 2 * F1, G + dt / 2 * G1, delta)
    F2 = dFdt(F + dt / 2 * F1, G + dt / 2 * G1, delta)
    G3 = dGdt(F + dt / 2 * F2, G + dt / 2 * G2, delta)
    F3 = dFdt(F + dt / 2 * F2, G + dt / 2 * G2, delta)
    G4 = dGdt(F + dt * F3, G + dt * G3, delta)
    return (G + (dt / 6) * (G1 + (2 * G2) + (2 * G3) + G4))


@cuda.reduce
def sum_reduce(a, b):
    return a + b


@cuda.jit
def distribute(A, B, s):
    i = cuda.grid(1)
    if i < s:
        B[i] = A[0]


def RK4_method_new(F_arr, G_arr, N, n, delta_i):
    delta_h = np.zeros(shape=(n + 1), dtype=np.complex64)
    delta_h[0] = delta_i
    in_F = cuda.to_device(F_arr)
    in_G = cuda.to_device(G_arr)
    out_F = cuda.device_array(shape=(N, N), dtype=np.complex64)
    out_G = cuda.device_array(shape=(N, N), dtype=np.complex64)
    dt_arr = np.full((N, N), np.complex64(DT), dtype=np.complex64)
    dev_dt = cuda.to_device(dt_arr)
    dev_index = cuda.to_device(dev_dt)
    delta_arr = np.full((N, N), delta_i, dtype=np.complex64)
    dev_delta = cuda.to_device(delta_arr)
    b = 256
    g = (N * N + b - 1) // b
    for i in range(n):
        RK4_step_G(in_G, in_F, dev_delta, dev_dt, dev_index, out=out_G)
        RK4_step_F(in_G, in_F, dev_delta, dev_dt, dev_index, out=out_F)
        in_G, in_F, out_G, out_F = out_G, out_F, in_G, in_F  # ping-pong
        sum_reduce(in_F.reshape(N * N), res=dev_delta.reshape(N * N))  # 8 byte D->D copy
        distribute[g, b](dev_delta.reshape(N * N), dev_delta.reshape(N * N), N * N)
        delta_h[i + 1] = dev_delta[0, 0]  # 8 byte D->H copy
    return delta_h


# ---- 2. CuPy: the whole RK4 step fused in one ElementwiseKernel ----

rk4_fused = cp.ElementwiseKernel(
    'complex64 F, complex64 G, complex64 delta, float32 dt',
    'complex64 Fo, complex64 Go',
    '''
    const complex<float> I(0.0f, 1.0f);
    const complex<float> d = delta;
    auto dF = [&](complex<float> f, complex<float> g) { return -2.0f * I * f - I * d * (2.0f * g - 1.0f); };
    auto dG = [&](complex<float> f) { return -I * (conj(d) * f - d * conj(f)); };
    const complex<float> f = F, g = G;
    const complex<float> k1f = dt * dF(f, g), k1g = dt * dG(f);
    const complex<float> k2f = dt * dF(f + 0.5f * k1f, g + 0.5f * k1g), k2g = dt * dG(f + 0.5f * k1f);
    const complex<float> k3f = dt * dF(f + 0.5f * k2f, g + 0.5f * k2g), k3g = dt * dG(f + 0.5f * k2f);
    const complex<float> k4f = dt * dF(f + k3f, g + k3g), k4g = dt * dG(f + k3f);
    Fo = f + (k1f + 2.0f * k2f + 2.0f * k3f + k4f) / 6.0f;
    Go = g + (k1g + 2.0f * k2g + 2.0f * k3g + k4g) / 6.0f;
    ''',
    'fg_rk4_fused')


def cupy_fused(F0, G0, n, delta_i):
    F, G = F0.copy(), G0.copy()
    Fn, Gn = cp.empty_like(F), cp.empty_like(G)
    hist = cp.empty(n + 1, dtype=cp.complex64)
    delta = cp.asarray(np.complex64(delta_i))  # 0-d, stays on the device
    hist[0] = delta
    dt = np.float32(DT)
    for i in range(n):
        rk4_fused(F, G, delta, dt, Fn, Gn)
        F, Fn, G, Gn = Fn, F, Gn, G
        delta = F.sum()
        hist[i + 1] = delta
    return hist




def wall_time(fn, reps, warm=2):
    """Median wall milliseconds (the Numba answer synchronises every step anyway)."""
    for _ in range(warm):
        fn()
    times = []
    for _ in range(reps):
        cuda.synchronize()
        t0 = time.perf_counter()
        fn()
        cuda.synchronize()
        times.append((time.perf_counter() - t0) * 1e3)
    times.sort()
    return times[len(times) // 2]


def run_kernpack(binary, N, n):
    cmd = [binary, "bench", "fg", "--n", str(N), "--steps", str(n), "--dtype", "c64", "--path", "both"]
    text = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    results, deltas = [], {}
    for line in text.splitlines():
        if line.startswith("RESULT"):
            fields = dict(f.split("=", 1) for f in line.split()[3:] if "=" in f)
            results.append(fields)
            deltas = {}
            results[-1]["deltas"] = deltas
        elif line.startswith("DELTA"):
            _, k, re, im = line.split()
            deltas[int(k)] = complex(float(re), float(im))
    # A complex128 run for reference values.
    csv = subprocess.run([binary, "fg", "--n", str(N), "--steps", "2", "--dtype", "c128", "--backend", "gpu"],
                         check=True, capture_output=True, text=True).stdout.splitlines()
    ref = {}
    for row in csv[1:]:
        k, _, re, im, _ = row.split(",")
        ref[int(k)] = complex(float(re), float(im))
    return results, ref


def main():
    binary = sys.argv[1] if len(sys.argv) > 1 else "target/release/kernpack"
    N = int(sys.argv[2]) if len(sys.argv) > 2 else 512
    n = int(sys.argv[3]) if len(sys.argv) > 3 else 100
    F_0 = np.ones((N, N), dtype=np.complex64)
    G_0 = np.ones((N, N), dtype=np.complex64)
    delta_i = np.complex64(1)
    print(f"device: {cp.cuda.runtime.getDeviceProperties(0)['name'].decode()}; N={N}, {n} steps, complex64")

    seed_hist = RK4_method_new(F_0, G_0, N, n, delta_i)
    seed_ms = wall_time(lambda: RK4_method_new(F_0, G_0, N, n, delta_i), reps=5)

    F0d, G0d = cp.asarray(F_0), cp.asarray(G_0)
    cupy_hist = cupy_fused(F0d, G0d, n, delta_i).get()
    cupy_ms = cuda_time(lambda: cupy_fused(F0d, G0d, n, delta_i), reps=10)

    kp_results, ref = run_kernpack(binary, N, n)

    rows = [dict(impl="Numba answer (vectorize + reduce + distribute)", us_per_step=seed_ms * 1e3 / n,
                 deltas={1: complex(seed_hist[1]), 2: complex(seed_hist[2])}),
            dict(impl="CuPy fused ElementwiseKernel + sum", us_per_step=cupy_ms * 1e3 / n,
                 deltas={1: complex(cupy_hist[1]), 2: complex(cupy_hist[2])})]
    for r in kp_results:
        rows.append(dict(impl=f"kernpack {r['path']} {r['plan']}", us_per_step=float(r["us_per_step"]),
                         deltas=r["deltas"]))
    best_kp = min(r["us_per_step"] for r in rows[2:])
    cpu_steps = min(n, 20)
    cpu = subprocess.run([binary, "bench", "fg", "--n", str(N), "--steps", str(cpu_steps), "--dtype", "c64",
                          "--backend", "cpu", "--reps", "3"], check=True, capture_output=True, text=True).stdout
    cpu_us = float(re.search(r"us_per_step=([0-9.]+)", cpu).group(1))
    print(f"\n{'implementation':<72} {'us/step':>10} {'kernpack x':>10}")
    for r in rows:
        print(f"{r['impl']:<72} {r['us_per_step']:>10.2f} {r['us_per_step'] / best_kp:>10.1f}")
    cpu_impl = f"kernpack CPU backend, {os.cpu_count()} threads ({cpu_steps} steps)"
    print(f"{cpu_impl:<72} {cpu_us:>10.2f} {cpu_us / best_kp:>10.1f}")
    print("\ndelta[1], delta[2] (relative difference to the complex128 kernpack run):")
    print(f"{'complex128 kernpack':<40} {ref[1]:.8g}   {ref[2]:.10g}")
    print(f"{'published printout':<40} {SEED_DELTA[1]:.8g} ({abs(SEED_DELTA[1] - ref[1]) / abs(ref[1]):.1e})   "
          f"{SEED_DELTA[2]:.10g} ({abs(SEED_DELTA[2] - ref[2]) / abs(ref[2]):.1e})")
    for r in rows:
        d = r["deltas"]
        print(f"{r['impl'][:40]:<40} {d[1]:.8g} ({abs(d[1] - ref[1]) / abs(ref[1]):.1e})   "
              f"{d[2]:.10g} ({abs(d[2] - ref[2]) / abs(ref[2]):.1e})")
    out = os.environ.get("OUT")
    if out:
        with open(os.path.join(out, "fg_compare.json"), "w") as fh:
            json.dump([dict(impl=r["impl"], us_per_step=r["us_per_step"],
                            deltas={k: [v.real, v.imag] for k, v in r["deltas"].items()}) for r in rows], fh, indent=1)


if __name__ == "__main__":
    main()
