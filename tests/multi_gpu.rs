//! Several GPUs in one call, and batches in chunks under a memory limit
//! (`kernpack::MultiGpu`): every result must be bitwise equal to the one-GPU
//! call on the whole batch.
//!
//! Gating: without a GPU every test prints SKIPPED (a failure with
//! KERNPACK_REQUIRE_GPU=1). The `two_gpus_*` tests need two GPUs; with one
//! they print SKIPPED, unless KERNPACK_REQUIRE_GPUS=2 (or more) is set, which
//! makes fewer GPUs a failure.
//!
//! `bench_multi_gpu_batch` (ignored) prints light curves per second on one
//! GPU against all of them: `cargo test --release --test multi_gpu --
//! --ignored --nocapture bench_multi_gpu_batch` (sizes in KERNPACK_BENCH_SERIES,
//! default "100000,1000000").
mod common;

use std::f64::consts::TAU;
use std::sync::Arc;
use std::time::Instant;

use common::{gpu_or_skip, ragged, Ragged, Rng};
use cudarc::driver::DevicePtr;
use kernpack::api::exec::Operation;
use kernpack::api::lombscargle::batch::{Batch, BatchDeviceBuffers, BatchGrid, LombScargleBatch};
use kernpack::api::lombscargle::peaks::PeakBuffers;
use kernpack::api::lombscargle::UniformGrid;
use kernpack::api::lorenz::{EnsembleRun, MemberParams};
use kernpack::api::lorenz63::{Lorenz63AdaptiveRun, Lorenz63Run};
use kernpack::api::multi::GpuProfile;
use kernpack::api::reduce_batched::NormalizeBatched;
use kernpack::{
    AdaptiveControl, AdaptiveStatus, Error, Float, Gpu, Kernpack, LombScargleBatchOnDevice,
    LombScargleOptions, LombScarglePeaksOnDevice, Lorenz05Model, Lorenz05Params,
    Lorenz63AdaptiveEnsemble, Lorenz63AdaptiveParams, Lorenz63Params, Lorenz96Params, MultiGpu,
    MultiGpuOptions, Normalize, PerMember, Periodogram,
};

// ---- gating ----

/// KERNPACK_REQUIRE_GPUS as a count (0 when unset).
fn required_gpus() -> usize {
    std::env::var("KERNPACK_REQUIRE_GPUS")
        .ok()
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or(0)
}

/// A handle over every GPU when there are at least `want`, else None with a
/// printed reason; a failure when KERNPACK_REQUIRE_GPUS asks for `want` or
/// more, or (no GPU at all) when KERNPACK_REQUIRE_GPU=1.
fn gpus_or_skip(test: &str, want: usize) -> Option<MultiGpu> {
    let count = Gpu::device_count();
    if count < want && required_gpus() >= want {
        panic!(
            "{test}: KERNPACK_REQUIRE_GPUS={} but {count} GPU(s) present",
            required_gpus()
        );
    }
    gpu_or_skip(test)?;
    if count < want {
        println!(
            "SKIPPED {test}: {count} GPU(s) present, {want} needed \
             (KERNPACK_REQUIRE_GPUS={want} makes this a failure)"
        );
        return None;
    }
    Some(MultiGpu::all().expect("every GPU loads"))
}

// ---- data ----

/// Bits of every value, to compare results exactly (NaN included).
fn bits<T: Float>(v: &[T]) -> Vec<u64> {
    v.iter().map(|x| x.to_f64().to_bits()).collect()
}

/// Bits of every periodogram, with a marker between series.
fn pbits<T: Float>(ps: &[Periodogram<T>]) -> Vec<u64> {
    let mut out = Vec::new();
    for p in ps {
        match p {
            Periodogram::Real(v) => out.extend(bits(v)),
            Periodogram::Complex(v) => {
                for c in v {
                    out.push(c.re.to_f64().to_bits());
                    out.push(c.im.to_f64().to_bits());
                }
            }
        }
        out.push(u64::MAX); // series boundary
    }
    out
}

fn assert_same_bits(got: &[u64], want: &[u64], what: &str) {
    assert_eq!(got.len(), want.len(), "{what}: lengths differ");
    if let Some(i) = got.iter().zip(want).position(|(a, b)| a != b) {
        panic!(
            "{what}: value {i} differs: {} vs {} (one GPU)",
            f64::from_bits(got[i]),
            f64::from_bits(want[i])
        );
    }
}

fn cast<T: Float>(v: &[f64]) -> Vec<T> {
    v.iter().map(|&x| T::from_f64(x)).collect()
}

const MODES: [(Normalize, bool, bool); 3] = [
    (Normalize::Power, false, false),
    (Normalize::Normalize, true, false),
    (Normalize::Amplitude, true, true),
];

/// Every combination of weights, grids and options on `multi` against the
/// one-GPU `Gpu::lombscargle_batch` of GPU `reference`; returns the profiles
/// of the last call.
fn check_lombscargle<T: Float>(
    multi: &MultiGpu,
    reference: &Arc<Gpu>,
    d: &Ragged,
    nf: usize,
    what: &str,
) -> Vec<GpuProfile> {
    let (t, y, w) = (cast::<T>(&d.t), cast::<T>(&d.y), cast::<T>(&d.w));
    let mut profiles = Vec::new();
    for (k, (normalize, floating_mean, weighted)) in MODES.into_iter().enumerate() {
        let batch = Batch {
            t: &t,
            y: &y,
            weights: weighted.then_some(w.as_slice()),
            offsets: &d.offsets,
        };
        let per_series = BatchGrid::PerSeries {
            f0: &d.f0,
            df: &d.df,
            nf,
        };
        let shared = BatchGrid::Shared(UniformGrid::new(0.05, 0.013, nf));
        let grids = if k % 2 == 0 { per_series } else { shared };
        let opts = LombScargleOptions {
            normalize,
            floating_mean,
            precenter: k == 1,
        };
        let want = in_one_piece(reference, LombScargleBatch { batch, grids, opts }).unwrap();
        let (got, p) = multi
            .lombscargle_batch_profiled(&batch, &grids, &opts)
            .unwrap();
        assert_same_bits(
            &pbits(&got),
            &pbits(&want),
            &format!("{what} {} {normalize:?}", T::NAME),
        );
        profiles = p;
    }
    profiles
}

fn assert_within_limit(profiles: &[GpuProfile]) {
    for p in profiles {
        let [a, b] = p.plan.arena_bytes;
        assert!(
            a + b <= p.plan.max_device_bytes,
            "GPU {}: arenas {a} + {b} over the limit {}",
            p.plan.ordinal,
            p.plan.max_device_bytes
        );
    }
}

fn chunks(profiles: &[GpuProfile]) -> usize {
    profiles.iter().map(|p| p.plan.chunks.len()).sum()
}

/// Arrays of ragged lengths (some empty, some all zeros: left unchanged).
fn arrays(narrays: usize, seed: u64) -> (Vec<f64>, Vec<usize>) {
    let mut rng = Rng(seed);
    let mut offsets = vec![0usize];
    for a in 0..narrays {
        let len = match a % 11 {
            0 => 0,
            1 => 1 + (rng.next() * 100_000.0) as usize, // larger than one piece
            _ => (rng.next() * 3000.0) as usize,
        };
        offsets.push(offsets.last().unwrap() + len);
    }
    let mut x: Vec<f64> = (0..*offsets.last().unwrap())
        .map(|_| rng.range(0.1, 2.0))
        .collect();
    for a in (5..narrays).step_by(37) {
        x[offsets[a]..offsets[a + 1]].fill(0.0);
    }
    (x, offsets)
}

fn check_normalize<T: Float>(multi: &MultiGpu, reference: &Arc<Gpu>, x: &[f64], offsets: &[usize]) {
    let x: Vec<T> = cast(x);
    let mut want_x = x.clone();
    let want = in_one_piece(
        reference,
        NormalizeBatched {
            x: &mut want_x,
            offsets,
        },
    )
    .unwrap();
    let mut got_x = x.clone();
    let (got, profiles) = multi
        .normalize_batched_profiled(&mut got_x, offsets)
        .unwrap();
    assert_same_bits(&bits(&got_x), &bits(&want_x), "normalised values");
    assert_same_bits(&bits(&got.sums), &bits(&want.sums), "sums");
    assert_eq!(got.failed, want.failed);
    assert!(!got.failed.is_empty());
    assert_within_limit(&profiles);
}

