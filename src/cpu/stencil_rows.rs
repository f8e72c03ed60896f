//! The horizontal half of the CPU box filter (src/cpu/stencil.rs): each
//! output of a row is the sum of `size` consecutive column sums, times
//! `1 / size^2`, rounded once to `T`. Only adds, never a subtraction: a
//! non-finite column sum spoils exactly the outputs whose window holds it.
//! Each output's arithmetic depends on the values of its window only (not on
//! where a call starts or ends), so the result does not depend on how a row
//! is cut into calls.
//!
//! Two ways to sum:
//! - On AVX-512 (and a compiler with its intrinsics, Rust >= 1.89), windows
//!   up to [`TREE_MAX`]: a tree of pair sums in registers. Column sums are
//!   loaded once per 8 outputs; levels of 2, 4 and 8 neighbours are built
//!   with lane shifts (`valignq` / `vpermt2pd`), and a window of `size` is
//!   one term per set bit of `size` (9 = 8 + 1: three shifts and four adds
//!   per 8 outputs, where the direct sum loads 9 vectors, 8 of them split
//!   across cache lines). The results go straight to the output (streamed
//!   when asked), with no staging pass.
//! - Elsewhere [`horizontal`]: the direct sum of the `size` terms (vectorised
//!   over outputs) for small windows, doubling sums for larger ones, into a
//!   staging row, then copied out.

use super::store::stream_copy;
use crate::float::Float;
use crate::params::stencil::MAX_BOX_SIZE;

/// f64 lanes per vector (one AVX-512 register; two AVX2 ones).
const LANES: usize = 8;
/// Outputs per step of the direct horizontal sums: 8 independent vector
/// accumulators, enough to cover the add latency (4 were latency-bound).
const BLOCK: usize = 8 * LANES;
/// Windows up to this size sum their column sums directly; larger ones by
/// doubling (measured: see tests/cpu_timing.rs).
const DIRECT_MAX: usize = 9;
/// Outputs per piece of the doubling sums (its levels stay in L1).
const PIECE: usize = 256;
/// Levels of the doubling sums: pairs, 4s, 8s, 16s, 32s (size <= 33 < 64).
const LEVELS: usize = 5;
/// The largest window of the pair-sum tree: up to 13 its levels and window
/// terms fit in the 32 vector registers (15 spilled them to the stack and
/// ran slower than the direct sums).
#[cfg_attr(not(kernpack_avx512), allow(dead_code))]
pub(crate) const TREE_MAX: usize = 13;
/// Column sums the row sums may read before and after those a call uses
/// (their values only reach lanes that are not stored): 7 before, up to
/// 8 (levels + 1) after.
pub(crate) const ROW_PAD: usize = LANES * 6;

/// Per-thread scratch of the row sums: the staging row and the doubling
/// levels of the portable path.
pub(crate) struct RowScratch<T> {
    stage: Vec<T>,
    levels: Box<[[f64; PIECE + MAX_BOX_SIZE]; LEVELS]>,
}

impl<T: Float> RowScratch<T> {
    /// Scratch for calls of up to `width` outputs.
    pub(crate) fn new(width: usize) -> Self {
        RowScratch {
            stage: vec![T::default(); width],
            levels: Box::new([[0.0; PIECE + MAX_BOX_SIZE]; LEVELS]),
        }
    }
}

/// `out[x] = T(scale * (v[at + x] + v[at + x + 1] + ... + v[at + x + size -
/// 1]))` for every x of `out` (at most the scratch's width), `v` holding
/// [`ROW_PAD`] values more at each side of those. `stream`: write with
/// non-temporal stores where possible (the caller then calls
/// `super::store::fence` before the output is read on another thread).
pub(crate) fn row_sums<T: Float>(
    v: &[f64],
    at: usize,
    size: usize,
    scale: f64,
    out: &mut [T],
    stream: bool,
    scratch: &mut RowScratch<T>,
) {
    debug_assert!(at >= ROW_PAD && v.len() + 1 >= at + out.len() + size + ROW_PAD);
    #[cfg(kernpack_avx512)]
    if tree::available(size) {
        return tree::sums(v, at, size, scale, out, stream);
    }
    portable(v, at, size, scale, out, stream, scratch);
}

/// [`row_sums`] without the AVX-512 tree: [`horizontal`] into the staging
/// row, then copied out.
fn portable<T: Float>(
    v: &[f64],
    at: usize,
    size: usize,
    scale: f64,
    out: &mut [T],
    stream: bool,
    scratch: &mut RowScratch<T>,
) {
    let v = &v[at..at + out.len() + size - 1];
    let staged = &mut scratch.stage[..out.len()];
    horizontal(v, size, scale, staged, &mut scratch.levels);
    if stream {
        stream_copy(out, staged);
    } else {
        out.copy_from_slice(staged);
    }
}

