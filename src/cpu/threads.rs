//! The CPU backend's thread count: a process-wide setting (Rust
//! [`set_threads`], C `kp_set_cpu_threads`, Python `kernpack.set_num_threads`),
//! else the `KERNPACK_NUM_THREADS` environment variable, else every core.
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::OnceLock;

use crate::error::{Error, Result};

/// The environment variable read (once) for the default thread count.
pub const THREADS_ENV: &str = "KERNPACK_NUM_THREADS";

/// The most threads accepted: far above any core count, low enough that a
/// garbage count is refused rather than spawning threads until memory runs out.
pub const MAX_THREADS: usize = 4096;

/// 0: not set (use the environment or the core count).
static SETTING: AtomicUsize = AtomicUsize::new(0);

/// Sets the process-wide thread count of the CPU backend; 0 restores the
/// default (`KERNPACK_NUM_THREADS`, else every core). Handles made with
/// [`crate::Kernpack::with_cpu_threads`] keep their own count. Results do not
/// depend on the count, except the rounding of sums and normalisation, which
/// is the same for a given count (see the README's "Threads").
pub fn set_threads(n: usize) -> Result<()> {
    check_threads(n)?;
    SETTING.store(n, Ordering::Relaxed);
    Ok(())
}

/// The thread count the CPU backend uses now (at least 1).
pub fn threads() -> usize {
    match SETTING.load(Ordering::Relaxed) {
        0 => default_threads(),
        n => n,
    }
}

/// `n` is 0 (the default) or a usable count.
pub(crate) fn check_threads(n: usize) -> Result<()> {
    if n > MAX_THREADS {
        return Err(Error::invalid(format!(
            "{n} CPU threads: at most {MAX_THREADS} (0 means every core)"
        )));
    }
    Ok(())
}

/// `KERNPACK_NUM_THREADS` when it holds a count from 1 to [`MAX_THREADS`],
/// else the cores available to this process. Read once.
fn default_threads() -> usize {
    static DEFAULT: OnceLock<usize> = OnceLock::new();
    *DEFAULT.get_or_init(|| {
        let set = std::env::var(THREADS_ENV).ok();
        // A library must not print: any other value falls back to the
        // cores, and `kernpack info` shows what was taken.
        set.and_then(|text| text.trim().parse().ok())
            .filter(|n| (1..=MAX_THREADS).contains(n))
            .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_garbage_count_is_refused_and_changes_nothing() {
        let before = threads();
        assert!(set_threads(MAX_THREADS + 1).is_err());
        assert!(set_threads(usize::MAX).is_err());
        assert_eq!(threads(), before);
        assert!(threads() >= 1);
    }
}
