//! `kernpack lorenz96` and `kernpack lorenz05`: ensemble runs from the
//! command line, CSV of the final states or the trajectory, Hovmoller plot.
use std::time::Instant;

use std::path::PathBuf;

use kernpack::api::lorenz::{dart_initial_state, EnsembleRun};
use kernpack::{Ensemble, Float, Kernpack, Lorenz05Params, Lorenz96Params, MemberParams};

use crate::io::{read_table, write_csv};
use crate::memory::check_room;
use crate::options::{cast, Dtype, ModelArg, Placement};
use crate::progress;
use crate::synthetic::Uniform;
use crate::{figures, plot};

/// What every ensemble command takes.
#[derive(clap::Args, Debug)]
pub struct EnsembleArgs {
    /// Ensemble size (ignored with --init, whose rows are the members).
    #[arg(long, default_value_t = 40, value_parser = clap::value_parser!(u32).range(1..))]
    pub members: u32,
    /// RK4 steps.
    #[arg(long, default_value_t = 1000)]
    pub steps: u64,
    /// Keep every K-th state (0: the final states only).
    #[arg(long, value_name = "K", default_value_t = 0)]
    pub every: u64,
    /// Keep the states after these steps instead (observation times): sorted, unique, each in
    /// 0..=steps (e.g. 0,100,500).
    #[arg(
        long,
        value_name = "STEPS",
        value_delimiter = ',',
        conflicts_with = "every"
    )]
    pub save_at: Vec<u64>,
    /// Initial states: one row of N values per member (CSV or whitespace)
    /// [default: F at every site, 1.001 F at site 0, plus --perturb noise].
    #[arg(long, value_name = "FILE")]
    pub init: Option<PathBuf>,
    /// Uniform noise in [-EPS, EPS] added per member and site to the default initial state.
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
    /// Precision of the computation.
    #[arg(long, value_enum, default_value_t = Dtype::F64)]
    pub dtype: Dtype,
    #[command(flatten)]
    pub at: Placement,
    /// CSV of step, member, z_0 .. z_{N-1} per row: the trajectory with --every or
    /// --save-at, else the final states; "-" is stdout.
    #[arg(long, value_name = "FILE")]
    pub out: Option<PathBuf>,
    /// Draw the ensemble mean over time (Hovmoller diagram) and the ensemble spread
    /// (.svg or .png; needs --every or --save-at).
    #[arg(long, value_name = "FILE")]
    pub plot: Option<PathBuf>,
}

/// Lorenz 96 ensemble: dX_k/dt = (X_k+1 - X_k-2) X_k-1 - X_k + F.
#[derive(clap::Args, Debug)]
pub struct Lorenz96Args {
    /// Sites.
    #[arg(long, default_value_t = Lorenz96Params::default().n)]
    pub n: usize,
    /// Forcing F.
    #[arg(long, default_value_t = Lorenz96Params::default().forcing)]
    pub forcing: f64,
    /// Time step.
    #[arg(long, default_value_t = Lorenz96Params::default().dt)]
    pub dt: f64,
    #[command(flatten)]
    pub ensemble: EnsembleArgs,
}

/// Lorenz 2005 Model II / III ensemble (the defaults are DART's Lorenz 04 settings).
#[derive(clap::Args, Debug)]
pub struct Lorenz05Args {
    /// Model number.
    #[arg(long, value_enum, default_value_t = ModelArg::Three)]
    pub model: ModelArg,
    /// Sites.
    #[arg(long, default_value_t = Lorenz05Params::default().n)]
    pub n: usize,
    /// Forcing F.
    #[arg(long, default_value_t = Lorenz05Params::default().forcing)]
    pub forcing: f64,
    /// Smoothing half-width K of the large-scale advection.
    #[arg(long, default_value_t = Lorenz05Params::default().k)]
    pub k: usize,
    /// Half-width J of the scale-separating filter (Model III).
    #[arg(long, default_value_t = Lorenz05Params::default().j)]
    pub j: usize,
    /// Amplitude ratio b of the small scales (Model III).
    #[arg(long, default_value_t = Lorenz05Params::default().b)]
    pub b: f64,
    /// Coupling c (Model III).
    #[arg(long, default_value_t = Lorenz05Params::default().c)]
    pub c: f64,
    /// Time step.
    #[arg(long, default_value_t = Lorenz05Params::default().dt)]
    pub dt: f64,
    /// Per-member parameters: one row per member (CSV or whitespace) of F, or
    /// of F, b, c, replacing --forcing (and --b, --c) for that member.
    #[arg(long, value_name = "FILE", alias = "forcing-file")]
    pub params: Option<PathBuf>,
    #[command(flatten)]
    pub ensemble: EnsembleArgs,
}

