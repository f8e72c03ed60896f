"""kernpack.timeseries.BoxLeastSquares (the box least squares transit search)
against astropy's BoxLeastSquares (its default 'fast' method).

Differential cases: 1,200 random cases (20 x 50 in float64, 4 x 50 in
float32), each one call over 1 to 20 trial periods: a light curve of 50 to
1,500 samples over 5 to 60 time units (offset by -100 to 3,000) with a
planted box-shaped transit (depth 0.5 to 5 noise sigma) and Gaussian noise,
dy or none, 1 to 3 durations, oversample 1 to 15, objective 'likelihood' or
'snr', periods from 1.5 times the longest duration to half the baseline.
float32 cases compare with astropy run on the float32-rounded inputs
(periods and durations included), which is what kernpack searches.

Tolerances, each field's |kernpack - astropy| over the case's largest
|astropy| value of that field; transit_time within one ulp of max |t| in
the dtype (rounding to float32 costs half an ulp; a box one phase bin away
is far more, so it is never taken for rounding: seen, equal in float64).
float64 1e-9. Both search the same phase bins and boxes; astropy sums the
median-centred values in float64 histograms and takes a box's sums as
differences of prefix sums (rounding ~ N eps of the series' total), kernpack
centres on the weighted mean and sums in exact fixed point (2^-61 of the
total); a depth is a difference of two means of such sums, so they agree to
~1e-13 of the values' scale here (seen: 8e-14).
float32 1e-6: the same search in float64 on the same values, each result
rounded once to float32 (6e-8 of its value; seen: 6e-8).

Ties: two different boxes (phase, duration) can hold exactly the same
samples (a box over the copies of the first phase bins that astropy appends
past the period, and the box at phase zero; or a box shifted by one bin
where no sample enters or leaves). kernpack takes the first such box in
astropy's search order (its sums are exact, so they tie exactly); astropy
takes whichever its prefix-sum rounding makes larger by ~1e-16. Where the
two results name different boxes, the case passes only if the power still
agrees and the box kernpack reports, evaluated directly from the binning's
definition in NumPy here (which samples fall in its bins, their weighted
means), has an objective equal to astropy's maximum within the tolerance,
and kernpack's fields are that box's. Such periods are counted and must
stay under 2% of those searched; seen: 38 of 12,614 (0.3%), 31 of them
the box at phase zero against its copy past the period, the others boxes
a few bins apart holding the same samples in sparse series (< 150 samples
over thousands of bins).
"""
from __future__ import annotations

import math
import os
import subprocess
import sys

import numpy as np
import pytest

astropy_timeseries = pytest.importorskip("astropy.timeseries")
AstropyBLS = astropy_timeseries.BoxLeastSquares

from kernpack.timeseries import BlsPeaks, BoxLeastSquares, BoxLeastSquaresResults, bls_batch  # noqa: E402
from conftest import ref_peaks  # noqa: E402

FIELDS = ("power", "depth", "depth_err", "duration", "transit_time", "depth_snr", "log_likelihood")
TOLERANCE = {np.float64: 1e-9, np.float32: 1e-6}


def _case(rng, dtype=np.float64):
    n = int(rng.integers(50, 1500))
    baseline = rng.uniform(5.0, 60.0)
    t0 = rng.uniform(-100.0, 3000.0)
    t = t0 + baseline * rng.random(n)
    shortest = rng.uniform(0.03, 0.3)
    durations = shortest * rng.uniform(1.0, 2.5, int(rng.integers(1, 4)))
    durations[int(rng.integers(durations.size))] = shortest
    lo = 1.5 * durations.max()
    periods = rng.uniform(lo, max(baseline / 2, 1.5 * lo), int(rng.integers(1, 21)))
    period, width = periods[0], durations[int(rng.integers(durations.size))]
    mid = t0 + rng.uniform(0, period)
    sigma = rng.uniform(0.1, 2.0)
    inside = np.abs((t - mid + 0.5 * period) % period - 0.5 * period) < 0.5 * width
    y = rng.uniform(-5, 5) + rng.normal(0, sigma, n) - rng.uniform(0.5, 5.0) * sigma * inside
    dy = sigma * rng.uniform(0.5, 1.5, n) if rng.integers(2) else None
    cast = lambda a: None if a is None else a.astype(dtype)  # noqa: E731
    return dict(
        t=cast(t), y=cast(y), dy=cast(dy), period=cast(periods), duration=cast(durations),
        oversample=int(rng.integers(1, 16)), objective=("likelihood", "snr")[int(rng.integers(2))],
    )


def _round_half_up(x: float) -> int:
    """Rounding half away from zero (C's and Rust's round), for x >= 0."""
    r = math.floor(x)
    return r + 1 if x - r >= 0.5 else r


