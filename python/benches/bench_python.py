#!/usr/bin/env python3
"""kernpack through Python on the GPU machine, side by side in one process with
cupyx.scipy, the hand-written Numba kernels (benches/compare_*.py) and SciPy:

1. Lomb-Scargle, CuPy arrays, nx=1024, nf=2^20, f32 and f64:
   kernpack.signal.lombscargle (frequency array), lombscargle_uniform (grid),
   cupyx.scipy.signal.lombscargle, the Numba kernel; SciPy (one CPU core) on
   a slice of the frequencies, scaled (it is linear in nf).
2. uniform_filter, CuPy arrays, 8192^2 f32 and f64, sizes 3 and 31, against
   cupyx.scipy.ndimage.uniform_filter and the device-to-device copy (roofline).
3. Per-call overhead of the binding: one 150-sample light curve x 10^4
   frequencies on CuPy arrays: wall time of a call (back to back, median)
   minus the kernels' own CUDA-event time.
4. Import time and first-call time (fresh interpreters).

    python3 python/benches/bench_python.py        # prints tables, writes $OUT/bench_python.json
Times: CUDA events on the current stream, 3 warm-ups, median of 20.
"""
from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import time

import numpy as np

np.row_stack = getattr(np, "row_stack", np.vstack)  # NumPy 2.4 removed it; numba-cuda imports it
import cupy as cp  # noqa: E402
import cupyx.scipy.ndimage as cxn  # noqa: E402
import cupyx.scipy.signal as cxs  # noqa: E402
import scipy.signal  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "benches"))
from compare_lombscargle import numba_lombscargle  # noqa: E402  (the hand-written Numba kernel)
from compare_stencil import smooth_gpu  # noqa: E402

import kernpack  # noqa: E402

ROWS = []


_BUSY = None


def cuda_ms(fn, reps=20, warm=3):
    """Median GPU time of fn()'s work between CUDA events. A 2 GiB fill is
    enqueued first, so the host has issued the start event and fn()'s work
    before the GPU reaches them: the events time the GPU work alone, not the
    host's time to issue it (that is measured separately, see overhead())."""
    global _BUSY
    if _BUSY is None:
        _BUSY = cp.empty(1 << 31, cp.uint8)
    for _ in range(warm):
        fn()
    cp.cuda.Device().synchronize()
    start, stop = cp.cuda.Event(), cp.cuda.Event()
    times = []
    for r in range(reps):
        _BUSY.fill(r & 0xFF)
        start.record()
        fn()
        stop.record()
        stop.synchronize()
        times.append(cp.cuda.get_elapsed_time(start, stop))
    return statistics.median(times)


def row(workload, impl, ms, note=""):
    ROWS.append({"workload": workload, "impl": impl, "ms": ms, "note": note})
    print(f"{workload:<34} {impl:<40} {ms:10.4f} ms  {note}")


def rel_l2(a, ref):
    a = cp.asnumpy(a).astype(np.complex128 if np.iscomplexobj(a) else np.float64)
    ref = np.asarray(ref)
    return float(np.linalg.norm(a - ref) / np.linalg.norm(ref))


