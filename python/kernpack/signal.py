"""Lomb-Scargle periodograms: ``scipy.signal.lombscargle``'s signature and
semantics, a uniform-grid variant and ragged batches of many series."""
from __future__ import annotations

import warnings
import functools
from typing import Any, Callable, NamedTuple, Optional, Sequence, TypeVar, Union

import numpy as np

from . import _arrow, _native
from ._arrays import (
    as_result,
    cupy_device,
    current_stream,
    empty,
    host_array,
    host_float_dtype,
    pointer,
    split,
    to_host,
    upload,
)
from ._context import context, device_float_context

__all__ = ["lombscargle", "lombscargle_uniform", "lombscargle_batch", "BestPeaks", "TopPeaks"]

_MODES = ("power", "normalize", "amplitude")


def _mode(normalize: Union[bool, str]) -> str:
    if isinstance(normalize, (bool, np.bool_)):
        return "normalize" if normalize else "power"
    if normalize not in _MODES:
        raise ValueError("Normalize must be: False (or 'power'), True (or 'normalize'), or 'amplitude'.")
    return normalize


def _result_dtype(dtype: np.dtype, mode: str) -> np.dtype:
    if mode == "amplitude":
        return np.dtype(np.complex64 if dtype == np.float32 else np.complex128)
    return dtype


class _Unset:
    """The default of an option whose mere passing is deprecated."""

    def __repr__(self) -> str:
        return "<unset>"


_UNSET: Any = _Unset()
# SciPy 1.17 still takes every option by position, with a warning.
_POSITIONAL_OPTIONS = ("precenter", "normalize", "weights", "floating_mean")

_F = TypeVar("_F", bound=Callable[..., Any])


def _times_named_x(function: _F) -> _F:
    """The core names a series' times `t`; SciPy's signature calls them `x`,
    so its errors about them name `x`."""

    @functools.wraps(function)
    def named(*args: Any, **kwargs: Any) -> Any:
        try:
            return function(*args, **kwargs)
        except ValueError as e:
            if str(e).startswith("t["):
                raise ValueError("x" + str(e)[1:]) from None
            raise

    return named  # type: ignore[return-value]


