//! libFuzzer target over kernpack's C ABI, on a CPU context.
//!
//! The input decodes (with `arbitrary`) into a short sequence of calls to the
//! exported `extern "C"` functions, made as a C caller makes them: every
//! pointer is NULL or points into a buffer the harness allocated (exactly its
//! length, so AddressSanitizer sees one element past it), and every count is
//! either consistent with its buffer (equal or smaller), or one no buffer can
//! hold (SIZE_MAX, SIZE_MAX / 4, 2^61, 2^63, ...: more bytes than `isize::MAX`),
//! which the library must reject before it forms a slice. A count a little
//! larger than its buffer is the caller's undefined behaviour, not the
//! library's, and is never passed: a call whose spans would need it is skipped
//! (see `fits`). Work per call is capped (buffer sizes, steps) so one input
//! runs in milliseconds.
//!
//! After every call the harness checks what must always hold:
//! - the status is a known `kp_status` and never `KP_ERROR_INTERNAL` (a
//!   panic caught at the boundary);
//! - on failure `kp_last_error_message()` is non-empty;
//! - on failure every output buffer is untouched (outputs are poisoned first
//!   and compared byte for byte), and in-place buffers keep their contents;
//! - on success nothing outside the stated output span is written;
//! - inputs passed as `const` are never written;
//! - device-pointer and GPU-only functions fail on a CPU context;
//! - the size helpers never return a wrapped (too small, non-zero) length.
//!
//! A violated check panics, which libFuzzer reports as a crash. With
//! `KP_FUZZ_TRACE=1` every call is printed with its resolved arguments before
//! it is made, which turns a crashing input into a plain reproducer:
//! `KP_FUZZ_TRACE=1 fuzz/target/.../c_abi crash-file`.
#![no_main]

use std::ffi::{c_void, CStr};
use std::fmt::Debug;
use std::ptr;
use std::sync::OnceLock;

use arbitrary::{Arbitrary, Result as ArbResult, Unstructured};
use libfuzzer_sys::fuzz_target;

use kernpack::ffi::bls::*;
use kernpack::ffi::correlate::*;
use kernpack::ffi::devices::*;
use kernpack::ffi::fg::*;
use kernpack::ffi::lombscargle::*;
use kernpack::ffi::lombscargle_multiband::*;
use kernpack::ffi::lorenz::*;
use kernpack::ffi::lorenz63::*;
use kernpack::ffi::phasefold::*;
use kernpack::ffi::rank::*;
use kernpack::ffi::reduce::*;
use kernpack::ffi::stencil::*;
use kernpack::ffi::streams::*;
use kernpack::ffi::uniform::*;
use kernpack::ffi::*;

// ---------------------------------------------------------------------------
// Harness plumbing: the context, tracing, the checks.

/// The CPU context, created once (a raw pointer kept as an address).
fn ctx() -> *const kp_context {
    static CTX: OnceLock<usize> = OnceLock::new();
    *CTX.get_or_init(|| {
        let mut out: *mut kp_context = ptr::null_mut();
        let status = unsafe { kp_context_create(KP_BACKEND_CPU, &mut out) };
        assert_eq!(status, kp_status::KP_OK, "cannot create a CPU context");
        assert!(!out.is_null());
        out as usize
    }) as *const kp_context
}

fn tracing() -> bool {
    static TRACE: OnceLock<bool> = OnceLock::new();
    *TRACE.get_or_init(|| std::env::var("KP_FUZZ_TRACE").is_ok_and(|v| v == "1"))
}

macro_rules! trace {
    ($($arg:tt)*) => {
        if tracing() {
            eprintln!($($arg)*);
        }
    };
}

fn last_error() -> String {
    let p = kp_last_error_message();
    assert!(!p.is_null(), "kp_last_error_message() returned NULL");
    unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned()
}

/// The invariants every status must satisfy; returns whether it is KP_OK.
fn check_status(call: &str, status: kp_status) -> bool {
    // Read the raw value: a value outside the enum would be a library bug.
    let raw = status as i32;
    assert!((0..=6).contains(&raw), "{call}: unknown status value {raw}");
    trace!("  -> {status:?}");
    if status == kp_status::KP_ERROR_INTERNAL {
        panic!(
            "{call}: KP_ERROR_INTERNAL (a panic inside kernpack): {}",
            last_error()
        );
    }
    if status != kp_status::KP_OK {
        let message = last_error();
        trace!("     {message}");
        assert!(
            !message.is_empty(),
            "{call}: returned {status:?} with an empty kp_last_error_message()"
        );
        return false;
    }
    true
}

/// On a CPU context device-pointer and GPU-only functions must fail.
fn check_fails(call: &str, status: kp_status) {
    assert!(
        !check_status(call, status),
        "{call}: KP_OK on a CPU context (needs a GPU)"
    );
    assert_ne!(
        status,
        kp_status::KP_ERROR_CUDA,
        "{call}: a CUDA error on a CPU context"
    );
}

/// Counts no allocation can back: more than isize::MAX bytes for any element
/// of 4 bytes or more.
const HUGE: [usize; 8] = [
    usize::MAX,
    usize::MAX - 1,
    usize::MAX / 2,
    usize::MAX / 2 + 1,
    usize::MAX / 4,
    1 << 61,
    1 << 62,
    1 << 63,
];

/// Values at the edges of the library's internal limits (i32, u32, i64 / 2,
/// isize::MAX over element sizes), where a check of the wrong bound shows.
const EDGE: [usize; 12] = [
    i32::MAX as usize,
    i32::MAX as usize + 1,
    u32::MAX as usize,
    u32::MAX as usize + 1,
    1 << 40,
    (i64::MAX / 2) as usize,
    (i64::MAX / 2) as usize + 1,
    usize::MAX / 8,
    usize::MAX / 8 + 1,
    usize::MAX / 16 + 1,
    usize::MAX / 32 + 1,
    u64::MAX as usize / 2 - 1,
];

/// Whether a span of `span` elements of `elem` bytes may be passed with a
/// buffer of `len`: it fits, or no allocation could hold it (then the library
/// must reject it). Anything between is out-of-bounds caller UB: not passed.
fn fits(span: u128, len: usize, elem: usize) -> bool {
    span <= len as u128 || span.saturating_mul(elem as u128) > isize::MAX as u128
}

fn clamp(v: u128) -> usize {
    v.min(usize::MAX as u128) as usize
}

fn bytes_of<T>(s: &[T]) -> &[u8] {
    unsafe { std::slice::from_raw_parts(s.as_ptr().cast::<u8>(), std::mem::size_of_val(s)) }
}

// ---------------------------------------------------------------------------
// Decoded values.

/// A float for inputs: mostly small and finite, with NaN, +-Inf, signed
/// zeros, huge, tiny, raw bit patterns and MJD-like large times mixed in.
#[derive(Debug, Clone, Copy)]
struct FVal(f64);

impl<'a> Arbitrary<'a> for FVal {
    fn arbitrary(u: &mut Unstructured<'a>) -> ArbResult<Self> {
        let tag: u8 = u.arbitrary()?;
        let v = match tag {
            0..=159 => u.arbitrary::<i16>()? as f64 / 64.0,
            160..=171 => u.arbitrary::<f32>()? as f64,
            172..=179 => f64::from_bits(u.arbitrary()?),
            180..=185 => f64::NAN,
            186..=188 => f64::INFINITY,
            189..=191 => f64::NEG_INFINITY,
            192..=195 => 0.0,
            196..=197 => -0.0,
            198..=209 => 6.0e4 + u.arbitrary::<u16>()? as f64 * 0.013,
            210..=213 => 1e300,
            214..=215 => -1e300,
            216..=217 => f64::MAX,
            218..=219 => f64::MIN_POSITIVE / 8.0,
            220..=221 => 3.0e38,
            222..=223 => 1e-30,
            _ => u.arbitrary::<u8>()? as f64,
        };
        Ok(FVal(v))
    }
}

/// A count relative to a buffer of `len` elements.
#[derive(Arbitrary, Debug, Clone, Copy)]
enum Count {
    Exact,
    Less(u16),
    Zero,
    One,
    Huge(u8),
    /// Any value: passed only where the span it implies fits the buffer or
    /// cannot be allocated (see `fits`), e.g. as a factor of a product.
    Any(u64),
    Edge(u8),
}

impl Count {
    fn resolve(self, len: usize) -> usize {
        match self {
            Count::Exact => len,
            Count::Less(d) => len - (d as usize % (len + 1)),
            Count::Zero => 0,
            Count::One => 1,
            Count::Huge(i) => HUGE[i as usize % HUGE.len()],
            Count::Any(v) => v as usize,
            Count::Edge(i) => EDGE[i as usize % EDGE.len()],
        }
    }
}

/// A number with no buffer behind it (a parameter): small, medium, any, huge.
#[derive(Arbitrary, Debug, Clone, Copy)]
enum Num {
    Small(u8),
    Mid(u16),
    Any(u64),
    Huge(u8),
    Edge(u8),
}

impl Num {
    fn get(self) -> usize {
        match self {
            Num::Small(v) => v as usize,
            Num::Mid(v) => v as usize,
            Num::Any(v) => v as usize,
            Num::Huge(i) => HUGE[i as usize % HUGE.len()],
            Num::Edge(i) => EDGE[i as usize % EDGE.len()],
        }
    }
}

/// A u64 count of steps: any value, with the extremes made likely.
#[derive(Arbitrary, Debug, Clone, Copy)]
enum Wide {
    Small(u8),
    Any(u64),
    Max,
    Huge(u8),
    Edge(u8),
}

impl Wide {
    fn get(self) -> u64 {
        match self {
            Wide::Small(v) => v as u64,
            Wide::Any(v) => v,
            Wide::Max => u64::MAX,
            Wide::Huge(i) => HUGE[i as usize % HUGE.len()] as u64,
            Wide::Edge(i) => EDGE[i as usize % EDGE.len()] as u64,
        }
    }
}

/// A u32 option field: usually a meaningful value, sometimes anything.
#[derive(Arbitrary, Debug, Clone, Copy)]
enum Field {
    Known(u8),
    Any(u32),
}

impl Field {
    fn get(self, known: u32) -> u32 {
        match self {
            Field::Known(v) => v as u32 % known,
            Field::Any(v) => v,
        }
    }
}

trait Real: Copy + Debug + PartialEq + 'static {
    fn from_f64(v: f64) -> Self;
    fn poison() -> Self;
    fn is_nan(self) -> bool;
    fn is_finite(self) -> bool;
}

impl Real for f32 {
    fn from_f64(v: f64) -> Self {
        v as f32
    }
    fn poison() -> Self {
        f32::from_bits(0xffa5_a5a5)
    }
    fn is_nan(self) -> bool {
        f32::is_nan(self)
    }
    fn is_finite(self) -> bool {
        f32::is_finite(self)
    }
}

impl Real for f64 {
    fn from_f64(v: f64) -> Self {
        v
    }
    fn poison() -> Self {
        f64::from_bits(0xfff5_a5a5_a5a5_a5a5)
    }
    fn is_nan(self) -> bool {
        f64::is_nan(self)
    }
    fn is_finite(self) -> bool {
        f64::is_finite(self)
    }
}

/// An input buffer: its length (capped per call), a few seed values repeated
/// with a ramp (so times differ), and a small chance of NULL.
#[derive(Arbitrary, Debug)]
struct BufSpec {
    len: u16,
    seed: Vec<FVal>,
    ramp: FVal,
    null: u8,
}

/// A buffer the harness owns, exactly `len` long.
struct Buf<T> {
    data: Box<[T]>,
    null: bool,
}

impl<T: Copy> Buf<T> {
    fn ptr(&self) -> *const T {
        if self.null {
            ptr::null()
        } else {
            self.data.as_ptr()
        }
    }
    fn mut_ptr(&mut self) -> *mut T {
        if self.null {
            ptr::null_mut()
        } else {
            self.data.as_mut_ptr()
        }
    }
    fn len(&self) -> usize {
        self.data.len()
    }
    /// A span the call states for this buffer may be passed (see `fits`).
    fn fits(&self, span: u128) -> bool {
        self.null || fits(span, self.len(), std::mem::size_of::<T>())
    }
    fn snapshot(&self) -> Vec<u8> {
        bytes_of(&self.data).to_vec()
    }
    fn describe(&self) -> String {
        if self.null {
            "NULL".into()
        } else {
            format!("buf[{}]", self.len())
        }
    }
}

impl BufSpec {
    fn make<T: Real>(&self, cap: usize) -> Buf<T> {
        self.make_len(self.len as usize % (cap + 1))
    }
    fn make_len<T: Real>(&self, len: usize) -> Buf<T> {
        let seed: Vec<f64> = self.seed.iter().take(8).map(|v| v.0).collect();
        let data = (0..len)
            .map(|i| {
                let base = if seed.is_empty() {
                    0.0
                } else {
                    seed[i % seed.len()]
                };
                T::from_f64(base + self.ramp.0 * i as f64)
            })
            .collect();
        Buf {
            data,
            null: self.null == 1,
        }
    }
}

/// An output buffer, filled with a poison pattern.
#[derive(Arbitrary, Debug, Clone, Copy)]
struct OutSpec {
    len: u16,
    null: u8,
}

impl OutSpec {
    fn make<T: Real>(&self, cap: usize) -> Buf<T> {
        self.make_len(self.len as usize % (cap + 1))
    }
    fn make_len<T: Real>(&self, len: usize) -> Buf<T> {
        Buf {
            data: vec![T::poison(); len].into_boxed_slice(),
            null: self.null == 1,
        }
    }
}

/// Output buffers: untouched on failure, nothing past the span on success.
fn check_outputs(call: &str, ok: bool, outputs: &[(&str, Vec<u8>, &[u8], usize)]) {
    for (name, before, after, span_bytes) in outputs {
        if !ok {
            assert!(before == after, "{call}: failed but wrote to {name}");
        } else {
            let from = (*span_bytes).min(before.len());
            assert!(
                before[from..] == after[from..],
                "{call}: wrote to {name} past the {span_bytes} bytes it was given"
            );
        }
    }
}

fn check_inputs(call: &str, inputs: &[(&str, Vec<u8>, &[u8])]) {
    for (name, before, after) in inputs {
        assert!(before == after, "{call}: wrote to the const input {name}");
    }
}

// ---------------------------------------------------------------------------
// Options structs.

#[derive(Arbitrary, Debug, Clone, Copy)]
enum LsOpts {
    Null,
    Default,
    Fields {
        normalize: Field,
        floating_mean: Field,
        precenter: Field,
    },
}

/// Options with storage for the pointer.
fn ls_options(o: LsOpts, slot: &mut kp_lombscargle_options) -> *const kp_lombscargle_options {
    match o {
        LsOpts::Null => ptr::null(),
        LsOpts::Default => {
            *slot = kp_lombscargle_options_default();
            slot
        }
        LsOpts::Fields {
            normalize,
            floating_mean,
            precenter,
        } => {
            *slot = kp_lombscargle_options {
                normalize: normalize.get(3),
                floating_mean: floating_mean.get(2),
                precenter: precenter.get(2),
            };
            slot
        }
    }
}

fn describe_ls_opts(p: *const kp_lombscargle_options) -> String {
    match unsafe { p.as_ref() } {
        None => "NULL".into(),
        Some(o) => format!("{o:?}"),
    }
}

/// What a C caller allocates: `kp_lombscargle_output_len(nf, options)`.
fn ls_output_len(nf: usize, opts: *const kp_lombscargle_options) -> usize {
    let n = unsafe { kp_lombscargle_output_len(nf, opts) };
    trace!(
        "  kp_lombscargle_output_len({nf}, {}) = {n}",
        describe_ls_opts(opts)
    );
    n
}

/// How a call's output length is chosen.
#[derive(Arbitrary, Debug, Clone, Copy)]
enum OutLen {
    /// What the size helper says (the buffer is made that long when it can be).
    Matching(u8),
    /// Relative to the output buffer.
    Count(Count),
}

#[derive(Arbitrary, Debug, Clone, Copy)]
enum BoxOpts {
    Null,
    Default,
    Fields {
        size: Field,
        mode: Field,
        cval: FVal,
    },
}

fn box_options(o: BoxOpts, slot: &mut kp_box_filter_options) -> *const kp_box_filter_options {
    match o {
        BoxOpts::Null => ptr::null(),
        BoxOpts::Default => {
            *slot = kp_box_filter_options_default();
            slot
        }
        BoxOpts::Fields { size, mode, cval } => {
            *slot = kp_box_filter_options {
                size: size.get(36),
                mode: mode.get(7),
                cval: cval.0,
            };
            slot
        }
    }
}

#[derive(Arbitrary, Debug, Clone, Copy)]
enum L96Params {
    Null,
    Default,
    Fields { n: Num, forcing: FVal, dt: FVal },
}

#[derive(Arbitrary, Debug, Clone, Copy)]
enum L05Params {
    Null,
    Default,
    /// Small N, K, J that satisfy the documented relations.
    Small {
        n: u8,
        k: u8,
        j: u8,
        model: bool,
        dt: FVal,
    },
    Fields {
        n: Num,
        forcing: FVal,
        k: Num,
        j: Num,
        b: FVal,
        c: FVal,
        dt: FVal,
        model: Field,
    },
}

fn l96_params(p: L96Params, slot: &mut kp_lorenz96_params) -> (*const kp_lorenz96_params, usize) {
    match p {
        L96Params::Null => (ptr::null(), kp_lorenz96_default_params().n),
        L96Params::Default => {
            *slot = kp_lorenz96_default_params();
            (slot, slot.n)
        }
        L96Params::Fields { n, forcing, dt } => {
            *slot = kp_lorenz96_params {
                n: n.get(),
                forcing: forcing.0,
                dt: dt.0,
                ..kp_lorenz96_default_params()
            };
            (slot, slot.n)
        }
    }
}

fn l05_params(p: L05Params, slot: &mut kp_lorenz05_params) -> (*const kp_lorenz05_params, usize) {
    match p {
        L05Params::Null => (ptr::null(), kp_lorenz05_default_params().n),
        L05Params::Default => {
            *slot = kp_lorenz05_default_params();
            (slot, slot.n)
        }
        L05Params::Small { n, k, j, model, dt } => {
            let k = 2 * (1 + k as usize % 4);
            let n = 2 * k + 1 + n as usize % 48;
            let j = 1 + j as usize % ((n - 1) / 2);
            *slot = kp_lorenz05_params {
                n,
                k,
                j,
                dt: dt.0.abs().min(0.01),
                model: if model { 2 } else { 3 },
                ..kp_lorenz05_default_params()
            };
            (slot, slot.n)
        }
        L05Params::Fields {
            n,
            forcing,
            k,
            j,
            b,
            c,
            dt,
            model,
        } => {
            *slot = kp_lorenz05_params {
                n: n.get(),
                forcing: forcing.0,
                k: k.get(),
                j: j.get(),
                b: b.0,
                c: c.0,
                dt: dt.0,
                model: model.get(5) as i32,
            };
            (slot, slot.n)
        }
    }
}

// ---------------------------------------------------------------------------
// The calls.

#[derive(Arbitrary, Debug)]
enum Op {
    Helpers(HelperOp),
    LsArray(bool, LsArrayOp),
    LsUniform(bool, LsUniformOp),
    LsBatch(bool, LsBatchOp),
    Sum(bool, SumOp),
    Normalize(bool, SumOp),
    NormalizeBatched(bool, BatchedOp),
    BoxFilter(bool, BoxOp),
    Lorenz96(bool, LorenzOp<L96Params>),
    Lorenz05(bool, LorenzOp<L05Params>),
    Lorenz96SaveAt(bool, SaveAtOp<L96Params>),
    Lorenz05SaveAt(bool, SaveAtOp<L05Params>),
    Lorenz63(bool, L63Op),
    Lorenz63Adaptive(bool, L63AdaptiveOp),
    WindowSum(bool, WindowOp),
    Fg(bool, FgOp),
    Device(DeviceOp),
    Streams(StreamOp),
    Correlate(bool, CorrelateOp),
    Rank(RankOp),
    UniformNd(UniformNdOp),
    Bls(bool, BlsOp),
    BlsBatch(bool, BlsBatchOp),
    Pdm(bool, FoldOp),
    ConditionalEntropy(bool, FoldOp),
    Multiband(bool, MultibandOp),
}

#[derive(Arbitrary, Debug)]
enum HelperOp {
    StatusString(i32),
    Version,
    LastError,
    Defaults,
    OutputLen(Num, LsOpts),
    TrajectoryLen(Num, Num, Wide, Wide),
    ContextCreate(u32, bool),
    ContextIsGpu(bool, bool),
    NullContext(u8),
    DeviceCount(bool),
    DeviceInfo(i32, bool),
    ContextOnDevice(i32, bool),
}

/// The number of devices (kp_device_count must always succeed here).
fn device_count() -> i32 {
    let mut n = -1;
    let status = unsafe { kp_device_count(&mut n) };
    assert!(
        check_status("kp_device_count", status),
        "kp_device_count failed"
    );
    assert!(n >= 0, "kp_device_count wrote {n}");
    n
}

