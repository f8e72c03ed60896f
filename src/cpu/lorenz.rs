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
use crate::params::lorenz::{frame_count, Lorenz96Params};

/// Final states (members x n) and, with `every > 0`, the trajectory
/// (frames x members x n, frame 0 the initial states).
pub(crate) struct Run<T> {
    pub final_state: Vec<T>,
    pub trajectory: Option<Vec<T>>,
}

/// The work of one block of consecutive members.
struct Block<'a, T> {
    /// members x n initial states of the block.
    initial: &'a [T],
    /// members x n: receives the final states.
    out: &'a mut [T],
    /// The block's part of frames 1, 2, ... (frame f after f * every steps).
    frames: Vec<&'a mut [T]>,
}

/// Site-steps worth a thread of their own: ~100 µs of RK4 at a few ns each.
const SITE_STEPS_PER_THREAD: usize = 1 << 15;

/// Integrates `initial` (members x n) in blocks of `block` members on
/// `threads` threads: `integrate(initial, out, frames)` runs one block for
/// all steps, writing frame f of `frames` after f * every steps and the final
/// states to `out`. Blocks are independent, so the result does not depend on
/// the thread count. `progress(members done, members)` after each block.
#[allow(clippy::too_many_arguments)]
pub(crate) fn run_blocks<T: Float>(
    n: usize,
    initial: &[T],
    block: usize,
    steps: u64,
    every: u64,
    threads: usize,
    progress: Option<&(dyn Fn(u64, u64) + Sync)>,
    integrate: impl Fn(&[T], &mut [T], &mut [&mut [T]]) + Sync,
) -> Run<T> {
    let members = initial.len() / n;
    let span = block * n;
    let mut final_state = vec![T::default(); initial.len()];
    let frames = frame_count(steps, every);
    let mut trajectory = (every > 0).then(|| vec![T::default(); frames * initial.len()]);
    {
        let mut blocks: Vec<Block<T>> = initial
            .chunks(span)
            .zip(final_state.chunks_mut(span))
            .map(|(initial, out)| Block {
                initial,
                out,
                frames: Vec::with_capacity(frames.saturating_sub(1)),
            })
            .collect();
        if let Some(t) = trajectory.as_mut() {
            let (first, later) = t.split_at_mut(initial.len());
            first.copy_from_slice(initial);
            for frame in later.chunks_mut(initial.len()) {
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
                integrate(b.initial, b.out, &mut b.frames);
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
/// threads, in `T` arithmetic.
pub(crate) fn lorenz96<T: Float>(
    p: &Lorenz96Params,
    initial: &[T],
    steps: u64,
    every: u64,
    threads: usize,
    progress: Option<&(dyn Fn(u64, u64) + Sync)>,
) -> Run<T> {
    let (n, forcing, dt) = (p.n, T::from_f64(p.forcing), T::from_f64(p.dt));
    // One 512-bit vector of members per block (two 256-bit ones with AVX2).
    run_blocks(
        n,
        initial,
        vector::<T>(),
        steps,
        every,
        threads,
        progress,
        |init, out, frames| {
            if vector::<T>() == 16 {
                l96_block::<T, 16>(n, forcing, dt, init, out, frames, steps, every)
            } else {
                l96_block::<T, 8>(n, forcing, dt, init, out, frames, steps, every)
            }
        },
    )
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
/// lanes, flattened) whose neighbours k-2, k-1, k+1 are `xm2`, `xm1`, `xp1`.
/// A plain loop over equal-length slices, which LLVM vectorises (closures
/// or per-site lane arrays in a multiversioned function measured 3-10x
/// slower: partly scalar, partly called outside the target features).
#[inline(always)]
#[allow(clippy::too_many_arguments)]
fn l96_run<T: Float, const S: usize>(
    forcing: T,
    dt: T,
    (xm2, xm1, x, xp1): (&[T], &[T], &[T], &[T]),
    z: &[T],
    inc: &mut [T],
    out: &mut [T],
) {
    let len = out.len();
    let (xm2, xm1, x, xp1, z, inc) = (
        &xm2[..len],
        &xm1[..len],
        &x[..len],
        &xp1[..len],
        &z[..len],
        &mut inc[..len],
    );
    for j in 0..len {
        // (X_{k+1} - X_{k-2}) X_{k-1} - X_k + F, as the reference.
        let k = dt * ((xp1[j] - xm2[j]) * xm1[j] - x[j] + forcing);
        rk4_stage::<T, S>(k, z[j], &mut inc[j], &mut out[j]);
    }
}

/// Stage S over every site: `x`, `z`, `inc` and `out` hold n + 3 sites x L
/// lanes (flattened), sites 0..n at [`HALO`] `..`, preceded by copies of
/// sites n-2, n-1 and followed by a copy of site 0 (the periodic neighbours,
/// see [`fill_halo`]), so every site is one run. Fills `out`'s halo.
#[inline(always)]
fn l96_stage<T: Float, const L: usize, const S: usize>(
    forcing: T,
    dt: T,
    x: &[T],
    z: &[T],
    inc: &mut [T],
    out: &mut [T],
) {
    let core = HALO * L..out.len() - L;
    let neighbours = (x, &x[L..], &x[2 * L..], &x[3 * L..]);
    let (z, inc, o) = (&z[core.clone()], &mut inc[core.clone()], &mut out[core]);
    l96_run::<T, S>(forcing, dt, neighbours, z, inc, o);
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

/// Writes lane l of `z` (padded, see [`l96_stage`]) to row l of `dst`
/// (members x n).
#[inline(always)]
fn store<T: Float, const L: usize>(n: usize, z: &[T], dst: &mut [T]) {
    for (l, row) in dst.chunks_exact_mut(n).enumerate() {
        for (i, v) in row.iter_mut().enumerate() {
            *v = z[(HALO + i) * L + l];
        }
    }
}

/// One block of up to L members for all steps. Lanes past the block's
/// members repeat its last member (finite values; never written out).
#[macro_rules_attribute::apply(simd_targets!)]
#[allow(clippy::too_many_arguments)]
fn l96_block<T: Float, const L: usize>(
    n: usize,
    forcing: T,
    dt: T,
    initial: &[T],
    out: &mut [T],
    frames: &mut [&mut [T]],
    steps: u64,
    every: u64,
) {
    let count = initial.len() / n;
    let mut z = vec![T::default(); (n + HALO + 1) * L];
    for i in 0..n {
        for l in 0..L {
            z[(HALO + i) * L + l] = initial[l.min(count - 1) * n + i];
        }
    }
    fill_halo::<T, L>(&mut z);
    let (mut inc, mut a, mut b) = (z.clone(), z.clone(), z.clone());
    let mut frame = 0;
    for step in 1..=steps {
        // Stage inputs z, a, b, a, as the reference's.
        l96_stage::<T, L, 0>(forcing, dt, &z, &z, &mut inc, &mut a);
        l96_stage::<T, L, 1>(forcing, dt, &a, &z, &mut inc, &mut b);
        l96_stage::<T, L, 2>(forcing, dt, &b, &z, &mut inc, &mut a);
        l96_stage::<T, L, 3>(forcing, dt, &a, &z, &mut inc, &mut b);
        std::mem::swap(&mut z, &mut b);
        if every > 0 && step % every == 0 {
            store::<T, L>(n, &z, frames[frame]);
            frame += 1;
        }
    }
    store::<T, L>(n, &z, out);
}

#[cfg(test)]
mod tests;
