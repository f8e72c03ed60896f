//! Ensembles of Lorenz 96 and Lorenz 2005 Model II / III (as in DART's
//! Lorenz 04 model), whole RK4 runs in one call: M members x S steps in one launch,
//! the step loop on the device. Also the periodic weighted window sum
//! (`calx` in Python ports of Lorenz 04), the smoothing of Model III as a
//! kernel of its own.
//!
//! Layouts: states are members x n, row-major (member m at `m * n`);
//! trajectories are frames x members x n, frame f the state after `f * every`
//! steps (frame 0: the initial state), `steps / every + 1` frames.
use std::marker::PhantomData;
use std::sync::Arc;

use cudarc::driver::sys::CUdeviceptr;
use cudarc::driver::{CudaSlice, CudaStream, DevicePtr, DevicePtrMut};

pub use crate::params::lorenz::{
    frame_count, Ensemble, EnsembleDeviceBuffers, Lorenz05Model, Lorenz05Params, Lorenz96Params,
};
use crate::params::lorenz::{model3_weights, FixedWeights};

use super::device::{DeviceOperation, Guards, OnBuffers};
use super::exec::{CpuRun, Operation, Split};
use super::multi::MultiGpu;
use super::{check_disjoint, check_host_room, Kernpack};
use crate::cpu;
use crate::error::{Error, Result};
use crate::float::{first_non_finite, Float};
use crate::gpu::kernels;
use crate::gpu::launch::{In, LaunchConfig, Out};
use crate::gpu::Gpu;

fn check_dt_and_forcing(dt: f64, forcing: f64) -> Result<()> {
    if !(dt.is_finite() && dt > 0.0) {
        return Err(Error::invalid(format!(
            "dt must be finite and > 0, not {dt}"
        )));
    }
    if !forcing.is_finite() {
        return Err(Error::invalid(format!(
            "the forcing F must be finite, not {forcing}"
        )));
    }
    Ok(())
}

impl Lorenz96Params {
    /// N >= 4: the stencil reads sites k-2, k-1, k, k+1, which must be distinct.
    pub fn validate(&self) -> Result<()> {
        if self.n < 4 || self.n > i32::MAX as usize {
            return Err(Error::invalid(format!(
                "Lorenz 96 needs N >= 4 sites (the stencil spans k-2..k+1), got N = {}",
                self.n
            )));
        }
        check_dt_and_forcing(self.dt, self.forcing)
    }
}

impl Lorenz05Params {
    pub fn validate(&self) -> Result<()> {
        let (n, k, j) = (self.n, self.k, self.j);
        if k == 0 || k % 2 != 0 {
            return Err(Error::invalid(format!(
                "K must be even and > 0 (H = K/2 halves it), got K = {k}"
            )));
        }
        // The bracket reads W at i - 2K and X up to i + K + H: with N > 2K every
        // offset is below N (one wrap), and the W average of K + 1 sites never
        // meets itself.
        // Checked: K (and J) come from callers and 2K must not wrap.
        let exceeds_twice = |m: usize| m.checked_mul(2).is_some_and(|m2| n > m2);
        if !exceeds_twice(k) || n > i32::MAX as usize {
            return Err(Error::invalid(format!(
                "N must exceed 2K (the bracket reaches W at i - 2K), got N = {n}, K = {k}"
            )));
        }
        if self.model == Lorenz05Model::III {
            if j == 0 {
                return Err(Error::invalid(
                    "J must be >= 1 for Model III (J = 0 makes the weights 3/0; \
                     Model II is the unsmoothed model, X = Z)",
                ));
            }
            if !exceeds_twice(j) {
                return Err(Error::invalid(format!(
                    "N must exceed 2J (the smoothing window of 2J+1 sites must not wrap onto itself), got N = {n}, J = {j}"
                )));
            }
        }
        check_dt_and_forcing(self.dt, self.forcing)?;
        if !self.b.is_finite() || !self.c.is_finite() {
            return Err(Error::invalid(format!(
                "b and c must be finite, got b = {}, c = {}",
                self.b, self.c
            )));
        }
        Ok(())
    }

    /// Whether the specialised Model III kernel (`l05_fixed_run` of
    /// csrc/lorenz.cu) covers these parameters: Model III with a compiled
    /// (K, J) pair and N <= [`L05_FIXED_SITES`].
    pub fn has_fixed_kernel(&self) -> bool {
        self.model == Lorenz05Model::III
            && L05_FIXED_KJ.contains(&(self.k, self.j))
            && self.n <= L05_FIXED_SITES
    }

