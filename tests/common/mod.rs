//! Shared by the integration tests: GPU gating, fixtures, error metrics.
#![allow(dead_code)]
use std::f64::consts::TAU;
use std::sync::Arc;

use kernpack::{Error, Float, Gpu, LombScargleOptions, Normalize, Periodogram};

/// GPU 0, or None with a printed line when there is none. With
/// KERNPACK_REQUIRE_GPU=1 a missing GPU fails the test instead, so a run on
/// the GPU machine can never pass by skipping.
pub fn gpu_or_skip(test: &str) -> Option<Arc<Gpu>> {
    match Gpu::get(0) {
        Ok(gpu) => Some(gpu),
        Err(Error::NoGpu(why)) => {
            if std::env::var("KERNPACK_REQUIRE_GPU").is_ok_and(|v| v == "1") {
                panic!("{test}: KERNPACK_REQUIRE_GPU=1 but no GPU: {why}");
            }
            println!("SKIPPED {test}: no GPU ({why})");
            None
        }
        Err(other) => panic!("{test}: GPU present but unusable: {other}"),
    }
}

/// Median of `reps` CUDA-event timings (ms) of `enqueue` on `gpu`'s stream,
/// after 3 warm-ups.
pub fn event_median_ms(gpu: &kernpack::Gpu, reps: usize, enqueue: impl Fn()) -> f64 {
    for _ in 0..3 {
        enqueue();
    }
    let mut times: Vec<f64> = (0..reps)
        .map(|_| {
            let (start, stop) = (gpu.timing_event().unwrap(), gpu.timing_event().unwrap());
            start.record(gpu.stream()).unwrap();
            enqueue();
            stop.record(gpu.stream()).unwrap();
            stop.synchronize().unwrap();
            start.elapsed_ms(&stop).unwrap() as f64
        })
        .collect();
    times.sort_by(f64::total_cmp);
    times[reps / 2]
}

/// max |a - b| / max |b|: the error relative to the scale of the periodogram,
/// since single values near 0 have no meaningful relative error.
pub fn scaled_max_error(a: &[f64], b: &[f64]) -> f64 {
    assert_eq!(a.len(), b.len());
    let scale = b.iter().fold(0.0f64, |m, v| m.max(v.abs()));
    let err = a
        .iter()
        .zip(b)
        .fold(0.0f64, |m, (x, y)| m.max((x - y).abs()));
    if scale == 0.0 {
        err
    } else {
        err / scale
    }
}

#[derive(Debug, Clone)]
pub struct Fixture {
    pub name: String,
    pub opts: LombScargleOptions,
    pub t: Vec<f64>,
    pub y: Vec<f64>,
    pub w: Option<Vec<f64>>,
    pub f: Vec<f64>,
    pub re: Vec<f64>,
    pub im: Option<Vec<f64>>,
}

/// Reads tests/fixtures/lombscargle_scipy.txt (format in scripts/gen_lombscargle_fixtures.py).
pub fn lombscargle_fixtures() -> Vec<Fixture> {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/lombscargle_scipy.txt"
    );
    let text = std::fs::read_to_string(path).expect("fixture file");
    let mut fixtures = Vec::new();
    let mut lines = text.lines().filter(|l| !l.starts_with('#'));
    while let Some(header) = lines.next() {
        let name = header.strip_prefix("case ").expect("case line").to_owned();
        let meta: Vec<&str> = lines.next().unwrap().split_whitespace().collect();
        let get = |key: &str| meta[meta.iter().position(|m| *m == key).unwrap() + 1];
        let opts = LombScargleOptions {
            normalize: get("normalize").parse::<Normalize>().unwrap(),
            floating_mean: get("floating_mean") == "1",
            precenter: get("precenter") == "1",
        };
        let mut fx = Fixture {
            name,
            opts,
            t: vec![],
            y: vec![],
            w: None,
            f: vec![],
            re: vec![],
            im: None,
        };
        for line in lines.by_ref() {
            if line == "end" {
                break;
            }
            let (key, rest) = line.split_once(' ').unwrap_or((line, ""));
            let values: Vec<f64> = rest
                .split_whitespace()
                .map(|v| v.parse().unwrap())
                .collect();
            match key {
                "t" => fx.t = values,
                "y" => fx.y = values,
                "w" => fx.w = Some(values),
                "f" => fx.f = values,
                "re" => fx.re = values,
                "im" => fx.im = Some(values),
                other => panic!("unknown fixture key {other}"),
            }
        }
        assert_eq!(fx.t.len().to_string(), get("n"), "{}", fx.name);
        fixtures.push(fx);
    }
    assert!(fixtures.len() >= 15, "fixture file truncated");
    fixtures
}

