//! Ensembles of Lorenz 96 and Lorenz 2005 Model II / III (as in DART's
//! Lorenz 04 model), whole RK4 runs in one call: M members x S steps in one launch,
//! the step loop on the device. Also the periodic weighted window sum
//! (`calx` in Python ports of Lorenz 04), the smoothing of Model III as a
//! kernel of its own.
//!
//! Layouts: states are members x n, row-major (member m at `m * n`);
//! trajectories are frames x members x n, frame f the state after `f * every`
//! steps (frame 0: the initial state), `steps / every + 1` frames; or, with
//! states saved at chosen steps ("save at steps", as Lorenz 63's), frame k
//! the state after `save_at[k]` steps (a sorted, unique list of steps in
//! 0..=steps), the run cut into segments at the saved steps.
use std::marker::PhantomData;
use std::sync::Arc;

pub use crate::gpu::lorenz::{
    window_extent, Lorenz05OnDevice, Lorenz96OnDevice, Lorenz96TangentOnDevice, WindowSumOnDevice,
    L05_FIXED_KJ, L05_FIXED_SITES, L05_SITES_PER_THREAD, L96_CAPACITY,
};
pub use crate::params::lorenz::{
    frame_count, Ensemble, EnsembleDeviceBuffers, Lorenz05Model, Lorenz05Params, Lorenz96Params,
    MemberParams,
};
pub use crate::params::save_at::check_save_at;

use super::exec::{CpuRun, Operation, Split};
use super::multi::{self, Exec, GpuProfile, MultiGpu};
use super::{check_host_room, Kernpack};
use crate::cpu;
use crate::error::{Error, Result};
use crate::float::{first_non_finite, Float};
use crate::gpu::device::Guards;
use crate::gpu::lorenz::{check_ensemble, check_tangent, check_window, EnsembleModel};
use crate::gpu::Gpu;
use crate::params::save_at::Frames;

/// DART's initial state of one member: every site F, site 0 1.001 F.
pub fn dart_initial_state(n: usize, forcing: f64) -> Vec<f64> {
    let mut z = vec![forcing; n];
    if let Some(first) = z.first_mut() {
        *first = 1.001 * forcing;
    }
    z
}

/// What an ensemble run needs of its model beyond the device path (its
/// checks and description, [`EnsembleModel`]): the CPU backend's integration.
pub(crate) trait EnsembleParams: EnsembleModel {
    /// The run of `initial`, whose first member is member `first_member`
    /// of the ensemble (the member index of Lorenz 96's noise draws), with
    /// the per-member parameters `each` of its members (checked by
    /// [`EnsembleModel::check_each`]), its frames every `every` steps or
    /// after the steps of `save_at`.
    fn on_cpu<T: Float>(
        &self,
        initial: (usize, &[T]),
        each: &MemberParams<&[T]>,
        steps: u64,
        frames: (u64, &[u64]),
        cpu: &CpuRun<'_>,
    ) -> cpu::lorenz::Run<T>;
}

impl EnsembleParams for Lorenz96Params {
    fn on_cpu<T: Float>(
        &self,
        initial: (usize, &[T]),
        _: &MemberParams<&[T]>, // none (check_each)
        steps: u64,
        (every, save_at): (u64, &[u64]),
        cpu: &CpuRun<'_>,
    ) -> cpu::lorenz::Run<T> {
        let frames = Frames::of(every, save_at);
        let (threads, progress) = (cpu.threads, cpu.progress);
        cpu::lorenz::lorenz96(self, initial, (0, steps), frames, threads, progress)
    }
}

impl EnsembleParams for Lorenz05Params {
    fn on_cpu<T: Float>(
        &self,
        initial: (usize, &[T]),
        each: &MemberParams<&[T]>,
        steps: u64,
        (every, save_at): (u64, &[u64]),
        cpu: &CpuRun<'_>,
    ) -> cpu::lorenz::Run<T> {
        let frames = Frames::of(every, save_at);
        let (threads, progress) = (cpu.threads, cpu.progress);
        cpu::lorenz05::lorenz05(self, initial, each, (0, steps), frames, threads, progress)
    }
}

/// The operation: an ensemble run of a Lorenz model from host initial
/// states ([`Kernpack::lorenz96`], [`Kernpack::lorenz05`], and with
/// `save_at` [`Kernpack::lorenz96_save_at`], [`Kernpack::lorenz05_save_at`];
/// with F, b, c per member [`Kernpack::lorenz05_each`],
/// [`Kernpack::lorenz05_each_save_at`]). It splits by member.
#[derive(Debug, Clone, Copy)]
pub struct EnsembleRun<'a, P, T> {
    pub params: &'a P,
    /// Parameters given per member (Lorenz 2005's F, b, c: `members` values
    /// each; Lorenz 96 takes none): `MemberParams::default()` for the
    /// scalars of `params`.
    pub each: MemberParams<&'a [T]>,
    /// members x N.
    pub initial: &'a [T],
    pub steps: u64,
    /// Trajectory interval; 0: the final states only (or those of `save_at`).
    pub every: u64,
    /// Steps whose states are returned as the trajectory's frames: sorted,
    /// unique, each in 0..=steps; empty for none. Not with `every > 0`.
    pub save_at: &'a [u64],
}

