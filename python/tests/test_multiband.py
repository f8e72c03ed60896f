"""kernpack.timeseries.LombScargleMultiband against astropy's
LombScargleMultiband (methods 'flexible' and 'fast').

Differential cases: 1,000 random float64 cases per method and 300 float32
cases per method (1 to 6 bands with their own offsets and amplitudes of one
period, random nterms_base 0..3 and nterms_band 0..3 (nterms_base >= 1 for
'fast'), ridges None, the default or random, by trace or not, center_data,
fit_mean, dy or none, every normalization for 'fast', random frequencies from
one cycle over the baseline to a few times the mean Nyquist frequency).

Tolerances, as max |kernpack - astropy| / max |astropy| over a periodogram:
float64 1e-8: both solve the regularised normal equations in float64
(astropy builds X^T X from the whole design matrix, kernpack from sums of
harmonics band by band; ~1e-15 apart before the solve), amplified by the
normal matrix's condition number, which the default ridge (1e-6 of the
trace) bounds near 1e6 for the band offsets it separates from the base
offset. float32 1e-6: astropy runs on the same float32 values as float64,
and kernpack computes in float64 from them (both backends; the GPU's fast
method excepted, 2e-3: it runs the multi-term kernel, whose sums of
single-precision harmonics test_timeseries.py bounds so), so only the
result's rounding to float32 (6e-8) adds to the float64 error.

Without either ridge and with fewer base than band harmonics the normal
matrix is exactly singular (the base columns are sums of band columns);
astropy's solve then returns whatever the rounding gives (powers above 1
seen), kernpack the least-squares power: those cases are compared with a
least-squares fit instead.
"""
from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest

astropy_mb = pytest.importorskip("astropy.timeseries").LombScargleMultiband

from kernpack.timeseries import LombScargleMultiband, lombscargle_multiband_batch  # noqa: E402

NORMALIZATIONS = ["standard", "model", "log", "psd"]


def _case(rng, method, dtype=np.float64):
    nb = int(rng.integers(1 if method == "fast" else 0, 4))
    nbd = int(rng.integers(1 if nb == 0 else 0, 4))
    nbands = int(rng.integers(1, 7))
    labels = rng.choice(np.array(list("ugrizy")), nbands, replace=False)
    per_band = 3 * (1 + 2 * max(nb, nbd)) + int(rng.integers(0, 30))
    n = nbands * per_band
    span = rng.uniform(5.0, 300.0)
    t = rng.uniform(-50.0, 2000.0) + span * rng.random(n)
    codes = rng.permutation(np.repeat(np.arange(nbands), per_band))  # each band enough samples for its fits
    period = span / rng.uniform(2.0, 30.0)
    phase = 2 * np.pi * t / period
    level, amp = rng.uniform(-5, 5, nbands), rng.uniform(0.3, 2.0, nbands)
    y = level[codes] + amp[codes] * (np.sin(phase) + 0.3 * np.cos(2 * phase)) + rng.normal(0, 0.6, n)
    dy = rng.uniform(0.1, 2.0, n) if rng.integers(2) else None
    regs = [None, 1e-6, float(10 ** rng.uniform(-7, -3))]
    opts = dict(
        nterms_base=nb, nterms_band=nbd, reg_base=regs[int(rng.integers(3))] if rng.integers(2) else None,
        reg_band=regs[int(rng.integers(3))], regularize_by_trace=bool(rng.integers(4)),
        center_data=bool(rng.integers(3)), fit_mean=bool(rng.integers(3)),
    )
    freq = rng.uniform(1.0 / span, n / span, int(rng.integers(1, 25)))
    cast = lambda a: None if a is None else a.astype(dtype)  # noqa: E731
    return dict(t=cast(t), y=cast(y), dy=cast(dy), bands=labels[codes], freq=cast(freq), opts=opts)


def _scaled_error(got, want):
    assert got.shape == want.shape
    assert np.all(np.isfinite(got)), got
    return np.max(np.abs(got - want)) / max(np.max(np.abs(want)), np.finfo(float).tiny)


def _singular(opts):
    return opts["reg_base"] is None and opts["reg_band"] is None


