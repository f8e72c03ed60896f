//! Work splitting over scoped threads. Two shapes: dynamic (items handed out
//! in chunks as threads free up: for independent outputs, whose values do
//! not depend on which thread made them) and static (one contiguous range per
//! thread, fixed by the thread count: for reductions, whose rounding then
//! depends on the count only).
use std::ops::Range;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, PoisonError};

/// Calls `f(first, piece)` for consecutive pieces of `out` of `chunk` items
/// (the last may be shorter), `first` being the piece's index in `out`, on up
/// to `threads` threads, pieces handed out as threads free up; then
/// `progress(done, total)` after each piece.
pub(crate) fn for_each_chunk<V: Send>(
    threads: usize,
    out: &mut [V],
    chunk: usize,
    progress: Option<&(dyn Fn(u64, u64) + Sync)>,
    f: impl Fn(usize, &mut [V]) + Sync,
) {
    let chunk = chunk.max(1);
    let len = out.len();
    let pieces = len.div_ceil(chunk);
    // Each piece is claimed by exactly one thread (the lock is held only to
    // take the next one).
    let next = Mutex::new(out.chunks_mut(chunk).enumerate());
    let done = AtomicU64::new(0);
    let work = |_| loop {
        let Some((index, piece)) = next.lock().unwrap_or_else(PoisonError::into_inner).next()
        else {
            break;
        };
        let n = piece.len();
        f(index * chunk, piece);
        let finished = done.fetch_add(n as u64, Ordering::Relaxed) + n as u64;
        if let Some(report) = progress {
            report(finished, len as u64);
        }
    };
    run_each(vec![(); threads.clamp(1, pieces.max(1))], work);
}

/// `0..n` cut into `parts` contiguous ranges whose lengths differ by at most
/// one, each a multiple of `align` except the last (`align` >= 1); empty
/// ranges are dropped. The cut depends on `n`, `parts` and `align` only.
pub(crate) fn static_ranges(n: usize, parts: usize, align: usize) -> Vec<Range<usize>> {
    let align = align.max(1);
    let units = n.div_ceil(align);
    let parts = parts.clamp(1, units.max(1));
    (0..parts)
        .map(|p| {
            let start = (units * p / parts * align).min(n);
            let end = (units * (p + 1) / parts * align).min(n);
            start..end
        })
        .filter(|r| !r.is_empty())
        .collect()
}

