//! `kernpack lombscargle-batch`: many light curves in one file (a series id
//! column), one batched call, the best period of each (only the peaks are
//! computed unless the periodograms are asked for).
use std::collections::HashMap;
use std::f64::consts::TAU;
use std::path::{Path, PathBuf};
use std::time::Instant;

use kernpack::api::lombscargle::batch::{Batch, BatchGrid};
use kernpack::api::lombscargle::peaks::Peak;
use kernpack::api::lombscargle::UniformGrid;
use kernpack::{Float, Kernpack, LombScargleOptions, Periodogram};

use crate::io::{numbers, records, write_csv};
use crate::lombscargle_cmd::{best_peak, check_band, time_span};
use crate::options::{cast, Dtype, NormalizeArg, PeriodogramArgs, Placement};
use crate::{figures, plot};

/// Periodograms of many series in one batched call; the best period of each.
#[derive(clap::Args, Debug)]
#[command(
    after_help = "INPUT is a CSV or whitespace-separated table with columns id, t, y and an \
optional weight; the rows of one id form a series (ids are any text, rows of a series need not be \
adjacent). A header line and lines starting with '#' are skipped."
)]
pub struct BatchArgs {
    /// The series: id, t, y[, weight] per line.
    pub input: PathBuf,
    /// One shared grid from here, cycles per time unit [default: 1/span of each series].
    #[arg(long, requires = "fmax")]
    pub fmin: Option<f64>,
    /// One shared grid up to here, cycles per time unit [default: n/(2 span) of each series].
    #[arg(long, requires = "fmin")]
    pub fmax: Option<f64>,
    /// Frequencies per series.
    #[arg(long, default_value_t = 10_000, value_parser = clap::value_parser!(u32).range(1..))]
    pub nf: u32,
    /// Precision of the computation (f32 is the survey setting).
    #[arg(long, value_enum, default_value_t = Dtype::F32)]
    pub dtype: Dtype,
    #[command(flatten)]
    pub at: Placement,
    #[command(flatten)]
    pub periodogram: PeriodogramArgs,
    /// CSV of series, samples, best_frequency, best_period, best_power (best_abs_amplitude
    /// with --normalize amplitude); "-" is stdout.
    #[arg(long, short, value_name = "FILE", default_value = "-")]
    pub output: PathBuf,
    /// Also write every periodogram, long format: series, frequency, power (abs_amplitude
    /// with --normalize amplitude)
    /// (all periodograms are then held in memory; without this option only
    /// each series' best peak is computed, in bounded memory).
    #[arg(long, value_name = "FILE")]
    pub periodograms: Option<PathBuf>,
    /// Draw the distribution of the best periods (.svg or .png).
    #[arg(long, value_name = "FILE")]
    pub plot: Option<PathBuf>,
}

struct Table {
    ids: Vec<String>,
    t: Vec<f64>,
    y: Vec<f64>,
    w: Option<Vec<f64>>,
    offsets: Vec<usize>,
}

/// Groups rows by id, keeping the order in which ids first appear.
fn read_batch(path: &Path) -> Result<Table, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    // Keyed by the ids in `text`: no owned key per row.
    let mut index: HashMap<&str, usize> = HashMap::new();
    let mut ids = Vec::new();
    // (series, t, y, weight) per row, in file order.
    let mut rows: Vec<(usize, f64, f64, f64)> = Vec::new();
    let mut width = None;
    for (number, fields) in records(&text, 1) {
        let values = numbers(path, number, &fields[1..])?;
        if !(2..=3).contains(&values.len()) || *width.get_or_insert(values.len()) != values.len() {
            let path = path.display();
            return Err(format!(
                "{path}:{number}: expected id, t, y[, weight] in every row"
            ));
        }
        let series = *index.entry(fields[0]).or_insert_with(|| {
            ids.push(fields[0].to_owned());
            ids.len() - 1
        });
        let w = values.get(2).copied().unwrap_or(f64::NAN);
        rows.push((series, values[0], values[1], w));
    }
    if rows.is_empty() {
        return Err(format!("{}: no data rows", path.display()));
    }
    // Stable: each series keeps its rows' order.
    rows.sort_by_key(|r| r.0);
    let ends = rows.chunk_by(|a, b| a.0 == b.0).scan(0, |end, run| {
        *end += run.len();
        Some(*end)
    });
    let offsets = std::iter::once(0).chain(ends).collect();
    Ok(Table {
        ids,
        t: rows.iter().map(|r| r.1).collect(),
        y: rows.iter().map(|r| r.2).collect(),
        w: (width == Some(3)).then(|| rows.iter().map(|r| r.3).collect()),
        offsets,
    })
}

