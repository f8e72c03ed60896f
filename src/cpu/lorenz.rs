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

use multiversion::multiversion;

use super::parallel::for_each_chunk;
use super::real::Real;
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

/// Integrates `initial` (members x n) in blocks of `block` members on
/// `threads` threads: `integrate(initial, out, frames)` runs one block for
/// all steps, writing frame f of `frames` after f * every steps and the final
/// states to `out`. Blocks are independent, so the result does not depend on
/// the thread count. `progress(members done, members)` after each block.
#[allow(clippy::too_many_arguments)]
pub(crate) fn run_blocks<T: Real>(
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
pub(crate) fn lorenz96<T: Real>(
    p: &Lorenz96Params,
    initial: &[T],
    steps: u64,
    every: u64,
    threads: usize,
    progress: Option<&(dyn Fn(u64, u64) + Sync)>,
) -> Run<T> {
    // One 512-bit vector of members per block (two 256-bit ones with AVX2).
    if T::VECTOR == 16 {
        lorenz96_lanes::<T, 16>(p, initial, steps, every, threads, progress)
    } else {
        lorenz96_lanes::<T, 8>(p, initial, steps, every, threads, progress)
    }
}

fn lorenz96_lanes<T: Real, const L: usize>(
    p: &Lorenz96Params,
    initial: &[T],
    steps: u64,
    every: u64,
    threads: usize,
    progress: Option<&(dyn Fn(u64, u64) + Sync)>,
) -> Run<T> {
    let (n, forcing, dt) = (p.n, T::from_f64(p.forcing), T::from_f64(p.dt));
    run_blocks(
        n,
        initial,
        L,
        steps,
        every,
        threads,
        progress,
        |init, out, frames| l96_block::<T, L>(n, forcing, dt, init, out, frames, steps, every),
    )
}

/// Calls `f(i - 2, i - 1, i, i + 1)` (periodic) for every site i; N >= 4.
#[inline(always)]
fn for_sites(n: usize, mut f: impl FnMut(usize, usize, usize, usize)) {
    f(n - 2, n - 1, 0, 1);
    f(n - 1, 0, 1, 2);
    for i in 2..n - 1 {
        f(i - 2, i - 1, i, i + 1);
    }
    f(n - 3, n - 2, n - 1, 0);
}

/// `(X_{k+1} - X_{k-2}) X_{k-1} - X_k + F` in every lane, as the reference.
#[inline(always)]
fn l96_tendency<T: Real, const L: usize>(
    x: &[[T; L]],
    (km2, km1, k, kp1): (usize, usize, usize, usize),
    forcing: T,
) -> [T; L] {
    let (a, b, c, d) = (&x[km2], &x[km1], &x[k], &x[kp1]);
    std::array::from_fn(|l| (d[l] - a[l]) * b[l] - c[l] + forcing)
}

/// One block of up to L members for all steps. Lanes past the block's
/// members repeat its last member (finite values; never written out).
#[multiversion(targets(
    "x86_64+avx512f+avx512dq+avx512vl+fma",
    "x86_64+avx2+fma",
    "aarch64+neon"
))]
#[allow(clippy::too_many_arguments)]
fn l96_block<T: Real, const L: usize>(
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
    let mut z: Vec<[T; L]> = (0..n)
        .map(|i| std::array::from_fn(|l| initial[l.min(count - 1) * n + i]))
        .collect();
    let zero = [T::default(); L];
    let (mut inc, mut a, mut b) = (vec![zero; n], vec![zero; n], vec![zero; n]);
    let (half, third, sixth) = (T::from_f64(0.5), T::from_f64(3.0), T::from_f64(6.0));
    let store = |z: &[[T; L]], dst: &mut [T]| {
        for (l, row) in dst.chunks_exact_mut(n).enumerate() {
            for (i, v) in row.iter_mut().enumerate() {
                *v = z[i][l];
            }
        }
    };
    let mut frame = 0;
    for step in 1..=steps {
        // The reference's rk4_step: stage inputs z, a, b, a; k = dt f(input);
        // divisions by 6 and 3 kept (not reciprocal products) for bitwise equality.
        for_sites(n, |km2, km1, k, kp1| {
            let d = l96_tendency(&z, (km2, km1, k, kp1), forcing);
            for l in 0..L {
                let kk = dt * d[l];
                inc[k][l] = kk / sixth;
                a[k][l] = z[k][l] + kk * half;
            }
        });
        for_sites(n, |km2, km1, k, kp1| {
            let d = l96_tendency(&a, (km2, km1, k, kp1), forcing);
            for l in 0..L {
                let kk = dt * d[l];
                inc[k][l] += kk / third;
                b[k][l] = z[k][l] + kk * half;
            }
        });
        for_sites(n, |km2, km1, k, kp1| {
            let d = l96_tendency(&b, (km2, km1, k, kp1), forcing);
            for l in 0..L {
                let kk = dt * d[l];
                inc[k][l] += kk / third;
                a[k][l] = z[k][l] + kk;
            }
        });
        for_sites(n, |km2, km1, k, kp1| {
            let d = l96_tendency(&a, (km2, km1, k, kp1), forcing);
            for l in 0..L {
                let kk = dt * d[l];
                inc[k][l] += kk / sixth;
                z[k][l] += inc[k][l];
            }
        });
        if every > 0 && step % every == 0 {
            store(&z, frames[frame]);
            frame += 1;
        }
    }
    store(&z, out);
}

#[cfg(test)]
mod tests;
