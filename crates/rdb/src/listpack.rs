//! Listpacks: Redis 7's packed sequence of strings and integers.
//!
//! Layout: total bytes (u32 LE), element count (u16 LE, 65535 = "count them"), entries,
//! a 0xFF terminator. Each entry is an encoding byte (with length or small value), its
//! payload, then "backlen": the entry's size written so it can be read backwards.

use crate::error::BlobError;
use crate::num::parse_canonical_i64;
use crate::source::Elem;

const HEADER: usize = 6;
const EOF: u8 = 0xff;
const COUNT_UNKNOWN: u16 = u16::MAX;

/// Bytes of the backlen for an entry of `l` bytes, with Redis's exact thresholds.
fn backlen_size(l: usize) -> usize {
    if l <= 127 {
        1
    } else if l < 16383 {
        2
    } else if l < 2_097_151 {
        3
    } else if l < 268_435_455 {
        4
    } else {
        5
    }
}

/// The backlen bytes for an entry of `l` bytes: most significant 7-bit group first, every
/// byte after the first flagged with 0x80, so a reader walking backwards knows to go on.
fn backlen(l: usize, out: &mut [u8; 5]) -> &[u8] {
    let n = backlen_size(l);
    for (i, b) in out[..n].iter_mut().enumerate() {
        let group = ((l >> (7 * (n - 1 - i))) & 0x7f) as u8;
        *b = if i == 0 { group } else { group | 0x80 };
    }
    &out[..n]
}

/// A validating walk over a listpack's entries.
pub struct Listpack<'a> {
    data: &'a [u8],
    p: usize,
    count: u32,
    header_count: u16,
    done: bool,
}

impl<'a> Listpack<'a> {
    /// Checks the header (size, terminator); entries are checked as they are read.
    pub fn new(data: &'a [u8]) -> Result<Self, BlobError> {
        if data.len() < HEADER + 1 {
            return Err(BlobError::new(0, "shorter than a listpack header"));
        }
        let total = u32::from_le_bytes([data[0], data[1], data[2], data[3]]) as usize;
        if total != data.len() {
            return Err(BlobError::new(
                0,
                format!("header says {total} bytes but the blob has {}", data.len()),
            ));
        }
        if data[data.len() - 1] != EOF {
            return Err(BlobError::new(data.len() - 1, "no terminator at the end"));
        }
        Ok(Listpack {
            data,
            p: HEADER,
            count: 0,
            header_count: u16::from_le_bytes([data[4], data[5]]),
            done: false,
        })
    }

    /// The element count the header states, if it does.
    pub fn header_count(&self) -> Option<usize> {
        (self.header_count != COUNT_UNKNOWN).then_some(self.header_count as usize)
    }

    /// Position of the next entry (for error messages).
    pub fn position(&self) -> usize {
        self.p
    }

    /// The next entry, or `None` after the last (when the count is checked too). Always
    /// inlined: returned through memory, its result stalled each caller on store forwarding.
    #[inline(always)]
    #[allow(clippy::should_implement_trait)]
    pub fn next(&mut self) -> Result<Option<Elem>, BlobError> {
        if self.done {
            return Ok(None);
        }
        let d = self.data;
        let p = self.p;
        let last = d.len() - 1;
        let b = d[p];
        if b == EOF {
            if p != last {
                return Err(BlobError::new(p, "terminator before the end of the blob"));
            }
            if self.header_count != COUNT_UNKNOWN && self.header_count as u32 != self.count {
                return Err(BlobError::new(
                    4,
                    format!(
                        "header counts {} entries but there are {}",
                        self.header_count, self.count
                    ),
                ));
            }
            self.done = true;
            return Ok(None);
        }
        let past_end = || BlobError::new(p, "entry runs past the end of the listpack");
        let head = |n: usize| {
            d.get(p + 1..p + n)
                .filter(|_| p + n <= last)
                .ok_or_else(past_end)
        };
        let int = |n: usize| -> Result<i64, BlobError> {
            // Little-endian, sign-extended from n bytes.
            let bytes = head(1 + n)?;
            let mut v: u64 = 0;
            for (i, &x) in bytes.iter().enumerate() {
                v |= (x as u64) << (8 * i);
            }
            let shift = 64 - 8 * n as u32;
            Ok(((v << shift) as i64) >> shift)
        };
        let (hdr, len, elem) = match b {
            0x00..=0x7f => (1, 0, Some(b as i64)),
            0x80..=0xbf => (1, (b & 0x3f) as usize, None),
            0xc0..=0xdf => {
                let lo = head(2)?[0] as i64;
                let v = ((b & 0x1f) as i64) << 8 | lo;
                (2, 0, Some(if v >= 1 << 12 { v - (1 << 13) } else { v }))
            }
            0xe0..=0xef => (2, ((b & 0x0f) as usize) << 8 | head(2)?[0] as usize, None),
            0xf0 => {
                let l = head(5)?;
                (
                    5,
                    u32::from_le_bytes([l[0], l[1], l[2], l[3]]) as usize,
                    None,
                )
            }
            0xf1 => (3, 0, Some(int(2)?)),
            0xf2 => (4, 0, Some(int(3)?)),
            0xf3 => (5, 0, Some(int(4)?)),
            0xf4 => (9, 0, Some(int(8)?)),
            _ => {
                return Err(BlobError::new(
                    p,
                    format!("invalid entry encoding 0x{b:02x}"),
                ))
            }
        };
        let entry = hdr + len;
        let end = p
            .checked_add(entry)
            .filter(|&e| e <= last)
            .ok_or_else(past_end)?;
        let mut buf = [0u8; 5];
        let want = backlen(entry, &mut buf);
        let next = end + want.len();
        // Byte by byte: a slice comparison would call memcmp for these few bytes.
        let ok = next <= last && want.iter().zip(&d[end..next]).all(|(a, b)| a == b);
        if !ok {
            return Err(BlobError::new(
                end,
                "entry's back-length does not match its size",
            ));
        }
        self.p = next;
        self.count += 1;
        Ok(Some(match elem {
            Some(v) => Elem::Int(v),
            None => Elem::Str(p + hdr..end),
        }))
    }
}

