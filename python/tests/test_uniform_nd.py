"""kernpack.ndimage.uniform_filter beyond 2-D float images (the N-D box
filter) against scipy.ndimage.uniform_filter, on random calls: 1-D to 4-D
arrays of every dtype kernpack filters ((u)int8 to (u)int64, bool, float32,
float64), a size, origin and mode (every mode and alias) per axis, `axes` in
any order, cval, outputs of the input's or another dtype, dtypes, in place,
strided; on the CPU backend, 'auto', and the GPU where there is one. Then
the pass order, the casts into other output dtypes, SciPy's errors, the
fallbacks, 0-D and empty arrays, Dask, and SciPy's own tests with kernpack
substituted.

Integer and bool results are compared exactly: kernpack sums integers
exactly and truncates each pass's mean toward zero, SciPy casts its float64
mean (exact wherever its float64 sums are: the 64-bit values drawn here stay
below 2**40, so every window sum below 2**53; test_64_bit_integers_are_exact
shows kernpack past that). Float results are compared within a few
roundings of the stored dtype per pass: both sum in float64, in another
order (SciPy's running sums, kernpack's window sums re-seeded along the
line), and each pass rounds its mean once to the dtype the passes are
stored in. 2-D float calls with one mode may run kernpack's fused 2-D filter
(float32 sums on the GPU): the tolerance of test_ndimage.py then. No NaN or
infinity in the data or cval (SciPy's running sums carry them along the
line; test_ndimage.py checks kernpack's behaviour).
"""
from __future__ import annotations

import ast
import importlib.util
import os
import re
import subprocess
import sys

import numpy as np
import pytest
import scipy.ndimage

import kernpack
from kernpack import _native, ndimage
from kernpack.ndimage import uniform_filter

MODES = ["reflect", "constant", "nearest", "mirror", "wrap", "grid-mirror", "grid-constant", "grid-wrap"]
INT_DTYPES = [np.uint8, np.int8, np.uint16, np.int16, np.uint32, np.int32, np.uint64, np.int64]
DTYPES = [np.dtype(t) for t in INT_DTYPES + [np.bool_, np.float32, np.float64]]
CASES = 1300  # per backend (about 1.5 s each)
BACKENDS = ["cpu", "auto"] + (["gpu"] if os.environ.get("KERNPACK_REQUIRE_GPU") == "1" or kernpack.device_count()
                              else [])
EPS = {np.dtype(np.float32): float(np.finfo(np.float32).eps), np.dtype(np.float64): float(np.finfo(np.float64).eps)}


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
    """(entry point, args) of every host call of the N-D and fused 2-D filters."""
    calls = []

    def wrap(name):
        original = getattr(_native, name)

        def recorded(*args):
            calls.append((name, args))
            return original(*args)

        monkeypatch.setattr(_native, name, recorded)

    wrap("uniform_filter_nd")
    wrap("box_filter")
    return calls


# --------------------------------------------------------------------------
# Random calls
# --------------------------------------------------------------------------


def random_array(rng, dtype, shape):
    dtype = np.dtype(dtype)
    if dtype == np.bool_:
        return rng.random(shape) < rng.uniform(0.2, 0.8)
    if dtype.kind == "f":
        if rng.random() < 0.3:  # small integers: ties, exact sums
            return rng.integers(-6, 7, shape).astype(dtype)
        return (rng.normal(0, rng.uniform(0.5, 1000), shape) + rng.uniform(-50, 50)).astype(dtype)
    info = np.iinfo(dtype)
    lo, hi = max(int(info.min), -(2**40)), min(int(info.max), 2**40)
    pick = rng.random()
    if pick < 0.3:  # near zero: negative means truncated toward zero
        lo, hi = max(lo, -8), min(hi, 8)
    elif pick < 0.5:  # near the dtype's edges
        lo, hi = (lo, lo + 20) if rng.random() < 0.5 else (hi - 20, hi)
    return rng.integers(lo, hi, shape, endpoint=True).astype(dtype)


def random_shape(rng):
    ndim = int(rng.integers(1, 5))
    longest = {1: 60, 2: 20, 3: 9, 4: 6}[ndim]
    return tuple(int(rng.integers(1, longest + 1)) for _ in range(ndim))


