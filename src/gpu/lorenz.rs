//! The Lorenz models' device descriptions (csrc/lorenz.cu): the ensemble
//! runs of Lorenz 96 and Lorenz 2005, the window sum, and their checks.
use std::marker::PhantomData;
use std::sync::Arc;

use cudarc::driver::sys::CUdeviceptr;
use cudarc::driver::{CudaSlice, CudaStream, DevicePtr, DevicePtrMut};

use super::device::{check_disjoint, DeviceOperation, Guards, OnBuffers};
use super::kernels;
use super::launch::{In, LaunchConfig, Out};
use super::{Gpu, L96Run};
use crate::error::{Error, Result};
use crate::float::Float;
use crate::params::lorenz::{
    model3_weights, EnsembleDeviceBuffers, FixedWeights, Lorenz05Model, Lorenz05Params,
    Lorenz96Params, MemberParams,
};
use crate::params::save_at::{check_save_at, segments, Frames};

/// The step and the forcing of either model.
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

/// The largest [`Lorenz96Params::step_offset`]: with at most 2^62 steps a
/// run (below), a step's index in the noise draws stays within the
/// kernels' int64.
const MAX_STEP_OFFSET: u64 = 1 << 62;

impl Lorenz96Params {
    /// N >= 4: the stencil reads sites k-2, k-1, k, k+1, which must be distinct.
    pub fn validate(&self) -> Result<()> {
        if self.n < 4 || self.n > i32::MAX as usize / 2 {
            return Err(Error::invalid(format!(
                "Lorenz 96 needs N >= 4 sites (the stencil spans k-2..k+1), got N = {}",
                self.n
            )));
        }
        if !(self.noise.is_finite() && self.noise >= 0.0) {
            return Err(Error::invalid(format!(
                "the noise's standard deviation must be finite and >= 0, not {}",
                self.noise
            )));
        }
        if self.step_offset > MAX_STEP_OFFSET {
            return Err(Error::invalid(format!(
                "step_offset = {} is too large (at most 2^62)",
                self.step_offset
            )));
        }
        // A forcing in the state is checked with the states (finite, as every value).
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

/// What the device path needs of an ensemble's model: its checks, and its
/// device description on given buffers.
pub(crate) trait EnsembleModel: Copy + Sync {
    type OnDevice<T: Float>: DeviceOperation<Checked = ()>;
    /// Values per member in a state: N (2N for a Lorenz 96 forcing held
    /// in the state).
    fn values_per_member(&self) -> usize;
    fn validate(&self) -> Result<()>;
    /// What the model's kernel cannot run (beyond [`EnsembleModel::validate`]),
    /// checked before the pipeline's first chunk.
    fn check_kernel(&self) -> Result<()>;
    /// The per-member parameters a run gives (`lengths`: the values of
    /// each) for `members` members: Lorenz 2005 takes F, b and c, one value
    /// per member each; Lorenz 96 none.
    fn check_each(&self, lengths: &MemberParams<usize>, members: usize) -> Result<()>;
    /// The run of `members` members on `buffers` with the per-member
    /// parameters at `each`, the first of them member `first_member` of the
    /// ensemble, the kernel picked; frames every `every` steps or at the
    /// steps of `save_at`.
    fn on_device<T: Float>(
        self,
        buffers: EnsembleDeviceBuffers,
        each: MemberParams<CUdeviceptr>,
        members: (usize, usize),
        steps: u64,
        frames: (u64, &[u64]),
    ) -> Self::OnDevice<T>;
}

/// The one validation of an ensemble run: the model's parameters, `len`
/// initial values (members x N), the trajectory interval `every` or the
/// saved steps `save_at` (sorted, unique, in 0..=steps; not both). Returns
/// the members and the trajectory's length (0 without one).
pub(crate) fn check_ensemble(
    p: &impl EnsembleModel,
    len: usize,
    steps: u64,
    (every, save_at): (u64, &[u64]),
) -> Result<(usize, usize)> {
    p.validate()?;
    let n = p.values_per_member();
    if len == 0 || len % n != 0 {
        return Err(Error::invalid(format!(
            "the initial states hold {len} values: a positive multiple of {n} (members x {n} values per member) is needed"
        )));
    }
    if every > 0 && every > steps {
        return Err(Error::invalid(format!(
            "the trajectory interval every = {every} exceeds steps = {steps} (0 keeps the final state only)"
        )));
    }
    if every > 0 && !save_at.is_empty() {
        return Err(Error::invalid(format!(
            "give either a trajectory interval (every = {every}) or the steps to save (save_at), not both"
        )));
    }
    // With a step offset of at most 2^62 too, step indices stay in int64.
    if steps > MAX_STEP_OFFSET {
        return Err(Error::invalid(format!("steps = {steps} is too many")));
    }
    check_save_at(save_at, steps)?;
    let members = len / n;
    if members > i32::MAX as usize || len > i64::MAX as usize / 8 {
        return Err(Error::invalid(format!(
            "{members} members: at most {}",
            i32::MAX
        )));
    }
    let traj = Frames::of(every, save_at)
        .count(steps)
        .checked_mul(len)
        .filter(|t| *t <= i64::MAX as usize / 8)
        .ok_or_else(|| Error::invalid("the trajectory would not fit in memory"))?;
    Ok((members, traj))
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
pub(crate) fn check_window(
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

/// The device descriptions of the two ensemble models, alike but for the
/// kernel knob.
macro_rules! ensemble_on_device {
    ($name:ident, $params:ty, $knob:ident, $knob_doc:literal, $check_kernel:expr, $check_each:expr) => {
        #[doc = concat!("A ", stringify!($params), " ensemble run on device memory ([`Gpu::enqueue`]): ")]
        #[doc = "`buffers.initial` and `buffers.out` hold members x N values,"]
        #[doc = "`buffers.trajectory` (given exactly when `every > 0` or `save_at` is not empty)"]
        #[doc = "frames x members x N. With `save_at` (host data, held here) the run is one"]
        #[doc = "launch per segment between saved steps, each writing its frame (the next"]
        #[doc = "segment's input), and a copy of the last frame to `out` when it is the last step."]
        #[derive(Debug, Clone)]
        pub struct $name<T> {
            pub p: $params,
            pub buffers: EnsembleDeviceBuffers,
            /// Per-member parameters (device addresses of `members` values
            /// of `T` each; Lorenz 2005's F, b, c), none by default.
            pub each: MemberParams<CUdeviceptr>,
            pub members: usize,
            pub steps: u64,
            /// Trajectory interval (0: none).
            pub every: u64,
            /// The steps whose states are the frames: sorted, unique, each
            /// in 0..=steps; empty for none. Not with `every > 0`.
            pub save_at: Vec<u64>,
            #[doc = $knob_doc]
            pub $knob: Option<usize>,
            /// The index of `buffers`' first member in the whole ensemble
            /// (0 for a whole ensemble): the member index of Lorenz 96's
            /// noise draws, so that a run in chunks draws as one run.
            pub first_member: usize,
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
                    each: MemberParams::default(),
                    members: 0,
                    steps,
                    every,
                    save_at: Vec::new(),
                    $knob: None,
                    first_member: 0,
                    dtype: PhantomData,
                }
            }

            /// A run of `p` for `steps` steps keeping the states after the
            /// steps of `save_at` (sorted, unique, each in 0..=steps), as
            /// [`Self::new`].
            pub fn new_save_at(p: $params, steps: u64, save_at: &[u64]) -> Self {
                $name {
                    save_at: save_at.to_vec(),
                    ..Self::new(p, steps, 0)
                }
            }

            /// The run on cudarc buffers: the members are `initial`'s
            /// length over N, `out` holds as many values, `trajectory` (with
            /// `every > 0` or a non-empty `save_at` only) the frames. `call`
            /// holds everything else (its buffers and members are ignored),
            /// the per-member addresses `each` included (arrays the caller
            /// keeps alive until the run completes).
            pub fn buffers<'a>(
                stream: &'a Arc<CudaStream>,
                call: &Self,
                initial: &'a impl DevicePtr<T>,
                out: &'a mut impl DevicePtrMut<T>,
                trajectory: Option<&'a mut CudaSlice<T>>,
            ) -> Result<OnBuffers<'a, Self>> {
                let lens = (initial.len(), out.len(), trajectory.as_ref().map(|t| t.len()));
                let frames = (call.every, &call.save_at[..]);
                let members = check_ensemble_lengths(&call.p, call.steps, frames, lens)?;
                let mut g = Guards::new(stream);
                let buffers = EnsembleDeviceBuffers {
                    initial: g.read(initial),
                    out: g.write(out),
                    trajectory: trajectory.map(|t| g.write(t)),
                };
                Ok(g.with($name {
                    buffers,
                    members,
                    ..call.clone()
                }))
            }
        }

        impl<T: Float> DeviceOperation for $name<T> {
            type Checked = ();

            fn check_shapes(&self) -> Result<()> {
                let frames = (self.every, &self.save_at[..]);
                ensemble_lengths(&self.p, &self.buffers, self.members, self.steps, frames)?;
                self.p.check_each(&self.each.map(|_| self.members), self.members)
            }

            fn check_memory(&self, gpu: &Gpu) -> Result<()> {
                let (p, b) = (&self.p, &self.buffers);
                let frames = (self.every, &self.save_at[..]);
                let (len, traj_len) = ensemble_lengths(p, b, self.members, self.steps, frames)?;
                p.check_each(&self.each.map(|_| self.members), self.members)?;
                gpu.check_device_array::<T>("initial", b.initial, len)?;
                gpu.check_device_array::<T>("out", b.out, len)?;
                if let Some(trajectory) = b.trajectory {
                    gpu.check_device_array::<T>("trajectory", trajectory, traj_len)?;
                    if !self.save_at.is_empty() {
                        // Segments read frames back and the last one is
                        // copied to `out`: the frames must be apart.
                        check_disjoint::<T>(b.initial, len, trajectory, traj_len)?;
                        check_disjoint::<T>(b.out, len, trajectory, traj_len)?;
                    }
                }
                for (name, at) in self.each.named() {
                    if let Some(at) = at {
                        gpu.check_device_array::<T>(name, *at, self.members)?;
                    }
                }
                Ok(())
            }

            unsafe fn launch(&self, gpu: &Gpu, stream: &Arc<CudaStream>, _: ()) -> Result<()> {
                let b = &self.buffers;
                if self.save_at.is_empty() {
                    let whole = Segment {
                        initial: b.initial,
                        out: b.out,
                        trajectory: b.trajectory.unwrap_or(0),
                        steps: self.steps,
                        every: if b.trajectory.is_some() { self.every } else { 0 },
                        first_step: 0,
                    };
                    return unsafe { self.run_on(gpu, stream, whole) };
                }
                let len = self.members * self.p.values_per_member();
                let plan = (b, len * std::mem::size_of::<T>(), self.steps, &self.save_at[..]);
                // SAFETY: as this function's contract; every segment's
                // buffers lie in the checked ones.
                let launch = |segment| unsafe { self.run_on(gpu, stream, segment) };
                unsafe { run_segments(plan, stream, launch) }
            }
        }

        impl EnsembleModel for $params {
            type OnDevice<T: Float> = $name<T>;

            fn values_per_member(&self) -> usize {
                <$params>::values_per_member(self)
            }

            fn validate(&self) -> Result<()> {
                <$params>::validate(self)
            }

            fn check_kernel(&self) -> Result<()> {
                $check_kernel(self)
            }

            fn check_each(&self, lengths: &MemberParams<usize>, members: usize) -> Result<()> {
                $check_each(self, lengths, members)
            }

            fn on_device<T: Float>(
                self,
                buffers: EnsembleDeviceBuffers,
                each: MemberParams<CUdeviceptr>,
                (first_member, members): (usize, usize),
                steps: u64,
                (every, save_at): (u64, &[u64]),
            ) -> $name<T> {
                $name {
                    buffers,
                    each,
                    members,
                    first_member,
                    save_at: save_at.to_vec(),
                    ..$name::new(self, steps, every)
                }
            }
        }
    };
}

