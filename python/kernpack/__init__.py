"""kernpack: precompiled GPU kernels for scientific Python, with SciPy's
signatures, on NumPy arrays (CPU or GPU) and on CuPy, PyTorch, Numba and JAX
device arrays (zero copy, on the caller's stream). Nothing is compiled at
import or at the first call: every kernel ships as machine code for each GPU
generation in one embedded fatbin.

Modules: :mod:`kernpack.signal` (Lomb-Scargle periodograms),
:mod:`kernpack.ndimage` (box filter), :mod:`kernpack.reduce` (deterministic
sums and normalisation), :mod:`kernpack.ode` (Lorenz 96 / 2005 ensembles, the
coupled F/G system).
"""
from __future__ import annotations

from typing import Any, Dict, List, NamedTuple, Tuple

from . import _native
from ._context import get_backend, get_device, set_backend, set_device

CudaError = _native.CudaError
NoGpuError = _native.NoGpuError
__version__: str = _native.__version__

from . import ndimage, ode, reduce, signal  # noqa: E402  (after the exceptions they raise)

__all__ = [
    "CudaError",
    "DeviceInfo",
    "NoGpuError",
    "device_count",
    "devices",
    "get_backend",
    "get_device",
    "info",
    "ndimage",
    "ode",
    "reduce",
    "set_backend",
    "set_device",
    "signal",
]


def device_count() -> int:
    """Number of CUDA devices the driver reports (0 without a driver)."""
    return _native.device_count()


class DeviceInfo(NamedTuple):
    """One CUDA device, as :func:`devices` reports it."""

    ordinal: int
    """What ``device=`` and :func:`set_device` take."""
    name: str
    """The driver's name, e.g. 'NVIDIA H100 80GB HBM3'."""
    compute_capability: Tuple[int, int]
    """(major, minor), e.g. (9, 0)."""
    multiprocessors: int
    """Streaming multiprocessors."""
    total_memory: int
    """Device memory in bytes."""
    free_memory: int
    """Device memory free at the time of the call, in bytes (all processes)."""


def devices() -> List[DeviceInfo]:
    """Every CUDA device the driver reports (after ``CUDA_VISIBLE_DEVICES``),
    in ordinal order; an empty list without a driver or a device. Loads no
    kernels. Free memory is read in the device's primary context (the one
    CuPy, PyTorch and kernpack use), which is created for the query when
    nothing in the process holds it yet. Other driver failures raise
    :class:`CudaError`."""
    return [DeviceInfo(**d) for d in _native.devices()]


def info() -> Dict[str, Any]:
    """What kernpack runs on: its version, the embedded fatbin (size, SASS
    architectures, PTX), the default backend and, per GPU, its name, compute
    capability and whether each kernel runs SASS built for it or JIT-compiled
    PTX. Loads each GPU's kernels (once per process)."""
    from ._context import context

    gpus = []
    for ordinal in range(_native.device_count()):
        try:
            gpus.append(context("gpu", ordinal).gpu_info())
        except Exception as e:  # a GPU that cannot load is reported, not raised
            gpus.append({"ordinal": ordinal, "error": str(e)})
    return {
        "version": __version__,
        "backend": get_backend(),
        "fatbin": _native.fatbin_info(),
        "gpus": gpus,
    }
