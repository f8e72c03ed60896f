"""lombscargle_batch on Arrow list columns (ListArray, LargeListArray,
ChunkedArray): the same results as the NumPy flat arrays + offsets call,
bitwise, with the values handed to the native layer as views of the Arrow
buffers (no copy); and empty batches, for NumPy and Arrow inputs."""
from __future__ import annotations

import numpy as np
import pytest

import kernpack
from kernpack.signal import BestPeaks, TopPeaks, lombscargle_batch

pa = pytest.importorskip("pyarrow")

F0, DF, NF = 0.05, 0.01, 64


def _ragged(rng, nseries, dtype=np.float64):
    lengths = rng.integers(3, 40, nseries)
    offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    n = int(offsets[-1])
    t = np.concatenate([np.sort(rng.uniform(0, 100, k)) for k in lengths]).astype(dtype)
    y = (np.sin(0.7 * t) + rng.normal(0, 0.5, n)).astype(dtype)
    w = rng.uniform(0.1, 2.0, n).astype(dtype)
    return t, y, w, offsets


def _lists(values, offsets, large=False):
    cls = pa.LargeListArray if large else pa.ListArray
    kind = np.int64 if large else np.int32
    return cls.from_arrays(pa.array(offsets.astype(kind)), pa.array(values))


def _address(values_array):
    """Address of the first value of a primitive Arrow array (its offset in)."""
    return values_array.buffers()[1].address + values_array.offset * values_array.type.bit_width // 8


def _data(a):
    return a.__array_interface__["data"][0]


def _values_address(lists):
    o = np.asarray(lists.offsets)
    return _address(lists.values) + int(o[0]) * lists.values.type.bit_width // 8


@pytest.mark.parametrize("large", [False, True])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("weighted", [False, True])
def test_arrow_lists_equal_flat_arrays_and_are_not_copied(backend, rng, received, large, dtype, weighted):
    t, y, w, offsets = _ragged(rng, 25, dtype)
    kw = dict(normalize=True, floating_mean=True, backend=backend)
    want = lombscargle_batch(t, y, F0, DF, NF, offsets=offsets, weights=w if weighted else None, **kw)
    ta, ya, wa = (_lists(a, offsets, large) for a in (t, y, w))
    received.clear()
    got = lombscargle_batch(ta, ya, F0, DF, NF, weights=wa if weighted else None, **kw)

    assert isinstance(got, pa.FixedSizeListArray) and len(got) == 25 and got.type.list_size == NF
    assert got.type.value_type == pa.from_numpy_dtype(np.dtype(dtype))
    np.testing.assert_array_equal(got.flatten().to_numpy().reshape(25, NF), want)  # bitwise
    (ctx, (xs, ys, ws), offs, grids, opts, best, peaks), = received
    assert not best and peaks is None
    assert _data(xs) == _values_address(ta) and _data(ys) == _values_address(ya)
    if weighted:
        assert _data(ws) == _values_address(wa)
    np.testing.assert_array_equal(offs, offsets)
    if large:  # int64 offsets from 0: the offsets buffer itself
        assert _data(offs) == ta.buffers()[1].address


def test_sliced_arrow_lists(rng, received):
    t, y, w, offsets = _ragged(rng, 30)
    ta, ya, wa = (_lists(a, offsets) for a in (t, y, w))
    lo, hi = 3, 27
    want = lombscargle_batch(t, y, F0, DF, NF, offsets=offsets, weights=w, backend="cpu")[lo:hi]
    received.clear()
    got = lombscargle_batch(ta.slice(lo, hi - lo), ya.slice(lo, hi - lo), F0, DF, NF, weights=wa.slice(lo, hi - lo),
                            backend="cpu")
    np.testing.assert_array_equal(got.flatten().to_numpy().reshape(hi - lo, NF), want)
    (ctx, (xs, ys, ws), offs, *_), = received
    assert _data(xs) == _address(ta.values) + int(offsets[lo]) * 8  # a view from the slice's first value
    assert _data(ys) == _address(ya.values) + int(offsets[lo]) * 8
    assert xs.size == offsets[hi] - offsets[lo]
    np.testing.assert_array_equal(offs, offsets[lo : hi + 1] - offsets[lo])


