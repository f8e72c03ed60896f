//! `kernpack lorenz63`: a Lorenz 63 ensemble from the command line (CSV of the
//! final and saved states), and `kernpack bench lorenz63`: one whole run on
//! device buffers, CUDA-event median.
use std::path::{Path, PathBuf};
use std::time::Instant;

use kernpack::{
    AdaptiveControl, AdaptiveStatus, Backend, Float, Gpu, Kernpack, Lorenz63AdaptiveEnsemble,
    Lorenz63AdaptiveOnDevice, Lorenz63AdaptiveParams, Lorenz63Ensemble, Lorenz63OnDevice,
    Lorenz63Params, PerMember,
};

use crate::io::{read_table, write_csv};
use crate::memory::check_room;
use crate::options::{cast, Dtype, Placement};
use crate::progress;
use crate::synthetic::Uniform;
use crate::timing::{event_median, wall_median, BenchResult, Timing};

/// Lorenz 63 ensemble: dx/dt = sigma (y - x), dy/dt = x (rho - z) - y, dz/dt = x y - beta z.
#[derive(clap::Args, Debug)]
pub struct Lorenz63Args {
    /// Ensemble size (ignored with --init, whose rows are the members).
    #[arg(long, default_value_t = 1000, value_parser = clap::value_parser!(u32).range(1..))]
    pub members: u32,
    /// RK4 steps.
    #[arg(long, default_value_t = 1000)]
    pub steps: u64,
    /// Time step.
    #[arg(long, default_value_t = 0.01)]
    pub dt: f64,
    /// sigma of every member (unless --params gives one per member).
    #[arg(long, default_value_t = 10.0, allow_negative_numbers = true)]
    pub sigma: f64,
    /// rho of every member.
    #[arg(long, default_value_t = 28.0, allow_negative_numbers = true)]
    pub rho: f64,
    /// beta of every member [default: 8/3].
    #[arg(long, default_value_t = 8.0 / 3.0, allow_negative_numbers = true)]
    pub beta: f64,
    /// Per-member parameters: one row of sigma, rho, beta per member (CSV or
    /// whitespace), replacing --sigma, --rho, --beta.
    #[arg(long, value_name = "FILE")]
    pub params: Option<PathBuf>,
    /// Initial states: one row of x, y, z per member [default: (1, 1, 1) plus --perturb noise].
    #[arg(long, value_name = "FILE")]
    pub init: Option<PathBuf>,
    /// Uniform noise in [-EPS, EPS] added per member and coordinate to the default initial state.
    #[arg(
        long,
        value_name = "EPS",
        default_value_t = 1e-3,
        conflicts_with = "init"
    )]
    pub perturb: f64,
    /// Seed of that noise.
    #[arg(long, default_value_t = 1, conflicts_with = "init")]
    pub seed: u64,
    /// Steps whose states are written too: sorted, unique, each in 0..=steps (e.g. 0,100,500).
    #[arg(long, value_name = "STEPS", value_delimiter = ',')]
    pub save_at: Vec<u64>,
    /// Adaptive steps instead of fixed RK4: Dormand-Prince 5(4) with SciPy RK45's
    /// step control per member, from t = 0 to --t-end (--steps, --dt and --save-at do not apply).
    #[arg(long, conflicts_with_all = ["steps", "dt", "save_at"])]
    pub adaptive: bool,
    /// With --adaptive: the end time.
    #[arg(long, default_value_t = 10.0, requires = "adaptive")]
    pub t_end: f64,
    /// With --adaptive: relative tolerance.
    #[arg(
        long,
        default_value_t = 1e-3,
        requires = "adaptive",
        allow_negative_numbers = true
    )]
    pub rtol: f64,
    /// With --adaptive: absolute tolerance.
    #[arg(
        long,
        default_value_t = 1e-6,
        requires = "adaptive",
        allow_negative_numbers = true
    )]
    pub atol: f64,
    /// With --adaptive: steps attempted per member before it stops.
    #[arg(long, default_value_t = 100_000, requires = "adaptive")]
    pub max_steps: u32,
    /// With --adaptive: times whose states are written too: sorted, unique, in [0, --t-end].
    #[arg(
        long,
        value_name = "TIMES",
        value_delimiter = ',',
        requires = "adaptive"
    )]
    pub save_times: Vec<f64>,
    /// Precision of the computation.
    #[arg(long, value_enum, default_value_t = Dtype::F64)]
    pub dtype: Dtype,
    #[command(flatten)]
    pub at: Placement,
    /// CSV of step, member, x, y, z per row: the saved states, then the final
    /// states; "-" is stdout.
    #[arg(long, value_name = "FILE")]
    pub out: Option<PathBuf>,
}

