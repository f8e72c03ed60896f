//! Lorenz 96, Lorenz 2005 and Lorenz 63 (fixed-step and adaptive) ensembles
//! over several GPUs, in chunks of members.
use std::marker::PhantomData;
use std::ops::Range;
use std::sync::Arc;

use cudarc::driver::sys::CUdeviceptr;
use cudarc::driver::CudaStream;

use super::plan::{split_even, Arena};
use super::{get, per_gpu, put, ChunkJob, Exec, GpuPlan, GpuProfile, MultiGpu, Regions};
use crate::api::lorenz::{
    Ensemble, EnsembleDeviceBuffers, EnsembleParams, EnsembleRun, Lorenz05Params, Lorenz96Params,
    MemberParams,
};
use crate::api::lorenz63::{
    Lorenz63AdaptiveDeviceBuffers, Lorenz63AdaptiveEnsemble, Lorenz63AdaptiveOnDevice,
    Lorenz63AdaptiveParams, Lorenz63AdaptiveRun, Lorenz63DeviceBuffers, Lorenz63Ensemble,
    Lorenz63OnDevice, Lorenz63Params, Lorenz63Run, PerMember,
};
use crate::cpu::{copy_parallel, copy_threads};
use crate::error::Result;
use crate::float::Float;
use crate::gpu::device::DeviceOperation;
use crate::gpu::Gpu;
use crate::params::save_at::Frames;

/// An ensemble chunk's buffers in its arena: the run's states and the
/// chunk's slice of each per-member parameter.
#[derive(Debug, Clone, Copy)]
pub(crate) struct EnsembleLayout {
    pub buffers: EnsembleDeviceBuffers,
    pub each: MemberParams<CUdeviceptr>,
}

/// A validated run, as the chunks see it: chunks of members, each with its
/// members' per-member parameters (those given) packed beside their
/// initial states.
impl<P: EnsembleParams, T: Float> ChunkJob for EnsembleRun<'_, P, T> {
    type Layout = EnsembleLayout;
    const WHAT: &'static str = "member";

    fn layout(&self, r: Range<usize>, base: CUdeviceptr) -> (EnsembleLayout, Regions) {
        let values = r.len() * self.params.values_per_member();
        let frames = Frames::of(self.every, self.save_at).count(self.steps);
        let mut a = Arena::at(base);
        let initial = a.take::<T>(values);
        let each = self.each.map(|_| a.take::<T>(r.len()));
        let h2d = 0..a.bytes;
        let out = a.take::<T>(values);
        let trajectory = (frames > 0).then(|| a.take::<T>(frames * values));
        let d2h = a.offset(out)..a.end;
        let buffers = EnsembleDeviceBuffers {
            initial,
            out,
            trajectory,
        };
        let total = a.bytes;
        let layout = EnsembleLayout { buffers, each };
        (layout, Regions { total, h2d, d2h })
    }

    fn pack(&self, r: &Range<usize>, lay: &EnsembleLayout, host: &mut [u8]) {
        let n = self.params.values_per_member();
        put(
            host,
            lay.buffers.initial,
            &self.initial[r.start * n..r.end * n],
        );
        for ((_, given), (_, at)) in self.each.named().into_iter().zip(lay.each.named()) {
            if let (Some(values), Some(at)) = (given, at) {
                put(host, *at, &values[r.clone()]);
            }
        }
    }

    unsafe fn launch(
        &self,
        gpu: &Gpu,
        stream: &Arc<CudaStream>,
        r: &Range<usize>,
        lay: &EnsembleLayout,
    ) -> Result<()> {
        let (buffers, each) = (lay.buffers, lay.each);
        let (members, frames) = ((r.start, r.len()), (self.every, self.save_at));
        let op = (*self.params).on_device::<T>(buffers, each, members, self.steps, frames);
        // SAFETY: the caller's arena holds this layout, the initial states
        // copied in; the run was validated on the host.
        unsafe { op.launch(gpu, stream, ()) }
    }

    #[cfg(test)]
    fn emulate(&self, r: &Range<usize>, lay: &EnsembleLayout, arena: &mut [u8]) {
        // As the CPU backend computes (in T), which the tests compare with,
        // on the chunk as packed (its states and its slice of each
        // per-member parameter, read from the arena).
        let values = r.len() * self.params.values_per_member();
        let z = get::<T>(arena, lay.buffers.initial, values).to_vec();
        let read = lay.each.map(|at| get::<T>(arena, at, r.len()).to_vec());
        let each = read.as_ref().map(Vec::as_slice);
        let one_thread = crate::api::exec::NOTHING_TO_LAUNCH;
        let frames = (self.every, self.save_at);
        let run = self
            .params
            .on_cpu((r.start, &z), &each, self.steps, frames, &one_thread);
        put(arena, lay.buffers.out, &run.final_state);
        if let (Some(at), Some(traj)) = (lay.buffers.trajectory, run.trajectory) {
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
        let p = self.params.map(|_| a.take::<T>(members));
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
        put_per_member(host, r, self.params.named(), lay.p.named());
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
        let read = lay.p.map(|at| get::<T>(arena, at, members).to_vec());
        let p = Lorenz63Params {
            sigma: read.sigma.as_ref().map(Vec::as_slice),
            rho: read.rho.as_ref().map(Vec::as_slice),
            beta: read.beta.as_ref().map(Vec::as_slice),
            dt: read.dt,
        };
        let (final_state, saved) =
            crate::cpu::lorenz63::lorenz63(&p, &z, self.steps, self.save_at, 1, None);
        put(arena, lay.buffers.out, &final_state);
        if let Some(at) = lay.buffers.saved {
            put(arena, at, &saved);
        }
    }
}

