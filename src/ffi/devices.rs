//! Devices: how many, what each is, and a context on a chosen one.
use std::ffi::c_char;

use super::{boundary, kp_context, kp_status, new_context, out_param, RawError};
use crate::api::multi::MultiGpu;
use crate::api::Kernpack;
use crate::error::Error;
use crate::gpu::{self, DeviceInfo};

/// Size of `kp_device_info.name`, its terminating NUL included.
pub const KP_DEVICE_NAME_LEN: usize = 256;

/// One CUDA device, as `kp_device_get_info` reports it.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct kp_device_info {
    /// The device's ordinal (what kp_context_create_on_device takes).
    pub ordinal: i32,
    /// The driver's name for the device, NUL-terminated (cut at a UTF-8
    /// character boundary if it would not fit).
    pub name: [c_char; KP_DEVICE_NAME_LEN],
    /// Compute capability, e.g. 9 and 0 for sm_90.
    pub compute_capability_major: i32,
    pub compute_capability_minor: i32,
    /// Streaming multiprocessors.
    pub multiprocessors: i32,
    /// Device memory in bytes.
    pub total_bytes: u64,
    /// Device memory free at the time of the call, in bytes (cuMemGetInfo, in
    /// this process's context on the device if it has one, else in the
    /// device's primary context, retained for the query and released after).
    pub free_bytes: u64,
}

impl From<&DeviceInfo> for kp_device_info {
    fn from(d: &DeviceInfo) -> Self {
        let mut name = [0 as c_char; KP_DEVICE_NAME_LEN];
        let mut len = d.name.len().min(KP_DEVICE_NAME_LEN - 1);
        while !d.name.is_char_boundary(len) {
            len -= 1;
        }
        for (dst, &src) in name.iter_mut().zip(&d.name.as_bytes()[..len]) {
            *dst = src as c_char;
        }
        kp_device_info {
            ordinal: d.ordinal as i32,
            name,
            compute_capability_major: d.compute_capability.0,
            compute_capability_minor: d.compute_capability.1,
            multiprocessors: d.multiprocessors.min(i32::MAX as u32) as i32,
            total_bytes: d.total_memory as u64,
            free_bytes: d.free_memory as u64,
        }
    }
}

/// `ordinal` as the index of a device present. A negative one is
/// KP_ERROR_INVALID_ARGUMENT, as is one not below the count when there are
/// devices; with no driver or no device, KP_ERROR_NO_GPU. Each message names
/// the ordinal and the count (or why there are none).
fn device_ordinal(ordinal: i32) -> Result<usize, RawError> {
    let Ok(index) = usize::try_from(ordinal) else {
        let count = gpu::devices::count().unwrap_or(0);
        let s = if count == 1 { "" } else { "s" };
        return Err(Error::invalid(format!(
            "GPU ordinal {ordinal} is negative; {count} CUDA device{s} present"
        ))
        .into());
    };
    let count = gpu::devices::counted().map_err(|e| match e {
        Error::NoGpu(why) => Error::NoGpu(format!("GPU {ordinal} was asked for: {why}")),
        other => other,
    })?;
    gpu::check_ordinal(index, count)?;
    Ok(index)
}

/// Writes the number of CUDA devices to `*count`: 0, with KP_OK, when there
/// is no CUDA driver or no device. Another driver failure (a broken
/// installation) is KP_ERROR_CUDA or KP_ERROR_NO_GPU, and `*count` is untouched.
///
/// # Safety
/// `count` must be NULL or valid for one write.
#[no_mangle]
pub unsafe extern "C" fn kp_device_count(count: *mut i32) -> kp_status {
    boundary(|| {
        let out = unsafe { out_param("count", count) }?;
        let n = gpu::devices::count()?;
        *out = n.min(i32::MAX as usize) as i32;
        Ok(())
    })
}

/// Describes device `ordinal` in `*out` (written only on success). An ordinal
/// that is negative or not below kp_device_count is KP_ERROR_INVALID_ARGUMENT
/// naming the count; with no driver or no device at all, KP_ERROR_NO_GPU.
/// Loads no kernels.
///
/// # Safety
/// `out` must be NULL or valid for one write of a kp_device_info.
#[no_mangle]
pub unsafe extern "C" fn kp_device_get_info(ordinal: i32, out: *mut kp_device_info) -> kp_status {
    boundary(|| {
        let out = unsafe { out_param("out", out) }?;
        let info = gpu::device_info(device_ordinal(ordinal)?)?;
        *out = kp_device_info::from(&info);
        Ok(())
    })
}

