//! Lorenz ensembles on the CPU: the block driver every model shares (members
//! in blocks, blocks over threads, trajectory frames written in place) and
//! Lorenz 96 vectorised across members.
//!
//! Lorenz 96 (N = 40 by default) is too short a row to vectorise over sites,
//! so the SIMD lanes are members: a block of L members (L = one 512-bit
//! vector: 8 f64 or 16 f32) is transposed into a [site][lane] layout and
//! integrated for all steps there. Each lane performs exactly the operations
//! of `reference::lorenz::lorenz96_tendency` and `rk4_step`, in the same
//! order and in the same type, so f64 results are bitwise those of the
//! reference, and f32 results those of the reference's operations rounded
//! in f32 (as the GPU computes f32).
use std::sync::atomic::{AtomicU64, Ordering};

use super::parallel::{for_each_chunk, threads_for};
use crate::float::Float;
use crate::params::counter_rng;
use crate::params::lorenz::Lorenz96Params;
use crate::params::save_at::Frames;

/// Final states (members x n) and, with frames, the trajectory (frames x
/// members x n: every `every` steps, frame 0 the initial states, or after
/// each step of a save_at list).
pub(crate) struct Run<T> {
    pub final_state: Vec<T>,
    pub trajectory: Option<Vec<T>>,
}

/// The work of one block of consecutive members.
struct Block<'a, T> {
    /// The index of the block's first member in the ensemble.
    first: usize,
    /// members x n initial states of the block.
    initial: &'a [T],
    /// members x n: receives the final states.
    out: &'a mut [T],
    /// The block's part of every frame (see [`Frames::after`]).
    frames: Vec<&'a mut [T]>,
}

/// Site-steps worth a thread of their own: ~100 µs of RK4 at a few ns each.
const SITE_STEPS_PER_THREAD: usize = 1 << 15;

/// Integrates `initial` (members x n) in blocks of `block` members on
/// `threads` threads: `integrate(first, initial, out, frames)` runs the
/// block whose first member is `first` for all steps, writing frame k of
/// `frames` after the step [`Frames::after`] maps to k (frame 0 of `every`
/// before the first step) and the final states to `out`. Blocks are
/// independent, so the result does not depend on the thread count.
/// `progress(members done, members)` after each block.
#[allow(clippy::too_many_arguments)]
pub(crate) fn run_blocks<T: Float>(
    n: usize,
    initial: &[T],
    block: usize,
    steps: u64,
    frames: Frames<'_>,
    threads: usize,
    progress: Option<&(dyn Fn(u64, u64) + Sync)>,
    integrate: impl Fn(usize, &[T], &mut [T], &mut [&mut [T]]) + Sync,
) -> Run<T> {
    let members = initial.len() / n;
    let span = block * n;
    let mut final_state = vec![T::default(); initial.len()];
    let count = frames.count(steps);
    let mut trajectory = (count > 0).then(|| vec![T::default(); count * initial.len()]);
    {
        let mut blocks: Vec<Block<T>> = initial
            .chunks(span)
            .zip(final_state.chunks_mut(span))
            .enumerate()
            .map(|(b, (initial, out))| Block {
                first: b * block,
                initial,
                out,
                frames: Vec::with_capacity(count),
            })
            .collect();
        if let Some(t) = trajectory.as_mut() {
            for frame in t.chunks_mut(initial.len()) {
                for (b, part) in blocks.iter_mut().zip(frame.chunks_mut(span)) {
                    b.frames.push(part);
                }
            }
        }
        let done = AtomicU64::new(0);
        // Small runs (a data-assimilation step: tens of members, one step)
        // stay on the caller's thread: a thread's start costs tens of
        // microseconds, the run itself a few.
        let site_steps = initial.len().saturating_mul(steps.max(1) as usize);
        let threads = threads_for(threads, site_steps, SITE_STEPS_PER_THREAD);
        for_each_chunk(threads, &mut blocks, 1, None, |_, piece| {
            for b in piece.iter_mut() {
                integrate(b.first, b.initial, b.out, &mut b.frames);
                let count = (b.initial.len() / n) as u64;
                let finished = done.fetch_add(count, Ordering::Relaxed) + count;
                if let Some(report) = progress {
                    report(finished, members as u64);
                }
            }
        });
    }
    Run {
        final_state,
        trajectory,
    }
}

