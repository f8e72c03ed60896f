"""A Lorenz 96 ensemble: 1000 members, 40 sites, 1000 RK4 steps in one call,
and how fast the members spread."""
import numpy as np
from _xp import to_host, xp

import kernpack

rng = np.random.default_rng(0)
members, n = 1000, 40
initial = 8.0 + rng.normal(0, 1e-3, (members, n))        # small perturbations of one state
initial[:, 19] += 0.01
run = kernpack.ode.lorenz96(xp.asarray(initial), steps=1000, dt=0.01, every=100)
spread = to_host(run.trajectory).std(axis=1).mean(axis=1)
print("ensemble spread every 100 steps:", " ".join(f"{s:.3f}" for s in spread))