fn l96_initial(members: usize, n: usize, seed: u64) -> Vec<f64> {
    let mut rng = Rng(seed);
    (0..members * n).map(|_| rng.range(-2.0, 10.0)).collect()
}

fn check_ensembles<T: Float>(multi: &MultiGpu, reference: &Arc<Gpu>) -> Vec<GpuProfile> {
    let plain = Lorenz96Params::default();
    // Noise keyed by the member's index in the whole ensemble and a forcing
    // per member and site: bitwise the same on one GPU and split.
    let stochastic = Lorenz96Params {
        forcing_in_state: true,
        noise: 0.3,
        seed: 12345,
        ..plain
    };
    // Saved steps: the noisy run in segments (the first empty, the last
    // ending at the last step) and a plain one ending past its last frame.
    for (p, every, save_at) in [
        (plain, 0, &[][..]),
        (plain, 40, &[]),
        (stochastic, 40, &[]),
        (stochastic, 0, &[0, 17, 111, 200]),
        (plain, 0, &[5, 199]),
    ] {
        let initial: Vec<T> = cast(&l96_initial(1500, p.values_per_member(), 3));
        let want = in_one_piece(
            reference,
            EnsembleRun {
                params: &p,
                each: MemberParams::default(),
                initial: &initial,
                steps: 200,
                every,
                save_at,
            },
        )
        .unwrap();
        let (got, profiles) = match save_at.is_empty() {
            true => multi.lorenz96_profiled(&p, &initial, 200, every),
            false => multi.lorenz96_save_at_profiled(&p, &initial, 200, save_at),
        }
        .unwrap();
        assert_same_bits(
            &bits(&got.final_state),
            &bits(&want.final_state),
            "Lorenz 96 states",
        );
        assert_eq!(got.trajectory.is_some(), every > 0 || !save_at.is_empty());
        assert_eq!(got.save_at, save_at);
        if let (Some(g), Some(w)) = (&got.trajectory, &want.trajectory) {
            assert_same_bits(&bits(g), &bits(w), "Lorenz 96 trajectory");
        }
        assert_within_limit(&profiles);
    }
    // Model III on the specialised kernel (DART's sizes) and Model II on the
    // generic one.
    let mut last = Vec::new();
    for p in [
        Lorenz05Params::default(),
        Lorenz05Params {
            n: 240,
            k: 8,
            model: Lorenz05Model::II,
            ..Default::default()
        },
    ] {
        let mut rng = Rng(5);
        let initial: Vec<T> = (0..7 * p.n)
            .map(|_| T::from_f64(rng.range(-1.0, 12.0)))
            .collect();
        // F, b, c per member (each chunk takes its members' slices) or none,
        // frames every 10 steps or at saved steps.
        let mut draw = |lo: f64, hi: f64| -> Vec<T> {
            (0..7).map(|_| T::from_f64(rng.range(lo, hi))).collect()
        };
        let (f, b, c) = (draw(8.0, 16.0), draw(5.0, 12.0), draw(1.0, 4.0));
        let per_member = MemberParams {
            forcing: Some(&f[..]),
            b: Some(&b[..]),
            c: Some(&c[..]),
        };
        let runs = [per_member, MemberParams::default()]
            .into_iter()
            .flat_map(|each| [(each, &[][..]), (each, &[0, 7, 20][..])]);
        for (each, save_at) in runs {
            let every = if save_at.is_empty() { 10 } else { 0 };
            let want = in_one_piece(
                reference,
                EnsembleRun {
                    params: &p,
                    each,
                    initial: &initial,
                    steps: 20,
                    every,
                    save_at,
                },
            )
            .unwrap();
            let (got, profiles) = match save_at.is_empty() {
                true => multi.lorenz05_each_profiled(&p, &each, &initial, 20, every),
                false => multi.lorenz05_each_save_at_profiled(&p, &each, &initial, 20, save_at),
            }
            .unwrap();
            assert_same_bits(
                &bits(&got.final_state),
                &bits(&want.final_state),
                "Lorenz 2005 states",
            );
            assert_same_bits(
                &bits(&got.trajectory.unwrap()),
                &bits(&want.trajectory.unwrap()),
                "Lorenz 2005 trajectory",
            );
            assert_within_limit(&profiles);
            last = profiles;
        }
    }
    last
}

/// Lorenz 63 ensembles (shared and per-member sigma, rho, beta; with and
/// without saved steps) on `multi` against one piece on GPU `reference`;
/// returns the profiles of the last call.
fn check_lorenz63<T: Float>(multi: &MultiGpu, reference: &Arc<Gpu>) -> Vec<GpuProfile> {
    let members = 3001;
    let mut rng = Rng(63);
    let initial: Vec<T> = (0..3 * members)
        .map(|_| T::from_f64(rng.range(-15.0, 15.0)))
        .collect();
    let mut draw = |lo: f64, hi: f64| -> Vec<T> {
        (0..members)
            .map(|_| T::from_f64(rng.range(lo, hi)))
            .collect()
    };
    let (sigma, rho, beta) = (draw(8.0, 12.0), draw(20.0, 35.0), draw(2.0, 3.0));
    let classic = Lorenz63Params::<&[T]>::default();
    let each = Lorenz63Params {
        sigma: PerMember::Each(sigma.as_slice()),
        rho: PerMember::Each(rho.as_slice()),
        beta: PerMember::Each(beta.as_slice()),
        dt: 0.005,
    };
    let mixed = Lorenz63Params {
        beta: PerMember::Each(beta.as_slice()),
        ..classic
    };
    let mut last = Vec::new();
    for (p, save_at) in [
        (classic, &[][..]),
        (each, &[0, 33, 200][..]),
        (mixed, &[150][..]),
    ] {
        #[rustfmt::skip]
        let op = Lorenz63Run { params: p, initial: &initial, steps: 200, save_at };
        let want = in_one_piece(reference, op).unwrap();
        let (got, profiles) = multi.lorenz63_profiled(&p, &initial, 200, save_at).unwrap();
        let what = format!("Lorenz 63 {} {save_at:?}", T::NAME);
        assert_same_bits(
            &bits(&got.final_state),
            &bits(&want.final_state),
            &format!("{what} states"),
        );
        assert_eq!(got.saved.len(), save_at.len() * initial.len());
        assert_same_bits(
            &bits(&got.saved),
            &bits(&want.saved),
            &format!("{what} saved"),
        );
        assert_eq!(got.save_at, save_at);
        assert_within_limit(&profiles);
        last = profiles;
    }
    last
}

/// The median of the members' attempted steps in `run`.
fn median_attempts<T>(run: &Lorenz63AdaptiveEnsemble<T>) -> u32 {
    let mut attempts: Vec<u32> = (run.accepted.iter().zip(&run.rejected))
        .map(|(a, r)| a + r)
        .collect();
    attempts.sort_unstable();
    attempts[attempts.len() / 2]
}

