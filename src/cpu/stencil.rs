//! The box filter, separable, at memory bandwidth.
//!
//! Each thread owns a strip of output rows and goes down it row by row; each
//! row is cut into tiles of [`TILE_COLS`] columns. A tile keeps, in an f64
//! buffer, the column sums `V[c]` of the window's rows for the current output
//! row over its columns and `r` more at each side: moving down a row adds
//! the incoming row and subtracts the outgoing one (vectorised over
//! columns), so the vertical cost does not depend on the window. The columns
//! outside the image (at most `r` at each side of an edge tile) are those
//! the boundary mode reads there, each updated with the same arithmetic as
//! inside. Each output is then the sum of `size` consecutive column sums,
//! times `1 / size^2`, rounded once to `T` (src/cpu/stencil_rows.rs), read
//! while the tile's column sums (8 KB) are still in L1. Memory sees one read
//! of the input (the next row asked for ahead, see [`prefetch`]) and one
//! write of the output, streamed past the caches when it is large (see
//! super::store).
//!
//! Determinism: the running column sums are re-seeded (summed directly, top
//! to bottom) at every row that is a multiple of [`RESEED`], and the strips
//! start at such rows; the tiles are fixed by the image's width. So each
//! output depends on its row and column only: the same bits on any thread
//! count.
//!
//! Non-finite values: a running sum that meets a NaN or an infinity stays
//! non-finite after it leaves (inf - inf), so the column update checks its
//! results and, when one is not finite, the tile's column sums of that row
//! are summed directly instead. Direct sums hold only the window's values,
//! and the horizontal sums never subtract, so a non-finite value spoils
//! exactly the windows that hold it (as in the reference). A non-finite
//! `cval` (constant mode) is handled as the kernels do: the image is
//! filtered with 0 outside, then `cval` is added to every output whose
//! window reaches past the edge (+-inf or NaN, the class the reference's sum
//! has).
//!
//! Error bound (finite data, M = the largest |value| the column sums held
//! since their last re-seed: the windows of the output's columns over up to
//! RESEED rows above it, cval included; so a huge value spoils the rounding
//! of up to RESEED rows below it, as SciPy's running sums spoil a whole
//! line): a column sum after k <= RESEED running steps has an error of at
//! most (size + 2k) eps64 size M (each step rounds twice, on values below
//! size M; the seed rounds size times), the horizontal sum adds size eps64
//! size^2 M, so before the final rounding to T the mean is off by at most
//! (size + 2 RESEED + size) eps64 M < 400 eps64 M for size <= 33: 1e-13 M,
//! far below an f32 ulp, and for f64 a few hundred ulps of M at most. It does
//! not grow with the image's height or width (tests/cpu_stencil.rs checks
//! this bound).

use std::sync::atomic::{AtomicU64, Ordering};

use super::parallel::for_each_chunk;
use super::stencil_rows::{row_sums, RowScratch, ROW_PAD};
use super::store::{fence, STREAM_MIN_BYTES};
use crate::float::Float;
use crate::params::stencil::extend;
use crate::params::stencil::{
    BoundaryMode, BoxFilterOptions, ImageLayout, UniformFilterOptions, MAX_BOX_SIZE,
};

/// Rows between exact re-seeds of the running column sums (and the
/// alignment of the threads' strips).
pub(crate) const RESEED: usize = 128;
/// RESEED blocks of rows per strip handed to a thread: 16 strips of an
/// 8192-row image, so that a thread slowed by other work on its core does
/// fewer of them (one strip per thread waited for the slowest). Starting a
/// strip costs nothing extra: its first row is a re-seed anyway.
const STRIP_BLOCKS: usize = 4;
/// Columns per tile: the tile's column sums (8 KB) and the pieces of the
/// rows it reads stay in L1 between the column update and the row sums
/// (8192^2 f32, 2 threads: 512 columns 0.63-0.65 of a copy's bandwidth at
/// sizes 3-9, 1024 0.73-0.80, 2048 0.72-0.75, whole rows 0.64).
const TILE_COLS: usize = 1024;

