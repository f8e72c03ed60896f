//! Batched ragged series: one launch gives what one call per series gives.
mod common;

use common::{flat, gpu_or_skip, ragged};
use cudarc::driver::DevicePtr;
use kernpack::api::lombscargle::batch::{validate_batch, Batch, BatchDeviceBuffers, BatchGrid};
use kernpack::api::lombscargle::peaks::{Peak, PeakBuffers};
use kernpack::api::lombscargle::UniformGrid;
use kernpack::{
    Backend, Float, Kernpack, LombScargleBatchOnDevice, LombScargleOptions,
    LombScarglePeaksOnDevice, MultiGpu, MultiGpuOptions, Normalize,
};

fn batch<'a, T>(t: &'a [T], y: &'a [T], w: &'a [T], offsets: &'a [usize]) -> Batch<'a, T> {
    Batch {
        t,
        y,
        weights: Some(w),
        offsets,
    }
}

#[test]
fn cpu_batch_equals_one_call_per_series() {
    let kp = Kernpack::new(Backend::Cpu).unwrap();
    let d = ragged(7, 16, 90, 3);
    let grids = BatchGrid::PerSeries {
        f0: &d.f0,
        df: &d.df,
        nf: 333,
    };
    let opts = LombScargleOptions {
        normalize: Normalize::Normalize,
        floating_mean: true,
        precenter: false,
    };
    let b = batch(&d.t, &d.y, &d.w, &d.offsets);
    let all = kp.lombscargle_batch(&b, &grids, &opts).unwrap();
    assert_eq!(all.len(), 7);
    for (s, got) in all.iter().enumerate() {
        let one = kp
            .lombscargle_uniform(&b.series(s), &grids.grid(s), &opts)
            .unwrap();
        assert_eq!(got, &one, "series {s}");
    }
}

#[test]
fn bad_batches_are_rejected() {
    let d = ragged(3, 16, 40, 5);
    let opts = LombScargleOptions::default();
    let shared = BatchGrid::Shared(UniformGrid::new(0.1, 0.01, 100));
    let check = |offsets: &[usize], grids: &BatchGrid, needle: &str| {
        let b = batch(&d.t, &d.y, &d.w, offsets);
        let err = validate_batch(&b, grids, &opts).unwrap_err().to_string();
        assert!(err.contains(needle), "{err} should mention {needle:?}");
    };
    let n = d.t.len();
    check(&[0, n - 1], &shared, "end at");
    check(&[1, n], &shared, "start at");
    check(&[0, 5, 5, n], &shared, "series 1 is empty");
    check(
        &d.offsets,
        &BatchGrid::PerSeries {
            f0: &d.f0[..2],
            df: &d.df,
            nf: 10,
        },
        "3 series but 2 f0",
    );
    check(
        &d.offsets,
        &BatchGrid::Shared(UniformGrid::new(0.1, -0.01, 100)),
        "series 0: grid df",
    );
    let mut y = d.y.clone();
    y[d.offsets[2] + 1] = f64::NAN;
    let b = batch(&d.t, &y, &d.w, &d.offsets);
    let err = validate_batch(&b, &shared, &opts).unwrap_err().to_string();
    assert!(err.contains("series 2") && err.contains("y[1]"), "{err}");
}

/// The batched kernel runs the same chunks as the single-series one, so each
/// periodogram must be bitwise the one a separate call gives.
fn gpu_batch_is_bitwise_per_series<T: Float>(normalize: Normalize, floating_mean: bool) {
    let Some(gpu) = gpu_or_skip("gpu_batch_is_bitwise_per_series") else {
        return;
    };
    let d = ragged(300, 20, 400, 11);
    let cast = |v: &[f64]| v.iter().map(|x| T::from_f64(*x)).collect::<Vec<T>>();
    let (t, y, w) = (cast(&d.t), cast(&d.y), cast(&d.w));
    let b = batch(&t, &y, &w, &d.offsets);
    let opts = LombScargleOptions {
        normalize,
        floating_mean,
        precenter: false,
    };
    for grids in [
        BatchGrid::PerSeries {
            f0: &d.f0,
            df: &d.df,
            nf: 2500,
        },
        BatchGrid::Shared(UniformGrid::new(0.02, 0.005, 700)),
    ] {
        let all = Kernpack::from(gpu.clone())
            .lombscargle_batch(&b, &grids, &opts)
            .unwrap();
        for (s, got) in all.iter().enumerate() {
            let one = Kernpack::from(gpu.clone())
                .lombscargle_uniform(&b.series(s), &grids.grid(s), &opts)
                .unwrap();
            let (g, o) = (flat(got), flat(&one));
            assert!(
                g.iter().all(|v| v.is_finite()),
                "series {s}: non-finite output"
            );
            assert!(
                g.iter().zip(&o).all(|(a, b)| a.to_bits() == b.to_bits()),
                "series {s} differs"
            );
        }
    }
}

