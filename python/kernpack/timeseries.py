"""Period search with astropy's shape, on the GPU or the CPU backend:
``LombScargle`` with multi-term (``nterms``) generalised periodograms
(astropy's ``chi2`` semantics), and ``BoxLeastSquares``, the box least
squares transit search (astropy's ``BoxLeastSquares`` with its default
``'fast'`` method), for one series or, with :func:`bls_batch`, a ragged
batch of many.

``kernpack.timeseries.LombScargle(t, y, dy, nterms=K).power(frequency)``
gives what ``astropy.timeseries.LombScargle(...).power(frequency,
method='chi2')`` gives (frequencies in cycles per unit of time), computed by
kernpack; the small per-frequency helpers (``model``, ``model_parameters``,
``offset``, ``design_matrix``) are NumPy, as astropy's are.

``kernpack.timeseries.BoxLeastSquares(t, y, dy).power(period, duration)``
gives what astropy's ``BoxLeastSquares(...).power(period, duration)`` gives
(the search is kernpack's; the vetting helpers ``model``, ``transit_mask``
and ``compute_stats`` are NumPy); ``bls_batch(..., peaks=k)`` keeps only
each series' k best periods (:class:`BlsPeaks`).

:func:`pdm` (phase dispersion minimisation) and :func:`conditional_entropy`
fold a series at each trial frequency (cycles per unit of time) and give
one statistic per frequency, lower at a better period (theta in [0, 1];
the entropy H); :func:`pdm_batch` and :func:`conditional_entropy_batch` do
so for a ragged batch of many series in one call.

Plain arrays only: astropy ``Quantity`` and ``Time`` inputs are a TypeError
(use ``.value`` and relative times, e.g. ``(t - t[0]).to_value('day')``).
"""

from __future__ import annotations

import operator
import sys
from typing import Any, Dict, List, NamedTuple, Optional, Sequence, Tuple, Union

import numpy as np

from . import _native, _significance
from ._arrays import device_array, host_array, to_host
from ._context import context
from .signal import _count

__all__ = [
    "BoxLeastSquares",
    "BoxLeastSquaresResults",
    "BlsPeaks",
    "FoldPeaks",
    "LombScargle",
    "LombScargleMultiband",
    "MultibandPeaks",
    "Peaks",
    "bls_batch",
    "conditional_entropy",
    "conditional_entropy_batch",
    "lombscargle_batch",
    "lombscargle_multiband_batch",
    "pdm",
    "pdm_batch",
    "register_astropy_methods",
]

_NORMALIZATIONS = ("standard", "model", "log", "psd")
_KERNPACK_METHODS = ("auto", "kernpack")
_ASTROPY_METHODS = ("fast", "slow", "cython", "chi2", "fastchi2", "scipy", "fastnifty", "fastnifty_chi2")


def _reject_units(**arrays: Any) -> None:
    for name, a in arrays.items():
        if a is not None and hasattr(a, "unit"):
            raise TypeError(f"{name} has units: kernpack.timeseries takes plain arrays (pass .value)")
        if type(a).__module__.startswith("astropy.time"):
            raise TypeError(
                f"{name} is an astropy {type(a).__name__}: kernpack.timeseries takes plain float arrays "
                "(pass relative times, e.g. (t - t[0]).to_value('day'))"
            )


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


