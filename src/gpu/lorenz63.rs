//! The Lorenz 63 ensemble's device description (csrc/lorenz63.cu) and the
//! one check of a run's shape, shared with the host operation.
use std::marker::PhantomData;
use std::sync::Arc;

use cudarc::driver::sys::CUdeviceptr;
use cudarc::driver::{CudaSlice, CudaStream, DevicePtr, DevicePtrMut};

use super::device::{DeviceOperation, Guards, OnBuffers};
use super::kernels;
use super::launch::{In, LaunchConfig, Out};
use super::{Gpu, L63Adaptive};
use crate::error::{Error, Result};
use crate::float::Float;
use crate::params::lorenz63::{
    Lorenz63AdaptiveDeviceBuffers, Lorenz63AdaptiveParams, Lorenz63DeviceBuffers, Lorenz63Params,
    PerMember,
};
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
    let members = check_members(&p.named(), len)?;
    if steps > i64::MAX as u64 {
        return Err(Error::invalid(format!("steps = {steps} is too many")));
    }
    check_save_at(save_at, steps)?;
    Ok((members, saved_len(save_at.len(), len)?))
}

/// `len` initial values (members x 3, members > 0) and each per-member
/// parameter of `named` one value per member or one finite value for all.
/// Returns the members.
fn check_members(named: &[(&'static str, &PerMember<usize>); 3], len: usize) -> Result<usize> {
    if len == 0 || len % 3 != 0 {
        return Err(Error::invalid(format!(
            "initial holds {len} values: members x 3 (x, y, z of each member) with members > 0 is needed"
        )));
    }
    let members = len / 3;
    if len > i64::MAX as usize / 8 {
        return Err(Error::invalid(format!("{members} members is too many")));
    }
    for (name, value) in named {
        match **value {
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
    Ok(members)
}

/// The saved states' length, `frames` x `len`, where it fits.
fn saved_len(frames: usize, len: usize) -> Result<usize> {
    frames
        .checked_mul(len)
        .filter(|s| *s <= i64::MAX as usize / 8)
        .ok_or_else(|| {
            Error::invalid(format!(
                "{frames} saved states of {} members would not fit in memory",
                len / 3
            ))
        })
}

/// The one validation of an adaptive Lorenz 63 run, on counts: `p` with
/// each per-member parameter given as its length, `len` initial values
/// (members x 3), `save_times`. Returns the members and the saved states'
/// length (frames x members x 3).
pub(crate) fn check_lorenz63_adaptive(
    p: &Lorenz63AdaptiveParams<usize>,
    len: usize,
    save_times: &[f64],
) -> Result<(usize, usize)> {
    let members = check_members(&p.named(), len)?;
    let (t0, t_end, c) = (p.t0, p.t_end, &p.control);
    if !(t0.is_finite() && t_end.is_finite() && t_end >= t0) {
        return Err(Error::invalid(format!(
            "the time span must be finite with t_end >= t0, not t0 = {t0}, t_end = {t_end}"
        )));
    }
    for (name, v) in [("rtol", c.rtol), ("atol", c.atol)] {
        if !(v.is_finite() && v >= 0.0) {
            return Err(Error::invalid(format!(
                "{name} must be finite and >= 0, not {v}"
            )));
        }
    }
    if c.atol == 0.0 && c.rtol == 0.0 {
        return Err(Error::invalid("rtol and atol cannot both be 0"));
    }
    if let Some(h) = c.first_step {
        if !(h.is_finite() && h > 0.0 && h <= t_end - t0) {
            return Err(Error::invalid(format!(
                "first_step must be > 0 and at most t_end - t0 = {}, not {h}",
                t_end - t0
            )));
        }
    }
    if c.max_step.is_nan() || c.max_step <= 0.0 {
        return Err(Error::invalid(format!(
            "max_step must be > 0 (infinity for none), not {}",
            c.max_step
        )));
    }
    if c.max_steps == 0 {
        return Err(Error::invalid("max_steps must be at least 1"));
    }
    for (k, &s) in save_times.iter().enumerate() {
        if !(s >= t0 && s <= t_end) {
            return Err(Error::invalid(format!(
                "save_times[{k}] = {s} is outside the time span [{t0}, {t_end}]"
            )));
        }
        if k > 0 && s <= save_times[k - 1] {
            return Err(Error::invalid(format!(
                "save_times must be sorted and unique: save_times[{}] = {}, save_times[{k}] = {s}",
                k - 1,
                save_times[k - 1]
            )));
        }
    }
    Ok((members, saved_len(save_times.len(), len)?))
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
        check_out_and_saved(
            (initial.len(), out.len()),
            saved.as_ref().map(|s| s.len()),
            SaveList::Steps,
            save_at.len(),
            saved_len,
        )?;
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
            SaveList::Steps,
            self.save_at.len(),
            saved_len,
        )?;
        Ok((len, saved_len))
    }
}

/// A buffer of `given` values for the saved states (None: none given) where
/// a run saves `saved_len`: given exactly when the list of saved points
/// (`frames` of them, named `list`: "save_at" of steps, "save_times") is not
/// empty.
fn check_saved(
    given: Option<usize>,
    list: SaveList,
    frames: usize,
    saved_len: usize,
) -> Result<()> {
    let (name, unit) = match list {
        SaveList::Steps => ("save_at", "saved steps"),
        SaveList::Times => ("save_times", "save times"),
    };
    match (given, frames == 0) {
        (None, true) => Ok(()),
        (Some(n), false) if n == saved_len => Ok(()),
        (Some(n), false) => Err(Error::invalid(format!(
            "saved holds {n} values, {saved_len} are written ({frames} {unit} x members x 3)"
        ))),
        (Some(_), true) => Err(Error::invalid(format!(
            "a saved-states buffer was given but {name} is empty"
        ))),
        (None, false) => Err(Error::invalid(format!(
            "{name} needs a saved-states buffer"
        ))),
    }
}

/// The cudarc buffers of either run: `out` as long as `initial` (the
/// lengths, in that order), then [`check_saved`].
fn check_out_and_saved(
    (initial, out): (usize, usize),
    given: Option<usize>,
    list: SaveList,
    frames: usize,
    saved_len: usize,
) -> Result<()> {
    if out != initial {
        return Err(Error::invalid(format!(
            "out holds {out} values, initial {initial}"
        )));
    }
    check_saved(given, list, frames, saved_len)
}

/// Which list a run saves states at.
#[derive(Clone, Copy)]
enum SaveList {
    Steps,
    Times,
}

/// The device memory checks both runs share: `initial` and `out` (members
/// x 3 values), `saved` (saved_len) and each per-member parameter of
/// `named` on this GPU, the outputs `written` (these, and any the caller
/// adds) apart from everything read. Returns (written, read).
fn check_states_memory<T: Float>(
    gpu: &Gpu,
    (initial, out, saved): (CUdeviceptr, CUdeviceptr, Option<CUdeviceptr>),
    named: [(&'static str, &PerMember<CUdeviceptr>); 3],
    members: usize,
    saved_len: usize,
) -> Result<(Vec<Span<'static>>, Vec<Span<'static>>)> {
    let len = 3 * members;
    gpu.check_device_array::<T>("initial", initial, len)?;
    gpu.check_device_array::<T>("out", out, len)?;
    let mut written = vec![Span::at::<T>("out", out, len)];
    if let Some(saved) = saved {
        gpu.check_device_array::<T>("saved", saved, saved_len)?;
        written.push(Span::at::<T>("saved", saved, saved_len));
    }
    let mut read = vec![Span::at::<T>("initial", initial, len)];
    for (name, value) in named {
        if let PerMember::Each(ptr) = *value {
            gpu.check_device_array::<T>(name, ptr, members)?;
            read.push(Span::at::<T>(name, ptr, members));
        }
    }
    Ok((written, read))
}

impl<T: Float> DeviceOperation for Lorenz63OnDevice<T> {
    type Checked = ();

    fn check_shapes(&self) -> Result<()> {
        self.lengths().map(drop)
    }

    fn check_memory(&self, gpu: &Gpu) -> Result<()> {
        let (_, saved_len) = self.lengths()?;
        let b = &self.buffers;
        let states = (b.initial, b.out, b.saved);
        let (written, read) =
            check_states_memory::<T>(gpu, states, self.p.named(), self.members, saved_len)?;
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

/// An adaptive Lorenz 63 run on device memory ([`Gpu::enqueue`]):
/// `buffers.initial` and `buffers.out` hold members x 3 values (apart),
/// `buffers.saved` (given exactly when `save_times` is not empty) frames x
/// members x 3, `buffers.stats` (optional) members x 3 `u32`; each per-member
/// parameter `members` values. `save_times` is host data, held here and
/// copied to the stream with the launch.
#[derive(Debug, Clone)]
pub struct Lorenz63AdaptiveOnDevice<T> {
    pub p: Lorenz63AdaptiveParams<CUdeviceptr>,
    pub buffers: Lorenz63AdaptiveDeviceBuffers,
    pub members: usize,
    pub save_times: Vec<f64>,
    pub dtype: PhantomData<T>,
}

impl<T: Float> Lorenz63AdaptiveOnDevice<T> {
    /// The run on cudarc buffers: the members are `initial`'s length over 3;
    /// `out` as long, `saved` (with non-empty `save_times` only) one frame
    /// per save time, `stats` (if given) members x 3; each `Each` parameter
    /// of `p` one value per member.
    #[allow(clippy::too_many_arguments)]
    pub fn buffers<'a>(
        stream: &'a Arc<CudaStream>,
        p: &'a Lorenz63AdaptiveParams<&'a CudaSlice<T>>,
        initial: &'a impl DevicePtr<T>,
        out: &'a mut impl DevicePtrMut<T>,
        saved: Option<&'a mut CudaSlice<T>>,
        stats: Option<&'a mut CudaSlice<u32>>,
        save_times: &'a [f64],
    ) -> Result<OnBuffers<'a, Self>> {
        let lengths = p.map(|v| v.len());
        let (members, saved_len) = check_lorenz63_adaptive(&lengths, initial.len(), save_times)?;
        check_out_and_saved(
            (initial.len(), out.len()),
            saved.as_ref().map(|s| s.len()),
            SaveList::Times,
            save_times.len(),
            saved_len,
        )?;
        if let Some(n) = stats
            .as_ref()
            .map(|s| s.len())
            .filter(|n| *n != initial.len())
        {
            return Err(Error::invalid(format!(
                "stats holds {n} values, {} are written (members x 3)",
                initial.len()
            )));
        }
        let mut g = Guards::new(stream);
        let device_p = Lorenz63AdaptiveParams {
            sigma: p.sigma.map(|v| g.read(v)),
            rho: p.rho.map(|v| g.read(v)),
            beta: p.beta.map(|v| g.read(v)),
            t0: p.t0,
            t_end: p.t_end,
            control: p.control,
        };
        let buffers = Lorenz63AdaptiveDeviceBuffers {
            initial: g.read(initial),
            out: g.write(out),
            saved: saved.map(|s| g.write(s)),
            stats: stats.map(|s| g.write(s)),
        };
        Ok(g.with(Lorenz63AdaptiveOnDevice {
            p: device_p,
            buffers,
            members,
            save_times: save_times.to_vec(),
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
            check_lorenz63_adaptive(&self.p.map(|_| members), len, &self.save_times)?;
        check_saved(
            self.buffers.saved.map(|_| saved_len),
            SaveList::Times,
            self.save_times.len(),
            saved_len,
        )?;
        Ok((len, saved_len))
    }
}

impl<T: Float> DeviceOperation for Lorenz63AdaptiveOnDevice<T> {
    type Checked = ();

    fn check_shapes(&self) -> Result<()> {
        self.lengths().map(drop)
    }

    fn check_memory(&self, gpu: &Gpu) -> Result<()> {
        let (len, saved_len) = self.lengths()?;
        let b = &self.buffers;
        let states = (b.initial, b.out, b.saved);
        let (mut written, read) =
            check_states_memory::<T>(gpu, states, self.p.named(), self.members, saved_len)?;
        if let Some(stats) = b.stats {
            gpu.check_device_array::<u32>("stats", stats, len)?;
            written.push(Span::at::<u32>("stats", stats, len));
        }
        check_apart(&written, &read)
    }

    /// The save times copied to the stream, then one launch.
    unsafe fn launch(&self, gpu: &Gpu, stream: &Arc<CudaStream>, _: ()) -> Result<()> {
        // Freed in stream order after the launch (cudarc's asynchronous free).
        let times = match self.save_times.is_empty() {
            true => None,
            false => Some(
                stream
                    .clone_htod(&self.save_times)
                    .map_err(|e| Error::cuda("copying the save times", e))?,
            ),
        };
        let times_ptr = match &times {
            Some(t) => t.device_ptr(stream).0,
            None => 0,
        };
        // SAFETY: the caller's buffers (checked as the trait demands); the
        // times were just copied on this stream.
        unsafe { self.launch_with_times(gpu, stream, times_ptr) }
    }
}

impl<T: Float> Lorenz63AdaptiveOnDevice<T> {
    /// The one launch, with `save_times` already on the device at `times`
    /// (0 without save times): [`DeviceOperation::launch`] after its copy,
    /// and a chunk of the multi-GPU pipeline, whose arena holds the copy.
    ///
    /// # Safety
    /// As [`DeviceOperation::launch`]; `times` holds `save_times` on this
    /// GPU, written before on `stream`.
    pub(crate) unsafe fn launch_with_times(
        &self,
        gpu: &Gpu,
        stream: &Arc<CudaStream>,
        times: CUdeviceptr,
    ) -> Result<()> {
        let (b, p) = (&self.buffers, &self.p);
        let kernel = kernels::lorenz63_dopri5::<T>();
        let loaded = gpu.kernel(&kernel)?;
        debug_assert_eq!(loaded.block as usize, BLOCK);
        let grid = loaded.grid_for(self.members as u64, BLOCK as u64);
        let c = &p.control;
        let run = L63Adaptive {
            t0: p.t0,
            t_end: p.t_end,
            rtol: c.effective_rtol(),
            atol: c.atol,
            first_step: c.first_step.unwrap_or(0.0),
            max_step: c.max_step,
            frames: self.save_times.len() as i64,
            max_steps: c.max_steps,
            pad: 0,
        };
        let each = |v: &PerMember<CUdeviceptr>| In::<T>::new(v.each().copied().unwrap_or(0));
        let args = (
            In::new(b.initial),
            Out::new(b.out),
            Out::new(b.saved.unwrap_or(0)),
            Out::<u32>::new(b.stats.unwrap_or(0)),
            self.members as i64,
            each(&p.sigma),
            each(&p.rho),
            each(&p.beta),
            p.sigma.all(),
            p.rho.all(),
            p.beta.all(),
            In::<f64>::new(times),
            run,
        );
        unsafe { gpu.launch(&kernel, LaunchConfig::grid(grid), stream, args) }
    }
}