#[test]
fn gpu_batch_f32_power() {
    gpu_batch_is_bitwise_per_series::<f32>(Normalize::Power, false);
}

#[test]
fn gpu_batch_f32_normalize_floating_mean() {
    gpu_batch_is_bitwise_per_series::<f32>(Normalize::Normalize, true);
}

#[test]
fn gpu_batch_f64_amplitude_floating_mean() {
    gpu_batch_is_bitwise_per_series::<f64>(Normalize::Amplitude, true);
}

/// A seed from the clock, printed, so every run draws fresh inputs and a
/// failure can be replayed.
fn fresh_seed(test: &str) -> u64 {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos() as u64;
    println!("{test}: seed {nanos}");
    nanos
}

/// The same peak: the same index and, but for 'amplitude' (a `hypot` on each
/// side: within 4 ulp), the same bits.
fn assert_same_peaks(got: &[Option<Peak>], want: &[Option<Peak>], amplitude: bool, what: &str) {
    assert_eq!(got.len(), want.len(), "{what}: count");
    for (s, (g, w)) in got.iter().zip(want).enumerate() {
        let (g, w) = (g.expect("a peak"), w.expect("a peak"));
        assert_eq!(g.index, w.index, "{what}: series {s}");
        if amplitude {
            assert!(
                (g.value - w.value).abs() <= 4.0 * f64::EPSILON * w.value.abs(),
                "{what}: series {s}"
            );
        } else {
            assert_eq!(g.value.to_bits(), w.value.to_bits(), "{what}: series {s}");
        }
    }
}

