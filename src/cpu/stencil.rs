//! The box filter, separable, at memory bandwidth.
//!
//! Each thread owns a strip of output rows and keeps, in an f64 row buffer,
//! the column sums `V[c]` of the window's rows for the current output row:
//! moving down a row adds the incoming row and subtracts the outgoing one
//! (vectorised over columns), so the vertical cost does not depend on the
//! window. The buffer carries `r` extra columns at each end, filled by index
//! mapping (the boundary mode is applied at the edges only). Each output is
//! then the direct sum of `size` consecutive column sums (vectorised over
//! outputs), times `1 / size^2`, rounded once to `T`.
//!
//! Determinism: the running column sums are re-seeded (summed directly, top
//! to bottom) at every row that is a multiple of [`RESEED`], and the strips
//! start at such rows, so each output depends on its row and column only:
//! the same bits on any thread count.
//!
//! Non-finite values: a running sum that meets a NaN or an infinity stays
//! non-finite after it leaves (inf - inf), so after every step the column
//! sums are checked and, when one is not finite, the row's column sums are
//! summed directly instead. Direct sums hold only the window's values, and
//! the horizontal sums never subtract, so a non-finite value spoils exactly
//! the windows that hold it (as in the reference). A non-finite `cval`
//! (constant mode) is handled as the kernels do: the image is filtered with
//! 0 outside, then `cval` is added to every output whose window reaches past
//! the edge (+-inf or NaN, the class the reference's sum has).
//!
//! Error bound (finite data, M = the largest |value| in the windows, cval
//! included): a column sum after k <= RESEED running steps has an error of at
//! most (size + 2k) eps64 size M (each step rounds twice, on values below
//! size M; the seed rounds size times), the horizontal sum adds size eps64
//! size^2 M, so before the final rounding to T the mean is off by at most
//! (size + 2 RESEED + size) eps64 M < 400 eps64 M for size <= 33: 1e-13 M,
//! far below an f32 ulp, and for f64 a few hundred ulps of M at most. It does
//! not grow with the image's height or width (tests/cpu_stencil.rs checks
//! this bound).
use std::sync::atomic::{AtomicU64, Ordering};

use multiversion::multiversion;

use super::parallel::static_ranges;
use super::store::{fence, stream_copy, STREAM_MIN_BYTES};
use crate::float::Float;
use crate::params::stencil::{BoundaryMode, BoxFilterOptions, ImageLayout};
use crate::reference::stencil::extend;

/// Rows between exact re-seeds of the running column sums (and the
/// alignment of the threads' strips).
pub(crate) const RESEED: usize = 128;
/// f64 lanes per vector (one AVX-512 register; two AVX2 ones).
const LANES: usize = 8;
/// Outputs per step of the direct horizontal sums: 8 independent vector
/// accumulators, enough to cover the add latency (4 were latency-bound).
const BLOCK: usize = 8 * LANES;

/// One row of the window: an image row (its `cols` values) or the constant.
#[derive(Clone, Copy)]
enum Src<'a, T> {
    Row(&'a [T]),
    Const(f64),
}

/// The exponent bits of an f64: all set for an infinity or a NaN.
const EXP: u64 = 0x7ff0_0000_0000_0000;

/// 0 exactly when `x` is not finite (every exponent bit set), else
/// non-zero: the smallest over many values is 0 exactly when one is not
/// finite (an integer min, which vectorises).
#[inline(always)]
fn finite_bits(x: f64) -> u64 {
    !x.to_bits() & EXP
}

/// True when every value of `v` is finite.
#[inline(always)]
fn all_finite(v: &[f64]) -> bool {
    v.iter().fold(EXP, |m, &x| m.min(finite_bits(x))) != 0
}

