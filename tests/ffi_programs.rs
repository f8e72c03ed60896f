//! The C ABI as C and C++ programs see it: builds each program of ffi-tests/
//! listed at the bottom (NAME.c as C99, NAME.cpp as C++17) against
//! include/kernpack.h and the libkernpack.a / libkernpack.so that cargo built
//! for this very test run, each linked statically and dynamically, and runs
//! the four executables. Each
//! must exit 0 and report "all checks passed"; on failure its output is shown.
//!
//! Where the libraries come from: `cargo test` compiles the library once with
//! all its crate types (rlib, cdylib, staticlib) into `target/<profile>/deps/`,
//! next to this test executable, and does not copy them up to
//! `target/<profile>/` (only `cargo build` does). So the archive and shared
//! object in `deps/` are the output of the same rustc invocation as the rlib
//! this test links: never stale. `target/<profile>/` is the fallback.
//!
//! The programs, and a copy of libkernpack.so beside them (they carry an rpath
//! to the library directory, then to `$ORIGIN`), go to
//! `target/ffi-tests/<profile>/`. That folder is self-contained: on a machine
//! with no Rust toolchain (the GPU machine), copy it and this test executable
//! over and set `KERNPACK_FFI_PREBUILT=<that folder>`; the test then runs the
//! programs found there instead of building them. The programs read
//! `KERNPACK_REQUIRE_GPU` themselves: with "1" and no GPU they fail.
use std::env;
use std::ffi::OsString;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Lang {
    C,
    Cpp,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Link {
    Static,
    Shared,
}

/// The native libraries a Rust staticlib needs on this target, as printed by
/// `cargo rustc --lib --crate-type staticlib -- --print native-static-libs`
/// for this crate (they are std's: the crate links nothing native itself,
/// libcuda is opened at run time with dlopen). On glibc >= 2.34 most are stubs
/// merged into libc, but older glibc needs every one.
const NATIVE_STATIC_LIBS: &[&str] = &[
    "-ldl",
    "-lgcc_s",
    "-lutil",
    "-lrt",
    "-lpthread",
    "-lm",
    "-ldl",
    "-lc",
];

/// Only verified for linux-gnu (link flags, rpath, library names): anywhere
/// else this test fails rather than passing without having run.
fn check_target() {
    let target = env!("KERNPACK_TARGET");
    assert!(
        target.contains("-linux-gnu"),
        "tests/ffi_programs.rs supports *-linux-gnu targets only, not {target}: \
         add its native-static-libs, shared library name and rpath syntax"
    );
}

const SHARED_LIB: &str = "libkernpack.so";

fn exe_name(program: &str, lang: Lang, link: Link) -> String {
    let lang = match lang {
        Lang::C => "c",
        Lang::Cpp => "cpp",
    };
    let link = match link {
        Link::Static => "static",
        Link::Shared => "shared",
    };
    format!("{program}_{lang}_{link}{}", env::consts::EXE_SUFFIX)
}

/// Where the libraries are and where the programs go.
struct Setup {
    lib_dir: PathBuf,
    staticlib: PathBuf,
    out_dir: PathBuf,
}

fn setup() -> &'static Setup {
    static SETUP: OnceLock<Setup> = OnceLock::new();
    SETUP.get_or_init(|| {
        let exe = env::current_exe().expect("path of the test executable");
        let deps = exe
            .parent()
            .expect("the test executable is in a directory")
            .to_path_buf();
        let profile_dir = deps.parent().map(Path::to_path_buf);
        let candidates: Vec<PathBuf> = std::iter::once(deps.clone())
            .chain(profile_dir.clone())
            .collect();
        let lib_dir = candidates
            .iter()
            .find(|d| d.join("libkernpack.a").is_file() && d.join(SHARED_LIB).is_file())
            .unwrap_or_else(|| {
                panic!(
                    "libkernpack.a and {SHARED_LIB} were not found in any of {candidates:?}. \
                     `cargo test` builds them next to the test executable (crate-type = \
                     [\"rlib\", \"cdylib\", \"staticlib\"] in Cargo.toml); if this executable was \
                     copied elsewhere, set KERNPACK_FFI_PREBUILT to a folder of prebuilt programs"
                )
            })
            .clone();
        // target/<profile>/deps -> target/ffi-tests/<profile>
        let profile_dir = profile_dir.expect("target/<profile>/deps has a parent");
        let profile = profile_dir.file_name().expect("profile folder name");
        let out_dir = profile_dir
            .parent()
            .expect("target/<profile> has a parent")
            .join("ffi-tests")
            .join(profile);
        fs::create_dir_all(&out_dir)
            .unwrap_or_else(|e| panic!("creating {}: {e}", out_dir.display()));
        // A copy beside the programs (found through $ORIGIN) makes the folder
        // self-contained. Copy then rename: a running program may map the old one.
        let so = out_dir.join(SHARED_LIB);
        let tmp = out_dir.join(format!(".{SHARED_LIB}.tmp{}", std::process::id()));
        fs::copy(lib_dir.join(SHARED_LIB), &tmp)
            .and_then(|_| fs::rename(&tmp, &so))
            .unwrap_or_else(|e| panic!("copying the shared library to {}: {e}", so.display()));
        println!("libraries: {}", lib_dir.display());
        println!("programs:  {}", out_dir.display());
        Setup {
            staticlib: lib_dir.join("libkernpack.a"),
            lib_dir,
            out_dir,
        }
    })
}

