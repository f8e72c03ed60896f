//! The C ABI of the rank filters (kp_rank_filter, kp_rank_filter_device):
//! results bitwise the reference's (random arrays of 1 to 3 dimensions,
//! footprints, origins, ranks, modes, every dtype, host pointers on CPU and
//! GPU contexts, device pointers on GPU contexts), and every bad call a
//! typed status and a message naming the problem, with the poisoned output
//! untouched. Without a GPU the GPU parts print SKIPPED; with
//! KERNPACK_REQUIRE_GPU=1 they fail.
mod common;

use std::ffi::c_void;
use std::ptr::{null, null_mut};

use common::{contexts, expect_err, expect_ok, gpu_or_skip, keys, Ctx, DeviceBuf, Dtype, Rng};
use kernpack::ffi::rank::{
    kp_rank_filter, kp_rank_filter_device, kp_rank_options, kp_rank_options_default,
    KP_RANK_BY_INDEX, KP_RANK_BY_MEDIAN, KP_RANK_BY_PERCENTILE,
};
use kernpack::ffi::stencil::{KP_BOX_CONSTANT, KP_BOX_INTERIOR, KP_BOX_REFLECT};
use kernpack::ffi::{
    kp_context, kp_dtype, kp_status, kp_stream_synchronize, KP_BACKEND_CPU, KP_BACKEND_GPU,
    KP_DTYPE_F64, KP_DTYPE_I32, KP_DTYPE_U64, KP_DTYPE_U8,
};
use kernpack::reference::rank::rank_filter;
use kernpack::{BoundaryMode, Footprint, Rank, RankFilterOptions, RankValue};

use kp_status::*;

fn pick(rng: &mut Rng, n: usize) -> usize {
    ((rng.next() * n as f64) as usize).min(n - 1)
}

/// Random values of `T` from their keys: any bit pattern (NaNs, infinities,
/// -0.0 among floats), or a pool of four (ties).
fn random_values<T: RankValue>(n: usize, rng: &mut Rng) -> Vec<T> {
    let bits = 8 * std::mem::size_of::<T>() as u32;
    let key = |rng: &mut Rng| {
        let k = ((rng.next() * 4294967296.0) as u64) << 32 | (rng.next() * 4294967296.0) as u64;
        if bits == 64 {
            k
        } else {
            k & ((1u64 << bits) - 1)
        }
    };
    let pool: Vec<u64> = (0..4).map(|_| key(rng)).collect();
    let tied = rng.next() < 0.5;
    (0..n)
        .map(|_| T::from_key(if tied { pool[pick(rng, 4)] } else { key(rng) }))
        .collect()
}

/// The C options of a random call over `ndim` axes, with the storage its
/// pointers point into, and the API's options they stand for.
struct Case {
    size: Vec<usize>,
    footprint: Vec<u8>,
    origin: Vec<i64>,
    c: kp_rank_options,
    api: RankFilterOptions,
}

impl Case {
    fn random<T: RankValue>(ndim: usize, rng: &mut Rng) -> Case {
        let default_size = rng.next() < 0.25;
        let size: Vec<usize> = (0..ndim)
            .map(|_| if default_size { 3 } else { 1 + pick(rng, 5) })
            .collect();
        let points: usize = size.iter().product();
        let full = rng.next() < 0.4;
        let mut footprint: Vec<u8> = (0..points)
            .map(|_| {
                if full || rng.next() < 0.6 {
                    1 + pick(rng, 255) as u8
                } else {
                    0
                }
            })
            .collect();
        footprint[pick(rng, points)] = 7; // at least one point
        let count = footprint.iter().filter(|&&b| b != 0).count() as i64;
        let with_origin = rng.next() < 0.5;
        let origin: Vec<i64> = size
            .iter()
            .map(|&f| {
                let f = f as i64;
                if with_origin {
                    -(f / 2) + pick(rng, f as usize) as i64
                } else {
                    0
                }
            })
            .collect();
        let (rank_by, rank, percentile, api_rank) = match pick(rng, 3) {
            0 => (KP_RANK_BY_MEDIAN, 0, 50.0, Rank::Median),
            1 => {
                let r = pick(rng, 2 * count as usize) as i64 - count;
                (KP_RANK_BY_INDEX, r, 50.0, Rank::Index(r))
            }
            _ => {
                let p = rng.range(-100.0, 100.0);
                (KP_RANK_BY_PERCENTILE, 0, p, Rank::Percentile(p))
            }
        };
        let mode = pick(rng, 5) as u32;
        // A cval every type holds.
        let cval = (rng.range(-100.0, 100.0) * 4.0).round() / 4.0;
        let cval = if T::from_cval(-1.0).is_some() {
            cval
        } else {
            cval.abs()
        };
        let api = RankFilterOptions {
            footprint: Footprint {
                shape: size.clone(),
                mask: footprint.iter().map(|&b| b != 0).collect(),
            },
            rank: api_rank,
            origin: if with_origin {
                origin.clone()
            } else {
                Vec::new()
            },
            mode: BoundaryMode::from_code(mode).unwrap(),
            cval,
        };
        let c = kp_rank_options {
            rank_by,
            mode,
            rank,
            percentile,
            cval,
            ..kp_rank_options_default()
        };
        let mut case = Case {
            size,
            footprint,
            origin,
            c,
            api,
        };
        if !default_size {
            case.c.size = case.size.as_ptr();
        }
        if !full || rng.next() < 0.5 {
            case.c.footprint = case.footprint.as_ptr();
        }
        if with_origin {
            case.c.origin = case.origin.as_ptr();
        }
        case
    }
}

