//! Lorenz 63 ensembles in f64, classical RK4 exactly as MODELS.md writes it:
//! `k = dt f(z)` per stage, `z += k1/6 + k2/3 + k3/3 + k4/6`.
use crate::float::Float;
use crate::params::lorenz63::Lorenz63Params;
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
