//! Loader: per GPU ordinal one context; per kernel family (`csrc/<family>.cu`)
//! one module, loaded on the first use of one of its kernels from the one image
//! of the embedded fatbin this GPU runs (`image.rs`); each kernel resolved once,
//! on first use. `KernelInfo::binary_version` and the family's [`Image`] say
//! what runs (SASS, or PTX JIT-compiled). Kernels are launched through their
//! typed declarations (`kernels.rs`).
// Generated from csrc/kernpack_params.h by bindgen; it keeps the C names (hence
// the allows) and bindgen's formatting (hence rustfmt::skip).
#[allow(non_camel_case_types, non_snake_case)]
#[rustfmt::skip]
pub(crate) mod c_params;
pub mod bls;
pub(crate) mod bootstrap;
pub mod correlate;
pub mod device;
pub(crate) mod devices;
pub mod fg;
pub mod image;
pub(crate) mod kernels;
pub(crate) mod launch;
pub mod lombscargle;
pub mod lombscargle_chi2;
pub mod lombscargle_multiband;
pub mod lorenz;
pub mod lorenz63;
pub mod peaks;
pub mod phasefold;
pub mod rank;
pub mod reduce;
pub mod stencil;
pub mod uniform;

pub use devices::{device_info, devices, DeviceInfo};
pub use image::Image;

/// The kernels' parameter structs (csrc/kernpack_params.h, generated in
/// [`c_params`]), by their Rust names.
pub(crate) type LsParams = c_params::kp_ls_params;
pub(crate) type LsGrid = c_params::kp_ls_grid;
/// Per-series statistics: written and read on the device only.
pub(crate) type LsStats = c_params::kp_ls_stats;
pub(crate) type BoxParams = c_params::kp_box_params;
pub(crate) type BoxRunParams = c_params::kp_box_run_params;
pub(crate) type L96Run = c_params::kp_l96_run;
pub(crate) type L63Adaptive = c_params::kp_l63_adaptive;
pub(crate) type CorrelateParams = c_params::kp_correlate_params;
pub(crate) type RankParams = c_params::kp_rank_params;
pub(crate) type UniformParams = c_params::kp_uniform_params;
pub(crate) type BlsParams = c_params::kp_bls_params;
pub(crate) type PhasefoldParams = c_params::kp_phasefold_params;

use std::collections::HashMap;
use std::ffi::c_void;
use std::sync::{Arc, Mutex, OnceLock};

use crate::fatbin::{self, FatbinEntry};
use std::time::{Duration, Instant};

use cudarc::driver::result as cu;
use cudarc::driver::sys::{CUdevice_attribute, CUfunction, CUfunction_attribute, CUmodule};
use cudarc::driver::{CudaContext, CudaEvent, CudaSlice, CudaStream, DeviceRepr, DriverError};

use crate::error::{Error, Result};
use launch::{KernelArgs, KernelFn, LaunchConfig};

/// 8-byte (here 64) alignment for the embedded image: the driver reads the
/// fatbin in place, with no copy, and expects aligned headers.
#[repr(C, align(64))]
struct Aligned<Bytes: ?Sized>(Bytes);
static FATBIN_ALIGNED: &Aligned<[u8]> = &Aligned(*include_bytes!(concat!(
    env!("OUT_DIR"),
    "/kernpack.fatbin"
)));

/// The fatbin built by build.rs (or the committed one), embedded in the library.
pub static FATBIN: &[u8] = &FATBIN_ALIGNED.0;

/// What built the embedded fatbin ("nvcc PATH" or "committed"), and its contents as build.rs recorded them.
pub const FATBIN_ORIGIN: &str = env!("KERNPACK_FATBIN_ORIGIN");
pub const FATBIN_TOOLKIT: &str = env!("KERNPACK_FATBIN_TOOLKIT");
/// The toolkit of the sm_35..sm_72 and compute_35 entries ("none" without them).
pub const FATBIN_LEGACY_TOOLKIT: &str = env!("KERNPACK_FATBIN_LEGACY_TOOLKIT");
/// Comma-separated SASS architectures, e.g. "35,37,...,121".
pub const FATBIN_SASS: &str = env!("KERNPACK_FATBIN_SASS");
/// Comma-separated PTX architectures, e.g. "35,121".
pub const FATBIN_PTX: &str = env!("KERNPACK_FATBIN_PTX");
/// The entries a build kept with `KERNPACK_FATBIN_ONLY` (e.g. "sm_90,compute_35"
/// for small test binaries); empty for a whole fatbin.
pub const FATBIN_ONLY: &str = env!("KERNPACK_FATBIN_ONLY");
/// The kernel families, in the order of their containers in [`FATBIN`].
pub const FATBIN_FAMILIES: &str = env!("KERNPACK_FATBIN_FAMILIES");

/// Every entry point of csrc/, by family: the `extern "C"` kernels of
/// `csrc/<family>.cu` (sorted by name), read by build.rs from the symbol
/// table of a cubin of the family's container in [`FATBIN`]
/// (src/build_support/kernel_list.rs), families in the order of their
/// containers. A family is one module, loaded whole on the first use of any
/// of its kernels.
pub const KERNEL_FAMILIES: &[(&str, &[&str])] =
    include!(concat!(env!("OUT_DIR"), "/kernel_families.rs"));

