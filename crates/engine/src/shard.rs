//! One shard: a hash table of entries behind its own lock, plus counters kept under that
//! lock (so hot paths touch no shared atomics).

use crate::access::Stamp;
use crate::entry::{EntryRef, Slot};
use crate::evict::Occupancy;
use crate::inline::Inline;
use crate::ledger::Ledger;
use crate::value::Value;
use hashbrown::HashTable;
use std::hash::{BuildHasher, Hasher};
use std::sync::OnceLock;

/// The keyspace's hash. Seeded per process, so clients cannot aim collisions at a shard.
/// The key's bytes alone, without the length prefix `Hash for [u8]` adds (which costs a
/// lookup one more multiply): a hash covers one key, never a sequence of them, and
/// foldhash mixes the length into its seed anyway.
#[inline]
pub(crate) fn hash(key: &[u8]) -> u64 {
    let mut h = hash_state().1.build_hasher();
    h.write(key);
    h.finish()
}

/// The seed in use, and the state it makes: random unless [`use_hash_seed`] came first.
static STATE: OnceLock<(u64, foldhash::fast::SeedableRandomState)> = OnceLock::new();

#[inline]
fn hash_state() -> &'static (u64, foldhash::fast::SeedableRandomState) {
    STATE.get_or_init(|| {
        let random = foldhash::fast::RandomState::default().hash_one(0u64);
        state_for(random)
    })
}

fn state_for(seed: u64) -> (u64, foldhash::fast::SeedableRandomState) {
    use foldhash::{fast::SeedableRandomState, SharedSeed};
    // Once per process.
    let shared: &'static SharedSeed = Box::leak(Box::new(SharedSeed::from_u64(
        seed.rotate_left(32) ^ 0x9e37_79b9_7f4a_7c15,
    )));
    (seed, SeedableRandomState::with_seed(seed, shared))
}

/// The seed of this process's keyspace hash. A key's shard depends on it: a store that
/// files keys by shard (the server's tier) is only valid under the same seed.
pub fn hash_seed() -> u64 {
    hash_state().0
}

/// Makes `seed` this process's hash seed, if nothing was hashed yet; whether it is the
/// seed in use.
pub fn use_hash_seed(seed: u64) -> bool {
    STATE.get_or_init(|| state_for(seed)).0 == seed
}

/// Key equality for table probes, which compare keys on every lookup: without a call to
/// `memcmp` for the short keys most tables hold.
#[inline]
pub fn key_eq(a: &[u8], b: &[u8]) -> bool {
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
    /// Entries in a heap block: strings too long to be inline or with an expiry, and
    /// every other type. A key is in `table` or in `small`, never in both.
    pub table: HashTable<Slot>,
    /// Inline strings (`crate::inline`): short, with no expiry.
    pub small: HashTable<Inline>,
    /// Entries that carry an expiry; the active cycle skips shards with none.
    pub volatile: usize,
    pub hits: u64,
    pub misses: u64,
    pub expired: u64,
    /// The last snapshot epoch this shard was captured at (see `Db::capture_shard`).
    pub captured: u64,
    /// The thread whose sticky scope locked this shard last (0: none yet; see
    /// `Sticky::one_shard`).
    pub last_scope: u32,
    /// Entries as they were when the running snapshot started, saved by writes that came
    /// before the shard was captured (see `Db::preserve`).
    pub pre: Option<Box<PreImages>>,
    /// Where each table's slot array ends (see `slots_hint`): set when the table is
    /// allocated, 0 for none. Only ever used as a prefetch address.
    pub slots_end: usize,
    pub small_end: usize,
    /// This shard's place in its database, and the database's map of the shards that hold
    /// keys, which eviction samples (`crate::evict`). `marked` / `marked_volatile`: this
    /// shard's bit is set in the keys / volatile map (set on the insert that makes the
    /// shard non-empty, cleared only by the sampler, under this lock, once it is empty).
    pub index: u32,
    pub occupancy: Option<std::sync::Arc<Occupancy>>,
    pub marked: bool,
    pub marked_volatile: bool,
    /// The embedded table's memory accounting (`crate::ledger`), None when off: the
    /// shard's bytes, and the keys whose collections are being edited in place.
    pub ledger: Option<Box<Ledger>>,
    /// Keys of this shard in the cold store only (`crate::cold`), and moves there and back.
    pub cold: usize,
    /// Keys in RAM whose store copy is still theirs (brought back by a read, unchanged
    /// since): evicted again, they need no write.
    pub clean: hashbrown::HashSet<Box<[u8]>>,
    /// Which keys have an entry in the store (cold keys and clean keys' copies).
    pub cold_filter: crate::cold_filter::ColdFilter,
    /// Which cold keys have an expiry, and how many (the background expiry pass visits
    /// only shards with some): a write may replace any other cold key unread.
    pub cold_ttl: crate::cold_filter::ColdFilter,
    pub spills: u64,
    pub faults: u64,
    /// Entries a load expects this shard to end with (`Db::expect`), 0 when none: a
    /// table that must grow grows toward its share of them, not by doublings that each
    /// re-read every entry's key. 32 bits: a word would add a cache line to every shard.
    pub expected: u32,
}

