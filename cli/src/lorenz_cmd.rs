//! `kernpack lorenz96` and `kernpack lorenz05`: ensemble runs from the
//! command line, CSV of the final states or the trajectory, Hovmoller plot.
use std::time::Instant;

use kernpack::api::lorenz::dart_initial_state;
use kernpack::{Backend, Ensemble, Float, Kernpack, Lorenz05Model, Lorenz05Params, Lorenz96Params};

use crate::args::Args;
use crate::figures;
use crate::io::{read_table, write_csv};
use crate::synthetic::Uniform;

const COMMON: &str = "\
  --members M           ensemble size (default 40)
  --steps S             RK4 steps (default 1000)
  --every K             keep every K-th state (0: final states only; default 0)
  --init FILE           initial states: M rows of N values (CSV or whitespace); default:
                        DART's state (F everywhere, 1.001 F at site 0) plus --perturb noise
  --perturb EPS         uniform noise in [-EPS, EPS] added per member and site (default 1e-3)
  --seed S              seed of the noise (default 1)
  --dtype f32|f64       precision (default f64)
  --backend auto|gpu|cpu  (default auto)
  --out FILE            CSV: step, member, z_0 .. z_{N-1} per row (the trajectory with --every,
                        else the final states); \"-\" for stdout
  --plot FILE.svg|png   Hovmoller diagram of the ensemble mean (time down, site across) above
                        the ensemble spread against time (needs --every)";

pub fn help96() -> String {
    format!(
        "kernpack lorenz96 [options]   Lorenz 96 ensemble, dX_k/dt = (X_k+1 - X_k-2) X_k-1 - X_k + F\n  \
         --n N --forcing F --dt DT   (defaults 40, 8, 0.05)\n{COMMON}"
    )
}

pub fn help05() -> String {
    format!(
        "kernpack lorenz05 [options]   Lorenz (2005) Model II / III ensemble (DART's Lorenz 04)\n  \
         --model 2|3 --n N --forcing F --k K --j J --b B --c C --dt DT\n  \
         (DART defaults: 3, 960, 15, 32, 12, 10, 3.0, 0.001)\n{COMMON}"
    )
}

const VALUED: &[&str] = &[
    "members", "steps", "every", "init", "perturb", "seed", "dtype", "backend", "out", "plot", "n",
    "forcing", "dt", "k", "j", "b", "c", "model",
];

pub fn lorenz96(raw: &[String]) -> Result<(), String> {
    let args = Args::parse(raw, &VALUED[..13], &[])?;
    let d = Lorenz96Params::default();
    let p = Lorenz96Params {
        n: args.get_or("n", d.n)?,
        forcing: args.get_or("forcing", d.forcing)?,
        dt: args.get_or("dt", d.dt)?,
    };
    run(
        &args,
        p.n,
        p.forcing,
        p.dt,
        "Lorenz 96",
        |kp, z, steps, every, f32| {
            if f32 {
                widen(kp.lorenz96::<f32>(&p, &narrow(z), steps, every))
            } else {
                kp.lorenz96::<f64>(&p, z, steps, every)
                    .map_err(|e| e.to_string())
            }
        },
    )
}

pub fn lorenz05(raw: &[String]) -> Result<(), String> {
    let args = Args::parse(raw, VALUED, &[])?;
    let d = Lorenz05Params::default();
    let p = Lorenz05Params {
        n: args.get_or("n", d.n)?,
        forcing: args.get_or("forcing", d.forcing)?,
        k: args.get_or("k", d.k)?,
        j: args.get_or("j", d.j)?,
        b: args.get_or("b", d.b)?,
        c: args.get_or("c", d.c)?,
        dt: args.get_or("dt", d.dt)?,
        model: args.get_or("model", Lorenz05Model::III)?,
    };
    let name = if p.model == Lorenz05Model::III {
        "Lorenz 2005 Model III"
    } else {
        "Lorenz 2005 Model II"
    };
    run(
        &args,
        p.n,
        p.forcing,
        p.dt,
        name,
        |kp, z, steps, every, f32| {
            if f32 {
                widen(kp.lorenz05::<f32>(&p, &narrow(z), steps, every))
            } else {
                kp.lorenz05::<f64>(&p, z, steps, every)
                    .map_err(|e| e.to_string())
            }
        },
    )
}