def test_lists_over_sliced_values(rng, received):
    """Offsets into a values array that is itself a slice of a buffer."""
    t, y, _, offsets = _ragged(rng, 10)
    pad = 5
    tv = pa.array(np.concatenate([np.zeros(pad), t])).slice(pad)
    yv = pa.array(np.concatenate([np.zeros(pad), y])).slice(pad)
    ta = pa.ListArray.from_arrays(pa.array(offsets.astype(np.int32)), tv)
    ya = pa.ListArray.from_arrays(pa.array(offsets.astype(np.int32)), yv)
    want = lombscargle_batch(t, y, F0, DF, NF, offsets=offsets, backend="cpu")
    received.clear()
    got = lombscargle_batch(ta, ya, F0, DF, NF, backend="cpu")
    np.testing.assert_array_equal(got.flatten().to_numpy().reshape(10, NF), want)
    (ctx, (xs, ys, ws), *_), = received
    assert _data(xs) == _address(tv) and _data(ys) == _address(yv)


def test_chunked_arrays_run_per_chunk(rng, received):
    t, y, w, offsets = _ragged(rng, 40)
    f0 = rng.uniform(0.01, 0.1, 40)
    df = rng.uniform(0.001, 0.01, 40)
    want = lombscargle_batch(t, y, f0, df, NF, offsets=offsets, weights=w, backend="cpu")
    want_best = lombscargle_batch(t, y, f0, df, NF, offsets=offsets, weights=w, backend="cpu", best=True)
    ta, ya, wa = (_lists(a, offsets) for a in (t, y, w))
    tc = pa.chunked_array([ta.slice(0, 15), ta.slice(15, 25)])
    yc = pa.chunked_array([ya.slice(0, 10), ya.slice(10, 30)])  # other boundaries: pieces [0,10) [10,15) [15,40)
    received.clear()
    got = lombscargle_batch(tc, yc, f0, df, NF, weights=wa, backend="cpu")
    assert isinstance(got, pa.ChunkedArray) and [len(c) for c in got.chunks] == [10, 5, 25]
    np.testing.assert_array_equal(got.combine_chunks().flatten().to_numpy().reshape(40, NF), want)
    assert len(received) == 3
    for (ctx, (xs, ys, ws), offs, *_), start in zip(received, [0, 10, 15]):
        assert _data(xs) == _address(ta.values) + int(offsets[start]) * 8
        assert _data(ys) == _address(ya.values) + int(offsets[start]) * 8
        assert _data(ws) == _address(wa.values) + int(offsets[start]) * 8

    best = lombscargle_batch(tc, yc, f0, df, NF, weights=wa, backend="cpu", best=True)
    assert isinstance(best, BestPeaks) and all(isinstance(c, pa.ChunkedArray) for c in best)
    for got_field, want_field in zip(best, want_best):
        np.testing.assert_array_equal(got_field.to_numpy(), want_field)

    one = lombscargle_batch(pa.chunked_array([ta]), pa.chunked_array([ya]), f0, df, NF, backend="cpu")
    want_plain = lombscargle_batch(t, y, f0, df, NF, offsets=offsets, backend="cpu")
    assert one.num_chunks == 1
    np.testing.assert_array_equal(one.chunk(0).flatten().to_numpy().reshape(40, NF), want_plain)


def test_best_peaks_as_arrow(rng):
    t, y, _, offsets = _ragged(rng, 12)
    want = lombscargle_batch(t, y, F0, DF, NF, offsets=offsets, backend="cpu", best=True)
    got = lombscargle_batch(_lists(t, offsets), _lists(y, offsets), F0, DF, NF, backend="cpu", best=True)
    assert isinstance(got, BestPeaks)
    assert [c.type for c in got] == [pa.float64(), pa.float64(), pa.int64()]
    for g, w in zip(got, want):
        np.testing.assert_array_equal(g.to_numpy(), w)


