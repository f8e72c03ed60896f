"""Where a dask worker decodes Parquet: kernpack's reader with pyarrow's CPU
pool (use_threads=True), on the calling thread (False) and by its default
(None: the pool when it has more than one thread), run by hand on one
`LocalCluster` worker of 8 threads (read, order, then the batched call under
kernpack.dask's one-call lock), in the worker environment Dask gives
(OMP_NUM_THREADS=1) and with OMP_NUM_THREADS=16; then kernpack.dask itself
with each reader.

    python python/benches/dask_reader_decoding.py [--data DIR] [--nf 10000]
"""
import argparse
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench_survey as survey  # noqa: E402


def pyarrow_env():
    import pyarrow as pa

    return pa.cpu_count(), os.environ.get("OMP_NUM_THREADS")


def by_hand(client, plan, nf, use_threads):
    def task(t):
        import kernpack.dask as kd
        from kernpack import _parquet_tasks

        a = time.perf_counter()
        cols = _parquet_tasks.read(t, ["id", "t", "y"], "id", use_threads)
        b = time.perf_counter()
        ids, offsets, tt, y, _ = kd._sorted_series(cols["id"], cols["t"], cols["y"], None, id_col="id")
        c = time.perf_counter()
        with kd._calls(None, True):
            d = time.perf_counter()
            kd._signal.lombscargle_batch(tt, y, survey.FMIN, (survey.FMAX - survey.FMIN) / (nf - 1), nf,
                                         offsets=offsets, best=True)
        return b - a, c - b, d - c, time.perf_counter() - d

    start = time.perf_counter()
    spent = np.sum(client.gather(client.map(task, plan.tasks, pure=False)), axis=0)
    return time.perf_counter() - start, spent


def main():
    import dask
    from distributed import Client, LocalCluster

    import kernpack.dask as kd

    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    survey.dataset_args(ap)
    args = ap.parse_args()
    survey.ensure_dataset(args)
    plan = kd._parquet_plan(args.data, "id", ["t", "y"])
    for label, environ in [("Dask's worker environment", None), ("OMP_NUM_THREADS=16", {"OMP_NUM_THREADS": 16})]:
        # A nanny also writes its pre-spawn variables into this process's
        # environment, where they would override a later cluster's config.
        for k in ("OMP_NUM_THREADS", "MALLOC_TRIM_THRESHOLD_", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
            os.environ.pop(k, None)
        config = {} if environ is None else {"distributed.nanny.pre-spawn-environ": environ}
        with dask.config.set(config), LocalCluster(n_workers=1, threads_per_worker=8) as cluster, \
                Client(cluster) as client:
            (cpus, omp), = client.run(pyarrow_env).values()
            print(f"{label}: pyarrow pool {cpus} thread(s), OMP_NUM_THREADS={omp}", flush=True)
            client.run(survey.warm_worker)
            for use_threads in (None, True, False):
                for _ in range(2):
                    wall, spent = by_hand(client, plan, args.nf, use_threads)
                    print(f"  by hand, use_threads={use_threads}: {wall:.3f} s; summed over tasks: read "
                          f"{spent[0]:.2f} s, order {spent[1]:.2f} s, lock wait {spent[2]:.2f} s, "
                          f"call {spent[3]:.2f} s", flush=True)
                    survey.idle(client)
            for reader in ("kernpack", "dask"):
                times = []
                for _ in range(2):
                    start = time.perf_counter()
                    kd.lombscargle_peaks(args.data, args.nf, survey.FMIN, survey.FMAX,
                                         read_parquet_kwargs=survey.READERS[reader]).compute()
                    times.append(time.perf_counter() - start)
                    survey.idle(client)
                print(f"  kernpack.dask, {reader} reader: {times[0]:.3f} s, then {times[1]:.3f} s", flush=True)


if __name__ == "__main__":
    main()
