//! Several GPUs of one host in one call, and batches larger than a GPU's
//! memory.
//!
//! A [`MultiGpu`] holds GPUs (each the shared [`Gpu`] of its ordinal). Its
//! host-slice calls ([`MultiGpu::lombscargle_batch`], [`MultiGpu::lorenz96`],
//! [`MultiGpu::lorenz05`], [`MultiGpu::lorenz63`], [`MultiGpu::lorenz63_adaptive`],
//! [`MultiGpu::normalize_batched`]) do three things:
//!
//! 1. **Split** the items (series, members, arrays) into one contiguous
//!    range per GPU, balanced by work ([`plan::split_by_work`]): samples x
//!    frequencies per series, elements per array, members for an ensemble
//!    (all members cost the same). The GPUs are taken to be alike.
//! 2. **Chunk** each range so that it fits the GPU's memory limit
//!    ([`MultiGpuOptions::max_device_bytes`], by default
//!    [`DEFAULT_FREE_FRACTION`] of the GPU's free memory when the call
//!    starts): a chunk's bytes are counted exactly from the buffers it needs
//!    (inputs, outputs and the kernels' scratch, laid out in one arena,
//!    [`plan::Arena`]), and a chunk may take at most half the limit, since
//!    two are in flight ([`plan::plan_chunks`]). Chunks also aim at
//!    [`MultiGpuOptions::chunk_bytes`], so that copies overlap kernels even
//!    when everything would fit at once.
//! 3. **Pipeline** the chunks of each GPU on one host thread
//!    (`std::thread::scope`, one thread per GPU), with two buffer sets, each
//!    a device arena and its pinned host mirror, and one stream per set:
//!    chunk k runs on set k mod 2. Per chunk: pack the inputs into the pinned
//!    mirror, one asynchronous copy in, the kernels, one asynchronous copy
//!    out, all on the set's stream. While chunk k runs on one stream, the
//!    host reads back chunk k - 1 and packs chunk k + 1 for the other, whose
//!    copy in overlaps chunk k's kernels (and its kernels can start while
//!    chunk k's last blocks drain). Why two streams rather than one stream
//!    and events: a set is reused only by its own stream, so stream order
//!    alone keeps chunk k + 2 from overwriting chunk k's buffers, and the
//!    one host-side wait per chunk (the set's stream, before its staging is
//!    read back and refilled) is all the synchronisation there is. The
//!    buffer sets are kept for the next call on the GPU (at most four per
//!    GPU, two calls' worth; [`MultiGpu::release_staging`] frees them), so
//!    that a stream of calls pins its staging once. Calls on one GPU from
//!    several threads take turns for their kernels
//!    (`Gpu::in_kernel_turn`), while their packing and copies overlap.
//!
//! Results come back in input order. They are bitwise equal to a one-GPU
//! run on the same GPU model: each series (member, array) is computed by the
//! same kernel with the same per-item arithmetic whatever else is in its
//! launch. What was checked in csrc/ for that:
//! - Lomb-Scargle (`lombscargle_prepare_*`, `lombscargle_uniform_*`): one
//!   block reduces one series' statistics with a block-size stride that does
//!   not depend on the grid; the uniform kernel's work units are (series,
//!   frequency chunk) pairs taken in grid-stride order, and each unit's sums
//!   run over the series' own samples, in tile order, from zeroed registers
//!   and shared totals, with the series' own `nx` in the finish. The grid
//!   size (which depends on the number of series in the launch) only decides
//!   which block takes a unit. Offsets are rebased per chunk and grids
//!   sliced, which moves pointers, not arithmetic.
//! - Lorenz 96: a block packs `mpb` members (chosen from the member count)
//!   as one flat range of points, but each point's stencil reads only its
//!   own member's sites, so the packing does not touch a value. Lorenz 2005:
//!   one member per block (grid-strided). The trajectory's frame stride is
//!   the launch's member count, which the gather here undoes.
//! - Lorenz 63 (`lorenz63_rk4_*`): one member per thread (grid-strided), its
//!   state and its own sigma, rho, beta in registers; a chunk's per-member
//!   parameters are its slice of the caller's, packed beside its states, and
//!   its saved frames are gathered as Lorenz 96's trajectory. The adaptive
//!   run (`lorenz63_dopri5_*`) likewise: each member's steps, time and step
//!   size are its own, and the save times its chunk reads are a copy packed
//!   in its arena; its members' accepted and rejected steps and statuses
//!   (members x 3 `u32`) are gathered with their states. Its members are
//!   split by count, as the others, although their steps differ: the cost
//!   of a member is not known before it runs.
//! - Batched normalise: each array is cut into the pieces of a lone array of
//!   its length (`split(n)` in csrc/reduce_batched.cu) and its sum is
//!   reduced in that fixed order, so it has the same bits in any batch.
//!
//! Errors: inputs are validated once, on the host, before any GPU work
//! (as the one-GPU calls validate them); a chunk plan that cannot fit (one
//! item larger than half the limit) is an error before any GPU work too. An
//! error on a GPU stops the other GPUs at their next chunk and is returned
//! with the GPU's ordinal in its message (the variant, and for
//! [`Error::Cuda`] the driver's code, are kept). Nothing is written to the
//! caller's buffers on failure: [`MultiGpu::normalize_batched`] gathers into
//! a scratch copy and writes `x` only once every GPU has succeeded.
pub mod plan;

