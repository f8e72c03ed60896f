//! The C ABI of the N-D box filter (kp_uniform_filter_nd,
//! kp_uniform_filter_nd_device): results bitwise the safe API's on the same
//! backend (random arrays of 1 to 4 dimensions, windows past the array,
//! origins, a mode per axis or NULL, constants, every dtype; host pointers
//! on CPU and GPU contexts, device pointers on GPU contexts), integers also
//! the reference's, and every bad call a typed status and a message naming
//! the problem, with the poisoned output untouched. Without a GPU the GPU
//! parts print SKIPPED; with KERNPACK_REQUIRE_GPU=1 they fail.
mod common;

use std::ffi::c_void;
use std::ptr::{null, null_mut};

use common::{contexts, expect_err, expect_ok, gpu_or_skip, keys, Ctx, DeviceBuf, Dtype, Rng};
use kernpack::ffi::stencil::{
    KP_BOX_CONSTANT, KP_BOX_INTERIOR, KP_BOX_MIRROR, KP_BOX_NEAREST, KP_BOX_REFLECT, KP_BOX_WRAP,
};
use kernpack::ffi::uniform::{
    kp_uniform_filter_nd, kp_uniform_filter_nd_device, kp_uniform_nd_options,
    kp_uniform_nd_options_default,
};
use kernpack::ffi::{
    kp_context, kp_context_is_gpu, kp_dtype, kp_status, kp_stream_synchronize, KP_BACKEND_CPU,
    KP_BACKEND_GPU, KP_DTYPE_F32, KP_DTYPE_F64, KP_DTYPE_I32, KP_DTYPE_U64, KP_DTYPE_U8,
};
use kernpack::params::rank::KeyKind;
use kernpack::reference::uniform::uniform_filter_nd;
use kernpack::{Backend, BoundaryMode, BoxValue, Kernpack, UniformNdOptions};

use kp_status::*;

/// The element types here: the box filter's, with their C dtype.
trait Value: BoxValue + Dtype {}
impl<T: BoxValue + Dtype> Value for T {}

fn pick(rng: &mut Rng, n: usize) -> usize {
    ((rng.next() * n as f64) as usize).min(n - 1)
}

/// Random values of `T`: integers any bit pattern (the sums reach the
/// types' limits), floats in +-1000 with a few NaNs and infinities.
fn random_values<T: Value>(n: usize, rng: &mut Rng) -> Vec<T> {
    let bits = 8 * std::mem::size_of::<T>() as u32;
    (0..n)
        .map(|_| match T::KIND {
            KeyKind::Float => {
                let v = if rng.next() < 0.02 {
                    [f64::NAN, f64::INFINITY, f64::NEG_INFINITY][pick(rng, 3)]
                } else {
                    rng.range(-1000.0, 1000.0)
                };
                T::box_cval(v).expect("any float")
            }
            _ => {
                let k =
                    ((rng.next() * 4294967296.0) as u64) << 32 | (rng.next() * 4294967296.0) as u64;
                T::from_key(if bits == 64 {
                    k
                } else {
                    k & ((1u64 << bits) - 1)
                })
            }
        })
        .collect()
}

/// The C options of a random call over `shape`, with the storage its
/// pointers point into, and the API's options they stand for.
struct Case {
    size: Vec<usize>,
    origin: Vec<i64>,
    mode: Vec<u32>,
    c: kp_uniform_nd_options,
    api: UniformNdOptions,
}