/// Peaks mode on the GPU, every route: host slices through the chunked
/// pipeline (a memory limit that makes many chunks), the default route of a
/// one-GPU handle, and device buffers with scratch for a few series at a time
/// into poisoned outputs. Each must give [`Peak::of`] of the periodogram the
/// one-launch batch computes.
fn gpu_peaks_are_those_of_the_periodograms<T: Float>(normalize: Normalize, floating_mean: bool) {
    let Some(gpu) = gpu_or_skip("gpu_peaks_are_those_of_the_periodograms") else {
        return;
    };
    let d = ragged(300, 20, 400, fresh_seed("gpu_peaks"));
    let cast = |v: &[f64]| v.iter().map(|x| T::from_f64(*x)).collect::<Vec<T>>();
    let (t, y, w) = (cast(&d.t), cast(&d.y), cast(&d.w));
    let b = batch(&t, &y, &w, &d.offsets);
    let opts = LombScargleOptions {
        normalize,
        floating_mean,
        precenter: false,
    };
    let amplitude = normalize == Normalize::Amplitude;
    for grids in [
        BatchGrid::PerSeries {
            f0: &d.f0,
            df: &d.df,
            nf: 2500,
        },
        BatchGrid::Shared(UniformGrid::new(0.02, 0.005, 700)),
    ] {
        let want: Vec<Option<Peak>> = Kernpack::from(gpu.clone())
            .lombscargle_batch(&b, &grids, &opts)
            .unwrap()
            .iter()
            .map(Peak::of)
            .collect();

        let limited = MultiGpu::new(&[gpu.ordinal()])
            .unwrap()
            .with_options(MultiGpuOptions {
                max_device_bytes: Some(4 << 20),
                chunk_bytes: 256 << 10,
            });
        let plans = limited.plan_lombscargle_batch(&b, &grids, &opts).unwrap();
        assert!(plans[0].chunks.len() > 3, "{:?}", plans[0].chunks.len());
        let (got, _) = limited
            .lombscargle_batch_peaks_profiled(&b, &grids, &opts)
            .unwrap();
        assert_same_peaks(&got, &want, amplitude, "chunked host slices");

        let kp = Kernpack::with_gpu(gpu.ordinal()).unwrap();
        let got = kp.lombscargle_batch_peaks(&b, &grids, &opts).unwrap();
        assert_same_peaks(&got, &want, amplitude, "one-GPU handle");

        // Device buffers, scratch for about 7 series at a time.
        let stream = gpu.stream();
        let up = |v: &[T]| stream.clone_htod(v).unwrap();
        let (dt, dy, dw) = (up(&t), up(&y), up(&w));
        let offsets: Vec<i64> = d.offsets.iter().map(|&o| o as i64).collect();
        let doff = stream.clone_htod(&offsets).unwrap();
        let (f0, df, per_series_grid) = match grids {
            BatchGrid::PerSeries { f0, df, .. } => (f0.to_vec(), df.to_vec(), true),
            BatchGrid::Shared(g) => (vec![g.f0], vec![g.df], false),
        };
        let (df0, ddf) = (
            stream.clone_htod(&f0).unwrap(),
            stream.clone_htod(&df).unwrap(),
        );
        let nseries = b.len();
        let dindex = stream.clone_htod(&vec![-7i64; nseries]).unwrap();
        let dvalue = stream.clone_htod(&vec![f64::NAN; nseries]).unwrap();
        let ptr = |p: (u64, _)| p.0;
        let buffers = BatchDeviceBuffers {
            t: ptr(dt.device_ptr(stream)),
            y: ptr(dy.device_ptr(stream)),
            weights: Some(ptr(dw.device_ptr(stream))),
            offsets: ptr(doff.device_ptr(stream)),
            f0: ptr(df0.device_ptr(stream)),
            df: ptr(ddf.device_ptr(stream)),
            per_series_grid,
            out: 0,
        };
        let peaks = PeakBuffers {
            index: ptr(dindex.device_ptr(stream)),
            value: ptr(dvalue.device_ptr(stream)),
        };
        // The device peaks of `b` into `p`, in scratch of `scratch` bytes
        // (None: the default). SAFETY: every buffer here is a live device
        // allocation of the documented size.
        let batch = |buffers: BatchDeviceBuffers| LombScargleBatchOnDevice::<T> {
            buffers,
            nseries,
            nf: grids.nf(),
            opts,
            dtype: std::marker::PhantomData,
        };
        let device_peaks = |b: &BatchDeviceBuffers, p: &PeakBuffers, scratch: Option<usize>| unsafe {
            let op = LombScarglePeaksOnDevice {
                batch: batch(*b),
                peaks: *p,
                max_scratch_bytes: scratch,
            };
            gpu.enqueue(stream, &op)
        };
        let per_series = grids.nf() * std::mem::size_of::<T>() * if amplitude { 2 } else { 1 };
        device_peaks(&buffers, &peaks, Some(7 * per_series)).unwrap();
        let index = stream.clone_dtoh(&dindex).unwrap();
        let value = stream.clone_dtoh(&dvalue).unwrap();
        let got: Vec<Option<Peak>> = index
            .iter()
            .zip(&value)
            .map(|(&i, &v)| {
                (i >= 0).then_some(Peak {
                    index: i as usize,
                    value: v,
                })
            })
            .collect();
        assert!(index.iter().all(|&i| i >= 0), "an index left unwritten");
        assert_same_peaks(&got, &want, amplitude, "device buffers in chunks");

        // Outputs over what the batch surely reads (the samples' first
        // nseries values, the offsets, the grids) are refused, the inputs
        // left as they were.
        let over = |name: &str, at: u64| {
            let bad = PeakBuffers { index: at, ..peaks };
            let e = device_peaks(&buffers, &bad, None).unwrap_err();
            assert!(
                e.to_string().contains(&format!("index and {name} overlap")),
                "{e}"
            );
        };
        over("t", buffers.t);
        over("y", buffers.y + 8);
        over("weights", buffers.weights.unwrap());
        over("offsets", buffers.offsets);
        // A buffer large enough for the periodograms, read as t too.
        let both = stream
            .alloc_zeros::<T>(nseries * grids.nf() * 2 + t.len())
            .unwrap();
        let out = BatchDeviceBuffers {
            t: ptr(both.device_ptr(stream)),
            out: ptr(both.device_ptr(stream)),
            ..buffers
        };
        let e = unsafe { gpu.enqueue(stream, &batch(out)) }.unwrap_err();
        assert!(e.to_string().contains("out and t overlap"), "{e}");
        assert_eq!(stream.clone_dtoh(&dt).unwrap(), t, "t written over");
        assert_eq!(
            stream.clone_dtoh(&doff).unwrap(),
            offsets,
            "offsets written over"
        );

        // Device offsets the host cannot check: one past the samples, two
        // swapped. The series they break read nothing (no peak), the others
        // are as before, and the context works on (a fault would poison it).
        let mut wild = offsets.clone();
        wild[2] = 1 << 40;
        wild.swap(4, 5);
        let readable =
            |s: usize| 0 <= wild[s] && wild[s] <= wild[s + 1] && wild[s + 1] <= t.len() as i64;
        assert!((0..nseries).filter(|&s| !readable(s)).count() >= 3);
        let dwild = stream.clone_htod(&wild).unwrap();
        let wild_buffers = BatchDeviceBuffers {
            offsets: ptr(dwild.device_ptr(stream)),
            ..buffers
        };
        device_peaks(&wild_buffers, &peaks, None).unwrap();
        let index = stream.clone_dtoh(&dindex).unwrap();
        let value = stream.clone_dtoh(&dvalue).unwrap();
        for s in 0..nseries {
            if readable(s) && wild[s..=s + 1] == offsets[s..=s + 1] {
                let got = (index[s] >= 0).then_some(Peak {
                    index: index[s] as usize,
                    value: value[s],
                });
                assert_same_peaks(&[got], &want[s..=s], amplitude, "beside wild offsets");
            } else if !readable(s) {
                assert_eq!(index[s], -1, "series {s} of wild offsets has a peak");
                assert!(value[s].is_nan());
            }
        }
        stream
            .synchronize()
            .expect("the context survives wild offsets");
    }
}