/// Every kernel name, family by family.
pub fn kernel_names() -> impl Iterator<Item = &'static str> {
    KERNEL_FAMILIES
        .iter()
        .flat_map(|(_, names)| names.iter().copied())
}

/// Set (to anything but "" or "0") to load every kernel family when a GPU is
/// first used, as [`Gpu::load_all_kernels`] does, instead of on each family's
/// first call.
pub const PRELOAD_ENV: &str = "KERNPACK_PRELOAD";

/// Set (to anything but "" or "0") to plan every launch as if the GPU lacked
/// cooperative launch: the test hook for the paths older GPUs take.
pub const NO_COOPERATIVE_ENV: &str = "KERNPACK_GPU_NO_COOPERATIVE";

fn env_flag(name: &str) -> bool {
    std::env::var_os(name).is_some_and(|v| !v.is_empty() && v != "0")
}

/// The embedded fatbin's entries, parsed once.
fn fatbin_entries() -> &'static [FatbinEntry] {
    static ENTRIES: OnceLock<Vec<FatbinEntry>> = OnceLock::new();
    // build.rs parsed this very fatbin when it wrote it.
    ENTRIES.get_or_init(|| fatbin::parse(FATBIN).expect("the embedded fatbin parses"))
}

/// What the driver reports for one kernel on one GPU.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KernelInfo {
    pub name: &'static str,
    /// The family (`csrc/<family>.cu`) and what of it the driver was handed.
    pub family: &'static str,
    pub image: Image,
    pub registers: i32,
    pub max_threads_per_block: i32,
    pub local_bytes: i32,
    pub static_shared_bytes: i32,
    /// Compute capability of the code that runs, e.g. 90. Equal to the GPU's
    /// compute capability: SASS from the fatbin. Anything else: the PTX was JIT-compiled.
    pub binary_version: i32,
    pub ptx_version: i32,
}

pub(crate) struct Kernel {
    pub(crate) func: CUfunction,
    pub(crate) info: KernelInfo,
    /// Threads per block: the kernel's `__launch_bounds__`.
    pub(crate) block: u32,
    /// Grid that fills the GPU once: resident blocks per SM times SMs.
    pub(crate) full_grid: u32,
    /// Most dynamic shared memory a launch may give one block: the device's
    /// opt-in maximum less the static shared memory for the kernels of
    /// [`kernels::dynamic_shared`] (allowed once, at load), the driver's
    /// default for the others.
    pub(crate) max_dynamic_shared: u32,
}

/// The loaded module; unloaded (in its context) when the `Gpu` goes.
struct Module {
    ctx: Arc<CudaContext>,
    raw: CUmodule,
}

impl Drop for Module {
    fn drop(&mut self) {
        if self.ctx.bind_to_thread().is_ok() {
            // SAFETY: loaded by us in this context; no kernel handle outlives the Gpu.
            let _ = unsafe { cu::module::unload(self.raw) };
        }
    }
}

pub struct Gpu {
    ctx: Arc<CudaContext>,
    stream: Arc<CudaStream>,
    /// Per kernel name: its family (index into KERNEL_FAMILIES) and, once resolved, the kernel.
    kernels: HashMap<&'static str, (usize, OnceLock<Kernel>)>,
    /// Serialises module loads and kernel resolution (first uses only).
    loading: Mutex<()>,
    name: String,
    compute_capability: (i32, i32),
    sm_count: u32,
    cooperative_launch: bool,
    l2_bytes: usize,
    shared_optin: i32,
    driver_version: i32,
    /// Images prepared for every family while the context was created.
    prepared: Mutex<PreparedImages>,
    image_time: Mutex<Duration>,
    module_load_time: Mutex<Duration>,
    kernel_resolve_time: Mutex<Duration>,
    /// The end of the kernels last enqueued in a turn ([`Gpu::in_kernel_turn`]).
    kernel_turn: Mutex<Option<CudaEvent>>,
    // Last: the modules outlive every kernel handle above when the Gpu drops.
    /// Per family (index into KERNEL_FAMILIES): its module and image, once loaded.
    modules: Vec<OnceLock<(Module, Image)>>,
}

// SAFETY: CUfunction handles are plain driver handles, valid from any thread
// once the context is bound (every use goes through bind_to_thread).
unsafe impl Send for Gpu {}
unsafe impl Sync for Gpu {}

impl std::fmt::Debug for Gpu {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Gpu")
            .field("ordinal", &self.ctx.ordinal())
            .field("name", &self.name)
            .field("compute_capability", &self.compute_capability)
            .finish()
    }
}

