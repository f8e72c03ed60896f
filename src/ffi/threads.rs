//! The CPU backend's thread count, process-wide (as `openblas_set_num_threads`
//! or `omp_set_num_threads`): contexts on the CPU backend all use it.
use super::{boundary, kp_status, out_param};
use crate::cpu;

/// Sets the number of threads CPU-backend work runs on, for the whole
/// process; 0 restores the default (the `KERNPACK_NUM_THREADS` environment
/// variable when it holds a count from 1 to 4096, else every core). More than
/// 4096 is KP_ERROR_INVALID_ARGUMENT and changes nothing. Results do not
/// depend on the count, except the rounding of sums and normalisation, which
/// is fixed for a given count.
#[no_mangle]
pub extern "C" fn kp_set_cpu_threads(threads: usize) -> kp_status {
    boundary(|| Ok(cpu::set_threads(threads)?))
}

/// Frees the pinned host and device staging that chunked GPU calls keep for
/// later ones (batched peaks, contexts on several devices, Lorenz ensembles
/// over 256 MiB on one GPU: up to four buffers per GPU, each a device arena
/// of up to 256 MiB by default and pinned host memory for what is copied).
/// Safe at any time, also while other threads run calls: kept buffers are
/// idle. Always KP_OK.
#[no_mangle]
pub extern "C" fn kp_release_staging() -> kp_status {
    boundary(|| {
        crate::api::multi::release_staging();
        Ok(())
    })
}

/// Writes the number of threads CPU-backend work runs on now (at least 1) to
/// `*threads`.
///
/// # Safety
/// `threads` must be NULL or valid for one write.
#[no_mangle]
pub unsafe extern "C" fn kp_get_cpu_threads(threads: *mut usize) -> kp_status {
    boundary(|| {
        *unsafe { out_param("threads", threads) }? = cpu::threads();
        Ok(())
    })
}
