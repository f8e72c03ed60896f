"""Choosing the GPU: kernpack.devices(), set_device/get_device, the
``device=`` keyword of every public function, and device arrays running on the
GPU they live on (CuPy arrays on GPU k while CuPy's current device is another).
GPU parts skip without a GPU (fail with KERNPACK_REQUIRE_GPU=1); the parts
that need two GPUs skip with one (fail with KERNPACK_REQUIRE_GPUS=2)."""
from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

import kernpack
from kernpack import _context, ndimage, ode, reduce, signal

REQUIRE = os.environ.get("KERNPACK_REQUIRE_GPU") == "1"
REQUIRE_GPUS = int(os.environ.get("KERNPACK_REQUIRE_GPUS", "1" if REQUIRE else "0"))
COUNT = kernpack.device_count()


def _gpus(need: int) -> int:
    if COUNT >= need:
        return COUNT
    if REQUIRE_GPUS >= need or (need == 1 and REQUIRE):
        pytest.fail(f"{need} GPU(s) required by the environment, {COUNT} visible")
    pytest.skip(f"{COUNT} GPU(s), {need} needed")


def _cupy():
    try:
        import cupy
    except ImportError:
        if REQUIRE:
            pytest.fail("KERNPACK_REQUIRE_GPU=1 but cupy is not importable")
        pytest.skip("cupy not installed")
    return cupy


@pytest.fixture
def restore_device():
    before = kernpack.get_device()
    yield
    _context._default_device = before


def _series(rng, n=300):
    t = np.sort(rng.uniform(0, 50, n))
    y = np.sin(1.7 * t) + 0.3 * rng.normal(size=n)
    return t, y


# --------------------------------------------------------------------------
# Everywhere (no GPU needed)
# --------------------------------------------------------------------------


def test_devices_list_every_device():
    devices = kernpack.devices()
    assert isinstance(devices, list) and len(devices) == COUNT
    for i, d in enumerate(devices):
        assert isinstance(d, kernpack.DeviceInfo)
        assert d.ordinal == i and isinstance(d.name, str) and d.name.strip()
        major, minor = d.compute_capability
        assert 3 <= major <= 20 and 0 <= minor < 10, d
        assert d.multiprocessors > 0 and d.total_memory >= 1 << 30, d
        assert 0 < d.free_memory <= d.total_memory, d
    assert kernpack.DeviceInfo._fields == (
        "ordinal", "name", "compute_capability", "multiprocessors", "total_memory", "free_memory",
    )


def test_set_device_checks_its_argument(restore_device):
    assert kernpack.get_device() == 0
    kernpack.set_device(np.int64(0))
    assert kernpack.get_device() == 0 and type(kernpack.get_device()) is int
    with pytest.raises(ValueError, match=r"device must be a GPU ordinal >= 0, got -1; \d+ CUDA device"):
        kernpack.set_device(-1)
    for bad in (1.0, "1", None, True):
        with pytest.raises(TypeError, match="device must be an integer GPU ordinal"):
            kernpack.set_device(bad)
    if COUNT:
        with pytest.raises(ValueError, match=f"there is no GPU {COUNT}: {COUNT} CUDA device"):
            kernpack.set_device(COUNT)
    else:
        kernpack.set_device(3)  # no GPU: 'auto' runs on the CPU anyway
        assert kernpack.get_device() == 3
    assert kernpack.get_device() == (0 if COUNT else 3)  # a failed call changes nothing


def test_a_negative_or_non_integer_device_in_a_call(rng):
    x = rng.normal(size=50)
    t, y = _series(rng)
    for backend in ("auto", "gpu", "cpu"):
        with pytest.raises(ValueError, match="device must be a GPU ordinal >= 0"):
            reduce.sum(x, backend=backend, device=-1)
        with pytest.raises(ValueError, match="device must be a GPU ordinal >= 0"):
            signal.lombscargle(t, y, [1.0, 2.0], backend=backend, device=-2)
    with pytest.raises(TypeError, match="device must be an integer"):
        ndimage.uniform_filter(rng.normal(size=(8, 8)), 3, device="0")
    with pytest.raises(TypeError, match="device must be an integer"):
        reduce.sum(x, device=0.0)


def test_the_cpu_backend_ignores_device(rng):
    x = rng.normal(size=200)
    assert reduce.sum(x, backend="cpu", device=7) == reduce.sum(x, backend="cpu")
    assert _context.context("cpu", 7) is _context.context("cpu", 0)


