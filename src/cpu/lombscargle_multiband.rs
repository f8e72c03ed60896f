//! The flexible multiband periodogram on the CPU: threads over frequencies;
//! per frequency one pass over each band's samples accumulating the sums of
//! cos and sin of m theta (m = 0..=2H, H = max(nterms_base, nterms_band))
//! and of y cos, y sin of k theta (k = 0..=H), from which every entry of the
//! normal matrix follows by the product-to-sum identities.
//!
//! The solve uses the matrix's shape. The band unknowns of different bands
//! never meet (a band's columns are zero outside it), so with the band
//! blocks eliminated first the Cholesky factor has no fill between bands:
//! each band's block is factored as soon as its sums are complete, its
//! coupling to the base unknowns folded into a small Schur complement, and
//! the base block factored last. The work per frequency grows with the
//! number of bands, not with its cube; csrc/lombscargle_multiband.cu does the
//! same on the GPU. Unknowns whose pivot falls to rounding level are dropped
//! (as in the multi-term periodogram): the power is then that of the fit
//! without them, which for exactly dependent columns (the base offset is the
//! sum of the band offsets when no ridge separates them) is the
//! least-squares power astropy's fallback computes.
use crate::float::Float;
use crate::params::lombscargle_multiband::{
    MultibandOptions, MultibandPrepared, MAX_MULTIBAND_NTERMS,
};

const MAX_H: usize = MAX_MULTIBAND_NTERMS;
/// Unknowns of one model: an offset and a sin/cos pair per harmonic.
const MAX_COLS: usize = 1 + 2 * MAX_H;

/// Relative pivot below which an unknown is dropped (see the module doc).
pub(crate) const PIVOT_TOLERANCE: f64 = 1e-12;

/// Weighted sums of one set of samples at one frequency.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct TrigSums {
    /// sum w cos(m theta), m = 0..=2H.
    pub c: [f64; 2 * MAX_H + 1],
    /// sum w sin(m theta), m = 0..=2H (s[0] = 0).
    pub s: [f64; 2 * MAX_H + 1],
    /// sum w yhat cos(k theta), k = 0..=H.
    pub yc: [f64; MAX_H + 1],
    /// sum w yhat sin(k theta), k = 0..=H (ys[0] = 0).
    pub ys: [f64; MAX_H + 1],
}

impl TrigSums {
    fn add(&mut self, o: &TrigSums) {
        for m in 0..self.c.len() {
            self.c[m] += o.c[m];
            self.s[m] += o.s[m];
        }
        for k in 0..self.yc.len() {
            self.yc[k] += o.yc[k];
            self.ys[k] += o.ys[k];
        }
    }

    /// Adds one sample: w, w yhat and (sin, cos) of theta, harmonics up to
    /// `h` by angle addition.
    fn accumulate(&mut self, w: f64, wy: f64, (sn, cs): (f64, f64), h: usize) {
        self.c[0] += w;
        self.yc[0] += wy;
        let (mut cm, mut sm) = (cs, sn);
        for m in 1..=2 * h {
            self.c[m] += w * cm;
            self.s[m] += w * sm;
            if m <= h {
                self.yc[m] += wy * cm;
                self.ys[m] += wy * sm;
            }
            let next = cm * cs - sm * sn;
            sm = sm * cs + cm * sn;
            cm = next;
        }
    }
}

/// A column of either model: the offset (harmonic 0) or sin / cos of
/// harmonic k. Columns of a model with K harmonics: 1, sin 1, cos 1, ...
#[derive(Debug, Clone, Copy)]
struct Col {
    k: usize,
    sin: bool,
}

fn col(i: usize) -> Col {
    Col {
        k: i.div_ceil(2),
        sin: i % 2 == 1,
    }
}

/// The normal-matrix entry of two columns over the samples of `s`.
fn entry(s: &TrigSums, a: Col, b: Col) -> f64 {
    let sin_at = |m: isize| {
        if m >= 0 {
            s.s[m as usize]
        } else {
            -s.s[(-m) as usize]
        }
    };
    match (a.k, b.k) {
        (0, 0) => s.c[0],
        (0, k) | (k, 0) => {
            let sin = if a.k == 0 { b.sin } else { a.sin };
            if sin {
                s.s[k]
            } else {
                s.c[k]
            }
        }
        (j, k) => {
            let (diff, sum) = (j.abs_diff(k), j + k);
            match (a.sin, b.sin) {
                (true, true) => 0.5 * (s.c[diff] - s.c[sum]),
                (false, false) => 0.5 * (s.c[diff] + s.c[sum]),
                // sin j cos k = (sin(j+k) + sin(j-k)) / 2
                (true, false) => 0.5 * (s.s[sum] + sin_at(j as isize - k as isize)),
                (false, true) => 0.5 * (s.s[sum] + sin_at(k as isize - j as isize)),
            }
        }
    }
}

fn rhs(s: &TrigSums, a: Col) -> f64 {
    if a.sin {
        s.ys[a.k]
    } else {
        s.yc[a.k]
    }
}

/// Pivot `d` of a diagonal entry `a` kept, or dropped (NaN drops too).
fn pivot(d: f64, a: f64) -> f64 {
    if d.partial_cmp(&(PIVOT_TOLERANCE * a.abs())) == Some(std::cmp::Ordering::Greater) {
        d.sqrt()
    } else {
        0.0
    }
}

/// The reduction of chi^2 (normalised weights) of the flexible fit, folded
/// band by band: [`ArrowSolve::add_band`] for each band's sums, then
/// [`ArrowSolve::finish`].
pub(crate) struct ArrowSolve {
    base: usize,
    band: usize,
    /// sum over bands of G G^T, G = C L^-T (C: base x band entries).
    schur: [[f64; MAX_COLS]; MAX_COLS],
    /// sum over bands of G z_b.
    schur_rhs: [f64; MAX_COLS],
    total: TrigSums,
    power: f64,
}