def _box_at(c, period, duration, transit_time):
    """The fields of the box of `duration` whose mid-transit time is nearest
    `transit_time` at `period`, evaluated from the binning's definition: bins
    of min(duration) / oversample in phase from min(t), sample i in bin
    trunc(phase / bin) + 1, the first `oversample` bins copied past the
    last whole one (replacing the last partial bin), boxes of whole bins.
    Returns (fields, distance of the nearest box's transit time)."""
    t, y = (np.asarray(c[k], np.float64) for k in ("t", "y"))
    w = np.ones_like(y) if c["dy"] is None else np.asarray(c["dy"], np.float64) ** -2.0
    durations, oversample = np.asarray(c["duration"], np.float64), c["oversample"]
    period = float(period)
    width = float(durations.min()) / oversample
    first_copy = math.ceil(period / width)
    n_bins = first_copy + oversample
    t_ref = t.min()
    dt = t - t_ref
    bin_of = np.trunc((dt - period * np.floor(dt / period)) / width).astype(np.int64) + 1
    own = np.where((bin_of < first_copy) | (bin_of == n_bins), bin_of, -1)
    copy = np.where(bin_of <= oversample, first_copy + bin_of - 1, -1)
    best = None
    for d in sorted({_round_half_up(float(k) / width) for k in durations}):
        if abs(d * width - float(duration)) > 1e-6 * float(duration):
            continue
        starts = np.arange(n_bins - d + 1)
        mids = (starts * width + 0.5 * d * width) % period + t_ref
        s = int(np.argmin(np.abs(mids - float(transit_time))))
        gap = abs(mids[s] - float(transit_time))
        if best is None or gap < best[1]:
            best = (s, gap, d)
    assert best is not None, f"duration {duration} is none of the grid's"
    start, gap, d = best
    count = ((own > start) & (own <= start + d)).astype(float) + ((copy > start) & (copy <= start + d))
    w_in, w_out = np.sum(count * w), np.sum(w) - np.sum(count * w)
    wy_in = np.sum(count * w * y)
    depth = (np.sum(w * y) - wy_in) / w_out - wy_in / w_in
    depth_err = math.sqrt(1 / w_in + 1 / w_out)
    ll = 0.5 * w_in * depth**2
    fields = dict(
        power=ll if c["objective"] == "likelihood" else depth / depth_err, depth=depth, depth_err=depth_err,
        duration=d * width, transit_time=mids[start], depth_snr=depth / depth_err, log_likelihood=ll,
    )
    return fields, gap


def _compare(c, backend, tol):
    """Returns the number of periods where the two name different (tied) boxes."""
    got = BoxLeastSquares(c["t"], c["y"], c["dy"]).power(
        c["period"], c["duration"], objective=c["objective"], oversample=c["oversample"], backend=backend
    )
    dtype = c["t"].dtype
    assert got.objective == c["objective"]
    assert all(got[k].dtype == dtype and got[k].shape == c["period"].shape for k in FIELDS)
    np.testing.assert_array_equal(got.period, c["period"])
    f64 = lambda a: None if a is None else np.asarray(a, np.float64)  # noqa: E731
    want = AstropyBLS(f64(c["t"]), f64(c["y"]), f64(c["dy"])).power(
        f64(c["period"]), f64(c["duration"]), objective=c["objective"], oversample=c["oversample"]
    )
    found = np.isfinite(want.power)
    assert np.array_equal(np.isfinite(got.power), found), (got.power, want.power)
    assert np.all(got.power[~found] == -np.inf)
    scale = {k: max(np.max(np.abs(want[k][found]), initial=0.0), 1e-300) for k in FIELDS}
    # transit_time: to one ulp of the times (what rounding the result to the
    # dtype may cost), far below a phase bin, so that a box one bin away is
    # a different box, never a rounding error.
    scale["transit_time"] = float(np.max(np.abs(c["t"])))
    tols = dict.fromkeys(FIELDS, tol)
    tols["transit_time"] = float(np.finfo(dtype).eps)
    err = {k: np.abs(got[k][found].astype(np.float64) - want[k][found]) / scale[k] for k in FIELDS}
    where = {k: v for k, v in c.items() if not isinstance(v, np.ndarray)}
    assert np.all(err["power"] <= tol), (err["power"].max(), where)
    same_box = (err["duration"] <= tol) & (err["transit_time"] <= tols["transit_time"])
    for k in FIELDS:
        assert np.all(err[k][same_box] <= tols[k]), (k, err[k][same_box].max(), where)
    ties = np.flatnonzero(found)[~same_box]
    for p in ties:
        box, gap = _box_at(c, c["period"][p], got.duration[p], got.transit_time[p])
        assert gap <= tols["transit_time"] * scale["transit_time"], ("kernpack's box is off the grid", gap, where)
        assert abs(box["power"] - want.power[p]) <= tol * scale["power"], (box["power"], want.power[p], where)
        for k in FIELDS:
            assert abs(got[k][p] - box[k]) <= tols[k] * scale[k], (k, got[k][p], box[k], where)
    return ties.size, int(found.sum())


