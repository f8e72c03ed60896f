//! The CPU side of a multi-GPU call, with no driver in sight: splitting the
//! items (series, members, arrays) into one contiguous range per GPU,
//! balanced by work, and cutting each range into chunks that fit a device
//! memory budget. Everything here is plain arithmetic on counts, unit-tested
//! without a GPU.
use std::ops::Range;

use crate::error::{Error, Result};

/// Alignment of every buffer carved out of a chunk's device arena (and of its
/// pinned host mirror): 256 bytes, what `cuMemAlloc` itself guarantees, so
/// each sub-buffer starts as a fresh allocation would.
pub const ARENA_ALIGN: usize = 256;

/// `bytes` rounded up to [`ARENA_ALIGN`].
pub fn align_up(bytes: usize) -> usize {
    bytes.div_ceil(ARENA_ALIGN) * ARENA_ALIGN
}

/// A chunk's buffers laid out one after the other in one arena, each aligned
/// to [`ARENA_ALIGN`]. The same layout serves the device arena and its pinned
/// host mirror, so one copy moves all the inputs and one all the outputs.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Arena {
    /// The arena's address (0 for byte offsets, as in the host mirror).
    pub base: u64,
    /// Bytes used so far (the end of the last buffer, aligned).
    pub bytes: usize,
    /// The end of the last buffer, unaligned.
    pub end: usize,
}

impl Arena {
    /// An empty arena at address `base`.
    pub fn at(base: u64) -> Arena {
        Arena {
            base,
            ..Arena::default()
        }
    }
    /// Reserves `bytes` (0 allowed) and returns its offset.
    pub fn push(&mut self, bytes: usize) -> usize {
        let at = self.bytes;
        self.bytes = at + align_up(bytes);
        self.end = at + bytes;
        at
    }
    /// Reserves `len` values of `T`.
    pub fn push_values<T>(&mut self, len: usize) -> usize {
        self.push(len * std::mem::size_of::<T>())
    }
    /// Reserves `len` values of `T` and returns their address.
    pub fn take<T>(&mut self, len: usize) -> u64 {
        self.base + self.push_values::<T>(len) as u64
    }
    /// The offset of `address` in the arena.
    pub fn offset(&self, address: u64) -> usize {
        (address - self.base) as usize
    }
}

/// Splits items `0..weights.len()` into `parts` contiguous ranges, in order,
/// whose summed weights are as equal as contiguous cuts allow: the cut k
/// lies where the running sum is nearest to `k / parts` of the total. Every
/// part then holds at most `total / parts + max weight` (a part can be
/// empty when there are fewer items than parts, or a few items dominate).
/// With all weights zero the items are split evenly by count.
pub fn split_by_work(weights: &[u64], parts: usize) -> Vec<Range<usize>> {
    assert!(parts > 0, "at least one part");
    let n = weights.len();
    let total: u128 = weights.iter().map(|&w| w as u128).sum();
    if total == 0 {
        return split_even(n, parts);
    }
    // One pass with the running sum (no prefix array: a survey has 10^6
    // series and more). `before` is the sum of weights[..i].
    let mut cuts = Vec::with_capacity(parts + 1);
    cuts.push(0usize);
    let (mut k, mut before, mut previous) = (1usize, 0u128, 0u128);
    // Positions 0..=n: after the last weight, the cuts still owed are made.
    for (i, weight) in weights.iter().map(Some).chain([None]).enumerate() {
        // First i with sum(weights[..i]) >= target, then the nearer of i - 1 and i.
        while k < parts {
            let target = total * k as u128 / parts as u128;
            if before < target {
                break;
            }
            let cut = if i > 0 && target - previous < before - target {
                i - 1
            } else {
                i
            };
            cuts.push(cut.max(*cuts.last().unwrap()));
            k += 1;
        }
        if let Some(&w) = weight {
            previous = before;
            before += w as u128;
        }
    }
    cuts.push(n);
    cuts.windows(2).map(|c| c[0]..c[1]).collect()
}

/// `n` equal items in `parts` contiguous ranges whose lengths differ by at
/// most one (the longer ones first).
pub fn split_even(n: usize, parts: usize) -> Vec<Range<usize>> {
    assert!(parts > 0, "at least one part");
    let (base, extra) = (n / parts, n % parts);
    let mut start = 0;
    (0..parts)
        .map(|k| {
            let len = base + usize::from(k < extra);
            let r = start..start + len;
            start += len;
            r
        })
        .collect()
}

