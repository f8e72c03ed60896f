"""Shared fixtures of the CPU-side suite.

``backend``: the backends the host-array tests run on. Always ``'cpu'``; also
``'gpu'`` when the driver reports a device, or when ``KERNPACK_REQUIRE_GPU=1``
(the GPU machine). In that last case a machine without a usable GPU makes
every gpu-parametrised test fail (creating the GPU context raises
``kernpack.NoGpuError``), never skip: a GPU run that silently tested nothing
must not pass.

``rng``: a NumPy Generator seeded from the test's node id (crc32 of
``file.py::test[params]``, so the same
test draws the same data on every run and every machine, and two tests, or
two parametrisations of one test, draw different data).
"""
from __future__ import annotations

import glob
import os
import sys
import zlib

# `cd python && python -m pytest tests` puts python/ first on sys.path, where
# kernpack/ is the source tree without the compiled kernpack._native: importing
# it from there fails. Test the installed package instead, unless the source
# tree has been built in place (maturin develop), which then works as it is.
_SOURCE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if not glob.glob(os.path.join(_SOURCE, "kernpack", "_native*")):
    sys.path[:] = [p for p in sys.path if os.path.abspath(p or os.curdir) != _SOURCE]

import numpy as np  # noqa: E402
import pytest  # noqa: E402

import kernpack  # noqa: E402
from kernpack import _native  # noqa: E402

REQUIRE_GPU = os.environ.get("KERNPACK_REQUIRE_GPU") == "1"


def need_gpu_module(module_name: str):
    """`module_name` (a device-array library) imported, where a GPU is
    visible: otherwise the test skips, or fails under KERNPACK_REQUIRE_GPU=1."""
    try:
        module = __import__(module_name)
    except ImportError:
        if REQUIRE_GPU:
            pytest.fail(f"KERNPACK_REQUIRE_GPU=1 but {module_name} is not importable")
        pytest.skip(f"{module_name} not installed")
    if kernpack.device_count() == 0:
        if REQUIRE_GPU:
            pytest.fail("KERNPACK_REQUIRE_GPU=1 but no GPU is visible")
        pytest.skip("no GPU")
    return module


def _backends():
    backends = ["cpu"]
    if REQUIRE_GPU or kernpack.device_count() > 0:
        backends.append("gpu")
    return backends


BACKENDS = _backends()


@pytest.fixture(params=BACKENDS)
def backend(request):
    """'cpu', then 'gpu' where there is one (or where one is required)."""
    if request.param == "gpu":
        # Fails (NoGpuError) rather than skips when no GPU is usable.
        kernpack._context.context("gpu")
    return request.param


def seed_of(text: str) -> int:
    """A stable 32-bit seed for a string (Python's hash() is salted per process)."""
    return zlib.crc32(text.encode("utf-8"))


def ref_peaks(values, axis, k, separation, higher=False):
    """The indices of the best `k` peaks of one row of a search statistic
    over its trial frequencies or periods `axis`, by the definition
    (src/params/peaks.rs): a value's score is the value where higher is
    better (`higher`), else its negation; NaN scores -inf, and -inf is
    never a peak; index i is a peak when its score is above its left
    neighbour's and not below its right one's (the ends compare with -inf);
    peaks are taken best score first (lower index among equal scores), each
    only when its `axis` value is at least `separation` from those taken."""
    values = np.asarray(values, dtype=np.float64)
    score = np.where(np.isnan(values), -np.inf, values if higher else -values)
    left = np.concatenate([[-np.inf], score[:-1]])
    right = np.concatenate([score[1:], [-np.inf]])
    peaks = np.flatnonzero((score > -np.inf) & (score > left) & (score >= right))
    taken = []
    for i in peaks[np.lexsort((peaks, -score[peaks]))]:
        if all(abs(axis[i] - axis[j]) >= separation for j in taken):
            taken.append(int(i))
            if len(taken) == k:
                break
    return taken


@pytest.fixture
def rng(request):
    """A Generator seeded from the test node id: stable, distinct per test."""
    # The file name and test name only: the directory part of a node id
    # depends on where pytest was started.
    return np.random.default_rng(seed_of(request.node.nodeid.split("/")[-1]))


@pytest.fixture
def received(monkeypatch):
    """The arguments of every call of the native batch entry point (the
    arrays it receives: zero-copy checks compare their addresses)."""
    calls = []
    original = _native.lombscargle_batch

    def recorded(*args):
        calls.append(args)
        return original(*args)

    monkeypatch.setattr(_native, "lombscargle_batch", recorded)
    return calls