    /// Dynamic shared memory of one member block of the generic `T` kernel
    /// (`l05_run` of csrc/lorenz.cu); the specialised kernels use a fixed
    /// static allocation (< 48 KB) instead.
    pub fn shared_bytes<T: Float>(&self) -> usize {
        let values = match self.model {
            Lorenz05Model::III => 2 * self.j + 1 + 6 * self.n,
            Lorenz05Model::II => 5 * self.n,
        };
        values * std::mem::size_of::<T>()
    }
}

/// DART's initial state of one member: every site F, site 0 1.001 F.
pub fn dart_initial_state(n: usize, forcing: f64) -> Vec<f64> {
    let mut z = vec![forcing; n];
    if let Some(first) = z.first_mut() {
        *first = 1.001 * forcing;
    }
    z
}

/// What an ensemble run needs of its model: the parameters' checks, and the
/// model's CPU integration, GPU launch and pipeline job.
pub(crate) trait EnsembleParams: Sync {
    /// Sites per member, N.
    fn sites(&self) -> usize;
    fn validate(&self) -> Result<()>;
    fn on_cpu<T: Float>(
        &self,
        initial: &[T],
        steps: u64,
        every: u64,
        cpu: &CpuRun<'_>,
    ) -> cpu::lorenz::Run<T>;
    /// # Safety
    /// As [`Lorenz96OnDevice::run_on`].
    unsafe fn launch<T: Float>(
        &self,
        gpu: &Gpu,
        stream: &Arc<CudaStream>,
        buffers: &EnsembleDeviceBuffers,
        run: (usize, u64, u64),
    ) -> Result<()>;
    fn pipeline_model(&self) -> crate::api::multi::ensemble::Model<'_>;
}

impl EnsembleParams for Lorenz96Params {
    fn sites(&self) -> usize {
        self.n
    }
    fn validate(&self) -> Result<()> {
        Lorenz96Params::validate(self)
    }
    fn on_cpu<T: Float>(
        &self,
        initial: &[T],
        steps: u64,
        every: u64,
        cpu: &CpuRun<'_>,
    ) -> cpu::lorenz::Run<T> {
        cpu::lorenz::lorenz96(self, initial, steps, every, cpu.threads, cpu.progress)
    }
    unsafe fn launch<T: Float>(
        &self,
        gpu: &Gpu,
        stream: &Arc<CudaStream>,
        buffers: &EnsembleDeviceBuffers,
        (members, steps, every): (usize, u64, u64),
    ) -> Result<()> {
        let op = Lorenz96OnDevice {
            buffers: *buffers,
            members,
            ..Lorenz96OnDevice::<T>::new(*self, steps, every)
        };
        unsafe { op.run_on(gpu, stream) }
    }
    fn pipeline_model(&self) -> crate::api::multi::ensemble::Model<'_> {
        crate::api::multi::ensemble::Model::L96(self)
    }
}

impl EnsembleParams for Lorenz05Params {
    fn sites(&self) -> usize {
        self.n
    }
    fn validate(&self) -> Result<()> {
        Lorenz05Params::validate(self)
    }
    fn on_cpu<T: Float>(
        &self,
        initial: &[T],
        steps: u64,
        every: u64,
        cpu: &CpuRun<'_>,
    ) -> cpu::lorenz::Run<T> {
        cpu::lorenz05::lorenz05(self, initial, steps, every, cpu.threads, cpu.progress)
    }
    unsafe fn launch<T: Float>(
        &self,
        gpu: &Gpu,
        stream: &Arc<CudaStream>,
        buffers: &EnsembleDeviceBuffers,
        (members, steps, every): (usize, u64, u64),
    ) -> Result<()> {
        let op = Lorenz05OnDevice {
            buffers: *buffers,
            members,
            ..Lorenz05OnDevice::<T>::new(*self, steps, every)
        };
        unsafe { op.run_on(gpu, stream) }
    }
    fn pipeline_model(&self) -> crate::api::multi::ensemble::Model<'_> {
        crate::api::multi::ensemble::Model::L05(self)
    }
}

/// The operation: an ensemble run of a Lorenz model from host initial
/// states ([`Kernpack::lorenz96`], [`Kernpack::lorenz05`]). It splits by member.
#[derive(Debug, Clone, Copy)]
pub struct EnsembleRun<'a, P, T> {
    pub params: &'a P,
    /// members x N.
    pub initial: &'a [T],
    pub steps: u64,
    /// Trajectory interval; 0: the final states only.
    pub every: u64,
}

