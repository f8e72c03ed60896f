//! The streams / events / pinned / normalise C ABI called from Rust as C
//! would: error statuses and messages, outputs untouched on failure, the
//! handle registry (double destroys rejected), the CPU fallback of the host
//! entry points, and on a GPU agreement with the safe API bit for bit.
mod common;

use std::ffi::c_void;
use std::ptr::{null, null_mut};

use common::{gpu_or_skip, last_error, Ctx, Rng};
use kernpack::api::reduce_batched::BATCH_BAD_OFFSETS;
use kernpack::ffi::reduce::*;
use kernpack::ffi::streams::*;
use kernpack::ffi::{
    kp_context, kp_device_alloc, kp_device_free, kp_memcpy_dtoh, kp_memcpy_htod, kp_status,
    kp_stream_synchronize, KP_BACKEND_CPU, KP_BACKEND_GPU,
};
use kernpack::{Backend, Kernpack};

use kp_status::*;

fn data(seed: u64, n: usize) -> Vec<f32> {
    let mut rng = Rng(seed);
    (0..n).map(|_| rng.range(-0.25, 1.0) as f32).collect()
}

#[test]
fn host_entry_points_work_on_the_cpu_backend() {
    let cpu = Ctx::new(KP_BACKEND_CPU);
    let kp = Kernpack::new(Backend::Cpu).unwrap();
    let x = data(1, 10_001);
    let mut sum = f64::NAN;
    assert_eq!(
        unsafe { kp_sum_f32(cpu.0, x.as_ptr(), x.len(), &mut sum) },
        KP_OK
    );
    assert_eq!(sum.to_bits(), kp.sum(&x).unwrap().to_bits());

    let (mut y, mut want) = (x.clone(), x.clone());
    let total = kp.normalize(&mut want).unwrap();
    assert_eq!(
        unsafe { kp_normalize_f32(cpu.0, y.as_mut_ptr(), y.len(), &mut sum) },
        KP_OK
    );
    assert_eq!((sum.to_bits(), &y), (total.to_bits(), &want));

    // A zero sum: the status, a message, nothing written.
    let mut zero = vec![1.5f64, -1.5];
    sum = -1.0;
    assert_eq!(
        unsafe { kp_normalize_f64(cpu.0, zero.as_mut_ptr(), 2, &mut sum) },
        KP_ERROR_INVALID_ARGUMENT
    );
    assert!(
        last_error().contains("cannot normalise"),
        "{}",
        last_error()
    );
    assert_eq!((zero, sum), (vec![1.5, -1.5], -1.0));

    // The batch: per-array statuses, invalid offsets rejected before anything is written.
    let mut flat = data(2, 100);
    let offsets = [0i64, 30, 30, 100];
    let (mut sums, mut status) = ([f64::NAN; 3], [-1i32; 3]);
    let before = flat.clone();
    let s = unsafe {
        kp_normalize_batched_f32(
            cpu.0,
            flat.as_mut_ptr(),
            offsets.as_ptr(),
            3,
            sums.as_mut_ptr(),
            status.as_mut_ptr(),
        )
    };
    assert_eq!(s, KP_OK, "{}", last_error());
    assert_eq!(status, [0, 1, 0]);
    let mut want = before.clone();
    let done = kp.normalize_batched(&mut want, &[0, 30, 30, 100]).unwrap();
    assert_eq!(flat, want);
    assert_eq!(
        sums.map(f64::to_bits).to_vec(),
        done.sums.iter().map(|s| s.to_bits()).collect::<Vec<_>>()
    );
    let bad = [0i64, 50, 20, 100];
    let mut again = before.clone();
    sums = [f64::NAN; 3];
    let s = unsafe {
        kp_normalize_batched_f32(
            cpu.0,
            again.as_mut_ptr(),
            bad.as_ptr(),
            3,
            sums.as_mut_ptr(),
            status.as_mut_ptr(),
        )
    };
    assert_eq!(s, KP_ERROR_INVALID_ARGUMENT);
    assert!(again == before && sums.iter().all(|s| s.is_nan()));
    assert_eq!(
        unsafe { kp_sum_f64(null(), null(), 0, &mut sum) },
        KP_ERROR_NULL_POINTER
    );
    assert!(last_error().contains("ctx"));
}

