//! Rank filters on the device (csrc/rank.cu): the call's description, the
//! one validation of a rank filter call, and the choice of kernel.
use std::marker::PhantomData;
use std::sync::Arc;

use cudarc::driver::sys::CUdeviceptr;
use cudarc::driver::{CudaStream, DevicePtr, DevicePtrMut};

use super::c_params::{
    KP_RANK_DIGIT_THREADS, KP_RANK_FLOAT, KP_RANK_NETWORK_MAX, KP_RANK_NETWORK_MAX_64,
    KP_RANK_NETWORK_THREADS, KP_RANK_SIGNED, KP_RANK_SLIDING_THREADS, KP_RANK_UNSIGNED,
};
use super::device::{check_disjoint, DeviceOperation, Guards, OnBuffers};
use super::launch::{In, LaunchConfig, Out};
use super::stencil::kernel_mode;
use super::{kernels, Gpu, RankParams};
use crate::error::{Error, Result};
use crate::params::rank::{KeyKind, RankFilterOptions, RankValue, Window};

// The kernels' KP_RANK_* are the key kinds' discriminants.
const _: () = assert!(
    KeyKind::Unsigned as u32 == KP_RANK_UNSIGNED
        && KeyKind::Signed as u32 == KP_RANK_SIGNED
        && KeyKind::Float as u32 == KP_RANK_FLOAT
);

/// The network capacities, smallest first.
const NETWORKS: [usize; 4] = [9, 25, 49, 81];
/// Rows per work unit: the sliding kernel's segment (long enough to amortise
/// filling its histogram), the 3 x 3 kernel's (each unit sorts two rows
/// more than it writes) and the networks' (amortising a unit's divisions).
const SLIDING_SEGMENT: usize = 128;
const MEDIAN3X3_ROWS: usize = 64;
const ROWS_PER_UNIT: usize = 32;
/// Histogram counts of the sliding kernel are 16-bit.
const SLIDING_MAX_POINTS: usize = u16::MAX as usize;
/// Axes the kernels take after merging unfiltered neighbours.
const AXES: usize = 4;

/// The one validation of a rank filter call: the shape, the options for it,
/// `cval` as `T` (constant mode), and the buffers' lengths. Returns the rank.
pub(crate) fn validate<T: RankValue>(
    shape: &[usize],
    opts: &RankFilterOptions,
    input_len: usize,
    output_len: usize,
) -> Result<usize> {
    let size = crate::params::array_size(shape)
        .filter(|&n| n <= i64::MAX as usize / 8)
        .ok_or_else(|| Error::invalid(format!("an array of shape {shape:?} is too large")))?;
    let rank = opts.check(shape)?;
    if opts.mode == crate::params::stencil::BoundaryMode::Constant
        && T::from_cval(opts.cval).is_none()
    {
        return Err(Error::invalid(format!(
            "cval {} does not fit {}",
            opts.cval,
            T::NAME
        )));
    }
    for (what, len) in [("input", input_len), ("output", output_len)] {
        if len != size {
            return Err(Error::invalid(format!(
                "the {what} holds {len} values, an array of shape {shape:?} holds {size}"
            )));
        }
    }
    Ok(rank)
}

/// A rank filter on device memory ([`Gpu::enqueue`]): `input` and `output`
/// hold the row-major array of `shape`, apart. Up to four axes after
/// merging neighbouring axes the footprint does not extend along.
#[derive(Debug, Clone)]
pub struct RankFilterOnDevice<T> {
    pub input: CUdeviceptr,
    pub output: CUdeviceptr,
    pub shape: Vec<usize>,
    pub opts: RankFilterOptions,
    pub dtype: PhantomData<T>,
}

impl<T: RankValue> RankFilterOnDevice<T> {
    /// The filter over cudarc buffers of the array's size.
    pub fn buffers<'a>(
        stream: &'a Arc<CudaStream>,
        input: &'a impl DevicePtr<T>,
        output: &'a mut impl DevicePtrMut<T>,
        shape: &[usize],
        opts: &RankFilterOptions,
    ) -> Result<OnBuffers<'a, Self>> {
        validate::<T>(shape, opts, input.len(), output.len())?;
        let mut g = Guards::new(stream);
        let op = RankFilterOnDevice {
            input: g.read(input),
            output: g.write(output),
            shape: shape.to_vec(),
            opts: opts.clone(),
            dtype: PhantomData,
        };
        Ok(g.with(op))
    }

    fn size(&self) -> usize {
        self.shape.iter().product()
    }
}

