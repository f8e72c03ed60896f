//! F/G options and results: plain data shared by the API, the CPU backend
//! and the reference.
use std::str::FromStr;

use crate::error::{Error, Result};
use crate::float::Complex;

/// How the GPU runs the steps.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum FgPath {
    /// Cooperative when the device supports it and the state fits in registers, else launches.
    #[default]
    Auto,
    /// One cooperative launch for the whole run: the state stays in registers,
    /// one grid sync per step. An error where unavailable.
    Cooperative,
    /// Two launches per step (RK4 + chunk sums, then delta), state in global memory.
    Launches,
}

impl FromStr for FgPath {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self> {
        match s.to_ascii_lowercase().as_str() {
            "auto" => Ok(FgPath::Auto),
            "cooperative" | "coop" => Ok(FgPath::Cooperative),
            "launches" => Ok(FgPath::Launches),
            other => Err(Error::invalid(format!(
                "unknown F/G path {other:?}: expected auto, cooperative or launches"
            ))),
        }
    }
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct FgOptions {
    /// GPU only; the CPU backend ignores it.
    pub path: FgPath,
}

/// The result of a run.
#[derive(Debug, Clone, PartialEq)]
pub struct FgRun<T> {
    /// `delta[0..=nsteps]`; `delta[0]` is the initial value.
    pub delta: Vec<Complex<T>>,
    /// The final F and G, row-major N x N.
    pub f: Vec<Complex<T>>,
    pub g: Vec<Complex<T>>,
}

/// Elements per chunk of the delta sum: the kernels' block size (csrc/fg.cu CHUNK).
pub const CHUNK: usize = 1024;
