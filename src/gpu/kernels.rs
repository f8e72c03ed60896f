//! One declaration per kernel family of csrc/: the entry point's name in the
//! fatbin, picked from the element type, and its C parameter list as a tuple
//! type (`const T*` is [`In`], `T*` is [`Out`], `int64_t` is `i64`, `int`
//! is `i32`, `double` is `f64`, the `kp_*` structs their bindgen translations
//! in [`super::c_params`]). The tests hold every declaration to its C
//! prototype, as tests/support/csrc_kernels.rs reads it from csrc/*.cu, and
//! every name to [`super::KERNEL_FAMILIES`], the list build.rs read from the
//! fatbin.
// The tuple types are the C parameter lists, spelled out on purpose.
#![allow(clippy::type_complexity)]

use super::c_params::KP_CORRELATE_MAX_TAPS;
use super::launch::{In, KernelFn, Out};
use super::{
    BlsParams, BoxParams, BoxRunParams, CorrelateParams, L63Adaptive, L96Run, LsGrid, LsParams,
    LsStats, PhasefoldParams, RankParams, UniformParams,
};
use crate::float::{Complex, Float};
use crate::params::FixedWeights;

/// The entry point of `$base` for the float type `$T`: suffix `_f32` / `_f64`,
/// or the two given (`_c64` / `_c128` for complex values of `$T`).
macro_rules! per_float {
    ($T:ty, $base:literal) => {
        per_float!($T, $base, "_f32", "_f64")
    };
    ($T:ty, $base:literal, $f32:literal, $f64:literal) => {
        if <$T as Float>::NAME == "f32" {
            concat!($base, $f32)
        } else {
            concat!($base, $f64)
        }
    };
}

// ---- csrc/lombscargle.cu ----

/// `lombscargle_prepare_T(kp_ls_params p, int64_t nseries, const int64_t* offsets,
/// const T* t, const T* y, const T* w, kp_ls_stats* stats)`
pub(crate) fn lombscargle_prepare<T: Float>(
) -> KernelFn<(LsParams, i64, In<i64>, In<T>, In<T>, In<T>, Out<LsStats>)> {
    KernelFn::new(per_float!(T, "lombscargle_prepare"))
}

/// `lombscargle_direct_T(kp_ls_params p, const T* t, const T* y, const T* w,
/// const T* freqs, const kp_ls_stats* stats, T* out)`
pub(crate) fn lombscargle_direct<T: Float>(
) -> KernelFn<(LsParams, In<T>, In<T>, In<T>, In<T>, In<LsStats>, Out<T>)> {
    KernelFn::new(per_float!(T, "lombscargle_direct"))
}

/// The uniform-grid kernel's parameters (twelve).
pub(crate) type LombScargleUniform<T> = KernelFn<(
    LsParams,    // p
    LsGrid,      // grid
    i64,         // nseries
    In<i64>,     // offsets
    In<f64>,     // f0
    In<f64>,     // df
    i32,         // per_series_grid
    In<T>,       // t
    In<T>,       // y
    In<T>,       // w
    In<LsStats>, // stats
    Out<T>,      // out
)>;

/// `lombscargle_uniform_T(kp_ls_params p, kp_ls_grid grid, int64_t nseries,
/// const int64_t* offsets, const double* f0, const double* df, int per_series_grid,
/// const T* t, const T* y, const T* w, const kp_ls_stats* stats, T* out)`
pub(crate) fn lombscargle_uniform<T: Float>() -> LombScargleUniform<T> {
    KernelFn::new(per_float!(T, "lombscargle_uniform"))
}

/// `lombscargle_peaks_T(int64_t nseries, int64_t nf, int amplitude, const T* pgrams,
/// int64_t* index, double* value)`
pub(crate) fn lombscargle_peaks<T: Float>() -> KernelFn<(i64, i64, i32, In<T>, Out<i64>, Out<f64>)>
{
    KernelFn::new(per_float!(T, "lombscargle_peaks"))
}

// ---- csrc/bootstrap.cu ----

/// `bootstrap_resample_T(int64_t n, int64_t nresamples, int64_t seed, const T* t,
/// const T* y, const T* w, T* out_t, T* out_y, T* out_w)`
pub(crate) fn bootstrap_resample<T: Float>(
) -> KernelFn<(i64, i64, i64, In<T>, In<T>, In<T>, Out<T>, Out<T>, Out<T>)> {
    KernelFn::new(per_float!(T, "bootstrap_resample"))
}

// ---- csrc/bls.cu ----

/// The BLS search kernel's parameters (fourteen).
pub(crate) type BlsBinned = KernelFn<(
    BlsParams, // p
    i64,       // nseries
    In<i64>,   // offsets
    In<f64>,   // dt
    In<i64>,   // wy
    In<i64>,   // w
    In<i64>,   // totals
    In<f64>,   // units
    i64,       // nperiods
    In<f64>,   // periods
    In<i64>,   // duration_bins
    Out<u64>,  // scratch (NULL: the histogram in dynamic shared memory)
    Out<i64>,  // out
    Out<f64>,  // power (NULL: not written)
)>;

