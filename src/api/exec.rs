//! The executor: the one place that decides where an operation runs.
//!
//! Every host-memory call of the safe API is an [`Operation`]: a small struct
//! holding the call's arguments, which knows how to validate them, how to run
//! on the CPU backend, how to run in one piece on one GPU and, when its work
//! splits into independent items (series, members, arrays), how to run
//! through the chunked pipeline ([`super::multi`]). [`Kernpack::run`] and
//! [`MultiGpu::run`] validate once and pick the path by one rule:
//!
//! - a handle without a GPU runs the CPU backend;
//! - a handle over a set of GPUs ([`Kernpack::with_gpus`], a [`MultiGpu`])
//!   sends every operation that splits through the pipeline over the set,
//!   and runs the others in one piece on the set's first GPU;
//! - a one-GPU handle sends an operation that splits through the pipeline
//!   on that GPU when the call's device memory in one piece would exceed
//!   [`PIPELINE_BYTES`] and none of its items is larger than that (so the
//!   pipeline can always take a chunk of one item); otherwise it runs in one
//!   piece. Pinned, double-buffered copies beat one pageable copy each way
//!   for such sizes (a 3.2 GB Lorenz 96 ensemble on an H100 host: 1.3-2.0 s
//!   instead of 3.7 s), and device memory stays bounded.
//!
//! Results are the same either way: the pipeline is bitwise equal to a
//! one-piece run on the same GPU model (see [`super::multi`]).
use std::sync::Arc;

use super::multi::{GpuProfile, MultiGpu, DEFAULT_CHUNK_BYTES};
use super::Kernpack;
use crate::error::Result;
use crate::gpu::Gpu;

/// Device bytes above which a one-GPU handle pipelines an operation that splits.
pub const PIPELINE_BYTES: usize = DEFAULT_CHUNK_BYTES;

/// What the CPU backend takes from a handle: its threads and progress callback.
#[derive(Clone, Copy)]
pub struct CpuRun<'a> {
    /// At least 1.
    pub threads: usize,
    pub progress: Option<&'a (dyn Fn(u64, u64) + Sync)>,
}

/// The CPU backend on one thread, for calls with nothing to launch (an empty
/// input), which a GPU path answers as the CPU does.
pub(crate) const NOTHING_TO_LAUNCH: CpuRun<'static> = CpuRun {
    threads: 1,
    progress: None,
};

/// How an operation's work splits into items for the chunked pipeline.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Split {
    /// Device memory of the whole call in one piece: inputs, outputs, scratch.
    pub device_bytes: usize,
    /// Device memory of the largest single item (series, member, array).
    pub largest_item_bytes: usize,
}

/// One call of the safe API, runnable on any backend (see the module docs).
pub trait Operation: Sized {
    type Output;

    /// The one validation of the call: shapes, values, and the host memory
    /// of the result. Runs before any work on any backend; nothing is
    /// written on failure.
    fn validate(&self) -> Result<()>;

    /// The CPU backend, after [`Operation::validate`].
    fn on_cpu(self, cpu: &CpuRun<'_>) -> Result<Self::Output>;

    /// One GPU in one piece, host memory in and out, after [`Operation::validate`].
    fn on_gpu(self, gpu: &Arc<Gpu>) -> Result<Self::Output>;

    /// How the work splits for the pipeline; None (the default): it does not.
    fn split(&self) -> Option<Split> {
        None
    }

    /// The chunked pipeline over `gpus`, after [`Operation::validate`], with
    /// each GPU's plan and times. An operation that does not split runs in
    /// one piece on the first GPU (and has no profile).
    fn on_pipeline(self, gpus: &MultiGpu) -> Result<(Self::Output, Vec<GpuProfile>)> {
        Ok((self.on_gpu(&gpus.gpus()[0])?, Vec::new()))
    }
}

impl Kernpack {
    /// Runs `op` where this handle runs work (the rule in [`crate::api::exec`]).
    pub fn run<O: Operation>(&self, op: O) -> Result<O::Output> {
        match (&self.spread, &self.gpu) {
            (Some(gpus), _) => gpus.run(op),
            (None, Some(gpu)) => {
                op.validate()?;
                match op.split() {
                    Some(split)
                        if split.device_bytes > PIPELINE_BYTES
                            && split.largest_item_bytes <= PIPELINE_BYTES =>
                    {
                        let one = MultiGpu::of(vec![gpu.clone()]);
                        op.on_pipeline(&one).map(|(output, _)| output)
                    }
                    _ => op.on_gpu(gpu),
                }
            }
            (None, None) => {
                op.validate()?;
                op.on_cpu(&CpuRun {
                    threads: self.cpu_threads(),
                    progress: self.progress_fn(),
                })
            }
        }
    }
}

impl MultiGpu {
    /// Runs `op` over these GPUs: through the pipeline when it splits, else
    /// in one piece on the first GPU.
    pub fn run<O: Operation>(&self, op: O) -> Result<O::Output> {
        self.run_profiled(op).map(|(output, _)| output)
    }

    /// As [`MultiGpu::run`], with each GPU's plan and times (none for an
    /// operation that does not split).
    pub fn run_profiled<O: Operation>(&self, op: O) -> Result<(O::Output, Vec<GpuProfile>)> {
        op.validate()?;
        op.on_pipeline(self)
    }
}
