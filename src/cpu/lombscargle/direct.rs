//! The direct periodogram sums: every (sample, frequency) pair visited.
//!
//! Both kernels put frequencies in the lanes (one lane array holds
//! [`LANES`] frequencies) and walk the samples in the inner loop with the
//! sample's values broadcast: no horizontal reductions, and each frequency's
//! sums are taken in sample order whatever lane, chunk or thread it falls
//! in, so the result does not depend on the thread count.
//!
//! - Arbitrary frequencies: one vectorised sincos per pair ([`super::sincos`]).
//! - A uniform grid f0 + k df: the phasor of each sample is rotated from one
//!   lane array of frequencies to the next by e^{i W df t} (W lanes; a
//!   complex product: 4 flops instead of a sincos), reseeded exactly (one
//!   sincos per sample times a per-lane table) at the start of every chunk
//!   of frequencies, so rounding grows over at most a chunk's rotations
//!   (<= `R * MAX_BLOCKS` = 96 products: ~1e-14 relative in f64, against the
//!   1e-10 asked; f32 input runs in f32, see [`Uniform`]). The weight rides
//!   in the phasor (u = sqrt(w) e^{i w t}: the rotation is linear), which
//!   makes every sum one FMA: CC = sum u_c^2, YC = sum g u_c with
//!   g = sqrt(w) y, C = sum sqrt(w) u_c.
//!
//! Sums are returned as [`TrigSums`] (C, S, YC, YS, C2, S2). The kernels
//! accumulate CC = sum w cos^2 and CS instead of C2, S2 (cheaper from the
//! phasor), converted by C2 = 2 CC - 1 and S2 = 2 CS (weights sum to 1).
//! (With a floating mean, y comes already taken about its weighted mean:
//! see [`super::prepare`].)

use super::sincos::{fma, sincos, Lanes, LANES};
use super::{Prepared, TrigSums};
use crate::float::Float;
use crate::params::lombscargle::UniformGrid;

/// Lane arrays of frequencies per block of the uniform kernel: 6 R
/// accumulator arrays and the phasor fit the 32 AVX-512 registers at R = 3.
const R: usize = 3;
/// Blocks between exact reseeds, at most (the chunk of one work item).
pub(crate) const MAX_BLOCKS: usize = 32;
/// Samples whose phasors are kept at once: 2 x 8 x 256 f64 = 32 KiB, in L1.
const TILE: usize = 256;
/// Lane arrays of frequencies in flight in the arbitrary kernel: two
/// independent sincos chains hide each other's latency.
const RA: usize = 2;

/// The per-sample inputs of both kernels: [`Prepared`]'s t and w, and
/// more from them.
pub(crate) struct KernelInput<'a> {
    t: &'a [f64],
    w: &'a [f64],
    /// w y and sqrt(w) y.
    wy: Vec<f64>,
    sqrt_w: Vec<f64>,
    g: Vec<f64>,
    floating_mean: bool,
}

impl<'a> KernelInput<'a> {
    pub(crate) fn new(p: &'a Prepared, floating_mean: bool) -> Self {
        let sqrt_w: Vec<f64> = p.w.iter().map(|w| w.sqrt()).collect();
        KernelInput {
            t: &p.t,
            wy: p.w.iter().zip(&p.y).map(|(w, y)| w * y).collect(),
            g: sqrt_w.iter().zip(&p.y).map(|(s, y)| s * y).collect(),
            w: &p.w,
            sqrt_w,
            floating_mean,
        }
    }
}

/// The six sums of lane `j` from the kernels' C, S, YC, YS, CC, CS.
#[inline(always)]
fn to_sums<const N: usize>(a: &[[f64; N]; 6], j: usize) -> TrigSums {
    let [c, s, yc, ys, cc, cs] = std::array::from_fn(|q| a[q][j]);
    [c, s, yc, ys, 2.0 * cc - 1.0, 2.0 * cs]
}

/// Sums at the arbitrary angular frequencies `freqs` into `out` (same length).
pub(crate) fn arbitrary_sums(input: &KernelInput<'_>, freqs: &[f64], out: &mut [TrigSums]) {
    if input.floating_mean {
        arbitrary_kernel::<true>(input, freqs, out)
    } else {
        arbitrary_kernel::<false>(input, freqs, out)
    }
}