/// The chunk's slice `r` of each per-member parameter of `given`, written
/// at its place in `at` (the chunk's layout) of `host`.
fn put_per_member<T: Float>(
    host: &mut [u8],
    r: &Range<usize>,
    given: [(&str, &PerMember<&[T]>); 3],
    at: [(&str, &PerMember<CUdeviceptr>); 3],
) {
    for ((_, given), (_, at)) in given.into_iter().zip(at) {
        if let (PerMember::Each(values), PerMember::Each(at)) = (given, at) {
            put(host, *at, &values[r.clone()]);
        }
    }
}

/// An adaptive Lorenz 63 chunk's buffers in its arena: the run's states and
/// stats, the chunk's slice of each per-member parameter, and the save
/// times, which the kernel reads from the device.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Lorenz63AdaptiveLayout {
    pub p: Lorenz63AdaptiveParams<CUdeviceptr>,
    pub buffers: Lorenz63AdaptiveDeviceBuffers,
    /// The save times (f64); None without any.
    pub times: Option<CUdeviceptr>,
}

/// A validated adaptive Lorenz 63 run, as the chunks see it: chunks of
/// members, each with its members' sigma, rho and beta (those given per
/// member) and a copy of the save times packed beside their initial states,
/// and the members' accepted and rejected steps and status (members x 3
/// `u32`) read back with their states.
impl<T: Float> ChunkJob for Lorenz63AdaptiveRun<'_, T> {
    type Layout = Lorenz63AdaptiveLayout;
    const WHAT: &'static str = "member";

    fn layout(&self, r: Range<usize>, base: CUdeviceptr) -> (Lorenz63AdaptiveLayout, Regions) {
        let (members, values, frames) = (r.len(), 3 * r.len(), self.save_times.len());
        let mut a = Arena::at(base);
        let initial = a.take::<T>(values);
        let p = self.params.map(|_| a.take::<T>(members));
        let times = (frames > 0).then(|| a.take::<f64>(frames));
        let h2d = 0..a.bytes;
        let out = a.take::<T>(values);
        let saved = (frames > 0).then(|| a.take::<T>(frames * values));
        let stats = a.take::<u32>(values);
        let d2h = a.offset(out)..a.end;
        let buffers = Lorenz63AdaptiveDeviceBuffers {
            initial,
            out,
            saved,
            stats: Some(stats),
        };
        let total = a.bytes;
        let layout = Lorenz63AdaptiveLayout { p, buffers, times };
        (layout, Regions { total, h2d, d2h })
    }

    fn pack(&self, r: &Range<usize>, lay: &Lorenz63AdaptiveLayout, host: &mut [u8]) {
        put(
            host,
            lay.buffers.initial,
            &self.initial[3 * r.start..3 * r.end],
        );
        put_per_member(host, r, self.params.named(), lay.p.named());
        if let Some(at) = lay.times {
            put(host, at, self.save_times);
        }
    }

    unsafe fn launch(
        &self,
        gpu: &Gpu,
        stream: &Arc<CudaStream>,
        r: &Range<usize>,
        lay: &Lorenz63AdaptiveLayout,
    ) -> Result<()> {
        let op = Lorenz63AdaptiveOnDevice::<T> {
            p: lay.p,
            buffers: lay.buffers,
            members: r.len(),
            save_times: self.save_times.to_vec(),
            dtype: PhantomData,
        };
        // SAFETY: the caller's arena holds this layout, the initial states,
        // per-member parameters and save times copied in before on `stream`;
        // the run was validated on the host.
        unsafe { op.launch_with_times(gpu, stream, lay.times.unwrap_or(0)) }
    }

    #[cfg(test)]
    fn emulate(&self, r: &Range<usize>, lay: &Lorenz63AdaptiveLayout, arena: &mut [u8]) {
        // The CPU backend on the chunk as packed (its states, its slice of
        // each parameter and the save times, read from the arena).
        let members = r.len();
        let z = get::<T>(arena, lay.buffers.initial, 3 * members).to_vec();
        let read = lay.p.map(|at| get::<T>(arena, at, members).to_vec());
        let times = lay.times.map_or_else(Vec::new, |at| {
            get::<f64>(arena, at, self.save_times.len()).to_vec()
        });
        let p = Lorenz63AdaptiveParams {
            sigma: read.sigma.as_ref().map(Vec::as_slice),
            rho: read.rho.as_ref().map(Vec::as_slice),
            beta: read.beta.as_ref().map(Vec::as_slice),
            t0: read.t0,
            t_end: read.t_end,
            control: read.control,
        };
        let run = crate::cpu::lorenz63::lorenz63_adaptive(&p, &z, &times, 1, None);
        put(arena, lay.buffers.out, &run.final_state);
        if let Some(at) = lay.buffers.saved {
            put(arena, at, &run.saved);
        }
        // As the kernel writes them: accepted, rejected, status code.
        let stats: Vec<u32> = (0..members)
            .flat_map(|m| [run.accepted[m], run.rejected[m], run.status[m] as u32])
            .collect();
        put(arena, lay.buffers.stats.expect("laid out"), &stats);
    }
}

