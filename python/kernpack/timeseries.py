"""Period search with astropy's shape: ``LombScargle`` with multi-term
(``nterms``) generalised periodograms, astropy's ``chi2`` semantics, on the
GPU or the CPU backend.

``kernpack.timeseries.LombScargle(t, y, dy, nterms=K).power(frequency)``
gives what ``astropy.timeseries.LombScargle(...).power(frequency,
method='chi2')`` gives (frequencies in cycles per unit of time), computed by
kernpack; the small per-frequency helpers (``model``, ``model_parameters``,
``offset``, ``design_matrix``) are NumPy, as astropy's are.

Plain arrays only: astropy ``Quantity`` and ``Time`` inputs are not handled
(use ``.value`` and relative times).
"""

from __future__ import annotations

import sys
from typing import Any, Optional, Tuple

import numpy as np

from . import _native, _significance
from ._context import context

__all__ = ["LombScargle", "register_astropy_methods"]

_NORMALIZATIONS = ("standard", "model", "log", "psd")
_KERNPACK_METHODS = ("auto", "kernpack")
_ASTROPY_METHODS = ("fast", "slow", "cython", "chi2", "fastchi2", "scipy", "fastnifty", "fastnifty_chi2")


def _reject_units(**arrays: Any) -> None:
    for name, a in arrays.items():
        if a is not None and hasattr(a, "unit"):
            raise TypeError(f"{name} has units: kernpack.timeseries takes plain arrays (pass .value)")


def _design_matrix(t, frequency, dy=None, bias=True, nterms=1):
    """Columns [1 (with bias)], sin(2 pi k f t), cos(2 pi k f t), k = 1..nterms,
    each row divided by dy when given."""
    t = np.asarray(t)
    frequency = np.asarray(frequency)
    if t.ndim != 1:
        raise ValueError("t should be one dimensional")
    if frequency.ndim != 0:
        raise ValueError("frequency must be a scalar")
    if nterms == 0 and not bias:
        raise ValueError("cannot have nterms=0 and no bias")
    columns = [np.ones_like(t, dtype=float)] if bias else []
    for k in range(1, nterms + 1):
        phase = 2 * np.pi * k * frequency * t
        columns += [np.sin(phase), np.cos(phase)]
    x = np.vstack(columns)
    if dy is not None:
        x = x / dy
    return x.T