def _uniform_grid(frequency: np.ndarray) -> Optional[Tuple[float, float, int]]:
    """``(f0, df, nf)`` when a float array of 64 or more frequencies is the
    grid ``f0 + k df`` to within rounding (4 ulps of its largest value, as
    ``f0 + df * np.arange(nf)`` or ``np.linspace`` make it), else None. On
    such a grid the uniform-grid methods run (the CPU backend's non-uniform
    FFT, the GPU's recurrence): the frequencies then differ from the array's
    by that rounding, as much as the phases f t carry anyway."""
    nf = frequency.size
    if nf < 64 or frequency.dtype.kind != "f":
        return None
    f0, last = float(frequency[0]), float(frequency[-1])
    df = (last - f0) / (nf - 1)
    if not (np.isfinite(df) and df > 0):
        return None
    scale = max(abs(f0), abs(last))
    grid = f0 + df * np.arange(nf, dtype=np.float64)
    if np.max(np.abs(frequency.astype(np.float64, copy=False) - grid)) > 4 * np.finfo(np.float64).eps * scale:
        return None
    return f0, df, nf


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
        ``backend``/``device`` pick kernpack's backend as elsewhere in kernpack.
        A regular grid (64 or more frequencies ``f0 + k df`` to within
        rounding, whatever ``assume_regular_frequency``) runs the uniform-grid
        method: on the CPU a non-uniform FFT, O(N + nf log nf) per harmonic."""
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
        flat = frequency.ravel()
        out = self._power(_uniform_grid(flat) or flat, normalization, backend, device)
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

    def _fap_inputs(self, samples_per_peak, nyquist_factor, minimum_frequency, maximum_frequency, method):
        """astropy's conditions on a false-alarm calculation (but the
        bootstrap of multi-term periodograms, which kernpack adds), and fmax
        of the grid it assumes."""
        if self.nterms != 1 and method != "bootstrap":
            raise NotImplementedError(
                "false alarm probability is not implemented for multiterm periodograms "
                "(kernpack computes method='bootstrap' for them)."
            )
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
        The analytic methods are for single-term periodograms only, as
        astropy's; the bootstrap also takes multi-term ones (astropy has no
        FAP for those): the maxima of resampled multi-term periodograms."""
        fmax = self._fap_inputs(samples_per_peak, nyquist_factor, minimum_frequency, maximum_frequency, method)
        if self.nterms != 1:
            return _significance.fap_of_maxima(self._bootstrap_maxima(fmax, method_kwds), power)
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
        fmax = self._fap_inputs(samples_per_peak, nyquist_factor, minimum_frequency, maximum_frequency, method)
        if self.nterms != 1:
            return _significance.level_of_maxima(self._bootstrap_maxima(fmax, method_kwds), false_alarm_probability)
        return _significance.false_alarm_level(
            false_alarm_probability, fmax=fmax, t=self.t, y=self.y, dy=self.dy,
            normalization=self.normalization, method=method, method_kwds=method_kwds,
        )

    def _bootstrap_maxima(self, fmax, method_kwds):
        """The maxima of the bootstrap's resampled multi-term periodograms
        (``method_kwds``: n_bootstraps, random_seed, samples_per_peak,
        backend, device, as for one term)."""
        kwds = _significance._bootstrap_kwds(method_kwds)
        resamples = int(kwds.get("n_bootstraps", 1000))
        if resamples < 1:
            raise ValueError(f"n_bootstraps = {resamples}: at least 1")
        t, y, dy = self._samples(self._dtype())
        return _native.lombscargle_chi2_bootstrap(
            context(kwds.get("backend"), kwds.get("device")), t, y, dy, float(fmax),
            self._check_options(self.normalization), resamples, _significance._seed(kwds.get("random_seed")),
            float(kwds.get("samples_per_peak", 5.0)),
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


# -- the multiband periodogram -------------------------------------------

_MULTIBAND_METHODS = ("flexible", "fast")
_SB_KERNPACK = ("auto", "kernpack")


def _band_codes(bands: Any, labels: Optional[np.ndarray] = None) -> Tuple[np.ndarray, np.ndarray]:
    """Band labels as uint32 codes in ``np.unique`` order (astropy's column
    order), and the labels; with `labels`, codes into those (a ValueError
    for a label not among them)."""
    bands = np.asarray(bands)
    if labels is None:
        if bands.size and (np.issubdtype(bands.dtype, np.integer) or bands.dtype == np.bool_):
            # Integer labels of a small range (a survey's filter ids): one
            # pass through a table instead of np.unique's sort of every sample.
            lo, hi = int(bands.min()), int(bands.max())
            if hi - lo < 1 << 16:
                shifted = (bands.astype(np.int64, copy=False) - lo).ravel()
                present = np.bincount(shifted, minlength=hi - lo + 1) > 0
                lookup = (np.cumsum(present) - 1).astype(np.uint32)
                labels = (np.flatnonzero(present) + lo).astype(bands.dtype)
                return labels, np.ascontiguousarray(lookup[shifted])
        labels, codes = np.unique(bands, return_inverse=True)
        return labels, np.ascontiguousarray(codes.ravel(), dtype=np.uint32)
    codes = np.searchsorted(labels, bands)
    codes = np.clip(codes, 0, len(labels) - 1)
    if not np.array_equal(labels[codes], bands):
        raise ValueError(f"bands_fit does not match training data: input: {set(np.unique(bands))} "
                         f"output: {set(labels)}")
    return labels, np.ascontiguousarray(codes, dtype=np.uint32)


def _multiband_options(method, nterms_base, nterms_band, reg_base, reg_band, regularize_by_trace, center_data,
                       fit_mean, normalization) -> Tuple[Any, ...]:
    if method not in _MULTIBAND_METHODS:
        raise ValueError(f"Invalid Method: {method}")
    if normalization not in _NORMALIZATIONS:
        raise ValueError(f"normalization='{normalization}' not recognized")
    for name, value in (("nterms_base", nterms_base), ("nterms_band", nterms_band)):
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 0:
            raise ValueError(f"{name} must be a non-negative integer, got {value!r}")
    if nterms_base == 0 and nterms_band == 0:
        raise ValueError("At least one of nterms_base and nterms_band must be greater than 0.")
    reg = lambda r: None if r is None else float(r)  # noqa: E731
    return (method, int(nterms_base), int(nterms_band), reg(reg_base), reg(reg_band), bool(regularize_by_trace),
            bool(center_data), bool(fit_mean), normalization)


class LombScargleMultiband:
    """The multiband Lomb-Scargle periodogram: one period shared by every
    band of a series, with astropy's ``LombScargleMultiband`` semantics.

    Parameters as astropy's: ``t``, ``y``, ``bands`` (one label per sample,
    any type ``np.unique`` sorts) and ``dy`` (uncertainties, optional,
    weights ``1 / dy**2``) broadcast to one 1-D shape; ``nterms_base``
    harmonics of the model every band shares and ``nterms_band`` of each
    band's own model (0 to 3 each on kernpack's methods, not both 0);
    ``reg_base`` / ``reg_band`` the ridges on their unknowns (None: none),
    scaled by the normal matrix's trace with ``regularize_by_trace``;
    ``center_data`` subtracts each band's weighted mean first; ``fit_mean``
    and ``normalization`` are the fast method's (as in astropy, the flexible
    method's power is always the standard one). float32 ``t``, ``y`` (and
    ``dy``) run in single precision, anything else in float64.
    """

    def __init__(self, t, y, bands, dy=None, normalization="standard", nterms_base=1, nterms_band=1,
                 reg_base=None, reg_band=1e-6, regularize_by_trace=True, center_data=True, fit_mean=True):
        _reject_units(t=t, y=y, dy=dy)
        if dy is None:
            t, y, bands = np.broadcast_arrays(t, y, bands)
        else:
            t, y, bands, dy = np.broadcast_arrays(t, y, bands, dy)
        if t.ndim != 1:
            raise ValueError("Inputs (t, y, bands, dy) must be 1-dimensional")
        self.t, self.y, self.bands, self.dy = t, y, bands, dy
        self.normalization = normalization
        self.nterms_base = nterms_base
        self.nterms_band = nterms_band
        self.reg_base = reg_base
        self.reg_band = reg_band
        self.regularize_by_trace = regularize_by_trace
        self.center_data = center_data
        self.fit_mean = fit_mean
        self.nterms = nterms_base

    # -- the periodogram -------------------------------------------------

    def _dtype(self):
        arrays = [self.t, self.y] + ([] if self.dy is None else [self.dy])
        return np.float32 if all(a.dtype == np.float32 for a in arrays) else np.float64

    def _options(self, method, normalization):
        return _multiband_options(method, self.nterms_base, self.nterms_band, self.reg_base, self.reg_band,
                                  self.regularize_by_trace, self.center_data, self.fit_mean, normalization)

    def _power(self, freqs, method, normalization, backend, device):
        dtype = self._dtype()
        opts = self._options(method, normalization)
        as_dtype = lambda a: np.ascontiguousarray(a, dtype=dtype)  # noqa: E731
        t, y = as_dtype(self.t), as_dtype(self.y)
        dy = None if self.dy is None else as_dtype(self.dy)
        _, codes = _band_codes(self.bands)
        if isinstance(freqs, tuple):
            f0, df, nf = freqs
            freqs = (float(f0), float(df), int(nf))
        else:
            freqs = np.ascontiguousarray(freqs, dtype=dtype)
        return _native.lombscargle_multiband(context(backend, device), t, y, dy, codes, freqs, opts)

    def power(self, frequency, method="flexible", sb_method="auto", normalization="standard", *,
              backend: Optional[str] = None, device: Any = None):
        """The power at ``frequency`` (cycles per unit time), astropy's
        ``power(frequency, method=...)``: 'flexible' (one regularised fit of
        the shared and per-band models) or 'fast' (each band's own
        periodogram, combined), both computed by kernpack. ``sb_method``
        ('auto' or 'kernpack': kernpack's exact multi-term periodogram per
        band; astropy's names run astropy's fast method itself, when
        installed). ``normalization`` defaults to 'standard', as astropy's
        ``power`` (None: the instance's). ``backend``/``device`` pick
        kernpack's backend."""
        if normalization is None:
            normalization = self.normalization
        if method == "fast" and sb_method not in _SB_KERNPACK:
            if sb_method not in _ASTROPY_METHODS:
                raise ValueError(f"invalid sb_method: {sb_method}")
            return self._astropy().power(frequency, method=method, sb_method=sb_method,
                                         normalization=normalization)
        _reject_units(frequency=frequency)
        frequency = np.asarray(frequency)
        if frequency.size == 0:
            self._options(method, normalization)
            return np.zeros(frequency.shape, dtype=self._dtype())
        out = self._power(frequency.ravel(), method, normalization, backend, device)
        return out.reshape(frequency.shape)

    def autofrequency(self, samples_per_peak=5, nyquist_factor=5, minimum_frequency=None, maximum_frequency=None,
                      return_freq_limits=False):
        """astropy's heuristic grid, as :meth:`LombScargle.autofrequency`."""
        return LombScargle.autofrequency(self, samples_per_peak, nyquist_factor, minimum_frequency,
                                         maximum_frequency, return_freq_limits)

    _grid = LombScargle._grid

    def autopower(self, method="flexible", sb_method="auto", normalization="standard", samples_per_peak=5,
                  nyquist_factor=5, minimum_frequency=None, maximum_frequency=None, *,
                  backend: Optional[str] = None, device: Any = None):
        """``(frequency, power)`` on :meth:`autofrequency`'s grid (computed by
        kernpack as the uniform grid ``f0 + k df``)."""
        f0, df, nf = self._grid(samples_per_peak, nyquist_factor, minimum_frequency, maximum_frequency)
        frequency = f0 + df * np.arange(nf)
        if method == "fast" and sb_method not in _SB_KERNPACK:
            return frequency, self.power(frequency, method, sb_method, normalization)
        if nf < 1:
            raise ValueError(f"the frequency grid is empty: {nf} frequencies")
        return frequency, self._power((f0, df, nf), method, normalization, backend, device)

    def _bootstrap_maxima(self, fmax, method_kwds):
        """The maxima of the bootstrap's resampled multi-term periodograms
        (``method_kwds``: n_bootstraps, random_seed, samples_per_peak,
        backend, device, as for one term)."""
        kwds = _significance._bootstrap_kwds(method_kwds)
        resamples = int(kwds.get("n_bootstraps", 1000))
        if resamples < 1:
            raise ValueError(f"n_bootstraps = {resamples}: at least 1")
        t, y, dy = self._samples(self._dtype())
        return _native.lombscargle_chi2_bootstrap(
            context(kwds.get("backend"), kwds.get("device")), t, y, dy, float(fmax),
            self._check_options(self.normalization), resamples, _significance._seed(kwds.get("random_seed")),
            float(kwds.get("samples_per_peak", 5.0)),
        )

    # -- the fitted model (NumPy, per frequency, as astropy) ---------------

    def _dy(self):
        return np.ones_like(self.y, dtype=float) if self.dy is None else np.asarray(self.dy, dtype=float)

    def _band_means(self) -> Tuple[np.ndarray, np.ndarray]:
        """The labels and each one's weighted mean of y."""
        labels, codes = _band_codes(self.bands)
        w = self._dy() ** -2.0
        y = np.asarray(self.y, dtype=float)
        means = np.bincount(codes, w * y, len(labels)) / np.bincount(codes, w, len(labels))
        return labels, means

    def _design(self, t, codes, nbands, frequency, dy=None):
        """astropy's columns: 1, sin/cos of each base harmonic; then per band
        1, sin/cos of each band harmonic, zero outside the band."""
        t = np.asarray(t, dtype=float)
        if np.asarray(frequency).ndim != 0:
            raise ValueError("frequency should be a scalar")
        omega = 2 * np.pi * float(frequency)
        harmonics = lambda k: [f(h * omega * t) for h in range(1, k + 1) for f in (np.sin, np.cos)]  # noqa: E731
        cols = [np.ones_like(t)] + harmonics(self.nterms_base)
        band_cols = [np.ones_like(t)] + harmonics(self.nterms_band)
        for b in range(nbands):
            inside = codes == b
            cols += [np.where(inside, c, 0.0) for c in band_cols]
        x = np.vstack(cols)
        if dy is not None:
            x = x / dy
        return x.T

    def design_matrix(self, frequency, t_fit=None, bands_fit=None):
        """The design matrix at ``frequency``: at the data's times and bands
        divided by dy, or at ``t_fit`` for every band of ``bands_fit``
        (default all, each time repeated per band) unweighted."""
        _reject_units(frequency=frequency, t_fit=t_fit)
        labels, codes = _band_codes(self.bands)
        if t_fit is None:
            return self._design(self.t, codes, len(labels), frequency, self._dy())
        bands_fit = labels if bands_fit is None else np.atleast_1d(bands_fit)
        _, fit_codes = _band_codes(bands_fit, labels)
        t_fit, fit_codes = np.broadcast_arrays(np.asarray(t_fit, dtype=float), fit_codes[:, np.newaxis])
        return self._design(t_fit.ravel(), fit_codes.ravel(), len(labels), frequency)

    def offset(self, t_fit=None, bands_fit=None):
        """The per-band offsets subtracted with ``center_data`` (else 0): at
        the data's samples, or at ``t_fit`` for each band of ``bands_fit``."""
        if not self.center_data:
            return 0
        labels, means = self._band_means()
        if t_fit is None:
            return means[_band_codes(self.bands)[1]]
        bands_fit = labels if bands_fit is None else np.atleast_1d(bands_fit)
        _, fit_codes = _band_codes(bands_fit, labels)
        t_fit, fit_codes = np.broadcast_arrays(np.asarray(t_fit, dtype=float), fit_codes[:, np.newaxis])
        return means[fit_codes.ravel()]

    def model_parameters(self, frequency, units=True):
        """The best-fit parameters at ``frequency``, astropy's order: base
        offset, base sin/cos per harmonic, then per band its offset and
        sin/cos per harmonic (the regularised fit of the flexible method)."""
        y = np.asarray(self.y, dtype=float)
        if self.center_data:
            y = y - self.offset()
        x = self.design_matrix(frequency)
        m = np.dot(x.T, x)
        reg = np.zeros(m.shape[0])
        base = 1 + 2 * self.nterms_base
        reg[:base] = 0.0 if self.reg_base is None else self.reg_base
        reg[base:] = 0.0 if self.reg_band is None else self.reg_band
        m[np.diag_indices_from(m)] += (np.trace(m) if self.regularize_by_trace else 1.0) * reg
        rhs = np.dot(x.T, y / self._dy())
        try:
            return np.linalg.solve(m, rhs)
        except np.linalg.LinAlgError:
            return np.linalg.lstsq(m, rhs, rcond=None)[0]

    def model(self, t, frequency, bands_fit=None):
        """The best-fit model at ``frequency`` at times ``t`` for each band of
        ``bands_fit`` (default all): shape ``(n_bands, len(t))``."""
        t = np.asarray(t, dtype=float)
        if t.ndim != 1:
            raise ValueError("t, y, dy should be one dimensional")
        labels, _ = _band_codes(self.bands)
        bands_fit = labels if bands_fit is None else np.atleast_1d(bands_fit)
        theta = self.model_parameters(frequency)
        fit = np.dot(self.design_matrix(frequency, t, bands_fit), theta)
        if self.center_data:
            fit = fit + self.offset(t, bands_fit)
        return fit.reshape(len(bands_fit), len(t))

    def false_alarm_probability(self, *args, **kwargs):
        """Not implemented for multiband periodograms (as astropy)."""
        raise NotImplementedError

    def false_alarm_level(self, *args, **kwargs):
        """Not implemented for multiband periodograms (as astropy)."""
        raise NotImplementedError

    def distribution(self, *args, **kwargs):
        """Not implemented for multiband periodograms (as astropy)."""
        raise NotImplementedError

    def _astropy(self):
        from astropy.timeseries import LombScargleMultiband as AstropyMultiband

        return AstropyMultiband(
            self.t, self.y, self.bands, self.dy, normalization=self.normalization, nterms_base=self.nterms_base,
            nterms_band=self.nterms_band, reg_base=self.reg_base, reg_band=self.reg_band,
            regularize_by_trace=self.regularize_by_trace, center_data=self.center_data, fit_mean=self.fit_mean,
        )


class MultibandPeaks(NamedTuple):
    """The best peaks of each series of a multiband batch
    (:func:`lombscargle_multiband_batch` with ``peaks=k``): ``(nseries, k)``
    arrays, row ``s`` series ``s``'s peaks highest first; where a series has
    fewer than ``k``, its last columns are padding."""

    frequency: np.ndarray
    """Frequency of the peak, ``f0 + index * df`` of the series' grid, or
    the refined one (cycles per unit time), float64 (NaN: no peak)."""
    power: np.ndarray
    """The power at the peak, float64: the batch dtype's value widened
    exactly (NaN: no peak)."""
    index: np.ndarray
    """Index of the (coarse) peak in the series' grid, int64 (-1: no peak)."""


class Peaks(NamedTuple):
    """The best peaks of each series of a batch (:func:`lombscargle_batch`
    with ``peaks=k``): ``(nseries, k)`` arrays, row ``s`` series ``s``'s
    peaks highest first; where a series has fewer than ``k``, its last
    columns are padding."""

    frequency: np.ndarray
    """Frequency of the peak (cycles per unit time), float64: ``f0 + index
    * df`` of the series' grid, or with ``refine`` the refined one (NaN: no
    peak)."""
    power: np.ndarray
    """The power at ``frequency``, float64: the batch dtype's value widened
    exactly (NaN: no peak)."""
    index: np.ndarray
    """Index of the coarse peak in the series' grid, int64 (-1: no peak)."""
    fap: np.ndarray
    """The false-alarm probability of ``power`` with ``fap=method``, float64
    (NaN: not asked for, or no peak)."""


def _batch_grids(f0: Any, df: Any, nf: Any) -> Tuple[np.ndarray, np.ndarray, int]:
    """A batch's grids as the native calls take them: float64 arrays of one
    `f0` and `df` (shared) or one per series, and `nf`."""
    _reject_units(f0=f0, df=df)
    f0, df = np.broadcast_arrays(np.atleast_1d(np.asarray(f0, dtype=np.float64)),
                                 np.atleast_1d(np.asarray(df, dtype=np.float64)))
    return np.ascontiguousarray(f0), np.ascontiguousarray(df), _integer("nf", nf)


_FAP_METHODS = ("baluev", "davies", "naive", "single")


def _peak_search(peaks: Any, separation: Any, refine: Any, fap: Any) -> Optional[Tuple[int, float, Any, Any]]:
    """``(k, separation, (points, steps) or None, fap method or None)``
    checked, or None for whole periodograms."""
    top = _peak_options(peaks, separation)
    if top is None:
        for name, value in (("refine", refine), ("fap", fap)):
            if value is not None:
                raise ValueError(f"{name} applies to peaks: pass peaks=k (the peaks per series) with it")
        return None
    if refine is not None:
        points, steps = refine if isinstance(refine, tuple) else (refine, 1)
        refine = (_integer("refine points", points), _integer("refine steps", steps))
        if refine[0] < 2 or refine[1] < 1:
            raise ValueError(f"refine = {refine}: at least 2 points per coarse step and a half width of 1 step")
    if fap is not None and fap not in _FAP_METHODS:
        if fap == "bootstrap":
            raise ValueError("fap='bootstrap' is not offered per peak: use LombScargle.false_alarm_probability")
        raise ValueError(f"fap={fap!r} not recognized: one of {', '.join(_FAP_METHODS)}")
    return (*top, refine, fap)


def lombscargle_batch(
    t: Union[Any, Sequence[Any]],
    y: Union[Any, Sequence[Any]],
    f0: Union[float, Any],
    df: Union[float, Any],
    nf: int,
    *,
    dy: Optional[Union[Any, Sequence[Any]]] = None,
    offsets: Optional[Any] = None,
    nterms: int = 1,
    center_data: bool = True,
    fit_mean: bool = True,
    normalization: str = "standard",
    peaks: Optional[int] = None,
    separation: float = 0.0,
    refine: Any = None,
    fap: Optional[str] = None,
    backend: Optional[str] = None,
    device: Any = None,
) -> Union[np.ndarray, Peaks]:
    """:class:`LombScargle` periodograms (astropy's ``method='chi2'``, any
    `nterms`) of many series of different lengths in one call, each on the
    uniform grid ``f0 + k df`` (cycles per unit time; one grid for all
    series, or arrays of one `f0` and `df` per series).

    `t`, `y` (and `dy`) are flat arrays with ``offsets`` (``nseries + 1``
    indices from 0 to their length; series ``s`` is
    ``t[offsets[s]:offsets[s + 1]]``), or lists with one array per series.
    The options are :class:`LombScargle`'s. Returns an ``(nseries, nf)``
    array in the inputs' float dtype. An empty batch (``offsets=[0]`` or
    empty lists) gives an empty result once the options and grid are
    checked.

    With ``peaks=k`` (1 to 256), only each series' best `k` peaks come
    back, a :class:`Peaks`: the highest local maxima of its periodogram
    (above the left neighbour and not below the right one), highest first,
    each at least `separation` (cycles per unit time) in frequency from the
    better ones. On the GPU the batch runs in chunks of series whose
    periodograms are reduced there, so only the peaks cross the bus.

    ``refine`` (with `peaks`): an int `points`, or a ``(points, steps)``
    tuple (``steps`` 1 by default), refines each peak on a grid from its
    frequency ``- steps * df`` to ``+ steps * df`` in steps of ``df /
    points`` (from the first point at or above 0 near 0), by the same
    periodogram: the peak moves to the first highest value there when that
    is higher, so refining never lowers a peak (``index`` stays the coarse
    one). The columns keep the coarse ranking: a refined peak can end up
    above a better-ranked one (sort each row by ``power`` for the refined
    order). Only ``k * (2 * steps * points + 1)`` more values per series are
    computed.

    ``fap`` (with `peaks`): 'baluev', 'davies', 'naive' or 'single', each
    peak's false-alarm probability by astropy's formulas for its series
    (``t``, ``dy``, `normalization`) with ``fmax`` the series' last grid
    frequency ``f0 + (nf - 1) df``: what
    ``LombScargle(t, y, dy, ...).false_alarm_probability(power,
    maximum_frequency=fmax, method=fap)`` gives when ``fmax`` lies on
    astropy's own ``autofrequency`` grid (that method rounds
    ``maximum_frequency`` onto it; a grid made by ``autofrequency`` is
    one). As astropy, for ``nterms=1`` with `fit_mean` or `center_data`
    only (a ValueError otherwise); the bootstrap is not offered per peak.
    """
    t, y, dy, offsets = _ragged(t, y, dy, offsets)
    dtype = _float_dtype(t, y, *([] if dy is None else [dy]))
    as_dtype = lambda a: np.ascontiguousarray(a, dtype=dtype)  # noqa: E731
    if normalization not in _NORMALIZATIONS:
        raise ValueError(f"normalization='{normalization}' not recognized")
    opts = (_integer("nterms", nterms), bool(fit_mean), bool(center_data), normalization)
    search = _peak_search(peaks, separation, refine, fap)
    grids = _batch_grids(f0, df, nf)
    ctx = context(backend, device)
    if offsets.size == 1:
        # No series: the options and the grid checked on a series of four
        # samples (enough for a FAP), then no rows.
        first = (grids[0][:1], grids[1][:1]) if grids[0].size else (np.ones(1), np.ones(1))
        four = np.array([0.0, 1.0, 3.0, 7.0], dtype=dtype)
        _native.lombscargle_chi2_batch(ctx, four, four, None, np.array([0, 4], np.uintp), (*first, grids[2]), opts,
                                       search)
        if search is not None:
            k = search[0]
            return Peaks(np.empty((0, k)), np.empty((0, k)), np.empty((0, k), np.int64), np.empty((0, k)))
        return np.empty((0, grids[2]), dtype=dtype)
    got = _native.lombscargle_chi2_batch(
        ctx, as_dtype(t), as_dtype(y), None if dy is None else as_dtype(dy), offsets, grids, opts, search)
    if search is None:
        return got
    index, frequency, power, fap_values = got
    return Peaks(frequency, power, index, fap_values)


def lombscargle_multiband_batch(
    t: Union[Any, Sequence[Any]],
    y: Union[Any, Sequence[Any]],
    bands: Union[Any, Sequence[Any]],
    f0: Union[float, Any],
    df: Union[float, Any],
    nf: int,
    *,
    dy: Optional[Union[Any, Sequence[Any]]] = None,
    offsets: Optional[Any] = None,
    method: str = "flexible",
    nterms_base: int = 1,
    nterms_band: int = 1,
    reg_base: Optional[float] = None,
    reg_band: Optional[float] = 1e-6,
    regularize_by_trace: bool = True,
    center_data: bool = True,
    fit_mean: bool = True,
    normalization: str = "standard",
    peaks: Optional[int] = None,
    separation: float = 0.0,
    refine: Any = None,
    backend: Optional[str] = None,
    device: Any = None,
) -> Union[np.ndarray, MultibandPeaks]:
    """:class:`LombScargleMultiband` periodograms of many series of
    different lengths in one call, each on the uniform grid ``f0 + k df``
    (cycles per unit time; one grid for all series, or arrays of one `f0`
    and `df` per series).

    `t`, `y`, `bands` (and `dy`) are flat arrays with ``offsets`` (``nseries
    + 1`` indices from 0 to their length; series ``s`` is
    ``t[offsets[s]:offsets[s + 1]]``), or lists with one array per series.
    Each series' bands are its own labels' ``np.unique`` order, as for one
    series. The options are :class:`LombScargleMultiband`'s and ``power``'s
    `method`. Returns an ``(nseries, nf)`` array in the inputs' float dtype
    (computed on the GPU in chunks of series, over every GPU of `device`'s
    list). An empty batch (``offsets=[0]`` or empty lists, e.g. a Dask
    partition with no rows) gives ``(0, nf)`` once the options and grid are
    checked.

    With ``peaks=k`` (1 to 256), only each series' best `k` peaks come
    back, a :class:`MultibandPeaks`: the highest local maxima of its
    periodogram (above the left neighbour and not below the right one),
    highest first, each at least `separation` (cycles per unit time) in
    frequency from the better ones. On the GPU each chunk's periodograms
    are reduced there, so only the peaks cross the bus. ``refine`` refines
    each peak on a finer grid about it, as :func:`lombscargle_batch`'s.
    """
    if isinstance(bands, (list, tuple)):
        if offsets is not None:
            raise ValueError("pass either lists of series or flat arrays with offsets, not both")
        if not isinstance(t, (list, tuple)) or [np.size(b) for b in bands] != [np.size(s) for s in t]:
            raise ValueError("bands must be a list of series shaped as t")
        bands = np.concatenate([np.ravel(b) for b in bands]) if bands else np.empty(0)
    t, y, dy, offsets = _ragged(t, y, dy, offsets)
    bands = np.asarray(bands)
    if bands.shape != t.shape:
        raise ValueError(f"bands must be shaped as t: {bands.shape} and {t.shape}")
    dtype = _float_dtype(t, y, *([] if dy is None else [dy]))
    as_dtype = lambda a: np.ascontiguousarray(a, dtype=dtype)  # noqa: E731
    _, codes = _band_codes(bands)
    opts = _multiband_options(method, nterms_base, nterms_band, reg_base, reg_band, regularize_by_trace,
                              center_data, fit_mean, normalization)
    search = _peak_search(peaks, separation, refine, None)
    grids = _batch_grids(f0, df, nf)
    ctx = context(backend, device)
    if offsets.size == 1:
        # No series (a Dask partition with no rows): the options and the grid
        # checked on a series of two samples, then no rows.
        first = (grids[0][:1], grids[1][:1]) if grids[0].size else (np.ones(1), np.ones(1))
        two = np.array([0.0, 1.0], dtype=dtype)
        _native.lombscargle_multiband_batch(ctx, two, two, None, np.zeros(2, np.uint32),
                                            np.array([0, 2], np.uintp), (*first, grids[2]), opts, search)
        if search is not None:
            k = search[0]
            return MultibandPeaks(np.empty((0, k)), np.empty((0, k)), np.empty((0, k), np.int64))
        return np.empty((0, grids[2]), dtype=dtype)
    got = _native.lombscargle_multiband_batch(
        ctx, as_dtype(t), as_dtype(y), None if dy is None else as_dtype(dy), codes, offsets, grids, opts, search)
    if search is None:
        return got
    index, frequency, power, _ = got
    return MultibandPeaks(frequency, power, index)


# -- Box Least Squares: the transit search -------------------------------

_BLS_OBJECTIVES = ("likelihood", "snr")
_BLS_FIELDS = ("power", "depth", "depth_err", "duration", "transit_time", "depth_snr", "log_likelihood")


class BoxLeastSquaresResults(dict):
    """The results of a box least squares search: a dict whose keys are also
    attributes.

    ``objective`` ('likelihood' or 'snr'), ``period`` (the trial periods),
    and per period the best box's fields: ``power`` (the objective maximised
    over phase and duration: the log likelihood gained by the box, or the
    depth's signal-to-noise ratio), ``depth`` and ``depth_err`` (its 1-sigma
    uncertainty), ``duration``, ``transit_time`` (a mid-transit time, within
    one period of ``min(t)``), ``depth_snr`` and ``log_likelihood``. At a
    period where no box has samples both in and out of transit with a depth
    >= 0, ``power`` is -inf and the other fields NaN. From :func:`bls_batch`
    each field is an ``(nseries, nperiods)`` array (with ``peaks=k``, a
    :class:`BlsPeaks` of the best periods instead).
    """

    _KEYS = ("objective", "period") + _BLS_FIELDS

    def __init__(self, *values: Any, **fields: Any):
        if len(values) > len(self._KEYS):
            raise TypeError(f"at most {len(self._KEYS)} values: {', '.join(self._KEYS)}")
        super().__init__(zip(self._KEYS, values), **fields)

    def __getattr__(self, name: str) -> Any:
        if name in self:
            return self[name]
        raise AttributeError(name)

    def __setattr__(self, name: str, value: Any) -> None:
        self[name] = value

    def __delattr__(self, name: str) -> None:
        try:
            del self[name]
        except KeyError:
            raise AttributeError(name) from None

    def __dir__(self):
        return list(self.keys())

    def __repr__(self) -> str:
        if not self:
            return f"{type(self).__name__}()"
        width = max(len(k) for k in self) + 1
        return "\n".join(f"{k:>{width}}: {v!r}" for k, v in sorted(self.items()))


def _float_dtype(*arrays: Any) -> type:
    """float32 when every (given) array is float32, else float64."""
    given = [a for a in arrays if a is not None]
    return np.float32 if all(np.asarray(a).dtype == np.float32 for a in given) else np.float64


def _bls_options(objective: Optional[str], oversample: Any) -> Tuple[str, int]:
    objective = "likelihood" if objective is None else objective
    if objective not in _BLS_OBJECTIVES:
        raise ValueError(f"objective={objective!r} not recognized: 'likelihood' or 'snr'")
    try:
        n = operator.index(oversample)
    except TypeError:
        try:
            value = float(oversample)
        except (TypeError, ValueError):
            raise ValueError(f"oversample must be an integer >= 1, got {oversample!r}") from None
        if not value.is_integer():
            raise ValueError(f"oversample must be an integer >= 1, got {oversample!r}") from None
        n = int(value)
    if not 1 <= n <= 2**32 - 1:
        raise ValueError(f"oversample must be an integer from 1 to 2**32 - 1, got {n}")
    return objective, n


def _grid_values(name: str, values: Any, absolute: bool) -> np.ndarray:
    """`values` (periods or durations) as a non-empty 1-D float64 array: a
    scalar is one value; with `absolute`, their magnitudes (astropy's
    convention: the sign of a period or duration is ignored)."""
    _reject_units(**{name: values})
    try:
        a = np.atleast_1d(np.asarray(values, dtype=np.float64))
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be a number or a 1-D array of numbers") from None
    if a.ndim != 1 or a.size == 0:
        raise ValueError(f"{name} must be 1-dimensional and non-empty, got shape {a.shape}")
    return np.abs(a) if absolute else a


def _one_value(name: str, value: Any) -> float:
    """A scalar (or one-element) finite parameter of a transit model."""
    _reject_units(**{name: value})
    a = np.asarray(value, dtype=np.float64)
    if a.size != 1:
        raise ValueError(f"{name} must be a single value, got shape {a.shape}")
    v = float(a.reshape(()))
    if not np.isfinite(v):
        raise ValueError(f"{name} = {v} is not finite")
    return v


def _phase_distance(t: np.ndarray, epoch: float, period: float) -> np.ndarray:
    """|t - (the nearest of epoch + k period)|, for every k."""
    half = 0.5 * period
    return np.abs(np.mod(t - epoch + half, period) - half)


class BoxLeastSquares:
    """The box least squares (BLS) transit search: a periodic box-shaped dip
    (a transit or an eclipse) fitted at each trial period, over phases and
    durations.

    Parameters as astropy's ``BoxLeastSquares``: ``t`` (times), ``y``
    (values) and ``dy`` (uncertainties, optional, a scalar or an array;
    weights ``1 / dy**2``, else every weight is 1), broadcast to one 1-D
    shape. float32 ``t``, ``y`` (and ``dy``) give float32 results (computed
    in float64 and rounded once), anything else float64. Plain arrays only:
    astropy ``Quantity``, ``Time`` and ``TimeDelta`` are a TypeError.

    :meth:`power` and :meth:`autopower` run kernpack's search, with the
    results of astropy's default ``method='fast'`` (the same phase bins of
    ``min(duration) / oversample``, boxes of whole bins, the same tie order
    where two boxes are exactly as good). ``method='slow'`` runs astropy's
    own brute-force method (astropy must be installed).
    """

    def __init__(self, t, y, dy=None):
        _reject_units(t=t, y=y, dy=dy)
        if dy is None:
            t, y = np.broadcast_arrays(t, y)
        else:
            t, y, dy = np.broadcast_arrays(t, y, dy)
        if t.ndim != 1:
            raise ValueError("Inputs (t, y, dy) must be 1-dimensional")
        self.t, self.y, self.dy = t, y, dy

    # -- the search (kernpack) -------------------------------------------

    def _periods_durations(self, period, duration):
        periods = _grid_values("period", period, absolute=True)
        durations = _grid_values("duration", duration, absolute=True)
        # Values that are not finite: the native layer names the first.
        finite = np.isfinite(periods).all() and np.isfinite(durations).all()
        if finite and not periods.min() > durations.max():
            raise ValueError(
                f"The maximum transit duration ({durations.max()}) must be shorter than the minimum period "
                f"({periods.min()})"
            )
        return periods, durations

    def power(
        self,
        period,
        duration,
        objective=None,
        method=None,
        oversample=10,
        *,
        backend: Optional[str] = None,
        device: Any = None,
    ) -> BoxLeastSquaresResults:
        """The search at each of `period` (1-D, or a scalar) over `duration`
        (one value or several), both in units of ``t``.

        ``objective``: 'likelihood' (default; the log likelihood the box
        gains, ``0.5 * sum(w in transit) * depth**2``) or 'snr' (``depth /
        depth_err``). ``method``: None, 'fast' or 'kernpack' run kernpack;
        'slow' runs astropy's brute-force method. ``oversample``: phase bins
        per shortest duration (an integer >= 1). ``backend``/``device``
        pick kernpack's backend as elsewhere in kernpack.

        Returns a :class:`BoxLeastSquaresResults` (its ``period``: the
        periods as searched, in the results' dtype). ValueError for a
        period or duration that is not finite and non-zero, a duration not
        shorter than every period, non-finite ``t``/``y``/``dy``, ``dy <=
        0``, or a phase grid past 2**31 bins.
        """
        if method == "slow":
            return self._astropy_slow(period, duration, objective, oversample)
        if method not in (None, "fast", "kernpack"):
            raise ValueError(f"method={method!r} not recognized: None, 'fast', 'kernpack' or 'slow'")
        objective, oversample = _bls_options(objective, oversample)
        periods, durations = self._periods_durations(period, duration)
        dtype = _float_dtype(self.t, self.y, self.dy)
        as_dtype = lambda a: np.ascontiguousarray(a, dtype=dtype)  # noqa: E731
        periods = as_dtype(periods)
        fields = _native.bls(
            context(backend, device),
            as_dtype(self.t),
            as_dtype(self.y),
            None if self.dy is None else as_dtype(self.dy),
            periods,
            as_dtype(durations),
            (objective, oversample),
        )
        return BoxLeastSquaresResults(objective, periods, *fields)

    def _astropy_slow(self, period, duration, objective, oversample):
        try:
            from astropy.timeseries import BoxLeastSquares as AstropyBoxLeastSquares
        except ImportError as e:
            raise ImportError("method='slow' runs astropy's BoxLeastSquares: install astropy") from e
        got = AstropyBoxLeastSquares(self.t, self.y, self.dy).power(
            period, duration, objective=objective, method="slow", oversample=oversample
        )
        return BoxLeastSquaresResults(*(got[k] for k in BoxLeastSquaresResults._KEYS))

    def autoperiod(
        self,
        duration,
        minimum_period=None,
        maximum_period=None,
        minimum_n_transit=3,
        frequency_factor=1.0,
    ) -> np.ndarray:
        """A grid of trial periods, uniform in frequency (astropy's heuristic).

        The frequency step is ``frequency_factor * min(duration) /
        baseline**2`` (``baseline = max(t) - min(t)``); the shortest period
        is ``minimum_period``, else twice the longest duration; the longest
        is ``maximum_period``, else ``baseline / (minimum_n_transit - 1)``
        (so that every signal with at least ``minimum_n_transit`` transits in
        the baseline is within the grid). Bounds given in the wrong order are
        swapped. Returns ``nf = 1 + round((fmax - fmin) / df)`` periods
        ``1 / (fmax - df * k)``, longest last, as float64.
        """
        durations = _grid_values("duration", duration, absolute=True)
        t = np.asarray(self.t, dtype=np.float64)
        if t.size == 0:
            raise ValueError("t is empty: a period grid needs a baseline")
        baseline = float(t.max() - t.min())
        if not (np.isfinite(baseline) and baseline > 0):
            raise ValueError(f"the baseline max(t) - min(t) = {baseline} must be finite and positive")
        df = float(frequency_factor) * float(durations.min()) / baseline**2
        if minimum_period is None:
            minimum_period = 2.0 * float(durations.max())
        else:
            minimum_period = _one_value("minimum_period", minimum_period)
        if maximum_period is None:
            if minimum_n_transit <= 1:
                raise ValueError("minimum_n_transit must be greater than 1")
            maximum_period = baseline / (minimum_n_transit - 1)
        else:
            maximum_period = _one_value("maximum_period", maximum_period)
        if maximum_period < minimum_period:
            minimum_period, maximum_period = maximum_period, minimum_period
        if minimum_period <= 0.0:
            raise ValueError("minimum_period must be positive")
        if not (np.isfinite(df) and df > 0):
            raise ValueError(f"the frequency step {df} must be finite and positive: check frequency_factor")
        f_max, f_min = 1.0 / minimum_period, 1.0 / maximum_period
        nf = 1 + int(np.round((f_max - f_min) / df))
        return 1.0 / (f_max - df * np.arange(nf))

    def autopower(
        self,
        duration,
        objective=None,
        method=None,
        oversample=10,
        minimum_n_transit=3,
        minimum_period=None,
        maximum_period=None,
        frequency_factor=1.0,
        *,
        backend: Optional[str] = None,
        device: Any = None,
    ) -> BoxLeastSquaresResults:
        """:meth:`power` on :meth:`autoperiod`'s grid (the arguments as theirs)."""
        period = self.autoperiod(
            duration,
            minimum_period=minimum_period,
            maximum_period=maximum_period,
            minimum_n_transit=minimum_n_transit,
            frequency_factor=frequency_factor,
        )
        if method == "slow":
            return self.power(period, duration, objective, method, oversample)
        return self.power(period, duration, objective, method, oversample, backend=backend, device=device)

    # -- a given transit model (NumPy) -------------------------------------

    def _model_inputs(self, period, duration, transit_time):
        period = abs(_one_value("period", period))
        duration = abs(_one_value("duration", duration))
        if not period > duration:
            raise ValueError(f"The transit duration ({duration}) must be shorter than the period ({period})")
        return period, duration, _one_value("transit_time", transit_time)

    def _samples64(self):
        t = np.asarray(self.t, dtype=np.float64)
        y = np.asarray(self.y, dtype=np.float64)
        w = np.ones_like(y) if self.dy is None else np.asarray(self.dy, dtype=np.float64) ** -2.0
        return t, y, w

    def transit_mask(self, t, period, duration, transit_time) -> np.ndarray:
        """True at the times `t` that fall within ``duration / 2`` of a mid-
        transit time ``transit_time + k * period``."""
        _reject_units(t=t)
        period, duration, transit_time = self._model_inputs(period, duration, transit_time)
        return _phase_distance(np.asarray(t, dtype=np.float64), transit_time, period) < 0.5 * duration

    def model(self, t_model, period, duration, transit_time) -> np.ndarray:
        """The box model of these parameters fitted to the data, at the times
        `t_model`: the weighted mean of the samples in transit where
        :meth:`transit_mask` is True, the weighted mean of the others
        elsewhere (NaN for a side with no samples)."""
        _reject_units(t_model=t_model)
        period, duration, transit_time = self._model_inputs(period, duration, transit_time)
        t, y, w = self._samples64()
        inside = _phase_distance(t, transit_time, period) < 0.5 * duration
        level_in, _ = _weighted_level(y, w, inside)
        level_out, _ = _weighted_level(y, w, ~inside)
        t_model = np.asarray(t_model, dtype=np.float64)
        model_in = _phase_distance(t_model, transit_time, period) < 0.5 * duration
        return np.where(model_in, level_in, level_out)

    def compute_stats(self, period, duration, transit_time) -> dict:
        """Statistics of one transit model that help to vet a candidate.

        The in-transit samples are those :meth:`transit_mask` selects; a
        depth is the weighted mean of a reference set of samples minus that
        of a box's samples, with uncertainty ``sqrt(1 / sum(w box) + 1 /
        sum(w reference))`` (``(0, inf)`` when the box has no samples or the
        reference none). Returns a dict:

        - ``depth``: (depth, uncertainty) of the model, out of transit as
          the reference;
        - ``depth_even``, ``depth_odd``: the same from the transits of even
          (``transit_time + 2k period``) or odd (``transit_time + (2k + 1)
          period``) epochs alone, against the same out-of-transit level
          (a difference flags an eclipsing binary at twice the period);
        - ``depth_half``: the depth of a box at half the period (same
          ``transit_time`` and duration) against the samples outside it;
        - ``depth_phased``: the depth of a box half a period after the
          transits (a secondary eclipse) against the samples outside both;
        - ``harmonic_amplitude``: the amplitude of the weighted least-squares
          sinusoid of this period (with an offset);
        - ``harmonic_delta_log_likelihood``: the log likelihood of that
          sinusoid minus that of the box model (> 0: the sinusoid fits
          better);
        - ``transit_times``: the mid-transit times from the first epoch with
          samples in transit to the last;
        - ``per_transit_count``: the samples in transit at each of them;
        - ``per_transit_log_likelihood``: at each of them, the log likelihood
          the box model gains over a flat out-of-transit level (they sum to
          the model's ``log_likelihood`` of :meth:`power`).

        With no sample in transit the three per-transit entries are empty.
        """
        period, duration, transit_time = self._model_inputs(period, duration, transit_time)
        t, y, w = self._samples64()
        half = 0.5 * duration
        inside = _phase_distance(t, transit_time, period) < half
        outside = ~inside
        level_out, var_out = _weighted_level(y, w, outside)

        def depth(box, reference=None):
            if reference is None:
                ref_level, ref_var = level_out, var_out
            else:
                ref_level, ref_var = _weighted_level(y, w, reference)
            level, var = _weighted_level(y, w, box)
            if not (np.isfinite(var) and np.isfinite(ref_var)):
                return 0.0, np.inf
            return ref_level - level, np.sqrt(var + ref_var)

        fiducial = depth(inside)
        even = depth(_phase_distance(t, transit_time, 2 * period) < half)
        odd = depth(_phase_distance(t, transit_time + period, 2 * period) < half)
        at_half = _phase_distance(t, transit_time, 0.5 * period) < half
        secondary = _phase_distance(t, transit_time + 0.5 * period, period) < half
        level_in = level_out - fiducial[0]

        # Per transit: epochs of the in-transit samples, from the first to the last.
        epoch = np.round((t[inside] - transit_time) / period).astype(np.int64)
        if epoch.size:
            first = int(epoch.min())
            slot = epoch - first
            n_epochs = int(slot.max()) + 1
            transit_times = transit_time + period * np.arange(first, first + n_epochs)
            counts = np.bincount(slot, minlength=n_epochs)
            y_in, w_in = y[inside], w[inside]
            gain = 0.5 * w_in * ((y_in - level_out) ** 2 - (y_in - level_in) ** 2)
            per_transit_ll = np.bincount(slot, weights=gain, minlength=n_epochs)
        else:
            transit_times = np.empty(0)
            counts = np.zeros(0, dtype=np.int64)
            per_transit_ll = np.empty(0)

        # The box model's log likelihood, and the sinusoid's.
        box_ll = -0.5 * (
            np.sum(w[inside] * (y[inside] - level_in) ** 2) + np.sum(w[outside] * (y[outside] - level_out) ** 2)
        )
        phase = 2 * np.pi * t / period
        root_w = np.sqrt(w)
        design = np.column_stack([np.sin(phase), np.cos(phase), np.ones_like(t)])
        coef = np.linalg.lstsq(design * root_w[:, None], y * root_w, rcond=None)[0]
        sine_ll = -0.5 * np.sum(w * (y - design @ coef) ** 2)

        return dict(
            transit_times=transit_times,
            per_transit_count=counts,
            per_transit_log_likelihood=per_transit_ll,
            depth=fiducial,
            depth_phased=depth(secondary, outside & ~secondary),
            depth_half=depth(at_half, ~at_half),
            depth_odd=odd,
            depth_even=even,
            harmonic_amplitude=float(np.hypot(coef[0], coef[1])),
            harmonic_delta_log_likelihood=float(sine_ll - box_ll),
        )


def _weighted_level(y: np.ndarray, w: np.ndarray, mask: np.ndarray) -> Tuple[float, float]:
    """The weighted mean of ``y[mask]`` and its variance ``1 / sum(w[mask])``
    (NaN and inf for an empty mask)."""
    total = float(np.sum(w[mask]))
    if total == 0.0:
        return np.nan, np.inf
    return float(np.sum(w[mask] * y[mask]) / total), 1.0 / total


class BlsPeaks(NamedTuple):
    """The best periods of each series of a box least squares batch
    (:func:`bls_batch` with ``peaks=k``): ``(nseries, k)`` arrays, row ``s``
    series ``s``'s peaks best (highest power) first; where a series has
    fewer than ``k``, its last columns are padding. ``period`` and the
    fields are :class:`BoxLeastSquaresResults`' at each peak's period, in
    the batch's dtype (float32 when every input array is float32, else
    float64); the search's ``objective`` is the one passed."""

    period: np.ndarray
    """The trial period of the peak, as searched (NaN: no peak)."""
    power: np.ndarray
    """The objective at the peak: the log likelihood the box gains, or its
    depth's signal-to-noise ratio (NaN: no peak)."""
    depth: np.ndarray
    """The box's depth (NaN: no peak)."""
    depth_err: np.ndarray
    """The depth's 1-sigma uncertainty (NaN: no peak)."""
    duration: np.ndarray
    """The box's duration (NaN: no peak)."""
    transit_time: np.ndarray
    """A mid-transit time, within one period of ``min(t)`` (NaN: no peak)."""
    depth_snr: np.ndarray
    """``depth / depth_err`` (NaN: no peak)."""
    log_likelihood: np.ndarray
    """The log likelihood the box gains (NaN: no peak)."""
    index: np.ndarray
    """Index of the peak among the trial periods, int64 (-1: no peak)."""


def _batch_offsets(offsets: Any, n: int) -> np.ndarray:
    o = np.asarray(offsets)
    if o.ndim != 1 or not np.issubdtype(o.dtype, np.integer):
        raise ValueError("offsets must be a 1-D array of integers (nseries + 1 of them)")
    if o.size == 0 or o[0] != 0 or o[-1] != n:
        raise ValueError(f"offsets must start at 0 and end at the sample count {n}")
    empty_at = np.flatnonzero(np.diff(o) <= 0)
    if empty_at.size:
        raise ValueError(f"series {int(empty_at[0])} is empty or offsets decrease there")
    return np.ascontiguousarray(o, dtype=np.uintp)


def _ragged(t: Any, y: Any, dy: Any, offsets: Any) -> Tuple[np.ndarray, np.ndarray, Optional[np.ndarray], np.ndarray]:
    """A batch given as lists of series (`offsets` None) or as flat arrays
    with `offsets`: flat 1-D arrays t, y and dy (or None) of one length, and
    the checked offsets (uintp)."""
    if isinstance(t, (list, tuple)):
        if offsets is not None:
            raise ValueError("pass either lists of series or flat arrays with offsets, not both")
        lengths = [np.size(s) for s in t]
        if not isinstance(y, (list, tuple)) or [np.size(s) for s in y] != lengths:
            raise ValueError("t and y must be lists of series of the same lengths")
        if dy is not None and (not isinstance(dy, (list, tuple)) or [np.size(s) for s in dy] != lengths):
            raise ValueError("dy must be a list of series shaped as t")
        offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.intp)
        flat = lambda series: np.concatenate([np.ravel(s) for s in series]) if series else np.empty(0)  # noqa: E731
        t, y, dy = flat(t), flat(y), None if dy is None else flat(dy)
    if offsets is None:
        raise ValueError("flat arrays need offsets (nseries + 1 indices); or pass lists of series")
    t, y = np.asarray(t), np.asarray(y)
    dy = None if dy is None else np.asarray(dy)
    if t.ndim != 1 or y.shape != t.shape or (dy is not None and dy.shape != t.shape):
        raise ValueError("t, y and dy must be flat 1-D arrays of one length")
    return t, y, dy, _batch_offsets(offsets, t.size)