impl MultiGpu {
    facade! {
        /// Lorenz 96 on every GPU of this handle, members split evenly: bitwise
        /// what [`Kernpack::lorenz96`](crate::Kernpack::lorenz96) gives on one
        /// GPU of the same model.
        fn lorenz96 / lorenz96_profiled(p: &Lorenz96Params, initial: &[T], steps: u64, every: u64)
            -> Ensemble<T> = EnsembleRun { params: p, each: MemberParams::default(), initial, steps, every, save_at: &[] };

        /// Lorenz 2005 Model II / III on every GPU of this handle; as
        /// [`MultiGpu::lorenz96`] against [`Kernpack::lorenz05`](crate::Kernpack::lorenz05).
        fn lorenz05 / lorenz05_profiled(p: &Lorenz05Params, initial: &[T], steps: u64, every: u64)
            -> Ensemble<T> = EnsembleRun { params: p, each: MemberParams::default(), initial, steps, every, save_at: &[] };

        /// Lorenz 96 with the states after the steps of `save_at` on every
        /// GPU of this handle, members split evenly: bitwise what
        /// [`Kernpack::lorenz96_save_at`](crate::Kernpack::lorenz96_save_at)
        /// gives on one GPU of the same model.
        fn lorenz96_save_at / lorenz96_save_at_profiled(p: &Lorenz96Params, initial: &[T], steps: u64, save_at: &[u64])
            -> Ensemble<T> = EnsembleRun { params: p, each: MemberParams::default(), initial, steps, every: 0, save_at };

        /// As [`MultiGpu::lorenz96_save_at`], for Lorenz 2005 Model II / III.
        fn lorenz05_save_at / lorenz05_save_at_profiled(p: &Lorenz05Params, initial: &[T], steps: u64, save_at: &[u64])
            -> Ensemble<T> = EnsembleRun { params: p, each: MemberParams::default(), initial, steps, every: 0, save_at };

        /// Lorenz 2005 with F, b, c per member on every GPU of this handle,
        /// each chunk with its members' values; as [`MultiGpu::lorenz05`]
        /// against [`Kernpack::lorenz05_each`](crate::Kernpack::lorenz05_each).
        fn lorenz05_each / lorenz05_each_profiled(p: &Lorenz05Params, each: &MemberParams<&[T]>, initial: &[T], steps: u64, every: u64)
            -> Ensemble<T> = EnsembleRun { params: p, each: *each, initial, steps, every, save_at: &[] };

        /// As [`MultiGpu::lorenz05_each`], with the states after the steps
        /// of `save_at`; against
        /// [`Kernpack::lorenz05_each_save_at`](crate::Kernpack::lorenz05_each_save_at).
        fn lorenz05_each_save_at / lorenz05_each_save_at_profiled(p: &Lorenz05Params, each: &MemberParams<&[T]>, initial: &[T], steps: u64, save_at: &[u64])
            -> Ensemble<T> = EnsembleRun { params: p, each: *each, initial, steps, every: 0, save_at };

        /// Lorenz 63 on every GPU of this handle, members split evenly (each
        /// chunk with its members' per-member sigma, rho, beta): bitwise what
        /// [`Kernpack::lorenz63`](crate::Kernpack::lorenz63) gives on one GPU
        /// of the same model.
        fn lorenz63 / lorenz63_profiled(p: &Lorenz63Params<&[T]>, initial: &[T], steps: u64, save_at: &[u64])
            -> Lorenz63Ensemble<T> = Lorenz63Run { params: *p, initial, steps, save_at };

        /// Adaptive Lorenz 63 on every GPU of this handle, members split
        /// evenly (each chunk with its members' per-member sigma, rho, beta;
        /// each member takes its own steps): bitwise what
        /// [`Kernpack::lorenz63_adaptive`](crate::Kernpack::lorenz63_adaptive)
        /// gives on one GPU of the same model, the accepted and rejected
        /// steps and the statuses included.
        fn lorenz63_adaptive / lorenz63_adaptive_profiled(p: &Lorenz63AdaptiveParams<&[T]>, initial: &[T], save_times: &[f64])
            -> Lorenz63AdaptiveEnsemble<T> = Lorenz63AdaptiveRun { params: *p, initial, save_times };
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
        let job = EnsembleRun::<_, T> { params, each: MemberParams::default(), initial: &[], steps, every, save_at: &[] };
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
    let frames = Frames::of(every, job.save_at).count(job.steps);
    let members = job.initial.len() / n;
    let shape = MemberShape {
        members,
        n,
        frames,
        stats: 0,
    };
    let out = |lay: &EnsembleLayout| MemberOutputs {
        states: lay.buffers.out,
        frames: lay.buffers.trajectory,
        stats: None,
    };
    let got = by_members::<_, T>(exec, &job, shape, out)?;
    Ok((
        Ensemble {
            members,
            n,
            final_state: got.final_state,
            trajectory: (frames > 0).then_some(got.frames),
            every,
            save_at: job.save_at.to_vec(),
        },
        got.profiles,
    ))
}

/// What comes back of a run split by members: `members` states of `n`
/// values, `frames` frames of all of them (frames x members x n), and
/// `stats` `u32` values per member (members x stats; 0 for none).
#[derive(Debug, Clone, Copy)]
struct MemberShape {
    members: usize,
    n: usize,
    frames: usize,
    stats: usize,
}

/// Where a chunk's results lie in its arena: its final states, with frames
/// the address of its frames (frames x its members x n; the launch's member
/// count is the frame stride, which the gather undoes), with stats the
/// address of its members' stats (its members x [`MemberShape::stats`]).
#[derive(Debug, Clone, Copy)]
struct MemberOutputs {
    states: CUdeviceptr,
    frames: Option<CUdeviceptr>,
    stats: Option<CUdeviceptr>,
}

/// A run's results in input order (see [`MemberShape`]): the final states,
/// the frames and the stats (each empty without any), and each GPU's profile.
struct Gathered<T> {
    final_state: Vec<T>,
    frames: Vec<T>,
    stats: Vec<u32>,
    profiles: Vec<GpuProfile>,
}

/// One GPU's places in a [`Gathered`]: its members' final states, their
/// slice of every frame, and their stats.
struct PerGpu<'a, T> {
    states: &'a mut [T],
    frames: Vec<&'a mut [T]>,
    stats: &'a mut [u32],
}