/// Adaptive Lorenz 63 ensembles (shared and per-member sigma, rho, beta;
/// with and without save times; few steps allowed, so that some members
/// stop early) on `multi` against one piece on GPU `reference`, the steps
/// and statuses included; returns the profiles of the last call.
fn check_lorenz63_adaptive<T: Float>(multi: &MultiGpu, reference: &Arc<Gpu>) -> Vec<GpuProfile> {
    let members = 3001;
    let mut rng = Rng(6363);
    let initial: Vec<T> = (0..3 * members)
        .map(|_| T::from_f64(rng.range(-15.0, 15.0)))
        .collect();
    let mut draw = |lo: f64, hi: f64| -> Vec<T> {
        (0..members)
            .map(|_| T::from_f64(rng.range(lo, hi)))
            .collect()
    };
    let (sigma, rho, beta) = (draw(8.0, 12.0), draw(20.0, 35.0), draw(2.0, 3.0));
    let classic = Lorenz63AdaptiveParams::<&[T]>::default();
    let control = AdaptiveControl {
        rtol: 1e-5,
        atol: 1e-6,
        ..AdaptiveControl::default()
    };
    let each = Lorenz63AdaptiveParams {
        sigma: PerMember::Each(sigma.as_slice()),
        rho: PerMember::Each(rho.as_slice()),
        beta: PerMember::Each(beta.as_slice()),
        t0: 0.5,
        t_end: 2.0,
        control,
    };
    let mixed = Lorenz63AdaptiveParams {
        beta: PerMember::Each(beta.as_slice()),
        ..classic
    };
    // Few attempts allowed (the median of the members' in a full run):
    // about half stop.
    #[rustfmt::skip]
    let full = in_one_piece(reference, Lorenz63AdaptiveRun { params: each, initial: &initial, save_times: &[] });
    let max_steps = median_attempts(&full.unwrap());
    let stopping = Lorenz63AdaptiveParams {
        control: AdaptiveControl {
            max_steps,
            ..control
        },
        ..each
    };
    let mut last = Vec::new();
    for (p, save_times) in [
        (classic, &[][..]),
        (each, &[0.5, 1.0, 2.0][..]),
        (mixed, &[0.75][..]),
        (stopping, &[0.75, 1.5, 2.0][..]),
    ] {
        #[rustfmt::skip]
        let op = Lorenz63AdaptiveRun { params: p, initial: &initial, save_times };
        let want = in_one_piece(reference, op).unwrap();
        let (got, profiles) = multi
            .lorenz63_adaptive_profiled(&p, &initial, save_times)
            .unwrap();
        let what = format!("adaptive Lorenz 63 {} {save_times:?}", T::NAME);
        assert_same_bits(
            &bits(&got.final_state),
            &bits(&want.final_state),
            &format!("{what} states"),
        );
        assert_eq!(got.saved.len(), save_times.len() * initial.len());
        assert_same_bits(
            &bits(&got.saved),
            &bits(&want.saved),
            &format!("{what} saved"),
        );
        assert_eq!(got.accepted, want.accepted, "{what} accepted");
        assert_eq!(got.rejected, want.rejected, "{what} rejected");
        assert_eq!(got.status, want.status, "{what} status");
        assert_eq!(got.save_times, save_times);
        if p.control.max_steps == max_steps {
            let stopped = got.status.iter().filter(|s| **s != AdaptiveStatus::Reached);
            assert!((1..members).contains(&stopped.count()), "{what}");
        }
        assert_within_limit(&profiles);
        last = profiles;
    }
    last
}

/// `op` on `gpu` in one piece, as a one-GPU handle runs calls below the
/// pipeline's threshold: what the pipeline must equal bit for bit.
fn in_one_piece<O: Operation>(gpu: &Arc<Gpu>, op: O) -> kernpack::Result<O::Output> {
    op.validate()?;
    op.on_gpu(gpu)
}

fn one_gpu(test: &str) -> Option<(Arc<Gpu>, MultiGpu)> {
    let gpu = gpu_or_skip(test)?;
    Some((gpu, MultiGpu::new(&[0]).unwrap()))
}

// ---- one GPU: chunked runs equal unchunked ones ----

#[test]
fn chunked_lombscargle_batch_equals_unchunked() {
    let Some((gpu, multi)) = one_gpu("chunked_lombscargle_batch_equals_unchunked") else {
        return;
    };
    let d = ragged(2100, 50, 300, 1);
    let nf = 1500;
    // Default limit: everything fits (chunks only for pipelining).
    check_lombscargle::<f32>(&multi, &gpu, &d, nf, "default limit");
    // 2 MiB: chunks of a few dozen series (~6 KB of output each in f32).
    let small = multi.clone().with_max_device_bytes(2 << 20);
    let profiles = check_lombscargle::<f32>(&small, &gpu, &d, nf, "2 MiB limit");
    assert!(chunks(&profiles) >= 20, "{:?}", profiles[0].plan.chunks);
    assert_within_limit(&profiles);
    let profiles = check_lombscargle::<f64>(&small, &gpu, &d, nf, "2 MiB limit");
    assert!(chunks(&profiles) >= 40);
    // Small chunks under a large limit: pipelining only.
    let pipelined = multi.clone().with_options(MultiGpuOptions {
        max_device_bytes: None,
        chunk_bytes: 256 << 10,
    });
    let profiles = check_lombscargle::<f32>(&pipelined, &gpu, &d, nf, "256 KiB chunks");
    assert!(chunks(&profiles) >= 40);
}

/// The BLS search of `d` through `multi` against one piece on `reference`,
/// bit for bit (NaN fields included); each GPU's profile.
fn check_bls<T: Float>(
    multi: &MultiGpu,
    reference: &Arc<Gpu>,
    d: &Ragged,
    what: &str,
) -> Vec<GpuProfile> {
    use kernpack::api::bls::{BlsBatch, BlsOptions, BlsResults, BlsSearchBatch};
    let (t, y, dy) = (cast::<T>(&d.t), cast::<T>(&d.y), cast::<T>(&d.w));
    let batch = BlsBatch {
        t: &t,
        y: &y,
        dy: Some(&dy),
        offsets: &d.offsets,
    };
    let periods: Vec<T> = (0..300)
        .map(|k| T::from_f64(0.7 + 0.05 * k as f64))
        .collect();
    let durations = cast::<T>(&[0.05, 0.1, 0.2]);
    let opts = BlsOptions::default();
    let op = BlsSearchBatch {
        batch,
        periods: &periods,
        durations: &durations,
        opts,
    };
    let want = in_one_piece(reference, op).unwrap();
    let (got, profiles) = multi
        .bls_batch_profiled(&batch, &periods, &durations, &opts)
        .unwrap();
    let fields = |r: &[BlsResults<T>]| -> Vec<u64> {
        r.iter()
            .flat_map(|r| r.columns().map(|c| bits(c)))
            .flatten()
            .collect()
    };
    assert_same_bits(&fields(&got), &fields(&want), what);
    // The best periods reduced on each chunk's GPU: the full results' rows
    // at the peaks of the one-piece power (f64 ranks exactly what it holds).
    let peaks = kernpack::api::bls::PeakOptions {
        k: 4,
        separation: 0.3,
    };
    let (found, _) = multi
        .bls_batch_peaks_profiled(&batch, &periods, &durations, &opts, &peaks)
        .unwrap();
    let axis: Vec<f64> = periods.iter().map(|p| p.to_f64()).collect();
    for (s, (full, best)) in want.iter().zip(&found).enumerate() {
        if T::NAME == "f64" {
            let power: Vec<f64> = full.power.iter().map(|v| v.to_f64()).collect();
            let expect = kernpack::params::peaks::select_peaks(
                &power,
                &axis,
                &peaks,
                kernpack::params::peaks::Better::Higher,
            );
            let expect: Vec<usize> = expect.iter().map(|p| p.index).collect();
            assert_eq!(best.period_index, expect, "{what}: series {s}");
        }
        for (j, &i) in best.period_index.iter().enumerate() {
            let row = |r: &BlsResults<T>, i: usize| -> Vec<u64> {
                r.columns()
                    .iter()
                    .map(|c| c[i].to_f64().to_bits())
                    .collect()
            };
            assert_eq!(row(&best.results, j), row(full, i), "{what}: series {s}");
        }
    }
    profiles
}

#[test]
fn chunked_bls_batch_equals_unchunked() {
    let Some((gpu, multi)) = one_gpu("chunked_bls_batch_equals_unchunked") else {
        return;
    };
    let d = ragged(400, 20, 300, 5);
    check_bls::<f64>(&multi, &gpu, &d, "BLS, default limit");
    let small = multi.clone().with_max_device_bytes(2 << 20);
    let profiles = check_bls::<f64>(&small, &gpu, &d, "BLS, 2 MiB limit");
    assert!(chunks(&profiles) >= 4, "{:?}", profiles[0].plan.chunks);
    assert_within_limit(&profiles);
    check_bls::<f32>(&small, &gpu, &d, "BLS f32, 2 MiB limit");
}

