"""kernpack.signal: lombscargle against scipy.signal.lombscargle, the uniform
grid variant against lombscargle, and ragged batches against per-series calls.

Tolerances
----------
float64: |kernpack - scipy| <= 1e-9 * max|scipy| over the compared frequencies.
Both compute in float64, but kernpack sums in another order (and on the GPU
shifts the times by their mean and uses its own kernels); the periodogram is
a ratio of weighted sums of up to 300 terms, each O(1), so rounding differs
by ~1e-13 relative where the least-squares system behind it is well
conditioned. Measured worst case over the 1000 random cases: 1.7e-10.

Conditioning: at each frequency the fit solves a 2x2 system (cos, sin; after
removing the weighted mean with floating_mean) whose smallest eigenvalue
``lam`` bounds how much rounding is amplified. SciPy clamps that denominator
at epsneg and returns noise when it is ~0 (e.g. frequency 0 with
floating_mean, or two samples with a floating mean), where kernpack returns 0
for the degenerate term; and at tiny but non-zero ``lam`` (frequencies far
below 1 / time span) both carry errors of ~eps / lam: they legitimately
differ there. A frequency is therefore compared when ``lam >= 1e-5`` (error
<= ~1e-11 measured), and also at frequency 0 without floating_mean (sin = 0:
both set the sine term to 0 exactly). Each test asserts that most of its
frequencies were compared; a single sample (lam = 0 everywhere) has its own
exact test.

Scale: ``max|scipy|`` over the compared frequencies, but at least 1e-3 of
the periodogram's natural scale (the weighted variance of y in the mode's
units), so that a periodogram that is zero in exact arithmetic (e.g. only
frequency 0 with a pre-centred y: values ~1e-35 of rounding) is compared in
absolute terms.
"""
from __future__ import annotations

import inspect
import re
import warnings

import numpy as np
import pytest
import scipy.signal

import kernpack
from kernpack import _native
from kernpack.signal import TopPeaks, lombscargle, lombscargle_batch, lombscargle_uniform

from conftest import ref_peaks, seed_of

# The comparisons with SciPy cover precenter, which kernpack (as SciPy 1.17)
# deprecates: the warning is tested once, in
# test_positional_options_and_precenter_warn_as_in_scipy_1_17.
pytestmark = pytest.mark.filterwarnings("ignore:The parameter 'precenter' is deprecated:DeprecationWarning")

MODES = [False, True, "power", "normalize", "amplitude"]
F64_RTOL = 1e-9
# float32: the project's stated GPU accuracy is rel L2 <= 1e-4 (float32 with
# fast-math intrinsics); relative to the largest value is the same order.
F32_RTOL = 1e-4
WELL_CONDITIONED = 1e-5


SCIPY_HAS_PRECENTER = "precenter" in inspect.signature(scipy.signal.lombscargle).parameters


def scipy_ls(x, y, freqs, precenter=False, normalize=False, weights=None, floating_mean=False):
    """SciPy's periodogram. precenter is keyword-only and deprecated since
    SciPy 1.17 (its DeprecationWarning is silenced here), and is to be removed
    in 1.19: there, its documented exact substitute y - y.mean() is passed."""
    if not SCIPY_HAS_PRECENTER:
        if precenter:
            y = np.asarray(y, dtype=np.float64)
            y = y - y.mean()
        return scipy.signal.lombscargle(
            x, y, freqs, normalize=normalize, weights=weights, floating_mean=floating_mean
        )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        return scipy.signal.lombscargle(
            x, y, freqs, precenter=precenter, normalize=normalize, weights=weights, floating_mean=floating_mean
        )


def is_amplitude(normalize) -> bool:
    return isinstance(normalize, str) and normalize == "amplitude"


def smallest_eigenvalue(x, weights, freqs, floating_mean):
    """Smallest eigenvalue, per frequency, of the weighted Gram matrix of
    cos(w t), sin(w t) (centred on their weighted means with floating_mean):
    the conditioning of the least-squares fit at that frequency. Invariant
    under a shift of t, so t is centred first for accuracy."""
    t = np.asarray(x, dtype=np.float64).ravel()
    t = t - t.mean()
    w = np.ones_like(t) if weights is None else np.asarray(weights, dtype=np.float64).ravel()
    w = w / w.sum()
    phase = np.outer(np.asarray(freqs, dtype=np.float64).ravel(), t)
    c, s = np.cos(phase), np.sin(phase)
    if floating_mean:
        c -= (c @ w)[:, None]
        s -= (s @ w)[:, None]
    a, b, d = (c * c) @ w, (s * s) @ w, (c * s) @ w
    return (a + b) / 2 - np.hypot((a - b) / 2, d)


def compared(x, weights, freqs, normalize, floating_mean):
    """Which frequencies are compared with SciPy (see the module docstring)."""
    f = np.asarray(freqs, dtype=np.float64).ravel()
    keep = smallest_eigenvalue(x, weights, f, floating_mean) >= WELL_CONDITIONED
    if not floating_mean:
        keep |= f == 0
    return keep


def natural_scale(y, weights, precenter, floating_mean, normalize):
    """The size the periodogram is measured against: 'power' is at most
    n/2 * YY (YY: SciPy's weighted variance of y about 0, or about its mean
    with floating_mean), 'normalize' at most 1, and an amplitude is of the
    order of sqrt(YY)."""
    y = np.asarray(y, dtype=np.float64).ravel()
    if precenter:
        y = y - y.mean()
    w = np.ones_like(y) if weights is None else np.asarray(weights, dtype=np.float64).ravel()
    w = w / w.sum()
    about = np.sum(w * y) if floating_mean else 0.0
    yy = np.sum(w * (y - about) ** 2)
    if is_amplitude(normalize):
        return np.sqrt(yy)
    if normalize is True or normalize == "normalize":
        return 1.0
    return yy * y.size / 2


def assert_close_on(got, ref, keep, rtol, what="", floor=0.0):
    """max |got - ref| over `keep` <= rtol * max(max |ref| over keep, floor)."""
    got = np.atleast_1d(got)
    ref = np.atleast_1d(ref)
    if not keep.any():
        return
    scale = max(np.max(np.abs(ref[keep])), floor)
    err = np.max(np.abs(got[keep] - ref[keep]))
    assert err <= rtol * scale, f"{what}: max error {err:.3e} > {rtol:g} * scale ({scale:.3e})"


