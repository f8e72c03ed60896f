//! The Lorenz 96 / Lorenz 2005 save_at C entry points: a call agrees with
//! the safe API bitwise (fresh random states, NaN-poisoned outputs), its
//! frames are those of the every-step trajectory, and every bad list is a
//! non-OK status with a message naming the reason, outputs untouched;
//! Lorenz 2005's F, b, c per member as each member alone, bad values and
//! buffers refused. On a CPU context, and on a GPU context when there is
//! one (the device entry points there too).
mod common;

use std::ptr::{null, null_mut};

use common::{contexts, expect_err, expect_ok, gpu_or_skip, Ctx, DeviceBuf, Rng};
use kernpack::ffi::lorenz::{
    kp_lorenz05_default_params, kp_lorenz05_params, kp_lorenz05_save_at_device_f64,
    kp_lorenz05_save_at_f32, kp_lorenz05_save_at_f64, kp_lorenz96_default_params, kp_lorenz96_f64,
    kp_lorenz96_save_at_device_f32, kp_lorenz96_save_at_device_f64, kp_lorenz96_save_at_f64,
};
use kernpack::ffi::{kp_context, kp_status, kp_status::*, KP_BACKEND_CPU, KP_BACKEND_GPU};
use kernpack::{Float, Kernpack, Lorenz05Params, Lorenz96Params};

fn bits<T: Copy + Into<f64>>(v: &[T]) -> Vec<u64> {
    v.iter().map(|x| (*x).into().to_bits()).collect()
}

/// A random sorted, unique list of steps of 0..=steps (never empty).
fn random_save_at(rng: &mut Rng, steps: u64) -> Vec<u64> {
    let mut at: Vec<u64> = (0..=steps).filter(|_| rng.next() < 0.3).collect();
    if at.is_empty() {
        at.push(rng.below(steps + 1));
    }
    at
}

/// Noisy Lorenz 96, fresh random states and lists: the C call against the
/// safe API on the same backend, and its frames against the every-step run.
#[test]
fn c_calls_agree_with_the_api_and_the_every_step_run() {
    for ctx in contexts("c_calls_agree_with_the_api_and_the_every_step_run") {
        let kp = match ctx_is_gpu(&ctx) {
            true => Kernpack::with_gpu(0).unwrap(),
            false => Kernpack::new(kernpack::Backend::Cpu).unwrap(),
        };
        let mut rng = Rng(0x5a7e ^ ctx_is_gpu(&ctx) as u64);
        for case in 0..6 {
            let members = 1 + rng.below(40) as usize;
            let steps = 1 + rng.below(30);
            let c = kernpack::ffi::lorenz::kp_lorenz96_params {
                n: [40, 36, 13][case % 3],
                noise: 0.5,
                seed: rng.next_u64(),
                member_offset: rng.below(100),
                ..kp_lorenz96_default_params()
            };
            let len = members * c.n;
            let initial: Vec<f64> = (0..len).map(|_| rng.range(-5.0, 10.0)).collect();
            let save_at = random_save_at(&mut rng, steps);
            let (mut out, mut saved) = (vec![f64::NAN; len], vec![f64::NAN; save_at.len() * len]);
            expect_ok(unsafe {
                kp_lorenz96_save_at_f64(
                    ctx.ptr(),
                    &c,
                    initial.as_ptr(),
                    members,
                    steps,
                    save_at.as_ptr(),
                    save_at.len(),
                    out.as_mut_ptr(),
                    saved.as_mut_ptr(),
                )
            });
            let p = Lorenz96Params {
                n: c.n,
                noise: c.noise,
                seed: c.seed,
                member_offset: c.member_offset,
                ..Default::default()
            };
            let want = kp.lorenz96_save_at(&p, &initial, steps, &save_at).unwrap();
            assert_eq!(bits(&out), bits(&want.final_state), "case {case}");
            assert_eq!(bits(&saved), bits(want.trajectory.as_ref().unwrap()));
            // The every-step trajectory through the plain entry point.
            let frames = steps as usize + 1;
            let (mut plain, mut traj) = (vec![f64::NAN; len], vec![f64::NAN; frames * len]);
            expect_ok(unsafe {
                kp_lorenz96_f64(
                    ctx.ptr(),
                    &c,
                    initial.as_ptr(),
                    members,
                    steps,
                    1,
                    plain.as_mut_ptr(),
                    traj.as_mut_ptr(),
                    traj.len(),
                )
            });
            assert_eq!(bits(&out), bits(&plain), "case {case}: final states");
            for (k, &s) in save_at.iter().enumerate() {
                let frame = &traj[s as usize * len..][..len];
                assert_eq!(bits(&saved[k * len..][..len]), bits(frame), "step {s}");
            }
        }
    }
}