pub fn lorenz96(args: &Lorenz96Args) -> Result<(), String> {
    let p = Lorenz96Params {
        n: args.n,
        forcing: args.forcing,
        dt: args.dt,
        ..Default::default()
    };
    run(&args.ensemble, &Model::L96(p), None)
}

pub fn lorenz05(args: &Lorenz05Args) -> Result<(), String> {
    let p = Lorenz05Params {
        n: args.n,
        forcing: args.forcing,
        k: args.k,
        j: args.j,
        b: args.b,
        c: args.c,
        dt: args.dt,
        model: args.model.into(),
    };
    run(&args.ensemble, &Model::L05(p), args.params.as_deref())
}

/// Per-member F (and b, c) of `members` members from `path`: one row per
/// member of 1 (F) or 3 (F, b, c) values; the columns given.
fn per_member_params(path: &std::path::Path, members: usize) -> Result<Vec<Vec<f64>>, String> {
    let rows = read_table(path)?;
    let width = rows.first().map_or(0, Vec::len);
    if rows.len() != members {
        return Err(format!(
            "{}: {} rows of parameters for {members} members",
            path.display(),
            rows.len()
        ));
    }
    if let Some((r, row)) = rows
        .iter()
        .enumerate()
        .find(|(_, r)| r.len() != width || !(width == 1 || width == 3))
    {
        return Err(format!(
            "{}: row {} has {} values: each row holds F, or F, b, c",
            path.display(),
            r + 1,
            row.len()
        ));
    }
    Ok((0..width)
        .map(|c| rows.iter().map(|r| r[c]).collect())
        .collect())
}

/// A model the ensemble commands integrate.
enum Model {
    L96(Lorenz96Params),
    L05(Lorenz05Params),
}

impl Model {
    /// (sites, forcing, time step, name).
    fn describe(&self) -> (usize, f64, f64, String) {
        match self {
            Model::L96(p) => (p.n, p.forcing, p.dt, "Lorenz 96".into()),
            Model::L05(p) => {
                let name = format!("Lorenz 2005 Model {:?}", p.model);
                (p.n, p.forcing, p.dt, name)
            }
        }
    }
}

/// `model` integrated in precision `T`, the result in f64; `columns`: the
/// per-member F (and b, c) of Lorenz 2005, none for the scalars.
fn integrate<T: Float>(
    model: &Model,
    kp: &Kernpack,
    initial: &[f64],
    columns: &[Vec<f64>],
    steps: u64,
    (every, save_at): (u64, &[u64]),
) -> Result<Ensemble<f64>, String> {
    let z = cast::<T>(initial);
    let columns: Vec<Vec<T>> = columns.iter().map(|c| cast::<T>(c)).collect();
    let column = |i: usize| columns.get(i).map(Vec::as_slice);
    let each = MemberParams {
        forcing: column(0),
        b: column(1),
        c: column(2),
    };
    let initial = &z;
    let run = match model {
        Model::L96(p) => kp.run(EnsembleRun {
            params: p,
            each: MemberParams::default(),
            initial,
            steps,
            every,
            save_at,
        }),
        Model::L05(p) => kp.run(EnsembleRun {
            params: p,
            each,
            initial,
            steps,
            every,
            save_at,
        }),
    }
    .map_err(|e| e.to_string())?;
    let wide = |v: Vec<T>| v.into_iter().map(T::to_f64).collect::<Vec<f64>>();
    Ok(Ensemble {
        members: run.members,
        n: run.n,
        final_state: wide(run.final_state),
        trajectory: run.trajectory.map(wide),
        every: run.every,
        save_at: run.save_at,
    })
}