/// Runs `job` with its members split evenly over the GPUs (or stand-ins) of
/// `exec` and gathers what each chunk's `out(layout)` names, in input order.
fn by_members<J: ChunkJob, T: Float>(
    exec: &Exec<'_>,
    job: &J,
    shape: MemberShape,
    out: impl Fn(&J::Layout) -> MemberOutputs + Sync,
) -> Result<Gathered<T>> {
    let MemberShape {
        members,
        n,
        frames,
        stats: k,
    } = shape;
    let plans = exec.plan(job, split_even(members, exec.parts()))?;
    let mut final_state = vec![T::default(); members * n];
    let mut saved = vec![T::default(); frames * members * n];
    let mut stats = vec![0u32; members * k];
    let values = |items: &Range<usize>| items.len() * n;
    let mut mine: Vec<PerGpu<'_, T>> = per_gpu(&mut final_state, &plans, values)
        .into_iter()
        .zip(per_gpu(&mut stats, &plans, |items| items.len() * k))
        .map(|(states, stats)| PerGpu {
            states,
            frames: Vec::with_capacity(frames),
            stats,
        })
        .collect();
    for frame in saved.chunks_exact_mut((members * n).max(1)) {
        for (gpu, slice) in mine.iter_mut().zip(per_gpu(frame, &plans, values)) {
            gpu.frames.push(slice);
        }
    }
    let profiles = exec.run(job, &plans, mine, |mine, _, local, lay, host| {
        let (values, at) = (local.len() * n, local.start * n);
        let threads = copy_threads();
        let chunk = out(lay);
        let final_state = &mut mine.states[at..at + values];
        copy_parallel(threads, final_state, get::<T>(host, chunk.states, values));
        if let Some(chunk_frames) = chunk.frames {
            let chunk = get::<T>(host, chunk_frames, frames * values);
            for (frame, src) in mine.frames.iter_mut().zip(chunk.chunks_exact(values)) {
                copy_parallel(threads, &mut frame[at..at + values], src);
            }
        }
        if let Some(chunk_stats) = chunk.stats {
            let (len, at) = (local.len() * k, local.start * k);
            let src = get::<u32>(host, chunk_stats, len);
            copy_parallel(threads, &mut mine.stats[at..at + len], src);
        }
        Ok(())
    })?;
    Ok(Gathered {
        final_state,
        frames: saved,
        stats,
        profiles,
    })
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
        stats: 0,
    };
    let out = |lay: &Lorenz63Layout| MemberOutputs {
        states: lay.buffers.out,
        frames: lay.buffers.saved,
        stats: None,
    };
    let got = by_members::<_, T>(exec, &job, shape, out)?;
    Ok((
        Lorenz63Ensemble {
            members,
            final_state: got.final_state,
            saved: got.frames,
            save_at: job.save_at.to_vec(),
        },
        got.profiles,
    ))
}

/// The pipeline's adaptive Lorenz 63 run, after validation: the saved
/// states come back as frames x members x 3 and the stats as members x 3,
/// as in one piece.
pub(crate) fn lorenz63_adaptive<T: Float>(
    exec: &Exec<'_>,
    job: Lorenz63AdaptiveRun<'_, T>,
) -> Result<(Lorenz63AdaptiveEnsemble<T>, Vec<GpuProfile>)> {
    let members = job.initial.len() / 3;
    let frames = job.save_times.len();
    let shape = MemberShape {
        members,
        n: 3,
        frames,
        stats: 3,
    };
    let out = |lay: &Lorenz63AdaptiveLayout| MemberOutputs {
        states: lay.buffers.out,
        frames: lay.buffers.saved,
        stats: lay.buffers.stats,
    };
    let got = by_members::<_, T>(exec, &job, shape, out)?;
    let run = Lorenz63AdaptiveEnsemble::from_stats(
        got.final_state,
        got.frames,
        job.save_times,
        &got.stats,
    );
    Ok((run, got.profiles))
}
