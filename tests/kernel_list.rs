//! The reader that build.rs lists the kernels with
//! (src/build_support/kernel_list.rs): a build script's own code has no test
//! harness, so its tests live here. That the list it wrote matches the fatbin
//! is tests/fatbin.rs's to check; that it matches src/gpu/kernels.rs is the
//! unit tests' of that file.
#[path = "../src/build_support/kernel_list.rs"]
mod kernel_list;

use std::path::PathBuf;

use kernel_list::{entry_points, read_families, rust_lists};

/// A fresh folder under the system's temporary one, for a csrc/ of test files.
fn scratch_csrc(test: &str, files: &[(&str, &str)]) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("kernpack-{test}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    for (name, text) in files {
        std::fs::write(dir.join(name), text).unwrap();
    }
    dir
}

#[test]
fn the_reader_expands_entry_point_macros() {
    let source = r#"
        // comment: extern "C" __global__ void nope(int a) {}
        #define ONE(T, SUFFIX, R)                                              \
            extern "C" __global__ void __launch_bounds__(f<T, R>::B, 2)         \
                k_r##R##_##SUFFIX(const T* __restrict__ in, T* out,           \
                                  const kp_box_params p, W<T, 2 * R + 1> w) { \
                body(in, out, p);                                             \
            }
        #define BOTH(T, SUFFIX) ONE(T, SUFFIX, 1) ONE(T, SUFFIX, 2)
        BOTH(float, f32)
        /* extern "C" __global__ void gone() {} */
        extern "C" __global__ void __launch_bounds__(256)
            plain(const int64_t* offsets, const int n, int64_t* plan) {}
    "#;
    let found = entry_points(source);
    let spelled = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    assert_eq!(
        found,
        vec![
            (
                "k_r1_f32".to_owned(),
                spelled(&["const float*", "float*", "kp_box_params", "W<float,3>"])
            ),
            (
                "k_r2_f32".to_owned(),
                spelled(&["const float*", "float*", "kp_box_params", "W<float,5>"])
            ),
            (
                "plain".to_owned(),
                spelled(&["const int64_t*", "int", "int64_t*"])
            ),
        ]
    );
}

/// Families in file-name order (the fatbin's container order), kernels in
/// source order, headers and non-.cu files ignored; the Rust lists name them so.
#[test]
fn families_are_listed_in_container_order() {
    let dir = scratch_csrc(
        "order",
        &[
            (
                "zeta.cu",
                "#define E(S) extern \"C\" __global__ void z_##S(int* x) {}\nE(f64) E(f32)",
            ),
            (
                "alpha.cu",
                "extern \"C\" __global__ void a(const double* x) {}",
            ),
            (
                "common.cuh",
                "extern \"C\" __global__ void not_a_family(int x) {}",
            ),
        ],
    );
    let families = read_families(&dir).unwrap();
    let _ = std::fs::remove_dir_all(&dir);
    let listed: Vec<(&str, Vec<&str>)> = families
        .iter()
        .map(|f| {
            (
                f.name.as_str(),
                f.kernels.iter().map(|k| k.name.as_str()).collect(),
            )
        })
        .collect();
    assert_eq!(
        listed,
        vec![("alpha", vec!["a"]), ("zeta", vec!["z_f64", "z_f32"])]
    );
    let (names, prototypes) = rust_lists(&families);
    let body = |text: &str| text.lines().skip(1).collect::<Vec<_>>().join("\n");
    assert_eq!(
        body(&names),
        "&[\n    (\"alpha\", &[\"a\"]),\n    (\"zeta\", &[\"z_f64\", \"z_f32\"]),\n]"
    );
    assert_eq!(
        body(&prototypes),
        "&[\n    (\"a\", &[\"const double*\"]),\n    (\"z_f64\", &[\"int*\"]),\n    (\"z_f32\", &[\"int*\"]),\n]"
    );
}

/// The loader finds a kernel by name alone: a name in two files is refused,
/// and so is a family that has no kernel to load.
#[test]
fn duplicate_names_and_empty_families_are_errors() {
    let kernel = "extern \"C\" __global__ void k(int n) {}";
    let dir = scratch_csrc("twice", &[("a.cu", kernel), ("b.cu", kernel)]);
    let twice = read_families(&dir).err();
    let _ = std::fs::remove_dir_all(&dir);
    assert_eq!(
        twice.as_deref(),
        Some("the kernel k is defined twice in csrc/")
    );
    let dir = scratch_csrc("empty", &[("a.cu", kernel), ("b.cu", "// nothing yet\n")]);
    let empty = read_families(&dir).err();
    let _ = std::fs::remove_dir_all(&dir);
    assert_eq!(
        empty.as_deref(),
        Some("csrc/b.cu has no extern \"C\" __global__ entry point")
    );
}