pub(crate) mod bls;
pub(crate) mod chi2;
#[cfg(test)]
mod emulated;
pub(crate) mod ensemble;
pub(crate) mod lombscargle;
pub(crate) mod multiband;
pub(crate) mod normalize;
#[cfg(test)]
mod one_gpu_as_two;
pub(crate) mod phasefold;
pub(crate) mod rows;
#[cfg(test)]
mod test_data;

use std::ops::Range;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use cudarc::driver::result as cu;
use cudarc::driver::sys::CUdeviceptr;
use cudarc::driver::{CudaEvent, CudaSlice, CudaStream, DevicePtr, PinnedHostSlice};

use self::plan::{arena_bytes, plan_chunks, ChunkBudget};
use super::exec::Split;
use super::streams::elapsed_ms;
use super::Kernpack;
use crate::error::{Error, Result};
use crate::gpu::Gpu;

/// The share of a GPU's free memory (`cuMemGetInfo` when a call starts) that
/// a call may use when [`MultiGpuOptions::max_device_bytes`] is not set.
pub const DEFAULT_FREE_FRACTION: f64 = 0.8;

pub use crate::params::DEFAULT_CHUNK_BYTES;

/// Limits of a multi-GPU call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MultiGpuOptions {
    /// Device memory one call may allocate on each GPU, in bytes (both
    /// buffer sets together; the loaded module and other work are not
    /// counted). None: [`DEFAULT_FREE_FRACTION`] of the GPU's free memory
    /// when the call starts.
    pub max_device_bytes: Option<usize>,
    /// The size a chunk grows to before the next starts (clamped to half the
    /// limit). Smaller chunks overlap copies and kernels sooner; larger ones
    /// launch less often. Also bounds the pinned host staging: two chunks per GPU.
    pub chunk_bytes: usize,
}

impl Default for MultiGpuOptions {
    fn default() -> Self {
        MultiGpuOptions {
            max_device_bytes: None,
            chunk_bytes: DEFAULT_CHUNK_BYTES,
        }
    }
}

/// Several GPUs of one host, used together by one call.
#[derive(Clone)]
pub struct MultiGpu {
    gpus: Vec<Arc<Gpu>>,
    options: MultiGpuOptions,
}

impl std::fmt::Debug for MultiGpu {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MultiGpu")
            .field("ordinals", &self.ordinals())
            .field("options", &self.options)
            .finish()
    }
}

/// What one GPU does in one call: its items, their chunks, and the memory.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct GpuPlan {
    pub ordinal: usize,
    /// The items (series, members, arrays) of this GPU, in input order.
    pub items: Range<usize>,
    /// Their chunks, in order.
    pub chunks: Vec<Range<usize>>,
    /// The limit applied on this GPU.
    pub max_device_bytes: usize,
    /// Bytes of the two buffer sets' device arenas (the call's device
    /// memory on this GPU; their sum is at most `max_device_bytes`).
    pub arena_bytes: [usize; 2],
}

impl GpuPlan {
    /// Items `r` of this GPU counted from its first.
    fn local(&self, r: &Range<usize>) -> Range<usize> {
        r.start - self.items.start..r.end - self.items.start
    }
}

/// `out` cut into one slice per plan, in order, `len(items)` values for
/// each: the plans' items are contiguous and in order (empty ranges have no
/// plan), so each GPU writes its own slice of a result in place.
pub(crate) fn per_gpu<'o, T>(
    out: &'o mut [T],
    plans: &[GpuPlan],
    len: impl Fn(&Range<usize>) -> usize,
) -> Vec<&'o mut [T]> {
    let mut rest = out;
    let slices = plans
        .iter()
        .map(|p| {
            let (mine, tail) = std::mem::take(&mut rest).split_at_mut(len(&p.items));
            rest = tail;
            mine
        })
        .collect();
    debug_assert!(rest.is_empty(), "the plans cover every item");
    slices
}

