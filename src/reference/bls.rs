//! Box Least Squares by its definition ([`crate::params::bls`]), in plain
//! f64 as astropy computes it: values centred on their median, and at each
//! period, each duration and each start bin, the sums of the samples whose
//! placements fall in the box, taken directly (no histogram, no prefix sums,
//! no fixed point), in the order the search visits the boxes.
use crate::params::bls::{result_fields, BestBox, BlsGrid, BlsObjective, BoxFit, BLS_FIELDS};

/// The result fields ([`BLS_FIELDS`] order) at each period.
pub fn bls(
    t: &[f64],
    y: &[f64],
    dy: Option<&[f64]>,
    periods: &[f64],
    grid: &BlsGrid,
    objective: BlsObjective,
) -> Vec<[f64; BLS_FIELDS]> {
    let t_ref = t.iter().copied().fold(f64::INFINITY, f64::min);
    let mut sorted = y.to_vec();
    sorted.sort_by(f64::total_cmp);
    let n = sorted.len();
    let median = 0.5 * (sorted[(n - 1) / 2] + sorted[n / 2]);
    let w: Vec<f64> = (0..n)
        .map(|i| dy.map_or(1.0, |dy| 1.0 / (dy[i] * dy[i])))
        .collect();
    let wy: Vec<f64> = (0..n).map(|i| w[i] * (y[i] - median)).collect();
    let (w_all, wy_all): (f64, f64) = (w.iter().sum(), wy.iter().sum());
    periods
        .iter()
        .map(|&period| {
            let bins = grid.bins(period);
            let placed: Vec<(usize, i64)> = (0..n)
                .flat_map(|i| {
                    let b = grid.phase_bin(t[i] - t_ref, period);
                    grid.placements(b, bins)
                        .into_iter()
                        .flatten()
                        .map(move |p| (i, p))
                })
                .collect();
            let mut best: Option<BestBox> = None;
            for (k, &d) in grid.duration_bins.iter().enumerate() {
                for start in 0..=bins - d {
                    let (mut wy_in, mut w_in) = (0.0, 0.0);
                    for &(i, p) in &placed {
                        if p > start && p <= start + d {
                            wy_in += wy[i];
                            w_in += w[i];
                        }
                    }
                    let (wy_out, w_out) = (wy_all - wy_in, w_all - w_in);
                    let Some(value) = BoxFit::objective(wy_in, w_in, wy_out, w_out, objective)
                    else {
                        continue;
                    };
                    if best.map_or(true, |b| value > b.objective) {
                        best = Some(BestBox {
                            objective: value,
                            duration: k,
                            start,
                            wy_in,
                            w_in,
                            wy_out,
                            w_out,
                        });
                    }
                }
            }
            result_fields(best.as_ref(), t_ref, grid, period, objective)
        })
        .collect()
}
