//! Rank filters (`median_filter`, `rank_filter`, `percentile_filter`) over
//! a footprint of an N-D array, host and device buffers, C-contiguous, for
//! every element type of kernpack's rank filters (integers of 8 to 64 bits,
//! float32, float64). The Python layer resolves SciPy's arguments (footprint,
//! origins, rank) and passes them as they are; the API checks them again.
use numpy::{IxDyn, PyUntypedArray, PyUntypedArrayMethods};
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;

use std::marker::PhantomData;

use kernpack::{Footprint, Rank, RankFilterOnDevice, RankFilterOptions};

use crate::arrays::{holds, In, Out};
use crate::{to_py, Context};

/// The element types of the rank filters (and of the N-D box filter,
/// python/src/uniform.rs).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum RankDtype {
    U8,
    I8,
    U16,
    I16,
    U32,
    I32,
    U64,
    I64,
    F32,
    F64,
}

/// NumPy's names of the types, in the enum's order.
const NAMES: [(&str, RankDtype); 10] = [
    ("uint8", RankDtype::U8),
    ("int8", RankDtype::I8),
    ("uint16", RankDtype::U16),
    ("int16", RankDtype::I16),
    ("uint32", RankDtype::U32),
    ("int32", RankDtype::I32),
    ("uint64", RankDtype::U64),
    ("int64", RankDtype::I64),
    ("float32", RankDtype::F32),
    ("float64", RankDtype::F64),
];

const EXPECTED: &str =
    "kernpack's rank and N-D box filters take (u)int8 to (u)int64, float32 or float64";

/// The dtype a device call names.
impl<'a, 'py> FromPyObject<'a, 'py> for RankDtype {
    type Error = PyErr;

    fn extract(obj: Borrowed<'a, 'py, PyAny>) -> PyResult<Self> {
        let name = obj.extract::<String>()?;
        NAMES
            .iter()
            .find(|(n, _)| *n == name)
            .map(|&(_, d)| d)
            .ok_or_else(|| PyValueError::new_err(format!("dtype {name:?}: {EXPECTED}")))
    }
}

/// Runs `$body` with `$T` bound to the Rust type of `$dtype`.
macro_rules! by_rank_dtype {
    ($dtype:expr, $T:ident => $body:expr) => {
        by_rank_dtype!(@arms $dtype, $T, $body,
            U8 u8, I8 i8, U16 u16, I16 i16, U32 u32, I32 i32, U64 u64, I64 i64, F32 f32, F64 f64)
    };
    (@arms $dtype:expr, $T:ident, $body:expr, $($V:ident $t:ty),*) => {
        match $dtype {
            $($crate::rank::RankDtype::$V => {
                type $T = $t;
                $body
            })*
        }
    };
}
pub(crate) use by_rank_dtype;

impl RankDtype {
    /// The element type of host array `name`; any other dtype is a TypeError.
    pub(crate) fn of(name: &str, array: &Bound<'_, PyUntypedArray>) -> PyResult<Self> {
        for &(_, d) in &NAMES {
            let held = by_rank_dtype!(d, T => holds::<T>(array));
            if held {
                return Ok(d);
            }
        }
        Err(PyTypeError::new_err(format!(
            "{name} is {}: {EXPECTED}",
            array.dtype()
        )))
    }
}

/// The options of a call: the footprint (its shape, one size per axis of
/// the array, and its row-major mask), one origin per axis, the rank
/// (0-based from the smallest; negative counts from the largest), the mode
/// and cval.
fn options(
    footprint_shape: Vec<usize>,
    mask: Vec<bool>,
    origin: Vec<i64>,
    rank: i64,
    mode: &str,
    cval: f64,
) -> PyResult<RankFilterOptions> {
    Ok(RankFilterOptions {
        footprint: Footprint {
            shape: footprint_shape,
            mask,
        },
        rank: Rank::Index(rank),
        origin,
        mode: mode.parse().map_err(to_py)?,
        cval,
    })
}

/// The rank filter from the C-contiguous array `input` into `output` (its
/// shape and dtype, any number of dimensions); nothing is written on error.
/// `output` sharing memory with `input` is refused (the Python layer filters
/// into a temporary then).
#[pyfunction]
pub(crate) fn rank_filter(
    ctx: &Context,
    input: &Bound<'_, PyUntypedArray>,
    output: &Bound<'_, PyUntypedArray>,
    footprint_shape: Vec<usize>,
    mask: Vec<bool>,
    origin: Vec<i64>,
    rank: i64,
    mode: &str,
    cval: f64,
) -> PyResult<()> {
    let (py, kp) = (input.py(), &ctx.kp);
    let opts = options(footprint_shape, mask, origin, rank, mode, cval)?;
    by_rank_dtype!(RankDtype::of("input", input)?, T => {
        let src = In::<T, IxDyn>::new("input", input)?;
        let mut dst = Out::<T, IxDyn>::new("output", output)?;
        if dst.shape() != src.shape() {
            return Err(PyValueError::new_err(format!(
                "output has shape {:?} but input {:?}: they must be equal",
                dst.shape(),
                src.shape()
            )));
        }
        let shape = src.shape().to_vec();
        let (i, o) = (src.values(), dst.values());
        py.detach(|| kp.rank_filter_into(i, o, &shape, &opts)).map_err(to_py)
    })
}

/// As [`rank_filter`], on C-contiguous device buffers of `shape` and
/// `dtype`, enqueued on `stream`.
#[pyfunction]
pub(crate) fn rank_filter_device(
    py: Python<'_>,
    ctx: &Context,
    dtype: RankDtype,
    input: u64,
    output: u64,
    shape: Vec<usize>,
    footprint_shape: Vec<usize>,
    mask: Vec<bool>,
    origin: Vec<i64>,
    rank: i64,
    mode: &str,
    cval: f64,
    stream: usize,
) -> PyResult<()> {
    let opts = options(footprint_shape, mask, origin, rank, mode, cval)?;
    ctx.enqueue(py, stream, move |gpu, stream| {
        // SAFETY: both buffers are checked device allocations of the shape's size, apart.
        by_rank_dtype!(dtype, T => unsafe {
            gpu.enqueue(stream, &RankFilterOnDevice::<T> { input, output, shape, opts, dtype: PhantomData })
        })
    })
}