/// How `items` items of `job` split, for the one-GPU rule of
/// [`super::exec`]: the bytes of the arena of all of them in one piece, and
/// of item `largest` alone. None without items.
pub(crate) fn split_of<J: ChunkJob>(job: &J, items: usize, largest: usize) -> Option<Split> {
    let bytes = |r: Range<usize>| job.layout(r, 0).1.total;
    (items > 0).then(|| Split {
        device_bytes: bytes(0..items),
        largest_item_bytes: bytes(largest..largest + 1),
    })
}

/// The longest item of CSR `offsets` (series, arrays).
pub(crate) fn longest(offsets: &[usize]) -> usize {
    let len = |&i: &usize| offsets[i + 1] - offsets[i];
    let items = offsets.len().saturating_sub(1);
    (0..items).max_by_key(len).unwrap_or(0)
}

/// How one GPU's part of a call went: its plan, and where the time went.
/// GPU times are sums over chunks of CUDA-event intervals on the two
/// streams, which overlap: their total can exceed the wall time.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct GpuProfile {
    pub plan: GpuPlan,
    /// From each chunk's copy in (host pinned staging to device) to its
    /// kernels' start, ms: the copy, and the wait for the kernels enqueued
    /// before them on the GPU (the previous chunk's, or another call's when
    /// calls share the GPU), which the kernels queue behind.
    pub h2d_ms: f64,
    /// Kernels, ms.
    pub kernel_ms: f64,
    /// Copies out, ms.
    pub d2h_ms: f64,
    /// Host time packing inputs into and reading results out of the staging, ms.
    pub host_ms: f64,
    /// Wall time of this GPU's thread, allocation included, ms.
    pub wall_ms: f64,
}

/// Where a chunk's copies start and end within its arena.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Regions {
    /// Bytes of the arena.
    pub total: usize,
    /// Copied in before the kernels.
    pub h2d: Range<usize>,
    /// Copied out after them.
    pub d2h: Range<usize>,
}

impl Regions {
    /// Bytes of the pinned mirror the chunk needs: up to the end of the last
    /// byte copied either way. Scratch laid out after the copied buffers
    /// (the periodograms that batched peaks reduce on the device) is not
    /// mirrored, so it is not pinned.
    pub fn staging(&self) -> usize {
        self.h2d.end.max(self.d2h.end)
    }
}

/// One kind of chunked work (a kernel family's batch): how a chunk of items
/// is laid out in an arena, packed into the pinned mirror, and launched.
/// Reading results back is the caller's closure (it holds the outputs).
pub(crate) trait ChunkJob: Sync {
    /// The chunk's buffers in its arena, as its kernels' device description
    /// takes them.
    type Layout: Copy;
    /// What the items are called in messages ("series", ...).
    const WHAT: &'static str;
    /// The layout of chunk `r` (global item indices) in an arena at device
    /// address `base`; at `base` 0 its addresses are byte offsets, as the
    /// pinned mirror ([`put`], [`get`]) takes them. O(1), since the planner
    /// calls it for every item.
    fn layout(&self, r: Range<usize>, base: CUdeviceptr) -> (Self::Layout, Regions);
    /// Writes the chunk's inputs into `host` (its arena's pinned mirror,
    /// `layout` at base 0).
    fn pack(&self, r: &Range<usize>, layout: &Self::Layout, host: &mut [u8]);
    /// Enqueues the kernels of the chunk on `stream`, `layout` at its arena's address.
    ///
    /// # Safety
    /// The arena is a live device allocation of this GPU of at least the
    /// layout's `total` bytes, with the inputs copied in before on `stream`.
    unsafe fn launch(
        &self,
        gpu: &Gpu,
        stream: &Arc<CudaStream>,
        r: &Range<usize>,
        layout: &Self::Layout,
    ) -> Result<()>;
    /// What [`ChunkJob::launch`] computes, by CPU code (the backend or the reference), on an
    /// arena in host memory (unit tests without a GPU).
    #[cfg(test)]
    fn emulate(&self, r: &Range<usize>, layout: &Self::Layout, arena: &mut [u8]);
}

/// Arena offsets are multiples of [`plan::ARENA_ALIGN`], and the arenas are
/// page-aligned pinned memory in the pipeline: a view of `T` there is aligned.
fn assert_aligned<T>(bytes: &[u8]) {
    assert_eq!(
        bytes.as_ptr() as usize % std::mem::align_of::<T>(),
        0,
        "arena offsets are aligned"
    );
}

/// `values` written at byte `at` of `host` (a pinned mirror).
pub(crate) fn put<T: Copy + Send + Sync>(host: &mut [u8], at: u64, values: &[T]) {
    let at = at as usize;
    let bytes = &mut host[at..at + std::mem::size_of_val(values)];
    assert_aligned::<T>(bytes);
    // SAFETY: in bounds and aligned (asserted); the bytes are plain staging
    // memory, overwritten whole with values of T.
    let dst =
        unsafe { std::slice::from_raw_parts_mut(bytes.as_mut_ptr().cast::<T>(), values.len()) };
    crate::cpu::copy_parallel(crate::cpu::copy_threads(), dst, values);
}

