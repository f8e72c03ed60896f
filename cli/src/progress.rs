//! Progress of long CPU-backend runs on stderr: a bar on a terminal, a plain
//! line every 10% otherwise (logs and pipes get no carriage returns).
use std::io::IsTerminal;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use indicatif::{ProgressBar, ProgressStyle};
use kernpack::api::Progress;

/// A progress callback for `Kernpack::with_progress`, labelled `label`.
pub fn reporter(label: &str) -> Progress {
    if std::io::stderr().is_terminal() {
        bar(label)
    } else {
        plain_lines(label.to_owned(), |line| eprintln!("{line}"))
    }
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
    use super::plain_lines;
    use std::sync::{Arc, Mutex};

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
