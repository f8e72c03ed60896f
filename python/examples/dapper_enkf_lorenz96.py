"""A data-assimilation experiment with kernpack's model step: DAPPER's
Lorenz 96 twin experiment of Sakov and Oke (2008) (40 sites, every site
observed every 0.05 time units), assimilated by an ensemble square-root Kalman
filter (24 members), once with DAPPER's own NumPy model and once with
``kernpack.ode.dapper_step``. Both runs see the same truth and observations and
the same random draws of the filter; the analysis RMSE must agree within
sampling noise (chaos makes the two runs' ensembles part after a few hundred
cycles, since the two models round differently).

Needs DAPPER (``pip install dapper``). KERNPACK_EXAMPLES_CPU=1: the CPU backend.
"""
import os
import time

import dapper.da_methods as da
import dapper.mods as modelling
from dapper.mods.Lorenz96 import sakov2008
from dapper.tools.seeding import set_seed

import kernpack.ode

CYCLES = int(os.environ.get("KERNPACK_DAPPER_CYCLES", "400"))


def experiment(cycles=CYCLES, seed=3, backend=None):
    """(RMSE, seconds) of the analysis for DAPPER's model and kernpack's."""
    hmm = sakov2008.HMM
    hmm.tseq.Ko = cycles
    hmm.tseq.BurnIn = 5  # time units, of 0.05 per cycle: the first 100 cycles
    set_seed(seed)
    xx, yy = hmm.simulate(desc="truth")
    step = kernpack.ode.dapper_step("lorenz96", forcing=8.0, backend=backend)
    ours = modelling.HiddenMarkovModel(
        {"M": hmm.Nx, "model": step, "noise": 0}, sakov2008.Obs, hmm.tseq, sakov2008.X0
    )
    results = {}
    for name, model in (("DAPPER", hmm), ("kernpack", ours)):
        set_seed(seed + 1)
        xp = da.EnKF("Sqrt", N=24, infl=1.013, rot=True)
        start = time.perf_counter()
        xp.assimilate(model, xx, yy, liveplots=False, desc=name)
        seconds = time.perf_counter() - start
        xp.stats.average_in_time()
        results[name] = (float(xp.avrgs.err.rms.a.val), seconds)
    return results


if __name__ == "__main__":
    backend = "cpu" if os.environ.get("KERNPACK_EXAMPLES_CPU") == "1" else None
    for name, (rmse, seconds) in experiment(backend=backend).items():
        print(f"{name:>8}'s model: analysis RMSE {rmse:.3f}, {seconds:.2f} s for {CYCLES} cycles")
