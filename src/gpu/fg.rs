//! The F/G system's device description and its plan (csrc/fg.cu).
use std::sync::Arc;

use cudarc::driver::sys::CUdeviceptr;
use cudarc::driver::{CudaStream, DevicePtrMut};

use super::device::{check_disjoint, DeviceOperation, Guards, OnBuffers};
use super::kernels;
use super::launch::{In, LaunchConfig, Out};
use super::{scratch, Gpu, Kernel};
use crate::error::{Error, Result};
use crate::float::{Complex, Float};
use crate::params::fg::{FgOptions, FgPath, CHUNK};

/// The one validation of an F/G call: N, dt, delta0, nsteps, and the
/// lengths in `T` values of the F and G buffers (2 N*N each, interleaved re,
/// im) and of delta (2 (nsteps + 1)). Returns N*N. Host values are checked
/// by the host operation's validation (device data cannot be inspected without a synchronisation).
pub(crate) fn check_call<T: Float>(
    n: usize,
    delta0: Complex<T>,
    dt: T,
    nsteps: usize,
    (f_len, g_len, delta_len): (usize, usize, usize),
) -> Result<usize> {
    if n == 0 {
        return Err(Error::invalid("N is 0: F and G must be at least 1 x 1"));
    }
    let elements = n
        .checked_mul(n)
        .filter(|m| m.checked_mul(4 * std::mem::size_of::<T>()).is_some())
        .ok_or_else(|| Error::invalid(format!("N = {n} is too large")))?;
    if !dt.to_f64().is_finite() {
        return Err(Error::invalid(format!("dt is {dt}: it must be finite")));
    }
    if !(delta0.re.to_f64().is_finite() && delta0.im.to_f64().is_finite()) {
        return Err(Error::invalid(format!(
            "delta0 is ({}, {}): it must be finite",
            delta0.re, delta0.im
        )));
    }
    if nsteps >= isize::MAX as usize / (2 * std::mem::size_of::<T>()) {
        return Err(Error::invalid(format!(
            "nsteps = {nsteps}: the delta history would not fit in memory"
        )));
    }
    for (name, len) in [("F", f_len), ("G", g_len)] {
        if len != 2 * elements {
            return Err(Error::invalid(format!(
                "{name} holds {len} values: 2 N*N = {} expected (interleaved re, im)",
                2 * elements
            )));
        }
    }
    if delta_len != 2 * (nsteps + 1) {
        return Err(Error::invalid(format!(
            "delta holds {delta_len} values: 2 (nsteps + 1) = {} expected",
            2 * (nsteps + 1)
        )));
    }
    Ok(elements)
}

/// How a GPU runs one problem: the path, and for the cooperative one the
/// chunks per block (K) and the blocks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FgPlan {
    Cooperative { chunks_per_block: u32, blocks: u32 },
    Launches { blocks: u32 },
}

/// Chunks per block the cooperative kernels exist for (csrc/fg.cu).
const COOPERATIVE_K: [u32; 3] = [1, 2, 4];

fn cooperative_kernel<T: Float>(gpu: &Gpu, k: u32) -> Result<&Kernel> {
    gpu.kernel(&kernels::fg_cooperative::<T>(k))
}

/// The F/G run on device memory, in place ([`Gpu::enqueue`]): `f`, `g`
/// hold N*N complex values as interleaved (re, im) `T` (2 N*N values each)
/// and receive the final state; `delta` (2 (nsteps + 1) values) receives
/// delta[0..=nsteps]. The three buffers must be apart (each is written).
/// The device data is not inspected: non-finite values propagate into the
/// results.
#[derive(Debug, Clone, Copy)]
pub struct FgOnDevice<T> {
    pub n: usize,
    pub f: CUdeviceptr,
    pub g: CUdeviceptr,
    pub delta0: Complex<T>,
    pub dt: T,
    pub nsteps: usize,
    pub delta: CUdeviceptr,
    pub opts: FgOptions,
}

impl<T: Float> FgOnDevice<T> {
    /// A run of `nsteps` steps of `dt` from `delta0` on N = `n`, with no
    /// buffers yet (what [`FgOnDevice::buffers`] takes).
    pub fn new(n: usize, delta0: Complex<T>, dt: T, nsteps: usize, opts: FgOptions) -> Self {
        let (f, g, delta) = (0, 0, 0);
        FgOnDevice {
            n,
            f,
            g,
            delta0,
            dt,
            nsteps,
            delta,
            opts,
        }
    }

    /// The run on cudarc buffers; `call` holds everything but the buffers
    /// (its addresses are ignored: [`FgOnDevice::new`] makes one).
    pub fn buffers<'a>(
        stream: &'a Arc<CudaStream>,
        call: &FgOnDevice<T>,
        f: &'a mut impl DevicePtrMut<T>,
        g: &'a mut impl DevicePtrMut<T>,
        delta: &'a mut impl DevicePtrMut<T>,
    ) -> Result<OnBuffers<'a, Self>> {
        let lengths = (f.len(), g.len(), delta.len());
        check_call(call.n, call.delta0, call.dt, call.nsteps, lengths)?;
        let mut guards = Guards::new(stream);
        let op = FgOnDevice {
            f: guards.write(f),
            g: guards.write(g),
            delta: guards.write(delta),
            ..*call
        };
        Ok(guards.with(op))
    }

    /// The lengths of F, G (2 N*N each) and delta (2 (nsteps + 1)), saturated.
    fn lengths(&self) -> (usize, usize, usize) {
        let state_len = self.n.saturating_mul(self.n).saturating_mul(2);
        let delta_len = self.nsteps.saturating_add(1).saturating_mul(2);
        (state_len, state_len, delta_len)
    }
}