/// The device's view of a call: the array as `AXES` axes, the footprint's
/// table, and the kernel parameters but the work split.
struct Geometry {
    params: RankParams,
    /// 5 values per point: the flat offset, then the offset per axis.
    taps: Vec<i64>,
    full_box: bool,
}

/// Merges runs of axes the footprint does not extend along (size 1, origin 0)
/// and pads to `AXES` axes in front: the shape and the options over it (the
/// mask's order is unchanged). None when more than `AXES` axes remain.
fn merged(shape: &[usize], opts: &RankFilterOptions) -> Option<(Vec<usize>, RankFilterOptions)> {
    let fp = &opts.footprint;
    let mut axes: Vec<(usize, usize, i64)> = Vec::new();
    let mut last_plain = false;
    for (a, &n) in shape.iter().enumerate() {
        let (f, o) = (fp.shape[a], opts.origin_of(a));
        let plain = f == 1 && o == 0;
        match axes.last_mut() {
            Some(prev) if plain && last_plain => prev.0 *= n,
            _ => axes.push((n, f, o)),
        }
        last_plain = plain;
    }
    if axes.len() > AXES {
        return None;
    }
    while axes.len() < AXES {
        axes.insert(0, (1, 1, 0));
    }
    let opts = RankFilterOptions {
        footprint: crate::params::rank::Footprint {
            shape: axes.iter().map(|a| a.1).collect(),
            mask: fp.mask.clone(),
        },
        origin: axes.iter().map(|a| a.2).collect(),
        ..opts.clone()
    };
    Some((axes.iter().map(|a| a.0).collect(), opts))
}

impl Geometry {
    /// The geometry of options [`validate`]d for `shape`; an error only when
    /// more than `AXES` axes remain after merging.
    fn new<T: RankValue>(shape: &[usize], opts: &RankFilterOptions) -> Result<Self> {
        let rank = opts.resolved_rank()?;
        let (n, four) = merged(shape, opts).ok_or_else(|| {
            Error::invalid(format!(
                "the GPU takes rank filters over up to {AXES} axes once neighbouring axes the \
                 footprint does not extend along are merged; a footprint of shape {:?} over an \
                 array of shape {shape:?} leaves more (the CPU backend takes it)",
                opts.footprint.shape
            ))
        })?;
        let window = Window::new(&n, &four);
        let strides = window.strides();
        let reach = window.reach();
        let mut taps = Vec::with_capacity(5 * window.taps.len());
        for t in &window.taps {
            taps.push(t.iter().zip(&strides).map(|(d, s)| d * s).sum());
            taps.extend_from_slice(t);
        }
        let n4: [i64; 4] = std::array::from_fn(|a| n[a] as i64);
        let params = RankParams {
            n: n4,
            lo: std::array::from_fn(|a| -reach[a].0),
            hi: std::array::from_fn(|a| n4[a] - reach[a].1),
            first: std::array::from_fn(|a| reach[a].0),
            size: std::array::from_fn(|a| four.footprint.shape[a] as i64),
            count: window.taps.len() as i64,
            rank: rank as i64,
            segment: 0,
            segments: 0,
            xblocks: 0,
            units: 0,
            cval: if opts.mode == crate::params::stencil::BoundaryMode::Constant {
                T::from_cval(opts.cval).expect("validated").bits()
            } else {
                0
            },
            mode: kernel_mode(opts.mode),
            kind: T::KIND as i32,
            width: std::mem::size_of::<T>() as i32,
            unused: 0,
        };
        Ok(Geometry {
            params,
            taps,
            full_box: opts.footprint.is_full(),
        })
    }
}

/// Which kernel runs a call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Plan {
    Median3x3,
    Network(usize),
    Sliding,
    Digits,
}

