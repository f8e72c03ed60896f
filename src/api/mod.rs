//! The safe Rust API: a `Kernpack` handle that runs each kernel family on the
//! GPU or, without one, on the CPU reference.
pub mod fg;
pub mod lombscargle;
pub mod lorenz;
pub mod reduce;
pub mod reduce_batched;
pub mod stencil;
pub mod streams;

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
    /// The multi-threaded CPU reference.
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
    progress: Option<Progress>,
}

impl std::fmt::Debug for Kernpack {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Kernpack").field("gpu", &self.gpu).finish()
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
        Ok(Kernpack {
            gpu,
            progress: None,
        })
    }

    /// A handle on a given GPU ordinal.
    pub fn with_gpu(ordinal: usize) -> Result<Self> {
        Ok(Kernpack {
            gpu: Some(Gpu::get(ordinal)?),
            progress: None,
        })
    }

    /// Reports progress of CPU-backend runs (the GPU ones are short).
    pub fn with_progress(mut self, progress: Progress) -> Self {
        self.progress = Some(progress);
        self
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
