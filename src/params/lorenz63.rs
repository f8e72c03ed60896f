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
    /// The same parameters with `f` applied to each per-member value set
    /// (to their lengths for the checks, to device addresses for a launch).
    pub fn map<W>(self, f: impl Fn(V) -> W) -> Lorenz63Params<W> {
        Lorenz63Params {
            sigma: self.sigma.map(&f),
            rho: self.rho.map(&f),
            beta: self.beta.map(&f),
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
