//! The Lomb-Scargle trig sums on a uniform frequency grid by a type-1
//! non-uniform FFT: O(nx w + n log n) instead of the direct O(nx nf).
//!
//! For angular frequencies a_k = f0 + k df (k in 0..nf) we need, per k,
//! Σ w e^{i a_k t}, Σ wy e^{i a_k t} and Σ w e^{i 2 a_k t}. Centre the modes:
//! k = k0 + m with k0 = nf / 2, so m runs over [-k0, nf - 1 - k0] and
//!
//!   Σ_j c_j e^{i m θ_j},  c_j = w_j e^{i (f0 + k0 df) t_j},  θ_j = df t_j,
//!
//! (and the same with c_j squared phasor, θ'_j = 2 θ_j for the 2 a_k sums: the
//! same mode range, so the same grid and deconvolution). Centring keeps |m|
//! within nf / 2, where the kernel's Fourier transform is far from zero; the
//! large f0 t phase is taken exactly by one sin_cos per sample.
//!
//! Each transform: spread c_j onto a periodic grid of n >= sigma nf points
//! with the "exponential of semicircle" kernel (Barnett, Magland & af
//! Klinteberg, FINUFFT), phi(z) = exp(beta (sqrt(1 - z^2) - 1)) over `width`
//! grid points; FFT (rustfft, positive exponent); divide mode m by the
//! kernel's Fourier transform at 2 pi m / n (Gauss-Legendre quadrature, once
//! per plan).
//!
//! Parallelism, with results independent of the thread count (the same bits
//! on 1 thread or 16): the θ grids (w and wy share the kernel values) and
//! the 2θ grid are each spread by one thread in sample order (two threads
//! at most); each grid is split by decimation in time into `parts` sub-grids
//! (grid point l in sub-grid l mod parts, `parts` a function of the grid
//! size only), so the three FFTs become 3 parts independent FFTs of n /
//! parts points that balance over threads (rustfft is single-threaded); the
//! radix-`parts` butterfly that joins them is folded into the per-output
//! pass ([`Transform::sums`]), which the caller runs over output ranges on
//! its threads.
use std::f64::consts::TAU;
use std::sync::{Arc, Mutex, PoisonError};

use rustfft::num_complex::Complex64;
use rustfft::{Fft, FftPlanner};

#[cfg(test)]
use crate::cpu::parallel::for_each_chunk;
use crate::cpu::parallel::for_each_range_mut;
use crate::params::lombscargle::UniformGrid;

/// Oversampling factor n / nf. sigma 1.25 (width 20) was ~1.7x faster at
/// nf = 2e5 (3.5 vs 6.0 ms on 2 threads) but stops near 1e-12 of Σ|c| (the
/// deconvolution cancels ~1e5 at its band edge) and 6e-12 in the periodogram;
/// sigma 2 keeps a wide margin under the 1e-10 target (`accuracy_by_width`).
const SIGMA: f64 = 2.0;
/// Kernel width in grid points: at sigma 2 the error falls about tenfold a
/// point; 16 measured 8.5e-16 of Σ|c| (14: 5e-14, 13: 5e-13) and costs the
/// same kernel evaluations as 14 (two lane arrays of 8).
const WIDTH: usize = 16;
/// The spread loop evaluates the kernel in lanes of 8, up to this many taps.
const MAX_WIDTH: usize = 32;

/// The kernel's shape parameter: FINUFFT's beta = gamma pi (1 - 1 / (2
/// sigma)) width with gamma = 0.97 (2.29 width at sigma = 2).
fn beta_for(sigma: f64, width: usize) -> f64 {
    0.97 * std::f64::consts::PI * (1.0 - 0.5 / sigma) * width as f64
}

/// What a call needs for a given number of modes, built once and cached.
struct Plan {
    /// The modes, oversampling and kernel width asked for (the cache's key).
    key: (usize, f64, usize),
    nf: usize,
    parts: usize,
    width: usize,
    beta: f64,
    /// Grid points (a multiple of `parts`).
    n: usize,
    /// Inverse (positive exponent) FFT of n / parts points.
    fft: Arc<dyn Fft<f64>>,
    /// Per output k: 1 / phi_hat(2 pi m / n), m = k - nf / 2.
    deconv: Vec<f64>,
    /// Per output k: e^{2 pi i m / n}, the twiddle of sub-grid 1 (sub-grid r
    /// takes its r-th power); empty when parts == 1.
    twiddle: Vec<Complex64>,
    /// Grids of earlier calls (3 n points each set), reused: a fresh 20 MB
    /// allocation costs its page faults again on every call.
    spare: Mutex<Vec<Vec<Complex64>>>,
}

