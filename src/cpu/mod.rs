//! The fast CPU backend: what [`crate::Backend::Cpu`] (and `Auto` on a machine
//! without a GPU) runs. It is separate from `crate::reference`, the literal
//! and readable oracle: every path here is property-tested against it.
//!
//! Threads: every family splits its work over [`threads`] scoped threads (the
//! process-wide setting, or a handle's own count from
//! [`crate::Kernpack::with_cpu_threads`]). SIMD: inner loops work on small
//! fixed-width lane arrays that the compiler vectorises, compiled for AVX-512,
//! AVX2+FMA or NEON and picked at run time (`multiversion`), with a portable
//! fallback.
/// Compiles a function for the SIMD targets of the CPU backend, picked at run
/// time by `multiversion` (with the portable fallback):
/// `#[macro_rules_attribute::apply(simd_targets!)]`. The one list of targets
/// of every kernel.
macro_rules! simd_targets {
    ($($item:tt)*) => {
        #[multiversion::multiversion(targets(
            "x86_64+avx512f+avx512dq+avx512vl+fma",
            "x86_64+avx2+fma",
            "aarch64+neon"
        ))]
        $($item)*
    };
}

pub(crate) mod bls;
pub(crate) mod correlate;
pub(crate) mod fg;
pub(crate) mod lombscargle;
pub(crate) mod lombscargle_chi2;
pub(crate) mod lombscargle_multiband;
pub(crate) mod lorenz;
pub(crate) mod lorenz05;
pub(crate) mod lorenz63;
pub(crate) mod parallel;
pub(crate) mod phasefold;
pub(crate) mod rank;
pub(crate) mod reduce;
pub(crate) mod stencil;
pub(crate) mod stencil_rows;
pub(crate) mod store;
pub(crate) mod threads;
pub(crate) mod uniform;
pub(crate) mod uniform_nd;
pub(crate) mod window_sum;

pub use parallel::{copy_parallel, copy_threads};
pub use threads::{set_threads, threads, MAX_THREADS, THREADS_ENV};

/// The widest SIMD instruction set the CPU paths use on this machine (the
/// run-time choice of `multiversion` among the targets the kernels are
/// compiled for), for `kernpack info`.
#[macro_rules_attribute::apply(simd_targets!)]
pub fn simd_name() -> Name {
    multiversion::target::match_target! {
        "x86_64+avx512f+avx512dq+avx512vl+fma" => "AVX-512",
        "x86_64+avx2+fma" => "AVX2 + FMA",
        "x86_64" => "SSE2",
        "aarch64+neon" => "NEON",
        _ => "scalar",
    }
}

/// (An alias: `multiversion` cannot take `'static` in a signature.)
type Name = &'static str;
