//! Host arrays as they arrive from Python: NumPy arrays, checked here before
//! any slice is made of them. rust-numpy checks the dtype and the number of
//! dimensions and takes the borrow, which refuses a read-only array to write
//! and an array to write that shares memory with another argument of the
//! call; this module adds C-contiguity and alignment, and names the argument
//! in every error.
use numpy::ndarray::Dimension;
use numpy::{
    BorrowError, Element, Ix1, Ix2, PyArray, PyArrayDescrMethods, PyArrayMethods, PyReadonlyArray,
    PyReadwriteArray, PyUntypedArray, PyUntypedArrayMethods,
};
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;

/// The element types of kernpack's kernels.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Dtype {
    F32,
    F64,
}

/// The dtype a device call names (device arrays are not NumPy arrays).
impl<'a, 'py> FromPyObject<'a, 'py> for Dtype {
    type Error = PyErr;

    fn extract(obj: Borrowed<'a, 'py, PyAny>) -> PyResult<Self> {
        match &*obj.extract::<String>()? {
            "float32" => Ok(Dtype::F32),
            "float64" => Ok(Dtype::F64),
            other => Err(PyValueError::new_err(format!(
                "dtype {other:?}: kernpack computes in float32 or float64"
            ))),
        }
    }
}

impl Dtype {
    /// The float type of host array `name`; any other dtype is a TypeError.
    pub(crate) fn of(name: &str, array: &Bound<'_, PyUntypedArray>) -> PyResult<Self> {
        if holds::<f32>(array) {
            Ok(Dtype::F32)
        } else if holds::<f64>(array) {
            Ok(Dtype::F64)
        } else {
            Err(PyTypeError::new_err(format!(
                "{name} is {}: kernpack computes in float32 or float64",
                array.dtype()
            )))
        }
    }
}

/// Runs `$body` with `$T` bound to the Rust type of `$dtype`.
macro_rules! by_dtype {
    ($dtype:expr, $T:ident => $body:expr) => {
        match $dtype {
            $crate::arrays::Dtype::F32 => {
                type $T = f32;
                $body
            }
            $crate::arrays::Dtype::F64 => {
                type $T = f64;
                $body
            }
        }
    };
}
pub(crate) use by_dtype;

/// Whether `array` holds native-endian values of `T`.
pub(crate) fn holds<T: Element>(array: &Bound<'_, PyUntypedArray>) -> bool {
    array.dtype().is_equiv_to(&numpy::dtype::<T>(array.py()))
}

/// `array` checked as an array of `T` with `D` dimensions whose values are
/// aligned for `T`, C-contiguous or, `pitched` (images), with contiguous rows
/// each at least a row after the last, and borrowed by `borrow`. With its
/// span (elements from the first to the last) and row pitch in elements.
fn checked<'py, T: Element, D: Dimension, B>(
    name: &str,
    array: &Bound<'py, PyUntypedArray>,
    pitched: bool,
    borrow: impl FnOnce(&Bound<'py, PyArray<T, D>>) -> Result<B, BorrowError>,
) -> PyResult<(B, usize, usize)> {
    let typed = array.cast::<PyArray<T, D>>().map_err(|_| {
        let dims = D::NDIM.map_or(String::new(), |n| format!("{n}-D "));
        PyTypeError::new_err(format!(
            "{name} is a {}-D {} array: expected a {dims}{} array",
            array.ndim(),
            array.dtype(),
            numpy::dtype::<T>(array.py())
        ))
    })?;
    if typed.data() as usize % std::mem::align_of::<T>() != 0 {
        return Err(PyValueError::new_err(format!(
            "{name} is not aligned for {}: pass a copy (np.array({name}))",
            numpy::dtype::<T>(array.py())
        )));
    }
    let (span, pitch) = if pitched {
        image_layout::<T>(name, typed.shape(), typed.strides())?
    } else if typed.is_c_contiguous() {
        (typed.len(), 0)
    } else {
        return Err(PyTypeError::new_err(format!(
            "{name} is not C-contiguous (strides {:?}): pass np.ascontiguousarray({name})",
            typed.strides()
        )));
    };
    let array = borrow(typed).map_err(|e| borrow_error(name, e))?;
    Ok((array, span, pitch))
}

