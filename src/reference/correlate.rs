//! Separable 1-D correlations as SciPy defines them, in plain loops: each
//! pass, point by point, sums `w[j] x[i + first + j]` over the taps in index
//! order in f64 (the input extended by the boundary mode), rounded once to
//! `T`; the next pass reads that rounded array, as SciPy's Gaussian filter
//! reads each pass's output.
use crate::float::Float;
use crate::params::correlate::{Lines, Pass};
use crate::params::stencil::extend;

/// The passes over an array of `shape` (validated), in order; no pass: a copy.
pub fn correlate_passes<T: Float>(input: &[T], shape: &[usize], passes: &[Pass]) -> Vec<T> {
    let mut current = input.to_vec();
    for pass in passes {
        let lines = Lines::along(shape, pass.axis).expect("a validated shape");
        let mut next = vec![T::default(); current.len()];
        let (n, first) = (lines.len as i64, pass.first());
        for o in 0..lines.outer {
            for c in 0..lines.inner {
                let at = |i: i64| current[(o * lines.len + i as usize) * lines.inner + c].to_f64();
                for i in 0..n {
                    let sum = pass.weights.iter().enumerate().fold(0.0, |s, (j, &w)| {
                        let x = extend(i + first + j as i64, n, pass.mode).map_or(pass.cval, at);
                        s + w * x
                    });
                    next[(o * lines.len + i as usize) * lines.inner + c] = T::from_f64(sum);
                }
            }
        }
        current = next;
    }
    current
}
