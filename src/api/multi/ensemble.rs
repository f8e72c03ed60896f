//! Lorenz 96 and Lorenz 2005 ensembles over several GPUs, in chunks of members.
use std::ops::Range;
use std::sync::Arc;

use cudarc::driver::sys::CUdeviceptr;
use cudarc::driver::CudaStream;

use super::plan::{split_even, Arena};
use super::{get, per_gpu, put, ChunkJob, Exec, GpuPlan, GpuProfile, MultiGpu, Regions};
use crate::api::lorenz::{
    frame_count, Ensemble, EnsembleDeviceBuffers, EnsembleParams, EnsembleRun, Lorenz05Params,
    Lorenz96Params,
};
use crate::cpu::{copy_parallel, copy_threads};
use crate::error::Result;
use crate::float::Float;
use crate::gpu::device::DeviceOperation;
use crate::gpu::Gpu;

/// A validated run, as the chunks see it: chunks of members.
impl<P: EnsembleParams, T: Float> ChunkJob for EnsembleRun<'_, P, T> {
    type Layout = EnsembleDeviceBuffers;
    const WHAT: &'static str = "member";

    fn layout(&self, r: Range<usize>, base: CUdeviceptr) -> (EnsembleDeviceBuffers, Regions) {
        let values = r.len() * self.params.values_per_member();
        let frames = frame_count(self.steps, self.every);
        let mut a = Arena::at(base);
        let initial = a.take::<T>(values);
        let h2d = 0..a.bytes;
        let out = a.take::<T>(values);
        let trajectory = (self.every > 0).then(|| a.take::<T>(frames * values));
        let d2h = a.offset(out)..a.end;
        let layout = EnsembleDeviceBuffers {
            initial,
            out,
            trajectory,
        };
        let total = a.bytes;
        (layout, Regions { total, h2d, d2h })
    }

    fn pack(&self, r: &Range<usize>, lay: &EnsembleDeviceBuffers, host: &mut [u8]) {
        let n = self.params.values_per_member();
        put(host, lay.initial, &self.initial[r.start * n..r.end * n]);
    }

    unsafe fn launch(
        &self,
        gpu: &Gpu,
        stream: &Arc<CudaStream>,
        r: &Range<usize>,
        lay: &EnsembleDeviceBuffers,
    ) -> Result<()> {
        let op = (*self.params).on_device::<T>(*lay, (r.start, r.len()), self.steps, self.every);
        // SAFETY: the caller's arena holds this layout, the initial states
        // copied in; the run was validated on the host.
        unsafe { op.launch(gpu, stream, ()) }
    }

    #[cfg(test)]
    fn emulate(&self, r: &Range<usize>, lay: &EnsembleDeviceBuffers, arena: &mut [u8]) {
        // As the CPU backend computes (in T), which the tests compare with.
        let values = r.len() * self.params.values_per_member();
        let z = get::<T>(arena, lay.initial, values).to_vec();
        let one_thread = crate::api::exec::NOTHING_TO_LAUNCH;
        let run = self
            .params
            .on_cpu((r.start, &z), self.steps, self.every, &one_thread);
        put(arena, lay.out, &run.final_state);
        if let (Some(at), Some(traj)) = (lay.trajectory, run.trajectory) {
            put(arena, at, &traj);
        }
    }
}

impl MultiGpu {
    facade! {
        /// Lorenz 96 on every GPU of this handle, members split evenly: bitwise
        /// what [`Kernpack::lorenz96`](crate::Kernpack::lorenz96) gives on one
        /// GPU of the same model.
        fn lorenz96 / lorenz96_profiled(p: &Lorenz96Params, initial: &[T], steps: u64, every: u64)
            -> Ensemble<T> = EnsembleRun { params: p, initial, steps, every };

        /// Lorenz 2005 Model II / III on every GPU of this handle; as
        /// [`MultiGpu::lorenz96`] against [`Kernpack::lorenz05`](crate::Kernpack::lorenz05).
        fn lorenz05 / lorenz05_profiled(p: &Lorenz05Params, initial: &[T], steps: u64, every: u64)
            -> Ensemble<T> = EnsembleRun { params: p, initial, steps, every };
    }

    /// The plan an ensemble run of `members` members of `n` sites of `T`
    /// would follow now.
    pub fn plan_ensemble<T: Float>(
        &self,
        members: usize,
        n: usize,
        steps: u64,
        every: u64,
    ) -> Result<Vec<GpuPlan>> {
        let params = &Lorenz96Params {
            n,
            ..Default::default()
        };
        #[rustfmt::skip]
        let job = EnsembleRun::<_, T> { params, initial: &[], steps, every };
        Exec::Gpus(self).plan(&job, split_even(members, self.len()))
    }
}

/// The pipeline's ensemble run, after validation.
pub(crate) fn ensemble<P: EnsembleParams, T: Float>(
    exec: &Exec<'_>,
    job: EnsembleRun<'_, P, T>,
) -> Result<(Ensemble<T>, Vec<GpuProfile>)> {
    job.params.check_kernel()?; // an error before any GPU work
    let (n, every) = (job.params.values_per_member(), job.every);
    let (members, frames) = (job.initial.len() / n, frame_count(job.steps, every));
    let plans = exec.plan(&job, split_even(members, exec.parts()))?;

    let mut final_state = vec![T::default(); job.initial.len()];
    let mut trajectory = vec![T::default(); frames * job.initial.len()];
    // Per GPU: its slice of the final states and of every frame.
    let values = |items: &Range<usize>| items.len() * n;
    let mut outs: Vec<(&mut [T], Vec<&mut [T]>)> = per_gpu(&mut final_state, &plans, values)
        .into_iter()
        .map(|mine| (mine, Vec::with_capacity(frames)))
        .collect();
    for frame in trajectory.chunks_exact_mut(members * n) {
        for (out, mine) in outs.iter_mut().zip(per_gpu(frame, &plans, values)) {
            out.1.push(mine);
        }
    }
    let profiles = exec.run(&job, &plans, outs, |out, _, local, lay, host| {
        let (values, at) = (local.len() * n, local.start * n);
        let threads = copy_threads();
        let final_state = &mut out.0[at..at + values];
        copy_parallel(threads, final_state, get::<T>(host, lay.out, values));
        if let Some(traj) = lay.trajectory {
            let chunk = get::<T>(host, traj, frames * values);
            for (frame, src) in out.1.iter_mut().zip(chunk.chunks_exact(values)) {
                copy_parallel(threads, &mut frame[at..at + values], src);
            }
        }
        Ok(())
    })?;
    Ok((
        Ensemble {
            members,
            n,
            final_state,
            trajectory: (every > 0).then_some(trajectory),
            every,
        },
        profiles,
    ))
}
