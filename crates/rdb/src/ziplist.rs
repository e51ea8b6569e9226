//! Ziplists: the packed sequence Redis used before listpacks (RDB types 10, 12, 13 and the
//! nodes of type 14). Read only: Redis 7 converts them when loading and never writes them.
//!
//! Layout: total bytes (u32 LE), offset of the last entry (u32 LE), count (u16 LE, 65535 =
//! "count them"), entries, 0xFF. Each entry: the previous entry's size (1 byte, or 0xFE and
//! a u32 LE), an encoding (string length or integer kind), the payload.

use crate::error::BlobError;
use crate::source::Elem;

const HEADER: usize = 10;
const END: u8 = 0xff;
const BIG_PREVLEN: u8 = 0xfe;

/// A validating walk over a ziplist's entries.
pub struct Ziplist<'a> {
    data: &'a [u8],
    p: usize,
    prev_start: Option<usize>,
    prev_size: usize,
    count: u32,
    header_count: u16,
    tail: usize,
    done: bool,
}

fn le32(d: &[u8], at: usize) -> u32 {
    u32::from_le_bytes([d[at], d[at + 1], d[at + 2], d[at + 3]])
}

impl<'a> Ziplist<'a> {
    pub fn new(data: &'a [u8]) -> Result<Self, BlobError> {
        if data.len() < HEADER + 1 {
            return Err(BlobError::new(0, "shorter than a ziplist header"));
        }
        let total = le32(data, 0) as usize;
        if total != data.len() {
            return Err(BlobError::new(
                0,
                format!("header says {total} bytes but the blob has {}", data.len()),
            ));
        }
        if data[data.len() - 1] != END {
            return Err(BlobError::new(data.len() - 1, "no terminator at the end"));
        }
        let tail = le32(data, 4) as usize;
        if tail > data.len() - 1 {
            return Err(BlobError::new(4, "tail offset past the end"));
        }
        Ok(Ziplist {
            data,
            p: HEADER,
            prev_start: None,
            prev_size: 0,
            count: 0,
            header_count: u16::from_le_bytes([data[8], data[9]]),
            tail,
            done: false,
        })
    }

    pub fn header_count(&self) -> Option<usize> {
        (self.header_count != u16::MAX).then_some(self.header_count as usize)
    }

    /// Always inlined, as `Listpack::next` is (see there).
    #[inline(always)]
    #[allow(clippy::should_implement_trait)]
    pub fn next(&mut self) -> Result<Option<Elem>, BlobError> {
        if self.done {
            return Ok(None);
        }
        let d = self.data;
        let p = self.p;
        let last = d.len() - 1;
        if d[p] == END {
            if p != last {
                return Err(BlobError::new(p, "terminator before the end of the blob"));
            }
            if let Some(prev) = self.prev_start {
                if prev != self.tail {
                    return Err(BlobError::new(4, "tail offset is not the last entry"));
                }
            }
            if self.header_count != u16::MAX && self.header_count as u32 != self.count {
                return Err(BlobError::new(
                    8,
                    format!(
                        "header counts {} entries but there are {}",
                        self.header_count, self.count
                    ),
                ));
            }
            self.done = true;
            return Ok(None);
        }
        let past_end = || BlobError::new(p, "entry runs past the end of the ziplist");
        let bytes = |from: usize, n: usize| {
            d.get(from..from + n)
                .filter(|_| from + n <= last)
                .ok_or_else(past_end)
        };
        let (prevlen_size, prevlen) = if d[p] < BIG_PREVLEN {
            (1, d[p] as usize)
        } else {
            let b = bytes(p + 1, 4)?;
            (5, u32::from_le_bytes([b[0], b[1], b[2], b[3]]) as usize)
        };
        if prevlen != self.prev_size {
            return Err(BlobError::new(
                p,
                format!(
                    "entry says the previous one has {prevlen} bytes, not {}",
                    self.prev_size
                ),
            ));
        }
        let e = p + prevlen_size;
        let enc = bytes(e, 1)?[0];
        let int = |n: usize| -> Result<i64, BlobError> {
            let b = bytes(e + 1, n)?;
            let mut v: u64 = 0;
            for (i, &x) in b.iter().enumerate() {
                v |= (x as u64) << (8 * i);
            }
            let shift = 64 - 8 * n as u32;
            Ok(((v << shift) as i64) >> shift)
        };
        let (lensize, len, value) = match enc {
            0x00..=0x3f => (1, (enc & 0x3f) as usize, None),
            0x40..=0x7f => (
                2,
                ((enc & 0x3f) as usize) << 8 | bytes(e + 1, 1)?[0] as usize,
                None,
            ),
            0x80..=0xbf => {
                let b = bytes(e + 1, 4)?;
                (
                    5,
                    u32::from_be_bytes([b[0], b[1], b[2], b[3]]) as usize,
                    None,
                )
            }
            0xc0 => (1, 2, Some(int(2)?)),
            0xd0 => (1, 4, Some(int(4)?)),
            0xe0 => (1, 8, Some(int(8)?)),
            0xf0 => (1, 3, Some(int(3)?)),
            0xfe => (1, 1, Some(int(1)?)),
            0xf1..=0xfd => (1, 0, Some((enc & 0x0f) as i64 - 1)),
            _ => {
                return Err(BlobError::new(
                    e,
                    format!("invalid entry encoding 0x{enc:02x}"),
                ))
            }
        };
        let data_start = e + lensize;
        let next = data_start
            .checked_add(len)
            .filter(|&n| n <= last)
            .ok_or_else(past_end)?;
        self.prev_start = Some(p);
        self.prev_size = next - p;
        self.p = next;
        self.count += 1;
        Ok(Some(match value {
            Some(v) => Elem::Int(v),
            None => Elem::Str(data_start..next),
        }))
    }
}
