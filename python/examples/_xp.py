"""The array library the examples use: CuPy on a GPU machine (results stay on
the device), else NumPy (kernpack runs on the CPU). ``KERNPACK_EXAMPLES_CPU=1``
forces NumPy."""
import os

import numpy as np

import kernpack

xp = np
if os.environ.get("KERNPACK_EXAMPLES_CPU") != "1" and kernpack.device_count() > 0:
    try:
        import cupy as xp  # noqa: F811
    except ImportError:
        pass


def to_host(a):
    return a.get() if hasattr(a, "get") and xp is not np else np.asarray(a)
