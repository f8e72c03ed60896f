"""kernpack.dask.bls on a local cluster of two worker processes (CPU workers
here; 'gpu' too where the suite runs with one): every row equals the best
period of ``kernpack.timeseries.bls_batch`` on the same series, bitwise:
with ``top_k=1`` the first of the highest powers of the whole search (as
before the tables came from the batches' peaks), with ``top_k > 1`` the
ranks of the call's ``peaks=top_k``.

Exactness: a partition's rows are put in (id, t, y, dy) order before its
batched call, every series is searched independently of the others in its
batch, and the box sums are fixed point (the same in any order, on every
backend), so the partitioned run's fields are the single call's.
"""
from __future__ import annotations

import logging

import numpy as np
import pytest

dd = pytest.importorskip("dask.dataframe")
distributed = pytest.importorskip("distributed")
pytest.importorskip("pyarrow")

import pandas as pd  # noqa: E402

import kernpack.dask as kd  # noqa: E402
from kernpack.timeseries import bls_batch  # noqa: E402

FIELDS = ("power", "depth", "depth_err", "duration", "transit_time", "depth_snr", "log_likelihood")
PERIODS = np.exp(np.linspace(np.log(1.0), np.log(8.0), 400))
DURATIONS = np.array([0.08, 0.12, 0.2])


@pytest.fixture(scope="module", autouse=True)
def client():
    """One cluster for the module: 2 worker processes, 1 thread each."""
    with distributed.LocalCluster(
        n_workers=2, threads_per_worker=1, processes=True, dashboard_address=":0", silence_logs=logging.ERROR
    ) as cluster, distributed.Client(cluster) as c:
        yield c


def survey(rng, nseries=24, dtype=np.float64):
    """Rows (id, t, y, dy) of ragged light curves (60-250 samples over
    20-40 days), most with a planted box transit, shuffled so that every
    series is spread over the input partitions."""
    frames = []
    for s in range(nseries):
        n = int(rng.integers(60, 251))
        t = np.sort(rng.uniform(0, rng.uniform(20, 40), n)) + 2460000.0
        dy = rng.uniform(0.002, 0.006, n)
        y = 1.0 + rng.normal(0, 1, n) * dy
        if s % 5:
            period, t0 = rng.uniform(1.5, 6), rng.uniform(0, 1)
            phase = (t - t[0] - t0 + 0.5 * period) % period - 0.5 * period
            y[np.abs(phase) < 0.06] -= 0.01
        ident = int(s * 7919 % 1000)
        frames.append(pd.DataFrame({"id": ident, "t": t, "y": y, "dy": dy}).astype(
            {"t": dtype, "y": dtype, "dy": dtype}))
    rows = pd.concat(frames, ignore_index=True)
    return rows.iloc[rng.permutation(len(rows))].reset_index(drop=True)


def reference(rows, dy=True, **opts):
    """(ids, sample counts, bls_batch(..., **opts)) of the series in (id, t,
    y, dy) order."""
    keys = ["id", "t", "y"] + (["dy"] if dy else [])
    rows = rows.sort_values(keys, kind="mergesort")
    ids, counts = np.unique(rows["id"].to_numpy(), return_counts=True)
    offsets = np.concatenate([[0], np.cumsum(counts)])
    got = bls_batch(rows["t"].to_numpy(), rows["y"].to_numpy(), PERIODS, DURATIONS,
                    dy=rows["dy"].to_numpy() if dy else None, offsets=offsets, **opts)
    return ids, counts, got


