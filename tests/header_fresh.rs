//! include/kernpack.h must be what cbindgen makes of src/ffi today.
//! Regenerate with `KERNPACK_BLESS=1 cargo test --test header_fresh`.
use std::path::Path;

#[test]
fn c_header_is_fresh() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let config = cbindgen::Config::from_file(root.join("cbindgen.toml")).expect("cbindgen.toml");
    // with_src parses the sources directly (no `cargo metadata`), so the test
    // also runs where only the source tree and the test binary are present.
    let bindings = cbindgen::Builder::new()
        .with_config(config)
        .with_src(root.join("src/ffi/mod.rs"))
        .generate()
        .expect("cbindgen could not parse src/");
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
