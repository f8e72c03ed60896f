//! What the fatbins hold: the embedded one (built now or copied from fatbin/)
//! and the committed one, which must hold every arch from Kepler to Blackwell
//! and match today's csrc/; every entry of both holds exactly the kernels of
//! the list that build.rs read from the embedded fatbin ([`KERNEL_FAMILIES`],
//! held to csrc/ by tests/kernel_list.rs).
use std::collections::BTreeSet;
use std::path::Path;

use kernpack::fatbin::{parse, ptx_archs, sass_archs, Codec, EntryKind, FatbinEntry};
use kernpack::gpu::{
    FATBIN, FATBIN_FAMILIES, FATBIN_LEGACY_TOOLKIT, FATBIN_ONLY, FATBIN_ORIGIN, FATBIN_PTX,
    FATBIN_SASS, FATBIN_TOOLKIT, KERNEL_FAMILIES,
};

include!("../src/build_support/source_hash.rs");
#[path = "../src/build_support/kernel_list.rs"]
mod kernel_list;
use kernel_list::cubin_kernels;

/// CUDA 11.8's SASS (sm_35..sm_72), then the pinned CUDA 13.0's (`nvcc --list-gpu-code`).
const ALL_SASS: &[u32] = &[
    35, 37, 50, 52, 53, 60, 61, 62, 70, 72, 75, 80, 86, 87, 88, 89, 90, 100, 103, 110, 120, 121,
];
/// compute_35 from 11.8 (any GPU can JIT it), compute_121 from 13.0 (future GPUs).
const ALL_PTX: &[u32] = &[35, 121];

fn archs(list: &str) -> Vec<u32> {
    list.split(',').map(|a| a.parse().unwrap()).collect()
}

fn manifest_field(text: &str, key: &str) -> String {
    text.lines()
        .find_map(|l| l.strip_prefix(key).and_then(|r| r.strip_prefix('=')))
        .unwrap_or_else(|| panic!("manifest has no {key}"))
        .to_owned()
}

fn family_names() -> Vec<&'static str> {
    KERNEL_FAMILIES.iter().map(|(f, _)| *f).collect()
}

/// Every container (one per family) holds the same archs.
fn assert_every_family_has(entries: &[FatbinEntry], sass: &[u32], ptx: &[u32]) {
    let families = family_names();
    assert_eq!(
        entries.iter().map(|e| e.container).max().map(|c| c + 1),
        Some(families.len()),
        "one container per family"
    );
    for (i, family) in families.iter().enumerate() {
        let mine: Vec<FatbinEntry> = entries
            .iter()
            .filter(|e| e.container == i)
            .cloned()
            .collect();
        assert_eq!(sass_archs(&mine), sass, "SASS of the {family} container");
        assert_eq!(ptx_archs(&mine), ptx, "PTX of the {family} container");
        assert!(
            mine.iter()
                .all(|e| e.kind != EntryKind::Sass || e.compressed),
            "{family}: every SASS entry is compressed (the fatbin must stay small in git)"
        );
    }
}

/// An entry's payload as the toolkit wrote it (zstd undone: nvcc 13's
/// entries and build.rs's CUDA 11.8 ones are zstd frames).
fn plain_payload(bytes: &[u8], e: &FatbinEntry) -> Vec<u8> {
    match e.codec {
        Codec::None => e.payload(bytes).to_vec(),
        Codec::Zstd => zstd::bulk::decompress(e.payload(bytes), e.uncompressed_size as usize)
            .unwrap_or_else(|err| panic!("{} {} entry: {err}", e.kind, e.arch)),
        Codec::Lz4 => panic!(
            "{} {} entry: NVIDIA's LZ4-like compression, which no build of kernpack writes",
            e.kind, e.arch
        ),
    }
}

/// The kernels a PTX text defines: its `.entry` directives
/// (`.visible .entry name(`).
fn ptx_kernels(ptx: &str) -> BTreeSet<&str> {
    ptx.lines()
        .filter_map(|line| line.split_once(".entry ")?.1.split('(').next())
        .map(str::trim)
        .collect()
}

/// Each family's container defines exactly the kernels the generated list
/// gives it: every PTX entry by its `.entry` directives, every SASS entry (an
/// ELF cubin) by its symbol table's entry points, so a kernel missing from
/// any arch's code is found without a GPU.
fn assert_every_family_holds_its_kernels(bytes: &[u8], entries: &[FatbinEntry]) {
    for (i, (family, kernels)) in KERNEL_FAMILIES.iter().enumerate() {
        let listed: BTreeSet<&str> = kernels.iter().copied().collect();
        let mine: Vec<&FatbinEntry> = entries.iter().filter(|e| e.container == i).collect();
        assert!(!mine.is_empty(), "no container for the {family} family");
        for e in mine {
            let plain = plain_payload(bytes, e);
            match e.kind {
                EntryKind::Ptx => {
                    let ptx = String::from_utf8_lossy(&plain);
                    assert_eq!(
                        ptx_kernels(&ptx),
                        listed,
                        "kernels of the {family} container's compute_{} PTX (left) \
                         vs the list build.rs read from the fatbin (right)",
                        e.arch
                    );
                }
                EntryKind::Sass => {
                    let found = cubin_kernels(&plain)
                        .unwrap_or_else(|| panic!("{family} sm_{}: not an ELF64 cubin", e.arch));
                    assert_eq!(
                        found.iter().map(String::as_str).collect::<BTreeSet<_>>(),
                        listed,
                        "kernels of the {family} container's sm_{} SASS (left) vs the list \
                         build.rs read from the fatbin (right)",
                        e.arch
                    );
                }
                EntryKind::Other(_) => {}
            }
        }
    }
}