/// Runs a driver-touching closure, turning a missing driver (cudarc panics when
/// libcuda or one of its symbols is absent) into `Error::NoGpu`.
fn guarded<T>(what: &str, f: impl FnOnce() -> Result<T>) -> Result<T> {
    if !driver_library_present() {
        return Err(Error::NoGpu(
            "the CUDA driver library (libcuda) was not found".into(),
        ));
    }
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)).unwrap_or_else(|panic| {
        let msg = panic
            .downcast_ref::<String>()
            .cloned()
            .or_else(|| panic.downcast_ref::<&str>().map(|s| s.to_string()))
            .unwrap_or_default();
        Err(Error::NoGpu(format!(
            "the CUDA driver failed while {what}: {msg}"
        )))
    })
}

/// Whether libcuda can be opened, asked once per process: on a host without
/// it every probe searched the library path anew (about 0.5 ms, 150 failed
/// opens), and a driver does not appear in a running process.
fn driver_library_present() -> bool {
    static PRESENT: OnceLock<bool> = OnceLock::new();
    // SAFETY: only probes whether the library can be opened.
    *PRESENT.get_or_init(|| unsafe { cudarc::driver::sys::is_culib_present() })
}

/// The GPUs loaded by [`Gpu::get`], by ordinal (locked while one loads).
fn loaded_gpus() -> std::sync::MutexGuard<'static, HashMap<usize, Arc<Gpu>>> {
    static LOADED: OnceLock<Mutex<HashMap<usize, Arc<Gpu>>>> = OnceLock::new();
    lock(LOADED.get_or_init(Default::default))
}

/// `mutex` locked; a poisoned one is taken as it is (every lock here guards
/// data that a panicking holder leaves consistent: caches, timers, turns).
pub(crate) fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|p| p.into_inner())
}

/// The share of device memory the device's default pool keeps reserved
/// after stream-ordered frees (`1 / KEPT_POOL_DIVISOR`), for the next
/// call's scratch and buffers, instead of returning it to the driver at
/// each synchronisation (the driver's default keeps none): a Gaussian
/// filter of an 8192^2 f32 image on device memory spent a third of its time
/// (0.33 of 1.03 ms on an H200) re-allocating its 256 MB of scratch.
const KEPT_POOL_DIVISOR: usize = 4;

/// Sets the default pool of `device` to keep a [`KEPT_POOL_DIVISOR`]th of
/// the device's memory; best effort (a driver that refuses leaves the
/// default, which is only slower).
fn keep_freed_scratch(device: cudarc::driver::sys::CUdevice) {
    // SAFETY: a device handle from the driver; the attribute takes a u64.
    unsafe {
        let total = cu::device::total_mem(device).unwrap_or(0);
        if let Ok(pool) = cu::device::get_default_mem_pool(device) {
            let mut bytes = (total / KEPT_POOL_DIVISOR) as u64;
            let _ = cu::mem_pool::set_attribute(
                pool,
                cudarc::driver::sys::CUmemPool_attribute::CU_MEMPOOL_ATTR_RELEASE_THRESHOLD,
                (&mut bytes as *mut u64).cast(),
            );
        }
    }
}

/// `len` values of stream-ordered, uninitialised device scratch for one
/// launch: freeing it on drop waits for the stream's kernels.
///
/// # Safety
/// The kernels must write every value before reading it.
pub(crate) unsafe fn scratch<T: DeviceRepr>(
    stream: &Arc<CudaStream>,
    len: usize,
) -> Result<CudaSlice<T>> {
    unsafe { stream.alloc::<T>(len) }.map_err(|e| Error::cuda("allocating scratch", e))
}

/// `ordinal` names one of the `count` devices: with none at all that is
/// [`Error::NoGpu`], otherwise an out-of-range ordinal is [`Error::InvalidInput`]
/// naming the count (a typo in a device number, not a machine without a GPU).
pub(crate) fn check_ordinal(ordinal: usize, count: usize) -> Result<()> {
    if count == 0 {
        return Err(Error::NoGpu(format!(
            "GPU {ordinal} was asked for, but no CUDA device is present"
        )));
    }
    if ordinal >= count {
        let s = if count == 1 { "" } else { "s" };
        return Err(Error::invalid(format!(
            "there is no GPU {ordinal}: the CUDA driver reports {count} device{s} \
             (ordinals 0 to {})",
            count - 1
        )));
    }
    Ok(())
}

fn no_device_is_no_gpu(during: &str, err: DriverError) -> Error {
    use cudarc::driver::sys::CUresult::*;
    match err.0 {
        CUDA_ERROR_NO_DEVICE | CUDA_ERROR_INVALID_DEVICE | CUDA_ERROR_NOT_INITIALIZED => {
            Error::NoGpu(format!("{during}: {err}"))
        }
        _ => Error::cuda(during, err),
    }
}

/// Each family's image for one GPU (in [`KERNEL_FAMILIES`] order), prepared
/// on a helper thread while the driver creates the context.
type Images = Vec<std::result::Result<image::Choice, String>>;

/// The helper thread until its images are first needed, then the images
/// (each taken once, by its family's load).
type PreparedImages = (
    Option<std::thread::JoinHandle<Images>>,
    Vec<Option<std::result::Result<image::Choice, String>>>,
);