/// One running step of the column sums `v` (columns `first ..` of the
/// image): `v += add - sub`; true when all are finite.
#[multiversion(targets(
    "x86_64+avx512f+avx512dq+avx512vl+fma",
    "x86_64+avx2+fma",
    "aarch64+neon"
))]
fn step<T: Float>(
    v: &mut [f64],
    first: usize,
    add: Src<'_, T>,
    sub: Src<'_, T>,
    ahead: Src<'_, T>,
) -> bool {
    let n = v.len();
    prefetch(ahead, first, n);
    // One loop per pair of kinds, so each is specialised (no match per value).
    // The finiteness check is folded into the update (see [`finite_bits`]):
    // a separate pass over `v` cost 10-15% of the filter's time (8192^2
    // f32, sizes 3 and 9).
    let mut m = EXP;
    match (add, sub) {
        (Src::Row(a), Src::Row(b)) => {
            let (a, b) = (&a[first..first + n], &b[first..first + n]);
            for ((x, a), b) in v.iter_mut().zip(a).zip(b) {
                *x += a.to_f64() - b.to_f64();
                m = m.min(finite_bits(*x));
            }
        }
        (Src::Row(a), Src::Const(c)) => {
            for (x, a) in v.iter_mut().zip(&a[first..first + n]) {
                *x += a.to_f64() - c;
                m = m.min(finite_bits(*x));
            }
        }
        (Src::Const(c), Src::Row(b)) => {
            for (x, b) in v.iter_mut().zip(&b[first..first + n]) {
                *x += c - b.to_f64();
                m = m.min(finite_bits(*x));
            }
        }
        // Both rows outside (constant mode): c - c = 0 changes nothing.
        (Src::Const(_), Src::Const(_)) => return all_finite(v),
    }
    m != 0
}

/// Asks for columns `first .. first + n` of the row the next output row adds
/// (one output row ahead): the only values read from memory rather than from
/// cache, in short pieces between other work, which the hardware prefetcher
/// alone follows too late (measured on 8192^2 f32, 3x3 to 9x9: 15-30% less
/// time than without; two or four rows ahead no better, prefetching the
/// outgoing row too slower).
#[inline(always)]
fn prefetch<T: Float>(ahead: Src<'_, T>, first: usize, n: usize) {
    #[cfg(target_arch = "x86_64")]
    if let Src::Row(row) = ahead {
        let line = 64 / std::mem::size_of::<T>();
        for i in (first..first + n).step_by(line) {
            // SAFETY: a prefetch is a hint that never faults, and SSE is part
            // of every x86_64 target; `i` is inside the row anyway.
            unsafe {
                std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>(
                    row.as_ptr().add(i) as *const i8,
                )
            };
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = (ahead, first, n);
}

/// The column sums `v` (columns `first ..`) summed directly, top to bottom;
/// true when all are finite.
#[multiversion(targets(
    "x86_64+avx512f+avx512dq+avx512vl+fma",
    "x86_64+avx2+fma",
    "aarch64+neon"
))]
fn seed<T: Float>(v: &mut [f64], first: usize, window: &[Src<'_, T>]) -> bool {
    let n = v.len();
    match window[0] {
        Src::Row(row) => v
            .iter_mut()
            .zip(&row[first..first + n])
            .for_each(|(x, y)| *x = y.to_f64()),
        Src::Const(c) => v.fill(c),
    }
    for src in &window[1..] {
        match *src {
            Src::Row(row) => v
                .iter_mut()
                .zip(&row[first..first + n])
                .for_each(|(x, y)| *x += y.to_f64()),
            Src::Const(c) => v.iter_mut().for_each(|x| *x += c),
        }
    }
    all_finite(v)
}

/// Windows up to this size sum their column sums directly; larger ones by
/// doubling (measured: see tests/cpu_timing.rs).
const DIRECT_MAX: usize = 9;
/// Outputs per piece of the doubling sums (its levels stay in L1).
const PIECE: usize = 256;
/// Levels of the doubling sums: pairs, 4s, 8s, 16s, 32s (size <= 33 < 64).
const LEVELS: usize = 5;
/// Scratch of the doubling sums, one per thread.
type Levels = [[f64; PIECE + crate::params::stencil::MAX_BOX_SIZE]; LEVELS];

/// `out[x] = T(scale * (v[x] + v[x + 1] + ... + v[x + size - 1]))` for
/// every x of `out` (`v` holds `out.len() + size - 1` column sums). Only
/// adds, never a subtraction: a non-finite column sum spoils exactly the
/// outputs whose window holds it. Each output's arithmetic depends on the
/// values of its window only (not on where the call starts).
#[multiversion(targets(
    "x86_64+avx512f+avx512dq+avx512vl+fma",
    "x86_64+avx2+fma",
    "aarch64+neon"
))]
fn horizontal<T: Float>(v: &[f64], size: usize, scale: f64, out: &mut [T], levels: &mut Levels) {
    if size <= DIRECT_MAX {
        return direct(v, size, scale, out);
    }
    // levels[j][i] = v[i] + ... + v[i + 2^(j+1) - 1], for the piece's extent;
    // a window of `size` is then one term per set bit of `size`, highest first.
    let top = (usize::BITS - 1 - size.leading_zeros()) as usize; // 2^top <= size
    for (p, piece) in out.chunks_mut(PIECE).enumerate() {
        let n = piece.len();
        let ext = &v[p * PIECE..p * PIECE + n + size - 1];
        for j in 0..top {
            let w = 1 << j;
            let len = ext.len() + 1 - 2 * w;
            let (done, rest) = levels.split_at_mut(j);
            let src: &[f64] = if j == 0 { ext } else { &done[j - 1][..len + w] };
            for (d, (a, b)) in rest[0][..len].iter_mut().zip(src.iter().zip(&src[w..])) {
                *d = a + b;
            }
        }
        // The terms: (level, offset) per set bit, from the highest.
        let mut terms = [(0usize, 0usize); LEVELS + 1];
        let mut count = 0;
        let mut offset = 0;
        for j in (0..=top).rev() {
            if size & (1 << j) != 0 {
                terms[count] = (j, offset);
                count += 1;
                offset += 1 << j;
            }
        }
        let term = |(j, off): (usize, usize), x: usize| -> &[f64] {
            if j == 0 {
                &ext[x + off..x + off + LANES]
            } else {
                &levels[j - 1][x + off..x + off + LANES]
            }
        };
        let whole = n / LANES * LANES;
        for x in (0..whole).step_by(LANES) {
            let mut acc = [0.0f64; LANES];
            acc.copy_from_slice(term(terms[0], x));
            for &t in &terms[1..count] {
                let s = term(t, x);
                for l in 0..LANES {
                    acc[l] += s[l];
                }
            }
            for l in 0..LANES {
                piece[x + l] = T::from_f64(acc[l] * scale);
            }
        }
        for x in whole..n {
            let at = |(j, off): (usize, usize)| {
                if j == 0 {
                    ext[x + off]
                } else {
                    levels[j - 1][x + off]
                }
            };
            let mut acc = at(terms[0]);
            for &t in &terms[1..count] {
                acc += at(t);
            }
            piece[x] = T::from_f64(acc * scale);
        }
    }
}

