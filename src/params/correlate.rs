//! 1-D correlations along one axis of an N-D array and the Gaussian filters
//! made of them: plain data shared by the API, the backends and the
//! reference (validation is the API's, in crate::api::correlate).
//!
//! Semantics are `scipy.ndimage.correlate1d`, `gaussian_filter1d` and
//! `gaussian_filter`: along an axis of `n` points, with `w` of `L` weights and
//! origin `o`, output `i` is `sum_j w[j] in[i + j - (L / 2 + o)]`, the input
//! extended past its ends by the boundary mode; a Gaussian filter is one such
//! pass per axis, each reading the previous pass's output (stored in the
//! output's element type, as SciPy does).
use crate::error::{Error, Result};

pub use super::stencil::BoundaryMode;

/// Most weights of one pass (2^20: a Gaussian of radius 524,287). A bound on
/// the host memory a hostile radius can ask for; the GPU takes any count up
/// to it, in launches of 256 taps.
pub const MAX_TAPS: usize = 1 << 20;

/// An N-D row-major array seen along one axis: `outer` lines (the axes
/// before it) of `len` points (the axis) `inner` values apart (the axes
/// after it). The array holds `outer * len * inner` values.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Lines {
    pub outer: usize,
    pub len: usize,
    pub inner: usize,
}

impl Lines {
    /// The array of `shape` along `axis`; errors for an axis past the shape
    /// or a shape whose size overflows.
    pub fn along(shape: &[usize], axis: usize) -> Result<Self> {
        let size = |dims: &[usize]| {
            crate::params::array_size(dims)
                .ok_or_else(|| Error::invalid(format!("an array of shape {shape:?} is too large")))
        };
        let Some(&len) = shape.get(axis) else {
            return Err(Error::invalid(format!(
                "axis {axis} is out of range for an array of {} dimensions",
                shape.len()
            )));
        };
        size(shape)?;
        Ok(Lines {
            outer: size(&shape[..axis])?,
            len,
            inner: size(&shape[axis + 1..])?,
        })
    }

    /// Values of the array.
    pub fn size(&self) -> usize {
        self.outer * self.len * self.inner
    }
}

/// One correlation along one axis: SciPy's `correlate1d(weights, axis,
/// mode, cval, origin)`.
#[derive(Debug, Clone, PartialEq)]
pub struct Pass {
    pub axis: usize,
    /// At least one, at most [`MAX_TAPS`], finite.
    pub weights: Vec<f64>,
    /// SciPy's origin: `-(L / 2) ..= (L - 1) / 2`.
    pub origin: i64,
    /// Any mode but [`BoundaryMode::Interior`].
    pub mode: BoundaryMode,
    /// The value outside the array in [`BoundaryMode::Constant`].
    pub cval: f64,
}

impl Pass {
    /// The input index of tap 0 relative to the output's: `-(L / 2 + o)`.
    pub fn first(&self) -> i64 {
        -((self.weights.len() / 2) as i64 + self.origin)
    }
}

/// Options of a Gaussian filter along one axis, as SciPy's
/// `gaussian_filter1d(sigma, order=0, mode='reflect', cval=0.0,
/// truncate=4.0, radius=None)`. Default: sigma 1.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct GaussianOptions {
    /// Standard deviation in points: finite and positive.
    pub sigma: f64,
    /// 0 smooths; k > 0 correlates with the k-th derivative of the Gaussian
    /// (at most [`MAX_GAUSSIAN_ORDER`]).
    pub order: u32,
    /// The radius is `truncate * sigma + 0.5` rounded down, unless `radius`
    /// is given.
    pub truncate: f64,
    pub radius: Option<usize>,
    pub mode: BoundaryMode,
    pub cval: f64,
}

impl Default for GaussianOptions {
    fn default() -> Self {
        GaussianOptions {
            sigma: 1.0,
            order: 0,
            truncate: 4.0,
            radius: None,
            mode: BoundaryMode::Reflect,
            cval: 0.0,
        }
    }
}

