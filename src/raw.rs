//! The one checked boundary for foreign memory: what the C ABI (`src/ffi`)
//! and the Python extension receive as addresses and counts becomes checked
//! views here, and nowhere else.
//!
//! - Host memory: [`host`], [`host_mut`], [`optional_host`] and
//!   [`optional_host_mut`] refuse NULL (the optional ones take it as none),
//!   a count past [`MAX_ARRAY_BYTES`] and a misaligned pointer before a slice
//!   is formed.
//! - Overlap: [`check_apart`] is the one checker for every buffer of a call,
//!   host or device; run it before any mutable slice is formed or any kernel
//!   launched.
//! - Lengths the caller states for an output: [`check_len`] (it must equal
//!   what the call writes), [`check_periodogram_len`], [`check_trajectory_len`].
//! - Device memory: [`device`] refuses NULL; [`check_device`] checks a span
//!   against the driver's record of the GPU's allocations (as the safe API's
//!   device path, `Gpu::enqueue`, does for every buffer it is given).
//! - Streams: [`stream`] wraps the caller's `CUstream` for cudarc.
//!
//! It also holds what both bindings do with results, so that neither keeps a
//! copy: [`write_periodogram`] and [`write_periodograms`] (interleaved
//! values), [`batch_grid`] / [`per_series_grid`] (the shared-grid choice) and
//! [`write_peaks`] (a missing peak as index -1, value NaN).
use std::sync::Arc;

use cudarc::driver::CudaStream;

use crate::api::lombscargle::batch::BatchGrid;
use crate::api::lombscargle::peaks::Peak;
use crate::api::lombscargle::{values_per_frequency, UniformGrid};
pub use crate::api::MAX_ARRAY_BYTES;
use crate::error::Error;
use crate::float::Float;
use crate::gpu::Gpu;
use crate::params::lombscargle::{LombScargleOptions, Periodogram};
use crate::params::lorenz::frame_count;

/// Why the boundary refused an argument.
#[derive(Debug, thiserror::Error)]
pub enum RawError {
    /// A required pointer is NULL (the C ABI's KP_ERROR_NULL_POINTER); holds
    /// the argument's name.
    #[error("{0} is NULL")]
    NullPointer(String),
    /// Any other refusal: a size, an alignment, an overlap, a length, or a
    /// failure of the safe API.
    #[error(transparent)]
    Api(#[from] Error),
}

/// Checks that `len` values of `T` at host `ptr` can form a slice: NULL is
/// [`RawError::NullPointer`], a count past [`MAX_ARRAY_BYTES`] or a
/// misaligned pointer an invalid argument naming `name` and the value.
pub fn check_host<T>(name: &str, ptr: *const T, len: usize) -> Result<(), RawError> {
    if ptr.is_null() {
        return Err(RawError::NullPointer(name.into()));
    }
    crate::api::check_array_size::<T>(name, len)?;
    if (ptr as usize) % std::mem::align_of::<T>() != 0 {
        return Err(Error::invalid(format!(
            "{name} ({ptr:p}) is not aligned to {} bytes",
            std::mem::align_of::<T>()
        ))
        .into());
    }
    Ok(())
}

/// `len` values of `T` at host `ptr`, checked by [`check_host`].
///
/// # Safety
/// A non-NULL `ptr` must be readable for `len` values for `'a`, and nothing
/// may write them meanwhile.
pub unsafe fn host<'a, T>(name: &str, ptr: *const T, len: usize) -> Result<&'a [T], RawError> {
    check_host(name, ptr, len)?;
    Ok(unsafe { std::slice::from_raw_parts(ptr, len) })
}

/// As [`host`], writable.
///
/// # Safety
/// A non-NULL `ptr` must be writable for `len` values for `'a`, and no other
/// view may overlap them ([`check_apart`] first).
pub unsafe fn host_mut<'a, T>(
    name: &str,
    ptr: *mut T,
    len: usize,
) -> Result<&'a mut [T], RawError> {
    check_host(name, ptr, len)?;
    Ok(unsafe { std::slice::from_raw_parts_mut(ptr, len) })
}

/// As [`host`], where NULL means "not given".
///
/// # Safety
/// As [`host`].
pub unsafe fn optional_host<'a, T>(
    name: &str,
    ptr: *const T,
    len: usize,
) -> Result<Option<&'a [T]>, RawError> {
    if ptr.is_null() {
        return Ok(None);
    }
    unsafe { host(name, ptr, len) }.map(Some)
}

/// As [`host_mut`], where NULL means "not wanted" (an optional output).
///
/// # Safety
/// As [`host_mut`].
pub unsafe fn optional_host_mut<'a, T>(
    name: &str,
    ptr: *mut T,
    len: usize,
) -> Result<Option<&'a mut [T]>, RawError> {
    if ptr.is_null() {
        return Ok(None);
    }
    unsafe { host_mut(name, ptr, len) }.map(Some)
}