/// A file of `columns` values per row, for `what`.
fn rows_of(path: &Path, columns: usize, what: &str) -> Result<Vec<Vec<f64>>, String> {
    let rows = read_table(path)?;
    if let Some((r, row)) = rows.iter().enumerate().find(|(_, r)| r.len() != columns) {
        return Err(format!(
            "{}: row {} has {} values, {what} needs {columns}",
            path.display(),
            r + 1,
            row.len()
        ));
    }
    Ok(rows)
}

/// `members` copies of (1, 1, 1), each value plus uniform noise in [-eps, eps].
fn perturbed_states(members: usize, eps: f64, seed: u64) -> Vec<f64> {
    let mut rng = Uniform::new(seed);
    (0..3 * members)
        .map(|_| 1.0 + eps * (2.0 * rng.next() - 1.0))
        .collect()
}

/// The run in precision `T`, the result in f64. `per_member`: sigma, rho,
/// beta columns (members values each), or None for the shared values.
fn integrate<T: Float>(
    kp: &Kernpack,
    shared: &Lorenz63Params<&[f64]>,
    per_member: Option<&[Vec<f64>; 3]>,
    initial: &[f64],
    steps: u64,
    save_at: &[u64],
) -> Result<Lorenz63Ensemble<f64>, String> {
    let columns: Option<[Vec<T>; 3]> = per_member.map(|c| [0, 1, 2].map(|i| cast::<T>(&c[i])));
    let pick = |i: usize, all: &PerMember<&[f64]>| match &columns {
        Some(c) => PerMember::Each(c[i].as_slice()),
        None => PerMember::All(all.all()),
    };
    let p = Lorenz63Params {
        sigma: pick(0, &shared.sigma),
        rho: pick(1, &shared.rho),
        beta: pick(2, &shared.beta),
        dt: shared.dt,
    };
    let run = kp
        .lorenz63(&p, &cast::<T>(initial), steps, save_at)
        .map_err(|e| e.to_string())?;
    let wide = |v: Vec<T>| v.into_iter().map(T::to_f64).collect::<Vec<f64>>();
    Ok(Lorenz63Ensemble {
        members: run.members,
        final_state: wide(run.final_state),
        saved: wide(run.saved),
        save_at: run.save_at,
    })
}

pub fn run(args: &Lorenz63Args) -> Result<(), String> {
    let initial = match &args.init {
        Some(path) => rows_of(path, 3, "a state (x, y, z)")?.concat(),
        None => {
            let members = args.members as usize;
            check_room::<f64>("the initial states (--members x 3)", &[members, 3])?;
            perturbed_states(members, args.perturb, args.seed)
        }
    };
    let members = initial.len() / 3;
    let per_member = match &args.params {
        Some(path) => {
            let rows = rows_of(path, 3, "sigma, rho, beta")?;
            if rows.len() != members {
                return Err(format!(
                    "{}: {} rows of parameters for {members} members",
                    path.display(),
                    rows.len()
                ));
            }
            Some([0, 1, 2].map(|c| rows.iter().map(|r| r[c]).collect::<Vec<f64>>()))
        }
        None => None,
    };
    let shared = Lorenz63Params::<&[f64]> {
        sigma: PerMember::All(args.sigma),
        rho: PerMember::All(args.rho),
        beta: PerMember::All(args.beta),
        dt: args.dt,
    };
    let kp = progress::on_cpu(args.at.open()?, "Lorenz 63 on the CPU");
    if args.adaptive {
        return run_adaptive(args, &kp, &shared, per_member.as_ref(), &initial);
    }
    let started = Instant::now();
    let (steps, save_at) = (args.steps, args.save_at.as_slice());
    let run = by_dtype!(
        args.dtype,
        integrate(&kp, &shared, per_member.as_ref(), &initial, steps, save_at)
    )?;
    eprintln!(
        "Lorenz 63: {members} members x {steps} steps on the {} in {:.1} ms",
        kp.backend_name(),
        started.elapsed().as_secs_f64() * 1e3
    );
    let blown = run.final_state.iter().filter(|v| !v.is_finite()).count();
    if blown > 0 {
        eprintln!(
            "note: {blown} of the {} final values are not finite: the integration \
             diverged (try a smaller --dt)",
            run.final_state.len()
        );
    }
    if let Some(path) = &args.out {
        let frames = run.saved.chunks(3 * members).zip(save_at.iter().copied());
        let all = frames.chain(std::iter::once((run.final_state.as_slice(), steps)));
        let rows = all.flat_map(|(frame, step)| {
            frame
                .chunks(3)
                .enumerate()
                .map(move |(m, z)| format!("{step},{m},{:e},{:e},{:e}", z[0], z[1], z[2]))
        });
        write_csv(path, "step,member,x,y,z", rows)?;
    }
    Ok(())
}