fn helpers(op: &HelperOp) {
    match *op {
        HelperOp::StatusString(s) => {
            trace!("kp_status_string({s})");
            let p = kp_status_string(s);
            assert!(!p.is_null());
            let text = unsafe { CStr::from_ptr(p) }.to_str().unwrap();
            assert!(!text.is_empty());
            if !(0..=6).contains(&s) {
                assert_eq!(text, "unknown status", "kp_status_string({s})");
            }
        }
        HelperOp::Version => {
            trace!("kp_version()");
            let p = kp_version();
            assert!(!p.is_null());
            let v = unsafe { CStr::from_ptr(p) }.to_str().unwrap();
            assert!(
                v.split('.').count() == 3 && v.split('.').all(|p| p.parse::<u32>().is_ok()),
                "kp_version() = {v:?}"
            );
        }
        HelperOp::LastError => {
            let _ = last_error();
        }
        HelperOp::Defaults => {
            let o = kp_lombscargle_options_default();
            assert_eq!((o.normalize, o.floating_mean, o.precenter), (0, 0, 0));
            let b = kp_box_filter_options_default();
            assert_eq!((b.size, b.mode, b.cval), (3, KP_BOX_REFLECT, 0.0));
            let c = kp_correlate_options_default();
            assert_eq!((c.origin, c.cval, c.mode), (0, 0.0, KP_BOX_REFLECT));
            let g = kp_gaussian_options_default();
            assert_eq!(
                (g.sigma, g.order, g.truncate, g.radius, g.mode, g.cval),
                (1.0, 0, 4.0, -1, KP_BOX_REFLECT, 0.0)
            );
            let p = kp_lorenz96_default_params();
            assert_eq!((p.n, p.forcing, p.dt), (40, 8.0, 0.05));
            let u = kp_uniform_nd_options_default();
            assert!(u.size.is_null() && u.origin.is_null() && u.mode.is_null());
            assert_eq!(u.cval, 0.0);
            let q = kp_lorenz05_default_params();
            assert_eq!(
                (q.n, q.forcing, q.k, q.j, q.b, q.c, q.dt, q.model),
                (960, 15.0, 32, 12, 10.0, 3.0, 0.001, 3)
            );
            let l = kp_lorenz63_default_params();
            assert_eq!(
                (l.sigma, l.rho, l.beta, l.dt),
                (10.0, 28.0, 8.0 / 3.0, 0.01)
            );
            let a = kp_lorenz63_adaptive_default_params();
            assert_eq!(
                (a.sigma_all, a.rho_all, a.beta_all, a.t0, a.t_end),
                (10.0, 28.0, 8.0 / 3.0, 0.0, 1.0)
            );
            assert_eq!(
                (a.rtol, a.atol, a.first_step, a.max_step, a.max_steps),
                (1e-3, 1e-6, 0.0, f64::INFINITY, 100000)
            );
            assert_eq!(kp_pdm_options_default().bins, 10);
            let ce = kp_ce_options_default();
            assert_eq!(
                (ce.phase_bins, ce.mag_bins, ce.phase_overlap, ce.mag_overlap),
                (10, 5, 0, 0)
            );
            let m = kp_multiband_options_default();
            assert_eq!(
                (m.method, m.nterms_base, m.nterms_band),
                (KP_MULTIBAND_FLEXIBLE, 1, 1)
            );
            assert!(m.reg_base.is_nan() && m.reg_band == 1e-6);
            assert_eq!(
                (
                    m.regularize_by_trace,
                    m.center_data,
                    m.fit_mean,
                    m.normalization
                ),
                (1, 1, 1, 0)
            );
        }
        HelperOp::OutputLen(nf, o) => {
            let nf = nf.get();
            let mut slot = kp_lombscargle_options_default();
            let opts = ls_options(o, &mut slot);
            let call = format!(
                "kp_lombscargle_output_len({nf}, {})",
                describe_ls_opts(opts)
            );
            trace!("{call}");
            let got = unsafe { kp_lombscargle_output_len(nf, opts) };
            let mode = unsafe { opts.as_ref() }.map_or(KP_NORMALIZE_POWER, |o| o.normalize);
            let exact: u128 = match mode {
                KP_NORMALIZE_POWER | KP_NORMALIZE_NORMALIZE => nf as u128,
                KP_NORMALIZE_AMPLITUDE => 2 * nf as u128,
                _ => 0,
            };
            if exact <= usize::MAX as u128 {
                assert_eq!(got as u128, exact, "{call}");
            } else {
                // Not representable: 0 (the documented error value) or
                // saturated, never a wrapped, too small length.
                assert!(
                    got == 0 || got == usize::MAX,
                    "{call} = {got}: the true length {exact} overflows size_t and was wrapped"
                );
            }
        }
        HelperOp::TrajectoryLen(members, n, steps, every) => {
            let (members, n, steps, every) = (members.get(), n.get(), steps.get(), every.get());
            let call = format!("kp_lorenz_trajectory_len({members}, {n}, {steps}, {every})");
            trace!("{call}");
            let got = kp_lorenz_trajectory_len(members, n, steps, every);
            let exact: Option<u128> = if every == 0 {
                Some(0)
            } else {
                (steps as u128 / every as u128 + 1)
                    .checked_mul(members as u128)
                    .and_then(|v| v.checked_mul(n as u128))
            };
            match exact {
                Some(e) if e <= usize::MAX as u128 => assert_eq!(got as u128, e, "{call}"),
                _ => assert!(
                    got == 0 || got == usize::MAX,
                    "{call} = {got}: the true length overflows size_t and was wrapped"
                ),
            }
        }
        HelperOp::ContextCreate(backend, null_out) => {
            let call = format!(
                "kp_context_create({backend}, {})",
                if null_out { "NULL" } else { "&out" }
            );
            trace!("{call}");
            let sentinel = 0x5a5a_5a50usize as *mut kp_context;
            let mut out = sentinel;
            let status = unsafe {
                kp_context_create(backend, if null_out { ptr::null_mut() } else { &mut out })
            };
            if check_status(&call, status) {
                assert!(
                    !null_out && !out.is_null() && out != sentinel,
                    "{call}: OK without a handle"
                );
                let mut is_gpu = -1;
                let s = unsafe { kp_context_is_gpu(out, &mut is_gpu) };
                assert!(check_status("kp_context_is_gpu", s));
                assert!(is_gpu == 0 || is_gpu == 1);
                if backend == KP_BACKEND_CPU {
                    assert_eq!(is_gpu, 0, "a CPU context says it is on a GPU");
                }
                unsafe { kp_context_destroy(out) };
            } else {
                assert_eq!(out, sentinel, "{call}: failed but wrote *out");
            }
            // An unknown backend or a NULL out can never succeed.
            if backend > KP_BACKEND_CPU || null_out {
                assert_ne!(status, kp_status::KP_OK, "{call}");
            }
        }
        HelperOp::DeviceCount(null_out) => {
            trace!("kp_device_count({})", if null_out { "NULL" } else { "&n" });
            if null_out {
                let status = unsafe { kp_device_count(ptr::null_mut()) };
                assert!(!check_status("kp_device_count(NULL)", status));
            } else {
                device_count();
            }
        }
        HelperOp::DeviceInfo(ordinal, null_out) => {
            let call = format!(
                "kp_device_get_info({ordinal}, {})",
                if null_out { "NULL" } else { "&info" }
            );
            trace!("{call}");
            let n = device_count();
            let mut info = std::mem::MaybeUninit::<kp_device_info>::uninit();
            unsafe { info.as_mut_ptr().write_bytes(0xa5, 1) };
            let size = std::mem::size_of::<kp_device_info>();
            let before =
                unsafe { std::slice::from_raw_parts(info.as_ptr().cast::<u8>(), size) }.to_vec();
            let out = if null_out {
                ptr::null_mut()
            } else {
                info.as_mut_ptr()
            };
            let status = unsafe { kp_device_get_info(ordinal, out) };
            let valid = !null_out && (0..n).contains(&ordinal);
            if check_status(&call, status) {
                assert!(
                    valid,
                    "{call}: OK for a device that is not there ({n} present)"
                );
                let info = unsafe { info.assume_init() };
                assert_eq!(info.ordinal, ordinal, "{call}");
                assert!(info.name.contains(&0), "{call}: name not NUL-terminated");
            } else {
                let after = unsafe { std::slice::from_raw_parts(info.as_ptr().cast::<u8>(), size) };
                assert_eq!(after, &before[..], "{call}: failed but wrote *out");
            }
        }
        HelperOp::ContextOnDevice(ordinal, null_out) => {
            let call = format!(
                "kp_context_create_on_device({ordinal}, {})",
                if null_out { "NULL" } else { "&out" }
            );
            trace!("{call}");
            let n = device_count();
            let sentinel = 0x5a5a_5a50usize as *mut kp_context;
            let mut out = sentinel;
            let status = unsafe {
                kp_context_create_on_device(
                    ordinal,
                    if null_out { ptr::null_mut() } else { &mut out },
                )
            };
            if check_status(&call, status) {
                assert!(
                    !null_out && (0..n).contains(&ordinal) && !out.is_null() && out != sentinel,
                    "{call}: OK without a device or a handle ({n} present)"
                );
                let mut is_gpu = -1;
                let s = unsafe { kp_context_is_gpu(out, &mut is_gpu) };
                assert!(check_status("kp_context_is_gpu", s));
                assert_eq!(
                    is_gpu, 1,
                    "{call}: a context on a device says it is not on a GPU"
                );
                unsafe { kp_context_destroy(out) };
            } else {
                assert_eq!(out, sentinel, "{call}: failed but wrote *out");
            }
        }
        HelperOp::ContextIsGpu(null_ctx, null_out) => {
            let c = if null_ctx { ptr::null() } else { ctx() };
            let call = format!(
                "kp_context_is_gpu({}, {})",
                if null_ctx { "NULL" } else { "ctx" },
                if null_out { "NULL" } else { "&out" }
            );
            trace!("{call}");
            let mut is_gpu = 7;
            let s = unsafe {
                kp_context_is_gpu(
                    c,
                    if null_out {
                        ptr::null_mut()
                    } else {
                        &mut is_gpu
                    },
                )
            };
            if check_status(&call, s) {
                assert_eq!(is_gpu, 0, "{call}: the CPU context says it is on a GPU");
            } else {
                assert_eq!(is_gpu, 7, "{call}: failed but wrote *is_gpu");
                assert_eq!(s, kp_status::KP_ERROR_NULL_POINTER, "{call}");
            }
            if null_ctx || null_out {
                assert_eq!(s, kp_status::KP_ERROR_NULL_POINTER, "{call}");
            }
        }
        HelperOp::NullContext(which) => {
            // Every entry point with ctx = NULL (and otherwise valid, tiny
            // arguments) must answer KP_ERROR_NULL_POINTER.
            let mut x = [1.0f64, 2.0, 3.0, 4.0];
            let mut y = [1.0f32, 2.0, 3.0, 4.0];
            let mut sum = 0.0f64;
            let null = ptr::null();
            let (name, s) = unsafe {
                match which % 10 {
                    0 => ("kp_sum_f64", kp_sum_f64(null, x.as_ptr(), 4, &mut sum)),
                    1 => (
                        "kp_normalize_f32",
                        kp_normalize_f32(null, y.as_mut_ptr(), 4, &mut sum),
                    ),
                    2 => {
                        let mut out = [0.0f64; 2];
                        let f = [1.0f64, 2.0];
                        (
                            "kp_lombscargle_f64",
                            kp_lombscargle_f64(
                                null,
                                x.as_ptr(),
                                x.as_ptr(),
                                ptr::null(),
                                4,
                                f.as_ptr(),
                                2,
                                ptr::null(),
                                out.as_mut_ptr(),
                                2,
                            ),
                        )
                    }
                    3 => {
                        let mut out = [0.0f64; 4];
                        (
                            "kp_box_filter_f64",
                            kp_box_filter_f64(
                                null,
                                x.as_ptr(),
                                2,
                                out.as_mut_ptr(),
                                2,
                                2,
                                2,
                                ptr::null(),
                            ),
                        )
                    }
                    4 => {
                        let mut out = [0.0f64; 4];
                        let p = kp_lorenz96_params {
                            n: 4,
                            forcing: 8.0,
                            dt: 0.01,
                            ..kp_lorenz96_default_params()
                        };
                        (
                            "kp_lorenz96_f64",
                            kp_lorenz96_f64(
                                null,
                                &p,
                                x.as_ptr(),
                                1,
                                1,
                                0,
                                out.as_mut_ptr(),
                                ptr::null_mut(),
                                0,
                            ),
                        )
                    }
                    5 => {
                        let mut out = [0.0f64; 4];
                        let w = [1.0f64];
                        (
                            "kp_window_sum_f64",
                            kp_window_sum_f64(
                                null,
                                x.as_ptr(),
                                w.as_ptr(),
                                1,
                                1,
                                4,
                                out.as_mut_ptr(),
                            ),
                        )
                    }
                    6 => {
                        let mut g = [0.0f64; 2];
                        let mut d = [0.0f64; 2];
                        (
                            "kp_fg_integrate_c128",
                            kp_fg_integrate_c128(
                                null,
                                1,
                                x.as_mut_ptr(),
                                g.as_mut_ptr(),
                                0.0,
                                0.0,
                                0.1,
                                0,
                                d.as_mut_ptr(),
                                1,
                            ),
                        )
                    }
                    7 => {
                        let mut out = [0.0f64; 3];
                        (
                            "kp_lorenz63_f64",
                            kp_lorenz63_f64(
                                null,
                                ptr::null(),
                                x.as_ptr(),
                                1,
                                ptr::null(),
                                ptr::null(),
                                ptr::null(),
                                1,
                                ptr::null(),
                                0,
                                out.as_mut_ptr(),
                                ptr::null_mut(),
                            ),
                        )
                    }
                    8 => {
                        let mut out = [0.0f32; 3];
                        let mut p = kp_lorenz63_adaptive_default_params();
                        p.t_end = 0.01;
                        (
                            "kp_lorenz63_adaptive_f32",
                            kp_lorenz63_adaptive_f32(
                                null,
                                &p,
                                y.as_ptr(),
                                1,
                                ptr::null(),
                                ptr::null(),
                                ptr::null(),
                                ptr::null(),
                                0,
                                out.as_mut_ptr(),
                                ptr::null_mut(),
                                ptr::null_mut(),
                                ptr::null_mut(),
                                ptr::null_mut(),
                            ),
                        )
                    }
                    _ => ("kp_stream_synchronize", kp_stream_synchronize(null, 0)),
                }
            };
            trace!("{name}(NULL ctx, ...)");
            check_status(name, s);
            assert_eq!(
                s,
                kp_status::KP_ERROR_NULL_POINTER,
                "{name} with a NULL context"
            );
        }
    }
}

// --- Lomb-Scargle -----------------------------------------------------------

type LsFn<T> = unsafe extern "C" fn(
    *const kp_context,
    *const T,
    *const T,
    *const T,
    usize,
    *const T,
    usize,
    *const kp_lombscargle_options,
    *mut T,
    usize,
) -> kp_status;

type LsUniformFn<T> = unsafe extern "C" fn(
    *const kp_context,
    *const T,
    *const T,
    *const T,
    usize,
    f64,
    f64,
    usize,
    *const kp_lombscargle_options,
    *mut T,
    usize,
) -> kp_status;

type LsBatchFn<T> = unsafe extern "C" fn(
    *const kp_context,
    *const T,
    *const T,
    *const T,
    *const i64,
    usize,
    *const f64,
    *const f64,
    usize,
    usize,
    *const kp_lombscargle_options,
    *mut T,
    usize,
) -> kp_status;

/// Series buffers (t, y, optional weights) and the sample count. y and
/// weights are as long as t unless `independent`.
#[derive(Arbitrary, Debug)]
struct SeriesSpec {
    t: BufSpec,
    y: BufSpec,
    weights: Option<BufSpec>,
    nx: Count,
    independent: bool,
}

const LS_SERIES_CAP: usize = 256;
const LS_OUT_CAP: usize = 1024;

struct SeriesBufs<T> {
    t: Buf<T>,
    y: Buf<T>,
    w: Option<Buf<T>>,
}

impl SeriesSpec {
    fn make<T: Real>(&self, cap: usize) -> SeriesBufs<T> {
        let t: Buf<T> = self.t.make(cap);
        let other = |b: &BufSpec| {
            if self.independent {
                b.make(cap)
            } else {
                b.make_len(t.len())
            }
        };
        SeriesBufs {
            y: other(&self.y),
            w: self.weights.as_ref().map(other),
            t,
        }
    }
}

