//! Which image of a kernel family the driver is handed, chosen by kernpack.
//!
//! The embedded fatbin holds one container per kernel family (build.rs), each
//! with SASS for 22 archs and two PTX. Handing the driver a whole container
//! costs milliseconds (it reads and decompresses far more than it uses), so the
//! loader picks the one entry this GPU and this driver can run, in this order:
//!
//! 1. SASS of the same major arch and the highest minor not above the GPU's
//!    (sm_86 runs on an sm_87 GPU; exact matches exist for every listed arch),
//!    whose toolkit the driver supports, decompressed here (zstd: nvcc 13's
//!    own, and build.rs's for CUDA 11.8's cubins) and handed over as a plain
//!    cubin.
//! 2. Otherwise the highest PTX not above the GPU's arch that the driver can
//!    JIT (compute_121 for GPUs newer than the toolkit, compute_35 for the rest).
//! 3. Otherwise nothing can run: an error naming the GPU, the driver version
//!    found and the version needed.
//!
//! With `CUDA_FORCE_PTX_JIT` set the whole container is handed over, so the
//! driver itself JITs the PTX, as that variable intends. Whatever goes over in
//! a container is decompressed first: no driver is ever asked to read zstd
//! (R470 cannot).
use std::fmt;
use std::io::Read;

use crate::fatbin::{build_container, rebuild_entry, Codec, EntryKind, FatbinEntry};

include!("../build_support/archs.rs");

/// The oldest driver kernpack runs on: CUDA 11.4 (R470, the last for Kepler).
/// Its driver API is the one bound (cudarc's `cuda-11040`).
pub const MIN_DRIVER: i32 = 11040;

/// What the driver was handed for one family.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Image {
    /// SASS (a cubin) for `sm_<arch>`: nothing is compiled at run time.
    Sass(u32),
    /// PTX for `compute_<arch>`, JIT-compiled by the driver for this GPU.
    Ptx(u32),
    /// The family's whole container: the driver chose (`CUDA_FORCE_PTX_JIT`).
    Container,
}

impl fmt::Display for Image {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Image::Sass(arch) => write!(f, "SASS sm_{arch}"),
            Image::Ptx(arch) => write!(f, "PTX compute_{arch} (JIT)"),
            Image::Container => f.write_str("whole container (driver's choice)"),
        }
    }
}

/// The bytes to hand `cuModuleLoadData`, 8-byte aligned as the driver wants.
#[derive(Debug)]
pub(crate) struct Choice {
    pub(crate) image: Image,
    words: Vec<u64>,
}

impl Choice {
    fn new(image: Image, bytes: &[u8]) -> Choice {
        let mut words = vec![0u64; bytes.len().div_ceil(8) + 1];
        // SAFETY: `words` holds at least `bytes.len()` bytes; u64 has no invalid bit patterns.
        unsafe {
            std::ptr::copy_nonoverlapping(bytes.as_ptr(), words.as_mut_ptr().cast(), bytes.len())
        };
        Choice { image, words }
    }

    pub(crate) fn as_ptr(&self) -> *const std::ffi::c_void {
        self.words.as_ptr().cast()
    }
}

/// The CUDA version (1000 x major + 10 x minor) a driver needs for an entry:
/// 13.0 for what the pinned toolkit built; for CUDA 11.8's, 11.4 for SASS
/// (minor-version compatibility) and 11.8 for its PTX (ISA 7.8, which older
/// drivers cannot JIT).
pub fn driver_needed(entry: &FatbinEntry) -> i32 {
    match entry.kind {
        EntryKind::Sass if entry.arch < MODERN_MIN_ARCH => MIN_DRIVER,
        EntryKind::Ptx if entry.arch < MODERN_MIN_ARCH => 11080,
        _ => 13000,
    }
}

/// `11040` as "11.4".
pub fn version_text(v: i32) -> String {
    format!("{}.{}", v / 1000, (v % 1000) / 10)
}

