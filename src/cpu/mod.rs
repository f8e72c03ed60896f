//! The fast CPU backend: what [`crate::Backend::Cpu`] (and `Auto` on a machine
//! without a GPU) runs. It is separate from [`crate::reference`], the literal
//! and readable oracle: every path here is property-tested against it.
//!
//! Threads: every family splits its work over [`threads`] scoped threads (the
//! process-wide setting, or a handle's own count from
//! [`crate::Kernpack::with_cpu_threads`]). SIMD: inner loops work on small
//! fixed-width lane arrays that the compiler vectorises, compiled for AVX-512,
//! AVX2+FMA or NEON and picked at run time (`multiversion`), with a portable
//! fallback.
// Used by the family modules as they land.
#[allow(dead_code)]
pub(crate) mod parallel;
// Wired into the API by the lead (direct vs NUFFT selection).
#[allow(dead_code)]
pub(crate) mod lombscargle;
pub(crate) mod threads;

pub use threads::{set_threads, threads, THREADS_ENV};
