//! The NUFFT sums against the direct ones: the same periodograms within the
//! NUFFT's error, over random series, grids, harmonics and options.
use super::*;
use crate::params::lombscargle_chi2::Chi2Normalization;
use crate::reference::lombscargle_chi2::lombscargle_chi2 as reference;
use crate::test_rng::Rng;

struct Case {
    t: Vec<f64>,
    y: Vec<f64>,
    dy: Option<Vec<f64>>,
    prep: Chi2Prepared,
    f0: f64,
    df: f64,
    nf: usize,
    opts: Chi2Options,
}

/// A random irregular series (a few harmonics of a random period, noise,
/// errors from 0.1 to 1) with its time origin anywhere up to a Julian date,
/// and a grid of 1 to 10 points per peak width from 0, near 0 or anywhere.
fn case(rng: &mut Rng, nx: usize, nf: usize, nterms: usize) -> Case {
    let span = rng.range(1.0, 3000.0);
    let origin = [0.0, rng.range(-1e3, 1e3), 2.46e6][rng.below(3) as usize];
    let mut t: Vec<f64> = (0..nx).map(|_| origin + rng.range(0.0, span)).collect();
    t.sort_by(f64::total_cmp);
    let period = rng.range(0.05, span / 2.0);
    let y: Vec<f64> = t
        .iter()
        .map(|t| {
            let phase = std::f64::consts::TAU * t / period;
            phase.sin() + 0.4 * (2.0 * phase).cos() + rng.range(-0.5, 0.5)
        })
        .collect();
    let dy: Vec<f64> = (0..nx).map(|_| rng.range(0.1, 1.0)).collect();
    let opts = Chi2Options {
        nterms,
        fit_mean: rng.below(4) != 0,
        center_data: rng.below(4) != 0,
        normalization: Chi2Normalization::Standard,
    };
    let dy = (rng.below(2) == 0).then_some(dy);
    let prep = Chi2Prepared::of(&y, dy.as_deref(), &opts);
    let df = 1.0 / (span * rng.range(1.0, 10.0));
    let f0 = [0.0, df * rng.range(0.0, 3.0), rng.range(0.0, 20.0)][rng.below(3) as usize];
    Case {
        t,
        y,
        dy,
        prep,
        f0,
        df,
        nf,
        opts,
    }
}

impl Case {
    fn measured(&self) -> (Vec<f64>, Option<Vec<f64>>) {
        (self.y.clone(), self.dy.clone())
    }
}

fn run(c: &Case, method: Method, threads: usize) -> Vec<f64> {
    let (f0, df) = (c.f0, c.df);
    lombscargle_chi2_by(
        method,
        threads,
        None,
        &c.t,
        &c.prep,
        c.nf,
        |k| f0 + k as f64 * df,
        Some(df),
        &c.opts,
    )
}

/// The NUFFT's power against the least-squares reference (and the direct
/// sums' for comparison) at 24 random frequencies of each case, all with at
/// least one cycle over the span: the standard power (in [0, 1]) within
/// 1e-9. The NUFFT's sums are off by ~1e-14 (of Σ w = 1); the solve
/// amplifies that by the normal matrix's condition number, which stays under
/// ~1e4 there with 4 or more samples per unknown (as in the backend's tests
/// against the reference). Below one cycle the harmonics' columns are
/// nearly dependent and no method's power means much (the direct sums gave
/// standard powers of 2.9 at a tenth of a cycle with 8 harmonics): there
/// only finiteness is checked.
#[test]
fn nufft_matches_the_reference() {
    let mut rng = Rng(0x5eed_c412);
    let (mut worst, mut worst_direct) = ((0.0f64, String::new()), 0.0f64);
    for i in 0..200 {
        let nterms = 1 + rng.below(8) as usize;
        let nx = 4 * (2 * nterms + 1) + rng.below(400) as usize;
        let nf = 64 + rng.below(3000) as usize;
        let c = case(&mut rng, nx, nf, nterms);
        let direct = run(&c, Method::Direct, 2);
        let nufft = run(&c, Method::Nufft, 2);
        assert!(nufft.iter().all(|p| p.is_finite()), "case {i}");
        let span = c.t[nx - 1] - c.t[0];
        let first = ((1.0 / span - c.f0) / c.df).ceil().max(0.0) as usize;
        if first >= nf {
            continue;
        }
        let ks: Vec<usize> = (0..24)
            .map(|_| first + rng.below((nf - first) as u64) as usize)
            .collect();
        let freqs: Vec<f64> = ks.iter().map(|&k| c.f0 + k as f64 * c.df).collect();
        // The reference on times from the first one (exact differences): the
        // power does not depend on the origin, and the reference's phases
        // 2 pi k f t lose eps |k f t| each, 4e-8 of power at a Julian date.
        let (y, dy) = c.measured();
        let t: Vec<f64> = c.t.iter().map(|t| t - c.t[0]).collect();
        let want = reference::<f64>(&t, &y, dy.as_deref(), &freqs, &c.opts);
        for (&k, want) in ks.iter().zip(&want) {
            let err = (nufft[k] - want).abs();
            worst_direct = worst_direct.max((direct[k] - want).abs());
            if err > worst.0 {
                worst = (
                    err,
                    format!(
                        "case {i}: nx {nx} nterms {nterms} f {} t0 {}",
                        freqs[0], c.t[0]
                    ),
                );
            }
        }
    }
    println!(
        "worst {:.3e} ({}); direct sums' worst {worst_direct:.3e}",
        worst.0, worst.1
    );
    assert!(worst.0 < 1e-9, "worst {:.3e}: {}", worst.0, worst.1);
}

#[test]
fn nufft_bits_do_not_depend_on_threads() {
    let mut rng = Rng(7);
    for nterms in [1, 3, 8] {
        let c = case(&mut rng, 300, 40_000, nterms);
        let one = run(&c, Method::Nufft, 1);
        for threads in [2, 3, 8] {
            assert_eq!(
                one,
                run(&c, Method::Nufft, threads),
                "nterms {nterms} threads {threads}"
            );
        }
    }
}

/// Prints both methods' times on one thread and the model's choice:
/// `cargo test --release --lib chi2_method_costs -- --ignored --nocapture`.
#[test]
#[ignore = "timing probe"]
fn chi2_method_costs() {
    let mut rng = Rng(3);
    let time = |f: &mut dyn FnMut()| {
        f();
        let mut times: Vec<f64> = (0..3)
            .map(|_| {
                let start = std::time::Instant::now();
                f();
                start.elapsed().as_secs_f64()
            })
            .collect();
        times.sort_by(f64::total_cmp);
        times[1] * 1e3
    };
    for nterms in [1, 2, 4, 8] {
        for nx in [16, 64, 300, 3000] {
            for nf in [100, 1000, 10_000, 100_000] {
                if nx * nf > 3000 * 10_000 {
                    continue;
                }
                let c = case(&mut rng, nx, nf, nterms);
                let d = time(&mut || drop(run(&c, Method::Direct, 1)));
                let n = time(&mut || drop(run(&c, Method::Nufft, 1)));
                println!(
                    "K {nterms} nx {nx:5} nf {nf:6}: direct {d:9.3} ms nufft {n:8.3} ms -> {:?}",
                    choose_method(nx, nf, nterms)
                );
            }
        }
    }
}