/// PDM and conditional entropy of `d` through `multi` against one piece on
/// `reference`, bit for bit; each GPU's profiles.
fn check_fold<T: Float>(
    multi: &MultiGpu,
    reference: &Arc<Gpu>,
    d: &Ragged,
    what: &str,
) -> Vec<GpuProfile> {
    use kernpack::api::phasefold::{
        CeOptions, FoldBatch, FoldFreqs, PdmOptions, PeakOptions, PhaseFoldBatch, Statistic,
    };
    use kernpack::params::peaks::select_peaks;
    let (t, y, dy) = (cast::<T>(&d.t), cast::<T>(&d.y), cast::<T>(&d.w));
    let batch = FoldBatch {
        t: &t,
        y: &y,
        dy: Some(&dy),
        offsets: &d.offsets,
    };
    let freqs = FoldFreqs::Uniform(UniformGrid::new(0.05, 0.0137, 700));
    let ce = CeOptions {
        phase_overlap: 1,
        mag_overlap: 1,
        ..CeOptions::default()
    };
    let mut all = Vec::new();
    for statistic in [
        Statistic::Pdm(PdmOptions { bins: 12 }),
        Statistic::ConditionalEntropy(ce),
    ] {
        let op = PhaseFoldBatch {
            batch,
            freqs,
            statistic,
        };
        let want = in_one_piece(reference, op).unwrap();
        let (got, profiles) = match statistic {
            Statistic::Pdm(o) => multi.pdm_batch_profiled(&batch, &freqs, &o),
            Statistic::ConditionalEntropy(o) => {
                multi.conditional_entropy_batch_profiled(&batch, &freqs, &o)
            }
        }
        .unwrap();
        let flat = |r: &[Vec<T>]| -> Vec<u64> { r.iter().flat_map(|v| bits(v)).collect() };
        assert_same_bits(&flat(&got), &flat(&want), what);
        all.extend(profiles);
        // The best peaks reduced on each chunk's GPU: those of the one-piece values.
        let peaks = PeakOptions {
            k: 5,
            separation: 0.02,
        };
        let (got, _) = multi
            .phase_fold_batch_peaks_profiled(&batch, &freqs, &statistic, &peaks)
            .unwrap();
        let axis: Vec<f64> = (0..freqs.len()).map(|k| freqs.at(k)).collect();
        for (s, row) in want.iter().enumerate() {
            let row: Vec<f64> = row.iter().map(|v| v.to_f64()).collect();
            let expect = select_peaks(&row, &axis, &peaks, statistic.better());
            assert_eq!(got[s], expect, "{what}: peaks of series {s}");
        }
    }
    all
}

#[test]
fn chunked_phase_folds_equal_unchunked() {
    let Some((gpu, multi)) = one_gpu("chunked_phase_folds_equal_unchunked") else {
        return;
    };
    let d = ragged(400, 20, 300, 5);
    check_fold::<f64>(&multi, &gpu, &d, "folds, default limit");
    let small = multi.clone().with_max_device_bytes(1 << 20);
    let profiles = check_fold::<f64>(&small, &gpu, &d, "folds, 1 MiB limit");
    assert!(chunks(&profiles) >= 4, "{:?}", profiles[0].plan.chunks);
    assert_within_limit(&profiles);
    check_fold::<f32>(&small, &gpu, &d, "folds f32, 1 MiB limit");
}

/// The flexible multiband batch of `d` (bands assigned by sample, 4 of
/// them; per-series grids in cycles per unit time) through `multi` against
/// one piece on `reference`, bit for bit; each GPU's profile.
fn check_multiband<T: Float>(
    multi: &MultiGpu,
    reference: &Arc<Gpu>,
    d: &Ragged,
    what: &str,
) -> Vec<GpuProfile> {
    use kernpack::api::lombscargle::multiband::{
        LombScargleMultibandBatch, MultibandBatch, MultibandOptions,
    };
    let (t, y, dy) = (cast::<T>(&d.t), cast::<T>(&d.y), cast::<T>(&d.w));
    let bands: Vec<u32> = (0..t.len()).map(|i| (i % 4) as u32).collect();
    let batch = MultibandBatch {
        t: &t,
        y: &y,
        dy: Some(&dy),
        bands: &bands,
        offsets: &d.offsets,
    };
    let f0: Vec<f64> = d.f0.iter().map(|f| f / TAU).collect();
    let df: Vec<f64> = d.df.iter().map(|f| f / TAU).collect();
    let grids = BatchGrid::PerSeries {
        f0: &f0,
        df: &df,
        nf: 600,
    };
    let opts = MultibandOptions::default();
    let op = LombScargleMultibandBatch { batch, grids, opts };
    let want = in_one_piece(reference, op).unwrap();
    let (got, profiles) = multi
        .lombscargle_multiband_batch_profiled(&batch, &grids, &opts)
        .unwrap();
    assert_same_bits(&bits(&got), &bits(&want), what);
    // The best peaks reduced on each chunk's GPU: those of the one-piece values.
    let peaks = kernpack::params::peaks::PeakOptions {
        k: 5,
        separation: 0.002,
    };
    let (best, _) = multi
        .lombscargle_multiband_batch_peaks_profiled(&batch, &grids, &opts, &peaks)
        .unwrap();
    for (s, row) in want.chunks(600).enumerate() {
        let row: Vec<f64> = row.iter().map(|v| v.to_f64()).collect();
        let axis = grids.grid(s).frequencies();
        let expect = kernpack::params::peaks::select_peaks(
            &row,
            &axis,
            &peaks,
            kernpack::params::peaks::Better::Higher,
        );
        assert_eq!(best[s], expect, "{what}: peaks of series {s}");
    }
    profiles
}

#[test]
fn chunked_multiband_equals_unchunked() {
    let Some((gpu, multi)) = one_gpu("chunked_multiband_equals_unchunked") else {
        return;
    };
    let d = ragged(500, 20, 300, 9);
    check_multiband::<f64>(&multi, &gpu, &d, "multiband, default limit");
    let small = multi.clone().with_max_device_bytes(1 << 20);
    let profiles = check_multiband::<f64>(&small, &gpu, &d, "multiband, 1 MiB limit");
    assert!(chunks(&profiles) >= 4, "{:?}", profiles[0].plan.chunks);
    assert_within_limit(&profiles);
    check_multiband::<f32>(&small, &gpu, &d, "multiband f32, 1 MiB limit");
}

/// The multi-term batch's best peaks of `d` (one term; per-series grids in
/// cycles per unit time) through `multi`, chunk by chunk, against the peaks
/// of the one-piece periodograms on `reference` (the same kernel: the same
/// bits, so the same peaks); refined peaks and FAPs, which the refinement's
/// small batches give on the first GPU, against one GPU's; each GPU's
/// profile.
fn check_chi2_peaks<T: Float>(
    multi: &MultiGpu,
    reference: &Arc<Gpu>,
    d: &Ragged,
    what: &str,
) -> Vec<GpuProfile> {
    use kernpack::api::lombscargle::chi2::{
        Chi2Batch, Chi2Options, FapMethod, LombScargleChi2Batch, PeakOptions, Refine,
        RefinedPeakOptions,
    };
    use kernpack::params::peaks::{select_peaks, Better};
    let (t, y, dy) = (cast::<T>(&d.t), cast::<T>(&d.y), cast::<T>(&d.w));
    let batch = Chi2Batch {
        t: &t,
        y: &y,
        dy: Some(&dy),
        offsets: &d.offsets,
    };
    let f0: Vec<f64> = d.f0.iter().map(|f| f / TAU).collect();
    let df: Vec<f64> = d.df.iter().map(|f| f / TAU).collect();
    let grids = BatchGrid::PerSeries {
        f0: &f0,
        df: &df,
        nf: 600,
    };
    let opts = Chi2Options::default();
    let want = in_one_piece(reference, LombScargleChi2Batch { batch, grids, opts }).unwrap();
    let search = RefinedPeakOptions {
        peaks: PeakOptions {
            k: 5,
            separation: 0.002,
        },
        refine: Some(Refine {
            points: 4,
            steps: 1,
        }),
        fap: Some(FapMethod::Baluev),
    };
    let (best, profiles) = multi
        .lombscargle_chi2_batch_peaks_profiled(&batch, &grids, &opts, &search.peaks)
        .unwrap();
    for (s, row) in want.iter().enumerate() {
        let row: Vec<f64> = row.iter().map(|v| v.to_f64()).collect();
        let axis = grids.grid(s).frequencies();
        let expect = select_peaks(&row, &axis, &search.peaks, Better::Higher);
        assert_eq!(best[s], expect, "{what}: peaks of series {s}");
    }
    let refined = multi
        .lombscargle_chi2_batch_refined_peaks(&batch, &grids, &opts, &search)
        .unwrap();
    let one = kernpack::Kernpack::from(reference.clone())
        .lombscargle_chi2_batch_refined_peaks(&batch, &grids, &opts, &search)
        .unwrap();
    assert_eq!(refined, one, "{what}: refined peaks");
    profiles
}

#[test]
fn chunked_chi2_peaks_equal_unchunked() {
    let Some((gpu, multi)) = one_gpu("chunked_chi2_peaks_equal_unchunked") else {
        return;
    };
    let d = ragged(500, 20, 300, 23);
    check_chi2_peaks::<f64>(&multi, &gpu, &d, "chi2 peaks, default limit");
    let small = multi.clone().with_max_device_bytes(1 << 20);
    let profiles = check_chi2_peaks::<f64>(&small, &gpu, &d, "chi2 peaks, 1 MiB limit");
    assert!(chunks(&profiles) >= 4, "{:?}", profiles[0].plan.chunks);
    assert_within_limit(&profiles);
    check_chi2_peaks::<f32>(&small, &gpu, &d, "chi2 peaks f32, 1 MiB limit");
}

