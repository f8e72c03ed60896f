//! Rank filters (median, percentile, rank) over a footprint of an N-D array,
//! with the semantics of `scipy.ndimage.median_filter`, `rank_filter` and
//! `percentile_filter` (see [`crate::params::rank`]), for integers of 8 to
//! 64 bits, f32 and f64.
//!
//! One operation, [`RankFilter`]. The GPU picks a kernel by the window: a
//! sorting network in registers up to 81 points (25 for 8-byte values), a
//! sliding histogram for larger boxes of 8-bit values, a radix selection
//! otherwise; the CPU backend selects each output's rank in linear time.
use std::sync::Arc;

pub use crate::gpu::rank::RankFilterOnDevice;
pub use crate::params::rank::{Footprint, KeyKind, Rank, RankFilterOptions, RankValue};

use super::exec::{CpuRun, Operation};
use super::Kernpack;
use crate::error::Result;
use crate::gpu::rank::validate;
use crate::gpu::Gpu;

impl Kernpack {
    /// The median over a centred box of `size` (one size per axis), reflect
    /// mode: SciPy's `median_filter(input, size)`, into a new array.
    pub fn median_filter<T: RankValue>(
        &self,
        input: &[T],
        shape: &[usize],
        size: &[usize],
    ) -> Result<Vec<T>> {
        self.rank_filter(input, shape, &RankFilterOptions::median(size))
    }

    /// The rank filter of `opts` over the row-major array of `shape`, into a
    /// new array.
    pub fn rank_filter<T: RankValue>(
        &self,
        input: &[T],
        shape: &[usize],
        opts: &RankFilterOptions,
    ) -> Result<Vec<T>> {
        let mut out = vec![T::default(); input.len()];
        self.rank_filter_into(input, &mut out, shape, opts)?;
        Ok(out)
    }

    /// The rank filter of `opts` from `input` into `output` (each the
    /// array's size; nothing is written on error).
    pub fn rank_filter_into<T: RankValue>(
        &self,
        input: &[T],
        output: &mut [T],
        shape: &[usize],
        opts: &RankFilterOptions,
    ) -> Result<()> {
        self.run(RankFilter {
            input,
            output,
            shape,
            opts,
        })
    }
}

/// The operation: a rank filter from `input` into `output`
/// ([`Kernpack::rank_filter_into`]).
#[derive(Debug)]
pub struct RankFilter<'a, T> {
    pub input: &'a [T],
    pub output: &'a mut [T],
    pub shape: &'a [usize],
    pub opts: &'a RankFilterOptions,
}

impl<T: RankValue> Operation for RankFilter<'_, T> {
    type Output = ();

    fn validate(&self) -> Result<()> {
        validate::<T>(self.shape, self.opts, self.input.len(), self.output.len()).map(|_| ())
    }

    fn on_cpu(self, cpu: &CpuRun<'_>) -> Result<()> {
        let rank = validate::<T>(self.shape, self.opts, self.input.len(), self.output.len())?;
        if !self.input.is_empty() {
            crate::cpu::rank::rank_filter(
                self.input,
                self.output,
                self.shape,
                self.opts,
                rank,
                cpu.threads,
                cpu.progress,
            );
        }
        Ok(())
    }

    fn on_gpu(self, gpu: &Arc<Gpu>) -> Result<()> {
        if self.input.is_empty() {
            return Ok(());
        }
        let input = gpu.upload(self.input)?;
        // SAFETY: the kernel writes every value.
        let mut output = unsafe { gpu.uninit::<T>(self.output.len()) }?;
        let call =
            RankFilterOnDevice::buffers(gpu.stream(), &input, &mut output, self.shape, self.opts)?;
        // SAFETY: buffers just allocated on this GPU.
        unsafe { gpu.launch_fresh(call, ()) }?;
        gpu.download_into(&output, self.output)
    }
}