/// `members` copies of DART's initial state of `n` sites under `forcing`,
/// each value plus uniform noise in [-eps, eps] drawn from `seed`.
pub fn perturbed_states(members: usize, n: usize, forcing: f64, eps: f64, seed: u64) -> Vec<f64> {
    let mut rng = Uniform::new(seed);
    let base = dart_initial_state(n, forcing);
    let noise = |v: &f64| v + eps * (2.0 * rng.next() - 1.0);
    base.iter().cycle().take(members * n).map(noise).collect()
}

fn run(args: &EnsembleArgs, model: &Model, params: Option<&std::path::Path>) -> Result<(), String> {
    let (n, forcing, dt, name) = model.describe();
    let (steps, every, save_at) = (args.steps, args.every, args.save_at.as_slice());
    if args.plot.is_some() && every == 0 && save_at.is_empty() {
        return Err(
            "--plot draws the trajectory: give --every K (K > 0) or --save-at as well".into(),
        );
    }
    figures::check_outputs(&[args.out.as_deref()], args.plot.as_deref())?;
    let initial = match &args.init {
        Some(path) => {
            let rows = read_table(path)?;
            if let Some((r, row)) = rows.iter().enumerate().find(|(_, r)| r.len() != n) {
                return Err(format!(
                    "{}: row {} has {} values, N = {n}",
                    path.display(),
                    r + 1,
                    row.len()
                ));
            }
            rows.concat()
        }
        None => {
            let members = args.members as usize;
            check_room::<f64>("the initial states (--members x --n)", &[members, n])?;
            perturbed_states(members, n, forcing, args.perturb, args.seed)
        }
    };
    let columns = match params {
        Some(path) => per_member_params(path, initial.len() / n.max(1))?,
        None => Vec::new(),
    };
    let kp = progress::on_cpu(args.at.open()?, &format!("{name} on the CPU"));
    let started = Instant::now();
    let frames = (every, save_at);
    let run = by_dtype!(
        args.dtype,
        integrate(model, &kp, &initial, &columns, steps, frames)
    )?;
    eprintln!(
        "{name}: {} members x {steps} steps (N = {n}) on the {} in {:.1} ms",
        run.members,
        kp.backend_name(),
        started.elapsed().as_secs_f64() * 1e3
    );
    // An unstable step (dt too large for the forcing) ends in inf/NaN: say
    // so rather than hand back a table of NaN with success alone.
    let blown = run.final_state.iter().filter(|v| !v.is_finite()).count();
    if blown > 0 {
        eprintln!(
            "note: {blown} of the {} final values are not finite: the integration \
             diverged (try a smaller --dt)",
            run.final_state.len()
        );
    }
    let members = run.members;
    if let Some(path) = &args.out {
        let values = run.trajectory.as_deref().unwrap_or(&run.final_state);
        let step_of = |frame: usize| match run.trajectory {
            Some(_) if !save_at.is_empty() => save_at[frame],
            Some(_) => frame as u64 * every,
            None => steps,
        };
        let header = (0..n).fold("step,member".to_owned(), |h, i| h + &format!(",z_{i}"));
        let rows = values.chunks(n).enumerate().map(|(row, z)| {
            let line = format!("{},{}", step_of(row / members), row % members);
            z.iter().fold(line, |line, v| line + &format!(",{v:e}"))
        });
        write_csv(path, &header, rows)?;
    }
    // --every K > 0 or --save-at (checked above): the trajectory is there.
    if let (Some(path), Some(traj)) = (&args.plot, &run.trajectory) {
        let frames = run.frames();
        let (mean, spread) = figures::ensemble_spread(traj, frames, members, n);
        let step = |f: usize| save_at.get(f).copied().unwrap_or(f as u64 * every);
        let times: Vec<f64> = (0..frames).map(|f| step(f) as f64 * dt).collect();
        let title = format!(
            "{name}: ensemble of {members}, t = 0 .. {}",
            steps as f64 * dt
        );
        let figure = figures::lorenz(&title, frames, n, &mean, &times, &spread);
        plot::write(&figure, path)?;
    }
    Ok(())
}