@_times_named_x
def lombscargle(
    x: Any,
    y: Any,
    freqs: Any,
    *args: Any,
    precenter: bool = _UNSET,
    normalize: Union[bool, str] = _UNSET,
    weights: Optional[Any] = _UNSET,
    floating_mean: bool = _UNSET,
    backend: Optional[str] = None,
    device: Optional[int] = None,
) -> Any:
    """Lomb-Scargle periodogram, as ``scipy.signal.lombscargle`` (SciPy >= 1.15,
    with the deprecations of SciPy 1.17).

    Parameters
    ----------
    x : array_like
        Sample times, 1-D.
    y : array_like
        Measurement values, 1-D, as long as `x`.
    freqs : array_like
        Angular frequencies (rad per unit of `x`), 1-D, non-empty.
    precenter : bool, optional
        Subtract the mean of `y` first. Deprecated, as in SciPy 1.17: passing
        it at all (True or False) warns (``DeprecationWarning``); pass
        ``y - y.mean()`` instead, or use `floating_mean`.
    normalize : bool or {'power', 'normalize', 'amplitude'}, optional
        ``False``/'power' (the default): power in units of ``A**2 N / 4``;
        ``True``/'normalize': power relative to the residuals of a constant
        model, in [0, 1]; 'amplitude': the complex amplitude of the best-fit
        sinusoid. Passing options by position (`precenter` and `normalize`
        in SciPy 1.15's signature, then `weights` and `floating_mean`) still
        works but warns, as in SciPy 1.17.
    weights : array_like, optional
        Non-negative weight per sample (default all 1); must sum to > 0.
    floating_mean : bool, optional
        Fit a constant offset at every frequency (the generalised periodogram).
    backend : {'auto', 'gpu', 'cpu'}, optional
        Where host arrays are computed (default: :func:`kernpack.get_backend`).
    device : int, optional
        The GPU (its ordinal, see :func:`kernpack.devices`) that host arrays
        run on with the 'gpu' or 'auto' backend (default:
        :func:`kernpack.get_device`, initially 0). Device arrays run on the
        GPU they live on; naming another one is a ValueError.

    Returns
    -------
    pgram : ndarray
        Array-likes in: a float64 NumPy array (complex128 for 'amplitude'), with
        SciPy's shape (0-d for a single frequency). Device arrays in (CuPy,
        PyTorch, Numba, JAX): an array of the same library and dtype (float32
        or float64; complex for 'amplitude'), computed on the caller's current
        stream with no synchronisation.

    Raises
    ------
    ValueError
        For SciPy's invalid inputs, and for values kernpack refuses rather
        than returning NaN: non-finite data, and 'normalize' of a series with
        no variance.
    TypeError
        For device arrays of another dtype or not contiguous, or a mix of host
        and device arrays.

    Notes
    -----
    On the GPU, times are shifted by their mean before the phases are
    computed, which keeps full accuracy for large absolute times (e.g. MJDs),
    where SciPy's unshifted phases lose about 1e-10 to 1e-8 relative; the CPU
    backend computes SciPy's formula as written (unshifted). Negative
    frequencies are folded as SciPy's formula does: the same power as at
    ``|f|``, the conjugate amplitude.
    """
    precenter, normalize, weights, floating_mean = _scipy_options(args, precenter, normalize, weights, floating_mean)
    mode = _mode(normalize)
    on_device = split([("x", x), ("y", y), ("freqs", freqs), ("weights", weights)])
    if on_device is not None:
        return _device_call(on_device, mode, bool(precenter), bool(floating_mean), backend, device, grid=None)

    x, y, w, freqs = (None if a is None else host_array(a, np.float64) for a in (x, y, weights, freqs))
    _check_series(x, y, w, freqs)
    if w is not None and not (np.all(w >= 0) and np.sum(w) > 0):
        raise ValueError("Parameter weights must have only non-negative entries which sum to a positive value!")
    negative = freqs < 0
    freqs = np.abs(freqs) if negative.any() else freqs
    out = _host_call(np.dtype(np.float64), x, y, w, freqs, mode, precenter, floating_mean, backend, device)
    if mode == "amplitude" and negative.any():
        out[negative] = np.conj(out[negative])
    return out.reshape(()) if out.size == 1 else out  # SciPy squeezes one frequency to 0-d


def _scipy_options(args: tuple, *keywords: Any) -> tuple:
    """`precenter`, `normalize`, `weights` and `floating_mean` of a
    :func:`lombscargle` call, with SciPy 1.17's warnings: for options passed
    by position, and for `precenter` passed at all."""
    if len(args) > len(_POSITIONAL_OPTIONS):
        raise TypeError(
            f"lombscargle() takes from 3 to {3 + len(_POSITIONAL_OPTIONS)} positional arguments "
            f"but {3 + len(args)} were given"
        )
    if args:
        names = _POSITIONAL_OPTIONS[: len(args)]
        for name, keyword in zip(names, keywords):
            if keyword is not _UNSET:
                raise TypeError(f"lombscargle() got multiple values for argument '{name}'")
        warnings.warn(
            f"You are passing as positional arguments: {', '.join(names)}. Please change your "
            "invocation to use keyword arguments; SciPy 1.19 makes passing them by position an error.",
            DeprecationWarning,
            stacklevel=4,
        )
        keywords = tuple(args) + keywords[len(args) :]
    if keywords[0] is not _UNSET:  # precenter
        warnings.warn(
            "The parameter 'precenter' is deprecated (as in SciPy 1.17, which removes it in 1.19). "
            "Please leave 'precenter' unspecified: passing True is exactly passing y - y.mean() as y; "
            "consider floating_mean=True instead.",
            DeprecationWarning,
            stacklevel=4,
        )
    return tuple(d if v is _UNSET else v for v, d in zip(keywords, (False, False, None, False)))