#[test]
fn gpu_peaks_f32_power() {
    gpu_peaks_are_those_of_the_periodograms::<f32>(Normalize::Power, true);
}

#[test]
fn gpu_peaks_f64_normalize() {
    gpu_peaks_are_those_of_the_periodograms::<f64>(Normalize::Normalize, false);
}

#[test]
fn gpu_peaks_f32_amplitude() {
    gpu_peaks_are_those_of_the_periodograms::<f32>(Normalize::Amplitude, true);
}

/// On the CPU the peaks mode reduces each periodogram as it is made: the same
/// as reducing the whole batch's periodograms.
#[test]
fn cpu_peaks_are_those_of_the_periodograms() {
    let d = ragged(40, 5, 200, fresh_seed("cpu_peaks"));
    let b = batch(&d.t, &d.y, &d.w, &d.offsets);
    let grids = BatchGrid::PerSeries {
        f0: &d.f0,
        df: &d.df,
        nf: 900,
    };
    let kp = Kernpack::new(Backend::Cpu).unwrap();
    for normalize in [Normalize::Power, Normalize::Normalize, Normalize::Amplitude] {
        let opts = LombScargleOptions {
            normalize,
            floating_mean: true,
            precenter: false,
        };
        let want: Vec<Option<Peak>> = kp
            .lombscargle_batch(&b, &grids, &opts)
            .unwrap()
            .iter()
            .map(Peak::of)
            .collect();
        assert!(want.iter().all(Option::is_some));
        let got = kp.lombscargle_batch_peaks(&b, &grids, &opts).unwrap();
        assert_eq!(got, want, "{normalize:?}");
    }
    // Bad input: the batch's own validation, before any work.
    let bad = Batch {
        offsets: &[0, 3, 2],
        ..b
    };
    let err = kp
        .lombscargle_batch_peaks(
            &bad,
            &BatchGrid::Shared(UniformGrid::new(0.1, 0.1, 10)),
            &LombScargleOptions::default(),
        )
        .unwrap_err();
    assert!(matches!(err, kernpack::Error::InvalidInput(_)), "{err}");
}

