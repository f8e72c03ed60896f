"""Smoothing of 2-D images: ``scipy.ndimage.uniform_filter``'s signature and
semantics. kernpack computes float images with any size and origin per axis
(one mode for both); the rest of what SciPy accepts runs SciPy for host
arrays (unless the GPU was asked for) and cupyx.scipy for CuPy arrays."""
from __future__ import annotations

import importlib
import numbers
import operator
from collections.abc import Iterable
from typing import Any, Optional

import numpy as np

from . import _native
from ._arrays import FLOAT_DTYPES, as_result, copy, cupy_device, current_stream, device_array, empty, split
from ._context import _CPU_FOR_DEVICE_ARRAYS, _check, context, device_context, get_backend

__all__ = ["uniform_filter"]

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


def _per_axis(name: str, value: Any, ndim: int) -> list:
    """One value per axis: a scalar for every axis, or a sequence of ``ndim``."""
    if isinstance(value, (str, numbers.Number)) or not isinstance(value, Iterable):
        return [value] * ndim  # None and other scalars: the checks below refuse them, as SciPy does
    values = list(value)
    if len(values) != ndim:
        raise RuntimeError(
            f"{name}: sequence argument must have length equal to input rank ({ndim}, one value per axis), "
            f"got {len(values)}"
        )
    return values


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

    kernpack computes 2-D float32/float64 images (and 1-D host arrays, as
    1 x n images) with any window size and
    origin per axis (odd or even, larger than the image too), one boundary
    mode for the filtered axes, any subset of the two axes, on the GPU or its
    CPU backend, at a cost that does not grow with the window. Any other call
    that SciPy accepts (other ranks, dtypes, a mode per axis, on device
    arrays a window wider than ``MAX_GPU_WINDOW_COLS`` columns) runs
    ``scipy.ndimage.uniform_filter`` itself for host arrays, unless the GPU
    backend was asked for (``backend='gpu'`` or :func:`kernpack.set_backend`),
    and ``cupyx.scipy.ndimage.uniform_filter`` for CuPy arrays (also for
    layouts and output dtypes kernpack's device path does not take). Other
    device arrays (PyTorch, Numba, JAX) raise NotImplementedError for those
    calls, or TypeError saying what to pass for layouts and dtypes.

    Parameters
    ----------
    input : array_like
        A 2-D float32 or float64 image: a NumPy array (or anything
        ``np.asarray`` accepts) or a device array (CuPy, PyTorch, Numba, JAX).
        Views with a row stride are read in place.
    size : int or sequence of ints, optional
        Window size, one for every axis or one per axis (of `axes` when
        given); sizes below 2 leave their axis unfiltered, as in SciPy.
    output : array or dtype, optional
        Where to write (same shape; NumPy for host input, the same library
        for device input; may be `input` itself) or the float dtype of the
        result. Default: a new array of the input's dtype. Host images are
        filtered in the wider of the input's and the output's dtype (a
        float64 output of a float32 image holds float64 means, as SciPy's);
        device images only into their own dtype (with CuPy, other output
        dtypes run cupyx's filter).
    mode : {'reflect', 'constant', 'nearest', 'mirror', 'wrap', 'interior'}, optional
        SciPy's boundary modes (and their 'grid-' aliases), one for every
        filtered axis (a sequence of equal modes too); 'interior' filters only
        points whose window fits and copies the others.
    cval : float, optional
        Value outside the image with ``mode='constant'``.
    origin : int or sequence of ints, optional
        SciPy's origin, one for every axis or one per axis: along an axis of
        size n, the window of point i is ``i - (n // 2 + origin)`` to
        ``i - (n // 2 + origin) + n - 1``, origin in ``-(n // 2)`` to
        ``(n - 1) // 2`` (ValueError otherwise, as SciPy).
    axes : sequence of int, optional
        The axes to filter (default both); `size`, `mode` and `origin`
        sequences then hold one value per axis listed.
    backend : {'auto', 'gpu', 'cpu'}, optional
        Where host images are filtered (default: :func:`kernpack.get_backend`).
    device : int, optional
        The GPU that host arrays run on (default: :func:`kernpack.get_device`);
        device arrays run on their own.

    Returns
    -------
    uniform_filter : ndarray
        The filtered image (`output` when one was given).

    Raises
    ------
    NotImplementedError
        For what kernpack does not compute (above) with device arrays other
        than CuPy's, with host arrays and the GPU backend, for 'interior'
        (SciPy has no such mode), or when SciPy (cupyx) is not installed.
    RuntimeError
        For SciPy's own errors (an unknown mode, a sequence of the wrong
        length, an output of another shape).
    TypeError
        As SciPy: a `cval` that is not a real number, an `origin` that is not
        an integer.

    Notes
    -----
    A non-finite `cval` (NaN, +-inf) is accepted: 'constant' mode pads the
    image with it, so every output whose window reaches past the edge takes it
    into its mean, and the other outputs stay finite. (SciPy's running sums
    carry it on along each line, making every output non-finite.) The other
    modes ignore `cval`, as SciPy does. In the same way a NaN or infinity in
    the image reaches only the outputs whose window holds it, where SciPy's
    running sums spread it to the end of its line.
    """
    on_device = split([("input", input), ("output", output if not _is_dtype(output) else None)])
    image = on_device["input"] if on_device is not None else np.asarray(input)
    if on_device is None and image.ndim == 1 and _as_row_computed(image, output, size, mode, origin, axes):
        # A 1-D host array is the 1 x n image of its values, filtered along its columns.
        _filtered_axes(axes, 1)  # SciPy's errors for bad axes
        row_size, row_mode, row_origin = (_per_axis(name, v, 1)[0] for name, v in
                                          (("size", size), ("mode", mode), ("origin", origin)))
        row_output = output[None, :] if isinstance(output, np.ndarray) and output.ndim == 1 else output
        result = uniform_filter(image[None, :], (1, row_size), row_output, row_mode, cval, (0, row_origin),
                                backend=backend, device=device)
        return output if row_output is not output else result[0]
    try:
        window = _computed_window(image, size, mode, cval, origin, axes)
        if on_device is not None:
            return _device(on_device, output, *window, backend, device)
        return _host(image, output, *window, backend, device)
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


def _scipy_standing_in(not_computed: _NotComputed, mode: Any, backend: Optional[str], library: Optional[str]) -> Any:
    """The ``uniform_filter`` that computes what kernpack's kernels do not,
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
            return _defined_filter("cupyx.scipy.ndimage")
        except ImportError:
            raise not_computed.refusal(str(not_computed)) from None
    if interior or _check(backend if backend is not None else get_backend()) == "gpu":
        raise NotImplementedError(str(not_computed)) from None
    try:
        return _defined_filter("scipy.ndimage")
    except ImportError as e:
        raise NotImplementedError(f"{not_computed} (install SciPy for what kernpack does not compute)") from e


def _defined_filter(module_name: str) -> Any:
    """``uniform_filter`` as ``module_name`` defines it. A caller may have put
    kernpack's in the module's place (to run another project's tests through
    kernpack): then the function of the module's ``_filters``, where SciPy
    and cupyx define it, so that kernpack never calls itself."""
    module = importlib.import_module(module_name)
    try:
        defined = importlib.import_module(module_name + "._filters").uniform_filter
    except (ImportError, AttributeError):
        defined = None
    # The defining module's function first: a wrapper of kernpack's put in
    # the public name would otherwise call kernpack back.
    for function in (defined, module.uniform_filter):
        if function is not None and not _is_kernpacks(function):
            return function
    raise ImportError(f"{module_name}.uniform_filter is kernpack's own")


def _is_kernpacks(function: Any) -> bool:
    return (getattr(function, "__module__", None) or "").split(".")[0] == "kernpack"


def _computed_window(image, size, mode, cval, origin, axes):
    """The window kernpack computes for this call: ((rows, cols) sizes,
    (rows, cols) origins, kernpack's mode, cval), or _NotComputed. Nothing
    is written before this has passed."""
    filtered = _filtered_axes(axes, image.ndim)
    n = len(filtered)
    sizes = _per_axis("size", size, n)
    modes = _per_axis("mode", mode, n)
    origins = _per_axis("origin", origin, n)
    _check_image(image.ndim, image.dtype, "input")
    window = [1, 1]
    shift = [0, 0]
    for axis, s, o in zip(filtered, sizes, origins):
        if isinstance(s, (bool, np.bool_)) or not float(s).is_integer():
            raise _NotComputed(f"size={s!r}: kernpack's uniform_filter takes integer sizes")
        o = operator.index(o)  # TypeError for 0.5, as SciPy
        # SciPy leaves an axis with a size below 2 unfiltered (its origin unread).
        s = int(s)
        if s < 2:
            continue
        if not -(s // 2) <= o <= (s - 1) // 2:
            raise ValueError("invalid origin")
        window[axis], shift[axis] = s, o
    for m in modes:
        if not isinstance(m, str) or m not in _MODES:
            raise RuntimeError(f"boundary mode not supported: {m!r}")
    kinds = {_MODES[m] for m in modes}
    if len(kinds) > 1:
        raise _NotComputed(f"mode={modes}: kernpack's uniform_filter takes one boundary mode for every axis")
    kind = kinds.pop() if kinds else "reflect"
    # SciPy reads cval only in 'constant' mode (any value, NaN included, elsewhere).
    if kind != "constant":
        return tuple(window), tuple(shift), kind, 0.0
    try:
        if isinstance(cval, (str, bytes)):
            raise TypeError
        return tuple(window), tuple(shift), "constant", float(cval)
    except (TypeError, ValueError):
        raise TypeError(f"cval must be a real number, not {type(cval).__name__}") from None


def _as_row_computed(image, output, size, mode, origin, axes) -> bool:
    """True when the 1-D host call is one kernpack computes as a 1 x n image:
    a float array, one size, mode and origin (or sequences of one), no axes or
    its one axis, an output of its shape (or a dtype, or None)."""
    if image.dtype.newbyteorder("=") not in FLOAT_DTYPES:
        return False
    if isinstance(output, np.ndarray) and output.shape != image.shape:
        return False
    for value in (size, mode, origin):
        if isinstance(value, Iterable) and not isinstance(value, str) and len(list(value)) != 1:
            return False  # SciPy's error, through the 2-D checks or the fallback
    if axes is not None:
        listed = list(np.atleast_1d(axes))
        if len(listed) != 1 or listed[0] not in (0, -1):
            return False
    return True


def _filtered_axes(axes: Any, ndim: int) -> list:
    """The axes to filter, each in 0..ndim-1, in the order given (SciPy's
    errors for repeated or out-of-range ones)."""
    if axes is None:
        return list(range(ndim))
    listed = [operator.index(a) for a in np.atleast_1d(axes)]
    if any(not -ndim <= a < ndim for a in listed):
        raise ValueError("axis out of range")  # SciPy: an invalid axis
    listed = [a % ndim for a in listed]
    if len(set(listed)) != len(listed):
        raise ValueError("axes must be unique")
    return listed


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