fn ctx_is_gpu(ctx: &Ctx) -> bool {
    let mut gpu = 0;
    expect_ok(unsafe { kernpack::ffi::kp_context_is_gpu(ctx.ptr(), &mut gpu) });
    gpu != 0
}

/// Lorenz 2005 in f32 (NULL params: DART's defaults) against the API.
#[test]
fn c_lorenz05_f32_agrees_with_the_api() {
    for ctx in contexts("c_lorenz05_f32_agrees_with_the_api") {
        let kp = match ctx_is_gpu(&ctx) {
            true => Kernpack::with_gpu(0).unwrap(),
            false => Kernpack::new(kernpack::Backend::Cpu).unwrap(),
        };
        let mut rng = Rng(505);
        let p = Lorenz05Params::default();
        let initial: Vec<f32> = (0..2 * p.n).map(|_| rng.range(12.0, 18.0) as f32).collect();
        let save_at = [0u64, 3, 7];
        let (mut out, mut saved) = (vec![f32::NAN; 2 * p.n], vec![f32::NAN; 3 * 2 * p.n]);
        expect_ok(unsafe {
            kp_lorenz05_save_at_f32(
                ctx.ptr(),
                null(),
                initial.as_ptr(),
                2,
                null(),
                null(),
                null(),
                7,
                save_at.as_ptr(),
                3,
                out.as_mut_ptr(),
                saved.as_mut_ptr(),
            )
        });
        let want = kp.lorenz05_save_at(&p, &initial, 7, &save_at).unwrap();
        assert_eq!(bits(&out), bits(&want.final_state));
        assert_eq!(bits(&saved), bits(want.trajectory.as_ref().unwrap()));
        assert_eq!(bits(&saved[..2 * p.n]), bits(&initial), "frame 0");
    }
}

/// Unsorted, repeated and late steps, NULL lists and buffers with a
/// nonzero length: refused, outputs untouched.
#[test]
fn c_bad_lists_are_refused_with_outputs_untouched() {
    for ctx in contexts("c_bad_lists_are_refused_with_outputs_untouched") {
        let c = kp_lorenz96_default_params();
        let initial = vec![1.0f64; 2 * c.n];
        let (mut out, mut saved) = (vec![-7.0; 2 * c.n], vec![-7.0; 4 * c.n]);
        let call = |at: *const u64, len: usize, saved: *mut f64, out: *mut f64| unsafe {
            kp_lorenz96_save_at_f64(ctx.ptr(), &c, initial.as_ptr(), 2, 10, at, len, out, saved)
        };
        let (o, s) = (out.as_mut_ptr(), saved.as_mut_ptr());
        expect_err(
            call([3, 1].as_ptr(), 2, s, o),
            KP_ERROR_INVALID_ARGUMENT,
            "sorted",
        );
        expect_err(
            call([2, 2].as_ptr(), 2, s, o),
            KP_ERROR_INVALID_ARGUMENT,
            "unique",
        );
        let late = [4, 11];
        expect_err(
            call(late.as_ptr(), 2, s, o),
            KP_ERROR_INVALID_ARGUMENT,
            "past the last step",
        );
        expect_err(call(null(), 2, s, o), KP_ERROR_NULL_POINTER, "save_at");
        expect_err(
            call([1, 2].as_ptr(), 2, null_mut(), o),
            KP_ERROR_NULL_POINTER,
            "saved",
        );
        // A saved-states buffer over `initial` (its length is save_len x
        // members x N, as the caller states).
        let overlap = initial.as_ptr() as *mut f64;
        expect_err(
            call([1, 2].as_ptr(), 2, overlap, o),
            KP_ERROR_INVALID_ARGUMENT,
            "overlap",
        );
        assert!(
            out.iter().chain(&saved).all(|v| *v == -7.0),
            "written on failure"
        );
    }
}

