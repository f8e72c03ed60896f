//! Progress of long CPU-backend runs on stderr: a bar on a terminal, a plain
//! line every 10% otherwise (logs and pipes get no carriage returns).
use std::io::IsTerminal;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressStyle};
use kernpack::api::Progress;
use kernpack::Kernpack;

/// Runs shorter than this report nothing: progress of a run that is over
/// before anyone could read it is noise.
const QUIET_START: Duration = Duration::from_secs(1);

/// `kp`, reporting the progress of its long CPU runs (labelled `label`) on
/// stderr, silent for a run's first second; GPU runs are short and report nothing.
pub fn on_cpu(kp: Kernpack, label: &str) -> Kernpack {
    if kp.gpu().is_some() {
        return kp;
    }
    let report = if std::io::stderr().is_terminal() {
        bar(label)
    } else {
        plain_lines(label.to_owned(), |line| eprintln!("{line}"))
    };
    kp.with_progress(after(QUIET_START, report))
}

/// `report`, called only once `quiet` has passed since this was made.
fn after(quiet: Duration, report: Progress) -> Progress {
    let started = Instant::now();
    Arc::new(move |done, total| {
        if started.elapsed() >= quiet {
            report(done, total)
        }
    })
}

fn bar(label: &str) -> Progress {
    let bar = ProgressBar::new(0).with_message(label.to_owned());
    bar.set_style(
        ProgressStyle::with_template("{msg} [{bar:40}] {percent:>3}% (ETA {eta})")
            .expect("a valid template")
            .progress_chars("=> "),
    );
    Arc::new(move |done, total| {
        bar.set_length(total);
        bar.set_position(done);
        if done >= total {
            bar.finish_and_clear();
        }
    })
}

/// Calls `emit` with "LABEL: P%" each time the run passes another 10%.
fn plain_lines(label: String, emit: impl Fn(&str) + Send + Sync + 'static) -> Progress {
    let last_decile = AtomicU64::new(0);
    Arc::new(move |done, total| {
        let decile = (done.min(total) * 10).checked_div(total).unwrap_or(10);
        if last_decile.fetch_max(decile, Ordering::Relaxed) < decile {
            emit(&format!("{label}: {}%", decile * 10));
        }
    })
}

#[cfg(test)]
mod tests {
    use super::{after, plain_lines};
    use std::sync::atomic::{AtomicU64, Ordering};
    use std::sync::{Arc, Mutex};
    use std::time::Duration;

    #[test]
    fn progress_is_quiet_until_its_start_has_passed() {
        let calls = Arc::new(AtomicU64::new(0));
        let count = calls.clone();
        let counted: super::Progress = Arc::new(move |_, _| {
            count.fetch_add(1, Ordering::Relaxed);
        });
        let quiet = after(Duration::from_secs(3600), counted.clone());
        quiet(1, 2);
        quiet(2, 2);
        assert_eq!(calls.load(Ordering::Relaxed), 0);
        let loud = after(Duration::ZERO, counted);
        loud(1, 2);
        assert_eq!(calls.load(Ordering::Relaxed), 1);
    }

    #[test]
    fn plain_progress_prints_a_line_when_it_passes_another_tenth() {
        let lines = Arc::new(Mutex::new(Vec::new()));
        let sink = lines.clone();
        let report = plain_lines("work".into(), move |l| {
            sink.lock().unwrap().push(l.to_owned())
        });
        for done in [0, 3, 10, 11, 25, 25, 99, 100] {
            report(done, 100);
        }
        assert_eq!(
            *lines.lock().unwrap(),
            ["work: 10%", "work: 20%", "work: 90%", "work: 100%"]
        );
    }
}
