//! Compiles every `csrc/<family>.cu` into one fatbin container per kernel family
//! and writes them back to back into OUT_DIR/kernpack.fatbin, which the crate
//! embeds with `include_bytes!`. The loader hands the driver only the family a
//! call needs, and of it only this GPU's entry (src/gpu/image.rs).
//!
//! Each container holds SASS for every arch and two PTX: sm_75 and newer plus
//! the highest PTX from the pinned CUDA 13.0 toolkit, and sm_35..sm_72 plus
//! compute_35 PTX from CUDA 11.8 (src/build_support/archs.rs). Where the 11.8
//! toolkit is absent (CI, most contributors), the 11.8-built entries are taken
//! from the committed fatbin while it was built from today's csrc/; otherwise
//! the build warns that the fatbin lacks them. Without any nvcc the committed
//! fatbin is used whole, and a stale one is reported; with the pinned nvcc
//! it is used whole too while it is what that nvcc would build from today's
//! csrc/ (compiling every arch would only rebuild it, at length), unless
//! `KERNPACK_CUDA_ARCHS` or a regeneration asks for a compile.
//!
//! The list of kernels the loader resolves is read from the fatbin embedded
//! ([`write_kernel_list`]).
use std::env;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

include!("src/build_support/source_hash.rs");
include!("src/build_support/archs.rs");

#[allow(dead_code)]
#[path = "src/fatbin.rs"]
mod fatbin;
#[path = "src/build_support/kernel_list.rs"]
mod kernel_list;

/// Flags that shape the generated code; recorded in the manifest.
const NVCC_FLAGS: &[&str] = &["-O3", "--use_fast_math", "-std=c++17"];
/// CUDA 13 compresses every entry with zstd; uncompressed, the fatbin would
/// be about 30 MB, too much for git.
const MODERN_COMPRESSION: &str = "-Xfatbin=-compress-all";
/// CUDA 11.8's entries are compiled uncompressed and stored with zstd level 19
/// by build.rs: about half the size of 11.8's own LZ4-like scheme, which keeps
/// the fatbin under 8 MB. The loader decompresses what it hands the driver, so
/// no driver needs to read zstd.
const LEGACY_ZSTD_LEVEL: i32 = 19;

