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

impl Dtype {
    /// The dtype a device call names (device arrays are not NumPy arrays).
    pub(crate) fn parse(name: &str) -> PyResult<Self> {
        match name {
            "float32" => Ok(Dtype::F32),
            "float64" => Ok(Dtype::F64),
            other => Err(PyValueError::new_err(format!(
                "dtype {other:?}: kernpack computes in float32 or float64"
            ))),
        }
    }

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

/// `array` as an array of `T` with `D` dimensions, its values aligned for
/// `T`, and C-contiguous when `contiguous` (images check their row layout
/// instead).
fn typed<'py, T: Element, D: Dimension>(
    name: &str,
    array: &Bound<'py, PyUntypedArray>,
    contiguous: bool,
) -> PyResult<Bound<'py, PyArray<T, D>>> {
    let typed = array.cast::<PyArray<T, D>>().map_err(|_| {
        let expected = numpy::dtype::<T>(array.py());
        let dims = D::NDIM.map_or(String::new(), |n| format!("{n}-D "));
        PyTypeError::new_err(format!(
            "{name} is a {}-D {} array: expected a {dims}{expected} array",
            array.ndim(),
            array.dtype()
        ))
    })?;
    if contiguous && !typed.is_c_contiguous() {
        return Err(PyTypeError::new_err(format!(
            "{name} is not C-contiguous (strides {:?}): pass np.ascontiguousarray({name})",
            typed.strides()
        )));
    }
    if typed.data() as usize % std::mem::align_of::<T>() != 0 {
        return Err(PyValueError::new_err(format!(
            "{name} is not aligned for {}: pass a copy (np.array({name}))",
            numpy::dtype::<T>(array.py())
        )));
    }
    Ok(typed.clone())
}

/// A failed borrow of argument `name`, as the caller can act on it.
fn borrow_error(name: &str, e: BorrowError) -> PyErr {
    match e {
        BorrowError::NotWriteable => PyValueError::new_err(format!("{name} is read-only")),
        _ => PyValueError::new_err(format!(
            "{name} shares memory with another array of this call: pass a copy"
        )),
    }
}

/// A host array that one call reads: of element type `T` and `D`
/// dimensions, C-contiguous and aligned (checked when made), borrowed from
/// NumPy until dropped.
pub(crate) struct In<'py, T: Element, D: Dimension = Ix1>(PyReadonlyArray<'py, T, D>);

impl<'py, T: Element, D: Dimension> In<'py, T, D> {
    pub(crate) fn new(name: &str, array: &Bound<'py, PyUntypedArray>) -> PyResult<Self> {
        let typed = typed::<T, D>(name, array, true)?;
        let borrowed = typed.try_readonly().map_err(|e| borrow_error(name, e))?;
        Ok(In(borrowed))
    }

    /// [`In::new`] of an optional argument.
    pub(crate) fn optional(
        name: &str,
        array: Option<&Bound<'py, PyUntypedArray>>,
    ) -> PyResult<Option<Self>> {
        array.map(|a| Self::new(name, a)).transpose()
    }

    /// The values in C order.
    pub(crate) fn values(&self) -> &[T] {
        self.0
            .as_slice()
            .expect("In::new admits only C-contiguous arrays")
    }

    pub(crate) fn shape(&self) -> &[usize] {
        self.0.shape()
    }
}

/// A host array that one call writes, checked as [`In`]; also writable and
/// sharing no memory with the call's other arrays.
pub(crate) struct Out<'py, T: Element, D: Dimension>(PyReadwriteArray<'py, T, D>);

impl<'py, T: Element, D: Dimension> Out<'py, T, D> {
    pub(crate) fn new(name: &str, array: &Bound<'py, PyUntypedArray>) -> PyResult<Self> {
        let typed = typed::<T, D>(name, array, true)?;
        let borrowed = typed.try_readwrite().map_err(|e| borrow_error(name, e))?;
        Ok(Out(borrowed))
    }

    /// The values in C order.
    pub(crate) fn values(&mut self) -> &mut [T] {
        self.0
            .as_slice_mut()
            .expect("Out::new admits only C-contiguous arrays")
    }
}

