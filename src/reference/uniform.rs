//! The N-D box filter's oracle: each pass sums every output's window point
//! by point through the boundary mode.
use crate::params::correlate::Lines;
use crate::params::stencil::extend;
use crate::params::uniform::{BoxPass, BoxValue, WindowSum};

/// The passes (checked) over the row-major array of `shape`.
pub fn uniform_filter_nd<T: BoxValue>(
    input: &[T],
    shape: &[usize],
    passes: &[BoxPass<T>],
) -> Vec<T> {
    let mut data = input.to_vec();
    for pass in passes {
        let Lines {
            outer,
            len: n,
            inner,
        } = Lines::along(shape, pass.axis).expect("a checked shape");
        let mut out = vec![T::default(); data.len()];
        for o in 0..outer {
            for i in 0..n {
                for c in 0..inner {
                    let mut sum = T::Sum::default();
                    for j in 0..pass.size as i64 {
                        let at = extend(i as i64 + pass.first + j, n as i64, pass.mode);
                        sum.add(at.map_or(pass.cval, |at| data[(o * n + at as usize) * inner + c]));
                    }
                    out[(o * n + i) * inner + c] = sum.mean(pass.size);
                }
            }
        }
        data = out;
    }
    data
}