#[macro_rules_attribute::apply(simd_targets!)]
fn arbitrary_kernel<const FM: bool>(input: &KernelInput<'_>, freqs: &[f64], out: &mut [TrigSums]) {
    const GROUP: usize = LANES * RA;
    for (fs, os) in freqs.chunks(GROUP).zip(out.chunks_mut(GROUP)) {
        // Padding lanes run at frequency 0 and are dropped.
        let mut omega = [[0.0; LANES]; RA];
        for (k, f) in fs.iter().enumerate() {
            omega[k / LANES][k % LANES] = *f;
        }
        // acc[r][sum][lane]: sums C, S, YC, YS, CC, CS.
        let mut acc = [[[0.0; LANES]; 6]; RA];
        for ((&t, &w), &wy) in input.t.iter().zip(input.w).zip(&input.wy) {
            for r in 0..RA {
                let mut phase: Lanes = [0.0; LANES];
                for j in 0..LANES {
                    phase[j] = omega[r][j] * t;
                }
                let (s, c) = sincos(&phase);
                let a = &mut acc[r];
                for j in 0..LANES {
                    let wc = w * c[j];
                    if FM {
                        a[0][j] += wc;
                        a[1][j] = fma(w, s[j], a[1][j]);
                    }
                    a[2][j] = fma(wy, c[j], a[2][j]);
                    a[3][j] = fma(wy, s[j], a[3][j]);
                    a[4][j] = fma(wc, c[j], a[4][j]);
                    a[5][j] = fma(wc, s[j], a[5][j]);
                }
            }
        }
        for (k, o) in os.iter_mut().enumerate() {
            *o = to_sums(&acc[k / LANES], k % LANES);
        }
    }
}

/// An element type of the uniform kernel: f64, or f32 for f32 input (twice
/// the lanes per register; see [`Uniform`] for its accuracy). Conversions
/// and IEEE operators come from [`Float`].
pub(crate) trait Element: Float {
    /// a b + c with one rounding.
    fn mul_add(self, b: Self, c: Self) -> Self;
}

macro_rules! element {
    ($t:ty) => {
        impl Element for $t {
            #[inline(always)]
            fn mul_add(self, b: Self, c: Self) -> Self {
                <$t>::mul_add(self, b, c)
            }
        }
    };
}
element!(f32);
element!(f64);

/// A series ready for the uniform kernel of one grid step, in element type
/// `E` with `W` lanes (a multiple of [`LANES`]: 8 for f64, 16 for f32, one
/// AVX-512 register each).
///
/// In f32 (f32 input only): seeds and steps are computed in f64 and rounded,
/// the phasors rotated in f32 (<= 96 products: ~1e-5 relative at worst), and
/// the sums of each tile of [`TILE`] samples taken in f32 and added to f64
/// totals (blocked summation, as the GPU's f32 kernel: ~TILE eps at worst).
/// That is ~1e-5 against the 1e-4 asked of f32, for twice the pairs per
/// instruction.
pub(crate) struct Uniform<'a, E, const W: usize> {
    input: &'a KernelInput<'a>,
    grid: UniformGrid,
    sqrt_w: Vec<E>,
    g: Vec<E>,
    /// e^{i W df t}: the step from one lane array of frequencies to the next.
    step_c: Vec<E>,
    step_s: Vec<E>,
    /// e^{i j df t} for lanes j = 0 .. W, in f64: a seed of W lanes is one
    /// sincos (of the first lane's phase) times this row, not W sincos.
    lane_c: Vec<[f64; W]>,
    lane_s: Vec<[f64; W]>,
}

impl<'a, E: Element, const W: usize> Uniform<'a, E, W> {
    pub(crate) fn new(input: &'a KernelInput<'a>, grid: &UniformGrid) -> Self {
        let df = grid.df;
        let (step_c, step_s) = input
            .t
            .iter()
            .map(|t| {
                let (s, c) = (W as f64 * df * t).sin_cos();
                (E::from_f64(c), E::from_f64(s))
            })
            .unzip();
        let (lane_c, lane_s) = input
            .t
            .iter()
            .map(|t| {
                let (mut c, mut s) = ([0.0; W], [0.0; W]);
                for j in 0..W {
                    (s[j], c[j]) = (j as f64 * df * t).sin_cos();
                }
                (c, s)
            })
            .unzip();
        Uniform {
            input,
            grid: *grid,
            lane_c,
            lane_s,
            sqrt_w: input.sqrt_w.iter().map(|&v| E::from_f64(v)).collect(),
            g: input.g.iter().map(|&v| E::from_f64(v)).collect(),
            step_c,
            step_s,
        }
    }

    /// Frequencies per block of the kernel.
    pub(crate) const BLOCK: usize = W * R;

