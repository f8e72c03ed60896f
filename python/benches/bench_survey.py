"""End-to-end survey benchmark: a Parquet dataset of synthetic light curves to
a table of best periods, on one GPU, on every GPU of the host in one process,
and through dask-cuda workers (one per GPU).

    python python/benches/bench_survey.py [--curves 1000000] [--nf 10000]
        [--data DIR] [--steps one,multi,dask,lorenz] [--members 10000000]
        [--dask-threads 8] [--dask-workers 1,2] [--readers kernpack,dask]

The dataset: light curves of 100-300 irregular samples each over three observing
seasons (nightly cadence with random nights missing, a seasonal gap of ~150
days), a sinusoid of random period (0.2-50 days) plus noise; columns id
(int32, rows sorted by id), t (float32, days), y (float32), written as several
Parquet files. Frequencies: one shared uniform grid of `nf` angular frequencies
from 2 pi / 1000 to 2 pi * 5 per day. Each step prints light curves per second
with its time split into reading (Parquet to NumPy), transfer (host to GPU)
and kernels (the batched periodogram with the peak search on the device), and
checks that every configuration returns the same best frequencies. The lorenz
step times a Lorenz 96 ensemble (10^7 members by default) from host memory to
final states, on one GPU and on all of them.
"""
import argparse
import contextlib
import os
import threading
import time

import numpy as np

import kernpack
from kernpack import signal

FMIN, FMAX = 2 * np.pi / 1000.0, 2 * np.pi * 5.0


