"""The package surface: exceptions, backends, info(), the command line, and
calls from many threads (results, and the GIL released during the work)."""
from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

import kernpack
from kernpack import _context, ndimage, reduce, signal

# --------------------------------------------------------------------------
# Exceptions
# --------------------------------------------------------------------------


def test_exception_classes():
    assert issubclass(kernpack.CudaError, RuntimeError)
    assert issubclass(kernpack.NoGpuError, RuntimeError)
    assert not issubclass(kernpack.CudaError, kernpack.NoGpuError)
    assert not issubclass(kernpack.NoGpuError, kernpack.CudaError)
    assert kernpack.CudaError is kernpack._native.CudaError
    assert kernpack.NoGpuError is kernpack._native.NoGpuError
    for name in kernpack.__all__:
        assert hasattr(kernpack, name), name


def test_native_validation_errors_are_value_errors_with_kernpacks_message(backend, rng):
    # Raised by the Rust layer's validation (InvalidInput), mapped to
    # ValueError with the message that names the value and its index.
    x = np.sort(rng.uniform(0, 10, 20))
    y = rng.normal(size=20)
    y[11] = np.inf
    with pytest.raises(ValueError) as info:
        signal.lombscargle(x, y, [0.5, 1.0], backend=backend)
    assert type(info.value) is ValueError
    assert str(info.value) == "y[11] = inf is not finite"
    with pytest.raises(ValueError) as info:
        reduce.normalize(np.array([1.0, -1.0]), backend=backend)
    assert type(info.value) is ValueError and "sum is 0" in str(info.value)
    with pytest.raises(ValueError) as info:
        kernpack.ode.lorenz05(rng.normal(size=(1, 100)), 1, k=5, backend=backend)
    assert type(info.value) is ValueError and "K = 5" in str(info.value)


# --------------------------------------------------------------------------
# Backends
# --------------------------------------------------------------------------


@pytest.fixture
def restore_backend():
    before = kernpack.get_backend()
    yield
    kernpack.set_backend(before)


def test_set_backend(restore_backend):
    for name in ("cpu", "CPU", "auto", "gpu"):
        kernpack.set_backend(name)
        assert kernpack.get_backend() == name.lower()
    with pytest.raises(ValueError, match="backend must be one of"):
        kernpack.set_backend("foo")
    assert kernpack.get_backend() == "gpu"  # unchanged by the failed call


def test_default_backend_is_used_when_none_is_passed(restore_backend, rng):
    x = rng.normal(size=100)
    kernpack.set_backend("cpu")
    expected = reduce.sum(x)
    assert expected == reduce.sum(x, backend="cpu")
    kernpack.set_backend("gpu")
    if kernpack.device_count() == 0:
        with pytest.raises(kernpack.NoGpuError):
            reduce.sum(x)  # backend=None: the default, now 'gpu'
    assert reduce.sum(x, backend="cpu") == expected  # an explicit backend wins


def test_unknown_backend_in_a_call_is_a_value_error(rng):
    with pytest.raises(ValueError, match="backend must be one of"):
        reduce.sum(rng.normal(size=10), backend="tpu")
    with pytest.raises(ValueError, match="backend must be one of"):
        ndimage.uniform_filter(rng.normal(size=(4, 4)), 3, backend="foo")


@pytest.mark.skipif(kernpack.device_count() > 0, reason="this machine has a GPU")
def test_gpu_backend_without_a_gpu_raises_no_gpu_error(rng):
    with pytest.raises(kernpack.NoGpuError) as info:
        signal.lombscargle(np.arange(5.0), rng.normal(size=5), [1.0], backend="gpu")
    assert len(str(info.value)) > 10
    with pytest.raises(kernpack.NoGpuError):
        reduce.sum(rng.normal(size=5), backend="gpu")
    # auto falls back to the CPU.
    assert _context.context("auto").backend == "cpu"
    assert _context.context("cpu").backend == "cpu"


# --------------------------------------------------------------------------
# info() and the command line
# --------------------------------------------------------------------------


