//! The multiband Lomb-Scargle C entry points: each call (one series on a
//! frequency array or a uniform grid, a ragged batch and its best peaks;
//! f32 and f64; with and without dy; both methods and a spread of options)
//! agrees bit for bit with the safe API on the same backend, on random
//! series of several bands drawn afresh each run (the seed is printed,
//! `KERNPACK_TEST_SEED` replays it); NULL options are the defaults, which
//! are astropy's; and every bad call is a non-OK status with a message
//! naming the problem, its poisoned outputs untouched. On a CPU context,
//! and on a GPU context when there is one.
mod common;

use std::ptr::{null, null_mut};

use common::{bad_peak_options, gpu_or_skip, last_error, Ctx, Rng};
use kernpack::api::lombscargle::batch::BatchGrid;
use kernpack::api::lombscargle::chi2::Chi2Normalization;
use kernpack::api::lombscargle::multiband::{
    MultibandBatch, MultibandMethod, MultibandOptions, MultibandSeries, Peak, PeakOptions,
    UniformGrid,
};
use kernpack::ffi::kp_context;
use kernpack::ffi::lombscargle_chi2::{KP_CHI2_LOG, KP_CHI2_PSD, KP_CHI2_STANDARD};
use kernpack::ffi::lombscargle_multiband::{
    kp_lombscargle_multiband_batch_f32, kp_lombscargle_multiband_batch_f64,
    kp_lombscargle_multiband_batch_peaks_f32, kp_lombscargle_multiband_batch_peaks_f64,
    kp_lombscargle_multiband_f32, kp_lombscargle_multiband_f64,
    kp_lombscargle_multiband_uniform_f32, kp_lombscargle_multiband_uniform_f64,
    kp_multiband_options, kp_multiband_options_default, KP_MULTIBAND_FAST, KP_MULTIBAND_FLEXIBLE,
};
use kernpack::ffi::phasefold::{kp_peak_options, kp_peak_options_default, KP_MAX_PEAKS};
use kernpack::ffi::{kp_backend, kp_status, KP_BACKEND_CPU, KP_BACKEND_GPU};
use kernpack::{Backend, Float, Kernpack};

use kp_status::*;

type SingleFn<T> = unsafe extern "C" fn(
    *const kp_context,
    *const kp_multiband_options,
    *const T,
    *const T,
    *const T,
    *const u32,
    usize,
    *const T,
    usize,
    *mut T,
) -> kp_status;

type UniformFn<T> = unsafe extern "C" fn(
    *const kp_context,
    *const kp_multiband_options,
    *const T,
    *const T,
    *const T,
    *const u32,
    usize,
    f64,
    f64,
    usize,
    *mut T,
) -> kp_status;

type BatchFn<T> = unsafe extern "C" fn(
    *const kp_context,
    *const kp_multiband_options,
    *const T,
    *const T,
    *const T,
    *const u32,
    *const i64,
    usize,
    f64,
    f64,
    usize,
    *mut T,
) -> kp_status;

type PeaksFn<T> = unsafe extern "C" fn(
    *const kp_context,
    *const kp_multiband_options,
    *const T,
    *const T,
    *const T,
    *const u32,
    *const i64,
    usize,
    f64,
    f64,
    usize,
    *const kp_peak_options,
    *mut i64,
    *mut f64,
) -> kp_status;

/// An element type and its four entry points.
trait Dt: Float + std::fmt::Debug {
    const SINGLE: SingleFn<Self>;
    const UNIFORM: UniformFn<Self>;
    const BATCH: BatchFn<Self>;
    const PEAKS: PeaksFn<Self>;
    /// A quiet NaN with a payload no computation makes.
    fn poison() -> Self;
    /// The value's bits (widened: exact for f32).
    fn bits(self) -> u64;
}

impl Dt for f32 {
    const SINGLE: SingleFn<f32> = kp_lombscargle_multiband_f32;
    const UNIFORM: UniformFn<f32> = kp_lombscargle_multiband_uniform_f32;
    const BATCH: BatchFn<f32> = kp_lombscargle_multiband_batch_f32;
    const PEAKS: PeaksFn<f32> = kp_lombscargle_multiband_batch_peaks_f32;
    fn poison() -> f32 {
        f32::from_bits(0x7fc0_dead)
    }
    fn bits(self) -> u64 {
        self.to_bits() as u64
    }
}

impl Dt for f64 {
    const SINGLE: SingleFn<f64> = kp_lombscargle_multiband_f64;
    const UNIFORM: UniformFn<f64> = kp_lombscargle_multiband_uniform_f64;
    const BATCH: BatchFn<f64> = kp_lombscargle_multiband_batch_f64;
    const PEAKS: PeaksFn<f64> = kp_lombscargle_multiband_batch_peaks_f64;
    fn poison() -> f64 {
        f64::from_bits(0x7ff8_0000_dead_beef)
    }
    fn bits(self) -> u64 {
        self.to_bits()
    }
}

fn bits<T: Dt>(v: &[T]) -> Vec<u64> {
    v.iter().map(|x| x.bits()).collect()
}

/// The poison of a peak's index, which no call writes.
const POISON_INDEX: i64 = -4242;

/// `len` poisoned indices and values and one more of each, which must stay
/// poisoned.
fn poisoned_peaks(len: usize) -> (Vec<i64>, Vec<f64>) {
    (vec![POISON_INDEX; len + 1], vec![f64::poison(); len + 1])
}

/// `index` and `value` hold `want` (the API's peaks, `k` a row, index -1
/// and value NaN past a row's last; values bit for bit) and then the
/// poison.
#[track_caller]
fn equal_peaks(index: &[i64], value: &[f64], want: &[Vec<Peak>], k: usize, what: &str) {
    let len = want.len() * k;
    assert_eq!((index.len(), value.len()), (len + 1, len + 1), "{what}");
    assert_eq!(
        (index[len], value[len].to_bits()),
        (POISON_INDEX, f64::poison().to_bits()),
        "{what}: wrote past nseries * k"
    );
    for (r, row) in want.iter().enumerate() {
        assert!(row.len() <= k, "{what}: series {r} has {} peaks", row.len());
        for j in 0..k {
            let (i, v) = row
                .get(j)
                .map_or((-1, f64::NAN), |p| (p.index as i64, p.value));
            assert_eq!(
                (index[r * k + j], value[r * k + j].to_bits()),
                (i, v.to_bits()),
                "{what}: series {r}, peak {j}"
            );
        }
    }
}