/// Chooses (and decompresses) family `family`'s image (index into
/// [`KERNEL_FAMILIES`]) for a GPU of compute capability `cc` under driver `driver`.
fn prepare_image(
    family: usize,
    cc: u32,
    driver: i32,
) -> std::result::Result<image::Choice, String> {
    let name = KERNEL_FAMILIES[family].0;
    let container = FATBIN_FAMILIES
        .split(',')
        .position(|f| f == name)
        .ok_or_else(|| format!("the embedded fatbin has no {name} kernels"))?;
    let entries: Vec<&FatbinEntry> = fatbin_entries()
        .iter()
        .filter(|e| e.container == container)
        .collect();
    image::choose(FATBIN, &entries, cc, driver, env_flag("CUDA_FORCE_PTX_JIT"))
}

/// Every family's image, in [`KERNEL_FAMILIES`] order.
fn prepare_images(cc: u32, driver: i32) -> Images {
    (0..KERNEL_FAMILIES.len())
        .map(|family| prepare_image(family, cc, driver))
        .collect()
}

/// The driver's CUDA version; one older than kernpack's minimum is
/// [`Error::NoGpu`] naming both versions (checked before any other call, so no
/// entry point the old driver lacks is ever looked up).
fn driver_version() -> Result<i32> {
    let mut version = 0;
    // SAFETY: writes one int; cuDriverGetVersion exists in every driver and
    // needs no cuInit.
    let status = unsafe { cudarc::driver::sys::cuDriverGetVersion(&mut version) };
    if status != cudarc::driver::sys::CUresult::CUDA_SUCCESS {
        return Err(Error::cuda(
            "reading the driver version",
            DriverError(status),
        ));
    }
    if version < image::MIN_DRIVER {
        return Err(Error::NoGpu(format!(
            "the CUDA driver is version {}; kernpack needs CUDA {} (driver R470) or newer",
            image::version_text(version),
            image::version_text(image::MIN_DRIVER)
        )));
    }
    Ok(version)
}

impl Gpu {
    /// Number of CUDA devices; 0 when there is no driver.
    pub fn device_count() -> usize {
        devices::counted().unwrap_or(0)
    }

    /// The loaded GPU `ordinal`: created on first use, then shared. GPUs are
    /// independent: each has its own (primary) context, module and kernels,
    /// and handles on different GPUs may be used from different threads at once.
    ///
    /// Errors: [`Error::NoGpu`] without a driver or a device;
    /// [`Error::InvalidInput`] naming the count present when there are
    /// devices but `ordinal` is not one of them.
    pub fn get(ordinal: usize) -> Result<Arc<Gpu>> {
        let mut loaded = loaded_gpus();
        if let Some(gpu) = loaded.get(&ordinal) {
            return Ok(gpu.clone());
        }
        let gpu = Arc::new(guarded("opening the GPU", || Gpu::load(ordinal))?);
        if env_flag(PRELOAD_ENV) {
            gpu.load_all_kernels()?;
        }
        loaded.insert(ordinal, gpu.clone());
        Ok(gpu)
    }

    /// GPU `ordinal` if this process has already loaded it (nothing is created).
    pub(crate) fn get_loaded(ordinal: usize) -> Option<Arc<Gpu>> {
        loaded_gpus().get(&ordinal).cloned()
    }

    fn load(ordinal: usize) -> Result<Gpu> {
        let driver_version = driver_version()?;
        let count =
            CudaContext::device_count().map_err(|e| no_device_is_no_gpu("counting devices", e))?;
        check_ordinal(ordinal, count.max(0) as usize)?;
        // The images need only the compute capability, which the driver tells
        // without a context: prepare them (decompression is most of the work)
        // while the driver spends ~100-200 ms creating the context.
        let device = cu::device::get(ordinal as i32)
            .map_err(|e| no_device_is_no_gpu("opening the device", e))?;
        let attr = |a| {
            // SAFETY: a valid device handle and a plain integer attribute.
            unsafe { cu::device::get_attribute(device, a) }
                .map_err(|e| Error::cuda("reading device attributes", e))
        };
        let compute_capability = (
            attr(CUdevice_attribute::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR)?,
            attr(CUdevice_attribute::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR)?,
        );
        let cc = (compute_capability.0 * 10 + compute_capability.1) as u32;
        let prepared = std::thread::Builder::new()
            .name("kernpack-images".into())
            .spawn(move || prepare_images(cc, driver_version))
            .map_err(|e| Error::OutOfMemory(format!("starting a thread: {e}")))?;
        let ctx = CudaContext::new(ordinal)
            .map_err(|e| no_device_is_no_gpu("creating the context", e))?;
        if attr(CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED)? != 0 {
            keep_freed_scratch(device);
        }
        let sm_count = attr(CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)? as u32;
        // The test hook plans as a GPU without cooperative launch would.
        let cooperative_launch = attr(CUdevice_attribute::CU_DEVICE_ATTRIBUTE_COOPERATIVE_LAUNCH)?
            != 0
            && !env_flag(NO_COOPERATIVE_ENV);
        let l2_bytes = attr(CUdevice_attribute::CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE)?.max(0) as usize;
        let shared_optin =
            attr(CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN)?;
        let name = ctx
            .name()
            .map_err(|e| Error::cuda("reading the device name", e))?;
        let kernels = KERNEL_FAMILIES
            .iter()
            .enumerate()
            .flat_map(|(family, (_, names))| {
                names.iter().map(move |&n| (n, (family, OnceLock::new())))
            })
            .collect();
        let stream = ctx.default_stream();
        Ok(Gpu {
            ctx,
            stream,
            kernels,
            loading: Mutex::new(()),
            prepared: Mutex::new((Some(prepared), Vec::new())),
            name,
            compute_capability,
            sm_count,
            cooperative_launch,
            l2_bytes,
            shared_optin,
            driver_version,
            image_time: Mutex::default(),
            module_load_time: Mutex::default(),
            kernel_resolve_time: Mutex::default(),
            kernel_turn: Mutex::new(None),
            modules: KERNEL_FAMILIES.iter().map(|_| OnceLock::new()).collect(),
        })
    }

