//! `kernpack lombscargle` and `kernpack demo`.
use std::f64::consts::TAU;
use std::path::{Path, PathBuf};
use std::time::Instant;

use kernpack::api::lombscargle::bootstrap::{bootstrap_false_alarm_probability, BootstrapOptions};
use kernpack::api::lombscargle::chi2::{Chi2Options, Chi2Series, MAX_NTERMS};
use kernpack::api::lombscargle::UniformGrid;
use kernpack::api::phasefold::{PeakOptions, MAX_PEAKS};
use kernpack::error::readable;
use kernpack::params::peaks::{select_peaks, Better};
use kernpack::{
    FapMethod, Float, Kernpack, LombScargleOptions, Normalize, NullDistribution, Periodogram,
    Series,
};

use crate::io::{read_column, read_series, write_csv, SeriesData};
use crate::memory::check_room;
use crate::options::{cast, Dtype, PeriodogramArgs, Placement};
use crate::progress;
use crate::synthetic::Uniform;
use crate::{figures, plot};

/// Lomb-Scargle periodogram of one time series.
#[derive(clap::Args, Debug)]
#[command(
    after_help = "INPUT is a CSV or whitespace-separated table with columns t, y and an optional \
weight; a header line and lines starting with '#' are skipped.\n\n\
With --nterms the periodogram is astropy's LombScargle(t, y, dy, nterms=K) ('chi2' method: a \
fitted mean, centred data, errors dy = weight^-1/2), computed by kernpack; --normalization picks \
its power. --fap needs it with one term."
)]
pub struct LombScargleArgs {
    /// The time series: t, y[, weight] per line.
    pub input: PathBuf,
    #[command(flatten)]
    pub grid: GridArgs,
    /// Use the explicit-frequency kernel even on a uniform grid (for comparison).
    #[arg(long)]
    pub direct: bool,
    /// Precision of the computation.
    #[arg(long, value_enum, default_value_t = Dtype::F64)]
    pub dtype: Dtype,
    #[command(flatten)]
    pub at: Placement,
    #[command(flatten)]
    pub periodogram: PeriodogramArgs,
    /// CSV of frequency, angular_frequency, period, power (amplitude: re, im, abs); "-" is stdout.
    #[arg(long, short, value_name = "FILE", default_value = "-")]
    pub output: PathBuf,
    /// Draw the periodogram with the best period marked and the light curve folded at it (.svg or .png).
    #[arg(long, value_name = "FILE")]
    pub plot: Option<PathBuf>,
    /// astropy's generalised periodogram of K harmonics instead (see below).
    #[arg(long, value_name = "K",
          value_parser = clap::value_parser!(u64).range(1..=MAX_NTERMS as u64),
          conflicts_with_all = ["normalize", "floating_mean", "precenter", "direct"])]
    pub nterms: Option<u64>,
    /// The power of --nterms: standard (in [0, 1]), model, log or psd.
    #[arg(long, value_parser = ["standard", "model", "log", "psd"], default_value = "standard",
          requires = "nterms")]
    pub normalization: String,
    /// List the K best distinct periods on stderr: the highest local maxima
    /// of the power, best first, at frequencies above 0.
    #[arg(long, value_name = "K",
          value_parser = clap::value_parser!(u64).range(1..=MAX_PEAKS as u64))]
    pub peaks: Option<u64>,
    /// With --peaks: the least distance in frequency between two listed
    /// periods (about 1 / time span keeps a peak's side lobes out).
    #[arg(long, default_value_t = 0.0, requires = "peaks")]
    pub separation: f64,
    /// The false-alarm probability of the best period (and of each of
    /// --peaks), astropy's: baluev, davies, naive or single (--nterms 1),
    /// for a noise periodogram on a grid up to the highest trial frequency;
    /// or bootstrap (any --nterms): the fraction of --resamples periodograms
    /// of y resampled with replacement (t fixed) whose highest power is not
    /// below it.
    #[arg(long, value_parser = ["baluev", "davies", "naive", "single", "bootstrap"],
          requires = "nterms")]
    pub fap: Option<String>,
    /// With --fap bootstrap: the resampled periodograms (astropy's n_bootstraps).
    #[arg(long, default_value_t = 1000, requires = "fap",
          value_parser = clap::value_parser!(u64).range(1..=1_000_000))]
    pub resamples: u64,
    /// With --fap bootstrap: the seed of the resampling (the same maxima for
    /// a seed on every backend).
    #[arg(long = "fap-seed", default_value_t = 0, requires = "fap")]
    pub fap_seed: u64,
}

