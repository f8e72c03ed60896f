#!/usr/bin/env python3
"""Writes tests/fixtures/fap_astropy.txt: astropy's analytic false-alarm
probabilities and levels (astropy.timeseries.LombScargle's 'single', 'naive',
'davies' and 'baluev' methods, through the module functions that its
false_alarm_probability / false_alarm_level methods call) for random cases
that tests/significance.rs must reproduce.

    /work/venv-py/bin/python scripts/gen_fap_fixtures.py [OUTPUT]

The times and errors of a case are not stored: both sides rebuild them from
(n, span, offset, weighted) with the same f64 operations (`series` below and
in tests/significance.rs), so 1,200 cases fit in a small file. One case a line,
numbers in repr (round-trip exact):
    NORMALIZATION METHOD n span offset weighted fmax Z fap p level
`level` is `nan` where astropy's root finder did not converge.
"""
import sys
import warnings

import numpy as np
import astropy
from astropy.timeseries.periodograms.lombscargle import _statistics as st

GOLDEN = 0.6180339887498949
ROOT2 = 0.41421356237309515


def series(n, span, offset, weighted):
    i = np.arange(n, dtype=np.float64)
    t = offset + span * ((i * GOLDEN) % 1.0)
    dy = 0.5 + (i * ROOT2) % 1.0 if weighted else None
    return t, dy


def main(out):
    rng = np.random.default_rng(20261128)
    lines = [f"# astropy {astropy.__version__}, numpy {np.__version__}\n"]
    norms = ["standard", "model", "log", "psd"]
    methods = ["baluev", "davies", "naive", "single"]
    for k in range(1200):
        norm, method = norms[k % 4], methods[(k // 4) % 4]
        n = int(np.exp(rng.uniform(np.log(5), np.log(3000))))
        span = float(np.exp(rng.uniform(0.0, np.log(3000.0))))
        offset = float(rng.choice([0.0, 100.0, 1000.0]))
        weighted = bool(rng.integers(0, 2))
        t, dy = series(n, span, offset, weighted)
        y = np.zeros(n)  # the analytic methods do not read y
        fmax = float(np.exp(rng.uniform(np.log(1.0), np.log(5000.0)))) / span
        # A power whose FAP spans 1e-12 .. 0.99.
        target = float(np.exp(rng.uniform(np.log(1e-12), np.log(0.99))))
        z = float(st.inv_fap_naive(target, fmax, t, y, dy, norm))
        if not np.isfinite(z):
            z = float(st.inv_fap_single(target, n, norm))
        fap = float(st.false_alarm_probability(z, fmax, t, y, dy, norm, method))
        p = float(np.exp(rng.uniform(np.log(1e-8), np.log(0.5))))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            try:
                level = float(np.ravel(st.false_alarm_level(p, fmax, t, y, dy, norm, method))[0])
            except ValueError:
                level = float("nan")
        vals = [n, span, offset, int(weighted), fmax, z, fap, p, level]
        lines.append(f"{norm} {method} " + " ".join(repr(v) for v in vals) + "\n")
    with open(out, "w") as f:
        f.writelines(lines)


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "tests/fixtures/fap_astropy.txt")
