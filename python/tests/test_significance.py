"""kernpack._significance against astropy's own false-alarm functions: the
analytic methods on 1,200 random (Z, fmax, N, normalization, method) cases,
the bootstrap's periodogram maxima against astropy's periodograms of the same
resamples, and astropy's errors."""
from __future__ import annotations

import warnings

import numpy as np
import pytest

st = pytest.importorskip("astropy.timeseries.periodograms.lombscargle._statistics")
from astropy.timeseries import LombScargle  # noqa: E402

from kernpack import _significance as ks  # noqa: E402

NORMS = ("standard", "model", "log", "psd")
ANALYTIC = ("baluev", "davies", "naive", "single")
EPS = np.finfo(np.float64).eps


def _case(rng):
    n = int(np.exp(rng.uniform(np.log(5), np.log(3000))))
    span = float(np.exp(rng.uniform(0.0, np.log(3000.0))))
    t = rng.choice([0.0, 100.0, 1000.0]) + np.sort(rng.uniform(0.0, span, n))
    dy = rng.uniform(0.5, 1.5, n) if rng.integers(0, 2) else None
    fmax = float(np.exp(rng.uniform(0.0, np.log(5000.0)))) / span
    return n, t, dy, fmax


def _astropy_rounding(n, t):
    """astropy's own rounding, which kernpack does not share: two gammaln of
    about x ln x (x = n/2) subtracted in its _gamma, and var(t) as
    mean(t^2) - mean(t)^2; kernpack takes the Gamma ratio by a series and the
    variance in two passes (see tests/significance.rs)."""
    x = n / 2
    return 1e-12 + 8 * EPS * x * np.log(x) + 4 * EPS * np.mean(t * t) / np.var(t)


