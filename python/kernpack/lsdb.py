"""Periods of survey catalogs whose rows are objects with nested light
curves: nested-pandas frames and LSDB (HATS) catalogs.

A nested column stores each object's light curve as Arrow lists (flat values
and offsets), which is exactly a batch of ragged series: :func:`periods`
reads a partition's times, values and weights as views of those buffers (no
copy of the samples) and searches all of its light curves in one batched
call, on the GPU or the CPU as any kernpack call. On a whole catalog, one
call per partition::

    import lsdb
    import kernpack.lsdb

    catalog = lsdb.open_catalog("ztf_sources")  # nested column "lc": t, mag, magerr
    best = catalog.map_partitions(
        kernpack.lsdb.periods, nf=100_000, fmin=0.05, fmax=50.0,
        t="lc.t", y="lc.mag", dy="lc.magerr",
    ).compute()

On a single nested-pandas frame, call ``kernpack.lsdb.periods(frame, ...)``.
Needs pandas and pyarrow (the ``kernpack[dask]`` extra; LSDB brings Dask).
"""
from __future__ import annotations

from typing import Any, Optional, Union

import numpy as np
import pandas as pd

from . import _arrow
from . import dask as _dask

__all__ = ["periods"]


def periods(
    frame: Any,
    nf: int,
    fmin: Optional[float] = None,
    fmax: Optional[float] = None,
    *,
    t: str,
    y: str,
    dy: Optional[str] = None,
    w: Optional[str] = None,
    oversample: Optional[float] = None,
    top_k: int = 1,
    separation: float = 0.0,
    normalize: Union[bool, str] = False,
    floating_mean: bool = False,
    precenter: bool = False,
    backend: Optional[str] = None,
) -> pd.DataFrame:
    """The highest periodogram peaks of every object's light curve.

    Parameters
    ----------
    frame : nested-pandas NestedFrame or pandas DataFrame
        One row per object (an LSDB partition). Its light curves are either
        fields of a nested column or pandas columns of Arrow lists.
    nf, fmin, fmax, oversample, top_k, separation
        The grid and the peaks, as in :func:`kernpack.dask.lombscargle_peaks`:
        a shared grid of ``nf`` angular frequencies fmin..fmax, or with
        `oversample` a grid per light curve from its time span.
    t, y : str
        Times and values: ``"column.field"`` for a field of a nested column
        (e.g. ``"lc.t"``), or the name of a column of Arrow lists.
    dy : str, optional
        Uncertainties of the values, named as `t`: weights ``1 / dy**2``
        (every dy finite and > 0). Or `w`: the weights themselves. At most
        one of the two; neither: unweighted.
    normalize, floating_mean, precenter, backend
        As in :func:`kernpack.signal.lombscargle_batch`.

    Returns
    -------
    pandas.DataFrame
        On `frame`'s index, one row per object: ``n`` (samples), then
        ``frequency``, ``period``, ``power`` of the highest peak (and
        ``frequency_2``, ... up to `top_k`), as
        :func:`kernpack.dask.lombscargle_peaks`. An empty frame gives an empty
        table of these columns without calling the kernels.

    Each row's samples are used in their stored order, so the results equal,
    bitwise, :func:`kernpack.signal.lombscargle_batch` on the same lists.
    """
    grid = _dask._grid_spec(nf, fmin, fmax, oversample)
    top_k, separation = _dask._peak_ranks(top_k, separation, normalize)
    if dy is not None and w is not None:
        raise ValueError(f"pass dy ({dy!r}, uncertainties) or w ({w!r}, weights), not both")
    opts = _dask._batch_options(normalize, floating_mean, precenter, backend)
    named = [("t", t), ("y", y), ("dy", dy) if dy is not None else ("w", w)]
    lists = [(name, None if spec is None else _lists(frame, name, spec)) for name, spec in named]
    meta = _dask._empty_table(_dask._peaks_columns(top_k), frame.index[:0])
    tables = []
    for start, n, (ts, ys, ws), offsets in _arrow.pieces(lists):
        if n == 0:
            continue
        ids = frame.index[start : start + n].to_numpy()
        if dy is not None:
            ws = _weights_of(ws, offsets, ids)
        tables.append(_dask._peaks_table(ids, offsets, ts, ys, ws, meta=meta, grid=grid, top_k=top_k,
                                         separation=separation, opts=opts))
    table = pd.concat(tables) if tables else meta
    table.index = frame.index
    return table


def _lists(frame: Any, name: str, spec: str) -> Any:
    """The Arrow list column `spec` names (``column.field`` or ``column``) in `frame`, with no copy of its values."""
    column, _, field = spec.partition(".")
    if column not in frame.columns:
        raise ValueError(f"{name}={spec!r}: the frame has no column {column!r} (its columns: {list(frame.columns)})")
    series = frame[column]
    if field:
        nest = getattr(series, "nest", None)
        if nest is None:
            raise ValueError(f"{name}={spec!r}: column {column!r} is not a nested column (nested-pandas)")
        if field not in nest.columns:
            raise ValueError(f"{name}={spec!r}: nested column {column!r} has no field {field!r} ({list(nest.columns)})")
        series = nest.to_lists([field], large_list=True)[field]  # views of the nested buffers
    lists, _ = _arrow.from_pandas(series)
    if not _arrow.is_lists(lists):
        raise TypeError(f"{name}={spec!r} must name a nested field or a column of Arrow lists, not {series.dtype}")
    return lists


def _weights_of(dy: np.ndarray, offsets: np.ndarray, ids: np.ndarray) -> np.ndarray:
    bad = np.flatnonzero(~(np.isfinite(dy) & (dy > 0)))
    if bad.size:
        row = int(np.searchsorted(offsets, bad[0], side="right")) - 1
        raise ValueError(f"dy of the object with index {ids[row]!r} holds {dy[bad[0]]}: every dy must be finite and > 0")
    return 1.0 / np.square(dy)
