//! The one error type of the crate; the C ABI maps each variant to a `kp_status`.
use cudarc::driver::DriverError;

pub type Result<T, E = Error> = std::result::Result<T, E>;

#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum Error {
    /// Bad arguments: caught before any launch or allocation, nothing was changed.
    #[error("invalid input: {0}")]
    InvalidInput(String),
    /// No CUDA driver or no CUDA device: the GPU backend cannot run here.
    #[error("no usable GPU: {0}")]
    NoGpu(String),
    /// A CUDA driver call failed; `source` is the driver's error (its `CUresult`
    /// is `source.0`), also reachable through [`std::error::Error::source`].
    #[error("CUDA error while {during}: {source}")]
    Cuda { during: String, source: DriverError },
    /// A host allocation the call needs could not be made (the sizes were
    /// valid but the memory is not there); nothing was changed.
    #[error("out of host memory: {0}")]
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
