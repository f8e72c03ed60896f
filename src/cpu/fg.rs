//! The coupled F/G system (MODELS.md section 1) on the CPU: the operations of
//! `reference::fg` in the same order, vectorised over elements (lanes of
//! consecutive elements, de-interleaved from the (re, im) pairs), chunks of
//! `reference::fg::CHUNK` elements over threads, and delta summed in the
//! reference's (the kernels') fixed tree. The reference rounds each f64
//! operation to `T`, which for +, -, * is exactly `T`'s own operation (see
//! its comment), so computing in `T` lanes gives bitwise the reference's
//! results, in f32 and f64, for any thread count.

use super::parallel::for_each_chunk;
use super::reduce::lane_tree;
use crate::float::{Complex, Float};
use crate::params::fg::CHUNK;

/// Elements per vectorised group.
const V: usize = 16;
/// Lanes of the kernels' warp tree ([`lane_tree`]).
const WARP: usize = 32;

/// One chunk of the state and its F sum after the step.
struct Chunk<'a, T> {
    f: &'a mut [Complex<T>],
    g: &'a mut [Complex<T>],
    sum: [f64; 2],
}

/// Integrates `nsteps` RK4 steps in place on `threads` threads (inputs
/// validated by the caller); returns `delta[0..=nsteps]`, as the reference.
pub(crate) fn integrate<T: Float>(
    f: &mut [Complex<T>],
    g: &mut [Complex<T>],
    delta0: Complex<T>,
    dt: T,
    nsteps: usize,
    threads: usize,
) -> Vec<Complex<T>> {
    let mut chunks: Vec<Chunk<T>> = f
        .chunks_mut(CHUNK)
        .zip(g.chunks_mut(CHUNK))
        .map(|(f, g)| Chunk {
            f,
            g,
            sum: [0.0; 2],
        })
        .collect();
    // ~16 chunks per thread before a thread pays for its start (per step).
    let threads = threads.min(chunks.len().div_ceil(16)).max(1);
    let per_piece = chunks.len().div_ceil(4 * threads).max(1);
    let mut history = Vec::with_capacity(nsteps + 1);
    let mut delta = delta0;
    history.push(delta);
    for _ in 0..nsteps {
        for_each_chunk(threads, &mut chunks, per_piece, None, |_, piece| {
            for c in piece.iter_mut() {
                step_chunk(c.f, c.g, delta, dt);
                c.sum = chunk_sum(c.f);
            }
        });
        let t = total(chunks.iter().map(|c| c.sum));
        delta = Complex {
            re: T::from_f64(t[0]),
            im: T::from_f64(t[1]),
        };
        history.push(delta);
    }
    history
}

/// dF (re, im) and Re dG: the reference's `rhs`.
#[inline(always)]
fn rhs<T: Float>(fr: T, fi: T, gr: T, gi: T, dr: T, di: T) -> [T; 3] {
    let wr = (gr + gr) - T::from_f64(1.0);
    let wi = gi + gi;
    let dfr = (fi + fi) + (dr * wi + di * wr);
    let dfi = -(fr + fr) - (dr * wr - di * wi);
    let s = dr * fi - di * fr;
    [dfr, dfi, s + s]
}

/// V elements' (Re F, Im F, Re G).
type Lanes<T> = [[T; V]; 3];

/// `dt rhs(p)` in every lane, with delta `d` and Im G `gi`.
#[inline(always)]
fn eval<T: Float>(p: &Lanes<T>, gi: &[T; V], d: Complex<T>, dt: T) -> Lanes<T> {
    let mut k = [[T::default(); V]; 3];
    for l in 0..V {
        let r = rhs(p[0][l], p[1][l], p[2][l], gi[l], d.re, d.im);
        for c in 0..3 {
            k[c][l] = dt * r[c];
        }
    }
    k
}

/// The stage point z + k/2 (`halve`) or z + k, as the reference's.
#[inline(always)]
fn point<T: Float>(z: &Lanes<T>, k: &Lanes<T>, halve: bool) -> Lanes<T> {
    let half = T::from_f64(0.5);
    let mut p = *z;
    for c in 0..3 {
        for l in 0..V {
            p[c][l] = z[c][l] + if halve { k[c][l] * half } else { k[c][l] };
        }
    }
    p
}

