"""kernpack: precompiled GPU kernels for scientific Python, with SciPy's
signatures, on NumPy arrays (CPU or GPU) and on CuPy, PyTorch, Numba and JAX
device arrays (zero copy, on the caller's stream). Nothing is compiled at
import or at the first call: every kernel ships as machine code for each GPU
generation in one embedded fatbin.

Modules: :mod:`kernpack.signal` (Lomb-Scargle periodograms),
:mod:`kernpack.timeseries` (astropy's ``LombScargle`` and ``BoxLeastSquares``
transit search; the PDM and conditional entropy period searches),
:mod:`kernpack.ndimage` (box filter, correlate1d, Gaussian filters), :mod:`kernpack.reduce` (deterministic
sums and normalisation), :mod:`kernpack.ode` (Lorenz 96 / 2005 ensembles, the
coupled F/G system).
"""
from __future__ import annotations

from typing import Any, Dict, List, NamedTuple, Tuple

from . import _context, _native
from ._context import _integer, get_backend, get_device, set_backend, set_device

CudaError = _native.CudaError
NoGpuError = _native.NoGpuError
__version__: str = _native.__version__

from . import ndimage, ode, reduce, signal, timeseries  # noqa: E402  (after the exceptions they raise)

__all__ = [
    "CudaError",
    "DeviceInfo",
    "NoGpuError",
    "device_count",
    "devices",
    "get_backend",
    "get_device",
    "get_num_threads",
    "info",
    "ndimage",
    "ode",
    "reduce",
    "release_staging",
    "set_backend",
    "set_device",
    "set_num_threads",
    "signal",
    "timeseries",
]


def device_count() -> int:
    """Number of CUDA devices the driver reports (0 without a driver)."""
    return _native.device_count()


def set_num_threads(threads: int) -> None:
    """Sets how many threads the CPU backend uses, for the whole process (as
    ``numba.set_num_threads`` or ``torch.set_num_threads`` do for theirs); 0
    restores the default: the ``KERNPACK_NUM_THREADS`` environment variable
    (read at the first CPU call) when it holds a count from 1 to 4096, else
    every core. Results do not depend on the count, except the rounding of
    sums and normalisation, which is fixed for a given count.

    Raises TypeError for a non-integer and ValueError for a negative count or
    one above 4096 (the setting is then unchanged)."""
    n = _integer(threads, "threads must be an integer")
    if n < 0:
        raise ValueError(f"threads must be >= 0 (0 means the default), got {n}")
    _native.set_cpu_threads(n)  # ValueError above 4096


def release_staging() -> None:
    """Frees the pinned host and device memory that large GPU calls keep for
    the next ones. Batched peaks (``lombscargle_batch(..., best=True)`` or
    ``peaks=k``, and the searches' ``peaks=k``), calls with a list of devices, and Lorenz ensembles over 256 MiB run in
    chunks through two staging buffers per GPU (device arenas of up to
    256 MiB each by default, pinned host memory for what is copied), kept
    after the call so that a stream of calls pins them once (up to
    four per GPU: two calls' worth, for threads calling at once). Safe at
    any time; the next such call allocates them again."""
    _native.release_staging()


def get_num_threads() -> int:
    """The number of threads the CPU backend uses now (at least 1)."""
    return _native.cpu_threads()


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
    return [DeviceInfo(*d) for d in _native.devices()]


def info() -> Dict[str, Any]:
    """What kernpack runs on: its version, the embedded fatbin (size, SASS
    architectures, PTX), the default backend and, per GPU, its name, compute
    capability and whether each kernel runs SASS built for it or JIT-compiled
    PTX. Loads each GPU's kernels (once per process)."""
    gpus = []
    for ordinal in range(_native.device_count()):
        try:
            gpus.append(_context.context("gpu", ordinal).gpu_info())
        except Exception as e:  # a GPU that cannot load is reported, not raised
            gpus.append({"ordinal": ordinal, "error": str(e)})
    return {
        "version": __version__,
        "backend": get_backend(),
        "cpu_threads": get_num_threads(),
        "fatbin": _native.fatbin_info(),
        "gpus": gpus,
    }