@_times_named_x
def lombscargle_uniform(
    x: Any,
    y: Any,
    f0: float,
    df: float,
    nf: int,
    precenter: bool = False,
    normalize: Union[bool, str] = False,
    *,
    weights: Optional[Any] = None,
    floating_mean: bool = False,
    backend: Optional[str] = None,
    device: Optional[int] = None,
) -> Any:
    """Lomb-Scargle periodogram on the uniform grid of angular frequencies
    ``f0 + k * df``, ``k = 0 .. nf - 1``.

    The same result as :func:`lombscargle` on ``f0 + df * np.arange(nf)``, by a
    recurrence that needs no sine or cosine per (sample, frequency) pair (about
    2-4x faster on the GPU).

    Parameters
    ----------
    x, y, weights, precenter, normalize, floating_mean, backend, device
        As in :func:`lombscargle`. Host arrays of float32 are computed in
        float32, anything else in float64.
    f0 : float
        First angular frequency, >= 0.
    df : float
        Grid step, > 0 (any value when ``nf == 1``).
    nf : int
        Number of frequencies, > 0.

    Returns
    -------
    pgram : ndarray
        ``nf`` values (complex for 'amplitude') of the input's float dtype, as
        a NumPy array or the device arrays' library.
    """
    mode = _mode(normalize)
    nf = _count("nf", nf)
    grid = (float(f0), float(df), nf)
    on_device = split([("x", x), ("y", y), ("weights", weights)])
    if on_device is not None:
        return _device_call(on_device, mode, bool(precenter), bool(floating_mean), backend, device, grid=grid)
    dtype = host_float_dtype(x, y)
    x, y, w = (None if a is None else host_array(a, dtype) for a in (x, y, weights))
    _check_series(x, y, w)
    return _host_call(dtype, x, y, w, grid, mode, precenter, floating_mean, backend, device)


def _count(name: str, n: Any) -> int:
    if isinstance(n, (bool, np.bool_)) or not isinstance(n, (int, np.integer)):
        raise TypeError(f"{name} must be an integer, not {type(n).__name__}")
    if n <= 0:
        raise ValueError(f"{name} must be > 0, got {n}")
    return int(n)


def _check_series(x: Any, y: Any, w: Optional[Any], freqs: Optional[Any] = None) -> None:
    """SciPy's checks of one series (host or device arrays) and of its
    frequency array, with SciPy's messages."""
    if not (x.ndim == 1 and x.size > 0 and x.shape == y.shape and (w is None or w.shape == x.shape)):
        raise ValueError("Parameters x, y, weights must be 1-D arrays of equal non-zero length!")
    if freqs is not None and not (freqs.ndim == 1 and freqs.size > 0):
        raise ValueError("Parameter freqs must be a 1-D array of non-zero length!")


def _host_call(dtype, x, y, w, freqs, mode, precenter, floating_mean, backend, device):
    """Host arrays of `dtype`; `freqs`: an array, or the uniform grid (f0, df, nf)."""
    out = _native.lombscargle(context(backend, device), (x, y, w), freqs, (mode, bool(floating_mean), bool(precenter)))
    return out.view(_result_dtype(dtype, mode))  # amplitude: re and im interleaved


def _device_call(arrays, mode, precenter, floating_mean, backend, device, grid):
    x, y = arrays["x"], arrays["y"]
    w, f = arrays.get("weights"), arrays.get("freqs")
    ctx = device_float_context({"x": x, "y": y, "weights": w, "freqs": f}, backend, device)
    _check_series(x, y, w, f)
    nf = f.size if grid is None else grid[2]
    out = empty(x, (nf,), _result_dtype(x.dtype, mode))
    samples = (x.ptr, y.ptr, None if w is None else w.ptr)
    freqs = (f.ptr, f.size) if grid is None else grid
    _native.lombscargle_device(
        ctx, x.dtype.name, samples, x.size, freqs, (mode, floating_mean, precenter), pointer(out), current_stream(x)
    )
    return as_result(x, out)


