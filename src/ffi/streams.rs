//! C ABI of streams, events, pinned host memory and asynchronous copies.
//!
//! Streams and events are raw driver handles (`CUstream`, `CUevent`) passed
//! as `uint64_t`, so they can be handed to other CUDA code; kernpack keeps a
//! registry of the ones it created. Destroying or using a handle that is not
//! in it (never created here, or already destroyed) is KP_ERROR_INVALID_ARGUMENT,
//! never a driver call on a dead handle. What cannot be detected: a handle
//! destroyed behind kernpack's back (e.g. `cuStreamDestroy` on a stream from
//! `kp_stream_create`), and a handle value the driver hands out again after it
//! was destroyed here (it is then a live object again).
//!
//! Foreign streams (CuPy, PyTorch, the runtime API) are accepted wherever a
//! stream is *used* (`stream` arguments), as in the kernel entry points; only
//! `kp_stream_destroy` is restricted to kernpack's own. Events must be
//! kernpack's (kp_event_create), so that timing events are always created
//! with timing enabled.
use std::collections::HashMap;
use std::ffi::c_void;
use std::sync::{Mutex, OnceLock};

use cudarc::driver::result as cu;
use cudarc::driver::sys::{self, CUevent_flags, CUresult};

use super::{boundary, context, kp_context, kp_status, null_pointer, out_param, RawError};
use crate::error::Error;
use crate::gpu::Gpu;
use crate::raw;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    Stream,
    Event,
    Pinned,
    Device,
}

impl Kind {
    fn what(self) -> &'static str {
        match self {
            Kind::Stream => "a stream from kp_stream_create",
            Kind::Event => "an event from kp_event_create",
            Kind::Pinned => "a pointer from kp_host_alloc_pinned",
            Kind::Device => "an allocation from kp_device_alloc",
        }
    }

    /// Releases `handle`, a live handle of this kind.
    ///
    /// # Safety
    /// `handle` is made by kernpack and not yet released, its GPU bound to
    /// this thread, and no enqueued work still uses it.
    unsafe fn release(self, handle: u64) -> Result<(), RawError> {
        let (done, during) = unsafe {
            match self {
                Kind::Stream => (cu::stream::destroy(handle as _), "destroying a stream"),
                Kind::Event => (cu::event::destroy(handle as _), "destroying an event"),
                Kind::Pinned => (cu::free_host(handle as _), "freeing pinned host memory"),
                Kind::Device => (cu::free_sync(handle), "freeing device memory"),
            }
        };
        done.map_err(cuda(during))
    }
}

/// Handles created here and not yet destroyed: their kind and the id of the
/// context that made them (one registry for the process, so that a handle of
/// one context can be recognised, and refused, by another).
fn registry() -> std::sync::MutexGuard<'static, HashMap<u64, (u64, Kind)>> {
    static LIVE: OnceLock<Mutex<HashMap<u64, (u64, Kind)>>> = OnceLock::new();
    crate::gpu::lock(LIVE.get_or_init(Default::default))
}

pub(crate) fn register(owner: u64, handle: u64, kind: Kind) {
    registry().insert(handle, (owner, kind));
}

/// Checks that `handle` is a live handle of `kind` made by context `owner`;
/// with `take`, also removes it (in the same lock, so two threads cannot both
/// destroy it).
fn live(owner: u64, name: &str, handle: u64, kind: Kind, take: bool) -> Result<(), RawError> {
    if handle == 0 {
        return Err(null_pointer(name));
    }
    let mut live = registry();
    match live.get(&handle) {
        Some(&(o, k)) if k == kind && o == owner => {
            if take {
                live.remove(&handle);
            }
            Ok(())
        }
        Some(&(_, k)) if k == kind => Err(Error::invalid(format!(
            "{name} ({handle:#x}) belongs to another kernpack context"
        ))
        .into()),
        _ => Err(Error::invalid(format!(
            "{name} ({handle:#x}) is not {} that is still alive (never created here, or already destroyed)",
            kind.what()
        ))
        .into()),
    }
}

pub(crate) fn check_live(owner: u64, name: &str, handle: u64, kind: Kind) -> Result<(), RawError> {
    live(owner, name, handle, kind, false)
}

pub(crate) fn take_live(owner: u64, name: &str, handle: u64, kind: Kind) -> Result<(), RawError> {
    live(owner, name, handle, kind, true)
}

