//! Lorenz 96 and Lorenz 2005 ensembles over several GPUs, in chunks of members.
use std::ops::Range;
use std::sync::Arc;

use cudarc::driver::sys::CUdeviceptr;
use cudarc::driver::CudaStream;

use super::plan::{split_even, Arena};
use super::{get, put, ChunkJob, Exec, GpuPlan, GpuProfile, MultiGpu, Regions};
use crate::api::exec::Operation;
use crate::api::lorenz::{
    frame_count, Ensemble, EnsembleDeviceBuffers, EnsembleParams, EnsembleRun, Lorenz05Params,
    Lorenz96Params,
};
use crate::cpu::{copy_parallel, copy_threads};
use crate::error::Result;
use crate::float::Float;
use crate::gpu::device::DeviceOperation;
use crate::gpu::Gpu;

/// A validated ensemble run of model `P`, as the chunks see it.
struct EnsembleJob<'a, P, T> {
    params: P,
    initial: &'a [T],
    /// Sites per member.
    n: usize,
    steps: u64,
    every: u64,
    /// Trajectory frames (0 without one).
    frames: usize,
}

#[derive(Debug, Clone, Copy)]
struct EnsembleLayout {
    initial: usize,
    out: usize,
    trajectory: Option<usize>,
}

impl<P: EnsembleParams, T: Float> ChunkJob for EnsembleJob<'_, P, T> {
    type Layout = EnsembleLayout;
    const WHAT: &'static str = "member";

    fn layout(&self, r: Range<usize>) -> (EnsembleLayout, Regions) {
        let values = r.len() * self.n;
        let mut a = Arena::default();
        let initial = a.push_values::<T>(values);
        let h2d = 0..a.bytes;
        let out = a.push_values::<T>(values);
        let trajectory = (self.every > 0).then(|| a.push_values::<T>(self.frames * values));
        let size = std::mem::size_of::<T>();
        let d2h_end = match trajectory {
            Some(at) => at + self.frames * values * size,
            None => out + values * size,
        };
        let layout = EnsembleLayout {
            initial,
            out,
            trajectory,
        };
        (
            layout,
            Regions {
                total: a.bytes,
                h2d,
                d2h: out..d2h_end,
            },
        )
    }

    fn pack(&self, r: &Range<usize>, lay: &EnsembleLayout, host: &mut [u8]) {
        put(
            host,
            lay.initial,
            &self.initial[r.start * self.n..r.end * self.n],
        );
    }

    unsafe fn launch(
        &self,
        gpu: &Gpu,
        stream: &Arc<CudaStream>,
        base: CUdeviceptr,
        r: &Range<usize>,
        lay: &EnsembleLayout,
    ) -> Result<()> {
        let at = |offset: usize| base + offset as u64;
        let buffers = EnsembleDeviceBuffers {
            initial: at(lay.initial),
            out: at(lay.out),
            trajectory: lay.trajectory.map(at),
        };
        let op = (self.params).on_device::<T>(buffers, r.len(), self.steps, self.every);
        // SAFETY: the caller's arena holds this layout, the initial states
        // copied in; the run was validated on the host.
        unsafe { op.launch(gpu, stream, ()) }
    }

    #[cfg(test)]
    fn emulate(&self, r: &Range<usize>, lay: &EnsembleLayout, arena: &mut [u8]) {
        // As the CPU backend computes (in T), which the tests compare with.
        let values = r.len() * self.n;
        let z = get::<T>(arena, lay.initial, values).to_vec();
        let one_thread = crate::api::exec::NOTHING_TO_LAUNCH;
        let run = self.params.on_cpu(&z, self.steps, self.every, &one_thread);
        put(arena, lay.out, &run.final_state);
        if let (Some(at), Some(traj)) = (lay.trajectory, run.trajectory) {
            put(arena, at, &traj);
        }
    }
}

/// One GPU's share of the outputs: its members' final states, and its
/// members' part of every trajectory frame.
struct EnsembleOut<'o, T> {
    first: usize,
    final_state: &'o mut [T],
    frames: Vec<&'o mut [T]>,
}

impl MultiGpu {
    /// Lorenz 96 on every GPU of this handle, members split evenly: bitwise
    /// what [`Kernpack::lorenz96`](crate::Kernpack::lorenz96) gives on one GPU of the same model.
    pub fn lorenz96<T: Float>(
        &self,
        p: &Lorenz96Params,
        initial: &[T],
        steps: u64,
        every: u64,
    ) -> Result<Ensemble<T>> {
        self.run(EnsembleRun {
            params: p,
            initial,
            steps,
            every,
        })
    }

