//! C ABI of the reductions: sum and normalise in place, of one array or of a
//! batch, on host pointers (any context: the CPU backend computes the same
//! thing with its reference) and on device pointers enqueued on a stream (GPU
//! contexts). One generic body per entry point, one-line wrappers per dtype.
use super::{
    boundary, check_apart, context, count_plus_one, device_address, host_slice, host_slice_mut,
    kp_context, kp_status, null_pointer, offsets_from, Span,
};
use crate::api::reduce_batched::{check_offsets, BATCH_BAD_SUM, BATCH_OK};
use crate::float::Float;

unsafe fn sum_host<T: Float>(
    ctx: *const kp_context,
    x: *const T,
    n: usize,
    sum: *mut f64,
) -> kp_status {
    boundary(|| {
        let ctx = unsafe { context(ctx) }?;
        let x = unsafe { host_slice("x", x, n) }?;
        let out = unsafe { sum.as_mut() }.ok_or_else(|| null_pointer("sum"))?;
        *out = ctx.kernpack.sum(x)?;
        Ok(())
    })
}

unsafe fn sum_device<T: Float>(
    ctx: *const kp_context,
    x: u64,
    n: usize,
    sum: u64,
    stream: u64,
) -> kp_status {
    boundary(|| {
        let ctx = unsafe { context(ctx) }?;
        let gpu = ctx.gpu()?;
        let (x, sum) = (device_address("x", x)?, device_address("sum", sum)?);
        let stream = unsafe { ctx.stream(stream) }?;
        unsafe { gpu.sum_raw::<T>(&stream, x, n, sum) }?;
        Ok(())
    })
}

unsafe fn normalize_host<T: Float>(
    ctx: *const kp_context,
    x: *mut T,
    n: usize,
    sum: *mut f64,
) -> kp_status {
    boundary(|| {
        let ctx = unsafe { context(ctx) }?;
        let x = unsafe { host_slice_mut("x", x, n) }?;
        let total = ctx.kernpack.normalize(x)?;
        if let Some(out) = unsafe { sum.as_mut() } {
            *out = total;
        }
        Ok(())
    })
}

unsafe fn normalize_device<T: Float>(
    ctx: *const kp_context,
    x: u64,
    n: usize,
    sum: u64,
    status: u64,
    stream: u64,
) -> kp_status {
    boundary(|| {
        let ctx = unsafe { context(ctx) }?;
        let gpu = ctx.gpu()?;
        let (x, sum) = (device_address("x", x)?, device_address("sum", sum)?);
        let status = device_address("status", status)?;
        let stream = unsafe { ctx.stream(stream) }?;
        unsafe { gpu.normalize_raw::<T>(&stream, x, n, sum, status) }?;
        Ok(())
    })
}

unsafe fn batched_host<T: Float>(
    ctx: *const kp_context,
    x: *mut T,
    offsets: *const i64,
    narrays: usize,
    sums: *mut f64,
    status: *mut i32,
) -> kp_status {
    boundary(|| {
        let ctx = unsafe { context(ctx) }?;
        let offsets_in = unsafe { host_slice("offsets", offsets, count_plus_one(narrays)?) }?;
        let offsets = offsets_from(offsets_in)?;
        let n = *offsets.last().unwrap_or(&0);
        // Before the overlap check, which sizes x by the last offset.
        check_offsets(&offsets, n)?;
        check_apart(
            &[
                Span::of("x", x, n),
                Span::of("sums", sums, narrays),
                Span::of("status", status, narrays),
            ],
            &[Span::of("offsets", offsets_in.as_ptr(), offsets_in.len())],
        )?;
        let x = unsafe { host_slice_mut("x", x, n) }?;
        let sums = unsafe { host_slice_mut("sums", sums, narrays) }?;
        let status = unsafe { host_slice_mut("status", status, narrays) }?;
        let done = ctx.kernpack.normalize_batched(x, &offsets)?;
        sums.copy_from_slice(&done.sums);
        status.fill(BATCH_OK);
        for &a in &done.failed {
            status[a] = BATCH_BAD_SUM;
        }
        Ok(())
    })
}