fn cast<T: Float>(v: &[f64]) -> Vec<T> {
    v.iter().map(|&x| T::from_f64(x)).collect()
}

/// The seed of this run: `KERNPACK_TEST_SEED`, or drawn from the clock.
fn seed() -> u64 {
    let seed = std::env::var("KERNPACK_TEST_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap()
                .as_nanos() as u64
        });
    println!("seed {seed} (replay with KERNPACK_TEST_SEED={seed})");
    seed
}

/// A ragged batch of multiband series in f64.
struct Data {
    t: Vec<f64>,
    y: Vec<f64>,
    dy: Vec<f64>,
    bands: Vec<u32>,
    offsets: Vec<i64>,
}

impl Data {
    /// Three series of 2 to 4 bands (labels scattered over u32, the bands'
    /// samples interleaved in time), each band 12 to 40 samples of one
    /// period shared by the series with the band's own level, amplitude and
    /// harmonic content, plus noise; errors 0.1 to 0.5.
    fn new(rng: &mut Rng) -> Data {
        let mut d = Data {
            t: vec![],
            y: vec![],
            dy: vec![],
            bands: vec![],
            offsets: vec![0],
        };
        for _ in 0..3 {
            let nbands = 2 + rng.below(3) as usize;
            let labels: Vec<u32> = (0..nbands).map(|_| rng.below(1 << 31) as u32).collect();
            let f = rng.range(0.3, 2.0);
            let mut samples = Vec::new();
            for (b, &label) in labels.iter().enumerate() {
                let (level, amp, h2) = (
                    rng.range(-3.0, 3.0),
                    rng.range(0.5, 2.0),
                    rng.range(0.0, 0.5),
                );
                for _ in 0..12 + rng.below(29) {
                    let t = rng.range(0.0, 40.0);
                    let phase = std::f64::consts::TAU * f * t + b as f64;
                    let y = level + amp * (phase.sin() + h2 * (2.0 * phase).cos());
                    samples.push((t, y + rng.range(-0.3, 0.3), rng.range(0.1, 0.5), label));
                }
            }
            // Interleave the bands.
            for i in (1..samples.len()).rev() {
                samples.swap(i, rng.below(i as u64 + 1) as usize);
            }
            for (t, y, dy, label) in samples {
                d.t.push(t);
                d.y.push(y);
                d.dy.push(dy);
                d.bands.push(label);
            }
            d.offsets.push(d.t.len() as i64);
        }
        d
    }

    fn range(&self, s: usize) -> std::ops::Range<usize> {
        self.offsets[s] as usize..self.offsets[s + 1] as usize
    }
}

/// The C options of `o`.
fn c_options(o: &MultibandOptions) -> kp_multiband_options {
    kp_multiband_options {
        method: match o.method {
            MultibandMethod::Flexible => KP_MULTIBAND_FLEXIBLE,
            MultibandMethod::Fast => KP_MULTIBAND_FAST,
        },
        nterms_base: o.nterms_base as u32,
        nterms_band: o.nterms_band as u32,
        reg_base: o.reg_base.unwrap_or(f64::NAN),
        reg_band: o.reg_band.unwrap_or(f64::NAN),
        regularize_by_trace: u32::from(o.regularize_by_trace),
        center_data: u32::from(o.center_data),
        fit_mean: u32::from(o.fit_mean),
        normalization: o.normalization.code() as u32,
    }
}

/// Options that differ from the defaults in every field, for both methods.
fn option_sets() -> Vec<MultibandOptions> {
    let flexible = MultibandOptions::default();
    let fast = MultibandOptions {
        method: MultibandMethod::Fast,
        ..flexible
    };
    vec![
        flexible,
        MultibandOptions {
            nterms_base: 2,
            nterms_band: 1,
            reg_base: Some(1e-5),
            reg_band: None,
            regularize_by_trace: false,
            center_data: false,
            ..flexible
        },
        MultibandOptions {
            nterms_base: 0,
            nterms_band: 3,
            reg_band: Some(1e-4),
            ..flexible
        },
        fast,
        MultibandOptions {
            nterms_base: 2,
            normalization: Chi2Normalization::Log,
            ..fast
        },
        MultibandOptions {
            nterms_base: 3,
            fit_mean: false,
            center_data: false,
            normalization: Chi2Normalization::Psd,
            ..fast
        },
    ]
}

