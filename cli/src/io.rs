//! Reading time series and frequency lists, writing results.
use std::fs;
use std::io::{BufWriter, Write};
use std::path::Path;

use kernpack::Float;

use crate::options::cast;

/// A time series as columns t, y and optional weight (or uncertainty dy,
/// as the command reads it).
pub struct SeriesData {
    pub t: Vec<f64>,
    pub y: Vec<f64>,
    pub w: Option<Vec<f64>>,
}

impl SeriesData {
    /// The columns t, y and the optional third in precision `T`.
    pub fn cast<T: Float>(&self) -> (Vec<T>, Vec<T>, Option<Vec<T>>) {
        let third = self.w.as_deref().map(cast::<T>);
        (cast(&self.t), cast(&self.y), third)
    }
}

/// A line of a command's summary: on stdout, or on stderr when `output`, the
/// command's table, goes to stdout ("-").
pub fn summary(output: Option<&Path>, line: &str) {
    match output == Some(Path::new("-")) {
        true => eprintln!("{line}"),
        false => say!("{line}"),
    }
}

/// The fields of every line of a text table that is not blank, not a
/// comment (starting with '#') nor a byte-order mark, separated by commas,
/// tabs or spaces; each with its 1-based line number.
fn field_lines(text: &str) -> impl Iterator<Item = (usize, Vec<&str>)> {
    text.strip_prefix('\u{feff}')
        .unwrap_or(text)
        .lines()
        .enumerate()
        .filter_map(|(number, line)| {
            let line = line.trim();
            if line.is_empty() || line.starts_with('#') {
                return None;
            }
            let fields = line
                .split(|c: char| c == ',' || c.is_whitespace())
                .filter(|f| !f.is_empty())
                .collect();
            Some((number + 1, fields))
        })
}

/// Whether `fields` make a header line: none after the first `skip` is a number.
fn is_header(fields: &[&str], skip: usize) -> bool {
    fields.len() > skip && fields.iter().skip(skip).all(|f| f.parse::<f64>().is_err())
}

/// The column names of a text table: its first line (see [`field_lines`])
/// when that is a header, none of whose fields is a number.
pub fn header(text: &str) -> Option<Vec<&str>> {
    field_lines(text)
        .next()
        .map(|(_, fields)| fields)
        .filter(|fields| is_header(fields, 0))
}

/// The lines of a text table that hold records: numbers, or an id then
/// numbers, separated by commas, tabs or spaces. Blank lines, lines starting
/// with '#', a byte-order mark, and a header (a first line none of whose
/// fields after the first `skip` is a number, such as `t,y`) are left out.
/// Each record comes with its 1-based line number.
pub fn records(text: &str, skip: usize) -> impl Iterator<Item = (usize, Vec<&str>)> {
    field_lines(text)
        .enumerate()
        .filter(move |(k, (_, fields))| *k > 0 || !is_header(fields, skip))
        .map(|(_, line)| line)
}

/// Numbers separated by commas, tabs or spaces, one record per line (see
/// [`records`] for what is skipped); a field that is not a number is an
/// error naming its line.
pub fn read_table(path: &Path) -> Result<Vec<Vec<f64>>, String> {
    let text = fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    records(&text, 0)
        .map(|(number, fields)| numbers(path, number, &fields))
        .collect()
}

