//! Ensembles of the Lorenz 63 system, a whole fixed-step RK4 run of every
//! member in one call (one member per GPU thread, the step loop on the
//! device), with sigma, rho and beta per member or one value for all, and
//! the states at a list of steps ("save at steps"); and the adaptive run,
//! SciPy RK45's Dormand-Prince 5(4) steps with each member's step size its
//! own, the states at a list of times.
//!
//! Layouts: states are members x 3, row-major (x, y, z of member m at
//! `3 m`); saved states are frames x members x 3, frame k the states after
//! `save_at[k]` steps (0: the initial states).
//!
//! Both runs split by member (each member is one GPU thread, its parameters
//! and, adaptive, its steps its own): over the GPUs of a [`MultiGpu`], or in
//! chunks on one GPU for ensembles above the pipeline's threshold (see
//! [`crate::api::exec`]).
use std::sync::Arc;

pub use crate::gpu::lorenz63::{Lorenz63AdaptiveOnDevice, Lorenz63OnDevice};
pub use crate::params::lorenz63::{
    AdaptiveControl, AdaptiveStatus, Lorenz63AdaptiveDeviceBuffers, Lorenz63AdaptiveEnsemble,
    Lorenz63AdaptiveParams, Lorenz63DeviceBuffers, Lorenz63Ensemble, Lorenz63Params, PerMember,
};
pub use crate::params::save_at::check_save_at;

use super::exec::{CpuRun, Operation, Split};
use super::multi::{self, Exec, GpuProfile, MultiGpu};
use super::{check_host_room, Kernpack};
use crate::cpu;
use crate::error::{Error, Result};
use crate::float::{first_non_finite, Float};
use crate::gpu::lorenz63::{check_lorenz63, check_lorenz63_adaptive};
use crate::gpu::Gpu;

/// The operation: [`Kernpack::lorenz63`].
#[derive(Debug, Clone, Copy)]
pub struct Lorenz63Run<'a, T> {
    pub params: Lorenz63Params<&'a [T]>,
    /// members x 3.
    pub initial: &'a [T],
    pub steps: u64,
    /// Steps whose states are returned: sorted, unique, each in 0..=steps.
    pub save_at: &'a [u64],
}

/// The index of the first non-finite value of `values`, scanned on threads.
fn first_bad<T: Float>(values: &[T]) -> Option<usize> {
    cpu::parallel::first_position(cpu::threads(), values, first_non_finite)
}

impl<T: Float> Operation for Lorenz63Run<'_, T> {
    type Output = Lorenz63Ensemble<T>;

    fn validate(&self) -> Result<()> {
        let lengths = self.params.map(|v| v.len());
        let (_, saved_len) =
            check_lorenz63(&lengths, self.initial.len(), self.steps, self.save_at)?;
        check_host_room::<T>(
            "the final and saved states",
            self.initial.len().saturating_add(saved_len),
        )?;
        check_finite(self.initial, &self.params.named())
    }

    fn on_cpu(self, cpu: &CpuRun<'_>) -> Result<Lorenz63Ensemble<T>> {
        let (final_state, saved) = cpu::lorenz63::lorenz63(
            &self.params,
            self.initial,
            self.steps,
            self.save_at,
            cpu.threads,
            cpu.progress,
        );
        Ok(Lorenz63Ensemble {
            members: self.initial.len() / 3,
            final_state,
            saved,
            save_at: self.save_at.to_vec(),
        })
    }

    /// Copy in, run, copy out.
    fn on_gpu(self, gpu: &Arc<Gpu>) -> Result<Lorenz63Ensemble<T>> {
        let len = self.initial.len();
        let upload = |v: &[T]| gpu.upload(v);
        let d_params = Lorenz63Params {
            sigma: self.params.sigma.map(upload),
            rho: self.params.rho.map(upload),
            beta: self.params.beta.map(upload),
            dt: self.params.dt,
        };
        let d_params = Lorenz63Params {
            sigma: transpose(d_params.sigma)?,
            rho: transpose(d_params.rho)?,
            beta: transpose(d_params.beta)?,
            dt: d_params.dt,
        };
        let p = Lorenz63Params {
            sigma: d_params.sigma.as_ref(),
            rho: d_params.rho.as_ref(),
            beta: d_params.beta.as_ref(),
            dt: d_params.dt,
        };
        let d_initial = gpu.upload(self.initial)?;
        let mut out = gpu.zeros::<T>(len)?;
        let mut saved = match self.save_at.len() {
            0 => None,
            frames => Some(gpu.zeros::<T>(frames * len)?),
        };
        let call = Lorenz63OnDevice::buffers(
            gpu.stream(),
            &p,
            &d_initial,
            &mut out,
            saved.as_mut(),
            self.steps,
            self.save_at,
        )?;
        // SAFETY: buffers just allocated on this GPU with the validated lengths.
        unsafe { gpu.launch_fresh(call, ()) }?;
        Ok(Lorenz63Ensemble {
            members: len / 3,
            final_state: gpu.download(&out)?,
            saved: saved
                .map(|s| gpu.download(&s))
                .transpose()?
                .unwrap_or_default(),
            save_at: self.save_at.to_vec(),
        })
    }

    fn split(&self) -> Option<Split> {
        // Every member is as large as the first.
        multi::split_of(self, self.initial.len() / 3, 0)
    }

    fn on_pipeline(self, gpus: &MultiGpu) -> Result<(Lorenz63Ensemble<T>, Vec<GpuProfile>)> {
        multi::ensemble::lorenz63(&Exec::Gpus(gpus), self)
    }
}

