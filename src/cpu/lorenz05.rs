//! Lorenz 2005 Model II / III ensembles on the CPU, vectorised over sites.
//!
//! A member's N (960 by default) sites are a long row, so here the SIMD
//! lanes are sites, one member per task (members over threads): every array
//! of a member (a few times N values) stays in L1/L2, where lanes across
//! members would need L x 7 arrays of N. Each array is padded with periodic
//! halos (copies of the wrapped sites) so every stencil reads contiguous
//! values with no index arithmetic; the core is rounded up to whole chunks
//! of C sites, the extra sites computed from halo values and then overwritten
//! by the next halo fill.
//!
//! Every site performs the operations of `reference::lorenz::Lorenz05Work`
//! and `rk4_step` in the same order and type (first end term, j ascending,
//! last end term; divisions kept as divisions), so f64 results are bitwise
//! those of the reference.

use std::borrow::Cow;

use super::lorenz::{rk4_stage, run_blocks, vector, Run};
use crate::float::Float;
use crate::params::lorenz::{model3_weights, Lorenz05Model, Lorenz05Params, MemberParams};
use crate::params::save_at::Frames;

/// A Lorenz 2005 ensemble (inputs validated by the caller) on `threads`
/// threads, in `T` arithmetic, F, b and c per member where `each` gives them.
pub(crate) fn lorenz05<T: Float>(
    p: &Lorenz05Params,
    (_, initial): (usize, &[T]),
    each: &MemberParams<&[T]>,
    (_, steps): (u64, u64),
    frames: Frames<'_>,
    threads: usize,
    progress: Option<&(dyn Fn(u64, u64) + Sync)>,
) -> Run<T> {
    // Chunks of C = 4 vectors of sites.
    let model = Model::new(p, 4 * vector::<T>());
    run_blocks(
        p.n,
        initial,
        1,
        steps,
        frames,
        threads,
        progress,
        |m, init, out, frame_parts| {
            // Member m's F, b, c: a copy of the model only where given per member.
            let model = match each.any() {
                false => Cow::Borrowed(&model),
                true => Cow::Owned(model.with_coefficients(&p.member(each, m))),
            };
            if vector::<T>() == 16 {
                member::<T, 64>(&model, init, out, frame_parts, steps, frames)
            } else {
                member::<T, 32>(&model, init, out, frame_parts, steps, frames)
            }
        },
    )
}

/// The parameters in `T`, as the reference forms them in f64 (then
/// rounded), and the layout of a member's padded arrays: core sites at
/// `left..left + core`.
#[derive(Clone)]
struct Model<T> {
    n: usize,
    k: usize,
    j: usize,
    three: bool,
    /// Model III: `a'_{m-J}`, m = 0..=2J.
    weights: Vec<T>,
    kf: T,
    forcing: T,
    b: T,
    b2: T,
    c: T,
    dt: T,
    /// Sites computed: n rounded up to a multiple of the chunk.
    core: usize,
    /// Halo widths: the farthest reach of any stencil to the left and right
    /// (plus the extra core sites on the right).
    left: usize,
    len: usize,
}

impl<T: Float> Model<T> {
    /// The model of `p`, computed in chunks of `chunk` sites.
    fn new(p: &Lorenz05Params, chunk: usize) -> Self {
        let three = p.model == Lorenz05Model::III;
        let weights = if three {
            model3_weights(p.j).2.into_iter().map(T::from_f64).collect()
        } else {
            Vec::new()
        };
        let (j, k, h) = (if three { p.j } else { 0 }, p.k, p.k / 2);
        // Reads relative to site i: split i-J..i+J; W i-H..i+H; the bracket
        // W at i-2K..i-K+H and X at i+K-H..i+K+H; the final sum i-2..i+1.
        let left = j.max(2 * k).max(2);
        let core = p.n.div_ceil(chunk) * chunk;
        let right = j.max(k + h).max(1) + (core - p.n);
        Model {
            n: p.n,
            k,
            j,
            three,
            weights,
            kf: T::from_f64(p.k as f64),
            forcing: T::from_f64(p.forcing),
            b: T::from_f64(p.b),
            b2: T::from_f64(p.b * p.b),
            c: T::from_f64(p.c),
            dt: T::from_f64(p.dt),
            core,
            left,
            len: left + core + right,
        }
    }

