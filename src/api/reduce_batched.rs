//! Normalising many arrays: in one call on one flat buffer
//! ([`Kernpack::normalize_batched`], four launches whatever the number of
//! arrays), and host arrays spread over several streams so copies and
//! kernels overlap ([`StreamedNormalize`]).
//!
//! What is guaranteed for the one-call batch: each array's sum has exactly
//! the bits [`Kernpack::sum`] on a GPU gives for that array alone (same
//! chunks, same order: csrc/reduce.cuh), on every run, and each value becomes
//! `x * (1 / sum)` computed in f64 and rounded once to `T`, the arithmetic of
//! the single-array normalise. The single-array [`Kernpack::normalize`] may take a
//! fused path for arrays that fit in L2, which adds its partial sums in
//! another order, so against it the sums (and then the values) can differ in
//! the last bit. On the CPU backend each array's sum has the bits of the CPU
//! [`Kernpack::sum`] of that array alone, on any thread count.
use std::sync::Arc;

use cudarc::driver::{CudaEvent, CudaSlice, CudaStream, PinnedHostSlice};

use super::exec::{CpuRun, Operation, Split, NOTHING_TO_LAUNCH};
use super::multi::{self, Exec, GpuProfile, MultiGpu};
use super::streams::elapsed_ms;
use super::Kernpack;
use crate::error::{Error, Result};
use crate::float::Float;
pub use crate::gpu::reduce::NormalizeBatchedOnDevice;
use crate::gpu::reduce::{check_batched_call, NormalizeOnDevice};
use crate::gpu::Gpu;
pub use crate::params::reduce::{BatchNormalized, BATCH_BAD_OFFSETS, BATCH_BAD_SUM, BATCH_OK};

/// `offsets` must run from 0 to `n`, non-decreasing: array a is
/// `offsets[a] .. offsets[a+1]`.
pub fn check_offsets(offsets: &[usize], n: usize) -> Result<()> {
    let (Some(&first), Some(&last)) = (offsets.first(), offsets.last()) else {
        return Err(Error::invalid(
            "offsets needs narrays + 1 entries (at least one: [0] for no array)",
        ));
    };
    if first != 0 || last != n {
        return Err(Error::invalid(format!(
            "offsets run from {first} to {last}; they must run from 0 to the length of x ({n})"
        )));
    }
    if let Some(a) = offsets.windows(2).position(|w| w[1] < w[0]) {
        return Err(Error::invalid(format!(
            "offsets decrease at array {a}: {} then {}",
            offsets[a],
            offsets[a + 1]
        )));
    }
    Ok(())
}

/// The operation: every array `x[offsets[a] .. offsets[a+1]]` normalised
/// in place ([`Kernpack::normalize_batched`]). It splits by array.
#[derive(Debug)]
pub struct NormalizeBatched<'a, T> {
    pub x: &'a mut [T],
    pub offsets: &'a [usize],
}

impl<T: Float> Operation for NormalizeBatched<'_, T> {
    type Output = BatchNormalized;

    fn validate(&self) -> Result<()> {
        check_offsets(self.offsets, self.x.len())?;
        let narrays = self.offsets.len() - 1;
        check_batched_call(self.x.len(), narrays, narrays, narrays).map(drop)
    }

    fn on_cpu(self, cpu: &CpuRun<'_>) -> Result<BatchNormalized> {
        let (sums, ok) = crate::cpu::reduce::normalize_batched(self.x, self.offsets, cpu.threads);
        let failed = (0..ok.len()).filter(|&a| !ok[a]).collect();
        Ok(BatchNormalized { sums, failed })
    }

    fn on_gpu(self, gpu: &Arc<Gpu>) -> Result<BatchNormalized> {
        let (x, offsets) = (self.x, self.offsets);
        let narrays = offsets.len() - 1;
        if narrays == 0 || x.is_empty() {
            return NormalizeBatched { x, offsets }.on_cpu(&NOTHING_TO_LAUNCH);
        }
        let offsets: Vec<i64> = offsets.iter().map(|&o| o as i64).collect();
        let (mut dx, doffsets) = (gpu.upload(x)?, gpu.upload(&offsets)?);
        let (mut sums, mut status) = (gpu.zeros::<f64>(narrays)?, gpu.zeros::<i32>(narrays)?);
        let stream = gpu.stream();
        let call = NormalizeBatchedOnDevice::<T>::buffers(
            stream,
            &mut dx,
            &doffsets,
            &mut sums,
            &mut status,
        )?;
        // SAFETY: buffers just allocated on this GPU.
        unsafe { gpu.launch_fresh(call, ()) }?;
        let (sums, status) = (gpu.download(&sums)?, gpu.download(&status)?);
        gpu.download_into(&dx, x)?;
        Ok(BatchNormalized::from_statuses(sums, &status))
    }

    fn split(&self) -> Option<Split> {
        multi::split_of(self, self.offsets.len() - 1, multi::longest(self.offsets))
    }

    fn on_pipeline(self, gpus: &MultiGpu) -> Result<(BatchNormalized, Vec<GpuProfile>)> {
        multi::normalize::normalize_batched(&Exec::Gpus(gpus), self)
    }
}