def check(res, rows, dy=True, **opts):
    """`res` against the whole search's results: at each series' first
    highest power (NaN fields, power -inf and no period without a box)."""
    ids, counts, got = reference(rows, dy=dy, **opts)
    best = np.argmax(got.power, axis=1)
    np.testing.assert_array_equal(res.index.to_numpy(), ids)
    assert res.index.name == "id"
    assert list(res.columns) == ["n", "period", *FIELDS]
    assert all(res[c].dtype == np.float64 for c in res.columns[1:])
    np.testing.assert_array_equal(res["n"].to_numpy(), counts)
    rows_ = np.arange(len(ids))
    found = np.isfinite(got.power[rows_, best])  # else no box at any period: power -inf, no period
    np.testing.assert_array_equal(res["period"].to_numpy(), np.where(found, got.period[best], np.nan))
    for name in FIELDS:
        np.testing.assert_array_equal(res[name].to_numpy(), got[name][rows_, best].astype(np.float64), err_msg=name)


@pytest.mark.parametrize("objective", ["likelihood", "snr"])
def test_bls_of_a_dataframe_equals_one_batch(backend, rng, objective):
    rows = survey(rng)
    ddf = dd.from_pandas(rows, npartitions=4, sort=False)
    res = kd.bls(ddf, PERIODS, DURATIONS, objective=objective, oversample=5, dy_col="dy", backend=backend)
    assert res.npartitions == 4
    whole = res.compute()
    check(whole, rows, objective=objective, oversample=5, backend=backend)
    # The planted transits are found (every fifth series has none planted).
    assert (whole["depth_snr"] > 5).sum() >= len(whole) // 2


def sorted_parquet(rows, tmp_path):
    """`rows` stored sorted by id in 3 Parquet files, read back with known
    divisions: (path, frame, the ids of its middle partition, the frame
    without them: an empty partition)."""
    path = str(tmp_path / "sorted")
    dd.from_pandas(rows, npartitions=3, sort=False).set_index("id").to_parquet(path)
    ddf = dd.read_parquet(path, index="id", calculate_divisions=True)
    assert ddf.known_divisions
    # An empty partition (all of its series filtered out) gives no rows.
    middle = ddf.partitions[1].index.unique().compute()
    return path, ddf, middle, ddf.map_partitions(lambda p: p[~p.index.isin(middle)])


def test_bls_unweighted_float32_and_an_empty_partition(backend, rng, tmp_path):
    rows = survey(rng, dtype=np.float32)
    path, ddf, middle, filtered = sorted_parquet(rows, tmp_path)
    res = kd.bls(filtered, PERIODS, DURATIONS, backend=backend)
    assert res.divisions == ddf.divisions
    assert len(res.partitions[1].compute()) == 0
    check(res.compute(), rows[~rows["id"].isin(middle)], dy=False, backend=backend)
    # kernpack's own Parquet reader (a path) gives the same table.
    check(kd.bls(path, PERIODS, DURATIONS, dy_col="dy", backend=backend).compute(), rows, backend=backend)