def test_every_public_function_takes_device(rng):
    # One call of each on the CPU backend with device=, so that a function
    # without the keyword fails here, on any machine.
    t, y = _series(rng, 64)
    signal.lombscargle(t, y, [1.0, 2.0], backend="cpu", device=0)
    signal.lombscargle_uniform(t, y, 0.5, 0.01, 10, backend="cpu", device=0)
    signal.lombscargle_batch([t, t], [y, y], 0.5, 0.01, 10, backend="cpu", device=0)
    ndimage.uniform_filter(rng.normal(size=(6, 7)), 3, backend="cpu", device=0)
    reduce.sum(y, backend="cpu", device=0)
    reduce.normalize(np.abs(y) + 1, backend="cpu", device=0)
    reduce.normalize_batched(np.abs(y) + 1, [0, 30, 64], backend="cpu", device=0)
    ode.lorenz96(rng.normal(size=(2, 40)), 3, backend="cpu", device=0)
    ode.lorenz05(rng.normal(size=(1, 960)), 2, backend="cpu", device=0)
    ode.window_sum(rng.normal(size=(2, 20)), np.ones(5), backend="cpu", device=0)
    f = rng.normal(size=(4, 4)) + 0j
    ode.fg_integrate(f, f, 0.1, 1e-3, 3, backend="cpu", device=0)


@pytest.mark.skipif(COUNT > 0, reason="this machine has a GPU")
def test_without_a_gpu_any_device_is_no_gpu_or_the_cpu(rng, restore_device):
    x = rng.normal(size=100)
    expected = reduce.sum(x, backend="cpu")
    for device in (0, 1, 5):
        with pytest.raises(kernpack.NoGpuError):
            reduce.sum(x, backend="gpu", device=device)
        assert reduce.sum(x, backend="auto", device=device) == expected
        assert _context.context("auto", device).backend == "cpu"
    assert kernpack.devices() == []


# --------------------------------------------------------------------------
# With GPUs
# --------------------------------------------------------------------------


def test_a_device_past_the_count_is_a_value_error_naming_it(rng):
    n = _gpus(1)
    x = rng.normal(size=100)
    t, y = _series(rng)
    for backend in ("gpu", "auto"):
        for bad in (n, n + 3):
            with pytest.raises(ValueError, match=f"GPU {bad}.*{n} device"):
                reduce.sum(x, backend=backend, device=bad)
            with pytest.raises(ValueError, match=f"GPU {bad}.*{n} device"):
                signal.lombscargle(t, y, [1.0], backend=backend, device=bad)


def test_host_arrays_run_on_the_chosen_gpu(rng, restore_device):
    n = _gpus(1)
    t, y = _series(rng, 500)
    f = np.linspace(0.1, 5, 2000)
    image = rng.normal(size=(64, 48))
    initial = rng.normal(size=(3, 40))

    def run(**where):
        return (
            signal.lombscargle(t, y, f, floating_mean=True, **where),
            ndimage.uniform_filter(image, 5, **where),
            reduce.sum(y, **where),
            ode.lorenz96(initial, 10, **where).final,
        )

    per_device = []
    for device in range(n):
        assert _context.context("gpu", device).device == device
        assert _context.context("auto", device).device == device
        per_device.append(run(backend="gpu", device=device))
        # The module default picks the same GPU.
        kernpack.set_device(device)
        for a, b in zip(run(backend="gpu"), per_device[-1]):
            np.testing.assert_array_equal(a, b)
    if len({d.name for d in kernpack.devices()}) == 1:  # one model: the same bits on each GPU
        for got in per_device[1:]:
            for a, b in zip(got, per_device[0]):
                np.testing.assert_array_equal(a, b)
    cpu = run(backend="cpu")
    for got, want in zip(per_device[0][:2], cpu[:2]):  # periodogram, filtered image
        assert np.max(np.abs(got - want)) <= 1e-9 * np.max(np.abs(want))


def test_two_gpus_from_two_threads_agree(rng):
    _gpus(2)
    t, y = _series(rng, 800)
    lengths = [100, 250, 80, 370]
    xs = np.split(t[: sum(lengths)], np.cumsum(lengths)[:-1])
    ys = np.split(y[: sum(lengths)], np.cumsum(lengths)[:-1])

    def run(device):
        return [signal.lombscargle_batch(xs, ys, 0.05, 0.002, 3000, floating_mean=True, backend="gpu",
                                         device=device) for _ in range(3)]

    with ThreadPoolExecutor(2) as pool:
        results = list(pool.map(run, [0, 1]))
    for runs in results:
        for r in runs:
            np.testing.assert_array_equal(r, results[0][0])
    devices = kernpack.devices()
    assert devices[0].name == devices[1].name, "the bitwise check above assumes one GPU model"


