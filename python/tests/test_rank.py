"""kernpack.ndimage.median_filter, rank_filter and percentile_filter against
scipy.ndimage, with exact equality, on random calls: 1-D to 3-D arrays of
every dtype kernpack filters (u)int8 to (u)int64, bool, float32, float64),
sizes or random boolean footprints, origins, axes, every mode and alias,
cval, outputs of the input's or another dtype, in place; on the CPU backend,
'auto', and the GPU where there is one. Then SciPy's errors, the fallbacks,
NaN ordering, device (CuPy) arrays, Dask, and SciPy's own tests with
kernpack substituted.

The data avoid what SciPy computes differently on purpose (kernpack's
docstrings say so): no NaN (SciPy's selection with NaNs in the window
depends on their place; kernpack sorts them above +inf, tested separately),
64-bit integers below 2**50 (SciPy selects among float64 values), and for
1-D arrays the reference is SciPy's N-D path (the array as a 1 x n image):
SciPy's 1-D path reads a footprint that is not all set as a full box, and
writes an output of another dtype as raw memory for float32, float64 and
int64 input (test_scipys_1d_path_differs shows both). Where the footprint
is a full box and the output the input's dtype, the 1-D path is compared
too.
"""
from __future__ import annotations

import importlib
import importlib.util
import os
import re
import subprocess
import sys
import warnings

import numpy as np
import pytest
import scipy.ndimage

import kernpack
from kernpack import _native, ndimage
from kernpack.ndimage import median_filter, percentile_filter, rank_filter

MODES = ["reflect", "constant", "nearest", "mirror", "wrap", "grid-mirror", "grid-constant", "grid-wrap"]
DTYPES = [np.uint8, np.int8, np.uint16, np.int16, np.uint32, np.int32, np.uint64, np.int64, np.float32, np.float64,
          np.bool_]
CASES = 2000  # per function and backend (about 0.5 s each)
FUNCTIONS = {
    "median_filter": (median_filter, scipy.ndimage.median_filter),
    "rank_filter": (rank_filter, scipy.ndimage.rank_filter),
    "percentile_filter": (percentile_filter, scipy.ndimage.percentile_filter),
}
BACKENDS = ["cpu", "auto"] + (["gpu"] if os.environ.get("KERNPACK_REQUIRE_GPU") == "1" or kernpack.device_count()
                              else [])


@pytest.fixture(params=BACKENDS)
def any_backend(request):
    if request.param == "gpu":
        kernpack._context.context("gpu")  # fails (NoGpuError) rather than skips
    return request.param


@pytest.fixture
def computed(monkeypatch):
    """Fails the test if a call runs SciPy as kernpack's fallback."""

    def refuse(not_computed, *args, **kwargs):
        raise AssertionError(f"kernpack did not compute this call: {not_computed}")

    monkeypatch.setattr(ndimage, "_scipy_standing_in", refuse)


@pytest.fixture
def native_calls(monkeypatch):
    calls = []
    original = _native.rank_filter

    def recorded(*args):
        calls.append(args)
        return original(*args)

    monkeypatch.setattr(_native, "rank_filter", recorded)
    return calls


# --------------------------------------------------------------------------
# Random calls
# --------------------------------------------------------------------------


def random_array(rng, dtype, shape):
    dtype = np.dtype(dtype)
    if dtype == np.bool_:
        return rng.random(shape) < rng.uniform(0.2, 0.8)
    if dtype.kind == "f":
        if rng.random() < 0.5:  # ties
            x = rng.integers(-6, 7, shape).astype(dtype)
        else:
            x = (rng.normal(0, rng.uniform(0.5, 1000), shape)).astype(dtype)
        if x.size and rng.random() < 0.2:
            x.flat[rng.integers(x.size, size=3)] = -0.0
        return x
    info = np.iinfo(dtype)
    lo, hi = max(int(info.min), -(2**50)), min(int(info.max), 2**50)
    if rng.random() < 0.4:  # ties, near zero
        lo, hi = max(lo, -8), min(hi, 8)
    return rng.integers(lo, hi, shape, endpoint=True).astype(dtype)


def random_shape(rng):
    ndim = int(rng.integers(1, 4))
    longest = {1: 50, 2: 16, 3: 7}[ndim]
    return tuple(int(rng.integers(1, longest + 1)) for _ in range(ndim))