/// The `fields` of line `number` of `path` as numbers; a field that is not a
/// number is an error naming the file and the line.
pub fn numbers(path: &Path, number: usize, fields: &[&str]) -> Result<Vec<f64>, String> {
    let path = path.display();
    fields
        .iter()
        .map(|f| {
            f.parse::<f64>()
                .map_err(|e| format!("{path}:{number}: {e}: {f:?}"))
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

/// Writes a file whole or not at all. A new or regular file is written into
/// a hidden staging file beside it (see [`staging`]), given the old file's
/// permissions, and renamed over it once every byte is written; on failure
/// the staging file is removed. A run that fails half way (a full disk, a
/// size limit) then leaves no truncated output, and an older file of that
/// name stays as it was. Anything else (a device such as /dev/null, a pipe,
/// a symbolic link) is written in place, as it always was.
pub fn write_file(
    path: &Path,
    fill: impl FnOnce(&mut dyn Write) -> std::io::Result<()>,
) -> std::io::Result<()> {
    let existing = match fs::symlink_metadata(path) {
        Ok(meta) => Some(meta),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
        Err(e) => return Err(e),
    };
    if existing.as_ref().is_some_and(|m| !m.file_type().is_file()) {
        let mut out = BufWriter::new(fs::File::create(path)?);
        fill(&mut out)?;
        return out.flush();
    }
    if existing.is_some() {
        // Refused where writing the file itself would be (read-only).
        fs::OpenOptions::new().write(true).open(path)?;
    }
    // Dropped on any error below, the staging file is removed.
    let mut staging = staging(path)?;
    let mut out = BufWriter::new(staging.as_file_mut());
    fill(&mut out)?;
    out.flush()?;
    drop(out);
    if let Some(meta) = &existing {
        staging.as_file().set_permissions(meta.permissions())?;
    }
    staging.as_file().sync_all()?;
    staging.persist(path).map(drop).map_err(|e| e.error)
}

/// A new hidden file beside `path`, named after it (`.NAME.kernpack-*.part`),
/// created exclusively (an existing file or link of that name is never
/// opened, so nothing planted there is written through) with the
/// permissions a plain create gives, and removed when dropped unless
/// persisted.
fn staging(path: &Path) -> std::io::Result<tempfile::NamedTempFile> {
    let name = path.file_name().unwrap_or_default().to_string_lossy();
    let prefix = format!(".{name}.kernpack-");
    let mut builder = tempfile::Builder::new();
    builder.prefix(&prefix).suffix(".part");
    #[cfg(unix)]
    builder.permissions(std::os::unix::fs::PermissionsExt::from_mode(0o666));
    builder.tempfile_in(path.parent().unwrap_or(Path::new("")))
}

/// Refuses, before any work, an output that cannot be written: a missing or
/// read-only directory, a read-only file, a path that is a directory ("-",
/// stdout, is always writable; devices and pipes are opened as they will
/// be). A run then never computes for minutes and fails at its end, or
/// writes one output of two.
pub fn check_output(path: &Path) -> Result<(), String> {
    if path == Path::new("-") {
        return Ok(());
    }
    let fail = |e: &dyn std::fmt::Display| format!("{}: {e}", path.display());
    if path.is_dir() {
        return Err(fail(&"is a directory"));
    }
    match fs::symlink_metadata(path) {
        Ok(meta) => {
            // Writable as it is (not truncated here).
            fs::OpenOptions::new()
                .write(true)
                .open(path)
                .map_err(|e| fail(&e))?;
            if !meta.file_type().is_file() {
                return Ok(()); // written in place
            }
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => return Err(fail(&e)),
    }
    // Creating the staging file (removed again) is what writing a regular file does first.
    staging(path).map(drop).map_err(|e| fail(&e))
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

#[cfg(test)]
mod tests {
    use super::{check_output, write_file};

    fn scratch(name: &str) -> std::path::PathBuf {
        let dir = std::env::temp_dir().join(format!("kernpack-io-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    fn leftovers(dir: &std::path::Path) -> Vec<String> {
        std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|n| n.ends_with(".part"))
            .collect()
    }

    #[test]
    fn a_write_that_fails_half_way_leaves_the_old_file_and_nothing_else() {
        let dir = scratch("fail");
        let path = dir.join("out.csv");
        std::fs::write(&path, "old\n").unwrap();
        let err = write_file(&path, |out| {
            out.write_all(b"new, half")?;
            Err(std::io::Error::other("disk full"))
        })
        .unwrap_err();
        assert_eq!(err.to_string(), "disk full");
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "old\n");
        assert!(leftovers(&dir).is_empty(), "{:?}", leftovers(&dir));
        write_file(&path, |out| out.write_all(b"new\n")).unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "new\n");
        assert!(leftovers(&dir).is_empty());
    }

    #[cfg(unix)]
    #[test]
    fn links_and_devices_are_written_through_and_modes_kept() {
        use std::os::unix::fs::PermissionsExt;
        let dir = scratch("links");
        let target = dir.join("target.csv");
        std::fs::write(&target, "old").unwrap();
        std::fs::set_permissions(&target, std::fs::Permissions::from_mode(0o640)).unwrap();
        write_file(&target, |out| out.write_all(b"new")).unwrap();
        let mode = std::fs::metadata(&target).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o640, "the file's mode is kept");
        let link = dir.join("link.csv");
        std::os::unix::fs::symlink(&target, &link).unwrap();
        check_output(&link).unwrap();
        write_file(&link, |out| out.write_all(b"through the link")).unwrap();
        assert!(std::fs::symlink_metadata(&link)
            .unwrap()
            .file_type()
            .is_symlink());
        assert_eq!(
            std::fs::read_to_string(&target).unwrap(),
            "through the link"
        );
        let null = std::path::Path::new("/dev/null");
        if null.exists() {
            check_output(null).unwrap();
            write_file(null, |out| out.write_all(b"gone")).unwrap();
            assert!(!std::fs::symlink_metadata(null)
                .unwrap()
                .file_type()
                .is_file());
        }
        assert!(leftovers(&dir).is_empty(), "{:?}", leftovers(&dir));
    }
}
