//! Lorenz 96, Lorenz 2005 and Lorenz 63 ensembles over several GPUs, in
//! chunks of members.
use std::marker::PhantomData;
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
use crate::api::lorenz63::{
    Lorenz63DeviceBuffers, Lorenz63Ensemble, Lorenz63OnDevice, Lorenz63Params, Lorenz63Run,
    PerMember,
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

/// A Lorenz 63 chunk's buffers in its arena: the run's states and the
/// chunk's slice of each per-member parameter.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Lorenz63Layout {
    pub p: Lorenz63Params<CUdeviceptr>,
    pub buffers: Lorenz63DeviceBuffers,
}

/// A validated Lorenz 63 run, as the chunks see it: chunks of members, each
/// with its members' sigma, rho and beta (those given per member) packed
/// beside their initial states.
impl<T: Float> ChunkJob for Lorenz63Run<'_, T> {
    type Layout = Lorenz63Layout;
    const WHAT: &'static str = "member";

    fn layout(&self, r: Range<usize>, base: CUdeviceptr) -> (Lorenz63Layout, Regions) {
        let (members, values) = (r.len(), 3 * r.len());
        let mut a = Arena::at(base);
        let initial = a.take::<T>(values);
        let mut each = |v: PerMember<&[T]>| v.map(|_| a.take::<T>(members));
        let p = Lorenz63Params {
            sigma: each(self.params.sigma),
            rho: each(self.params.rho),
            beta: each(self.params.beta),
            dt: self.params.dt,
        };
        let h2d = 0..a.bytes;
        let out = a.take::<T>(values);
        let saved = (!self.save_at.is_empty()).then(|| a.take::<T>(self.save_at.len() * values));
        let d2h = a.offset(out)..a.end;
        let buffers = Lorenz63DeviceBuffers {
            initial,
            out,
            saved,
        };
        let total = a.bytes;
        (Lorenz63Layout { p, buffers }, Regions { total, h2d, d2h })
    }

    fn pack(&self, r: &Range<usize>, lay: &Lorenz63Layout, host: &mut [u8]) {
        put(
            host,
            lay.buffers.initial,
            &self.initial[3 * r.start..3 * r.end],
        );
        for ((_, given), (_, at)) in self.params.named().into_iter().zip(lay.p.named()) {
            if let (PerMember::Each(values), PerMember::Each(at)) = (given, at) {
                put(host, *at, &values[r.clone()]);
            }
        }
    }

    unsafe fn launch(
        &self,
        gpu: &Gpu,
        stream: &Arc<CudaStream>,
        r: &Range<usize>,
        lay: &Lorenz63Layout,
    ) -> Result<()> {
        let op = Lorenz63OnDevice::<T> {
            p: lay.p,
            buffers: lay.buffers,
            members: r.len(),
            steps: self.steps,
            save_at: self.save_at.to_vec(),
            dtype: PhantomData,
        };
        // SAFETY: the caller's arena holds this layout, the initial states
        // and per-member parameters copied in; the run was validated on the host.
        unsafe { op.launch(gpu, stream, ()) }
    }

    #[cfg(test)]
    fn emulate(&self, r: &Range<usize>, lay: &Lorenz63Layout, arena: &mut [u8]) {
        // The CPU backend on the chunk as packed (its states and its slice
        // of each parameter, read from the arena), as the tests compare with.
        let members = r.len();
        let z = get::<T>(arena, lay.buffers.initial, 3 * members).to_vec();
        let read = |v: PerMember<CUdeviceptr>| v.map(|at| get::<T>(arena, at, members).to_vec());
        let (sigma, rho, beta) = (read(lay.p.sigma), read(lay.p.rho), read(lay.p.beta));
        let p = Lorenz63Params {
            sigma: sigma.as_ref().map(Vec::as_slice),
            rho: rho.as_ref().map(Vec::as_slice),
            beta: beta.as_ref().map(Vec::as_slice),
            dt: lay.p.dt,
        };
        let (final_state, saved) =
            crate::cpu::lorenz63::lorenz63(&p, &z, self.steps, self.save_at, 1, None);
        put(arena, lay.buffers.out, &final_state);
        if let Some(at) = lay.buffers.saved {
            put(arena, at, &saved);
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

        /// Lorenz 63 on every GPU of this handle, members split evenly (each
        /// chunk with its members' per-member sigma, rho, beta): bitwise what
        /// [`Kernpack::lorenz63`](crate::Kernpack::lorenz63) gives on one GPU
        /// of the same model.
        fn lorenz63 / lorenz63_profiled(p: &Lorenz63Params<&[T]>, initial: &[T], steps: u64, save_at: &[u64])
            -> Lorenz63Ensemble<T> = Lorenz63Run { params: *p, initial, steps, save_at };
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
    let shape = MemberShape { members, n, frames };
    let out = |lay: &EnsembleDeviceBuffers| (lay.out, lay.trajectory);
    let (final_state, trajectory, profiles) = by_members::<_, T>(exec, &job, shape, out)?;
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

/// What comes back of a run split by members: `members` states of `n`
/// values, and `frames` frames of all of them (frames x members x n).
#[derive(Debug, Clone, Copy)]
struct MemberShape {
    members: usize,
    n: usize,
    frames: usize,
}

/// Runs `job` with its members split evenly over the GPUs (or stand-ins) of
/// `exec` and gathers the final states and the frames in input order: each
/// chunk's `out(layout)` holds its final states and, with frames, the
/// address of its frames (frames x its members x n; the launch's member
/// count is the frame stride, which the gather undoes). Returns the final
/// states, the frames (empty without any) and each GPU's profile.
fn by_members<J: ChunkJob, T: Float>(
    exec: &Exec<'_>,
    job: &J,
    shape: MemberShape,
    out: impl Fn(&J::Layout) -> (CUdeviceptr, Option<CUdeviceptr>) + Sync,
) -> Result<(Vec<T>, Vec<T>, Vec<GpuProfile>)> {
    let MemberShape { members, n, frames } = shape;
    let plans = exec.plan(job, split_even(members, exec.parts()))?;
    let mut final_state = vec![T::default(); members * n];
    let mut saved = vec![T::default(); frames * members * n];
    // Per GPU: its slice of the final states and of every frame.
    let values = |items: &Range<usize>| items.len() * n;
    let mut outs: Vec<(&mut [T], Vec<&mut [T]>)> = per_gpu(&mut final_state, &plans, values)
        .into_iter()
        .map(|mine| (mine, Vec::with_capacity(frames)))
        .collect();
    for frame in saved.chunks_exact_mut((members * n).max(1)) {
        for (out, mine) in outs.iter_mut().zip(per_gpu(frame, &plans, values)) {
            out.1.push(mine);
        }
    }
    let profiles = exec.run(job, &plans, outs, |mine, _, local, lay, host| {
        let (values, at) = (local.len() * n, local.start * n);
        let threads = copy_threads();
        let (states, chunk_frames) = out(lay);
        let final_state = &mut mine.0[at..at + values];
        copy_parallel(threads, final_state, get::<T>(host, states, values));
        if let Some(chunk_frames) = chunk_frames {
            let chunk = get::<T>(host, chunk_frames, frames * values);
            for (frame, src) in mine.1.iter_mut().zip(chunk.chunks_exact(values)) {
                copy_parallel(threads, &mut frame[at..at + values], src);
            }
        }
        Ok(())
    })?;
    Ok((final_state, saved, profiles))
}

/// The pipeline's Lorenz 63 run, after validation: the saved states come
/// back as frames x members x 3, as in one piece.
pub(crate) fn lorenz63<T: Float>(
    exec: &Exec<'_>,
    job: Lorenz63Run<'_, T>,
) -> Result<(Lorenz63Ensemble<T>, Vec<GpuProfile>)> {
    let members = job.initial.len() / 3;
    let frames = job.save_at.len();
    let shape = MemberShape {
        members,
        n: 3,
        frames,
    };
    let out = |lay: &Lorenz63Layout| (lay.buffers.out, lay.buffers.saved);
    let (final_state, saved, profiles) = by_members::<_, T>(exec, &job, shape, out)?;
    Ok((
        Lorenz63Ensemble {
            members,
            final_state,
            saved,
            save_at: job.save_at.to_vec(),
        },
        profiles,
    ))
}
