"""Where work runs: the module-level default backend and GPU, and the cached
native contexts (one per backend and GPU; loading a GPU's kernels happens once)."""
from __future__ import annotations

import operator
import os
import threading
from typing import Any, Dict, Optional, Sequence, Tuple, Union

from . import _native
from ._arrays import require_device_float, same_device

BACKENDS = ("auto", "gpu", "cpu")

_default = os.environ.get("KERNPACK_BACKEND", "auto").lower()
_default_device: Union[int, Tuple[int, ...]] = 0
_contexts: Dict[Tuple[str, Any], "_native.Context"] = {}
_lock = threading.Lock()


def _check(backend: str) -> str:
    name = str(backend).lower()
    if name not in BACKENDS:
        raise ValueError(f"backend must be one of {', '.join(map(repr, BACKENDS))}, not {backend!r}")
    return name


if _default not in BACKENDS:
    raise ImportError(f"KERNPACK_BACKEND={_default!r}: expected auto, gpu or cpu")


def set_backend(backend: str) -> None:
    """Sets the backend used when a call passes ``backend=None``: ``'auto'``
    (the GPU when there is one, else the CPU; the initial default, or the
    ``KERNPACK_BACKEND`` environment variable), ``'gpu'`` or ``'cpu'``."""
    global _default
    _default = _check(backend)


def get_backend() -> str:
    """The backend used when a call passes ``backend=None``."""
    return _default


def _devices_present(n: int) -> str:
    return f"{n} CUDA device{'' if n == 1 else 's'} present" + (f" (ordinals 0 to {n - 1})" if n else "")


def _integer(value: Any, must_be: str) -> int:
    """``value`` as an int (anything with ``__index__``, bools refused), else
    TypeError "<must_be>, not <its type>": the check of every count and
    ordinal a setter takes."""
    if isinstance(value, bool):
        raise TypeError(f"{must_be}, not a bool")
    try:
        return operator.index(value)
    except TypeError:
        raise TypeError(f"{must_be}, not {type(value).__name__}") from None


def _check_ordinal(device: Any) -> int:
    """One GPU ordinal: an integer >= 0 (not checked against the devices
    present: the native context does that, naming their count)."""
    ordinal = _integer(device, "device must be an integer GPU ordinal or a list of them")
    if ordinal < 0:
        raise ValueError(f"device must be a GPU ordinal >= 0, got {ordinal}; {_devices_present(_native.device_count())}")
    return ordinal


def _check_device(device: Any) -> Union[int, Tuple[int, ...]]:
    """``device`` as a GPU ordinal, or a tuple of distinct ordinals for a list."""
    if isinstance(device, (list, tuple)):
        ordinals = tuple(_check_ordinal(d) for d in device)
        if not ordinals:
            raise ValueError("device: an empty list of GPUs")
        if len(set(ordinals)) != len(ordinals):
            raise ValueError(f"device lists a GPU twice: {list(ordinals)}")
        return ordinals
    return _check_ordinal(device)


def set_device(device: Union[int, Sequence[int]]) -> None:
    """Sets the GPU used when a call passes ``device=None`` (the initial
    default is 0), for the whole process, as :func:`set_backend` does for the
    backend. Device arrays always run on the GPU they live on.

    A list of GPUs (e.g. ``[0, 1]``) makes the batched calls on host arrays
    (:func:`kernpack.signal.lombscargle_batch`, the Lorenz ensembles of
    :mod:`kernpack.ode`, :func:`kernpack.reduce.normalize_batched`) split
    their work over all of them, in chunks that fit each GPU's memory, with
    results bitwise equal to one GPU; every other call runs on the first.

    Raises ValueError for a negative ordinal, or one past the devices present
    when there are any (without a GPU any ordinal is accepted: the 'auto'
    backend then runs on the CPU, 'gpu' raises NoGpuError at the call)."""
    global _default_device
    checked = _check_device(device)
    n = _native.device_count()
    for ordinal in checked if isinstance(checked, tuple) else (checked,):
        if 0 < n <= ordinal:
            raise ValueError(f"there is no GPU {ordinal}: {_devices_present(n)}")
    _default_device = checked


def get_device() -> Union[int, Tuple[int, ...]]:
    """The GPU (or tuple of GPUs) used when a call passes ``device=None``."""
    return _default_device


def context(backend: Optional[str] = None, device: Any = None) -> "_native.Context":
    """The cached native context for ``backend`` on GPU ``device`` (an
    ordinal or a list of them; default: :func:`get_device`; ignored by the
    CPU backend). An ordinal past the devices present is a ValueError naming
    their count; with no GPU at all, 'gpu' is a NoGpuError and 'auto' runs on
    the CPU."""
    name = _check(backend if backend is not None else _default)
    ordinal = _default_device if device is None else _check_device(device)
    key = (name, 0 if name == "cpu" else ordinal)
    ctx = _contexts.get(key)
    if ctx is None:
        with _lock:
            ctx = _contexts.get(key)
            if ctx is None:
                ctx = _native.Context(name, list(ordinal) if isinstance(ordinal, tuple) else ordinal)
                _contexts[key] = ctx
    return ctx


_CPU_FOR_DEVICE_ARRAYS = (
    "backend='cpu' was asked for, but the arrays are on the GPU: pass host arrays "
    "(e.g. cupy.asnumpy(a)) or use backend='gpu' / 'auto'"
)


def device_context(arrays, backend: Optional[str] = None, device: Optional[int] = None) -> "_native.Context":
    """The GPU context for device arrays (all on one GPU): the GPU they live
    on. ``device``, when given, must be that GPU. Arrays whose library does
    not say where they live (Numba) run on ``device``, else on
    :func:`get_device`; the native layer checks every pointer against the
    driver's record before anything runs."""
    name = _check(backend if backend is not None else _default)
    if name == "cpu":
        raise ValueError(_CPU_FOR_DEVICE_ARRAYS)
    located = same_device(list(arrays.items()) if isinstance(arrays, dict) else arrays)
    if device is not None:
        ordinal = _check_device(device)
        if isinstance(ordinal, tuple):
            raise ValueError(
                f"device={list(ordinal)} lists several GPUs, but the arrays are on a GPU: device arrays "
                "run on their own GPU (several GPUs apply to host arrays)"
            )
        if located is not None and located != ordinal:
            raise ValueError(
                f"device={ordinal} was asked for, but the arrays live on GPU {located}: device arrays "
                f"run on their own GPU (move them, e.g. with cupy.cuda.Device({ordinal}), or omit device)"
            )
    else:
        default = _default_device[0] if isinstance(_default_device, tuple) else _default_device
        ordinal = located if located is not None else default
    return context("gpu", ordinal)


def device_float_context(arrays, backend: Optional[str] = None, device: Optional[int] = None) -> "_native.Context":
    """:func:`device_context` of C-contiguous float32/float64 device arrays
    (a dict by name; None values skipped), all of the first one's dtype."""
    arrays = {name: a for name, a in arrays.items() if a is not None}
    first = next(iter(arrays.values()))
    for name, a in arrays.items():
        require_device_float(name, a, None if a is first else first.dtype)
    return device_context(arrays, backend, device)


__all__ = ["set_backend", "get_backend", "set_device", "get_device", "context", "device_context"]