/// splitmix64: a tiny, good-enough generator for test data, so every random
/// case is derived from one seed and reproduces.
pub struct Rng(pub u64);
impl Rng {
    pub fn next(&mut self) -> f64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        ((z ^ (z >> 31)) >> 11) as f64 / (1u64 << 53) as f64
    }
    pub fn range(&mut self, lo: f64, hi: f64) -> f64 {
        lo + (hi - lo) * self.next()
    }
    /// 53 random bits (a seed for a derived case).
    pub fn next_u64(&mut self) -> u64 {
        (self.next() * (1u64 << 53) as f64) as u64
    }
    /// Below `n` (modulo bias is immaterial for test sizes).
    pub fn below(&mut self, n: u64) -> u64 {
        self.next_u64() % n
    }
}

/// `nseries` light curves of `lo..hi` samples (ragged), with weights and a
/// grid per series.
pub struct Ragged {
    pub t: Vec<f64>,
    pub y: Vec<f64>,
    pub w: Vec<f64>,
    pub offsets: Vec<usize>,
    pub f0: Vec<f64>,
    pub df: Vec<f64>,
}

pub fn ragged(nseries: usize, lo: usize, hi: usize, seed: u64) -> Ragged {
    let mut rng = Rng(seed);
    let mut d = Ragged {
        t: Vec::new(),
        y: Vec::new(),
        w: Vec::new(),
        offsets: vec![0],
        f0: Vec::new(),
        df: Vec::new(),
    };
    for _ in 0..nseries {
        let n = lo + (rng.next() * (hi - lo) as f64) as usize;
        let (origin, span, period) = (
            rng.range(0.0, 1e4),
            rng.range(20.0, 200.0),
            rng.range(0.5, 5.0),
        );
        for _ in 0..n {
            let t = origin + span * rng.next();
            d.t.push(t);
            d.y.push(3.0 + (TAU * t / period).sin() + rng.range(-0.25, 0.25));
            d.w.push(rng.range(0.2, 1.2));
        }
        d.offsets.push(d.t.len());
        d.f0.push(TAU / span);
        d.df.push(TAU / (5.0 * span));
    }
    d
}

/// Options from drawn values: mode 0/1/2 = power/normalize/amplitude.
pub fn options(mode: u8, floating_mean: bool, precenter: bool) -> LombScargleOptions {
    let normalize =
        [Normalize::Power, Normalize::Normalize, Normalize::Amplitude][mode as usize % 3];
    LombScargleOptions {
        normalize,
        floating_mean,
        precenter,
    }
}

/// A periodogram as f64 values, complex ones as (re, im) pairs.
pub fn flat<T: Float>(p: &Periodogram<T>) -> Vec<f64> {
    match p {
        Periodogram::Real(v) => v.iter().map(|x| x.to_f64()).collect(),
        Periodogram::Complex(v) => v
            .iter()
            .flat_map(|c| [c.re.to_f64(), c.im.to_f64()])
            .collect(),
    }
}

/// Random cases per property test: `default`, or PROPTEST_CASES when set
/// (e.g. fewer under compute-sanitizer, more for a long run).
pub fn proptest_cases(default: u32) -> u32 {
    std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// `kp_last_error_message()` as a String (never NULL).
pub fn last_error() -> String {
    let msg = kernpack::ffi::kp_last_error_message();
    assert!(!msg.is_null(), "kp_last_error_message() returned NULL");
    unsafe { std::ffi::CStr::from_ptr(msg) }
        .to_str()
        .unwrap()
        .to_owned()
}

/// A C ABI context, destroyed on drop.
pub struct Ctx(pub *mut kernpack::ffi::kp_context);

impl Ctx {
    /// `kp_context_create(backend)`, which must succeed with no error message.
    pub fn new(backend: kernpack::ffi::kp_backend) -> Ctx {
        let mut raw = std::ptr::null_mut();
        let status = unsafe { kernpack::ffi::kp_context_create(backend, &mut raw) };
        let msg = last_error();
        assert_eq!(status, kernpack::ffi::kp_status::KP_OK, "message: {msg:?}");
        assert_eq!(msg, "", "kp_last_error_message() after a success");
        assert!(!raw.is_null());
        Ctx(raw)
    }
    pub fn ptr(&self) -> *const kernpack::ffi::kp_context {
        self.0
    }
}

impl Drop for Ctx {
    fn drop(&mut self) {
        unsafe { kernpack::ffi::kp_context_destroy(self.0) };
    }
}

/// A successful C call: KP_OK and an empty `kp_last_error_message()`.
#[track_caller]
pub fn expect_ok(got: kernpack::ffi::kp_status) {
    let msg = last_error();
    assert_eq!(got, kernpack::ffi::kp_status::KP_OK, "message: {msg:?}");
    assert_eq!(msg, "", "kp_last_error_message() after a success");
}

/// A failed C call: `want`, and a message holding `needle`.
#[track_caller]
pub fn expect_err(got: kernpack::ffi::kp_status, want: kernpack::ffi::kp_status, needle: &str) {
    let msg = last_error();
    assert_eq!(got, want, "{needle:?}: message {msg:?}");
    assert!(msg.contains(needle), "{needle:?} not in {msg:?}");
}

/// The CPU context, and a GPU one where there is a GPU (`test` names the
/// test in the SKIPPED line otherwise).
pub fn contexts(test: &str) -> Vec<Ctx> {
    let mut c = vec![Ctx::new(kernpack::ffi::KP_BACKEND_CPU)];
    if gpu_or_skip(test).is_some() {
        c.push(Ctx::new(kernpack::ffi::KP_BACKEND_GPU));
    }
    c
}

/// The C dtype (`KP_DTYPE_*`) of each element type of the entry points
/// that take a `kp_dtype`.
pub trait Dtype: kernpack::RankValue {
    const DTYPE: kernpack::ffi::kp_dtype;
}

macro_rules! dtypes {
    ($($t:ty = $d:ident),*) => {$(
        impl Dtype for $t {
            const DTYPE: kernpack::ffi::kp_dtype = kernpack::ffi::$d;
        }
    )*};
}

dtypes!(
    u8 = KP_DTYPE_U8,
    i8 = KP_DTYPE_I8,
    u16 = KP_DTYPE_U16,
    i16 = KP_DTYPE_I16,
    u32 = KP_DTYPE_U32,
    i32 = KP_DTYPE_I32,
    u64 = KP_DTYPE_U64,
    i64 = KP_DTYPE_I64,
    f32 = KP_DTYPE_F32,
    f64 = KP_DTYPE_F64
);

/// The values' bit patterns (their sort keys), to compare arrays bitwise.
pub fn keys<T: kernpack::RankValue>(v: &[T]) -> Vec<u64> {
    v.iter().map(|x| x.bits()).collect()
}

/// A device buffer of the context's GPU holding `values`, freed on drop.
pub struct DeviceBuf<'a> {
    pub ctx: &'a Ctx,
    pub ptr: u64,
    pub bytes: usize,
}

