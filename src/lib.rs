//! kernpack: precompiled CUDA kernels with a safe Rust API and a C ABI.
pub mod fatbin;
pub mod plot;
