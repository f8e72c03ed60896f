"""kernpack.dask.lombscargle_multiband_peaks on a local cluster of two worker
processes (CPU workers here; 'gpu' too where the suite runs with one): every
row equals the peaks of one ``kernpack.timeseries.lombscargle_multiband_batch``
call with ``peaks=top_k`` on the same series, bitwise, whether the band
labels are strings or integers, with and without uncertainties, from a
shuffled frame or from Parquet files.

Exactness: a partition's rows are put in (id, t, y, dy, band) order before
its batched call, and every series' periodogram is computed apart from the
others in its batch (its bands in the order of their labels, whatever labels
the other series have), so the partitioned run's values are those of one call
on the series so sorted.
"""
from __future__ import annotations

import numpy as np
import pytest

dd = pytest.importorskip("dask.dataframe")
pytest.importorskip("distributed")
pytest.importorskip("pyarrow")

import pandas as pd  # noqa: E402

import kernpack.dask as kd  # noqa: E402
from kernpack.timeseries import lombscargle_multiband_batch  # noqa: E402
from test_dask_bls import client, sorted_parquet  # noqa: E402,F401  (client: the module's cluster, 2 worker processes)

GRID = dict(f0=0.05, df=0.0004, nf=2500)  # 0.05 to 1.05 cycles per unit of t
LABELS = {"str": np.array(["g", "i", "r", "z"], dtype=object), "int": np.array([3, 7, 11, 40])}


def survey(rng, nseries=24, labels="str", dtype=np.float64):
    """Rows (id, t, y, dy, band) of ragged multiband light curves: 2 to 4
    bands a series, 15-60 samples a band over 30-90 days at times rounded to
    0.01 (so that samples tie in time, within a band and across bands), one
    planted period of 1.5 to 10 days that the bands share, each band with a
    level and an amplitude of its own; shuffled so that every series is
    spread over the input partitions. Also returns the planted frequencies
    by id."""
    frames, planted = [], {}
    for s in range(nseries):
        span, frequency = rng.uniform(30, 90), 1.0 / rng.uniform(1.5, 10.0)
        bands = rng.choice(LABELS[labels], size=int(rng.integers(2, 5)), replace=False)
        for band in bands:
            n = int(rng.integers(15, 61))
            t = np.round(rng.uniform(0, span, n), 2)
            dy = rng.uniform(0.02, 0.08, n)
            level, amplitude = rng.uniform(-2, 2), rng.uniform(0.3, 1.0)
            y = level + amplitude * np.sin(2 * np.pi * frequency * t + rng.uniform(0, 6)) + rng.normal(0, 1, n) * dy
            frames.append(pd.DataFrame({"id": int(s * 7919 % 1000), "t": t, "y": y, "dy": dy, "band": band}))
        planted[int(s * 7919 % 1000)] = frequency
    rows = pd.concat(frames, ignore_index=True).astype({"t": dtype, "y": dtype, "dy": dtype})
    return rows.iloc[rng.permutation(len(rows))].reset_index(drop=True), planted


def reference(rows, dy=True, **opts):
    """(ids, sample counts, lombscargle_multiband_batch(..., **opts)) of the
    series in (id, t, y, dy, band) order."""
    keys = ["id", "t", "y"] + (["dy"] if dy else []) + ["band"]
    rows = rows.sort_values(keys, kind="mergesort")
    ids, counts = np.unique(rows["id"].to_numpy(), return_counts=True)
    offsets = np.concatenate([[0], np.cumsum(counts)])
    got = lombscargle_multiband_batch(rows["t"].to_numpy(), rows["y"].to_numpy(), rows["band"].to_numpy(),
                                      dy=rows["dy"].to_numpy() if dy else None, offsets=offsets, **GRID, **opts)
    return ids, counts, got


