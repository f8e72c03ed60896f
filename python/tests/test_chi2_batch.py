"""kernpack.timeseries.lombscargle_batch: multi-term periodograms of ragged
batches, each series' best peaks (refined on finer local grids, with
false-alarm probabilities), against kernpack's own whole periodograms and
astropy's ``LombScargle(..., nterms=K).power(method='chi2')`` and
``false_alarm_probability``."""
from __future__ import annotations

import numpy as np
import pytest

astropy_ls = pytest.importorskip("astropy.timeseries").LombScargle

from conftest import ref_peaks  # noqa: E402

from kernpack.timeseries import (  # noqa: E402
    LombScargle,
    Peaks,
    lombscargle_batch,
    lombscargle_multiband_batch,
)


def _series(rng, count, dtype=np.float64):
    """`count` noisy periodic series of 40-120 samples with errors."""
    t, y, dy = [], [], []
    for _ in range(count):
        n = int(rng.integers(40, 120))
        ts = np.sort(rng.uniform(0, 30, n))
        period = rng.uniform(0.7, 6.0)
        phase = 2 * np.pi * ts / period
        t.append(ts.astype(dtype))
        y.append((np.sin(phase) + 0.4 * np.cos(2 * phase + 1) + rng.normal(0, 0.5, n)).astype(dtype))
        dy.append(rng.uniform(0.3, 1.0, n).astype(dtype))
    return t, y, dy


F0, DF, NF = 0.05, 0.01, 300


def test_the_batch_is_each_series(backend, rng):
    t, y, dy = _series(rng, 5)
    got = lombscargle_batch(t, y, F0, DF, NF, dy=dy, nterms=2, backend=backend)
    assert got.shape == (5, NF) and got.dtype == np.float64
    freq = F0 + DF * np.arange(NF)
    for s in range(5):
        one = LombScargle(t[s], y[s], dy[s], nterms=2).power(freq, backend=backend)
        np.testing.assert_allclose(got[s], one, rtol=1e-9, atol=1e-12)
    # Flat arrays with offsets: the same.
    offsets = np.concatenate([[0], np.cumsum([len(s) for s in t])])
    flat = lombscargle_batch(np.concatenate(t), np.concatenate(y), F0, DF, NF, dy=np.concatenate(dy),
                             offsets=offsets, nterms=2, backend=backend)
    np.testing.assert_array_equal(flat, got)
    got32 = lombscargle_batch([s.astype(np.float32) for s in t], [s.astype(np.float32) for s in y], F0, DF, NF,
                              backend=backend)
    assert got32.dtype == np.float32


@pytest.mark.parametrize("nterms", [1, 3])
def test_peaks_are_those_of_the_periodograms(nterms, backend, rng):
    t, y, dy = _series(rng, 6)
    f0 = F0 + 0.01 * np.arange(6)
    whole = lombscargle_batch(t, y, f0, DF, NF, dy=dy, nterms=nterms, backend=backend)
    for k, separation in ((1, 0.0), (4, 0.0), (5, 0.03)):
        got = lombscargle_batch(t, y, f0, DF, NF, dy=dy, nterms=nterms, peaks=k, separation=separation,
                                backend=backend)
        assert isinstance(got, Peaks)
        assert got.index.shape == got.power.shape == got.frequency.shape == got.fap.shape == (6, k)
        for s in range(6):
            axis = f0[s] + DF * np.arange(NF)
            want = np.asarray(ref_peaks(whole[s], axis, k, separation, higher=True), dtype=np.int64)
            np.testing.assert_array_equal(got.index[s][got.index[s] >= 0], want)
            np.testing.assert_array_equal(got.power[s][: len(want)], whole[s][want])
            np.testing.assert_array_equal(got.frequency[s][: len(want)], f0[s] + want * DF)
            assert np.all(np.isnan(got.power[s][len(want):])) and np.all(np.isnan(got.fap))


def test_the_best_peak_is_astropys(rng):
    t, y, dy = _series(rng, 4)
    freq = F0 + DF * np.arange(NF)
    got = lombscargle_batch(t, y, F0, DF, NF, dy=dy, nterms=2, peaks=1)
    for s in range(4):
        p = astropy_ls(t[s], y[s], dy[s], nterms=2).power(freq, method="chi2")
        assert got.index[s, 0] == np.argmax(p)
        np.testing.assert_allclose(got.power[s, 0], p.max(), rtol=1e-9)


def test_refined_peaks_are_the_best_of_astropys_local_grid(backend, rng):
    t, y, dy = _series(rng, 4)
    points, steps = 8, 2
    coarse = lombscargle_batch(t, y, F0, DF, NF, dy=dy, peaks=3, separation=0.05, backend=backend)
    got = lombscargle_batch(t, y, F0, DF, NF, dy=dy, peaks=3, separation=0.05, refine=(points, steps),
                            backend=backend)
    np.testing.assert_array_equal(got.index, coarse.index)
    for s in range(4):
        for j in np.flatnonzero(got.index[s] >= 0):
            fc = coarse.frequency[s, j]
            assert got.power[s, j] >= coarse.power[s, j]
            assert abs(got.frequency[s, j] - fc) <= steps * DF * (1 + 1e-12)
            # The local grid as the library makes it (no clipping this far from 0).
            h = DF / points
            local = (fc - steps * points * h) + h * np.arange(2 * steps * points + 1)
            p = astropy_ls(t[s], y[s], dy[s]).power(local, method="chi2")
            best = max(p.max(), coarse.power[s, j])
            np.testing.assert_allclose(got.power[s, j], best, rtol=1e-9)
            if p.max() > coarse.power[s, j] * (1 + 1e-9):
                np.testing.assert_allclose(got.frequency[s, j], local[np.argmax(p)], rtol=1e-12)
    # An int is the points per step, one step each side.
    one = lombscargle_batch(t, y, F0, DF, NF, dy=dy, peaks=3, separation=0.05, refine=points, backend=backend)
    assert np.all(np.abs(one.frequency - coarse.frequency)[coarse.index >= 0] <= DF * (1 + 1e-12))