/// One launch of an ensemble kernel: `steps` steps from `initial` to
/// `out`, a frame every `every` steps to `trajectory` (0: none), the noise
/// drawn from step `first_step` of the run on.
#[derive(Debug, Clone, Copy)]
struct Segment {
    initial: CUdeviceptr,
    out: CUdeviceptr,
    trajectory: CUdeviceptr,
    steps: u64,
    every: u64,
    first_step: u64,
}

/// A run that saves the states after the steps of `save_at` (checked, not
/// empty; `b.trajectory` holds one frame of `frame_bytes` per saved step),
/// as one `launch` per segment ([`segments`]): each from the previous
/// segment's frame (the first from `b.initial`) to its own frame, or to
/// `b.out` for a last segment past the last saved step; when the last saved
/// step is the last step, its frame is copied to `b.out`.
///
/// # Safety
/// As [`DeviceOperation::launch`]: the buffers checked for the run.
unsafe fn run_segments(
    (b, frame_bytes, steps, save_at): (&EnsembleDeviceBuffers, usize, u64, &[u64]),
    stream: &Arc<CudaStream>,
    mut launch: impl FnMut(Segment) -> Result<()>,
) -> Result<()> {
    let saved = b
        .trajectory
        .ok_or_else(|| Error::invalid("save_at needs a trajectory buffer"))?;
    let (mut input, mut first_step, mut last) = (b.initial, 0, None);
    for segment in segments(save_at, steps) {
        let out = match segment.frame {
            Some(k) => saved + (k * frame_bytes) as u64,
            None => b.out,
        };
        launch(Segment {
            initial: input,
            out,
            trajectory: 0,
            steps: segment.steps,
            every: 0,
            first_step,
        })?;
        first_step += segment.steps;
        (input, last) = (out, segment.frame.map(|_| out));
    }
    if let Some(frame) = last {
        // SAFETY: both spans checked against the driver's record; a frame
        // and `out` are apart.
        unsafe {
            cudarc::driver::result::memcpy_dtod_async(b.out, frame, frame_bytes, stream.cu_stream())
        }
        .map_err(|e| Error::cuda("copying the last saved state to out", e))?;
    }
    Ok(())
}

