//! `kernpack fg`: integrate the coupled F/G system and write
//! delta(t); `kernpack bench fg`: time it per step with CUDA events.
use std::path::PathBuf;

use clap::builder::RangedU64ValueParser;
use std::time::Instant;

use kernpack::api::fg::{complexes, interleaved, FgPlan};
use kernpack::{Backend, Complex, FgOnDevice, FgOptions, FgPath, FgRun, Float, Gpu, Kernpack};

use crate::io::write_csv;
use crate::memory::check_room;
use crate::options::{ComplexDtype, Dtype, FgPathArg, Placement};
use crate::synthetic::Uniform;
use crate::timing::{event_times, wall_median, BenchResult, Timing};
use crate::{figures, plot};

/// How F and G start.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum InitArg {
    /// F = G = 1 everywhere.
    Ones,
    /// Real and imaginary parts uniform in [-1, 1] (see --seed).
    Random,
}

/// The problem: what `kernpack fg` and `kernpack bench fg` integrate.
#[derive(clap::Args, Debug)]
pub struct FgProblemArgs {
    /// Matrix size: F and G are N x N.
    #[arg(long, default_value_t = 512, value_parser = RangedU64ValueParser::<usize>::new().range(1..))]
    pub n: usize,
    /// RK4 steps.
    #[arg(long, default_value_t = 100)]
    pub steps: usize,
    /// Time step.
    #[arg(long, default_value_t = 1e-4)]
    pub dt: f64,
    /// Precision.
    #[arg(long, value_enum, default_value_t = ComplexDtype::C64)]
    pub dtype: ComplexDtype,
    /// Initial F and G.
    #[arg(long, value_enum, default_value_t = InitArg::Ones)]
    pub init: InitArg,
    /// Seed of --init random.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Initial delta, as RE or RE,IM.
    #[arg(long, value_name = "RE[,IM]", default_value = "1,0", value_parser = parse_complex)]
    pub delta0: (f64, f64),
}

/// Integrate the coupled F/G system: RK4 of dF/dt = -2i F - i delta (2G - 1),
/// dG/dt = -i (conj(delta) F - delta conj(F)) over N x N complex F and G, with
/// delta = sum(F) after every step.
#[derive(clap::Args, Debug)]
pub struct FgArgs {
    #[command(flatten)]
    pub problem: FgProblemArgs,
    #[command(flatten)]
    pub at: Placement,
    /// How the step loop runs on the GPU.
    #[arg(long, value_enum, default_value_t = FgPathArg::Auto)]
    pub path: FgPathArg,
    /// CSV of delta(t): step, t, re, im, abs; "-" is stdout.
    #[arg(long, value_name = "FILE", default_value = "-")]
    pub out: PathBuf,
    /// Draw |delta| against t on a log axis (.svg or .png).
    #[arg(long, value_name = "FILE")]
    pub plot: Option<PathBuf>,
}

/// "RE" or "RE,IM".
fn parse_complex(text: &str) -> Result<(f64, f64), String> {
    let parts: Vec<f64> = text
        .split(',')
        .map(|p| p.trim().parse::<f64>())
        .collect::<Result<_, _>>()
        .map_err(|e| format!("{e} (expected RE or RE,IM)"))?;
    match parts[..] {
        [re] => Ok((re, 0.0)),
        [re, im] => Ok((re, im)),
        _ => Err("expected RE or RE,IM".into()),
    }
}

/// `re + i im` in precision `T`.
fn complex<T: Float>((re, im): (f64, f64)) -> Complex<T> {
    let (re, im) = (T::from_f64(re), T::from_f64(im));
    Complex { re, im }
}

/// Initial F and G.
type State<T> = (Vec<Complex<T>>, Vec<Complex<T>>);

