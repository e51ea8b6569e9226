//! Inline strings: a string entry whose key and value fit in 19 bytes together, with no
//! expiry, is kept whole in a 24-byte bucket of its shard's second table (`ShardData::small`).
//! A lookup then reads the table and nothing else, one cache miss where a block entry takes
//! two (bucket, then block), and a key costs no allocation. Only such strings live there, so
//! the main table keeps its 8-byte buckets and every other key costs what it did.

/// `[key len u8][value len u8][lru u24][key][value]`.
#[derive(Clone)]
pub(crate) struct Inline([u8; SIZE]);

const SIZE: usize = 24;
const AT: usize = 5;

impl Inline {
    /// The most key and value bytes together that an inline string holds.
    pub const MAX: usize = SIZE - AT;

    /// True when a string of these lengths fits.
    #[inline]
    pub fn fits(key: &[u8], value: &[u8]) -> bool {
        key.len() + value.len() <= Self::MAX
    }

    /// The inline form of `key` = `value`; the caller checked `fits`.
    pub fn new(key: &[u8], value: &[u8], lru: u32) -> Inline {
        debug_assert!(Self::fits(key, value));
        let mut b = [0u8; SIZE];
        b[0] = key.len() as u8;
        b[AT..AT + key.len()].copy_from_slice(key);
        let mut s = Inline(b);
        s.write_value(value, lru);
        s
    }

    #[inline]
    pub fn key(&self) -> &[u8] {
        &self.0[AT..AT + usize::from(self.0[0])]
    }

    #[inline]
    pub fn value(&self) -> &[u8] {
        let v = AT + usize::from(self.0[0]);
        &self.0[v..v + usize::from(self.0[1])]
    }

    pub fn lru(&self) -> u32 {
        u32::from_le_bytes([self.0[2], self.0[3], self.0[4], 0])
    }

    pub fn touch(&mut self, lru: u32) {
        self.0[2..AT].copy_from_slice(&lru.to_le_bytes()[..3]);
    }

    /// Replaces the value in place when the new one still fits; false, with nothing
    /// changed, otherwise.
    pub fn overwrite(&mut self, value: &[u8], lru: u32) -> bool {
        if !Self::fits(self.key(), value) {
            return false;
        }
        self.write_value(value, lru);
        true
    }

    fn write_value(&mut self, value: &[u8], lru: u32) {
        let v = AT + usize::from(self.0[0]);
        self.0[1] = value.len() as u8;
        self.0[v..v + value.len()].copy_from_slice(value);
        self.touch(lru);
    }
}

#[cfg(test)]
mod tests {
    use super::Inline;

    /// Every split of up to MAX bytes between key and value reads back, and is overwritten
    /// in place by any value that still fits (longer or shorter); one that does not fit
    /// leaves it as it was.
    #[test]
    fn every_size_round_trips_and_overwrites() {
        assert_eq!(std::mem::size_of::<Inline>(), 24);
        let bytes: Vec<u8> = (0..=255u8).rev().collect();
        for total in 0..=Inline::MAX + 1 {
            for klen in 0..=total {
                let (key, value) = (&bytes[..klen], &bytes[100..100 + total - klen]);
                assert_eq!(Inline::fits(key, value), total <= Inline::MAX);
                if total > Inline::MAX {
                    continue;
                }
                let mut s = Inline::new(key, value, 0xFE_DCBA);
                assert_eq!((s.key(), s.value(), s.lru()), (key, value, 0xFE_DCBA));
                s.touch(5);
                assert_eq!((s.key(), s.value(), s.lru()), (key, value, 5));
                let longest = &bytes[200..200 + Inline::MAX - klen];
                assert!(s.overwrite(longest, 6));
                assert_eq!((s.key(), s.value(), s.lru()), (key, longest, 6));
                assert!(s.overwrite(b"", 7));
                assert_eq!((s.key(), s.value(), s.lru()), (key, &b""[..], 7));
                assert!(!s.overwrite(&bytes[..Inline::MAX + 1 - klen], 8));
                assert_eq!((s.key(), s.value(), s.lru()), (key, &b""[..], 7));
            }
        }
    }
}