/// `bls_binned(...)`: one block per (series, period), the histogram in
/// dynamic shared memory or in global scratch.
pub(crate) fn bls_binned() -> BlsBinned {
    KernelFn::new("bls_binned")
}

// ---- csrc/phasefold.cu ----

/// The phase-folding kernel's parameters (eleven).
pub(crate) type Phasefold = KernelFn<(
    PhasefoldParams, // p
    In<i64>,         // offsets
    In<f64>,         // dt
    In<f64>,         // wy (PDM; NULL for CE)
    In<f64>,         // w (PDM; NULL for CE)
    In<i32>,         // mag (CE; NULL for PDM)
    In<f64>,         // scale
    In<f64>,         // freqs
    In<f64>,         // nlogn (CE; NULL for PDM)
    Out<u8>,         // scratch (NULL: the accumulators in dynamic shared memory)
    Out<u8>,         // out: f32 or f64 (p.out_f32)
)>;

/// `phasefold(...)`: PDM or conditional entropy, one thread per (series,
/// frequency), the accumulators in dynamic shared memory or in scratch.
pub(crate) fn phasefold() -> Phasefold {
    KernelFn::new("phasefold")
}

// ---- csrc/peaks.cu ----

/// The peak kernel's parameters (fifteen).
pub(crate) type BestPeaks<T> = KernelFn<(
    i64,      // nseries
    i64,      // nf
    i32,      // k
    i32,      // lowest
    f64,      // separation
    In<T>,    // values
    In<f64>,  // axis (NULL: the grids f0, df)
    In<f64>,  // f0
    In<f64>,  // df
    i32,      // per_series_grid
    i64,      // payload_bytes
    In<u8>,   // payload (NULL when payload_bytes is 0)
    Out<i64>, // index
    Out<f64>, // value
    Out<u8>,  // payload_out
)>;

/// `best_peaks_T(int64_t nseries, int64_t nf, int k, int lowest, double separation,
/// const T* values, const double* axis, const double* f0, const double* df,
/// int per_series_grid, int64_t payload_bytes, const unsigned char* payload,
/// int64_t* index, double* value, unsigned char* payload_out)`
pub(crate) fn best_peaks<T: Float>() -> BestPeaks<T> {
    KernelFn::new(per_float!(T, "best_peaks"))
}

// ---- csrc/lombscargle_chi2.cu ----

/// The multi-term periodogram's parameters (fourteen).
pub(crate) type LombScargleChi2<T> = KernelFn<(
    i64,     // nseries
    In<i64>, // offsets
    In<T>,   // t
    In<T>,   // w
    In<T>,   // wy
    In<f64>, // stats
    In<T>,   // freqs
    In<f64>, // f0
    In<f64>, // df
    i32,     // per_series_grid
    i64,     // nf
    i32,     // fit_mean
    i32,     // normalization
    Out<T>,  // out
)>;

/// `lombscargle_chi2_kK_T(int64_t nseries, const int64_t* offsets, const T* t,
/// const T* w, const T* wy, const double* stats, const T* freqs, const double* f0,
/// const double* df, int per_series_grid, int64_t nf, int fit_mean,
/// int normalization, T* out)` for K = `nterms` harmonics, 1 to 8.
pub(crate) fn lombscargle_chi2<T: Float>(nterms: usize) -> LombScargleChi2<T> {
    KernelFn::new(match nterms {
        1 => per_float!(T, "lombscargle_chi2_k1"),
        2 => per_float!(T, "lombscargle_chi2_k2"),
        3 => per_float!(T, "lombscargle_chi2_k3"),
        4 => per_float!(T, "lombscargle_chi2_k4"),
        5 => per_float!(T, "lombscargle_chi2_k5"),
        6 => per_float!(T, "lombscargle_chi2_k6"),
        7 => per_float!(T, "lombscargle_chi2_k7"),
        8 => per_float!(T, "lombscargle_chi2_k8"),
        _ => unreachable!("nterms is validated to 1..=8"),
    })
}

// ---- csrc/lombscargle_multiband.cu ----

/// The flexible multiband periodogram's parameters (sixteen).
pub(crate) type LombScargleMultiband = KernelFn<(
    i64,     // nseries
    In<i64>, // series_bands
    In<i64>, // band_starts
    In<f64>, // t
    In<f64>, // w
    In<f64>, // wy
    In<f64>, // stats
    In<f64>, // freqs
    In<f64>, // f0
    In<f64>, // df
    i32,     // per_series_grid
    i64,     // nf
    i32,     // nterms_base
    i32,     // nterms_band
    i32,     // out_f32
    Out<u8>, // out: f32 or f64 (out_f32)
)>;

