"""False-alarm probabilities and levels of Lomb-Scargle periodogram peaks,
with the signatures and semantics of astropy's
``astropy.timeseries.periodograms.lombscargle._statistics`` functions (which
``LombScargle.false_alarm_probability`` / ``false_alarm_level`` call):
methods 'baluev' (default), 'davies', 'naive', 'single' analytically, and
'bootstrap' as a batch of resampled periodograms on kernpack's backend.

The bootstrap draws its resamples from a counter-based generator keyed by
``method_kwds['random_seed']``: the same seed gives the same resamples on the
CPU and on any GPU (not NumPy's draws, so not astropy's values for that seed;
the same distribution). Its periodograms are the exact generalised ones
(astropy's ``autopower`` would pick its approximate 'fast' method).
"""
from __future__ import annotations

from typing import Any, Optional

import numpy as np

from . import _native
from ._context import context

__all__ = ["false_alarm_probability", "false_alarm_level"]

_NORMALIZATIONS = ("standard", "model", "log", "psd")
_METHODS = ("baluev", "davies", "naive", "single", "bootstrap")


def _inputs(fmax, t, y, dy, normalization, method):
    if method not in _METHODS:
        raise ValueError(f"Unrecognized method: {method}")
    if normalization not in _NORMALIZATIONS:
        raise ValueError(f"normalization='{normalization}' is not recognized")
    t = np.ascontiguousarray(t, dtype=np.float64).ravel()
    y = np.ascontiguousarray(y, dtype=np.float64).ravel()
    if dy is not None:
        dy = np.ascontiguousarray(np.broadcast_to(np.asarray(dy, dtype=np.float64), t.shape))
    return float(fmax), t, y, dy


def _shaped(values, like):
    shape = np.shape(like)
    out = np.asarray(values).reshape(shape)
    return out[()] if shape == () else out


def _seed(random_seed: Any) -> int:
    """A 64-bit seed: an int as given (mod 2^64), None from the OS's entropy,
    a NumPy Generator by one draw from it."""
    if random_seed is None:
        return int(np.random.default_rng().integers(0, 2**63))
    if isinstance(random_seed, np.random.Generator):
        return int(random_seed.integers(0, 2**63))
    return int(random_seed) % 2**64


def bootstrap_maxima(
    fmax,
    t,
    y,
    dy=None,
    normalization: str = "standard",
    n_bootstraps: int = 1000,
    random_seed: Any = None,
    samples_per_peak: float = 5.0,
    backend: Optional[str] = None,
    device: Optional[int] = None,
) -> np.ndarray:
    """The maxima of ``n_bootstraps`` periodograms of ``(t, y, dy)``
    resampled with replacement (t fixed), in resample order, on the grid
    ``LombScargle(t, y, dy).autopower(maximum_frequency=fmax)`` uses."""
    fmax, t, y, dy = _inputs(fmax, t, y, dy, normalization, "bootstrap")
    if n_bootstraps < 1:
        raise ValueError(f"n_bootstraps = {n_bootstraps}: at least 1")
    return _native.lombscargle_bootstrap(
        context(backend, device), t, y, dy, fmax, normalization,
        int(n_bootstraps), _seed(random_seed), float(samples_per_peak),
    )


def fap_of_maxima(maxima, Z):
    """astropy's bootstrap FAP of powers `Z`: the fraction of the resampled
    periodograms' maxima not below each."""
    maxima = np.sort(maxima)
    return 1 - np.searchsorted(maxima, Z) / len(maxima)


def level_of_maxima(maxima, p):
    """astropy's bootstrap level of probabilities `p`: the maximum at rank
    ``floor((1 - p) B)`` of the B sorted maxima."""
    maxima = np.sort(maxima)
    at = np.clip(np.floor((1 - np.asarray(p)) * len(maxima)).astype(int), 0, len(maxima) - 1)
    return maxima[at]


def _bootstrap_kwds(method_kwds):
    kwds = dict(method_kwds or {})
    allowed = {"n_bootstraps", "random_seed", "samples_per_peak", "backend", "device"}
    unknown = set(kwds) - allowed
    if unknown:
        raise TypeError(f"unexpected method_kwds for 'bootstrap': {sorted(unknown)}")
    return kwds


def false_alarm_probability(
    Z, fmax, t, y, dy=None, normalization="standard", method="baluev", method_kwds=None
):
    """The false-alarm probability of periodogram peaks of power ``Z``: the
    probability that the highest peak of a periodogram (up to ``fmax``,
    cycles per unit of t) of Gaussian noise reaches ``Z``. astropy's
    ``false_alarm_probability(Z, fmax, t, y, dy, normalization, method,
    method_kwds)``."""
    fmax, t, y, dy = _inputs(fmax, t, y, dy, normalization, method)
    if method == "bootstrap":
        return fap_of_maxima(bootstrap_maxima(fmax, t, y, dy, normalization, **_bootstrap_kwds(method_kwds)), Z)
    if method_kwds:
        raise TypeError(f"method '{method}' takes no method_kwds: {sorted(method_kwds)}")
    z = np.asarray(Z, dtype=np.float64)
    out = _native.false_alarm(np.ascontiguousarray(z.ravel()), fmax, t, dy, normalization, method, False)
    return _shaped(out, z)


def false_alarm_level(
    false_alarm_probability, fmax, t, y, dy=None, normalization="standard", method="baluev", method_kwds=None
):
    """The power whose false-alarm probability is ``false_alarm_probability``
    (in [0, 1]): the inverse of :func:`false_alarm_probability`. astropy's
    ``false_alarm_level``."""
    fmax, t, y, dy = _inputs(fmax, t, y, dy, normalization, method)
    p = np.asarray(false_alarm_probability, dtype=np.float64)
    if method == "bootstrap":
        return level_of_maxima(bootstrap_maxima(fmax, t, y, dy, normalization, **_bootstrap_kwds(method_kwds)), p)
    if method_kwds:
        raise TypeError(f"method '{method}' takes no method_kwds: {sorted(method_kwds)}")
    out = _native.false_alarm(np.ascontiguousarray(p.ravel()), fmax, t, dy, normalization, method, True)
    return _shaped(out, p)
