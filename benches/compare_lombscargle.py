#!/usr/bin/env python3
"""Side-by-side Lomb-Scargle timing on the GPU machine, in one process:
kernpack (through `kernpack bench lombscargle`, CUDA events; the direct kernel on the
frequency array and the recurrence kernel on the same uniform grid),
cupyx.scipy.signal.lombscargle, a hand-written Numba Lomb-Scargle kernel (as shown in
NVIDIA's talk) and SciPy on the CPU (one core, timed on a slice of the frequencies and
scaled: it is linear in nf), on the same inputs; accuracy of each against an f64
reference (cupyx f64, ~1e-15 from SciPy).
Then the batched workload: 10,000 series of 100-200 samples x 10,000 frequencies
(`kernpack bench lombscargle-batch`), against the single-series rate of the same kernel.

    python3 benches/compare_lombscargle.py KERNPACK_BINARY [NX NF ...]   (default 1024 1048576)

Prints a table (median of 20 after warm-up, first-call time, Gpairs/s, fraction of the
SFU bound for f32, relative L2 error) and writes the rows to $OUT/lombscargle_compare.json.
"""
import json
import math
import os
import subprocess
import sys
import tempfile
import time

import numpy as np

np.row_stack = np.vstack  # NumPy 2.4 removed it; numba-cuda still imports it
import cupy as cp  # noqa: E402
import cupyx.scipy.signal as cxs  # noqa: E402
from numba import cuda  # noqa: E402


