//! The BLS C entry points (kp_bls_*, kp_bls_batch_* and the batch's best
//! periods, kp_bls_batch_peaks_*): each call equals the safe API on the
//! same backend bit for bit (NULL options are the defaults; the peaks'
//! indices equal, their results' bits, then the padding), a GPU context
//! equals a CPU one bit for bit, and every bad call is the right status
//! with a message naming what is wrong, every output untouched and no
//! input written. On a CPU context, and on a GPU
//! context when there is one (skipped without a GPU; with
//! KERNPACK_REQUIRE_GPU=1 a missing GPU is a failure).
mod common;

use std::ptr::{null, null_mut};

use common::{bad_peak_options, expect_err, expect_ok, gpu_or_skip, last_error, Ctx, Rng};
use kernpack::api::bls::{
    BlsBatch, BlsObjective, BlsOptions, BlsPeaks, BlsResults, BlsSeries, PeakOptions, MAX_PEAKS,
};
use kernpack::ffi::bls::{
    kp_bls_batch_f32, kp_bls_batch_f64, kp_bls_batch_peaks_f32, kp_bls_batch_peaks_f64, kp_bls_f32,
    kp_bls_f64, kp_bls_options, kp_bls_options_default, KP_BLS_LIKELIHOOD, KP_BLS_SNR,
};
use kernpack::ffi::phasefold::{kp_peak_options, kp_peak_options_default};
use kernpack::ffi::{kp_backend, kp_context, kp_status, KP_BACKEND_CPU, KP_BACKEND_GPU};
use kernpack::{Backend, Float, Kernpack};

use kp_status::*;

const POISON: f64 = -4242.0;
const POISON_INDEX: i64 = -4242;
const NAMES: [&str; 7] = [
    "power",
    "depth",
    "depth_err",
    "duration",
    "transit_time",
    "depth_snr",
    "log_likelihood",
];

/// The two dtypes' entry points behind one name.
trait Dtype: Float {
    #[allow(clippy::too_many_arguments)]
    unsafe fn bls(
        ctx: *const kp_context,
        options: *const kp_bls_options,
        t: *const Self,
        y: *const Self,
        dy: *const Self,
        n: usize,
        periods: *const Self,
        nperiods: usize,
        durations: *const Self,
        ndurations: usize,
        out: [*mut Self; 7],
    ) -> kp_status;
    #[allow(clippy::too_many_arguments)]
    unsafe fn bls_batch(
        ctx: *const kp_context,
        options: *const kp_bls_options,
        t: *const Self,
        y: *const Self,
        dy: *const Self,
        offsets: *const i64,
        nseries: usize,
        periods: *const Self,
        nperiods: usize,
        durations: *const Self,
        ndurations: usize,
        out: [*mut Self; 7],
    ) -> kp_status;
    #[allow(clippy::too_many_arguments)]
    unsafe fn bls_batch_peaks(
        ctx: *const kp_context,
        options: *const kp_bls_options,
        t: *const Self,
        y: *const Self,
        dy: *const Self,
        offsets: *const i64,
        nseries: usize,
        periods: *const Self,
        nperiods: usize,
        durations: *const Self,
        ndurations: usize,
        peaks: *const kp_peak_options,
        index: *mut i64,
        out: [*mut Self; 7],
    ) -> kp_status;
}

macro_rules! dtype {
    ($t:ty, $single:ident, $batch:ident, $peaks:ident) => {
        impl Dtype for $t {
            unsafe fn bls(
                ctx: *const kp_context,
                options: *const kp_bls_options,
                t: *const Self,
                y: *const Self,
                dy: *const Self,
                n: usize,
                periods: *const Self,
                nperiods: usize,
                durations: *const Self,
                ndurations: usize,
                [o0, o1, o2, o3, o4, o5, o6]: [*mut Self; 7],
            ) -> kp_status {
                unsafe {
                    $single(
                        ctx, options, t, y, dy, n, periods, nperiods, durations, ndurations, o0,
                        o1, o2, o3, o4, o5, o6,
                    )
                }
            }
            unsafe fn bls_batch(
                ctx: *const kp_context,
                options: *const kp_bls_options,
                t: *const Self,
                y: *const Self,
                dy: *const Self,
                offsets: *const i64,
                nseries: usize,
                periods: *const Self,
                nperiods: usize,
                durations: *const Self,
                ndurations: usize,
                [o0, o1, o2, o3, o4, o5, o6]: [*mut Self; 7],
            ) -> kp_status {
                unsafe {
                    $batch(
                        ctx, options, t, y, dy, offsets, nseries, periods, nperiods, durations,
                        ndurations, o0, o1, o2, o3, o4, o5, o6,
                    )
                }
            }
            unsafe fn bls_batch_peaks(
                ctx: *const kp_context,
                options: *const kp_bls_options,
                t: *const Self,
                y: *const Self,
                dy: *const Self,
                offsets: *const i64,
                nseries: usize,
                periods: *const Self,
                nperiods: usize,
                durations: *const Self,
                ndurations: usize,
                peaks: *const kp_peak_options,
                index: *mut i64,
                [o0, o1, o2, o3, o4, o5, o6]: [*mut Self; 7],
            ) -> kp_status {
                unsafe {
                    $peaks(
                        ctx, options, t, y, dy, offsets, nseries, periods, nperiods, durations,
                        ndurations, peaks, index, o0, o1, o2, o3, o4, o5, o6,
                    )
                }
            }
        }
    };
}

dtype!(f32, kp_bls_f32, kp_bls_batch_f32, kp_bls_batch_peaks_f32);
dtype!(f64, kp_bls_f64, kp_bls_batch_f64, kp_bls_batch_peaks_f64);

/// The seven output arrays of `len` values, poisoned, each one value
/// longer (that value must stay poisoned on success too).
struct Outputs<T>([Vec<T>; 7]);

