//! Dependency-free lister for NVIDIA fatbin containers (the output of
//! `nvcc -fatbin`, or the contents of an ELF `.nv_fatbin` section).
//!
//! This module lists what a fatbin holds (kind, arch, sizes, compression),
//! hands out an entry's bytes, and builds new containers from entries (build.rs
//! merges two toolkits' entries with it; the loader hands the driver one
//! entry). It never decompresses or interprets payloads.
//!
//! # Format
//!
//! All integers are little endian. A file holds one or more *containers*
//! ("blobs") back to back; a linked `.nv_fatbin` section is simply the
//! concatenation of the blobs of every object file.
//!
//! Container header (16 bytes):
//!
//! | offset | type | meaning                                            |
//! |--------|------|----------------------------------------------------|
//! | 0x00   | u32  | magic `0xBA55ED50` ([`FATBIN_MAGIC`])               |
//! | 0x04   | u16  | version, always 1                                  |
//! | 0x06   | u16  | header size, always 16                             |
//! | 0x08   | u64  | bytes of entries that follow the header            |
//!
//! Each entry is a header followed by its payload; the next entry starts
//! at `entry + header_size + payload_size`. Entry header (64 bytes minimum,
//! offsets relative to the start of the entry):
//!
//! | offset | type | meaning                                                         |
//! |--------|------|-----------------------------------------------------------------|
//! | 0x00   | u16  | kind: 1 = PTX, 2 = ELF (SASS cubin)                             |
//! | 0x02   | u16  | unknown, 0x0101 in every file seen                              |
//! | 0x04   | u32  | header size (64; larger when trailing data follows, see below)  |
//! | 0x08   | u64  | payload size following the header (padded to 8 bytes)           |
//! | 0x10   | u32  | compressed size (unpadded; 0 when not compressed)               |
//! | 0x14   | u32  | offset of an options descriptor in this header, 0 if none       |
//! | 0x18   | u16  | minor version (ELF: 8, PTX: ISA minor, e.g. 0 for 9.0)          |
//! | 0x1a   | u16  | major version (ELF: 1, PTX: ISA major, e.g. 9 for 9.0)          |
//! | 0x1c   | u32  | arch: SM number, e.g. 75, 90, 120                               |
//! | 0x20   | u32  | offset of the object (source) name in this header, 0 if none    |
//! | 0x24   | u32  | length of the object name (set with `-G`)                       |
//! | 0x28   | u64  | flags, see below                                                |
//! | 0x30   | u64  | zero                                                            |
//! | 0x38   | u64  | uncompressed size (0 when not compressed)                       |
//!
//! Flags seen (0x28): 0x1 64-bit, 0x2 debug (`-G`), 0x10 Linux host,
//! 0x2000 compressed (LZ4-like, `-compress-mode=speed`), 0x8000 compressed
//! (zstd: payload starts with `28 B5 2F FD`; the CUDA 13 default),
//! 0x10_0000 arch-specific target (`sm_90a`), 0x20_0000 family-specific
//! target (`sm_100f`), 0x100_0000 on sm_100+ cubins (with a 112-byte header).
//! An entry is reported as compressed when 0x2000 or 0x8000 is set.
//!
//! The options descriptor (two u32: offset and length, relative to the
//! entry) points at ptxas options text (e.g. `--compile-only` with `-rdc`,
//! `-g ...` with `-G`), or at binary data on sm_100+ cubins.
//!
//! # Leniency
//!
//! * The input must start with a container header.
//! * Zero bytes after a complete container are skipped: trailing zero
//!   padding (section alignment) is accepted, and so is zero padding between
//!   containers. Any other byte there must begin a new container, else
//!   [`FatbinError::BadMagic`] is reported at its offset. (Skipping zero
//!   bytes can never skip a real container: its first byte is 0x50.)
//! * Unknown entry kinds are listed as [`EntryKind::Other`].

use std::fmt;

/// Magic number at the start of every fatbin container.
pub const FATBIN_MAGIC: u32 = 0xBA55_ED50;

/// Size of the container header.
const CONTAINER_HEADER_SIZE: usize = 16;
/// The only container version known.
const CONTAINER_VERSION: u16 = 1;
/// Smallest entry header holding every field read here.
const ENTRY_HEADER_MIN: usize = 64;