/// The C or C++ compiler the `cc` crate picks for this target (honours CC,
/// CXX, CFLAGS, CXXFLAGS...), with its default flags.
fn compiler(lang: Lang) -> cc::Tool {
    let tool = cc::Build::new()
        .cargo_metadata(false)
        .cargo_warnings(false)
        .target(env!("KERNPACK_TARGET"))
        .host(env!("KERNPACK_HOST"))
        .opt_level(0)
        .debug(true)
        .cpp(lang == Lang::Cpp)
        .try_get_compiler()
        .unwrap_or_else(|e| panic!("the cc crate found no {lang:?} compiler: {e}"));
    assert!(
        !tool.is_like_msvc(),
        "tests/ffi_programs.rs passes GCC/Clang-style flags; MSVC is not supported"
    );
    tool
}

fn build(program: &str, lang: Lang, link: Link) -> PathBuf {
    let setup = setup();
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let exe = setup.out_dir.join(exe_name(program, lang, link));
    let (source, std) = match lang {
        Lang::C => (format!("ffi-tests/{program}.c"), "-std=c99"),
        Lang::Cpp => (format!("ffi-tests/{program}.cpp"), "-std=c++17"),
    };
    let mut cmd = compiler(lang).to_command();
    cmd.args([std, "-Wall", "-Wextra", "-Werror", "-pedantic-errors"])
        .arg("-I")
        .arg(root.join("include"))
        .arg(root.join(&source))
        .arg("-o")
        .arg(&exe);
    match link {
        Link::Static => {
            // The archive by path, so the linker cannot pick the shared object.
            cmd.arg(&setup.staticlib).args(NATIVE_STATIC_LIBS);
        }
        Link::Shared => {
            // `-l:` names the shared object exactly, so the archive beside it
            // cannot be picked. DT_NEEDED is then "libkernpack.so" (the cdylib
            // has no soname), found through the rpath: the library folder
            // first, then the programs' own folder.
            let mut rpath = OsString::from("-Wl,-rpath,");
            rpath.push(&setup.lib_dir);
            cmd.arg("-L")
                .arg(&setup.lib_dir)
                .arg("-l:libkernpack.so")
                .arg(rpath)
                .arg("-Wl,-rpath,$ORIGIN")
                .arg("-lm");
        }
    }
    let output = cmd
        .output()
        .unwrap_or_else(|e| panic!("cannot run the compiler {cmd:?}: {e}"));
    assert!(
        output.status.success(),
        "building {} failed ({}):\n{cmd:?}\n--- stdout\n{}\n--- stderr\n{}",
        exe.display(),
        output.status,
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr),
    );
    exe
}

