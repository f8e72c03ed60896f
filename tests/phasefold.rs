//! PDM and conditional entropy: the CPU backend against the reference (each
//! statistic by its definition in plain f64: bin means and squared
//! residuals for PDM, `p ln(p_phase / p)` per cell for CE), and the GPU
//! against the CPU bit for bit (both bin every sample alike and add in the
//! same order). Without a GPU the GPU tests print SKIPPED; with
//! KERNPACK_REQUIRE_GPU=1 they fail.
//!
//! Tolerances against the reference, absolute (theta is in [0, 1], H in
//! [0, ln mag_bins]): f64 inputs 1e-10. The backend's theta is `(total -
//! between) / total`, the reference's the within-bin sum over the total;
//! both are sums of <= 80 terms, off by ~N eps of the total, 1e-14. CE's
//! counts are exact integers in both; the backend adds `k ln k` of counts
//! (each ~1e2), the reference `p ln(p_phase / p)`: ~1e-14 apart. f32
//! inputs: the reference runs on the inputs as f32 rounds them, and the
//! statistic is rounded once to f32 at the end: 1e-6.
mod common;

use common::{gpu_or_skip, proptest_cases, Rng};
use kernpack::api::phasefold::{
    CeOptions, FoldBatch, FoldFreqs, FoldSeries, PdmOptions, Statistic, UniformGrid,
};
use kernpack::reference::phasefold as reference;
use kernpack::{Backend, Error, Float, Kernpack};
use proptest::prelude::*;

/// A random light curve with a periodic signal (sinusoid or box), noise,
/// optional uncertainties, the frequencies to fold at and a statistic.
#[derive(Debug, Clone)]
struct Case {
    t: Vec<f64>,
    y: Vec<f64>,
    dy: Option<Vec<f64>>,
    freqs: Vec<f64>,
    statistic: Statistic,
}

fn case(seed: u64, max_n: usize) -> Case {
    let mut rng = Rng(seed);
    let n = 1 + (rng.next() * max_n as f64) as usize;
    let baseline = rng.range(1.0, 300.0);
    let t0 = rng.range(-100.0, 2000.0);
    let t: Vec<f64> = (0..n).map(|_| t0 + rng.range(0.0, baseline)).collect();
    let period = rng.range(0.1, 10.0);
    let (amp, noise, level) = (
        rng.range(0.0, 2.0),
        rng.range(0.0, 1.0),
        rng.range(-5.0, 5.0),
    );
    let boxy = rng.next() < 0.5;
    // Now and then a constant series (no spread: NaN everywhere).
    let constant = rng.next() < 0.05;
    let y: Vec<f64> = t
        .iter()
        .map(|&ti| {
            if constant {
                return level;
            }
            let phase = ((ti - t0) / period).rem_euclid(1.0);
            let signal = if boxy {
                if phase < 0.2 {
                    -amp
                } else {
                    0.0
                }
            } else {
                amp * (std::f64::consts::TAU * phase).sin()
            };
            level + signal + noise * rng.range(-1.0, 1.0)
        })
        .collect();
    let dy = (rng.next() < 0.5).then(|| (0..n).map(|_| rng.range(0.05, 0.5)).collect());
    let nf = 1 + (rng.next() * 30.0) as usize;
    let mut freqs: Vec<f64> = (0..nf).map(|_| rng.range(0.0, 5.0)).collect();
    if rng.next() < 0.2 {
        freqs[0] = 0.0;
    }
    let statistic = if rng.next() < 0.5 {
        Statistic::Pdm(PdmOptions {
            bins: 2 + (rng.next() * 40.0) as usize,
        })
    } else {
        let phase_bins = 1 + (rng.next() * 20.0) as usize;
        let mag_bins = 1 + (rng.next() * 10.0) as usize;
        Statistic::ConditionalEntropy(CeOptions {
            phase_bins,
            mag_bins,
            phase_overlap: (rng.next() * phase_bins as f64) as usize,
            mag_overlap: (rng.next() * mag_bins as f64) as usize,
        })
    };
    Case {
        t,
        y,
        dy,
        freqs,
        statistic,
    }
}

fn cast<T: Float>(v: &[f64]) -> Vec<T> {
    v.iter().map(|&x| T::from_f64(x)).collect()
}

