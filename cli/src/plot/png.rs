//! A minimal PNG encoder: 8-bit RGB, filter 0, and a zlib stream of stored
//! (uncompressed) deflate blocks. Files are larger than a real compressor would
//! make them (about 3 bytes per pixel), in exchange for a few dozen lines with no
//! dependency.

const SIGNATURE: [u8; 8] = [0x89, b'P', b'N', b'G', b'\r', b'\n', 0x1A, b'\n'];
/// Deflate's LEN field is 16 bits.
const MAX_STORED_BLOCK: usize = 0xFFFF;

/// Encodes `width` x `height` RGB pixels, row-major, 3 bytes each.
pub(crate) fn encode_rgb(width: u32, height: u32, rgb: &[u8]) -> Vec<u8> {
    let row_len = width as usize * 3;
    assert_eq!(
        rgb.len(),
        row_len * height as usize,
        "pixel buffer does not match its size"
    );

    let mut raw = Vec::with_capacity((row_len + 1) * height as usize);
    for row in rgb.chunks_exact(row_len.max(1)) {
        raw.push(0); // filter type None
        raw.extend_from_slice(row);
    }

    let mut ihdr = Vec::with_capacity(13);
    ihdr.extend_from_slice(&width.to_be_bytes());
    ihdr.extend_from_slice(&height.to_be_bytes());
    // Bit depth 8, colour type 2 (RGB), compression 0, filter 0, no interlace.
    ihdr.extend_from_slice(&[8, 2, 0, 0, 0]);

    let idat = zlib_stored(&raw);
    let mut png = Vec::with_capacity(SIGNATURE.len() + 3 * 12 + ihdr.len() + idat.len());
    png.extend_from_slice(&SIGNATURE);
    write_chunk(&mut png, b"IHDR", &ihdr);
    write_chunk(&mut png, b"IDAT", &idat);
    write_chunk(&mut png, b"IEND", &[]);
    png
}

fn write_chunk(out: &mut Vec<u8>, kind: &[u8; 4], data: &[u8]) {
    let len = u32::try_from(data.len()).expect("PNG chunk larger than 4 GiB");
    out.extend_from_slice(&len.to_be_bytes());
    let start = out.len();
    out.extend_from_slice(kind);
    out.extend_from_slice(data);
    // The CRC covers the chunk type as well as its data.
    let crc = crc32(&out[start..]);
    out.extend_from_slice(&crc.to_be_bytes());
}

/// A zlib stream (RFC 1950) holding `data` in stored deflate blocks (RFC 1951 §3.2.4).
pub(crate) fn zlib_stored(data: &[u8]) -> Vec<u8> {
    let blocks = data.len().div_ceil(MAX_STORED_BLOCK).max(1);
    let mut out = Vec::with_capacity(2 + blocks * 5 + data.len() + 4);
    // CM 8 (deflate) with a 32 KiB window; FLG makes the header a multiple of 31.
    out.extend_from_slice(&[0x78, 0x01]);
    let mut chunks = data.chunks(MAX_STORED_BLOCK).peekable();
    if chunks.peek().is_none() {
        // Even empty data needs one final block.
        out.extend_from_slice(&[1, 0x00, 0x00, 0xFF, 0xFF]);
    }
    while let Some(chunk) = chunks.next() {
        let is_final = chunks.peek().is_none();
        // BFINAL in bit 0, BTYPE 00; the rest of the byte is padding to the boundary.
        out.push(u8::from(is_final));
        let len = chunk.len() as u16;
        out.extend_from_slice(&len.to_le_bytes());
        out.extend_from_slice(&(!len).to_le_bytes());
        out.extend_from_slice(chunk);
    }
    out.extend_from_slice(&adler32(data).to_be_bytes());
    out
}

pub(crate) fn adler32(data: &[u8]) -> u32 {
    const MOD: u32 = 65521;
    // 5552 bytes is the most that can be summed before `b` could overflow a u32.
    let (mut a, mut b) = (1u32, 0u32);
    for chunk in data.chunks(5552) {
        for &byte in chunk {
            a += u32::from(byte);
            b += a;
        }
        a %= MOD;
        b %= MOD;
    }
    (b << 16) | a
}

const CRC_TABLE: [u32; 256] = {
    let mut table = [0u32; 256];
    let mut n = 0;
    while n < 256 {
        let mut c = n as u32;
        let mut k = 0;
        while k < 8 {
            c = if c & 1 == 1 {
                0xEDB8_8320 ^ (c >> 1)
            } else {
                c >> 1
            };
            k += 1;
        }
        table[n] = c;
        n += 1;
    }
    table
};