/// One RK4 step of every element of a chunk with delta held at `d`: the
/// reference's `rk4`, V elements at a time. No closures in the loop:
/// closures in a multiversioned function are compiled outside its target features.
#[macro_rules_attribute::apply(simd_targets!)]
fn step_chunk<T: Float>(f: &mut [Complex<T>], g: &mut [Complex<T>], d: Complex<T>, dt: T) {
    let (sixth, third) = (T::from_f64(1.0 / 6.0), T::from_f64(1.0 / 3.0));
    for (fs, gs) in f.chunks_mut(V).zip(g.chunks_mut(V)) {
        let m = fs.len();
        // Short groups repeat the last element (never written back).
        let mut z = [[T::default(); V]; 3];
        let mut gi = [T::default(); V];
        for l in 0..V {
            let e = l.min(m - 1);
            z[0][l] = fs[e].re;
            z[1][l] = fs[e].im;
            z[2][l] = gs[e].re;
            gi[l] = gs[e].im;
        }
        let k1 = eval(&z, &gi, d, dt);
        let k2 = eval(&point(&z, &k1, true), &gi, d, dt);
        let k3 = eval(&point(&z, &k2, true), &gi, d, dt);
        let k4 = eval(&point(&z, &k3, false), &gi, d, dt);
        let mut next = z;
        for c in 0..3 {
            for l in 0..V {
                let inc =
                    ((k1[c][l] * sixth + k2[c][l] * third) + k3[c][l] * third) + k4[c][l] * sixth;
                next[c][l] = z[c][l] + inc;
            }
        }
        for l in 0..m {
            fs[l].re = next[0][l];
            fs[l].im = next[1][l];
            gs[l].re = next[2][l];
        }
    }
}

/// Sum of one chunk's F: each warp of 32 by the lane tree, then the warp
/// sums by the same tree; missing values are 0 (the reference's `chunk_sum`,
/// re and im apart, as its pairwise adds are).
fn chunk_sum<T: Float>(f: &[Complex<T>]) -> [f64; 2] {
    let mut warps = [[0.0; WARP]; 2];
    for (w, warp) in f.chunks(WARP).enumerate() {
        let mut re = [0.0; WARP];
        let mut im = [0.0; WARP];
        for (l, c) in warp.iter().enumerate() {
            re[l] = c.re.to_f64();
            im[l] = c.im.to_f64();
        }
        warps[0][w] = lane_tree(re);
        warps[1][w] = lane_tree(im);
    }
    [lane_tree(warps[0]), lane_tree(warps[1])]
}

/// delta from the chunk sums: lane l adds sums l, l + 32, ... in order, then the lane tree.
fn total(sums: impl Iterator<Item = [f64; 2]>) -> [f64; 2] {
    let mut lanes = [[0.0; WARP]; 2];
    for (i, s) in sums.enumerate() {
        lanes[0][i % WARP] += s[0];
        lanes[1][i % WARP] += s[1];
    }
    [lane_tree(lanes[0]), lane_tree(lanes[1])]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::reference;
    use proptest::prelude::*;

    fn state<T: Float>(seed: u64, len: usize) -> Vec<Complex<T>> {
        let mut s = seed | 1;
        let mut draw = || {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            T::from_f64((s >> 11) as f64 / (1u64 << 53) as f64 * 2.0 - 1.0)
        };
        (0..len)
            .map(|_| Complex {
                re: draw(),
                im: draw(),
            })
            .collect()
    }

    fn bits<T: Float>(v: &[Complex<T>]) -> Vec<(u64, u64)> {
        v.iter()
            .map(|c| (c.re.to_f64().to_bits(), c.im.to_f64().to_bits()))
            .collect()
    }

    /// Bitwise equal to the reference (same operations, same order, same
    /// delta tree) for 1 and 3 threads.
    fn case<T: Float>(seed: u64, len: usize, nsteps: usize) -> Result<(), TestCaseError> {
        let (f0, g0) = (state::<T>(seed, len), state::<T>(seed ^ 0x5555, len));
        let d0 = Complex {
            re: T::from_f64(0.3),
            im: T::from_f64(-0.2),
        };
        // dt small enough that |delta| ~ len keeps the run bounded.
        let dt = T::from_f64(0.2 / (len as f64 + 1.0));
        let (mut rf, mut rg) = (f0.clone(), g0.clone());
        let want = reference::fg::integrate(&mut rf, &mut rg, d0, dt, nsteps);
        for threads in [1, 3] {
            let (mut f, mut g) = (f0.clone(), g0.clone());
            let got = integrate(&mut f, &mut g, d0, dt, nsteps, threads);
            prop_assert_eq!(bits(&got), bits(&want), "delta, {} threads", threads);
            prop_assert_eq!(bits(&f), bits(&rf));
            prop_assert_eq!(bits(&g), bits(&rg));
        }
        Ok(())
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(24))]
        #[test]
        fn fg_matches_the_reference_bitwise(seed in any::<u64>(), len in 1usize..40_000, nsteps in 0usize..6, single in any::<bool>()) {
            if single { case::<f32>(seed, len, nsteps)?; } else { case::<f64>(seed, len, nsteps)?; }
        }
    }
}
