"""Survey catalogs with nested light curves: kernpack.lsdb.periods on
nested-pandas frames (zero-copy views of the nested buffers, the same
numbers as lombscargle_batch on the same lists), pandas columns of Arrow
lists in lombscargle_batch, and the LSDB recipe over a HATS catalog that the
test writes itself, equal to the single-process call."""
from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("dask")
pa = pytest.importorskip("pyarrow")
pd = pytest.importorskip("pandas")
npd = pytest.importorskip("nested_pandas")

import kernpack.lsdb  # noqa: E402
from kernpack.signal import lombscargle_batch  # noqa: E402

NF, FMIN, FMAX = 200, 0.05, 4.0


def _survey(rng, nobj, dtype=np.float64):
    """Objects (id, ra, dec) and their samples (id, t, mag, magerr): sinusoids of random periods plus noise."""
    ids = rng.permutation(np.arange(1000, 1000 + nobj))
    lengths = rng.integers(5, 60, nobj)
    omega = rng.uniform(0.3, 3.0, nobj)
    sid = np.repeat(ids, lengths)
    t = np.concatenate([np.sort(rng.uniform(0, 200, k)) for k in lengths])
    mag = np.sin(np.repeat(omega, lengths) * t) + rng.normal(0, 0.3, t.size)
    magerr = rng.uniform(0.05, 0.5, t.size)
    objects = pd.DataFrame({"id": ids, "ra": rng.uniform(0, 360, nobj), "dec": rng.uniform(-60, 60, nobj)})
    samples = pd.DataFrame({"id": sid, "t": t.astype(dtype), "mag": mag.astype(dtype), "magerr": magerr.astype(dtype)})
    return objects, samples


def _nested(objects, samples):
    frame = npd.NestedFrame(objects.set_index("id"))
    return frame.join_nested(samples.set_index("id"), "lc")


def _lists(frame, field):
    return frame["lc"].nest.to_lists([field], large_list=True)[field].array.__arrow_array__()


def _address(lists):
    values, first = lists.values, int(np.asarray(lists.offsets)[0])
    return values.buffers()[1].address + (values.offset + first) * values.type.bit_width // 8


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_periods_of_a_nested_frame_equal_the_batch_call_without_copies(backend, rng, received, dtype):
    frame = _nested(*_survey(rng, 40, dtype))
    got = kernpack.lsdb.periods(frame, NF, FMIN, FMAX, t="lc.t", y="lc.mag", backend=backend)
    t, y = _lists(frame, "t"), _lists(frame, "mag")
    xs, ys, ws = received[0][1]
    assert xs.__array_interface__["data"][0] == _address(t.chunk(0))
    assert ys.__array_interface__["data"][0] == _address(y.chunk(0))
    assert ws is None
    want = lombscargle_batch(t, y, FMIN, (FMAX - FMIN) / (NF - 1), NF, best=True, backend=backend)
    assert got.index.equals(frame.index)
    assert list(got.columns) == ["n", "frequency", "period", "power"]
    np.testing.assert_array_equal(got["n"], [len(s) for s in t.to_pylist()])
    np.testing.assert_array_equal(got["frequency"], want.frequency.to_numpy())
    np.testing.assert_array_equal(got["power"], want.power.to_numpy())
    np.testing.assert_array_equal(got["period"], 2 * np.pi / want.frequency.to_numpy())


def test_dy_weights_top_k_and_per_series_grids(backend, rng):
    objects, samples = _survey(rng, 25)
    frame = _nested(objects, samples)
    got = kernpack.lsdb.periods(frame, NF, oversample=5.0, top_k=3, separation=0.05, t="lc.t", y="lc.mag",
                                dy="lc.magerr", backend=backend)
    assert list(got.columns[:4]) == ["n", "frequency", "period", "power"] and "power_3" in got.columns
    # The same search through the Dask table function, on the flat samples in stored order.
    dask = pytest.importorskip("dask.dataframe")
    flat = samples.assign(w=1.0 / samples["magerr"] ** 2)
    want = kernpack.dask.lombscargle_peaks(
        dask.from_pandas(flat, npartitions=1), NF, oversample=5.0, top_k=3, separation=0.05, y_col="mag", w_col="w",
        backend=backend,
    ).compute()
    pd.testing.assert_frame_equal(got, want.loc[got.index].rename_axis(got.index.name), check_exact=True)


def test_an_empty_frame_gives_an_empty_table(rng, received):
    frame = _nested(*_survey(rng, 5)).iloc[:0]
    got = kernpack.lsdb.periods(frame, NF, FMIN, FMAX, t="lc.t", y="lc.mag", top_k=2)
    assert len(got) == 0 and "power_2" in got.columns and got["n"].dtype == np.int64
    assert received == []


