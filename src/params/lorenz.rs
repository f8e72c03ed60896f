//! Lorenz 96 and Lorenz (2005) parameters: plain data shared by the API and
//! the reference (validation is the API's, in crate::api::lorenz).
use std::str::FromStr;

use crate::error::{Error, Result};
use crate::float::Float;
use cudarc::driver::sys::CUdeviceptr;

/// Lorenz 96: `dX_k/dt = (X_{k+1} - X_{k-2}) X_{k-1} - X_k + F` on n sites.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Lorenz96Params {
    pub n: usize,
    /// F for every member and site (unused with `forcing_in_state`).
    pub forcing: f64,
    pub dt: f64,
    /// The forcing is part of each member's state (NCAR DART's forced
    /// Lorenz 96, for parameter estimation): a member holds 2N values, X_0..
    /// X_{N-1} then F_0..F_{N-1}, and F_k forces site k. F does not change
    /// during a run (dF/dt = 0), so this is also per-member (or per-member and
    /// per-site) forcing.
    pub forcing_in_state: bool,
    /// Standard deviation s of an additive noise (0: none): each step draws
    /// W_k = s sqrt(dt) N(0, 1) per member and site and adds it to every RK4
    /// stage's increment, `k_i = dt f(...) + W` (the stochastic RK4 of data
    /// assimilation codes). Not applied to a forcing held in the state.
    pub noise: f64,
    /// The noise's seed: the draw of (member, step, site) is
    /// [`crate::params::counter_rng::draw`]`(seed, member, step, site)`, the same on
    /// every backend, thread count and GPU count (member: its index in the
    /// whole ensemble; step: 0 for the first step of a run).
    pub seed: u64,
    /// The member index of this call's first member in the noise draws (0
    /// by default): pieces of one ensemble run separately (Dask blocks,
    /// several processes) draw the noise of the whole run when each passes
    /// the index of its first member.
    pub member_offset: u64,
    /// The step index of this call's first step in the noise draws (0 by
    /// default): a run continued over several calls (a data-assimilation
    /// cycle's forecasts, one call per step) draws the noise of one whole run
    /// when each call passes the steps run before it. At most 2^62.
    pub step_offset: u64,
}

impl Default for Lorenz96Params {
    /// N = 40, F = 8, dt = 0.05 (NCAR DART), no forcing in the state, no noise.
    fn default() -> Self {
        Lorenz96Params {
            n: 40,
            forcing: 8.0,
            dt: 0.05,
            forcing_in_state: false,
            noise: 0.0,
            seed: 0,
            member_offset: 0,
            step_offset: 0,
        }
    }
}

impl Lorenz96Params {
    /// Values per member in a state: N, or 2N with the forcing in the state.
    pub fn values_per_member(&self) -> usize {
        match self.forcing_in_state {
            true => 2 * self.n,
            false => self.n,
        }
    }

    /// `s sqrt(dt)`: the noise's scale per step.
    pub fn noise_per_step(&self) -> f64 {
        self.noise * self.dt.sqrt()
    }
}

impl Lorenz05Params {
    /// Values per member in a state: N.
    pub fn values_per_member(&self) -> usize {
        self.n
    }
}

/// Which of Lorenz (2005)'s models: II (single scale, X = Z) or III (two scales).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Lorenz05Model {
    II,
    #[default]
    III,
}

impl Lorenz05Model {
    /// 2 or 3, as in the paper and DART's `model_number`.
    pub fn number(self) -> i32 {
        match self {
            Lorenz05Model::II => 2,
            Lorenz05Model::III => 3,
        }
    }
    pub fn from_number(number: i64) -> Result<Self> {
        match number {
            2 => Ok(Lorenz05Model::II),
            3 => Ok(Lorenz05Model::III),
            other => Err(Error::invalid(format!(
                "model must be 2 (Model II) or 3 (Model III), not {other}"
            ))),
        }
    }
}

impl FromStr for Lorenz05Model {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self> {
        match s.to_ascii_uppercase().as_str() {
            "2" | "II" => Ok(Lorenz05Model::II),
            "3" | "III" => Ok(Lorenz05Model::III),
            other => Err(Error::invalid(format!(
                "model must be 2 (II) or 3 (III), not {other:?}"
            ))),
        }
    }
}

/// Lorenz (2005) Model II / III ("Lorenz 04" in NCAR DART).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Lorenz05Params {
    /// Sites (DART `model_size`).
    pub n: usize,
    /// F (DART `forcing`).
    pub forcing: f64,
    /// K, even (DART `K`); H = K / 2.
    pub k: usize,
    /// J (DART `smooth_steps`): Model III smoothing half-width.
    pub j: usize,
    /// b (DART `space_time_scale`).
    pub b: f64,
    /// c (DART `coupling`; the 2005 paper uses 2.5).
    pub c: f64,
    pub dt: f64,
    pub model: Lorenz05Model,
}

impl Default for Lorenz05Params {
    /// NCAR DART's defaults: N = 960, F = 15, K = 32, J = 12, b = 10, c = 3,
    /// dt = 0.001, Model III.
    fn default() -> Self {
        Lorenz05Params {
            n: 960,
            forcing: 15.0,
            k: 32,
            j: 12,
            b: 10.0,
            c: 3.0,
            dt: 0.001,
            model: Lorenz05Model::III,
        }
    }
}

