//! Which of a shard's keys have an entry in the cold store, as a quotient filter of their
//! hashes: the few bytes per cold key that stay in RAM (docs/tiering.md). A key the filter
//! rules out is not in the store, so a write of a new key, or a read of a missing one,
//! costs no store lookup.
//!
//! The filter holds one fingerprint per stored entry (cold keys, and the store copies of
//! clean keys): added when an entry is written to the store, removed when it leaves it.
//! It never answers "no" for a stored key; when it cannot take another fingerprint it
//! gives up and answers "maybe" for every key until the shard's store entries are cleared.

use qfilter::Filter;

/// Fingerprint bits: the filter starts with 2^6 slots and grows by taking bits from the
/// remainders, so at 4,096 keys (2^13 slots) each slot holds 13 remainder bits plus 3
/// of metadata, about 4 bytes a key at half load. A missing key is a false "maybe" with
/// odds of about keys / 2^26 (1 in 16,000 at 4,096 keys): then the store's own filters
/// answer.
const FINGERPRINT_BITS: u8 = 26;

/// The smallest filter's keys: 64 slots (a shard's first cold key costs 200 bytes).
const MIN_KEYS: u64 = 60;

#[derive(Default)]
pub(crate) enum ColdFilter {
    /// No entry of this shard is in the store.
    #[default]
    Empty,
    Exact(Box<Filter>),
    /// Full (or not creatable): every key may be in the store.
    Unknown,
}

impl ColdFilter {
    /// An entry for the key of hash `h` went to the store.
    pub fn insert(&mut self, h: u64) {
        if let ColdFilter::Empty = self {
            *self = match Filter::with_fingerprint_size(MIN_KEYS, FINGERPRINT_BITS) {
                Ok(f) => ColdFilter::Exact(Box::new(f)),
                Err(_) => ColdFilter::Unknown,
            };
        }
        if let ColdFilter::Exact(f) = self {
            // Duplicates are kept: two keys may share a fingerprint, and each removal
            // must take away only its own.
            if f.insert_fingerprint(true, fingerprint(h)).is_err() {
                *self = ColdFilter::Unknown;
            }
        }
    }

    /// The entry for the key of hash `h` left the store (it was inserted before).
    pub fn remove(&mut self, h: u64) {
        if let ColdFilter::Exact(f) = self {
            f.remove_fingerprint(fingerprint(h));
        }
    }

    /// Whether the key of hash `h` may have an entry in the store (false is certain).
    #[inline]
    pub fn may_contain(&self, h: u64) -> bool {
        match self {
            ColdFilter::Empty => false,
            ColdFilter::Exact(f) => f.contains_fingerprint(fingerprint(h)),
            ColdFilter::Unknown => true,
        }
    }

    /// The filter's memory, in bytes.
    pub fn bytes(&self) -> usize {
        match self {
            ColdFilter::Exact(f) => f.memory_usage(),
            _ => 0,
        }
    }
}

/// The shard index takes bits 32 and up of a key's hash: the fingerprint takes the low
/// ones, which differ between keys of one shard.
#[inline]
fn fingerprint(h: u64) -> u64 {
    h & ((1 << FINGERPRINT_BITS) - 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn h(i: u64) -> u64 {
        crate::shard::hash(format!("key:{i}").as_bytes())
    }

    #[test]
    fn never_rules_out_a_stored_key_and_forgets_removed_ones() {
        let mut f = ColdFilter::default();
        assert!(!f.may_contain(h(1)));
        for i in 0..50_000 {
            f.insert(h(i));
        }
        assert!((0..50_000).all(|i| f.may_contain(h(i))));
        for i in 0..50_000 {
            if i % 2 == 0 {
                f.remove(h(i));
            }
        }
        assert!((0..50_000)
            .filter(|i| i % 2 == 1)
            .all(|i| f.may_contain(h(i))));
        let false_maybes = (0..50_000).filter(|i| i % 2 == 0 && f.may_contain(h(*i)));
        // 25,000 keys in the filter: about 25,000 / 2^26 odds each.
        assert!(false_maybes.count() < 20);
        assert!(f.bytes() > 0 && f.bytes() < 25_000 * 8);
    }

    #[test]
    fn a_shared_fingerprint_survives_the_removal_of_one_of_its_keys() {
        let mut f = ColdFilter::default();
        f.insert(7);
        f.insert(7 | 1 << 40);
        f.remove(7);
        assert!(f.may_contain(7 | 1 << 40));
        f.remove(7 | 1 << 40);
        assert!(!f.may_contain(7));
    }
}
