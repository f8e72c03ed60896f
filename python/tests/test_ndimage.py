"""kernpack.ndimage.uniform_filter against scipy.ndimage.uniform_filter.

Tolerances
----------
float64: |kernpack - scipy| <= 1e-12 * max(|image|, |cval|). Both
accumulate in double; SciPy runs a sliding sum along each line (its rounding
grows with the line length, <= ~60 here: ~60 eps), kernpack sums each window
directly (<= 33 + 33 additions per point). 1e-12 leaves a >10x margin over
both while any wrong index, weight or boundary value shows at O(1e-2).

Windows other than square odd centred ones up to 33 (any size and origin per
axis) run on running sums in double (CPU: re-seeded every 128 rows and
columns; GPU: every 512-row chunk, over segments of at most 2048 columns):
their error is at most a few thousand eps64 of the magnitude, inside the
same 1e-12 for the sizes tested (<= 200).

float32: |kernpack - scipy| <= (2 * size + 4) * eps32 * max(|image|, |cval|).
SciPy filters one axis at a time in double and stores each pass as float32
(two roundings, ~2 eps32); kernpack may accumulate a window's s row sums of s
values in float32 (the GPU kernels), a rounding error that grows with the
number of sequential additions, ~2s. At size 33: 70 eps32 ~ 8e-6 relative.
"""
from __future__ import annotations

import re

import numpy as np
import pytest
import scipy.ndimage

import kernpack
from kernpack.ndimage import uniform_filter

SCIPY_MODES = ["reflect", "constant", "nearest", "mirror", "wrap", "grid-mirror", "grid-constant", "grid-wrap"]
SIZES = list(range(1, 34, 2))
EPS32 = float(np.finfo(np.float32).eps)


def tolerance(dtype, size, image, cval=0.0):
    scale = max(float(np.max(np.abs(image))) if image.size else 0.0, abs(cval))
    if np.dtype(dtype) == np.float32:
        return (2 * size + 4) * EPS32 * scale
    return 1e-12 * scale


def random_shape(rng, size):
    """Shapes around the window: 1 x N, N x 1, smaller than the window, larger."""
    kind = int(rng.integers(5))
    if kind == 0:
        return (1, int(rng.integers(1, 60)))
    if kind == 1:
        return (int(rng.integers(1, 60)), 1)
    if kind == 2:  # smaller than the window along both axes (when it can be)
        return (int(rng.integers(1, max(2, size))), int(rng.integers(1, max(2, size))))
    return (int(rng.integers(1, 60)), int(rng.integers(1, 60)))


def as_layout(image, layout):
    """The same values in another memory layout (views read in place or copied)."""
    if layout == "row-strided":  # every other row, columns from 1: a pitched view
        base = np.full((2 * image.shape[0], image.shape[1] + 1), np.nan, dtype=image.dtype)
        base[::2, 1:] = image
        return base[::2, 1:]
    if layout == "transposed":  # column stride != itemsize: must be copied
        return np.ascontiguousarray(image.T).T
    if layout == "fortran":
        return np.asfortranarray(image)
    if layout == "reversed":  # negative strides
        return np.ascontiguousarray(image[::-1, ::-1])[::-1, ::-1]
    if layout == "big-endian":
        return image.astype(image.dtype.newbyteorder(">"))
    return image


LAYOUTS = ["contiguous", "row-strided", "transposed", "fortran", "reversed", "big-endian"]


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("mode", SCIPY_MODES)
def test_matches_scipy_for_every_size(backend, rng, mode, dtype):
    for size in SIZES:
        shape = random_shape(rng, size)
        image = (rng.normal(0, rng.uniform(0.5, 5), shape) + rng.uniform(-3, 3)).astype(dtype)
        layout = LAYOUTS[int(rng.integers(len(LAYOUTS)))]
        view = as_layout(image, layout)
        assert np.array_equal(view, image)
        cval = float(rng.uniform(-5, 5))
        # size as an int or as (s, s), at random
        size_arg = size if rng.random() < 0.5 else (size, size)
        ref = scipy.ndimage.uniform_filter(image, size, mode=mode, cval=cval)
        got = uniform_filter(view, size_arg, mode=mode, cval=cval, backend=backend)
        what = f"size {size}, shape {shape}, layout {layout}, cval {cval}"
        assert got.shape == ref.shape and got.dtype == ref.dtype, what
        err = np.max(np.abs(got.astype(np.float64) - ref))
        assert err <= tolerance(dtype, size, image, cval), f"{what}: error {err:.3e}"


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_window_larger_than_the_image(backend, rng, dtype):
    # e.g. 3x2 with size 9: every window reaches past both borders, several
    # times for the small dimension (the extension repeats).
    for mode in SCIPY_MODES:
        for shape, size in (((3, 2), 9), ((1, 1), 33), ((2, 5), 33), ((1, 4), 7), ((5, 1), 11)):
            image = rng.normal(0, 2, shape).astype(dtype)
            cval = float(rng.normal())
            ref = scipy.ndimage.uniform_filter(image, size, mode=mode, cval=cval)
            got = uniform_filter(image, size, mode=mode, cval=cval, backend=backend)
            err = np.max(np.abs(got.astype(np.float64) - ref))
            assert err <= tolerance(dtype, size, image, cval), (mode, shape, size, err)