def random_call(rng, shape):
    """Keyword arguments of a valid call on an array of ``shape`` (size,
    origin, mode, axes; cval is drawn with the dtype) and the number of
    passes SciPy runs."""
    ndim = len(shape)
    listed = list(range(ndim))
    kwargs = {}
    if ndim > 1 and rng.random() < 0.35:
        k = int(rng.integers(1, ndim + 1))
        listed = [int(a) for a in rng.permutation(ndim)[:k]]
        shown = [a - ndim if rng.random() < 0.4 else a for a in listed]
        kwargs["axes"] = shown[0] if k == 1 and rng.random() < 0.3 else shown
    elif ndim == 1 and rng.random() < 0.1:
        kwargs["axes"] = [-1]
    k = len(listed)

    def one_size(axis):
        n = shape[axis]
        if rng.random() < 0.15:  # longer than the axis: windows past both edges
            return int(rng.integers(n + 1, 3 * n + 4))
        if rng.random() < 0.1:
            return int(rng.integers(-1, 2))  # not filtered (SciPy's rule: size below 2)
        return int(rng.integers(2, 8))

    sizes = [one_size(a) for a in listed]
    if rng.random() < 0.3:
        sizes = [sizes[0]] * k
        kwargs["size"] = sizes[0]
    else:
        kwargs["size"] = sizes
    origins = [int(rng.integers(-(s // 2), (s - 1) // 2 + 1)) if s > 1 else int(rng.integers(-3, 4))
               for s in sizes]
    pick = rng.random()
    if pick < 0.5:
        kwargs["origin"] = origins
    elif pick < 0.65 and len({o for o, s in zip(origins, sizes) if s > 1}) <= 1:
        kwargs["origin"] = next((o for o, s in zip(origins, sizes) if s > 1), 0)
    modes = [MODES[int(rng.integers(len(MODES)))] for _ in range(k)]
    kwargs["mode"] = modes[0] if rng.random() < 0.4 else modes
    passes = sum(1 for s in sizes if s > 1)
    return kwargs, passes


def random_cval(rng, work):
    """A cval kernpack computes for passes stored in ``work``."""
    work = np.dtype(work)
    if work == np.bool_:
        return float(rng.integers(0, 2))
    if work.kind in "iu":
        info = np.iinfo(work)
        if rng.random() < 0.2:
            return float(info.max if rng.random() < 0.5 else info.min) if work.itemsize < 8 else 2.0**40
        return float(rng.integers(max(int(info.min), -100), min(int(info.max), 100), endpoint=True))
    return float(rng.integers(-100, 100)) if rng.random() < 0.3 else float(rng.uniform(-100, 100))


def other_dtype(rng, dtype):
    """An output dtype kernpack computes for arrays of ``dtype`` (of any values)."""
    dtype = np.dtype(dtype)
    if dtype.kind == "f":
        return np.dtype(np.float64 if dtype == np.float32 else np.float32)
    wider = [d for d in DTYPES if d.kind in "iu" and d != dtype and np.can_cast(dtype, d, "safe")]
    return [np.dtype(np.float64), np.dtype(np.float32), *wider][int(rng.integers(2 + len(wider)))]


def tolerance(got_dtype, x, cval, passes, kwargs):
    """|kernpack - SciPy| allowed for a float result (module docstring);
    None (exact) for the others. The N-D filter: 4 roundings of float32, 16
    of float64 per pass (measured: at most 1.4 and 4.3 in all, over 6000
    random calls); calls the fused 2-D filter may take (2-D and 1-D float
    arrays, one mode): test_ndimage.py's bounds."""
    dtype = np.dtype(got_dtype).newbyteorder("=")
    if dtype.kind != "f":
        return None
    scale = max(float(np.max(np.abs(x.astype(np.float64)))) if x.size else 0.0, abs(cval))
    modes = {ndimage._MODES[m] for m in np.atleast_1d(kwargs.get("mode", "reflect"))}
    if x.ndim <= 2 and x.dtype.kind == "f" and len(modes) == 1:
        largest = max([int(s) for s in np.ravel(kwargs.get("size", 3))] + [1])
        return (1e-12 if dtype == np.float64 else (2 * largest + 4) * EPS[dtype]) * scale
    return (4 if dtype == np.float32 else 16) * (passes + 1) * EPS[dtype] * scale


def check_close(got, want, what, tol=None):
    assert got.shape == want.shape and got.dtype == want.dtype, (
        f"{what}: {got.dtype}{got.shape} != {want.dtype}{want.shape}")
    if tol is None or got.dtype.kind != "f":
        a, b = (got.view(np.uint8), want.view(np.uint8)) if got.dtype == np.bool_ else (got, want)
        if not np.array_equal(a, b):
            bad = np.argwhere(a != b)[:5]
            raise AssertionError(f"{what}: differs at {bad.tolist()}: {a[tuple(bad.T)]} != {b[tuple(bad.T)]}")
        return
    err = float(np.max(np.abs(got.astype(np.float64) - want.astype(np.float64)))) if got.size else 0.0
    assert err <= tol, f"{what}: max error {err} > {tol}"


def test_random_calls_match_scipy(any_backend, rng, computed, native_calls):
    outputs = {"new": 0, "array": 0, "other": 0, "dtype": 0, "in place": 0, "strided": 0}
    seen = {"ndim": set(), "dtype": set(), "mode": set(), "axes": 0, "modes per axis": 0, "origin": 0, "cval": 0,
            "long windows": 0}
    for case in range(CASES):
        dtype = DTYPES[case % len(DTYPES)]
        shape = random_shape(rng)
        x = random_array(rng, dtype, shape)
        if rng.random() < 0.05:
            x = x.astype(x.dtype.newbyteorder(">"))  # byte-swapped input
        kwargs, passes = random_call(rng, shape)
        pick = rng.random()
        how = ("new" if pick < 0.45 else "array" if pick < 0.57 else "other" if pick < 0.7 else
               "dtype" if pick < 0.8 else "in place" if pick < 0.9 else "strided")
        out_dtype = other_dtype(rng, dtype) if how in ("other", "dtype") else np.dtype(dtype)
        modes = np.atleast_1d(kwargs["mode"])
        if any(m in ("constant", "grid-constant") for m in modes) or rng.random() < 0.1:
            kwargs["cval"] = random_cval(rng, np.bool_ if out_dtype == np.bool_ else out_dtype)
        what = f"case {case}: {x.dtype}{shape}, {kwargs}, output {how} {out_dtype}"
        seen["ndim"].add(x.ndim)
        seen["dtype"].add(np.dtype(dtype).name)
        seen["mode"].update(modes)
        seen["axes"] += "axes" in kwargs
        seen["modes per axis"] += len(set(modes)) > 1
        seen["origin"] += bool(np.any(kwargs.get("origin", 0)))
        seen["cval"] += "cval" in kwargs and any(m in ("constant", "grid-constant") for m in modes)
        seen["long windows"] += any(int(s) > n for s, n in zip(np.ravel(kwargs["size"]), shape))
        if how in ("new", "in place"):
            want = scipy.ndimage.uniform_filter(x, **kwargs)
        else:
            want = scipy.ndimage.uniform_filter(x, output=np.zeros(shape, out_dtype), **kwargs)
        before = len(native_calls)
        if how == "new":
            got = uniform_filter(x, backend=any_backend, **kwargs)
        elif how in ("array", "other"):
            out = np.full(shape, 7, out_dtype)  # poisoned
            got = uniform_filter(x, output=out, backend=any_backend, **kwargs)
            assert got is out, what
        elif how == "dtype":
            got = uniform_filter(x, output=out_dtype if rng.random() < 0.5 else out_dtype.name, backend=any_backend,
                                 **kwargs)
        elif how == "strided":
            base = np.full(shape + (2,), 7, out_dtype)
            untouched = base[..., 1].copy()
            got = uniform_filter(x, output=base[..., 0], backend=any_backend, **kwargs)
            assert np.array_equal(base[..., 1], untouched), what + ": wrote past the strided output"
            got = base[..., 0]
        else:
            x0 = x.copy()
            got = uniform_filter(x, output=x, backend=any_backend, **kwargs)
            assert got is x, what
            x = x0
        outputs[how] += 1
        assert len(native_calls) >= before + (x.size > 0 and passes > 0), what
        tol = tolerance(got.dtype, x, kwargs.get("cval", 0.0), passes, kwargs)
        native = lambda a: a.astype(a.dtype.newbyteorder("="))  # noqa: E731 (in place: a byte-swapped input)
        check_close(native(got), native(want), what, tol)
    assert min(outputs.values()) > 50, outputs
    assert seen["ndim"] == {1, 2, 3, 4} and len(seen["dtype"]) == len(DTYPES) and seen["mode"] == set(MODES), seen
    assert min(seen["axes"], seen["modes per axis"], seen["origin"], seen["cval"], seen["long windows"]) > 50, seen


# --------------------------------------------------------------------------
# Pass order, output dtypes, 64-bit values
# --------------------------------------------------------------------------


def test_passes_run_in_the_order_of_axes(rng, computed, native_calls):
    """SciPy filters the axes in the order `axes` lists them, truncating
    each pass: kernpack's native calls take runs of increasing axes."""
    x = rng.integers(-20, 20, (7, 8, 9)).astype(np.int16)
    for axes, calls in (((2, 0, 1), 2), ((0, 1, 2), 1), ((2, 1, 0), 3), ((1, -1), 1), ((-1, 0), 2)):
        native_calls.clear()
        for mode in ("reflect", ("wrap", "constant", "nearest")[:len(axes)]):
            want = scipy.ndimage.uniform_filter(x, 4, mode=mode, cval=3, axes=axes)
            check_close(uniform_filter(x, 4, mode=mode, cval=3, axes=axes), want, f"axes {axes} {mode}")
        assert len(native_calls) == 2 * calls, (axes, len(native_calls))
    # The order matters for integers (each pass truncates).
    y = np.array([[2, 1, 1], [0, 1, 2], [1, 1, 2]], np.int32)
    a, b = (scipy.ndimage.uniform_filter(y, 2, axes=axes) for axes in ((0, 1), (1, 0)))
    assert not np.array_equal(a, b)
    check_close(uniform_filter(y, 2, axes=(0, 1)), a, "(0, 1)")
    check_close(uniform_filter(y, 2, axes=(1, 0)), b, "(1, 0)")


def test_float32_output_of_values_float32_does_not_hold(rng, computed, native_calls):
    """SciPy's first pass reads int32, int64 and float64 values as float64
    and rounds its means to float32: kernpack runs that pass in float64."""
    for dtype in (np.int32, np.int64, np.uint32, np.float64):
        x = (rng.integers(2**24, 2**30, (6, 7, 8)) * (-1 if dtype != np.uint32 else 1)).astype(dtype)
        if dtype == np.float64:
            x = x + rng.random(x.shape)
        native_calls.clear()
        got = uniform_filter(x, (3, 4, 5), mode=("reflect", "wrap", "constant"), cval=0.1, output=np.float32)
        want = scipy.ndimage.uniform_filter(x, (3, 4, 5), mode=("reflect", "wrap", "constant"), cval=0.1,
                                            output=np.float32)
        check_close(got, want, f"{dtype}", tolerance(np.float32, x, 0.1, 3, {}))
        assert [args[1].dtype for _, args in native_calls] == [np.float64, np.float32], dtype
    # One pass: exactly SciPy's single rounding.
    x = rng.integers(-2**31, 2**31 - 1, 1000).astype(np.int32)
    check_close(uniform_filter(x, 7, output=np.float32), scipy.ndimage.uniform_filter(x, 7, output=np.float32),
                "one pass", 0.0)


def test_narrower_integer_outputs_are_computed_where_the_values_fit(rng, native_calls):
    x = rng.integers(0, 256, (20, 30)).astype(np.int32)
    for out in (np.uint8, np.int16):
        native_calls.clear()
        check_close(uniform_filter(x, 5, mode="constant", cval=7, output=out),
                    scipy.ndimage.uniform_filter(x, 5, mode="constant", cval=7, output=out), f"{out}")
        assert len(native_calls) == 1
    # Values out of the output's range: SciPy's C cast of each mean, SciPy's call.
    x[3, 4] = 300
    native_calls.clear()
    check_close(uniform_filter(x, 5, output=np.uint8), scipy.ndimage.uniform_filter(x, 5, output=np.uint8), "300")
    assert not native_calls
    # int8 into uint16 (negative values) as well; 0/1 uint8 values into bool are computed.
    s = rng.integers(-5, 5, 50).astype(np.int8)
    check_close(uniform_filter(s, 3, output=np.uint16), scipy.ndimage.uniform_filter(s, 3, output=np.uint16), "i8")
    assert not native_calls
    b = (rng.random((9, 9)) < 0.5).astype(np.uint8)
    check_close(uniform_filter(b, 3, output=np.bool_), scipy.ndimage.uniform_filter(b, 3, output=np.bool_), "bool")
    assert len(native_calls) == 1


def test_bool_arrays_are_filtered_as_uint8(rng, computed, native_calls):
    x = rng.random((11, 12, 5)) < 0.6
    for kwargs in (dict(size=3), dict(size=(2, 5, 3), mode="constant", cval=1), dict(size=4, mode="wrap",
                                                                                          axes=(2, 0))):
        got = uniform_filter(x, **kwargs)
        assert got.dtype == np.bool_
        check_close(got, scipy.ndimage.uniform_filter(x, **kwargs), f"{kwargs}")
        assert set(np.unique(got.view(np.uint8))) <= {0, 1}
    assert all(args[1].dtype == np.uint8 for _, args in native_calls)
    for out in (np.float64, np.float32, np.int16, np.uint64):
        check_close(uniform_filter(x, 3, output=out), scipy.ndimage.uniform_filter(x, 3, output=out), f"{out}",
                    tolerance(out, x, 0.0, 3, {}))


def test_64_bit_integers_are_exact():
    """Exact sums, means truncated toward zero (SciPy's float64 sums round
    above 2**53)."""
    x = np.array([2**62 + 1, 2**62 + 3, 2**62 + 2, -(2**63), 2**63 - 1, -5, 2], np.int64)
    got = uniform_filter(x, 3, mode="nearest")
    padded = [int(v) for v in [x[0], *x, x[-1]]]
    want = [_trunc_div(padded[i] + padded[i + 1] + padded[i + 2], 3) for i in range(len(x))]
    assert got.tolist() == want
    u = np.array([2**64 - 1, 2**63, 2**64 - 2, 1], np.uint64)
    got = uniform_filter(u, 2, mode="wrap")
    wrapped = [int(v) for v in [u[-1], *u]]
    assert got.tolist() == [(wrapped[i] + wrapped[i + 1]) // 2 for i in range(len(u))]


def _trunc_div(a: int, b: int) -> int:
    q = abs(a) // b
    return q if a >= 0 else -q


def test_views_lists_byte_order_and_overlap(rng, computed):
    x = rng.integers(-1000, 1000, (12, 14, 10)).astype(np.int32)
    view = x[::2, 3:13:3, ::-1]
    check_close(uniform_filter(view, 3), scipy.ndimage.uniform_filter(view, 3), "view")
    check_close(uniform_filter(x.T, (3, 5, 2)), scipy.ndimage.uniform_filter(x.T, (3, 5, 2)), "transposed")
    check_close(uniform_filter(x[0].tolist(), 3), scipy.ndimage.uniform_filter(x[0].tolist(), 3), "list")
    big = x.astype(">i2")
    check_close(uniform_filter(big, 3), scipy.ndimage.uniform_filter(big, 3), "big-endian")
    out = np.zeros(x.shape, ">i8")
    assert uniform_filter(x, 3, output=out) is out
    check_close(out.astype(np.int64), scipy.ndimage.uniform_filter(x, 3, output=np.int64), "big-endian output")
    before = x.copy()
    uniform_filter(x, 5)
    np.testing.assert_array_equal(x, before)
    # An output overlapping the input: the filter reads a copy.
    buf = rng.integers(0, 100, 61).astype(np.uint16)
    want = scipy.ndimage.uniform_filter(buf[:-1], 4)
    got = uniform_filter(buf[:-1], 4, output=buf[1:])
    check_close(got, want, "overlap")


def test_zero_d_empty_and_unfiltered_arrays(rng, computed, native_calls):
    for dtype in DTYPES + [np.dtype(np.float16)]:
        x = np.asarray(random_array(rng, dtype, ()))
        got = uniform_filter(x, 3)
        assert got.shape == () and got.dtype == x.dtype and got == x
        assert got is not x
        y = random_array(rng, dtype, (5, 6))
        for size in (1, 0, -2, (1, 0)):
            # SciPy's copy (output[...] = input), whatever the dtypes.
            got = uniform_filter(y, size, output=np.float32)
            check_close(got, scipy.ndimage.uniform_filter(y, size, output=np.float32), f"{dtype} {size}")
    assert not native_calls
    for shape in ((0,), (0, 5), (3, 0, 2), (2, 0, 3, 4)):
        for dtype in (np.int16, np.bool_, np.float32):
            x = np.zeros(shape, dtype)
            got = uniform_filter(x, 3)
            assert got.shape == shape and got.dtype == dtype
            assert uniform_filter(x, 3, output=np.float64).dtype == np.float64


def test_the_fused_2d_filter_keeps_the_2d_float_calls(rng, native_calls):
    image = rng.normal(size=(20, 30))
    uniform_filter(image, 5, mode="wrap")
    uniform_filter(image.astype(np.float32), (3, 4), mode=("nearest", "nearest"), output=np.float64)
    uniform_filter(image[0], 5)  # 1-D float host arrays: 1 x n images
    assert [name for name, _ in native_calls] == ["box_filter"] * 3
    native_calls.clear()
    for kwargs in (dict(mode=("wrap", "nearest")), dict(output=np.int32)):
        uniform_filter(image if "output" not in kwargs else image.astype(np.int16), 5, **kwargs)
    uniform_filter(image[None], 5)
    assert [name for name, _ in native_calls] == ["uniform_filter_nd"] * 3


# --------------------------------------------------------------------------
# cval, fallbacks and errors
# --------------------------------------------------------------------------


def test_cval_outside_what_integer_passes_take_runs_scipy(rng, native_calls):
    x = rng.integers(0, 255, (9, 10, 4)).astype(np.uint8)
    for cval in (2.5, 300.0, -1.0, np.nan, np.inf, 2.0**70):
        got = uniform_filter(x, 3, mode="constant", cval=cval)
        check_close(got, scipy.ndimage.uniform_filter(x, 3, mode="constant", cval=cval), f"cval {cval}")
    b = x > 100
    check_close(uniform_filter(b, 3, mode="constant", cval=2), scipy.ndimage.uniform_filter(b, 3, mode="constant",
                                                                                            cval=2), "bool 2")
    assert not native_calls
    with pytest.raises(NotImplementedError, match="cval"):
        uniform_filter(x, 3, mode="constant", cval=2.5, backend="gpu")
    # Into a wider output the range is the output's; outside 'constant'
    # mode (or on unfiltered axes) cval is not used.
    check_close(uniform_filter(x, 3, mode="constant", cval=-300, output=np.int16),
                scipy.ndimage.uniform_filter(x, 3, mode="constant", cval=-300, output=np.int16), "int16")
    check_close(uniform_filter(x, 3, mode="wrap", cval=2.5), scipy.ndimage.uniform_filter(x, 3, mode="wrap",
                                                                                         cval=2.5), "wrap")
    check_close(uniform_filter(x, (3, 1, 3), mode=("wrap", "constant", "reflect"), cval=0.5),
                scipy.ndimage.uniform_filter(x, (3, 1, 3), mode=("wrap", "constant", "reflect"), cval=0.5), "axis")
    assert len(native_calls) == 3


NOT_COMPUTED = {
    "float into int": lambda x: dict(input=x, output=np.int32),
    "float into bool": lambda x: dict(input=x, output=np.bool_),
    "float16": lambda x: dict(input=x.astype(np.float16)),
    "complex": lambda x: dict(input=x + 1j),
    "non-integer size": lambda x: dict(input=x, size=2.5),
    "fractional cval": lambda x: dict(input=np.round(x).astype(np.int8), mode="constant", cval=0.5),
    "uint8 into bool": lambda x: dict(input=np.abs(np.round(x * 10)).astype(np.uint8) + 2, output=np.bool_),
    "float16 output": lambda x: dict(input=x, output=np.float16),
}


@pytest.mark.parametrize("case", list(NOT_COMPUTED))
def test_what_kernpack_does_not_compute_runs_scipy_unless_the_gpu_was_asked_for(rng, native_calls, case):
    kwargs = dict(size=3)
    kwargs.update(NOT_COMPUTED[case](rng.normal(size=(6, 7, 8))))
    try:
        want = scipy.ndimage.uniform_filter(**kwargs)
    except RuntimeError as e:  # SciPy's own refusal (float16) is the answer
        with pytest.raises(RuntimeError, match=re.escape(str(e))):
            uniform_filter(backend="cpu", **kwargs)
    else:
        got = uniform_filter(backend="cpu", **kwargs)
        assert got.dtype == want.dtype
        np.testing.assert_array_equal(got.view(np.uint8) if got.dtype == np.bool_ else got,
                                      want.view(np.uint8) if want.dtype == np.bool_ else want)
    assert not native_calls
    with pytest.raises(NotImplementedError):
        uniform_filter(backend="gpu", **kwargs)


def test_interior_is_the_fused_2d_filters_own(rng):
    x = rng.normal(size=(5, 6, 7))
    for call in (lambda: uniform_filter(x, 3, mode="interior"),
                 lambda: uniform_filter(x[0].astype(np.int32), 3, mode="interior"),
                 lambda: uniform_filter(x[0], 3, mode=("interior", "reflect"))):
        with pytest.raises((NotImplementedError, RuntimeError)):
            call()
    with pytest.raises(NotImplementedError, match="interior"):
        uniform_filter(x, 3, mode="interior")


def test_the_fallback_runs_scipys_filter_where_kernpacks_took_its_place(rng, monkeypatch):
    x = rng.normal(size=(5, 6, 7))
    want = scipy.ndimage.uniform_filter(x, 3, output=np.int16)
    monkeypatch.setattr(scipy.ndimage, "uniform_filter", uniform_filter)
    check_close(uniform_filter(x, 3, output=np.int16), want, "fallback")


def errors(x):
    return {
        "size length": (lambda f: f(x, (3, 3)), RuntimeError),
        "origin": (lambda f: f(x, 3, origin=2), ValueError),
        "origin of an axis": (lambda f: f(x, (3, 4, 2), origin=(0, -3, 0)), ValueError),
        "origin length": (lambda f: f(x, 3, origin=(0, 0)), RuntimeError),
        "origin float": (lambda f: f(x, 3, origin=0.5), TypeError),
        "mode": (lambda f: f(x, 3, mode="foo"), RuntimeError),
        "mode None": (lambda f: f(x, 3, mode=None), RuntimeError),
        "mode of an axis": (lambda f: f(x, 3, mode=["reflect", "wrap", "bogus"]), RuntimeError),
        "modes length": (lambda f: f(x, 3, mode=["reflect", "wrap"]), RuntimeError),
        "cval": (lambda f: f(x, 3, cval="a"), TypeError),
        "cval complex": (lambda f: f(x, 3, mode="constant", cval=1j), TypeError),
        "size None": (lambda f: f(x, None), TypeError),
        "axes range": (lambda f: f(x, 3, axes=(0, 3)), ValueError),
        "axes repeated": (lambda f: f(x, 3, axes=(0, -3)), ValueError),
        "axis scalar": (lambda f: f(x, 3, axes=5), ValueError),
        "axes sizes": (lambda f: f(x, (3, 3, 3), axes=(0, 1)), RuntimeError),
        "output shape": (lambda f: f(x, 3, output=np.zeros((2, 2))), RuntimeError),
        "output dtype": (lambda f: f(x, 3, output="U3"), RuntimeError),
        "output bool name": (lambda f: f(x, 3, output="bool"), RuntimeError),
    }


@pytest.mark.parametrize("dtype", [np.int16, np.float64])
@pytest.mark.parametrize("case", list(errors(np.zeros((4, 5, 6)))))
def test_bad_arguments_raise_scipys_exception_types(any_backend, dtype, case):
    x = np.arange(120).reshape(4, 5, 6).astype(dtype)
    call, kind = errors(x)[case]
    with pytest.raises(kind):
        call(scipy.ndimage.uniform_filter)
    with pytest.raises(kind):
        call(lambda *a, **k: uniform_filter(*a, backend=any_backend, **k))


def test_read_only_output_is_a_value_error():
    x = np.arange(24).reshape(2, 3, 4)
    out = np.zeros_like(x)
    out.flags.writeable = False
    with pytest.raises(ValueError, match="read-only"):
        uniform_filter(x, 3, output=out)


def test_the_docstring_says_what_runs_where():
    doc = uniform_filter.__doc__
    for phrase in ("any number of dimensions", "bool", "per", "float16", "cval", "fused 2-D"):
        assert phrase in doc, phrase


# --------------------------------------------------------------------------
# Dask
# --------------------------------------------------------------------------


def test_dask_matches_the_single_array_call(rng, computed):
    da = pytest.importorskip("dask.array")
    from kernpack import dask as kd

    for case in range(40):
        dtype = DTYPES[case % len(DTYPES)]
        ndim = 1 + case % 4
        shape = tuple(int(rng.integers(8, {1: 80, 2: 30, 3: 14, 4: 9}[ndim])) for _ in range(ndim))
        x = random_array(rng, dtype, shape)
        kwargs, passes = random_call(rng, shape)
        modes = np.atleast_1d(kwargs["mode"])
        if any(m in ("constant", "grid-constant") for m in modes):
            kwargs["cval"] = random_cval(rng, dtype)
        chunks = tuple(int(rng.integers(2, max(3, n // 2) + 1)) for n in shape)
        d = da.from_array(x, chunks=chunks)
        what = f"case {case}: {x.dtype}{shape} chunks {chunks} {kwargs}"
        got = kd.uniform_filter(d, **kwargs)
        assert got.dtype == x.dtype, what
        single = uniform_filter(x, **kwargs)
        want = scipy.ndimage.uniform_filter(x, **kwargs)
        # Blocks sum floats in other orders (each block's own running sums).
        tol = tolerance(x.dtype, x, kwargs.get("cval", 0.0), passes, kwargs) if x.dtype.kind == "f" else None
        check_close(got.compute(), single, what, tol)
        check_close(single, want, what + " (SciPy)", tol)


def test_dask_errors_before_computing():
    da = pytest.importorskip("dask.array")
    from kernpack import dask as kd

    d = da.zeros((10, 12, 8), chunks=4, dtype=np.int32)
    with pytest.raises(RuntimeError, match="boundary mode"):
        kd.uniform_filter(d, 3, mode=("reflect", "bogus", "wrap"))
    with pytest.raises(ValueError, match="origin"):
        kd.uniform_filter(d, 3, origin=(0, 5, 0))
    with pytest.raises(ValueError):
        kd.uniform_filter(d, 3, axes=(0, 3))
    with pytest.raises(NotImplementedError, match="interior"):
        kd.uniform_filter(d, 3, mode="interior")
    with pytest.raises(NotImplementedError, match="cval"):
        kd.uniform_filter(d, 3, mode="constant", cval=0.5, backend="gpu")
    # A fractional cval for int32 blocks: SciPy on each block, with the overlap.
    x = np.arange(10 * 12 * 8).reshape(10, 12, 8).astype(np.int32) % 17
    got = kd.uniform_filter(da.from_array(x, chunks=4), 3, mode="constant", cval=0.5).compute()
    check_close(got, scipy.ndimage.uniform_filter(x, 3, mode="constant", cval=0.5), "SciPy blocks")


# --------------------------------------------------------------------------
# SciPy's own tests, with kernpack's functions in SciPy's place
# --------------------------------------------------------------------------

# SciPy's tests of uniform_filter that fail with kernpack's, and why
# (measured with SciPy 1.17.1):
SCIPY_UNCLAIMED = {
    # Asserts exact equality between uniform_filter(arr, 5, mode=['reflect',
    # 'wrap']) and two uniform_filter1d calls (SciPy's same running sums);
    # kernpack's float64 window sums round differently: 5.6e-17 apart on
    # values of ~0.4 (1 ulp), not equal.
    "test_multiple_modes_sequentially[numpy]",
}


def scipys_tests():
    """SciPy's test functions that name uniform_filter (not
    uniform_filter1d) in their body or decorators, or through a helper that
    names it (the parametrisations built by a function), as pytest node ids
    for --pyargs, from the installed test module's syntax tree."""
    spec = importlib.util.find_spec("scipy.ndimage.tests.test_filters")
    source = open(spec.origin, encoding="utf-8").read()
    lines = source.splitlines()
    functions = {}

    def visit(nodes, prefix):
        for node in nodes:
            if isinstance(node, ast.ClassDef):
                visit(node.body, prefix + [node.name])
            elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                first = min([d.lineno for d in node.decorator_list] + [node.lineno])
                functions["::".join([spec.name, *prefix, node.name])] = "\n".join(lines[first - 1:node.end_lineno])

    visit(ast.parse(source).body, [])
    named = re.compile(r"\buniform_filter\b")
    helpers = [node.split("::")[-1] for node, text in functions.items()
               if not node.split("::")[-1].startswith("test") and named.search(text)]
    pattern = re.compile(r"\b(" + "|".join(["uniform_filter", *helpers]) + r")\b")
    return [node for node, text in functions.items() if node.split("::")[-1].startswith("test") and pattern.search(text)]


def test_scipys_own_tests_pass_with_kernpack_substituted(backend, tmp_path):
    """SciPy's test_filters module, from the installed SciPy, its tests that
    call uniform_filter run with SciPy's public functions replaced by
    kernpack's (the plugin in tests/plugins). Every test passes except
    SCIPY_UNCLAIMED, and kernpack's box filters computed calls themselves.
    Skipped when SciPy's tests (or hypothesis) are not installed.
    Measured with SciPy 1.17.1 on the CPU: 14 test functions, 449 passed,
    1 failed (SCIPY_UNCLAIMED); of 193 uniform_filter calls 153 ran
    kernpack's box filters (163 native calls: one whose axes do not
    increase, or whose first pass runs in float64, takes more), 17 raised SciPy's errors as the tests expect, 20 ran
    SciPy (16 float arrays into integer outputs, 4 complex arrays) and 3
    were copies of unfiltered or empty arrays."""
    import xml.etree.ElementTree as ET

    for module in ("scipy.ndimage.tests.test_filters", "hypothesis"):
        if importlib.util.find_spec(module) is None:
            pytest.skip(f"{module} is not installed (SciPy's tests need both)")
    here = os.path.dirname(os.path.abspath(__file__))
    path = os.pathsep.join([os.path.dirname(os.path.dirname(kernpack.__file__)), os.path.join(here, "plugins")])
    default = "auto" if backend == "gpu" else backend
    env = dict(os.environ, PYTHONPATH=path + os.pathsep + os.environ.get("PYTHONPATH", ""), KERNPACK_BACKEND=default)
    report = tmp_path / "scipy.xml"
    nodes = scipys_tests()
    assert len(nodes) >= 10, nodes
    run = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "kernpack_ndimage_plugin",
         "--pyargs", *nodes, f"--junitxml={report}"],
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
    assert counts["passed"] > 300, run.stdout[-3000:] + run.stderr[-3000:]
    assert failed <= SCIPY_UNCLAIMED, f"{sorted(failed - SCIPY_UNCLAIMED)}\n{run.stdout[-5000:]}"
    m = re.search(r"'box computed': (\d+)", calls)
    assert m and int(m.group(1)) > 100, run.stdout[-2000:]
    assert "'uniform_filter': 0" not in calls, calls


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
    original = _native.uniform_filter_nd_device

    def recorded(*args):
        calls.append(args)
        return original(*args)

    monkeypatch.setattr(_native, "uniform_filter_nd_device", recorded)
    return calls


def test_cupy_arrays_match_scipy(cp, device_calls, computed):
    rng = np.random.default_rng(41)
    for case in range(400):
        dtype = DTYPES[case % len(DTYPES)]
        shape = random_shape(rng)
        x = random_array(rng, dtype, shape)
        kwargs, passes = random_call(rng, shape)
        if any(m in ("constant", "grid-constant") for m in np.atleast_1d(kwargs["mode"])):
            kwargs["cval"] = random_cval(rng, dtype)
        d = cp.asarray(x)
        got = uniform_filter(d, **kwargs)
        assert isinstance(got, cp.ndarray) and got.dtype == x.dtype
        tol = tolerance(x.dtype, x, kwargs.get("cval", 0.0), passes, kwargs) if x.dtype.kind == "f" else None
        check_close(cp.asnumpy(got), scipy.ndimage.uniform_filter(x, **kwargs), f"case {case} {kwargs}", tol)
    # 2-D float calls with one mode run the fused kernels; the rest the N-D filter.
    assert len(device_calls) >= 250, len(device_calls)


def test_cupy_views_in_place_order_and_fallbacks(cp, device_calls):
    import cupyx.scipy.ndimage

    rng = np.random.default_rng(42)
    big = cp.asarray(rng.integers(-50, 50, (20, 30, 8)).astype(np.int16))
    view = big[2:18:2, 5:25, ::-1]
    want = scipy.ndimage.uniform_filter(cp.asnumpy(view), (3, 5, 2), mode="nearest")
    check_close(cp.asnumpy(uniform_filter(view, (3, 5, 2), mode="nearest")), want, "view")
    work = cp.ascontiguousarray(view)
    assert uniform_filter(work, (3, 5, 2), mode="nearest", output=work) is work
    check_close(cp.asnumpy(work), want, "in place")
    x = cp.asnumpy(big)
    check_close(cp.asnumpy(uniform_filter(big, 4, axes=(2, 0, 1))),
                scipy.ndimage.uniform_filter(x, 4, axes=(2, 0, 1)), "axes order")
    b = cp.asarray(x > 0)
    check_close(cp.asnumpy(uniform_filter(b, 3, mode="constant", cval=1)),
                scipy.ndimage.uniform_filter(x > 0, 3, mode="constant", cval=1), "bool")
    n = len(device_calls)
    for kwargs in (dict(mode="constant", cval=0.5), dict(output=cp.float64)):
        got = uniform_filter(big, 3, **kwargs)
        check_close(cp.asnumpy(got), cp.asnumpy(cupyx.scipy.ndimage.uniform_filter(big, 3, **kwargs)), f"{kwargs}")
    assert len(device_calls) == n, "kernpack's kernel ran a call it does not compute"
    with pytest.raises(ValueError, match="backend='cpu'"):
        uniform_filter(big, 3, backend="cpu")
    with pytest.raises(RuntimeError, match="shape"):
        uniform_filter(big, 3, output=cp.zeros((3, 3), np.int16))