impl Plan {
    fn new(nf: usize, sigma: f64, width: usize, planner: &mut FftPlanner<f64>) -> Plan {
        let key = (nf, sigma, width);
        let width = width.clamp(2, MAX_WIDTH);
        let beta = beta_for(sigma, width);
        let n_min = grid_min(nf, sigma, width);
        let parts = parts_for(n_min);
        let n = smooth_size(n_min, parts);
        let fft = planner.plan_fft_inverse(n / parts);
        let k0 = nf / 2;
        let max_m = k0.max(nf.saturating_sub(1 + k0));
        let phihat = phihat_for(width, beta, n, max_m, QUAD_NODES);
        let deconv = (0..nf)
            .map(|k| 1.0 / phihat[(k as i64 - k0 as i64).unsigned_abs() as usize])
            .collect();
        let twiddle = if parts > 1 {
            let step = Complex64::from_polar(1.0, TAU / n as f64);
            let mut tw = Vec::with_capacity(nf);
            for k in 0..nf {
                if k % 64 == 0 {
                    let m = k as f64 - k0 as f64;
                    tw.push(Complex64::from_polar(1.0, TAU * m / n as f64));
                } else {
                    let last = tw[k - 1];
                    tw.push(last * step);
                }
            }
            tw
        } else {
            Vec::new()
        };
        Plan {
            key,
            nf,
            parts,
            width,
            beta,
            n,
            fft,
            deconv,
            twiddle,
            spare: Mutex::new(Vec::new()),
        }
    }

    /// Room for a grid of n points, a spare one when there is one; zeroed
    /// by `zeroed`, on the thread that spreads into it (a fresh grid's first
    /// touch, 21 MB at nf = 2e5, cost 8 ms on the caller's thread alone).
    fn take_grid(&self) -> Vec<Complex64> {
        let spare = self
            .spare
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .pop();
        spare.unwrap_or_else(|| Vec::with_capacity(self.n))
    }

    /// `g` as n zeros.
    fn zeroed(&self, g: &mut Vec<Complex64>) {
        g.clear();
        g.resize(self.n, Complex64::default());
    }

    fn give_back(&self, grids: Vec<Vec<Complex64>>) {
        // Enough sets for concurrent callers (a batch runs one series per
        // thread), up to 64 MB; always one single-term set of three.
        let cap = (64 << 20) / (self.n * std::mem::size_of::<Complex64>());
        let mut spare = self.spare.lock().unwrap_or_else(PoisonError::into_inner);
        for g in grids {
            if spare.len() < cap.max(3) {
                spare.push(g);
            }
        }
    }
}

/// Gauss-Legendre nodes for phi_hat (a multiple of the 8 lanes of
/// `phihat_table`): 48 integrate the analytic integrand of widths <= 24 to
/// rounding (checked against 64 in `tests::deconvolution_is_converged`).
const QUAD_NODES: usize = 48;

/// phi_hat(2 pi m / n) for m in 0..=max_m: Σ_q fw_q cos(2 pi m x_q / n),
/// eight nodes per lane array. cos(ang (m0 + j)) = Re(e^{i ang m0} e^{i ang j})
/// from an exact seed per block of 128 m and an exact table of the 128 steps:
/// one rounded product each, so no error builds up along m.
#[macro_rules_attribute::apply(simd_targets!)]
fn phihat_table(nodes: &[f64], fw: &[f64], n: usize, max_m: usize) -> Vec<f64> {
    const BLOCK: usize = 128;
    let mut out = vec![0.0; max_m + 1];
    let mut table = vec![([0.0f64; 8], [0.0f64; 8]); BLOCK];
    for (xs, fs) in nodes.chunks(8).zip(fw.chunks(8)) {
        let mut ang = [0.0f64; 8];
        let mut f = [0.0f64; 8];
        for i in 0..xs.len() {
            ang[i] = TAU * xs[i] / n as f64;
            f[i] = fs[i];
        }
        for (j, (tr, ti)) in table.iter_mut().enumerate() {
            for i in 0..8 {
                (ti[i], tr[i]) = (ang[i] * j as f64).sin_cos();
            }
        }
        for (block, piece) in out.chunks_mut(BLOCK).enumerate() {
            let m0 = (block * BLOCK) as f64;
            let (mut zr, mut zi) = ([0.0f64; 8], [0.0f64; 8]);
            for i in 0..8 {
                (zi[i], zr[i]) = (ang[i] * m0).sin_cos();
                // Fold the weight into the seed: Re(f z t) = f Re(z t).
                zr[i] *= f[i];
                zi[i] *= f[i];
            }
            for (o, (tr, ti)) in piece.iter_mut().zip(&table) {
                let mut acc = 0.0;
                for i in 0..8 {
                    acc += zr[i] * tr[i] - zi[i] * ti[i];
                }
                *o += acc;
            }
        }
    }
    out
}

