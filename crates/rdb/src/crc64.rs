//! CRC-64 with the Jones polynomial, bit-reflected, initial value 0 and no final xor: the
//! checksum Redis puts at the end of RDB files and DUMP payloads.
//!
//! Slice-by-8: eight 256-entry tables built at compile time let the loop fold eight input
//! bytes per step with independent lookups, several times faster than a byte at a time.

/// The Jones polynomial 0xad93d23594c935a9, bit-reversed for the reflected algorithm.
const POLY_REFLECTED: u64 = 0x95ac_9329_ac4b_c9b5;

const fn make_tables() -> [[u64; 256]; 8] {
    let mut t = [[0u64; 256]; 8];
    let mut i = 0;
    while i < 256 {
        let mut crc = i as u64;
        let mut bit = 0;
        while bit < 8 {
            crc = if crc & 1 == 1 {
                (crc >> 1) ^ POLY_REFLECTED
            } else {
                crc >> 1
            };
            bit += 1;
        }
        t[0][i] = crc;
        i += 1;
    }
    // t[k][i]: the CRC of byte i followed by k zero bytes.
    let mut k = 1;
    while k < 8 {
        let mut i = 0;
        while i < 256 {
            let prev = t[k - 1][i];
            t[k][i] = (prev >> 8) ^ t[0][(prev & 0xff) as usize];
            i += 1;
        }
        k += 1;
    }
    t
}

static TABLES: [[u64; 256]; 8] = make_tables();

/// Continues a CRC over `data`. Start with 0; `update(update(0, a), b) == crc64(a ++ b)`.
pub fn update(mut crc: u64, data: &[u8]) -> u64 {
    let t = &TABLES;
    let mut chunks = data.chunks_exact(8);
    for c in &mut chunks {
        let mut word = [0u8; 8];
        word.copy_from_slice(c);
        let x = crc ^ u64::from_le_bytes(word);
        crc = t[7][(x & 0xff) as usize]
            ^ t[6][((x >> 8) & 0xff) as usize]
            ^ t[5][((x >> 16) & 0xff) as usize]
            ^ t[4][((x >> 24) & 0xff) as usize]
            ^ t[3][((x >> 32) & 0xff) as usize]
            ^ t[2][((x >> 40) & 0xff) as usize]
            ^ t[1][((x >> 48) & 0xff) as usize]
            ^ t[0][(x >> 56) as usize];
    }
    for &b in chunks.remainder() {
        crc = t[0][((crc ^ b as u64) & 0xff) as usize] ^ (crc >> 8);
    }
    crc
}

/// The CRC-64 of `data`, as Redis computes it.
pub fn crc64(data: &[u8]) -> u64 {
    update(0, data)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The definition, one bit at a time: what the tables must agree with.
    fn bitwise(data: &[u8]) -> u64 {
        let mut crc = 0u64;
        for &b in data {
            crc ^= b as u64;
            for _ in 0..8 {
                crc = if crc & 1 == 1 {
                    (crc >> 1) ^ POLY_REFLECTED
                } else {
                    crc >> 1
                };
            }
        }
        crc
    }

    #[test]
    fn tables_agree_with_the_bitwise_definition() {
        let data: Vec<u8> = (0..1000u32)
            .map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8)
            .collect();
        for len in [0, 1, 7, 8, 9, 15, 16, 17, 100, 1000] {
            assert_eq!(crc64(&data[..len]), bitwise(&data[..len]), "len {len}");
        }
    }

    #[test]
    fn update_is_incremental_at_any_split() {
        let data: Vec<u8> = (0..300u32).map(|i| (i * 7 + 3) as u8).collect();
        let whole = crc64(&data);
        for split in 0..data.len() {
            assert_eq!(update(update(0, &data[..split]), &data[split..]), whole);
        }
    }
}
