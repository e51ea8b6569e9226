//! LZF, the compression RDB files use for strings (`rdbcompression yes`).
//!
//! The stream is a sequence of runs, each starting with a control byte `c`:
//! - `c < 32`: a literal run of `c + 1` bytes that follow;
//! - otherwise a back reference: length `c >> 5` (7 means "7 plus the next byte"), plus 2,
//!   copied from `((c & 31) << 8 | next byte) + 1` bytes back in the output.

/// A back reference reaches at most this far back.
const MAX_OFFSET: usize = 1 << 13;
/// A back reference copies at most this many bytes (7 + 255 + 2).
const MAX_MATCH: usize = 264;
/// A literal run holds at most this many bytes.
const MAX_LITERAL: usize = 32;
/// The most output a single input byte can produce: a 3-byte back reference yields 264.
pub const MAX_EXPANSION: u64 = 88;

/// The hash table has 2^HASH_BITS slots (32 KiB).
const HASH_BITS: u32 = 13;

/// Why a compressed blob does not decompress to its declared length.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LzfError {
    /// A run needs more input than there is.
    Truncated,
    /// The output would exceed the declared length.
    TooLong,
    /// A back reference points before the start of the output.
    BadReference,
    /// The input ended before the output reached the declared length.
    TooShort,
}

impl std::fmt::Display for LzfError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            LzfError::Truncated => "LZF data ends inside a run",
            LzfError::TooLong => "LZF data expands past its declared length",
            LzfError::BadReference => "LZF back reference before the start of the output",
            LzfError::TooShort => "LZF data expands to less than its declared length",
        })
    }
}

/// Bytes moved by one fixed-size copy: a literal run's most, and a short reference's.
const BLOCK: usize = MAX_LITERAL;

/// Decompresses `input` into `out`, which must come out exactly full.
///
/// Runs are short (a few bytes between back references), so where both sides have room a
/// run is copied as a whole `BLOCK` (a few register moves; a copy of variable length is a
/// call to memcpy). The bytes past the run's end are garbage only until the next runs
/// overwrite them, which they do: `out` must come out exactly full.
pub fn decompress(input: &[u8], out: &mut [u8]) -> Result<(), LzfError> {
    let (mut ip, mut op) = (0usize, 0usize);
    while ip < input.len() {
        let ctrl = input[ip] as usize;
        ip += 1;
        if ctrl < 32 {
            let n = ctrl + 1;
            if ip + n > input.len() {
                return Err(LzfError::Truncated);
            }
            if op + n > out.len() {
                return Err(LzfError::TooLong);
            }
            match (input.get(ip..ip + BLOCK), out.get_mut(op..op + BLOCK)) {
                (Some(src), Some(dst)) => dst.copy_from_slice(src),
                _ => out[op..op + n].copy_from_slice(&input[ip..ip + n]),
            }
            ip += n;
            op += n;
            continue;
        }
        let mut len = ctrl >> 5;
        if len == 7 {
            len += *input.get(ip).ok_or(LzfError::Truncated)? as usize;
            ip += 1;
        }
        let low = *input.get(ip).ok_or(LzfError::Truncated)? as usize;
        ip += 1;
        let back = ((ctrl & 0x1f) << 8 | low) + 1;
        let len = len + 2;
        if op + len > out.len() {
            return Err(LzfError::TooLong);
        }
        let from = op.checked_sub(back).ok_or(LzfError::BadReference)?;
        if back == 1 {
            let b = out[from];
            out[op..op + len].fill(b);
        } else if back >= len && len <= BLOCK && op + BLOCK <= out.len() {
            // No overlap within the run: a whole block read before it is written.
            let mut block = [0u8; BLOCK];
            block.copy_from_slice(&out[from..from + BLOCK]);
            out[op..op + BLOCK].copy_from_slice(&block);
        } else {
            // When the reference overlaps its target, the output repeats with period
            // `back`: copy whole periods, doubling, each copy reading only written bytes.
            let mut done = 0;
            while done < len {
                let n = (len - done).min(back + done);
                out.copy_within(from..from + n, op + done);
                done += n;
            }
        }
        op += len;
    }
    if op == out.len() {
        Ok(())
    } else {
        Err(LzfError::TooShort)
    }
}

/// A compressor. It keeps its hash table between calls: entries are stamped with a running
/// base so stale ones from earlier inputs are recognised without clearing the table.
pub struct Compressor {
    table: Vec<u32>,
    base: u32,
}