impl Case {
    fn random<T: Value>(shape: &[usize], rng: &mut Rng) -> Case {
        // Windows up to a few points past the array's extent.
        let size: Vec<usize> = shape.iter().map(|&n| 1 + pick(rng, n + 4)).collect();
        let with_origin = rng.next() < 0.5;
        let origin: Vec<i64> = size
            .iter()
            .map(|&s| {
                let s = s as i64;
                if with_origin {
                    -(s / 2) + pick(rng, s as usize) as i64
                } else {
                    0
                }
            })
            .collect();
        let with_mode = rng.next() < 0.7;
        let mode: Vec<u32> = shape
            .iter()
            .map(|_| {
                if with_mode {
                    pick(rng, 5) as u32
                } else {
                    KP_BOX_REFLECT
                }
            })
            .collect();
        // An integer constant every type holds.
        let cval = (rng.range(-100.0, 100.0)).round();
        let cval = if T::box_cval(cval).is_some() {
            cval
        } else {
            cval.abs()
        };
        let api = UniformNdOptions {
            size: size.clone(),
            origin: origin.clone(),
            mode: mode
                .iter()
                .map(|&m| BoundaryMode::from_code(m).unwrap())
                .collect(),
            cval,
        };
        let mut case = Case {
            size,
            origin,
            mode,
            c: kp_uniform_nd_options {
                cval,
                ..kp_uniform_nd_options_default()
            },
            api,
        };
        case.c.size = case.size.as_ptr();
        if with_origin || rng.next() < 0.5 {
            case.c.origin = case.origin.as_ptr();
        }
        if with_mode || rng.next() < 0.5 {
            case.c.mode = case.mode.as_ptr();
        }
        case
    }
}

unsafe fn host_call<T: Value>(
    ctx: &Ctx,
    input: &[T],
    output: &mut [T],
    shape: &[usize],
    opts: *const kp_uniform_nd_options,
) -> kp_status {
    unsafe {
        kp_uniform_filter_nd(
            ctx.0,
            T::DTYPE,
            input.as_ptr().cast(),
            output.as_mut_ptr().cast(),
            shape.as_ptr(),
            shape.len(),
            opts,
        )
    }
}

/// Each context (the CPU, and the GPU where there is one) with the safe API
/// on the same backend.
fn contexts_and_api(test: &str) -> Vec<(Ctx, Kernpack)> {
    contexts(test)
        .into_iter()
        .map(|ctx| {
            let mut gpu = -1;
            expect_ok(unsafe { kp_context_is_gpu(ctx.0, &mut gpu) });
            let backend = if gpu == 1 { Backend::Gpu } else { Backend::Cpu };
            (ctx, Kernpack::new(backend).expect("the context's backend"))
        })
        .collect()
}

fn random_shape(rng: &mut Rng) -> Vec<usize> {
    let ndim = 1 + pick(rng, 4);
    let extent = [40, 12, 7, 5][ndim - 1];
    (0..ndim).map(|_| 1 + pick(rng, extent)).collect()
}

/// kp_uniform_filter_nd against the safe API (bitwise) and, for integers,
/// the reference, on random arrays and options.
fn host_matches_the_api<T: Value>(ctx: &Ctx, kp: &Kernpack, seed: u64) {
    let mut rng = Rng(seed);
    for _ in 0..25 {
        let shape = random_shape(&mut rng);
        let n = shape.iter().product();
        let input = random_values::<T>(n, &mut rng);
        let case = Case::random::<T>(&shape, &mut rng);
        let want = kp
            .uniform_filter_nd(&input, &shape, &case.api)
            .expect("a valid case");
        if T::KIND != KeyKind::Float {
            let passes = case.api.passes::<T>(shape.len()).unwrap();
            let exact = uniform_filter_nd(&input, &shape, &passes);
            assert_eq!(keys(&want), keys(&exact), "{} {shape:?}", T::NAME);
        }
        let mut got = vec![T::from_key(0x5a); n];
        expect_ok(unsafe { host_call(ctx, &input, &mut got, &shape, &case.c) });
        assert_eq!(
            keys(&got),
            keys(&want),
            "{} {shape:?} {:?}",
            T::NAME,
            case.api
        );
    }
    // Only the size given: origins 0, reflect along every axis.
    let shape = [7usize, 9];
    let size = [3usize, 4];
    let input = random_values::<T>(63, &mut rng);
    let want = kp
        .uniform_filter_nd(&input, &shape, &UniformNdOptions::new(&size))
        .unwrap();
    let opts = kp_uniform_nd_options {
        size: size.as_ptr(),
        ..kp_uniform_nd_options_default()
    };
    let mut got = vec![T::from_key(0x5a); 63];
    expect_ok(unsafe { host_call(ctx, &input, &mut got, &shape, &opts) });
    assert_eq!(keys(&got), keys(&want), "{} size only", T::NAME);
    // No axis at all: a copy of the one value.
    let none: [usize; 0] = [];
    let opts = kp_uniform_nd_options {
        size: none.as_ptr(),
        ..kp_uniform_nd_options_default()
    };
    let mut one = [T::from_key(0x5a)];
    expect_ok(unsafe { host_call(ctx, &input[..1], &mut one, &none, &opts) });
    assert_eq!(keys(&one), keys(&input[..1]));
}