def test_transposed_view_is_filtered_correctly(backend, rng):
    base = rng.normal(size=(37, 23))
    view = base.T  # strides (8, 184): column stride != itemsize
    assert view.strides[1] != view.itemsize
    for mode in ("reflect", "wrap", "constant"):
        ref = scipy.ndimage.uniform_filter(np.ascontiguousarray(view), 7, mode=mode, cval=1.5)
        got = uniform_filter(view, 7, mode=mode, cval=1.5, backend=backend)
        assert np.max(np.abs(got - ref)) <= tolerance(np.float64, 7, base, 1.5)
    # The input is untouched.
    assert np.array_equal(base, base.copy())


def test_unaligned_input_and_output(backend, rng):
    image = rng.normal(size=(17, 19))
    raw = bytearray(image.nbytes + 1)
    unaligned = np.frombuffer(raw, dtype=np.float64, offset=1, count=image.size).reshape(image.shape)
    assert unaligned.ctypes.data % 8 != 0
    unaligned[...] = image
    ref = scipy.ndimage.uniform_filter(image, 5)
    got = uniform_filter(unaligned, 5, backend=backend)
    assert np.max(np.abs(got - ref)) <= tolerance(np.float64, 5, image)
    out_raw = bytearray(image.nbytes + 3)
    out = np.frombuffer(out_raw, dtype=np.float64, offset=3, count=image.size).reshape(image.shape)
    out[...] = np.nan
    result = uniform_filter(image, 5, output=out, backend=backend)
    assert result is out
    assert np.max(np.abs(out - ref)) <= tolerance(np.float64, 5, image)


# --------------------------------------------------------------------------
# output=
# --------------------------------------------------------------------------


@pytest.mark.parametrize("in_dtype", [np.float64, np.float32])
@pytest.mark.parametrize("out_dtype", [np.float64, np.float32])
def test_output_array_is_filled_and_returned(backend, rng, in_dtype, out_dtype):
    image = rng.normal(0, 3, (31, 45)).astype(in_dtype)
    output = np.full(image.shape, np.nan, dtype=out_dtype)  # poisoned
    ref = scipy.ndimage.uniform_filter(image, 9, output=np.empty(image.shape, out_dtype), mode="mirror")
    got = uniform_filter(image, 9, output=output, mode="mirror", backend=backend)
    assert got is output
    assert not np.isnan(output).any()
    # SciPy computes in float64; kernpack in the wider of the two dtypes, so
    # only a float32 output carries float32 rounding.
    assert np.max(np.abs(output.astype(np.float64) - ref)) <= tolerance(out_dtype, 9, image)


def test_output_array_as_a_pitched_view_leaves_the_rest_alone(backend, rng):
    image = rng.normal(size=(20, 30))
    big = np.full((20, 40), np.nan)
    window = big[:, 4:34]  # rows 40 values apart: written in place
    got = uniform_filter(image, 5, output=window, mode="nearest", backend=backend)
    assert got is window
    ref = scipy.ndimage.uniform_filter(image, 5, mode="nearest")
    assert np.max(np.abs(window - ref)) <= tolerance(np.float64, 5, image)
    assert np.isnan(big[:, :4]).all() and np.isnan(big[:, 34:]).all()


def test_output_array_transposed_view(backend, rng):
    image = rng.normal(size=(20, 30))
    store = np.full((30, 20), np.nan)
    got = uniform_filter(image, 3, output=store.T, backend=backend)
    ref = scipy.ndimage.uniform_filter(image, 3)
    assert np.max(np.abs(got - ref)) <= tolerance(np.float64, 3, image)
    assert np.max(np.abs(store.T - ref)) <= tolerance(np.float64, 3, image)


