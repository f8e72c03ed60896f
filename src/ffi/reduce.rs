//! C ABI of the reductions: sum and normalise in place, of one array or of a
//! batch, on host pointers (any context: the CPU backend computes the same
//! thing) and on device pointers enqueued on a stream (GPU contexts). One
//! declaration per operation; the per-dtype functions are in `entry_points.rs`.
use std::marker::PhantomData;

use super::{kp_context, kp_status, out_param, DeviceEntry, Entry, RawError};
use crate::api::reduce::{NormalizeOnDevice, SumOnDevice};
use crate::api::reduce_batched::{
    check_offsets, NormalizeBatchedOnDevice, BATCH_BAD_SUM, BATCH_OK,
};
use crate::api::Kernpack;
use crate::float::Float;
use crate::raw::{self, check_apart, Span};

#[rustfmt::skip] // generated, one line per signature
mod entry_points;
pub use entry_points::*;

/// Sum of the `n` values at host `x`, in {precision}, accumulated in double
/// precision, written to `*sum` (the same bits on every run of a GPU
/// context). Runs on the context's backend and returns with the result.
///
/// # Safety
/// `x` readable for `n` values; `sum` valid for one write.
struct kp_sum<T> {
    x: *const T,
    n: usize,
    sum: *mut f64,
}

impl<T: Float> Entry for kp_sum<T> {
    unsafe fn call(self, kp: &Kernpack) -> Result<(), RawError> {
        let x = unsafe { raw::host("x", self.x, self.n) }?;
        let out = unsafe { out_param("sum", self.sum) }?;
        *out = kp.sum(x)?;
        Ok(())
    }
}

/// Sum of the `n` values ({precision}) at device `x` into the device double
/// at `sum`, enqueued on `stream` (0: the default stream) with no
/// synchronisation. Needs a GPU context.
///
/// # Safety
/// `x` (n values) and `sum` (one double) device allocations of this GPU,
/// alive until the work completes; `stream` 0 or a CUstream of the GPU's
/// primary context.
struct kp_sum_device<T> {
    x: u64,
    n: usize,
    sum: u64,
    _dtype: PhantomData<T>,
}

impl<T: Float> DeviceEntry for kp_sum_device<T> {
    type Op = SumOnDevice<T>;

    unsafe fn op(self) -> Result<Self::Op, RawError> {
        let (x, sum) = (raw::device("x", self.x)?, raw::device("sum", self.sum)?);
        let (n, dtype) = (self.n, PhantomData);
        Ok(SumOnDevice { x, n, sum, dtype })
    }
}

/// Normalises the `n` values ({precision}) at host `x` in place,
/// `x <- x / sum(x)`, on the context's backend, and writes the sum to `*sum`
/// (NULL: not wanted). A sum that is zero (an empty array included), not
/// finite or too small to invert (below 2^-1024) is
/// KP_ERROR_INVALID_ARGUMENT, and then `x` and `*sum` are unchanged.
///
/// # Safety
/// `x` readable and writable for `n` values; `sum` NULL or valid for one write.
struct kp_normalize<T> {
    x: *mut T,
    n: usize,
    sum: *mut f64,
}

impl<T: Float> Entry for kp_normalize<T> {
    unsafe fn call(self, kp: &Kernpack) -> Result<(), RawError> {
        let x = unsafe { raw::host_mut("x", self.x, self.n) }?;
        let total = kp.normalize(x)?;
        if let Some(out) = unsafe { self.sum.as_mut() } {
            *out = total;
        }
        Ok(())
    }
}

/// Normalises the `n` values ({precision}) at device `x` in place, enqueued
/// on `stream` (0: the default stream) with no synchronisation. The device
/// double at `sum` receives the sum and the device int at `status` 0, or 1
/// when the sum is zero, not finite or too small to invert and `x` was left
/// unchanged: read `status` before trusting `x`. Needs a GPU context.
///
/// # Safety
/// `x` (n values), `sum` (one double), `status` (one int) device allocations
/// of this GPU, alive until the work completes; `stream` 0 or a CUstream of
/// the GPU's primary context.
struct kp_normalize_device<T> {
    x: u64,
    n: usize,
    sum: u64,
    status: u64,
    _dtype: PhantomData<T>,
}

