"""Where work runs: the module-level default backend and the cached native
contexts (one per backend and GPU; loading a GPU's kernels happens once)."""
from __future__ import annotations

import os
import threading
from typing import Dict, Optional, Tuple

from . import _native
from ._arrays import DeviceArray

BACKENDS = ("auto", "gpu", "cpu")

_default = os.environ.get("KERNPACK_BACKEND", "auto").lower()
_contexts: Dict[Tuple[str, int], "_native.Context"] = {}
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


def context(backend: Optional[str] = None, device: int = 0) -> "_native.Context":
    """The cached native context for ``backend`` on GPU ``device``."""
    name = _check(backend if backend is not None else _default)
    key = (name, int(device))
    ctx = _contexts.get(key)
    if ctx is None:
        with _lock:
            ctx = _contexts.get(key)
            if ctx is None:
                ctx = _native.Context(name, int(device))
                _contexts[key] = ctx
    return ctx


def device_context(arrays, backend: Optional[str] = None) -> "_native.Context":
    """The GPU context for device arrays (all on one GPU)."""
    from ._arrays import same_device

    name = _check(backend if backend is not None else _default)
    if name == "cpu":
        raise ValueError(
            "backend='cpu' was asked for, but the arrays are on the GPU: pass host arrays "
            "(e.g. cupy.asnumpy(a)) or use backend='gpu' / 'auto'"
        )
    device = same_device(list(arrays.items()) if isinstance(arrays, dict) else arrays)
    return context("gpu", 0 if device is None else device)


__all__ = ["set_backend", "get_backend", "context", "device_context", "DeviceArray"]