fn agrees<T: Dt>(ctx: &Ctx, kp: &Kernpack, d: &Data, with_dy: bool, opts: &MultibandOptions) {
    let what = format!("{} dy={with_dy} {opts:?}", T::NAME);
    let (t, y, dy): (Vec<T>, Vec<T>, Vec<T>) = (cast(&d.t), cast(&d.y), cast(&d.dy));
    let dy_ptr = if with_dy { dy.as_ptr() } else { null() };
    let options = c_options(opts);
    let nf = 257;
    let (f0, df) = (0.02, 0.011);
    let grid = UniformGrid::new(f0, df, nf);
    let freqs: Vec<T> = (0..nf)
        .map(|k| T::from_f64(0.05 + 0.009 * k as f64))
        .collect();
    let series = |s: usize| {
        let r = d.range(s);
        MultibandSeries {
            t: &t[r.clone()],
            y: &y[r.clone()],
            dy: with_dy.then(|| &dy[r.clone()]),
            bands: &d.bands[r],
        }
    };

    // One series on a frequency array (the second: not at offset 0).
    let r = d.range(1);
    let mut out = vec![T::poison(); nf + 1];
    let status = unsafe {
        T::SINGLE(
            ctx.ptr(),
            &options,
            t[r.start..].as_ptr(),
            y[r.start..].as_ptr(),
            if with_dy {
                dy[r.start..].as_ptr()
            } else {
                null()
            },
            d.bands[r.start..].as_ptr(),
            r.len(),
            freqs.as_ptr(),
            nf,
            out.as_mut_ptr(),
        )
    };
    assert_eq!(status, KP_OK, "{what}: {}", last_error());
    let want = kp.lombscargle_multiband(&series(1), &freqs, opts).unwrap();
    assert_eq!(bits(&out[..nf]), bits(&want), "{what}: array");
    assert_eq!(out[nf].bits(), T::poison().bits(), "{what}: wrote past nf");

    // One series on a uniform grid.
    let r = d.range(0);
    let mut out = vec![T::poison(); nf + 1];
    let status = unsafe {
        T::UNIFORM(
            ctx.ptr(),
            &options,
            t.as_ptr(),
            y.as_ptr(),
            dy_ptr,
            d.bands.as_ptr(),
            r.len(),
            f0,
            df,
            nf,
            out.as_mut_ptr(),
        )
    };
    assert_eq!(status, KP_OK, "{what}: {}", last_error());
    let want = kp
        .lombscargle_multiband_uniform(&series(0), &grid, opts)
        .unwrap();
    assert_eq!(bits(&out[..nf]), bits(&want), "{what}: uniform");
    assert_eq!(out[nf].bits(), T::poison().bits(), "{what}: wrote past nf");
    if opts.method == MultibandMethod::Flexible {
        assert!(
            out[..nf].iter().all(|p| (0.0..=1.0).contains(&p.to_f64())),
            "{what}: flexible power outside [0, 1]"
        );
    }

    // The batch, on one shared grid.
    let nseries = d.offsets.len() - 1;
    let mut out = vec![T::poison(); nseries * nf + 1];
    let status = unsafe {
        T::BATCH(
            ctx.ptr(),
            &options,
            t.as_ptr(),
            y.as_ptr(),
            dy_ptr,
            d.bands.as_ptr(),
            d.offsets.as_ptr(),
            nseries,
            f0,
            df,
            nf,
            out.as_mut_ptr(),
        )
    };
    assert_eq!(status, KP_OK, "{what}: {}", last_error());
    let offsets: Vec<usize> = d.offsets.iter().map(|&o| o as usize).collect();
    let batch = MultibandBatch {
        t: &t,
        y: &y,
        dy: with_dy.then_some(dy.as_slice()),
        bands: &d.bands,
        offsets: &offsets,
    };
    let want = kp
        .lombscargle_multiband_batch(&batch, &BatchGrid::Shared(grid), opts)
        .unwrap();
    assert_eq!(bits(&out[..nseries * nf]), bits(&want), "{what}: batch");
    assert_eq!(
        out[nseries * nf].bits(),
        T::poison().bits(),
        "{what}: wrote past nseries * nf"
    );

    // The batch's best peaks: several, apart (rows padded where a series
    // has fewer), and one (NULL peak options); each the periodogram's value
    // at its index, as the batch above wrote it.
    let several = kp_peak_options {
        k: 40,
        separation: 0.05,
    };
    for peaks in [Some(several), None] {
        let p = peaks.unwrap_or_else(|| kp_peak_options_default());
        let what = format!("{what} peaks {peaks:?}");
        let (mut index, mut value) = poisoned_peaks(nseries * p.k);
        let status = unsafe {
            T::PEAKS(
                ctx.ptr(),
                &options,
                t.as_ptr(),
                y.as_ptr(),
                dy_ptr,
                d.bands.as_ptr(),
                d.offsets.as_ptr(),
                nseries,
                f0,
                df,
                nf,
                peaks.as_ref().map_or(null(), |p| p),
                index.as_mut_ptr(),
                value.as_mut_ptr(),
            )
        };
        assert_eq!(status, KP_OK, "{what}: {}", last_error());
        let api_peaks = PeakOptions {
            k: p.k,
            separation: p.separation,
        };
        let want = kp
            .lombscargle_multiband_batch_peaks(&batch, &BatchGrid::Shared(grid), opts, &api_peaks)
            .unwrap();
        equal_peaks(&index, &value, &want, p.k, &what);
        for (s, row) in want.iter().enumerate() {
            assert!(!row.is_empty(), "{what}: series {s} has no peak");
            for peak in row {
                let at = out[s * nf + peak.index].to_f64();
                assert_eq!(peak.value.to_bits(), at.to_bits(), "{what}: series {s}");
            }
        }
    }
}

fn agrees_with_the_api(backend: kp_backend, api: Backend) {
    let ctx = Ctx::new(backend);
    let kp = Kernpack::new(api).unwrap();
    let mut rng = Rng(seed());
    for (k, opts) in option_sets().iter().enumerate() {
        let d = Data::new(&mut rng);
        let with_dy = k % 2 == 0;
        agrees::<f64>(&ctx, &kp, &d, with_dy, opts);
        agrees::<f32>(&ctx, &kp, &d, !with_dy, opts);
    }

    // NULL options: the defaults.
    let d = Data::new(&mut rng);
    let (r, nf) = (d.range(0), 100);
    let mut out = vec![f64::poison(); nf];
    let status = unsafe {
        kp_lombscargle_multiband_uniform_f64(
            ctx.ptr(),
            null(),
            d.t.as_ptr(),
            d.y.as_ptr(),
            d.dy.as_ptr(),
            d.bands.as_ptr(),
            r.len(),
            0.05,
            0.01,
            nf,
            out.as_mut_ptr(),
        )
    };
    assert_eq!(status, KP_OK, "{}", last_error());
    let series = MultibandSeries {
        t: &d.t[r.clone()],
        y: &d.y[r.clone()],
        dy: Some(&d.dy[r.clone()]),
        bands: &d.bands[r],
    };
    let grid = UniformGrid::new(0.05, 0.01, nf);
    let want = kp
        .lombscargle_multiband_uniform(&series, &grid, &MultibandOptions::default())
        .unwrap();
    assert_eq!(bits(&out), bits(&want));
}