impl<T: Float> DeviceEntry for kp_normalize_device<T> {
    type Op = NormalizeOnDevice<T>;

    unsafe fn op(self) -> Result<Self::Op, RawError> {
        let (x, sum) = (raw::device("x", self.x)?, raw::device("sum", self.sum)?);
        let status = raw::device("status", self.status)?;
        let (n, dtype) = (self.n, PhantomData);
        #[rustfmt::skip]
        let op = NormalizeOnDevice { x, n, sum, status, dtype };
        Ok(op)
    }
}

/// Normalises `narrays` arrays of host values ({precision}) in place in one
/// call: array a is `x[offsets[a] .. offsets[a+1]-1]`, `offsets` has
/// narrays + 1 entries, from 0, non-decreasing. Writes every array's sum to
/// `sums[a]` and its status to `status[a]`: 0 normalised, 1 sum zero, not
/// finite or too small to invert (empty arrays too), array unchanged. Returns
/// KP_OK when the call ran, whether or not some arrays had a bad sum. Invalid
/// offsets: KP_ERROR_INVALID_ARGUMENT and nothing written. On a GPU context
/// the sums have the bits of `kp_sum_{dtype}` of each array alone.
///
/// # Safety
/// `offsets` readable for narrays + 1 values, `x` for `offsets[narrays]`
/// (readable and writable), `sums` and `status` writable for narrays.
struct kp_normalize_batched<T> {
    x: *mut T,
    offsets: *const i64,
    narrays: usize,
    sums: *mut f64,
    status: *mut i32,
}

impl<T: Float> Entry for kp_normalize_batched<T> {
    unsafe fn call(self, kp: &Kernpack) -> Result<(), RawError> {
        let narrays = self.narrays;
        let (given, offsets) = unsafe { raw::host_offsets("offsets", self.offsets, narrays) }?;
        let n = *offsets.last().unwrap_or(&0);
        // The offsets are the API's to check, before `x` is sized by the last
        // one (and checked for overlap by that size).
        check_offsets(&offsets, n)?;
        check_apart(
            &[
                Span::of("x", self.x, n),
                Span::of("sums", self.sums, narrays),
                Span::of("status", self.status, narrays),
            ],
            &[Span::slice("offsets", given)],
        )?;
        let x = unsafe { raw::host_mut("x", self.x, n) }?;
        let sums = unsafe { raw::host_mut("sums", self.sums, narrays) }?;
        let status = unsafe { raw::host_mut("status", self.status, narrays) }?;
        let done = kp.normalize_batched(x, &offsets)?;
        sums.copy_from_slice(&done.sums);
        status.fill(BATCH_OK);
        for &a in &done.failed {
            status[a] = BATCH_BAD_SUM;
        }
        Ok(())
    }
}

/// The batch on device memory ({precision}), enqueued on `stream` (0: the
/// default stream) with no synchronisation, four launches whatever
/// `narrays`: `x` holds `n` values, `offsets` narrays + 1 `int64_t`, `sums`
/// narrays doubles and `status` narrays ints, all on the device. `status[a]`:
/// 0 normalised, 1 sum zero, not finite or too small to invert (array a
/// unchanged), 2 offsets invalid (outside 0..n or decreasing: checked on the
/// device, nothing changed, sums NaN). Needs a GPU context.
///
/// # Safety
/// Device allocations of this GPU with the stated sizes, alive until the
/// work completes; `stream` 0 or a CUstream of the GPU's primary context.
struct kp_normalize_batched_device<T> {
    x: u64,
    n: usize,
    offsets: u64,
    narrays: usize,
    sums: u64,
    status: u64,
    _dtype: PhantomData<T>,
}

impl<T: Float> DeviceEntry for kp_normalize_batched_device<T> {
    type Op = NormalizeBatchedOnDevice<T>;

    unsafe fn op(self) -> Result<Self::Op, RawError> {
        let x = raw::device("x", self.x)?;
        let offsets = raw::device("offsets", self.offsets)?;
        let sums = raw::device("sums", self.sums)?;
        let status = raw::device("status", self.status)?;
        let (n, narrays, dtype) = (self.n, self.narrays, PhantomData);
        #[rustfmt::skip]
        let op = NormalizeBatchedOnDevice { x, n, offsets, narrays, sums, status, dtype };
        Ok(op)
    }
}
