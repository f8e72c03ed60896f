//! The C ABI of the 1-D correlations and Gaussian filters
//! (kp_correlate1d_*, kp_gaussian_filter_*, and their _device variants):
//! results bitwise the safe API's on the same backend (random arrays of 1 to
//! 3 dimensions, both dtypes, host pointers on CPU and GPU contexts, device
//! pointers on GPU contexts), and every bad call a typed status and a message
//! naming the problem, with the poisoned output untouched. Without a GPU the
//! GPU parts print SKIPPED; with KERNPACK_REQUIRE_GPU=1 they fail.
mod common;

use std::ptr::{null, null_mut};

use common::{expect_err, expect_ok, gpu_or_skip, Ctx, DeviceBuf, Rng};
use kernpack::ffi::correlate::{
    kp_correlate1d_device_f32, kp_correlate1d_device_f64, kp_correlate1d_f32, kp_correlate1d_f64,
    kp_correlate_options, kp_correlate_options_default, kp_gaussian_filter_device_f32,
    kp_gaussian_filter_device_f64, kp_gaussian_filter_f32, kp_gaussian_filter_f64,
    kp_gaussian_options, kp_gaussian_options_default,
};
use kernpack::ffi::stencil::{KP_BOX_CONSTANT, KP_BOX_INTERIOR, KP_BOX_REFLECT, KP_BOX_WRAP};
use kernpack::ffi::{kp_context, kp_status, kp_stream_synchronize, KP_BACKEND_CPU, KP_BACKEND_GPU};
use kernpack::{
    Backend, BoundaryMode, CorrelatePass, Float, GaussianFilterOptions, GaussianOptions, Kernpack,
};

use kp_status::*;