def _least_squares(c):
    """The flexible power by a least-squares fit of the design matrix (the
    reference for an exactly singular normal matrix)."""
    f64 = lambda a: None if a is None else a.astype(np.float64)  # noqa: E731
    ls = LombScargleMultiband(f64(c["t"]), f64(c["y"]), c["bands"], f64(c["dy"]), **c["opts"])
    y = f64(c["y"]) - (ls.offset() if c["opts"]["center_data"] else 0.0)
    yw = y / ls._dy()
    out = []
    for f in f64(c["freq"]):
        x = ls.design_matrix(f)
        theta = np.linalg.lstsq(x, yw, rcond=None)[0]
        out.append(np.sum((x @ theta) ** 2) / np.sum(yw ** 2))
    return np.array(out)


def _compare(c, method, normalization, backend, tol):
    ours = LombScargleMultiband(c["t"], c["y"], c["bands"], c["dy"], **c["opts"])
    got = ours.power(c["freq"], method=method, normalization=normalization, backend=backend)
    assert got.dtype == c["t"].dtype
    f64 = lambda a: None if a is None else a.astype(np.float64)  # noqa: E731
    if method == "flexible" and _singular(c["opts"]):
        want = _least_squares(c)
    else:
        theirs = astropy_mb(f64(c["t"]), f64(c["y"]), c["bands"], f64(c["dy"]), **c["opts"])
        kw = dict(sb_method="chi2") if method == "fast" else {}
        want = theirs.power(f64(c["freq"]), method=method, normalization=normalization, **kw)
    err = _scaled_error(got.astype(np.float64), want)
    assert err <= tol, (err, method, normalization, c["opts"], len(set(c["bands"])))


@pytest.mark.parametrize("method", ["flexible", "fast"])
@pytest.mark.parametrize("chunk", range(10))
def test_random_cases_float64(method, chunk, backend, rng):
    """100 cases per chunk, 1,000 per method; 'fast' takes each normalization in turn."""
    for i in range(100):
        _compare(_case(rng, method), method, NORMALIZATIONS[i % 4], backend, 1e-8)


@pytest.mark.parametrize("method", ["flexible", "fast"])
@pytest.mark.parametrize("chunk", range(3))
def test_random_cases_float32(method, chunk, backend, rng):
    """100 cases per chunk, 300 per method."""
    for i in range(100):
        # The fast method on the GPU runs the multi-term kernel, which sums
        # single-precision harmonics: its tolerance (test_timeseries.py).
        tol = 2e-3 if method == "fast" and backend == "gpu" else 1e-6
        _compare(_case(rng, method, np.float32), method, NORMALIZATIONS[i % 4], backend, tol)


def test_power_keeps_the_frequency_shape_and_defaults_as_astropy(rng):
    c = _case(rng, "flexible")
    ours = LombScargleMultiband(c["t"], c["y"], c["bands"], c["dy"], normalization="psd")
    theirs = astropy_mb(c["t"], c["y"], c["bands"], c["dy"], normalization="psd")
    freq = np.linspace(0.1, 0.5, 6).reshape(2, 3)
    assert ours.power(freq).shape == (2, 3)
    # power's own normalization defaults to 'standard' (astropy's signature).
    np.testing.assert_allclose(ours.power(freq, method="fast"),
                               theirs.power(freq, method="fast", sb_method="chi2"), rtol=1e-8)
    f1, p1 = ours.autopower(maximum_frequency=2.0)
    f2, p2 = theirs.autopower(maximum_frequency=2.0)
    np.testing.assert_allclose(f1, f2, rtol=1e-12)
    np.testing.assert_allclose(p1, p2, rtol=1e-7, atol=1e-12)


def test_model_parameters_and_model_match_astropy(rng):
    c = _case(rng, "flexible")
    for center in (True, False):
        kw = dict(nterms_base=1, nterms_band=1, center_data=center)
        ours = LombScargleMultiband(c["t"], c["y"], c["bands"], c["dy"], **kw)
        theirs = astropy_mb(c["t"], c["y"], c["bands"], c["dy"], **kw)
        f = float(c["freq"][0])
        np.testing.assert_allclose(ours.model_parameters(f), theirs.model_parameters(f), rtol=1e-7, atol=1e-9)
        t_fit = np.linspace(c["t"].min(), c["t"].max(), 7)
        design = ours.design_matrix(f, t_fit)
        assert design.shape == (7 * len(set(c["bands"])), 1 + 2 + len(set(c["bands"])) * 3)
        model = ours.model(t_fit, f)
        np.testing.assert_allclose((ours.offset(t_fit) + design @ ours.model_parameters(f)).reshape(model.shape),
                                   model)
        if not center:
            # (With center_data astropy offsets a band's model by the mean
            # of the sample whose index is the band's: kernpack uses the
            # band's own weighted mean.)
            np.testing.assert_allclose(model, theirs.model(t_fit, f), rtol=1e-7, atol=1e-9)


