//! The kernel list: the tests' reader of csrc/ (tests/support/csrc_kernels.rs)
//! and the list build.rs read from the fatbin's cubins
//! (src/build_support/kernel_list.rs), which must name csrc/'s entry points.
//! That every entry of the fatbin holds the list is tests/fatbin.rs's to
//! check; that src/gpu/kernels.rs declares each with its C prototype is the
//! unit tests' of that file.
#[path = "support/csrc_kernels.rs"]
mod csrc_kernels;
#[path = "../src/build_support/kernel_list.rs"]
mod kernel_list;

use std::path::{Path, PathBuf};

use csrc_kernels::{entry_points, read_families};
use kernpack::gpu::KERNEL_FAMILIES;

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
/// source order, headers and non-.cu files ignored.
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
    let params: Vec<&[String]> = families[1].kernels.iter().map(|k| &k.params[..]).collect();
    assert_eq!(params, [["int*"], ["int*"]]);
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

/// The list the loader resolves, read by build.rs from the embedded fatbin,
/// has csrc/'s families in file-name order and each family's entry points.
#[test]
fn the_loaders_list_is_csrcs_entry_points() {
    let csrc = Path::new(env!("CARGO_MANIFEST_DIR")).join("csrc");
    let families = read_families(&csrc).unwrap();
    let from_csrc: Vec<(&str, Vec<&str>)> = families
        .iter()
        .map(|f| {
            let mut names: Vec<&str> = f.kernels.iter().map(|k| k.name.as_str()).collect();
            names.sort_unstable();
            (f.name.as_str(), names)
        })
        .collect();
    let loaded: Vec<(&str, Vec<&str>)> = KERNEL_FAMILIES
        .iter()
        .map(|(family, names)| (*family, names.to_vec()))
        .collect();
    assert_eq!(
        loaded, from_csrc,
        "the kernels build.rs read from the fatbin (left) vs csrc/ (right): \
         is the embedded fatbin stale? Run scripts/regen-fatbin.sh"
    );
}

/// The cubin reader takes the symbols nvcc marks as entry points
/// (STO_CUDA_ENTRY), sorted, and refuses what is not an ELF64 file.
#[test]
fn cubin_kernels_reads_entry_symbols() {
    // An ELF64 header, a null section, the symbol table, its string table.
    let strings = b"\0zeta\0helper\0alpha\0";
    let mut elf = vec![0u8; 64];
    elf[..6].copy_from_slice(b"\x7fELF\x02\x01");
    let symbols_at = elf.len();
    for (name, other) in [(0u32, 0u8), (1, 0x10), (6, 0), (13, 0x10)] {
        let mut symbol = [0u8; 24];
        symbol[..4].copy_from_slice(&name.to_le_bytes());
        symbol[4] = 0x12; // STB_GLOBAL, STT_FUNC
        symbol[5] = other;
        elf.extend(symbol);
    }
    let strings_at = elf.len();
    elf.extend(strings);
    let headers_at = elf.len();
    let section = |kind: u32, offset: usize, size: usize, link: u32| {
        let mut header = [0u8; 64];
        header[4..8].copy_from_slice(&kind.to_le_bytes());
        header[0x18..0x20].copy_from_slice(&(offset as u64).to_le_bytes());
        header[0x20..0x28].copy_from_slice(&(size as u64).to_le_bytes());
        header[0x28..0x2c].copy_from_slice(&link.to_le_bytes());
        header
    };
    elf.extend(section(0, 0, 0, 0));
    elf.extend(section(2, symbols_at, strings_at - symbols_at, 2));
    elf.extend(section(3, strings_at, strings.len(), 0));
    elf[0x28..0x30].copy_from_slice(&(headers_at as u64).to_le_bytes());
    elf[0x3a..0x3c].copy_from_slice(&64u16.to_le_bytes());
    elf[0x3c..0x3e].copy_from_slice(&3u16.to_le_bytes());
    assert_eq!(
        kernel_list::cubin_kernels(&elf),
        Some(vec!["alpha".to_owned(), "zeta".to_owned()])
    );
    assert_eq!(kernel_list::cubin_kernels(b"\x7fELF\x01\x01"), None);
    assert_eq!(kernel_list::cubin_kernels(&elf[..100]), None);
}
