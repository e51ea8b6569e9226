//! Zipmaps: the packed hash of Redis 2.4 and earlier (RDB type 9). Read only.
//!
//! Layout: a count byte (254 = "count them"), then per pair: field length, field, value
//! length, a "free" byte, value, that many unused bytes; then 0xFF. A length is one byte
//! below 254, or 254 (or 255) followed by a u32 LE.

use crate::error::BlobError;
use std::ops::Range;

const BIGLEN: u8 = 254;
const END: u8 = 0xff;

/// A field and its value, as ranges of the blob.
pub type Pair = (Range<usize>, Range<usize>);

/// The field/value ranges of a zipmap, checked: everything within the blob, a terminator
/// at the end, at least one pair, the count byte right.
pub fn decode(data: &[u8]) -> Result<Vec<Pair>, BlobError> {
    if data.len() < 2 {
        return Err(BlobError::new(0, "shorter than a zipmap"));
    }
    let last = data.len() - 1;
    if data[last] != END {
        return Err(BlobError::new(last, "no terminator at the end"));
    }
    let past_end = |at: usize| BlobError::new(at, "entry runs past the end of the zipmap");
    // A length at `p`: (bytes it takes, value). Its bytes must lie before the terminator.
    let length = |p: usize| -> Result<(usize, usize), BlobError> {
        if data[p] < BIGLEN {
            return Ok((1, data[p] as usize));
        }
        let b = data
            .get(p + 1..p + 5)
            .filter(|_| p + 5 <= last)
            .ok_or_else(|| past_end(p))?;
        Ok((5, u32::from_le_bytes([b[0], b[1], b[2], b[3]]) as usize))
    };
    let mut pairs = Vec::new();
    let mut p = 1;
    while data[p] != END {
        let (s, flen) = length(p)?;
        let field = p + s..p + s + flen;
        p = field.end;
        if p > last {
            return Err(past_end(field.start));
        }
        let (s, vlen) = length(p)?;
        let free_at = p + s;
        if free_at >= last {
            return Err(past_end(p));
        }
        let free = data[free_at] as usize;
        let value = free_at + 1..free_at + 1 + vlen;
        p = value.end + free;
        if p > last {
            return Err(past_end(value.start));
        }
        pairs.push((field, value));
    }
    if pairs.is_empty() {
        return Err(BlobError::new(0, "empty zipmap"));
    }
    if data[0] != BIGLEN && data[0] as usize != pairs.len() {
        return Err(BlobError::new(
            0,
            format!(
                "count byte says {} pairs but there are {}",
                data[0],
                pairs.len()
            ),
        ));
    }
    Ok(pairs)
}
