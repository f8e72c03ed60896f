//! Lorenz 96 and Lorenz 2005 Model II / III (MODELS.md sections 2 and 3) and
//! the periodic window sum, in f64, in exactly the summation order of
//! MODELS.md that csrc/lorenz.cu follows too (first end term, j ascending,
//! last end term; the RK4 increment summed first, then added once).
//! Ensembles run one member per task on all cores.
use super::fill_parallel;
use crate::float::Float;
use crate::params::counter_rng::{draw, standard_normal};
pub use crate::params::lorenz::model3_weights;
use crate::params::lorenz::{Lorenz05Model, Lorenz05Params, Lorenz96Params, MemberParams};
use crate::params::save_at::Frames;

/// `idx(k)` of MODELS.md: k mod n in [0, n).
fn idx(k: i64, n: usize) -> usize {
    k.rem_euclid(n as i64) as usize
}

/// `idx(k)` for k in [-n, 2n), the range of every Lorenz 2005 stencil once
/// N > 2K and N > 2J (validated): a compare instead of a division.
fn wrap(k: i64, n: usize) -> usize {
    let n = n as i64;
    (if k < 0 {
        k + n
    } else if k >= n {
        k - n
    } else {
        k
    }) as usize
}

/// `out[r * pitch + i] = sum_{m=0}^{L-1} w[m] x[r * pitch + idx(i + J - m)]`,
/// L = w.len() = 2J + 1, summed in m order in f64, for `rows` rows of `n`
/// values starting every `pitch` values. Elements of `out` between n and
/// pitch are left as they are.
pub fn window_sum<T: Float>(x: &[T], w: &[T], rows: usize, n: usize, pitch: usize, out: &mut [T]) {
    let half = (w.len() / 2) as i64;
    let row_sum = |r: usize, i: usize| {
        let row = &x[r * pitch..r * pitch + n];
        let mut acc = 0.0f64;
        for (m, wm) in w.iter().enumerate() {
            acc += wm.to_f64() * row[idx(i as i64 + half - m as i64, n)].to_f64();
        }
        T::from_f64(acc)
    };
    let mut dense = vec![T::default(); rows * n];
    fill_parallel(&mut dense, n.max(1024), None, |g| row_sum(g / n, g % n));
    for r in 0..rows {
        out[r * pitch..r * pitch + n].copy_from_slice(&dense[r * n..(r + 1) * n]);
    }
}

/// Lorenz 96 tendency: `dX_k/dt = (X_{k+1} - X_{k-2}) X_{k-1} - X_k + F`.
pub fn lorenz96_tendency(forcing: f64, x: &[f64], dx: &mut [f64]) {
    tendency_with(x, dx, |_| forcing)
}

/// [`lorenz96_tendency`] with F_k per site.
pub fn lorenz96_tendency_per_site(forcing: &[f64], x: &[f64], dx: &mut [f64]) {
    tendency_with(x, dx, |k| forcing[k])
}

fn tendency_with(x: &[f64], dx: &mut [f64], forcing: impl Fn(usize) -> f64) {
    let n = x.len();
    for k in 0..n {
        let (km2, km1, kp1) = ((k + n - 2) % n, (k + n - 1) % n, (k + 1) % n);
        dx[k] = (x[kp1] - x[km2]) * x[km1] - x[k] + forcing(k);
    }
}

/// Scratch arrays of one Lorenz 2005 tendency evaluation.
pub struct Lorenz05Work {
    weights: Vec<f64>,
    x: Vec<f64>,
    y: Vec<f64>,
    w: Vec<f64>,
}

impl Lorenz05Work {
    pub fn new(p: &Lorenz05Params) -> Self {
        let weights = match p.model {
            Lorenz05Model::III => model3_weights(p.j).2,
            Lorenz05Model::II => Vec::new(),
        };
        Lorenz05Work {
            weights,
            x: vec![0.0; p.n],
            y: vec![0.0; p.n],
            w: vec![0.0; p.n],
        }
    }

