//! Reading time series and frequency lists, writing results.
use std::fs;
use std::io::{BufWriter, Write};
use std::path::Path;

/// A time series as columns t, y and optional weight.
pub struct SeriesData {
    pub t: Vec<f64>,
    pub y: Vec<f64>,
    pub w: Option<Vec<f64>>,
}

/// The lines of a text table that hold records: numbers, or an id then
/// numbers, separated by commas, tabs or spaces. Blank lines, lines starting
/// with '#', a byte-order mark, and a header (a first line none of whose
/// fields after the first `skip` is a number, such as `t,y`) are left out.
/// Each record comes with its 1-based line number.
pub fn records(text: &str, skip: usize) -> impl Iterator<Item = (usize, Vec<&str>)> {
    let mut first = true;
    text.strip_prefix('\u{feff}')
        .unwrap_or(text)
        .lines()
        .enumerate()
        .filter_map(move |(number, line)| {
            let line = line.trim();
            if line.is_empty() || line.starts_with('#') {
                return None;
            }
            let fields: Vec<&str> = line
                .split(|c: char| c == ',' || c.is_whitespace())
                .filter(|f| !f.is_empty())
                .collect();
            let header = first
                && fields.len() > skip
                && fields.iter().skip(skip).all(|f| f.parse::<f64>().is_err());
            first = false;
            (!header).then_some((number + 1, fields))
        })
}

/// Numbers separated by commas, tabs or spaces, one record per line (see
/// [`records`] for what is skipped); a field that is not a number is an
/// error naming its line.
pub fn read_table(path: &Path) -> Result<Vec<Vec<f64>>, String> {
    let text = fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let path = path.display();
    records(&text, 0)
        .map(|(number, fields)| {
            fields
                .iter()
                .map(|f| {
                    f.parse::<f64>()
                        .map_err(|e| format!("{path}:{number}: {e}: {f:?}"))
                })
                .collect()
        })
        .collect()
}

pub fn read_series(path: &Path) -> Result<SeriesData, String> {
    let rows = read_table(path)?;
    let path = path.display();
    if rows.is_empty() {
        return Err(format!("{path}: no data rows"));
    }
    let width = rows[0].len();
    if !(2..=3).contains(&width) {
        return Err(format!(
            "{path}: expected 2 or 3 columns (t, y[, weight]), found {width}"
        ));
    }
    if let Some((i, row)) = rows.iter().enumerate().find(|(_, r)| r.len() != width) {
        return Err(format!(
            "{path}: data row {} has {} columns, the first has {width}",
            i + 1,
            row.len()
        ));
    }
    Ok(SeriesData {
        t: rows.iter().map(|r| r[0]).collect(),
        y: rows.iter().map(|r| r[1]).collect(),
        w: (width == 3).then(|| rows.iter().map(|r| r[2]).collect()),
    })
}

/// One frequency per line (or the first column).
pub fn read_column(path: &Path) -> Result<Vec<f64>, String> {
    let rows = read_table(path)?;
    if rows.is_empty() {
        return Err(format!("{}: no values", path.display()));
    }
    // A line of separators only (",") has no fields.
    rows.into_iter()
        .map(|r| r.first().copied())
        .collect::<Option<Vec<f64>>>()
        .ok_or_else(|| format!("{}: a line holds no value", path.display()))
}

pub fn read_raw_f64(path: &Path) -> Result<Vec<f64>, String> {
    let bytes = fs::read(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let path = path.display();
    if bytes.len() % 8 != 0 {
        return Err(format!(
            "{path}: {} bytes is not a whole number of f64",
            bytes.len()
        ));
    }
    Ok(bytes
        .chunks_exact(8)
        .map(|b| f64::from_le_bytes(b.try_into().unwrap()))
        .collect())
}

pub fn write_raw_f64(path: &Path, values: &[f64]) -> Result<(), String> {
    write_file(path, |out| {
        values
            .iter()
            .try_for_each(|v| out.write_all(&v.to_le_bytes()))
    })
    .map_err(|e| format!("{}: {e}", path.display()))
}

/// Writes a file whole or not at all: into a hidden file beside `path`,
/// renamed over `path` once every byte is written, removed on failure. A run
/// that fails half way (a full disk, a size limit) leaves no truncated
/// output, and an older file of that name stays as it was.
pub fn write_file(
    path: &Path,
    fill: impl FnOnce(&mut dyn Write) -> std::io::Result<()>,
) -> std::io::Result<()> {
    let staging = staging_path(path);
    let written = (|| {
        let mut out = BufWriter::new(fs::File::create(&staging)?);
        fill(&mut out)?;
        out.into_inner().map_err(|e| e.into_error())?.sync_all()?;
        fs::rename(&staging, path)
    })();
    if written.is_err() {
        let _ = fs::remove_file(&staging);
    }
    written
}

fn staging_path(path: &Path) -> std::path::PathBuf {
    let name = path
        .file_name()
        .map_or_else(Default::default, |n| n.to_string_lossy().into_owned());
    path.with_file_name(format!(".{name}.kernpack-{}.part", std::process::id()))
}

/// Refuses, before any work, an output that cannot be written: a missing or
/// read-only directory, a path that is a directory ("-", stdout, is always
/// writable). A run then never computes for minutes and fails at its end,
/// or writes one output of two.
pub fn check_output(path: &Path) -> Result<(), String> {
    if path == Path::new("-") {
        return Ok(());
    }
    let fail = |e: &dyn std::fmt::Display| format!("{}: {e}", path.display());
    if path.is_dir() {
        return Err(fail(&"is a directory"));
    }
    // Creating the staging file is what writing will do first.
    let staging = staging_path(path);
    fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&staging)
        .map_err(|e| fail(&e))?;
    let _ = fs::remove_file(&staging);
    Ok(())
}

/// Writes a CSV with `header` and one row per item; "-" means stdout, where a
/// reader that stops early (`| head`) ends the output quietly.
pub fn write_csv(
    path: &Path,
    header: &str,
    rows: impl Iterator<Item = String>,
) -> Result<(), String> {
    let write_rows = |out: &mut dyn Write| {
        writeln!(out, "{header}")?;
        for row in rows {
            writeln!(out, "{row}")?;
        }
        out.flush()
    };
    let result = if path == Path::new("-") {
        match write_rows(&mut BufWriter::new(std::io::stdout().lock())) {
            Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
            other => other,
        }
    } else {
        write_file(path, write_rows)
    };
    result.map_err(|e| format!("{}: {e}", path.display()))
}