/// Sub-grid FFTs above this many points ran several times slower per point
/// on the 2-core EPYC (4 MB of complex f64: beyond what a core gets of the
/// cache; 3e5 points 1.6 ms, 4e5 points 7-15 ms), so a grid is split into
/// enough sub-grids to stay under it.
const MAX_SUB: usize = 1 << 17;

/// Sub-grids per grid: a power of two, at least 2 (the three grids then
/// give an even number of FFTs to balance over two threads; a single thread
/// pays one extra complex product per output and grid in `combine`),
/// enough to keep each under `MAX_SUB` points. A function of the grid size
/// only, never of the thread count: the split changes the FFT's rounding,
/// and results must not depend on the threads.
fn parts_for(n_min: usize) -> usize {
    let mut parts = 2;
    while n_min.div_ceil(parts) > MAX_SUB {
        parts *= 2;
    }
    parts
}

/// The grid size: a multiple of `parts` whose sub-grid size n / parts is
/// 2^a 3^b 5^c (rustfft's fast radices), at least `at_least`, and of the
/// least estimated FFT time among those up to 30% larger. rustfft's time per
/// point grows with the factors 5 (and a little with 3): on the 2-core EPYC
/// 10,000 points (5^4) took 4.2 ns a point, 10,240 (5) 2.8 and 10,368 (3^4)
/// 3.0; 50,000 4.9 against 51,200 3.9 (`fft_timing`), so the smallest
/// smooth size is often not the fastest.
fn smooth_size(at_least: usize, parts: usize) -> usize {
    let factors = |mut r: usize| {
        let mut count = [0u32; 3];
        for (c, p) in count.iter_mut().zip([2, 3, 5]) {
            while r % p == 0 {
                r /= p;
                *c += 1;
            }
        }
        (r == 1).then_some(count)
    };
    let sub_min = at_least.max(1).div_ceil(parts);
    let mut best = (f64::INFINITY, sub_min);
    for sub in sub_min..=sub_min + sub_min.div_ceil(10) * 3 {
        if let Some([_, e3, e5]) = factors(sub) {
            let x = sub as f64;
            let cost = x * x.log2().max(1.0) * (1.0 + 0.02 * e3 as f64 + 0.08 * e5 as f64);
            if cost < best.0 {
                best = (cost, sub);
            }
        }
    }
    // Some 2^a 3^b 5^c lies in any [x, 1.3 x] past the first few integers
    // (all of 1..=6 are smooth); the scan always finds one.
    best.1 * parts
}

/// Gauss-Legendre nodes and weights on [0, h] (Newton on P_q from the
/// classical initial guesses; converges to rounding in a few steps).
fn gauss_legendre(q: usize, h: f64) -> (Vec<f64>, Vec<f64>) {
    let mut nodes = Vec::with_capacity(q);
    let mut weights = Vec::with_capacity(q);
    for i in 0..q {
        let mut x = (std::f64::consts::PI * (i as f64 + 0.75) / (q as f64 + 0.5)).cos();
        let mut dp = 1.0;
        for _ in 0..100 {
            // P_q(x) and P_q'(x) by the three-term recurrence.
            let (mut p0, mut p1) = (1.0, x);
            for k in 2..=q {
                let p2 = ((2 * k - 1) as f64 * x * p1 - (k - 1) as f64 * p0) / k as f64;
                p0 = p1;
                p1 = p2;
            }
            let p = if q == 0 { 1.0 } else { p1 };
            let pm1 = if q <= 1 { 1.0 } else { p0 };
            dp = q as f64 * (x * p - pm1) / (x * x - 1.0);
            let step = p / dp;
            x -= step;
            if step.abs() < 1e-16 {
                break;
            }
        }
        // Map [-1, 1] to [0, h].
        nodes.push(0.5 * h * (x + 1.0));
        weights.push(0.5 * h * 2.0 / ((1.0 - x * x) * dp * dp));
    }
    (nodes, weights)
}

