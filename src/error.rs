//! The one error type of the crate; the C ABI maps each variant to a `kp_status`.
use std::fmt;

pub type Result<T, E = Error> = std::result::Result<T, E>;

#[derive(Debug, Clone, PartialEq)]
pub enum Error {
    /// Bad arguments: caught before any launch or allocation, nothing was changed.
    InvalidInput(String),
    /// No CUDA driver or no CUDA device: the GPU backend cannot run here.
    NoGpu(String),
    /// A CUDA driver call failed.
    Cuda { during: String, message: String },
}

impl Error {
    pub(crate) fn invalid(msg: impl Into<String>) -> Self {
        Error::InvalidInput(msg.into())
    }

    pub(crate) fn cuda(during: impl Into<String>, err: cudarc::driver::DriverError) -> Self {
        Error::Cuda {
            during: during.into(),
            message: err.to_string(),
        }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::InvalidInput(msg) => write!(f, "invalid input: {msg}"),
            Error::NoGpu(msg) => write!(f, "no usable GPU: {msg}"),
            Error::Cuda { during, message } => write!(f, "CUDA error while {during}: {message}"),
        }
    }
}

impl std::error::Error for Error {}
