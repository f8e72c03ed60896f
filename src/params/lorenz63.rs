//! Lorenz 63 ensembles: `dx/dt = sigma (y - x)`, `dy/dt = x (rho - z) - y`,
//! `dz/dt = x y - beta z`, sigma, rho and beta one value for every member or
//! one per member. Plain data shared by the API and the reference
//! (validation is in crate::gpu::lorenz63).
use cudarc::driver::sys::CUdeviceptr;

/// A parameter of every member: one value for all, or one per member (`V`
/// is a host slice, or a device address of `members` values).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum PerMember<V> {
    All(f64),
    Each(V),
}

impl<T: crate::float::Float> PerMember<&[T]> {
    /// Member `m`'s value (m below the member count).
    pub fn at(&self, m: usize) -> f64 {
        match self {
            PerMember::All(v) => *v,
            PerMember::Each(values) => values[m].to_f64(),
        }
    }
}

impl<V> PerMember<V> {
    /// The per-member values, None for one value for all.
    pub fn each(&self) -> Option<&V> {
        match self {
            PerMember::All(_) => None,
            PerMember::Each(v) => Some(v),
        }
    }
    /// The one value for all (0 where the values are per member).
    pub fn all(&self) -> f64 {
        match self {
            PerMember::All(v) => *v,
            PerMember::Each(_) => 0.0,
        }
    }
    /// A reference to the per-member values.
    pub fn as_ref(&self) -> PerMember<&V> {
        match self {
            PerMember::All(a) => PerMember::All(*a),
            PerMember::Each(v) => PerMember::Each(v),
        }
    }
    pub fn map<W>(self, f: impl FnOnce(V) -> W) -> PerMember<W> {
        match self {
            PerMember::All(v) => PerMember::All(v),
            PerMember::Each(v) => PerMember::Each(f(v)),
        }
    }
}

/// The parameters of a Lorenz 63 ensemble run: per-member sigma, rho, beta
/// (host slices or device addresses, `V`) and the RK4 step dt.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Lorenz63Params<V> {
    pub sigma: PerMember<V>,
    pub rho: PerMember<V>,
    pub beta: PerMember<V>,
    pub dt: f64,
}

impl<V> Default for Lorenz63Params<V> {
    /// Lorenz's classic values for every member: sigma = 10, rho = 28,
    /// beta = 8/3, with dt = 0.01.
    fn default() -> Self {
        Lorenz63Params {
            sigma: PerMember::All(10.0),
            rho: PerMember::All(28.0),
            beta: PerMember::All(8.0 / 3.0),
            dt: 0.01,
        }
    }
}

impl<V> Lorenz63Params<V> {
    /// The same parameters with `f` applied to each per-member value set,
    /// sigma, rho, beta in that order (to their lengths for the checks, to
    /// device addresses for a launch, to arena places for a chunk).
    pub fn map<W>(self, mut f: impl FnMut(V) -> W) -> Lorenz63Params<W> {
        Lorenz63Params {
            sigma: self.sigma.map(&mut f),
            rho: self.rho.map(&mut f),
            beta: self.beta.map(&mut f),
            dt: self.dt,
        }
    }

    /// (name, parameter) of sigma, rho and beta, for checks and launches.
    pub fn named(&self) -> [(&'static str, &PerMember<V>); 3] {
        [
            ("sigma", &self.sigma),
            ("rho", &self.rho),
            ("beta", &self.beta),
        ]
    }
}

/// The device buffers of a Lorenz 63 run, as raw addresses.
#[derive(Debug, Clone, Copy)]
pub struct Lorenz63DeviceBuffers {
    /// members x 3 initial states (x, y, z of each member; read only).
    pub initial: CUdeviceptr,
    /// members x 3 final states (apart from `initial`).
    pub out: CUdeviceptr,
    /// frames x members x 3, one frame per saved step; None without any.
    pub saved: Option<CUdeviceptr>,
}

/// An integrated Lorenz 63 ensemble.
#[derive(Debug, Clone, PartialEq)]
pub struct Lorenz63Ensemble<T> {
    pub members: usize,
    /// members x 3 after the last step.
    pub final_state: Vec<T>,
    /// frames x members x 3, frame k the states after `save_at[k]` steps
    /// (empty without saved steps).
    pub saved: Vec<T>,
    pub save_at: Vec<u64>,
}

/// Step-size control of an adaptive run, with SciPy `solve_ivp(method='RK45')`'s
/// meaning: the local error estimate of each accepted step is kept below
/// `atol + rtol * max(|y|, |y_new|)` (an RMS over x, y, z).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct AdaptiveControl {
    /// Relative tolerance (>= 0; values below 100 f64 epsilons run as that,
    /// as SciPy does).
    pub rtol: f64,
    /// Absolute tolerance (>= 0).
    pub atol: f64,
    /// The first step; None: chosen per member from its initial state
    /// (Hairer, Norsett and Wanner's algorithm, as SciPy).
    pub first_step: Option<f64>,
    /// The largest step (> 0; infinity for none).
    pub max_step: f64,
    /// Steps attempted per member (accepted and rejected) before it stops
    /// with [`AdaptiveStatus::MaxSteps`].
    pub max_steps: u32,
}

impl Default for AdaptiveControl {
    /// SciPy's defaults (rtol 1e-3, atol 1e-6, chosen first step, no largest
    /// step) and at most 100,000 attempted steps per member.
    fn default() -> Self {
        AdaptiveControl {
            rtol: 1e-3,
            atol: 1e-6,
            first_step: None,
            max_step: f64::INFINITY,
            max_steps: 100_000,
        }
    }
}