impl LombScargleArgs {
    fn chi2_options(&self) -> Result<Option<Chi2Options>, String> {
        let Some(nterms) = self.nterms else {
            return Ok(None);
        };
        let analytic = self.fap.as_deref().is_some_and(|m| m != "bootstrap");
        if analytic && nterms != 1 {
            return Err(format!(
                "--fap: no analytic false-alarm probability for {nterms} harmonics (astropy's \
                 formulas are for --nterms 1; --fap bootstrap takes any)"
            ));
        }
        Ok(Some(Chi2Options {
            nterms: nterms as usize, // in range by the parser
            normalization: self.normalization.parse().map_err(|e| format!("{e}"))?,
            ..Chi2Options::default()
        }))
    }
}

pub fn lombscargle(args: &LombScargleArgs) -> Result<(), String> {
    figures::check_outputs(&[Some(&args.output)], args.plot.as_deref())?;
    let chi2 = args.chi2_options()?;
    let peaks = args.peaks.map(|k| PeakOptions {
        k: k as usize,
        separation: args.separation,
    });
    if let Some(p) = &peaks {
        p.validate().map_err(|e| format!("--separation: {e}"))?;
    }
    let data = read_series(&args.input)?;
    let freqs = frequencies(args, &data)?;
    let opts = args.periodogram.options();
    // Progress on stderr when a CPU run is long.
    let kp = progress::on_cpu(args.at.open()?, "periodogram on the CPU");
    let started = Instant::now();
    let result = match &chi2 {
        Some(chi2) => by_dtype!(args.dtype, compute_chi2(&kp, &data, &freqs, chi2))?,
        None => by_dtype!(args.dtype, compute(&kp, &data, &freqs, &opts))?,
    };
    eprintln!(
        "lombscargle: {} samples x {} frequencies on the {} in {:.1} ms",
        data.t.len(),
        freqs.values.len(),
        kp.backend_name(),
        started.elapsed().as_secs_f64() * 1e3
    );
    write_result(&args.output, &freqs.values, &result)?;
    let fap = match (&args.fap, &chi2) {
        (Some(method), Some(chi2)) => {
            Some(significance(&kp, &data, &freqs.values, method, chi2, args)?)
        }
        _ => None,
    };
    list_peaks(&freqs.values, &result, peaks.as_ref(), fap.as_ref())?;
    if let Some(path) = &args.plot {
        let title = format!("Lomb-Scargle periodogram of {}", args.input.display());
        plot(path, &freqs.values, &result, &title, &data)?;
    }
    Ok(())
}

/// The trial frequencies of a search of one series (`lombscargle`, `pdm`, `ce`).
#[derive(clap::Args, Debug, Clone)]
pub struct GridArgs {
    /// Lowest frequency, cycles per time unit [default: 1/span].
    #[arg(long)]
    pub fmin: Option<f64>,
    /// Highest frequency, cycles per time unit [default: n/(2 span)].
    #[arg(long)]
    pub fmax: Option<f64>,
    /// Number of frequencies, uniform from fmin to fmax [default: 10 n, within 2000..1000000].
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..))]
    pub nf: Option<u64>,
    /// Frequencies from a file instead (one per line, cycles per time unit).
    #[arg(long, value_name = "FILE", conflicts_with_all = ["fmin", "fmax", "nf"])]
    pub freqs: Option<PathBuf>,
    /// The --freqs file holds angular frequencies (rad per time unit).
    #[arg(long, requires = "freqs")]
    pub angular: bool,
}

/// Frequencies in cycles per time unit (the kernels take angular ones), with
/// `--direct` the uniform grid as an array.
fn frequencies(args: &LombScargleArgs, data: &SeriesData) -> Result<Frequencies, String> {
    let mut freqs = args.grid.frequencies(data)?;
    if args.direct {
        freqs.grid = None;
    }
    Ok(freqs)
}