def bls_batch(
    t: Union[Any, Sequence[Any]],
    y: Union[Any, Sequence[Any]],
    period,
    duration,
    *,
    dy: Optional[Union[Any, Sequence[Any]]] = None,
    offsets: Optional[Any] = None,
    objective: str = "likelihood",
    oversample: int = 10,
    peaks: Optional[int] = None,
    separation: float = 0.0,
    backend: Optional[str] = None,
    device: Any = None,
) -> Union[BoxLeastSquaresResults, BlsPeaks]:
    """The box least squares search of many series of different lengths at
    the same periods and durations, in one call: each series' results equal
    ``BoxLeastSquares(t_s, y_s, dy_s).power(period, duration, objective,
    oversample=oversample)``; or only each series' best periods.

    Parameters
    ----------
    t, y : array or list of arrays
        Either flat 1-D arrays of every series back to back with `offsets`,
        or lists with one array per series (then `offsets` must be None).
    period, duration : float or 1-D array
        Trial periods and durations, in units of ``t``, finite and positive,
        every duration shorter than every period.
    dy : array or list of arrays, optional
        Uncertainties, shaped as `t` (weights ``1 / dy**2``); without them
        every weight is 1.
    offsets : array of int, optional
        ``nseries + 1`` increasing indices from 0 to the sample count; series
        ``s`` is ``t[offsets[s]:offsets[s + 1]]`` (each non-empty).
    objective, oversample
        As in :meth:`BoxLeastSquares.power`.
    peaks : int, optional
        Return only each series' best `peaks` periods (1 to 256), a
        :class:`BlsPeaks`, instead of the results at every period. A peak is
        a local maximum of ``power`` over the periods in the order given:
        above its left neighbour and not below its right one (past the ends
        the power counts as -inf; a period without a box, power -inf, is
        never a peak), so the first of a run of equal powers is one and the
        first highest power of a row is the best peak. Peaks are taken
        highest first (the lower index among equal powers), each only where
        its period lies at least `separation` from every peak's period taken
        before (``src/params/peaks.rs``). They are ranked by the objective in
        float64, what ``power`` holds in a float64 search: in float32 the
        order is that of the float64 powers before their rounding (two
        peaks may then show equal float32 powers, and rank 1 is
        ``np.argmax`` of the float32 row unless rounding made its highest
        powers equal).
    separation : float, optional
        The least distance between the periods of two peaks kept, in units
        of ``t`` (finite, >= 0; default 0: any two peaks). Only with `peaks`
        (a ValueError otherwise).
    backend, device
        kernpack's backend and GPU, as elsewhere in kernpack; on the GPU the
        whole batch is one launch (with `peaks`, one per chunk of series).

    Returns
    -------
    BoxLeastSquaresResults or BlsPeaks
        ``period`` (1-D) and each field as an ``(nseries, nperiods)`` array,
        float32 when every input array is float32, else float64. With
        `peaks`, a :class:`BlsPeaks` of ``(nseries, peaks)`` arrays: the
        rows of those results at each series' best periods, bit for bit,
        the results never all held (computed in chunks of series and reduced
        where they are made: on the GPU only the peaks' boxes leave the
        device); padding past a series' last peak (a series without a box
        at any period has none). An empty batch (``offsets=[0]`` or empty
        lists) gives ``(0, nperiods)`` fields (peaks: ``(0, peaks)``) after
        checking the grid and options. Host (NumPy) arrays only.
    """
    objective, oversample = _bls_options(objective, oversample)
    peaks = _peak_options(peaks, separation, between="periods")
    _reject_units(t=t, y=y, dy=dy, period=period, duration=duration)
    t, y, dy, offsets = _ragged(t, y, dy, offsets)
    dtype = _float_dtype(t, y, dy)
    periods = np.ascontiguousarray(_grid_values("period", period, absolute=False), dtype=dtype)
    durations = np.ascontiguousarray(_grid_values("duration", duration, absolute=False), dtype=dtype)
    as_dtype = lambda a: None if a is None else np.ascontiguousarray(a, dtype=dtype)  # noqa: E731
    empty = offsets.size == 1
    if empty:  # no series: the grid and options checked on one sample (no box, no peaks), then no rows
        t, y, dy, offsets = np.zeros(1, dtype), np.zeros(1, dtype), None, np.array([0, 1], np.uintp)
    got = _native.bls_batch(context(backend, device), as_dtype(t), as_dtype(y), as_dtype(dy), offsets, periods,
                            durations, (objective, oversample), peaks)
    if peaks is None:
        return BoxLeastSquaresResults(objective, periods, *(f[:0] if empty else f for f in got))
    index, fields = got
    if empty:
        index, fields = index[:0], tuple(f[:0] for f in fields)
    period_at = np.where(index >= 0, periods[index], np.nan).astype(dtype)  # -1 reads the last: replaced
    return BlsPeaks(period_at, *fields, index)


