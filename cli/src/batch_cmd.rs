//! `kernpack lombscargle-batch`: many light curves in one file (a series id
//! column), one launch, the best period of each.
use std::collections::HashMap;
use std::f64::consts::TAU;
use std::time::Instant;

use kernpack::api::lombscargle::batch::{Batch, BatchGrid};
use kernpack::api::lombscargle::UniformGrid;
use kernpack::{Backend, Float, Kernpack, LombScargleOptions, Normalize, Periodogram};

use crate::args::Args;
use crate::io::write_csv;

pub const HELP: &str = "\
kernpack lombscargle-batch INPUT [options]
  INPUT                 CSV or whitespace table: id, t, y[, weight]; rows of one id form a series
                        (a header line is skipped; ids are any text)
  --fmin F --fmax F     one shared grid in cycles per time unit; without them each series gets
                        1/span .. n/(2 span) of its own
  --nf N                frequencies per series (default 10000)
  --dtype f32|f64       precision (default f32: the survey setting)
  --backend auto|gpu|cpu
  --normalize power|normalize|amplitude, --floating-mean, --precenter   (as lombscargle)
  --output FILE         CSV: series, samples, best_frequency, best_period, best_power (default stdout)
  --periodograms FILE   also every periodogram, long format: series, frequency, power
  --plot FILE.svg|png   histogram of the best periods";

struct Table {
    ids: Vec<String>,
    t: Vec<f64>,
    y: Vec<f64>,
    w: Option<Vec<f64>>,
    offsets: Vec<usize>,
}

/// (t, y, weight) of one row.
type Sample = (f64, f64, Option<f64>);

/// Groups rows by id, keeping the order in which ids first appear.
fn read_batch(path: &str) -> Result<Table, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{path}: {e}"))?;
    let mut index: HashMap<String, usize> = HashMap::new();
    let mut rows: Vec<(String, Vec<Sample>)> = Vec::new();
    let mut width = None;
    for (number, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let fields: Vec<&str> = line
            .split(|c: char| c == ',' || c.is_whitespace())
            .filter(|f| !f.is_empty())
            .collect();
        let values: Result<Vec<f64>, _> = fields.iter().skip(1).map(|f| f.parse::<f64>()).collect();
        let values = match values {
            Ok(v) => v,
            Err(_) if rows.is_empty() && number == 0 => continue, // a header line
            Err(e) => return Err(format!("{path}:{}: {e}: {line:?}", number + 1)),
        };
        if !(2..=3).contains(&values.len()) || *width.get_or_insert(values.len()) != values.len() {
            return Err(format!(
                "{path}:{}: expected id, t, y[, weight] in every row",
                number + 1
            ));
        }
        let slot = *index.entry(fields[0].to_owned()).or_insert_with(|| {
            rows.push((fields[0].to_owned(), Vec::new()));
            rows.len() - 1
        });
        rows[slot]
            .1
            .push((values[0], values[1], values.get(2).copied()));
    }
    if rows.is_empty() {
        return Err(format!("{path}: no data rows"));
    }
    let weighted = width == Some(3);
    let mut table = Table {
        ids: vec![],
        t: vec![],
        y: vec![],
        w: weighted.then(Vec::new),
        offsets: vec![0],
    };
    for (id, samples) in rows {
        table.ids.push(id);
        for (t, y, w) in samples {
            table.t.push(t);
            table.y.push(y);
            if let (Some(ws), Some(w)) = (table.w.as_mut(), w) {
                ws.push(w);
            }
        }
        table.offsets.push(table.t.len());
    }
    Ok(table)
}