impl GridArgs {
    /// The frequencies these options name for `data`, in cycles per time
    /// unit: those of the --freqs file, or the uniform grid (its values and
    /// the grid itself).
    pub fn frequencies(&self, data: &SeriesData) -> Result<Frequencies, String> {
        if let Some(path) = &self.freqs {
            let scale = if self.angular { 1.0 / TAU } else { 1.0 };
            let values: Vec<f64> = read_column(path)?.into_iter().map(|f| f * scale).collect();
            // Checked here, in the file's units: the kernels see angular ones.
            if let Some(f) = values.iter().find(|f| !finite_angular(**f)) {
                return Err(format!(
                    "{}: frequency {} is not a finite value >= 0",
                    path.display(),
                    readable(f / scale)
                ));
            }
            return Ok(Frequencies { values, grid: None });
        }
        let span = time_span(&data.t);
        let n = data.t.len();
        let defaults = match span > 0.0 {
            true => (1.0 / span, n as f64 / (2.0 * span)),
            false => (1.0, 1.0),
        };
        let (fmin, fmax) = (
            self.fmin.unwrap_or(defaults.0),
            self.fmax.unwrap_or(defaults.1),
        );
        let nf = match self.nf {
            Some(nf) => usize::try_from(nf).map_err(|_| format!("--nf {nf}: too many"))?,
            None => (10 * n).clamp(2000, 1_000_000),
        };
        check_room::<f64>("--nf", &[nf])?;
        check_band(fmin, fmax).map_err(|mut message| {
            if self.fmin.is_none() || self.fmax.is_none() {
                message += &format!(
                    " (defaults 1/span and n/(2 span), for {n} samples over a span of {span}): \
                     give --fmin and --fmax"
                );
            }
            message
        })?;
        let grid = UniformGrid::spanning(fmin, fmax, nf);
        Ok(Frequencies {
            values: grid.frequencies(),
            grid: Some(grid),
        })
    }
}

/// A frequency in cycles per time unit whose angular value (x 2 pi) is a
/// finite value >= 0, as the kernels need.
fn finite_angular(f: f64) -> bool {
    f >= 0.0 && (f * TAU).is_finite()
}

/// A grid from `fmin` to `fmax` (cycles per time unit) the kernels can take,
/// or the message saying what is needed.
pub fn check_band(fmin: f64, fmax: f64) -> Result<(), String> {
    if finite_angular(fmin) && finite_angular(fmax) && fmax > fmin {
        return Ok(());
    }
    Err(format!(
        "need 0 <= --fmin < --fmax <= 2.8e307 (finite angular frequencies), got --fmin {}, --fmax {}",
        readable(fmin),
        readable(fmax)
    ))
}

/// The time from the first sample to the last (-inf for no samples).
pub fn time_span(t: &[f64]) -> f64 {
    let (lo, hi) = plot::extent(t.iter().copied());
    hi - lo
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
    let (t, y, w) = data.cast::<T>();
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
            &cast::<T>(&freqs.values.iter().map(|f| f * TAU).collect::<Vec<f64>>()),
            opts,
        ),
    };
    Ok(result.map_err(|e| e.to_string())?.cast())
}

/// astropy's generalised periodogram (the third column a weight, dy =
/// weight^-1/2), in f64.
fn compute_chi2<T: Float>(
    kp: &Kernpack,
    data: &SeriesData,
    freqs: &Frequencies,
    opts: &Chi2Options,
) -> Result<Periodogram<f64>, String> {
    let (t, y, w) = data.cast::<T>();
    let dy = match &w {
        Some(w) => {
            if let Some(i) = w
                .iter()
                .position(|w| w.to_f64().is_nan() || w.to_f64() <= 0.0)
            {
                return Err(format!(
                    "weight {} of sample {} is not above 0: --nterms takes dy = weight^-1/2",
                    w[i].to_f64(),
                    i + 1
                ));
            }
            Some(
                w.iter()
                    .map(|w| T::from_f64(w.to_f64().powf(-0.5)))
                    .collect::<Vec<T>>(),
            )
        }
        None => None,
    };
    let series = Chi2Series {
        t: &t,
        y: &y,
        dy: dy.as_deref(),
    };
    let power = match &freqs.grid {
        Some(grid) => kp.lombscargle_chi2_uniform(&series, grid, opts),
        None => kp.lombscargle_chi2(&series, &cast::<T>(&freqs.values), opts),
    };
    let power = power.map_err(|e| e.to_string())?;
    Ok(Periodogram::Real(
        power.iter().map(|p| p.to_f64()).collect(),
    ))
}

