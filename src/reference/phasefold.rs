//! PDM and conditional entropy by their definitions
//! ([`crate::params::phasefold`]), in plain f64: at each frequency the
//! samples are binned, each bin's weighted mean (PDM) or each cell's count
//! (CE) is taken directly, and the statistic is summed term by term (PDM:
//! the squared residuals about each bin's mean, two passes; CE: `p ln(p_phase
//! / p)` per cell).
use crate::params::phasefold::{phase_bin, CeOptions, PdmOptions};

/// PDM's theta at each frequency.
pub fn pdm(t: &[f64], y: &[f64], dy: Option<&[f64]>, freqs: &[f64], opts: &PdmOptions) -> Vec<f64> {
    let n = t.len();
    let t_min = t.iter().copied().fold(f64::INFINITY, f64::min);
    let w: Vec<f64> = (0..n)
        .map(|i| dy.map_or(1.0, |dy| 1.0 / (dy[i] * dy[i])))
        .collect();
    let w_all: f64 = w.iter().sum();
    let mean = (0..n).map(|i| w[i] * y[i]).sum::<f64>() / w_all;
    let total: f64 = (0..n).map(|i| w[i] * (y[i] - mean).powi(2)).sum();
    freqs
        .iter()
        .map(|&f| {
            let bin: Vec<usize> = t
                .iter()
                .map(|&ti| phase_bin(ti - t_min, f, opts.bins))
                .collect();
            let (mut sw, mut swy) = (vec![0.0; opts.bins], vec![0.0; opts.bins]);
            for i in 0..n {
                sw[bin[i]] += w[i];
                swy[bin[i]] += w[i] * y[i];
            }
            let within: f64 = (0..n)
                .map(|i| w[i] * (y[i] - swy[bin[i]] / sw[bin[i]]).powi(2))
                .sum();
            if y.iter().all(|&v| v == y[0]) {
                f64::NAN
            } else {
                within / total
            }
        })
        .collect()
}

/// Conditional entropy at each frequency (`dy` is not used).
pub fn conditional_entropy(t: &[f64], y: &[f64], freqs: &[f64], opts: &CeOptions) -> Vec<f64> {
    let t_min = t.iter().copied().fold(f64::INFINITY, f64::min);
    let lo = y.iter().copied().fold(f64::INFINITY, f64::min);
    let hi = y.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    if hi == lo {
        return vec![f64::NAN; freqs.len()];
    }
    let (np, nm) = (opts.phase_bins, opts.mag_bins);
    let mag: Vec<usize> = y
        .iter()
        .map(|&v| (((v - lo) / (hi - lo) * nm as f64) as usize).min(nm - 1))
        .collect();
    freqs
        .iter()
        .map(|&f| {
            let mut counts = vec![vec![0.0f64; nm]; np];
            for (i, &ti) in t.iter().enumerate() {
                let b = phase_bin(ti - t_min, f, np);
                for q in 0..=opts.phase_overlap {
                    let p = (b + np - q) % np;
                    let cells = mag[i].saturating_sub(opts.mag_overlap)..=mag[i];
                    for count in &mut counts[p][cells] {
                        *count += 1.0;
                    }
                }
            }
            let total: f64 = counts.iter().flatten().sum();
            let mut h = 0.0;
            for row in &counts {
                let p_phase = row.iter().sum::<f64>() / total;
                for &c in row {
                    if c > 0.0 {
                        let p = c / total;
                        h += p * (p_phase / p).ln();
                    }
                }
            }
            h
        })
        .collect()
}