pub(crate) fn crc32(data: &[u8]) -> u32 {
    !data.iter().fold(!0u32, |c, &byte| {
        CRC_TABLE[((c ^ u32::from(byte)) & 0xFF) as usize] ^ (c >> 8)
    })
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// Inflates a zlib stream made only of stored blocks, checking every length and
    /// checksum on the way.
    pub(crate) fn inflate_stored(zlib: &[u8]) -> Vec<u8> {
        assert_eq!(zlib[0] & 0x0F, 8, "not deflate");
        assert_eq!(
            (u16::from(zlib[0]) << 8 | u16::from(zlib[1])) % 31,
            0,
            "bad zlib header check"
        );
        let mut pos = 2;
        let mut out = Vec::new();
        loop {
            let header = zlib[pos];
            assert_eq!(header >> 1 & 3, 0, "not a stored block");
            let len = u16::from_le_bytes([zlib[pos + 1], zlib[pos + 2]]);
            let nlen = u16::from_le_bytes([zlib[pos + 3], zlib[pos + 4]]);
            assert_eq!(len, !nlen);
            pos += 5;
            out.extend_from_slice(&zlib[pos..pos + len as usize]);
            pos += len as usize;
            if header & 1 == 1 {
                break;
            }
        }
        let adler = u32::from_be_bytes(zlib[pos..pos + 4].try_into().unwrap());
        assert_eq!(adler, adler32(&out));
        assert_eq!(pos + 4, zlib.len(), "trailing bytes after the zlib stream");
        out
    }

    /// Splits a PNG into (chunk type, data), verifying the signature and every CRC.
    pub(crate) fn chunks(png: &[u8]) -> Vec<([u8; 4], &[u8])> {
        assert_eq!(png[..8], SIGNATURE);
        let mut pos = 8;
        let mut out = Vec::new();
        while pos < png.len() {
            let len = u32::from_be_bytes(png[pos..pos + 4].try_into().unwrap()) as usize;
            let body = &png[pos + 4..pos + 8 + len];
            let crc = u32::from_be_bytes(png[pos + 8 + len..pos + 12 + len].try_into().unwrap());
            assert_eq!(crc, crc32(body));
            out.push((body[..4].try_into().unwrap(), &body[4..]));
            pos += 12 + len;
        }
        out
    }

    #[test]
    fn checksums_match_published_check_values() {
        assert_eq!(crc32(b"123456789"), 0xCBF4_3926);
        assert_eq!(adler32(b"Wikipedia"), 0x11E6_0398);
        assert_eq!(crc32(b"IEND"), 0xAE42_6082);
    }

    #[test]
    fn adler32_reduces_before_overflow() {
        let data = vec![0xFF; 1 << 20];
        let (mut a, mut b) = (1u64, 0u64);
        for &byte in &data {
            a = (a + u64::from(byte)) % 65521;
            b = (b + a) % 65521;
        }
        assert_eq!(adler32(&data), (b << 16 | a) as u32);
    }

    #[test]
    fn stored_zlib_round_trips_across_block_boundaries() {
        for len in [
            0,
            1,
            MAX_STORED_BLOCK,
            MAX_STORED_BLOCK + 1,
            3 * MAX_STORED_BLOCK + 7,
        ] {
            let data: Vec<u8> = (0..len).map(|i| (i * 31 % 251) as u8).collect();
            assert_eq!(inflate_stored(&zlib_stored(&data)), data, "len {len}");
        }
    }

    #[test]
    fn encoded_png_has_matching_header_and_pixels() {
        let (w, h) = (3u32, 2u32);
        let rgb: Vec<u8> = (0..w * h * 3).map(|i| i as u8).collect();
        let png = encode_rgb(w, h, &rgb);
        let chunks = chunks(&png);
        let kinds: Vec<_> = chunks.iter().map(|c| &c.0).collect();
        assert_eq!(kinds, [b"IHDR", b"IDAT", b"IEND"]);
        assert_eq!(chunks[0].1, [0, 0, 0, 3, 0, 0, 0, 2, 8, 2, 0, 0, 0]);
        let raw = inflate_stored(chunks[1].1);
        assert_eq!(raw, [&[0][..], &rgb[..9], &[0], &rgb[9..]].concat());
    }
}