#[allow(clippy::too_many_arguments)]
unsafe fn batched_device<T: Float>(
    ctx: *const kp_context,
    x: u64,
    n: usize,
    offsets: u64,
    narrays: usize,
    sums: u64,
    status: u64,
    stream: u64,
) -> kp_status {
    boundary(|| {
        let ctx = unsafe { context(ctx) }?;
        let gpu = ctx.gpu()?;
        let (x, offsets) = (device_address("x", x)?, device_address("offsets", offsets)?);
        let (sums, status) = (
            device_address("sums", sums)?,
            device_address("status", status)?,
        );
        let stream = unsafe { ctx.stream(stream) }?;
        unsafe { gpu.normalize_batched_raw::<T>(&stream, x, n, offsets, narrays, sums, status) }?;
        Ok(())
    })
}

/// Sum of the `n` floats at host `x`, accumulated in double precision,
/// written to `*sum` (the same bits on every run of a GPU context). Runs on
/// the context's backend and returns with the result.
///
/// # Safety
/// `x` readable for `n` values; `sum` valid for one write.
#[no_mangle]
pub unsafe extern "C" fn kp_sum_f32(
    ctx: *const kp_context,
    x: *const f32,
    n: usize,
    sum: *mut f64,
) -> kp_status {
    unsafe { sum_host(ctx, x, n, sum) }
}

/// As `kp_sum_f32`, for doubles.
///
/// # Safety
/// As `kp_sum_f32`.
#[no_mangle]
pub unsafe extern "C" fn kp_sum_f64(
    ctx: *const kp_context,
    x: *const f64,
    n: usize,
    sum: *mut f64,
) -> kp_status {
    unsafe { sum_host(ctx, x, n, sum) }
}

/// Sum of the `n` floats at device `x` into the device double at `sum`,
/// enqueued on `stream` (0: the default stream) with no synchronisation.
/// Needs a GPU context.
///
/// # Safety
/// `x` (n floats) and `sum` (one double) device allocations of this GPU,
/// alive until the work completes; `stream` 0 or a CUstream of the GPU's
/// primary context.
#[no_mangle]
pub unsafe extern "C" fn kp_sum_device_f32(
    ctx: *const kp_context,
    x: u64,
    n: usize,
    sum: u64,
    stream: u64,
) -> kp_status {
    unsafe { sum_device::<f32>(ctx, x, n, sum, stream) }
}

/// As `kp_sum_device_f32`, for doubles.
///
/// # Safety
/// As `kp_sum_device_f32`.
#[no_mangle]
pub unsafe extern "C" fn kp_sum_device_f64(
    ctx: *const kp_context,
    x: u64,
    n: usize,
    sum: u64,
    stream: u64,
) -> kp_status {
    unsafe { sum_device::<f64>(ctx, x, n, sum, stream) }
}

/// Normalises the `n` floats at host `x` in place, `x <- x / sum(x)`, on the
/// context's backend, and writes the sum to `*sum` (NULL: not wanted). A sum
/// that is zero (an empty array included), not finite or too small to invert
/// (below 2^-1024) is KP_ERROR_INVALID_ARGUMENT,
/// and then `x` and `*sum` are unchanged.
///
/// # Safety
/// `x` readable and writable for `n` values; `sum` NULL or valid for one write.
#[no_mangle]
pub unsafe extern "C" fn kp_normalize_f32(
    ctx: *const kp_context,
    x: *mut f32,
    n: usize,
    sum: *mut f64,
) -> kp_status {
    unsafe { normalize_host(ctx, x, n, sum) }
}

/// As `kp_normalize_f32`, for doubles.
///
/// # Safety
/// As `kp_normalize_f32`.
#[no_mangle]
pub unsafe extern "C" fn kp_normalize_f64(
    ctx: *const kp_context,
    x: *mut f64,
    n: usize,
    sum: *mut f64,
) -> kp_status {
    unsafe { normalize_host(ctx, x, n, sum) }
}