#[test]
fn gpu_only_functions_refuse_a_cpu_context() {
    let cpu = Ctx::new(KP_BACKEND_CPU);
    let (mut handle, mut ptr, mut ms) = (9u64, null_mut::<c_void>(), -1.0f32);
    unsafe {
        assert_eq!(kp_stream_create(cpu.0, &mut handle), KP_ERROR_NO_GPU);
        assert_eq!(kp_event_create(cpu.0, &mut handle), KP_ERROR_NO_GPU);
        assert_eq!(kp_stream_destroy(cpu.0, 5), KP_ERROR_NO_GPU);
        assert_eq!(kp_event_destroy(cpu.0, 5), KP_ERROR_NO_GPU);
        assert_eq!(kp_event_record(cpu.0, 5, 0), KP_ERROR_NO_GPU);
        assert_eq!(kp_event_synchronize(cpu.0, 5), KP_ERROR_NO_GPU);
        assert_eq!(kp_event_elapsed_ms(cpu.0, 5, 6, &mut ms), KP_ERROR_NO_GPU);
        assert_eq!(kp_stream_wait_event(cpu.0, 0, 5), KP_ERROR_NO_GPU);
        assert_eq!(kp_host_alloc_pinned(cpu.0, 8, &mut ptr), KP_ERROR_NO_GPU);
        // Freeing NULL (or 0) is a no-op on any context, as free(NULL).
        assert_eq!(kp_host_free_pinned(cpu.0, null_mut()), KP_OK);
        assert_eq!(kp_device_free(cpu.0, 0), KP_OK);
        assert_eq!(kp_device_free(cpu.0, 64), KP_ERROR_NO_GPU);
        assert_eq!(
            kp_host_free_pinned(null(), null_mut()),
            KP_ERROR_NULL_POINTER
        );
        let mut host = [0u8; 8];
        assert_eq!(
            kp_memcpy_htod_async(cpu.0, 64, host.as_ptr().cast(), 8, 0),
            KP_ERROR_NO_GPU
        );
        assert_eq!(
            kp_memcpy_dtoh_async(cpu.0, host.as_mut_ptr().cast(), 64, 8, 0),
            KP_ERROR_NO_GPU
        );
        assert_eq!(kp_sum_device_f32(cpu.0, 64, 1, 64, 0), KP_ERROR_NO_GPU);
        assert_eq!(
            kp_normalize_device_f64(cpu.0, 64, 1, 64, 64, 0),
            KP_ERROR_NO_GPU
        );
        assert_eq!(
            kp_normalize_batched_device_f32(cpu.0, 64, 1, 64, 1, 64, 64, 0),
            KP_ERROR_NO_GPU
        );
    }
    assert_eq!((handle, ptr.is_null(), ms), (9, true, -1.0));
}