def test_info():
    info = kernpack.info()
    assert info["version"] == kernpack.__version__
    assert info["backend"] == kernpack.get_backend()
    fatbin = info["fatbin"]
    assert isinstance(fatbin["sass"], list)
    assert "sm_90" in fatbin["sass"]
    assert all(arch.startswith("sm_") for arch in fatbin["sass"])
    # Every GPU from Kepler on: CUDA 11.8's sm_35..sm_72 beside 13.0's sm_75 and newer.
    assert {"sm_35", "sm_37", "sm_50", "sm_61", "sm_70", "sm_72", "sm_75", "sm_121"} <= set(fatbin["sass"])
    assert fatbin["ptx"] == ["compute_35", "compute_121"]
    assert fatbin["families"] == [
        "bls", "bootstrap", "correlate", "fg", "lombscargle", "lombscargle_chi2", "lombscargle_multiband", "lorenz", "lorenz63", "peaks",
        "phasefold", "rank", "reduce", "reduce_batched", "stencil", "uniform",
    ]
    assert fatbin["bytes"] > 0
    assert len(info["gpus"]) == kernpack.device_count()


def _run_module(tmp_path, *args, timeout=120):
    # From a scratch directory, so that no source tree shadows the installed package.
    return subprocess.run(
        [sys.executable, "-m", "kernpack", *args], cwd=tmp_path, capture_output=True, text=True, timeout=timeout
    )


def test_command_line_info(tmp_path):
    out = _run_module(tmp_path, "info")
    assert out.returncode == 0, out.stderr
    assert f"kernpack {kernpack.__version__}" in out.stdout
    assert "sm_90" in out.stdout


def test_command_line_demo(tmp_path):
    out = _run_module(tmp_path, "demo", "--nf", "20000")
    assert out.returncode == 0, out.stdout + out.stderr
    assert "best period" in out.stdout


# --------------------------------------------------------------------------
# The optional dask extra
# --------------------------------------------------------------------------

_WITHOUT_DASK = """
import sys

class Blocked:  # as if dask, distributed, pandas and pyarrow were not installed
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in ("dask", "distributed", "pandas", "pyarrow"):
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)

sys.meta_path.insert(0, Blocked())
import kernpack
assert not [m for m in sys.modules if m.split(".")[0] in ("dask", "distributed", "pandas", "pyarrow")]
try:
    import kernpack.dask
except ImportError as e:
    print("ImportError:", e)
"""


def test_kernpack_imports_without_dask_and_kernpack_dask_names_the_extra(tmp_path):
    out = subprocess.run(
        [sys.executable, "-c", _WITHOUT_DASK], cwd=tmp_path, capture_output=True, text=True, timeout=120
    )
    assert out.returncode == 0, out.stderr
    assert "ImportError: kernpack.dask needs Dask" in out.stdout
    assert "pip install 'kernpack[dask]'" in out.stdout


# --------------------------------------------------------------------------
# Threads
# --------------------------------------------------------------------------


def test_concurrent_calls_give_the_single_threaded_results(backend, rng):
    t = np.sort(rng.uniform(0, 100, 300))
    y = np.sin(t) + rng.normal(0, 0.5, 300)
    freqs = rng.uniform(0.1, 5, 500)
    image = rng.normal(size=(120, 90)).astype(np.float32)
    values = rng.normal(size=200_000)

    jobs = {
        "lombscargle": lambda: signal.lombscargle(t, y, freqs, normalize=True, backend=backend),
        "uniform": lambda: signal.lombscargle_uniform(t, y, 0.1, 0.01, 400, floating_mean=True, backend=backend),
        "filter": lambda: ndimage.uniform_filter(image, 9, mode="wrap", backend=backend),
        "sum": lambda: np.float64(reduce.sum(values, backend=backend)),
    }
    expected = {name: job().tobytes() for name, job in jobs.items()}

    def work(i):
        names = list(jobs)
        results = []
        for k in range(6):
            name = names[(i + k) % len(names)]
            results.append((name, jobs[name]().tobytes()))
        return results

    with ThreadPoolExecutor(max_workers=8) as pool:
        for results in pool.map(work, range(8)):
            for name, got in results:
                assert got == expected[name], name


