//! `kernpack pdm` and `kernpack ce`: the phase-folding period searches of one
//! light curve (phase dispersion minimisation and conditional entropy), both
//! lower at a better period.
use std::path::PathBuf;
use std::time::Instant;

use kernpack::api::phasefold::{
    CeOptions, FoldSeries, PdmOptions, PeakOptions, Statistic, MAX_CE_CELLS, MAX_PDM_BINS,
    MAX_PEAKS,
};
use kernpack::params::peaks::select_peaks;
use kernpack::{Float, Kernpack};

use crate::io::{read_series, summary, write_csv, SeriesData};
use crate::lombscargle_cmd::{best_peak, Frequencies, GridArgs};
use crate::options::{cast, SearchRun};
use crate::{figures, plot};

const AFTER_HELP: &str = "INPUT is a CSV or whitespace-separated table with columns t, y \
and an optional uncertainty dy; a header line and lines starting with '#' are skipped.\n\n\
The best period is that of the lowest value of the statistic at a frequency above 0.";

/// What `pdm` and `ce` share: the light curve, its trial frequencies, the
/// precision, the backend and the outputs.
#[derive(clap::Args, Debug)]
pub struct FoldArgs {
    /// The light curve: t, y[, dy] per line.
    pub input: PathBuf,
    #[command(flatten)]
    pub grid: GridArgs,
    #[command(flatten)]
    pub run: SearchRun,
    /// CSV of frequency, period and the statistic at every trial frequency;
    /// "-" is stdout (the summary then goes to stderr).
    #[arg(long, short, value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// Draw the statistic against period with the best period marked, and the
    /// light curve folded at it with the mean of each phase bin (.svg or .png).
    #[arg(long, value_name = "FILE")]
    pub plot: Option<PathBuf>,
    /// Also list the K best distinct periods: the lowest local minima of the
    /// statistic, best first, at frequencies above 0.
    #[arg(long, value_name = "K",
          value_parser = clap::value_parser!(u64).range(1..=MAX_PEAKS as u64))]
    pub peaks: Option<u64>,
    /// With --peaks: the least distance in frequency between two listed
    /// periods (about 1 / time span keeps a minimum's side lobes out).
    #[arg(long, default_value_t = 0.0, requires = "peaks")]
    pub separation: f64,
}

/// Phase dispersion minimisation (PDM) of one light curve (its help: the
/// `Pdm` command's documentation).
#[derive(clap::Args, Debug)]
#[command(after_help = AFTER_HELP)]
pub struct PdmArgs {
    #[command(flatten)]
    pub fold: FoldArgs,
    /// Phase bins.
    #[arg(long, default_value_t = 10,
          value_parser = clap::value_parser!(u64).range(2..=MAX_PDM_BINS as u64))]
    pub bins: u64,
}

/// Conditional entropy (CE) of one light curve (its help: the `Ce` command's
/// documentation).
#[derive(clap::Args, Debug)]
#[command(after_help = AFTER_HELP)]
pub struct CeArgs {
    #[command(flatten)]
    pub fold: FoldArgs,
    /// Phase bins.
    #[arg(long, default_value_t = 10,
          value_parser = clap::value_parser!(u64).range(1..=MAX_CE_CELLS as u64))]
    pub phase_bins: u64,
    /// Magnitude bins, over y's range (phase bins x magnitude bins at most 65536).
    #[arg(long, default_value_t = 5,
          value_parser = clap::value_parser!(u64).range(1..=MAX_CE_CELLS as u64))]
    pub mag_bins: u64,
    /// Extra phase bins below its own that a sample also counts in (below --phase-bins).
    #[arg(long, default_value_t = 0,
          value_parser = clap::value_parser!(u64).range(0..MAX_CE_CELLS as u64))]
    pub phase_overlap: u64,
    /// Extra magnitude bins below its own that a sample also counts in (below --mag-bins).
    #[arg(long, default_value_t = 0,
          value_parser = clap::value_parser!(u64).range(0..MAX_CE_CELLS as u64))]
    pub mag_overlap: u64,
}

pub fn pdm(args: &PdmArgs) -> Result<(), String> {
    // In range by the parser: each fits a usize.
    let opts = PdmOptions {
        bins: args.bins as usize,
    };
    run(&args.fold, Statistic::Pdm(opts))
}

pub fn ce(args: &CeArgs) -> Result<(), String> {
    let opts = CeOptions {
        phase_bins: args.phase_bins as usize,
        mag_bins: args.mag_bins as usize,
        phase_overlap: args.phase_overlap as usize,
        mag_overlap: args.mag_overlap as usize,
    };
    run(&args.fold, Statistic::ConditionalEntropy(opts))
}

/// How a statistic is called: by its command, in the table's header and the
/// summary, and in the plot.
struct Names {
    command: &'static str,
    column: &'static str,
    title: &'static str,
    panel: &'static str,
    axis: &'static str,
}

fn names(statistic: &Statistic) -> Names {
    match statistic {
        Statistic::Pdm(_) => Names {
            command: "pdm",
            column: "theta",
            title: "phase dispersion minimisation",
            panel: "PDM theta by trial period (lower is better)",
            axis: "PDM theta",
        },
        Statistic::ConditionalEntropy(_) => Names {
            command: "ce",
            column: "entropy",
            title: "conditional entropy",
            panel: "conditional entropy by trial period (lower is better)",
            axis: "conditional entropy",
        },
    }
}