#[test]
fn defaults_are_reflect_and_origin_0_with_no_size() {
    let o = kp_uniform_nd_options_default();
    assert!(o.size.is_null() && o.origin.is_null() && o.mode.is_null());
    assert_eq!(o.cval, 0.0);
    assert_eq!(
        (
            KP_BOX_REFLECT,
            KP_BOX_CONSTANT,
            KP_BOX_NEAREST,
            KP_BOX_MIRROR,
            KP_BOX_WRAP
        ),
        (0, 1, 2, 3, 4)
    );
}

#[test]
fn host_entry_matches_the_api_for_every_dtype() {
    for (ctx, kp) in contexts_and_api("host_entry_matches_the_api_for_every_dtype") {
        host_matches_the_api::<u8>(&ctx, &kp, 1);
        host_matches_the_api::<i8>(&ctx, &kp, 2);
        host_matches_the_api::<u16>(&ctx, &kp, 3);
        host_matches_the_api::<i16>(&ctx, &kp, 4);
        host_matches_the_api::<u32>(&ctx, &kp, 5);
        host_matches_the_api::<i32>(&ctx, &kp, 6);
        host_matches_the_api::<u64>(&ctx, &kp, 7);
        host_matches_the_api::<i64>(&ctx, &kp, 8);
        host_matches_the_api::<f32>(&ctx, &kp, 9);
        host_matches_the_api::<f64>(&ctx, &kp, 10);
    }
}

unsafe fn device_call<T: Value>(
    ctx: &Ctx,
    input: u64,
    output: u64,
    shape: &[usize],
    opts: *const kp_uniform_nd_options,
) -> kp_status {
    unsafe {
        kp_uniform_filter_nd_device(
            ctx.0,
            T::DTYPE,
            input,
            output,
            shape.as_ptr(),
            shape.len(),
            opts,
            0,
        )
    }
}

