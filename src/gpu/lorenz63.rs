//! The Lorenz 63 ensemble's device description (csrc/lorenz63.cu) and the
//! one check of a run's shape, shared with the host operation.
use std::marker::PhantomData;
use std::sync::Arc;

use cudarc::driver::sys::CUdeviceptr;
use cudarc::driver::{CudaSlice, CudaStream, DevicePtr, DevicePtrMut};

use super::device::{DeviceOperation, Guards, OnBuffers};
use super::kernels;
use super::launch::{In, LaunchConfig, Out};
use super::Gpu;
use crate::error::{Error, Result};
use crate::float::Float;
use crate::params::lorenz63::{Lorenz63DeviceBuffers, Lorenz63Params, PerMember};
use crate::params::save_at::{check_save_at, segments};
use crate::raw::{check_apart, Span};

/// Threads per block of `lorenz63_rk4` (`kp::lorenz63::BLOCK`).
const BLOCK: usize = 256;

/// The one validation of a Lorenz 63 run, on counts: `p` with each
/// per-member parameter given as its length, `len` initial values (members
/// x 3), `steps`, `save_at`. Returns the members and the saved states'
/// length (frames x members x 3).
pub(crate) fn check_lorenz63(
    p: &Lorenz63Params<usize>,
    len: usize,
    steps: u64,
    save_at: &[u64],
) -> Result<(usize, usize)> {
    if !(p.dt.is_finite() && p.dt > 0.0) {
        return Err(Error::invalid(format!(
            "dt must be finite and > 0, not {}",
            p.dt
        )));
    }
    if len == 0 || len % 3 != 0 {
        return Err(Error::invalid(format!(
            "initial holds {len} values: members x 3 (x, y, z of each member) with members > 0 is needed"
        )));
    }
    let members = len / 3;
    if len > i64::MAX as usize / 8 {
        return Err(Error::invalid(format!("{members} members is too many")));
    }
    for (name, value) in p.named() {
        match *value {
            PerMember::All(v) if !v.is_finite() => {
                return Err(Error::invalid(format!("{name} must be finite, not {v}")))
            }
            PerMember::Each(n) if n != members => {
                return Err(Error::invalid(format!(
                    "{name} holds {n} values: one per member ({members}) or one value for all is needed"
                )))
            }
            _ => {}
        }
    }
    if steps > i64::MAX as u64 {
        return Err(Error::invalid(format!("steps = {steps} is too many")));
    }
    check_save_at(save_at, steps)?;
    let saved = save_at
        .len()
        .checked_mul(len)
        .filter(|s| *s <= i64::MAX as usize / 8)
        .ok_or_else(|| {
            Error::invalid(format!(
                "{} saved steps of {members} members would not fit in memory",
                save_at.len()
            ))
        })?;
    Ok((members, saved))
}

/// A Lorenz 63 run on device memory ([`Gpu::enqueue`]): `buffers.initial`
/// and `buffers.out` hold members x 3 values (apart), `buffers.saved`
/// (given exactly when `save_at` is not empty) frames x members x 3; each
/// per-member parameter `members` values. `save_at` is host data, held here:
/// the run is one launch per segment between saved steps.
#[derive(Debug, Clone)]
pub struct Lorenz63OnDevice<T> {
    pub p: Lorenz63Params<CUdeviceptr>,
    pub buffers: Lorenz63DeviceBuffers,
    pub members: usize,
    pub steps: u64,
    pub save_at: Vec<u64>,
    pub dtype: PhantomData<T>,
}