class BestPeaks(NamedTuple):
    """The highest peak of each series of a batch."""

    frequency: Any
    """Angular frequency of the peak, per series (float64)."""
    power: Any
    """Periodogram value at the peak (the modulus for 'amplitude'), per series (float64)."""
    index: Any
    """Index of the peak in the series' grid (int64; -1 when all values were NaN)."""


class TopPeaks(NamedTuple):
    """The best ``k`` peaks of each series of a batch
    (:func:`lombscargle_batch` with ``peaks=k``): the fields of
    :class:`BestPeaks`, each an ``(nseries, k)`` array, row ``s`` series
    ``s``'s peaks highest first; where a series has fewer than ``k``, its
    last columns are padding."""

    frequency: Any
    """Angular frequency of the peak, ``f0 + index * df`` of the series'
    grid (float64; NaN: no peak)."""
    power: Any
    """Periodogram value at the peak (float64: the batch dtype's value
    widened exactly; NaN: no peak)."""
    index: Any
    """Index of the peak in the series' grid (int64; -1: no peak)."""


def _peak_options(peaks: Any, separation: Any, best: bool, mode: str):
    """``(k, separation)`` checked (None without peaks), and `peaks` with
    `best` or the amplitude mode refused."""
    from .timeseries import _peak_options as checked  # that module imports this one

    got = checked(peaks, separation)
    if got is not None and best:
        raise ValueError("best=True and peaks=k are exclusive: best=True keeps each series' highest peak, "
                         "peaks=k its k highest (peaks=1 is that peak as (nseries, 1) arrays)")
    if got is not None and mode == "amplitude":
        raise ValueError("peaks=k ranks real periodograms: pass normalize='power' or 'normalize' "
                         "('amplitude' is complex; best=True gives the peak of its modulus)")
    return got