def test_top_peaks_as_arrow(rng):
    """peaks=k: one fixed-size list of k per row, per chunk of a chunked
    input (per-series grids split with the rows), and pandas Series of
    Arrow lists on the input's index."""
    t, y, _, offsets = _ragged(rng, 30)
    f0, df = rng.uniform(0.01, 0.1, 30), rng.uniform(0.001, 0.01, 30)
    want = lombscargle_batch(t, y, f0, df, NF, offsets=offsets, backend="cpu", peaks=4, separation=0.02)
    ta, ya = _lists(t, offsets), _lists(y, offsets)
    tc, yc = pa.chunked_array([ta.slice(0, 12), ta.slice(12)]), pa.chunked_array([ya.slice(0, 20), ya.slice(20)])
    for x_, y_, chunks in ((ta, ya, None), (tc, yc, [12, 8, 10])):
        got = lombscargle_batch(x_, y_, f0, df, NF, backend="cpu", peaks=4, separation=0.02)
        assert isinstance(got, TopPeaks)
        assert [c.type for c in got] == [pa.list_(pa.float64(), 4), pa.list_(pa.float64(), 4),
                                         pa.list_(pa.int64(), 4)]
        if chunks is not None:
            assert [[len(c) for c in column.chunks] for column in got] == [chunks] * 3
            got = TopPeaks(*(column.combine_chunks() for column in got))
        for g, w in zip(got, want):
            np.testing.assert_array_equal(g.flatten().to_numpy().reshape(30, 4), w)
    pd = pytest.importorskip("pandas")
    index = pd.RangeIndex(100, 130)
    series = [pd.Series(a, dtype=pd.ArrowDtype(a.type), index=index) for a in (ta, ya)]
    got = lombscargle_batch(*series, f0, df, NF, backend="cpu", peaks=4, separation=0.02)
    assert isinstance(got, TopPeaks) and all(c.index.equals(index) for c in got)
    for g, w in zip(got, want):
        np.testing.assert_array_equal(np.stack(g.to_list()), w)


def test_amplitude_as_re_im_pairs(rng):
    t, y, _, offsets = _ragged(rng, 6)
    want = lombscargle_batch(t, y, F0, DF, NF, offsets=offsets, normalize="amplitude", backend="cpu")
    got = lombscargle_batch(_lists(t, offsets), _lists(y, offsets), F0, DF, NF, normalize="amplitude",
                            backend="cpu")
    assert got.type == pa.list_(pa.list_(pa.float64(), 2), NF)
    pairs = got.flatten().flatten().to_numpy()
    np.testing.assert_array_equal(pairs.view(np.complex128).reshape(6, NF), want)


def test_mismatched_rows_are_refused(rng):
    t, y, w, offsets = _ragged(rng, 8)
    other = offsets.copy()
    other[3] += 1  # row 2 one sample longer, row 3 one shorter
    ta = _lists(t, offsets)
    with pytest.raises(ValueError, match=r"y's rows must have the lengths of x's: row 2 holds"):
        lombscargle_batch(ta, _lists(y, other), F0, DF, NF, backend="cpu")
    with pytest.raises(ValueError, match=r"weights's rows .* row 2"):
        lombscargle_batch(ta, _lists(y, offsets), F0, DF, NF, weights=_lists(w, other), backend="cpu")
    with pytest.raises(ValueError, match=r"y has 7 rows but x has 8"):
        lombscargle_batch(ta, _lists(y, offsets).slice(1), F0, DF, NF, backend="cpu")
    with pytest.raises(TypeError, match=r"x Arrow list columns but y not"):
        lombscargle_batch(ta, y, F0, DF, NF, backend="cpu")
    with pytest.raises(TypeError, match=r"x Arrow list columns but y not"):
        lombscargle_batch(ta, pa.array(y), F0, DF, NF, backend="cpu")
    with pytest.raises(ValueError, match="pass offsets=None"):
        lombscargle_batch(ta, _lists(y, offsets), F0, DF, NF, offsets=offsets, backend="cpu")