/// The device entry points: NO_GPU on a CPU context; on a GPU, bitwise the
/// host entry point's result, bad lists refused before any launch.
#[test]
fn c_device_entries_agree_with_the_host_ones() {
    let cpu = Ctx::new(KP_BACKEND_CPU);
    let status =
        unsafe { kp_lorenz96_save_at_device_f32(cpu.ptr(), null(), 8, 1, 10, null(), 0, 16, 0, 0) };
    assert_eq!(status, KP_ERROR_NO_GPU);
    if gpu_or_skip("c_device_entries_agree_with_the_host_ones").is_none() {
        return;
    }
    let ctx = Ctx::new(KP_BACKEND_GPU);
    let mut rng = Rng(96);
    let c = kernpack::ffi::lorenz::kp_lorenz96_params {
        noise: 0.4,
        seed: 17,
        ..kp_lorenz96_default_params()
    };
    let (members, steps) = (300, 25);
    let len = members * c.n;
    let initial: Vec<f64> = (0..len).map(|_| rng.range(-5.0, 10.0)).collect();
    for save_at in [vec![0u64, 5, 25], vec![3, 4], vec![25]] {
        let d_initial = DeviceBuf::new(&ctx, &initial);
        let d_out = DeviceBuf::new(&ctx, &vec![f64::NAN; len]);
        let d_saved = DeviceBuf::new(&ctx, &vec![f64::NAN; save_at.len() * len]);
        expect_ok(unsafe {
            kp_lorenz96_save_at_device_f64(
                ctx.ptr(),
                &c,
                d_initial.ptr,
                members,
                steps,
                save_at.as_ptr(),
                save_at.len(),
                d_out.ptr,
                d_saved.ptr,
                0,
            )
        });
        let (mut out, mut saved) = (vec![0.0; len], vec![0.0; save_at.len() * len]);
        expect_ok(unsafe {
            kp_lorenz96_save_at_f64(
                ctx.ptr(),
                &c,
                initial.as_ptr(),
                members,
                steps,
                save_at.as_ptr(),
                save_at.len(),
                out.as_mut_ptr(),
                saved.as_mut_ptr(),
            )
        });
        assert_eq!(bits(&d_out.read::<f64>()), bits(&out), "{save_at:?}");
        assert_eq!(bits(&d_saved.read::<f64>()), bits(&saved), "{save_at:?}");
        // Bad lists, a missing saved buffer, saved overlapping out.
        let call = |at: &[u64], saved: u64| unsafe {
            kp_lorenz96_save_at_device_f64(
                ctx.ptr(),
                &c,
                d_initial.ptr,
                members,
                steps,
                at.as_ptr(),
                at.len(),
                d_out.ptr,
                saved,
                0,
            )
        };
        let unsorted = [*save_at.last().unwrap(), 0];
        expect_err(
            call(&unsorted, d_saved.ptr),
            KP_ERROR_INVALID_ARGUMENT,
            "save_at",
        );
        expect_err(
            call(&[steps + 1], d_saved.ptr),
            KP_ERROR_INVALID_ARGUMENT,
            "past",
        );
        expect_err(call(&save_at, 0), KP_ERROR_NULL_POINTER, "saved");
    }
    // Lorenz 2005 on device memory, against its host entry point (via the API).
    let p = Lorenz05Params::default();
    let c5 = kp_lorenz05_default_params();
    let initial: Vec<f64> = (0..3 * p.n).map(|_| rng.range(12.0, 18.0)).collect();
    let d_initial = DeviceBuf::new(&ctx, &initial);
    let d_out = DeviceBuf::new(&ctx, &vec![f64::NAN; initial.len()]);
    let d_saved = DeviceBuf::new(&ctx, &vec![f64::NAN; 2 * initial.len()]);
    let save_at = [2u64, 6];
    expect_ok(unsafe {
        kp_lorenz05_save_at_device_f64(
            ctx.ptr(),
            &c5,
            d_initial.ptr,
            3,
            0,
            0,
            0,
            6,
            save_at.as_ptr(),
            2,
            d_out.ptr,
            d_saved.ptr,
            0,
        )
    });
    let want = Kernpack::with_gpu(0)
        .unwrap()
        .lorenz05_save_at(&p, &initial, 6, &save_at)
        .unwrap();
    assert_eq!(bits(&d_out.read::<f64>()), bits(&want.final_state));
    assert_eq!(
        bits(&d_saved.read::<f64>()),
        bits(want.trajectory.as_ref().unwrap())
    );
}