def test_bad_arguments_are_named(rng):
    frame = _nested(*_survey(rng, 5))
    with pytest.raises(ValueError, match="no column 'lx'"):
        kernpack.lsdb.periods(frame, NF, FMIN, FMAX, t="lx.t", y="lc.mag")
    with pytest.raises(ValueError, match="no field 'time'"):
        kernpack.lsdb.periods(frame, NF, FMIN, FMAX, t="lc.time", y="lc.mag")
    with pytest.raises(ValueError, match="not a nested column"):
        kernpack.lsdb.periods(frame, NF, FMIN, FMAX, t="ra.t", y="lc.mag")
    with pytest.raises(ValueError, match="not both"):
        kernpack.lsdb.periods(frame, NF, FMIN, FMAX, t="lc.t", y="lc.mag", dy="lc.magerr", w="lc.magerr")
    with pytest.raises(TypeError, match="Arrow lists"):
        kernpack.lsdb.periods(frame, NF, FMIN, FMAX, t="ra", y="lc.mag")
    objects, samples = _survey(rng, 5)
    samples.loc[7, "magerr"] = 0.0
    with pytest.raises(ValueError, match="dy of the object with index .* every dy must be finite and > 0"):
        kernpack.lsdb.periods(_nested(objects, samples), NF, FMIN, FMAX, t="lc.t", y="lc.mag", dy="lc.magerr")


def test_pandas_columns_of_arrow_lists_give_pandas_results(backend, rng, received):
    frame = _nested(*_survey(rng, 12))
    lists = frame["lc"].nest.to_lists()
    t, y = lists["t"], lists["mag"]
    got = lombscargle_batch(t, y, FMIN, 0.01, 32, backend=backend)
    assert isinstance(got, pd.Series) and got.index.equals(frame.index)
    xs = received[0][1][0]
    assert xs.__array_interface__["data"][0] == _address(t.array.__arrow_array__().chunk(0))
    want = lombscargle_batch([np.asarray(s) for s in t], [np.asarray(s) for s in y], FMIN, 0.01, 32, backend=backend)
    np.testing.assert_array_equal(np.array(got.tolist()), want)
    best = lombscargle_batch(t, y, FMIN, 0.01, 32, best=True, backend=backend)
    assert all(isinstance(c, pd.Series) and c.index.equals(frame.index) for c in best)
    np.testing.assert_array_equal(best.index.to_numpy(), np.argmax(want, axis=1))


def _catalog(lsdb, objects, samples, path):
    """A HATS catalog of the objects with their samples nested as "lc", written to `path` and opened lazily."""
    with_pos = samples.merge(objects, on="id")
    catalog = lsdb.from_dataframe(objects, ra_column="ra", dec_column="dec", catalog_name="objects")
    sources = lsdb.from_dataframe(with_pos, ra_column="ra", dec_column="dec", catalog_name="sources")
    nested = catalog.join_nested(sources, left_on="id", right_on="id", nested_column_name="lc")
    nested.write_catalog(path)
    return lsdb.open_catalog(path)


def test_lsdb_catalog_map_partitions_equals_the_single_process_call(rng, tmp_path):
    lsdb = pytest.importorskip("lsdb")
    objects, samples = _survey(rng, 120)
    catalog = _catalog(lsdb, objects, samples, tmp_path / "lc")
    kwargs = dict(t="lc.t", y="lc.mag", dy="lc.magerr", backend="cpu")
    got = catalog.map_partitions(kernpack.lsdb.periods, nf=NF, fmin=FMIN, fmax=FMAX, **kwargs).compute()
    whole = catalog.compute()
    want = kernpack.lsdb.periods(whole, NF, FMIN, FMAX, **kwargs)
    assert len(got) == len(objects) and len(catalog.get_healpix_pixels()) > 1  # several partitions
    pd.testing.assert_frame_equal(got.sort_index(), want.sort_index(), check_exact=True)
    by_id = got.assign(id=whole.loc[got.index, "id"].to_numpy()).set_index("id").sort_index()
    ref = kernpack.lsdb.periods(_nested(objects, samples), NF, FMIN, FMAX, **kwargs).sort_index()
    np.testing.assert_array_equal(by_id["frequency"], ref["frequency"])


def test_lsdb_on_dask_cuda_workers_equals_the_single_process_gpu_call(rng, tmp_path):
    """The recipe on the GPU machine: the catalog's partitions computed by a
    dask-cuda worker on its GPU, equal to one in-process GPU call."""
    lsdb = pytest.importorskip("lsdb")
    dask_cuda = pytest.importorskip("dask_cuda")
    distributed = pytest.importorskip("distributed")
    if kernpack.device_count() == 0:
        pytest.skip("no GPU")
    objects, samples = _survey(rng, 300)
    catalog = _catalog(lsdb, objects, samples, tmp_path / "lc")
    kwargs = dict(t="lc.t", y="lc.mag", dy="lc.magerr", top_k=2, backend="gpu")
    with dask_cuda.LocalCUDACluster(CUDA_VISIBLE_DEVICES="0", n_workers=1, threads_per_worker=2,
                                    dashboard_address=":0") as cluster, distributed.Client(cluster):
        got = catalog.map_partitions(kernpack.lsdb.periods, nf=NF, fmin=FMIN, fmax=FMAX, **kwargs).compute()
    want = kernpack.lsdb.periods(catalog.compute(), NF, FMIN, FMAX, **kwargs)
    assert len(got) == len(objects)
    pd.testing.assert_frame_equal(got.sort_index(), want.sort_index(), check_exact=True)