impl FgProblemArgs {
    fn state<T: Float>(&self) -> Result<State<T>, String> {
        check_room::<Complex<T>>("F and G (2 x --n x --n)", &[2, self.n, self.n])?;
        let elements = self.n * self.n;
        let one = complex((1.0, 0.0));
        Ok(match self.init {
            InitArg::Ones => (vec![one; elements], vec![one; elements]),
            InitArg::Random => {
                let mut rng = Uniform::new(self.seed);
                let mut draw = |_| complex((2.0 * rng.next() - 1.0, 2.0 * rng.next() - 1.0));
                let f = (0..elements).map(&mut draw).collect();
                let g = (0..elements).map(&mut draw).collect();
                (f, g)
            }
        })
    }

    /// The whole run on host slices, on `kp`'s backend.
    fn integrate<T: Float>(
        &self,
        kp: &Kernpack,
        f: &[Complex<T>],
        g: &[Complex<T>],
        opts: &FgOptions,
    ) -> kernpack::Result<FgRun<T>> {
        let (dt, delta0) = (T::from_f64(self.dt), complex(self.delta0));
        kp.fg_integrate(self.n, f, g, delta0, dt, self.steps, opts)
    }

    /// The precision's name in RESULT lines: its --dtype value.
    fn dtype_name(&self) -> String {
        let value = clap::ValueEnum::to_possible_value(&self.dtype);
        value.map_or_else(String::new, |v| v.get_name().to_owned())
    }
}

pub fn run(args: &FgArgs) -> Result<(), String> {
    figures::check_outputs(&[Some(&args.out)], args.plot.as_deref())?;
    let kp = args.at.open()?;
    let opts = FgOptions {
        path: args.path.into(),
    };
    by_dtype!(
        Dtype::from(args.problem.dtype),
        integrate(&kp, &args.problem, &opts, args)
    )
}

fn integrate<T: Float>(
    kp: &Kernpack,
    p: &FgProblemArgs,
    opts: &FgOptions,
    args: &FgArgs,
) -> Result<(), String> {
    let (f, g) = p.state::<T>()?;
    let started = Instant::now();
    let run = p.integrate(kp, &f, &g, opts).map_err(|e| e.to_string())?;
    eprintln!(
        "N = {}, {} steps of dt = {} in {:.3} ms on the {} (host copies included)",
        p.n,
        p.steps,
        p.dt,
        started.elapsed().as_secs_f64() * 1e3,
        kp.backend_name()
    );
    if let Some(k) = run.delta.iter().position(|d| !d.norm().is_finite()) {
        eprintln!("note: |delta| overflows {} from step {k} on", T::NAME);
    }
    let rows = run
        .delta
        .iter()
        .enumerate()
        .map(|(k, d)| format!("{k},{},{},{},{}", k as f64 * p.dt, d.re, d.im, d.norm()));
    write_csv(&args.out, "step,t,re,im,abs", rows)?;
    if let Some(path) = &args.plot {
        let t: Vec<f64> = (0..run.delta.len()).map(|k| k as f64 * p.dt).collect();
        let abs: Vec<f64> = run.delta.iter().map(|d| d.norm().to_f64()).collect();
        let title = format!("the coupled F/G system, N = {}, dt = {}", p.n, p.dt);
        let figure = figures::fg_delta(&title, &t, &abs);
        plot::write(&figure, path)?;
    }
    Ok(())
}

/// `kernpack bench fg`: CUDA-event time of whole runs on device buffers (the
/// state is restored from a pristine copy before each run, outside the
/// timing), after warm-up; median per step, for one path or both. With
/// `--backend cpu`: the CPU backend's whole runs on host slices, wall clock.
pub fn bench(args: &BenchFgArgs) -> BenchResult {
    let (problem, dtype) = (&args.problem, Dtype::from(args.problem.dtype));
    let reps = args.timing.reps();
    if args.timing.on_cpu() {
        return by_dtype!(dtype, bench_cpu(problem, reps));
    }
    let paths = match args.path {
        BenchFgPath::Both => vec![FgPath::Cooperative, FgPath::Launches],
        BenchFgPath::Auto => vec![FgPath::Auto],
        BenchFgPath::Cooperative => vec![FgPath::Cooperative],
        BenchFgPath::Launches => vec![FgPath::Launches],
    };
    for path in paths {
        by_dtype!(dtype, bench_path(problem, path, reps))?;
    }
    Ok(())
}

