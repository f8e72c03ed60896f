//! `kernpack bls`: the Box Least Squares transit search of one light curve.
use std::path::{Path, PathBuf};
use std::time::Instant;

use kernpack::api::bls::{BlsObjective, BlsOptions, BlsResults, BlsSeries, PeakOptions, MAX_PEAKS};
use kernpack::error::readable;
use kernpack::params::peaks::{select_peaks, Better};
use kernpack::{Float, Kernpack};

use crate::io::{read_column, read_series, summary, write_csv, SeriesData};
use crate::lombscargle_cmd::time_span;
use crate::memory::check_room;
use crate::options::{cast, SearchRun};
use crate::{figures, plot};

value_enum! {
    /// What the search maximises at each period.
    ObjectiveArg => BlsObjective {
        /// The log likelihood gained by the box (0.5 depth^2 / var_in).
        Likelihood => Likelihood,
        /// The signal-to-noise ratio of the depth (depth / depth_err).
        Snr => Snr,
    }
}

/// Box Least Squares transit search of one light curve.
#[derive(clap::Args, Debug)]
#[command(
    after_help = "INPUT is a CSV or whitespace-separated table with columns t, y and an \
optional uncertainty dy (weights 1/dy^2); a header line and lines starting with '#' are skipped.\n\n\
Without --nperiods or --periods the trial periods are spaced evenly in frequency by \
frequency_factor * min(duration) / baseline^2, from 2 max(duration) (or --pmin) to \
baseline / (minimum_n_transit - 1) (or --pmax), baseline being the time span of the light curve."
)]
pub struct BlsArgs {
    /// The light curve: t, y[, dy] per line.
    pub input: PathBuf,
    /// Transit durations to try, in units of t (comma-separated), each shorter than every period.
    #[arg(
        long,
        value_name = "D1,D2,..",
        value_delimiter = ',',
        num_args = 1,
        required = true
    )]
    pub durations: Vec<f64>,
    /// Shortest trial period [default: 2 max(duration)].
    #[arg(long)]
    pub pmin: Option<f64>,
    /// Longest trial period [default: baseline / (minimum_n_transit - 1)].
    #[arg(long)]
    pub pmax: Option<f64>,
    /// Number of trial periods, evenly spaced in frequency from 1/pmax to 1/pmin
    /// [default: as many as the frequency spacing of --frequency-factor needs].
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..))]
    pub nperiods: Option<u64>,
    /// Trial periods from a file instead (one per line, in units of t).
    #[arg(long, value_name = "FILE", conflicts_with_all = ["pmin", "pmax", "nperiods", "minimum_n_transit", "frequency_factor"])]
    pub periods: Option<PathBuf>,
    /// Fewest transits the longest default period must allow within the baseline.
    #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(u32).range(2..))]
    pub minimum_n_transit: u32,
    /// Scales the default frequency spacing (below 1: a finer grid).
    #[arg(long, default_value_t = 1.0, conflicts_with = "nperiods")]
    pub frequency_factor: f64,
    /// Phase bins per shortest duration.
    #[arg(long, default_value_t = 10, value_parser = clap::value_parser!(u32).range(1..))]
    pub oversample: u32,
    /// What the search maximises at each period.
    #[arg(long, value_enum, default_value_t = ObjectiveArg::Likelihood)]
    pub objective: ObjectiveArg,
    #[command(flatten)]
    pub run: SearchRun,
    /// CSV of period, power, depth, depth_err, duration, transit_time, depth_snr,
    /// log_likelihood at every trial period; "-" is stdout (the summary then goes to stderr).
    #[arg(long, short, value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// Draw the power against period with the best period marked, and the light
    /// curve folded at it with the box model (.svg or .png).
    #[arg(long, value_name = "FILE")]
    pub plot: Option<PathBuf>,
    /// Also list the K best distinct periods: the highest local maxima of the
    /// power, best first.
    #[arg(long, value_name = "K",
          value_parser = clap::value_parser!(u64).range(1..=MAX_PEAKS as u64))]
    pub peaks: Option<u64>,
    /// With --peaks: the least distance between two listed periods, in units of t.
    #[arg(long, default_value_t = 0.0, requires = "peaks")]
    pub separation: f64,
}

