"""Ragged batches from Arrow list columns, with no copy of their values.

An Arrow ``ListArray`` / ``LargeListArray`` is a flat values buffer and an
offsets buffer: exactly the flat arrays + offsets of the batched calls. The
helpers here read both as NumPy views (pyarrow is imported only when an Arrow
object is passed: it stays optional).
"""
from __future__ import annotations

import sys
from typing import Any, List, Optional, Sequence, Tuple

import numpy as np


def is_arrow(a: Any) -> bool:
    """Whether ``a`` is a pyarrow object (checked without importing pyarrow)."""
    return a is not None and type(a).__module__.split(".", 1)[0] == "pyarrow"


def is_lists(a: Any) -> bool:
    """Whether ``a`` is a pyarrow list or large-list column (an Array or a
    ChunkedArray); other Arrow arrays are array-likes as before."""
    if not is_arrow(a):
        return False
    import pyarrow as pa

    type_ = getattr(a, "type", None)
    return isinstance(type_, pa.DataType) and (pa.types.is_list(type_) or pa.types.is_large_list(type_))


def from_pandas(a: Any) -> Tuple[Any, Any]:
    """A pandas Series (or array) of Arrow lists as its pyarrow ChunkedArray
    (no copy) and its index: ``(lists, index)``, index None for an array.
    Such columns come from ``pd.ArrowDtype(pa.list_(...))`` data and from
    nested-pandas (``frame["lc"].nest.to_lists()["t"]``). Anything else is
    returned as it is, with index None."""
    pd = sys.modules.get("pandas")  # a pandas object means pandas is imported
    if pd is None or not isinstance(a, (pd.Series, pd.api.extensions.ExtensionArray)):
        return a, None
    array = a.array if isinstance(a, pd.Series) else a
    if not isinstance(array.dtype, pd.ArrowDtype):
        return a, None
    lists = array.__arrow_array__()
    if not is_lists(lists):
        return a, None
    return lists, (a.index if isinstance(a, pd.Series) else None)


def to_pandas(column: Any, index: Any) -> Any:
    """An Arrow result column as a pandas Series on `index`: lists keep their
    Arrow type (``pd.ArrowDtype``, no copy), numbers become NumPy-backed."""
    import pandas as pd
    import pyarrow as pa

    if pa.types.is_fixed_size_list(column.type):
        return pd.Series(pd.arrays.ArrowExtensionArray(column), index=index, copy=False)
    return pd.Series(column.to_numpy(), index=index, copy=False)


def flat(name: str, a: Any) -> Tuple[np.ndarray, np.ndarray]:
    """The flat values and the offsets (from 0) of a ``ListArray`` or
    ``LargeListArray``, sliced or not: ``(values, offsets)``.

    ``values`` is a view of the Arrow values buffer (no copy) for numeric
    values without nulls. ``offsets`` is a view of the offsets buffer when it
    already holds int64 starting at 0 (an unsliced ``LargeListArray``);
    otherwise a new int64 array of ``len(a) + 1`` entries (int32 offsets
    widened, a slice's offsets moved to start at 0): a copy of the offsets
    only. Null rows, and nulls among the values, are a ValueError."""
    import pyarrow as pa

    if isinstance(a, pa.ChunkedArray):
        raise AssertionError("chunked arrays are split into chunks first")
    if not isinstance(a, (pa.ListArray, pa.LargeListArray)):
        raise TypeError(f"{name} must be a pyarrow ListArray, LargeListArray or ChunkedArray of lists, not {a.type}")
    if a.null_count:
        row = int(np.flatnonzero(~np.asarray(a.is_valid().to_numpy(zero_copy_only=False)))[0])
        raise ValueError(
            f"{name} has {a.null_count} null row(s) (the first is row {row}): "
            "drop them or fill them with non-empty series before the call"
        )
    dtype = np.int32 if pa.types.is_list(a.type) else np.int64
    buffer = a.buffers()[1]
    offsets = np.frombuffer(buffer, dtype=dtype)[a.offset : a.offset + len(a) + 1] if buffer is not None else None
    if offsets is None or offsets.size == 0:  # no rows: an empty array may come without offsets
        offsets = np.zeros(1, np.int64)
    start, stop = int(offsets[0]), int(offsets[-1])
    values = a.values.slice(start, stop - start)  # zero-copy; offsets index a.values, itself maybe sliced
    if values.null_count:
        raise ValueError(f"{name} holds {values.null_count} null value(s) inside its rows: every sample needs a value")
    if not (pa.types.is_integer(values.type) or pa.types.is_floating(values.type)):
        raise TypeError(f"{name} must be a list of numbers, not of {values.type}")
    values = values.to_numpy(zero_copy_only=True)
    if start != 0 or offsets.dtype != np.int64:
        offsets = offsets.astype(np.int64) - start
    return values, offsets