impl<T: Float> DeviceOperation for FgOnDevice<T> {
    type Checked = ();

    fn check_shapes(&self) -> Result<()> {
        check_call(self.n, self.delta0, self.dt, self.nsteps, self.lengths()).map(drop)
    }

    fn check_memory(&self, gpu: &Gpu) -> Result<()> {
        let (state_len, _, delta_len) = self.lengths();
        let (f, g, delta) = (self.f, self.g, self.delta);
        check_disjoint::<T>(f, state_len, g, state_len)?;
        check_disjoint::<T>(f, state_len, delta, delta_len)?;
        check_disjoint::<T>(g, state_len, delta, delta_len)?;
        gpu.check_device_array::<T>("f", f, state_len)?;
        gpu.check_device_array::<T>("g", g, state_len)?;
        gpu.check_device_array::<T>("delta", delta, delta_len)
    }

    unsafe fn launch(&self, gpu: &Gpu, stream: &Arc<CudaStream>, _: ()) -> Result<()> {
        let FgOnDevice {
            n,
            f,
            g,
            delta0,
            dt,
            nsteps,
            delta,
            ref opts,
        } = *self;
        let elements = n * n;
        let plan = gpu.fg_plan::<T>(elements, opts)?;
        let chunks = elements.div_ceil(CHUNK) as i64;
        // Chunk sums: two halves for the cooperative path (double buffered).
        let mut partials = unsafe { scratch::<f64>(stream, 2 * 2 * chunks as usize) }?;
        let (p_ptr, _p) = partials.device_ptr_mut(stream);
        let (f, g, history) = (Out::new(f), Out::new(g), Out::new(delta));
        let (n_arg, steps_arg) = (elements as i64, nsteps as i64);
        let (dt_arg, d0_re, d0_im) = (dt.to_f64(), delta0.re.to_f64(), delta0.im.to_f64());
        match plan {
            FgPlan::Cooperative {
                chunks_per_block,
                blocks,
            } => {
                let kernel = kernels::fg_cooperative::<T>(chunks_per_block);
                let args = (
                    f,
                    g,
                    n_arg,
                    chunks,
                    steps_arg,
                    dt_arg,
                    d0_re,
                    d0_im,
                    history,
                    Out::new(p_ptr),
                );
                unsafe { gpu.launch(&kernel, LaunchConfig::cooperative(blocks), stream, args) }
            }
            FgPlan::Launches { blocks } => {
                let step = kernels::fg_step::<T>();
                let finish = kernels::fg_finish::<T>();
                // nsteps = 0: one step launch over no chunks writes delta[0].
                let (last, step_chunks) = if nsteps == 0 {
                    (1, 0)
                } else {
                    (nsteps as i64, chunks)
                };
                for s in 0..last {
                    let args = (
                        f,
                        g,
                        n_arg,
                        step_chunks,
                        s,
                        dt_arg,
                        d0_re,
                        d0_im,
                        history,
                        Out::new(p_ptr),
                    );
                    unsafe { gpu.launch(&step, LaunchConfig::grid(blocks), stream, args) }?;
                    if nsteps > 0 {
                        let args = (In::new(p_ptr), chunks, s, history);
                        unsafe { gpu.launch(&finish, LaunchConfig::grid(1), stream, args) }?;
                    }
                }
                Ok(())
            }
        }
    }
}

impl Gpu {
    /// The path this GPU takes for N*N = `elements` with `opts`, or why the
    /// requested path is unavailable.
    pub fn fg_plan<T: Float>(&self, elements: usize, opts: &FgOptions) -> Result<FgPlan> {
        let chunks = elements.div_ceil(CHUNK).max(1) as u64;
        let mut cooperative = None;
        if self.cooperative_launch() {
            for k in COOPERATIVE_K {
                let resident = cooperative_kernel::<T>(self, k)?.full_grid as u64;
                if resident * k as u64 >= chunks {
                    cooperative = Some(FgPlan::Cooperative {
                        chunks_per_block: k,
                        blocks: chunks.div_ceil(k as u64) as u32,
                    });
                    break;
                }
            }
        }
        let step = self.kernel(&kernels::fg_step::<T>())?;
        let launches = FgPlan::Launches {
            blocks: step.grid_for(chunks, 1),
        };
        match (opts.path, cooperative) {
            (FgPath::Auto, Some(plan)) | (FgPath::Cooperative, Some(plan)) => Ok(plan),
            (FgPath::Auto, None) | (FgPath::Launches, _) => Ok(launches),
            (FgPath::Cooperative, None) => Err(Error::invalid(if self.cooperative_launch() {
                format!(
                    "the cooperative F/G path keeps at most {} x {} elements in registers on this GPU; \
                     {elements} need the launches path",
                    COOPERATIVE_K[COOPERATIVE_K.len() - 1],
                    cooperative_kernel::<T>(self, COOPERATIVE_K[COOPERATIVE_K.len() - 1])?.full_grid
                        as usize
                        * CHUNK
                )
            } else {
                "this GPU does not support cooperative launch".to_owned()
            })),
        }
    }
}
