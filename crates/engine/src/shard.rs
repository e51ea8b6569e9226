//! One shard: a hash table of entries behind its own lock, plus counters kept under that
//! lock (so hot paths touch no shared atomics).

use crate::entry::Slot;
use hashbrown::HashTable;
use std::hash::BuildHasher;
use std::sync::OnceLock;

/// The keyspace's hash. Seeded per process, so clients cannot aim collisions at a shard.
pub(crate) fn hash(key: &[u8]) -> u64 {
    static STATE: OnceLock<foldhash::fast::RandomState> = OnceLock::new();
    STATE.get_or_init(Default::default).hash_one(key)
}

/// Key equality for table probes, which compare keys on every lookup: without a call to
/// `memcmp` for the short keys most tables hold.
#[inline]
pub(crate) fn key_eq(a: &[u8], b: &[u8]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    let n = a.len();
    if (8..=16).contains(&n) {
        // The first and the last 8 bytes (overlapping when shorter than 16) cover the key.
        let word = |s: &[u8], at: usize| {
            let mut w = [0u8; 8];
            w.copy_from_slice(&s[at..at + 8]);
            u64::from_ne_bytes(w)
        };
        return word(a, 0) == word(b, 0) && word(a, n - 8) == word(b, n - 8);
    }
    if n < 8 {
        return a.iter().zip(b).all(|(x, y)| x == y);
    }
    a == b
}

#[derive(Default)]
pub(crate) struct ShardData {
    /// The id of the keyspace this shard belongs to (see `Keyspace::sticky`).
    pub owner: usize,
    pub table: HashTable<Slot>,
    /// Entries that carry an expiry; the active cycle skips shards with none.
    pub volatile: usize,
    pub hits: u64,
    pub misses: u64,
    pub expired: u64,
    /// The last snapshot epoch this shard was captured at (see `Db::capture_shard`).
    pub captured: u64,
    /// Entries as they were when the running snapshot started, saved by writes that came
    /// before the shard was captured (see `Db::preserve`).
    pub pre: Option<Box<PreImages>>,
    /// Where the table's slot array ends (see `slots_hint`): set when the table is
    /// allocated, 0 for none. Only ever used as a prefetch address.
    pub slots_end: usize,
}

/// A shard's capture in progress for the snapshot of `epoch`: the table buckets below
/// `cursor` have been given to the snapshot, and `map` holds what writes saved aside:
/// key -> its entry at the snapshot's start (None: it did not exist).
pub struct PreImages {
    pub epoch: u64,
    pub cursor: usize,
    pub map: hashbrown::HashMap<Box<[u8]>, Option<crate::value::Owned>>,
}

impl PreImages {
    /// The shard's capture state for `epoch`, started afresh if it belonged to another.
    pub fn for_epoch(pre: &mut Option<Box<PreImages>>, epoch: u64) -> &mut PreImages {
        if pre.as_ref().is_some_and(|p| p.epoch != epoch) {
            *pre = None;
        }
        pre.get_or_insert_with(|| {
            Box::new(PreImages {
                epoch,
                cursor: 0,
                map: Default::default(),
            })
        })
    }
}

impl ShardData {
    pub fn find(&self, h: u64, key: &[u8]) -> Option<&Slot> {
        self.slots_hint(h);
        self.table.find(h, |s| key_eq(s.key(), key))
    }

    pub fn find_mut(&mut self, h: u64, key: &[u8]) -> Option<&mut Slot> {
        self.slots_hint(h);
        self.table.find_mut(h, |s| key_eq(s.key(), key))
    }

    /// A read's probe: `find_mut`, counting a keyspace hit or miss.
    pub fn read(&mut self, h: u64, key: &[u8]) -> Option<&mut Slot> {
        self.slots_hint(h);
        let found = self.table.find_mut(h, |s| key_eq(s.key(), key));
        match found {
            Some(_) => self.hits += 1,
            None => self.misses += 1,
        }
        found
    }