type Correlate1d<T> = unsafe extern "C" fn(
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
type Correlate1dDevice = unsafe extern "C" fn(
    *const kp_context,
    u64,
    u64,
    *const usize,
    usize,
    usize,
    *const f64,
    usize,
    *const kp_correlate_options,
    u64,
) -> kp_status;
type Gaussian<T> = unsafe extern "C" fn(
    *const kp_context,
    *const T,
    *mut T,
    *const usize,
    usize,
    *const kp_gaussian_options,
) -> kp_status;
type GaussianDevice = unsafe extern "C" fn(
    *const kp_context,
    u64,
    u64,
    *const usize,
    usize,
    *const kp_gaussian_options,
    u64,
) -> kp_status;

/// The entry points of one dtype.
trait Dtype: Float + std::fmt::Debug {
    const CORRELATE: Correlate1d<Self>;
    const CORRELATE_DEVICE: Correlate1dDevice;
    const GAUSSIAN: Gaussian<Self>;
    const GAUSSIAN_DEVICE: GaussianDevice;
    fn poison() -> Self;
}

impl Dtype for f32 {
    const CORRELATE: Correlate1d<f32> = kp_correlate1d_f32;
    const CORRELATE_DEVICE: Correlate1dDevice = kp_correlate1d_device_f32;
    const GAUSSIAN: Gaussian<f32> = kp_gaussian_filter_f32;
    const GAUSSIAN_DEVICE: GaussianDevice = kp_gaussian_filter_device_f32;
    fn poison() -> f32 {
        -4242.0
    }
}

impl Dtype for f64 {
    const CORRELATE: Correlate1d<f64> = kp_correlate1d_f64;
    const CORRELATE_DEVICE: Correlate1dDevice = kp_correlate1d_device_f64;
    const GAUSSIAN: Gaussian<f64> = kp_gaussian_filter_f64;
    const GAUSSIAN_DEVICE: GaussianDevice = kp_gaussian_filter_device_f64;
    fn poison() -> f64 {
        -4242.0
    }
}

fn bits<T: Float>(v: &[T]) -> Vec<u64> {
    v.iter().map(|x| x.to_f64().to_bits()).collect()
}

/// A random shape of 1 to 3 dimensions (sizes 1 to 23) and values in [-2, 2].
fn random_array<T: Float>(rng: &mut Rng) -> (Vec<usize>, Vec<T>) {
    let ndim = 1 + (rng.next() * 3.0) as usize;
    let shape: Vec<usize> = (0..ndim)
        .map(|_| 1 + (rng.next() * 23.0) as usize)
        .collect();
    let n = shape.iter().product();
    let values = (0..n).map(|_| T::from_f64(rng.range(-2.0, 2.0))).collect();
    (shape, values)
}

/// The contexts to run on, each with the safe API on the same backend.
fn backends(test: &str) -> Vec<(Ctx, Kernpack)> {
    let mut b = vec![(
        Ctx::new(KP_BACKEND_CPU),
        Kernpack::new(Backend::Cpu).unwrap(),
    )];
    if let Some(gpu) = gpu_or_skip(test) {
        b.push((Ctx::new(KP_BACKEND_GPU), Kernpack::from(gpu)));
    }
    b
}

#[test]
fn defaults_are_scipys() {
    let c = kp_correlate_options_default();
    assert_eq!((c.origin, c.cval, c.mode), (0, 0.0, KP_BOX_REFLECT));
    let g = kp_gaussian_options_default();
    assert_eq!(
        (g.sigma, g.order, g.truncate, g.radius, g.mode, g.cval),
        (1.0, 0, 4.0, -1, KP_BOX_REFLECT, 0.0)
    );
}

/// kp_correlate1d_{dtype} on random arrays, axes, weights, origins and modes.
fn correlate_matches_the_safe_api<T: Dtype>(ctx: &Ctx, kp: &Kernpack, seed: u64) {
    let mut rng = Rng(seed);
    for case in 0..40 {
        let (shape, input) = random_array::<T>(&mut rng);
        let axis = (rng.next() * shape.len() as f64) as usize;
        let nweights = 1 + (rng.next() * 9.0) as usize;
        let weights: Vec<f64> = (0..nweights).map(|_| rng.range(-1.0, 1.0)).collect();
        let n = nweights as i64;
        let origin = -(n / 2) + (rng.next() * n as f64) as i64;
        let opts = kp_correlate_options {
            origin,
            cval: rng.range(-1.0, 1.0),
            mode: case % 5,
        };
        let pass = CorrelatePass {
            axis,
            weights: weights.clone(),
            origin,
            mode: BoundaryMode::from_code(opts.mode).unwrap(),
            cval: opts.cval,
        };
        let mut want = vec![T::poison(); input.len()];
        kp.correlate_passes_into(&input, &mut want, &shape, &[pass])
            .unwrap();
        let mut got = vec![T::poison(); input.len()];
        expect_ok(unsafe {
            T::CORRELATE(
                ctx.0,
                input.as_ptr(),
                got.as_mut_ptr(),
                shape.as_ptr(),
                shape.len(),
                axis,
                weights.as_ptr(),
                nweights,
                &opts,
            )
        });
        assert_eq!(bits(&got), bits(&want), "{shape:?} axis {axis} {opts:?}");
    }
    // NULL options are the defaults.
    let (shape, input) = random_array::<T>(&mut rng);
    let w = [0.25, 0.5, 0.25];
    let pass = CorrelatePass {
        axis: 0,
        weights: w.to_vec(),
        origin: 0,
        mode: BoundaryMode::Reflect,
        cval: 0.0,
    };
    let want = kp.correlate1d(&input, &shape, &pass).unwrap();
    let mut got = vec![T::poison(); input.len()];
    expect_ok(unsafe {
        T::CORRELATE(
            ctx.0,
            input.as_ptr(),
            got.as_mut_ptr(),
            shape.as_ptr(),
            shape.len(),
            0,
            w.as_ptr(),
            3,
            null(),
        )
    });
    assert_eq!(bits(&got), bits(&want));
}

/// A random Gaussian per axis: some sigma 0 (skipped), orders 0 to 2, a
/// radius from truncate or given.
fn random_gaussian(rng: &mut Rng, mode: u32) -> kp_gaussian_options {
    let sigma = if rng.next() < 0.2 {
        0.0
    } else {
        rng.range(0.3, 4.0)
    };
    kp_gaussian_options {
        sigma,
        order: (rng.next() * 3.0) as u32,
        truncate: rng.range(1.0, 5.0),
        radius: if rng.next() < 0.3 {
            (rng.next() * 7.0) as i64
        } else {
            -1
        },
        mode,
        cval: rng.range(-1.0, 1.0),
    }
}

fn api_options(o: &kp_gaussian_options) -> GaussianOptions {
    GaussianOptions {
        sigma: o.sigma,
        order: o.order,
        truncate: o.truncate,
        radius: usize::try_from(o.radius).ok(),
        mode: BoundaryMode::from_code(o.mode).unwrap(),
        cval: o.cval,
    }
}

/// kp_gaussian_filter_{dtype} against the safe API's gaussian_filter (the
/// same axes, SciPy's skip of sigma 0).
fn gaussian_matches_the_safe_api<T: Dtype>(ctx: &Ctx, kp: &Kernpack, seed: u64) {
    let mut rng = Rng(seed);
    for case in 0..30 {
        let (shape, input) = random_array::<T>(&mut rng);
        let per_axis: Vec<_> = shape
            .iter()
            .map(|_| random_gaussian(&mut rng, case % 5))
            .collect();
        let opts = GaussianFilterOptions {
            axes: per_axis.iter().map(api_options).enumerate().collect(),
        };
        let want = kp.gaussian_filter(&input, &shape, &opts).unwrap();
        let mut got = vec![T::poison(); input.len()];
        expect_ok(unsafe {
            T::GAUSSIAN(
                ctx.0,
                input.as_ptr(),
                got.as_mut_ptr(),
                shape.as_ptr(),
                shape.len(),
                per_axis.as_ptr(),
            )
        });
        assert_eq!(bits(&got), bits(&want), "{shape:?} {per_axis:?}");
    }
    // NULL per_axis: the defaults (sigma 1) on every axis.
    let (shape, input) = random_array::<T>(&mut rng);
    let opts = GaussianFilterOptions::isotropic(shape.len(), GaussianOptions::default());
    let want = kp.gaussian_filter(&input, &shape, &opts).unwrap();
    let mut got = vec![T::poison(); input.len()];
    expect_ok(unsafe {
        T::GAUSSIAN(
            ctx.0,
            input.as_ptr(),
            got.as_mut_ptr(),
            shape.as_ptr(),
            shape.len(),
            null(),
        )
    });
    assert_eq!(bits(&got), bits(&want));
    // Every sigma 0, or no axis at all (a 0-d array of one value): a copy.
    let zero = kp_gaussian_options {
        sigma: 0.0,
        ..kp_gaussian_options_default()
    };
    let zeros = vec![zero; shape.len()];
    let mut got = vec![T::poison(); input.len()];
    let s = unsafe {
        T::GAUSSIAN(
            ctx.0,
            input.as_ptr(),
            got.as_mut_ptr(),
            shape.as_ptr(),
            shape.len(),
            zeros.as_ptr(),
        )
    };
    expect_ok(s);
    assert_eq!(bits(&got), bits(&input));
    let mut one = [T::poison()];
    expect_ok(unsafe {
        T::GAUSSIAN(
            ctx.0,
            input.as_ptr(),
            one.as_mut_ptr(),
            [].as_ptr(),
            0,
            null(),
        )
    });
    assert_eq!(one[0].to_f64(), input[0].to_f64());
}

#[test]
fn host_entries_match_the_safe_api_on_each_backend() {
    for (ctx, kp) in backends("host_entries_match_the_safe_api_on_each_backend") {
        correlate_matches_the_safe_api::<f32>(&ctx, &kp, 1);
        correlate_matches_the_safe_api::<f64>(&ctx, &kp, 2);
        gaussian_matches_the_safe_api::<f32>(&ctx, &kp, 3);
        gaussian_matches_the_safe_api::<f64>(&ctx, &kp, 4);
    }
}

/// The device entry points give the host entry points' bits (on the same
/// GPU context), and refuse bad device pointers leaving the output as it was.
fn device_matches_host<T: Dtype>(ctx: &Ctx, seed: u64) {
    let mut rng = Rng(seed);
    for case in 0..12 {
        let (shape, input) = random_array::<T>(&mut rng);
        let n = input.len();
        let din = DeviceBuf::new(ctx, &input);
        let dout = DeviceBuf::new(ctx, &vec![T::poison(); n]);
        // A correlation.
        let axis = case as usize % shape.len();
        let weights: Vec<f64> = (0..1 + case as usize)
            .map(|_| rng.range(-1.0, 1.0))
            .collect();
        let opts = kp_correlate_options {
            mode: case % 5,
            cval: 0.5,
            ..kp_correlate_options_default()
        };
        let mut host = vec![T::poison(); n];
        #[rustfmt::skip]
        expect_ok(unsafe {
            T::CORRELATE(ctx.0, input.as_ptr(), host.as_mut_ptr(), shape.as_ptr(), shape.len(),
                axis, weights.as_ptr(), weights.len(), &opts)
        });
        #[rustfmt::skip]
        expect_ok(unsafe {
            T::CORRELATE_DEVICE(ctx.0, din.ptr, dout.ptr, shape.as_ptr(), shape.len(), axis,
                weights.as_ptr(), weights.len(), &opts, 0)
        });
        expect_ok(unsafe { kp_stream_synchronize(ctx.0, 0) });
        assert_eq!(
            bits(&dout.read::<T>()),
            bits(&host),
            "{shape:?} axis {axis}"
        );
        // A Gaussian filter over every axis (several passes: device scratch).
        let per_axis: Vec<_> = shape
            .iter()
            .map(|_| random_gaussian(&mut rng, case % 5))
            .collect();
        #[rustfmt::skip]
        expect_ok(unsafe {
            T::GAUSSIAN(ctx.0, input.as_ptr(), host.as_mut_ptr(), shape.as_ptr(), shape.len(),
                per_axis.as_ptr())
        });
        #[rustfmt::skip]
        expect_ok(unsafe {
            T::GAUSSIAN_DEVICE(ctx.0, din.ptr, dout.ptr, shape.as_ptr(), shape.len(),
                per_axis.as_ptr(), 0)
        });
        expect_ok(unsafe { kp_stream_synchronize(ctx.0, 0) });
        assert_eq!(
            bits(&dout.read::<T>()),
            bits(&host),
            "{shape:?} {per_axis:?}"
        );
    }
    // Bad device calls: refused before any launch, the output as it was.
    let shape = [16usize, 8];
    let input: Vec<T> = (0..128).map(|i| T::from_f64(i as f64)).collect();
    let din = DeviceBuf::new(ctx, &input);
    let dout = DeviceBuf::new(ctx, &[T::poison(); 128]);
    let w = [1.0, 2.0, 1.0];
    let fake = 0x1234u64;
    let size = std::mem::size_of::<T>() as u64;
    let correlate = |i: u64, o: u64, shape: &[usize], w: &[f64]| unsafe {
        T::CORRELATE_DEVICE(
            ctx.0,
            i,
            o,
            shape.as_ptr(),
            shape.len(),
            1,
            w.as_ptr(),
            w.len(),
            null(),
            0,
        )
    };
    let gaussian = |i: u64, o: u64, shape: &[usize]| unsafe {
        T::GAUSSIAN_DEVICE(ctx.0, i, o, shape.as_ptr(), shape.len(), null(), 0)
    };
    expect_err(
        correlate(din.ptr, din.ptr + 8 * size, &shape, &w),
        KP_ERROR_INVALID_ARGUMENT,
        "overlap",
    );
    expect_err(
        gaussian(din.ptr, din.ptr, &shape),
        KP_ERROR_INVALID_ARGUMENT,
        "overlap",
    );
    expect_err(
        correlate(fake, dout.ptr, &shape, &w),
        KP_ERROR_INVALID_ARGUMENT,
        "input",
    );
    expect_err(
        gaussian(din.ptr, fake, &shape),
        KP_ERROR_INVALID_ARGUMENT,
        "output",
    );
    expect_err(
        correlate(0, dout.ptr, &shape, &w),
        KP_ERROR_NULL_POINTER,
        "input is NULL",
    );
    expect_err(
        gaussian(din.ptr, 0, &shape),
        KP_ERROR_NULL_POINTER,
        "output is NULL",
    );
    // Past the allocations.
    expect_err(
        correlate(din.ptr, dout.ptr, &[17, 8], &w),
        KP_ERROR_INVALID_ARGUMENT,
        "input",
    );
    expect_err(
        correlate(din.ptr, dout.ptr, &[usize::MAX, 2], &w),
        KP_ERROR_INVALID_ARGUMENT,
        "too large",
    );
    expect_err(
        correlate(din.ptr, dout.ptr, &shape, &[f64::NAN]),
        KP_ERROR_INVALID_ARGUMENT,
        "NaN",
    );
    expect_err(
        correlate(din.ptr, dout.ptr, &shape, &[]),
        KP_ERROR_INVALID_ARGUMENT,
        "0 weights",
    );
    expect_err(
        correlate(din.ptr, dout.ptr, &[128], &w),
        KP_ERROR_INVALID_ARGUMENT,
        "axis 1",
    );
    let bad = kp_gaussian_options {
        sigma: -1.0,
        ..kp_gaussian_options_default()
    };
    let s = unsafe {
        T::GAUSSIAN_DEVICE(
            ctx.0,
            din.ptr,
            dout.ptr,
            shape.as_ptr(),
            2,
            [bad, bad].as_ptr(),
            0,
        )
    };
    expect_err(s, KP_ERROR_INVALID_ARGUMENT, "sigma -1");
    assert!(
        dout.read::<T>()
            .iter()
            .all(|v| v.to_f64() == T::poison().to_f64()),
        "written on failure"
    );
}

#[test]
fn device_entries_match_the_host_entries() {
    if gpu_or_skip("device_entries_match_the_host_entries").is_none() {
        return;
    }
    let ctx = Ctx::new(KP_BACKEND_GPU);
    device_matches_host::<f32>(&ctx, 5);
    device_matches_host::<f64>(&ctx, 6);
}

#[test]
fn device_entries_need_a_gpu_context() {
    let cpu = Ctx::new(KP_BACKEND_CPU);
    let shape = [4usize];
    let w = [1.0];
    let s = unsafe {
        kp_correlate1d_device_f64(cpu.0, 8, 64, shape.as_ptr(), 1, 0, w.as_ptr(), 1, null(), 0)
    };
    expect_err(s, KP_ERROR_NO_GPU, "GPU context");
    let s = unsafe { kp_gaussian_filter_device_f32(cpu.0, 8, 64, shape.as_ptr(), 1, null(), 0) };
    expect_err(s, KP_ERROR_NO_GPU, "GPU context");
}

/// The arguments of one host call, each replaced by a bad value in turn.
#[derive(Clone, Copy)]
struct Call {
    ctx: *const kp_context,
    input: *const f64,
    output: *mut f64,
    shape: *const usize,
    ndim: usize,
    axis: usize,
    weights: *const f64,
    nweights: usize,
    options: *const kp_correlate_options,
    per_axis: *const kp_gaussian_options,
}

impl Call {
    unsafe fn correlate(self) -> kp_status {
        unsafe {
            kp_correlate1d_f64(
                self.ctx,
                self.input,
                self.output,
                self.shape,
                self.ndim,
                self.axis,
                self.weights,
                self.nweights,
                self.options,
            )
        }
    }

    unsafe fn gaussian(self) -> kp_status {
        unsafe {
            kp_gaussian_filter_f64(
                self.ctx,
                self.input,
                self.output,
                self.shape,
                self.ndim,
                self.per_axis,
            )
        }
    }
}

/// Every bad host call: its status, a message naming the problem, and the
/// poisoned output untouched (on each backend).
#[test]
fn bad_host_calls_are_refused_and_write_nothing() {
    const POISON: f64 = -4242.0;
    for (ctx, _) in backends("bad_host_calls_are_refused_and_write_nothing") {
        let shape = [4usize, 6];
        let input: Vec<f64> = (0..24).map(|i| i as f64 * 0.25 - 2.0).collect();
        let mut out = vec![POISON; 24];
        let w = [0.25, 0.5, 0.25];
        let nan_w = [0.25, f64::NAN, 0.25];
        let too_large = [usize::MAX, 2];
        let huge = [1usize << 61];
        let opts = kp_correlate_options_default();
        let opt = |o: kp_correlate_options| Box::into_raw(Box::new(o)) as *const _;
        let per = |o: kp_gaussian_options| Box::into_raw(Box::new([o, o])) as *const _;
        let g = kp_gaussian_options_default();
        let good = Call {
            ctx: ctx.0,
            input: input.as_ptr(),
            output: out.as_mut_ptr(),
            shape: shape.as_ptr(),
            ndim: 2,
            axis: 1,
            weights: w.as_ptr(),
            nweights: 3,
            options: &opts,
            per_axis: null(),
        };
        let both = [
            (
                Call {
                    ctx: null(),
                    ..good
                },
                KP_ERROR_NULL_POINTER,
                "ctx is NULL",
            ),
            (
                Call {
                    input: null(),
                    ..good
                },
                KP_ERROR_NULL_POINTER,
                "input is NULL",
            ),
            (
                Call {
                    output: null_mut(),
                    ..good
                },
                KP_ERROR_NULL_POINTER,
                "output is NULL",
            ),
            (
                Call {
                    shape: null(),
                    ..good
                },
                KP_ERROR_NULL_POINTER,
                "shape is NULL",
            ),
            (
                Call {
                    input: good.output,
                    ..good
                },
                KP_ERROR_INVALID_ARGUMENT,
                "overlap",
            ),
            (
                Call {
                    input: unsafe { good.output.add(5) },
                    ..good
                },
                KP_ERROR_INVALID_ARGUMENT,
                "overlap",
            ),
            (
                Call {
                    shape: too_large.as_ptr(),
                    ..good
                },
                KP_ERROR_INVALID_ARGUMENT,
                "size_t",
            ),
            (
                Call {
                    shape: huge.as_ptr(),
                    ndim: 1,
                    axis: 0,
                    ..good
                },
                KP_ERROR_INVALID_ARGUMENT,
                "input",
            ),
            (
                Call {
                    ndim: usize::MAX,
                    ..good
                },
                KP_ERROR_INVALID_ARGUMENT,
                "shape",
            ),
        ];
        #[rustfmt::skip]
        let correlate_only = [
            (Call { weights: null(), ..good }, KP_ERROR_NULL_POINTER, "weights is NULL"),
            (Call { ndim: 0, axis: 0, ..good }, KP_ERROR_INVALID_ARGUMENT, "axis 0 is out of range"),
            (Call { axis: 2, ..good }, KP_ERROR_INVALID_ARGUMENT, "axis 2 is out of range"),
            (Call { nweights: 0, ..good }, KP_ERROR_INVALID_ARGUMENT, "0 weights"),
            (Call { weights: nan_w.as_ptr(), ..good }, KP_ERROR_INVALID_ARGUMENT, "NaN"),
            (Call { options: opt(kp_correlate_options { origin: 2, ..opts }), ..good }, KP_ERROR_INVALID_ARGUMENT, "origin 2"),
            (Call { options: opt(kp_correlate_options { origin: -2, ..opts }), ..good }, KP_ERROR_INVALID_ARGUMENT, "origin -2"),
            (Call { options: opt(kp_correlate_options { mode: 9, ..opts }), ..good }, KP_ERROR_INVALID_ARGUMENT, "boundary mode 9"),
            (Call { options: opt(kp_correlate_options { mode: KP_BOX_INTERIOR, ..opts }), ..good }, KP_ERROR_INVALID_ARGUMENT, "interior"),
            (Call { weights: good.output, ..good }, KP_ERROR_INVALID_ARGUMENT, "output and weights overlap"),
        ];
        #[rustfmt::skip]
        let gaussian_only = [
            (Call { per_axis: per(kp_gaussian_options { sigma: -1.0, ..g }), ..good }, "axis 0: Gaussian sigma -1"),
            (Call { per_axis: per(kp_gaussian_options { sigma: f64::NAN, ..g }), ..good }, "sigma NaN"),
            (Call { per_axis: per(kp_gaussian_options { sigma: f64::INFINITY, ..g }), ..good }, "sigma inf"),
            (Call { per_axis: per(kp_gaussian_options { order: 11, ..g }), ..good }, "order 11"),
            (Call { per_axis: per(kp_gaussian_options { truncate: f64::NAN, ..g }), ..good }, "truncate NaN"),
            (Call { per_axis: per(kp_gaussian_options { radius: 1 << 40, ..g }), ..good }, "radius"),
            (Call { per_axis: per(kp_gaussian_options { mode: 6, ..g }), ..good }, "boundary mode 6"),
            (Call { per_axis: per(kp_gaussian_options { mode: KP_BOX_INTERIOR, ..g }), ..good }, "interior"),
            (Call { per_axis: per(kp_gaussian_options { sigma: 0.0, mode: 7, ..g }), ..good }, "boundary mode 7"),
        ];
        let untouched = |out: &[f64], what: &str| {
            assert!(out.iter().all(|&v| v == POISON), "{what}: output written")
        };
        for (call, status, needle) in both {
            expect_err(unsafe { call.correlate() }, status, needle);
            untouched(&out, needle);
            expect_err(unsafe { call.gaussian() }, status, needle);
            untouched(&out, needle);
        }
        for (call, status, needle) in correlate_only {
            expect_err(unsafe { call.correlate() }, status, needle);
            untouched(&out, needle);
        }
        for (call, needle) in gaussian_only {
            expect_err(
                unsafe { call.gaussian() },
                KP_ERROR_INVALID_ARGUMENT,
                needle,
            );
            untouched(&out, needle);
        }
        // A shape or per-axis options inside the output (valid values there).
        let mut inside = vec![POISON; 24];
        inside[0] = f64::from_bits(4);
        inside[1] = f64::from_bits(6);
        let before = bits(&inside);
        let o = inside.as_mut_ptr();
        let call = Call {
            output: o,
            shape: o.cast::<usize>(),
            ..good
        };
        expect_err(
            unsafe { call.correlate() },
            KP_ERROR_INVALID_ARGUMENT,
            "output and shape overlap",
        );
        assert_eq!(bits(&inside), before, "output written");
        let mut inside = vec![POISON; 24];
        let o = inside.as_mut_ptr();
        for k in 0..2 {
            // Field by field: the padding keeps its (initialised) bytes.
            let p = unsafe { o.cast::<kp_gaussian_options>().add(k) };
            unsafe {
                (*p).sigma = g.sigma;
                (*p).order = g.order;
                (*p).truncate = g.truncate;
                (*p).radius = g.radius;
                (*p).mode = g.mode;
                (*p).cval = g.cval;
            }
        }
        let before = bits(&inside);
        let call = Call {
            output: o,
            per_axis: o.cast::<kp_gaussian_options>(),
            ..good
        };
        expect_err(
            unsafe { call.gaussian() },
            KP_ERROR_INVALID_ARGUMENT,
            "output and per_axis overlap",
        );
        assert_eq!(bits(&inside), before, "output written");
        // The options of the second axis are named.
        let axes = [g, kp_gaussian_options { sigma: -0.5, ..g }];
        let call = Call {
            per_axis: axes.as_ptr(),
            ..good
        };
        expect_err(
            unsafe { call.gaussian() },
            KP_ERROR_INVALID_ARGUMENT,
            "axis 1: Gaussian sigma -0.5",
        );
        untouched(&out, "axis 1");
        // And the good call succeeds, with the options of a constant mode too.
        let constant = kp_correlate_options {
            mode: KP_BOX_CONSTANT,
            cval: 1.5,
            ..opts
        };
        expect_ok(unsafe {
            Call {
                options: &constant,
                ..good
            }
            .correlate()
        });
        let wrap = kp_gaussian_options {
            mode: KP_BOX_WRAP,
            ..g
        };
        expect_ok(unsafe {
            Call {
                per_axis: [wrap, wrap].as_ptr(),
                ..good
            }
            .gaussian()
        });
        assert!(out.iter().all(|v| v.is_finite() && *v != POISON));
    }
}