def lombscargle_batch(
    x: Union[Any, Sequence[Any]],
    y: Union[Any, Sequence[Any]],
    f0: Union[float, Any],
    df: Union[float, Any],
    nf: int,
    *,
    offsets: Optional[Any] = None,
    weights: Optional[Union[Any, Sequence[Any]]] = None,
    normalize: Union[bool, str] = False,
    floating_mean: bool = False,
    precenter: bool = False,
    best: bool = False,
    peaks: Optional[int] = None,
    separation: float = 0.0,
    backend: Optional[str] = None,
    device: Optional[int] = None,
) -> Any:
    """Periodograms of many series of different lengths in one call, or
    only their best peaks.

    Parameters
    ----------
    x, y : array, list of arrays, or Arrow list column
        Either one flat array of all series back to back with `offsets`, or a
        list with one array per series (then `offsets` must be None), or a
        ``pyarrow`` ``ListArray``, ``LargeListArray`` or ``ChunkedArray`` of
        lists with one row per series, or a pandas Series of such lists
        (``pd.ArrowDtype``; a nested-pandas field,
        ``frame["lc"].nest.to_lists()["t"]``) (then `offsets` must be None;
        see Arrow columns below).
    f0, df : float or array of float
        Uniform angular-frequency grid ``f0 + k * df``: one for all series, or
        one value per series.
    nf : int
        Frequencies per series.
    offsets : array of int, optional
        ``nseries + 1`` non-decreasing indices into the flat arrays, from 0 to
        their length; series ``s`` is ``x[offsets[s]:offsets[s + 1]]`` (each
        non-empty). Host data, also for device `x` and `y` (they are checked
        before anything runs, then copied to the device).
    weights : array, list of arrays or Arrow list column, optional
        Shaped as `x`.
    normalize, floating_mean, precenter
        As in :func:`lombscargle`.
    best : bool, optional
        Return only each series' highest peak (:class:`BestPeaks`) instead of
        the whole periodograms.
    peaks : int, optional
        Return only each series' best `peaks` peaks (1 to 256), a
        :class:`TopPeaks`, instead of the whole periodograms (not with
        `best`; not with 'amplitude', whose values are complex). A peak is
        a local maximum over the grid: above its left neighbour and not
        below its right one (past the grid's ends, and at NaN, the value
        counts as -inf; NaN and -inf are never peaks), so the first of a
        run of equal values is one and the first highest value of a row is
        the best peak (``best=True``'s index). Peaks are taken highest
        first (the lower index among equal values), each only where its
        frequency lies at least `separation` from every peak taken before.
    separation : float, optional
        The least distance between the frequencies of two peaks kept, in
        the grid's unit (angular frequency, as `f0` and `df`; finite, >= 0;
        default 0: any two peaks). About ``2 pi / (max x - min x)``, a
        peak's width, keeps a peak's side lobes out of the ranks. Only with
        `peaks` (a ValueError otherwise).
    backend : {'auto', 'gpu', 'cpu'}, optional
        As in :func:`lombscargle`.
    device : int or list of int, optional
        As in :func:`lombscargle`; a list of GPUs (e.g. ``[0, 1]``) splits
        the batch of host arrays over all of them, balanced by samples x
        frequencies, with results bitwise equal to one GPU.

    Returns
    -------
    pgrams : ndarray, BestPeaks or TopPeaks
        ``(nseries, nf)`` values (complex for 'amplitude') in the inputs' float
        dtype and library, or with ``best=True`` a :class:`BestPeaks` of arrays
        of length nseries, or with ``peaks=k`` a :class:`TopPeaks` of
        ``(nseries, k)`` arrays (frequency and power float64, index int64;
        NaN / -1 past a series' last peak). With ``best=True`` or `peaks`
        the periodograms are never all held: they are computed in chunks of
        series and reduced where they are made (on the GPU only the peaks
        cross the bus), so memory stays bounded for any batch size; on
        device arrays the peaks are returned as device arrays of the
        inputs' library, on their GPU (``best=True`` finds them on the
        device arrays themselves; `peaks` reads the samples back to the
        host first, a copy of the samples only, and runs the batch on the
        arrays' GPU). Arrow inputs: see below. An empty batch (no series:
        ``offsets=[0]``, empty lists or Arrow columns of no rows, e.g. a
        Dask partition with no rows) returns empty results of these shapes
        and dtypes (``(0, nf)``; peaks of length 0, or ``(0, k)``) without
        calling the kernels.

    Arrow columns
    -------------
    `x`, `y` and `weights` given as Arrow list columns (``pyarrow``, imported
    only when one is passed) are read with no copy of their values: the NumPy
    arrays handed to the native layer are views of each column's values
    buffer, from its first row's first value (sliced arrays, and lists over
    sliced values, included). The offsets are a view of the offsets buffer
    for an unsliced ``LargeListArray`` (int64 from 0); otherwise
    (``ListArray``'s int32 offsets, which the native layer takes as 64-bit,
    or a slice not starting at value 0) a new int64 array of ``nseries + 1``
    entries: a copy of the offsets only. Values of another numeric type than
    float32/float64 are converted (a copy), as NumPy inputs are.

    * Every column must have the same rows, each of the same length in every
      column, or a ValueError names the column and the first differing row.
    * Null rows, and null values inside rows, are a ValueError (drop or fill
      them first); an empty row is one as with NumPy inputs.
    * A ``ChunkedArray`` is not combined (that would copy it): the batch runs
      as one call per piece of rows that lies within one chunk of every
      column (a single piece, and one call, for one chunk or plain arrays),
      and the pieces' results are concatenated. Per-series `f0`/`df` are
      split with the rows.
    * The result is aligned with the input rows: a
      ``pyarrow.FixedSizeListArray`` (``fixed_size_list<float, nf>``, one row's
      periodogram per row, a view of the NumPy result) in the input's float
      type; 'amplitude' (Arrow has no complex type) gives each row ``nf``
      ``(re, im)`` pairs, ``fixed_size_list<fixed_size_list<float, 2>, nf>``.
      With ``best=True``: a :class:`BestPeaks` of ``pyarrow`` arrays
      (float64, float64, int64); with `peaks`, a :class:`TopPeaks` of
      ``fixed_size_list<double, k>`` (``int64`` for the index) arrays, one
      row's peaks per row. A ``ChunkedArray`` input gives a
      ``ChunkedArray`` result with one chunk per piece. A column for pandas:
      ``pd.Series(result, dtype=pd.ArrowDtype(result.type))``.
    * pandas Series of Arrow lists are read as their Arrow data (no copy) and
      give pandas results on the input's index: the periodograms as a Series
      of ``pd.ArrowDtype`` lists (no copy), the peaks as a :class:`BestPeaks`
      of NumPy-backed Series (:class:`TopPeaks`: Series of
      ``pd.ArrowDtype`` lists of k). For a whole survey table in nested-pandas or
      LSDB, see :func:`kernpack.lsdb.periods`.
    """
    mode = _mode(normalize)
    nf = _count("nf", nf)
    peaks = _peak_options(peaks, separation, best, mode)
    (x, index), (y, y_index), (weights, w_index) = (_arrow.from_pandas(a) for a in (x, y, weights))
    if _arrow.is_lists(x) or _arrow.is_lists(y) or _arrow.is_lists(weights):
        if offsets is not None:
            raise ValueError("Arrow list columns carry their own offsets: pass offsets=None")
        opts = dict(normalize=normalize, floating_mean=floating_mean, precenter=precenter, best=best)
        if peaks is not None:
            opts.update(peaks=peaks[0], separation=peaks[1])
        got = _arrow_batch(x, y, weights, f0, df, nf, opts, backend, device)
        index = next((i for i in (index, y_index, w_index) if i is not None), None)
        if index is None:
            return got
        if best or peaks is not None:
            return type(got)(*(_arrow.to_pandas(column, index) for column in got))
        return _arrow.to_pandas(got, index)
    if isinstance(x, (list, tuple)):
        if offsets is not None:
            raise ValueError("pass either lists of series or flat arrays with offsets, not both")
        lengths = [len(s) for s in x]
        if not isinstance(y, (list, tuple)) or [len(s) for s in y] != lengths:
            raise ValueError("x and y must be lists of series of the same lengths")
        if weights is not None and (
            not isinstance(weights, (list, tuple)) or [len(s) for s in weights] != lengths
        ):
            raise ValueError("weights must be a list of series shaped as x")
        offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.intp)
        x, y, weights = (None if s is None else _concat(s) for s in (x, y, weights))
    if offsets is None:
        raise ValueError("flat arrays need offsets (nseries + 1 indices); or pass lists of series")
    offsets = _host_offsets(offsets)
    nseries = offsets.size - 1
    if nseries < 0:
        raise ValueError("offsets must hold nseries + 1 entries (at least [0]: an empty batch)")
    f0s, dfs = _grids(f0, df, nseries)

    on_device = split([("x", x), ("y", y), ("weights", weights)])
    if on_device is not None:
        return _device_batch(on_device, offsets, f0s, dfs, nf, mode, floating_mean, precenter, best, peaks, backend,
                             device)

    dtype = host_float_dtype(x, y)
    xs, ys, ws = (None if a is None else host_array(a, dtype) for a in (x, y, weights))
    _check_flat(xs, ys, ws, offsets)
    if nseries == 0:  # an empty batch (e.g. a Dask partition with no rows): the native layer wants a series
        context(backend, device)  # the same errors for a bad backend or device as a non-empty batch
        return _empty_batch(np.empty, _result_dtype(dtype, mode), nf, best, peaks)
    got = _native.lombscargle_batch(
        context(backend, device),
        (xs, ys, ws),
        offsets.view(np.uintp),  # just checked non-negative: as uintp they are the same values
        (f0s, dfs, nf),
        (mode, bool(floating_mean), bool(precenter)),
        best,
        peaks,
    )
    if peaks is not None:
        return _top_peaks(f0s, dfs, *got)
    if not best:
        return got.view(_result_dtype(dtype, mode))  # amplitude: re and im interleaved
    index, power = got
    return BestPeaks(_peak_frequency(f0s, dfs, index), power, index)