#[test]
fn c_calls_agree_with_the_api_on_cpu() {
    agrees_with_the_api(KP_BACKEND_CPU, Backend::Cpu);
}

#[test]
fn c_calls_agree_with_the_api_on_gpu() {
    if gpu_or_skip("c_calls_agree_with_the_api_on_gpu").is_some() {
        agrees_with_the_api(KP_BACKEND_GPU, Backend::Gpu);
    }
}

#[test]
fn default_options_are_astropys() {
    let d = kp_multiband_options_default();
    assert_eq!(
        (d.method, d.nterms_base, d.nterms_band),
        (KP_MULTIBAND_FLEXIBLE, 1, 1)
    );
    assert!(d.reg_base.is_nan(), "reg_base None is NaN");
    assert_eq!(d.reg_band, 1e-6);
    assert_eq!(
        (d.regularize_by_trace, d.center_data, d.fit_mean),
        (1, 1, 1)
    );
    assert_eq!(d.normalization, KP_CHI2_STANDARD);
    let c = c_options(&MultibandOptions::default());
    assert_eq!(format!("{c:?}"), format!("{d:?}"));
}

/// A failed call: status `want`, a message holding each of `words`, and
/// `out` still all poison.
#[track_caller]
fn expect_failure<T: Dt>(status: kp_status, want: kp_status, words: &[&str], out: &[T]) {
    let msg = last_error();
    assert_eq!(status, want, "{}: message {msg:?}", T::NAME);
    for w in words {
        assert!(msg.contains(w), "{}: {msg:?} lacks {w:?}", T::NAME);
    }
    assert!(
        out.iter().all(|v| v.bits() == T::poison().bits()),
        "{}: the output was written ({words:?})",
        T::NAME
    );
}

/// The arguments of a one-series call.
#[derive(Clone, Copy)]
struct Call<T> {
    ctx: *const kp_context,
    options: *const kp_multiband_options,
    t: *const T,
    y: *const T,
    dy: *const T,
    bands: *const u32,
    n: usize,
    freqs: *const T,
    nf: usize,
    out: *mut T,
}

impl<T: Dt> Call<T> {
    fn array(self) -> kp_status {
        unsafe {
            T::SINGLE(
                self.ctx,
                self.options,
                self.t,
                self.y,
                self.dy,
                self.bands,
                self.n,
                self.freqs,
                self.nf,
                self.out,
            )
        }
    }

    /// On the grid 0.05 + 0.01 k.
    fn uniform(self) -> kp_status {
        self.grid(0.05, 0.01)
    }

    fn grid(self, f0: f64, df: f64) -> kp_status {
        unsafe {
            T::UNIFORM(
                self.ctx,
                self.options,
                self.t,
                self.y,
                self.dy,
                self.bands,
                self.n,
                f0,
                df,
                self.nf,
                self.out,
            )
        }
    }
}

/// The arguments of a batch call (on the grid 0.05 + 0.01 k).
#[derive(Clone, Copy)]
struct BatchCall<T> {
    ctx: *const kp_context,
    options: *const kp_multiband_options,
    t: *const T,
    y: *const T,
    dy: *const T,
    bands: *const u32,
    offsets: *const i64,
    nseries: usize,
    nf: usize,
    out: *mut T,
}

impl<T: Dt> BatchCall<T> {
    fn call(self) -> kp_status {
        unsafe {
            T::BATCH(
                self.ctx,
                self.options,
                self.t,
                self.y,
                self.dy,
                self.bands,
                self.offsets,
                self.nseries,
                0.05,
                0.01,
                self.nf,
                self.out,
            )
        }
    }
}

/// An overlap refusal: the output named, with one of the inputs (an output
/// pointed at a short input may run on into the allocation after it).
const OVERLAP: &[&str] = &["out and ", "overlap"];