/// `count + 1` values (an offsets array of `count` series) at host `ptr`, as
/// the caller's `i64` values and as indices: a negative offset is an invalid
/// argument naming its position; the copy is allocated fallibly.
///
/// # Safety
/// As [`host`], for `count + 1` values.
pub unsafe fn host_offsets<'a>(
    name: &str,
    ptr: *const i64,
    count: usize,
) -> Result<(&'a [i64], Vec<usize>), RawError> {
    let len = count
        .checked_add(1)
        .ok_or_else(|| Error::invalid(format!("count {count} is impossible")))?;
    let given = unsafe { host(name, ptr, len) }?;
    let mut offsets = Vec::new();
    offsets
        .try_reserve_exact(len)
        .map_err(|_| Error::OutOfMemory(format!("copying {len} offsets")))?;
    for (i, &o) in given.iter().enumerate() {
        let o = usize::try_from(o)
            .map_err(|_| Error::invalid(format!("{name}[{i}] = {o} is negative")))?;
        offsets.push(o);
    }
    Ok((given, offsets))
}

/// A buffer of a call (host or device memory), for [`check_apart`]: its
/// name, address and bytes.
#[derive(Debug, Clone, Copy)]
pub struct Span<'a> {
    name: &'a str,
    start: u64,
    bytes: u64,
}

impl<'a> Span<'a> {
    /// `len` values of `T` at host `ptr` (NULL: no buffer). Sizes are checked
    /// by the views: an impossible one saturates here.
    pub fn of<T>(name: &'a str, ptr: *const T, len: usize) -> Self {
        Self::at::<T>(name, ptr as u64, len)
    }

    /// The values of a slice.
    pub fn slice<T>(name: &'a str, values: &[T]) -> Self {
        Self::of(name, values.as_ptr(), values.len())
    }

    /// `len` values of `T` at address `start` (a device pointer; 0: none).
    pub fn at<T>(name: &'a str, start: u64, len: usize) -> Self {
        Span {
            name,
            start,
            bytes: (len as u64).saturating_mul(std::mem::size_of::<T>() as u64),
        }
    }

    /// A span no memory can back: refused by its own view, which names it
    /// for what it is rather than as an overlap.
    fn impossible(&self) -> bool {
        self.bytes > MAX_ARRAY_BYTES as u64
    }

    fn overlaps(&self, other: &Span) -> bool {
        // NULL (refused by its own view) and empty spans share no byte.
        let real = |s: &Span| s.start != 0 && s.bytes > 0 && !s.impossible();
        real(self) && real(other) && {
            // Ends saturate rather than wrap.
            self.start < other.start.saturating_add(other.bytes)
                && other.start < self.start.saturating_add(self.bytes)
        }
    }
}

/// Every buffer a call writes (`outputs`) must share no byte with another
/// buffer of the call, written or read: a shared and a mutable slice over
/// the same memory would be undefined behaviour, and a result written over
/// an input still being read would be wrong. The message names both buffers.
pub fn check_apart(outputs: &[Span], inputs: &[Span]) -> Result<(), Error> {
    for (i, out) in outputs.iter().enumerate() {
        for other in outputs[i + 1..].iter().chain(inputs) {
            if out.overlaps(other) {
                return Err(Error::invalid(format!(
                    "{} and {} overlap: pass separate buffers",
                    out.name, other.name
                )));
            }
        }
    }
    Ok(())
}

/// A count the caller gives as two factors (`members` x `N`, `rows` x `n`),
/// or an invalid argument naming both when the product overflows.
pub fn product(a_name: &str, a: usize, b_name: &str, b: usize) -> Result<usize, Error> {
    a.checked_mul(b).ok_or_else(|| {
        Error::invalid(format!(
            "{a_name} x {b_name} = {a} x {b} overflows a size_t"
        ))
    })
}

/// The length the caller states for an output (`name`, e.g. "out_len") must
/// be what the call writes: `written` values of `unit` ("values"), `None`
/// when that count overflows (no buffer can hold it).
pub fn check_len(
    name: &str,
    given: usize,
    written: Option<usize>,
    unit: &str,
) -> Result<(), Error> {
    match written {
        Some(w) if w == given => Ok(()),
        Some(w) => Err(Error::invalid(format!(
            "{name} is {given}, {w} {unit} are written"
        ))),
        None => Err(Error::invalid(format!(
            "{name} is {given}, and the {unit} the call would write overflow a size_t"
        ))),
    }
}