/// `offsets` rebased to start at 0, as `i64`, written at byte `at` of
/// `host`: a chunk's offsets into its own samples (values).
pub(crate) fn put_offsets(host: &mut [u8], at: u64, offsets: &[usize]) {
    let at = at as usize;
    let dst = &mut host[at..at + offsets.len() * std::mem::size_of::<i64>()];
    for (d, &o) in dst.chunks_exact_mut(8).zip(offsets) {
        d.copy_from_slice(&((o - offsets[0]) as i64).to_ne_bytes());
    }
}

/// The `len` values of `T` at byte `at` of `host`.
pub(crate) fn get<T: Copy>(host: &[u8], at: u64, len: usize) -> &[T] {
    let at = at as usize;
    let bytes = &host[at..at + len * std::mem::size_of::<T>()];
    assert_aligned::<T>(bytes);
    // SAFETY: in bounds and aligned (asserted); T is plain data, any bits valid.
    unsafe { std::slice::from_raw_parts(bytes.as_ptr().cast::<T>(), len) }
}

/// `e` with the GPU's ordinal in its message; the variant (and the driver
/// error of a CUDA failure) are kept.
pub(crate) fn on_gpu(ordinal: usize, e: Error) -> Error {
    match e {
        Error::InvalidInput(m) => Error::InvalidInput(format!("GPU {ordinal}: {m}")),
        Error::NoGpu(m) => Error::NoGpu(format!("GPU {ordinal}: {m}")),
        Error::Cuda { during, source } => Error::Cuda {
            during: format!("{during} on GPU {ordinal}"),
            source,
        },
        Error::OutOfMemory(m) => Error::OutOfMemory(format!("GPU {ordinal}: {m}")),
    }
}

impl MultiGpu {
    /// The GPUs of `ordinals`, in that order (the first takes the first
    /// items). Each must exist; none may be listed twice.
    pub fn new(ordinals: &[usize]) -> Result<MultiGpu> {
        if ordinals.is_empty() {
            return Err(Error::invalid("a MultiGpu needs at least one GPU ordinal"));
        }
        for (i, o) in ordinals.iter().enumerate() {
            if ordinals[..i].contains(o) {
                return Err(Error::invalid(format!("GPU {o} is listed twice")));
            }
        }
        let gpus = ordinals
            .iter()
            .map(|&o| Gpu::get(o).map_err(|e| on_gpu(o, e)))
            .collect::<Result<Vec<_>>>()?;
        Ok(MultiGpu {
            gpus,
            options: MultiGpuOptions::default(),
        })
    }

    /// A handle over GPUs already open (at least one, none twice).
    pub(crate) fn of(gpus: Vec<Arc<Gpu>>) -> MultiGpu {
        debug_assert!(!gpus.is_empty());
        MultiGpu {
            gpus,
            options: MultiGpuOptions::default(),
        }
    }

    /// Every GPU of the host, ordinals 0 to [`Gpu::device_count`] - 1;
    /// [`Error::NoGpu`] when there is none.
    pub fn all() -> Result<MultiGpu> {
        match Gpu::device_count() {
            0 => Err(Error::NoGpu("no CUDA device is present".into())),
            n => MultiGpu::new(&(0..n).collect::<Vec<_>>()),
        }
    }

    /// These options for the calls of this handle.
    pub fn with_options(mut self, options: MultiGpuOptions) -> Self {
        self.options = options;
        self
    }

    /// At most `bytes` of device memory per GPU and call.
    pub fn with_max_device_bytes(mut self, bytes: usize) -> Self {
        self.options.max_device_bytes = Some(bytes);
        self
    }

    pub fn options(&self) -> &MultiGpuOptions {
        &self.options
    }

    pub fn gpus(&self) -> &[Arc<Gpu>] {
        &self.gpus
    }

    pub fn ordinals(&self) -> Vec<usize> {
        self.gpus.iter().map(|g| g.ordinal()).collect()
    }

    pub fn len(&self) -> usize {
        self.gpus.len()
    }

    pub fn is_empty(&self) -> bool {
        self.gpus.is_empty()
    }

    /// The limit of one GPU for a call starting now.
    fn limit(&self, gpu: &Gpu) -> Result<usize> {
        if let Some(bytes) = self.options.max_device_bytes {
            return Ok(bytes);
        }
        let (free, _total) = gpu
            .context()
            .mem_get_info()
            .map_err(|e| Error::cuda("reading the free device memory", e))?;
        Ok((free as f64 * DEFAULT_FREE_FRACTION) as usize)
    }
}