/// The header of the `--output` table, in the order of its columns.
const HEADER: &str = "period,power,depth,depth_err,duration,transit_time,depth_snr,log_likelihood";

pub fn run(args: &BlsArgs) -> Result<(), String> {
    figures::check_outputs(&[args.output.as_deref()], args.plot.as_deref())?;
    let data = read_series(&args.input)?;
    if let Some(i) = args
        .durations
        .iter()
        .position(|d| !(d.is_finite() && *d > 0.0))
    {
        return Err(format!(
            "--durations: {} is not a finite positive duration",
            readable(args.durations[i])
        ));
    }
    let periods = periods(args, &data)?;
    let peaks = args.peaks.map(|k| PeakOptions {
        k: k as usize,
        separation: args.separation,
    });
    if let Some(p) = &peaks {
        p.validate().map_err(|e| format!("--separation: {e}"))?;
    }
    let opts = BlsOptions {
        objective: args.objective.into(),
        oversample: args.oversample,
    };
    // Progress on stderr when a CPU run is long.
    let kp = args.run.open("transit search on the CPU")?;
    let started = Instant::now();
    let (periods, result) = by_dtype!(
        args.run.dtype,
        compute(&kp, &data, &periods, &args.durations, &opts)
    )?;
    eprintln!(
        "bls: {} samples x {} periods x {} durations on the {} in {:.1} ms",
        data.t.len(),
        periods.len(),
        args.durations.len(),
        kp.backend_name(),
        started.elapsed().as_secs_f64() * 1e3
    );
    let best = best_period(&result.power);
    if let Some(k) = best {
        let r = &result;
        let line = format!(
            "best period {} (of {} from {} to {}): duration {}, depth {} ± {}, transit time {}, \
             depth SNR {}, log likelihood {}",
            periods[k],
            periods.len(),
            periods[0],
            periods[periods.len() - 1],
            r.duration[k],
            r.depth[k],
            r.depth_err[k],
            r.transit_time[k],
            r.depth_snr[k],
            r.log_likelihood[k],
        );
        summary(args.output.as_deref(), &line);
    }
    if let Some(opts) = &peaks {
        let r = &result;
        for (rank, p) in select_peaks(&r.power, &periods, opts, Better::Higher)
            .iter()
            .enumerate()
        {
            let k = p.index;
            let line = format!(
                "peak {}: period {}, power {}, duration {}, depth {}, transit time {}",
                rank + 1,
                periods[k],
                r.power[k],
                r.duration[k],
                r.depth[k],
                r.transit_time[k],
            );
            summary(args.output.as_deref(), &line);
        }
    }
    if let Some(path) = &args.output {
        write_result(path, &periods, &result)?;
    }
    if let Some(path) = &args.plot {
        let title = format!("transit search of {}", args.input.display());
        let fit = best.map(|k| figures::BoxFit {
            period: periods[k],
            duration: result.duration[k],
            transit_time: result.transit_time[k],
            depth: result.depth[k],
        });
        let figure = figures::transit_search(&title, &periods, &result.power, fit, &data);
        plot::write(&figure, path)?;
    }
    match best {
        Some(_) => Ok(()),
        None => Err(
            "no trial period has a box with samples both in and out of transit and a depth >= 0"
                .into(),
        ),
    }
}

/// The index of the highest power (the first of equal ones), leaving out
/// periods without a box (power -inf, or NaN).
fn best_period(power: &[f64]) -> Option<usize> {
    (0..power.len())
        .filter(|&k| power[k].is_finite())
        .reduce(|b, k| if power[k] > power[b] { k } else { b })
}

