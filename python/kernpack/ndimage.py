"""Smoothing with ``scipy.ndimage``'s signatures and semantics:

- ``uniform_filter``: kernpack computes (u)int8 to (u)int64, bool, float32
  and float64 arrays of any number of dimensions, a size, origin and mode
  per axis, any axes (integers exactly, as SciPy truncates); 2-D float
  images with one mode run its fused 2-D filter;
- ``correlate1d``, ``gaussian_filter1d`` and ``gaussian_filter``: kernpack
  computes float32 and float64 arrays of any number of dimensions into an
  output of their own dtype (any axes, a mode, sigma, order and radius per
  axis; Gaussian kernels computed in Rust with SciPy's formula);
- ``median_filter``, ``rank_filter`` and ``percentile_filter``: kernpack
  computes integer (8 to 64 bits), bool, float32 and float64 arrays of any
  number of dimensions, any footprint, origin and rank, exactly.

The rest of what SciPy accepts runs SciPy for host arrays (unless the GPU
was asked for) and cupyx.scipy for CuPy arrays."""
from __future__ import annotations

import importlib
import math
import numbers
import operator
import sys
import warnings
from collections.abc import Iterable
from typing import Any, Optional

import numpy as np

try:  # NumPy >= 2
    from numpy.lib.array_utils import normalize_axis_index
except ImportError:  # NumPy 1.x
    from numpy.core.multiarray import normalize_axis_index

from . import _native
from ._arrays import FLOAT_DTYPES, as_result, copy, cupy_device, current_stream, device_array, empty, split
from ._context import _CPU_FOR_DEVICE_ARRAYS, _check, context, device_context, get_backend

__all__ = [
    "correlate1d",
    "gaussian_filter",
    "gaussian_filter1d",
    "median_filter",
    "percentile_filter",
    "rank_filter",
    "uniform_filter",
]

# SciPy's mode names (and aliases that mean the same for a filter) -> kernpack's.
_MODES = {
    "reflect": "reflect",
    "grid-mirror": "reflect",
    "constant": "constant",
    "grid-constant": "constant",
    "nearest": "nearest",
    "mirror": "mirror",
    "wrap": "wrap",
    "grid-wrap": "wrap",
    "interior": "interior",  # kernpack's own: only points whose window fits are filtered
}

# Widest window along the columns the GPU kernels take on device arrays
# (host arrays: any width, wider ones running on the CPU backend).
MAX_GPU_WINDOW_COLS = _native.MAX_GPU_WINDOW_COLS


class _NotComputed(NotImplementedError):
    """A valid SciPy call that kernpack's kernels do not compute. `refusal`
    is the error to raise when no SciPy stands in: NotImplementedError, or
    TypeError for a device layout or dtype the caller can change."""

    def __init__(self, message: str, refusal: type = NotImplementedError) -> None:
        super().__init__(message)
        self.refusal = refusal


def uniform_filter(
    input: Any,
    size: Any = 3,
    output: Optional[Any] = None,
    mode: Any = "reflect",
    cval: float = 0.0,
    origin: Any = 0,
    *,
    axes: Optional[Any] = None,
    backend: Optional[str] = None,
    device: Optional[int] = None,
) -> Any:
    """Multidimensional uniform (box) filter, as ``scipy.ndimage.uniform_filter``.

    One 1-D box pass per axis whose size is above 1, in the order of `axes`
    (default: every axis in order), each reading the previous pass's result
    as stored in the output's dtype, as SciPy. kernpack computes, on the GPU
    or its CPU backend, at a cost that does not grow with the window:

    - arrays of any number of dimensions (0-D too) of (u)int8 to (u)int64,
      bool (as uint8: means of 0 and 1 truncated, SciPy's bool result),
      float32 and float64, with any integer size, origin and boundary mode
      per axis, any `axes`. Integers are summed exactly and each pass's mean
      truncated toward zero, as SciPy casts its float64 mean: equal to
      SciPy wherever its float64 window sums are exact (below 2**53 in
      magnitude: any 8- and 16-bit array, 32-bit arrays with windows up to
      2**21 points; beyond, kernpack's are the exact means). Floats are
      summed in float64 and each pass rounded once to the dtype the passes
      are stored in.
    - 2-D float32/float64 images with one boundary mode for the filtered
      axes into a float output (and 1-D float host arrays, as 1 x n images)
      run kernpack's fused 2-D filter instead: both axes in one pass, in the
      wider of the input's and the output's dtype, rounded once (SciPy
      stores its first pass in the output's dtype); it also takes kernpack's
      own mode 'interior'. Device images it does not take (a window wider
      than ``MAX_GPU_WINDOW_COLS`` columns, rows that are not contiguous)
      run the N-D filter.
    - An `output` of another dtype (host arrays): the passes are stored in
      the output's dtype, as SciPy's. kernpack filters the input converted
      to it where that conversion is exact: bool and integers into an
      integer dtype that holds every value of theirs (of their dtype, or
      else of the array: checked on the data), uint8 and other integers
      holding only 0 and 1 into bool, anything into float64, bool and 8-
      and 16-bit integers into float32. Into float32 from other dtypes (32-
      and 64-bit integers, float64) the first pass runs in float64 from the
      input, as SciPy's, and the others in float32.

    What SciPy accepts and kernpack does not compute runs
    ``scipy.ndimage.uniform_filter`` itself for host arrays, unless the GPU
    backend was asked for (``backend='gpu'`` or :func:`kernpack.set_backend`),
    and ``cupyx.scipy.ndimage.uniform_filter`` for CuPy arrays: complex,
    float16 and other dtypes; non-integer sizes; with integer (bool) passes,
    a `cval` in 'constant' mode that is not an integer in the range of the
    dtype the passes are stored in (0 or 1 for bool), which SciPy adds to
    its float64 sums as it is; an integer or bool output of float input, or
    of integers it does not hold (SciPy's C cast of each mean); outputs
    that are not NumPy arrays (host). On device arrays also an output of
    another dtype than the input's, or an output array that is not
    C-contiguous. Other device arrays (PyTorch, Numba, JAX) raise
    NotImplementedError for those calls, or TypeError saying what to pass
    for layouts and dtypes.

    Parameters
    ----------
    input : array_like
        A NumPy array (or anything ``np.asarray`` accepts) or a device
        array (CuPy, PyTorch, Numba, JAX). Views and other layouts are
        copied to C order first (2-D float images with a row stride are read
        in place).
    size : int or sequence of ints, optional
        Window size, one for every axis or one per axis (of `axes` when
        given); sizes below 2 leave their axis unfiltered, as in SciPy.
    output : array or dtype, optional
        Where to write (same shape; NumPy for host input, the same library
        for device input; may be `input` itself or overlap it: the filter
        then reads a copy) or the dtype of the result. Default: a new array
        of the input's dtype.
    mode : str or sequence of str, optional
        SciPy's boundary modes 'reflect', 'constant', 'nearest', 'mirror',
        'wrap' (and their 'grid-' aliases), one for every axis or one per
        axis; kernpack's 'interior' (fused 2-D filter only: one mode for the
        filtered axes) filters only points whose window fits and copies the
        others.
    cval : float, optional
        Value outside the array with ``mode='constant'``.
    origin : int or sequence of ints, optional
        SciPy's origin, one for every axis or one per axis: along an axis of
        size n, the window of point i is ``i - (n // 2 + origin)`` to
        ``i - (n // 2 + origin) + n - 1``, origin in ``-(n // 2)`` to
        ``(n - 1) // 2`` (ValueError otherwise, as SciPy).
    axes : int or sequence of int, optional
        The axes to filter, in order (default all); `size`, `mode` and
        `origin` sequences then hold one value per axis listed.
    backend : {'auto', 'gpu', 'cpu'}, optional
        Where host arrays are filtered (default: :func:`kernpack.get_backend`).
    device : int, optional
        The GPU that host arrays run on (default: :func:`kernpack.get_device`);
        device arrays run on their own.

    Returns
    -------
    uniform_filter : ndarray
        The filtered array (`output` when one was given).

    Raises
    ------
    NotImplementedError
        For what kernpack does not compute (above) with device arrays other
        than CuPy's, with host arrays and the GPU backend, for 'interior'
        outside the fused 2-D filter (SciPy has no such mode), or when SciPy
        (cupyx) is not installed.
    RuntimeError
        For SciPy's own errors (an unknown mode, a sequence of the wrong
        length, an output of another shape).
    TypeError, ValueError
        As SciPy: a `cval` that is not a real number, an `origin` that is not
        an integer, an invalid origin or axis.

    Notes
    -----
    A non-finite `cval` (NaN, +-inf) is accepted for float arrays: 'constant'
    mode pads the array with it, so every output whose window reaches past
    the edge takes it into its mean, and the other outputs stay finite.
    (SciPy's running sums carry it on along each line, making every output
    non-finite.) The other modes ignore `cval`, as SciPy does. In the same
    way a NaN or infinity in the array reaches only the outputs whose window
    holds it, where SciPy's running sums spread it to the end of its line.
    float32 passes add `cval` rounded to float32 (SciPy adds the float64
    value): results may differ from SciPy's by rounding there.
    """
    on_device = split([("input", input), ("output", output if not _is_dtype(output) else None)])
    image = on_device["input"] if on_device is not None else np.asarray(input)
    try:
        if on_device is None:
            return _uniform_host_call(image, output, size, mode, cval, origin, axes, backend, device)
        call = _uniform_call(image.ndim, size, mode, cval, origin, axes)
        if call.fused_2d(image.dtype):
            try:
                return _device(on_device, output, *call.window_2d(), backend, device)
            except _NotComputed:
                pass  # a window, layout or dtype the fused kernels do not take: the N-D filter's turn
        return _uniform_device(on_device, output, call, backend, device)
    except _NotComputed as e:
        library = None if on_device is None else _library(on_device.values())
        if library is not None:
            device_context(on_device, backend, device)  # the device checks the computed path makes
        standing_in = _scipy_standing_in(e, mode, backend, library)
        # axes only when given: CuPy before 14 has no such parameter.
        by_axes = {} if axes is None else {"axes": axes}
        with cupy_device(None if on_device is None else image.device):
            return standing_in(input, size, output, mode, cval, origin, **by_axes)