# -- Phase folding: PDM and conditional entropy ---------------------------


def _on_host(named: Dict[str, Any], device: Any) -> Tuple[Dict[str, Any], Any]:
    """The arguments of a phase-folding call, each device array among them
    (CuPy, PyTorch, Numba, JAX; in lists of series too) copied to a NumPy
    array by its library: the native layer takes host arrays for these
    searches. With device arrays, `device` defaults to the GPU they live on
    (the first one named, where a library says)."""
    views: List[Tuple[str, Any]] = []

    def host(name: str, a: Any) -> Any:
        if isinstance(a, (list, tuple)):
            return [host(f"{name}[{k}]", s) for k, s in enumerate(a)]
        view = device_array(a)
        if view is None:
            return a
        views.append((name, view))
        return to_host(view)

    arrays = {name: host(name, a) for name, a in named.items()}
    if device is None:  # the first GPU named (copies from several GPUs are as good)
        device = next((v.device for _, v in views if v.device is not None), None)
    return arrays, device


def _integer(name: str, value: Any) -> int:
    """`value` as an int: a TypeError naming `name` for a bool or anything
    that is not an integer."""
    if isinstance(value, (bool, np.bool_)):
        raise TypeError(f"{name} must be an integer, not a bool")
    try:
        return operator.index(value)
    except TypeError:
        raise TypeError(f"{name} must be an integer, not {type(value).__name__}") from None