@pytest.mark.parametrize("output", [np.float32, np.float64, "float32", "float64", np.dtype("f4")])
@pytest.mark.parametrize("in_dtype", [np.float64, np.float32])
def test_output_dtype(backend, rng, output, in_dtype):
    image = rng.normal(0, 2, (25, 18)).astype(in_dtype)
    got = uniform_filter(image, 7, output=output, mode="wrap", backend=backend)
    ref = scipy.ndimage.uniform_filter(image, 7, output=output, mode="wrap")
    assert got.dtype == ref.dtype == np.dtype(output)
    worst = np.float32 if np.float32 in (in_dtype, np.dtype(output)) else np.float64
    assert np.max(np.abs(got.astype(np.float64) - ref)) <= tolerance(worst, 7, image)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_in_place(backend, rng, dtype):
    image = rng.normal(0, 2, (40, 33)).astype(dtype)
    ref = scipy.ndimage.uniform_filter(image, 11, mode="reflect")
    work = image.copy()
    got = uniform_filter(work, 11, output=work, mode="reflect", backend=backend)
    assert got is work
    assert np.max(np.abs(work.astype(np.float64) - ref)) <= tolerance(dtype, 11, image)


def test_in_place_on_a_view_touches_only_the_view(backend, rng):
    base = rng.normal(size=(30, 41))
    original = base.copy()
    view = base[::2, 1:]
    ref = scipy.ndimage.uniform_filter(original[::2, 1:], 5)
    got = uniform_filter(view, 5, output=view, backend=backend)
    assert got is view
    assert np.max(np.abs(base[::2, 1:] - ref)) <= tolerance(np.float64, 5, original)
    np.testing.assert_array_equal(base[1::2], original[1::2])
    np.testing.assert_array_equal(base[:, 0], original[:, 0])


def test_output_overlapping_the_input(backend, rng):
    # The output is the input shifted by one row in the same buffer: the
    # filter must read the input as it was.
    buf = rng.normal(size=(26, 30))
    source = buf[:-1].copy()
    ref = scipy.ndimage.uniform_filter(source, 5)
    got = uniform_filter(buf[:-1], 5, output=buf[1:], backend=backend)
    assert np.max(np.abs(got - ref)) <= tolerance(np.float64, 5, source)
    assert np.max(np.abs(buf[1:] - ref)) <= tolerance(np.float64, 5, source)


@pytest.mark.parametrize("shape", [(0, 5), (5, 0), (0, 0)])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_empty_images(backend, shape, dtype):
    image = np.empty(shape, dtype)
    got = uniform_filter(image, 3, backend=backend)
    assert got.shape == shape and got.dtype == dtype
    assert got.shape == scipy.ndimage.uniform_filter(image, 3).shape
    out = np.empty(shape, np.float32)
    assert uniform_filter(image, 5, output=out, backend=backend) is out
    assert uniform_filter(image, 3, output=np.float32, backend=backend).dtype == np.float32


def test_list_input(backend, rng):
    image = rng.normal(size=(6, 7))
    got = uniform_filter(image.tolist(), 3, backend=backend)
    ref = scipy.ndimage.uniform_filter(image, 3)
    assert got.dtype == np.float64
    assert np.max(np.abs(got - ref)) <= tolerance(np.float64, 3, image)


def test_input_is_not_modified(backend, rng):
    image = rng.normal(size=(21, 22))
    before = image.copy()
    uniform_filter(image, 9, mode="constant", cval=2.0, backend=backend)
    np.testing.assert_array_equal(image, before)


def test_nan_in_the_image_reaches_exactly_the_windows_that_hold_it(backend, rng):
    # (SciPy's sliding sum carries a NaN to the end of its line, so its NaN
    # footprint is not the reference here: the windows are.)
    image = rng.normal(size=(15, 16))
    r, c = int(rng.integers(15)), int(rng.integers(16))
    image[r, c] = np.nan
    size = 5
    got = uniform_filter(image, size, mode="constant", backend=backend)
    h = size // 2
    holds = np.zeros(image.shape, bool)
    holds[max(r - h, 0):r + h + 1, max(c - h, 0):c + h + 1] = True
    np.testing.assert_array_equal(np.isnan(got), holds)
    clean = np.where(np.isnan(image), 0.0, image)
    ref = scipy.ndimage.uniform_filter(clean, size, mode="constant")
    assert np.max(np.abs(got[~holds] - ref[~holds])) <= tolerance(np.float64, size, clean)


