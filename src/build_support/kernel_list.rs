//! The kernels a cubin defines, read from its ELF symbol table: build.rs lists
//! each family's kernels (the loader's `KERNEL_FAMILIES`) from the fatbin it
//! embeds, and tests/fatbin.rs holds every cubin of the fatbin to that list.
//! Shared by build.rs and the tests by `#[path]`.

/// `sh_type` of the symbol table.
const SHT_SYMTAB: u32 = 2;
/// Bytes per ELF64 symbol.
const SYM_SIZE: usize = 24;
/// The `st_other` bit nvcc sets on a kernel's symbol (an `extern "C"
/// __global__` entry point); device functions and the compiler's helpers,
/// global or local, lack it.
const STO_CUDA_ENTRY: u8 = 0x10;

/// The kernel names of a cubin (a little-endian ELF64 file, as nvcc writes
/// it), sorted; None when the bytes are not such a file or an offset in it
/// is out of bounds.
pub fn cubin_kernels(elf: &[u8]) -> Option<Vec<String>> {
    let bytes = |at: usize, n: usize| elf.get(at..at + n);
    let u16_at = |at| Some(u16::from_le_bytes(bytes(at, 2)?.try_into().ok()?));
    let u32_at = |at| Some(u32::from_le_bytes(bytes(at, 4)?.try_into().ok()?));
    let u64_at = |at| Some(u64::from_le_bytes(bytes(at, 8)?.try_into().ok()?) as usize);
    if bytes(0, 6)? != b"\x7fELF\x02\x01" {
        return None;
    }
    let (table, entry_size, count) = (u64_at(0x28)?, u16_at(0x3a)? as usize, u16_at(0x3c)?);
    // A section header: its type, file offset, size and linked section.
    let section = |i: usize| {
        let at = table + i * entry_size;
        Some((
            u32_at(at + 4)?,
            u64_at(at + 0x18)?,
            u64_at(at + 0x20)?,
            u32_at(at + 0x28)?,
        ))
    };
    let mut names = Vec::new();
    for i in 0..usize::from(count) {
        let (kind, offset, size, link) = section(i)?;
        if kind != SHT_SYMTAB {
            continue;
        }
        let strings = section(link as usize)?.1;
        for symbol in (offset..offset + size).step_by(SYM_SIZE) {
            if elf.get(symbol + 5)? & STO_CUDA_ENTRY != 0 {
                let name = elf.get(strings + u32_at(symbol)? as usize..)?;
                let name = &name[..name.iter().position(|&b| b == 0)?];
                names.push(String::from_utf8(name.to_vec()).ok()?);
            }
        }
    }
    names.sort();
    Some(names)
}