fn run(args: &FoldArgs, statistic: Statistic) -> Result<(), String> {
    let names = names(&statistic);
    // The options' combinations (cells, overlaps) as the library words them, before any work.
    statistic.validate().map_err(|e| e.to_string())?;
    let peaks = args.peaks.map(|k| PeakOptions {
        k: k as usize,
        separation: args.separation,
    });
    if let Some(p) = &peaks {
        p.validate().map_err(|e| format!("--separation: {e}"))?;
    }
    figures::check_outputs(&[args.output.as_deref()], args.plot.as_deref())?;
    let data = read_series(&args.input)?;
    let freqs = args.grid.frequencies(&data)?;
    // Progress on stderr when a CPU run is long.
    let label = format!("{} on the CPU", names.title);
    let kp = args.run.open(&label)?;
    let started = Instant::now();
    let (freqs, values) = by_dtype!(args.run.dtype, compute(&kp, &data, &freqs, &statistic))?;
    eprintln!(
        "{}: {} samples x {} frequencies on the {} in {:.1} ms",
        names.command,
        data.t.len(),
        freqs.len(),
        kp.backend_name(),
        started.elapsed().as_secs_f64() * 1e3
    );
    let best = best_frequency(&freqs, &values);
    if let Some(k) = best {
        let (lo, hi) = plot::extent(freqs.iter().copied());
        let line = format!(
            "best period {} (frequency {} of {} from {lo} to {hi}): {} {}",
            1.0 / freqs[k],
            freqs[k],
            freqs.len(),
            names.column,
            values[k]
        );
        summary(args.output.as_deref(), &line);
    }
    if let Some(opts) = &peaks {
        // Frequency 0 has no period: its value does not compete.
        let above_0: Vec<f64> = (0..freqs.len())
            .map(|k| if freqs[k] > 0.0 { values[k] } else { f64::NAN })
            .collect();
        let found = select_peaks(&above_0, &freqs, opts, statistic.better());
        for (rank, p) in found.iter().enumerate() {
            let line = format!(
                "peak {}: period {}, frequency {}, {} {}",
                rank + 1,
                1.0 / freqs[p.index],
                freqs[p.index],
                names.column,
                p.value
            );
            summary(args.output.as_deref(), &line);
        }
    }
    if let Some(path) = &args.output {
        let header = format!("frequency,period,{}", names.column);
        let row = |k: usize| format!("{},{},{}", freqs[k], 1.0 / freqs[k], values[k]);
        write_csv(path, &header, (0..freqs.len()).map(row))?;
    }
    let Some(k) = best else {
        return Err(match freqs.iter().any(|f| *f > 0.0) {
            true => format!(
                "no best period: {} is NaN at every frequency, as for a light curve \
                 without spread (constant y, or a single sample)",
                names.axis
            ),
            false => "no best period: no trial frequency is above 0".into(),
        });
    };
    if let Some(path) = &args.plot {
        let title = format!("{} of {}", names.title, args.input.display());
        let fold = figures::Fold {
            frequency: freqs[k],
            bins: statistic.phase_bins(),
            // PDM weighs samples by 1/dy^2; CE counts them alike.
            weighted: matches!(statistic, Statistic::Pdm(_)),
        };
        let figure = figures::phase_fold_search(
            &title,
            names.panel,
            names.axis,
            &freqs,
            &values,
            Some(fold),
            &data,
        );
        plot::write(&figure, path)?;
    }
    Ok(())
}

/// The index of the lowest value at a frequency above 0 (the first of equal
/// ones), leaving out NaN: `best_peak` of the values negated.
fn best_frequency(freqs: &[f64], values: &[f64]) -> Option<usize> {
    let negated: Vec<f64> = values.iter().map(|v| -v).collect();
    best_peak(|k| freqs[k], &negated)
}

/// The frequencies as searched (an array's rounded to `T`) and the statistic
/// at each, in f64.
fn compute<T: Float>(
    kp: &Kernpack,
    data: &SeriesData,
    freqs: &Frequencies,
    statistic: &Statistic,
) -> Result<(Vec<f64>, Vec<f64>), String> {
    // The third column of a light curve is its uncertainty dy.
    let (t, y, dy) = data.cast::<T>();
    let series = FoldSeries {
        t: &t,
        y: &y,
        dy: dy.as_deref(),
    };
    let f64s = |v: &[T]| v.iter().map(|x| x.to_f64()).collect::<Vec<f64>>();
    let (searched, values) = match &freqs.grid {
        Some(grid) => {
            let values = match statistic {
                Statistic::Pdm(o) => kp.pdm_uniform(&series, grid, o),
                Statistic::ConditionalEntropy(o) => {
                    kp.conditional_entropy_uniform(&series, grid, o)
                }
            };
            (freqs.values.clone(), values)
        }
        None => {
            let trial = cast::<T>(&freqs.values);
            let values = match statistic {
                Statistic::Pdm(o) => kp.pdm(&series, &trial, o),
                Statistic::ConditionalEntropy(o) => kp.conditional_entropy(&series, &trial, o),
            };
            (f64s(&trial), values)
        }
    };
    Ok((searched, f64s(&values.map_err(|e| e.to_string())?)))
}

#[cfg(test)]
mod tests {
    use super::best_frequency;

    #[test]
    fn the_best_frequency_is_the_lowest_value_above_frequency_zero() {
        let nan = f64::NAN;
        let freqs = [0.0, 0.1, 0.2, 0.3, 0.4];
        assert_eq!(best_frequency(&freqs, &[0.1, 0.5, nan, 0.3, 0.3]), Some(3));
        assert_eq!(best_frequency(&freqs, &[0.1, nan, nan, nan, nan]), None);
        assert_eq!(best_frequency(&[], &[]), None);
    }
}
