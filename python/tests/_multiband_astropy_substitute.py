"""A pytest plugin (``-p _multiband_astropy_substitute``) that runs
astropy's own LombScargleMultiband tests with
kernpack.timeseries.LombScargleMultiband in place of astropy's: both
methods ('flexible' and 'fast' with ``sb_method='auto'``) run kernpack;
a ``sb_method`` named by astropy runs astropy's fast method itself. Cases
outside what kernpack claims are deselected: astropy units, ``Time`` and
``TimeSeries`` inputs (kernpack takes plain arrays), and the single-band
equivalence with sb_methods other than 'auto' (those run astropy on both
sides)."""
from __future__ import annotations

import astropy.timeseries.periodograms.lombscargle_multiband as package
from astropy.timeseries.periodograms.lombscargle_multiband import LombScargleMultiband as AstropyMultiband

import kernpack.timeseries as timeseries


class Substitute(timeseries.LombScargleMultiband):
    available_methods = AstropyMultiband.available_methods


def pytest_configure(config):
    package.LombScargleMultiband = Substitute


def _claimed(item) -> bool:
    params = getattr(getattr(item, "callspec", None), "params", {})
    if params.get("with_units") or "unit" in item.name or "absolute_times" in item.name:
        return False
    if "from_timeseries" in item.name:
        return False
    if "single_band_equivalence" in item.name and params.get("sb_method") != "auto":
        return False
    return True


def pytest_collection_modifyitems(config, items):
    kept = [i for i in items if _claimed(i)]
    dropped = [i for i in items if not _claimed(i)]
    if dropped:
        config.hook.pytest_deselected(items=dropped)
    items[:] = kept


def pytest_terminal_summary(terminalreporter):
    terminalreporter.write_line("kernpack substituted for astropy.timeseries LombScargleMultiband")
