"""Host cost of each step of kernpack.dask's partitions with kernpack's
Parquet reader, summed over the survey's tasks, on one thread and on 8
(contention), in this process (no Dask scheduler):

    python python/benches/dask_partition_steps.py [--data DIR] [--nf 16]

Steps: reading the task's row groups (in pieces), the (id, t) order check and
offsets, the batched call with its result table, and joining the tables. With
a small nf the call is almost all host work.
"""
import argparse
import os
import sys
import time
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pandas as pd

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench_survey as survey  # noqa: E402

import kernpack.dask as kd  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    survey.dataset_args(ap, nf=16)
    args = ap.parse_args()
    survey.ensure_dataset(args)
    plan = kd._parquet_plan(args.data, "id", ["t", "y"])
    meta = kd._peaks_meta(plan.id_dtype, "id", 1)
    grid = kd._grid_spec(args.nf, survey.FMIN, survey.FMAX, None)
    opts = dict(normalize="power", floating_mean=False, precenter=False, backend=None)

    def task(t):
        spent = np.zeros(4)
        tables = []
        pieces = kd._series_pieces(t, "id", "t", "y", None)
        while True:
            a = time.perf_counter()
            rows = next(pieces, None)
            if rows is None:
                break
            b = time.perf_counter()
            series = kd._sorted_series(*rows, id_col="id")
            c = time.perf_counter()
            tables.append(kd._peaks_table(*series, meta=meta, id_col="id", grid=grid, top_k=1, opts=opts))
            spent += [b - a, c - b, time.perf_counter() - c, 0]
        a = time.perf_counter()
        pd.concat(tables)
        spent[3] = time.perf_counter() - a
        return spent

    survey.warm_worker()
    for threads in (1, 8, 1, 8):
        with ThreadPoolExecutor(threads) as pool:
            start = time.perf_counter()
            spent = np.sum(list(pool.map(task, plan.tasks)), axis=0)
            wall = time.perf_counter() - start
        print(f"nf {args.nf}, {threads} thread(s): wall {wall:.3f} s; summed over {len(plan.tasks)} tasks: "
              f"read {spent[0]:.3f} s, order {spent[1]:.3f} s, call and table {spent[2]:.3f} s, "
              f"join {spent[3]:.3f} s", flush=True)


if __name__ == "__main__":
    main()
