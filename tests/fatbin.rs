//! What the fatbins hold: the embedded one (built now or copied from fatbin/)
//! and the committed one, which must also match today's csrc/.
use std::path::Path;

use kernpack::fatbin::{parse, ptx_archs, sass_archs};
use kernpack::gpu::{FATBIN, FATBIN_ORIGIN, FATBIN_PTX, FATBIN_SASS, FATBIN_TOOLKIT};

include!("../src/build_support/source_hash.rs");

/// What the pinned CUDA 13.0 toolkit offers (`nvcc --list-gpu-code`).
const PINNED_SASS: &[u32] = &[75, 80, 86, 87, 88, 89, 90, 100, 103, 110, 120, 121];

fn archs(list: &str) -> Vec<u32> {
    list.split(',').map(|a| a.parse().unwrap()).collect()
}

fn manifest_field(text: &str, key: &str) -> String {
    text.lines()
        .find_map(|l| l.strip_prefix(key).and_then(|r| r.strip_prefix('=')))
        .unwrap_or_else(|| panic!("manifest has no {key}"))
        .to_owned()
}

#[test]
fn embedded_fatbin_has_sass_for_every_target_arch_and_ptx_of_the_highest() {
    let entries = parse(FATBIN).expect("embedded fatbin parses");
    assert_eq!(
        sass_archs(&entries),
        archs(FATBIN_SASS),
        "SASS entries vs the archs build.rs targeted"
    );
    assert_eq!(
        ptx_archs(&entries),
        vec![FATBIN_PTX.parse::<u32>().unwrap()],
        "one PTX, of the highest arch"
    );
    if FATBIN_TOOLKIT == "V13.0.88"
        && std::env::var("KERNPACK_CUDA_ARCHS").map_or(true, |v| v.is_empty())
    {
        assert_eq!(
            sass_archs(&entries),
            PINNED_SASS,
            "built by {FATBIN_ORIGIN}"
        );
    }
}

#[test]
fn committed_fatbin_matches_its_manifest_and_todays_sources() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let bytes = std::fs::read(root.join("fatbin/kernpack.fatbin")).expect("fatbin/kernpack.fatbin");
    let manifest =
        std::fs::read_to_string(root.join("fatbin/manifest.txt")).expect("fatbin/manifest.txt");
    let entries = parse(&bytes).expect("committed fatbin parses");
    assert_eq!(
        sass_archs(&entries),
        archs(&manifest_field(&manifest, "sass"))
    );
    assert_eq!(
        sass_archs(&entries),
        PINNED_SASS,
        "the committed fatbin comes from the pinned toolkit"
    );
    assert_eq!(
        ptx_archs(&entries),
        vec![manifest_field(&manifest, "ptx").parse::<u32>().unwrap()]
    );
    assert_eq!(manifest_field(&manifest, "toolkit"), "V13.0.88");
    assert_eq!(
        manifest_field(&manifest, "source_hash"),
        csrc_source_hash(&root.join("csrc")).unwrap(),
        "fatbin/ is stale: run scripts/regen-fatbin.sh and commit fatbin/"
    );
}