impl<P, T> EnsembleRun<'_, P, T> {
    /// `every` and `save_at`, as the checks and the runs take them.
    fn frames(&self) -> (u64, &[u64]) {
        (self.every, self.save_at)
    }
}

#[allow(private_bounds)]
impl<P: EnsembleParams, T: Float> Operation for EnsembleRun<'_, P, T> {
    type Output = Ensemble<T>;

    fn validate(&self) -> Result<()> {
        let (initial, len) = (self.initial, self.initial.len());
        let (members, traj_len) = check_ensemble(self.params, len, self.steps, self.frames())?;
        self.params
            .check_each(&self.each.map(|v| v.len()), members)?;
        // The host can hold the results: probed before the initial values
        // are read, so that a run too large for this host is OutOfMemory at once.
        let what = match traj_len {
            0 => "the final states",
            _ => "the final states and the trajectory",
        };
        check_host_room::<T>(what, len.saturating_add(traj_len))?;
        // Every initial value finite (scanned on threads: ensembles reach gigabytes).
        if let Some(at) = cpu::parallel::first_position(cpu::threads(), initial, first_non_finite) {
            return Err(Error::invalid(format!(
                "initial state value {at} is {}, all must be finite",
                initial[at]
            )));
        }
        for (name, values) in self.each.named() {
            if let Some(at) = values.and_then(|v| v.iter().position(|x| !x.to_f64().is_finite())) {
                let values = values.expect("given");
                return Err(Error::invalid(format!(
                    "{name}[{at}] (per member) is {}, all must be finite",
                    values[at]
                )));
            }
        }
        Ok(())
    }

    fn on_cpu(self, cpu: &CpuRun<'_>) -> Result<Ensemble<T>> {
        let run = self.params.on_cpu(
            (0, self.initial),
            &self.each,
            self.steps,
            self.frames(),
            cpu,
        );
        Ok(Ensemble {
            members: self.initial.len() / self.params.values_per_member(),
            n: self.params.values_per_member(),
            final_state: run.final_state,
            trajectory: run.trajectory,
            every: self.every,
            save_at: self.save_at.to_vec(),
        })
    }

    /// Copy in, run, copy out.
    fn on_gpu(self, gpu: &Arc<Gpu>) -> Result<Ensemble<T>> {
        let (n, len) = (self.params.values_per_member(), self.initial.len());
        let (steps, every) = (self.steps, self.every);
        let d_initial = gpu.upload(self.initial)?;
        let d_each = self.each.map(|v| gpu.upload(v));
        let d_each = MemberParams {
            forcing: d_each.forcing.transpose()?,
            b: d_each.b.transpose()?,
            c: d_each.c.transpose()?,
        };
        let mut out = gpu.zeros::<T>(len)?;
        let mut trajectory = match Frames::of(every, self.save_at).count(steps) {
            0 => None,
            frames => Some(gpu.zeros::<T>(frames * len)?),
        };
        let mut g = Guards::new(gpu.stream());
        let buffers = EnsembleDeviceBuffers {
            initial: g.read(&d_initial),
            out: g.write(&mut out),
            trajectory: trajectory.as_mut().map(|t| g.write(t)),
        };
        let each = d_each.as_ref().map(|v| g.read(v));
        let frames = self.frames();
        let call = (*self.params).on_device::<T>(buffers, each, (0, len / n), steps, frames);
        let call = g.with(call);
        // SAFETY: buffers just allocated on this GPU with the validated lengths.
        unsafe { gpu.launch_fresh(call, ()) }?;
        Ok(Ensemble {
            members: len / n,
            n,
            final_state: gpu.download(&out)?,
            trajectory: trajectory.map(|t| gpu.download(&t)).transpose()?,
            every,
            save_at: self.save_at.to_vec(),
        })
    }

    fn split(&self) -> Option<Split> {
        // Every member is as large as the first.
        multi::split_of(
            self,
            self.initial.len() / self.params.values_per_member(),
            0,
        )
    }

    fn on_pipeline(self, gpus: &MultiGpu) -> Result<(Ensemble<T>, Vec<GpuProfile>)> {
        multi::ensemble::ensemble(&Exec::Gpus(gpus), self)
    }
}

