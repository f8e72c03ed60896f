//! The phase-folding C entry points (kp_pdm_*, kp_conditional_entropy_*: one
//! series or a ragged batch, a frequency array or a uniform grid, f32 and
//! f64, and the batches' best peaks): each call equals the safe API on the
//! same backend bit for bit on random data (NULL options are the defaults,
//! NULL dy equal weights; the peaks' indices equal and their values' bits),
//! a GPU context equals a CPU one bit for bit, and every bad call is the
//! right status with a message naming what is wrong, the output buffers
//! untouched and no input written. On a CPU context, and on a GPU context
//! when there is one (skipped without a GPU; with KERNPACK_REQUIRE_GPU=1 a
//! missing GPU is a failure).
mod common;

use std::ptr::{null, null_mut};

use common::{bad_peak_options, expect_ok, gpu_or_skip, last_error, Ctx, Rng};
use kernpack::api::phasefold::{
    CeOptions, FoldBatch, FoldFreqs, FoldSeries, PdmOptions, Peak, PeakOptions, UniformGrid,
    MAX_CE_CELLS, MAX_PDM_BINS, MAX_PEAKS,
};
use kernpack::ffi::phasefold::*;
use kernpack::ffi::{kp_backend, kp_context, kp_status, KP_BACKEND_CPU, KP_BACKEND_GPU};
use kernpack::{Backend, Float, Kernpack, Result};

use kp_status::*;

const POISON: f64 = -4242.0;
const POISON_INDEX: i64 = -4242;

/// The signature of a phase-folding entry point: `ctx`, the options, `t`,
/// `y`, `dy`, the samples' and the frequencies' arguments, `out`.
macro_rules! fold_fn {
    ($($arg:ty),*) => {
        unsafe extern "C" fn(
            *const kp_context, *const O, *const T, *const T, *const T, $($arg,)* *mut T,
        ) -> kp_status
    };
}
type ArrayFn<T, O> = fold_fn!(usize, *const T, usize);
type GridFn<T, O> = fold_fn!(usize, f64, f64, usize);
type BatchArrayFn<T, O> = fold_fn!(*const i64, usize, *const T, usize);
type BatchGridFn<T, O> = fold_fn!(*const i64, usize, f64, f64, usize);

/// The signature of a peaks entry point: a batch's arguments up to the
/// frequencies', then the peak options, `index` and `value`.
macro_rules! peaks_fn {
    ($($arg:ty),*) => {
        unsafe extern "C" fn(
            *const kp_context, *const O, *const T, *const T, *const T, *const i64, usize,
            $($arg,)* *const kp_peak_options, *mut i64, *mut f64,
        ) -> kp_status
    };
}
type PeaksArrayFn<T, O> = peaks_fn!(*const T, usize);
type PeaksGridFn<T, O> = peaks_fn!(f64, f64, usize);

/// The six entry points of one statistic and dtype.
struct Entries<T, O> {
    single: ArrayFn<T, O>,
    uniform: GridFn<T, O>,
    batch: BatchArrayFn<T, O>,
    batch_uniform: BatchGridFn<T, O>,
    peaks: PeaksArrayFn<T, O>,
    peaks_uniform: PeaksGridFn<T, O>,
}

/// The two dtypes' entry points behind one name.
trait Dtype: Float {
    fn pdm() -> Entries<Self, kp_pdm_options>;
    fn ce() -> Entries<Self, kp_ce_options>;
}

macro_rules! dtype {
    ($t:ty, [$($pdm:ident),*], [$($ce:ident),*]) => {
        impl Dtype for $t {
            fn pdm() -> Entries<Self, kp_pdm_options> {
                dtype!(@entries $($pdm),*)
            }
            fn ce() -> Entries<Self, kp_ce_options> {
                dtype!(@entries $($ce),*)
            }
        }
    };
    (@entries $single:ident, $uniform:ident, $batch:ident, $batch_uniform:ident,
     $peaks:ident, $peaks_uniform:ident) => {
        Entries {
            single: $single,
            uniform: $uniform,
            batch: $batch,
            batch_uniform: $batch_uniform,
            peaks: $peaks,
            peaks_uniform: $peaks_uniform,
        }
    };
}

#[rustfmt::skip]
dtype!(f32,
    [kp_pdm_f32, kp_pdm_uniform_f32, kp_pdm_batch_f32, kp_pdm_batch_uniform_f32,
     kp_pdm_batch_peaks_f32, kp_pdm_batch_uniform_peaks_f32],
    [kp_conditional_entropy_f32, kp_conditional_entropy_uniform_f32,
     kp_conditional_entropy_batch_f32, kp_conditional_entropy_batch_uniform_f32,
     kp_conditional_entropy_batch_peaks_f32, kp_conditional_entropy_batch_uniform_peaks_f32]);
#[rustfmt::skip]
dtype!(f64,
    [kp_pdm_f64, kp_pdm_uniform_f64, kp_pdm_batch_f64, kp_pdm_batch_uniform_f64,
     kp_pdm_batch_peaks_f64, kp_pdm_batch_uniform_peaks_f64],
    [kp_conditional_entropy_f64, kp_conditional_entropy_uniform_f64,
     kp_conditional_entropy_batch_f64, kp_conditional_entropy_batch_uniform_f64,
     kp_conditional_entropy_batch_peaks_f64, kp_conditional_entropy_batch_uniform_peaks_f64]);

/// A statistic through its C option struct: its entry points, its safe API
/// calls (the options converted field by field), random options.
trait Statistic: ApiCalls + Copy + std::fmt::Debug {
    const NAME: &'static str;
    fn entries<T: Dtype>() -> Entries<T, Self>;
    fn default_c() -> Self;
    fn random(rng: &mut Rng) -> Self;
    /// Whether `dy` enters the statistic's sums (PDM's weights).
    const USES_DY: bool;
    /// Options out of range, and a piece of each one's message.
    fn bad_options() -> Vec<(Self, String)>;
}