def random_call(rng, ndim):
    """Keyword arguments of a valid call on an ``ndim``-D array (size or
    footprint, origin, mode, cval, axes) and the footprint's point count."""
    axes = None
    k = ndim
    if ndim > 1 and rng.random() < 0.25:
        k = int(rng.integers(1, ndim + 1))
        axes = [int(a) - (ndim if rng.random() < 0.5 else 0) for a in rng.permutation(ndim)[:k]]
    most = {1: 9, 2: 5, 3: 4}[ndim]
    kwargs = {}
    if rng.random() < 0.5:
        sizes = [int(rng.integers(1, most + 1)) for _ in range(k)]
        kwargs["size"] = sizes[0] if rng.random() < 0.3 else sizes
        sizes = sizes[:1] * k if not isinstance(kwargs["size"], list) else sizes
        fp = np.ones(sizes, dtype=bool)
    else:
        fp = rng.random([int(rng.integers(1, most + 1)) for _ in range(k)]) < rng.uniform(0.3, 0.9)
        if not fp.any():
            fp.flat[int(rng.integers(fp.size))] = True
        kwargs["footprint"] = fp if rng.random() < 0.8 else fp.astype(np.uint8).tolist()
    # The footprint as SciPy expands it to every axis: origins valid there.
    full = fp if axes is None or k == ndim else np.expand_dims(fp, tuple(a for a in range(ndim)
                                                                           if a not in [x % ndim for x in axes]))
    filtered = [a % ndim for a in axes] if axes is not None and k < ndim else list(range(ndim))
    origins = [int(rng.integers(-(full.shape[a] // 2), (full.shape[a] - 1) // 2 + 1)) for a in filtered]
    pick = rng.random()
    if pick < 0.3:
        kwargs["origin"] = origins
    elif pick < 0.45 and all(-(full.shape[a] // 2) <= origins[0] <= (full.shape[a] - 1) // 2 for a in filtered):
        kwargs["origin"] = origins[0]
    kwargs["mode"] = MODES[int(rng.integers(len(MODES)))]
    if axes is not None:
        kwargs["axes"] = axes
    return kwargs, int(np.count_nonzero(fp))


def random_cval(rng, dtype, out_dtype):
    dtype = np.dtype(dtype)
    if dtype == np.bool_:
        return float(rng.integers(0, 2))
    if dtype.kind == "u":
        return float(rng.integers(0, 100)) if rng.random() < 0.5 else float(rng.uniform(-0.9, 100))
    return float(rng.integers(-100, 100)) if rng.random() < 0.5 else float(rng.uniform(-100, 100))


def other_dtype(rng, dtype):
    """An output dtype holding every value of these arrays."""
    dtype = np.dtype(dtype)
    if dtype.kind == "f":
        return np.dtype(rng.choice([np.float64, np.float32, np.int64, np.int32]))
    if dtype == np.bool_:
        return np.dtype(rng.choice([np.float64, np.int16, np.uint8]))
    return np.dtype(rng.choice([np.float64, np.int64] if dtype.itemsize == 8 or dtype == np.uint32
                               else [np.float64, np.float32, np.int64]))


def random_rank(rng, name, count):
    if name == "median_filter":
        return ()
    if name == "rank_filter":
        return (int(rng.integers(-count, count)),)
    special = [0.0, 100.0, -100.0, 50.0, -50.0]
    return (float(rng.choice(special)) if rng.random() < 0.2 else float(rng.uniform(-100, 100)),)


def scipy_result(name, x, args, kwargs, output_dtype):
    """SciPy's result: its N-D path (1-D arrays as a 1 x n image)."""
    ref = FUNCTIONS[name][1]
    out = None if output_dtype is None else np.zeros(x.shape, output_dtype)
    if x.ndim != 1:
        got = ref(x, *args, output=out, **kwargs)
        return got if out is None else out
    kw = dict(kwargs)
    if "size" in kw:
        kw["size"] = (1, np.ravel(kw["size"])[0])
    if "footprint" in kw:
        kw["footprint"] = np.asarray(kw["footprint"], dtype=bool)[None, :]
    kw["origin"] = (0, np.ravel(kw.get("origin", 0))[0])
    out2 = None if out is None else out[None, :]
    got = ref(x[None, :], *args, output=out2, **kw)
    return got[0] if out is None else out


def check_equal(got, want, what):
    assert got.shape == want.shape and got.dtype == want.dtype, (
        f"{what}: {got.dtype}{got.shape} != {want.dtype}{want.shape}")
    if not np.array_equal(got, want):
        bad = np.argwhere(got != want)[:5]
        raise AssertionError(f"{what}: differs at {bad.tolist()}: {got[tuple(bad.T)]} != {want[tuple(bad.T)]}")


@pytest.mark.parametrize("name", list(FUNCTIONS))
def test_random_calls_match_scipy_exactly(name, any_backend, rng, computed, native_calls):
    function = FUNCTIONS[name][0]
    outputs = {"new": 0, "array": 0, "other": 0, "dtype": 0, "in place": 0}
    for case in range(CASES):
        dtype = np.dtype(DTYPES[case % len(DTYPES)])
        shape = random_shape(rng)
        x = random_array(rng, dtype, shape)
        kwargs, count = random_call(rng, x.ndim)
        args = random_rank(rng, name, count)
        pick = rng.random()
        how = "new" if pick < 0.55 else "array" if pick < 0.7 else "other" if pick < 0.82 else (
            "dtype" if pick < 0.9 else "in place")
        out_dtype = other_dtype(rng, dtype) if how in ("other", "dtype") else x.dtype
        if kwargs["mode"] in ("constant", "grid-constant") or rng.random() < 0.1:
            kwargs["cval"] = random_cval(rng, dtype, out_dtype)
        what = f"case {case}: {name}{args} of {dtype}{shape}, {kwargs}, output {how} {out_dtype}"
        want = scipy_result(name, x, args, kwargs, None if how == "new" else out_dtype)
        before = len(native_calls)
        if how == "new":
            got = function(x, *args, backend=any_backend, **kwargs)
        elif how in ("array", "other"):
            out = np.full(x.shape, 7, out_dtype)  # poisoned
            got = function(x, *args, output=out, backend=any_backend, **kwargs)
            assert got is out, what
        elif how == "dtype":
            got = function(x, *args, output=out_dtype, backend=any_backend, **kwargs)
        else:
            x0 = x.copy()
            got = function(x, *args, output=x, backend=any_backend, **kwargs)
            assert got is x, what
            x = x0
        outputs[how] += 1
        assert len(native_calls) == before + (x.size > 0), what
        check_equal(got, want, what)
        if x.ndim == 1 and "footprint" not in kwargs and how in ("new", "array", "in place") and (
                np.ravel(kwargs["size"])[0] <= x.size):
            # SciPy's 1-D path, where it computes the same call (windows longer
            # than the array read past it there: test_scipys_1d_path_differs).
            direct = FUNCTIONS[name][1](x, *args, **kwargs)
            check_equal(got, direct, what + " (SciPy's 1-D path)")
    assert min(outputs.values()) > 50, outputs


def test_every_dtype_and_mode_is_drawn():
    """The random calls above cover every dtype, mode, footprints, axes,
    origins and output kinds (the draws of one seeded run)."""
    rng = np.random.default_rng(1)
    seen_modes, footprints, axes, origins = set(), 0, 0, 0
    for _ in range(500):
        kwargs, _ = random_call(rng, int(rng.integers(1, 4)))
        seen_modes.add(kwargs["mode"])
        footprints += "footprint" in kwargs
        axes += "axes" in kwargs
        origins += bool(np.any(kwargs.get("origin", 0)))
    assert seen_modes == set(MODES) and min(footprints, axes, origins) > 50


def test_large_windows_and_every_kernel_path(any_backend, rng, computed):
    """Windows past the GPU's sorting networks (81 points; 25 for 8-byte
    values), large boxes of 8-bit values (the sliding histogram) and large
    sparse footprints (the radix selection), against SciPy."""
    for dtype in (np.uint8, np.int8, np.int16, np.float32, np.float64, np.int64):
        for size in ((9, 11), (15, 15), (1, 41)):
            x = random_array(rng, dtype, (30, 45))
            for mode in ("reflect", "constant", "wrap"):
                check_equal(median_filter(x, size, mode=mode, cval=3, backend=any_backend),
                            scipy.ndimage.median_filter(x, size, mode=mode, cval=3), f"{dtype} {size} {mode}")
        fp = rng.random((9, 9)) < 0.5
        x = random_array(rng, dtype, (25, 30))
        check_equal(percentile_filter(x, 30, footprint=fp, backend=any_backend),
                    scipy.ndimage.percentile_filter(x, 30, footprint=fp), f"{dtype} sparse 9x9")
        x3 = random_array(rng, dtype, (9, 10, 11))
        check_equal(rank_filter(x3, -3, size=(3, 4, 5), mode="mirror", origin=(1, -2, 0), backend=any_backend),
                    scipy.ndimage.rank_filter(x3, -3, size=(3, 4, 5), mode="mirror", origin=(1, -2, 0)),
                    f"{dtype} 3-D")


def test_views_lists_and_byte_order(rng, computed):
    x = random_array(rng, np.int32, (20, 30))
    view = x[::2, 3:25:3]
    check_equal(median_filter(view, 3), scipy.ndimage.median_filter(view, 3), "view")
    check_equal(median_filter(x.T, (3, 5)), scipy.ndimage.median_filter(x.T, (3, 5)), "transposed")
    check_equal(median_filter(x.tolist(), 3), scipy.ndimage.median_filter(x.tolist(), 3), "list")
    big = x.astype(">f8")
    check_equal(median_filter(big, 3), scipy.ndimage.median_filter(big, 3), "big-endian")
    before = x.copy()
    median_filter(x, 5)
    np.testing.assert_array_equal(x, before)
    out = np.zeros((30, 20), np.float64).T  # not C-contiguous
    assert median_filter(x, 3, output=out) is out
    check_equal(out, scipy.ndimage.median_filter(x, 3).astype(np.float64), "strided output")


def test_empty_arrays(computed):
    for shape in ((0,), (0, 5), (3, 0, 2)):
        x = np.zeros(shape, np.int16)
        got = median_filter(x, 3)
        assert got.shape == shape and got.dtype == np.int16


def test_nan_sorts_above_inf_and_minus_zero_below_zero():
    """kernpack's order (NumPy's sort): NaN above +inf; -0.0 below +0.0."""
    x = np.array([np.nan, 1.0, -np.inf, np.nan, 5.0, np.inf, 2.0])
    for backend in ("cpu", "auto"):
        for r in range(3):
            got = rank_filter(x, r, size=3, mode="nearest", backend=backend)
            padded = np.concatenate([x[:1], x, x[-1:]])
            want = np.array([np.sort(padded[i:i + 3])[r] for i in range(len(x))])
            np.testing.assert_array_equal(got, want)
        z = np.array([0.0, -0.0, 0.0], dtype=np.float32)
        assert np.signbit(rank_filter(z, 0, size=3, mode="wrap", backend=backend)).all()
        assert not np.signbit(rank_filter(z, -1, size=3, mode="wrap", backend=backend)).any()


def test_scipys_1d_path_differs():
    """The two places where SciPy's 1-D path (1-D arrays) does not compute
    what its N-D path does, and kernpack computes the N-D path's result."""
    x = np.array([5.0, 1, 9, 3, 7, 2, 8, 4, 6, 0])
    fp = np.array([1, 0, 1, 1], bool)
    nd = scipy.ndimage.rank_filter(x[None], 1, footprint=fp[None])[0]
    assert not np.array_equal(scipy.ndimage.rank_filter(x, 1, footprint=fp), nd)  # SciPy's box of 4
    np.testing.assert_array_equal(rank_filter(x, 1, footprint=fp), nd)
    # (SciPy's 1-D path writes float64 input into an int32 output as raw float64
    # values, past the output's end: not called here.)
    np.testing.assert_array_equal(median_filter(x, 3, output=np.zeros(10, np.int32)),
                                  scipy.ndimage.median_filter(x, 3).astype(np.int32))


def test_64_bit_integers_are_exact():
    """kernpack selects among the integers themselves (SciPy among their
    float64 roundings)."""
    x = np.array([2**62 + 1, 2**62 + 3, 2**62 + 2, -(2**63), 2**63 - 1], np.int64)
    np.testing.assert_array_equal(median_filter(x, 3, mode="nearest"),
                                  [2**62 + 1, 2**62 + 2, 2**62 + 2, 2**62 + 2, 2**63 - 1])
    u = np.array([2**64 - 1, 2**63, 2**64 - 2], np.uint64)
    np.testing.assert_array_equal(rank_filter(u, 0, size=3, mode="wrap"), [2**63] * 3)


# --------------------------------------------------------------------------
# cval, fallbacks and errors
# --------------------------------------------------------------------------


def test_cval_out_of_an_integer_range_runs_scipy(rng, native_calls):
    x = random_array(rng, np.uint8, (9, 10))
    for cval in (300.0, -1.0, np.nan, np.inf):
        got = median_filter(x, 5, mode="constant", cval=cval)
        want = scipy.ndimage.median_filter(x, 5, mode="constant", cval=cval)
        check_equal(got, want, f"cval {cval}")
    assert not native_calls
    # SciPy's maximum over a full box pads with cval itself: into a float
    # output, kernpack filters float64, as SciPy.
    got = rank_filter(x, -1, size=5, mode="constant", cval=300.5, output=np.float32)
    check_equal(got, scipy.ndimage.rank_filter(x, -1, size=5, mode="constant", cval=300.5, output=np.float32), "float")
    assert len(native_calls) == 1 and native_calls[0][1].dtype == np.float64
    # Its other ranks pad with cval cast to uint8 (out of range: SciPy's C cast).
    got = rank_filter(x, -2, size=5, mode="constant", cval=300.5, output=np.float32)
    check_equal(got, scipy.ndimage.rank_filter(x, -2, size=5, mode="constant", cval=300.5, output=np.float32), "-2")
    assert len(native_calls) == 1
    with pytest.raises(NotImplementedError):
        median_filter(x, 5, mode="constant", cval=300.0, backend="gpu")
    # Outside 'constant' mode cval is not read.
    check_equal(median_filter(x, 5, mode="wrap", cval=np.nan), scipy.ndimage.median_filter(x, 5, mode="wrap"), "wrap")


def test_what_kernpack_does_not_compute_runs_scipy(rng, native_calls):
    x16 = rng.normal(size=30).astype(np.float16)  # SciPy's 1-D path takes float16, its N-D path not
    check_equal(median_filter(x16, 3), scipy.ndimage.median_filter(x16, 3), "float16")
    for f in (median_filter, scipy.ndimage.median_filter):
        with pytest.raises(RuntimeError, match="not supported"):
            f(x16.reshape(5, 6), 3)
    x = rng.normal(size=(9, 10))
    modes = ("wrap", "nearest")
    check_equal(rank_filter(x, 0, size=3, mode=modes), scipy.ndimage.rank_filter(x, 0, size=3, mode=modes), "modes")
    for f in (median_filter, scipy.ndimage.median_filter):
        with pytest.raises(RuntimeError, match="not supported"):
            f(x, 3, output=np.float16)
    check_equal(median_filter(np.float64(3.5), 1), scipy.ndimage.median_filter(np.float64(3.5), 1), "0-d")
    assert not native_calls
    # A sequence of one mode per axis, all alike, is computed.
    check_equal(rank_filter(x, -1, size=3, mode=("wrap", "grid-wrap")),
                scipy.ndimage.rank_filter(x, -1, size=3, mode=("wrap", "grid-wrap")), "equal modes")
    assert len(native_calls) == 1
    with pytest.raises(NotImplementedError):
        median_filter(x16, 3, backend="gpu")


def test_the_fallback_runs_scipys_filter_where_kernpacks_took_its_place(rng, monkeypatch):
    x = rng.normal(size=30).astype(np.float16)
    monkeypatch.setattr(scipy.ndimage, "median_filter", median_filter)
    check_equal(median_filter(x, 3), scipy.ndimage._filters.median_filter(x, 3), "float16")


def errors(x):
    fp = np.ones((3, 3), bool)
    return {
        "no size": (lambda f: f(x), RuntimeError),
        "complex": (lambda f: f(x.astype(complex), 3), TypeError),
        "size length": (lambda f: f(x, (3, 3, 3)), RuntimeError),
        "footprint rank": (lambda f: f(x, footprint=np.ones(3, bool)), RuntimeError),
        "empty footprint": (lambda f: f(x, footprint=np.zeros((3, 3), bool)), RuntimeError),
        "origin": (lambda f: f(x, 3, origin=2), ValueError),
        "origin length": (lambda f: f(x, 3, origin=(0, 0, 0)), RuntimeError),
        "mode": (lambda f: f(x, 3, mode="interior"), RuntimeError),
        "modes": (lambda f: f(x, 3, mode=["reflect", "wrap"]), RuntimeError),
        "cval": (lambda f: f(x, 3, cval="a"), TypeError),
        "axes range": (lambda f: f(x, 3, axes=(0, 2)), ValueError),
        "axes repeated": (lambda f: f(x, 3, axes=(0, -2)), ValueError),
        "axes footprint": (lambda f: f(x, footprint=fp, axes=(1,)), RuntimeError),
        "output shape": (lambda f: f(x, 3, output=np.zeros((2, 2))), RuntimeError),
        "output dtype": (lambda f: f(x, 3, output="U3"), RuntimeError),
    }


@pytest.mark.parametrize("case", list(errors(np.zeros((5, 6)))))
def test_bad_arguments_raise_scipys_exception_types(any_backend, case):
    x = np.arange(30.0).reshape(5, 6)
    call, kind = errors(x)[case]
    with pytest.raises(kind):
        call(scipy.ndimage.median_filter)
    with pytest.raises(kind):
        call(lambda *a, **k: median_filter(*a, backend=any_backend, **k))


@pytest.mark.parametrize("args, kind", [((5,), RuntimeError), ((-10,), RuntimeError), ((0.5,), TypeError)])
def test_bad_ranks(args, kind):
    x = np.arange(30.0).reshape(5, 6)
    for f in (scipy.ndimage.rank_filter, rank_filter):
        with pytest.raises(kind):
            f(x, *args, size=(1, 5)) if args != (0.5,) else f(x, *args, footprint=np.ones((1, 5), bool))
    for p in (101, -101):
        for f in (scipy.ndimage.percentile_filter, percentile_filter):
            with pytest.raises(RuntimeError, match="percentile"):
                f(x, p, size=3)


def test_size_and_footprint_warns_once_and_uses_the_footprint():
    x = np.arange(30.0).reshape(5, 6) % 7
    fp = np.array([[1, 0, 1]], bool)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        got = median_filter(x, size=5, footprint=fp)
    assert [str(w.message) for w in caught] == ["ignoring size because footprint is set"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        check_equal(got, scipy.ndimage.median_filter(x, size=5, footprint=fp), "footprint")


def test_read_only_output_is_a_value_error():
    x = np.arange(12.0).reshape(3, 4)
    out = np.zeros_like(x)
    out.flags.writeable = False
    with pytest.raises(ValueError, match="read-only"):
        median_filter(x, 3, output=out)


def test_module_lists_the_functions():
    for name in ("median_filter", "rank_filter", "percentile_filter"):
        assert name in ndimage.__all__ and name in ndimage.__doc__
        assert "kernpack computes" in getattr(ndimage, name).__doc__


# --------------------------------------------------------------------------
# Dask
# --------------------------------------------------------------------------


def test_dask_matches_the_single_array_call(rng):
    da = pytest.importorskip("dask.array")
    from kernpack import dask as kd

    for case in range(12):
        dtype = DTYPES[case % len(DTYPES)]
        shape = (int(rng.integers(20, 40)), int(rng.integers(15, 35)))
        x = random_array(rng, dtype, shape)
        kwargs, count = random_call(rng, 2)
        while "axes" in kwargs:
            kwargs, count = random_call(rng, 2)
        if kwargs["mode"] in ("constant", "grid-constant"):
            kwargs["cval"] = random_cval(rng, dtype, np.dtype(dtype))
        d = da.from_array(x, chunks=(int(rng.integers(4, 12)), int(rng.integers(4, 12))))
        for name in FUNCTIONS:
            args = random_rank(rng, name, count)
            got = getattr(kd, name)(d, *args, **kwargs)
            want = FUNCTIONS[name][0](x, *args, **kwargs)
            check_equal(got.compute(), want, f"case {case} {name}{args} {kwargs}")
            check_equal(want, scipy_result(name, x, args, kwargs, None), f"case {case} {name} SciPy")
    x3 = random_array(rng, np.float32, (12, 20, 18))
    d3 = da.from_array(x3, chunks=(5, 7, 6))
    got = kd.median_filter(d3, size=(3, 5), axes=(2, 0), mode="wrap", origin=(-2, 1))
    check_equal(got.compute(), median_filter(x3, size=(3, 5), axes=(2, 0), mode="wrap", origin=(-2, 1)), "3-D axes")
    with pytest.raises(RuntimeError):
        kd.rank_filter(d3, 30, size=3)
    with pytest.raises(TypeError):
        kd.median_filter(d3.astype(np.complex64), 3)
    x16 = x3[0, 0].astype(np.float16)
    check_equal(kd.median_filter(da.from_array(x16, chunks=5), 3).compute(), scipy.ndimage.median_filter(x16, 3),
                "float16")


# --------------------------------------------------------------------------
# SciPy's own tests, with kernpack's functions in SciPy's place
# --------------------------------------------------------------------------

# SciPy's tests of these functions that fail with kernpack's, and why (none
# measured with SciPy 1.17.1).
SCIPY_UNCLAIMED: set = set()
SCIPY_FUNCTIONS = re.compile(r"\b(median_filter|rank_filter|percentile_filter)\b")


def scipys_tests():
    """SciPy's test functions that name one of the three functions, as
    pytest node ids for --pyargs (module::Class::test or module::test), from
    the installed test module's source (ids, not -k: -k matches substrings,
    and test_correlate would select every test_correlate1d_*)."""
    spec = importlib.util.find_spec("scipy.ndimage.tests.test_filters")
    current, cls, body = None, None, {}
    for line in open(spec.origin, encoding="utf-8").read().splitlines():
        m = re.match(r"(\s*)def (test\w+)", line)
        c = re.match(r"class (\w+)", line)
        if c:
            cls, current = c.group(1), None
        elif m:
            if not m.group(1):
                cls = None
            current = "::".join([spec.name] + ([cls] if cls else []) + [m.group(2)])
            body[current] = []
        elif re.match(r"(def |\S+ = )", line):
            current = None
        if current:
            body[current].append(line)
    return [node for node, lines in body.items() if SCIPY_FUNCTIONS.search("\n".join(lines))]


def test_scipys_own_tests_pass_with_kernpack_substituted(backend, tmp_path):
    """SciPy's test_filters module, from the installed SciPy, its tests that
    call median_filter, rank_filter or percentile_filter (or name them, as
    the tests parametrised over filters do) run with SciPy's public
    functions replaced by kernpack's (the plugin in tests/plugins). Every
    test passes except SCIPY_UNCLAIMED, and kernpack computed calls itself.
    Skipped when SciPy's tests (or hypothesis) are not installed."""
    import xml.etree.ElementTree as ET

    for module in ("scipy.ndimage.tests.test_filters", "hypothesis"):
        if importlib.util.find_spec(module) is None:
            pytest.skip(f"{module} is not installed (SciPy's tests need both)")
    here = os.path.dirname(os.path.abspath(__file__))
    path = os.pathsep.join([os.path.dirname(os.path.dirname(kernpack.__file__)), os.path.join(here, "plugins")])
    default = "auto" if backend == "gpu" else backend
    env = dict(os.environ, PYTHONPATH=path + os.pathsep + os.environ.get("PYTHONPATH", ""), KERNPACK_BACKEND=default)
    report = tmp_path / "scipy.xml"
    run = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "kernpack_ndimage_plugin",
         "--pyargs", *scipys_tests(), f"--junitxml={report}"],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=900,
    )
    outcomes = {}
    for case in ET.parse(report).getroot().iter("testcase"):
        kind = next((child.tag for child in case if child.tag in ("failure", "error", "skipped")), "passed")
        outcomes[case.get("name")] = kind
    failed = {name for name, kind in outcomes.items() if kind in ("failure", "error")}
    kinds = ("passed", "failure", "error", "skipped")
    counts = {kind: sum(1 for k in outcomes.values() if k == kind) for kind in kinds}
    calls = next((line for line in run.stdout.splitlines() if line.startswith("kernpack ndimage calls")), "")
    print(f"SciPy's own tests on the {backend} backend: {counts}; {calls}")
    assert counts["passed"] > 100, run.stdout[-3000:] + run.stderr[-3000:]
    assert failed <= SCIPY_UNCLAIMED, f"{sorted(failed - SCIPY_UNCLAIMED)}\n{run.stdout[-5000:]}"
    m = re.search(r"'computed': (\d+)", calls)
    assert m and int(m.group(1)) > 50, run.stdout[-2000:]
    for name in ("median_filter", "rank_filter", "percentile_filter"):
        assert f"'{name}': 0" not in calls, calls


# --------------------------------------------------------------------------
# Device arrays (CuPy): skipped without a GPU and CuPy, except with
# KERNPACK_REQUIRE_GPU=1
# --------------------------------------------------------------------------


@pytest.fixture
def cp():
    try:
        import cupy
    except ImportError:
        if os.environ.get("KERNPACK_REQUIRE_GPU") == "1":
            pytest.fail("KERNPACK_REQUIRE_GPU=1 but cupy is not importable")
        pytest.skip("cupy not installed")
    if kernpack.device_count() == 0:
        if os.environ.get("KERNPACK_REQUIRE_GPU") == "1":
            pytest.fail("KERNPACK_REQUIRE_GPU=1 but no GPU is visible")
        pytest.skip("no GPU")
    return cupy


@pytest.fixture
def device_calls(monkeypatch):
    calls = []
    original = _native.rank_filter_device

    def recorded(*args):
        calls.append(args)
        return original(*args)

    monkeypatch.setattr(_native, "rank_filter_device", recorded)
    return calls


@pytest.mark.parametrize("name", list(FUNCTIONS))
def test_cupy_arrays_match_scipy(cp, device_calls, computed, name):
    rng = np.random.default_rng([31, len(name)])
    for case in range(300):
        dtype = DTYPES[case % (len(DTYPES) - 1)]  # not bool: cupyx filters device bool arrays
        x = random_array(rng, dtype, random_shape(rng))
        kwargs, count = random_call(rng, x.ndim)
        args = random_rank(rng, name, count)
        if kwargs["mode"] in ("constant", "grid-constant"):
            kwargs["cval"] = random_cval(rng, dtype, np.dtype(dtype))
        d = cp.asarray(x)
        before = len(device_calls)
        got = FUNCTIONS[name][0](d, *args, **kwargs)
        assert isinstance(got, cp.ndarray) and got.dtype == x.dtype
        check_equal(cp.asnumpy(got), scipy_result(name, x, args, kwargs, None), f"case {case} {kwargs}")
        if len(device_calls) > before:
            # kernpack read and wrote the CuPy buffers themselves.
            assert device_calls[-1][2] == d.data.ptr and device_calls[-1][3] == got.data.ptr
    # Most calls are kernpack's own (0-D arrays and the like go to cupyx).
    assert len(device_calls) >= 200, len(device_calls)


def test_cupy_views_in_place_and_fallbacks(cp, device_calls):
    import cupyx.scipy.ndimage

    rng = np.random.default_rng(32)
    big = cp.asarray(rng.integers(-50, 50, (40, 50)).astype(np.int16))
    view = big[5:35:2, 10:40]
    got = median_filter(view, (3, 5), mode="nearest")
    check_equal(cp.asnumpy(got), scipy.ndimage.median_filter(cp.asnumpy(view), (3, 5), mode="nearest"), "view")
    work = cp.asarray(cp.asnumpy(view))
    assert rank_filter(work, 2, size=3, output=work) is work
    check_equal(cp.asnumpy(work), scipy.ndimage.rank_filter(cp.asnumpy(view), 2, size=3), "in place")
    n = len(device_calls)
    f16 = cp.asarray(rng.normal(size=(12, 10)).astype(np.float16))
    got = median_filter(f16, 3)
    assert len(device_calls) == n, "kernpack's kernel ran a call it does not compute"
    np.testing.assert_array_equal(cp.asnumpy(got), cp.asnumpy(cupyx.scipy.ndimage.median_filter(f16, 3)))
    with pytest.raises(ValueError, match="backend='cpu'"):
        median_filter(big, 3, backend="cpu")
    with pytest.raises(RuntimeError, match="shape"):
        median_filter(big, 3, output=cp.zeros((3, 3), np.int16))