    /// Inserts or replaces; returns the previous slot. One probe either way.
    pub fn put(&mut self, h: u64, slot: Slot) -> Option<Slot> {
        use hashbrown::hash_table::Entry;
        self.before_insert();
        self.slots_hint(h);
        let volatile = slot.expire_at().is_some();
        let old = match self
            .table
            .entry(h, |s| key_eq(s.key(), slot.key()), |s| hash(s.key()))
        {
            Entry::Occupied(mut e) => Some(std::mem::replace(e.get_mut(), slot)),
            Entry::Vacant(e) => {
                e.insert(slot);
                None
            }
        };
        self.count_volatile(volatile, old.as_ref());
        old
    }

    /// `put` of a string: an existing packed string whose value has the same length and
    /// whose expiry has the same form is overwritten in place (`Slot::overwrite_packed`).
    pub fn put_str(&mut self, h: u64, key: &[u8], value: &[u8], expire_at: Option<u64>, lru: u32) {
        use hashbrown::hash_table::Entry;
        self.before_insert();
        self.slots_hint(h);
        let new = || Slot::packed(key, value, expire_at, lru);
        let old = match self
            .table
            .entry(h, |s| key_eq(s.key(), key), |s| hash(s.key()))
        {
            Entry::Occupied(mut e) => {
                if e.get_mut().overwrite_packed(value, expire_at, lru) {
                    return; // same expiry form: the volatile count stands
                }
                Some(std::mem::replace(e.get_mut(), new()))
            }
            Entry::Vacant(e) => {
                e.insert(new());
                None
            }
        };
        self.count_volatile(expire_at.is_some(), old.as_ref());
    }

    /// Keeps `volatile` right after an entry (with an expiry or not) replaced `old`.
    fn count_volatile(&mut self, added_volatile: bool, old: Option<&Slot>) {
        if added_volatile {
            self.volatile += 1;
        }
        if old.is_some_and(|o| o.expire_at().is_some()) {
            self.volatile -= 1;
        }
    }

    /// Before every insert: a table with no room left is rehashed now (hashbrown reserves
    /// before it probes, even when the key exists, so this does the same), and a rehash
    /// moves entries across a running capture's cursor (`Db::capture_chunk`). So first
    /// every entry the capture has not given yet is saved aside, and its walk ends there.
    /// Rare: once per growth of the table.
    fn before_insert(&mut self) {
        if self.table.len() < self.table.capacity() {
            return;
        }
        if let Some(pre) = self.pre.as_deref_mut() {
            if pre.cursor != 0 && pre.cursor != usize::MAX {
                for i in pre.cursor..self.table.num_buckets() {
                    if let Some(s) = self.table.get_bucket(i) {
                        pre.map
                            .entry(s.key().into())
                            .or_insert_with(|| Some(s.to_owned_value()));
                    }
                }
                pre.cursor = usize::MAX;
            }
        }
        self.grow();
    }

    /// Grows a full table to twice its size, as hashbrown would, but moving the entries
    /// with their blocks prefetched a few ahead: hashbrown's growth reads each entry's key
    /// to hash it, one cache miss after another, and that was a fifth of a 10M-row fill
    /// (docs/benchmarks.md). A table full of tombstones instead is left to hashbrown, which
    /// rehashes it in place on the insert.
    fn grow(&mut self) {
        let buckets = self.table.num_buckets();
        // hashbrown's load factor: 7/8, or one bucket short below 8 buckets.
        let full = if buckets < 8 {
            buckets.saturating_sub(1)
        } else {
            buckets / 8 * 7
        };
        let need = self.table.len() + 1;
        if need <= full / 2 {
            return;
        }
        /// How many entries ahead of the one being moved are being loaded.
        const AHEAD: usize = 8;
        let old = std::mem::replace(
            &mut self.table,
            HashTable::with_capacity(need.max(full + 1)),
        );
        let mut ahead: [Option<Slot>; AHEAD] = Default::default();
        // The new table has room for every entry: its hasher is never called.
        let moved = |s: Slot, table: &mut HashTable<Slot>| {
            table.insert_unique(hash(s.key()), s, |s| hash(s.key()));
        };
        for (i, s) in old.into_iter().enumerate() {
            s.prefetch();
            if let Some(prev) = ahead[i % AHEAD].replace(s) {
                moved(prev, &mut self.table);
            }
        }
        for s in ahead.into_iter().flatten() {
            moved(s, &mut self.table);
        }
        self.slots_end = slots_end(&self.table);
    }

