"""kernpack.timeseries.pdm and conditional_entropy (and their batch forms)
against plain NumPy references of the same definitions, written here from
the statement in src/params/phasefold.rs.

Differential cases: 1,200 random cases per statistic (20 x 50 in float64,
4 x 50 in float32), each one call over 1 to 40 trial frequencies (an array,
sometimes with 0 and the planted frequency in it, or a uniform grid): a
series of 1 to 300 samples over 0.5 to 100 time units (offset by -100 to
3,000; sorted or not; some times repeated), a planted periodic signal
(sinusoid, box or sawtooth) plus noise on an offset of up to 100, sometimes
quantised (ties in the values), sometimes constant or of one sample (NaN);
PDM with dy or none and 2 to 40 bins (sometimes up to 4,096); CE with 1 to
30 phase bins, 1 to 12 magnitude bins and overlaps (none half the time).

The references bin each sample by the same float64 operations as the
library (phase bin ``min(int(frac((t - min t) * f) * bins), bins - 1)``,
magnitude bin ``min(int((y - min y) / (max y - min y) * mag_bins),
mag_bins - 1)``), so both bin alike, and then compute each statistic
directly: PDM as within-bin over total weighted squared residuals, CE by
counting the cells with their overlaps and summing ``N_pm ln(N_p / N_pm)``.

The best peaks (``peaks=k``) against a plain reference of their definition
(src/params/peaks.rs) applied to the values the whole batch returns: the
same call without ``peaks`` gives the values, so the two must agree exactly
(indices, values and frequencies).
"""
from __future__ import annotations

import numpy as np
import pytest

import kernpack
from kernpack import timeseries as ts
from conftest import REQUIRE_GPU, need_gpu_module, ref_peaks
from kernpack import _native

# float64: the library sums in another form and order than the references
# (theta as (S - between) / S with between = sum_b (sum w (y - ybar))^2 /
# sum w, and H from a table of k ln k), each sum off by ~n eps of its
# terms: ~1e-13 on these series, far below 1e-10.
# float32 inputs: the library widens the float32 values to float64
# exactly, computes in float64 and rounds the result once to float32; the
# references compute in float64 on the same widened values, so the two
# differ by the final rounding, half an ulp of float32 of the value: theta
# <= 1 (6e-8) and H <= ln(12 magnitude bins) < 2.5 (1.5e-7), under 1e-5.
TOLERANCE = {np.float64: 1e-10, np.float32: 1e-5}


# --------------------------------------------------------------------------
# The references
# --------------------------------------------------------------------------


def phase_bins(t, f, bins):
    """(nf, n) phase bins, by the library's float64 operations."""
    dt = t - t.min()
    x = dt[None, :] * f[:, None]
    frac = x - np.floor(x)
    return np.minimum((frac * bins).astype(int), bins - 1)


def ref_pdm(t, y, dy, f, bins):
    """theta = sum w (y - bin mean)^2 / sum w (y - mean)^2, w = 1 / dy^2."""
    t, y, f = (np.asarray(a, dtype=np.float64) for a in (t, y, f))
    if np.all(y == y[0]):
        return np.full(f.size, np.nan)
    w = np.ones_like(y) if dy is None else 1.0 / np.asarray(dy, dtype=np.float64) ** 2
    b = phase_bins(t, f, bins)
    cell = (b + bins * np.arange(f.size)[:, None]).ravel()
    wb = np.broadcast_to(w, b.shape)
    sw = np.bincount(cell, weights=wb.ravel(), minlength=f.size * bins).reshape(f.size, bins)
    swy = np.bincount(cell, weights=(wb * y).ravel(), minlength=f.size * bins).reshape(f.size, bins)
    with np.errstate(divide="ignore", invalid="ignore"):
        bin_mean = swy / sw  # NaN in empty bins, never read
    within = np.sum(w * (y - np.take_along_axis(bin_mean, b, axis=1)) ** 2, axis=1)
    mean = np.sum(w * y) / np.sum(w)
    return within / np.sum(w * (y - mean) ** 2)


def ref_ce(t, y, f, phase_bins_, mag_bins, phase_overlap=0, mag_overlap=0):
    """H = sum N_pm ln(N_p / N_pm) / sum N_pm over the cells, each sample
    counted in phase bins b, b - 1, ..., b - phase_overlap (cyclically) and
    magnitude bins m, m - 1, ..., max(0, m - mag_overlap)."""
    t, y, f = (np.asarray(a, dtype=np.float64) for a in (t, y, f))
    lo, hi = y.min(), y.max()
    if hi == lo:
        return np.full(f.size, np.nan)
    m = np.minimum(((y - lo) / (hi - lo) * mag_bins).astype(int), mag_bins - 1)
    b = phase_bins(t, f, phase_bins_)
    rows = np.arange(f.size)[:, None]
    size = f.size * phase_bins_ * mag_bins
    counts = np.zeros(size)
    for q in range(phase_overlap + 1):
        p = (b - q) % phase_bins_
        for r in range(mag_overlap + 1):
            keep = np.broadcast_to(m - r >= 0, b.shape)
            cell = (rows * phase_bins_ + p) * mag_bins + (m - r)
            counts += np.bincount(cell[keep], minlength=size)
    counts = counts.reshape(f.size, phase_bins_, mag_bins)
    n_p = counts.sum(axis=2, keepdims=True)
    with np.errstate(divide="ignore", invalid="ignore"):
        terms = np.where(counts > 0, counts * np.log(n_p / counts), 0.0)
    return terms.sum(axis=(1, 2)) / counts.sum(axis=(1, 2))


