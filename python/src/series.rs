//! The layout of a survey partition's rows: one pass over ids and times
//! that kernpack.dask otherwise makes in about ten NumPy passes.
use std::cmp::Ordering;

use numpy::{Element, PyUntypedArray, PyUntypedArrayMethods};
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;

use crate::arrays::{by_dtype, holds, Dtype, In};

/// Where the rows, in their stored order, begin a new series, and which
/// neighbours share id and time; None unless they are ordered by (id, t)
/// (ids non-decreasing, times non-decreasing within a series; a NaN time
/// inside a series is out of order, as NumPy's comparisons make it).
fn layout<I: PartialOrd + Copy, F: PartialOrd + Copy>(
    ids: &[I],
    t: &[F],
) -> Option<(Vec<usize>, Vec<usize>)> {
    let mut starts = Vec::new();
    let mut ties = Vec::new();
    for i in 1..ids.len() {
        if ids[i] != ids[i - 1] {
            if ids[i] < ids[i - 1] {
                return None;
            }
            starts.push(i);
        } else {
            // Later, equal (a tie), or out of order (earlier, or NaN: no order).
            match t[i].partial_cmp(&t[i - 1]) {
                Some(Ordering::Greater) => {}
                Some(Ordering::Equal) => ties.push(i - 1),
                _ => return None,
            }
        }
    }
    Some((starts, ties))
}

/// `(starts, ties)` of [`layout`] for the 1-D host arrays `ids` (int32,
/// int64, uint32 or uint64) and `t` (float32 or float64, as long): the rows
/// (after the first) that begin a series, and the rows i whose next row has
/// the same id and time. None where the rows are not ordered by (id, t).
#[pyfunction]
pub(crate) fn series_layout(
    ids: &Bound<'_, PyUntypedArray>,
    t: &Bound<'_, PyUntypedArray>,
) -> PyResult<Option<(Vec<usize>, Vec<usize>)>> {
    if ids.len() != t.len() {
        return Err(PyValueError::new_err(format!(
            "ids and t must be as long: {} and {}",
            ids.len(),
            t.len()
        )));
    }
    if holds::<i32>(ids) {
        layout_of::<i32>(ids, t)
    } else if holds::<i64>(ids) {
        layout_of::<i64>(ids, t)
    } else if holds::<u32>(ids) {
        layout_of::<u32>(ids, t)
    } else if holds::<u64>(ids) {
        layout_of::<u64>(ids, t)
    } else {
        Err(PyTypeError::new_err(format!(
            "series_layout takes 32- and 64-bit integer ids, not {}",
            ids.dtype()
        )))
    }
}

/// [`layout`] of ids of type `I` and float times, with the GIL released.
fn layout_of<I: Element + PartialOrd + Copy + Sync>(
    ids: &Bound<'_, PyUntypedArray>,
    t: &Bound<'_, PyUntypedArray>,
) -> PyResult<Option<(Vec<usize>, Vec<usize>)>> {
    let py = ids.py();
    by_dtype!(Dtype::of("t", t)?, F => {
        let (ids, t) = (In::<I>::new("ids", ids)?, In::<F>::new("t", t)?);
        let (ids, t) = (ids.values(), t.values());
        Ok(py.detach(|| layout(ids, t)))
    })
}
