//! CPU references: readable, f64 accumulation, multi-threaded where it pays.
//! They are the oracle of the property tests and benches, never a backend:
//! compiled only for the crate's tests or with the `reference` feature.
pub mod bls;
pub mod correlate;
pub mod fg;
pub mod lombscargle;
pub mod lombscargle_chi2;
pub mod lombscargle_multiband;
pub mod lorenz;
pub mod lorenz63;
pub mod peaks;
pub mod phasefold;
pub mod rank;
pub mod reduce;
pub mod stencil;
pub mod uniform;

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

/// Sets `out[k] = f(k)` for every k on all cores, handing out chunks of `chunk`
/// elements as threads free up, and calls `progress(done, total)` after each chunk.
pub(crate) fn fill_parallel<V: Send>(
    out: &mut [V],
    chunk: usize,
    progress: Option<&(dyn Fn(u64, u64) + Sync)>,
    f: impl Fn(usize) -> V + Sync,
) {
    let total = out.len() as u64;
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    let pieces = Mutex::new(out.chunks_mut(chunk.max(1)).enumerate());
    let done = AtomicU64::new(0);
    std::thread::scope(|scope| {
        for _ in 0..threads {
            scope.spawn(|| loop {
                let Some((index, piece)) = pieces.lock().unwrap_or_else(|p| p.into_inner()).next()
                else {
                    break;
                };
                let first = index * chunk;
                for (j, slot) in piece.iter_mut().enumerate() {
                    *slot = f(first + j);
                }
                let finished =
                    done.fetch_add(piece.len() as u64, Ordering::Relaxed) + piece.len() as u64;
                if let Some(report) = progress {
                    report(finished, total);
                }
            });
        }
    });
}