ensemble_on_device!(
    Lorenz96OnDevice,
    Lorenz96Params,
    members_per_block,
    "Members per block of the block kernel, a bench knob (members_per_block x N at \
     most the 2048 sites a block holds). None runs the lane kernel where N is a power \
     of two (up to 32) times 2..=10, 12 or 16 (N = 40: 4 lanes of 10 sites), else the \
     block kernel with enough blocks to spread small ensembles over every SM.",
    |p: &Lorenz96Params| check_l96_capacity(p.n),
    |_: &Lorenz96Params, lengths: &MemberParams<usize>, _| match lengths.any() {
        false => Ok(()),
        true => Err(Error::invalid(
            "Lorenz 96 takes no per-member F, b or c: its per-member (and per-site) forcing is \
             the forcing held in the state (forcing_in_state)",
        )),
    }
);
ensemble_on_device!(
    Lorenz05OnDevice,
    Lorenz05Params,
    sites_per_thread,
    "None picks the kernel (a specialised one where it covers `p`); Some(1) the \
     generic kernel; Some(2) or Some(4) a specialised one with that many sites per \
     thread (an error where none covers `p`). A bench and test knob: every choice \
     gives the same result to the tolerance of the tests.",
    |_: &Lorenz05Params| Ok(()),
    |_: &Lorenz05Params, lengths: &MemberParams<usize>, members| check_member_lengths(
        lengths, members
    )
);

