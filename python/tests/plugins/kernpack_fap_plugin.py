"""pytest plugin: astropy's LombScargle.false_alarm_probability /
false_alarm_level call kernpack's functions instead of astropy's, so astropy's
own test module runs against kernpack (python/tests/test_significance.py runs
it). Quantities are taken apart here (kernpack takes plain arrays: t in one
unit, fmax in its inverse); the calls are counted, so a run that substituted
nothing shows it."""
import numpy as np
from astropy import units as u
from astropy.timeseries.periodograms.lombscargle import _statistics as st

from kernpack import _significance as ks


def _plain(t, y, dy, fmax):
    if isinstance(t, u.Quantity):
        unit = t.unit
        fmax = u.Quantity(fmax).to_value(1 / unit)
        t = t.value
    y_unit = y.unit if isinstance(y, u.Quantity) else None
    if isinstance(y, u.Quantity):
        y = y.value
    if isinstance(dy, u.Quantity):
        dy = dy.to_value(y_unit) if y_unit is not None else dy.value
    return t, y, dy, float(u.Quantity(fmax).value) if isinstance(fmax, u.Quantity) else fmax


def fap(Z, fmax, t, y, dy, normalization="standard", method="baluev", method_kwds=None):
    t, y, dy, fmax = _plain(t, y, dy, fmax)
    Z = Z.value if isinstance(Z, u.Quantity) else Z
    return ks.false_alarm_probability(Z, fmax, t, y, dy, normalization, method, method_kwds)


def fal(p, fmax, t, y, dy, normalization, method="baluev", method_kwds=None):
    t, y, dy, fmax = _plain(t, y, dy, fmax)
    return ks.false_alarm_level(p, fmax, t, y, dy, normalization, method, method_kwds)


st.false_alarm_probability = fap
st.false_alarm_level = fal

CALLS = {"fap": 0, "level": 0}
_fap, _fal = fap, fal


def _count_fap(*a, **k):
    CALLS["fap"] += 1
    return _fap(*a, **k)


def _count_fal(*a, **k):
    CALLS["level"] += 1
    return _fal(*a, **k)


st.false_alarm_probability = _count_fap
st.false_alarm_level = _count_fal


def pytest_terminal_summary(terminalreporter):
    terminalreporter.write_line(f"kernpack significance calls: {CALLS}")
