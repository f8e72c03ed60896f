//! Streams, events, the GPU timer, pinned memory, asynchronous copies, the
//! absence of hidden synchronisation in `_device` calls, and normalising on
//! several streams against one.
mod common;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use common::{gpu_or_skip, Rng};
use kernpack::api::reduce_batched::StreamedNormalize;
use kernpack::api::streams::{elapsed_ms, time, GpuTimer};
use kernpack::{
    Error, Float, Kernpack, LombScargleOnDevice, LombScargleOptions, NormalizeBatchedOnDevice,
    NormalizeOnDevice, SumOnDevice,
};

/// The tests of this file one at a time: a driver call that synchronises
/// (allocating or freeing pinned or device memory, creating a stream) from
/// another test's thread takes the driver's context lock while it waits for
/// the GPU, and a launch on this thread then waits behind it, which
/// `device_calls_do_not_synchronise` would take for kernpack waiting.
static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

fn serial() -> MutexGuard<'static, ()> {
    ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner())
}

fn data<T: Float>(seed: u64, n: usize, offset: f64) -> Vec<T> {
    let mut rng = Rng(seed);
    (0..n)
        .map(|_| T::from_f64(offset + rng.range(-1.0, 1.0)))
        .collect()
}

fn same_bits<T: Float>(a: &[T], b: &[T]) -> bool {
    a.len() == b.len()
        && a.iter()
            .zip(b)
            .all(|(p, q)| p.to_f64().to_bits() == q.to_f64().to_bits())
}

#[test]
fn timer_measures_real_work_and_unrecorded_events_are_errors() {
    let _serial = serial();
    let Some(gpu) = gpu_or_skip("timer_measures_real_work_and_unrecorded_events_are_errors") else {
        return;
    };
    let stream = gpu.new_stream().unwrap();
    let mut x = stream.clone_htod(&data::<f32>(1, 20_000_000, 1.0)).unwrap();
    let mut sum = stream.alloc_zeros::<f64>(1).unwrap();
    let mut status = stream.alloc_zeros::<i32>(1).unwrap();

    let timer = GpuTimer::start(&stream).unwrap();
    gpu.enqueue_buffers(
        NormalizeOnDevice::buffers(&stream, &mut x, &mut sum, &mut status).unwrap(),
    )
    .unwrap();
    let ms = timer.stop().unwrap();
    // 80 MB read twice and written once: microseconds at least, seconds never.
    assert!(ms > 0.0 && ms < 10_000.0, "{ms} ms");

    let ((), ms2) = time(&stream, || {
        gpu.enqueue_buffers(NormalizeOnDevice::buffers(
            &stream,
            &mut x,
            &mut sum,
            &mut status,
        )?)
    })
    .unwrap();
    assert!(ms2 > 0.0, "{ms2} ms");

    // A timer read before it is ended, and events never recorded: errors, not garbage.
    let mut open = GpuTimer::start(&stream).unwrap();
    assert!(matches!(open.elapsed_ms(), Err(Error::InvalidInput(_))));
    open.end().unwrap();
    assert!(open.elapsed_ms().unwrap() >= 0.0);
    assert!(matches!(open.end(), Err(Error::InvalidInput(_))));

    let (a, b) = (gpu.timing_event().unwrap(), gpu.timing_event().unwrap());
    let err = elapsed_ms(&a, &b).unwrap_err();
    assert!(
        matches!(err, Error::InvalidInput(_)) && err.to_string().contains("recorded"),
        "{err}"
    );
    a.record(&stream).unwrap();
    assert!(elapsed_ms(&a, &b).is_err(), "end never recorded");
    b.record(&stream).unwrap();
    assert!(elapsed_ms(&a, &b).unwrap() >= 0.0);
}

