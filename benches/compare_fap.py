#!/usr/bin/env python3
"""Bootstrap false-alarm probability, side by side: kernpack's bootstrap
(1,000 resampled periodograms of a 300-sample series over 10^4 frequencies,
f64 and f32, GPU and CPU backends) and astropy's bootstrap
(`false_alarm_probability(..., method='bootstrap')`, one core, timed on a
smaller count and scaled: it is linear in the count), on the same series;
and the analytic methods for scale.

    PYTHONPATH=python python3 benches/compare_fap.py [RESAMPLES N NF]   (default 1000 300 10000)

GPU times are the median of 20 calls after 3 warm-up calls, between CUDA
events (CuPy's, on the legacy default stream) around each whole call (inputs
up, resampling and periodograms on the device, B maxima down); without CuPy,
wall-clock times of the same synchronous calls (labelled). Prints a table and
writes the rows to $OUT/fap_compare.json when $OUT is set.
"""
import json
import os
import sys
import time

import numpy as np

import kernpack
from kernpack import _significance as ks

try:
    import cupy as cp
except ImportError:  # pragma: no cover - the GPU machine has CuPy
    cp = None


def event_ms(fn, reps=20, warm=3):
    """Median ms of fn() between CUDA events (CuPy), or wall-clock without CuPy."""
    for _ in range(warm):
        fn()
    times = []
    if cp is not None:
        cp.cuda.Device().synchronize()
        start, stop = cp.cuda.Event(), cp.cuda.Event()
        for _ in range(reps):
            start.record()
            fn()
            stop.record()
            stop.synchronize()
            times.append(cp.cuda.get_elapsed_time(start, stop))
    else:
        for _ in range(reps):
            t0 = time.perf_counter()
            fn()
            times.append(1e3 * (time.perf_counter() - t0))
    times.sort()
    return times[len(times) // 2]


def wall_ms(fn, reps=3):
    times = []
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        times.append(1e3 * (time.perf_counter() - t0))
    times.sort()
    return times[len(times) // 2]


def main():
    resamples, n, nf = (int(a) for a in (sys.argv[1:4] if len(sys.argv) > 3 else (1000, 300, 10000)))
    rng = np.random.default_rng(1)
    baseline = 100.0
    t = np.sort(rng.uniform(0, baseline, n))
    t[0], t[-1] = 0.0, baseline
    y = 0.2 * np.sin(2 * np.pi * t / 3.3) + rng.normal(size=n)
    dy = rng.uniform(0.5, 1.5, n)
    # astropy's autopower grid: df = 1 / (5 baseline), fmin = df / 2, nf points.
    df = 1 / (5 * baseline)
    fmax = 0.5 * df + (nf - 1) * df
    rows = []

    def row(name, ms, note=""):
        rows.append({"what": name, "ms": ms, "note": note})
        print(f"{name:58s} {ms:12.3f} ms  {note}")

    print(f"bootstrap: {resamples} resamples x {n} samples x {nf} frequencies "
          f"({resamples * n * nf / 1e9:.1f} G sample-frequency pairs)")
    gpu = kernpack.device_count() > 0
    label = "CUDA events" if cp is not None else "wall clock (no CuPy)"
    for dtype in (np.float64, np.float32):
        args = (fmax, t.astype(dtype), y.astype(dtype), dy.astype(dtype), "standard")
        if gpu:
            try:
                fn = lambda: ks.bootstrap_maxima(*args, n_bootstraps=resamples, random_seed=7, backend="gpu")
                row(f"kernpack GPU bootstrap {np.dtype(dtype).name}", event_ms(fn), label)
            except Exception as e:  # noqa: BLE001 - report and go on
                print(f"kernpack GPU {np.dtype(dtype).name}: {e}")
        fn = lambda: ks.bootstrap_maxima(*args, n_bootstraps=resamples, random_seed=7, backend="cpu")
        row(f"kernpack CPU bootstrap {np.dtype(dtype).name} ({os.cpu_count()} cores)", wall_ms(fn, 1), "wall clock")

    from astropy.timeseries.periodograms.lombscargle import _statistics as st
    small = max(5, resamples // 50)
    for method in ("fast", "cython"):
        # astropy's bootstrap calls autopower with method='auto' ('fast' on
        # this grid); 'cython' is the exact periodogram kernpack computes.
        from astropy.timeseries import LombScargle

        def astropy_bootstrap():
            r = np.random.default_rng(0)
            for _ in range(small):
                s = r.integers(0, n, n)
                LombScargle(t, y[s], dy[s]).autopower(maximum_frequency=fmax, method=method).__getitem__(1).max()

        ms = wall_ms(astropy_bootstrap, 1) * resamples / small
        row(f"astropy bootstrap, method={method} (1 core)", ms,
            f"EXTRAPOLATED from {small} resamples x {resamples // small}")
    ms = wall_ms(lambda: st.false_alarm_probability(0.1, fmax, t, y, dy, "standard", "bootstrap",
                                                    {"n_bootstraps": small, "random_seed": 0}), 1)
    row("astropy false_alarm_probability(method='bootstrap')", ms * resamples / small,
        f"EXTRAPOLATED from n_bootstraps={small}")
    z = np.linspace(0.01, 0.3, 1000)
    row("kernpack baluev FAP, 1000 powers", wall_ms(lambda: ks.false_alarm_probability(z, fmax, t, y, dy)), "wall clock")
    row("astropy baluev FAP, 1000 powers", wall_ms(lambda: st.false_alarm_probability(z, fmax, t, y, dy, "standard")), "wall clock")
    out = os.environ.get("OUT")
    if out:
        with open(os.path.join(out, "fap_compare.json"), "w") as f:
            json.dump({"resamples": resamples, "n": n, "nf": nf, "rows": rows}, f, indent=1)


if __name__ == "__main__":
    main()