/// Where a call's chunks run: the GPUs of a handle or, in unit tests, the
/// CPU code (the backend or the reference) standing in for the kernels (with the same split, chunks,
/// arenas, packing, copies between a host and a "device" buffer, and gather),
/// so that everything but the kernels is tested without a GPU.
pub(crate) enum Exec<'m> {
    Gpus(&'m MultiGpu),
    #[cfg(test)]
    Emulated {
        /// Stand-in GPUs, ordinals 0 to parts - 1.
        parts: usize,
        /// The limit of every stand-in GPU.
        max_device_bytes: usize,
        chunk_bytes: usize,
    },
}

impl Exec<'_> {
    /// How many GPUs share the items.
    fn parts(&self) -> usize {
        match self {
            Exec::Gpus(multi) => multi.len(),
            #[cfg(test)]
            Exec::Emulated { parts, .. } => *parts,
        }
    }

    /// The plan of a call over `ranges` (one per GPU, in GPU order): the
    /// chunks of every GPU with items. Errors name the GPU.
    fn plan<J: ChunkJob>(&self, job: &J, ranges: Vec<Range<usize>>) -> Result<Vec<GpuPlan>> {
        debug_assert_eq!(ranges.len(), self.parts());
        let bytes = |r: Range<usize>| job.layout(r, 0).1.total;
        let mut plans = Vec::new();
        for (k, items) in ranges.into_iter().enumerate() {
            if items.is_empty() {
                continue;
            }
            let (ordinal, max_device_bytes, chunk_bytes) = match self {
                Exec::Gpus(multi) => {
                    let gpu = &multi.gpus[k];
                    let limit = multi.limit(gpu).map_err(|e| on_gpu(gpu.ordinal(), e))?;
                    (gpu.ordinal(), limit, multi.options.chunk_bytes)
                }
                #[cfg(test)]
                Exec::Emulated {
                    max_device_bytes,
                    chunk_bytes,
                    ..
                } => (k, *max_device_bytes, *chunk_bytes),
            };
            let budget = ChunkBudget::new(max_device_bytes, chunk_bytes);
            let chunks = plan_chunks(items.clone(), budget, J::WHAT, bytes)
                .map_err(|e| on_gpu(ordinal, e))?;
            let arena_bytes = arena_bytes(&chunks, bytes);
            plans.push(GpuPlan {
                ordinal,
                items,
                chunks,
                max_device_bytes,
                arena_bytes,
            });
        }
        Ok(plans)
    }

    /// Runs `plans` (one thread per GPU), each GPU's results read back by
    /// `unpack` into its own `outs` entry: `unpack(out, chunk, local, layout,
    /// staging)`, `local` the chunk's items counted from the GPU's first (its
    /// place in `out`, see [`per_gpu`]). The first error in GPU order wins.
    fn run<J, O, U>(
        &self,
        job: &J,
        plans: &[GpuPlan],
        outs: Vec<O>,
        unpack: U,
    ) -> Result<Vec<GpuProfile>>
    where
        J: ChunkJob,
        O: Send,
        U: Fn(&mut O, &Range<usize>, Range<usize>, &J::Layout, &[u8]) -> Result<()> + Sync,
    {
        assert_eq!(plans.len(), outs.len());
        // One arm outside unit tests.
        #[allow(clippy::infallible_destructuring_match)]
        let multi = match self {
            Exec::Gpus(multi) => multi,
            #[cfg(test)]
            Exec::Emulated { .. } => return emulated::run(job, plans, outs, unpack),
        };
        let abort = AtomicBool::new(false);
        // Every GPU's thread runs to its end; the first panic, in GPU order,
        // is resumed then.
        let results: Vec<Result<Option<GpuProfile>>> = std::thread::scope(|scope| {
            let handles: Vec<_> = plans
                .iter()
                .zip(outs)
                .map(|(plan, mut out)| {
                    let gpu = multi
                        .gpus
                        .iter()
                        .find(|g| g.ordinal() == plan.ordinal)
                        .expect("planned GPUs are ours");
                    let (abort, unpack) = (&abort, &unpack);
                    scope.spawn(move || {
                        let result = pipeline(gpu, job, plan, abort, |r, lay, host| {
                            unpack(&mut out, r, plan.local(r), lay, host)
                        });
                        if result.is_err() {
                            abort.store(true, Ordering::Relaxed);
                        }
                        result
                    })
                })
                .collect();
            handles
                .into_iter()
                .map(|h| h.join().unwrap_or_else(|p| std::panic::resume_unwind(p)))
                .collect()
        });
        let mut profiles = Vec::with_capacity(plans.len());
        for (plan, result) in plans.iter().zip(results) {
            // None: this GPU stopped because another failed.
            profiles.extend(result.map_err(|e| on_gpu(plan.ordinal, e))?);
        }
        Ok(profiles)
    }
}