/// What a false-alarm probability needs: an analytic method and the null
/// distribution of the series' one-term power up to the highest trial
/// frequency, or the maxima of the bootstrap's resampled periodograms.
enum Significance {
    Analytic {
        method: FapMethod,
        null: NullDistribution,
    },
    Bootstrap {
        maxima: Vec<f64>,
    },
}

impl Significance {
    fn of(&self, power: f64) -> f64 {
        match self {
            Significance::Analytic { method, null } => null.false_alarm_probability(power, *method),
            Significance::Bootstrap { maxima } => bootstrap_false_alarm_probability(maxima, power),
        }
    }
}

fn significance(
    kp: &Kernpack,
    data: &SeriesData,
    freqs: &[f64],
    method: &str,
    opts: &Chi2Options,
    args: &LombScargleArgs,
) -> Result<Significance, String> {
    let fmax = freqs.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
    // The weights as dy (checked above 0 by the periodogram's call).
    let dy: Option<Vec<f64>> = data
        .w
        .as_ref()
        .map(|w| w.iter().map(|w| w.powf(-0.5)).collect());
    if method == "bootstrap" {
        let series = Chi2Series {
            t: &data.t,
            y: &data.y,
            dy: dy.as_deref(),
        };
        let boot = BootstrapOptions {
            resamples: args.resamples as usize, // in range by the parser
            seed: args.fap_seed,
            ..BootstrapOptions::default()
        };
        let maxima = kp
            .lombscargle_chi2_bootstrap(&series, fmax, opts, &boot)
            .map_err(|e| format!("--fap bootstrap: {e}"))?;
        return Ok(Significance::Bootstrap { maxima });
    }
    let method: FapMethod = method.parse().map_err(|e| format!("--fap: {e}"))?;
    let null = NullDistribution::new(fmax, &data.t, dy.as_deref(), opts.normalization.into())
        .map_err(|e| format!("--fap: {e}"))?;
    Ok(Significance::Analytic { method, null })
}

/// The best period (with its false-alarm probability) and the `peaks`
/// best distinct ones, on stderr.
fn list_peaks(
    freqs: &[f64],
    result: &Periodogram<f64>,
    peaks: Option<&PeakOptions>,
    fap: Option<&Significance>,
) -> Result<(), String> {
    if peaks.is_none() && fap.is_none() {
        return Ok(());
    }
    let magnitudes = result.magnitudes();
    let fap_of = |power: f64| fap.map_or(String::new(), |s| format!(", FAP {:.4e}", s.of(power)));
    let best = best_peak(|k| freqs[k], &magnitudes)
        .ok_or("no best period: no trial frequency above 0 has a power")?;
    eprintln!(
        "best period {} (frequency {}): power {}{}",
        1.0 / freqs[best],
        freqs[best],
        magnitudes[best],
        fap_of(magnitudes[best])
    );
    if let Some(opts) = peaks {
        // Frequency 0 has no period: its power does not compete.
        let above_0: Vec<f64> = (0..freqs.len())
            .map(|k| {
                if freqs[k] > 0.0 {
                    magnitudes[k]
                } else {
                    f64::NAN
                }
            })
            .collect();
        for (rank, p) in select_peaks(&above_0, freqs, opts, Better::Higher)
            .iter()
            .enumerate()
        {
            eprintln!(
                "peak {}: period {}, frequency {}, power {}{}",
                rank + 1,
                1.0 / freqs[p.index],
                freqs[p.index],
                p.value,
                fap_of(p.value)
            );
        }
    }
    Ok(())
}

