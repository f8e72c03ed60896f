#!/usr/bin/env python3
"""Box Least Squares, the CPU peer: astropy's `BoxLeastSquares(t, y,
dy).power(periods, durations)` (its default 'fast' method, one core) on
light curves of the shapes `kernpack bench bls` searches, timed per light
curve (wall clock, median over the curves), beside kernpack's CLI bench on
both backends in the same process tree.

    python3 benches/compare_bls.py KERNPACK_CLI [ztf|tess ...]

ztf:  100-300 samples over 1000 days, 60,000 periods 0.5-10 d, 5 durations
      0.04-0.12 d, oversample 10 (astropy on 3 curves).
tess: 20,000 samples over 27 days, 1,800 periods 0.5-13 d, 5 durations
      0.04-0.2 d, oversample 10 (astropy on 3 curves).
"""
import subprocess
import sys
import time

import numpy as np

SHAPES = {
    "ztf": dict(samples=(100, 300), baseline=1000.0, periods=60_000, pmin=0.5, pmax=10.0,
                durations=[0.04, 0.06, 0.08, 0.1, 0.12], series=200, cpu_series=4),
    "tess": dict(samples=(20_000, 20_000), baseline=27.0, periods=1_800, pmin=0.5, pmax=13.0,
                 durations=[0.04, 0.08, 0.12, 0.16, 0.2], series=1000, cpu_series=8),
}


def light_curve(rng, shape):
    lo, hi = shape["samples"]
    n = int(rng.integers(lo, hi + 1))
    period = rng.uniform(shape["pmin"], shape["pmax"])
    t = rng.uniform(0, shape["baseline"], n)
    y = 1.0 + 0.01 * rng.standard_normal(n)
    y[(t - rng.uniform(0, period)) % period < shape["durations"][0]] -= 0.02
    return t, y, np.full(n, 0.01)


def periods_of(shape):
    fmin, fmax = 1.0 / shape["pmax"], 1.0 / shape["pmin"]
    return 1.0 / (fmax - (fmax - fmin) * np.arange(shape["periods"]) / (shape["periods"] - 1))


def astropy_ms(shape, curves=3):
    from astropy.timeseries import BoxLeastSquares
    rng = np.random.default_rng(7)
    periods = periods_of(shape)
    times = []
    for _ in range(curves):
        t, y, dy = light_curve(rng, shape)
        start = time.perf_counter()
        BoxLeastSquares(t, y, dy).power(periods, shape["durations"], oversample=10)
        times.append(time.perf_counter() - start)
    return 1e3 * float(np.median(times))


def cli(exe, shape, backend, series):
    lo, hi = shape["samples"]
    args = [exe, "bench", "bls", "--series", str(series), "--samples", f"{lo},{hi}",
            "--baseline", str(shape["baseline"]), "--periods", str(shape["periods"]),
            "--pmin", str(shape["pmin"]), "--pmax", str(shape["pmax"]),
            "--durations", ",".join(map(str, shape["durations"]))]
    if backend == "cpu":
        args += ["--backend", "cpu", "--reps", "1"]
    out = subprocess.run(args, capture_output=True, text=True, check=True).stdout
    line = [l for l in out.splitlines() if l.startswith("RESULT")][-1]
    print(line, flush=True)
    return float(line.split("lc_per_s=")[1].split()[0])


def main():
    exe = sys.argv[1]
    for name in sys.argv[2:] or list(SHAPES):
        shape = SHAPES[name]
        gpu = cli(exe, shape, "gpu", shape["series"])
        cpu = cli(exe, shape, "cpu", shape["cpu_series"])
        ms = astropy_ms(shape)
        print(f"{name}: kernpack gpu {gpu:.0f} lc/s, kernpack cpu {cpu:.2f} lc/s, "
              f"astropy (one core) {ms:.1f} ms per curve = {1e3 / ms:.2f} lc/s; "
              f"gpu / astropy {gpu * ms / 1e3:.0f}x, cpu / astropy {cpu * ms / 1e3:.1f}x", flush=True)


if __name__ == "__main__":
    main()