/// phi_hat(2 pi m / n) for |m| <= max_m (phi_hat is even in m).
fn phihat_for(width: usize, beta: f64, n: usize, max_m: usize, quad_nodes: usize) -> Vec<f64> {
    let h = width as f64 / 2.0;
    // phi_hat(xi) = 2 ∫_0^h phi(x / h) cos(xi x) dx. phi has a square-root
    // corner at the support's edge that slows Gauss-Legendre to ~1e-13;
    // with x = h sin s the integrand, 2 h e^{beta (cos s - 1)} cos s
    // cos(xi h sin s) on [0, pi / 2], is analytic and the rule converges
    // geometrically (xi h <= pi h / sigma: a few oscillations).
    let (svals, sweights) = gauss_legendre(quad_nodes, std::f64::consts::FRAC_PI_2);
    let nodes: Vec<f64> = svals.iter().map(|s| h * s.sin()).collect();
    let fw: Vec<f64> = svals
        .iter()
        .zip(&sweights)
        .map(|(&s, &wq)| 2.0 * h * wq * (beta * (s.cos() - 1.0)).exp() * s.cos())
        .collect();
    phihat_table(&nodes, &fw, n, max_m)
}

/// The fewest grid points: sigma nf, and at least 2 width so that a
/// sample's taps never wrap onto themselves.
fn grid_min(nf: usize, sigma: f64, width: usize) -> usize {
    ((sigma * nf as f64).ceil() as usize).max(2 * width.clamp(2, MAX_WIDTH))
}

/// Recently used plans (a batch of series shares one) and the FFT planner
/// (which reuses its own sub-plans across sizes).
struct Cache {
    planner: FftPlanner<f64>,
    plans: Vec<Arc<Plan>>,
}

static CACHE: Mutex<Option<Cache>> = Mutex::new(None);
const CACHED_PLANS: usize = 4;

fn plan_for(nf: usize, sigma: f64, width: usize) -> Arc<Plan> {
    // A poisoned lock only means another thread panicked while holding it;
    // the cache is still a valid list of finished plans.
    let mut guard = CACHE.lock().unwrap_or_else(PoisonError::into_inner);
    let cache = guard.get_or_insert_with(|| Cache {
        planner: FftPlanner::new(),
        plans: Vec::new(),
    });
    let plan = match cache.plans.iter().position(|p| p.key == (nf, sigma, width)) {
        Some(i) => cache.plans.remove(i),
        None => {
            let plan = Arc::new(Plan::new(nf, sigma, width, &mut cache.planner));
            if cache.plans.len() >= CACHED_PLANS {
                cache.plans.remove(0);
            }
            plan
        }
    };
    cache.plans.push(plan.clone());
    plan
}

/// How a frequency of the grid turns into a phase: angular frequencies (rad
/// per unit of t, the single-term periodograms) or cyclic ones (cycles per
/// unit of t, the multi-term periodogram's astropy convention). The phase of
/// a cyclic frequency is taken from `f t` directly, with no rounded 2 pi.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Unit {
    Angular,
    Cycles,
}

/// Which sums a transform gives: those of `w` at the harmonics m θ for m =
/// 1..=`w`, and of `wy` for m = 1..=`wy` (`wy <= w`). The single-term
/// periodogram needs w at θ and 2θ and wy at θ; the K-term one w up to 2K θ
/// and wy up to K θ.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Harmonics {
    pub w: usize,
    pub wy: usize,
    pub unit: Unit,
}

impl Harmonics {
    /// The single-term periodogram's sums (angular frequencies).
    pub(crate) const SINGLE: Harmonics = Harmonics {
        w: 2,
        wy: 1,
        unit: Unit::Angular,
    };

    /// The sums of a `nterms`-term periodogram (cyclic frequencies).
    pub(crate) fn multi_term(nterms: usize) -> Harmonics {
        Harmonics {
            w: 2 * nterms,
            wy: nterms,
            unit: Unit::Cycles,
        }
    }

    /// Grids, one per transformed sum.
    pub(crate) fn grids(&self) -> usize {
        self.w + self.wy
    }
}