#[allow(private_bounds)]
impl<P: EnsembleParams, T: Float> Operation for EnsembleRun<'_, P, T> {
    type Output = Ensemble<T>;

    fn validate(&self) -> Result<()> {
        let (_, traj_len) =
            check_ensemble(self.params, self.initial.len(), self.steps, self.every)?;
        check_result_room::<T>(self.initial.len(), traj_len)?;
        check_finite(self.initial)
    }

    fn on_cpu(self, cpu: &CpuRun<'_>) -> Result<Ensemble<T>> {
        let run = self
            .params
            .on_cpu(self.initial, self.steps, self.every, cpu);
        Ok(Ensemble {
            members: self.initial.len() / self.params.sites(),
            n: self.params.sites(),
            final_state: run.final_state,
            trajectory: run.trajectory,
            every: self.every,
        })
    }

    fn on_gpu(self, gpu: &Arc<Gpu>) -> Result<Ensemble<T>> {
        let EnsembleRun {
            params,
            initial,
            steps,
            every,
        } = self;
        host_run(
            gpu,
            params,
            initial,
            steps,
            every,
            |stream, buffers, members| {
                // SAFETY: the buffers were just allocated with the checked lengths.
                unsafe { params.launch::<T>(gpu, stream, buffers, (members, steps, every)) }
            },
        )
    }

    fn split(&self) -> Option<Split> {
        let member = self.params.sites() * std::mem::size_of::<T>();
        let frames = if self.every > 0 {
            frame_count(self.steps, self.every)
        } else {
            0
        };
        // Per member: its initial and final states and its trajectory frames.
        let per_member = member.saturating_mul(frames.saturating_add(2));
        let members = self.initial.len() / self.params.sites().max(1);
        Some(Split {
            device_bytes: per_member.saturating_mul(members),
            largest_item_bytes: per_member,
        })
    }

    fn on_pipeline(self, gpus: &MultiGpu) -> Result<Ensemble<T>> {
        let exec = crate::api::multi::Exec::Gpus(gpus);
        let model = self.params.pipeline_model();
        crate::api::multi::ensemble::ensemble(&exec, model, self.initial, self.steps, self.every)
            .map(|(ensemble, _)| ensemble)
    }
}

/// The one validation of an ensemble run: the model's parameters, `len`
/// initial values (members x N), the trajectory interval. Returns the
/// members and the trajectory's length (0 without one).
pub(crate) fn check_ensemble(
    p: &impl EnsembleParams,
    len: usize,
    steps: u64,
    every: u64,
) -> Result<(usize, usize)> {
    p.validate()?;
    let n = p.sites();
    if len == 0 || len % n != 0 {
        return Err(Error::invalid(format!(
            "the initial states hold {len} values: a positive multiple of N = {n} (members x N) is needed"
        )));
    }
    if every > 0 && every > steps {
        return Err(Error::invalid(format!(
            "the trajectory interval every = {every} exceeds steps = {steps} (0 keeps the final state only)"
        )));
    }
    if steps > i64::MAX as u64 {
        return Err(Error::invalid(format!("steps = {steps} is too many")));
    }
    let members = len / n;
    if members > i32::MAX as usize || len > i64::MAX as usize / 8 {
        return Err(Error::invalid(format!(
            "{members} members: at most {}",
            i32::MAX
        )));
    }
    let traj = frame_count(steps, every)
        .checked_mul(len)
        .filter(|t| *t <= i64::MAX as usize / 8)
        .ok_or_else(|| Error::invalid("the trajectory would not fit in memory"))?;
    Ok((members, traj))
}

/// The host can hold a run's results, the final states (`len` values) and
/// the trajectory: probed before the initial values are read, so that a
/// run too large for this host is OutOfMemory at once.
pub(crate) fn check_result_room<T>(len: usize, traj_len: usize) -> Result<()> {
    let what = if traj_len > 0 {
        "the final states and the trajectory"
    } else {
        "the final states"
    };
    check_host_room::<T>(what, len.saturating_add(traj_len))
}

/// Every initial value finite (scanned on threads: ensembles reach gigabytes).
pub(crate) fn check_finite<T: Float>(initial: &[T]) -> Result<()> {
    match cpu::parallel::first_position(cpu::threads(), initial, first_non_finite) {
        Some(at) => Err(Error::invalid(format!(
            "initial state value {at} is {}, all must be finite",
            initial[at]
        ))),
        None => Ok(()),
    }
}

/// N within what one block of the Lorenz 96 kernel holds.
pub(crate) fn check_l96_capacity(n: usize) -> Result<()> {
    if n > L96_CAPACITY {
        return Err(Error::invalid(format!(
            "the Lorenz 96 kernel holds at most {L96_CAPACITY} sites per block, N = {n} (the CPU backend has no limit)"
        )));
    }
    Ok(())
}

