// Shared by build.rs (through `include!`) and the crate's freshness test, so the
// committed fatbin manifest and the check against csrc/ agree on one definition.

/// FNV-1a 64 over every file in `csrc/` in name order, each as "name\0contents\0".
/// Not cryptographic: it only has to notice that the sources changed.
pub fn csrc_source_hash(csrc: &std::path::Path) -> std::io::Result<String> {
    let mut names: Vec<_> = std::fs::read_dir(csrc)?
        .filter_map(|e| e.ok())
        .filter(|e| e.file_type().map(|t| t.is_file()).unwrap_or(false))
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    let mut feed = |bytes: &[u8]| {
        for &b in bytes {
            hash ^= u64::from(b);
            hash = hash.wrapping_mul(0x0000_0100_0000_01b3);
        }
    };
    for name in &names {
        let contents = std::fs::read(csrc.join(name))?;
        feed(name.as_bytes());
        feed(&[0]);
        feed(&contents);
        feed(&[0]);
    }
    Ok(format!("fnv1a64:{hash:016x}"))
}