def pieces(named: Sequence[Tuple[str, Any]]) -> List[Tuple[int, int, List[Optional[np.ndarray]], np.ndarray]]:
    """The list columns of the arguments (``None`` passes through) split
    where any of them starts a new chunk, each piece :func:`flat`:
    ``[(first row, row count, values per argument, offsets)]``. Arrays, or
    ChunkedArrays of one chunk, give one piece; the row counts, and every
    row's length, must agree with the first argument's."""
    import pyarrow as pa

    present = [(name, a) for name, a in named if a is not None]
    not_lists = [name for name, a in present if not is_lists(a)]
    if not_lists:
        lists = [name for name, a in present if is_lists(a)]
        raise TypeError(
            f"{', '.join(lists)} Arrow list columns but {', '.join(not_lists)} not: pass every series argument "
            "as an Arrow list or large-list column (or all as flat arrays with offsets)"
        )
    first_name, first = present[0]
    for name, a in present[1:]:
        if len(a) != len(first):
            raise ValueError(f"{name} has {len(a)} rows but {first_name} has {len(first)}: pass the same rows")
    bounds = {0, len(first)}
    for _, a in present:
        if isinstance(a, pa.ChunkedArray):
            bounds.update(np.cumsum([len(c) for c in a.chunks]).tolist())
    bounds = sorted(bounds)
    out = []
    for lo, hi in zip(bounds[:-1], bounds[1:]):
        values, offsets = [], None
        for name, a in named:
            if a is None:
                values.append(None)
                continue
            v, o = flat(name, _one_chunk(a, lo, hi - lo))
            if offsets is None:
                offsets = o
            elif not np.array_equal(o, offsets):
                row = int(np.flatnonzero(np.diff(o) != np.diff(offsets))[0])
                raise ValueError(
                    f"{name}'s rows must have the lengths of {first_name}'s: row {lo + row} holds "
                    f"{int(o[row + 1] - o[row])} samples in {name} but {int(offsets[row + 1] - offsets[row])} "
                    f"in {first_name}"
                )
            values.append(v)
        out.append((lo, hi - lo, values, offsets))
    return out


def _one_chunk(a: Any, start: int, length: int) -> Any:
    import pyarrow as pa

    if isinstance(a, pa.ChunkedArray):
        chunks = [c for c in a.slice(start, length).chunks if len(c)]
        assert len(chunks) == 1, "pieces lie within one chunk of every argument"
        return chunks[0]
    return a if (start, length) == (0, len(a)) else a.slice(start, length)


def periodograms(out: np.ndarray) -> Any:
    """A ``(nseries, nf)`` NumPy result (periodograms, or the ``(nseries,
    k)`` fields of the best peaks) as a ``FixedSizeListArray`` of one row
    per series (a view of the result, no copy). Complex values (the
    'amplitude' mode; Arrow has no complex type) become ``nf`` pairs
    ``(re, im)``: ``fixed_size_list<fixed_size_list<float, 2>, nf>``."""
    import pyarrow as pa

    nseries, nf = out.shape
    if np.iscomplexobj(out):
        pairs = out.reshape(-1).view(out.real.dtype)
        inner = pa.FixedSizeListArray.from_arrays(pa.array(pairs), 2)
        return pa.FixedSizeListArray.from_arrays(inner, nf)
    return pa.FixedSizeListArray.from_arrays(pa.array(out.reshape(-1)), nf)


def joined(pieces: Sequence[Any], inputs: Sequence[Any]) -> Any:
    """The pieces' results (NumPy or Arrow arrays) as one Arrow column: a
    ``ChunkedArray`` of one chunk per piece where any of the `inputs` is
    chunked, else the single piece's array."""
    import pyarrow as pa

    arrays = [p if is_arrow(p) else pa.array(p) for p in pieces]
    if any(isinstance(a, pa.ChunkedArray) for a in inputs):
        return pa.chunked_array(arrays, type=arrays[0].type)
    return arrays[0]
