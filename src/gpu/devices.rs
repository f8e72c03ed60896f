//! The CUDA devices of this machine, as the driver reports them:
//! [`devices`] lists them all, [`device_info`] describes one. Neither loads
//! kernpack's kernels.
use cudarc::driver::result as cu;
use cudarc::driver::sys::{CUcontext, CUdevice, CUdevice_attribute};
use cudarc::driver::CudaContext;

use super::{check_ordinal, guarded, no_device_is_no_gpu, Gpu};
use crate::error::{Error, Result};

/// One CUDA device, as the driver reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeviceInfo {
    /// The device's ordinal: what [`crate::Kernpack::with_gpu`] and
    /// [`Gpu::get`] take (after `CUDA_VISIBLE_DEVICES` is applied).
    pub ordinal: usize,
    /// The driver's name for it, e.g. "NVIDIA H100 80GB HBM3".
    pub name: String,
    /// Compute capability (major, minor), e.g. (9, 0).
    pub compute_capability: (i32, i32),
    /// Streaming multiprocessors.
    pub multiprocessors: u32,
    /// Device memory in bytes (`cuDeviceTotalMem`).
    pub total_memory: usize,
    /// Device memory free at the time of the query, in bytes (`cuMemGetInfo`),
    /// as seen by every process on the device.
    pub free_memory: usize,
}

/// Number of CUDA devices: 0 without a driver or a device; any other driver
/// failure (e.g. `cuInit` failing on a broken installation) is an error.
pub(crate) fn count() -> Result<usize> {
    match counted() {
        Err(Error::NoGpu(_)) => Ok(0),
        other => other,
    }
}

/// As [`count`], but without a driver or a device [`Error::NoGpu`] saying which.
pub(crate) fn counted() -> Result<usize> {
    guarded("counting devices", || {
        CudaContext::device_count().map_err(|e| no_device_is_no_gpu("counting devices", e))
    })
    .map(|n| n.max(0) as usize)
}

/// Every CUDA device of the machine (those `CUDA_VISIBLE_DEVICES` leaves
/// visible), in ordinal order. An empty list, not an error, without a CUDA
/// driver or without a device; any other driver failure is an error.
///
/// Free memory is read with `cuMemGetInfo`, which needs a context on the
/// device: the one of the loaded [`Gpu`] when this process has loaded that
/// GPU, else the device's primary context, retained for the query and
/// released after it (the caller's current context is restored). If nothing
/// else in the process holds that primary context, it is created for the query
/// (tens to hundreds of milliseconds, and a few hundred MB of device memory
/// while it lives, which the reported free memory then excludes) and destroyed
/// again on release.
///
/// ```no_run
/// for d in kernpack::devices()? {
///     println!("GPU {}: {} (sm_{}{}), {} SMs, {} of {} bytes free", d.ordinal, d.name,
///              d.compute_capability.0, d.compute_capability.1, d.multiprocessors,
///              d.free_memory, d.total_memory);
/// }
/// # Ok::<(), kernpack::Error>(())
/// ```
pub fn devices() -> Result<Vec<DeviceInfo>> {
    let n = count()?;
    (0..n).map(|ordinal| query(ordinal, n)).collect()
}

/// The device `ordinal` (see [`devices`] for how free memory is read). With no
/// driver or no device at all, [`Error::NoGpu`]; an ordinal that is not one
/// of the devices present, [`Error::InvalidInput`] naming their count.
pub fn device_info(ordinal: usize) -> Result<DeviceInfo> {
    let n = count()?;
    check_ordinal(ordinal, n)?;
    query(ordinal, n)
}

fn query(ordinal: usize, count: usize) -> Result<DeviceInfo> {
    guarded("querying a device", || {
        let during = format!("querying GPU {ordinal} of {count}");
        let cuda = |e| Error::cuda(during.clone(), e);
        let dev = cu::device::get(ordinal as i32).map_err(cuda)?;
        // SAFETY: `dev` was just returned by cuDeviceGet.
        let attr = |a| unsafe { cu::device::get_attribute(dev, a) }.map_err(cuda);
        let compute_capability = (
            attr(CUdevice_attribute::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR)?,
            attr(CUdevice_attribute::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR)?,
        );
        let multiprocessors =
            attr(CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)?.max(0) as u32;
        let name = cu::device::get_name(dev).map_err(cuda)?;
        // SAFETY: as above.
        let total_memory = unsafe { cu::device::total_mem(dev) }.map_err(cuda)?;
        let free_memory = free_memory(ordinal, dev)
            .map_err(|e| Error::cuda(format!("reading the free memory of GPU {ordinal}"), e))?;
        Ok(DeviceInfo {
            ordinal,
            name,
            compute_capability,
            multiprocessors,
            total_memory,
            free_memory,
        })
    })
}

/// `cuMemGetInfo` in the loaded GPU's context, else in the device's primary
/// context retained for the call; the calling thread's current context is
/// the same after the call as before.
fn free_memory(ordinal: usize, dev: CUdevice) -> Result<usize, cu::DriverError> {
    if let Some(gpu) = Gpu::get_loaded(ordinal) {
        return with_current(gpu.context().cu_ctx(), cu::mem_get_info).map(|(free, _)| free);
    }
    // SAFETY: `dev` is a device from cuDeviceGet; the retain is released below,
    // after the context is no longer current on this thread.
    let ctx = unsafe { cu::primary_ctx::retain(dev) }?;
    let free = with_current(ctx, cu::mem_get_info).map(|(free, _)| free);
    // SAFETY: balances the retain above.
    let released = unsafe { cu::primary_ctx::release(dev) };
    let free = free?;
    released?;
    Ok(free)
}

/// Runs `f` with `ctx` current on this thread, then makes the previous
/// context (or none) current again.
fn with_current<T>(
    ctx: CUcontext,
    f: impl FnOnce() -> Result<T, cu::DriverError>,
) -> Result<T, cu::DriverError> {
    let previous = cu::ctx::get_current()?;
    if previous == Some(ctx) {
        return f();
    }
    // SAFETY: `ctx` is a live context (retained by the caller).
    unsafe { cu::ctx::set_current(ctx) }?;
    let result = f();
    // SAFETY: `previous` was current on this thread a moment ago (NULL: none).
    let restored = unsafe { cu::ctx::set_current(previous.unwrap_or(std::ptr::null_mut())) };
    let value = result?;
    restored?;
    Ok(value)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_ordinal_past_the_devices_names_their_count() {
        assert!(matches!(check_ordinal(0, 0), Err(Error::NoGpu(_))));
        assert!(check_ordinal(0, 1).is_ok() && check_ordinal(1, 2).is_ok());
        let Err(Error::InvalidInput(msg)) = check_ordinal(2, 2) else {
            panic!("ordinal 2 of 2 accepted");
        };
        assert!(msg.contains("GPU 2") && msg.contains("2 devices"), "{msg}");
        let Err(Error::InvalidInput(msg)) = check_ordinal(1, 1) else {
            panic!("ordinal 1 of 1 accepted");
        };
        assert!(msg.contains("1 device ") && msg.contains("0 to 0"), "{msg}");
    }
}
