"""kernpack.timeseries.LombScargle against astropy's LombScargle(method='chi2').

Differential cases: >= 1,000 random float64 cases (random N, nterms 1..4,
fit_mean and center_data on and off, dy or none, each normalization, random
frequencies from one cycle over the baseline to a few times the mean Nyquist
frequency) and 300 float32 cases.

Tolerances, as max |kernpack - astropy| / max |astropy| over a periodogram:
float64 1e-8: both solve the normal equations in float64 (astropy builds
X^T X directly, kernpack from sums of harmonics by product-to-sum
identities and a Cholesky solve; ~1e-15 apart before the solve), amplified
by the normal matrix's condition number (< ~1e4 with at least 3 samples per
unknown above one cycle per baseline) and by 1 / (1 - p / chi2_ref) <~ 10
for 'model'. float32 2e-3: astropy runs on the same float32 values as
float64; kernpack's CPU backend computes in float64 and rounds the result
(~1e-7), its GPU kernels sum in float32 with float64 totals and solve in
float64 (~1e-6 of each sum, times the condition number: see
tests/lombscargle_chi2.rs).
"""
from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest

astropy_ls = pytest.importorskip("astropy.timeseries").LombScargle

from kernpack.timeseries import LombScargle  # noqa: E402

NORMALIZATIONS = ["standard", "model", "log", "psd"]


def _case(rng, dtype=np.float64):
    nterms = int(rng.integers(1, 5))
    fit_mean, center_data = bool(rng.integers(2)), bool(rng.integers(2))
    unknowns = 2 * nterms + fit_mean
    n = int(rng.integers(3 * unknowns, 250))
    span = rng.uniform(1.0, 300.0)
    t = rng.uniform(-50.0, 2000.0) + span * rng.random(n)
    period = span / rng.uniform(2.0, 40.0)
    phase = 2 * np.pi * t / period
    y = rng.uniform(-5, 5) + np.sin(phase) + 0.4 * np.cos(2 * phase + 1) + rng.normal(0, 0.7, n)
    dy = rng.uniform(0.1, 2.0, n) if rng.integers(2) else None
    freq = rng.uniform(1.0 / span, 2.0 * n / span, int(rng.integers(1, 25)))
    cast = lambda a: None if a is None else a.astype(dtype)  # noqa: E731
    return dict(t=cast(t), y=cast(y), dy=cast(dy), nterms=nterms, fit_mean=fit_mean, center_data=center_data,
                freq=cast(freq))


def _scaled_error(got, want):
    assert got.shape == want.shape
    assert np.all(np.isfinite(got)), got
    return np.max(np.abs(got - want)) / max(np.max(np.abs(want)), np.finfo(float).tiny)


def _compare(c, normalization, backend, tol):
    kw = dict(fit_mean=c["fit_mean"], center_data=c["center_data"], nterms=c["nterms"], normalization=normalization)
    got = LombScargle(c["t"], c["y"], c["dy"], **kw).power(c["freq"], backend=backend)
    assert got.dtype == c["t"].dtype
    f64 = lambda a: None if a is None else a.astype(np.float64)  # noqa: E731
    want = astropy_ls(f64(c["t"]), f64(c["y"]), f64(c["dy"]), **kw).power(f64(c["freq"]), method="chi2")
    err = _scaled_error(got.astype(np.float64), want)
    assert err <= tol, (err, normalization, {k: v for k, v in c.items() if not isinstance(v, np.ndarray)})


@pytest.mark.parametrize("chunk", range(20))
def test_random_cases_float64(chunk, backend, rng):
    """50 cases per chunk, 1,000 in all, each normalization in turn."""
    for i in range(50):
        _compare(_case(rng), NORMALIZATIONS[i % 4], backend, 1e-8)


@pytest.mark.parametrize("chunk", range(6))
def test_random_cases_float32(chunk, backend, rng):
    """50 cases per chunk, 300 in all."""
    for i in range(50):
        _compare(_case(rng, np.float32), NORMALIZATIONS[i % 4], backend, 2e-3)


