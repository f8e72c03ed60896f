//! `kernpack._native`: the PyO3 layer between the Python package and the safe
//! Rust API. It is private: the Python modules (kernpack/*.py) convert
//! array-likes the way SciPy does and recognise device arrays; this layer
//! checks what it is handed, releases the GIL and calls the API.
//!
//! Host arrays are NumPy arrays, checked in `arrays` (dtype, layout,
//! alignment, writability, aliasing) before any slice is made of them; host
//! results are returned as new NumPy arrays. Device buffers are device
//! addresses; each is checked against the driver's record of its allocation
//! (device, size) before anything is launched.
// The device entry points take one argument per buffer and size, as the
// Python layer passes them.
#![allow(clippy::too_many_arguments)]
use std::sync::Arc;

use cudarc::driver::CudaStream;
use pyo3::create_exception;
use pyo3::exceptions::{PyMemoryError, PyRuntimeError, PyValueError};
use pyo3::prelude::*;

use kernpack::{Backend, Error, Gpu, Kernpack};

mod arrays;
mod bls;
mod correlate;
mod lombscargle;
mod lombscargle_chi2;
mod lombscargle_multiband;
mod lorenz63;
mod ode;
mod phasefold;
mod rank;
mod reduce;
mod series;
mod significance;
mod stencil;
mod uniform;

create_exception!(
    kernpack,
    CudaError,
    PyRuntimeError,
    "A CUDA driver call failed (the message names the call and the driver's error)."
);
create_exception!(
    kernpack,
    NoGpuError,
    PyRuntimeError,
    "No usable GPU: no CUDA driver or device, or a device array passed to a CPU context."
);

/// kernpack's typed errors as Python exceptions: invalid input is a ValueError
/// with kernpack's message.
pub(crate) fn to_py(e: Error) -> PyErr {
    match e {
        Error::InvalidInput(msg) => PyValueError::new_err(msg),
        Error::NoGpu(msg) => NoGpuError::new_err(msg),
        Error::OutOfMemory(msg) => PyMemoryError::new_err(msg),
        other => CudaError::new_err(other.to_string()),
    }
}

/// One GPU ordinal or several.
#[derive(FromPyObject)]
enum Devices {
    One(usize),
    Many(Vec<usize>),
}

/// A kernpack handle: the CPU backend or one GPU with its loaded kernels.
/// Shared by every thread (the GIL is released during the work).
#[pyclass(frozen, module = "kernpack._native")]
pub(crate) struct Context {
    pub(crate) kp: Kernpack,
}

impl Context {
    /// Runs `launch` (device work on this context's GPU) with the GIL
    /// released, on the caller's `stream` (a CUstream address; 0 is the
    /// legacy default stream). NoGpuError on the CPU backend.
    pub(crate) fn enqueue<F>(&self, py: Python<'_>, stream: usize, launch: F) -> PyResult<()>
    where
        F: FnOnce(&Gpu, &Arc<CudaStream>) -> kernpack::Result<()> + Send,
    {
        let gpu = self.kp.gpu().ok_or_else(|| {
            NoGpuError::new_err(
                "device arrays need a GPU context: this one runs on the CPU backend",
            )
        })?;
        // SAFETY: the Python layer passes the current stream of the library
        // that owns the arrays (CuPy, PyTorch), on this GPU's primary context.
        let stream = unsafe { kernpack::raw::stream(gpu, stream as u64) };
        py.detach(|| launch(gpu, &stream)).map_err(to_py)
    }
}

#[pymethods]
impl Context {
    /// `backend`: "auto" (the GPU `device` if usable, else the CPU), "gpu" or
    /// "cpu". A `device` past the GPUs present is a ValueError naming their
    /// count; with no GPU at all, "gpu" is a NoGpuError and "auto" the CPU.
    /// `device` may list several GPUs: the batched calls on host arrays then
    /// split their work over all of them, in chunks of at most 80% of each
    /// GPU's free memory, the rest runs on the first.
    #[new]
    #[pyo3(signature = (backend = "auto", device = Devices::One(0)))]
    fn new(py: Python<'_>, backend: &str, device: Devices) -> PyResult<Self> {
        let backend: Backend = backend.parse().map_err(to_py)?;
        let on_gpus = || match &device {
            Devices::One(k) => Kernpack::with_gpu(*k),
            Devices::Many(ks) => Kernpack::with_gpus(ks),
        };
        let kp = py
            .detach(|| match backend {
                Backend::Cpu => Kernpack::new(Backend::Cpu),
                Backend::Gpu => on_gpus(),
                Backend::Auto => match on_gpus() {
                    Err(Error::NoGpu(_)) => Kernpack::new(Backend::Cpu),
                    other => other,
                },
            })
            .map_err(to_py)?;
        Ok(Context { kp })
    }

    /// "gpu" or "cpu": where this context runs work.
    #[getter]
    fn backend(&self) -> &'static str {
        self.kp.backend_name()
    }

