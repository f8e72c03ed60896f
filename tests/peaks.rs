//! The best peaks of a row ([`kernpack::params::peaks`]): the backends'
//! selection (the peaks ranked, then taken in turn) against the reference
//! (one round per peak, each scanning the whole row). Rows are drawn from a
//! few small integers, NaN and infinities so that plateaus, ties and empty
//! rows are common; both agree exactly (indices and values).
mod common;

use common::{proptest_cases, Rng};
use kernpack::params::peaks::{select_peaks, Better, PeakOptions, MAX_PEAKS};
use kernpack::reference::peaks::best_peaks;
use proptest::prelude::*;

fn row(rng: &mut Rng) -> (Vec<f64>, Vec<f64>) {
    let n = (rng.next() * 60.0) as usize;
    let pick = |rng: &mut Rng| {
        let u = rng.next();
        if u < 0.1 {
            f64::NAN
        } else if u < 0.13 {
            f64::INFINITY
        } else if u < 0.16 {
            f64::NEG_INFINITY
        } else {
            (rng.next() * 6.0).floor() - 2.0
        }
    };
    let values = (0..n).map(|_| pick(rng)).collect();
    // Sorted trial frequencies most of the time, a shuffled array now and then.
    let mut axis: Vec<f64> = (0..n).map(|k| 0.1 + 0.05 * k as f64).collect();
    if rng.next() < 0.3 {
        axis = (0..n).map(|_| rng.range(0.0, 3.0)).collect();
    }
    (values, axis)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(proptest_cases(2000)))]

    #[test]
    fn selection_matches_the_reference(seed in any::<u64>()) {
        let mut rng = Rng(seed);
        let (values, axis) = row(&mut rng);
        let opts = PeakOptions {
            k: 1 + (rng.next() * 12.0) as usize,
            separation: if rng.next() < 0.3 { 0.0 } else { rng.range(0.0, 0.6) },
        };
        for better in [Better::Higher, Better::Lower] {
            let got = select_peaks(&values, &axis, &opts, better);
            let want = best_peaks(&values, &axis, &opts, better);
            let bits = |p: &[kernpack::params::peaks::Peak]| -> Vec<(usize, u64)> {
                p.iter().map(|p| (p.index, p.value.to_bits())).collect()
            };
            prop_assert_eq!(bits(&got), bits(&want), "{:?} {:?} {:?}", values, opts, better);
        }
    }
}

/// Many peaks and a separation that rejects most of the best: the selection
/// ranks more of them than its first guess, and still equals the reference.
#[test]
fn rejections_past_the_first_ranking() {
    let mut rng = Rng(0x9ea6);
    let n = 5_000;
    let values: Vec<f64> = (0..n).map(|_| rng.next()).collect();
    let axis: Vec<f64> = (0..n).map(|k| k as f64 * 1e-3).collect();
    for (k, separation) in [(MAX_PEAKS, 0.05), (40, 1.5), (3, 0.0), (7, 19.0)] {
        let opts = PeakOptions { k, separation };
        for better in [Better::Higher, Better::Lower] {
            let got = select_peaks(&values, &axis, &opts, better);
            assert_eq!(got, best_peaks(&values, &axis, &opts, better), "{opts:?}");
            let apart = |a: usize, b: usize| (axis[a] - axis[b]).abs() >= separation;
            for (i, p) in got.iter().enumerate() {
                assert!(got[..i].iter().all(|q| apart(p.index, q.index)));
            }
        }
    }
}
