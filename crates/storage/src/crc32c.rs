//! CRC-32C (Castagnoli), the checksum of journal blocks since segment version 2. Every
//! journaled write computes one over its ~100-byte record on the worker thread; x86-64's
//! SSE 4.2 `crc32` instruction takes 8 bytes per instruction there, where CRC-32 (IEEE,
//! crc32fast) falls back to a table lookup per byte below 128 bytes: about 190
//! instructions per SET against 40 (callgrind, docs/benchmarks.md).

/// The reflected Castagnoli polynomial.
const POLY: u32 = 0x82F6_3B78;

static TABLE: [u32; 256] = table();

const fn table() -> [u32; 256] {
    let mut t = [0u32; 256];
    let mut i = 0;
    while i < 256 {
        let mut c = i as u32;
        let mut k = 0;
        while k < 8 {
            c = if c & 1 != 0 { (c >> 1) ^ POLY } else { c >> 1 };
            k += 1;
        }
        t[i] = c;
        i += 1;
    }
    t
}

/// The CRC-32C of `data`.
pub fn crc32c(data: &[u8]) -> u32 {
    extend(0, data)
}

/// The CRC-32C of the bytes whose CRC-32C is `crc`, followed by `data`.
pub fn extend(crc: u32, data: &[u8]) -> u32 {
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("sse4.2") {
        // SAFETY: the CPU has SSE 4.2, checked just above.
        return unsafe { extend_sse42(crc, data) };
    }
    extend_table(crc, data)
}

fn extend_table(crc: u32, data: &[u8]) -> u32 {
    let mut c = !crc;
    for &b in data {
        c = TABLE[((c ^ b as u32) & 0xff) as usize] ^ (c >> 8);
    }
    !c
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "sse4.2")]
unsafe fn extend_sse42(crc: u32, data: &[u8]) -> u32 {
    use std::arch::x86_64::{_mm_crc32_u16, _mm_crc32_u32, _mm_crc32_u64, _mm_crc32_u8};
    let mut c = u64::from(!crc);
    let mut words = data.chunks_exact(8);
    for w in &mut words {
        let mut word = [0u8; 8];
        word.copy_from_slice(w);
        c = _mm_crc32_u64(c, u64::from_le_bytes(word));
    }
    // The last 0–7 bytes as at most one 4-, one 2- and one 1-byte step.
    let mut c = c as u32;
    let mut rest = words.remainder();
    if let Some((four, r)) = rest.split_first_chunk::<4>() {
        c = _mm_crc32_u32(c, u32::from_le_bytes(*four));
        rest = r;
    }
    if let Some((two, r)) = rest.split_first_chunk::<2>() {
        c = _mm_crc32_u16(c, u16::from_le_bytes(*two));
        rest = r;
    }
    if let Some(&b) = rest.first() {
        c = _mm_crc32_u8(c, b);
    }
    !c
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The check value of the CRC-32C catalogue entry ("123456789") and RFC 3720's
    /// 32 zero bytes.
    #[test]
    fn known_values() {
        assert_eq!(crc32c(b"123456789"), 0xE306_9283);
        assert_eq!(crc32c(&[0u8; 32]), 0x8A91_36AA);
        assert_eq!(crc32c(b""), 0);
    }

    /// The instruction and the table agree at every length and split point.
    #[test]
    fn every_path_computes_the_same() {
        let data: Vec<u8> = (0..300u32).map(|i| (i * 31 + 7) as u8).collect();
        for len in 0..data.len() {
            let d = &data[..len];
            let want = extend_table(0, d);
            assert_eq!(crc32c(d), want, "len {len}");
            let mid = len / 3;
            assert_eq!(extend(extend(0, &d[..mid]), &d[mid..]), want, "len {len}");
        }
    }
}