/// `f(item)` for each item, one scoped thread each (the caller's thread
/// when there is only one), results in item order.
fn run_each<I: Send, R: Send>(items: Vec<I>, f: impl Fn(I) -> R + Sync) -> Vec<R> {
    if items.len() <= 1 {
        return items.into_iter().map(f).collect();
    }
    std::thread::scope(|scope| {
        let handles: Vec<_> = items
            .into_iter()
            .map(|item| {
                let f = &f;
                scope.spawn(move || f(item))
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().unwrap_or_else(|p| std::panic::resume_unwind(p)))
            .collect()
    })
}

/// `f(range)` for each of [`static_ranges`]`(n, threads, align)`, one thread
/// each, results in range order: deterministic for a given `threads`.
pub(crate) fn map_ranges<R: Send>(
    threads: usize,
    n: usize,
    align: usize,
    f: impl Fn(Range<usize>) -> R + Sync,
) -> Vec<R> {
    run_each(static_ranges(n, threads, align), f)
}

/// `f(i)` for every `i` in `0..n`, on up to `threads` threads (contiguous
/// ranges, each in order), the results in order; the error of the lowest
/// `i` that fails, whatever the thread count.
pub(crate) fn try_map_indexed<R: Send, E: Send>(
    threads: usize,
    n: usize,
    f: impl Fn(usize) -> Result<R, E> + Sync,
) -> Result<Vec<R>, E> {
    let parts = map_ranges(threads, n, 1, |r| r.map(&f).collect::<Result<Vec<R>, E>>());
    let mut out = Vec::with_capacity(n);
    for part in parts {
        out.extend(part?);
    }
    Ok(out)
}

/// `f(first, piece)` over `out` cut by [`static_ranges`]`(out.len(), threads,
/// align)`, one thread per piece.
pub(crate) fn for_each_range_mut<V: Send>(
    threads: usize,
    out: &mut [V],
    align: usize,
    f: impl Fn(usize, &mut [V]) + Sync,
) {
    let mut rest = out;
    let mut pieces = Vec::new();
    for r in static_ranges(rest.len(), threads, align) {
        let (piece, tail) = rest.split_at_mut(r.len());
        pieces.push((r.start, piece));
        rest = tail;
    }
    run_each(pieces, |(first, piece)| f(first, piece));
}

/// Bytes per thread below which a copy or scan is not worth a thread (a
/// spawn costs tens of microseconds; one core moves a few GB/s).
const BYTES_PER_THREAD: usize = 8 << 20;

/// Threads worth using on `work` (bytes, values...) when a thread is worth
/// its start from `per_thread` on, at most `threads`.
pub(crate) fn threads_for(threads: usize, work: usize, per_thread: usize) -> usize {
    threads.clamp(1, (work / per_thread).max(1))
}

/// Threads for large host copies (the GPU pipeline's staging, results into
/// callers' arrays): up to 8 of the process-wide CPU thread count
/// ([`crate::cpu::threads`]); a few cores reach the host's memory bandwidth.
pub fn copy_threads() -> usize {
    super::threads().min(8)
}

/// `dst.copy_from_slice(src)` on up to `threads` threads. Large host copies
/// (pinned staging, results into fresh arrays whose pages fault on first
/// touch) go at one core's speed otherwise, far below memory bandwidth.
pub fn copy_parallel<V: Copy + Send + Sync>(threads: usize, dst: &mut [V], src: &[V]) {
    assert_eq!(dst.len(), src.len(), "copy_parallel: lengths differ");
    let threads = threads_for(threads, std::mem::size_of_val(src), BYTES_PER_THREAD);
    for_each_range_mut(threads, dst, 1, |first, piece| {
        piece.copy_from_slice(&src[first..first + piece.len()]);
    });
}

/// The first index of `values` that `find` reports, `find` giving the first
/// index within a piece (e.g. [`crate::float::first_non_finite`]); pieces are
/// scanned on up to `threads` threads.
pub(crate) fn first_position<V: Sync>(
    threads: usize,
    values: &[V],
    find: impl Fn(&[V]) -> Option<usize> + Sync,
) -> Option<usize> {
    let threads = threads_for(threads, std::mem::size_of_val(values), BYTES_PER_THREAD);
    map_ranges(threads, values.len(), 1, |r| {
        let start = r.start;
        find(&values[r]).map(|i| start + i)
    })
    .into_iter()
    .flatten()
    .next()
}

/// Runs `passes` in order from `input` into `output`, each reading the
/// previous one's result: pass k writes `output` when an even number of
/// passes follow it (so the last one does), a scratch array otherwise. `run`
/// gets the pass's source, destination, the pass and whether it is the last.
/// No pass: a copy.
pub(crate) fn chain_passes<V: Copy + Default, P>(
    input: &[V],
    output: &mut [V],
    passes: &[P],
    mut run: impl FnMut(&[V], &mut [V], &P, bool),
) {
    let Some(last) = passes.len().checked_sub(1) else {
        output.copy_from_slice(input);
        return;
    };
    let mut scratch = if last == 0 {
        Vec::new()
    } else {
        vec![V::default(); input.len()]
    };
    for (k, pass) in passes.iter().enumerate() {
        match (k, (last - k) % 2 == 0) {
            (0, true) => run(input, output, pass, k == last),
            (0, false) => run(input, &mut scratch, pass, k == last),
            (_, true) => run(&scratch, output, pass, k == last),
            (_, false) => run(output, &mut scratch, pass, k == last),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn static_ranges_cover_exactly_once_and_are_aligned() {
        for n in [0, 1, 7, 64, 1000, 1023] {
            for parts in [1, 2, 3, 16, 2000] {
                for align in [1, 8, 64] {
                    let r = static_ranges(n, parts, align);
                    let mut next = 0;
                    for (i, range) in r.iter().enumerate() {
                        assert_eq!(range.start, next);
                        if i + 1 < r.len() {
                            assert_eq!(range.end % align, 0);
                        }
                        next = range.end;
                    }
                    assert_eq!(next, n);
                    assert!(r.len() <= parts.max(1));
                }
            }
        }
    }

    #[test]
    fn parallel_copies_and_scans_equal_the_serial_ones() {
        // Five threads' worth of u64, and a ragged tail.
        let n = 5 * (BYTES_PER_THREAD / 8) + 3;
        // Distinct values: multiplying by an odd constant is a bijection mod 2^64.
        let src: Vec<u64> = (0..n as u64)
            .map(|i| i.wrapping_mul(0x9E37_79B9_7F4A_7C15))
            .collect();
        for threads in [1, 3, 8] {
            let mut dst = vec![u64::MAX; n];
            copy_parallel(threads, &mut dst, &src);
            assert!(dst == src, "{threads} threads");
            let finder = |hit: &(dyn Fn(&u64) -> bool + Sync)| {
                first_position(threads, &src, |piece: &[u64]| piece.iter().position(hit))
            };
            for at in [0, 1, n / 3, n / 2 + 17, n - 1] {
                assert_eq!(finder(&|v: &u64| *v == src[at]), Some(at));
            }
            // Hits in every range: the first one overall.
            let many = |v: &u64| v % 1000 == 7;
            assert_eq!(finder(&many), src.iter().position(many));
            assert_eq!(finder(&|_: &u64| false), None);
        }
    }

    #[test]
    fn every_item_is_visited_once_on_any_thread_count() {
        for threads in [1, 2, 5] {
            let mut out = vec![0u32; 1001];
            for_each_chunk(threads, &mut out, 64, None, |first, piece| {
                for (j, v) in piece.iter_mut().enumerate() {
                    *v += (first + j) as u32 + 1;
                }
            });
            assert!(out.iter().enumerate().all(|(i, &v)| v == i as u32 + 1));
            let mut out = vec![0u32; 1001];
            for_each_range_mut(threads, &mut out, 8, |first, piece| {
                for (j, v) in piece.iter_mut().enumerate() {
                    *v += (first + j) as u32 + 1;
                }
            });
            assert!(out.iter().enumerate().all(|(i, &v)| v == i as u32 + 1));
            let sums = map_ranges(threads, 1001, 8, |r| r.len());
            assert_eq!(sums.iter().sum::<usize>(), 1001);
        }
    }
}