/// A 2-D image read in place: its rows are contiguous, one every `pitch`
/// elements (row-strided views need no copy).
pub(crate) struct ImageIn<'py, T: Element> {
    array: PyReadonlyArray<'py, T, Ix2>,
    pub(crate) pitch: usize,
}

impl<'py, T: Element> ImageIn<'py, T> {
    pub(crate) fn new(name: &str, array: &Bound<'py, PyUntypedArray>) -> PyResult<Self> {
        let (typed, pitch) = pitched::<T>(name, array)?;
        let array = typed.try_readonly().map_err(|e| borrow_error(name, e))?;
        Ok(ImageIn { array, pitch })
    }

    /// `[rows, cols]`.
    pub(crate) fn shape(&self) -> [usize; 2] {
        [self.array.shape()[0], self.array.shape()[1]]
    }

    /// The values from the first to the last element, gaps between rows included.
    pub(crate) fn values(&self) -> &[T] {
        let len = span(self.shape(), self.pitch);
        if len == 0 {
            return &[];
        }
        // SAFETY: `pitched` checked that row r starts r * pitch elements after
        // the first, aligned, with its values contiguous: these `len` elements
        // are the array's span. The borrow keeps the array alive and refuses
        // any writer of an overlapping span for as long as the slice lives.
        unsafe { std::slice::from_raw_parts(self.array.data(), len) }
    }
}

/// A 2-D image written in place, as [`ImageIn`]; only each row's values are
/// written, never the gaps between rows.
pub(crate) struct ImageOut<'py, T: Element> {
    array: PyReadwriteArray<'py, T, Ix2>,
    pub(crate) pitch: usize,
}

impl<'py, T: Element> ImageOut<'py, T> {
    pub(crate) fn new(name: &str, array: &Bound<'py, PyUntypedArray>) -> PyResult<Self> {
        let (typed, pitch) = pitched::<T>(name, array)?;
        let array = typed.try_readwrite().map_err(|e| borrow_error(name, e))?;
        Ok(ImageOut { array, pitch })
    }

    pub(crate) fn shape(&self) -> [usize; 2] {
        [self.array.shape()[0], self.array.shape()[1]]
    }

    /// As [`ImageIn::values`], writable.
    pub(crate) fn values(&mut self) -> &mut [T] {
        let len = span(self.shape(), self.pitch);
        if len == 0 {
            return &mut [];
        }
        // SAFETY: as in `ImageIn::values`; the borrow is exclusive: no other
        // borrow of an overlapping span exists while the slice lives.
        unsafe { std::slice::from_raw_parts_mut(self.array.data(), len) }
    }
}

/// Elements from the first of an image to its last (none when it is empty).
fn span([rows, cols]: [usize; 2], pitch: usize) -> usize {
    if rows == 0 || cols == 0 {
        0
    } else {
        (rows - 1) * pitch + cols
    }
}

/// `array` as a 2-D image of `T` whose rows are contiguous and aligned, each
/// at least a row after the last, and its row pitch in elements.
fn pitched<'py, T: Element>(
    name: &str,
    array: &Bound<'py, PyUntypedArray>,
) -> PyResult<(Bound<'py, PyArray<T, Ix2>>, usize)> {
    let typed = typed::<T, Ix2>(name, array, false)?;
    let ([rows, cols], [row_stride, col_stride]) = (
        [typed.shape()[0], typed.shape()[1]],
        [typed.strides()[0], typed.strides()[1]],
    );
    let item = std::mem::size_of::<T>() as isize;
    // Unit column strides also make rust-numpy's borrows refuse every pair of
    // arrays whose spans overlap (it compares the gcd of the strides), so
    // `values` never hands out overlapping slices. One value has no stride.
    let col_ok = col_stride == item || rows * cols <= 1;
    let row_ok = rows <= 1 || (row_stride % item == 0 && row_stride / item >= cols as isize);
    if !(col_ok && row_ok) {
        return Err(PyTypeError::new_err(format!(
            "{name} has strides {:?}: its rows must be contiguous, each at least a row after the last",
            typed.strides()
        )));
    }
    let pitch = if rows > 1 {
        (row_stride / item) as usize
    } else {
        cols
    };
    Ok((typed, pitch))
}
