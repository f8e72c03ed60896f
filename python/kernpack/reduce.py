"""Deterministic reductions: sums accumulated in float64 in a fixed order
(the same bits on every run), and normalisation ``x <- x / sum(x)`` in place,
of one array or of many in one call."""
from __future__ import annotations

from typing import Any, NamedTuple, Optional

import numpy as np

from . import _native
from ._arrays import (
    FLOAT_DTYPES,
    as_result,
    current_stream,
    device_array,
    empty,
    host_array,
    pointer,
    upload,
)
from ._context import context, device_float_context

__all__ = ["sum", "normalize", "normalize_batched", "NormalizedBatch"]


def sum(x: Any, *, backend: Optional[str] = None, device: Optional[int] = None) -> Any:  # noqa: A001 - the NumPy name
    """Sum of all values, accumulated in float64 in a fixed order.

    Parameters
    ----------
    x : array_like or device array
        Values (any shape; float32 or float64 are read as they are, other
        host dtypes are converted to float64).
    backend : {'auto', 'gpu', 'cpu'}, optional
        Where host arrays are summed (default: :func:`kernpack.get_backend`).
    device : int, optional
        The GPU that host arrays run on (default: :func:`kernpack.get_device`);
        device arrays run on their own.

    Returns
    -------
    float or device array
        A Python float for host input; for a device array, a 0-d float64
        array of its library, computed on its current stream.
    """
    dev = device_array(x)
    if dev is not None:
        ctx = device_float_context({"x": dev}, backend, device)
        out = empty(dev, (), np.float64)
        _native.sum_device(ctx, dev.dtype.name, dev.ptr, dev.size, pointer(out), current_stream(dev))
        return as_result(dev, out)
    a = np.asarray(x)
    dtype = a.dtype.newbyteorder("=") if a.dtype.newbyteorder("=") in FLOAT_DTYPES else np.dtype(np.float64)
    return _native.sum(context(backend, device), host_array(a, dtype))


def normalize(x: Any, *, backend: Optional[str] = None, device: Optional[int] = None) -> Any:
    """Normalises ``x`` in place, ``x <- x / sum(x)``, and returns the sum.

    Parameters
    ----------
    x : ndarray or device array
        A writable float32 or float64 array (any shape).
    backend, device
        As in :func:`sum`.

    Returns
    -------
    float or device array
        The sum before normalisation: a float for NumPy input; for a device
        array a 0-d float64 array of its library (no synchronisation).

    Raises
    ------
    ValueError
        (host arrays) when the sum is zero, not finite or too small to invert; `x` is unchanged.
        A device array with such a sum is also left unchanged, and the
        returned sum shows why.
    TypeError
        For arrays that cannot be normalised in place (other dtypes, lists).
    """
    dev = device_array(x)
    if dev is not None:
        ctx = device_float_context({"x": dev}, backend, device)
        total = empty(dev, (), np.float64)
        status = empty(dev, (), np.int32)
        _native.normalize_device(
            ctx, dev.dtype.name, dev.ptr, dev.size, pointer(total), pointer(status), current_stream(dev)
        )
        return as_result(dev, total)
    return _in_place(_native.normalize, _writable_float("x", x), backend, device)


def _in_place(native: Any, a: np.ndarray, backend: Optional[str], device: Any, *args: Any) -> Any:
    """``native(context, a, *args)``, on `a` itself where the native layer can
    write it, else on a native-endian contiguous copy written back."""
    work = host_array(a, a.dtype.newbyteorder("="))
    got = native(context(backend, device), work, *args)
    if work is not a:
        a[...] = work
    return got


def _writable_float(name: str, x: Any) -> np.ndarray:
    if not isinstance(x, np.ndarray):
        raise TypeError(f"{name} is normalised in place: pass a NumPy or device array, not {type(x).__name__}")
    if x.dtype.newbyteorder("=") not in FLOAT_DTYPES:
        raise TypeError(f"{name} is {x.dtype}: normalisation in place needs float32 or float64")
    if not x.flags.writeable:
        raise ValueError(f"{name} is read-only")
    return x


class NormalizedBatch(NamedTuple):
    """What :func:`normalize_batched` did to each array."""

    sums: Any
    """The sum of every array before normalisation (float64)."""
    failed: Any
    """Host input: indices of the arrays left unchanged (zero or non-finite
    sum). Device input: a status per array (0 normalised, 1 left unchanged)."""


def normalize_batched(
    x: Any, offsets: Any, *, backend: Optional[str] = None, device: Optional[int] = None
) -> NormalizedBatch:
    """Normalises many arrays stored back to back, each by its own sum.

    Parameters
    ----------
    x : ndarray or device array
        1-D float32 or float64 values of all arrays, modified in place.
    offsets : array of int
        ``narrays + 1`` non-decreasing indices from 0 to ``len(x)``; array
        ``a`` is ``x[offsets[a]:offsets[a + 1]]``. Empty arrays are allowed
        (their sum is 0, so they are reported as failed). Host data.
    backend : {'auto', 'gpu', 'cpu'}, optional
        As in :func:`sum`.
    device : int or list of int, optional
        The GPU that host arrays run on (default: :func:`kernpack.get_device`),
        or a list of GPUs to split their work over (see :func:`kernpack.set_device`);
        device arrays run on their own.

    Returns
    -------
    NormalizedBatch
        The sums and which arrays failed; an array whose sum is zero, not
        finite or too small to invert (below 2^-1024) is left unchanged, the others are still normalised.
    """
    o = np.asarray(offsets.get() if hasattr(offsets, "get") and type(offsets).__module__.startswith("cupy") else offsets)
    if o.ndim != 1 or o.size < 1 or not np.issubdtype(o.dtype, np.integer):
        raise ValueError("offsets must be a 1-D integer array of narrays + 1 entries")
    narrays = o.size - 1
    dev = device_array(x)
    n = dev.size if dev is not None else np.asarray(x).size
    if o[0] != 0 or o[-1] != n or np.any(np.diff(o) < 0):
        raise ValueError(f"offsets must rise from 0 to len(x) = {n}")
    if dev is not None:
        ctx = device_float_context({"x": dev}, backend, device)
        if dev.ndim != 1:
            raise ValueError("x must be 1-D")
        d_offsets = upload(dev, o.astype(np.int64))
        sums = empty(dev, (narrays,), np.float64)
        status = empty(dev, (narrays,), np.int32)
        _native.normalize_batched_device(
            ctx, dev.dtype.name, dev.ptr, n, pointer(d_offsets), narrays, pointer(sums), pointer(status),
            current_stream(dev),
        )
        return NormalizedBatch(as_result(dev, sums), as_result(dev, status))
    a = _writable_float("x", x)
    if a.ndim != 1:
        raise ValueError("x must be 1-D")
    # Checked non-negative above: as uintp they are the same values.
    sums, failed = _in_place(_native.normalize_batched, a, backend, device, host_array(o, np.uintp))
    return NormalizedBatch(sums, np.asarray(failed, dtype=np.intp))