fn main() {
    let root = PathBuf::from(env::var("CARGO_MANIFEST_DIR").unwrap());
    let out = PathBuf::from(env::var("OUT_DIR").unwrap());
    let csrc = root.join("csrc");
    println!("cargo:rerun-if-changed=csrc");
    println!("cargo:rerun-if-changed=fatbin");
    println!("cargo:rerun-if-changed=src/build_support");
    println!("cargo:rerun-if-changed=src/fatbin.rs");
    for var in [
        "NVCC",
        "CUDA_PATH",
        "CUDA_HOME",
        "KERNPACK_CUDA_ARCHS",
        "KERNPACK_FATBIN_EXPORT",
        "KERNPACK_LEGACY_NVCC",
        "KERNPACK_LEGACY_REBUILD",
        "KERNPACK_FATBIN_ONLY",
        "PATH",
    ] {
        println!("cargo:rerun-if-env-changed={var}");
    }
    let source_hash = csrc_source_hash(&csrc).expect("reading csrc/");

    let mut manifest = match find_nvcc(&root) {
        Some(nvcc) if must_compile(&root, &nvcc, &source_hash) => {
            compile_fatbin(&root, &nvcc, &csrc, &out, &source_hash)
        }
        Some(_) => use_committed_fatbin(&root, &out, &source_hash, true),
        None => use_committed_fatbin(&root, &out, &source_hash, false),
    };
    write_kernel_list(&out, &manifest.families);
    let only = env::var("KERNPACK_FATBIN_ONLY").unwrap_or_default();
    if !only.trim().is_empty() {
        keep_only(&out.join("kernpack.fatbin"), &only, &mut manifest);
    }
    println!("cargo:rustc-env=KERNPACK_FATBIN_ONLY={}", only.trim());
    fs::write(out.join("manifest.txt"), manifest.to_text()).unwrap();
    println!("cargo:rustc-env=KERNPACK_FATBIN_ORIGIN={}", manifest.origin);
    println!(
        "cargo:rustc-env=KERNPACK_FATBIN_TOOLKIT={}",
        manifest.toolkit
    );
    println!(
        "cargo:rustc-env=KERNPACK_FATBIN_LEGACY_TOOLKIT={}",
        manifest.legacy_toolkit
    );
    println!(
        "cargo:rustc-env=KERNPACK_FATBIN_SASS={}",
        join(&manifest.sass)
    );
    println!(
        "cargo:rustc-env=KERNPACK_FATBIN_PTX={}",
        join(&manifest.ptx)
    );
    println!(
        "cargo:rustc-env=KERNPACK_FATBIN_FAMILIES={}",
        manifest.families.join(",")
    );
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

/// Writes OUT_DIR/kernel_families.rs, the kernel names by family, which
/// src/gpu/mod.rs includes as `KERNEL_FAMILIES`: each family's are those of the
/// first cubin of its container in the fatbin about to be embedded (before
/// `KERNPACK_FATBIN_ONLY` thins it). tests/fatbin.rs holds every entry of the
/// fatbin to this list, tests/kernel_list.rs the list to csrc/.
fn write_kernel_list(out: &Path, families: &[String]) {
    let bytes = fs::read(out.join("kernpack.fatbin")).unwrap();
    let entries = fatbin::parse(&bytes).unwrap();
    let mut list = String::from("// Generated by build.rs from the fatbin's cubins.\n&[\n");
    let mut seen = std::collections::BTreeSet::new();
    for (i, family) in families.iter().enumerate() {
        let cubin = entries
            .iter()
            .find(|e| e.container == i && e.kind == fatbin::EntryKind::Sass)
            .unwrap_or_else(|| panic!("the fatbin has no cubin for the {family} family"));
        let payload = cubin.payload(&bytes);
        let elf = match cubin.codec {
            fatbin::Codec::None => payload.to_vec(),
            fatbin::Codec::Zstd => {
                zstd::bulk::decompress(payload, cubin.uncompressed_size as usize).unwrap()
            }
            fatbin::Codec::Lz4 => {
                panic!("{family}: an LZ4-compressed cubin, which build.rs never writes")
            }
        };
        let names = kernel_list::cubin_kernels(&elf).unwrap_or_else(|| {
            panic!(
                "the {family} family's sm_{} cubin is no ELF64 file",
                cubin.arch
            )
        });
        assert!(
            !names.is_empty(),
            "csrc/{family}.cu has no extern \"C\" __global__ entry point"
        );
        if let Some(twice) = names.iter().find(|n| !seen.insert(n.to_string())) {
            panic!("the kernel {twice} is defined twice in csrc/");
        }
        list.push_str(&format!("    ({family:?}, &{names:?}),\n"));
    }
    list.push_str("]\n");
    fs::write(out.join("kernel_families.rs"), list).unwrap();
}

struct Manifest {
    origin: String,
    toolkit: String,
    /// The toolkit of the sm_35..sm_72 and compute_35 entries, "none" without them.
    legacy_toolkit: String,
    /// One container per family, in this order: the `csrc/<family>.cu` stems, sorted.
    families: Vec<String>,
    sass: Vec<u32>,
    ptx: Vec<u32>,
    source_hash: String,
    /// The csrc/ the legacy entries were compiled from ("none" without them).
    legacy_source_hash: String,
    flags: String,
}

impl Manifest {
    fn to_text(&self) -> String {
        format!(
            "# kernpack fatbin manifest: what built fatbin/kernpack.fatbin, from which csrc/\n\
             origin={}\ntoolkit={}\nlegacy_toolkit={}\nfamilies={}\nsass={}\nptx={}\n\
             source_hash={}\nlegacy_source_hash={}\nflags={}\n",
            self.origin,
            self.toolkit,
            self.legacy_toolkit,
            self.families.join(","),
            join(&self.sass),
            join(&self.ptx),
            self.source_hash,
            self.legacy_source_hash,
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
            legacy_toolkit: field("legacy_toolkit")?,
            families: field("families")?.split(',').map(str::to_owned).collect(),
            sass: parse_archs(&field("sass")?)?,
            ptx: parse_archs(&field("ptx")?)?,
            source_hash: field("source_hash")?,
            legacy_source_hash: field("legacy_source_hash")?,
            flags: field("flags")?,
        })
    }

    fn read_committed(root: &Path) -> Option<(Manifest, Vec<u8>)> {
        let text = fs::read_to_string(root.join("fatbin/manifest.txt")).ok()?;
        let bytes = fs::read(root.join("fatbin/kernpack.fatbin")).ok()?;
        Some((Manifest::from_text(&text)?, bytes))
    }
}

