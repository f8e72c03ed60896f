//! Compiles every `csrc/*.cu` into ONE multi-architecture fatbin in OUT_DIR, which
//! the crate embeds with `include_bytes!`. Without an nvcc it falls back to the
//! committed `fatbin/kernpack.fatbin` and says so.
use std::env;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

include!("src/build_support/source_hash.rs");

/// Flags that shape the generated code; recorded in the manifest.
const NVCC_FLAGS: &[&str] = &[
    "-O3",
    "--use_fast_math",
    "-std=c++17",
    "-Xfatbin=-compress-all",
];

fn main() {
    let root = PathBuf::from(env::var("CARGO_MANIFEST_DIR").unwrap());
    let out = PathBuf::from(env::var("OUT_DIR").unwrap());
    let csrc = root.join("csrc");
    println!("cargo:rerun-if-changed=csrc");
    println!("cargo:rerun-if-changed=fatbin");
    for var in [
        "NVCC",
        "CUDA_PATH",
        "CUDA_HOME",
        "KERNPACK_CUDA_ARCHS",
        "KERNPACK_FATBIN_EXPORT",
        "PATH",
    ] {
        println!("cargo:rerun-if-env-changed={var}");
    }
    let source_hash = csrc_source_hash(&csrc).expect("reading csrc/");

    let manifest = match find_nvcc(&root) {
        Some(nvcc) => compile_fatbin(&nvcc, &csrc, &out, &source_hash),
        None => use_committed_fatbin(&root, &out, &source_hash),
    };
    fs::write(out.join("manifest.txt"), manifest.to_text()).unwrap();
    println!("cargo:rustc-env=KERNPACK_FATBIN_ORIGIN={}", manifest.origin);
    println!(
        "cargo:rustc-env=KERNPACK_FATBIN_TOOLKIT={}",
        manifest.toolkit
    );
    println!(
        "cargo:rustc-env=KERNPACK_FATBIN_SASS={}",
        join(&manifest.sass)
    );
    println!("cargo:rustc-env=KERNPACK_FATBIN_PTX={}", manifest.ptx);
    // A SONAME, so programs linked against the cdylib by path find it by name.
    // Not under cargo-c (which enables the `capi` feature): it sets the
    // versioned SONAME libkernpack.so.0 itself, and a second -soname from
    // here would come later on the linker's command line and win.
    if env::var("CARGO_CFG_TARGET_OS").as_deref() == Ok("linux")
        && env::var_os("CARGO_FEATURE_CAPI").is_none()
    {
        println!("cargo:rustc-cdylib-link-arg=-Wl,-soname,libkernpack.so");
    }
    // For tests that compile C against the crate (cc needs the target triple).
    println!(
        "cargo:rustc-env=KERNPACK_TARGET={}",
        env::var("TARGET").unwrap()
    );
    println!(
        "cargo:rustc-env=KERNPACK_HOST={}",
        env::var("HOST").unwrap()
    );

    // std::arch's AVX-512 intrinsics are stable from Rust 1.89: the CPU paths
    // written with them (src/cpu/stencil_rows.rs) are compiled from that
    // version on; older compilers (the crate's MSRV is 1.80) build without them.
    println!("cargo:rustc-check-cfg=cfg(kernpack_avx512)");
    if env::var("CARGO_CFG_TARGET_ARCH").as_deref() == Ok("x86_64")
        && rustc_minor().is_some_and(|minor| minor >= 89)
    {
        println!("cargo:rustc-cfg=kernpack_avx512");
    }

    if let Ok(dir) = env::var("KERNPACK_FATBIN_EXPORT") {
        let dir = PathBuf::from(dir);
        fs::create_dir_all(&dir).unwrap();
        fs::copy(out.join("kernpack.fatbin"), dir.join("kernpack.fatbin")).unwrap();
        let committed = Manifest {
            origin: "committed".into(),
            ..manifest
        };
        fs::write(dir.join("manifest.txt"), committed.to_text()).unwrap();
    }
}

struct Manifest {
    origin: String,
    toolkit: String,
    sass: Vec<u32>,
    ptx: u32,
    source_hash: String,
    flags: String,
}