/// Each per-member parameter given holds one value per member.
pub(crate) fn check_member_lengths(lengths: &MemberParams<usize>, members: usize) -> Result<()> {
    for (name, len) in lengths.named() {
        if let Some(&len) = len {
            if len != members {
                return Err(Error::invalid(format!(
                    "{name} per member holds {len} values, the ensemble has {members} members"
                )));
            }
        }
    }
    Ok(())
}

impl<T: Float> Lorenz96OnDevice<T> {
    /// The launch, after the checks. A given `members_per_block` must keep
    /// `members_per_block * N <= L96_CAPACITY` (a bench knob).
    ///
    /// # Safety
    /// The segment's buffers hold members x N (trajectory: frames x members
    /// x N) values of `T` on `gpu`, live until the work on `stream`
    /// completes; `p` validated.
    unsafe fn run_on(&self, gpu: &Gpu, stream: &Arc<CudaStream>, segment: Segment) -> Result<()> {
        let (p, members) = (&self.p, self.members);
        check_l96_capacity(p.n)?;
        let traj = segment.trajectory;
        let run = L96Run {
            forcing: p.forcing,
            dt: p.dt,
            noise: p.noise_per_step(),
            seed: p.seed,
            first_member: (p.member_offset + self.first_member as u64) as i64,
            steps: segment.steps as i64,
            every: if traj == 0 { 0 } else { segment.every as i64 },
            first_step: (p.step_offset + segment.first_step) as i64,
            n: p.n as i32,
            forced: p.forcing_in_state.into(),
        };
        let states = (
            In::new(segment.initial),
            Out::new(segment.out),
            Out::new(traj),
        );
        let (z0, out, traj) = states;
        if let (None, Some((lanes, sites))) = (self.members_per_block, l96_lanes(p.n)) {
            let kernel = kernels::lorenz96_lanes::<T>(sites);
            let threads = members.div_ceil(32 / lanes) * 32;
            let grid = threads.div_ceil(L96_LANES_BLOCK).min(i32::MAX as usize) as u32;
            let args = (z0, out, traj, members as i64, lanes as i32, run);
            return unsafe { gpu.launch(&kernel, LaunchConfig::grid(grid), stream, args) };
        }
        let mpb = match self.members_per_block {
            // Enough blocks to spread small ensembles over every SM (two
            // resident blocks each), as many members as fit otherwise.
            None => members
                .div_ceil(2 * gpu.sm_count() as usize)
                .clamp(1, (L96_CAPACITY / p.n).max(1)),
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
        let args = (z0, out, traj, members as i64, mpb as i32, run);
        let grid = members.div_ceil(mpb).min(i32::MAX as usize) as u32;
        unsafe { gpu.launch(&kernel, LaunchConfig::grid(grid), stream, args) }
    }
}

impl<T: Float> Lorenz05OnDevice<T> {
    /// The launch, after the checks: one block per member, on the kernel
    /// [`fixed_sites`] picks.
    ///
    /// # Safety
    /// As [`Lorenz96OnDevice::run_on`].
    unsafe fn run_on(&self, gpu: &Gpu, stream: &Arc<CudaStream>, segment: Segment) -> Result<()> {
        let (p, members) = (&self.p, self.members);
        let (steps, every) = (segment.steps, segment.every);
        let fixed = fixed_sites(p, self.sites_per_thread)?;
        let traj = segment.trajectory;
        let members_arg = members as i64;
        let n_arg = p.n as i32;
        let (steps_arg, every_arg) = (steps as i64, if traj == 0 { 0 } else { every as i64 });
        let config = LaunchConfig::grid(members.min(i32::MAX as usize) as u32);
        let (z0, out, traj) = (
            In::new(segment.initial),
            Out::new(segment.out),
            Out::new(traj),
        );
        // Per member: the address of its values, NULL for the scalar.
        let each = self.each.map(In::<T>::new);
        let [fe, be, ce] = [each.forcing, each.b, each.c].map(|e| e.unwrap_or(In::null()));
        // Both kernels take (z0, out, traj, members, n, <model>, F, b, c,
        // F, b, c per member, dt, steps, every); <model> is the weights by
        // value for a specialised kernel, (K, J, model, alpha, beta) for the
        // generic one.
        if let Some(sites) = fixed {
            // has_fixed_kernel: J of a compiled pair, L05_FIXED_WEIGHTS weights.
            let kernel = kernels::lorenz05_k32j12::<T>(sites);
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
                fe,
                be,
                ce,
                p.dt,
                steps_arg,
                every_arg,
            );
            return unsafe { gpu.launch(&kernel, config, stream, args) };
        }
        let kernel = kernels::lorenz05::<T>();
        let need = p.shared_bytes::<T>();
        // What the kernel was allowed at load: the opt-in maximum less its static shared memory.
        let limit = gpu.kernel(&kernel)?.max_dynamic_shared as usize;
        if need > limit {
            return Err(Error::invalid(format!(
                "N = {} needs {need} bytes of shared memory per member ({}), this GPU allows {limit}",
                p.n,
                T::NAME
            )));
        }
        let (alpha, beta) = match p.model {
            Lorenz05Model::III => {
                let (a, b, _) = model3_weights(p.j);
                (a, b)
            }
            Lorenz05Model::II => (0.0, 0.0),
        };
        let (k_arg, j_arg, model_arg) = (p.k as i32, p.j as i32, p.model.number());
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
            fe,
            be,
            ce,
            p.dt,
            steps_arg,
            every_arg,
        );
        let config = config.shared(need as u32);
        unsafe { gpu.launch(&kernel, config, stream, args) }
    }
}