/// As [`integrate`], adaptive (`shared.dt` unused), from t = 0 to `t_end`.
fn integrate_adaptive<T: Float>(
    kp: &Kernpack,
    p: &Lorenz63AdaptiveParams<&[f64]>,
    per_member: Option<&[Vec<f64>; 3]>,
    initial: &[f64],
    save_times: &[f64],
) -> Result<Lorenz63AdaptiveEnsemble<f64>, String> {
    let columns: Option<[Vec<T>; 3]> = per_member.map(|c| [0, 1, 2].map(|i| cast::<T>(&c[i])));
    let pick = |i: usize, all: &PerMember<&[f64]>| match &columns {
        Some(c) => PerMember::Each(c[i].as_slice()),
        None => PerMember::All(all.all()),
    };
    let typed = Lorenz63AdaptiveParams {
        sigma: pick(0, &p.sigma),
        rho: pick(1, &p.rho),
        beta: pick(2, &p.beta),
        t0: p.t0,
        t_end: p.t_end,
        control: p.control,
    };
    let run = kp
        .lorenz63_adaptive(&typed, &cast::<T>(initial), save_times)
        .map_err(|e| e.to_string())?;
    let wide = |v: Vec<T>| v.into_iter().map(T::to_f64).collect::<Vec<f64>>();
    Ok(Lorenz63AdaptiveEnsemble {
        members: run.members,
        final_state: wide(run.final_state),
        saved: wide(run.saved),
        save_times: run.save_times,
        accepted: run.accepted,
        rejected: run.rejected,
        status: run.status,
    })
}

/// `kernpack lorenz63 --adaptive`: the run, a summary of the steps taken, and
/// the CSV of time, member, x, y, z, accepted, rejected, status.
fn run_adaptive(
    args: &Lorenz63Args,
    kp: &Kernpack,
    shared: &Lorenz63Params<&[f64]>,
    per_member: Option<&[Vec<f64>; 3]>,
    initial: &[f64],
) -> Result<(), String> {
    let p = Lorenz63AdaptiveParams {
        sigma: shared.sigma,
        rho: shared.rho,
        beta: shared.beta,
        t0: 0.0,
        t_end: args.t_end,
        control: AdaptiveControl {
            rtol: args.rtol,
            atol: args.atol,
            max_steps: args.max_steps,
            ..AdaptiveControl::default()
        },
    };
    let started = Instant::now();
    let times = args.save_times.as_slice();
    let run = by_dtype!(
        args.dtype,
        integrate_adaptive(kp, &p, per_member, initial, times)
    )?;
    let members = run.members;
    let total: u64 = run.accepted.iter().map(|a| *a as u64).sum();
    let rejected: u64 = run.rejected.iter().map(|a| *a as u64).sum();
    eprintln!(
        "Lorenz 63 (adaptive): {members} members to t = {} on the {} in {:.1} ms; accepted steps {:.1} per member \
         (at most {}), rejected {:.1}",
        args.t_end,
        kp.backend_name(),
        started.elapsed().as_secs_f64() * 1e3,
        total as f64 / members as f64,
        run.accepted.iter().max().copied().unwrap_or(0),
        rejected as f64 / members as f64,
    );
    let stopped = run
        .status
        .iter()
        .filter(|s| **s != AdaptiveStatus::Reached)
        .count();
    if stopped > 0 {
        eprintln!(
            "note: {stopped} of the {members} members stopped before t = {} (status column: 1 out of \
             --max-steps, 2 step size too small)",
            args.t_end
        );
    }
    if let Some(path) = &args.out {
        let frames = run.saved.chunks(3 * members).zip(times.iter().copied());
        let all = frames.chain(std::iter::once((run.final_state.as_slice(), args.t_end)));
        let run = &run;
        let rows = all.flat_map(|(frame, t)| {
            frame.chunks(3).enumerate().map(move |(m, z)| {
                format!(
                    "{t},{m},{:e},{:e},{:e},{},{},{}",
                    z[0], z[1], z[2], run.accepted[m], run.rejected[m], run.status[m] as u32
                )
            })
        });
        write_csv(path, "t,member,x,y,z,accepted,rejected,status", rows)?;
    }
    Ok(())
}