fn error_paths<T: Dt>(backend: kp_backend) {
    let ctx = Ctx::new(backend);
    let mut rng = Rng(seed());
    let d = Data::new(&mut rng);
    let r = d.range(0);
    let n = r.len();
    let (t, y, dy): (Vec<T>, Vec<T>, Vec<T>) = (
        cast(&d.t[r.clone()]),
        cast(&d.y[r.clone()]),
        cast(&d.dy[r.clone()]),
    );
    let bands = &d.bands[r];
    let freqs: Vec<T> = cast(&[0.1, 0.2, 0.3]);
    let mut out = vec![T::poison(); 3];
    let good = Call {
        ctx: ctx.ptr(),
        options: null(),
        t: t.as_ptr(),
        y: y.as_ptr(),
        dy: dy.as_ptr(),
        bands: bands.as_ptr(),
        n,
        freqs: freqs.as_ptr(),
        nf: 3,
        out: out.as_mut_ptr(),
    };
    // The good call succeeds (and is then undone).
    assert_eq!(good.array(), KP_OK, "{}", last_error());
    assert_eq!(good.uniform(), KP_OK, "{}", last_error());
    out.fill(T::poison());

    let opt = |f: &dyn Fn(&mut kp_multiband_options)| {
        let mut o = kp_multiband_options_default();
        f(&mut o);
        o
    };
    let too_many = opt(&|o| o.nterms_base = 4);
    let too_many_band = opt(&|o| o.nterms_band = 4);
    let none = opt(&|o| (o.nterms_base, o.nterms_band) = (0, 0));
    let fast_no_base = opt(&|o| {
        (o.method, o.nterms_base) = (KP_MULTIBAND_FAST, 0);
    });
    let negative_reg = opt(&|o| o.reg_base = -1e-3);
    let infinite_reg = opt(&|o| o.reg_band = f64::INFINITY);
    let bad_method = opt(&|o| o.method = 2);
    let bad_normalization = opt(&|o| o.normalization = 4);
    let bad_normalization_fast = opt(&|o| (o.method, o.normalization) = (KP_MULTIBAND_FAST, 9));
    let mut nan_t = t.clone();
    nan_t[n / 2] = T::from_f64(f64::NAN);
    let mut bad_dy = dy.clone();
    bad_dy[3] = T::from_f64(-0.2);
    // Each band constant: y does not vary about the band means.
    let flat: Vec<T> = bands
        .iter()
        .map(|&b| T::from_f64((b % 1000) as f64))
        .collect();
    let nan_freqs: Vec<T> = cast(&[0.1, f64::NAN, 0.3]);

    let invalid = KP_ERROR_INVALID_ARGUMENT;
    let null_ptr = KP_ERROR_NULL_POINTER;
    // (what, call, status, words), each made on an array and a grid.
    let cases: Vec<(&str, Call<T>, kp_status, &[&str])> = vec![
        (
            "ctx NULL",
            Call {
                ctx: null(),
                ..good
            },
            null_ptr,
            &["ctx"],
        ),
        (
            "t NULL",
            Call { t: null(), ..good },
            null_ptr,
            &["t is NULL"],
        ),
        (
            "y NULL",
            Call { y: null(), ..good },
            null_ptr,
            &["y is NULL"],
        ),
        (
            "bands NULL",
            Call {
                bands: null(),
                ..good
            },
            null_ptr,
            &["bands is NULL"],
        ),
        (
            "out NULL",
            Call {
                out: null_mut(),
                ..good
            },
            null_ptr,
            &["out is NULL"],
        ),
        ("no samples", Call { n: 0, ..good }, invalid, &["empty"]),
        (
            "no frequencies",
            Call { nf: 0, ..good },
            invalid,
            &["frequencies"],
        ),
        (
            "nterms_base 4",
            Call {
                options: &too_many,
                ..good
            },
            invalid,
            &["nterms_base = 4"],
        ),
        (
            "nterms_band 4",
            Call {
                options: &too_many_band,
                ..good
            },
            invalid,
            &["nterms_band = 4"],
        ),
        (
            "no harmonics",
            Call {
                options: &none,
                ..good
            },
            invalid,
            &["nterms_base and nterms_band"],
        ),
        (
            "fast without base harmonics",
            Call {
                options: &fast_no_base,
                ..good
            },
            invalid,
            &["fast", "nterms_base"],
        ),
        (
            "negative reg_base",
            Call {
                options: &negative_reg,
                ..good
            },
            invalid,
            &["reg_base"],
        ),
        (
            "infinite reg_band",
            Call {
                options: &infinite_reg,
                ..good
            },
            invalid,
            &["reg_band"],
        ),
        (
            "method 2",
            Call {
                options: &bad_method,
                ..good
            },
            invalid,
            &["method", "2"],
        ),
        (
            "normalization 4",
            Call {
                options: &bad_normalization,
                ..good
            },
            invalid,
            &["normalization", "4"],
        ),
        (
            "normalization 9, fast",
            Call {
                options: &bad_normalization_fast,
                ..good
            },
            invalid,
            &["normalization", "9"],
        ),
        (
            "NaN t",
            Call {
                t: nan_t.as_ptr(),
                ..good
            },
            invalid,
            &["t[", "not finite"],
        ),
        (
            "negative dy",
            Call {
                dy: bad_dy.as_ptr(),
                ..good
            },
            invalid,
            &["dy[3]", "not positive"],
        ),
        (
            "constant bands",
            Call {
                y: flat.as_ptr(),
                ..good
            },
            invalid,
            &["band means"],
        ),
        (
            "out over t",
            Call {
                out: t.as_ptr() as *mut T,
                ..good
            },
            invalid,
            OVERLAP,
        ),
        (
            "out over y",
            Call {
                out: y.as_ptr() as *mut T,
                ..good
            },
            invalid,
            OVERLAP,
        ),
        (
            "out over dy",
            Call {
                out: dy.as_ptr() as *mut T,
                ..good
            },
            invalid,
            OVERLAP,
        ),
        (
            "out over bands",
            Call {
                out: bands.as_ptr() as *mut T,
                ..good
            },
            invalid,
            OVERLAP,
        ),
    ];
    let inputs = |what: &str| {
        assert_eq!(
            bits(&t),
            bits(&cast::<T>(&d.t[d.range(0)])),
            "{what}: t written"
        );
        assert_eq!(
            bits(&y),
            bits(&cast::<T>(&d.y[d.range(0)])),
            "{what}: y written"
        );
        assert_eq!(
            bits(&dy),
            bits(&cast::<T>(&d.dy[d.range(0)])),
            "{what}: dy written"
        );
        assert_eq!(bands, &d.bands[d.range(0)], "{what}: bands written");
    };
    for (what, call, status, words) in &cases {
        println!("{} {what}", T::NAME);
        expect_failure(call.array(), *status, words, &out);
        expect_failure(call.uniform(), *status, words, &out);
        inputs(what);
    }

    // The frequencies: NULL, NaN, under the output; a bad grid.
    let s = Call {
        freqs: null(),
        ..good
    }
    .array();
    expect_failure(s, null_ptr, &["freqs is NULL"], &out);
    let s = Call {
        freqs: nan_freqs.as_ptr(),
        ..good
    }
    .array();
    expect_failure(s, invalid, &["frequency[1]", "not finite"], &out);
    let mut shared = freqs.clone();
    let s = Call {
        freqs: shared.as_ptr(),
        out: shared.as_mut_ptr(),
        ..good
    }
    .array();
    expect_failure(s, invalid, &["out and freqs overlap"], &out);
    assert_eq!(bits(&shared), bits(&freqs), "freqs written");
    expect_failure(good.grid(0.05, -0.01), invalid, &["df", "positive"], &out);
    expect_failure(good.grid(f64::NAN, 0.01), invalid, &["f0"], &out);
    let s = Call {
        nf: usize::MAX,
        ..good
    }
    .uniform();
    assert_ne!(s, KP_OK);
    assert!(out.iter().all(|v| v.bits() == T::poison().bits()));

    // The fast method: a band too short for its own fit is named.
    let mut short_bands = bands.to_vec();
    let lonely = short_bands[0] ^ 0x5a5a_5a5a;
    short_bands[0] = lonely;
    let fast = opt(&|o| (o.method, o.nterms_base) = (KP_MULTIBAND_FAST, 2));
    let s = Call {
        options: &fast,
        bands: short_bands.as_ptr(),
        ..good
    }
    .array();
    expect_failure(s, invalid, &[&format!("band {lonely}")], &out);

    batch_errors::<T>(&ctx, &d);
    peaks_errors::<T>(&ctx, &d);
}