impl Kernpack {
    facade! {
        /// Normalises every array `x[offsets[a] .. offsets[a+1]]` in place, in
        /// one call. An array whose sum is zero, not finite or too small to
        /// invert is left unchanged and listed in `failed`; the others are
        /// normalised all the same. Bad offsets are an error and change nothing.
        fn normalize_batched(x: &mut [T], offsets: &[usize]) -> BatchNormalized
            = NormalizeBatched { x, offsets };
    }
}

/// Per array: its device copy, sum and status on the device and, pinned, on
/// the host (so the copies back are asynchronous too), and the four events
/// of a traced run.
struct Slot<T> {
    x: CudaSlice<T>,
    sum: CudaSlice<f64>,
    status: CudaSlice<i32>,
    sum_host: PinnedHostSlice<f64>,
    status_host: PinnedHostSlice<i32>,
    events: Option<[CudaEvent; 4]>,
}

/// Per array: `Ok(sum)`, or `Err(sum)` when the sum is zero, not finite or too small to invert
/// (empty arrays included) and the array was left unchanged.
pub type ArrayResults = Vec<std::result::Result<f64, f64>>;

/// When each phase of one array ran, in ms from the first event of the run.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ArrayTimeline {
    pub array: usize,
    pub stream: usize,
    pub h2d: (f32, f32),
    pub kernel: (f32, f32),
    pub d2h: (f32, f32),
}

/// Copy-in, normalise, copy-out of many pinned host arrays, array i on
/// stream i mod nstreams, each array with its own device buffers (a buffer
/// shared between streams would serialise them). Buffers are kept between
/// calls and reallocated when an array's length changes.
pub struct StreamedNormalize<T: Float> {
    gpu: Arc<Gpu>,
    streams: Vec<Arc<CudaStream>>,
    /// Slot i serves array i (None: not needed yet, e.g. an empty array).
    slots: Vec<Option<Slot<T>>>,
}

impl<T: Float> StreamedNormalize<T> {
    pub fn new(gpu: Arc<Gpu>, nstreams: usize) -> Result<Self> {
        if nstreams == 0 {
            return Err(Error::invalid("at least one stream is needed"));
        }
        let streams = (0..nstreams)
            .map(|_| gpu.new_stream())
            .collect::<Result<_>>()?;
        Ok(StreamedNormalize {
            gpu,
            streams,
            slots: Vec::new(),
        })
    }

    pub fn streams(&self) -> &[Arc<CudaStream>] {
        &self.streams
    }

    /// Normalises every array in place and waits. Per array: `Ok(sum)`, or
    /// `Err(sum)` when the sum is zero, not finite or too small to invert (empty arrays included)
    /// and the array is unchanged.
    pub fn run(&mut self, arrays: &mut [PinnedHostSlice<T>]) -> Result<ArrayResults> {
        self.enqueue(arrays, false)?;
        self.finish(arrays)
    }

