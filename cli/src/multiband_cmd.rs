//! `kernpack multiband`: the multiband Lomb-Scargle periodogram of one light
//! curve observed in several bands (one period shared by every band).
use std::path::PathBuf;
use std::time::Instant;

use kernpack::api::lombscargle::multiband::{
    MultibandMethod, MultibandOptions, MultibandSeries, MAX_MULTIBAND_NTERMS,
};
use kernpack::api::phasefold::{PeakOptions, MAX_PEAKS};
use kernpack::params::peaks::{select_peaks, Better};
use kernpack::{Float, Kernpack};

use crate::io::{header, numbers, records, summary, write_csv, SeriesData};
use crate::lombscargle_cmd::{best_peak, Frequencies, GridArgs};
use crate::options::{cast, SearchRun};

/// A light curve with a band per sample.
struct Bands {
    data: SeriesData,
    bands: Vec<u32>,
}

/// The multiband periodogram of one light curve (its help: the `Multiband`
/// command's documentation).
#[derive(clap::Args, Debug)]
#[command(
    after_help = "INPUT is a CSV or whitespace-separated table with the columns t, y and band, \
or t, y, dy and band; a header line naming them and lines starting with '#' are skipped. The band \
is the last column unless --bands names another; the other columns are t, y[, dy] in their order. \
Band labels are whole numbers from 0 to 4294967295, or text (such as g, r, i, or ztfg) when any \
label is not a number; the bands are ordered by label, as numbers or as text.\n\n\
The best period is that of the highest power at a frequency above 0."
)]
pub struct MultibandArgs {
    /// The light curve: t, y[, dy] and a band per line.
    pub input: PathBuf,
    /// The column of the band labels: its number (1 = the first) or its name
    /// in the header line [default: the last column].
    #[arg(long, value_name = "COLUMN")]
    pub bands: Option<String>,
    #[command(flatten)]
    pub grid: GridArgs,
    #[command(flatten)]
    pub run: SearchRun,
    /// flexible: one regularised fit of a shared model and a model per band at
    /// each frequency; fast: each band's own periodogram, combined.
    #[arg(long, value_parser = ["flexible", "fast"], default_value = "flexible")]
    pub method: String,
    /// Harmonics of the model every band shares (the fast method's per band).
    #[arg(long, default_value_t = 1,
          value_parser = clap::value_parser!(u64).range(0..=MAX_MULTIBAND_NTERMS as u64))]
    pub nterms_base: u64,
    /// Harmonics of each band's own model (flexible).
    #[arg(long, default_value_t = 1,
          value_parser = clap::value_parser!(u64).range(0..=MAX_MULTIBAND_NTERMS as u64))]
    pub nterms_band: u64,
    /// Ridge on the shared model's unknowns, times the normal matrix's trace
    /// (flexible) [default: none].
    #[arg(long)]
    pub reg_base: Option<f64>,
    /// Ridge on the band models' unknowns, times the normal matrix's trace (flexible).
    #[arg(long, default_value_t = 1e-6)]
    pub reg_band: f64,
    /// No ridge on the band models' unknowns (flexible).
    #[arg(long, conflicts_with = "reg_band")]
    pub no_reg_band: bool,
    /// The ridges as given, not times the trace.
    #[arg(long)]
    pub absolute_ridges: bool,
    /// Keep y as it is instead of subtracting each band's weighted mean.
    #[arg(long)]
    pub no_center: bool,
    /// CSV of frequency, period and power at every trial frequency; "-" is
    /// stdout (the summary then goes to stderr).
    #[arg(long, short, value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// Also list the K best distinct periods: the highest local maxima of the
    /// power, best first, at frequencies above 0.
    #[arg(long, value_name = "K",
          value_parser = clap::value_parser!(u64).range(1..=MAX_PEAKS as u64))]
    pub peaks: Option<u64>,
    /// With --peaks: the least distance in frequency between two listed
    /// periods (about 1 / time span keeps a peak's side lobes out).
    #[arg(long, default_value_t = 0.0, requires = "peaks")]
    pub separation: f64,
}