/// [`horizontal`] for small windows: the `size` terms left to right.
#[inline(always)]
fn direct<T: Float>(v: &[f64], size: usize, scale: f64, out: &mut [T]) {
    let whole = out.len() / BLOCK * BLOCK;
    for (b, chunk) in out[..whole].chunks_exact_mut(BLOCK).enumerate() {
        let x0 = b * BLOCK;
        let mut acc = [0.0f64; BLOCK];
        acc.copy_from_slice(&v[x0..x0 + BLOCK]);
        for k in 1..size {
            let s = &v[x0 + k..x0 + k + BLOCK];
            for l in 0..BLOCK {
                acc[l] += s[l];
            }
        }
        for l in 0..BLOCK {
            chunk[l] = T::from_f64(acc[l] * scale);
        }
    }
    for (x, o) in out.iter_mut().enumerate().skip(whole) {
        let mut acc = v[x];
        for k in 1..size {
            acc += v[x + k];
        }
        *o = T::from_f64(acc * scale);
    }
}

/// Filters `input` into `output` (layouts, lengths and the window already
/// validated, the image not empty) on up to `threads` threads, calling
/// `progress(rows done, rows)` as strips advance.
pub fn box_filter<T: Float>(
    input: &[T],
    output: &mut [T],
    layout: &ImageLayout,
    opts: &BoxFilterOptions,
    threads: usize,
    progress: Option<&(dyn Fn(u64, u64) + Sync)>,
) {
    let rows = layout.rows;
    if opts.size == 1 {
        // A window of one point is the image itself, exactly (as SciPy): the
        // running sums would add and subtract rounding.
        for r in 0..rows {
            let (i, o) = (r * layout.in_pitch, r * layout.out_pitch);
            output[o..o + layout.cols].copy_from_slice(&input[i..i + layout.cols]);
        }
        if let Some(p) = progress {
            p(rows as u64, rows as u64);
        }
        return;
    }
    // Strips of whole RESEED blocks of rows, one per thread; each thread gets
    // the part of the output from its first row's start to its last row's
    // end (the gaps between rows inside it are never written).
    let strips = static_ranges(rows, threads, RESEED);
    let done = AtomicU64::new(0);
    let report = |n: usize| {
        let finished = done.fetch_add(n as u64, Ordering::Relaxed) + n as u64;
        if let Some(p) = progress {
            p(finished, rows as u64);
        }
    };
    let mut pieces = Vec::with_capacity(strips.len());
    let mut rest = &mut output[..layout.output_len()];
    for (i, s) in strips.iter().enumerate() {
        let len = if i + 1 == strips.len() {
            rest.len()
        } else {
            s.len() * layout.out_pitch
        };
        let (piece, tail) = rest.split_at_mut(len);
        pieces.push((s.clone(), piece));
        rest = tail;
    }
    let run = |(strip, piece): (std::ops::Range<usize>, &mut [T])| {
        filter_strip(input, piece, layout, opts, strip, &report);
    };
    if pieces.len() <= 1 {
        pieces.into_iter().for_each(run);
        return;
    }
    std::thread::scope(|scope| {
        for p in pieces {
            let run = &run;
            scope.spawn(move || run(p));
        }
    });
}