impl Default for Compressor {
    fn default() -> Self {
        Compressor {
            table: Vec::new(),
            base: 1,
        }
    }
}

const TABLE_LEN: usize = 1 << HASH_BITS;

/// The table slot of a 3-byte sequence (the low 24 bits of `v`).
#[inline(always)]
fn slot(v: u32) -> usize {
    (v.wrapping_mul(2_654_435_761) >> (32 - HASH_BITS)) as usize
}

/// The 3 bytes at `p`, as `slot` takes them; `p + 4 <= input.len()` (one load).
#[inline(always)]
fn seq3(input: &[u8], p: usize) -> u32 {
    let mut w = [0u8; 4];
    w.copy_from_slice(&input[p..p + 4]);
    u32::from_be_bytes(w) >> 8
}

/// How many bytes of `input` from `a` and from `b` agree, `a < b`, up to `max`: eight
/// bytes per step, the first difference found from the xor's lowest set bit.
#[inline(always)]
fn common_len(input: &[u8], a: usize, b: usize, max: usize) -> usize {
    let word = |p: usize| {
        let mut w = [0u8; 8];
        w.copy_from_slice(&input[p..p + 8]);
        u64::from_le_bytes(w)
    };
    let mut len = 0;
    while len + 8 <= max {
        let x = word(a + len) ^ word(b + len);
        if x != 0 {
            return len + (x.trailing_zeros() / 8) as usize;
        }
        len += 8;
    }
    while len < max && input[a + len] == input[b + len] {
        len += 1;
    }
    len
}

/// Appends `input[start..end]` as literal runs. A run is copied as a fixed-size block of
/// `MAX_LITERAL` bytes whenever the input has that many from its start (then cut back to
/// its length): a constant-size copy is a few register moves where a variable one is a
/// call to memcpy, and short runs between back references are the common case.
#[inline(always)]
fn push_literals(out: &mut Vec<u8>, input: &[u8], mut start: usize, end: usize) {
    while start < end {
        let n = (end - start).min(MAX_LITERAL);
        out.push((n - 1) as u8);
        let block = input
            .get(start..start + MAX_LITERAL)
            .and_then(|b| <&[u8; MAX_LITERAL]>::try_from(b).ok());
        match block {
            Some(block) => {
                let keep = out.len() + n;
                out.extend_from_slice(block);
                out.truncate(keep);
            }
            None => out.extend_from_slice(&input[start..start + n]),
        }
        start += n;
    }
}