fn run<T: Float>(kp: &Kernpack, c: &Case) -> kernpack::Result<Vec<T>> {
    let (t, y, f) = (cast::<T>(&c.t), cast::<T>(&c.y), cast::<T>(&c.freqs));
    let dy = c.dy.as_deref().map(cast::<T>);
    let s = FoldSeries {
        t: &t,
        y: &y,
        dy: dy.as_deref(),
    };
    match c.statistic {
        Statistic::Pdm(o) => kp.pdm(&s, &f, &o),
        Statistic::ConditionalEntropy(o) => kp.conditional_entropy(&s, &f, &o),
    }
}

/// The reference on the inputs as `T` holds them.
fn reference_of<T: Float>(c: &Case) -> Vec<f64> {
    let r = |v: &[f64]| -> Vec<f64> { cast::<T>(v).iter().map(|x| x.to_f64()).collect() };
    let (t, y, f) = (r(&c.t), r(&c.y), r(&c.freqs));
    let dy = c.dy.as_deref().map(r);
    match c.statistic {
        Statistic::Pdm(o) => reference::pdm(&t, &y, dy.as_deref(), &f, &o),
        Statistic::ConditionalEntropy(o) => reference::conditional_entropy(&t, &y, &f, &o),
    }
}

fn assert_close<T: Float>(got: &[T], want: &[f64], tol: f64, c: &Case) {
    assert_eq!(got.len(), want.len());
    for (k, (g, w)) in got.iter().zip(want).enumerate() {
        let g = g.to_f64();
        let ok = (g.is_nan() && w.is_nan()) || (g - w).abs() <= tol;
        assert!(ok, "frequency {k} ({}): {g} vs {w}, case {c:?}", c.freqs[k]);
    }
}

fn cpu() -> Kernpack {
    Kernpack::new(Backend::Cpu).unwrap()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(proptest_cases(400)))]

    #[test]
    fn cpu_matches_the_reference(seed in any::<u64>()) {
        let c = case(seed, 80);
        assert_close(&run::<f64>(&cpu(), &c).unwrap(), &reference_of::<f64>(&c), 1e-10, &c);
    }

    #[test]
    fn cpu_f32_matches_the_reference(seed in any::<u64>()) {
        let c = case(seed, 80);
        assert_close(&run::<f32>(&cpu(), &c).unwrap(), &reference_of::<f32>(&c), 1e-6, &c);
    }
}

/// The planted period gives the lowest statistic on a grid around it (the
/// grid stops short of the half and double frequencies, where a fold also
/// lines the signal up).
#[test]
fn finds_a_planted_period() {
    let mut rng = Rng(0x9d3);
    for trial in 0..6 {
        let period = rng.range(0.3, 3.0);
        let t: Vec<f64> = (0..300).map(|_| rng.range(0.0, 200.0)).collect();
        let y: Vec<f64> = t
            .iter()
            .map(|&ti| (std::f64::consts::TAU * ti / period).sin() + 0.3 * rng.range(-1.0, 1.0))
            .collect();
        let grid = UniformGrid::spanning(0.7 / period, 1.5 / period, 4000);
        let s = FoldSeries {
            t: &t,
            y: &y,
            dy: None,
        };
        let kp = cpu();
        for values in [
            kp.pdm_uniform(&s, &grid, &PdmOptions::default()).unwrap(),
            kp.conditional_entropy_uniform(&s, &grid, &CeOptions::default())
                .unwrap(),
        ] {
            let best = (0..grid.nf)
                .min_by(|&a, &b| values[a].total_cmp(&values[b]))
                .unwrap();
            let found = grid.frequency(best);
            assert!(
                (found * period - 1.0).abs() < 2e-3,
                "trial {trial}: period {period}, found {}",
                1.0 / found
            );
        }
    }
}