def write_part(path, k, first, n_curves, seed):
    """Part file k: curves first .. first + n_curves - 1, from its own stream."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    rng = np.random.default_rng([seed, k])
    lengths = rng.integers(100, 301, n_curves)
    total = int(lengths.sum())
    ids = np.repeat(np.arange(first, first + n_curves, dtype=np.int32), lengths)
    # Nights drawn from three 215-night seasons a year apart, a random time of
    # night; sorted within each curve (one sort of id * 2000 + t: t < 1310
    # days, and the sum is exact in float64).
    season = rng.integers(0, 3, total)
    night = rng.integers(0, 215, total)
    t = (season * 365.0 + night + rng.uniform(0.0, 0.3, total)).astype(np.float32)
    base = ids * 2000.0
    t = (np.sort(base + t) - base).astype(np.float32)
    period = np.repeat(np.exp(rng.uniform(np.log(0.2), np.log(50.0), n_curves)), lengths)
    phase = np.repeat(rng.uniform(0, 2 * np.pi, n_curves), lengths)
    y = (np.sin(2 * np.pi * t / period + phase) + 0.5 * rng.standard_normal(total)).astype(np.float32)
    table = pa.table({"id": ids, "t": t, "y": y})
    pq.write_table(table, os.path.join(path, f"part-{k:03d}.parquet"), row_group_size=1 << 22)


def make_dataset(path, curves, files, seed=1):
    """`files` Parquet files of whole curves, written by a process each."""
    from concurrent.futures import ProcessPoolExecutor

    os.makedirs(path, exist_ok=True)
    per_file = -(-curves // files)
    parts = [(k, k * per_file, min(per_file, curves - k * per_file)) for k in range(files)]
    with ProcessPoolExecutor(min(files, os.cpu_count() or 1)) as pool:
        jobs = [pool.submit(write_part, path, k, first, n, seed) for k, first, n in parts if n > 0]
        for job in jobs:
            job.result()


def read_dataset(path):
    """All curves as flat NumPy arrays with offsets (rows are sorted by id)."""
    import pyarrow.parquet as pq

    table = pq.read_table(path, columns=["id", "t", "y"])
    ids = table.column("id").to_numpy()
    t = table.column("t").to_numpy()
    y = table.column("y").to_numpy()
    cuts = np.flatnonzero(ids[1:] != ids[:-1]) + 1
    offsets = np.concatenate([[0], cuts, [ids.size]]).astype(np.int64)
    return ids[offsets[:-1]], t, y, offsets


def grid(nf):
    return FMIN, (FMAX - FMIN) / (nf - 1)


def one_gpu(t, y, offsets, nf, device=0):
    """Transfer and kernel times of the whole batch on one GPU (CuPy arrays)."""
    import cupy as cp

    f0, df = grid(nf)
    with cp.cuda.Device(device):
        cp.cuda.runtime.deviceSynchronize()
        start = time.perf_counter()
        dt, dy = cp.asarray(t), cp.asarray(y)
        cp.cuda.runtime.deviceSynchronize()
        transfer = time.perf_counter() - start
        start = time.perf_counter()
        peaks = signal.lombscargle_batch(dt, dy, f0, df, nf, offsets=offsets, best=True, backend="gpu")
        cp.cuda.runtime.deviceSynchronize()
        kernels = time.perf_counter() - start
        freq = cp.asnumpy(peaks.frequency) if hasattr(peaks.frequency, "get") else np.asarray(peaks.frequency)
    return freq, transfer, kernels


def host_arrays(t, y, offsets, nf, device):
    """The host arrays straight to kernpack (best=True): chunks of series
    double-buffered through pinned memory, copies overlapping the kernels,
    only the peaks back. `device` may list several GPUs."""
    f0, df = grid(nf)
    start = time.perf_counter()
    peaks = signal.lombscargle_batch(t, y, f0, df, nf, offsets=offsets, best=True, backend="gpu", device=device)
    return np.asarray(peaks.frequency), time.perf_counter() - start


def streamed(path, nf, device, readers=4):
    """The survey as a pipeline: `readers` helper threads read the Parquet
    files (at most `readers` ahead, in parallel: one file's read does not
    fill this host's cores) while the GPU works on the previous one, one
    batched call per file, in file order (kernpack and pyarrow release the
    GIL). Returns the best frequencies, the wall time, and the time spent
    inside the kernpack calls."""
    from collections import deque
    from concurrent.futures import ThreadPoolExecutor

    files = sorted(os.path.join(path, f) for f in os.listdir(path) if f.endswith(".parquet"))
    start = time.perf_counter()
    freqs, busy = [], 0.0
    with ThreadPoolExecutor(readers) as pool:
        ahead = deque(pool.submit(read_dataset, f) for f in files[:readers])
        for k in range(len(files)):
            _, t, y, offsets = ahead.popleft().result()
            if k + readers < len(files):
                ahead.append(pool.submit(read_dataset, files[k + readers]))
            freq, seconds = host_arrays(t, y, offsets, nf, device)
            freqs.append(freq)
            busy += seconds
    return np.concatenate(freqs), time.perf_counter() - start, busy


# How kernpack.dask reads the dataset: kernpack's own reader (row groups
# straight into NumPy, planned from the footers), or Dask's DataFrame reader
# with the ids as a sorted index (one pandas block per column, kernpack's
# default; or pyarrow's default consolidation).
READERS = {
    "kernpack": None,
    "dask": {"index": "id", "calculate_divisions": True},
    "dask-consolidated": {"index": "id", "calculate_divisions": True, "arrow_to_pandas": {}},
}


def readers(arg):
    names = arg.split(",")
    unknown = [n for n in names if n not in READERS]
    if unknown:
        raise SystemExit(f"unknown reader(s) {unknown}; choose from {list(READERS)}")
    return names


def dataset_args(ap, nf=10_000):
    """The survey options of the dask benches: where the dataset is (written
    there on first use, 16 files) and the grid size."""
    ap.add_argument("--data", default="/tmp/kernpack-survey")
    ap.add_argument("--curves", type=int, default=1_000_000, help="when the dataset is written here")
    ap.add_argument("--nf", type=int, default=nf)


def ensure_dataset(args):
    if not os.path.isdir(args.data):
        make_dataset(args.data, args.curves, 16)


def warm_worker(backend=None, device=None):
    """A tiny batched call (on a dask worker, or here): its context and module load."""
    signal.lombscargle_batch(np.linspace(0, 10, 64, dtype=np.float32), np.sin(np.arange(64, dtype=np.float32)),
                             0.1, 0.01, 100, offsets=[0, 64], best=True, backend=backend, device=device)


def idle(client, timeout=60.0):
    """Waits until the scheduler has forgotten every task: a second compute of
    the same graph would otherwise reuse results still held on the workers."""
    deadline = time.monotonic() + timeout
    while client.run_on_scheduler(lambda dask_scheduler: len(dask_scheduler.tasks)):
        if time.monotonic() > deadline:
            raise TimeoutError(f"the scheduler still holds tasks after {timeout} s")
        time.sleep(0.05)


def split_by_work(offsets, parts):
    """Contiguous series ranges of about equal samples (x the shared nf)."""
    cum = offsets.astype(np.float64)
    bounds = [0]
    for p in range(1, parts):
        bounds.append(int(np.searchsorted(cum, cum[-1] * p / parts)))
    bounds.append(offsets.size - 1)
    return [(bounds[p], bounds[p + 1]) for p in range(parts)]


def many_gpus(t, y, offsets, nf, devices):
    """One host thread per GPU, each a contiguous range balanced by work."""
    ranges = split_by_work(offsets, len(devices))
    results = [None] * len(devices)

    def work(k):
        s0, s1 = ranges[k]
        lo, hi = offsets[s0], offsets[s1]
        results[k] = one_gpu(t[lo:hi], y[lo:hi], offsets[s0 : s1 + 1] - lo, nf, devices[k])

    threads = [threading.Thread(target=work, args=(k,)) for k in range(len(devices))]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    freq = np.concatenate([r[0] for r in results])
    return freq, max(r[1] for r in results), max(r[2] for r in results)


def lorenz(members, steps, ndev):
    """A Lorenz 96 ensemble (N = 40, f64) from host memory to final states
    on the host: a one-GPU handle (``device=0``: chunks through pinned
    staging above 256 MiB, else one piece), a list of one GPU (always
    chunks), and every GPU of the host; each equal bitwise."""
    from kernpack import ode

    rng = np.random.default_rng(3)
    x0 = 8.0 + rng.standard_normal((members, 40))
    ode.lorenz96(x0[:1000], 2, device=0)  # warm-up: context and module
    configs = [("one GPU (device=0)", 0), ("one GPU (device=[0])", [0])]
    if ndev >= 2:
        configs.append((f"{ndev} GPUs, chunked", list(range(ndev))))
    reference = None
    for name, device in configs:
        start = time.perf_counter()
        final = ode.lorenz96(x0, steps, device=device).final
        total = time.perf_counter() - start
        same = "" if reference is None else f"; final states equal to one GPU's: {np.array_equal(final, reference)}"
        reference = final if reference is None else reference
        print(f"RESULT Lorenz 96 {name}: {members:,} members x {steps} steps in {total:.3f} s, "
              f"{members * steps / total / 1e9:.2f} G member-steps/s end to end{same}", flush=True)
    # The split: the copy in (pageable, as cupy.asarray makes it), the kernels
    # on a device-resident ensemble (best of 3), and the copy out.
    import cupy as cp

    cp.cuda.runtime.deviceSynchronize()
    start = time.perf_counter()
    d0 = cp.asarray(x0)
    cp.cuda.runtime.deviceSynchronize()
    h2d = time.perf_counter() - start
    kernels = []
    for _ in range(3):
        start = time.perf_counter()
        dfinal = ode.lorenz96(d0, steps).final
        cp.cuda.runtime.deviceSynchronize()
        kernels.append(time.perf_counter() - start)
    start = time.perf_counter()
    final = cp.asnumpy(dfinal)
    d2h = time.perf_counter() - start
    print(f"RESULT Lorenz 96 split, one GPU: copy in {h2d:.3f} s, kernels {min(kernels):.3f} s "
          f"({members * steps / min(kernels) / 1e9:.2f} G member-steps/s), copy out {d2h:.3f} s; "
          f"equal to the host call's: {np.array_equal(final, reference)}", flush=True)
    del d0, dfinal


def report(name, curves, read, transfer, kernels, total):
    print(
        f"RESULT {name}: {curves / total:,.0f} light curves/s end to end ({total:.3f} s: "
        f"read {read:.3f} s, transfer {transfer:.3f} s, kernels {kernels:.3f} s)",
        flush=True,
    )


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--curves", type=int, default=1_000_000)
    ap.add_argument("--nf", type=int, default=10_000)
    ap.add_argument("--files", type=int, default=16)
    ap.add_argument("--data", default="/tmp/kernpack-survey")
    ap.add_argument("--steps", default="one,multi,dask,lorenz")
    ap.add_argument("--members", type=int, default=10_000_000, help="Lorenz 96 ensemble members")
    ap.add_argument("--lorenz-steps", type=int, default=100)
    ap.add_argument("--dask-threads", type=int, default=8, help="threads per dask-cuda worker")
    ap.add_argument("--dask-workers", default="1,2", help="dask-cuda worker counts to run (one GPU each)")
    ap.add_argument("--readers", default="kernpack",
                    help="how dask steps read the files, comma-separated: " + ", ".join(READERS))
    args = ap.parse_args()
    steps = args.steps.split(",")

    if steps == ["lorenz"]:
        lorenz(args.members, args.lorenz_steps, kernpack.device_count())
        return
    if not os.path.isdir(args.data):
        start = time.perf_counter()
        make_dataset(args.data, args.curves, args.files)
        print(f"dataset: {args.curves} curves written to {args.data} in {time.perf_counter() - start:.1f} s")
    ndev = kernpack.device_count()
    print(f"GPUs: {ndev}")

    # Warm-up (context creation, module load) outside the timings.
    import cupy as cp

    for d in range(ndev):
        warm_worker("gpu", d)
        with cp.cuda.Device(d):
            signal.lombscargle_batch(
                cp.asarray(np.linspace(0, 10, 64, dtype=np.float32)),
                cp.asarray(np.sin(np.arange(64, dtype=np.float32))),
                0.1, 0.01, 100, offsets=[0, 64], best=True, backend="gpu",
            )

    start = time.perf_counter()
    ids, t, y, offsets = read_dataset(args.data)
    read = time.perf_counter() - start
    curves = ids.size
    samples = t.size
    print(f"read {curves} curves, {samples} samples ({samples / curves:.0f} per curve) in {read:.3f} s")

    reference = None
    if "one" in steps:
        pairs = samples * args.nf
        freq, whole = host_arrays(t, y, offsets, args.nf, 0)
        print(f"RESULT one GPU, host arrays: {curves / (read + whole):,.0f} light curves/s end to end "
              f"({read + whole:.3f} s: read {read:.3f} s, kernpack call {whole:.3f} s = {curves / whole:,.0f} curves/s, "
              f"{pairs / whole / 1e9:.0f} Gpairs/s)", flush=True)
        reference = freq
        freq, total, busy = streamed(args.data, args.nf, 0)
        print(f"RESULT one GPU, files streamed: {curves / total:,.0f} light curves/s end to end ({total:.3f} s; "
              f"inside kernpack {busy:.3f} s, at {whole / busy:.0%} of the in-memory call's rate); "
              f"best frequencies equal: {np.array_equal(freq, reference)}", flush=True)
        if ndev >= 2:
            devices = list(range(ndev))
            # Both with every GPU's staging kept (the first call on each GPU pins it).
            freq, whole_1 = host_arrays(t, y, offsets, args.nf, 0)
            host_arrays(t, y, offsets, args.nf, devices)
            freq_n, whole_n = host_arrays(t, y, offsets, args.nf, devices)
            print(f"RESULT {ndev} GPUs, host arrays, staging kept: kernpack call {whole_n:.3f} s against one GPU's "
                  f"{whole_1:.3f} s ({whole_1 / whole_n:.2f}x); best frequencies equal: "
                  f"{np.array_equal(freq, reference) and np.array_equal(freq_n, reference)}", flush=True)
            freq, total_n, busy = streamed(args.data, args.nf, devices)
            print(f"RESULT {ndev} GPUs, files streamed: {curves / total_n:,.0f} light curves/s end to end "
                  f"({total_n:.3f} s, {total / total_n:.2f}x one GPU); best frequencies equal: "
                  f"{np.array_equal(freq, reference)}", flush=True)
        freq, transfer, kernels = one_gpu(t, y, offsets, args.nf)
        report("one GPU, CuPy arrays", curves, read, transfer, kernels, read + transfer + kernels)
        print(f"  best frequencies equal to the host path's: {np.array_equal(freq, reference)}")
        print(f"  kernels: {pairs / kernels / 1e9:.0f} Gpairs/s")
        # The in-memory rate: the same kernel on a batch already on the device, repeated.
        f0, df = grid(args.nf)
        dt, dy = cp.asarray(t), cp.asarray(y)
        times = []
        for _ in range(3):
            cp.cuda.runtime.deviceSynchronize()
            s = time.perf_counter()
            signal.lombscargle_batch(dt, dy, f0, df, args.nf, offsets=offsets, best=True, backend="gpu")
            cp.cuda.runtime.deviceSynchronize()
            times.append(time.perf_counter() - s)
        print(f"  in-memory batched rate (CuPy arrays, best of 3): {pairs / min(times) / 1e9:.0f} Gpairs/s; "
              f"the first call ran at {min(times) / kernels:.0%} of it")
        del dt, dy
    if "multi" in steps and ndev >= 2:
        freq, transfer, kernels = many_gpus(t, y, offsets, args.nf, list(range(ndev)))
        report(f"{ndev} GPUs, one process", curves, read, transfer, kernels, read + transfer + kernels)
        if reference is not None:
            print(f"  best frequencies equal to one GPU's: {np.array_equal(freq, reference)}")
    if "lorenz" in steps:
        lorenz(args.members, args.lorenz_steps, ndev)
    if "dask" in steps:
        for nworkers in [int(w) for w in args.dask_workers.split(",") if int(w) <= ndev]:
            dask_survey(args, nworkers, curves, reference)


@contextlib.contextmanager
def cuda_workers(nworkers, threads):
    """A client of a LocalCUDACluster of `nworkers` workers (GPUs
    0..nworkers-1) of `threads` threads each, every worker's context made
    and module loaded (the warm-up stays out of the timings)."""
    from dask_cuda import LocalCUDACluster
    from distributed import Client

    # threads > 1: a worker reads and orders the next partitions while
    # kernpack computes (kernpack.dask runs two calls at a time per GPU
    # worker). direct_to_workers: the client fetches the result partitions
    # from the workers, not through the scheduler (measured 0.07 s against
    # 0.19 s for the 10^6-row table on an H100 host).
    visible = ",".join(str(d) for d in range(nworkers))
    with LocalCUDACluster(CUDA_VISIBLE_DEVICES=visible, threads_per_worker=threads) as cluster, \
            Client(cluster, direct_to_workers=True) as client:
        assert len(client.scheduler_info()["workers"]) == nworkers
        client.run(warm_worker)
        yield client


def dask_survey(args, nworkers, curves, reference):
    """The survey through `nworkers` dask-cuda workers (GPUs 0..nworkers-1),
    each with args.dask_threads threads, run twice."""
    import kernpack.dask as kd

    with cuda_workers(nworkers, args.dask_threads) as client:
        # The first run pays the workers' fresh process memory, the Parquet
        # engine's first reads and the staging pin; the second is a
        # survey's steady state.
        for reader in readers(args.readers):
            for run in ("first run", "second run"):
                start = time.perf_counter()
                table = kd.lombscargle_peaks(args.data, args.nf, FMIN, FMAX,
                                             read_parquet_kwargs=READERS[reader]).compute()
                total = time.perf_counter() - start
                print(f"RESULT {nworkers} dask-cuda worker(s), {args.dask_threads} thread(s) each, {reader} reader, "
                      f"{run}: {curves / total:,.0f} light curves/s end to end ({total:.3f} s)", flush=True)
                if reference is not None:
                    freq = table["frequency"].to_numpy()
                    print(f"  best frequencies equal to one GPU's: "
                          f"{np.array_equal(freq.astype(reference.dtype), reference)}")
                del table
                idle(client)


if __name__ == "__main__":
    main()