impl<T: Dtype> Outputs<T> {
    fn new(len: usize) -> Self {
        Outputs(std::array::from_fn(|_| vec![T::from_f64(POISON); len + 1]))
    }
    fn ptrs(&mut self) -> [*mut T; 7] {
        let mut it = self.0.iter_mut().map(|v| v.as_mut_ptr());
        std::array::from_fn(|_| it.next().unwrap())
    }
    /// Every value (the extra one too) still poisoned.
    #[track_caller]
    fn untouched(&self, what: &str) {
        for (name, v) in NAMES.iter().zip(&self.0) {
            assert!(
                v.iter().all(|x| x.to_f64() == POISON),
                "{what}: {name} was written by a failing call"
            );
        }
    }
    /// The fields as the API returns them, bit for bit, and the extra value
    /// of each still poisoned.
    #[track_caller]
    fn equal(&self, want: &[BlsResults<T>], what: &str) {
        for (f, (name, v)) in NAMES.iter().zip(&self.0).enumerate() {
            let (last, got) = v.split_last().unwrap();
            assert_eq!(
                last.to_f64(),
                POISON,
                "{what}: wrote past the end of {name}"
            );
            let want: Vec<T> = want
                .iter()
                .flat_map(|r| r.columns()[f].iter().copied())
                .collect();
            assert_eq!(bits(got), bits(&want), "{what}: {name}");
        }
    }
}

/// Values as bit patterns, so that NaN equals NaN and -0 differs from 0.
fn bits<T: Float>(v: &[T]) -> Vec<u64> {
    v.iter().map(|x| x.to_f64().to_bits()).collect()
}

fn cast<T: Float>(v: &[f64]) -> Vec<T> {
    v.iter().map(|&x| T::from_f64(x)).collect()
}

/// Three light curves of 150-350 samples with errors, each with a planted
/// box-shaped transit (period, duration, depth drawn from `seed`), the
/// periods to try and the durations.
struct Data {
    t: Vec<f64>,
    y: Vec<f64>,
    dy: Vec<f64>,
    offsets: Vec<i64>,
    periods: Vec<f64>,
    durations: Vec<f64>,
}

fn data(seed: u64) -> Data {
    let mut rng = Rng(seed);
    let periods: Vec<f64> = (0..60).map(|k| 1.5 + 0.02 * k as f64).collect();
    let durations = vec![0.05, 0.08, 0.12];
    let (mut t, mut y, mut dy, mut offsets) = (vec![], vec![], vec![], vec![0i64]);
    for _ in 0..3 {
        let n = 150 + rng.range(0.0, 200.0) as usize;
        let period = rng.range(1.6, 2.5);
        let (width, depth, t0) = (rng.range(0.06, 0.12), rng.range(0.005, 0.03), 5e4);
        for _ in 0..n {
            let ti = t0 + rng.range(0.0, 25.0);
            let inside = (ti - t0).rem_euclid(period) < width;
            t.push(ti);
            y.push(1.0 + rng.range(-0.002, 0.002) - if inside { depth } else { 0.0 });
            dy.push(rng.range(0.001, 0.003));
        }
        offsets.push(t.len() as i64);
    }
    Data {
        t,
        y,
        dy,
        offsets,
        periods,
        durations,
    }
}

/// The single-series and batch calls of one dtype on `ctx` against the
/// safe API on `kp`: a series with errors and the SNR objective, one
/// without errors with NULL options, and the whole batch.
fn equal_the_api<T: Dtype>(ctx: &Ctx, kp: &Kernpack) {
    let d = data(0xb15);
    let (t, y, dy) = (cast::<T>(&d.t), cast::<T>(&d.y), cast::<T>(&d.dy));
    let (periods, durations) = (cast::<T>(&d.periods), cast::<T>(&d.durations));
    let np = periods.len();
    let n0 = d.offsets[1] as usize;
    let what = T::NAME;

    let options = kp_bls_options {
        objective: KP_BLS_SNR,
        oversample: 7,
    };
    let opts = BlsOptions {
        objective: BlsObjective::Snr,
        oversample: 7,
    };
    let mut out = Outputs::<T>::new(np);
    let s = unsafe {
        T::bls(
            ctx.ptr(),
            &options,
            t.as_ptr(),
            y.as_ptr(),
            dy.as_ptr(),
            n0,
            periods.as_ptr(),
            np,
            durations.as_ptr(),
            durations.len(),
            out.ptrs(),
        )
    };
    expect_ok(s);
    let series = BlsSeries::new(&t[..n0], &y[..n0]).with_dy(&dy[..n0]);
    let want = kp.bls(&series, &periods, &durations, &opts).unwrap();
    out.equal(&[want], &format!("{what} single, dy, snr"));

    // NULL options are astropy's defaults; NULL dy equal errors.
    let mut out = Outputs::<T>::new(np);
    let s = unsafe {
        T::bls(
            ctx.ptr(),
            null(),
            t.as_ptr(),
            y.as_ptr(),
            null(),
            n0,
            periods.as_ptr(),
            np,
            durations.as_ptr(),
            durations.len(),
            out.ptrs(),
        )
    };
    expect_ok(s);
    let series = BlsSeries::new(&t[..n0], &y[..n0]);
    let want = kp
        .bls(&series, &periods, &durations, &BlsOptions::default())
        .unwrap();
    // Boxes were found (ffi-tests/bls.c checks that they are the transit).
    assert!(want.depth.iter().all(|d| d.to_f64() > 0.0), "{what}");
    out.equal(&[want], &format!("{what} single, NULL options"));

    // The batch, with errors.
    let nseries = d.offsets.len() - 1;
    let mut out = Outputs::<T>::new(nseries * np);
    let options = kp_bls_options {
        oversample: 4,
        ..kp_bls_options_default()
    };
    let s = unsafe {
        T::bls_batch(
            ctx.ptr(),
            &options,
            t.as_ptr(),
            y.as_ptr(),
            dy.as_ptr(),
            d.offsets.as_ptr(),
            nseries,
            periods.as_ptr(),
            np,
            durations.as_ptr(),
            durations.len(),
            out.ptrs(),
        )
    };
    expect_ok(s);
    let offsets: Vec<usize> = d.offsets.iter().map(|&o| o as usize).collect();
    let batch = BlsBatch {
        t: &t,
        y: &y,
        dy: Some(&dy),
        offsets: &offsets,
    };
    let opts = BlsOptions {
        oversample: 4,
        ..BlsOptions::default()
    };
    let want = kp.bls_batch(&batch, &periods, &durations, &opts).unwrap();
    assert_eq!(want.len(), nseries);
    out.equal(&want, &format!("{what} batch"));
}