impl Manifest {
    fn to_text(&self) -> String {
        format!(
            "# kernpack fatbin manifest: what built fatbin/kernpack.fatbin, from which csrc/\n\
             origin={}\ntoolkit={}\nsass={}\nptx={}\nsource_hash={}\nflags={}\n",
            self.origin,
            self.toolkit,
            join(&self.sass),
            self.ptx,
            self.source_hash,
            self.flags
        )
    }

    fn from_text(text: &str) -> Option<Manifest> {
        let field = |key: &str| {
            text.lines()
                .find_map(|l| l.strip_prefix(key).and_then(|r| r.strip_prefix('=')))
                .map(str::to_owned)
        };
        Some(Manifest {
            origin: "committed".into(),
            toolkit: field("toolkit")?,
            sass: parse_archs(&field("sass")?)?,
            ptx: field("ptx")?.parse().ok()?,
            source_hash: field("source_hash")?,
            flags: field("flags")?,
        })
    }
}

/// The minor version of the compiler building the crate (1.x), from
/// `$RUSTC --version`.
fn rustc_minor() -> Option<u32> {
    let rustc = env::var_os("RUSTC").unwrap_or_else(|| "rustc".into());
    let out = Command::new(rustc).arg("--version").output().ok()?;
    let text = String::from_utf8(out.stdout).ok()?;
    let version = text.split_whitespace().nth(1)?;
    let mut parts = version.split('.');
    match (parts.next()?, parts.next()?) {
        ("1", minor) => minor.parse().ok(),
        _ => None,
    }
}

fn join(archs: &[u32]) -> String {
    archs
        .iter()
        .map(u32::to_string)
        .collect::<Vec<_>>()
        .join(",")
}

fn parse_archs(list: &str) -> Option<Vec<u32>> {
    list.split(',')
        .map(|a| a.trim().trim_start_matches("sm_").parse().ok())
        .collect()
}

/// `$NVCC`, `$CUDA_PATH`/`$CUDA_HOME` + bin/nvcc, `nvcc` on PATH, then the
/// project-local pip toolchain installed by scripts/setup-toolchain.sh.
fn find_nvcc(root: &Path) -> Option<PathBuf> {
    if let Some(nvcc) = env::var_os("NVCC") {
        return Some(PathBuf::from(nvcc));
    }
    let from_env = ["CUDA_PATH", "CUDA_HOME"]
        .iter()
        .filter_map(env::var_os)
        .map(|dir| PathBuf::from(dir).join("bin").join("nvcc"));
    let on_path = env::var_os("PATH")
        .map(|p| {
            env::split_paths(&p)
                .map(|d| d.join("nvcc"))
                .collect::<Vec<_>>()
        })
        .unwrap_or_default();
    from_env
        .chain(on_path)
        .chain(project_local_nvcc(root))
        .find(|p| p.is_file())
}

fn project_local_nvcc(root: &Path) -> Option<PathBuf> {
    let lib = root.join(".toolchain/venv/lib");
    fs::read_dir(lib)
        .ok()?
        .filter_map(|e| e.ok())
        .find_map(|python| {
            let nvcc = python.path().join("site-packages/nvidia/cu13/bin/nvcc");
            nvcc.is_file().then_some(nvcc)
        })
}