def _library(arrays) -> str:
    """The array library of device arrays: 'cupy' for CuPy's own arrays (not
    DLPack views of another producer's), else the library kernpack read them
    through."""
    libraries = {"cupy" if _is_cupy(a) else (a.origin or type(a.obj).__module__.split(".")[0]) for a in arrays}
    return libraries.pop() if len(libraries) == 1 else "mixed"


def _is_cupy(a) -> bool:
    # kernpack reads any __cuda_array_interface__ object as CuPy does; only
    # CuPy's own arrays can go to cupyx.
    return a.lib == "cupy" and a.origin is None and type(a.obj).__module__.split(".")[0] == "cupy"


def _scipy_standing_in(
    not_computed: _NotComputed, mode: Any, backend: Optional[str], library: Optional[str], name: str = "uniform_filter"
) -> Any:
    """The filter ``name`` that computes what kernpack's kernels do not,
    where one may: ``scipy.ndimage``'s for host data (``library`` None)
    unless the GPU backend was asked for, ``cupyx.scipy.ndimage``'s for CuPy
    arrays; never for kernpack's own mode 'interior' (neither has it).
    Otherwise, or without that module, ``not_computed.refusal``
    (NotImplementedError, or TypeError for a device layout or dtype)."""
    interior = isinstance(mode, str) and mode == "interior"
    if library is not None:
        if library != "cupy" or interior:
            raise not_computed.refusal(str(not_computed)) from None
        if _check(backend if backend is not None else get_backend()) == "cpu":
            raise ValueError(_CPU_FOR_DEVICE_ARRAYS)
        try:
            return _defined_filter("cupyx.scipy.ndimage", name)
        except ImportError:
            raise not_computed.refusal(str(not_computed)) from None
    if interior or _check(backend if backend is not None else get_backend()) == "gpu":
        raise NotImplementedError(str(not_computed)) from None
    try:
        return _defined_filter("scipy.ndimage", name)
    except ImportError as e:
        raise NotImplementedError(f"{not_computed} (install SciPy for what kernpack does not compute)") from e


def _defined_filter(module_name: str, name: str = "uniform_filter") -> Any:
    """The filter ``name`` as ``module_name`` defines it. A caller may have put
    kernpack's in the module's place (to run another project's tests through
    kernpack): then the function of the module's ``_filters``, where SciPy
    and cupyx define it, so that kernpack never calls itself."""
    module = importlib.import_module(module_name)
    try:
        defined = getattr(importlib.import_module(module_name + "._filters"), name)
    except (ImportError, AttributeError):
        defined = None
    # The defining module's function first: a wrapper of kernpack's put in
    # the public name would otherwise call kernpack back.
    for function in (defined, getattr(module, name, None)):
        if function is not None and not _is_kernpacks(function):
            return function
    raise ImportError(f"{module_name}.{name} is kernpack's own or missing")


def _is_kernpacks(function: Any) -> bool:
    return (getattr(function, "__module__", None) or "").split(".")[0] == "kernpack"


def _host(image, output, size, origin, mode, cval, backend, device):
    result, out_dtype = _host_output(output, image.shape, image.dtype.newbyteorder("="))
    # Computed in the wider of the input's and the output's dtype: a float64
    # output of float32 input is the exact float64 mean, as SciPy's.
    dtype = np.promote_types(image.dtype.newbyteorder("="), out_dtype.newbyteorder("="))
    if image.size == 0:
        return result  # nothing to filter, as SciPy
    src = _pitched(image, dtype)
    # The native layer refuses an output whose span overlaps the input's:
    # np.may_share_memory compares the same spans.
    if src is None or np.may_share_memory(src, result):
        # A copy, always: ascontiguousarray returns `image` itself when it is
        # already contiguous.
        src = np.array(image, dtype=dtype, order="C", copy=True)
    dst = result if (result.dtype == dtype and _pitched(result, dtype) is not None) else np.empty(image.shape, dtype)
    _native.box_filter(context(backend, device), src, dst, size, origin, mode, cval)
    if dst is not result:
        result[...] = dst
    return result


def _is_dtype(output: Any) -> bool:
    if output is None or isinstance(output, np.ndarray) or device_array(output) is not None:
        return False
    try:
        np.dtype(output)
        return True
    except TypeError:
        return False


def _check_image(ndim: int, dtype: np.dtype, name: str) -> None:
    if ndim != 2:
        raise _NotComputed(f"{name} has {ndim} dimensions: kernpack's uniform_filter takes 2-D images only")
    if dtype.newbyteorder("=") not in FLOAT_DTYPES:
        raise _NotComputed(
            f"{name} is {dtype}: kernpack's uniform_filter computes float32 and float64 images; "
            f"pass {name}.astype(np.float32) or np.float64"
        )


def _host_output(output: Any, shape, dtype):
    """The array to return and its dtype."""
    if output is None:
        return np.empty(shape, dtype), dtype
    if _is_dtype(output):
        out_dtype = np.dtype(output)
        _check_image(2, out_dtype, "output")
        return np.empty(shape, out_dtype), out_dtype
    if not isinstance(output, np.ndarray):
        raise TypeError("output must be None, a dtype or a NumPy array")
    if output.shape != tuple(shape):
        raise RuntimeError("output shape not correct")
    if not output.flags.writeable:
        raise ValueError("output array is read-only")
    _check_image(2, output.dtype, "output")
    return output, output.dtype


def _pitched(a: np.ndarray, dtype: np.dtype) -> Optional[np.ndarray]:
    """``a`` when the native layer reads or writes it in place, as rows with
    a pitch (its rule: aligned, unit column stride, row stride a multiple of
    the item and at least a row), else None: then a contiguous copy goes."""
    if a.dtype != dtype or a.ndim != 2 or a.size == 0 or not a.flags.aligned:
        return None
    rows, cols = a.shape
    item = dtype.itemsize
    col_ok = a.size == 1 or a.strides[1] == item
    row_ok = rows == 1 or (a.strides[0] % item == 0 and a.strides[0] >= cols * item)
    return a if (col_ok and row_ok) else None


def _device(arrays, output, size, origin, mode, cval, backend, device):
    ctx = device_context(arrays, backend, device)
    src = arrays["input"]
    if size[1] > MAX_GPU_WINDOW_COLS:
        raise _NotComputed(
            f"size={size[1]} along the columns: kernpack's GPU kernels take windows up to "
            f"{MAX_GPU_WINDOW_COLS} columns wide on device arrays"
        )
    # Layouts and dtypes the kernels do not take: CuPy arrays run cupyx's
    # filter instead, other libraries get a TypeError saying what to pass.
    if _device_pitch(src) is None:
        raise _NotComputed(
            "input is a device array whose rows are not contiguous: pass a contiguous copy "
            "(cupy.ascontiguousarray(input) or input.contiguous())",
            TypeError,
        )
    dst = arrays.get("output")
    if _is_dtype(output) and np.dtype(output) != src.dtype:
        raise _NotComputed(
            f"output dtype {np.dtype(output)}: device images are filtered in their own dtype ({src.dtype})", TypeError
        )
    if dst is None:
        result = empty(src, src.shape, src.dtype)
        dst = device_array(result)
    else:
        result = output
        if dst.shape != src.shape:
            raise RuntimeError("output shape not correct")
        if dst.dtype != src.dtype:
            raise _NotComputed(
                f"output is {dst.dtype} but input is {src.dtype}: pass an output of the input's dtype", TypeError
            )
        if _device_pitch(dst) is None:
            raise _NotComputed("output is a device array whose rows are not contiguous: pass a contiguous one", TypeError)
    if src.size == 0:
        return as_result(arrays["input"], result)
    if dst.ptr == src.ptr or _overlap(src, dst):
        # In place, as SciPy allows: filter from a copy made on the same stream.
        src = device_array(copy(src))
    layout = (*src.shape, _device_pitch(src), _device_pitch(dst))
    _native.box_filter_device(
        ctx, src.dtype.name, src.ptr, dst.ptr, layout, size, origin, mode, cval, current_stream(src)
    )
    return as_result(arrays["input"], result)


def _device_pitch(a) -> Optional[int]:
    """The row pitch in elements of a device image that the kernels read or
    write in place (aligned, unit column stride, row stride a multiple of the
    item and at least a row), else None."""
    rows, cols = a.shape
    item = a.dtype.itemsize
    col_ok = cols == 1 or a.strides[1] == item
    row_ok = rows == 1 or (a.strides[0] % item == 0 and a.strides[0] >= cols * item)
    if rows == 0 or cols == 0 or (col_ok and row_ok and a.ptr % item == 0):
        return a.strides[0] // item if rows > 1 else cols
    return None


def _overlap(a, b) -> bool:
    span = lambda v: v.ptr + (v.shape[0] - 1) * v.strides[0] + v.shape[1] * v.dtype.itemsize  # noqa: E731
    return a.size > 0 and b.size > 0 and a.ptr < span(b) and b.ptr < span(a)


# --------------------------------------------------------------------------
# The N-D box filter of any element type (uniform_filter beyond the fused
# 2-D float filter)
# --------------------------------------------------------------------------

# Widest window along one axis of the N-D filter (2**31 - 1, the API's
# MAX_AXIS_WINDOW); wider ones run SciPy (cupyx).
_MAX_AXIS_WINDOW = 2**31 - 1


