//! Lorenz 63 ensembles on the CPU: members in blocks over threads, and
//! within a block in groups of L lanes (one 512-bit vector: 16 f32 or 8 f64)
//! held as [lane] arrays, so every operation of a step is one loop over the
//! lanes, which LLVM vectorises. Each lane performs the operations of
//! csrc/lorenz63.cu in the same order (dt folded into the parameters, the
//! increment summed as (k1 + 2 k2 + 2 k3 + k4) / 6), rounded after every
//! operation where the GPU contracts some into FMAs.
mod dopri5;

pub(crate) use dopri5::lorenz63_adaptive;

use super::lorenz::vector;
use super::parallel::for_each_chunk;
use crate::float::Float;
use crate::params::lorenz63::{Lorenz63Params, PerMember};
use crate::params::save_at::segments;

/// Members per block handed to a thread (a multiple of every lane count).
const BLOCK_MEMBERS: usize = 256;

/// The final states (members x 3) and the saved states (frames x members x
/// 3) of a run; inputs validated by the caller.
pub(crate) fn lorenz63<T: Float>(
    p: &Lorenz63Params<&[T]>,
    initial: &[T],
    steps: u64,
    save_at: &[u64],
    threads: usize,
    progress: Option<&(dyn Fn(u64, u64) + Sync)>,
) -> (Vec<T>, Vec<T>) {
    let len = initial.len();
    let mut final_state = initial.to_vec();
    let mut saved = vec![T::default(); save_at.len() * len];
    let mut blocks = member_blocks(&mut final_state, &mut saved, BLOCK_MEMBERS);
    let plan = segments(save_at, steps);
    for_each_chunk(threads, &mut blocks, 1, progress, |_, piece| {
        for (first, state, frames) in piece.iter_mut() {
            if vector::<T>() == 16 {
                run_block::<T, 16>(p, *first, state, frames, &plan);
            } else {
                run_block::<T, 8>(p, *first, state, frames, &plan);
            }
        }
    });
    (final_state, saved)
}

/// A block: its first member, its states, and its part of every frame.
type Block<'a, T> = (usize, &'a mut [T], Vec<&'a mut [T]>);

/// `state` (members x 3) and `saved` (frames x members x 3) cut into blocks
/// of `members` members, each with its part of every frame.
fn member_blocks<'a, T>(
    state: &'a mut [T],
    saved: &'a mut [T],
    members: usize,
) -> Vec<Block<'a, T>> {
    let (len, span) = (state.len(), 3 * members);
    let frames = saved.len() / len.max(1);
    let mut blocks: Vec<Block<T>> = state
        .chunks_mut(span)
        .enumerate()
        .map(|(b, state)| (b * members, state, Vec::with_capacity(frames)))
        .collect();
    for frame in saved.chunks_mut(len.max(1)) {
        for (block, part) in blocks.iter_mut().zip(frame.chunks_mut(span)) {
            block.2.push(part);
        }
    }
    blocks
}

/// One block of members (`state`, members x 3, starting at member `first`),
/// L lanes at a time, through every segment of the run.
fn run_block<T: Float, const L: usize>(
    p: &Lorenz63Params<&[T]>,
    first: usize,
    state: &mut [T],
    frames: &mut [&mut [T]],
    plan: &[crate::params::save_at::Segment],
) {
    let members = state.len() / 3;
    for group in (0..members).step_by(L) {
        let lanes = L.min(members - group);
        let mut lane = Lanes::<T, L>::load(p, first + group, &state[3 * group..], lanes);
        for segment in plan {
            for _ in 0..segment.steps {
                lane.rk4_step();
            }
            if let Some(k) = segment.frame {
                lane.store(&mut frames[k][3 * group..], lanes);
            }
        }
        lane.store(&mut state[3 * group..], lanes);
    }
}

/// L members' states and dt-scaled parameters, one array per quantity
/// (unused lanes hold zeros: a fixed point, so no NaN or overflow).
struct Lanes<T, const L: usize> {
    x: [T; L],
    y: [T; L],
    z: [T; L],
    dt: T,
    sigma: [T; L],
    rho: [T; L],
    beta: [T; L],
}

impl<T: Float, const L: usize> Lanes<T, L> {
    fn load(p: &Lorenz63Params<&[T]>, first: usize, state: &[T], lanes: usize) -> Self {
        let dt = T::from_f64(p.dt);
        let scaled = |v: &PerMember<&[T]>| {
            let mut out = [T::default(); L];
            for (j, o) in out.iter_mut().enumerate().take(lanes) {
                *o = dt
                    * match v {
                        PerMember::All(a) => T::from_f64(*a),
                        PerMember::Each(values) => values[first + j],
                    };
            }
            out
        };
        let coordinate = |c: usize| {
            let mut out = [T::default(); L];
            for (j, o) in out.iter_mut().enumerate().take(lanes) {
                *o = state[3 * j + c];
            }
            out
        };
        Lanes {
            x: coordinate(0),
            y: coordinate(1),
            z: coordinate(2),
            dt,
            sigma: scaled(&p.sigma),
            rho: scaled(&p.rho),
            beta: scaled(&p.beta),
        }
    }

    fn store(&self, state: &mut [T], lanes: usize) {
        for j in 0..lanes {
            state[3 * j] = self.x[j];
            state[3 * j + 1] = self.y[j];
            state[3 * j + 2] = self.z[j];
        }
    }

    /// k = dt f at (x, y, z), per lane, as `tendency` of csrc/lorenz63.cu.
    #[inline(always)]
    #[allow(clippy::type_complexity)]
    fn tendency(&self, x: &[T; L], y: &[T; L], z: &[T; L]) -> ([T; L], [T; L], [T; L]) {
        let (mut kx, mut ky, mut kz) = ([T::default(); L], [T::default(); L], [T::default(); L]);
        for j in 0..L {
            let dty = self.dt * y[j];
            kx[j] = self.sigma[j] * (y[j] - x[j]);
            ky[j] = x[j] * (self.rho[j] - self.dt * z[j]) - dty;
            kz[j] = x[j] * dty - self.beta[j] * z[j];
        }
        (kx, ky, kz)
    }

    /// One classical RK4 step of every lane.
    #[inline(always)]
    fn rk4_step(&mut self) {
        let (half, two, sixth) = (T::from_f64(0.5), T::from_f64(2.0), T::from_f64(1.0 / 6.0));
        let along = |base: &[T; L], k: &[T; L], c: T| std::array::from_fn(|j| base[j] + k[j] * c);
        let (k1x, k1y, k1z) = self.tendency(&self.x, &self.y, &self.z);
        let (k2x, k2y, k2z) = self.tendency(
            &along(&self.x, &k1x, half),
            &along(&self.y, &k1y, half),
            &along(&self.z, &k1z, half),
        );
        let (k3x, k3y, k3z) = self.tendency(
            &along(&self.x, &k2x, half),
            &along(&self.y, &k2y, half),
            &along(&self.z, &k2z, half),
        );
        let one = T::from_f64(1.0);
        let (k4x, k4y, k4z) = self.tendency(
            &along(&self.x, &k3x, one),
            &along(&self.y, &k3y, one),
            &along(&self.z, &k3z, one),
        );
        for j in 0..L {
            self.x[j] += (k1x[j] + k2x[j] * two + k3x[j] * two + k4x[j]) * sixth;
            self.y[j] += (k1y[j] + k2y[j] * two + k3y[j] * two + k4y[j]) * sixth;
            self.z[j] += (k1z[j] + k2z[j] * two + k3z[j] * two + k4z[j]) * sixth;
        }
    }
}