/// `lombscargle_multiband_hH(int64_t nseries, const int64_t* series_bands,
/// const int64_t* band_starts, const double* t, const double* w,
/// const double* wy, const double* stats, const double* freqs,
/// const double* f0, const double* df, int per_series_grid, int64_t nf,
/// int nterms_base, int nterms_band, int out_f32, unsigned char* out)` for
/// H = max(nterms_base, nterms_band) harmonics, 1 to 3.
pub(crate) fn lombscargle_multiband(harmonics: usize) -> LombScargleMultiband {
    KernelFn::new(match harmonics {
        1 => "lombscargle_multiband_h1",
        2 => "lombscargle_multiband_h2",
        3 => "lombscargle_multiband_h3",
        _ => unreachable!("the harmonics are validated to 1..=3"),
    })
}

// ---- csrc/reduce.cu ----

/// `reduce_partial_T(const T* x, int64_t n, int64_t chunk, double* partials)`
pub(crate) fn reduce_partial<T: Float>() -> KernelFn<(In<T>, i64, i64, Out<f64>)> {
    KernelFn::new(per_float!(T, "reduce_partial"))
}

/// `reduce_final(const double* partials, int64_t count, double* sum)`
pub(crate) fn reduce_final() -> KernelFn<(In<f64>, i64, Out<f64>)> {
    KernelFn::new("reduce_final")
}

/// `normalize_T(T* x, int64_t n, const double* sum, int* status)`
pub(crate) fn normalize<T: Float>() -> KernelFn<(Out<T>, i64, In<f64>, Out<i32>)> {
    KernelFn::new(per_float!(T, "normalize"))
}

/// `normalize_fused_T(T* x, int64_t n, double* partials, double* sum, int* status)`
/// (cooperative)
pub(crate) fn normalize_fused<T: Float>() -> KernelFn<(Out<T>, i64, Out<f64>, Out<f64>, Out<i32>)> {
    KernelFn::new(per_float!(T, "normalize_fused"))
}

// ---- csrc/reduce_batched.cu ----

/// `reduce_batched_plan(const int64_t* offsets, int64_t narrays, int64_t n,
/// int64_t per_block, int64_t max_blocks, int64_t* plan)`
pub(crate) fn reduce_batched_plan() -> KernelFn<(In<i64>, i64, i64, i64, i64, Out<i64>)> {
    KernelFn::new("reduce_batched_plan")
}

/// `reduce_batched_partial_T(const T* x, const int64_t* offsets, int64_t narrays,
/// int64_t per_block, int64_t max_blocks, const int64_t* plan, double* partials)`
pub(crate) fn reduce_batched_partial<T: Float>(
) -> KernelFn<(In<T>, In<i64>, i64, i64, i64, In<i64>, Out<f64>)> {
    KernelFn::new(per_float!(T, "reduce_batched_partial"))
}

/// `reduce_batched_final(const int64_t* plan, int64_t narrays, const double* partials,
/// double* sums, int* status)`
pub(crate) fn reduce_batched_final() -> KernelFn<(In<i64>, i64, In<f64>, Out<f64>, Out<i32>)> {
    KernelFn::new("reduce_batched_final")
}

/// `normalize_batched_T(T* x, const int64_t* offsets, int64_t narrays, int64_t per_block,
/// int64_t max_blocks, const int64_t* plan, const double* sums, const int* status)`
pub(crate) fn normalize_batched<T: Float>(
) -> KernelFn<(Out<T>, In<i64>, i64, i64, i64, In<i64>, In<f64>, In<i32>)> {
    KernelFn::new(per_float!(T, "normalize_batched"))
}

// ---- csrc/stencil.cu ----

/// Every box filter: `(const T* in, T* out, kp_box_params p)`.
pub(crate) type BoxFilter<T> = KernelFn<(In<T>, Out<T>, BoxParams)>;

/// `box_filter_rR_T`: the unrolled filter of window 2R + 1, R = 1 to 4.
pub(crate) fn box_filter_unrolled<T: Float>(radius: usize) -> BoxFilter<T> {
    KernelFn::new(match radius {
        1 => per_float!(T, "box_filter_r1"),
        2 => per_float!(T, "box_filter_r2"),
        3 => per_float!(T, "box_filter_r3"),
        4 => per_float!(T, "box_filter_r4"),
        _ => panic!("no unrolled box filter of radius {radius}"),
    })
}

// ---- csrc/correlate.cu ----

/// The 1-D correlation: `(const T* in, T* out, kp_correlate_params p,
/// kp::Weights<T, KP_CORRELATE_MAX_TAPS> w)`.
pub(crate) type Correlate<T> = KernelFn<(
    In<T>,
    Out<T>,
    CorrelateParams,
    FixedWeights<T, { KP_CORRELATE_MAX_TAPS as usize }>,
)>;