fn unzstd(bytes: &[u8], e: &FatbinEntry) -> Result<Vec<u8>, String> {
    let fail = |err: &dyn fmt::Display| {
        format!(
            "decompressing the {} sm_{} entry of the fatbin: {err}",
            e.kind, e.arch
        )
    };
    let expected = e.uncompressed_size as usize;
    let mut plain = Vec::with_capacity(expected);
    // One byte past the stated size is enough to tell a frame that runs over.
    ruzstd::decoding::StreamingDecoder::new(e.payload(bytes))
        .map_err(|err| fail(&err))?
        .take(e.uncompressed_size.saturating_add(1))
        .read_to_end(&mut plain)
        .map_err(|err| fail(&err))?;
    if plain.len() != expected {
        let got = plain.len();
        return Err(fail(&format!("{got} bytes, the header says {expected}")));
    }
    Ok(plain)
}

/// The entry as a driver of any age reads it: zstd payloads decompressed.
fn plain_entry(bytes: &[u8], e: &FatbinEntry) -> Result<Vec<u8>, String> {
    Ok(match e.codec {
        Codec::Zstd => rebuild_entry(e.header(bytes), &unzstd(bytes, e)?, Codec::None, 0),
        Codec::None | Codec::Lz4 => e.bytes(bytes).to_vec(),
    })
}

fn container_of(bytes: &[u8], entries: &[&FatbinEntry]) -> Result<Vec<u8>, String> {
    let plain = entries
        .iter()
        .map(|e| plain_entry(bytes, e))
        .collect::<Result<Vec<_>, _>>()?;
    Ok(build_container(plain.iter().map(Vec::as_slice)))
}

