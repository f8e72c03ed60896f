"""A pytest plugin (``-p _astropy_substitute``) that runs astropy's own
LombScargle tests with kernpack.timeseries.LombScargle in place of
astropy's: ``power(method='chi2')`` and ``autopower()`` run kernpack, other
``power`` methods (its default 'auto' included) stay astropy's, so the
tests comparing 'auto' with 'chi2' compare astropy with kernpack. Cases outside what kernpack claims (nterms=0, astropy units and
Time inputs, methods other than chi2/auto) are deselected."""
from __future__ import annotations

import numpy as np

import astropy.timeseries.periodograms.lombscargle as package
from astropy.timeseries.periodograms.lombscargle import LombScargle as AstropyLombScargle

import kernpack.timeseries as timeseries

_KERNPACK = ("chi2", "auto")


class Substitute(timeseries.LombScargle):
    available_methods = AstropyLombScargle.available_methods

    def power(self, frequency, normalization=None, method="auto", assume_regular_frequency=False,
              method_kwds=None):
        if method == "chi2":
            method = "kernpack"
        elif method == "auto":
            return self._astropy().power(frequency, normalization, method, assume_regular_frequency, method_kwds)
        return super().power(frequency, normalization, method, assume_regular_frequency, method_kwds)

    def autopower(self, method="auto", method_kwds=None, normalization=None, **kw):
        if method in _KERNPACK:
            method = "kernpack"
        return super().autopower(method, method_kwds, normalization, **kw)


def pytest_configure(config):
    package.LombScargle = Substitute


def _claimed(item) -> bool:
    params = getattr(getattr(item, "callspec", None), "params", {})
    if params.get("nterms", 1) == 0:
        return False
    if params.get("with_units") or "units" in item.name or "absolute_times" in item.name:
        return False
    method = params.get("method", "auto")
    return method in _KERNPACK


def pytest_collection_modifyitems(config, items):
    kept = [i for i in items if _claimed(i)]
    dropped = [i for i in items if not _claimed(i)]
    if dropped:
        config.hook.pytest_deselected(items=dropped)
    items[:] = kept


def pytest_terminal_summary(terminalreporter):
    terminalreporter.write_line("kernpack substituted for astropy.timeseries LombScargle (power chi2, autopower)")


__all__ = ["Substitute", "np"]