@pytest.mark.parametrize("method", ["baluev", "davies", "naive", "single"])
@pytest.mark.parametrize("normalization", ["standard", "psd"])
@pytest.mark.parametrize("with_dy", [True, False])
def test_fap_is_astropys(method, normalization, with_dy, rng):
    from astropy.timeseries.periodograms.lombscargle import _statistics

    t, y, dy = _series(rng, 3)
    dy = dy if with_dy else None
    # Each series on astropy's own autofrequency grid (5 samples per peak),
    # so that LombScargle.false_alarm_probability(maximum_frequency=fmax),
    # which rounds fmax onto that grid, takes this grid's last frequency.
    df = np.array([1 / (5 * np.ptp(s)) for s in t])
    f0 = df / 2
    got = lombscargle_batch(t, y, f0, df, NF, dy=dy, peaks=3, refine=4, fap=method, normalization=normalization)
    for s in range(3):
        fmax = f0[s] + (NF - 1) * df[s]
        dys = None if dy is None else dy[s]
        ls = astropy_ls(t[s], y[s], dys, normalization=normalization)
        valid = got.index[s] >= 0
        want = ls.false_alarm_probability(got.power[s][valid], maximum_frequency=fmax, method=method)
        np.testing.assert_allclose(got.fap[s][valid], want, rtol=1e-9, atol=1e-14)
    # Any grid: astropy's formulas (what false_alarm_probability calls) at
    # fmax = the grid's last frequency.
    got = lombscargle_batch(t, y, 0.05, 0.01, NF, dy=dy, peaks=2, fap=method, normalization=normalization)
    for s in range(3):
        valid = got.index[s] >= 0
        dys = None if dy is None else dy[s]
        want = _statistics.false_alarm_probability(got.power[s][valid], 0.05 + (NF - 1) * 0.01, t[s], y[s], dys,
                                                   normalization=normalization, method=method)
        np.testing.assert_allclose(got.fap[s][valid], want, rtol=1e-9, atol=1e-14)


def test_bad_searches_are_errors():
    t = [np.linspace(0, 10, 30), np.linspace(0, 12, 40)]
    y = [np.sin(s) for s in t]
    with pytest.raises(ValueError, match="multi-term"):
        lombscargle_batch(t, y, F0, DF, NF, nterms=2, peaks=2, fap="baluev")
    with pytest.raises(ValueError, match="centred"):
        lombscargle_batch(t, y, F0, DF, NF, fit_mean=False, center_data=False, peaks=2, fap="single")
    with pytest.raises(ValueError, match="bootstrap"):
        lombscargle_batch(t, y, F0, DF, NF, peaks=2, fap="bootstrap")
    with pytest.raises(ValueError, match="not recognized"):
        lombscargle_batch(t, y, F0, DF, NF, peaks=2, fap="exact")
    with pytest.raises(ValueError, match="refine"):
        lombscargle_batch(t, y, F0, DF, NF, peaks=2, refine=1)
    with pytest.raises(ValueError, match="refine applies to peaks"):
        lombscargle_batch(t, y, F0, DF, NF, refine=4)
    with pytest.raises(ValueError, match="peaks"):
        lombscargle_batch(t, y, F0, DF, NF, peaks=0)
    with pytest.raises(ValueError, match="normalization"):
        lombscargle_batch(t, y, F0, DF, NF, normalization="amplitude")
    with pytest.raises(ValueError, match="series 1"):
        lombscargle_batch([t[0], t[1][:3]], [y[0], y[1][:3]], F0, DF, NF, peaks=1, fap="naive")


def test_an_empty_batch_is_an_empty_result():
    got = lombscargle_batch([], [], F0, DF, NF)
    assert got.shape == (0, NF)
    peaks = lombscargle_batch([], [], F0, DF, NF, peaks=3, refine=4, fap="baluev")
    assert peaks.index.shape == peaks.fap.shape == (0, 3)
    with pytest.raises(ValueError, match="multi-term"):
        lombscargle_batch([], [], F0, DF, NF, nterms=3, peaks=3, fap="baluev")


def test_multiband_peaks_refine(backend, rng):
    t, y, dy = _series(rng, 4)
    bands = [np.arange(len(s)) % 2 for s in t]
    coarse = lombscargle_multiband_batch(t, y, bands, F0, DF, NF, dy=dy, peaks=2, backend=backend)
    got = lombscargle_multiband_batch(t, y, bands, F0, DF, NF, dy=dy, peaks=2, refine=(6, 1), backend=backend)
    np.testing.assert_array_equal(got.index, coarse.index)
    valid = coarse.index >= 0
    assert np.all(got.power[valid] >= coarse.power[valid])
    assert np.all(np.abs(got.frequency - coarse.frequency)[valid] <= DF * (1 + 1e-12))
    with pytest.raises(ValueError, match="refine applies to peaks"):
        lombscargle_multiband_batch(t, y, bands, F0, DF, NF, refine=4)
