"""The examples run (on NumPy arrays and the CPU backend here; with CuPy on the
GPU machine) and print what they promise."""
import os
import subprocess
import sys

import pytest

import kernpack

EXAMPLES = os.path.join(os.path.dirname(__file__), "..", "examples")
EXPECT = {
    "periodogram.py": "best period (uniform grid):    3.21",
    "survey_batch.py": "100.0% recovered",
    "smooth_image.py": "reflect : std",
    "normalize_streams.py": "each array now sums to {1.0}",
    "fg_system.py": "delta[1] = 262144-78.6432j",
    "lorenz96_ensemble.py": "ensemble spread every 100 steps",
}


@pytest.mark.parametrize("name", sorted(EXPECT))
@pytest.mark.parametrize("on", ["cpu", "device"])
def test_example(name, on):
    env = dict(os.environ)
    if on == "cpu":
        env["KERNPACK_EXAMPLES_CPU"] = "1"
        env["KERNPACK_BACKEND"] = "cpu"
    elif kernpack.device_count() == 0:
        pytest.skip("no GPU: the examples' device run needs one")
    out = subprocess.run([sys.executable, name], cwd=EXAMPLES, env=env, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    assert EXPECT[name] in out.stdout, out.stdout
