//! The C ABI's per-dtype entry points are generated: each operation is
//! declared once in its family's file under src/ffi, as a struct of its C
//! arguments generic over the element type `T`, with the function's docs:
//!
//! ```text
//! /// Sum of the `n` values at host `x`, in {precision}, ...
//! struct kp_sum<T> {
//!     x: *const T,
//!     n: usize,
//!     sum: *mut f64,
//! }
//! ```
//!
//! or as an alias of a struct that several operations share, with the
//! function's docs (`type kp_lorenz05<T> = HostRun<T, kp_lorenz05_params>;`),
//! and tests/ffi_entry_points.rs expands each declaration into one `#[no_mangle] extern "C"`
//! function per dtype (`kp_sum_f32`, `kp_sum_f64`) in the family's
//! `entry_points.rs`, which is committed because cbindgen, which makes
//! include/kernpack.h, does not expand macros. It fails when a committed file
//! is not what the declarations give; regenerate with
//! `KERNPACK_BLESS=1 cargo test --test ffi_entry_points`.
//!
//! The rules: every function takes `ctx: *const kp_context` first, then the
//! declaration's fields; a device entry point (its name ends in `_device`,
//! its struct implements `DeviceEntry`) also takes `stream: u64` last and
//! calls `.enqueue(ctx, stream)`, the others (`Entry`) `.run(ctx)`. `T` in a field's type becomes the dtype's Rust type,
//! an alias's arguments its struct's type parameters; a field whose type is
//! another struct of the same file, or of src/ffi/args.rs (the arguments
//! several families share), stands for that struct's fields (in
//! order, as C arguments; none for `struct Name {}`); a field whose name
//! starts with `_` is not a C argument (a marker of `T`). `{dtype}` and `{precision}` in the docs become
//! the name suffix and "single precision" / "double precision"; a
//! `// dtypes: c64 = f32, c128 = f64` line just above the docs names the
//! suffixes (default: f32 and f64).
//!
//! The docs exist once, on the declarations: the committed files hold the
//! functions without them, and tests/header_fresh.rs runs cbindgen on a copy
//! of src/ffi whose entry_points.rs files are expanded with the docs (the
//! first dtype's function carries the declaration's docs, the others point
//! to it).
use std::collections::HashMap;

pub const FAMILIES: &[&str] = &[
    "bls",
    "correlate",
    "fg",
    "lombscargle",
    "lombscargle_chi2",
    "lombscargle_multiband",
    "lorenz",
    "lorenz63",
    "phasefold",
    "reduce",
    "significance",
    "stencil",
];

/// The structs of C arguments several families share: a declaration's
/// field may name one of them as it names a struct of its own file.
const SHARED: &str = include_str!("../../src/ffi/args.rs");

/// A struct of a family's source: its type parameters and (name, type) fields.
struct Struct {
    params: Vec<String>,
    fields: Vec<(String, String)>,
}

pub struct Declaration {
    name: String,
    docs: Vec<String>,
    /// (suffix, Rust type) per generated function.
    dtypes: Vec<(String, String)>,
    /// The struct whose fields are the C arguments, and its type arguments
    /// (in terms of the declaration's `T`).
    base: String,
    args: Vec<String>,
}

/// `Name<A, B<C>>` as ("Name", ["A", "B<C>"]); no `<`: no arguments.
fn split_generic(ty: &str) -> (String, Vec<String>) {
    let Some(open) = ty.find('<') else {
        return (ty.trim().to_string(), Vec::new());
    };
    let inner = &ty[open + 1..ty.rfind('>').expect("a closing `>`")];
    let (mut args, mut depth, mut current) = (Vec::new(), 0, String::new());
    for c in inner.chars() {
        match c {
            '<' => depth += 1,
            '>' => depth -= 1,
            ',' if depth == 0 => {
                args.push(current.trim().to_string());
                current.clear();
                continue;
            }
            _ => {}
        }
        current.push(c);
    }
    args.push(current.trim().to_string());
    (ty[..open].trim().to_string(), args)
}

/// Every struct of a family's source and of [`SHARED`], by name (the
/// family's own first).
fn structs(source: &str) -> HashMap<String, Struct> {
    let mut found = structs_of(SHARED);
    found.extend(structs_of(source));
    found
}

/// Every struct of one source file, by name.
fn structs_of(source: &str) -> HashMap<String, Struct> {
    let lines: Vec<&str> = source.lines().collect();
    let mut found = HashMap::new();
    for (at, line) in lines.iter().enumerate() {
        let line = line.trim_start_matches("pub(crate) ");
        let Some(head) = line.strip_prefix("struct ") else {
            continue;
        };
        // `struct Name {}` (as rustfmt writes a struct of no fields) stands
        // for no C arguments.
        if let Some(head) = head.strip_suffix(" {}") {
            let (name, params) = split_generic(head);
            let fields = Vec::new();
            found.insert(name, Struct { params, fields });
            continue;
        }
        let Some(head) = head.strip_suffix(" {") else {
            continue;
        };
        let (name, params) = split_generic(head);
        let fields = lines[at + 1..]
            .iter()
            .take_while(|l| **l != "}")
            .map(|l| l.trim().trim_start_matches("pub(crate) "))
            .filter(|l| !l.starts_with("//") && !l.starts_with('#'))
            .map(|l| {
                let (field, ty) = l.trim_end_matches(',').split_once(": ").expect("a field");
                (field.to_string(), ty.to_string())
            })
            .collect();
        found.insert(name, Struct { params, fields });
    }
    found
}