/// `kp_lorenz05_save_at_{f32,f64}`.
type L05SaveAt<T> = unsafe extern "C" fn(
    *const kp_context,
    *const kp_lorenz05_params,
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

fn draw<T: Float>(rng: &mut Rng, len: usize, lo: f64, hi: f64) -> Vec<T> {
    (0..len).map(|_| T::from_f64(rng.range(lo, hi))).collect()
}

/// A small Lorenz 2005 of `model` (N > 2K, N > 2J), DART's F, b, c.
fn small_l05(rng: &mut Rng, model: i32) -> kp_lorenz05_params {
    let k = 2 * (1 + rng.below(5) as usize);
    let j = 1 + rng.below(5) as usize;
    kp_lorenz05_params {
        n: 2 * k.max(j) + 1 + rng.below(40) as usize,
        k,
        j,
        model,
        ..kp_lorenz05_default_params()
    }
}

/// The arguments of a `kp_lorenz05_save_at_{f32,f64}` call but the outputs:
/// `params->n` values per member in `initial`, F, b, c per member or NULL.
struct SaveAtCall<'a, T> {
    params: &'a kp_lorenz05_params,
    initial: &'a [T],
    each: [*const T; 3],
    steps: u64,
    save_at: &'a [u64],
}

impl<T: Float> SaveAtCall<'_, T> {
    /// The call through `f` on `ctx`, which must succeed, into NaN-filled
    /// outputs: the final states and the saved frames.
    fn run(&self, ctx: &Ctx, f: L05SaveAt<T>) -> (Vec<T>, Vec<T>) {
        let (len, nan) = (self.initial.len(), T::from_f64(f64::NAN));
        let (mut out, mut saved) = (vec![nan; len], vec![nan; self.save_at.len() * len]);
        let [forcing, b, c] = self.each;
        expect_ok(unsafe {
            f(
                ctx.ptr(),
                self.params,
                self.initial.as_ptr(),
                len / self.params.n,
                forcing,
                b,
                c,
                self.steps,
                self.save_at.as_ptr(),
                self.save_at.len(),
                out.as_mut_ptr(),
                saved.as_mut_ptr(),
            )
        });
        (out, saved)
    }
}

/// The host pointers of the per-member values `each` that the bits of
/// `mask` give (1: F, 2: b, 4: c), NULL for the others.
fn given<T>(each: &[Vec<T>; 3], mask: u32) -> [*const T; 3] {
    std::array::from_fn(|i| match mask & (1 << i) != 0 {
        true => each[i].as_ptr(),
        false => null(),
    })
}

