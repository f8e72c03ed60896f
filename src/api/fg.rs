//! The coupled F/G system, dF/dt = -2i F - i delta (2G - 1) and
//! dG/dt = -i (conj(delta) F - delta conj(F)): `nsteps` RK4
//! steps of N x N complex F and G, delta = sum(F) after every step, in one
//! call with no host synchronisation inside the loop.
//!
//! Determinism: delta is summed in f64 in a fixed tree that depends on N only
//! (csrc/fg.cu), so results are bitwise identical run to run, on any GPU and
//! on both GPU paths; the CPU backend replays the same operations and agrees
//! bit for bit in f64 (and in f32 unless values are subnormal, which the GPU
//! flushes to zero).
use std::sync::Arc;

use cudarc::driver::CudaSlice;

use super::exec::{CpuRun, Operation};
use super::{check_host_room, Kernpack};
use crate::error::{Error, Result};
use crate::float::{Complex, Float};
use crate::gpu::fg::check_call;
pub use crate::gpu::fg::{FgOnDevice, FgPlan};
use crate::gpu::Gpu;
pub use crate::params::fg::{FgOptions, FgPath, FgRun, CHUNK};

fn check_finite_state<T: Float>(name: &str, v: &[Complex<T>]) -> Result<()> {
    if let Some(k) = v
        .iter()
        .position(|c| !(c.re.to_f64().is_finite() && c.im.to_f64().is_finite()))
    {
        return Err(Error::invalid(format!(
            "{name}[{k}] = ({}, {}) is not finite",
            v[k].re, v[k].im
        )));
    }
    Ok(())
}

impl Kernpack {
    facade! {
        /// Integrates `nsteps` RK4 steps from F, G (N x N, row-major) and delta0
        /// with step `dt`, on the GPU or the CPU backend. `nsteps = 0` returns
        /// `delta = [delta0]` and F, G unchanged. Inputs must be finite.
        #[allow(clippy::too_many_arguments)]
        fn fg_integrate(
            n: usize,
            f: &[Complex<T>],
            g: &[Complex<T>],
            delta0: Complex<T>,
            dt: T,
            nsteps: usize,
            opts: &FgOptions,
        ) -> FgRun<T> = FgIntegrate { n, f, g, delta0, dt, nsteps, opts: *opts };
    }
}

/// The operation: an F/G run from host state ([`Kernpack::fg_integrate`]).
#[derive(Debug, Clone, Copy)]
pub struct FgIntegrate<'a, T> {
    pub n: usize,
    pub f: &'a [Complex<T>],
    pub g: &'a [Complex<T>],
    pub delta0: Complex<T>,
    pub dt: T,
    pub nsteps: usize,
    pub opts: FgOptions,
}

impl<T: Float> Operation for FgIntegrate<'_, T> {
    type Output = FgRun<T>;

    /// All checks of a host call: `check_call` and finite states.
    fn validate(&self) -> Result<()> {
        let (f, g, nsteps) = (self.f, self.g, self.nsteps);
        // Saturating: an impossible nsteps is refused by check_call, never wraps.
        let lengths = (
            2 * f.len(),
            2 * g.len(),
            nsteps.saturating_add(1).saturating_mul(2),
        );
        check_call(self.n, self.delta0, self.dt, nsteps, lengths)?;
        check_finite_state("F", f)?;
        check_finite_state("G", g)?;
        check_host_room::<Complex<T>>("delta", nsteps.saturating_add(1))
    }

    fn on_cpu(self, cpu: &CpuRun<'_>) -> Result<FgRun<T>> {
        let (mut f, mut g) = (self.f.to_vec(), self.g.to_vec());
        let delta = crate::cpu::fg::integrate(
            &mut f,
            &mut g,
            self.delta0,
            self.dt,
            self.nsteps,
            cpu.threads,
        );
        Ok(FgRun { delta, f, g })
    }

    fn on_gpu(self, gpu: &Arc<Gpu>) -> Result<FgRun<T>> {
        let (f, g) = (interleaved(self.f), interleaved(self.g));
        let (mut f, mut g) = (gpu.upload(f)?, gpu.upload(g)?);
        let mut delta = gpu.zeros::<T>(2 * (self.nsteps + 1))?;
        let call = FgOnDevice::new(self.n, self.delta0, self.dt, self.nsteps, self.opts);
        let call = FgOnDevice::buffers(gpu.stream(), &call, &mut f, &mut g, &mut delta)?;
        // SAFETY: buffers just allocated on this GPU.
        unsafe { gpu.launch_fresh(call, ()) }?;
        let back = |v: &CudaSlice<T>| gpu.download(v).map(|v| complexes(&v));
        Ok(FgRun {
            delta: back(&delta)?,
            f: back(&f)?,
            g: back(&g)?,
        })
    }
}

/// The interleaved (re, im) view of complex values.
pub fn interleaved<T: Float>(c: &[Complex<T>]) -> &[T] {
    // SAFETY: Complex<T> is #[repr(C)] { re: T, im: T }: two T, no padding.
    unsafe { std::slice::from_raw_parts(c.as_ptr().cast::<T>(), 2 * c.len()) }
}

/// Complex values from interleaved (re, im) pairs.
pub fn complexes<T: Float>(v: &[T]) -> Vec<Complex<T>> {
    v.chunks_exact(2)
        .map(|p| Complex { re: p[0], im: p[1] })
        .collect()
}