/// `out_len` must be what `nseries` periodograms of `nf` frequencies hold
/// (`nseries` x `output_len(nf)`).
pub fn check_periodogram_len(
    out_len: usize,
    nseries: usize,
    nf: usize,
    opts: &LombScargleOptions,
) -> Result<(), Error> {
    let written = nf
        .checked_mul(values_per_frequency(opts))
        .and_then(|per| per.checked_mul(nseries));
    check_len("out_len", out_len, written, "values")
}

/// `trajectory_len` (used only with `every` > 0) must be what a run of
/// `len` state values writes: one frame of them every `every` steps, and the
/// initial one.
pub fn check_trajectory_len(given: usize, len: usize, steps: u64, every: u64) -> Result<(), Error> {
    if every == 0 {
        return Ok(());
    }
    // frame_count saturates at usize::MAX, which no buffer holds either.
    let frames = frame_count(steps, every);
    let written = frames.checked_mul(len).ok_or_else(|| {
        Error::invalid(format!(
            "a trajectory of {frames} frames (steps {steps}, every {every}) of {len} values \
             does not fit in memory"
        ))
    })?;
    let unit = "values (kp_lorenz_trajectory_len)";
    check_len("trajectory_len", given, Some(written), unit)
}

/// A device address, or [`RawError::NullPointer`] naming it. (The safe API's
/// device entry points check it against the driver's record before launch.)
pub fn device(name: &str, ptr: u64) -> Result<u64, RawError> {
    if ptr == 0 {
        return Err(RawError::NullPointer(name.into()));
    }
    Ok(ptr)
}

/// Checks that `len` values of `T` at device `ptr` lie inside one allocation
/// of `gpu`, from the driver's record: NULL, host memory, another GPU's or a
/// span past the allocation's end is refused, naming `name`.
pub fn check_device<T>(gpu: &Gpu, name: &str, ptr: u64, len: usize) -> Result<(), RawError> {
    device(name, ptr)?;
    Ok(gpu.check_device_array::<T>(name, ptr, len)?)
}

/// The caller's `stream` (a `CUstream`; 0 is CUDA's legacy default stream)
/// as a cudarc stream of `gpu`, for work enqueued with no synchronisation.
///
/// # Safety
/// A non-zero `stream` must be a live `CUstream` of `gpu`'s primary context
/// (the one CuPy, PyTorch and the CUDA runtime use), alive while the
/// returned handle is used.
pub unsafe fn stream(gpu: &Gpu, stream: u64) -> Arc<CudaStream> {
    unsafe {
        gpu.context()
            .wrap_borrowed_stream(stream as cudarc::driver::sys::CUstream)
    }
}

/// Writes `p` into `out` as the bindings lay it out: real values as they
/// are, complex amplitudes as interleaved (re, im) pairs. `out` holds
/// exactly `output_len(nf)` values (checked by the caller's view).
pub fn write_periodogram<T: Float>(p: &Periodogram<T>, out: &mut [T]) {
    match p {
        Periodogram::Real(v) => out.copy_from_slice(v),
        Periodogram::Complex(v) => {
            for (pair, c) in out.chunks_exact_mut(2).zip(v) {
                pair[0] = c.re;
                pair[1] = c.im;
            }
        }
    }
}

/// Writes a batch's periodograms one after another, `per_series` values
/// each, as [`write_periodogram`].
pub fn write_periodograms<T: Float>(ps: &[Periodogram<T>], out: &mut [T], per_series: usize) {
    for (p, slot) in ps.iter().zip(out.chunks_exact_mut(per_series.max(1))) {
        write_periodogram(p, slot);
    }
}

/// The grids of a batch as the bindings give them: one `f0`, `df` pair is
/// a grid shared by every series, more are one grid per series (their count
/// is checked against the series by the safe API).
pub fn batch_grid<'a>(f0: &'a [f64], df: &'a [f64], nf: usize) -> BatchGrid<'a> {
    match (f0, df) {
        ([f0], [df]) => BatchGrid::Shared(UniformGrid::new(*f0, *df, nf)),
        _ => BatchGrid::PerSeries { f0, df, nf },
    }
}

/// Whether `ngrids` device grids are one per series (`true`) or one shared
/// (`false`); any other count is an invalid argument naming it.
pub fn per_series_grid(ngrids: usize, nseries: usize) -> Result<bool, Error> {
    match ngrids {
        1 => Ok(false),
        n if n == nseries => Ok(true),
        n => Err(Error::invalid(format!(
            "ngrids is {n}: 1 (shared) or nseries ({nseries})"
        ))),
    }
}

