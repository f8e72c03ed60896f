//! sin and cos of a lane array of f64: Cody-Waite reduction by pi/2 and the
//! fdlibm kernels, written elementwise on fixed-width arrays so the compiler
//! vectorises them in the caller's (multiversioned) target. std's `sin_cos`
//! is a scalar libm call per value, which would cost more than everything
//! else the arbitrary-frequency periodogram does per (sample, frequency) pair.
//!
//! Accuracy: within ~1 ulp of the correctly rounded result for |x| < 2^50
//! (tested against std to |x| ~ 1e13); past 2^51 the quadrant trick fails
//! and the result is meaningless (no periodogram phase gets there: the
//! rounding of the phase itself, eps |x|, would exceed a radian). It never
//! panics.

/// Lanes per array: one AVX-512 register of f64 (two AVX2 ones).
pub(crate) const LANES: usize = 8;
pub(crate) type Lanes = [f64; LANES];

const FRAC_2_PI: f64 = std::f64::consts::FRAC_2_PI;
// pi/2 = P1 + P2 + P3 (each the double nearest the remainder). With FMA,
// x - n P1 is exact (x and n P1 are multiples of ulp(P1) = 2^-52 and the
// difference is below 1), and n P2, n P3 carry P1's remainder to ~2^-105 n.
const P1: f64 = std::f64::consts::FRAC_PI_2;
const P2: f64 = 6.123233995736766e-17;
const P3: f64 = -1.4973849048591698e-33;
// Adding 1.5 * 2^52 rounds to an integer (ties to even) and leaves it in the
// low mantissa bits: the quadrant without a float-to-int conversion.
const ROUNDER: f64 = 6755399441055744.0;

// fdlibm __kernel_sin / __kernel_cos minimax coefficients on [-pi/4, pi/4].
const S1: f64 = -1.666_666_666_666_663_2e-1;
const S2: f64 = 8.333_333_333_322_49e-3;
const S3: f64 = -1.984_126_982_985_795e-4;
const S4: f64 = 2.755_731_370_707_006_8e-6;
const S5: f64 = -2.505_076_025_340_686_3e-8;
const S6: f64 = 1.589_690_995_211_55e-10;
const C1: f64 = 4.166_666_666_666_66e-2;
const C2: f64 = -1.388_888_888_887_411e-3;
const C3: f64 = 2.480_158_728_947_673e-5;
const C4: f64 = -2.755_731_435_139_066_3e-7;
const C5: f64 = 2.087_572_321_298_175e-9;
const C6: f64 = -1.135_964_755_778_819_5e-11;

/// `a * b + c`, fused: one rounding, and one instruction on the FMA targets
/// the callers are compiled for (a libm call on the plain x86-64 fallback:
/// slow there, never wrong).
#[inline(always)]
pub(crate) fn fma(a: f64, b: f64, c: f64) -> f64 {
    a.mul_add(b, c)
}

/// (sin x, cos x) of one value: the lane body.
#[inline(always)]
pub(crate) fn sincos1(x: f64) -> (f64, f64) {
    let shifted = fma(x, FRAC_2_PI, ROUNDER);
    let q = shifted.to_bits();
    let n = shifted - ROUNDER;
    let r = fma(-n, P1, x);
    let r = fma(-n, P2, r);
    let r = fma(-n, P3, r);
    let z = r * r;
    let ps = fma(z, fma(z, fma(z, fma(z, fma(z, S6, S5), S4), S3), S2), S1);
    let sin_r = fma(r * z, ps, r);
    let pc = z * fma(z, fma(z, fma(z, fma(z, fma(z, C6, C5), C4), C3), C2), C1);
    // fdlibm's compensated 1 - z/2 + z^2 P(z): w carries the leading bits,
    // the parenthesis the rounding of w.
    let hz = 0.5 * z;
    let w = 1.0 - hz;
    let cos_r = w + (((1.0 - w) - hz) + z * pc);
    // Quadrant q: (sin, cos) = (s, c), (c, -s), (-s, -c), (-c, s).
    let swap = q & 1 != 0;
    let (s, c) = if swap { (cos_r, sin_r) } else { (sin_r, cos_r) };
    let sin_sign = (q & 2) << 62;
    let cos_sign = (q.wrapping_add(1) & 2) << 62;
    (
        f64::from_bits(s.to_bits() ^ sin_sign),
        f64::from_bits(c.to_bits() ^ cos_sign),
    )
}

/// (sin x, cos x) of every lane.
#[inline(always)]
pub(crate) fn sincos(x: &Lanes) -> (Lanes, Lanes) {
    let mut s = [0.0; LANES];
    let mut c = [0.0; LANES];
    for j in 0..LANES {
        (s[j], c[j]) = sincos1(x[j]);
    }
    (s, c)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Error in units of the last place of the true value, floored at the
    /// ulp of 1e-300-ish tiny results by measuring against max(|v|, 2^-60)
    /// near zeros (there the absolute error of the reduced argument counts).
    fn ulps(got: f64, want: f64) -> f64 {
        let scale = want.abs().max(f64::EPSILON * 2f64.powi(-8));
        (got - want).abs() / (scale * f64::EPSILON)
    }

    #[macro_rules_attribute::apply(simd_targets!)]
    fn sincos_all(x: &[f64], s: &mut [f64], c: &mut [f64]) {
        for ((x, s), c) in x
            .chunks_exact(LANES)
            .zip(s.chunks_exact_mut(LANES))
            .zip(c.chunks_exact_mut(LANES))
        {
            let x: &Lanes = x.try_into().unwrap_or(&[0.0; LANES]);
            let (sv, cv) = sincos(x);
            s.copy_from_slice(&sv);
            c.copy_from_slice(&cv);
        }
    }

    #[test]
    fn matches_std_over_a_wide_range() {
        // Deterministic spread over magnitudes 1e-8 .. 1e13, both signs,
        // plus multiples of pi/2 and their neighbours (the hard reductions).
        let mut xs = Vec::new();
        let mut state = 0x9e3779b97f4a7c15u64;
        for _ in 0..200_000 {
            state = state
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            let u = (state >> 11) as f64 / (1u64 << 53) as f64;
            let mag = 10f64.powf(-8.0 + 21.0 * u);
            xs.push(if state & 1 == 0 { mag } else { -mag });
        }
        for k in 0..2000i64 {
            let base = k as f64 * std::f64::consts::FRAC_PI_2 * 517.0;
            xs.extend([base, base.next_up(), base.next_down()]);
        }
        xs.extend([0.0, -0.0, 1e6, -1e6, 6e4 * 12.3]);
        while xs.len() % LANES != 0 {
            xs.push(1.0);
        }
        let (mut s, mut c) = (vec![f64::NAN; xs.len()], vec![f64::NAN; xs.len()]);
        sincos_all(&xs, &mut s, &mut c);
        let (mut worst_s, mut worst_c) = (0.0f64, 0.0f64);
        for (i, &x) in xs.iter().enumerate() {
            let (ws, wc) = x.sin_cos();
            worst_s = worst_s.max(ulps(s[i], ws));
            worst_c = worst_c.max(ulps(c[i], wc));
        }
        // ~1 ulp from the kernels plus up to 1 from std's own rounding.
        assert!(worst_s <= 2.0 && worst_c <= 2.0, "{worst_s} {worst_c}");
    }
}