#[test]
fn pinned_round_trip_through_async_copies() {
    let _serial = serial();
    let Some(gpu) = gpu_or_skip("pinned_round_trip_through_async_copies") else {
        return;
    };
    let stream = gpu.new_stream().unwrap();
    let values: Vec<f64> = data(2, 1_000_003, 0.0);
    let src = gpu.pinned_from(&values).unwrap();
    let mut dst = gpu.pinned_from(&vec![f64::NAN; values.len()]).unwrap();
    let mut dev = stream.alloc_zeros::<f64>(values.len()).unwrap();
    stream.memcpy_htod(&src, &mut dev).unwrap();
    stream.memcpy_dtoh(&dev, &mut dst).unwrap();
    // as_slice waits for the copies pending on the buffer.
    assert!(same_bits(dst.as_slice().unwrap(), &values));
    assert!(gpu
        .alloc_pinned::<f32>(7)
        .unwrap()
        .as_slice()
        .unwrap()
        .iter()
        .all(|v| *v == 0.0));
    assert!(matches!(
        gpu.alloc_pinned::<f32>(0),
        Err(Error::InvalidInput(_))
    ));
}

static GATE_OPEN: AtomicBool = AtomicBool::new(false);

/// A host function that holds its stream until the gate opens.
unsafe extern "C" fn wait_for_gate(_: *mut std::ffi::c_void) {
    while !GATE_OPEN.load(Ordering::Acquire) {
        std::thread::sleep(Duration::from_millis(1));
    }
}

/// Every `_device` call returns while its stream cannot move: none of them
/// waits for the GPU, once the kernels are loaded (a family's first use loads
/// its module, which waits for queued work: `load_all_kernels` does it up
/// front). A watchdog opens the gate after 20 s so a regression fails instead
/// of hanging.
#[test]
fn device_calls_do_not_synchronise() {
    let _serial = serial();
    let Some(gpu) = gpu_or_skip("device_calls_do_not_synchronise") else {
        return;
    };
    gpu.load_all_kernels().unwrap();
    let stream = gpu.new_stream().unwrap();
    // Beyond L2 as well as small: both normalise paths.
    let big = (gpu.l2_bytes() / 4) * 2 + 1000;
    let mut x_big = stream.clone_htod(&data::<f32>(3, big, 1.0)).unwrap();
    let mut x_small = stream.clone_htod(&data::<f64>(4, 10_000, 1.0)).unwrap();
    let offsets = stream.clone_htod(&[0i64, 4000, 10_000]).unwrap();
    let t = stream.clone_htod(&data::<f32>(5, 500, 50.0)).unwrap();
    let y = stream.clone_htod(&data::<f32>(6, 500, 0.0)).unwrap();
    let freqs = stream.clone_htod(&data::<f32>(7, 1000, 2.0)).unwrap();
    let mut pgram = stream.alloc_zeros::<f32>(1000).unwrap();
    let mut sums = stream.alloc_zeros::<f64>(2).unwrap();
    let mut status = stream.alloc_zeros::<i32>(2).unwrap();
    let (mut sum, mut one_status) = (
        stream.alloc_zeros::<f64>(1).unwrap(),
        stream.alloc_zeros::<i32>(1).unwrap(),
    );
    let mut calls = || {
        let call = SumOnDevice::buffers(&stream, &x_big, &mut sum);
        gpu.enqueue_buffers(call.unwrap()).unwrap();
        let call = NormalizeOnDevice::buffers(&stream, &mut x_big, &mut sum, &mut one_status);
        gpu.enqueue_buffers(call.unwrap()).unwrap();
        let call = NormalizeOnDevice::buffers(&stream, &mut x_small, &mut sum, &mut one_status);
        gpu.enqueue_buffers(call.unwrap()).unwrap();
        let call = NormalizeBatchedOnDevice::buffers(
            &stream,
            &mut x_small,
            &offsets,
            &mut sums,
            &mut status,
        );
        gpu.enqueue_buffers(call.unwrap()).unwrap();
        let opts = LombScargleOptions::default();
        let call = LombScargleOnDevice::buffers(&stream, &t, &y, None, &freqs, &mut pgram, &opts);
        gpu.enqueue_buffers(call.unwrap()).unwrap();
    };
    // JIT-compiled PTX (CUDA_FORCE_PTX_JIT=1, or a GPU with no SASS here):
    // the driver puts each kernel on the GPU at its first launch, which waits
    // (the README says so); one round first, so the gated round tests kernpack.
    if gpu
        .images()
        .iter()
        .any(|(_, image)| !matches!(image, kernpack::gpu::Image::Sass(_)))
    {
        calls();
    }
    stream.synchronize().unwrap();

    GATE_OPEN.store(false, Ordering::Release);
    let released_by_watchdog = Arc::new(AtomicBool::new(false));
    unsafe {
        cudarc::driver::result::stream::launch_host_function(
            stream.cu_stream(),
            wait_for_gate,
            std::ptr::null_mut(),
        )
    }
    .unwrap();
    let watchdog = {
        let flag = released_by_watchdog.clone();
        std::thread::spawn(move || {
            let started = Instant::now();
            while !GATE_OPEN.load(Ordering::Acquire) {
                if started.elapsed() > Duration::from_secs(20) {
                    flag.store(true, Ordering::Release);
                    GATE_OPEN.store(true, Ordering::Release);
                }
                std::thread::sleep(Duration::from_millis(5));
            }
        })
    };
    calls();
    let held = !GATE_OPEN.load(Ordering::Acquire);
    GATE_OPEN.store(true, Ordering::Release);
    watchdog.join().unwrap();
    stream.synchronize().unwrap();
    assert!(
        held && !released_by_watchdog.load(Ordering::Acquire),
        "a _device call waited for the GPU"
    );
    assert_eq!(stream.clone_dtoh(&status).unwrap(), vec![0, 0]);
}