    /// The module of family `family` (index into [`KERNEL_FAMILIES`]), loaded
    /// on first use from the one image of the fatbin this GPU runs.
    fn family_module(&self, family: usize) -> Result<&(Module, Image)> {
        if let Some(loaded) = self.modules[family].get() {
            return Ok(loaded);
        }
        let _loading = lock(&self.loading);
        if let Some(loaded) = self.modules[family].get() {
            return Ok(loaded);
        }
        let started = Instant::now();
        let name = KERNEL_FAMILIES[family].0;
        let choice = self.take_prepared(family).map_err(|msg| {
            Error::NoGpu(format!("{} (GPU {}): {msg}", self.name, self.ordinal()))
        })?;
        *lock(&self.image_time) += started.elapsed();
        let started = Instant::now();
        self.bind()?;
        // SAFETY: the choice is a complete, aligned cubin or fatbin image; the
        // driver copies what it keeps.
        let raw = unsafe { cu::module::load_data(choice.as_ptr()) }.map_err(|e| {
            Error::cuda(format!("loading the {name} kernels ({})", choice.image), e)
        })?;
        let module = Module {
            ctx: self.ctx.clone(),
            raw,
        };
        *lock(&self.module_load_time) += started.elapsed();
        let _ = self.modules[family].set((module, choice.image));
        Ok(self.modules[family].get().expect("just set"))
    }

    /// Family `family`'s image: from the helper thread started at load (waiting
    /// for it if it is still at work), or prepared now if it failed.
    fn take_prepared(&self, family: usize) -> std::result::Result<image::Choice, String> {
        let mut prepared = lock(&self.prepared);
        let (thread, ready) = &mut *prepared;
        if let Some(thread) = thread.take() {
            *ready = match thread.join() {
                Ok(images) => images.into_iter().map(Some).collect(),
                Err(_) => Vec::new(),
            };
        }
        match ready.get_mut(family).and_then(Option::take) {
            Some(choice) => choice,
            None => {
                let (major, minor) = self.compute_capability;
                prepare_image(family, (major * 10 + minor) as u32, self.driver_version)
            }
        }
    }

    /// The kernel `name`, resolved (and its family loaded) on first use.
    pub(crate) fn kernel_by_name(&self, name: &str) -> Result<&Kernel> {
        let (family, cell) = self
            .kernels
            .get(name)
            .unwrap_or_else(|| panic!("kernel {name} is not in KERNEL_FAMILIES"));
        if let Some(kernel) = cell.get() {
            return Ok(kernel);
        }
        let (module, image) = self.family_module(*family)?;
        let _loading = lock(&self.loading);
        if let Some(kernel) = cell.get() {
            return Ok(kernel);
        }
        let started = Instant::now();
        let (&name, _) = self.kernels.get_key_value(name).expect("looked up above");
        self.bind()?;
        let c_name = std::ffi::CString::new(name).expect("kernel names have no NUL");
        // SAFETY: the module is loaded in this context.
        let func = unsafe { cu::module::get_function(module.raw, c_name) }
            .map_err(|e| Error::cuda(format!("resolving kernel {name}"), e))?;
        let optin = kernels::dynamic_shared()
            .contains(&name)
            .then_some(self.shared_optin);
        let kernel = Kernel::resolve(
            name,
            KERNEL_FAMILIES[*family].0,
            *image,
            func,
            self.sm_count,
            optin,
        )?;
        *lock(&self.kernel_resolve_time) += started.elapsed();
        let _ = cell.set(kernel);
        Ok(cell.get().expect("just set"))
    }