/// One row of the window: an image row (its `cols` values) or the constant.
#[derive(Clone, Copy)]
enum Src<'a, T> {
    Row(&'a [T]),
    Const(f64),
}

impl<T: Float> Src<'_, T> {
    /// The value at column `c`.
    #[inline(always)]
    fn at(self, c: usize) -> f64 {
        match self {
            Src::Row(row) => row[c].to_f64(),
            Src::Const(k) => k,
        }
    }
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
#[macro_rules_attribute::apply(simd_targets!)]
fn step<T: Float>(
    v: &mut [f64],
    first: usize,
    add: Src<'_, T>,
    sub: Src<'_, T>,
    ahead: Src<'_, T>,
) -> bool {
    if let (Src::Const(_), Src::Const(_)) = (add, sub) {
        // Both rows outside (constant mode): c - c = 0 changes nothing.
        return all_finite(v);
    }
    // The finiteness check is folded into the update (see [`finite_bits`]):
    // a separate pass over `v` cost 10-15% of the filter's time (8192^2
    // f32, sizes 3 and 9).
    let mut m = EXP;
    for (k, x) in v.chunks_mut(PREFETCH_BLOCK).enumerate() {
        let cols = first + k * PREFETCH_BLOCK..first + k * PREFETCH_BLOCK + x.len();
        prefetch(ahead, cols.clone());
        // One loop per pair of kinds, so each is specialised (no match per
        // value).
        match (add, sub) {
            (Src::Row(a), Src::Row(b)) => {
                for ((x, a), b) in x.iter_mut().zip(&a[cols.clone()]).zip(&b[cols]) {
                    *x += a.to_f64() - b.to_f64();
                    m = m.min(finite_bits(*x));
                }
            }
            (Src::Row(a), Src::Const(c)) => {
                for (x, a) in x.iter_mut().zip(&a[cols]) {
                    *x += a.to_f64() - c;
                    m = m.min(finite_bits(*x));
                }
            }
            (Src::Const(c), Src::Row(b)) => {
                for (x, b) in x.iter_mut().zip(&b[cols]) {
                    *x += c - b.to_f64();
                    m = m.min(finite_bits(*x));
                }
            }
            (Src::Const(_), Src::Const(_)) => unreachable!("returned above"),
        }
    }
    m != 0
}

/// Columns of the column update per batch of prefetches.
const PREFETCH_BLOCK: usize = 128;