/// `KERNPACK_FFI_PREBUILT`, which must then be a folder.
fn prebuilt_dir() -> Option<PathBuf> {
    let dir = PathBuf::from(env::var_os("KERNPACK_FFI_PREBUILT")?);
    assert!(
        dir.is_dir(),
        "KERNPACK_FFI_PREBUILT={} is not a directory",
        dir.display()
    );
    Some(dir)
}

/// `dir` first on the program's LD_LIBRARY_PATH, ahead of what the test
/// itself was given.
fn library_first(cmd: &mut Command, dir: &Path) {
    let mut paths = vec![dir.to_path_buf()];
    paths.extend(
        env::var_os("LD_LIBRARY_PATH")
            .iter()
            .flat_map(env::split_paths),
    );
    cmd.env("LD_LIBRARY_PATH", env::join_paths(paths).unwrap());
}

fn run(program: &str, lang: Lang, link: Link) {
    check_target();
    let mut cmd;
    let exe = match prebuilt_dir() {
        Some(dir) => {
            let exe = dir.join(exe_name(program, lang, link));
            assert!(
                exe.is_file(),
                "KERNPACK_FFI_PREBUILT={}: {} is missing (build the programs with \
                 `cargo test --test ffi_programs` and copy target/ffi-tests/<profile>/)",
                dir.display(),
                exe.display()
            );
            cmd = Command::new(&exe);
            // Ahead of the rpath: the library shipped with the programs.
            library_first(&mut cmd, &dir);
            exe
        }
        None => {
            let exe = build(program, lang, link);
            cmd = Command::new(&exe);
            // `cargo test` puts target/<profile> on LD_LIBRARY_PATH, which the
            // loader searches before the programs' RUNPATH: a libkernpack.so
            // left there by an earlier `cargo build` would shadow the one just
            // built (and lack its newest functions).
            library_first(&mut cmd, &setup().lib_dir);
            exe
        }
    };
    let output = cmd
        .output()
        .unwrap_or_else(|e| panic!("cannot run {}: {e}", exe.display()));
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    println!("--- {}\n{stdout}{stderr}", exe.display());
    assert!(
        output.status.success() && stdout.contains("all checks passed"),
        "{} failed ({}):\n--- stdout\n{stdout}\n--- stderr\n{stderr}",
        exe.display(),
        output.status
    );
    if env::var("KERNPACK_REQUIRE_GPU").is_ok_and(|v| v == "1") {
        assert!(
            stdout.contains("AUTO context runs on the GPU"),
            "KERNPACK_REQUIRE_GPU=1 but {} ran on the CPU:\n{stdout}",
            exe.display()
        );
    }
}

/// Four tests per program: C and C++, linked statically and dynamically.
macro_rules! ffi_programs {
    ($($program:ident),* $(,)?) => {$(
        mod $program {
            use super::*;
            #[test]
            fn c_static() {
                run(stringify!($program), Lang::C, Link::Static);
            }
            #[test]
            fn c_shared() {
                run(stringify!($program), Lang::C, Link::Shared);
            }
            #[test]
            fn cpp_static() {
                run(stringify!($program), Lang::Cpp, Link::Static);
            }
            #[test]
            fn cpp_shared() {
                run(stringify!($program), Lang::Cpp, Link::Shared);
            }
        }
    )*};
}

// One line per program in ffi-tests/ (NAME.c and NAME.cpp).
ffi_programs!(
    lombscargle,
    bls,
    phasefold,
    streams,
    ode_lorenz,
    ode_fg,
    stencil,
    gaussian,
    median,
    uniform
);
