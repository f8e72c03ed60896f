"""Bootstrap false-alarm probability of single- and multi-term periodograms
on the GPU (issue 31, item 3): 1,000 resamples of a 300-sample series over
astropy's autofrequency grid up to 20 cycles per unit time (10^4
frequencies), f64, whole host calls of
``LombScargle(t, y, dy, nterms=K).false_alarm_probability(method='bootstrap')``
(median of 5 after a warm-up).

    python python/benches/bench_chi2_bootstrap.py
"""
import statistics
import time

import numpy as np

from kernpack.timeseries import LombScargle

rng = np.random.default_rng(3)
t = np.sort(rng.uniform(0, 100, 300))
y = np.sin(2 * np.pi * t / 3.7) + rng.normal(0, 0.5, 300)
dy = rng.uniform(0.5, 1.5, 300)
for nterms in (1, 2, 4):
    ls = LombScargle(t, y, dy, nterms=nterms)
    # df = 1 / (baseline x 5): fmax = 20 gives ~10^4 frequencies on a baseline of ~100.
    kw = dict(maximum_frequency=20.0, method="bootstrap",
              method_kwds=dict(n_bootstraps=1000, random_seed=1, backend="gpu"))
    nf = ls.autofrequency(maximum_frequency=20.0).size
    ls.false_alarm_probability(0.3, **kw)
    times = []
    for _ in range(5):
        start = time.perf_counter()
        ls.false_alarm_probability(0.3, **kw)
        times.append(time.perf_counter() - start)
    print(f"bootstrap FAP nterms {nterms}: 1000 resamples x 300 samples x {nf} frequencies, f64, "
          f"GPU host call: {statistics.median(times) * 1e3:.2f} ms")