/// The transformed grids of one series and grid of frequencies, ready to
/// give the sums of any range of outputs ([`Transform::sums`]): the caller
/// finishes each range as it comes, so the sums of the whole grid (48 bytes
/// a frequency and grid pair) are never held at once. The grids go back to
/// the plan's spares when it is dropped.
pub(crate) struct Transform {
    plan: Arc<Plan>,
    /// Per harmonic m = 1, 2, ...: w at m θ, then wy at m θ while m <=
    /// `harmonics.wy` (see the module documentation). For the single term:
    /// w at θ, wy at θ, w at 2θ.
    grids: Vec<Vec<Complex64>>,
}

impl Transform {
    /// The single-term sums: spreads and transforms, the part of the work
    /// that is not per output. `t` already shifted by its mean; `w`, `wy` of
    /// the same length.
    pub(crate) fn new(
        t: &[f64],
        w: &[f64],
        wy: &[f64],
        grid: &UniformGrid,
        threads: usize,
    ) -> Self {
        Transform::with(t, w, wy, grid, Harmonics::SINGLE, threads, (SIGMA, WIDTH))
    }

    /// The sums of `harmonics` on the grid `f0 + k df` (k < nf) in the
    /// harmonics' unit.
    pub(crate) fn of_harmonics(
        t: &[f64],
        w: &[f64],
        wy: &[f64],
        grid: &UniformGrid,
        harmonics: Harmonics,
        threads: usize,
    ) -> Self {
        Transform::with(t, w, wy, grid, harmonics, threads, (SIGMA, WIDTH))
    }

    /// [`Transform::of_harmonics`] with another oversampling and kernel width.
    fn with(
        t: &[f64],
        w: &[f64],
        wy: &[f64],
        grid: &UniformGrid,
        harmonics: Harmonics,
        threads: usize,
        (sigma, width): (f64, usize),
    ) -> Transform {
        debug_assert!(harmonics.wy <= harmonics.w);
        let (f0, df, nf) = (grid.f0, grid.df, grid.nf);
        let threads = threads.max(1);
        let plan = plan_for(nf, sigma, width);
        let n = plan.n;
        let k0 = nf / 2;
        // The centring frequency f0 + k0 df as a double-double, so that with
        // `cycles` the phases of long spans keep their full precision.
        let (q, q_err) = two_prod(k0 as f64, df);
        let (fc, fc_err) = two_sum(f0, q);
        let fc = (fc, fc_err + q_err);
        let nx = t.len().min(w.len()).min(wy.len());

        // Per harmonic m, w at m θ and wy at m θ (sharing the kernel
        // values). Each harmonic's grids are spread by one thread in sample
        // order: the same sums in the same order whichever thread, and
        // however many, run.
        let mut grids: Vec<Vec<Complex64>> =
            (0..harmonics.grids()).map(|_| plan.take_grid()).collect();
        let mut jobs: Vec<(usize, &mut [Vec<Complex64>])> = Vec::with_capacity(harmonics.w);
        let mut rest = &mut grids[..];
        for m in 1..=harmonics.w {
            let count = if m <= harmonics.wy { 2 } else { 1 };
            let (mine, tail) = rest.split_at_mut(count);
            jobs.push((m, mine));
            rest = tail;
        }
        // Threads take contiguous runs of jobs: alternate the two-grid jobs
        // (low harmonics) with the one-grid ones (high) so that each run
        // holds a like share of both.
        let jobs_in_order = jobs;
        let mut jobs = Vec::with_capacity(jobs_in_order.len());
        let mut ends = std::collections::VecDeque::from(jobs_in_order);
        while let Some(low) = ends.pop_front() {
            jobs.push(low);
            if let Some(high) = ends.pop_back() {
                jobs.push(high);
            }
        }
        for_each_range_mut(threads, &mut jobs, 1, |_, mine| {
            for (m, g) in mine.iter_mut() {
                g.iter_mut().for_each(|g| plan.zeroed(g));
                let (ga, gb) = g.split_first_mut().expect("a grid");
                let (gb, wy) = match gb.first_mut() {
                    Some(g) => (&mut g[..], &wy[..nx]),
                    None => (&mut [][..], &[][..]),
                };
                let phase = Phase {
                    fc,
                    df,
                    harmonic: *m,
                    unit: harmonics.unit,
                };
                spread(&t[..nx], &w[..nx], wy, phase, &plan, ga, gb);
            }
        });
        drop(jobs);

        // grids x parts independent FFTs (the same plan, so the same bits,
        // on whichever thread), a static split over threads.
        let sub = n / plan.parts;
        let mut jobs: Vec<&mut [Complex64]> =
            grids.iter_mut().flat_map(|g| g.chunks_mut(sub)).collect();
        let fft = &plan.fft;
        for_each_range_mut(threads, &mut jobs, 1, |_, mine| {
            let mut scratch = vec![Complex64::default(); fft.get_inplace_scratch_len()];
            for grid in mine.iter_mut() {
                fft.process_with_scratch(grid, &mut scratch);
            }
        });
        drop(jobs);
        Transform { plan, grids }
    }