pub fn run(raw: &[String]) -> Result<(), String> {
    let Some((input, rest)) = raw.split_first().filter(|(i, _)| !i.starts_with("--")) else {
        return Err(format!("missing INPUT\n{HELP}"));
    };
    let args = Args::parse(
        rest,
        &[
            "fmin",
            "fmax",
            "nf",
            "dtype",
            "backend",
            "normalize",
            "output",
            "periodograms",
            "plot",
        ],
        &["floating-mean", "precenter"],
    )?;
    let table = read_batch(input)?;
    let nf: usize = args.get_or("nf", 10_000)?;
    let opts = LombScargleOptions {
        normalize: args.get_or("normalize", Normalize::Power)?,
        floating_mean: args.switch("floating-mean"),
        precenter: args.switch("precenter"),
    };
    // Grids in cycles per time unit; the kernels take angular frequencies.
    let grids: Vec<UniformGrid> = match (args.get::<f64>("fmin")?, args.get::<f64>("fmax")?) {
        (Some(lo), Some(hi)) => vec![UniformGrid::spanning(lo, hi, nf)],
        (None, None) => (0..table.ids.len())
            .map(|s| {
                let ts = &table.t[table.offsets[s]..table.offsets[s + 1]];
                let span = ts.iter().cloned().fold(f64::NEG_INFINITY, f64::max)
                    - ts.iter().cloned().fold(f64::INFINITY, f64::min);
                let span = if span > 0.0 { span } else { 1.0 };
                UniformGrid::spanning(1.0 / span, ts.len().max(2) as f64 / (2.0 * span), nf)
            })
            .collect(),
        _ => return Err("give both --fmin and --fmax, or neither".into()),
    };
    let kp = Kernpack::new(args.get_or("backend", Backend::Auto)?).map_err(|e| e.to_string())?;
    let started = Instant::now();
    let result = match args.str("dtype").unwrap_or("f32") {
        "f32" => compute::<f32>(&kp, &table, &grids, nf, &opts),
        "f64" => compute::<f64>(&kp, &table, &grids, nf, &opts),
        other => return Err(format!("--dtype {other:?}: expected f32 or f64")),
    }?;
    eprintln!(
        "lombscargle-batch: {} series, {} samples, {nf} frequencies each, on the {} in {:.1} ms",
        table.ids.len(),
        table.t.len(),
        kp.backend_name(),
        started.elapsed().as_secs_f64() * 1e3
    );
    let grid_of = |s: usize| grids[if grids.len() == 1 { 0 } else { s }];
    // (frequency, power) of the highest peak of each series.
    let peaks: Vec<Option<(f64, f64)>> = result
        .iter()
        .enumerate()
        .map(|(s, p)| {
            let m = p.magnitudes();
            (0..m.len())
                .filter(|&k| grid_of(s).frequency(k) > 0.0)
                .max_by(|&a, &b| m[a].total_cmp(&m[b]))
                .map(|k| (grid_of(s).frequency(k), m[k]))
        })
        .collect();
    let best = peaks.iter().enumerate().map(|(s, peak)| {
        let n = table.offsets[s + 1] - table.offsets[s];
        match peak {
            Some((f, power)) => format!("{},{n},{f},{},{power}", table.ids[s], 1.0 / f),
            None => format!("{},{n},,,", table.ids[s]),
        }
    });
    write_csv(
        args.str("output").unwrap_or("-"),
        "series,samples,best_frequency,best_period,best_power",
        best,
    )?;
    if let Some(path) = args.str("periodograms") {
        let rows = result.iter().enumerate().flat_map(|(s, p)| {
            let grid = grid_of(s);
            let id = table.ids[s].clone();
            p.magnitudes()
                .into_iter()
                .enumerate()
                .map(move |(k, v)| format!("{id},{},{v}", grid.frequency(k)))
        });
        write_csv(path, "series,frequency,power", rows)?;
    }
    if let Some(path) = args.str("plot") {
        let periods: Vec<f64> = peaks
            .iter()
            .map(|peak| peak.map_or(f64::NAN, |(f, _)| 1.0 / f))
            .collect();
        let title = format!("Lomb-Scargle periodograms of the series in {input}");
        let figure = crate::figures::best_periods(&title, &periods);
        crate::figures::write(&figure, std::path::Path::new(path))
            .map_err(|e| format!("{path}: {e}"))?;
        eprintln!("plot written to {path}");
    }
    Ok(())
}

fn compute<T: Float>(
    kp: &Kernpack,
    table: &Table,
    grids: &[UniformGrid],
    nf: usize,
    opts: &LombScargleOptions,
) -> Result<Vec<Periodogram<f64>>, String> {
    let cast = |v: &[f64]| v.iter().map(|x| T::from_f64(*x)).collect::<Vec<T>>();
    let (t, y) = (cast(&table.t), cast(&table.y));
    let w = table.w.as_deref().map(cast);
    let batch = Batch {
        t: &t,
        y: &y,
        weights: w.as_deref(),
        offsets: &table.offsets,
    };
    let f0: Vec<f64> = grids.iter().map(|g| g.f0 * TAU).collect();
    let df: Vec<f64> = grids.iter().map(|g| g.df * TAU).collect();
    let batch_grid = if grids.len() == 1 {
        BatchGrid::Shared(UniformGrid::new(f0[0], df[0], nf))
    } else {
        BatchGrid::PerSeries {
            f0: &f0,
            df: &df,
            nf,
        }
    };
    let result = kp
        .lombscargle_batch(&batch, &batch_grid, opts)
        .map_err(|e| e.to_string())?;
    Ok(result.iter().map(|p| p.cast()).collect())
}