impl MultibandArgs {
    fn options(&self) -> MultibandOptions {
        MultibandOptions {
            method: if self.method == "fast" {
                MultibandMethod::Fast
            } else {
                MultibandMethod::Flexible
            },
            // In range by the parser.
            nterms_base: self.nterms_base as usize,
            nterms_band: self.nterms_band as usize,
            reg_base: self.reg_base,
            reg_band: (!self.no_reg_band).then_some(self.reg_band),
            regularize_by_trace: !self.absolute_ridges,
            center_data: !self.no_center,
            ..MultibandOptions::default()
        }
    }
}

/// The table's columns: t, y[, dy] and the band labels in column `bands`
/// (a 1-based number or a header name; `None`: the last column).
fn read_bands(path: &std::path::Path, bands: Option<&str>) -> Result<Bands, String> {
    let name = path.display();
    let text = std::fs::read_to_string(path).map_err(|e| format!("{name}: {e}"))?;
    let lines: Vec<(usize, Vec<&str>)> = records(&text, 0).collect();
    let Some(width) = lines.first().map(|(_, fields)| fields.len()) else {
        return Err(format!("{name}: no data rows"));
    };
    if !(3..=4).contains(&width) {
        return Err(format!(
            "{name}: expected 3 or 4 columns (t, y[, dy] and the band), found {width}"
        ));
    }
    let column =
        band_column(bands, header(&text).as_deref(), width).map_err(|e| format!("{name}: {e}"))?;
    let mut values = Vec::with_capacity(lines.len());
    let mut labels = Vec::with_capacity(lines.len());
    for (i, (number, fields)) in lines.iter().enumerate() {
        if fields.len() != width {
            return Err(format!(
                "{name}: data row {} has {} columns, the first has {width}",
                i + 1,
                fields.len()
            ));
        }
        let mut numeric = fields.clone();
        labels.push(numeric.remove(column));
        values.push(numbers(path, *number, &numeric)?);
    }
    let bands =
        band_indices(&labels).map_err(|(row, e)| format!("{name}: data row {}: {e}", row + 1))?;
    let column = |c: usize| values.iter().map(|r| r[c]).collect::<Vec<f64>>();
    Ok(Bands {
        data: SeriesData {
            t: column(0),
            y: column(1),
            w: (width == 4).then(|| column(2)),
        },
        bands,
    })
}

/// The 0-based column of `--bands` (a 1-based number, or a name of
/// `header`) in rows of `width` fields; the last without it.
fn band_column(
    bands: Option<&str>,
    header: Option<&[&str]>,
    width: usize,
) -> Result<usize, String> {
    let Some(bands) = bands else {
        return Ok(width - 1);
    };
    if let Ok(number) = bands.parse::<usize>() {
        return match number {
            1.. if number <= width => Ok(number - 1),
            _ => Err(format!(
                "--bands {bands}: the rows have columns 1 to {width}"
            )),
        };
    }
    let Some(header) = header else {
        return Err(format!(
            "--bands {bands}: no header line names the columns (give the column's number)"
        ));
    };
    header.iter().position(|h| *h == bands).ok_or_else(|| {
        format!(
            "--bands {bands}: no such column in the header ({})",
            header.join(", ")
        )
    })
}

/// Each row's band as a number from 0: the labels themselves when every one
/// is a number (whole, within u32), else their rank among the distinct
/// labels as text. An error names the 0-based row.
fn band_indices(labels: &[&str]) -> Result<Vec<u32>, (usize, String)> {
    let numbers: Option<Vec<f64>> = labels.iter().map(|l| l.parse::<f64>().ok()).collect();
    if let Some(numbers) = numbers {
        let whole = |band: f64| band >= 0.0 && band <= u32::MAX as f64 && band.fract() == 0.0;
        return numbers
            .iter()
            .enumerate()
            .map(|(row, &band)| {
                whole(band).then_some(band as u32).ok_or_else(|| {
                    let max = u32::MAX;
                    (
                        row,
                        format!("band {band} is not a whole number from 0 to {max}"),
                    )
                })
            })
            .collect();
    }
    let mut distinct = labels.to_vec();
    distinct.sort_unstable();
    distinct.dedup();
    // A rank past u32 would take over 4 billion distinct labels: refused, not wrapped.
    if distinct.len() > u32::MAX as usize {
        let many = distinct.len();
        return Err((
            0,
            format!("{many} distinct band labels, more than {}", u32::MAX),
        ));
    }
    let rank = |l: &str| distinct.binary_search(&l).expect("a listed label") as u32;
    Ok(labels.iter().map(|l| rank(l)).collect())
}

