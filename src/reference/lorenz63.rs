//! Lorenz 63 ensembles in f64, classical RK4 exactly as MODELS.md writes it:
//! `k = dt f(z)` per stage, `z += k1/6 + k2/3 + k3/3 + k4/6`.
use crate::float::Float;
use crate::params::lorenz63::{
    AdaptiveControl, AdaptiveStatus, Lorenz63AdaptiveParams, Lorenz63Params,
};
use crate::params::save_at::segments;

/// dz/dt of one member.
pub fn tendency(z: [f64; 3], sigma: f64, rho: f64, beta: f64) -> [f64; 3] {
    let [x, y, zz] = z;
    [sigma * (y - x), x * (rho - zz) - y, x * y - beta * zz]
}

/// One RK4 step of one member.
pub fn rk4_step(z: [f64; 3], sigma: f64, rho: f64, beta: f64, dt: f64) -> [f64; 3] {
    let f = |z: [f64; 3]| tendency(z, sigma, rho, beta).map(|v| dt * v);
    let along = |k: [f64; 3], c: f64| [z[0] + c * k[0], z[1] + c * k[1], z[2] + c * k[2]];
    let k1 = f(z);
    let k2 = f(along(k1, 0.5));
    let k3 = f(along(k2, 0.5));
    let k4 = f(along(k3, 1.0));
    std::array::from_fn(|i| z[i] + (k1[i] / 6.0 + k2[i] / 3.0 + k3[i] / 3.0 + k4[i] / 6.0))
}

/// An ensemble run (inputs valid): the final states (members x 3) and the
/// states at the saved steps (frames x members x 3), in f64.
pub fn lorenz63<T: Float>(
    p: &Lorenz63Params<&[T]>,
    initial: &[T],
    steps: u64,
    save_at: &[u64],
) -> (Vec<f64>, Vec<f64>) {
    let members = initial.len() / 3;
    let mut state: Vec<f64> = initial.iter().map(|v| v.to_f64()).collect();
    let mut saved = vec![0.0; save_at.len() * state.len()];
    for segment in segments(save_at, steps) {
        for m in 0..members {
            let (sigma, rho, beta) = (p.sigma.at(m), p.rho.at(m), p.beta.at(m));
            let mut z = [state[3 * m], state[3 * m + 1], state[3 * m + 2]];
            for _ in 0..segment.steps {
                z = rk4_step(z, sigma, rho, beta, p.dt);
            }
            state[3 * m..3 * m + 3].copy_from_slice(&z);
        }
        if let Some(k) = segment.frame {
            saved[k * state.len()..(k + 1) * state.len()].copy_from_slice(&state);
        }
    }
    (state, saved)
}

/// One member's adaptive run (Dormand-Prince 5(4), f64), step for step as
/// SciPy's `RK45` takes it: the states at `save_times` by its dense output
/// (the step's end state where a save time is the step's end), the final
/// state, and the accepted, rejected steps and status.
pub struct AdaptiveMember {
    pub final_state: [f64; 3],
    pub saved: Vec<[f64; 3]>,
    pub accepted: u32,
    pub rejected: u32,
    pub status: AdaptiveStatus,
}

/// RMS norm of three values.
fn rms(v: [f64; 3]) -> f64 {
    ((v[0] * v[0] + v[1] * v[1] + v[2] * v[2]) / 3.0).sqrt()
}

/// SciPy's `select_initial_step` for a fifth-order pair (error order 4).
fn initial_step(
    f: &impl Fn([f64; 3]) -> [f64; 3],
    y0: [f64; 3],
    f0: [f64; 3],
    interval: f64,
    c: &AdaptiveControl,
    rtol: f64,
) -> f64 {
    if interval == 0.0 {
        return 0.0;
    }
    let scale = y0.map(|v| c.atol + v.abs() * rtol);
    let d0 = rms(std::array::from_fn(|i| y0[i] / scale[i]));
    let d1 = rms(std::array::from_fn(|i| f0[i] / scale[i]));
    let h0 = if d0 < 1e-5 || d1 < 1e-5 {
        1e-6
    } else {
        0.01 * d0 / d1
    }
    .min(interval);
    let y1: [f64; 3] = std::array::from_fn(|i| y0[i] + h0 * f0[i]);
    let f1 = f(y1);
    let d2 = rms(std::array::from_fn(|i| (f1[i] - f0[i]) / scale[i])) / h0;
    let h1 = if d1 <= 1e-15 && d2 <= 1e-15 {
        (h0 * 1e-3).max(1e-6)
    } else {
        (0.01 / d1.max(d2)).powf(1.0 / 5.0)
    };
    (100.0 * h0).min(h1).min(interval).min(c.max_step)
}

/// Ten times the spacing of f64 values at t (t >= 0 here or not).
fn min_step(t: f64) -> f64 {
    let next = if t >= 0.0 {
        f64::from_bits(t.to_bits() + 1)
    } else {
        f64::from_bits(t.to_bits() - 1)
    };
    10.0 * (next - t).abs()
}