def test_batch_is_each_series(backend, rng):
    cases = [_case(rng, "flexible") for _ in range(5)]
    for c in cases:
        c["dy"] = rng.uniform(0.1, 2.0, c["t"].size)
    opts = dict(cases[0]["opts"])
    t = [c["t"] for c in cases]
    got = lombscargle_multiband_batch(t, [c["y"] for c in cases], [c["bands"] for c in cases], 0.01, 0.003, 200,
                                      dy=[c["dy"] for c in cases], backend=backend, **opts)
    assert got.shape == (5, 200)
    freq = 0.01 + 0.003 * np.arange(200)
    for c, row in zip(cases, got):
        one = LombScargleMultiband(c["t"], c["y"], c["bands"], c["dy"], **opts).power(freq, backend=backend)
        np.testing.assert_allclose(row, one, rtol=1e-9, atol=1e-12)
    # Flat arrays with offsets, and a grid per series.
    offsets = np.concatenate([[0], np.cumsum([len(x) for x in t])])
    f0 = np.array([0.01, 0.02, 0.03, 0.04, 0.05])
    flat = lombscargle_multiband_batch(np.concatenate(t), np.concatenate([c["y"] for c in cases]),
                                       np.concatenate([c["bands"] for c in cases]), f0, 0.003, 50,
                                       dy=np.concatenate([c["dy"] for c in cases]), offsets=offsets,
                                       backend=backend, **opts)
    for s, c in enumerate(cases):
        one = LombScargleMultiband(c["t"], c["y"], c["bands"], c["dy"], **opts).power(
            f0[s] + 0.003 * np.arange(50), backend=backend)
        np.testing.assert_allclose(flat[s], one, rtol=1e-9, atol=1e-12)


def test_batch_peaks_are_those_of_the_periodograms(backend, rng):
    from conftest import ref_peaks

    cases = [_case(rng, "flexible") for _ in range(6)]
    opts = dict(cases[0]["opts"])
    args = ([c["t"] for c in cases], [c["y"] for c in cases], [c["bands"] for c in cases])
    f0 = np.array([0.01 + 0.01 * s for s in range(6)])
    whole = lombscargle_multiband_batch(*args, f0, 0.002, 300, backend=backend, **opts)
    for k, separation in ((1, 0.0), (4, 0.0), (5, 0.01)):
        got = lombscargle_multiband_batch(*args, f0, 0.002, 300, peaks=k, separation=separation, backend=backend,
                                          **opts)
        assert got.index.shape == got.power.shape == got.frequency.shape == (6, k)
        for s in range(6):
            axis = f0[s] + 0.002 * np.arange(300)
            want = np.asarray(ref_peaks(whole[s], axis, k, separation, higher=True), dtype=np.int64)
            index = got.index[s][got.index[s] >= 0]
            np.testing.assert_array_equal(index, want)
            np.testing.assert_array_equal(got.power[s][: len(want)], whole[s][want])
            np.testing.assert_array_equal(got.frequency[s][: len(want)], f0[s] + want * 0.002)
            assert np.all(np.isnan(got.power[s][len(want):]))
    empty = lombscargle_multiband_batch([], [], [], 0.1, 0.01, 5, peaks=3)
    assert empty.index.shape == (0, 3)
    with pytest.raises(ValueError, match="peaks"):
        lombscargle_multiband_batch(*args, f0, 0.002, 300, peaks=0)
    with pytest.raises(ValueError, match="separation"):
        lombscargle_multiband_batch(*args, f0, 0.002, 300, separation=0.1)