fn agrees(backend: kp_backend, api: Backend) {
    let ctx = Ctx::new(backend);
    let kp = Kernpack::new(api).unwrap();
    equal_the_api::<f64>(&ctx, &kp);
    equal_the_api::<f32>(&ctx, &kp);
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos() as u64;
    println!("peaks seed {now:#x}");
    for seed in [0xb15, 0x7ea4, now] {
        peaks_equal_the_api::<f64>(&ctx, &kp, seed);
        peaks_equal_the_api::<f32>(&ctx, &kp, seed);
    }
}

/// `index` (`k` a series) and the seven fields (as many values) hold the
/// API's best periods `want` (indices equal, results bit for bit), index
/// -1 and NaN in every field past a series' last, and then the poison.
#[track_caller]
fn equal_peaks<T: Dtype>(
    index: &[i64],
    out: &Outputs<T>,
    want: &[BlsPeaks<T>],
    k: usize,
    what: &str,
) {
    let len = want.len() * k;
    assert_eq!(index.len(), len + 1, "{what}");
    assert_eq!(
        index[len], POISON_INDEX,
        "{what}: wrote past the end of index"
    );
    for (s, p) in want.iter().enumerate() {
        let found = p.period_index.len();
        assert!(found <= k, "{what}: series {s} has {found} peaks");
        for j in 0..k {
            let i = p.period_index.get(j).map_or(-1, |&i| i as i64);
            assert_eq!(index[s * k + j], i, "{what}: series {s}, peak {j}");
        }
        for (f, (name, v)) in NAMES.iter().zip(&out.0).enumerate() {
            assert_eq!(v.len(), len + 1, "{what}");
            assert_eq!(
                v[len].to_f64(),
                POISON,
                "{what}: wrote past the end of {name}"
            );
            let column = &p.results.columns()[f];
            assert_eq!(column.len(), found, "{what}: {name}");
            let row = &v[s * k..(s + 1) * k];
            assert_eq!(
                bits(&row[..found]),
                bits(column),
                "{what}: series {s}, {name}"
            );
            assert!(
                row[found..].iter().all(|x| x.to_f64().is_nan()),
                "{what}: series {s}, {name}: padding is not NaN"
            );
        }
    }
}

/// The batch of `seed`'s data with a series of one sample after it (no box
/// at any period: no peak, its rows all padding), through
/// kp_bls_batch_peaks_{dtype} with NULL peak options, a few peaks, and as
/// many as allowed with a separation (in period), against
/// `Kernpack::bls_batch_peaks`; the best peak is the first highest power
/// that kp_bls_batch_{dtype} gives, with its results there.
fn peaks_equal_the_api<T: Dtype>(ctx: &Ctx, kp: &Kernpack, seed: u64) {
    let mut rng = Rng(seed ^ 0x9ea4);
    let mut d = data(seed);
    d.t.push(5e4 + 3.0);
    d.y.push(1.0);
    d.dy.push(0.002);
    d.offsets.push(d.t.len() as i64);
    let (t, y, dy) = (cast::<T>(&d.t), cast::<T>(&d.y), cast::<T>(&d.dy));
    let (periods, durations) = (cast::<T>(&d.periods), cast::<T>(&d.durations));
    let (np, nseries) = (periods.len(), d.offsets.len() - 1);
    let offsets: Vec<usize> = d.offsets.iter().map(|&o| o as usize).collect();
    let few = kp_peak_options {
        k: rng.range(2.0, 9.0) as usize,
        separation: 0.0,
    };
    let most = kp_peak_options {
        k: MAX_PEAKS,
        separation: rng.range(0.0, 0.12),
    };
    let snr = kp_bls_options {
        objective: KP_BLS_SNR,
        oversample: 6,
    };
    for (options, with_dy, peaks) in [
        (None, true, None),
        (Some(snr), false, Some(few)),
        (None, true, Some(most)),
    ] {
        let what = format!("{} seed {seed:#x} {options:?} {peaks:?}", T::NAME);
        let o = options.unwrap_or_else(|| kp_bls_options_default());
        let opts = BlsOptions {
            objective: if o.objective == KP_BLS_SNR {
                BlsObjective::Snr
            } else {
                BlsObjective::Likelihood
            },
            oversample: o.oversample,
        };
        let p = peaks.unwrap_or_else(|| kp_peak_options_default());
        let batch = BlsBatch {
            t: &t,
            y: &y,
            dy: with_dy.then_some(&dy[..]),
            offsets: &offsets,
        };
        let peak_opts = PeakOptions {
            k: p.k,
            separation: p.separation,
        };
        let want = kp
            .bls_batch_peaks(&batch, &periods, &durations, &opts, &peak_opts)
            .unwrap();
        assert_eq!(want.len(), nseries, "{what}");
        // Not a trivial agreement: every curve has a peak, the one of one
        // sample none.
        assert!(
            want[..nseries - 1]
                .iter()
                .all(|p| !p.period_index.is_empty()),
            "{what}"
        );
        assert!(want[nseries - 1].period_index.is_empty(), "{what}");
        let mut index = vec![POISON_INDEX; nseries * p.k + 1];
        let mut out = Outputs::<T>::new(nseries * p.k);
        let dy_ptr = if with_dy { dy.as_ptr() } else { null() };
        let s = unsafe {
            T::bls_batch_peaks(
                ctx.ptr(),
                options
                    .as_ref()
                    .map_or(null(), |o| o as *const kp_bls_options),
                t.as_ptr(),
                y.as_ptr(),
                dy_ptr,
                d.offsets.as_ptr(),
                nseries,
                periods.as_ptr(),
                np,
                durations.as_ptr(),
                durations.len(),
                peaks
                    .as_ref()
                    .map_or(null(), |p| p as *const kp_peak_options),
                index.as_mut_ptr(),
                out.ptrs(),
            )
        };
        expect_ok(s);
        equal_peaks(&index, &out, &want, p.k, &what);

        // The first peak against the C batch's results at every period.
        let mut all = Outputs::<T>::new(nseries * np);
        let s = unsafe {
            T::bls_batch(
                ctx.ptr(),
                &o,
                t.as_ptr(),
                y.as_ptr(),
                dy_ptr,
                d.offsets.as_ptr(),
                nseries,
                periods.as_ptr(),
                np,
                durations.as_ptr(),
                durations.len(),
                all.ptrs(),
            )
        };
        expect_ok(s);
        for s in 0..nseries - 1 {
            let power = &all.0[0][s * np..(s + 1) * np];
            let best = (1..np).fold(0, |b, i| if power[i] > power[b] { i } else { b });
            assert_eq!(index[s * p.k], best as i64, "{what}: series {s}");
            for (f, name) in NAMES.iter().enumerate() {
                assert_eq!(
                    out.0[f][s * p.k].to_f64().to_bits(),
                    all.0[f][s * np + best].to_f64().to_bits(),
                    "{what}: series {s}, {name} at the best period"
                );
            }
        }
    }
}

