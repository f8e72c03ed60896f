"""A pytest plugin (``-p _bls_astropy_substitute``) that runs astropy's own
BoxLeastSquares tests with kernpack.timeseries.BoxLeastSquares in place of
astropy's: ``power`` and ``autopower`` with the default (``'fast'``)
method run kernpack's search; ``method='slow'`` runs astropy's own
brute-force method, so the tests comparing 'fast' with 'slow' compare
kernpack with astropy. ``model``, ``transit_mask``, ``compute_stats`` and
``autoperiod`` are kernpack's NumPy versions.

Deselected (outside what kernpack claims: astropy ``Quantity``, ``Time``
and ``TimeDelta`` inputs, which kernpack refuses with a TypeError):
test_input_units, test_period_units, test_absolute_times, and the cases of
test_results_units, test_model and test_compute_stats with units."""
from __future__ import annotations

import astropy.timeseries.periodograms.bls as package

import kernpack.timeseries as timeseries


def pytest_configure(config):
    package.BoxLeastSquares = timeseries.BoxLeastSquares


_WITH_UNITS_ONLY = ("test_input_units", "test_period_units", "test_absolute_times")


def _claimed(item) -> bool:
    if item.originalname in _WITH_UNITS_ONLY:
        return False
    params = getattr(getattr(item, "callspec", None), "params", {})
    if params.get("with_units"):
        return False
    return params.get("t_unit") is None and params.get("y_unit") is None


def pytest_collection_modifyitems(config, items):
    kept = [i for i in items if _claimed(i)]
    dropped = [i for i in items if not _claimed(i)]
    if dropped:
        config.hook.pytest_deselected(items=dropped)
    items[:] = kept


def pytest_terminal_summary(terminalreporter):
    terminalreporter.write_line("kernpack substituted for astropy.timeseries BoxLeastSquares (power fast, autopower)")
