//! The rank filters on the CPU: each output's window gathered as keys and
//! the rank selected (`select_nth_unstable`, linear time), outputs spread
//! over threads. Windows wholly inside the array read through one table of
//! flat offsets; the others map each point through the boundary mode.
use super::parallel::for_each_chunk;
use crate::params::rank::{next_index, RankFilterOptions, RankValue, Window};

/// Outputs per piece handed to a thread.
const CHUNK: usize = 1 << 14;

/// `opts` (checked; `rank` resolved, `cval` fits `T` in the constant mode)
/// from `input` into `output`, both the row-major array of `shape`.
pub(crate) fn rank_filter<T: RankValue>(
    input: &[T],
    output: &mut [T],
    shape: &[usize],
    opts: &RankFilterOptions,
    rank: usize,
    threads: usize,
    progress: Option<&(dyn Fn(u64, u64) + Sync)>,
) {
    let window = Window::new(shape, opts);
    let strides = window.strides();
    let reach = window.reach();
    let flat: Vec<i64> = window
        .taps
        .iter()
        .map(|t| t.iter().zip(&strides).map(|(d, s)| d * s).sum())
        .collect();
    // Read in the constant mode only, where validation made `cval` fit `T`;
    // in the others it may be anything (NaN, 1e300 for an integer type).
    let cval = T::from_cval(opts.cval).map_or(0, RankValue::key);
    let ndim = shape.len();
    for_each_chunk(threads, output, CHUNK, progress, |first, piece| {
        let mut index = unflatten(first, shape);
        let mut keys = Vec::with_capacity(flat.len());
        for out in piece.iter_mut() {
            let at = flat_index(&index, &strides);
            let inside = (0..ndim).all(|a| {
                let i = index[a] as i64;
                i + reach[a].0 >= 0 && i + reach[a].1 < shape[a] as i64
            });
            keys.clear();
            if inside {
                keys.extend(flat.iter().map(|&d| input[(at + d) as usize].key()));
            } else {
                keys.extend((0..flat.len()).map(|k| {
                    window
                        .source(&index, k, &strides)
                        .map_or(cval, |s| input[s].key())
                }));
            }
            let (_, &mut key, _) = keys.select_nth_unstable(rank);
            *out = T::from_key(key);
            next_index(&mut index, shape);
        }
    });
}

/// The multi-index of flat index `flat` in a row-major array of `shape`.
fn unflatten(mut flat: usize, shape: &[usize]) -> Vec<usize> {
    let mut index = vec![0; shape.len()];
    for a in (0..shape.len()).rev() {
        index[a] = flat % shape[a];
        flat /= shape[a];
    }
    index
}

fn flat_index(index: &[usize], strides: &[i64]) -> i64 {
    index.iter().zip(strides).map(|(&i, &s)| i as i64 * s).sum()
}