fn run(cmd: &mut Command) -> (bool, String, String) {
    let output = cmd
        .output()
        .unwrap_or_else(|e| panic!("cannot run {cmd:?}: {e}"));
    (
        output.status.success(),
        String::from_utf8_lossy(&output.stdout).into_owned(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

/// SASS for every `sm_XX >= 35` the toolkit offers (or `KERNPACK_CUDA_ARCHS`),
/// PTX of the highest so GPUs newer than the toolkit can still JIT.
fn target_archs(nvcc: &Path) -> Vec<u32> {
    if let Some(list) = env::var("KERNPACK_CUDA_ARCHS")
        .ok()
        .filter(|l| !l.trim().is_empty())
    {
        let mut archs = parse_archs(&list)
            .unwrap_or_else(|| panic!("KERNPACK_CUDA_ARCHS={list:?}: expected e.g. \"75,80,90\""));
        archs.sort_unstable();
        archs.dedup();
        return archs;
    }
    let (ok, stdout, stderr) = run(Command::new(nvcc).arg("--list-gpu-code"));
    assert!(ok, "{} --list-gpu-code failed: {stderr}", nvcc.display());
    let mut archs: Vec<u32> = stdout
        .split_whitespace()
        .filter_map(|code| code.strip_prefix("sm_")?.parse().ok())
        .filter(|&sm| sm >= 35)
        .collect();
    archs.sort_unstable();
    archs.dedup();
    assert!(!archs.is_empty(), "{} lists no sm_XX >= 35", nvcc.display());
    archs
}

fn compile_fatbin(nvcc: &Path, csrc: &Path, out: &Path, source_hash: &str) -> Manifest {
    let (ok, version, _) = run(Command::new(nvcc).arg("--version"));
    assert!(ok, "{} --version failed", nvcc.display());
    let toolkit = version
        .lines()
        .find_map(|l| l.split(", ").find(|p| p.starts_with('V')))
        .unwrap_or("unknown")
        .to_owned();
    let sass = target_archs(nvcc);
    let ptx = *sass.last().unwrap();

    // One translation unit that includes every kernel family, so one fatbin holds them all.
    let mut sources: Vec<PathBuf> = fs::read_dir(csrc)
        .unwrap()
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "cu"))
        .collect();
    sources.sort();
    let umbrella: String = sources
        .iter()
        .map(|p| format!("#include \"{}\"\n", p.display()))
        .collect();
    let unit = out.join("kernpack_all.cu");
    fs::write(&unit, umbrella).unwrap();

    let fatbin = out.join("kernpack.fatbin");
    let mut cmd = Command::new(nvcc);
    cmd.arg("-fatbin")
        .args(NVCC_FLAGS)
        .args(["--threads", "0", "-Xptxas", "-v"]);
    cmd.arg("-I").arg(csrc);
    for sm in &sass {
        cmd.arg(format!("-gencode=arch=compute_{sm},code=sm_{sm}"));
    }
    cmd.arg(format!("-gencode=arch=compute_{ptx},code=compute_{ptx}"));
    cmd.arg("-o").arg(&fatbin).arg(&unit);
    let (ok, stdout, stderr) = run(&mut cmd);
    // ptxas -v prints registers, spills and shared memory per kernel and arch.
    fs::write(
        out.join("ptxas-report.txt"),
        format!("{cmd:?}\n{stdout}{stderr}"),
    )
    .unwrap();
    assert!(ok, "nvcc failed:\n{cmd:?}\n{stdout}{stderr}");
    Manifest {
        origin: format!("nvcc {}", nvcc.display()),
        toolkit,
        sass,
        ptx,
        source_hash: source_hash.to_owned(),
        flags: NVCC_FLAGS.join(" "),
    }
}

fn use_committed_fatbin(root: &Path, out: &Path, source_hash: &str) -> Manifest {
    let committed = root.join("fatbin/kernpack.fatbin");
    let text = fs::read_to_string(root.join("fatbin/manifest.txt"))
        .expect("no nvcc found and fatbin/manifest.txt is missing: run scripts/setup-toolchain.sh");
    let manifest = Manifest::from_text(&text).expect("fatbin/manifest.txt is malformed");
    fs::copy(&committed, out.join("kernpack.fatbin")).unwrap_or_else(|e| {
        panic!(
            "no nvcc found and {} cannot be read ({e}): run scripts/setup-toolchain.sh",
            committed.display()
        )
    });
    println!(
        "cargo:warning=no nvcc found ($NVCC, $CUDA_PATH, $CUDA_HOME, PATH, .toolchain/): using the committed fatbin/kernpack.fatbin"
    );
    if manifest.source_hash != source_hash {
        println!(
            "cargo:warning=STALE FATBIN: csrc/ hashes to {source_hash} but fatbin/manifest.txt was built from {}; \
             the kernels you run are NOT the sources in csrc/. Run scripts/regen-fatbin.sh",
            manifest.source_hash
        );
    }
    manifest
}