/// Per-member F, b, c with chosen steps, every subset given (the others
/// NULL: the scalar), Models II and III: each member's final state and
/// frames bitwise those of the member run alone with its values as the
/// scalars of `params`.
fn per_member_case<T: Float + Into<f64>>(ctx: &Ctx, f: L05SaveAt<T>, rng: &mut Rng) {
    for model in [2, 3] {
        let c = small_l05(rng, model);
        let (members, steps) = (1 + rng.below(6) as usize, 1 + rng.below(10));
        let save_at = random_save_at(rng, steps);
        let n = c.n;
        let initial: Vec<T> = draw(rng, members * n, -2.0, 8.0);
        let each: [Vec<T>; 3] = [
            draw(rng, members, 8.0, 18.0),
            draw(rng, members, 5.0, 12.0),
            draw(rng, members, 1.0, 4.0),
        ];
        for mask in 0..8 {
            let ptrs = given(&each, mask);
            let run = SaveAtCall {
                params: &c,
                initial: &initial,
                each: ptrs,
                steps,
                save_at: &save_at,
            };
            let (out, saved) = run.run(ctx, f);
            for m in 0..members {
                let value = |i: usize, scalar: f64| match ptrs[i].is_null() {
                    true => scalar,
                    false => each[i][m].to_f64(),
                };
                let params = kp_lorenz05_params {
                    forcing: value(0, c.forcing),
                    b: value(1, c.b),
                    c: value(2, c.c),
                    ..c
                };
                let alone = SaveAtCall {
                    params: &params,
                    initial: &initial[m * n..][..n],
                    each: [null(); 3],
                    ..run
                };
                let (last, frames) = alone.run(ctx, f);
                let what = format!("{} model {model} mask {mask} member {m}", T::NAME);
                assert_eq!(bits(&out[m * n..][..n]), bits(&last), "{what}");
                for k in 0..save_at.len() {
                    let frame = &saved[(k * members + m) * n..][..n];
                    assert_eq!(bits(frame), bits(&frames[k * n..][..n]), "{what} frame {k}");
                }
            }
        }
    }
}

#[test]
fn c_lorenz05_per_member_save_at_equals_each_member_alone() {
    for ctx in contexts("c_lorenz05_per_member_save_at_equals_each_member_alone") {
        let mut rng = Rng(0x05ea ^ ctx_is_gpu(&ctx) as u64);
        per_member_case::<f64>(&ctx, kp_lorenz05_save_at_f64, &mut rng);
        per_member_case::<f32>(&ctx, kp_lorenz05_save_at_f32, &mut rng);
    }
}

/// Bad per-member values and buffers: non-finite values, arrays over an
/// output, with the list over `saved` and NULL lists and buffers alongside:
/// refused with a message naming the reason, the poisoned outputs
/// untouched.
#[test]
fn c_lorenz05_per_member_save_at_bad_input_is_refused_with_outputs_untouched() {
    for ctx in contexts("c_lorenz05_per_member_save_at_bad_input_is_refused") {
        let c = small_l05(&mut Rng(7), 3);
        let (members, len) = (3, 3 * c.n);
        let initial = vec![1.0f64; len];
        let save_at = [1u64, 4];
        let poison = f64::from_bits(0x7ff8_dead_beef_0001);
        let (mut out, mut saved) = (vec![poison; len], vec![poison; 2 * len]);
        let (o, s) = (out.as_mut_ptr(), saved.as_mut_ptr());
        let good = [12.0, 15.0, 18.0];
        let call = |each: [*const f64; 3], at: *const u64, saved: *mut f64, out: *mut f64| unsafe {
            kp_lorenz05_save_at_f64(
                ctx.ptr(),
                &c,
                initial.as_ptr(),
                members,
                each[0],
                each[1],
                each[2],
                5,
                at,
                2,
                out,
                saved,
            )
        };
        for (i, name) in ["forcing", "b", "c"].into_iter().enumerate() {
            for bad in [f64::NAN, f64::INFINITY, f64::NEG_INFINITY] {
                let values = [good[0], bad, good[2]];
                let mut each = [null(); 3];
                each[i] = values.as_ptr();
                expect_err(
                    call(each, save_at.as_ptr(), s, o),
                    KP_ERROR_INVALID_ARGUMENT,
                    &format!("{name}[1] (per member) is"),
                );
            }
            // An array over `out`, over `saved`: refused before any read.
            for (over, what) in [(o, "out"), (s, "saved")] {
                let mut each = [good.as_ptr(); 3];
                each[i] = over;
                expect_err(
                    call(each, save_at.as_ptr(), s, o),
                    KP_ERROR_INVALID_ARGUMENT,
                    &format!("{what} and {name} overlap"),
                );
            }
        }
        let each = [good.as_ptr(); 3];
        expect_err(
            call(each, [4, 1].as_ptr(), s, o),
            KP_ERROR_INVALID_ARGUMENT,
            "sorted",
        );
        expect_err(call(each, null(), s, o), KP_ERROR_NULL_POINTER, "save_at");
        expect_err(
            call(each, save_at.as_ptr(), null_mut(), o),
            KP_ERROR_NULL_POINTER,
            "saved",
        );
        // The list inside `saved` (a u64 per frame value's first bytes).
        let list_in_saved = s as *const u64;
        expect_err(
            call(each, list_in_saved, s, o),
            KP_ERROR_INVALID_ARGUMENT,
            "saved and save_at overlap",
        );
        let untouched = |v: &[f64]| v.iter().all(|x| x.to_bits() == poison.to_bits());
        assert!(untouched(&out) && untouched(&saved), "written on failure");
    }
}

