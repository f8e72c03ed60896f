"""Multiband periodogram benchmark (issue 31, item 2), on the GPU machine.

    python python/benches/bench_multiband.py [--nseries 100000] [--nf 10000]

A survey batch of `--nseries` LSST-like series: 150-250 irregular samples
over 3 years in 6 bands (ugrizy; each band its own offset and amplitude of
one period, noise with uncertainties), astropy's default model
(nterms_base = 1, nterms_band = 1, reg_band = 1e-6 by trace), `--nf`
frequencies on one shared grid, in float32 and float64:

1. kernpack's batch on the GPU (`lombscargle_multiband_batch`, method
   'flexible'): the whole call from host arrays (band codes, preparation,
   upload, kernel, download), median of 3 after a warm-up; and the same
   keeping each series' 5 best peaks (``peaks=5``);
2. kernpack's CPU backend on the first 20 series (median of 3), as a rate;
3. astropy's LombScargleMultiband(...).power(method='flexible') on the first
   2 series (one run each), as a rate, and the largest difference from
   kernpack on them.
"""
from __future__ import annotations

import argparse
import statistics
import time

import numpy as np

import kernpack
from kernpack import _native
from kernpack._context import context
from kernpack.timeseries import LombScargleMultiband, _band_codes, lombscargle_multiband_batch


def timed(fn, reps, warmups=1):
    for _ in range(warmups):
        fn()
    times = []
    for _ in range(reps):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def survey(nseries, rng):
    lengths = rng.integers(150, 251, nseries)
    offsets = np.concatenate([[0], np.cumsum(lengths)])
    n = int(offsets[-1])
    t = rng.uniform(0, 3 * 365.25, n)
    bands = rng.integers(0, 6, n).astype(np.uint8)
    period = np.repeat(rng.uniform(0.2, 50.0, nseries), lengths)
    level = rng.uniform(15, 22, (nseries, 6))[np.repeat(np.arange(nseries), lengths), bands]
    amp = rng.uniform(0.05, 1.0, n)
    dy = rng.uniform(0.01, 0.2, n)
    y = level + amp * np.sin(2 * np.pi * t / period) + dy * rng.standard_normal(n)
    return t, y, dy, bands, offsets


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--nseries", type=int, default=100_000)
    p.add_argument("--nf", type=int, default=10_000)
    args = p.parse_args()
    rng = np.random.default_rng(0)
    t, y, dy, bands, offsets = survey(args.nseries, rng)
    f0, df, nf = 1.0 / 365.25, 0.5 / 365.25, args.nf  # up to ~13.7 cycles per day at 10^4
    print(f"{args.nseries} LSST-like series, {offsets[-1]} samples ({offsets[-1] / args.nseries:.0f} per series), "
          f"6 bands, nterms_base 1, nterms_band 1, {nf} frequencies")
    for dtype in (np.float32, np.float64):
        a = [x.astype(dtype) for x in (t, y, dy)]
        name = np.dtype(dtype).name
        if kernpack.device_count() > 0:
            def call():
                return lombscargle_multiband_batch(a[0], a[1], bands, f0, df, nf, dy=a[2], offsets=offsets,
                                                   backend="gpu")

            s = timed(call, 3)
            print(f"  {name} kernpack GPU batch, whole call: {s * 1e3:.1f} ms = {args.nseries / s:,.0f} series/s")

            def best5():
                return lombscargle_multiband_batch(a[0], a[1], bands, f0, df, nf, dy=a[2], offsets=offsets,
                                                   peaks=5, backend="gpu")

            s5 = timed(best5, 3)
            print(f"  {name} kernpack GPU batch, 5 best peaks per series (reduced on the GPU): {s5 * 1e3:.1f} ms = "
                  f"{args.nseries / s5:,.0f} series/s")
            codes = _band_codes(bands)[1]
            o = offsets.astype(np.uintp)
            grids = (np.array([f0]), np.array([df]), nf)
            opts = ("flexible", 1, 1, None, 1e-6, True, True, True, "standard")
            def native():
                return _native.lombscargle_multiband_batch(context("gpu"), a[0], a[1], a[2], codes, o, grids, opts)

            s_native = timed(native, 3)
            s_codes = timed(lambda: _band_codes(bands), 3)
            gb = args.nseries * nf * a[0].itemsize / 1e9
            print(f"    of which band codes {s_codes * 1e3:.1f} ms; the native call {s_native * 1e3:.1f} ms "
                  f"(checks and preparation, upload, kernel, download of {gb:.1f} GB)")
        m = 20
        sub = [x[: offsets[m]] for x in a]
        def cpu():
            return lombscargle_multiband_batch(sub[0], sub[1], bands[: offsets[m]], f0, df, nf, dy=sub[2],
                                               offsets=offsets[: m + 1], backend="cpu")

        s = timed(cpu, 3, warmups=0)
        print(f"  {name} kernpack CPU backend ({_native.cpu_threads()} threads): {m / s:,.1f} series/s")
    try:
        from astropy.timeseries import LombScargleMultiband as Astropy
    except ImportError:
        print("  astropy not installed: no comparison")
        return
    freq = f0 + df * np.arange(nf)
    worst, spent = 0.0, 0.0
    for s in range(2):
        r = slice(offsets[s], offsets[s + 1])
        start = time.perf_counter()
        want = Astropy(t[r], y[r], bands[r], dy[r]).power(freq, method="flexible")
        spent += time.perf_counter() - start
        got = LombScargleMultiband(t[r], y[r], bands[r], dy[r]).power(freq)
        worst = max(worst, np.max(np.abs(got - want)) / np.max(np.abs(want)))
    print(f"  astropy flexible (one CPU thread): {2 / spent:.3f} series/s; kernpack float64 vs astropy: "
          f"max scaled difference {worst:.1e}")


if __name__ == "__main__":
    main()