/// A uniform grid gives what the same frequencies as an array give, and a
/// batch gives each series' own call.
#[test]
fn grids_and_batches_are_their_parts() {
    let kp = cpu();
    let cases: Vec<Case> = (0..12).map(|s| case(0xb00 + s, 60)).collect();
    let grid = UniformGrid::new(0.01, 0.0173, 97);
    let freqs = grid.frequencies();
    for statistic in [
        Statistic::Pdm(PdmOptions { bins: 7 }),
        Statistic::ConditionalEntropy(CeOptions {
            phase_overlap: 1,
            mag_overlap: 2,
            ..CeOptions::default()
        }),
    ] {
        let (mut t, mut y, mut dy, mut offsets) = (vec![], vec![], vec![], vec![0]);
        let mut each = Vec::new();
        for c in &cases {
            let c = Case {
                freqs: freqs.clone(),
                statistic,
                dy: Some(c.dy.clone().unwrap_or_else(|| vec![0.2; c.t.len()])),
                ..c.clone()
            };
            t.extend(&c.t);
            y.extend(&c.y);
            dy.extend(c.dy.as_ref().unwrap());
            offsets.push(t.len());
            each.push(run::<f64>(&kp, &c).unwrap());
        }
        let batch = FoldBatch {
            t: &t,
            y: &y,
            dy: Some(&dy),
            offsets: &offsets,
        };
        let by_grid = kp
            .phase_fold_batch(&batch, &FoldFreqs::Uniform(grid), &statistic)
            .unwrap();
        let by_array = kp
            .phase_fold_batch(&batch, &FoldFreqs::Array(&freqs), &statistic)
            .unwrap();
        let bits =
            |r: &[Vec<f64>]| -> Vec<u64> { r.iter().flatten().map(|v| v.to_bits()).collect() };
        assert_eq!(bits(&by_grid), bits(&each));
        assert_eq!(bits(&by_array), bits(&each));
    }
}

fn invalid<R: std::fmt::Debug>(r: kernpack::Result<R>, needle: &str) {
    match r {
        Err(Error::InvalidInput(msg)) => assert!(msg.contains(needle), "{msg:?} lacks {needle:?}"),
        other => panic!("expected an invalid-input error containing {needle:?}, got {other:?}"),
    }
}

#[test]
fn bad_input_is_a_clear_error() {
    let kp = cpu();
    let (t, y) = ([0.0, 1.0, 2.0], [1.0, 2.0, 3.0]);
    let s = FoldSeries {
        t: &t,
        y: &y,
        dy: None,
    };
    let pdm = PdmOptions::default();
    let ce = CeOptions::default();
    invalid(
        kp.pdm(&s, &[0.5], &PdmOptions { bins: 1 }),
        "bins = 1 is out of range",
    );
    invalid(kp.pdm(&s, &[], &pdm), "no frequencies");
    invalid(kp.pdm(&s, &[-0.5], &pdm), "frequency[0] = -0.5 is negative");
    invalid(kp.pdm(&s, &[f64::NAN], &pdm), "frequency");
    let bad = CeOptions {
        mag_overlap: 5,
        ..ce
    };
    invalid(kp.conditional_entropy(&s, &[0.5], &bad), "mag_overlap = 5");
    let huge = CeOptions {
        phase_bins: 1000,
        mag_bins: 1000,
        ..ce
    };
    invalid(
        kp.conditional_entropy(&s, &[0.5], &huge),
        "exceeds 65536 cells",
    );
    let empty = FoldSeries::<f64> {
        t: &[],
        y: &[],
        dy: None,
    };
    invalid(kp.pdm(&empty, &[0.5], &pdm), "t is empty");
    let nan = [1.0, f64::NAN, 3.0];
    let s_nan = FoldSeries {
        t: &t,
        y: &nan,
        dy: None,
    };
    invalid(kp.conditional_entropy(&s_nan, &[0.5], &ce), "y");
    let dy0 = [0.1, 0.0, 0.1];
    let s_dy = FoldSeries {
        t: &t,
        y: &y,
        dy: Some(&dy0),
    };
    invalid(kp.pdm(&s_dy, &[0.5], &pdm), "dy[1] = 0 is not positive");
    let tiny = [1e-200, 1.0, 1.0];
    let s_tiny = FoldSeries {
        t: &t,
        y: &y,
        dy: Some(&tiny),
    };
    invalid(kp.pdm(&s_tiny, &[0.5], &pdm), "range of f64");
    let batch = FoldBatch {
        t: &t,
        y: &y,
        dy: Some(&dy0),
        offsets: &[0, 2, 3],
    };
    invalid(
        kp.pdm_batch(&batch, &FoldFreqs::Array(&[0.5]), &pdm),
        "series 0: dy[1] = 0",
    );
    let batch = FoldBatch {
        t: &t,
        y: &y,
        dy: None,
        offsets: &[0, 2, 5],
    };
    invalid(
        kp.pdm_batch(&batch, &FoldFreqs::Array(&[0.5]), &pdm),
        "offsets",
    );
}

