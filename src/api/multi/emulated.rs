//! Unit tests of the multi-GPU calls without a GPU: CPU code (the backend or the reference) stands
//! in for the kernels ([`ChunkJob::emulate`]), and everything else is the
//! real code path (validation, split, chunk plan, arena layouts, packing
//! into a host buffer, the copies in and out as byte ranges between a host
//! and a separate "device" buffer, and the gather), against the CPU backend
//! of the one-GPU API on the whole batch.
use std::ops::Range;

use super::{ChunkJob, GpuPlan, GpuProfile};
use crate::error::Result;

/// `len` bytes, 8-byte aligned (as the pinned and device arenas are, and
/// more), filled with `fill`.
fn aligned(len: usize, fill: u8) -> Vec<u64> {
    vec![u64::from_ne_bytes([fill; 8]); len.div_ceil(8)]
}

fn bytes(words: &mut [u64], len: usize) -> &mut [u8] {
    assert!(len <= words.len() * 8);
    // SAFETY: u64 storage viewed as bytes, within its length.
    unsafe { std::slice::from_raw_parts_mut(words.as_mut_ptr().cast::<u8>(), len) }
}

/// [`super::Exec::run`] with the reference in place of each GPU: plans one
/// after the other, chunks in order, as the pipeline reads them back.
pub(super) fn run<J, O, U>(
    job: &J,
    plans: &[GpuPlan],
    outs: Vec<O>,
    unpack: U,
) -> Result<Vec<GpuProfile>>
where
    J: ChunkJob,
    U: Fn(&mut O, &Range<usize>, Range<usize>, &J::Layout, &[u8]) -> Result<()>,
{
    let mut profiles = Vec::new();
    for (plan, mut out) in plans.iter().zip(outs) {
        for (k, chunk) in plan.chunks.iter().enumerate() {
            let (layout, regions) = job.layout(chunk.clone(), 0);
            assert!(
                regions.total <= plan.arena_bytes[k % 2],
                "chunk {k} needs more than its buffer set"
            );
            assert!(regions.h2d.end <= regions.total && regions.d2h.end <= regions.total);
            // Garbage everywhere a real arena could hold some: NaN-ish bytes
            // on the "device", other bytes in the staging.
            let (mut host_words, mut dev_words) =
                (aligned(regions.total, 0x5a), aligned(regions.total, 0xff));
            // The pinned mirror covers the copied part only, as on a GPU.
            let host = bytes(&mut host_words, regions.staging());
            let dev = bytes(&mut dev_words, regions.total);
            job.pack(chunk, &layout, host);
            dev[regions.h2d.clone()].copy_from_slice(&host[regions.h2d.clone()]);
            job.emulate(chunk, &layout, dev);
            host[regions.d2h.clone()].copy_from_slice(&dev[regions.d2h.clone()]);
            unpack(&mut out, chunk, plan.local(chunk), &layout, host)?;
        }
        profiles.push(GpuProfile {
            plan: plan.clone(),
            ..GpuProfile::default()
        });
    }
    Ok(profiles)
}

#[cfg(test)]
mod tests {
    use super::super::test_data::ragged;
    use super::super::{ensemble, lombscargle, normalize, Exec};
    use crate::api::exec::Operation;
    use crate::api::lombscargle::batch::{Batch, BatchGrid, LombScargleBatch};
    use crate::api::lombscargle::peaks::{
        LombScargleBatchPeaks, LombScargleBatchTopPeaks, Peak, PeakOptions,
    };
    use crate::api::lombscargle::{LombScargleOptions, Normalize, UniformGrid};
    use crate::api::lorenz::{EnsembleRun, MemberParams};
    use crate::api::reduce_batched::NormalizeBatched;
    use crate::test_rng::Rng;
    use crate::{Backend, Error, Kernpack, Lorenz05Model, Lorenz05Params, Lorenz96Params};

