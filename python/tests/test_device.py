"""Device arrays (CuPy, PyTorch, Numba, JAX): results of the same library and
dtype, no host copy (checked by the data pointers the native layer receives),
work enqueued on the caller's current stream. Skipped without a GPU, except
with KERNPACK_REQUIRE_GPU=1 (the GPU machine), where a missing GPU or a
missing CuPy / PyTorch is a failure."""
from __future__ import annotations

import os
import warnings

import numpy as np
import pytest
import scipy.ndimage
import scipy.signal

import kernpack
from conftest import need_gpu_module
from kernpack import _native

REQUIRE = os.environ.get("KERNPACK_REQUIRE_GPU") == "1"


@pytest.fixture
def cp():
    cupy = need_gpu_module("cupy")
    return cupy


@pytest.fixture
def torch():
    t = need_gpu_module("torch")
    if not t.cuda.is_available():
        if REQUIRE:
            pytest.fail("torch has no CUDA")
        pytest.skip("torch without CUDA")
    return t


@pytest.fixture
def spy(monkeypatch):
    """Records the arguments of every native device entry point."""
    calls = []

    def wrap(name):
        original = getattr(_native, name)

        def recorded(*args):
            calls.append((name, args))
            return original(*args)

        monkeypatch.setattr(_native, name, recorded)

    for name in dir(_native):
        if name.endswith("_device"):
            wrap(name)
    return calls


def _series(rng, nx, dtype=np.float64):
    t = np.sort(rng.uniform(0, 100, nx)).astype(dtype)
    y = (np.sin(0.7 * t) + rng.normal(0, 0.5, nx)).astype(dtype)
    w = rng.uniform(0.1, 2.0, nx).astype(dtype)
    return t, y, w