/// The kernel for elements of `width` bytes, a footprint of `count` points
/// (`full`: a whole box of `size` per merged axis), rank `rank`: the 3 x 3
/// median's own; a sliding histogram for 8-bit boxes of more than 25 points
/// along rows of more than one point; a network up to its capacity; else
/// radix selection. (H200, 8192^2 uint8: the 5 x 5 network 6.4 ms against
/// 7.0 sliding, 9 x 9 28.5 ms against 5.5.)
fn plan(width: usize, count: usize, full: bool, size: [i64; 4], rank: i64, rows: i64) -> Plan {
    if full && size == [1, 1, 3, 3] && rank == 4 {
        return Plan::Median3x3;
    }
    if width == 1 && full && count > 25 && count <= SLIDING_MAX_POINTS && rows > 1 {
        return Plan::Sliding;
    }
    let max = if width == 8 {
        KP_RANK_NETWORK_MAX_64
    } else {
        KP_RANK_NETWORK_MAX
    } as usize;
    match NETWORKS.iter().find(|&&cap| count <= cap && cap <= max) {
        Some(&cap) => Plan::Network(cap),
        None => Plan::Digits,
    }
}

impl<T: RankValue> DeviceOperation for RankFilterOnDevice<T> {
    type Checked = ();

    fn check_shapes(&self) -> Result<()> {
        let size = crate::params::array_size(&self.shape).unwrap_or(usize::MAX);
        validate::<T>(&self.shape, &self.opts, size, size)?;
        Geometry::new::<T>(&self.shape, &self.opts).map(|_| ())
    }

    fn check_memory(&self, gpu: &Gpu) -> Result<()> {
        let n = self.size();
        if n == 0 {
            return Ok(());
        }
        check_disjoint::<T>(self.input, n, self.output, n)?;
        gpu.check_device_array::<T>("input", self.input, n)?;
        gpu.check_device_array::<T>("output", self.output, n)
    }

    unsafe fn launch(&self, gpu: &Gpu, stream: &Arc<CudaStream>, _: ()) -> Result<()> {
        let n = self.size();
        if n == 0 {
            return Ok(());
        }
        // Validated by check_shapes (or by `buffers`, for fresh buffers).
        let Geometry {
            mut params,
            taps,
            full_box,
        } = Geometry::new::<T>(&self.shape, &self.opts)?;
        let width = std::mem::size_of::<T>();
        let (count, size, rank) = (params.count as usize, params.size, params.rank);
        let plan = plan(width, count, full_box, size, rank, params.n[2]);
        let (threads, segment) = match plan {
            Plan::Median3x3 => (KP_RANK_NETWORK_THREADS, MEDIAN3X3_ROWS),
            Plan::Network(_) => (KP_RANK_NETWORK_THREADS, ROWS_PER_UNIT),
            Plan::Digits => (KP_RANK_DIGIT_THREADS, ROWS_PER_UNIT),
            Plan::Sliding => (KP_RANK_SLIDING_THREADS, SLIDING_SEGMENT),
        };
        let segment = segment.min(params.n[2] as usize).max(1) as i64;
        params.segment = segment;
        params.segments = (params.n[2] + segment - 1) / segment;
        params.xblocks = (params.n[3] + i64::from(threads) - 1) / i64::from(threads);
        params.units = params.xblocks * params.segments * params.n[0] * params.n[1];
        // Enough blocks for a few waves; the grid strides over the rest.
        let blocks = params.units.min(i64::from(gpu.sm_count().max(1)) * 64) as u32;
        let config = LaunchConfig::grid(blocks);
        let (input, output) = (self.input, self.output);
        let table = gpu_table(stream, &taps)?;
        let table_ptr = In::<i64>::new(table.device_ptr(stream).0);
        // SAFETY: the spans were checked against the driver's record, apart;
        // the params describe them and the table holds `count` points.
        unsafe {
            match (plan, width) {
                (Plan::Median3x3, 8) => gpu.launch(
                    &kernels::rank_median3x3_b64(),
                    config,
                    stream,
                    (In::new(input), Out::new(output), params),
                ),
                (Plan::Median3x3, _) => gpu.launch(
                    &kernels::rank_median3x3_b32(),
                    config,
                    stream,
                    (In::new(input), Out::new(output), params),
                ),
                (Plan::Sliding, _) => gpu.launch(
                    &kernels::rank_sliding_b8(),
                    config,
                    stream,
                    (In::new(input), Out::new(output), params),
                ),
                (Plan::Network(cap), 8) => gpu.launch(
                    &kernels::rank_network_b64(cap),
                    config,
                    stream,
                    (In::new(input), Out::new(output), table_ptr, params),
                ),
                (Plan::Network(cap), _) => gpu.launch(
                    &kernels::rank_network_b32(cap),
                    config,
                    stream,
                    (In::new(input), Out::new(output), table_ptr, params),
                ),
                (Plan::Digits, 8) => gpu.launch(
                    &kernels::rank_digits_b64(),
                    config,
                    stream,
                    (In::new(input), Out::new(output), table_ptr, params),
                ),
                (Plan::Digits, _) => gpu.launch(
                    &kernels::rank_digits_b32(),
                    config,
                    stream,
                    (In::new(input), Out::new(output), table_ptr, params),
                ),
            }
        }
    }
}