/// The sites per thread of the specialised kernel that runs validated `p`,
/// None for the generic kernel: `sites_per_thread` None picks a specialised
/// one when it covers `p` (see [`Lorenz05Params::has_fixed_kernel`]), the
/// generic one otherwise; Some(1) forces the generic kernel, Some(P) the
/// specialised one with P sites per thread (a bench and test knob).
fn fixed_sites(p: &Lorenz05Params, sites_per_thread: Option<usize>) -> Result<Option<usize>> {
    match sites_per_thread {
        None if p.has_fixed_kernel() => Ok(Some(L05_SITES_PER_THREAD[0])),
        None | Some(1) => Ok(None),
        Some(sites) if L05_SITES_PER_THREAD.contains(&sites) => {
            if !p.has_fixed_kernel() {
                return Err(Error::invalid(format!(
                    "sites_per_thread = {sites} needs the specialised Model III kernel: \
                     (K, J) one of {L05_FIXED_KJ:?} and N <= {L05_FIXED_SITES}, got {:?} K = {}, J = {}, N = {}",
                    p.model, p.k, p.j, p.n
                )));
            }
            Ok(Some(sites))
        }
        Some(sites) => Err(Error::invalid(format!(
            "sites_per_thread = {sites}: 1 (generic kernel) or one of {L05_SITES_PER_THREAD:?}"
        ))),
    }
}