impl<'a> DeviceBuf<'a> {
    pub fn new<T>(ctx: &'a Ctx, values: &[T]) -> Self {
        let bytes = std::mem::size_of_val(values).max(1);
        let mut ptr = 0;
        expect_ok(unsafe { kernpack::ffi::kp_device_alloc(ctx.0, bytes, &mut ptr) });
        let given = std::mem::size_of_val(values);
        if given > 0 {
            let src = values.as_ptr().cast();
            expect_ok(unsafe { kernpack::ffi::kp_memcpy_htod(ctx.0, ptr, src, given) });
        }
        DeviceBuf { ctx, ptr, bytes }
    }

    /// The buffer's values, as `T`.
    pub fn read<T: Copy + Default>(&self) -> Vec<T> {
        let mut back = vec![T::default(); self.bytes / std::mem::size_of::<T>()];
        let p = back.as_mut_ptr().cast::<std::ffi::c_void>();
        expect_ok(unsafe { kernpack::ffi::kp_memcpy_dtoh(self.ctx.0, p, self.ptr, self.bytes) });
        back
    }
}

impl Drop for DeviceBuf<'_> {
    fn drop(&mut self) {
        unsafe { kernpack::ffi::kp_device_free(self.ctx.0, self.ptr) };
    }
}

/// Peak options every `_peaks` entry point refuses (`k` out of 1 to
/// KP_MAX_PEAKS, a separation that is negative or not finite), each with
/// a piece of the message that names why.
pub fn bad_peak_options() -> Vec<(kernpack::ffi::phasefold::kp_peak_options, String)> {
    use kernpack::ffi::phasefold::{kp_peak_options, KP_MAX_PEAKS};
    let with = |k, separation| kp_peak_options { k, separation };
    vec![
        (
            with(0, 0.0),
            "k = 0 peaks per series is out of range: 1 to 256".into(),
        ),
        (
            with(KP_MAX_PEAKS + 1, 0.0),
            "k = 257 peaks per series is out of range".into(),
        ),
        (
            with(usize::MAX, 0.0),
            format!("k = {} peaks per series", usize::MAX),
        ),
        (
            with(1, -0.5),
            "separation = -0.5 must be finite and >= 0".into(),
        ),
        (
            with(1, f64::NAN),
            "separation = NaN must be finite and >= 0".into(),
        ),
        (
            with(1, f64::INFINITY),
            "separation = inf must be finite".into(),
        ),
    ]
}

/// Series (t, y, optional dy) back to back: flat t, y, dy (0.1 where a
/// series has none) and the offsets, as `T`.
#[allow(dead_code)]
pub fn concat_series<'a, T: kernpack::Float>(
    series: impl IntoIterator<Item = (&'a [f64], &'a [f64], Option<&'a [f64]>)>,
) -> (Vec<T>, Vec<T>, Vec<T>, Vec<usize>) {
    let (mut t, mut y, mut dy, mut offsets) = (vec![], vec![], vec![], vec![0]);
    for (st, sy, sdy) in series {
        t.extend(st.iter().map(|&v| T::from_f64(v)));
        y.extend(sy.iter().map(|&v| T::from_f64(v)));
        match sdy {
            Some(d) => dy.extend(d.iter().map(|&v| T::from_f64(v))),
            None => dy.extend(st.iter().map(|_| T::from_f64(0.1))),
        }
        offsets.push(t.len());
    }
    (t, y, dy, offsets)
}