class LombScargle:
    """The (multi-term, generalised) Lomb-Scargle periodogram.

    Parameters as astropy's ``LombScargle``: ``t``, ``y`` and ``dy``
    (uncertainties, optional; weights ``1 / dy**2``) broadcast to one 1-D
    shape; ``fit_mean`` fits an offset at each frequency, ``center_data``
    subtracts the weighted mean of ``y`` first, ``nterms`` harmonics (1 to 8
    on kernpack's methods), ``normalization`` one of 'standard', 'model',
    'log', 'psd'. float32 ``t``, ``y`` (and ``dy``) run in single precision,
    anything else in float64.
    """

    def __init__(self, t, y, dy=None, fit_mean=True, center_data=True, nterms=1, normalization="standard"):
        _reject_units(t=t, y=y, dy=dy)
        if dy is None:
            t, y = np.broadcast_arrays(t, y)
        else:
            t, y, dy = np.broadcast_arrays(t, y, dy)
        if t.ndim != 1:
            raise ValueError("Inputs (t, y, dy) must be 1-dimensional")
        self.t, self.y, self.dy = t, y, dy
        self.fit_mean = fit_mean
        self.center_data = center_data
        self.nterms = nterms
        self.normalization = normalization

    # -- the periodogram -------------------------------------------------

    def _dtype(self):
        arrays = [self.t, self.y] + ([] if self.dy is None else [self.dy])
        return np.float32 if all(a.dtype == np.float32 for a in arrays) else np.float64

    def _samples(self, dtype):
        as_dtype = lambda a: np.ascontiguousarray(a, dtype=dtype)  # noqa: E731
        dy = None if self.dy is None else as_dtype(self.dy)
        return as_dtype(self.t), as_dtype(self.y), dy

    def _check_options(self, normalization):
        if normalization not in _NORMALIZATIONS:
            raise ValueError(f"normalization='{normalization}' not recognized")
        nterms = self.nterms
        if isinstance(nterms, bool) or not isinstance(nterms, (int, np.integer)):
            raise TypeError(f"nterms must be an integer, got {nterms!r}")
        if not 1 <= nterms <= 8:
            raise ValueError(f"nterms = {nterms} is not supported by kernpack: 1 to 8")
        return (int(nterms), bool(self.fit_mean), bool(self.center_data), normalization)

    def _power(self, freqs, normalization, backend, device):
        dtype = self._dtype()
        opts = self._check_options(normalization)
        t, y, dy = self._samples(dtype)
        if isinstance(freqs, tuple):
            f0, df, nf = freqs
            freqs = (float(f0), float(df), int(nf))
        else:
            freqs = np.ascontiguousarray(freqs, dtype=dtype)
        return _native.lombscargle_chi2(context(backend, device), t, y, dy, freqs, opts)

    def power(
        self,
        frequency,
        normalization=None,
        method="auto",
        assume_regular_frequency=False,
        method_kwds=None,
        *,
        backend: Optional[str] = None,
        device: Any = None,
    ):
        """The power at ``frequency`` (cycles per unit time), astropy's
        ``method='chi2'`` result. ``method``: 'auto' or 'kernpack' (the same);
        astropy's method names run astropy itself (when installed).
        ``backend``/``device`` pick kernpack's backend as elsewhere in kernpack."""
        if normalization is None:
            normalization = self.normalization
        if method in _ASTROPY_METHODS:
            return self._astropy().power(
                frequency,
                normalization=normalization,
                method=method,
                assume_regular_frequency=assume_regular_frequency,
                method_kwds=method_kwds,
            )
        if method not in _KERNPACK_METHODS:
            raise ValueError(f"invalid method: {method}")
        _reject_units(frequency=frequency)
        frequency = np.asarray(frequency)
        if frequency.size == 0:
            return np.zeros(frequency.shape, dtype=self._dtype())
        out = self._power(frequency.ravel(), normalization, backend, device)
        return out.reshape(frequency.shape)

    def autofrequency(
        self,
        samples_per_peak=5,
        nyquist_factor=5,
        minimum_frequency=None,
        maximum_frequency=None,
        return_freq_limits=False,
    ):
        """astropy's heuristic grid: spacing 1 / (baseline samples_per_peak),
        from half a spacing (or ``minimum_frequency``) to ``nyquist_factor``
        times the average Nyquist frequency (or ``maximum_frequency``)."""
        f0, df, nf = self._grid(samples_per_peak, nyquist_factor, minimum_frequency, maximum_frequency)
        if return_freq_limits:
            return f0, f0 + df * (nf - 1)
        return f0 + df * np.arange(nf)

    def _grid(self, samples_per_peak, nyquist_factor, minimum_frequency, maximum_frequency) -> Tuple[float, float, int]:
        baseline = self.t.max() - self.t.min()
        n_samples = self.t.size
        df = 1.0 / baseline / samples_per_peak
        if minimum_frequency is None:
            minimum_frequency = 0.5 * df
        if maximum_frequency is None:
            avg_nyquist = 0.5 * n_samples / baseline
            maximum_frequency = nyquist_factor * avg_nyquist
        nf = 1 + int(np.round((maximum_frequency - minimum_frequency) / df))
        return minimum_frequency, df, nf

    def autopower(
        self,
        method="auto",
        method_kwds=None,
        normalization=None,
        samples_per_peak=5,
        nyquist_factor=5,
        minimum_frequency=None,
        maximum_frequency=None,
        *,
        backend: Optional[str] = None,
        device: Any = None,
    ):
        """``(frequency, power)`` on :meth:`autofrequency`'s grid (computed by
        kernpack as the uniform grid ``f0 + k df``)."""
        f0, df, nf = self._grid(samples_per_peak, nyquist_factor, minimum_frequency, maximum_frequency)
        frequency = f0 + df * np.arange(nf)
        if normalization is None:
            normalization = self.normalization
        if method in _ASTROPY_METHODS:
            power = self.power(frequency, normalization, method, True, method_kwds)
            return frequency, power
        if method not in _KERNPACK_METHODS:
            raise ValueError(f"invalid method: {method}")
        if nf < 1:
            raise ValueError(f"the frequency grid is empty: {nf} frequencies")
        return frequency, self._power((f0, df, nf), normalization, backend, device)

    # -- significance --------------------------------------------------

    def _fap_inputs(self, samples_per_peak, nyquist_factor, minimum_frequency, maximum_frequency):
        """astropy's conditions on a false-alarm calculation, and fmax of the grid it assumes."""
        if self.nterms != 1:
            raise NotImplementedError("false alarm probability is not implemented for multiterm periodograms.")
        if not (self.fit_mean or self.center_data):
            raise NotImplementedError(
                "false alarm probability is implemented only for periodograms of centered data."
            )
        return self.autofrequency(
            samples_per_peak=samples_per_peak, nyquist_factor=nyquist_factor,
            minimum_frequency=minimum_frequency, maximum_frequency=maximum_frequency, return_freq_limits=True,
        )[1]

    def false_alarm_probability(
        self, power, method="baluev", samples_per_peak=5, nyquist_factor=5, minimum_frequency=None,
        maximum_frequency=None, method_kwds=None,
    ):
        """The probability that a periodogram of noise alone (on the
        :meth:`autofrequency` grid these arguments give) peaks at ``power`` or
        higher, by ``method``: 'baluev' (default), 'davies', 'naive' or
        'single' analytically, or 'bootstrap' (resampled periodograms computed
        by kernpack, reproducible from ``method_kwds={'random_seed': s}``).
        Single-term periodograms only, as astropy."""
        fmax = self._fap_inputs(samples_per_peak, nyquist_factor, minimum_frequency, maximum_frequency)
        return _significance.false_alarm_probability(
            power, fmax=fmax, t=self.t, y=self.y, dy=self.dy, normalization=self.normalization,
            method=method, method_kwds=method_kwds,
        )

    def false_alarm_level(
        self, false_alarm_probability, method="baluev", samples_per_peak=5, nyquist_factor=5,
        minimum_frequency=None, maximum_frequency=None, method_kwds=None,
    ):
        """The power whose false-alarm probability is
        ``false_alarm_probability``: the inverse of
        :meth:`false_alarm_probability`, with the same arguments."""
        fmax = self._fap_inputs(samples_per_peak, nyquist_factor, minimum_frequency, maximum_frequency)
        return _significance.false_alarm_level(
            false_alarm_probability, fmax=fmax, t=self.t, y=self.y, dy=self.dy,
            normalization=self.normalization, method=method, method_kwds=method_kwds,
        )

    # -- the fitted model (NumPy, per frequency, as astropy) ---------------

    def _dy(self):
        return np.ones_like(self.y, dtype=float) if self.dy is None else np.asarray(self.dy, dtype=float)

    def offset(self):
        """The model's offset: the weighted mean of y with ``center_data``, else 0."""
        if not self.center_data:
            return 0
        w = self._dy() ** -2.0
        return np.dot(np.asarray(self.y, dtype=float), w) / w.sum()

    def design_matrix(self, frequency, t=None):
        """The design matrix at ``frequency``: at the data's times and divided
        by dy, or at ``t`` unweighted."""
        _reject_units(frequency=frequency, t=t)
        if t is None:
            return _design_matrix(self.t, frequency, self.dy, nterms=self.nterms, bias=self.fit_mean)
        return _design_matrix(np.asarray(t), frequency, None, nterms=self.nterms, bias=self.fit_mean)

    def model_parameters(self, frequency, units=True):
        """The best-fit parameters at ``frequency``: [offset (with fit_mean)],
        then sin and cos amplitudes of each harmonic (centred y with ``center_data``)."""
        y = np.asarray(self.y, dtype=float)
        if self.center_data:
            y = y - self.offset()
        x = self.design_matrix(frequency)
        return np.linalg.solve(np.dot(x.T, x), np.dot(x.T, y / self._dy()))

    def model(self, t, frequency):
        """The best-fit model at ``frequency`` evaluated at times ``t``."""
        t = np.asarray(t)
        if t.ndim != 1:
            raise ValueError("t_fit should be one dimensional")
        if np.asarray(frequency).ndim != 0:
            raise ValueError("frequency should be a scalar")
        theta = self.model_parameters(frequency)
        return self.offset() + np.dot(self.design_matrix(frequency, t), theta)

    def _astropy(self):
        from astropy.timeseries import LombScargle as AstropyLombScargle

        return AstropyLombScargle(
            self.t, self.y, self.dy, fit_mean=self.fit_mean, center_data=self.center_data, nterms=self.nterms,
            normalization=self.normalization,
        )