/// Creates a context on GPU `ordinal` (the GPU backend; KP_BACKEND_GPU is GPU
/// 0). Contexts on different GPUs are independent and may be used at the same
/// time from different threads. An ordinal that is negative or not below
/// kp_device_count is KP_ERROR_INVALID_ARGUMENT naming the count; with no
/// driver or no device at all, KP_ERROR_NO_GPU (as kp_context_create with
/// KP_BACKEND_GPU). `*out` receives the handle on success and is untouched
/// otherwise; release it with kp_context_destroy.
///
/// # Safety
/// `out` must be NULL or valid for one pointer write.
#[no_mangle]
pub unsafe extern "C" fn kp_context_create_on_device(
    ordinal: i32,
    out: *mut *mut kp_context,
) -> kp_status {
    boundary(|| {
        let out = unsafe { out_param("out", out) }?;
        *out = new_context(Kernpack::with_gpu(device_ordinal(ordinal)?)?);
        Ok(())
    })
}

/// Creates a context over the GPUs of `ordinals` (`count` of them, none
/// twice), each checked as by kp_context_create_on_device. Calls on one
/// series, image or device buffer run on the first GPU; the batched calls on
/// host buffers (kp_lombscargle_batch_*, kp_lombscargle_batch_peaks_*,
/// kp_lorenz96_*, kp_lorenz05_* and kp_lorenz63_* ensembles,
/// kp_normalize_batched_*) split their work over all of them, balanced by
/// work, in chunks that fit each GPU's memory, with results bitwise equal to
/// a one-GPU context. One ordinal gives that chunking on one GPU (batches
/// larger than its memory).
/// `max_device_bytes` bounds the device memory such a call takes on each
/// GPU (0: 80% of the GPU's free memory when the call starts); a call whose
/// largest series or member needs more fails with
/// KP_ERROR_INVALID_ARGUMENT saying how much, its outputs untouched. `*out`
/// receives the handle on success and is untouched otherwise; release it
/// with kp_context_destroy.
///
/// # Safety
/// `ordinals` must be valid for `count` values; `out` NULL or valid for one
/// pointer write.
#[no_mangle]
pub unsafe extern "C" fn kp_context_create_on_devices(
    ordinals: *const i32,
    count: usize,
    max_device_bytes: usize,
    out: *mut *mut kp_context,
) -> kp_status {
    boundary(|| {
        let out = unsafe { out_param("out", out) }?;
        if count == 0 {
            return Err(Error::invalid("ordinals: at least one GPU ordinal is needed").into());
        }
        let ordinals = unsafe { crate::raw::host("ordinals", ordinals, count) }?;
        let ordinals = ordinals
            .iter()
            .map(|&o| device_ordinal(o))
            .collect::<Result<Vec<_>, _>>()?;
        let mut multi = MultiGpu::new(&ordinals)?;
        if max_device_bytes > 0 {
            multi = multi.with_max_device_bytes(max_device_bytes);
        }
        *out = new_context(Kernpack::from(multi));
        Ok(())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn name_of(info: &kp_device_info) -> String {
        let bytes: Vec<u8> = info
            .name
            .iter()
            .take_while(|&&c| c != 0)
            .map(|&c| c as u8)
            .collect();
        String::from_utf8(bytes).expect("a name cut at a character boundary")
    }

    fn device(name: &str) -> DeviceInfo {
        DeviceInfo {
            ordinal: 3,
            name: name.into(),
            compute_capability: (9, 0),
            multiprocessors: 132,
            total_memory: 80 << 30,
            free_memory: 79 << 30,
        }
    }

    #[test]
    fn device_info_converts_and_terminates_the_name() {
        let info = kp_device_info::from(&device("NVIDIA H100 80GB HBM3"));
        assert_eq!(name_of(&info), "NVIDIA H100 80GB HBM3");
        assert_eq!(info.ordinal, 3);
        assert_eq!(
            (info.compute_capability_major, info.compute_capability_minor),
            (9, 0)
        );
        assert_eq!(info.multiprocessors, 132);
        assert_eq!((info.total_bytes, info.free_bytes), (80 << 30, 79 << 30));
        // Too long: cut to fit with its NUL, never inside a character.
        let long = "é".repeat(200); // 400 bytes
        let info = kp_device_info::from(&device(&long));
        assert_eq!(info.name[KP_DEVICE_NAME_LEN - 1], 0);
        assert_eq!(name_of(&info), "é".repeat(127));
    }
}