fn batch_errors<T: Dt>(ctx: &Ctx, d: &Data) {
    let (t, y, dy): (Vec<T>, Vec<T>, Vec<T>) = (cast(&d.t), cast(&d.y), cast(&d.dy));
    let (offsets, bands) = (d.offsets.clone(), d.bands.clone());
    let nseries = d.offsets.len() - 1;
    let nf = 2;
    let mut out = vec![T::poison(); nseries * nf];
    let good = BatchCall {
        ctx: ctx.ptr(),
        options: null(),
        t: t.as_ptr(),
        y: y.as_ptr(),
        dy: dy.as_ptr(),
        bands: d.bands.as_ptr(),
        offsets: d.offsets.as_ptr(),
        nseries,
        nf,
        out: out.as_mut_ptr(),
    };
    assert_eq!(good.call(), KP_OK, "{}", last_error());
    out.fill(T::poison());

    let (o1, o2) = (d.offsets[1], d.offsets[2]);
    let decreasing = [0, o2, o1, d.offsets[3]];
    let negative = [0, -5, o2, d.offsets[3]];
    let only_zero = [0i64];
    // Series 2 holds a NaN y; series 1 a band of one sample, too few for
    // the fast method's fit.
    let mut nan_y = y.clone();
    nan_y[d.offsets[2] as usize + 1] = T::from_f64(f64::NAN);
    let mut short_bands = d.bands.clone();
    let lonely = short_bands[o1 as usize] ^ 0x5a5a_5a5a;
    short_bands[o1 as usize] = lonely;
    let fast = kp_multiband_options {
        method: KP_MULTIBAND_FAST,
        nterms_base: 2,
        ..kp_multiband_options_default()
    };
    let bad_method = kp_multiband_options {
        method: 7,
        ..kp_multiband_options_default()
    };
    let band_words = format!("band {lonely}");

    let invalid = KP_ERROR_INVALID_ARGUMENT;
    let null_ptr = KP_ERROR_NULL_POINTER;
    let cases: Vec<(&str, BatchCall<T>, kp_status, Vec<&str>)> = vec![
        (
            "ctx NULL",
            BatchCall {
                ctx: null(),
                ..good
            },
            null_ptr,
            vec!["ctx"],
        ),
        (
            "offsets NULL",
            BatchCall {
                offsets: null(),
                ..good
            },
            null_ptr,
            vec!["offsets is NULL"],
        ),
        (
            "bands NULL",
            BatchCall {
                bands: null(),
                ..good
            },
            null_ptr,
            vec!["bands is NULL"],
        ),
        (
            "t NULL",
            BatchCall { t: null(), ..good },
            null_ptr,
            vec!["t is NULL"],
        ),
        (
            "out NULL",
            BatchCall {
                out: null_mut(),
                ..good
            },
            null_ptr,
            vec!["out is NULL"],
        ),
        (
            "decreasing offsets",
            BatchCall {
                offsets: decreasing.as_ptr(),
                ..good
            },
            invalid,
            vec!["series 1", "offsets decrease"],
        ),
        (
            "a negative offset",
            BatchCall {
                offsets: negative.as_ptr(),
                ..good
            },
            invalid,
            vec!["offsets[1] = -5 is negative"],
        ),
        (
            "no series",
            BatchCall {
                offsets: only_zero.as_ptr(),
                nseries: 0,
                ..good
            },
            invalid,
            vec!["offsets", "at least one series"],
        ),
        (
            "a NaN in series 2",
            BatchCall {
                y: nan_y.as_ptr(),
                ..good
            },
            invalid,
            vec!["series 2: y[1]", "not finite"],
        ),
        (
            "a one-sample band in series 1 (fast)",
            BatchCall {
                options: &fast,
                bands: short_bands.as_ptr(),
                ..good
            },
            invalid,
            vec!["series 1: ", &band_words],
        ),
        (
            "method 7",
            BatchCall {
                options: &bad_method,
                ..good
            },
            invalid,
            vec!["method", "7"],
        ),
        (
            "nseries x nf overflows",
            BatchCall {
                nf: usize::MAX,
                ..good
            },
            invalid,
            vec!["nseries", "nf"],
        ),
        (
            "out over bands",
            BatchCall {
                out: d.bands.as_ptr() as *mut T,
                ..good
            },
            invalid,
            OVERLAP.to_vec(),
        ),
        (
            "out over offsets",
            BatchCall {
                out: d.offsets.as_ptr() as *mut T,
                ..good
            },
            invalid,
            OVERLAP.to_vec(),
        ),
        (
            "out over dy",
            BatchCall {
                out: dy.as_ptr() as *mut T,
                ..good
            },
            invalid,
            OVERLAP.to_vec(),
        ),
    ];
    for (what, call, status, words) in &cases {
        println!("{} batch {what}", T::NAME);
        expect_failure(call.call(), *status, words, &out);
    }
    assert_eq!(bits(&dy), bits(&cast::<T>(&d.dy)), "dy written");
    assert_eq!(d.offsets, offsets, "offsets written");
    assert_eq!(d.bands, bands, "bands written");
}