    /// Sums at the grid's `f0 + k df` for `k = first .. first + out.len()` into `out`,
    /// with one exact seed per [`MAX_BLOCKS`] blocks (callers pass pieces of
    /// at most `MAX_BLOCKS * BLOCK` frequencies starting at multiples of
    /// their piece size, so the seeds, and with them the rounding, depend on
    /// the piece size only).
    pub(crate) fn sums(&self, first: usize, out: &mut [TrigSums]) {
        let (f0, df) = (self.grid.f0, self.grid.df);
        let blocks = out.len().div_ceil(Self::BLOCK);
        let mut acc = vec![[[0.0; W]; 6]; blocks * R];
        for (b, part) in acc.chunks_mut(MAX_BLOCKS * R).enumerate() {
            let k0 = first + b * MAX_BLOCKS * Self::BLOCK;
            if self.input.floating_mean {
                uniform_kernel::<E, W, true>(self, f0, df, k0, part);
            } else {
                uniform_kernel::<E, W, false>(self, f0, df, k0, part);
            }
        }
        for (k, o) in out.iter_mut().enumerate() {
            *o = to_sums(&acc[k / W], k % W);
        }
    }
}

/// Adds to `acc` (`acc[lane array][sum][lane]`, R arrays per block) the sums
/// of the frequencies `k0 ..` from one seed.
#[macro_rules_attribute::apply(simd_targets!)]
fn uniform_kernel<E: Element, const W: usize, const FM: bool>(
    u: &Uniform<'_, E, W>,
    f0: f64,
    df: f64,
    k0: usize,
    acc: &mut [[[f64; W]; 6]],
) {
    let nx = u.input.t.len();
    let omega0 = f0 + k0 as f64 * df;
    let mut state_c = vec![[E::default(); W]; TILE.min(nx)];
    let mut state_s = vec![[E::default(); W]; TILE.min(nx)];
    for start in (0..nx).step_by(TILE) {
        let end = (start + TILE).min(nx);
        let (sqrt_w, g) = (&u.sqrt_w[start..end], &u.g[start..end]);
        let (step_c, step_s) = (&u.step_c[start..end], &u.step_s[start..end]);
        let n = end - start;
        let (state_c, state_s) = (&mut state_c[..n], &mut state_s[..n]);
        // Seeds in f64, exact to rounding: u = sqrt(w) e^{i omega_0 t} e^{i j df t},
        // the first factor by sincos over LANES samples at a time.
        let (t, sw64) = (&u.input.t[start..end], &u.input.sqrt_w[start..end]);
        let (lane_c, lane_s) = (&u.lane_c[start..end], &u.lane_s[start..end]);
        for (i0, ((uc, us), (t, sw))) in state_c
            .chunks_mut(LANES)
            .zip(state_s.chunks_mut(LANES))
            .zip(t.chunks(LANES).zip(sw64.chunks(LANES)))
            .enumerate()
        {
            let mut phase: Lanes = [0.0; LANES];
            for (p, t) in phase.iter_mut().zip(t) {
                *p = omega0 * t;
            }
            let (s0, c0) = sincos(&phase);
            for m in 0..uc.len() {
                let (bc, bs) = (c0[m] * sw[m], s0[m] * sw[m]);
                let (lc, ls) = (&lane_c[i0 * LANES + m], &lane_s[i0 * LANES + m]);
                for j in 0..W {
                    uc[m][j] = E::from_f64(fma(bc, lc[j], -(bs * ls[j])));
                    us[m][j] = E::from_f64(fma(bs, lc[j], bc * ls[j]));
                }
            }
        }
        for block in acc.chunks_mut(R) {
            let mut a = [[[E::default(); W]; 6]; R];
            for (((((uc, us), &rc), &rs), &sw), &g) in state_c
                .iter_mut()
                .zip(state_s.iter_mut())
                .zip(step_c)
                .zip(step_s)
                .zip(sqrt_w)
                .zip(g)
            {
                let (mut c, mut s) = (*uc, *us);
                for ar in a.iter_mut() {
                    for j in 0..W {
                        if FM {
                            ar[0][j] = sw.mul_add(c[j], ar[0][j]);
                            ar[1][j] = sw.mul_add(s[j], ar[1][j]);
                        }
                        ar[2][j] = g.mul_add(c[j], ar[2][j]);
                        ar[3][j] = g.mul_add(s[j], ar[3][j]);
                        ar[4][j] = c[j].mul_add(c[j], ar[4][j]);
                        ar[5][j] = c[j].mul_add(s[j], ar[5][j]);
                        let cn = c[j].mul_add(rc, -(s[j] * rs));
                        let sn = s[j].mul_add(rc, c[j] * rs);
                        c[j] = cn;
                        s[j] = sn;
                    }
                }
                *uc = c;
                *us = s;
            }
            for (total, part) in block.iter_mut().zip(&a) {
                for q in 0..6 {
                    for j in 0..W {
                        total[q][j] += part[q][j].to_f64();
                    }
                }
            }
        }
    }
}