/// A device run's lengths from its counts: members x N (`members` too many
/// is refused) and the trajectory's, with a trajectory buffer exactly when
/// `every > 0` or `save_at` is not empty.
fn ensemble_lengths(
    p: &impl EnsembleModel,
    buffers: &EnsembleDeviceBuffers,
    members: usize,
    steps: u64,
    frames: (u64, &[u64]),
) -> Result<(usize, usize)> {
    let len = members
        .checked_mul(p.values_per_member())
        .ok_or_else(|| Error::invalid(format!("{members} members is too many")))?;
    let (_, traj_len) = check_ensemble(p, len, steps, frames)?;
    check_trajectory(buffers.trajectory.map(|_| traj_len), frames, traj_len)?;
    Ok((len, traj_len))
}

/// The lengths of a run's cudarc buffers (initial, out, trajectory) against
/// its shape; returns the members.
fn check_ensemble_lengths(
    p: &impl EnsembleModel,
    steps: u64,
    frames: (u64, &[u64]),
    (initial, out, trajectory): (usize, usize, Option<usize>),
) -> Result<usize> {
    let (members, traj_len) = check_ensemble(p, initial, steps, frames)?;
    if out != initial {
        return Err(Error::invalid(format!(
            "out holds {out} values, the initial states {initial}"
        )));
    }
    check_trajectory(trajectory, frames, traj_len).map(|()| members)
}