    pub fn context(&self) -> &Arc<CudaContext> {
        &self.ctx
    }
    /// Makes this GPU's context current on the calling thread.
    pub(crate) fn bind(&self) -> Result<()> {
        self.ctx
            .bind_to_thread()
            .map_err(|e| Error::cuda("binding the context", e))
    }
    /// The stream the host-slice functions use.
    pub fn stream(&self) -> &Arc<CudaStream> {
        &self.stream
    }
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Enqueues `kernels` on `stream` behind every kernel enqueued in an
    /// earlier turn on this GPU, whatever its stream or caller thread: the
    /// chunk pipelines' kernels run one chunk at a time, in enqueue order,
    /// while their copies and host work overlap. Two calls sharing a GPU (a
    /// dask worker's threads) thus overlap one call's packing with the
    /// other's kernels, but not their kernels, which would contend (each
    /// launch fills the GPU). Holding the lock only while enqueueing keeps
    /// the turns in enqueue order; nothing here waits on the host. The lock
    /// is not re-entrant: `kernels` must not take a turn itself. (A first
    /// launch may load its module under the lock, once per family.)
    pub(crate) fn in_kernel_turn(
        &self,
        stream: &CudaStream,
        kernels: impl FnOnce() -> Result<()>,
    ) -> Result<()> {
        let mut turn = lock(&self.kernel_turn);
        if let Some(previous) = turn.as_ref() {
            stream
                .wait(previous)
                .map_err(|e| Error::cuda("ordering kernels after the previous ones", e))?;
        }
        kernels()?;
        let end = match turn.as_ref() {
            Some(event) => event,
            None => turn.insert(
                self.ctx
                    .new_event(None) // ordering only: no timing
                    .map_err(|e| Error::cuda("creating an event", e))?,
            ),
        };
        end.record(stream)
            .map_err(|e| Error::cuda("recording the kernels' end", e))
    }
    pub fn ordinal(&self) -> usize {
        self.ctx.ordinal()
    }
    pub fn compute_capability(&self) -> (i32, i32) {
        self.compute_capability
    }
    pub fn sm_count(&self) -> u32 {
        self.sm_count
    }
    /// Whether kernels may be launched cooperatively (all blocks resident at once).
    pub fn cooperative_launch(&self) -> bool {
        self.cooperative_launch
    }
    /// Size of the L2 cache in bytes.
    pub fn l2_bytes(&self) -> usize {
        self.l2_bytes
    }
    /// The CUDA driver's version, e.g. 13000 for 13.0.
    pub fn driver_version(&self) -> i32 {
        self.driver_version
    }
    /// Time spent so far on images at first use: waiting for the helper thread
    /// that prepares them during context creation (or preparing them, if it failed).
    pub fn image_time(&self) -> Duration {
        *lock(&self.image_time)
    }
    /// Time spent so far in `cuModuleLoadData`, over the families loaded.
    pub fn module_load_time(&self) -> Duration {
        *lock(&self.module_load_time)
    }
    /// Time spent so far resolving kernels and reading their attributes.
    pub fn kernel_resolve_time(&self) -> Duration {
        *lock(&self.kernel_resolve_time)
    }

    /// Loads every kernel family and resolves every kernel now. Families load
    /// on first use otherwise (a fast start: only what a call needs), and a
    /// module load waits for work already queued on the GPU; after this no
    /// call loads anything, so every `Gpu::enqueue` returns without waiting.
    /// `KERNPACK_PRELOAD=1` does this when the GPU is first opened.
    pub fn load_all_kernels(&self) -> Result<()> {
        self.kernel_infos().map(|_| ())
    }

    /// Every kernel's attributes, loading every family.
    pub fn kernel_infos(&self) -> Result<Vec<KernelInfo>> {
        kernel_names()
            .map(|n| self.kernel_by_name(n).map(|k| k.info.clone()))
            .collect()
    }

    /// What the driver was handed for each family loaded so far.
    pub fn images(&self) -> Vec<(&'static str, Image)> {
        KERNEL_FAMILIES
            .iter()
            .zip(&self.modules)
            .filter_map(|((family, _), m)| m.get().map(|(_, image)| (*family, *image)))
            .collect()
    }

    /// True when every family runs SASS built for this GPU's arch (nothing was
    /// JIT-compiled); loads every family.
    pub fn all_sass(&self) -> Result<bool> {
        let cc = self.compute_capability.0 * 10 + self.compute_capability.1;
        Ok(self
            .kernel_infos()?
            .iter()
            .all(|k| k.binary_version == cc && matches!(k.image, Image::Sass(_))))
    }

    /// The kernel of a declaration, loaded on first use.
    pub(crate) fn kernel<A>(&self, kernel: &KernelFn<A>) -> Result<&Kernel> {
        self.kernel_by_name(kernel.name())
    }

