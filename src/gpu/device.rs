//! The one device path: work on memory already on the GPU, enqueued on the
//! caller's stream with no synchronisation.
//!
//! Every device operation is a plain description (a [`DeviceOperation`]):
//! device addresses, counts and options, next to its family's code
//! (`SumOnDevice`, `LombScargleOnDevice`, ...). [`Gpu::enqueue`] runs one
//! given as addresses (the C ABI's and Python's path): it checks the shapes
//! (the check the host operation's validation uses, on counts), then every
//! address against the driver's record of this GPU's allocations and the
//! written buffers apart from the others, then launches.
//!
//! cudarc buffers go through the same descriptions: each description's
//! `buffers` constructor takes the buffers and the stream, refuses lengths
//! that do not fit the call (a cudarc buffer's length is the call's shape)
//! and returns the description bundled with cudarc's stream-ordering guards
//! ([`OnBuffers`]); [`Gpu::enqueue_buffers`] runs it through the same checks
//! (the driver's record included: one path, and a buffer of another GPU is
//! refused) and records the buffers' events after the launch.
use std::sync::Arc;

use cudarc::driver::{
    CudaSlice, CudaStream, DevicePtr, DevicePtrMut, DeviceRepr, SyncOnDrop, ValidAsZeroBits,
};

use crate::error::{Error, Result};
use crate::gpu::Gpu;
use crate::raw::{check_apart, Span};

/// One operation on device memory (see the module docs).
pub trait DeviceOperation {
    /// What the memory check learns that the launch needs (`()` for most).
    type Checked;

    /// The call's shapes, on counts: the check its host operation uses.
    fn check_shapes(&self) -> Result<()>;

    /// Every address against the driver's record of `gpu`'s allocations for
    /// the length the call implies, and the written buffers apart from the
    /// others; after [`DeviceOperation::check_shapes`].
    fn check_memory(&self, gpu: &Gpu) -> Result<Self::Checked>;

    /// Enqueues the launches on `stream`, after both checks.
    ///
    /// # Safety
    /// The allocations must stay alive, and not be written by other work,
    /// until the work on `stream` has finished.
    unsafe fn launch(
        &self,
        gpu: &Gpu,
        stream: &Arc<CudaStream>,
        checked: Self::Checked,
    ) -> Result<()>;
}

impl Gpu {
    /// Runs `op` on `stream`, with no synchronisation: shapes checked, then
    /// every address against the driver's record of this GPU's allocations
    /// (so a wrong pointer is an error rather than a fault that poisons the
    /// context), then the launch.
    ///
    /// # Safety
    /// The allocations behind `op`'s addresses must stay alive, and must not
    /// be written by other work, until the work on `stream` has finished;
    /// `stream` is a stream of this GPU's context.
    pub unsafe fn enqueue<O: DeviceOperation>(
        &self,
        stream: &Arc<CudaStream>,
        op: &O,
    ) -> Result<()> {
        op.check_shapes()?;
        let checked = op.check_memory(self)?;
        unsafe { op.launch(self, stream, checked) }
    }

    /// Runs an operation on cudarc buffers (made by its description's
    /// `buffers` constructor) on the stream it was made with, as
    /// [`Gpu::enqueue`]; the buffers' stream-ordering events are recorded
    /// after the launch.
    pub fn enqueue_buffers<O: DeviceOperation>(&self, call: OnBuffers<'_, O>) -> Result<()> {
        // SAFETY: the addresses come from the live cudarc buffers that `call`
        // borrows until it drops, after the launch; cudarc orders their reuse
        // and freeing after the work on the stream.
        unsafe { self.enqueue(call.stream, &call.op) }
    }

    /// The host path of an operation (its `Operation::on_gpu`): runs a call
    /// made by a description's `buffers` constructor (which checked the
    /// shapes) on buffers just allocated on this GPU's stream by
    /// [`Gpu::upload`] and [`Gpu::zeros`], with no check against the
    /// driver's record (it has nothing to find in fresh buffers).
    ///
    /// # Safety
    /// The call's buffers are this GPU's, and `checked` is what
    /// [`DeviceOperation::check_memory`] would return for them.
    pub(crate) unsafe fn launch_fresh<O: DeviceOperation>(
        &self,
        call: OnBuffers<'_, O>,
        checked: O::Checked,
    ) -> Result<()> {
        unsafe { call.op.launch(self, call.stream, checked) }
    }

    /// A host slice copied to a new buffer on this GPU's stream.
    pub(crate) fn upload<T: DeviceRepr>(&self, host: &[T]) -> Result<CudaSlice<T>> {
        self.stream()
            .clone_htod(host)
            .map_err(|e| Error::cuda("copying inputs to the GPU", e))
    }