/// Normalises the `n` floats at device `x` in place, enqueued on `stream`
/// (0: the default stream) with no synchronisation. The device double at
/// `sum` receives the sum and the device int at `status` 0, or 1 when the sum
/// is zero, not finite or too small to invert and `x` was left unchanged: read `status` before
/// trusting `x`. Needs a GPU context.
///
/// # Safety
/// `x` (n floats), `sum` (one double), `status` (one int) device allocations
/// of this GPU, alive until the work completes; `stream` 0 or a CUstream of
/// the GPU's primary context.
#[no_mangle]
pub unsafe extern "C" fn kp_normalize_device_f32(
    ctx: *const kp_context,
    x: u64,
    n: usize,
    sum: u64,
    status: u64,
    stream: u64,
) -> kp_status {
    unsafe { normalize_device::<f32>(ctx, x, n, sum, status, stream) }
}

/// As `kp_normalize_device_f32`, for doubles.
///
/// # Safety
/// As `kp_normalize_device_f32`.
#[no_mangle]
pub unsafe extern "C" fn kp_normalize_device_f64(
    ctx: *const kp_context,
    x: u64,
    n: usize,
    sum: u64,
    status: u64,
    stream: u64,
) -> kp_status {
    unsafe { normalize_device::<f64>(ctx, x, n, sum, status, stream) }
}

/// Normalises `narrays` arrays of host floats in place in one call: array a
/// is `x[offsets[a] .. offsets[a+1]-1]`, `offsets` has narrays + 1 entries,
/// from 0, non-decreasing. Writes every array's sum to `sums[a]` and its
/// status to `status[a]`: 0 normalised, 1 sum zero, not finite or too small to invert (empty
/// arrays too), array unchanged. Returns KP_OK when the call ran, whether or
/// not some arrays had a bad sum. Invalid offsets: KP_ERROR_INVALID_ARGUMENT
/// and nothing written. On a GPU context the sums have the bits of
/// `kp_sum_f32` of each array alone.
///
/// # Safety
/// `offsets` readable for narrays + 1 values, `x` for `offsets[narrays]`
/// (readable and writable), `sums` and `status` writable for narrays.
#[no_mangle]
pub unsafe extern "C" fn kp_normalize_batched_f32(
    ctx: *const kp_context,
    x: *mut f32,
    offsets: *const i64,
    narrays: usize,
    sums: *mut f64,
    status: *mut i32,
) -> kp_status {
    unsafe { batched_host(ctx, x, offsets, narrays, sums, status) }
}

/// As `kp_normalize_batched_f32`, for doubles.
///
/// # Safety
/// As `kp_normalize_batched_f32`.
#[no_mangle]
pub unsafe extern "C" fn kp_normalize_batched_f64(
    ctx: *const kp_context,
    x: *mut f64,
    offsets: *const i64,
    narrays: usize,
    sums: *mut f64,
    status: *mut i32,
) -> kp_status {
    unsafe { batched_host(ctx, x, offsets, narrays, sums, status) }
}

/// The batch on device memory, enqueued on `stream` (0: the default stream)
/// with no synchronisation, four launches whatever `narrays`: `x` holds `n`
/// floats, `offsets` narrays + 1 `int64_t`, `sums` narrays doubles and
/// `status` narrays ints, all on the device. `status[a]`: 0 normalised, 1 sum
/// zero, not finite or too small to invert (array a unchanged), 2 offsets invalid (outside
/// 0..n or decreasing: checked on the device, nothing changed, sums NaN).
/// Needs a GPU context.
///
/// # Safety
/// Device allocations of this GPU with the stated sizes, alive until the
/// work completes; `stream` 0 or a CUstream of the GPU's primary context.
#[no_mangle]
pub unsafe extern "C" fn kp_normalize_batched_device_f32(
    ctx: *const kp_context,
    x: u64,
    n: usize,
    offsets: u64,
    narrays: usize,
    sums: u64,
    status: u64,
    stream: u64,
) -> kp_status {
    unsafe { batched_device::<f32>(ctx, x, n, offsets, narrays, sums, status, stream) }
}

/// As `kp_normalize_batched_device_f32`, for doubles.
///
/// # Safety
/// As `kp_normalize_batched_device_f32`.
#[no_mangle]
pub unsafe extern "C" fn kp_normalize_batched_device_f64(
    ctx: *const kp_context,
    x: u64,
    n: usize,
    offsets: u64,
    narrays: usize,
    sums: u64,
    status: u64,
    stream: u64,
) -> kp_status {
    unsafe { batched_device::<f64>(ctx, x, n, offsets, narrays, sums, status, stream) }
}