/// A Lorenz 96 ensemble (inputs validated by the caller) on `threads`
/// threads, in `T` arithmetic: `steps` steps of the run from its step
/// `first_step` on (the step index of the noise draws; 0 for a whole run).
pub(crate) fn lorenz96<T: Float>(
    p: &Lorenz96Params,
    (first_member, initial): (usize, &[T]),
    (first_step, steps): (u64, u64),
    frames: Frames<'_>,
    threads: usize,
    progress: Option<&(dyn Fn(u64, u64) + Sync)>,
) -> Run<T> {
    // One 512-bit vector of members per block (two 256-bit ones with AVX2).
    run_blocks(
        p.values_per_member(),
        initial,
        vector::<T>(),
        steps,
        frames,
        threads,
        progress,
        |first, init, out, frame_parts| {
            let block = L96Block {
                p,
                first: first_member + first,
                first_step,
                initial: init,
            };
            if vector::<T>() == 16 {
                l96_block::<T, 16>(&block, out, frame_parts, steps, frames)
            } else {
                l96_block::<T, 8>(&block, out, frame_parts, steps, frames)
            }
        },
    )
}

/// Lorenz 96's tangent linear model (inputs validated by the caller) on
/// `threads` threads, in `T` arithmetic: per member the RK4 run of x joined
/// with its K perturbations (`perturbations`: members x K x N), in the
/// reference's order. Returns the final states and perturbations.
pub(crate) fn lorenz96_tangent<T: Float>(
    p: &Lorenz96Params,
    initial: &[T],
    perturbations: &[T],
    steps: u64,
    threads: usize,
) -> (Vec<T>, Vec<T>) {
    let n = p.n;
    let k = perturbations.len() / initial.len();
    let (mut states, mut vectors) = (initial.to_vec(), perturbations.to_vec());
    let mut members: Vec<(&mut [T], &mut [T])> = states
        .chunks_mut(n)
        .zip(vectors.chunks_mut(k * n))
        .collect();
    let work = perturbations.len().saturating_mul(steps.max(1) as usize);
    let threads = threads_for(threads, work, SITE_STEPS_PER_THREAD);
    for_each_chunk(threads, &mut members, 1, None, |first, piece| {
        for (i, (x, v)) in piece.iter_mut().enumerate() {
            tangent_member(p, (first + i) as u64, x, v, steps);
        }
    });
    (states, vectors)
}

/// One member's joint run (x, then its perturbations in `v`), in place.
fn tangent_member<T: Float>(p: &Lorenz96Params, member: u64, x: &mut [T], v: &mut [T], steps: u64) {
    let (n, dt, forcing) = (p.n, T::from_f64(p.dt), T::from_f64(p.forcing));
    let mut z: Vec<T> = x.iter().chain(v.iter()).copied().collect();
    let (mut stage, mut inc, mut dz) = (z.clone(), z.clone(), z.clone());
    let mut w = vec![T::default(); n];
    let tendency = |s: &[T], dz: &mut [T]| {
        let (x, vs) = s.split_at(n);
        let (dx, dvs) = dz.split_at_mut(n);
        for i in 0..n {
            let (m2, m1, p1) = ((i + n - 2) % n, (i + n - 1) % n, (i + 1) % n);
            dx[i] = (x[p1] - x[m2]) * x[m1] - x[i] + forcing;
        }
        for (v, dv) in vs.chunks(n).zip(dvs.chunks_mut(n)) {
            for i in 0..n {
                let (m2, m1, p1) = ((i + n - 2) % n, (i + n - 1) % n, (i + 1) % n);
                dv[i] = (v[p1] - v[m2]) * x[m1] + (x[p1] - x[m2]) * v[m1] - v[i];
            }
        }
    };
    for step in 0..steps {
        if p.noise > 0.0 {
            let scale = p.noise_per_step();
            for (site, wi) in w.iter_mut().enumerate() {
                let at = p.step_offset + step;
                let draw = counter_rng::draw(p.seed, p.member_offset + member, at, site as u32);
                *wi = T::from_f64(scale * counter_rng::standard_normal(draw));
            }
        }
        for s in 0..4 {
            tendency(if s == 0 { &z } else { &stage }, &mut dz);
            for i in 0..z.len() {
                let kk = dt * dz[i];
                let kk = if p.noise > 0.0 && i < n {
                    kk + w[i]
                } else {
                    kk
                };
                let (zi, inc_i, out) = (z[i], &mut inc[i], &mut stage[i]);
                match s {
                    0 => rk4_stage::<T, 0>(kk, zi, inc_i, out),
                    1 => rk4_stage::<T, 1>(kk, zi, inc_i, out),
                    2 => rk4_stage::<T, 2>(kk, zi, inc_i, out),
                    _ => rk4_stage::<T, 3>(kk, zi, inc_i, out),
                }
            }
        }
        // Stage 3 wrote the new state into `stage`.
        std::mem::swap(&mut z, &mut stage);
    }
    x.copy_from_slice(&z[..n]);
    v.copy_from_slice(&z[n..]);
}

