"""pytest plugin: ``scipy.ndimage.correlate1d``, ``gaussian_filter1d``,
``gaussian_filter``, ``median_filter``, ``rank_filter``,
``percentile_filter`` and ``uniform_filter`` are kernpack's
(kernpack.ndimage), so SciPy's own test module runs against kernpack
(python/tests/test_gaussian.py, test_rank.py and test_uniform_nd.py run
it). SciPy's
internal calls (its gaussian_laplace calling its own gaussian_filter, ...)
stay SciPy's: only the public names are replaced. The calls are counted, and
so are those kernpack computed itself (the others ran SciPy's function as
kernpack's fallback), so a run that substituted nothing shows it; those of
the box filters (fused 2-D and N-D) are counted apart too."""
import scipy.ndimage

from kernpack import _native, ndimage

NAMES = ("correlate1d", "gaussian_filter1d", "gaussian_filter", "median_filter", "rank_filter", "percentile_filter",
         "uniform_filter")
CALLS = {name: 0 for name in NAMES}
COMPUTED = {"computed": 0, "box computed": 0}


def _counted(name):
    function = getattr(ndimage, name)

    def call(*args, **kwargs):
        CALLS[name] += 1
        return function(*args, **kwargs)

    call.__module__ = "kernpack.ndimage"  # kernpack's: its fallback never calls it back
    call.__name__ = name
    return call


def _computing(native, box=False):
    def call(*args, **kwargs):
        COMPUTED["computed"] += 1
        COMPUTED["box computed"] += box
        return native(*args, **kwargs)

    return call


try:  # SciPy >= 1.16 marks its tests from a table keyed by the public functions
    from scipy._lib._array_api import xp_capabilities_table
except ImportError:
    xp_capabilities_table = {}
for _name in NAMES:
    _scipys, _kernpacks = getattr(scipy.ndimage, _name), _counted(_name)
    if _scipys in xp_capabilities_table:
        xp_capabilities_table[_kernpacks] = xp_capabilities_table[_scipys]
    setattr(scipy.ndimage, _name, _kernpacks)
_native_correlate, _native_correlate_device = _native.correlate, _native.correlate_device
_native.correlate = _computing(_native_correlate)
_native.correlate_device = _computing(_native_correlate_device)
_native_rank, _native_rank_device = _native.rank_filter, _native.rank_filter_device
_native.rank_filter = _computing(_native_rank)
_native.rank_filter_device = _computing(_native_rank_device)
for _box in ("box_filter", "box_filter_device", "uniform_filter_nd", "uniform_filter_nd_device"):
    setattr(_native, _box, _computing(getattr(_native, _box), box=True))


def pytest_terminal_summary(terminalreporter):
    terminalreporter.write_line(f"kernpack ndimage calls: {CALLS} {COMPUTED}")
