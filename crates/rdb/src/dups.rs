//! Duplicate detection for set members, hash fields and sorted-set members.
//!
//! Hash every key, sort the (hash, index) pairs and compare bytes only where hashes are
//! equal: no allocation once the scratch vector has grown, no per-pair byte comparisons,
//! and a per-process random seed so crafted collisions cannot make it quadratic.

use std::hash::BuildHasher;

#[derive(Default)]
pub struct DupFinder {
    hasher: hashbrown::DefaultHashBuilder,
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
        if s.capacity() > 1 << 16 {
            *s = Vec::new();
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
        let many: Vec<Vec<u8>> = (0..5000).map(|i| i.to_string().into_bytes()).collect();
        assert!(!any(&many));
        let mut with_dup = many.clone();
        with_dup.push(b"4321".to_vec());
        assert!(any(&with_dup));
    }
}