/// One member from `y0` at `t0` to `t_end` (inputs valid).
#[allow(clippy::too_many_arguments)]
pub fn dopri5_member(
    y0: [f64; 3],
    sigma: f64,
    rho: f64,
    beta: f64,
    t0: f64,
    t_end: f64,
    c: &AdaptiveControl,
    save_times: &[f64],
) -> AdaptiveMember {
    use crate::params::dopri5::{A, B, E, ERROR_EXPONENT, MAX_FACTOR, MIN_FACTOR, P, SAFETY};
    let f = |z: [f64; 3]| tendency(z, sigma, rho, beta);
    let rtol = c.effective_rtol();
    let (mut t, mut y) = (t0, y0);
    let mut fy = f(y);
    let mut h_abs = match c.first_step {
        Some(h) => h,
        None => initial_step(&f, y, fy, t_end - t0, c, rtol),
    };
    let mut out = AdaptiveMember {
        final_state: y0,
        saved: Vec::with_capacity(save_times.len()),
        accepted: 0,
        rejected: 0,
        status: AdaptiveStatus::Reached,
    };
    'run: while t < t_end {
        let min_h = min_step(t);
        if h_abs > c.max_step {
            h_abs = c.max_step;
        } else if h_abs < min_h {
            h_abs = min_h;
        }
        let mut rejected_here = false;
        loop {
            if out.accepted + out.rejected >= c.max_steps {
                out.status = AdaptiveStatus::MaxSteps;
                break 'run;
            }
            if h_abs < min_h {
                out.status = AdaptiveStatus::StepTooSmall;
                break 'run;
            }
            let t_new = (t + h_abs).min(t_end);
            let h = t_new - t;
            h_abs = h;
            let mut k = [[0.0; 3]; 7];
            k[0] = fy;
            for s in 1..6 {
                let dy: [f64; 3] =
                    std::array::from_fn(|i| (0..s).map(|j| k[j][i] * A[s][j]).sum::<f64>() * h);
                k[s] = f(std::array::from_fn(|i| y[i] + dy[i]));
            }
            let y_new: [f64; 3] =
                std::array::from_fn(|i| y[i] + h * (0..6).map(|j| k[j][i] * B[j]).sum::<f64>());
            k[6] = f(y_new);
            let err = rms(std::array::from_fn(|i| {
                let e = (0..7).map(|j| k[j][i] * E[j]).sum::<f64>() * h;
                e / (c.atol + y[i].abs().max(y_new[i].abs()) * rtol)
            }));
            if err < 1.0 {
                let mut factor = if err == 0.0 {
                    MAX_FACTOR
                } else {
                    MAX_FACTOR.min(SAFETY * err.powf(ERROR_EXPONENT))
                };
                if rejected_here {
                    factor = factor.min(1.0);
                }
                h_abs *= factor;
                out.accepted += 1;
                // The save times in this step: the dense output, or the
                // step's end state at its end.
                while let Some(&s) = save_times.get(out.saved.len()).filter(|s| **s <= t_new) {
                    if s == t_new {
                        out.saved.push(y_new);
                        continue;
                    }
                    let x = (s - t) / h;
                    let powers = [x, x * x, x * x * x, x * x * x * x];
                    out.saved.push(std::array::from_fn(|i| {
                        let q = |p: usize| (0..7).map(|j| k[j][i] * P[j][p]).sum::<f64>();
                        y[i] + h * (0..4).map(|p| q(p) * powers[p]).sum::<f64>()
                    }));
                }
                t = t_new;
                y = y_new;
                fy = k[6];
                break;
            }
            // NaN compares false: the factor is then MIN_FACTOR, as SciPy's max.
            let shrink = SAFETY * err.powf(ERROR_EXPONENT);
            h_abs *= if shrink > MIN_FACTOR {
                shrink
            } else {
                MIN_FACTOR
            };
            rejected_here = true;
            out.rejected += 1;
        }
    }
    out.final_state = y;
    // Save times at t0 of a run with no step (t_end = t0) are the initial
    // state; those after a stop are NaN.
    while out.saved.len() < save_times.len() {
        let reached = out.status == AdaptiveStatus::Reached && save_times[out.saved.len()] <= t;
        out.saved.push(if reached { y } else { [f64::NAN; 3] });
    }
    out
}

/// An adaptive ensemble run in f64 (inputs valid): every member by
/// [`dopri5_member`].
pub fn lorenz63_adaptive<T: Float>(
    p: &Lorenz63AdaptiveParams<&[T]>,
    initial: &[T],
    save_times: &[f64],
) -> Vec<AdaptiveMember> {
    (0..initial.len() / 3)
        .map(|m| {
            let y0 = std::array::from_fn(|i| initial[3 * m + i].to_f64());
            dopri5_member(
                y0,
                p.sigma.at(m),
                p.rho.at(m),
                p.beta.at(m),
                p.t0,
                p.t_end,
                &p.control,
                save_times,
            )
        })
        .collect()
}