/// `correlate_strided_T` (the axis is not the last: a thread per column),
/// `correlate_lines_T` (the last axis: a warp per span of a line).
pub(crate) fn correlate<T: Float>(strided: bool) -> Correlate<T> {
    KernelFn::new(if strided {
        per_float!(T, "correlate_strided")
    } else {
        per_float!(T, "correlate_lines")
    })
}

// ---- csrc/rank.cu ----

/// A rank filter over a footprint table: `(const R* in, R* out, const
/// int64_t* taps, kp_rank_params p)`, R the raw element (`unsigned char`
/// for 1, 2 or 4 bytes, `unsigned long long` for 8).
pub(crate) type RankTable<R> = KernelFn<(In<R>, Out<R>, In<i64>, RankParams)>;

/// `rank_network{cap}_b32`: footprints of up to `cap` points (9, 25, 49, 81).
pub(crate) fn rank_network_b32(cap: usize) -> RankTable<u8> {
    KernelFn::new(match cap {
        9 => "rank_network9_b32",
        25 => "rank_network25_b32",
        49 => "rank_network49_b32",
        81 => "rank_network81_b32",
        _ => panic!("no rank network of {cap} points"),
    })
}

/// `rank_network{cap}_b64`: footprints of up to `cap` points (9, 25).
pub(crate) fn rank_network_b64(cap: usize) -> RankTable<u64> {
    KernelFn::new(match cap {
        9 => "rank_network9_b64",
        25 => "rank_network25_b64",
        _ => panic!("no 64-bit rank network of {cap} points"),
    })
}

/// `rank_digits_b32` / `rank_digits_b64`: any footprint, a byte per pass.
pub(crate) fn rank_digits_b32() -> RankTable<u8> {
    KernelFn::new("rank_digits_b32")
}

pub(crate) fn rank_digits_b64() -> RankTable<u64> {
    KernelFn::new("rank_digits_b64")
}

/// `rank_median3x3_b32` / `_b64(const R* in, R* out, kp_rank_params p)`:
/// the median of 3 x 3 boxes.
pub(crate) fn rank_median3x3_b32() -> KernelFn<(In<u8>, Out<u8>, RankParams)> {
    KernelFn::new("rank_median3x3_b32")
}

pub(crate) fn rank_median3x3_b64() -> KernelFn<(In<u64>, Out<u64>, RankParams)> {
    KernelFn::new("rank_median3x3_b64")
}

/// `rank_sliding_b8(const unsigned char* in, unsigned char* out,
/// kp_rank_params p)`: 8-bit values, box footprints.
pub(crate) fn rank_sliding_b8() -> KernelFn<(In<u8>, Out<u8>, RankParams)> {
    KernelFn::new("rank_sliding_b8")
}

/// The running-sum box filter of any window: `(const T* in, T* out, kp_box_run_params p)`.
pub(crate) type BoxFilterRunning<T> = KernelFn<(In<T>, Out<T>, BoxRunParams)>;

/// `box_filter_running_T`: segments of 32 KP_BOX_RUN_K_NARROW columns per
/// warp; `box_filter_running_wide_T`: 32 KP_BOX_RUN_K_WIDE.
pub(crate) fn box_filter_running<T: Float>(wide: bool) -> BoxFilterRunning<T> {
    KernelFn::new(if wide {
        per_float!(T, "box_filter_running_wide")
    } else {
        per_float!(T, "box_filter_running")
    })
}

/// `box_filter_band_T(const T* in, T* out, kp_box_run_params p)`: a block
/// per band of KP_BOX_BAND_COLS x KP_BOX_BAND_THREADS columns and chunk of
/// rows, its ring of `size_y` rows in dynamic shared memory.
pub(crate) fn box_filter_band<T: Float>() -> BoxFilterRunning<T> {
    KernelFn::new(per_float!(T, "box_filter_band"))
}

// ---- csrc/uniform.cu ----

/// One pass of the N-D box filter: `uniform_strided_S` / `uniform_lines_S(const
/// E* in, E* out, kp_uniform_params p)`, E the raw element.
pub(crate) type UniformPass<E> = KernelFn<(In<E>, Out<E>, UniformParams)>;

/// `_int`: integers of 1, 2 or 4 bytes (E `unsigned char`, the width in the params).
pub(crate) fn uniform_int(lines: bool) -> UniformPass<u8> {
    KernelFn::new(if lines {
        "uniform_lines_int"
    } else {
        "uniform_strided_int"
    })
}

/// `_int64`: integers of 8 bytes (E `unsigned long long`).
pub(crate) fn uniform_int64(lines: bool) -> UniformPass<u64> {
    KernelFn::new(if lines {
        "uniform_lines_int64"
    } else {
        "uniform_strided_int64"
    })
}