#[test]
fn two_gpus_chi2_peaks_equal_one_gpu() {
    let Some(all) = gpus_or_skip("two_gpus_chi2_peaks_equal_one_gpu", 2) else {
        return;
    };
    let gpu0 = Gpu::get(0).unwrap();
    let d = ragged(600, 20, 300, 29);
    let profiles = check_chi2_peaks::<f64>(&all, &gpu0, &d, "chi2 peaks, all GPUs");
    assert!(profiles.len() >= 2 && profiles.iter().all(|p| !p.plan.items.is_empty()));
}

#[test]
fn two_gpus_multiband_equals_one_gpu() {
    let Some(all) = gpus_or_skip("two_gpus_multiband_equals_one_gpu", 2) else {
        return;
    };
    let gpu0 = Gpu::get(0).unwrap();
    let d = ragged(600, 20, 300, 17);
    let profiles = check_multiband::<f64>(&all, &gpu0, &d, "multiband, all GPUs");
    assert!(profiles.len() >= 2 && profiles.iter().all(|p| !p.plan.items.is_empty()));
}

#[test]
fn chunked_ensembles_equal_unchunked() {
    let Some((gpu, multi)) = one_gpu("chunked_ensembles_equal_unchunked") else {
        return;
    };
    check_ensembles::<f64>(&multi, &gpu);
    check_lorenz63::<f64>(&multi, &gpu);
    // 64 KB: Lorenz 63 members in many chunks.
    let profiles = check_lorenz63::<f32>(&multi.clone().with_max_device_bytes(64 << 10), &gpu);
    assert!(chunks(&profiles) >= 3, "{profiles:?}");
    check_lorenz63_adaptive::<f64>(&multi, &gpu);
    let small = multi.clone().with_max_device_bytes(64 << 10);
    let profiles = check_lorenz63_adaptive::<f32>(&small, &gpu);
    assert!(chunks(&profiles) >= 3, "{profiles:?}");
    // 1 MiB: a Lorenz 96 member with 6 frames of 40 f32 is ~1 KB.
    let small = multi.with_max_device_bytes(1 << 20);
    check_ensembles::<f32>(&small, &gpu);
    let p = Lorenz96Params::default();
    let plans = small.plan_ensemble::<f32>(1500, p.n, 200, 40).unwrap();
    assert!(plans[0].chunks.len() >= 3, "{plans:?}");
    // A Lorenz 2005 member of 960 sites with its trajectory in f64 does not
    // fit half of 64 KB: a clear error, before any GPU work.
    let tiny = small.with_max_device_bytes(64 << 10);
    let initial = vec![1.0f64; 2 * 960];
    let err = tiny
        .lorenz05(&Lorenz05Params::default(), &initial, 20, 1)
        .unwrap_err();
    assert!(matches!(err, Error::InvalidInput(_)), "{err:?}");
    let msg = err.to_string();
    assert!(msg.contains("GPU 0: member 0 alone needs"), "{msg}");
}

#[test]
fn chunked_normalize_batched_equals_unchunked() {
    let Some((gpu, multi)) = one_gpu("chunked_normalize_batched_equals_unchunked") else {
        return;
    };
    let (x, offsets) = arrays(3000, 2);
    check_normalize::<f32>(&multi, &gpu, &x, &offsets);
    let small = multi.with_max_device_bytes(2 << 20);
    let plans = small.plan_normalize_batched::<f64>(&offsets).unwrap();
    assert!(plans[0].chunks.len() >= 10, "{plans:?}");
    check_normalize::<f64>(&small, &gpu, &x, &offsets);
    check_normalize::<f32>(&small, &gpu, &x, &offsets);
}

#[test]
fn a_one_gpu_handle_runs_large_ensembles_in_chunks_with_the_same_bits() {
    // Above 256 MiB of initial states, Kernpack on one GPU takes the chunked
    // pipeline; the one-piece Gpu call is the reference.
    let Some((gpu, _)) = one_gpu("a_one_gpu_handle_runs_large_ensembles_in_chunks") else {
        return;
    };
    let kp = Kernpack::with_gpu(0).unwrap();
    let mut rng = Rng(17);
    let p = Lorenz96Params::default(); // N = 40: 320 bytes per f64 member
    let members = (300 << 20) / (p.n * 8);
    let initial: Vec<f64> = (0..members * p.n)
        .map(|_| 8.0 + rng.range(-1.0, 1.0))
        .collect();
    let got = kp.lorenz96(&p, &initial, 5, 0).unwrap();
    let want = Kernpack::from(gpu.clone())
        .lorenz96(&p, &initial, 5, 0)
        .unwrap();
    assert_eq!(bits(&got.final_state), bits(&want.final_state));
    // With the kept staging freed, the next call allocates it again.
    kernpack::release_staging();
    let again = kp.lorenz96(&p, &initial, 5, 0).unwrap();
    assert_eq!(bits(&again.final_state), bits(&want.final_state));
    assert_ne!(
        bits(&got.final_state),
        bits(&initial),
        "the run moved the state"
    );
    // Lorenz 63 likewise: 24 bytes per f64 member, per-member sigma.
    let members = (300 << 20) / 24;
    let initial: Vec<f64> = (0..3 * members).map(|_| rng.range(-15.0, 15.0)).collect();
    let sigma: Vec<f64> = (0..members).map(|_| rng.range(8.0, 12.0)).collect();
    let p = Lorenz63Params {
        sigma: PerMember::Each(sigma.as_slice()),
        ..Lorenz63Params::default()
    };
    let got = kp.lorenz63(&p, &initial, 5, &[]).unwrap();
    #[rustfmt::skip]
    let op = Lorenz63Run { params: p, initial: &initial, steps: 5, save_at: &[] };
    assert!(op.split().unwrap().device_bytes > kernpack::api::exec::PIPELINE_BYTES);
    let want = in_one_piece(&gpu, op).unwrap();
    assert_eq!(bits(&got.final_state), bits(&want.final_state));
    // The adaptive run likewise, with its stats: 68 bytes per f64 member
    // (states in and out, sigma, 3 u32).
    let members = (300 << 20) / 68;
    let initial: Vec<f64> = (0..3 * members).map(|_| rng.range(-15.0, 15.0)).collect();
    let sigma: Vec<f64> = (0..members).map(|_| rng.range(8.0, 12.0)).collect();
    let p = Lorenz63AdaptiveParams {
        sigma: PerMember::Each(sigma.as_slice()),
        t_end: 0.05,
        ..Lorenz63AdaptiveParams::default()
    };
    let got = kp.lorenz63_adaptive(&p, &initial, &[]).unwrap();
    #[rustfmt::skip]
    let op = Lorenz63AdaptiveRun { params: p, initial: &initial, save_times: &[] };
    assert!(op.split().unwrap().device_bytes > kernpack::api::exec::PIPELINE_BYTES);
    let want = in_one_piece(&gpu, op).unwrap();
    assert_eq!(bits(&got.final_state), bits(&want.final_state));
    assert_eq!(got.accepted, want.accepted);
    assert_eq!(got.rejected, want.rejected);
    assert_eq!(got.status, want.status);
}

#[test]
fn memory_limit_errors_are_clear_and_change_nothing() {
    let Some((_gpu, multi)) = one_gpu("memory_limit_errors_are_clear_and_change_nothing") else {
        return;
    };
    let d = ragged(50, 100, 200, 3);
    let (t, y) = (cast::<f32>(&d.t), cast::<f32>(&d.y));
    let batch = Batch {
        t: &t,
        y: &y,
        weights: None,
        offsets: &d.offsets,
    };
    let grids = BatchGrid::Shared(UniformGrid::new(0.1, 0.01, 100_000));
    let opts = LombScargleOptions::default();
    // 400 KB of output per series against 2 x 100 KB.
    let tiny = multi.with_max_device_bytes(200_000);
    let err = tiny.lombscargle_batch(&batch, &grids, &opts).unwrap_err();
    let msg = err.to_string();
    assert!(matches!(err, Error::InvalidInput(_)), "{err:?}");
    assert!(msg.contains("GPU 0: series 0 alone needs"), "{msg}");
    assert!(msg.contains("max_device_bytes"), "{msg}");
    // The batched normalise leaves x as it was.
    let (x, offsets) = arrays(200, 4);
    let mut x: Vec<f32> = cast(&x);
    let before = x.clone();
    let err = tiny.normalize_batched(&mut x, &offsets).unwrap_err();
    assert!(err.to_string().contains("array"), "{err}");
    assert_eq!(bits(&x), bits(&before));
    // Invalid input: the one-GPU call's message.
    let mut bad = t.clone();
    bad[7] = f32::INFINITY;
    let err = tiny
        .lombscargle_batch(&Batch { t: &bad, ..batch }, &grids, &opts)
        .unwrap_err();
    assert!(err.to_string().contains("series 0: t[7]"), "{err}");
}

