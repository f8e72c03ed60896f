"""kernpack.dask.lombscargle_chi2_peaks on a local cluster of two worker
processes (CPU workers here; 'gpu' too where the suite runs with one): every
row equals the peaks of one ``kernpack.timeseries.lombscargle_batch`` call
with ``peaks=top_k`` on the same series, bitwise, with and without
uncertainties, one or three terms, refined or not, with false-alarm
probabilities, from a shuffled frame or from Parquet files.

Exactness: a partition's rows are put in (id, t, y, dy) order before its
batched call, and every series' periodogram is computed apart from the others
in its batch, so the partitioned run's values are those of one call on the
series so sorted.
"""
from __future__ import annotations

import numpy as np
import pytest

dd = pytest.importorskip("dask.dataframe")
pytest.importorskip("distributed")
pytest.importorskip("pyarrow")

import pandas as pd  # noqa: E402

import kernpack.dask as kd  # noqa: E402
from kernpack.timeseries import lombscargle_batch  # noqa: E402
from test_dask_bls import client, sorted_parquet  # noqa: E402,F401  (client: the module's cluster, 2 worker processes)

GRID = dict(f0=0.05, df=0.0004, nf=2500)  # 0.05 to 1.05 cycles per unit of t
COLUMNS = ("frequency", "period", "power")


def survey(rng, nseries=24, dtype=np.float64):
    """Rows (id, t, y, dy) of ragged light curves: 40-150 samples over 30-90
    days at times rounded to 0.01 (so that samples tie in time), one planted
    period of 1.5 to 10 days with a harmonic (a shape that three terms fit
    better than one); shuffled so that every series is spread over the input
    partitions. Also returns the planted frequencies by id."""
    frames, planted = [], {}
    for s in range(nseries):
        span, frequency = rng.uniform(30, 90), 1.0 / rng.uniform(1.5, 10.0)
        n = int(rng.integers(40, 151))
        t = np.round(rng.uniform(0, span, n), 2)
        dy = rng.uniform(0.02, 0.08, n)
        phase = 2 * np.pi * frequency * t + rng.uniform(0, 6)
        y = rng.uniform(-2, 2) + np.sin(phase) + 0.4 * np.sin(2 * phase + 1.0) + rng.normal(0, 1, n) * dy
        ident = int(s * 7919 % 1000)
        frames.append(pd.DataFrame({"id": ident, "t": t, "y": y, "dy": dy}))
        planted[ident] = frequency
    rows = pd.concat(frames, ignore_index=True).astype({"t": dtype, "y": dtype, "dy": dtype})
    return rows.iloc[rng.permutation(len(rows))].reset_index(drop=True), planted


def reference(rows, dy=True, **opts):
    """(ids, sample counts, lombscargle_batch(..., **opts)) of the series in
    (id, t, y, dy) order."""
    keys = ["id", "t", "y"] + (["dy"] if dy else [])
    rows = rows.sort_values(keys, kind="mergesort")
    ids, counts = np.unique(rows["id"].to_numpy(), return_counts=True)
    offsets = np.concatenate([[0], np.cumsum(counts)])
    got = lombscargle_batch(rows["t"].to_numpy(), rows["y"].to_numpy(), **GRID,
                            dy=rows["dy"].to_numpy() if dy else None, offsets=offsets, **opts)
    return ids, counts, got


def check(res, rows, top_k, dy=True, **opts):
    """`res` holds the ranks of one batched call with ``peaks=top_k``
    (`opts`: its other options) on the series in order, bit for bit; a
    ``fap`` column per rank where `opts` asks for them."""
    ids, counts, got = reference(rows, dy=dy, peaks=top_k, **opts)
    names = COLUMNS + (("fap",) if opts.get("fap") is not None else ())
    ranks = [("", 0)] + [(f"_{r}", r - 1) for r in range(2, top_k + 1)]
    assert list(res.columns) == ["n"] + [c + suffix for suffix, _ in ranks for c in names]
    assert res.index.name == "id"
    assert res["n"].dtype == np.int64 and all(res[c].dtype == np.float64 for c in res.columns[1:])
    np.testing.assert_array_equal(res.index.to_numpy(), ids)
    np.testing.assert_array_equal(res["n"].to_numpy(), counts)
    for suffix, r in ranks:
        np.testing.assert_array_equal(res["frequency" + suffix].to_numpy(), got.frequency[:, r])
        np.testing.assert_array_equal(res["power" + suffix].to_numpy(), got.power[:, r])
        with np.errstate(divide="ignore"):
            np.testing.assert_array_equal(res["period" + suffix].to_numpy(), 1.0 / got.frequency[:, r])
        if "fap" in names:
            np.testing.assert_array_equal(res["fap" + suffix].to_numpy(), got.fap[:, r])
    return got


