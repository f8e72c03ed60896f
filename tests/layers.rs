//! The layers of src/ import one way (README, "Layers"): the plain types
//! (`params`), the CPU backend (`cpu`), the GPU launch code (`gpu`) and the
//! reference never name the safe API (`crate::api`), and the reference, the
//! oracle, is named by test code only (tests, benches, `#[cfg(test)]` items).
use std::fs;
use std::path::{Path, PathBuf};

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The code of `source` that the library compiles outside tests: comments
/// dropped, and every item under `#[cfg(test)]` cut out (from the attribute
/// to the end of its braced body, or its `;`).
fn production_code(source: &str) -> String {
    let lines: Vec<&str> = source
        .lines()
        .filter(|l| !l.trim_start().starts_with("//"))
        .collect();
    let code = lines.join("\n");
    let mut out = String::new();
    let mut rest = code.as_str();
    while let Some(at) = rest.find("#[cfg(test)]") {
        out.push_str(&rest[..at]);
        let item = &rest[at..];
        let body = item.find(['{', ';']).expect("an item after #[cfg(test)]");
        let end = if item.as_bytes()[body] == b';' {
            body + 1
        } else {
            let mut depth = 0usize;
            let mut end = item.len();
            for (i, c) in item[body..].char_indices() {
                match c {
                    '{' => depth += 1,
                    '}' => {
                        depth -= 1;
                        if depth == 0 {
                            end = body + i + 1;
                            break;
                        }
                    }
                    _ => {}
                }
            }
            end
        };
        rest = &item[end..];
    }
    out.push_str(rest);
    out
}

/// The files of modules declared `#[cfg(test)] mod name;`: `name.rs` and
/// `name/` beside the declaring file (or in its folder for mod.rs/lib.rs).
fn test_only_modules(files: &[PathBuf]) -> Vec<PathBuf> {
    let mut modules = Vec::new();
    for file in files {
        let source = fs::read_to_string(file).unwrap();
        let lines: Vec<&str> = source.lines().map(str::trim).collect();
        let folder = match file.file_stem().and_then(|s| s.to_str()) {
            Some("mod" | "lib") => file.parent().unwrap().to_path_buf(),
            _ => file.with_extension(""),
        };
        for pair in lines.windows(2) {
            if let ("#[cfg(test)]", Some(name)) = (pair[0], pair[1].strip_prefix("mod ")) {
                if let Some(name) = name.strip_suffix(';') {
                    modules.push(folder.join(format!("{name}.rs")));
                    modules.push(folder.join(name));
                }
            }
        }
    }
    modules
}

fn files_under(dir: &str) -> Vec<PathBuf> {
    let mut files = Vec::new();
    rust_files(&Path::new(env!("CARGO_MANIFEST_DIR")).join(dir), &mut files);
    files
}

#[test]
fn lower_layers_never_name_the_api() {
    let mut offenders = Vec::new();
    for dir in ["src/params", "src/cpu", "src/gpu", "src/reference"] {
        for file in files_under(dir) {
            let code = production_code(&fs::read_to_string(&file).unwrap());
            if code.contains("crate::api") || code.contains("kernpack::api") {
                offenders.push(file.display().to_string());
            }
        }
    }
    assert!(offenders.is_empty(), "these import the API: {offenders:?}");
}

#[test]
fn only_tests_name_the_reference() {
    let files = files_under("src");
    let test_only = test_only_modules(&files);
    let mut offenders = Vec::new();
    for file in files {
        let path = file.display().to_string();
        if path.contains("/src/reference/") || test_only.iter().any(|m| file.starts_with(m)) {
            continue;
        }
        let code = production_code(&fs::read_to_string(&file).unwrap());
        if code.contains("reference::") || code.contains("use crate::reference") {
            offenders.push(path);
        }
    }
    assert!(
        offenders.is_empty(),
        "production code names the reference: {offenders:?}"
    );
}

/// The scan itself: a `#[cfg(test)]` item is cut, the code around it kept.
#[test]
fn the_scan_cuts_test_items_only() {
    let src = "use a;\n#[cfg(test)]\nmod tests {\n    use crate::reference::x;\n    fn f() { if true { } }\n}\nfn g() { crate::api::h(); }\n// crate::reference in a comment\n";
    let code = production_code(src);
    assert!(!code.contains("reference"), "{code}");
    assert!(
        code.contains("crate::api::h()") && code.contains("use a;"),
        "{code}"
    );
}