/// The one validation of a window sum: an odd weight count, rows of n values
/// every `pitch` ([`window_extent`]) in an input of `x_len` and an output of
/// `out_len` values; host rows (`contiguous`) are exactly rows x n values.
fn check_window(
    w_len: usize,
    rows: usize,
    n: usize,
    pitch: usize,
    (x_len, out_len): (usize, usize),
    contiguous: bool,
) -> Result<()> {
    let need = window_extent(w_len, rows, n, pitch)?;
    if contiguous && x_len != need {
        return Err(Error::invalid(format!(
            "x holds {x_len} values, {rows} rows of {n} were given"
        )));
    }
    let len = x_len.min(out_len);
    if len < need {
        return Err(Error::invalid(format!(
            "{rows} rows of {n} with pitch {pitch} need {need} values, the buffers hold {len}"
        )));
    }
    Ok(())
}

/// The values a window sum of `rows` rows of `n` every `pitch` spans in `x`
/// and `out`, after checking the weight count and the shape.
pub fn window_extent(w_len: usize, rows: usize, n: usize, pitch: usize) -> Result<usize> {
    if w_len % 2 == 0 || w_len > i32::MAX as usize {
        return Err(Error::invalid(format!(
            "the window needs an odd number of weights (L = 2J + 1), got {w_len}"
        )));
    }
    if n == 0 || rows == 0 {
        return Err(Error::invalid(format!(
            "rows ({rows}) and n ({n}) must be > 0"
        )));
    }
    if pitch < n {
        return Err(Error::invalid(format!(
            "the row pitch {pitch} is shorter than a row of {n}"
        )));
    }
    (rows - 1)
        .checked_mul(pitch)
        .and_then(|v| v.checked_add(n))
        .ok_or_else(|| Error::invalid("rows x pitch overflows"))
}

impl Kernpack {
    /// Integrates every member of `initial` (members x N) for `steps` RK4
    /// steps; with `every > 0` also returns the trajectory. Large ensembles
    /// run in chunks of members through pinned staging (the rule in
    /// [`crate::api::exec`]; bitwise the same result, bounded device memory;
    /// the staging is kept for later calls, see [`crate::release_staging`]).
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

    /// As [`Kernpack::lorenz96`], for Lorenz 2005 Model II / III.
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

    /// Periodic weighted window sum of `rows` contiguous rows of `n` values:
    /// `out[r][i] = sum_{m=0}^{L-1} w[m] x[r][(i + J - m) mod n]`, L = 2J + 1.
    pub fn window_sum<T: Float>(&self, x: &[T], w: &[T], rows: usize, n: usize) -> Result<Vec<T>> {
        self.run(WindowSum { x, w, rows, n })
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
        let w_len = w.len();
        let stream = gpu.stream();
        let cuda = |during: &'static str| move |e| Error::cuda(during, e);
        let dx = stream.clone_htod(x).map_err(cuda("copying x"))?;
        let dw = stream.clone_htod(w).map_err(cuda("copying the weights"))?;
        let mut out = stream
            .alloc_zeros::<T>(x.len())
            .map_err(cuda("allocating the output"))?;
        {
            let (x, _x) = dx.device_ptr(stream);
            let (w, _w) = dw.device_ptr(stream);
            let (out, _o) = out.device_ptr_mut(stream);
            let (pitch, dtype) = (n, PhantomData::<T>);
            #[rustfmt::skip]
            let op = WindowSumOnDevice { x, w, w_len, out, rows, n, pitch, dtype };
            // SAFETY: buffers just allocated with the checked lengths.
            unsafe { op.launch(gpu, stream, ()) }?;
        }
        stream
            .clone_dtoh(&out)
            .map_err(cuda("copying the sums back"))
    }
}

/// An ensemble's run on one GPU in one piece, after validation: copy in,
/// run, copy out.
fn host_run<T: Float>(
    gpu: &Gpu,
    p: &impl EnsembleParams,
    initial: &[T],
    steps: u64,
    every: u64,
    launch: impl FnOnce(&Arc<CudaStream>, &EnsembleDeviceBuffers, usize) -> Result<()>,
) -> Result<Ensemble<T>> {
    let (members, traj_len) = check_ensemble(p, initial.len(), steps, every)?; // the counts
    let stream = gpu.stream();
    let cuda = |during: &'static str| move |e| Error::cuda(during, e);
    let d_initial = stream
        .clone_htod(initial)
        .map_err(cuda("copying the initial states"))?;
    let mut d_out = stream
        .alloc_zeros::<T>(initial.len())
        .map_err(cuda("allocating the states"))?;
    let mut d_traj = stream
        .alloc_zeros::<T>(traj_len.max(1))
        .map_err(cuda("allocating the trajectory"))?;
    {
        let (initial_ptr, _i) = d_initial.device_ptr(stream);
        let (out_ptr, _o) = d_out.device_ptr_mut(stream);
        let (traj_ptr, _t) = d_traj.device_ptr_mut(stream);
        let buffers = EnsembleDeviceBuffers {
            initial: initial_ptr,
            out: out_ptr,
            trajectory: (every > 0).then_some(traj_ptr),
        };
        launch(stream, &buffers, members)?;
    }
    let final_state = stream
        .clone_dtoh(&d_out)
        .map_err(cuda("copying the states back"))?;
    let trajectory = if every > 0 {
        Some(
            stream
                .clone_dtoh(&d_traj)
                .map_err(cuda("copying the trajectory back"))?,
        )
    } else {
        None
    };
    Ok(Ensemble {
        members,
        n: p.sites(),
        final_state,
        trajectory,
        every,
    })
}