/// F, b and c given per member (Lorenz 2005): `members` values each, in
/// the run's dtype, as host slices or device addresses (`V`); None keeps
/// the one value of [`Lorenz05Params`] for every member. Member m runs as
/// `Lorenz05Params` with its F, b, c ([`Lorenz05Params::member`]). A
/// Lorenz 96 run takes none (its per-member forcing is the forcing held in
/// the state, [`Lorenz96Params::forcing_in_state`]).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct MemberParams<V> {
    pub forcing: Option<V>,
    pub b: Option<V>,
    pub c: Option<V>,
}

impl<V> Default for MemberParams<V> {
    /// None given: every member runs with the scalar values.
    fn default() -> Self {
        MemberParams {
            forcing: None,
            b: None,
            c: None,
        }
    }
}

impl<V> MemberParams<V> {
    /// The same values with `f` applied to each given set, forcing, b, c in
    /// that order (to their lengths for the checks, to device addresses for
    /// a launch, to arena places for a chunk).
    pub fn map<W>(self, mut f: impl FnMut(V) -> W) -> MemberParams<W> {
        MemberParams {
            forcing: self.forcing.map(&mut f),
            b: self.b.map(&mut f),
            c: self.c.map(&mut f),
        }
    }

    /// References to the given sets.
    pub fn as_ref(&self) -> MemberParams<&V> {
        MemberParams {
            forcing: self.forcing.as_ref(),
            b: self.b.as_ref(),
            c: self.c.as_ref(),
        }
    }

    /// (name, values) of forcing, b and c, for checks and launches.
    pub fn named(&self) -> [(&'static str, Option<&V>); 3] {
        [
            ("forcing", self.forcing.as_ref()),
            ("b", self.b.as_ref()),
            ("c", self.c.as_ref()),
        ]
    }

    /// Whether any parameter is given per member.
    pub fn any(&self) -> bool {
        self.forcing.is_some() || self.b.is_some() || self.c.is_some()
    }
}

impl Lorenz05Params {
    /// Member `m`'s parameters: its F, b and c where `each` gives them
    /// (read as f64), the scalars otherwise.
    pub fn member<T: Float>(&self, each: &MemberParams<&[T]>, m: usize) -> Lorenz05Params {
        let at = |v: Option<&&[T]>, all: f64| v.map_or(all, |v| v[m].to_f64());
        Lorenz05Params {
            forcing: at(each.forcing.as_ref(), self.forcing),
            b: at(each.b.as_ref(), self.b),
            c: at(each.c.as_ref(), self.c),
            ..*self
        }
    }
}

/// Frames of a run: `steps / every + 1` with `every > 0`, else none
/// (saturating: a count that large is refused by validation).
pub fn frame_count(steps: u64, every: u64) -> usize {
    super::save_at::Frames::Every(every).count(steps)
}

pub(crate) use super::FixedWeights;

/// Model III weights `a'_j`, j = -J..J, as `w[m] = a'_{m-J}`: `a_j = alpha -
/// beta |j|` with the two end weights halved once. Also returns alpha and beta
/// (the kernel rebuilds the weights from them with the same roundings).
pub fn model3_weights(j: usize) -> (f64, f64, Vec<f64>) {
    let jf = j as f64;
    let alpha = (3.0 * jf * jf + 3.0) / (2.0 * jf * jf * jf + 4.0 * jf);
    let beta = (2.0 * jf * jf + 1.0) / (jf * jf * jf * jf + 2.0 * jf * jf);
    let weights = (0..=2 * j)
        .map(|m| {
            let jj = m as i64 - j as i64;
            let a = alpha - beta * (jj.unsigned_abs() as f64);
            if m == 0 || m == 2 * j {
                a * 0.5
            } else {
                a
            }
        })
        .collect();
    (alpha, beta, weights)
}

/// The device buffers of one ensemble run, as raw pointers.
#[derive(Debug, Clone, Copy)]
pub struct EnsembleDeviceBuffers {
    /// members x n initial states (read only).
    pub initial: CUdeviceptr,
    /// members x n final states.
    pub out: CUdeviceptr,
    /// frames x members x n, or None for final states only (`every` must
    /// then be 0 and `save_at` empty): frame f after `f * every` steps, or
    /// after `save_at[f]` steps.
    pub trajectory: Option<CUdeviceptr>,
}

/// An integrated ensemble.
#[derive(Debug, Clone, PartialEq)]
pub struct Ensemble<T> {
    pub members: usize,
    pub n: usize,
    /// members x n after the last step.
    pub final_state: Vec<T>,
    /// With `every > 0`: frames x members x n, frame f after `f * every`
    /// steps; with a non-empty `save_at`: frame k after `save_at[k]` steps.
    pub trajectory: Option<Vec<T>>,
    pub every: u64,
    /// The steps of the frames of a run that saved states at chosen steps
    /// (empty otherwise).
    pub save_at: Vec<u64>,
}

impl<T: Float> Ensemble<T> {
    pub fn frames(&self) -> usize {
        self.trajectory
            .as_ref()
            .map_or(0, |t| t.len() / (self.members * self.n))
    }
}