def _fold_option(name: str, value: Any) -> int:
    """A bin count or overlap: an integer (TypeError otherwise), not
    negative (the native layer checks the ranges, naming them)."""
    n = _integer(name, value)
    if not 0 <= n < 2**63:
        raise ValueError(f"{name} = {n} is out of range: it must be a count >= 0")
    return n


def _pdm_statistic(bins: Any) -> Tuple[str, Tuple[int, ...]]:
    return ("pdm", (_fold_option("bins", bins),))


def _ce_statistic(phase_bins: Any, mag_bins: Any, phase_overlap: Any, mag_overlap: Any) -> Tuple[str, Tuple[int, ...]]:
    names = ("phase_bins", "mag_bins", "phase_overlap", "mag_overlap")
    values = (phase_bins, mag_bins, phase_overlap, mag_overlap)
    return ("ce", tuple(_fold_option(n, v) for n, v in zip(names, values)))


_NO_FREQUENCIES = "pass frequency (an array, cycles per unit of t) or all of f0, df and nf (the uniform grid f0 + k df)"


def _fold_frequencies(frequency: Any, f0: Any, df: Any, nf: Any, dtype: Any):
    """The trial frequencies: an array of `dtype` (1-D; a scalar is one), or
    the uniform grid ``(f0, df, nf)`` (computed in float64 for either dtype)."""
    grid = (f0, df, nf)
    if frequency is not None:
        if any(v is not None for v in grid):
            raise ValueError("pass either frequency or the grid f0, df, nf, not both")
        _reject_units(frequency=frequency)
        f = np.atleast_1d(np.asarray(frequency))
        if f.ndim != 1:
            raise ValueError(f"frequency must be a scalar or a 1-D array, got shape {f.shape}")
        return host_array(f, dtype)
    if any(v is None for v in grid):
        raise ValueError(_NO_FREQUENCIES)
    _reject_units(f0=f0, df=df)
    return float(f0), float(df), _count("nf", nf)