#[test]
fn c_calls_equal_the_api_on_cpu() {
    agrees(KP_BACKEND_CPU, Backend::Cpu);
}

#[test]
fn c_calls_equal_the_api_on_gpu() {
    if gpu_or_skip("c_calls_equal_the_api_on_gpu").is_some() {
        agrees(KP_BACKEND_GPU, Backend::Gpu);
    }
}

/// The batch of `d` on `ctx`, all seven fields.
fn batch_on<T: Dtype>(ctx: &Ctx, d: &Data, opts: &kp_bls_options) -> Outputs<T> {
    let (t, y, dy) = (cast::<T>(&d.t), cast::<T>(&d.y), cast::<T>(&d.dy));
    let (periods, durations) = (cast::<T>(&d.periods), cast::<T>(&d.durations));
    let nseries = d.offsets.len() - 1;
    let mut out = Outputs::<T>::new(nseries * periods.len());
    let s = unsafe {
        T::bls_batch(
            ctx.ptr(),
            opts,
            t.as_ptr(),
            y.as_ptr(),
            dy.as_ptr(),
            d.offsets.as_ptr(),
            nseries,
            periods.as_ptr(),
            periods.len(),
            durations.as_ptr(),
            durations.len(),
            out.ptrs(),
        )
    };
    expect_ok(s);
    out
}

/// A GPU context writes what a CPU context writes, bit for bit (both sum in
/// fixed point and finish each box with the same code), for both
/// objectives, both dtypes, and a phase grid too fine for shared memory.
#[test]
fn gpu_context_equals_cpu_context() {
    if gpu_or_skip("gpu_context_equals_cpu_context").is_none() {
        return;
    }
    let (cpu, gpu) = (Ctx::new(KP_BACKEND_CPU), Ctx::new(KP_BACKEND_GPU));
    let mut fine = data(77);
    // ~1e5 bins per period: the histogram in global scratch.
    fine.durations = vec![0.004, 0.01];
    fine.periods = vec![30.0, 33.3];
    for d in [data(0x5eed), data(0xfeed), fine] {
        for objective in [KP_BLS_LIKELIHOOD, KP_BLS_SNR] {
            let o = kp_bls_options {
                objective,
                ..kp_bls_options_default()
            };
            for (a, b) in batch_on::<f64>(&gpu, &d, &o)
                .0
                .iter()
                .zip(&batch_on::<f64>(&cpu, &d, &o).0)
            {
                assert_eq!(bits(a), bits(b), "f64, objective {objective}");
            }
            for (a, b) in batch_on::<f32>(&gpu, &d, &o)
                .0
                .iter()
                .zip(&batch_on::<f32>(&cpu, &d, &o).0)
            {
                assert_eq!(bits(a), bits(b), "f32, objective {objective}");
            }
            let p = kp_peak_options {
                k: 4,
                separation: 0.05,
            };
            let (gi, go) = peaks_on::<f64>(&gpu, &d, &o, &p);
            let (ci, co) = peaks_on::<f64>(&cpu, &d, &o, &p);
            assert_eq!(gi, ci, "f64 peaks, objective {objective}");
            for (a, b) in go.0.iter().zip(&co.0) {
                assert_eq!(bits(a), bits(b), "f64 peaks, objective {objective}");
            }
            let (gi, go) = peaks_on::<f32>(&gpu, &d, &o, &p);
            let (ci, co) = peaks_on::<f32>(&cpu, &d, &o, &p);
            assert_eq!(gi, ci, "f32 peaks, objective {objective}");
            for (a, b) in go.0.iter().zip(&co.0) {
                assert_eq!(bits(a), bits(b), "f32 peaks, objective {objective}");
            }
        }
    }
}

/// The best periods of the batch of `d` on `ctx`: the indices and the
/// seven fields.
fn peaks_on<T: Dtype>(
    ctx: &Ctx,
    d: &Data,
    opts: &kp_bls_options,
    p: &kp_peak_options,
) -> (Vec<i64>, Outputs<T>) {
    let (t, y, dy) = (cast::<T>(&d.t), cast::<T>(&d.y), cast::<T>(&d.dy));
    let (periods, durations) = (cast::<T>(&d.periods), cast::<T>(&d.durations));
    let nseries = d.offsets.len() - 1;
    let mut index = vec![POISON_INDEX; nseries * p.k + 1];
    let mut out = Outputs::<T>::new(nseries * p.k);
    let s = unsafe {
        T::bls_batch_peaks(
            ctx.ptr(),
            opts,
            t.as_ptr(),
            y.as_ptr(),
            dy.as_ptr(),
            d.offsets.as_ptr(),
            nseries,
            periods.as_ptr(),
            periods.len(),
            durations.as_ptr(),
            durations.len(),
            p,
            index.as_mut_ptr(),
            out.ptrs(),
        )
    };
    expect_ok(s);
    (index, out)
}

