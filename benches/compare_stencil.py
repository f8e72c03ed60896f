#!/usr/bin/env python3
"""Side-by-side timing on the GPU machine, in one process, for the
memory-bound kernels: the 2D box filter, sum and normalise, and normalise of
10 arrays x 10^7 f32 with copies from/to pinned host memory on 1 and 10 streams.

    python3 benches/compare_stencil.py KERNPACK_BINARY [box box-sizes gaussian median uniform-nd normalize streams]

box-sizes: the box filter of 8192^2 f32 and f64 for windows 3 to 63 (running
sums for all but square 3-9), each as a % of the device-to-device copy of the
same bytes, and cupyx.scipy.ndimage.uniform_filter of the same image.

gaussian: the Gaussian filter of 8192^2 (sigma 4) and 512^3 (sigma 2), f32
and f64, per axis and whole, as a % of one copy per pass, beside
cupyx.scipy.ndimage.gaussian_filter(1d); the CPU backend beside
scipy.ndimage.gaussian_filter on 4096^2.

median: the median filter of 8192^2 uint8 and float32 images (sizes 3, 5, 9),
5120^2 uint8 (size 51) and 256^3 float32 (size 3), beside
cupyx.scipy.ndimage.median_filter; the CPU backend beside
scipy.ndimage.median_filter on 2048^2.

uniform-nd: the N-D box filter (one running-sum pass per axis) of 512^3
float32, float64 and uint8 volumes and 8192^2 uint8/int16 images (sizes 3, 5,
11, 31, 63), each pass as a % of one device-to-device copy, beside
cupyx.scipy.ndimage.uniform_filter of the same array; the CPU backend beside
scipy.ndimage.uniform_filter on 256^3.

kernpack runs through its own CLI benches (CUDA events, warm-up, median, and a
device-to-device copy of the same bytes timed in the same process); the
alternatives run here with CUDA events: cupyx.scipy.ndimage.uniform_filter,
cupy `a /= a.sum()`, and hand-written Numba kernels for the same work (the
interior-only 3x3 smoothing stencil; normalising arrays with three kernels, alone
and on several streams).
Prints a table and writes the rows to $OUT/stencil_compare.json.
"""
import json
import os
import subprocess
import sys

import numpy as np

np.row_stack = np.vstack  # NumPy 2.4 removed it; numba-cuda still imports it
import cupy as cp  # noqa: E402
from gpu_timing import cuda_time  # noqa: E402 (benches/gpu_timing.py)
import cupyx.scipy.ndimage as cxn  # noqa: E402
import numba  # noqa: E402
from numba import cuda  # noqa: E402

ROWS = []




def row(workload, impl, ms, note=""):
    ROWS.append(dict(workload=workload, impl=impl, ms=ms, note=note))
    print(f"{workload:44s} {impl:34s} {ms:9.4f} ms  {note}", flush=True)


def kernpack(binary, *args):
    out = subprocess.run([binary, "bench", *args], capture_output=True, text=True)
    if out.returncode != 0:
        print(out.stdout, out.stderr)
        raise SystemExit(f"kernpack bench {' '.join(args)} failed")
    results = [l for l in out.stdout.splitlines() if l.startswith("RESULT")]
    fields = {}
    for line in results:
        for kv in line.split()[2:]:
            if "=" in kv:
                k, v = kv.split("=", 1)
                fields[k] = v
    return fields, out.stdout


# --- the interior-only 3x3 smoothing stencil, as published (floor division).
@cuda.jit
def smooth_gpu(x, out):
    i, j = cuda.grid(2)
    n, m = x.shape
    if 1 <= i < n - 1 and 1 <= j < m - 1:
        out[i, j] = (x[i - 1, j - 1] + x[i - 1, j] + x[i - 1, j + 1] +
                     x[i    , j - 1] + x[i    , j] + x[i    , j + 1] +
                     x[i + 1, j - 1] + x[i + 1, j] + x[i + 1, j + 1]) // 9


# --- normalising an array with three kernels, as published.
threads_per_block = 256
blocks_per_grid = 32 * 40