def test_nulls_are_refused(rng):
    t, y, _, offsets = _ragged(rng, 5)
    mask = pa.array([False, False, True, False, False])
    ta = pa.ListArray.from_arrays(pa.array(offsets.astype(np.int32)), pa.array(t), mask=mask)
    with pytest.raises(ValueError, match=r"x has 1 null row\(s\) \(the first is row 2\)"):
        lombscargle_batch(ta, _lists(y, offsets), F0, DF, NF, backend="cpu")
    holes = pa.array(y, mask=np.arange(y.size) == 4)
    ya = pa.ListArray.from_arrays(pa.array(offsets.astype(np.int32)), holes)
    with pytest.raises(ValueError, match=r"y holds 1 null value"):
        lombscargle_batch(_lists(t, offsets), ya, F0, DF, NF, backend="cpu")
    with pytest.raises(TypeError, match="list of numbers"):
        strings = pa.array([["a"], ["b"]])
        lombscargle_batch(strings, strings, F0, DF, NF, backend="cpu")
    with pytest.raises(TypeError, match="list of numbers"):
        structs = pa.array([[{"a": 1.0}], [{"a": 2.0}]])
        lombscargle_batch(structs, structs, F0, DF, NF, backend="cpu")


def test_flat_arrow_arrays_with_offsets_stay_array_likes(rng):
    """Plain (non-list) Arrow arrays are array-likes with offsets, as before."""
    t, y, _, offsets = _ragged(rng, 5)
    want = lombscargle_batch(t, y, F0, DF, NF, offsets=offsets, backend="cpu")
    got = lombscargle_batch(pa.array(t), pa.array(y), F0, DF, NF, offsets=offsets, backend="cpu")
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("best", [False, True])
@pytest.mark.parametrize("normalize", [False, "amplitude"])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_empty_numpy_batch(received, best, normalize, dtype):
    got = lombscargle_batch(np.empty(0, dtype), np.empty(0, dtype), F0, DF, NF, offsets=np.zeros(1, np.int64),
                            normalize=normalize, best=best, backend="cpu")
    listed = lombscargle_batch([], [], F0, DF, NF, normalize=normalize, best=best, backend="cpu")
    assert not received  # the native layer refuses an empty batch: it is not called
    if best:
        for r in (got, listed):
            assert isinstance(r, BestPeaks)
            assert [(a.shape, a.dtype) for a in r] == [((0,), np.float64), ((0,), np.float64), ((0,), np.int64)]
    else:
        complex_dtype = np.complex64 if dtype == np.float32 else np.complex128
        assert got.shape == (0, NF) and got.dtype == (complex_dtype if normalize == "amplitude" else dtype)
        assert listed.shape == (0, NF)


@pytest.mark.parametrize("best", [False, True, "peaks"])
def test_empty_arrow_batch(rng, best):
    t, y, _, offsets = _ragged(rng, 4)
    ta, ya = _lists(t, offsets), _lists(y, offsets)
    for x_, y_ in [(ta.slice(2, 0), ya.slice(2, 0)), (pa.array([], pa.list_(pa.float64())),) * 2,
                   (pa.chunked_array([], pa.list_(pa.float64())),) * 2]:
        if best == "peaks":
            got = lombscargle_batch(x_, y_, F0, DF, NF, backend="cpu", peaks=3)
            assert isinstance(got, TopPeaks) and all(len(c) == 0 for c in got)
            assert got.index.type == pa.list_(pa.int64(), 3)
            continue
        got = lombscargle_batch(x_, y_, F0, DF, NF, backend="cpu", best=best)
        if best:
            assert all(len(c) == 0 for c in got)
            assert got.index.type == pa.int64()
        else:
            assert len(got) == 0 and got.type == pa.list_(pa.float64(), NF)


def test_empty_batch_still_checks_its_arguments():
    with pytest.raises(ValueError, match="start at 0"):
        lombscargle_batch(np.empty(0), np.empty(0), F0, DF, NF, offsets=np.array([1]), backend="cpu")
    with pytest.raises(ValueError, match="nseries \\+ 1"):
        lombscargle_batch(np.empty(0), np.empty(0), F0, DF, NF, offsets=np.array([], np.int64), backend="cpu")
    with pytest.raises(ValueError):
        lombscargle_batch(np.empty(0), np.empty(0), F0, DF, NF, offsets=np.zeros(1, np.int64), backend="nope")


def test_kernpack_imports_without_pyarrow_use():
    # pyarrow is imported lazily: only an Arrow argument brings it in.
    import subprocess
    import sys

    code = (
        "import sys, numpy as np, kernpack.signal as s;"
        "s.lombscargle_batch([np.arange(5.0)], [np.ones(5)], 0.1, 0.1, 4, backend='cpu');"
        "print('pyarrow' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False", kernpack.__file__
