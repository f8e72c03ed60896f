//! The layout of a survey partition's rows: one pass over ids and times
//! that kernpack.dask otherwise makes in about ten NumPy passes.
use std::cmp::Ordering;

use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;

use crate::{by_dtype, host, Dtype};

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

/// `(starts, ties)` of [`layout`] for `n` ids of `id_dtype` ("int32",
/// "int64", "uint32", "uint64") at `ids` and `n` times of `t_dtype` at `t`:
/// the rows (after the first) that begin a series, and the rows i whose
/// next row has the same id and time. None where the rows are not ordered
/// by (id, t).
#[pyfunction]
pub(crate) fn series_layout(
    py: Python<'_>,
    id_dtype: &str,
    ids: usize,
    t_dtype: &str,
    t: usize,
    n: usize,
) -> PyResult<Option<(Vec<usize>, Vec<usize>)>> {
    let t_dtype = Dtype::parse(t_dtype)?;
    macro_rules! with_ids {
        ($I:ty) => {
            // SAFETY: live contiguous arrays of n values (the Python layer).
            Ok(py.detach(|| by_dtype!(t_dtype, F => layout(unsafe { host::<$I>(ids, n) }, unsafe { host::<F>(t, n) }))))
        };
    }
    match id_dtype {
        "int32" => with_ids!(i32),
        "int64" => with_ids!(i64),
        "uint32" => with_ids!(u32),
        "uint64" => with_ids!(u64),
        other => Err(PyTypeError::new_err(format!(
            "series_layout takes 32- and 64-bit integer ids, not {other}"
        ))),
    }
}
