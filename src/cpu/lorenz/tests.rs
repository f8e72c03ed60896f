//! The fast Lorenz paths against `reference::lorenz`: f64 bitwise (the same
//! operations in the same order per member / site), f32 within the rounding
//! of f32 arithmetic, and bitwise equal for 1 and 3 threads.
use proptest::prelude::*;

use super::Run;
use crate::cpu::{lorenz, lorenz05, window_sum};
use crate::float::Float;
use crate::params::lorenz::{Lorenz05Model, Lorenz05Params, Lorenz96Params, MemberParams};
use crate::params::save_at::{segments, Frames};
use crate::reference::lorenz as reference;

struct Rng(u64);
impl Rng {
    fn next(&mut self) -> f64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        (self.0 >> 11) as f64 / (1u64 << 53) as f64
    }
    fn range(&mut self, lo: f64, hi: f64) -> f64 {
        lo + (hi - lo) * self.next()
    }
}

/// Random non-zero states around the attractor's range, rounded to T (so the
/// f64 reference starts from exactly the T values).
fn states<T: Float>(seed: u64, len: usize, lo: f64, hi: f64) -> Vec<T> {
    let mut rng = Rng(seed | 1);
    (0..len).map(|_| T::from_f64(rng.range(lo, hi))).collect()
}

fn f64s<T: Float>(v: &[T]) -> Vec<f64> {
    v.iter().map(|x| x.to_f64()).collect()
}

/// The steps of 0..=steps whose bit of `mask` is set (bit s % 64): a
/// sorted, unique save_at list, empty for some masks.
fn save_at_from(mask: u64, steps: u64) -> Vec<u64> {
    (0..=steps).filter(|s| mask >> (s % 64) & 1 == 1).collect()
}

/// f64: bitwise. f32 against the f64 reference: every operation rounds to
/// 2^-24 relative (~6e-8) and a tendency sums up to ~100 terms, so on a
/// well-conditioned run the error stays < ~20 * 6e-8 * (sum of |terms|) ~ 1e-5
/// of max |Z|; 2e-5, the GPU tests' f32 tolerance, leaves margin. Random
/// white-noise states are not well conditioned: Model III's b^2 [Y, Y] term
/// grows a one-ulp difference ~600x in 9 steps of dt 0.001. So the tolerance
/// adds 16 times `nudged`'s distance from `want`: the f64 reference started
/// from the same states moved by one f32 ulp (2^-24 relative, random signs).
/// The f32 run's rounding errors are such ulp-sized nudges, made at every
/// stage and grown over fewer steps; over 3,000 random L05 cases the f32
/// error stayed below 6 times that distance (and below 1.8e-5 of max |Z|).
fn compare<T: Float>(
    what: &str,
    got: &[T],
    want: &[f64],
    nudged: &[f64],
) -> Result<(), TestCaseError> {
    prop_assert_eq!(got.len(), want.len());
    let got = f64s(got);
    if T::NAME == "f64" {
        for (i, (g, w)) in got.iter().zip(want).enumerate() {
            prop_assert!(
                g.to_bits() == w.to_bits(),
                "{}: value {}: {} vs {}",
                what,
                i,
                g,
                w
            );
        }
    } else {
        let scale = want.iter().fold(0.0f64, |m, v| m.max(v.abs()));
        let err = max_distance(&got, want);
        let growth = max_distance(nudged, want);
        prop_assert!(
            err <= 2e-5 * scale + 16.0 * growth,
            "{}: error {} of {} (one-ulp nudge grew to {})",
            what,
            err,
            scale,
            growth
        );
    }
    Ok(())
}

fn max_distance(a: &[f64], b: &[f64]) -> f64 {
    a.iter()
        .zip(b)
        .fold(0.0f64, |m, (x, y)| m.max((x - y).abs()))
}

/// `z` with every value moved by one f32 ulp (2^-24 relative), up or down at
/// random: where the f64 reference goes from there measures how far the run
/// grows rounding-sized differences.
fn nudged_by_one_ulp(seed: u64, z: &[f64]) -> Vec<f64> {
    let mut rng = Rng(seed ^ 0x9e37_79b9_7f4a_7c15);
    let ulp = 2f64.powi(-24);
    z.iter()
        .map(|v| v * (1.0 + if rng.next() < 0.5 { -ulp } else { ulp }))
        .collect()
}

