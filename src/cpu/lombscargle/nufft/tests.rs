//! The NUFFT sums against an oracle that takes each phase a_k t_j in
//! double-double and reduces it mod 2 pi before sin_cos, so the oracle's own
//! error (~1e-16 per term) does not hide the transform's. A plain f64
//! brute force (sin_cos(a_k * t_j)) carries ~eps |a_k t_j| per term, which for
//! long spans is the larger error; it is measured alongside for reference.
use super::*;
use crate::test_rng::Rng;
use proptest::prelude::*;

fn two_prod(a: f64, b: f64) -> (f64, f64) {
    let p = a * b;
    (p, a.mul_add(b, -p))
}

fn two_sum(a: f64, b: f64) -> (f64, f64) {
    let s = a + b;
    let bb = s - a;
    (s, (a - (s - bb)) + (b - bb))
}

/// (a_k t) mod 2 pi to ~1e-16 absolute, with a_k = f0 + k df taken exactly.
fn phase(f0: f64, df: f64, k: usize, t: f64) -> f64 {
    const TAU_LO: f64 = 2.449_293_598_294_706_4e-16;
    let (kd, kd_e) = two_prod(k as f64, df);
    let (a, a_e) = two_sum(f0, kd);
    let a_lo = a_e + kd_e;
    let (p, p_e) = two_prod(a, t);
    let lo = p_e + a_lo * t;
    let q = ((p + lo) / TAU).round();
    let (qt, qt_e) = two_prod(q, TAU);
    (p - qt) + (lo - qt_e - q * TAU_LO)
}

/// The six sums at mode k by the accurate oracle (`careful`) or plain f64.
fn oracle(t: &[f64], w: &[f64], wy: &[f64], f0: f64, df: f64, k: usize, careful: bool) -> [f64; 6] {
    let mut o = [0.0; 6];
    for j in 0..t.len() {
        let (ph, ph2) = if careful {
            (phase(f0, df, k, t[j]), phase(2.0 * f0, 2.0 * df, k, t[j]))
        } else {
            let a = f0 + k as f64 * df;
            (a * t[j], 2.0 * a * t[j])
        };
        let (s, c) = ph.sin_cos();
        let (s2, c2) = ph2.sin_cos();
        o[0] += w[j] * c;
        o[1] += w[j] * s;
        o[2] += wy[j] * c;
        o[3] += wy[j] * s;
        o[4] += w[j] * c2;
        o[5] += w[j] * s2;
    }
    o
}

/// The floating-mean periodogram (normalised by YY) from the sums, as the
/// standard generalised Lomb-Scargle finish does it.
fn power(s: &[f64; 6], ybar: f64, yy: f64) -> f64 {
    let [c, sn, yc, ys, c2, s2] = *s;
    let cc = 0.5 * (1.0 + c2) - c * c;
    let ss = 0.5 * (1.0 - c2) - sn * sn;
    let cs = 0.5 * s2 - c * sn;
    let yc = yc - ybar * c;
    let ys = ys - ybar * sn;
    let tau = 0.5 * (2.0 * cs).atan2(cc - ss);
    let (st, ct) = tau.sin_cos();
    let ycr = yc * ct + ys * st;
    let ysr = ys * ct - yc * st;
    let ccr = cc * ct * ct + 2.0 * cs * ct * st + ss * st * st;
    let ssr = ss * ct * ct - 2.0 * cs * ct * st + cc * st * st;
    // Degenerate denominators (f = 0 with a floating mean) count as 0, as
    // in the reference.
    let tiny = 1e-12;
    let a = if ccr > tiny { ycr * ycr / ccr } else { 0.0 };
    let b = if ssr > tiny { ysr * ysr / ssr } else { 0.0 };
    (a + b) / yy
}

struct Series {
    t: Vec<f64>,
    w: Vec<f64>,
    wy: Vec<f64>,
    ybar: f64,
    yy: f64,
}

