//! `kernpack bench median`: the median (or any rank) filter of an N-D array
//! against a device-to-device copy of the same array timed in the same
//! process (the filter reads and writes the array once: the copy is its
//! memory roofline, far below what selection costs). benches/compare_stencil.py
//! runs it beside cupyx. With `--backend cpu`: the CPU backend, wall clock.
use kernpack::{Backend, Gpu, Kernpack, Rank, RankFilterOnDevice, RankFilterOptions, RankValue};

use crate::bench_box::BoxModeArg;
use crate::synthetic::Uniform;
use crate::timing::{event_median, host_copy_median, wall_median, BenchResult, Timing};

/// The element types of rank filters.
#[derive(clap::ValueEnum, Debug, Clone, Copy, PartialEq, Eq)]
pub enum RankDtype {
    U8,
    I8,
    U16,
    I16,
    U32,
    I32,
    U64,
    I64,
    F32,
    F64,
}

/// A random array, median-filtered with CUDA-event timing.
#[derive(clap::Args, Debug)]
pub struct BenchMedianArgs {
    /// Array shape, comma-separated (any number of axes).
    #[arg(long, value_delimiter = ',', default_value = "8192,8192")]
    pub shape: Vec<usize>,
    /// Window size, the same along every axis (a box footprint).
    #[arg(long, default_value_t = 3)]
    pub size: usize,
    /// SciPy's rank (0 the smallest, negative from the top) [default: the median].
    #[arg(long, allow_negative_numbers = true)]
    pub rank: Option<i64>,
    /// Boundary mode (interior is the box filter's only).
    #[arg(long, value_enum, default_value_t = BoxModeArg::Reflect)]
    pub mode: BoxModeArg,
    /// Element type.
    #[arg(long, value_enum, default_value_t = RankDtype::U8)]
    pub dtype: RankDtype,
    #[command(flatten)]
    pub timing: Timing,
}

pub fn run(args: &BenchMedianArgs) -> BenchResult {
    let mut dims = args.shape.clone();
    dims.push(2); // input and output
    crate::memory::check_room::<f64>("the array and its output (--shape)", &dims)?;
    let opts = RankFilterOptions {
        rank: args.rank.map_or(Rank::Median, Rank::Index),
        mode: args.mode.into(),
        ..RankFilterOptions::median(&vec![args.size; args.shape.len()])
    };
    let t = &args.timing;
    match args.dtype {
        RankDtype::U8 => bench::<u8>(&args.shape, &opts, t),
        RankDtype::I8 => bench::<i8>(&args.shape, &opts, t),
        RankDtype::U16 => bench::<u16>(&args.shape, &opts, t),
        RankDtype::I16 => bench::<i16>(&args.shape, &opts, t),
        RankDtype::U32 => bench::<u32>(&args.shape, &opts, t),
        RankDtype::I32 => bench::<i32>(&args.shape, &opts, t),
        RankDtype::U64 => bench::<u64>(&args.shape, &opts, t),
        RankDtype::I64 => bench::<i64>(&args.shape, &opts, t),
        RankDtype::F32 => bench::<f32>(&args.shape, &opts, t),
        RankDtype::F64 => bench::<f64>(&args.shape, &opts, t),
    }
}

/// `n` random values: uniform over the type's whole range (floats in [0, 1)).
pub fn random_array<T: RankValue>(n: usize) -> Vec<T> {
    let mut rng = Uniform::new(0x3ed1_a9b5);
    let bits = 8 * std::mem::size_of::<T>() as u32;
    (0..n)
        .map(|_| match T::KIND {
            kernpack::params::rank::KeyKind::Float => T::from_cval(rng.next()).expect("a float"),
            _ => {
                let k = (rng.next() * 2f64.powi(bits.min(52) as i32)) as u64;
                T::from_key(k << bits.saturating_sub(52))
            }
        })
        .collect()
}

fn bench<T: RankValue>(shape: &[usize], opts: &RankFilterOptions, timing: &Timing) -> BenchResult {
    let reps = timing.reps();
    let n: usize = shape.iter().product();
    let host: Vec<T> = random_array(n);
    let shape_text = shape
        .iter()
        .map(|d| d.to_string())
        .collect::<Vec<_>>()
        .join("x");
    let size = opts.footprint.shape.first().copied().unwrap_or(1);
    let rank = opts.resolved_rank()?;
    let bytes = 2.0 * (n * std::mem::size_of::<T>()) as f64;
    if timing.on_cpu() {
        let kp = Kernpack::new(Backend::Cpu)?;
        let mut out = vec![T::default(); n];
        let copy = host_copy_median(&host, &mut out, reps)?;
        let filter = wall_median(reps, || kp.rank_filter_into(&host, &mut out, shape, opts))?;
        say!(
            "RESULT kernpack median backend=cpu threads={} dtype={} shape={shape_text} size={size} rank={rank} copy_ms={copy:.3} filter_ms={filter:.3} filter_gb_s={:.2} of_copy_bw={:.4}",
            kp.cpu_threads(),
            T::NAME,
            bytes / filter / 1e6,
            copy / filter
        );
        return Ok(());
    }
    let gpu = Gpu::get(0)?;
    let stream = gpu.stream();
    let input = stream.clone_htod(&host)?;
    let mut output = stream.alloc_zeros::<T>(n)?;
    let copy_ms = event_median(stream, reps, || {
        stream
            .memcpy_dtod(&input, &mut output)
            .map_err(|e| kernpack::Error::cuda("copying", e))
    })?;
    let filter_ms = event_median(stream, reps, || {
        let call = RankFilterOnDevice::buffers(stream, &input, &mut output, shape, opts);
        gpu.enqueue_buffers(call?)
    })?;
    say!(
        "RESULT kernpack median dtype={} shape={shape_text} size={size} rank={rank} copy_ms={copy_ms:.4} filter_ms={filter_ms:.4} filter_tb_s={:.3} of_copy_bw={:.4}",
        T::NAME,
        bytes / (filter_ms * 1e-3) / 1e12,
        copy_ms / filter_ms
    );
    Ok(())
}