/// Asks for columns `cols` of the row the next output row adds (one output
/// row ahead): the only values read from memory rather than from cache,
/// which the hardware prefetcher alone follows too late. Issued in batches
/// of [`PREFETCH_BLOCK`] columns between pieces of the update, into L2
/// (`prefetcht1`). Measured on 8192^2, 2 threads, against one batch per
/// 1024-column tile into L1: the same for f32, 0.56 -> 0.63 of a copy's
/// bandwidth for f64 (size 9); without prefetches 5-10% slower; two rows
/// ahead no better.
#[inline(always)]
fn prefetch<T: Float>(ahead: Src<'_, T>, cols: std::ops::Range<usize>) {
    #[cfg(target_arch = "x86_64")]
    if let Src::Row(row) = ahead {
        let line = 64 / std::mem::size_of::<T>();
        for i in cols.step_by(line) {
            // SAFETY: a prefetch is a hint that never faults, and SSE is part
            // of every x86_64 target; `i` is inside the row anyway.
            unsafe {
                std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T1 }>(
                    row.as_ptr().add(i) as *const i8,
                )
            };
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = (ahead, cols);
}

/// The column sums `v` (columns `first ..`) summed directly, top to bottom;
/// true when all are finite.
#[macro_rules_attribute::apply(simd_targets!)]
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

/// Filters `input` into `output` (validated, the image not empty) on up to
/// `threads` threads: square odd windows up to [`MAX_BOX_SIZE`] centred on
/// their point take this module's fused path, the others the running sums of
/// super::uniform (any window, its cost independent of the size).
pub fn uniform_filter<T: Float>(
    input: &[T],
    output: &mut [T],
    layout: &ImageLayout,
    opts: &UniformFilterOptions,
    threads: usize,
    progress: Option<&(dyn Fn(u64, u64) + Sync)>,
) {
    let [sy, sx] = opts.size;
    if sy == sx && sy % 2 == 1 && sy <= MAX_BOX_SIZE && opts.origin == [0, 0] {
        let square = BoxFilterOptions {
            size: sy,
            mode: opts.mode,
            cval: opts.cval,
        };
        return box_filter(input, output, layout, &square, threads, progress);
    }
    super::uniform::uniform_filter(input, output, layout, opts, threads);
    if let Some(p) = progress {
        p(layout.rows as u64, layout.rows as u64);
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
    // Strips of STRIP_BLOCKS RESEED blocks of rows, handed to the threads as
    // they free up; each strip is the part of the output from its first
    // row's start to its last row's end (the gaps between rows inside it are
    // never written).
    let done = AtomicU64::new(0);
    let report = |n: usize| {
        let finished = done.fetch_add(n as u64, Ordering::Relaxed) + n as u64;
        if let Some(p) = progress {
            p(finished, rows as u64);
        }
    };
    let strip_rows = RESEED * STRIP_BLOCKS;
    let out = &mut output[..layout.output_len()];
    for_each_chunk(
        threads,
        out,
        strip_rows * layout.out_pitch,
        None,
        |first, piece| {
            let start = first / layout.out_pitch;
            let strip = start..(start + strip_rows).min(rows);
            filter_strip(input, piece, layout, opts, strip, &report);
        },
    );
}

/// The columns of one tile and their column sums.
struct Tile {
    /// Output columns.
    cols: std::ops::Range<usize>,
    /// `sums[ROW_PAD + i]` is the column sum of column `cols.start - r + i`
    /// (the row sums may read the ROW_PAD values at each side).
    sums: Vec<f64>,
    /// The columns inside the image, `lo..`, read as slices of the rows:
    /// `sums[ROW_PAD..][inner]`.
    lo: usize,
    inner: std::ops::Range<usize>,
    /// The others (past the image's edges, at most r at each side): index
    /// in `sums[ROW_PAD..]`, and the column the mode reads there (None: the
    /// constant).
    halo: Vec<(usize, Option<usize>)>,
}

impl Tile {
    /// Output columns `cols` of an image `width` wide, window radius `r`.
    fn new(cols: std::ops::Range<usize>, width: usize, r: usize, mode: BoundaryMode) -> Self {
        let first = cols.start as i64 - r as i64;
        let len = cols.len() + 2 * r;
        let (lo, hi) = (first.max(0) as usize, (cols.end + r).min(width));
        let inner = (lo as i64 - first) as usize..(hi as i64 - first) as usize;
        let halo = (0..len)
            .filter(|i| !inner.contains(i))
            .map(|i| {
                let c = extend(first + i as i64, width as i64, mode);
                (i, c.map(|c| c as usize))
            })
            .collect();
        Tile {
            cols,
            sums: vec![0.0; ROW_PAD + len + ROW_PAD],
            lo,
            inner,
            halo,
        }
    }

    /// Moves the column sums down to the next output row (`running`: from
    /// the rows `add`, `sub`, prefetching `ahead`), or sums them directly
    /// over the window's rows (at a re-seed, or when a running sum is not
    /// finite; `window` is listed by `list` when still empty). `size`,
    /// `cval`: of the filter.
    fn update<'a, T: Float>(
        &mut self,
        [add, sub, ahead]: [Src<'a, T>; 3],
        running: bool,
        window: &mut Vec<Src<'a, T>>,
        list: &dyn Fn(&mut Vec<Src<'a, T>>),
        size: usize,
        cval: f64,
    ) {
        let len = self.sums.len() - 2 * ROW_PAD;
        let v = &mut self.sums[ROW_PAD..ROW_PAD + len];
        let mut finite = running && step(&mut v[self.inner.clone()], self.lo, add, sub, ahead);
        if finite && !matches!((add, sub), (Src::Const(_), Src::Const(_))) {
            // The same arithmetic as `step` (c - c = 0 changes nothing).
            for &(i, c) in &self.halo {
                if let Some(c) = c {
                    v[i] += add.at(c) - sub.at(c);
                    finite &= v[i].is_finite();
                }
            }
        }
        if !finite {
            if window.is_empty() {
                list(window);
            }
            seed(&mut v[self.inner.clone()], self.lo, window);
            // The same order as `seed`: top to bottom.
            for &(i, c) in &self.halo {
                v[i] = match c {
                    Some(c) => window[1..].iter().fold(window[0].at(c), |s, w| s + w.at(c)),
                    None => size as f64 * cval,
                };
            }
        }
    }
}

/// Output rows `strip` (a multiple of RESEED first); `out` starts at the
/// strip's first row.
fn filter_strip<'a, T: Float>(
    input: &'a [T],
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
    // Outputs near the edges that are fixed after the sums (interior mode:
    // the input value; non-finite cval: + cval) are summed apart from the
    // streamed middle.
    let fix_edges = pad_after || opts.mode == BoundaryMode::Interior;
    let src = |y: i64| -> Src<'a, T> {
        match extend(y, rows as i64, opts.mode) {
            Some(y) => {
                let start = y as usize * layout.in_pitch;
                Src::Row(&input[start..start + cols])
            }
            None => Src::Const(cval),
        }
    };
    let width = TILE_COLS.min(cols);
    let mut tiles: Vec<Tile> = (0..cols)
        .step_by(width)
        .map(|c| Tile::new(c..(c + width).min(cols), cols, r, opts.mode))
        .collect();
    let mut scratch = RowScratch::<T>::new(width);
    let stream = layout.output_len().saturating_mul(std::mem::size_of::<T>()) >= STREAM_MIN_BYTES;
    let mut window = Vec::with_capacity(size);
    let mut since_report = 0;
    for y in strip.clone() {
        let yi = y as i64;
        let ahead = if y + 1 < strip.end {
            src(yi + r as i64 + 1)
        } else {
            Src::Const(0.0)
        };
        let rows_read = [src(yi + r as i64), src(yi - r as i64 - 1), ahead];
        let running = y % RESEED != 0 && y != strip.start;
        // The window's rows, listed once a tile needs them.
        window.clear();
        let list = |w: &mut Vec<Src<'a, T>>| w.extend((yi - r as i64..=yi + r as i64).map(src));
        let o = (y - strip.start) * layout.out_pitch;
        let out_row = &mut out[o..o + cols];
        let in_row = &input[y * layout.in_pitch..y * layout.in_pitch + cols];
        // The outputs fixed after the sums: [0, edge_end) and [edge_start,
        // cols), the whole row for the first and last r rows.
        let (edge_end, edge_start) = if !fix_edges {
            (0, cols)
        } else if y < r || y + r >= rows {
            (cols, cols)
        } else {
            (r, cols.saturating_sub(r))
        };
        for tile in &mut tiles {
            tile.update(rows_read, running, &mut window, &list, size, cval);
            // The tile's outputs: [left edge][middle][right edge].
            let t = tile.cols.clone();
            let a = edge_end.clamp(t.start, t.end);
            let b = edge_start.clamp(a, t.end);
            for (part, edge) in [(t.start..a, true), (a..b, false), (b..t.end, true)] {
                if part.is_empty() {
                    continue;
                }
                let at = ROW_PAD + part.start - t.start;
                let dst = &mut out_row[part.clone()];
                row_sums(
                    &tile.sums,
                    at,
                    size,
                    scale,
                    dst,
                    stream && !edge,
                    &mut scratch,
                );
                if edge && pad_after {
                    dst.iter_mut()
                        .for_each(|o| *o = T::from_f64(o.to_f64() + opts.cval));
                }
                if edge && opts.mode == BoundaryMode::Interior {
                    // Outputs whose window does not fit keep their input value.
                    dst.copy_from_slice(&in_row[part]);
                }
            }
        }
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