// Entry header field offsets.
const E_KIND: usize = 0x00;
const E_HEADER_SIZE: usize = 0x04;
const E_PAYLOAD_SIZE: usize = 0x08;
const E_COMPRESSED_SIZE: usize = 0x10;
const E_ARCH: usize = 0x1c;
const E_FLAGS: usize = 0x28;
const E_UNCOMPRESSED_SIZE: usize = 0x38;

/// Entry flag: payload compressed with the LZ4-like scheme.
const FLAG_COMPRESSED_LZ4: u64 = 0x2000;
/// Entry flag: payload compressed with zstd.
const FLAG_COMPRESSED_ZSTD: u64 = 0x8000;

/// What an entry holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EntryKind {
    /// PTX text (JIT-compilable).
    Ptx,
    /// ELF cubin holding SASS for one SM.
    Sass,
    /// Any other kind code.
    Other(u16),
}

impl EntryKind {
    fn from_code(code: u16) -> Self {
        match code {
            1 => EntryKind::Ptx,
            2 => EntryKind::Sass,
            other => EntryKind::Other(other),
        }
    }
}

impl fmt::Display for EntryKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            EntryKind::Ptx => f.pad("PTX"),
            EntryKind::Sass => f.pad("SASS"),
            EntryKind::Other(code) => f.pad(&format!("kind{code}")),
        }
    }
}

/// One entry of a fatbin.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FatbinEntry {
    pub kind: EntryKind,
    /// Index of the container that holds the entry (0 for the first).
    pub container: usize,
    /// SM number, e.g. 90 for `sm_90` / `compute_90` (also for `sm_90a`).
    pub arch: u32,
    /// Byte offset of the entry header in the parsed input.
    pub offset: usize,
    pub header_size: u32,
    /// Bytes following the header (padded; compressed bytes if compressed).
    pub payload_size: u64,
    /// Size after decompression; equals `payload_size` when not compressed,
    /// and is 0 if a compressed entry does not record it.
    pub uncompressed_size: u64,
    pub compressed: bool,
    /// The compression scheme; [`Codec::None`] when not compressed.
    pub codec: Codec,
    /// Compressed bytes at the start of the payload (0 when not compressed).
    pub compressed_size: u32,
}

/// How an entry's payload is compressed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Codec {
    None,
    /// NVIDIA's LZ4-like scheme (CUDA 11 `-compress-all`, CUDA 13 `--compress-mode=speed`).
    Lz4,
    /// A standard zstd frame (the CUDA 13 default).
    Zstd,
}

impl FatbinEntry {
    /// The entry, header and payload, as it lies in `bytes` (the input it was parsed from).
    pub fn bytes<'a>(&self, bytes: &'a [u8]) -> &'a [u8] {
        &bytes[self.offset..self.offset + self.header_size as usize + self.payload_size as usize]
    }

    /// The payload's meaningful bytes: the compressed stream when compressed
    /// (padding dropped), else the whole payload.
    pub fn payload<'a>(&self, bytes: &'a [u8]) -> &'a [u8] {
        let start = self.offset + self.header_size as usize;
        let len = if self.compressed {
            self.compressed_size as usize
        } else {
            self.payload_size as usize
        };
        &bytes[start..start + len]
    }
}

impl FatbinEntry {
    /// The entry's header bytes, as they lie in `bytes`.
    pub fn header<'a>(&self, bytes: &'a [u8]) -> &'a [u8] {
        &bytes[self.offset..self.offset + self.header_size as usize]
    }
}

