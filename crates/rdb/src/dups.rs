//! Duplicate detection for set members, hash fields and sorted-set members.
//!
//! Every key is hashed with a per-process random seed (crafted collisions cannot make it
//! quadratic) and bytes are compared only where hashes agree. Up to [`TABLE_MAX`] keys
//! they go into an open-addressing table of 4-byte slots, 16 bits of hash and a 16-bit
//! index (one pass, no sort, a table of 1 KiB for a typical DUMP payload's 100 fields);
//! beyond it the (hash, index) pairs are sorted. Either way the scratch space is reused.

use std::hash::BuildHasher;

/// Collections up to this size use the table (indices + 1 fit 16 bits).
const TABLE_MAX: usize = u16::MAX as usize;
/// Scratch space above this many entries is not kept.
const KEEP: usize = 1 << 16;

#[derive(Default)]
pub struct DupFinder {
    hasher: hashbrown::DefaultHashBuilder,
    slots: Vec<u32>,
    scratch: Vec<(u64, usize)>,
}

impl DupFinder {
    /// True if two of the `n` keys `key(0)`..`key(n - 1)` are equal.
    pub fn any<'a>(&mut self, n: usize, key: impl Fn(usize) -> &'a [u8]) -> bool {
        if n < 2 {
            return false;
        }
        if n == 2 {
            return key(0) == key(1);
        }
        let found = if n <= TABLE_MAX {
            self.by_table(n, &key)
        } else {
            self.by_sort(n, &key)
        };
        if self.scratch.capacity() > KEEP {
            self.scratch = Vec::new();
        }
        if self.slots.capacity() > 2 * KEEP {
            self.slots = Vec::new();
        }
        found
    }

    /// Slots of (16 bits of hash) << 16 | (index + 1), 0 meaning empty, at most half full.
    /// The slot is chosen by the hash's high 32 bits (the low ones of some hashers vary
    /// less), the tag is its low 16.
    fn by_table<'a>(&mut self, n: usize, key: &impl Fn(usize) -> &'a [u8]) -> bool {
        let mask = (2 * n).next_power_of_two() - 1;
        let t = &mut self.slots;
        t.clear();
        t.resize(mask + 1, 0);
        for i in 0..n {
            let k = key(i);
            let h = self.hasher.hash_one(k);
            let tag = (h as u32) << 16;
            let mut at = (h >> 32) as usize & mask;
            loop {
                let slot = t[at];
                if slot == 0 {
                    t[at] = tag | (i as u32 + 1);
                    break;
                }
                if slot & 0xffff_0000 == tag && key((slot & 0xffff) as usize - 1) == k {
                    return true;
                }
                at = (at + 1) & mask;
            }
        }
        false
    }

    fn by_sort<'a>(&mut self, n: usize, key: &impl Fn(usize) -> &'a [u8]) -> bool {
        let s = &mut self.scratch;
        s.clear();
        s.extend((0..n).map(|i| (self.hasher.hash_one(key(i)), i)));
        s.sort_unstable();
        let mut run = 0;
        for i in 1..s.len() {
            if s[i].0 != s[run].0 {
                run = i;
                continue;
            }
            // Equal hashes: compare with every earlier item of the run.
            let k = key(s[i].1);
            if s[run..i].iter().any(|&(_, j)| key(j) == k) {
                return true;
            }
        }
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_duplicates_anywhere() {
        let mut d = DupFinder::default();
        let mut any = |v: &[Vec<u8>]| d.any(v.len(), |i| &v[i]);
        let mk = |v: &[&str]| v.iter().map(|s| s.as_bytes().to_vec()).collect::<Vec<_>>();
        assert!(!any(&mk(&[])));
        assert!(!any(&mk(&["a"])));
        assert!(any(&mk(&["a", "a"])));
        assert!(!any(&mk(&["a", "b", "ab", ""])));
        // Both ways: the table for small collections, the sort beyond it.
        for n in [5000, TABLE_MAX + 10] {
            let many: Vec<Vec<u8>> = (0..n).map(|i| i.to_string().into_bytes()).collect();
            assert!(!any(&many));
            let mut with_dup = many.clone();
            with_dup.push(b"4321".to_vec());
            assert!(any(&with_dup));
            let mut dup_first = many.clone();
            dup_first.insert(0, (n - 1).to_string().into_bytes());
            assert!(any(&dup_first));
        }
    }
}
