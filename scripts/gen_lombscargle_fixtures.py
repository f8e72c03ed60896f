#!/usr/bin/env python3
"""Writes tests/fixtures/lombscargle_scipy.txt: scipy.signal.lombscargle outputs
for the cases the CPU reference must reproduce (weights, floating_mean, each
normalize mode, precenter, odd sizes, frequency 0, an offset time origin).

    python3 scripts/gen_lombscargle_fixtures.py [OUTPUT]

Format, one case after another (numbers in repr, so round-trip exact):
    case NAME
    n NX nf NF normalize MODE floating_mean 0|1 precenter 0|1 weighted 0|1
    t ...  / y ... / w ... (only when weighted) / f ...
    re ... / im ... (only for amplitude)
    end
"""
import sys
import warnings

import numpy as np
import scipy
from scipy.signal import lombscargle


def line(key, values):
    return key + " " + " ".join(repr(float(v)) for v in values) + "\n"


def case(rng, name, n, nf, normalize, floating_mean, weighted, precenter=False, t0=0.0):
    t = t0 + np.sort(rng.uniform(0.0, 50.0, n))
    rng.shuffle(t)  # the order of samples must not matter
    period = rng.uniform(2.0, 9.0)
    y = 1.5 * np.sin(2 * np.pi * t / period + 0.3) + 0.7 + rng.normal(0.0, 0.5, n)
    w = rng.uniform(0.2, 3.0, n) if weighted else None
    f = np.concatenate([[0.0], np.sort(rng.uniform(0.01, 6.0, nf - 1))])
    kwargs = dict(normalize=normalize, weights=w, floating_mean=floating_mean)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # precenter is deprecated in 1.17
        if precenter:
            kwargs["precenter"] = True
        out = lombscargle(t, y, f, **kwargs)
    text = f"case {name}\n"
    text += (f"n {n} nf {nf} normalize {normalize} floating_mean {int(floating_mean)} "
             f"precenter {int(precenter)} weighted {int(weighted)}\n")
    text += line("t", t) + line("y", y)
    if weighted:
        text += line("w", w)
    text += line("f", f)
    if normalize == "amplitude":
        text += line("re", out.real) + line("im", out.imag)
    else:
        text += line("re", out)
    return text + "end\n"


def main():
    path = sys.argv[1] if len(sys.argv) > 1 else "tests/fixtures/lombscargle_scipy.txt"
    rng = np.random.default_rng(20261122)
    cases = [f"# scipy {scipy.__version__}, numpy {np.__version__}; by scripts/gen_lombscargle_fixtures.py\n"]
    sizes = iter([37, 129, 61, 200, 3, 101, 77, 255, 45, 150, 99, 31])
    for normalize in ["power", "normalize", "amplitude"]:
        for floating_mean in [False, True]:
            for weighted in [False, True]:
                name = f"{normalize}_fm{int(floating_mean)}_w{int(weighted)}"
                cases.append(case(rng, name, next(sizes), 48, normalize, floating_mean, weighted))
    cases.append(case(rng, "precenter_power", 53, 40, "power", False, True, precenter=True))
    cases.append(case(rng, "precenter_normalize", 67, 40, "normalize", False, False, precenter=True))
    cases.append(case(rng, "offset_origin_fm", 91, 40, "normalize", True, True, t0=5.0e4))
    cases.append(case(rng, "single_sample", 1, 8, "power", False, False))
    cases.append(case(rng, "two_samples", 2, 8, "power", False, True))
    cases.append(case(rng, "large", 1001, 300, "power", True, True))
    with open(path, "w") as fh:
        fh.writelines(cases)
    print(f"wrote {len(cases) - 1} cases to {path} (scipy {scipy.__version__})")


if __name__ == "__main__":
    main()