/// The entry with `header` (an entry header, as [`FatbinEntry::header`] gives)
/// and a new payload: `payload` compressed with `codec` (or plain with
/// [`Codec::None`]) from `uncompressed_size` bytes. The size, compressed-size,
/// uncompressed-size and compression-flag fields are rewritten to match; the
/// payload is zero-padded to 8 bytes. build.rs stores CUDA 11.8's cubins with
/// zstd this way, and the loader hands the driver decompressed entries.
pub fn rebuild_entry(
    header: &[u8],
    payload: &[u8],
    codec: Codec,
    uncompressed_size: u64,
) -> Vec<u8> {
    let mut out = header.to_vec();
    let padded = payload.len().next_multiple_of(8);
    out[E_PAYLOAD_SIZE..E_PAYLOAD_SIZE + 8].copy_from_slice(&(padded as u64).to_le_bytes());
    let mut flags = u64::from_le_bytes(out[E_FLAGS..E_FLAGS + 8].try_into().unwrap());
    flags &= !(FLAG_COMPRESSED_LZ4 | FLAG_COMPRESSED_ZSTD);
    let (compressed_size, uncompressed) = match codec {
        Codec::None => (0u32, 0u64),
        Codec::Lz4 => {
            flags |= FLAG_COMPRESSED_LZ4;
            (payload.len() as u32, uncompressed_size)
        }
        Codec::Zstd => {
            flags |= FLAG_COMPRESSED_ZSTD;
            (payload.len() as u32, uncompressed_size)
        }
    };
    out[E_FLAGS..E_FLAGS + 8].copy_from_slice(&flags.to_le_bytes());
    out[E_COMPRESSED_SIZE..E_COMPRESSED_SIZE + 4].copy_from_slice(&compressed_size.to_le_bytes());
    out[E_UNCOMPRESSED_SIZE..E_UNCOMPRESSED_SIZE + 8].copy_from_slice(&uncompressed.to_le_bytes());
    out.extend_from_slice(payload);
    out.resize(header.len() + padded, 0);
    out
}

/// A container holding `entries` (each a complete entry: header and payload,
/// as [`FatbinEntry::bytes`] returns), in that order.
pub fn build_container<'a>(entries: impl IntoIterator<Item = &'a [u8]>) -> Vec<u8> {
    let body: Vec<u8> = entries.into_iter().flatten().copied().collect();
    let mut out = Vec::with_capacity(CONTAINER_HEADER_SIZE + body.len());
    out.extend_from_slice(&FATBIN_MAGIC.to_le_bytes());
    out.extend_from_slice(&CONTAINER_VERSION.to_le_bytes());
    out.extend_from_slice(&(CONTAINER_HEADER_SIZE as u16).to_le_bytes());
    out.extend_from_slice(&(body.len() as u64).to_le_bytes());
    out.extend_from_slice(&body);
    out
}

/// Why an input is not a well-formed fatbin.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FatbinError {
    /// The input ends early: `needed` bytes in all are required, it has `have`.
    #[error("fatbin is truncated: {needed} bytes are needed but the input has only {have}")]
    TooShort { needed: usize, have: usize },
    /// No container magic at `offset`.
    #[error(
        "not a fatbin: expected magic {FATBIN_MAGIC:#010x} at byte offset {offset}, \
         found {found:#010x}"
    )]
    BadMagic { offset: usize, found: u32 },
    /// The container or entry header at `offset` is inconsistent.
    #[error("malformed fatbin header at byte offset {offset}: {reason}")]
    BadHeader { offset: usize, reason: &'static str },
}

fn read_array<const N: usize>(bytes: &[u8], at: usize) -> Option<[u8; N]> {
    let end = at.checked_add(N)?;
    bytes.get(at..end)?.try_into().ok()
}

fn read_u16(bytes: &[u8], at: usize) -> Option<u16> {
    read_array(bytes, at).map(u16::from_le_bytes)
}

fn read_u32(bytes: &[u8], at: usize) -> Option<u32> {
    read_array(bytes, at).map(u32::from_le_bytes)
}

fn read_u64(bytes: &[u8], at: usize) -> Option<u64> {
    read_array(bytes, at).map(u64::from_le_bytes)
}

/// Reads a field already known to lie inside `bytes`; a miss is reported as
/// a header error rather than a panic.
fn field<T>(value: Option<T>, offset: usize) -> Result<T, FatbinError> {
    value.ok_or(FatbinError::BadHeader {
        offset,
        reason: "field lies outside the input",
    })
}