impl Kernpack {
    /// A handle over the GPUs of `ordinals` ([`MultiGpu::new`]).
    pub fn on_gpus(ordinals: &[usize]) -> Result<MultiGpu> {
        MultiGpu::new(ordinals)
    }
}

/// One buffer set of a GPU's pipeline: a stream, a device arena and its
/// pinned host mirror (of the arena's copied part), the chunk in flight, and
/// its events.
struct BufferSet {
    stream: Arc<CudaStream>,
    dev_ptr: CUdeviceptr,
    host_ptr: *mut u8,
    pending: Option<usize>,
    /// Recorded around each stage of the chunk in flight (indexed by the
    /// `*_START`/`*_END` constants), for its profile.
    events: [CudaEvent; 4],
    // The device arena and the pinned mirror (at most as long), dropped
    // after `Drop::drop` has waited for the stream.
    device: CudaSlice<u8>,
    pinned: PinnedHostSlice<u8>,
}

const H2D_START: usize = 0;
const KERNELS_START: usize = 1;
const KERNELS_END: usize = 2;
const D2H_END: usize = 3;

impl BufferSet {
    fn new(gpu: &Gpu, bytes: usize, host_bytes: usize) -> Result<BufferSet> {
        let (bytes, host_bytes) = (bytes.max(1), host_bytes.max(1));
        let stream = gpu.new_stream()?;
        // SAFETY: every chunk copies its inputs in before its kernels read
        // them; the scratch and outputs are written by the kernels.
        let dev = unsafe { stream.alloc::<u8>(bytes) }
            .map_err(|e| Error::cuda("allocating a chunk's device memory", e))?;
        let (dev_ptr, guard) = dev.device_ptr(&stream);
        drop(guard);
        let mut host = gpu.alloc_pinned::<u8>(host_bytes)?;
        let host_ptr = host
            .as_mut_ptr()
            .map_err(|e| Error::cuda("allocating pinned staging", e))?;
        // Four timing events per chunk cost next to nothing: always profiled.
        let events = gpu.timing_events()?;
        Ok(BufferSet {
            stream,
            dev_ptr,
            host_ptr,
            pending: None,
            events,
            device: dev,
            pinned: host,
        })
    }

    /// The pinned mirror. Only between a wait on the stream and the next
    /// copy enqueued on it is nothing else touching it.
    fn host(&mut self) -> &mut [u8] {
        // SAFETY: host_ptr holds `pinned.len()` bytes for the life of `pinned`;
        // the pipeline uses the slice only while no copy on it is in flight.
        unsafe { std::slice::from_raw_parts_mut(self.host_ptr, self.pinned.len()) }
    }

    fn record(&self, k: usize) -> Result<()> {
        self.events[k]
            .record(&self.stream)
            .map_err(|e| Error::cuda("recording a chunk's event", e))
    }
}

impl Drop for BufferSet {
    /// Waits for the stream before the arena and the pinned mirror go (the
    /// pinned memory must not be freed under an in-flight copy, e.g. after an
    /// error on another chunk).
    fn drop(&mut self) {
        let _ = self.stream.synchronize();
    }
}

// SAFETY: `host_ptr` points into the set's own pinned allocation (`pinned`),
// which moves with it; the stream, arena and events belong to one GPU's
// context, which every user binds to its thread before use.
unsafe impl Send for BufferSet {}

/// Buffer sets kept between calls, by GPU ordinal: a stream of calls (a
/// survey read file by file, each file one call) then pins and allocates its
/// staging once, not once per call (pinning hundreds of MiB takes longer than
/// the kernels of a small call). At most [`SPARE_SETS_PER_GPU`] per GPU:
/// what two calls at a time use (kernpack.dask runs two per GPU worker, one
/// packing while the other's kernels run). With room for one call's two
/// only, the sets that two calls return between two others' starts were
/// freed and pinned anew, call after call: on an H100, a dask worker's
/// survey took 3.0-4.0 s instead of 1.0 s. [`MultiGpu::release_staging`]
/// frees them.
static SPARE_SETS: Mutex<Vec<(usize, BufferSet)>> = Mutex::new(Vec::new());
const SPARE_SETS_PER_GPU: usize = 4;

fn spare_sets() -> std::sync::MutexGuard<'static, Vec<(usize, BufferSet)>> {
    crate::gpu::lock(&SPARE_SETS)
}