def _top_peaks(f0s: np.ndarray, dfs: np.ndarray, index: np.ndarray, power: np.ndarray) -> TopPeaks:
    """The native call's ``(nseries, k)`` peaks with their frequencies (one
    grid or one per series)."""
    return TopPeaks(_peak_frequency(f0s[:, None], dfs[:, None], index), power, index)


def _empty_batch(make: Callable[[tuple, Any], Any], dtype: np.dtype, nf: int, best: bool, peaks=None) -> Any:
    """The results of a batch of no series, of `dtype` (the periodograms'),
    as arrays that ``make(shape, dtype)`` allocates."""
    if peaks is not None:
        shape = (0, peaks[0])
        return TopPeaks(make(shape, np.float64), make(shape, np.float64), make(shape, np.int64))
    if not best:
        return make((0, nf), dtype)
    return BestPeaks(make((0,), np.float64), make((0,), np.float64), make((0,), np.int64))


def _arrow_batch(x, y, weights, f0, df, nf, opts, backend, device):
    """:func:`lombscargle_batch` of Arrow list columns: one call per piece of
    rows that lies within one chunk of every column, on zero-copy views of
    the values."""
    pieces = _arrow.pieces([("x", x), ("y", y), ("weights", weights)])
    if not pieces:  # a ChunkedArray of no chunks: an empty batch
        pieces = [(0, 0, [np.empty(0), np.empty(0), None], np.zeros(1, np.intp))]
    f0s, dfs = _grids(f0, df, sum(n for _, n, _, _ in pieces))
    results = []
    for start, n, (xs, ys, ws), offsets in pieces:
        grid = (f0s, dfs) if f0s.size == 1 else (f0s[start : start + n], dfs[start : start + n])
        results.append(lombscargle_batch(xs, ys, *grid, nf, offsets=offsets, weights=ws, backend=backend,
                                         device=device, **opts))
    if opts["best"]:
        return BestPeaks(*(_arrow.joined(field, (x, y, weights)) for field in zip(*results)))
    if "peaks" in opts:  # (nseries, k) arrays: one fixed-size list of k per row
        return TopPeaks(*(_arrow.joined([_arrow.periodograms(a) for a in field], (x, y, weights))
                          for field in zip(*results)))
    return _arrow.joined([_arrow.periodograms(r) for r in results], (x, y, weights))