def _fold_one(t, y, dy, frequency, grid, statistic, backend, device) -> np.ndarray:
    """One series' statistic at each frequency (see :func:`pdm`)."""
    arrays, device = _on_host(dict(t=t, y=y, dy=dy, frequency=frequency), device)
    _reject_units(**{k: arrays[k] for k in ("t", "y", "dy")})
    t, y, dy = (None if arrays[k] is None else np.asarray(arrays[k]) for k in ("t", "y", "dy"))
    if dy is not None and dy.ndim == 0:  # one uncertainty for every sample
        dy = np.broadcast_to(dy, t.shape)
    if t.ndim != 1 or y.shape != t.shape or (dy is not None and dy.shape != t.shape):
        shapes = ", ".join(str(a.shape) for a in (t, y, dy) if a is not None)
        raise ValueError(f"t, y and dy must be 1-D arrays of one length, got shapes {shapes}")
    dtype = _float_dtype(t, y, dy)
    freqs = _fold_frequencies(arrays["frequency"], *grid, dtype)
    as_dtype = lambda a: None if a is None else host_array(a, dtype)  # noqa: E731
    return _native.phase_fold(context(backend, device), as_dtype(t), as_dtype(y), as_dtype(dy), None, freqs, statistic)


class FoldPeaks(NamedTuple):
    """The best peaks of each series of a phase-folding batch
    (:func:`pdm_batch`, :func:`conditional_entropy_batch` with ``peaks=k``):
    ``(nseries, k)`` arrays, row ``s`` series ``s``'s peaks best first;
    where a series has fewer than ``k``, its last columns are padding."""

    frequency: np.ndarray
    """Frequency of the peak as searched, float64 (NaN: no peak)."""
    value: np.ndarray
    """The statistic at the peak (theta or H), float64: the batch dtype's
    value widened exactly (NaN: no peak)."""
    index: np.ndarray
    """Index of the peak among the trial frequencies, int64 (-1: no peak)."""