impl Kernpack {
    facade! {
        /// Integrates every member of `initial` (members x N) for `steps` RK4
        /// steps; with `every > 0` also returns the trajectory. Large ensembles
        /// run in chunks of members through pinned staging (the rule in
        /// [`crate::api::exec`]; bitwise the same result, bounded device memory;
        /// the staging is kept for later calls, see [`crate::release_staging`]).
        fn lorenz96(p: &Lorenz96Params, initial: &[T], steps: u64, every: u64) -> Ensemble<T>
            = EnsembleRun { params: p, each: MemberParams::default(), initial, steps, every, save_at: &[] };

        /// As [`Kernpack::lorenz96`], for Lorenz 2005 Model II / III.
        fn lorenz05(p: &Lorenz05Params, initial: &[T], steps: u64, every: u64) -> Ensemble<T>
            = EnsembleRun { params: p, each: MemberParams::default(), initial, steps, every, save_at: &[] };

        /// As [`Kernpack::lorenz96`], with the states after the steps of
        /// `save_at` (sorted, unique, each in 0..=steps; 0: the initial
        /// states) as the trajectory's frames: frame k after `save_at[k]`
        /// steps, as [`Kernpack::lorenz63`]'s. The run is cut into segments
        /// at the saved steps; the noise is drawn for each step's index in
        /// the whole run, so the result is bitwise that of one run (the
        /// final states those of [`Kernpack::lorenz96`]). An empty `save_at`
        /// keeps the final states only.
        fn lorenz96_save_at(p: &Lorenz96Params, initial: &[T], steps: u64, save_at: &[u64]) -> Ensemble<T>
            = EnsembleRun { params: p, each: MemberParams::default(), initial, steps, every: 0, save_at };

        /// As [`Kernpack::lorenz96_save_at`], for Lorenz 2005 Model II / III.
        fn lorenz05_save_at(p: &Lorenz05Params, initial: &[T], steps: u64, save_at: &[u64]) -> Ensemble<T>
            = EnsembleRun { params: p, each: MemberParams::default(), initial, steps, every: 0, save_at };

        /// As [`Kernpack::lorenz05`], with F, b and c per member where `each`
        /// gives them (`members` values each, finite; the others are `p`'s):
        /// member m runs as it would alone with its values as `p`'s scalars
        /// ([`Lorenz05Params::member`]). Chunks and GPUs take their members'
        /// slices.
        fn lorenz05_each(p: &Lorenz05Params, each: &MemberParams<&[T]>, initial: &[T], steps: u64, every: u64) -> Ensemble<T>
            = EnsembleRun { params: p, each: *each, initial, steps, every, save_at: &[] };

        /// [`Kernpack::lorenz05_each`] with the frames of
        /// [`Kernpack::lorenz05_save_at`]: F, b and c per member, the states
        /// after the steps of `save_at` (each segment of the run takes the
        /// same per-member values).
        fn lorenz05_each_save_at(p: &Lorenz05Params, each: &MemberParams<&[T]>, initial: &[T], steps: u64, save_at: &[u64]) -> Ensemble<T>
            = EnsembleRun { params: p, each: *each, initial, steps, every: 0, save_at };

        /// Periodic weighted window sum of `rows` contiguous rows of `n` values:
        /// `out[r][i] = sum_{m=0}^{L-1} w[m] x[r][(i + J - m) mod n]`, L = 2J + 1.
        fn window_sum(x: &[T], w: &[T], rows: usize, n: usize) -> Vec<T>
            = WindowSum { x, w, rows, n };
    }
}

/// The result of [`Kernpack::lorenz96_tangent`].
#[derive(Debug, Clone, PartialEq)]
pub struct Tangent<T> {
    /// members x N states after the last step.
    pub final_state: Vec<T>,
    /// members x K x N: each perturbation propagated by the derivative of
    /// the run (the tangent linear model, M dx).
    pub perturbations: Vec<T>,
}

/// The operation: [`Kernpack::lorenz96_tangent`].
#[derive(Debug, Clone, Copy)]
pub struct Lorenz96Tangent<'a, T> {
    pub params: &'a Lorenz96Params,
    /// members x N.
    pub initial: &'a [T],
    /// members x K x N.
    pub perturbations: &'a [T],
    pub steps: u64,
}

impl<T: Float> Lorenz96Tangent<'_, T> {
    /// (members, K) of a call that passed [`Operation::validate`].
    fn counts(&self) -> (usize, usize) {
        let members = self.initial.len() / self.params.n;
        (members, self.perturbations.len() / self.initial.len())
    }
}