/// `_f32` / `_f64`.
pub(crate) fn uniform_float<T: Float>(lines: bool) -> UniformPass<T> {
    KernelFn::new(if lines {
        per_float!(T, "uniform_lines")
    } else {
        per_float!(T, "uniform_strided")
    })
}

// ---- csrc/lorenz.cu ----

/// `window_sum_T(const T* x, const T* w, int L, T* out, int64_t rows, int64_t n,
/// int64_t pitch)`
pub(crate) fn window_sum<T: Float>() -> KernelFn<(In<T>, In<T>, i32, Out<T>, i64, i64, i64)> {
    KernelFn::new(per_float!(T, "window_sum"))
}

/// `lorenz96_T(const T* z0, T* out, T* traj, int64_t members, int mpb, kp_l96_run r)`
pub(crate) fn lorenz96<T: Float>() -> KernelFn<(In<T>, Out<T>, Out<T>, i64, i32, L96Run)> {
    KernelFn::new(per_float!(T, "lorenz96"))
}

/// Sites per lane of the Lorenz 96 lane kernels (csrc/lorenz.cu's
/// `KP_LORENZ96_LANES_ALL` list).
pub(crate) const L96_SITES_PER_LANE: [usize; 11] = [2, 3, 4, 5, 6, 7, 8, 9, 10, 12, 16];

/// `lorenz96_lanes_pP_T(const T* z0, T* out, T* traj, int64_t members, int lanes,
/// kp_l96_run r)`: a member on `lanes` lanes of a warp, P = `sites_per_lane`
/// sites each.
pub(crate) fn lorenz96_lanes<T: Float>(
    sites_per_lane: usize,
) -> KernelFn<(In<T>, Out<T>, Out<T>, i64, i32, L96Run)> {
    KernelFn::new(match sites_per_lane {
        2 => per_float!(T, "lorenz96_lanes_p2"),
        3 => per_float!(T, "lorenz96_lanes_p3"),
        4 => per_float!(T, "lorenz96_lanes_p4"),
        5 => per_float!(T, "lorenz96_lanes_p5"),
        6 => per_float!(T, "lorenz96_lanes_p6"),
        7 => per_float!(T, "lorenz96_lanes_p7"),
        8 => per_float!(T, "lorenz96_lanes_p8"),
        9 => per_float!(T, "lorenz96_lanes_p9"),
        10 => per_float!(T, "lorenz96_lanes_p10"),
        12 => per_float!(T, "lorenz96_lanes_p12"),
        16 => per_float!(T, "lorenz96_lanes_p16"),
        _ => panic!("no Lorenz 96 lane kernel of {sites_per_lane} sites per lane"),
    })
}

/// `lorenz96_tangent_pP_T(const T* z0, T* out, const T* v0, T* v, int k,
/// int64_t members, int lanes, kp_l96_run r)`: the tangent linear model, K
/// perturbations per member, on the lanes of [`lorenz96_lanes`].
pub(crate) fn lorenz96_tangent<T: Float>(
    sites_per_lane: usize,
) -> KernelFn<(In<T>, Out<T>, In<T>, Out<T>, i32, i64, i32, L96Run)> {
    KernelFn::new(match sites_per_lane {
        2 => per_float!(T, "lorenz96_tangent_p2"),
        3 => per_float!(T, "lorenz96_tangent_p3"),
        4 => per_float!(T, "lorenz96_tangent_p4"),
        5 => per_float!(T, "lorenz96_tangent_p5"),
        6 => per_float!(T, "lorenz96_tangent_p6"),
        7 => per_float!(T, "lorenz96_tangent_p7"),
        8 => per_float!(T, "lorenz96_tangent_p8"),
        9 => per_float!(T, "lorenz96_tangent_p9"),
        10 => per_float!(T, "lorenz96_tangent_p10"),
        12 => per_float!(T, "lorenz96_tangent_p12"),
        16 => per_float!(T, "lorenz96_tangent_p16"),
        _ => panic!("no Lorenz 96 tangent kernel of {sites_per_lane} sites per lane"),
    })
}

/// The generic Lorenz 2005 kernel's parameters (nineteen).
pub(crate) type Lorenz05<T> = KernelFn<(
    In<T>,  // z0
    Out<T>, // out
    Out<T>, // traj (NULL: none)
    i64,    // members
    i32,    // n
    i32,    // K
    i32,    // J
    i32,    // model
    f64,    // alpha
    f64,    // beta
    f64,    // forcing
    f64,    // b
    f64,    // c
    In<T>,  // forcing_each (NULL: forcing for every member)
    In<T>,  // b_each (NULL: b)
    In<T>,  // c_each (NULL: c)
    f64,    // dt
    i64,    // steps
    i64,    // every
)>;

