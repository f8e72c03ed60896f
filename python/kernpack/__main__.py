"""``python -m kernpack info | demo``: what kernpack runs on, and the main job
end to end (recover the period of a synthetic irregular light curve)."""
from __future__ import annotations

import argparse
import sys
import time

import numpy as np

import kernpack


def _info(_args) -> int:
    info = kernpack.info()
    fat = info["fatbin"]
    print(f"kernpack {info['version']} (default backend: {info['backend']})")
    print(f"fatbin: {fat['bytes']} bytes from {fat['origin']} ({fat['toolkit']}); SASS {' '.join(fat['sass'])}; PTX {' '.join(fat['ptx'])}")
    if not info["gpus"]:
        print("no GPU: every call runs on the CPU backend")
    for gpu in info["gpus"]:
        if "error" in gpu:
            print(f"GPU {gpu['ordinal']}: {gpu['error']}")
            continue
        major, minor = gpu["compute_capability"]
        print(
            f"GPU {gpu['ordinal']}: {gpu['name']} (compute capability {major}.{minor}, {gpu['sm_count']} SMs); "
            f"module load {gpu['module_load_ms']:.3f} ms; {'all kernels SASS (no JIT)' if gpu['all_sass'] else 'some kernels JIT-compiled from PTX'}"
        )
        for name, regs, threads, binary, code in gpu["kernels"]:
            print(f"  {name:<30} {regs:>4} regs {threads:>5} threads  binary {binary:>3}  {code}")
    return 0


def _demo(args) -> int:
    rng = np.random.default_rng(args.seed)
    period = 2.7
    t = np.sort(rng.uniform(0.0, 200.0, args.samples))
    y = 1.5 * np.sin(2 * np.pi * t / period) + rng.normal(0.0, 0.8, t.size) + 3.0
    f_lo, f_hi = 2 * np.pi / 50.0, 2 * np.pi / 0.5
    nf = args.nf
    df = (f_hi - f_lo) / (nf - 1)
    started = time.perf_counter()
    power = kernpack.signal.lombscargle_uniform(
        t, y, f_lo, df, nf, normalize=True, floating_mean=True, backend=args.backend
    )
    elapsed = time.perf_counter() - started
    best = int(np.argmax(power))
    found = 2 * np.pi / (f_lo + best * df)
    where = kernpack._context.context(args.backend).backend
    print(
        f"{t.size} samples x {nf} frequencies on the {where}: {elapsed * 1e3:.1f} ms; "
        f"best period {found:.4f} (true {period}), power {power[best]:.3f}"
    )
    if args.plot:
        try:
            import matplotlib

            matplotlib.use("Agg")
            import matplotlib.pyplot as plt
        except ImportError:
            print("--plot needs matplotlib (pip install matplotlib)", file=sys.stderr)
            return 1
        fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(11, 4))
        freqs = f_lo + df * np.arange(nf)
        ax1.plot(2 * np.pi / freqs, power, lw=0.6)
        ax1.axvline(found, color="C3", ls="--", lw=0.8)
        ax1.set_xscale("log")
        ax1.set_xlabel("period")
        ax1.set_ylabel("normalised power")
        phase = (t / found) % 1.0
        ax2.plot(phase, y, ".", ms=3)
        ax2.set_xlabel(f"phase at period {found:.4f}")
        ax2.set_ylabel("y")
        fig.tight_layout()
        fig.savefig(args.plot, dpi=110)
        print(f"wrote {args.plot}")
    return 0 if abs(found - period) / period < 0.01 else 1


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m kernpack", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("info", help="devices, fatbin contents, SASS or JIT per kernel").set_defaults(run=_info)
    demo = sub.add_parser("demo", help="recover the period of a synthetic irregular light curve")
    demo.add_argument("--samples", type=int, default=800)
    demo.add_argument("--nf", type=int, default=200_000)
    demo.add_argument("--seed", type=int, default=1)
    demo.add_argument("--backend", choices=["auto", "gpu", "cpu"], default=None)
    demo.add_argument("--plot", metavar="PNG", help="plot the periodogram and the folded light curve (matplotlib)")
    demo.set_defaults(run=_demo)
    args = parser.parse_args(argv)
    return args.run(args)


if __name__ == "__main__":
    sys.exit(main())