def check(res, rows, top_k, dy=True, **opts):
    """`res` holds the ranks of one batched call with ``peaks=top_k``
    (`opts`: its other options) on the series in order, bit for bit."""
    ids, counts, got = reference(rows, dy=dy, peaks=top_k, **opts)
    ranks = [("", 0)] + [(f"_{r}", r - 1) for r in range(2, top_k + 1)]
    assert list(res.columns) == ["n"] + [c + suffix for suffix, _ in ranks for c in ("frequency", "period", "power")]
    assert res.index.name == "id"
    assert res["n"].dtype == np.int64 and all(res[c].dtype == np.float64 for c in res.columns[1:])
    np.testing.assert_array_equal(res.index.to_numpy(), ids)
    np.testing.assert_array_equal(res["n"].to_numpy(), counts)
    for suffix, r in ranks:
        np.testing.assert_array_equal(res["frequency" + suffix].to_numpy(), got.frequency[:, r])
        np.testing.assert_array_equal(res["power" + suffix].to_numpy(), got.power[:, r])
        with np.errstate(divide="ignore"):
            np.testing.assert_array_equal(res["period" + suffix].to_numpy(), 1.0 / got.frequency[:, r])


@pytest.mark.parametrize("labels", ["str", "int"])
@pytest.mark.parametrize("with_dy", [True, False])
@pytest.mark.parametrize("top_k", [1, 3])
def test_peaks_of_a_shuffled_frame_equal_one_batch(backend, rng, labels, with_dy, top_k):
    rows, planted = survey(rng, labels=labels)
    ddf = dd.from_pandas(rows, npartitions=4, sort=False)
    res = kd.lombscargle_multiband_peaks(ddf, **GRID, top_k=top_k, separation=0.02 if top_k > 1 else 0.0,
                                         dy_col="dy" if with_dy else None, backend=backend)
    assert res.npartitions == 4
    whole = res.compute()
    check(whole, rows, top_k, dy=with_dy, separation=0.02 if top_k > 1 else 0.0, backend=backend)
    # The planted frequencies are found.
    found = sum(abs(whole.loc[i, "frequency"] - f) < 2e-3 for i, f in planted.items())
    assert found >= 0.8 * len(planted)
    if top_k > 1:  # ranks best first, apart
        power = whole[["power", "power_2", "power_3"]].to_numpy()
        freqs = whole[["frequency", "frequency_2", "frequency_3"]].to_numpy()
        assert np.all(np.diff(power, axis=1) <= 0)
        gaps = np.abs(freqs[:, :, None] - freqs[:, None, :])
        assert np.all(gaps[:, ~np.eye(3, dtype=bool)] >= 0.02)


def test_the_options_reach_the_call(backend, rng):
    """The fast method with its options, on float32 columns and a per-band
    harmonic model."""
    rows, _ = survey(rng, nseries=10, dtype=np.float32)
    ddf = dd.from_pandas(rows, npartitions=3, sort=False)
    fast = dict(method="fast", nterms_base=2, center_data=False, fit_mean=False, normalization="psd")
    res = kd.lombscargle_multiband_peaks(ddf, **GRID, top_k=2, dy_col="dy", backend=backend, **fast).compute()
    check(res, rows, 2, backend=backend, **fast)
    flexible = dict(nterms_base=0, nterms_band=2, reg_base=1e-4, reg_band=None, regularize_by_trace=False)
    res = kd.lombscargle_multiband_peaks(ddf, **GRID, dy_col="dy", backend=backend, **flexible).compute()
    check(res, rows, 1, backend=backend, **flexible)


@pytest.mark.parametrize("labels", ["int", "str"])
def test_parquet_and_an_empty_partition(backend, rng, tmp_path, labels):
    rows, _ = survey(rng, labels=labels, dtype=np.float32)
    path, ddf, middle, filtered = sorted_parquet(rows, tmp_path)
    res = kd.lombscargle_multiband_peaks(filtered, **GRID, top_k=2, dy_col="dy", backend=backend)
    assert res.divisions == ddf.divisions
    assert len(res.partitions[1].compute()) == 0
    check(res.compute(), rows[~rows["id"].isin(middle)], 2, backend=backend)
    # A path: kernpack's own reader for integer labels (columns of numbers),
    # Dask's for strings; the same table either way.
    planned = kd._parquet_plan(path, "id", ["t", "y", "dy", "band"]) is not None
    assert planned == (labels == "int")
    res = kd.lombscargle_multiband_peaks(path, **GRID, top_k=2, dy_col="dy", backend=backend).compute()
    check(res, rows, 2, backend=backend)


