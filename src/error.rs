//! The one error type of the crate; the C ABI maps each variant to a `kp_status`.
use std::fmt;

use cudarc::driver::DriverError;

pub type Result<T, E = Error> = std::result::Result<T, E>;

#[derive(Debug, Clone, PartialEq)]
pub enum Error {
    /// Bad arguments: caught before any launch or allocation, nothing was changed.
    InvalidInput(String),
    /// No CUDA driver or no CUDA device: the GPU backend cannot run here.
    NoGpu(String),
    /// A CUDA driver call failed; `source` is the driver's error (its `CUresult`
    /// is `source.0`), also reachable through [`std::error::Error::source`].
    Cuda { during: String, source: DriverError },
    /// A host allocation the call needs could not be made (the sizes were
    /// valid but the memory is not there); nothing was changed.
    OutOfMemory(String),
}

impl Error {
    pub(crate) fn invalid(msg: impl Into<String>) -> Self {
        Error::InvalidInput(msg.into())
    }

    pub fn cuda(during: impl Into<String>, source: DriverError) -> Self {
        Error::Cuda {
            during: during.into(),
            source,
        }
    }

    /// The driver's `CUresult` for a [`Error::Cuda`], as its integer value.
    pub fn cuda_code(&self) -> Option<i32> {
        match self {
            Error::Cuda { source, .. } => Some(source.0 as i32),
            _ => None,
        }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::InvalidInput(msg) => write!(f, "invalid input: {msg}"),
            Error::NoGpu(msg) => write!(f, "no usable GPU: {msg}"),
            Error::Cuda { during, source } => write!(f, "CUDA error while {during}: {source}"),
            Error::OutOfMemory(msg) => write!(f, "out of host memory: {msg}"),
        }
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Error::Cuda { source, .. } => Some(source),
            _ => None,
        }
    }
}

/// A value for a message: plain, or in exponent form when that would run to
/// many digits (1e308 rather than 309 of them).
pub fn readable(v: f64) -> String {
    if v != 0.0 && v.is_finite() && !(1e-5..1e16).contains(&v.abs()) {
        format!("{v:e}")
    } else {
        format!("{v}")
    }
}

#[cfg(test)]
mod tests {
    use super::Error;
    use cudarc::driver::sys::CUresult;
    use cudarc::driver::DriverError;

    #[test]
    fn a_cuda_error_keeps_the_driver_error_as_its_source() {
        let e = Error::cuda(
            "launching",
            DriverError(CUresult::CUDA_ERROR_ILLEGAL_ADDRESS),
        );
        assert_eq!(e.cuda_code(), Some(700));
        let source = std::error::Error::source(&e).expect("a source");
        let driver = source.downcast_ref::<DriverError>().expect("a DriverError");
        assert_eq!(driver.0, CUresult::CUDA_ERROR_ILLEGAL_ADDRESS);
        // (Display asks the driver for the error's name: not without a driver.)
        assert_eq!(Error::invalid("x").cuda_code(), None);
    }
}