    /// Starts loading the slots where a probe for hash `h` begins, alongside the control
    /// bytes the probe reads first. Without it the slot load waits for the control bytes,
    /// and the entry's block for the slot: three misses in a row per lookup of a large
    /// table; with it, two. This leans on hashbrown's layout (slots stored downwards from
    /// the end of the slot array, a probe starting at bucket `h & mask`); should that
    /// change, the hint only misses (`the_slots_hint_points_at_the_probed_slots` checks it).
    #[inline]
    fn slots_hint(&self, h: u64) {
        if self.slots_end == 0 {
            return;
        }
        let pos = h as usize & (self.table.num_buckets() - 1);
        // The probe's first slot, and the next few (stored below it): most entries sit
        // within a few buckets of where their probe starts. Wrapping: a hint is never
        // checked, and must not panic even if it were stale.
        let size = std::mem::size_of::<Slot>();
        let first = self.slots_end.wrapping_sub((pos + 1).wrapping_mul(size));
        crate::entry::prefetch(std::ptr::without_provenance::<u8>(first));
        crate::entry::prefetch(std::ptr::without_provenance::<u8>(
            first.wrapping_sub(3 * size),
        ));
    }

    pub fn remove(&mut self, h: u64, key: &[u8]) -> Option<Slot> {
        let slot = self
            .table
            .find_entry(h, |s| key_eq(s.key(), key))
            .ok()
            .map(|e| e.remove().0)?;
        if slot.expire_at().is_some() {
            self.volatile -= 1;
        }
        Some(slot)
    }

    /// Changes an existing entry's expiry, keeping the volatile count right.
    pub fn set_expire(&mut self, h: u64, key: &[u8], expire_at: Option<u64>) -> bool {
        let Some(slot) = self.find_mut(h, key) else {
            return false;
        };
        let had = slot.expire_at().is_some();
        slot.set_expire(expire_at);
        match (had, expire_at.is_some()) {
            (false, true) => self.volatile += 1,
            (true, false) => self.volatile -= 1,
            _ => {}
        }
        true
    }

    /// Removes every expired entry, reporting each key to `on_expired`; returns how many.
    pub fn purge_expired(&mut self, now: u64, mut on_expired: impl FnMut(&[u8])) -> usize {
        if self.volatile == 0 {
            return 0;
        }
        let before = self.table.len();
        let mut dropped_volatile = 0;
        self.table.retain(|s| {
            let gone = s.is_expired(now);
            if gone {
                on_expired(s.key());
            }
            dropped_volatile += gone as usize;
            !gone
        });
        self.volatile -= dropped_volatile;
        self.expired += dropped_volatile as u64;
        before - self.table.len()
    }

    pub fn clear(&mut self) -> HashTable<Slot> {
        self.volatile = 0;
        self.slots_end = 0;
        std::mem::take(&mut self.table)
    }
}

/// The address just past slot 0 of `table` (hashbrown stores bucket `i` at
/// `end - (i + 1) * size`), found from any occupied bucket; 0 for a table with none.
fn slots_end(table: &HashTable<Slot>) -> usize {
    let Some(i) = table.iter_buckets().next() else {
        return 0;
    };
    table.get_bucket(i).map_or(0, |s| {
        std::ptr::from_ref(s).addr() + (i + 1) * std::mem::size_of::<Slot>()
    })
}

#[cfg(test)]
mod tests {
    use super::{hash, key_eq, ShardData};
    use crate::entry::Slot;