@cuda.jit
def partial_reduce(array, partial_reduction):
    i_start = cuda.grid(1)
    threads_per_grid = cuda.blockDim.x * cuda.gridDim.x
    s_thread = 0.0
    for i_arr in range(i_start, array.size, threads_per_grid):
        s_thread += array[i_arr]
    s_block = cuda.shared.array((threads_per_block,), numba.float32)
    tid = cuda.threadIdx.x
    s_block[tid] = s_thread
    cuda.syncthreads()
    i = cuda.blockDim.x // 2
    while (i > 0):
        if (tid < i):
            s_block[tid] += s_block[tid + i]
        cuda.syncthreads()
        i //= 2
    if tid == 0:
        partial_reduction[cuda.blockIdx.x] = s_block[0]


@cuda.jit
def single_thread_sum(partial_reduction, sum):
    sum[0] = 0.0
    for element in partial_reduction:
        sum[0] += element


@cuda.jit
def divide_by(array, val_array):
    i_start = cuda.grid(1)
    threads_per_grid = cuda.gridsize(1)
    for i in range(i_start, array.size, threads_per_grid):
        array[i] /= val_array[0]


def seed_normalize(dev_a, dev_red, dev_sum, stream=0):
    partial_reduce[blocks_per_grid, threads_per_block, stream](dev_a, dev_red)
    single_thread_sum[1, 1, stream](dev_red, dev_sum)
    divide_by[blocks_per_grid, threads_per_block, stream](dev_a, dev_sum)


