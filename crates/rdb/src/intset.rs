//! Intsets: sorted arrays of distinct integers, all stored at one width (RDB type 11).
//!
//! Layout: element width in bytes (u32 LE: 2, 4 or 8), count (u32 LE), the elements
//! (little-endian, ascending).

use crate::error::BlobError;

/// The elements of an intset, checked: known width, size matching the count, not empty,
/// strictly ascending.
pub fn decode(data: &[u8]) -> Result<Vec<i64>, BlobError> {
    if data.len() < 8 {
        return Err(BlobError::new(0, "shorter than an intset header"));
    }
    let width = u32::from_le_bytes([data[0], data[1], data[2], data[3]]) as usize;
    if !matches!(width, 2 | 4 | 8) {
        return Err(BlobError::new(0, format!("invalid element width {width}")));
    }
    let count = u32::from_le_bytes([data[4], data[5], data[6], data[7]]) as u64;
    if 8 + count * width as u64 != data.len() as u64 {
        return Err(BlobError::new(
            4,
            format!(
                "{count} elements of {width} bytes do not fill {} bytes",
                data.len()
            ),
        ));
    }
    if count == 0 {
        return Err(BlobError::new(4, "empty intset"));
    }
    let mut out = Vec::with_capacity(count as usize);
    for (i, c) in data[8..].chunks_exact(width).enumerate() {
        let v = match width {
            2 => i16::from_le_bytes([c[0], c[1]]) as i64,
            4 => i32::from_le_bytes([c[0], c[1], c[2], c[3]]) as i64,
            _ => i64::from_le_bytes([c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7]]),
        };
        if out.last().is_some_and(|&prev| prev >= v) {
            return Err(BlobError::new(
                8 + i * width,
                "elements are not in strictly ascending order",
            ));
        }
        out.push(v);
    }
    Ok(out)
}

/// Encodes distinct integers as an intset (sorting them; the width fits the widest).
pub fn encode(values: &mut [i64], out: &mut Vec<u8>) {
    values.sort_unstable();
    let width: usize = match values.iter().map(|&v| v.max(-v.saturating_add(1))).max() {
        Some(m) if m > i32::MAX as i64 => 8,
        Some(m) if m > i16::MAX as i64 => 4,
        _ => 2,
    };
    out.clear();
    out.extend_from_slice(&(width as u32).to_le_bytes());
    out.extend_from_slice(&(values.len() as u32).to_le_bytes());
    for &v in values.iter() {
        match width {
            2 => out.extend_from_slice(&(v as i16).to_le_bytes()),
            4 => out.extend_from_slice(&(v as i32).to_le_bytes()),
            _ => out.extend_from_slice(&v.to_le_bytes()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn widths_follow_the_widest_value() {
        let mut out = Vec::new();
        for (vals, width) in [
            (vec![3i64, 1, 2], 2),
            (vec![-32768, 32767], 2),
            (vec![-32769, 0], 4),
            (vec![32768], 4),
            (vec![i32::MIN as i64], 4),
            (vec![i32::MAX as i64 + 1], 8),
            (vec![i64::MIN, i64::MAX], 8),
        ] {
            let mut v = vals.clone();
            encode(&mut v, &mut out);
            assert_eq!(out[0] as usize, width, "{vals:?}");
            let mut sorted = vals.clone();
            sorted.sort();
            assert_eq!(decode(&out).expect("valid"), sorted);
        }
    }

    #[test]
    fn refuses_disorder_duplicates_and_bad_sizes() {
        let mut out = Vec::new();
        encode(&mut [1, 2, 3], &mut out);
        let mut dup = out.clone();
        dup[10] = 1; // second element 2 -> 1
        assert!(decode(&dup).is_err());
        let mut unsorted = out.clone();
        unsorted[8] = 9;
        assert!(decode(&unsorted).is_err());
        assert!(decode(&out[..out.len() - 1]).is_err());
        let mut width = out.clone();
        width[0] = 3;
        assert!(decode(&width).is_err());
        assert!(decode(&[2, 0, 0, 0, 0, 0, 0, 0]).is_err());
    }
}