    /// The smoothed (large-scale) part X of the last evaluated state.
    pub fn x(&self) -> &[f64] {
        &self.x
    }
    /// The small-scale part Y = Z - X of the last evaluated state (0 for Model II).
    pub fn y(&self) -> &[f64] {
        &self.y
    }

    /// Phase 1 of MODELS.md section 3: X (and Y = Z - X) from Z.
    pub fn split(&mut self, p: &Lorenz05Params, z: &[f64]) {
        match p.model {
            Lorenz05Model::II => {
                self.x.copy_from_slice(z);
                self.y.iter_mut().for_each(|y| *y = 0.0);
            }
            Lorenz05Model::III => {
                let (n, j) = (p.n, p.j as i64);
                for i in 0..n {
                    let mut acc = self.weights[0] * z[wrap(i as i64 + j, n)];
                    for m in 1..self.weights.len() {
                        acc += self.weights[m] * z[wrap(i as i64 + j - m as i64, n)];
                    }
                    self.x[i] = acc;
                    self.y[i] = z[i] - acc;
                }
            }
        }
    }

    /// The bracket `[X, X]_{K,i}` of phases 2 and 3 for the X held in `self`
    /// (fills the W scratch). Kept apart for the energy-conservation test.
    pub fn bracket(&mut self, p: &Lorenz05Params, out: &mut [f64]) {
        let (n, k) = (p.n, p.k as i64);
        let h = k / 2;
        let kf = p.k as f64;
        let x = &self.x;
        for i in 0..n as i64 {
            let mut acc = x[wrap(i + h, n)] / 2.0;
            for j in -h + 1..h {
                acc += x[wrap(i - j, n)];
            }
            acc += x[wrap(i - h, n)] / 2.0;
            self.w[i as usize] = acc / kf;
        }
        let w = &self.w;
        for i in 0..n as i64 {
            let mut s = w[wrap(i - k - h, n)] * x[wrap(i + k - h, n)] / 2.0;
            for j in -h + 1..h {
                s += w[wrap(i - k + j, n)] * x[wrap(i + k + j, n)];
            }
            s += w[wrap(i - k + h, n)] * x[wrap(i + k + h, n)] / 2.0;
            out[i as usize] = -w[wrap(i - 2 * k, n)] * w[wrap(i - k, n)] + s / kf;
        }
    }

    /// `dz = f(z)`: phases 1 to 4 of MODELS.md section 3.
    pub fn tendency(&mut self, p: &Lorenz05Params, z: &[f64], dz: &mut [f64]) {
        self.split(p, z);
        self.bracket(p, dz); // dz holds XX for now
        let n = p.n;
        let (f, b, c) = (p.forcing, p.b, p.c);
        let b2 = b * b;
        let (x, y) = (&self.x, &self.y);
        for i in 0..n {
            let (im2, im1, ip1) = ((i + n - 2) % n, (i + n - 1) % n, (i + 1) % n);
            let xx = dz[i];
            dz[i] = match p.model {
                Lorenz05Model::III => {
                    xx + b2 * (-y[im2] * y[im1] + y[im1] * y[ip1])
                        + c * (-y[im2] * x[im1] + y[im1] * x[ip1])
                        - x[i]
                        - b * y[i]
                        + f
                }
                Lorenz05Model::II => xx - x[i] + f,
            };
        }
    }
}

/// One classic RK4 step of `z` (MODELS.md): `k_s = dt f(stage input)`, the
/// increment `k1/6 + k2/3 + k3/3 + k4/6` summed first, then added once.
pub fn rk4_step(z: &mut [f64], dt: f64, f: impl FnMut(&[f64], &mut [f64])) {
    rk4_step_with_noise(z, dt, None, f)
}

