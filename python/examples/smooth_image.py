"""Smoothing an image: scipy.ndimage.uniform_filter's signature, every boundary mode."""
import numpy as np
from _xp import to_host, xp

import kernpack

rng = np.random.default_rng(3)
image = xp.asarray(rng.normal(size=(2048, 2048)).astype(np.float32))
for mode in ("reflect", "nearest", "wrap"):
    smooth = kernpack.ndimage.uniform_filter(image, size=9, mode=mode)
    print(f"{mode:8s}: std {float(to_host(image).std()):.3f} -> {float(to_host(smooth).std()):.3f}")