/// How much device memory each chunk of one GPU's range may take.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ChunkBudget {
    /// Bytes a chunk grows to before a new one starts (the pipelining target).
    pub target: usize,
    /// Bytes no chunk may exceed: half the GPU's limit, since two chunks
    /// (two buffer sets) are in flight at once. A chunk of a single item may
    /// go past `target` up to this; an item that exceeds it is an error.
    pub hard: usize,
}

impl ChunkBudget {
    /// The budget under a limit of `max_device_bytes` per GPU, aiming at
    /// chunks of `chunk_bytes`.
    pub fn new(max_device_bytes: usize, chunk_bytes: usize) -> Self {
        let hard = max_device_bytes / 2;
        ChunkBudget {
            target: chunk_bytes.clamp(1, hard.max(1)),
            hard,
        }
    }
}

/// Cuts `range` into consecutive chunks, in order, each as long as its bytes
/// (`bytes(chunk)`, which must not decrease as a chunk grows) stay within
/// `budget.target`, and never more than `budget.hard`. Every item lands in
/// exactly one chunk. An item that alone needs more than `budget.hard` is an
/// error naming it (`what` names the items, e.g. "series"). An empty range
/// gives no chunk. Each chunk's end is found by doubling, then bisecting:
/// O(log n) calls of `bytes` per chunk, not one per item (a survey's 10^6
/// series are planned in microseconds, not tens of milliseconds).
pub fn plan_chunks(
    range: Range<usize>,
    budget: ChunkBudget,
    what: &str,
    bytes: impl Fn(Range<usize>) -> usize,
) -> Result<Vec<Range<usize>>> {
    let mut chunks = Vec::new();
    let mut start = range.start;
    while start < range.end {
        let alone = bytes(start..start + 1);
        if alone > budget.hard {
            return Err(Error::invalid(format!(
                "{what} {start} alone needs {alone} bytes of device memory, more than a chunk \
                 may take: {} bytes (half of the per-GPU limit max_device_bytes, since two \
                 chunks are in flight at once); raise max_device_bytes",
                budget.hard
            )));
        }
        // `fits` ends are known to fit (or hold the one item that must go
        // alone); `fails` is the first end known not to, or past the range.
        let fits_end = |end: usize| bytes(start..end) <= budget.target;
        let (mut fits, mut fails, mut step) = (start + 1, range.end + 1, 1);
        while fits + step <= range.end {
            if !fits_end(fits + step) {
                fails = fits + step;
                break;
            }
            fits += step;
            step *= 2;
        }
        while fails - fits > 1 {
            let mid = fits + (fails - fits) / 2;
            if fits_end(mid) {
                fits = mid;
            } else {
                fails = mid;
            }
        }
        chunks.push(start..fits);
        start = fits;
    }
    Ok(chunks)
}

