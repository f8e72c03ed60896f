"""kernpack.dask.pdm and conditional_entropy on a local cluster of two
worker processes (CPU workers here; 'gpu' too where the suite runs with
one): every row equals the best frequency of one
``kernpack.timeseries.pdm_batch`` (``conditional_entropy_batch``) call on
the same series, bitwise: with ``top_k=1`` the first of the lowest values
of the whole statistic (as before the tables came from the batches' peaks),
with ``top_k > 1`` the ranks of the call's ``peaks=top_k``.

Exactness: a partition's rows are put in (id, t, y, dy) order before its
batched call, and every series is folded independently of the others in its
batch, so the partitioned run's values are those of one call on the series
so sorted (CE's counts are integers, exact in any order).
"""
from __future__ import annotations

import numpy as np
import pytest

dd = pytest.importorskip("dask.dataframe")
pytest.importorskip("distributed")
pytest.importorskip("pyarrow")

import pandas as pd  # noqa: E402

import kernpack.dask as kd  # noqa: E402
from kernpack.timeseries import conditional_entropy_batch, pdm_batch  # noqa: E402
from test_dask_bls import client, sorted_parquet  # noqa: E402,F401  (client: the module's cluster, 2 worker processes)

GRID = dict(f0=0.1, df=0.0005, nf=3000)  # 0.1 to 1.6 cycles per unit of t
FREQUENCY = GRID["f0"] + GRID["df"] * np.arange(GRID["nf"])
CE = dict(phase_bins=12, mag_bins=6, phase_overlap=1, mag_overlap=1)


def survey(rng, nseries=24, dtype=np.float64):
    """Rows (id, t, y, dy) of ragged light curves (60-250 samples over
    40-80 days) with a planted period of 1 to 5 days (but every seventh
    series, constant: no statistic), shuffled so that every series is spread
    over the input partitions. Also returns the planted frequencies by id."""
    frames, planted = [], {}
    for s in range(nseries):
        n = int(rng.integers(60, 251))
        t = np.sort(rng.uniform(0, rng.uniform(40, 80), n)) + 2460000.0
        dy = rng.uniform(0.02, 0.06, n)
        period = rng.uniform(1.0, 5.0)
        phase = ((t - t[0]) / period) % 1.0
        y = 15.0 + 0.3 * np.sin(2 * np.pi * phase) - 0.3 * (phase < 0.1) + rng.normal(0, 1, n) * dy
        ident = int(s * 7919 % 1000)
        if s % 7 == 3:
            y = np.full(n, 14.5)
        else:
            planted[ident] = 1.0 / period
        frames.append(pd.DataFrame({"id": ident, "t": t, "y": y, "dy": dy}).astype(
            {"t": dtype, "y": dtype, "dy": dtype}))
    rows = pd.concat(frames, ignore_index=True)
    return rows.iloc[rng.permutation(len(rows))].reset_index(drop=True), planted


def reference(rows, statistic, dy=True, **opts):
    """The batched call on the series in (id, t, y, dy) order, and each
    series' best frequency: the first of the lowest value."""
    keys = ["id", "t", "y"] + (["dy"] if dy else [])
    rows = rows.sort_values(keys, kind="mergesort")
    ids, counts = np.unique(rows["id"].to_numpy(), return_counts=True)
    offsets = np.concatenate([[0], np.cumsum(counts)])
    t, y = rows["t"].to_numpy(), rows["y"].to_numpy()
    if statistic == "pdm":
        got = pdm_batch(t, y, rows["dy"].to_numpy() if dy else None, offsets=offsets, **opts)
    else:
        got = conditional_entropy_batch(t, y, offsets=offsets, **opts)
    return ids, counts, got


def check(res, rows, statistic, column, searched, dy=True, **opts):
    """`res` against the one batched call (`opts`: its frequencies and
    options) on the series in order; `searched`: its frequencies."""
    ids, counts, got = reference(rows, statistic, dy=dy, **opts)
    np.testing.assert_array_equal(res.index.to_numpy(), ids)
    assert res.index.name == "id"
    assert list(res.columns) == ["n", "frequency", "period", column]
    assert all(res[c].dtype == np.float64 for c in res.columns[1:])
    np.testing.assert_array_equal(res["n"].to_numpy(), counts)
    values = got.astype(np.float64)
    nan = np.isnan(values).all(axis=1)
    best = np.argmin(np.where(np.isnan(values), np.inf, values), axis=1)
    want = np.where(nan, np.nan, values[np.arange(len(ids)), best])
    np.testing.assert_array_equal(res[column].to_numpy(), want)
    np.testing.assert_array_equal(res["frequency"].to_numpy(), np.where(nan, np.nan, searched[best]))
    np.testing.assert_array_equal(res["period"].to_numpy(), 1.0 / res["frequency"].to_numpy())


