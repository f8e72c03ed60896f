"""kernpack on Dask: periodograms of survey tables, the box, Gaussian and rank
filters on large arrays and ensembles split by members, one kernpack call per partition or
block, on each worker's GPU (or its CPU).

Needs the optional extra ``pip install 'kernpack[dask]'`` (dask[dataframe],
distributed, pyarrow); ``import kernpack`` alone never imports Dask.

Functions
---------
:func:`lombscargle_peaks`
    Per-series best peaks (optionally the top-k peaks) of a Dask DataFrame or
    Parquet dataset of ``(id, t, y[, w])`` rows, as a Dask DataFrame indexed
    by id.
:func:`lombscargle_periodograms`
    The whole periodograms of the same input, one array per row of a Dask
    DataFrame indexed by id.
:func:`lombscargle_multiband_peaks`
    Per-series best frequency (optionally the top-k) of the multiband
    periodogram of ``(id, t, y, band[, dy])`` rows (one
    ``lombscargle_multiband_batch`` call for the peaks per partition), as a
    Dask DataFrame indexed by id.
:func:`lombscargle_chi2_peaks`
    Per-series best frequency (optionally the top-k, with false-alarm
    probabilities) of astropy's ``LombScargle`` periodogram (any ``nterms``)
    of ``(id, t, y[, dy])`` rows (one ``lombscargle_batch`` call for the
    peaks per partition), as a Dask DataFrame indexed by id.
:func:`bls`
    Per-series best trial period (optionally the top-k) of a box least
    squares transit search of the same input (one ``bls_batch`` call for
    the peaks per partition), as a Dask DataFrame indexed by id.
:func:`pdm`, :func:`conditional_entropy`
    Per-series best trial frequency (optionally the top-k) of a phase
    dispersion minimisation or conditional entropy search of the same input
    (one ``pdm_batch`` or ``conditional_entropy_batch`` call for the peaks
    per partition), as a Dask DataFrame indexed by id.
:func:`uniform_filter`
    ``scipy.ndimage.uniform_filter`` of an N-D Dask array (``map_overlap``).
:func:`gaussian_filter`, :func:`gaussian_filter1d`
    ``scipy.ndimage.gaussian_filter`` (``gaussian_filter1d``) of an N-D Dask
    array (``map_overlap``).
:func:`median_filter`, :func:`rank_filter`, :func:`percentile_filter`
    ``scipy.ndimage``'s rank filters of an N-D Dask array (``map_overlap``).
:func:`lorenz96`, :func:`lorenz05`, :func:`lorenz63`, :func:`lorenz63_adaptive`
    Ensembles chunked by members, one ensemble call per block (Lorenz 63's
    per-member sigma, rho, beta chunked alongside the members; the adaptive
    run's states, steps and statuses from the same call).

Where each call runs is kernpack's usual choice, made on the worker:
``backend=None`` or ``'auto'`` takes the worker's GPU when it has one
(dask-cuda gives every worker one GPU, seen as device 0) and its CPU
otherwise. Blocks of CuPy-backed Dask arrays are filtered or integrated on
their GPU as they are.

A worker process runs one batched periodogram call at a time (each fills its
GPU, or every core); give workers several threads
(``LocalCUDACluster(threads_per_worker=8)``, ``dask cuda worker --nthreads
8``) so that they read and order the next partitions meanwhile.
"""
from __future__ import annotations

import contextlib
import functools
import math
import operator
import os
import re
import threading
from typing import Any, Dict, List, Optional, Sequence, Tuple, Union

try:
    import dask
    import dask.array as da
    import dask.dataframe as dd
    import pandas as pd
    from dask.array.utils import meta_from_array
except ImportError as e:  # pragma: no cover - exercised without the extra installed
    raise ImportError(
        f"kernpack.dask needs Dask ({e}); install the optional extra: pip install 'kernpack[dask]' "
        "(dask[dataframe], distributed and pyarrow)"
    ) from e

import numpy as np

try:  # NumPy >= 2
    from numpy.lib.array_utils import normalize_axis_index
except ImportError:  # NumPy 1.x
    from numpy.core.multiarray import normalize_axis_index

from . import _context, _parquet_tasks
from ._arrays import FLOAT_DTYPES, device_array, host_array
from . import ndimage as _ndimage
from . import ode as _ode
from . import signal as _signal
from . import timeseries as _ts
from ._native import check_lorenz63_adaptive as _check_lorenz63_adaptive
from ._native import check_save_at as _check_save_at
from ._native import frame_count as _frame_count
from ._native import series_layout as _series_layout
from ._native import MAX_PEAKS as _MAX_PEAKS

__all__ = [
    "lombscargle_peaks",
    "lombscargle_periodograms",
    "lombscargle_multiband_peaks",
    "lombscargle_chi2_peaks",
    "bls",
    "pdm",
    "conditional_entropy",
    "uniform_filter",
    "gaussian_filter",
    "gaussian_filter1d",
    "median_filter",
    "rank_filter",
    "percentile_filter",
    "lorenz96",
    "lorenz05",
    "lorenz63",
    "lorenz63_adaptive",
]

_TWO_PI = 2.0 * math.pi


# --------------------------------------------------------------------------
# Lomb-Scargle of survey tables
# --------------------------------------------------------------------------


def _grid_spec(nf: Any, fmin: Any, fmax: Any, oversample: Any) -> Tuple[int, Any, Any, Any]:
    """(nf, fmin, fmax, oversample), checked: fmax None for a per-series grid, oversample None for a shared one."""
    nf = _signal._count("nf", nf)
    if fmax is not None and oversample is not None:
        raise ValueError("pass fmax (one grid for every series) or oversample (a grid per series), not both")
    if fmax is None and oversample is None:
        raise ValueError("pass fmin and fmax (one grid fmin..fmax for every series) or oversample (a grid per series)")
    if fmax is not None:
        if fmin is None:
            raise ValueError("a shared grid needs fmin and fmax")
        fmin, fmax = float(fmin), float(fmax)
        ordered = fmin < fmax or (nf == 1 and fmin == fmax)
        if not (math.isfinite(fmin) and math.isfinite(fmax) and 0 <= fmin and ordered):
            raise ValueError(f"the grid needs finite 0 <= fmin < fmax, got fmin={fmin}, fmax={fmax}")
        return nf, fmin, fmax, None
    oversample = float(oversample)
    if not (math.isfinite(oversample) and oversample > 0):
        raise ValueError(f"oversample must be > 0, got {oversample}")
    if fmin is not None:
        fmin = float(fmin)
        if not (math.isfinite(fmin) and fmin >= 0):
            raise ValueError(f"fmin must be finite and >= 0, got {fmin}")
    return nf, fmin, None, oversample


def _is_paths(data: Any) -> bool:
    return isinstance(data, (str, os.PathLike)) or (
        isinstance(data, (list, tuple)) and bool(data) and all(isinstance(p, (str, os.PathLike)) for p in data)
    )


def _parquet_plan(data: Any, id_col: str, columns: List[str]) -> Optional[_parquet_tasks.Plan]:
    """Tasks reading a local Parquet path straight into NumPy, every series
    whole in one task; None where the footers cannot vouch for that (then
    Dask's reader and a shuffle take the path)."""
    files = _parquet_tasks.local_files(data)
    return _parquet_tasks.plan(files, id_col, columns) if files else None


def _as_series_frame(data: Any, id_col: str, columns: List[str], read_parquet_kwargs: Optional[Dict[str, Any]],
                     extra_cols: Sequence[str] = ()):
    """A Dask DataFrame with the value columns (numbers), the `extra_cols`
    (any values: labels) and the id as column or index."""
    if _is_paths(data):
        paths = os.fspath(data) if not isinstance(data, (list, tuple)) else [os.fspath(p) for p in data]
        # The caller's options over kernpack's default of one pandas block per
        # column: the partitions are only read column by column, and pyarrow's
        # default consolidation copies every value once more (a quarter of a
        # worker's host time per partition, measured on survey files).
        data = dd.read_parquet(paths, **{"arrow_to_pandas": {"split_blocks": True}, **(read_parquet_kwargs or {})})
    elif read_parquet_kwargs:
        raise ValueError("read_parquet_kwargs apply only to a Parquet path")
    if not isinstance(data, dd.DataFrame):
        raise TypeError(
            f"expected a Dask DataFrame or the path of a Parquet dataset, got {type(data).__name__}"
            + (" (wrap a pandas DataFrame with dask.dataframe.from_pandas)" if isinstance(data, pd.DataFrame) else "")
        )
    missing = [c for c in [*columns, *extra_cols] if c not in data.columns]
    id_is_index = id_col not in data.columns and data.index.name == id_col
    if id_col not in data.columns and not id_is_index:
        missing.insert(0, id_col)
    if missing:
        raise KeyError(f"column(s) {missing} not found (columns: {list(data.columns)}, index: {data.index.name!r})")
    ids = data.index if id_is_index else data[id_col]
    if isinstance(ids.dtype, pd.CategoricalDtype):
        raise TypeError(
            f"the id {id_col!r} is categorical: cast it to its values' type first "
            f"(e.g. frame[{id_col!r}].astype(str)); ids are sorted, and categories may be unordered"
        )
    for name in columns:
        dtype = data[name].dtype
        if pd.api.types.is_datetime64_any_dtype(dtype) or pd.api.types.is_timedelta64_dtype(dtype) \
                or isinstance(dtype, (pd.PeriodDtype, pd.CategoricalDtype)):
            raise TypeError(f"column {name!r} is {dtype}: times, values and weights must be numbers "
                            "(convert dates to days first, e.g. MJD)")
    return data[([] if id_is_index else [id_col]) + columns + list(extra_cols)], id_is_index


def _partitioned_by_id(data, id_col: str, id_is_index: bool, assume_partitioned: bool, npartitions: Optional[int]):
    """The frame with each id in one partition: as it is when its index is the
    id with known divisions (or the caller says so), else after set_index."""
    if assume_partitioned:
        return data
    if id_is_index and data.known_divisions:
        return data
    if id_is_index:
        data = data.reset_index()
    divisions = _id_divisions(data[id_col], npartitions or data.npartitions)
    if divisions is None:
        return data.set_index(id_col, npartitions=npartitions)
    return data.set_index(id_col, divisions=divisions)


# Ids sampled per partition for the divisions of the shuffle.
_DIVISION_SAMPLES = 256