/// Values of `T` per 512-bit vector (16 f32, 8 f64): the lane count of the
/// member-blocked kernels.
pub(crate) const fn vector<T>() -> usize {
    64 / std::mem::size_of::<T>()
}

/// One RK4 stage S (0..=3) at one value, as the reference's `rk4_step`, from
/// k = dt f(x) and the step's start z: stage 0 starts `inc` at k/6 and sets
/// `out` = z + k/2, stage 1 adds k/3 and sets z + k/2, stage 2 adds k/3 and
/// sets z + k, stage 3 adds k/6 and sets `out` = z + inc (the next z).
/// Divisions by 6 and 3 are kept (not reciprocal products) for bitwise
/// equality. Every model's loops over sites call it, inlined, so that they
/// vectorise.
#[inline(always)]
pub(crate) fn rk4_stage<T: Float, const S: usize>(k: T, z: T, inc: &mut T, out: &mut T) {
    let (half, third, sixth) = (T::from_f64(0.5), T::from_f64(3.0), T::from_f64(6.0));
    match S {
        0 => {
            *inc = k / sixth;
            *out = z + k * half;
        }
        1 => {
            *inc += k / third;
            *out = z + k * half;
        }
        2 => {
            *inc += k / third;
            *out = z + k;
        }
        _ => {
            *inc += k / sixth;
            *out = z + *inc;
        }
    }
}

/// RK4 stage S ([`rk4_stage`]) on equally long runs of values (sites x
/// lanes, flattened) whose neighbours k-2, k-1, k+1 are `xm2`, `xm1`, `xp1`,
/// forced by `forcing` and, with noise, `w` added to each `k`.
/// A plain loop over equal-length slices, which LLVM vectorises (closures
/// or per-site lane arrays in a multiversioned function measured 3-10x
/// slower: partly scalar, partly called outside the target features).
#[inline(always)]
fn l96_run<T: Float, const S: usize>(
    dt: T,
    (xm2, xm1, x, xp1): (&[T], &[T], &[T], &[T]),
    (forcing, w): (&[T], Option<&[T]>),
    z: &[T],
    inc: &mut [T],
    out: &mut [T],
) {
    let len = out.len();
    let (xm2, xm1, x, xp1, z, inc, forcing) = (
        &xm2[..len],
        &xm1[..len],
        &x[..len],
        &xp1[..len],
        &z[..len],
        &mut inc[..len],
        &forcing[..len],
    );
    // (X_{k+1} - X_{k-2}) X_{k-1} - X_k + F, as the reference.
    let tendency = |j: usize| (xp1[j] - xm2[j]) * xm1[j] - x[j] + forcing[j];
    match w {
        Some(w) => {
            let w = &w[..len];
            for j in 0..len {
                let k = dt * tendency(j) + w[j];
                rk4_stage::<T, S>(k, z[j], &mut inc[j], &mut out[j]);
            }
        }
        None => {
            for j in 0..len {
                rk4_stage::<T, S>(dt * tendency(j), z[j], &mut inc[j], &mut out[j]);
            }
        }
    }
}

/// Stage S over every site: `x`, `z`, `inc` and `out` hold n + 3 sites x L
/// lanes (flattened), sites 0..n at [`HALO`] `..`, preceded by copies of
/// sites n-2, n-1 and followed by a copy of site 0 (the periodic neighbours,
/// see [`fill_halo`]), so every site is one run; `forcing` (and the noise
/// `w`) hold sites 0..n x L lanes. Fills `out`'s halo.
#[inline(always)]
fn l96_stage<T: Float, const L: usize, const S: usize>(
    dt: T,
    forcing: (&[T], Option<&[T]>),
    x: &[T],
    z: &[T],
    inc: &mut [T],
    out: &mut [T],
) {
    let core = HALO * L..out.len() - L;
    let neighbours = (x, &x[L..], &x[2 * L..], &x[3 * L..]);
    let (z, inc, o) = (&z[core.clone()], &mut inc[core.clone()], &mut out[core]);
    l96_run::<T, S>(dt, neighbours, forcing, z, inc, o);
    fill_halo::<T, L>(out);
}