/// A kept set of this GPU with an arena of at least `need.0` bytes and a
/// mirror of at least `need.1`, neither past `most` (the smallest such),
/// else a new one, each size rounded up by [`staging_size`].
fn take_set(gpu: &Gpu, need: (usize, usize), most: usize) -> Result<BufferSet> {
    let (bytes, host_bytes) = (need.0.max(1), need.1.max(1));
    let fits = |have: usize, need: usize| (need..=most.max(need)).contains(&have);
    let kept = {
        let mut spare = spare_sets();
        let best = spare
            .iter()
            .enumerate()
            .filter(|(_, (ordinal, set))| {
                *ordinal == gpu.ordinal()
                    && fits(set.device.len(), bytes)
                    && fits(set.pinned.len(), host_bytes)
            })
            .min_by_key(|(_, (_, set))| (set.device.len(), set.pinned.len()))
            .map(|(i, _)| i);
        best.map(|i| spare.remove(i).1) // `remove` keeps the others in keeping order
    };
    match kept {
        Some(set) => Ok(set),
        None => BufferSet::new(
            gpu,
            staging_size(bytes, most),
            staging_size(host_bytes, most),
        ),
    }
}

/// The bytes to allocate for a set that must hold `bytes`: rounded up to a
/// size class (a multiple of a sixteenth of the power of two at or above
/// it, so less than 12.5% more), never past `most` (the call's per-set
/// limit). Chunks of one plan differ by a few series, so without classes a
/// stream of calls would each find the kept sets a little too small and pin
/// anew (a 256 MiB pin takes longer than a small call's kernels).
fn staging_size(bytes: usize, most: usize) -> usize {
    let step = (bytes.next_power_of_two() / 16).max(1);
    bytes
        .div_ceil(step)
        .saturating_mul(step)
        .min(most)
        .max(bytes)
}

/// Keeps `set` (idle: its stream waited for) for a later call on this GPU;
/// beyond [`SPARE_SETS_PER_GPU`] the one kept longest ago is freed. (Not the
/// smallest: a handle whose limit is below the kept sets' size cannot take
/// them, and freeing the smallest would free its own sets after every call,
/// so that each of its calls pinned anew.)
fn keep_set(ordinal: usize, set: BufferSet) {
    debug_assert!(set.pending.is_none());
    let freed = {
        let mut spare = spare_sets();
        spare.push((ordinal, set)); // newest last; take_set keeps the order
        let mine = spare.iter().filter(|(o, _)| *o == ordinal).count();
        (mine > SPARE_SETS_PER_GPU).then(|| {
            let oldest = spare
                .iter()
                .position(|(o, _)| *o == ordinal)
                .expect("non-empty");
            spare.remove(oldest)
        })
    };
    drop(freed); // outside the lock: freeing waits for the stream
}

/// Frees the staging (pinned host and device buffers) that chunked calls
/// keep for later ones, on every GPU: at most four chunk buffers per GPU
/// (two calls' worth), device arenas of up to 256 MiB each by default with
/// pinned mirrors of their copied parts, are held after a batch that
/// went through the pipeline (see [`MultiGpu`]). Kept buffers are idle, so
/// this is safe at any time; the next such call allocates again.
pub fn release_staging() {
    let freed: Vec<(usize, BufferSet)> = spare_sets().drain(..).collect();
    drop(freed); // outside the lock: freeing waits for the streams
}

impl MultiGpu {
    /// Frees the staging (pinned host and device buffers) kept from earlier
    /// calls on this handle's GPUs.
    pub fn release_staging(&self) {
        let ordinals = self.ordinals();
        let freed: Vec<(usize, BufferSet)> = {
            let mut spare = spare_sets();
            let (mine, rest) = spare.drain(..).partition(|(o, _)| ordinals.contains(o));
            *spare = rest;
            mine
        };
        drop(freed);
    }
}