#[test]
fn handles_reject_bad_ordinals() {
    assert!(matches!(MultiGpu::new(&[]), Err(Error::InvalidInput(_))));
    let err = MultiGpu::new(&[0, 1, 0]).unwrap_err();
    assert!(err.to_string().contains("GPU 0 is listed twice"), "{err}");
    if gpu_or_skip("handles_reject_bad_ordinals").is_none() {
        return;
    }
    let count = Gpu::device_count();
    // An ordinal past the devices present is a bad argument (no GPU at all is NoGpu).
    let err = MultiGpu::new(&[0, count]).unwrap_err();
    assert!(matches!(err, Error::InvalidInput(_)), "{err:?}");
    assert!(err.to_string().contains(&format!("GPU {count}")), "{err}");
    let all = Kernpack::on_gpus(&(0..count).collect::<Vec<_>>()).unwrap();
    assert_eq!(all.ordinals(), (0..count).collect::<Vec<_>>());
    assert_eq!(MultiGpu::all().unwrap().len(), count);
}

// ---- two GPUs or more: equal to one GPU ----

#[test]
fn two_gpus_lombscargle_batch_equals_one_gpu() {
    let Some(all) = gpus_or_skip("two_gpus_lombscargle_batch_equals_one_gpu", 2) else {
        return;
    };
    let gpu0 = Gpu::get(0).unwrap();
    let d = ragged(2500, 30, 400, 7);
    let profiles = check_lombscargle::<f32>(&all, &gpu0, &d, 2000, "all GPUs");
    assert!(
        profiles.len() >= 2 && profiles.iter().all(|p| !p.plan.items.is_empty()),
        "every GPU takes series: {:?}",
        profiles.iter().map(|p| &p.plan.items).collect::<Vec<_>>()
    );
    check_lombscargle::<f64>(&all, &gpu0, &d, 2000, "all GPUs");
    // Chunked on every GPU too.
    let small = all.clone().with_max_device_bytes(4 << 20);
    let profiles = check_lombscargle::<f32>(&small, &gpu0, &d, 2000, "all GPUs, 4 MiB");
    assert!(profiles.iter().all(|p| p.plan.chunks.len() >= 5));
    assert_within_limit(&profiles);
    // The reference on another GPU gives the same bits (same model).
    let last = Gpu::get(Gpu::device_count() - 1).unwrap();
    check_lombscargle::<f32>(&all, &last, &d, 500, "all GPUs vs the last GPU");
}

#[test]
fn two_gpus_bls_batch_equals_one_gpu() {
    let Some(all) = gpus_or_skip("two_gpus_bls_batch_equals_one_gpu", 2) else {
        return;
    };
    let gpu0 = Gpu::get(0).unwrap();
    let d = ragged(600, 20, 300, 11);
    let profiles = check_bls::<f64>(&all, &gpu0, &d, "BLS, all GPUs");
    assert!(profiles.len() >= 2 && profiles.iter().all(|p| !p.plan.items.is_empty()));
    let small = all.clone().with_max_device_bytes(2 << 20);
    check_bls::<f32>(&small, &gpu0, &d, "BLS f32, all GPUs, 2 MiB");
}

#[test]
fn two_gpus_phase_folds_equal_one_gpu() {
    let Some(all) = gpus_or_skip("two_gpus_phase_folds_equal_one_gpu", 2) else {
        return;
    };
    let gpu0 = Gpu::get(0).unwrap();
    let d = ragged(600, 20, 300, 13);
    let profiles = check_fold::<f64>(&all, &gpu0, &d, "folds, all GPUs");
    assert!(profiles.len() >= 2 && profiles.iter().all(|p| !p.plan.items.is_empty()));
    let small = all.clone().with_max_device_bytes(1 << 20);
    check_fold::<f32>(&small, &gpu0, &d, "folds f32, all GPUs, 1 MiB");
}

#[test]
fn two_gpus_ensembles_equal_one_gpu() {
    let Some(all) = gpus_or_skip("two_gpus_ensembles_equal_one_gpu", 2) else {
        return;
    };
    let gpu0 = Gpu::get(0).unwrap();
    check_ensembles::<f32>(&all, &gpu0);
    let profiles = check_ensembles::<f64>(&all.clone().with_max_device_bytes(1 << 20), &gpu0);
    assert!(profiles.len() >= 2);
    check_lorenz63::<f32>(&all, &gpu0);
    let profiles = check_lorenz63::<f64>(&all.clone().with_max_device_bytes(64 << 10), &gpu0);
    assert!(profiles.len() >= 2 && profiles.iter().all(|p| p.plan.chunks.len() >= 2));
    check_lorenz63_adaptive::<f32>(&all, &gpu0);
    let small = all.clone().with_max_device_bytes(64 << 10);
    let profiles = check_lorenz63_adaptive::<f64>(&small, &gpu0);
    assert!(profiles.len() >= 2 && profiles.iter().all(|p| p.plan.chunks.len() >= 2));
}

#[test]
fn two_gpus_normalize_batched_equals_one_gpu() {
    let Some(all) = gpus_or_skip("two_gpus_normalize_batched_equals_one_gpu", 2) else {
        return;
    };
    let gpu0 = Gpu::get(0).unwrap();
    let (x, offsets) = arrays(4000, 8);
    check_normalize::<f32>(&all, &gpu0, &x, &offsets);
    check_normalize::<f64>(&all, &gpu0, &x, &offsets);
    let small = all.with_max_device_bytes(3 << 20);
    let plans = small.plan_normalize_batched::<f64>(&offsets).unwrap();
    assert!(plans.len() >= 2 && plans.iter().all(|p| p.chunks.len() >= 3));
    check_normalize::<f64>(&small, &gpu0, &x, &offsets);
}

/// Several threads at once, each making multi-GPU calls and one-GPU calls on
/// each GPU (the shared contexts used from many threads): every result is
/// the one computed alone beforehand.
#[test]
fn two_gpus_from_threads_at_once() {
    let Some(all) = gpus_or_skip("two_gpus_from_threads_at_once", 2) else {
        return;
    };
    let count = Gpu::device_count();
    let d = ragged(600, 40, 250, 11);
    let (t, y, w) = (cast::<f32>(&d.t), cast::<f32>(&d.y), cast::<f32>(&d.w));
    let batch = Batch {
        t: &t,
        y: &y,
        weights: Some(&w),
        offsets: &d.offsets,
    };
    let grids = BatchGrid::PerSeries {
        f0: &d.f0,
        df: &d.df,
        nf: 700,
    };
    let opts = LombScargleOptions {
        normalize: Normalize::Normalize,
        floating_mean: true,
        precenter: false,
    };
    let p96 = Lorenz96Params::default();
    let initial: Vec<f32> = cast(&l96_initial(400, p96.n, 13));
    let (x, offsets) = arrays(500, 12);
    let x: Vec<f32> = cast(&x);

    // Everything a thread computes, as bits.
    let run = |multi: &MultiGpu, one: &Kernpack| -> Vec<Vec<u64>> {
        let mut out = vec![
            pbits(&multi.lombscargle_batch(&batch, &grids, &opts).unwrap()),
            pbits(&one.lombscargle_batch(&batch, &grids, &opts).unwrap()),
            bits(
                &multi
                    .lorenz96(&p96, &initial, 100, 25)
                    .unwrap()
                    .trajectory
                    .unwrap(),
            ),
            bits(&one.lorenz96(&p96, &initial, 100, 0).unwrap().final_state),
        ];
        let mut xm = x.clone();
        out.push(bits(
            &multi.normalize_batched(&mut xm, &offsets).unwrap().sums,
        ));
        out.push(bits(&xm));
        let mut xo = x.clone();
        one.normalize_batched(&mut xo, &offsets).unwrap();
        out.push(bits(&xo));
        out
    };
    let one = Kernpack::with_gpu(0).unwrap();
    let want = run(&all, &one);
    // The one-GPU results equal the multi-GPU ones.
    assert_eq!(want[0], want[1]);
    assert_eq!(want[5], want[6]);

    let threads = 8;
    std::thread::scope(|scope| {
        let handles: Vec<_> = (0..threads)
            .map(|i| {
                let (all, want, run) = (&all, &want, &run);
                scope.spawn(move || {
                    // Alternate handles: all GPUs, reversed order, chunked; and
                    // the one-GPU calls on each GPU in turn.
                    let reversed: Vec<usize> = (0..count).rev().collect();
                    let multi = match i % 3 {
                        0 => all.clone(),
                        1 => MultiGpu::new(&reversed).unwrap(),
                        _ => all.clone().with_max_device_bytes(2 << 20),
                    };
                    let one = Kernpack::with_gpu(i % count).unwrap();
                    for round in 0..2 {
                        let got = run(&multi, &one);
                        for (k, (g, w)) in got.iter().zip(want.iter()).enumerate() {
                            assert_same_bits(g, w, &format!("thread {i} round {round} result {k}"));
                        }
                    }
                })
            })
            .collect();
        for h in handles {
            h.join().unwrap();
        }
    });
}