    /// Launches `kernel` on `stream` with `args`, its C parameters in order.
    ///
    /// # Safety
    /// Every device pointer in `args` must be valid for what the kernel reads
    /// and writes, until the work on `stream` has finished; a cooperative
    /// launch needs a device that supports it ([`Gpu::cooperative_launch`]).
    pub(crate) unsafe fn launch<A: KernelArgs>(
        &self,
        kernel: &KernelFn<A>,
        config: LaunchConfig,
        stream: &CudaStream,
        args: A,
    ) -> Result<()> {
        let k = self.kernel(kernel)?;
        if config.shared_bytes > k.max_dynamic_shared {
            return Err(Error::invalid(format!(
                "{} needs {} bytes of dynamic shared memory per block, this GPU allows it {}",
                k.info.name, config.shared_bytes, k.max_dynamic_shared
            )));
        }
        self.bind()?;
        let block = (k.block, 1, 1);
        let cu_stream = stream.cu_stream();
        args.with_pointers(|pointers| {
            // SAFETY: `pointers` holds one pointer per parameter of the kernel's
            // declaration, which a test holds to its C prototype; the device
            // pointers are the caller's to vouch for.
            unsafe {
                if config.cooperative {
                    let grid = (config.blocks.clamp(1, k.full_grid), 1, 1);
                    let shared = config.shared_bytes;
                    cu::launch_cooperative_kernel(k.func, grid, block, shared, cu_stream, pointers)
                } else {
                    let grid = (config.blocks.max(1), 1, 1);
                    let shared = config.shared_bytes;
                    cu::launch_kernel(k.func, grid, block, shared, cu_stream, pointers)
                }
            }
        })
        .map_err(|e| Error::cuda(format!("launching {}", k.info.name), e))
    }

    /// Most dynamic shared memory one block may use once a kernel opts in
    /// (`CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN`).
    pub fn max_shared_per_block_optin(&self) -> Result<usize> {
        self.ctx
            .attribute(CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN)
            .map(|v| v.max(0) as usize)
            .map_err(|e| Error::cuda("reading the shared memory limit", e))
    }
}

impl Kernel {
    /// Reads the kernel's attributes; `shared_optin`: the device's opt-in
    /// shared memory per block, for a kernel to be allowed all of it that its
    /// static shared memory leaves (dynamic shared memory beyond 48 KB).
    fn resolve(
        name: &'static str,
        family: &'static str,
        image: Image,
        func: CUfunction,
        sm_count: u32,
        shared_optin: Option<i32>,
    ) -> Result<Kernel> {
        // SAFETY: func was just resolved from the loaded module.
        let attr = |a| {
            unsafe { cu::function::get_function_attribute(func, a) }
                .map_err(|e| Error::cuda(format!("querying {name}"), e))
        };
        let info = KernelInfo {
            name,
            family,
            image,
            registers: attr(CUfunction_attribute::CU_FUNC_ATTRIBUTE_NUM_REGS)?,
            max_threads_per_block: attr(
                CUfunction_attribute::CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK,
            )?,
            local_bytes: attr(CUfunction_attribute::CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES)?,
            static_shared_bytes: attr(CUfunction_attribute::CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES)?,
            binary_version: attr(CUfunction_attribute::CU_FUNC_ATTRIBUTE_BINARY_VERSION)?,
            ptx_version: attr(CUfunction_attribute::CU_FUNC_ATTRIBUTE_PTX_VERSION)?,
        };
        // MAX_THREADS_PER_BLOCK is the __launch_bounds__ value, so the block shape
        // is defined once, in the kernel source.
        let block = info.max_threads_per_block as u32;
        // SAFETY: as above.
        let per_sm =
            unsafe { cu::occupancy::max_active_block_per_multiprocessor(func, block as i32, 0) }
                .map_err(|e| Error::cuda(format!("occupancy of {name}"), e))?;
        // Set once here, never at launch: the CUfunction is shared by every
        // thread, and a per-launch setting would race with another's launch.
        // Only where the device allows more than the default 48 KB per block
        // (Volta and newer): older GPUs have nothing to opt in to.
        if let Some(optin) = shared_optin.filter(|&o| o > 48 * 1024) {
            let max = optin - info.static_shared_bytes;
            // SAFETY: as above.
            unsafe {
                cu::function::set_function_attribute(
                    func,
                    CUfunction_attribute::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                    max,
                )
            }
            .map_err(|e| Error::cuda(format!("allowing {name} {max} bytes of shared memory"), e))?;
        }
        let max_dynamic_shared =
            attr(CUfunction_attribute::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES)?.max(0)
                as u32;
        Ok(Kernel {
            func,
            info,
            block,
            full_grid: per_sm.max(1) as u32 * sm_count,
            max_dynamic_shared,
        })
    }

    /// Grid for `items` independent work items, `items_per_block` per block.
    /// One block per share of work rather than one resident wave: with a grid
    /// of exactly one wave, shares that do not divide evenly leave every block
    /// but some idle for a whole extra round, while many small blocks let the
    /// scheduler fill SMs as they free up. The kernels grid-stride past the cap.
    pub(crate) fn grid_for(&self, items: u64, items_per_block: u64) -> u32 {
        let cap = self.full_grid as u64 * 64;
        items.div_ceil(items_per_block.max(1)).clamp(1, cap) as u32
    }

    /// Blocks of this kernel resident on one SM at once when each is given
    /// `dynamic_shared` bytes of shared memory (at least 1).
    pub(crate) fn resident_blocks(&self, dynamic_shared: u32) -> Result<u32> {
        // SAFETY: func is a loaded kernel of a live module (self borrows the
        // Gpu that owns it).
        let per_sm = unsafe {
            cu::occupancy::max_active_block_per_multiprocessor(
                self.func,
                self.block as i32,
                dynamic_shared as usize,
            )
        }
        .map_err(|e| Error::cuda(format!("occupancy of {}", self.info.name), e))?;
        Ok(per_sm.max(1) as u32)
    }
}