def test_a_series_without_a_box_has_no_period(rng):
    # One sample: no box has samples both in and out of transit.
    rows = pd.DataFrame({"id": [1, 2, 2, 2, 2], "t": [0.0, 0.0, 1.3, 2.2, 3.9], "y": [1.0, 1.0, 0.5, 1.0, 1.0]})
    res = kd.bls(dd.from_pandas(rows, npartitions=1), [1.5, 2.0], [0.1], backend="cpu").compute()
    assert res.loc[1, "power"] == -np.inf and np.isnan(res.loc[1, "period"]) and np.isnan(res.loc[1, "depth"])
    assert np.isfinite(res.loc[2, "power"]) and res.loc[2, "period"] in (1.5, 2.0)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_top_k_tables_equal_the_peaks_of_one_batch(dtype, backend, rng):
    rows = survey(rng, dtype=dtype)
    # A series of one sample: no box at any period, so no peaks.
    rows = pd.concat([rows, pd.DataFrame({"id": [5000], "t": [2460001.0], "y": [1.0], "dy": [0.004]}).astype(
        {"t": dtype, "y": dtype, "dy": dtype})], ignore_index=True)
    ddf = dd.from_pandas(rows, npartitions=3, sort=False)
    k, opts = 5, dict(objective="snr", oversample=4, backend=backend)
    res = kd.bls(ddf, PERIODS, DURATIONS, dy_col="dy", top_k=k, separation=0.3, **opts).compute()
    ids, counts, got = reference(rows, peaks=k, separation=0.3, **opts)
    columns = ("period",) + FIELDS
    ranks = [("", 0)] + [(f"_{r}", r - 1) for r in range(2, k + 1)]
    assert list(res.columns) == ["n"] + [c + suffix for suffix, _ in ranks for c in columns]
    assert all(res[c].dtype == np.float64 for c in res.columns[1:])
    np.testing.assert_array_equal(res.index.to_numpy(), ids)
    np.testing.assert_array_equal(res["n"].to_numpy(), counts)
    for suffix, r in ranks:
        for name in columns:
            want = getattr(got, name)[:, r].astype(np.float64)
            if name == "power":  # -inf where the rank has no peak
                want = np.where(got.index[:, r] >= 0, want, -np.inf)
            np.testing.assert_array_equal(res[name + suffix].to_numpy(), want, err_msg=name + suffix)
    # Ranks in order and apart; the series without a box has none.
    power = res[["power" + suffix for suffix, _ in ranks]].to_numpy()
    period = res[["period" + suffix for suffix, _ in ranks]].to_numpy()
    assert np.all(power[ids == 5000] == -np.inf) and np.isnan(period[ids == 5000]).all()
    assert np.isnan(res.loc[5000, [c for c in res.columns if c.startswith("depth")]].to_numpy(float)).all()
    found = np.isfinite(power)
    assert np.all(found[ids != 5000, 0]) and np.all(found[:, 1:] <= found[:, :-1])
    for row, p in zip(power, period):
        assert np.all(np.diff(row[np.isfinite(row)]) <= 0)
        p = p[np.isfinite(p)]
        assert np.all(np.abs(p[:, None] - p[None, :])[~np.eye(p.size, dtype=bool)] >= 0.3)
    # Rank 1 is the table of top_k=1, the first highest power of the whole search.
    whole = kd.bls(ddf, PERIODS, DURATIONS, dy_col="dy", **opts).compute()
    pd.testing.assert_frame_equal(res[list(whole.columns)], whole)
    check(whole, rows, **opts)


def test_bad_arguments_are_refused_before_any_partition_runs(rng):
    ddf = dd.from_pandas(survey(rng, nseries=3), npartitions=1)
    with pytest.raises(ValueError, match="objective"):
        kd.bls(ddf, PERIODS, DURATIONS, objective="chi2")
    with pytest.raises(ValueError, match="shorter"):
        kd.bls(ddf, [0.5, 1.0], [0.6])
    with pytest.raises(ValueError, match="dy_col"):
        kd.bls(ddf, PERIODS, DURATIONS, y_col="y", dy_col="y")
    with pytest.raises(KeyError, match="flux"):
        kd.bls(ddf, PERIODS, DURATIONS, y_col="flux")
    for top_k in (0, True, 2.0):
        with pytest.raises(ValueError, match="top_k must be an integer >= 1"):
            kd.bls(ddf, PERIODS, DURATIONS, top_k=top_k)
    with pytest.raises(ValueError, match="top_k = 257 is out of range: 1 to 256"):
        kd.bls(ddf, PERIODS, DURATIONS, top_k=257)
    with pytest.raises(ValueError, match="separation = -0.5 must be finite"):
        kd.bls(ddf, PERIODS, DURATIONS, top_k=3, separation=-0.5)


def test_a_bad_series_is_named_by_its_id(rng):
    rows = survey(rng, nseries=4)
    bad = rows["id"].iloc[0]
    rows.loc[rows.index[0], "dy"] = 0.0
    res = kd.bls(dd.from_pandas(rows, npartitions=2, sort=False), PERIODS, DURATIONS, dy_col="dy", backend="cpu")
    with pytest.raises(ValueError, match=f"series with id {bad}: dy"):
        res.compute()