/// A statistic's safe API calls, its C options converted field by field.
trait ApiCalls: Sized {
    fn single<T: Float>(self, kp: &Kernpack, s: &FoldSeries<'_, T>, f: &[T]) -> Result<Vec<T>>;
    fn uniform<T: Float>(
        self,
        kp: &Kernpack,
        s: &FoldSeries<'_, T>,
        g: &UniformGrid,
    ) -> Result<Vec<T>>;
    fn batch<T: Float>(
        self,
        kp: &Kernpack,
        b: &FoldBatch<'_, T>,
        f: &FoldFreqs<'_, T>,
    ) -> Result<Vec<Vec<T>>>;
    fn batch_peaks<T: Float>(
        self,
        kp: &Kernpack,
        b: &FoldBatch<'_, T>,
        f: &FoldFreqs<'_, T>,
        p: &PeakOptions,
    ) -> Result<Vec<Vec<Peak>>>;
}

macro_rules! api_calls {
    ($options:ty, $convert:ident, $single:ident, $uniform:ident, $batch:ident, $peaks:ident) => {
        impl ApiCalls for $options {
            fn single<T: Float>(
                self,
                kp: &Kernpack,
                s: &FoldSeries<'_, T>,
                f: &[T],
            ) -> Result<Vec<T>> {
                kp.$single(s, f, &$convert(self))
            }
            fn uniform<T: Float>(
                self,
                kp: &Kernpack,
                s: &FoldSeries<'_, T>,
                g: &UniformGrid,
            ) -> Result<Vec<T>> {
                kp.$uniform(s, g, &$convert(self))
            }
            fn batch<T: Float>(
                self,
                kp: &Kernpack,
                b: &FoldBatch<'_, T>,
                f: &FoldFreqs<'_, T>,
            ) -> Result<Vec<Vec<T>>> {
                kp.$batch(b, f, &$convert(self))
            }
            fn batch_peaks<T: Float>(
                self,
                kp: &Kernpack,
                b: &FoldBatch<'_, T>,
                f: &FoldFreqs<'_, T>,
                p: &PeakOptions,
            ) -> Result<Vec<Vec<Peak>>> {
                kp.$peaks(b, f, &$convert(self), p)
            }
        }
    };
}

#[rustfmt::skip]
api_calls!(kp_pdm_options, pdm_opts, pdm, pdm_uniform, pdm_batch, pdm_batch_peaks);
#[rustfmt::skip]
api_calls!(kp_ce_options, ce_opts, conditional_entropy, conditional_entropy_uniform,
    conditional_entropy_batch, conditional_entropy_batch_peaks);

fn pdm_opts(o: kp_pdm_options) -> PdmOptions {
    PdmOptions {
        bins: o.bins as usize,
    }
}

fn peak_opts(o: kp_peak_options) -> PeakOptions {
    PeakOptions {
        k: o.k,
        separation: o.separation,
    }
}

fn ce_opts(o: kp_ce_options) -> CeOptions {
    CeOptions {
        phase_bins: o.phase_bins as usize,
        mag_bins: o.mag_bins as usize,
        phase_overlap: o.phase_overlap as usize,
        mag_overlap: o.mag_overlap as usize,
    }
}

impl Statistic for kp_pdm_options {
    const NAME: &'static str = "pdm";
    const USES_DY: bool = true;
    fn bad_options() -> Vec<(Self, String)> {
        [0, 1, 4097, u32::MAX]
            .map(|bins| {
                let needle =
                    format!("bins = {bins} is out of range: PDM takes 2 to 4096 phase bins");
                (kp_pdm_options { bins }, needle)
            })
            .to_vec()
    }
    fn entries<T: Dtype>() -> Entries<T, Self> {
        T::pdm()
    }
    fn default_c() -> Self {
        kp_pdm_options_default()
    }
    fn random(rng: &mut Rng) -> Self {
        kp_pdm_options {
            bins: rng.range(2.0, 60.0) as u32,
        }
    }
}

impl Statistic for kp_ce_options {
    const NAME: &'static str = "conditional_entropy";
    const USES_DY: bool = false;
    fn bad_options() -> Vec<(Self, String)> {
        let d = kp_ce_options_default();
        let with = |phase_bins, mag_bins, phase_overlap, mag_overlap| kp_ce_options {
            phase_bins,
            mag_bins,
            phase_overlap,
            mag_overlap,
        };
        let max = u32::MAX;
        vec![
            (with(0, 5, 0, 0), "phase_bins = 0 and mag_bins = 5: each must be at least 1".into()),
            (with(10, 0, 0, 0), "phase_bins = 10 and mag_bins = 0: each must be at least 1".into()),
            (with(1000, 1000, 0, 0), "phase_bins x mag_bins = 1000 x 1000 exceeds 65536 cells".into()),
            (with(257, 256, 0, 0), "257 x 256 exceeds 65536 cells".into()),
            (with(max, max, 0, 0), format!("{max} x {max} exceeds 65536 cells")),
            (kp_ce_options { phase_overlap: 10, ..d }, "phase_overlap = 10 and mag_overlap = 0 must be below phase_bins = 10 and mag_bins = 5".into()),
            (kp_ce_options { mag_overlap: 5, ..d }, "mag_overlap = 5 must be below".into()),
            (kp_ce_options { phase_overlap: max, ..d }, format!("phase_overlap = {max}")),
        ]
    }
    fn entries<T: Dtype>() -> Entries<T, Self> {
        T::ce()
    }
    fn default_c() -> Self {
        kp_ce_options_default()
    }
    fn random(rng: &mut Rng) -> Self {
        let phase_bins = rng.range(1.0, 30.0) as u32;
        let mag_bins = rng.range(1.0, 12.0) as u32;
        kp_ce_options {
            phase_bins,
            mag_bins,
            phase_overlap: rng.range(0.0, phase_bins as f64) as u32,
            mag_overlap: rng.range(0.0, mag_bins as f64) as u32,
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

/// `len` poisoned values and one more, which must stay poisoned.
fn poisoned<T: Float>(len: usize) -> Vec<T> {
    vec![T::from_f64(POISON); len + 1]
}

/// `out` holds `want` (the API's rows, bit for bit) and then the poison.
#[track_caller]
fn equal<T: Float>(out: &[T], want: &[Vec<T>], what: &str) {
    let (last, got) = out.split_last().unwrap();
    assert_eq!(last.to_f64(), POISON, "{what}: wrote past the end of out");
    assert_eq!(bits(got), bits(&want.concat()), "{what}");
}

/// `index` and `value` hold `want` (the API's peaks, `k` a row, index -1
/// and value NaN past a row's last; values bit for bit) and then the
/// poison.
#[track_caller]
fn equal_peaks(index: &[i64], value: &[f64], want: &[Vec<Peak>], k: usize, what: &str) {
    let len = want.len() * k;
    assert_eq!((index.len(), value.len()), (len + 1, len + 1), "{what}");
    assert_eq!(
        (index[len], value[len]),
        (POISON_INDEX, POISON),
        "{what}: wrote past the end of index or value"
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

/// `len` poisoned indices and values and one more of each, which must stay
/// poisoned.
fn poisoned_peaks(len: usize) -> (Vec<i64>, Vec<f64>) {
    (vec![POISON_INDEX; len + 1], vec![POISON; len + 1])
}

/// Random light curves (2 to 5 series of 1 to 120 samples, the first of 8
/// or more, sinusoids or boxes with noise; now and then a constant one
/// after the first, whose values are NaN),
/// errors, frequencies as an array (unsorted, a 0 now and then) and as a
/// grid.
struct Data {
    t: Vec<f64>,
    y: Vec<f64>,
    dy: Vec<f64>,
    offsets: Vec<i64>,
    freqs: Vec<f64>,
    grid: UniformGrid,
}

fn data(seed: u64) -> Data {
    let mut rng = Rng(seed);
    let (mut t, mut y, mut dy, mut offsets) = (vec![], vec![], vec![], vec![0i64]);
    let nseries = rng.range(2.0, 6.0) as usize;
    for s in 0..nseries {
        // The first series (also called alone) has a statistic.
        let n = (rng.range(1.0, 121.0) as usize).max(if s == 0 { 8 } else { 1 });
        let (t0, baseline, period) = (
            rng.range(-50.0, 5e4),
            rng.range(5.0, 200.0),
            rng.range(0.2, 8.0),
        );
        let (boxy, constant) = (rng.next() < 0.5, rng.next() < 0.15 && s > 0);
        let level = rng.range(-3.0, 3.0);
        for _ in 0..n {
            let ti = t0 + rng.range(0.0, baseline);
            let phase = ((ti - t0) / period).rem_euclid(1.0);
            let signal = match (constant, boxy) {
                (true, _) => 0.0,
                (false, true) => -f64::from(u8::from(phase < 0.15)),
                (false, false) => (std::f64::consts::TAU * phase).sin(),
            };
            let noise = if constant {
                0.0
            } else {
                0.3 * rng.range(-1.0, 1.0)
            };
            t.push(ti);
            y.push(level + signal + noise);
            dy.push(rng.range(0.05, 0.5));
        }
        offsets.push(t.len() as i64);
    }
    let nf = rng.range(1.0, 80.0) as usize;
    let mut freqs: Vec<f64> = (0..nf).map(|_| rng.range(0.0, 6.0)).collect();
    if rng.next() < 0.3 {
        freqs[0] = 0.0;
    }
    let grid = UniformGrid::new(rng.range(0.0, 0.5), rng.range(0.001, 0.05), 1 + nf);
    Data {
        t,
        y,
        dy,
        offsets,
        freqs,
        grid,
    }
}

/// Which entry point a [`Call`] goes to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Shape {
    Single,
    Uniform,
    Batch,
    BatchUniform,
    Peaks,
    PeaksUniform,
}

use Shape::*;

const ALL: &[Shape] = &[Single, Uniform, Batch, BatchUniform, Peaks, PeaksUniform];
/// The shapes that write `out`, and those that write `index` and `value`.
const OUTS: &[Shape] = &[Single, Uniform, Batch, BatchUniform];
const PEAKS: &[Shape] = &[Peaks, PeaksUniform];
const SINGLES: &[Shape] = &[Single, Uniform];
const BATCHES: &[Shape] = &[Batch, BatchUniform, Peaks, PeaksUniform];
const OUT_BATCHES: &[Shape] = &[Batch, BatchUniform];
const ARRAYS: &[Shape] = &[Single, Batch, Peaks];
const OUT_ARRAYS: &[Shape] = &[Single, Batch];
const GRIDS: &[Shape] = &[Uniform, BatchUniform, PeaksUniform];

/// One call with every argument of every shape given: a single-series
/// shape ignores `offsets` and `nseries`, a batch `n`, a grid `freqs`, an
/// array `f0` and `df`, a peaks shape `out`, the others `peaks`, `index`
/// and `value`.
#[derive(Clone, Copy)]
struct Call<T, O> {
    ctx: *const kp_context,
    options: *const O,
    t: *const T,
    y: *const T,
    dy: *const T,
    n: usize,
    offsets: *const i64,
    nseries: usize,
    freqs: *const T,
    f0: f64,
    df: f64,
    nf: usize,
    out: *mut T,
    peaks: *const kp_peak_options,
    index: *mut i64,
    value: *mut f64,
}

impl<T: Dtype, O: Statistic> Call<T, O> {
    fn run(&self, shape: Shape) -> kp_status {
        let e = O::entries::<T>();
        let c = self;
        #[rustfmt::skip]
        let status = unsafe {
            match shape {
                Single => (e.single)(c.ctx, c.options, c.t, c.y, c.dy, c.n, c.freqs, c.nf, c.out),
                Uniform => (e.uniform)(c.ctx, c.options, c.t, c.y, c.dy, c.n, c.f0, c.df, c.nf, c.out),
                Batch => (e.batch)(c.ctx, c.options, c.t, c.y, c.dy, c.offsets, c.nseries, c.freqs, c.nf, c.out),
                BatchUniform => (e.batch_uniform)(
                    c.ctx, c.options, c.t, c.y, c.dy, c.offsets, c.nseries, c.f0, c.df, c.nf, c.out,
                ),
                Peaks => (e.peaks)(
                    c.ctx, c.options, c.t, c.y, c.dy, c.offsets, c.nseries, c.freqs, c.nf,
                    c.peaks, c.index, c.value,
                ),
                PeaksUniform => (e.peaks_uniform)(
                    c.ctx, c.options, c.t, c.y, c.dy, c.offsets, c.nseries, c.f0, c.df, c.nf,
                    c.peaks, c.index, c.value,
                ),
            }
        };
        status
    }
}

/// Every entry point of statistic `S` in dtype `T` on `ctx` against the
/// safe API on `kp`, on the data of `seed`: the first series alone and the
/// batch, on the array and on the grid, with and without errors (NULL
/// options once), and the batch's peaks (NULL peak options once, a few
/// peaks, as many as allowed with a separation: rows padded), into
/// poisoned buffers.
fn equal_the_api<T: Dtype, S: Statistic>(ctx: &Ctx, kp: &Kernpack, seed: u64) {
    let mut rng = Rng(seed ^ 0x5eed);
    let d = data(seed);
    let (t, y, dy, freqs) = (
        cast::<T>(&d.t),
        cast::<T>(&d.y),
        cast::<T>(&d.dy),
        cast::<T>(&d.freqs),
    );
    let n0 = d.offsets[1] as usize;
    let nseries = d.offsets.len() - 1;
    let offsets: Vec<usize> = d.offsets.iter().map(|&o| o as usize).collect();
    let random = [S::random(&mut rng), S::random(&mut rng)];
    let few = kp_peak_options {
        k: rng.range(2.0, 9.0) as usize,
        separation: 0.0,
    };
    let most = kp_peak_options {
        k: MAX_PEAKS,
        separation: rng.range(0.0, 0.3),
    };
    for (options, with_dy, peaks) in [
        (None, false, None),
        (Some(random[0]), true, Some(few)),
        (Some(random[1]), false, Some(most)),
    ] {
        let o = options.unwrap_or_else(S::default_c);
        let series = FoldSeries {
            t: &t[..n0],
            y: &y[..n0],
            dy: with_dy.then_some(&dy[..n0]),
        };
        let batch = FoldBatch {
            t: &t,
            y: &y,
            dy: with_dy.then_some(&dy[..]),
            offsets: &offsets,
        };
        let call = Call {
            ctx: ctx.ptr(),
            options: options.as_ref().map_or(null(), |o| o as *const S),
            t: t.as_ptr(),
            y: y.as_ptr(),
            dy: if with_dy { dy.as_ptr() } else { null() },
            n: n0,
            offsets: d.offsets.as_ptr(),
            nseries,
            freqs: freqs.as_ptr(),
            f0: d.grid.f0,
            df: d.grid.df,
            nf: 0,
            out: null_mut(),
            peaks: peaks
                .as_ref()
                .map_or(null(), |p| p as *const kp_peak_options),
            index: null_mut(),
            value: null_mut(),
        };
        let what = |shape: Shape| {
            let (name, dtype) = (S::NAME, T::NAME);
            format!("{name} {shape:?} {dtype} seed {seed:#x} {options:?} {peaks:?}")
        };
        for &shape in OUTS {
            let what = what(shape);
            let want = match shape {
                Single => vec![o.single(kp, &series, &freqs).unwrap()],
                Uniform => vec![o.uniform(kp, &series, &d.grid).unwrap()],
                Batch => o.batch(kp, &batch, &FoldFreqs::Array(&freqs)).unwrap(),
                BatchUniform => o.batch(kp, &batch, &FoldFreqs::Uniform(d.grid)).unwrap(),
                Peaks | PeaksUniform => unreachable!(),
            };
            let nf = if GRIDS.contains(&shape) {
                d.grid.nf
            } else {
                freqs.len()
            };
            let rows = if BATCHES.contains(&shape) { nseries } else { 1 };
            assert_eq!((want.len(), want[0].len()), (rows, nf), "{what}");
            // Not a trivial agreement: most rows have values (a constant
            // series or one of one sample is NaN throughout).
            let finite = want
                .iter()
                .filter(|r| r.iter().all(|v| v.to_f64().is_finite()));
            assert!(2 * finite.count() >= rows, "{what}: {want:?}");
            let mut out = poisoned::<T>(rows * nf);
            let s = Call {
                nf,
                out: out.as_mut_ptr(),
                ..call
            }
            .run(shape);
            expect_ok(s);
            equal(&out, &want, &what);
        }
        let p = peaks.unwrap_or_else(|| kp_peak_options_default());
        for &shape in PEAKS {
            let what = what(shape);
            let frequencies = match shape {
                Peaks => FoldFreqs::Array(&freqs),
                _ => FoldFreqs::Uniform(d.grid),
            };
            let want = o
                .batch_peaks(kp, &batch, &frequencies, &peak_opts(p))
                .unwrap();
            assert_eq!(want.len(), nseries, "{what}");
            // Not a trivial agreement: most series have a peak (one with no
            // statistic has none).
            let found = want.iter().filter(|r| !r.is_empty()).count();
            assert!(2 * found >= nseries, "{what}: {want:?}");
            let (mut index, mut value) = poisoned_peaks(nseries * p.k);
            let c = Call {
                nf: frequencies.len(),
                index: index.as_mut_ptr(),
                value: value.as_mut_ptr(),
                ..call
            };
            expect_ok(c.run(shape));
            equal_peaks(&index, &value, &want, p.k, &what);
        }
    }
}

fn agrees(backend: kp_backend, api: Backend) {
    let ctx = Ctx::new(backend);
    let kp = Kernpack::new(api).unwrap();
    for seed in [0xf01d, 0x9a5e, 0xce11, 0xb1a5, 0x7e57, 0x0dd] {
        equal_the_api::<f64, kp_pdm_options>(&ctx, &kp, seed);
        equal_the_api::<f32, kp_pdm_options>(&ctx, &kp, seed);
        equal_the_api::<f64, kp_ce_options>(&ctx, &kp, seed);
        equal_the_api::<f32, kp_ce_options>(&ctx, &kp, seed);
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

/// A batch `t`, `y`, `dy` (None: NULL) searched with options `o` at the
/// frequencies of `grid`: a grid call with no output yet.
fn grid_call<T: Dtype, S: Statistic>(
    ctx: &Ctx,
    o: &S,
    (t, y, dy): (&[T], &[T], Option<&[T]>),
    offsets: &[i64],
    grid: UniformGrid,
) -> Call<T, S> {
    Call {
        ctx: ctx.ptr(),
        options: o,
        t: t.as_ptr(),
        y: y.as_ptr(),
        dy: dy.map_or(null(), <[T]>::as_ptr),
        n: 0,
        offsets: offsets.as_ptr(),
        nseries: offsets.len() - 1,
        freqs: null(),
        f0: grid.f0,
        df: grid.df,
        nf: grid.nf,
        out: null_mut(),
        peaks: null(),
        index: null_mut(),
        value: null_mut(),
    }
}

/// [`grid_call`]'s statistic, through a poisoned buffer (whose extra value
/// stays poisoned).
fn grid_batch<T: Dtype, S: Statistic>(call: Call<T, S>) -> Vec<T> {
    let mut out = poisoned::<T>(call.nseries * call.nf);
    expect_ok(
        Call {
            out: out.as_mut_ptr(),
            ..call
        }
        .run(BatchUniform),
    );
    assert_eq!(
        out.pop().unwrap().to_f64(),
        POISON,
        "{}: wrote past the end",
        S::NAME
    );
    out
}

/// [`grid_call`]'s peaks with options `p`: the indices and the values'
/// bits, through poisoned buffers (whose extra values stay poisoned).
fn grid_peaks<T: Dtype, S: Statistic>(
    call: Call<T, S>,
    p: &kp_peak_options,
) -> (Vec<i64>, Vec<u64>) {
    let (mut index, mut value) = poisoned_peaks(call.nseries * p.k);
    let s = Call {
        peaks: p,
        index: index.as_mut_ptr(),
        value: value.as_mut_ptr(),
        ..call
    }
    .run(PeaksUniform);
    expect_ok(s);
    let last = (index.pop().unwrap(), value.pop().unwrap());
    assert_eq!(
        last,
        (POISON_INDEX, POISON),
        "{}: wrote past the end",
        S::NAME
    );
    (index, bits(&value))
}

/// The batch of `seed`'s data, with errors, on its grid: its statistic, and
/// its peaks with options `p`.
fn batch_on<T: Dtype, S: Statistic>(
    ctx: &Ctx,
    seed: u64,
    o: &S,
    p: &kp_peak_options,
) -> (Vec<T>, (Vec<i64>, Vec<u64>)) {
    let d = data(seed);
    let (t, y, dy) = (cast::<T>(&d.t), cast::<T>(&d.y), cast::<T>(&d.dy));
    let call = grid_call(ctx, o, (&t, &y, Some(&dy)), &d.offsets, d.grid);
    (grid_batch(call), grid_peaks(call, p))
}

/// A GPU context writes what a CPU context writes, bit for bit, for both
/// statistics and dtypes, and for accumulators too large for shared memory
/// (PDM with 4096 bins, CE with 256 x 256 cells); the peaks too.
#[test]
fn gpu_context_equals_cpu_context() {
    if gpu_or_skip("gpu_context_equals_cpu_context").is_none() {
        return;
    }
    let (cpu, gpu) = (Ctx::new(KP_BACKEND_CPU), Ctx::new(KP_BACKEND_GPU));
    let pdm = [kp_pdm_options_default(), kp_pdm_options { bins: 4096 }];
    let ce = [
        kp_ce_options_default(),
        kp_ce_options {
            phase_bins: 256,
            mag_bins: 256,
            phase_overlap: 3,
            mag_overlap: 2,
        },
    ];
    let p = kp_peak_options {
        k: 4,
        separation: 0.02,
    };
    fn same<S: Statistic>(cpu: &Ctx, gpu: &Ctx, seed: u64, o: &S, p: &kp_peak_options) {
        let what = format!("{} seed {seed} {o:?}", S::NAME);
        let (g, c) = (
            batch_on::<f64, S>(gpu, seed, o, p),
            batch_on::<f64, S>(cpu, seed, o, p),
        );
        assert_eq!((bits(&g.0), g.1), (bits(&c.0), c.1), "f64 {what}");
        let (g, c) = (
            batch_on::<f32, S>(gpu, seed, o, p),
            batch_on::<f32, S>(cpu, seed, o, p),
        );
        assert_eq!((bits(&g.0), g.1), (bits(&c.0), c.1), "f32 {what}");
    }
    for seed in [1, 2, 3] {
        pdm.iter().for_each(|o| same(&cpu, &gpu, seed, o, &p));
        ce.iter().for_each(|o| same(&cpu, &gpu, seed, o, &p));
    }
}

#[test]
fn default_options_are_cuvarbases() {
    let p = kp_pdm_options_default();
    assert_eq!(pdm_opts(p), PdmOptions::default());
    assert_eq!(p.bins, 10);
    let c = kp_ce_options_default();
    assert_eq!(ce_opts(c), CeOptions::default());
    assert_eq!(
        (c.phase_bins, c.mag_bins, c.phase_overlap, c.mag_overlap),
        (10, 5, 0, 0)
    );
    assert_eq!(KP_PDM_MAX_BINS as usize, MAX_PDM_BINS);
    assert_eq!(KP_CE_MAX_CELLS as usize, MAX_CE_CELLS);
    let k = kp_peak_options_default();
    assert_eq!(peak_opts(k), PeakOptions::default());
    assert_eq!((k.k, k.separation.to_bits()), (1, 0f64.to_bits()));
    assert_eq!(KP_MAX_PEAKS, MAX_PEAKS);
}

/// A series whose values do not vary (constant, or one sample) has no
/// statistic: NaN at every frequency, and no peak, beside a series that
/// has both.
fn no_spread<S: Statistic>(ctx: &Ctx) {
    let t = [0.0, 0.3, 1.1, 1.7, 2.2, 3.9, 5.0];
    let y = [2.0, 2.0, 2.0, 1.0, 3.0, 0.5, 7.0];
    let grid = UniformGrid::new(0.1, 0.2, 4);
    let o = S::default_c();
    let call = grid_call::<f64, S>(ctx, &o, (&t, &y, None), &[0, 3, 6, 7], grid);
    let out = grid_batch(call);
    let what = S::NAME;
    assert!(out[..4].iter().all(|v| v.is_nan()), "{what}: {out:?}");
    assert!(out[4..8].iter().all(|v| v.is_finite()), "{what}: {out:?}");
    assert!(out[8..12].iter().all(|v| v.is_nan()), "{what}: {out:?}");
    // Nor peaks: their rows are padding. The other's best peak is its
    // first lowest value.
    let two = kp_peak_options {
        k: 2,
        separation: 0.0,
    };
    let (index, value) = grid_peaks(call, &two);
    let padding = (vec![-1, -1], vec![f64::NAN.to_bits(); 2]);
    let row = |r: usize| {
        (
            index[2 * r..2 * r + 2].to_vec(),
            value[2 * r..2 * r + 2].to_vec(),
        )
    };
    assert_eq!(row(0), padding, "{what}");
    assert_eq!(row(2), padding, "{what}");
    let stat = &out[4..8];
    let best = (1..4).fold(0, |b, i| if stat[i] < stat[b] { i } else { b });
    assert_eq!(
        (index[2], value[2]),
        (best as i64, stat[best].to_bits()),
        "{what}: {stat:?}"
    );
}

#[test]
fn no_spread_is_nan_and_has_no_peaks() {
    let ctx = Ctx::new(KP_BACKEND_CPU);
    no_spread::<kp_pdm_options>(&ctx);
    no_spread::<kp_ce_options>(&ctx);
}

// ---------------------------------------------------------------------------
// Bad calls.

/// The buffers of the bad calls: three series of three samples at two
/// frequencies, an output of 3 x 2 values and as many more (so that an
/// output over an input has room), and the same for two peaks a series.
struct Fixture<T> {
    t: Vec<T>,
    y: Vec<T>,
    dy: Vec<T>,
    freqs: Vec<T>,
    offsets: [i64; 4],
    out: Vec<T>,
    peaks: kp_peak_options,
    index: Vec<i64>,
    value: Vec<f64>,
}

impl<T: Dtype> Fixture<T> {
    fn new() -> Self {
        let c = |v: &[f64]| cast::<T>(v);
        Fixture {
            t: c(&[0.0, 0.7, 1.9, 3.2, 4.1, 5.5, 6.0, 7.7, 8.1]),
            y: c(&[1.0, 0.2, -0.8, 0.1, 0.9, -0.4, -1.0, 0.6, 0.3]),
            dy: c(&[0.1; 9]),
            freqs: c(&[0.2, 0.45]),
            offsets: [0, 3, 6, 9],
            out: vec![T::from_f64(POISON); 12],
            peaks: kp_peak_options {
                k: 2,
                separation: 0.0,
            },
            index: vec![POISON_INDEX; 12],
            value: vec![POISON; 12],
        }
    }

    /// The good call on every shape, with `options`.
    fn good<O>(&mut self, ctx: &Ctx, options: *const O) -> Call<T, O> {
        Call {
            ctx: ctx.ptr(),
            options,
            t: self.t.as_ptr(),
            y: self.y.as_ptr(),
            dy: self.dy.as_ptr(),
            n: 9,
            offsets: self.offsets.as_ptr(),
            nseries: 3,
            freqs: self.freqs.as_ptr(),
            f0: 0.2,
            df: 0.25,
            nf: 2,
            out: self.out.as_mut_ptr(),
            peaks: &self.peaks,
            index: self.index.as_mut_ptr(),
            value: self.value.as_mut_ptr(),
        }
    }

    /// Every case on each of its shapes: the status, the message, the
    /// outputs untouched, the inputs unchanged; then `good` succeeds on
    /// every shape and clears the message. (The first cases of a fixture
    /// meet the outputs still poisoned.)
    fn run_cases<O: Statistic>(&self, cases: &[Case<T, O>], good: &Call<T, O>) {
        let inputs = || [&self.t, &self.y, &self.dy, &self.freqs].map(|v| bits(v));
        let before = (inputs(), self.offsets, self.peaks.k, self.peaks.separation);
        let outputs = || (bits(&self.out), self.index.clone(), bits(&self.value));
        // Poisoned, or what the last good calls wrote.
        let out = outputs();
        for (what, shapes, call, status, needle) in cases {
            for &shape in *shapes {
                let what = format!("{} {shape:?} {} {what}", O::NAME, T::NAME);
                let s = call.run(shape);
                let msg = last_error();
                assert_eq!(s, *status, "{what}: {msg:?}");
                assert!(
                    msg.contains(needle.as_str()),
                    "{what}: {needle:?} not in {msg:?}"
                );
                assert_eq!(
                    out,
                    outputs(),
                    "{what}: an output was written by a failing call"
                );
                assert_eq!(
                    before,
                    (inputs(), self.offsets, self.peaks.k, self.peaks.separation),
                    "{what}: an input was written"
                );
            }
        }
        for &shape in ALL {
            expect_ok(good.run(shape));
        }
    }
}

/// A bad call: what it is, the shapes it applies to, the call, the status
/// and a piece of the message.
type Case<T, O> = (String, &'static [Shape], Call<T, O>, kp_status, String);

fn case<T, O>(
    what: &str,
    shapes: &'static [Shape],
    call: Call<T, O>,
    status: kp_status,
    needle: &str,
) -> Case<T, O> {
    (what.to_string(), shapes, call, status, needle.to_string())
}

/// The bad calls every statistic shares, in dtype `T` with options `O`:
/// NULL pointers, counts, the values of every input, frequencies and grids,
/// offsets, overlapping and misaligned buffers.
fn shared_errors<T: Dtype, O: Statistic>(ctx: &Ctx) {
    let mut fx = Fixture::<T>::new();
    let opts = O::default_c();
    let good = fx.good(ctx, &opts);
    let c = |v: &[f64]| cast::<T>(v);
    let nan_t = c(&[0.0, 0.7, f64::NAN, 3.2, 4.1, 5.5, 6.0, 7.7, 8.1]);
    let inf_y = c(&[1.0, 0.2, -0.8, f64::INFINITY, 0.9, -0.4, -1.0, 0.6, 0.3]);
    let nan_dy = c(&[0.1, f64::NAN, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1]);
    let zero_dy = c(&[0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.0, 0.1]);
    let neg_dy = c(&[-0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1]);
    let nan_freq = c(&[0.2, f64::NAN]);
    let inf_freq = c(&[f64::INFINITY, 0.2]);
    let neg_freq = c(&[0.2, -2.0]);
    // One byte past an element: a misaligned pointer (never read).
    let misaligned = (good.t as *const u8).wrapping_add(1) as *const T;
    let huge = usize::MAX / 2;
    let (t, dy, freqs) = (good.t, good.dy, good.freqs);
    // Inside out (its second value on): out overlaps it.
    let in_out = good.out.wrapping_add(1) as *const T;
    let too_many = format!("nseries x nf = 3 x {huge} overflows");

    #[rustfmt::skip]
    let cases: Vec<Case<T, O>> = vec![
        case("NULL ctx", ALL, Call { ctx: null(), ..good }, KP_ERROR_NULL_POINTER, "ctx is NULL"),
        case("NULL t", ALL, Call { t: null(), ..good }, KP_ERROR_NULL_POINTER, "t is NULL"),
        case("NULL y", ALL, Call { y: null(), ..good }, KP_ERROR_NULL_POINTER, "y is NULL"),
        case("NULL freqs", ARRAYS, Call { freqs: null(), ..good }, KP_ERROR_NULL_POINTER, "freqs is NULL"),
        case("NULL out", OUTS, Call { out: null_mut(), ..good }, KP_ERROR_NULL_POINTER, "out is NULL"),
        case("NULL offsets", BATCHES, Call { offsets: null(), ..good }, KP_ERROR_NULL_POINTER, "offsets is NULL"),
        case("n 0", SINGLES, Call { n: 0, ..good }, KP_ERROR_INVALID_ARGUMENT,
            "t is empty: a series needs at least one sample"),
        case("n huge", SINGLES, Call { n: huge, ..good }, KP_ERROR_INVALID_ARGUMENT, "t: "),
        case("nf 0", ARRAYS, Call { nf: 0, ..good }, KP_ERROR_INVALID_ARGUMENT, "no frequencies"),
        case("nf 0", GRIDS, Call { nf: 0, ..good }, KP_ERROR_INVALID_ARGUMENT,
            "the frequency grid is empty (nf = 0)"),
        case("nf huge", &[Single], Call { nf: huge, ..good }, KP_ERROR_INVALID_ARGUMENT, "freqs: "),
        case("nf huge", &[Uniform], Call { nf: huge, ..good }, KP_ERROR_INVALID_ARGUMENT, "out: "),
        case("nseries x nf overflows", OUT_BATCHES, Call { nf: huge, ..good }, KP_ERROR_INVALID_ARGUMENT, &too_many),
        case("nseries 0", BATCHES, Call { nseries: 0, ..good }, KP_ERROR_INVALID_ARGUMENT, "at least one series"),
        case("misaligned t", ALL, Call { t: misaligned, ..good }, KP_ERROR_INVALID_ARGUMENT, "is not aligned to"),
        case("NaN t", SINGLES, Call { t: nan_t.as_ptr(), ..good }, KP_ERROR_INVALID_ARGUMENT,
            "t[2] = NaN is not finite"),
        case("NaN t", BATCHES, Call { t: nan_t.as_ptr(), ..good }, KP_ERROR_INVALID_ARGUMENT,
            "series 0: t[2] = NaN is not finite"),
        case("inf y", SINGLES, Call { y: inf_y.as_ptr(), ..good }, KP_ERROR_INVALID_ARGUMENT,
            "y[3] = inf is not finite"),
        case("inf y", BATCHES, Call { y: inf_y.as_ptr(), ..good }, KP_ERROR_INVALID_ARGUMENT,
            "series 1: y[0] = inf is not finite"),
        case("NaN dy", SINGLES, Call { dy: nan_dy.as_ptr(), ..good }, KP_ERROR_INVALID_ARGUMENT,
            "dy[1] = NaN is not finite"),
        case("NaN dy", BATCHES, Call { dy: nan_dy.as_ptr(), ..good }, KP_ERROR_INVALID_ARGUMENT,
            "series 0: dy[1] = NaN is not finite"),
        case("zero dy", SINGLES, Call { dy: zero_dy.as_ptr(), ..good }, KP_ERROR_INVALID_ARGUMENT,
            "dy[7] = 0 is not positive"),
        case("zero dy", BATCHES, Call { dy: zero_dy.as_ptr(), ..good }, KP_ERROR_INVALID_ARGUMENT,
            "series 2: dy[1] = 0 is not positive"),
        case("negative dy", ALL, Call { dy: neg_dy.as_ptr(), ..good }, KP_ERROR_INVALID_ARGUMENT,
            "dy[0] = -0.1 is not positive"),
        case("NaN frequency", ARRAYS, Call { freqs: nan_freq.as_ptr(), ..good }, KP_ERROR_INVALID_ARGUMENT,
            "frequency[1] = NaN is not finite"),
        case("inf frequency", ARRAYS, Call { freqs: inf_freq.as_ptr(), ..good }, KP_ERROR_INVALID_ARGUMENT,
            "frequency[0] = inf is not finite"),
        case("negative frequency", ARRAYS, Call { freqs: neg_freq.as_ptr(), ..good }, KP_ERROR_INVALID_ARGUMENT,
            "frequency[1] = -2 is negative"),
        case("negative f0", GRIDS, Call { f0: -0.5, ..good }, KP_ERROR_INVALID_ARGUMENT,
            "grid f0 = -0.5 is negative"),
        case("NaN f0", GRIDS, Call { f0: f64::NAN, ..good }, KP_ERROR_INVALID_ARGUMENT, "is not finite"),
        case("inf df", GRIDS, Call { df: f64::INFINITY, ..good }, KP_ERROR_INVALID_ARGUMENT, "is not finite"),
        case("df 0", GRIDS, Call { df: 0.0, ..good }, KP_ERROR_INVALID_ARGUMENT, "grid df = 0 must be positive"),
        case("negative df", GRIDS, Call { df: -0.1, ..good }, KP_ERROR_INVALID_ARGUMENT,
            "grid df = -0.1 must be positive"),
        case("negative offset", BATCHES, Call { offsets: [0, -3, 9].as_ptr(), nseries: 2, ..good },
            KP_ERROR_INVALID_ARGUMENT, "offsets[1] = -3 is negative"),
        case("decreasing offsets", BATCHES, Call { offsets: [0, 6, 3, 9].as_ptr(), ..good },
            KP_ERROR_INVALID_ARGUMENT, "series 1 is empty or offsets decrease there"),
        case("empty series", BATCHES, Call { offsets: [0, 0, 9].as_ptr(), nseries: 2, ..good },
            KP_ERROR_INVALID_ARGUMENT, "series 0 is empty"),
        case("offsets from 1", BATCHES, Call { offsets: [1, 4, 9].as_ptr(), nseries: 2, ..good },
            KP_ERROR_INVALID_ARGUMENT, "offsets must start at 0"),
        case("out over t", OUTS, Call { out: t as *mut T, ..good }, KP_ERROR_INVALID_ARGUMENT, "out and t overlap"),
        case("out over dy", OUTS, Call { out: dy as *mut T, ..good }, KP_ERROR_INVALID_ARGUMENT, "out and dy overlap"),
        // (Single only: a batch's out, nseries x nf, is longer than freqs.)
        case("out over freqs", &[Single], Call { out: freqs as *mut T, ..good }, KP_ERROR_INVALID_ARGUMENT,
            "out and freqs overlap"),
        case("freqs inside out", OUT_ARRAYS, Call { freqs: in_out, ..good }, KP_ERROR_INVALID_ARGUMENT,
            "out and freqs overlap"),
        case("y inside out", OUTS, Call { y: in_out, ..good }, KP_ERROR_INVALID_ARGUMENT, "out and y overlap"),
    ];
    fx.run_cases(&cases, &good);

    // out over the offsets (an i64 buffer passed as out too).
    let mut shared = [0i64, 3, 6, 9, 0, 0, 0, 0, 0, 0, 0, 0];
    let over = Call {
        offsets: shared.as_ptr(),
        out: shared[1..].as_mut_ptr() as *mut T,
        ..good
    };
    for &shape in OUT_BATCHES {
        let s = over.run(shape);
        let msg = last_error();
        assert_eq!(s, KP_ERROR_INVALID_ARGUMENT, "{msg}");
        assert!(msg.contains("out and offsets overlap"), "{msg}");
    }
    assert_eq!(shared, [0, 3, 6, 9, 0, 0, 0, 0, 0, 0, 0, 0]);

    if T::NAME == "f32" {
        // A grid within f64's range but past f32's.
        let far = Call {
            f0: 1e39,
            df: 1e33,
            ..good
        };
        let cases = [case(
            "f0 past f32",
            GRIDS,
            far,
            KP_ERROR_INVALID_ARGUMENT,
            "exceeds the range of f32",
        )];
        fx.run_cases(&cases, &good);
    } else {
        // Values f32 cannot hold: sums past f64's range.
        let huge_y = c(&[1e308, -1e308, 1e308, 1.0, 2.0, 3.0, 1.0, 2.0, 3.0]);
        let mut cases = vec![case(
            "y spans past f64",
            ALL,
            Call {
                y: huge_y.as_ptr(),
                ..good
            },
            KP_ERROR_INVALID_ARGUMENT,
            "range of f64",
        )];
        let tiny_dy = c(&[1e-200; 9]);
        if O::USES_DY {
            cases.push(case(
                "1 / dy^2 past f64",
                ALL,
                Call {
                    dy: tiny_dy.as_ptr(),
                    ..good
                },
                KP_ERROR_INVALID_ARGUMENT,
                "the weighted sums of y and 1 / dy^2 exceed the range of f64",
            ));
        }
        fx.run_cases(&cases, &good);
    }
}

/// The bad options of statistic `O` on every shape: each its status and
/// message, the output untouched.
fn option_errors<T: Dtype, O: Statistic>(ctx: &Ctx) {
    let mut fx = Fixture::<T>::new();
    let bad = O::bad_options();
    let good_opts = O::default_c();
    let good = fx.good(ctx, &good_opts);
    let cases: Vec<Case<T, O>> = bad
        .iter()
        .map(|(o, needle)| {
            let call = Call {
                options: o as *const O,
                ..good
            };
            case(
                &format!("{o:?}"),
                ALL,
                call,
                KP_ERROR_INVALID_ARGUMENT,
                needle,
            )
        })
        .collect();
    fx.run_cases(&cases, &good);
}

/// The bad calls of the peaks entry points alone, in dtype `T` with
/// options `O`: peak options out of range, NULL, misaligned and
/// overlapping outputs, and frequencies too many to hold (a grid's count
/// sizes no output of theirs).
fn peak_errors<T: Dtype, O: Statistic>(ctx: &Ctx) {
    let mut fx = Fixture::<T>::new();
    let opts = O::default_c();
    let good = fx.good(ctx, &opts);
    let bad = bad_peak_options();
    let mut cases: Vec<Case<T, O>> = bad
        .iter()
        .map(|(p, needle)| {
            let call = Call { peaks: p, ..good };
            case(
                &format!("{p:?}"),
                PEAKS,
                call,
                KP_ERROR_INVALID_ARGUMENT,
                needle,
            )
        })
        .collect();
    // One byte past an element: misaligned pointers (never written).
    let misaligned_index = (good.index as *mut u8).wrapping_add(1) as *mut i64;
    let misaligned_value = (good.value as *mut u8).wrapping_add(1) as *mut f64;
    let (t, y, dy, freqs, offsets) = (good.t, good.y, good.dy, good.freqs, good.offsets);
    let huge = usize::MAX / 2;
    // A grid valid in every dtype whose f64 copy no host can hold.
    let too_many = 1usize << 60;
    #[rustfmt::skip]
    cases.extend([
        case("NULL index", PEAKS, Call { index: null_mut(), ..good }, KP_ERROR_NULL_POINTER, "index is NULL"),
        case("NULL value", PEAKS, Call { value: null_mut(), ..good }, KP_ERROR_NULL_POINTER, "value is NULL"),
        case("misaligned index", PEAKS, Call { index: misaligned_index, ..good }, KP_ERROR_INVALID_ARGUMENT,
            "is not aligned to 8 bytes"),
        case("misaligned value", PEAKS, Call { value: misaligned_value, ..good }, KP_ERROR_INVALID_ARGUMENT,
            "is not aligned to 8 bytes"),
        case("value over index", PEAKS, Call { value: good.index as *mut f64, ..good }, KP_ERROR_INVALID_ARGUMENT,
            "index and value overlap"),
        case("index over t", PEAKS, Call { index: t as *mut i64, ..good }, KP_ERROR_INVALID_ARGUMENT,
            "index and t overlap"),
        case("value over y", PEAKS, Call { value: y as *mut f64, ..good }, KP_ERROR_INVALID_ARGUMENT,
            "value and y overlap"),
        case("index over dy", PEAKS, Call { index: dy as *mut i64, ..good }, KP_ERROR_INVALID_ARGUMENT,
            "index and dy overlap"),
        case("index over offsets", PEAKS, Call { index: offsets as *mut i64, ..good }, KP_ERROR_INVALID_ARGUMENT,
            "index and offsets overlap"),
        // `value` is longer than `freqs` and may run on into the buffer the
        // allocator put next (dy): either overlap is the right refusal.
        case("value over freqs", &[Peaks], Call { value: freqs as *mut f64, ..good }, KP_ERROR_INVALID_ARGUMENT,
            "overlap: pass separate buffers"),
        case("nf huge", &[Peaks], Call { nf: huge, ..good }, KP_ERROR_INVALID_ARGUMENT, "freqs: "),
        case("nf huge", &[PeaksUniform], Call { nf: huge, ..good }, KP_ERROR_INVALID_ARGUMENT,
            "too many frequencies"),
        case("nf past the host", &[PeaksUniform], Call { nf: too_many, ..good }, KP_ERROR_INVALID_ARGUMENT,
            &format!("the frequencies: {too_many} values of 8 bytes exceed the largest possible array")),
    ]);
    fx.run_cases(&cases, &good);
}

fn bad_calls(backend: kp_backend) {
    let ctx = Ctx::new(backend);
    shared_errors::<f64, kp_pdm_options>(&ctx);
    shared_errors::<f32, kp_pdm_options>(&ctx);
    shared_errors::<f64, kp_ce_options>(&ctx);
    shared_errors::<f32, kp_ce_options>(&ctx);
    option_errors::<f64, kp_pdm_options>(&ctx);
    option_errors::<f32, kp_pdm_options>(&ctx);
    option_errors::<f64, kp_ce_options>(&ctx);
    option_errors::<f32, kp_ce_options>(&ctx);
    peak_errors::<f64, kp_pdm_options>(&ctx);
    peak_errors::<f32, kp_pdm_options>(&ctx);
    peak_errors::<f64, kp_ce_options>(&ctx);
    peak_errors::<f32, kp_ce_options>(&ctx);
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