def test_analytic_faps_and_levels_match_astropy(rng):
    worst = 0.0
    for k in range(1200):
        norm, method = NORMS[k % 4], ANALYTIC[(k // 4) % 4]
        n, t, dy, fmax = _case(rng)
        y = rng.normal(size=n)
        target = np.exp(rng.uniform(np.log(1e-12), np.log(0.99), 3))
        z = np.atleast_1d(st.inv_fap_naive(target, fmax, t, y, dy, norm))
        z = np.where(np.isfinite(z), z, st.inv_fap_single(target, n, norm))
        want = st.false_alarm_probability(z, fmax, t, y, dy, norm, method)
        got = ks.false_alarm_probability(z, fmax, t, y, dy, norm, method)
        tol = _astropy_rounding(n, t)
        rel = np.abs(got - want) / np.abs(want)
        assert np.all(rel <= tol), (k, norm, method, n, z, got, want)
        worst = max(worst, float(np.max(rel / tol)))
        # Levels: closed forms for 'single' and 'naive' (kernpack takes
        # ln1p(-p) where astropy takes log(1 - p): eps / p more); roots for
        # 'davies' and 'baluev', where astropy's Levenberg-Marquardt stops at a
        # relative step of 1.49e-8 (MINPACK's xtol) and kernpack bisects to
        # the last bit.
        p = float(np.exp(rng.uniform(np.log(1e-8), np.log(0.5))))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            want = float(np.ravel(st.false_alarm_level(p, fmax, t, y, dy, norm, method))[0])
        got = ks.false_alarm_level(p, fmax, t, y, dy, norm, method)
        if method in ("single", "naive"):
            tol = tol + 4 * EPS / p
            assert abs(got - want) <= tol * abs(want), (k, norm, method, n, p, got, want)
        elif abs(got - want) > 6e-8 * abs(want):
            # Where the FAP is steep in z (near the top of 'standard' with few
            # samples) astropy's root stops short: kernpack's must then be at
            # least as good a root of astropy's own FAP function.
            residual = lambda z: abs(float(st.false_alarm_probability(z, fmax, t, y, dy, norm, method)) - p)
            assert residual(got) <= residual(want), (k, norm, method, n, p, got, want)
    print(f"worst FAP error {worst:.3f} of its bound")


def test_shapes_follow_the_input(rng):
    t = np.sort(rng.uniform(0, 10, 50))
    y = rng.normal(size=50)
    assert np.ndim(ks.false_alarm_probability(0.3, 5.0, t, y)) == 0
    z = np.array([[0.1, 0.2], [0.3, 0.4]])
    got = ks.false_alarm_probability(z, 5.0, t, y, 0.5, "model", "davies")
    np.testing.assert_allclose(got, st.false_alarm_probability(z, 5.0, t, y, np.full(50, 0.5), "model", "davies"), rtol=1e-12)
    assert ks.false_alarm_level([0.01, 0.1], 5.0, t, y).shape == (2,)


def test_errors_are_astropys(rng):
    t = np.sort(rng.uniform(0, 10, 50))
    y = rng.normal(size=50)
    with pytest.raises(ValueError, match="Unrecognized method: magic"):
        ks.false_alarm_probability(0.3, 5.0, t, y, method="magic")
    with pytest.raises(ValueError, match="normalization='nope' is not recognized"):
        ks.false_alarm_level(0.1, 5.0, t, y, normalization="nope")
    with pytest.raises(ValueError, match=r"false_alarm_probability\[0\]"):
        ks.false_alarm_level(1.5, 5.0, t, y)
    with pytest.raises(ValueError, match=r"dy\[3\]"):
        dy = np.ones(50)
        dy[3] = 0
        ks.false_alarm_probability(0.3, 5.0, t, y, dy)
    with pytest.raises(TypeError):
        ks.false_alarm_probability(0.3, 5.0, t, y, method="bootstrap", method_kwds={"n_boot": 3})



M32 = (1 << 32) - 1


def _philox4x32_10(c, k):
    """Philox-4x32-10 (Salmon et al. 2011), transcribed from its definition."""
    c, k = list(c), list(k)
    for rnd in range(10):
        if rnd:
            k = [(k[0] + 0x9E3779B9) & M32, (k[1] + 0xBB67AE85) & M32]
        p0, p1 = 0xD2511F53 * c[0], 0xCD9E8D57 * c[2]
        c = [(p1 >> 32) ^ c[1] ^ k[0], p1 & M32, (p0 >> 32) ^ c[3] ^ k[1], p0 & M32]
    return c


def test_philox_transcription_knows_the_published_answers():
    assert _philox4x32_10([0] * 4, [0, 0]) == [0x6627E8D5, 0xE169C58D, 0xBC57AC4C, 0x9B00DBD8]


def _draws(seed, r, n):
    """kernpack's resample indices, transcribed independently: the first 64
    bits of Philox of counter (0, i, r) under the seed, times n, high half."""
    out = []
    for i in range(n):
        w = _philox4x32_10([0, i & M32, i >> 32, r & M32], [seed & M32, seed >> 32])
        out.append((((w[0] << 32) | w[1]) * n) >> 64)
    return np.array(out)


@pytest.mark.parametrize("norm", NORMS)
@pytest.mark.parametrize("weighted", [False, True])
def test_bootstrap_maxima_are_astropys_periodograms_of_the_same_resamples(backend, rng, norm, weighted):
    n, seed, nb = 80, 12345, 12
    t = np.sort(rng.uniform(0, 30, n))
    y = np.sin(2 * np.pi * t / 2.3) + rng.normal(size=n)
    dy = rng.uniform(0.5, 1.5, n) if weighted else None
    fmax = 4.0
    got = ks.bootstrap_maxima(fmax, t, y, dy, norm, n_bootstraps=nb, random_seed=seed, backend=backend)
    for r in range(nb):
        s = _draws(seed, r, n)
        ls = LombScargle(t, y[s], None if dy is None else dy[s], normalization=norm)
        freq = ls.autofrequency(maximum_frequency=fmax)
        # The exact periodogram (astropy's 'cython'); at f64 both agree to
        # ~1e-12 of the powers' scale.
        want = ls.power(freq, method="cython").max()
        assert abs(got[r] - want) <= 1e-9 * max(1.0, abs(want)), (r, got[r], want)


def test_bootstrap_fap_is_astropys_in_distribution(rng):
    """Different draws (kernpack's generator, not NumPy's): the FAPs agree to
    their sampling error, sqrt(p (1 - p) / B) each."""
    n = 100
    t = np.sort(rng.uniform(0, 30, n))
    y = rng.normal(size=n)
    z = np.array([0.1, 0.15, 0.2])
    kw = {"n_bootstraps": 400, "random_seed": 3}
    got = ks.false_alarm_probability(z, 3.0, t, y, None, "standard", "bootstrap", kw)
    want = st.false_alarm_probability(z, 3.0, t, y, None, "standard", "bootstrap", kw)
    sigma = np.sqrt(np.maximum(want * (1 - want), 0.01) / 400)
    assert np.all(np.abs(got - want) <= 6 * np.sqrt(2) * sigma), (got, want)
    level = ks.false_alarm_level(0.1, 3.0, t, y, None, "standard", "bootstrap", kw)
    assert 0.0 < level < 1.0
    # The same seed: the same maxima, on every backend.
    again = ks.false_alarm_probability(z, 3.0, t, y, None, "standard", "bootstrap", kw)
    np.testing.assert_array_equal(got, again)


def test_astropys_own_statistics_tests_pass_with_kernpack_substituted(tmp_path):
    """astropy's test_statistics module, from the installed astropy, with its
    LombScargle's false_alarm_probability / false_alarm_level calling kernpack
    (the plugin in tests/plugins): every test passes, and kernpack was called."""
    import os
    import subprocess
    import sys

    here = os.path.dirname(os.path.abspath(__file__))
    import kernpack

    path = os.pathsep.join([os.path.dirname(os.path.dirname(kernpack.__file__)), os.path.join(here, "plugins")])
    env = dict(os.environ, PYTHONPATH=path + os.pathsep + os.environ.get("PYTHONPATH", ""))
    run = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "kernpack_fap_plugin",
         "--pyargs", "astropy.timeseries.periodograms.lombscargle.tests.test_statistics"],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600,
    )
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    calls = [line for line in run.stdout.splitlines() if line.startswith("kernpack significance calls")]
    assert calls and "'fap': 0" not in calls[0] and "'level': 0" not in calls[0], run.stdout[-2000:]


