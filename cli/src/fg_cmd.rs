//! `kernpack fg`: integrate the coupled F/G system of seed 001 and write
//! delta(t); `kernpack bench fg`: time it per step with CUDA events.
use std::time::Instant;

use cudarc::driver::sys::CUevent_flags;
use kernpack::api::fg::{complexes, interleaved, FgPlan};
use kernpack::{Backend, Complex, FgOptions, FgPath, FgRun, Float, Gpu, Kernpack};

use crate::args::Args;
use crate::figures;
use crate::io::write_csv;
use crate::synthetic::Uniform;

pub const HELP: &str = "\
kernpack fg: RK4 of dF/dt = -2i F - i delta (2G - 1), dG/dt = -i (conj(delta) F - delta conj(F))
over N x N complex F, G, with delta = sum(F) after every step (seed 001, MODELS.md section 1)

options:
  --n N                 matrix size (default 512)
  --steps S             RK4 steps (default 100)
  --dt DT               step (default 1e-4)
  --dtype c64|c128      precision (default c64)
  --init ones|random    F = G = 1 (the seed case, default) or uniform parts in [-1, 1]
  --seed S              seed of --init random
  --delta0 RE,IM        initial delta (default 1,0)
  --backend auto|gpu|cpu
  --path auto|cooperative|launches   GPU path (default auto)
  --out FILE.csv        delta(t) as step,t,re,im,abs (default: stdout)
  --plot FILE.svg|png   |delta| against t on a log axis";

struct Problem {
    n: usize,
    steps: usize,
    dt: f64,
    delta0: (f64, f64),
    random: Option<u64>,
}

impl Problem {
    fn from(args: &Args) -> Result<Problem, String> {
        let delta0 = match args.str("delta0") {
            None => (1.0, 0.0),
            Some(text) => {
                let parts: Vec<f64> = text
                    .split(',')
                    .map(|p| p.trim().parse::<f64>())
                    .collect::<Result<_, _>>()
                    .map_err(|e| format!("--delta0 {text:?}: {e}"))?;
                match parts[..] {
                    [re] => (re, 0.0),
                    [re, im] => (re, im),
                    _ => return Err(format!("--delta0 {text:?}: expected RE or RE,IM")),
                }
            }
        };
        let random = match args.str("init").unwrap_or("ones") {
            "ones" => None,
            "random" => Some(args.get_or("seed", 1u64)?),
            other => return Err(format!("--init {other:?}: expected ones or random")),
        };
        Ok(Problem {
            n: args.get_or("n", 512)?,
            steps: args.get_or("steps", 100)?,
            dt: args.get_or("dt", 1e-4)?,
            delta0,
            random,
        })
    }

    fn state<T: Float>(&self) -> (Vec<Complex<T>>, Vec<Complex<T>>) {
        let elements = self.n * self.n;
        let one = Complex {
            re: T::from_f64(1.0),
            im: T::from_f64(0.0),
        };
        match self.random {
            None => (vec![one; elements], vec![one; elements]),
            Some(seed) => {
                let mut rng = Uniform::new(seed);
                let mut draw = |_| Complex {
                    re: T::from_f64(2.0 * rng.next() - 1.0),
                    im: T::from_f64(2.0 * rng.next() - 1.0),
                };
                let f = (0..elements).map(&mut draw).collect();
                let g = (0..elements).map(&mut draw).collect();
                (f, g)
            }
        }
    }

    fn delta0<T: Float>(&self) -> Complex<T> {
        Complex {
            re: T::from_f64(self.delta0.0),
            im: T::from_f64(self.delta0.1),
        }
    }

    /// The whole run on host slices, on `kp`'s backend.
    fn integrate<T: Float>(
        &self,
        kp: &Kernpack,
        f: &[Complex<T>],
        g: &[Complex<T>],
        opts: &FgOptions,
    ) -> kernpack::Result<FgRun<T>> {
        let (dt, delta0) = (T::from_f64(self.dt), self.delta0::<T>());
        kp.fg_integrate(self.n, f, g, delta0, dt, self.steps, opts)
    }
}

fn path(args: &Args) -> Result<FgPath, String> {
    args.get_or("path", FgPath::Auto)
}

pub fn run(raw: &[String]) -> Result<(), String> {
    let args = Args::parse(
        raw,
        &[
            "n", "steps", "dt", "dtype", "init", "seed", "delta0", "backend", "path", "out", "plot",
        ],
        &[],
    )?;
    let problem = Problem::from(&args)?;
    let backend: Backend = args
        .get_or("backend", Backend::Auto)
        .map_err(|e| e.to_string())?;
    let kp = Kernpack::new(backend).map_err(|e| e.to_string())?;
    let opts = FgOptions { path: path(&args)? };
    match args.str("dtype").unwrap_or("c64") {
        "c64" => integrate::<f32>(&kp, &problem, &opts, &args),
        "c128" => integrate::<f64>(&kp, &problem, &opts, &args),
        other => Err(format!("--dtype {other:?}: expected c64 or c128")),
    }
}

fn integrate<T: Float>(
    kp: &Kernpack,
    p: &Problem,
    opts: &FgOptions,
    args: &Args,
) -> Result<(), String> {
    let (f, g) = p.state::<T>();
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
    write_csv(args.str("out").unwrap_or("-"), "step,t,re,im,abs", rows)?;
    if let Some(path) = args.str("plot") {
        let t: Vec<f64> = (0..run.delta.len()).map(|k| k as f64 * p.dt).collect();
        let abs: Vec<f64> = run.delta.iter().map(|d| d.norm()).collect();
        let title = format!("the coupled F/G system, N = {}, dt = {}", p.n, p.dt);
        let figure = figures::fg_delta(&title, &t, &abs);
        figures::write(&figure, std::path::Path::new(path)).map_err(|e| format!("{path}: {e}"))?;
        eprintln!("plot written to {path}");
    }
    Ok(())
}