/// The footprint table on the device, stream-ordered (freed after the launch).
fn gpu_table(stream: &Arc<CudaStream>, taps: &[i64]) -> Result<cudarc::driver::CudaSlice<i64>> {
    stream
        .clone_htod(taps)
        .map_err(|e| Error::cuda("copying the footprint to the GPU", e))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::params::rank::Footprint;

    #[test]
    fn plans_follow_width_count_and_shape() {
        let (b3, b5, row9) = ([1, 1, 3, 3], [1, 1, 5, 5], [1, 1, 1, 9]);
        assert_eq!(plan(1, 9, true, b3, 4, 100), Plan::Median3x3);
        assert_eq!(plan(8, 9, true, b3, 4, 100), Plan::Median3x3);
        assert_eq!(plan(4, 9, true, b3, 3, 100), Plan::Network(9));
        assert_eq!(plan(1, 9, true, row9, 4, 1), Plan::Network(9));
        assert_eq!(plan(4, 10, false, b5, 4, 100), Plan::Network(25));
        assert_eq!(plan(2, 81, true, [1, 1, 9, 9], 4, 100), Plan::Network(81));
        assert_eq!(plan(8, 25, true, b5, 4, 100), Plan::Network(25));
        assert_eq!(plan(8, 26, false, b5, 4, 100), Plan::Digits);
        assert_eq!(plan(1, 25, true, b5, 12, 100), Plan::Network(25));
        assert_eq!(plan(1, 49, true, [1, 1, 7, 7], 12, 100), Plan::Sliding);
        assert_eq!(plan(1, 82, false, b5, 4, 100), Plan::Digits);
        assert_eq!(plan(1, 82, true, [1, 1, 1, 82], 4, 1), Plan::Digits);
        assert_eq!(plan(4, 82, true, [1, 1, 2, 41], 4, 100), Plan::Digits);
    }

    #[test]
    fn unfiltered_neighbours_merge_into_four_axes() {
        let mut opts = RankFilterOptions::median(&[1, 1, 3, 1, 1, 3]);
        let (n, four) = merged(&[2, 3, 4, 5, 6, 7], &opts).expect("four axes");
        assert_eq!(n, vec![6, 4, 30, 7]);
        assert_eq!(four.footprint.shape, vec![1, 3, 1, 3]);
        let (n, four) = merged(&[9, 10], &opts_2d()).expect("padded");
        assert_eq!(n, vec![1, 1, 9, 10]);
        assert_eq!(four.footprint.shape, vec![1, 1, 3, 3]);
        opts.footprint = Footprint::full(&[3, 1, 3, 1, 3, 1]);
        assert!(merged(&[2, 3, 4, 5, 6, 7], &opts).is_none());
    }

    fn opts_2d() -> RankFilterOptions {
        RankFilterOptions::median(&[3, 3])
    }
}