#[test]
fn default_options_are_astropys() {
    let d = kp_bls_options_default();
    assert_eq!((d.objective, d.oversample), (KP_BLS_LIKELIHOOD, 10));
    assert_eq!(KP_BLS_LIKELIHOOD, BlsObjective::Likelihood as u32);
    assert_eq!(KP_BLS_SNR, BlsObjective::Snr as u32);
    let o = BlsOptions::default();
    assert_eq!((o.objective, o.oversample), (BlsObjective::Likelihood, 10));
}

/// A period with no box (one sample: nothing is ever out of transit) is
/// power -inf and NaN in the other six fields, as in astropy.
#[test]
fn no_box_is_minus_infinity_and_nan() {
    let ctx = Ctx::new(KP_BACKEND_CPU);
    let (t, y, periods, durations) = ([3.0f64], [1.0f64], [1.0f64, 2.0], [0.1f64]);
    let mut out = Outputs::<f64>::new(2);
    let s = unsafe {
        f64::bls(
            ctx.ptr(),
            null(),
            t.as_ptr(),
            y.as_ptr(),
            null(),
            1,
            periods.as_ptr(),
            2,
            durations.as_ptr(),
            1,
            out.ptrs(),
        )
    };
    expect_ok(s);
    assert_eq!(out.0[0][..2], [f64::NEG_INFINITY; 2]);
    for field in &out.0[1..] {
        assert!(field[..2].iter().all(|v| v.is_nan()), "{field:?}");
    }
}

/// One single-series call with every argument given, some replaced.
#[derive(Clone, Copy)]
struct Call<T> {
    ctx: *const kp_context,
    options: *const kp_bls_options,
    t: *const T,
    y: *const T,
    dy: *const T,
    n: usize,
    periods: *const T,
    nperiods: usize,
    durations: *const T,
    ndurations: usize,
    out: [*mut T; 7],
}

impl<T: Dtype> Call<T> {
    fn run(&self) -> kp_status {
        unsafe {
            T::bls(
                self.ctx,
                self.options,
                self.t,
                self.y,
                self.dy,
                self.n,
                self.periods,
                self.nperiods,
                self.durations,
                self.ndurations,
                self.out,
            )
        }
    }
}