/// Whole Lorenz 63 ensemble runs from (1, 1, 1) plus 1e-3 noise, classic parameters.
#[derive(clap::Args, Debug)]
pub struct BenchLorenz63Args {
    /// Ensemble size.
    #[arg(long, default_value_t = 8_388_608)]
    pub members: usize,
    /// RK4 steps per run.
    #[arg(long, default_value_t = 1000)]
    pub steps: u64,
    /// Time step.
    #[arg(long, default_value_t = 0.01)]
    pub dt: f64,
    /// Per-member sigma, rho, beta arrays (a load per member each) instead of one value for all.
    #[arg(long)]
    pub per_member: bool,
    /// Precision.
    #[arg(long, value_enum, default_value_t = Dtype::F32)]
    pub dtype: Dtype,
    #[command(flatten)]
    pub timing: Timing<10>,
}

/// `kernpack bench lorenz63`: one whole run (all members, all steps, one
/// launch) on device buffers, CUDA-event median after warm-up; on the CPU
/// backend with `--backend cpu`, wall clock.
pub fn bench(args: &BenchLorenz63Args) -> BenchResult {
    by_dtype!(args.dtype, bench_typed(args))
}

fn bench_typed<T: Float>(args: &BenchLorenz63Args) -> BenchResult {
    let (members, steps, reps) = (args.members, args.steps, args.timing.reps());
    check_room::<f64>("the initial states (--members x 3)", &[members, 3, 2])?;
    let host = cast::<T>(&perturbed_states(members, 1e-3, 1));
    let mut rng = Uniform::new(7);
    let mut column = |lo: f64, hi: f64| -> Vec<T> {
        (0..members)
            .map(|_| T::from_f64(lo + (hi - lo) * rng.next()))
            .collect()
    };
    let columns = args
        .per_member
        .then(|| [column(9.5, 10.5), column(27.0, 29.0), column(2.5, 2.8)]);
    let median = if args.timing.on_cpu() {
        let kp = Kernpack::new(Backend::Cpu)?;
        let p = Lorenz63Params {
            sigma: columns
                .as_ref()
                .map_or(PerMember::All(10.0), |c| PerMember::Each(&c[0][..])),
            rho: columns
                .as_ref()
                .map_or(PerMember::All(28.0), |c| PerMember::Each(&c[1][..])),
            beta: columns
                .as_ref()
                .map_or(PerMember::All(8.0 / 3.0), |c| PerMember::Each(&c[2][..])),
            dt: args.dt,
        };
        wall_median(reps, || kp.lorenz63(&p, &host, steps, &[]).map(drop))?
    } else {
        let gpu = Gpu::get(0)?;
        let stream = gpu.stream();
        let d_in = stream.clone_htod(&host)?;
        let mut out = stream.alloc_zeros::<T>(host.len())?;
        let d_columns = match &columns {
            Some(c) => Some([
                stream.clone_htod(&c[0])?,
                stream.clone_htod(&c[1])?,
                stream.clone_htod(&c[2])?,
            ]),
            None => None,
        };
        let p = Lorenz63Params {
            sigma: d_columns
                .as_ref()
                .map_or(PerMember::All(10.0), |c| PerMember::Each(&c[0])),
            rho: d_columns
                .as_ref()
                .map_or(PerMember::All(28.0), |c| PerMember::Each(&c[1])),
            beta: d_columns
                .as_ref()
                .map_or(PerMember::All(8.0 / 3.0), |c| PerMember::Each(&c[2])),
            dt: args.dt,
        };
        let started = Instant::now();
        let mut run = || {
            let call = Lorenz63OnDevice::buffers(stream, &p, &d_in, &mut out, None, steps, &[])?;
            gpu.enqueue_buffers(call)
        };
        run()?;
        stream.synchronize()?;
        eprintln!(
            "first run {:.3} ms (wall clock)",
            started.elapsed().as_secs_f64() * 1e3
        );
        event_median(stream, reps, run)?
    };
    let member_steps = members as f64 * steps as f64;
    // 49 FP instructions per member-step (csrc/lorenz63.cu), FMAs counted once.
    say!(
        "RESULT kernpack lorenz63 backend={} dtype={} members={members} steps={steps} per_member={} median_ms={median:.4} ns_per_member_step={:.6} g_member_steps_per_s={:.2}",
        if args.timing.on_cpu() { "cpu" } else { "gpu" },
        T::NAME,
        args.per_member,
        median * 1e6 / member_steps,
        member_steps / (median * 1e-3) / 1e9
    );
    Ok(())
}

