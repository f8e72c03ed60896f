//! Option values shared by several subcommands, as clap value enums: clap then
//! lists the accepted values in `--help` and in the error for a bad one.
use clap::{Args, ValueEnum};
use kernpack::{
    Backend, Error, FgPath, Float, Kernpack, LombScargleOptions, Lorenz05Model, Normalize,
};

value_enum! {
    /// Where a command computes.
    BackendArg => Backend {
        /// The GPU when one is present, else the CPU.
        Auto => Auto,
        /// The GPU; an error without one.
        Gpu => Gpu,
        /// The CPU backend.
        Cpu => Cpu,
    }
}

/// `--backend` and `--device`: where a command computes.
#[derive(Args, Debug, Clone)]
pub struct Placement {
    /// Where to compute.
    #[arg(long, value_enum, default_value_t = BackendArg::Auto)]
    pub backend: BackendArg,
    /// The GPU(s) to use, by ordinal (`kernpack info` lists them), e.g. 1 or
    /// 0,1: with several, batched work (lombscargle-batch, lorenz ensembles)
    /// is split over all of them; the rest runs on the first. Default: GPU 0.
    #[arg(long, value_name = "ORDINALS", value_delimiter = ',', num_args = 1)]
    pub device: Vec<usize>,
}

impl Placement {
    /// The handle these options name. `--device` with `--backend cpu` is an
    /// error (it would be ignored); with `auto` and no GPU at all, the CPU.
    pub fn open(&self) -> Result<Kernpack, String> {
        let gpus = || match self.device.as_slice() {
            [] => Kernpack::new(Backend::Gpu),
            [one] => Kernpack::with_gpu(*one),
            several => Kernpack::with_gpus(several),
        };
        if self.backend == BackendArg::Cpu && !self.device.is_empty() {
            return Err("--device names GPUs, but --backend cpu was asked for".into());
        }
        match self.backend {
            BackendArg::Cpu => Kernpack::new(Backend::Cpu),
            BackendArg::Gpu => gpus(),
            BackendArg::Auto => match gpus() {
                Err(Error::NoGpu(_)) => Kernpack::new(Backend::Cpu),
                other => other,
            },
        }
        .map_err(|e| e.to_string())
    }
}

/// Precision and backend of a search of one light curve (`bls`, `pdm`, `ce`),
/// whose sums are f64 whatever the precision.
#[derive(Args, Debug, Clone)]
pub struct SearchRun {
    /// Precision of the inputs and results (the sums are f64 either way).
    #[arg(long, value_enum, default_value_t = Dtype::F64)]
    pub dtype: Dtype,
    #[command(flatten)]
    pub at: Placement,
}

impl SearchRun {
    /// The handle these options name, reporting the progress of its long CPU
    /// runs (labelled `label`) on stderr.
    pub fn open(&self, label: &str) -> Result<Kernpack, String> {
        Ok(crate::progress::on_cpu(self.at.open()?, label))
    }
}

/// Where a benchmark runs: benchmarks time one backend, never "whichever is there".
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum BenchBackend {
    /// CUDA-event timing on device buffers.
    Gpu,
    /// Wall-clock timing of the CPU backend on host slices.
    Cpu,
}

/// Real precision.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Dtype {
    F32,
    F64,
}

/// `values` in precision `T`.
pub fn cast<T: Float>(values: &[f64]) -> Vec<T> {
    values.iter().map(|v| T::from_f64(*v)).collect()
}

value_enum! {
    /// Complex precision (the F/G system), by the precision of its parts.
    ComplexDtype => Dtype {
        /// Single-precision parts.
        C64 => F32,
        /// Double-precision parts.
        C128 => F64,
    }
}

value_enum! {
    /// What a periodogram holds (SciPy's `normalize`).
    NormalizeArg => Normalize {
        /// (A^2) N / 4.
        Power => Power,
        /// Power relative to the residuals of a constant model, in [0, 1].
        Normalize => Normalize,
        /// Complex amplitude and phase.
        Amplitude => Amplitude,
    }
}

/// The periodogram options shared by `lombscargle` and `lombscargle-batch`.
#[derive(Args, Debug, Clone)]
pub struct PeriodogramArgs {
    /// What each frequency's value is.
    #[arg(long, value_enum, default_value_t = NormalizeArg::Power)]
    pub normalize: NormalizeArg,
    /// Fit an offset per frequency (recommended when y has a mean).
    #[arg(long)]
    pub floating_mean: bool,
    /// Subtract mean(y) first (SciPy's legacy option).
    #[arg(long)]
    pub precenter: bool,
}

impl PeriodogramArgs {
    pub fn options(&self) -> LombScargleOptions {
        LombScargleOptions {
            normalize: self.normalize.into(),
            floating_mean: self.floating_mean,
            precenter: self.precenter,
        }
    }
}

value_enum! {
    /// How the F/G system's step loop runs on the GPU.
    FgPathArg => FgPath {
        /// Cooperative where the GPU supports it and the state fits in registers, else launches.
        Auto => Auto,
        /// One cooperative launch for the whole run, one grid-wide barrier per step.
        Cooperative => Cooperative,
        /// Two launches per step, the state in global memory.
        Launches => Launches,
    }
}

value_enum! {
    /// Lorenz 2005 model number.
    ModelArg => Lorenz05Model {
        /// Model II: smoothed advection.
        #[value(name = "2")]
        Two => II,
        /// Model III: Model II plus small-scale activity.
        #[value(name = "3")]
        Three => III,
    }
}