/// An integer entry's encoding byte(s) and payload, the smallest form that holds `v`.
fn encode_int(v: i64, b: &mut Vec<u8>) {
    if (0..=127).contains(&v) {
        b.push(v as u8);
    } else if (-4096..=4095).contains(&v) {
        let u = if v < 0 { v + (1 << 13) } else { v } as u16;
        b.extend_from_slice(&[0xc0 | (u >> 8) as u8, u as u8]);
    } else if i16::try_from(v).is_ok() {
        b.push(0xf1);
        b.extend_from_slice(&(v as i16).to_le_bytes());
    } else if (-(1 << 23)..(1 << 23)).contains(&v) {
        b.push(0xf2);
        b.extend_from_slice(&(v as i32).to_le_bytes()[..3]);
    } else if i32::try_from(v).is_ok() {
        b.push(0xf3);
        b.extend_from_slice(&(v as i32).to_le_bytes());
    } else {
        b.push(0xf4);
        b.extend_from_slice(&v.to_le_bytes());
    }
}

/// Builds a listpack the way Redis appends to one: strings that are canonical integers
/// are stored as integers.
pub struct ListpackWriter {
    buf: Vec<u8>,
    count: usize,
}

impl Default for ListpackWriter {
    fn default() -> Self {
        ListpackWriter {
            buf: vec![0; HEADER],
            count: 0,
        }
    }
}

impl ListpackWriter {
    pub fn clear(&mut self) {
        self.buf.clear();
        self.buf.resize(HEADER, 0);
        self.count = 0;
    }

    /// Size of the listpack if finished now (Redis's `lpBytes`).
    pub fn bytes(&self) -> usize {
        self.buf.len() + 1
    }

    fn end_entry(&mut self, start: usize) {
        let mut b = [0u8; 5];
        let entry = self.buf.len() - start;
        self.buf.extend_from_slice(backlen(entry, &mut b));
        self.count += 1;
    }

    pub fn push(&mut self, s: &[u8]) {
        if let Some(v) = parse_canonical_i64(s) {
            return self.push_int(v);
        }
        let start = self.buf.len();
        let len = s.len();
        if len < 64 {
            self.buf.push(0x80 | len as u8);
        } else if len < 4096 {
            self.buf
                .extend_from_slice(&[0xe0 | (len >> 8) as u8, len as u8]);
        } else {
            self.buf.push(0xf0);
            self.buf.extend_from_slice(&(len as u32).to_le_bytes());
        }
        self.buf.extend_from_slice(s);
        self.end_entry(start);
    }

    pub fn push_int(&mut self, v: i64) {
        let start = self.buf.len();
        encode_int(v, &mut self.buf);
        self.end_entry(start);
    }