/// Every bad single-series call of dtype `T` on `ctx`: the status, the
/// message, every output untouched, the inputs unchanged.
fn single_errors<T: Dtype>(ctx: &Ctx) {
    let c = |v: &[f64]| cast::<T>(v);
    let t = c(&[0.0, 0.7, 1.9, 3.2, 4.1, 5.5, 6.0, 7.7]);
    let y = c(&[1.0, 0.2, -0.8, 0.1, 0.9, -0.4, -1.0, 0.6]);
    let dy = c(&[0.1; 8]);
    let (periods, durations) = (c(&[1.0, 2.0, 3.0]), c(&[0.1, 0.2]));
    let inputs = [&t, &y, &dy, &periods, &durations].map(|v| bits(v));
    let mut out = Outputs::<T>::new(3);
    let good = Call {
        ctx: ctx.ptr(),
        options: null(),
        t: t.as_ptr(),
        y: y.as_ptr(),
        dy: dy.as_ptr(),
        n: 8,
        periods: periods.as_ptr(),
        nperiods: 3,
        durations: durations.as_ptr(),
        ndurations: 2,
        out: out.ptrs(),
    };
    let nan_t = c(&[0.0, 0.7, f64::NAN, 3.2, 4.1, 5.5, 6.0, 7.7]);
    let inf_y = c(&[1.0, 0.2, -0.8, f64::INFINITY, 0.9, -0.4, -1.0, 0.6]);
    let nan_dy = c(&[0.1, f64::NAN, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1]);
    let zero_dy = c(&[0.1, 0.1, 0.1, 0.1, 0.0, 0.1, 0.1, 0.1]);
    let neg_dy = c(&[-0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1]);
    let tiny_dy = c(&[1e-200; 8]);
    let huge_y = c(&[1e308; 8]);
    let neg_period = c(&[1.0, -2.0, 3.0]);
    let nan_period = c(&[f64::NAN, 2.0, 3.0]);
    let inf_period = c(&[1.0, 2.0, f64::INFINITY]);
    let zero_duration = c(&[0.0, 0.2]);
    let long_duration = c(&[0.1, 1.0]);
    let (far, short) = (c(&[1e12]), c(&[1e-3]));
    let zero_oversample = kp_bls_options {
        oversample: 0,
        ..kp_bls_options_default()
    };
    let bad_objective = kp_bls_options {
        objective: 2,
        ..kp_bls_options_default()
    };
    let out_with = |i: usize, p: *mut T| {
        let mut o = good.out;
        o[i] = p;
        o
    };
    let (same_out, over_t) = (out_with(1, good.out[0]), out_with(0, t.as_ptr() as *mut T));
    let over_durations = out_with(6, durations.as_ptr() as *mut T);

    #[rustfmt::skip]
    let mut cases: Vec<(String, Call<T>, kp_status, String)> = [
        ("NULL ctx", Call { ctx: null(), ..good }, KP_ERROR_NULL_POINTER, "ctx is NULL"),
        ("NULL t", Call { t: null(), ..good }, KP_ERROR_NULL_POINTER, "t is NULL"),
        ("NULL y", Call { y: null(), ..good }, KP_ERROR_NULL_POINTER, "y is NULL"),
        ("NULL periods", Call { periods: null(), ..good }, KP_ERROR_NULL_POINTER, "periods is NULL"),
        ("NULL durations", Call { durations: null(), ..good }, KP_ERROR_NULL_POINTER, "durations is NULL"),
        ("n 0", Call { n: 0, ..good }, KP_ERROR_INVALID_ARGUMENT, "at least one sample"),
        ("nperiods 0", Call { nperiods: 0, ..good }, KP_ERROR_INVALID_ARGUMENT, "no periods"),
        ("ndurations 0", Call { ndurations: 0, ..good }, KP_ERROR_INVALID_ARGUMENT, "no durations"),
        ("n huge", Call { n: usize::MAX / 2, ..good }, KP_ERROR_INVALID_ARGUMENT, "t: "),
        ("nperiods huge", Call { nperiods: usize::MAX, ..good }, KP_ERROR_INVALID_ARGUMENT, "periods: "),
        ("NaN t", Call { t: nan_t.as_ptr(), ..good }, KP_ERROR_INVALID_ARGUMENT, "t[2] = NaN is not finite"),
        ("inf y", Call { y: inf_y.as_ptr(), ..good }, KP_ERROR_INVALID_ARGUMENT, "y[3] = inf is not finite"),
        ("NaN dy", Call { dy: nan_dy.as_ptr(), ..good }, KP_ERROR_INVALID_ARGUMENT, "dy[1] = NaN is not finite"),
        ("zero dy", Call { dy: zero_dy.as_ptr(), ..good }, KP_ERROR_INVALID_ARGUMENT, "dy[4] = 0 is not positive"),
        ("negative dy", Call { dy: neg_dy.as_ptr(), ..good }, KP_ERROR_INVALID_ARGUMENT, "dy[0] = -0.1 is not positive"),
        ("negative period", Call { periods: neg_period.as_ptr(), ..good }, KP_ERROR_INVALID_ARGUMENT,
            "period[1] = -2 is not a finite positive number"),
        ("NaN period", Call { periods: nan_period.as_ptr(), ..good }, KP_ERROR_INVALID_ARGUMENT, "period[0] = NaN"),
        ("inf period", Call { periods: inf_period.as_ptr(), ..good }, KP_ERROR_INVALID_ARGUMENT, "period[2] = inf"),
        ("zero duration", Call { durations: zero_duration.as_ptr(), ..good }, KP_ERROR_INVALID_ARGUMENT, "duration[0] = 0"),
        ("duration >= period", Call { durations: long_duration.as_ptr(), ..good }, KP_ERROR_INVALID_ARGUMENT,
            "the longest duration (1) must be shorter than the shortest period (1)"),
        ("too many bins", Call { periods: far.as_ptr(), nperiods: 1, durations: short.as_ptr(), ndurations: 1, ..good },
            KP_ERROR_INVALID_ARGUMENT, "phase bins"),
        ("oversample 0", Call { options: &zero_oversample, ..good }, KP_ERROR_INVALID_ARGUMENT,
            "oversample must be at least 1"),
        ("objective 2", Call { options: &bad_objective, ..good }, KP_ERROR_INVALID_ARGUMENT, "unknown objective value 2"),
        ("power over depth", Call { out: same_out, ..good }, KP_ERROR_INVALID_ARGUMENT, "power and depth overlap"),
        ("power over t", Call { out: over_t, ..good }, KP_ERROR_INVALID_ARGUMENT, "power and t overlap"),
        ("log_likelihood over durations", Call { out: over_durations, ..good }, KP_ERROR_INVALID_ARGUMENT,
            "log_likelihood and durations overlap"),
    ]
    .into_iter()
    .map(|(what, call, status, needle)| (what.to_string(), call, status, needle.to_string()))
    .collect();
    if T::NAME == "f64" {
        // Out of f32's range: only f64 values can be this small or large.
        #[rustfmt::skip]
        let extreme = [
            ("weights overflow", Call { dy: tiny_dy.as_ptr(), ..good }, "sum past f64's range"),
            ("y / dy^2 overflows", Call { y: huge_y.as_ptr(), dy: null(), ..good }, "sum past f64's range"),
        ];
        for (what, call, needle) in extreme {
            cases.push((what.into(), call, KP_ERROR_INVALID_ARGUMENT, needle.into()));
        }
    }
    for (i, name) in NAMES.iter().enumerate() {
        let call = Call {
            out: out_with(i, null_mut()),
            ..good
        };
        cases.push((
            format!("NULL {name}"),
            call,
            KP_ERROR_NULL_POINTER,
            format!("{name} is NULL"),
        ));
    }
    for (what, call, status, needle) in &cases {
        let what = format!("{} {what}", T::NAME);
        let s = call.run();
        let msg = last_error();
        assert_eq!(s, *status, "{what}: {msg:?}");
        assert!(
            msg.contains(needle.as_str()),
            "{what}: {needle:?} not in {msg:?}"
        );
        out.untouched(&what);
        let now = [&t, &y, &dy, &periods, &durations].map(|v| bits(v));
        assert_eq!(inputs, now, "{what}: an input was written");
    }
    // And the good call succeeds, clearing the message.
    expect_ok(good.run());
}

