"""The coupled F/G system, dF/dt = -2i F - i delta (2G - 1),
dG/dt = -i (conj(delta) F - delta conj(F)), delta = sum(F), the whole run in one call."""
import numpy as np
from _xp import to_host, xp

import kernpack

n = 512                                   # F = G = 1, delta0 = 1: the runaway case
f = xp.ones((n, n), complex)
g = xp.ones((n, n), complex)
run = kernpack.ode.fg_integrate(f, g, delta0=1 + 0j, dt=1e-4, nsteps=3)
for k, d in enumerate(to_host(run.delta)):
    print(f"delta[{k}] = {d:.6g}")