/// The arguments of a peaks call (on the grid 0.05 + 0.01 k).
#[derive(Clone, Copy)]
struct PeaksCall<T> {
    ctx: *const kp_context,
    options: *const kp_multiband_options,
    t: *const T,
    y: *const T,
    dy: *const T,
    bands: *const u32,
    offsets: *const i64,
    nseries: usize,
    nf: usize,
    peaks: *const kp_peak_options,
    index: *mut i64,
    value: *mut f64,
}

impl<T: Dt> PeaksCall<T> {
    fn call(self) -> kp_status {
        unsafe {
            T::PEAKS(
                self.ctx,
                self.options,
                self.t,
                self.y,
                self.dy,
                self.bands,
                self.offsets,
                self.nseries,
                0.05,
                0.01,
                self.nf,
                self.peaks,
                self.index,
                self.value,
            )
        }
    }
}

/// Bad calls of the peaks entry point: each a non-OK status naming the
/// problem, `index` and `value` (poisoned, one more each than a call of
/// two peaks a series writes) untouched and no input written.
fn peaks_errors<T: Dt>(ctx: &Ctx, d: &Data) {
    let (t, y, dy): (Vec<T>, Vec<T>, Vec<T>) = (cast(&d.t), cast(&d.y), cast(&d.dy));
    let nseries = d.offsets.len() - 1;
    let two = kp_peak_options {
        k: 2,
        separation: 0.02,
    };
    let (mut index, mut value) = poisoned_peaks(nseries * two.k);
    let good = PeaksCall {
        ctx: ctx.ptr(),
        options: null(),
        t: t.as_ptr(),
        y: y.as_ptr(),
        dy: dy.as_ptr(),
        bands: d.bands.as_ptr(),
        offsets: d.offsets.as_ptr(),
        nseries,
        nf: 64,
        peaks: &two,
        index: index.as_mut_ptr(),
        value: value.as_mut_ptr(),
    };
    assert_eq!(good.call(), KP_OK, "{}", last_error());
    index.fill(POISON_INDEX);
    value.fill(f64::poison());

    let (o1, o2, o3) = (d.offsets[1], d.offsets[2], d.offsets[3]);
    let decreasing = [0, o2, o1, o3];
    let negative = [0, -5, o2, o3];
    let only_zero = [0i64];
    let first = [0, o1];
    // A count the i64 indexing accepts for one series, whose periodogram no
    // host can hold: refused, not an abort at the allocation.
    let past_the_host = 1usize << 59;
    let mut nan_y = y.clone();
    nan_y[o2 as usize + 1] = T::from_f64(f64::NAN);
    let bad_method = kp_multiband_options {
        method: 7,
        ..kp_multiband_options_default()
    };
    let one_more = kp_peak_options {
        k: KP_MAX_PEAKS + 1,
        ..two
    };
    // One byte past an element: misaligned (never written).
    let misaligned_index = (good.index as *mut u8).wrapping_add(1) as *mut i64;
    let misaligned_value = (good.value as *mut u8).wrapping_add(1) as *mut f64;

    let invalid = KP_ERROR_INVALID_ARGUMENT;
    let null_ptr = KP_ERROR_NULL_POINTER;
    let mut cases: Vec<(String, PeaksCall<T>, kp_status, String)> = bad_peak_options()
        .into_iter()
        .map(|(p, needle)| {
            // The options live as long as the cases: leaked, a few bytes.
            let p: &'static kp_peak_options = Box::leak(Box::new(p));
            (
                format!("{p:?}"),
                PeaksCall { peaks: p, ..good },
                invalid,
                needle,
            )
        })
        .collect();
    #[rustfmt::skip]
    let more: Vec<(&str, PeaksCall<T>, kp_status, &str)> = vec![
        ("k past KP_MAX_PEAKS", PeaksCall { peaks: &one_more, ..good }, invalid, "k = 257"),
        ("ctx NULL", PeaksCall { ctx: null(), ..good }, null_ptr, "ctx"),
        ("t NULL", PeaksCall { t: null(), ..good }, null_ptr, "t is NULL"),
        ("y NULL", PeaksCall { y: null(), ..good }, null_ptr, "y is NULL"),
        ("bands NULL", PeaksCall { bands: null(), ..good }, null_ptr, "bands is NULL"),
        ("offsets NULL", PeaksCall { offsets: null(), ..good }, null_ptr, "offsets is NULL"),
        ("index NULL", PeaksCall { index: null_mut(), ..good }, null_ptr, "index is NULL"),
        ("value NULL", PeaksCall { value: null_mut(), ..good }, null_ptr, "value is NULL"),
        ("decreasing offsets", PeaksCall { offsets: decreasing.as_ptr(), ..good }, invalid, "offsets decrease"),
        ("a negative offset", PeaksCall { offsets: negative.as_ptr(), ..good }, invalid,
            "offsets[1] = -5 is negative"),
        ("no series", PeaksCall { offsets: only_zero.as_ptr(), nseries: 0, ..good }, invalid,
            "at least one series"),
        ("a NaN in series 2", PeaksCall { y: nan_y.as_ptr(), ..good }, invalid, "series 2: y[1]"),
        ("method 7", PeaksCall { options: &bad_method, ..good }, invalid, "method"),
        ("no frequencies", PeaksCall { nf: 0, ..good }, invalid, "frequencies"),
        ("nf huge", PeaksCall { nf: usize::MAX, ..good }, invalid, "frequencies overflow"),
        ("nf past the host", PeaksCall { offsets: first.as_ptr(), nseries: 1, nf: past_the_host, ..good },
            invalid, "a periodogram's frequencies: 576460752303423488 values of 8 bytes exceed"),
        ("misaligned index", PeaksCall { index: misaligned_index, ..good }, invalid,
            "is not aligned to 8 bytes"),
        ("misaligned value", PeaksCall { value: misaligned_value, ..good }, invalid,
            "is not aligned to 8 bytes"),
        ("value over index", PeaksCall { value: good.index as *mut f64, ..good }, invalid,
            "index and value overlap"),
        ("index over t", PeaksCall { index: t.as_ptr() as *mut i64, ..good }, invalid, "overlap"),
        ("value over dy", PeaksCall { value: dy.as_ptr() as *mut f64, ..good }, invalid, "overlap"),
        ("index over offsets", PeaksCall { index: d.offsets.as_ptr() as *mut i64, ..good }, invalid,
            "overlap"),
        ("value over bands", PeaksCall { value: d.bands.as_ptr() as *mut f64, ..good }, invalid,
            "overlap"),
    ];
    cases.extend(
        more.into_iter().map(|(what, call, status, needle)| {
            (what.to_string(), call, status, needle.to_string())
        }),
    );
    for (what, call, status, needle) in &cases {
        println!("{} peaks {what}", T::NAME);
        let got = call.call();
        let msg = last_error();
        assert_eq!(got, *status, "{} peaks {what}: message {msg:?}", T::NAME);
        assert!(
            msg.contains(needle.as_str()),
            "{} peaks {what}: {msg:?} lacks {needle:?}",
            T::NAME
        );
        assert!(
            index.iter().all(|&i| i == POISON_INDEX)
                && value.iter().all(|v| v.to_bits() == f64::poison().to_bits()),
            "{} peaks {what}: index or value written",
            T::NAME
        );
    }
    assert_eq!(bits(&t), bits(&cast::<T>(&d.t)), "t written");
    assert_eq!(bits(&dy), bits(&cast::<T>(&d.dy)), "dy written");
    assert_eq!(d.offsets, [0, o1, o2, o3], "offsets written");
}