def cuda_time(fn, reps=20, warm=3):
    """Median and min milliseconds of fn() between CUDA events, after warm-up."""
    for _ in range(warm):
        fn()
    cp.cuda.Device().synchronize()
    times = []
    start, stop = cp.cuda.Event(), cp.cuda.Event()
    for _ in range(reps):
        start.record()
        fn()
        stop.record()
        stop.synchronize()
        times.append(cp.cuda.get_elapsed_time(start, stop))
    times.sort()
    return times[len(times) // 2], times[0]


def first_call_ms(fn):
    cp.cuda.Device().synchronize()
    t0 = time.perf_counter()
    fn()
    cp.cuda.Device().synchronize()
    return (time.perf_counter() - t0) * 1e3


# The hand-written Numba kernel as shown in NVIDIA's talk (old SciPy algorithm, power mode).
def seed_kernel(x, y, freqs, pgram, y_dot):
    F = cuda.grid(1)
    strideF = cuda.gridsize(1)
    if not y_dot[0]:
        yD = 1.0
    else:
        yD = 2.0 / y_dot[0]
    for i in range(F, freqs.shape[0], strideF):
        freq = freqs[i]
        xc = 0.0
        xs = 0.0
        cc = 0.0
        ss = 0.0
        cs = 0.0
        for j in range(x.shape[0]):
            c = math.cos(freq * x[j])
            s = math.sin(freq * x[j])
            xc += y[j] * c
            xs += y[j] * s
            cc += c * c
            ss += s * s
            cs += c * s
        tau = math.atan2(2.0 * cs, cc - ss) / (2.0 * freq)
        c_tau = math.cos(freq * tau)
        s_tau = math.sin(freq * tau)
        c_tau2 = c_tau * c_tau
        s_tau2 = s_tau * s_tau
        cs_tau = 2.0 * c_tau * s_tau
        pgram[i] = (0.5 * (((c_tau * xc + s_tau * xs) ** 2 / (c_tau2 * cc + cs_tau * cs + s_tau2 * ss))
                           + ((c_tau * xs - s_tau * xc) ** 2 / (c_tau2 * ss - cs_tau * cs + s_tau2 * cc))) * yD)


_numba_kernels = {}


def numba_lombscargle(x, y, freqs, pgram):
    key = str(pgram.dtype)
    if key not in _numba_kernels:
        _numba_kernels[key] = cuda.jit(fastmath=(key == "float32"))(seed_kernel)
    sms = cp.cuda.Device().attributes["MultiProcessorCount"]
    y_dot = cp.zeros(1, dtype=pgram.dtype)
    _numba_kernels[key][sms * 20, 128](x, y, freqs, pgram, y_dot)


def rel_l2(a, ref):
    a, ref = cp.asnumpy(a).astype(np.float64), cp.asnumpy(ref).astype(np.float64)
    return float(np.linalg.norm(a - ref) / np.linalg.norm(ref))


def run_kernpack(binary, files, dtype, out, uniform):
    cmd = [binary, "bench", "lombscargle", "--t", files["t"], "--y", files["y"], "--freqs", files["f"],
           "--dtype", dtype, "--reps", "20", "--out", out] + (["--uniform"] if uniform else [])
    text = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    fields = {}
    for line in text.splitlines():
        if line.startswith("RESULT "):
            fields = dict(kv.split("=") for kv in line.split()[3:])
    return fields, np.fromfile(out, dtype=np.float64), text


def main():
    binary = sys.argv[1]
    sizes = [int(v) for v in sys.argv[2:]] or [1024, 1 << 20]
    dev = cp.cuda.Device()
    props = cp.cuda.runtime.getDeviceProperties(dev.id)
    sms = dev.attributes["MultiProcessorCount"]
    clock_hz = dev.attributes["ClockRate"] * 1e3
    sfu_pairs = sms * clock_hz * 16 / 2  # 16 SFU ops/clk/SM, sin + cos per pair
    fp64_fma = sms * clock_hz * 64
    print(f"device: {props['name'].decode()}, {sms} SMs at {clock_hz/1e9:.2f} GHz; "
          f"SFU bound {sfu_pairs/1e12:.2f}e12 pairs/s; cupy {cp.__version__}")
    rows = []
    tmp = tempfile.mkdtemp()
    for nx, nf in zip(sizes[::2], sizes[1::2]):
        rng = np.random.default_rng(nx * 7919 + nf)
        t = np.sort(rng.uniform(0.0, 100.0, nx))
        y = np.sin(1.7 * t) + 0.5 * rng.normal(size=nx)
        f = 0.01 + 60.0 * np.arange(nf) / nf
        files = {k: os.path.join(tmp, k + ".bin") for k in "tyf"}
        t.tofile(files["t"]), y.tofile(files["y"]), f.tofile(files["f"])
        pairs = nx * nf
        d64 = [cp.asarray(v) for v in (t, y, f)]
        ref = cxs.lombscargle(*d64)  # f64 reference
        for dtype in ("float32", "float64"):
            dx, dy, df = [cp.asarray(v, dtype=dtype) for v in (t, y, f)]
            short = "f32" if dtype == "float32" else "f64"
            # kernpack: the direct kernel on the frequency array, and the
            # recurrence kernel on the same (uniform) grid
            for uniform in (False, True):
                fields, out, log = run_kernpack(binary, files, short, os.path.join(tmp, "out.bin"), uniform)
                print(log.strip().splitlines()[0])
                rows.append(dict(impl="kernpack " + ("uniform" if uniform else "direct"), dtype=short, nx=nx,
                                 nf=nf, median_ms=float(fields["median_ms"]),
                                 first_ms=float(fields["first_call_ms"]),  # includes loading the family
                                 err=rel_l2(out, ref)))
            # cupyx (computes in f64 whatever the input dtype)
            first = first_call_ms(lambda: cxs.lombscargle(dx, dy, df))
            med, _ = cuda_time(lambda: cxs.lombscargle(dx, dy, df))
            rows.append(dict(impl="cupyx", dtype=short, nx=nx, nf=nf, median_ms=med, first_ms=first,
                             err=rel_l2(cxs.lombscargle(dx, dy, df), ref)))
            # the Numba kernel from NVIDIA's talk
            pgram = cp.empty(nf, dtype=dtype)
            first = first_call_ms(lambda: numba_lombscargle(dx, dy, df, pgram))
            med, _ = cuda_time(lambda: numba_lombscargle(dx, dy, df, pgram))
            rows.append(dict(impl="numba (NVIDIA talk)", dtype=short, nx=nx, nf=nf, median_ms=med, first_ms=first,
                             err=rel_l2(pgram, ref)))
        # SciPy on one CPU core, f64: on the first 2^12 frequencies, scaled to nf.
        import scipy
        import scipy.signal
        part = min(nf, 4096)
        t0 = time.perf_counter()
        sp = scipy.signal.lombscargle(t, y, f[:part])
        sp_ms = (time.perf_counter() - t0) * 1e3 * nf / part
        rows.append(dict(impl="scipy (1 core)", dtype="f64", nx=nx, nf=nf, median_ms=sp_ms, first_ms=sp_ms,
                         err=rel_l2(cp.asarray(sp), ref[:part])))
    print(f"\n{'impl':<20}{'dtype':>6}{'nx':>7}{'nf':>9}{'median ms':>11}{'first ms':>10}"
          f"{'Gpairs/s':>10}{'SFU %':>7}{'rel L2':>10}")
    for r in rows:
        if "nx" not in r:
            continue
        rate = r["nx"] * r["nf"] / (r["median_ms"] * 1e-3)
        r["pairs_per_s"] = rate
        r["sfu_fraction"] = rate / sfu_pairs
        print(f"{r['impl']:<20}{r['dtype']:>6}{r['nx']:>7}{r['nf']:>9}{r['median_ms']:>11.3f}{r['first_ms']:>10.2f}"
              f"{rate/1e9:>10.1f}{100*rate/sfu_pairs:>7.1f}{r['err']:>10.1e}")
    def find(impl, dtype, nx, nf):
        return next(r for r in rows if r["impl"] == impl and r["dtype"] == dtype and r["nx"] == nx and r["nf"] == nf)
    for dtype in ("f32", "f64"):
        for nx, nf in zip(sizes[::2], sizes[1::2]):
            cx = find("cupyx", dtype, nx, nf)
            for mode in ("direct", "uniform"):
                kp = find("kernpack " + mode, dtype, nx, nf)
                print(f"kernpack {mode} {dtype} nx={nx} nf={nf}: {cx['median_ms']/kp['median_ms']:.2f}x faster than cupyx")
    print()
    for dtype in ("f32", "f64"):
        for fm in ([], ["--floating-mean"]):
            text = subprocess.run([binary, "bench", "lombscargle-batch", "--dtype", dtype] + fm, check=True,
                                  capture_output=True, text=True).stdout
            line = next(l for l in text.splitlines() if l.startswith("RESULT "))
            print(line + (" floating_mean" if fm else ""))
            rows.append(dict(impl="kernpack batch" + (" fm" if fm else ""), dtype=dtype, line=line))
    out_dir = os.environ.get("OUT")
    if out_dir:
        with open(os.path.join(out_dir, "lombscargle_compare.json"), "w") as fh:
            json.dump(dict(device=props["name"].decode(), sms=sms, clock_hz=clock_hz, fp64_fma_per_s=fp64_fma,
                           rows=rows), fh, indent=1)


if __name__ == "__main__":
    main()
