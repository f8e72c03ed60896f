"""One dask-cuda worker against several (one per GPU), on the survey's
Parquet dataset: clusters of each size in turn (e.g. 1,2,1,2), a warm-up
then `--runs` timed computes in each, and two runs split into compute
(persist and wait) and gather (`compute()` of the persisted frame). Every
result is checked against the in-process one-GPU call.

    python python/benches/bench_dask_gpus.py [--data DIR] [--nf 10000]
        [--workers 1,2,1,2] [--files 16,16,16,16] [--threads 8] [--runs 3]

The client gathers directly from the workers (`direct_to_workers=True`).
The dataset is bench_survey.py's (written there on first use), one task per
file. `--files K` reads only its first K files: on one GPU, `--workers 1,1
--files 16,8` times one worker on all files and on the half that each of two
workers gets, an estimate of the two-worker ratio where only one GPU is at
hand (it leaves out the scheduler's cost of a second worker).
"""
import argparse
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench_survey as survey  # noqa: E402


def main():
    from distributed import wait

    import kernpack.dask as kd

    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", default="/tmp/kernpack-survey")
    ap.add_argument("--curves", type=int, default=1_000_000, help="curves of a dataset written here")
    ap.add_argument("--nf", type=int, default=10_000)
    ap.add_argument("--workers", default="1,2,1,2", help="cluster sizes, in turn")
    ap.add_argument("--threads", type=int, default=8, help="threads per worker")
    ap.add_argument("--files", default=None, help="files read in each turn (default: all)")
    ap.add_argument("--runs", type=int, default=3)
    args = ap.parse_args()
    if not os.path.isdir(args.data):
        survey.make_dataset(args.data, args.curves, 16)
    all_files = sorted(os.path.join(args.data, name) for name in os.listdir(args.data) if name.endswith(".parquet"))
    turns = [int(w) for w in args.workers.split(",")]
    files = [int(k) for k in args.files.split(",")] if args.files else [len(all_files)] * len(turns)
    if len(files) != len(turns) or not all(0 < k <= len(all_files) for k in files):
        ap.error(f"--files needs one count in 1..{len(all_files)} per cluster in --workers")

    f0, df = survey.grid(args.nf)
    references = {}
    for k in set(files):
        _, t, y, offsets = survey.read_dataset(all_files[:k])
        references[k] = np.asarray(kd._signal.lombscargle_batch(t, y, f0, df, args.nf, offsets=offsets, best=True,
                                                                backend="gpu").frequency)
        del t, y

    for workers, k in zip(turns, files):
        reference = references[k]

        def survey_frame():
            return kd.lombscargle_peaks(all_files[:k], args.nf, survey.FMIN, survey.FMAX)

        with survey.cuda_workers(workers, args.threads) as client:
            survey_frame().compute()  # the first run: fresh memory, staging pinned
            survey.idle(client)
            times, splits, same = [], [], True
            for _ in range(args.runs):
                start = time.perf_counter()
                table = survey_frame().compute()
                times.append(time.perf_counter() - start)
                same &= np.array_equal(table["frequency"].to_numpy().astype(reference.dtype), reference)
                del table
                survey.idle(client)
            for _ in range(2):
                start = time.perf_counter()
                persisted = survey_frame().persist()
                wait(persisted)
                computed = time.perf_counter()
                table = persisted.compute()
                splits.append((computed - start, time.perf_counter() - computed))
                del table, persisted
                survey.idle(client)
            print(f"RESULT {workers} dask-cuda worker(s) x {args.threads} threads, {k} of {len(all_files)} files"
                  f" ({reference.size} curves): compute() "
                  + ", ".join(f"{x:.3f}" for x in times) + " s; persist + gather "
                  + ", ".join(f"{p:.3f} + {g:.3f}" for p, g in splits)
                  + f" s; best frequencies equal to one GPU in-process: {same}", flush=True)


if __name__ == "__main__":
    main()