@pytest.mark.parametrize("nterms", [1, 3])
def test_autopower_matches_astropy(nterms, backend, rng):
    t = 100 * rng.random(300)
    y = np.sin(2 * np.pi * 0.7 * t) + rng.normal(0, 0.5, 300)
    dy = rng.uniform(0.5, 1.5, 300)
    ours = LombScargle(t, y, dy, nterms=nterms)
    theirs = astropy_ls(t, y, dy, nterms=nterms)
    for kw in [{}, dict(minimum_frequency=0.1, maximum_frequency=3.0, samples_per_peak=10)]:
        f, p = ours.autopower(backend=backend, **kw)
        f_ref, p_ref = theirs.autopower(method="chi2", **kw)
        np.testing.assert_allclose(f, f_ref, rtol=1e-15, atol=0)
        # Below one cycle per baseline (astropy's grid starts at 1/10 of one)
        # the sine columns nearly coincide: the normal matrix's condition
        # number grows past 1e10 with nterms > 1, and the two ways of forming
        # it (direct products vs product-to-sum sums) differ by up to ~1e-4
        # of the periodogram's scale there. Above it, 1e-8 as elsewhere.
        resolved = f >= 1.0 / (t.max() - t.min())
        assert _scaled_error(p[resolved], p_ref[resolved]) < 1e-8
        assert _scaled_error(p, p_ref) < 1e-4
        np.testing.assert_allclose(ours.autofrequency(**kw), theirs.autofrequency(**kw), rtol=1e-15)
        assert ours.autofrequency(return_freq_limits=True, **kw) == pytest.approx(
            theirs.autofrequency(return_freq_limits=True, **kw), rel=1e-15)


@pytest.mark.parametrize("fit_mean", [True, False])
@pytest.mark.parametrize("center_data", [True, False])
@pytest.mark.parametrize("with_dy", [True, False])
def test_model_helpers_match_astropy(fit_mean, center_data, with_dy, rng):
    t = 20 * rng.random(80)
    y = 3 + np.sin(2 * np.pi * t) + rng.normal(0, 0.3, 80)
    dy = rng.uniform(0.5, 1.5, 80) if with_dy else None
    kw = dict(fit_mean=fit_mean, center_data=center_data, nterms=2)
    ours, theirs = LombScargle(t, y, dy, **kw), astropy_ls(t, y, dy, **kw)
    t_fit = np.linspace(0, 1, 7)
    np.testing.assert_allclose(ours.offset(), theirs.offset(), rtol=1e-13)
    np.testing.assert_allclose(ours.design_matrix(1.1), theirs.design_matrix(1.1), rtol=1e-13)
    np.testing.assert_allclose(ours.design_matrix(1.1, t_fit), theirs.design_matrix(1.1, t_fit), rtol=1e-13)
    np.testing.assert_allclose(ours.model_parameters(1.1), theirs.model_parameters(1.1), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(ours.model(t_fit, 1.1), theirs.model(t_fit, 1.1), rtol=1e-10, atol=1e-12)


def test_output_shape_follows_frequency(rng):
    t, y = rng.random(50), rng.random(50)
    ls = LombScargle(t, y, nterms=2)
    assert ls.power(1.5).shape == ()
    assert ls.power(np.ones((2, 3))).shape == (2, 3)
    assert ls.power(np.array([])).shape == (0,)


def test_errors_match_astropy_shape():
    t, y = np.arange(10.0), np.sin(np.arange(10.0))
    with pytest.raises(ValueError, match="normalization='bad' not recognized"):
        LombScargle(t, y, nterms=2).power([0.1], normalization="bad")
    with pytest.raises(ValueError, match="invalid method: nope"):
        LombScargle(t, y).power([0.1], method="nope")
    with pytest.raises(ValueError, match="1-dimensional"):
        LombScargle(t.reshape(2, 5), y.reshape(2, 5))
    with pytest.raises(ValueError):
        LombScargle(t, y[:5])
    with pytest.raises(ValueError, match="nterms = 9"):
        LombScargle(t, y, nterms=9).power([0.1])
    with pytest.raises(ValueError, match="dy\\[3\\] = 0"):
        LombScargle(t, y, np.where(np.arange(10) == 3, 0.0, 1.0)).power([0.1])
    with pytest.raises(ValueError, match="does not vary"):
        LombScargle(t, np.full(10, 2.0)).power([0.1])
    with pytest.raises(ValueError, match="frequency"):
        LombScargle(t, y).power([0.1, np.nan])


def test_astropy_method_names_run_astropy(rng):
    t, y = 10 * rng.random(40), rng.random(40)
    ours = LombScargle(t, y, nterms=2).power([0.3, 0.7], method="chi2")
    theirs = astropy_ls(t, y, nterms=2).power([0.3, 0.7], method="chi2")
    np.testing.assert_array_equal(ours, theirs)


ASTROPY_SELECTION = "test_nterms_methods or test_model or test_model_parameters or test_autopower or test_autofrequency"


def test_astropy_suite_with_kernpack_substituted():
    """astropy's own LombScargle tests, from the installed astropy, with
    kernpack's class substituted (tests/_astropy_substitute.py: method 'chi2'
    and 'auto' run kernpack). Claimed: the chi2 cases of
    test_nterms_methods (nterms 2 and 4), test_model, test_model_parameters
    (nterms 1 and 2), test_autopower (its default 'auto' method becomes
    kernpack's chi2: compared with astropy's own fast method at its
    tolerance) and test_autofrequency; without units. Not claimed: nterms=0,
    Quantity/Time inputs, the other methods (they run astropy itself)."""
    here = os.path.dirname(os.path.abspath(__file__))
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([here, os.environ.get("PYTHONPATH", "")]))
    run = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "_astropy_substitute",
         "--pyargs", "astropy.timeseries.periodograms.lombscargle.tests.test_lombscargle",
         "-k", ASTROPY_SELECTION],
        env=env, capture_output=True, text=True, cwd="/tmp",
    )
    tail = run.stdout[-3000:] + run.stderr[-2000:]
    assert run.returncode == 0, tail
    assert " passed" in run.stdout and "kernpack substituted" in run.stdout, tail