/// A trajectory buffer of `given` values (None: none given) where a run
/// writes `traj_len`: given exactly when `every > 0` or `save_at` is not
/// empty, and that long.
fn check_trajectory(
    given: Option<usize>,
    (every, save_at): (u64, &[u64]),
    traj_len: usize,
) -> Result<()> {
    let wanted = every > 0 || !save_at.is_empty();
    match (given, wanted) {
        (None, false) => Ok(()),
        (Some(t), true) if t == traj_len => Ok(()),
        (Some(t), true) => Err(Error::invalid(format!(
            "the trajectory buffer holds {t} values, {traj_len} are written"
        ))),
        (Some(_), false) => Err(Error::invalid(
            "a trajectory buffer was given but every = 0 and save_at is empty",
        )),
        (None, true) => Err(Error::invalid(
            "every > 0 or a non-empty save_at needs a trajectory buffer",
        )),
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

/// Lorenz 96's tangent linear model on device memory: `initial` and `out`
/// hold members x N states, `v0` and `v` members x K x N perturbations (K =
/// `k`); `v` receives the perturbations propagated by the derivative of the
/// `steps` RK4 steps, `out` the states. Runs on the lane kernels' layouts
/// only (N a power of two up to 32 times 2..=10, 12 or 16); the forcing in
/// the state is not supported.
#[derive(Debug, Clone, Copy)]
pub struct Lorenz96TangentOnDevice<T> {
    pub p: Lorenz96Params,
    pub initial: CUdeviceptr,
    pub out: CUdeviceptr,
    pub v0: CUdeviceptr,
    pub v: CUdeviceptr,
    pub members: usize,
    pub k: usize,
    pub steps: u64,
    pub dtype: PhantomData<T>,
}

/// The one check of a tangent run's parameters and counts.
pub(crate) fn check_tangent(
    p: &Lorenz96Params,
    members: usize,
    k: usize,
    steps: u64,
) -> Result<()> {
    p.validate()?;
    if p.forcing_in_state {
        return Err(Error::invalid(
            "the tangent linear model takes the forcing as a parameter: forcing_in_state must be off",
        ));
    }
    if members == 0 || k == 0 {
        return Err(Error::invalid(format!(
            "a tangent run needs members and perturbations, got {members} members x {k} perturbations"
        )));
    }
    let groups = members.checked_mul(k).filter(|g| {
        g.checked_mul(p.n)
            .is_some_and(|v| v <= i64::MAX as usize / 8)
    });
    if groups.is_none() || k > i32::MAX as usize || steps > MAX_STEP_OFFSET {
        return Err(Error::invalid(format!(
            "{members} members x {k} perturbations x N = {} (or steps = {steps}) is too large",
            p.n
        )));
    }
    Ok(())
}

impl<T: Float> DeviceOperation for Lorenz96TangentOnDevice<T> {
    type Checked = ();

    fn check_shapes(&self) -> Result<()> {
        check_tangent(&self.p, self.members, self.k, self.steps)?;
        match l96_lanes(self.p.n) {
            Some(_) => Ok(()),
            None => Err(Error::invalid(format!(
                "the GPU tangent linear model runs N = a power of two (up to 32) times 2..=10, 12 or 16; \
                 N = {} runs on the CPU backend",
                self.p.n
            ))),
        }
    }

    fn check_memory(&self, gpu: &Gpu) -> Result<()> {
        let states = self.members * self.p.n;
        let vectors = states * self.k;
        check_disjoint::<T>(self.initial, states, self.out, states)?;
        check_disjoint::<T>(self.v0, vectors, self.v, vectors)?;
        check_disjoint::<T>(self.out, states, self.v, vectors)?;
        gpu.check_device_array::<T>("initial", self.initial, states)?;
        gpu.check_device_array::<T>("out", self.out, states)?;
        gpu.check_device_array::<T>("perturbations", self.v0, vectors)?;
        gpu.check_device_array::<T>("perturbations out", self.v, vectors)
    }

    unsafe fn launch(&self, gpu: &Gpu, stream: &Arc<CudaStream>, _: ()) -> Result<()> {
        let (p, members, k) = (&self.p, self.members, self.k);
        let (lanes, sites) = l96_lanes(p.n).expect("checked by check_shapes");
        let run = L96Run {
            forcing: p.forcing,
            dt: p.dt,
            noise: p.noise_per_step(),
            seed: p.seed,
            first_member: p.member_offset as i64,
            steps: self.steps as i64,
            every: 0,
            first_step: p.step_offset as i64,
            n: p.n as i32,
            forced: 0,
        };
        let kernel = kernels::lorenz96_tangent::<T>(sites);
        let threads = (members * k).div_ceil(32 / lanes) * 32;
        let grid = threads.div_ceil(L96_LANES_BLOCK).min(i32::MAX as usize) as u32;
        let args = (
            In::new(self.initial),
            Out::new(self.out),
            In::new(self.v0),
            Out::new(self.v),
            k as i32,
            members as i64,
            lanes as i32,
            run,
        );
        unsafe { gpu.launch(&kernel, LaunchConfig::grid(grid), stream, args) }
    }
}

/// Threads per block of the Lorenz 96 lane kernels (`L96_LANES_BLOCK` of csrc/lorenz.cu).
const L96_LANES_BLOCK: usize = 128;

/// The lane layout of a Lorenz 96 member of `n` sites: (lanes, sites per
/// lane) with `lanes` a power of two up to a warp and as many sites per lane
/// as a lane kernel takes (fewer shuffles per site), or None where no lane
/// kernel fits `n` (the block kernel runs).
pub(crate) fn l96_lanes(n: usize) -> Option<(usize, usize)> {
    [1, 2, 4, 8, 16, 32]
        .into_iter()
        .filter(|lanes| n % lanes == 0)
        .map(|lanes| (lanes, n / lanes))
        .find(|(_, sites)| kernels::L96_SITES_PER_LANE.contains(sites))
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