/// The device descriptions of the two ensemble models, alike but for the
/// kernel knob.
macro_rules! ensemble_on_device {
    ($name:ident, $params:ty, $knob:ident, $knob_doc:literal) => {
        #[doc = concat!("A ", stringify!($params), " ensemble run on device memory ([`Gpu::enqueue`]): ")]
        #[doc = "`buffers.initial` and `buffers.out` hold members x N values,"]
        #[doc = "`buffers.trajectory` (given exactly when `every > 0`) frames x members x N."]
        #[derive(Debug, Clone, Copy)]
        pub struct $name<T> {
            pub p: $params,
            pub buffers: EnsembleDeviceBuffers,
            pub members: usize,
            pub steps: u64,
            pub every: u64,
            #[doc = $knob_doc]
            pub $knob: Option<usize>,
            pub dtype: PhantomData<T>,
        }

        impl<T: Float> $name<T> {
            /// A run of `p` for `steps` steps keeping a frame every `every`
            /// (0: the final state only), the kernel picked, with no
            /// buffers yet (what [`Self::buffers`] takes).
            pub fn new(p: $params, steps: u64, every: u64) -> Self {
                let buffers = EnsembleDeviceBuffers {
                    initial: 0,
                    out: 0,
                    trajectory: None,
                };
                $name {
                    p,
                    buffers,
                    members: 0,
                    steps,
                    every,
                    $knob: None,
                    dtype: PhantomData,
                }
            }

            /// The run on cudarc buffers: the members are `initial`'s
            /// length over N, `out` holds as many values, `trajectory` (with
            /// `every > 0` only) the frames. `call` holds everything else
            /// (its buffers and members are ignored).
            pub fn buffers<'a>(
                stream: &'a Arc<CudaStream>,
                call: &Self,
                initial: &'a impl DevicePtr<T>,
                out: &'a mut impl DevicePtrMut<T>,
                trajectory: Option<&'a mut CudaSlice<T>>,
            ) -> Result<OnBuffers<'a, Self>> {
                let lens = (initial.len(), out.len(), trajectory.as_ref().map(|t| t.len()));
                let members = check_ensemble_lengths(&call.p, call.steps, call.every, lens)?;
                let mut g = Guards::new(stream);
                let buffers = EnsembleDeviceBuffers {
                    initial: g.read(initial),
                    out: g.write(out),
                    trajectory: trajectory.map(|t| g.write(t)),
                };
                Ok(g.with($name {
                    buffers,
                    members,
                    ..*call
                }))
            }
        }

        impl<T: Float> DeviceOperation for $name<T> {
            type Checked = ();

            fn check_shapes(&self) -> Result<()> {
                ensemble_lengths(&self.p, &self.buffers, self.members, self.steps, self.every)
                    .map(drop)
            }

            fn check_memory(&self, gpu: &Gpu) -> Result<()> {
                let (p, b) = (&self.p, &self.buffers);
                let (len, traj_len) = ensemble_lengths(p, b, self.members, self.steps, self.every)?;
                gpu.check_device_array::<T>("initial", b.initial, len)?;
                gpu.check_device_array::<T>("out", b.out, len)?;
                if let Some(trajectory) = b.trajectory {
                    gpu.check_device_array::<T>("trajectory", trajectory, traj_len)?;
                }
                Ok(())
            }

            unsafe fn launch(&self, gpu: &Gpu, stream: &Arc<CudaStream>, _: ()) -> Result<()> {
                unsafe { self.run_on(gpu, stream) }
            }
        }
    };
}

ensemble_on_device!(
    Lorenz96OnDevice,
    Lorenz96Params,
    members_per_block,
    "Members per block, a bench knob (members_per_block x N at most the 2048 sites a \
     block holds); None picks enough blocks to spread small ensembles over every SM."
);
ensemble_on_device!(
    Lorenz05OnDevice,
    Lorenz05Params,
    sites_per_thread,
    "None picks the kernel (a specialised one where it covers `p`); Some(1) the \
     generic kernel; Some(2) or Some(4) a specialised one with that many sites per \
     thread (an error where none covers `p`). A bench and test knob: every choice \
     gives the same result to the tolerance of the tests."
);