/// The code-shaping flags and how entries are stored, as the manifest records them.
fn flags_text() -> String {
    format!(
        "{} (13.0: {MODERN_COMPRESSION}; 11.8: zstd -{LEGACY_ZSTD_LEVEL} by build.rs)",
        NVCC_FLAGS.join(" ")
    )
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
        .map(|a| {
            a.trim()
                .trim_start_matches("sm_")
                .trim_start_matches("compute_")
                .parse()
                .ok()
        })
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

/// `$KERNPACK_LEGACY_NVCC`, else the CUDA 11.8 of scripts/setup-toolchain-legacy.sh.
fn find_legacy_nvcc(root: &Path) -> Option<PathBuf> {
    env::var_os("KERNPACK_LEGACY_NVCC")
        .map(PathBuf::from)
        .or_else(|| Some(root.join(".toolchain/cuda-11.8/bin/nvcc")))
        .filter(|p| p.is_file())
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

fn toolkit_version(nvcc: &Path) -> String {
    let (ok, version, _) = run(Command::new(nvcc).arg("--version"));
    assert!(ok, "{} --version failed", nvcc.display());
    version
        .lines()
        .find_map(|l| l.split(", ").find(|p| p.starts_with('V')))
        .unwrap_or("unknown")
        .to_owned()
}

/// SASS for every `sm_XX >= 75` the toolkit offers, or exactly `KERNPACK_CUDA_ARCHS`
/// (then nothing else: no legacy entries either). The flag says which.
fn target_archs(nvcc: &Path) -> (Vec<u32>, bool) {
    if let Some(list) = env::var("KERNPACK_CUDA_ARCHS")
        .ok()
        .filter(|l| !l.trim().is_empty())
    {
        let mut archs = parse_archs(&list)
            .unwrap_or_else(|| panic!("KERNPACK_CUDA_ARCHS={list:?}: expected e.g. \"75,80,90\""));
        archs.sort_unstable();
        archs.dedup();
        return (archs, true);
    }
    let (ok, stdout, stderr) = run(Command::new(nvcc).arg("--list-gpu-code"));
    assert!(ok, "{} --list-gpu-code failed: {stderr}", nvcc.display());
    let mut archs: Vec<u32> = stdout
        .split_whitespace()
        .filter_map(|code| code.strip_prefix("sm_")?.parse().ok())
        .filter(|&sm| sm >= MODERN_MIN_ARCH)
        .collect();
    archs.sort_unstable();
    archs.dedup();
    assert!(
        !archs.is_empty(),
        "{} lists no sm_XX >= {MODERN_MIN_ARCH}",
        nvcc.display()
    );
    (archs, false)
}

/// The kernel families: `csrc/<family>.cu`, sorted by name.
fn family_sources(csrc: &Path) -> Vec<(String, PathBuf)> {
    let mut sources: Vec<(String, PathBuf)> = fs::read_dir(csrc)
        .unwrap()
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "cu"))
        .map(|p| (p.file_stem().unwrap().to_string_lossy().into_owned(), p))
        .collect();
    sources.sort();
    sources
}