impl Compressor {
    /// Compresses `input` into `out` (cleared first). Returns false, as Redis's compressor
    /// does, when the result would be longer than `max_out` bytes.
    pub fn compress(&mut self, input: &[u8], out: &mut Vec<u8>, max_out: usize) -> bool {
        out.clear();
        if self.table.is_empty() {
            // Allocated on first use: many encoders never compress anything.
            self.table = vec![0; TABLE_LEN];
        }
        let n = input.len();
        if n as u64 + 2 >= (u32::MAX - self.base) as u64 {
            self.table.fill(0);
            self.base = 1;
        }
        if n as u64 + 2 >= u32::MAX as u64 {
            return false;
        }
        let base = self.base;
        self.base += n as u32 + 1;
        // A fixed-size view: slots index it without bounds checks.
        let Ok(table) = <&mut [u32; TABLE_LEN]>::try_from(self.table.as_mut_slice()) else {
            return false;
        };
        // Room for the worst case (all literals), so pushes never reallocate mid-loop.
        out.reserve(max_out.min(n + n / MAX_LITERAL + 1));
        let (mut ip, mut lit_start) = (0usize, 0usize);
        // Past this position the pending literals alone would exceed `max_out`.
        let mut give_up = max_out;
        // The sequence at `ip`, rolled forward a byte at a time.
        let mut v = if n >= 2 {
            (input[0] as u32) << 8 | input[1] as u32
        } else {
            0
        };
        while ip + 2 < n {
            v = (v << 8 | input[ip + 2] as u32) & 0x00ff_ffff;
            let h = slot(v);
            let cand = table[h];
            table[h] = base + ip as u32;
            if cand >= base {
                let r = (cand - base) as usize;
                let back = ip - r;
                // r + 3 <= ip + 2 < n: the candidate has a fourth byte to load with it.
                if back <= MAX_OFFSET && seq3(input, r) == v {
                    push_literals(out, input, lit_start, ip);
                    let max = (n - ip).min(MAX_MATCH);
                    let len = 3 + common_len(input, r + 3, ip + 3, max - 3);
                    let off = back - 1;
                    let code = len - 2;
                    if code < 7 {
                        out.push((code << 5 | off >> 8) as u8);
                    } else {
                        out.push((7 << 5 | off >> 8) as u8);
                        out.push((code - 7) as u8);
                    }
                    out.push(off as u8);
                    // Index the last two positions of the match so the next one can start
                    // there (a match is at least 3 long: both lie past `ip`).
                    let end = ip + len;
                    for p in end - 2..end {
                        if p + 3 < n {
                            table[slot(seq3(input, p))] = base + p as u32;
                        }
                    }
                    ip = end;
                    lit_start = ip;
                    if out.len() > max_out {
                        return false;
                    }
                    give_up = ip.saturating_add(max_out - out.len());
                    if ip + 1 < n {
                        v = (input[ip] as u32) << 8 | input[ip + 1] as u32;
                    }
                    continue;
                }
            }
            ip += 1;
            if ip > give_up {
                return false;
            }
        }
        push_literals(out, input, lit_start, n);
        out.len() <= max_out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn roundtrip(data: &[u8]) {
        let mut c = Compressor::default();
        let mut out = Vec::new();
        assert!(c.compress(data, &mut out, usize::MAX));
        let mut back = vec![0u8; data.len()];
        decompress(&out, &mut back).expect("decompresses");
        assert_eq!(back, data);
    }

    #[test]
    fn compresses_and_restores_varied_inputs() {
        roundtrip(b"");
        roundtrip(b"a");
        roundtrip(b"abcabcabcabcabcabcabcabcabcabcabcabcabc");
        roundtrip(&[7u8; 100_000]);
        let noise: Vec<u8> = (0..70_000u32)
            .map(|i| (i.wrapping_mul(2_654_435_761) >> 11) as u8)
            .collect();
        roundtrip(&noise);
        let text = b"the quick brown fox jumps over the lazy dog. ".repeat(500);
        roundtrip(&text);
    }

    #[test]
    fn every_length_round_trips_whole_blocks_or_not() {
        // Short literal runs and references at every distance from the end of the output
        // (where a whole-block copy no longer fits).
        let text = b"field000 value-1 field001 value-22 field002 value-333 ab ab ab abc".repeat(8);
        for len in 0..text.len() {
            roundtrip(&text[..len]);
        }
    }

    #[test]
    fn repetitive_input_shrinks_and_noise_is_refused_under_a_limit() {
        let mut c = Compressor::default();
        let mut out = Vec::new();
        let data = vec![b'x'; 1000];
        assert!(c.compress(&data, &mut out, 996));
        assert!(out.len() < 40, "{} bytes", out.len());
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        let noise: Vec<u8> = (0..1000)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                (x >> 32) as u8
            })
            .collect();
        assert!(!c.compress(&noise, &mut out, noise.len() - 4));
    }

    #[test]
    fn stale_table_entries_from_earlier_inputs_are_ignored() {
        let mut c = Compressor::default();
        let mut out = Vec::new();
        for i in 0..50u8 {
            let data: Vec<u8> = (0..200u32).map(|j| (j as u8).wrapping_mul(i | 1)).collect();
            assert!(c.compress(&data, &mut out, usize::MAX));
            let mut back = vec![0u8; data.len()];
            decompress(&out, &mut back).expect("decompresses");
            assert_eq!(back, data);
        }
    }

    #[test]
    fn malformed_streams_are_refused() {
        let mut out = [0u8; 4];
        assert_eq!(decompress(&[3, b'a'], &mut out), Err(LzfError::Truncated));
        assert_eq!(decompress(&[0, b'a'], &mut out), Err(LzfError::TooShort));
        assert_eq!(
            decompress(&[4, 1, 2, 3, 4, 5], &mut out),
            Err(LzfError::TooLong)
        );
        // A back reference with nothing before it.
        assert_eq!(
            decompress(&[0x20, 0], &mut out),
            Err(LzfError::BadReference)
        );
        assert_eq!(decompress(&[0xe0], &mut out), Err(LzfError::Truncated));
        assert_eq!(
            decompress(&[0, b'a', 0xe0, 1], &mut out),
            Err(LzfError::Truncated)
        );
    }
}