def _id_divisions(ids, npartitions: int) -> Optional[List[Any]]:
    """Divisions for ``set_index(id, divisions=...)``: cuts between evenly
    spaced ids of every partition's sorted unique ids (of a strided sample
    of at most about 65,000 rows per partition; one pass over the ids, like
    set_index's own quantiles). None where the ids do not sort
    (mixed types) or there are none: then set_index chooses.

    Explicit divisions make set_index shuffle. Left to itself, Dask (2026.8)
    may judge a Parquet dataset already sorted from partition minima and
    maxima computed on a partitioning other than the frame's (two files whose
    id ranges touch, or every file holding every id, read together), skip
    the shuffle, and leave one id in two partitions: its series would be
    computed twice, each time from part of its samples."""

    def sample(part):
        values = part.dropna().to_numpy()
        if values.size > _DIVISION_SAMPLES * 256:  # a strided sample (sorting every id costs seconds) and the ends
            values = np.concatenate([values[:: values.size // (_DIVISION_SAMPLES * 256)],
                                     [values.min(), values.max()]])
        unique = np.unique(values)
        if unique.size > _DIVISION_SAMPLES:
            unique = unique[np.linspace(0, unique.size - 1, _DIVISION_SAMPLES).round().astype(np.intp)]
        return pd.Series(unique, dtype=part.dtype)

    try:
        values = np.unique(ids.map_partitions(sample, meta=ids._meta).compute().to_numpy())
    except TypeError:
        return None
    if values.size == 0:
        return None
    cuts = np.unique(values[np.linspace(0, values.size - 1, max(npartitions, 1) + 1).round().astype(np.intp)])
    if cuts.size == 1:
        return [cuts[0], cuts[0]]
    return list(cuts)


def _series_pieces(source, id_col: str, t_col: str, y_col: str, w_col: Optional[str],
                   extra_cols: Sequence[str] = ()):
    """(ids, t, y, w, *extra) of a pandas partition (one piece) or of a
    Parquet task (a row group at a time where its row groups follow in id
    order), as NumPy arrays in their stored order, `extra` the
    `extra_cols`; every series whole in one piece."""
    if isinstance(source, _parquet_tasks.Task):
        columns = [id_col, t_col, y_col] + ([w_col] if w_col is not None else []) + list(extra_cols)
        for cols in _parquet_tasks.pieces(source, columns, id_col):
            w = cols[w_col] if w_col is not None else None
            yield (cols[id_col], cols[t_col], cols[y_col], w, *(cols[c] for c in extra_cols))
        return
    ids = source[id_col].to_numpy() if id_col in source.columns else source.index.to_numpy()
    w = source[w_col].to_numpy() if w_col is not None else None
    yield (ids, source[t_col].to_numpy(), source[y_col].to_numpy(), w, *(source[c].to_numpy() for c in extra_cols))


def _per_piece(source, meta, id_col, t_col, y_col, w_col, extra_cols, table_of) -> "pd.DataFrame":
    """The partition's result: ``table_of(ids, offsets, t, y, w, *extra)``
    of every piece's series in (id, t, y, w, *extra) order (`extra`: the
    `extra_cols`), one batched call per piece, in id order (the pieces of a
    Parquet task are, but for its last one: the series that cross row
    groups)."""
    tables = [table_of(*_sorted_series(*rows, id_col=id_col))
              for rows in _series_pieces(source, id_col, t_col, y_col, w_col, extra_cols) if len(rows[0])]
    if not tables:
        return meta.copy()
    table = tables[0] if len(tables) == 1 else pd.concat(tables)
    return table if table.index.is_monotonic_increasing else table.sort_index(kind="stable")


def _sorted_series(ids, t, y, w, *extra, id_col: str):
    """Flat arrays sorted by (id, t, y, w, *extra), which fixes the order of
    the sums whatever order the shuffle or the files delivered, and the
    series' offsets: (series ids, offsets, t, y, w, *extra)."""
    if ids.dtype.kind not in "iub" and pd.isna(ids).any():  # integer ids cannot be missing
        raise ValueError(f"the {id_col!r} column has missing values: every row needs a series id")
    keys = [ids, t, y] + ([w] if w is not None else []) + list(extra)
    layout = _ties_out_of_order(keys)
    if layout is None:  # not ordered by (id, t): pandas' stable sort on every key
        names = [str(k) for k in range(len(keys))]
        order = pd.DataFrame(dict(zip(names, keys))).sort_values(names, kind="mergesort").index.to_numpy()
        keys = [k[order] for k in keys]
        starts = np.flatnonzero(keys[0][1:] != keys[0][:-1]) + 1
    else:
        starts, (rows, source) = layout
        if rows.size:  # Tied rows share id and t: only their other columns move.
            keys[2:] = [k.copy() for k in keys[2:]]
            for k in keys[2:]:
                k[rows] = k[source]
    id_values, t, y = keys[:3]
    offsets = np.concatenate([[0], starts, [id_values.size]]).astype(np.intp)
    w, extra = (keys[3], keys[4:]) if w is not None else (None, keys[3:])
    return (id_values[offsets[:-1]], offsets, t, y, w, *extra)


def _ties_out_of_order(keys: List[np.ndarray]):
    """For rows already ordered by (id, t) (the usual survey layout: a
    dataset written curve by curve, in time), the order by all of `keys`
    without a full sort: only runs of equal (id, t) are sorted, on their
    other keys. Returns (starts, (rows, source)), or None when the rows are
    not ordered by (id, t) (then the caller sorts everything): starts are
    the rows (after the first) that begin a series, where the ids stay in
    place, and row ``rows[i]`` takes the values of row ``source[i]`` (none
    when the rows are in order as they are). A multi-key sort of millions
    of rows costs seconds, far more than their periodograms; the check is
    one pass over the rows."""
    ids, t = keys[0], keys[1]
    if ids.size < 2:
        none = np.empty(0, dtype=np.intp)
        return none, (none, none)
    try:
        layout = _layout(ids, t)
        if layout is None:
            return None
        starts, tie_first = layout
        rows = np.union1d(tie_first, tie_first + 1)  # rows i and i + 1 share id and t
        # The tied rows keep their places as a set: sorting them by every key
        # orders each run and leaves the runs where they are.
        within = np.lexsort(tuple(k[rows] for k in reversed(keys)))
    except TypeError:  # ids of mixed types: the full sort decides
        return None
    moved = within != np.arange(rows.size)
    return starts, (rows[moved], rows[within[moved]])


_NATIVE_IDS = ("int32", "int64", "uint32", "uint64")


def _layout(ids: np.ndarray, t: np.ndarray) -> Optional[Tuple[np.ndarray, np.ndarray]]:
    """(starts, tie_first) of rows ordered by (id, t): the rows (after the
    first) that begin a series, and the rows i whose next row has the same
    id and time; None when they are not so ordered (a NaN time inside a
    series included). One native pass for 32/64-bit integer ids and float
    times (the usual survey columns), NumPy passes otherwise."""
    if (ids.dtype.name in _NATIVE_IDS and t.dtype.name in ("float32", "float64")
            and ids.dtype.isnative and t.dtype.isnative and ids.size == t.size):
        got = _series_layout(host_array(ids, ids.dtype), host_array(t, t.dtype))
        if got is None:
            return None
        return np.asarray(got[0], dtype=np.intp), np.asarray(got[1], dtype=np.intp)
    return _layout_numpy(ids, t)


def _layout_numpy(ids: np.ndarray, t: np.ndarray) -> Optional[Tuple[np.ndarray, np.ndarray]]:
    new_id = ids[1:] != ids[:-1]
    if np.any(ids[1:] < ids[:-1]):
        return None
    # Within a series times must not decrease (NaN compares false).
    later = t[1:] >= t[:-1]
    later |= new_id
    if not later.all():
        return None
    tie = (t[1:] == t[:-1]) & ~new_id
    return np.flatnonzero(new_id) + 1, np.flatnonzero(tie)


def _series_grids(ids, offsets, t, nf, fmin, fmax, oversample):
    """(f0, df) for the batch: scalars for a shared grid, per-series arrays from each span."""
    if oversample is None:
        return fmin, ((fmax - fmin) / (nf - 1) if nf > 1 else 1.0)
    tt = np.asarray(t, dtype=np.float64)
    span = np.maximum.reduceat(tt, offsets[:-1]) - np.minimum.reduceat(tt, offsets[:-1])
    bad = np.flatnonzero(~(span > 0) | ~np.isfinite(span))
    if bad.size:
        raise ValueError(
            f"series {ids[bad[0]]!r} spans no time (span {span[bad[0]]}): a per-series grid (oversample) "
            "needs at least two distinct times; use a shared grid (fmin, fmax) or drop such series"
        )
    df = _TWO_PI / (oversample * span)
    f0 = np.full_like(df, fmin) if fmin is not None else df.copy()
    return f0, df


# Batched calls per worker process at a time. Peaks on the GPU: two, so
# that while one call's kernels run the other checks and packs its samples
# (kernpack runs the two calls' kernels one after the other, not side by
# side, where they would contend; their device memory is bounded chunks).
# Whole periodograms on the GPU: one, alone (it holds all of its batch's
# periodograms on the device, and its kernels do not take turns with the
# chunked ones). CPU calls: one (each fills every core). A worker's other
# threads read and order the next partitions meanwhile (the calls release
# the GIL).
_GPU_PERMITS = 2
_GPU_CALLS = threading.Semaphore(_GPU_PERMITS)  # a peaks call takes one permit
_ONE_CALL = threading.Lock()  # CPU calls; whole GPU calls hold it while taking every permit


@contextlib.contextmanager
def _alone_on_the_gpu():
    # One whole call at a time gathers the permits (so two cannot each hold
    # some and wait for the rest); peaks calls give theirs back as they end.
    with _ONE_CALL:
        held = 0
        try:
            while held < _GPU_PERMITS:
                _GPU_CALLS.acquire()
                held += 1
            yield
        finally:  # also the permits taken before an interrupt
            for _ in range(held):
                _GPU_CALLS.release()


def _calls(backend: Optional[str], best: bool):
    if _context.context(backend).backend == "cpu":
        return _ONE_CALL
    return _GPU_CALLS if best else _alone_on_the_gpu()


@contextlib.contextmanager
def _series_named_by_id(ids):
    """A batched call's ValueError naming a series by its id, not by its
    place in this partition."""
    try:
        yield
    except ValueError as e:
        m = re.search(r"series (\d+)", str(e))
        if m and int(m.group(1)) < len(ids):
            named = f"series with id {_plain(ids[int(m.group(1))])!r}"
            raise ValueError(str(e).replace(m.group(0), named, 1)) from e
        raise


def _batch(ids, offsets, t, y, w, grid, opts, best, **peaks):
    """(f0, df, the batched call's result) for the series on their grids;
    `peaks`: ``peaks=k, separation=`` for only each series' best k."""
    f0, df = _series_grids(ids, offsets, t, *grid)
    with _series_named_by_id(ids), _calls(opts["backend"], best or bool(peaks)):
        got = _signal.lombscargle_batch(t, y, f0, df, grid[0], offsets=offsets, weights=w, best=best, **peaks,
                                        **opts)
        return f0, df, got


def _top_peaks(magnitude: np.ndarray, k: int):
    """Indices (-1: none) and values (NaN: none) of the k highest local maxima
    of each row, highest first, ties to the lower index. A local maximum is
    above its left neighbour and not below its right one (the grid's ends
    compare with -inf), so rank 1 is np.argmax's index. For the modulus of
    'amplitude' periodograms: the library ranks real periodograms only."""
    m = np.nan_to_num(magnitude.astype(np.float64, copy=False), nan=-np.inf)
    rows, nf = m.shape
    ninf = np.full((rows, 1), -np.inf)
    left = np.concatenate([ninf, m[:, :-1]], axis=1)
    right = np.concatenate([m[:, 1:], ninf], axis=1)
    score = np.where((m > left) & (m >= right), m, -np.inf)
    if nf < k:  # ranks past the grid's points: none
        score = np.concatenate([score, np.full((rows, k - nf), -np.inf)], axis=1)
    cand = np.argpartition(-score, k - 1, axis=1)[:, :k]
    # argpartition picks any of equal values at the k-th place: rows with
    # such ties take the k first of a stable sort instead.
    kth = np.take_along_axis(score, cand, axis=1).min(axis=1)
    tied = np.flatnonzero((score >= kth[:, None]).sum(axis=1) > k)
    if tied.size:
        cand[tied] = np.argsort(-score[tied], axis=1, kind="stable")[:, :k]
    cscore = np.take_along_axis(score, cand, axis=1)
    order = np.lexsort((cand, -cscore), axis=1)
    index = np.take_along_axis(cand, order, axis=1)
    value = np.take_along_axis(cscore, order, axis=1)
    missing = value == -np.inf
    return np.where(missing, -1, index), np.where(missing, np.nan, value)


def _top_k(top_k: Any, most: Optional[int] = None) -> int:
    if isinstance(top_k, (bool, np.bool_)) or not isinstance(top_k, (int, np.integer)) or top_k < 1:
        raise ValueError(f"top_k must be an integer >= 1, got {top_k!r}")
    if most is not None and top_k > most:
        raise ValueError(f"top_k = {top_k} is out of range: 1 to {most} peaks per series")
    return int(top_k)


def _peak_ranks(top_k: Any, separation: Any, normalize: Any) -> Tuple[int, float]:
    """A periodogram table's `top_k` (1 to 256) and `separation` checked."""
    top_k = _top_k(top_k, most=_MAX_PEAKS)
    _, separation = _ts._peak_options(top_k, separation)
    if top_k > 1 and separation and _signal._mode(normalize) == "amplitude":
        raise ValueError("separation ranks the peaks of real periodograms: 'amplitude' (complex) takes top_k "
                         "without it, or pass normalize='power' or 'normalize'")
    return top_k, separation


def _rank_columns(names: Sequence[str], top_k: int) -> Dict[str, Any]:
    """n, then per rank r (r > 1 suffixed _r) the float64 columns `names`."""
    cols = list(names) + [f"{c}_{r}" for r in range(2, top_k + 1) for c in names]
    return {"n": np.int64, **dict.fromkeys(cols, np.float64)}


def _peaks_columns(top_k: int, value: str = "power") -> Dict[str, Any]:
    """n, then per rank r (r > 1 suffixed _r) frequency, period and `value`."""
    return _rank_columns(("frequency", "period", value), top_k)


def _ranks_table(ids, offsets, meta, *columns) -> "pd.DataFrame":
    """The table of `meta`'s columns (:func:`_peaks_columns`) from
    (nseries, top_k) arrays of the ranked peaks, one per column of a rank
    (frequencies, periods and values, or as many as the rank has)."""
    top_k = columns[0].shape[1]
    ranks = np.stack(columns, axis=2).reshape(len(ids), len(columns) * top_k)
    index = pd.Index(ids, dtype=meta.index.dtype, name=meta.index.name)
    table = pd.DataFrame(ranks, columns=meta.columns[1:], index=index)
    table.insert(0, "n", np.diff(offsets).astype(np.int64))
    return table


def _peaks_table(ids, offsets, t, y, w, *, meta, grid, top_k, separation, opts):
    if top_k == 1:  # (nseries, 1) frequencies and powers of the peaks
        _, _, got = _batch(ids, offsets, t, y, w, grid, opts, best=True)
        freq, power = got.frequency[:, None], got.power[:, None]
    elif opts["normalize"] == "amplitude":  # (nseries, top_k) of the modulus, from the whole periodograms
        f0, df, got = _batch(ids, offsets, t, y, w, grid, opts, best=False)
        index, power = _top_peaks(np.abs(got), top_k)
        freq = _signal._peak_frequency(np.reshape(f0, (-1, 1)), np.reshape(df, (-1, 1)), index)
    else:  # (nseries, top_k), only the peaks leave the batch
        _, _, got = _batch(ids, offsets, t, y, w, grid, opts, best=False, peaks=top_k, separation=separation)
        freq, power = got.frequency, got.power
    with np.errstate(divide="ignore"):
        period = _TWO_PI / freq
    return _ranks_table(ids, offsets, meta, freq, period, power)


def _per_series(label, out_columns, table, data, nf, fmin, fmax, oversample, id_col, t_col, y_col, w_col, normalize,
                floating_mean, precenter, backend, assume_partitioned, npartitions, read_parquet_kwargs, **extra):
    """The checked arguments' frame (or Parquet plan) with each id in one
    partition, and per partition the table of `out_columns` (dtypes) indexed
    by id that ``table(ids, offsets, t, y, w, meta=, grid=, opts=, **extra)``
    makes of its series, in a task named `label`."""
    grid = _grid_spec(nf, fmin, fmax, oversample)
    opts = _batch_options(normalize, floating_mean, precenter, backend)
    table_of = functools.partial(table, grid=grid, opts=opts, **extra)
    return _per_survey_partition(label, out_columns, table_of, data, id_col, t_col, y_col, w_col, assume_partitioned,
                                 npartitions, read_parquet_kwargs)


def _per_survey_partition(label, out_columns, table, data, id_col, t_col, y_col, w_col, assume_partitioned,
                          npartitions, read_parquet_kwargs, w_name="w_col", extra_cols=None):
    """The frame (or Parquet plan) of `data` with each id in one partition,
    and per partition the table of `out_columns` (dtypes) indexed by id that
    ``table(ids, offsets, t, y, w, *extra, meta=)`` makes of its series, in a
    task named `label`; `w_name` names the optional column's argument in
    errors. `extra_cols` ({argument name: column}, in order): columns of any
    values (a multiband series' band labels) that travel and are sorted with
    the rows, the `extra` arrays."""
    extra_cols = dict(extra_cols or {})
    named = {"id_col": id_col, "t_col": t_col, "y_col": y_col, w_name: w_col, **extra_cols}
    given = [c for c in named.values() if c is not None]
    if len(set(given)) != len(given):
        args, cols = list(named), [repr(c) for c in named.values()]
        raise ValueError(f"{', '.join(args[:-1])} and {args[-1]} must name different columns, got "
                         f"{', '.join(cols[:-1])} and {cols[-1]}")
    columns = [t_col, y_col] + ([w_col] if w_col is not None else [])
    extra = list(extra_cols.values())
    if npartitions is not None and (isinstance(npartitions, (bool, np.bool_))
                                    or not isinstance(npartitions, (int, np.integer)) or npartitions < 1):
        raise ValueError(f"npartitions must be an integer >= 1 (or None), got {npartitions!r}")
    paths = _is_paths(data) and read_parquet_kwargs is None and npartitions is None
    # kernpack's reader takes columns of numbers (integer band labels, say);
    # others (strings) leave the path to Dask's reader.
    source = _parquet_plan(data, id_col, columns + extra) if paths else None
    if source is not None:
        index_dtype = source.id_dtype
    else:
        source, id_is_index = _as_series_frame(data, id_col, columns, read_parquet_kwargs, extra)
        source = _partitioned_by_id(source, id_col, id_is_index, bool(assume_partitioned), npartitions)
        index_dtype = source[id_col].dtype if id_col in source.columns else source.index.dtype
    meta = _empty_table(out_columns, pd.Index([], dtype=index_dtype, name=id_col))
    table_of = functools.partial(table, meta=meta)
    return _per_partition(source, label, meta, id_col, t_col, y_col, w_col, extra, table_of)


def _batch_options(normalize, floating_mean, precenter, backend) -> Dict[str, Any]:
    """The batched call's options, checked once before any partition runs."""
    return dict(
        normalize=_signal._mode(normalize), floating_mean=bool(floating_mean), precenter=bool(precenter),
        backend=None if backend is None else _context._check(backend),
    )


def _empty_table(columns: Dict[str, Any], index) -> "pd.DataFrame":
    """A table of no rows with these columns (name: dtype) on `index` (empty)."""
    return pd.DataFrame({c: np.empty(0, dtype=d) for c, d in columns.items()}, index=index)


def _per_partition(source, label: str, meta, id_col: str, *args) -> "dd.DataFrame":
    """``_per_piece(partition, meta, id_col, *args)`` on every partition of
    a frame, or on every task (named `label`) of a Parquet plan (whose id
    ranges are the divisions)."""
    fn = _per_piece
    if isinstance(source, _parquet_tasks.Plan):
        # Not Dask's string conversion of a reader's object columns: the
        # periodogram column holds arrays.
        with dask.config.set({"dataframe.convert-string": False}):
            return dd.from_map(fn, source.tasks, args=[meta, id_col, *args], meta=meta, divisions=source.divisions,
                               label=label, enforce_metadata=False)
    # The output is indexed by id: the input's divisions stay valid only when
    # they were divisions of the id.
    if source.index.name == id_col and source.known_divisions:
        return source.map_partitions(_within_divisions, _division_bounds(source.divisions), fn, meta, id_col, *args,
                                     meta=meta, align_dataframes=False)
    return source.map_partitions(fn, meta, id_col, *args, meta=meta, clear_divisions=source.index.name != id_col)


def _division_bounds(divisions) -> "dd.DataFrame":
    """A frame with the source's divisions and one row per partition: its
    bounds. Passed beside the source, it reaches each task as the bounds of
    the partition the task really gets: Dask's optimizer may join adjacent
    partitions of a Parquet read (and then joins these rows alike) or keep
    only some (``.partitions``, ``.loc``, ``tail``), which renumbers them."""
    bounds = [(divisions[k], divisions[k + 1], k + 2 == len(divisions)) for k in range(len(divisions) - 1)]
    none = pd.Series(list(divisions[:1]))[:0]  # the ids' dtype
    meta = pd.DataFrame({"lo": none, "hi": none, "last": np.empty(0, bool)}, index=pd.Index(none, name="lo_index"))
    return dd.from_map(_bounds_row, bounds, meta=meta, divisions=divisions, label="division-bounds",
                       enforce_metadata=False)


def _bounds_row(bound) -> "pd.DataFrame":
    lo, hi, last = bound
    return pd.DataFrame({"lo": [lo], "hi": [hi], "last": [last]}, index=pd.Index([lo], name="lo_index"))


def _within_divisions(part, bounds, fn, meta, id_col, *args):
    """`fn` on a partition of a frame indexed by id with known divisions,
    once its ids are checked against the partition's bounds (rows of
    `_division_bounds`, more than one where Dask joined partitions):
    divisions that a frame's data does not keep could leave a series in two
    partitions, computed twice from parts of its samples. Dask's Parquet
    reader takes divisions from the files' statistics and accepts files
    whose id ranges touch (a series cut by a file boundary)."""
    if len(part) and len(bounds):
        lo, hi, last = bounds["lo"].iloc[0], bounds["hi"].iloc[-1], bool(bounds["last"].iloc[-1])
        first_id, last_id = part.index.min(), part.index.max()
        if first_id < lo or last_id > hi or (last_id == hi and not last):
            raise ValueError(
                f"a partition of the frame holds ids {_plain(first_id)!r}..{_plain(last_id)!r}, outside its "
                f"divisions [{_plain(lo)!r}, {_plain(hi)!r}{']' if last else ')'}: a series may lie in two "
                "partitions. Divisions from Parquet statistics (read_parquet(..., calculate_divisions=True)) "
                "allow files whose id ranges touch; pass the path itself (kernpack plans the read) or a frame "
                "without known divisions"
            )
    return fn(part, meta, id_col, *args)


def _plain(value: Any) -> Any:
    """A NumPy scalar as the Python value, for messages (1, not np.int64(1))."""
    return value.item() if isinstance(value, np.generic) else value


def lombscargle_peaks(
    data: Any,
    nf: int,
    fmin: Optional[float] = None,
    fmax: Optional[float] = None,
    *,
    oversample: Optional[float] = None,
    top_k: int = 1,
    separation: float = 0.0,
    id_col: str = "id",
    t_col: str = "t",
    y_col: str = "y",
    w_col: Optional[str] = None,
    normalize: Union[bool, str] = False,
    floating_mean: bool = False,
    precenter: bool = False,
    backend: Optional[str] = None,
    assume_partitioned: bool = False,
    npartitions: Optional[int] = None,
    read_parquet_kwargs: Optional[Dict[str, Any]] = None,
) -> "dd.DataFrame":
    """The highest periodogram peaks of every series of a survey table.

    Parameters
    ----------
    data : dask.dataframe.DataFrame or path(s) of a Parquet dataset
        One row per sample: series id, time, value and optionally a weight
        (column names below; the id may also be the index). A local path
        with integer ids is read by kernpack's own reader where the files'
        footers allow (see Notes); any other path with
        ``dask.dataframe.read_parquet(data, **read_parquet_kwargs)``.
    nf : int
        Frequencies per series.
    fmin, fmax : float, optional
        Shared grid: ``nf`` angular frequencies (rad per unit of t) from fmin
        to fmax inclusive, the same for every series. With `oversample`,
        `fmin` is the first frequency of every series' grid (default: its step).
    oversample : float, optional
        Per-series grid instead: the step of series s is
        ``2 pi / (oversample * span_s)`` with ``span_s = max(t) - min(t)``
        (``oversample`` grid points per natural peak width), ``nf``
        frequencies from fmin (or from one step). Series whose times are all
        equal raise ValueError.
    top_k : int, optional
        Peaks per series, 1 to 256. 1: the periodogram's maximum
        (``lombscargle_batch(..., best=True)``). k > 1: the k highest local
        maxima of each periodogram, each at least `separation` from the
        higher ones, as ``lombscargle_batch(..., peaks=k,
        separation=separation)`` defines them (rank 1 is the maximum);
        missing ranks are NaN. Only the peaks of a partition are held: its
        periodograms are computed in chunks of series and reduced where
        they are made (on a GPU only the peaks leave the device). Except
        k > 1 with ``normalize='amplitude'`` (complex values, which the
        library does not rank): the local maxima of the modulus, from the
        whole periodograms of a partition computed in one call and copied
        to the host (``nseries * nf`` values per partition in memory).
    separation : float, optional
        The least distance between the frequencies of two ranked peaks, in
        the grid's unit (angular frequency, rad per unit of t; finite, >= 0;
        default 0: any two local maxima). About ``2 pi / span``, a peak's
        width (``oversample`` grid steps on a per-series grid), keeps a
        peak's side lobes out of the ranks. No effect with ``top_k=1``;
        not with 'amplitude' (a ValueError for ``top_k > 1``).
    id_col, t_col, y_col, w_col : str, optional
        Column names; `w_col` None: unweighted.
    normalize, floating_mean, precenter
        As in :func:`kernpack.signal.lombscargle`; with 'amplitude' the power
        columns hold the modulus.
    backend : {'auto', 'gpu', 'cpu'}, optional
        Where the workers compute (default: kernpack's default on the worker,
        normally 'auto').
    assume_partitioned : bool, optional
        The caller guarantees that every id lies in one partition: no shuffle.
        Results are then sorted by id within each partition, partitions in
        their input order (globally by id only when the partitions are).
        No effect on a path that kernpack's reader takes (its tasks hold
        whole series by construction).
    npartitions : int, optional
        Partitions after the shuffle (default: as many as the input). Every
        partition is one batched kernpack call: on GPUs prefer partitions of
        many series (10^4 to 10^6). Given with a path, the path is read with
        Dask's reader and shuffled.
    read_parquet_kwargs : dict, optional
        Passed to ``dask.dataframe.read_parquet`` for a path (given, even
        empty, Dask's reader reads it), e.g. ``{"index": "id",
        "calculate_divisions": True}`` for a dataset written sorted by id
        whose files share no id (then no shuffle is needed; files that
        share one raise ValueError, see Notes). kernpack adds
        ``arrow_to_pandas={"split_blocks": True}`` (no copy to consolidate
        the columns) unless the dict gives ``arrow_to_pandas``.

    Returns
    -------
    dask.dataframe.DataFrame
        Indexed by id (sorted; the index name is `id_col`), with columns
        ``n`` (samples, int64), ``frequency`` (angular), ``period``
        (``2 pi / frequency``) and ``power`` (float64) of the best peak, and for
        ``top_k > 1`` ``frequency_r``, ``period_r``, ``power_r`` for r = 2..k.

    Notes
    -----
    Reading a path: when it names local Parquet files whose integer id
    column has minimum and maximum statistics in every row group (pyarrow,
    Spark, DuckDB and Dask write them by default), kernpack plans the read
    from the footers alone: the ids are cut into ranges of about 8 million
    rows (at least two row groups where those are larger), each range one
    task that reads the row groups reaching into it with pyarrow straight
    into NumPy and keeps the rows of its range. No
    pandas conversion, no index, no shuffle, whatever the row order within
    the files, and series written across row groups or files stay whole. A
    dataset in which row groups span most ids (not written sorted by id)
    would make every task read everything; it is read by Dask instead, as
    are remote paths, other id types and files without statistics. The
    result's divisions are the ranges' first ids.

    Partitioning: every series must lie in one partition. A frame indexed by
    id with known divisions is used as it is, each partition's ids checked
    against its divisions (ValueError where they disagree: divisions from
    Parquet statistics allow a series cut by a file boundary to lie in two
    partitions); any other input is shuffled
    first with ``set_index(id_col)``: one pass over the id column for the
    divisions (quantiles), then an all-to-all shuffle of every sample over
    the network, which can cost more than the periodograms themselves. For
    repeated runs, write the table once sorted by id
    (``ddf.set_index("id").to_parquet(path)``, or any writer's files in id
    order) and pass its path.

    Within a partition the rows are sorted by (id, t, y, w) before the call,
    so the results do not depend on the order in which the shuffle delivered
    them: the same data, backend and dtype give the same numbers bitwise as
    ``lombscargle_batch`` on the series sorted that way. Times and values
    are computed in float32 when both columns are float32, else in float64.
    The output metadata is given to Dask: the kernel never runs on empty or
    fake data to infer it.
    """
    top_k, separation = _peak_ranks(top_k, separation, normalize)
    return _per_series(
        "peaks-partition", _peaks_columns(top_k), _peaks_table, data, nf, fmin, fmax, oversample, id_col, t_col, y_col,
        w_col, normalize, floating_mean, precenter, backend, assume_partitioned, npartitions, read_parquet_kwargs,
        top_k=top_k, separation=separation,
    )


def _pgram_table(ids, offsets, t, y, w, *, meta, grid, opts):
    f0, df, pgrams = _batch(ids, offsets, t, y, w, grid, opts, best=False)
    column = np.empty(len(ids), dtype=object)
    column[:] = list(pgrams)  # one row view of the (nseries, nf) result per series
    return pd.DataFrame(
        {
            "n": np.diff(offsets).astype(np.int64),
            "f0": np.broadcast_to(np.asarray(f0, dtype=np.float64), (len(ids),)),
            "df": np.broadcast_to(np.asarray(df, dtype=np.float64), (len(ids),)),
            "periodogram": column,
        },
        index=pd.Index(ids, dtype=meta.index.dtype, name=meta.index.name),
    )


def lombscargle_periodograms(
    data: Any,
    nf: int,
    fmin: Optional[float] = None,
    fmax: Optional[float] = None,
    *,
    oversample: Optional[float] = None,
    id_col: str = "id",
    t_col: str = "t",
    y_col: str = "y",
    w_col: Optional[str] = None,
    normalize: Union[bool, str] = False,
    floating_mean: bool = False,
    precenter: bool = False,
    backend: Optional[str] = None,
    assume_partitioned: bool = False,
    npartitions: Optional[int] = None,
    read_parquet_kwargs: Optional[Dict[str, Any]] = None,
) -> "dd.DataFrame":
    """The whole periodogram of every series, one array per row.

    Parameters as :func:`lombscargle_peaks` (the same partitioning, grids and
    one batched call per partition).

    Returns
    -------
    dask.dataframe.DataFrame
        Indexed by id (as :func:`lombscargle_peaks`, so the two join on the
        index), with columns ``n`` (int64), ``f0`` and ``df`` (float64: the
        series' grid is ``f0 + df * arange(nf)``, angular) and
        ``periodogram`` (object: a NumPy array of ``nf`` values per row,
        float32 or float64 as computed, complex for 'amplitude'). A
        partition holds ``nseries * nf`` values: reduce them on the workers
        (``map_partitions``) rather than gathering them all.

    Notes
    -----
    A DataFrame rather than a Bag: ``to_bag()`` and ``to_delayed()`` of a
    frame that went through Dask's P2P shuffle fail (dask/dask#11825, still
    so with dask and distributed 2026.8).
    """
    pgram_columns = {"n": np.int64, "f0": np.float64, "df": np.float64, "periodogram": object}
    return _per_series(
        "pgram-partition", pgram_columns, _pgram_table, data, nf, fmin, fmax, oversample, id_col, t_col, y_col, w_col,
        normalize, floating_mean, precenter, backend, assume_partitioned, npartitions, read_parquet_kwargs,
    )


def _grid_peaks_table(ids, offsets, t, y, dy, *extra, meta, batch, best, backend):
    """Each series' best frequencies of one batched call on a grid in cycles
    per unit of t (``batch(t, y, dy, offsets, *extra)``, a
    :class:`kernpack.timeseries.Peaks` or ``MultibandPeaks`` of the table's
    ranks): rank 1 is the first of the highest power, NaN where a rank has
    no peak; the false-alarm probabilities too where `meta` has ``fap``.
    `best`: only the peaks are held (a GPU worker runs two such calls at a
    time)."""
    with _series_named_by_id(ids), _calls(backend, best=best):
        got = batch(t, y, dy, offsets, *extra)
    with np.errstate(divide="ignore"):
        period = 1.0 / got.frequency
    columns = (got.frequency, period, got.power) + ((got.fap,) if "fap" in meta.columns else ())
    return _ranks_table(ids, offsets, meta, *columns)


def _multiband_table(ids, offsets, t, y, dy, bands, *, band_col, **kwargs):
    """:func:`_grid_peaks_table` of ``lombscargle_multiband_batch(...,
    peaks=top_k)`` once every row has a band label."""
    if bands.dtype.kind not in "iub" and pd.isna(bands).any():  # integer labels cannot be missing
        raise ValueError(f"the {band_col!r} column has missing values: every row needs a band")
    return _grid_peaks_table(ids, offsets, t, y, dy, bands, **kwargs)


def _grid_peaks_survey(label, table, batch_of, data, f0, df, nf, top_k, id_col, t_col, y_col, dy_col, backend,
                       assume_partitioned, npartitions, read_parquet_kwargs, *, best, fap=None, extra_cols=None):
    """The best `top_k` peaks of every series of `data` on the grid ``f0 + k
    df``: the grid and options checked once on the client (``batch_of(f0=,
    df=, nf=, peaks=, backend='cpu')`` on an empty batch), then per
    partition ``table(..., batch=batch_of(..., backend=backend))``, a
    :func:`_grid_peaks_table`; `fap` given: a ``fap`` column per rank.
    `extra_cols` ({argument name: column}): columns sorted with the rows and
    passed to the batch after the offsets."""
    top_k = _top_k(top_k, most=_MAX_PEAKS)
    if np.ndim(f0) or np.ndim(df):
        raise ValueError("f0 and df must be numbers: one grid f0 + k * df for every series")
    grid = dict(f0=f0, df=df, nf=_signal._count("nf", nf), peaks=top_k)
    empty = np.empty(0)
    batch_of(**grid, backend="cpu")(empty, empty, None, np.zeros(1, np.intp), *(empty for _ in extra_cols or {}))
    backend = None if backend is None else _context._check(backend)
    table_of = functools.partial(table, batch=batch_of(**grid, backend=backend), best=best, backend=backend)
    columns = _rank_columns(("frequency", "period", "power") + (("fap",) if fap is not None else ()), top_k)
    return _per_survey_partition(label, columns, table_of, data, id_col, t_col, y_col, dy_col, assume_partitioned,
                                 npartitions, read_parquet_kwargs, w_name="dy_col", extra_cols=extra_cols)


def lombscargle_multiband_peaks(
    data: Any,
    f0: float,
    df: float,
    nf: int,
    *,
    band_col: str = "band",
    top_k: int = 1,
    separation: float = 0.0,
    id_col: str = "id",
    t_col: str = "t",
    y_col: str = "y",
    dy_col: Optional[str] = None,
    method: str = "flexible",
    nterms_base: int = 1,
    nterms_band: int = 1,
    reg_base: Optional[float] = None,
    reg_band: Optional[float] = 1e-6,
    regularize_by_trace: bool = True,
    center_data: bool = True,
    fit_mean: bool = True,
    normalization: str = "standard",
    backend: Optional[str] = None,
    assume_partitioned: bool = False,
    npartitions: Optional[int] = None,
    read_parquet_kwargs: Optional[Dict[str, Any]] = None,
) -> "dd.DataFrame":
    """The highest multiband periodogram peaks of every series of a survey
    table whose samples are taken in several bands (astropy's
    ``LombScargleMultiband``: one period shared by every band).

    Parameters
    ----------
    data : dask.dataframe.DataFrame or path(s) of a Parquet dataset
        One row per sample: series id, time, value, band label and
        optionally its uncertainty, read as in :func:`lombscargle_peaks`
        (kernpack's own reader where every column read is of numbers, the
        band labels included; a path with string labels is read with
        ``dask.dataframe.read_parquet``).
    f0, df, nf : float, float, int
        The grid ``f0 + k * df``, ``k = 0 .. nf-1``, in cycles per unit of t
        (not angular), the same for every series; checked here, with the
        options, before any partition runs.
    band_col : str, optional
        The column of band labels: any values that sort (integers, strings),
        not missing. A series' bands are its own labels in sorted order.
    top_k : int, optional
        Peaks per series, 1 to 256 (default 1: the highest power). k > 1:
        the k highest local maxima of each series' periodogram, each at
        least `separation` from the higher ones, as
        ``lombscargle_multiband_batch(..., peaks=k, separation=separation)``
        defines them (rank 1 is the maximum); missing ranks are NaN.
    separation : float, optional
        The least distance between the frequencies of two ranked peaks, in
        cycles per unit of t (finite, >= 0; default 0). About
        ``1 / (time span)`` keeps a peak's side lobes out of the ranks; no
        effect with ``top_k=1``.
    id_col, t_col, y_col, dy_col : str, optional
        Column names; `dy_col` None: equal uncertainties.
    method, nterms_base, nterms_band, reg_base, reg_band, regularize_by_trace, center_data, fit_mean, normalization
        As in :func:`kernpack.timeseries.lombscargle_multiband_batch`
        (astropy's ``LombScargleMultiband`` and its ``power(method=)``).
    backend, assume_partitioned, npartitions, read_parquet_kwargs
        As in :func:`lombscargle_peaks`.

    Returns
    -------
    dask.dataframe.DataFrame
        Indexed by id (as :func:`lombscargle_peaks`), with columns ``n``
        (samples, int64), and at the highest power (the first of equal
        ones) ``frequency`` (cycles per unit of t), ``period``
        (``1 / frequency``) and ``power`` (float64); for ``top_k > 1`` then
        ``frequency_r``, ``period_r``, ``power_r`` of the r-th peak for
        r = 2..k.

    Notes
    -----
    Each partition is one :func:`kernpack.timeseries.lombscargle_multiband_batch`
    call with ``peaks=top_k`` on its series, its rows sorted by (id, t, y,
    dy, band) first, so the results do not depend on the order in which the
    shuffle delivered them: the same data, backend and dtype give the same
    numbers bitwise as that call on the series sorted that way. Computed in
    float32 when the time, value and uncertainty columns are all float32
    (the powers then widened to float64 exactly), else float64. Only the
    peaks of a partition are held with the flexible method (its
    periodograms are computed in chunks of series and reduced where they
    are made: on a GPU only the peaks leave the device); the fast method
    holds a partition's periodograms, ``nseries * nf`` values, and a GPU
    worker runs such calls one at a time. A partition without rows gives an
    empty table. The output metadata is given to Dask: the kernel never
    runs on empty or fake data to infer it.
    """
    options = dict(method=method, nterms_base=nterms_base, nterms_band=nterms_band, reg_base=reg_base,
                   reg_band=reg_band, regularize_by_trace=regularize_by_trace, center_data=center_data,
                   fit_mean=fit_mean, normalization=normalization, separation=separation)

    def batch_of(**kwargs):
        return lambda t, y, dy, offsets, bands: _ts.lombscargle_multiband_batch(t, y, bands, dy=dy, offsets=offsets,
                                                                               **options, **kwargs)

    # The flexible method's peaks come from chunks reduced where they are
    # computed; the fast method holds the partition's whole periodograms.
    table = functools.partial(_multiband_table, band_col=band_col)
    return _grid_peaks_survey("multiband-partition", table, batch_of, data, f0, df, nf, top_k, id_col, t_col, y_col,
                              dy_col, backend, assume_partitioned, npartitions, read_parquet_kwargs,
                              best=method == "flexible", extra_cols={"band_col": band_col})


def lombscargle_chi2_peaks(
    data: Any,
    f0: float,
    df: float,
    nf: int,
    *,
    nterms: int = 1,
    top_k: int = 1,
    separation: float = 0.0,
    refine: Any = None,
    fap: Optional[str] = None,
    id_col: str = "id",
    t_col: str = "t",
    y_col: str = "y",
    dy_col: Optional[str] = None,
    center_data: bool = True,
    fit_mean: bool = True,
    normalization: str = "standard",
    backend: Optional[str] = None,
    assume_partitioned: bool = False,
    npartitions: Optional[int] = None,
    read_parquet_kwargs: Optional[Dict[str, Any]] = None,
) -> "dd.DataFrame":
    """The highest periodogram peaks of every series of a survey table, by
    astropy's ``LombScargle`` (``method='chi2'``, any `nterms`), with their
    false-alarm probabilities if asked for.

    Parameters
    ----------
    data : dask.dataframe.DataFrame or path(s) of a Parquet dataset
        One row per sample: series id, time, value and optionally its
        uncertainty, read as in :func:`lombscargle_peaks`.
    f0, df, nf : float, float, int
        The grid ``f0 + k * df``, ``k = 0 .. nf-1``, in cycles per unit of t
        (not angular), the same for every series; checked here, with the
        options, before any partition runs.
    nterms : int, optional
        Harmonics of the model (default 1: the classic periodogram).
    top_k : int, optional
        Peaks per series, 1 to 256 (default 1: the highest power). k > 1:
        the k highest local maxima of each series' periodogram, each at
        least `separation` from the higher ones, as
        ``lombscargle_batch(..., peaks=k, separation=separation)`` defines
        them (rank 1 is the maximum); missing ranks are NaN.
    separation : float, optional
        The least distance between the frequencies of two ranked peaks, in
        cycles per unit of t (finite, >= 0; default 0). About
        ``1 / (time span)`` keeps a peak's side lobes out of the ranks; no
        effect with ``top_k=1``.
    refine : int or (int, int), optional
        Each peak refined on a finer grid about it, as in
        :func:`kernpack.timeseries.lombscargle_batch` (``(points, steps)``;
        default None: the grid's frequencies). The ranks stay the coarse
        ones: a refined rank can hold more power than the rank before it.
    fap : str, optional
        'baluev', 'davies', 'naive' or 'single': each peak's false-alarm
        probability, as in :func:`kernpack.timeseries.lombscargle_batch`
        (astropy's formulas, ``fmax`` the grid's last frequency; for
        ``nterms=1`` with `fit_mean` or `center_data` only).
    id_col, t_col, y_col, dy_col : str, optional
        Column names; `dy_col` None: equal uncertainties.
    center_data, fit_mean, normalization
        As in :func:`kernpack.timeseries.lombscargle_batch` (astropy's
        ``LombScargle``).
    backend, assume_partitioned, npartitions, read_parquet_kwargs
        As in :func:`lombscargle_peaks`.

    Returns
    -------
    dask.dataframe.DataFrame
        Indexed by id (as :func:`lombscargle_peaks`), with columns ``n``
        (samples, int64), and at the highest power (the first of equal
        ones) ``frequency`` (cycles per unit of t), ``period``
        (``1 / frequency``), ``power`` and, with `fap`, ``fap`` (float64);
        for ``top_k > 1`` then ``frequency_r``, ``period_r``, ``power_r``
        (and ``fap_r``) of the r-th peak for r = 2..k.

    Notes
    -----
    Each partition is one :func:`kernpack.timeseries.lombscargle_batch`
    call with ``peaks=top_k`` on its series, its rows sorted by (id, t, y,
    dy) first, so the results do not depend on the order in which the
    shuffle delivered them: the same data, backend and dtype give the same
    numbers bitwise as that call on the series sorted that way. Computed in
    float32 when the time, value and uncertainty columns are all float32
    (the powers then widened to float64 exactly), else float64. Only the
    peaks of a partition are held: its periodograms are computed in chunks
    of series and reduced where they are made (on a GPU only the peaks
    leave the device), so a GPU worker runs two such calls at a time. A
    partition without rows gives an empty table. The output metadata is
    given to Dask: the kernel never runs on empty or fake data to infer it.
    """
    options = dict(nterms=nterms, center_data=center_data, fit_mean=fit_mean, normalization=normalization,
                   separation=separation, refine=refine, fap=fap)

    def batch_of(**kwargs):
        return lambda t, y, dy, offsets: _ts.lombscargle_batch(t, y, dy=dy, offsets=offsets, **options, **kwargs)

    return _grid_peaks_survey("chi2-partition", _grid_peaks_table, batch_of, data, f0, df, nf, top_k, id_col, t_col,
                              y_col, dy_col, backend, assume_partitioned, npartitions, read_parquet_kwargs, best=True,
                              fap=fap)


def _bls_table(ids, offsets, t, y, dy, *, meta, search, backend):
    """Each series' best periods of one batched search
    (``bls_batch(..., peaks=top_k, **search)``): rank 1 is the first period
    of the highest power; where a rank has no peak (rank 1: no period has a
    box), power -inf and the other fields NaN."""
    # A partition's columns may arrive unaligned (buffers unpickled from
    # another worker): bls_batch takes aligned arrays, copied where needed.
    t, y = np.require(t, requirements="A"), np.require(y, requirements="A")
    dy = None if dy is None else np.require(dy, requirements="A")
    with _series_named_by_id(ids), _calls(backend, best=True):  # only the peaks are held
        got = _ts.bls_batch(t, y, dy=dy, offsets=offsets, backend=backend, **search)
    fields = {name: getattr(got, name) for name in _ts._BLS_FIELDS}
    fields["power"] = np.where(got.index >= 0, got.power, -np.inf)
    return _ranks_table(ids, offsets, meta, *(a.astype(np.float64) for a in (got.period, *fields.values())))


def bls(
    data: Any,
    period: Any,
    duration: Any,
    *,
    objective: str = "likelihood",
    oversample: int = 10,
    top_k: int = 1,
    separation: float = 0.0,
    id_col: str = "id",
    t_col: str = "t",
    y_col: str = "y",
    dy_col: Optional[str] = None,
    backend: Optional[str] = None,
    assume_partitioned: bool = False,
    npartitions: Optional[int] = None,
    read_parquet_kwargs: Optional[Dict[str, Any]] = None,
) -> "dd.DataFrame":
    """The box least squares transit search of every series of a survey
    table: each series' best trial period and its box (or its `top_k` best).

    Parameters
    ----------
    data : dask.dataframe.DataFrame or path(s) of a Parquet dataset
        One row per sample: series id, time, value and optionally its
        uncertainty, read as in :func:`lombscargle_peaks`.
    period, duration : float or 1-D array
        Trial periods and transit durations, in units of t, the same for
        every series (finite, positive, every duration shorter than every
        period); checked here, before any partition runs.
    objective, oversample
        As in :meth:`kernpack.timeseries.BoxLeastSquares.power`
        ('likelihood' or 'snr'; phase bins per shortest duration).
    top_k : int, optional
        Peaks per series, 1 to 256 (default 1: the highest power). k > 1:
        the k highest local maxima of each series' power over the periods
        (in the order given), each at least `separation` from the better
        ones, as ``bls_batch(..., peaks=k, separation=separation)`` defines
        them.
    separation : float, optional
        The least distance between the periods of two ranked peaks, in
        units of t (>= 0; default 0); no effect with ``top_k=1``.
    id_col, t_col, y_col, dy_col : str, optional
        Column names; `dy_col` None: every weight is 1, else weights
        ``1 / dy**2``.
    backend, assume_partitioned, npartitions, read_parquet_kwargs
        As in :func:`lombscargle_peaks`.

    Returns
    -------
    dask.dataframe.DataFrame
        Indexed by id (as :func:`lombscargle_peaks`), with columns ``n``
        (samples, int64) and, at the period of the highest power (the first
        of equal ones), ``period``, ``power``, ``depth``, ``depth_err``,
        ``duration``, ``transit_time``, ``depth_snr`` and ``log_likelihood``
        (float64); for ``top_k > 1`` then the same eight suffixed ``_r``
        (``period_2``, ``power_2``, ...) at the r-th peak, r = 2..k. Where
        a rank has no peak, its power is -inf and its other columns NaN: a
        series without a box at any period (no samples both in and out of
        transit with a depth >= 0) has none, rank 1 included.

    Notes
    -----
    Each partition is one :func:`kernpack.timeseries.bls_batch` call with
    ``peaks=top_k`` on its series in (id, t, y, dy) order, so the fields
    equal that call's on the series so sorted, bitwise: the rows of the
    whole search's results at the peaks' periods. float32 when the time,
    value and uncertainty columns are all float32 (then widened to float64
    exactly), else float64; the peaks are ranked by the float64 objective
    either way (in float32, rank 1 is ``np.argmax`` of the float32 powers
    unless their rounding made the highest ones equal). A partition without
    rows gives an empty table. Only the peaks of a partition are held: its
    search runs in chunks of series, each reduced where it is computed (on
    the GPU, on the device), so a GPU worker runs two such calls at a time,
    as for :func:`pdm`; a CPU worker one at a time.
    """
    top_k = _top_k(top_k, most=_MAX_PEAKS)
    search = dict(period=np.asarray(period), duration=np.asarray(duration), objective=objective,
                  oversample=oversample, peaks=top_k, separation=separation)
    # The grid and options checked once, on the client (an empty batch, on the
    # CPU); each partition's call casts the periods and durations to its
    # series' precision, as bls_batch does.
    empty = np.empty(0)
    _ts.bls_batch(empty, empty, offsets=np.zeros(1, np.intp), backend="cpu", **search)
    backend = None if backend is None else _context._check(backend)
    table_of = functools.partial(_bls_table, search=search, backend=backend)
    return _per_survey_partition("bls-partition", _rank_columns(("period", *_ts._BLS_FIELDS), top_k), table_of, data,
                                 id_col, t_col, y_col, dy_col, assume_partitioned, npartitions, read_parquet_kwargs,
                                 w_name="dy_col")


def _fold_table(ids, offsets, t, y, dy, *, meta, batch, backend):
    """Each series' best frequencies of one batched phase-folding call
    (``batch(t, y, dy, offsets)``, a :class:`kernpack.timeseries.FoldPeaks`
    of the table's ranks): rank 1 is the first of the lowest statistic, NaN
    where there is no peak (a series without spread has none)."""
    with _series_named_by_id(ids), _calls(backend, best=True):  # only the peaks are held
        got = batch(t, y, dy, offsets)
    with np.errstate(divide="ignore"):
        period = 1.0 / got.frequency
    return _ranks_table(ids, offsets, meta, got.frequency, period, got.value)


def _fold_survey(label, value, batch_of, data, frequency, f0, df, nf, top_k, separation, id_col, t_col, y_col, dy_col,
                 backend, assume_partitioned, npartitions, read_parquet_kwargs):
    """A phase-folding search of every series of `data`, its table's
    statistic column named `value`: the frequencies and options checked once
    on the client (an empty batch on the CPU), then one ``batch_of(frequency=
    or f0=, df=, nf=, peaks=, separation=, backend=)`` call per partition."""
    top_k = _top_k(top_k, most=_MAX_PEAKS)
    search = dict(frequency=None if frequency is None else np.asarray(frequency), f0=f0, df=df, nf=nf,
                  peaks=top_k, separation=separation)
    empty = np.empty(0)
    batch_of(**search, backend="cpu")(empty, empty, None, np.zeros(1, np.intp))
    backend = None if backend is None else _context._check(backend)
    table_of = functools.partial(_fold_table, batch=batch_of(**search, backend=backend), backend=backend)
    return _per_survey_partition(label, _peaks_columns(top_k, value), table_of, data, id_col, t_col, y_col, dy_col,
                                 assume_partitioned, npartitions, read_parquet_kwargs, w_name="dy_col")


def pdm(
    data: Any,
    frequency: Any = None,
    *,
    f0: Optional[float] = None,
    df: Optional[float] = None,
    nf: Optional[int] = None,
    bins: int = 10,
    top_k: int = 1,
    separation: float = 0.0,
    id_col: str = "id",
    t_col: str = "t",
    y_col: str = "y",
    dy_col: Optional[str] = None,
    backend: Optional[str] = None,
    assume_partitioned: bool = False,
    npartitions: Optional[int] = None,
    read_parquet_kwargs: Optional[Dict[str, Any]] = None,
) -> "dd.DataFrame":
    """Phase dispersion minimisation of every series of a survey table: each
    series' best trial frequency, where PDM's theta is lowest (or its
    `top_k` best).

    Parameters
    ----------
    data : dask.dataframe.DataFrame or path(s) of a Parquet dataset
        One row per sample: series id, time, value and optionally its
        uncertainty, read as in :func:`lombscargle_peaks`.
    frequency : array_like, optional
        Trial frequencies in cycles per unit of t (not angular), the same
        for every series; or the uniform grid `f0`, `df`, `nf`
        (``f0 + k * df``). Checked here, with `bins`, before any partition
        runs.
    bins : int, optional
        Phase bins, as in :func:`kernpack.timeseries.pdm`.
    top_k : int, optional
        Peaks per series, 1 to 256 (default 1: the lowest theta). k > 1:
        the k lowest local minima of each series' theta, each at least
        `separation` from the better ones, as
        ``pdm_batch(..., peaks=k, separation=separation)`` defines them;
        missing ranks are NaN.
    separation : float, optional
        The least distance between the frequencies of two ranked peaks, in
        cycles per unit of t (>= 0; default 0). About ``1 / (time span)``
        keeps a peak's side lobes out of the ranks; no effect with
        ``top_k=1``.
    id_col, t_col, y_col, dy_col : str, optional
        Column names; `dy_col` None: every weight is 1, else weights
        ``1 / dy**2``.
    backend, assume_partitioned, npartitions, read_parquet_kwargs
        As in :func:`lombscargle_peaks`.

    Returns
    -------
    dask.dataframe.DataFrame
        Indexed by id (as :func:`lombscargle_peaks`), with columns ``n``
        (samples, int64), and at the lowest theta (the first of equal ones)
        ``frequency``, ``period`` (``1 / frequency``) and ``theta`` (float64);
        for ``top_k > 1`` then ``frequency_r``, ``period_r``, ``theta_r`` of
        the r-th peak for r = 2..k. A series without spread (constant
        values, or one sample) has NaN in all of them. Frequency 0, where a
        `frequency` array holds it, is searched like any other (its period
        is inf).

    Notes
    -----
    Each partition is one :func:`kernpack.timeseries.pdm_batch` call with
    ``peaks=top_k`` on its series in (id, t, y, dy) order, so the values
    equal that call's on the series so sorted, bitwise (and rank 1 the
    first lowest value of ``pdm_batch``'s rows); float32 when the time,
    value and uncertainty columns are all float32 (then widened to float64
    exactly), else float64, and ``frequency`` is the frequency as searched
    (a `frequency` array in that dtype, a grid in float64). Only the peaks
    of a partition are held: its statistic is computed in chunks of series
    and reduced where it is made (on the GPU, on the device).
    """
    statistic = dict(bins=bins)

    def batch_of(**kwargs):
        return lambda t, y, dy, offsets: _ts.pdm_batch(t, y, dy, offsets=offsets, **statistic, **kwargs)

    return _fold_survey("pdm-partition", "theta", batch_of, data, frequency, f0, df, nf, top_k, separation, id_col,
                        t_col, y_col, dy_col, backend, assume_partitioned, npartitions, read_parquet_kwargs)


def conditional_entropy(
    data: Any,
    frequency: Any = None,
    *,
    f0: Optional[float] = None,
    df: Optional[float] = None,
    nf: Optional[int] = None,
    phase_bins: int = 10,
    mag_bins: int = 5,
    phase_overlap: int = 0,
    mag_overlap: int = 0,
    top_k: int = 1,
    separation: float = 0.0,
    id_col: str = "id",
    t_col: str = "t",
    y_col: str = "y",
    backend: Optional[str] = None,
    assume_partitioned: bool = False,
    npartitions: Optional[int] = None,
    read_parquet_kwargs: Optional[Dict[str, Any]] = None,
) -> "dd.DataFrame":
    """The conditional entropy search of every series of a survey table:
    each series' best trial frequency, where the entropy H is lowest (or its
    `top_k` best).

    Parameters as :func:`pdm` (no uncertainties: the statistic does not use
    them; `top_k` and `separation` alike), with the binning of
    :func:`kernpack.timeseries.conditional_entropy` (`phase_bins`,
    `mag_bins`, `phase_overlap`, `mag_overlap`).

    Returns
    -------
    dask.dataframe.DataFrame
        Indexed by id, with columns ``n`` (int64), and at the lowest H (the
        first of equal ones) ``frequency``, ``period`` and ``entropy``
        (float64), for ``top_k > 1`` then ``frequency_r``, ``period_r``,
        ``entropy_r`` for r = 2..k; NaN in all of them for a series without
        spread.

    Notes
    -----
    Each partition is one :func:`kernpack.timeseries.conditional_entropy_batch`
    call with ``peaks=top_k`` on its series in (id, t, y) order, as in
    :func:`pdm`.
    """
    statistic = dict(phase_bins=phase_bins, mag_bins=mag_bins, phase_overlap=phase_overlap, mag_overlap=mag_overlap)

    def batch_of(**kwargs):
        return lambda t, y, dy, offsets: _ts.conditional_entropy_batch(t, y, offsets=offsets, **statistic, **kwargs)

    return _fold_survey("ce-partition", "entropy", batch_of, data, frequency, f0, df, nf, top_k, separation, id_col,
                        t_col, y_col, None, backend, assume_partitioned, npartitions, read_parquet_kwargs)


# --------------------------------------------------------------------------
# Box and Gaussian filters of large arrays
# --------------------------------------------------------------------------


def uniform_filter(
    darr: Any,
    size: Any = 3,
    mode: Any = "reflect",
    cval: float = 0.0,
    origin: Any = 0,
    *,
    axes: Optional[Any] = None,
    backend: Optional[str] = None,
) -> "da.Array":
    """``scipy.ndimage.uniform_filter`` of a large Dask array, chunk by chunk.

    Parameters
    ----------
    darr : dask.array.Array (or array_like)
        NumPy or CuPy blocks, of any number of dimensions.
    size, mode, cval, origin, axes, backend
        As in :func:`kernpack.ndimage.uniform_filter`, which filters each
        block: kernpack computes (u)int8 to (u)int64, bool, float32 and
        float64 arrays of any rank, a size, origin and mode per axis; what
        its kernels do not compute runs ``scipy.ndimage.uniform_filter`` on
        each NumPy block and ``cupyx.scipy.ndimage.uniform_filter`` on each
        CuPy block, with the overlap it needs.

    Returns
    -------
    dask.array.Array
        The filtered array, the input's dtype: equal to
        ``scipy.ndimage.uniform_filter`` of the whole array (integers and
        bool exactly, as the single-array call; floats to rounding: the
        sums run in another order).

    Raises
    ------
    NotImplementedError, RuntimeError, TypeError, ValueError
        As :func:`kernpack.ndimage.uniform_filter` (and SciPy), before
        anything is computed.

    Notes
    -----
    ``map_overlap`` with, per filtered axis, the window's reach as depth
    (``max(n // 2 + origin, n - 1 - (n // 2 + origin))`` for size n): every
    block is extended by the neighbouring blocks' edges, filtered in one
    call, and trimmed, so inner chunk edges see real neighbours (each pass
    along an axis reads only points within its window along that axis, so
    the blocks' passes, stored in the dtype as the whole array's are, give
    the whole array's values). The boundary mode of an axis acts only at the
    array's outer edges: there the filter applies it itself
    (``boundary='none'``: the block's outer side is the array's edge),
    except 'wrap' (and 'grid-wrap'), whose outer sides are extended from the
    opposite edge (``boundary='periodic'``). Chunks thinner than the depth
    are merged by Dask first, and an axis not longer than the depth is taken
    as one chunk, so the result's chunks may differ from the input's.
    """
    darr = da.asarray(darr)
    kwargs = {"mode": mode, "cval": cval, "origin": origin}
    if axes is not None:
        kwargs["axes"] = axes
    try:
        # The single-array function's checks and errors, for an array of
        # this rank and dtype (blocks of its dtype into their own dtype).
        call = _ndimage._uniform_call(darr.ndim, size, mode, cval, origin, axes)
        dtype = np.dtype(darr.dtype)
        if not call.fused_2d(dtype, dtype):
            first, work = _ndimage._uniform_dtypes(dtype, dtype)
            _ndimage._uniform_steps(call, first, work, dtype == np.bool_)
        depths, boundaries = call.depths(), call.boundaries()
    except _ndimage._NotComputed as e:
        depths, boundaries = _scipy_overlap(darr, size, mode, origin, axes, backend, e, kwargs)
    if darr.size == 0:
        return darr.copy()
    # Each block as a single array: kernpack's kernels, or what stands in for
    # them (SciPy for NumPy blocks, cupyx.scipy for CuPy's, on their own GPU).
    block = functools.partial(_ndimage.uniform_filter, size=size, backend=backend, **kwargs)
    if not any(depths):
        return darr.map_blocks(block, dtype=darr.dtype, meta=meta_from_array(darr))
    return _overlapped(darr, block, depths, boundaries)


def _scipy_overlap(darr, size, mode, origin, axes, backend, not_computed, kwargs):
    """The overlap (depths, boundaries) of a call that kernpack's kernels do
    not compute, SciPy on each NumPy block (cupyx.scipy on each CuPy block),
    once their checks have passed (their errors raised here, before anything
    is computed)."""
    _scipy_checks(darr, "uniform_filter", mode, backend, not_computed, (size,), kwargs)
    listed = _ndimage._rank_axes(axes, darr.ndim)
    sizes, modes, origins = (_ndimage._normalize_sequence(v, len(listed)) for v in (size, mode, origin))
    depths, boundaries = [0] * darr.ndim, ["none"] * darr.ndim
    for axis, s, m, o in zip(listed, sizes, modes, origins):
        # SciPy leaves an axis with a size below 2 unfiltered; it filters int(size).
        n = int(s)
        if s > 1 and n > 1:
            axis = normalize_axis_index(axis, darr.ndim)
            depths[axis] = max(n // 2 + int(o), n - 1 - (n // 2 + int(o)))
            boundaries[axis] = "periodic" if m in ("wrap", "grid-wrap") else "none"
    return depths, boundaries


def _scipy_checks(darr, name, mode, backend, not_computed, args, kwargs):
    """Where kernpack's kernels do not compute a call: SciPy's ``name`` on
    each NumPy block (cupyx.scipy's on each CuPy block) where one may stand
    in (``not_computed.refusal`` otherwise), and its checks and errors raised
    now, before anything is computed."""
    meta = meta_from_array(darr)
    if type(meta) is np.ndarray:
        library = None
    else:
        view = device_array(meta)  # None for blocks of no device library (sparse, masked): nothing stands in
        library = type(meta).__module__ if view is None else _ndimage._library([view])
    _ndimage._scipy_standing_in(not_computed, mode, backend, library, name)
    # SciPy's own checks and errors (cupyx makes SciPy's), on a tiny host
    # array, so the client needs no GPU.
    # (The dtype is checked by SciPy for NumPy blocks only: cupyx takes more.)
    checked = darr.dtype if library is None else np.float64
    with contextlib.suppress(ImportError):
        _ndimage._defined_filter("scipy.ndimage", name)(np.zeros((1,) * darr.ndim, dtype=checked), *args, **kwargs)


def _overlapped(darr, block, depths, boundaries):
    """`block` on every block extended by `depths` (per axis) of its
    neighbours, then trimmed."""
    depth, boundary = {}, {}
    for axis, length in enumerate(darr.shape):
        if len(darr.chunks[axis]) == 1 or length <= depths[axis]:
            depth[axis], boundary[axis] = 0, "none"
            if len(darr.chunks[axis]) > 1:
                darr = darr.rechunk({axis: -1})
        else:
            depth[axis], boundary[axis] = depths[axis], boundaries[axis]
    return darr.map_overlap(block, depth=depth, boundary=boundary, trim=True, dtype=darr.dtype,
                            meta=meta_from_array(darr))


def gaussian_filter(
    darr: Any,
    sigma: Any,
    order: Any = 0,
    mode: Any = "reflect",
    cval: float = 0.0,
    truncate: float = 4.0,
    *,
    radius: Optional[Any] = None,
    axes: Optional[Any] = None,
    backend: Optional[str] = None,
) -> "da.Array":
    """``scipy.ndimage.gaussian_filter`` of a large Dask array, chunk by chunk.

    Parameters
    ----------
    darr : dask.array.Array (or array_like)
        NumPy or CuPy blocks, any number of dimensions.
    sigma, order, mode, cval, truncate, radius, axes, backend
        As in :func:`kernpack.ndimage.gaussian_filter`, which filters each
        block (there is no `output`: the result is a new Dask array): what
        kernpack's kernels do not compute runs
        ``scipy.ndimage.gaussian_filter`` on each NumPy block and
        ``cupyx.scipy.ndimage.gaussian_filter`` on each CuPy block, with the
        overlap it needs.

    Returns
    -------
    dask.array.Array
        The filtered array, the input's dtype: equal to
        ``scipy.ndimage.gaussian_filter`` of the whole array (to rounding:
        kernpack sums float32 in float32, SciPy in float64).

    Raises
    ------
    NotImplementedError, RuntimeError, TypeError, ValueError
        As :func:`kernpack.ndimage.gaussian_filter` (and SciPy), before
        anything is computed.

    Notes
    -----
    ``map_overlap`` with depth the Gaussian's radius on each filtered axis
    (`radius`, or ``int(truncate * sigma + 0.5)``; 0 on the axes not filtered
    and those whose sigma is not above 1e-15): every block is extended by
    the neighbouring blocks' edges (corners included, which the later passes
    read), filtered in one call, and trimmed. The boundary modes act only at
    the array's outer edges, as in :func:`uniform_filter`: there the filter
    applies each axis's mode itself (``boundary='none'``), except 'wrap' and
    'grid-wrap', whose outer sides are extended from the opposite edge
    (``boundary='periodic'``). Chunks thinner than the depth are merged by
    Dask first, and an axis not longer than the depth is taken as one chunk,
    so the result's chunks may differ from the input's.
    """
    darr = da.asarray(darr)
    kwargs = {name: v for name, v in (("radius", radius), ("axes", axes)) if v is not None}

    def computed():
        return _ndimage._gaussian_passes(sigma, order, mode, cval, truncate, radius, axes, darr.ndim)

    def scipy_depths():
        filtered = _ndimage._checked_axes(axes, darr.ndim)
        n = len(filtered)
        sigmas, modes, radii = (_ndimage._normalize_sequence(v, n) for v in (sigma, mode, radius))
        return [(axis, s, m, r) for axis, s, m, r in zip(filtered, sigmas, modes, radii) if s > 1e-15]

    block = functools.partial(_ndimage.gaussian_filter, sigma=sigma, order=order, mode=mode, cval=cval,
                              truncate=truncate, radius=radius, axes=axes, backend=backend)
    return _gaussian_blocks(darr, "gaussian_filter", computed, scipy_depths, truncate, backend, (sigma, order),
                            dict(mode=mode, cval=cval, truncate=truncate, **kwargs), block)


def gaussian_filter1d(
    darr: Any,
    sigma: float,
    axis: int = -1,
    order: int = 0,
    mode: str = "reflect",
    cval: float = 0.0,
    truncate: float = 4.0,
    *,
    radius: Optional[int] = None,
    backend: Optional[str] = None,
) -> "da.Array":
    """``scipy.ndimage.gaussian_filter1d`` of a large Dask array, chunk by chunk.

    Parameters
    ----------
    darr : dask.array.Array (or array_like)
        NumPy or CuPy blocks, at least 1-D.
    sigma, axis, order, mode, cval, truncate, radius, backend
        As in :func:`kernpack.ndimage.gaussian_filter1d`, which filters each
        block (no `output`); what kernpack's kernels do not compute runs
        SciPy (cupyx.scipy) on each block, as in :func:`gaussian_filter`.

    Returns
    -------
    dask.array.Array
        The filtered array, the input's dtype: equal to
        ``scipy.ndimage.gaussian_filter1d`` of the whole array (to rounding).

    Raises
    ------
    NotImplementedError, RuntimeError, TypeError, ValueError
        As :func:`kernpack.ndimage.gaussian_filter1d` (and SciPy), before
        anything is computed.

    Notes
    -----
    As :func:`gaussian_filter`, with the overlap on `axis` only.
    """
    darr = da.asarray(darr)
    kwargs = {} if radius is None else {"radius": radius}

    def computed():
        return [_ndimage._gaussian_pass(sigma, axis, order, mode, cval, truncate, radius, darr.ndim)]

    def scipy_depths():
        # gaussian_filter1d filters whatever its sigma (a negative one with a radius given).
        return [(normalize_axis_index(axis, darr.ndim), sigma, mode, radius)]

    block = functools.partial(_ndimage.gaussian_filter1d, sigma=sigma, axis=axis, order=order, mode=mode, cval=cval,
                              truncate=truncate, radius=radius, backend=backend)
    return _gaussian_blocks(darr, "gaussian_filter1d", computed, scipy_depths, truncate, backend, (sigma, axis, order),
                            dict(mode=mode, cval=cval, truncate=truncate, **kwargs), block)


def _gaussian_blocks(darr, name, computed, scipy_depths, truncate, backend, args, kwargs, block):
    """`block` (kernpack's ``name`` with the call's arguments) on every block
    of `darr` with the overlap of its passes. ``computed()``: kernpack's
    passes (axis, weights, origin, mode, cval), or _NotComputed; then
    ``scipy_depths()``: (axis, sigma, mode, radius) of each axis SciPy filters
    once its checks have passed."""
    depths, boundaries = [0] * darr.ndim, ["none"] * darr.ndim
    try:
        passes = computed()
        if darr.dtype.newbyteorder("=") not in FLOAT_DTYPES:
            raise _ndimage._NotComputed(
                f"input is {darr.dtype}: kernpack's {name} computes float32 and float64 arrays; "
                "pass darr.astype(np.float32) or np.float64"
            )
        for axis, weights, _, kind, _ in passes:
            depths[axis] = max(depths[axis], len(weights) // 2)
            boundaries[axis] = "periodic" if kind == "wrap" else "none"
    except _ndimage._NotComputed as e:
        _scipy_checks(darr, name, None, backend, e, args, kwargs)
        for axis, s, m, r in scipy_depths():
            depths[axis] = max(depths[axis], int(truncate * float(s) + 0.5) if r is None else int(r))
            boundaries[axis] = "periodic" if m in ("wrap", "grid-wrap") else "none"
    if darr.size == 0:
        return darr.copy()
    if not any(depths):
        return darr.map_blocks(block, dtype=darr.dtype, meta=meta_from_array(darr))
    return _overlapped(darr, block, depths, boundaries)


def median_filter(
    darr: Any,
    size: Any = None,
    footprint: Any = None,
    mode: Any = "reflect",
    cval: float = 0.0,
    origin: Any = 0,
    *,
    axes: Optional[Any] = None,
    backend: Optional[str] = None,
) -> "da.Array":
    """``scipy.ndimage.median_filter`` of a large Dask array, chunk by chunk.

    Parameters
    ----------
    darr : dask.array.Array (or array_like)
        NumPy or CuPy blocks, any number of dimensions.
    size, footprint, mode, cval, origin, axes, backend
        As in :func:`kernpack.ndimage.median_filter`, which filters each
        block (there is no `output`: the result is a new Dask array): what
        kernpack's kernels do not compute runs SciPy's filter on each NumPy
        block and cupyx.scipy's on each CuPy block, with the overlap it needs.

    Returns
    -------
    dask.array.Array
        The filtered array, the input's dtype: equal to
        ``scipy.ndimage.median_filter`` of the whole array (exactly: a rank
        filter selects one of the window's values).

    Raises
    ------
    NotImplementedError, RuntimeError, TypeError, ValueError
        As :func:`kernpack.ndimage.median_filter` (and SciPy), before
        anything is computed.

    Notes
    -----
    ``map_overlap`` with, per axis, the footprint's reach as depth (``n //
    2 + origin`` points before a point and ``n - 1 - (n // 2 + origin)``
    after it, the larger of the two; 0 on axes of size 1): every block is
    extended by the neighbouring blocks' edges, filtered in one call and
    trimmed. The boundary mode acts only at the array's outer edges, as in
    :func:`uniform_filter` ('wrap' and 'grid-wrap' through
    ``boundary='periodic'``); the result's chunks may differ from the
    input's where Dask merges chunks thinner than the depth.
    """
    return _rank_blocks("median_filter", "median", None, darr, size, footprint, mode, cval, origin, axes, backend)


def rank_filter(
    darr: Any,
    rank: int,
    size: Any = None,
    footprint: Any = None,
    mode: Any = "reflect",
    cval: float = 0.0,
    origin: Any = 0,
    *,
    axes: Optional[Any] = None,
    backend: Optional[str] = None,
) -> "da.Array":
    """``scipy.ndimage.rank_filter`` of a large Dask array, chunk by chunk:
    as :func:`median_filter`, with `rank` as in
    :func:`kernpack.ndimage.rank_filter`."""
    return _rank_blocks("rank_filter", "rank", rank, darr, size, footprint, mode, cval, origin, axes, backend)


def percentile_filter(
    darr: Any,
    percentile: float,
    size: Any = None,
    footprint: Any = None,
    mode: Any = "reflect",
    cval: float = 0.0,
    origin: Any = 0,
    *,
    axes: Optional[Any] = None,
    backend: Optional[str] = None,
) -> "da.Array":
    """``scipy.ndimage.percentile_filter`` of a large Dask array, chunk by
    chunk: as :func:`median_filter`, with `percentile` as in
    :func:`kernpack.ndimage.percentile_filter`."""
    return _rank_blocks("percentile_filter", "percentile", percentile, darr, size, footprint, mode, cval, origin,
                        axes, backend)


def _rank_blocks(name, operation, rank, darr, size, footprint, mode, cval, origin, axes, backend):
    """kernpack's rank filter ``name`` on every block of `darr`, with the
    footprint's overlap; SciPy's errors (and its warning for both `size`
    and `footprint`) raised once, before anything is computed."""
    darr = da.asarray(darr)
    if size is not None and footprint is not None:
        import warnings

        warnings.warn("ignoring size because footprint is set", UserWarning, stacklevel=3)
        size = None
    kwargs = dict(size=size, footprint=footprint, mode=mode, cval=cval, origin=origin)
    if axes is not None:
        kwargs["axes"] = axes
    args = () if operation == "median" else (rank,)
    by_name = {} if operation == "median" else {operation: rank}  # the second parameter's name
    try:
        call = _ndimage._rank_call(operation, rank, np.dtype(darr.dtype), darr.ndim, size, footprint, mode, cval,
                                   origin, axes)
        if type(meta_from_array(darr)) is np.ndarray and _ndimage._rank_dtype(darr.dtype) is None:
            raise _ndimage._NotComputed(f"input is {darr.dtype}: kernpack's {name} does not compute it")
        depths = call.depths()
        boundaries = ["periodic" if call.mode == "wrap" else "none"] * darr.ndim
    except _ndimage._NotComputed as e:
        _scipy_checks(darr, name, None, backend, e, args, kwargs)
        fp, origins, modes = _ndimage._rank_geometry(darr.ndim, size, footprint, origin, mode, axes)
        depths = [max(n // 2 + int(o), n - 1 - (n // 2 + int(o))) for n, o in zip(fp.shape, origins)]
        modes = [modes] * darr.ndim if isinstance(modes, str) else list(modes)
        boundaries = ["periodic" if m in ("wrap", "grid-wrap") else "none" for m in modes]
    if darr.size == 0:
        return darr.copy()
    block = functools.partial(getattr(_ndimage, name), backend=backend, **by_name, **kwargs)
    if not any(depths):
        return darr.map_blocks(block, dtype=darr.dtype, meta=meta_from_array(darr))
    return _overlapped(darr, block, depths, boundaries)


# --------------------------------------------------------------------------
# Ensembles split by members
# --------------------------------------------------------------------------


def _ensemble_block(block, *columns, fn, steps, every, save_at, kwargs, names=(), block_info=None):
    if "member_offset" in kwargs:
        # Lorenz 96's noise is keyed by the member's index in the whole ensemble.
        first = block_info[0]["array-location"][0][0] if block_info else 0
        kwargs = dict(kwargs, member_offset=kwargs["member_offset"] + first)
    # Each per-member parameter arrives as its (members, 1) column of this block's members.
    kwargs = dict(kwargs, **{name: column.reshape(-1) for name, column in zip(names, columns)})
    run = fn(block, steps, every=every, save_at=save_at, **kwargs)
    # With a trajectory, the block holds it and then the final states (NumPy
    # hands CuPy blocks to CuPy's concatenate).
    return run.final if run.trajectory is None else np.concatenate([run.trajectory, run.final[None]], axis=0)


def _member_column(name, values, x):
    """`values` given per member of the states `x` (members x values, whole
    states per block) as a ``(members, 1)`` column in `x`'s dtype and member
    chunks, so that each block gets its own members' values; one value per
    member, on the side (NumPy or CuPy blocks) of `x`."""
    members, kind = x.shape[0], type(meta_from_array(x))
    a = da.asarray(values)
    if a.shape != (members,):
        raise ValueError(f"{name} must be one value or {members} values (one per member), got shape {a.shape}")
    if type(meta_from_array(a)) is not kind:
        raise TypeError(f"{name} holds {type(meta_from_array(a)).__name__} blocks but initial "
                        f"{kind.__name__} blocks: pass both on one side")
    return a.astype(x.dtype)[:, None].rechunk((x.chunks[0], 1))


def _ensemble(fn, initial, steps, every, save_at, kwargs, per_member=("forcing", "b", "c")) -> "_ode.Ensemble":
    """`kwargs` of the names in `per_member` that are not scalars hold one
    value per member: each block gets its members' values."""
    steps, every = _ode._counts(steps=steps, every=every)
    save = _ode._save_steps(save_at, steps)
    if every and save:
        raise ValueError(f"give either every (= {every}) or save_at, not both")
    x = da.asarray(initial)
    dtype = np.dtype(np.float32 if x.dtype == np.float32 else np.float64)
    _ode._state_shape(x.shape)
    # One block = whole member states.
    x = (x[None, :] if x.ndim == 1 else x).astype(dtype).rechunk({1: -1})
    names = sorted(k for k in per_member if k in kwargs and np.ndim(kwargs[k]) != 0)
    columns = []
    for name in names:
        columns.append(_member_column(name, kwargs[name], x))
    kwargs = {k: v for k, v in kwargs.items() if k not in names}
    # The single-process function's checks and errors, on one member for zero
    # steps (a per-member parameter probed as one value; its values are
    # checked by each block's run); the saved steps against `steps`.
    params = {k: v for k, v in kwargs.items() if k != "backend"}
    fn(np.zeros((1, x.shape[1]), dtype), 0, every=0, backend="cpu", **params, **{name: 1.0 for name in names})
    if save:
        _check_save_at(save, steps)
    frames = len(save) if save else _frame_count(steps, every)
    block = dict(fn=fn, steps=steps, kwargs=kwargs, names=names)
    if not frames:
        final = da.map_blocks(_ensemble_block, x, *columns, every=0, save_at=None, dtype=dtype,
                              meta=meta_from_array(x), **block)
        return _ode.Ensemble(final, None)
    both = da.map_blocks(
        _ensemble_block, x, *columns, every=every, save_at=save,
        new_axis=[0], chunks=((frames + 1,),) + x.chunks, dtype=dtype, meta=meta_from_array(x, ndim=3), **block,
    )
    return _ode.Ensemble(both[-1], both[:-1])


def lorenz96(
    initial: Any,
    steps: int,
    *,
    forcing: float = 8.0,
    dt: float = 0.05,
    every: int = 0,
    forcing_in_state: bool = False,
    noise: float = 0.0,
    seed: int = 0,
    member_offset: int = 0,
    step_offset: int = 0,
    save_at: Any = None,
    backend: Optional[str] = None,
) -> "_ode.Ensemble":
    """:func:`kernpack.ode.lorenz96` of an ensemble chunked by members.

    Parameters
    ----------
    initial : dask.array.Array (or array_like)
        ``(members, N)`` initial states, chunked along members (a chunking
        along N is undone: each block holds whole states); NumPy or CuPy
        blocks.
    steps, forcing, dt, every, forcing_in_state, noise, seed, member_offset, step_offset, save_at, backend
        As in :func:`kernpack.ode.lorenz96`; each block draws the noise of its
        members' indices in the whole ensemble.

    Returns
    -------
    kernpack.ode.Ensemble
        Of Dask arrays: ``final`` ``(members, N)`` chunked as the members,
        and with ``every > 0`` or `save_at` ``trajectory`` ``(frames, members, N)``. Each
        block is one ensemble call; computing both together
        (``dask.compute(run.final, run.trajectory)``) runs it once. Members
        are independent, so the blocks equal the one-call result bitwise on
        the same backend.
    """
    kwargs = dict(forcing=forcing, dt=dt, forcing_in_state=forcing_in_state, noise=noise, seed=seed,
                  member_offset=member_offset, step_offset=step_offset, backend=backend)
    return _ensemble(_ode.lorenz96, initial, steps, every, save_at, kwargs)


def lorenz05(
    initial: Any,
    steps: int,
    *,
    model: int = 3,
    forcing: Any = 15.0,
    k: int = 32,
    j: int = 12,
    b: Any = 10.0,
    c: Any = 3.0,
    dt: float = 0.001,
    every: int = 0,
    save_at: Any = None,
    backend: Optional[str] = None,
) -> "_ode.Ensemble":
    """:func:`kernpack.ode.lorenz05` (Model II or III) of an ensemble chunked
    by members; parameters and result as :func:`lorenz96` and
    :func:`kernpack.ode.lorenz05`. `forcing`, `b`, `c` given per member
    (``(members,)`` arrays, Dask or not, with blocks of the states' kind)
    are split with the members: each block runs with its members' values."""
    kwargs = dict(model=model, forcing=forcing, k=k, j=j, b=b, c=c, dt=dt, backend=backend)
    return _ensemble(_ode.lorenz05, initial, steps, every, save_at, kwargs)


def _lorenz63_members(initial: Any, sigma: Any, rho: Any, beta: Any):
    """A Lorenz 63 ensemble's inputs in blocks of members: the states
    ``(members, 3)`` in one float dtype, whole states in each block; whether
    `initial` was one state; the values shared by every member, by name; and
    the names of those given per member (sorted) with each one's values as a
    ``(members, 1)`` column in the states' member chunks, so that each block
    gets its own members' values."""
    x = da.asarray(initial)
    dtype = np.dtype(np.float32 if x.dtype == np.float32 else np.float64)
    if x.shape[-1:] != (3,) or x.ndim not in (1, 2) or x.size == 0:
        raise ValueError(f"initial must be (members, 3) states (or one state of 3), got shape {x.shape}")
    one = x.ndim == 1
    # One block = whole member states.
    x = (x[None, :] if one else x).astype(dtype).rechunk({1: -1})
    given = {"sigma": sigma, "rho": rho, "beta": beta}
    shared = {k: float(v) for k, v in given.items() if np.ndim(v) == 0}
    columns = {}
    for name in (k for k in given if k not in shared):
        columns[name] = _member_column(name, given[name], x)
    names = sorted(columns)
    return x, one, shared, names, [columns[name] for name in names]


def _lorenz63_block(block, *each, names, steps, save_at, params):
    # Each per-member parameter arrives as its (members, 1) column of this block's members.
    params = dict(params, **{name: column.reshape(-1) for name, column in zip(names, each)})
    run = _ode.lorenz63(block, steps=steps, save_at=save_at, **params)
    # With saved steps, the block holds them and then the final states (NumPy
    # hands CuPy blocks to CuPy's concatenate).
    return np.concatenate([run.saved, run.final[None]], axis=0) if save_at else run.final


def lorenz63(
    initial: Any,
    steps: int,
    *,
    sigma: Any = 10.0,
    rho: Any = 28.0,
    beta: Any = 8.0 / 3.0,
    dt: float = 0.01,
    save_at: Any = None,
    backend: Optional[str] = None,
) -> "_ode.Lorenz63Run":
    """:func:`kernpack.ode.lorenz63` of an ensemble chunked by members.

    Parameters
    ----------
    initial : dask.array.Array (or array_like)
        ``(members, 3)`` initial states (or one state ``(3,)``), chunked
        along members (a chunking along the 3 is undone); NumPy or CuPy blocks.
    steps : int
        RK4 steps of `dt`.
    sigma, rho, beta : float, dask.array.Array or array_like, optional
        One value for every member, or one per member (``(members,)``), in
        blocks of the same kind as `initial`'s; rechunked to `initial`'s
        members, so that each block gets its own members' values.
    dt, save_at, backend
        As in :func:`kernpack.ode.lorenz63`.

    Returns
    -------
    kernpack.ode.Lorenz63Run
        Of Dask arrays: ``final`` ``(members, 3)`` chunked as the members,
        and with `save_at` ``saved`` ``(len(save_at), members, 3)``. Each
        block is one ensemble call; computing both together
        (``dask.compute(run.final, run.saved)``) runs it once. Members are
        independent, so the blocks equal the one-call result bitwise on the
        same backend.
    """
    (steps,) = _ode._counts(steps=steps)
    save = _ode._save_steps(save_at, steps)
    _check_save_at(save, steps)
    x, one, shared, names, arrays = _lorenz63_members(initial, sigma, rho, beta)
    dtype = x.dtype
    # The single-process function's checks and errors (dt, the shared
    # values, the backend's name), on one member for zero steps.
    probe = {name: np.zeros(1, dtype) for name in names}
    _ode.lorenz63(np.zeros((1, 3), dtype), dt=dt, steps=0, backend="cpu", **shared, **probe)
    params = dict(shared, dt=float(dt), backend=backend)
    kwargs = dict(names=names, steps=steps, save_at=save, params=params)
    if not save:
        final = da.map_blocks(_lorenz63_block, x, *arrays, dtype=dtype, meta=meta_from_array(x), **kwargs)
        return _ode.Lorenz63Run(final[0] if one else final, None)
    both = da.map_blocks(
        _lorenz63_block, x, *arrays, new_axis=[0], chunks=((len(save) + 1,),) + x.chunks, dtype=dtype,
        meta=meta_from_array(x, ndim=3), **kwargs,
    )
    final, saved = both[-1], both[:-1]
    return _ode.Lorenz63Run(final[0], saved[:, 0]) if one else _ode.Lorenz63Run(final, saved)


def _lorenz63_adaptive_block(block, *each, names, t_eval, params):
    # Each per-member parameter arrives as its (members, 1) column of this block's members.
    params = dict(params, **{name: column.reshape(-1) for name, column in zip(names, each)})
    run = _ode.lorenz63_adaptive(block, t_eval=t_eval, **params)
    # Every output of the block from one call, as a tuple (_block_output
    # takes it apart); the stats (members, 3) int32 as the native call gives
    # them (NumPy hands CuPy blocks to CuPy's stack).
    return run.final, run.saved, np.stack([run.accepted, run.rejected, run.status], axis=1)


def _block_output(blocks, k: int, **kwargs):
    """Output `k` of `blocks`, a Dask array whose blocks are tuples of one
    call's outputs (never computed as an array): one ``getitem`` task per
    block, with the output's chunks, dtype and meta in `kwargs` (as
    ``map_blocks`` takes them). Every output's tasks depend on the same call
    tasks, so computing several outputs together (``dask.compute``) runs
    each call once."""
    return blocks.map_blocks(operator.getitem, k, **kwargs)


def lorenz63_adaptive(
    initial: Any,
    *,
    sigma: Any = 10.0,
    rho: Any = 28.0,
    beta: Any = 8.0 / 3.0,
    t_span: Tuple[float, float] = (0.0, 1.0),
    t_eval: Any = None,
    rtol: float = 1e-3,
    atol: float = 1e-6,
    first_step: Optional[float] = None,
    max_step: float = np.inf,
    max_steps: int = 100_000,
    backend: Optional[str] = None,
) -> "_ode.Lorenz63AdaptiveRun":
    """:func:`kernpack.ode.lorenz63_adaptive` of an ensemble chunked by members.

    Parameters
    ----------
    initial : dask.array.Array (or array_like)
        ``(members, 3)`` initial states at ``t_span[0]`` (or one state
        ``(3,)``), chunked along members (a chunking along the 3 is undone);
        NumPy or CuPy blocks.
    sigma, rho, beta : float, dask.array.Array or array_like, optional
        One value for every member, or one per member (``(members,)``), in
        blocks of the same kind as `initial`'s; rechunked to `initial`'s
        members, so that each block gets its own members' values.
    t_span, t_eval, rtol, atol, first_step, max_step, max_steps, backend
        As in :func:`kernpack.ode.lorenz63_adaptive`; checked when the graph
        is built, with the run's messages.

    Returns
    -------
    kernpack.ode.Lorenz63AdaptiveRun
        Of Dask arrays chunked as the members: ``final`` ``(members, 3)``,
        with `t_eval` ``saved`` ``(len(t_eval), members, 3)``, and
        ``accepted``, ``rejected``, ``status`` ``(members,)`` int32
        (``success`` is ``status == 0``, a Dask array too). Each block is one
        ensemble call whose outputs are taken apart per block (its task
        returns them as a tuple, so the states and the int32 stats keep
        their dtypes): computing several together (``dask.compute(run.final,
        run.saved, run.status)``) runs it once. Members are independent, so
        the blocks equal the one-call result bitwise on the same backend,
        steps and statuses included.
    """
    t_span, times, control = _ode._adaptive_args(t_span, t_eval, rtol, atol, first_step, max_step, max_steps)
    x, one, shared, names, columns = _lorenz63_members(initial, sigma, rho, beta)
    # The run's own checks and messages (the shared values, the time span,
    # the step control, t_eval), without running anything.
    _check_lorenz63_adaptive(tuple(shared.get(k, 0.0) for k in ("sigma", "rho", "beta")), t_span, control, times)
    rtol, atol, first_step, max_step, max_steps = control
    params = dict(shared, t_span=t_span, rtol=rtol, atol=atol, first_step=first_step, max_step=max_step,
                  max_steps=max_steps, backend=backend)
    # Blocks of tuples (final, saved, stats): their dtype and meta are placeholders.
    blocks = da.map_blocks(_lorenz63_adaptive_block, x, *columns, names=names, t_eval=times, params=params,
                           dtype=x.dtype, meta=meta_from_array(x))
    final = _block_output(blocks, 0, dtype=x.dtype, meta=meta_from_array(x))
    saved = None
    if times:
        saved = _block_output(blocks, 1, new_axis=[0], chunks=((len(times),),) + x.chunks, dtype=x.dtype,
                              meta=meta_from_array(x, ndim=3))
    stats = _block_output(blocks, 2, dtype=np.int32, meta=meta_from_array(x, dtype=np.int32))
    if one:
        final, saved, stats = final[0], None if saved is None else saved[:, 0], stats[0]
    return _ode.Lorenz63AdaptiveRun(final, saved, stats[..., 0], stats[..., 1], stats[..., 2])