/// Every bad batch call of dtype `T` on `ctx`, as [`single_errors`].
fn batch_errors<T: Dtype>(ctx: &Ctx) {
    let c = |v: &[f64]| cast::<T>(v);
    let t = c(&[0.0, 0.7, 1.9, 3.2, 4.1, 5.5, 6.0, 7.7, 8.1]);
    let y = c(&[1.0, 0.2, -0.8, 0.1, 0.9, -0.4, -1.0, 0.6, 0.3]);
    let dy = c(&[0.1, 0.1, 0.1, -0.2, 0.1, 0.1, 0.1, 0.1, 0.1]);
    let nan_t = c(&[0.0, 0.7, 1.9, 3.2, 4.1, 5.5, 6.0, f64::NAN, 8.1]);
    let (periods, durations) = (c(&[1.0, 2.0]), c(&[0.1]));
    let mut out = Outputs::<T>::new(6);
    let ptrs = out.ptrs();
    let call = |dy: *const T,
                t: *const T,
                offsets: *const i64,
                nseries: usize,
                nperiods: usize,
                out: [*mut T; 7]| unsafe {
        T::bls_batch(
            ctx.ptr(),
            null(),
            t,
            y.as_ptr(),
            dy,
            offsets,
            nseries,
            periods.as_ptr(),
            nperiods,
            durations.as_ptr(),
            1,
            out,
        )
    };
    let good: [i64; 4] = [0, 3, 6, 9];
    let (tp, no_dy) = (t.as_ptr(), null());
    let check = |s: kp_status, want: kp_status, needle: &str, out: &Outputs<T>| {
        expect_err(s, want, needle);
        out.untouched(needle);
    };
    // Series 1 holds the negative dy (sample 3, its first).
    let s = call(dy.as_ptr(), tp, good.as_ptr(), 3, 2, ptrs);
    check(
        s,
        KP_ERROR_INVALID_ARGUMENT,
        "series 1: dy[0] = -0.2 is not positive",
        &out,
    );
    let s = call(no_dy, nan_t.as_ptr(), good.as_ptr(), 3, 2, ptrs);
    check(
        s,
        KP_ERROR_INVALID_ARGUMENT,
        "series 2: t[1] = NaN is not finite",
        &out,
    );
    let s = call(no_dy, tp, null(), 3, 2, ptrs);
    check(s, KP_ERROR_NULL_POINTER, "offsets is NULL", &out);
    let s = call(no_dy, tp, good.as_ptr(), 0, 2, ptrs);
    check(s, KP_ERROR_INVALID_ARGUMENT, "at least one series", &out);
    let s = call(no_dy, tp, [0, -3, 9].as_ptr(), 2, 2, ptrs);
    check(
        s,
        KP_ERROR_INVALID_ARGUMENT,
        "offsets[1] = -3 is negative",
        &out,
    );
    let s = call(no_dy, tp, [0, 6, 3, 9].as_ptr(), 3, 2, ptrs);
    check(
        s,
        KP_ERROR_INVALID_ARGUMENT,
        "series 1 is empty or offsets decrease there",
        &out,
    );
    let s = call(no_dy, tp, [0, 0, 9].as_ptr(), 2, 2, ptrs);
    check(s, KP_ERROR_INVALID_ARGUMENT, "series 0 is empty", &out);
    let s = call(no_dy, tp, [1, 4, 9].as_ptr(), 2, 2, ptrs);
    check(
        s,
        KP_ERROR_INVALID_ARGUMENT,
        "offsets must start at 0",
        &out,
    );
    let s = call(no_dy, null(), good.as_ptr(), 3, 2, ptrs);
    check(s, KP_ERROR_NULL_POINTER, "t is NULL", &out);
    let s = call(no_dy, tp, good.as_ptr(), 3, 0, ptrs);
    check(s, KP_ERROR_INVALID_ARGUMENT, "no periods", &out);
    let huge = usize::MAX / 2 + 1;
    let s = call(no_dy, tp, good.as_ptr(), 3, huge, ptrs);
    check(
        s,
        KP_ERROR_INVALID_ARGUMENT,
        &format!("nseries x nperiods = 3 x {huge} overflows"),
        &out,
    );
    let mut null_tt = ptrs;
    null_tt[4] = null_mut();
    let s = call(no_dy, tp, good.as_ptr(), 3, 2, null_tt);
    check(s, KP_ERROR_NULL_POINTER, "transit_time is NULL", &out);
    let mut over_t = ptrs;
    over_t[1] = t.as_ptr() as *mut T;
    let s = call(no_dy, tp, good.as_ptr(), 3, 2, over_t);
    check(s, KP_ERROR_INVALID_ARGUMENT, "depth and t overlap", &out);
    // The good call.
    expect_ok(call(no_dy, tp, good.as_ptr(), 3, 2, ptrs));
    assert!(out
        .0
        .iter()
        .all(|v| v[..6].iter().all(|x| x.to_f64() != POISON)));
}

/// One kp_bls_batch_peaks call with every argument given, some replaced.
#[derive(Clone, Copy)]
struct PeaksCall<T> {
    options: *const kp_bls_options,
    t: *const T,
    y: *const T,
    dy: *const T,
    offsets: *const i64,
    nseries: usize,
    periods: *const T,
    nperiods: usize,
    durations: *const T,
    peaks: *const kp_peak_options,
    index: *mut i64,
    out: [*mut T; 7],
}

impl<T: Dtype> PeaksCall<T> {
    fn run(&self, ctx: &Ctx) -> kp_status {
        unsafe {
            T::bls_batch_peaks(
                ctx.ptr(),
                self.options,
                self.t,
                self.y,
                self.dy,
                self.offsets,
                self.nseries,
                self.periods,
                self.nperiods,
                self.durations,
                1,
                self.peaks,
                self.index,
                self.out,
            )
        }
    }
}