@pytest.mark.parametrize("with_dy", [True, False])
@pytest.mark.parametrize("nterms", [1, 3])
@pytest.mark.parametrize("top_k", [1, 3])
@pytest.mark.parametrize("refine", [None, (10, 1)])
def test_peaks_of_a_shuffled_frame_equal_one_batch(backend, rng, with_dy, nterms, top_k, refine):
    rows, planted = survey(rng)
    ddf = dd.from_pandas(rows, npartitions=4, sort=False)
    search = dict(nterms=nterms, separation=0.02 if top_k > 1 else 0.0, refine=refine)
    res = kd.lombscargle_chi2_peaks(ddf, **GRID, top_k=top_k, dy_col="dy" if with_dy else None, backend=backend,
                                    **search)
    assert res.npartitions == 4
    whole = res.compute()
    check(whole, rows, top_k, dy=with_dy, backend=backend, **search)
    # The planted frequencies are found.
    found = sum(abs(whole.loc[i, "frequency"] - f) < 2e-3 for i, f in planted.items())
    assert found >= 0.8 * len(planted)
    if refine is not None:  # off the coarse grid
        steps = (whole["frequency"].to_numpy() - GRID["f0"]) / GRID["df"]
        assert np.any(np.abs(steps - np.round(steps)) > 1e-6)
    if top_k > 1:  # ranks best first (by their coarse power: refining may reorder them), apart
        power = whole[["power", "power_2", "power_3"]].to_numpy()
        freqs = whole[["frequency", "frequency_2", "frequency_3"]].to_numpy()
        if refine is None:
            assert np.all(np.diff(power, axis=1) <= 0)
        moved = 0.0 if refine is None else 2 * refine[1] * GRID["df"]  # a refined peak moves up to steps * df
        gaps = np.abs(freqs[:, :, None] - freqs[:, None, :])
        assert np.all(gaps[:, ~np.eye(3, dtype=bool)] >= 0.02 - moved - 1e-12)


@pytest.mark.parametrize("with_dy", [True, False])
@pytest.mark.parametrize("top_k", [1, 3])
def test_false_alarm_probabilities(backend, rng, with_dy, top_k):
    rows, _ = survey(rng, nseries=12)
    ddf = dd.from_pandas(rows, npartitions=3, sort=False)
    search = dict(fap="baluev", separation=0.02 if top_k > 1 else 0.0, refine=(10, 1))
    res = kd.lombscargle_chi2_peaks(ddf, **GRID, top_k=top_k, dy_col="dy" if with_dy else None, backend=backend,
                                    **search).compute()
    got = check(res, rows, top_k, dy=with_dy, backend=backend, **search)
    assert np.all(np.isfinite(got.fap)) and np.all((got.fap >= 0) & (got.fap <= 1))
    assert np.all(res["fap"] < 1e-6)  # the planted signals are significant
    if top_k > 1:  # a lower peak is no more significant
        assert np.all(res["fap_2"] >= res["fap"]) and np.all(res["fap_3"] >= res["fap_2"])


def test_the_options_reach_the_call(backend, rng):
    """float32 columns, uncentred data without a floating mean and another
    normalization, and another FAP method."""
    rows, _ = survey(rng, nseries=10, dtype=np.float32)
    ddf = dd.from_pandas(rows, npartitions=3, sort=False)
    opts = dict(nterms=2, center_data=False, fit_mean=False, normalization="psd", refine=4)
    res = kd.lombscargle_chi2_peaks(ddf, **GRID, top_k=2, dy_col="dy", backend=backend, **opts).compute()
    check(res, rows, 2, backend=backend, **opts)
    opts = dict(normalization="model", fap="davies", fit_mean=False)
    res = kd.lombscargle_chi2_peaks(ddf, **GRID, dy_col="dy", backend=backend, **opts).compute()
    check(res, rows, 1, backend=backend, **opts)


def test_parquet_and_an_empty_partition(backend, rng, tmp_path):
    rows, _ = survey(rng, dtype=np.float32)
    path, ddf, middle, filtered = sorted_parquet(rows, tmp_path)
    search = dict(nterms=3, separation=0.02)
    res = kd.lombscargle_chi2_peaks(filtered, **GRID, top_k=2, dy_col="dy", backend=backend, **search)
    assert res.divisions == ddf.divisions
    assert len(res.partitions[1].compute()) == 0
    check(res.compute(), rows[~rows["id"].isin(middle)], 2, backend=backend, **search)
    # A path: kernpack's own reader (integer ids, columns of numbers).
    assert kd._parquet_plan(path, "id", ["t", "y", "dy"]) is not None
    res = kd.lombscargle_chi2_peaks(path, **GRID, top_k=2, dy_col="dy", backend=backend, fap="baluev").compute()
    check(res, rows, 2, backend=backend, fap="baluev")