impl ArrowSolve {
    pub(crate) fn new(opts: &MultibandOptions) -> Self {
        ArrowSolve {
            base: 1 + 2 * opts.nterms_base,
            band: 1 + 2 * opts.nterms_band,
            schur: [[0.0; MAX_COLS]; MAX_COLS],
            schur_rhs: [0.0; MAX_COLS],
            total: TrigSums::default(),
            power: 0.0,
        }
    }

    /// One band's sums: its block factored (with `ridge` on the diagonal),
    /// its share of the power and of the base block's Schur complement.
    pub(crate) fn add_band(&mut self, s: &TrigSums, ridge: f64) {
        let (nb, m) = (self.base, self.band);
        let mut l = [[0.0f64; MAX_COLS]; MAX_COLS];
        let mut z = [0.0f64; MAX_COLS];
        for i in 0..m {
            for j in 0..=i {
                let dot: f64 = (0..j).map(|k| l[i][k] * l[j][k]).sum();
                let a = entry(s, col(i), col(j));
                if i == j {
                    l[i][i] = pivot(a + ridge - dot, a + ridge);
                } else if l[j][j] != 0.0 {
                    l[i][j] = (a - dot) / l[j][j];
                }
            }
            if l[i][i] != 0.0 {
                let dot: f64 = (0..i).map(|k| l[i][k] * z[k]).sum();
                z[i] = (rhs(s, col(i)) - dot) / l[i][i];
                self.power += z[i] * z[i];
            }
        }
        // G = C L^-T: row p is the base column p against the band's columns.
        let mut g = [[0.0f64; MAX_COLS]; MAX_COLS];
        for (p, row) in g.iter_mut().enumerate().take(nb) {
            for i in 0..m {
                if l[i][i] != 0.0 {
                    let dot: f64 = (0..i).map(|k| row[k] * l[i][k]).sum();
                    row[i] = (entry(s, col(p), col(i)) - dot) / l[i][i];
                }
            }
        }
        for p in 0..nb {
            self.schur_rhs[p] += (0..m).map(|i| g[p][i] * z[i]).sum::<f64>();
            for q in 0..=p {
                self.schur[p][q] += (0..m).map(|i| g[p][i] * g[q][i]).sum::<f64>();
            }
        }
        self.total.add(s);
    }

    /// The base block: its entries over every band's samples, with `ridge`,
    /// less the Schur terms, factored; returns p.
    pub(crate) fn finish(mut self, ridge: f64) -> f64 {
        let nb = self.base;
        let t = self.total;
        let mut l = [[0.0f64; MAX_COLS]; MAX_COLS];
        let mut z = [0.0f64; MAX_COLS];
        for i in 0..nb {
            for j in 0..=i {
                let dot: f64 = (0..j).map(|k| l[i][k] * l[j][k]).sum();
                let a = entry(&t, col(i), col(j));
                if i == j {
                    let a = a + ridge;
                    l[i][i] = pivot(a - self.schur[i][i] - dot, a);
                } else if l[j][j] != 0.0 {
                    l[i][j] = (a - self.schur[i][j] - dot) / l[j][j];
                }
            }
            if l[i][i] != 0.0 {
                let dot: f64 = (0..i).map(|k| l[i][k] * z[k]).sum();
                z[i] = (rhs(&t, col(i)) - self.schur_rhs[i] - dot) / l[i][i];
                self.power += z[i] * z[i];
            }
        }
        self.power
    }
}

/// sin and cos of 2 pi turns, reduced to under half a turn first.
fn sincos_turns(turns: f64) -> (f64, f64) {
    (std::f64::consts::TAU * (turns - turns.round())).sin_cos()
}

/// The flexible power at frequency `f` of a prepared series whose times, in
/// grouped order, are `t`.
pub(crate) fn flexible_power(
    t: &[f64],
    prep: &MultibandPrepared,
    f: f64,
    opts: &MultibandOptions,
) -> f64 {
    let h = opts.harmonics();
    let mut solve = ArrowSolve::new(opts);
    for band in prep.band_starts.windows(2) {
        let mut sums = TrigSums::default();
        let r = band[0]..band[1];
        for ((&t, &w), &wy) in t[r.clone()].iter().zip(&prep.w[r.clone()]).zip(&prep.wy[r]) {
            sums.accumulate(w, wy, sincos_turns(f * t), h);
        }
        solve.add_band(&sums, prep.ridge_band);
    }
    solve.finish(prep.ridge_base) / prep.chi2_ref
}

/// Frequencies per piece handed to a thread.
const CHUNK: usize = 16;

/// The flexible periodogram of one series (times `t` in its own order) at
/// `nf` frequencies `freq(k)` (cycles per unit time).
pub(crate) fn flexible<T: Float>(
    threads: usize,
    progress: Option<&(dyn Fn(u64, u64) + Sync)>,
    t: &[T],
    prep: &MultibandPrepared,
    nf: usize,
    freq: impl Fn(usize) -> f64 + Sync,
    opts: &MultibandOptions,
) -> Vec<T> {
    let grouped: Vec<f64> = prep.order.iter().map(|&i| t[i].to_f64()).collect();
    let mut out = vec![T::from_f64(0.0); nf];
    super::parallel::for_each_chunk(threads, &mut out, CHUNK, progress, |first, piece| {
        for (q, slot) in piece.iter_mut().enumerate() {
            *slot = T::from_f64(flexible_power(&grouped, prep, freq(first + q), opts));
        }
    });
    out
}