_TIES = {"ties": 0, "periods": 0}


@pytest.mark.parametrize("chunk", range(20))
def test_random_cases_float64(chunk, backend, rng):
    """50 cases per chunk, 1,000 in all."""
    for _ in range(50):
        ties, periods = _compare(_case(rng), backend, TOLERANCE[np.float64])
        _TIES["ties"] += ties
        _TIES["periods"] += periods


@pytest.mark.parametrize("chunk", range(4))
def test_random_cases_float32(chunk, backend, rng):
    """50 cases per chunk, 200 in all."""
    for _ in range(50):
        ties, periods = _compare(_case(rng, np.float32), backend, TOLERANCE[np.float32])
        _TIES["ties"] += ties
        _TIES["periods"] += periods


def test_ties_are_rare():
    """Runs after the random cases (file order): tied boxes stay a small
    share of the periods searched, so the fields were compared directly
    almost everywhere."""
    if _TIES["periods"] == 0:
        pytest.skip("the random cases did not run in this session")
    assert _TIES["ties"] <= 0.02 * _TIES["periods"], _TIES


# --------------------------------------------------------------------------
# A planted transit, the helpers, autoperiod
# --------------------------------------------------------------------------


def _planted(rng, n=800, dy=True):
    t = rng.uniform(0, 30, n)
    period, mid, duration = 2.7, 1.3, 0.15
    inside = np.abs((t - mid + 0.5 * period) % period - 0.5 * period) < 0.5 * duration
    y = 1.0 - 0.02 * inside + rng.normal(0, 0.004, n)
    return t, y, (rng.uniform(0.003, 0.006, n) if dy else None), (period, duration, mid)


def test_finds_the_planted_transit(backend, rng):
    t, y, dy, (period, duration, mid) = _planted(rng)
    got = BoxLeastSquares(t, y, dy).autopower([0.1, 0.15, 0.2], backend=backend)
    best = int(np.argmax(got.power))
    assert abs(got.period[best] - period) < 0.01
    assert got.duration[best] == pytest.approx(duration, abs=0.011)
    off = (got.transit_time[best] - mid + 0.5 * period) % period - 0.5 * period
    assert abs(off) < 0.02
    assert got.depth[best] == pytest.approx(0.02, abs=0.002)


@pytest.mark.parametrize("with_dy", [True, False])
def test_helpers_match_astropy(with_dy, rng):
    t, y, dy, (period, duration, mid) = _planted(rng, dy=with_dy)
    ours, theirs = BoxLeastSquares(t, y, dy), AstropyBLS(t, y, dy)
    t_model = np.linspace(-5, 40, 1000)
    for p, d, m in [(period, duration, mid), (period, duration, mid + 0.3), (1.9, 0.4, 12.0), (7.3, 0.05, -2.0)]:
        np.testing.assert_array_equal(ours.transit_mask(t_model, p, d, m), theirs.transit_mask(t_model, p, d, m))
        np.testing.assert_allclose(ours.model(t_model, p, d, m), theirs.model(t_model, p, d, m), rtol=1e-12)
        got, want = ours.compute_stats(p, d, m), theirs.compute_stats(p, d, m)
        assert set(got) == set(want)
        for key in ("depth", "depth_odd", "depth_even", "depth_half", "depth_phased"):
            np.testing.assert_allclose(got[key], want[key], rtol=1e-10, atol=1e-14, err_msg=key)
        np.testing.assert_allclose(got["transit_times"], want["transit_times"], rtol=1e-14)
        np.testing.assert_array_equal(got["per_transit_count"], want["per_transit_count"])
        np.testing.assert_allclose(got["per_transit_log_likelihood"], want["per_transit_log_likelihood"],
                                   rtol=1e-9, atol=1e-9 * np.max(np.abs(want["per_transit_log_likelihood"])))
        # The sinusoid: kernpack solves by lstsq, astropy by the normal equations.
        np.testing.assert_allclose(got["harmonic_amplitude"], want["harmonic_amplitude"], rtol=1e-9)
        np.testing.assert_allclose(got["harmonic_delta_log_likelihood"], want["harmonic_delta_log_likelihood"],
                                   rtol=1e-9)