/// `lorenz05_T(const T* z0, T* out, T* traj, int64_t members, int n, int K, int J,
/// int model, double alpha, double beta, double forcing, double b, double c,
/// const T* forcing_each, const T* b_each, const T* c_each, double dt,
/// int64_t steps, int64_t every)`: one member per block, its arrays in
/// dynamic shared memory; a non-NULL `*_each` gives that parameter per member.
pub(crate) fn lorenz05<T: Float>() -> Lorenz05<T> {
    KernelFn::new(per_float!(T, "lorenz05"))
}

/// The specialised Model III kernels of (K, J) = (32, 12).
pub(crate) type Lorenz05K32J12<T> = KernelFn<(
    In<T>,               // z0
    Out<T>,              // out
    Out<T>,              // traj (NULL: none)
    i64,                 // members
    i32,                 // n
    FixedWeights<T, 25>, // weights: kp::Weights<T, 2 J + 1>
    f64,                 // forcing
    f64,                 // b
    f64,                 // c
    In<T>,               // forcing_each (NULL: forcing for every member)
    In<T>,               // b_each (NULL: b)
    In<T>,               // c_each (NULL: c)
    f64,                 // dt
    i64,                 // steps
    i64,                 // every
)>;

/// `lorenz05_k32j12_pP_T(const T* z0, T* out, T* traj, int64_t members, int n,
/// kp::Weights<T, 2 * J + 1> weights, double forcing, double b, double c,
/// const T* forcing_each, const T* b_each, const T* c_each, double dt,
/// int64_t steps, int64_t every)`, P = 2 or 4 sites per thread.
pub(crate) fn lorenz05_k32j12<T: Float>(sites_per_thread: usize) -> Lorenz05K32J12<T> {
    KernelFn::new(match sites_per_thread {
        2 => per_float!(T, "lorenz05_k32j12_p2"),
        4 => per_float!(T, "lorenz05_k32j12_p4"),
        _ => panic!("no Lorenz 2005 (32, 12) kernel of {sites_per_thread} sites per thread"),
    })
}

/// The kernels that take dynamic shared memory: [`super::Gpu`] allows each the
/// device's opt-in maximum once, when it loads them.
pub(crate) fn dynamic_shared() -> [&'static str; 10] {
    [
        bls_binned().name(),
        box_filter_band::<f32>().name(),
        box_filter_band::<f64>().name(),
        phasefold().name(),
        lorenz05::<f32>().name(),
        lorenz05::<f64>().name(),
        uniform_int(true).name(),
        uniform_int64(true).name(),
        uniform_float::<f32>(true).name(),
        uniform_float::<f64>(true).name(),
    ]
}

// ---- csrc/lorenz63.cu ----

/// The Lorenz 63 RK4 kernel's parameters (twelve).
pub(crate) type Lorenz63Rk4<T> = KernelFn<(
    In<T>,  // in
    Out<T>, // out (may be `in`)
    Out<T>, // saved (NULL: none)
    i64,    // members
    In<T>,  // sigma (NULL: sigma_all for every member)
    In<T>,  // rho (NULL: rho_all)
    In<T>,  // beta (NULL: beta_all)
    f64,    // sigma_all
    f64,    // rho_all
    f64,    // beta_all
    f64,    // dt
    i64,    // steps
)>;

/// `lorenz63_rk4_T(const T* in, T* out, T* saved, int64_t members, const T* sigma,
/// const T* rho, const T* beta, double sigma_all, double rho_all, double beta_all,
/// double dt, int64_t steps)`: one member per thread, `steps` RK4 steps.
pub(crate) fn lorenz63_rk4<T: Float>() -> Lorenz63Rk4<T> {
    KernelFn::new(per_float!(T, "lorenz63_rk4"))
}

/// The adaptive Lorenz 63 kernel's parameters (thirteen).
pub(crate) type Lorenz63Dopri5<T> = KernelFn<(
    In<T>,       // in
    Out<T>,      // out
    Out<T>,      // saved (NULL: none)
    Out<u32>,    // stats (NULL: none)
    i64,         // members
    In<T>,       // sigma (NULL: sigma_all for every member)
    In<T>,       // rho (NULL: rho_all)
    In<T>,       // beta (NULL: beta_all)
    f64,         // sigma_all
    f64,         // rho_all
    f64,         // beta_all
    In<f64>,     // save_times (run.frames values)
    L63Adaptive, // run
)>;

/// `lorenz63_dopri5_T(const T* in, T* out, T* saved, uint32_t* stats, int64_t members,
/// const T* sigma, const T* rho, const T* beta, double sigma_all, double rho_all,
/// double beta_all, const double* save_times, kp_l63_adaptive run)`: one member per thread, Dormand-Prince 5(4) with
/// SciPy RK45's step control from t0 to t_end, dense output at the save times.
pub(crate) fn lorenz63_dopri5<T: Float>() -> Lorenz63Dopri5<T> {
    KernelFn::new(per_float!(T, "lorenz63_dopri5"))
}

// ---- csrc/fg.cu (V: float2 / double2, interleaved complex) ----