@pytest.mark.parametrize("nterms", [2, 3])
def test_multi_term_bootstrap_is_astropys_chi2_periodograms_of_the_same_resamples(backend, rng, nterms):
    """astropy has no FAP for multi-term periodograms; kernpack's bootstrap
    takes the maxima of the same resamples' multi-term periodograms (here
    against astropy's exact 'chi2' on the independently transcribed draws),
    and the FAP and level follow astropy's bootstrap formulas."""
    from kernpack.timeseries import LombScargle as KpLombScargle

    n, seed, nb = 60, 777, 10
    t = np.sort(rng.uniform(0, 30, n))
    y = np.sin(2 * np.pi * t / 2.3) + 0.4 * np.cos(4 * np.pi * t / 2.3) + rng.normal(size=n)
    dy = rng.uniform(0.5, 1.5, n)
    fmax = 3.0
    kw = dict(maximum_frequency=fmax, method="bootstrap",
              method_kwds=dict(n_bootstraps=nb, random_seed=seed, backend=backend))
    ours = KpLombScargle(t, y, dy, nterms=nterms)
    maxima = []
    for r in range(nb):
        s = _draws(seed, r, n)
        ls = LombScargle(t, y[s], dy[s], nterms=nterms)
        maxima.append(ls.power(ls.autofrequency(maximum_frequency=fmax), method="chi2").max())
    maxima = np.sort(maxima)
    # Powers between maxima (not on one, where rounding picks the side).
    z = np.array([maxima[0] / 2, (maxima[3] + maxima[4]) / 2, (maxima[-1] + 1) / 2])
    want = 1 - np.searchsorted(maxima, z) / nb
    np.testing.assert_allclose(ours.false_alarm_probability(z, **kw), want, atol=0)
    level = ours.false_alarm_level(0.5, **kw)
    assert abs(level - maxima[5]) <= 1e-9, (level, maxima)
    with pytest.raises(NotImplementedError, match="multiterm"):
        ours.false_alarm_probability(0.5, maximum_frequency=fmax)  # baluev: none for multi-term
