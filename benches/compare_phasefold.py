#!/usr/bin/env python3
"""PDM and conditional entropy beside the array-library peers: the same
definitions (src/params/phasefold.rs) written the way a CuPy or NumPy user
writes them, vectorised over frequencies (phases of shape (nf, n), one
bincount of the (frequency, bin) index), timed against kernpack's Python
API on the same curve in the same process.

    python3 benches/compare_phasefold.py [n_samples] [n_freqs]

Default: one ~900-sample curve at 10,000 frequencies (the single-curve case
published for a GPU phase-folding tool). CuPy: CUDA events, 3 warm-ups,
median of 10; NumPy: wall clock, median of 3; kernpack: wall clock of the
whole Python call (inputs in host memory, result back as NumPy), median of
10. Each peer's values are checked against kernpack's first.
"""
import sys
import time

import numpy as np

import kernpack.timeseries as kts

BINS, PHASE_BINS, MAG_BINS = 10, 10, 5


def pdm_xp(xp, t, y, dy, freqs, bins=BINS):
    dt = t - t.min()
    w = 1.0 / dy**2
    mean = (w * y).sum() / w.sum()
    yc = y - mean
    total = (w * yc * yc).sum()
    x = freqs[:, None] * dt[None, :]
    b = xp.minimum(((x - xp.floor(x)) * bins).astype(xp.int64), bins - 1)
    idx = (xp.arange(len(freqs))[:, None] * bins + b).ravel()
    ww = xp.broadcast_to(w, b.shape).ravel()
    sw = xp.bincount(idx, weights=ww, minlength=len(freqs) * bins).reshape(-1, bins)
    swy = xp.bincount(idx, weights=xp.broadcast_to(w * yc, b.shape).ravel(),
                      minlength=len(freqs) * bins).reshape(-1, bins)
    between = xp.where(sw > 0, swy * swy / xp.where(sw > 0, sw, 1.0), 0.0).sum(axis=1)
    return (total - between) / total


def ce_xp(xp, t, y, freqs, phase_bins=PHASE_BINS, mag_bins=MAG_BINS):
    dt = t - t.min()
    m = xp.minimum(((y - y.min()) / (y.max() - y.min()) * mag_bins).astype(xp.int64), mag_bins - 1)
    x = freqs[:, None] * dt[None, :]
    b = xp.minimum(((x - xp.floor(x)) * phase_bins).astype(xp.int64), phase_bins - 1)
    cells = phase_bins * mag_bins
    idx = (xp.arange(len(freqs))[:, None] * cells + b * mag_bins + m[None, :]).ravel()
    counts = xp.bincount(idx, minlength=len(freqs) * cells).reshape(-1, phase_bins, mag_bins)
    counts = counts.astype(xp.float64)
    n_phase = counts.sum(axis=2, keepdims=True)
    total = counts.sum(axis=(1, 2))
    safe = xp.where(counts > 0, counts, 1.0)
    terms = xp.where(counts > 0, counts * xp.log(xp.broadcast_to(n_phase, counts.shape) / safe), 0.0)
    return terms.sum(axis=(1, 2)) / total


def wall_median(f, reps):
    times = []
    for _ in range(reps):
        t0 = time.perf_counter()
        f()
        times.append(time.perf_counter() - t0)
    return 1e3 * float(np.median(times))


def main():
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 900
    nf = int(sys.argv[2]) if len(sys.argv) > 2 else 10_000
    rng = np.random.default_rng(0x5eed)
    t = np.sort(rng.uniform(58000.0, 59000.0, n))
    y = 15.0 + 0.3 * np.sin(2 * np.pi * t / 0.731) + 0.05 * rng.standard_normal(n)
    dy = np.full(n, 0.05)
    freqs = np.linspace(0.05, 10.0, nf)
    rows = []
    for name, ours, peer_args in (
        ("pdm", lambda: kts.pdm(t, y, dy, frequency=freqs, bins=BINS),
         lambda xp, a: pdm_xp(xp, *a)),
        ("ce", lambda: kts.conditional_entropy(t, y, frequency=freqs,
                                               phase_bins=PHASE_BINS, mag_bins=MAG_BINS),
         lambda xp, a: ce_xp(xp, a[0], a[1], a[3])),
    ):
        want = ours()
        for _ in range(3):
            ours()
        k_ms = wall_median(ours, 10)
        np_ms = wall_median(lambda: peer_args(np, (t, y, dy, freqs)), 3)
        assert np.allclose(peer_args(np, (t, y, dy, freqs)), want, atol=1e-9), name
        cp_ms = float("nan")
        try:
            import cupy as cp
            a = tuple(cp.asarray(v) for v in (t, y, dy, freqs))
            got = cp.asnumpy(peer_args(cp, a))
            assert np.allclose(got, want, atol=1e-9), name
            start, stop = cp.cuda.Event(), cp.cuda.Event()
            times = []
            for rep in range(13):
                start.record()
                peer_args(cp, a)
                stop.record()
                stop.synchronize()
                if rep >= 3:
                    times.append(cp.cuda.get_elapsed_time(start, stop))
            cp_ms = float(np.median(times))
        except ImportError:
            pass
        rows.append((name, k_ms, cp_ms, np_ms))
    print(f"n={n} nf={nf}")
    for name, k_ms, cp_ms, np_ms in rows:
        print(f"RESULT {name} kernpack_ms={k_ms:.3f} cupy_ms={cp_ms:.3f} numpy_ms={np_ms:.1f} "
              f"vs_cupy={cp_ms / k_ms:.1f}x vs_numpy={np_ms / k_ms:.0f}x")


if __name__ == "__main__":
    main()