/// Every initial value and per-member parameter finite.
fn check_finite<T: Float>(initial: &[T], named: &[(&str, &PerMember<&[T]>); 3]) -> Result<()> {
    if let Some(at) = first_bad(initial) {
        return Err(Error::invalid(format!(
            "initial value {at} is {}, all must be finite",
            initial[at]
        )));
    }
    for (name, value) in named {
        if let PerMember::Each(values) = value {
            if let Some(at) = first_bad(values) {
                return Err(Error::invalid(format!(
                    "{name}[{at}] is {}, all must be finite",
                    values[at]
                )));
            }
        }
    }
    Ok(())
}

/// The operation: [`Kernpack::lorenz63_adaptive`].
#[derive(Debug, Clone, Copy)]
pub struct Lorenz63AdaptiveRun<'a, T> {
    pub params: Lorenz63AdaptiveParams<&'a [T]>,
    /// members x 3.
    pub initial: &'a [T],
    /// Times whose states are returned: sorted, unique, each in [t0, t_end].
    pub save_times: &'a [f64],
}

impl<T: Float> Operation for Lorenz63AdaptiveRun<'_, T> {
    type Output = Lorenz63AdaptiveEnsemble<T>;

    fn validate(&self) -> Result<()> {
        let lengths = self.params.map(|v| v.len());
        let (_, saved_len) =
            check_lorenz63_adaptive(&lengths, self.initial.len(), self.save_times)?;
        check_host_room::<T>(
            "the final and saved states",
            self.initial.len().saturating_add(saved_len),
        )?;
        check_finite(self.initial, &self.params.named())
    }

    fn on_cpu(self, cpu: &CpuRun<'_>) -> Result<Lorenz63AdaptiveEnsemble<T>> {
        let run = cpu::lorenz63::lorenz63_adaptive(
            &self.params,
            self.initial,
            self.save_times,
            cpu.threads,
            cpu.progress,
        );
        Ok(Lorenz63AdaptiveEnsemble {
            members: self.initial.len() / 3,
            final_state: run.final_state,
            saved: run.saved,
            save_times: self.save_times.to_vec(),
            accepted: run.accepted,
            rejected: run.rejected,
            status: run.status,
        })
    }

    /// Copy in, run, copy out.
    fn on_gpu(self, gpu: &Arc<Gpu>) -> Result<Lorenz63AdaptiveEnsemble<T>> {
        let len = self.initial.len();
        let upload = |v: PerMember<&[T]>| transpose(v.map(|v| gpu.upload(v)));
        let (sigma, rho, beta) = (
            upload(self.params.sigma)?,
            upload(self.params.rho)?,
            upload(self.params.beta)?,
        );
        let p = Lorenz63AdaptiveParams {
            sigma: sigma.as_ref(),
            rho: rho.as_ref(),
            beta: beta.as_ref(),
            t0: self.params.t0,
            t_end: self.params.t_end,
            control: self.params.control,
        };
        let d_initial = gpu.upload(self.initial)?;
        let mut out = gpu.zeros::<T>(len)?;
        let mut stats = gpu.zeros::<u32>(len)?;
        let mut saved = match self.save_times.len() {
            0 => None,
            frames => Some(gpu.zeros::<T>(frames * len)?),
        };
        let call = Lorenz63AdaptiveOnDevice::buffers(
            gpu.stream(),
            &p,
            &d_initial,
            &mut out,
            saved.as_mut(),
            Some(&mut stats),
            self.save_times,
        )?;
        // SAFETY: buffers just allocated on this GPU with the validated lengths.
        unsafe { gpu.launch_fresh(call, ()) }?;
        Ok(Lorenz63AdaptiveEnsemble::from_stats(
            gpu.download(&out)?,
            saved
                .map(|s| gpu.download(&s))
                .transpose()?
                .unwrap_or_default(),
            self.save_times,
            &gpu.download(&stats)?,
        ))
    }

    fn split(&self) -> Option<Split> {
        // Every member is as large as the first.
        multi::split_of(self, self.initial.len() / 3, 0)
    }

    fn on_pipeline(
        self,
        gpus: &MultiGpu,
    ) -> Result<(Lorenz63AdaptiveEnsemble<T>, Vec<GpuProfile>)> {
        multi::ensemble::lorenz63_adaptive(&Exec::Gpus(gpus), self)
    }
}