/// Every bad kp_bls_batch_peaks call of dtype `T` on `ctx`: the batch's
/// own faults, peak options out of range, NULL, misaligned and
/// overlapping outputs; each the status, the message, `index` and every
/// field untouched, the inputs unchanged.
fn peak_errors<T: Dtype>(ctx: &Ctx) {
    let c = |v: &[f64]| cast::<T>(v);
    let t = c(&[0.0, 0.7, 1.9, 3.2, 4.1, 5.5, 6.0, 7.7, 8.1]);
    let y = c(&[1.0, 0.2, -0.8, 0.1, 0.9, -0.4, -1.0, 0.6, 0.3]);
    let dy = c(&[0.1; 9]);
    let bad_dy = c(&[0.1, 0.1, 0.1, -0.2, 0.1, 0.1, 0.1, 0.1, 0.1]);
    let nan_t = c(&[0.0, 0.7, 1.9, 3.2, 4.1, 5.5, 6.0, f64::NAN, 8.1]);
    let (periods, durations) = (c(&[1.0, 2.0]), c(&[0.1]));
    let long = c(&[1.5]);
    let offsets: [i64; 4] = [0, 3, 6, 9];
    let two = kp_peak_options {
        k: 2,
        separation: 0.0,
    };
    // Two peaks of three series, and as many more (so that an output over
    // another has room).
    let mut index = vec![POISON_INDEX; 12];
    let mut out = Outputs::<T>::new(11);
    let inputs = || [&t, &y, &dy, &periods, &durations].map(|v| bits(v));
    let before = (inputs(), offsets);
    let good = PeaksCall {
        options: null(),
        t: t.as_ptr(),
        y: y.as_ptr(),
        dy: dy.as_ptr(),
        offsets: offsets.as_ptr(),
        nseries: 3,
        periods: periods.as_ptr(),
        nperiods: 2,
        durations: durations.as_ptr(),
        peaks: &two,
        index: index.as_mut_ptr(),
        out: out.ptrs(),
    };
    let zero_oversample = kp_bls_options {
        oversample: 0,
        ..kp_bls_options_default()
    };
    let bad_objective = kp_bls_options {
        objective: 2,
        ..kp_bls_options_default()
    };
    let out_with = |i: usize, p: *mut T| {
        let mut o = good.out;
        o[i] = p;
        o
    };
    let misaligned = (good.index as *mut u8).wrapping_add(1) as *mut i64;
    let (null_ptr, invalid) = (KP_ERROR_NULL_POINTER, KP_ERROR_INVALID_ARGUMENT);
    #[rustfmt::skip]
    let mut cases: Vec<(String, PeaksCall<T>, kp_status, String)> = [
        ("NULL offsets", PeaksCall { offsets: null(), ..good }, null_ptr, "offsets is NULL"),
        ("NULL t", PeaksCall { t: null(), ..good }, null_ptr, "t is NULL"),
        ("NULL periods", PeaksCall { periods: null(), ..good }, null_ptr, "periods is NULL"),
        ("nseries 0", PeaksCall { nseries: 0, ..good }, invalid, "at least one series"),
        ("negative dy", PeaksCall { dy: bad_dy.as_ptr(), ..good }, invalid, "series 1: dy[0] = -0.2 is not positive"),
        ("NaN t", PeaksCall { t: nan_t.as_ptr(), dy: null(), ..good }, invalid, "series 2: t[1] = NaN is not finite"),
        ("offsets decrease", PeaksCall { offsets: [0, 6, 3, 9].as_ptr(), ..good }, invalid,
            "series 1 is empty or offsets decrease there"),
        ("nperiods 0", PeaksCall { nperiods: 0, ..good }, invalid, "no periods"),
        ("nperiods huge", PeaksCall { nperiods: usize::MAX / 2, ..good }, invalid, "periods: "),
        ("duration >= period", PeaksCall { periods: long.as_ptr(), nperiods: 1, durations: long.as_ptr(), ..good },
            invalid, "must be shorter than the shortest period"),
        ("oversample 0", PeaksCall { options: &zero_oversample, ..good }, invalid, "oversample must be at least 1"),
        ("objective 2", PeaksCall { options: &bad_objective, ..good }, invalid, "unknown objective value 2"),
        ("NULL index", PeaksCall { index: null_mut(), ..good }, null_ptr, "index is NULL"),
        ("misaligned index", PeaksCall { index: misaligned, ..good }, invalid, "is not aligned to 8 bytes"),
        ("index over t", PeaksCall { index: t.as_ptr() as *mut i64, ..good }, invalid, "index and t overlap"),
        ("index over offsets", PeaksCall { index: offsets.as_ptr() as *mut i64, ..good }, invalid,
            "index and offsets overlap"),
        ("depth over index", PeaksCall { out: out_with(1, good.index as *mut T), ..good }, invalid,
            "index and depth overlap"),
        ("power over depth", PeaksCall { out: out_with(0, good.out[1]), ..good }, invalid, "power and depth overlap"),
        ("log_likelihood over periods", PeaksCall { out: out_with(6, periods.as_ptr() as *mut T), ..good },
            // (it may run on into the buffer the allocator put next)
            invalid, "log_likelihood and "),
    ]
    .into_iter()
    .map(|(what, call, status, needle)| (what.to_string(), call, status, needle.to_string()))
    .collect();
    let bad_peaks = bad_peak_options();
    for (p, needle) in &bad_peaks {
        cases.push((
            format!("{p:?}"),
            PeaksCall { peaks: p, ..good },
            invalid,
            needle.clone(),
        ));
    }
    for (i, name) in NAMES.iter().enumerate() {
        let call = PeaksCall {
            out: out_with(i, null_mut()),
            ..good
        };
        cases.push((
            format!("NULL {name}"),
            call,
            null_ptr,
            format!("{name} is NULL"),
        ));
    }
    for (what, call, status, needle) in &cases {
        let what = format!("{} peaks {what}", T::NAME);
        let s = call.run(ctx);
        let msg = last_error();
        assert_eq!(s, *status, "{what}: {msg:?}");
        assert!(
            msg.contains(needle.as_str()),
            "{what}: {needle:?} not in {msg:?}"
        );
        assert!(
            index.iter().all(|&i| i == POISON_INDEX),
            "{what}: index was written by a failing call"
        );
        out.untouched(&what);
        assert_eq!(before, (inputs(), offsets), "{what}: an input was written");
    }
    // The good call writes two peaks (or padding) a series, and no more.
    expect_ok(good.run(ctx));
    assert!(
        index[..6].iter().all(|&i| (-1..2).contains(&i)),
        "{index:?}"
    );
    assert!(index[6..].iter().all(|&i| i == POISON_INDEX), "{index:?}");
    for (name, v) in NAMES.iter().zip(&out.0) {
        assert!(v[6..].iter().all(|x| x.to_f64() == POISON), "{name}");
    }
}

fn bad_calls(backend: kp_backend) {
    let ctx = Ctx::new(backend);
    single_errors::<f64>(&ctx);
    single_errors::<f32>(&ctx);
    batch_errors::<f64>(&ctx);
    batch_errors::<f32>(&ctx);
    peak_errors::<f64>(&ctx);
    peak_errors::<f32>(&ctx);
}

#[test]
fn bad_calls_fail_cleanly_on_cpu() {
    bad_calls(KP_BACKEND_CPU);
}

#[test]
fn bad_calls_fail_cleanly_on_gpu() {
    if gpu_or_skip("bad_calls_fail_cleanly_on_gpu").is_some() {
        bad_calls(KP_BACKEND_GPU);
    }
}