/// Streams, events and pinned memory through the C ABI; the device normalise
/// and batch give the bits of the safe API; every handle is destroyed once.
#[test]
fn gpu_streams_events_pinned_and_device_normalise() {
    let Some(gpu) = gpu_or_skip("gpu_streams_events_pinned_and_device_normalise") else {
        return;
    };
    let ctx = Ctx::new(KP_BACKEND_GPU);
    let c = ctx.0 as *const kp_context;
    let n = 3_000_017usize;
    let x = data(3, n);
    let mut want = x.clone();
    let want_sum = Kernpack::from(gpu.clone()).normalize(&mut want).unwrap();
    unsafe {
        let (mut stream, mut start, mut stop) = (0u64, 0u64, 0u64);
        assert_eq!(kp_stream_create(c, &mut stream), KP_OK);
        assert_eq!(kp_event_create(c, &mut start), KP_OK);
        assert_eq!(kp_event_create(c, &mut stop), KP_OK);
        let mut ms = -1.0f32;
        assert_eq!(
            kp_event_elapsed_ms(c, start, stop, &mut ms),
            KP_ERROR_INVALID_ARGUMENT
        );
        assert!(last_error().contains("never recorded") && ms == -1.0);

        let bytes = n * 4;
        let mut pinned = null_mut::<c_void>();
        assert_eq!(kp_host_alloc_pinned(c, bytes, &mut pinned), KP_OK);
        let host = std::slice::from_raw_parts_mut(pinned.cast::<f32>(), n);
        host.copy_from_slice(&x);
        let (mut dx, mut dsum, mut dstatus) = (0u64, 0u64, 0u64);
        assert_eq!(kp_device_alloc(c, bytes, &mut dx), KP_OK);
        assert_eq!(kp_device_alloc(c, 8, &mut dsum), KP_OK);
        assert_eq!(kp_device_alloc(c, 4, &mut dstatus), KP_OK);
        assert_eq!(kp_event_record(c, start, stream), KP_OK);
        assert_eq!(kp_memcpy_htod_async(c, dx, pinned, bytes, stream), KP_OK);
        assert_eq!(
            kp_normalize_device_f32(c, dx, n, dsum, dstatus, stream),
            KP_OK
        );
        host.fill(f32::NAN); // poison: only the copy back can restore it
        assert_eq!(kp_memcpy_dtoh_async(c, pinned, dx, bytes, stream), KP_OK);
        assert_eq!(kp_event_record(c, stop, stream), KP_OK);
        assert_eq!(kp_stream_wait_event(c, 0, stop), KP_OK);
        assert_eq!(kp_event_synchronize(c, stop), KP_OK);
        assert_eq!(kp_event_elapsed_ms(c, start, stop, &mut ms), KP_OK);
        assert!(ms > 0.0, "{ms} ms");
        let (mut sum, mut status) = (0f64, -1i32);
        assert_eq!(
            kp_memcpy_dtoh(c, (&mut sum as *mut f64).cast(), dsum, 8),
            KP_OK
        );
        assert_eq!(
            kp_memcpy_dtoh(c, (&mut status as *mut i32).cast(), dstatus, 4),
            KP_OK
        );
        assert_eq!((status, sum.to_bits()), (0, want_sum.to_bits()));
        assert!(host
            .iter()
            .zip(&want)
            .all(|(a, b)| a.to_bits() == b.to_bits()));

        // The device sum alone.
        assert_eq!(kp_memcpy_htod(c, dx, x.as_ptr().cast(), bytes), KP_OK);
        assert_eq!(kp_sum_device_f32(c, dx, n, dsum, stream), KP_OK);
        assert_eq!(kp_stream_synchronize(c, stream), KP_OK);
        assert_eq!(
            kp_memcpy_dtoh(c, (&mut sum as *mut f64).cast(), dsum, 8),
            KP_OK
        );
        assert_eq!(
            sum.to_bits(),
            Kernpack::from(gpu.clone()).sum(&x).unwrap().to_bits()
        );

        // The device batch with offsets past the end: status 2, nothing changed.
        let offsets = [0i64, 10, n as i64 + 1];
        let (mut doff, mut dsums, mut dstat) = (0u64, 0u64, 0u64);
        assert_eq!(kp_device_alloc(c, 24, &mut doff), KP_OK);
        assert_eq!(kp_device_alloc(c, 16, &mut dsums), KP_OK);
        assert_eq!(kp_device_alloc(c, 8, &mut dstat), KP_OK);
        assert_eq!(kp_memcpy_htod(c, doff, offsets.as_ptr().cast(), 24), KP_OK);
        assert_eq!(
            kp_normalize_batched_device_f32(c, dx, n, doff, 2, dsums, dstat, stream),
            KP_OK
        );
        assert_eq!(kp_stream_synchronize(c, stream), KP_OK);
        let mut statuses = [0i32; 2];
        assert_eq!(
            kp_memcpy_dtoh(c, statuses.as_mut_ptr().cast(), dstat, 8),
            KP_OK
        );
        assert_eq!(statuses, [BATCH_BAD_OFFSETS; 2]);
        assert_eq!(kp_memcpy_dtoh(c, pinned, dx, bytes), KP_OK);
        assert!(host.iter().zip(&x).all(|(a, b)| a.to_bits() == b.to_bits()));

        // Each handle is released once; the second time is an error, not UB.
        for p in [dx, dsum, dstatus, doff, dsums, dstat] {
            assert_eq!(kp_device_free(c, p), KP_OK);
        }
        assert_eq!(kp_host_free_pinned(c, pinned), KP_OK);
        assert_eq!(kp_host_free_pinned(c, pinned), KP_ERROR_INVALID_ARGUMENT);
        assert_eq!(kp_event_destroy(c, start), KP_OK);
        assert_eq!(kp_event_destroy(c, start), KP_ERROR_INVALID_ARGUMENT);
        assert_eq!(kp_event_record(c, start, stream), KP_ERROR_INVALID_ARGUMENT);
        assert_eq!(
            kp_stream_destroy(c, stop),
            KP_ERROR_INVALID_ARGUMENT,
            "an event is not a stream"
        );
        assert_eq!(kp_event_destroy(c, stop), KP_OK);
        assert_eq!(kp_stream_destroy(c, stream), KP_OK);
        assert_eq!(kp_stream_destroy(c, stream), KP_ERROR_INVALID_ARGUMENT);
        assert_eq!(kp_stream_destroy(c, 0), KP_ERROR_NULL_POINTER);
        assert_eq!(kp_event_elapsed_ms(c, 0, 0, &mut ms), KP_ERROR_NULL_POINTER);
    }
}