/// Columns per piece of the column sums' update: the piece of `v` (4 KB)
/// and of the rows read stay in L1 while the outputs they complete are summed.
const COLS: usize = 512;

/// Output rows `strip` (a multiple of RESEED first); `out` starts at the
/// strip's first row.
fn filter_strip<T: Float>(
    input: &[T],
    out: &mut [T],
    layout: &ImageLayout,
    opts: &BoxFilterOptions,
    strip: std::ops::Range<usize>,
    report: &(dyn Fn(usize) + Sync),
) {
    let (rows, cols) = (layout.rows, layout.cols);
    let (size, r) = (opts.size, opts.size / 2);
    let scale = 1.0 / (size * size) as f64;
    // A non-finite cval is added afterwards (see the module's comment):
    // the sums pad with 0 so they never subtract it.
    let pad_after = opts.mode == BoundaryMode::Constant && !opts.cval.is_finite();
    let cval = if pad_after { 0.0 } else { opts.cval };
    let src = |y: i64| -> Src<'_, T> {
        match extend(y, rows as i64, opts.mode) {
            Some(y) => {
                let start = y as usize * layout.in_pitch;
                Src::Row(&input[start..start + cols])
            }
            None => Src::Const(cval),
        }
    };
    // v[i] is the column sum of column i - r (-r .. cols + r); the r at each
    // end are copies of the columns the mode reads there (None: constant).
    let col_of = |x: i64| extend(x, cols as i64, opts.mode).map(|c| c as usize);
    let left: Vec<(usize, Option<usize>)> =
        (0..r).map(|i| (i, col_of(i as i64 - r as i64))).collect();
    let right: Vec<(usize, Option<usize>)> = (0..r)
        .map(|i| (r + cols + i, col_of((cols + i) as i64)))
        .collect();
    // The order in which the columns are updated: the pieces left to right,
    // except that in wrap mode the last r columns go first, since the left
    // end reads them (so the outputs can still follow the update closely).
    let head = if opts.mode == BoundaryMode::Wrap {
        r.min(cols)
    } else {
        0
    };
    let mut order: Vec<std::ops::Range<usize>> = Vec::with_capacity(cols / COLS + 2);
    order.push(cols - head..cols);
    order.extend(
        (0..cols - head)
            .step_by(COLS)
            .map(|c| c..(c + COLS).min(cols - head)),
    );
    order.retain(|c| !c.is_empty());
    let fill = |v: &mut [f64], edge: &[(usize, Option<usize>)]| {
        for &(at, from) in edge {
            v[at] = match from {
                Some(c) => v[r + c],
                None => size as f64 * cval,
            };
        }
    };
    let mut v = vec![0.0f64; cols + 2 * r];
    let mut levels: Box<Levels> =
        Box::new([[0.0; PIECE + crate::params::stencil::MAX_BOX_SIZE]; LEVELS]);
    // Each range of outputs is summed into `stage` (in L1), fixed at the
    // edges, then copied out: streamed when the output is far larger than
    // the caches (see super::store).
    let mut stage = vec![T::default(); cols];
    let stream = layout.output_len().saturating_mul(std::mem::size_of::<T>()) >= STREAM_MIN_BYTES;
    let mut window = Vec::with_capacity(size);
    let mut since_report = 0;
    for y in strip.clone() {
        let yi = y as i64;
        let (add, sub) = (src(yi + r as i64), src(yi - r as i64 - 1));
        let ahead = if y + 1 < strip.end {
            src(yi + r as i64 + 1)
        } else {
            Src::Const(0.0)
        };
        let running = y % RESEED != 0 && y != strip.start;
        window.clear();
        let o = (y - strip.start) * layout.out_pitch;
        let out_row = &mut out[o..o + cols];
        // The outputs whose window reaches past the edge: the whole row, or
        // r columns at each end.
        let edges = if y < r || y + r >= rows {
            [0..cols, 0..0]
        } else {
            [
                0..r.min(cols),
                cols.saturating_sub(r).max(r.min(cols))..cols,
            ]
        };
        let in_row = &input[y * layout.in_pitch..y * layout.in_pitch + cols];
        let mut emit = |v: &[f64], range: std::ops::Range<usize>, levels: &mut Levels| {
            let staged = &mut stage[range.clone()];
            horizontal(
                &v[range.start..range.end + size - 1],
                size,
                scale,
                staged,
                levels,
            );
            for edge in &edges {
                let (from, to) = (edge.start.max(range.start), edge.end.min(range.end));
                if from >= to {
                    continue;
                }
                let part = &mut stage[from..to];
                if pad_after {
                    part.iter_mut()
                        .for_each(|o| *o = T::from_f64(o.to_f64() + opts.cval));
                }
                if opts.mode == BoundaryMode::Interior {
                    // Outputs whose window does not fit keep their input value.
                    part.copy_from_slice(&in_row[from..to]);
                }
            }
            if stream {
                stream_copy(&mut out_row[range.clone()], &stage[range]);
            } else {
                out_row[range.clone()].copy_from_slice(&stage[range]);
            }
        };
        // Outputs below `next` are written; the left end is filled once the
        // columns it copies are up to date.
        let (mut next, mut left_done) = (0, false);
        for (k, c) in order.iter().enumerate() {
            let piece = &mut v[r + c.start..r + c.end];
            let finite = running && step(piece, c.start, add, sub, ahead);
            if !finite {
                if window.is_empty() {
                    window.extend((yi - r as i64..=yi + r as i64).map(src));
                }
                seed(piece, c.start, &window);
            }
            // Columns up to date: those of the pieces so far. Output x
            // needs columns up to x + r (and the left end).
            let done_to = if k == 0 && head > 0 { 0 } else { c.end };
            if !left_done
                && left
                    .iter()
                    .all(|(_, f)| f.map_or(true, |f| f < done_to || f >= cols - head))
            {
                fill(&mut v, &left);
                left_done = true;
            }
            let ready = done_to.saturating_sub(r);
            if left_done && ready > next && k + 1 < order.len() {
                emit(&v, next..ready, &mut levels);
                next = ready;
            }
        }
        if !left_done {
            fill(&mut v, &left);
        }
        fill(&mut v, &right);
        emit(&v, next..cols, &mut levels);
        since_report += 1;
        if since_report == RESEED || y + 1 == strip.end {
            report(since_report);
            since_report = 0;
        }
    }
    if stream {
        fence();
    }
}
