//! The rank filters' oracle: every output's window gathered and sorted.
use crate::params::rank::{next_index, RankFilterOptions, RankValue, Window};

/// `opts` (checked) over the row-major array of `shape`.
pub fn rank_filter<T: RankValue>(input: &[T], shape: &[usize], opts: &RankFilterOptions) -> Vec<T> {
    let rank = opts.check(shape).expect("checked options");
    let window = Window::new(shape, opts);
    let strides = window.strides();
    // Read in the constant mode only (where it must fit `T`).
    let cval = T::from_cval(opts.cval).map_or(0, RankValue::key);
    let mut index = vec![0usize; shape.len()];
    let mut keys = Vec::with_capacity(window.taps.len());
    let mut out = Vec::with_capacity(input.len());
    for _ in 0..input.len() {
        keys.clear();
        keys.extend((0..window.taps.len()).map(|k| {
            window
                .source(&index, k, &strides)
                .map_or(cval, |at| input[at].key())
        }));
        keys.sort_unstable();
        out.push(T::from_key(keys[rank]));
        next_index(&mut index, shape);
    }
    out
}
