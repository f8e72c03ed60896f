//! The `kernpack` command: periodograms, ODE ensembles and benchmarks from the
//! shell, on the GPU when there is one and on the CPU otherwise.

/// `println!` for a command's report on stdout, which never panics: see [`report`].
macro_rules! say {
    ($($arg:tt)*) => {
        $crate::report(format_args!("{}\n", format_args!($($arg)*)))
    };
}

/// `$f::<f32>(args)` or `$f::<f64>(args)`, as the [`options::Dtype`] `$dtype` says.
macro_rules! by_dtype {
    ($dtype:expr, $f:ident($($arg:expr),* $(,)?)) => {
        match $dtype {
            $crate::options::Dtype::F32 => $f::<f32>($($arg),*),
            $crate::options::Dtype::F64 => $f::<f64>($($arg),*),
        }
    };
}

/// A clap value enum with a variant for each variant of the library's enum
/// `$target` (its values and their help listed by clap), and the conversion.
macro_rules! value_enum {
    ($(#[$meta:meta])* $name:ident => $target:ident {
        $($(#[$vmeta:meta])* $variant:ident => $to:ident,)*
    }) => {
        $(#[$meta])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
        pub enum $name {
            $($(#[$vmeta])* $variant,)*
        }

        impl From<$name> for $target {
            fn from(v: $name) -> $target {
                match v {
                    $($name::$variant => $target::$to,)*
                }
            }
        }
    };
}

mod batch_cmd;
mod bench;
mod bench_bls;
mod bench_box;
mod bench_cmd;
mod bench_fap;
mod bench_fold;
mod bench_gaussian;
mod bench_median;
mod bench_streams;
mod bench_uniform;
mod bls_cmd;
mod fg_cmd;
mod figures;
mod info;
mod io;
mod lombscargle_cmd;
mod lorenz63_cmd;
mod lorenz_cmd;
mod memory;
mod multiband_cmd;
mod options;
mod phasefold_cmd;
mod plot;
mod progress;
mod synthetic;
mod timing;

use std::io::Write;
use std::process::ExitCode;

use clap::{CommandFactory, Parser, Subcommand};

/// Precompiled CUDA kernels for periodograms, smoothing, reductions and ODE
/// ensembles: no JIT at start-up, and a CPU backend when there is no GPU.
#[derive(Parser)]
#[command(name = "kernpack", version, propagate_version = true)]
struct Cli {
    /// Threads for work on the CPU backend (0 or default: KERNPACK_NUM_THREADS, else every core).
    #[arg(long, global = true, value_name = "N", value_parser = clap::value_parser!(u64).range(0..=kernpack::cpu::MAX_THREADS as u64))]
    threads: Option<u64>,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Devices, the fatbin's contents, and which image each kernel runs (SASS or JIT).
    Info,
    /// Recover the period of a synthetic irregular light curve and plot it.
    Demo(lombscargle_cmd::DemoArgs),
    /// Lomb-Scargle periodogram of one time series.
    Lombscargle(lombscargle_cmd::LombScargleArgs),
    /// Periodograms of many series (an id column) in one launch; the best period of each.
    LombscargleBatch(batch_cmd::BatchArgs),
    /// Box Least Squares transit search of one light curve: the best period, depth and transit time.
    Bls(bls_cmd::BlsArgs),
    /// Phase dispersion minimisation (PDM): the best period of one light curve.
    ///
    /// At each trial frequency, theta: the scatter of y about the means of its
    /// phase bins relative to its scatter about its mean (weights 1/dy^2 with a
    /// dy column), in [0, 1]; lower at a better period.
    Pdm(phasefold_cmd::PdmArgs),
    /// Conditional entropy (CE): the best period of one light curve.
    ///
    /// At each trial frequency, the entropy of y's magnitude bin given its phase
    /// bin (dy is not used); lower at a better period.
    Ce(phasefold_cmd::CeArgs),
    /// Multiband Lomb-Scargle: the best period of one light curve observed in several bands.
    ///
    /// At each trial frequency, the power of a fit with one period for every
    /// band (astropy's LombScargleMultiband): by default a model shared by the
    /// bands plus a model per band, regularised; with --method fast, each
    /// band's own periodogram, combined.
    Multiband(multiband_cmd::MultibandArgs),
    /// Lorenz 96 ensemble: all members and steps in one launch.
    Lorenz96(lorenz_cmd::Lorenz96Args),
    /// Lorenz 2005 Model II / III ensemble.
    Lorenz05(lorenz_cmd::Lorenz05Args),
    /// Lorenz 63 ensemble with per-member sigma, rho, beta (fixed or adaptive steps).
    Lorenz63(lorenz63_cmd::Lorenz63Args),
    /// Integrate the coupled F/G system and write delta(t).
    Fg(fg_cmd::FgArgs),
    /// Time the kernels (CUDA events on the GPU, wall clock on the CPU).
    #[command(subcommand)]
    Bench(bench_cmd::BenchCommand),
    /// Print a shell completion script (for example: kernpack completions bash > ~/.local/share/bash-completion/completions/kernpack).
    Completions {
        /// The shell to complete for.
        #[arg(value_enum)]
        shell: clap_complete::Shell,
    },
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    if cli.threads.is_none_or(|t| t == 0) {
        warn_of_a_bad_thread_count(); // else --threads decides
    }
    if let Some(threads) = cli.threads {
        // In range by the parser, so this cannot fail.
        let _ = kernpack::cpu::set_threads(threads as usize);
    }
    let result = match cli.command {
        Command::Info => info::run(),
        Command::Demo(args) => lombscargle_cmd::demo(&args),
        Command::Lombscargle(args) => lombscargle_cmd::lombscargle(&args),
        Command::LombscargleBatch(args) => batch_cmd::run(&args),
        Command::Bls(args) => bls_cmd::run(&args),
        Command::Pdm(args) => phasefold_cmd::pdm(&args),
        Command::Ce(args) => phasefold_cmd::ce(&args),
        Command::Multiband(args) => multiband_cmd::run(&args),
        Command::Lorenz96(args) => lorenz_cmd::lorenz96(&args),
        Command::Lorenz05(args) => lorenz_cmd::lorenz05(&args),
        Command::Lorenz63(args) => lorenz63_cmd::run(&args),
        Command::Fg(args) => fg_cmd::run(&args),
        Command::Bench(command) => bench_cmd::run(command),
        Command::Completions { shell } => {
            let mut script = Vec::new();
            clap_complete::generate(shell, &mut Cli::command(), "kernpack", &mut script);
            report(format_args!("{}", String::from_utf8_lossy(&script)));
            Ok(())
        }
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("kernpack: {message}");
            ExitCode::from(1)
        }
    }
}

/// The library ignores a `KERNPACK_NUM_THREADS` that is not a count (a
/// library does not print); the command says so.
fn warn_of_a_bad_thread_count() {
    let env = kernpack::cpu::THREADS_ENV;
    if let Some(value) = std::env::var_os(env) {
        let text = value.to_string_lossy();
        let max = kernpack::cpu::MAX_THREADS;
        if !matches!(text.trim().parse::<usize>(), Ok(n) if (1..=max).contains(&n)) {
            eprintln!(
                "kernpack: {env}={text:?} is not a count from 1 to {max}: ignored (every core)"
            );
        }
    }
}

/// Writes part of a command's report to stdout. Once a reader has stopped
/// early (`kernpack demo | head -1`) the rest of the report is dropped
/// quietly and the command carries on (its files are still written, its
/// checks still decide the exit status); any other write error (a full
/// disk) ends the program with a message and status 1. `println!` would
/// panic in both cases.
pub fn report(text: std::fmt::Arguments) {
    static READER_GONE: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);
    if READER_GONE.load(std::sync::atomic::Ordering::Relaxed) {
        return;
    }
    let mut out = std::io::stdout().lock();
    if let Err(e) = out.write_fmt(text) {
        if e.kind() == std::io::ErrorKind::BrokenPipe {
            READER_GONE.store(true, std::sync::atomic::Ordering::Relaxed);
            return;
        }
        let _ = writeln!(std::io::stderr(), "kernpack: stdout: {e}");
        std::process::exit(1);
    }
}

#[cfg(test)]
mod tests {
    use super::Cli;
    use clap::CommandFactory;

    #[test]
    fn the_command_line_definition_is_consistent() {
        Cli::command().debug_assert();
    }

    #[test]
    fn each_benchmark_keeps_its_own_default_number_of_runs() {
        let cli = Cli::command();
        let bench = cli.find_subcommand("bench").unwrap();
        for (name, reps) in [
            ("lombscargle", "20"),
            ("lombscargle-batch", "10"),
            ("reduce", "20"),
            ("box-filter", "20"),
            ("gaussian", "20"),
            ("median", "20"),
            ("uniform", "20"),
            ("normalize-streams", "10"),
            ("normalize-batched", "20"),
            ("lorenz96", "10"),
            ("lorenz05", "10"),
            ("lorenz63", "10"),
            ("lorenz63-adaptive", "10"),
            ("fg", "20"),
            ("fap-bootstrap", "20"),
        ] {
            let command = bench.find_subcommand(name).unwrap();
            let arg = command.get_arguments().find(|a| a.get_id() == "reps");
            let defaults = arg.unwrap().get_default_values();
            assert_eq!(defaults, [reps], "{name}");
        }
    }
}