/// The declarations of one family's source, in order.
pub fn declarations(source: &str) -> Vec<Declaration> {
    let lines: Vec<&str> = source.lines().collect();
    let mut found = Vec::new();
    for (at, line) in lines.iter().enumerate() {
        let line = line.trim_start_matches("pub(crate) ");
        let (name, base, args) = if let Some(rest) = line.strip_prefix("struct kp_") {
            let Some(name) = rest.strip_suffix("<T> {") else {
                continue;
            };
            let name = format!("kp_{name}");
            (name.clone(), name, vec!["T".to_string()])
        } else if let Some(rest) = line.strip_prefix("type kp_") {
            let (name, target) = rest.split_once("<T> = ").expect("`type kp_name<T> = ...`");
            let (base, args) = split_generic(target.trim_end_matches(';'));
            (format!("kp_{name}"), base, args)
        } else {
            continue;
        };
        let mut first_doc = at;
        while first_doc > 0 && lines[first_doc - 1].starts_with("///") {
            first_doc -= 1;
        }
        let docs = lines[first_doc..at].iter().map(|l| l.to_string()).collect();
        let dtypes = match first_doc.checked_sub(1).map(|i| lines[i]) {
            Some(marker) if marker.starts_with("// dtypes: ") => marker["// dtypes: ".len()..]
                .split(", ")
                .map(|pair| {
                    let (suffix, ty) = pair.split_once(" = ").expect("`suffix = type`");
                    (suffix.to_string(), ty.to_string())
                })
                .collect(),
            _ => vec![("f32".into(), "f32".into()), ("f64".into(), "f64".into())],
        };
        found.push(Declaration {
            name,
            docs,
            dtypes,
            base,
            args,
        });
    }
    found
}

/// `ty` with each type parameter of `map` (a whole word) replaced.
pub fn substitute(ty: &str, map: &HashMap<String, String>) -> String {
    let mut out = String::new();
    let mut word = String::new();
    for c in ty.chars().chain(std::iter::once(' ')) {
        if c.is_alphanumeric() || c == '_' {
            word.push(c);
            continue;
        }
        out.push_str(map.get(&word).unwrap_or(&word));
        word.clear();
        out.push(c);
    }
    out.pop();
    out
}

/// The C parameters (`name: type`) and the struct literal's fields of
/// struct `name` with type arguments `args`, nested structs flattened.
fn arguments(
    structs: &HashMap<String, Struct>,
    name: &str,
    args: &[String],
    params: &mut Vec<String>,
) -> Vec<String> {
    let s = structs
        .get(name)
        .unwrap_or_else(|| panic!("no struct {name}"));
    let map: HashMap<String, String> = s.params.iter().cloned().zip(args.iter().cloned()).collect();
    let mut inits = Vec::new();
    for (field, ty) in &s.fields {
        let ty = substitute(ty, &map);
        let (head, nested_args) = split_generic(&ty);
        if field.starts_with('_') {
            inits.push(format!("{field}: PhantomData"));
        } else if structs.contains_key(&head) {
            let nested = arguments(structs, &head, &nested_args, params);
            inits.push(format!("{field}: {head} {{ {} }}", nested.join(", ")));
        } else {
            params.push(format!("{field}: {ty}"));
            inits.push(field.clone());
        }
    }
    inits
}

/// The family's entry_points.rs, with the declarations' docs (`docs`: what
/// cbindgen reads for the header) or without them (the committed file). One
/// line per signature: the file is generated, and rustfmt skips it (its
/// `mod` item is `#[rustfmt::skip]`).
pub fn expand(family: &str, source: &str, docs: bool) -> String {
    let structs = structs(source);
    let mut out = format!(
        "//! Generated by tests/ffi_entry_points.rs from the declarations in \
         src/ffi/{family}.rs: do not edit.\n"
    );
    if !docs {
        out.push_str(
            "//! The functions' docs and safety contracts are on the declarations, and in \
             include/kernpack.h.\n#![allow(clippy::missing_safety_doc)]\n",
        );
    }
    out.push_str("use super::*;\n");
    for d in declarations(source) {
        let first = format!("{}_{}", d.name, d.dtypes[0].0);
        for (i, (suffix, ty)) in d.dtypes.iter().enumerate() {
            let precision = match ty.as_str() {
                "f32" => "single precision",
                _ => "double precision",
            };
            out.push('\n');
            match (docs, i) {
                (false, _) => {}
                (true, 0) => {
                    for doc in &d.docs {
                        let doc = doc.replace("{dtype}", suffix);
                        out.push_str(&doc.replace("{precision}", precision));
                        out.push('\n');
                    }
                }
                (true, _) => out.push_str(&format!(
                    "/// As `{first}`, in {precision}.\n///\n/// # Safety\n/// As `{first}`.\n"
                )),
            }
            let dtype = HashMap::from([("T".to_string(), ty.clone())]);
            let args: Vec<_> = d.args.iter().map(|a| substitute(a, &dtype)).collect();
            let mut params = vec!["ctx: *const kp_context".to_string()];
            let inits = arguments(&structs, &d.base, &args, &mut params);
            let call = match d.name.ends_with("_device") {
                true => {
                    params.push("stream: u64".into());
                    "enqueue(ctx, stream)"
                }
                false => "run(ctx)",
            };
            let name = &d.name;
            out.push_str(&format!(
                "#[no_mangle]\npub unsafe extern \"C\" fn {name}_{suffix}({}) -> kp_status {{\n    \
                 unsafe {{ {name}::<{ty}> {{ {} }}.{call} }}\n}}\n",
                params.join(", "),
                inits.join(", ")
            ));
        }
    }
    out
}