fn narrow(z: &[f64]) -> Vec<f32> {
    z.iter().map(|v| *v as f32).collect()
}

fn widen(r: kernpack::Result<Ensemble<f32>>) -> Result<Ensemble<f64>, String> {
    let r = r.map_err(|e| e.to_string())?;
    let wide = |v: Vec<f32>| v.into_iter().map(|x| x.to_f64()).collect::<Vec<f64>>();
    Ok(Ensemble {
        members: r.members,
        n: r.n,
        final_state: wide(r.final_state),
        trajectory: r.trajectory.map(wide),
        every: r.every,
    })
}

type Integrate<'a> =
    dyn Fn(&Kernpack, &[f64], u64, u64, bool) -> Result<Ensemble<f64>, String> + 'a;

fn run(
    args: &Args,
    n: usize,
    forcing: f64,
    dt: f64,
    name: &str,
    integrate: impl Fn(&Kernpack, &[f64], u64, u64, bool) -> Result<Ensemble<f64>, String>,
) -> Result<(), String> {
    let integrate: &Integrate<'_> = &integrate;
    let (steps, every): (u64, u64) = (args.get_or("steps", 1000)?, args.get_or("every", 0)?);
    let initial = match args.str("init") {
        Some(path) => {
            let rows = read_table(path)?;
            if let Some((r, row)) = rows.iter().enumerate().find(|(_, r)| r.len() != n) {
                return Err(format!(
                    "{path}: row {} has {} values, N = {n}",
                    r + 1,
                    row.len()
                ));
            }
            rows.concat()
        }
        None => {
            let members: usize = args.get_or("members", 40)?;
            let eps: f64 = args.get_or("perturb", 1e-3)?;
            let mut rng = Uniform::new(args.get_or("seed", 1)?);
            let base = dart_initial_state(n, forcing);
            (0..members)
                .flat_map(|_| {
                    base.iter()
                        .map(|v| v + eps * (2.0 * rng.next() - 1.0))
                        .collect::<Vec<_>>()
                })
                .collect()
        }
    };
    let f32 = match args.str("dtype").unwrap_or("f64") {
        "f32" => true,
        "f64" => false,
        other => return Err(format!("--dtype {other:?}: expected f32 or f64")),
    };
    let kp = Kernpack::new(args.get_or("backend", Backend::Auto)?).map_err(|e| e.to_string())?;
    let started = Instant::now();
    let run = integrate(&kp, &initial, steps, every, f32)?;
    eprintln!(
        "{name}: {} members x {steps} steps (N = {n}) on the {} in {:.1} ms",
        run.members,
        kp.backend_name(),
        started.elapsed().as_secs_f64() * 1e3
    );
    let (members, len) = (run.members, run.members * n);
    if let Some(path) = args.str("out") {
        let (values, step_of): (&[f64], Box<dyn Fn(usize) -> u64>) = match &run.trajectory {
            Some(t) => (t, Box::new(move |frame| frame as u64 * every)),
            None => (&run.final_state, Box::new(move |_| steps)),
        };
        let header = std::iter::once("step,member".to_owned())
            .chain((0..n).map(|i| format!("z_{i}")))
            .collect::<Vec<_>>()
            .join(",");
        let rows = values.chunks(n).enumerate().map(|(row, z)| {
            let mut line = format!("{},{}", step_of(row / members), row % members);
            for v in z {
                line.push(',');
                line.push_str(&format!("{v:e}"));
            }
            line
        });
        write_csv(path, &header, rows)?;
    }
    if let Some(path) = args.str("plot") {
        let traj = run
            .trajectory
            .as_ref()
            .ok_or("--plot needs a trajectory: give --every K")?;
        let frames = traj.len() / len;
        let (mean, spread) = figures::ensemble_spread(traj, frames, members, n);
        let times: Vec<f64> = (0..frames)
            .map(|f| (f as u64 * every) as f64 * dt)
            .collect();
        let title = format!(
            "{name}: ensemble of {members} members, N = {n}, t = 0 .. {}",
            steps as f64 * dt
        );
        let figure = figures::lorenz(&title, frames, n, &mean, &times, &spread);
        figures::write(&figure, std::path::Path::new(path)).map_err(|e| format!("{path}: {e}"))?;
        eprintln!("plot written to {path}");
    }
    Ok(())
}