def test_an_empty_batch_is_an_empty_result():
    for dtype in (np.float32, np.float64):
        got = lombscargle_multiband_batch(np.empty(0, dtype), np.empty(0, dtype), np.empty(0, int), 0.1, 0.01, 7,
                                          offsets=[0])
        assert got.shape == (0, 7) and got.dtype == dtype
    assert lombscargle_multiband_batch([], [], [], 0.1, 0.01, 3).shape == (0, 3)
    # The options and the grid are still checked.
    with pytest.raises(ValueError, match="0 to 3"):
        lombscargle_multiband_batch([], [], [], 0.1, 0.01, 3, nterms_band=5)
    with pytest.raises(ValueError, match="frequencies"):
        lombscargle_multiband_batch([], [], [], 0.1, 0.01, 0)


def test_bad_input_is_a_clear_error(rng):
    c = _case(rng, "flexible")
    ls = LombScargleMultiband(c["t"], c["y"], c["bands"], c["dy"])
    with pytest.raises(ValueError, match="Invalid Method"):
        ls.power([0.1], method="slow")
    with pytest.raises(ValueError, match="nterms_base"):
        LombScargleMultiband(c["t"], c["y"], c["bands"], nterms_base=0, nterms_band=0).power([0.1])
    with pytest.raises(ValueError, match="0 to 3"):
        LombScargleMultiband(c["t"], c["y"], c["bands"], nterms_band=4).power([0.1])
    with pytest.raises(ValueError, match="reg_band"):
        LombScargleMultiband(c["t"], c["y"], c["bands"], reg_band=-1.0).power([0.1])
    with pytest.raises(ValueError, match="band means"):
        LombScargleMultiband(c["t"], np.ones_like(c["y"]), c["bands"]).power([0.1])
    with pytest.raises(ValueError, match="1-dimensional"):
        LombScargleMultiband(c["t"].reshape(-1, 1), c["y"].reshape(-1, 1), c["bands"].reshape(-1, 1))
    with pytest.raises(ValueError, match="bands_fit"):
        ls.model(c["t"][:3], 0.1, bands_fit=["nope"])
    with pytest.raises(NotImplementedError):
        ls.false_alarm_probability(0.5)
    bad = c["t"].copy()
    bad[2] = np.nan
    with pytest.raises(ValueError, match=r"t\[2\]"):
        LombScargleMultiband(bad, c["y"], c["bands"]).power([0.1])


def test_astropy_suite_with_kernpack_substituted():
    """astropy's own LombScargleMultiband tests, from the installed astropy,
    with kernpack's class substituted (tests/_multiband_astropy_substitute.py:
    'flexible' and 'fast' run kernpack). Claimed: test_autofrequency,
    test_all_methods, test_integer_inputs, test_nterms_methods,
    test_output_shapes, test_model, test_autopower, test_model_parameters and
    test_single_band_equivalence with sb_method 'auto', without units. Not
    claimed: Quantity, Time and TimeSeries inputs (kernpack takes plain
    arrays), and the single-band equivalence with astropy's other sb_methods
    (they run astropy's own fast method)."""
    here = os.path.dirname(os.path.abspath(__file__))
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([here, os.environ.get("PYTHONPATH", "")]))
    run = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "_multiband_astropy_substitute",
         "--pyargs", "astropy.timeseries.periodograms.lombscargle_multiband.tests.test_lombscargle_multiband"],
        env=env, capture_output=True, text=True, cwd="/tmp",
    )
    tail = run.stdout[-3000:] + run.stderr[-2000:]
    assert run.returncode == 0, tail
    assert " passed" in run.stdout and "kernpack substituted" in run.stdout, tail


@pytest.mark.parametrize("dtype", [np.uint8, np.int16, np.int64, np.bool_, "U2"])
def test_band_codes_are_numpy_unique_order(dtype, rng):
    from kernpack.timeseries import _band_codes

    raw = rng.integers(-3, 9, int(rng.integers(1, 500)))
    bands = raw.astype(str) if dtype == "U2" else (raw > 3 if dtype == np.bool_ else
                                                    (raw % 7 if dtype == np.uint8 else raw).astype(dtype))
    labels, codes = _band_codes(bands)
    want_labels, want_codes = np.unique(bands, return_inverse=True)
    np.testing.assert_array_equal(labels, want_labels)
    np.testing.assert_array_equal(codes, want_codes.ravel())
    assert codes.dtype == np.uint32