class _UniformCall:
    """SciPy's ``uniform_filter`` call on an ``ndim``-D array, resolved:
    per axis the size (1: not filtered), origin and kernpack's mode
    ('reflect' where not filtered); ``order``, the filtered axes in SciPy's
    pass order (that of `axes`); ``cval`` as SciPy reads it (a float,
    checked when a pass runs; None without passes)."""

    __slots__ = ("ndim", "sizes", "origins", "modes", "order", "cval")

    def __init__(self, ndim: int) -> None:
        self.ndim = ndim
        self.sizes, self.origins, self.modes = [1] * ndim, [0] * ndim, ["reflect"] * ndim
        self.order: list = []
        self.cval: Optional[float] = None

    def kinds(self) -> set:
        return {self.modes[a] for a in self.order}

    def fused_2d(self, dtype: np.dtype, out_dtype: Optional[np.dtype] = None, row: bool = False) -> bool:
        """Whether kernpack's fused 2-D filter computes this call: a 2-D (or,
        ``row``, 1-D host) float32/float64 array into a float output, one
        mode for the filtered axes."""
        floats = [dtype] + ([] if out_dtype is None else [out_dtype])
        return (
            (self.ndim == 2 or (row and self.ndim == 1))
            and all(np.dtype(d).newbyteorder("=") in FLOAT_DTYPES for d in floats)
            and len(self.kinds()) <= 1
        )

    def window_2d(self) -> tuple:
        """(sizes, origins, mode, cval) of the fused 2-D filter (a 1-D array
        as a 1 x n image)."""
        sizes, origins = list(self.sizes), list(self.origins)
        if self.ndim == 1:
            sizes, origins = [1] + sizes, [0] + origins
        kinds = self.kinds()
        kind = kinds.pop() if kinds else "reflect"
        return tuple(sizes), tuple(origins), kind, self.cval if kind == "constant" else 0.0

    def depths(self) -> list:
        """Per axis, how far the window reaches from its point (either side)."""
        return [max(n // 2 + o, n - 1 - (n // 2 + o)) if n > 1 else 0 for n, o in zip(self.sizes, self.origins)]

    def boundaries(self) -> list:
        """Dask's overlap boundary per axis: 'periodic' where the mode wraps."""
        return ["periodic" if n > 1 and m == "wrap" else "none" for n, m in zip(self.sizes, self.modes)]

    def native(self, axes: list, dtype: np.dtype, is_bool: bool) -> tuple:
        """The native arguments (sizes, origins, modes, cval) of one call of
        the N-D filter that runs the passes along ``axes`` on an array of
        ``dtype`` (uint8 holding bool values: ``is_bool``); _NotComputed for
        what it does not take."""
        sizes = [self.sizes[a] if a in axes else 1 for a in range(self.ndim)]
        origins = [self.origins[a] if a in axes else 0 for a in range(self.ndim)]
        modes = [self.modes[a] if a in axes else "reflect" for a in range(self.ndim)]
        if "interior" in modes:
            raise _NotComputed(
                f"mode 'interior' is kernpack's fused 2-D filter's own (2-D float32 and float64 images, one mode for "
                f"the filtered axes), not the N-D filter's: this call filters a {self.ndim}-D {dtype} array"
            )
        cval = 0.0
        if "constant" in modes:
            cval = self.cval
            if dtype.kind in "iu":
                fits = cval in (0.0, 1.0) if is_bool else (
                    math.isfinite(cval) and cval == math.trunc(cval) and _cval_fits(cval, dtype))
                if not fits:
                    raise _NotComputed(
                        f"cval={cval!r} in 'constant' mode for {'bool' if is_bool else dtype} passes: kernpack pads "
                        f"integer arrays with an integer in their dtype's range (0 or 1 for bool); SciPy adds cval "
                        "to its float64 sums as it is"
                    )
        return sizes, origins, modes, cval


def _uniform_call(ndim: int, size: Any, mode: Any, cval: Any, origin: Any, axes: Any) -> _UniformCall:
    """SciPy's ``uniform_filter(size, mode=mode, cval=cval, origin=origin,
    axes=axes)`` of an ``ndim``-D array resolved per axis, with SciPy's
    errors in SciPy's order (each pass's checks as its ``uniform_filter1d``
    makes them); _NotComputed for sizes kernpack does not take."""
    listed = _rank_axes(axes, ndim)  # SciPy's _check_axes
    n = len(listed)
    sizes, origins, modes = (_normalize_sequence(v, n) for v in (size, origin, mode))
    call = _UniformCall(ndim)
    for axis, s, o, m in zip(listed, sizes, origins, modes):
        if not s > 1:  # SciPy's rule: the axis is not filtered (nothing else read)
            continue
        axis = normalize_axis_index(axis, ndim)  # a scalar `axes` is checked here, as by SciPy's pass
        if isinstance(s, (bool, np.bool_)) or not float(s).is_integer():
            raise _NotComputed(f"size={s!r}: kernpack's uniform_filter takes integer sizes")
        s = int(s)
        if s // 2 + o < 0 or s // 2 + o >= s:
            raise ValueError("invalid origin")
        if not isinstance(m, str) or m not in _MODES:
            raise RuntimeError(f"boundary mode not supported: {m!r}")
        o = operator.index(o)  # TypeError for 0.5, as SciPy's C layer
        if call.cval is None:
            call.cval = _real(cval)  # read (and checked) by every pass, whatever the mode
        if s > _MAX_AXIS_WINDOW:
            raise _NotComputed(f"size={s}: kernpack's N-D uniform_filter takes windows up to {_MAX_AXIS_WINDOW}")
        call.sizes[axis], call.origins[axis], call.modes[axis] = s, o, _MODES[m]
        call.order.append(axis)
    return call


def _uniform_output(output: Any, shape, dtype: np.dtype) -> np.ndarray:
    """SciPy's ``_get_output`` for a real input of ``dtype``: the host array
    to return (new, of ``dtype`` or of the dtype ``output``, or ``output``
    itself), with SciPy's errors; _NotComputed for outputs that are not
    NumPy arrays."""
    if output is None:
        return np.empty(shape, dtype.newbyteorder("="))
    if _is_dtype(output):
        out_dtype = np.dtype(output)
        if isinstance(output, str) and not issubclass(out_dtype.type, np.number):
            raise RuntimeError("output must have numeric dtype")
        return np.empty(shape, out_dtype)
    if not isinstance(output, np.ndarray):
        raise _NotComputed("output is not a NumPy array: kernpack's uniform_filter writes NumPy arrays")
    if output.shape != tuple(shape):
        raise RuntimeError("output shape not correct")
    if not output.flags.writeable:
        raise ValueError("output array is read-only")
    return output


def _uniform_dtypes(dtype: np.dtype, out: np.dtype, values: Optional[np.ndarray] = None) -> tuple:
    """(first, work): the dtype the first pass runs in and the one the
    others run in, so that the result is SciPy's, whose passes are stored
    in the output's dtype (``out``; bool as uint8), reading the input as
    float64; or _NotComputed. ``values``: the host input, whose values
    decide for integer outputs that do not hold every value of its dtype."""
    dtype, out = dtype.newbyteorder("="), out.newbyteorder("=")
    if dtype != np.bool_ and dtype not in _RANK_DTYPES:
        raise _NotComputed(
            f"input is {dtype}: kernpack's uniform_filter computes (u)int8 to (u)int64, bool, float32 and float64 "
            "arrays"
        )
    if out.kind in "biu":
        # Integer (bool) passes of the input's values: exact where the output
        # holds every one of them (then every mean too), SciPy's C cast of
        # its float64 means then being their truncation.
        if out == np.bool_ or out in _RANK_DTYPES:
            work, (lo, hi) = (np.dtype(np.uint8), (0, 1)) if out == np.bool_ else (out, _int_range(out))
            if dtype == np.bool_ or (dtype.kind in "iu" and out != np.bool_ and np.can_cast(dtype, out, "safe")):
                return work, work
            if dtype.kind in "iu" and values is not None and _values_within(values, lo, hi):
                return work, work
        raise _NotComputed(
            f"a {dtype} array into {out}: kernpack filters into integer and bool outputs that hold every input value "
            "(SciPy casts each float64 mean with C's cast)"
        )
    if out not in _RANK_DTYPES:
        raise _NotComputed(f"output dtype {out}: kernpack's uniform_filter writes integers, bool, float32 or float64")
    if out == np.float64 or np.can_cast(dtype, out, "safe"):
        return out, out
    # float32 output of values float32 does not hold: SciPy's first pass
    # reads them as float64 and rounds its means to float32.
    return np.dtype(np.float64), out


def _int_range(dtype: np.dtype) -> tuple:
    info = np.iinfo(dtype)
    return int(info.min), int(info.max)


def _values_within(values: np.ndarray, lo: int, hi: int) -> bool:
    """Whether every integer in ``values`` lies in ``lo ..= hi``."""
    return values.size == 0 or (lo <= int(values.min()) and int(values.max()) <= hi)


def _uniform_steps(call: _UniformCall, first: np.dtype, work: np.dtype, is_bool: bool) -> list:
    """The native calls that run SciPy's passes in its order: (dtype, native
    arguments) each. The N-D filter runs its passes in axis order, so each
    call takes a run of passes whose axes increase; the first pass alone
    where it runs in another dtype. No pass: one call that copies.
    _NotComputed (cval, 'interior') before anything runs."""
    runs: list = []
    for axis in call.order:
        if runs and runs[-1][-1] < axis:
            runs[-1].append(axis)
        else:
            runs.append([axis])
    if first != work and runs:
        runs = [runs[0][:1]] + ([runs[0][1:]] if len(runs[0]) > 1 else []) + runs[1:]
    if not runs:
        runs = [[]]
    dtypes = [first] + [work] * (len(runs) - 1)
    return [(d, call.native(axes, d, is_bool and d == np.uint8)) for d, axes in zip(dtypes, runs)]


def _uniform_host_call(image, output, size, mode, cval, origin, axes, backend, device):
    """kernpack's uniform_filter of a host array: SciPy's checks, then the
    fused 2-D filter, SciPy's copy (no pass) or the N-D filter;
    _NotComputed for what none computes."""
    if image.dtype.kind not in "biuf":
        raise _NotComputed(
            f"input is {image.dtype}: kernpack's uniform_filter computes (u)int8 to (u)int64, bool, float32 and "
            "float64 arrays"
        )
    result = _uniform_output(output, image.shape, image.dtype)
    call = _uniform_call(image.ndim, size, mode, cval, origin, axes)
    if not call.order:
        result[...] = image  # SciPy's copy, whatever the dtypes
        return result
    if call.fused_2d(image.dtype, result.dtype, row=True):
        window = call.window_2d()
        if image.ndim == 1:  # the 1 x n image of its values
            _host(image[None, :], result[None, :], *window, backend, device)
            return result
        return _host(image, result, *window, backend, device)
    return _uniform_host(image, result, call, backend, device)


def _uniform_host(image: np.ndarray, result: np.ndarray, call: _UniformCall, backend, device) -> np.ndarray:
    first, work = _uniform_dtypes(image.dtype, result.dtype, image)
    steps = _uniform_steps(call, first, work, result.dtype == np.bool_)
    if image.size == 0:
        return result
    src = image.view(np.uint8) if image.dtype == np.bool_ and first == np.uint8 else image
    if not (src.dtype == first and src.flags.c_contiguous and src.flags.aligned) or np.may_share_memory(src, result):
        # A copy, always (in place: the filter reads the copy, as SciPy's line buffers).
        src = np.array(src, dtype=first, order="C", copy=True)
    target = result.view(np.uint8) if result.dtype == np.bool_ else result
    ctx = context(backend, device)
    for k, (dtype, args) in enumerate(steps):
        if src.dtype != dtype:
            src = src.astype(dtype)  # the float64 first pass's means rounded to float32, as SciPy stores them
        last = k == len(steps) - 1
        direct = last and target.dtype == dtype and target.flags.c_contiguous and target.flags.aligned
        dst = target if direct else np.empty(image.shape, dtype)
        _native.uniform_filter_nd(ctx, src, dst, *args)
        src = dst
    if src is not target:
        np.copyto(target, src, casting="unsafe")
    return result


def _uniform_device(arrays, output, call: _UniformCall, backend, device) -> Any:
    ctx = device_context(arrays, backend, device)
    src = arrays["input"]
    is_bool = src.dtype == np.bool_
    work = np.dtype(np.uint8) if is_bool else src.dtype
    if work not in _RANK_DTYPES:
        raise _NotComputed(
            f"input is a {src.dtype} device array: kernpack's uniform_filter computes (u)int8 to (u)int64, bool, "
            "float32 and float64 device arrays",
            TypeError,
        )
    if _is_dtype(output) and np.dtype(output) != src.dtype:
        raise _NotComputed(
            f"output dtype {np.dtype(output)}: device arrays are filtered in their own dtype ({src.dtype})", TypeError
        )
    steps = _uniform_steps(call, work, work, is_bool)
    dst = arrays.get("output")
    if dst is None:
        result = empty(src, src.shape, src.dtype)
        dst = device_array(result)
    else:
        result = output
        if tuple(dst.shape) != tuple(src.shape):
            raise RuntimeError("output shape not correct")
        if dst.dtype != src.dtype:
            raise _NotComputed(
                f"output is {dst.dtype} but input is {src.dtype}: pass an output of the input's dtype", TypeError
            )
        if not dst.is_c_contiguous() or dst.ptr % dst.dtype.itemsize:
            raise _NotComputed("output is a device array that is not C-contiguous: pass a contiguous one", TypeError)
    if src.size == 0:
        return as_result(arrays["input"], result)
    if not src.is_c_contiguous() or src.ptr % src.dtype.itemsize or _spans_overlap(src, dst):
        # A C-contiguous copy made on the same stream (in place too, as SciPy allows).
        src = device_array(copy(src))
    stream = current_stream(src)
    scratch = []  # alive until every pass is enqueued
    for k, (dtype, args) in enumerate(steps):
        to = dst if k == len(steps) - 1 else device_array(empty(src, src.shape, src.dtype))
        scratch.append(to)
        _native.uniform_filter_nd_device(ctx, work.name, src.ptr, to.ptr, list(src.shape), *args, stream)
        src = to
    return as_result(arrays["input"], result)


# --------------------------------------------------------------------------
# 1-D correlations along any axis of an N-D array, and the Gaussian filters
# made of them
# --------------------------------------------------------------------------

# The modes of the correlations: SciPy's names and aliases ('interior' is the
# box filter's own, an unknown mode here as in SciPy).
_CORRELATE_MODES = {name: kind for name, kind in _MODES.items() if kind != "interior"}

# Most weights of one correlation (a Gaussian of radius up to
# (MAX_CORRELATE_TAPS - 1) // 2); longer ones run SciPy (cupyx).
MAX_CORRELATE_TAPS = _native.MAX_CORRELATE_TAPS
# Highest Gaussian derivative order kernpack computes; higher ones run SciPy (cupyx).
MAX_GAUSSIAN_ORDER = _native.MAX_GAUSSIAN_ORDER


def correlate1d(
    input: Any,
    weights: Any,
    axis: int = -1,
    output: Optional[Any] = None,
    mode: str = "reflect",
    cval: float = 0.0,
    origin: int = 0,
    *,
    backend: Optional[str] = None,
    device: Optional[int] = None,
) -> Any:
    """1-D correlation along one axis, as ``scipy.ndimage.correlate1d``.

    Output ``i`` along `axis` is ``sum_j weights[j] * input[i + j - (len(weights)
    // 2 + origin)]``, the input extended past its ends by `mode`. kernpack
    computes float32 and float64 arrays of any number of dimensions (views and
    other layouts are copied to C order first) into an output of the input's
    dtype, summing in that dtype (SciPy sums in float64), on the GPU or its CPU
    backend. Other calls that SciPy accepts (integer, bool or complex arrays
    or weights, an output of another dtype, non-finite weights, more than
    ``MAX_CORRELATE_TAPS`` weights) run ``scipy.ndimage.correlate1d`` for host
    arrays unless the GPU backend was asked for, and
    ``cupyx.scipy.ndimage.correlate1d`` for CuPy arrays; as in
    :func:`uniform_filter`, other device arrays get NotImplementedError (or
    TypeError for their dtype or layout).

    Parameters
    ----------
    input : array_like
        A float32 or float64 array (NumPy or anything ``np.asarray`` accepts,
        or a CuPy, PyTorch, Numba or JAX device array), at least 1-D.
    weights : array_like
        The 1-D correlation weights (at least one), used as float64 (as
        float32 by the float32 GPU kernels).
    axis : int, optional
        The axis to correlate along (negative counts from the last).
    output : array or dtype, optional
        Where to write (same shape; may be `input` itself or overlap it: the
        filter then reads a copy) or the result's dtype. Default: a new array
        of the input's dtype.
    mode : {'reflect', 'constant', 'nearest', 'mirror', 'wrap'}, optional
        SciPy's boundary modes and their 'grid-' aliases.
    cval : float, optional
        Value outside the array with ``mode='constant'``.
    origin : int, optional
        SciPy's shift of the weights, in ``-(len(weights) // 2)`` to
        ``(len(weights) - 1) // 2`` (ValueError otherwise, as SciPy).
    backend : {'auto', 'gpu', 'cpu'}, optional
        Where host arrays are filtered (default: :func:`kernpack.get_backend`).
    device : int, optional
        The GPU that host arrays run on (default: :func:`kernpack.get_device`);
        device arrays run on their own.

    Returns
    -------
    correlate1d : ndarray
        The correlated array (`output` when one was given).

    Raises
    ------
    RuntimeError, ValueError, TypeError
        SciPy's errors for bad arguments: no weights, an unknown mode, an
        invalid origin or axis, an output of another shape.
    NotImplementedError
        For what kernpack does not compute (above) when no SciPy (cupyx)
        stands in.
    """

    def passes(ndim: int) -> list:
        return [_correlate_pass(weights, axis, ndim, mode, cval, origin)]

    args = (input, weights, axis, output, mode, cval, origin)
    return _correlated("correlate1d", passes, input, output, backend, device, args, {})


def gaussian_filter1d(
    input: Any,
    sigma: float,
    axis: int = -1,
    order: int = 0,
    output: Optional[Any] = None,
    mode: str = "reflect",
    cval: float = 0.0,
    truncate: float = 4.0,
    *,
    radius: Optional[int] = None,
    backend: Optional[str] = None,
    device: Optional[int] = None,
) -> Any:
    """1-D Gaussian filter along one axis, as ``scipy.ndimage.gaussian_filter1d``.

    The correlation (:func:`correlate1d`) with SciPy's Gaussian kernel of
    `sigma` (or its `order`-th derivative) over ``-radius .. radius``, where
    `radius` defaults to ``int(truncate * sigma + 0.5)``; kernpack computes
    the kernel in Rust with SciPy's formula. kernpack computes what
    :func:`correlate1d` does, for finite positive sigmas and orders up to
    ``MAX_GAUSSIAN_ORDER``; other calls SciPy accepts (a negative sigma with a
    radius given, higher orders, integer arrays, another output dtype) run
    SciPy (host) or cupyx (CuPy arrays) as :func:`correlate1d` says.

    Parameters
    ----------
    input : array_like
        A float32 or float64 array, at least 1-D (host or device).
    sigma : float
        Standard deviation of the Gaussian, in points.
    axis : int, optional
        The axis to filter along (negative counts from the last).
    order : int, optional
        0 smooths; k > 0 correlates with the k-th derivative of the Gaussian.
    output : array or dtype, optional
        As in :func:`correlate1d`.
    mode : {'reflect', 'constant', 'nearest', 'mirror', 'wrap'}, optional
        SciPy's boundary modes and their 'grid-' aliases.
    cval : float, optional
        Value outside the array with ``mode='constant'``.
    truncate : float, optional
        The kernel reaches ``truncate`` standard deviations.
    radius : int, optional
        The kernel's radius, overriding `truncate`.
    backend, device
        As in :func:`correlate1d`.

    Returns
    -------
    gaussian_filter1d : ndarray
        The filtered array (`output` when one was given).

    Raises
    ------
    RuntimeError, ValueError, TypeError
        SciPy's errors for bad arguments (a negative radius, a negative order,
        an unknown mode, an invalid axis, ...).
    NotImplementedError
        As in :func:`correlate1d`.
    """

    def passes(ndim: int) -> list:
        return [_gaussian_pass(sigma, axis, order, mode, cval, truncate, radius, ndim)]

    args = (input, sigma, axis, order, output, mode, cval, truncate)
    # radius only when given: cupyx may not take it.
    return _correlated("gaussian_filter1d", passes, input, output, backend, device, args,
                       {} if radius is None else {"radius": radius})


def gaussian_filter(
    input: Any,
    sigma: Any,
    order: Any = 0,
    output: Optional[Any] = None,
    mode: Any = "reflect",
    cval: float = 0.0,
    truncate: float = 4.0,
    *,
    radius: Optional[Any] = None,
    axes: Optional[Any] = None,
    backend: Optional[str] = None,
    device: Optional[int] = None,
) -> Any:
    """Multidimensional Gaussian filter, as ``scipy.ndimage.gaussian_filter``.

    One :func:`gaussian_filter1d` pass per filtered axis, in order, each
    reading the previous pass's result stored in the output's dtype (as
    SciPy); axes whose sigma is not above 1e-15 are skipped (none left: a
    copy). kernpack computes float32 and float64 arrays of any number of
    dimensions into an output of their dtype, with the passes of one call run
    back to back (on the GPU: one upload and one download for host arrays);
    other calls run SciPy (host) or cupyx (CuPy arrays) as
    :func:`correlate1d` says.

    Parameters
    ----------
    input : array_like
        A float32 or float64 array (host or device).
    sigma : float or sequence of floats
        Standard deviation, one for every axis or one per axis (of `axes`
        when given).
    order : int or sequence of ints, optional
        Derivative order, one for every axis or one per axis.
    output : array or dtype, optional
        As in :func:`correlate1d`.
    mode : str or sequence of str, optional
        SciPy's boundary modes ('reflect', 'constant', 'nearest', 'mirror',
        'wrap' and the 'grid-' aliases), one for every axis or one per axis.
    cval : float, optional
        Value outside the array with ``mode='constant'``.
    truncate : float, optional
        The kernels reach ``truncate`` standard deviations.
    radius : int or sequence of ints, optional
        The kernels' radius, overriding `truncate`; one or one per axis.
    axes : int or sequence of int, optional
        The axes to filter (default all), in the order given.
    backend, device
        As in :func:`correlate1d`.

    Returns
    -------
    gaussian_filter : ndarray
        The filtered array (`output` when one was given).

    Raises
    ------
    RuntimeError, ValueError, TypeError
        SciPy's errors for bad arguments (a sequence of the wrong length,
        repeated or out-of-range axes, an unknown mode, a negative radius).
    NotImplementedError
        As in :func:`correlate1d`.
    """

    def passes(ndim: int) -> list:
        return _gaussian_passes(sigma, order, mode, cval, truncate, radius, axes, ndim)

    args = (input, sigma, order, output, mode, cval, truncate)
    kwargs = {name: v for name, v in (("radius", radius), ("axes", axes)) if v is not None}
    return _correlated("gaussian_filter", passes, input, output, backend, device, args, kwargs)


def _gaussian_passes(sigma, order, mode, cval, truncate, radius, axes, ndim: int) -> list:
    """The native passes of SciPy's ``gaussian_filter`` of an ``ndim``-D
    array, one per filtered axis whose sigma is above 1e-15, with SciPy's
    errors; _NotComputed for what kernpack does not take."""
    filtered = _checked_axes(axes, ndim)
    n = len(filtered)
    orders, sigmas, modes, radii = (_normalize_sequence(v, n) for v in (order, sigma, mode, radius))
    return [
        _gaussian_pass(s, axis, o, m, cval, truncate, r, ndim)
        for axis, s, o, m, r in zip(filtered, sigmas, orders, modes, radii)
        if s > 1e-15  # SciPy's rule (NaN is skipped too)
    ]


def _correlated(name, make_passes, input, output, backend, device, args, kwargs):
    """Runs SciPy's ``name`` as kernpack computes it: ``make_passes(ndim)``
    checks the arguments (SciPy's errors) and gives the passes, or raises
    _NotComputed; then kernpack filters host or device arrays, or, for what
    it does not compute, SciPy (cupyx) runs ``name(*args, **kwargs)`` as
    :func:`uniform_filter` decides."""
    on_device = split([("input", input), ("output", output if not _is_dtype(output) else None)])
    array = on_device["input"] if on_device is not None else np.asarray(input)
    try:
        passes = make_passes(array.ndim)
        if on_device is not None:
            return _correlate_device(name, on_device, output, passes, backend, device)
        return _correlate_host(name, array, output, passes, backend, device)
    except _NotComputed as e:
        library = None if on_device is None else _library(on_device.values())
        if library is not None:
            device_context(on_device, backend, device)  # the device checks the computed path makes
        standing_in = _scipy_standing_in(e, None, backend, library, name)
        with cupy_device(None if on_device is None else array.device):
            return standing_in(*args, **kwargs)


def _normalize_sequence(value: Any, n: int) -> list:
    """SciPy's per-axis arguments: a string or non-iterable for every axis,
    else a sequence of exactly ``n``."""
    if not isinstance(value, str) and np.iterable(value):
        values = list(value)
        if len(values) != n:
            raise RuntimeError(
                f"sequence argument must have length equal to input rank ({n}, one value per axis), got {len(values)}"
            )
        return values
    return [value] * n


def _checked_axes(axes: Any, ndim: int) -> tuple:
    """SciPy's ``axes`` of ``gaussian_filter``: None for all, one integer
    (checked by its pass), or a sequence of distinct axes in range."""
    if axes is None:
        return tuple(range(ndim))
    if np.isscalar(axes):
        listed = (operator.index(axes),)
    elif isinstance(axes, Iterable):
        listed = tuple(operator.index(a) for a in axes)
        for a in listed:
            if not -ndim <= a < ndim:
                raise ValueError(f"specified axis: {a} is out of range")
        listed = tuple(a % ndim for a in listed)
    else:
        raise ValueError("axes must be an integer, iterable of integers, or None")
    if len(set(listed)) != len(listed):
        raise ValueError("axes must be unique")
    return listed


def _correlate_mode(mode: Any) -> str:
    if not isinstance(mode, str) or mode not in _CORRELATE_MODES:
        raise RuntimeError(f"boundary mode not supported: {mode!r}")
    return _CORRELATE_MODES[mode]


def _real(cval: Any) -> float:
    """``cval`` as SciPy's C layer reads it: a real number (TypeError otherwise)."""
    try:
        if isinstance(cval, (str, bytes)):
            raise TypeError
        return float(cval)
    except (TypeError, ValueError):
        raise TypeError(f"cval must be a real number, not {type(cval).__name__}") from None


def _correlate_pass(weights: Any, axis: Any, ndim: int, mode: Any, cval: Any, origin: Any) -> tuple:
    """The native pass (axis, weights, origin, mode, cval) of SciPy's
    ``correlate1d(weights, axis, mode=mode, cval=cval, origin=origin)`` on an
    ``ndim``-D array, with SciPy's errors for bad arguments; _NotComputed for
    weights kernpack does not take."""
    w = np.asarray(weights)
    if w.dtype.kind == "c":
        raise _NotComputed(f"weights are {w.dtype}: kernpack correlates with real weights")
    w = np.asarray(w, dtype=np.float64)
    if w.ndim != 1 or w.shape[0] < 1:
        raise RuntimeError("no filter weights given")
    axis = normalize_axis_index(axis, ndim)
    n = len(w)
    if origin < -(n // 2) or origin > (n - 1) // 2:
        raise ValueError("Invalid origin; origin must satisfy -(len(weights) // 2) <= origin <= (len(weights)-1) // 2")
    kind = _correlate_mode(mode)
    origin = operator.index(origin)  # TypeError for 0.5, as SciPy
    cval = _real(cval)
    if n > MAX_CORRELATE_TAPS:
        raise _NotComputed(f"{n} weights: kernpack correlates with up to {MAX_CORRELATE_TAPS}")
    if not np.isfinite(w).all():
        raise _NotComputed("the weights hold NaN or infinity: kernpack correlates with finite weights")
    return (axis, w.tolist(), origin, kind, cval)


def _gaussian_pass(
    sigma: Any, axis: Any, order: Any, mode: Any, cval: Any, truncate: Any, radius: Any, ndim: int
) -> tuple:
    """The native pass of SciPy's ``gaussian_filter1d(sigma, axis, order,
    mode=mode, cval=cval, truncate=truncate, radius=radius)``: SciPy's radius
    rule and errors here, the weights from kernpack's Rust kernel;
    _NotComputed for sigmas, orders and radii kernpack does not take."""
    sd = float(sigma)
    lw = int(truncate * sd + 0.5)  # SciPy's radius (its ValueError / OverflowError for NaN / inf)
    if radius is not None:
        lw = radius
    if not isinstance(lw, numbers.Integral) or lw < 0:
        raise ValueError("Radius must be a nonnegative integer.")
    if order < 0:
        raise ValueError("order must be non-negative")
    if isinstance(order, (bool, np.bool_)) and order:
        raise TypeError("order must be an integer, not a bool")  # SciPy's np.ones(True) refuses it
    order = 0 if order == 0 else int(operator.index(order))  # SciPy takes 0.0, and only integers above
    axis = normalize_axis_index(axis, ndim)
    kind = _correlate_mode(mode)
    cval = _real(cval)
    # SciPy's kernel divides by sigma ** 2: kernpack takes sigmas whose square
    # is a normal positive number (SciPy divides by zero below ~1.5e-154).
    if not (sd > 0 and sys.float_info.min <= sd * sd < math.inf):
        raise _NotComputed(f"sigma={sigma!r}: kernpack's Gaussian filters take finite positive sigmas")
    if order > MAX_GAUSSIAN_ORDER:
        raise _NotComputed(f"order={order}: kernpack's Gaussian filters take orders up to {MAX_GAUSSIAN_ORDER}")
    if lw > (MAX_CORRELATE_TAPS - 1) // 2:
        raise _NotComputed(f"radius {lw}: kernpack's Gaussian filters take radii up to {(MAX_CORRELATE_TAPS - 1) // 2}")
    return (axis, _native.gaussian_weights(sd, order, int(lw)), 0, kind, cval)


def _correlate_host(name, array, output, passes, backend, device):
    dtype = array.dtype.newbyteorder("=") if array.dtype.kind == "f" else array.dtype
    if dtype not in FLOAT_DTYPES:
        raise _NotComputed(
            f"input is {array.dtype}: kernpack's {name} computes float32 and float64 arrays; "
            "pass input.astype(np.float32) or np.float64"
        )
    result = _same_dtype_output(name, output, array.shape, dtype)
    if array.size == 0:
        return result  # nothing to filter, as SciPy
    src = array if (array.dtype == dtype and array.flags.c_contiguous and array.flags.aligned) else None
    # The native layer refuses an output whose span overlaps the input's:
    # np.may_share_memory compares the same spans.
    if src is None or np.may_share_memory(src, result):
        src = np.array(array, dtype=dtype, order="C", copy=True)
    direct = result.dtype == dtype and result.flags.c_contiguous and result.flags.aligned
    dst = result if direct else np.empty(array.shape, dtype)
    _native.correlate(context(backend, device), src, dst, passes)
    if dst is not result:
        result[...] = dst
    return result


def _same_dtype_output(name, output, shape, dtype):
    """The host array to return: a new one of ``dtype`` (the input's) or of
    ``output`` (a dtype), or ``output`` itself; SciPy's errors for a wrong
    shape, _NotComputed for another dtype."""
    if output is None:
        return np.empty(shape, dtype)
    if _is_dtype(output):
        out_dtype = np.dtype(output)
        if isinstance(output, str) and not issubclass(out_dtype.type, np.number):
            raise RuntimeError("output must have numeric dtype")
    elif not isinstance(output, np.ndarray):
        raise TypeError("output must be None, a dtype or a NumPy array")
    else:
        if output.shape != tuple(shape):
            raise RuntimeError("output shape not correct")
        if not output.flags.writeable:
            raise ValueError("output array is read-only")
        out_dtype = output.dtype
    if out_dtype.kind != "f" or out_dtype.newbyteorder("=") != dtype:
        raise _NotComputed(f"output dtype {out_dtype}: kernpack's {name} writes the input's dtype ({dtype})")
    return output if isinstance(output, np.ndarray) else np.empty(shape, out_dtype)


def _correlate_device(name, arrays, output, passes, backend, device):
    ctx = device_context(arrays, backend, device)
    src = arrays["input"]
    if src.dtype not in FLOAT_DTYPES:
        raise _NotComputed(
            f"input is a {src.dtype} device array: kernpack's {name} computes float32 and float64; "
            "pass input.astype('float32') or .astype('float64')",
            TypeError,
        )
    if _is_dtype(output) and np.dtype(output) != src.dtype:
        raise _NotComputed(
            f"output dtype {np.dtype(output)}: device arrays are filtered in their own dtype ({src.dtype})", TypeError
        )
    dst = arrays.get("output")
    if dst is None:
        result = empty(src, src.shape, src.dtype)
        dst = device_array(result)
    else:
        result = output
        if tuple(dst.shape) != tuple(src.shape):
            raise RuntimeError("output shape not correct")
        if dst.dtype != src.dtype:
            raise _NotComputed(
                f"output is {dst.dtype} but input is {src.dtype}: pass an output of the input's dtype", TypeError
            )
        if not dst.is_c_contiguous() or dst.ptr % dst.dtype.itemsize:
            raise _NotComputed("output is a device array that is not C-contiguous: pass a contiguous one", TypeError)
    if src.size == 0:
        return as_result(arrays["input"], result)
    if not src.is_c_contiguous() or src.ptr % src.dtype.itemsize or _spans_overlap(src, dst):
        # A C-contiguous copy made on the same stream (in place too, as SciPy allows).
        src = device_array(copy(src))
    _native.correlate_device(ctx, src.dtype.name, src.ptr, dst.ptr, list(src.shape), passes, current_stream(src))
    return as_result(arrays["input"], result)


def _byte_span(a) -> tuple:
    """First and one-past-last byte a device array reaches (any strides)."""
    lo = hi = a.ptr
    for n, s in zip(a.shape, a.strides):
        if s < 0:
            lo += (n - 1) * s
        else:
            hi += (n - 1) * s
    return lo, hi + a.dtype.itemsize


def _spans_overlap(a, b) -> bool:
    if a.size == 0 or b.size == 0:
        return False
    (a_lo, a_hi), (b_lo, b_hi) = _byte_span(a), _byte_span(b)
    return a_lo < b_hi and b_lo < a_hi


# --------------------------------------------------------------------------
# Rank filters over a footprint of an N-D array: median, rank, percentile
# --------------------------------------------------------------------------

# The element types of kernpack's rank filters (bool arrays are filtered as
# uint8); float16 and the rest run SciPy (cupyx).
_RANK_DTYPES = tuple(
    np.dtype(t) for t in ("uint8", "int8", "uint16", "int16", "uint32", "int32", "uint64", "int64", "float32",
                          "float64")
)
# Output dtypes a host result is cast into (from the dtype it was computed in;
# bool only from bool input).
_RANK_OUTPUT_KINDS = "biuf"


class _RankCall:
    """A rank filter call as kernpack computes it: the footprint (bool, one
    axis per axis of the array), one origin per axis, the rank resolved as
    SciPy resolves it (0-based, in ``0 .. count - 1``), kernpack's mode and
    ``cval`` as SciPy reads it (a float; 0.0 outside 'constant' mode)."""

    __slots__ = ("footprint", "origins", "rank", "mode", "cval")

    def __init__(self, footprint, origins, rank, mode, cval):
        self.footprint, self.origins, self.rank, self.mode, self.cval = footprint, origins, rank, mode, cval

    def native(self) -> tuple:
        """(footprint shape, mask, origins, rank, mode, cval), as _native takes them."""
        fp = self.footprint
        return list(fp.shape), fp.ravel().tolist(), self.origins, self.rank, self.mode, self.cval

    def depths(self) -> list:
        """Per axis, how far the window reaches from its point (either side)."""
        return [max(n // 2 + o, n - 1 - (n // 2 + o)) for n, o in zip(self.footprint.shape, self.origins)]


def _rank_axes(axes: Any, ndim: int) -> tuple:
    """SciPy's ``_check_axes`` as its rank filters read ``axes`` (a scalar is
    taken as it is, unchecked, as SciPy)."""
    if axes is None:
        return tuple(range(ndim))
    if np.isscalar(axes):
        return (operator.index(axes),)
    if not isinstance(axes, Iterable):
        raise ValueError("axes must be an integer, iterable of integers, or None")
    listed = tuple(operator.index(a) for a in axes)
    for a in listed:
        if not -ndim <= a <= ndim - 1:
            raise ValueError(f"specified axis: {a} is out of range")
    listed = tuple(a % ndim for a in listed)
    if len(set(listed)) != len(listed):
        raise ValueError("axes must be unique")
    return listed


def _rank_geometry(ndim: int, size: Any, footprint: Any, origin: Any, mode: Any, axes: Any) -> tuple:
    """SciPy's ``_rank_filter`` up to the rank, for an ``ndim``-D array:
    (footprint expanded to every axis, origins per axis, modes: the mode, or
    one per axis for a sequence), with SciPy's errors in SciPy's order."""
    axes = _rank_axes(axes, ndim)
    num_axes = len(axes)
    if footprint is None:
        if size is None:
            raise RuntimeError("no footprint or filter size provided")
        footprint = np.ones(_normalize_sequence(size, num_axes), dtype=bool)
    else:
        footprint = np.asarray(footprint, dtype=bool)
    if num_axes < ndim:
        # SciPy's _expand_footprint: size-1 axes where not filtered (the
        # footprint's axes keep their order).
        if footprint.ndim != num_axes:
            raise RuntimeError(f"footprint.ndim ({footprint.ndim}) must match len(axes) ({num_axes})")
        footprint = np.expand_dims(footprint, tuple(ax for ax in range(ndim) if ax not in axes))
    origins = _normalize_sequence(origin, num_axes)
    modes = mode
    if num_axes < ndim:
        expanded = [0] * ndim
        for o, ax in zip(origins, axes):
            expanded[ax] = o
        origins = expanded
    if not isinstance(mode, str) and isinstance(mode, Iterable):
        modes = ["constant"] * ndim
        for m, ax in zip(_normalize_sequence(mode, num_axes), axes):
            modes[ax] = m
    fshape = [n for n in footprint.shape if n > 0]
    if len(fshape) != ndim:
        raise RuntimeError(f"footprint.ndim ({footprint.ndim}) must match len(axes) ({len(axes)})")
    for o, n in zip(origins, fshape):
        if (n // 2 + o < 0) or (n // 2 + o >= n):
            raise ValueError("invalid origin")
    return footprint, origins, modes


def _rank_call(operation: str, rank: Any, dtype: np.dtype, ndim: int, size, footprint, mode, cval, origin,
               axes) -> _RankCall:
    """The call kernpack computes for SciPy's ``median_filter`` (operation
    'median'), ``rank_filter`` ('rank') or ``percentile_filter``
    ('percentile', `rank` the percentile) of an array of ``dtype`` and
    ``ndim``, with SciPy's errors for bad arguments; _NotComputed for valid
    calls kernpack does not take."""
    if dtype.kind == "c":
        raise TypeError("Complex type not supported")
    fp, origins, modes = _rank_geometry(ndim, size, footprint, origin, mode, axes)
    count = int(np.count_nonzero(fp))
    if operation == "median":
        rank = count // 2
    elif operation == "percentile":
        percentile = rank
        if percentile < 0.0:
            percentile += 100.0
        if percentile < 0 or percentile > 100:
            raise RuntimeError("invalid percentile")
        rank = count - 1 if percentile == 100.0 else int(float(count) * percentile / 100.0)
    elif not isinstance(rank, (numbers.Integral, np.integer)) or isinstance(rank, (bool, np.bool_)):
        raise _NotComputed(f"rank={rank!r}: kernpack's rank_filter takes an integer rank")
    rank = int(rank)
    if rank < 0:
        rank += count
    if rank < 0 or rank >= count:
        raise RuntimeError("rank not within filter footprint size")
    if ndim == 0 or fp.ndim != ndim:
        raise _NotComputed(f"a {ndim}-D array with a {fp.ndim}-D footprint: kernpack's rank filters take N-D arrays")
    if not isinstance(modes, str):
        # A mode per axis: SciPy's minimum and maximum filters (rank 0 and
        # count - 1) take them; its other ranks do not.
        if 0 < rank < count - 1:
            raise RuntimeError("A sequence of modes is not supported by non-separable rank filters")
        kinds = {_correlate_mode(m) for m, n in zip(modes, fp.shape) if n > 1}
        if len(kinds) > 1:
            raise _NotComputed(f"mode={mode!r}: kernpack's rank filters take one boundary mode for every axis")
        kind = kinds.pop() if kinds else "reflect"
    else:
        kind = _correlate_mode(modes)
    cval = _real(cval)
    for o in origins:
        if not isinstance(o, (numbers.Integral, np.integer)):
            raise _NotComputed(f"origin={origin!r}: kernpack's rank filters take integer origins")
    return _RankCall(fp, [int(o) for o in origins], rank, kind, cval if kind == "constant" else 0.0)


def _rank_dtype(dtype: np.dtype) -> Optional[np.dtype]:
    """The dtype kernpack filters arrays of ``dtype`` in (bool as uint8),
    or None."""
    dtype = dtype.newbyteorder("=")
    if dtype == np.bool_:
        return np.dtype(np.uint8)
    return dtype if dtype in _RANK_DTYPES else None


def _cval_fits(cval: float, dtype: np.dtype) -> bool:
    """Whether ``cval`` truncated toward zero is a value of the integer ``dtype``."""
    if not math.isfinite(cval):
        return False
    info = np.iinfo(dtype)
    return info.min <= math.trunc(cval) <= info.max


def _rank_compute_dtype(work: np.dtype, out: np.dtype, call: _RankCall, is_bool: bool) -> np.dtype:
    """The dtype to filter in so that the result cast to ``out`` is SciPy's,
    or _NotComputed. SciPy selects among float64 values; its padding in
    'constant' mode is `cval` cast to the input's type (as kernpack's:
    truncated toward zero for integers), except at rank 0 and -1 over a
    full box (its separable minimum and maximum filters), where it is
    `cval` itself, cast only with the result: kernpack then filters a
    float64 copy where that differs from the input's dtype (a fraction cast
    to a float output; a float32 input into another dtype), and runs SciPy
    where a cast of `cval` would be out of range (SciPy's C cast)."""
    if call.mode != "constant" or work == np.float64:
        return work
    cval = call.cval
    if is_bool:  # SciPy pads with (npy_bool)cval, stored as it is
        if cval in (0.0, 1.0):
            return work
        raise _NotComputed(f"cval={cval!r} in 'constant' mode for a bool array: kernpack pads bool arrays with 0 or 1")
    separable = call.rank in (0, int(np.count_nonzero(call.footprint)) - 1) and bool(call.footprint.all())
    if work == np.float32:
        # float32(cval) orders as cval among float32 values and casts to them alike.
        if not separable or out == np.float32 or math.isnan(cval) or float(np.float32(cval)) == cval:
            return work
        return np.dtype(np.float64)
    fits = _cval_fits(cval, work)
    if not separable:
        if fits:
            return work
    elif fits and (math.trunc(cval) == cval or out.kind in "iu"):
        # cval truncated orders as cval among integers and casts to integers alike.
        return work
    elif out.kind == "f" or (out.kind in "iu" and _cval_fits(cval, out)):
        return np.dtype(np.float64)
    raise _NotComputed(
        f"cval={cval!r} in 'constant' mode for a {work} array into {out}: out of the range kernpack's "
        "rank filters pad with"
    )


def _rank_output(output: Any, shape, dtype: np.dtype) -> np.ndarray:
    """SciPy's ``_get_output`` for the rank filters: the host array to return
    (new, of ``dtype`` or of the dtype ``output``, or ``output`` itself), with
    SciPy's errors; _NotComputed for outputs kernpack does not write."""
    if output is None:
        return np.empty(shape, dtype.newbyteorder("="))
    if _is_dtype(output):
        out_dtype = np.dtype(output)
        if isinstance(output, str) and not issubclass(out_dtype.type, np.number):
            raise RuntimeError("output must have numeric dtype")
        result = None
    elif isinstance(output, np.ndarray):
        if output.shape != tuple(shape):
            raise RuntimeError("output shape not correct")
        if not output.flags.writeable:
            raise ValueError("output array is read-only")
        out_dtype, result = output.dtype, output
    else:
        raise _NotComputed("output is not a NumPy array: kernpack's rank filters write NumPy arrays")
    if out_dtype.kind not in _RANK_OUTPUT_KINDS or out_dtype.newbyteorder("=") not in (*_RANK_DTYPES, np.bool_):
        raise _NotComputed(
            f"output dtype {out_dtype}: kernpack's rank filters write integers, bool, float32 or float64"
        )
    if out_dtype == np.bool_ and dtype != np.bool_:
        # SciPy's C cast to npy_bool keeps the value's low byte (0.5 False, 2 stored as 2).
        raise _NotComputed("a bool output of a non-bool array: kernpack's rank filters write bool arrays' own")
    return result if result is not None else np.empty(shape, out_dtype)


def _rank_host(name: str, array: np.ndarray, output: Any, call: _RankCall, backend, device) -> np.ndarray:
    work = _rank_dtype(array.dtype)
    if work is None:
        raise _NotComputed(
            f"input is {array.dtype}: kernpack's {name} computes (u)int8 to (u)int64, bool, float32 and float64 "
            "arrays"
        )
    result = _rank_output(output, array.shape, array.dtype)
    dtype = _rank_compute_dtype(work, result.dtype.newbyteorder("="), call, array.dtype == np.bool_)
    if array.size == 0:
        return result
    src = array.view(np.uint8) if array.dtype == np.bool_ else array
    if not (src.dtype == dtype and src.flags.c_contiguous and src.flags.aligned) or np.may_share_memory(src, result):
        # A copy, always (in place: the filter reads the copy, as SciPy's temporary).
        src = np.array(src, dtype=dtype, order="C", copy=True)
    direct = result.dtype == dtype and result.flags.c_contiguous and result.flags.aligned
    dst = result if direct else np.empty(array.shape, dtype)
    _native.rank_filter(context(backend, device), src, dst, *call.native())
    if dst is not result:
        np.copyto(result, dst, casting="unsafe")
    return result


def _rank_device(name: str, arrays, output: Any, call: _RankCall, backend, device) -> Any:
    ctx = device_context(arrays, backend, device)
    src = arrays["input"]
    if src.dtype not in _RANK_DTYPES:
        raise _NotComputed(
            f"input is a {src.dtype} device array: kernpack's {name} computes (u)int8 to (u)int64, float32 and "
            "float64 device arrays",
            TypeError,
        )
    if _is_dtype(output) and np.dtype(output) != src.dtype:
        raise _NotComputed(
            f"output dtype {np.dtype(output)}: device arrays are filtered in their own dtype ({src.dtype})", TypeError
        )
    if src.dtype.kind in "iu" and call.mode == "constant" and not _cval_fits(call.cval, src.dtype):
        raise _NotComputed(f"cval={call.cval!r}: out of the range of the {src.dtype} device array", TypeError)
    dst = arrays.get("output")
    if dst is None:
        result = empty(src, src.shape, src.dtype)
        dst = device_array(result)
    else:
        result = output
        if tuple(dst.shape) != tuple(src.shape):
            raise RuntimeError("output shape not correct")
        if dst.dtype != src.dtype:
            raise _NotComputed(
                f"output is {dst.dtype} but input is {src.dtype}: pass an output of the input's dtype", TypeError
            )
        if not dst.is_c_contiguous() or dst.ptr % dst.dtype.itemsize:
            raise _NotComputed("output is a device array that is not C-contiguous: pass a contiguous one", TypeError)
    if src.size == 0:
        return as_result(arrays["input"], result)
    if not src.is_c_contiguous() or src.ptr % src.dtype.itemsize or _spans_overlap(src, dst):
        # A C-contiguous copy made on the same stream (in place too, as SciPy allows).
        src = device_array(copy(src))
    _native.rank_filter_device(ctx, src.dtype.name, src.ptr, dst.ptr, list(src.shape), *call.native(),
                               current_stream(src))
    return as_result(arrays["input"], result)


def _rank_filtered(name, operation, rank, input, size, footprint, output, mode, cval, origin, axes, backend, device):
    """SciPy's ``name`` (``_rank_filter`` with ``operation``) as kernpack
    computes it, or, for what it does not compute, SciPy (cupyx) as
    :func:`uniform_filter` decides."""
    if size is not None and footprint is not None:
        warnings.warn("ignoring size because footprint is set", UserWarning, stacklevel=3)
        size = None  # and SciPy, standing in, does not warn again
    on_device = split([("input", input), ("output", output if not _is_dtype(output) else None)])
    array = on_device["input"] if on_device is not None else np.asarray(input)
    try:
        call = _rank_call(operation, rank, np.dtype(array.dtype), array.ndim, size, footprint, mode, cval, origin,
                          axes)
        if on_device is not None:
            return _rank_device(name, on_device, output, call, backend, device)
        return _rank_host(name, array, output, call, backend, device)
    except _NotComputed as e:
        library = None if on_device is None else _library(on_device.values())
        if library is not None:
            device_context(on_device, backend, device)  # the device checks the computed path makes
        standing_in = _scipy_standing_in(e, None, backend, library, name)
        # axes only when given: cupyx before 14 has no such parameter.
        kwargs = dict(size=size, footprint=footprint, output=output, mode=mode, cval=cval, origin=origin)
        if axes is not None:
            kwargs["axes"] = axes
        args = (input,) if operation == "median" else (input, rank)
        with cupy_device(None if on_device is None else array.device):
            return standing_in(*args, **kwargs)


_RANK_DOC_NOTES = """
    kernpack computes arrays of (u)int8 to (u)int64, bool (as uint8),
    float32 and float64 of any number of dimensions (views and other layouts
    are copied to C order first), any footprint and origin per axis, one
    boundary mode, on the GPU or its CPU backend, exactly: the value of the
    rank among the window's values, in the input's dtype, 'constant' mode
    padding with `cval` cast to that dtype (integers: truncated toward
    zero), as SciPy's rank filters. Into an `output` of another dtype the
    result is cast as NumPy's ``casting='unsafe'`` (SciPy's C cast). At rank
    0 and -1 over a full box SciPy's minimum and maximum filters pad with
    `cval` itself: where that differs after the cast (a fraction into a
    float output, a float32 input into another dtype), kernpack filters a
    float64 copy, as SciPy. Other calls SciPy accepts (float16 and other
    dtypes, a `cval` out of an integer array's range, a `cval` other than 0
    or 1 for bool arrays, a bool output of other arrays, a different mode
    per axis at rank 0 or -1, an output that is not a NumPy array, 0-D
    arrays) run ``scipy.ndimage``'s filter for host arrays unless the GPU
    backend was asked for, and ``cupyx.scipy.ndimage``'s for CuPy arrays
    (also for bool arrays and an output of another dtype); other device
    arrays (PyTorch, Numba, JAX) raise NotImplementedError for those calls,
    or TypeError saying what to pass for layouts and dtypes.

    Values are ordered as numbers; NaNs sort above +inf (NumPy's sort
    order), and -0.0 below +0.0. SciPy's selection compares with ``<``, so
    its result where a window holds a NaN depends on where the NaN lies in
    the window (and -0.0 and +0.0 tie): kernpack's may differ there. SciPy
    selects among float64 values: for int64 and uint64 values beyond 2**53
    its results are rounded (kernpack's are exact), and its 1-D path casts
    uint64 values above 2**63 to int64. SciPy's 1-D path (1-D arrays) also
    reads a footprint that is not all set as a full box, reads past the
    array for some windows longer than it, and writes an output array of
    another dtype as raw memory for float32, float64 and int64 input;
    kernpack computes those calls as SciPy's N-D path does (the array as a
    1 x n image)."""

_RANK_DOC_PARAMETERS = """
    size : int or sequence of ints, optional
        The window's shape, one size for every axis or one per axis (of
        `axes` when given); ignored (with SciPy's UserWarning) when
        `footprint` is given.
    footprint : array_like of bool, optional
        The window's points (one axis per axis of the array, or per axis of
        `axes`): set points take part.
    output : array or dtype, optional
        Where to write (same shape; may be `input` itself or overlap it: the
        filter then reads a copy) or the result's dtype. Default: a new array
        of the input's dtype.
    mode : {'reflect', 'constant', 'nearest', 'mirror', 'wrap'}, optional
        SciPy's boundary modes and their 'grid-' aliases (as SciPy maps
        them for filters: 'grid-mirror' is 'reflect', 'grid-constant'
        'constant', 'grid-wrap' 'wrap'), one for every axis.
    cval : float, optional
        Value outside the array with ``mode='constant'`` (for integer arrays
        truncated toward zero).
    origin : int or sequence of ints, optional
        SciPy's shift of the window, one for every axis or one per axis:
        along an axis of footprint size n, ``-(n // 2)`` to ``(n - 1) // 2``
        (ValueError otherwise, as SciPy).
    axes : int or sequence of int, optional
        The axes to filter (default all); `size`, `origin` and a `footprint`
        then have one entry (axis) per axis listed, the others a window of
        size 1.
    backend : {'auto', 'gpu', 'cpu'}, optional
        Where host arrays are filtered (default: :func:`kernpack.get_backend`).
    device : int, optional
        The GPU that host arrays run on (default: :func:`kernpack.get_device`);
        device arrays run on their own."""

_RANK_DOC_RAISES = """
    Raises
    ------
    RuntimeError, ValueError, TypeError
        SciPy's errors: no size or footprint, a sequence of the wrong length,
        an invalid origin or axis, a rank outside the footprint, an unknown
        mode (or a sequence of modes), complex input, an output of another
        shape.
    NotImplementedError
        For what kernpack does not compute (above) when no SciPy (cupyx)
        stands in."""


def median_filter(
    input: Any,
    size: Any = None,
    footprint: Any = None,
    output: Optional[Any] = None,
    mode: Any = "reflect",
    cval: float = 0.0,
    origin: Any = 0,
    *,
    axes: Optional[Any] = None,
    backend: Optional[str] = None,
    device: Optional[int] = None,
) -> Any:
    return _rank_filtered("median_filter", "median", None, input, size, footprint, output, mode, cval, origin, axes,
                          backend, device)


def rank_filter(
    input: Any,
    rank: int,
    size: Any = None,
    footprint: Any = None,
    output: Optional[Any] = None,
    mode: Any = "reflect",
    cval: float = 0.0,
    origin: Any = 0,
    *,
    axes: Optional[Any] = None,
    backend: Optional[str] = None,
    device: Optional[int] = None,
) -> Any:
    return _rank_filtered("rank_filter", "rank", rank, input, size, footprint, output, mode, cval, origin, axes,
                          backend, device)


def percentile_filter(
    input: Any,
    percentile: float,
    size: Any = None,
    footprint: Any = None,
    output: Optional[Any] = None,
    mode: Any = "reflect",
    cval: float = 0.0,
    origin: Any = 0,
    *,
    axes: Optional[Any] = None,
    backend: Optional[str] = None,
    device: Optional[int] = None,
) -> Any:
    return _rank_filtered("percentile_filter", "percentile", percentile, input, size, footprint, output, mode, cval,
                          origin, axes, backend, device)


median_filter.__doc__ = f"""Multidimensional median filter, as ``scipy.ndimage.median_filter``.

    Output ``i`` is the median of the input at the window's points around
    ``i`` (``i + j - (n // 2 + origin)`` per axis for each set point ``j`` of
    a footprint of size n), the input extended past its edges by `mode`:
    the value of rank ``count // 2`` (0 the smallest) among the window's
    ``count`` values, the upper middle of an even count, as SciPy.
{_RANK_DOC_NOTES}

    Parameters
    ----------
    input : array_like
        The array (NumPy or anything ``np.asarray`` accepts, or a CuPy,
        PyTorch, Numba or JAX device array).{_RANK_DOC_PARAMETERS}

    Returns
    -------
    median_filter : ndarray
        The filtered array (`output` when one was given).
{_RANK_DOC_RAISES}
    """

rank_filter.__doc__ = f"""Multidimensional rank filter, as ``scipy.ndimage.rank_filter``.

    Output ``i`` is the value of `rank` among the input's values at the
    window's points around ``i``, as in :func:`median_filter`.
{_RANK_DOC_NOTES}

    Parameters
    ----------
    input : array_like
        As in :func:`median_filter`.
    rank : int
        0 the smallest, ``count - 1`` the largest of the footprint's
        ``count`` points; negative ranks count from the largest (-1).{_RANK_DOC_PARAMETERS}

    Returns
    -------
    rank_filter : ndarray
        The filtered array (`output` when one was given).
{_RANK_DOC_RAISES}
    """

percentile_filter.__doc__ = f"""Multidimensional percentile filter, as ``scipy.ndimage.percentile_filter``.

    Output ``i`` is the value of rank ``int(count * percentile / 100)``
    (``count - 1`` at 100) among the input's values at the window's
    ``count`` points around ``i``, as in :func:`median_filter`.
{_RANK_DOC_NOTES}

    Parameters
    ----------
    input : array_like
        As in :func:`median_filter`.
    percentile : float
        -100 to 100; a negative percentile counts from 100 (-20 is 80).{_RANK_DOC_PARAMETERS}

    Returns
    -------
    percentile_filter : ndarray
        The filtered array (`output` when one was given).
{_RANK_DOC_RAISES}
    """