# --------------------------------------------------------------------------
# Random cases against SciPy
# --------------------------------------------------------------------------

FORMS = ["f64", "list", "f32", "int", "big", "strided"]


def _as_form(values: np.ndarray, form: str):
    """The same values handed over as a list, float32, big-endian or a
    strided view (whose skipped elements are NaN: reading them would show)."""
    if form == "list":
        return values.tolist()
    if form == "f32":
        return values.astype(np.float32)
    if form == "big":
        return values.astype(">f8")
    if form == "strided":
        base = np.full(2 * values.size, np.nan)
        base[::2] = values
        return base[::2]
    return values  # f64, and int arrays (already integer)


def draw_case(seed: int, normalize):
    """One random periodogram problem. precenter / floating_mean / weights
    cycle with the seed so every block of cases holds every combination;
    sizes, input forms, negative and zero frequencies are random."""
    rng = np.random.default_rng(seed)
    precenter = bool(seed % 2)
    floating_mean = bool((seed // 2) % 2)
    weighted = bool((seed // 4) % 2)
    nx = int(rng.integers(1, 9)) if rng.random() < 0.2 else int(rng.integers(9, 301))
    nf = 1 if rng.random() < 0.1 else int(rng.integers(1, 301))
    normalizing = normalize is True or normalize == "normalize"
    if floating_mean or (normalizing and precenter):
        # A floating mean fits 3 parameters: with < 3 samples SciPy divides
        # by ~0; normalising 1 centred sample divides 0 by 0.
        nx = max(nx, 3)
    forms = {k: FORMS[int(rng.integers(len(FORMS)))] for k in ("x", "y", "freqs", "weights")}

    if forms["x"] == "int":
        x = np.sort(rng.integers(0, max(10 * nx, 50), nx))
    else:
        x = np.sort(rng.uniform(0.0, 10 ** rng.uniform(0.0, 2.5), nx))
    while True:
        if forms["y"] == "int":
            y = rng.integers(1, 20, nx) * rng.choice([-1, 1], nx) + int(rng.integers(-5, 6))
        else:
            period = 10 ** rng.uniform(-1, 1)
            y = (
                rng.uniform(0.5, 2) * np.sin(2 * np.pi * x / period + rng.uniform(0, 2 * np.pi))
                + rng.normal(0, rng.uniform(0.1, 1.0), nx)
                + rng.uniform(-3, 3)
            )
        w = None
        if weighted:
            if forms["weights"] == "int":
                w = rng.integers(1, 5, nx)
            else:
                w = rng.uniform(0.1, 2.0, nx)
            if nx >= 6:  # some zero weights, leaving >= 3 samples that count
                zero = rng.random(nx) < 0.2
                zero[rng.choice(nx, 3, replace=False)] = False
                w[zero] = 0
        counted = y if w is None else y[w > 0]
        if not normalizing or np.ptp(counted) > 0 or (counted.size == 1 and not precenter and counted[0] != 0):
            break
    if forms["freqs"] == "int":
        freqs = rng.integers(-20, 21, nf)
    else:
        freqs = rng.uniform(0.0, 10 ** rng.uniform(-0.5, 1.5), nf)
        if rng.random() < 0.3:
            freqs *= rng.choice([-1.0, 1.0], nf)
        if rng.random() < 0.2:
            freqs[int(rng.integers(nf))] = 0.0
    if forms["x"] == "int":
        forms["x"] = "f64"  # already an int array
    if forms["y"] == "int":
        forms["y"] = "f64"
    if forms["freqs"] == "int":
        forms["freqs"] = "f64"
    if forms["weights"] == "int":
        forms["weights"] = "f64"
    args = dict(
        x=_as_form(x, forms["x"]),
        y=_as_form(y, forms["y"]),
        freqs=_as_form(freqs, forms["freqs"]),
        weights=None if w is None else _as_form(w, forms["weights"]),
    )
    return args, precenter, floating_mean


CASES_PER_BLOCK = 40
BLOCKS = 5  # 5 modes x 5 blocks x 40 cases = 1000 random cases


@pytest.mark.parametrize("block", range(BLOCKS))
@pytest.mark.parametrize("normalize", MODES, ids=[str(m) for m in MODES])
def test_lombscargle_matches_scipy_on_random_cases(backend, normalize, block):
    kept = total = 0
    for case in range(CASES_PER_BLOCK):
        seed = seed_of(f"lombscargle-{normalize!r}") + 1000 * block + case
        a, precenter, floating_mean = draw_case(seed, normalize)
        what = f"seed {seed} (precenter={precenter}, floating_mean={floating_mean}, nx={len(a['x'])})"
        ref = scipy_ls(a["x"], a["y"], a["freqs"], precenter, normalize, a["weights"], floating_mean)
        got = lombscargle(
            a["x"], a["y"], a["freqs"], precenter=precenter, normalize=normalize,
            weights=a["weights"], floating_mean=floating_mean, backend=backend,
        )
        # (type(got) for nf == 1 is checked in test_single_frequency_gives_scipys_0d_array)
        assert got.shape == ref.shape, what
        assert got.dtype == ref.dtype, what
        assert np.all(np.isfinite(got)), what
        keep = compared(a["x"], a["weights"], a["freqs"], normalize, floating_mean)
        floor = 1e-3 * natural_scale(a["y"], a["weights"], precenter, floating_mean, normalize)
        assert_close_on(got, ref, keep, F64_RTOL, what, floor)
        kept += int(keep.sum())
        total += keep.size
    # The conditioning filter must leave the comparison meaningful.
    assert kept >= 0.85 * total, f"only {kept} of {total} frequencies were compared"


@pytest.mark.parametrize("normalize", MODES, ids=[str(m) for m in MODES])
def test_single_frequency_gives_scipys_0d_array(backend, normalize, rng):
    for floating_mean in (False, True):
        x = np.sort(rng.uniform(0, 30, 50))
        y = np.cos(1.3 * x) + rng.normal(0, 0.3, 50) + 0.5
        freq = [rng.uniform(0.5, 3.0)]
        ref = scipy_ls(x, y, freq, False, normalize, None, floating_mean)
        got = lombscargle(x, y, freq, normalize=normalize, floating_mean=floating_mean, backend=backend)
        assert got.shape == ref.shape == ()
        assert got.dtype == ref.dtype
        # kernpack documents "a float64 NumPy array (complex128 for
        # 'amplitude'), with SciPy's shape (0-d for a single frequency)". A
        # NumPy scalar is not one (immutable: no out[...] = v). (SciPy itself
        # returns a 0-d ndarray for 'power' / 'normalize' and a complex
        # scalar for 'amplitude'.)
        assert isinstance(got, np.ndarray), f"a {type(got).__name__}, not a 0-d ndarray"
        assert abs(got - ref) <= F64_RTOL * abs(ref)


@pytest.mark.parametrize("normalize", ["power", "normalize"])
def test_single_sample(backend, rng, normalize):
    # One sample: the sinusoid passes through it exactly (chi2 of the fit is
    # 0), so the power is 2 * y^2 * n / 4 = y^2 / 2 and the normalised power 1,
    # at every frequency. (A degenerate system: SciPy divides rounding by
    # epsneg in the sine term, which stays O(eps) here: compared at 1e-9.)
    for _ in range(5):
        x, y = [rng.uniform(-100, 100)], [rng.uniform(0.5, 5) * rng.choice([-1, 1])]
        f = rng.uniform(0, 10, 20)
        got = lombscargle(x, y, f, normalize=normalize, backend=backend)
        exact = np.full(f.size, 1.0 if normalize == "normalize" else y[0] ** 2 / 2)
        np.testing.assert_allclose(got, exact, rtol=1e-9)
        np.testing.assert_allclose(scipy_ls(x, y, f, False, normalize), exact, rtol=1e-9)


def test_positional_options_and_precenter_warn_as_in_scipy_1_17(backend, rng):
    # SciPy 1.15's signature lombscargle(x, y, freqs, precenter, normalize)
    # still works; SciPy 1.17 deprecates passing those two by position and
    # passing precenter at all (True or False), and so does kernpack.
    x = np.sort(rng.uniform(0, 20, 80))
    y = np.sin(2.0 * x) + 3.0 + rng.normal(0, 0.2, 80)
    f = rng.uniform(0.1, 5, 30)
    with pytest.deprecated_call(match="use keyword arguments"):
        positional = lombscargle(x, y, f, True, "normalize", backend=backend)
    with pytest.deprecated_call(match="leave 'precenter' unspecified"):
        keyword = lombscargle(x, y, f, precenter=True, normalize="normalize", backend=backend)
    np.testing.assert_array_equal(positional, keyword)
    with pytest.deprecated_call(match="leave 'precenter' unspecified"):
        lombscargle(x, y, f, precenter=False, backend=backend)
    # precenter=True is y - y.mean() passed as y, and it changes the answer
    # here (y has a mean of ~3).
    centred = lombscargle(x, y - y.mean(), f, normalize="normalize", backend=backend)
    np.testing.assert_allclose(keyword, centred, rtol=1e-12, atol=1e-12)
    assert_close_on(keyword, scipy_ls(x, y, f, True, "normalize"), np.ones(f.size, bool), F64_RTOL)
    assert np.max(np.abs(lombscargle(x, y, f, normalize="normalize", backend=backend) - keyword)) > 1e-3
    # Without either, no warning at all.
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        lombscargle(x, y, f, normalize=True, floating_mean=True, backend=backend)
    # SciPy 1.17 takes weights and floating_mean by position too, warning.
    w = rng.uniform(0.5, 2.0, x.size)
    with pytest.deprecated_call(match="positional arguments: precenter, normalize, weights, floating_mean"):
        positional = lombscargle(x, y, f, False, "power", w, True, backend=backend)
    keyword = lombscargle(x, y, f, weights=w, floating_mean=True, backend=backend)
    np.testing.assert_array_equal(positional, keyword)
    assert_close_on(keyword, scipy_ls(x, y, f, weights=w, floating_mean=True), np.ones(f.size, bool), F64_RTOL)
    # Python's own errors for a wrong call.
    with pytest.raises(TypeError, match="positional arguments"):
        lombscargle(x, y, f, False, "power", None, False, None)
    with pytest.raises(TypeError, match="multiple values for argument 'weights'"):
        lombscargle(x, y, f, False, "power", w, weights=w)
    with pytest.raises(TypeError, match="multiple values for argument 'normalize'"):
        lombscargle(x, y, f, False, "power", normalize="power")


def test_frequency_zero_with_floating_mean_has_zero_power(backend, rng):
    # At f = 0 the sinusoid is a constant, which the floating mean already
    # fits: the exact power is 0. (SciPy divides rounding noise by epsneg here.)
    x = np.sort(rng.uniform(0, 50, 200))
    y = np.sin(0.7 * x) + rng.normal(0, 0.5, 200) + 2.0
    f = np.concatenate([[0.0], rng.uniform(0.2, 3.0, 20)])
    for normalize in ("power", "normalize", "amplitude"):
        p = lombscargle(x, y, f, normalize=normalize, floating_mean=True, backend=backend)
        assert np.abs(p[0]) <= 1e-9 * np.max(np.abs(p[1:])), (normalize, p[0])


def test_negative_frequencies_fold_like_scipy(backend, rng):
    x = np.sort(rng.uniform(0, 40, 120))
    y = np.sin(1.7 * x + 0.3) + rng.normal(0, 0.4, 120)
    f = rng.uniform(0.2, 4.0, 25)
    for normalize in ("power", "amplitude"):
        neg = lombscargle(x, y, -f, normalize=normalize, backend=backend)
        pos = lombscargle(x, y, f, normalize=normalize, backend=backend)
        ref = scipy_ls(x, y, -f, False, normalize)
        keep = compared(x, None, f, normalize, False)
        assert_close_on(neg, ref, keep, F64_RTOL, normalize)
        expected = np.conj(pos) if normalize == "amplitude" else pos
        assert_close_on(neg, expected, keep, 1e-12, normalize)


# --------------------------------------------------------------------------
# Large absolute times (e.g. MJDs)
# --------------------------------------------------------------------------


def lstsq_power(t, y, freqs, floating_mean):
    """SciPy's unnormalised power from an independent formulation, in float64:
    2 * (chi2 of the reference model - chi2 of the sinusoid fit) * n / 4, by
    np.linalg.lstsq, with the times shifted by their mean first. t is given in
    float64 (t + 5e4 has already been rounded: that rounded t is the input);
    t - mean(t) is then exact (Sterbenz: every t_i is within a factor 2 of the
    mean) and the phases are computed from values of ~100, so this reference
    carries ~1e-13 relative error where the direct phases w * t lose ~1e-10.
    (mpmath, which would give an arbitrary-precision reference, is not in
    the project's test environment; the shift makes float64 enough.)"""
    t = t - t.mean()
    n = t.size
    chi0 = np.sum((y - (y.mean() if floating_mean else 0.0)) ** 2) / n
    out = []
    for w in freqs:
        cols = [np.cos(w * t), np.sin(w * t)] + ([np.ones(n)] if floating_mean else [])
        design = np.stack(cols, axis=1)
        beta = np.linalg.lstsq(design, y, rcond=None)[0]
        resid = y - design @ beta
        out.append(chi0 - resid @ resid / n)
    return 2.0 * np.array(out) * n / 4.0


@pytest.mark.parametrize("floating_mean", [False, True])
@pytest.mark.parametrize("call", ["lombscargle", "lombscargle_uniform", "lombscargle_batch"])
def test_large_time_offset_accuracy(backend, rng, call, floating_mean):
    # kernpack documents (lombscargle, Notes): on the GPU the times are
    # shifted by their mean before the phases are computed, keeping full
    # accuracy for large absolute times; the CPU backend computes SciPy's
    # formula as written (unshifted), so it may lose what SciPy loses, no more.
    n, nf = 400, 300
    t0 = np.sort(rng.uniform(0.0, 100.0, n))
    y = np.sin(2 * np.pi * t0 / 0.37) + rng.normal(0, 1.0, n) + 1.0
    f0, df = 0.5, 2 * np.pi * 20 / nf  # up to ~125 rad/day: phases ~6e6 at t ~ 5e4
    freqs = f0 + df * np.arange(nf)
    # The reference itself, checked at zero offset against SciPy.
    at_zero = lstsq_power(t0, y, freqs, floating_mean)
    sp_zero = scipy_ls(t0, y, freqs, floating_mean=floating_mean)
    assert np.max(np.abs(at_zero - sp_zero)) <= 1e-11 * np.max(np.abs(sp_zero))

    t = t0 + 5e4 + rng.uniform(0, 1)  # MJD-like times (rounded to float64: the input)
    ref = lstsq_power(t, y, freqs, floating_mean)
    scale = np.max(np.abs(ref))
    if call == "lombscargle":
        got = lombscargle(t, y, freqs, floating_mean=floating_mean, backend=backend)
    elif call == "lombscargle_uniform":
        got = lombscargle_uniform(t, y, f0, df, nf, floating_mean=floating_mean, backend=backend)
    else:
        got = lombscargle_batch([t], [y], f0, df, nf, floating_mean=floating_mean, backend=backend)[0]
    err = np.max(np.abs(got - ref)) / scale
    scipy_err = np.max(np.abs(scipy_ls(t, y, freqs, floating_mean=floating_mean) - ref)) / scale
    # The case is demanding: unshifted float64 phases (SciPy) are off by more
    # than the reference's own error (~5e-13 at zero offset, above).
    assert scipy_err > 3e-11, scipy_err
    if backend == "gpu":
        # Shifted times: 1e-11 leaves a 20x margin over the reference's error
        # and is well under what unshifted phases lose (~2.5e-10).
        bound = 1e-11
    else:
        # SciPy's formula in another summation order: SciPy's phase error,
        # plus the usual 1e-12-level differences.
        bound = 1.5 * scipy_err + 1e-12
    assert err <= bound, f"kernpack error {err:.2e} (SciPy's: {scipy_err:.2e}) relative to max power"


# --------------------------------------------------------------------------
# Errors
# --------------------------------------------------------------------------


def _series(rng, n=30):
    x = np.sort(rng.uniform(0, 10, n))
    return x, np.sin(x) + rng.normal(0, 0.3, n), rng.uniform(0.1, 3, 7)


ERROR_CASES = {
    "mismatched x and y": (lambda x, y, f: dict(x=x, y=y[:-1], freqs=f), "equal non-zero length"),
    "mismatched weights": (lambda x, y, f: dict(x=x, y=y, freqs=f, weights=np.ones(x.size + 2)), "equal non-zero length"),
    "empty x": (lambda x, y, f: dict(x=[], y=[], freqs=f), "non-zero length"),
    "empty freqs": (lambda x, y, f: dict(x=x, y=y, freqs=[]), "freqs"),
    "2-D x": (lambda x, y, f: dict(x=x[:30].reshape(5, 6), y=y[:30].reshape(5, 6), freqs=f), "1-D"),
    "2-D freqs": (lambda x, y, f: dict(x=x, y=y, freqs=np.stack([f, f])), "freqs"),
    "negative weights": (
        lambda x, y, f: dict(x=x, y=y, freqs=f, weights=np.r_[-0.5, np.ones(x.size - 1)]),
        "non-negative",
    ),
    "zero-sum weights": (lambda x, y, f: dict(x=x, y=y, freqs=f, weights=np.zeros(x.size)), "sum to a positive"),
    "bad normalize": (lambda x, y, f: dict(x=x, y=y, freqs=f, normalize="foo"), "Normalize must be"),
    "NaN in y": (lambda x, y, f: dict(x=x, y=np.r_[y[:3], np.nan, y[4:]], freqs=f), r"y\[3\].*not finite"),
    "inf in x": (lambda x, y, f: dict(x=np.r_[x[:-1], np.inf], y=y, freqs=f), r"^x\[\d+\] = inf is not finite"),
    "NaN in freqs": (lambda x, y, f: dict(x=x, y=y, freqs=np.r_[f, np.nan]), r"freqs.*not finite"),
}


@pytest.mark.parametrize("case", list(ERROR_CASES))
def test_lombscargle_invalid_input_is_a_value_error(backend, rng, case):
    make, message = ERROR_CASES[case]
    kwargs = make(*_series(rng))
    with pytest.raises(ValueError, match=message):
        lombscargle(**kwargs, backend=backend)


@pytest.mark.parametrize(
    "precenter, floating_mean", [(False, True), (True, False), (True, True)], ids=["fm", "precenter", "both"]
)
def test_normalize_of_a_constant_series_is_a_value_error(backend, rng, precenter, floating_mean):
    # A constant y has no variance about its mean: 'normalize' would divide by
    # zero (SciPy returns rounding noise / 0). kernpack documents a ValueError.
    # The constants are random, so the mean of y is generally not exact.
    x = np.sort(rng.uniform(0, 10, 37))
    f = rng.uniform(0.1, 3, 5)
    for value in rng.uniform(-10, 10, 4):
        y = np.full(x.size, value)
        with pytest.raises(ValueError, match="vary|variance"):
            lombscargle(x, y, f, precenter=precenter, normalize=True, floating_mean=floating_mean, backend=backend)
            pytest.fail(f"no error for y = {value!r} (precenter={precenter}, floating_mean={floating_mean})")


def test_constant_series_without_centering_is_valid(backend, rng):
    # Without precenter/floating_mean the reference model is y = 0, and a
    # constant non-zero y has a non-zero variance about it: a valid input.
    x = np.sort(rng.uniform(0, 10, 37))
    f = rng.uniform(0.1, 3, 5)
    y = np.full(x.size, rng.uniform(1, 5))
    got = lombscargle(x, y, f, normalize=True, backend=backend)
    ref = scipy_ls(x, y, f, False, True)
    assert_close_on(got, ref, np.ones(f.size, bool), F64_RTOL)


# --------------------------------------------------------------------------
# lombscargle_uniform
# --------------------------------------------------------------------------


@pytest.mark.parametrize("normalize", MODES, ids=[str(m) for m in MODES])
def test_uniform_equals_lombscargle_on_the_grid(backend, rng, normalize):
    for case in range(12):
        precenter, floating_mean, weighted = bool(case % 2), bool(case // 2 % 2), bool(case // 4 % 2)
        n = int(rng.integers(5, 300))
        nf = int(rng.integers(1, 300))
        x = np.sort(rng.uniform(0, rng.uniform(5, 200), n))
        y = np.sin(x * rng.uniform(0.5, 5)) + rng.normal(0, 0.5, n) + rng.uniform(-2, 2)
        w = rng.uniform(0.1, 2, n) if weighted else None
        f0 = 0.0 if case == 3 else rng.uniform(0, 2)
        df = rng.uniform(1e-3, 0.1)
        got = lombscargle_uniform(
            x, y, f0, df, nf, precenter, normalize, weights=w, floating_mean=floating_mean, backend=backend
        )
        grid = f0 + df * np.arange(nf)
        ref = np.atleast_1d(
            lombscargle(x, y, grid, precenter=precenter, normalize=normalize, weights=w, floating_mean=floating_mean, backend=backend)
        )
        assert got.shape == (nf,) and got.dtype == ref.dtype
        keep = compared(x, w, grid, normalize, floating_mean)
        assert_close_on(got, ref, keep, F64_RTOL, f"case {case}")
        # And against SciPy directly.
        assert_close_on(got, scipy_ls(x, y, grid, precenter, normalize, w, floating_mean), keep, F64_RTOL)


@pytest.mark.parametrize("normalize", ["power", "normalize", "amplitude"])
def test_uniform_float32_in_float32_out(backend, rng, normalize):
    for floating_mean in (False, True):
        n, nf = 200, 500
        x = np.sort(rng.uniform(0, 100, n)).astype(np.float32)
        y = (np.sin(x * 0.9) + rng.normal(0, 0.5, n) + 1).astype(np.float32)
        w = rng.uniform(0.5, 1.5, n).astype(np.float32)
        f0, df = 0.05, 0.01
        got = lombscargle_uniform(x, y, f0, df, nf, False, normalize, weights=w, floating_mean=floating_mean,
                                  backend=backend)
        assert got.dtype == (np.complex64 if normalize == "amplitude" else np.float32)
        assert got.shape == (nf,)
        grid = f0 + df * np.arange(nf)
        ref = scipy_ls(x, y, grid, False, normalize, w, floating_mean)  # SciPy: the same values in float64
        keep = compared(x, w, grid, normalize, floating_mean)
        assert_close_on(got.astype(ref.dtype), ref, keep, F32_RTOL)


def test_uniform_mixed_dtypes_compute_in_float64(backend, rng):
    x = np.sort(rng.uniform(0, 50, 60)).astype(np.float32)
    y = rng.normal(size=60)  # float64
    got = lombscargle_uniform(x, y, 0.1, 0.05, 40, backend=backend)
    assert got.dtype == np.float64
    ref = scipy_ls(x, y, 0.1 + 0.05 * np.arange(40))
    assert_close_on(got, ref, np.ones(40, bool), F64_RTOL)


def test_uniform_single_frequency_accepts_any_step(backend, rng):
    # Documented: df is "> 0 (any value when nf == 1)".
    x = np.sort(rng.uniform(0, 50, 60))
    y = np.sin(x) + rng.normal(0, 0.2, 60)
    f0 = rng.uniform(0.5, 2)
    ref = np.atleast_1d(lombscargle(x, y, [f0], backend=backend))
    for df in (0.0, -rng.uniform(0.1, 1.0)):
        got = lombscargle_uniform(x, y, f0, df, 1, backend=backend)
        assert got.shape == (1,)
        assert_close_on(got, ref, np.ones(1, bool), F64_RTOL, f"df={df}")


@pytest.mark.parametrize(
    "f0, df, nf, error, message",
    [
        (0.1, 0.1, 0, ValueError, "nf must be > 0"),
        (0.1, -0.1, 5, ValueError, "df"),
        (0.1, 0.0, 5, ValueError, "df"),
        (-0.1, 0.1, 5, ValueError, "f0"),
        (0.1, 0.1, 5.0, TypeError, "nf must be an integer"),
        (0.1, 0.1, "5", TypeError, "nf must be an integer"),
        (0.1, 0.1, True, TypeError, "nf must be an integer"),
        (float("nan"), 0.1, 5, ValueError, "not finite"),
    ],
)
def test_uniform_invalid_grid(backend, rng, f0, df, nf, error, message):
    x, y, _ = _series(rng)
    with pytest.raises(error, match=message):
        lombscargle_uniform(x, y, f0, df, nf, backend=backend)


def test_uniform_integer_nf_types(backend, rng):
    x, y, _ = _series(rng)
    a = lombscargle_uniform(x, y, 0.2, 0.1, np.int32(17), backend=backend)
    b = lombscargle_uniform(x, y, 0.2, 0.1, 17, backend=backend)
    assert a.shape == (17,)
    np.testing.assert_array_equal(a, b)


def test_uniform_invalid_series(backend, rng):
    x, y, _ = _series(rng)
    with pytest.raises(ValueError, match="equal non-zero length"):
        lombscargle_uniform(x, y[:-1], 0.1, 0.1, 5, backend=backend)
    with pytest.raises(ValueError, match=r"y\[0\].*not finite"):
        lombscargle_uniform(x, np.r_[np.nan, y[1:]], 0.1, 0.1, 5, backend=backend)
    with pytest.raises(ValueError, match="Normalize must be"):
        lombscargle_uniform(x, y, 0.1, 0.1, 5, normalize="foo", backend=backend)


# --------------------------------------------------------------------------
# lombscargle_batch
# --------------------------------------------------------------------------


def _batch(rng, nseries, dtype=np.float64, weighted=False):
    lengths = rng.integers(5, 120, nseries)
    xs, ys, ws = [], [], []
    for n in lengths:
        x = np.sort(rng.uniform(0, rng.uniform(10, 100), n))
        xs.append(x.astype(dtype))
        ys.append((np.sin(x * rng.uniform(0.3, 4)) + rng.normal(0, 0.5, n) + rng.uniform(-1, 1)).astype(dtype))
        ws.append(rng.uniform(0.1, 2, n).astype(dtype))
    return xs, ys, (ws if weighted else None), lengths


@pytest.mark.parametrize("normalize", ["power", "normalize", "amplitude"])
@pytest.mark.parametrize("grid", ["shared", "per-series"])
def test_batch_matches_per_series_uniform(backend, rng, normalize, grid):
    for case in range(4):
        precenter, floating_mean, weighted = bool(case % 2), bool(case // 2), case in (1, 2)
        nseries = int(rng.integers(1, 9))
        nf = int(rng.integers(1, 200))
        xs, ys, ws, lengths = _batch(rng, nseries, weighted=weighted)
        if grid == "shared":
            f0, df = rng.uniform(0.05, 1), rng.uniform(0.005, 0.1)
            f0s, dfs = [f0] * nseries, [df] * nseries
        else:
            f0s, dfs = rng.uniform(0.05, 1, nseries), rng.uniform(0.005, 0.1, nseries)
            f0, df = f0s, dfs
        opts = dict(normalize=normalize, floating_mean=floating_mean, precenter=precenter)
        expected = np.stack(
            [
                lombscargle_uniform(xs[s], ys[s], f0s[s], dfs[s], nf, precenter, normalize,
                                    weights=None if ws is None else ws[s], floating_mean=floating_mean,
                                    backend=backend)
                for s in range(nseries)
            ]
        )
        listed = lombscargle_batch(xs, ys, f0, df, nf, weights=ws, backend=backend, **opts)
        offsets = np.concatenate([[0], np.cumsum(lengths)])
        flat = lombscargle_batch(
            np.concatenate(xs), np.concatenate(ys), f0, df, nf, offsets=offsets,
            weights=None if ws is None else np.concatenate(ws), backend=backend, **opts,
        )
        for got in (listed, flat):
            assert got.shape == (nseries, nf) and got.dtype == expected.dtype
            for s in range(nseries):
                keep = compared(xs[s], None if ws is None else ws[s], f0s[s] + dfs[s] * np.arange(nf),
                                normalize, floating_mean)
                assert_close_on(got[s], expected[s], keep, F64_RTOL, f"case {case} series {s}")


def test_batch_float32_and_int32_offsets(backend, rng):
    xs, ys, _, lengths = _batch(rng, 5, dtype=np.float32)
    offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int32)
    got = lombscargle_batch(np.concatenate(xs), np.concatenate(ys), 0.1, 0.02, 150, offsets=offsets,
                            backend=backend)
    assert got.dtype == np.float32 and got.shape == (5, 150)
    for s in range(5):
        ref = scipy_ls(xs[s], ys[s], 0.1 + 0.02 * np.arange(150))
        assert_close_on(got[s], ref, np.ones(150, bool), F32_RTOL, f"series {s}")


@pytest.mark.parametrize("normalize", ["power", "normalize", "amplitude"])
def test_batch_best_peaks(backend, rng, normalize):
    nseries, nf = 7, 400
    xs, ys, _, _ = _batch(rng, nseries)
    f0s, dfs = rng.uniform(0.05, 0.5, nseries), rng.uniform(0.005, 0.05, nseries)
    full = lombscargle_batch(xs, ys, f0s, dfs, nf, normalize=normalize, floating_mean=True, backend=backend)
    best = lombscargle_batch(xs, ys, f0s, dfs, nf, normalize=normalize, floating_mean=True, best=True,
                             backend=backend)
    assert isinstance(best, kernpack.signal.BestPeaks)
    magnitude = np.abs(full)
    np.testing.assert_array_equal(best.index, np.argmax(magnitude, axis=1))
    assert best.index.dtype == np.int64
    np.testing.assert_allclose(best.power, magnitude.max(axis=1), rtol=1e-12)
    np.testing.assert_allclose(best.frequency, f0s + dfs * best.index, rtol=1e-15)


def test_batch_best_with_shared_grid(backend, rng):
    xs, ys, _, _ = _batch(rng, 4)
    f0, df, nf = 0.1, 0.01, 300
    full = lombscargle_batch(xs, ys, f0, df, nf, backend=backend)
    best = lombscargle_batch(xs, ys, f0, df, nf, best=True, backend=backend)
    index = np.argmax(full, axis=1)
    np.testing.assert_array_equal(best.index, index)
    np.testing.assert_allclose(best.power, full[np.arange(4), index], rtol=1e-12)
    np.testing.assert_allclose(best.frequency, f0 + df * index, rtol=1e-15)


# --------------------------------------------------------------------------
# lombscargle_batch(..., peaks=k): each series' best k peaks
# --------------------------------------------------------------------------


def _peak_series(rng, dtype, vary):
    """Lists (x, y, w) of 1 to 10 series: planted periods, some of 1 to 4
    samples (flat or degenerate periodograms: runs of equal values), some
    quantised, some constant (not where y must `vary`: 'normalize')."""
    series = []
    for _ in range(int(rng.integers(1, 11))):
        n = int(rng.integers(1 + vary, 5)) if rng.integers(4) == 0 else int(rng.integers(5, 150))
        x = np.sort(rng.uniform(0, rng.uniform(5, 100), n))
        y = np.sin(x * rng.uniform(0.3, 5)) + rng.normal(0, rng.uniform(0.05, 1.0), n)
        if rng.integers(4) == 0:
            y = np.round(y)
        if rng.integers(6) == 0:
            y = np.full(n, 1.5)
        if vary and np.ptp(y) == 0:
            y[0] += 1.0
        series.append(tuple(a.astype(dtype) for a in (x, y, rng.uniform(0.1, 2, n))))
    return [[s[i] for s in series] for i in range(3)]


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_batch_top_peaks_follow_their_definition(backend, rng, dtype):
    """The peaks are the reference's peaks (conftest.ref_peaks) of the
    whole batch's periodograms, on shared and per-series grids, with random
    k and separations: indices, powers and frequencies exactly."""
    for case in range(40):
        normalize = ("power", "normalize")[int(rng.integers(2))]
        xs, ys, ws = _peak_series(rng, dtype, vary=normalize == "normalize")
        nseries, nf = len(xs), int(rng.integers(1, 400))
        if rng.integers(2):  # one grid, sometimes from frequency 0
            f0, df = (0.0 if rng.integers(3) == 0 else rng.uniform(0.01, 1)), rng.uniform(0.002, 0.05)
            f0s, dfs = np.full(nseries, f0), np.full(nseries, df)
        else:
            f0s, dfs = rng.uniform(0, 1, nseries), rng.uniform(0.002, 0.05, nseries)
            f0, df = f0s, dfs
        k = int(rng.integers(1, 8)) if rng.integers(4) else int(rng.integers(8, _native.MAX_PEAKS + 1))
        separation = (0.0, float(rng.uniform(0, 0.2)), float(rng.uniform(0, 3)))[int(rng.integers(3))]
        opts = dict(normalize=normalize, floating_mean=bool(rng.integers(2)),
                    weights=ws if rng.integers(2) else None, backend=backend)
        if rng.integers(2):  # flat arrays and offsets
            offsets = np.concatenate([[0], np.cumsum([len(a) for a in xs])])
            flat = lambda a: None if a is None else np.concatenate(a)  # noqa: E731
            xs, ys, opts["weights"], opts["offsets"] = flat(xs), flat(ys), flat(opts["weights"]), offsets
        full = lombscargle_batch(xs, ys, f0, df, nf, **opts)
        got = lombscargle_batch(xs, ys, f0, df, nf, peaks=k, separation=separation, **opts)
        assert isinstance(got, TopPeaks)
        assert got.index.shape == got.power.shape == got.frequency.shape == (nseries, k)
        assert (got.index.dtype, got.power.dtype, got.frequency.dtype) == (np.int64, np.float64, np.float64)
        for s, row in enumerate(full):
            axis = f0s[s] + dfs[s] * np.arange(nf)
            want = ref_peaks(row, axis, k, separation, higher=True)
            m = len(want)
            message = f"case {case} series {s}"
            np.testing.assert_array_equal(got.index[s], want + [-1] * (k - m), err_msg=message)
            np.testing.assert_array_equal(got.power[s, :m], row[want].astype(np.float64), err_msg=message)
            np.testing.assert_array_equal(got.frequency[s, :m], axis[want], err_msg=message)
            assert np.isnan(got.power[s, m:]).all() and np.isnan(got.frequency[s, m:]).all()
            if not np.isnan(row).all():  # the best peak is the first highest value
                assert want[0] == np.nanargmax(row), message


def test_batch_top_peak_is_the_best_peak(backend, rng):
    """peaks=1 is best=True's peak, on a shared and on per-series grids."""
    xs, ys, _, _ = _batch(rng, 9, dtype=np.float32)
    for f0, df in ((0.05, 0.01), (rng.uniform(0.01, 0.5, 9), rng.uniform(0.005, 0.05, 9))):
        for normalize in ("power", "normalize"):
            best = lombscargle_batch(xs, ys, f0, df, 500, normalize=normalize, best=True, backend=backend)
            top = lombscargle_batch(xs, ys, f0, df, 500, normalize=normalize, peaks=1, backend=backend)
            for got, want in zip(top, best):
                np.testing.assert_array_equal(got[:, 0], want)


def test_batch_top_peaks_of_an_empty_batch(rng):
    for got in (lombscargle_batch([], [], 0.1, 0.01, 50, peaks=3, backend="cpu"),
                lombscargle_batch(np.empty(0), np.empty(0), 0.1, 0.01, 50, offsets=[0], peaks=3, separation=0.5,
                                  backend="cpu")):
        assert isinstance(got, TopPeaks)
        assert [(a.shape, a.dtype) for a in got] == [((0, 3), np.float64), ((0, 3), np.float64), ((0, 3), np.int64)]
    with pytest.raises(ValueError, match="peaks = 0"):  # still checked
        lombscargle_batch([], [], 0.1, 0.01, 50, peaks=0, backend="cpu")


def test_batch_top_peaks_of_device_arrays_run_on_their_gpu_as_host_arrays(rng, monkeypatch):
    """Device arrays (stand-ins here, without a GPU): the samples are read
    back once, the batch runs as host arrays in the arrays' GPU context (the
    CPU's here) and each field of the peaks goes back to the device."""
    from kernpack import signal
    from test_phasefold import _StandInDeviceArray

    xs, ys, ws, _ = _batch(rng, 6, dtype=np.float32, weighted=True)
    offsets = np.concatenate([[0], np.cumsum([len(a) for a in xs])])
    flat = [_StandInDeviceArray(np.concatenate(a)) for a in (xs, ys, ws)]
    contexts, uploaded = [], []

    def gpu_context(arrays, backend, device):
        contexts.append(sorted(arrays))
        return kernpack._context.context("cpu")

    monkeypatch.setattr(signal, "device_float_context", gpu_context)
    monkeypatch.setattr(signal, "_to_device", lambda like, host: uploaded.append(like.obj) or host)
    f0, df = rng.uniform(0.05, 0.5, 6), rng.uniform(0.005, 0.05, 6)
    got = lombscargle_batch(*flat[:2], f0, df, 300, offsets=offsets, weights=flat[2], peaks=5, separation=0.1)
    want = lombscargle_batch(xs, ys, f0, df, 300, weights=ws, peaks=5, separation=0.1, backend="cpu")
    assert contexts == [["weights", "x", "y"]] and [a.copies for a in flat] == [1, 1, 1]
    assert uploaded == [flat[0]] * 3
    for g, w in zip(got, want):
        np.testing.assert_array_equal(g, w)


def test_batch_top_peaks_bad_arguments(rng):
    x, y, _ = _series(rng)
    xs, ys = [x[:10], x[10:]], [y[:10], y[10:]]
    call = lambda **kw: lombscargle_batch(xs, ys, 0.1, 0.05, 20, backend="cpu", **kw)  # noqa: E731
    ctx = kernpack._context.context("cpu")

    def native(mode, best, peaks):
        return _native.lombscargle_batch(ctx, (x, y, None), np.array([0, 10, x.size], np.uintp),
                                         (np.array([0.1]), np.array([0.05]), 20), (mode, False, False), best, peaks)

    value_errors = [
        (lambda: call(peaks=0), "peaks = 0 is out of range: 1 to 256"),
        (lambda: call(peaks=257), "peaks = 257 is out of range"),
        (lambda: call(peaks=2, separation=-0.1), "separation = -0.1 must be finite"),
        (lambda: call(peaks=2, separation=np.nan), "separation = nan must be"),
        (lambda: call(peaks=2, separation=np.inf), "separation = inf"),
        (lambda: call(separation=0.1), "separation applies to peaks"),
        (lambda: call(best=True, separation=0.1), "separation applies to peaks"),
        (lambda: call(peaks=2, best=True), "best=True and peaks=k are exclusive"),
        (lambda: call(peaks=2, normalize="amplitude"), "peaks=k ranks real periodograms"),
        (lambda: lombscargle_batch([], [], 0.1, 0.05, 20, peaks=2, normalize="amplitude"), "real periodograms"),
        # The native layer checks them too, with kernpack's messages.
        (lambda: native("power", False, (0, 0.0)), "k = 0 peaks per series is out of range"),
        (lambda: native("power", False, (1, -1.0)), "separation = -1 must be finite"),
        (lambda: native("amplitude", False, (2, 0.0)), "peaks of amplitude periodograms"),
        (lambda: native("power", True, (2, 0.0)), "best and peaks are exclusive"),
    ]
    for bad, message in value_errors:
        with pytest.raises(ValueError, match=message):
            bad()
    type_errors = [
        (lambda: call(peaks=2.0), "peaks must be an integer"),
        (lambda: call(peaks=True), "not a bool"),
        (lambda: call(peaks=2, separation="wide"), "separation must be a number"),
    ]
    for bad, message in type_errors:
        with pytest.raises(TypeError, match=message):
            bad()


BATCH_ERRORS = {
    "offsets not starting at 0": (lambda x, y, n: dict(offsets=np.array([1, 10, n])), ValueError, "start at 0"),
    "offsets not ending at len": (lambda x, y, n: dict(offsets=np.array([0, 10, n - 1])), ValueError, "end at"),
    "empty series": (lambda x, y, n: dict(offsets=np.array([0, 10, 10, n])), ValueError, "empty"),
    "decreasing offsets": (lambda x, y, n: dict(offsets=np.array([0, 12, 10, n])), ValueError, "decrease"),
    "float offsets": (lambda x, y, n: dict(offsets=np.array([0.0, 10.0, n])), TypeError, "integers"),
    "f0/df length mismatch": (
        lambda x, y, n: dict(offsets=np.array([0, 10, n]), f0=[0.1, 0.2], df=[0.1]), ValueError, "f0 and df"),
    "per-series grid of the wrong count": (
        lambda x, y, n: dict(offsets=np.array([0, 10, n]), f0=[0.1, 0.2, 0.3], df=[0.1, 0.1, 0.1]),
        ValueError, "one value per series"),
    "lists and offsets": (
        lambda x, y, n: dict(x=[x[:10], x[10:]], y=[y[:10], y[10:]], offsets=np.array([0, 10, n])),
        ValueError, "not both"),
    "empty series in a list": (lambda x, y, n: dict(x=[x[:10], x[10:10], x[10:]], y=[y[:10], y[10:10], y[10:]]),
                               ValueError, "empty"),
    "lists of other lengths": (lambda x, y, n: dict(x=[x[:10], x[10:]], y=[y[:11], y[11:]]), ValueError, "lengths"),
    "flat arrays without offsets": (lambda x, y, n: dict(), ValueError, "offsets"),
}


@pytest.mark.parametrize("case", list(BATCH_ERRORS))
def test_batch_invalid_input(backend, rng, case):
    x, y, _ = _series(rng)
    make, error, message = BATCH_ERRORS[case]
    kwargs = dict(x=x, y=y, f0=0.1, df=0.05, nf=20)
    kwargs.update(make(x, y, x.size))
    with pytest.raises(error, match=message):
        lombscargle_batch(backend=backend, **kwargs)


def test_batch_error_names_the_series(backend, rng):
    x, y, _ = _series(rng)
    y = y.copy()
    y[15] = np.nan  # in series 1 of [0, 10), [10, 30)
    with pytest.raises(ValueError, match=re.compile(r"series 1.*not finite")):
        lombscargle_batch(x, y, 0.1, 0.05, 20, offsets=np.array([0, 10, x.size]), backend=backend)