def lombscargle(nx=1024, nf=1 << 20):
    rng = np.random.default_rng(0)
    # The inputs of PERF.md's Rust comparison: times over 100 units, sin(1.7 t) + noise,
    # angular frequencies 0.01 + 60 k / nf.
    t = np.sort(rng.uniform(0, 100, nx))
    y = np.sin(1.7 * t) + rng.normal(0, 0.5, nx)
    f0, df = 0.01, 60.0 / nf
    freqs = f0 + df * np.arange(nf)
    # f64 reference: SciPy on a slice (linear in nf), cupyx f64 for the whole accuracy check.
    sl = slice(0, nf // 64)
    started = time.perf_counter()
    scipy.signal.lombscargle(t, y, freqs[sl])
    scipy_ms = (time.perf_counter() - started) * 1e3 * 64
    ref = cp.asnumpy(cxs.lombscargle(cp.asarray(t), cp.asarray(y), cp.asarray(freqs)))
    for dtype in (np.float32, np.float64):
        name = f"lombscargle {nx}x{nf} {np.dtype(dtype).name}"
        dt, dy, df_ = (cp.asarray(a.astype(dtype)) for a in (t, y, freqs))
        out = cp.empty(nf, dtype)
        k_arr = cuda_ms(lambda: kernpack.signal.lombscargle(dt, dy, df_))
        k_uni = cuda_ms(lambda: kernpack.signal.lombscargle_uniform(dt, dy, f0, df, nf))
        cx = cuda_ms(lambda: cxs.lombscargle(dt, dy, df_))
        nb = cuda_ms(lambda: numba_lombscargle(dt, dy, df_, out))
        acc_arr = rel_l2(kernpack.signal.lombscargle(dt, dy, df_), ref)
        acc_uni = rel_l2(kernpack.signal.lombscargle_uniform(dt, dy, f0, df, nf), ref)
        acc_cx = rel_l2(cxs.lombscargle(dt, dy, df_), ref)
        row(name, "kernpack.signal.lombscargle (array)", k_arr, f"{cx / k_arr:.1f}x cupyx; relL2 {acc_arr:.1e}")
        row(name, "kernpack.signal.lombscargle_uniform", k_uni, f"{cx / k_uni:.1f}x cupyx; relL2 {acc_uni:.1e}")
        row(name, "cupyx.scipy.signal.lombscargle", cx, f"relL2 {acc_cx:.1e}")
        row(name, "Numba kernel (hand-written, NVIDIA talk)", nb, "old SciPy algorithm, power mode")
    row(f"lombscargle {nx}x{nf} float64", "scipy.signal.lombscargle (1 CPU core)", scipy_ms, "timed on nf/64, scaled")


def copy_ms(a):
    b = cp.empty_like(a)
    return cuda_ms(lambda: cp.copyto(b, a))


def uniform_filter(n=8192):
    rng = np.random.default_rng(1)
    host = rng.normal(size=(n, n))
    for dtype in (np.float32, np.float64):
        d = cp.asarray(host.astype(dtype))
        out = cp.empty_like(d)
        copy = copy_ms(d)
        row(f"copy {n}^2 {np.dtype(dtype).name}", "cupy copyto (roofline)", copy)
        for size in (3, 31):
            name = f"uniform_filter {n}^2 {np.dtype(dtype).name} {size}x{size}"
            k = cuda_ms(lambda: kernpack.ndimage.uniform_filter(d, size, output=out))
            cx = cuda_ms(lambda: cxn.uniform_filter(d, size))
            err = float(cp.max(cp.abs(kernpack.ndimage.uniform_filter(d, size) - cxn.uniform_filter(d, size))))
            row(name, "kernpack.ndimage.uniform_filter", k, f"{cx / k:.1f}x cupyx; {copy / k * 100:.0f}% of copy; max|diff| {err:.1e}")
            row(name, "cupyx.scipy.ndimage.uniform_filter", cx)
        if dtype == np.float32:
            name = f"uniform_filter {n}^2 float32 3x3 interior"
            k = cuda_ms(lambda: kernpack.ndimage.uniform_filter(d, 3, output=out, mode="interior"))
            nb = cuda_ms(lambda: smooth_gpu[(n // 16, n // 16), (16, 16)](d, out))
            row(name, "kernpack.ndimage.uniform_filter", k, f"{nb / k:.1f}x Numba")
            row(name, "Numba kernel (hand-written, interior-only)", nb)


def overhead(nx=150, nf=10_000, calls=2000):
    rng = np.random.default_rng(2)
    t = cp.asarray(np.sort(rng.uniform(0, 100, nx)).astype(np.float32))
    y = cp.asarray(rng.normal(size=nx).astype(np.float32))
    freqs = cp.linspace(0.01, 10, nf, dtype=cp.float32)
    ctx = kernpack._context.context("gpu")
    out = cp.empty(nf, cp.float32)
    stream = cp.cuda.get_current_stream().ptr

    def native():  # the native entry point alone, no Python array handling
        kernpack._native.lombscargle_device(ctx, "float32", (t.data.ptr, y.data.ptr, None), nx, (0.01, 0.001, nf),
                                            ("power", False, False), out.data.ptr, stream)

    def full():
        kernpack.signal.lombscargle_uniform(t, y, 0.01, 0.001, nf)

    def cupyx_call():
        cxs.lombscargle(t, y, freqs)

    kernel = cuda_ms(native, reps=200, warm=20)
    results = {}
    for label, fn in (("kernpack (full Python call)", full), ("kernpack._native alone", native), ("cupyx", cupyx_call)):
        for _ in range(50):
            fn()
        cp.cuda.Device().synchronize()
        walls = []
        for _ in range(calls // 100):
            started = time.perf_counter()
            for _ in range(100):
                fn()
            cp.cuda.Device().synchronize()
            walls.append((time.perf_counter() - started) / 100 * 1e6)
        results[label] = statistics.median(walls)
        # Host time to issue one call (the work is async): what the binding costs the caller.
        issue = []
        for _ in range(200):
            started = time.perf_counter()
            fn()
            issue.append((time.perf_counter() - started) * 1e6)
            cp.cuda.Device().synchronize()
        results[label + " issue"] = statistics.median(issue)
    name = f"overhead {nx}x{nf} f32 (CuPy)"
    row(name, "kernels alone (CUDA events)", kernel, "")
    for label in ("kernpack (full Python call)", "kernpack._native alone", "cupyx"):
        wall = results[label]
        row(name, label + ": wall per call", wall / 1e3,
            f"{wall - kernel * 1e3:+.1f} us over the kernels; host issue {results[label + ' issue']:.1f} us")


def startup():
    code_import = "import time; t=time.perf_counter(); import kernpack; print((time.perf_counter()-t)*1e3)"
    code_numpy = "import time; import numpy; t=time.perf_counter(); import kernpack; print((time.perf_counter()-t)*1e3)"
    code_first = (
        "import time, numpy as np, cupy as cp; import kernpack; rng=np.random.default_rng(0);"
        "t=cp.asarray(np.sort(rng.uniform(0,100,150)).astype(np.float32)); y=cp.asarray(rng.normal(size=150).astype(np.float32));"
        "cp.cuda.Device().synchronize(); s=time.perf_counter(); p=kernpack.signal.lombscargle_uniform(t,y,0.01,0.001,10000);"
        "cp.cuda.Device().synchronize(); a=(time.perf_counter()-s)*1e3; s=time.perf_counter();"
        "p=kernpack.signal.lombscargle_uniform(t,y,0.01,0.001,10000); cp.cuda.Device().synchronize();"
        "print(a, (time.perf_counter()-s)*1e3)"
    )
    runs = {"import": [], "import after numpy": [], "first": [], "second": []}
    for _ in range(10):
        runs["import"].append(float(subprocess.check_output([sys.executable, "-c", code_import])))
        runs["import after numpy"].append(float(subprocess.check_output([sys.executable, "-c", code_numpy])))
        first, second = map(float, subprocess.check_output([sys.executable, "-c", code_first]).split())
        runs["first"].append(first)
        runs["second"].append(second)
    row("startup (10 fresh processes)", "import kernpack (numpy included)", statistics.median(runs["import"]))
    row("startup (10 fresh processes)", "import kernpack after numpy", statistics.median(runs["import after numpy"]))
    row("startup (10 fresh processes)", "first call (context + module load + run)", statistics.median(runs["first"]),
        "150 x 10^4 uniform, CuPy f32")
    row("startup (10 fresh processes)", "second call", statistics.median(runs["second"]))


def main():
    dev = cp.cuda.runtime.getDeviceProperties(0)
    print(f"device: {dev['name'].decode()}  kernpack {kernpack.__version__}  cupy {cp.__version__}  "
          f"date {time.strftime('%Y-%m-%d')}")
    lombscargle()
    uniform_filter()
    overhead()
    startup()
    out = os.environ.get("OUT")
    if out:
        with open(os.path.join(out, "bench_python.json"), "w") as f:
            json.dump({"device": dev["name"].decode(), "rows": ROWS}, f, indent=1)


if __name__ == "__main__":
    main()