def test_an_empty_partition_is_an_empty_table():
    rows = pd.DataFrame({"id": np.empty(0, np.int64), "t": np.empty(0), "y": np.empty(0), "band": np.empty(0, object)})
    res = kd.lombscargle_multiband_peaks(dd.from_pandas(rows, npartitions=1), **GRID, top_k=2, backend="cpu")
    got = res.compute()
    assert len(got) == 0 and list(got.columns) == list(res.columns)
    assert list(got.columns) == ["n", "frequency", "period", "power", "frequency_2", "period_2", "power_2"]


def test_the_metadata_is_given_not_inferred(rng, monkeypatch):
    def refuse(*args, **kwargs):
        raise AssertionError("a partition ran to infer metadata")

    monkeypatch.setattr(kd, "_multiband_table", refuse)  # in this process only
    rows, _ = survey(rng, nseries=5)
    ddf = dd.from_pandas(rows, npartitions=2, sort=False)
    res = kd.lombscargle_multiband_peaks(ddf, **GRID, top_k=2)
    assert list(res.columns) == ["n", "frequency", "period", "power", "frequency_2", "period_2", "power_2"]
    assert res.index.name == "id" and res.index.dtype == ddf["id"].dtype
    assert len(res._meta) == 0


def test_bad_arguments_are_refused_before_any_partition_runs(rng):
    rows, _ = survey(rng, nseries=3)
    ddf = dd.from_pandas(rows, npartitions=1)
    with pytest.raises(ValueError, match="Invalid Method"):
        kd.lombscargle_multiband_peaks(ddf, **GRID, method="slow")
    with pytest.raises(ValueError, match="nterms_base"):
        kd.lombscargle_multiband_peaks(ddf, **GRID, nterms_base=4)
    with pytest.raises(ValueError, match="reg_band"):
        kd.lombscargle_multiband_peaks(ddf, **GRID, reg_band=-1.0)
    with pytest.raises(ValueError, match="nf must be > 0"):
        kd.lombscargle_multiband_peaks(ddf, 0.1, 0.01, 0)
    with pytest.raises(TypeError, match="nf must be an integer"):
        kd.lombscargle_multiband_peaks(ddf, 0.1, 0.01, 10.5)
    with pytest.raises(ValueError, match="df"):
        kd.lombscargle_multiband_peaks(ddf, 0.1, -0.01, 10)
    with pytest.raises(ValueError, match="f0 and df must be numbers"):
        kd.lombscargle_multiband_peaks(ddf, [0.1, 0.2], 0.01, 10)
    with pytest.raises(KeyError, match="filter"):
        kd.lombscargle_multiband_peaks(ddf, **GRID, band_col="filter")
    with pytest.raises(ValueError, match="band_col must name different columns"):
        kd.lombscargle_multiband_peaks(ddf, **GRID, band_col="y")
    with pytest.raises(ValueError, match="dy_col"):
        kd.lombscargle_multiband_peaks(ddf, **GRID, dy_col="t")
    for top_k in (0, True, 2.0):
        with pytest.raises(ValueError, match="top_k must be an integer >= 1"):
            kd.lombscargle_multiband_peaks(ddf, **GRID, top_k=top_k)
    with pytest.raises(ValueError, match="top_k = 257 is out of range: 1 to 256"):
        kd.lombscargle_multiband_peaks(ddf, **GRID, top_k=257)
    with pytest.raises(ValueError, match="separation = -0.5 must be finite"):
        kd.lombscargle_multiband_peaks(ddf, **GRID, top_k=3, separation=-0.5)
    with pytest.raises(TypeError, match="from_pandas"):
        kd.lombscargle_multiband_peaks(rows, **GRID)


def test_bad_rows_are_named(rng):
    rows, _ = survey(rng, nseries=4)
    bad = rows["id"].iloc[0]
    with_bad_dy = rows.copy()
    with_bad_dy.loc[rows.index[0], "dy"] = -1.0
    res = kd.lombscargle_multiband_peaks(dd.from_pandas(with_bad_dy, npartitions=2, sort=False), **GRID,
                                         dy_col="dy", backend="cpu")
    with pytest.raises(ValueError, match=f"series with id {bad}: dy"):
        res.compute()
    no_band = rows.copy()
    no_band.loc[rows.index[0], "band"] = None
    res = kd.lombscargle_multiband_peaks(dd.from_pandas(no_band, npartitions=2, sort=False), **GRID, backend="cpu")
    with pytest.raises(ValueError, match="'band' column has missing values"):
        res.compute()