def found(res, planted):
    """How many planted frequencies the search found (within 2e-3)."""
    got = res["frequency"]
    return sum(abs(got[i] - f) < 2e-3 for i, f in planted.items())


def test_pdm_of_a_dataframe_equals_one_batch(backend, rng):
    rows, planted = survey(rng)
    ddf = dd.from_pandas(rows, npartitions=4, sort=False)
    res = kd.pdm(ddf, bins=12, dy_col="dy", backend=backend, **GRID)
    assert res.npartitions == 4
    whole = res.compute()
    check(whole, rows, "pdm", "theta", FREQUENCY, bins=12, backend=backend, **GRID)
    # The constant series have no statistic; the planted periods are found.
    assert whole["theta"].isna().sum() == len(whole) - len(planted)
    assert found(whole, planted) >= 0.8 * len(planted)


def test_ce_of_a_dataframe_equals_one_batch(backend, rng):
    rows, planted = survey(rng)
    frequency = np.sort(rng.uniform(0.1, 1.6, 2000))
    ddf = dd.from_pandas(rows, npartitions=3, sort=False)
    whole = kd.conditional_entropy(ddf, frequency, backend=backend, **CE).compute()
    check(whole, rows, "ce", "entropy", frequency, dy=False, frequency=frequency, backend=backend, **CE)
    assert whole["entropy"].isna().sum() == len(whole) - len(planted)


def test_float32_parquet_and_an_empty_partition(backend, rng, tmp_path):
    rows, _ = survey(rng, dtype=np.float32)
    path, ddf, middle, filtered = sorted_parquet(rows, tmp_path)
    frequency = np.linspace(0.1, 1.6, 1500)  # searched as float32, reported widened
    res = kd.pdm(filtered, frequency, backend=backend)
    assert res.divisions == ddf.divisions
    assert len(res.partitions[1].compute()) == 0
    searched = frequency.astype(np.float32).astype(np.float64)
    check(res.compute(), rows[~rows["id"].isin(middle)], "pdm", "theta", searched, dy=False, frequency=frequency,
          backend=backend)
    # kernpack's own Parquet reader (a path) gives the same table; a grid's
    # frequencies are float64 for float32 series too.
    res = kd.conditional_entropy(path, backend=backend, **GRID, **CE).compute()
    check(res, rows, "ce", "entropy", FREQUENCY, dy=False, backend=backend, **GRID, **CE)


def test_the_best_is_the_first_lowest_among_equal_values(backend, rng):
    """Every frequency searched twice (each value tied with another), and
    frequency 0: the table keeps the first of the lowest, as ever."""
    rows, _ = survey(rng, nseries=10)
    f = np.sort(rng.uniform(0.1, 1.6, 300))
    frequency = np.concatenate([[0.0], f, f[::-1]])
    ddf = dd.from_pandas(rows, npartitions=2, sort=False)
    res = kd.pdm(ddf, frequency, dy_col="dy", backend=backend).compute()
    check(res, rows, "pdm", "theta", frequency, frequency=frequency, backend=backend)
    res = kd.conditional_entropy(ddf, frequency, backend=backend, **CE).compute()
    check(res, rows, "ce", "entropy", frequency, dy=False, frequency=frequency, backend=backend, **CE)


