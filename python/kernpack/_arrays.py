"""How arrays reach the native layer.

Host arrays (anything ``np.asarray`` accepts) are converted the way SciPy
converts them and passed as C-contiguous, native-endian NumPy arrays; the
native layer checks their dtype, layout, alignment and writability.

Device arrays (``__cuda_array_interface__``: CuPy, Numba, PyTorch; or
``__dlpack__`` on a CUDA device: JAX, ...) are passed as device addresses with
no copy; results are allocated by the caller's own library and the work is
enqueued on that library's current stream.
"""
from __future__ import annotations

import contextlib
import functools
import math
import sys
from typing import Any, Optional, Sequence, Tuple

import numpy as np

FLOAT_DTYPES = (np.dtype(np.float32), np.dtype(np.float64))
_KDL_CUDA = 2  # DLPack device type of CUDA memory
_KDL_CUDA_MANAGED = 13


class DeviceArray:
    """A caller's device array: the object, its library and its raw layout."""

    __slots__ = ("obj", "lib", "ptr", "shape", "strides", "dtype", "device", "origin", "contiguous")

    def __init__(self, obj, lib, ptr, shape, strides, dtype, device, origin=None, contiguous=None):
        self.obj = obj  # keeps the memory alive during the call
        self.lib = lib  # "cupy", "torch" or "numba": who allocates results
        self.ptr = ptr
        self.shape = shape
        self.dtype = dtype
        self.strides = strides if strides is not None else _c_strides(shape, dtype.itemsize)
        self.device = device  # ordinal, or None when the library does not say
        self.origin = origin  # for DLPack-only producers: the module to hand results back to
        self.contiguous = contiguous  # None: derive from the strides

    @property
    def size(self) -> int:
        return math.prod(self.shape)

    @property
    def ndim(self) -> int:
        return len(self.shape)

    def is_c_contiguous(self) -> bool:
        if self.contiguous is not None:
            return self.contiguous
        expected = _c_strides(self.shape, self.dtype.itemsize)
        return all(n == 1 or s == e for n, s, e in zip(self.shape, self.strides, expected))


def _c_strides(shape: Sequence[int], itemsize: int) -> Tuple[int, ...]:
    strides = []
    step = itemsize
    for n in reversed(shape):
        strides.append(step)
        step *= max(int(n), 1)
    return tuple(reversed(strides))


def _from_cupy(obj) -> DeviceArray:
    return DeviceArray(
        obj, "cupy", obj.data.ptr, obj.shape, obj.strides, obj.dtype, obj.device.id,
        contiguous=obj.flags.c_contiguous,
    )


def _from_torch(obj) -> Optional[DeviceArray]:
    if not obj.is_cuda:
        return None
    try:  # torch.float32 is np.float32, ...
        dtype = np.dtype(str(obj.dtype).replace("torch.", ""))
    except TypeError:
        raise TypeError(f"kernpack takes float32 or float64 tensors, not {obj.dtype}") from None
    return DeviceArray(
        obj, "torch", obj.data_ptr(), tuple(obj.shape), tuple(s * dtype.itemsize for s in obj.stride()), dtype,
        obj.device.index, contiguous=obj.is_contiguous(),
    )


def _from_cai(obj) -> Optional[DeviceArray]:
    cai = getattr(obj, "__cuda_array_interface__", None)
    if cai is None:
        return None
    module = type(obj).__module__.split(".", 1)[0]
    strides = cai.get("strides")
    return DeviceArray(
        obj, "numba" if module == "numba" else "cupy", int(cai["data"][0]), tuple(int(n) for n in cai["shape"]),
        None if strides is None else tuple(int(s) for s in strides), np.dtype(cai["typestr"]), None,
    )


def _from_dlpack(obj) -> Optional[DeviceArray]:
    dlpack_device = getattr(obj, "__dlpack_device__", None)
    if dlpack_device is None or not hasattr(obj, "__dlpack__"):
        return None
    kind, _ordinal = dlpack_device()
    if int(kind) not in (_KDL_CUDA, _KDL_CUDA_MANAGED):
        return None
    # Seen through a library that can allocate results on the same device;
    # results go back to the producer through its own from_dlpack.
    view, lib = _dlpack_view(obj)
    inner = device_array(view)
    inner.lib = lib
    root = type(obj).__module__.split(".", 1)[0]
    inner.origin = "jax" if root == "jaxlib" else root
    inner.obj = (obj, view)
    return inner