/// The PTX reader finds what nvcc writes for an `extern "C"` kernel.
#[test]
fn ptx_kernels_reads_entry_directives() {
    let ptx = ".version 9.0\n.target sm_121\n\n\t// .globl\tk_f32\n\
               .visible .entry k_f32(\n\t.param .u64 k_f32_param_0\n)\n{\n}\n\
               .visible .entry reduce_final(\n)\n.func helper()\n";
    assert_eq!(ptx_kernels(ptx), BTreeSet::from(["k_f32", "reduce_final"]));
}

#[test]
fn embedded_fatbin_matches_what_build_rs_recorded() {
    let entries = parse(FATBIN).expect("embedded fatbin parses");
    assert_eq!(
        FATBIN_FAMILIES.split(',').collect::<Vec<_>>(),
        family_names()
    );
    assert_every_family_holds_its_kernels(FATBIN, &entries);
    assert_eq!(
        sass_archs(&entries),
        archs(FATBIN_SASS),
        "built by {FATBIN_ORIGIN}"
    );
    assert_eq!(
        ptx_archs(&entries),
        archs(FATBIN_PTX),
        "built by {FATBIN_ORIGIN}"
    );
    // A default build (no KERNPACK_CUDA_ARCHS) by the pinned toolkit, with the
    // 11.8 entries reused from the committed fatbin or built here, has everything.
    if FATBIN_TOOLKIT == "V13.0.88"
        && FATBIN_LEGACY_TOOLKIT == "V11.8.89"
        && FATBIN_ONLY.is_empty()
        && std::env::var("KERNPACK_CUDA_ARCHS").map_or(true, |v| v.is_empty())
    {
        assert_every_family_has(&entries, ALL_SASS, ALL_PTX);
    }
}

#[test]
fn committed_fatbin_holds_every_arch_and_matches_todays_sources() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let bytes = std::fs::read(root.join("fatbin/kernpack.fatbin")).expect("fatbin/kernpack.fatbin");
    let manifest =
        std::fs::read_to_string(root.join("fatbin/manifest.txt")).expect("fatbin/manifest.txt");
    let entries = parse(&bytes).expect("committed fatbin parses");
    assert_every_family_has(&entries, ALL_SASS, ALL_PTX);
    assert_every_family_holds_its_kernels(&bytes, &entries);
    assert_eq!(
        sass_archs(&entries),
        archs(&manifest_field(&manifest, "sass"))
    );
    assert_eq!(
        ptx_archs(&entries),
        archs(&manifest_field(&manifest, "ptx"))
    );
    assert_eq!(
        manifest_field(&manifest, "families"),
        family_names().join(",")
    );
    assert_eq!(manifest_field(&manifest, "toolkit"), "V13.0.88");
    assert_eq!(manifest_field(&manifest, "legacy_toolkit"), "V11.8.89");
    let hash = csrc_source_hash(&root.join("csrc")).unwrap();
    assert_eq!(
        manifest_field(&manifest, "source_hash"),
        hash,
        "fatbin/ is stale: run scripts/regen-fatbin.sh and commit fatbin/"
    );
    assert_eq!(
        manifest_field(&manifest, "legacy_source_hash"),
        hash,
        "the CUDA 11.8 entries of fatbin/ are stale: run scripts/regen-fatbin.sh and commit fatbin/"
    );
    // Was 8 MB until 2026-11-28, when the Lorenz 96 lane and tangent kernels
    // (11 sites-per-lane instantiations, about 2.6 MB of SASS per arch), the
    // chi2 kernels (nterms 1..8, 0.5 MB) and the box filter's first
    // running-sum kernel (3.9 MB) took it to 31 MB over 22 archs; the warp
    // running-sum kernel brought the box filter back to about 1 MB per arch
    // and the fatbin to 27 MB. The rank filters (13 entry points: sorting
    // networks of 9 to 81 points, the 3 x 3 median, radix selection and the
    // sliding histogram) added 2.2 MB compressed, to 30.1 MB; the N-D box
    // filter's passes (8 entry points) 0.5 MB more, to 30.6 MB; the best
    // peaks, BLS and folds took it to 32.9 MB, and the multiband periodogram
    // (3 entry points, one for both types) to 33.45 MB. Bringing it
    // back toward 8 MB means fewer Lorenz 96 lane layouts (N = 192, 384, 512
    // would fall back to the block kernel), fewer chi2 instantiations or
    // fewer network capacities: an open task (PERF.md, issue notes). The
    // adaptive Lorenz 63 kernels (Dormand-Prince, f32 and f64: 15 and 29 KB
    // of SASS per arch) took it past 32 MB, so the limit is 33 MB. The box
    // filter's band kernel and Lorenz 96's step offset took it to 32.85 MB
    // (34,450,368 bytes, 2026-11-29): about 150 KB are left. Other room: the Model III kernels with 2 sites per thread are there for a
    // bench only (29 KB per arch), and the SASS of minor archs that run
    // their major's base SASS (37, 53, 62, 72, 87, 88, 103, 121) is about a
    // third of the file.
    assert!(
        bytes.len() < 33 << 20,
        "the committed fatbin is {} bytes; keep it under 33 MB (and bring it back toward 8 MB)",
        bytes.len()
    );
}
