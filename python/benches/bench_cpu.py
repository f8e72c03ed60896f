#!/usr/bin/env python3
"""kernpack's CPU backend side by side with the CPU tools its users know, in
one process on one machine (the same cores for everyone):

1. Lomb-Scargle, f64, uniform grid, floating mean, normalised power:
   kernpack.signal.lombscargle_uniform(backend='cpu') against nifty-ls
   (finufft), astropy's LombScargle 'fast' (Press & Rybicki) and SciPy (one
   core, on a slice of the frequencies, scaled: it is linear in nf), at
   nx x nf = 150 x 10^4, 800 x 2x10^5, 3000 x 10^5; accuracy of each as the
   relative L2 error against SciPy's f64 algorithm run on mean-shifted times
   (every 37th frequency).
2. Batched Lomb-Scargle: 10^4 series of 100-200 samples x 10^4 frequencies:
   kernpack.signal.lombscargle_batch (a different t per series) against
   nifty-ls's batched mode (one shared t of 150 samples, 2-D y).
3. Box filter, 8192^2 f32: kernpack.ndimage.uniform_filter against
   scipy.ndimage.uniform_filter, sizes 3..33, and a threaded copy of the same
   array (the memory roofline: one read, one write).
4. Sum and normalise, 2^27 f32 values: GB/s against the copy.
5. Lorenz 96, N = 40, 10^5 members x 1000 RK4 steps, f64: kernpack against
   a Numba @njit(parallel=True) RK4 (benches/peers/lorenz96_numba.py).
6. Multi-term periodogram (astropy's chi2 semantics), f64, regular grid,
   nterms 2 and 4, at N x nf = 300 x 10^4, 3000 x 10^4, 3000 x 10^5:
   kernpack.timeseries.LombScargle(nterms=...).power(backend='cpu') against
   nifty-ls's finufft_chi2 and astropy's fastchi2 on the same inputs, the
   calls interleaved round by round (a load that comes and goes hits all
   alike); accuracy against astropy's exact chi2 at every 97th frequency.
7. N-D box filter, 256^3, size 5 on every axis, float32 / uint8 / float64:
   kernpack.ndimage.uniform_filter(backend='cpu') on one thread and on all
   against scipy.ndimage.uniform_filter (one core), interleaved round by
   round; "per core" is SciPy's time over kernpack's on one thread.

    python python/benches/bench_cpu.py [--quick] [--json out.json]

Needs numpy, scipy, astropy, nifty-ls, numba and kernpack. Wall clock:
warm-up, then the median of `reps` calls. Thread counts: kernpack's
(kernpack.get_num_threads(), all cores by default), nifty-ls's and Numba's
are set to the same number.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from concurrent.futures import ThreadPoolExecutor

import numpy as np

import kernpack

HERE = os.path.dirname(os.path.abspath(__file__))
ROWS = []
THREADS = kernpack.get_num_threads()


def wall_ms(fn, reps=5, warm=1):
    # Let the previous call's worker threads go idle first: OpenBLAS's (SciPy,
    # NumPy) spin for some 0.1 s after a call and took one of 2 cores from
    # whatever ran next (kernpack's 800 x 2x10^5 ran at 13 ms instead of
    # 7.5 ms right after the SciPy reference).
    time.sleep(0.5)
    for _ in range(warm):
        fn()
    times = []
    for _ in range(reps):
        start = time.perf_counter()
        fn()
        times.append((time.perf_counter() - start) * 1e3)
    return statistics.median(times)


def row(workload, impl, ms, note=""):
    ROWS.append({"workload": workload, "impl": impl, "ms": ms, "note": note})
    print(f"  {workload:<34} {impl:<34} {ms:>10.2f} ms  {note}", flush=True)


def rel_l2(a, ref):
    a, ref = np.asarray(a, np.float64), np.asarray(ref, np.float64)
    return float(np.linalg.norm(a - ref) / np.linalg.norm(ref))


def light_curve(rng, nx, span=100.0, offset=60000.0):
    """Irregular times with gaps (an MJD-like offset), a sinusoid and noise."""
    t = np.sort(rng.uniform(0, span, nx))
    t = t[(t % 10.0) > 2.5]  # gaps
    while t.size < nx:
        extra = rng.uniform(0, span, nx - t.size)
        t = np.sort(np.concatenate([t, extra[(extra % 10.0) > 2.5]]))
    t = t[:nx] + offset
    y = 3.0 + np.sin(2 * np.pi * t / 3.7) + rng.normal(0, 0.5, nx)
    return t, y


# ----------------------------------------------------------------------------
# 1. Lomb-Scargle, one series


def lombscargle(sizes, reps):
    import scipy.signal
    import nifty_ls
    from astropy.timeseries import LombScargle

    print(f"Lomb-Scargle f64, uniform grid, floating mean, normalised ({THREADS} threads)")
    rng = np.random.default_rng()
    for nx, nf in sizes:
        t, y = light_curve(rng, nx)
        fmin, fmax = 0.01, 5.0  # cycles per day
        df = (fmax - fmin) / (nf - 1)
        work = f"{nx} x {nf}"

        def kp():
            return kernpack.signal.lombscargle_uniform(
                t, y, 2 * np.pi * fmin, 2 * np.pi * df, nf,
                normalize=True, floating_mean=True, backend="cpu")

        def nifty():
            return nifty_ls.lombscargle(t, y, fmin=fmin, fmax=fmax, Nf=nf, backend="finufft",
                                        nthreads=THREADS).power

        def astropy_fast():
            ls = LombScargle(t, y, fit_mean=True, center_data=True)
            return ls.power(fmin + df * np.arange(nf), method="fast", assume_regular_frequency=True)

        # The accuracy reference: SciPy's f64 algorithm on mean-shifted times
        # (small phases), at every 37th frequency.
        pick = np.arange(0, nf, 37)
        ang = 2 * np.pi * (fmin + df * pick)
        ts = t - t.mean()
        start = time.perf_counter()
        ref = scipy.signal.lombscargle(ts, y, ang, normalize=True, floating_mean=True)
        scipy_ms = (time.perf_counter() - start) * 1e3 * nf / pick.size
        results = {}
        for name, fn in [("kernpack cpu", kp), ("nifty-ls (finufft)", nifty), ("astropy fast", astropy_fast)]:
            ms = wall_ms(fn, reps)
            results[name] = ms
            err = rel_l2(fn()[pick], ref)
            row(work, name, ms, f"rel L2 {err:.1e}")
        row(work, "scipy (1 core, scaled)", scipy_ms, "rel L2 0 (the reference)")
        k, n = results["kernpack cpu"], results["nifty-ls (finufft)"]
        print(f"    kernpack / nifty-ls time: {k / n:.2f}  (< 1: kernpack faster)")


# ----------------------------------------------------------------------------
# 2. Batched Lomb-Scargle


def batched(nseries, nf, reps):
    import nifty_ls

    print(f"Batched Lomb-Scargle f64: {nseries} series x {nf} frequencies ({THREADS} threads)")
    rng = np.random.default_rng()
    lengths = rng.integers(100, 201, nseries)
    ts, ys = zip(*(light_curve(rng, int(n)) for n in lengths))
    fmin, fmax = 0.01, 5.0
    df = (fmax - fmin) / (nf - 1)
    t_flat, y_flat = np.concatenate(ts), np.concatenate(ys)
    offsets = np.concatenate([[0], np.cumsum(lengths)])

    def kp():
        return kernpack.signal.lombscargle_batch(
            t_flat, y_flat, 2 * np.pi * fmin, 2 * np.pi * df, nf, offsets=offsets,
            normalize=True, floating_mean=True, backend="cpu")

    t_shared = ts[0][:150] if ts[0].size >= 150 else light_curve(rng, 150)[0]
    y2d = np.stack([np.sin(2 * np.pi * t_shared / rng.uniform(1, 10)) + rng.normal(0, 0.5, t_shared.size)
                    for _ in range(nseries)])

    def nifty():
        return nifty_ls.lombscargle(t_shared, y2d, fmin=fmin, fmax=fmax, Nf=nf, backend="finufft",
                                    nthreads=THREADS).power

    pairs = int(lengths.sum()) * nf
    k = wall_ms(kp, reps)
    row(f"{nseries} x 100-200 x {nf}", "kernpack cpu (own t per series)", k, f"{pairs / k / 1e6:.2f} Gpairs/s")
    n = wall_ms(nifty, reps)
    row(f"{nseries} x 150 x {nf}", "nifty-ls batched (shared t)", n)
    print(f"    kernpack / nifty-ls time: {k / n:.2f}")


# ----------------------------------------------------------------------------
# 6. Multi-term periodogram


def interleaved_ms(fns, reps):
    """Median ms of each of `fns`, called in turn round by round after one
    warm-up round."""
    time.sleep(0.5)
    for fn in fns.values():
        fn()
    times = {name: [] for name in fns}
    for _ in range(reps):
        for name, fn in fns.items():
            start = time.perf_counter()
            fn()
            times[name].append((time.perf_counter() - start) * 1e3)
    return {name: statistics.median(v) for name, v in times.items()}


def multi_term(sizes, reps):
    import nifty_ls
    from astropy.timeseries import LombScargle as AstropyLS

    from kernpack.timeseries import LombScargle

    print(f"Multi-term periodogram f64, regular grid ({THREADS} threads)")
    rng = np.random.default_rng()
    for nx, nf in sizes:
        t, y = light_curve(rng, nx, span=1000.0)
        dy = rng.uniform(0.2, 1.0, nx)
        fmin, df = 0.002, 0.0005
        freq = fmin + df * np.arange(nf)
        pick = np.arange(0, nf, 97)
        for nterms in (2, 4):
            work = f"{nx} x {nf}, nterms {nterms}"
            ours = LombScargle(t, y, dy, nterms=nterms)
            theirs = AstropyLS(t, y, dy, nterms=nterms)
            fns = {
                "kernpack cpu": lambda: ours.power(freq, backend="cpu"),
                # nifty-ls both with its own default threads and with kernpack's
                # count: at 10^4 frequencies the explicit count was 10-15x
                # slower on 2 cores; the faster one is compared.
                "nifty-ls (finufft_chi2)": lambda: nifty_ls.lombscargle(
                    t, y, dy, fmin=fmin, fmax=freq[-1], Nf=nf, nterms=nterms, backend="finufft_chi2").power,
                f"nifty-ls (finufft_chi2, nthreads={THREADS})": lambda: nifty_ls.lombscargle(
                    t, y, dy, fmin=fmin, fmax=freq[-1], Nf=nf, nterms=nterms, backend="finufft_chi2",
                    nthreads=THREADS).power,
                "astropy fastchi2": lambda: theirs.power(freq, method="fastchi2", assume_regular_frequency=True),
            }
            ms = interleaved_ms(fns, reps)
            ref = theirs.power(freq[pick], method="chi2")
            for name, fn in fns.items():
                err = float(np.max(np.abs(fn()[pick] - ref)))
                row(work, name, ms[name], f"max |error| {err:.1e} vs astropy chi2")
            k = ms["kernpack cpu"]
            nifty = min(v for name, v in ms.items() if name.startswith("nifty-ls"))
            print(f"    kernpack / nifty-ls (faster setting) time: {k / nifty:.2f}, "
                  f"kernpack / astropy fastchi2: {k / ms['astropy fastchi2']:.3f}  (< 1: kernpack faster)")


# ----------------------------------------------------------------------------
# 3.-4. Box filter, sum, normalise, against a threaded copy


def threaded_copy(dst, src):
    rows = np.array_split(np.arange(src.shape[0]), THREADS)
    with ThreadPoolExecutor(THREADS) as pool:
        list(pool.map(lambda r: np.copyto(dst[r[0]:r[-1] + 1], src[r[0]:r[-1] + 1]), [r for r in rows if r.size]))


def box_filter(n, sizes, reps):
    import scipy.ndimage

    print(f"Box filter {n}x{n} f32 ({THREADS} threads; scipy.ndimage runs on one core)")
    rng = np.random.default_rng()
    a = rng.standard_normal((n, n), dtype=np.float32)
    out = np.empty_like(a)
    with ThreadPoolExecutor(THREADS) as pool:
        copy_ms = wall_ms(lambda: threaded_copy(out, a), reps)
    gb = 2 * a.nbytes / 1e9
    row(f"{n}^2 f32", "copy (roofline)", copy_ms, f"{gb / copy_ms * 1e3:.1f} GB/s")
    for size in sizes:
        k = wall_ms(lambda: kernpack.ndimage.uniform_filter(a, size, output=out, backend="cpu"), reps)
        s = wall_ms(lambda: scipy.ndimage.uniform_filter(a, size, output=out), max(1, reps // 2))
        err = rel_l2(kernpack.ndimage.uniform_filter(a, size, backend="cpu"),
                     scipy.ndimage.uniform_filter(a.astype(np.float64), size))
        row(f"{n}^2 f32 size {size}", "kernpack cpu", k, f"{copy_ms / k:.0%} of copy, rel L2 {err:.1e}")
        row(f"{n}^2 f32 size {size}", "scipy.ndimage", s, f"kernpack {s / k:.1f}x faster")
    return copy_ms, a.nbytes


def uniform_nd(shape, size, reps):
    import scipy.ndimage

    print(f"N-D box filter {shape}, size {size} ({THREADS} threads; scipy.ndimage on one core)")
    rng = np.random.default_rng()
    for dtype in (np.float32, np.uint8, np.float64):
        a = rng.random(shape)
        a = (a * 255).astype(dtype) if dtype == np.uint8 else a.astype(dtype)
        out = np.empty_like(a)

        def kp(threads):
            def run():
                kernpack.set_num_threads(threads)
                kernpack.ndimage.uniform_filter(a, size, output=out, backend="cpu")
            return run

        ms = interleaved_ms({"one": kp(1), "all": kp(THREADS),
                             "scipy": lambda: scipy.ndimage.uniform_filter(a, size, output=out)}, reps)
        kernpack.set_num_threads(THREADS)
        ours = kernpack.ndimage.uniform_filter(a, size, backend="cpu").astype(np.float64)
        diff = np.max(np.abs(ours - scipy.ndimage.uniform_filter(a, size))) / np.max(np.abs(a))
        name = f"{'x'.join(map(str, shape))} {np.dtype(dtype).name} size {size}"
        row(name, "kernpack cpu, 1 thread", ms["one"], f"{ms['scipy'] / ms['one']:.1f}x SciPy per core")
        row(name, f"kernpack cpu, {THREADS} threads", ms["all"], f"{ms['scipy'] / ms['all']:.1f}x SciPy")
        row(name, "scipy.ndimage", ms["scipy"], f"kernpack's output within {diff:.1e} of the largest value")


def reductions(n, reps, copy_gbs):
    print(f"Sum and normalise, {n} f32 values ({THREADS} threads)")
    rng = np.random.default_rng()
    x = rng.standard_normal(n, dtype=np.float32)
    k = wall_ms(lambda: kernpack.reduce.sum(x, backend="cpu"), reps)
    row(f"sum {n} f32", "kernpack cpu", k, f"{x.nbytes / k / 1e6:.1f} GB/s read (copy moves {copy_gbs:.1f} GB/s)")
    row(f"sum {n} f32", "numpy.sum (1 core)", wall_ms(lambda: np.sum(x, dtype=np.float64), reps))
    y = x.copy()
    k = wall_ms(lambda: kernpack.reduce.normalize(y, backend="cpu"), reps)
    row(f"normalize {n} f32", "kernpack cpu", k, f"{3 * x.nbytes / k / 1e6:.1f} GB/s (2 reads, 1 write)")


# ----------------------------------------------------------------------------
# 5. Lorenz 96 ensemble


def lorenz96(members, steps, reps):
    sys.path.insert(0, os.path.join(HERE, "..", "..", "benches", "peers"))
    import numba
    from lorenz96_numba import integrate

    numba.set_num_threads(THREADS)
    print(f"Lorenz 96 N=40, {members} members x {steps} RK4 steps, f64 ({THREADS} threads)")
    rng = np.random.default_rng()
    z0 = 8.0 + rng.standard_normal((members, 40))
    integrate(z0[:16].copy(), 8.0, 0.05, 2)  # compile outside the timing
    k = wall_ms(lambda: kernpack.ode.lorenz96(z0, steps, backend="cpu"), reps)
    n = wall_ms(lambda: integrate(z0.copy(), 8.0, 0.05, steps), reps)
    short = kernpack.ode.lorenz96(z0[:64], 20, backend="cpu").final
    numba_short = integrate(z0[:64].copy(), 8.0, 0.05, 20)
    row(f"L96 {members} x {steps}", "kernpack cpu", k, f"20-step diff to Numba {rel_l2(short, numba_short):.1e}")
    row(f"L96 {members} x {steps}", "numba parallel", n, f"kernpack {n / k:.2f}x faster")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="smaller sizes, fewer repetitions")
    ap.add_argument("--json", help="write the rows here")
    ap.add_argument("--only", nargs="*", default=["ls", "batch", "box", "sum", "l96", "chi2", "uniform"])
    args = ap.parse_args()
    reps = 3 if args.quick else 7
    print(f"kernpack {kernpack.__version__}, {THREADS} CPU threads, {os.cpu_count()} cores; "
          f"{time.strftime('%Y-%m-%d')}")
    if "ls" in args.only:
        lombscargle([(150, 10_000), (800, 200_000), (3000, 100_000)], reps)
    if "batch" in args.only:
        batched(1000 if args.quick else 10_000, 10_000, max(1, reps // 2))
    copy = None
    if "box" in args.only:
        copy_ms, nbytes = box_filter(2048 if args.quick else 8192, [3, 5, 7, 9, 15, 31, 33], reps)
        copy = 2 * nbytes / copy_ms / 1e6
    if "sum" in args.only:
        reductions(1 << (22 if args.quick else 27), reps, copy or float("nan"))
    if "l96" in args.only:
        lorenz96(10_000 if args.quick else 100_000, 100 if args.quick else 1000, max(1, reps // 2))
    if "chi2" in args.only:
        multi_term([(300, 10_000), (3000, 10_000)] if args.quick else
                   [(300, 10_000), (3000, 10_000), (3000, 100_000)], reps)
    if "uniform" in args.only:
        uniform_nd((128, 128, 128) if args.quick else (256, 256, 256), 5, reps)
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"threads": THREADS, "rows": ROWS}, f, indent=1)


if __name__ == "__main__":
    main()