/// Lists all entries of all containers in `bytes`, in file order.
///
/// Never panics and never reads out of bounds; see the module docs for the
/// layout and for how zero padding is treated.
pub fn parse(bytes: &[u8]) -> Result<Vec<FatbinEntry>, FatbinError> {
    let len = bytes.len();
    let mut entries = Vec::new();
    let mut pos = 0usize;
    let mut container = 0usize;
    loop {
        let blob_end = parse_container(bytes, pos, container, &mut entries)?;
        container += 1;
        // Skip zero padding; stop at the end of the input.
        match bytes
            .get(blob_end..)
            .and_then(|rest| rest.iter().position(|&b| b != 0))
        {
            Some(skip) => {
                pos = blob_end.checked_add(skip).ok_or(FatbinError::BadHeader {
                    offset: blob_end,
                    reason: "offset overflow",
                })?
            }
            None => break,
        }
        debug_assert!(pos < len);
    }
    Ok(entries)
}

/// Parses the container starting at `pos`, appends its entries and returns
/// the offset just past it.
fn parse_container(
    bytes: &[u8],
    pos: usize,
    container: usize,
    entries: &mut Vec<FatbinEntry>,
) -> Result<usize, FatbinError> {
    let len = bytes.len();
    let too_short = |needed: Option<usize>| match needed {
        Some(needed) => FatbinError::TooShort { needed, have: len },
        None => FatbinError::BadHeader {
            offset: pos,
            reason: "container size overflows",
        },
    };

    // Check the magic first (when present) so that a short non-fatbin reads
    // as "not a fatbin" rather than as truncated.
    if let Some(magic) = read_u32(bytes, pos) {
        if magic != FATBIN_MAGIC {
            return Err(FatbinError::BadMagic {
                offset: pos,
                found: magic,
            });
        }
    }
    let header_end = pos
        .checked_add(CONTAINER_HEADER_SIZE)
        .ok_or_else(|| too_short(None))?;
    if header_end > len {
        return Err(too_short(Some(header_end)));
    }
    let version = field(read_u16(bytes, pos + 4), pos)?;
    let header_size = field(read_u16(bytes, pos + 6), pos)?;
    let fat_size = field(read_u64(bytes, pos + 8), pos)?;
    if version != CONTAINER_VERSION {
        return Err(FatbinError::BadHeader {
            offset: pos,
            reason: "unsupported fatbin container version (only version 1 is known)",
        });
    }
    if usize::from(header_size) < CONTAINER_HEADER_SIZE {
        return Err(FatbinError::BadHeader {
            offset: pos,
            reason: "container header size is smaller than 16 bytes",
        });
    }
    let entries_start = pos
        .checked_add(usize::from(header_size))
        .ok_or_else(|| too_short(None))?;
    let blob_end = usize::try_from(fat_size)
        .ok()
        .and_then(|size| entries_start.checked_add(size))
        .ok_or_else(|| too_short(None))?;
    if blob_end > len {
        return Err(too_short(Some(blob_end)));
    }

    let mut e = entries_start;
    while e < blob_end {
        if blob_end - e < ENTRY_HEADER_MIN {
            return Err(FatbinError::BadHeader {
                offset: e,
                reason: "entry header runs past the end of its fatbin container",
            });
        }
        let kind = field(read_u16(bytes, e + E_KIND), e)?;
        let header_size = field(read_u32(bytes, e + E_HEADER_SIZE), e)?;
        let payload_size = field(read_u64(bytes, e + E_PAYLOAD_SIZE), e)?;
        let compressed_size = field(read_u32(bytes, e + E_COMPRESSED_SIZE), e)?;
        let arch = field(read_u32(bytes, e + E_ARCH), e)?;
        let flags = field(read_u64(bytes, e + E_FLAGS), e)?;
        let uncompressed_field = field(read_u64(bytes, e + E_UNCOMPRESSED_SIZE), e)?;

        let header_len = usize::try_from(header_size).unwrap_or(usize::MAX);
        if header_len < ENTRY_HEADER_MIN {
            return Err(FatbinError::BadHeader {
                offset: e,
                reason: "entry header size is smaller than 64 bytes",
            });
        }
        let entry_end = usize::try_from(payload_size)
            .ok()
            .and_then(|p| e.checked_add(header_len)?.checked_add(p));
        match entry_end {
            Some(end) if end <= blob_end => {
                let compressed = flags & (FLAG_COMPRESSED_LZ4 | FLAG_COMPRESSED_ZSTD) != 0;
                if compressed && u64::from(compressed_size) > payload_size {
                    return Err(FatbinError::BadHeader {
                        offset: e,
                        reason: "compressed size is larger than the entry payload",
                    });
                }
                let codec = if flags & FLAG_COMPRESSED_ZSTD != 0 {
                    Codec::Zstd
                } else if flags & FLAG_COMPRESSED_LZ4 != 0 {
                    Codec::Lz4
                } else {
                    Codec::None
                };
                entries.push(FatbinEntry {
                    kind: EntryKind::from_code(kind),
                    container,
                    arch,
                    offset: e,
                    header_size,
                    payload_size,
                    uncompressed_size: if compressed {
                        uncompressed_field
                    } else {
                        payload_size
                    },
                    compressed,
                    codec,
                    compressed_size: if compressed { compressed_size } else { 0 },
                });
                e = end;
            }
            _ => {
                return Err(FatbinError::BadHeader {
                    offset: e,
                    reason: "entry runs past the end of its fatbin container",
                })
            }
        }
    }
    Ok(blob_end)
}