/// Highest derivative order of a Gaussian filter.
pub const MAX_GAUSSIAN_ORDER: u32 = 10;

impl GaussianOptions {
    /// The kernel's radius (SciPy's `int(truncate * sigma + 0.5)` or the
    /// radius given), checked: sigma finite and positive, the order at most
    /// [`MAX_GAUSSIAN_ORDER`], at most [`MAX_TAPS`] weights.
    pub fn radius(&self) -> Result<usize> {
        let GaussianOptions {
            sigma,
            order,
            truncate,
            ..
        } = *self;
        if !(sigma.is_finite() && sigma > 0.0) {
            return Err(Error::invalid(format!(
                "Gaussian sigma {sigma} is not a finite positive number"
            )));
        }
        if order > MAX_GAUSSIAN_ORDER {
            return Err(Error::invalid(format!(
                "Gaussian derivative order {order} is above {MAX_GAUSSIAN_ORDER}"
            )));
        }
        let radius = match self.radius {
            Some(r) => r as f64,
            None if truncate.is_finite() => (truncate * sigma + 0.5).floor(),
            None => {
                return Err(Error::invalid(format!(
                    "Gaussian truncate {truncate} is not finite"
                )))
            }
        };
        if !(0.0..=((MAX_TAPS - 1) / 2) as f64).contains(&radius) {
            return Err(Error::invalid(format!(
                "Gaussian radius {radius} (sigma {sigma}, truncate {truncate}) is not from 0 to {}",
                (MAX_TAPS - 1) / 2
            )));
        }
        Ok(radius as usize)
    }

    /// The pass along `axis`: the correlation weights (the Gaussian kernel
    /// reversed, as SciPy correlates with it), origin 0.
    pub fn pass(&self, axis: usize) -> Result<Pass> {
        let radius = self.radius()?;
        let mut weights = gaussian_kernel(self.sigma, self.order, radius);
        weights.reverse();
        Ok(Pass {
            axis,
            weights,
            origin: 0,
            mode: self.mode,
            cval: self.cval,
        })
    }
}

/// The Gaussian kernel of `sigma` (positive) at points `-radius ..= radius`,
/// normalised to sum 1, times the polynomial of its `order`-th derivative:
/// `q(x) phi(x)` with `q_0 = 1` and `q_{k+1} = q_k' - x q_k / sigma^2`
/// (SciPy's `_gaussian_kernel1d`, the same roundings up to summation order).
pub fn gaussian_kernel(sigma: f64, order: u32, radius: usize) -> Vec<f64> {
    let sigma2 = sigma * sigma;
    let r = radius as i64;
    let phi: Vec<f64> = (-r..=r)
        .map(|x| (-0.5 / sigma2 * (x * x) as f64).exp())
        .collect();
    let total: f64 = phi.iter().sum();
    // q as coefficients of 1, x, x^2, ...: q' shifts down times the power,
    // -x q / sigma^2 shifts up.
    let mut q = vec![0.0; order as usize + 1];
    q[0] = 1.0;
    for _ in 0..order {
        let mut next = vec![0.0; q.len()];
        for (k, &c) in q.iter().enumerate() {
            if k > 0 {
                next[k - 1] += k as f64 * c;
            }
            if k + 1 < q.len() {
                next[k + 1] -= c / sigma2;
            }
        }
        q = next;
    }
    (-r..=r)
        .zip(&phi)
        .map(|(x, &p)| {
            let x = x as f64;
            let poly = q.iter().rev().fold(0.0, |acc, &c| acc * x + c);
            poly * (p / total)
        })
        .collect()
}

/// A Gaussian filter over several axes, as SciPy's `gaussian_filter(sigma,
/// order, mode, cval, truncate, radius, axes)`: one [`GaussianOptions`] per
/// filtered axis, in order. SciPy skips axes whose sigma is at most 1e-15;
/// [`GaussianFilterOptions::passes`] does too.
#[derive(Debug, Clone, PartialEq)]
pub struct GaussianFilterOptions {
    pub axes: Vec<(usize, GaussianOptions)>,
}