/// nx irregular times over `span` with two gaps, shifted by their mean,
/// random positive weights summing to 1, a sinusoid plus noise.
fn series(nx: usize, span: f64, seed: u64) -> Series {
    let mut r = Rng(seed);
    let mut t: Vec<f64> = (0..nx)
        .map(|_| loop {
            let x = r.next();
            // Gaps: nothing in [0.2, 0.35) or [0.6, 0.62).
            if !(0.2..0.35).contains(&x) && !(0.6..0.62).contains(&x) {
                break x * span;
            }
        })
        .collect();
    t.sort_by(f64::total_cmp);
    let mean = t.iter().sum::<f64>() / nx.max(1) as f64;
    t.iter_mut().for_each(|v| *v -= mean);
    let raw: Vec<f64> = (0..nx).map(|_| 0.5 + r.next()).collect();
    let total: f64 = raw.iter().sum();
    let w: Vec<f64> = raw.iter().map(|v| v / total).collect();
    let f = 2.0 * std::f64::consts::PI * 7.3 / span;
    let y: Vec<f64> = t
        .iter()
        .map(|&x| 3.0 + (f * x).sin() + 0.5 * (r.next() - 0.5))
        .collect();
    let wy: Vec<f64> = w.iter().zip(&y).map(|(a, b)| a * b).collect();
    let ybar: f64 = wy.iter().sum();
    let yy = w
        .iter()
        .zip(&y)
        .map(|(a, b)| a * (b - ybar) * (b - ybar))
        .sum();
    Series { t, w, wy, ybar, yy }
}

struct Errors {
    /// max_k |error| / Σ|c| over the three complex sums.
    sums: f64,
    /// rel L2 of the periodogram over the checked k.
    power: f64,
    /// The same two for plain f64 brute force.
    f64_sums: f64,
    f64_power: f64,
}

fn errors(s: &Series, f0: f64, df: f64, got: &[[f64; 6]], checks: usize, seed: u64) -> Errors {
    let nf = got.len();
    let mut r = Rng(seed);
    let mut ks: Vec<usize> = vec![0, nf - 1, nf / 2];
    while ks.len() < checks.min(nf) + 3 {
        ks.push(((r.next() * nf as f64) as usize).min(nf - 1));
    }
    let norm_w: f64 =
        s.w.iter()
            .map(|v| v.abs())
            .sum::<f64>()
            .max(f64::MIN_POSITIVE);
    let norm_wy: f64 =
        s.wy.iter()
            .map(|v| v.abs())
            .sum::<f64>()
            .max(f64::MIN_POSITIVE);
    let norms = [norm_w, norm_w, norm_wy, norm_wy, norm_w, norm_w];
    let (mut e, mut ef) = (0.0f64, 0.0f64);
    let (mut pe, mut pf, mut pn) = (0.0, 0.0, 0.0);
    for &k in &ks {
        let want = oracle(&s.t, &s.w, &s.wy, f0, df, k, true);
        let plain = oracle(&s.t, &s.w, &s.wy, f0, df, k, false);
        for i in 0..6 {
            e = e.max((got[k][i] - want[i]).abs() / norms[i]);
            ef = ef.max((plain[i] - want[i]).abs() / norms[i]);
        }
        let p = power(&want, s.ybar, s.yy);
        pe += (power(&got[k], s.ybar, s.yy) - p).powi(2);
        pf += (power(&plain, s.ybar, s.yy) - p).powi(2);
        pn += p * p;
    }
    let pn = pn.max(f64::MIN_POSITIVE);
    Errors {
        sums: e,
        power: (pe / pn).sqrt(),
        f64_sums: ef,
        f64_power: (pf / pn).sqrt(),
    }
}

/// Irregular sampling over a span; df a fraction of 2 pi / span (oversampled
/// grid), f0 = 0 or a large offset.
fn case(nx: usize, nf: usize, span: f64, f0_cycles: f64, threads: usize) -> Errors {
    let s = series(nx, span, (nx * 31 + nf) as u64);
    let df = TAU / span / 5.0;
    let f0 = f0_cycles * TAU / span;
    let got = uniform_sums_nufft(&s.t, &s.w, &s.wy, f0, df, nf, threads);
    assert_eq!(got.len(), nf);
    errors(&s, f0, df, &got, 200, nf as u64)
}

