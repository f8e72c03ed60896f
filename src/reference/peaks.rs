//! The best peaks of a row by their definition ([`crate::params::peaks`]),
//! one at a time: each round scans the whole row for the best peak that is
//! not yet taken and lies far enough from every peak taken.
use crate::params::peaks::{is_peak, score, Better, Peak, PeakOptions};

/// At most `opts.k` peaks of `values` (trial frequencies `axis`), best first.
pub fn best_peaks(values: &[f64], axis: &[f64], opts: &PeakOptions, better: Better) -> Vec<Peak> {
    let mut taken: Vec<Peak> = Vec::new();
    while taken.len() < opts.k {
        let admissible = |i: usize| {
            is_peak(values, i, better)
                && taken
                    .iter()
                    .all(|p| p.index != i && (axis[i] - axis[p.index]).abs() >= opts.separation)
        };
        let mut best: Option<usize> = None;
        for i in (0..values.len()).filter(|&i| admissible(i)) {
            // A strict comparison keeps the first of equal scores.
            if best.map_or(true, |b| {
                score(values[i], better) > score(values[b], better)
            }) {
                best = Some(i);
            }
        }
        match best {
            Some(index) => taken.push(Peak {
                index,
                value: values[index],
            }),
            None => break,
        }
    }
    taken
}