    /// out[i] = [Σ w cos a t, Σ w sin a t, Σ wy cos a t, Σ wy sin a t,
    /// Σ w cos 2at, Σ w sin 2at] at a = f0 + (first + i) df, of a
    /// single-term transform. Each output depends on its index only, not on
    /// how the outputs are cut.
    pub(crate) fn sums(&self, first: usize, out: &mut [[f64; 6]]) {
        self.sums_of::<6>(first, out.as_flattened_mut())
    }

    /// The sums of outputs `first..`, `S` values each (S = 2 x grids): per
    /// grid, in the grids' order, (Σ c cos, Σ c sin) of its harmonic.
    pub(crate) fn sums_of<const S: usize>(&self, first: usize, out: &mut [f64]) {
        assert_eq!(S, 2 * self.grids.len(), "S is twice the grid count");
        debug_assert!(first + out.len() / S <= self.plan.nf);
        combine::<S>(out, first, &self.plan, &self.grids)
    }
}

impl Drop for Transform {
    fn drop(&mut self) {
        let grids = std::mem::take(&mut self.grids);
        self.plan.give_back(grids);
    }
}

/// All the sums at once (tests and timings): [`Transform::sums`] of
/// `0..nf`, error ~1e-14 relative to Σ|w| (resp. Σ|wy|) plus the
/// conditioning of the phases themselves (see the tests).
#[cfg(test)]
pub(crate) fn uniform_sums_nufft(
    t: &[f64],
    w: &[f64],
    wy: &[f64],
    f0: f64,
    df: f64,
    nf: usize,
    threads: usize,
) -> Vec<[f64; 6]> {
    let mut out = vec![[0.0; 6]; nf];
    uniform_sums_with(t, w, wy, f0, df, threads, SIGMA, WIDTH, &mut out);
    out
}

#[cfg(test)]
#[allow(clippy::too_many_arguments)]
fn uniform_sums_with(
    t: &[f64],
    w: &[f64],
    wy: &[f64],
    f0: f64,
    df: f64,
    threads: usize,
    sigma: f64,
    width: usize,
    out: &mut [[f64; 6]],
) {
    if out.is_empty() {
        return;
    }
    let grid = UniformGrid::new(f0, df, out.len());
    let tr = Transform::with(t, w, wy, &grid, Harmonics::SINGLE, threads, (sigma, width));
    for_each_chunk(threads, out, 8192, None, |first, piece| {
        tr.sums(first, piece)
    });
}
/// Output k (m = k - k0): per grid G(m) = Σ_r ω^{r m} F_r(m mod sub), the
/// decimation-in-time butterfly joining the sub-grid FFTs, times the
/// deconvolution; `S / 2` grids, S values an output in `piece`. Blocks of
/// up to 64 k with contiguous sub-grid indices in lane arrays.
#[macro_rules_attribute::apply(simd_targets!)]
fn combine<const S: usize>(piece: &mut [f64], first: usize, plan: &Plan, grids: &[Vec<Complex64>]) {
    let (k0, sub, parts) = (plan.nf / 2, plan.n / plan.parts, plan.parts);
    let (deconv, twiddle) = (&plan.deconv, &plan.twiddle);
    const B: usize = 64;
    let outputs = piece.len() / S;
    let mut start = 0;
    while start < outputs {
        let k = first + start;
        let idx = (k as i64 - k0 as i64).rem_euclid(sub as i64) as usize;
        // Up to B outputs whose indices do not wrap past the sub-grid's end.
        let len = B.min(outputs - start).min(sub - idx);
        let mut acc = [[0.0f64; B]; S];
        for (g, grid) in grids.iter().enumerate() {
            for j in 0..len {
                acc[2 * g][j] = grid[idx + j].re;
                acc[2 * g + 1][j] = grid[idx + j].im;
            }
        }
        if parts > 1 {
            let (mut tr, mut ti) = ([0.0f64; B], [0.0f64; B]);
            for j in 0..len {
                tr[j] = twiddle[k + j].re;
                ti[j] = twiddle[k + j].im;
            }
            let (mut pr, mut pi) = (tr, ti);
            for r in 1..parts {
                for (g, grid) in grids.iter().enumerate() {
                    let f = &grid[r * sub + idx..r * sub + idx + len];
                    for j in 0..len {
                        acc[2 * g][j] += pr[j] * f[j].re - pi[j] * f[j].im;
                        acc[2 * g + 1][j] += pr[j] * f[j].im + pi[j] * f[j].re;
                    }
                }
                if r + 1 < parts {
                    for j in 0..len {
                        let re = pr[j] * tr[j] - pi[j] * ti[j];
                        pi[j] = pr[j] * ti[j] + pi[j] * tr[j];
                        pr[j] = re;
                    }
                }
            }
        }
        for j in 0..len {
            let d = deconv[k + j];
            let o = &mut piece[(start + j) * S..(start + j + 1) * S];
            for (c, a) in o.iter_mut().zip(&acc) {
                *c = a[j] * d;
            }
        }
        start += len;
    }
}