    /// The same model with the F, b and c of `p` (one member's).
    fn with_coefficients(&self, p: &Lorenz05Params) -> Self {
        Model {
            forcing: T::from_f64(p.forcing),
            b: T::from_f64(p.b),
            b2: T::from_f64(p.b * p.b),
            c: T::from_f64(p.c),
            weights: self.weights.clone(),
            ..*self
        }
    }

    /// Writes the periodic copies of the core sites into both halos.
    fn fill(&self, a: &mut [T]) {
        let (n, left) = (self.n as i64, self.left as i64);
        for p in (0..left).chain(left + n..self.len as i64) {
            let site = (p - left).rem_euclid(n);
            a[p as usize] = a[(left + site) as usize];
        }
    }
}

/// `C` consecutive values of `a` from `at`, as an array (no bounds checks inside).
#[inline(always)]
fn lanes<T: Copy, const C: usize>(a: &[T], at: usize) -> &[T; C] {
    a[at..at + C].try_into().expect("C values")
}

/// Scratch of one member.
struct Work<T> {
    x: Vec<T>,
    y: Vec<T>,
    w: Vec<T>,
    dz: Vec<T>,
}

/// (No closures in this and the other hot loops: closures in a
/// multiversioned function are compiled outside its target features.)
///
/// Phases 1 to 4 of MODELS.md section 3: `dz = f(z)` on the core (z padded
/// and filled); fills the halos of X, Y and W on the way.
#[inline(always)]
fn tendency<T: Float, const C: usize>(m: &Model<T>, z: &[T], s: &mut Work<T>) {
    let (o, k) = (m.left, m.k);
    let h = k / 2;
    let two = T::from_f64(2.0);
    // Phase 1: X (Model III smoothing) and Y = Z - X.
    let x: &[T] = if m.three {
        let j = m.j;
        for i in (0..m.core).step_by(C) {
            let c = o + i;
            let first = lanes::<T, C>(z, c + j);
            let mut acc = [T::default(); C];
            for l in 0..C {
                acc[l] = m.weights[0] * first[l];
            }
            for (q, &wq) in m.weights.iter().enumerate().skip(1) {
                let v = lanes::<T, C>(z, c + j - q);
                for l in 0..C {
                    acc[l] += wq * v[l];
                }
            }
            let zc = lanes::<T, C>(z, c);
            s.x[c..c + C].copy_from_slice(&acc);
            for l in 0..C {
                s.y[c + l] = zc[l] - acc[l];
            }
        }
        m.fill(&mut s.x);
        m.fill(&mut s.y);
        &s.x
    } else {
        z
    };
    // Phase 2: W = (X[i+H]/2 + sum_{j=-H+1}^{H-1} X[i-j] + X[i-H]/2) / K.
    for i in (0..m.core).step_by(C) {
        let c = o + i;
        let first = lanes::<T, C>(x, c + h);
        let mut acc = [T::default(); C];
        for l in 0..C {
            acc[l] = first[l] / two;
        }
        for jj in 1..2 * h {
            // j = -H + jj, ascending: X[i - j] = X[i + H - jj].
            let v = lanes::<T, C>(x, c + h - jj);
            for l in 0..C {
                acc[l] += v[l];
            }
        }
        let last = lanes::<T, C>(x, c - h);
        for l in 0..C {
            s.w[c + l] = (acc[l] + last[l] / two) / m.kf;
        }
    }
    m.fill(&mut s.w);
    // Phase 3: XX = -W[i-2K] W[i-K] + S / K, S summed j = -H..H with halved ends.
    let w = &s.w;
    for i in (0..m.core).step_by(C) {
        let c = o + i;
        let (w0, x0) = (lanes::<T, C>(w, c - k - h), lanes::<T, C>(x, c + k - h));
        let mut acc = [T::default(); C];
        for l in 0..C {
            acc[l] = w0[l] * x0[l] / two;
        }
        for jj in 1..2 * h {
            // j = -H + jj: W[i - K + j] X[i + K + j].
            let (wv, xv) = (
                lanes::<T, C>(w, c - k - h + jj),
                lanes::<T, C>(x, c + k - h + jj),
            );
            for l in 0..C {
                acc[l] += wv[l] * xv[l];
            }
        }
        let (w1, x1) = (lanes::<T, C>(w, c - k + h), lanes::<T, C>(x, c + k + h));
        let (wa, wb) = (lanes::<T, C>(w, c - 2 * k), lanes::<T, C>(w, c - k));
        for l in 0..C {
            let sum = acc[l] + w1[l] * x1[l] / two;
            s.dz[c + l] = -wa[l] * wb[l] + sum / m.kf;
        }
    }
    // Phase 4: the full tendency.
    let (f, b, b2, cc) = (m.forcing, m.b, m.b2, m.c);
    for i in (0..m.core).step_by(C) {
        let c = o + i;
        let xi = lanes::<T, C>(x, c);
        let xx: [T; C] = *lanes::<T, C>(&s.dz, c);
        let mut out = [T::default(); C];
        if m.three {
            let y = &s.y;
            let (ym2, ym1, yi, yp1) = (
                lanes::<T, C>(y, c - 2),
                lanes::<T, C>(y, c - 1),
                lanes::<T, C>(y, c),
                lanes::<T, C>(y, c + 1),
            );
            let (xm1, xp1) = (lanes::<T, C>(x, c - 1), lanes::<T, C>(x, c + 1));
            for l in 0..C {
                out[l] = xx[l]
                    + b2 * (-ym2[l] * ym1[l] + ym1[l] * yp1[l])
                    + cc * (-ym2[l] * xm1[l] + ym1[l] * xp1[l])
                    - xi[l]
                    - b * yi[l]
                    + f;
            }
        } else {
            for l in 0..C {
                out[l] = xx[l] - xi[l] + f;
            }
        }
        s.dz[c..c + C].copy_from_slice(&out);
    }
}