    /// As [`StreamedNormalize::run`], with events around every phase: the
    /// timeline of each non-empty array, to show how the streams overlap.
    pub fn run_traced(
        &mut self,
        arrays: &mut [PinnedHostSlice<T>],
    ) -> Result<(ArrayResults, Vec<ArrayTimeline>)> {
        self.enqueue(arrays, true)?;
        let results = self.finish(arrays)?;
        let events = |i: usize| {
            let slot = self.slots[i].as_ref().filter(|_| !arrays[i].is_empty());
            slot.and_then(|s| s.events.as_ref())
        };
        let mut timeline = Vec::new();
        if let Some(first) = (0..arrays.len()).find_map(|i| events(i).map(|e| &e[0])) {
            for (i, ev) in (0..arrays.len()).filter_map(|i| Some((i, events(i)?))) {
                let at = |e: &CudaEvent| elapsed_ms(first, e);
                timeline.push(ArrayTimeline {
                    array: i,
                    stream: i % self.streams.len(),
                    h2d: (at(&ev[0])?, at(&ev[1])?),
                    kernel: (at(&ev[1])?, at(&ev[2])?),
                    d2h: (at(&ev[2])?, at(&ev[3])?),
                });
            }
        }
        Ok((results, timeline))
    }

    fn slot(&mut self, i: usize, len: usize, traced: bool) -> Result<()> {
        let stream = &self.streams[i % self.streams.len()];
        let cuda = |during: &'static str| move |e| Error::cuda(during, e);
        if self.slots.len() <= i {
            self.slots.resize_with(i + 1, || None);
        }
        let fits = self.slots[i].as_ref().is_some_and(|s| s.x.len() == len);
        if !fits {
            // SAFETY: the copy-in overwrites all of x before anything reads it.
            let x = unsafe { stream.alloc::<T>(len) }.map_err(cuda("allocating device memory"))?;
            let slot = Slot {
                x,
                sum: stream.alloc_zeros(1).map_err(cuda("allocating the sum"))?,
                status: stream
                    .alloc_zeros(1)
                    .map_err(cuda("allocating the status"))?,
                sum_host: self.gpu.alloc_pinned(1)?,
                status_host: self.gpu.alloc_pinned(1)?,
                events: None,
            };
            self.slots[i] = Some(slot);
        }
        let slot = self.slots[i].as_mut().expect("filled above");
        if traced && slot.events.is_none() {
            slot.events = Some(self.gpu.timing_events()?);
        }
        Ok(())
    }

    fn enqueue(&mut self, arrays: &mut [PinnedHostSlice<T>], traced: bool) -> Result<()> {
        let cuda = |during: &'static str| move |e| Error::cuda(during, e);
        for (i, array) in arrays.iter_mut().enumerate() {
            if array.is_empty() {
                continue;
            }
            self.slot(i, array.len(), traced)?;
            let stream = self.streams[i % self.streams.len()].clone();
            let slot = self.slots[i].as_mut().expect("made by self.slot");
            let mark = |k: usize| match &slot.events {
                Some(ev) if traced => ev[k].record(&stream).map_err(cuda("recording an event")),
                _ => Ok(()),
            };
            mark(0)?;
            stream
                .memcpy_htod(&*array, &mut slot.x)
                .map_err(cuda("copying to the GPU"))?;
            mark(1)?;
            let (x, sum, status) = (&mut slot.x, &mut slot.sum, &mut slot.status);
            let call = NormalizeOnDevice::buffers(&stream, x, sum, status)?;
            // SAFETY: the slot's buffers, allocated on this GPU for this array's length.
            unsafe { self.gpu.launch_fresh(call, ()) }?;
            mark(2)?;
            stream
                .memcpy_dtoh(&slot.x, array)
                .map_err(cuda("copying the result back"))?;
            stream
                .memcpy_dtoh(&slot.sum, &mut slot.sum_host)
                .map_err(cuda("copying the sum back"))?;
            stream
                .memcpy_dtoh(&slot.status, &mut slot.status_host)
                .map_err(cuda("copying the status back"))?;
            mark(3)?;
        }
        Ok(())
    }

    fn finish(&mut self, arrays: &[PinnedHostSlice<T>]) -> Result<ArrayResults> {
        for stream in &self.streams {
            stream
                .synchronize()
                .map_err(|e| Error::cuda("waiting for the streams", e))?;
        }
        let cuda = |e| Error::cuda("reading the results", e);
        let mut results = Vec::with_capacity(arrays.len());
        for (i, array) in arrays.iter().enumerate() {
            if array.is_empty() {
                results.push(Err(0.0));
                continue;
            }
            let slot = self.slots[i].as_ref().expect("made by enqueue");
            let sum = slot.sum_host.as_slice().map_err(cuda)?[0];
            let ok = slot.status_host.as_slice().map_err(cuda)?[0] == 0;
            results.push(if ok { Ok(sum) } else { Err(sum) });
        }
        Ok(results)
    }
}