def test_an_empty_partition_is_an_empty_table():
    rows = pd.DataFrame({"id": np.empty(0, np.int64), "t": np.empty(0), "y": np.empty(0)})
    res = kd.lombscargle_chi2_peaks(dd.from_pandas(rows, npartitions=1), **GRID, top_k=2, backend="cpu")
    got = res.compute()
    assert len(got) == 0 and list(got.columns) == list(res.columns)
    assert list(got.columns) == ["n", "frequency", "period", "power", "frequency_2", "period_2", "power_2"]
    res = kd.lombscargle_chi2_peaks(dd.from_pandas(rows, npartitions=1), **GRID, top_k=2, fap="naive", backend="cpu")
    got = res.compute()
    assert len(got) == 0 and list(got.columns) == list(res.columns)
    assert list(got.columns) == ["n", "frequency", "period", "power", "fap", "frequency_2", "period_2", "power_2",
                                 "fap_2"]


def test_the_metadata_is_given_not_inferred(rng, monkeypatch):
    def refuse(*args, **kwargs):
        raise AssertionError("a partition ran to infer metadata")

    monkeypatch.setattr(kd, "_grid_peaks_table", refuse)  # in this process only
    rows, _ = survey(rng, nseries=5)
    ddf = dd.from_pandas(rows, npartitions=2, sort=False)
    res = kd.lombscargle_chi2_peaks(ddf, **GRID, top_k=2, fap="baluev")
    assert list(res.columns) == ["n", "frequency", "period", "power", "fap", "frequency_2", "period_2", "power_2",
                                 "fap_2"]
    assert res.index.name == "id" and res.index.dtype == ddf["id"].dtype
    assert len(res._meta) == 0


def test_bad_arguments_are_refused_before_any_partition_runs(rng):
    rows, _ = survey(rng, nseries=3)
    ddf = dd.from_pandas(rows, npartitions=1)
    with pytest.raises(ValueError, match="false-alarm probabilities are for single-term periodograms"):
        kd.lombscargle_chi2_peaks(ddf, **GRID, nterms=3, fap="baluev")
    with pytest.raises(ValueError, match="set fit_mean or center_data"):
        kd.lombscargle_chi2_peaks(ddf, **GRID, fap="baluev", fit_mean=False, center_data=False)
    with pytest.raises(ValueError, match="fap='bootstrap' is not offered per peak"):
        kd.lombscargle_chi2_peaks(ddf, **GRID, fap="bootstrap")
    with pytest.raises(ValueError, match="fap='exact' not recognized"):
        kd.lombscargle_chi2_peaks(ddf, **GRID, fap="exact")
    with pytest.raises(ValueError, match="refine"):
        kd.lombscargle_chi2_peaks(ddf, **GRID, refine=(1, 1))
    with pytest.raises(ValueError, match="normalization='linear' not recognized"):
        kd.lombscargle_chi2_peaks(ddf, **GRID, normalization="linear")
    with pytest.raises(ValueError, match="nterms"):
        kd.lombscargle_chi2_peaks(ddf, **GRID, nterms=0)
    with pytest.raises(ValueError, match="nf must be > 0"):
        kd.lombscargle_chi2_peaks(ddf, 0.1, 0.01, 0)
    with pytest.raises(TypeError, match="nf must be an integer"):
        kd.lombscargle_chi2_peaks(ddf, 0.1, 0.01, 10.5)
    with pytest.raises(ValueError, match="df"):
        kd.lombscargle_chi2_peaks(ddf, 0.1, -0.01, 10)
    with pytest.raises(ValueError, match="f0 and df must be numbers"):
        kd.lombscargle_chi2_peaks(ddf, [0.1, 0.2], 0.01, 10)
    with pytest.raises(KeyError, match="mag"):
        kd.lombscargle_chi2_peaks(ddf, **GRID, y_col="mag")
    with pytest.raises(ValueError, match="dy_col"):
        kd.lombscargle_chi2_peaks(ddf, **GRID, dy_col="t")
    for top_k in (0, True, 2.0, None):
        with pytest.raises(ValueError, match="top_k must be an integer >= 1"):
            kd.lombscargle_chi2_peaks(ddf, **GRID, top_k=top_k)
    with pytest.raises(ValueError, match="top_k = 257 is out of range: 1 to 256"):
        kd.lombscargle_chi2_peaks(ddf, **GRID, top_k=257)
    with pytest.raises(ValueError, match="separation = -0.5 must be finite"):
        kd.lombscargle_chi2_peaks(ddf, **GRID, top_k=3, separation=-0.5)
    with pytest.raises(TypeError, match="from_pandas"):
        kd.lombscargle_chi2_peaks(rows, **GRID)


def test_bad_rows_are_named(rng):
    rows, _ = survey(rng, nseries=4)
    bad = rows["id"].iloc[0]
    with_bad_dy = rows.copy()
    with_bad_dy.loc[rows.index[0], "dy"] = -1.0
    res = kd.lombscargle_chi2_peaks(dd.from_pandas(with_bad_dy, npartitions=2, sort=False), **GRID, dy_col="dy",
                                    backend="cpu")
    with pytest.raises(ValueError, match=f"series with id {bad}: dy"):
        res.compute()