#[test]
fn matches_the_oracle_over_sizes_and_spans() {
    // Tolerances: the transform itself is ~1e-14 of Σ|c| (width 14, see
    // accuracy_by_width). On top sits the conditioning of the phase m θ_j in
    // f64: θ_j = df t_j has a relative rounding of ~2 eps, times |m| <= nf/2
    // wraps; that is the same eps |a t| that any f64 evaluation carries (the
    // f64 brute force column shows it). 1e-12 of Σ|c| covers both here with
    // a 10x margin at nf = 2e5 (measured ~1e-13 worst).
    let mut worst = 0.0f64;
    for (nx, nf, span, f0c, threads) in [
        (10, 100, 1.0, 0.0, 1),
        (10, 101, 1e3, 3.3, 2),
        (57, 1000, 1e5, 0.0, 2),
        (300, 4097, 3650.0, 1e4, 1),
        (800, 200_000, 3650.0, 0.0, 2),
        (3000, 100_000, 1e4, 17.5, 2),
        (5000, 30_000, 1e7, 1e6, 2),
        (5000, 150_000, 500.0, 0.0, 1),
    ] {
        let e = case(nx, nf, span, f0c, threads);
        eprintln!(
            "nx {nx:5} nf {nf:6} span {span:8.0e} f0 {f0c:6.0e} cycles: nufft sums {:.1e} power {:.1e}; \
             f64 brute force sums {:.1e} power {:.1e}",
            e.sums, e.power, e.f64_sums, e.f64_power
        );
        assert!(e.sums < 1e-12, "sums error {:e}", e.sums);
        assert!(e.power < 1e-10, "periodogram error {:e}", e.power);
        worst = worst.max(e.sums);
    }
    eprintln!("worst sums error {worst:.1e}");
}

#[test]
fn degenerate_sizes_do_not_panic_and_are_right() {
    // nf = 0: nothing to return.
    assert!(uniform_sums_nufft(&[0.0], &[1.0], &[1.0], 0.0, 1.0, 0, 2).is_empty());
    for threads in [1, 2, 3] {
        for nx in [0, 1, 2, 3] {
            for nf in [1, 2, 3, 5] {
                let s = series(nx, 10.0, 7);
                let (f0, df) = (0.37, 0.41);
                let got = uniform_sums_nufft(&s.t, &s.w, &s.wy, f0, df, nf, threads);
                assert_eq!(got.len(), nf);
                for (k, g) in got.iter().enumerate() {
                    let want = oracle(&s.t, &s.w, &s.wy, f0, df, k, true);
                    for i in 0..6 {
                        assert!(
                            (g[i] - want[i]).abs() < 1e-13,
                            "nx {nx} nf {nf} k {k}: {g:?} vs {want:?}"
                        );
                    }
                }
            }
        }
    }
    // nx = 0 is all zeros (an empty sum), however large nf.
    let got = uniform_sums_nufft(&[], &[], &[], 1.0, 1.0, 1000, 2);
    assert!(got.iter().all(|o| o.iter().all(|&v| v == 0.0)));
}