fn write_result(path: &Path, freqs: &[f64], result: &Periodogram<f64>) -> Result<(), String> {
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

/// Index of the highest non-NaN value of `magnitudes` at a non-zero
/// frequency (the first of equal ones), `frequency(k)` being the k-th one's:
/// the rule of `Peak::of`, with frequency 0 (an infinite period) left out.
pub fn best_peak(frequency: impl Fn(usize) -> f64, magnitudes: &[f64]) -> Option<usize> {
    (0..magnitudes.len())
        .filter(|&k| frequency(k) > 0.0 && !magnitudes[k].is_nan())
        .reduce(|b, k| if magnitudes[k] > magnitudes[b] { k } else { b })
}

/// The periodogram with its best period marked, above the light curve folded at that period.
fn plot(
    path: &Path,
    freqs: &[f64],
    result: &Periodogram<f64>,
    title: &str,
    data: &SeriesData,
) -> Result<(), String> {
    let magnitudes = result.magnitudes();
    let y_label = match result {
        Periodogram::Complex(_) => "|amplitude|",
        Periodogram::Real(_) => "power",
    };
    // No peak (all power NaN): the periodogram is drawn without a marker.
    let best_freq = best_peak(|k| freqs[k], &magnitudes).map_or(f64::NAN, |k| freqs[k]);
    let figure = figures::periodogram(title, y_label, freqs, &magnitudes, best_freq, data);
    plot::write(&figure, path)
}

/// Recover the period of a synthetic irregular light curve and plot it.
#[derive(clap::Args, Debug)]
pub struct DemoArgs {
    /// Where to draw the periodogram and the folded light curve (.svg or .png).
    #[arg(long, value_name = "FILE", default_value = "kernpack-demo.svg")]
    pub plot: PathBuf,
    #[command(flatten)]
    pub at: Placement,
    /// The true period of the synthetic light curve, in days.
    #[arg(long, default_value_t = 3.7)]
    pub period: f64,
    /// Number of frequencies searched, from 1/400 to 2 cycles per day.
    #[arg(long, default_value_t = 200_000, value_parser = clap::value_parser!(u32).range(1..))]
    pub nf: u32,
}

/// `kernpack demo`: a synthetic irregular light curve (seasonal gaps, uneven
/// errors), its period recovered on the default backend, and the plot written.
pub fn demo(args: &DemoArgs) -> Result<(), String> {
    let true_period = args.period;
    if !(true_period.is_finite() && (0.5..=400.0).contains(&true_period)) {
        return Err(format!(
            "--period {true_period}: the demo searches periods from 0.5 to 400 days"
        ));
    }
    let plot_path = &args.plot;
    figures::check_outputs(&[], Some(plot_path))?;
    let nf = args.nf as usize;
    check_room::<f64>("--nf", &[nf])?;

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
    // Progress on stderr when a CPU run is long.
    let kp = progress::on_cpu(args.at.open()?, "periodogram on the CPU");
    let started = Instant::now();
    let result = compute::<f64>(&kp, &data, &freqs, &opts)?;
    let elapsed = started.elapsed().as_secs_f64() * 1e3;
    let magnitudes = result.magnitudes();
    let k = best_peak(|k| freqs.values[k], &magnitudes).ok_or("no peak found")?;
    let found = 1.0 / freqs.values[k];
    say!(
        "demo: {} irregular samples over {:.0} days, {nf} frequencies, on the {} in {elapsed:.1} ms",
        data.t.len(),
        data.t.iter().cloned().fold(0.0, f64::max),
        kp.backend_name()
    );
    say!(
        "true period {true_period} d, recovered {found:.5} d (normalized power {:.3})",
        magnitudes[k]
    );
    plot(
        plot_path,
        &freqs.values,
        &result,
        "kernpack demo: a synthetic light curve",
        &data,
    )?;
    // A peak's width in frequency is about 1/baseline: the recovered
    // frequency must lie well inside the true one's peak.
    let baseline = time_span(&data.t);
    let off = (1.0 / found - 1.0 / true_period).abs() * baseline;
    if off > 0.1 {
        return Err(format!(
            "recovered period {found} is off the true {true_period} by {off:.2} of the \
             peak width (1/{baseline:.0} per day)"
        ));
    }
    Ok(())
}