    fn exec(parts: usize, max_device_bytes: usize, chunk_bytes: usize) -> Exec<'static> {
        Exec::Emulated {
            parts,
            max_device_bytes,
            chunk_bytes,
        }
    }

    #[test]
    fn lombscargle_batch_split_and_chunked_equals_the_whole_batch() {
        let cpu = Kernpack::new(Backend::Cpu).unwrap();
        let d = ragged(150, 5..45, 3);
        let nf = 37;
        for (weights, per_series, mode) in [
            (true, true, Normalize::Power),
            (false, false, Normalize::Amplitude),
            (true, false, Normalize::Normalize),
        ] {
            let batch = Batch {
                t: &d.t,
                y: &d.y,
                weights: weights.then_some(d.w.as_slice()),
                offsets: &d.offsets,
            };
            let grids = if per_series {
                BatchGrid::PerSeries {
                    f0: &d.f0,
                    df: &d.df,
                    nf,
                }
            } else {
                BatchGrid::Shared(UniformGrid::new(0.1, 0.02, nf))
            };
            let opts = LombScargleOptions {
                normalize: mode,
                floating_mean: true,
                precenter: false,
            };
            let want = cpu.lombscargle_batch(&batch, &grids, &opts).unwrap();
            let want_peaks: Vec<Option<Peak>> = want.iter().map(Peak::of).collect();
            assert!(want_peaks.iter().all(Option::is_some));
            let cpu_peaks = cpu.lombscargle_batch_peaks(&batch, &grids, &opts).unwrap();
            assert_eq!(cpu_peaks, want_peaks, "the CPU backend's peaks mode");
            for (parts, limit, chunk) in [
                (1, 1 << 30, 1 << 30),
                (2, 1 << 30, 1 << 30),
                (3, 16 << 10, 1 << 30),
                (4, 1 << 30, 2000),
                (7, 6000, 3000),
            ] {
                let op = LombScargleBatch { batch, grids, opts };
                let (got, profiles) =
                    lombscargle::lombscargle_batch(&exec(parts, limit, chunk), op).unwrap();
                assert_eq!(got, want, "{parts} parts, limit {limit}, chunks of {chunk}");
                let covered: usize = profiles.iter().map(|p| p.plan.items.len()).sum();
                assert_eq!(covered, 150);
                for p in &profiles {
                    let [a, b] = p.plan.arena_bytes;
                    assert!(a + b <= limit, "{:?}", p.plan);
                }
                if limit == 16 << 10 {
                    assert!(profiles.iter().all(|p| p.plan.chunks.len() > 3));
                }
                // Peaks mode: the same split and chunks, only peaks back.
                let op = LombScargleBatchPeaks { batch, grids, opts };
                let (peaks, _) =
                    lombscargle::lombscargle_batch_peaks(&exec(parts, limit, chunk), op).unwrap();
                assert_eq!(
                    peaks, want_peaks,
                    "{parts} parts, limit {limit}, chunks of {chunk}"
                );
                // Best peaks: the CPU backend's.
                if mode != Normalize::Amplitude {
                    let top = PeakOptions {
                        k: 4,
                        separation: 0.05,
                    };
                    let op = LombScargleBatchTopPeaks {
                        batch,
                        grids,
                        opts,
                        peaks: top,
                    };
                    let (got, _) =
                        lombscargle::lombscargle_batch_top_peaks(&exec(parts, limit, chunk), op)
                            .unwrap();
                    let want = cpu.lombscargle_batch_top_peaks(&batch, &grids, &opts, &top);
                    assert_eq!(got, want.unwrap(), "top peaks: {parts} parts");
                }
            }
        }
    }

    /// PDM and conditional entropy in chunks over stand-in GPUs equal the
    /// CPU backend's whole batch bit for bit.
    #[test]
    fn phase_fold_batch_split_and_chunked_equals_the_whole_batch() {
        use crate::api::phasefold::{
            CeOptions, FoldBatch, FoldFreqs, PdmOptions, PeakOptions, PhaseFoldBatch,
            PhaseFoldBatchPeaks, Statistic,
        };
        let cpu = Kernpack::new(Backend::Cpu).unwrap();
        let d = ragged(120, 3..60, 9);
        let freqs: Vec<f32> = (0..37).map(|k| 0.05 + 0.031 * k as f32).collect();
        let ce = CeOptions {
            phase_overlap: 2,
            ..CeOptions::default()
        };
        for statistic in [
            Statistic::Pdm(PdmOptions::default()),
            Statistic::ConditionalEntropy(ce),
        ] {
            let batch = FoldBatch {
                t: &d.t,
                y: &d.y,
                dy: Some(d.w.as_slice()),
                offsets: &d.offsets,
            };
            let freqs = FoldFreqs::Array(&freqs);
            let want = cpu.phase_fold_batch(&batch, &freqs, &statistic).unwrap();
            let bits =
                |r: &[Vec<f32>]| -> Vec<u32> { r.iter().flatten().map(|v| v.to_bits()).collect() };
            for (parts, limit, chunk) in [
                (1, 1 << 30, 1 << 30),
                (2, 1 << 30, 1 << 30),
                (3, 24 << 10, 1 << 30),
                (5, 1 << 30, 4000),
            ] {
                let op = PhaseFoldBatch {
                    batch,
                    freqs,
                    statistic,
                };
                let (got, profiles) =
                    super::super::phasefold::fold_batch(&exec(parts, limit, chunk), op).unwrap();
                assert_eq!(
                    bits(&got),
                    bits(&want),
                    "{parts} parts, limit {limit}, chunks of {chunk}"
                );
                let covered: usize = profiles.iter().map(|p| p.plan.items.len()).sum();
                assert_eq!(covered, 120);
                // Only the peaks back: the CPU backend's peaks of the same values.
                let peaks = PeakOptions {
                    k: 4,
                    separation: 0.1,
                };
                let op = PhaseFoldBatchPeaks {
                    batch,
                    freqs,
                    statistic,
                    peaks,
                };
                let (got, _) =
                    super::super::phasefold::fold_batch_peaks(&exec(parts, limit, chunk), op)
                        .unwrap();
                let want = cpu.phase_fold_batch_peaks(&batch, &freqs, &statistic, &peaks);
                assert_eq!(
                    got,
                    want.unwrap(),
                    "peaks: {parts} parts, chunks of {chunk}"
                );
                assert!(got.iter().any(|p| p.len() == 4));
            }
        }
    }

    /// The BLS search in chunks over stand-in GPUs equals the CPU backend's
    /// whole batch bit for bit (the emulation runs the CPU backend's boxes).
    #[test]
    fn bls_batch_split_and_chunked_equals_the_whole_batch() {
        use crate::api::bls::{
            BlsBatch, BlsOptions, BlsResults, BlsSearchBatch, BlsSearchBatchPeaks, PeakOptions,
        };
        let cpu = Kernpack::new(Backend::Cpu).unwrap();
        let d = ragged(120, 3..60, 9);
        let periods: Vec<f32> = (0..23).map(|k| 1.5 + 0.37 * k as f32).collect();
        let durations = [0.2f32, 0.35, 0.5];
        let bits = |r: &[BlsResults<f32>]| -> Vec<Vec<u32>> {
            r.iter()
                .flat_map(|r| r.columns().map(|c| c.iter().map(|v| v.to_bits()).collect()))
                .collect()
        };
        for (dy, oversample) in [(true, 4), (false, 1)] {
            let batch = BlsBatch {
                t: &d.t,
                y: &d.y,
                dy: dy.then_some(d.w.as_slice()),
                offsets: &d.offsets,
            };
            let opts = BlsOptions {
                oversample,
                ..Default::default()
            };
            let want = cpu.bls_batch(&batch, &periods, &durations, &opts).unwrap();
            for (parts, limit, chunk) in [
                (1, 1 << 30, 1 << 30),
                (2, 1 << 30, 1 << 30),
                (3, 24 << 10, 1 << 30),
                (5, 1 << 30, 4000),
            ] {
                let op = BlsSearchBatch {
                    batch,
                    periods: &periods,
                    durations: &durations,
                    opts,
                };
                let (got, profiles) =
                    super::super::bls::bls_batch(&exec(parts, limit, chunk), op).unwrap();
                assert_eq!(
                    bits(&got),
                    bits(&want),
                    "{parts} parts, limit {limit}, chunks of {chunk}"
                );
                let covered: usize = profiles.iter().map(|p| p.plan.items.len()).sum();
                assert_eq!(covered, 120);
                if limit == 24 << 10 {
                    assert!(profiles.iter().all(|p| p.plan.chunks.len() > 2));
                }
                // Only the best periods back: the CPU backend's.
                let peaks = PeakOptions {
                    k: 3,
                    separation: 0.5,
                };
                let op = BlsSearchBatchPeaks {
                    batch,
                    periods: &periods,
                    durations: &durations,
                    opts,
                    peaks,
                };
                let (got, _) =
                    super::super::bls::bls_batch_peaks(&exec(parts, limit, chunk), op).unwrap();
                let want = cpu.bls_batch_peaks(&batch, &periods, &durations, &opts, &peaks);
                let want = want.unwrap();
                assert!(got.iter().any(|p| p.period_index.len() == 3));
                for (g, w) in got.iter().zip(&want) {
                    assert_eq!(g.period_index, w.period_index, "{parts} parts");
                    assert_eq!(
                        bits(std::slice::from_ref(&g.results)),
                        bits(std::slice::from_ref(&w.results))
                    );
                }
            }
        }
    }

    #[test]
    fn lombscargle_batch_split_follows_samples() {
        // 10 long series then 90 short ones: the first of two GPUs takes
        // fewer series than the second.
        let mut offsets = vec![0];
        for s in 0..100 {
            let n = if s < 10 { 90 } else { 10 };
            offsets.push(offsets.last().unwrap() + n);
        }
        let t: Vec<f64> = (0..offsets[100]).map(|i| i as f64 * 0.1).collect();
        let y: Vec<f64> = t.iter().map(|t| t.sin()).collect();
        let batch = Batch {
            t: &t,
            y: &y,
            weights: None,
            offsets: &offsets,
        };
        let grids = BatchGrid::Shared(UniformGrid::new(0.1, 0.1, 3));
        let opts = LombScargleOptions::default();
        let (_, profiles) = lombscargle::lombscargle_batch(
            &exec(2, 1 << 30, 1 << 30),
            LombScargleBatch { batch, grids, opts },
        )
        .unwrap();
        let items: Vec<_> = profiles.iter().map(|p| p.plan.items.clone()).collect();
        assert_eq!(items, vec![0..10, 10..100]);
    }

    #[test]
    fn a_series_over_half_the_limit_is_an_error_naming_it_and_the_gpu() {
        let d = ragged(20, 5..45, 5);
        let batch = Batch {
            t: &d.t,
            y: &d.y,
            weights: None,
            offsets: &d.offsets,
        };
        let grids = BatchGrid::Shared(UniformGrid::new(0.1, 0.02, 10_000));
        let opts = LombScargleOptions::default();
        let op = LombScargleBatch { batch, grids, opts };
        let err = lombscargle::lombscargle_batch(&exec(2, 40_000, 1 << 20), op).unwrap_err();
        let msg = err.to_string();
        assert!(matches!(err, Error::InvalidInput(_)), "{err:?}");
        assert!(msg.contains("GPU 0: series 0 alone needs"), "{msg}");
        // Invalid input is reported as the one-GPU call reports it.
        let mut bad = d.t.clone();
        bad[3] = f32::NAN;
        let batch = Batch { t: &bad, ..batch };
        let op = crate::api::lombscargle::batch::LombScargleBatch { batch, grids, opts };
        let err = Operation::validate(&op).unwrap_err();
        assert!(err.to_string().contains("series 0: t[3]"), "{err}");
    }

    #[test]
    fn lorenz_ensembles_split_and_chunked_equal_the_whole_ensemble() {
        let cpu = Kernpack::new(Backend::Cpu).unwrap();
        let plain = Lorenz96Params {
            n: 12,
            ..Default::default()
        };
        // Noise keyed by each member's index in the whole ensemble, and a
        // forcing per member and site: chunks must draw as the whole run.
        let forced = Lorenz96Params {
            forcing_in_state: true,
            noise: 0.5,
            seed: 77,
            ..plain
        };
        let mut rng = Rng(9);
        let members = 23;
        for (p, steps, every, save_at) in [
            (plain, 20, 0, &[][..]),
            (plain, 20, 3, &[]),
            (plain, 21, 7, &[]),
            (forced, 20, 3, &[]),
            (forced, 20, 0, &[0, 6, 20]),
            (plain, 21, 0, &[2, 3, 17]),
        ] {
            let values = members * p.values_per_member();
            let initial: Vec<f64> = (0..values).map(|_| 8.0 * rng.next()).collect();
            let want = match save_at.is_empty() {
                true => cpu.lorenz96(&p, &initial, steps, every),
                false => cpu.lorenz96_save_at(&p, &initial, steps, save_at),
            }
            .unwrap();
            for (parts, limit, chunk) in [
                (1, 1 << 30, 1 << 30),
                (2, 1 << 30, 1 << 30),
                (3, 6000, 1000),
                (5, 1, 1 << 30),
            ] {
                #[rustfmt::skip]
                let run = EnsembleRun { params: &p, each: Default::default(), initial: &initial, steps, every, save_at };
                let got = ensemble::ensemble(&exec(parts, limit, chunk), run);
                if limit == 1 {
                    let err = got.unwrap_err().to_string();
                    assert!(err.contains("GPU 0: member 0 alone needs"), "{err}");
                    continue;
                }
                let (got, profiles) = got.unwrap();
                assert_eq!(got, want, "{parts} parts, limit {limit}, every {every}");
                if limit == 6000 {
                    assert!(profiles.iter().all(|p| p.plan.chunks.len() > 1));
                }
            }
        }
        let p = Lorenz05Params {
            n: 40,
            k: 4,
            j: 2,
            model: Lorenz05Model::III,
            ..Default::default()
        };
        let initial: Vec<f32> = (0..9 * p.n).map(|_| (5.0 * rng.next()) as f32).collect();
        let want = cpu.lorenz05(&p, &initial, 10, 5).unwrap();
        #[rustfmt::skip]
        let run = EnsembleRun { params: &p, each: Default::default(), initial: &initial, steps: 10, every: 5, save_at: &[] };
        let (got, _) = ensemble::ensemble(&exec(4, 3000, 1 << 30), run).unwrap();
        assert_eq!(got, want);
        let save_at = [0, 4, 10];
        let want = cpu.lorenz05_save_at(&p, &initial, 10, &save_at).unwrap();
        #[rustfmt::skip]
        let run = EnsembleRun { params: &p, each: Default::default(), initial: &initial, steps: 10, every: 0, save_at: &save_at };
        let (got, _) = ensemble::ensemble(&exec(4, 3000, 1 << 30), run).unwrap();
        assert_eq!(got, want);
        // F, b, c per member: each chunk takes its members' slices.
        let draw = |rng: &mut Rng, lo: f64, hi: f64| -> Vec<f32> {
            (0..9)
                .map(|_| (lo + (hi - lo) * rng.next()) as f32)
                .collect()
        };
        let (f, b, c) = (
            draw(&mut rng, 8.0, 16.0),
            draw(&mut rng, 5.0, 12.0),
            draw(&mut rng, 1.0, 4.0),
        );
        for each in [
            MemberParams {
                forcing: Some(&f[..]),
                b: Some(&b[..]),
                c: Some(&c[..]),
            },
            MemberParams {
                b: Some(&b[..]),
                ..Default::default()
            },
        ] {
            let want = cpu.lorenz05_each(&p, &each, &initial, 10, 5).unwrap();
            for (parts, limit) in [(1, 1 << 30), (4, 8000), (2, 8000), (3, 1 << 30)] {
                #[rustfmt::skip]
                let run = EnsembleRun { params: &p, each, initial: &initial, steps: 10, every: 5, save_at: &[] };
                let (got, _) = ensemble::ensemble(&exec(parts, limit, 1 << 30), run).unwrap();
                assert_eq!(got, want, "{parts} parts, limit {limit}");
            }
            // And at chosen steps: the chunks' segments keep their members' values.
            let want = cpu
                .lorenz05_each_save_at(&p, &each, &initial, 10, &save_at)
                .unwrap();
            for (parts, limit) in [(1, 1 << 30), (4, 8000), (3, 1 << 30)] {
                #[rustfmt::skip]
                let run = EnsembleRun { params: &p, each, initial: &initial, steps: 10, every: 0, save_at: &save_at };
                let (got, _) = ensemble::ensemble(&exec(parts, limit, 1 << 30), run).unwrap();
                assert_eq!(got, want, "save_at, {parts} parts, limit {limit}");
            }
        }
    }

    /// Lorenz 63 over stand-in GPUs, in chunks: each chunk with its slice
    /// of the per-member parameters, its saved frames gathered into frames x
    /// members x 3; bit for bit the CPU backend's whole ensemble.
    #[test]
    fn lorenz63_ensembles_split_and_chunked_equal_the_whole_ensemble() {
        use crate::api::lorenz63::{Lorenz63Params, Lorenz63Run, PerMember};
        let cpu = Kernpack::new(Backend::Cpu).unwrap();
        let mut rng = Rng(63);
        let members = 37;
        let initial: Vec<f64> = (0..3 * members).map(|_| rng.range(-15.0, 15.0)).collect();
        let draw = |rng: &mut Rng, lo: f64, hi: f64| -> Vec<f64> {
            (0..members).map(|_| rng.range(lo, hi)).collect()
        };
        let (sigma, rho, beta) = (
            draw(&mut rng, 8.0, 12.0),
            draw(&mut rng, 20.0, 35.0),
            draw(&mut rng, 2.0, 3.0),
        );
        let classic = Lorenz63Params::<&[f64]>::default();
        let each = Lorenz63Params {
            sigma: PerMember::Each(sigma.as_slice()),
            rho: PerMember::Each(rho.as_slice()),
            beta: PerMember::Each(beta.as_slice()),
            dt: 0.005,
        };
        // One per member, the others shared.
        let mixed = Lorenz63Params {
            rho: PerMember::Each(rho.as_slice()),
            ..classic
        };
        for (p, steps, save_at) in [
            (classic, 40, &[][..]),
            (each, 40, &[0, 7, 40][..]),
            (mixed, 41, &[13][..]),
            (each, 0, &[0][..]),
        ] {
            let want = cpu.lorenz63(&p, &initial, steps, save_at).unwrap();
            assert_eq!(want.saved.len(), save_at.len() * initial.len());
            for (parts, limit, chunk) in [
                (1, 1 << 30, 1 << 30),
                (2, 1 << 30, 1 << 30),
                (3, 4000, 1 << 30),
                (3, 1 << 30, 600),
                (5, 1 << 30, 300),
                (40, 1 << 30, 1 << 30),
                (4, 1, 1 << 30),
            ] {
                #[rustfmt::skip]
                let run = Lorenz63Run { params: p, initial: &initial, steps, save_at };
                let got = ensemble::lorenz63(&exec(parts, limit, chunk), run);
                if limit == 1 {
                    let err = got.unwrap_err().to_string();
                    assert!(err.contains("GPU 0: member 0 alone needs"), "{err}");
                    continue;
                }
                let (got, profiles) = got.unwrap();
                let what = format!("{parts} parts, limit {limit}, chunks of {chunk}, {save_at:?}");
                assert_eq!(got, want, "{what}");
                let covered: usize = profiles.iter().map(|p| p.plan.items.len()).sum();
                assert_eq!(covered, members, "{what}");
                for p in &profiles {
                    let [a, b] = p.plan.arena_bytes;
                    assert!(a + b <= limit, "{what}: {:?}", p.plan);
                }
                if chunk <= 600 {
                    assert!(
                        profiles.iter().all(|p| p.plan.chunks.len() > 1),
                        "{what}: {profiles:?}"
                    );
                }
            }
        }
        // f32, with per-member sigma only.
        let initial: Vec<f32> = initial.iter().map(|&v| v as f32).collect();
        let sigma: Vec<f32> = sigma.iter().map(|&v| v as f32).collect();
        let p = Lorenz63Params {
            sigma: PerMember::Each(sigma.as_slice()),
            ..Lorenz63Params::default()
        };
        let want = cpu.lorenz63(&p, &initial, 25, &[5, 25]).unwrap();
        #[rustfmt::skip]
        let run = Lorenz63Run { params: p, initial: &initial, steps: 25, save_at: &[5, 25] };
        let (got, _) = ensemble::lorenz63(&exec(3, 4000, 1 << 30), run).unwrap();
        assert_eq!(got, want);
    }

    /// An adaptive run's results as bits (NaN at the save times after a
    /// stop compares equal to itself).
    #[allow(clippy::type_complexity)]
    fn adaptive_bits<T: crate::Float>(
        r: &crate::Lorenz63AdaptiveEnsemble<T>,
    ) -> (
        usize,
        Vec<u64>,
        Vec<u64>,
        Vec<u64>,
        Vec<u32>,
        Vec<u32>,
        Vec<u32>,
    ) {
        let bits = |v: &[T]| v.iter().map(|x| x.to_f64().to_bits()).collect();
        (
            r.members,
            bits(&r.final_state),
            bits(&r.saved),
            r.save_times.iter().map(|t| t.to_bits()).collect(),
            r.accepted.clone(),
            r.rejected.clone(),
            r.status.iter().map(|&s| s as u32).collect(),
        )
    }

    /// The median of the members' attempted steps in `run`.
    fn median_attempts<T>(run: &crate::Lorenz63AdaptiveEnsemble<T>) -> u32 {
        let mut attempts: Vec<u32> = (run.accepted.iter().zip(&run.rejected))
            .map(|(a, r)| a + r)
            .collect();
        attempts.sort_unstable();
        attempts[attempts.len() / 2]
    }

    /// Adaptive Lorenz 63 over stand-in GPUs, in chunks: each chunk with its
    /// slice of the per-member parameters and a copy of the save times, its
    /// saved frames and its members' steps and statuses gathered; bit for bit
    /// the CPU backend's whole ensemble, members that stop early (few steps
    /// allowed, or a state that overflows) in some chunks and not in others.
    #[test]
    fn lorenz63_adaptive_ensembles_split_and_chunked_equal_the_whole_ensemble() {
        use crate::api::lorenz63::{
            AdaptiveControl, AdaptiveStatus, Lorenz63AdaptiveParams, Lorenz63AdaptiveRun, PerMember,
        };
        let cpu = Kernpack::new(Backend::Cpu).unwrap();
        let mut rng = Rng(6363);
        let members = 37;
        let initial: Vec<f64> = (0..3 * members).map(|_| rng.range(-15.0, 15.0)).collect();
        let draw = |rng: &mut Rng, lo: f64, hi: f64| -> Vec<f64> {
            (0..members).map(|_| rng.range(lo, hi)).collect()
        };
        let (sigma, rho, beta) = (
            draw(&mut rng, 8.0, 12.0),
            draw(&mut rng, 20.0, 35.0),
            draw(&mut rng, 2.0, 3.0),
        );
        let classic = Lorenz63AdaptiveParams::<&[f64]>::default();
        let tight = AdaptiveControl {
            rtol: 1e-7,
            atol: 1e-9,
            ..AdaptiveControl::default()
        };
        let each = Lorenz63AdaptiveParams {
            sigma: PerMember::Each(sigma.as_slice()),
            rho: PerMember::Each(rho.as_slice()),
            beta: PerMember::Each(beta.as_slice()),
            t0: 0.25,
            t_end: 1.25,
            control: tight,
        };
        // One per member, the others shared; a given first step and a largest one.
        let mixed = Lorenz63AdaptiveParams {
            rho: PerMember::Each(rho.as_slice()),
            control: AdaptiveControl {
                first_step: Some(1e-3),
                max_step: 0.05,
                ..tight
            },
            ..classic
        };
        // Few attempts allowed (the median of the members' in a full run):
        // about half reach t_end, the others stop with their last state
        // (NaN at the later save times).
        let max_steps = median_attempts(&cpu.lorenz63_adaptive(&each, &initial, &[]).unwrap());
        let stopping = Lorenz63AdaptiveParams {
            control: AdaptiveControl { max_steps, ..tight },
            ..each
        };
        let empty_span = Lorenz63AdaptiveParams {
            t_end: 0.25,
            ..each
        };
        for (p, save_times) in [
            (classic, &[][..]),
            (each, &[0.25, 0.5, 1.0, 1.25][..]),
            (mixed, &[0.3][..]),
            (stopping, &[0.3, 0.75, 1.25][..]),
            (empty_span, &[0.25][..]),
        ] {
            let want = cpu.lorenz63_adaptive(&p, &initial, save_times).unwrap();
            assert_eq!(want.saved.len(), save_times.len() * initial.len());
            let stopped = want
                .status
                .iter()
                .filter(|s| **s != AdaptiveStatus::Reached);
            if p.control.max_steps == max_steps {
                // Both kinds of members, spread over the chunks below.
                let stopped = stopped.count();
                assert!(stopped > 3 && stopped < members - 3, "{:?}", want.status);
                assert!(want.saved.iter().any(|v| v.is_nan()));
            } else {
                assert_eq!(stopped.count(), 0, "{:?}", want.status);
            }
            for (parts, limit, chunk) in [
                (1, 1 << 30, 1 << 30),
                (2, 1 << 30, 1 << 30),
                (3, 6000, 1 << 30), // 8 buffers of a member: 2 KB with their alignment
                (3, 1 << 30, 600),
                (5, 1 << 30, 300),
                (40, 1 << 30, 1 << 30),
                (4, 1, 1 << 30),
            ] {
                #[rustfmt::skip]
                let run = Lorenz63AdaptiveRun { params: p, initial: &initial, save_times };
                let got = ensemble::lorenz63_adaptive(&exec(parts, limit, chunk), run);
                if limit == 1 {
                    let err = got.unwrap_err().to_string();
                    assert!(err.contains("GPU 0: member 0 alone needs"), "{err}");
                    continue;
                }
                let (got, profiles) = got.unwrap();
                let what =
                    format!("{parts} parts, limit {limit}, chunks of {chunk}, {save_times:?}");
                assert_eq!(adaptive_bits(&got), adaptive_bits(&want), "{what}");
                let covered: usize = profiles.iter().map(|p| p.plan.items.len()).sum();
                assert_eq!(covered, members, "{what}");
                for p in &profiles {
                    let [a, b] = p.plan.arena_bytes;
                    assert!(a + b <= limit, "{what}: {:?}", p.plan);
                }
                if chunk <= 600 {
                    assert!(
                        profiles.iter().all(|p| p.plan.chunks.len() > 1),
                        "{what}: {profiles:?}"
                    );
                }
            }
        }
        // f32, with per-member sigma only and one member whose state
        // overflows (it stops with a step size too small).
        let mut initial: Vec<f32> = initial.iter().map(|&v| v as f32).collect();
        initial[3 * 20..3 * 21].copy_from_slice(&[1e30, -1e30, 1e30]);
        let sigma: Vec<f32> = sigma.iter().map(|&v| v as f32).collect();
        let mut p = Lorenz63AdaptiveParams {
            sigma: PerMember::Each(sigma.as_slice()),
            control: AdaptiveControl {
                rtol: 1e-5,
                atol: 1e-6,
                ..AdaptiveControl::default()
            },
            ..Lorenz63AdaptiveParams::default()
        };
        p.control.max_steps = median_attempts(&cpu.lorenz63_adaptive(&p, &initial, &[]).unwrap());
        let save_times = [0.125, 1.0];
        let want = cpu.lorenz63_adaptive(&p, &initial, &save_times).unwrap();
        let statuses = [
            AdaptiveStatus::Reached,
            AdaptiveStatus::MaxSteps,
            AdaptiveStatus::StepTooSmall,
        ];
        for status in statuses {
            assert!(
                want.status.contains(&status),
                "{status:?}: {:?}",
                want.status
            );
        }
        for (parts, chunk) in [(3, 1 << 30), (2, 200)] {
            #[rustfmt::skip]
            let run = Lorenz63AdaptiveRun { params: p, initial: &initial, save_times: &save_times };
            let (got, _) = ensemble::lorenz63_adaptive(&exec(parts, 6000, chunk), run).unwrap();
            assert_eq!(adaptive_bits(&got), adaptive_bits(&want), "{parts} parts");
        }
    }

    #[test]
    fn normalize_batched_split_and_chunked_equals_the_whole_batch() {
        let mut rng = Rng(4);
        let mut offsets = vec![0usize];
        for a in 0..60 {
            // Empty arrays, arrays of zeros and long ones mixed.
            let len = match a % 7 {
                0 => 0,
                1 => 3,
                _ => (rng.next() * 900.0) as usize,
            };
            offsets.push(offsets.last().unwrap() + len);
        }
        let n = *offsets.last().unwrap();
        let mut x: Vec<f32> = (0..n).map(|_| rng.next() as f32).collect();
        for a in (1..60).step_by(7) {
            x[offsets[a]..offsets[a + 1]].fill(0.0);
        }
        let cpu = Kernpack::new(Backend::Cpu).unwrap();
        let mut want_x = x.clone();
        let want = cpu.normalize_batched(&mut want_x, &offsets).unwrap();
        assert!(!want.failed.is_empty());
        for (parts, limit, chunk) in [
            (1, 1 << 30, 1 << 30),
            (2, 1 << 30, 1 << 30),
            (3, 12_000, 3000),
            (8, 20_000, 1 << 30),
        ] {
            let mut got_x = x.clone();
            let run = NormalizeBatched {
                x: &mut got_x,
                offsets: &offsets,
            };
            let (got, profiles) =
                normalize::normalize_batched(&exec(parts, limit, chunk), run).unwrap();
            assert_eq!(got, want, "{parts} parts, limit {limit}");
            assert_eq!(got_x, want_x, "{parts} parts, limit {limit}");
            if limit == 12_000 {
                assert!(profiles.iter().all(|p| p.plan.chunks.len() > 2));
            }
        }
        // An error (an array too large for the limit) leaves x untouched.
        let mut got_x = x.clone();
        let run = NormalizeBatched {
            x: &mut got_x,
            offsets: &offsets,
        };
        let err = normalize::normalize_batched(&exec(2, 1000, 1 << 30), run).unwrap_err();
        assert!(err.to_string().contains("array"), "{err}");
        assert_eq!(got_x, x);
        // Bad offsets: an error before anything runs.
        let offsets = &[0, 5, 2];
        let op = NormalizeBatched {
            x: &mut got_x,
            offsets,
        };
        let err = Operation::validate(&op).unwrap_err();
        assert!(matches!(err, Error::InvalidInput(_)), "{err:?}");
    }
}