/// `kernpack bench fg`: CUDA-event time of whole runs on device buffers (the
/// state is restored from a pristine copy before each run, outside the
/// timing), after warm-up; median per step, for one path or both. With
/// `--backend cpu`: the CPU backend's whole runs on host slices, wall clock.
pub fn bench(raw: &[String]) -> Result<(), String> {
    let args = Args::parse(
        raw,
        &[
            "n", "steps", "dt", "dtype", "init", "seed", "delta0", "path", "reps", "backend",
        ],
        &[],
    )?;
    let problem = Problem::from(&args)?;
    let reps: usize = args.get_or("reps", 20)?;
    match args.str("backend").unwrap_or("gpu") {
        "gpu" => {}
        "cpu" => {
            return match args.str("dtype").unwrap_or("c64") {
                "c64" => bench_cpu::<f32>(&problem, reps),
                "c128" => bench_cpu::<f64>(&problem, reps),
                other => Err(format!("--dtype {other:?}: expected c64 or c128")),
            }
        }
        other => return Err(format!("--backend {other:?}: expected gpu or cpu")),
    }
    let paths = match args.str("path") {
        Some("both") => vec![FgPath::Cooperative, FgPath::Launches],
        _ => vec![path(&args)?],
    };
    for path in paths {
        match args.str("dtype").unwrap_or("c64") {
            "c64" => bench_path::<f32>(&problem, path, reps)?,
            "c128" => bench_path::<f64>(&problem, path, reps)?,
            other => return Err(format!("--dtype {other:?}: expected c64 or c128")),
        }
    }
    Ok(())
}

fn bench_cpu<T: Float>(p: &Problem, reps: usize) -> Result<(), String> {
    let kp = &Kernpack::new(Backend::Cpu).map_err(|e| e.to_string())?;
    let (f, g) = p.state::<T>();
    let opts = FgOptions::default();
    let median_ms = crate::bench::wall_median(reps, || p.integrate(kp, &f, &g, &opts).map(drop))?;
    println!(
        "RESULT kernpack fg backend=cpu dtype={} n={} steps={} median_ms={median_ms:.4} us_per_step={:.3}",
        if T::NAME == "f32" { "c64" } else { "c128" },
        p.n,
        p.steps,
        median_ms * 1e3 / p.steps.max(1) as f64,
    );
    Ok(())
}

fn bench_path<T: Float>(p: &Problem, path: FgPath, reps: usize) -> Result<(), String> {
    let cuda = |e: cudarc::driver::DriverError| e.to_string();
    let err = |e: kernpack::Error| e.to_string();
    let gpu = Gpu::get(0).map_err(err)?;
    let stream = gpu.stream();
    let opts = FgOptions { path };
    let plan = gpu.fg_plan::<T>(p.n * p.n, &opts).map_err(err)?;
    let (f, g) = p.state::<T>();
    let (f0, g0) = (
        stream.clone_htod(interleaved(&f)).map_err(cuda)?,
        stream.clone_htod(interleaved(&g)).map_err(cuda)?,
    );
    let (mut df, mut dg) = (
        stream.clone_htod(interleaved(&f)).map_err(cuda)?,
        stream.clone_htod(interleaved(&g)).map_err(cuda)?,
    );
    let mut delta = stream.alloc_zeros::<T>(2 * (p.steps + 1)).map_err(cuda)?;
    let ctx = gpu.context();
    let start = ctx
        .new_event(Some(CUevent_flags::CU_EVENT_DEFAULT))
        .map_err(cuda)?;
    let stop = ctx
        .new_event(Some(CUevent_flags::CU_EVENT_DEFAULT))
        .map_err(cuda)?;
    let mut times = Vec::with_capacity(reps);
    for rep in 0..reps + 3 {
        stream.memcpy_dtod(&f0, &mut df).map_err(cuda)?;
        stream.memcpy_dtod(&g0, &mut dg).map_err(cuda)?;
        start.record(stream).map_err(cuda)?;
        gpu.fg_integrate_device(
            stream,
            p.n,
            &mut df,
            &mut dg,
            p.delta0::<T>(),
            T::from_f64(p.dt),
            p.steps,
            &mut delta,
            &opts,
        )
        .map_err(err)?;
        stop.record(stream).map_err(cuda)?;
        stop.synchronize().map_err(cuda)?;
        if rep >= 3 {
            times.push(start.elapsed_ms(&stop).map_err(cuda)? as f64);
        }
    }
    times.sort_by(f64::total_cmp);
    let median_ms = times[times.len() / 2];
    let per_step_us = median_ms * 1e3 / p.steps.max(1) as f64;
    let history = complexes(&stream.clone_dtoh(&delta).map_err(cuda)?);
    let plan = match plan {
        FgPlan::Cooperative {
            chunks_per_block,
            blocks,
        } => format!("cooperative,k={chunks_per_block},blocks={blocks}"),
        FgPlan::Launches { blocks } => format!("launches,blocks={blocks}"),
    };
    println!(
        "RESULT kernpack fg path={path:?} plan={plan} dtype={} n={} steps={} median_ms={median_ms:.4} min_ms={:.4} us_per_step={per_step_us:.3}",
        if T::NAME == "f32" { "c64" } else { "c128" },
        p.n,
        p.steps,
        times[0],
    );
    for (k, d) in history.iter().enumerate().skip(1).take(2) {
        println!("DELTA {k} {:e} {:e}", d.re.to_f64(), d.im.to_f64());
    }
    Ok(())
}