/// A `stream` argument: 0 (the default stream), a stream of this context, or
/// a stream kernpack did not make (CuPy's, PyTorch's); a stream of another
/// kernpack context, or one destroyed here and not handed out again, is refused.
pub(crate) fn check_usable_stream(owner: u64, stream: u64) -> Result<(), RawError> {
    match registry().get(&stream) {
        Some(&(o, Kind::Stream)) if o != owner => Err(Error::invalid(format!(
            "stream {stream:#x} belongs to another kernpack context"
        ))
        .into()),
        Some(&(_, Kind::Stream)) | None => Ok(()),
        Some(&(_, kind)) => Err(Error::invalid(format!(
            "stream {stream:#x} is not a stream but {}",
            kind.what()
        ))
        .into()),
    }
}

/// Releases what context `owner` made and did not release (at its destruction).
pub(crate) fn release_all(owner: u64, gpu: &Gpu) {
    let mine: Vec<(u64, Kind)> = {
        let mut live = registry();
        let mine: Vec<(u64, Kind)> = live
            .iter()
            .filter(|(_, &(o, _))| o == owner)
            .map(|(&h, &(_, k))| (h, k))
            .collect();
        for (h, _) in &mine {
            live.remove(h);
        }
        mine
    };
    if mine.is_empty() || gpu.context().bind_to_thread().is_err() {
        return;
    }
    for (handle, kind) in mine {
        // SAFETY: made by this context and not yet released (removed from the
        // registry above, so no other call can release it twice).
        let _ = unsafe { kind.release(handle) };
    }
}

/// A byte count to allocate: 0 is an invalid argument.
pub(crate) fn nonzero(bytes: usize) -> Result<usize, RawError> {
    match bytes {
        0 => Err(Error::invalid("cannot allocate 0 bytes").into()),
        _ => Ok(bytes),
    }
}

pub(crate) fn cuda(during: &'static str) -> impl Fn(cu::DriverError) -> RawError {
    move |e| Error::cuda(during, e).into()
}

/// The context and its GPU, bound to this thread for raw driver calls.
pub(crate) unsafe fn bound_gpu<'a>(
    ctx: *const kp_context,
) -> Result<(&'a kp_context, &'a Gpu), RawError> {
    let ctx = unsafe { context(ctx) }?;
    let gpu = ctx.gpu()?;
    gpu.bind()?;
    Ok((ctx, gpu))
}

/// Makes a handle of `kind` with `make` on the context's GPU, registers it
/// as the context's and writes it to the out-parameter `out` (named `name`).
///
/// # Safety
/// As [`bound_gpu`]; `out` NULL or valid for one write.
pub(crate) unsafe fn create<H: Copy>(
    ctx: *const kp_context,
    (name, out): (&str, *mut H),
    kind: Kind,
    make: impl FnOnce() -> Result<H, RawError>,
    key: impl FnOnce(H) -> u64,
) -> Result<(), RawError> {
    let (ctx, _) = unsafe { bound_gpu(ctx) }?;
    let out = unsafe { out_param(name, out) }?;
    let handle = make()?;
    register(ctx.id, key(handle), kind);
    *out = handle;
    Ok(())
}

/// Releases `handle` (the argument `name`), a live handle of `kind` of the
/// context, after taking it out of the registry.
///
/// # Safety
/// As [`bound_gpu`]; no enqueued work may still use the handle.
pub(crate) unsafe fn destroy(
    ctx: *const kp_context,
    name: &str,
    handle: u64,
    kind: Kind,
) -> Result<(), RawError> {
    let (ctx, _) = unsafe { bound_gpu(ctx) }?;
    take_live(ctx.id, name, handle, kind)?;
    unsafe { kind.release(handle) }
}

/// Creates a stream on the context's GPU (non-blocking: it does not
/// synchronise with the legacy default stream) and writes its CUstream to
/// `*stream`. The caller owns it: release it with `kp_stream_destroy`, before
/// destroying the context. Needs a GPU context.
///
/// # Safety
/// `ctx` from `kp_context_create`; `stream` valid for one write.
#[no_mangle]
pub unsafe extern "C" fn kp_stream_create(ctx: *const kp_context, stream: *mut u64) -> kp_status {
    let make = || match cu::stream::create(cu::stream::StreamKind::NonBlocking) {
        Ok(s) => Ok(s as u64),
        Err(e) => Err(cuda("creating a stream")(e)),
    };
    boundary(|| unsafe { create(ctx, ("stream", stream), Kind::Stream, make, |s| s) })
}

/// Destroys a stream from `kp_stream_create`. Work already enqueued on it
/// still runs to completion; the call does not wait for it. 0, a stream not
/// created by kernpack, or one already destroyed: KP_ERROR_NULL_POINTER /
/// KP_ERROR_INVALID_ARGUMENT, nothing done.
///
/// # Safety
/// `ctx` from `kp_context_create`.
#[no_mangle]
pub unsafe extern "C" fn kp_stream_destroy(ctx: *const kp_context, stream: u64) -> kp_status {
    boundary(|| unsafe { destroy(ctx, "stream", stream, Kind::Stream) })
}