/// The GPU paths `kernpack bench fg` times.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum BenchFgPath {
    /// The path `auto` picks.
    Auto,
    /// The cooperative path.
    Cooperative,
    /// The launches path.
    Launches,
    /// Both, one after the other.
    Both,
}

/// Whole runs of the coupled F/G system, timed per RK4 step.
#[derive(clap::Args, Debug)]
pub struct BenchFgArgs {
    #[command(flatten)]
    pub problem: FgProblemArgs,
    /// GPU path(s) to time.
    #[arg(long, value_enum, default_value_t = BenchFgPath::Auto)]
    pub path: BenchFgPath,
    #[command(flatten)]
    pub timing: Timing,
}

fn bench_cpu<T: Float>(p: &FgProblemArgs, reps: usize) -> BenchResult {
    let kp = &Kernpack::new(Backend::Cpu)?;
    let (f, g) = p.state::<T>()?;
    let opts = FgOptions::default();
    let median_ms = wall_median(reps, || p.integrate(kp, &f, &g, &opts).map(drop))?;
    say!(
        "RESULT kernpack fg backend=cpu dtype={} n={} steps={} median_ms={median_ms:.4} us_per_step={:.3}",
        p.dtype_name(),
        p.n,
        p.steps,
        median_ms * 1e3 / p.steps.max(1) as f64,
    );
    Ok(())
}

fn bench_path<T: Float>(p: &FgProblemArgs, path: FgPath, reps: usize) -> BenchResult {
    let gpu = Gpu::get(0)?;
    let stream = gpu.stream();
    let opts = FgOptions { path };
    let plan = gpu.fg_plan::<T>(p.n * p.n, &opts)?;
    let (f, g) = p.state::<T>()?;
    let (f, g) = (interleaved(&f), interleaved(&g));
    let (f0, g0) = (stream.clone_htod(f)?, stream.clone_htod(g)?);
    // The state the runs advance: F, G and delta's history.
    let delta = stream.alloc_zeros::<T>(2 * (p.steps + 1))?;
    let mut state = (stream.clone_htod(f)?, stream.clone_htod(g)?, delta);
    let times = event_times(
        stream,
        reps,
        &mut state,
        // Every run starts from the same F and G, restored outside the timing.
        |(df, dg, _)| {
            stream.memcpy_dtod(&f0, df)?;
            Ok(stream.memcpy_dtod(&g0, dg)?)
        },
        |(df, dg, delta)| {
            let (delta0, dt) = (complex(p.delta0), T::from_f64(p.dt));
            let call = FgOnDevice::new(p.n, delta0, dt, p.steps, opts);
            gpu.enqueue_buffers(FgOnDevice::buffers(stream, &call, df, dg, delta)?)
        },
    )?;
    let delta = &state.2;
    let median_ms = times[times.len() / 2];
    let per_step_us = median_ms * 1e3 / p.steps.max(1) as f64;
    let history = complexes(&stream.clone_dtoh(delta)?);
    let plan = match plan {
        FgPlan::Cooperative {
            chunks_per_block,
            blocks,
        } => format!("cooperative,k={chunks_per_block},blocks={blocks}"),
        FgPlan::Launches { blocks } => format!("launches,blocks={blocks}"),
    };
    say!(
        "RESULT kernpack fg path={path:?} plan={plan} dtype={} n={} steps={} median_ms={median_ms:.4} min_ms={:.4} us_per_step={per_step_us:.3}",
        p.dtype_name(),
        p.n,
        p.steps,
        times[0],
    );
    for (k, d) in history.iter().enumerate().skip(1).take(2) {
        say!("DELTA {k} {:e} {:e}", d.re.to_f64(), d.im.to_f64());
    }
    Ok(())
}