unsafe fn host_call<T>(
    ctx: &Ctx,
    input: &[T],
    output: &mut [T],
    shape: &[usize],
    opts: *const kp_rank_options,
) -> kp_status
where
    T: Dtype,
{
    unsafe {
        kp_rank_filter(
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

/// kp_rank_filter against the reference on random arrays and options.
fn host_matches_the_reference<T: Dtype>(ctx: &Ctx, seed: u64) {
    let mut rng = Rng(seed);
    for _ in 0..25 {
        let ndim = 1 + pick(&mut rng, 3);
        let shape: Vec<usize> = (0..ndim).map(|_| 1 + pick(&mut rng, 12)).collect();
        let n = shape.iter().product();
        let input = random_values::<T>(n, &mut rng);
        let case = Case::random::<T>(ndim, &mut rng);
        case.api.check(&shape).expect("a valid case");
        let want = rank_filter(&input, &shape, &case.api);
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
    // NULL options: the median of 3 along every axis, reflect.
    let shape = [7usize, 9];
    let input = random_values::<T>(63, &mut rng);
    let want = rank_filter(&input, &shape, &RankFilterOptions::median(&[3, 3]));
    let mut got = vec![T::from_key(0x5a); 63];
    expect_ok(unsafe { host_call(ctx, &input, &mut got, &shape, null()) });
    assert_eq!(keys(&got), keys(&want), "{} NULL options", T::NAME);
    // Outside the constant mode cval is not read: one no type holds is no
    // error (the CPU backend used to panic on it).
    for cval in [f64::NAN, 1e300, -1e300] {
        let opts = kp_rank_options {
            mode: KP_BOX_REFLECT,
            cval,
            ..kp_rank_options_default()
        };
        expect_ok(unsafe { host_call(ctx, &input, &mut got, &shape, &opts) });
        assert_eq!(keys(&got), keys(&want), "{} cval {cval}", T::NAME);
    }
    // No axis at all: a copy of the one value.
    let mut one = [T::from_key(0x5a)];
    expect_ok(unsafe { host_call(ctx, &input[..1], &mut one, &[], null()) });
    assert_eq!(keys(&one), keys(&input[..1]));
}

#[test]
fn defaults_are_scipys_median() {
    let o = kp_rank_options_default();
    assert!(o.size.is_null() && o.footprint.is_null() && o.origin.is_null());
    assert_eq!(
        (o.rank_by, o.mode, o.rank, o.percentile, o.cval),
        (KP_RANK_BY_MEDIAN, KP_BOX_REFLECT, 0, 50.0, 0.0)
    );
}

#[test]
fn host_entry_matches_the_reference_for_every_dtype() {
    for ctx in contexts("host_entry_matches_the_reference_for_every_dtype") {
        host_matches_the_reference::<u8>(&ctx, 1);
        host_matches_the_reference::<i8>(&ctx, 2);
        host_matches_the_reference::<u16>(&ctx, 3);
        host_matches_the_reference::<i16>(&ctx, 4);
        host_matches_the_reference::<u32>(&ctx, 5);
        host_matches_the_reference::<i32>(&ctx, 6);
        host_matches_the_reference::<u64>(&ctx, 7);
        host_matches_the_reference::<i64>(&ctx, 8);
        host_matches_the_reference::<f32>(&ctx, 9);
        host_matches_the_reference::<f64>(&ctx, 10);
    }
}

unsafe fn device_call<T: Dtype>(
    ctx: &Ctx,
    input: u64,
    output: u64,
    shape: &[usize],
    opts: *const kp_rank_options,
) -> kp_status {
    unsafe {
        kp_rank_filter_device(
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

/// kp_rank_filter_device against the reference, and bad device calls
/// refused with the output as it was.
fn device_matches_the_reference<T: Dtype>(ctx: &Ctx, seed: u64) {
    let mut rng = Rng(seed);
    for _ in 0..10 {
        let ndim = 1 + pick(&mut rng, 3);
        let shape: Vec<usize> = (0..ndim).map(|_| 1 + pick(&mut rng, 12)).collect();
        let n = shape.iter().product();
        let input = random_values::<T>(n, &mut rng);
        let case = Case::random::<T>(ndim, &mut rng);
        let want = rank_filter(&input, &shape, &case.api);
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
    let input = random_values::<T>(128, &mut rng);
    let poison = vec![T::from_key(0x5a); 128];
    let din = DeviceBuf::new(ctx, &input);
    let dout = DeviceBuf::new(ctx, &poison);
    let size = std::mem::size_of::<T>() as u64;
    let call =
        |i: u64, o: u64, shape: &[usize]| unsafe { device_call::<T>(ctx, i, o, shape, null()) };
    #[rustfmt::skip]
    let bad = [
        (call(din.ptr, din.ptr + 8 * size, &shape), KP_ERROR_INVALID_ARGUMENT, "overlap"),
        (call(0x1234, dout.ptr, &shape), KP_ERROR_INVALID_ARGUMENT, "input"),
        (call(din.ptr, 0x1234, &shape), KP_ERROR_INVALID_ARGUMENT, "output"),
        (call(0, dout.ptr, &shape), KP_ERROR_NULL_POINTER, "input is NULL"),
        (call(din.ptr, 0, &shape), KP_ERROR_NULL_POINTER, "output is NULL"),
        (call(din.ptr, dout.ptr, &[17, 8]), KP_ERROR_INVALID_ARGUMENT, "input"),
        (call(din.ptr, dout.ptr, &[usize::MAX, 2]), KP_ERROR_INVALID_ARGUMENT, "too large"),
    ];
    for (status, want, needle) in bad {
        assert_eq!(status, want, "{needle}");
    }
    let bad_rank = kp_rank_options {
        rank_by: KP_RANK_BY_INDEX,
        rank: 9,
        ..kp_rank_options_default()
    };
    expect_err(
        unsafe { device_call::<T>(ctx, din.ptr, dout.ptr, &shape, &bad_rank) },
        KP_ERROR_INVALID_ARGUMENT,
        "rank",
    );
    assert_eq!(keys(&dout.read::<T>()), keys(&poison), "written on failure");
}

#[test]
fn device_entry_matches_the_reference() {
    if gpu_or_skip("device_entry_matches_the_reference").is_none() {
        return;
    }
    let ctx = Ctx::new(KP_BACKEND_GPU);
    device_matches_the_reference::<u8>(&ctx, 11);
    device_matches_the_reference::<i16>(&ctx, 12);
    device_matches_the_reference::<u32>(&ctx, 13);
    device_matches_the_reference::<i64>(&ctx, 14);
    device_matches_the_reference::<f32>(&ctx, 15);
    device_matches_the_reference::<f64>(&ctx, 16);
}

#[test]
fn device_entry_needs_a_gpu_context() {
    let cpu = Ctx::new(KP_BACKEND_CPU);
    let shape = [4usize];
    for dtype in [KP_DTYPE_U8, KP_DTYPE_F64, 0, 99] {
        let s = unsafe { kp_rank_filter_device(cpu.0, dtype, 8, 64, shape.as_ptr(), 1, null(), 0) };
        expect_err(s, KP_ERROR_NO_GPU, "GPU context");
    }
}

/// The arguments of one host call (f64 values unless `dtype` says otherwise),
/// each replaced by a bad value in turn.
#[derive(Clone, Copy)]
struct Call {
    ctx: *const kp_context,
    dtype: kp_dtype,
    input: *const c_void,
    output: *mut c_void,
    shape: *const usize,
    ndim: usize,
    options: *const kp_rank_options,
}

impl Call {
    unsafe fn run(self) -> kp_status {
        unsafe {
            kp_rank_filter(
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
        let input: Vec<f64> = (0..24).map(|i| i as f64 * 0.25 - 2.0).collect();
        let mut out = vec![POISON; 24];
        let too_large = [usize::MAX, 2];
        let huge = [1usize << 61];
        let d = kp_rank_options_default();
        // Options (and the arrays they point to) kept alive for the calls.
        let opt = |o: kp_rank_options| Box::into_raw(Box::new(o)) as *const kp_rank_options;
        let leak_usize = |v: Vec<usize>| Box::leak(v.into_boxed_slice()).as_ptr();
        let leak_i64 = |v: Vec<i64>| Box::leak(v.into_boxed_slice()).as_ptr();
        let leak_u8 = |v: Vec<u8>| Box::leak(v.into_boxed_slice()).as_ptr();
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
        let out_bytes = good.output.cast::<u8>();
        #[rustfmt::skip]
        let cases = [
            (Call { ctx: null(), ..good }, KP_ERROR_NULL_POINTER, "ctx is NULL"),
            (Call { ctx: null(), dtype: 0, ..good }, KP_ERROR_NULL_POINTER, "ctx is NULL"),
            (Call { input: null(), ..good }, KP_ERROR_NULL_POINTER, "input is NULL"),
            (Call { output: null_mut(), ..good }, KP_ERROR_NULL_POINTER, "output is NULL"),
            (Call { shape: null(), ..good }, KP_ERROR_NULL_POINTER, "shape is NULL"),
            (Call { dtype: 0, ..good }, KP_ERROR_INVALID_ARGUMENT, "unknown dtype 0"),
            (Call { dtype: 11, ..good }, KP_ERROR_INVALID_ARGUMENT, "unknown dtype 11"),
            (Call { input: good.output, ..good }, KP_ERROR_INVALID_ARGUMENT, "overlap"),
            (Call { input: unsafe { good.output.cast::<f64>().add(5) }.cast(), ..good }, KP_ERROR_INVALID_ARGUMENT, "overlap"),
            // A 4-byte type over the same bytes: 24 values, half the output.
            (Call { dtype: KP_DTYPE_I32, input: good.output, ..good }, KP_ERROR_INVALID_ARGUMENT, "overlap"),
            (Call { dtype: KP_DTYPE_I32, input: i32_input.as_ptr().cast(), output: unsafe { out_bytes.add(2) }.cast(), ..good }, KP_ERROR_INVALID_ARGUMENT, "aligned"),
            (Call { shape: too_large.as_ptr(), ..good }, KP_ERROR_INVALID_ARGUMENT, "size_t"),
            (Call { shape: huge.as_ptr(), ndim: 1, options: opt(kp_rank_options { size: leak_usize(vec![3]), ..d }), ..good }, KP_ERROR_INVALID_ARGUMENT, "input"),
            (Call { ndim: usize::MAX, ..good }, KP_ERROR_INVALID_ARGUMENT, "shape"),
            (Call { options: opt(kp_rank_options { rank_by: 3, ..d }), ..good }, KP_ERROR_INVALID_ARGUMENT, "unknown rank_by 3"),
            (Call { options: opt(kp_rank_options { mode: 9, ..d }), ..good }, KP_ERROR_INVALID_ARGUMENT, "boundary mode 9"),
            (Call { options: opt(kp_rank_options { mode: KP_BOX_INTERIOR, ..d }), ..good }, KP_ERROR_INVALID_ARGUMENT, "interior"),
            (Call { options: opt(kp_rank_options { size: leak_usize(vec![3, 0]), ..d }), ..good }, KP_ERROR_INVALID_ARGUMENT, "empty axis"),
            (Call { options: opt(kp_rank_options { size: leak_usize(vec![usize::MAX, 3]), ..d }), ..good }, KP_ERROR_INVALID_ARGUMENT, "more points than a size_t"),
            (Call { options: opt(kp_rank_options { size: leak_usize(vec![1 << 30, 1 << 30]), footprint: leak_u8(vec![1]), ..d }), ..good }, KP_ERROR_INVALID_ARGUMENT, "footprint"),
            (Call { options: opt(kp_rank_options { size: leak_usize(vec![1 << 31, 1 << 30]), ..d }), ..good }, KP_ERROR_INVALID_ARGUMENT, "footprint: 2305843009213693952 values"),
            (Call { options: opt(kp_rank_options { footprint: leak_u8(vec![0; 9]), ..d }), ..good }, KP_ERROR_INVALID_ARGUMENT, "no point set"),
            (Call { options: opt(kp_rank_options { origin: leak_i64(vec![0, 2]), ..d }), ..good }, KP_ERROR_INVALID_ARGUMENT, "origin 2 along axis 1"),
            (Call { options: opt(kp_rank_options { origin: leak_i64(vec![-2, 0]), ..d }), ..good }, KP_ERROR_INVALID_ARGUMENT, "origin -2 along axis 0"),
            (Call { options: opt(kp_rank_options { rank_by: KP_RANK_BY_INDEX, rank: 9, ..d }), ..good }, KP_ERROR_INVALID_ARGUMENT, "outside a footprint of 9 points"),
            (Call { options: opt(kp_rank_options { rank_by: KP_RANK_BY_INDEX, rank: -10, ..d }), ..good }, KP_ERROR_INVALID_ARGUMENT, "outside a footprint of 9 points"),
            (Call { options: opt(kp_rank_options { rank_by: KP_RANK_BY_INDEX, rank: i64::MIN, ..d }), ..good }, KP_ERROR_INVALID_ARGUMENT, "outside a footprint"),
            (Call { options: opt(kp_rank_options { rank_by: KP_RANK_BY_PERCENTILE, percentile: 100.5, ..d }), ..good }, KP_ERROR_INVALID_ARGUMENT, "percentile"),
            (Call { options: opt(kp_rank_options { rank_by: KP_RANK_BY_PERCENTILE, percentile: -101.0, ..d }), ..good }, KP_ERROR_INVALID_ARGUMENT, "percentile"),
            (Call { options: opt(kp_rank_options { rank_by: KP_RANK_BY_PERCENTILE, percentile: f64::NAN, ..d }), ..good }, KP_ERROR_INVALID_ARGUMENT, "percentile NaN"),
            (Call { dtype: KP_DTYPE_U8, input: i32_input.as_ptr().cast(), options: opt(kp_rank_options { mode: KP_BOX_CONSTANT, cval: 256.0, ..d }), ..good }, KP_ERROR_INVALID_ARGUMENT, "cval 256 does not fit uint8"),
            (Call { dtype: KP_DTYPE_I32, input: i32_input.as_ptr().cast(), options: opt(kp_rank_options { mode: KP_BOX_CONSTANT, cval: f64::NAN, ..d }), ..good }, KP_ERROR_INVALID_ARGUMENT, "does not fit int32"),
            (Call { dtype: KP_DTYPE_U64, options: opt(kp_rank_options { mode: KP_BOX_CONSTANT, cval: -1.0, ..d }), ..good }, KP_ERROR_INVALID_ARGUMENT, "does not fit uint64"),
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
        let before = keys(&inside);
        let o = o.cast::<c_void>();
        #[rustfmt::skip]
        let overlapping = [
            (Call { output: o, shape: sizes_in_output, ..good }, "output and shape overlap"),
            (Call { output: o, options: opt(kp_rank_options { size: sizes_in_output, ..d }), ..good }, "output and size overlap"),
            (Call { output: o, options: opt(kp_rank_options { footprint: sizes_in_output.cast(), ..d }), ..good }, "output and footprint overlap"),
            (Call { output: o, options: opt(kp_rank_options { origin: o.cast::<i64>().wrapping_add(20), ..d }), ..good }, "output and origin overlap"),
        ];
        for (call, needle) in overlapping {
            expect_err(unsafe { call.run() }, KP_ERROR_INVALID_ARGUMENT, needle);
            assert_eq!(keys(&inside), before, "{needle}: output written");
        }
        let options_in_output = o.cast::<kp_rank_options>();
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
        // And the good call succeeds, with a constant mode too.
        let constant = kp_rank_options {
            mode: KP_BOX_CONSTANT,
            cval: 1.5,
            ..d
        };
        expect_ok(unsafe {
            Call {
                options: &constant,
                ..good
            }
            .run()
        });
        assert!(out.iter().all(|v| v.is_finite() && *v != POISON));
    }
}