fn same_bits<T: Float>(a: &Run<T>, b: &Run<T>) -> bool {
    let bits = |v: &[T]| v.iter().map(|x| x.to_f64().to_bits()).collect::<Vec<_>>();
    bits(&a.final_state) == bits(&b.final_state)
        && a.trajectory.as_deref().map(bits) == b.trajectory.as_deref().map(bits)
}

/// Runs `fast` on 1 and 3 threads (poisoned outputs cannot be passed: the
/// driver allocates them; it writes every value, which the length and the
/// comparison check) and compares with `reference` run from `z`; for f32 also
/// from `z` nudged by one ulp (see `compare`).
fn check_run<T: Float>(
    what: &str,
    seed: u64,
    z: &[f64],
    fast: impl Fn(usize) -> Run<T>,
    reference: impl Fn(&[f64]) -> reference::EnsembleRun,
) -> Result<(), TestCaseError> {
    let want = reference(z);
    let nudged = if T::NAME == "f64" {
        None
    } else {
        Some(reference(&nudged_by_one_ulp(seed, z)))
    };
    let nudged = nudged.as_ref().unwrap_or(&want);
    let one = fast(1);
    compare(
        &format!("{what} final"),
        &one.final_state,
        &want.final_state,
        &nudged.final_state,
    )?;
    prop_assert_eq!(one.trajectory.is_some(), want.trajectory.is_some());
    if let (Some(got), Some(want), Some(nudged)) =
        (&one.trajectory, &want.trajectory, &nudged.trajectory)
    {
        compare(&format!("{what} trajectory"), got, want, nudged)?;
    }
    prop_assert!(
        same_bits(&one, &fast(3)),
        "{}: 1 and 3 threads differ",
        what
    );
    Ok(())
}

fn l96_case<T: Float>(
    seed: u64,
    n: usize,
    members: usize,
    steps: u64,
    (every, save_at): (u64, &[u64]),
) -> Result<(), TestCaseError> {
    // One case in three carries the forcing in the state (per member and
    // site), one in two adds noise.
    let mut rng = Rng(seed ^ 0x5eed);
    let p = Lorenz96Params {
        n,
        forcing: 8.0 + Rng(seed).range(-2.0, 2.0),
        dt: 0.05,
        forcing_in_state: seed % 3 == 0,
        noise: if seed % 2 == 0 {
            rng.range(0.0, 1.0)
        } else {
            0.0
        },
        seed: seed.rotate_left(17),
        member_offset: seed % 1000,
        step_offset: (seed >> 10) % 5000,
    };
    let z = states::<T>(seed, p.values_per_member() * members, -5.0, 10.0);
    check_run(
        &format!("L96 {} {p:?} members {members}", T::NAME),
        seed,
        &f64s(&z),
        |threads| {
            let frames = Frames::of(every, save_at);
            lorenz::lorenz96(&p, (0, &z), (0, steps), frames, threads, None)
        },
        |start| match save_at.is_empty() {
            true => reference::lorenz96(&p, start, steps, every, None),
            false => reference::lorenz96_save_at(&p, start, (0, steps), save_at),
        },
    )
}