#[test]
fn the_same_bits_on_any_thread_count() {
    // Sizes on both sides of MAX_SUB (2 and 4 sub-grids), cut into output
    // ranges differently by each count.
    for (nx, nf) in [(700, 20_001), (200, 140_000)] {
        let s = series(nx, 100.0, 3);
        let run = |threads| uniform_sums_nufft(&s.t, &s.w, &s.wy, 2.0, 0.01, nf, threads);
        let one = run(1);
        assert!(one.iter().flatten().all(|v| v.is_finite()));
        for threads in [2, 3, 5] {
            assert!(
                run(threads) == one,
                "nx {nx} nf {nf}: {threads} threads differ"
            );
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]
    /// Fresh random sizes, spans, offsets and thread counts against the
    /// oracle; the bound is the 1e-12 of Σ|c| argued above.
    #[test]
    fn random_inputs_match_the_oracle(
        nx in 1usize..400,
        nf in 1usize..3000,
        span_exp in -1.0f64..6.0,
        f0c in 0.0f64..1e4,
        ofac in 1.0f64..10.0,
        threads in 1usize..4,
        seed in any::<u64>(),
    ) {
        let span = 10f64.powf(span_exp);
        let s = series(nx, span, seed);
        let df = TAU / span / ofac;
        let f0 = f0c * TAU / span;
        let got = uniform_sums_nufft(&s.t, &s.w, &s.wy, f0, df, nf, threads);
        prop_assert_eq!(got.len(), nf);
        let e = errors(&s, f0, df, &got, 40, seed);
        prop_assert!(e.sums < 1e-12, "sums error {:e}", e.sums);
    }
}

/// Error of the transform alone by kernel width, at sigma 2 and 1.25
/// (`cargo test --release nufft -- --ignored --nocapture accuracy_by_width`).
#[test]
#[ignore]
fn accuracy_by_width() {
    let s = series(2000, 3650.0, 11);
    let df = TAU / 3650.0 / 5.0;
    let nf = 50_000;
    for (sigma, widths) in [(2.0, 8..=16), (1.5, 12..=20), (1.25, 14..=24)] {
        for width in widths {
            let mut got = vec![[f64::NAN; 6]; nf];
            uniform_sums_with(&s.t, &s.w, &s.wy, 0.1, df, 2, sigma, width, &mut got);
            let e = errors(&s, 0.1, df, &got, 300, 5);
            eprintln!(
                "sigma {sigma} width {width}: sums {:.1e} power {:.1e}",
                e.sums, e.power
            );
        }
    }
}

fn median_ms(reps: usize, mut f: impl FnMut()) -> f64 {
    let mut times: Vec<f64> = (0..reps)
        .map(|_| {
            let start = std::time::Instant::now();
            f();
            start.elapsed().as_secs_f64() * 1e3
        })
        .collect();
    times.sort_by(f64::total_cmp);
    times[reps / 2]
}

/// Medians of the sums (plan cached, as in a batch or a repeated call) and
/// the first call's cost with the plan built
/// (`cargo test --release --lib nufft_timing -- --ignored --nocapture`).
#[test]
#[ignore]
fn nufft_timing() {
    for (nx, nf) in [
        (800, 200_000),
        (3000, 100_000),
        (150, 10_000),
        (100, 1000),
        (1000, 1000),
        (30_000, 100_000),
    ] {
        let s = series(nx, 3650.0, 1);
        let df = TAU / 3650.0 / 5.0;
        let reps = if nf >= 100_000 { 21 } else { 201 };
        let mut line = format!("nx {nx:6} nf {nf:6}:");
        for (sigma, width) in [(2.0, 16), (2.0, 13), (1.25, 20)] {
            for threads in [1, 2] {
                let cold = {
                    *CACHE.lock().unwrap() = None;
                    let start = std::time::Instant::now();
                    let mut out = vec![[0.0; 6]; nf];
                    uniform_sums_with(&s.t, &s.w, &s.wy, 0.0, df, threads, sigma, width, &mut out);
                    start.elapsed().as_secs_f64() * 1e3
                };
                let ms = median_ms(reps, || {
                    let mut out = vec![[0.0; 6]; nf];
                    uniform_sums_with(&s.t, &s.w, &s.wy, 0.0, df, threads, sigma, width, &mut out);
                    std::hint::black_box(&out);
                });
                let mut out = vec![[0.0; 6]; nf];
                let reused = median_ms(reps, || {
                    uniform_sums_with(&s.t, &s.w, &s.wy, 0.0, df, threads, sigma, width, &mut out);
                    std::hint::black_box(&out);
                });
                line += &format!(
                    " s{sigma}/w{width}/t{threads} {ms:.2} (into {reused:.2}, cold {cold:.1})"
                );
            }
        }
        eprintln!("{line}");
    }
}

#[test]
#[ignore]
fn fft_timing() {
    let mut planner = FftPlanner::<f64>::new();
    // FFT_SIZES=a,b,...: exact sizes instead of the smooth sizes above these.
    let exact: Option<Vec<usize>> = std::env::var("FFT_SIZES")
        .ok()
        .map(|v| v.split(',').map(|x| x.parse().unwrap()).collect());
    let sizes = exact.clone().unwrap_or_else(|| {
        vec![
            25_000, 50_000, 65_536, 100_000, 131_072, 200_000, 262_144, 300_000, 400_000,
        ]
    });
    for n in sizes {
        let n = if exact.is_some() {
            n
        } else {
            smooth_size(n, 2)
        };
        let fft = planner.plan_fft_inverse(n);
        let mut g = vec![Complex64::new(1.0, 0.5); n];
        let mut scratch = vec![Complex64::default(); fft.get_inplace_scratch_len()];
        let ms = median_ms(21, || fft.process_with_scratch(&mut g, &mut scratch));
        let alloc = median_ms(21, || {
            let mut v = vec![Complex64::default(); n];
            v[n / 2] = Complex64::new(1.0, 0.0);
            for i in (0..n).step_by(256) {
                v[i].re += 1.0;
            }
            std::hint::black_box(&v);
        });
        eprintln!("fft {n}: {ms:.3} ms; alloc+touch {alloc:.3} ms");
    }
}

#[test]
fn deconvolution_is_converged() {
    // QUAD_NODES against twice as many at sigma 2: they agree to rounding
    // (measured 2e-14 at the band edge, where phi_hat is 8x under its peak
    // so the weighted sum cancels that much; 96 vs 144 nodes differ as much).
    // At sigma 1.25 the edge value is ~1e5 under the peak and the same
    // cancellation costs ~3e-11 whatever the node count: one reason sigma
    // 1.25 stops near 1e-12 in accuracy_by_width.
    for width in [13, 14, 16] {
        let beta = beta_for(2.0, width);
        let n = 4000;
        let max_m = n / 4;
        let a = phihat_for(width, beta, n, max_m, QUAD_NODES);
        let b = phihat_for(width, beta, n, max_m, 2 * QUAD_NODES);
        let worst = a
            .iter()
            .zip(&b)
            .map(|(x, y)| ((x - y) / y).abs())
            .fold(0.0, f64::max);
        assert!(worst < 1e-13, "width {width}: {worst:e}");
    }
}

/// Many small series (`cargo test --release --lib nufft_batch -- --ignored
/// --nocapture`): one series per thread, each a one-thread call.
#[test]
#[ignore]
fn nufft_batch_timing() {
    let (series_n, nx, nf) = (2000, 150, 10_000);
    let all: Vec<Series> = (0..series_n)
        .map(|i| series(nx, 3650.0, i as u64))
        .collect();
    let df = TAU / 3650.0 / 5.0;
    for threads in [1, 2] {
        let start = std::time::Instant::now();
        // The sums go to a per-chunk buffer (a batch keeps the finished
        // periodograms, not the 48 bytes a frequency of sums).
        let mut peaks = vec![0.0; series_n];
        crate::cpu::parallel::for_each_chunk(threads, &mut peaks, 16, None, |first, piece| {
            let mut out = vec![[0.0; 6]; nf];
            for (i, p) in piece.iter_mut().enumerate() {
                let s = &all[first + i];
                uniform_sums_with(&s.t, &s.w, &s.wy, 0.0, df, 1, SIGMA, WIDTH, &mut out);
                *p = out[nf / 2][2];
            }
        });
        std::hint::black_box(&peaks);
        let per = start.elapsed().as_secs_f64() * 1e3 / series_n as f64;
        eprintln!(
            "batch {series_n} x nx {nx} x nf {nf}, {threads} threads: {per:.3} ms per series"
        );
    }
}

/// Where a call's time goes, on 1 and 2 threads: grid clearing, spreading,
/// the FFTs, and the per-output pass, each alone, and a whole transform
/// (`cargo test --release --lib nufft_phase_timing -- --ignored --nocapture`;
/// NUFFT_SIZES=nx x nf,... to choose).
#[test]
#[ignore]
fn nufft_phase_timing() {
    let sizes = crate::cpu::lombscargle::probe::sizes_from_env("NUFFT_SIZES")
        .unwrap_or_else(|| vec![(150, 10_000), (3000, 100_000), (800, 200_000)]);
    for (nx, nf) in sizes {
        let s = series(nx, 3650.0, 1);
        let df = TAU / 3650.0 / 5.0;
        let reps = if nf >= 100_000 { 21 } else { 101 };
        let plan = plan_for(nf, SIGMA, WIDTH);
        let mut g = [
            vec![Complex64::default(); plan.n],
            vec![Complex64::default(); plan.n],
            vec![Complex64::default(); plan.n],
        ];
        let clear = median_ms(reps, || {
            for x in g.iter_mut() {
                x.fill(Complex64::default());
            }
        });
        let [g1, g2, g3] = &mut g;
        let spread2 = median_ms(reps, || {
            let phase = Phase {
                fc: (0.0, 0.0),
                df,
                harmonic: 1,
                unit: Unit::Angular,
            };
            spread(&s.t, &s.w, &s.wy, phase, &plan, g1, g2)
        });
        let spread1 = median_ms(reps, || {
            let phase = Phase {
                fc: (0.0, 0.0),
                df,
                harmonic: 2,
                unit: Unit::Angular,
            };
            spread(&s.t, &s.w, &[], phase, &plan, g3, &mut [])
        });
        let mut scratch = vec![Complex64::default(); plan.fft.get_inplace_scratch_len()];
        let ffts = median_ms(reps, || {
            for x in g.iter_mut() {
                for sub in x.chunks_mut(plan.n / plan.parts) {
                    plan.fft.process_with_scratch(sub, &mut scratch);
                }
            }
        });
        let tr = Transform::new(&s.t, &s.w, &s.wy, &UniformGrid::new(0.0, df, nf), 1);
        let mut out = vec![[0.0; 6]; nf];
        let pass = median_ms(reps, || tr.sums(0, &mut out));
        drop(tr);
        let mut whole = |threads| {
            median_ms(reps, || {
                let tr = Transform::new(&s.t, &s.w, &s.wy, &UniformGrid::new(0.0, df, nf), threads);
                crate::cpu::parallel::for_each_chunk(threads, &mut out, 4096, None, |f, p| {
                    tr.sums(f, p)
                });
            })
        };
        eprintln!(
            "nx {nx} nf {nf} (n {} = {} x {}): clear 3 grids {clear:.3} ms, spread w+wy {spread2:.3}, \
             spread 2θ {spread1:.3}, FFTs {ffts:.3}, per-output pass {pass:.3}; whole: 1 thread {:.3}, 2 threads {:.3}",
            plan.n,
            plan.parts,
            plan.n / plan.parts,
            whole(1),
            whole(2)
        );
    }
}

/// A first call's extra cost: building the plan (FFT plan, deconvolution,
/// twiddles) and the grids' first touch
/// (`cargo test --release --lib nufft_cold_timing -- --ignored --nocapture`).
#[test]
#[ignore]
fn nufft_cold_timing() {
    for nf in [10_000, 100_000, 200_000] {
        *CACHE.lock().unwrap() = None;
        let start = std::time::Instant::now();
        let plan = plan_for(nf, SIGMA, WIDTH);
        let planned = start.elapsed().as_secs_f64() * 1e3;
        let start = std::time::Instant::now();
        let mut g = [plan.take_grid(), plan.take_grid(), plan.take_grid()];
        let mut touched = 0.0;
        for grid in g.iter_mut() {
            plan.zeroed(grid);
            touched += grid[grid.len() / 2].re;
        }
        let grids = start.elapsed().as_secs_f64() * 1e3;
        let s = series(800, 3650.0, 1);
        let start = std::time::Instant::now();
        let _ = uniform_sums_nufft(&s.t, &s.w, &s.wy, 0.0, 1e-3, nf, 2);
        let first = start.elapsed().as_secs_f64() * 1e3;
        let start = std::time::Instant::now();
        let _ = uniform_sums_nufft(&s.t, &s.w, &s.wy, 0.0, 1e-3, nf, 2);
        let second = start.elapsed().as_secs_f64() * 1e3;
        eprintln!(
            "nf {nf}: plan {planned:.2} ms, 3 fresh grids {grids:.2} ms {touched}; \
             first call with that plan {first:.2} ms, second {second:.2} ms"
        );
    }
}