impl<T: Float> Lorenz96OnDevice<T> {
    /// The launch, after the checks. A given `members_per_block` must keep
    /// `members_per_block * N <= L96_CAPACITY` (a bench knob).
    ///
    /// # Safety
    /// The buffers hold members x N (trajectory: frames x members x N) values
    /// of `T` on `gpu`, live until the work on `stream` completes; `p` validated.
    unsafe fn run_on(&self, gpu: &Gpu, stream: &Arc<CudaStream>) -> Result<()> {
        let (p, buffers, members) = (&self.p, &self.buffers, self.members);
        let (steps, every, members_per_block) = (self.steps, self.every, self.members_per_block);
        check_l96_capacity(p.n)?;
        let mpb = match members_per_block {
            None => gpu.lorenz96_members_per_block(p.n, members),
            Some(m) if m >= 1 && m * p.n <= L96_CAPACITY => m,
            Some(m) => {
                return Err(Error::invalid(format!(
                    "members_per_block = {m}: 1 to {} for N = {}",
                    L96_CAPACITY / p.n,
                    p.n
                )))
            }
        };
        let kernel = kernels::lorenz96::<T>();
        let traj = buffers.trajectory.unwrap_or(0);
        let (members_arg, n_arg, mpb_arg) = (members as i64, p.n as i32, mpb as i32);
        let (steps_arg, every_arg) = (steps as i64, if traj == 0 { 0 } else { every as i64 });
        let args = (
            In::new(buffers.initial),
            Out::new(buffers.out),
            Out::new(traj),
            members_arg,
            n_arg,
            mpb_arg,
            p.forcing,
            p.dt,
            steps_arg,
            every_arg,
        );
        let grid = members.div_ceil(mpb).min(i32::MAX as usize) as u32;
        unsafe { gpu.launch(&kernel, LaunchConfig::grid(grid), stream, args) }
    }
}

impl<T: Float> Lorenz05OnDevice<T> {
    /// The launch, after the checks: one block per member.
    ///
    /// # Safety
    /// As [`Lorenz96OnDevice::run_on`].
    unsafe fn run_on(&self, gpu: &Gpu, stream: &Arc<CudaStream>) -> Result<()> {
        let (p, buffers, members) = (&self.p, &self.buffers, self.members);
        let (steps, every, sites_per_thread) = (self.steps, self.every, self.sites_per_thread);
        let plan = gpu.lorenz05_plan::<T>(p, sites_per_thread)?;
        let traj = buffers.trajectory.unwrap_or(0);
        let members_arg = members as i64;
        let n_arg = p.n as i32;
        let (steps_arg, every_arg) = (steps as i64, if traj == 0 { 0 } else { every as i64 });
        let grid = members.min(i32::MAX as usize) as u32;
        let (z0, out, traj) = (
            In::new(buffers.initial),
            Out::new(buffers.out),
            Out::new(traj),
        );
        // Both kernels take (z0, out, traj, members, n, <model>, F, b, c, dt,
        // steps, every); <model> is the weights by value for a specialised
        // kernel, (K, J, model, alpha, beta) for the generic one.
        if plan.sites_per_thread > 1 {
            // has_fixed_kernel: J of a compiled pair, L05_FIXED_WEIGHTS weights.
            let kernel = kernels::lorenz05_k32j12::<T>(plan.sites_per_thread);
            debug_assert_eq!(kernel.name(), plan.name);
            let (_, _, w) = model3_weights(p.j);
            let weights = FixedWeights::<T, L05_FIXED_WEIGHTS> {
                w: std::array::from_fn(|m| T::from_f64(w[m])),
            };
            let args = (
                z0,
                out,
                traj,
                members_arg,
                n_arg,
                weights,
                p.forcing,
                p.b,
                p.c,
                p.dt,
                steps_arg,
                every_arg,
            );
            let config = LaunchConfig::grid(grid).shared(plan.shared as u32);
            return unsafe { gpu.launch(&kernel, config, stream, args) };
        }
        let (alpha, beta) = match p.model {
            Lorenz05Model::III => {
                let (a, b, _) = model3_weights(p.j);
                (a, b)
            }
            Lorenz05Model::II => (0.0, 0.0),
        };
        let (k_arg, j_arg, model_arg) = (p.k as i32, p.j as i32, p.model.number());
        let kernel = kernels::lorenz05::<T>();
        debug_assert_eq!(kernel.name(), plan.name);
        let args = (
            z0,
            out,
            traj,
            members_arg,
            n_arg,
            k_arg,
            j_arg,
            model_arg,
            alpha,
            beta,
            p.forcing,
            p.b,
            p.c,
            p.dt,
            steps_arg,
            every_arg,
        );
        let config = LaunchConfig::grid(grid).shared(plan.shared as u32);
        unsafe { gpu.launch(&kernel, config, stream, args) }
    }
}