impl<T: Float> Lorenz63OnDevice<T> {
    /// The run on cudarc buffers: the members are `initial`'s length over 3;
    /// `out` as long, `saved` (with a non-empty `save_at` only) one frame per
    /// saved step; each `Each` parameter of `p` one value per member.
    #[allow(clippy::too_many_arguments)]
    pub fn buffers<'a>(
        stream: &'a Arc<CudaStream>,
        p: &'a Lorenz63Params<&'a CudaSlice<T>>,
        initial: &'a impl DevicePtr<T>,
        out: &'a mut impl DevicePtrMut<T>,
        saved: Option<&'a mut CudaSlice<T>>,
        steps: u64,
        save_at: &'a [u64],
    ) -> Result<OnBuffers<'a, Self>> {
        let lengths = p.map(|v| v.len());
        let (members, saved_len) = check_lorenz63(&lengths, initial.len(), steps, save_at)?;
        if out.len() != initial.len() {
            return Err(Error::invalid(format!(
                "out holds {} values, initial {}",
                out.len(),
                initial.len()
            )));
        }
        check_saved(saved.as_ref().map(|s| s.len()), save_at, saved_len)?;
        let mut g = Guards::new(stream);
        let device_p = Lorenz63Params {
            sigma: p.sigma.map(|v| g.read(v)),
            rho: p.rho.map(|v| g.read(v)),
            beta: p.beta.map(|v| g.read(v)),
            dt: p.dt,
        };
        let buffers = Lorenz63DeviceBuffers {
            initial: g.read(initial),
            out: g.write(out),
            saved: saved.map(|s| g.write(s)),
        };
        Ok(g.with(Lorenz63OnDevice {
            p: device_p,
            buffers,
            members,
            steps,
            save_at: save_at.to_vec(),
            dtype: PhantomData,
        }))
    }

    /// (members x 3, saved length) after the shape checks.
    fn lengths(&self) -> Result<(usize, usize)> {
        let len = self
            .members
            .checked_mul(3)
            .ok_or_else(|| Error::invalid(format!("{} members is too many", self.members)))?;
        let members = self.members;
        let (_, saved_len) =
            check_lorenz63(&self.p.map(|_| members), len, self.steps, &self.save_at)?;
        check_saved(
            self.buffers.saved.map(|_| saved_len),
            &self.save_at,
            saved_len,
        )?;
        Ok((len, saved_len))
    }
}

/// A buffer of `given` values for the saved states (None: none given) where
/// a run saves `saved_len`: given exactly when `save_at` is not empty.
fn check_saved(given: Option<usize>, save_at: &[u64], saved_len: usize) -> Result<()> {
    match (given, save_at.is_empty()) {
        (None, true) => Ok(()),
        (Some(n), false) if n == saved_len => Ok(()),
        (Some(n), false) => Err(Error::invalid(format!(
            "saved holds {n} values, {saved_len} are written ({} saved steps x members x 3)",
            save_at.len()
        ))),
        (Some(_), true) => Err(Error::invalid(
            "a saved-states buffer was given but save_at is empty",
        )),
        (None, false) => Err(Error::invalid("save_at needs a saved-states buffer")),
    }
}

impl<T: Float> DeviceOperation for Lorenz63OnDevice<T> {
    type Checked = ();

    fn check_shapes(&self) -> Result<()> {
        self.lengths().map(drop)
    }

    fn check_memory(&self, gpu: &Gpu) -> Result<()> {
        let (len, saved_len) = self.lengths()?;
        let b = &self.buffers;
        gpu.check_device_array::<T>("initial", b.initial, len)?;
        gpu.check_device_array::<T>("out", b.out, len)?;
        let mut written = vec![Span::at::<T>("out", b.out, len)];
        if let Some(saved) = b.saved {
            gpu.check_device_array::<T>("saved", saved, saved_len)?;
            written.push(Span::at::<T>("saved", saved, saved_len));
        }
        let mut read = vec![Span::at::<T>("initial", b.initial, len)];
        for (name, value) in self.p.named() {
            if let PerMember::Each(ptr) = *value {
                gpu.check_device_array::<T>(name, ptr, self.members)?;
                read.push(Span::at::<T>(name, ptr, self.members));
            }
        }
        check_apart(&written, &read)
    }

    /// One launch per segment: the first from `initial`, the next ones in
    /// place on `out`, each also writing its frame of `saved`.
    unsafe fn launch(&self, gpu: &Gpu, stream: &Arc<CudaStream>, _: ()) -> Result<()> {
        let (b, p, members) = (&self.buffers, &self.p, self.members);
        let kernel = kernels::lorenz63_rk4::<T>();
        let loaded = gpu.kernel(&kernel)?;
        debug_assert_eq!(loaded.block as usize, BLOCK);
        let grid = loaded.grid_for(members as u64, BLOCK as u64);
        let frame_bytes = (members * 3 * std::mem::size_of::<T>()) as u64;
        let each = |v: &PerMember<CUdeviceptr>| In::<T>::new(v.each().copied().unwrap_or(0));
        let mut input = b.initial;
        for segment in segments(&self.save_at, self.steps) {
            let saved = match (segment.frame, b.saved) {
                (Some(k), Some(saved)) => saved + k as u64 * frame_bytes,
                _ => 0,
            };
            let args = (
                In::new(input),
                Out::new(b.out),
                Out::new(saved),
                members as i64,
                each(&p.sigma),
                each(&p.rho),
                each(&p.beta),
                p.sigma.all(),
                p.rho.all(),
                p.beta.all(),
                p.dt,
                segment.steps as i64,
            );
            unsafe { gpu.launch(&kernel, LaunchConfig::grid(grid), stream, args) }?;
            input = b.out;
        }
        Ok(())
    }
}