/// Bytes a pipeline over `chunks` allocates per buffer set (chunk k in set
/// k mod 2), each the largest `bytes` of its chunks: with a chunk's whole
/// layout, the device arenas; with its copied part, the pinned mirrors.
pub fn arena_bytes(chunks: &[Range<usize>], bytes: impl Fn(Range<usize>) -> usize) -> [usize; 2] {
    let mut sets = [0usize; 2];
    for (k, c) in chunks.iter().enumerate() {
        sets[k % 2] = sets[k % 2].max(bytes(c.clone()));
    }
    sets
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_rng::Rng;

    fn assert_partition(parts: &[Range<usize>], n: usize) {
        let mut at = 0;
        for p in parts {
            assert_eq!(p.start, at, "{parts:?}: not contiguous and in order");
            assert!(p.end >= p.start, "{parts:?}");
            at = p.end;
        }
        assert_eq!(at, n, "{parts:?}: does not cover 0..{n}");
    }

    #[test]
    fn align_and_arena() {
        assert_eq!(align_up(0), 0);
        assert_eq!(align_up(1), 256);
        assert_eq!(align_up(256), 256);
        assert_eq!(align_up(257), 512);
        let mut a = Arena::default();
        assert_eq!(a.push_values::<f32>(3), 0);
        assert_eq!(a.push(0), 256);
        assert_eq!(a.push_values::<f64>(33), 256);
        assert_eq!((a.bytes, a.end), (256 + 512, 256 + 264));
        let mut a = Arena::at(4096);
        assert_eq!((a.take::<f32>(3), a.take::<u8>(1)), (4096, 4096 + 256));
        assert_eq!((a.offset(4096 + 256), a.end), (256, 257));
    }

    #[test]
    fn split_even_differs_by_at_most_one() {
        for n in 0..40 {
            for parts in 1..9 {
                let s = split_even(n, parts);
                assert_eq!(s.len(), parts);
                assert_partition(&s, n);
                let (lo, hi) = (
                    s.iter().map(|r| r.len()).min().unwrap(),
                    s.iter().map(|r| r.len()).max().unwrap(),
                );
                assert!(hi - lo <= 1, "{n} {parts} {s:?}");
            }
        }
    }

    /// The cut rule of `split_by_work` spelled out with a prefix array and
    /// a binary search.
    fn split_by_work_reference(weights: &[u64], parts: usize) -> Vec<Range<usize>> {
        let n = weights.len();
        let mut prefix = vec![0u128];
        for &w in weights {
            prefix.push(prefix.last().unwrap() + w as u128);
        }
        let total = prefix[n];
        if total == 0 {
            return split_even(n, parts);
        }
        let mut cuts = vec![0usize];
        for k in 1..parts {
            let target = total * k as u128 / parts as u128;
            let i = prefix.partition_point(|&p| p < target);
            let i = if i > 0 && target - prefix[i - 1] < prefix[i] - target {
                i - 1
            } else {
                i
            };
            cuts.push(i.max(*cuts.last().unwrap()));
        }
        cuts.push(n);
        cuts.windows(2).map(|c| c[0]..c[1]).collect()
    }

    #[test]
    fn split_by_work_cuts_where_the_prefix_rule_cuts() {
        let mut rng = Rng(0x5b17);
        for case in 0..2000 {
            let n = rng.below(60) as usize;
            let zeros = rng.below(3) == 0; // runs of zero work, and all-zero batches
            let weights: Vec<u64> = (0..n)
                .map(|_| match rng.below(4) {
                    0 if zeros => 0,
                    1 => rng.below(1 << 40),
                    _ => rng.below(100),
                })
                .collect();
            let parts = 1 + rng.below(9) as usize;
            assert_eq!(
                split_by_work(&weights, parts),
                split_by_work_reference(&weights, parts),
                "case {case}: {weights:?} in {parts}"
            );
        }
    }

    #[test]
    fn split_by_work_balances_within_one_item() {
        let mut rng = Rng(7);
        for case in 0..500 {
            let n = rng.below(300) as usize;
            let parts = 1 + rng.below(8) as usize;
            let weights: Vec<u64> = (0..n)
                .map(|_| match case % 3 {
                    0 => 1 + rng.below(10),
                    1 => (100 + rng.below(200)) * 10_000, // samples x frequencies
                    _ => rng.below(2) * rng.below(1 << 40),
                })
                .collect();
            let s = split_by_work(&weights, parts);
            assert_eq!(s.len(), parts);
            assert_partition(&s, n);
            let total: u128 = weights.iter().map(|&w| w as u128).sum();
            let max = weights.iter().copied().max().unwrap_or(0) as u128;
            for r in &s {
                let work: u128 = weights[r.clone()].iter().map(|&w| w as u128).sum();
                assert!(
                    work <= total / parts as u128 + max + 1,
                    "case {case}: part {r:?} has {work} of {total} over {parts} parts (max item {max})"
                );
            }
        }
    }

    #[test]
    fn split_by_work_follows_the_work_not_the_count() {
        // Ten heavy items then ninety light ones: two parts cut at the
        // middle of the work (item 10), not of the count (item 50).
        let weights: Vec<u64> = (0..100).map(|i| if i < 10 { 90 } else { 10 }).collect();
        let s = split_by_work(&weights, 2);
        assert_eq!(s, vec![0..10, 10..100]);
        // Equal weights: the count.
        assert_eq!(split_by_work(&[5; 10], 2), vec![0..5, 5..10]);
        // Fewer items than parts: some parts are empty, none lost.
        let s = split_by_work(&[1, 1], 4);
        assert_partition(&s, 2);
        assert_eq!(s.iter().filter(|r| !r.is_empty()).count(), 2);
        // No work at all: even by count.
        assert_eq!(split_by_work(&[0; 6], 3), vec![0..2, 2..4, 4..6]);
        assert_eq!(split_by_work(&[], 2), vec![0..0, 0..0]);
    }

    /// A ragged batch as the Lomb-Scargle planner sees it: per-series bytes
    /// from prefix sums, plus a fixed part per chunk.
    fn ragged_cost(sizes: &[usize], fixed: usize) -> impl Fn(Range<usize>) -> usize + '_ {
        move |r: Range<usize>| fixed + sizes[r].iter().sum::<usize>()
    }

    #[test]
    fn chunks_respect_the_budget_and_cover_every_item_once_in_order() {
        let mut rng = Rng(11);
        for case in 0..300 {
            let n = rng.below(400) as usize;
            let sizes: Vec<usize> = (0..n).map(|_| 1 + rng.below(1000) as usize).collect();
            let fixed = rng.below(512) as usize;
            let limit = 2 * (fixed + 1000) + rng.below(20_000) as usize;
            let budget = ChunkBudget::new(limit, 1 + rng.below(limit as u64) as usize);
            let lo = if n == 0 {
                0
            } else {
                rng.below(n as u64) as usize
            };
            let range = lo..n;
            let cost = ragged_cost(&sizes, fixed);
            let chunks = plan_chunks(range.clone(), budget, "series", &cost).unwrap();
            // Every item exactly once, in order, no empty chunk.
            let mut at = range.start;
            for c in &chunks {
                assert_eq!(c.start, at, "case {case}");
                assert!(!c.is_empty(), "case {case}");
                at = c.end;
            }
            assert_eq!(at, range.end, "case {case}");
            for (k, c) in chunks.iter().enumerate() {
                let b = cost(c.clone());
                assert!(
                    b <= budget.hard,
                    "case {case}: chunk {c:?} {b} > {budget:?}"
                );
                assert!(
                    b <= budget.target || c.len() == 1,
                    "case {case}: chunk {c:?} of {b} bytes is over the target {budget:?}"
                );
                // Greedy: the next item would not have fitted.
                if k + 1 < chunks.len() {
                    assert!(cost(c.start..c.end + 1) > budget.target, "case {case}");
                }
            }
            // The two buffer sets together stay within the limit.
            let sets = arena_bytes(&chunks, &cost);
            assert!(
                sets[0] + sets[1] <= limit,
                "case {case}: {sets:?} > {limit}"
            );
        }
    }

    #[test]
    fn a_tiny_limit_makes_many_chunks() {
        let sizes = vec![100usize; 1000];
        let cost = ragged_cost(&sizes, 0);
        let chunks =
            plan_chunks(0..1000, ChunkBudget::new(2000, usize::MAX), "series", &cost).unwrap();
        assert_eq!(chunks.len(), 100);
        assert!(chunks.iter().all(|c| c.len() == 10));
        let one =
            plan_chunks(0..1000, ChunkBudget::new(1 << 30, 1 << 30), "series", &cost).unwrap();
        assert_eq!(one, vec![0..1000]);
    }

    #[test]
    fn an_item_larger_than_half_the_limit_is_a_clear_error() {
        let sizes = vec![10, 10, 600, 10];
        let cost = ragged_cost(&sizes, 0);
        // Half of 1000 is 500: series 2 (600 bytes) cannot be in flight twice.
        let err = plan_chunks(0..4, ChunkBudget::new(1000, 100), "series", &cost).unwrap_err();
        let msg = err.to_string();
        assert!(matches!(err, Error::InvalidInput(_)), "{err:?}");
        assert!(msg.contains("series 2 alone needs 600 bytes"), "{msg}");
        assert!(msg.contains("max_device_bytes"), "{msg}");
        // Over the target but within half the limit: a chunk of its own.
        let chunks = plan_chunks(0..4, ChunkBudget::new(1200, 100), "series", &cost).unwrap();
        assert_eq!(chunks, vec![0..2, 2..3, 3..4]);
        // An empty range plans nothing.
        assert_eq!(
            plan_chunks(3..3, ChunkBudget::new(10, 10), "series", &cost).unwrap(),
            Vec::<Range<usize>>::new()
        );
    }

    #[test]
    fn budget_target_is_clamped_to_half_the_limit() {
        assert_eq!(
            ChunkBudget::new(1000, 1 << 40),
            ChunkBudget {
                target: 500,
                hard: 500
            }
        );
        assert_eq!(
            ChunkBudget::new(1000, 64),
            ChunkBudget {
                target: 64,
                hard: 500
            }
        );
        assert_eq!(ChunkBudget::new(1, 0), ChunkBudget { target: 1, hard: 0 });
    }
}