/// kp_uniform_filter_nd_device against the safe API on the GPU, and bad
/// device calls refused with the output as it was.
fn device_matches_the_api<T: Value>(ctx: &Ctx, kp: &Kernpack, seed: u64) {
    let mut rng = Rng(seed);
    for _ in 0..10 {
        let shape = random_shape(&mut rng);
        let n = shape.iter().product();
        let input = random_values::<T>(n, &mut rng);
        let case = Case::random::<T>(&shape, &mut rng);
        let want = kp.uniform_filter_nd(&input, &shape, &case.api).unwrap();
        let din = DeviceBuf::new(ctx, &input);
        let dout = DeviceBuf::new(ctx, &vec![T::from_key(0x5a); n]);
        expect_ok(unsafe { device_call::<T>(ctx, din.ptr, dout.ptr, &shape, &case.c) });
        expect_ok(unsafe { kp_stream_synchronize(ctx.0, 0) });
        assert_eq!(
            keys(&dout.read::<T>()),
            keys(&want),
            "{} {shape:?}",
            T::NAME
        );
    }
    let shape = [16usize, 8];
    let size = [3usize, 5];
    let opts = kp_uniform_nd_options {
        size: size.as_ptr(),
        ..kp_uniform_nd_options_default()
    };
    let input = random_values::<T>(128, &mut rng);
    let poison = vec![T::from_key(0x5a); 128];
    let din = DeviceBuf::new(ctx, &input);
    let dout = DeviceBuf::new(ctx, &poison);
    let width = std::mem::size_of::<T>() as u64;
    let call = |i: u64, o: u64, shape: &[usize], opts: *const kp_uniform_nd_options| unsafe {
        device_call::<T>(ctx, i, o, shape, opts)
    };
    let bad_origin = [0i64, 3];
    let far = kp_uniform_nd_options {
        origin: bad_origin.as_ptr(),
        ..opts
    };
    #[rustfmt::skip]
    let bad = [
        (call(din.ptr, din.ptr + 8 * width, &shape, &opts), KP_ERROR_INVALID_ARGUMENT, "overlap"),
        (call(0x1234, dout.ptr, &shape, &opts), KP_ERROR_INVALID_ARGUMENT, "input"),
        (call(din.ptr, 0x1234, &shape, &opts), KP_ERROR_INVALID_ARGUMENT, "output"),
        (call(0, dout.ptr, &shape, &opts), KP_ERROR_NULL_POINTER, "input is NULL"),
        (call(din.ptr, 0, &shape, &opts), KP_ERROR_NULL_POINTER, "output is NULL"),
        (call(din.ptr, dout.ptr, &shape, null()), KP_ERROR_NULL_POINTER, "options is NULL"),
        (call(din.ptr, dout.ptr, &[17, 8], &opts), KP_ERROR_INVALID_ARGUMENT, "input"),
        (call(din.ptr, dout.ptr, &[usize::MAX, 2], &opts), KP_ERROR_INVALID_ARGUMENT, "too large"),
        (call(din.ptr, dout.ptr, &shape, &far), KP_ERROR_INVALID_ARGUMENT, "origin 3 along axis 1"),
    ];
    for (status, want, needle) in bad {
        assert_eq!(status, want, "{needle}");
    }
    assert_eq!(keys(&dout.read::<T>()), keys(&poison), "written on failure");
}

#[test]
fn device_entry_matches_the_api() {
    if gpu_or_skip("device_entry_matches_the_api").is_none() {
        return;
    }
    let ctx = Ctx::new(KP_BACKEND_GPU);
    let kp = Kernpack::new(Backend::Gpu).unwrap();
    device_matches_the_api::<u8>(&ctx, &kp, 11);
    device_matches_the_api::<i16>(&ctx, &kp, 12);
    device_matches_the_api::<u32>(&ctx, &kp, 13);
    device_matches_the_api::<i64>(&ctx, &kp, 14);
    device_matches_the_api::<u64>(&ctx, &kp, 15);
    device_matches_the_api::<f32>(&ctx, &kp, 16);
    device_matches_the_api::<f64>(&ctx, &kp, 17);
}

#[test]
fn device_entry_needs_a_gpu_context() {
    let cpu = Ctx::new(KP_BACKEND_CPU);
    let shape = [4usize];
    let size = [3usize];
    let opts = kp_uniform_nd_options {
        size: size.as_ptr(),
        ..kp_uniform_nd_options_default()
    };
    for dtype in [KP_DTYPE_U8, KP_DTYPE_F64, 0, 99] {
        for options in [&opts as *const _, null()] {
            let s = unsafe {
                kp_uniform_filter_nd_device(cpu.0, dtype, 8, 64, shape.as_ptr(), 1, options, 0)
            };
            expect_err(s, KP_ERROR_NO_GPU, "GPU context");
        }
    }
}