# --------------------------------------------------------------------------
# 'interior' (kernpack's own mode)
# --------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_interior_mode(backend, rng, dtype):
    for size in (1, 3, 5, 9, 17, 33):
        shape = (int(rng.integers(1, 50)), int(rng.integers(1, 50)))
        image = rng.normal(0, 2, shape).astype(dtype)
        got = uniform_filter(image, size, mode="interior", backend=backend)
        h = size // 2
        inside = np.zeros(shape, bool)
        inside[h:shape[0] - h, h:shape[1] - h] = True
        # Points whose whole window fits: any SciPy mode gives the same value.
        ref = scipy.ndimage.uniform_filter(image, size, mode=SCIPY_MODES[int(rng.integers(len(SCIPY_MODES)))])
        if inside.any():
            err = np.max(np.abs(got[inside].astype(np.float64) - ref[inside]))
            assert err <= tolerance(dtype, size, image), (size, shape, err)
        # The others are the input, unchanged.
        np.testing.assert_array_equal(got[~inside], image[~inside])


# --------------------------------------------------------------------------
# cval
# --------------------------------------------------------------------------


@pytest.mark.parametrize("cval", [np.nan, np.inf, -np.inf])
@pytest.mark.parametrize("size", [3, 11])
def test_non_finite_cval_pads_constant_mode(backend, rng, cval, size):
    # Each output is the mean of its own window of the image padded with
    # cval: windows reaching past the edge take the non-finite value, the
    # others are finite and equal SciPy's reflect-free interior. (SciPy's
    # running sums would carry the value along every line.)
    image = rng.normal(size=(30, 33))
    r = size // 2
    padded = np.pad(image, r, mode="constant", constant_values=cval)
    windows = np.lib.stride_tricks.sliding_window_view(padded, (size, size))
    want = windows.mean(axis=(2, 3))
    for mode in ("constant", "grid-constant"):
        got = uniform_filter(image, size, mode=mode, cval=cval, backend=backend)
        finite = np.isfinite(want)
        assert not finite[:r].any() and finite[r:-r, r:-r].all()
        np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
        np.testing.assert_array_equal(got[~finite & ~np.isnan(want)], want[~finite & ~np.isnan(want)])
        assert np.max(np.abs(got[finite] - want[finite])) <= tolerance(np.float64, size, image), mode


def test_cval_is_ignored_outside_constant_mode(backend, rng):
    # SciPy ignores cval unless the mode is 'constant': any value, NaN
    # included, gives the same result (kernpack claims SciPy's semantics).
    image = rng.normal(size=(12, 14))
    for mode in ("reflect", "nearest", "mirror", "wrap"):
        ref = scipy.ndimage.uniform_filter(image, 5, mode=mode, cval=np.nan)
        assert np.isfinite(ref).all()
        got = uniform_filter(image, 5, mode=mode, cval=np.nan, backend=backend)
        assert np.max(np.abs(got - ref)) <= tolerance(np.float64, 5, image), mode


# --------------------------------------------------------------------------
# What kernpack does not compute runs SciPy; SciPy's own errors
# --------------------------------------------------------------------------


NOT_COMPUTED = {
    "non-integer size": (lambda a: dict(input=a, size=2.5), r"integer sizes"),
    "float16 input": (lambda a: dict(input=a.astype(np.float16)), r"float16"),
    "int output dtype": (lambda a: dict(input=a, output=np.int32), r"int32"),
    "complex input": (lambda a: dict(input=a + 1j * a[::-1]), r"complex128"),
    "fractional cval of int input": (
        lambda a: dict(input=np.round(a * 10).astype(np.int64), mode="constant", cval=0.5), r"cval"),
}

# Calls that ran SciPy before kernpack's N-D box filter came in
# (test_uniform_nd.py tests it at length): the N-D filter computes them.
NOW_COMPUTED = {
    "3-D input": lambda a: dict(input=np.stack([a, a])),
    "per-axis modes": lambda a: dict(input=a, mode=("reflect", "wrap")),
    "int input": lambda a: dict(input=np.round(a * 10).astype(np.int64)),
    "int input, int output": lambda a: dict(input=np.round(a * 10).astype(np.int16), output=np.int32),
    "bool input": lambda a: dict(input=a > 0),
}