def test_the_gil_is_released_during_a_long_call(rng):
    # A CPU periodogram of ~0.2-0.5 s on 2 cores (the arbitrary-frequency path,
    # ~1e9 pairs/s there): while it runs, another Python
    # thread must make progress. With the GIL held through the call it could
    # not run a single bytecode until the call returned. Scaled with the core
    # count, so that a many-core machine's call is long enough to tell too.
    n, nf = 2000, 150_000 * max(1, (os.cpu_count() or 2) // 2)
    t = np.sort(rng.uniform(0, 100, n))
    y = np.sin(t) + rng.normal(0, 0.5, n)
    count = [0]
    stop = threading.Event()

    def spin():
        while not stop.is_set():
            count[0] += 1

    spinner = threading.Thread(target=spin, daemon=True)
    spinner.start()
    try:
        # The spinner's rate with the main thread idle.
        c0, t0 = count[0], time.perf_counter()
        time.sleep(0.2)
        rate = (count[0] - c0) / (time.perf_counter() - t0)
        assert rate > 0

        c1, t1 = count[0], time.perf_counter()
        signal.lombscargle(t, y, 0.1 + 0.01 * np.arange(nf), backend="cpu")
        c2, t2 = count[0], time.perf_counter()
    finally:
        stop.set()
        spinner.join()
    elapsed = t2 - t1
    assert elapsed > 0.1, f"the call took only {elapsed:.3f} s: too short to tell"
    progress = (c2 - c1) / (rate * elapsed)
    # The kernel's worker threads compete with the spinner for the cores, so
    # it gets only a share of one (measured: ~40% of its idle rate on 2
    # cores); a held GIL lets it run at most around the call's start and end
    # (a switch interval, 5 ms: ~1% of a 1 s call). 10% separates the two.
    assert progress > 0.1, f"the other thread ran {progress:.1%} of its idle rate during the call"


# ---------------------------------------------------------------------------
# CPU threads


def test_num_threads_set_read_refused_and_restored():
    default = kernpack.get_num_threads()
    assert default >= 1
    try:
        kernpack.set_num_threads(3)
        assert kernpack.get_num_threads() == 3
        assert kernpack.info()["cpu_threads"] == 3
        for bad, exc in [(-1, ValueError), (4097, ValueError), (2.0, TypeError), (True, TypeError), ("2", TypeError)]:
            with pytest.raises(exc):
                kernpack.set_num_threads(bad)
            assert kernpack.get_num_threads() == 3, f"refused {bad!r} changed the setting"
        # Work on the CPU gives the same periodogram on 1 and 3 threads.
        rng = np.random.default_rng()
        t = np.sort(rng.uniform(0, 50, 200))
        y = np.sin(1.3 * t) + rng.normal(0, 0.3, t.size)
        f = np.linspace(0.1, 5, 777)
        three = kernpack.signal.lombscargle(t, y, f, backend="cpu")
        kernpack.set_num_threads(1)
        one = kernpack.signal.lombscargle(t, y, f, backend="cpu")
        np.testing.assert_array_equal(one, three)
    finally:
        kernpack.set_num_threads(0)
    assert kernpack.get_num_threads() == default


def test_num_threads_default_comes_from_the_environment(tmp_path):
    env = dict(os.environ, KERNPACK_NUM_THREADS="3")
    out = subprocess.run(
        [sys.executable, "-c", "import kernpack; print(kernpack.get_num_threads())"],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120,
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "3"


def test_release_staging_is_safe_at_any_time(backend, rng):
    kernpack.release_staging()
    x0 = 8.0 + rng.standard_normal((50, 40))
    before = kernpack.ode.lorenz96(x0, 3, backend=backend).final
    kernpack.release_staging()
    kernpack.release_staging()
    np.testing.assert_array_equal(kernpack.ode.lorenz96(x0, 3, backend=backend).final, before)
