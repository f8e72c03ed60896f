//! The tests' reader of csrc/: every `extern "C" __global__` entry point of
//! each `csrc/<family>.cu`, after its entry-point macros are expanded, with
//! its C parameter types. The tests hold the kernel list build.rs reads from
//! the fatbin to these names (tests/kernel_list.rs) and every typed
//! declaration of src/gpu/kernels.rs to these prototypes (its unit tests);
//! without a compiler to ask (nor libclang), this is a small reader of the
//! subset of C that csrc/ uses to spell its entry points.
use std::collections::{BTreeSet, HashMap};
use std::path::Path;

/// One `extern "C"` kernel: its name in the fatbin and its parameter types in
/// the normal form of [`entry_points`].
pub struct EntryPoint {
    pub name: String,
    pub params: Vec<String>,
}

/// One kernel family: `csrc/<name>.cu`, loaded as one module.
pub struct Family {
    pub name: String,
    pub kernels: Vec<EntryPoint>,
}

/// Every family of `csrc`, sorted by name (the order of the fatbin's
/// containers, which build.rs also writes by sorted file name), each with its
/// entry points in source order. An error for a family without entry points
/// or a name defined twice, which the loader could not tell apart.
pub fn read_families(csrc: &Path) -> Result<Vec<Family>, String> {
    let listing =
        std::fs::read_dir(csrc).map_err(|e| format!("reading {}: {e}", csrc.display()))?;
    let mut files: Vec<_> = listing
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "cu"))
        .collect();
    files.sort();
    let mut seen = BTreeSet::new();
    let mut families = Vec::new();
    for file in files {
        let source = std::fs::read_to_string(&file)
            .map_err(|e| format!("reading {}: {e}", file.display()))?;
        let name = file.file_stem().unwrap().to_string_lossy().into_owned();
        let kernels: Vec<EntryPoint> = entry_points(&source)
            .into_iter()
            .map(|(name, params)| EntryPoint { name, params })
            .collect();
        if kernels.is_empty() {
            return Err(format!(
                "csrc/{name}.cu has no extern \"C\" __global__ entry point"
            ));
        }
        if let Some(k) = kernels.iter().find(|k| !seen.insert(k.name.clone())) {
            return Err(format!("the kernel {} is defined twice in csrc/", k.name));
        }
        families.push(Family { name, kernels });
    }
    Ok(families)
}

struct Macro {
    params: Vec<String>,
    body: String,
}

/// The entry points of a .cu file: comments dropped, the function-like
/// macros expanded (parameters substituted, `##` pasted, the result
/// rescanned), then each `extern "C" __global__` function's name and
/// parameter types in a normal form: `const T*` / `T*` for pointers
/// (`__restrict__` and names dropped), top-level `const` of a value dropped,
/// `int32_t` as `int`, constant template arguments evaluated.
pub fn entry_points(source: &str) -> Vec<(String, Vec<String>)> {
    let text = strip_comments(&source.replace("\\\n", " "));
    let mut macros = HashMap::new();
    let mut code = String::new();
    for line in text.lines() {
        let line = line.trim_start();
        if let Some(define) = line.strip_prefix("#define") {
            let define = define.trim_start();
            let name_end = define.find(|c: char| !is_ident(c)).unwrap_or(define.len());
            let (name, rest) = define.split_at(name_end);
            // Function-like macros only (the '(' right after the name).
            if let Some(rest) = rest.strip_prefix('(') {
                let close = rest.find(')').expect("macro parameter list");
                let params = rest[..close]
                    .split(',')
                    .map(|p| p.trim().to_owned())
                    .filter(|p| !p.is_empty())
                    .collect();
                let body = rest[close + 1..].trim().to_owned();
                macros.insert(name.to_owned(), Macro { params, body });
            }
        } else if !line.starts_with('#') {
            code.push_str(line);
            code.push('\n');
        }
    }
    let expanded = expand(&code, &macros, 0);
    let mut found = Vec::new();
    let marker = "extern \"C\" __global__";
    let mut rest = expanded.as_str();
    while let Some(at) = rest.find(marker) {
        rest = &rest[at + marker.len()..];
        let (name, params, after) = function(rest);
        found.push((name, params));
        rest = after;
    }
    found
}

fn is_ident(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_'
}

fn strip_comments(text: &str) -> String {
    let mut out = String::new();
    let mut rest = text;
    loop {
        let line = rest.find("//");
        let block = rest.find("/*");
        match (line, block) {
            (None, None) => break,
            (Some(l), b) if b.map_or(true, |b| l < b) => {
                out.push_str(&rest[..l]);
                rest = rest[l..].find('\n').map_or("", |e| &rest[l + e..]);
            }
            (_, Some(b)) => {
                out.push_str(&rest[..b]);
                out.push(' ');
                let end = rest[b + 2..].find("*/").expect("unterminated comment");
                rest = &rest[b + 2 + end + 2..];
            }
            _ => unreachable!(),
        }
    }
    out.push_str(rest);
    out
}

/// Index of the parenthesis that closes the one at `open`.
fn closing(text: &str, open: usize) -> usize {
    let mut depth = 0;
    for (i, c) in text[open..].char_indices() {
        match c {
            '(' => depth += 1,
            ')' => {
                depth -= 1;
                if depth == 0 {
                    return open + i;
                }
            }
            _ => {}
        }
    }
    panic!("unbalanced parentheses in {text:?}");
}