def _concat(series: Sequence[Any]) -> Any:
    first = next(iter(series), None)
    module = type(first).__module__.split(".", 1)[0]
    if module == "cupy":
        import cupy

        with cupy_device(first.device.id):  # on the series' GPU, not CuPy's current one
            return cupy.concatenate(list(series))
    if module == "torch":
        import torch

        return torch.cat(list(series))
    return np.concatenate([np.asarray(s) for s in series]) if series else np.empty(0)


def _host_offsets(offsets: Any) -> np.ndarray:
    module = type(offsets).__module__.split(".", 1)[0]
    if module == "cupy":
        offsets = offsets.get()  # documented: offsets are validated on the host
    elif module == "torch":
        offsets = offsets.cpu().numpy()
    o = np.asarray(offsets)
    if o.ndim != 1 or not (np.issubdtype(o.dtype, np.integer)):
        raise TypeError("offsets must be a 1-D array of integers")
    return host_array(o, np.intp)


def _check_flat(x: Any, y: Any, w: Optional[Any], offsets: np.ndarray) -> None:
    """A batch's flat samples (host or device arrays) and its offsets into them."""
    if x.ndim != 1 or y.shape != x.shape or (w is not None and w.shape != x.shape):
        raise ValueError("x, y and weights must be flat 1-D arrays of one length")
    n = x.size
    if offsets[0] != 0 or offsets[-1] != n:
        raise ValueError(f"offsets must start at 0 and end at the sample count {n}")
    empty_at = np.flatnonzero(np.diff(offsets) <= 0)
    if empty_at.size:
        raise ValueError(f"series {int(empty_at[0])} is empty or offsets decrease there")