@pytest.mark.parametrize("statistic", ["pdm", "ce"])
def test_top_k_tables_equal_the_peaks_of_one_batch(statistic, backend, rng):
    rows, planted = survey(rng, dtype=np.float32 if statistic == "ce" else np.float64)
    ddf = dd.from_pandas(rows, npartitions=3, sort=False)
    k, separation = 5, 0.02
    if statistic == "pdm":
        column, opts = "theta", dict(bins=12, **GRID)
        res = kd.pdm(ddf, dy_col="dy", top_k=k, separation=separation, backend=backend, **opts).compute()
    else:
        column, opts = "entropy", dict(frequency=np.linspace(0.1, 1.6, 2500), **CE)
        res = kd.conditional_entropy(ddf, top_k=k, separation=separation, backend=backend, **opts).compute()
    ids, counts, got = reference(rows, statistic, dy=statistic == "pdm", peaks=k, separation=separation,
                                 backend=backend, **opts)
    ranks = [("", 0)] + [(f"_{r}", r - 1) for r in range(2, k + 1)]
    assert list(res.columns) == ["n"] + [c + suffix for suffix, _ in ranks for c in ("frequency", "period", column)]
    assert all(res[c].dtype == np.float64 for c in res.columns[1:])
    np.testing.assert_array_equal(res.index.to_numpy(), ids)
    np.testing.assert_array_equal(res["n"].to_numpy(), counts)
    for suffix, r in ranks:
        np.testing.assert_array_equal(res["frequency" + suffix].to_numpy(), got.frequency[:, r])
        np.testing.assert_array_equal(res[column + suffix].to_numpy(), got.value[:, r])
        with np.errstate(divide="ignore"):
            np.testing.assert_array_equal(res["period" + suffix].to_numpy(), 1.0 / got.frequency[:, r])
    # Ranks in order, apart; constant series have none; others all k here.
    values = res[[column + suffix for suffix, _ in ranks]].to_numpy()
    freqs = res[["frequency" + suffix for suffix, _ in ranks]].to_numpy()
    constant = ~res.index.isin(list(planted))
    assert np.isnan(values[constant]).all()
    assert np.all(np.diff(values[~constant], axis=1) >= 0)
    gaps = np.abs(freqs[~constant][:, :, None] - freqs[~constant][:, None, :])
    assert np.all(gaps[:, ~np.eye(k, dtype=bool)] >= separation)
    # Rank 1 is the table of top_k=1.
    whole = (kd.pdm(ddf, dy_col="dy", backend=backend, **opts) if statistic == "pdm"
             else kd.conditional_entropy(ddf, backend=backend, **opts)).compute()
    pd.testing.assert_frame_equal(res[list(whole.columns)], whole)


def test_bad_arguments_are_refused_before_any_partition_runs(rng):
    rows, _ = survey(rng, nseries=3)
    ddf = dd.from_pandas(rows, npartitions=1)
    with pytest.raises(ValueError, match="bins = 1"):
        kd.pdm(ddf, [0.5], bins=1)
    with pytest.raises(ValueError, match="must be below"):
        kd.conditional_entropy(ddf, [0.5], mag_bins=2, mag_overlap=2)
    with pytest.raises(ValueError, match="negative"):
        kd.pdm(ddf, [0.5, -0.5])
    with pytest.raises(ValueError, match="not both"):
        kd.conditional_entropy(ddf, [0.5], **GRID)
    with pytest.raises(ValueError, match="pass frequency"):
        kd.pdm(ddf)
    with pytest.raises(ValueError, match="dy_col"):
        kd.pdm(ddf, [0.5], y_col="y", dy_col="y")
    with pytest.raises(KeyError, match="flux"):
        kd.conditional_entropy(ddf, [0.5], y_col="flux")
    for top_k in (0, True, 2.0):
        with pytest.raises(ValueError, match="top_k must be an integer >= 1"):
            kd.pdm(ddf, [0.5], top_k=top_k)
    with pytest.raises(ValueError, match="top_k = 257 is out of range: 1 to 256"):
        kd.conditional_entropy(ddf, [0.5], top_k=257)
    with pytest.raises(ValueError, match="separation = -0.5 must be finite"):
        kd.pdm(ddf, [0.5], top_k=3, separation=-0.5)


def test_a_bad_series_is_named_by_its_id(rng):
    rows, _ = survey(rng, nseries=4)
    bad = rows["id"].iloc[0]
    rows.loc[rows.index[0], "dy"] = -1.0
    res = kd.pdm(dd.from_pandas(rows, npartitions=2, sort=False), dy_col="dy", backend="cpu", **GRID)
    with pytest.raises(ValueError, match=f"series with id {bad}: dy"):
        res.compute()