def test_cupy_arrays_on_another_device_run_there(rng):
    _gpus(2)
    cp = _cupy()
    t, y = _series(rng, 400)
    f = np.linspace(0.1, 4, 1500)
    with cp.cuda.Device(0):
        on0 = signal.lombscargle(cp.asarray(t), cp.asarray(y), cp.asarray(f), floating_mean=True)
        expected = cp.asnumpy(on0)
    with cp.cuda.Device(1):
        t1, y1, f1 = cp.asarray(t), cp.asarray(y), cp.asarray(f)
        image1 = cp.asarray(rng.normal(size=(40, 30)))
        x1 = cp.asarray(np.abs(y) + 1)
    expected_image = ndimage.uniform_filter(cp.asnumpy(image1), 3, backend="gpu")
    # CuPy's current device is 0, with a non-default stream there: the work
    # must still go to GPU 1, on GPU 1's current stream.
    with cp.cuda.Device(0), cp.cuda.Stream(non_blocking=True):
        out = signal.lombscargle(t1, y1, f1, floating_mean=True)
        assert out.device.id == 1
        out_explicit = signal.lombscargle(t1, y1, f1, floating_mean=True, device=1)
        ndimage.uniform_filter(image1, 3, output=image1)  # in place: a copy on GPU 1 first
        total = reduce.normalize(x1)
        peaks = signal.lombscargle_batch(t1, y1, 0.1, 0.01, 300, offsets=np.array([0, 150, 400]), best=True)
        assert total.device.id == 1 and peaks.frequency.device.id == 1
        with pytest.raises(ValueError, match="live on GPU 1"):
            reduce.sum(x1, device=0)
    with cp.cuda.Device(1):
        cp.cuda.Device(1).synchronize()
        np.testing.assert_array_equal(cp.asnumpy(out), expected)
        np.testing.assert_array_equal(cp.asnumpy(out_explicit), expected)
        np.testing.assert_allclose(cp.asnumpy(image1), expected_image, rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(float(cp.asnumpy(x1).sum()), 1.0, rtol=1e-12)
        assert peaks.index.shape == (2,)


def test_device_arrays_and_another_device_is_a_value_error(rng):
    _gpus(1)
    cp = _cupy()
    with cp.cuda.Device(0):
        x = cp.asarray(rng.normal(size=10))
    with pytest.raises(ValueError, match="live on GPU 0"):
        reduce.sum(x, device=1)
    assert float(reduce.sum(x, device=0)) == pytest.approx(float(cp.asnumpy(x).sum()), rel=1e-12)


# --------------------------------------------------------------------------
# Lists of GPUs: batched host calls split over them
# --------------------------------------------------------------------------


def _ragged(rng, nseries=120):
    lengths = rng.integers(20, 200, nseries)
    offsets = np.concatenate([[0], np.cumsum(lengths)])
    t = np.concatenate([np.sort(rng.uniform(0, 80, n)) for n in lengths])
    y = np.sin(2.1 * t) + 0.5 * rng.normal(size=t.size)
    return t, y, offsets


def test_a_list_of_devices_is_checked(restore_device):
    for bad, match in (([], "empty list"), ([0, 0], "twice"), ((1, 1, 0), "twice"), ([0, -1], ">= 0")):
        with pytest.raises(ValueError, match=match):
            kernpack.set_device(bad)
    with pytest.raises(TypeError, match="integer GPU ordinal"):
        kernpack.set_device([0, "1"])
    assert kernpack.get_device() == 0  # failed calls change nothing
    if COUNT:
        with pytest.raises(ValueError, match=f"there is no GPU {COUNT}"):
            kernpack.set_device([0, COUNT])
    kernpack.set_device([0])
    assert kernpack.get_device() == (0,)


def test_a_list_of_devices_on_the_cpu_backend_is_ignored(rng):
    t, y, offsets = _ragged(rng, 20)
    want = signal.lombscargle_batch(t, y, 0.1, 0.01, 200, offsets=offsets, backend="cpu")
    got = signal.lombscargle_batch(t, y, 0.1, 0.01, 200, offsets=offsets, backend="cpu", device=[0, 1])
    np.testing.assert_array_equal(got, want)
    x0, sigma = rng.normal(0, 10, size=(20, 3)), rng.uniform(8, 12, 20)
    want = ode.lorenz63(x0, sigma, steps=30, save_at=[10], backend="cpu")
    got = ode.lorenz63(x0, sigma, steps=30, save_at=[10], backend="cpu", device=[0, 1])
    np.testing.assert_array_equal(got.final, want.final)
    np.testing.assert_array_equal(got.saved, want.saved)
    want = ode.lorenz63_adaptive(x0, sigma, t_eval=[0.5], max_steps=40, backend="cpu")
    got = ode.lorenz63_adaptive(x0, sigma, t_eval=[0.5], max_steps=40, backend="cpu", device=[0, 1])
    for field in want._fields:
        np.testing.assert_array_equal(getattr(got, field), getattr(want, field))


@pytest.mark.skipif(COUNT > 0, reason="this machine has a GPU")
def test_without_a_gpu_a_list_of_devices_is_no_gpu_or_the_cpu(rng):
    t, y, offsets = _ragged(rng, 20)
    want = signal.lombscargle_batch(t, y, 0.1, 0.01, 200, offsets=offsets, best=True, backend="cpu")
    got = signal.lombscargle_batch(t, y, 0.1, 0.01, 200, offsets=offsets, best=True, device=[0, 1])
    for field in ("index", "power", "frequency"):
        np.testing.assert_array_equal(getattr(got, field), getattr(want, field))
    with pytest.raises(kernpack.NoGpuError):
        signal.lombscargle_batch(t, y, 0.1, 0.01, 200, offsets=offsets, backend="gpu", device=[0, 1])


def test_a_list_of_gpus_gives_the_bits_of_one_gpu(rng):
    n = _gpus(1)
    t, y, offsets = _ragged(rng, 400)
    t32, y32 = t.astype(np.float32), y.astype(np.float32)
    nf = 3000
    for devices in ([0], list(range(n))):
        for best in (False, True):
            want = signal.lombscargle_batch(t32, y32, 0.1, 0.01, nf, offsets=offsets, best=best, device=0)
            got = signal.lombscargle_batch(t32, y32, 0.1, 0.01, nf, offsets=offsets, best=best, device=devices)
            for w, g in zip(want if best else [want], got if best else [got]):
                np.testing.assert_array_equal(g, w)
        x0 = 8.0 + rng.normal(size=(300, 40))
        np.testing.assert_array_equal(ode.lorenz96(x0, 50, device=devices).final, ode.lorenz96(x0, 50, device=0).final)
        # Lorenz 63: members split with their own rho, and the saved steps gathered.
        x3, rho = rng.normal(0, 10, size=(501, 3)), rng.uniform(20, 35, 501)
        want63 = ode.lorenz63(x3, rho=rho, steps=80, save_at=[0, 30, 80], device=0)
        got63 = ode.lorenz63(x3, rho=rho, steps=80, save_at=[0, 30, 80], device=devices)
        np.testing.assert_array_equal(got63.final, want63.final)
        np.testing.assert_array_equal(got63.saved, want63.saved)
        # Adaptive: each member's steps and status gathered with its states (some stop at max_steps).
        want63 = ode.lorenz63_adaptive(x3, rho=rho, t_span=(0, 2), t_eval=[0.5, 2], rtol=1e-6, max_steps=60, device=0)
        got63 = ode.lorenz63_adaptive(x3, rho=rho, t_span=(0, 2), t_eval=[0.5, 2], rtol=1e-6, max_steps=60,
                                      device=devices)
        for field in want63._fields:
            np.testing.assert_array_equal(getattr(got63, field), getattr(want63, field))
        x = np.abs(rng.normal(size=offsets[-1])) + 0.1
        a, b = x.copy(), x.copy()
        reduce.normalize_batched(a, offsets, device=devices)
        reduce.normalize_batched(b, offsets, device=0)
        np.testing.assert_array_equal(a, b)
    # The peaks are those of the periodograms.
    full = signal.lombscargle_batch(t32, y32, 0.1, 0.01, nf, offsets=offsets, device=list(range(n)))
    best = signal.lombscargle_batch(t32, y32, 0.1, 0.01, nf, offsets=offsets, best=True, device=list(range(n)))
    np.testing.assert_array_equal(best.index, np.argmax(full, axis=1))
    np.testing.assert_array_equal(best.power, full.max(axis=1).astype(np.float64))


def test_device_arrays_with_a_list_of_gpus_is_a_value_error(rng):
    _gpus(1)
    cp = _cupy()
    t, y = _series(rng)
    with pytest.raises(ValueError, match="several GPUs"):
        signal.lombscargle_batch(cp.asarray(t), cp.asarray(y), 0.1, 0.01, 50, offsets=np.array([0, t.size]), device=[0])