def test_stats_agree_with_the_search(rng):
    """The per-transit log likelihoods sum to the search's log likelihood at
    the box it found, and the depth is the search's."""
    t, y, dy, (period, duration, mid) = _planted(rng)
    bls = BoxLeastSquares(t, y, dy)
    found = bls.power(period, duration, oversample=200)
    stats = bls.compute_stats(period, found.duration[0], found.transit_time[0])
    assert np.sum(stats["per_transit_log_likelihood"]) == pytest.approx(found.log_likelihood[0], rel=1e-9)
    assert stats["depth"][0] == pytest.approx(found.depth[0], rel=1e-9)
    assert stats["depth"][1] == pytest.approx(found.depth_err[0], rel=1e-9)


def test_stats_without_samples_in_transit(rng):
    t = np.sort(rng.uniform(0, 1, 50))
    stats = BoxLeastSquares(t, rng.random(50)).compute_stats(10.0, 0.1, 5.0)
    assert stats["depth"] == (0.0, np.inf)
    assert stats["transit_times"].size == stats["per_transit_count"].size == 0


@pytest.mark.parametrize(
    "kw",
    [
        {},
        dict(minimum_period=0.5),
        dict(maximum_period=4.0),
        dict(minimum_period=0.5, maximum_period=1.5),
        dict(minimum_period=1.5, maximum_period=0.5),
        dict(minimum_n_transit=5, frequency_factor=3.0),
    ],
)
def test_autoperiod_matches_astropy(kw, rng):
    t, y, dy, _ = _planted(rng)
    for duration in (0.16, [0.05, 0.1, 0.2]):
        got = BoxLeastSquares(t, y, dy).autoperiod(duration, **kw)
        want = AstropyBLS(t, y, dy).autoperiod(duration, **kw)
        np.testing.assert_allclose(got, want, rtol=1e-15)


def test_autopower_is_power_on_autoperiod(backend, rng):
    t, y, dy, _ = _planted(rng, n=300)
    bls = BoxLeastSquares(t, y, dy)
    a = bls.autopower(0.2, objective="snr", oversample=5, frequency_factor=4.0, backend=backend)
    b = bls.power(bls.autoperiod(0.2, frequency_factor=4.0), 0.2, "snr", oversample=5, backend=backend)
    for k in ("period",) + FIELDS:
        np.testing.assert_array_equal(a[k], b[k])


def test_results_object(rng):
    t, y, dy, (period, duration, mid) = _planted(rng, n=200)
    r = BoxLeastSquares(t, y, dy).power([2.0, period], duration)
    assert isinstance(r, BoxLeastSquaresResults) and isinstance(r, dict)
    assert list(r) == ["objective", "period"] + list(FIELDS)
    assert r.objective == "likelihood" and r.power is r["power"]
    r.extra = 1
    assert r["extra"] == 1
    del r.extra
    with pytest.raises(AttributeError):
        r.extra
    assert "power" in dir(r) and "depth_snr" in repr(r)


def test_slow_method_runs_astropy(rng):
    t, y, dy, (period, duration, mid) = _planted(rng, n=200)
    got = BoxLeastSquares(t, y, dy).power([2.0, period], duration, method="slow")
    want = AstropyBLS(t, y, dy).power([2.0, period], duration, method="slow")
    for k in ("period",) + FIELDS:
        np.testing.assert_array_equal(got[k], want[k])


def test_float32_in_float32_out(backend, rng):
    t, y, dy, (period, duration, mid) = _planted(rng, n=300)
    r = BoxLeastSquares(t.astype(np.float32), y.astype(np.float32), dy.astype(np.float32)).power(
        [2.0, period], duration, backend=backend)
    assert all(r[k].dtype == np.float32 for k in ("period",) + FIELDS)
    # A float64 array among them: float64.
    r = BoxLeastSquares(t.astype(np.float32), y, dy.astype(np.float32)).power([2.0, period], duration)
    assert r.power.dtype == np.float64


def test_no_box_gives_minus_infinity():
    r = BoxLeastSquares([1.0], [2.0]).power([1.0, 2.0], 0.1)
    np.testing.assert_array_equal(r.power, [-np.inf, -np.inf])
    assert np.all(np.isnan(r.depth)) and np.all(np.isnan(r.transit_time))


def test_scalar_dy_and_signs_as_astropy(rng):
    """A scalar dy is every sample's; periods and durations count by their
    magnitude, as astropy's."""
    t, y, _, (period, duration, mid) = _planted(rng, n=300)
    a = BoxLeastSquares(t, y, 0.01).power([-2.0, period], -duration)
    b = BoxLeastSquares(t, y, np.full_like(t, 0.01)).power([2.0, period], duration)
    for k in ("period",) + FIELDS:
        np.testing.assert_array_equal(a[k], b[k])


# --------------------------------------------------------------------------
# Bad input
# --------------------------------------------------------------------------