def _host(_obj) -> None:
    return None


@functools.lru_cache(maxsize=None)
def _handler(cls):
    """How to read arrays of type ``cls`` (decided once per type)."""
    module = cls.__module__.split(".", 1)[0]
    if issubclass(cls, (np.ndarray, np.generic, list, tuple, float, int, complex)):
        return _host
    if module == "cupy" and hasattr(cls, "data") and hasattr(cls, "device"):
        return _from_cupy
    if module == "torch" and hasattr(cls, "data_ptr"):
        return _from_torch
    if module in ("jax", "jaxlib") and hasattr(cls, "__dlpack_device__"):
        return _from_dlpack  # results go back as JAX arrays (JAX also offers the CAI)
    if hasattr(cls, "__cuda_array_interface__"):
        return _from_cai
    if hasattr(cls, "__dlpack_device__"):
        return _from_dlpack
    return _host


def device_array(obj: Any) -> Optional[DeviceArray]:
    """The device array behind ``obj``, or None for host data."""
    if obj is None:
        return None
    handler = _handler(type(obj))
    result = handler(obj)
    if result is None and handler is _host and hasattr(obj, "__cuda_array_interface__"):
        return _from_cai(obj)  # an instance attribute (a wrapper object)
    return result


def _dlpack_view(obj):
    try:
        import cupy

        return cupy.from_dlpack(obj), "cupy"
    except ImportError:
        pass
    try:
        import torch

        return torch.from_dlpack(obj), "torch"
    except ImportError:
        raise TypeError(
            "a DLPack CUDA array needs CuPy or PyTorch installed to be used with kernpack "
            "(they allocate the results on its device)"
        ) from None


def current_stream(arr: DeviceArray) -> int:
    """The CUstream the array's library enqueues on now (0: the legacy default stream)."""
    if arr.lib == "torch":
        import torch

        return int(torch.cuda.current_stream(_base(arr).device).cuda_stream)
    if arr.lib == "cupy":
        with cupy_device(arr.device):  # CuPy's current stream is per device
            import cupy

            return cupy.cuda.get_current_stream().ptr
    cai = getattr(arr.obj, "__cuda_array_interface__", {})
    stream = cai.get("stream") or 0
    return 0 if stream == 1 else int(stream)  # 1 is CAI's name for the legacy default stream


def empty(like: DeviceArray, shape, dtype) -> Any:
    """A new device array of the caller's library, on the same device."""
    if like.lib == "torch":
        import torch

        return torch.empty(tuple(shape), dtype=getattr(torch, np.dtype(dtype).name), device=_base(like).device)
    if like.lib == "numba":
        from numba import cuda

        return cuda.device_array(tuple(shape), dtype=dtype)
    import cupy

    with cupy_device(like.device):
        return cupy.empty(shape, dtype=dtype)


def cupy_device(device: Optional[int]):
    """Makes GPU ``device`` CuPy's current device for a ``with`` block (where
    CuPy allocates, copies and finds its current stream); a no-op for None or
    the device that is already current."""
    if device is None:
        return contextlib.nullcontext()
    import cupy

    if device == cupy.cuda.runtime.getDevice():
        return contextlib.nullcontext()
    return cupy.cuda.Device(device)


def _base(arr: DeviceArray) -> Any:
    """The array of the library that allocates (the DLPack view for DLPack producers)."""
    return arr.obj[1] if arr.origin is not None else arr.obj


def copy(arr: DeviceArray) -> Any:
    """A C-contiguous copy of ``arr`` on its device, in its library, enqueued on
    the current stream."""
    obj = _base(arr)
    if arr.lib == "torch":
        import torch

        return obj.clone(memory_format=torch.contiguous_format)
    if arr.lib == "numba":
        from numba import cuda

        if not arr.is_c_contiguous():  # Numba has no strided device-to-device copy
            return cuda.to_device(obj.copy_to_host())
        out = cuda.device_array(obj.shape, dtype=obj.dtype)
        out.copy_to_device(obj)
        return out
    with cupy_device(arr.device):  # CuPy copies to its current device
        return obj.copy(order="C")