impl AdaptiveControl {
    /// The relative tolerance the run uses: `rtol`, at least 100 f64 epsilons.
    pub fn effective_rtol(&self) -> f64 {
        self.rtol.max(100.0 * f64::EPSILON)
    }
}

/// The parameters of an adaptive Lorenz 63 run (Dormand-Prince 5(4), each
/// member with its own step size): per-member sigma, rho, beta (host slices
/// or device addresses, `V`), the time span and the step control.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Lorenz63AdaptiveParams<V> {
    pub sigma: PerMember<V>,
    pub rho: PerMember<V>,
    pub beta: PerMember<V>,
    /// The initial states' time.
    pub t0: f64,
    /// The time every member is integrated to (>= t0).
    pub t_end: f64,
    pub control: AdaptiveControl,
}

impl<V> Default for Lorenz63AdaptiveParams<V> {
    /// Lorenz's classic values for every member (sigma = 10, rho = 28,
    /// beta = 8/3) from t = 0 to 1, with [`AdaptiveControl::default`].
    fn default() -> Self {
        let classic = Lorenz63Params::<V>::default();
        Lorenz63AdaptiveParams {
            sigma: classic.sigma,
            rho: classic.rho,
            beta: classic.beta,
            t0: 0.0,
            t_end: 1.0,
            control: AdaptiveControl::default(),
        }
    }
}

impl<V> Lorenz63AdaptiveParams<V> {
    /// The same parameters with `f` applied to each per-member value set,
    /// sigma, rho, beta in that order.
    pub fn map<W>(self, mut f: impl FnMut(V) -> W) -> Lorenz63AdaptiveParams<W> {
        Lorenz63AdaptiveParams {
            sigma: self.sigma.map(&mut f),
            rho: self.rho.map(&mut f),
            beta: self.beta.map(&mut f),
            t0: self.t0,
            t_end: self.t_end,
            control: self.control,
        }
    }

    /// (name, parameter) of sigma, rho and beta, for checks and launches.
    pub fn named(&self) -> [(&'static str, &PerMember<V>); 3] {
        [
            ("sigma", &self.sigma),
            ("rho", &self.rho),
            ("beta", &self.beta),
        ]
    }
}

/// How a member's adaptive run ended (the `status` the kernels write).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(u32)]
pub enum AdaptiveStatus {
    /// Reached `t_end`.
    Reached = 0,
    /// Stopped after `max_steps` attempted steps.
    MaxSteps = 1,
    /// Stopped where the step size fell below ten times the spacing of the
    /// floating-point numbers at t (SciPy's "required step size is less than
    /// spacing between numbers"); a non-finite state ends so too.
    StepTooSmall = 2,
}

impl AdaptiveStatus {
    /// The status of a kernel's code (an unknown code is `StepTooSmall`,
    /// never met).
    pub fn from_code(code: u32) -> AdaptiveStatus {
        match code {
            0 => AdaptiveStatus::Reached,
            1 => AdaptiveStatus::MaxSteps,
            _ => AdaptiveStatus::StepTooSmall,
        }
    }
}

/// The device buffers of an adaptive Lorenz 63 run, as raw addresses.
#[derive(Debug, Clone, Copy)]
pub struct Lorenz63AdaptiveDeviceBuffers {
    /// members x 3 initial states (read only).
    pub initial: CUdeviceptr,
    /// members x 3 states at `t_end` (a stopped member: its last state).
    pub out: CUdeviceptr,
    /// frames x members x 3, one frame per save time; None without any.
    pub saved: Option<CUdeviceptr>,
    /// members x 3 `u32`: accepted steps, rejected steps, status code
    /// ([`AdaptiveStatus`]); None: not written.
    pub stats: Option<CUdeviceptr>,
}

/// An adaptive Lorenz 63 ensemble run's result.
#[derive(Debug, Clone, PartialEq)]
pub struct Lorenz63AdaptiveEnsemble<T> {
    pub members: usize,
    /// members x 3 at `t_end` (a member that stopped early: its last state).
    pub final_state: Vec<T>,
    /// frames x members x 3, frame k the states at `save_times[k]` (NaN for
    /// a member that stopped before it); empty without save times.
    pub saved: Vec<T>,
    pub save_times: Vec<f64>,
    /// Accepted steps per member.
    pub accepted: Vec<u32>,
    /// Rejected step attempts per member.
    pub rejected: Vec<u32>,
    pub status: Vec<AdaptiveStatus>,
}

impl<T> Lorenz63AdaptiveEnsemble<T> {
    /// The result of a run's buffers as the kernels write them: `stats`
    /// members x 3 (accepted, rejected, status code; see
    /// [`Lorenz63AdaptiveDeviceBuffers::stats`]).
    pub(crate) fn from_stats(
        final_state: Vec<T>,
        saved: Vec<T>,
        save_times: &[f64],
        stats: &[u32],
    ) -> Lorenz63AdaptiveEnsemble<T> {
        let column = |k: usize| stats.chunks_exact(3).map(move |s| s[k]);
        Lorenz63AdaptiveEnsemble {
            members: final_state.len() / 3,
            final_state,
            saved,
            save_times: save_times.to_vec(),
            accepted: column(0).collect(),
            rejected: column(1).collect(),
            status: column(2).map(AdaptiveStatus::from_code).collect(),
        }
    }

    /// Whether every member reached `t_end`.
    pub fn all_reached(&self) -> bool {
        self.status.iter().all(|s| *s == AdaptiveStatus::Reached)
    }
}