#[allow(clippy::too_many_arguments)]
fn l05_case<T: Float>(
    seed: u64,
    model3: bool,
    half_k: usize,
    j: usize,
    extra: usize,
    members: usize,
    steps: u64,
    (every, save_at): (u64, &[u64]),
    per_member: u8,
) -> Result<(), TestCaseError> {
    let k = 2 * half_k;
    let p = Lorenz05Params {
        n: (2 * k).max(2 * j) + 1 + extra,
        k,
        j,
        model: if model3 {
            Lorenz05Model::III
        } else {
            Lorenz05Model::II
        },
        dt: 0.001,
        ..Default::default()
    };
    let z = states::<T>(seed, p.n * members, -5.0, 15.0);
    // F, b, c per member (`per_member`: bit 0 F, bit 1 b, bit 2 c).
    let given = |bit: u32, lo: f64, hi: f64| {
        (per_member >> bit & 1 == 1).then(|| states::<T>(seed ^ (bit as u64 + 1), members, lo, hi))
    };
    let (f, b, c) = (given(0, 6.0, 12.0), given(1, 6.0, 14.0), given(2, 1.5, 3.5));
    let each = MemberParams {
        forcing: f.as_deref(),
        b: b.as_deref(),
        c: c.as_deref(),
    };
    let wide = each.map(f64s);
    let each_f64 = wide.as_ref().map(Vec::as_slice);
    check_run(
        &format!(
            "L05 {} {p:?} members {members} per member {per_member:03b}",
            T::NAME
        ),
        seed,
        &f64s(&z),
        |threads| {
            let frames = Frames::of(every, save_at);
            lorenz05::lorenz05(&p, (0, &z), &each, (0, steps), frames, threads, None)
        },
        |start| {
            let frames = Frames::of(every, save_at);
            reference::lorenz05_each_frames(&p, &each_f64, start, steps, frames, None)
        },
    )
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(32))]

    #[test]
    fn lorenz96_matches_the_reference(
        seed in any::<u64>(),
        n in 4usize..70,
        members in prop::sample::select(vec![1usize, 7, 8, 9, 16, 17, 33]),
        steps in 0u64..25,
        every in 0u64..5,
        single in any::<bool>(),
        listed in any::<bool>(),
        mask in any::<u64>(),
    ) {
        // A run keeps frames every `every` steps or, `listed`, at save_at.
        let steps = if single { steps.min(10) } else { steps };
        let every = if listed { 0 } else { every.min(steps) };
        let save_at = if listed { save_at_from(mask, steps) } else { Vec::new() };
        if single {
            l96_case::<f32>(seed, n, members, steps, (every, &save_at))?;
        } else {
            l96_case::<f64>(seed, n, members, steps, (every, &save_at))?;
        }
    }

    #[test]
    fn lorenz05_matches_the_reference(
        seed in any::<u64>(),
        model3 in any::<bool>(),
        half_k in 1usize..9,
        j in 1usize..14,
        extra in 0usize..90,
        members in prop::sample::select(vec![1usize, 2, 3, 7]),
        steps in 0u64..11,
        every in 0u64..4,
        single in any::<bool>(),
        listed in any::<bool>(),
        mask in any::<u64>(),
        per_member in 0u8..8,
    ) {
        // Frames every `every` steps or at save_at; F, b, c per member by
        // the bits of `per_member` (0: the scalars).
        let every = if listed { 0 } else { every.min(steps) };
        let save_at = if listed { save_at_from(mask, steps) } else { Vec::new() };
        let frames = (every, &save_at[..]);
        let each = per_member;
        if single {
            l05_case::<f32>(seed, model3, half_k, j, extra, members, steps, frames, each)?;
        } else {
            l05_case::<f64>(seed, model3, half_k, j, extra, members, steps, frames, each)?;
        }
    }

    /// A noisy run cut into segments at the saved steps, each drawing its
    /// noise from its first step's index in the whole run, is the whole run
    /// bitwise, on the fast path and the reference alike; and a frame of
    /// save_at is the frame of `every` for the same step.
    #[test]
    fn noisy_runs_in_segments_are_the_whole_run_bitwise(
        seed in any::<u64>(),
        members in prop::sample::select(vec![1usize, 8, 9, 17]),
        steps in 1u64..30,
        mask in any::<u64>(),
        every in 1u64..6,
    ) {
        let p = Lorenz96Params {
            n: 12,
            noise: 0.7,
            seed,
            member_offset: seed % 97,
            ..Default::default()
        };
        let z = states::<f64>(seed, p.n * members, -5.0, 10.0);
        let save_at = save_at_from(mask, steps);
        let whole = lorenz::lorenz96(&p, (0, &z), (0, steps), Frames::Every(0), 2, None);
        let reference_whole = reference::lorenz96(&p, &z, steps, 0, None);
        let reference_whole = Run {
            final_state: reference_whole.final_state,
            trajectory: None,
        };
        prop_assert!(same_bits(&whole, &reference_whole), "the fast path and the reference differ");
        // The segments by hand: from each saved state to the next.
        let (mut state, mut reference_state, mut at) = (z.clone(), z.clone(), 0);
        let mut frames = Vec::new();
        for segment in segments(&save_at, steps) {
            let piece = (at, segment.steps);
            state = lorenz::lorenz96(&p, (0, &state), piece, Frames::Every(0), 1, None).final_state;
            reference_state = reference::lorenz96_save_at(&p, &reference_state, piece, &[]).final_state;
            if segment.frame.is_some() {
                frames.extend_from_slice(&state);
            }
            at += segment.steps;
        }
        let bits = |v: &[f64]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
        prop_assert_eq!(bits(&state), bits(&whole.final_state));
        prop_assert_eq!(bits(&reference_state), bits(&whole.final_state));
        // The run with save_at: those frames, the same final state.
        let listed = lorenz::lorenz96(&p, (0, &z), (0, steps), Frames::At(&save_at), 3, None);
        prop_assert_eq!(bits(&listed.final_state), bits(&whole.final_state));
        prop_assert_eq!(listed.trajectory.as_deref().map(bits), (!save_at.is_empty()).then(|| bits(&frames)));
        // Against `every`: the frames at the steps both keep.
        let every = every.min(steps);
        let regular = lorenz::lorenz96(&p, (0, &z), (0, steps), Frames::Every(every), 1, None);
        let regular = regular.trajectory.unwrap();
        let len = z.len();
        for (k, &s) in save_at.iter().enumerate().filter(|(_, s)| **s % every == 0) {
            let f = (s / every) as usize;
            prop_assert_eq!(bits(&frames[k * len..][..len]), bits(&regular[f * len..][..len]), "step {}", s);
        }
    }

    #[test]
    fn window_sum_matches_the_reference_bitwise(
        seed in any::<u64>(),
        rows in 1usize..12,
        n in 1usize..3000,
        half in 0usize..40,
        pad in 0usize..5,
        single in any::<bool>(),
    ) {
        if single {
            window_case::<f32>(seed, rows, n, half, pad)?;
        } else {
            window_case::<f64>(seed, rows, n, half, pad)?;
        }
    }
}