/// Creates an event that can time (CU_EVENT_DEFAULT) and writes its CUevent
/// to `*event`. The caller owns it: release it with `kp_event_destroy`.
///
/// # Safety
/// `ctx` from `kp_context_create`; `event` valid for one write.
#[no_mangle]
pub unsafe extern "C" fn kp_event_create(ctx: *const kp_context, event: *mut u64) -> kp_status {
    let make = || match cu::event::create(CUevent_flags::CU_EVENT_DEFAULT) {
        Ok(e) => Ok(e as u64),
        Err(e) => Err(cuda("creating an event")(e)),
    };
    boundary(|| unsafe { create(ctx, ("event", event), Kind::Event, make, |e| e) })
}

/// Destroys an event from `kp_event_create` (if it is still pending, its
/// resources are released once the GPU passes it). Unknown or already
/// destroyed events are rejected, nothing done.
///
/// # Safety
/// `ctx` from `kp_context_create`.
#[no_mangle]
pub unsafe extern "C" fn kp_event_destroy(ctx: *const kp_context, event: u64) -> kp_status {
    boundary(|| unsafe { destroy(ctx, "event", event, Kind::Event) })
}

/// Records `event` at the current end of `stream` (0: the default stream).
///
/// # Safety
/// `ctx` from `kp_context_create`; `stream` 0 or a live CUstream of the GPU's primary context.
#[no_mangle]
pub unsafe extern "C" fn kp_event_record(
    ctx: *const kp_context,
    event: u64,
    stream: u64,
) -> kp_status {
    boundary(|| {
        let (ctx, _) = unsafe { bound_gpu(ctx) }?;
        check_live(ctx.id, "event", event, Kind::Event)?;
        check_usable_stream(ctx.id, stream)?;
        unsafe { cu::event::record(event as sys::CUevent, stream as sys::CUstream) }
            .map_err(cuda("recording an event"))
    })
}

/// Waits until the work before the last record of `event` has completed
/// (returns at once for an event never recorded).
///
/// # Safety
/// `ctx` from `kp_context_create`.
#[no_mangle]
pub unsafe extern "C" fn kp_event_synchronize(ctx: *const kp_context, event: u64) -> kp_status {
    boundary(|| {
        let (ctx, _) = unsafe { bound_gpu(ctx) }?;
        check_live(ctx.id, "event", event, Kind::Event)?;
        unsafe { cu::event::synchronize(event as sys::CUevent) }
            .map_err(cuda("waiting for an event"))
    })
}

/// Writes to `*ms` the GPU time in milliseconds from `start` to `end`, after
/// waiting for both. An event never recorded is KP_ERROR_INVALID_ARGUMENT.
/// `*ms` is written only on success.
///
/// # Safety
/// `ctx` from `kp_context_create`; `ms` valid for one write.
#[no_mangle]
pub unsafe extern "C" fn kp_event_elapsed_ms(
    ctx: *const kp_context,
    start: u64,
    end: u64,
    ms: *mut f32,
) -> kp_status {
    boundary(|| {
        let (ctx, _) = unsafe { bound_gpu(ctx) }?;
        check_live(ctx.id, "start", start, Kind::Event)?;
        check_live(ctx.id, "end", end, Kind::Event)?;
        let ms = unsafe { out_param("ms", ms) }?;
        let (start, end) = (start as sys::CUevent, end as sys::CUevent);
        for e in [start, end] {
            unsafe { cu::event::synchronize(e) }.map_err(cuda("waiting for an event"))?;
        }
        let elapsed = unsafe { cu::event::elapsed(start, end) }.map_err(|e| match e.0 {
            CUresult::CUDA_ERROR_INVALID_HANDLE => RawError::from(Error::invalid(
                "cannot time between start and end: one of them was never recorded",
            )),
            _ => Error::cuda("reading the time between two events", e).into(),
        })?;
        *ms = elapsed;
        Ok(())
    })
}

/// Makes later work on `stream` (0: the default stream) wait until the work
/// before the last record of `event` has completed, without blocking the host.
///
/// # Safety
/// `ctx` from `kp_context_create`; `stream` 0 or a live CUstream of the GPU's primary context.
#[no_mangle]
pub unsafe extern "C" fn kp_stream_wait_event(
    ctx: *const kp_context,
    stream: u64,
    event: u64,
) -> kp_status {
    boundary(|| {
        let (ctx, _) = unsafe { bound_gpu(ctx) }?;
        check_live(ctx.id, "event", event, Kind::Event)?;
        check_usable_stream(ctx.id, stream)?;
        unsafe {
            cu::stream::wait_event(
                stream as sys::CUstream,
                event as sys::CUevent,
                sys::CUevent_wait_flags::CU_EVENT_WAIT_DEFAULT,
            )
        }
        .map_err(cuda("making a stream wait for an event"))
    })
}

