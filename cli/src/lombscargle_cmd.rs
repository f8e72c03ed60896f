//! `kernpack lombscargle` and `kernpack demo`.
use std::f64::consts::TAU;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Instant;

use kernpack::api::lombscargle::UniformGrid;
use kernpack::{Backend, Float, Kernpack, LombScargleOptions, Normalize, Periodogram, Series};

use crate::args::Args;
use crate::figures;
use crate::io::{read_column, read_series, write_csv, SeriesData};
use crate::synthetic::Uniform;

pub const HELP: &str = "\
kernpack lombscargle INPUT [options]
  INPUT                 CSV or whitespace table: t, y[, weight] (a header line is skipped)
  --fmin F --fmax F     frequency range in cycles per time unit (default 1/span .. n/(2 span))
  --nf N                number of frequencies, uniform from fmin to fmax (default max(2000, 10 n))
  --freqs FILE          frequencies from a file instead (cycles per time unit; --angular: rad per unit)
  --angular             --freqs holds angular frequencies
  --direct              use the explicit-array kernel even for a uniform grid (for comparison)
  --dtype f32|f64       precision (default f64)
  --backend auto|gpu|cpu  (default auto: the GPU when present)
  --normalize power|normalize|amplitude   (SciPy's normalize, default power)
  --floating-mean       fit an offset per frequency (recommended when y has a mean)
  --precenter           subtract mean(y) first (SciPy's legacy option)
  --output FILE         CSV: frequency, angular_frequency, period, power (amplitude: re, im, abs); default stdout
  --plot FILE.svg|png   draw the periodogram with the best period marked, above the
                        light curve folded at that period with a least-squares sinusoid";

pub fn lombscargle(raw: &[String]) -> Result<(), String> {
    let Some((input, rest)) = raw.split_first().filter(|(i, _)| !i.starts_with("--")) else {
        return Err(format!("missing INPUT\n{HELP}"));
    };
    let args = Args::parse(
        rest,
        &[
            "fmin",
            "fmax",
            "nf",
            "freqs",
            "dtype",
            "backend",
            "normalize",
            "output",
            "plot",
        ],
        &["angular", "floating-mean", "precenter", "direct"],
    )?;
    let data = read_series(input)?;
    let freqs = frequencies(&args, &data)?;
    let opts = LombScargleOptions {
        normalize: args.get_or("normalize", Normalize::Power)?,
        floating_mean: args.switch("floating-mean"),
        precenter: args.switch("precenter"),
    };
    let kp = handle(
        args.get_or("backend", Backend::Auto)?,
        data.t.len() as f64 * freqs.values.len() as f64,
    )?;
    let started = Instant::now();
    let result = match args.str("dtype").unwrap_or("f64") {
        "f32" => compute::<f32>(&kp, &data, &freqs, &opts),
        "f64" => compute::<f64>(&kp, &data, &freqs, &opts),
        other => return Err(format!("--dtype {other:?}: expected f32 or f64")),
    }?;
    eprintln!(
        "lombscargle: {} samples x {} frequencies on the {} in {:.1} ms",
        data.t.len(),
        freqs.values.len(),
        kp.backend_name(),
        started.elapsed().as_secs_f64() * 1e3
    );
    write_result(args.str("output").unwrap_or("-"), &freqs.values, &result)?;
    if let Some(path) = args.str("plot") {
        let title = format!("Lomb-Scargle periodogram of {input}");
        plot(path, &freqs.values, &result, &title, &data)?;
    }
    Ok(())
}

/// A handle on `backend` that reports progress on stderr when a CPU run is long.
fn handle(backend: Backend, pairs: f64) -> Result<Kernpack, String> {
    let kp = Kernpack::new(backend).map_err(|e| e.to_string())?;
    if kp.gpu().is_some() || pairs < 1e8 {
        return Ok(kp);
    }
    let last = AtomicU64::new(u64::MAX);
    Ok(kp.with_progress(Arc::new(move |done, total| {
        let percent = done * 100 / total.max(1);
        if last.swap(percent, Ordering::Relaxed) != percent {
            eprint!("\rlombscargle on the CPU: {percent:3}%");
            if done == total {
                eprintln!();
            }
        }
    })))
}

/// Frequencies in cycles per time unit (the kernels take angular ones).
fn frequencies(args: &Args, data: &SeriesData) -> Result<Frequencies, String> {
    if let Some(path) = args.str("freqs") {
        let scale = if args.switch("angular") {
            1.0 / TAU
        } else {
            1.0
        };
        let values = read_column(path)?.into_iter().map(|f| f * scale).collect();
        return Ok(Frequencies { values, grid: None });
    }
    let (lo, hi) = data
        .t
        .iter()
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(l, h), &t| {
            (l.min(t), h.max(t))
        });
    let span = hi - lo;
    let n = data.t.len();
    let fmin = args
        .get("fmin")?
        .unwrap_or(if span > 0.0 { 1.0 / span } else { 1.0 });
    let fmax = args.get("fmax")?.unwrap_or(if span > 0.0 {
        n as f64 / (2.0 * span)
    } else {
        1.0
    });
    let nf: usize = args.get_or("nf", (10 * n).clamp(2000, 1_000_000))?;
    if !(fmin.is_finite() && fmax.is_finite() && fmin >= 0.0 && fmax > fmin) {
        return Err(format!(
            "need 0 <= fmin < fmax, got fmin {fmin}, fmax {fmax}"
        ));
    }
    if nf == 0 {
        return Err("--nf must be at least 1".into());
    }
    let grid = UniformGrid::spanning(fmin, fmax, nf);
    // --direct: the explicit-array kernel on the same frequencies, for comparison.
    let uniform = !args.switch("direct");
    Ok(Frequencies {
        values: grid.frequencies(),
        grid: uniform.then_some(grid),
    })
}

/// The frequencies of a run, in cycles per time unit (the kernels take angular ones).
pub struct Frequencies {
    pub values: Vec<f64>,
    /// Set when the values are a uniform grid: the recurrence kernel then runs.
    pub grid: Option<UniformGrid>,
}

fn compute<T: Float>(
    kp: &Kernpack,
    data: &SeriesData,
    freqs: &Frequencies,
    opts: &LombScargleOptions,
) -> Result<Periodogram<f64>, String> {
    let cast = |v: &[f64]| v.iter().map(|x| T::from_f64(*x)).collect::<Vec<T>>();
    let (t, y) = (cast(&data.t), cast(&data.y));
    let w = data.w.as_deref().map(cast);
    let series = Series {
        t: &t,
        y: &y,
        weights: w.as_deref(),
    };
    let result = match &freqs.grid {
        Some(grid) => kp.lombscargle_uniform(
            &series,
            &UniformGrid::new(grid.f0 * TAU, grid.df * TAU, grid.nf),
            opts,
        ),
        None => kp.lombscargle(
            &series,
            &cast(&freqs.values.iter().map(|f| f * TAU).collect::<Vec<f64>>()),
            opts,
        ),
    };
    Ok(result.map_err(|e| e.to_string())?.cast())
}

fn write_result(path: &str, freqs: &[f64], result: &Periodogram<f64>) -> Result<(), String> {
    let row = |k: usize| format!("{},{},{}", freqs[k], freqs[k] * TAU, 1.0 / freqs[k]);
    match result {
        Periodogram::Real(p) => write_csv(
            path,
            "frequency,angular_frequency,period,power",
            (0..p.len()).map(|k| format!("{},{}", row(k), p[k])),
        ),
        Periodogram::Complex(a) => write_csv(
            path,
            "frequency,angular_frequency,period,re,im,abs",
            (0..a.len()).map(|k| format!("{},{},{},{}", row(k), a[k].re, a[k].im, a[k].norm())),
        ),
    }
}

/// Index of the highest peak at a non-zero frequency.
fn best(freqs: &[f64], magnitudes: &[f64]) -> Option<usize> {
    (0..freqs.len())
        .filter(|&k| freqs[k] > 0.0 && magnitudes[k].is_finite())
        .max_by(|&a, &b| magnitudes[a].total_cmp(&magnitudes[b]))
}

fn plot(
    path: &str,
    freqs: &[f64],
    result: &Periodogram<f64>,
    title: &str,
    data: &SeriesData,
) -> Result<(), String> {
    let magnitudes = result.magnitudes();
    let y_label = if matches!(result, Periodogram::Complex(_)) {
        "|amplitude|"
    } else {
        "power"
    };
    let best_freq = best(freqs, &magnitudes).map_or(f64::NAN, |k| freqs[k]);
    let figure = figures::periodogram(
        title,
        y_label,
        freqs,
        &magnitudes,
        best_freq,
        &data.t,
        &data.y,
        data.w.as_deref(),
    );
    figures::write(&figure, std::path::Path::new(path)).map_err(|e| format!("{path}: {e}"))?;
    eprintln!("plot written to {path}");
    Ok(())
}

/// `kernpack demo`: a synthetic irregular light curve (seasonal gaps, uneven
/// errors), its period recovered on the default backend, and the plot written.
pub fn demo(raw: &[String]) -> Result<(), String> {
    let args = Args::parse(raw, &["plot", "backend", "period", "nf"], &[])?;
    let true_period: f64 = args.get_or("period", 3.7)?;
    let plot_path = args.str("plot").unwrap_or("kernpack-demo.svg").to_owned();
    let nf: usize = args.get_or("nf", 200_000)?;

    // 800 observations over 3 seasons of 120 nights, at random times of night.
    let mut rng = Uniform::new(0x9e37_79b9_7f4a_7c15);
    let (mut t, mut y, mut w) = (Vec::new(), Vec::new(), Vec::new());
    for i in 0..800 {
        let (noise, u) = (rng.normal(), rng.next());
        let season = (i % 3) as f64;
        let time = season * 365.0 + (u * 120.0).floor() + 0.3 * (i as f64 * 0.618).fract();
        let sigma = 0.2 + 0.6 * (i as f64 * 0.377).fract();
        t.push(time);
        y.push(12.0 + 0.8 * (TAU * time / true_period + 0.4).sin() + sigma * noise);
        w.push(1.0 / (sigma * sigma));
    }
    let data = SeriesData { t, y, w: Some(w) };
    let (fmin, fmax) = (1.0 / 400.0, 2.0);
    let grid = UniformGrid::spanning(fmin, fmax, nf);
    let freqs = Frequencies {
        values: grid.frequencies(),
        grid: Some(grid),
    };
    let opts = LombScargleOptions {
        normalize: Normalize::Normalize,
        floating_mean: true,
        precenter: false,
    };
    let kp = handle(
        args.get_or("backend", Backend::Auto)?,
        data.t.len() as f64 * nf as f64,
    )?;
    let started = Instant::now();
    let result = compute::<f64>(&kp, &data, &freqs, &opts)?;
    let elapsed = started.elapsed().as_secs_f64() * 1e3;
    let magnitudes = result.magnitudes();
    let k = best(&freqs.values, &magnitudes).ok_or("no peak found")?;
    let found = 1.0 / freqs.values[k];
    println!(
        "demo: {} irregular samples over {:.0} days, {nf} frequencies, on the {} in {elapsed:.1} ms",
        data.t.len(),
        data.t.iter().cloned().fold(0.0, f64::max),
        kp.backend_name()
    );
    println!(
        "true period {true_period} d, recovered {found:.5} d (normalized power {:.3})",
        magnitudes[k]
    );
    let title = format!("kernpack demo: synthetic light curve, period {true_period}");
    plot(&plot_path, &freqs.values, &result, &title, &data)?;
    let relative = (found - true_period).abs() / true_period;
    if relative > 1e-3 {
        return Err(format!(
            "recovered period {found} is {relative:.1e} off the true {true_period}"
        ));
    }
    Ok(())
}