/// Random cases, each statistic, f32 and f64, single series and batches:
/// the GPU's values are the CPU backend's bits. Also accumulators too large
/// for shared memory (PDM with 4096 bins, CE with 256 x 256 cells), which
/// the kernel keeps in global scratch.
#[test]
fn gpu_equals_cpu() {
    let Some(_gpu) = gpu_or_skip("gpu_equals_cpu") else {
        return;
    };
    let gpu = Kernpack::with_gpu(0).unwrap();
    let cpu = cpu();
    let bits = |v: &[f64]| -> Vec<u64> { v.iter().map(|x| x.to_bits()).collect() };
    for seed in 0..400 {
        let c = case(0x5eed_0000 + seed, 300);
        assert_eq!(
            bits(&run::<f64>(&gpu, &c).unwrap()),
            bits(&run::<f64>(&cpu, &c).unwrap()),
            "seed {seed}"
        );
        let as64 = |v: Vec<f32>| v.iter().map(|x| x.to_f64()).collect::<Vec<f64>>();
        assert_eq!(
            bits(&as64(run::<f32>(&gpu, &c).unwrap())),
            bits(&as64(run::<f32>(&cpu, &c).unwrap())),
            "seed {seed} f32"
        );
    }
    for statistic in [
        Statistic::Pdm(PdmOptions { bins: 4096 }),
        Statistic::ConditionalEntropy(CeOptions {
            phase_bins: 256,
            mag_bins: 256,
            phase_overlap: 3,
            mag_overlap: 2,
        }),
        Statistic::Pdm(PdmOptions { bins: 10 }),
        Statistic::ConditionalEntropy(CeOptions::default()),
    ] {
        let cases: Vec<Case> = (0..300).map(|s| case(0xba7c + s, 400)).collect();
        let (mut t, mut y, mut offsets) = (vec![], vec![], vec![0]);
        for c in &cases {
            t.extend(&c.t);
            y.extend(&c.y);
            offsets.push(t.len());
        }
        let batch = FoldBatch {
            t: &t,
            y: &y,
            dy: None,
            offsets: &offsets,
        };
        let grid = FoldFreqs::Uniform(UniformGrid::new(0.02, 0.0071, 333));
        let flat = |r: Vec<Vec<f64>>| -> Vec<u64> { r.iter().flat_map(|v| bits(v)).collect() };
        assert_eq!(
            flat(gpu.phase_fold_batch(&batch, &grid, &statistic).unwrap()),
            flat(cpu.phase_fold_batch(&batch, &grid, &statistic).unwrap()),
            "{statistic:?}"
        );
    }
}

/// A ragged batch of random cases (the first case's statistic, its
/// frequencies), as `T`.
struct CaseBatch<T> {
    t: Vec<T>,
    y: Vec<T>,
    dy: Vec<T>,
    offsets: Vec<usize>,
}

fn case_batch<T: Float>(cases: &[Case]) -> CaseBatch<T> {
    let series = cases.iter().map(|c| (&c.t[..], &c.y[..], c.dy.as_deref()));
    let (t, y, dy, offsets) = common::concat_series(series);
    CaseBatch { t, y, dy, offsets }
}

impl<T: Float> CaseBatch<T> {
    fn batch(&self) -> FoldBatch<'_, T> {
        FoldBatch {
            t: &self.t,
            y: &self.y,
            dy: Some(&self.dy),
            offsets: &self.offsets,
        }
    }
}

/// Each series' best peaks are the reference's peaks of the values the
/// batch call gives (indices and value bits), for random k and separations.
fn check_peaks<T: Float>(kp: &Kernpack, seed: u64) {
    use kernpack::api::phasefold::PeakOptions;
    use kernpack::reference::peaks::best_peaks;
    let mut rng = Rng(seed);
    let cases: Vec<Case> = (0..12).map(|s| case(seed ^ (s << 32), 120)).collect();
    let b = case_batch::<T>(&cases);
    let nf = 1 + (rng.next() * 400.0) as usize;
    let grid = UniformGrid::new(rng.range(0.0, 0.5), rng.range(1e-3, 0.02), nf);
    let freqs = FoldFreqs::Uniform(grid);
    let statistic = cases[0].statistic;
    let peaks = PeakOptions {
        k: 1 + (rng.next() * 8.0) as usize,
        separation: if rng.next() < 0.3 {
            0.0
        } else {
            rng.range(0.0, 0.1)
        },
    };
    let values = kp.phase_fold_batch(&b.batch(), &freqs, &statistic).unwrap();
    let got = kp
        .phase_fold_batch_peaks(&b.batch(), &freqs, &statistic, &peaks)
        .unwrap();
    let axis: Vec<f64> = (0..nf).map(|k| freqs.at(k)).collect();
    assert_eq!(got.len(), cases.len());
    for (s, row) in values.iter().enumerate() {
        let row: Vec<f64> = row.iter().map(|v| v.to_f64()).collect();
        let want = best_peaks(&row, &axis, &peaks, statistic.better());
        assert_eq!(
            got[s], want,
            "seed {seed}, series {s}, {peaks:?} {statistic:?}"
        );
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(proptest_cases(60)))]

    #[test]
    fn cpu_peaks_are_the_reference_peaks_of_the_values(seed in any::<u64>()) {
        check_peaks::<f64>(&cpu(), seed);
        check_peaks::<f32>(&cpu(), seed);
    }
}