pub fn run(args: &BatchArgs) -> Result<(), String> {
    let outputs = [Some(args.output.as_path()), args.periodograms.as_deref()];
    figures::check_outputs(&outputs, args.plot.as_deref())?;
    let table = read_batch(&args.input)?;
    let nf = args.nf as usize;
    let opts = args.periodogram.options();
    // Grids in cycles per time unit; the kernels take angular frequencies.
    let grids: Vec<UniformGrid> = match (args.fmin, args.fmax) {
        (Some(lo), Some(hi)) => {
            check_band(lo, hi)?;
            vec![UniformGrid::spanning(lo, hi, nf)]
        }
        // Neither (clap requires both or neither): a grid per series.
        _ => (0..table.ids.len())
            .map(|s| {
                let ts = &table.t[table.offsets[s]..table.offsets[s + 1]];
                let span = time_span(ts);
                let (fmin, fmax) = (1.0 / span, ts.len() as f64 / (2.0 * span));
                if !(fmin.is_finite() && fmax.is_finite() && fmin < fmax) {
                    return Err(format!(
                        "series {}: {} samples over a span of {span}: its default grid, \
                         1/span to n/(2 span), is empty (it needs 3 samples at distinct \
                         times); give --fmin and --fmax, or leave the series out",
                        table.ids[s],
                        ts.len()
                    ));
                }
                Ok(UniformGrid::spanning(fmin, fmax, nf))
            })
            .collect::<Result<_, String>>()?,
    };
    let kp = args.at.open()?;
    let started = Instant::now();
    let grid_of = |s: usize| grids[if grids.len() == 1 { 0 } else { s }];
    let all = args.periodograms.is_some();
    let computed = by_dtype!(args.dtype, compute(&kp, &table, &grids, nf, &opts, all))?;
    // (frequency, power) of each series' highest peak at a non-zero frequency.
    let best: Vec<Option<(f64, f64)>> = match &computed {
        Computed::Periodograms(result) => result
            .iter()
            .enumerate()
            .map(|(s, p)| {
                let m = p.magnitudes();
                best_peak(|k| grid_of(s).frequency(k), &m).map(|k| (grid_of(s).frequency(k), m[k]))
            })
            .collect(),
        Computed::Peaks(peaks) => peaks
            .iter()
            .enumerate()
            .map(|(s, peak)| peak.map(|(k, value)| (grid_of(s).frequency(k), value)))
            .collect(),
    };
    eprintln!(
        "lombscargle-batch: {} series, {} samples, {nf} frequencies each, on the {} in {:.1} ms",
        table.ids.len(),
        table.t.len(),
        kp.backend_name(),
        started.elapsed().as_secs_f64() * 1e3
    );
    let rows = best.iter().enumerate().map(|(s, peak)| {
        let n = table.offsets[s + 1] - table.offsets[s];
        match peak {
            Some((f, power)) => format!("{},{n},{f},{},{power}", table.ids[s], 1.0 / f),
            None => format!("{},{n},,,", table.ids[s]),
        }
    });
    // With --normalize amplitude the peaks are of |amplitude|, not power.
    let value = if args.periodogram.normalize == NormalizeArg::Amplitude {
        "abs_amplitude"
    } else {
        "power"
    };
    write_csv(
        &args.output,
        &format!("series,samples,best_frequency,best_period,best_{value}"),
        rows,
    )?;
    if let Some(path) = &args.plot {
        let periods: Vec<f64> = best.iter().flatten().map(|(f, _)| 1.0 / f).collect();
        let title = format!(
            "best periods of the {} series in {}",
            table.ids.len(),
            args.input.display()
        );
        let figure = figures::best_periods(&title, &periods);
        plot::write(&figure, path)?;
    }
    if let (Some(path), Computed::Periodograms(result)) = (&args.periodograms, &computed) {
        let rows = result.iter().enumerate().flat_map(|(s, p)| {
            let grid = grid_of(s);
            let id = table.ids[s].clone();
            p.magnitudes()
                .into_iter()
                .enumerate()
                .map(move |(k, v)| format!("{id},{},{v}", grid.frequency(k)))
        });
        write_csv(path, &format!("series,frequency,{value}"), rows)?;
    }
    Ok(())
}

/// What is computed: the periodograms with --periodograms, else each
/// series' best peak, since a batch's periodograms need not fit in memory
/// (10^6 series x 10^4 frequencies would be 80 GB), and on a GPU only one
/// index and value per series come back.
enum Computed {
    Periodograms(Vec<Periodogram<f64>>),
    /// Each series' best peak: index in its grid, value.
    Peaks(Vec<Option<(usize, f64)>>),
}

/// The periodograms (`all`) or peaks of the table's series in precision `T`,
/// on the grids (cycles per time unit; one shared, or one per series) in the
/// kernels' angular frequencies. The peaks (index in the series' grid,
/// value) follow `best_peak`'s rule without the periodograms: only a shared
/// grid from `--fmin 0` starts at frequency 0, and that frequency is then
/// left out of the computed grid.
fn compute<T: Float>(
    kp: &Kernpack,
    table: &Table,
    grids: &[UniformGrid],
    nf: usize,
    opts: &LombScargleOptions,
    all: bool,
) -> Result<Computed, String> {
    let (t, y) = (cast::<T>(&table.t), cast::<T>(&table.y));
    let w = table.w.as_deref().map(cast::<T>);
    let batch = Batch {
        t: &t,
        y: &y,
        weights: w.as_deref(),
        offsets: &table.offsets,
    };
    let skip = usize::from(!all && grids.len() == 1 && grids[0].f0 == 0.0);
    // With frequency 0 alone there is no peak; the call still checks the input.
    let (first, has_peak) = if nf > skip { (skip, true) } else { (0, false) };
    let (f0, df): (Vec<f64>, Vec<f64>) = grids
        .iter()
        .map(|g| (g.frequency(first) * TAU, g.df * TAU))
        .unzip();
    let nf = nf - first;
    let grid = match (&f0[..], &df[..]) {
        ([f0], [df]) => BatchGrid::Shared(UniformGrid::new(*f0, *df, nf)),
        (f0, df) => BatchGrid::PerSeries { f0, df, nf },
    };
    let fail = |e: kernpack::Error| e.to_string();
    if all {
        let result = kp.lombscargle_batch(&batch, &grid, opts).map_err(fail)?;
        return Ok(Computed::Periodograms(
            result.iter().map(|p| p.cast()).collect(),
        ));
    }
    let peaks = kp
        .lombscargle_batch_peaks(&batch, &grid, opts)
        .map_err(fail)?;
    let peak = |p: Option<Peak>| p.filter(|_| has_peak).map(|p| (p.index + skip, p.value));
    Ok(Computed::Peaks(peaks.into_iter().map(peak).collect()))
}