/// A device run's lengths from its counts: members x N (`members` too many
/// is refused) and the trajectory's, with a trajectory buffer exactly when
/// `every > 0`.
fn ensemble_lengths(
    p: &impl EnsembleParams,
    buffers: &EnsembleDeviceBuffers,
    members: usize,
    steps: u64,
    every: u64,
) -> Result<(usize, usize)> {
    let len = members
        .checked_mul(p.sites())
        .ok_or_else(|| Error::invalid(format!("{members} members is too many")))?;
    let (_, traj_len) = check_ensemble(p, len, steps, every)?;
    match (buffers.trajectory, every) {
        (Some(_), 0) => Err(Error::invalid(
            "a trajectory buffer was given but every = 0",
        )),
        (None, e) if e > 0 => Err(Error::invalid("every > 0 needs a trajectory buffer")),
        _ => Ok((len, traj_len)),
    }
}

/// The lengths of a run's cudarc buffers (initial, out, trajectory) against
/// its shape; returns the members.
fn check_ensemble_lengths(
    p: &impl EnsembleParams,
    steps: u64,
    every: u64,
    (initial, out, trajectory): (usize, usize, Option<usize>),
) -> Result<usize> {
    let (members, traj_len) = check_ensemble(p, initial, steps, every)?;
    if out != initial {
        return Err(Error::invalid(format!(
            "out holds {out} values, the initial states {initial}"
        )));
    }
    match (trajectory, every) {
        (None, 0) => Ok(members),
        (Some(t), e) if e > 0 && t == traj_len => Ok(members),
        (Some(t), e) if e > 0 => Err(Error::invalid(format!(
            "the trajectory buffer holds {t} values, {traj_len} are written"
        ))),
        (Some(_), _) => Err(Error::invalid(
            "a trajectory buffer was given but every = 0",
        )),
        (None, _) => Err(Error::invalid("every > 0 needs a trajectory buffer")),
    }
}

/// Window sums on device memory ([`Gpu::enqueue`]): row r of `x` and `out`
/// starts at `r * pitch` (both hold [`window_extent`] values, apart: the
/// kernel reads whole rows of `x` while it writes `out`), `w` holds `w_len`
/// weights.
#[derive(Debug, Clone, Copy)]
pub struct WindowSumOnDevice<T> {
    pub x: CUdeviceptr,
    pub w: CUdeviceptr,
    pub w_len: usize,
    pub out: CUdeviceptr,
    pub rows: usize,
    pub n: usize,
    pub pitch: usize,
    pub dtype: PhantomData<T>,
}

impl<T: Float> WindowSumOnDevice<T> {
    /// Window sums of cudarc buffers, `rows` rows of `n` every `pitch`:
    /// `x` and `out` hold at least their extent.
    pub fn buffers<'a>(
        stream: &'a Arc<CudaStream>,
        x: &'a impl DevicePtr<T>,
        w: &'a impl DevicePtr<T>,
        out: &'a mut impl DevicePtrMut<T>,
        rows: usize,
        n: usize,
        pitch: usize,
    ) -> Result<OnBuffers<'a, Self>> {
        check_window(w.len(), rows, n, pitch, (x.len(), out.len()), false)?;
        let mut g = Guards::new(stream);
        let op = WindowSumOnDevice {
            x: g.read(x),
            w: g.read(w),
            w_len: w.len(),
            out: g.write(out),
            rows,
            n,
            pitch,
            dtype: PhantomData,
        };
        Ok(g.with(op))
    }
}

impl<T: Float> DeviceOperation for WindowSumOnDevice<T> {
    type Checked = ();

    fn check_shapes(&self) -> Result<()> {
        window_extent(self.w_len, self.rows, self.n, self.pitch).map(drop)
    }

    fn check_memory(&self, gpu: &Gpu) -> Result<()> {
        let need = window_extent(self.w_len, self.rows, self.n, self.pitch)?;
        check_disjoint::<T>(self.x, need, self.out, need)?;
        gpu.check_device_array::<T>("x", self.x, need)?;
        gpu.check_device_array::<T>("w", self.w, self.w_len)?;
        gpu.check_device_array::<T>("out", self.out, need)
    }