/// Sites before the first one in the padded arrays of [`l96_stage`].
const HALO: usize = 2;

/// Copies sites n-2, n-1 of `x` (padded, n + 3 sites x L lanes) before site
/// 0 and site 0 after site n-1.
#[inline(always)]
fn fill_halo<T: Float, const L: usize>(x: &mut [T]) {
    let end = x.len() - L;
    x.copy_within(end - HALO * L..end, 0);
    x.copy_within(HALO * L..(HALO + 1) * L, end);
}

/// Writes lane l of `z` (padded, see [`l96_stage`]) to X of member l of
/// `dst` (members x `values` per member, X first), and a forcing held in
/// the state (`f`: sites x lanes) after it.
#[inline(always)]
fn store<T: Float, const L: usize>(n: usize, z: &[T], f: Option<&[T]>, dst: &mut [T]) {
    let values = if f.is_some() { 2 * n } else { n };
    for (l, member) in dst.chunks_exact_mut(values).enumerate() {
        let (x, forcing) = member.split_at_mut(n);
        for (i, v) in x.iter_mut().enumerate() {
            *v = z[(HALO + i) * L + l];
        }
        if let Some(f) = f {
            for (i, v) in forcing.iter_mut().enumerate() {
                *v = f[i * L + l];
            }
        }
    }
}

/// One block of up to L consecutive members of a Lorenz 96 ensemble.
struct L96Block<'a, T> {
    p: &'a Lorenz96Params,
    /// The block's first member in the ensemble (the noise's member index).
    first: usize,
    /// The run's step before the block's first step (the noise's step index).
    first_step: u64,
    /// The block's initial states (members x values per member).
    initial: &'a [T],
}

/// One block of up to L members for all steps. Lanes past the block's
/// members repeat its last member (finite values; never written out).
#[macro_rules_attribute::apply(simd_targets!)]
fn l96_block<T: Float, const L: usize>(
    block: &L96Block<'_, T>,
    out: &mut [T],
    frame_parts: &mut [&mut [T]],
    steps: u64,
    frames: Frames<'_>,
) {
    let (p, initial) = (block.p, block.initial);
    let (n, values, dt) = (p.n, p.values_per_member(), T::from_f64(p.dt));
    let count = initial.len() / values;
    let lane = |l: usize| &initial[l.min(count - 1) * values..][..values];
    let mut z = vec![T::default(); (n + HALO + 1) * L];
    // F per site and lane: the state's, or the one F.
    let mut forcing = vec![T::from_f64(p.forcing); n * L];
    for l in 0..L {
        for i in 0..n {
            z[(HALO + i) * L + l] = lane(l)[i];
            if p.forcing_in_state {
                forcing[i * L + l] = lane(l)[n + i];
            }
        }
    }
    let in_state = p.forcing_in_state.then_some(&forcing[..]);
    fill_halo::<T, L>(&mut z);
    let (mut inc, mut a, mut b) = (z.clone(), z.clone(), z.clone());
    let mut w = (p.noise > 0.0).then(|| vec![T::default(); n * L]);
    let scale = p.noise_per_step();
    if let Some(k) = frames.after(0) {
        store::<T, L>(n, &z, in_state, frame_parts[k]);
    }
    for step in 1..=steps {
        if let Some(w) = w.as_mut() {
            for l in 0..count {
                let member = p.member_offset + (block.first + l) as u64;
                let at = p.step_offset + block.first_step + step - 1;
                for i in 0..n {
                    let draw = counter_rng::draw(p.seed, member, at, i as u32);
                    w[i * L + l] = T::from_f64(scale * counter_rng::standard_normal(draw));
                }
            }
        }
        let f = (&forcing[..], w.as_deref());
        // Stage inputs z, a, b, a, as the reference's.
        l96_stage::<T, L, 0>(dt, f, &z, &z, &mut inc, &mut a);
        l96_stage::<T, L, 1>(dt, f, &a, &z, &mut inc, &mut b);
        l96_stage::<T, L, 2>(dt, f, &b, &z, &mut inc, &mut a);
        l96_stage::<T, L, 3>(dt, f, &a, &z, &mut inc, &mut b);
        std::mem::swap(&mut z, &mut b);
        if let Some(k) = frames.after(step) {
            store::<T, L>(n, &z, in_state, frame_parts[k]);
        }
    }
    store::<T, L>(n, &z, in_state, out);
}

#[cfg(test)]
mod tests;