def _peak_options(peaks: Any, separation: Any, between: str = "frequencies") -> Optional[Tuple[int, float]]:
    """``(k, separation)`` checked, or None for the whole statistic;
    `between` names what the separation is a distance between."""
    if peaks is None:
        if not (isinstance(separation, (int, float, np.number)) and separation == 0):
            raise ValueError("separation applies to peaks: pass peaks=k (the peaks per series) with it")
        return None
    k = _integer("peaks", peaks)
    if not 1 <= k <= _native.MAX_PEAKS:
        raise ValueError(f"peaks = {k} is out of range: 1 to {_native.MAX_PEAKS} per series")
    _reject_units(separation=separation)
    try:
        sep = float(separation)
    except (TypeError, ValueError):
        raise TypeError(f"separation must be a number, not {type(separation).__name__}") from None
    if not (np.isfinite(sep) and sep >= 0):
        raise ValueError(f"separation = {sep} must be finite and >= 0 (a distance between {between})")
    return k, sep


def _peak_frequency(freqs: Any, index: np.ndarray) -> np.ndarray:
    """The frequencies (float64) at `index` (-1: NaN) of a call's `freqs`:
    an array's values widened, a grid's ``f0 + k * df`` as the library
    computes them."""
    if isinstance(freqs, tuple):
        f0, df, _ = freqs
        at = f0 + df * index
    else:
        at = freqs.astype(np.float64)[index]  # -1 reads the last: replaced below
    return np.where(index >= 0, at, np.nan)


def _fold_many(t, y, dy, offsets, frequency, grid, statistic, backend, device, peaks=None):
    """Every series' statistic at each frequency (see :func:`pdm_batch`), or
    with `peaks` ``(k, separation)`` only each series' best k peaks."""
    named = dict(t=t, y=y, dy=dy, offsets=offsets, frequency=frequency)
    arrays, device = _on_host(named, device)
    _reject_units(**{k: arrays[k] for k in ("t", "y", "dy")})
    t, y, dy, offsets = _ragged(arrays["t"], arrays["y"], arrays["dy"], arrays["offsets"])
    dtype = _float_dtype(t, y, dy)
    freqs = _fold_frequencies(arrays["frequency"], *grid, dtype)
    ctx = context(backend, device)
    empty = offsets.size == 1
    if empty:  # no series: the frequencies and options checked on one sample (no spread, no peaks), then no rows
        t, y, dy, offsets = np.zeros(1, dtype), np.zeros(1, dtype), None, np.array([0, 1], np.uintp)
    as_dtype = lambda a: None if a is None else host_array(a, dtype)  # noqa: E731
    got = _native.phase_fold(ctx, as_dtype(t), as_dtype(y), as_dtype(dy), offsets, freqs, statistic, peaks)
    if peaks is None:
        return got[:0] if empty else got
    index, value = (a[:0] for a in got) if empty else got
    return FoldPeaks(_peak_frequency(freqs, index), value, index)


def _doc_ends_with(text: str):
    """Appends `text` (shared by several functions) to a function's docstring."""

    def decorate(function):
        function.__doc__ = (function.__doc__ or "").rstrip() + text
        return function

    return decorate


_FOLD_NOTES = """
    Frequencies are in cycles per unit of ``t`` (not angular): either
    `frequency` (finite, >= 0; 0 folds every sample into one phase) or the
    uniform grid ``f0 + k * df``, ``k = 0 .. nf - 1`` (`f0` >= 0, `df` > 0,
    `nf` >= 1), not both.

    Each sample's phase bin is ``floor(frac((t_i - min t) * f) * bins)``
    (the last bin where rounding gives ``bins``), computed in float64 the
    same way on every backend: the GPU gives the CPU backend's bits.

    float32 when `t`, `y` (and `dy`) are all float32, else float64: the
    statistic is computed in float64 from the values given (a `frequency`
    array in that dtype; a grid's frequencies in float64) and rounded once.
    Device arrays (CuPy, PyTorch, Numba, JAX) are accepted but copied to the
    host first (the series are prepared on the host, in float64), and run by
    default on the GPU they live on; the result is a NumPy array either way.
"""