/// The F/G step kernels' parameters (F, G, n, nchunks, nsteps or s, dt,
/// d0_re, d0_im, history, partials).
pub(crate) type FgStep<T> = KernelFn<(
    Out<Complex<T>>,   // F
    Out<Complex<T>>,   // G
    i64,               // n
    i64,               // nchunks
    i64,               // nsteps (cooperative) or s (step)
    f64,               // dt
    f64,               // d0_re
    f64,               // d0_im
    Out<Complex<T>>,   // history
    Out<Complex<f64>>, // partials (double2)
)>;

/// `fg_cooperative_kK_V(V* F, V* G, int64_t n, int64_t nchunks, int64_t nsteps,
/// double dt, double d0_re, double d0_im, V* history, double2* partials)`,
/// K = 1, 2 or 4 chunks per block (cooperative).
pub(crate) fn fg_cooperative<T: Float>(chunks_per_block: u32) -> FgStep<T> {
    KernelFn::new(match chunks_per_block {
        1 => per_float!(T, "fg_cooperative_k1", "_c64", "_c128"),
        2 => per_float!(T, "fg_cooperative_k2", "_c64", "_c128"),
        4 => per_float!(T, "fg_cooperative_k4", "_c64", "_c128"),
        _ => panic!("no cooperative F/G kernel of {chunks_per_block} chunks per block"),
    })
}

/// `fg_step_V(V* F, V* G, int64_t n, int64_t nchunks, int64_t s, double dt,
/// double d0_re, double d0_im, V* history, double2* partials)`
pub(crate) fn fg_step<T: Float>() -> FgStep<T> {
    KernelFn::new(per_float!(T, "fg_step", "_c64", "_c128"))
}

/// `fg_finish_V(const double2* partials, int64_t nchunks, int64_t s, V* history)`
pub(crate) fn fg_finish<T: Float>() -> KernelFn<(In<Complex<f64>>, i64, i64, Out<Complex<T>>)> {
    KernelFn::new(per_float!(T, "fg_finish", "_c64", "_c128"))
}

#[cfg(test)]
/// The entry points of csrc/ with their parameter types (macros expanded),
/// for the tests.
#[allow(dead_code)]
#[path = "../../tests/support/csrc_kernels.rs"]
mod csrc_kernels;

#[cfg(test)]
mod tests {
    use super::super::kernel_names;
    use super::super::launch::{KernelArgs, Param};
    use super::*;
    use std::collections::{BTreeMap, BTreeSet};

    fn params<A: KernelArgs>(kernel: KernelFn<A>) -> (&'static str, Vec<Param>) {
        (kernel.name(), A::params())
    }