fn archs_of(entries: &[FatbinEntry], kind: EntryKind) -> Vec<u32> {
    let mut archs: Vec<u32> = entries
        .iter()
        .filter(|e| e.kind == kind)
        .map(|e| e.arch)
        .collect();
    archs.sort_unstable();
    archs.dedup();
    archs
}

/// SM numbers that have a SASS (cubin) entry, sorted and deduplicated.
pub fn sass_archs(entries: &[FatbinEntry]) -> Vec<u32> {
    archs_of(entries, EntryKind::Sass)
}

/// SM numbers that have a PTX entry, sorted and deduplicated.
pub fn ptx_archs(entries: &[FatbinEntry]) -> Vec<u32> {
    archs_of(entries, EntryKind::Ptx)
}

/// Human-readable table: a header line, then one line per entry.
pub fn summary(entries: &[FatbinEntry]) -> String {
    let mut out = format!(
        "{:>3}  {:<8} {:<7} {:>10} {:>6} {:>10} {:>12}  {}\n",
        "#", "kind", "arch", "offset", "header", "payload", "uncompressed", "compressed"
    );
    if entries.is_empty() {
        out.push_str("(no entries)\n");
    }
    for (i, e) in entries.iter().enumerate() {
        let uncompressed = if e.compressed && e.uncompressed_size == 0 {
            "?".to_string()
        } else {
            e.uncompressed_size.to_string()
        };
        out.push_str(&format!(
            "{:>3}  {:<8} {:<7} {:>10} {:>6} {:>10} {:>12}  {}\n",
            i,
            e.kind,
            format!("sm_{}", e.arch),
            e.offset,
            e.header_size,
            e.payload_size,
            uncompressed,
            if e.compressed { "yes" } else { "no" }
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Builds one entry: a header of `header_size` bytes with the given
    /// fields, followed by `payload`.
    #[allow(clippy::too_many_arguments)]
    fn entry(
        kind: u16,
        header_size: u32,
        arch: u32,
        flags: u64,
        compressed_size: u32,
        uncompressed_size: u64,
        payload: &[u8],
    ) -> Vec<u8> {
        let mut h = vec![0u8; header_size as usize];
        h[0..2].copy_from_slice(&kind.to_le_bytes());
        h[2..4].copy_from_slice(&0x0101u16.to_le_bytes());
        h[4..8].copy_from_slice(&header_size.to_le_bytes());
        h[8..16].copy_from_slice(&(payload.len() as u64).to_le_bytes());
        h[0x10..0x14].copy_from_slice(&compressed_size.to_le_bytes());
        h[0x1c..0x20].copy_from_slice(&arch.to_le_bytes());
        h[0x28..0x30].copy_from_slice(&flags.to_le_bytes());
        h[0x38..0x40].copy_from_slice(&uncompressed_size.to_le_bytes());
        h.extend_from_slice(payload);
        h
    }

    fn container(entries: &[Vec<u8>]) -> Vec<u8> {
        build_container(entries.iter().map(Vec::as_slice))
    }

    #[test]
    fn rebuilt_entries_say_how_their_payload_is_stored() {
        let plain = container(&[entry(2, 64, 61, 0x11, 0, 0, &[5; 24])]);
        let e = &parse(&plain).unwrap()[0];
        let packed = rebuild_entry(e.header(&plain), &[1, 2, 3], Codec::Zstd, 24);
        let packed = container(&[packed]);
        let p = &parse(&packed).unwrap()[0];
        assert_eq!(
            (
                p.codec,
                p.compressed_size,
                p.uncompressed_size,
                p.payload_size
            ),
            (Codec::Zstd, 3, 24, 8)
        );
        assert_eq!(p.payload(&packed), &[1, 2, 3]);
        let back = rebuild_entry(p.header(&packed), &[5; 24], Codec::None, 0);
        assert_eq!(back, e.bytes(&plain));
    }

    /// Entries taken out of two containers and put into a new one are the
    /// same entries, byte for byte, with their payloads where they were.
    #[test]
    fn entries_move_between_containers_unchanged() {
        let mut two = sample();
        let second = container(&[entry(2, 64, 35, 0x2011, 5, 700, &[9; 8])]);
        two.extend_from_slice(&second);
        let entries = parse(&two).unwrap();
        assert_eq!(
            entries.iter().map(|e| e.container).collect::<Vec<_>>(),
            [0, 0, 1]
        );
        assert_eq!(entries[2].codec, Codec::Lz4);
        assert_eq!(entries[2].payload(&two), &[9; 5]);
        let merged = build_container(entries.iter().rev().map(|e| e.bytes(&two)));
        let again = parse(&merged).unwrap();
        assert_eq!(again.len(), 3);
        for (new, old) in again.iter().zip(entries.iter().rev()) {
            assert_eq!(new.bytes(&merged), old.bytes(&two));
            assert_eq!((new.kind, new.arch, new.container), (old.kind, old.arch, 0));
        }
    }

    /// SASS sm_75 (uncompressed ELF) + zstd-compressed PTX for compute_90.
    fn sample() -> Vec<u8> {
        let mut elf = vec![0x7f, b'E', b'L', b'F'];
        elf.resize(96, 0xAB);
        let mut zst = vec![0x28, 0xb5, 0x2f, 0xfd];
        zst.resize(40, 0xCD);
        container(&[
            entry(2, 64, 75, 0x11, 0, 0, &elf),
            entry(1, 80, 90, 0x8011, 37, 814, &zst),
        ])
    }

    #[test]
    fn parses_two_entries() {
        let bytes = sample();
        let entries = parse(&bytes).unwrap();
        assert_eq!(
            entries,
            vec![
                FatbinEntry {
                    kind: EntryKind::Sass,
                    container: 0,
                    arch: 75,
                    offset: 16,
                    header_size: 64,
                    payload_size: 96,
                    uncompressed_size: 96,
                    compressed: false,
                    codec: Codec::None,
                    compressed_size: 0,
                },
                FatbinEntry {
                    kind: EntryKind::Ptx,
                    container: 0,
                    arch: 90,
                    offset: 16 + 64 + 96,
                    header_size: 80,
                    payload_size: 40,
                    uncompressed_size: 814,
                    compressed: true,
                    codec: Codec::Zstd,
                    compressed_size: 37,
                },
            ]
        );
        assert_eq!(sass_archs(&entries), vec![75]);
        assert_eq!(ptx_archs(&entries), vec![90]);
        let s = summary(&entries);
        assert_eq!(s.lines().count(), 3, "{s}");
        assert!(s.contains("SASS") && s.contains("sm_75") && s.contains("PTX"));
        assert!(s.lines().nth(2).unwrap().ends_with("yes"), "{s}");
    }

    /// The 80-byte PTX entry header of a real CUDA 13.0 `nvcc -fatbin`
    /// output (compute_90, zstd-compressed by default), with a dummy payload.
    #[test]
    fn real_cuda13_ptx_entry_header() {
        let header: [u8; 80] = [
            0x01, 0x00, 0x01, 0x01, 0x50, 0x00, 0x00, 0x00, 0x80, 0x01, 0x00, 0x00, 0x00, 0x00,
            0x00, 0x00, 0x7b, 0x01, 0x00, 0x00, 0x40, 0x00, 0x00, 0x00, 0x00, 0x00, 0x09, 0x00,
            0x5a, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x11, 0x80,
            0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
            0x2e, 0x03, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x48, 0x00, 0x00, 0x00, 0x00, 0x00,
            0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
        ];
        let mut e = header.to_vec();
        e.resize(80 + 0x180, 0);
        let entries = parse(&container(&[e])).unwrap();
        assert_eq!(
            entries,
            vec![FatbinEntry {
                kind: EntryKind::Ptx,
                container: 0,
                arch: 90,
                offset: 16,
                header_size: 80,
                payload_size: 384,
                uncompressed_size: 814,
                compressed: true,
                codec: Codec::Zstd,
                compressed_size: 0x17b,
            }]
        );
    }

    #[test]
    fn lz4_flag_and_other_kind() {
        let bytes = container(&[
            entry(2, 64, 90, 0x2011, 8, 3848, &[1; 8]),
            entry(7, 64, 0, 0, 0, 0, &[]),
        ]);
        let entries = parse(&bytes).unwrap();
        assert!(entries[0].compressed);
        assert_eq!(entries[0].uncompressed_size, 3848);
        assert_eq!(entries[1].kind, EntryKind::Other(7));
        assert!(!entries[1].compressed);
        assert_eq!(sass_archs(&entries), vec![90]);
        assert!(ptx_archs(&entries).is_empty());
        assert!(summary(&entries).contains("kind7"));
    }

    #[test]
    fn truncation_never_panics() {
        let bytes = sample();
        for n in 0..bytes.len() {
            match parse(&bytes[..n]) {
                Err(FatbinError::TooShort { needed, have }) => {
                    assert_eq!(have, n);
                    assert!(needed > n);
                }
                Err(FatbinError::BadHeader { .. }) => {}
                other => panic!("length {n}: unexpected {other:?}"),
            }
        }
        assert!(parse(&bytes).is_ok());
        assert_eq!(
            parse(&[]),
            Err(FatbinError::TooShort {
                needed: 16,
                have: 0
            })
        );
        assert_eq!(
            parse(&bytes[..10]),
            Err(FatbinError::TooShort {
                needed: 16,
                have: 10
            })
        );
        assert_eq!(
            parse(&bytes[..100]),
            Err(FatbinError::TooShort {
                needed: bytes.len(),
                have: 100
            })
        );
        let msg = parse(&bytes[..100]).unwrap_err().to_string();
        assert!(msg.contains("truncated"), "{msg}");
    }

    #[test]
    fn bad_magic_reports_offset() {
        let mut bytes = sample();
        bytes[0] = 0x51;
        assert_eq!(
            parse(&bytes),
            Err(FatbinError::BadMagic {
                offset: 0,
                found: 0xBA55_ED51
            })
        );
        // Garbage after a valid container is reported where it starts.
        let mut bytes = sample();
        let first = bytes.len();
        bytes.extend_from_slice(&[0, 0, 0, 0, 0, 0, 0, 0]);
        bytes.extend_from_slice(&0xDEAD_BEEFu32.to_le_bytes());
        bytes.extend_from_slice(&[0; 12]);
        assert_eq!(
            parse(&bytes),
            Err(FatbinError::BadMagic {
                offset: first + 8,
                found: 0xDEAD_BEEF
            })
        );
        let msg = parse(&bytes).unwrap_err().to_string();
        assert!(
            msg.contains("not a fatbin") && msg.contains("0xdeadbeef"),
            "{msg}"
        );
    }

    #[test]
    fn multiple_containers_and_padding() {
        let a = sample();
        let b = container(&[entry(2, 64, 120, 0x100_0011, 0, 0, &[0; 16])]);
        let mut bytes = a.clone();
        bytes.extend_from_slice(&[0; 8]); // alignment padding between blobs
        bytes.extend_from_slice(&b);
        bytes.extend_from_slice(&[0; 40]); // trailing padding
        let entries = parse(&bytes).unwrap();
        assert_eq!(entries.len(), 3);
        assert_eq!(entries[2].offset, a.len() + 8 + 16);
        assert_eq!(sass_archs(&entries), vec![75, 120]);
        assert_eq!(ptx_archs(&entries), vec![90]);
        // An empty container is fine too.
        assert_eq!(parse(&container(&[])), Ok(vec![]));
        // Padding may not precede the first container.
        let mut lead = vec![0u8; 8];
        lead.extend_from_slice(&a);
        assert!(matches!(
            parse(&lead),
            Err(FatbinError::BadMagic { offset: 0, .. })
        ));
    }

    #[test]
    fn inconsistent_headers() {
        // Entry payload larger than its container.
        let mut bytes = sample();
        bytes[16 + 8..16 + 16].copy_from_slice(&u64::MAX.to_le_bytes());
        assert!(matches!(
            parse(&bytes),
            Err(FatbinError::BadHeader { offset: 16, .. })
        ));
        // Entry header size too small.
        let mut bytes = sample();
        bytes[16 + 4..16 + 8].copy_from_slice(&8u32.to_le_bytes());
        assert!(matches!(
            parse(&bytes),
            Err(FatbinError::BadHeader { offset: 16, .. })
        ));
        // Entry header size huge.
        let mut bytes = sample();
        bytes[16 + 4..16 + 8].copy_from_slice(&u32::MAX.to_le_bytes());
        assert!(matches!(
            parse(&bytes),
            Err(FatbinError::BadHeader { offset: 16, .. })
        ));
        // Container size huge: reported as truncation, no overflow.
        let mut bytes = sample();
        bytes[8..16].copy_from_slice(&u64::MAX.to_le_bytes());
        assert!(parse(&bytes).is_err());
        // Wrong container version / header size.
        let mut bytes = sample();
        bytes[4] = 2;
        assert!(matches!(
            parse(&bytes),
            Err(FatbinError::BadHeader { offset: 0, .. })
        ));
        let mut bytes = sample();
        bytes[6] = 8;
        assert!(matches!(
            parse(&bytes),
            Err(FatbinError::BadHeader { offset: 0, .. })
        ));
        // Compressed size beyond the payload.
        let bytes = container(&[entry(1, 64, 90, 0x8011, 100, 814, &[0; 8])]);
        assert!(matches!(
            parse(&bytes),
            Err(FatbinError::BadHeader { offset: 16, .. })
        ));
        // Container size not a whole number of entries.
        let mut bytes = sample();
        bytes.extend_from_slice(&[0; 8]);
        let size = u64::from_le_bytes(bytes[8..16].try_into().unwrap()) + 8;
        bytes[8..16].copy_from_slice(&size.to_le_bytes());
        let err = parse(&bytes).unwrap_err();
        assert!(matches!(err, FatbinError::BadHeader { .. }));
        assert!(err.to_string().contains("malformed fatbin header"), "{err}");
    }

    #[test]
    fn random_corruption_never_panics() {
        let base = sample();
        let mut state = 0x9E37_79B9_7F4A_7C15u64;
        let mut next = move || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        for _ in 0..20_000 {
            let mut bytes = base.clone();
            for _ in 0..1 + next() % 4 {
                let i = (next() % bytes.len() as u64) as usize;
                bytes[i] = next() as u8;
            }
            let cut = (next() % (bytes.len() as u64 + 1)) as usize;
            let _ = parse(&bytes[..cut]);
            let _ = parse(&bytes);
        }
    }

    /// Parses the real fatbin named by `KERNPACK_TEST_FATBIN`, if set.
    #[test]
    fn real_fatbin_from_env() {
        let Some(path) = std::env::var_os("KERNPACK_TEST_FATBIN") else {
            println!("skipping real_fatbin_from_env: KERNPACK_TEST_FATBIN is not set");
            return;
        };
        let bytes = std::fs::read(&path)
            .unwrap_or_else(|e| panic!("cannot read {}: {e}", path.to_string_lossy()));
        let entries = parse(&bytes)
            .unwrap_or_else(|e| panic!("{} does not parse: {e}", path.to_string_lossy()));
        println!("{}", summary(&entries));
        assert!(
            !sass_archs(&entries).is_empty(),
            "no SASS entry in {}",
            path.to_string_lossy()
        );
    }
}