/// Large batches are checked on several threads; the error still names the
/// first bad series, whichever thread saw it.
#[test]
fn the_first_bad_series_of_a_large_batch_is_named() {
    let (nseries, per) = (30_000, 100);
    let t: Vec<f64> = (0..nseries * per).map(|i| (i % per) as f64 * 0.7).collect();
    let mut y: Vec<f64> = (0..nseries * per)
        .map(|i| ((i * 7919) % 1000) as f64 / 500.0)
        .collect();
    let offsets: Vec<usize> = (0..=nseries).map(|s| s * per).collect();
    let grids = BatchGrid::Shared(UniformGrid::new(0.1, 0.01, 50));
    let opts = LombScargleOptions::default();
    let check = |y: &[f64]| {
        let b = Batch {
            t: &t,
            y,
            weights: None,
            offsets: &offsets,
        };
        validate_batch(&b, &grids, &opts)
    };
    check(&y).unwrap();
    for bad in [27_000, 20_001, 5, 29_999] {
        y[bad * per + 3] = f64::NAN;
        let err = check(&y).unwrap_err().to_string();
        let first = [27_000, 20_001, 5, 29_999]
            .into_iter()
            .take_while(|&s| s != bad)
            .chain([bad])
            .min()
            .unwrap();
        assert!(err.contains(&format!("series {first}:")), "{err}");
    }
}

/// Each series' best peaks (`lombscargle_batch_top_peaks`) are the
/// reference's peaks of the periodogram the batch call gives on the same
/// backend, on shared and per-series grids, with random k and separations.
fn check_top_peaks<T: Float>(kp: &Kernpack, seed: u64) {
    use kernpack::api::lombscargle::peaks::PeakOptions;
    use kernpack::params::peaks::Better;
    use kernpack::reference::peaks::best_peaks;
    let d = ragged(60, 5, 300, seed);
    let cast = |v: &[f64]| v.iter().map(|x| T::from_f64(*x)).collect::<Vec<T>>();
    let (t, y, w) = (cast(&d.t), cast(&d.y), cast(&d.w));
    let b = batch(&t, &y, &w, &d.offsets);
    for (grids, normalize, k, separation) in [
        (
            BatchGrid::PerSeries {
                f0: &d.f0,
                df: &d.df,
                nf: 1500,
            },
            Normalize::Normalize,
            5,
            0.0,
        ),
        (
            BatchGrid::Shared(UniformGrid::new(0.02, 0.005, 700)),
            Normalize::Power,
            12,
            0.05,
        ),
        (
            BatchGrid::PerSeries {
                f0: &d.f0,
                df: &d.df,
                nf: 333,
            },
            Normalize::Power,
            1,
            0.3,
        ),
    ] {
        let opts = LombScargleOptions {
            normalize,
            floating_mean: true,
            precenter: false,
        };
        let peaks = PeakOptions { k, separation };
        let all = kp.lombscargle_batch(&b, &grids, &opts).unwrap();
        let got = kp
            .lombscargle_batch_top_peaks(&b, &grids, &opts, &peaks)
            .unwrap();
        for (s, p) in all.iter().enumerate() {
            let kernpack::Periodogram::Real(v) = p else {
                panic!("a real periodogram")
            };
            let v: Vec<f64> = v.iter().map(|x| x.to_f64()).collect();
            let want = best_peaks(&v, &grids.grid(s).frequencies(), &peaks, Better::Higher);
            assert_eq!(got[s], want, "series {s}, {peaks:?}, {normalize:?}");
        }
    }
    // An amplitude periodogram has no order: a clear error.
    let opts = LombScargleOptions {
        normalize: Normalize::Amplitude,
        ..LombScargleOptions::default()
    };
    let grids = BatchGrid::Shared(UniformGrid::new(0.1, 0.1, 10));
    let err = kp
        .lombscargle_batch_top_peaks(&b, &grids, &opts, &PeakOptions::default())
        .unwrap_err();
    assert!(err.to_string().contains("amplitude"), "{err}");
}

#[test]
fn cpu_top_peaks_are_the_reference_peaks_of_the_periodograms() {
    let kp = Kernpack::new(Backend::Cpu).unwrap();
    check_top_peaks::<f64>(&kp, fresh_seed("cpu_top_peaks"));
    check_top_peaks::<f32>(&kp, fresh_seed("cpu_top_peaks f32"));
}

#[test]
fn gpu_top_peaks_are_the_reference_peaks_of_the_periodograms() {
    let Some(gpu) = gpu_or_skip("gpu_top_peaks_are_the_reference_peaks_of_the_periodograms") else {
        return;
    };
    let kp = Kernpack::from(gpu);
    for i in 0..10 {
        check_top_peaks::<f64>(&kp, fresh_seed("gpu_top_peaks") + i);
        check_top_peaks::<f32>(&kp, fresh_seed("gpu_top_peaks f32") + i);
    }
}