impl GaussianFilterOptions {
    /// Every axis of an `ndim`-dimensional array with the same options.
    pub fn isotropic(ndim: usize, opts: GaussianOptions) -> Self {
        GaussianFilterOptions {
            axes: (0..ndim).map(|axis| (axis, opts)).collect(),
        }
    }

    /// The passes, skipping axes whose sigma is at most 1e-15 (SciPy's rule;
    /// none left: the filter copies its input).
    pub fn passes(&self) -> Result<Vec<Pass>> {
        self.axes
            .iter()
            .filter(|(_, o)| o.sigma > 1e-15 || o.sigma.is_nan())
            .map(|&(axis, o)| o.pass(axis))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Order 0 sums to 1; order 1 is odd and order 2 even (every sigma),
    /// with the moments of the derivatives of a Gaussian (variance sigma^2,
    /// sum x w = -1 for order 1 on the unreversed kernel, sum x^2 w / 2 = 1
    /// for order 2) when the radius covers the tails and sigma is large
    /// enough for the kernel sampled at integers to have the continuous
    /// moments: they differ by about exp(-2 pi^2 sigma^2) (Poisson
    /// summation), 2e-3 at sigma 0.7 (so only the symmetries are checked
    /// there), below 1e-18 from sigma 1.5.
    #[test]
    fn gaussian_kernels_have_the_derivative_moments() {
        for sigma in [0.7, 1.5, 3.0, 5.0] {
            let r = (8.0 * sigma) as usize + 2;
            let moment = |w: &[f64], p: i32| -> f64 {
                w.iter()
                    .enumerate()
                    .map(|(i, &v)| (i as f64 - r as f64).powi(p) * v)
                    .sum()
            };
            let (k0, k1, k2) = (
                gaussian_kernel(sigma, 0, r),
                gaussian_kernel(sigma, 1, r),
                gaussian_kernel(sigma, 2, r),
            );
            assert!((moment(&k0, 0) - 1.0).abs() < 1e-14);
            assert!(moment(&k1, 0).abs() < 1e-14);
            if sigma >= 1.5 {
                let (var, m1, m2) = (moment(&k0, 2), moment(&k1, 1), moment(&k2, 2) / 2.0);
                assert!((var - sigma * sigma).abs() < 1e-12 * sigma * sigma, "{var}");
                assert!((m1 + 1.0).abs() < 1e-12, "{m1}");
                assert!((m2 - 1.0).abs() < 1e-12, "{m2}");
            }
            for i in 0..=2 * r {
                assert_eq!(k1[i], -k1[2 * r - i]);
                assert_eq!(k2[i], k2[2 * r - i]);
            }
        }
    }

    #[test]
    fn radius_follows_truncate_and_refuses_bad_sigma() {
        let o = GaussianOptions {
            sigma: 2.0,
            ..Default::default()
        };
        assert_eq!(o.radius().unwrap(), 8);
        let o = GaussianOptions { truncate: 1.2, ..o };
        assert_eq!(o.radius().unwrap(), 2);
        let o = GaussianOptions {
            radius: Some(5),
            ..o
        };
        assert_eq!(o.radius().unwrap(), 5);
        for sigma in [0.0, -1.0, f64::NAN, f64::INFINITY] {
            let o = GaussianOptions {
                sigma,
                ..Default::default()
            };
            assert!(o.radius().is_err(), "sigma {sigma}");
        }
        let huge = GaussianOptions {
            sigma: 1e300,
            ..Default::default()
        };
        assert!(huge.radius().is_err());
    }

    #[test]
    fn lines_along_each_axis() {
        let shape = [2, 3, 5];
        assert_eq!(
            Lines::along(&shape, 0).unwrap(),
            Lines {
                outer: 1,
                len: 2,
                inner: 15
            }
        );
        assert_eq!(
            Lines::along(&shape, 2).unwrap(),
            Lines {
                outer: 6,
                len: 5,
                inner: 1
            }
        );
        assert!(Lines::along(&shape, 3).is_err());
        assert!(Lines::along(&[usize::MAX, 2], 0).is_err());
    }
}