/// Writes each series' peak as the bindings report it: its index and value,
/// or index -1 and value NaN when the periodogram has no non-NaN value.
pub fn write_peaks(peaks: &[Option<Peak>], index: &mut [i64], value: &mut [f64]) {
    for ((i, v), peak) in index.iter_mut().zip(value.iter_mut()).zip(peaks) {
        (*i, *v) = peak.map_or((-1, f64::NAN), |p| (p.index as i64, p.value));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spans_that_share_a_byte_overlap_and_touching_ones_do_not() {
        let a = Span::at::<f32>("a", 1000, 4); // bytes 1000..1016
        let touching = Span::at::<f32>("b", 1016, 4);
        let sharing = Span::at::<f32>("c", 1012, 4);
        let empty = Span::at::<f32>("d", 1004, 0);
        assert!(check_apart(&[a], &[touching, empty]).is_ok());
        let err = check_apart(&[a], &[sharing]).unwrap_err().to_string();
        assert!(err.contains("a and c overlap"), "{err}");
        // Two outputs are checked against each other too.
        assert!(check_apart(&[a, sharing], &[]).is_err());
        // A span ending past the address space saturates instead of wrapping.
        let top = Span::at::<f64>("h", u64::MAX - 64, 1 << 20);
        assert!(check_apart(&[top], &[Span::at::<f64>("x", 8, 1)]).is_ok());
        assert!(check_apart(&[top], &[Span::at::<f64>("x", u64::MAX - 4, 1)]).is_err());
        // An impossible span is left to its view's size check.
        let huge = Span::at::<f64>("h", 1000, usize::MAX);
        assert!(check_apart(&[huge], &[a]).is_ok());
    }

    #[test]
    fn host_views_refuse_null_huge_and_misaligned_pointers() {
        let v = [1.0f64, 2.0];
        assert!(matches!(
            check_host::<f64>("x", std::ptr::null(), 1),
            Err(RawError::NullPointer(n)) if n == "x"
        ));
        let err = check_host("x", v.as_ptr(), usize::MAX)
            .unwrap_err()
            .to_string();
        assert!(err.contains("x: ") && err.contains("exceed"), "{err}");
        let odd = (v.as_ptr() as usize + 1) as *const f64;
        let err = check_host("x", odd, 1).unwrap_err().to_string();
        assert!(err.contains("not aligned to 8 bytes"), "{err}");
        assert_eq!(unsafe { host("x", v.as_ptr(), 2) }.unwrap(), &v);
    }

    #[test]
    fn a_product_that_overflows_names_both_factors() {
        assert_eq!(product("rows", 3, "n", 4).unwrap(), 12);
        let err = product("members", 2, "N", usize::MAX)
            .unwrap_err()
            .to_string();
        assert!(
            err.contains(&format!("members x N = 2 x {}", usize::MAX)),
            "{err}"
        );
    }

    #[test]
    fn offsets_are_copied_as_indices_and_negative_ones_named() {
        let given = [0i64, 2, 5];
        let (raw, idx) = unsafe { host_offsets("offsets", given.as_ptr(), 2) }.unwrap();
        assert_eq!((raw, idx.as_slice()), (&given[..], &[0usize, 2, 5][..]));
        let bad = [0i64, -3];
        let err = unsafe { host_offsets("offsets", bad.as_ptr(), 1) }.unwrap_err();
        assert!(
            err.to_string().contains("offsets[1] = -3 is negative"),
            "{err}"
        );
        let err = unsafe { host_offsets("offsets", bad.as_ptr(), usize::MAX) }.unwrap_err();
        assert!(err.to_string().contains("impossible"), "{err}");
    }

    #[test]
    fn results_are_written_as_the_bindings_lay_them_out() {
        use crate::float::Complex;
        let mut out = [0.0f32; 4];
        let p = Periodogram::Complex(vec![
            Complex { re: 1.0, im: 2.0 },
            Complex { re: 3.0, im: 4.0 },
        ]);
        write_periodogram(&p, &mut out);
        assert_eq!(out, [1.0, 2.0, 3.0, 4.0]);
        let (mut index, mut value) = ([0i64; 2], [0.0f64; 2]);
        let peaks = [
            None,
            Some(Peak {
                index: 7,
                value: 0.5,
            }),
        ];
        write_peaks(&peaks, &mut index, &mut value);
        assert_eq!((index, value[1]), ([-1, 7], 0.5));
        assert!(value[0].is_nan());
        assert!(matches!(
            batch_grid(&[1.0], &[0.5], 3),
            BatchGrid::Shared(_)
        ));
        let two = [1.0, 2.0];
        assert!(matches!(
            batch_grid(&two, &two, 3),
            BatchGrid::PerSeries { .. }
        ));
        assert!(!per_series_grid(1, 5).unwrap());
        assert!(per_series_grid(5, 5).unwrap());
        let err = per_series_grid(2, 5).unwrap_err().to_string();
        assert!(
            err.contains("ngrids is 2: 1 (shared) or nseries (5)"),
            "{err}"
        );
    }
}