/// One GPU's part: its chunks through two buffer sets (see the module
/// documentation). `Ok(None)` when it stopped because another GPU failed.
fn pipeline<J: ChunkJob>(
    gpu: &Gpu,
    job: &J,
    plan: &GpuPlan,
    abort: &AtomicBool,
    mut unpack: impl FnMut(&Range<usize>, &J::Layout, &[u8]) -> Result<()>,
) -> Result<Option<GpuProfile>> {
    let started = Instant::now();
    let chunks = &plan.chunks;
    let mut sets: [Option<BufferSet>; 2] = [None, None];
    // Each set's pinned mirror holds its largest copied part (scratch stays on the GPU).
    let staging = arena_bytes(chunks, |c| job.layout(c, 0).1.staging());
    // Its times accumulate chunk by chunk.
    let mut times = GpuProfile {
        plan: plan.clone(),
        ..GpuProfile::default()
    };

    // Waits for the chunk in flight on `set`, then reads it back.
    let mut finish = |set: &mut BufferSet, times: &mut GpuProfile| -> Result<()> {
        let Some(j) = set.pending.take() else {
            return Ok(());
        };
        let chunk = &chunks[j];
        set.stream
            .synchronize()
            .map_err(|e| Error::cuda(format!("running chunk {j} ({} {chunk:?})", J::WHAT), e))?;
        let ev = &set.events;
        times.h2d_ms += elapsed_ms(&ev[H2D_START], &ev[KERNELS_START])? as f64;
        times.kernel_ms += elapsed_ms(&ev[KERNELS_START], &ev[KERNELS_END])? as f64;
        times.d2h_ms += elapsed_ms(&ev[KERNELS_END], &ev[D2H_END])? as f64;
        let host_started = Instant::now();
        let (layout, _) = job.layout(chunk.clone(), 0);
        unpack(chunk, &layout, set.host())?;
        times.host_ms += host_started.elapsed().as_secs_f64() * 1e3;
        Ok(())
    };

    for (k, chunk) in chunks.iter().enumerate() {
        if abort.load(Ordering::Relaxed) {
            return Ok(None);
        }
        let s = k % 2;
        if sets[s].is_none() {
            sets[s] = Some(take_set(
                gpu,
                (plan.arena_bytes[s], staging[s]),
                plan.max_device_bytes / 2,
            )?);
        }
        let set = sets[s].as_mut().expect("made above");
        finish(set, &mut times)?;
        let (layout, regions) = job.layout(chunk.clone(), 0);
        debug_assert!(regions.total <= set.device.len() && regions.staging() <= set.pinned.len());
        let host_started = Instant::now();
        job.pack(chunk, &layout, set.host());
        times.host_ms += host_started.elapsed().as_secs_f64() * 1e3;

        gpu.bind()?;
        let (cu_stream, dev_ptr) = (set.stream.cu_stream(), set.dev_ptr);
        set.record(H2D_START)?;
        if !regions.h2d.is_empty() {
            let src = &set.host()[regions.h2d.clone()];
            let dst = dev_ptr + regions.h2d.start as u64;
            // SAFETY: src is pinned and stays untouched until the stream is
            // waited for; the destination lies inside the arena.
            unsafe { cu::memcpy_htod_async(dst, src, cu_stream) }
                .map_err(|e| Error::cuda("copying a chunk to the GPU", e))?;
        }
        // Kernels one chunk after the other (this call's and any other's on
        // the GPU), copies beside them: two chunks' kernels side by side
        // contend for the GPU (on an H100, 1.6x the time per curve of one
        // stream's chunks in sequence).
        gpu.in_kernel_turn(&set.stream, || {
            set.record(KERNELS_START)?;
            let (on_device, _) = job.layout(chunk.clone(), dev_ptr);
            // SAFETY: the arena holds the layout's bytes; the inputs were
            // copied in above, on the same stream.
            unsafe { job.launch(gpu, &set.stream, chunk, &on_device) }?;
            set.record(KERNELS_END)
        })?;
        if !regions.d2h.is_empty() {
            let src = dev_ptr + regions.d2h.start as u64;
            let dst = &mut set.host()[regions.d2h.clone()];
            // SAFETY: as above; the pinned destination is read only after the wait.
            unsafe { cu::memcpy_dtoh_async(dst, src, cu_stream) }
                .map_err(|e| Error::cuda("copying a chunk back", e))?;
        }
        set.record(D2H_END)?;
        set.pending = Some(k);
    }
    // The last one or two chunks, in order.
    let mut last: Vec<&mut BufferSet> = sets.iter_mut().flatten().collect();
    last.sort_by_key(|set| set.pending);
    for set in last {
        finish(set, &mut times)?;
    }
    // Every chunk is read back and every stream idle: keep the sets.
    for set in sets.into_iter().flatten() {
        keep_set(gpu.ordinal(), set);
    }
    times.wall_ms = started.elapsed().as_secs_f64() * 1e3;
    Ok(Some(times))
}

#[cfg(test)]
mod tests {
    use super::staging_size;

    #[test]
    fn staging_sizes_hold_the_chunk_in_classes_within_the_limit() {
        let mib = 1usize << 20;
        // Chunks a few series apart share one class.
        assert_eq!(staging_size(250 * mib, usize::MAX), 256 * mib);
        assert_eq!(staging_size(256 * mib, usize::MAX), 256 * mib);
        assert_eq!(staging_size(257 * mib, usize::MAX), 288 * mib);
        for bytes in [
            1,
            7,
            8,
            9,
            1000,
            4097,
            3 * mib + 5,
            511 * mib,
            usize::MAX / 2,
        ] {
            let got = staging_size(bytes, usize::MAX);
            assert!(
                got >= bytes && got - bytes <= bytes / 8 + 1,
                "{bytes} -> {got}"
            );
            // The limit wins over the class, never over the chunk itself.
            assert_eq!(staging_size(bytes, bytes), bytes);
            assert_eq!(staging_size(bytes, bytes / 2), bytes);
        }
    }
}