def _grids(f0: Any, df: Any, nseries: int):
    f0s = np.atleast_1d(host_array(f0, np.float64))
    dfs = np.atleast_1d(host_array(df, np.float64))
    if f0s.ndim != 1 or dfs.ndim != 1 or f0s.size != dfs.size or f0s.size not in (1, nseries):
        raise ValueError(
            f"f0 and df must both be scalars or both hold one value per series ({nseries}); "
            f"got {f0s.size} and {dfs.size}"
        )
    return f0s, dfs


def _peak_frequency(f0, df, index):
    """The frequency of each series' peak, in the arrays' library (NaN where
    the index is -1: every value was NaN)."""
    frequency = f0 + df * index
    frequency[index < 0] = float("nan")
    return frequency


def _device_batch(arrays, offsets, f0s, dfs, nf, mode, floating_mean, precenter, best, peaks, backend, device):
    x, y, w = arrays["x"], arrays["y"], arrays.get("weights")
    ctx = device_float_context({"x": x, "y": y, "weights": w}, backend, device)
    _check_flat(x, y, w, offsets)
    nseries = offsets.size - 1
    if nseries == 0:  # an empty batch: empty results in the inputs' library, nothing runs
        make = lambda shape, dtype: as_result(x, empty(x, shape, dtype))  # noqa: E731
        return _empty_batch(make, _result_dtype(x.dtype, mode), nf, best, peaks)
    if peaks is not None:
        # No call on device buffers keeps k peaks: the samples come back to
        # the host and run as host arrays on their GPU (the context above),
        # whose periodograms stay there; the peaks go back to that GPU.
        xs, ys, ws = (None if a is None else to_host(a) for a in (x, y, w))
        opts = (mode, bool(floating_mean), bool(precenter))
        got = _native.lombscargle_batch(ctx, (xs, ys, ws), offsets.view(np.uintp), (f0s, dfs, nf), opts, False, peaks)
        return TopPeaks(*(_to_device(x, a) for a in _top_peaks(f0s, dfs, *got)))
    stream = current_stream(x)
    d_offsets = upload(x, offsets.astype(np.int64))
    d_f0, d_df = upload(x, f0s), upload(x, dfs)
    samples = (x.ptr, y.ptr, None if w is None else w.ptr)
    grids = (pointer(d_f0), pointer(d_df), f0s.size, nf)
    opts = (mode, bool(floating_mean), bool(precenter))
    common = (ctx, x.dtype.name, samples, pointer(d_offsets), nseries, grids, opts)
    if not best:
        out = empty(x, (nseries, nf), _result_dtype(x.dtype, mode))
        _native.lombscargle_batch_device(*common, pointer(out), stream)
        return as_result(x, out)
    # The peaks on the device, in chunks of series: no periodogram leaves it,
    # and only a chunk's periodograms exist at a time.
    index = empty(x, (nseries,), np.int64)
    power = empty(x, (nseries,), np.float64)
    _native.lombscargle_batch_device(*common, (pointer(index), pointer(power)), stream)
    if x.lib == "numba":  # CuPy computes the frequencies on Numba's arrays (zero copy), handed back as Numba's
        import cupy
        from numba import cuda

        return BestPeaks(cuda.as_cuda_array(_peak_frequency(d_f0, d_df, cupy.asarray(index))), power, index)
    with cupy_device(x.device if x.lib == "cupy" else None):  # CuPy works on its current device: the arrays' one
        frequency = _peak_frequency(d_f0, d_df, index)
    return BestPeaks(as_result(x, frequency), as_result(x, power), as_result(x, index))


def _to_device(like: Any, host: np.ndarray) -> Any:
    """`host` copied to the GPU of the device array `like`, as an array of
    its library."""
    if like.lib == "numba":
        from numba import cuda

        return cuda.to_device(host)
    return as_result(like, upload(like, host))