@pytest.mark.parametrize("case", list(NOW_COMPUTED))
def test_what_the_nd_filter_computes_matches_scipy(backend, rng, monkeypatch, case):
    kwargs = dict(size=3)
    kwargs.update(NOW_COMPUTED[case](rng.normal(size=(9, 10))))
    want = scipy.ndimage.uniform_filter(**kwargs)

    def refuse(not_computed, *args, **kw):
        raise AssertionError(f"kernpack did not compute this call: {not_computed}")

    monkeypatch.setattr(kernpack.ndimage, "_scipy_standing_in", refuse)
    got = uniform_filter(backend=backend, **kwargs)
    assert got.dtype == want.dtype and got.shape == want.shape
    if want.dtype.kind == "f":
        assert np.max(np.abs(got - want)) <= 16 * 3 * np.finfo(np.float64).eps * np.max(np.abs(kwargs["input"]))
    else:
        np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("case", list(NOT_COMPUTED))
def test_what_kernpack_does_not_compute_runs_scipy_unless_the_gpu_was_asked_for(rng, case):
    make, message = NOT_COMPUTED[case]
    kwargs = dict(size=3)
    kwargs.update(make(rng.normal(size=(9, 10))))
    try:
        want = scipy.ndimage.uniform_filter(**kwargs)
    except RuntimeError as e:  # SciPy's own refusal (float16) is the answer
        for backend in ("cpu", "auto", None):
            with pytest.raises(RuntimeError, match=re.escape(str(e))):
                uniform_filter(backend=backend, **kwargs)
    else:
        for backend in ("cpu", "auto", None):
            got = uniform_filter(backend=backend, **kwargs)
            assert got.dtype == want.dtype and got.shape == want.shape, backend
            np.testing.assert_array_equal(got, want)
    # The GPU asked for (with or without one): no silent run on the CPU.
    with pytest.raises(NotImplementedError, match=message):
        uniform_filter(backend="gpu", **kwargs)
    kernpack.set_backend("gpu")
    try:
        with pytest.raises(NotImplementedError, match=message):
            uniform_filter(**kwargs)
    finally:
        kernpack.set_backend("auto")


def test_the_fallback_runs_scipys_filter_where_kernpacks_took_its_place(rng, monkeypatch):
    # Another project's tests run through kernpack by putting kernpack's
    # filter in SciPy's place: the fallback must still reach SciPy's own.
    image = rng.normal(size=(9, 10))
    kwargs = dict(output=np.int16, mode=("wrap", "reflect"))  # float into int16: not computed by kernpack
    want = scipy.ndimage.uniform_filter(image, 4, **kwargs)
    monkeypatch.setattr(scipy.ndimage, "uniform_filter", uniform_filter)
    np.testing.assert_array_equal(uniform_filter(image, 4, backend="cpu", **kwargs), want)
    np.testing.assert_array_equal(scipy.ndimage.uniform_filter(image, 4, backend="cpu", **kwargs), want)


def test_the_fallback_gets_the_callers_arguments(rng):
    image = rng.normal(size=(9, 10))
    # An int output makes this a SciPy call: it must see mode 'grid-wrap',
    # size (0, 0) and cval as given, not kernpack's conversions of them.
    for kwargs in (dict(size=(0, 0), mode="grid-wrap"), dict(size=5, mode="constant", cval=2.5)):
        want = scipy.ndimage.uniform_filter(image, output=np.int32, **kwargs)
        np.testing.assert_array_equal(uniform_filter(image, output=np.int32, backend="cpu", **kwargs), want)
    # kernpack's own 'interior' mode has no SciPy equivalent to fall back to.
    with pytest.raises(NotImplementedError):
        uniform_filter(image, 3, output=np.int32, mode="interior", backend="cpu")
    # Out-of-range axes: SciPy's error, not a filtered image.
    with pytest.raises(ValueError):
        scipy.ndimage.uniform_filter(image, 3, axes=(0, 3))
    with pytest.raises(ValueError):
        uniform_filter(image, 3, axes=(0, 3), backend="cpu")