impl<T: Real> SeriesBufs<T> {
    fn min_len(&self) -> usize {
        let mut n = self.t.len().min(self.y.len());
        if let Some(w) = &self.w {
            n = n.min(w.len());
        }
        n
    }
    fn fits(&self, span: u128) -> bool {
        self.t.fits(span) && self.y.fits(span) && self.w.as_ref().is_none_or(|w| w.fits(span))
    }
    fn w_ptr(&self) -> *const T {
        self.w.as_ref().map_or(ptr::null(), |w| w.ptr())
    }
    fn snapshots(&self) -> Vec<(&'static str, Vec<u8>)> {
        let mut v = vec![("t", self.t.snapshot()), ("y", self.y.snapshot())];
        if let Some(w) = &self.w {
            v.push(("weights", w.snapshot()));
        }
        v
    }
    fn check_unchanged(&self, call: &str, before: &[(&'static str, Vec<u8>)]) {
        let mut now: Vec<&[u8]> = vec![bytes_of(&self.t.data), bytes_of(&self.y.data)];
        if let Some(w) = &self.w {
            now.push(bytes_of(&w.data));
        }
        let inputs: Vec<(&str, Vec<u8>, &[u8])> = before
            .iter()
            .zip(now)
            .map(|((n, b), a)| (*n, b.clone(), a))
            .collect();
        check_inputs(call, &inputs);
    }
    fn describe(&self) -> String {
        format!(
            "t={}, y={}, weights={}",
            self.t.describe(),
            self.y.describe(),
            self.w.as_ref().map_or("NULL".into(), |w| w.describe())
        )
    }
}

/// The output buffer for `out_len` chosen by `how`, and the out_len passed.
fn ls_out<T: Real>(spec: &OutSpec, how: OutLen, needed: usize) -> (Buf<T>, usize) {
    match how {
        OutLen::Matching(extra) => {
            let len = if needed <= LS_OUT_CAP {
                needed + extra as usize % 4
            } else {
                spec.len as usize % (LS_OUT_CAP + 1)
            };
            (spec.make_len(len), needed)
        }
        OutLen::Count(c) => {
            let out = spec.make::<T>(LS_OUT_CAP);
            let n = c.resolve(out.len());
            (out, n)
        }
    }
}

#[derive(Arbitrary, Debug)]
struct LsArrayOp {
    series: SeriesSpec,
    freqs: BufSpec,
    nf: Count,
    opts: LsOpts,
    out: OutSpec,
    out_len: OutLen,
}

fn ls_array<T: Real>(f: LsFn<T>, name: &str, op: &LsArrayOp) {
    let s = op.series.make::<T>(LS_SERIES_CAP);
    let nx = op.series.nx.resolve(s.min_len());
    let freqs = op.freqs.make::<T>(LS_SERIES_CAP);
    let nf = op.nf.resolve(freqs.len());
    let mut slot = kp_lombscargle_options_default();
    let opts = ls_options(op.opts, &mut slot);
    let (mut out, out_len) = ls_out::<T>(&op.out, op.out_len, ls_output_len(nf, opts));
    if !(s.fits(nx as u128) && freqs.fits(nf as u128) && out.fits(out_len as u128)) {
        return;
    }
    let call = format!(
        "{name}(ctx, {}, nx={nx}, freqs={}, nf={nf}, options={}, out={}, out_len={out_len})",
        s.describe(),
        freqs.describe(),
        describe_ls_opts(opts),
        out.describe()
    );
    trace!("{call}");
    let inputs = s.snapshots();
    let freqs_before = freqs.snapshot();
    let out_before = out.snapshot();
    let status = unsafe {
        f(
            ctx(),
            s.t.ptr(),
            s.y.ptr(),
            s.w_ptr(),
            nx,
            freqs.ptr(),
            nf,
            opts,
            out.mut_ptr(),
            out_len,
        )
    };
    let ok = check_status(&call, status);
    s.check_unchanged(&call, &inputs);
    check_inputs(&call, &[("freqs", freqs_before, bytes_of(&freqs.data))]);
    check_outputs(
        &call,
        ok,
        &[(
            "out",
            out_before,
            bytes_of(&out.data),
            out_len.saturating_mul(size_of::<T>()),
        )],
    );
}

type LsPeaksFn<T> = unsafe extern "C" fn(
    *const kp_context,
    *const T,
    *const T,
    *const T,
    *const i64,
    usize,
    *const f64,
    *const f64,
    usize,
    usize,
    *const kp_lombscargle_options,
    *mut i64,
    *mut f64,
) -> kp_status;

type LsTopPeaksFn<T> = unsafe extern "C" fn(
    *const kp_context,
    *const T,
    *const T,
    *const T,
    *const i64,
    usize,
    *const f64,
    *const f64,
    usize,
    usize,
    *const kp_lombscargle_options,
    *const kp_peak_options,
    *mut i64,
    *mut f64,
) -> kp_status;

#[derive(Arbitrary, Debug)]
struct LsUniformOp {
    series: SeriesSpec,
    f0: FVal,
    df: FVal,
    nf: Num,
    opts: LsOpts,
    out: OutSpec,
    out_len: OutLen,
}

fn ls_uniform<T: Real>(f: LsUniformFn<T>, name: &str, op: &LsUniformOp) {
    let s = op.series.make::<T>(LS_SERIES_CAP);
    let nx = op.series.nx.resolve(s.min_len());
    let nf = op.nf.get();
    let mut slot = kp_lombscargle_options_default();
    let opts = ls_options(op.opts, &mut slot);
    let (mut out, out_len) = ls_out::<T>(&op.out, op.out_len, ls_output_len(nf, opts));
    if !(s.fits(nx as u128) && out.fits(out_len as u128)) {
        return;
    }
    // nf has no buffer of its own: a grid the size of a plausible but absent
    // output would be caller UB if accepted, so only consistent or impossible.
    if !fits(nf as u128, out.len(), size_of::<T>()) {
        return;
    }
    let (f0, df) = (op.f0.0, op.df.0);
    let call = format!(
        "{name}(ctx, {}, nx={nx}, f0={f0:e}, df={df:e}, nf={nf}, options={}, out={}, out_len={out_len})",
        s.describe(),
        describe_ls_opts(opts),
        out.describe()
    );
    trace!("{call}");
    let inputs = s.snapshots();
    let out_before = out.snapshot();
    let status = unsafe {
        f(
            ctx(),
            s.t.ptr(),
            s.y.ptr(),
            s.w_ptr(),
            nx,
            f0,
            df,
            nf,
            opts,
            out.mut_ptr(),
            out_len,
        )
    };
    let ok = check_status(&call, status);
    s.check_unchanged(&call, &inputs);
    check_outputs(
        &call,
        ok,
        &[(
            "out",
            out_before,
            bytes_of(&out.data),
            out_len.saturating_mul(size_of::<T>()),
        )],
    );
}

/// Offsets: either valid (0, sorted cuts, total) or anything.
#[derive(Arbitrary, Debug)]
enum OffsetsSpec {
    Valid { cuts: Vec<u16>, total: Count },
    Raw(Vec<OffVal>),
}

#[derive(Arbitrary, Debug, Clone, Copy)]
enum OffVal {
    Within(u16),
    Any(u64),
    Huge(u8),
}

impl OffsetsSpec {
    /// `entries` offsets over a buffer of `len` values.
    fn make(&self, entries: usize, len: usize) -> Vec<i64> {
        match self {
            OffsetsSpec::Valid { cuts, total } => {
                // Built in u64 (a huge total wraps to a negative int64_t
                // offset, which the library must refuse), then cast.
                let total = total.resolve(len) as u64;
                let mut v: Vec<u64> = (0..entries)
                    .map(|i| {
                        let c = cuts.get(i).copied().unwrap_or(0) as u64;
                        c % total.saturating_add(1)
                    })
                    .collect();
                v.sort_unstable();
                if let Some(first) = v.first_mut() {
                    *first = 0;
                }
                if let Some(last) = v.last_mut() {
                    if entries > 1 {
                        *last = total;
                    }
                }
                v.into_iter().map(|o| o as i64).collect()
            }
            OffsetsSpec::Raw(vals) => (0..entries)
                .map(
                    |i| match vals.get(i).copied().unwrap_or(OffVal::Within(0)) {
                        OffVal::Within(x) => (x as u64 % (len as u64 + 1)) as i64,
                        OffVal::Any(x) => x as i64,
                        OffVal::Huge(k) => HUGE[k as usize % HUGE.len()] as i64,
                    },
                )
                .collect(),
        }
    }
}

// --- A batch's best peaks ----------------------------------------------------

/// A batch's best peaks (its `_peaks` or `_top_peaks` form, called after
/// the batch): the peak options (None: NULL; k any number, the separation
/// any value), and the outputs (`index`, then `value` or BLS's seven
/// fields), each the span they must hold and `extra % 4` more or, past the
/// cap, `len` long, now and then NULL.
#[derive(Arbitrary, Debug)]
struct PeaksSpec {
    opts: Option<(Num, FVal)>,
    len: u16,
    extra: u8,
    index_null: u8,
    value_null: u8,
    /// >= 240: `index` is the offsets' buffer (the library must refuse the
    /// overlap).
    alias: u8,
}

const PEAKS_CAP: usize = 2048;

/// The peak options and `index` of one peaks call over `rows` series.
struct PeaksArgs {
    opts: Option<kp_peak_options>,
    k: usize,
    /// What each output must hold: `rows * k` values.
    span: u128,
    index: Buf<i64>,
    aliased: bool,
}

impl PeaksSpec {
    fn make(&self, rows: usize) -> PeaksArgs {
        let opts = self.opts.map(|(k, separation)| kp_peak_options {
            k: k.get(),
            separation: separation.0,
        });
        let k = opts.map_or(1, |o| o.k);
        let span = rows as u128 * k as u128;
        PeaksArgs {
            opts,
            k,
            span,
            index: Buf {
                data: vec![-7i64; self.len_for(span)].into_boxed_slice(),
                null: self.index_null == 1,
            },
            aliased: self.alias >= 240,
        }
    }

    /// An output's length for a span of `span` values.
    fn len_for(&self, span: u128) -> usize {
        if span <= PEAKS_CAP as u128 {
            span as usize + self.extra as usize % 4
        } else {
            self.len as usize % (PEAKS_CAP + 1)
        }
    }

    /// The `value` output of `args`, poisoned.
    fn value(&self, args: &PeaksArgs) -> Buf<f64> {
        Buf {
            data: vec![f64::poison(); self.len_for(args.span)].into_boxed_slice(),
            null: self.value_null == 1,
        }
    }
}

impl PeaksArgs {
    fn opts_ptr(&self) -> *const kp_peak_options {
        self.opts.as_ref().map_or(ptr::null(), |o| o)
    }

    /// The `index` to pass (the offsets' buffer when aliased), or None when
    /// its span may not be passed (see `fits`).
    fn index_ptr(&mut self, offsets: &Buf<i64>) -> Option<*mut i64> {
        let (ptr, fits) = if self.aliased {
            (offsets.ptr() as *mut i64, offsets.fits(self.span))
        } else {
            (self.index.mut_ptr(), self.index.fits(self.span))
        };
        fits.then_some(ptr)
    }

    fn describe(&self) -> String {
        let index = if self.aliased {
            "offsets".into()
        } else {
            self.index.describe()
        };
        format!("peaks={:?}, index={index}", self.opts)
    }

    /// `index` untouched on failure, nothing past the span on success,
    /// never KP_OK over the offsets; on success the number of peaks of each
    /// of the `rows` series: indices among the `n` trials, then -1 to `k`.
    fn check(&self, call: &str, ok: bool, before: Vec<u8>, rows: usize, n: u128) -> Vec<usize> {
        let bytes = clamp(self.span).saturating_mul(size_of::<i64>());
        check_outputs(
            call,
            ok,
            &[("index", before, bytes_of(&self.index.data), bytes)],
        );
        assert!(
            !(ok && self.aliased),
            "{call}: KP_OK with index over offsets"
        );
        if !ok {
            return Vec::new();
        }
        let rows = self.index.data.chunks(self.k).take(rows).enumerate();
        rows.map(|(r, i)| {
            let found = i.iter().take_while(|&&i| i >= 0).count();
            assert!(
                i[..found].iter().all(|&i| (i as u128) < n) && i[found..].iter().all(|&i| i == -1),
                "{call}: series {r}: indices {i:?}"
            );
            found
        })
        .collect()
    }
}

/// A peaks call's `value` (`k` a series): each series' `found` values (not
/// NaN), then NaN. (`found` is empty after a failed call, whose `k` may be
/// 0.)
fn check_peak_values(call: &str, value: &[f64], k: usize, found: &[usize]) {
    for (r, &found) in found.iter().enumerate() {
        let v = &value[r * k..(r + 1) * k];
        assert!(
            v[..found].iter().all(|v| !v.is_nan()) && v[found..].iter().all(|v| v.is_nan()),
            "{call}: series {r}: values {v:?}"
        );
    }
}

#[derive(Arbitrary, Debug)]
struct LsBatchOp {
    series: SeriesSpec,
    series_count: u8,
    offsets: OffsetsSpec,
    offsets_null: u8,
    nseries: Count,
    grids: Vec<(FVal, FVal)>,
    ngrids: Count,
    f0_null: u8,
    df_null: u8,
    nf: Num,
    opts: LsOpts,
    out: OutSpec,
    out_len: OutLen,
    top: PeaksSpec,
}

fn ls_batch<T: Real>(
    (f, peaks, top): (LsBatchFn<T>, LsPeaksFn<T>, LsTopPeaksFn<T>),
    name: &str,
    op: &LsBatchOp,
) {
    let s = op.series.make::<T>(LS_SERIES_CAP);
    let k = 1 + op.series_count as usize % 16;
    let offsets = Buf {
        data: op.offsets.make(k + 1, s.min_len()).into_boxed_slice(),
        null: op.offsets_null == 1,
    };
    let nseries = op.nseries.resolve(k);
    let default_grid = [(FVal(0.5), FVal(0.25))];
    let grids = if op.grids.is_empty() {
        &default_grid[..]
    } else {
        &op.grids[..op.grids.len().min(17)]
    };
    let g = grids.len();
    let f0 = Buf {
        data: grids.iter().map(|p| p.0 .0).collect(),
        null: op.f0_null == 1,
    };
    let df = Buf {
        data: grids.iter().map(|p| p.1 .0).collect(),
        null: op.df_null == 1,
    };
    let ngrids = op.ngrids.resolve(g);
    let nf = op.nf.get();
    let mut slot = kp_lombscargle_options_default();
    let opts = ls_options(op.opts, &mut slot);
    // A C caller's size: nseries * kp_lombscargle_output_len(nf), in size_t.
    let needed = nseries.wrapping_mul(ls_output_len(nf, opts));
    let (mut out, out_len) = ls_out::<T>(&op.out, op.out_len, needed);
    let offsets_span = nseries as u128 + 1;
    if !(offsets.fits(offsets_span)
        && f0.fits(ngrids as u128)
        && df.fits(ngrids as u128)
        && out.fits(out_len as u128))
    {
        return;
    }
    // The sample count is offsets[nseries] when that entry exists.
    if !offsets.null {
        if let Some(&total) = offsets.data.get(nseries) {
            if !s.fits(total as u128) {
                return;
            }
        }
    }
    // nf has no buffer: consistent with the output, or impossible.
    if !fits(nf as u128, out.len(), size_of::<T>()) {
        return;
    }
    let call = format!(
        "{name}(ctx, {}, offsets={}{:?}, nseries={nseries}, f0={}{:?}, df={}{:?}, ngrids={ngrids}, nf={nf}, options={}, out={}, out_len={out_len})",
        s.describe(),
        offsets.describe(),
        offsets.data,
        f0.describe(),
        f0.data,
        df.describe(),
        df.data,
        describe_ls_opts(opts),
        out.describe()
    );
    trace!("{call}");
    let inputs = s.snapshots();
    let before = (offsets.snapshot(), f0.snapshot(), df.snapshot());
    let out_before = out.snapshot();
    let status = unsafe {
        f(
            ctx(),
            s.t.ptr(),
            s.y.ptr(),
            s.w_ptr(),
            offsets.ptr(),
            nseries,
            f0.ptr(),
            df.ptr(),
            ngrids,
            nf,
            opts,
            out.mut_ptr(),
            out_len,
        )
    };
    let ok = check_status(&call, status);
    s.check_unchanged(&call, &inputs);
    check_inputs(
        &call,
        &[
            ("offsets", before.0, bytes_of(&offsets.data)),
            ("f0", before.1, bytes_of(&f0.data)),
            ("df", before.2, bytes_of(&df.data)),
        ],
    );
    check_outputs(
        &call,
        ok,
        &[(
            "out",
            out_before,
            bytes_of(&out.data),
            out_len.saturating_mul(size_of::<T>()),
        )],
    );

    // The best peaks of the same batch: `k` per series (any `nf` reaching
    // here is the output's, or one the library must refuse).
    let mut args = op.top.make(nseries);
    let mut value = op.top.value(&args);
    if let Some(index) = args.index_ptr(&offsets).filter(|_| value.fits(args.span)) {
        let call = call.replacen(name, &name.replace("batch", "batch_top_peaks"), 1);
        let call = format!(
            "{call} with {}, value={}",
            args.describe(),
            value.describe()
        );
        trace!("{call}");
        let before = (args.index.snapshot(), value.snapshot(), offsets.snapshot());
        let status = unsafe {
            top(
                ctx(),
                s.t.ptr(),
                s.y.ptr(),
                s.w_ptr(),
                offsets.ptr(),
                nseries,
                f0.ptr(),
                df.ptr(),
                ngrids,
                nf,
                opts,
                args.opts_ptr(),
                index,
                value.mut_ptr(),
            )
        };
        let ok = check_status(&call, status);
        s.check_unchanged(&call, &inputs);
        check_inputs(&call, &[("offsets", before.2, bytes_of(&offsets.data))]);
        let bytes = clamp(args.span).saturating_mul(size_of::<f64>());
        check_outputs(
            &call,
            ok,
            &[("value", before.1, bytes_of(&value.data), bytes)],
        );
        let found = args.check(&call, ok, before.0, nseries, nf as u128);
        check_peak_values(&call, &value.data, args.k, &found);
    }

    // The peaks of the same batch: one index and one value per series.
    if nseries > k {
        return; // a caller's nseries larger than its (fuzzed) index/value arrays
    }
    let mut index = vec![-7i64; k];
    let mut value = vec![-7.0f64; k];
    let call = call.replacen(name, &name.replace("batch", "batch_peaks"), 1);
    let status = unsafe {
        peaks(
            ctx(),
            s.t.ptr(),
            s.y.ptr(),
            s.w_ptr(),
            offsets.ptr(),
            nseries,
            f0.ptr(),
            df.ptr(),
            ngrids,
            nf,
            opts,
            index.as_mut_ptr(),
            value.as_mut_ptr(),
        )
    };
    let ok = check_status(&call, status);
    s.check_unchanged(&call, &inputs);
    if ok {
        for i in 0..nseries {
            assert!(
                (-1..nf as i64).contains(&index[i]) && (index[i] >= 0) != value[i].is_nan(),
                "{call}: series {i} peak ({}, {})",
                index[i],
                value[i]
            );
        }
    } else {
        assert!(
            index.iter().all(|&i| i == -7) && value.iter().all(|&v| v == -7.0),
            "{call}: failed but wrote index or value"
        );
    }
}

// --- Reductions ---------------------------------------------------------------

#[derive(Arbitrary, Debug)]
struct SumOp {
    x: BufSpec,
    n: Count,
    sum_null: bool,
}

const REDUCE_CAP: usize = 4096;

type SumFn<T> = unsafe extern "C" fn(*const kp_context, *const T, usize, *mut f64) -> kp_status;
type NormalizeFn<T> = unsafe extern "C" fn(*const kp_context, *mut T, usize, *mut f64) -> kp_status;

fn sum<T: Real>(f: SumFn<T>, name: &str, op: &SumOp) {
    let x = op.x.make::<T>(REDUCE_CAP);
    let n = op.n.resolve(x.len());
    if !x.fits(n as u128) {
        return;
    }
    let call = format!(
        "{name}(ctx, x={}, n={n}, sum={})",
        x.describe(),
        if op.sum_null { "NULL" } else { "&sum" }
    );
    trace!("{call}");
    let before = x.snapshot();
    let poison = f64::from_bits(0xfff5_a5a5_a5a5_a5a5);
    let mut out = poison;
    let status = unsafe {
        f(
            ctx(),
            x.ptr(),
            n,
            if op.sum_null {
                ptr::null_mut()
            } else {
                &mut out
            },
        )
    };
    let ok = check_status(&call, status);
    check_inputs(&call, &[("x", before, bytes_of(&x.data))]);
    if !ok {
        assert_eq!(
            out.to_bits(),
            poison.to_bits(),
            "{call}: failed but wrote *sum"
        );
    }
    if op.sum_null {
        assert!(!ok, "{call}: KP_OK with sum = NULL");
    }
}

fn normalize<T: Real>(f: NormalizeFn<T>, name: &str, op: &SumOp) {
    let mut x = op.x.make::<T>(REDUCE_CAP);
    let n = op.n.resolve(x.len());
    if !x.fits(n as u128) {
        return;
    }
    let call = format!(
        "{name}(ctx, x={}, n={n}, sum={})",
        x.describe(),
        if op.sum_null { "NULL" } else { "&sum" }
    );
    trace!("{call}");
    let before = x.snapshot();
    let poison = f64::from_bits(0xfff5_a5a5_a5a5_a5a5);
    let mut out = poison;
    let status = unsafe {
        f(
            ctx(),
            x.mut_ptr(),
            n,
            if op.sum_null {
                ptr::null_mut()
            } else {
                &mut out
            },
        )
    };
    let ok = check_status(&call, status);
    check_outputs(
        &call,
        ok,
        &[(
            "x",
            before,
            bytes_of(&x.data),
            n.saturating_mul(size_of::<T>()),
        )],
    );
    if !ok {
        assert_eq!(
            out.to_bits(),
            poison.to_bits(),
            "{call}: failed but wrote *sum"
        );
    }
}

#[derive(Arbitrary, Debug)]
struct BatchedOp {
    x: BufSpec,
    count: u8,
    offsets: OffsetsSpec,
    offsets_null: u8,
    narrays: Count,
    sums: OutSpec,
    status: OutSpec,
}

type BatchedFn<T> = unsafe extern "C" fn(
    *const kp_context,
    *mut T,
    *const i64,
    usize,
    *mut f64,
    *mut i32,
) -> kp_status;

fn normalize_batched<T: Real>(f: BatchedFn<T>, name: &str, op: &BatchedOp) {
    let mut x = op.x.make::<T>(REDUCE_CAP);
    let k = op.count as usize % 33;
    let offsets = Buf {
        data: op.offsets.make(k + 1, x.len()).into_boxed_slice(),
        null: op.offsets_null == 1,
    };
    let narrays = op.narrays.resolve(k);
    // sums and status: usually exactly narrays long.
    let sums_len = if narrays <= 33 && op.sums.len % 4 != 0 {
        narrays
    } else {
        op.sums.len as usize % 34
    };
    let status_len = if narrays <= 33 && op.status.len % 4 != 0 {
        narrays
    } else {
        op.status.len as usize % 34
    };
    let mut sums: Buf<f64> = op.sums.make_len(sums_len);
    let mut status_buf = Buf {
        data: vec![0x5a5a_5a5ai32; status_len].into_boxed_slice(),
        null: op.status.null == 1,
    };
    if !(offsets.fits(narrays as u128 + 1)
        && sums.fits(narrays as u128)
        && status_buf.fits(narrays as u128))
    {
        return;
    }
    if !offsets.null {
        if let Some(&total) = offsets.data.get(narrays) {
            if !x.fits(total as u128) {
                return;
            }
        }
    }
    let call = format!(
        "{name}(ctx, x={}, offsets={}{:?}, narrays={narrays}, sums={}, status={})",
        x.describe(),
        offsets.describe(),
        offsets.data,
        sums.describe(),
        status_buf.describe()
    );
    trace!("{call}");
    let before = (
        x.snapshot(),
        offsets.snapshot(),
        sums.snapshot(),
        status_buf.snapshot(),
    );
    let status = unsafe {
        f(
            ctx(),
            x.mut_ptr(),
            offsets.ptr(),
            narrays,
            sums.mut_ptr(),
            status_buf.mut_ptr(),
        )
    };
    let ok = check_status(&call, status);
    check_inputs(&call, &[("offsets", before.1, bytes_of(&offsets.data))]);
    let x_span = if ok {
        offsets.data.get(narrays).map_or(0, |&v| v as usize)
    } else {
        0
    };
    check_outputs(
        &call,
        ok,
        &[
            (
                "x",
                before.0,
                bytes_of(&x.data),
                x_span.saturating_mul(size_of::<T>()),
            ),
            (
                "sums",
                before.2,
                bytes_of(&sums.data),
                narrays.saturating_mul(8),
            ),
            (
                "status",
                before.3,
                bytes_of(&status_buf.data),
                narrays.saturating_mul(4),
            ),
        ],
    );
    if ok {
        for (a, &st) in status_buf.data.iter().take(narrays).enumerate() {
            assert!(st == 0 || st == 1, "{call}: status[{a}] = {st}");
        }
    }
}

// --- Box filter -----------------------------------------------------------------

#[derive(Arbitrary, Debug, Clone, Copy)]
enum Pitch {
    Pad(u8),
    Less(u8),
    Huge(u8),
}

impl Pitch {
    fn get(self, cols: usize) -> usize {
        match self {
            Pitch::Pad(p) => cols.saturating_add(p as usize % 8),
            Pitch::Less(d) => cols.saturating_sub(1 + d as usize % 4),
            Pitch::Huge(i) => HUGE[i as usize % HUGE.len()],
        }
    }
}

#[derive(Arbitrary, Debug)]
struct BoxOp {
    input: BufSpec,
    output: OutSpec,
    cols: Num,
    in_pitch: Pitch,
    out_pitch: Pitch,
    rows: Count,
    opts: BoxOpts,
    alias: u8,
}

const BOX_CAP: usize = 4096;

type BoxFn<T> = unsafe extern "C" fn(
    *const kp_context,
    *const T,
    usize,
    *mut T,
    usize,
    usize,
    usize,
    *const kp_box_filter_options,
) -> kp_status;

/// (rows - 1) * pitch + cols elements, exactly (0 rows: nothing).
fn image_span(rows: usize, pitch: usize, cols: usize) -> u128 {
    if rows == 0 {
        0
    } else {
        (rows as u128 - 1) * pitch as u128 + cols as u128
    }
}

/// The most rows a buffer of `len` holds with this pitch and width.
fn max_rows(len: usize, pitch: usize, cols: usize) -> usize {
    if cols > len {
        0
    } else if pitch == 0 {
        len
    } else {
        (len - cols) / pitch + 1
    }
}

fn box_filter<T: Real>(f: BoxFn<T>, name: &str, op: &BoxOp) {
    let mut input = op.input.make::<T>(BOX_CAP);
    let mut output = op.output.make::<T>(BOX_CAP);
    let cols = match op.cols {
        Num::Small(c) => c as usize % 65,
        other => other.get(),
    };
    let (in_pitch, out_pitch) = (op.in_pitch.get(cols), op.out_pitch.get(cols));
    let rows = op
        .rows
        .resolve(max_rows(input.len(), in_pitch, cols).min(max_rows(
            output.len(),
            out_pitch,
            cols,
        )));
    let (in_span, out_span) = (
        image_span(rows, in_pitch, cols),
        image_span(rows, out_pitch, cols),
    );
    // Aliasing: input and output in one buffer (which the library must refuse).
    let alias = op.alias == 1 && !input.null && !output.null;
    if alias {
        if !(fits(in_span, output.len(), size_of::<T>()) && output.fits(out_span)) {
            return;
        }
    } else if !(input.fits(in_span) && output.fits(out_span)) {
        return;
    }
    // Work: rows x cols is bounded by the buffers except when both are huge-
    // but-rejected; a rows value that is huge with a 0 span (cols 0, pitch 0)
    // is an impossible image too, which the library must reject.
    let mut slot = kp_box_filter_options_default();
    let opts = box_options(op.opts, &mut slot);
    let call = format!(
        "{name}(ctx, input={}, in_pitch={in_pitch}, output={}, out_pitch={out_pitch}, rows={rows}, cols={cols}, options={})",
        if alias { "output".to_string() } else { input.describe() },
        output.describe(),
        unsafe { opts.as_ref() }.map_or("NULL".into(), |o| format!("{o:?}"))
    );
    trace!("{call}");
    let in_before = input.snapshot();
    let out_before = output.snapshot();
    let in_ptr = if alias {
        output.mut_ptr() as *const T
    } else {
        input.ptr()
    };
    let status = unsafe {
        f(
            ctx(),
            in_ptr,
            in_pitch,
            output.mut_ptr(),
            out_pitch,
            rows,
            cols,
            opts,
        )
    };
    let ok = check_status(&call, status);
    if alias && in_span > 0 && out_span > 0 {
        assert!(!ok, "{call}: accepted an input that overlaps the output");
    }
    check_inputs(&call, &[("input", in_before, bytes_of(&input.data))]);
    let after = bytes_of(&output.data);
    if !ok {
        assert!(out_before == after, "{call}: failed but wrote to output");
    } else {
        // Only the first cols values of each of the rows are written.
        let size = size_of::<T>();
        for (i, (b, a)) in out_before.chunks(size).zip(after.chunks(size)).enumerate() {
            let written = rows > 0
                && (out_pitch == 0 || i / out_pitch < rows)
                && (if out_pitch == 0 {
                    i < cols
                } else {
                    i % out_pitch < cols
                });
            if !written {
                assert!(b == a, "{call}: wrote output[{i}], outside the image");
            }
        }
    }
    let _ = &mut input;
}

// --- Correlations and Gaussian filters ------------------------------------------

/// A Gaussian's sigma: small (v / 16, 0 skips the axis), or refused.
#[derive(Arbitrary, Debug, Clone, Copy)]
enum Sigma {
    Small(u8),
    Zero,
    Negative(u8),
    Nan,
    Inf,
    Huge,
}

impl Sigma {
    fn get(self) -> f64 {
        match self {
            Sigma::Small(v) => v as f64 / 16.0,
            Sigma::Zero => 0.0,
            Sigma::Negative(v) => -(v as f64 + 1.0) / 16.0,
            Sigma::Nan => f64::NAN,
            Sigma::Inf => f64::INFINITY,
            Sigma::Huge => 1e300,
        }
    }
}

/// A kernel radius: from truncate (negative), small, or past the largest
/// (refused). Radii between are valid but too much work per input.
#[derive(Arbitrary, Debug, Clone, Copy)]
enum Radius {
    FromTruncate(i8),
    Small(u8),
    TooLarge(u8),
}

impl Radius {
    fn get(self) -> i64 {
        match self {
            Radius::FromTruncate(v) => -1 - (v as i64).abs(),
            Radius::Small(v) => v as i64,
            Radius::TooLarge(i) => [1 << 19, 1 << 40, i64::MAX][i as usize % 3],
        }
    }
}

#[derive(Arbitrary, Debug, Clone, Copy)]
struct GaussSpec {
    sigma: Sigma,
    order: Field,
    /// truncate = v / 16, or NaN for 255.
    truncate: u8,
    radius: Radius,
    mode: Field,
    cval: FVal,
}

impl GaussSpec {
    fn get(self) -> kp_gaussian_options {
        kp_gaussian_options {
            sigma: self.sigma.get(),
            order: self.order.get(13),
            truncate: if self.truncate == 255 {
                f64::NAN
            } else {
                self.truncate as f64 / 16.0
            },
            radius: self.radius.get(),
            mode: self.mode.get(7),
            cval: self.cval.0,
        }
    }
}

#[derive(Arbitrary, Debug, Clone, Copy)]
enum CorrOpts {
    Null,
    Default,
    Fields { origin: i8, mode: Field, cval: FVal },
}

/// One size of an array's shape.
#[derive(Arbitrary, Debug, Clone, Copy)]
enum Dim {
    Small(u8),
    Zero,
    Huge(u8),
}

/// The sizes of an array's shape (at most 4).
fn shape_of(dims: &[Dim]) -> Vec<usize> {
    dims.iter()
        .take(4)
        .map(|d| match *d {
            Dim::Small(v) => v as usize % 24,
            Dim::Zero => 0,
            Dim::Huge(i) => HUGE[i as usize % HUGE.len()],
        })
        .collect()
}

#[derive(Arbitrary, Debug)]
struct CorrelateOp {
    input: BufSpec,
    output: OutSpec,
    /// At most 4 sizes; NULL for a null flag of 1.
    dims: Vec<Dim>,
    shape_null: u8,
    ndim: Count,
    axis: Num,
    weights: BufSpec,
    nweights: Count,
    opts: CorrOpts,
    /// Gaussian filter (else a correlation), with these options per axis
    /// (None: NULL).
    gaussian: bool,
    per_axis: Option<Vec<GaussSpec>>,
    alias: u8,
}

const CORRELATE_CAP: usize = 4096;
const WEIGHTS_CAP: usize = 64;

type CorrelateFn<T> = unsafe extern "C" fn(
    *const kp_context,
    *const T,
    *mut T,
    *const usize,
    usize,
    usize,
    *const f64,
    usize,
    *const kp_correlate_options,
) -> kp_status;
type GaussianFn<T> = unsafe extern "C" fn(
    *const kp_context,
    *const T,
    *mut T,
    *const usize,
    usize,
    *const kp_gaussian_options,
) -> kp_status;

fn correlate<T: Real>(f: (CorrelateFn<T>, GaussianFn<T>), name: &str, op: &CorrelateOp) {
    let input = op.input.make::<T>(CORRELATE_CAP);
    let mut output = op.output.make::<T>(CORRELATE_CAP);
    let shape = shape_of(&op.dims);
    let ndim = op.ndim.resolve(shape.len());
    if !fits(ndim as u128, shape.len(), size_of::<usize>()) {
        return;
    }
    // The array's values (over the sizes the library reads: the first ndim).
    let span = shape
        .iter()
        .take(ndim)
        .fold(1u128, |n, &d| n.saturating_mul(d as u128));
    let alias = op.alias == 1 && !input.null && !output.null;
    if alias {
        if !output.fits(span) {
            return;
        }
    } else if !(input.fits(span) && output.fits(span)) {
        return;
    }
    let weights = op.weights.make::<f64>(WEIGHTS_CAP);
    let nweights = op.nweights.resolve(weights.len());
    let per_axis: Option<Vec<kp_gaussian_options>> = op
        .per_axis
        .as_ref()
        .map(|v| v.iter().take(4).map(|g| g.get()).collect());
    let gauss_size = size_of::<kp_gaussian_options>();
    if op.gaussian {
        if let Some(p) = &per_axis {
            if !fits(ndim as u128, p.len(), gauss_size) {
                return;
            }
        }
    } else if !weights.fits(nweights as u128) {
        return;
    }
    let mut slot = kp_correlate_options_default();
    let opts: *const kp_correlate_options = match op.opts {
        CorrOpts::Null => ptr::null(),
        CorrOpts::Default => &slot as *const _,
        CorrOpts::Fields { origin, mode, cval } => {
            slot = kp_correlate_options {
                origin: origin as i64,
                cval: cval.0,
                mode: mode.get(7),
            };
            &slot as *const _
        }
    };
    let shape_ptr = if op.shape_null == 1 {
        ptr::null()
    } else {
        shape.as_ptr()
    };
    let per_axis_ptr = per_axis.as_ref().map_or(ptr::null(), |p| p.as_ptr());
    let axis = op.axis.get();
    let input_name = if alias {
        "output".to_string()
    } else {
        input.describe()
    };
    let call = if op.gaussian {
        format!(
            "kp_gaussian_filter_{name}(ctx, input={input_name}, output={}, shape={shape:?}, ndim={ndim}, per_axis={per_axis:?})",
            output.describe()
        )
    } else {
        format!(
            "kp_correlate1d_{name}(ctx, input={input_name}, output={}, shape={shape:?}, ndim={ndim}, axis={axis}, weights={}, nweights={nweights}, options={:?})",
            output.describe(),
            weights.describe(),
            unsafe { opts.as_ref() }
        )
    };
    trace!("{call}");
    let in_before = input.snapshot();
    let weights_before = weights.snapshot();
    let out_before = output.snapshot();
    let in_ptr = if alias {
        output.mut_ptr() as *const T
    } else {
        input.ptr()
    };
    let status = unsafe {
        if op.gaussian {
            f.1(
                ctx(),
                in_ptr,
                output.mut_ptr(),
                shape_ptr,
                ndim,
                per_axis_ptr,
            )
        } else {
            f.0(
                ctx(),
                in_ptr,
                output.mut_ptr(),
                shape_ptr,
                ndim,
                axis,
                weights.ptr(),
                nweights,
                opts,
            )
        }
    };
    let ok = check_status(&call, status);
    if alias && span > 0 {
        assert!(!ok, "{call}: accepted an input that overlaps the output");
    }
    check_inputs(
        &call,
        &[
            ("input", in_before, bytes_of(&input.data)),
            ("weights", weights_before, bytes_of(&weights.data)),
        ],
    );
    let span_bytes = clamp(span.saturating_mul(size_of::<T>() as u128));
    check_outputs(
        &call,
        ok,
        &[("output", out_before, bytes_of(&output.data), span_bytes)],
    );
}

// --- Rank filters ---------------------------------------------------------------

/// One size of a footprint's box: small (0 is an empty axis), or one whose
/// box no array could hold (refused before anything is allocated). Sizes
/// between are valid but too much work per input.
#[derive(Arbitrary, Debug, Clone, Copy)]
enum BoxSize {
    Small(u8),
    Huge(u8),
}

#[derive(Arbitrary, Debug)]
enum RankOpts {
    Null,
    Default,
    Fields {
        /// Sizes per axis (None: NULL, 3 along every axis).
        size: Option<[BoxSize; 4]>,
        /// The mask's bytes, repeated over the box (None: NULL, every point).
        footprint: Option<Vec<u8>>,
        /// None: NULL (centred).
        origin: Option<[i8; 4]>,
        rank_by: Field,
        mode: Field,
        rank: i8,
        percentile: FVal,
        cval: FVal,
    },
}

#[derive(Arbitrary, Debug)]
struct RankOp {
    /// 0 and 11 are no dtype.
    dtype: Field,
    input: BufSpec,
    output: OutSpec,
    /// At most 4 sizes; NULL for a null flag of 1.
    dims: Vec<Dim>,
    shape_null: u8,
    ndim: Count,
    opts: RankOpts,
    device: bool,
    alias: u8,
}

/// Doubles per buffer (8 to 64 bits an element: up to 4096 elements).
const RANK_CAP: usize = 512;

/// The bytes of an element of `dtype` (8 for an unknown one).
fn dtype_bytes(dtype: u32) -> usize {
    match dtype {
        KP_DTYPE_U8 | KP_DTYPE_I8 => 1,
        KP_DTYPE_U16 | KP_DTYPE_I16 => 2,
        KP_DTYPE_U32 | KP_DTYPE_I32 | KP_DTYPE_F32 => 4,
        _ => 8,
    }
}

fn rank(op: &RankOp) {
    let dtype = op.dtype.get(12);
    let elem = dtype_bytes(dtype);
    // The values are the bytes of these doubles, whatever the dtype.
    let input = op.input.make::<f64>(RANK_CAP);
    let mut output = op.output.make::<f64>(RANK_CAP);
    let fits_buf = |b: &Buf<f64>, span: u128| b.null || fits(span, b.len() * 8 / elem, elem);
    let shape = shape_of(&op.dims);
    let ndim = op.ndim.resolve(shape.len());
    if !fits(ndim as u128, shape.len(), size_of::<usize>()) {
        return;
    }
    let span = shape
        .iter()
        .take(ndim)
        .fold(1u128, |n, &d| n.saturating_mul(d as u128));
    let alias = op.alias == 1 && !input.null && !output.null;
    if alias {
        if !fits_buf(&output, span) {
            return;
        }
    } else if !(fits_buf(&input, span) && fits_buf(&output, span)) {
        return;
    }
    // The options, and the arrays they point to (4 values each: ndim is at
    // most 4 whenever the library gets as far as reading them).
    let mut slot = kp_rank_options_default();
    let size: Vec<usize>;
    let origin: Vec<i64>;
    let mut mask: Vec<u8> = Vec::new();
    let opts: *const kp_rank_options = match &op.opts {
        RankOpts::Null => ptr::null(),
        RankOpts::Default => &slot as *const _,
        RankOpts::Fields {
            size: s,
            footprint,
            origin: o,
            rank_by,
            mode,
            rank,
            percentile,
            cval,
        } => {
            size = s.map_or(vec![3; 4], |s| {
                s.iter()
                    .map(|b| match *b {
                        BoxSize::Small(v) => v as usize % 6,
                        BoxSize::Huge(i) => HUGE[i as usize % HUGE.len()],
                    })
                    .collect()
            });
            origin = o.map_or(Vec::new(), |o| o.iter().map(|&v| v as i64 % 4).collect());
            let points = size
                .iter()
                .take(ndim.min(4))
                .fold(1u128, |n, &d| n.saturating_mul(d as u128));
            if let Some(bytes) = footprint {
                if points <= RANK_CAP as u128 * 8 {
                    let bytes = if bytes.is_empty() { &[0u8][..] } else { bytes };
                    mask = (0..points as usize).map(|i| bytes[i % bytes.len()]).collect();
                } else if !fits(points, 0, 1) {
                    return;
                }
            }
            slot = kp_rank_options {
                size: if s.is_some() { size.as_ptr() } else { ptr::null() },
                footprint: if footprint.is_some() { mask.as_ptr() } else { ptr::null() },
                origin: if o.is_some() { origin.as_ptr() } else { ptr::null() },
                rank_by: rank_by.get(4),
                mode: mode.get(7),
                rank: *rank as i64,
                percentile: percentile.0,
                cval: cval.0,
            };
            &slot as *const _
        }
    };
    let shape_ptr = if op.shape_null == 1 {
        ptr::null()
    } else {
        shape.as_ptr()
    };
    let input_name = if alias {
        "output".to_string()
    } else {
        input.describe()
    };
    let name = if op.device {
        "kp_rank_filter_device"
    } else {
        "kp_rank_filter"
    };
    let call = format!(
        "{name}(ctx, dtype={dtype}, input={input_name} (doubles), output={} (doubles), shape={shape:?}, ndim={ndim}, options={:?}, footprint={mask:?})",
        output.describe(),
        unsafe { opts.as_ref() }
    );
    trace!("{call}");
    let in_before = input.snapshot();
    let out_before = output.snapshot();
    let in_ptr = if alias {
        output.mut_ptr() as *const f64
    } else {
        input.ptr()
    };
    if op.device {
        // Device pointers on a CPU context: refused whatever they are.
        let status = unsafe {
            kp_rank_filter_device(
                ctx(),
                dtype,
                in_ptr as u64,
                output.mut_ptr() as u64,
                shape_ptr,
                ndim,
                opts,
                0,
            )
        };
        check_fails(&call, status);
        check_outputs(
            &call,
            false,
            &[("output", out_before, bytes_of(&output.data), 0)],
        );
        return;
    }
    let status = unsafe {
        kp_rank_filter(
            ctx(),
            dtype,
            in_ptr.cast(),
            output.mut_ptr().cast(),
            shape_ptr,
            ndim,
            opts,
        )
    };
    let ok = check_status(&call, status);
    if alias && span > 0 {
        assert!(!ok, "{call}: accepted an input that overlaps the output");
    }
    check_inputs(&call, &[("input", in_before, bytes_of(&input.data))]);
    let span_bytes = clamp(span.saturating_mul(elem as u128));
    check_outputs(
        &call,
        ok,
        &[("output", out_before, bytes_of(&output.data), span_bytes)],
    );
}

// --- N-D box filter -------------------------------------------------------------

/// One window size of the box filter: small (0 is an empty window), at the
/// library's limits (2^31 - 1 is the largest window: valid, and the running
/// sums must not overflow on it), or past any limit. A pass costs about the
/// array's size whatever its window, so every size may be passed.
#[derive(Arbitrary, Debug, Clone, Copy)]
enum AxisSize {
    Small(u8),
    Edge(u8),
    Huge(u8),
}

/// One origin: near the window's range, or any value.
#[derive(Arbitrary, Debug, Clone, Copy)]
enum AxisOrigin {
    Small(i8),
    Any(i64),
}

#[derive(Arbitrary, Debug)]
enum UniformNdOpts {
    Null,
    /// kp_uniform_nd_options_default(): its size is NULL.
    Default,
    Fields {
        /// Sizes per axis (None: NULL, refused).
        size: Option<[AxisSize; 4]>,
        /// None: NULL (centred).
        origin: Option<[AxisOrigin; 4]>,
        /// None: NULL (reflect along every axis).
        mode: Option<[Field; 4]>,
        cval: FVal,
    },
}

#[derive(Arbitrary, Debug)]
struct UniformNdOp {
    /// 0 and 11 are no dtype.
    dtype: Field,
    input: BufSpec,
    output: OutSpec,
    /// At most 4 sizes; NULL for a null flag of 1.
    dims: Vec<Dim>,
    shape_null: u8,
    ndim: Count,
    opts: UniformNdOpts,
    device: bool,
    alias: u8,
}

/// Doubles per buffer (8 to 64 bits an element: up to 4096 elements).
const UNIFORM_CAP: usize = 512;

fn uniform_nd(op: &UniformNdOp) {
    let dtype = op.dtype.get(12);
    let elem = dtype_bytes(dtype);
    // The values are the bytes of these doubles, whatever the dtype.
    let input = op.input.make::<f64>(UNIFORM_CAP);
    let mut output = op.output.make::<f64>(UNIFORM_CAP);
    let fits_buf = |b: &Buf<f64>, span: u128| b.null || fits(span, b.len() * 8 / elem, elem);
    let shape = shape_of(&op.dims);
    let ndim = op.ndim.resolve(shape.len());
    if !fits(ndim as u128, shape.len(), size_of::<usize>()) {
        return;
    }
    let span = shape
        .iter()
        .take(ndim)
        .fold(1u128, |n, &d| n.saturating_mul(d as u128));
    let alias = op.alias == 1 && !input.null && !output.null;
    if alias {
        if !fits_buf(&output, span) {
            return;
        }
    } else if !(fits_buf(&input, span) && fits_buf(&output, span)) {
        return;
    }
    // The options, and the arrays they point to (4 values each: ndim is at
    // most 4 whenever the library gets as far as reading them).
    let mut slot = kp_uniform_nd_options_default();
    let size: Vec<usize>;
    let origin: Vec<i64>;
    let mode: Vec<u32>;
    let opts: *const kp_uniform_nd_options = match &op.opts {
        UniformNdOpts::Null => ptr::null(),
        UniformNdOpts::Default => &slot as *const _,
        UniformNdOpts::Fields {
            size: s,
            origin: o,
            mode: m,
            cval,
        } => {
            size = s.map_or(Vec::new(), |s| {
                s.iter()
                    .map(|v| match *v {
                        AxisSize::Small(v) => v as usize % 40,
                        AxisSize::Edge(i) => EDGE[i as usize % EDGE.len()],
                        AxisSize::Huge(i) => HUGE[i as usize % HUGE.len()],
                    })
                    .collect()
            });
            origin = o.map_or(Vec::new(), |o| {
                o.iter()
                    .map(|v| match *v {
                        AxisOrigin::Small(v) => v as i64 % 24,
                        AxisOrigin::Any(v) => v,
                    })
                    .collect()
            });
            mode = m.map_or(Vec::new(), |m| m.iter().map(|f| f.get(7)).collect());
            slot = kp_uniform_nd_options {
                size: if s.is_some() { size.as_ptr() } else { ptr::null() },
                origin: if o.is_some() { origin.as_ptr() } else { ptr::null() },
                mode: if m.is_some() { mode.as_ptr() } else { ptr::null() },
                cval: cval.0,
            };
            &slot as *const _
        }
    };
    let shape_ptr = if op.shape_null == 1 {
        ptr::null()
    } else {
        shape.as_ptr()
    };
    let input_name = if alias {
        "output".to_string()
    } else {
        input.describe()
    };
    let name = if op.device {
        "kp_uniform_filter_nd_device"
    } else {
        "kp_uniform_filter_nd"
    };
    let call = format!(
        "{name}(ctx, dtype={dtype}, input={input_name} (doubles), output={} (doubles), shape={shape:?}, ndim={ndim}, options={:?})",
        output.describe(),
        unsafe { opts.as_ref() }
    );
    trace!("{call}");
    let in_before = input.snapshot();
    let out_before = output.snapshot();
    let in_ptr = if alias {
        output.mut_ptr() as *const f64
    } else {
        input.ptr()
    };
    if op.device {
        // Device pointers on a CPU context: refused whatever they are.
        let status = unsafe {
            kp_uniform_filter_nd_device(
                ctx(),
                dtype,
                in_ptr as u64,
                output.mut_ptr() as u64,
                shape_ptr,
                ndim,
                opts,
                0,
            )
        };
        check_fails(&call, status);
        check_outputs(
            &call,
            false,
            &[("output", out_before, bytes_of(&output.data), 0)],
        );
        return;
    }
    let status = unsafe {
        kp_uniform_filter_nd(
            ctx(),
            dtype,
            in_ptr.cast(),
            output.mut_ptr().cast(),
            shape_ptr,
            ndim,
            opts,
        )
    };
    let ok = check_status(&call, status);
    if alias && span > 0 {
        assert!(!ok, "{call}: accepted an input that overlaps the output");
    }
    check_inputs(&call, &[("input", in_before, bytes_of(&input.data))]);
    let span_bytes = clamp(span.saturating_mul(elem as u128));
    check_outputs(
        &call,
        ok,
        &[("output", out_before, bytes_of(&output.data), span_bytes)],
    );
}

// --- Lorenz ---------------------------------------------------------------------

#[derive(Arbitrary, Debug)]
struct LorenzOp<P> {
    params: P,
    initial: BufSpec,
    members: Count,
    /// F, b, c per member (Lorenz 2005; Lorenz 96 takes none).
    each: [EachSpec; 3],
    steps: u8,
    huge_steps: Option<Wide>,
    every: Wide,
    out: OutSpec,
    trajectory: OutSpec,
    trajectory_len: OutLen,
    /// F per member passed over `out` (Lorenz 2005; must be refused).
    forcing_over_out: bool,
}

const LORENZ_CAP: usize = 512;
const TRAJ_CAP: usize = 4096;

/// `kp_lorenz96_{dtype}` (no per-member arguments) or `kp_lorenz05_{dtype}`
/// (F, b, c per member after `members`).
enum LorenzFn<T, P> {
    Scalars(
        unsafe extern "C" fn(
            *const kp_context,
            *const P,
            *const T,
            usize,
            u64,
            u64,
            *mut T,
            *mut T,
            usize,
        ) -> kp_status,
    ),
    PerMember(
        unsafe extern "C" fn(
            *const kp_context,
            *const P,
            *const T,
            usize,
            *const T,
            *const T,
            *const T,
            u64,
            u64,
            *mut T,
            *mut T,
            usize,
        ) -> kp_status,
    ),
}

/// `kp_lorenz96_save_at_{dtype}` or `kp_lorenz05_save_at_{dtype}`, as
/// [`LorenzFn`].
enum SaveAtFn<T, P> {
    Scalars(
        unsafe extern "C" fn(
            *const kp_context,
            *const P,
            *const T,
            usize,
            u64,
            *const u64,
            usize,
            *mut T,
            *mut T,
        ) -> kp_status,
    ),
    PerMember(
        unsafe extern "C" fn(
            *const kp_context,
            *const P,
            *const T,
            usize,
            *const T,
            *const T,
            *const T,
            u64,
            *const u64,
            usize,
            *mut T,
            *mut T,
        ) -> kp_status,
    ),
}

/// The per-member arrays of a call: `members` values each as `specs` say,
/// or all NULL for an entry point that takes none.
fn member_arrays<T: Real>(specs: &[EachSpec; 3], takes_each: bool, members: usize) -> [Buf<T>; 3] {
    specs.each_ref().map(|e| match takes_each {
        true => e.make_up_to(members, LORENZ_CAP),
        false => EachSpec::Null.make_up_to(0, 0),
    })
}

/// Whether a per-member array the call reads holds a value that is not
/// finite (the call must then fail).
fn any_not_finite<T: Real>(each: &[Buf<T>; 3], members: usize) -> bool {
    each.iter()
        .filter(|b| !b.null && b.len() >= members)
        .any(|b| b.data[..members].iter().any(|v| !v.is_finite()))
}

fn lorenz<T: Real, P: Debug + Copy, S: Copy>(
    f: LorenzFn<T, P>,
    name: &str,
    op: &LorenzOp<S>,
    params: impl Fn(S, &mut P) -> (*const P, usize),
    mut slot: P,
) {
    let (p, n) = params(op.params, &mut slot);
    let initial = op.initial.make::<T>(LORENZ_CAP);
    let members = op.members.resolve(if n == 0 {
        initial.len()
    } else {
        initial.len() / n
    });
    let takes_each = matches!(f, LorenzFn::PerMember(_));
    let each = member_arrays::<T>(&op.each, takes_each, members);
    let every = op.every.get();
    // Steps are work with no buffer behind them: few, except a huge count
    // whose trajectory no buffer could hold (every > 0, > 2^32 frames),
    // which must be refused before anything runs.
    let steps = match op.huge_steps {
        Some(s) if every > 0 && s.get() / every > 1 << 32 => s.get(),
        _ => op.steps as u64 % 9,
    };
    let len = members as u128 * n as u128;
    let needed = kp_lorenz_trajectory_len(members, n, steps, every);
    let (mut trajectory, trajectory_len) = match op.trajectory_len {
        OutLen::Matching(extra) if needed <= TRAJ_CAP => (
            op.trajectory.make_len::<T>(needed + extra as usize % 3),
            needed,
        ),
        OutLen::Matching(_) => (op.trajectory.make::<T>(TRAJ_CAP), needed),
        OutLen::Count(c) => {
            let t = op.trajectory.make::<T>(TRAJ_CAP);
            let l = c.resolve(t.len());
            (t, l)
        }
    };
    let out_len = if len <= LORENZ_CAP as u128 && op.out.len % 8 != 0 {
        len as usize
    } else {
        op.out.len as usize % (LORENZ_CAP + 1)
    };
    let mut out = op.out.make_len::<T>(out_len);
    if !(initial.fits(len) && out.fits(len) && each.iter().all(|b| b.fits(members as u128))) {
        return;
    }
    // The trajectory span is trajectory_len when every > 0; with every = 0
    // it may be anything (documented: then it may be NULL).
    if every > 0 && !trajectory.fits(trajectory_len as u128) {
        return;
    }
    // F over `out`: a span of `members` values inside out's (the call
    // states `members` x N of them, N >= 1).
    let forcing_over_out =
        takes_each && op.forcing_over_out && !out.null && out.fits(members as u128);
    let forcing = match forcing_over_out {
        true => out.ptr(),
        false => each[0].ptr(),
    };
    let call = format!(
        "{name}(ctx, params={}, initial={}, members={members}, forcing={}, b={}, c={}, steps={steps}, every={every}, out={}, trajectory={}, trajectory_len={trajectory_len})",
        unsafe { p.as_ref() }.map_or("NULL".into(), |q| format!("{q:?}")),
        initial.describe(),
        if forcing_over_out { "out".into() } else { each[0].describe() },
        each[1].describe(),
        each[2].describe(),
        out.describe(),
        trajectory.describe()
    );
    trace!("{call}");
    let in_before = initial.snapshot();
    let each_before = each.each_ref().map(|b| b.snapshot());
    let out_before = out.snapshot();
    let traj_before = trajectory.snapshot();
    let (out_ptr, traj_ptr) = (out.mut_ptr(), trajectory.mut_ptr());
    let status = unsafe {
        match f {
            LorenzFn::Scalars(f) => f(
                ctx(),
                p,
                initial.ptr(),
                members,
                steps,
                every,
                out_ptr,
                traj_ptr,
                trajectory_len,
            ),
            LorenzFn::PerMember(f) => f(
                ctx(),
                p,
                initial.ptr(),
                members,
                forcing,
                each[1].ptr(),
                each[2].ptr(),
                steps,
                every,
                out_ptr,
                traj_ptr,
                trajectory_len,
            ),
        }
    };
    let ok = check_status(&call, status);
    if ok && forcing_over_out && len > 0 {
        panic!("{call}: KP_OK with forcing over out");
    }
    if ok && !forcing_over_out && any_not_finite(&each, members) {
        panic!("{call}: KP_OK with a per-member value that is not finite");
    }
    let [b0, b1, b2] = each_before;
    check_inputs(
        &call,
        &[
            ("initial", in_before, bytes_of(&initial.data)),
            ("forcing", b0, bytes_of(&each[0].data)),
            ("b", b1, bytes_of(&each[1].data)),
            ("c", b2, bytes_of(&each[2].data)),
        ],
    );
    let traj_span = if every > 0 { trajectory_len } else { 0 };
    check_outputs(
        &call,
        ok,
        &[
            (
                "out",
                out_before,
                bytes_of(&out.data),
                clamp(len).saturating_mul(size_of::<T>()),
            ),
            (
                "trajectory",
                traj_before,
                bytes_of(&trajectory.data),
                traj_span.saturating_mul(size_of::<T>()),
            ),
        ],
    );
}

#[derive(Arbitrary, Debug)]
struct SaveAtOp<P> {
    params: P,
    initial: BufSpec,
    members: Count,
    /// F, b, c per member (Lorenz 2005; Lorenz 96 takes none).
    each: [EachSpec; 3],
    steps: u8,
    save_at: SaveSpec<Wide>,
    out: OutSpec,
    saved: OutSpec,
    /// 1: out over initial, 2: F per member over saved (Lorenz 2005), 3:
    /// the list over saved (each must be refused); else none.
    alias: u8,
}

/// `kp_lorenz96_save_at_{dtype}` / `kp_lorenz05_save_at_{dtype}`: the
/// states after the listed steps, valid lists and raw ones (unsorted,
/// repeated, past `steps`, NULL), F, b, c per member for Lorenz 2005.
fn lorenz_save_at<T: Real, P: Debug + Copy, S: Copy>(
    f: SaveAtFn<T, P>,
    name: &str,
    op: &SaveAtOp<S>,
    params: impl Fn(S, &mut P) -> (*const P, usize),
    mut slot: P,
) {
    let (p, n) = params(op.params, &mut slot);
    let initial = op.initial.make::<T>(LORENZ_CAP);
    let members = op.members.resolve(initial.len().checked_div(n).unwrap_or(0));
    let takes_each = matches!(f, SaveAtFn::PerMember(_));
    let each = member_arrays::<T>(&op.each, takes_each, members);
    let steps = op.steps as u64 % 9;
    let save = op.save_at.make(
        |picks| {
            let mut v: Vec<u64> = picks.iter().map(|&k| k as u64 % (steps + 1)).collect();
            v.sort_unstable();
            v.dedup();
            v
        },
        |w: Wide| w.get(),
    );
    let len = members as u128 * n as u128;
    let saved_span = (save.len as u128).saturating_mul(len);
    let mut out = l63_out::<T>(&op.out, len, LORENZ_CAP);
    let mut saved = l63_out::<T>(&op.saved, saved_span, TRAJ_CAP);
    if !(initial.fits(len)
        && out.fits(len)
        && each.iter().all(|b| b.fits(members as u128))
        && save.buf.fits(save.len as u128)
        && saved.fits(saved_span))
    {
        return;
    }
    // Each alias lies inside the buffer it overlaps (the spans the call
    // states are checked to fit above).
    let saved_bytes = saved.len() * size_of::<T>();
    let alias = match op.alias {
        1 if !initial.null => "out over initial",
        2 if takes_each && !saved.null && saved.fits(members as u128) => "forcing over saved",
        3 if !saved.null && fits(save.len as u128 * 8, saved_bytes, 1) => "save_at over saved",
        _ => "",
    };
    let out_ptr = match alias {
        "out over initial" => initial.ptr() as *mut T,
        _ => out.mut_ptr(),
    };
    let forcing = match alias {
        "forcing over saved" => saved.ptr(),
        _ => each[0].ptr(),
    };
    let save_ptr = match alias {
        "save_at over saved" => saved.ptr() as *const u64,
        _ => save.buf.ptr(),
    };
    let call = format!(
        "{name}(ctx, params={}, initial={}, members={members}, forcing={}, b={}, c={}, steps={steps}, save_at={}, save_len={}, out={}, saved={}) {alias}",
        unsafe { p.as_ref() }.map_or("NULL".into(), |q| format!("{q:?}")),
        initial.describe(),
        each[0].describe(),
        each[1].describe(),
        each[2].describe(),
        save.describe(),
        save.len,
        out.describe(),
        saved.describe(),
    );
    trace!("{call}");
    let in_before = initial.snapshot();
    let each_before = each.each_ref().map(|b| b.snapshot());
    let save_before = save.buf.snapshot();
    let out_before = out.snapshot();
    let saved_before = saved.snapshot();
    let saved_ptr = saved.mut_ptr();
    let status = unsafe {
        match f {
            SaveAtFn::Scalars(f) => f(
                ctx(),
                p,
                initial.ptr(),
                members,
                steps,
                save_ptr,
                save.len,
                out_ptr,
                saved_ptr,
            ),
            SaveAtFn::PerMember(f) => f(
                ctx(),
                p,
                initial.ptr(),
                members,
                forcing,
                each[1].ptr(),
                each[2].ptr(),
                steps,
                save_ptr,
                save.len,
                out_ptr,
                saved_ptr,
            ),
        }
    };
    let ok = check_status(&call, status);
    // What a success would have ignored: an overlap of non-empty spans, a
    // value that is not finite, a list not sorted and unique in 0..=steps.
    let overlap = match alias {
        "out over initial" => len > 0,
        "forcing over saved" => members > 0 && saved_span > 0,
        "save_at over saved" => save.len > 0 && saved_span > 0,
        _ => false,
    };
    if ok && overlap {
        panic!("{call}: KP_OK with {alias}");
    }
    if ok && alias.is_empty() && any_not_finite(&each, members) {
        panic!("{call}: KP_OK with a per-member value that is not finite");
    }
    if ok && !save.buf.null && alias.is_empty() {
        let list = &save.buf.data[..save.len.min(save.buf.len())];
        let valid = list.windows(2).all(|w| w[0] < w[1]) && list.iter().all(|&s| s <= steps);
        assert!(valid, "{call}: KP_OK with a list not sorted, unique and in range");
    }
    let [b0, b1, b2] = each_before;
    check_inputs(
        &call,
        &[
            ("initial", in_before, bytes_of(&initial.data)),
            ("forcing", b0, bytes_of(&each[0].data)),
            ("b", b1, bytes_of(&each[1].data)),
            ("c", b2, bytes_of(&each[2].data)),
            ("save_at", save_before, bytes_of(&save.buf.data)),
        ],
    );
    check_saved_outputs(
        &call,
        ok,
        (&out, out_before, len),
        (&saved, saved_before, saved_span),
        &initial,
        (steps, &save),
    );
}

// --- Lorenz 63 --------------------------------------------------------------------

#[derive(Arbitrary, Debug, Clone, Copy)]
enum L63Params {
    Null,
    Default,
    Fields {
        sigma: FVal,
        rho: FVal,
        beta: FVal,
        dt: FVal,
    },
}

fn l63_params(p: L63Params, slot: &mut kp_lorenz63_params) -> *const kp_lorenz63_params {
    match p {
        L63Params::Null => ptr::null(),
        L63Params::Default => {
            *slot = kp_lorenz63_default_params();
            slot
        }
        L63Params::Fields {
            sigma,
            rho,
            beta,
            dt,
        } => {
            *slot = kp_lorenz63_params {
                sigma: sigma.0,
                rho: rho.0,
                beta: beta.0,
                dt: dt.0,
            };
            slot
        }
    }
}

/// The end of an adaptive span: t0 plus at most 0.5, or anything (the work
/// is bounded by max_steps either way).
#[derive(Arbitrary, Debug, Clone, Copy)]
enum TEnd {
    Short(u8),
    Raw(FVal),
}

/// Adaptive parameters. The work per member is at most `max_steps` attempted
/// steps, so it is kept at 200 or fewer, except with NULL parameters (the
/// defaults: t in [0, 1], up to 100000 steps), used with at most 2 members.
#[derive(Arbitrary, Debug, Clone, Copy)]
enum L63AdaptiveParams {
    Null,
    Default {
        t_end: u8,
        max_steps: u8,
    },
    Fields {
        sigma: FVal,
        rho: FVal,
        beta: FVal,
        t0: FVal,
        t_end: TEnd,
        rtol: FVal,
        atol: FVal,
        first_step: FVal,
        max_step: FVal,
        max_steps: u8,
    },
}

fn l63_adaptive_params(
    p: L63AdaptiveParams,
    slot: &mut kp_lorenz63_adaptive_params,
) -> *const kp_lorenz63_adaptive_params {
    match p {
        L63AdaptiveParams::Null => ptr::null(),
        L63AdaptiveParams::Default { t_end, max_steps } => {
            *slot = kp_lorenz63_adaptive_params {
                t_end: (t_end % 51) as f64 / 100.0,
                max_steps: 1 + max_steps as u32 % 200,
                ..kp_lorenz63_adaptive_default_params()
            };
            slot
        }
        L63AdaptiveParams::Fields {
            sigma,
            rho,
            beta,
            t0,
            t_end,
            rtol,
            atol,
            first_step,
            max_step,
            max_steps,
        } => {
            *slot = kp_lorenz63_adaptive_params {
                sigma_all: sigma.0,
                rho_all: rho.0,
                beta_all: beta.0,
                t0: t0.0,
                t_end: match t_end {
                    TEnd::Short(s) => t0.0 + (s % 51) as f64 / 100.0,
                    TEnd::Raw(v) => v.0,
                },
                rtol: rtol.0,
                atol: atol.0,
                first_step: first_step.0,
                max_step: max_step.0,
                max_steps: max_steps as u32 % 201,
            };
            slot
        }
    }
}

const L63_MEMBERS_CAP: usize = 16;
const L63_STEPS_CAP: u8 = 50;
const L63_SAVE_CAP: usize = 8;
const L63_SAVED_CAP: usize = L63_SAVE_CAP * L63_MEMBERS_CAP * 3;

/// A per-member array (sigma, rho or beta): NULL (the shared value),
/// `members` long, or any length (passed only where it fits, see `fits`).
#[derive(Arbitrary, Debug)]
enum EachSpec {
    Null,
    Exact(BufSpec),
    Any(BufSpec),
}

impl EachSpec {
    fn make<T: Real>(&self, members: usize) -> Buf<T> {
        self.make_up_to(members, L63_MEMBERS_CAP)
    }

    /// As `make`, the length capped at `cap`.
    fn make_up_to<T: Real>(&self, members: usize, cap: usize) -> Buf<T> {
        match self {
            EachSpec::Null => Buf {
                data: Box::new([]),
                null: true,
            },
            EachSpec::Exact(b) if members <= cap => b.make_len(members),
            EachSpec::Exact(b) | EachSpec::Any(b) => b.make(cap),
        }
    }
}

/// A save list (step indices or times): none (NULL, 0), a valid one
/// (sorted, unique, in range; `picks` spread over the range), or raw values
/// (unsorted, repeated, out of range, NaN) with any count, NULL included.
#[derive(Arbitrary, Debug)]
enum SaveSpec<V> {
    None,
    Valid(Vec<u8>),
    Raw {
        values: Vec<V>,
        len: Count,
        null: bool,
    },
}

/// A save list as passed: the buffer and the stated length.
struct SaveList<V> {
    buf: Buf<V>,
    len: usize,
}

impl<V: Copy + Debug> SaveList<V> {
    fn describe(&self) -> String {
        if self.buf.null {
            "NULL".into()
        } else {
            format!("{:?}", self.buf.data)
        }
    }
}

impl<V: Copy> SaveSpec<V> {
    /// `valid` maps the sorted, deduplicated picks to values in range.
    fn make<R: Copy>(&self, valid: impl Fn(&[u8]) -> Vec<R>, raw: impl Fn(V) -> R) -> SaveList<R> {
        match self {
            SaveSpec::None => SaveList {
                buf: Buf {
                    data: Box::new([]),
                    null: true,
                },
                len: 0,
            },
            SaveSpec::Valid(picks) => {
                let mut picks: Vec<u8> = picks.iter().take(L63_SAVE_CAP).copied().collect();
                picks.sort_unstable();
                picks.dedup();
                let data: Box<[R]> = valid(&picks).into();
                let len = data.len();
                SaveList {
                    buf: Buf { data, null: false },
                    len,
                }
            }
            SaveSpec::Raw { values, len, null } => {
                let data: Box<[R]> = values.iter().take(L63_SAVE_CAP).map(|&v| raw(v)).collect();
                let len = len.resolve(data.len());
                SaveList {
                    buf: Buf { data, null: *null },
                    len,
                }
            }
        }
    }
}

/// A u32 output (accepted, rejected, status): `members` long unless `len`
/// says otherwise (any length up to the cap), poisoned.
fn counts_out(spec: &OutSpec, members: usize) -> Buf<u32> {
    let len = if members <= L63_MEMBERS_CAP && spec.len % 8 != 0 {
        members
    } else {
        spec.len as usize % (L63_MEMBERS_CAP + 1)
    };
    Buf {
        data: vec![0xa5a5_a5a5u32; len].into_boxed_slice(),
        null: spec.null == 1,
    }
}

/// An output of `span` values: that long unless `spec.len` says otherwise.
fn l63_out<T: Real>(spec: &OutSpec, span: u128, cap: usize) -> Buf<T> {
    if span <= cap as u128 && spec.len % 8 != 0 {
        spec.make_len(span as usize)
    } else {
        spec.make(cap)
    }
}

/// On success every value of an output's span is written: none keeps the
/// poison pattern (a NaN no computation produces).
fn check_written<T: Real>(call: &str, name: &str, ok: bool, buf: &Buf<T>, span: u128) {
    if ok && !buf.null {
        let n = clamp(span).min(buf.len());
        let poison = T::poison();
        let left = buf.data[..n]
            .iter()
            .position(|v| bytes_of(std::slice::from_ref(v)) == bytes_of(&[poison]));
        assert!(
            left.is_none(),
            "{call}: KP_OK but {name}[{left:?}] not written"
        );
    }
}

#[derive(Arbitrary, Debug)]
struct L63Op {
    params: L63Params,
    initial: BufSpec,
    members: Count,
    each: [EachSpec; 3],
    steps: u8,
    save_at: SaveSpec<Wide>,
    out: OutSpec,
    saved: OutSpec,
    /// out passed over initial (must be refused).
    alias: bool,
}

type L63Fn<T> = unsafe extern "C" fn(
    *const kp_context,
    *const kp_lorenz63_params,
    *const T,
    usize,
    *const T,
    *const T,
    *const T,
    u64,
    *const u64,
    usize,
    *mut T,
    *mut T,
) -> kp_status;

/// `kp_lorenz63_{f32,f64}`: fixed RK4 steps, save_at / save_len.
fn lorenz63<T: Real>(f: L63Fn<T>, name: &str, op: &L63Op) {
    let mut slot = kp_lorenz63_default_params();
    let p = l63_params(op.params, &mut slot);
    let initial = op.initial.make::<T>(3 * L63_MEMBERS_CAP);
    let members = op.members.resolve(initial.len() / 3);
    let len = members as u128 * 3;
    let each = op.each.each_ref().map(|e| e.make::<T>(members));
    let steps = (op.steps % (L63_STEPS_CAP + 1)) as u64;
    let save = op.save_at.make(
        |picks| {
            let mut v: Vec<u64> = picks.iter().map(|&k| k as u64 % (steps + 1)).collect();
            v.sort_unstable();
            v.dedup();
            v
        },
        |w: Wide| w.get(),
    );
    let saved_span = (save.len as u128).saturating_mul(len);
    let mut out = op.out.make_len::<T>(0);
    if !op.alias {
        out = l63_out::<T>(&op.out, len, 3 * L63_MEMBERS_CAP);
    }
    let mut saved = l63_out::<T>(&op.saved, saved_span, L63_SAVED_CAP);
    if !(initial.fits(len)
        && (op.alias || out.fits(len))
        && each.iter().all(|b| b.fits(members as u128))
        && save.buf.fits(save.len as u128)
        && saved.fits(saved_span))
    {
        return;
    }
    let out_ptr = if op.alias {
        initial.ptr() as *mut T
    } else {
        out.mut_ptr()
    };
    let call = format!(
        "{name}(ctx, params={}, initial={}, members={members}, sigma={}, rho={}, beta={}, steps={steps}, save_at={}, save_len={}, out={}, saved={})",
        unsafe { p.as_ref() }.map_or("NULL".into(), |q| format!("{q:?}")),
        initial.describe(),
        each[0].describe(),
        each[1].describe(),
        each[2].describe(),
        save.describe(),
        save.len,
        if op.alias { "initial".into() } else { out.describe() },
        saved.describe(),
    );
    trace!("{call}");
    let in_before = initial.snapshot();
    let each_before = each.each_ref().map(|b| b.snapshot());
    let save_before = save.buf.snapshot();
    let out_before = out.snapshot();
    let saved_before = saved.snapshot();
    let status = unsafe {
        f(
            ctx(),
            p,
            initial.ptr(),
            members,
            each[0].ptr(),
            each[1].ptr(),
            each[2].ptr(),
            steps,
            save.buf.ptr(),
            save.len,
            out_ptr,
            saved.mut_ptr(),
        )
    };
    let ok = check_status(&call, status);
    if op.alias && len > 0 && !initial.null {
        assert!(!ok, "{call}: KP_OK with out over initial");
    }
    let [b0, b1, b2] = each_before;
    check_inputs(
        &call,
        &[
            ("initial", in_before, bytes_of(&initial.data)),
            ("sigma", b0, bytes_of(&each[0].data)),
            ("rho", b1, bytes_of(&each[1].data)),
            ("beta", b2, bytes_of(&each[2].data)),
            ("save_at", save_before, bytes_of(&save.buf.data)),
        ],
    );
    check_saved_outputs(
        &call,
        ok,
        (&out, out_before, len),
        (&saved, saved_before, saved_span),
        &initial,
        (steps, &save),
    );
}

/// The outputs of a call that keeps the states after the listed steps
/// (Lorenz 63, 96, 2005): `out` of `len` values and `saved` of `saved_span`,
/// each with its bytes before the call. Untouched on failure; on success
/// written in full and nothing past their spans, the state after 0 steps
/// `initial` itself (`out` when `steps` is 0, a frame saved at step 0).
fn check_saved_outputs<T: Real>(
    call: &str,
    ok: bool,
    (out, out_before, len): (&Buf<T>, Vec<u8>, u128),
    (saved, saved_before, saved_span): (&Buf<T>, Vec<u8>, u128),
    initial: &Buf<T>,
    (steps, save): (u64, &SaveList<u64>),
) {
    let size = size_of::<T>();
    check_outputs(
        call,
        ok,
        &[
            (
                "out",
                out_before,
                bytes_of(&out.data),
                clamp(len).saturating_mul(size),
            ),
            (
                "saved",
                saved_before,
                bytes_of(&saved.data),
                clamp(saved_span).saturating_mul(size),
            ),
        ],
    );
    if !ok {
        return;
    }
    check_written(call, "out", ok, out, len);
    check_written(call, "saved", ok, saved, saved_span);
    let frame = clamp(len);
    if steps == 0 && !out.null {
        assert!(
            bytes_of(&out.data[..frame]) == bytes_of(&initial.data[..frame]),
            "{call}: 0 steps but out differs from initial"
        );
    }
    if !saved.null && save.len > 0 {
        for (k, &at) in save.buf.data.iter().enumerate().take(save.len) {
            if at == 0 {
                let got = &saved.data[k * frame..(k + 1) * frame];
                assert!(
                    bytes_of(got) == bytes_of(&initial.data[..frame]),
                    "{call}: saved frame {k} (step 0) differs from initial"
                );
            }
        }
    }
}

#[derive(Arbitrary, Debug)]
struct L63AdaptiveOp {
    params: L63AdaptiveParams,
    initial: BufSpec,
    members: Count,
    each: [EachSpec; 3],
    save_times: SaveSpec<FVal>,
    out: OutSpec,
    saved: OutSpec,
    /// accepted, rejected, status.
    counts: [OutSpec; 3],
    /// 1: out over initial, 2: status over accepted (both must be refused).
    alias: u8,
}

type L63AdaptiveFn<T> = unsafe extern "C" fn(
    *const kp_context,
    *const kp_lorenz63_adaptive_params,
    *const T,
    usize,
    *const T,
    *const T,
    *const T,
    *const f64,
    usize,
    *mut T,
    *mut T,
    *mut u32,
    *mut u32,
    *mut u32,
) -> kp_status;

/// `kp_lorenz63_adaptive_{f32,f64}`: Dormand-Prince over [t0, t_end],
/// save_times / save_len, optional accepted / rejected / status.
fn lorenz63_adaptive<T: Real>(f: L63AdaptiveFn<T>, name: &str, op: &L63AdaptiveOp) {
    let mut slot = kp_lorenz63_adaptive_default_params();
    let p = l63_adaptive_params(op.params, &mut slot);
    let c = unsafe { p.as_ref() }
        .copied()
        .unwrap_or_else(|| kp_lorenz63_adaptive_default_params());
    let initial = op.initial.make::<T>(3 * L63_MEMBERS_CAP);
    let mut members = op.members.resolve(initial.len() / 3);
    if p.is_null() && members <= L63_MEMBERS_CAP {
        // The defaults allow 100000 steps per member.
        members = members.min(2);
    }
    let len = members as u128 * 3;
    let each = op.each.each_ref().map(|e| e.make::<T>(members));
    let (t0, t_end) = (c.t0, c.t_end);
    let save = op.save_times.make(
        |picks| {
            let mut v: Vec<f64> = picks
                .iter()
                .map(|&k| match k {
                    255 => t_end,
                    _ => (t0 + (t_end - t0) * k as f64 / 255.0).min(t_end),
                })
                .collect();
            v.dedup();
            v
        },
        |v: FVal| v.0,
    );
    let saved_span = (save.len as u128).saturating_mul(len);
    let alias = op.alias % 3;
    let mut out = l63_out::<T>(&op.out, len, 3 * L63_MEMBERS_CAP);
    if alias == 1 {
        out = op.out.make_len::<T>(0);
    }
    let mut saved = l63_out::<T>(&op.saved, saved_span, L63_SAVED_CAP);
    let mut counts = op.counts.each_ref().map(|s| counts_out(s, members));
    if !(initial.fits(len)
        && (alias == 1 || out.fits(len))
        && each.iter().all(|b| b.fits(members as u128))
        && save.buf.fits(save.len as u128)
        && saved.fits(saved_span)
        && counts.iter().all(|b| b.fits(members as u128)))
    {
        return;
    }
    let out_ptr = if alias == 1 {
        initial.ptr() as *mut T
    } else {
        out.mut_ptr()
    };
    let [acc_ptr, rej_ptr, mut status_ptr] = counts.each_mut().map(|b| b.mut_ptr());
    if alias == 2 {
        status_ptr = acc_ptr;
    }
    let call = format!(
        "{name}(ctx, params={}, initial={}, members={members}, sigma={}, rho={}, beta={}, save_times={}, save_len={}, out={}, saved={}, accepted={}, rejected={}, status={})",
        unsafe { p.as_ref() }.map_or("NULL".into(), |q| format!("{q:?}")),
        initial.describe(),
        each[0].describe(),
        each[1].describe(),
        each[2].describe(),
        save.describe(),
        save.len,
        if alias == 1 { "initial".into() } else { out.describe() },
        saved.describe(),
        counts[0].describe(),
        counts[1].describe(),
        if alias == 2 { "accepted".into() } else { counts[2].describe() },
    );
    trace!("{call}");
    let in_before = initial.snapshot();
    let each_before = each.each_ref().map(|b| b.snapshot());
    let save_before = save.buf.snapshot();
    let out_before = out.snapshot();
    let saved_before = saved.snapshot();
    let counts_before = counts.each_ref().map(|b| b.snapshot());
    let status = unsafe {
        f(
            ctx(),
            p,
            initial.ptr(),
            members,
            each[0].ptr(),
            each[1].ptr(),
            each[2].ptr(),
            save.buf.ptr(),
            save.len,
            out_ptr,
            saved.mut_ptr(),
            acc_ptr,
            rej_ptr,
            status_ptr,
        )
    };
    let ok = check_status(&call, status);
    if alias == 1 && len > 0 && !initial.null {
        assert!(!ok, "{call}: KP_OK with out over initial");
    }
    if alias == 2 && members > 0 && !acc_ptr.is_null() {
        assert!(!ok, "{call}: KP_OK with status over accepted");
    }
    let [b0, b1, b2] = each_before;
    check_inputs(
        &call,
        &[
            ("initial", in_before, bytes_of(&initial.data)),
            ("sigma", b0, bytes_of(&each[0].data)),
            ("rho", b1, bytes_of(&each[1].data)),
            ("beta", b2, bytes_of(&each[2].data)),
            ("save_times", save_before, bytes_of(&save.buf.data)),
        ],
    );
    let size = size_of::<T>();
    let count_bytes = members.saturating_mul(4);
    let [c0, c1, c2] = counts_before;
    check_outputs(
        &call,
        ok,
        &[
            (
                "out",
                out_before,
                bytes_of(&out.data),
                clamp(len).saturating_mul(size),
            ),
            (
                "saved",
                saved_before,
                bytes_of(&saved.data),
                clamp(saved_span).saturating_mul(size),
            ),
            ("accepted", c0, bytes_of(&counts[0].data), count_bytes),
            ("rejected", c1, bytes_of(&counts[1].data), count_bytes),
            ("status", c2, bytes_of(&counts[2].data), count_bytes),
        ],
    );
    if !ok {
        return;
    }
    check_written(&call, "out", ok, &out, len);
    check_written(&call, "saved", ok, &saved, saved_span);
    let [accepted, rejected, status] = &counts;
    for m in 0..members {
        let code = (!status.null && alias != 2).then(|| status.data[m]);
        if let Some(code) = code {
            assert!(
                code <= KP_LORENZ63_STEP_TOO_SMALL,
                "{call}: status[{m}] = {code:#x}, not a KP_LORENZ63_* code"
            );
        }
        if !accepted.null && !rejected.null {
            let tried = accepted.data[m] as u64 + rejected.data[m] as u64;
            assert!(
                tried <= c.max_steps as u64,
                "{call}: member {m} tried {tried} steps, more than max_steps"
            );
        }
        // A member that reached t_end has a finite final state.
        if code == Some(KP_LORENZ63_REACHED) && !out.null {
            let state = &out.data[3 * m..3 * m + 3];
            assert!(
                state.iter().all(|v| !v.is_nan()),
                "{call}: member {m} reached t_end with a NaN state {state:?}"
            );
        }
    }
}

#[derive(Arbitrary, Debug)]
struct WindowOp {
    x: BufSpec,
    w: BufSpec,
    w_len: Count,
    rows: Count,
    n: Num,
    out: OutSpec,
}

const WINDOW_CAP: usize = 1024;

type WindowFn<T> = unsafe extern "C" fn(
    *const kp_context,
    *const T,
    *const T,
    usize,
    usize,
    usize,
    *mut T,
) -> kp_status;

fn window_sum<T: Real>(f: WindowFn<T>, name: &str, op: &WindowOp) {
    let x = op.x.make::<T>(WINDOW_CAP);
    let w = op.w.make::<T>(64);
    let w_len = op.w_len.resolve(w.len());
    let n = match op.n {
        Num::Small(v) => v as usize % 65,
        other => other.get(),
    };
    let rows = op.rows.resolve(if n == 0 { x.len() } else { x.len() / n });
    let len = rows as u128 * n as u128;
    let out_len = if len <= WINDOW_CAP as u128 && op.out.len % 8 != 0 {
        len as usize
    } else {
        op.out.len as usize % (WINDOW_CAP + 1)
    };
    let mut out = op.out.make_len::<T>(out_len);
    if !(x.fits(len) && out.fits(len) && w.fits(w_len as u128)) {
        return;
    }
    let call = format!(
        "{name}(ctx, x={}, w={}, w_len={w_len}, rows={rows}, n={n}, out={})",
        x.describe(),
        w.describe(),
        out.describe()
    );
    trace!("{call}");
    let before = (x.snapshot(), w.snapshot(), out.snapshot());
    let status = unsafe { f(ctx(), x.ptr(), w.ptr(), w_len, rows, n, out.mut_ptr()) };
    let ok = check_status(&call, status);
    check_inputs(
        &call,
        &[
            ("x", before.0, bytes_of(&x.data)),
            ("w", before.1, bytes_of(&w.data)),
        ],
    );
    check_outputs(
        &call,
        ok,
        &[(
            "out",
            before.2,
            bytes_of(&out.data),
            clamp(len).saturating_mul(size_of::<T>()),
        )],
    );
}

// --- F/G ------------------------------------------------------------------------

#[derive(Arbitrary, Debug)]
struct FgOp {
    f: BufSpec,
    g: BufSpec,
    n: Count,
    delta0: (FVal, FVal),
    dt: FVal,
    nsteps: Count,
    delta: OutSpec,
    delta_len: OutLen,
    independent: bool,
}

const FG_CAP: usize = 2 * 16 * 16;
const FG_STEPS_CAP: usize = 32;

type FgFn<T> = unsafe extern "C" fn(
    *const kp_context,
    usize,
    *mut T,
    *mut T,
    T,
    T,
    T,
    usize,
    *mut T,
    usize,
) -> kp_status;

fn isqrt(v: usize) -> usize {
    let mut r = (v as f64).sqrt() as usize;
    while r * r > v {
        r -= 1;
    }
    while (r + 1) * (r + 1) <= v {
        r += 1;
    }
    r
}

fn fg<T: Real>(func: FgFn<T>, name: &str, op: &FgOp) {
    let mut f = op.f.make::<T>(FG_CAP);
    let mut g = if op.independent {
        op.g.make::<T>(FG_CAP)
    } else {
        op.g.make_len::<T>(f.len())
    };
    let n = op.n.resolve(isqrt(f.len().min(g.len()) / 2));
    let nsteps = op.nsteps.resolve(FG_STEPS_CAP);
    let (mut delta, delta_len) = match op.delta_len {
        OutLen::Matching(extra) if nsteps < FG_STEPS_CAP + 1 => (
            op.delta
                .make_len::<T>(2 * (nsteps + 1) + extra as usize % 3),
            nsteps.wrapping_add(1),
        ),
        OutLen::Matching(_) => (
            op.delta.make::<T>(2 * (FG_STEPS_CAP + 1)),
            nsteps.wrapping_add(1),
        ),
        OutLen::Count(c) => {
            let d = op.delta.make::<T>(2 * (FG_STEPS_CAP + 1));
            let l = c.resolve(d.len() / 2);
            (d, l)
        }
    };
    let elems = 2u128.saturating_mul((n as u128).saturating_mul(n as u128));
    if !(f.fits(elems) && g.fits(elems) && delta.fits(2 * delta_len as u128)) {
        return;
    }
    let (d0re, d0im, dt) = (
        T::from_f64(op.delta0.0 .0),
        T::from_f64(op.delta0.1 .0),
        T::from_f64(op.dt.0),
    );
    let call = format!(
        "{name}(ctx, n={n}, f={}, g={}, delta0=({d0re:?}, {d0im:?}), dt={dt:?}, nsteps={nsteps}, delta={}, delta_len={delta_len})",
        f.describe(),
        g.describe(),
        delta.describe()
    );
    trace!("{call}");
    let before = (f.snapshot(), g.snapshot(), delta.snapshot());
    let status = unsafe {
        func(
            ctx(),
            n,
            f.mut_ptr(),
            g.mut_ptr(),
            d0re,
            d0im,
            dt,
            nsteps,
            delta.mut_ptr(),
            delta_len,
        )
    };
    let ok = check_status(&call, status);
    let state = clamp(elems).saturating_mul(size_of::<T>());
    check_outputs(
        &call,
        ok,
        &[
            ("f", before.0, bytes_of(&f.data), state),
            ("g", before.1, bytes_of(&g.data), state),
            (
                "delta",
                before.2,
                bytes_of(&delta.data),
                delta_len.saturating_mul(2 * size_of::<T>()),
            ),
        ],
    );
}

// --- Device pointers and streams on a CPU context -------------------------------

#[derive(Arbitrary, Debug)]
struct DeviceOp {
    which: u8,
    ptrs: [u64; 6],
    sizes: [Num; 4],
    reals: [FVal; 3],
    stream: u64,
    ls: LsOpts,
    bx: BoxOpts,
    l96: L96Params,
    l05: L05Params,
    l63: L63Params,
    l63a: L63AdaptiveParams,
}

fn device(op: &DeviceOp) {
    let c = ctx();
    let [p0, p1, p2, p3, p4, p5] = op.ptrs;
    let [s0, s1, s2, s3] = op.sizes.map(Num::get);
    let [r0, r1, r2] = op.reals.map(|v| v.0);
    let st = op.stream;
    let mut ls_slot = kp_lombscargle_options_default();
    let ls = ls_options(op.ls, &mut ls_slot);
    let mut box_slot = kp_box_filter_options_default();
    let bx = box_options(op.bx, &mut box_slot);
    let mut l96_slot = kp_lorenz96_default_params();
    let (l96, _) = l96_params(op.l96, &mut l96_slot);
    let mut l05_slot = kp_lorenz05_default_params();
    let (l05, _) = l05_params(op.l05, &mut l05_slot);
    let mut l63_slot = kp_lorenz63_default_params();
    let l63 = l63_params(op.l63, &mut l63_slot);
    let mut l63a_slot = kp_lorenz63_adaptive_default_params();
    let l63a = l63_adaptive_params(op.l63a, &mut l63a_slot);
    const NAMES: [&str; 34] = [
        "kp_lombscargle_device_f32",
        "kp_lombscargle_device_f64",
        "kp_lombscargle_uniform_device_f32",
        "kp_lombscargle_uniform_device_f64",
        "kp_lombscargle_batch_device_f32",
        "kp_lombscargle_batch_device_f64",
        "kp_sum_device_f32",
        "kp_sum_device_f64",
        "kp_normalize_device_f32",
        "kp_normalize_device_f64",
        "kp_normalize_batched_device_f32",
        "kp_normalize_batched_device_f64",
        "kp_box_filter_device_f32",
        "kp_box_filter_device_f64",
        "kp_lorenz96_device_f64",
        "kp_lorenz96_device_f32",
        "kp_lorenz05_device_f64",
        "kp_lorenz05_device_f32",
        "kp_window_sum_device_f64",
        "kp_window_sum_device_f32",
        "kp_fg_integrate_device_c64",
        "kp_fg_integrate_device_c128",
        "kp_device_free",
        "kp_stream_synchronize",
        "kp_device_alloc",
        "kp_memcpy_dtoh",
        "kp_lorenz63_device_f32",
        "kp_lorenz63_device_f64",
        "kp_lorenz63_adaptive_device_f32",
        "kp_lorenz63_adaptive_device_f64",
        "kp_lorenz96_save_at_device_f32",
        "kp_lorenz96_save_at_device_f64",
        "kp_lorenz05_save_at_device_f32",
        "kp_lorenz05_save_at_device_f64",
    ];
    let which = op.which as usize % NAMES.len();
    let call = format!(
        "{} (see device() for the argument order: ptrs {:x?}, sizes {s0} {s1} {s2} {s3}, reals {r0:e} {r1:e} {r2:e}, stream {st:#x}, ls {}, box {:?}, l96 {:?}, l05 {:?}, l63 {:?}, l63a {:?}; save_at / save_times NULL, save_len = sizes[3])",
        NAMES[which],
        op.ptrs,
        describe_ls_opts(ls),
        unsafe { bx.as_ref() },
        unsafe { l96.as_ref() },
        unsafe { l05.as_ref() },
        unsafe { l63.as_ref() },
        unsafe { l63a.as_ref() },
    );
    trace!("{call}");
    let status = unsafe {
        match which {
            0 => kp_lombscargle_device_f32(c, p0, p1, p2, s0, p3, s1, ls, p4, s2, st),
            1 => kp_lombscargle_device_f64(c, p0, p1, p2, s0, p3, s1, ls, p4, s2, st),
            2 => kp_lombscargle_uniform_device_f32(c, p0, p1, p2, s0, r0, r1, s1, ls, p4, s2, st),
            3 => kp_lombscargle_uniform_device_f64(c, p0, p1, p2, s0, r0, r1, s1, ls, p4, s2, st),
            4 => kp_lombscargle_batch_device_f32(
                c, p0, p1, p2, p3, s0, p4, p5, s1, s2, ls, p0, s3, st,
            ),
            5 => kp_lombscargle_batch_device_f64(
                c, p0, p1, p2, p3, s0, p4, p5, s1, s2, ls, p0, s3, st,
            ),
            6 => kp_sum_device_f32(c, p0, s0, p1, st),
            7 => kp_sum_device_f64(c, p0, s0, p1, st),
            8 => kp_normalize_device_f32(c, p0, s0, p1, p2, st),
            9 => kp_normalize_device_f64(c, p0, s0, p1, p2, st),
            10 => kp_normalize_batched_device_f32(c, p0, s0, p1, s1, p2, p3, st),
            11 => kp_normalize_batched_device_f64(c, p0, s0, p1, s1, p2, p3, st),
            12 => kp_box_filter_device_f32(c, p0, s0, p1, s1, s2, s3, bx, st),
            13 => kp_box_filter_device_f64(c, p0, s0, p1, s1, s2, s3, bx, st),
            14 => kp_lorenz96_device_f64(c, l96, p0, s0, s1 as u64, s2 as u64, p1, p2, s3, st),
            15 => kp_lorenz96_device_f32(c, l96, p0, s0, s1 as u64, s2 as u64, p1, p2, s3, st),
            // F, b, c per member: the last three addresses.
            16 => kp_lorenz05_device_f64(c, l05, p0, s0, p3, p4, p5, s1 as u64, s2 as u64, p1, p2, s3, st),
            17 => kp_lorenz05_device_f32(c, l05, p0, s0, p3, p4, p5, s1 as u64, s2 as u64, p1, p2, s3, st),
            18 => kp_window_sum_device_f64(c, p0, p1, s0, s1, s2, s3, p2, st),
            19 => kp_window_sum_device_f32(c, p0, p1, s0, s1, s2, s3, p2, st),
            20 => kp_fg_integrate_device_c64(
                c, s0, p0, p1, r0 as f32, r1 as f32, r2 as f32, s1, p2, s2, st,
            ),
            21 => kp_fg_integrate_device_c128(c, s0, p0, p1, r0, r1, r2, s1, p2, s2, st),
            22 => kp_device_free(c, p0),
            23 => kp_stream_synchronize(c, st),
            24 => {
                let mut d = 0x5a5au64;
                let s = kp_device_alloc(c, s0, &mut d);
                assert_eq!(
                    d, 0x5a5a,
                    "{call}: kp_device_alloc wrote *dptr on a CPU context"
                );
                s
            }
            25 => kp_memcpy_dtoh(c, ptr::null_mut(), p0, 0),
            // The save lists are host memory: NULL, with a length that is
            // 0 or must be refused.
            26 => kp_lorenz63_device_f32(
                c,
                l63,
                p0,
                s0,
                p1,
                p2,
                p3,
                s1 as u64,
                ptr::null(),
                s3,
                p4,
                p5,
                st,
            ),
            27 => kp_lorenz63_device_f64(
                c,
                l63,
                p0,
                s0,
                p1,
                p2,
                p3,
                s1 as u64,
                ptr::null(),
                s3,
                p4,
                p5,
                st,
            ),
            28 => kp_lorenz63_adaptive_device_f32(
                c,
                l63a,
                p0,
                s0,
                p1,
                p2,
                p3,
                ptr::null(),
                s3,
                p4,
                p5,
                p0 ^ p5,
                st,
            ),
            29 => kp_lorenz63_adaptive_device_f64(
                c,
                l63a,
                p0,
                s0,
                p1,
                p2,
                p3,
                ptr::null(),
                s3,
                p4,
                p5,
                p0 ^ p5,
                st,
            ),
            30 => kp_lorenz96_save_at_device_f32(c, l96, p0, s0, s1 as u64, ptr::null(), s3, p1, p2, st),
            31 => kp_lorenz96_save_at_device_f64(c, l96, p0, s0, s1 as u64, ptr::null(), s3, p1, p2, st),
            32 => kp_lorenz05_save_at_device_f32(
                c,
                l05,
                p0,
                s0,
                p3,
                p4,
                p5,
                s1 as u64,
                ptr::null(),
                s3,
                p1,
                p2,
                st,
            ),
            _ => kp_lorenz05_save_at_device_f64(
                c,
                l05,
                p0,
                s0,
                p3,
                p4,
                p5,
                s1 as u64,
                ptr::null(),
                s3,
                p1,
                p2,
                st,
            ),
        }
    };
    if which == 22 && p0 == 0 {
        // Freeing 0 is a no-op on any context, as free(NULL).
        assert_eq!(status, kp_status::KP_OK, "{call}: freeing 0 failed");
    } else {
        check_fails(&call, status);
    }
}

#[derive(Arbitrary, Debug)]
struct StreamOp {
    which: u8,
    handles: [u64; 2],
    bytes: Count,
    buf: u16,
    null_out: bool,
}

fn streams(op: &StreamOp) {
    let c = ctx();
    let [h0, h1] = op.handles;
    let mut host = vec![0xa5u8; op.buf as usize % 4097].into_boxed_slice();
    let bytes = op.bytes.resolve(host.len());
    if !fits(bytes as u128, host.len(), 1) {
        return;
    }
    let before = host.to_vec();
    let call = format!(
        "streams #{} (handles {h0:#x} {h1:#x}, host buf[{}], bytes {bytes}, null_out {})",
        op.which % 14,
        host.len(),
        op.null_out
    );
    trace!("{call}");
    let mut out_u64 = 0x5a5au64;
    let mut out_ptr: *mut c_void = 0x5a50 as *mut c_void;
    let mut ms = -7.0f32;
    let status = unsafe {
        match op.which % 14 {
            0 => kp_stream_create(
                c,
                if op.null_out {
                    ptr::null_mut()
                } else {
                    &mut out_u64
                },
            ),
            1 => kp_stream_destroy(c, h0),
            2 => kp_event_create(
                c,
                if op.null_out {
                    ptr::null_mut()
                } else {
                    &mut out_u64
                },
            ),
            3 => kp_event_destroy(c, h0),
            4 => kp_event_record(c, h0, h1),
            5 => kp_event_synchronize(c, h0),
            6 => kp_event_elapsed_ms(
                c,
                h0,
                h1,
                if op.null_out {
                    ptr::null_mut()
                } else {
                    &mut ms
                },
            ),
            7 => kp_stream_wait_event(c, h0, h1),
            8 => kp_host_alloc_pinned(
                c,
                bytes,
                if op.null_out {
                    ptr::null_mut()
                } else {
                    &mut out_ptr
                },
            ),
            9 => kp_host_free_pinned(
                c,
                if op.null_out {
                    ptr::null_mut()
                } else {
                    host.as_mut_ptr().cast()
                },
            ),
            10 => kp_memcpy_htod_async(c, h0, host.as_ptr().cast(), bytes, h1),
            11 => kp_memcpy_dtoh_async(c, host.as_mut_ptr().cast(), h0, bytes, h1),
            12 => kp_memcpy_htod(c, h0, host.as_ptr().cast(), bytes),
            _ => kp_memcpy_dtoh(c, host.as_mut_ptr().cast(), h0, bytes),
        }
    };
    if op.which % 14 == 9 && op.null_out {
        // Freeing NULL is a no-op on any context, as free(NULL).
        assert_eq!(status, kp_status::KP_OK, "{call}: freeing NULL failed");
    } else {
        check_fails(&call, status);
    }
    assert_eq!(out_u64, 0x5a5a, "{call}: failed but wrote a handle");
    assert_eq!(
        out_ptr as usize, 0x5a50,
        "{call}: failed but wrote a pointer"
    );
    assert_eq!(ms, -7.0, "{call}: failed but wrote *ms");
    assert!(
        before[..] == host[..],
        "{call}: failed but wrote host memory"
    );
}

// --- BLS ----------------------------------------------------------------------

type BlsFn<T> = unsafe extern "C" fn(
    *const kp_context,
    *const kp_bls_options,
    *const T,
    *const T,
    *const T,
    usize,
    *const T,
    usize,
    *const T,
    usize,
    *mut T,
    *mut T,
    *mut T,
    *mut T,
    *mut T,
    *mut T,
    *mut T,
) -> kp_status;

type BlsBatchFn<T> = unsafe extern "C" fn(
    *const kp_context,
    *const kp_bls_options,
    *const T,
    *const T,
    *const T,
    *const i64,
    usize,
    *const T,
    usize,
    *const T,
    usize,
    *mut T,
    *mut T,
    *mut T,
    *mut T,
    *mut T,
    *mut T,
    *mut T,
) -> kp_status;

type BlsPeaksFn<T> = unsafe extern "C" fn(
    *const kp_context,
    *const kp_bls_options,
    *const T,
    *const T,
    *const T,
    *const i64,
    usize,
    *const T,
    usize,
    *const T,
    usize,
    *const kp_peak_options,
    *mut i64,
    *mut T,
    *mut T,
    *mut T,
    *mut T,
    *mut T,
    *mut T,
    *mut T,
) -> kp_status;

#[derive(Arbitrary, Debug, Clone, Copy)]
enum BlsOpts {
    Null,
    Default,
    Fields { objective: Field, oversample: Num },
}

fn bls_options(o: BlsOpts, slot: &mut kp_bls_options) -> *const kp_bls_options {
    match o {
        BlsOpts::Null => ptr::null(),
        BlsOpts::Default => {
            *slot = kp_bls_options_default();
            slot
        }
        BlsOpts::Fields {
            objective,
            oversample,
        } => {
            *slot = kp_bls_options {
                objective: objective.get(3),
                // Small ones mostly (0 is refused), any u32 sometimes.
                oversample: oversample.get() as u32,
            };
            slot
        }
    }
}

/// Trial periods or durations: plausible ones (positive, increasing from
/// `lo`), so that searches run, or any values.
#[derive(Arbitrary, Debug)]
enum TrialSpec {
    Plausible { first: u8, step: u8, len: u8 },
    Raw(BufSpec),
}

const BLS_SERIES_CAP: usize = 256;
const BLS_TRIALS_CAP: usize = 48;
const BLS_OUT_CAP: usize = 1024;

impl TrialSpec {
    /// Plausible values start at `lo` + first * `scale` / 16 and step by
    /// step * `scale` / 256.
    fn make<T: Real>(&self, lo: f64, scale: f64) -> Buf<T> {
        match self {
            TrialSpec::Plausible { first, step, len } => {
                let start = lo + *first as f64 * scale / 16.0;
                let data = (0..*len as usize % (BLS_TRIALS_CAP + 1))
                    .map(|k| T::from_f64(start + k as f64 * *step as f64 * scale / 256.0))
                    .collect();
                Buf { data, null: false }
            }
            TrialSpec::Raw(spec) => spec.make(BLS_TRIALS_CAP),
        }
    }
}

/// The seven outputs: each `len` long; now and then one of them NULL
/// (`null` >= 240) or passed where another is too (`alias.0` >= 240: the
/// same buffer twice).
#[derive(Arbitrary, Debug, Clone, Copy)]
struct BlsOutSpec {
    len: u16,
    extra: u8,
    null: u8,
    alias: (u8, u8, u8),
}

struct BlsOut<T> {
    bufs: Vec<Buf<T>>,
    ptrs: [*mut T; 7],
}

impl BlsOutSpec {
    /// Buffers for a call that writes `needed` values per output: that many
    /// and a few more when they can be had, else an arbitrary length (the
    /// call is then made only when no buffer could hold `needed`).
    fn make<T: Real>(&self, needed: u128) -> BlsOut<T> {
        let len = if needed <= BLS_OUT_CAP as u128 {
            needed as usize + self.extra as usize % 4
        } else {
            self.len as usize % (BLS_OUT_CAP + 1)
        };
        let null_at = (self.null as usize).checked_sub(240).map(|v| v % 7);
        let mut bufs: Vec<Buf<T>> = (0..7)
            .map(|k| Buf {
                data: vec![T::poison(); len].into_boxed_slice(),
                null: null_at == Some(k),
            })
            .collect();
        let mut ptrs: [*mut T; 7] = std::array::from_fn(|k| bufs[k].mut_ptr());
        let (on, from, to) = self.alias;
        if on >= 240 {
            ptrs[to as usize % 7] = ptrs[from as usize % 7];
        }
        BlsOut { bufs, ptrs }
    }
}

impl<T: Real> BlsOut<T> {
    fn fits(&self, span: u128) -> bool {
        self.bufs.iter().all(|b| b.fits(span))
    }
    fn snapshots(&self) -> Vec<Vec<u8>> {
        self.bufs.iter().map(|b| b.snapshot()).collect()
    }
    /// Each output as NULL, its buffer, or `outJ` when it is output J's.
    fn describe(&self) -> String {
        let mut parts = Vec::new();
        for (k, &p) in self.ptrs.iter().enumerate() {
            let owner = self.bufs.iter().position(|b| b.ptr() == p as *const T);
            parts.push(match owner {
                _ if p.is_null() => "NULL".into(),
                Some(j) if j != k => format!("out{j}"),
                _ => self.bufs[k].describe(),
            });
        }
        parts.join(", ")
    }
    /// Untouched on failure; nothing past `span` values on success.
    fn check(&self, call: &str, ok: bool, before: Vec<Vec<u8>>, span: usize) {
        const NAMES: [&str; 7] = [
            "power",
            "depth",
            "depth_err",
            "duration",
            "transit_time",
            "depth_snr",
            "log_likelihood",
        ];
        let bytes = span.saturating_mul(size_of::<T>());
        let outputs: Vec<(&str, Vec<u8>, &[u8], usize)> = NAMES
            .iter()
            .zip(before)
            .zip(&self.bufs)
            .map(|((name, b), buf)| (*name, b, bytes_of(&buf.data), bytes))
            .collect();
        check_outputs(call, ok, &outputs);
        if ok {
            for (k, p) in self.ptrs.iter().enumerate() {
                assert!(!p.is_null(), "{call}: KP_OK with {} NULL", NAMES[k]);
                assert!(
                    !self.ptrs[..k].contains(p),
                    "{call}: KP_OK with {} over another output",
                    NAMES[k]
                );
            }
        }
    }
}

#[derive(Arbitrary, Debug)]
struct BlsOp {
    series: SeriesSpec,
    periods: TrialSpec,
    nperiods: Count,
    durations: TrialSpec,
    ndurations: Count,
    opts: BlsOpts,
    out: BlsOutSpec,
}

fn bls<T: Real>(f: BlsFn<T>, name: &str, op: &BlsOp) {
    let s = op.series.make::<T>(BLS_SERIES_CAP);
    let n = op.series.nx.resolve(s.min_len());
    let periods = op.periods.make::<T>(0.5, 1.0);
    let nperiods = op.nperiods.resolve(periods.len());
    let durations = op.durations.make::<T>(0.01, 0.05);
    let ndurations = op.ndurations.resolve(durations.len());
    let mut slot = kp_bls_options_default();
    let opts = bls_options(op.opts, &mut slot);
    let out = op.out.make::<T>(nperiods as u128);
    if !(s.fits(n as u128)
        && periods.fits(nperiods as u128)
        && durations.fits(ndurations as u128)
        && out.fits(nperiods as u128))
    {
        return;
    }
    let call = format!(
        "{name}(ctx, options={:?}, {}, n={n}, periods={}{:?}, nperiods={nperiods}, durations={}{:?}, ndurations={ndurations}, out=[{}])",
        unsafe { opts.as_ref() },
        s.describe(),
        periods.describe(),
        periods.data,
        durations.describe(),
        durations.data,
        out.describe()
    );
    trace!("{call}");
    let inputs = s.snapshots();
    let trials = (periods.snapshot(), durations.snapshot());
    let before = out.snapshots();
    let p = out.ptrs;
    let status = unsafe {
        f(
            ctx(),
            opts,
            s.t.ptr(),
            s.y.ptr(),
            s.w_ptr(),
            n,
            periods.ptr(),
            nperiods,
            durations.ptr(),
            ndurations,
            p[0],
            p[1],
            p[2],
            p[3],
            p[4],
            p[5],
            p[6],
        )
    };
    let ok = check_status(&call, status);
    s.check_unchanged(&call, &inputs);
    check_inputs(
        &call,
        &[
            ("periods", trials.0, bytes_of(&periods.data)),
            ("durations", trials.1, bytes_of(&durations.data)),
        ],
    );
    out.check(&call, ok, before, nperiods);
}

#[derive(Arbitrary, Debug)]
struct BlsBatchOp {
    series: SeriesSpec,
    series_count: u8,
    offsets: OffsetsSpec,
    offsets_null: u8,
    nseries: Count,
    periods: TrialSpec,
    nperiods: Count,
    durations: TrialSpec,
    ndurations: Count,
    opts: BlsOpts,
    out: BlsOutSpec,
    peaks: PeaksSpec,
    peaks_out: BlsOutSpec,
}

fn bls_batch<T: Real>((f, peaks): (BlsBatchFn<T>, BlsPeaksFn<T>), name: &str, op: &BlsBatchOp) {
    let s = op.series.make::<T>(BLS_SERIES_CAP);
    let (offsets, nseries) = ragged_offsets(
        &op.offsets,
        op.series_count,
        op.offsets_null,
        op.nseries,
        &s,
    );
    let periods = op.periods.make::<T>(0.5, 1.0);
    let nperiods = op.nperiods.resolve(periods.len());
    let durations = op.durations.make::<T>(0.01, 0.05);
    let ndurations = op.ndurations.resolve(durations.len());
    let mut slot = kp_bls_options_default();
    let opts = bls_options(op.opts, &mut slot);
    // Each output holds nseries x nperiods values (a product that may
    // overflow a size_t: the library must refuse it before reading).
    let needed = nseries as u128 * nperiods as u128;
    let out = op.out.make::<T>(needed);
    if !(ragged_fits(&offsets, nseries, &s)
        && periods.fits(nperiods as u128)
        && durations.fits(ndurations as u128)
        && out.fits(needed))
    {
        return;
    }
    let call = format!(
        "{name}(ctx, options={:?}, {}, offsets={}{:?}, nseries={nseries}, periods={}{:?}, nperiods={nperiods}, durations={}{:?}, ndurations={ndurations}, out=[{}])",
        unsafe { opts.as_ref() },
        s.describe(),
        offsets.describe(),
        offsets.data,
        periods.describe(),
        periods.data,
        durations.describe(),
        durations.data,
        out.describe()
    );
    trace!("{call}");
    let inputs = s.snapshots();
    let others = (offsets.snapshot(), periods.snapshot(), durations.snapshot());
    let before = out.snapshots();
    let p = out.ptrs;
    let status = unsafe {
        f(
            ctx(),
            opts,
            s.t.ptr(),
            s.y.ptr(),
            s.w_ptr(),
            offsets.ptr(),
            nseries,
            periods.ptr(),
            nperiods,
            durations.ptr(),
            ndurations,
            p[0],
            p[1],
            p[2],
            p[3],
            p[4],
            p[5],
            p[6],
        )
    };
    let ok = check_status(&call, status);
    s.check_unchanged(&call, &inputs);
    check_inputs(
        &call,
        &[
            ("offsets", others.0, bytes_of(&offsets.data)),
            ("periods", others.1, bytes_of(&periods.data)),
            ("durations", others.2, bytes_of(&durations.data)),
        ],
    );
    out.check(&call, ok, before, clamp(needed));

    // The best periods of the same batch: `k` per series, in `index` and
    // the seven fields.
    let mut args = op.peaks.make(nseries);
    let out = op.peaks_out.make::<T>(args.span);
    let Some(index) = args.index_ptr(&offsets).filter(|_| out.fits(args.span)) else {
        return;
    };
    let call = call.replacen(name, &name.replace("batch", "batch_peaks"), 1);
    let call = format!(
        "{call} with {}, fields=[{}]",
        args.describe(),
        out.describe()
    );
    trace!("{call}");
    let before = (args.index.snapshot(), out.snapshots(), offsets.snapshot());
    let p = out.ptrs;
    let status = unsafe {
        peaks(
            ctx(),
            opts,
            s.t.ptr(),
            s.y.ptr(),
            s.w_ptr(),
            offsets.ptr(),
            nseries,
            periods.ptr(),
            nperiods,
            durations.ptr(),
            ndurations,
            args.opts_ptr(),
            index,
            p[0],
            p[1],
            p[2],
            p[3],
            p[4],
            p[5],
            p[6],
        )
    };
    let ok = check_status(&call, status);
    s.check_unchanged(&call, &inputs);
    check_inputs(&call, &[("offsets", before.2, bytes_of(&offsets.data))]);
    out.check(&call, ok, before.1, clamp(args.span));
    let found = args.check(&call, ok, before.0, nseries, nperiods as u128);
    // A peak's power is a number (never -inf: a period without a box is no
    // peak); past a series' last peak every field is NaN.
    for (r, &found) in found.iter().enumerate() {
        let row = r * args.k..(r + 1) * args.k;
        let power = &out.bufs[0].data[row.clone()];
        assert!(
            power[..found]
                .iter()
                .all(|v| !v.is_nan() && *v != T::from_f64(f64::NEG_INFINITY)),
            "{call}: series {r}: powers {power:?}"
        );
        for b in &out.bufs {
            let v = &b.data[row.clone()];
            assert!(
                v[found..].iter().all(|v| v.is_nan()),
                "{call}: series {r}: padding {v:?}"
            );
        }
    }
}

/// The offsets of a ragged batch over the series buffers `s`: `count`
/// picks 1 to 8 series, `null` == 1 passes NULL; and the `nseries` passed.
fn ragged_offsets<T: Real>(
    spec: &OffsetsSpec,
    count: u8,
    null: u8,
    nseries: Count,
    s: &SeriesBufs<T>,
) -> (Buf<i64>, usize) {
    let k = 1 + count as usize % 8;
    let offsets = Buf {
        data: spec.make(k + 1, s.min_len()).into_boxed_slice(),
        null: null == 1,
    };
    (offsets, nseries.resolve(k))
}

/// The spans a ragged batch states may be passed: `nseries + 1` offsets,
/// and the samples up to `offsets[nseries]` when that entry exists.
fn ragged_fits<T: Real>(offsets: &Buf<i64>, nseries: usize, s: &SeriesBufs<T>) -> bool {
    let total = if offsets.null {
        None
    } else {
        offsets.data.get(nseries)
    };
    offsets.fits(nseries as u128 + 1) && total.is_none_or(|&n| s.fits(n as u128))
}

// --- PDM and conditional entropy ------------------------------------------------

/// The signature of a phase-folding entry point: `ctx`, the options, `t`,
/// `y`, `dy`, the samples' and the frequencies' arguments, `out`.
macro_rules! fold_fn {
    ($($arg:ty),*) => {
        unsafe extern "C" fn(
            *const kp_context, *const O, *const T, *const T, *const T, $($arg,)* *mut T,
        ) -> kp_status
    };
}
type FoldFn<T, O> = fold_fn!(usize, *const T, usize);
type FoldUniformFn<T, O> = fold_fn!(usize, f64, f64, usize);
type FoldBatchFn<T, O> = fold_fn!(*const i64, usize, *const T, usize);
type FoldBatchUniformFn<T, O> = fold_fn!(*const i64, usize, f64, f64, usize);

/// The signature of a batch's peaks entry point: the batch's arguments up
/// to the frequencies', then the peak options, `index` and `value`.
macro_rules! fold_peaks_fn {
    ($($arg:ty),*) => {
        unsafe extern "C" fn(
            *const kp_context, *const O, *const T, *const T, *const T, *const i64, usize,
            $($arg,)* *const kp_peak_options, *mut i64, *mut f64,
        ) -> kp_status
    };
}
type FoldPeaksFn<T, O> = fold_peaks_fn!(*const T, usize);
type FoldUniformPeaksFn<T, O> = fold_peaks_fn!(f64, f64, usize);

/// The six entry points of one statistic and dtype: one series on an
/// array and on a grid, a batch on an array and on a grid, and the batch's
/// peaks on an array and on a grid.
type FoldFns<T, O> = (
    FoldFn<T, O>,
    FoldUniformFn<T, O>,
    FoldBatchFn<T, O>,
    FoldBatchUniformFn<T, O>,
    FoldPeaksFn<T, O>,
    FoldUniformPeaksFn<T, O>,
);

/// A phase-folding option struct from four decoded fields (PDM takes the
/// first): small values mostly, any u32 sometimes.
trait FoldOptions: Copy + Debug {
    fn default_options() -> Self;
    fn from_fields(f: [Field; 4]) -> Self;
    /// The count updates one sample makes per frequency when the options
    /// are valid (CE's overlaps), to cap the work of a call.
    fn updates(&self) -> u128;
}

impl FoldOptions for kp_pdm_options {
    fn default_options() -> Self {
        kp_pdm_options_default()
    }
    fn from_fields(f: [Field; 4]) -> Self {
        kp_pdm_options { bins: f[0].get(4100) }
    }
    fn updates(&self) -> u128 {
        1
    }
}

impl FoldOptions for kp_ce_options {
    fn default_options() -> Self {
        kp_ce_options_default()
    }
    fn from_fields(f: [Field; 4]) -> Self {
        kp_ce_options {
            phase_bins: f[0].get(40),
            mag_bins: f[1].get(20),
            phase_overlap: f[2].get(6),
            mag_overlap: f[3].get(6),
        }
    }
    fn updates(&self) -> u128 {
        (self.phase_overlap as u128 + 1) * (self.mag_overlap as u128 + 1)
    }
}

#[derive(Arbitrary, Debug, Clone, Copy)]
enum FoldOpts {
    Null,
    Default,
    Fields([Field; 4]),
}

/// The trial frequencies: an array (plausible ones or any values) and its
/// count, or a grid.
#[derive(Arbitrary, Debug)]
enum FoldFreqSpec {
    Array(TrialSpec, Count),
    Grid(FVal, FVal, Num),
}

/// One series, or a ragged batch (offsets, their count, NULL, nseries).
#[derive(Arbitrary, Debug)]
enum FoldShape {
    Single,
    Batch(OffsetsSpec, u8, u8, Count),
}

#[derive(Arbitrary, Debug)]
struct FoldOp {
    series: SeriesSpec,
    shape: FoldShape,
    freqs: FoldFreqSpec,
    opts: FoldOpts,
    out: OutSpec,
    extra: u8,
    /// >= 240: `out` is y's buffer (the library must refuse the overlap).
    alias: u8,
    peaks: PeaksSpec,
}

const FOLD_SERIES_CAP: usize = 256;
const FOLD_OUT_CAP: usize = 1024;
/// The most count updates a call may make (samples x frequencies x CE's
/// overlaps), so that an input runs in milliseconds.
const FOLD_WORK_CAP: u128 = 1 << 22;

fn fold<T: Real, O: FoldOptions>(fns: FoldFns<T, O>, name: &str, op: &FoldOp) {
    let s = op.series.make::<T>(FOLD_SERIES_CAP);
    let mut slot = O::default_options();
    let opts: *const O = match op.opts {
        FoldOpts::Null => ptr::null(),
        FoldOpts::Default => &slot,
        FoldOpts::Fields(f) => {
            slot = O::from_fields(f);
            &slot
        }
    };
    let updates = unsafe { opts.as_ref() }.map_or(1, O::updates);
    // The samples and the rows of the call.
    let (batch, n, rows) = match &op.shape {
        FoldShape::Single => (None, op.series.nx.resolve(s.min_len()), 1),
        FoldShape::Batch(spec, count, null, nseries) => {
            let (offsets, nseries) = ragged_offsets(spec, *count, *null, *nseries, &s);
            if !ragged_fits(&offsets, nseries, &s) {
                return;
            }
            (Some(offsets), s.min_len(), nseries)
        }
    };
    let (array, nf, grid) = match &op.freqs {
        FoldFreqSpec::Array(spec, count) => {
            let freqs = spec.make::<T>(0.0, 1.0);
            let nf = count.resolve(freqs.len());
            if !freqs.fits(nf as u128) {
                return;
            }
            (Some(freqs), nf, (0.0, 0.0))
        }
        FoldFreqSpec::Grid(f0, df, nf) => (None, nf.get(), (f0.0, df.0)),
    };
    let needed = rows as u128 * nf as u128;
    let len = if needed <= FOLD_OUT_CAP as u128 {
        needed as usize + op.extra as usize % 4
    } else {
        op.out.len as usize % (FOLD_OUT_CAP + 1)
    };
    let mut out = op.out.make_len::<T>(len);
    let aliased = op.alias >= 240;
    let out_ptr = if aliased {
        s.y.ptr() as *mut T
    } else {
        out.mut_ptr()
    };
    let out_room = if aliased { s.y.len() } else { out.len() };
    // A grid has no buffer of its own: its count is the output's, which must
    // fit (or be impossible) as any stated span.
    if !(s.fits(n as u128) && fits(needed, out_room, size_of::<T>())) {
        return;
    }
    let work = (n as u128).saturating_mul(nf as u128).saturating_mul(updates);
    if needed <= FOLD_OUT_CAP as u128 && work > FOLD_WORK_CAP {
        return;
    }
    let shape = match (&batch, &array) {
        (None, Some(_)) => "",
        (None, None) => "_uniform",
        (Some(_), Some(_)) => "_batch",
        (Some(_), None) => "_batch_uniform",
    };
    let suffix = if size_of::<T>() == 4 { "f32" } else { "f64" };
    let freqs_arg = match &array {
        Some(f) => format!("freqs={}{:?}", f.describe(), f.data),
        None => format!("f0={:e}, df={:e}", grid.0, grid.1),
    };
    let rows_arg = match &batch {
        Some(o) => format!("offsets={}{:?}, nseries={rows}", o.describe(), o.data),
        None => format!("n={n}"),
    };
    let out_arg = if aliased { "y".into() } else { out.describe() };
    let call = format!(
        "{name}{shape}_{suffix}(ctx, options={:?}, {}, {rows_arg}, {freqs_arg}, nf={nf}, out={out_arg})",
        unsafe { opts.as_ref() },
        s.describe(),
    );
    trace!("{call}");
    let inputs = s.snapshots();
    let others = (
        batch.as_ref().map(Buf::snapshot),
        array.as_ref().map(Buf::snapshot),
    );
    let before = out.snapshot();
    let (t, y, dy) = (s.t.ptr(), s.y.ptr(), s.w_ptr());
    let status = unsafe {
        match (&batch, &array) {
            (None, Some(f)) => fns.0(ctx(), opts, t, y, dy, n, f.ptr(), nf, out_ptr),
            (None, None) => fns.1(ctx(), opts, t, y, dy, n, grid.0, grid.1, nf, out_ptr),
            (Some(o), Some(f)) => fns.2(ctx(), opts, t, y, dy, o.ptr(), rows, f.ptr(), nf, out_ptr),
            (Some(o), None) => fns.3(ctx(), opts, t, y, dy, o.ptr(), rows, grid.0, grid.1, nf, out_ptr),
        }
    };
    let ok = check_status(&call, status);
    s.check_unchanged(&call, &inputs);
    if let (Some(o), Some(b)) = (&batch, others.0) {
        check_inputs(&call, &[("offsets", b, bytes_of(&o.data))]);
    }
    if let (Some(f), Some(b)) = (&array, others.1) {
        check_inputs(&call, &[("freqs", b, bytes_of(&f.data))]);
    }
    let span = clamp(needed).saturating_mul(size_of::<T>());
    check_outputs(&call, ok, &[("out", before, bytes_of(&out.data), span)]);
    assert!(!(ok && aliased), "{call}: KP_OK with out over y");

    // The peaks of the same batch: `k` per series. The work is the batch's,
    // capped above, or its `nf` is one the library must refuse (an output
    // of `nseries * nf` no allocation can hold, over at most 8 series, is
    // also a frequency array too large).
    let Some(offsets) = &batch else {
        return;
    };
    let mut args = op.peaks.make(rows);
    let mut value = op.peaks.value(&args);
    let Some(index) = args.index_ptr(offsets).filter(|_| value.fits(args.span)) else {
        return;
    };
    let call = format!(
        "{name}{shape}_peaks_{suffix}(ctx, options={:?}, {}, {rows_arg}, {freqs_arg}, nf={nf}, {}, value={})",
        unsafe { opts.as_ref() },
        s.describe(),
        args.describe(),
        value.describe(),
    );
    trace!("{call}");
    let others = (offsets.snapshot(), array.as_ref().map(Buf::snapshot));
    let before = (args.index.snapshot(), value.snapshot());
    let (off, opt, vx) = (offsets.ptr(), args.opts_ptr(), value.mut_ptr());
    let status = unsafe {
        match &array {
            Some(f) => fns.4(
                ctx(),
                opts,
                t,
                y,
                dy,
                off,
                rows,
                f.ptr(),
                nf,
                opt,
                index,
                vx,
            ),
            None => fns.5(
                ctx(),
                opts,
                t,
                y,
                dy,
                off,
                rows,
                grid.0,
                grid.1,
                nf,
                opt,
                index,
                vx,
            ),
        }
    };
    let ok = check_status(&call, status);
    s.check_unchanged(&call, &inputs);
    check_inputs(&call, &[("offsets", others.0, bytes_of(&offsets.data))]);
    if let (Some(f), Some(b)) = (&array, others.1) {
        check_inputs(&call, &[("freqs", b, bytes_of(&f.data))]);
    }
    let span = clamp(args.span).saturating_mul(size_of::<f64>());
    check_outputs(
        &call,
        ok,
        &[("value", before.1, bytes_of(&value.data), span)],
    );
    // Each series: peaks (an index among the frequencies, a value), then
    // padding (index -1, value NaN) to k.
    let found = args.check(&call, ok, before.0, rows, nf as u128);
    check_peak_values(&call, &value.data, args.k, &found);
}

// --- Multiband Lomb-Scargle ------------------------------------------------------

/// The signature of a multiband entry point: `ctx`, the options, `t`, `y`,
/// `dy`, `bands`, the samples' and the frequencies' arguments, `out`.
macro_rules! multiband_fn {
    ($($arg:ty),*) => {
        unsafe extern "C" fn(
            *const kp_context, *const kp_multiband_options, *const T, *const T, *const T,
            *const u32, $($arg,)* *mut T,
        ) -> kp_status
    };
}
type MultibandFn<T> = multiband_fn!(usize, *const T, usize);
type MultibandUniformFn<T> = multiband_fn!(usize, f64, f64, usize);
type MultibandBatchFn<T> = multiband_fn!(*const i64, usize, f64, f64, usize);
type MultibandPeaksFn<T> = unsafe extern "C" fn(
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

/// The four entry points of one dtype: one series on an array and on a
/// grid, a ragged batch on one grid and its best peaks.
type MultibandFns<T> = (
    MultibandFn<T>,
    MultibandUniformFn<T>,
    MultibandBatchFn<T>,
    MultibandPeaksFn<T>,
);

#[derive(Arbitrary, Debug, Clone, Copy)]
enum MultibandOpts {
    Null,
    Default,
    Fields {
        method: Field,
        nterms_base: Field,
        nterms_band: Field,
        /// Any value: NaN (none), negative, infinite, huge.
        reg_base: FVal,
        reg_band: FVal,
        flags: [Field; 3],
        normalization: Field,
    },
}

fn multiband_options(
    o: MultibandOpts,
    slot: &mut kp_multiband_options,
) -> *const kp_multiband_options {
    match o {
        MultibandOpts::Null => ptr::null(),
        MultibandOpts::Default => {
            *slot = kp_multiband_options_default();
            slot
        }
        MultibandOpts::Fields {
            method,
            nterms_base,
            nterms_band,
            reg_base,
            reg_band,
            flags,
            normalization,
        } => {
            // Known values a little past the valid ones (method 2,
            // nterms 4, normalization 4), any u32 sometimes.
            *slot = kp_multiband_options {
                method: method.get(3),
                nterms_base: nterms_base.get(5),
                nterms_band: nterms_band.get(5),
                reg_base: reg_base.0,
                reg_band: reg_band.0,
                regularize_by_trace: flags[0].get(2),
                center_data: flags[1].get(2),
                fit_mean: flags[2].get(2),
                normalization: normalization.get(5),
            };
            slot
        }
    }
}

/// The band labels: up to 8 distinct labels (any u32) picked sample by
/// sample, as long as the series' buffers unless `len` is given; now and
/// then NULL.
#[derive(Arbitrary, Debug)]
struct BandsSpec {
    labels: Vec<u32>,
    picks: Vec<u8>,
    len: Option<u16>,
    null: u8,
}

impl BandsSpec {
    fn make(&self, series_len: usize, cap: usize) -> Buf<u32> {
        let len = self.len.map_or(series_len, |l| l as usize % (cap + 1));
        let labels: Vec<u32> = self.labels.iter().take(8).copied().collect();
        let data = (0..len)
            .map(|i| match (labels.len(), self.picks.len()) {
                (0, _) => 0,
                (_, 0) => labels[i % labels.len()],
                (nl, np) => labels[self.picks[i % np] as usize % nl],
            })
            .collect();
        Buf {
            data,
            null: self.null == 1,
        }
    }
}

/// One series on an array of frequencies (plausible ones or any values) or
/// a grid, or a ragged batch (offsets, their count, NULL, nseries) on a
/// grid.
#[derive(Arbitrary, Debug)]
enum MultibandShape {
    Array(TrialSpec, Count),
    Grid(FVal, FVal, Num),
    Batch(OffsetsSpec, u8, u8, Count, FVal, FVal, Num),
}

#[derive(Arbitrary, Debug)]
struct MultibandOp {
    series: SeriesSpec,
    bands: BandsSpec,
    shape: MultibandShape,
    opts: MultibandOpts,
    out: OutSpec,
    extra: u8,
    /// >= 240: `out` is y's buffer; 230 to 239: the bands' (the library
    /// must refuse the overlap).
    alias: u8,
    /// A batch's best peaks, called after the batch.
    peaks: PeaksSpec,
}

fn multiband<T: Real>(fns: MultibandFns<T>, suffix: &str, op: &MultibandOp) {
    let s = op.series.make::<T>(FOLD_SERIES_CAP);
    let bands = op.bands.make(s.t.len(), FOLD_SERIES_CAP);
    let mut slot = kp_multiband_options_default();
    let opts = multiband_options(op.opts, &mut slot);
    // The samples, the rows of the call and its frequencies.
    let (batch, n, rows, array, nf, grid) = match &op.shape {
        MultibandShape::Array(spec, count) => {
            let freqs = spec.make::<T>(0.0, 1.0);
            let nf = count.resolve(freqs.len());
            if !freqs.fits(nf as u128) {
                return;
            }
            let n = op.series.nx.resolve(s.min_len().min(bands.len()));
            (None, n, 1, Some(freqs), nf, (0.0, 0.0))
        }
        MultibandShape::Grid(f0, df, nf) => {
            let n = op.series.nx.resolve(s.min_len().min(bands.len()));
            (None, n, 1, None, nf.get(), (f0.0, df.0))
        }
        MultibandShape::Batch(spec, count, null, nseries, f0, df, nf) => {
            let (offsets, nseries) = ragged_offsets(spec, *count, *null, *nseries, &s);
            let total = if offsets.null {
                None
            } else {
                offsets.data.get(nseries)
            };
            if !(ragged_fits(&offsets, nseries, &s) && total.is_none_or(|&n| bands.fits(n as u128)))
            {
                return;
            }
            (
                Some(offsets),
                s.min_len(),
                nseries,
                None,
                nf.get(),
                (f0.0, df.0),
            )
        }
    };
    let needed = rows as u128 * nf as u128;
    let len = if needed <= FOLD_OUT_CAP as u128 {
        needed as usize + op.extra as usize % 4
    } else {
        op.out.len as usize % (FOLD_OUT_CAP + 1)
    };
    let mut out = op.out.make_len::<T>(len);
    let (out_ptr, out_room, aliased) = match op.alias {
        240..=255 => (s.y.ptr() as *mut T, s.y.len(), "y"),
        230..=239 => (
            bands.ptr() as *mut T,
            bands.len() * size_of::<u32>() / size_of::<T>(),
            "bands",
        ),
        _ => (out.mut_ptr(), out.len(), ""),
    };
    // A grid has no buffer of its own: its count is the output's, which must
    // fit (or be impossible) as any stated span.
    if !(fits(needed, out_room, size_of::<T>())
        && (batch.is_some() || (s.fits(n as u128) && bands.fits(n as u128))))
    {
        return;
    }
    let work = (n as u128).saturating_mul(nf as u128);
    if needed <= FOLD_OUT_CAP as u128 && work > FOLD_WORK_CAP {
        return;
    }
    let shape = match (&batch, &array) {
        (None, Some(_)) => "",
        (None, None) => "_uniform",
        (Some(_), _) => "_batch",
    };
    let freqs_arg = match &array {
        Some(f) => format!("freqs={}{:?}", f.describe(), f.data),
        None => format!("f0={:e}, df={:e}", grid.0, grid.1),
    };
    let rows_arg = match &batch {
        Some(o) => format!("offsets={}{:?}, nseries={rows}", o.describe(), o.data),
        None => format!("n={n}"),
    };
    let out_arg = if aliased.is_empty() {
        out.describe()
    } else {
        aliased.into()
    };
    let call = format!(
        "kp_lombscargle_multiband{shape}_{suffix}(ctx, options={:?}, {}, bands={}{:?}, {rows_arg}, {freqs_arg}, nf={nf}, out={out_arg})",
        unsafe { opts.as_ref() },
        s.describe(),
        bands.describe(),
        bands.data,
    );
    trace!("{call}");
    let inputs = s.snapshots();
    let others = (
        bands.snapshot(),
        batch.as_ref().map(Buf::snapshot),
        array.as_ref().map(Buf::snapshot),
    );
    let before = out.snapshot();
    let (t, y, dy, b) = (s.t.ptr(), s.y.ptr(), s.w_ptr(), bands.ptr());
    let status = unsafe {
        match (&batch, &array) {
            (None, Some(f)) => fns.0(ctx(), opts, t, y, dy, b, n, f.ptr(), nf, out_ptr),
            (None, None) => fns.1(ctx(), opts, t, y, dy, b, n, grid.0, grid.1, nf, out_ptr),
            (Some(o), _) => fns.2(
                ctx(),
                opts,
                t,
                y,
                dy,
                b,
                o.ptr(),
                rows,
                grid.0,
                grid.1,
                nf,
                out_ptr,
            ),
        }
    };
    let ok = check_status(&call, status);
    s.check_unchanged(&call, &inputs);
    check_inputs(&call, &[("bands", others.0, bytes_of(&bands.data))]);
    if let (Some(o), Some(b)) = (&batch, others.1) {
        check_inputs(&call, &[("offsets", b, bytes_of(&o.data))]);
    }
    if let (Some(f), Some(b)) = (&array, others.2) {
        check_inputs(&call, &[("freqs", b, bytes_of(&f.data))]);
    }
    let span = clamp(needed).saturating_mul(size_of::<T>());
    check_outputs(&call, ok, &[("out", before, bytes_of(&out.data), span)]);
    assert!(
        !(ok && !aliased.is_empty()),
        "{call}: KP_OK with out over {aliased}"
    );

    // The best peaks of the same batch: `k` per series. The work is the
    // batch's, capped above, or its `nf` is one the library must refuse (an
    // output of `nseries * nf` no allocation can hold, over at most 8
    // series, is also a periodogram's frequencies too many to hold).
    let Some(offsets) = &batch else {
        return;
    };
    let mut args = op.peaks.make(rows);
    let mut value = op.peaks.value(&args);
    let Some(index) = args.index_ptr(offsets).filter(|_| value.fits(args.span)) else {
        return;
    };
    let call = format!(
        "kp_lombscargle_multiband_batch_peaks_{suffix}(ctx, options={:?}, {}, bands={}{:?}, {rows_arg}, {freqs_arg}, nf={nf}, {}, value={})",
        unsafe { opts.as_ref() },
        s.describe(),
        bands.describe(),
        bands.data,
        args.describe(),
        value.describe(),
    );
    trace!("{call}");
    let others = (bands.snapshot(), offsets.snapshot());
    let before = (args.index.snapshot(), value.snapshot());
    let (off, opt, vx) = (offsets.ptr(), args.opts_ptr(), value.mut_ptr());
    let status = unsafe {
        fns.3(
            ctx(),
            opts,
            t,
            y,
            dy,
            b,
            off,
            rows,
            grid.0,
            grid.1,
            nf,
            opt,
            index,
            vx,
        )
    };
    let ok = check_status(&call, status);
    s.check_unchanged(&call, &inputs);
    check_inputs(
        &call,
        &[
            ("bands", others.0, bytes_of(&bands.data)),
            ("offsets", others.1, bytes_of(&offsets.data)),
        ],
    );
    let span = clamp(args.span).saturating_mul(size_of::<f64>());
    check_outputs(
        &call,
        ok,
        &[("value", before.1, bytes_of(&value.data), span)],
    );
    // Each series: peaks (an index in the grid, a value), then padding
    // (index -1, value NaN) to k.
    let found = args.check(&call, ok, before.0, rows, nf as u128);
    check_peak_values(&call, &value.data, args.k, &found);
}

// ---------------------------------------------------------------------------

fn run(op: &Op) {
    match op {
        Op::Helpers(h) => helpers(h),
        Op::LsArray(false, o) => ls_array::<f32>(kp_lombscargle_f32, "kp_lombscargle_f32", o),
        Op::LsArray(true, o) => ls_array::<f64>(kp_lombscargle_f64, "kp_lombscargle_f64", o),
        Op::LsUniform(false, o) => {
            ls_uniform::<f32>(kp_lombscargle_uniform_f32, "kp_lombscargle_uniform_f32", o)
        }
        Op::LsUniform(true, o) => {
            ls_uniform::<f64>(kp_lombscargle_uniform_f64, "kp_lombscargle_uniform_f64", o)
        }
        Op::LsBatch(false, o) => ls_batch::<f32>(
            (
                kp_lombscargle_batch_f32,
                kp_lombscargle_batch_peaks_f32,
                kp_lombscargle_batch_top_peaks_f32,
            ),
            "kp_lombscargle_batch_f32",
            o,
        ),
        Op::LsBatch(true, o) => ls_batch::<f64>(
            (
                kp_lombscargle_batch_f64,
                kp_lombscargle_batch_peaks_f64,
                kp_lombscargle_batch_top_peaks_f64,
            ),
            "kp_lombscargle_batch_f64",
            o,
        ),
        Op::Sum(false, o) => sum::<f32>(kp_sum_f32, "kp_sum_f32", o),
        Op::Sum(true, o) => sum::<f64>(kp_sum_f64, "kp_sum_f64", o),
        Op::Normalize(false, o) => normalize::<f32>(kp_normalize_f32, "kp_normalize_f32", o),
        Op::Normalize(true, o) => normalize::<f64>(kp_normalize_f64, "kp_normalize_f64", o),
        Op::NormalizeBatched(false, o) => {
            normalize_batched::<f32>(kp_normalize_batched_f32, "kp_normalize_batched_f32", o)
        }
        Op::NormalizeBatched(true, o) => {
            normalize_batched::<f64>(kp_normalize_batched_f64, "kp_normalize_batched_f64", o)
        }
        Op::BoxFilter(false, o) => box_filter::<f32>(kp_box_filter_f32, "kp_box_filter_f32", o),
        Op::BoxFilter(true, o) => box_filter::<f64>(kp_box_filter_f64, "kp_box_filter_f64", o),
        Op::Lorenz96(false, o) => lorenz::<f32, _, _>(
            LorenzFn::Scalars(kp_lorenz96_f32),
            "kp_lorenz96_f32",
            o,
            l96_params,
            kp_lorenz96_default_params(),
        ),
        Op::Lorenz96(true, o) => lorenz::<f64, _, _>(
            LorenzFn::Scalars(kp_lorenz96_f64),
            "kp_lorenz96_f64",
            o,
            l96_params,
            kp_lorenz96_default_params(),
        ),
        Op::Lorenz05(false, o) => lorenz::<f32, _, _>(
            LorenzFn::PerMember(kp_lorenz05_f32),
            "kp_lorenz05_f32",
            o,
            l05_params,
            kp_lorenz05_default_params(),
        ),
        Op::Lorenz05(true, o) => lorenz::<f64, _, _>(
            LorenzFn::PerMember(kp_lorenz05_f64),
            "kp_lorenz05_f64",
            o,
            l05_params,
            kp_lorenz05_default_params(),
        ),
        Op::Lorenz96SaveAt(false, o) => lorenz_save_at::<f32, _, _>(
            SaveAtFn::Scalars(kp_lorenz96_save_at_f32),
            "kp_lorenz96_save_at_f32",
            o,
            l96_params,
            kp_lorenz96_default_params(),
        ),
        Op::Lorenz96SaveAt(true, o) => lorenz_save_at::<f64, _, _>(
            SaveAtFn::Scalars(kp_lorenz96_save_at_f64),
            "kp_lorenz96_save_at_f64",
            o,
            l96_params,
            kp_lorenz96_default_params(),
        ),
        Op::Lorenz05SaveAt(false, o) => lorenz_save_at::<f32, _, _>(
            SaveAtFn::PerMember(kp_lorenz05_save_at_f32),
            "kp_lorenz05_save_at_f32",
            o,
            l05_params,
            kp_lorenz05_default_params(),
        ),
        Op::Lorenz05SaveAt(true, o) => lorenz_save_at::<f64, _, _>(
            SaveAtFn::PerMember(kp_lorenz05_save_at_f64),
            "kp_lorenz05_save_at_f64",
            o,
            l05_params,
            kp_lorenz05_default_params(),
        ),
        Op::Lorenz63(false, o) => lorenz63::<f32>(kp_lorenz63_f32, "kp_lorenz63_f32", o),
        Op::Lorenz63(true, o) => lorenz63::<f64>(kp_lorenz63_f64, "kp_lorenz63_f64", o),
        Op::Lorenz63Adaptive(false, o) => {
            lorenz63_adaptive::<f32>(kp_lorenz63_adaptive_f32, "kp_lorenz63_adaptive_f32", o)
        }
        Op::Lorenz63Adaptive(true, o) => {
            lorenz63_adaptive::<f64>(kp_lorenz63_adaptive_f64, "kp_lorenz63_adaptive_f64", o)
        }
        Op::WindowSum(false, o) => window_sum::<f32>(kp_window_sum_f32, "kp_window_sum_f32", o),
        Op::WindowSum(true, o) => window_sum::<f64>(kp_window_sum_f64, "kp_window_sum_f64", o),
        Op::Fg(false, o) => fg::<f32>(kp_fg_integrate_c64, "kp_fg_integrate_c64", o),
        Op::Fg(true, o) => fg::<f64>(kp_fg_integrate_c128, "kp_fg_integrate_c128", o),
        Op::Device(o) => device(o),
        Op::Streams(o) => streams(o),
        Op::Correlate(false, o) => {
            correlate::<f32>((kp_correlate1d_f32, kp_gaussian_filter_f32), "f32", o)
        }
        Op::Correlate(true, o) => {
            correlate::<f64>((kp_correlate1d_f64, kp_gaussian_filter_f64), "f64", o)
        }
        Op::Rank(o) => rank(o),
        Op::UniformNd(o) => uniform_nd(o),
        Op::Bls(false, o) => bls::<f32>(kp_bls_f32, "kp_bls_f32", o),
        Op::Bls(true, o) => bls::<f64>(kp_bls_f64, "kp_bls_f64", o),
        Op::BlsBatch(false, o) => bls_batch::<f32>(
            (kp_bls_batch_f32, kp_bls_batch_peaks_f32),
            "kp_bls_batch_f32",
            o,
        ),
        Op::BlsBatch(true, o) => bls_batch::<f64>(
            (kp_bls_batch_f64, kp_bls_batch_peaks_f64),
            "kp_bls_batch_f64",
            o,
        ),
        Op::Pdm(false, o) => fold::<f32, kp_pdm_options>(
            (
                kp_pdm_f32,
                kp_pdm_uniform_f32,
                kp_pdm_batch_f32,
                kp_pdm_batch_uniform_f32,
                kp_pdm_batch_peaks_f32,
                kp_pdm_batch_uniform_peaks_f32,
            ),
            "kp_pdm",
            o,
        ),
        Op::Pdm(true, o) => fold::<f64, kp_pdm_options>(
            (
                kp_pdm_f64,
                kp_pdm_uniform_f64,
                kp_pdm_batch_f64,
                kp_pdm_batch_uniform_f64,
                kp_pdm_batch_peaks_f64,
                kp_pdm_batch_uniform_peaks_f64,
            ),
            "kp_pdm",
            o,
        ),
        Op::ConditionalEntropy(false, o) => fold::<f32, kp_ce_options>(
            (
                kp_conditional_entropy_f32,
                kp_conditional_entropy_uniform_f32,
                kp_conditional_entropy_batch_f32,
                kp_conditional_entropy_batch_uniform_f32,
                kp_conditional_entropy_batch_peaks_f32,
                kp_conditional_entropy_batch_uniform_peaks_f32,
            ),
            "kp_conditional_entropy",
            o,
        ),
        Op::ConditionalEntropy(true, o) => fold::<f64, kp_ce_options>(
            (
                kp_conditional_entropy_f64,
                kp_conditional_entropy_uniform_f64,
                kp_conditional_entropy_batch_f64,
                kp_conditional_entropy_batch_uniform_f64,
                kp_conditional_entropy_batch_peaks_f64,
                kp_conditional_entropy_batch_uniform_peaks_f64,
            ),
            "kp_conditional_entropy",
            o,
        ),
        Op::Multiband(false, o) => multiband::<f32>(
            (
                kp_lombscargle_multiband_f32,
                kp_lombscargle_multiband_uniform_f32,
                kp_lombscargle_multiband_batch_f32,
                kp_lombscargle_multiband_batch_peaks_f32,
            ),
            "f32",
            o,
        ),
        Op::Multiband(true, o) => multiband::<f64>(
            (
                kp_lombscargle_multiband_f64,
                kp_lombscargle_multiband_uniform_f64,
                kp_lombscargle_multiband_batch_f64,
                kp_lombscargle_multiband_batch_peaks_f64,
            ),
            "f64",
            o,
        ),
    }
}

/// At most this many calls per input.
const MAX_OPS: usize = 8;

fuzz_target!(|ops: Vec<Op>| {
    for op in ops.iter().take(MAX_OPS) {
        run(op);
    }
});