// ---- bench ----

/// `count` light curves of 100-300 samples over 50-500 days, a sinusoid of
/// period 0.2-20 days plus noise, f32, back to back: (t, y, offsets).
fn survey_curves(count: usize) -> (Vec<f32>, Vec<f32>, Vec<usize>) {
    let mut rng = Rng(2024);
    let (mut t, mut y, mut offsets) = (Vec::new(), Vec::new(), vec![0usize]);
    for _ in 0..count {
        let n = 100 + (rng.next() * 201.0) as usize;
        let (span, period) = (rng.range(50.0, 500.0), rng.range(0.2, 20.0));
        let mut ts: Vec<f32> = (0..n).map(|_| (span * rng.next()) as f32).collect();
        ts.sort_by(f32::total_cmp);
        for &ti in &ts {
            y.push(((TAU * ti as f64 / period).sin() + 0.3 * rng.range(-1.0, 1.0)) as f32);
        }
        t.extend(ts);
        offsets.push(t.len());
    }
    (t, y, offsets)
}

/// The survey's peaks mode in memory: each curve's highest peak (f32, nf =
/// 10^4, shared grid), one GPU and every GPU, only peaks back. Sizes from
/// KERNPACK_BENCH_PEAKS (default 10^6 and 6 x 10^6: the periodograms of the
/// latter, 240 GB, are 3x an 80 GB GPU's memory, while the call's device
/// memory stays at its two chunk arenas).
#[test]
#[ignore]
fn bench_multi_gpu_peaks() {
    let Some(all) = gpus_or_skip("bench_multi_gpu_peaks", 1) else {
        return;
    };
    let sizes: Vec<usize> = std::env::var("KERNPACK_BENCH_PEAKS")
        .unwrap_or_else(|_| "1000000,6000000".into())
        .split(',')
        .map(|s| s.trim().parse().expect("KERNPACK_BENCH_PEAKS: counts"))
        .collect();
    let nf = 10_000;
    let started = Instant::now();
    let (t, y, offsets) = survey_curves(*sizes.iter().max().unwrap());
    println!(
        "bench_multi_gpu_peaks: {} samples generated in {:.1} s; nf = {nf}, f32, shared grid, power",
        t.len(),
        started.elapsed().as_secs_f64()
    );
    let grids = BatchGrid::Shared(UniformGrid::new(0.01, 0.005, nf));
    let opts = LombScargleOptions::default();
    let one = MultiGpu::new(&[0]).unwrap();
    let warm = Batch {
        t: &t[..offsets[2000]],
        y: &y[..offsets[2000]],
        weights: None,
        offsets: &offsets[..=2000],
    };
    one.lombscargle_batch_peaks(&warm, &grids, &opts).unwrap();
    all.lombscargle_batch_peaks(&warm, &grids, &opts).unwrap();
    for &n in &sizes {
        let batch = Batch {
            t: &t[..offsets[n]],
            y: &y[..offsets[n]],
            weights: None,
            offsets: &offsets[..=n],
        };
        let mut results = Vec::new();
        // Each twice: the second run has every GPU's staging kept.
        for (label, multi) in [
            ("1 GPU", &one),
            ("1 GPU", &one),
            ("all GPUs", &all),
            ("all GPUs", &all),
        ] {
            let free_before = multi.gpus()[0].context().mem_get_info().unwrap().0;
            let started = Instant::now();
            let (peaks, profiles) = multi
                .lombscargle_batch_peaks_profiled(&batch, &grids, &opts)
                .unwrap();
            let wall = started.elapsed().as_secs_f64();
            assert_eq!(peaks.len(), n);
            assert!(peaks.iter().all(Option::is_some));
            let slowest_gpu = profiles.iter().map(|p| p.wall_ms).fold(0.0, f64::max);
            println!(
                "  {n:>8} series, {label:<8} ({} GPU): {wall:8.3} s wall, {:12.0} light curves/s; \
                 periodograms never held: {:.0} GB; outside the GPUs' threads (checks, plan, \
                 gather) {:.1} ms",
                profiles.len(),
                n as f64 / wall,
                (n * nf * 4) as f64 / 1e9,
                wall * 1e3 - slowest_gpu
            );
            for p in &profiles {
                println!(
                    "      GPU {}: {:>8} series in {:>5} chunks, arenas {:.0} MiB of {:.0} MiB free before; \
                     h2d (with the wait for the previous chunk) {:8.1} ms, kernels {:8.1} ms, d2h {:6.1} ms \
                     (events, summed); host {:7.1} ms; thread {:7.1} ms; kernels alone {:.0} curves/s",
                    p.plan.ordinal,
                    p.plan.items.len(),
                    p.plan.chunks.len(),
                    (p.plan.arena_bytes[0] + p.plan.arena_bytes[1]) as f64 / (1 << 20) as f64,
                    free_before as f64 / (1 << 20) as f64,
                    p.h2d_ms,
                    p.kernel_ms,
                    p.d2h_ms,
                    p.host_ms,
                    p.wall_ms,
                    p.plan.items.len() as f64 / (p.kernel_ms / 1e3)
                );
            }
            results.push((peaks, n as f64 / wall));
        }
        assert!(
            results.iter().all(|r| r.0 == results[0].0),
            "one GPU and all GPUs differ"
        );
        println!(
            "  {n:>8} series: all GPUs / 1 GPU = {:.2}x (second runs; first runs {:.2}x)",
            results[3].1 / results[1].1,
            results[2].1 / results[0].1
        );
        // Chunk sizes (KERNPACK_BENCH_CHUNK_MIB), staging already kept, on
        // GPU 0 and on all GPUs.
        let chunk_mib = std::env::var("KERNPACK_BENCH_CHUNK_MIB").unwrap_or_else(|_| "256".into());
        for mib in chunk_mib
            .split(',')
            .map(|s| s.trim().parse::<usize>().expect("MiB"))
        {
            let options = MultiGpuOptions {
                max_device_bytes: None,
                chunk_bytes: mib << 20,
            };
            let mut rates = Vec::new();
            for (label, sized) in [
                ("1 GPU", MultiGpu::new(&[0]).unwrap()),
                ("all GPUs", all.clone()),
            ] {
                let sized = sized.with_options(options);
                sized
                    .lombscargle_batch_peaks(&batch, &grids, &opts)
                    .unwrap(); // staging of this size
                let started = Instant::now();
                let (peaks, profiles) = sized
                    .lombscargle_batch_peaks_profiled(&batch, &grids, &opts)
                    .unwrap();
                let wall = started.elapsed().as_secs_f64();
                assert_eq!(peaks, results[0].0);
                println!(
                    "  {n:>8} series, {label}, chunks of {mib} MiB ({} chunks per GPU), staging kept: \
                     {wall:.3} s, {:.0} light curves/s; kernels (events, summed per GPU) {:.1} ms",
                    profiles[0].plan.chunks.len(),
                    n as f64 / wall,
                    profiles[0].kernel_ms
                );
                rates.push(n as f64 / wall);
                sized.release_staging();
            }
            println!(
                "  {n:>8} series, chunks of {mib} MiB: all GPUs / 1 GPU = {:.2}x",
                rates[1] / rates[0]
            );
        }
        // The device-resident rate: the whole batch already on GPU 0, the
        // peaks in chunks of series on one stream (what device arrays get).
        let gpu = one.gpus()[0].clone();
        let stream = gpu.stream();
        let (dt, dy) = (
            stream.clone_htod(batch.t).unwrap(),
            stream.clone_htod(batch.y).unwrap(),
        );
        let offs: Vec<i64> = batch.offsets.iter().map(|&o| o as i64).collect();
        let doff = stream.clone_htod(&offs).unwrap();
        let (df0, ddf) = (
            stream.clone_htod(&[0.01f64]).unwrap(),
            stream.clone_htod(&[0.005f64]).unwrap(),
        );
        let (dindex, dvalue) = (
            stream.alloc_zeros::<i64>(n).unwrap(),
            stream.alloc_zeros::<f64>(n).unwrap(),
        );
        let ptr = |p: (u64, _)| p.0;
        let buffers = BatchDeviceBuffers {
            t: ptr(dt.device_ptr(stream)),
            y: ptr(dy.device_ptr(stream)),
            weights: None,
            offsets: ptr(doff.device_ptr(stream)),
            f0: ptr(df0.device_ptr(stream)),
            df: ptr(ddf.device_ptr(stream)),
            per_series_grid: false,
            out: 0,
        };
        let peak_buffers = PeakBuffers {
            index: ptr(dindex.device_ptr(stream)),
            value: ptr(dvalue.device_ptr(stream)),
        };
        let mut times = Vec::new();
        for _ in 0..3 {
            stream.synchronize().unwrap();
            let started = Instant::now();
            unsafe {
                let batch = LombScargleBatchOnDevice::<f32> {
                    buffers,
                    nseries: n,
                    nf,
                    opts,
                    dtype: std::marker::PhantomData,
                };
                let op = LombScarglePeaksOnDevice {
                    batch,
                    peaks: peak_buffers,
                    max_scratch_bytes: None,
                };
                gpu.enqueue(stream, &op)
            }
            .unwrap();
            stream.synchronize().unwrap();
            times.push(started.elapsed().as_secs_f64());
        }
        let best = times.iter().copied().fold(f64::INFINITY, f64::min);
        let index = stream.clone_dtoh(&dindex).unwrap();
        assert!(index
            .iter()
            .zip(&results[0].0)
            .all(|(&i, p)| p.map(|p| p.index as i64) == Some(i)));
        println!(
            "  {n:>8} series on the device already (LombScarglePeaksOnDevice, best of 3): \
             {best:.3} s, {:.0} light curves/s; the host pipeline's first call ran at {:.0}% of it",
            n as f64 / best,
            100.0 * best * results[0].1 / n as f64
        );
    }
}