    /// As [`MultiGpu::lorenz96`], with each GPU's plan and times.
    pub fn lorenz96_profiled<T: Float>(
        &self,
        p: &Lorenz96Params,
        initial: &[T],
        steps: u64,
        every: u64,
    ) -> Result<(Ensemble<T>, Vec<GpuProfile>)> {
        self.ensemble_profiled(p, initial, steps, every)
    }

    /// Lorenz 2005 Model II / III on every GPU of this handle; as
    /// [`MultiGpu::lorenz96`] against [`Kernpack::lorenz05`](crate::Kernpack::lorenz05).
    pub fn lorenz05<T: Float>(
        &self,
        p: &Lorenz05Params,
        initial: &[T],
        steps: u64,
        every: u64,
    ) -> Result<Ensemble<T>> {
        self.run(EnsembleRun {
            params: p,
            initial,
            steps,
            every,
        })
    }

    /// As [`MultiGpu::lorenz05`], with each GPU's plan and times.
    pub fn lorenz05_profiled<T: Float>(
        &self,
        p: &Lorenz05Params,
        initial: &[T],
        steps: u64,
        every: u64,
    ) -> Result<(Ensemble<T>, Vec<GpuProfile>)> {
        self.ensemble_profiled(p, initial, steps, every)
    }

    fn ensemble_profiled<P: EnsembleParams, T: Float>(
        &self,
        params: &P,
        initial: &[T],
        steps: u64,
        every: u64,
    ) -> Result<(Ensemble<T>, Vec<GpuProfile>)> {
        #[rustfmt::skip]
        EnsembleRun { params, initial, steps, every }.validate()?;
        ensemble(&Exec::Gpus(self), *params, initial, steps, every)
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
        let p = Lorenz96Params {
            n,
            ..Default::default()
        };
        let job = EnsembleJob::<_, T> {
            params: p,
            initial: &[],
            n,
            steps,
            every,
            frames: frame_count(steps, every),
        };
        Exec::Gpus(self).plan(&job, split_even(members, self.len()))
    }
}

/// The pipeline's ensemble run, after validation.
pub(crate) fn ensemble<P: EnsembleParams, T: Float>(
    exec: &Exec<'_>,
    params: P,
    initial: &[T],
    steps: u64,
    every: u64,
) -> Result<(Ensemble<T>, Vec<GpuProfile>)> {
    params.check_kernel()?; // an error before any GPU work
    let n = params.sites();
    let (members, frames) = (initial.len() / n, frame_count(steps, every));
    let traj_len = frames * initial.len();
    let job = EnsembleJob {
        params,
        initial,
        n,
        steps,
        every,
        frames,
    };
    let plans = exec.plan(&job, split_even(members, exec.parts()))?;

    let mut final_state = vec![T::default(); initial.len()];
    let mut trajectory = vec![T::default(); traj_len];
    // Per GPU: its slice of the final states and of every frame (ranges
    // are contiguous and in order, empty ones left out).
    let mut outs: Vec<EnsembleOut<'_, T>> = Vec::with_capacity(plans.len());
    let mut rest = final_state.as_mut_slice();
    for plan in &plans {
        let (mine, tail) = rest.split_at_mut(plan.items.len() * n);
        rest = tail;
        outs.push(EnsembleOut {
            first: plan.items.start,
            final_state: mine,
            frames: Vec::with_capacity(frames),
        });
    }
    if every > 0 {
        for frame in trajectory.chunks_exact_mut(members * n) {
            let mut rest = frame;
            for (plan, out) in plans.iter().zip(outs.iter_mut()) {
                let (mine, tail) = rest.split_at_mut(plan.items.len() * n);
                rest = tail;
                out.frames.push(mine);
            }
        }
    }
    let profiles = exec.run(&job, &plans, outs, |out, r, lay: &EnsembleLayout, host| {
        let values = r.len() * n;
        let local = (r.start - out.first) * n;
        let threads = copy_threads();
        let final_state = &mut out.final_state[local..local + values];
        copy_parallel(threads, final_state, get::<T>(host, lay.out, values));
        if let Some(at) = lay.trajectory {
            let chunk = get::<T>(host, at, frames * values);
            for (f, frame) in out.frames.iter_mut().enumerate() {
                let src = &chunk[f * values..(f + 1) * values];
                copy_parallel(threads, &mut frame[local..local + values], src);
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
