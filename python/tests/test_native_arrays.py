"""The native layer's own checks of host arrays (python/src/arrays.rs): the
public functions convert array-likes first, so these call kernpack._native
directly with arrays those conversions would never make. Every refusal
names the argument, and nothing is read or written."""
from __future__ import annotations

import numpy as np
import pytest

from kernpack import _context, _native

OPTS = ("power", False, False)


@pytest.fixture
def ctx():
    return _context.context("cpu")


def test_the_same_array_as_input_and_output_is_refused(ctx, rng):
    image = rng.normal(size=(8, 9))
    before = image.copy()
    with pytest.raises(ValueError, match="output shares memory"):
        _native.box_filter(ctx, image, image, (3, 3), (0, 0), "reflect", 0.0)
    assert image.tobytes() == before.tobytes()


@pytest.mark.parametrize(
    "views",
    [
        lambda buf: (buf[:-1], buf[1:]),  # shifted by a row
        lambda buf: (buf[::2], buf[1::2]),  # interleaved rows: the spans overlap
    ],
)
def test_an_output_overlapping_the_input_is_refused(ctx, rng, views):
    buf = rng.normal(size=(12, 10))
    before = buf.copy()
    src, dst = views(buf)
    with pytest.raises(ValueError, match="output shares memory"):
        _native.box_filter(ctx, src, dst, (3, 3), (0, 0), "reflect", 0.0)
    assert buf.tobytes() == before.tobytes()


def test_disjoint_views_of_one_buffer_are_filtered_in_place(ctx, rng):
    buf = rng.normal(size=(12, 10))
    src, dst = buf[:6], buf[6:]
    expected = np.empty((6, 10))
    _native.box_filter(ctx, src.copy(), expected, (3, 3), (0, 0), "reflect", 0.0)
    _native.box_filter(ctx, src, dst, (3, 3), (0, 0), "reflect", 0.0)
    np.testing.assert_array_equal(dst, expected)


def test_a_read_only_array_is_not_written(ctx):
    x = np.full(4, 0.5)
    x.flags.writeable = False
    with pytest.raises(ValueError, match="x is read-only"):
        _native.normalize(ctx, x)
    image = np.ones((3, 3))
    out = np.empty((3, 3))
    out.flags.writeable = False
    with pytest.raises(ValueError, match="output is read-only"):
        _native.box_filter(ctx, image, out, (3, 3), (0, 0), "reflect", 0.0)


@pytest.mark.parametrize(
    "x, match",
    [
        (np.arange(4, dtype=np.int64), "x is int64"),
        (np.ones(3, dtype=">f8"), "x is >f8"),  # byte-swapped: not native values
        (np.ones(8)[::2], "x is not C-contiguous"),
        # float64 values one byte into a buffer: misaligned.
        (np.frombuffer(bytearray(8 * 5), dtype=np.float64, count=4, offset=1), "x is not aligned"),
    ],
)
def test_what_a_slice_cannot_be_made_of_is_refused(ctx, x, match):
    with pytest.raises((TypeError, ValueError), match=match):
        _native.sum(ctx, x)


def test_errors_name_the_argument(ctx):
    t = np.linspace(0, 1, 10)
    with pytest.raises(TypeError, match="y is a 1-D float32 array: expected a 1-D float64 array"):
        _native.lombscargle(ctx, (t, t.astype(np.float32), None), (1.0, 1.0, 4), OPTS)
    with pytest.raises(TypeError, match="freqs is not C-contiguous"):
        _native.lombscargle(ctx, (t, t, None), np.ones(8)[::2], OPTS)
    with pytest.raises(TypeError, match="offsets is a 1-D int64 array"):
        offsets = np.array([0, 10])
        _native.lombscargle_batch(ctx, (t, t, None), offsets, (np.ones(1), np.ones(1), 4), OPTS, False)
    with pytest.raises(TypeError, match="x is a 1-D float64 array: expected a 2-D float64 array"):
        _native.window_sum(ctx, t, np.ones(3))
    with pytest.raises(TypeError, match="output is a 2-D float32 array: expected a 2-D float64 array"):
        _native.box_filter(ctx, np.ones((3, 3)), np.ones((3, 3), np.float32), (3, 3), (0, 0), "reflect", 0.0)
    with pytest.raises(TypeError, match="output has strides"):
        _native.box_filter(ctx, np.ones((3, 3)), np.ones((3, 6))[:, ::2], (3, 3), (0, 0), "reflect", 0.0)
    with pytest.raises(ValueError, match=r"output has shape \[3, 4\] but input \[3, 3\]"):
        _native.box_filter(ctx, np.ones((3, 3)), np.ones((3, 4)), (3, 3), (0, 0), "reflect", 0.0)


def test_host_results_are_new_arrays_of_the_inputs_dtype(ctx):
    t = np.linspace(0, 10, 50, dtype=np.float32)
    y = np.sin(t)
    power = _native.lombscargle(ctx, (t, y, None), (0.5, 0.1, 7), OPTS)
    assert power.dtype == np.float32 and power.shape == (7,) and power.flags.writeable
    amplitude = _native.lombscargle(ctx, (t, y, None), (0.5, 0.1, 7), ("amplitude", False, False))
    assert amplitude.shape == (14,)  # re and im interleaved; the Python layer views them as complex
