"""Normalising many arrays, x <- x / sum(x), on several CUDA streams at once
(CuPy streams; on a machine without a GPU the same calls run on the CPU)."""
import numpy as np
from _xp import to_host, xp

import kernpack

rng = np.random.default_rng(5)
arrays = [xp.asarray(rng.uniform(0, 1, 1_000_000)) for _ in range(8)]
if xp is np:
    sums = [kernpack.reduce.normalize(a) for a in arrays]
else:
    streams = [xp.cuda.Stream(non_blocking=True) for _ in range(4)]
    sums = []
    for i, a in enumerate(arrays):
        with streams[i % len(streams)]:      # kernpack enqueues on CuPy's current stream
            sums.append(kernpack.reduce.normalize(a))
    for s in streams:
        s.synchronize()
print("sums:", ", ".join(f"{float(to_host(s)):.1f}" for s in sums))
print("each array now sums to", {round(float(to_host(a).sum()), 12) for a in arrays})