/// Light curves per second for one GPU against all of them, on synthetic
/// surveys of 100-300 samples per series, 10^4 frequencies, f32. Prints the
/// wall time of the host-slice call (copies, pipeline and gathering into one
/// vector per series included) and, per GPU, the CUDA-event times of the
/// copies and kernels summed over chunks (two streams overlap, so their sum
/// can exceed the wall time).
#[test]
#[ignore = "benchmark: run on the GPU machine with --ignored --nocapture"]
fn bench_multi_gpu_batch() {
    let Some(all) = gpus_or_skip("bench_multi_gpu_batch", 1) else {
        return;
    };
    let sizes: Vec<usize> = std::env::var("KERNPACK_BENCH_SERIES")
        .unwrap_or_else(|_| "100000,1000000".into())
        .split(',')
        .map(|s| s.trim().parse().expect("KERNPACK_BENCH_SERIES: counts"))
        .collect();
    let nf = 10_000;
    let max = *sizes.iter().max().unwrap();
    let started = Instant::now();
    let (t, y, offsets) = survey_curves(max);
    println!(
        "bench_multi_gpu_batch: {max} series, {} samples, generated in {:.1} s; nf = {nf}, f32, \
         shared grid, power; {} GPU(s): {}",
        t.len(),
        started.elapsed().as_secs_f64(),
        all.len(),
        all.gpus()
            .iter()
            .map(|g| format!("{} {}", g.ordinal(), g.name()))
            .collect::<Vec<_>>()
            .join(", ")
    );
    let grids = BatchGrid::Shared(UniformGrid::new(0.01, 0.005, nf));
    let opts = LombScargleOptions::default();
    let one = MultiGpu::new(&[0]).unwrap();
    // Warm-up: module loads, streams, memory pools.
    {
        let batch = Batch {
            t: &t[..offsets[2000]],
            y: &y[..offsets[2000]],
            weights: None,
            offsets: &offsets[..=2000],
        };
        one.lombscargle_batch(&batch, &grids, &opts).unwrap();
        all.lombscargle_batch(&batch, &grids, &opts).unwrap();
    }
    // A sample of the output's bits (every 97th series whole, and the first
    // value of every series), to check one GPU against all without keeping both.
    let digest = |out: &[Periodogram<f32>]| -> u64 {
        let mut h = 0xcbf2_9ce4_8422_2325u64;
        let mut mix = |v: f32| {
            h ^= v.to_bits() as u64;
            h = h.wrapping_mul(0x100_0000_01b3);
        };
        for (s, p) in out.iter().enumerate() {
            let Periodogram::Real(v) = p else {
                unreachable!("power")
            };
            if s % 97 == 0 {
                v.iter().for_each(|&x| mix(x));
            } else {
                mix(v[0]);
            }
        }
        h
    };
    for &n in &sizes {
        let batch = Batch {
            t: &t[..offsets[n]],
            y: &y[..offsets[n]],
            weights: None,
            offsets: &offsets[..=n],
        };
        let mut digests = Vec::new();
        let mut rates = Vec::new();
        for (label, multi) in [("1 GPU", &one), ("all GPUs", &all)] {
            let started = Instant::now();
            let (out, profiles) = multi
                .lombscargle_batch_profiled(&batch, &grids, &opts)
                .unwrap();
            let wall = started.elapsed().as_secs_f64();
            assert_eq!(out.len(), n);
            rates.push(n as f64 / wall);
            println!(
                "  {n:>8} series, {label:<8} ({} GPU): {wall:8.3} s wall, {:12.0} light curves/s",
                profiles.len(),
                n as f64 / wall
            );
            for p in &profiles {
                println!(
                    "      GPU {}: {:>7} series in {:>4} chunks, arenas {:.0} MiB (limit {:.0} MiB); \
                     h2d {:8.1} ms, kernels {:8.1} ms, d2h {:8.1} ms (events, summed); \
                     host pack/unpack {:8.1} ms; thread {:8.1} ms",
                    p.plan.ordinal,
                    p.plan.items.len(),
                    p.plan.chunks.len(),
                    (p.plan.arena_bytes[0] + p.plan.arena_bytes[1]) as f64 / (1 << 20) as f64,
                    p.plan.max_device_bytes as f64 / (1 << 20) as f64,
                    p.h2d_ms,
                    p.kernel_ms,
                    p.d2h_ms,
                    p.host_ms,
                    p.wall_ms
                );
            }
            let gpu_bound = profiles.iter().map(|p| p.kernel_ms).fold(0.0f64, f64::max);
            println!(
                "      kernels alone: {:.0} light curves/s (slowest GPU's summed kernel time)",
                n as f64 / (gpu_bound / 1e3)
            );
            digests.push(digest(&out));
            let drop_started = Instant::now();
            drop(out);
            println!(
                "      (freeing the {n} result vectors took {:.2} s, not counted)",
                drop_started.elapsed().as_secs_f64()
            );
        }
        assert_eq!(digests[0], digests[1], "one GPU and all GPUs differ");
        println!(
            "  {n:>8} series: all GPUs / 1 GPU = {:.2}x",
            rates[1] / rates[0]
        );
        // The one-launch path of a single GPU, for scale (its output must fit
        // in device memory at once).
        if n * nf * 4 <= 8 << 30 {
            let gpu0 = Gpu::get(0).unwrap();
            let started = Instant::now();
            let out = in_one_piece(&gpu0, LombScargleBatch { batch, grids, opts }).unwrap();
            let wall = started.elapsed().as_secs_f64();
            assert_eq!(digest(&out), digests[0], "Gpu::lombscargle_batch differs");
            println!(
                "  {n:>8} series, Gpu::lombscargle_batch (one launch, no pipeline): {wall:8.3} s, \
                 {:12.0} light curves/s",
                n as f64 / wall
            );
        }
    }
}
