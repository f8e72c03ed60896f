//! The `kernpack` command: `info`, `lombscargle`, `demo`, `bench`.
mod args;
mod batch_cmd;
mod bench;
mod bench_box;
mod bench_streams;
mod fg_cmd;
mod figures;
mod info;
mod io;
mod lombscargle_cmd;
mod lorenz_cmd;
mod plot;
mod synthetic;

const USAGE: &str = "\
kernpack: precompiled CUDA kernels (no JIT), with a CPU fallback

usage:
  kernpack info                      devices, fatbin contents, SASS vs JIT per kernel
  kernpack demo [--plot FILE] [--backend B]
                                     recover the period of a synthetic light curve and plot it
  kernpack lombscargle INPUT [...]   periodogram of a time series (kernpack lombscargle --help)
  kernpack lombscargle-batch INPUT [...]
                                     many series (an id column) in one launch, best period of each
  kernpack lorenz96 [...]            Lorenz 96 ensemble, all members and steps in one launch
  kernpack lorenz05 [...]            Lorenz 2005 Model II / III ensemble (DART's Lorenz 04)
  kernpack fg [--n N --steps S --dt DT ...]
                                     the coupled F/G system of seed 001: delta(t) as CSV (kernpack fg --help)
  kernpack bench fg|lorenz96|lorenz05 [...]
                                     whole ODE runs timed with CUDA events (bench fg --path both)
  kernpack bench lombscargle|lombscargle-batch|reduce|box-filter [...]
                                     time the kernels with CUDA events
  kernpack bench normalize-streams [--arrays 10 --n 10000000 --streams 1,10]
                                     seed 004: copy in, normalise, copy out on 1 vs k streams, with a timeline
  kernpack bench normalize-batched [--arrays 1000 --n 10000]
                                     one batched normalise call against a loop of single calls";

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let result = match args.first().map(String::as_str) {
        Some("info") => info::run(),
        Some("demo") => lombscargle_cmd::demo(&args[1..]),
        Some("lombscargle") if args.iter().any(|a| a == "--help" || a == "-h") => {
            println!("{}", lombscargle_cmd::HELP);
            Ok(())
        }
        Some("lombscargle") => lombscargle_cmd::lombscargle(&args[1..]),
        Some("lombscargle-batch") if args.iter().any(|a| a == "--help" || a == "-h") => {
            println!("{}", batch_cmd::HELP);
            Ok(())
        }
        Some("lombscargle-batch") => batch_cmd::run(&args[1..]),
        Some("lorenz96") if args.iter().any(|a| a == "--help" || a == "-h") => {
            println!("{}", lorenz_cmd::help96());
            Ok(())
        }
        Some("lorenz96") => lorenz_cmd::lorenz96(&args[1..]),
        Some("lorenz05") if args.iter().any(|a| a == "--help" || a == "-h") => {
            println!("{}", lorenz_cmd::help05());
            Ok(())
        }
        Some("lorenz05") => lorenz_cmd::lorenz05(&args[1..]),
        Some("fg") if args.iter().any(|a| a == "--help" || a == "-h") => {
            println!("{}", fg_cmd::HELP);
            Ok(())
        }
        Some("fg") => fg_cmd::run(&args[1..]),
        Some("bench") => bench::run(&args[1..]),
        Some("--help" | "-h" | "help") => {
            println!("{USAGE}");
            Ok(())
        }
        Some(other) => Err(format!("unknown command {other:?}\n{USAGE}")),
        None => Err(USAGE.to_owned()),
    };
    if let Err(message) = result {
        eprintln!("kernpack: {message}");
        std::process::exit(2);
    }
}