/// `kp_lorenz05_save_at_device_f64` with F, b, c per member in device
/// memory (0: the scalar): NO_GPU on a CPU context; on a GPU bitwise the
/// host entry point with the same values, a short per-member array refused
/// with the outputs untouched.
#[test]
fn c_lorenz05_save_at_device_per_member_agrees_with_the_host_entry() {
    let cpu = Ctx::new(KP_BACKEND_CPU);
    let status = unsafe {
        kp_lorenz05_save_at_device_f64(cpu.ptr(), null(), 8, 1, 24, 0, 0, 10, null(), 0, 16, 0, 0)
    };
    assert_eq!(status, KP_ERROR_NO_GPU);
    let test = "c_lorenz05_save_at_device_per_member_agrees_with_the_host_entry";
    if gpu_or_skip(test).is_none() {
        return;
    }
    let ctx = Ctx::new(KP_BACKEND_GPU);
    let mut rng = Rng(2005);
    let c = small_l05(&mut rng, 3);
    let (members, steps, save_at) = (5, 8, [0u64, 3, 8]);
    let len = members * c.n;
    let initial: Vec<f64> = draw(&mut rng, len, -2.0, 8.0);
    let each: [Vec<f64>; 3] = [
        draw(&mut rng, members, 8.0, 18.0),
        draw(&mut rng, members, 5.0, 12.0),
        draw(&mut rng, members, 1.0, 4.0),
    ];
    let d_initial = DeviceBuf::new(&ctx, &initial);
    let d_each = each.each_ref().map(|v| DeviceBuf::new(&ctx, v));
    let d_short = DeviceBuf::new(&ctx, &each[0][..members - 1]);
    for mask in 0..8 {
        let picked = |i: usize| mask & (1 << i) != 0;
        let d_out = DeviceBuf::new(&ctx, &vec![f64::NAN; len]);
        let d_saved = DeviceBuf::new(&ctx, &vec![f64::NAN; save_at.len() * len]);
        let at = |i: usize| if picked(i) { d_each[i].ptr } else { 0 };
        let device = |forcing: u64| unsafe {
            kp_lorenz05_save_at_device_f64(
                ctx.ptr(),
                &c,
                d_initial.ptr,
                members,
                forcing,
                at(1),
                at(2),
                steps,
                save_at.as_ptr(),
                save_at.len(),
                d_out.ptr,
                d_saved.ptr,
                0,
            )
        };
        // A forcing array one value short: refused before any launch.
        // The driver's record of the allocation: "forcing needs ... bytes
        // at ..., beyond its allocation".
        expect_err(
            device(d_short.ptr),
            KP_ERROR_INVALID_ARGUMENT,
            "forcing needs",
        );
        assert!(
            d_out.read::<f64>().iter().all(|v| v.is_nan()),
            "written on failure"
        );
        expect_ok(device(at(0)));
        expect_ok(unsafe { kernpack::ffi::kp_stream_synchronize(ctx.ptr(), 0) });
        let host = SaveAtCall {
            params: &c,
            initial: &initial,
            each: given(&each, mask),
            steps,
            save_at: &save_at,
        };
        let (out, saved) = host.run(&ctx, kp_lorenz05_save_at_f64);
        assert_eq!(bits(&d_out.read::<f64>()), bits(&out), "mask {mask}");
        assert_eq!(bits(&d_saved.read::<f64>()), bits(&saved), "mask {mask}");
    }
}