/// An entry for editing, found by `ShardData::find_mut`.
pub(crate) enum FoundMut<'a> {
    Block(&'a mut Slot),
    Inline(&'a mut Inline),
}

/// An entry taken out of a shard.
pub(crate) enum Removed {
    Block(Slot),
    Inline(Inline),
}

impl Removed {
    pub fn view(&self) -> EntryRef<'_> {
        match self {
            Removed::Block(s) => s.view(),
            Removed::Inline(s) => EntryRef::inline(s),
        }
    }

    pub fn into_value(self) -> Value {
        match self {
            Removed::Block(s) => s.into_value(),
            Removed::Inline(s) => Value::Str(s.value().to_vec()),
        }
    }
}

/// A shard's capture in progress for the snapshot of `epoch`: the walk positions below
/// `cursor` (`ShardData::entry_at`) have been given to the snapshot, and `map` holds what writes saved aside:
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
    /// Entries in both tables.
    pub fn len(&self) -> usize {
        self.table.len() + self.small.len()
    }

    pub fn find(&self, h: u64, key: &[u8]) -> Option<EntryRef<'_>> {
        self.slots_hint(h);
        if let Some(s) = self.small.find(h, |s| key_eq(s.key(), key)) {
            return Some(EntryRef::inline(s));
        }
        self.table.find(h, |s| key_eq(s.key(), key)).map(Slot::view)
    }

    pub fn find_mut(&mut self, h: u64, key: &[u8]) -> Option<FoundMut<'_>> {
        self.slots_hint(h);
        if let Some(s) = self.small.find_mut(h, |s| key_eq(s.key(), key)) {
            return Some(FoundMut::Inline(s));
        }
        let s = self.table.find_mut(h, |s| key_eq(s.key(), key))?;
        Some(FoundMut::Block(s))
    }

    /// A read's probe: counts a keyspace hit or miss, and stamps the entry's access bits
    /// when `stamp` is given. (`find_mut` with the fields split, so that the counters can be
    /// written while the entry found stays borrowed.)
    #[inline]
    pub fn read(&mut self, h: u64, key: &[u8], stamp: Option<Stamp>) -> Option<EntryRef<'_>> {
        self.slots_hint(h);
        let ShardData {
            small,
            table,
            hits,
            misses,
            ..
        } = self;
        if let Some(s) = small.find_mut(h, |s| key_eq(s.key(), key)) {
            *hits += 1;
            if let Some(stamp) = stamp {
                s.touch(stamp.touched(s.lru()));
            }
            return Some(EntryRef::inline(s));
        }
        let Some(s) = table.find_mut(h, |s| key_eq(s.key(), key)) else {
            *misses += 1;
            return None;
        };
        *hits += 1;
        if let Some(stamp) = stamp {
            s.touch(stamp.touched(s.lru()));
        }
        Some(s.view())
    }

    /// Sets an entry's access bits as they are given (a restored key's LRU clock or LFU
    /// pair).
    pub fn set_access(&mut self, h: u64, key: &[u8], bits: u32) {
        match self.find_mut(h, key) {
            Some(FoundMut::Inline(s)) => s.touch(bits),
            Some(FoundMut::Block(s)) => s.touch(bits),
            None => {}
        }
    }

    /// Stamps an existing entry's access bits.
    pub fn touch(&mut self, h: u64, key: &[u8], stamp: Stamp) {
        match self.find_mut(h, key) {
            Some(FoundMut::Inline(s)) => s.touch(stamp.touched(s.lru())),
            Some(FoundMut::Block(s)) => s.touch(stamp.touched(s.lru())),
            None => {}
        }
    }

    /// The entry at `key` in its block form, for edits that need one (APPEND, an expiry):
    /// an inline string moves to the main table first. The move keeps a running capture
    /// right by itself: PFCOUNT, a read-only command that writes its cache, moves a key
    /// without the write path's `Db::preserve`.
    pub fn block_mut(&mut self, h: u64, key: &[u8]) -> Option<&mut Slot> {
        if self.small.find(h, |s| key_eq(s.key(), key)).is_some() {
            self.preserve(h, key);
            self.accounted(h, key, |d| {
                if let Some(s) = d.remove_inline(h, key) {
                    d.put_block(h, Slot::packed(s.key(), s.value(), None, s.lru()));
                }
            });
        }
        self.slots_hint(h);
        self.table.find_mut(h, |s| key_eq(s.key(), key))
    }

    /// Inserts or replaces a value of any type. A string goes inline when it can. The
    /// entry's access bits are `stamp`'s: an access of the entry it replaces, if any.
    pub fn put(&mut self, h: u64, key: &[u8], value: Value, expire_at: Option<u64>, stamp: Stamp) {
        if let Value::Str(s) = value {
            return self.put_str(h, key, &s, expire_at, stamp);
        }
        self.accounted(h, key, |d| {
            let lru = d
                .find(h, key)
                .map_or(stamp.fresh(), |e| stamp.touched(e.lru()));
            d.remove_inline(h, key);
            d.put_block(h, Slot::new(key, value, expire_at, lru));
        })
    }

    /// Inserts or replaces a value kept in the general form, a string included (one moved
    /// with its "raw" encoding).
    pub fn put_general(
        &mut self,
        h: u64,
        key: &[u8],
        value: Value,
        expire_at: Option<u64>,
        stamp: Stamp,
    ) {
        self.accounted(h, key, |d| {
            let lru = d
                .find(h, key)
                .map_or(stamp.fresh(), |e| stamp.touched(e.lru()));
            d.remove_inline(h, key);
            d.put_block(h, Slot::general(key, expire_at, lru, value));
        })
    }

    /// Inserts or replaces a block entry. The caller removed any inline entry of that key.
    fn put_block(&mut self, h: u64, slot: Slot) {
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
        self.note();
    }

    /// Stores a string: inline when it fits and has no expiry, else packed. An existing
    /// compact string of the same shape is overwritten in place (`Inline::overwrite`,
    /// `Slot::overwrite_packed`), so an update allocates and frees nothing. The entry's
    /// access bits are `stamp`'s: an access of the entry it replaces, if any.
    #[inline]
    pub fn put_str(
        &mut self,
        h: u64,
        key: &[u8],
        value: &[u8],
        expire_at: Option<u64>,
        stamp: Stamp,
    ) {
        if self.ledger.is_some() {
            return self.put_str_accounted(h, key, value, expire_at, stamp);
        }
        self.store_str(h, key, value, expire_at, stamp)
    }

    /// `put_str` in a shard whose memory is accounted (`crate::ledger`).
    #[cold]
    #[inline(never)]
    fn put_str_accounted(
        &mut self,
        h: u64,
        key: &[u8],
        value: &[u8],
        expire_at: Option<u64>,
        stamp: Stamp,
    ) {
        self.accounted(h, key, |d| d.store_str(h, key, value, expire_at, stamp))
    }

    #[inline]
    fn store_str(
        &mut self,
        h: u64,
        key: &[u8],
        value: &[u8],
        expire_at: Option<u64>,
        stamp: Stamp,
    ) {
        use hashbrown::hash_table::Entry;
        if expire_at.is_none() && Inline::fits(key, value) {
            self.slots_hint(h);
            if let Some(s) = self.small.find_mut(h, |s| key_eq(s.key(), key)) {
                let fitted = s.overwrite(value, stamp.touched(s.lru()));
                debug_assert!(fitted, "same key, and the value fits");
                return;
            }
            let mut lru = stamp.fresh();
            if let Ok(e) = self.table.find_entry(h, |s| key_eq(s.key(), key)) {
                let (old, _) = e.remove();
                lru = stamp.touched(old.lru());
                self.count_volatile(false, Some(&old));
            }
            self.before_insert_small();
            self.small
                .insert_unique(h, Inline::new(key, value, lru), |s| hash(s.key()));
            self.note();
            return;
        }
        let lru = match self.remove_inline(h, key) {
            Some(old) => stamp.touched(old.lru()),
            None => stamp.fresh(),
        };
        self.before_insert();
        self.slots_hint(h);
        let old = match self
            .table
            .entry(h, |s| key_eq(s.key(), key), |s| hash(s.key()))
        {
            Entry::Occupied(mut e) => {
                let lru = stamp.touched(e.get().lru());
                if e.get_mut().overwrite_packed(value, expire_at, lru) {
                    return; // same expiry form: the volatile count stands
                }
                Some(std::mem::replace(
                    e.get_mut(),
                    Slot::packed(key, value, expire_at, lru),
                ))
            }
            Entry::Vacant(e) => {
                e.insert(Slot::packed(key, value, expire_at, lru));
                None
            }
        };
        self.count_volatile(expire_at.is_some(), old.as_ref());
        self.note();
    }

    fn remove_inline(&mut self, h: u64, key: &[u8]) -> Option<Inline> {
        let e = self.small.find_entry(h, |s| key_eq(s.key(), key)).ok()?;
        Some(e.remove().0)
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

    /// The number of positions a snapshot's walk of this shard goes through: the inline
    /// table's buckets, then the main table's (see `entry_at`).
    pub fn positions(&self) -> usize {
        self.small.num_buckets() + self.table.num_buckets()
    }

    /// The entry at walk position `p`, if that bucket is occupied.
    pub fn entry_at(&self, p: usize) -> Option<EntryRef<'_>> {
        let n = self.small.num_buckets();
        if p < n {
            self.small.get_bucket(p).map(EntryRef::inline)
        } else {
            self.table.get_bucket(p - n).map(Slot::view)
        }
    }

    /// Saves `key`'s entry aside for the capture in progress, if there is one and the key
    /// is not saved yet (see `Db::preserve`).
    pub fn preserve(&mut self, h: u64, key: &[u8]) {
        let Some(mut pre) = self.pre.take() else {
            return;
        };
        if !pre.map.contains_key(key) {
            // A key a chunk gave already is marked like a new key (None: nothing to add at
            // the end, skip it in the walk): deleted and re-inserted, it may land in a
            // bucket the walk has yet to reach. (After a rehash ended the walk, every key
            // not in `map` was given by a chunk.)
            let old = match self.position(h, key) {
                Some(b) if b < pre.cursor => None,
                Some(b) => self.entry_at(b).map(|e| e.to_owned_value()),
                None => None,
            };
            pre.map.insert(key.into(), old);
        }
        self.pre = Some(pre);
    }

    /// The walk position of `key`'s entry, if it has one.
    pub fn position(&self, h: u64, key: &[u8]) -> Option<usize> {
        if let Some(p) = self.small.find_bucket_index(h, |s| key_eq(s.key(), key)) {
            return Some(p);
        }
        let p = self.table.find_bucket_index(h, |s| key_eq(s.key(), key))?;
        Some(self.small.num_buckets() + p)
    }

    /// Before every insert into the main table: a table with no room left is rehashed now
    /// (hashbrown reserves before it probes, even when the key exists, so this does the
    /// same). Rare: once per growth of the table.
    fn before_insert(&mut self) {
        if self.table.len() < self.table.capacity() {
            return;
        }
        self.end_capture_walk();
        self.grow();
    }

    /// `before_insert` for the inline table, which hashbrown grows itself: its entries
    /// hold their keys, so rehashing them reads nothing else.
    fn before_insert_small(&mut self) {
        if self.small.len() < self.small.capacity() {
            return;
        }
        self.end_capture_walk();
        let more = self.expected_in(self.small.len(), self.table.len());
        self.small
            .reserve(more.saturating_sub(self.small.len()).max(1), |s| {
                hash(s.key())
            });
        self.small_end = slots_end(&self.small);
    }

    /// Of the entries a load expects (`expected`), those one table will hold: its share
    /// so far of the `mine + other` entries the shard has, once there are enough to judge
    /// by (0 otherwise, or with no load). At most `JUMP` times what it holds: the count
    /// comes from a file, and a hostile one must not reserve memory its keys do not fill
    /// (its slots then cost at most 64 x 9 bytes per key it holds; a shard of 10,000 keys
    /// grows twice, moving under a fifth of what doubling would).
    fn expected_in(&self, mine: usize, other: usize) -> usize {
        const JUDGE_AFTER: usize = 32;
        const JUMP: usize = 64;
        let (have, expected) = (mine + other, self.expected as usize);
        if expected <= have || have < JUDGE_AFTER {
            return 0;
        }
        let share = (expected as u128 * mine as u128 / have as u128) as usize;
        share.min(mine.saturating_mul(JUMP))
    }

    /// A rehash moves entries across a running capture's cursor (`Db::capture_chunk`), and
    /// a growing inline table moves every position after it. So before either, every
    /// entry the capture has not given yet is saved aside, and its walk ends there.
    fn end_capture_walk(&mut self) {
        let Some(mut pre) = self.pre.take() else {
            return;
        };
        if pre.cursor != 0 && pre.cursor != usize::MAX {
            for p in pre.cursor..self.positions() {
                if let Some(e) = self.entry_at(p) {
                    pre.map
                        .entry(e.key().into())
                        .or_insert_with(|| Some(e.to_owned_value()));
                }
            }
            pre.cursor = usize::MAX;
        }
        self.pre = Some(pre);
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
        let size = (need.max(full + 1)).max(self.expected_in(self.table.len(), self.small.len()));
        let old = std::mem::replace(&mut self.table, HashTable::with_capacity(size));
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

    /// Starts loading the slots where a probe for hash `h` begins in each table, alongside
    /// the control bytes the probe reads first. Without it the slot load waits for the
    /// control bytes (and a block entry's block for the slot): one more miss in a row per
    /// lookup of a large table. This leans on hashbrown's layout (slots stored downwards
    /// from the end of the slot array, a probe starting at bucket `h & mask`); should that
    /// change, the hint only misses (`the_slots_hint_points_at_the_probed_slots` checks it).
    #[inline]
    fn slots_hint(&self, h: u64) {
        hint::<Inline>(self.small_end, self.small.num_buckets(), h);
        hint::<Slot>(self.slots_end, self.table.num_buckets(), h);
    }

    /// `slots_hint` well before the lookup, so the control bytes too (`Db::prefetch`).
    pub fn prefetch_ahead(&self, h: u64) {
        hint_ahead::<Inline>(self.small_end, self.small.num_buckets(), h);
        hint_ahead::<Slot>(self.slots_end, self.table.num_buckets(), h);
    }

    pub fn remove(&mut self, h: u64, key: &[u8]) -> Option<Removed> {
        if self.ledger.is_some() {
            return self.accounted(h, key, |d| d.take(h, key));
        }
        self.take(h, key)
    }

    fn take(&mut self, h: u64, key: &[u8]) -> Option<Removed> {
        if let Some(s) = self.remove_inline(h, key) {
            return Some(Removed::Inline(s));
        }
        let slot = self
            .table
            .find_entry(h, |s| key_eq(s.key(), key))
            .ok()
            .map(|e| e.remove().0)?;
        if slot.expire_at().is_some() {
            self.volatile -= 1;
        }
        Some(Removed::Block(slot))
    }

    /// Changes an existing entry's expiry, keeping the volatile count right.
    pub fn set_expire(&mut self, h: u64, key: &[u8], expire_at: Option<u64>) -> bool {
        if expire_at.is_none() && self.small.find(h, |s| key_eq(s.key(), key)).is_some() {
            return true; // inline strings have none
        }
        if self.block_mut(h, key).is_none() {
            return false;
        }
        self.accounted(h, key, |d| {
            let Some(slot) = d.table.find_mut(h, |s| key_eq(s.key(), key)) else {
                return;
            };
            let had = slot.expire_at().is_some();
            slot.set_expire(expire_at);
            match (had, expire_at.is_some()) {
                (false, true) => d.volatile += 1,
                (true, false) => d.volatile -= 1,
                _ => {}
            }
        });
        self.note();
        true
    }

    /// Removes every expired entry whose key passes `which`, reporting each key to
    /// `on_expired`; returns how many. (Inline strings never expire: one with an expiry is
    /// a block.)
    pub fn purge_expired_where(
        &mut self,
        now: u64,
        which: impl Fn(&[u8]) -> bool,
        mut on_expired: impl FnMut(&[u8]),
    ) -> usize {
        if self.volatile == 0 {
            return 0;
        }
        let before = self.table.len();
        let mut dropped_volatile = 0;
        let mut freed = 0;
        let samples = self.ledger.as_ref().map(|l| l.samples());
        self.table.retain(|s| {
            let gone = s.view().is_expired(now) && which(s.key());
            if gone {
                on_expired(s.key());
                if let Some(n) = samples {
                    freed += crate::memory::entry_bytes(&s.view(), n);
                }
            }
            dropped_volatile += gone as usize;
            !gone
        });
        self.charge(-(freed as isize));
        self.volatile -= dropped_volatile;
        self.expired += dropped_volatile as u64;
        before - self.table.len()
    }

    /// Every entry: the inline ones, then the block ones.
    pub fn iter(&self) -> impl Iterator<Item = EntryRef<'_>> {
        (self.small.iter().map(EntryRef::inline)).chain(self.table.iter().map(Slot::view))
    }

    /// Empties the shard, returning the main table for the caller to drop (inline entries
    /// own no memory, so theirs is freed here).
    pub fn clear(&mut self) -> HashTable<Slot> {
        self.forget_bytes();
        self.volatile = 0;
        self.cold = 0;
        self.clean = Default::default();
        self.cold_filter = Default::default();
        self.cold_ttl = Default::default();
        self.slots_end = 0;
        self.small_end = 0;
        self.small = HashTable::new();
        std::mem::take(&mut self.table)
    }

    /// SWAPDB: exchanges the two shards' entries (and what describes them).
    pub fn swap_entries(&mut self, other: &mut ShardData) {
        std::mem::swap(&mut self.table, &mut other.table);
        std::mem::swap(&mut self.small, &mut other.small);
        std::mem::swap(&mut self.volatile, &mut other.volatile);
        std::mem::swap(&mut self.cold, &mut other.cold);
        std::mem::swap(&mut self.clean, &mut other.clean);
        std::mem::swap(&mut self.cold_filter, &mut other.cold_filter);
        std::mem::swap(&mut self.cold_ttl, &mut other.cold_ttl);
        std::mem::swap(&mut self.slots_end, &mut other.slots_end);
        std::mem::swap(&mut self.small_end, &mut other.small_end);
        self.swap_bytes(other);
        self.note();
        other.note();
    }

    /// After an insert: a shard that holds keys (with a TTL) has its bit set in its
    /// database's map (see `marked`).
    #[inline]
    fn note(&mut self) {
        if !self.marked && self.len() != 0 {
            self.marked = true;
            if let Some(o) = &self.occupancy {
                o.mark(self.index as usize, false);
            }
        }
        if !self.marked_volatile && self.volatile != 0 {
            self.marked_volatile = true;
            if let Some(o) = &self.occupancy {
                o.mark(self.index as usize, true);
            }
        }
    }
}