    fn declared_for<T: Float>(out: &mut Vec<(&'static str, Vec<Param>)>) {
        out.extend([
            params(lombscargle_prepare::<T>()),
            params(lombscargle_direct::<T>()),
            params(lombscargle_uniform::<T>()),
            params(lombscargle_peaks::<T>()),
            params(best_peaks::<T>()),
            params(bootstrap_resample::<T>()),
            params(reduce_partial::<T>()),
            params(normalize::<T>()),
            params(normalize_fused::<T>()),
            params(reduce_batched_partial::<T>()),
            params(normalize_batched::<T>()),
            params(box_filter_running::<T>(false)),
            params(box_filter_running::<T>(true)),
            params(box_filter_band::<T>()),
            params(window_sum::<T>()),
            params(correlate::<T>(false)),
            params(correlate::<T>(true)),
            params(lorenz96::<T>()),
            params(lorenz05::<T>()),
            params(lorenz63_rk4::<T>()),
            params(lorenz63_dopri5::<T>()),
            params(fg_step::<T>()),
            params(fg_finish::<T>()),
        ]);
        out.extend((1..=4).map(|r| params(box_filter_unrolled::<T>(r))));
        out.extend([2, 4].map(|p| params(lorenz05_k32j12::<T>(p))));
        out.extend(L96_SITES_PER_LANE.map(|p| params(lorenz96_lanes::<T>(p))));
        out.extend(L96_SITES_PER_LANE.map(|p| params(lorenz96_tangent::<T>(p))));
        out.extend([1, 2, 4].map(|k| params(fg_cooperative::<T>(k))));
        out.extend((1..=8).map(|k| params(lombscargle_chi2::<T>(k))));
    }

    /// Every declaration, for both element types: (name, parameters).
    pub(crate) fn declared() -> Vec<(&'static str, Vec<Param>)> {
        let mut all = vec![
            params(bls_binned()),
            params(phasefold()),
            params(reduce_final()),
            params(reduce_batched_plan()),
            params(reduce_batched_final()),
            params(rank_digits_b32()),
            params(rank_digits_b64()),
            params(rank_sliding_b8()),
            params(rank_median3x3_b32()),
            params(rank_median3x3_b64()),
        ];
        for lines in [false, true] {
            all.push(params(uniform_int(lines)));
            all.push(params(uniform_int64(lines)));
            all.push(params(uniform_float::<f32>(lines)));
            all.push(params(uniform_float::<f64>(lines)));
        }
        all.extend([9, 25, 49, 81].map(|cap| params(rank_network_b32(cap))));
        all.extend([9, 25].map(|cap| params(rank_network_b64(cap))));
        all.extend((1..=3).map(|h| params(lombscargle_multiband(h))));
        declared_for::<f32>(&mut all);
        declared_for::<f64>(&mut all);
        all
    }

    #[test]
    fn every_kernel_is_declared_once() {
        let declared = declared();
        let names: BTreeSet<&str> = declared.iter().map(|(n, _)| *n).collect();
        assert_eq!(names.len(), declared.len(), "a kernel is declared twice");
        let loaded: BTreeSet<&str> = kernel_names().collect();
        assert_eq!(
            loaded.len(),
            kernel_names().count(),
            "KERNEL_FAMILIES repeats a name"
        );
        assert_eq!(
            names.difference(&loaded).collect::<Vec<_>>(),
            Vec::<&&str>::new(),
            "declared but not in KERNEL_FAMILIES"
        );
        assert_eq!(
            loaded.difference(&names).collect::<Vec<_>>(),
            Vec::<&&str>::new(),
            "in KERNEL_FAMILIES but not declared"
        );
        for name in dynamic_shared() {
            assert!(loaded.contains(name), "{name}");
        }
    }

    /// Each declaration has the parameter list of its C prototype in csrc/,
    /// and csrc/ has no entry point that is not declared.
    #[test]
    fn declarations_match_the_c_prototypes() {
        let declared: BTreeMap<&str, Vec<String>> = declared()
            .into_iter()
            .map(|(n, p)| (n, p.into_iter().map(|p| p.c_type).collect()))
            .collect();
        let csrc = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("csrc");
        let families = super::csrc_kernels::read_families(&csrc).unwrap();
        let prototypes: Vec<_> = families.iter().flat_map(|f| &f.kernels).collect();
        let c_names: BTreeSet<&str> = prototypes.iter().map(|k| k.name.as_str()).collect();
        let rust_names: BTreeSet<&str> = declared.keys().copied().collect();
        assert_eq!(c_names, rust_names, "entry points of csrc/ vs declarations");
        for kernel in prototypes {
            let name = kernel.name.as_str();
            assert_eq!(
                declared[name], kernel.params,
                "parameters of {name}: the declaration in src/gpu/kernels.rs (left) \
                 against the prototype in csrc/ (right)"
            );
        }
    }

    /// The driver's view of each parameter (offset and size in the kernel's
    /// parameter buffer, `cuFuncGetParamInfo`, driver 12.4 or later) against
    /// the declaration's, laid out as C lays out a struct. Skipped without a
    /// GPU or on an older driver.
    #[test]
    fn declarations_match_the_driver_layout() {
        use cudarc::driver::sys::{CUfunction, CUresult};
        let Ok(gpu) = super::super::Gpu::get(0) else {
            eprintln!("skipped: no GPU");
            return;
        };
        // Looked up by hand: kernpack binds the CUDA 11.4 driver API (cudarc's
        // cuda-11040), and this entry point is from 12.4.
        type ParamInfo =
            unsafe extern "C" fn(CUfunction, usize, *mut usize, *mut usize) -> CUresult;
        // SAFETY: the driver library is loaded (a GPU was found); the symbol,
        // when present, has the declared signature (cuda.h, CUDA 12.4).
        let Ok(param_info) =
            (unsafe { cudarc::driver::sys::culib().get::<ParamInfo>(b"cuFuncGetParamInfo") })
        else {
            eprintln!("skipped: the driver has no cuFuncGetParamInfo");
            return;
        };
        for (name, params) in declared() {
            let func = gpu.kernel_by_name(name).expect("kernel loads").func;
            let mut offset = 0usize;
            for (i, param) in params.iter().enumerate() {
                offset = offset.next_multiple_of(param.align);
                let (mut got_offset, mut got_size) = (0usize, 0usize);
                // SAFETY: func is a loaded kernel; the outputs are plain usizes.
                let status = unsafe { param_info(func, i, &mut got_offset, &mut got_size) };
                assert_eq!(status, CUresult::CUDA_SUCCESS, "{name} parameter {i}");
                assert_eq!(
                    (got_offset, got_size),
                    (offset, param.size),
                    "{name} parameter {i} ({}): driver (left) vs declaration (right)",
                    param.c_type
                );
                offset += param.size;
            }
            let (mut o, mut s) = (0usize, 0usize);
            // SAFETY: as above; one index past the last parameter.
            let past = unsafe { param_info(func, params.len(), &mut o, &mut s) };
            assert_ne!(past, CUresult::CUDA_SUCCESS, "{name} has more parameters");
        }
    }
}