/// Allocates `bytes` (> 0) of page-locked host memory (portable to every
/// context, not write-combined: fast to read back) and writes its address to
/// `*ptr`. Needed for copies that overlap with other work
/// (`kp_memcpy_*_async`). The caller owns it: release it with
/// `kp_host_free_pinned`. Needs a GPU context.
///
/// # Safety
/// `ctx` from `kp_context_create`; `ptr` valid for one write.
#[no_mangle]
pub unsafe extern "C" fn kp_host_alloc_pinned(
    ctx: *const kp_context,
    bytes: usize,
    ptr: *mut *mut c_void,
) -> kp_status {
    let make = || {
        let bytes = nonzero(bytes)?;
        unsafe { cu::malloc_host(bytes, sys::CU_MEMHOSTALLOC_PORTABLE) }
            .map_err(cuda("allocating pinned host memory"))
    };
    boundary(|| unsafe { create(ctx, ("ptr", ptr), Kind::Pinned, make, |p| p as u64) })
}

/// Frees memory from `kp_host_alloc_pinned`; NULL is accepted and ignored.
/// A pointer not from kp_host_alloc_pinned, or already freed, is rejected.
///
/// # Safety
/// `ctx` from `kp_context_create`; no pending copy may still use the memory.
#[no_mangle]
pub unsafe extern "C" fn kp_host_free_pinned(
    ctx: *const kp_context,
    ptr: *mut c_void,
) -> kp_status {
    boundary(|| {
        if ptr.is_null() {
            unsafe { super::context(ctx) }?; // a NULL context is still an error
            return Ok(()); // as free(NULL), on any context
        }
        unsafe { destroy(ctx, "ptr", ptr as u64, Kind::Pinned) }
    })
}

/// Enqueues a copy of `bytes` from host `src` to device `dst` on `stream`
/// (0: the default stream) and returns. From pinned memory
/// (`kp_host_alloc_pinned`) the copy overlaps with other work and `src` must
/// stay valid and unchanged until the stream has passed it; from pageable
/// memory the driver stages it, and the call may return only once `src` has
/// been read.
///
/// # Safety
/// `src` readable for `bytes` until the copy has run; `dst` a device
/// allocation of at least `bytes`; `stream` 0 or a live CUstream of this GPU.
#[no_mangle]
pub unsafe extern "C" fn kp_memcpy_htod_async(
    ctx: *const kp_context,
    dst: u64,
    src: *const c_void,
    bytes: usize,
    stream: u64,
) -> kp_status {
    boundary(|| {
        let (ctx, gpu) = unsafe { bound_gpu(ctx) }?;
        let src = unsafe { raw::host("src", src.cast::<u8>(), bytes) }?;
        raw::check_device::<u8>(gpu, "dst", dst, bytes)?;
        check_usable_stream(ctx.id, stream)?;
        unsafe { cu::memcpy_htod_async(dst, src, stream as sys::CUstream) }
            .map_err(cuda("enqueuing a copy to the device"))
    })
}

/// Enqueues a copy of `bytes` from device `src` to host `dst` on `stream`
/// (0: the default stream) and returns; `dst` holds the data once the stream
/// has passed the copy (kp_stream_synchronize, or an event). Asynchronous
/// only into pinned memory; into pageable memory the call returns once the
/// copy is done.
///
/// # Safety
/// `dst` writable for `bytes` until the copy has run; `src` a device
/// allocation of at least `bytes`; `stream` 0 or a live CUstream of this GPU.
#[no_mangle]
pub unsafe extern "C" fn kp_memcpy_dtoh_async(
    ctx: *const kp_context,
    dst: *mut c_void,
    src: u64,
    bytes: usize,
    stream: u64,
) -> kp_status {
    boundary(|| {
        let (ctx, gpu) = unsafe { bound_gpu(ctx) }?;
        let dst = unsafe { raw::host_mut("dst", dst.cast::<u8>(), bytes) }?;
        raw::check_device::<u8>(gpu, "src", src, bytes)?;
        check_usable_stream(ctx.id, stream)?;
        unsafe { cu::memcpy_dtoh_async(dst, src, stream as sys::CUstream) }
            .map_err(cuda("enqueuing a copy from the device"))
    })
}