/// Normalising pinned arrays on 1, 3 and 10 streams gives the bits of the
/// single-array normalise, and a bad array fails alone.
#[test]
fn multi_stream_normalize_equals_single_stream() {
    let _serial = serial();
    let Some(gpu) = gpu_or_skip("multi_stream_normalize_equals_single_stream") else {
        return;
    };
    let lengths = [1usize, 7, 100_000, 1_000_003, 3_000_000, 17, 250_000];
    let mut inputs: Vec<Vec<f32>> = lengths
        .iter()
        .enumerate()
        .map(|(i, &n)| data(100 + i as u64, n, 0.75))
        .collect();
    inputs[5][3] = f32::NAN; // array 5 cannot be normalised
    let mut want = Vec::new();
    for input in &inputs {
        let mut alone = input.clone();
        want.push((
            Kernpack::from(gpu.clone()).normalize(&mut alone).ok(),
            alone,
        ));
    }
    for nstreams in [1usize, 3, 10] {
        let mut work = StreamedNormalize::<f32>::new(gpu.clone(), nstreams).unwrap();
        for round in 0..2 {
            let mut arrays: Vec<_> = inputs.iter().map(|v| gpu.pinned_from(v).unwrap()).collect();
            let (results, timeline) = if round == 0 {
                (work.run(&mut arrays).unwrap(), vec![])
            } else {
                work.run_traced(&mut arrays).unwrap()
            };
            for (i, (result, array)) in results.iter().zip(&arrays).enumerate() {
                let (sum, alone) = &want[i];
                assert_eq!(
                    result.ok().map(f64::to_bits),
                    sum.map(f64::to_bits),
                    "{nstreams} streams, array {i}"
                );
                assert!(
                    same_bits(array.as_slice().unwrap(), alone),
                    "{nstreams} streams, array {i}"
                );
            }
            if round == 1 {
                assert_eq!(timeline.len(), lengths.len());
                for t in &timeline {
                    assert_eq!(t.stream, t.array % nstreams);
                    assert!(
                        t.h2d.0 <= t.h2d.1 && t.h2d.1 <= t.kernel.1 && t.kernel.1 <= t.d2h.1,
                        "{t:?}"
                    );
                }
            }
        }
    }
    let mut arrays: Vec<_> = inputs.iter().map(|v| gpu.pinned_from(v).unwrap()).collect();
    let mut streamed = StreamedNormalize::<f32>::new(gpu.clone(), 4).unwrap();
    let results = streamed.run(&mut arrays).unwrap();
    assert!(results[5].is_err() && results.iter().filter(|r| r.is_err()).count() == 1);
    assert!(matches!(
        StreamedNormalize::<f64>::new(gpu.clone(), 0),
        Err(Error::InvalidInput(_))
    ));
}