/// The trial periods (in f64), in increasing order for the generated grids.
fn periods(args: &BlsArgs, data: &SeriesData) -> Result<Vec<f64>, String> {
    if let Some(path) = &args.periods {
        let values = read_column(path)?;
        if let Some(p) = values.iter().find(|p| !(p.is_finite() && **p > 0.0)) {
            return Err(format!(
                "{}: period {} is not a finite positive number",
                path.display(),
                readable(*p)
            ));
        }
        return Ok(values);
    }
    let baseline = time_span(&data.t);
    let min_duration = args.durations.iter().copied().fold(f64::INFINITY, f64::min);
    let max_duration = args.durations.iter().copied().fold(0.0, f64::max);
    let pmin = args.pmin.unwrap_or(2.0 * max_duration);
    let pmax = match args.pmax {
        Some(p) => p,
        None if baseline > 0.0 => baseline / f64::from(args.minimum_n_transit - 1),
        None => {
            return Err(format!(
                "the light curve spans no time ({} samples at one time): give --pmax or --periods",
                data.t.len()
            ))
        }
    };
    if !(pmin.is_finite() && pmax.is_finite() && pmin > 0.0 && pmax > pmin) {
        return Err(format!(
            "need 0 < shortest period < longest period, got {} and {} \
             (--pmin defaults to 2 max(duration), --pmax to baseline / (minimum_n_transit - 1), \
             here {} / {})",
            readable(pmin),
            readable(pmax),
            readable(baseline),
            args.minimum_n_transit - 1
        ));
    }
    let (fmin, fmax) = (1.0 / pmax, 1.0 / pmin);
    let (n, df) = match args.nperiods {
        Some(n) => {
            let n = usize::try_from(n).map_err(|_| format!("--nperiods {n}: too many"))?;
            (
                n,
                if n > 1 {
                    (fmax - fmin) / (n - 1) as f64
                } else {
                    0.0
                },
            )
        }
        None => {
            let factor = args.frequency_factor;
            let df = factor * min_duration / (baseline * baseline);
            if !(df.is_finite() && df > 0.0) {
                return Err(format!(
                    "--frequency-factor {}: the frequency spacing factor * min(duration) / \
                     baseline^2 = {} is not a finite positive number",
                    readable(factor),
                    readable(df)
                ));
            }
            let n = ((fmax - fmin) / df).round() + 1.0;
            if n > isize::MAX as f64 {
                return Err(format!(
                    "{n:e} trial periods: raise --frequency-factor or give --nperiods"
                ));
            }
            (n as usize, df)
        }
    };
    check_room::<f64>("the trial periods", &[n])?;
    // Highest frequency first: the periods increase.
    Ok((0..n).map(|k| 1.0 / (fmax - df * k as f64)).collect())
}

fn compute<T: Float>(
    kp: &Kernpack,
    data: &SeriesData,
    periods: &[f64],
    durations: &[f64],
    opts: &BlsOptions,
) -> Result<(Vec<f64>, BlsResults<f64>), String> {
    // The third column of a light curve is its uncertainty dy.
    let (t, y, dy) = data.cast::<T>();
    let series = BlsSeries {
        t: &t,
        y: &y,
        dy: dy.as_deref(),
    };
    let trial = cast::<T>(periods);
    let r = kp
        .bls(&series, &trial, &cast::<T>(durations), opts)
        .map_err(|e| e.to_string())?;
    let f64s = |v: &[T]| v.iter().map(|x| x.to_f64()).collect::<Vec<f64>>();
    // The periods as searched (in f32, rounded).
    let periods = f64s(&trial);
    let result = BlsResults {
        power: f64s(&r.power),
        depth: f64s(&r.depth),
        depth_err: f64s(&r.depth_err),
        duration: f64s(&r.duration),
        transit_time: f64s(&r.transit_time),
        depth_snr: f64s(&r.depth_snr),
        log_likelihood: f64s(&r.log_likelihood),
    };
    Ok((periods, result))
}

fn write_result(path: &Path, periods: &[f64], r: &BlsResults<f64>) -> Result<(), String> {
    write_csv(
        path,
        HEADER,
        (0..periods.len()).map(|k| {
            format!(
                "{},{},{},{},{},{},{},{}",
                periods[k],
                r.power[k],
                r.depth[k],
                r.depth_err[k],
                r.duration[k],
                r.transit_time[k],
                r.depth_snr[k],
                r.log_likelihood[k]
            )
        }),
    )
}

#[cfg(test)]
mod tests {
    use super::best_period;

    #[test]
    fn the_best_period_skips_periods_without_a_box() {
        let ninf = f64::NEG_INFINITY;
        assert_eq!(best_period(&[ninf, 2.0, f64::NAN, 3.0, 3.0]), Some(3));
        assert_eq!(best_period(&[ninf, ninf]), None);
        assert_eq!(best_period(&[]), None);
    }
}