@_doc_ends_with(_FOLD_NOTES)
def pdm(
    t: Any,
    y: Any,
    dy: Any = None,
    *,
    frequency: Any = None,
    f0: Optional[float] = None,
    df: Optional[float] = None,
    nf: Optional[int] = None,
    bins: int = 10,
    backend: Optional[str] = None,
    device: Any = None,
) -> np.ndarray:
    """Phase dispersion minimisation (PDM): the binned variance ratio theta
    of one series at each trial frequency.

    At frequency ``f`` the series is folded into `bins` equal phase bins;
    with weights ``w = 1 / dy**2`` (every weight 1 without `dy`), ``ybar``
    the weighted mean of `y` and ``ybar_b`` the weighted mean of the bin
    of sample ``i``::

        theta(f) = sum_i w_i (y_i - ybar_b(i))**2 / sum_i w_i (y_i - ybar)**2

    (Stellingwerf 1978 with weights, as cuvarbase's binned step model; empty
    bins contribute nothing). theta lies in [0, 1] (to rounding: a bin
    fit that leaves no residual can give -1e-16); lower is better: a
    period that folds the series into a tight curve leaves little variance
    within the bins (cuvarbase reports ``1 - theta``). A series without
    spread (constant `y`, or a single sample) has no theta: NaN at every
    frequency.

    Parameters
    ----------
    t, y : array_like
        Times and values, 1-D, of one length (at least one sample), finite.
    dy : array_like or float, optional
        Uncertainties (a scalar: the same for all), finite and > 0.
    frequency : array_like, optional
        Trial frequencies (cycles per unit of `t`), 1-D; or give `f0`, `df`
        and `nf`.
    f0, df, nf : float, float, int, optional
        The uniform grid ``f0 + k * df``.
    bins : int, optional
        Phase bins, 2 to 4096 (default 10).
    backend, device
        kernpack's backend and GPU, as elsewhere in kernpack.

    Returns
    -------
    numpy.ndarray
        theta at each frequency, 1-D.

    Raises
    ------
    ValueError
        For empty or non-finite inputs, ``dy <= 0``, lengths that differ,
        a negative or non-finite frequency, an empty grid, `bins` out of
        range, or both or neither of `frequency` and the grid.
    TypeError
        For a non-integer `bins` or `nf`, and astropy units or times.

    Notes
    -----
    """
    grid = (f0, df, nf)
    return _fold_one(t, y, dy, frequency, grid, _pdm_statistic(bins), backend, device)


@_doc_ends_with(_FOLD_NOTES)
def conditional_entropy(
    t: Any,
    y: Any,
    *,
    frequency: Any = None,
    f0: Optional[float] = None,
    df: Optional[float] = None,
    nf: Optional[int] = None,
    phase_bins: int = 10,
    mag_bins: int = 5,
    phase_overlap: int = 0,
    mag_overlap: int = 0,
    backend: Optional[str] = None,
    device: Any = None,
) -> np.ndarray:
    """The conditional entropy H of one series' values given its phase, at
    each trial frequency (Graham et al. 2013; cuvarbase's and periodfind's
    semantics).

    The values are scaled to [0, 1] by ``(y - min y) / (max y - min y)``,
    and each falls in magnitude bin ``floor(y' * mag_bins)`` (the last for
    ``y' = 1``). At frequency ``f`` a sample in phase bin ``b`` and
    magnitude bin ``m`` counts in phase bins ``b, b - 1, ..., b -
    phase_overlap`` (cyclically) and in magnitude bins ``m, m - 1, ...,
    max(0, m - mag_overlap)``. With ``N_pm`` the counts of the cells and
    ``N_p = sum_m N_pm``::

        H(f) = sum_pm N_pm ln(N_p / N_pm) / sum_pm N_pm

    (natural logarithm; empty cells contribute nothing). Lower is better: at
    the true period the phase tells the value. cuvarbase's standard CE is
    ``H + ln((mag_overlap + 1) / mag_bins)``. A series without spread
    (constant `y`, or a single sample) has no H: NaN at every frequency.
    There is no `dy`: the statistic does not use uncertainties.

    Parameters
    ----------
    t, y : array_like
        Times and values, 1-D, of one length (at least one sample), finite.
    frequency, f0, df, nf, backend, device
        As in :func:`pdm`.
    phase_bins, mag_bins : int, optional
        Phase and magnitude bins, each >= 1, ``phase_bins * mag_bins <=
        65536`` (default 10 and 5).
    phase_overlap, mag_overlap : int, optional
        Further bins below its own that a sample also counts in, below
        `phase_bins` and `mag_bins` (default 0).

    Returns
    -------
    numpy.ndarray
        H at each frequency, 1-D.

    Raises
    ------
    ValueError
        For empty or non-finite inputs, lengths that differ, a negative or
        non-finite frequency, an empty grid, bins out of range, an overlap
        not below its bins, or both or neither of `frequency` and the grid.
    TypeError
        For non-integer bins, overlaps or `nf`, and astropy units or times.

    Notes
    -----
    """
    statistic = _ce_statistic(phase_bins, mag_bins, phase_overlap, mag_overlap)
    return _fold_one(t, y, None, frequency, (f0, df, nf), statistic, backend, device)


_FOLD_BATCH = """

    Parameters
    ----------
    t, y : array or list of arrays
        Either flat 1-D arrays of every series back to back with `offsets`,
        or lists with one array per series (then `offsets` must be None).
    offsets : array of int, optional
        ``nseries + 1`` increasing indices from 0 to the sample count; series
        ``s`` is ``t[offsets[s]:offsets[s + 1]]`` (each non-empty).
    peaks : int, optional
        Return only each series' best `peaks` periods (1 to 256), a
        :class:`FoldPeaks`, instead of the whole statistic (as
        :func:`kernpack.signal.lombscargle_batch`'s ``best=True``, with ``k``
        peaks). A peak is a local minimum over the frequencies in the order
        given: below its left neighbour and not above its right one (past
        the ends, and at NaN, the value counts as +inf; NaN is never a
        peak), so the first of a run of equal values is one and the first
        lowest value of a row is the best peak (``np.nanargmin``'s index).
        Peaks are taken lowest first (the lower index among equal values),
        each only where its frequency lies at least `separation` from every
        peak taken before.
    separation : float, optional
        The least distance between the frequencies of two peaks kept, in
        cycles per unit of ``t`` (finite, >= 0; default 0: any two peaks).
        About ``1 / (max t - min t)``, a peak's width, keeps a peak's side
        lobes out of the ranks. Only with `peaks` (a ValueError otherwise).

    Returns
    -------
    numpy.ndarray or FoldPeaks
        ``(nseries, nf)``: one row per series, each equal (bitwise) to the
        single-series call on that series. With `peaks`, a
        :class:`FoldPeaks` of ``(nseries, peaks)`` arrays (frequency and
        value float64, index int64), ``NaN``/``-1`` past a series' last
        peak (a series without spread has none): the peaks of those rows,
        the rows never all held (computed in chunks of series and reduced
        where they are made: on the GPU only the peaks leave the device).
        An empty batch (``offsets=[0]`` or empty lists) gives ``(0, nf)``
        (peaks: ``(0, peaks)``) after checking the frequencies and options.
        On the GPU the whole batch is one launch (with `peaks`, one per
        chunk); with a list of GPUs (``device=[0, 1]``) it is split over
        them by series, bitwise the same.
"""


@_doc_ends_with(_FOLD_BATCH)
def pdm_batch(
    t: Union[Any, Sequence[Any]],
    y: Union[Any, Sequence[Any]],
    dy: Optional[Union[Any, Sequence[Any]]] = None,
    *,
    offsets: Any = None,
    frequency: Any = None,
    f0: Optional[float] = None,
    df: Optional[float] = None,
    nf: Optional[int] = None,
    bins: int = 10,
    peaks: Optional[int] = None,
    separation: float = 0.0,
    backend: Optional[str] = None,
    device: Any = None,
) -> Union[np.ndarray, FoldPeaks]:
    """:func:`pdm` of many series of different lengths at the same
    frequencies, in one call (theta in [0, 1], lower is better; NaN for a
    series without spread), or only each series' best periods. `dy`: as `t`
    (a flat array or a list of arrays), or None; the other arguments as in
    :func:`pdm`.
    """
    grid, peaks = (f0, df, nf), _peak_options(peaks, separation)
    return _fold_many(t, y, dy, offsets, frequency, grid, _pdm_statistic(bins), backend, device, peaks)


@_doc_ends_with(_FOLD_BATCH)
def conditional_entropy_batch(
    t: Union[Any, Sequence[Any]],
    y: Union[Any, Sequence[Any]],
    *,
    offsets: Any = None,
    frequency: Any = None,
    f0: Optional[float] = None,
    df: Optional[float] = None,
    nf: Optional[int] = None,
    phase_bins: int = 10,
    mag_bins: int = 5,
    phase_overlap: int = 0,
    mag_overlap: int = 0,
    peaks: Optional[int] = None,
    separation: float = 0.0,
    backend: Optional[str] = None,
    device: Any = None,
) -> Union[np.ndarray, FoldPeaks]:
    """:func:`conditional_entropy` of many series of different lengths at
    the same frequencies, in one call (lower is better; NaN for a series
    without spread), or only each series' best periods; the other arguments
    as in :func:`conditional_entropy`.
    """
    statistic = _ce_statistic(phase_bins, mag_bins, phase_overlap, mag_overlap)
    peaks = _peak_options(peaks, separation)
    return _fold_many(t, y, None, offsets, frequency, (f0, df, nf), statistic, backend, device, peaks)


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