def test_an_output_array_that_kernpack_does_not_compute_is_written_by_scipy(rng):
    image = np.round(rng.normal(size=(9, 10)) * 100).astype(np.int32)
    out = np.full(image.shape, -7, np.int16)
    got = uniform_filter(image, 4, output=out, mode="nearest", backend="cpu")
    assert got is out
    np.testing.assert_array_equal(out, scipy.ndimage.uniform_filter(image, 4, output=np.int16, mode="nearest"))


def test_both_axes_given_explicitly_is_fine(backend, rng):
    image = rng.normal(size=(9, 10))
    ref = scipy.ndimage.uniform_filter(image, 5, axes=(0, 1))
    for axes in ((0, 1), (1, 0), (-2, -1)):
        got = uniform_filter(image, 5, axes=axes, backend=backend)
        assert np.max(np.abs(got - ref)) <= tolerance(np.float64, 5, image)


@pytest.mark.parametrize(
    "kwargs, message",
    [
        (dict(mode="foo"), "mode"),
        (dict(size=(3, 3, 3)), "input rank"),
        (dict(output=np.zeros((4, 4))), "shape"),
    ],
    ids=["mode foo", "3 sizes", "output shape"],
)
def test_scipy_errors_are_runtime_errors(backend, rng, kwargs, message):
    image = rng.normal(size=(9, 10))
    args = dict(size=3)
    args.update(kwargs)
    # SciPy raises RuntimeError for each of these as well.
    with pytest.raises(RuntimeError):
        scipy.ndimage.uniform_filter(image, **args)
    with pytest.raises(RuntimeError, match=message):
        uniform_filter(image, backend=backend, **args)


@pytest.mark.parametrize(
    "kwargs",
    [dict(mode=None), dict(mode="constant", cval="x"), dict(mode="constant", cval=1j), dict(origin=0.5)],
    ids=["mode None", "cval str", "cval complex", "origin float"],
)
def test_bad_arguments_raise_scipys_exception_types(backend, rng, kwargs):
    image = rng.normal(size=(9, 10))
    with pytest.raises(Exception) as scipys:
        scipy.ndimage.uniform_filter(image, 3, **kwargs)
    with pytest.raises(scipys.type):
        uniform_filter(image, 3, backend=backend, **kwargs)


def test_non_finite_values_reach_only_the_windows_that_hold_them(backend, rng):
    image = rng.normal(size=(12, 15))
    image[4, 6], image[9, 1] = np.nan, np.inf
    got = uniform_filter(image, 3, mode="nearest", backend=backend)
    near_nan = np.zeros(image.shape, bool)
    near_nan[3:6, 5:8] = True
    near_inf = np.zeros(image.shape, bool)
    near_inf[8:11, 0:3] = True
    assert np.isnan(got[near_nan]).all()
    assert np.isposinf(got[near_inf]).all()
    clean = ~(near_nan | near_inf)
    ref = scipy.ndimage.uniform_filter(np.where(np.isfinite(image), image, 0.0), 3, mode="nearest")
    assert np.max(np.abs(got[clean] - ref[clean])) <= tolerance(np.float64, 3, image[np.isfinite(image)])


@pytest.mark.parametrize("size", [0, -3, (0, 0)])
def test_window_sizes_below_one_leave_the_image_unchanged(backend, rng, size):
    # SciPy's uniform_filter skips axes whose size is below 2: a copy.
    image = rng.normal(size=(9, 10))
    want = scipy.ndimage.uniform_filter(image, size)
    got = uniform_filter(image, size, backend=backend)
    assert got is not image
    np.testing.assert_array_equal(got, want)


def test_read_only_output_is_a_value_error(backend, rng):
    image = rng.normal(size=(9, 10))
    out = np.zeros_like(image)
    out.flags.writeable = False
    with pytest.raises(ValueError, match="read-only"):
        uniform_filter(image, 3, output=out, backend=backend)
    assert not out.any()


# --------------------------------------------------------------------------
# Any window: sizes and origins per axis, even sizes, windows larger than
# the image, a subset of the axes
# --------------------------------------------------------------------------


