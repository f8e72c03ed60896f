//! src/gpu/c_params.rs must be what bindgen makes of csrc/kernpack_params.h today.
//! Regenerate with `KERNPACK_BLESS=1 cargo test --test params_bindings` (needs
//! libclang: `apt-get install libclang-dev`). The module is committed, so that
//! a build needs no libclang; this test is what keeps it in step with the header.
//! Where libclang cannot be loaded, the test says that it skipped and passes,
//! so that `cargo test` passes on a fresh machine; with
//! `KERNPACK_REQUIRE_BINDGEN=1` (CI, which installs libclang) that is a failure.
use std::io::Write;
use std::path::Path;

/// The first lines of the module, after bindgen's own.
const PREAMBLE: &str = "\
//! The structs and constants of csrc/kernpack_params.h, shared by the host and
//! the kernels: generated from that header by bindgen, not written by hand.
//! Regenerate with `KERNPACK_BLESS=1 cargo test --test params_bindings` (needs
//! libclang); that test fails while this file is stale. The `const _` blocks
//! are bindgen's layout tests, checked at compile time: a struct whose size,
//! alignment or field offsets differ from clang's layout of the C one does not build.";

fn generate(root: &Path) -> String {
    let header = root.join("csrc/kernpack_params.h");
    let bindings = bindgen::Builder::default()
        .header(header.to_str().expect("a UTF-8 path"))
        .clang_arg("-std=c11")
        .allowlist_item("kp_.*|KP_.*")
        // C enums (all anonymous here) as constants, not Rust enums.
        .default_enum_style(bindgen::EnumVariation::Consts)
        .translate_enum_integer_types(true)
        // The header's comments stay in the header: clang's parsing of plain
        // comments is one more thing that could differ between machines.
        .generate_comments(false)
        .layout_tests(true)
        .rust_target(bindgen::RustTarget::stable(80, 0).unwrap())
        .formatter(bindgen::Formatter::Prettyplease)
        .raw_line(PREAMBLE)
        .generate()
        .expect("bindgen could not parse csrc/kernpack_params.h (is libclang installed?)");
    plain_enum_constants(&bindings.to_string())
}

/// bindgen gives each anonymous enum a type alias `_bindgen_ty_N` (the enum's
/// integer type as clang sees it, `u32` here) and its constants that type. In
/// C an enumeration constant is an `int`, and the host stores these in
/// `int32_t` fields (`normalize`, `mode`): they become plain `i32` constants.
fn plain_enum_constants(code: &str) -> String {
    let mut out = String::with_capacity(code.len());
    for line in code.lines() {
        if line.starts_with("pub type _bindgen_ty_") {
            continue;
        }
        match line.split_once(": _bindgen_ty_") {
            // `pub const KP_X: _bindgen_ty_N = value;`
            Some((head, rest)) if head.starts_with("pub const ") => {
                let value = rest.split_once(" = ").expect("a constant's value").1;
                out.push_str(&format!("{head}: i32 = {value}"));
            }
            _ => out.push_str(line),
        }
        out.push('\n');
    }
    assert!(
        !out.contains("_bindgen_ty_"),
        "an anonymous enum type is left in the bindings:\n{out}"
    );
    out
}

/// Loads libclang as bindgen would (clang-sys's search: `LIBCLANG_PATH`, then
/// `llvm-config` and the system's library folders) and reports whether it
/// could. Only a libclang that cannot be found or opened is a skip: once it
/// is loaded, any failure of bindgen fails the test.
fn libclang_loads(test: &str) -> bool {
    let Err(why) = clang_sys::load() else {
        return true;
    };
    assert!(
        !std::env::var("KERNPACK_REQUIRE_BINDGEN").is_ok_and(|v| v == "1"),
        "{test}: KERNPACK_REQUIRE_BINDGEN=1 but libclang cannot be loaded: {why}"
    );
    // Past the test harness's capture (which only takes print!/println!), so
    // that a plain `cargo test` shows that this check did not run.
    let _ = writeln!(
        std::io::stderr(),
        "SKIPPED {test}: libclang cannot be loaded ({why}); install libclang \
         (`apt-get install libclang-dev`) to check src/gpu/c_params.rs, or set \
         KERNPACK_REQUIRE_BINDGEN=1 to make this a failure"
    );
    false
}

#[test]
fn params_bindings_are_fresh() {
    if !libclang_loads("params_bindings_are_fresh") {
        return;
    }
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let generated = generate(root);
    let path = root.join("src/gpu/c_params.rs");
    if std::env::var("KERNPACK_BLESS").is_ok_and(|v| v == "1") {
        std::fs::write(&path, &generated).unwrap();
        return;
    }
    let committed = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        committed == generated,
        "src/gpu/c_params.rs is stale: run `KERNPACK_BLESS=1 cargo test --test params_bindings` and commit it"
    );
}