/// The bytes of `len` values of `T`; a count whose size does not fit in
/// memory is an error naming `name`.
fn array_bytes<T>(name: &str, len: usize) -> Result<usize> {
    len.checked_mul(std::mem::size_of::<T>())
        .filter(|&b| b <= isize::MAX as usize)
        .ok_or_else(|| {
            Error::invalid(format!(
                "{name}: {len} values exceed the largest possible array"
            ))
        })
}

impl Gpu {
    /// [`Gpu::check_device_buffer`] for `len` values of `T`; a count whose
    /// size does not fit in memory is an error.
    pub fn check_device_array<T>(&self, name: &str, ptr: u64, len: usize) -> Result<()> {
        self.check_device_buffer(name, ptr, array_bytes::<T>(name, len)?)
    }

    /// Checks that the `bytes` bytes at device address `ptr` lie inside one
    /// device (or managed) allocation of this GPU, so that a wrong pointer is an
    /// error before launch rather than a fault that poisons the context.
    /// `name` names the argument in the message. Zero bytes need no allocation.
    pub fn check_device_buffer(&self, name: &str, ptr: u64, bytes: usize) -> Result<()> {
        if bytes == 0 {
            return Ok(());
        }
        self.bytes_from(name, ptr, bytes).map(drop)
    }

    /// [`Gpu::check_device_array`] for at least `len` values, and how many
    /// values of `T` lie from `ptr` to the end of its allocation: what a
    /// kernel may read there whatever the device data says. One query of
    /// the driver.
    pub fn readable_values<T>(&self, name: &str, ptr: u64, len: usize) -> Result<usize> {
        let left = self.bytes_from(name, ptr, array_bytes::<T>(name, len)?)?;
        Ok(usize::try_from(left).unwrap_or(usize::MAX) / std::mem::size_of::<T>())
    }

    /// The bytes from `ptr` to the end of its allocation, once the first
    /// `bytes` of them are known to lie inside it.
    fn bytes_from(&self, name: &str, ptr: u64, bytes: usize) -> Result<u64> {
        let (start, size) = self.allocation_of(name, ptr)?;
        let end = ptr.checked_add(bytes as u64);
        if ptr < start || end.map_or(true, |end| end > start + size) {
            return Err(Error::invalid(format!(
                "{name} needs {bytes} bytes at {ptr:#x}, beyond its allocation \
                 ({size} bytes from {start:#x})"
            )));
        }
        Ok(start + size - ptr)
    }

    /// The (start, bytes) of the device (or managed) allocation of this GPU
    /// that holds `ptr`, from the driver's record; an error naming `name`
    /// for NULL, host or unknown memory, or another GPU's.
    fn allocation_of(&self, name: &str, ptr: u64) -> Result<(u64, u64)> {
        use cudarc::driver::sys::{self, CUmemorytype, CUpointer_attribute::*, CUresult};
        if ptr == 0 {
            return Err(Error::invalid(format!("{name} is a null device pointer")));
        }
        self.bind()?;
        let (mut memory_type, mut ordinal, mut start, mut size) = (0u32, -1i32, 0u64, 0usize);
        let mut attributes = [
            CU_POINTER_ATTRIBUTE_MEMORY_TYPE,
            CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL,
            CU_POINTER_ATTRIBUTE_RANGE_START_ADDR,
            CU_POINTER_ATTRIBUTE_RANGE_SIZE,
        ];
        let mut data = [
            &mut memory_type as *mut u32 as *mut c_void,
            &mut ordinal as *mut i32 as *mut c_void,
            &mut start as *mut u64 as *mut c_void,
            &mut size as *mut usize as *mut c_void,
        ];
        // SAFETY: four attributes, each with a pointer to storage of its size.
        // An address the driver does not know leaves the defaults (type 0).
        let status = unsafe {
            sys::cuPointerGetAttributes(4, attributes.as_mut_ptr(), data.as_mut_ptr(), ptr)
        };
        if status != CUresult::CUDA_SUCCESS {
            return Err(Error::cuda(
                format!("inspecting the device pointer {name}"),
                DriverError(status),
            ));
        }
        let device = CUmemorytype::CU_MEMORYTYPE_DEVICE as u32;
        let unified = CUmemorytype::CU_MEMORYTYPE_UNIFIED as u32;
        if memory_type != device && memory_type != unified {
            return Err(Error::invalid(format!(
                "{name} ({ptr:#x}) is not device memory known to the CUDA driver"
            )));
        }
        if ordinal >= 0 && ordinal as usize != self.ordinal() {
            return Err(Error::invalid(format!(
                "{name} lives on GPU {ordinal}, but this context runs on GPU {}",
                self.ordinal()
            )));
        }
        Ok((start, size as u64))
    }
}