    /// `len` zeroed values on this GPU's stream.
    pub(crate) fn zeros<T: DeviceRepr + ValidAsZeroBits>(
        &self,
        len: usize,
    ) -> Result<CudaSlice<T>> {
        self.stream()
            .alloc_zeros(len)
            .map_err(|e| Error::cuda("allocating device memory", e))
    }

    /// `len` uninitialised values on this GPU's stream.
    ///
    /// # Safety
    /// Nothing reads them before a launch has written them.
    pub(crate) unsafe fn uninit<T: DeviceRepr>(&self, len: usize) -> Result<CudaSlice<T>> {
        unsafe { self.stream().alloc(len) }.map_err(|e| Error::cuda("allocating device memory", e))
    }

    /// A buffer of this GPU's stream copied back to a new host vector.
    pub(crate) fn download<T: DeviceRepr>(&self, device: &CudaSlice<T>) -> Result<Vec<T>> {
        self.stream()
            .clone_dtoh(device)
            .map_err(|e| Error::cuda("copying results back", e))
    }

    /// A buffer of this GPU's stream copied back into `host` (as long).
    pub(crate) fn download_into<T: DeviceRepr>(
        &self,
        device: &CudaSlice<T>,
        host: &mut [T],
    ) -> Result<()> {
        self.stream()
            .memcpy_dtoh(device, host)
            .map_err(|e| Error::cuda("copying results back", e))
    }
}

/// The shapes of a search over a ragged batch: `n` samples of `nseries`
/// series, each searched at `trials` (`what`: "periods", "frequencies"),
/// `bytes_per_result` of output each. Every series needs a sample, and the
/// output's bytes must stay within i64.
pub(crate) fn check_ragged_search(
    nseries: usize,
    n: usize,
    trials: usize,
    what: &str,
    bytes_per_result: usize,
) -> Result<()> {
    if n < nseries {
        return Err(Error::invalid(format!(
            "{n} samples for {nseries} series: each needs at least one"
        )));
    }
    nseries
        .checked_mul(trials)
        .filter(|&v| v <= i64::MAX as usize / bytes_per_result)
        .map(|_| ())
        .ok_or_else(|| Error::invalid(format!("{nseries} series x {trials} {what} overflow")))
}

/// Input and output spans (addresses in host or device memory, `n_in` and
/// `n_out` values of `T`) must not overlap, for kernels that read one while
/// writing the other (`__restrict__`, or reading neighbours of the output).
pub(crate) fn check_disjoint<T>(input: u64, n_in: usize, output: u64, n_out: usize) -> Result<()> {
    check_disjoint_of::<T, T>(input, n_in, output, n_out)
}

/// As [`check_disjoint`], for `n_in` values of `I` and `n_out` of `O`.
pub(crate) fn check_disjoint_of<I, O>(
    input: u64,
    n_in: usize,
    output: u64,
    n_out: usize,
) -> Result<()> {
    let spans = [
        Span::at::<I>("input", input, n_in),
        Span::at::<O>("output", output, n_out),
    ];
    check_apart(&spans[1..], &spans[..1]).map_err(|_| {
        Error::invalid("the input and output overlap: this operation cannot run in place")
    })
}

/// A device operation on cudarc buffers: the description, the stream, and
/// the buffers' guards (borrowing them until the call has been enqueued).
#[must_use = "run it with Gpu::enqueue_buffers"]
pub struct OnBuffers<'a, O> {
    op: O,
    stream: &'a Arc<CudaStream>,
    _guards: Vec<SyncOnDrop<'a>>,
}

/// The guards of the buffers of one call, collected while its description
/// is made from cudarc buffers.
pub(crate) struct Guards<'a> {
    stream: &'a Arc<CudaStream>,
    held: Vec<SyncOnDrop<'a>>,
}

impl<'a> Guards<'a> {
    pub(crate) fn new(stream: &'a Arc<CudaStream>) -> Self {
        Guards {
            stream,
            held: Vec::new(),
        }
    }

    /// The address of a buffer the call reads.
    pub(crate) fn read<T>(&mut self, buffer: &'a impl DevicePtr<T>) -> u64 {
        let (ptr, guard) = buffer.device_ptr(self.stream);
        self.held.push(guard);
        ptr
    }

    /// The address of a buffer the call writes.
    pub(crate) fn write<T>(&mut self, buffer: &'a mut impl DevicePtrMut<T>) -> u64 {
        let (ptr, guard) = buffer.device_ptr_mut(self.stream);
        self.held.push(guard);
        ptr
    }

    /// The call: `op`, made of the addresses handed out here.
    pub(crate) fn with<O>(self, op: O) -> OnBuffers<'a, O> {
        OnBuffers {
            op,
            stream: self.stream,
            _guards: self.held,
        }
    }
}