def to_host(arr: DeviceArray) -> np.ndarray:
    """A NumPy copy of the device array ``arr``, made by its library (which
    waits for the work enqueued on it)."""
    obj = _base(arr)
    if arr.lib == "torch":
        return obj.detach().cpu().numpy()
    if arr.lib == "numba":
        return obj.copy_to_host()
    import cupy

    with cupy_device(arr.device):
        return cupy.asnumpy(obj)


def upload(like: DeviceArray, host: np.ndarray) -> Any:
    """``host`` copied to ``like``'s device, in its library."""
    if like.lib == "torch":
        import torch

        return torch.as_tensor(host, device=_base(like).device)
    import cupy

    with cupy_device(like.device):
        return cupy.asarray(host)


def as_result(like: DeviceArray, out: Any) -> Any:
    """Hands a result back in the producer's own type (DLPack producers)."""
    if like.origin is None:
        return out
    producer = sys.modules.get(like.origin)
    if like.origin == "jax":
        import jax.dlpack

        return jax.dlpack.from_dlpack(out)
    from_dlpack = getattr(producer, "from_dlpack", None)
    return from_dlpack(out) if from_dlpack is not None else out


def pointer(obj: Any) -> int:
    """Device address of an array made by :func:`empty`."""
    data = getattr(obj, "data", None)
    ptr = getattr(data, "ptr", None)  # CuPy
    if ptr is not None:
        return ptr
    return device_array(obj).ptr


def require_device_float(name: str, arr: DeviceArray, dtype=None) -> None:
    """A C-contiguous float32/float64 device array, of ``dtype`` when given."""
    if arr.dtype not in FLOAT_DTYPES:
        raise TypeError(
            f"{name} is a {arr.dtype} device array: kernpack computes in float32 or float64; "
            f"pass {name}.astype('float32') or .astype('float64')"
        )
    if dtype is not None and arr.dtype != dtype:
        raise TypeError(
            f"{name} is {arr.dtype} but the other device arrays are {dtype}: pass arrays of one dtype"
        )
    if not arr.is_c_contiguous():
        raise TypeError(
            f"{name} is a non-contiguous device array: pass a contiguous copy "
            f"(cupy.ascontiguousarray({name}) or {name}.contiguous())"
        )


def same_device(arrays: Sequence[Tuple[str, DeviceArray]]) -> Optional[int]:
    """The device all arrays live on (None when no library says); mixed devices are an error."""
    devices = {a.device for _, a in arrays if a.device is not None}
    if len(devices) > 1:
        raise ValueError(
            "the device arrays live on different GPUs ("
            + ", ".join(f"{n}: GPU {a.device}" for n, a in arrays)
            + "): kernpack does not copy between GPUs; move them to one device"
        )
    return devices.pop() if devices else None


def host_array(a: Any, dtype) -> np.ndarray:
    """``a`` as a C-contiguous, aligned NumPy array of ``dtype`` (native
    endian): ``a`` itself when it is one, else a copy. Arrays that Dask or
    Arrow hand over may be misaligned, which the native layer refuses."""
    return np.require(np.asarray(a, dtype=dtype), requirements="CA")


def host_float_dtype(*arrays: Any) -> np.dtype:
    """float32 when every input is float32, else float64 (NumPy's promotion)."""
    return np.dtype(np.float32 if all(np.asarray(a).dtype == np.float32 for a in arrays) else np.float64)


def split(args: Sequence[Tuple[str, Any]]):
    """Device views of the arguments, or None when all are host data; mixing
    host and device arrays is a TypeError."""
    views = [(name, device_array(a)) for name, a in args if a is not None]
    on_device = [name for name, v in views if v is not None]
    if not on_device:
        return None
    on_host = [name for name, v in views if v is None]
    if on_host:
        raise TypeError(
            f"{', '.join(on_device)} on the GPU but {', '.join(on_host)} on the host: "
            "pass all arrays on one side (kernpack makes no hidden copies)"
        )
    return dict(views)