    /// Replaces the first entry, an integer, with another (resizing if its encoding needs
    /// a different number of bytes), like Redis updating a stream node's entry count.
    pub fn replace_first_int(&mut self, old: i64, new: i64) {
        let mut entry = Vec::with_capacity(14);
        let mut b = [0u8; 5];
        let old_len = {
            encode_int(old, &mut entry);
            let n = entry.len();
            n + backlen(n, &mut b).len()
        };
        entry.clear();
        encode_int(new, &mut entry);
        let n = entry.len();
        entry.extend_from_slice(backlen(n, &mut b));
        self.buf.splice(HEADER..HEADER + old_len, entry);
    }

    /// Completes the header and terminator; the result stays valid until the next push.
    pub fn finish(&mut self) -> &[u8] {
        let total = (self.buf.len() + 1) as u32;
        self.buf[..4].copy_from_slice(&total.to_le_bytes());
        let count = self.count.min(COUNT_UNKNOWN as usize) as u16;
        self.buf[4..6].copy_from_slice(&count.to_le_bytes());
        self.buf.push(EOF);
        &self.buf
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read_all(lp: &[u8]) -> Result<Vec<Result<i64, Vec<u8>>>, BlobError> {
        let mut r = Listpack::new(lp)?;
        let mut out = Vec::new();
        while let Some(e) = r.next()? {
            out.push(match e {
                Elem::Int(v) => Ok(v),
                Elem::Str(range) => Err(lp[range].to_vec()),
            });
        }
        Ok(out)
    }

    #[test]
    fn every_encoding_round_trips() {
        let ints = [
            0i64,
            127,
            128,
            -1,
            -4096,
            4095,
            4096,
            -4097,
            32767,
            -32768,
            32768,
            8388607,
            -8388608,
            8388608,
            i32::MAX as i64,
            i32::MIN as i64,
            i32::MAX as i64 + 1,
            i64::MAX,
            i64::MIN,
        ];
        let strs: Vec<Vec<u8>> = [0usize, 1, 63, 64, 127, 128, 4095, 4096, 20000]
            .iter()
            .map(|&n| vec![b'x'; n])
            .collect();
        let mut w = ListpackWriter::default();
        for &v in &ints {
            w.push_int(v);
        }
        for s in &strs {
            w.push(s);
        }
        w.push(b"-12");
        w.push(b"012");
        let lp = w.finish().to_vec();
        let got = read_all(&lp).expect("valid");
        let mut want: Vec<Result<i64, Vec<u8>>> = ints.iter().map(|&v| Ok(v)).collect();
        want.extend(strs.into_iter().map(Err));
        want.push(Ok(-12));
        want.push(Err(b"012".to_vec()));
        assert_eq!(got, want);
    }

    #[test]
    fn replacing_the_first_integer_resizes_in_place() {
        let mut w = ListpackWriter::default();
        w.push_int(127);
        w.push(b"after");
        w.replace_first_int(127, 128);
        w.replace_first_int(128, 129);
        assert_eq!(
            read_all(w.finish()).expect("valid"),
            vec![Ok(129), Err(b"after".to_vec())]
        );
    }

    #[test]
    fn backlen_thresholds_follow_redis() {
        assert_eq!(backlen_size(127), 1);
        assert_eq!(backlen_size(128), 2);
        assert_eq!(backlen_size(16382), 2);
        assert_eq!(backlen_size(16383), 3);
        let mut w = ListpackWriter::default();
        w.push(&vec![b'a'; 16383 - 5]);
        let lp = w.finish().to_vec();
        assert_eq!(read_all(&lp).expect("valid").len(), 1);
    }

    #[test]
    fn damage_is_reported_not_panicked_on() {
        let mut w = ListpackWriter::default();
        w.push(b"hello");
        w.push_int(1000);
        w.push(&[b'z'; 100]);
        let lp = w.finish().to_vec();
        for cut in 0..lp.len() {
            assert!(read_all(&lp[..cut]).is_err(), "cut at {cut}");
        }
        let mut bad_count = lp.clone();
        bad_count[4] = 5;
        assert!(read_all(&bad_count).is_err());
        let mut unknown_count = lp.clone();
        unknown_count[4..6].copy_from_slice(&[0xff, 0xff]);
        assert_eq!(read_all(&unknown_count).expect("counted").len(), 3);
        let mut bad_backlen = lp.clone();
        bad_backlen[6 + 6] ^= 1;
        assert!(read_all(&bad_backlen).is_err());
        let mut bad_enc = lp;
        bad_enc[6] = 0xf5;
        assert!(read_all(&bad_enc).is_err());
        for flip in 0..(bad_enc.len() * 8) {
            let mut x = bad_enc.clone();
            x[flip / 8] ^= 1 << (flip % 8);
            let _ = read_all(&x);
        }
    }
}
