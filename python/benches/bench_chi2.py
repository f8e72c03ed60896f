"""Multi-term periodogram benchmark (issue 31, item 1), on the GPU machine.

    python python/benches/bench_chi2.py [--nseries 100000] [--skip-astropy]

1. One series, nterms=4, N=3,000 samples, 10^4 frequencies, float64:
   kernpack on the GPU, the host call (upload, kernel, download; 3 warm-ups,
   median of 20; for the kernel alone with CUDA events run
   `cargo test --release --test lombscargle_chi2 -- --ignored --nocapture bench_`),
   kernpack's CPU backend (median of 3), astropy 'chi2' and 'fastchi2' on
   the same inputs on the CPU (one run each: they are slow), and the largest
   difference from astropy's chi2.
2. A survey batch: `--nseries` ZTF-like series (100-300 irregular samples,
   float32 inputs, as survey light curves are stored),
   10^4 frequencies, nterms=2 (kernpack.timeseries' batch binding) against
   the single-term batch (kernpack.signal.lombscargle_batch, floating mean)
   on the same inputs and the same grid (in angular units for it): the pair
   rate (samples x frequencies per second) of each, median of 3 after a warm-up.
"""
from __future__ import annotations

import argparse
import statistics
import time

import numpy as np

import kernpack
from kernpack import _native, signal
from kernpack.timeseries import LombScargle, lombscargle_batch


def timed(fn, reps, warmups=1):
    for _ in range(warmups):
        fn()
    times = []
    for _ in range(reps):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def single(args):
    rng = np.random.default_rng(0)
    n, nf, nterms = 3000, 10_000, 4
    t = np.sort(rng.uniform(0, 1000, n))
    y = np.sin(2 * np.pi * t / 3.7) + 0.3 * np.cos(4 * np.pi * t / 3.7) + rng.normal(0, 0.5, n)
    dy = rng.uniform(0.2, 1.0, n)
    freq = 0.001 + 0.0005 * np.arange(nf)  # regular: fastchi2 accepts it
    ls = LombScargle(t, y, dy, nterms=nterms)
    print(f"single series: nterms {nterms}, N {n}, {nf} frequencies, float64")
    if kernpack.device_count() > 0:
        s = timed(lambda: ls.power(freq, backend="gpu"), 20, warmups=3)
        print(f"  kernpack GPU host call (transfers included): {s * 1e3:.3f} ms")
    p_cpu = ls.power(freq, backend="cpu")
    s = timed(lambda: ls.power(freq, backend="cpu"), 3)
    print(f"  kernpack CPU backend ({_native.cpu_threads()} threads), frequency array: {s * 1e3:.1f} ms")
    grid = (freq[0], freq[1] - freq[0], nf)
    s = timed(lambda: ls._power(grid, ls.normalization, "cpu", None), 3)
    print(f"  kernpack CPU backend ({_native.cpu_threads()} threads), uniform grid: {s * 1e3:.1f} ms")
    if args.skip_astropy:
        return
    from astropy.timeseries import LombScargle as Astropy

    ref = Astropy(t, y, dy, nterms=nterms)
    for method in ["chi2", "fastchi2"]:
        start = time.perf_counter()
        p = ref.power(freq, method=method, assume_regular_frequency=True)
        s = time.perf_counter() - start
        err = np.max(np.abs(p - p_cpu)) / np.max(np.abs(p))
        print(f"  astropy {method} (CPU, one run): {s * 1e3:.1f} ms; max |kernpack - astropy| / max = {err:.2e}")


def survey(args):
    if kernpack.device_count() == 0:
        print("survey batch: no GPU, skipped")
        return
    rng = np.random.default_rng(1)
    sizes = rng.integers(100, 301, args.nseries)
    offsets = np.concatenate([[0], np.cumsum(sizes)]).astype(np.uintp)
    total = int(offsets[-1])
    t = np.empty(total, np.float32)
    y = np.empty(total, np.float32)
    for s in range(args.nseries):
        a, b = offsets[s], offsets[s + 1]
        tt = np.sort(rng.uniform(0, 1000, b - a))
        t[a:b] = tt
        y[a:b] = np.sin(2 * np.pi * tt / rng.uniform(0.2, 50)) + rng.normal(0, 0.3, b - a)
    nf, f0, df = args.nf, 1e-3, (5.0 - 1e-3) / (args.nf - 1)
    pairs = total * nf
    chi2 = lambda: lombscargle_batch(t, y, f0, df, nf, offsets=offsets, nterms=2, backend="gpu")  # noqa: E731
    one = lambda: signal.lombscargle_batch(  # noqa: E731
        t, y, 2 * np.pi * f0, 2 * np.pi * df, nf, offsets=offsets, floating_mean=True, backend="gpu")
    s2 = timed(chi2, 3)
    s1 = timed(one, 3)
    print(f"survey batch: {args.nseries} series, {total} samples, {nf} frequencies, float32, host calls")
    print(f"  single-term batch (floating mean): {s1:.3f} s, {pairs / s1:.3e} pairs/s")
    print(f"  nterms=2 chi2 batch:               {s2:.3f} s, {pairs / s2:.3e} pairs/s ({s1 / s2:.0%} of single-term)")
    # Peaks only (the survey mode: no periodogram crosses the bus).
    one_peak = lambda: signal.lombscargle_batch(  # noqa: E731
        t, y, 2 * np.pi * f0, 2 * np.pi * df, nf, offsets=offsets, floating_mean=True, best=True, backend="gpu")
    chi2_peaks = lambda **kw: lombscargle_batch(  # noqa: E731
        t, y, f0, df, nf, offsets=offsets, nterms=2, backend="gpu", **kw)
    p1 = timed(one_peak, 3)
    p2 = timed(lambda: chi2_peaks(peaks=1), 3)
    p5 = timed(lambda: chi2_peaks(peaks=5, separation=1e-3), 3)
    pr = timed(lambda: chi2_peaks(peaks=5, separation=1e-3, refine=(10, 1)), 3)
    print(f"  single-term best peak:             {p1:.3f} s, {pairs / p1:.3e} pairs/s")
    print(f"  nterms=2 best peak:                {p2:.3f} s, {pairs / p2:.3e} pairs/s ({p1 / p2:.0%} of single-term)")
    print(f"  nterms=2 5 peaks:                  {p5:.3f} s")
    print(f"  nterms=2 5 peaks refined x10:      {pr:.3f} s")
    t64, y64 = t.astype(np.float64), y.astype(np.float64)
    one_term_fap = lambda: lombscargle_batch(  # noqa: E731
        t64, y64, f0, df, nf, offsets=offsets, nterms=1, peaks=5, separation=1e-3, fap="baluev", backend="gpu")
    pf = timed(one_term_fap, 3)
    print(f"  nterms=1 5 peaks with baluev FAP, float64: {pf:.3f} s")


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--nseries", type=int, default=100_000)
    parser.add_argument("--nf", type=int, default=10_000)
    parser.add_argument("--skip-astropy", action="store_true")
    args = parser.parse_args()
    single(args)
    survey(args)


if __name__ == "__main__":
    main()
