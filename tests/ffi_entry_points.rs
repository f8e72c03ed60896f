//! The committed src/ffi/<family>/entry_points.rs files must be what the
//! declarations in src/ffi/<family>.rs give (the rules: tests/support/entry_points.rs).
//! Regenerate with `KERNPACK_BLESS=1 cargo test --test ffi_entry_points`.
use std::collections::HashMap;
use std::path::Path;

#[path = "support/entry_points.rs"]
mod support;
use support::{declarations, expand, substitute, FAMILIES};

#[test]
fn generated_entry_points_are_fresh() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/ffi");
    let bless = std::env::var("KERNPACK_BLESS").is_ok_and(|v| v == "1");
    let mut stale = Vec::new();
    for family in FAMILIES {
        let source = std::fs::read_to_string(root.join(format!("{family}.rs"))).unwrap();
        assert!(
            !declarations(&source).is_empty(),
            "src/ffi/{family}.rs declares no entry point"
        );
        let generated = expand(family, &source, false);
        let path = root.join(family).join("entry_points.rs");
        if bless {
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(&path, &generated).unwrap();
        } else if std::fs::read_to_string(&path).unwrap_or_default() != generated {
            stale.push(path.display().to_string());
        }
    }
    assert!(
        stale.is_empty(),
        "stale: {stale:?}; run `KERNPACK_BLESS=1 cargo test --test ffi_entry_points` and commit"
    );
}

#[test]
fn a_declaration_expands_to_one_function_per_dtype() {
    let source = "\
// dtypes: c64 = f32, c128 = f64
/// Adds in {precision}; see `kp_add_{dtype}`.
struct kp_add<T> {
    x: *const T,
    n: usize,
    _dtype: PhantomData<T>,
}
";
    assert_eq!(declarations(source).len(), 1);
    let plain = expand("demo", source, false);
    assert!(!plain.contains("/// "), "{plain}");
    let code = expand("demo", source, true);
    assert!(
        code.contains("/// Adds in single precision; see `kp_add_c64`.\n"),
        "{code}"
    );
    assert!(
        code.contains("/// As `kp_add_c64`, in double precision.\n"),
        "{code}"
    );
    assert!(
        code.contains(
            "fn kp_add_c128(ctx: *const kp_context, x: *const f64, n: usize) -> kp_status"
        ),
        "{code}"
    );
    assert!(
        code.contains("kp_add::<f64> { x, n, _dtype: PhantomData }.run(ctx)"),
        "{code}"
    );
    let t = HashMap::from([("T".to_string(), "f32".to_string())]);
    assert_eq!(substitute("*const Tx<T>", &t), "*const Tx<f32>");
}

#[test]
fn an_alias_takes_its_struct_s_fields_and_nested_structs_are_flattened() {
    let source = "\
/// The grid.
struct Grid<G> {
    f0: G,
    nf: usize,
}

/// Shared.
pub(crate) struct Run<T, P> {
    params: *const P,
    /// The grid's arguments.
    grid: Grid<f64>,
    out: u64,
    _dtype: PhantomData<T>,
}

/// Runs in {precision}.
type kp_run_device<T> = Run<T, kp_params>;
";
    let code = expand("demo", source, false);
    assert!(
        code.contains(
            "fn kp_run_device_f64(ctx: *const kp_context, params: *const kp_params, \
             f0: f64, nf: usize, out: u64, stream: u64) -> kp_status"
        ),
        "{code}"
    );
    assert!(
        code.contains(
            "kp_run_device::<f32> { params, grid: Grid { f0, nf }, out, _dtype: PhantomData }\
             .enqueue(ctx, stream)"
        ),
        "{code}"
    );
}

#[test]
fn a_struct_of_no_fields_stands_for_no_arguments() {
    let source = "\
/// None per member.
struct Scalars {}

/// Shared.
struct Run<T, E> {
    x: *const T,
    each: E,
    n: usize,
}

/// Runs in {precision}.
type kp_run<T> = Run<T, Scalars>;
";
    let code = expand("demo", source, false);
    assert!(
        code.contains(
            "fn kp_run_f32(ctx: *const kp_context, x: *const f32, n: usize) -> kp_status"
        ),
        "{code}"
    );
    assert!(
        code.contains("kp_run::<f32> { x, each: Scalars {  }, n }.run(ctx)"),
        "{code}"
    );
}