# --------------------------------------------------------------------------
# Random cases
# --------------------------------------------------------------------------


def _series(rng, dtype):
    """(t, y, dy, planted frequency) of one random series."""
    special = int(rng.integers(25))
    n = 1 if special == 0 else int(rng.integers(2, 301))
    t0, baseline = rng.uniform(-100, 3000), rng.uniform(0.5, 100)
    t = t0 + baseline * rng.random(n)
    if rng.integers(3) == 0:
        t = np.sort(t)
    if n > 3 and rng.integers(8) == 0:  # repeated times
        t[rng.integers(n, size=n // 3)] = t[int(rng.integers(n))]
    period = rng.uniform(0.02, baseline)
    phase = ((t - t0) / period) % 1.0
    signal = (np.sin(2 * np.pi * phase), np.where(phase < rng.uniform(0.05, 0.4), -1.0, 0.0), phase)[
        int(rng.integers(3))
    ]
    noise = rng.uniform(0.01, 1.0)
    y = rng.uniform(-100, 100) + rng.uniform(0.1, 10) * signal + rng.normal(0, noise, n)
    if rng.integers(6) == 0:  # ties among the values, on the magnitude bins' edges too
        y = np.round(y, 1)
    if special == 1:  # constant: NaN
        y = np.full(n, rng.uniform(-100, 100))
    dy = rng.uniform(0.05, 2.0, n) if rng.integers(2) else None
    cast = lambda a: None if a is None else np.asarray(a).astype(dtype)  # noqa: E731
    return cast(t), cast(y), cast(dy), 1.0 / period


def _frequencies(rng, fmax_cycles, planted, dtype):
    """(keyword arguments of the call, the frequencies as searched in float64)."""
    nf = int(rng.integers(1, 41))
    fmax = fmax_cycles * rng.uniform(0.2, 3.0)
    if rng.integers(2):
        f0 = rng.uniform(0, fmax) if rng.integers(4) else 0.0
        df = rng.uniform(1e-4, 1.0) * fmax / nf
        return dict(f0=f0, df=df, nf=nf), f0 + df * np.arange(nf)
    f = rng.uniform(0, fmax, nf)
    if rng.integers(4) == 0:
        f[int(rng.integers(nf))] = 0.0
    if rng.integers(2):
        f[int(rng.integers(nf))] = planted
    f = f.astype(dtype)
    return dict(frequency=f), f.astype(np.float64)


def _check(got, want, dtype, n_freqs):
    assert got.dtype == dtype and got.shape == (n_freqs,)
    np.testing.assert_allclose(got.astype(np.float64), want, rtol=0, atol=TOLERANCE[dtype])


def _pdm_cases(rng, dtype, backend, count=50):
    for _ in range(count):
        t, y, dy, planted = _series(rng, dtype)
        kw, f = _frequencies(rng, planted, planted, dtype)
        bins = int(rng.integers(2, 41)) if rng.integers(20) else int(rng.integers(41, 4097))
        got = ts.pdm(t, y, dy, bins=bins, backend=backend, **kw)
        want = ref_pdm(t, y, dy, f, bins)
        _check(got, want, dtype, f.size)
        # theta is in [0, 1] to rounding: (S - between) / S is -3e-16 where
        # every occupied bin holds one value (within-bin residuals of 0).
        finite = got[~np.isnan(got)]
        assert np.all((finite >= -TOLERANCE[dtype]) & (finite <= 1 + TOLERANCE[dtype]))


def _ce_options(rng):
    phase_bins_, mag_bins = int(rng.integers(1, 31)), int(rng.integers(1, 13))
    overlap = lambda bins: int(rng.integers(bins)) if rng.integers(2) else 0  # noqa: E731
    return dict(phase_bins=phase_bins_, mag_bins=mag_bins, phase_overlap=overlap(phase_bins_),
                mag_overlap=overlap(mag_bins))


def _ce_cases(rng, dtype, backend, count=50):
    for _ in range(count):
        t, y, _dy, planted = _series(rng, dtype)
        kw, f = _frequencies(rng, planted, planted, dtype)
        opts = _ce_options(rng)
        got = ts.conditional_entropy(t, y, backend=backend, **opts, **kw)
        want = ref_ce(t, y, f, *opts.values())
        _check(got, want, dtype, f.size)
        assert np.all(got[~np.isnan(got)] >= -TOLERANCE[dtype])


# Chunks of 50 cases: 20 in float64 and 4 in float32 per statistic, 1,200
# cases each.
CHUNKS = [(cases, dtype, chunk) for cases in ("pdm", "ce") for dtype, n in ((np.float64, 20), (np.float32, 4))
          for chunk in range(n)]


@pytest.mark.parametrize("cases, dtype, chunk", CHUNKS, ids=lambda v: getattr(v, "__name__", v))
def test_random_cases(cases, dtype, chunk, backend, rng):
    (_pdm_cases if cases == "pdm" else _ce_cases)(rng, dtype, backend)


# --------------------------------------------------------------------------
# Particular cases
# --------------------------------------------------------------------------


def test_series_without_spread_give_nan(backend, rng):
    f = rng.uniform(0.01, 3.0, 7)
    constant = np.full(40, rng.uniform(1, 5))
    t = np.sort(rng.uniform(0, 30, 40))
    for y, dy in [(constant, None), (constant, rng.uniform(0.1, 1, 40)), (constant[:1], None)]:
        tt = t[: y.size]
        assert np.isnan(ts.pdm(tt, y, dy, frequency=f, backend=backend)).all()
        assert np.isnan(ts.conditional_entropy(tt, y, frequency=f, backend=backend)).all()
    # In a batch only that series' row is NaN.
    y = rng.normal(0, 1, 40)
    got = ts.pdm_batch([t, t, t[:1]], [y, constant, y[:1]], frequency=f, backend=backend)
    assert np.isfinite(got[0]).all() and np.isnan(got[1:]).all()
    got = ts.conditional_entropy_batch([t, t], [constant, y], frequency=f, backend=backend)
    assert np.isnan(got[0]).all() and np.isfinite(got[1]).all()


def test_zero_frequency_folds_everything_into_one_bin(backend, rng):
    t = rng.uniform(-50, 50, 300)
    y = rng.normal(3, 2, 300)
    dy = rng.uniform(0.5, 2, 300)
    # PDM: one bin holds every sample, whose mean is the overall mean: theta 1.
    np.testing.assert_allclose(ts.pdm(t, y, dy, frequency=[0.0], backend=backend), [1.0], rtol=0, atol=1e-12)
    # CE without overlaps: the entropy of the magnitude histogram.
    m = np.minimum(((y - y.min()) / (y.max() - y.min()) * 7).astype(int), 6)
    p = np.bincount(m) / m.size
    p = p[p > 0]
    got = ts.conditional_entropy(t, y, frequency=[0.0, 0.0], mag_bins=7, backend=backend)
    np.testing.assert_allclose(got, [-np.sum(p * np.log(p))] * 2, rtol=0, atol=1e-12)
    # And the references, with overlaps.
    got = ts.conditional_entropy(t, y, f0=0.0, df=0.5, nf=3, phase_bins=4, phase_overlap=2, mag_overlap=3,
                                 backend=backend)
    np.testing.assert_allclose(got, ref_ce(t, y, np.array([0.0, 0.5, 1.0]), 4, 5, 2, 3), rtol=0, atol=1e-10)


def _ragged(rng, nseries, dtype):
    series = []
    for s in range(nseries):
        n = int(rng.integers(1, 200))
        t = rng.uniform(-10, 40, n)
        y = np.sin(2 * np.pi * t / (1.0 + 0.3 * s)) + rng.normal(0, 0.3, n)
        dy = rng.uniform(0.2, 1.0, n)
        series.append(tuple(a.astype(dtype) for a in (t, y, dy)))
    return [[s[i] for s in series] for i in range(3)]


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("grid", [False, True])
def test_batches_equal_single_calls(dtype, grid, backend, rng):
    t, y, dy = _ragged(rng, 11, dtype)
    freqs = dict(f0=0.05, df=0.013, nf=57) if grid else dict(frequency=rng.uniform(0, 2, 57))
    offsets = np.concatenate([[0], np.cumsum([len(s) for s in t])])
    flat = lambda series: np.concatenate(series)  # noqa: E731
    ce = dict(phase_bins=12, mag_bins=6, phase_overlap=1, mag_overlap=2)
    for with_dy in (True, False):
        d = dy if with_dy else None
        by_list = ts.pdm_batch(t, y, d, bins=13, backend=backend, **freqs)
        by_offsets = ts.pdm_batch(flat(t), flat(y), None if d is None else flat(d), offsets=offsets, bins=13,
                                  backend=backend, **freqs)
        assert by_list.shape == (11, 57) and by_list.dtype == dtype
        np.testing.assert_array_equal(by_list, by_offsets)
        for s in range(11):
            one = ts.pdm(t[s], y[s], None if d is None else d[s], bins=13, backend=backend, **freqs)
            np.testing.assert_array_equal(by_list[s], one, err_msg=f"series {s}")
    by_list = ts.conditional_entropy_batch(t, y, backend=backend, **ce, **freqs)
    by_offsets = ts.conditional_entropy_batch(flat(t), flat(y), offsets=offsets, backend=backend, **ce, **freqs)
    assert by_list.shape == (11, 57) and by_list.dtype == dtype
    np.testing.assert_array_equal(by_list, by_offsets)
    for s in range(11):
        one = ts.conditional_entropy(t[s], y[s], backend=backend, **ce, **freqs)
        np.testing.assert_array_equal(by_list[s], one, err_msg=f"series {s}")


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_uniform_grid_equals_its_array(dtype, backend, rng):
    t = rng.uniform(0, 80, 500).astype(dtype)
    y = (np.sin(2 * np.pi * t / 2.3) + rng.normal(0, 0.5, 500)).astype(dtype)
    dy = rng.uniform(0.3, 1.0, 500).astype(dtype)
    if dtype == np.float64:
        f0, df, nf = rng.uniform(0, 0.1), rng.uniform(1e-4, 1e-3), 2000
    else:  # a grid's frequencies are float64; an array's are float32: a grid exact in float32
        f0, df, nf = 0.25, 2.0**-10, 2000
    f = f0 + df * np.arange(nf)
    np.testing.assert_array_equal(ts.pdm(t, y, dy, f0=f0, df=df, nf=nf, backend=backend),
                                  ts.pdm(t, y, dy, frequency=f, backend=backend))
    np.testing.assert_array_equal(ts.conditional_entropy(t, y, f0=f0, df=df, nf=nf, mag_overlap=1, backend=backend),
                                  ts.conditional_entropy(t, y, frequency=f, mag_overlap=1, backend=backend))


def test_empty_batch_checks_the_frequencies_and_options():
    assert ts.pdm_batch([], [], frequency=[0.5, 1.0]).shape == (0, 2)
    got = ts.conditional_entropy_batch(np.empty(0, np.float32), np.empty(0, np.float32), offsets=[0], f0=0, df=1,
                                       nf=3)
    assert got.shape == (0, 3) and got.dtype == np.float32
    with pytest.raises(ValueError, match="negative"):
        ts.pdm_batch([], [], frequency=[-1.0])
    with pytest.raises(ValueError, match="bins = 1"):
        ts.pdm_batch([], [], frequency=[1.0], bins=1)


def test_planted_period_is_found(backend, rng):
    period, baseline = 3.7, 200.0
    t = np.sort(rng.uniform(0, baseline, 500))
    phase = (t / period) % 1.0
    y = 10.0 - 1.0 * (phase < 0.15) + 0.5 * np.sin(2 * np.pi * phase) + rng.normal(0, 0.1, t.size)
    dy = np.full(t.size, 0.1)
    # From above half the frequency (PDM and CE are as low at twice the period).
    f0, df, nf = 0.6 / period, 1e-4, 15_000
    f = f0 + df * np.arange(nf)
    theta = ts.pdm(t, y, dy, f0=f0, df=df, nf=nf, backend=backend)
    h = ts.conditional_entropy(t, y, f0=f0, df=df, nf=nf, backend=backend)
    for values in (theta, h):
        best = f[np.argmin(values)]
        assert abs(best - 1.0 / period) < 0.2 / baseline, best
        assert np.min(values) < 0.5 * np.median(values)
    assert np.min(theta) < 0.35  # 0.23: the noise, and the box and sine within each of 10 bins


def test_scalar_dy_and_dtypes(rng):
    t = rng.uniform(0, 10, 50)
    y = rng.normal(0, 1, 50)
    f = [0.3, 0.7]
    same = ts.pdm(t, y, np.full(50, 0.3), frequency=f, backend="cpu")
    np.testing.assert_allclose(ts.pdm(t, y, 0.3, frequency=f, backend="cpu"), same, rtol=0, atol=1e-15)
    # Weights of one value cancel.
    np.testing.assert_allclose(ts.pdm(t, y, frequency=f, backend="cpu"), same, rtol=0, atol=1e-13)
    assert ts.pdm(t.astype(np.float32), y.astype(np.float32), frequency=f).dtype == np.float32
    assert ts.pdm(t.astype(np.float32), y, frequency=f).dtype == np.float64
    assert ts.conditional_entropy(np.arange(50), np.arange(50) % 7, frequency=f).dtype == np.float64
    assert ts.pdm(t, y, frequency=0.3).shape == (1,)


def test_bad_input():
    t = np.linspace(0, 10, 20)
    y = np.sin(t)
    f = [0.1, 0.5]
    nan_at = lambda a, k: np.where(np.arange(a.size) == k, np.nan, a)  # noqa: E731
    value_errors = [
        (lambda: ts.pdm([], [], frequency=f), "t is empty"),
        (lambda: ts.conditional_entropy([], [], frequency=f), "t is empty"),
        (lambda: ts.pdm(nan_at(t, 3), y, frequency=f), r"t\[3\] = NaN is not finite"),
        (lambda: ts.conditional_entropy(t, nan_at(y, 4), frequency=f), r"y\[4\] = NaN is not finite"),
        (lambda: ts.pdm(t, y, nan_at(np.ones(20), 5), frequency=f), r"dy\[5\] = NaN is not finite"),
        (lambda: ts.pdm(t, y, np.where(t > 5, 0.0, 1.0), frequency=f), r"dy\[10\] = 0 is not positive"),
        (lambda: ts.pdm(t, y, -1.0, frequency=f), r"dy\[0\] = -1 is not positive"),
        (lambda: ts.pdm(t, y, frequency=[0.5, -0.1]), r"frequency\[1\] = -0.1 is negative"),
        (lambda: ts.conditional_entropy(t, y, frequency=[np.inf]), "not finite"),
        (lambda: ts.pdm(t, y, frequency=[]), "no frequencies"),
        (lambda: ts.pdm(t, y, f0=-1.0, df=0.1, nf=3), "negative"),
        (lambda: ts.conditional_entropy(t, y, f0=1.0, df=0.0, nf=3), "df = 0 must be positive"),
        (lambda: ts.pdm(t, y, f0=1.0, df=0.1, nf=0), "nf must be > 0"),
        (lambda: ts.pdm(t, y, frequency=f, f0=1.0, df=0.1, nf=3), "not both"),
        (lambda: ts.pdm(t, y), "pass frequency"),
        (lambda: ts.conditional_entropy(t, y, f0=1.0, nf=3), "pass frequency"),
        (lambda: ts.pdm(t, y, frequency=np.ones((2, 2))), "1-D"),
        (lambda: ts.pdm(t, y[:19], frequency=f), "one length"),
        (lambda: ts.pdm(t, y, np.ones(19), frequency=f), "one length"),
        (lambda: ts.conditional_entropy(np.ones((4, 5)), np.ones((4, 5)), frequency=f), "1-D"),
        (lambda: ts.pdm(t, y, frequency=f, bins=1), "bins = 1 is out of range: PDM takes 2 to 4096"),
        (lambda: ts.pdm(t, y, frequency=f, bins=4097), "bins = 4097 is out of range"),
        (lambda: ts.pdm(t, y, frequency=f, bins=-2), "bins = -2 is out of range"),
        (lambda: ts.conditional_entropy(t, y, frequency=f, phase_bins=0), "at least 1"),
        (lambda: ts.conditional_entropy(t, y, frequency=f, mag_bins=0), "at least 1"),
        (lambda: ts.conditional_entropy(t, y, frequency=f, phase_bins=300, mag_bins=300), "exceeds 65536 cells"),
        (lambda: ts.conditional_entropy(t, y, frequency=f, phase_overlap=10), "must be below"),
        (lambda: ts.conditional_entropy(t, y, frequency=f, mag_bins=3, mag_overlap=3), "must be below"),
        (lambda: ts.conditional_entropy(t, y, frequency=f, mag_overlap=-1), "mag_overlap = -1 is out of range"),
        (lambda: ts.pdm(t, y, frequency=f, backend="tpu"), "backend"),
        # Batches.
        (lambda: ts.pdm_batch(t, y, frequency=f), "need offsets"),
        (lambda: ts.pdm_batch([t], [y], frequency=f, offsets=[0, 20]), "not both"),
        (lambda: ts.pdm_batch([t, t], [y, y[:5]], frequency=f), "same lengths"),
        (lambda: ts.pdm_batch([t], [y], [y, y], frequency=f), "dy must be a list"),
        (lambda: ts.conditional_entropy_batch(t, y, offsets=[0, 5], frequency=f), "end at the sample count 20"),
        (lambda: ts.conditional_entropy_batch(t, y, offsets=[0, 5, 5, 20], frequency=f), "series 1 is empty"),
        (lambda: ts.pdm_batch(t, y[:19], offsets=[0, 20], frequency=f), "one length"),
        (lambda: ts.pdm_batch(t, y, offsets=[0.0, 20.0], frequency=f), "integers"),
        (lambda: ts.pdm_batch([t, t], [y, nan_at(y, 2)], frequency=f), r"series 1: y\[2\] = NaN"),
        (lambda: ts.pdm_batch(t, y, np.where(t > 6, 0.0, 1.0), offsets=[0, 10, 20], frequency=f),
         r"series 1: dy\[2\] = 0 is not positive"),
        (lambda: ts.conditional_entropy_batch([t], [y], frequency=f, mag_bins=2, mag_overlap=2), "must be below"),
    ]
    for call, message in value_errors:
        with pytest.raises(ValueError, match=message):
            call()
    type_errors = [
        (lambda: ts.pdm(t, y, frequency=f, bins=2.5), "bins must be an integer, not float"),
        (lambda: ts.pdm(t, y, frequency=f, bins=True), "bins must be an integer, not a bool"),
        (lambda: ts.conditional_entropy(t, y, frequency=f, phase_bins="10"), "phase_bins must be an integer"),
        (lambda: ts.pdm(t, y, f0=0.1, df=0.1, nf=2.5), "nf must be an integer"),
    ]
    for call, message in type_errors:
        with pytest.raises(TypeError, match=message):
            call()


def test_units_are_type_errors():
    u = pytest.importorskip("astropy.units")
    t = np.linspace(0, 10, 20)
    with pytest.raises(TypeError, match="units"):
        ts.pdm(t * u.day, np.sin(t), frequency=[0.1])
    with pytest.raises(TypeError, match="units"):
        ts.conditional_entropy(t, np.sin(t), frequency=[0.1] / u.day)


class _StandInDeviceArray:
    """A device array as kernpack sees one (the CUDA array interface, and
    Numba's ``copy_to_host``), over host memory: the host-copy path of the
    phase-folding functions runs without a GPU. kernpack reads only its
    interface here, never its pointer."""

    __module__ = "numba.cuda.stand_in"

    def __init__(self, values):
        self.values = np.ascontiguousarray(values)
        self.copies = 0

    @property
    def __cuda_array_interface__(self):
        v = self.values
        return dict(shape=v.shape, typestr=v.dtype.str, data=(v.ctypes.data, True), version=3, strides=None)

    def copy_to_host(self):
        self.copies += 1
        return self.values.copy()


def test_device_arrays_are_copied_to_the_host(rng):
    t = rng.uniform(0, 20, 100)
    y = np.sin(t) + rng.normal(0, 0.2, 100)
    f = np.linspace(0.05, 1.0, 30)
    dt, dy_, df_ = _StandInDeviceArray(t), _StandInDeviceArray(y), _StandInDeviceArray(f)
    np.testing.assert_array_equal(ts.pdm(dt, dy_, frequency=df_, backend="cpu"),
                                  ts.pdm(t, y, frequency=f, backend="cpu"))
    assert dt.copies == dy_.copies == df_.copies == 1
    np.testing.assert_array_equal(
        ts.conditional_entropy_batch([dt, _StandInDeviceArray(t[:40])], [dy_, _StandInDeviceArray(y[:40])],
                                     frequency=f, backend="cpu"),
        ts.conditional_entropy_batch([t, t[:40]], [y, y[:40]], frequency=f, backend="cpu"))


# --------------------------------------------------------------------------
# Best peaks
# --------------------------------------------------------------------------


def _peak_batch(rng, dtype):
    """Lists (t, y, dy) of 1 to 12 series: planted periods, some short (few
    samples: runs of equal values over the frequencies), some quantised,
    some constant (no peaks)."""
    series = []
    for _ in range(int(rng.integers(1, 13))):
        n = int(rng.integers(1, 6)) if rng.integers(4) == 0 else int(rng.integers(6, 150))
        t = rng.uniform(0, rng.uniform(5, 60), n)
        y = np.sin(2 * np.pi * t * rng.uniform(0.1, 2.0)) + rng.normal(0, rng.uniform(0.05, 1.0), n)
        if rng.integers(4) == 0:
            y = np.round(y)
        if rng.integers(6) == 0:
            y = np.full(n, 2.0)
        dy = rng.uniform(0.1, 1.0, n)
        series.append(tuple(a.astype(dtype) for a in (t, y, dy)))
    return [[s[i] for s in series] for i in range(3)]


def _peak_frequencies(rng, dtype):
    """(keyword arguments, the frequencies as searched in float64): a grid,
    or an array, sometimes with 0 and repeated frequencies (equal values)."""
    nf = int(rng.integers(1, 300))
    if rng.integers(2):
        f0, df = (0.0 if rng.integers(3) == 0 else rng.uniform(0, 0.5)), rng.uniform(1e-3, 2e-2)
        return dict(f0=f0, df=df, nf=nf), f0 + df * np.arange(nf)
    f = rng.uniform(0, 3, nf)
    if rng.integers(2):
        f = np.sort(f)
    if nf > 3 and rng.integers(2):
        f[rng.integers(nf, size=nf // 4)] = f[int(rng.integers(nf))]
        f[int(rng.integers(nf))] = 0.0
    f = f.astype(dtype)
    return dict(frequency=f), f.astype(np.float64)


@pytest.mark.parametrize("statistic", ["pdm", "ce"])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_peaks_follow_their_definition(statistic, dtype, backend, rng):
    for _ in range(40):
        t, y, dy = _peak_batch(rng, dtype)
        kw, searched = _peak_frequencies(rng, dtype)
        k = int(rng.integers(1, 8)) if rng.integers(4) else int(rng.integers(8, _native.MAX_PEAKS + 1))
        separation = (0.0, float(rng.uniform(0, 0.05)), float(rng.uniform(0, 1)))[int(rng.integers(3))]
        if statistic == "pdm":
            bins = int(rng.integers(2, 20))
            call = lambda **more: ts.pdm_batch(t, y, dy, bins=bins, backend=backend, **kw, **more)  # noqa: E731
        else:
            opts = _ce_options(rng)
            call = lambda **more: ts.conditional_entropy_batch(  # noqa: E731
                t, y, backend=backend, **opts, **kw, **more)
        values = call()
        got = call(peaks=k, separation=separation)
        assert isinstance(got, ts.FoldPeaks)
        assert got.index.shape == got.value.shape == got.frequency.shape == (len(t), k)
        assert (got.index.dtype, got.value.dtype, got.frequency.dtype) == (np.int64, np.float64, np.float64)
        for s, row in enumerate(values):
            want = ref_peaks(row, searched, k, separation)
            m = len(want)
            np.testing.assert_array_equal(got.index[s], want + [-1] * (k - m), err_msg=f"series {s}")
            np.testing.assert_array_equal(got.value[s, :m], row[want].astype(np.float64))
            np.testing.assert_array_equal(got.frequency[s, :m], searched[want])
            assert np.isnan(got.value[s, m:]).all() and np.isnan(got.frequency[s, m:]).all()
            if np.isnan(row).all():  # no spread: no peaks
                assert m == 0
            elif m:  # the best peak is the first lowest value
                assert want[0] == np.nanargmin(row)


def test_best_peak_is_the_first_lowest_value(backend, rng):
    """Rank 1 is the first of the lowest values, also among equal ones
    (repeated frequencies, a few samples: runs of equal values), as the
    Dask tables' best frequency was before the peaks."""
    t = [rng.uniform(0, 10, n) for n in (3, 4, 40, 40)]
    y = [rng.normal(0, 1, a.size) for a in t]
    y[3] = np.full(40, 1.5)
    f = np.array([0.7, 0.0, 0.35, 0.35, 0.7, 1.9, 0.35, 0.7])
    for call in (lambda **kw: ts.pdm_batch(t, y, frequency=f, backend=backend, **kw),
                 lambda **kw: ts.conditional_entropy_batch(t, y, frequency=f, backend=backend, **kw),
                 lambda **kw: ts.pdm_batch(t, y, f0=0.0, df=1e-3, nf=500, backend=backend, **kw)):
        values = call()
        best = call(peaks=1)
        first_lowest = np.argmin(np.where(np.isnan(values), np.inf, values), axis=1)
        found = ~np.isnan(values).all(axis=1)
        np.testing.assert_array_equal(best.index[:, 0], np.where(found, first_lowest, -1))
        np.testing.assert_array_equal(best.value[:, 0], np.where(found, values[np.arange(4), first_lowest], np.nan))


def test_peaks_of_inputs_as_the_batches_take_them(rng):
    t, y, dy = _ragged(rng, 5, np.float32)
    offsets = np.concatenate([[0], np.cumsum([len(s) for s in t])])
    flat = np.concatenate
    by_list = ts.pdm_batch(t, y, dy, f0=0.05, df=0.01, nf=200, peaks=4, separation=0.05)
    by_offsets = ts.pdm_batch(flat(t), flat(y), flat(dy), offsets=offsets, f0=0.05, df=0.01, nf=200, peaks=4,
                              separation=0.05)
    for a, b in zip(by_list, by_offsets):
        np.testing.assert_array_equal(a, b)
    # Frequencies as searched: a grid's in float64, an array's in the series' dtype.
    index = by_list.index
    np.testing.assert_array_equal(by_list.frequency, np.where(index >= 0, 0.05 + 0.01 * index, np.nan))
    f = np.linspace(0.05, 2.0, 200)
    got = ts.conditional_entropy_batch(t, y, frequency=f, peaks=3)
    searched = f.astype(np.float32).astype(np.float64)
    np.testing.assert_array_equal(got.frequency, np.where(got.index >= 0, searched[got.index], np.nan))
    # Device arrays are copied to the host first, as for the whole statistic.
    got = ts.conditional_entropy_batch([_StandInDeviceArray(a) for a in t], [_StandInDeviceArray(a) for a in y],
                                       frequency=_StandInDeviceArray(f), peaks=3, backend="cpu")
    np.testing.assert_array_equal(got.index, ts.conditional_entropy_batch(t, y, frequency=f, peaks=3).index)
    # An empty batch: the frequencies and options checked, no rows.
    got = ts.pdm_batch([], [], frequency=[0.5, 1.0], peaks=3)
    assert got.index.shape == got.value.shape == got.frequency.shape == (0, 3)
    assert got.index.dtype == np.int64 and got.value.dtype == np.float64
    with pytest.raises(ValueError, match="negative"):
        ts.conditional_entropy_batch([], [], frequency=[-1.0], peaks=2)


def test_bad_peak_arguments():
    t = np.linspace(0, 10, 20)
    y = np.sin(t)
    f = [0.1, 0.5]
    ctx = kernpack._context.context("cpu")

    def native(offsets, peaks):
        return _native.phase_fold(ctx, t, y, None, offsets, np.asarray(f), ("pdm", (10,)), peaks)

    value_errors = [
        (lambda: ts.pdm_batch([t], [y], frequency=f, peaks=0), "peaks = 0 is out of range: 1 to 256"),
        (lambda: ts.pdm_batch([t], [y], frequency=f, peaks=257), "peaks = 257 is out of range"),
        (lambda: ts.conditional_entropy_batch([t], [y], frequency=f, peaks=-1), "peaks = -1 is out of range"),
        (lambda: ts.pdm_batch([t], [y], frequency=f, peaks=2, separation=-0.1), "separation = -0.1 must be finite"),
        (lambda: ts.pdm_batch([t], [y], frequency=f, peaks=2, separation=np.nan), "separation = nan must be"),
        (lambda: ts.conditional_entropy_batch([t], [y], frequency=f, peaks=2, separation=np.inf), "separation = inf"),
        (lambda: ts.pdm_batch([t], [y], frequency=f, separation=0.1), "separation applies to peaks"),
        (lambda: ts.pdm_batch([], [], frequency=f, peaks=0), "peaks = 0"),
        # The native layer checks them too, with kernpack's messages.
        (lambda: native(np.array([0, 20], np.uintp), (0, 0.0)), "k = 0 peaks per series is out of range"),
        (lambda: native(np.array([0, 20], np.uintp), (1, -1.0)), "separation = -1 must be finite"),
        (lambda: native(None, (1, 0.0)), "peaks are taken of a batch"),
    ]
    for call, message in value_errors:
        with pytest.raises(ValueError, match=message):
            call()
    type_errors = [
        (lambda: ts.pdm_batch([t], [y], frequency=f, peaks=2.0), "peaks must be an integer"),
        (lambda: ts.pdm_batch([t], [y], frequency=f, peaks=True), "not a bool"),
        (lambda: ts.conditional_entropy_batch([t], [y], frequency=f, peaks=2, separation="wide"),
         "separation must be a number"),
    ]
    for call, message in type_errors:
        with pytest.raises(TypeError, match=message):
            call()


# --------------------------------------------------------------------------
# GPU only: skipped without one, failures with KERNPACK_REQUIRE_GPU=1
# --------------------------------------------------------------------------


@pytest.fixture
def gpu():
    if kernpack.device_count() == 0:
        if REQUIRE_GPU:
            pytest.fail("KERNPACK_REQUIRE_GPU=1 but no GPU is visible")
        pytest.skip("no GPU")
    return "gpu"


def test_gpu_gives_the_cpu_bits(gpu, rng):
    t, y, dy = _ragged(rng, 40, np.float64)
    f = dict(f0=0.01, df=0.003, nf=3000)
    for opts in (dict(bins=10), dict(bins=300)):
        np.testing.assert_array_equal(ts.pdm_batch(t, y, dy, backend=gpu, **opts, **f),
                                      ts.pdm_batch(t, y, dy, backend="cpu", **opts, **f))
    for opts in (dict(), dict(phase_bins=64, mag_bins=16, phase_overlap=3, mag_overlap=2)):
        np.testing.assert_array_equal(ts.conditional_entropy_batch(t, y, backend=gpu, **opts, **f),
                                      ts.conditional_entropy_batch(t, y, backend="cpu", **opts, **f))


@pytest.mark.parametrize("separation", [0.0, 0.02])
def test_gpu_peaks_are_the_cpu_peaks(gpu, separation, rng):
    t, y, dy = _ragged(rng, 40, np.float32)
    t[3], y[3], dy[3] = t[3][:2], np.full(2, y[3][0]), dy[3][:2]  # no spread: no peaks
    f = dict(f0=0.01, df=0.003, nf=3000)
    for call in (lambda **kw: ts.pdm_batch(t, y, dy, bins=17, **f, **kw),
                 lambda **kw: ts.conditional_entropy_batch(t, y, phase_overlap=2, **f, **kw)):
        got = call(peaks=9, separation=separation, backend=gpu)
        for a, b in zip(got, call(peaks=9, separation=separation, backend="cpu")):
            np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("library", ["cupy", "torch"])
def test_cupy_and_torch_arrays(gpu, library, rng):
    lib = need_gpu_module(library)  # skips (fails with KERNPACK_REQUIRE_GPU=1) without it
    to_device = (lambda a: lib.asarray(a)) if library == "cupy" else (lambda a: lib.as_tensor(a, device="cuda"))
    t = rng.uniform(0, 20, 300)
    y = np.sin(3 * t) + rng.normal(0, 0.3, 300)
    f = np.linspace(0.1, 2.0, 500)
    got = ts.pdm(to_device(t), to_device(y), frequency=to_device(f))
    assert isinstance(got, np.ndarray)
    np.testing.assert_array_equal(got, ts.pdm(t, y, frequency=f, backend="cpu"))
    got = ts.conditional_entropy_batch([to_device(t), to_device(t[:100])], [to_device(y), to_device(y[:100])],
                                       f0=0.1, df=0.01, nf=200)
    np.testing.assert_array_equal(got, ts.conditional_entropy_batch([t, t[:100]], [y, y[:100]], f0=0.1, df=0.01,
                                                                    nf=200, backend="cpu"))