#[test]
fn bad_peak_options_are_clear_errors() {
    use kernpack::api::phasefold::{PeakOptions, MAX_PEAKS};
    let c = case(7, 50);
    let b = case_batch::<f64>(std::slice::from_ref(&c));
    let freqs = FoldFreqs::Array(&c.freqs);
    for (k, separation, needle) in [
        (0, 0.0, "k = 0"),
        (MAX_PEAKS + 1, 0.0, "out of range"),
        (3, -1.0, "separation"),
        (3, f64::INFINITY, "separation"),
    ] {
        let peaks = PeakOptions { k, separation };
        invalid(
            cpu().phase_fold_batch_peaks(&b.batch(), &freqs, &c.statistic, &peaks),
            needle,
        );
    }
}

/// The GPU's peaks (each chunk's values reduced on the device) equal the
/// CPU backend's: random batches, both statistics, f32 and f64; constant
/// series (no peak at all) included.
#[test]
fn gpu_peaks_equal_cpu() {
    let Some(_gpu) = gpu_or_skip("gpu_peaks_equal_cpu") else {
        return;
    };
    let gpu = Kernpack::with_gpu(0).unwrap();
    for seed in 0..150 {
        check_peaks::<f64>(&gpu, 0x9ea0_0000 + seed);
        check_peaks::<f32>(&gpu, 0x9ea0_0000 + seed);
    }
    // Many frequencies, many peaks: several rounds past one block's slice.
    use kernpack::api::phasefold::PeakOptions;
    let cases: Vec<Case> = (0..40).map(|s| case(0x51de + s, 300)).collect();
    let b = case_batch::<f32>(&cases);
    let freqs = FoldFreqs::Uniform(UniformGrid::new(0.01, 0.0003, 30_000));
    let peaks = PeakOptions {
        k: 64,
        separation: 0.002,
    };
    for statistic in [
        Statistic::Pdm(PdmOptions::default()),
        Statistic::ConditionalEntropy(CeOptions::default()),
    ] {
        let want = cpu().phase_fold_batch_peaks(&b.batch(), &freqs, &statistic, &peaks);
        let got = gpu.phase_fold_batch_peaks(&b.batch(), &freqs, &statistic, &peaks);
        assert_eq!(got.unwrap(), want.unwrap(), "{statistic:?}");
    }
}

/// Large batches are prepared on several threads; the error still names the
/// first bad series, whichever thread met it.
#[test]
fn the_first_bad_series_of_a_large_batch_is_named() {
    let (nseries, n) = (300, 1000);
    let t: Vec<f64> = (0..nseries * n).map(|i| (i % n) as f64 * 0.37).collect();
    let mut y: Vec<f64> = (0..nseries * n).map(|i| (i as f64 * 0.1).sin()).collect();
    let offsets: Vec<usize> = (0..=nseries).map(|s| s * n).collect();
    for bad in [250, 100, 180] {
        y[bad * n + 7] = f64::NAN;
    }
    let batch = FoldBatch {
        t: &t,
        y: &y,
        dy: None,
        offsets: &offsets,
    };
    let freqs = FoldFreqs::Uniform(UniformGrid::new(0.1, 0.01, 10));
    for statistic in [
        Statistic::Pdm(PdmOptions::default()),
        Statistic::ConditionalEntropy(CeOptions::default()),
    ] {
        invalid(
            cpu().phase_fold_batch(&batch, &freqs, &statistic),
            "series 100:",
        );
    }
}
