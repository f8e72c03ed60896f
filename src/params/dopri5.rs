//! The Dormand-Prince 5(4) pair (Dormand and Prince 1980) as SciPy's RK45
//! tabulates it: stages, the fifth-order weights, the error weights
//! (fifth minus fourth order, the seventh stage being f at the new state),
//! and the coefficients of the fourth-order dense output. The reference and
//! the CPU backend read them here; csrc/lorenz63.cu holds the same numbers
//! as compile-time constants (the tests compare the three).

/// Stage times c2..c6 (c1 = 0; the seventh stage is at t + h).
pub const C: [f64; 6] = [0.0, 1.0 / 5.0, 3.0 / 10.0, 4.0 / 5.0, 8.0 / 9.0, 1.0];

/// `A[s][j]`: stage s's input is `y + h sum_j A[s][j] k_j` (j < s).
pub const A: [[f64; 5]; 6] = [
    [0.0, 0.0, 0.0, 0.0, 0.0],
    [1.0 / 5.0, 0.0, 0.0, 0.0, 0.0],
    [3.0 / 40.0, 9.0 / 40.0, 0.0, 0.0, 0.0],
    [44.0 / 45.0, -56.0 / 15.0, 32.0 / 9.0, 0.0, 0.0],
    [
        19372.0 / 6561.0,
        -25360.0 / 2187.0,
        64448.0 / 6561.0,
        -212.0 / 729.0,
        0.0,
    ],
    [
        9017.0 / 3168.0,
        -355.0 / 33.0,
        46732.0 / 5247.0,
        49.0 / 176.0,
        -5103.0 / 18656.0,
    ],
];

/// The fifth-order weights of k1..k6: `y_new = y + h sum_j B[j] k_j`.
pub const B: [f64; 6] = [
    35.0 / 384.0,
    0.0,
    500.0 / 1113.0,
    125.0 / 192.0,
    -2187.0 / 6784.0,
    11.0 / 84.0,
];

/// The error estimate's weights of k1..k7: `err = h sum_j E[j] k_j`.
pub const E: [f64; 7] = [
    -71.0 / 57600.0,
    0.0,
    71.0 / 16695.0,
    -71.0 / 1920.0,
    17253.0 / 339200.0,
    -22.0 / 525.0,
    1.0 / 40.0,
];

/// Dense output: `y(t + x h) = y + h sum_j k_j sum_i P[j][i] x^(i+1)`.
pub const P: [[f64; 4]; 7] = [
    [
        1.0,
        -8048581381.0 / 2820520608.0,
        8663915743.0 / 2820520608.0,
        -12715105075.0 / 11282082432.0,
    ],
    [0.0, 0.0, 0.0, 0.0],
    [
        0.0,
        131558114200.0 / 32700410799.0,
        -68118460800.0 / 10900136933.0,
        87487479700.0 / 32700410799.0,
    ],
    [
        0.0,
        -1754552775.0 / 470086768.0,
        14199869525.0 / 1410260304.0,
        -10690763975.0 / 1880347072.0,
    ],
    [
        0.0,
        127303824393.0 / 49829197408.0,
        -318862633887.0 / 49829197408.0,
        701980252875.0 / 199316789632.0,
    ],
    [
        0.0,
        -282668133.0 / 205662961.0,
        2019193451.0 / 616988883.0,
        -1453857185.0 / 822651844.0,
    ],
    [
        0.0,
        40617522.0 / 29380423.0,
        -110615467.0 / 29380423.0,
        69997945.0 / 29380423.0,
    ],
];

/// The step controller's constants (SciPy's): the safety factor, the
/// smallest and largest factor of one step's change, the error exponent
/// -1/(4 + 1).
pub const SAFETY: f64 = 0.9;
pub const MIN_FACTOR: f64 = 0.2;
pub const MAX_FACTOR: f64 = 10.0;
pub const ERROR_EXPONENT: f64 = -0.2;

#[cfg(test)]
mod tests {
    use super::*;

    /// Order conditions: the rows of A sum to C, B and the dense output at
    /// x = 1 are consistent (weights sum to 1), E's weights sum to 0.
    #[test]
    fn tableau_is_consistent() {
        for (row, c) in A.iter().zip(C) {
            assert!((row.iter().sum::<f64>() - c).abs() < 1e-14);
        }
        assert!((B.iter().sum::<f64>() - 1.0).abs() < 1e-14);
        assert!(E.iter().sum::<f64>().abs() < 1e-14);
        // Third-order condition sum b_j c_j^2 = 1/3.
        let b_c2: f64 = B.iter().zip(C).map(|(b, c)| b * c * c).sum();
        assert!((b_c2 - 1.0 / 3.0).abs() < 1e-14);
        // At x = 1 the dense output is the step's fifth-order result.
        for (j, row) in P.iter().enumerate() {
            let at_one: f64 = row.iter().sum();
            let b = if j < 6 { B[j] } else { 0.0 };
            assert!((at_one - b).abs() < 1e-12, "row {j}: {at_one} vs {b}");
        }
    }
}
