//! Streams, timing events, pinned host memory and asynchronous copies (what
//! normalising arrays on several streams needs), as thin helpers over cudarc's
//! own types, which are re-exported here:
//! a kernpack stream *is* a cudarc [`CudaStream`], so every device operation
//! of kernpack and every cudarc operation can be mixed on it.
//!
//! Why helpers rather than new types: cudarc already owns the lifetimes
//! (a stream is destroyed when its last `Arc` goes, a pinned buffer waits for
//! its pending copies before it is freed). What it gets wrong for timing and
//! for reading results back is only the defaults, which these helpers fix:
//! - `CudaContext::new_event(None)` creates an event with timing *disabled*;
//!   [`Gpu::timing_event`] creates one with `CU_EVENT_DEFAULT`;
//! - `CudaContext::alloc_pinned` allocates write-combined memory, which the
//!   CPU reads an order of magnitude slower than ordinary memory (fine for
//!   inputs only); [`Gpu::alloc_pinned`] allocates ordinary cached pinned
//!   memory, zeroed, so results can be read back at full speed.
//!
//! No device operation of kernpack (`Gpu::enqueue`) synchronises: launches and scratch
//! allocations are stream-ordered (`cuMemAllocAsync` / `cuMemFreeAsync` on
//! the caller's stream). The one exception is in cudarc, on a GPU without
//! memory pools (`CudaContext::has_async_alloc() == false`, pre-Pascal or
//! some vGPU setups), where freeing scratch synchronises its stream.
//!
//! Cross-stream ordering: with more than one stream in a context, cudarc
//! tracks reads and writes of each `CudaSlice` with events, so a buffer used
//! on two streams is ordered automatically (and the two uses serialise).
//! Give each stream its own buffers where work should overlap.
use std::sync::Arc;

use cudarc::driver::sys::{CUevent_flags, CUresult};
pub use cudarc::driver::{CudaEvent, CudaStream, PinnedHostSlice};
use cudarc::driver::{DeviceRepr, ValidAsZeroBits};

use crate::error::{Error, Result};
use crate::gpu::Gpu;

impl Gpu {
    /// A new stream of this GPU (`CU_STREAM_NON_BLOCKING`: it does not
    /// synchronise with the legacy default stream). Destroyed when the last
    /// `Arc` is dropped, after the work already enqueued on it. Same as
    /// `gpu.context().new_stream()`; use `stream.fork()` for a stream that
    /// starts after the work already on another.
    pub fn new_stream(&self) -> Result<Arc<CudaStream>> {
        self.context()
            .new_stream()
            .map_err(|e| Error::cuda("creating a stream", e))
    }

    /// An event that can time: created with `CU_EVENT_DEFAULT` (cudarc's
    /// `new_event(None)` disables timing).
    pub fn timing_event(&self) -> Result<CudaEvent> {
        self.context()
            .new_event(Some(CUevent_flags::CU_EVENT_DEFAULT))
            .map_err(|e| Error::cuda("creating an event", e))
    }

    /// `N` events of [`Gpu::timing_event`].
    pub(crate) fn timing_events<const N: usize>(&self) -> Result<[CudaEvent; N]> {
        let events: Vec<CudaEvent> = (0..N).map(|_| self.timing_event()).collect::<Result<_>>()?;
        Ok(events
            .try_into()
            .unwrap_or_else(|_| unreachable!("N events")))
    }

    /// `len` (> 0) zeroed values of page-locked host memory (not write-combined),
    /// for asynchronous copies with `stream.memcpy_htod` / `memcpy_dtoh`.
    /// Reading it (`as_slice`) first waits for the copies pending on it.
    pub fn alloc_pinned<T: DeviceRepr + ValidAsZeroBits + Default + Copy>(
        &self,
        len: usize,
    ) -> Result<PinnedHostSlice<T>> {
        if len == 0 {
            return Err(Error::invalid("cannot allocate 0 values of pinned memory"));
        }
        super::check_array_size::<T>("pinned host memory", len)?;
        // SAFETY: the memory is zeroed below before anything can read it.
        let mut pinned = unsafe { self.context().alloc_pinned_with_flags::<T>(len, 0) }
            .map_err(|e| Error::cuda("allocating pinned host memory", e))?;
        pinned
            .as_mut_slice()
            .map_err(|e| Error::cuda("allocating pinned host memory", e))?
            .fill(T::default());
        Ok(pinned)
    }