fn window_case<T: Float>(
    seed: u64,
    rows: usize,
    n: usize,
    half: usize,
    pad: usize,
) -> Result<(), TestCaseError> {
    let pitch = n + pad;
    let len = (rows - 1) * pitch + n;
    let x = states::<T>(seed, len, -1.0, 1.0);
    let w = states::<T>(seed ^ 0xabc, 2 * half + 1, -1.0, 1.0);
    // Poisoned outputs: the gaps between rows must keep their NaN.
    let mut want = vec![T::from_f64(f64::NAN); len];
    reference::window_sum(&x, &w, rows, n, pitch, &mut want);
    for threads in [1, 3] {
        let mut got = vec![T::from_f64(f64::NAN); len];
        window_sum::window_sum(&x, &w, rows, n, pitch, &mut got, threads);
        let bits = |v: &[T]| v.iter().map(|x| x.to_f64().to_bits()).collect::<Vec<_>>();
        prop_assert!(bits(&got) == bits(&want), "{} threads", threads);
    }
    Ok(())
}

/// DART's defaults (N = 960, K = 32, J = 12) for both models, f64 bitwise.
#[test]
fn lorenz05_dart_defaults_match_the_reference_bitwise() {
    for model in [Lorenz05Model::III, Lorenz05Model::II] {
        let p = Lorenz05Params {
            model,
            ..Default::default()
        };
        let z = states::<f64>(7, p.n * 3, -5.0, 15.0);
        check_run(
            "DART defaults",
            7,
            &z,
            |threads| {
                let each = Default::default();
                lorenz05::lorenz05(&p, (0, &z), &each, (0, 12), Frames::Every(4), threads, None)
            },
            |start| reference::lorenz05(&p, start, 12, 4, None),
        )
        .unwrap();
    }
}

/// Progress is reported per block, in members, ending at (members, members).
#[test]
fn progress_counts_members_to_completion() {
    use std::sync::Mutex;
    let p = Lorenz96Params::default();
    let z = states::<f64>(3, p.n * 37, -5.0, 10.0);
    let seen = Mutex::new(Vec::new());
    let report = |done: u64, total: u64| seen.lock().unwrap().push((done, total));
    lorenz::lorenz96(&p, (0, &z), (0, 3), Frames::Every(0), 2, Some(&report));
    let mut seen = seen.into_inner().unwrap();
    seen.sort();
    assert_eq!(seen.len(), 37usize.div_ceil(8));
    assert_eq!(seen.last(), Some(&(37, 37)));
}
