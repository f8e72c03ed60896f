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
