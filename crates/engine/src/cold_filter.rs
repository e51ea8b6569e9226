//! Which of a shard's keys have an entry in the cold store, as a quotient filter of their
//! hashes: the few bytes per cold key that stay in RAM (docs/tiering.md). A key the filter
//! rules out is not in the store, so a write of a new key, or a read of a missing one,
//! costs no store lookup. A second filter of the same kind holds the cold keys that have a
//! TTL: a write may replace or delete any other cold key without reading it.
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

/// `None`: no entry of this shard is in the store. One pointer, as a shard's fields must
/// stay within its cache lines (every shard of every database has one).
#[derive(Default)]
pub(crate) struct ColdFilter(Option<Box<Inner>>);

struct Inner {
    /// Inserts less removals: kept here rather than in the shard, whose lines are full.
    keys: usize,
    state: State,
}

enum State {
    Exact(Filter),
    /// Full (or not creatable): every key may be in the store.
    Unknown,
}

impl ColdFilter {
    /// An entry for the key of hash `h` went to the store.
    pub fn insert(&mut self, h: u64) {
        let inner = self.0.get_or_insert_with(|| {
            Box::new(Inner {
                keys: 0,
                state: match Filter::with_fingerprint_size(MIN_KEYS, FINGERPRINT_BITS) {
                    Ok(f) => State::Exact(f),
                    Err(_) => State::Unknown,
                },
            })
        });
        inner.keys += 1;
        if let State::Exact(f) = &mut inner.state {
            // Duplicates are kept: two keys may share a fingerprint, and each removal
            // must take away only its own.
            if f.insert_fingerprint(true, fingerprint(h)).is_err() {
                inner.state = State::Unknown;
            }
        }
    }

    /// The entry for the key of hash `h` left the store (it was inserted before).
    pub fn remove(&mut self, h: u64) {
        if let Some(inner) = self.0.as_deref_mut() {
            inner.keys = inner.keys.saturating_sub(1);
            if let State::Exact(f) = &mut inner.state {
                f.remove_fingerprint(fingerprint(h));
            }
        }
    }

    /// Whether every insert was removed again.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Inserts less removals: the shard's entries in the store (of this filter's kind).
    pub fn len(&self) -> usize {
        self.0.as_ref().map_or(0, |i| i.keys)
    }

    /// Whether the key of hash `h` may have an entry in the store (false is certain).
    #[inline]
    pub fn may_contain(&self, h: u64) -> bool {
        match self.0.as_deref().map(|i| &i.state) {
            None => false,
            Some(State::Exact(f)) => f.contains_fingerprint(fingerprint(h)),
            Some(State::Unknown) => true,
        }
    }

    /// The filter's memory, in bytes.
    pub fn bytes(&self) -> usize {
        match self.0.as_deref().map(|i| &i.state) {
            Some(State::Exact(f)) => f.memory_usage(),
            _ => 0,
        }
    }
}

/// The fingerprint mixes all of the hash's bits before keeping the low ones: the key
/// hash's low bits alone collide more often than chance for some seeds (sequential keys
/// such as `key:1`, `key:2`, ... gave up to five times the expected false "maybe"s).
#[inline]
fn fingerprint(h: u64) -> u64 {
    // The finaliser of SplitMix64: a bijection, so distinct hashes stay distinct.
    let mut z = h;
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    (z ^ (z >> 31)) & ((1 << FINGERPRINT_BITS) - 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A shard's data and its lock fill four cache lines at most (the filter is one
    /// pointer): 16 databases of 1024 shards each are allocated at start.
    #[test]
    fn a_shard_stays_within_its_cache_lines() {
        assert_eq!(std::mem::size_of::<ColdFilter>(), 8);
        assert!(std::mem::size_of::<crate::keyspace::Shard>() <= 256);
    }

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
        let false_maybes = (0..50_000)
            .filter(|i| i % 2 == 0 && f.may_contain(h(*i)))
            .count();
        // 25,000 removed keys against 25,000 kept ones, each pair alike with odds of
        // 1 in 2^26: about 9 expected, and 28 or more has odds of about one in a million.
        let expected = 25_000.0 * 25_000.0 / (1u64 << FINGERPRINT_BITS) as f64;
        assert!((false_maybes as f64) < 3.0 * expected, "{false_maybes}");
        assert!(f.bytes() > 0 && f.bytes() < 25_000 * 8);
    }

    #[test]
    fn a_shared_fingerprint_survives_the_removal_of_one_of_its_keys() {
        // Two keys alike in their fingerprint insert the same value twice.
        let mut f = ColdFilter::default();
        f.insert(7);
        f.insert(7);
        f.remove(7);
        assert!(f.may_contain(7));
        f.remove(7);
        assert!(!f.may_contain(7));
    }
}