/// The span (elements from the first to the last: its rows and the gaps
/// between them) and row pitch in elements of the image `name` of `shape`
/// and `strides`, whose rows must be contiguous, each at least a row after
/// the last.
fn image_layout<T>(name: &str, shape: &[usize], strides: &[isize]) -> PyResult<(usize, usize)> {
    let ([rows, cols], [row_stride, col_stride]) = ([shape[0], shape[1]], [strides[0], strides[1]]);
    let item = std::mem::size_of::<T>() as isize;
    // Unit column strides also make rust-numpy's borrows refuse every pair of
    // arrays whose spans overlap (it compares the gcd of the strides), so no
    // two slices of one call overlap. One value has no stride.
    let col_ok = col_stride == item || rows * cols <= 1;
    let row_ok = rows <= 1 || (row_stride % item == 0 && row_stride / item >= cols as isize);
    if !(col_ok && row_ok) {
        return Err(PyTypeError::new_err(format!(
            "{name} has strides {strides:?}: its rows must be contiguous, each at least a row after the last"
        )));
    }
    let pitch = if rows > 1 {
        (row_stride / item) as usize
    } else {
        cols
    };
    let span = if rows * cols > 0 {
        (rows - 1) * pitch + cols
    } else {
        0
    };
    Ok((span, pitch))
}

/// A failed borrow of argument `name`, as the caller can act on it.
fn borrow_error(name: &str, e: BorrowError) -> PyErr {
    match e {
        BorrowError::NotWriteable => PyValueError::new_err(format!("{name} is read-only")),
        // The borrows of a call that runs on another thread count too.
        _ => PyValueError::new_err(format!(
            "{name} shares memory with another array of this call or of a call running \
             on another thread: pass a copy"
        )),
    }
}

/// A host array that one call reads, borrowed from NumPy until dropped: of
/// element type `T` and `D` dimensions, aligned, C-contiguous or (images) a
/// row pitch apart.
pub(crate) struct In<'py, T: Element, D: Dimension = Ix1> {
    array: PyReadonlyArray<'py, T, D>,
    /// Elements from the first to the last.
    span: usize,
}

impl<'py, T: Element, D: Dimension> In<'py, T, D> {
    /// A C-contiguous array.
    pub(crate) fn new(name: &str, array: &Bound<'py, PyUntypedArray>) -> PyResult<Self> {
        let (array, span, _) = checked(name, array, false, PyArrayMethods::try_readonly)?;
        Ok(In { array, span })
    }

    pub(crate) fn shape(&self) -> &[usize] {
        self.array.shape()
    }

    /// The values in C order (an image's gaps between rows included).
    pub(crate) fn values(&self) -> &[T] {
        if self.span == 0 {
            return &[];
        }
        // SAFETY: the array holds `span` aligned elements from its first
        // (checked when made); the borrow keeps it alive and, while the slice
        // lives, refuses any writer of an overlapping span among arrays of
        // one element type (the calls that write borrow no other type).
        unsafe { std::slice::from_raw_parts(self.array.data(), self.span) }
    }
}

impl<'py, T: Element> In<'py, T, Ix2> {
    /// An image read in place, and its row pitch (row-strided views need no copy).
    pub(crate) fn image(name: &str, array: &Bound<'py, PyUntypedArray>) -> PyResult<(Self, usize)> {
        let (array, span, pitch) = checked(name, array, true, PyArrayMethods::try_readonly)?;
        Ok((In { array, span }, pitch))
    }
}

/// A host array that one call writes, as [`In`]; also writable and sharing
/// no memory with the call's other arrays. Only the values are written,
/// never the gaps between an image's rows.
pub(crate) struct Out<'py, T: Element, D: Dimension> {
    array: PyReadwriteArray<'py, T, D>,
    span: usize,
}

impl<'py, T: Element, D: Dimension> Out<'py, T, D> {
    /// A C-contiguous array.
    pub(crate) fn new(name: &str, array: &Bound<'py, PyUntypedArray>) -> PyResult<Self> {
        let (array, span, _) = checked(name, array, false, PyArrayMethods::try_readwrite)?;
        Ok(Out { array, span })
    }

    pub(crate) fn shape(&self) -> &[usize] {
        self.array.shape()
    }

    /// As [`In::values`], writable.
    pub(crate) fn values(&mut self) -> &mut [T] {
        if self.span == 0 {
            return &mut [];
        }
        // SAFETY: as in `In::values`; the borrow is exclusive: no other
        // borrow of an overlapping span exists while the slice lives.
        unsafe { std::slice::from_raw_parts_mut(self.array.data(), self.span) }
    }
}

impl<'py, T: Element> Out<'py, T, Ix2> {
    /// An image written in place, and its row pitch.
    pub(crate) fn image(name: &str, array: &Bound<'py, PyUntypedArray>) -> PyResult<(Self, usize)> {
        let (array, span, pitch) = checked(name, array, true, PyArrayMethods::try_readwrite)?;
        Ok((Out { array, span }, pitch))
    }
}