@pytest.mark.parametrize("method", ["baluev", "davies", "naive", "single"])
@pytest.mark.parametrize("normalization", ["standard", "model", "log", "psd"])
def test_false_alarm_methods_match_astropy(method, normalization, rng):
    n = int(rng.integers(30, 200))
    t = np.sort(rng.uniform(0, 50, n))
    y = np.sin(2 * np.pi * t / 3.1) + rng.normal(0, 1, n)
    dy = rng.uniform(0.5, 1.5, n)
    ours = LombScargle(t, y, dy, normalization=normalization)
    theirs = astropy_ls(t, y, dy, normalization=normalization)
    power = ours.autopower(maximum_frequency=2.0)[1].max() * np.array([0.3, 0.7, 1.0])
    kw = dict(method=method, maximum_frequency=2.0)
    want = theirs.false_alarm_probability(power, **kw)
    got = ours.false_alarm_probability(power, **kw)
    # The analytic formulas in f64: astropy's own rounding (see test_significance).
    np.testing.assert_allclose(got, want, rtol=1e-9, atol=1e-14)
    level = ours.false_alarm_level(np.array([0.01, 0.1]), **kw)
    np.testing.assert_allclose(level, theirs.false_alarm_level(np.array([0.01, 0.1]), **kw), rtol=1e-6)


def test_false_alarm_refusals_match_astropy(rng):
    t = np.sort(rng.uniform(0, 10, 50))
    y = rng.normal(size=50)
    with pytest.raises(NotImplementedError, match="multiterm"):
        LombScargle(t, y, nterms=2).false_alarm_probability(0.5)
    with pytest.raises(NotImplementedError, match="centered data"):
        LombScargle(t, y, fit_mean=False, center_data=False).false_alarm_level(0.1)


@pytest.mark.parametrize("nterms", [1, 3])
def test_kernpack_is_a_method_of_astropys_lombscargle(nterms, backend, rng):
    import kernpack.timeseries

    kernpack.timeseries.register_astropy_methods()
    t = np.sort(rng.uniform(0, 20, 150))
    y = np.sin(2 * np.pi * t / 1.7) + rng.normal(0, 0.5, 150)
    dy = rng.uniform(0.5, 1.0, 150)
    ls = astropy_ls(t, y, dy, nterms=nterms)
    freq = np.linspace(0.05, 3, 400)
    method = "kernpack_chi2" if nterms > 1 else "kernpack"
    got = ls.power(freq, method=method, method_kwds={"backend": backend})
    np.testing.assert_allclose(got, ls.power(freq, method="chi2"), rtol=1e-8, atol=1e-12)
    f, p = ls.autopower(method=method, method_kwds={"backend": backend}, maximum_frequency=2.0)
    # Below one cycle per baseline the multi-term fit is ill-conditioned and
    # the two normal-matrix constructions part by up to 1e-4 of the scale
    # (as test_autopower_matches_astropy states); 1e-8 elsewhere.
    want = ls.power(f, method="chi2")
    low = f < 1 / (t.max() - t.min())
    np.testing.assert_allclose(p[~low], want[~low], rtol=1e-8, atol=1e-12)
    np.testing.assert_allclose(p[low], want[low], rtol=0, atol=1e-4 * want.max())