/// The portable row sums, into `out` (`v` holds `out.len() + size - 1`
/// column sums): direct for small windows, doubling for larger ones.
#[macro_rules_attribute::apply(simd_targets!)]
fn horizontal<T: Float>(
    v: &[f64],
    size: usize,
    scale: f64,
    out: &mut [T],
    levels: &mut [[f64; PIECE + MAX_BOX_SIZE]; LEVELS],
) {
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

/// The pair-sum tree on AVX-512 (see the module's comment). Compiled only
/// by Rust >= 1.89 (build.rs), where its intrinsics are stable.
#[cfg(kernpack_avx512)]
#[clippy::msrv = "1.89"]
mod tree {
    use std::arch::x86_64::*;

    use super::{LANES, ROW_PAD, TREE_MAX};
    use crate::float::Float;

    /// Chunks of column sums loaded ahead of the chunk being summed, at most
    /// (`lead` = the top level + 1: levels up to 8 for windows up to 15).
    const LEAD_MAX: usize = 4;
    /// Chunks of each level kept in registers: from the chunk being summed
    /// to the newest (the lowest level is `lead` chunks ahead).
    const RING: usize = LEAD_MAX + 1;
    // A call reads up to 7 column sums before its first and 8 (LEAD_MAX + 1)
    // after its last.
    const _: () = assert!(ROW_PAD >= LANES * (LEAD_MAX + 1));

    /// True when this CPU runs the tree and it covers `size`.
    pub(super) fn available(size: usize) -> bool {
        size <= TREE_MAX
            && std::arch::is_x86_feature_detected!("avx512f")
            && std::arch::is_x86_feature_detected!("avx512dq")
            && std::arch::is_x86_feature_detected!("avx512vl")
    }

    /// [`super::row_sums`] with the tree; [`available`] must have said so.
    pub(super) fn sums<T: Float>(
        v: &[f64],
        at: usize,
        size: usize,
        scale: f64,
        out: &mut [T],
        stream: bool,
    ) {
        debug_assert!(available(size));
        // SAFETY: `available` checked the CPU's features.
        unsafe {
            match size {
                1 => run::<T, 1>(v, at, scale, out, stream),
                3 => run::<T, 3>(v, at, scale, out, stream),
                5 => run::<T, 5>(v, at, scale, out, stream),
                7 => run::<T, 7>(v, at, scale, out, stream),
                9 => run::<T, 9>(v, at, scale, out, stream),
                11 => run::<T, 11>(v, at, scale, out, stream),
                13 => run::<T, 13>(v, at, scale, out, stream),
                _ => unreachable!("window sizes are odd and at most TREE_MAX here"),
            }
        }
    }

    /// The highest level of window `S`: 2^top <= S.
    const fn top(s: usize) -> usize {
        (usize::BITS - 1 - s.leading_zeros()) as usize
    }

    /// The terms of a window of `s` (see [`kernel`]): (level j, chunk m,
    /// lane shift k) per set bit 2^j of s, highest first; `NO_TERM` after
    /// the last. Computed at compile time so that every shift is a constant
    /// (a shift chosen at run time compiled to a jump table, 2x slower).
    const fn terms(s: usize) -> [(usize, usize, usize); MAX_TERMS] {
        let mut terms = [NO_TERM; MAX_TERMS];
        let (mut count, mut offset, mut j) = (0, 0, top(s) + 1);
        while j > 0 {
            j -= 1;
            if s & (1 << j) != 0 {
                terms[count] = (j, offset / LANES, offset % LANES);
                count += 1;
                offset += 1 << j;
            }
        }
        terms
    }

    /// Terms of a window up to 15: one per bit.
    const MAX_TERMS: usize = 4;
    const NO_TERM: (usize, usize, usize) = (usize::MAX, 0, 0);

    /// The compile-time plan of window `S`.
    struct Plan<const S: usize>;

    impl<const S: usize> Plan<S> {
        const TOP: usize = top(S);
        /// Chunks of column sums loaded ahead of the output chunk.
        const LEAD: usize = top(S) + 1;
        const TERMS: [(usize, usize, usize); MAX_TERMS] = terms(S);
    }

    /// Lays the chunks of 8 outputs on the output's addresses: when
    /// streaming, the first chunk starts `pre` outputs before `out` so that
    /// every chunk is aligned as the streaming stores need (32 bytes for
    /// f32, 64 for f64). The first and last chunks are stored under masks.
    #[target_feature(enable = "avx512f,avx512dq,avx512vl")]
    unsafe fn run<T: Float, const S: usize>(
        v: &[f64],
        at: usize,
        scale: f64,
        out: &mut [T],
        stream: bool,
    ) {
        let n = out.len();
        if n == 0 {
            return;
        }
        let lead = Plan::<S>::LEAD;
        let bytes = LANES * std::mem::size_of::<T>();
        let pre = if stream {
            out.as_ptr() as usize % bytes / std::mem::size_of::<T>()
        } else {
            0
        };
        let chunks = (pre + n).div_ceil(LANES);
        assert!(at >= pre && at - pre + LANES * (chunks + lead) <= v.len());
        let first_mask = 0xffu8 << pre;
        let last_mask = 0xffu8 >> (LANES * chunks - pre - n);
        // SAFETY: the kernel reads v[at - pre .. at - pre + 8 (chunks +
        // lead)] (checked above) and stores only the lanes of the chunks
        // that fall on out[0 .. n] (the masks); the addresses of the others
        // are formed with wrapping arithmetic and never accessed.
        kernel::<T, S>(
            v.as_ptr().add(at - pre),
            chunks,
            scale,
            out.as_mut_ptr().wrapping_sub(pre),
            first_mask,
            last_mask,
            stream,
        );
    }

    /// Lanes K.. of `a` then lanes ..K of `b`: the 8 values starting K
    /// places into the pair (a, b). K = 8 is `b` itself.
    #[inline(always)]
    unsafe fn shift(a: __m512d, b: __m512d, k: usize) -> __m512d {
        let (a, b) = (_mm512_castpd_si512(a), _mm512_castpd_si512(b));
        _mm512_castsi512_pd(match k {
            0 => a,
            1 => _mm512_alignr_epi64::<1>(b, a),
            2 => _mm512_alignr_epi64::<2>(b, a),
            3 => _mm512_alignr_epi64::<3>(b, a),
            4 => _mm512_alignr_epi64::<4>(b, a),
            5 => _mm512_alignr_epi64::<5>(b, a),
            6 => _mm512_alignr_epi64::<6>(b, a),
            7 => _mm512_alignr_epi64::<7>(b, a),
            _ => b,
        })
    }

    /// Writes `chunks` chunks of 8 outputs at `out` from the column sums at
    /// `v` (which must hold `8 (chunks + lead)` values), the first and last
    /// chunk under the masks. Level j chunk m holds the sums of 2^j
    /// neighbours, `L_j[m] = L_{j-1}[m] + shift(L_{j-1}[m], L_{j-1}[m + 1],
    /// 2^(j-1))`; each is computed once, the lowest level (the column sums)
    /// `lead` chunks ahead of the output chunk and each level one chunk
    /// behind the one below. An output chunk c is then a sum of terms
    /// `shift(L_j[c + o / 8], L_j[c + o / 8 + 1], o % 8)`, one per set bit
    /// 2^j of S, at offsets o = the sum of the higher bits.
    #[inline(always)]
    unsafe fn kernel<T: Float, const S: usize>(
        v: *const f64,
        chunks: usize,
        scale: f64,
        out: *mut T,
        first_mask: u8,
        last_mask: u8,
        stream: bool,
    ) {
        let (top, lead) = (Plan::<S>::TOP, Plan::<S>::LEAD);
        // ring[j][i]: level j chunk (newest_j - (RING - 1) + i); newest_j
        // = c0 - j at step c0.
        let mut ring = [[_mm512_setzero_pd(); RING]; LEAD_MAX];
        let scale = _mm512_set1_pd(scale);
        for c0 in 0..chunks + lead {
            // Element by element: a copy_within (memmove) kept the ring in
            // memory (measured 2x slower).
            for level in ring.iter_mut().take(top + 1) {
                for i in 0..RING - 1 {
                    level[i] = level[i + 1];
                }
            }
            ring[0][RING - 1] = _mm512_loadu_pd(v.add(LANES * c0));
            for j in 1..=top {
                let (a, b) = (ring[j - 1][RING - 2], ring[j - 1][RING - 1]);
                ring[j][RING - 1] = _mm512_add_pd(a, shift(a, b, 1 << (j - 1)));
            }
            if c0 < lead {
                continue;
            }
            // Level j chunk c + m sits at RING - 1 - (lead - j) + m.
            let at = |j: usize, m: usize| ring[j][RING - 1 - (lead - j) + m];
            let mut acc = _mm512_setzero_pd();
            for (t, &(j, m, k)) in Plan::<S>::TERMS.iter().enumerate() {
                if j == NO_TERM.0 {
                    break;
                }
                let term = if k == 0 {
                    at(j, m)
                } else {
                    shift(at(j, m), at(j, m + 1), k)
                };
                acc = if t == 0 {
                    term
                } else {
                    _mm512_add_pd(acc, term)
                };
            }
            let sums = _mm512_mul_pd(acc, scale);
            let c = c0 - lead;
            let dst = out.wrapping_add(LANES * c);
            let mut mask = 0xff;
            if c == 0 {
                mask &= first_mask;
            }
            if c + 1 == chunks {
                mask &= last_mask;
            }
            // T is f32 or f64 (Float is sealed): its size tells which.
            if std::mem::size_of::<T>() == 4 {
                let sums = _mm512_cvtpd_ps(sums);
                if mask != 0xff {
                    _mm256_mask_storeu_ps(dst as *mut f32, mask, sums);
                } else if stream {
                    _mm256_stream_ps(dst as *mut f32, sums);
                } else {
                    _mm256_storeu_ps(dst as *mut f32, sums);
                }
            } else if mask != 0xff {
                _mm512_mask_storeu_pd(dst as *mut f64, mask, sums);
            } else if stream {
                _mm512_stream_pd(dst as *mut f64, sums);
            } else {
                _mm512_storeu_pd(dst as *mut f64, sums);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    /// Same value, or both NaN.
    fn same_class(a: f64, b: f64) -> bool {
        a == b || (a.is_nan() && b.is_nan())
    }

    /// Both ways of summing (the tree where this CPU has it, and the
    /// portable one) against the sums left to right, on column sums with
    /// NaN and infinities dropped in, into a slice of a poisoned buffer at
    /// every alignment, streamed or not: every output within the rounding
    /// of a different order, non-finite ones of the same class, and nothing
    /// written outside the slice (the tree's masked first and last chunks).
    fn check<T: Float>(
        size: usize,
        n: usize,
        at: usize,
        shift: usize,
        stream: bool,
        values: &[f64],
    ) -> Result<(), TestCaseError> {
        let scale = 1.0 / (size * size) as f64;
        let v = &values[..at + n + size - 1 + ROW_PAD];
        let m = v
            .iter()
            .filter(|x| x.is_finite())
            .fold(0.0f64, |m, x| m.max(x.abs()));
        let eps_t = if T::NAME == "f32" {
            f32::EPSILON as f64
        } else {
            f64::EPSILON
        };
        let poison = T::from_f64(-1234.5);
        for tree in [true, false] {
            let mut buffer = vec![poison; n + shift + 40];
            let out = &mut buffer[shift..shift + n];
            let mut scratch = RowScratch::new(n);
            if tree {
                row_sums(v, at, size, scale, out, stream, &mut scratch);
            } else {
                portable(v, at, size, scale, out, stream, &mut scratch);
            }
            crate::cpu::store::fence();
            for (x, got) in out.iter().enumerate() {
                let want = v[at + x..at + x + size].iter().sum::<f64>() * scale;
                let got = got.to_f64();
                if want.is_finite() {
                    let tol = 2.0 * size as f64 * f64::EPSILON * m + eps_t * want.abs();
                    prop_assert!(
                        (got - want).abs() <= tol,
                        "{} size {size} n {n} at {at} shift {shift} stream {stream} tree {tree}: \
                         output {x} is {got}, want {want}",
                        T::NAME
                    );
                } else {
                    prop_assert!(
                        same_class(got, T::from_f64(want).to_f64()),
                        "{} size {size} output {x}: {got}, want {want}",
                        T::NAME
                    );
                }
            }
            let outside = buffer[..shift].iter().chain(&buffer[shift + n..]);
            prop_assert!(
                outside.into_iter().all(|o| o.to_f64() == poison.to_f64()),
                "{} size {size} n {n} shift {shift} stream {stream} tree {tree}: wrote outside",
                T::NAME
            );
        }
        Ok(())
    }

    /// Column sums of magnitude up to 40 around a random offset, with
    /// `spikes` NaN / +-inf values.
    fn values(len: usize) -> impl Strategy<Value = Vec<f64>> {
        let spike = prop_oneof![
            6 => -40.0f64..40.0,
            1 => Just(f64::NAN),
            1 => Just(f64::INFINITY),
            1 => Just(f64::NEG_INFINITY),
        ];
        (
            proptest::collection::vec(-40.0f64..40.0, len),
            proptest::collection::vec((0..len, spike), 0..4),
        )
            .prop_map(|(mut v, spikes)| {
                for (i, x) in spikes {
                    v[i] = x;
                }
                v
            })
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(if cfg!(debug_assertions) { 64 } else { 512 }))]
        #[test]
        fn row_sums_match_left_to_right(
            r in 0usize..=16,
            n in prop_oneof![0usize..40, 40usize..300],
            pad in 0usize..20,
            shift in 0usize..17,
            stream in any::<bool>(),
            f32 in any::<bool>(),
            values in values(300 + 2 * MAX_BOX_SIZE + 2 * ROW_PAD + 20),
        ) {
            let size = 2 * r + 1;
            let at = ROW_PAD + pad;
            if f32 {
                check::<f32>(size, n, at, shift, stream, &values)?;
            } else {
                check::<f64>(size, n, at, shift, stream, &values)?;
            }
        }
    }
}
