"""kernpack.dask on one host: light curves per second from the survey's
Parquet dataset through W worker processes of T threads each (a
`distributed.LocalCluster`), every worker on the same GPU (device 0) or CPU.

    python python/benches/bench_dask_workers.py [--data DIR] [--nf 10000]
        [--backend gpu] [--readers kernpack,dask] 1x1 1x4 2x4 ...

Each W x T configuration runs the whole survey twice in one cluster: the
first run pays the workers' fresh process memory, the Parquet engine's first
reads and the staging pin; the second is a survey's steady state. The
dataset is bench_survey.py's (written there on first use). Best frequencies
must be equal across configurations.
"""
import argparse
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench_survey as survey  # noqa: E402


def main():
    from distributed import Client, LocalCluster

    import kernpack.dask as kd

    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("configs", nargs="*", default=["1x1", "1x4", "2x4"], help="WORKERSxTHREADS")
    survey.dataset_args(ap)
    ap.add_argument("--backend", default="gpu")
    ap.add_argument("--readers", default="kernpack",
                    help="how kernpack.dask reads the files, comma-separated: " + ", ".join(survey.READERS))
    args = ap.parse_args()
    survey.ensure_dataset(args)
    reference = None
    for config in args.configs:
        workers, threads = map(int, config.split("x"))
        with LocalCluster(n_workers=workers, threads_per_worker=threads, processes=True) as cluster, \
                Client(cluster) as client:
            client.run(survey.warm_worker, args.backend)
            for reader in survey.readers(args.readers):
                times = []
                for _ in range(2):
                    start = time.perf_counter()
                    table = kd.lombscargle_peaks(args.data, args.nf, survey.FMIN, survey.FMAX, backend=args.backend,
                                                 read_parquet_kwargs=survey.READERS[reader]).compute()
                    times.append(time.perf_counter() - start)
                    survey.idle(client)
                freq = table["frequency"].to_numpy()
                reference = freq if reference is None else reference
                print(f"RESULT {workers} worker(s) x {threads} thread(s), backend {args.backend}, {reader} reader: "
                      f"{len(table) / times[1]:,.0f} light curves/s (first run {times[0]:.3f} s, second "
                      f"{times[1]:.3f} s); best frequencies equal to the first configuration's: "
                      f"{np.array_equal(freq, reference)}", flush=True)


if __name__ == "__main__":
    main()