/// What one toolkit builds: SASS for `sass`, PTX for `ptx`, with `extra`
/// flags; `tag` names the outputs.
struct Targets<'a> {
    sass: &'a [u32],
    ptx: u32,
    extra: &'a [&'a str],
    tag: &'a str,
}

/// One `nvcc -fatbin` per family (run side by side); returns each family's fatbin.
fn compile_families(
    nvcc: &Path,
    csrc: &Path,
    out: &Path,
    families: &[(String, PathBuf)],
    targets: &Targets,
) -> Vec<Vec<u8>> {
    let Targets {
        sass,
        ptx,
        extra,
        tag,
    } = *targets;
    std::thread::scope(|scope| {
        let jobs: Vec<_> = families
            .iter()
            .map(|(family, source)| {
                scope.spawn(move || {
                    let fatbin = out.join(format!("{family}.{tag}.fatbin"));
                    let mut cmd = Command::new(nvcc);
                    cmd.arg("-fatbin").args(NVCC_FLAGS).args(extra).args([
                        "-Xptxas",
                        "-v",
                        "-Wno-deprecated-gpu-targets",
                    ]);
                    cmd.arg("-I").arg(csrc);
                    for sm in sass {
                        cmd.arg(format!("-gencode=arch=compute_{sm},code=sm_{sm}"));
                    }
                    cmd.arg(format!("-gencode=arch=compute_{ptx},code=compute_{ptx}"));
                    cmd.arg("-o").arg(&fatbin).arg(source);
                    let (ok, stdout, stderr) = run(&mut cmd);
                    // ptxas -v prints registers, spills and shared memory per kernel and arch.
                    fs::write(
                        out.join(format!("ptxas-report.{family}.{tag}.txt")),
                        format!("{cmd:?}\n{stdout}{stderr}"),
                    )
                    .unwrap();
                    assert!(ok, "nvcc failed:\n{cmd:?}\n{stdout}{stderr}");
                    fs::read(&fatbin).unwrap()
                })
            })
            .collect();
        jobs.into_iter().map(|j| j.join().unwrap()).collect()
    })
}

/// Every entry of a fatbin (one or more containers), as bytes.
fn entries_of(bytes: &[u8]) -> Vec<(fatbin::FatbinEntry, Vec<u8>)> {
    fatbin::parse(bytes)
        .expect("nvcc wrote a fatbin this crate cannot read")
        .into_iter()
        .map(|e| {
            let b = e.bytes(bytes).to_vec();
            (e, b)
        })
        .collect()
}

fn is_legacy(e: &fatbin::FatbinEntry) -> bool {
    match e.kind {
        fatbin::EntryKind::Sass => e.arch < MODERN_MIN_ARCH,
        fatbin::EntryKind::Ptx => e.arch == LEGACY_PTX,
        fatbin::EntryKind::Other(_) => false,
    }
}

/// CUDA 11.8's entries: per family, each entry's bytes; the toolkit and the
/// csrc/ hash they come from.
struct LegacyEntries {
    per_family: Vec<Vec<Vec<u8>>>,
    toolkit: String,
    source_hash: String,
}