impl<T: Float> Operation for Lorenz96Tangent<'_, T> {
    type Output = Tangent<T>;

    fn validate(&self) -> Result<()> {
        let (p, len, vlen) = (self.params, self.initial.len(), self.perturbations.len());
        if p.n == 0 || len == 0 || len % p.n != 0 || vlen == 0 || vlen % len != 0 {
            p.validate()?;
            return Err(Error::invalid(format!(
                "the tangent run needs members x N = {} initial values and members x K x N \
                 perturbations (K >= 1), got {len} and {vlen}",
                p.n
            )));
        }
        check_tangent(p, len / p.n, vlen / len, self.steps)?;
        check_host_room::<T>("the states and perturbations", len.saturating_add(vlen))?;
        for (name, values) in [
            ("initial state", self.initial),
            ("perturbation", self.perturbations),
        ] {
            if let Some(at) =
                cpu::parallel::first_position(cpu::threads(), values, first_non_finite)
            {
                return Err(Error::invalid(format!(
                    "{name} value {at} is {}, all must be finite",
                    values[at]
                )));
            }
        }
        Ok(())
    }

    fn on_cpu(self, cpu: &CpuRun<'_>) -> Result<Tangent<T>> {
        let (final_state, perturbations) = cpu::lorenz::lorenz96_tangent(
            self.params,
            self.initial,
            self.perturbations,
            self.steps,
            cpu.threads,
        );
        Ok(Tangent {
            final_state,
            perturbations,
        })
    }

    fn on_gpu(self, gpu: &Arc<Gpu>) -> Result<Tangent<T>> {
        let (members, k) = self.counts();
        let (initial, v0) = (gpu.upload(self.initial)?, gpu.upload(self.perturbations)?);
        let (mut out, mut v) = (
            gpu.zeros::<T>(self.initial.len())?,
            gpu.zeros::<T>(self.perturbations.len())?,
        );
        let mut g = Guards::new(gpu.stream());
        let call = Lorenz96TangentOnDevice::<T> {
            p: *self.params,
            initial: g.read(&initial),
            out: g.write(&mut out),
            v0: g.read(&v0),
            v: g.write(&mut v),
            members,
            k,
            steps: self.steps,
            dtype: PhantomData,
        };
        // SAFETY: buffers just allocated on this GPU with the validated lengths.
        unsafe { gpu.launch_fresh(g.with(call), ()) }?;
        Ok(Tangent {
            final_state: gpu.download(&out)?,
            perturbations: gpu.download(&v)?,
        })
    }
}

impl Kernpack {
    facade! {
        /// Lorenz 96's tangent linear model: integrates `initial` (members x
        /// N) for `steps` RK4 steps and propagates `perturbations` (members x
        /// K x N, K vectors per member) by the exact derivative of those
        /// steps (the RK4 step of x joined with `dv/dt = J(x) v`). With
        /// K = N and identity perturbations the result is each member's
        /// Jacobian of the run, row-major by perturbation. Noise moves x
        /// only; the forcing in the state is refused. On the GPU, N must be
        /// a lane layout (a power of two up to 32 times 2..=10, 12 or 16).
        fn lorenz96_tangent(p: &Lorenz96Params, initial: &[T], perturbations: &[T], steps: u64) -> Tangent<T>
            = Lorenz96Tangent { params: p, initial, perturbations, steps };
    }
}

/// The operation: [`Kernpack::window_sum`].
#[derive(Debug, Clone, Copy)]
pub struct WindowSum<'a, T> {
    pub x: &'a [T],
    pub w: &'a [T],
    pub rows: usize,
    pub n: usize,
}

impl<T: Float> Operation for WindowSum<'_, T> {
    type Output = Vec<T>;

    fn validate(&self) -> Result<()> {
        let (x, n) = (self.x, self.n);
        check_window(self.w.len(), self.rows, n, n, (x.len(), x.len()), true)?;
        check_host_room::<T>("the window sums", x.len())
    }

    fn on_cpu(self, cpu: &CpuRun<'_>) -> Result<Vec<T>> {
        let WindowSum { x, w, rows, n } = self;
        let mut out = vec![T::default(); x.len()];
        cpu::window_sum::window_sum(x, w, rows, n, n, &mut out, cpu.threads);
        Ok(out)
    }

    fn on_gpu(self, gpu: &Arc<Gpu>) -> Result<Vec<T>> {
        let WindowSum { x, w, rows, n } = self;
        let (dx, dw, mut out) = (gpu.upload(x)?, gpu.upload(w)?, gpu.zeros::<T>(x.len())?);
        let call = WindowSumOnDevice::buffers(gpu.stream(), &dx, &dw, &mut out, rows, n, n)?;
        // SAFETY: buffers just allocated on this GPU.
        unsafe { gpu.launch_fresh(call, ()) }?;
        gpu.download(&out)
    }
}