/// RK4 stage S's update ([`rk4_stage`], k = dt dz) on the core sites `r`,
/// over equal-length slices so that it vectorises.
#[inline(always)]
fn rk4_update<T: Float, const S: usize>(
    dt: T,
    dz: &[T],
    z: &[T],
    inc: &mut [T],
    out: &mut [T],
    r: std::ops::Range<usize>,
) {
    let (dz, z, inc, out) = (
        &dz[r.clone()],
        &z[r.clone()],
        &mut inc[r.clone()],
        &mut out[r],
    );
    let len = out.len();
    let (dz, z, inc) = (&dz[..len], &z[..len], &mut inc[..len]);
    for i in 0..len {
        rk4_stage::<T, S>(dt * dz[i], z[i], &mut inc[i], &mut out[i]);
    }
}

/// One member for all steps: the reference's rk4_step with stage inputs
/// z, a, b, a (all padded, halos filled before each tendency).
#[macro_rules_attribute::apply(simd_targets!)]
fn member<T: Float, const C: usize>(
    m: &Model<T>,
    initial: &[T],
    out: &mut [T],
    frame_parts: &mut [&mut [T]],
    steps: u64,
    frames: Frames<'_>,
) {
    debug_assert_eq!(m.core % C, 0);
    let (o, n) = (m.left, m.n);
    let zero = vec![T::default(); m.len];
    let mut z = zero.clone();
    z[o..o + n].copy_from_slice(initial);
    m.fill(&mut z);
    let (mut a, mut b, mut inc) = (zero.clone(), zero.clone(), zero.clone());
    let mut s = Work {
        x: zero.clone(),
        y: zero.clone(),
        w: zero.clone(),
        dz: zero,
    };
    let dt = m.dt;
    let core = o..o + m.core;
    if let Some(k) = frames.after(0) {
        frame_parts[k].copy_from_slice(initial);
    }
    for step in 1..=steps {
        tendency::<T, C>(m, &z, &mut s);
        rk4_update::<T, 0>(dt, &s.dz, &z, &mut inc, &mut a, core.clone());
        m.fill(&mut a);
        tendency::<T, C>(m, &a, &mut s);
        rk4_update::<T, 1>(dt, &s.dz, &z, &mut inc, &mut b, core.clone());
        m.fill(&mut b);
        tendency::<T, C>(m, &b, &mut s);
        rk4_update::<T, 2>(dt, &s.dz, &z, &mut inc, &mut a, core.clone());
        m.fill(&mut a);
        tendency::<T, C>(m, &a, &mut s);
        rk4_update::<T, 3>(dt, &s.dz, &z, &mut inc, &mut b, core.clone());
        std::mem::swap(&mut z, &mut b);
        m.fill(&mut z);
        if let Some(k) = frames.after(step) {
            frame_parts[k].copy_from_slice(&z[o..o + n]);
        }
    }
    out.copy_from_slice(&z[o..o + n]);
}