/// The arguments of one host call (f64 values unless `dtype` says
/// otherwise), each replaced by a bad value in turn.
#[derive(Clone, Copy)]
struct Call {
    ctx: *const kp_context,
    dtype: kp_dtype,
    input: *const c_void,
    output: *mut c_void,
    shape: *const usize,
    ndim: usize,
    options: *const kp_uniform_nd_options,
}

impl Call {
    unsafe fn run(self) -> kp_status {
        unsafe {
            kp_uniform_filter_nd(
                self.ctx,
                self.dtype,
                self.input,
                self.output,
                self.shape,
                self.ndim,
                self.options,
            )
        }
    }
}

/// Every bad host call: its status, a message naming the problem, and the
/// poisoned output untouched (on each backend).
#[test]
fn bad_host_calls_are_refused_and_write_nothing() {
    const POISON: f64 = -4242.0;
    for ctx in contexts("bad_host_calls_are_refused_and_write_nothing") {
        let shape = [4usize, 6];
        let size = [3usize, 3];
        let input: Vec<f64> = (0..24).map(|i| i as f64 * 0.25 - 2.0).collect();
        let mut out = vec![POISON; 24];
        let too_large = [usize::MAX, 2];
        let huge = [1usize << 61];
        let d = kp_uniform_nd_options {
            size: size.as_ptr(),
            ..kp_uniform_nd_options_default()
        };
        // Options (and the arrays they point to) kept alive for the calls.
        let opt = |o: kp_uniform_nd_options| Box::into_raw(Box::new(o)) as *const _;
        let sizes = |v: Vec<usize>| Box::leak(v.into_boxed_slice()).as_ptr();
        let origins = |v: Vec<i64>| Box::leak(v.into_boxed_slice()).as_ptr();
        let modes = |v: Vec<u32>| Box::leak(v.into_boxed_slice()).as_ptr();
        let good = Call {
            ctx: ctx.0,
            dtype: KP_DTYPE_F64,
            input: input.as_ptr().cast(),
            output: out.as_mut_ptr().cast(),
            shape: shape.as_ptr(),
            ndim: 2,
            options: &d,
        };
        let i32_input = [0i32; 24];
        let i32_in = i32_input.as_ptr().cast();
        let out_bytes = good.output.cast::<u8>();
        let constant = |cval: f64| {
            opt(kp_uniform_nd_options {
                mode: modes(vec![KP_BOX_CONSTANT, KP_BOX_CONSTANT]),
                cval,
                ..d
            })
        };
        #[rustfmt::skip]
        let cases = [
            // NULL pointers (the context's first, whatever the dtype).
            (Call { ctx: null(), ..good }, KP_ERROR_NULL_POINTER, "ctx is NULL"),
            (Call { ctx: null(), dtype: 0, ..good }, KP_ERROR_NULL_POINTER, "ctx is NULL"),
            (Call { input: null(), ..good }, KP_ERROR_NULL_POINTER, "input is NULL"),
            (Call { output: null_mut(), ..good }, KP_ERROR_NULL_POINTER, "output is NULL"),
            (Call { shape: null(), ..good }, KP_ERROR_NULL_POINTER, "shape is NULL"),
            (Call { options: null(), ..good }, KP_ERROR_NULL_POINTER, "options is NULL"),
            (Call { options: opt(kp_uniform_nd_options_default()), ..good }, KP_ERROR_NULL_POINTER, "size is NULL"),
            // Unknown dtypes.
            (Call { dtype: 0, ..good }, KP_ERROR_INVALID_ARGUMENT, "unknown dtype 0"),
            (Call { dtype: 11, ..good }, KP_ERROR_INVALID_ARGUMENT, "unknown dtype 11"),
            // Memory: overlaps, alignment, counts no array holds.
            (Call { input: good.output, ..good }, KP_ERROR_INVALID_ARGUMENT, "overlap"),
            (Call { input: unsafe { good.output.cast::<f64>().add(5) }.cast(), ..good }, KP_ERROR_INVALID_ARGUMENT, "overlap"),
            (Call { dtype: KP_DTYPE_I32, input: good.output, ..good }, KP_ERROR_INVALID_ARGUMENT, "overlap"),
            (Call { dtype: KP_DTYPE_I32, input: i32_in, output: unsafe { out_bytes.add(2) }.cast(), ..good }, KP_ERROR_INVALID_ARGUMENT, "aligned"),
            (Call { shape: too_large.as_ptr(), ..good }, KP_ERROR_INVALID_ARGUMENT, "size_t"),
            (Call { shape: huge.as_ptr(), ndim: 1, options: opt(kp_uniform_nd_options { size: sizes(vec![3]), ..d }), ..good }, KP_ERROR_INVALID_ARGUMENT, "input"),
            // ndim no array of sizes can hold.
            (Call { ndim: usize::MAX, ..good }, KP_ERROR_INVALID_ARGUMENT, "shape"),
            (Call { ndim: 1 << 60, ..good }, KP_ERROR_INVALID_ARGUMENT, "shape"),
            // Modes: unknown codes, the 2-D filter's interior.
            (Call { options: opt(kp_uniform_nd_options { mode: modes(vec![KP_BOX_WRAP, 9]), ..d }), ..good }, KP_ERROR_INVALID_ARGUMENT, "unknown boundary mode 9 along axis 1"),
            (Call { options: opt(kp_uniform_nd_options { mode: modes(vec![u32::MAX, 0]), ..d }), ..good }, KP_ERROR_INVALID_ARGUMENT, "along axis 0"),
            (Call { options: opt(kp_uniform_nd_options { mode: modes(vec![KP_BOX_INTERIOR, 0]), ..d }), ..good }, KP_ERROR_INVALID_ARGUMENT, "interior"),
            // Sizes and origins (the API's checks).
            (Call { options: opt(kp_uniform_nd_options { size: sizes(vec![3, 0]), ..d }), ..good }, KP_ERROR_INVALID_ARGUMENT, "size 0 along axis 1"),
            (Call { options: opt(kp_uniform_nd_options { size: sizes(vec![1 << 31, 3]), ..d }), ..good }, KP_ERROR_INVALID_ARGUMENT, "size 2147483648 along axis 0"),
            (Call { options: opt(kp_uniform_nd_options { size: sizes(vec![usize::MAX, 3]), ..d }), ..good }, KP_ERROR_INVALID_ARGUMENT, "along axis 0"),
            (Call { options: opt(kp_uniform_nd_options { origin: origins(vec![0, 2]), ..d }), ..good }, KP_ERROR_INVALID_ARGUMENT, "origin 2 along axis 1"),
            (Call { options: opt(kp_uniform_nd_options { origin: origins(vec![-2, 0]), ..d }), ..good }, KP_ERROR_INVALID_ARGUMENT, "origin -2 along axis 0"),
            (Call { options: opt(kp_uniform_nd_options { size: sizes(vec![4, 3]), origin: origins(vec![2, 0]), ..d }), ..good }, KP_ERROR_INVALID_ARGUMENT, "origin 2 along axis 0"),
            (Call { options: opt(kp_uniform_nd_options { origin: origins(vec![i64::MIN, 0]), ..d }), ..good }, KP_ERROR_INVALID_ARGUMENT, "origin"),
            // A cval the integer type does not hold, whatever the modes.
            (Call { dtype: KP_DTYPE_I32, input: i32_in, options: constant(0.5), ..good }, KP_ERROR_INVALID_ARGUMENT, "cval 0.5 is not a int32 value"),
            (Call { dtype: KP_DTYPE_I32, input: i32_in, options: opt(kp_uniform_nd_options { cval: -2.25, ..d }), ..good }, KP_ERROR_INVALID_ARGUMENT, "cval -2.25"),
            (Call { dtype: KP_DTYPE_I32, input: i32_in, options: constant(f64::NAN), ..good }, KP_ERROR_INVALID_ARGUMENT, "cval NaN"),
            (Call { dtype: KP_DTYPE_U8, input: i32_in, options: constant(256.0), ..good }, KP_ERROR_INVALID_ARGUMENT, "cval 256 is not a uint8 value"),
            (Call { dtype: KP_DTYPE_U64, options: constant(-1.0), ..good }, KP_ERROR_INVALID_ARGUMENT, "cval -1 is not a uint64 value"),
        ];
        let untouched = |out: &[f64], what: &str| {
            assert!(out.iter().all(|&v| v == POISON), "{what}: output written")
        };
        for (call, status, needle) in cases {
            expect_err(unsafe { call.run() }, status, needle);
            untouched(&out, needle);
        }
        // The options, or an array they point to, inside the output.
        let mut inside = vec![POISON; 24];
        let o = inside.as_mut_ptr();
        let sizes_in_output = o.cast::<usize>();
        unsafe { sizes_in_output.write(3) };
        unsafe { sizes_in_output.add(1).write(3) };
        let modes_in_output = o.cast::<u32>().wrapping_add(10);
        unsafe { modes_in_output.write(KP_BOX_REFLECT) };
        unsafe { modes_in_output.add(1).write(KP_BOX_WRAP) };
        let before = keys(&inside);
        let o = o.cast::<c_void>();
        #[rustfmt::skip]
        let overlapping = [
            (Call { output: o, shape: sizes_in_output, ..good }, "output and shape overlap"),
            (Call { output: o, options: opt(kp_uniform_nd_options { size: sizes_in_output, ..d }), ..good }, "output and size overlap"),
            (Call { output: o, options: opt(kp_uniform_nd_options { origin: o.cast::<i64>().wrapping_add(20), ..d }), ..good }, "output and origin overlap"),
            (Call { output: o, options: opt(kp_uniform_nd_options { mode: modes_in_output, ..d }), ..good }, "output and mode overlap"),
        ];
        for (call, needle) in overlapping {
            expect_err(unsafe { call.run() }, KP_ERROR_INVALID_ARGUMENT, needle);
            assert_eq!(keys(&inside), before, "{needle}: output written");
        }
        let options_in_output = o.cast::<kp_uniform_nd_options>();
        unsafe { options_in_output.write(d) };
        let before = keys(&inside);
        expect_err(
            unsafe {
                Call {
                    output: o,
                    options: options_in_output,
                    ..good
                }
                .run()
            },
            KP_ERROR_INVALID_ARGUMENT,
            "output and options overlap",
        );
        assert_eq!(keys(&inside), before, "output written");
        // And the good calls succeed: a fractional constant for floats,
        // an integer one for integers.
        expect_ok(unsafe {
            Call {
                options: constant(1.5),
                ..good
            }
            .run()
        });
        assert!(out.iter().all(|v| v.is_finite() && *v != POISON));
        let (f32_in, mut f32_out) = ([0.5f32; 24], [f32::NAN; 24]);
        expect_ok(unsafe {
            Call {
                dtype: KP_DTYPE_F32,
                input: f32_in.as_ptr().cast(),
                output: f32_out.as_mut_ptr().cast(),
                options: constant(f64::NAN),
                ..good
            }
            .run()
        });
        assert!(f32_out.iter().any(|v| v.is_nan()) && f32_out.contains(&0.5));
        let mut i32_out = [7i32; 24];
        expect_ok(unsafe {
            Call {
                dtype: KP_DTYPE_I32,
                input: i32_in,
                output: i32_out.as_mut_ptr().cast(),
                options: constant(-9.0),
                ..good
            }
            .run()
        });
        // The corner's 3 x 3 window: 5 constants and 4 zeros, -45 / 9.
        assert_eq!(i32_out[0], -5);
    }
}
