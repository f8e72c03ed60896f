"""CUDA-event timing shared by the compare scripts (CuPy events on the legacy
default stream, which Numba kernels launched without a stream also use)."""
import cupy as cp


def cuda_time(fn, reps=20, warm=3):
    """Median milliseconds of fn() between CUDA events, after warm-up."""
    for _ in range(warm):
        fn()
    cp.cuda.Device().synchronize()
    times = []
    start, stop = cp.cuda.Event(), cp.cuda.Event()
    for _ in range(reps):
        start.record()
        fn()
        stop.record()
        stop.synchronize()
        times.append(cp.cuda.get_elapsed_time(start, stop))
    times.sort()
    return times[len(times) // 2]