/// [`rk4_step`] with an additive noise `w` (one value per state value) added
/// to every stage's `k_s` (stochastic RK4 with additive noise).
pub fn rk4_step_with_noise(
    z: &mut [f64],
    dt: f64,
    w: Option<&[f64]>,
    mut f: impl FnMut(&[f64], &mut [f64]),
) {
    let n = z.len();
    let mut stage = z.to_vec();
    let mut dz = vec![0.0; n];
    let mut inc = vec![0.0; n];
    for s in 0..4 {
        f(&stage, &mut dz);
        for i in 0..n {
            let k = match w {
                Some(w) => dt * dz[i] + w[i],
                None => dt * dz[i],
            };
            match s {
                0 => {
                    inc[i] = k / 6.0;
                    stage[i] = z[i] + k * 0.5;
                }
                1 => {
                    inc[i] += k / 3.0;
                    stage[i] = z[i] + k * 0.5;
                }
                2 => {
                    inc[i] += k / 3.0;
                    stage[i] = z[i] + k;
                }
                _ => {
                    inc[i] += k / 6.0;
                    z[i] += inc[i];
                }
            }
        }
    }
}

/// Final states (members x n) and, with `every > 0`, the frames after
/// 0, every, 2 every, ... steps (frames x members x n); of the save_at runs,
/// the frames after the steps of save_at.
pub struct EnsembleRun {
    pub final_state: Vec<f64>,
    pub trajectory: Option<Vec<f64>>,
}

/// The noise of one step: `noise(member, step, w)` fills `w` (one value per
/// state value) for step `step` (0 the first) of member `member`.
type StepNoise<'a> = &'a (dyn Fn(u64, u64, &mut [f64]) + Sync);

/// Integrates every member of `initial` (members x n) for `steps` RK4 steps
/// of `tendency` (built per member by `make`, given the member's index), one
/// member per task, with the optional additive `noise` in every stage (drawn
/// for the run's steps `first_step` on), keeping `frames`.
#[allow(clippy::too_many_arguments)]
fn run_ensemble<F: FnMut(&[f64], &mut [f64])>(
    n: usize,
    initial: &[f64],
    dt: f64,
    (first_step, steps): (u64, u64),
    frames: Frames<'_>,
    progress: Option<&(dyn Fn(u64, u64) + Sync)>,
    noise: Option<StepNoise<'_>>,
    make: impl Fn(usize) -> F + Sync,
) -> EnsembleRun {
    let members = initial.len() / n;
    let count = frames.count(steps);
    // Per member: its frames and its final state.
    let mut runs: Vec<Vec<f64>> = vec![Vec::new(); members];
    fill_parallel(&mut runs, 1, progress, |m| {
        let mut z = initial[m * n..(m + 1) * n].to_vec();
        let mut out = Vec::with_capacity((count + 1) * n);
        if frames.after(0).is_some() {
            out.extend_from_slice(&z);
        }
        let mut f = make(m);
        let mut w = vec![0.0; n];
        for step in 1..=steps {
            if let Some(noise) = noise {
                noise(m as u64, first_step + step - 1, &mut w);
            }
            rk4_step_with_noise(&mut z, dt, noise.map(|_| &w[..]), &mut f);
            if frames.after(step).is_some() {
                out.extend_from_slice(&z);
            }
        }
        out.extend_from_slice(&z);
        out
    });
    let final_state = runs
        .iter()
        .flat_map(|r| r[count * n..].iter().copied())
        .collect();
    let trajectory = (count > 0).then(|| {
        let mut t = vec![0.0; count * members * n];
        for (m, r) in runs.iter().enumerate() {
            for f in 0..count {
                t[(f * members + m) * n..(f * members + m + 1) * n]
                    .copy_from_slice(&r[f * n..(f + 1) * n]);
            }
        }
        t
    });
    EnsembleRun {
        final_state,
        trajectory,
    }
}

/// A Lorenz 96 ensemble; inputs validated by the caller.
pub fn lorenz96(
    p: &Lorenz96Params,
    initial: &[f64],
    steps: u64,
    every: u64,
    progress: Option<&(dyn Fn(u64, u64) + Sync)>,
) -> EnsembleRun {
    lorenz96_frames(p, initial, (0, steps), Frames::Every(every), progress)
}

