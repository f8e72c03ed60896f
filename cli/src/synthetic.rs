//! Reproducible pseudo-random numbers for synthetic inputs (demo, bench).

/// xorshift64: fast, seedable, plenty for test signals.
pub struct Uniform(u64);

impl Uniform {
    pub fn new(seed: u64) -> Self {
        Uniform(seed.max(1))
    }

    /// A value in [0, 1).
    pub fn next(&mut self) -> f64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        (self.0 >> 11) as f64 / (1u64 << 53) as f64
    }

    /// A standard normal value (Box-Muller).
    pub fn normal(&mut self) -> f64 {
        let (u, v) = (self.next().max(1e-300), self.next());
        (-2.0 * u.ln()).sqrt() * (std::f64::consts::TAU * v).cos()
    }
}