#[inline(always)]
fn two_prod(a: f64, b: f64) -> (f64, f64) {
    let p = a * b;
    (p, a.mul_add(b, -p))
}

#[inline(always)]
fn two_sum(a: f64, b: f64) -> (f64, f64) {
    let s = a + b;
    let bb = s - a;
    (s, (a - (s - bb)) + (b - bb))
}

/// hi + lo minus its nearest integer, as a double-double in [-1/2, 1/2].
#[inline(always)]
fn reduce(hi: f64, lo: f64) -> (f64, f64) {
    // hi - round(hi) is exact; the sum with lo is renormalised.
    let f = hi - hi.round();
    let (f, e) = two_sum(f, lo);
    let r = f.round();
    two_sum(f - r, e)
}

/// a t / 2 pi mod 1 in [-1/2, 1/2], a = a.0 + a.1 (double-double), to ~1e-16
/// of a cycle whatever |a t|: the product and the division by 2 pi are taken
/// in double-double, so a span of many cycles loses nothing. A plain
/// (a * t).sin_cos() instead carries eps |a t| of phase error, which at
/// nf = 2e5 modes dominated the transform's own 1e-14.
#[inline(always)]
fn cycles(a: (f64, f64), t: f64) -> (f64, f64) {
    const INV_TAU_HI: f64 = 0.159_154_943_091_895_35;
    const INV_TAU_LO: f64 = -9.839_338_337_591_243e-18;
    let (p, pe) = two_prod(a.0, t);
    let p_lo = pe + a.1 * t;
    let v = p * INV_TAU_HI;
    let v_lo = p.mul_add(INV_TAU_HI, -v) + (p * INV_TAU_LO + p_lo * INV_TAU_HI);
    reduce(v, v_lo)
}

/// f t mod 1 in [-1/2, 1/2] for a cyclic frequency f = f.0 + f.1
/// (double-double), to ~1e-16 of a cycle whatever |f t|.
#[inline(always)]
fn turns(f: (f64, f64), t: f64) -> (f64, f64) {
    let (p, pe) = two_prod(f.0, t);
    reduce(p, pe + f.1 * t)
}

/// The phases a sample spreads with: the centring frequency `fc`
/// (double-double) and the step `df` of the grid, times `harmonic`, in
/// `unit`.
#[derive(Debug, Clone, Copy)]
struct Phase {
    fc: (f64, f64),
    df: f64,
    harmonic: usize,
    unit: Unit,
}

impl Phase {
    /// (fc t, df t) times the harmonic, as fractions of a cycle in [-1/2,
    /// 1/2] (double-doubles).
    #[inline(always)]
    fn of(&self, t: f64) -> ((f64, f64), (f64, f64)) {
        let fraction = |a: (f64, f64)| match self.unit {
            Unit::Angular => cycles(a, t),
            Unit::Cycles => turns(a, t),
        };
        let (ec, u) = (fraction(self.fc), fraction((self.df, 0.0)));
        if self.harmonic == 1 {
            return (ec, u);
        }
        // m x of a double-double: the product's rounding error joins the low
        // part (exact for m = 2).
        let times = |x: (f64, f64)| {
            let (p, pe) = two_prod(self.harmonic as f64, x.0);
            reduce(p, pe + self.harmonic as f64 * x.1)
        };
        (times(ec), times(u))
    }
}

