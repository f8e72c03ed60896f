//! The safe Rust API: a `Kernpack` handle that runs each operation on the
//! GPU or, without one, on the CPU backend. Each family's module holds its
//! operations (an [`exec::Operation`] each: validation, the CPU path, the
//! one-GPU path, the split for the pipeline) and the one-line facade
//! methods over them; [`exec`] decides where they run.

/// Declares facade methods of [`Kernpack`] or [`multi::MultiGpu`] from a
/// table, one line per method: each, generic over `T: Float`, builds its
/// operation from its arguments and runs it ([`Kernpack::run`],
/// [`multi::MultiGpu::run`]). `fn name / name_profiled(..)` also declares
/// the variant that returns each GPU's plan and times
/// ([`multi::MultiGpu::run_profiled`]).
macro_rules! facade {
    () => {};
    (
        $(#[$attr:meta])*
        fn $name:ident / $profiled:ident($($arg:ident: $ty:ty),* $(,)?) -> $out:ty = $op:expr;
        $($rest:tt)*
    ) => {
        facade! { $(#[$attr])* fn $name($($arg: $ty),*) -> $out = $op; }
        #[doc = concat!(
            "As [`MultiGpu::", stringify!($name), "`], with each GPU's plan and times."
        )]
        pub fn $profiled<T: $crate::float::Float>(
            &self,
            $($arg: $ty),*
        ) -> $crate::error::Result<($out, Vec<$crate::api::multi::GpuProfile>)> {
            self.run_profiled($op)
        }
        facade! { $($rest)* }
    };
    (
        $(#[$attr:meta])*
        fn $name:ident($($arg:ident: $ty:ty),* $(,)?) -> $out:ty = $op:expr;
        $($rest:tt)*
    ) => {
        $(#[$attr])*
        pub fn $name<T: $crate::float::Float>(
            &self,
            $($arg: $ty),*
        ) -> $crate::error::Result<$out> {
            self.run($op)
        }
        facade! { $($rest)* }
    };
}

pub mod bls;
pub mod correlate;
pub mod exec;
pub mod fg;
pub mod lombscargle;
pub mod lorenz;
pub mod lorenz63;
pub mod multi;
pub mod phasefold;
pub mod rank;
pub mod reduce;
pub mod reduce_batched;
pub mod stencil;
pub mod streams;
pub mod uniform;

pub use crate::gpu::device;

use std::str::FromStr;
use std::sync::Arc;

use crate::error::{Error, Result};
use crate::gpu::Gpu;

/// Where work runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Backend {
    /// The GPU when one is usable, else the CPU.
    #[default]
    Auto,
    /// GPU 0; creating the handle fails without one.
    Gpu,
    /// The fast CPU backend ([`crate::cpu`]), on [`Kernpack::cpu_threads`] threads.
    Cpu,
}

impl FromStr for Backend {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self> {
        match s.to_ascii_lowercase().as_str() {
            "auto" => Ok(Backend::Auto),
            "gpu" | "cuda" => Ok(Backend::Gpu),
            "cpu" => Ok(Backend::Cpu),
            other => Err(Error::invalid(format!(
                "unknown backend {other:?}: expected auto, gpu or cpu"
            ))),
        }
    }
}

/// Progress callback for long CPU runs: `(done, total)` work items.
pub type Progress = Arc<dyn Fn(u64, u64) + Send + Sync>;

/// The entry point of the safe API. Cheap to clone; the loaded GPU is shared.
#[derive(Clone)]
pub struct Kernpack {
    gpu: Option<Arc<Gpu>>,
    /// The GPUs the batched calls on host slices split their work over
    /// ([`Kernpack::with_gpus`]); `gpu` is the first of them.
    spread: Option<multi::MultiGpu>,
    progress: Option<Progress>,
    /// 0: the process-wide setting ([`crate::cpu::threads`]).
    cpu_threads: usize,
}

impl std::fmt::Debug for Kernpack {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Kernpack")
            .field("gpu", &self.gpu)
            .field("spread", &self.spread)
            .finish()
    }
}

impl Kernpack {
    /// `Backend::Auto` falls back to the CPU only when there is no driver or
    /// no device; any other GPU failure is returned.
    pub fn new(backend: Backend) -> Result<Self> {
        let gpu = match backend {
            Backend::Cpu => None,
            Backend::Gpu => Some(Gpu::get(0)?),
            Backend::Auto => match Gpu::get(0) {
                Ok(gpu) => Some(gpu),
                Err(Error::NoGpu(_)) => None,
                Err(other) => return Err(other),
            },
        };
        Ok(Kernpack::on(gpu, None))
    }

    /// A handle on `gpu`, its batched host calls spread over `spread`.
    fn on(gpu: Option<Arc<Gpu>>, spread: Option<multi::MultiGpu>) -> Self {
        Kernpack {
            gpu,
            spread,
            progress: None,
            cpu_threads: 0,
        }
    }

    /// A handle on GPU `ordinal` (see [`crate::devices`] for what is present).
    /// Handles on different GPUs are independent and may run at the same time
    /// from different threads. Without a driver or a device this is
    /// [`Error::NoGpu`]; an ordinal past the devices present is
    /// [`Error::InvalidInput`] naming their count.
    pub fn with_gpu(ordinal: usize) -> Result<Self> {
        Ok(Kernpack::from(Gpu::get(ordinal)?))
    }

    /// A handle over the GPUs of `ordinals` ([`multi::MultiGpu::new`]): the
    /// calls on one series, image or device buffer run on the first; the
    /// batched calls on host slices ([`Kernpack::lombscargle_batch`],
    /// [`Kernpack::lombscargle_batch_peaks`], [`Kernpack::lorenz96`],
    /// [`Kernpack::lorenz05`], [`Kernpack::normalize_batched`]) split their
    /// work over all of them, in chunks that fit each GPU's memory, with
    /// results bitwise equal to a one-GPU run. One ordinal gives that
    /// chunking on one GPU: batches larger than its memory.
    pub fn with_gpus(ordinals: &[usize]) -> Result<Self> {
        Ok(Kernpack::from(multi::MultiGpu::new(ordinals)?))
    }

    /// The GPUs the batched host calls split their work over, when this
    /// handle was made by [`Kernpack::with_gpus`] (or from a `MultiGpu`).
    pub fn spread(&self) -> Option<&multi::MultiGpu> {
        self.spread.as_ref()
    }

    /// Reports progress of CPU-backend runs (the GPU ones are short).
    pub fn with_progress(mut self, progress: Progress) -> Self {
        self.progress = Some(progress);
        self
    }

    /// Runs this handle's CPU work on `threads` threads (0: the process-wide
    /// setting, [`crate::cpu::set_threads`]). More than
    /// 4096 is an [`Error::InvalidInput`].
    pub fn with_cpu_threads(mut self, threads: usize) -> Result<Self> {
        crate::cpu::threads::check_threads(threads)?;
        self.cpu_threads = threads;
        Ok(self)
    }

    /// The threads this handle's CPU work runs on (at least 1).
    pub fn cpu_threads(&self) -> usize {
        match self.cpu_threads {
            0 => crate::cpu::threads(),
            n => n,
        }
    }

    /// The progress callback, as the CPU paths take it.
    pub(crate) fn progress_fn(&self) -> Option<&(dyn Fn(u64, u64) + Sync)> {
        self.progress
            .as_deref()
            .map(|p| p as &(dyn Fn(u64, u64) + Sync))
    }

    pub fn gpu(&self) -> Option<&Arc<Gpu>> {
        self.gpu.as_ref()
    }

    /// "gpu" or "cpu": what this handle runs on.
    pub fn backend_name(&self) -> &'static str {
        if self.gpu.is_some() {
            "gpu"
        } else {
            "cpu"
        }
    }
}