/// Prefetches the slots of a table of `buckets` buckets ending at `end` where a probe for
/// `h` starts, and the next few (stored below it): most entries sit within a few buckets
/// of where their probe starts. Wrapping: a hint is never checked, and must not panic
/// even if it were stale.
#[inline]
pub(crate) fn hint<T>(end: usize, buckets: usize, h: u64) {
    if end == 0 || buckets == 0 {
        return;
    }
    let pos = h as usize & (buckets - 1);
    let size = std::mem::size_of::<T>();
    let first = end.wrapping_sub((pos + 1).wrapping_mul(size));
    crate::entry::prefetch(std::ptr::without_provenance::<u8>(first));
    crate::entry::prefetch(std::ptr::without_provenance::<u8>(
        first.wrapping_sub(3 * size),
    ));
}

/// `hint`, and the control bytes the probe reads first: for a lookup some work away.
#[inline]
pub(crate) fn hint_ahead<T>(end: usize, buckets: usize, h: u64) {
    hint::<T>(end, buckets, h);
    if end != 0 && buckets != 0 {
        // hashbrown's control bytes start where slot 0 ends, one byte a bucket.
        let ctrl = end.wrapping_add(h as usize & (buckets - 1));
        crate::entry::prefetch(std::ptr::without_provenance::<u8>(ctrl));
    }
}

/// The address just past slot 0 of `table` (hashbrown stores bucket `i` at
/// `end - (i + 1) * size`), found from any occupied bucket; 0 for a table with none.
pub(crate) fn slots_end<T>(table: &HashTable<T>) -> usize {
    let Some(i) = table.iter_buckets().next() else {
        return 0;
    };
    table.get_bucket(i).map_or(0, |s| {
        std::ptr::from_ref(s).addr() + (i + 1) * std::mem::size_of::<T>()
    })
}

#[cfg(test)]
#[path = "shard_tests.rs"]
mod tests;