def test_bad_input_raises_value_error():
    t = np.linspace(0, 10, 50)
    y = np.sin(t)
    bls = BoxLeastSquares(t, y)
    cases = [
        (lambda: BoxLeastSquares(t.reshape(5, 10), y.reshape(5, 10)), "1-dimensional"),
        (lambda: BoxLeastSquares(t, y[:5]), "broadcast"),
        (lambda: bls.power([1.0], [0.1], objective="chi2"), "objective='chi2' not recognized"),
        (lambda: bls.power([1.0], [0.1], method="cython"), "method='cython' not recognized"),
        (lambda: bls.power([1.0], [0.1], oversample=0), "oversample"),
        (lambda: bls.power([1.0], [0.1], oversample=2.5), "oversample"),
        (lambda: bls.power([1.0], [0.1], oversample="many"), "oversample"),
        (lambda: bls.power([1.0], [1.0]), "must be shorter than the minimum period"),
        (lambda: bls.power([], [0.1]), "period must be 1-dimensional and non-empty"),
        (lambda: bls.power(np.ones((2, 3)), [0.1]), "period must be 1-dimensional"),
        (lambda: bls.power([1.0], []), "duration must be 1-dimensional and non-empty"),
        (lambda: bls.power([1.0, np.nan], [0.1]), r"period\[1\] = NaN"),
        (lambda: bls.power([1.0, np.inf], [0.1]), r"period\[1\] = inf"),
        (lambda: bls.power([1.0, 0.0], [0.1]), "must be shorter than the minimum period"),
        (lambda: bls.power([1.0], [np.nan, 0.1]), "duration"),
        (lambda: bls.power([1e12], [1e-3]), "phase bins"),
        (lambda: bls.power(["a"], [0.1]), "period must be a number"),
        (lambda: BoxLeastSquares(np.where(t > 5, np.nan, t), y).power([1.0], [0.1]), r"t\[25\]"),
        (lambda: BoxLeastSquares(t, np.where(t > 5, np.inf, y)).power([1.0], [0.1]), r"y\[25\]"),
        (lambda: BoxLeastSquares(t, y, np.where(t > 5, 0.0, 1.0)).power([1.0], [0.1]), r"dy\[25\] = 0"),
        (lambda: BoxLeastSquares(t, y, -1.0).power([1.0], [0.1]), r"dy\[0\] = -1"),
        (lambda: BoxLeastSquares([], []).power([1.0], [0.1]), "empty"),
        (lambda: bls.autoperiod(0.1, minimum_n_transit=1), "minimum_n_transit"),
        (lambda: bls.autoperiod(0.1, minimum_period=0.0, maximum_period=2.0), "minimum_period"),
        (lambda: BoxLeastSquares([1.0, 1.0], [1.0, 2.0]).autoperiod(0.1), "baseline"),
        (lambda: bls.model(t, 1.0, 2.0, 0.5), "shorter than the period"),
        (lambda: bls.model(t, [1.0, 2.0], 0.1, 0.5), "period must be a single value"),
        (lambda: bls.transit_mask(t, 1.0, 0.1, np.nan), "transit_time = nan is not finite"),
        (lambda: bls.compute_stats(np.inf, 0.1, 0.0), "period = inf is not finite"),
    ]
    for call, message in cases:
        with pytest.raises(ValueError, match=message):
            call()


def test_units_and_times_are_type_errors():
    u = pytest.importorskip("astropy.units")
    time = pytest.importorskip("astropy.time")
    t, y = np.linspace(0, 10, 50), np.sin(np.linspace(0, 10, 50))
    with pytest.raises(TypeError, match="units"):
        BoxLeastSquares(t * u.day, y)
    with pytest.raises(TypeError, match="astropy Time"):
        BoxLeastSquares(time.Time(58000 + t, format="mjd"), y)
    with pytest.raises(TypeError, match="units"):
        BoxLeastSquares(t, y).power([1.0] * u.day, 0.1)
    with pytest.raises(TypeError, match="units"):
        BoxLeastSquares(t, y).model(t, 1.0, 0.1 * u.day, 0.0)


# --------------------------------------------------------------------------
# Batches
# --------------------------------------------------------------------------


