//! include/kernpack.h must be what cbindgen makes of src/ffi today, with the
//! entry points' docs, which are on their declarations (see
//! tests/support/entry_points.rs). Regenerate with
//! `KERNPACK_BLESS=1 cargo test --test header_fresh`.
use std::path::{Path, PathBuf};

#[path = "support/entry_points.rs"]
mod support;

/// A copy of src/ffi in a temporary folder, each family's entry_points.rs
/// expanded with the docs of its declarations.
fn ffi_with_docs(root: &Path) -> PathBuf {
    fn copy(from: &Path, to: &Path) {
        std::fs::create_dir_all(to).unwrap();
        for entry in std::fs::read_dir(from).unwrap() {
            let path = entry.unwrap().path();
            let target = to.join(path.file_name().unwrap());
            match path.is_dir() {
                true => copy(&path, &target),
                false => drop(std::fs::copy(&path, &target).unwrap()),
            }
        }
    }
    let ffi = root.join("src/ffi");
    let copied = std::env::temp_dir().join(format!("kernpack-header-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&copied);
    copy(&ffi, &copied);
    for family in support::FAMILIES {
        let source = std::fs::read_to_string(ffi.join(format!("{family}.rs"))).unwrap();
        let path = copied.join(family).join("entry_points.rs");
        std::fs::write(path, support::expand(family, &source, true)).unwrap();
    }
    copied
}

#[test]
fn c_header_is_fresh() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let config = cbindgen::Config::from_file(root.join("cbindgen.toml")).expect("cbindgen.toml");
    // with_src parses the sources directly (no `cargo metadata`), so the test
    // also runs where only the source tree and the test binary are present.
    let ffi = ffi_with_docs(root);
    let bindings = cbindgen::Builder::new()
        .with_config(config)
        .with_src(ffi.join("mod.rs"))
        .generate()
        .expect("cbindgen could not parse src/");
    std::fs::remove_dir_all(&ffi).unwrap();
    let mut generated = Vec::new();
    bindings.write(&mut generated);
    let generated = String::from_utf8(generated).unwrap();
    let path = root.join("include/kernpack.h");
    if std::env::var("KERNPACK_BLESS").is_ok_and(|v| v == "1") {
        std::fs::write(&path, &generated).unwrap();
        return;
    }
    let committed = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        committed == generated,
        "include/kernpack.h is stale: run `KERNPACK_BLESS=1 cargo test --test header_fresh` and commit it"
    );
}