    /// The GPU ordinal, or None on the CPU backend.
    #[getter]
    fn device(&self) -> Option<usize> {
        self.kp.gpu().map(|g| g.ordinal())
    }

    /// Name, compute capability, SMs, module load time and per-kernel code
    /// (SASS or JIT-compiled PTX) of this context's GPU; None on the CPU.
    fn gpu_info<'py>(&self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyAny>>> {
        let Some(gpu) = self.kp.gpu() else {
            return Ok(None);
        };
        let (major, minor) = gpu.compute_capability();
        let cc = major * 10 + minor;
        let kernels: Vec<_> = gpu
            .kernel_infos()
            .map_err(crate::to_py)?
            .into_iter()
            .map(|k| {
                let code = match k.image {
                    kernpack::gpu::Image::Sass(_) if k.binary_version == cc => "SASS".to_owned(),
                    image => format!("{image}, runs as sm_{}", k.binary_version),
                };
                (
                    k.name,
                    k.registers,
                    k.max_threads_per_block,
                    k.binary_version,
                    code,
                )
            })
            .collect();
        let info = pyo3::types::PyDict::new(py);
        info.set_item("ordinal", gpu.ordinal())?;
        info.set_item("name", gpu.name())?;
        info.set_item("compute_capability", (major, minor))?;
        info.set_item("sm_count", gpu.sm_count())?;
        // kernel_infos() above loaded every family: these are whole-module totals.
        info.set_item(
            "module_load_ms",
            (gpu.image_time() + gpu.module_load_time()).as_secs_f64() * 1e3,
        )?;
        let images: Vec<(&str, String)> = gpu
            .images()
            .into_iter()
            .map(|(family, image)| (family, image.to_string()))
            .collect();
        info.set_item("images", images)?;
        info.set_item("driver_version", gpu.driver_version())?;
        info.set_item(
            "kernel_resolve_ms",
            gpu.kernel_resolve_time().as_secs_f64() * 1e3,
        )?;
        info.set_item("all_sass", gpu.all_sass().map_err(crate::to_py)?)?;
        info.set_item("kernels", kernels)?;
        Ok(Some(info.into_any()))
    }

    fn __repr__(&self) -> String {
        match self.kp.gpu() {
            Some(gpu) => format!(
                "<kernpack Context on GPU {} ({})>",
                gpu.ordinal(),
                gpu.name()
            ),
            None => "<kernpack Context on the CPU>".to_string(),
        }
    }
}

/// CUDA devices visible to the driver (0 without a driver).
#[pyfunction]
fn device_count() -> usize {
    Gpu::device_count()
}

/// A CUDA device: ordinal, name, compute capability, multiprocessors, total
/// and free memory (bytes).
type DeviceInfo = (usize, String, (i32, i32), u32, usize, usize);

/// Every CUDA device (none without a driver or a device), as
/// [`DeviceInfo`] tuples. Loads no kernels; the GIL is released meanwhile.
#[pyfunction]
fn devices(py: Python<'_>) -> PyResult<Vec<DeviceInfo>> {
    let list = py.detach(kernpack::devices).map_err(to_py)?;
    Ok(list
        .into_iter()
        .map(|d| {
            (
                d.ordinal,
                d.name,
                d.compute_capability,
                d.multiprocessors,
                d.total_memory,
                d.free_memory,
            )
        })
        .collect())
}

/// Sets the CPU backend's thread count for the process; 0 restores the
/// default (KERNPACK_NUM_THREADS, else every core). ValueError above 4096.
#[pyfunction]
fn set_cpu_threads(threads: usize) -> PyResult<()> {
    kernpack::cpu::set_threads(threads).map_err(to_py)
}

/// The CPU backend's thread count now (at least 1).
#[pyfunction]
fn cpu_threads() -> usize {
    kernpack::cpu::threads()
}

/// Frees the pinned and device staging that chunked GPU calls keep for later ones.
#[pyfunction]
fn release_staging(py: Python<'_>) {
    py.detach(kernpack::release_staging);
}

