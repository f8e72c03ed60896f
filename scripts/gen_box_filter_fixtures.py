#!/usr/bin/env python3
"""Writes tests/fixtures/box_filter_scipy.txt: scipy.ndimage.uniform_filter
outputs that kernpack's box filter must reproduce, for every boundary mode,
f32 and f64, windows from 1 to 33 (wider than the image too, where SciPy
reflects again and again) and shapes that cross the kernels' tiles.

    python3 scripts/gen_box_filter_fixtures.py [OUTPUT]

"interior" is not a SciPy mode: its expected output is SciPy's (any mode) on
the points whose window fits, and the input elsewhere.

Format, one case after another (shortest round-trip decimals of the case's dtype):
    case NAME dtype f32|f64 rows R cols C size K mode MODE cval V
    in ... / out ...
    end
"""
import sys

import numpy as np
import scipy
from scipy.ndimage import uniform_filter

MODES = ["reflect", "constant", "nearest", "mirror", "wrap", "interior"]
SMALL_SHAPES = [(1, 1), (1, 9), (6, 1), (5, 4), (13, 17)]
SIZES = [1, 3, 5, 9, 11, 31, 33]
# Crossing tiles (64 or 32 columns, 32 or 16 rows) with the small and large kernels.
LARGE_SHAPES = [(18, 70), (34, 20)]
LARGE_SIZES = [3, 33]


def expected(x, size, mode, cval):
    if mode != "interior":
        return uniform_filter(x, size=size, mode=mode, cval=cval)
    out = x.copy()
    r = size // 2
    rows, cols = x.shape
    if rows > 2 * r and cols > 2 * r:
        full = uniform_filter(x, size=size, mode="reflect")
        out[r:rows - r, r:cols - r] = full[r:rows - r, r:cols - r]
    return out


def main():
    path = sys.argv[1] if len(sys.argv) > 1 else "tests/fixtures/box_filter_scipy.txt"
    rng = np.random.default_rng(20261122)
    text = f"# scipy {scipy.__version__} numpy {np.__version__}: scripts/gen_box_filter_fixtures.py\n"
    count = 0
    for dtype, name in [(np.float32, "f32"), (np.float64, "f64")]:
        for mode in MODES:
            cases = [(shape, k) for shape in SMALL_SHAPES for k in SIZES]
            cases += [(shape, k) for shape in LARGE_SHAPES for k in LARGE_SIZES]
            for (rows, cols), size in cases:
                if True:
                    x = (rng.uniform(-1.0, 1.0, (rows, cols)) + rng.uniform(-3.0, 3.0)).astype(dtype)
                    cval = float(np.round(rng.uniform(-2.0, 2.0), 3)) if mode == "constant" else 0.0
                    out = expected(x, size, mode, cval)
                    assert out.dtype == dtype
                    text += (f"case {mode}-{rows}x{cols}-k{size}-{name} dtype {name} rows {rows} cols {cols} "
                             f"size {size} mode {mode} cval {cval!r}\n")
                    # Shortest round-trip decimals of the dtype (parse f32 cases as f32).
                    text += "in " + " ".join(str(v) for v in x.ravel()) + "\n"
                    text += "out " + " ".join(str(v) for v in out.ravel()) + "\n"
                    text += "end\n"
                    count += 1
    with open(path, "w") as f:
        f.write(text)
    print(f"{count} cases -> {path}")


if __name__ == "__main__":
    main()