def _batch_series(rng, nseries, dtype):
    series = []
    for s in range(nseries):
        n = int(rng.integers(1, 400))
        t = rng.uniform(-10, 40, n)
        inside = np.abs((t - 0.4 * s + 1.5) % 3.0 - 1.5) < 0.1
        y = rng.normal(0, 1, n) - 2.0 * inside
        dy = rng.uniform(0.5, 2.0, n)
        series.append(tuple(a.astype(dtype) for a in (t, y, dy)))
    return series


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("with_dy", [True, False])
def test_batch_equals_single_calls(dtype, with_dy, backend, rng):
    series = _batch_series(rng, 13, dtype)
    periods, durations = np.linspace(0.7, 9.0, 37), [0.1, 0.2, 0.35]
    kw = dict(objective="snr", oversample=7, backend=backend)
    ts, ys, dys = ([s[i] for s in series] for i in range(3))
    dys = dys if with_dy else None
    by_list = bls_batch(ts, ys, periods, durations, dy=dys, **kw)
    offsets = np.concatenate([[0], np.cumsum([len(s) for s in ts])])
    flat = bls_batch(np.concatenate(ts), np.concatenate(ys), periods, durations,
                     dy=None if dys is None else np.concatenate(dys), offsets=offsets, **kw)
    assert by_list.objective == flat.objective == "snr"
    for k in ("period",) + FIELDS:
        np.testing.assert_array_equal(by_list[k], flat[k])
    for s, (t, y, dy) in enumerate(series):
        one = BoxLeastSquares(t, y, dy if with_dy else None).power(periods, durations, "snr", oversample=7,
                                                                  backend=backend)
        for k in FIELDS:
            assert flat[k].shape == (13, 37) and flat[k].dtype == dtype
            np.testing.assert_array_equal(flat[k][s], one[k], err_msg=f"{k} of series {s}")


def test_empty_batch():
    r = bls_batch([], [], [1.0, 2.0], 0.1)
    assert all(r[k].shape == (0, 2) for k in FIELDS)
    r = bls_batch(np.empty(0), np.empty(0), [1.0, 2.0], 0.1, offsets=[0])
    assert all(r[k].shape == (0, 2) for k in FIELDS)
    with pytest.raises(ValueError, match="shorter"):
        bls_batch([], [], [1.0], 2.0)


def test_batch_bad_input():
    t, y = np.arange(10.0), np.ones(10)
    cases = [
        (lambda: bls_batch(t, y, 1.0, 0.1), "need offsets"),
        (lambda: bls_batch([t], [y], 1.0, 0.1, offsets=[0, 10]), "not both"),
        (lambda: bls_batch([t], [y[:3]], 1.0, 0.1), "same lengths"),
        (lambda: bls_batch([t], [y], 1.0, 0.1, dy=[y, y]), "dy must be a list"),
        (lambda: bls_batch(t, y, 1.0, 0.1, offsets=[0, 5]), "end at the sample count 10"),
        (lambda: bls_batch(t, y, 1.0, 0.1, offsets=[0, 5, 5, 10]), "series 1 is empty"),
        (lambda: bls_batch(t, y, 1.0, 0.1, offsets=[0.0, 10.0]), "integers"),
        (lambda: bls_batch(t, y[:9], 1.0, 0.1, offsets=[0, 10]), "one length"),
        (lambda: bls_batch(t, y, -1.0, 0.1, offsets=[0, 10]), r"period\[0\] = -1"),
        (lambda: bls_batch(t, y, 1.0, 0.1, offsets=[0, 10], objective="bic"), "objective"),
        (lambda: bls_batch(t, y, 1.0, 0.1, dy=np.where(t > 6, 0.0, 1.0), offsets=[0, 5, 10]),
         r"series 1: dy\[2\] = 0"),
    ]
    for call, message in cases:
        with pytest.raises(ValueError, match=message):
            call()


# --------------------------------------------------------------------------
# Best periods (bls_batch with peaks=k)
# --------------------------------------------------------------------------