pub fn run(args: &MultibandArgs) -> Result<(), String> {
    let opts = args.options();
    opts.validate().map_err(|e| e.to_string())?;
    let peaks = args.peaks.map(|k| PeakOptions {
        k: k as usize,
        separation: args.separation,
    });
    if let Some(p) = &peaks {
        p.validate().map_err(|e| format!("--separation: {e}"))?;
    }
    let input = read_bands(&args.input, args.bands.as_deref())?;
    let freqs = args.grid.frequencies(&input.data)?;
    let kp = args.run.open("multiband periodogram on the CPU")?;
    let started = Instant::now();
    let (freqs, power) = by_dtype!(args.run.dtype, compute(&kp, &input, &freqs, &opts))?;
    let nbands = {
        let mut labels = input.bands.clone();
        labels.sort_unstable();
        labels.dedup();
        labels.len()
    };
    eprintln!(
        "multiband: {} samples in {nbands} bands x {} frequencies on the {} in {:.1} ms",
        input.bands.len(),
        freqs.len(),
        kp.backend_name(),
        started.elapsed().as_secs_f64() * 1e3
    );
    let output = args.output.as_deref();
    let best = best_peak(|k| freqs[k], &power)
        .ok_or("no best period: no trial frequency above 0 has a power")?;
    summary(
        output,
        &format!(
            "best period {} (frequency {} of {}): power {}",
            1.0 / freqs[best],
            freqs[best],
            freqs.len(),
            power[best]
        ),
    );
    if let Some(opts) = &peaks {
        // Frequency 0 has no period: its power does not compete.
        let above_0: Vec<f64> = (0..freqs.len())
            .map(|k| if freqs[k] > 0.0 { power[k] } else { f64::NAN })
            .collect();
        for (rank, p) in select_peaks(&above_0, &freqs, opts, Better::Higher)
            .iter()
            .enumerate()
        {
            let line = format!(
                "peak {}: period {}, frequency {}, power {}",
                rank + 1,
                1.0 / freqs[p.index],
                freqs[p.index],
                p.value
            );
            summary(output, &line);
        }
    }
    if let Some(path) = output {
        let row = |k: usize| format!("{},{},{}", freqs[k], 1.0 / freqs[k], power[k]);
        write_csv(path, "frequency,period,power", (0..freqs.len()).map(row))?;
    }
    Ok(())
}

/// The frequencies as searched (an array's rounded to `T`) and the power at
/// each, in f64.
fn compute<T: Float>(
    kp: &Kernpack,
    input: &Bands,
    freqs: &Frequencies,
    opts: &MultibandOptions,
) -> Result<(Vec<f64>, Vec<f64>), String> {
    let (t, y, dy) = input.data.cast::<T>();
    let series = MultibandSeries {
        t: &t,
        y: &y,
        dy: dy.as_deref(),
        bands: &input.bands,
    };
    let f64s = |v: &[T]| v.iter().map(|x| x.to_f64()).collect::<Vec<f64>>();
    let (searched, power) = match &freqs.grid {
        Some(grid) => (
            freqs.values.clone(),
            kp.lombscargle_multiband_uniform(&series, grid, opts),
        ),
        None => {
            let trial = cast::<T>(&freqs.values);
            let power = kp.lombscargle_multiband(&series, &trial, opts);
            (f64s(&trial), power)
        }
    };
    Ok((searched, f64s(&power.map_err(|e| e.to_string())?)))
}