/// The 11.8-built entries, per family: compiled when asked to
/// (`KERNPACK_LEGACY_REBUILD`) or when the committed ones are stale and CUDA
/// 11.8 is here; else the committed ones while fresh; else none (with a warning).
/// Returns the entries, their toolkit and the source hash they were built from.
fn legacy_entries(
    root: &Path,
    csrc: &Path,
    out: &Path,
    families: &[(String, PathBuf)],
    source_hash: &str,
) -> Option<LegacyEntries> {
    let names: Vec<String> = families.iter().map(|(f, _)| f.clone()).collect();
    let flags = flags_text();
    let rebuild = env::var_os("KERNPACK_LEGACY_REBUILD").is_some_and(|v| !v.is_empty() && v != "0");
    let committed = Manifest::read_committed(root).filter(|(m, _)| {
        m.legacy_toolkit != "none"
            && m.legacy_source_hash == source_hash
            && m.families == names
            && m.flags == flags
    });
    if let (Some((manifest, bytes)), false) = (&committed, rebuild) {
        let mut per_family = vec![Vec::new(); families.len()];
        for (e, b) in entries_of(bytes) {
            if is_legacy(&e) {
                per_family[e.container].push(b);
            }
        }
        return Some(LegacyEntries {
            per_family,
            toolkit: manifest.legacy_toolkit.clone(),
            source_hash: source_hash.to_owned(),
        });
    }
    let Some(nvcc) = find_legacy_nvcc(root) else {
        println!(
            "cargo:warning=this build's fatbin has NO kernels for GPUs older than Turing (sm_35..sm_72, \
             compute_35 PTX): the committed ones are stale for today's csrc/ and CUDA 11.8 is not here. \
             Run scripts/setup-toolchain-legacy.sh, then scripts/regen-fatbin.sh"
        );
        return None;
    };
    let toolkit = toolkit_version(&nvcc);
    let fatbins = compile_families(
        &nvcc,
        csrc,
        out,
        families,
        &Targets {
            sass: LEGACY_SASS,
            ptx: LEGACY_PTX,
            extra: &["-Xfatbin=-compress=false"],
            tag: "legacy",
        },
    );
    let per_family = fatbins
        .iter()
        .map(|f| {
            entries_of(f)
                .into_iter()
                .map(|(e, b)| {
                    assert!(!e.compressed, "CUDA 11.8 entries are compiled uncompressed");
                    let (header, payload) = b.split_at(e.header_size as usize);
                    let packed = zstd::bulk::compress(payload, LEGACY_ZSTD_LEVEL).unwrap();
                    fatbin::rebuild_entry(
                        header,
                        &packed,
                        fatbin::Codec::Zstd,
                        payload.len() as u64,
                    )
                })
                .collect()
        })
        .collect();
    Some(LegacyEntries {
        per_family,
        toolkit,
        source_hash: source_hash.to_owned(),
    })
}

fn compile_fatbin(
    root: &Path,
    nvcc: &Path,
    csrc: &Path,
    out: &Path,
    source_hash: &str,
) -> Manifest {
    let toolkit = toolkit_version(nvcc);
    let (modern_sass, only_these) = target_archs(nvcc);
    let modern_ptx = *modern_sass.last().unwrap();
    let families = family_sources(csrc);
    let modern = compile_families(
        nvcc,
        csrc,
        out,
        &families,
        &Targets {
            sass: &modern_sass,
            ptx: modern_ptx,
            extra: &[MODERN_COMPRESSION],
            tag: "modern",
        },
    );
    let legacy = if only_these {
        None
    } else {
        legacy_entries(root, csrc, out, &families, source_hash)
    };

    // One container per family: the legacy entries, then the modern ones.
    let mut fatbin = Vec::new();
    for (i, modern) in modern.iter().enumerate() {
        let modern = entries_of(modern);
        let legacy_part: &[Vec<u8>] = legacy.as_ref().map_or(&[], |l| &l.per_family[i]);
        fatbin.extend(fatbin::build_container(
            legacy_part
                .iter()
                .map(Vec::as_slice)
                .chain(modern.iter().map(|(_, b)| b.as_slice())),
        ));
    }
    fs::write(out.join("kernpack.fatbin"), &fatbin).unwrap();
    let entries = fatbin::parse(&fatbin).unwrap();
    let (legacy_toolkit, legacy_source_hash) = legacy
        .map(|l| (l.toolkit, l.source_hash))
        .unwrap_or_else(|| ("none".into(), "none".into()));
    Manifest {
        origin: format!("nvcc {}", nvcc.display()),
        toolkit,
        legacy_toolkit,
        families: families.into_iter().map(|(f, _)| f).collect(),
        sass: fatbin::sass_archs(&entries),
        ptx: fatbin::ptx_archs(&entries),
        source_hash: source_hash.to_owned(),
        legacy_source_hash,
        flags: flags_text(),
    }
}