/// A parameter whose upload may have failed, as the error of the upload.
fn transpose<V>(v: PerMember<Result<V>>) -> Result<PerMember<V>> {
    Ok(match v {
        PerMember::All(a) => PerMember::All(a),
        PerMember::Each(r) => PerMember::Each(r?),
    })
}

impl Kernpack {
    facade! {
        /// Integrates every member of `initial` (members x 3: x, y, z) for
        /// `steps` classical RK4 steps of the Lorenz 63 system with `p`'s
        /// sigma, rho, beta (per member or one for all) and dt; also returns
        /// the states after each step of `save_at` (sorted, unique, each in
        /// 0..=steps; empty for the final states only). Large ensembles run
        /// in chunks of members through pinned staging, as
        /// [`Kernpack::lorenz96`] (bitwise the same result); a handle over
        /// several GPUs splits the members over them ([`MultiGpu::lorenz63`]).
        fn lorenz63(p: &Lorenz63Params<&[T]>, initial: &[T], steps: u64, save_at: &[u64]) -> Lorenz63Ensemble<T>
            = Lorenz63Run { params: *p, initial, steps, save_at };
        /// Integrates every member of `initial` (members x 3: x, y, z) from
        /// `p.t0` to `p.t_end` with SciPy RK45's method (Dormand-Prince
        /// 5(4), each member's step size controlled on its own by
        /// `p.control`) and `p`'s sigma, rho, beta (per member or one for
        /// all); also returns the states at `save_times` (sorted, unique,
        /// each in [t0, t_end]; from the steps' dense output), and per
        /// member the accepted and rejected steps and how its run ended
        /// (a member that stops early keeps its last state, NaN at the
        /// later save times). Large ensembles run in chunks of members, and
        /// a handle over several GPUs splits the members over them
        /// ([`MultiGpu::lorenz63_adaptive`]), as [`Kernpack::lorenz63`]
        /// (bitwise the same result).
        fn lorenz63_adaptive(p: &Lorenz63AdaptiveParams<&[T]>, initial: &[T], save_times: &[f64]) -> Lorenz63AdaptiveEnsemble<T>
            = Lorenz63AdaptiveRun { params: *p, initial, save_times };
    }
}