    /// A pinned copy of `src`.
    pub fn pinned_from<T: DeviceRepr + ValidAsZeroBits + Default + Copy>(
        &self,
        src: &[T],
    ) -> Result<PinnedHostSlice<T>> {
        let mut pinned = self.alloc_pinned::<T>(src.len())?;
        pinned
            .as_mut_slice()
            .map_err(|e| Error::cuda("filling pinned host memory", e))?
            .copy_from_slice(src);
        Ok(pinned)
    }
}

/// Milliseconds from `start` to `end`, by the GPU's clock, once `end` has
/// completed (waits for it). Both must be timing events
/// ([`Gpu::timing_event`]) of one GPU, each recorded at least once.
pub fn elapsed_ms(start: &CudaEvent, end: &CudaEvent) -> Result<f32> {
    start.elapsed_ms(end).map_err(|e| match e.0 {
        CUresult::CUDA_ERROR_INVALID_HANDLE => Error::invalid(
            "cannot time between these events: one of them was never recorded \
             (or was created without timing, e.g. by new_event(None))",
        ),
        _ => Error::cuda("reading the time between two events", e),
    })
}

/// A scoped timer, the Rust form of the context-manager timer that Numba code
/// builds on CUDA events: a start event recorded on `stream` when the timer is
/// created, an end event when it is stopped (or dropped), and the GPU time
/// between them.
///
/// ```no_run
/// # use kernpack::{Gpu, api::streams::GpuTimer};
/// # let gpu = Gpu::get(0)?; let stream = gpu.new_stream()?;
/// let timer = GpuTimer::start(&stream)?;
/// // ... enqueue work on `stream` ...
/// let ms = timer.stop()?;          // waits for the work, then reads the events
/// # Ok::<(), kernpack::Error>(())
/// ```
/// [`GpuTimer::end`] records the end without waiting (to time a stretch of a
/// pipeline without stalling it); [`GpuTimer::elapsed_ms`] reads it later.
pub struct GpuTimer {
    stream: Arc<CudaStream>,
    start: CudaEvent,
    end: CudaEvent,
    ended: bool,
}

impl GpuTimer {
    /// Records the start on `stream`.
    pub fn start(stream: &Arc<CudaStream>) -> Result<GpuTimer> {
        let ctx = stream.context();
        let event = || {
            ctx.new_event(Some(CUevent_flags::CU_EVENT_DEFAULT))
                .map_err(|e| Error::cuda("creating a timing event", e))
        };
        let (start, end) = (event()?, event()?);
        start
            .record(stream)
            .map_err(|e| Error::cuda("recording the start event", e))?;
        Ok(GpuTimer {
            stream: stream.clone(),
            start,
            end,
            ended: false,
        })
    }

    /// Records the end on the stream, without waiting. Once only.
    pub fn end(&mut self) -> Result<()> {
        if self.ended {
            return Err(Error::invalid("this timer has already been ended"));
        }
        self.end
            .record(&self.stream)
            .map_err(|e| Error::cuda("recording the end event", e))?;
        self.ended = true;
        Ok(())
    }

    /// Milliseconds between start and end, waiting for the end to complete;
    /// an error before [`GpuTimer::end`].
    pub fn elapsed_ms(&self) -> Result<f32> {
        if !self.ended {
            return Err(Error::invalid("this timer has not been ended yet"));
        }
        elapsed_ms(&self.start, &self.end)
    }

    /// Ends the timer (unless already ended) and returns the elapsed milliseconds.
    pub fn stop(mut self) -> Result<f32> {
        if !self.ended {
            self.end()?;
        }
        self.elapsed_ms()
    }
}

impl Drop for GpuTimer {
    /// Closes the interval at the end of the scope, like leaving a Python
    /// `with` block (the events are then released once the GPU passes them).
    fn drop(&mut self) {
        if !self.ended {
            let _ = self.end.record(&self.stream);
        }
    }
}

/// Runs `work` (which enqueues on `stream`) between a start and an end event
/// and returns its value with the GPU milliseconds it took, after waiting.
pub fn time<R>(stream: &Arc<CudaStream>, work: impl FnOnce() -> Result<R>) -> Result<(R, f32)> {
    let timer = GpuTimer::start(stream)?;
    let value = work()?;
    Ok((value, timer.stop()?))
}
