//! `kernpack info`: devices, the embedded fatbin, and whether each kernel runs
//! SASS built for the GPU (binary version == compute capability) or JIT-ed PTX.
use std::time::Instant;

use kernpack::gpu::FATBIN;
use kernpack::{fatbin, Gpu};

pub fn run() -> Result<(), String> {
    println!("kernpack {}", env!("CARGO_PKG_VERSION"));
    println!(
        "fatbin: {} bytes, built by {} ({}), SASS sm_{}, PTX compute_{}",
        FATBIN.len(),
        kernpack::gpu::FATBIN_ORIGIN,
        kernpack::gpu::FATBIN_TOOLKIT,
        kernpack::gpu::FATBIN_SASS.replace(',', " sm_"),
        kernpack::gpu::FATBIN_PTX
    );
    match fatbin::parse(FATBIN) {
        Ok(entries) => print!("{}", fatbin::summary(&entries)),
        Err(e) => println!("  cannot parse the embedded fatbin: {e}"),
    }
    println!(
        "CPU backend: {} threads, {} (set with --threads or {})",
        kernpack::cpu::threads(),
        kernpack::cpu::simd_name(),
        kernpack::cpu::THREADS_ENV
    );
    let count = Gpu::device_count();
    println!("CUDA devices: {count}");
    for ordinal in 0..count {
        let started = Instant::now();
        match Gpu::get(ordinal) {
            Ok(gpu) => {
                let (major, minor) = gpu.compute_capability();
                println!(
                    "GPU {ordinal}: {} (compute capability {major}.{minor}, {} SMs); context + module {:.2} ms, \
                     module load {:.3} ms, kernels resolved in {:.3} ms",
                    gpu.name(),
                    gpu.sm_count(),
                    started.elapsed().as_secs_f64() * 1e3,
                    gpu.module_load_time().as_secs_f64() * 1e3,
                    gpu.kernel_resolve_time().as_secs_f64() * 1e3
                );
                let cc = major * 10 + minor;
                println!(
                    "  {:<28} {:>5} {:>8} {:>6} {:>7}  code",
                    "kernel", "regs", "threads", "local", "binary"
                );
                for k in gpu.kernel_infos() {
                    let code = if k.binary_version == cc {
                        "SASS (no JIT)"
                    } else {
                        "PTX, JIT-compiled"
                    };
                    println!(
                        "  {:<28} {:>5} {:>8} {:>6} {:>7}  {code}",
                        k.name,
                        k.registers,
                        k.max_threads_per_block,
                        k.local_bytes,
                        k.binary_version
                    );
                }
            }
            Err(e) => println!("GPU {ordinal}: {e}"),
        }
    }
    if count == 0 {
        println!("no GPU: every command runs on the CPU backend");
    }
    Ok(())
}