def _peak_search(rng, dtype):
    """A random batch and grid: (series lists t, y, dy or None, keyword
    arguments of bls_batch). 1 to 8 series, some of 1 to 3 samples (no box
    at some or every period), most with a planted transit; 1 to 300
    periods, increasing, decreasing or shuffled, sometimes with repeats
    (equal powers: runs and ties)."""
    shortest = rng.uniform(0.04, 0.2)
    durations = shortest * rng.uniform(1.0, 2.0, int(rng.integers(1, 4)))
    durations[0] = shortest
    np_ = int(rng.integers(1, 301))
    lo = 1.2 * durations.max()
    periods = lo + np.sort(rng.uniform(0, rng.uniform(0.5, 8.0), np_))
    order = int(rng.integers(4))
    if order == 1:
        periods = periods[::-1].copy()
    elif order == 2:
        periods = rng.permutation(periods)
    if np_ > 3 and rng.integers(3) == 0:  # repeats, apart and side by side
        periods[rng.integers(np_, size=np_ // 4)] = periods[int(rng.integers(np_))]
    t, y, dy = [], [], []
    for _ in range(int(rng.integers(1, 9))):
        n = int(rng.integers(1, 4)) if rng.integers(5) == 0 else int(rng.integers(20, 300))
        ti = rng.uniform(0, rng.uniform(5, 40), n)
        yi = rng.normal(0, 1, n)
        if rng.integers(4):
            period, phase = rng.uniform(periods.min(), periods.max()), rng.uniform(0, 1)
            yi -= 3.0 * (np.abs((ti / period + phase) % 1.0 - 0.5) * period < 0.5 * durations[0])
        t.append(ti.astype(dtype))
        y.append(yi.astype(dtype))
        dy.append(rng.uniform(0.5, 2.0, n).astype(dtype))
    kw = dict(objective=("likelihood", "snr")[int(rng.integers(2))], oversample=int(rng.integers(1, 8)))
    return t, y, (dy if rng.integers(2) else None), periods.astype(dtype), durations.astype(dtype), kw


def _random_peak_options(rng, periods):
    k = int(rng.integers(1, 8)) if rng.integers(4) else int(rng.integers(8, 257))
    span = float(np.ptp(periods.astype(np.float64)))
    separation = (0.0, float(rng.uniform(0, 0.05 * span + 1e-3)), float(rng.uniform(0, span + 1e-3)))
    return k, separation[int(rng.integers(3))]


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_peaks_follow_their_definition(dtype, backend, rng):
    """The peaks' indices are the definition's applied to the float64
    powers of the search (in float32: of the float64 search of the same
    float32 values, which is what the float32 search rounds once), and
    their fields the whole results' rows at those indices, bit for bit."""
    wide = lambda series: None if series is None else [a.astype(np.float64) for a in series]  # noqa: E731
    for _ in range(40):
        t, y, dy, periods, durations, kw = _peak_search(rng, dtype)
        k, separation = _random_peak_options(rng, periods)
        full = bls_batch(t, y, periods, durations, dy=dy, backend=backend, **kw)
        got = bls_batch(t, y, periods, durations, dy=dy, peaks=k, separation=separation, backend=backend, **kw)
        assert isinstance(got, BlsPeaks) and got._fields == ("period",) + FIELDS + ("index",)
        assert all(a.shape == (len(t), k) for a in got)
        assert got.index.dtype == np.int64 and all(a.dtype == dtype for a in got[:-1])
        ranked = full if dtype == np.float64 else bls_batch(
            wide(t), wide(y), periods.astype(np.float64), durations.astype(np.float64), dy=wide(dy),
            backend=backend, **kw)
        for s in range(len(t)):
            want = ref_peaks(ranked.power[s], periods.astype(np.float64), k, separation, higher=True)
            m, where = len(want), f"series {s}, k={k}, separation={separation}"
            np.testing.assert_array_equal(got.index[s], want + [-1] * (k - m), err_msg=where)
            np.testing.assert_array_equal(got.period[s, :m], periods[want], err_msg=where)
            for name in FIELDS:
                np.testing.assert_array_equal(getattr(got, name)[s, :m], full[name][s, want], err_msg=name)
            assert all(np.isnan(a[s, m:]).all() for a in got[:-1])
            if np.isfinite(full.power[s]).any():  # the best peak: the first highest power
                assert m >= 1 and want[0] == np.argmax(ranked.power[s])
            else:  # no box at any period: no peaks
                assert m == 0


def test_best_period_is_the_first_highest_power(backend, rng):
    """Rank 1 is np.argmax of the powers, also among equal ones (repeated
    periods), as kernpack.dask.bls's best period was before the peaks; a
    series without a box at any period has none."""
    t = [rng.uniform(0, 20, n) for n in (1, 2, 60, 200)]
    y = [rng.normal(0, 1, a.size) for a in t]
    periods = np.array([2.0, 3.1, 2.0, 2.0, 3.1, 1.5, 0.9, 2.0, 3.1])
    full = bls_batch(t, y, periods, [0.1, 0.3], backend=backend)
    best = bls_batch(t, y, periods, [0.1, 0.3], peaks=1, backend=backend)
    found = np.isfinite(full.power).any(axis=1)
    assert not found[0] and found[2:].all()
    first_highest = np.argmax(full.power, axis=1)
    np.testing.assert_array_equal(best.index[:, 0], np.where(found, first_highest, -1))
    np.testing.assert_array_equal(best.power[:, 0], np.where(found, full.power[np.arange(4), first_highest], np.nan))
    # Of equal powers side by side (periods 2 and 3) only the first is a peak.
    many = bls_batch(t, y, periods, [0.1, 0.3], peaks=9, backend=backend)
    assert 3 not in many.index and (many.index[2:, 0] >= 0).all()


def test_peaks_of_inputs_as_the_batch_takes_them(rng):
    series = _batch_series(rng, 6, np.float32)
    ts, ys, dys = ([s[i] for s in series] for i in range(3))
    periods, durations = np.linspace(0.7, 9.0, 120), [0.1, 0.2]
    offsets = np.concatenate([[0], np.cumsum([len(s) for s in ts])])
    kw = dict(peaks=5, separation=0.3, objective="snr")
    by_list = bls_batch(ts, ys, periods, durations, dy=dys, **kw)
    flat = bls_batch(np.concatenate(ts), np.concatenate(ys), periods, durations, dy=np.concatenate(dys),
                     offsets=offsets, **kw)
    for a, b in zip(by_list, flat):
        np.testing.assert_array_equal(a, b)
    # Periods as searched: in the series' dtype.
    searched = periods.astype(np.float32)
    np.testing.assert_array_equal(flat.period, np.where(flat.index >= 0, searched[flat.index], np.nan))
    # The peaks are apart by the separation, best first.
    for s in range(6):
        m = int((flat.index[s] >= 0).sum())
        p = flat.period[s, :m].astype(np.float64)
        assert np.all(np.abs(p[:, None] - p[None, :])[~np.eye(m, dtype=bool)] >= 0.3)
        assert np.all(np.diff(flat.power[s, :m]) <= 0)
    # An empty batch: the grid and options checked, no rows.
    for empty in (bls_batch([], [], [1.0, 2.0], 0.1, peaks=3),
                  bls_batch(np.empty(0), np.empty(0), [1.0, 2.0], 0.1, offsets=[0], peaks=3)):
        assert all(a.shape == (0, 3) for a in empty)
        assert empty.index.dtype == np.int64 and empty.power.dtype == np.float64
    with pytest.raises(ValueError, match="shorter"):
        bls_batch([], [], [1.0], 2.0, peaks=2)


def test_bad_peak_arguments():
    from kernpack import _context, _native

    t, y = np.arange(10.0), np.ones(10)
    p, d = np.array([1.0, 2.0]), np.array([0.1])

    def native(peaks):
        ctx = _context.context("cpu")
        return _native.bls_batch(ctx, t, y, None, np.array([0, 10], np.uintp), p, d, ("likelihood", 10), peaks)

    value_errors = [
        (lambda: bls_batch([t], [y], p, d, peaks=0), "peaks = 0 is out of range: 1 to 256"),
        (lambda: bls_batch([t], [y], p, d, peaks=257), "peaks = 257 is out of range"),
        (lambda: bls_batch([t], [y], p, d, peaks=-1), "peaks = -1 is out of range"),
        (lambda: bls_batch([t], [y], p, d, peaks=2, separation=-0.1),
         r"separation = -0.1 must be finite and >= 0 \(a distance between periods\)"),
        (lambda: bls_batch([t], [y], p, d, peaks=2, separation=np.nan), "separation = nan must be"),
        (lambda: bls_batch([t], [y], p, d, peaks=2, separation=np.inf), "separation = inf"),
        (lambda: bls_batch([t], [y], p, d, separation=0.1), "separation applies to peaks"),
        (lambda: bls_batch([], [], p, d, peaks=0), "peaks = 0"),
        # The native layer checks them too, with kernpack's messages.
        (lambda: native((0, 0.0)), "k = 0 peaks per series is out of range"),
        (lambda: native((1, -1.0)), "separation = -1 must be finite"),
    ]
    for call, message in value_errors:
        with pytest.raises(ValueError, match=message):
            call()
    type_errors = [
        (lambda: bls_batch([t], [y], p, d, peaks=2.0), "peaks must be an integer"),
        (lambda: bls_batch([t], [y], p, d, peaks=True), "not a bool"),
        (lambda: bls_batch([t], [y], p, d, peaks=2, separation="wide"), "separation must be a number"),
    ]
    for call, message in type_errors:
        with pytest.raises(TypeError, match=message):
            call()


# --------------------------------------------------------------------------
# astropy's own tests
# --------------------------------------------------------------------------


def test_astropy_suite_with_kernpack_substituted():
    """astropy's own BoxLeastSquares tests, from the installed astropy, with
    kernpack's class substituted (tests/_bls_astropy_substitute.py): the
    default method runs kernpack, method='slow' astropy's brute force (so
    test_fast_method compares kernpack with astropy). Deselected, as
    kernpack refuses astropy units and times: test_input_units,
    test_period_units, test_absolute_times, and the cases of
    test_results_units, test_model and test_compute_stats with units."""
    here = os.path.dirname(os.path.abspath(__file__))
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([here, os.environ.get("PYTHONPATH", "")]))
    run = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "_bls_astropy_substitute",
         "--pyargs", "astropy.timeseries.periodograms.bls.tests.test_bls"],
        env=env, capture_output=True, text=True, cwd="/tmp",
    )
    tail = run.stdout[-3000:] + run.stderr[-2000:]
    assert run.returncode == 0, tail
    assert " passed" in run.stdout and "kernpack substituted" in run.stdout, tail
    assert " failed" not in run.stdout, tail