/// Counts no array can have (their byte size exceeds `isize::MAX` for 4-
/// and 8-byte elements, and `usize::MAX` itself): refused before anything
/// is read, the output untouched.
fn impossible_counts<T: Dt>(backend: kp_backend) {
    let ctx = Ctx::new(backend);
    let d = Data::new(&mut Rng(7));
    let (t, y): (Vec<T>, Vec<T>) = (cast(&d.t), cast(&d.y));
    let freqs: Vec<T> = cast(&[0.1, 0.2, 0.3]);
    let mut out = vec![T::poison(); 9];
    let good = Call {
        ctx: ctx.ptr(),
        options: null(),
        t: t.as_ptr(),
        y: y.as_ptr(),
        dy: null(),
        bands: d.bands.as_ptr(),
        n: d.range(0).len(),
        freqs: freqs.as_ptr(),
        nf: 3,
        out: out.as_mut_ptr(),
    };
    let batch = BatchCall {
        ctx: ctx.ptr(),
        options: null(),
        t: t.as_ptr(),
        y: y.as_ptr(),
        dy: null(),
        bands: d.bands.as_ptr(),
        offsets: d.offsets.as_ptr(),
        nseries: 3,
        nf: 3,
        out: out.as_mut_ptr(),
    };
    let (mut index, mut value) = poisoned_peaks(9);
    let peaks = PeaksCall {
        ctx: ctx.ptr(),
        options: null(),
        t: t.as_ptr(),
        y: y.as_ptr(),
        dy: null(),
        bands: d.bands.as_ptr(),
        offsets: d.offsets.as_ptr(),
        nseries: 3,
        nf: 3,
        peaks: null(),
        index: index.as_mut_ptr(),
        value: value.as_mut_ptr(),
    };
    for huge in [usize::MAX / 4, 1 << 61, 1 << 63, usize::MAX] {
        let calls = [
            ("n, array", Call { n: huge, ..good }.array()),
            ("n, grid", Call { n: huge, ..good }.uniform()),
            ("nf, array", Call { nf: huge, ..good }.array()),
            ("nf, grid", Call { nf: huge, ..good }.uniform()),
            (
                "nseries",
                BatchCall {
                    nseries: huge,
                    ..batch
                }
                .call(),
            ),
            ("nf, batch", BatchCall { nf: huge, ..batch }.call()),
            (
                "nseries, peaks",
                PeaksCall {
                    nseries: huge,
                    ..peaks
                }
                .call(),
            ),
            ("nf, peaks", PeaksCall { nf: huge, ..peaks }.call()),
        ];
        for (what, status) in calls {
            let msg = last_error();
            let what = format!("{} {what} = {huge:#x}", T::NAME);
            assert_ne!(status, KP_OK, "{what}: accepted");
            assert_ne!(status, KP_ERROR_INTERNAL, "{what}: panicked: {msg}");
            assert!(!msg.is_empty(), "{what}: no message");
            assert!(
                out.iter().all(|v| v.bits() == T::poison().bits())
                    && index.iter().all(|&i| i == POISON_INDEX)
                    && value.iter().all(|v| v.to_bits() == f64::poison().to_bits()),
                "{what}: the output was written"
            );
        }
    }
}

#[test]
fn impossible_counts_are_refused() {
    impossible_counts::<f32>(KP_BACKEND_CPU);
    impossible_counts::<f64>(KP_BACKEND_CPU);
    if gpu_or_skip("impossible_counts_are_refused").is_some() {
        impossible_counts::<f32>(KP_BACKEND_GPU);
        impossible_counts::<f64>(KP_BACKEND_GPU);
    }
}

#[test]
fn bad_calls_fail_cleanly_on_cpu() {
    error_paths::<f64>(KP_BACKEND_CPU);
    error_paths::<f32>(KP_BACKEND_CPU);
}

#[test]
fn bad_calls_fail_cleanly_on_gpu() {
    if gpu_or_skip("bad_calls_fail_cleanly_on_gpu").is_some() {
        error_paths::<f64>(KP_BACKEND_GPU);
        error_paths::<f32>(KP_BACKEND_GPU);
    }
}

/// The normalization values the two families share.
#[test]
fn normalization_values_are_the_chi2_ones() {
    for (code, n) in [
        (KP_CHI2_STANDARD, Chi2Normalization::Standard),
        (KP_CHI2_LOG, Chi2Normalization::Log),
        (KP_CHI2_PSD, Chi2Normalization::Psd),
    ] {
        assert_eq!(code, n.code() as u32);
    }
}