    fn key(i: u32) -> Vec<u8> {
        format!("key:{i}").into_bytes()
    }

    /// The prefetch hint's view of hashbrown's layout holds: every entry lies at
    /// `slots_end - (index + 1) * size`, and nearly all sit within a probe group of the
    /// bucket their hash starts at (so the hint loads the right lines).
    #[test]
    fn the_slots_hint_points_at_the_probed_slots() {
        let mut d = ShardData::default();
        const N: u32 = 20_000;
        for i in 0..N {
            d.put_str(hash(&key(i)), &key(i), b"v", None, 0);
        }
        assert_ne!(d.slots_end, 0);
        let n = d.table.num_buckets();
        let mut near = 0;
        for i in 0..N {
            let h = hash(&key(i));
            let at = d
                .table
                .find_bucket_index(h, |s| s.key() == key(i))
                .expect("entry");
            let s = d.table.get_bucket(at).expect("occupied");
            let addr = std::ptr::from_ref(s).addr();
            assert_eq!(addr, d.slots_end - (at + 1) * std::mem::size_of::<Slot>());
            let distance = (at + n - (h as usize & (n - 1))) % n;
            near += (distance < 16) as u32;
        }
        assert!(
            near >= N / 10 * 9,
            "{near} of {N} within a group of their probe start"
        );
        d.clear();
        assert_eq!(d.slots_end, 0);
    }

    /// Every entry stays findable, with its value, across the table's growths (our
    /// `grow`) and across inserts into a table full of tombstones (hashbrown's
    /// in-place rehash), and the table grows like hashbrown's own.
    #[test]
    fn growing_keeps_every_entry() {
        let mut d = ShardData::default();
        let check = |d: &ShardData, live: std::ops::Range<u32>| {
            assert_eq!(d.table.len(), live.len());
            for i in live {
                let s = d.find(hash(&key(i)), &key(i)).expect("entry");
                assert_eq!(s.view().as_str(), Some(i.to_string().as_bytes()));
            }
        };
        const N: u32 = 7000;
        for i in 0..N {
            d.put_str(hash(&key(i)), &key(i), i.to_string().as_bytes(), None, 0);
            d.put(
                hash(&key(i)),
                Slot::packed(&key(i), i.to_string().as_bytes(), None, 0),
            );
        }
        check(&d, 0..N);
        let mut reference = hashbrown::HashTable::new();
        for i in 0..N {
            reference.insert_unique(hash(&key(i)), i, |&i| hash(&key(i)));
        }
        assert_eq!(d.table.num_buckets(), reference.num_buckets());
        // Down to 3000 keys in a table filled close to its limit, then keys come and go:
        // their tombstones fill the table again and again, and hashbrown clears them in
        // place, at the same size.
        const LIVE: u32 = 3000;
        for i in 0..N - LIVE {
            assert!(d.remove(hash(&key(i)), &key(i)).is_some());
        }
        let buckets = d.table.num_buckets();
        for i in N..200_000u32 {
            d.put_str(hash(&key(i)), &key(i), i.to_string().as_bytes(), None, 0);
            assert!(d.remove(hash(&key(i - LIVE)), &key(i - LIVE)).is_some());
        }
        check(&d, 200_000 - LIVE..200_000);
        assert_eq!(d.table.num_buckets(), buckets);
    }

    /// `key_eq` agrees with slice equality for every length around its word paths and a
    /// difference at every position.
    #[test]
    fn key_eq_is_slice_equality() {
        for n in 0..40usize {
            let a: Vec<u8> = (0..n as u8).map(|i| i.wrapping_mul(37)).collect();
            assert!(key_eq(&a, &a.clone()), "len {n}");
            for at in 0..n {
                let mut b = a.clone();
                b[at] ^= 1;
                assert!(!key_eq(&a, &b), "len {n}, byte {at}");
            }
            let mut longer = a.clone();
            longer.push(0);
            assert!(!key_eq(&a, &longer) && !key_eq(&longer, &a), "len {n}");
        }
    }
}
