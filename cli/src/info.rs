//! `kernpack info`: devices, the embedded fatbin, and per kernel family which
//! image the driver took (SASS for an arch, or PTX JIT-compiled), with each
//! kernel's PTX and binary versions.
use std::time::Instant;

use kernpack::gpu::FATBIN;
use kernpack::{fatbin, Gpu};

pub fn run() -> Result<(), String> {
    say!("kernpack {}", env!("CARGO_PKG_VERSION"));
    say!(
        "fatbin: {} bytes, built by {} ({}; sm_35..sm_72 and compute_35 by {}), SASS sm_{}, PTX compute_{}, \
         one container per family: {}",
        FATBIN.len(),
        kernpack::gpu::FATBIN_ORIGIN,
        kernpack::gpu::FATBIN_TOOLKIT,
        kernpack::gpu::FATBIN_LEGACY_TOOLKIT,
        kernpack::gpu::FATBIN_SASS.replace(',', " sm_"),
        kernpack::gpu::FATBIN_PTX.replace(',', " compute_"),
        kernpack::gpu::FATBIN_FAMILIES.replace(',', " ")
    );
    match fatbin::parse(FATBIN) {
        Ok(entries) => crate::report(format_args!("{}", fatbin::summary(&entries))),
        Err(e) => say!("  cannot parse the embedded fatbin: {e}"),
    }
    say!(
        "CPU backend: {} threads, {} (set with --threads or {})",
        kernpack::cpu::threads(),
        kernpack::cpu::simd_name(),
        kernpack::cpu::THREADS_ENV
    );
    let count = Gpu::device_count();
    say!("CUDA devices: {count}");
    for ordinal in 0..count {
        let started = Instant::now();
        match Gpu::get(ordinal) {
            Ok(gpu) => {
                let (major, minor) = gpu.compute_capability();
                let context = started.elapsed().as_secs_f64() * 1e3;
                let infos = gpu.kernel_infos();
                say!(
                    "GPU {ordinal}: {} (compute capability {major}.{minor}, {} SMs, driver CUDA {}); \
                     context {context:.2} ms; every family: images chosen and loaded in {:.3} ms, \
                     kernels resolved in {:.3} ms",
                    gpu.name(),
                    gpu.sm_count(),
                    kernpack::gpu::image::version_text(gpu.driver_version()),
                    gpu.module_load_time().as_secs_f64() * 1e3,
                    gpu.kernel_resolve_time().as_secs_f64() * 1e3
                );
                for (family, image) in gpu.images() {
                    say!("  {family:<15} {image}");
                }
                let infos = match infos {
                    Ok(infos) => infos,
                    Err(e) => {
                        say!("  cannot load the kernels: {e}");
                        continue;
                    }
                };
                say!(
                    "  {:<28} {:>5} {:>8} {:>6} {:>4} {:>7}  code",
                    "kernel",
                    "regs",
                    "threads",
                    "local",
                    "ptx",
                    "binary"
                );
                for k in infos {
                    let code = match k.image {
                        kernpack::gpu::Image::Sass(arch) => format!("SASS sm_{arch} (no JIT)"),
                        _ => format!(
                            "PTX compute_{} JIT-compiled for sm_{}",
                            k.ptx_version, k.binary_version
                        ),
                    };
                    say!(
                        "  {:<28} {:>5} {:>8} {:>6} {:>4} {:>7}  {code}",
                        k.name,
                        k.registers,
                        k.max_threads_per_block,
                        k.local_bytes,
                        k.ptx_version,
                        k.binary_version
                    );
                }
            }
            Err(e) => say!("GPU {ordinal}: {e}"),
        }
    }
    if count == 0 {
        say!("no GPU: every command runs on the CPU backend");
    }
    Ok(())
}