/// e^x for x in [-750, 0], in a form the compiler vectorises (libm's exp is
/// a scalar call): x = k ln2 + r, |r| <= ln2 / 2, e^r by its Taylor series to
/// r^13 (remainder < 5e-18), times 2^k built from the exponent bits.
#[inline(always)]
fn exp_lanes(x: &mut [f64; 8]) {
    const LN2_HI: f64 = 6.931_471_803_691_238e-1;
    const LN2_LO: f64 = 1.908_214_929_270_587_7e-10;
    // 1 / j! for j = 13 down to 1 (Horner order).
    const INV_FACT: [f64; 13] = [
        1.0 / 6_227_020_800.0,
        1.0 / 479_001_600.0,
        1.0 / 39_916_800.0,
        1.0 / 3_628_800.0,
        1.0 / 362_880.0,
        1.0 / 40_320.0,
        1.0 / 5_040.0,
        1.0 / 720.0,
        1.0 / 120.0,
        1.0 / 24.0,
        1.0 / 6.0,
        1.0 / 2.0,
        1.0,
    ];
    for v in x.iter_mut() {
        let a = v.max(-700.0);
        let k = (a * std::f64::consts::LOG2_E).round();
        let r = (a - k * LN2_HI) - k * LN2_LO;
        let mut p = INV_FACT[0];
        for c in &INV_FACT[1..] {
            p = p * r + c;
        }
        p = p * r + 1.0;
        let scale = f64::from_bits(((k as i64 + 1023) as u64) << 52);
        *v = p * scale;
    }
}

/// Adds every sample's c_j (w_j into `ga` and, unless `wy` is empty, wy_j
/// into `gb`, times e^{i m fc t_j} for the phase's harmonic m) times the
/// kernel at m df t_j onto the sub-grid layout: grid point l lives at
/// (l mod parts) n/parts + l / parts.
#[macro_rules_attribute::apply(simd_targets!)]
fn spread(
    t: &[f64],
    w: &[f64],
    wy: &[f64],
    phase: Phase,
    plan: &Plan,
    ga: &mut [Complex64],
    gb: &mut [Complex64],
) {
    let n = plan.n;
    let nf64 = n as f64;
    let width = plan.width;
    let h = width as f64 / 2.0;
    let inv_h = 1.0 / h;
    let beta = plan.beta;
    let parts = plan.parts;
    let sub = n / parts;
    let shift = parts.trailing_zeros();
    let two = !wy.is_empty();
    let chunks = width.div_ceil(8);
    let mut ker = [0.0f64; MAX_WIDTH];
    for j in 0..t.len() {
        // Phases as fractions of a cycle in [-1/2, 1/2] (double-double): the
        // centring phase m fc t and θ = m df t.
        let (ec, u) = phase.of(t[j]);
        let (s, c) = (TAU * ec.0).sin_cos();
        let e = Complex64::new(c, s);
        // x = u n split exactly into integer + fraction (fma gives the
        // product's rounding error), so the kernel offsets keep the phase's
        // full precision even on a grid of 1e6 points.
        let hi = u.0 * nf64;
        let lo = u.0.mul_add(nf64, -hi) + u.1 * nf64;
        let ip = hi.floor();
        let mut frac = (hi - ip) + lo;
        let mut base = ip as i64;
        if frac < 0.0 {
            frac += 1.0;
            base -= 1;
        } else if frac >= 1.0 {
            frac -= 1.0;
            base += 1;
        }
        // Taps d0 .. d0 + width - 1 relative to base, d0 = ceil(frac - h).
        let d0 = (frac - h).ceil();
        let z0 = (d0 - frac) * inv_h;
        for ch in 0..chunks {
            let mut lane = [0.0f64; 8];
            for (i, v) in lane.iter_mut().enumerate() {
                let z = z0 + ((ch * 8 + i) as f64) * inv_h;
                let s = (1.0 - z * z).max(0.0).sqrt();
                *v = beta * (s - 1.0);
            }
            exp_lanes(&mut lane);
            ker[ch * 8..ch * 8 + 8].copy_from_slice(&lane);
        }
        let ca = e * w[j];
        let cb = if two { e * wy[j] } else { Complex64::default() };
        let start = (base + d0 as i64).rem_euclid(n as i64) as usize;
        for (i, &kv) in ker[..width].iter().enumerate() {
            let mut l = start + i;
            if l >= n {
                l -= n;
            }
            let pos = if parts == 1 {
                l
            } else {
                (l & (parts - 1)) * sub + (l >> shift)
            };
            ga[pos] += ca * kv;
            if two {
                gb[pos] += cb * kv;
            }
        }
    }
}

#[cfg(test)]
mod tests;