/// Keeps only the entries named in `only` ("sm_90,compute_35"): small test
/// binaries for the GPU machine, which can take only so many bytes per call.
fn keep_only(path: &Path, only: &str, manifest: &mut Manifest) {
    let wanted: Vec<(fatbin::EntryKind, u32)> = only
        .split(',')
        .map(|w| {
            let w = w.trim();
            match (w.strip_prefix("sm_"), w.strip_prefix("compute_")) {
                (Some(a), _) => (fatbin::EntryKind::Sass, a.parse().ok()),
                (_, Some(a)) => (fatbin::EntryKind::Ptx, a.parse().ok()),
                _ => (fatbin::EntryKind::Other(0), None),
            }
        })
        .map(|(kind, arch)| {
            (
                kind,
                arch.unwrap_or_else(|| {
                    panic!("KERNPACK_FATBIN_ONLY={only:?}: expected e.g. \"sm_90,compute_35\"")
                }),
            )
        })
        .collect();
    let bytes = fs::read(path).unwrap();
    let entries = fatbin::parse(&bytes).unwrap();
    let containers = entries
        .iter()
        .map(|e| e.container)
        .max()
        .map_or(0, |c| c + 1);
    let mut kept = Vec::new();
    for c in 0..containers {
        kept.extend(fatbin::build_container(
            entries
                .iter()
                .filter(|e| e.container == c && wanted.contains(&(e.kind, e.arch)))
                .map(|e| e.bytes(&bytes)),
        ));
    }
    fs::write(path, &kept).unwrap();
    let entries = fatbin::parse(&kept).unwrap();
    manifest.sass = fatbin::sass_archs(&entries);
    manifest.ptx = fatbin::ptx_archs(&entries);
    println!("cargo:warning=KERNPACK_FATBIN_ONLY={only}: the fatbin keeps only these entries");
}

/// Whether a build with `nvcc` compiles csrc/: when asked to
/// (`KERNPACK_CUDA_ARCHS`, or a regeneration's `KERNPACK_FATBIN_EXPORT`), or
/// when the committed fatbin is not what this nvcc would build from today's
/// csrc/ (sources, flags or toolkit differ, or 11.8's entries are stale).
/// Otherwise compiling would only rebuild the committed bytes, which takes
/// minutes per build profile for every arch (an hour on 2 cores for the
/// kernels of 2026-11-28), so the committed fatbin is used.
fn must_compile(root: &Path, nvcc: &Path, source_hash: &str) -> bool {
    let asked = [
        "KERNPACK_CUDA_ARCHS",
        "KERNPACK_FATBIN_EXPORT",
        "KERNPACK_LEGACY_REBUILD",
    ]
    .iter()
    .any(|v| env::var_os(v).is_some_and(|x| !x.is_empty()));
    let fresh = Manifest::read_committed(root).is_some_and(|(m, _)| {
        m.source_hash == source_hash
            && m.legacy_source_hash == source_hash
            && m.flags == flags_text()
            && m.toolkit == toolkit_version(nvcc)
    });
    asked || !fresh
}

/// The committed fatbin, whole: without an nvcc (`nvcc_found` false: said in
/// a warning, and a stale one reported), or with one that would build the
/// same bytes ([`must_compile`]).
fn use_committed_fatbin(root: &Path, out: &Path, source_hash: &str, nvcc_found: bool) -> Manifest {
    let (manifest, bytes) = Manifest::read_committed(root).expect(
        "no nvcc found and fatbin/kernpack.fatbin or fatbin/manifest.txt is missing or malformed: \
         run scripts/setup-toolchain.sh",
    );
    fs::write(out.join("kernpack.fatbin"), bytes).unwrap();
    if nvcc_found {
        return manifest;
    }
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