/// A Lorenz 96 ensemble from step `first_step` of a run (the step index of
/// the noise draws) for `steps` steps, the states after the steps of
/// `save_at` (counted from this call's start; sorted, unique, each in
/// 0..=steps) as the trajectory's frames (None when it is empty); inputs
/// validated by the caller.
pub fn lorenz96_save_at(
    p: &Lorenz96Params,
    initial: &[f64],
    (first_step, steps): (u64, u64),
    save_at: &[u64],
) -> EnsembleRun {
    lorenz96_frames(p, initial, (first_step, steps), Frames::At(save_at), None)
}

fn lorenz96_frames(
    p: &Lorenz96Params,
    initial: &[f64],
    steps: (u64, u64),
    frames: Frames<'_>,
    progress: Option<&(dyn Fn(u64, u64) + Sync)>,
) -> EnsembleRun {
    let (n, forcing, in_state) = (p.n, p.forcing, p.forcing_in_state);
    let (seed, scale, offset) = (p.seed, p.noise_per_step(), p.member_offset);
    let step_offset = p.step_offset;
    // W on the X sites; none on a forcing held in the state.
    let noise = move |member: u64, step: u64, w: &mut [f64]| {
        for (site, v) in w[..n].iter_mut().enumerate() {
            let at = step_offset + step;
            *v = scale * standard_normal(draw(seed, offset + member, at, site as u32));
        }
    };
    let noise = (p.noise > 0.0).then_some(&noise as StepNoise<'_>);
    run_ensemble(
        p.values_per_member(),
        initial,
        p.dt,
        steps,
        frames,
        progress,
        noise,
        |_| {
            move |z: &[f64], dz: &mut [f64]| match in_state {
                true => {
                    let (x, f) = z.split_at(n);
                    lorenz96_tendency_per_site(f, x, &mut dz[..n]);
                    dz[n..].fill(0.0);
                }
                false => lorenz96_tendency(forcing, z, dz),
            }
        },
    )
}

/// Lorenz 96's tangent linear model along the RK4 trajectory: `initial`
/// holds members x N states, `perturbations` members x K x N vectors; returns
/// the states after `steps` steps and each perturbation propagated by the
/// derivative of those steps. The RK4 step of the joint system (x, dx) with
/// `d(dx)/dt = J(x) dx` is exactly the derivative of the RK4 step of x (the
/// stages are linear in dx), so the tangent is that joint run. Noise, which
/// does not depend on x, moves x only. The forcing in the state is not
/// supported (the caller refuses it).
pub fn lorenz96_tangent(
    p: &Lorenz96Params,
    initial: &[f64],
    perturbations: &[f64],
    steps: u64,
) -> (Vec<f64>, Vec<f64>) {
    let n = p.n;
    let members = initial.len() / n;
    let k = perturbations.len() / initial.len();
    // Member m of the joint run: x, then its K perturbations.
    let joint: Vec<f64> = (0..members)
        .flat_map(|m| {
            let x = &initial[m * n..(m + 1) * n];
            x.iter()
                .chain(&perturbations[m * k * n..(m + 1) * k * n])
                .copied()
        })
        .collect();
    let (forcing, seed, scale, offset) = (p.forcing, p.seed, p.noise_per_step(), p.member_offset);
    let step_offset = p.step_offset;
    let noise = move |member: u64, step: u64, w: &mut [f64]| {
        w.fill(0.0);
        for (site, v) in w[..n].iter_mut().enumerate() {
            let at = step_offset + step;
            *v = scale * standard_normal(draw(seed, offset + member, at, site as u32));
        }
    };
    let noise = (p.noise > 0.0).then_some(&noise as StepNoise<'_>);
    let joint_n = n * (1 + k);
    let no_frames = Frames::Every(0);
    let run = run_ensemble(
        joint_n,
        &joint,
        p.dt,
        (0, steps),
        no_frames,
        None,
        noise,
        |_| {
            move |z: &[f64], dz: &mut [f64]| {
                let (x, vs) = z.split_at(n);
                let (dx, dvs) = dz.split_at_mut(n);
                lorenz96_tendency(forcing, x, dx);
                for (v, dv) in vs.chunks(n).zip(dvs.chunks_mut(n)) {
                    lorenz96_tangent_tendency(x, v, dv);
                }
            }
        },
    );
    let (mut states, mut tangents) = (Vec::new(), Vec::new());
    for member in run.final_state.chunks(n * (1 + k)) {
        states.extend_from_slice(&member[..n]);
        tangents.extend_from_slice(&member[n..]);
    }
    (states, tangents)
}

/// The tangent of [`lorenz96_tendency`] at `x` applied to `v`:
/// `(v_{k+1} - v_{k-2}) x_{k-1} + (x_{k+1} - x_{k-2}) v_{k-1} - v_k`.
pub fn lorenz96_tangent_tendency(x: &[f64], v: &[f64], dv: &mut [f64]) {
    let n = x.len();
    for k in 0..n {
        let (km2, km1, kp1) = ((k + n - 2) % n, (k + n - 1) % n, (k + 1) % n);
        dv[k] = (v[kp1] - v[km2]) * x[km1] + (x[kp1] - x[km2]) * v[km1] - v[k];
    }
}

/// A Lorenz 2005 Model II / III ensemble; inputs validated by the caller.
pub fn lorenz05(
    p: &Lorenz05Params,
    initial: &[f64],
    steps: u64,
    every: u64,
    progress: Option<&(dyn Fn(u64, u64) + Sync)>,
) -> EnsembleRun {
    lorenz05_each_frames(
        p,
        &MemberParams::default(),
        initial,
        steps,
        Frames::Every(every),
        progress,
    )
}

/// A Lorenz 2005 Model II / III ensemble with the states after the steps of
/// `save_at` (sorted, unique, each in 0..=steps) as the trajectory's frames
/// (None when it is empty); inputs validated by the caller.
pub fn lorenz05_save_at(
    p: &Lorenz05Params,
    initial: &[f64],
    steps: u64,
    save_at: &[u64],
) -> EnsembleRun {
    let each = MemberParams::default();
    lorenz05_each_frames(p, &each, initial, steps, Frames::At(save_at), None)
}

/// A Lorenz 2005 Model II / III ensemble with F, b and c per member where
/// `each` gives them (member m runs with [`Lorenz05Params::member`]); inputs
/// validated by the caller.
pub fn lorenz05_each(
    p: &Lorenz05Params,
    each: &MemberParams<&[f64]>,
    initial: &[f64],
    steps: u64,
    every: u64,
    progress: Option<&(dyn Fn(u64, u64) + Sync)>,
) -> EnsembleRun {
    lorenz05_each_frames(p, each, initial, steps, Frames::Every(every), progress)
}

/// As [`lorenz05_each`], the states after the steps of `save_at` (sorted,
/// unique, each in 0..=steps) as the trajectory's frames (None when it is
/// empty), as [`lorenz05_save_at`].
pub fn lorenz05_each_save_at(
    p: &Lorenz05Params,
    each: &MemberParams<&[f64]>,
    initial: &[f64],
    steps: u64,
    save_at: &[u64],
) -> EnsembleRun {
    lorenz05_each_frames(p, each, initial, steps, Frames::At(save_at), None)
}

/// The Lorenz 2005 ensemble of all of the above: F, b and c per member
/// where `each` gives them, the frames of `frames` (every k steps or after
/// the steps of a save_at list); inputs validated by the caller.
pub fn lorenz05_each_frames(
    p: &Lorenz05Params,
    each: &MemberParams<&[f64]>,
    initial: &[f64],
    steps: u64,
    frames: Frames<'_>,
    progress: Option<&(dyn Fn(u64, u64) + Sync)>,
) -> EnsembleRun {
    let steps = (0, steps);
    run_ensemble(p.n, initial, p.dt, steps, frames, progress, None, |m| {
        let p = p.member(each, m);
        let mut work = Lorenz05Work::new(&p);
        move |z: &[f64], dz: &mut [f64]| work.tendency(&p, z, dz)
    })
}