impl From<Arc<Gpu>> for Kernpack {
    /// A handle on `gpu` (as [`Kernpack::with_gpu`] of its ordinal).
    fn from(gpu: Arc<Gpu>) -> Self {
        Kernpack::on(Some(gpu), None)
    }
}

impl From<multi::MultiGpu> for Kernpack {
    /// A handle whose batched host calls run on `multi` (with its options),
    /// the rest on its first GPU; see [`Kernpack::with_gpus`].
    fn from(multi: multi::MultiGpu) -> Self {
        Kernpack::on(Some(multi.gpus()[0].clone()), Some(multi))
    }
}

/// The largest array kernpack accepts, in bytes: 2^56, the largest user
/// address space of current 64-bit CPUs (x86-64 with 5-level paging), so no
/// real buffer is refused, while a count that no memory can back (a wrapped
/// or garbage size) is an error before any slice, allocation or launch.
pub const MAX_ARRAY_BYTES: usize = 1 << 56;

/// The host can allocate `len` values of `T`: probed with a fallible
/// reservation (freed at once), so that a size this host cannot back is an
/// error before any work, not an abort when the buffer is allocated. The
/// API probes its results so after a call's checks; callers may probe their
/// own inputs the same way before building them.
///
/// # Errors
/// [`Error::InvalidInput`] past [`MAX_ARRAY_BYTES`], [`Error::OutOfMemory`]
/// when the host refuses the reservation. `what` names the buffer in the
/// message.
pub fn check_host_room<T>(what: &str, len: usize) -> Result<()> {
    check_array_size::<T>(what, len)?;
    let mut probe: Vec<T> = Vec::new();
    probe.try_reserve_exact(len).map_err(|_| {
        let bytes = len * std::mem::size_of::<T>();
        let size = if std::mem::size_of::<T>() == 1 {
            format!("{bytes} bytes")
        } else {
            format!("{len} values ({bytes} bytes)")
        };
        Error::OutOfMemory(format!("{what}: {size} cannot be allocated on this host"))
    })
}

/// `len` values of `T` fit in [`MAX_ARRAY_BYTES`].
pub(crate) fn check_array_size<T>(name: &str, len: usize) -> Result<()> {
    match len.checked_mul(std::mem::size_of::<T>().max(1)) {
        Some(bytes) if bytes <= MAX_ARRAY_BYTES => Ok(()),
        _ => Err(Error::invalid(format!(
            "{name}: {len} values of {} bytes exceed the largest possible array ({MAX_ARRAY_BYTES} bytes)",
            std::mem::size_of::<T>()
        ))),
    }
}