/// The published GPU ODE benchmark's Lorenz 63 ensemble: u0 = (1, 0, 0),
/// sigma = 10, beta = 2.666, rho per member evenly from 0 to 21, t from 0 to
/// `--t-end`, first step 0.001, tolerances 1e-8.
#[derive(clap::Args, Debug)]
pub struct BenchLorenz63AdaptiveArgs {
    /// Ensemble size.
    #[arg(long, default_value_t = 8_388_608)]
    pub members: usize,
    /// End time.
    #[arg(long, default_value_t = 1.0)]
    pub t_end: f64,
    /// Relative and absolute tolerance.
    #[arg(long, default_value_t = 1e-8)]
    pub tol: f64,
    /// The first step (0: chosen per member).
    #[arg(long, default_value_t = 0.001)]
    pub first_step: f64,
    /// Precision.
    #[arg(long, value_enum, default_value_t = Dtype::F32)]
    pub dtype: Dtype,
    #[command(flatten)]
    pub timing: Timing<10>,
}

/// `kernpack bench lorenz63-adaptive`: one whole adaptive run on device
/// buffers (GPU, CUDA-event median after warm-up) or on the CPU backend
/// (wall clock), with the steps the members took.
pub fn bench_adaptive(args: &BenchLorenz63AdaptiveArgs) -> BenchResult {
    by_dtype!(args.dtype, bench_adaptive_typed(args))
}

fn bench_adaptive_typed<T: Float>(args: &BenchLorenz63AdaptiveArgs) -> BenchResult {
    let (members, reps) = (args.members, args.timing.reps());
    check_room::<f64>("the initial states (--members x 3)", &[members, 3, 2])?;
    let host: Vec<T> = (0..members)
        .flat_map(|_| [T::from_f64(1.0), T::default(), T::default()])
        .collect();
    let last = members.saturating_sub(1).max(1) as f64;
    let rho: Vec<T> = (0..members)
        .map(|m| T::from_f64(21.0 * m as f64 / last))
        .collect();
    let control = AdaptiveControl {
        rtol: args.tol,
        atol: args.tol,
        first_step: (args.first_step > 0.0).then_some(args.first_step),
        ..AdaptiveControl::default()
    };
    let (median, accepted, rejected) = if args.timing.on_cpu() {
        let kp = Kernpack::new(Backend::Cpu)?;
        let p = Lorenz63AdaptiveParams {
            sigma: PerMember::All(10.0),
            rho: PerMember::Each(&rho[..]),
            beta: PerMember::All(2.666),
            t0: 0.0,
            t_end: args.t_end,
            control,
        };
        let run = kp.lorenz63_adaptive(&p, &host, &[])?;
        let median = wall_median(reps, || kp.lorenz63_adaptive(&p, &host, &[]).map(drop))?;
        (median, run.accepted, run.rejected)
    } else {
        let gpu = Gpu::get(0)?;
        let stream = gpu.stream();
        let d_in = stream.clone_htod(&host)?;
        let d_rho = stream.clone_htod(&rho)?;
        let mut out = stream.alloc_zeros::<T>(host.len())?;
        let mut stats = stream.alloc_zeros::<u32>(host.len())?;
        let p = Lorenz63AdaptiveParams {
            sigma: PerMember::All(10.0),
            rho: PerMember::Each(&d_rho),
            beta: PerMember::All(2.666),
            t0: 0.0,
            t_end: args.t_end,
            control,
        };
        let started = Instant::now();
        let mut run = || {
            let call = Lorenz63AdaptiveOnDevice::buffers(
                stream,
                &p,
                &d_in,
                &mut out,
                None,
                Some(&mut stats),
                &[],
            )?;
            gpu.enqueue_buffers(call)
        };
        run()?;
        stream.synchronize()?;
        eprintln!(
            "first run {:.3} ms (wall clock)",
            started.elapsed().as_secs_f64() * 1e3
        );
        let median = event_median(stream, reps, run)?;
        let stats = stream.clone_dtoh(&stats)?;
        let column = |c: usize| stats.chunks(3).map(|s| s[c]).collect::<Vec<u32>>();
        (median, column(0), column(1))
    };
    let mean = |v: &[u32]| v.iter().map(|a| *a as f64).sum::<f64>() / v.len().max(1) as f64;
    let max = |v: &[u32]| v.iter().max().copied().unwrap_or(0);
    say!(
        "RESULT kernpack lorenz63-adaptive backend={} dtype={} members={members} t_end={} tol={:e} median_ms={median:.4} accepted_mean={:.1} accepted_max={} rejected_mean={:.2} rejected_max={}",
        if args.timing.on_cpu() { "cpu" } else { "gpu" },
        T::NAME,
        args.t_end,
        args.tol,
        mean(&accepted),
        max(&accepted),
        mean(&rejected),
        max(&rejected),
    );
    Ok(())
}