def _scipy_ls(t, y, f, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        return scipy.signal.lombscargle(
            t.astype(np.float64), y.astype(np.float64), f.astype(np.float64), **kw
        )


# f32 on the GPU: fast-math sincos and f32 sums; the project's stated bound is
# rel L2 <= 1e-4 against a f64 reference. f64: ~1e-12 in practice; 1e-9 leaves
# room for the different summation order (times shifted by their mean).
TOL = {np.float32: 1e-4, np.float64: 1e-9}


def _rel_l2(a, b):
    a, b = np.asarray(a), np.asarray(b)
    return np.linalg.norm(a - b) / np.linalg.norm(b)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("normalize", [False, True, "amplitude"])
@pytest.mark.parametrize("floating_mean", [False, True])
def test_cupy_lombscargle_matches_scipy_and_stays_on_device(cp, spy, dtype, normalize, floating_mean):
    rng = np.random.default_rng([1, int(floating_mean), hash(str(normalize)) % 97])
    t, y, w = _series(rng, 257, dtype)
    f = rng.uniform(0.01, 3.0, 1031).astype(dtype)
    dt, dy, dw, df = (cp.asarray(a) for a in (t, y, w, f))
    out = kernpack.signal.lombscargle(dt, dy, df, normalize=normalize, weights=dw, floating_mean=floating_mean)
    assert isinstance(out, cp.ndarray)
    want = _scipy_ls(t, y, f, normalize=normalize, weights=w, floating_mean=floating_mean)
    assert out.dtype == (np.result_type(dtype, np.complex64) if normalize == "amplitude" else dtype)
    assert _rel_l2(cp.asnumpy(out), want) <= TOL[dtype]
    name, args = spy[-1]
    assert name == "lombscargle_device"
    # Zero copy: the kernel got the caller's own buffers and wrote into the result.
    # Arguments: ctx, dtype, (t, y, weights), nx, (freqs, nf), options, out, stream.
    assert args[2] == (dt.data.ptr, dy.data.ptr, dw.data.ptr)
    assert args[4] == (df.data.ptr, df.size) and args[6] == out.data.ptr


def test_cupy_runs_on_the_current_stream(cp, spy):
    rng = np.random.default_rng(7)
    t, y, _ = _series(rng, 500, np.float32)
    stream = cp.cuda.Stream(non_blocking=True)
    with stream:
        dt = cp.asarray(t)
        # y is produced on the same stream right before the call: a result that
        # used another stream would race with this kernel.
        dy = cp.asarray(y) * 1.0
        out = kernpack.signal.lombscargle_uniform(dt, dy, 0.01, 0.002, 4096, floating_mean=True)
        host = cp.asnumpy(out, stream=stream)
    stream.synchronize()
    assert spy[-1][1][-1] == stream.ptr
    f = 0.01 + 0.002 * np.arange(4096)
    assert _rel_l2(host, _scipy_ls(t, y, f, floating_mean=True)) <= TOL[np.float32]


def test_torch_in_torch_out_on_current_stream(torch, spy):
    rng = np.random.default_rng(11)
    t, y, w = _series(rng, 300, np.float64)
    f = np.linspace(0.05, 2.0, 777)
    stream = torch.cuda.Stream()
    with torch.cuda.stream(stream):
        dt, dy, dw, df = (torch.as_tensor(a, device="cuda") for a in (t, y, w, f))
        out = kernpack.signal.lombscargle(dt, dy, df, weights=dw, normalize="amplitude")
        assert spy[-1][1][-1] == stream.cuda_stream
        assert spy[-1][1][2] == (dt.data_ptr(), dy.data_ptr(), dw.data_ptr())
        assert spy[-1][1][4] == (df.data_ptr(), df.numel()) and spy[-1][1][6] == out.data_ptr()
    stream.synchronize()
    assert isinstance(out, torch.Tensor) and out.dtype == torch.complex128 and out.is_cuda
    assert _rel_l2(out.cpu().numpy(), _scipy_ls(t, y, f, weights=w, normalize="amplitude")) <= 1e-9


def test_numba_device_arrays(cp):
    np.row_stack = getattr(np, "row_stack", np.vstack)  # older Numba on NumPy 2
    cuda = pytest.importorskip("numba.cuda")
    rng = np.random.default_rng(5)
    t, y, _ = _series(rng, 200, np.float64)
    f = np.linspace(0.05, 2.0, 300)
    out = kernpack.signal.lombscargle(cuda.to_device(t), cuda.to_device(y), cuda.to_device(f))
    assert hasattr(out, "__cuda_array_interface__") and type(out).__module__.startswith("numba")
    assert _rel_l2(out.copy_to_host(), _scipy_ls(t, y, f)) <= 1e-9


def test_device_errors_say_what_to_pass(cp):
    rng = np.random.default_rng(3)
    t, y, _ = _series(rng, 64, np.float32)
    dt, dy = cp.asarray(t), cp.asarray(y)
    f = cp.linspace(0.1, 1, 10, dtype=cp.float32)
    with pytest.raises(TypeError, match="contiguous"):
        kernpack.signal.lombscargle(cp.asarray(np.repeat(t, 2))[::2], dy, f)
    with pytest.raises(TypeError, match="float32 or float64"):
        kernpack.signal.lombscargle(dt.astype(cp.int32), dy, f)
    with pytest.raises(TypeError, match="one dtype"):
        kernpack.signal.lombscargle(dt, dy.astype(cp.float64), f)
    with pytest.raises(TypeError, match="host"):
        kernpack.signal.lombscargle(t, dy, f)
    with pytest.raises(ValueError, match="equal non-zero length"):
        kernpack.signal.lombscargle(dt[:10], dy, f)
    with pytest.raises(ValueError, match="cpu"):
        kernpack.signal.lombscargle(dt, dy, f, backend="cpu")


class _FakeDeviceArray:
    """A __cuda_array_interface__ that points at memory no one allocated."""

    def __init__(self, ptr, n):
        self.__cuda_array_interface__ = {
            "data": (ptr, False), "shape": (n,), "typestr": "<f4", "strides": None, "version": 3,
        }


def test_bad_device_pointer_is_an_error_and_the_context_survives(cp):
    rng = np.random.default_rng(9)
    t, y, _ = _series(rng, 128, np.float32)
    f = cp.linspace(0.1, 2, 64, dtype=cp.float32)
    with pytest.raises(ValueError, match="not device memory"):
        kernpack.signal.lombscargle(_FakeDeviceArray(0x1234, 128), cp.asarray(y), f)
    short = cp.asarray(y)
    with pytest.raises(ValueError, match="beyond its allocation"):
        # Claims more values than the allocation holds.
        kernpack.signal.lombscargle(_FakeDeviceArray(short.data.ptr, 10**6), _FakeDeviceArray(short.data.ptr, 10**6), f)
    out = kernpack.signal.lombscargle(cp.asarray(t), cp.asarray(y), f)  # the context still works
    cp.cuda.runtime.deviceSynchronize()
    assert _rel_l2(cp.asnumpy(out), _scipy_ls(t, y, cp.asnumpy(f))) <= 1e-4


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("mode", ["reflect", "constant", "nearest", "mirror", "wrap"])
def test_cupy_uniform_filter(cp, spy, dtype, mode):
    rng = np.random.default_rng([2, hash(mode) % 101])
    image = rng.normal(size=(301, 517)).astype(dtype)
    for size in (1, 3, 7, 15, 33):
        d = cp.asarray(image)
        out = kernpack.ndimage.uniform_filter(d, size, mode=mode, cval=0.25)
        want = scipy.ndimage.uniform_filter(image.astype(np.float64), size, mode=mode, cval=0.25)
        # f32: window sums of up to 33^2 values of O(1) in float32.
        tol = 2e-5 if dtype == np.float32 else 1e-12
        assert isinstance(out, cp.ndarray) and out.dtype == dtype
        np.testing.assert_allclose(cp.asnumpy(out), want, atol=tol, rtol=tol)
        assert spy[-1][1][2] == d.data.ptr and spy[-1][1][3] == out.data.ptr


def test_cupy_uniform_filter_pitched_view_and_in_place(cp, spy):
    rng = np.random.default_rng(4)
    big = cp.asarray(rng.normal(size=(200, 300)))
    view = big[10:150, 20:260]  # rows with a pitch: read in place
    out = cp.full(view.shape, cp.nan)
    got = kernpack.ndimage.uniform_filter(view, 5, output=out)
    assert got is out and spy[-1][1][2] == view.data.ptr
    want = scipy.ndimage.uniform_filter(cp.asnumpy(view), 5)
    np.testing.assert_allclose(cp.asnumpy(out), want, rtol=1e-12, atol=1e-12)
    inplace = cp.asarray(cp.asnumpy(view))
    kernpack.ndimage.uniform_filter(inplace, 5, output=inplace)
    np.testing.assert_allclose(cp.asnumpy(inplace), want, rtol=1e-12, atol=1e-12)


def test_torch_uniform_filter(torch):
    rng = np.random.default_rng(6)
    image = rng.normal(size=(123, 77)).astype(np.float32)
    out = kernpack.ndimage.uniform_filter(torch.as_tensor(image, device="cuda"), 9, mode="wrap")
    assert isinstance(out, torch.Tensor) and out.dtype == torch.float32
    np.testing.assert_allclose(out.cpu().numpy(), scipy.ndimage.uniform_filter(image.astype(np.float64), 9, mode="wrap"), atol=2e-5)


# Calls kernpack's kernels do not compute, with CuPy arrays: cupyx's filter
# computes them (as SciPy does for host arrays), on the arrays' own GPU.
CUPY_NOT_COMPUTED = {
    "float64 output of float32": (lambda cp, a: dict(input=cp.asarray(a, cp.float32), size=3, output=np.float64)),
    "uint8 output array": (lambda cp, a: dict(input=cp.asarray(a), size=3, output=cp.zeros(a.shape, cp.uint8))),
    "column-strided output": (lambda cp, a: dict(input=cp.asarray(a), size=5, output=cp.zeros((18, 20))[:, ::2])),
    "fractional cval of an int image": (
        lambda cp, a: dict(input=cp.asarray((a * 40).astype(np.int32)), size=3, mode="constant", cval=0.5)),
}

# Calls cupyx computed before kernpack's N-D box filter came in: its device
# entry point computes them now (test_uniform_nd.py tests it at length).
CUPY_ND_COMPUTED = {
    "3-D image": (lambda cp, a: dict(input=cp.asarray(a.reshape(3, 6, 10)), size=3)),
    "uint8 image": (lambda cp, a: dict(input=cp.asarray((a * 40 + 128).astype(np.uint8)), size=3)),
    "modes per axis": (lambda cp, a: dict(input=cp.asarray(a), size=3, mode=("wrap", "nearest"))),
    "Fortran-order input": (lambda cp, a: dict(input=cp.asfortranarray(cp.asarray(a)), size=5)),
    "bool image": (lambda cp, a: dict(input=cp.asarray(a > 0), size=3)),
}


@pytest.mark.parametrize("case", list(CUPY_ND_COMPUTED))
def test_cupy_nd_filter_computes_what_cupyx_did(cp, spy, case):
    image = np.random.default_rng([15, len(case)]).normal(size=(18, 10))
    kwargs = CUPY_ND_COMPUTED[case](cp, image)
    got = kernpack.ndimage.uniform_filter(**kwargs)
    assert spy and spy[-1][0] == "uniform_filter_nd_device", spy
    host = dict(kwargs, input=cp.asnumpy(kwargs["input"]))
    want = scipy.ndimage.uniform_filter(**host)
    assert isinstance(got, cp.ndarray) and got.dtype == want.dtype
    if want.dtype.kind == "f":
        np.testing.assert_allclose(cp.asnumpy(got), want, rtol=0, atol=1e-13 * np.abs(image).max())
    else:
        np.testing.assert_array_equal(cp.asnumpy(got), want)


# Windows kernpack's running-sum kernel computes on the device since any size
# and origin per axis came in: even and per-axis sizes, origins, one axis.
CUPY_NOW_COMPUTED = {
    "even size": dict(size=4),
    "per-axis sizes": dict(size=(3, 5)),
    "origin": dict(size=5, origin=1),
    "one axis": dict(size=5, axes=(1,)),
    "wide window": dict(size=(7, 40), mode="wrap"),
}


@pytest.mark.parametrize("case", list(CUPY_NOW_COMPUTED))
def test_cupy_any_window_runs_kernpacks_kernel(cp, spy, case):
    image = np.random.default_rng([12, len(case)]).normal(size=(18, 30))
    got = kernpack.ndimage.uniform_filter(cp.asarray(image), **CUPY_NOW_COMPUTED[case])
    assert spy, "kernpack's kernel did not run"
    assert isinstance(got, cp.ndarray)
    want = scipy.ndimage.uniform_filter(image, **CUPY_NOW_COMPUTED[case])
    # f64 running sums in another order than SciPy's: a few hundred eps.
    np.testing.assert_allclose(cp.asnumpy(got), want, rtol=0, atol=1e-12 * np.abs(image).max())


@pytest.mark.parametrize("case", list(CUPY_NOT_COMPUTED))
def test_cupy_what_kernpack_does_not_compute_runs_cupyx(cp, spy, case):
    import cupyx.scipy.ndimage

    image = np.random.default_rng([11, len(case)]).normal(size=(18, 10))
    kwargs = CUPY_NOT_COMPUTED[case](cp, image)
    twin = dict(kwargs)
    if isinstance(kwargs.get("output"), cp.ndarray):
        twin["output"] = cp.full_like(kwargs["output"], 7)
        kwargs["output"][...] = 7  # poisoned: every value must be written
    got = kernpack.ndimage.uniform_filter(**kwargs)
    want = cupyx.scipy.ndimage.uniform_filter(**twin)
    assert not spy, "kernpack's kernel ran a call it does not compute"
    assert isinstance(got, cp.ndarray) and got.dtype == want.dtype and got.shape == want.shape
    if isinstance(kwargs.get("output"), cp.ndarray):
        assert got is kwargs["output"]
    np.testing.assert_array_equal(cp.asnumpy(got), cp.asnumpy(want))


def test_cupy_fallback_keeps_kernpacks_refusals(cp):
    a = cp.asarray(np.random.default_rng(12).normal(size=(16, 12)))
    with pytest.raises(NotImplementedError, match="interior"):
        kernpack.ndimage.uniform_filter(a[None], 3, mode="interior")  # cupyx has no 'interior'
    with pytest.raises(ValueError, match="backend='cpu'"):
        kernpack.ndimage.uniform_filter(a, 4, backend="cpu")
    with pytest.raises(RuntimeError, match="boundary mode"):
        kernpack.ndimage.uniform_filter(a, 4, mode="bogus")
    with pytest.raises(RuntimeError, match="shape"):
        kernpack.ndimage.uniform_filter(a, 3, output=cp.zeros((4, 4)))


def test_other_cuda_array_interface_objects_are_not_handed_to_cupyx(cp):
    # Read through __cuda_array_interface__ like CuPy's arrays, but not CuPy
    # arrays: cupyx could not take them, so NotImplementedError as for other
    # libraries (kernpack's own kernel still filters what it computes).
    a = cp.asarray(np.random.default_rng(14).normal(size=(16, 12)))

    class Wrapper:
        __cuda_array_interface__ = a.__cuda_array_interface__

    with pytest.raises(NotImplementedError, match="integer sizes"):
        kernpack.ndimage.uniform_filter(Wrapper(), 2.5)
    got = kernpack.ndimage.uniform_filter(Wrapper(), 3)
    np.testing.assert_allclose(cp.asnumpy(got), scipy.ndimage.uniform_filter(cp.asnumpy(a), 3), rtol=1e-12, atol=1e-12)


def test_torch_what_kernpack_does_not_compute_says_so(torch):
    image = torch.as_tensor(np.random.default_rng(13).normal(size=(16, 12)), device="cuda")
    with pytest.raises(NotImplementedError, match="integer sizes"):
        kernpack.ndimage.uniform_filter(image, 2.5)
    # A transposed tensor: the N-D filter reads a contiguous copy.
    got = kernpack.ndimage.uniform_filter(image.t(), 3, mode=("wrap", "nearest"))
    want = scipy.ndimage.uniform_filter(image.t().cpu().numpy(), 3, mode=("wrap", "nearest"))
    np.testing.assert_allclose(got.cpu().numpy(), want, rtol=0, atol=1e-13 * float(image.abs().max()))
    with pytest.raises(TypeError, match="own dtype"):
        kernpack.ndimage.uniform_filter(image.float(), 3, output=np.float64)


def test_cupy_reductions(cp):
    rng = np.random.default_rng(8)
    x = rng.uniform(0.5, 1.5, 100_003)
    d = cp.asarray(x)
    s = kernpack.reduce.sum(d)
    assert isinstance(s, cp.ndarray) and s.shape == ()
    assert abs(float(s) - np.sum(x)) <= 1e-12 * np.sum(x)
    total = kernpack.reduce.normalize(d)
    np.testing.assert_allclose(cp.asnumpy(d), x / np.sum(x), rtol=1e-12)
    assert abs(float(total) - np.sum(x)) <= 1e-12 * np.sum(x)
    offsets = np.array([0, 10, 10, 5000, 100_003])
    flat = cp.asarray(x)
    flat[10:5000] = 0.0  # a zero-sum array is left unchanged
    result = kernpack.reduce.normalize_batched(flat, offsets)
    status = cp.asnumpy(result.failed)
    assert list(status) == [0, 1, 1, 0]  # empty arrays count as failed (zero sum)
    np.testing.assert_allclose(cp.asnumpy(flat[5000:]), x[5000:] / np.sum(x[5000:]), rtol=1e-12)
    assert not cp.any(flat[10:5000])


def test_cupy_batch_best_peaks_match_host(cp):
    rng = np.random.default_rng(10)
    lengths = rng.integers(50, 200, 64)
    series = [_series(rng, n, np.float32) for n in lengths]
    ts = [s[0] for s in series]
    ys = [s[1] for s in series]
    host = kernpack.signal.lombscargle_batch(ts, ys, 0.01, 0.003, 1000, floating_mean=True, backend="cpu")
    full = kernpack.signal.lombscargle_batch([cp.asarray(a) for a in ts], [cp.asarray(a) for a in ys], 0.01, 0.003, 1000, floating_mean=True)
    assert isinstance(full, cp.ndarray) and full.shape == (64, 1000)
    assert _rel_l2(cp.asnumpy(full), host) <= 1e-4
    best = kernpack.signal.lombscargle_batch([cp.asarray(a) for a in ts], [cp.asarray(a) for a in ys], 0.01, 0.003, 1000, floating_mean=True, best=True)
    assert isinstance(best.index, cp.ndarray)
    np.testing.assert_array_equal(cp.asnumpy(best.index), np.argmax(cp.asnumpy(full), axis=1))


def test_cupy_batch_top_peaks_match_host(cp):
    """peaks=k of CuPy arrays: CuPy arrays on the arrays' GPU, the peaks of
    the same GPU run on host arrays; an empty batch runs nothing."""
    rng = np.random.default_rng(15)
    lengths = rng.integers(50, 200, 64)
    series = [_series(rng, n, np.float32) for n in lengths]
    ts, ys = [s[0] for s in series], [s[1] for s in series]
    f0, df = rng.uniform(0.01, 0.1, 64), rng.uniform(0.001, 0.005, 64)
    host = kernpack.signal.lombscargle_batch(ts, ys, f0, df, 1000, floating_mean=True, peaks=5, separation=0.02,
                                             backend="gpu")
    got = kernpack.signal.lombscargle_batch([cp.asarray(a) for a in ts], [cp.asarray(a) for a in ys], f0, df, 1000,
                                            floating_mean=True, peaks=5, separation=0.02)
    assert isinstance(got, kernpack.signal.TopPeaks)
    for g, h in zip(got, host):
        assert isinstance(g, cp.ndarray) and g.shape == (64, 5) and g.dtype == h.dtype
        np.testing.assert_array_equal(cp.asnumpy(g), h)
    x = cp.empty(0, dtype=cp.float32)
    empty = kernpack.signal.lombscargle_batch(x, x, 0.1, 0.01, 50, offsets=np.zeros(1, np.int64), peaks=3)
    assert [(type(a), a.shape, a.dtype) for a in empty] == [
        (cp.ndarray, (0, 3), np.float64), (cp.ndarray, (0, 3), np.float64), (cp.ndarray, (0, 3), np.int64)]
    with pytest.raises(ValueError):  # device arrays run on their GPU, as best=True's
        kernpack.signal.lombscargle_batch([cp.asarray(ts[0])], [cp.asarray(ys[0])], 0.1, 0.01, 50, peaks=3,
                                          backend="cpu")


def test_cupy_lorenz96_and_fg_match_cpu(cp):
    rng = np.random.default_rng(12)
    initial = 8.0 + rng.normal(0, 1, (16, 40))
    gpu = kernpack.ode.lorenz96(cp.asarray(initial), 20, every=5)
    cpu = kernpack.ode.lorenz96(initial, 20, every=5, backend="cpu")
    assert isinstance(gpu.final, cp.ndarray) and gpu.trajectory.shape == cpu.trajectory.shape
    np.testing.assert_allclose(cp.asnumpy(gpu.final), cpu.final, rtol=1e-10, atol=1e-10)
    n = 16
    f = (rng.normal(size=(n, n)) + 1j * rng.normal(size=(n, n))) * 0.01
    g = (rng.normal(size=(n, n)) + 1j * rng.normal(size=(n, n))) * 0.01
    run_gpu = kernpack.ode.fg_integrate(cp.asarray(f), cp.asarray(g), 0.1 + 0.05j, 1e-3, 50)
    run_cpu = kernpack.ode.fg_integrate(f, g, 0.1 + 0.05j, 1e-3, 50, backend="cpu")
    # The GPU sums delta in a fixed f64 tree, as the CPU reference does: bitwise equal.
    np.testing.assert_array_equal(cp.asnumpy(run_gpu.delta), run_cpu.delta)


def test_cupy_ensembles_save_at_match_the_every_step_run(cp):
    # On the device, in segments between the saved steps: bitwise the GPU's
    # every-step trajectory at those steps (noisy Lorenz 96, Lorenz 2005),
    # and within rounding of the CPU backend.
    rng = np.random.default_rng(21)
    initial = 8.0 + rng.normal(0, 1, (33, 40))
    opts = dict(noise=0.5, seed=3)
    every = kernpack.ode.lorenz96(cp.asarray(initial), 20, every=1, **opts)
    run = kernpack.ode.lorenz96(cp.asarray(initial), 20, save_at=[0, 6, 20], **opts)
    assert isinstance(run.trajectory, cp.ndarray) and run.trajectory.shape == (3, 33, 40)
    np.testing.assert_array_equal(cp.asnumpy(run.trajectory), cp.asnumpy(every.trajectory)[[0, 6, 20]])
    np.testing.assert_array_equal(cp.asnumpy(run.final), cp.asnumpy(every.final))
    cpu = kernpack.ode.lorenz96(initial, 20, save_at=[0, 6, 20], backend="cpu", **opts)
    np.testing.assert_allclose(cp.asnumpy(run.trajectory), cpu.trajectory, rtol=1e-10, atol=1e-10)
    x5 = 10.0 + rng.normal(0, 1, (2, 960))
    every5 = kernpack.ode.lorenz05(cp.asarray(x5), 6, every=1)
    run5 = kernpack.ode.lorenz05(cp.asarray(x5), 6, save_at=[2, 3])
    np.testing.assert_array_equal(cp.asnumpy(run5.trajectory), cp.asnumpy(every5.trajectory)[[2, 3]])
    np.testing.assert_array_equal(cp.asnumpy(run5.final), cp.asnumpy(every5.final))
    with pytest.raises(ValueError, match="sorted and unique"):
        kernpack.ode.lorenz96(cp.asarray(initial), 20, save_at=[6, 0])


def test_host_arrays_on_gpu_backend_match_cpu_backend():
    if kernpack.device_count() == 0:
        if REQUIRE:
            pytest.fail("KERNPACK_REQUIRE_GPU=1 but no GPU is visible")
        pytest.skip("no GPU")
    rng = np.random.default_rng(13)
    t, y, w = _series(rng, 400, np.float64)
    f = np.linspace(0.01, 3, 5000)
    gpu = kernpack.signal.lombscargle(t, y, f, weights=w, floating_mean=True, backend="gpu")
    cpu = kernpack.signal.lombscargle(t, y, f, weights=w, floating_mean=True, backend="cpu")
    assert _rel_l2(gpu, cpu) <= 1e-10


def test_jax_arrays_through_dlpack(cp):
    os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")  # leave the GPU's memory to the others
    jax = need_gpu_module("jax")
    jnp = jax.numpy
    if not any(d.platform == "gpu" for d in jax.devices()):
        if REQUIRE:
            pytest.fail("jax sees no GPU")
        pytest.skip("jax without a GPU")
    rng = np.random.default_rng(14)
    t, y, _ = _series(rng, 300, np.float32)
    f = np.linspace(0.05, 2.0, 999).astype(np.float32)
    out = kernpack.signal.lombscargle(jnp.asarray(t), jnp.asarray(y), jnp.asarray(f), floating_mean=True)
    assert isinstance(out, jax.Array) and out.dtype == jnp.float32 and out.shape == (999,)
    cp.cuda.Device().synchronize()
    assert _rel_l2(np.asarray(out), _scipy_ls(t, y, f, floating_mean=True)) <= TOL[np.float32]
    image = rng.normal(size=(64, 80)).astype(np.float32)
    smooth = kernpack.ndimage.uniform_filter(jnp.asarray(image), 5)
    assert isinstance(smooth, jax.Array)
    np.testing.assert_allclose(np.asarray(smooth), scipy.ndimage.uniform_filter(image.astype(np.float64), 5), atol=2e-5)


@pytest.mark.parametrize("best", [False, True])
def test_empty_batch_of_device_arrays(cp, spy, best):
    """No series (a Dask partition with no rows): empty results on the device,
    no kernel call."""
    x = cp.empty(0, dtype=cp.float32)
    got = kernpack.signal.lombscargle_batch(x, x, 0.1, 0.01, 50, offsets=np.zeros(1, np.int64), best=best)
    assert not spy
    if best:
        assert [(type(a), a.shape, a.dtype) for a in got] == [
            (cp.ndarray, (0,), np.float64), (cp.ndarray, (0,), np.float64), (cp.ndarray, (0,), np.int64)]
    else:
        assert type(got) is cp.ndarray and got.shape == (0, 50) and got.dtype == np.float32