/// Splits at the commas outside parentheses and, when `angles`,
/// outside template angle brackets.
fn split_top(text: &str, angles: bool) -> Vec<String> {
    let (mut parts, mut depth, mut start) = (Vec::new(), 0i32, 0);
    for (i, c) in text.char_indices() {
        match c {
            '(' => depth += 1,
            '<' if angles => depth += 1,
            ')' => depth -= 1,
            '>' if angles => depth -= 1,
            ',' if depth == 0 => {
                parts.push(text[start..i].trim().to_owned());
                start = i + 1;
            }
            _ => {}
        }
    }
    parts.push(text[start..].trim().to_owned());
    parts.retain(|p| !p.is_empty());
    parts
}

fn expand(text: &str, macros: &HashMap<String, Macro>, depth: usize) -> String {
    assert!(depth < 16, "macro recursion");
    let mut out = String::new();
    let mut i = 0;
    let bytes = text.as_bytes();
    while i < text.len() {
        let c = bytes[i] as char;
        if !is_ident(c) || (i > 0 && is_ident(bytes[i - 1] as char)) {
            out.push(c);
            i += 1;
            continue;
        }
        let end = text[i..]
            .find(|c: char| !is_ident(c))
            .map_or(text.len(), |e| i + e);
        let word = &text[i..end];
        let open = text[end..]
            .find(|c: char| !c.is_whitespace())
            .map(|o| end + o)
            .filter(|&o| bytes[o] == b'(');
        match (macros.get(word), open) {
            (Some(m), Some(open)) => {
                let close = closing(text, open);
                let mut args = split_top(&text[open + 1..close], false);
                let mut params = m.params.clone();
                if params.last().is_some_and(|p| p == "...") {
                    // Variadic: the arguments from the last parameter's place
                    // on are __VA_ARGS__ (commas in braces split them too).
                    let fixed = params.len() - 1;
                    assert!(args.len() >= fixed, "arguments of {word}");
                    let rest = args.split_off(fixed).join(", ");
                    args.push(rest);
                    params[fixed] = "__VA_ARGS__".to_owned();
                }
                assert_eq!(args.len(), params.len(), "arguments of {word}");
                let body = substitute(&m.body, &params, &args);
                out.push(' ');
                out.push_str(&expand(&body, macros, depth + 1));
                out.push(' ');
                i = close + 1;
            }
            _ => {
                out.push_str(word);
                i = end;
            }
        }
    }
    out
}

/// The macro body with each parameter (a whole identifier) replaced by
/// its argument, then `##` pasted.
fn substitute(body: &str, params: &[String], args: &[String]) -> String {
    let mut out = String::new();
    let mut rest = body;
    while !rest.is_empty() {
        let end = if rest.starts_with(is_ident) {
            rest.find(|c: char| !is_ident(c)).unwrap_or(rest.len())
        } else {
            rest.find(is_ident).unwrap_or(rest.len())
        };
        let token = &rest[..end];
        match params.iter().position(|p| p == token) {
            Some(k) => out.push_str(&args[k]),
            None => out.push_str(token),
        }
        rest = &rest[end..];
    }
    let mut pasted = String::new();
    for (k, piece) in out.split("##").enumerate() {
        pasted.push_str(if k == 0 {
            piece.trim_end()
        } else {
            piece.trim()
        });
    }
    pasted
}

/// After `extern "C" __global__`: the name and parameter types of the
/// function, and the text after its parameter list.
fn function(text: &str) -> (String, Vec<String>, &str) {
    let mut rest = text.trim_start();
    rest = rest
        .strip_prefix("void")
        .expect("kernels return void")
        .trim_start();
    if let Some(bounds) = rest.strip_prefix("__launch_bounds__") {
        let open = bounds.find('(').unwrap();
        rest = bounds[closing(bounds, open) + 1..].trim_start();
    }
    let open = rest.find('(').expect("parameter list");
    let name = rest[..open].trim().to_owned();
    assert!(name.chars().all(is_ident), "kernel name {name:?}");
    let close = closing(rest, open);
    let params = split_top(&rest[open + 1..close], true)
        .iter()
        .map(|p| param_type(p))
        .collect();
    (name, params, &rest[close + 1..])
}

/// `const T* __restrict__ x` -> `const T*`; `const int64_t n` -> `int64_t`.
fn param_type(param: &str) -> String {
    let param = param.replace("__restrict__", " ");
    let param = param.trim();
    // Drop the parameter's name: the last identifier.
    let name_start = param.rfind(|c: char| !is_ident(c)).map_or(0, |i| i + 1);
    let ty = param[..name_start].trim();
    let (is_const, ty) = match ty.strip_prefix("const ") {
        Some(t) => (true, t.trim()),
        None => (false, ty),
    };
    if let Some(pointee) = ty.strip_suffix('*') {
        let pointee = type_name(pointee.trim());
        if is_const {
            format!("const {pointee}*")
        } else {
            format!("{pointee}*")
        }
    } else {
        type_name(ty)
    }
}

/// Spaces dropped in template arguments, constant ones evaluated.
fn type_name(ty: &str) -> String {
    if ty == "int32_t" {
        return "int".to_owned();
    }
    let Some(open) = ty.find('<') else {
        return ty.to_owned();
    };
    let inner = &ty[open + 1..ty.rfind('>').expect("template")];
    let args: Vec<String> = split_top(inner, true)
        .iter()
        .map(|a| match eval(a) {
            Some(v) => v.to_string(),
            None => type_name(a),
        })
        .collect();
    format!("{}<{}>", ty[..open].trim(), args.join(","))
}

/// An integer expression of `+` and `*` (None if it is not one).
fn eval(expr: &str) -> Option<i64> {
    expr.split('+')
        .map(|term| {
            term.split('*')
                .map(|f| f.trim().parse::<i64>().ok())
                .product::<Option<i64>>()
        })
        .sum()
}