    unsafe fn launch(&self, gpu: &Gpu, stream: &Arc<CudaStream>, _: ()) -> Result<()> {
        let window_sum = kernels::window_sum::<T>();
        let (rows, n) = (self.rows, self.n);
        let args = (
            In::new(self.x),
            In::new(self.w),
            self.w_len as i32,
            Out::new(self.out),
            rows as i64,
            n as i64,
            self.pitch as i64,
        );
        let kernel = gpu.kernel(&window_sum)?;
        let grid = kernel.grid_for((rows * n) as u64, kernel.block as u64);
        unsafe { gpu.launch(&window_sum, LaunchConfig::grid(grid), stream, args) }
    }
}

impl Gpu {
    /// The kernel for validated `p`: `sites_per_thread` None picks a
    /// specialised one when it covers `p` (see
    /// [`Lorenz05Params::has_fixed_kernel`]), the generic one otherwise;
    /// Some(1) forces the generic kernel, Some(P) the specialised one with P
    /// sites per thread (a bench and test knob). An error when this GPU's
    /// shared memory cannot hold a member of the generic kernel.
    fn lorenz05_plan<T: Float>(
        &self,
        p: &Lorenz05Params,
        sites_per_thread: Option<usize>,
    ) -> Result<L05Plan> {
        let fixed = |sites: usize| L05Plan {
            name: format!("lorenz05_k{}j{}_p{sites}_{}", p.k, p.j, T::NAME),
            sites_per_thread: sites,
            shared: 0,
        };
        match sites_per_thread {
            None if p.has_fixed_kernel() => return Ok(fixed(L05_SITES_PER_THREAD[0])),
            None | Some(1) => {}
            Some(sites) if L05_SITES_PER_THREAD.contains(&sites) => {
                if !p.has_fixed_kernel() {
                    return Err(Error::invalid(format!(
                        "sites_per_thread = {sites} needs the specialised Model III kernel: \
                         (K, J) one of {L05_FIXED_KJ:?} and N <= {L05_FIXED_SITES}, got {:?} K = {}, J = {}, N = {}",
                        p.model, p.k, p.j, p.n
                    )));
                }
                return Ok(fixed(sites));
            }
            Some(sites) => {
                return Err(Error::invalid(format!(
                "sites_per_thread = {sites}: 1 (generic kernel) or one of {L05_SITES_PER_THREAD:?}"
            )))
            }
        }
        let need = p.shared_bytes::<T>();
        // What the kernel was allowed at load: the opt-in maximum less its static shared memory.
        let limit = self.kernel(&kernels::lorenz05::<T>())?.max_dynamic_shared as usize;
        if need > limit {
            return Err(Error::invalid(format!(
                "N = {} needs {need} bytes of shared memory per member ({}), this GPU allows {limit}",
                p.n,
                T::NAME
            )));
        }
        Ok(L05Plan {
            name: format!("lorenz05_{}", T::NAME),
            sites_per_thread: 1,
            shared: need,
        })
    }

    /// Members per block of the Lorenz 96 kernel: a block holds up to
    /// `L96_CAPACITY` sites; enough blocks to spread small ensembles over
    /// every SM (two resident blocks each), as many members as fit otherwise.
    pub(crate) fn lorenz96_members_per_block(&self, n: usize, members: usize) -> usize {
        let fit = (L96_CAPACITY / n).max(1);
        members.div_ceil(2 * self.sm_count() as usize).clamp(1, fit)
    }
}

/// Sites one Lorenz 96 block holds: `L96_POINTS * L96_BLOCK` of csrc/lorenz.cu.
pub const L96_CAPACITY: usize = 8 * 256;

/// Most sites of a specialised Model III kernel: `L05_FIXED_SITES` of csrc/lorenz.cu.
pub const L05_FIXED_SITES: usize = 1024;
/// The (K, J) pairs with specialised Model III kernels (csrc/lorenz.cu
/// `KP_LORENZ05_FIXED` lines): DART's defaults.
pub const L05_FIXED_KJ: &[(usize, usize)] = &[(32, 12)];
/// Sites per thread of the specialised kernels, the first the default: 4
/// loads the fewest shared values per site ((2J + P) / P for the smoothing);
/// 2 keeps twice the warps per member, for a bench to compare.
pub const L05_SITES_PER_THREAD: &[usize] = &[4, 2];

/// 2J + 1 of the compiled pairs: every pair so far has J = 12 (a second J
/// needs a launch per weight count).
const L05_FIXED_WEIGHTS: usize = 25;
const _: () = assert!(L05_FIXED_KJ.len() == 1 && 2 * L05_FIXED_KJ[0].1 + 1 == L05_FIXED_WEIGHTS);

/// The kernel that runs a Lorenz 2005 ensemble.
#[derive(Debug, Clone, PartialEq, Eq)]
struct L05Plan {
    name: String,
    /// 1: the generic kernel; 2 or 4: a specialised one.
    sites_per_thread: usize,
    /// Dynamic shared memory per block.
    shared: usize,
}