/// Picks what to load for a GPU of compute capability `cc` (e.g. 90) under a
/// driver of version `driver`, from `entries` (one family's, parsed from `bytes`).
pub(crate) fn choose(
    bytes: &[u8],
    entries: &[&FatbinEntry],
    cc: u32,
    driver: i32,
    force_ptx_jit: bool,
) -> Result<Choice, String> {
    if force_ptx_jit {
        return Ok(Choice::new(
            Image::Container,
            &container_of(bytes, entries)?,
        ));
    }
    let runnable = |e: &&&FatbinEntry| driver >= driver_needed(e);
    let sass = entries
        .iter()
        .filter(|e| e.kind == EntryKind::Sass && e.arch / 10 == cc / 10 && e.arch <= cc)
        .filter(runnable)
        .max_by_key(|e| e.arch);
    if let Some(e) = sass {
        let image = Image::Sass(e.arch);
        return match e.codec {
            Codec::None => Ok(Choice::new(image, e.payload(bytes))),
            Codec::Zstd => Ok(Choice::new(image, &unzstd(bytes, e)?)),
            // NVIDIA's own scheme: a one-entry container the driver decompresses.
            Codec::Lz4 => Ok(Choice::new(image, &container_of(bytes, &[e])?)),
        };
    }
    let ptx = entries
        .iter()
        .filter(|e| e.kind == EntryKind::Ptx && e.arch <= cc)
        .filter(runnable)
        .max_by_key(|e| e.arch);
    if let Some(e) = ptx {
        return Ok(Choice::new(Image::Ptx(e.arch), &container_of(bytes, &[e])?));
    }
    // Nothing runs: say what would.
    let needed = entries
        .iter()
        .filter(|e| match e.kind {
            EntryKind::Sass => e.arch / 10 == cc / 10 && e.arch <= cc,
            EntryKind::Ptx => e.arch <= cc,
            EntryKind::Other(_) => false,
        })
        .map(|e| driver_needed(e))
        .min();
    Err(match needed {
        Some(v) => format!(
            "the CUDA driver is version {} but kernpack's kernels for this sm_{cc} GPU need \
             CUDA {} or newer (R{}): update the NVIDIA driver",
            version_text(driver),
            version_text(v),
            match v {
                13000 => "580",
                11080 => "520",
                _ => "470",
            }
        ),
        None => format!("the fatbin has no SASS or PTX this sm_{cc} GPU can run"),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fatbin::parse;

    /// A container with these (kind, arch, flags, payload) entries.
    fn fatbin(entries: &[(u16, u32, u64, Vec<u8>)]) -> Vec<u8> {
        let built: Vec<Vec<u8>> = entries
            .iter()
            .map(|(kind, arch, flags, payload)| {
                let mut h = vec![0u8; 64];
                h[0..2].copy_from_slice(&kind.to_le_bytes());
                h[4..8].copy_from_slice(&64u32.to_le_bytes());
                let padded = payload.len().next_multiple_of(8);
                h[8..16].copy_from_slice(&(padded as u64).to_le_bytes());
                if flags & 0xA000 != 0 {
                    h[0x10..0x14].copy_from_slice(&(payload.len() as u32).to_le_bytes());
                    h[0x38..0x40].copy_from_slice(&4096u64.to_le_bytes());
                }
                h[0x1c..0x20].copy_from_slice(&arch.to_le_bytes());
                h[0x28..0x30].copy_from_slice(&flags.to_le_bytes());
                h.extend_from_slice(payload);
                h.resize(64 + padded, 0);
                h
            })
            .collect();
        build_container(built.iter().map(Vec::as_slice))
    }

    fn choose_in(bytes: &[u8], cc: u32, driver: i32) -> Result<Image, String> {
        let entries = parse(bytes).unwrap();
        let refs: Vec<&FatbinEntry> = entries.iter().collect();
        choose(bytes, &refs, cc, driver, false).map(|c| c.image)
    }

    fn layout() -> Vec<u8> {
        let elf = |tag: u8| vec![0x7f, b'E', b'L', b'F', tag, 0, 0, 0];
        fatbin(&[
            (2, 35, 0x11, elf(35)),
            (2, 61, 0x11, elf(61)),
            (2, 70, 0x11, elf(70)),
            (1, 35, 0x11, b".version 7.8".to_vec()),
            (2, 75, 0x11, elf(75)),
            (2, 86, 0x11, elf(86)),
            (2, 90, 0x11, elf(90)),
            (1, 121, 0x11, b".version 9.0".to_vec()),
        ])
    }

    #[test]
    fn exact_or_lower_minor_sass_of_the_same_major() {
        let f = layout();
        assert_eq!(choose_in(&f, 90, 13000), Ok(Image::Sass(90)));
        assert_eq!(choose_in(&f, 89, 13000), Ok(Image::Sass(86)));
        assert_eq!(choose_in(&f, 62, 13000), Ok(Image::Sass(61)));
        assert_eq!(choose_in(&f, 37, 11040), Ok(Image::Sass(35)));
    }

    #[test]
    fn ptx_where_no_sass_runs() {
        let f = layout();
        // A major arch with no SASS: the highest PTX not above it.
        assert_eq!(choose_in(&f, 100, 13000), Ok(Image::Ptx(35)));
        assert_eq!(choose_in(&f, 130, 13000), Ok(Image::Ptx(121)));
        // Turing under an 11.8 driver: 13.0's sm_75 is out of reach, sm_70 is the same major.
        assert_eq!(choose_in(&f, 75, 11080), Ok(Image::Sass(70)));
        // Ampere under an 11.8 driver: only the 11.8 PTX.
        assert_eq!(choose_in(&f, 86, 11080), Ok(Image::Ptx(35)));
    }

    #[test]
    fn a_driver_too_old_is_an_error_naming_both_versions() {
        let f = layout();
        let err = choose_in(&f, 86, 11040).unwrap_err();
        assert!(err.contains("11.4") && err.contains("11.8"), "{err}");
        assert!(choose_in(&f, 30, 13000)
            .unwrap_err()
            .contains("no SASS or PTX"));
    }

    #[test]
    fn zstd_sass_is_handed_over_decompressed() {
        let cubin: Vec<u8> = (0..4096u32).map(|i| (i * 7 % 251) as u8).collect();
        let frame = zstd::bulk::compress(&cubin, 3).unwrap();
        let f = fatbin(&[(2, 90, 0x8011, frame)]);
        let entries = parse(&f).unwrap();
        let refs: Vec<&FatbinEntry> = entries.iter().collect();
        let choice = choose(&f, &refs, 90, 13000, false).unwrap();
        assert_eq!(choice.image, Image::Sass(90));
        // SAFETY: the choice holds at least the cubin's bytes.
        let got = unsafe { std::slice::from_raw_parts(choice.as_ptr().cast::<u8>(), cubin.len()) };
        assert_eq!(got, &cubin[..]);
        assert_eq!(choice.as_ptr() as usize % 8, 0);
    }

    #[test]
    fn every_zstd_entry_of_the_embedded_fatbin_decompresses_to_its_stated_size() {
        let entries = parse(crate::gpu::FATBIN).unwrap();
        let mut zstd = 0;
        for e in entries.iter().filter(|e| e.codec == Codec::Zstd) {
            let plain = unzstd(crate::gpu::FATBIN, e).unwrap();
            assert_eq!(plain.len() as u64, e.uncompressed_size);
            // The decoder's output is the bytes the frame holds: the C
            // library (what nvcc and build.rs compress with) agrees.
            let reference =
                zstd::bulk::decompress(e.payload(crate::gpu::FATBIN), plain.len()).unwrap();
            assert!(plain == reference, "{} sm_{}", e.kind, e.arch);
            zstd += 1;
        }
        assert!(
            zstd > 0,
            "no zstd entries: the fatbin is built with compression"
        );
    }

    #[test]
    fn a_corrupt_zstd_entry_is_an_error_naming_it() {
        let cubin: Vec<u8> = (0..4096u32).map(|i| (i * 7 % 251) as u8).collect();
        let mut frame = zstd::bulk::compress(&cubin, 3).unwrap();
        let last = frame.len() - 8;
        frame.truncate(last);
        let f = fatbin(&[(2, 90, 0x8011, frame)]);
        let entries = parse(&f).unwrap();
        let refs: Vec<&FatbinEntry> = entries.iter().collect();
        let err = choose(&f, &refs, 90, 13000, false).unwrap_err();
        assert!(
            err.contains("decompressing") && err.contains("sm_90"),
            "{err}"
        );
    }

    #[test]
    fn lz4_sass_goes_in_a_one_entry_container() {
        let f = fatbin(&[
            (2, 61, 0x2011, vec![1, 2, 3, 4, 5]),
            (2, 70, 0x11, vec![9; 8]),
        ]);
        let entries = parse(&f).unwrap();
        let refs: Vec<&FatbinEntry> = entries.iter().collect();
        let choice = choose(&f, &refs, 61, 13000, false).unwrap();
        assert_eq!(choice.image, Image::Sass(61));
        let len = entries[0].bytes(&f).len() + 16;
        // SAFETY: the choice holds the one-entry container.
        let got = unsafe { std::slice::from_raw_parts(choice.as_ptr().cast::<u8>(), len) };
        let inner = parse(got).unwrap();
        assert_eq!(inner.len(), 1);
        assert_eq!(inner[0].bytes(got), entries[0].bytes(&f));
    }

    #[test]
    fn forced_ptx_jit_hands_over_the_whole_container_decompressed() {
        let ptx = b".version 7.8\n.target sm_35\n".repeat(40);
        let packed = zstd::bulk::compress(&ptx, 19).unwrap();
        let plain = layout();
        let mut all: Vec<Vec<u8>> = parse(&plain)
            .unwrap()
            .iter()
            .map(|e| e.bytes(&plain).to_vec())
            .collect();
        let zst = fatbin(&[(1, 35, 0x8011, packed)]);
        let z = &parse(&zst).unwrap()[0];
        all.push(rebuild_entry(
            z.header(&zst),
            z.payload(&zst),
            Codec::Zstd,
            ptx.len() as u64,
        ));
        let f = build_container(all.iter().map(Vec::as_slice));
        let entries = parse(&f).unwrap();
        let refs: Vec<&FatbinEntry> = entries.iter().collect();
        let choice = choose(&f, &refs, 90, 13000, true).unwrap();
        assert_eq!(choice.image, Image::Container);
        let expected_len = f.len() - all.last().unwrap().len() + 64 + ptx.len().next_multiple_of(8);
        // SAFETY: the choice holds the rebuilt container.
        let got = unsafe { std::slice::from_raw_parts(choice.as_ptr().cast::<u8>(), expected_len) };
        let inner = parse(got).unwrap();
        assert_eq!(inner.len(), entries.len());
        assert!(inner.iter().all(|e| e.codec == Codec::None));
        assert_eq!(&inner.last().unwrap().payload(got)[..ptx.len()], &ptx[..]);
        assert_eq!(inner[0].bytes(got), entries[0].bytes(&f));
    }
}
