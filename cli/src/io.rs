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

/// Numbers separated by commas, tabs or spaces, one record per line. Blank
/// lines, lines starting with '#', and one non-numeric line before the first
/// record (a header) are skipped.
pub fn read_table(path: &Path) -> Result<Vec<Vec<f64>>, String> {
    let text = fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let path = path.display();
    let mut rows = Vec::new();
    let mut header_seen = false;
    for (number, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let fields: Result<Vec<f64>, _> = line
            .split(|c: char| c == ',' || c.is_whitespace())
            .filter(|f| !f.is_empty())
            .map(str::parse)
            .collect();
        match fields {
            Ok(values) => rows.push(values),
            Err(_) if rows.is_empty() && !header_seen => header_seen = true,
            Err(e) => return Err(format!("{path}:{}: {e}: {line:?}", number + 1)),
        }
    }
    Ok(rows)
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
    Ok(read_table(path)?.into_iter().map(|r| r[0]).collect())
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
    let bytes: Vec<u8> = values.iter().flat_map(|v| v.to_le_bytes()).collect();
    fs::write(path, bytes).map_err(|e| format!("{}: {e}", path.display()))
}

/// Writes a CSV with `header` and one row per item; "-" means stdout, where a
/// reader that stops early (`| head`) ends the output quietly.
pub fn write_csv(
    path: &Path,
    header: &str,
    rows: impl Iterator<Item = String>,
) -> Result<(), String> {
    let to_stdout = path == Path::new("-");
    let sink: Box<dyn Write> = if to_stdout {
        Box::new(std::io::stdout().lock())
    } else {
        Box::new(fs::File::create(path).map_err(|e| format!("{}: {e}", path.display()))?)
    };
    let mut out = BufWriter::new(sink);
    let result = (|| {
        writeln!(out, "{header}")?;
        for row in rows {
            writeln!(out, "{row}")?;
        }
        out.flush()
    })();
    match result {
        Err(e) if to_stdout && e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
        other => other.map_err(|e| format!("{}: {e}", path.display())),
    }
}