def box_filter(binary):
    n = 8192
    for dtype, name in [(np.float32, "f32"), (np.float64, "f64")]:
        work = f"box filter 3x3 {n}x{n} {name}"
        f, _ = kernpack(binary, "box-filter", "--rows", str(n), "--dtype", name, "--size", "3")
        copy_ms, ours = float(f["copy_ms"]), float(f["filter_ms"])
        row(work, "device-to-device copy (kernpack)", copy_ms, f"{f['copy_tb_s']} TB/s")
        row(work, "kernpack reflect", ours, f"{float(f['of_copy_bw']) * 100:.1f}% of copy bw")
        x = cp.random.default_rng(1).random((n, n), dtype=dtype)
        out = cp.empty_like(x)
        cx = cuda_time(lambda: cxn.uniform_filter(x, size=3, mode="reflect", output=out))
        row(work, "cupyx uniform_filter reflect", cx, f"kernpack {cx / ours:.2f}x faster")
        for mode in ["interior", "constant", "wrap"]:
            f, _ = kernpack(binary, "box-filter", "--rows", str(n), "--dtype", name, "--mode", mode)
            row(work, f"kernpack {mode}", float(f["filter_ms"]),
                f"{float(f['of_copy_bw']) * 100:.1f}% of copy bw")
        if name == "f32":
            nx, nout = cuda.as_cuda_array(x), cuda.as_cuda_array(out)
            threads = (16, 16)
            blocks = ((n + 15) // 16, (n + 15) // 16)
            seed = cuda_time(lambda: smooth_gpu[blocks, threads](nx, nout))
            row(work, "hand-written Numba (3x3 interior)", seed, f"kernpack {seed / ours:.2f}x faster")
        for size in [5, 7, 9, 31]:
            f, _ = kernpack(binary, "box-filter", "--rows", str(n), "--dtype", name, "--size", str(size))
            ours_k = float(f["filter_ms"])
            cx = cuda_time(lambda: cxn.uniform_filter(x, size=size, mode="reflect", output=out), reps=5)
            row(f"box filter {size}x{size} {n}x{n} {name}", "kernpack reflect", ours_k,
                f"{float(f['of_copy_bw']) * 100:.1f}% of copy bw; cupyx {cx:.3f} ms = {cx / ours_k:.2f}x")


BOX_SIZES = [3, 5, 9, 15, 31, 33, 63]


def box_sizes(binary):
    """% of copy for every window size (the target: >= 80% for 3 to 63)."""
    n = 8192
    for dtype, name in [(np.float32, "f32"), (np.float64, "f64")]:
        x = cp.random.default_rng(3).random((n, n), dtype=dtype)
        out = cp.empty_like(x)
        for size in BOX_SIZES:
            f, _ = kernpack(binary, "box-filter", "--rows", str(n), "--dtype", name, "--size", str(size))
            ours, copy_ms = float(f["filter_ms"]), float(f["copy_ms"])
            cx = cuda_time(lambda: cxn.uniform_filter(x, size=size, mode="reflect", output=out), reps=5)
            row(f"box filter {size}x{size} {n}x{n} {name}", "kernpack reflect", ours,
                f"{float(f['of_copy_bw']) * 100:.1f}% of copy ({copy_ms:.3f} ms); "
                f"cupyx {cx:.3f} ms = {cx / ours:.2f}x")


GAUSSIAN_CASES = [((8192, 8192), 4.0), ((512, 512, 512), 2.0)]


def gaussian(binary):
    """The Gaussian filter (a pass per axis) as a % of a copy per pass, each
    axis alone and all together, beside cupyx.scipy.ndimage.gaussian_filter
    (and gaussian_filter1d per axis) of the same array; then the CPU backend
    beside scipy.ndimage.gaussian_filter on the 2-D case."""
    for shape, sigma in GAUSSIAN_CASES:
        text = ",".join(map(str, shape))
        for dtype, name in [(np.float32, "f32"), (np.float64, "f64")]:
            x = cp.random.default_rng(5).random(shape, dtype=dtype)
            out = cp.empty_like(x)
            work = f"gaussian sigma {sigma} {'x'.join(map(str, shape))} {name}"
            for axis in [*range(len(shape)), None]:
                extra = [] if axis is None else ["--axis", str(axis)]
                f, _ = kernpack(binary, "gaussian", "--shape", text, "--sigma", str(sigma), "--dtype", name, *extra)
                ours = float(f["filter_ms"])
                if axis is None:
                    cx = cuda_time(lambda: cxn.gaussian_filter(x, sigma, output=out), reps=5)
                else:
                    cx = cuda_time(lambda: cxn.gaussian_filter1d(x, sigma, axis=axis, output=out), reps=5)
                what = "all axes" if axis is None else f"axis {axis}"
                row(work, f"kernpack {what}", ours,
                    f"{float(f['of_copy_bw']) * 100:.1f}% of copy per pass ({f['copy_ms']} ms copy); "
                    f"cupyx {cx:.3f} ms = {cx / ours:.2f}x")
    import time

    import scipy.ndimage as sn

    for dtype, name in [(np.float32, "f32"), (np.float64, "f64")]:
        shape = (4096, 4096)
        x = np.random.default_rng(6).random(shape).astype(dtype)
        f, _ = kernpack(binary, "gaussian", "--shape", "4096,4096", "--sigma", "4", "--dtype", name,
                        "--backend", "cpu", "--reps", "5")
        times = []
        for _ in range(3):
            t0 = time.perf_counter()
            sn.gaussian_filter(x, 4.0)
            times.append((time.perf_counter() - t0) * 1e3)
        sp = sorted(times)[1]
        ours = float(f["filter_ms"])
        row(f"gaussian sigma 4 4096x4096 {name} (CPU)", f"kernpack cpu, {f['threads']} threads", ours,
            f"scipy.ndimage (one thread) {sp:.1f} ms = {sp / ours:.2f}x")


MEDIAN_CASES = [((8192, 8192), 3, "u8"), ((8192, 8192), 3, "f32"), ((8192, 8192), 5, "u8"),
                ((8192, 8192), 5, "f32"), ((8192, 8192), 9, "u8"), ((8192, 8192), 9, "f32"),
                ((5120, 5120), 51, "u8"), ((256, 256, 256), 3, "f32")]


def median(binary):
    """The median filter beside cupyx.scipy.ndimage.median_filter of the
    same kind of image (uniform random values over the type's range, or
    [0, 1) for floats), then the CPU backend beside scipy.ndimage."""
    import time

    import scipy.ndimage as sn

    rng = np.random.default_rng(8)
    for shape, size, name in MEDIAN_CASES:
        host = (rng.integers(0, 256, shape, dtype=np.uint8) if name == "u8"
                else rng.random(shape, dtype=np.float32))
        x = cp.asarray(host)
        out = cp.empty_like(x)
        reps = 1 if size > 9 else 5
        f, _ = kernpack(binary, "median", "--shape", ",".join(map(str, shape)), "--size", str(size),
                        "--dtype", name)
        ours = float(f["filter_ms"])
        cx = cuda_time(lambda: cxn.median_filter(x, size, output=out), reps=reps)
        row(f"median {size} {'x'.join(map(str, shape))} {name}", "kernpack", ours,
            f"{float(f['of_copy_bw']) * 100:.1f}% of copy ({f['copy_ms']} ms); cupyx {cx:.3f} ms = {cx / ours:.1f}x")
    for name, size in [("u8", 3), ("f32", 3), ("u8", 9), ("f32", 9)]:
        shape = (2048, 2048)
        host = (rng.integers(0, 256, shape, dtype=np.uint8) if name == "u8"
                else rng.random(shape, dtype=np.float32))
        f, _ = kernpack(binary, "median", "--shape", "2048,2048", "--size", str(size), "--dtype", name,
                        "--backend", "cpu", "--reps", "3")
        times = []
        for _ in range(3 if size < 9 else 1):
            t0 = time.perf_counter()
            sn.median_filter(host, size)
            times.append((time.perf_counter() - t0) * 1e3)
        sp = sorted(times)[len(times) // 2]
        ours = float(f["filter_ms"])
        row(f"median {size} 2048x2048 {name} (CPU)", f"kernpack cpu, {f['threads']} threads", ours,
            f"scipy.ndimage (one thread) {sp:.1f} ms = {sp / ours:.2f}x")


UNIFORM_CASES = [((512, 512, 512), "f32"), ((512, 512, 512), "f64"), ((512, 512, 512), "u8"),
                 ((8192, 8192), "u8"), ((8192, 8192), "i16")]
NUMPY = {"u8": np.uint8, "i16": np.int16, "f32": np.float32, "f64": np.float64}


def uniform_nd(binary):
    """The N-D box filter beside cupyx.scipy.ndimage.uniform_filter of the
    same array (uniform random values over the type's range, or [0, 1) for
    floats), then the CPU backend beside scipy.ndimage on 256^3."""
    import time

    import scipy.ndimage as sn

    rng = np.random.default_rng(9)
    for shape, name in UNIFORM_CASES:
        dtype = NUMPY[name]
        host = (rng.random(shape).astype(dtype) if name.startswith("f")
                else rng.integers(np.iinfo(dtype).min, np.iinfo(dtype).max, shape, dtype=dtype))
        x = cp.asarray(host)
        out = cp.empty_like(x)
        for size in [3, 5, 11, 31, 63]:
            f, _ = kernpack(binary, "uniform", "--shape", ",".join(map(str, shape)), "--size", str(size),
                            "--dtype", name)
            ours = float(f["filter_ms"])
            cx = cuda_time(lambda: cxn.uniform_filter(x, size, output=out), reps=5)
            row(f"uniform {size} {'x'.join(map(str, shape))} {name}", "kernpack", ours,
                f"{float(f['per_pass_of_copy_bw']) * 100:.1f}% of copy per pass ({f['copy_ms']} ms); "
                f"cupyx {cx:.3f} ms = {cx / ours:.1f}x")
    # One pass at a time: which layout (strided along axes 0 and 1, lines
    # along the contiguous axis 2) costs what.
    x = cp.asarray(rng.random((512, 512, 512)).astype(np.float32))
    out = cp.empty_like(x)
    for axis in range(3):
        for size in [5, 31]:
            sizes = [1, 1, 1]
            sizes[axis] = size
            f, _ = kernpack(binary, "uniform", "--shape", "512,512,512", "--sizes", ",".join(map(str, sizes)),
                            "--dtype", "f32")
            ours = float(f["filter_ms"])
            cx = cuda_time(lambda: cxn.uniform_filter1d(x, size, axis=axis, output=out), reps=5)
            row(f"uniform1d {size} axis {axis} 512^3 f32", "kernpack", ours,
                f"{float(f['per_pass_of_copy_bw']) * 100:.1f}% of copy; cupyx {cx:.3f} ms = {cx / ours:.1f}x")
    for name in ["u8", "f32"]:
        shape = (256, 256, 256)
        dtype = NUMPY[name]
        host = (rng.random(shape).astype(dtype) if name.startswith("f")
                else rng.integers(0, 256, shape, dtype=dtype))
        f, _ = kernpack(binary, "uniform", "--shape", "256,256,256", "--size", "5", "--dtype", name,
                        "--backend", "cpu", "--reps", "3")
        times = []
        for _ in range(3):
            t0 = time.perf_counter()
            sn.uniform_filter(host, 5)
            times.append((time.perf_counter() - t0) * 1e3)
        sp = sorted(times)[1]
        ours = float(f["filter_ms"])
        row(f"uniform 5 256x256x256 {name} (CPU)", f"kernpack cpu, {f['threads']} threads", ours,
            f"scipy.ndimage (one thread) {sp:.1f} ms = {sp / ours:.2f}x")


def normalize(binary):
    for n in [10_000_000, 1 << 28]:
        for name, dtype in [("f32", np.float32)] + ([("f64", np.float64)] if n < 1 << 28 else []):
            work = f"sum / normalise n={n} {name}"
            f, _ = kernpack(binary, "reduce", "--n", str(n), "--dtype", name)
            row(work, "kernpack sum", float(f["sum_ms"]),
                f"{float(f['sum_of_copy_bw']) * 100:.1f}% of copy bw (one read)")
            ours = float(f["normalize_ms"])
            row(work, "kernpack normalise", ours,
                f"{float(f['normalize_of_three_pass_bound']) * 100:.1f}% of 3-pass bound")
            a = cp.random.default_rng(2).random(n, dtype=dtype) + 0.5
            b = a
            cpn = cuda_time(lambda: b.__itruediv__(b.sum()))  # a /= a.sum()
            row(work, "cupy a /= a.sum()", cpn, f"kernpack {cpn / ours:.2f}x faster")
            if name == "f32":
                dev_a = cuda.as_cuda_array(b)
                red = cuda.device_array((blocks_per_grid,), dtype=np.float32)
                s = cuda.device_array((1,), dtype=np.float32)
                seed = cuda_time(lambda: seed_normalize(dev_a, red, s))
                row(work, "hand-written Numba (3 kernels)", seed, f"kernpack {seed / ours:.2f}x faster")


def streams(binary):
    """Normalising arrays on several streams: 10 arrays of 10^7 f32 in pinned
    memory, copy in, normalise, copy out, on 10 streams or one."""
    n, count = 10_000_000, 10
    arrays = [cuda.pinned_array(n, dtype=np.float32) for _ in range(count)]
    for i, a in enumerate(arrays):
        a[:] = (i + 1) * np.ones(n, dtype=np.float32)
    devs = [cuda.device_array(n, dtype=np.float32) for _ in range(count)]
    reds = [cuda.device_array((blocks_per_grid,), dtype=np.float32) for _ in range(count)]
    sums = [cuda.device_array((1,), dtype=np.float32) for _ in range(count)]
    for nstreams in [1, 10]:
        ss = [cuda.stream() for _ in range(nstreams)]
        def run():
            for i in range(count):
                s = ss[i % nstreams]
                devs[i].copy_to_device(arrays[i], stream=s)
                seed_normalize(devs[i], reds[i], sums[i], s)
                devs[i].copy_to_host(arrays[i], stream=s)
            cuda.synchronize()
        start, stop = cuda.event(), cuda.event()
        run()
        times = []
        for _ in range(10):
            start.record()
            run()
            stop.record()
            stop.synchronize()
            times.append(cuda.event_elapsed_time(start, stop))
        times.sort()
        row(f"10 x 1e7 f32, pinned copies, {nstreams} stream(s)", "hand-written Numba (3 kernels)", times[5])
    f, text = kernpack(binary, "normalize-streams", "--arrays", "10", "--n", str(n), "--streams", "1,10")
    print(text)
    for k, v in f.items():
        if k.endswith("_ms"):
            row("10 x 1e7 f32, pinned copies", f"kernpack {k}", float(v))


def main():
    binary = sys.argv[1]
    print(f"device: {cp.cuda.runtime.getDeviceProperties(0)['name'].decode()}")
    sections = sys.argv[2:] or ["box", "box-sizes", "normalize", "streams"]
    for name, section in [("box", box_filter), ("box-sizes", box_sizes), ("gaussian", gaussian), ("median", median),
                          ("uniform-nd", uniform_nd), ("normalize", normalize),
                          ("streams", streams)]:
        if name in sections:
            section(binary)
    out = os.environ.get("OUT")
    if out:
        with open(os.path.join(out, "stencil_compare.json"), "w") as f:
            json.dump(ROWS, f, indent=1)


if __name__ == "__main__":
    main()