/// The embedded fatbin: its size, origin, toolkit, SASS and PTX architectures,
/// and a per-entry summary.
#[pyfunction]
fn fatbin_info(py: Python<'_>) -> PyResult<Bound<'_, PyAny>> {
    use kernpack::gpu;
    let info = pyo3::types::PyDict::new(py);
    info.set_item("bytes", gpu::FATBIN.len())?;
    info.set_item("origin", gpu::FATBIN_ORIGIN)?;
    info.set_item("toolkit", gpu::FATBIN_TOOLKIT)?;
    // "90,100" as ["sm_90", "sm_100"] (`prefix` "sm_").
    let archs = |list: &str, prefix: &str| -> Vec<String> {
        let archs = list.split(',').filter(|s| !s.is_empty());
        archs.map(|s| format!("{prefix}{s}")).collect()
    };
    info.set_item("sass", archs(gpu::FATBIN_SASS, "sm_"))?;
    info.set_item("ptx", archs(gpu::FATBIN_PTX, "compute_"))?;
    info.set_item("legacy_toolkit", gpu::FATBIN_LEGACY_TOOLKIT)?;
    info.set_item(
        "families",
        gpu::FATBIN_FAMILIES.split(',').collect::<Vec<_>>(),
    )?;
    let summary = kernpack::fatbin::parse(gpu::FATBIN)
        .map(|entries| kernpack::fatbin::summary(&entries))
        .unwrap_or_else(|e| format!("cannot parse the embedded fatbin: {e}"));
    info.set_item("summary", summary)?;
    Ok(info.into_any())
}

#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    m.add("CudaError", py.get_type::<CudaError>())?;
    m.add("NoGpuError", py.get_type::<NoGpuError>())?;
    m.add("MAX_BOX_SIZE", kernpack::MAX_BOX_SIZE)?;
    m.add("MAX_GPU_WINDOW_COLS", kernpack::MAX_GPU_WINDOW_COLS)?;
    m.add("MAX_CORRELATE_TAPS", kernpack::api::correlate::MAX_TAPS)?;
    m.add(
        "MAX_GAUSSIAN_ORDER",
        kernpack::api::correlate::MAX_GAUSSIAN_ORDER,
    )?;
    m.add("MAX_PEAKS", kernpack::api::phasefold::MAX_PEAKS)?;
    m.add_class::<Context>()?;
    for function in [
        wrap_pyfunction!(device_count, m)?,
        wrap_pyfunction!(devices, m)?,
        wrap_pyfunction!(fatbin_info, m)?,
        wrap_pyfunction!(set_cpu_threads, m)?,
        wrap_pyfunction!(cpu_threads, m)?,
        wrap_pyfunction!(release_staging, m)?,
        wrap_pyfunction!(series::series_layout, m)?,
        wrap_pyfunction!(lombscargle::lombscargle, m)?,
        wrap_pyfunction!(lombscargle::lombscargle_batch, m)?,
        wrap_pyfunction!(lombscargle::lombscargle_device, m)?,
        wrap_pyfunction!(lombscargle::lombscargle_batch_device, m)?,
        wrap_pyfunction!(significance::false_alarm, m)?,
        wrap_pyfunction!(significance::lombscargle_bootstrap, m)?,
        wrap_pyfunction!(lombscargle_chi2::lombscargle_chi2, m)?,
        wrap_pyfunction!(lombscargle_chi2::lombscargle_chi2_batch, m)?,
        wrap_pyfunction!(lombscargle_chi2::lombscargle_chi2_bootstrap, m)?,
        wrap_pyfunction!(lombscargle_multiband::lombscargle_multiband, m)?,
        wrap_pyfunction!(lombscargle_multiband::lombscargle_multiband_batch, m)?,
        wrap_pyfunction!(bls::bls, m)?,
        wrap_pyfunction!(bls::bls_batch, m)?,
        wrap_pyfunction!(phasefold::phase_fold, m)?,
        wrap_pyfunction!(stencil::box_filter, m)?,
        wrap_pyfunction!(stencil::box_filter_device, m)?,
        wrap_pyfunction!(correlate::correlate, m)?,
        wrap_pyfunction!(correlate::correlate_device, m)?,
        wrap_pyfunction!(correlate::gaussian_weights, m)?,
        wrap_pyfunction!(rank::rank_filter, m)?,
        wrap_pyfunction!(rank::rank_filter_device, m)?,
        wrap_pyfunction!(uniform::uniform_filter_nd, m)?,
        wrap_pyfunction!(uniform::uniform_filter_nd_device, m)?,
        wrap_pyfunction!(reduce::sum, m)?,
        wrap_pyfunction!(reduce::normalize, m)?,
        wrap_pyfunction!(reduce::normalize_batched, m)?,
        wrap_pyfunction!(reduce::sum_device, m)?,
        wrap_pyfunction!(reduce::normalize_device, m)?,
        wrap_pyfunction!(reduce::normalize_batched_device, m)?,
        wrap_pyfunction!(ode::frames, m)?,
        wrap_pyfunction!(ode::ensemble, m)?,
        wrap_pyfunction!(ode::ensemble_device, m)?,
        wrap_pyfunction!(ode::lorenz96_tangent, m)?,
        wrap_pyfunction!(ode::window_sum, m)?,
        wrap_pyfunction!(ode::window_sum_device, m)?,
        wrap_pyfunction!(ode::fg_integrate, m)?,
        wrap_pyfunction!(ode::fg_integrate_device, m)?,
        wrap_pyfunction!(lorenz63::lorenz63, m)?,
        wrap_pyfunction!(lorenz63::lorenz63_device, m)?,
        wrap_pyfunction!(lorenz63::lorenz63_adaptive, m)?,
        wrap_pyfunction!(lorenz63::lorenz63_adaptive_device, m)?,
        wrap_pyfunction!(lorenz63::check_save_at, m)?,
        wrap_pyfunction!(lorenz63::check_lorenz63_adaptive, m)?,
    ] {
        m.add_function(function)?;
    }
    Ok(())
}