# -- kernpack as a method of astropy's own LombScargle -------------------

_ASTROPY_IMPLEMENTATIONS = "astropy.timeseries.periodograms.lombscargle.implementations.main"


def _astropy_method(t, y, dy, frequency, center_data=True, fit_mean=True, normalization="standard", nterms=1,
                    backend=None, device=None):
    """astropy's method signature (``METHODS[name](t, y, dy, frequency=...,
    ...)``) over :class:`LombScargle`."""
    ls = LombScargle(t, y, dy, fit_mean=fit_mean, center_data=center_data, nterms=nterms,
                     normalization=normalization)
    return ls.power(frequency, backend=backend, device=device)


def register_astropy_methods() -> None:
    """Offers kernpack to astropy's ``LombScargle(...).power(method=...)`` and
    ``autopower``: ``method='kernpack'`` (single-term) and
    ``method='kernpack_chi2'`` (any ``nterms``), with ``method_kwds`` taking
    ``backend`` and ``device``. Importing :mod:`kernpack` registers them
    when astropy is already imported; call this after importing astropy
    otherwise. ImportError without astropy."""
    import importlib

    methods = importlib.import_module(_ASTROPY_IMPLEMENTATIONS).METHODS
    methods["kernpack"] = _astropy_method
    methods["kernpack_chi2"] = _astropy_method


if _ASTROPY_IMPLEMENTATIONS in sys.modules:
    register_astropy_methods()

