"""The period of an irregularly sampled light curve (a drop-in for
scipy.signal.lombscargle, then the faster uniform-grid variant)."""
import numpy as np
from _xp import to_host, xp

import kernpack

rng = np.random.default_rng(42)
t = np.sort(rng.uniform(0, 120, 600))                      # days, with gaps in between
y = 0.8 * np.sin(2 * np.pi * t / 3.21) + rng.normal(0, 0.5, t.size) + 12.0
freqs = np.linspace(2 * np.pi / 30, 2 * np.pi / 0.5, 20_000)  # angular frequencies

power = kernpack.signal.lombscargle(xp.asarray(t), xp.asarray(y), xp.asarray(freqs),
                                    normalize=True, floating_mean=True)
print(f"best period (frequency array): {2 * np.pi / freqs[int(np.argmax(to_host(power)))]:.3f} d")

f0, df = freqs[0], freqs[1] - freqs[0]                     # the same grid, by the recurrence kernel
power = kernpack.signal.lombscargle_uniform(xp.asarray(t), xp.asarray(y), f0, df, freqs.size,
                                            normalize=True, floating_mean=True)
print(f"best period (uniform grid):    {2 * np.pi / (f0 + df * int(np.argmax(to_host(power)))):.3f} d")