def random_window(rng):
    """(size, origin, axes) as a SciPy caller passes them: scalars or one per
    filtered axis, sizes 1 to 70 (often even, often larger than the image),
    origins anywhere in SciPy's valid range."""
    axes = [None, None, None, (0,), (1,), (1, 0), (-1,)][int(rng.integers(7))]
    n = 2 if axes is None else len(axes)

    def origin_for(size):
        return int(rng.integers(-(size // 2), (size - 1) // 2 + 1))

    if rng.random() < 0.3:
        size = int(rng.integers(1, 71))
        return size, origin_for(size), axes
    sizes = [int(rng.integers(1, 71)) if rng.random() < 0.5 else int(rng.integers(1, 9)) for _ in range(n)]
    origins = [origin_for(s) for s in sizes]
    return sizes, origins, axes


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_any_window_matches_scipy(backend, rng, dtype):
    for case in range(300):
        size, origin, axes = random_window(rng)
        mode = SCIPY_MODES[int(rng.integers(len(SCIPY_MODES)))]
        shape = (int(rng.integers(1, 50)), int(rng.integers(1, 50)))
        image = (rng.normal(0, rng.uniform(0.5, 5), shape) + rng.uniform(-3, 3)).astype(dtype)
        cval = float(rng.uniform(-4, 4))
        by_axes = {} if axes is None else {"axes": axes}
        want = scipy.ndimage.uniform_filter(image, size, mode=mode, cval=cval, origin=origin, **by_axes)
        got = uniform_filter(image, size, mode=mode, cval=cval, origin=origin, backend=backend, **by_axes)
        assert got.dtype == want.dtype and got.shape == want.shape
        largest = int(np.max(size))
        tol = tolerance(dtype, largest, image, cval if "constant" in mode else 0.0)
        err = float(np.max(np.abs(got.astype(np.float64) - want))) if image.size else 0.0
        assert err <= tol, (case, size, origin, axes, mode, shape, err, tol)


def test_sizes_the_old_kernels_refused(backend, rng):
    # 34, 63, 64 and 200: even, past 33, larger than the image; each origin end.
    image = rng.normal(size=(70, 90))
    for size in (2, 4, 34, 35, 63, 64, 200):
        for origin in (-(size // 2), 0, (size - 1) // 2):
            for mode in ("reflect", "constant", "wrap"):
                want = scipy.ndimage.uniform_filter(image, size, mode=mode, cval=0.5, origin=origin)
                got = uniform_filter(image, size, mode=mode, cval=0.5, origin=origin, backend=backend)
                assert np.max(np.abs(got - want)) <= 1e-12 * 4, (size, origin, mode)


def test_an_invalid_origin_is_scipys_error(rng):
    image = rng.normal(size=(9, 10))
    for size, origin in ((4, 2), (4, -3), ((3, 5), (0, 3))):
        with pytest.raises(ValueError, match="invalid origin"):
            scipy.ndimage.uniform_filter(image, size, origin=origin)
        with pytest.raises(ValueError, match="invalid origin"):
            uniform_filter(image, size, origin=origin, backend="cpu")
    # A size-1 axis is not filtered, so its origin is not read (as SciPy).
    want = scipy.ndimage.uniform_filter(image, (1, 3), origin=(5, 0))
    np.testing.assert_allclose(uniform_filter(image, (1, 3), origin=(5, 0), backend="cpu"), want, atol=1e-13)


def test_one_dimensional_host_arrays_match_scipy(backend, rng):
    # Computed as 1 x n images: SciPy's uniform_filter and uniform_filter1d.
    for case in range(200):
        n = int(rng.integers(1, 80))
        size = int(rng.integers(1, 100))
        origin = int(rng.integers(-(size // 2), (size - 1) // 2 + 1))
        mode = SCIPY_MODES[int(rng.integers(len(SCIPY_MODES)))]
        dtype = [np.float32, np.float64][case % 2]
        x = (rng.normal(size=n) + 2).astype(dtype)
        want = scipy.ndimage.uniform_filter(x, size, mode=mode, cval=0.25, origin=origin)
        args = [size, [size], size][case % 3]
        orig = [origin, [origin], origin][case % 3]
        got = uniform_filter(x, args, mode=mode, cval=0.25, origin=orig, backend=backend,
                             **({"axes": (0,)} if case % 3 == 2 else {}))
        assert got.shape == want.shape and got.dtype == want.dtype
        assert np.max(np.abs(got - want)) <= tolerance(dtype, size, x, 0.25), (case, n, size, origin, mode)
        out = np.full(n, np.nan, dtype)
        assert uniform_filter(x, size, out, mode=mode, cval=0.25, origin=origin, backend=backend) is out
        np.testing.assert_array_equal(out, got)
    with pytest.raises(RuntimeError, match="sequence argument"):
        uniform_filter(np.ones(5), (3, 3))
