//! The tracking table: key name → ids of the clients that may cache it.
//!
//! Keys are global, not per database, as in Redis. The table is split into shards behind a
//! lock each, so clients reading on different worker threads rarely meet; a shard is only
//! ever locked on its own (no other lock is taken while one is held).

use bytes::Bytes;
use hashbrown::HashTable;
use parking_lot::Mutex;
use std::hash::{BuildHasher, Hasher};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::OnceLock;
use strata_engine::{key_eq, ProbeHint};

const SHARDS: usize = 64;

type IdSet = hashbrown::HashSet<u64, foldhash::fast::FixedState>;

/// Ids in the entry's window: connection ids are handed out in order, so the clients of a
/// pool, or of a benchmark, sit within a few dozen of each other.
const WINDOW: u64 = 128;

/// The clients of one key: the ids within a 128-id window around the first one, as bits
/// in the entry itself, and any other id in a set beside it. Adding a client of the window
/// touches no memory but the entry's cache line, which the lookup has loaded; a list of
/// ids (the form before) cost a second cache miss and a scan on every read of a key that
/// more than three clients cache.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Ids {
    base: u64,
    bits: [u64; 2],
    more: Option<Box<IdSet>>,
}

impl Ids {
    fn one(id: u64) -> Ids {
        let mut ids = Ids {
            base: Ids::base_for(id),
            bits: [0; 2],
            more: None,
        };
        ids.add(id, 0);
        ids
    }

    pub(crate) fn len(&self) -> usize {
        let window = self.bits[0].count_ones() + self.bits[1].count_ones();
        window as usize + self.more.as_ref().map_or(0, |s| s.len())
    }

    /// The ids, in no particular order.
    pub(crate) fn to_vec(&self) -> Vec<u64> {
        let mut v = Vec::with_capacity(self.len());
        for (w, &word) in self.bits.iter().enumerate() {
            let mut b = word;
            while b != 0 {
                v.push(self.base + 64 * w as u64 + u64::from(b.trailing_zeros()));
                b &= b - 1;
            }
        }
        if let Some(s) = &self.more {
            v.extend(s.iter().copied());
        }
        v
    }

    /// The window that starts a word below `id`'s, so clients on either side fit.
    fn base_for(id: u64) -> u64 {
        (id & !63).saturating_sub(64)
    }

    /// The highest id in word `w` of the window, if any.
    fn word_max(&self, w: usize) -> Option<u64> {
        (self.bits[w] != 0)
            .then(|| self.base + 64 * w as u64 + 63 - u64::from(self.bits[w].leading_zeros()))
    }

    /// The highest id in the window, if any.
    fn window_max(&self) -> Option<u64> {
        self.word_max(1).or_else(|| self.word_max(0))
    }

    /// Adds `id`, where every id below `oldest` belongs to a client that is gone. Returns
    /// whether `id` is new, and how many ids of gone clients were dropped to make room for
    /// it in the window (`move_to`).
    #[inline]
    fn add(&mut self, id: u64, oldest: u64) -> (bool, usize) {
        match self.offset(id) {
            Some(off) => (self.set(off), 0),
            None => self.add_outside(id, oldest),
        }
    }

    /// `id`'s place in the window, if it is in it.
    #[inline]
    fn offset(&self, id: u64) -> Option<u64> {
        id.checked_sub(self.base).filter(|&off| off < WINDOW)
    }

    /// Sets the window's bit `off`; whether it was clear. A bit already set is not written
    /// again: the entry's cache line stays shared between the workers that read the key.
    #[inline]
    fn set(&mut self, off: u64) -> bool {
        let (w, bit) = ((off / 64) as usize, 1u64 << (off % 64));
        let new = self.bits[w] & bit == 0;
        if new {
            self.bits[w] |= bit;
        }
        new
    }

    /// `add` of an id outside the window.
    fn add_outside(&mut self, id: u64, oldest: u64) -> (bool, usize) {
        let dropped = self.move_to(id, oldest);
        let new = match self.offset(id) {
            Some(off) => self.set(off),
            None => self.more.get_or_insert_with(Default::default).insert(id),
        };
        (new, dropped)
    }

    /// Moves the window to `id` where the ids it lets go of all belong to gone clients
    /// (below `oldest`); returns how many it let go of. The whole window moves when all it
    /// holds is gone; it moves up one word when only its lower word is: a new generation of
    /// connections (a pool reconnecting, a benchmark's next run) whose first ids fell into
    /// the upper word of the window the one before filled, and whose later ids lie past it,
    /// would otherwise put those later ids in the set, a second lookup on every read.
    fn move_to(&mut self, id: u64, oldest: u64) -> usize {
        let count = |bits: u64| bits.count_ones() as usize;
        if self.window_max().is_none_or(|m| m < oldest) {
            let dropped = count(self.bits[0]) + count(self.bits[1]);
            self.bits = [0; 2];
            self.base = Ids::base_for(id);
            return dropped;
        }
        let one_up = self.base.checked_add(64) == Some(Ids::base_for(id));
        if one_up && self.word_max(0).is_none_or(|m| m < oldest) {
            let dropped = count(self.bits[0]);
            self.bits = [self.bits[1], 0];
            self.base += 64;
            return dropped;
        }
        0
    }
}

/// Keys up to this long are kept in the entry itself: a lookup then touches one cache
/// line for the entry and its key, not two.
const INLINE: usize = 22;

enum Key {
    Inline { len: u8, bytes: [u8; INLINE] },
    Heap(Box<[u8]>),
}

impl Key {
    fn new(k: &[u8]) -> Key {
        if k.len() <= INLINE {
            let mut bytes = [0; INLINE];
            bytes[..k.len()].copy_from_slice(k);
            Key::Inline {
                len: k.len() as u8,
                bytes,
            }
        } else {
            Key::Heap(k.into())
        }
    }

    fn as_slice(&self) -> &[u8] {
        match self {
            Key::Inline { len, bytes } => &bytes[..usize::from(*len)],
            Key::Heap(b) => b,
        }
    }
}

struct Entry {
    hash: u64,
    key: Key,
    ids: Ids,
}

impl Entry {
    #[inline]
    fn is(&self, h: u64, key: &[u8]) -> bool {
        self.hash == h && key_eq(self.key.as_slice(), key)
    }
}

/// A shard's entries, and its count of (key, client) pairs: kept beside its lock, in the
/// cache line an add owns already, where one count for the table had the two workers
/// trade a line on every tracked read.
#[repr(align(64))]
#[derive(Default)]
struct Shard {
    table: Mutex<HashTable<Entry>>,
    items: AtomicUsize,
    /// Where the table's probes start, for a prefetch that takes no lock.
    hint: ProbeHint<Entry>,
}

/// A key's hash in the table.
pub(crate) fn hash(key: &[u8]) -> u64 {
    static STATE: OnceLock<foldhash::fast::RandomState> = OnceLock::new();
    let mut h = STATE.get_or_init(Default::default).build_hasher();
    h.write(key);
    h.finish()
}

/// What `clear` took out; dropping it frees it.
pub(crate) struct Cleared(#[allow(dead_code)] Vec<HashTable<Entry>>);

pub(crate) struct KeyTable {
    shards: Box<[Shard]>,
    /// Keys in the table (INFO tracking_total_keys, `tracking-table-max-keys`, read
    /// before every command of a tracking client).
    keys: AtomicUsize,
}

impl Default for KeyTable {
    fn default() -> Self {
        KeyTable {
            shards: (0..SHARDS).map(|_| Shard::default()).collect(),
            keys: AtomicUsize::new(0),
        }
    }
}

impl KeyTable {
    fn shard(&self, h: u64) -> &Shard {
        // The table inside uses the low bits and the top 7: pick the shard from the middle.
        &self.shards[(h >> 40) as usize % SHARDS]
    }

    pub(crate) fn keys(&self) -> usize {
        self.keys.load(Ordering::Relaxed)
    }

    /// (key, client) pairs (INFO tracking_total_items).
    pub(crate) fn items(&self) -> usize {
        self.shards
            .iter()
            .map(|s| s.items.load(Ordering::Relaxed))
            .sum()
    }

    /// Starts loading where `add` of the key of hash `h` will look.
    pub(crate) fn prefetch(&self, h: u64) {
        self.shard(h).hint.prefetch_probe(h);
    }

    /// Records that client `id` may cache `key`, of hash `h`; every id below `oldest`
    /// belongs to a client that is gone (see `Ids::add`).
    pub(crate) fn add(&self, h: u64, key: &[u8], id: u64, oldest: u64) {
        let shard = self.shard(h);
        let mut t = shard.table.lock();
        shard.hint.prefetch_slot(h);
        match t.find_mut(h, |e| e.is(h, key)) {
            Some(e) => match e.ids.add(id, oldest) {
                (false, 0) => {}
                (new, dropped) => {
                    shard.items.fetch_add(usize::from(new), Ordering::Relaxed);
                    shard.items.fetch_sub(dropped, Ordering::Relaxed);
                }
            },
            None => {
                t.insert_unique(
                    h,
                    Entry {
                        hash: h,
                        key: Key::new(key),
                        ids: Ids::one(id),
                    },
                    |e| e.hash,
                );
                shard.hint.note(&t);
                self.keys.fetch_add(1, Ordering::Relaxed);
                shard.items.fetch_add(1, Ordering::Relaxed);
            }
        }
    }

    /// Removes `key` and returns the clients that had it.
    pub(crate) fn take(&self, key: &[u8]) -> Option<Ids> {
        let h = hash(key);
        let shard = self.shard(h);
        let mut t = shard.table.lock();
        let e = t.find_entry(h, |e| e.is(h, key)).ok()?.remove().0;
        self.forget(shard, &e.ids);
        Some(e.ids)
    }

    /// An entry of `shard` holding `ids` was removed (under the shard's lock).
    fn forget(&self, shard: &Shard, ids: &Ids) {
        self.keys.fetch_sub(1, Ordering::Relaxed);
        shard.items.fetch_sub(ids.len(), Ordering::Relaxed);
    }

    /// Removes some key, chosen by `pick` (a random number), and returns it with its
    /// clients; None when the table is empty.
    pub(crate) fn take_any(&self, pick: u64) -> Option<(Bytes, Ids)> {
        for i in 0..SHARDS {
            let shard = &self.shards[(pick as usize).wrapping_add(i) % SHARDS];
            let mut t = shard.table.lock();
            if t.is_empty() {
                continue;
            }
            // Entries sit in hash order: one of the first few is as good as a random one.
            let skip = (pick >> 32) as usize % t.len().min(64);
            let (h, key) = t
                .iter()
                .nth(skip)
                .map(|e| (e.hash, Bytes::copy_from_slice(e.key.as_slice())))?;
            let e = t.find_entry(h, |e| e.is(h, &key)).ok()?.remove().0;
            self.forget(shard, &e.ids);
            return Some((key, e.ids));
        }
        None
    }

    /// Empties the table (FLUSHDB, FLUSHALL), returning what it held for the caller to
    /// free where it likes.
    pub(crate) fn clear(&self) -> Cleared {
        let mut old = Vec::new();
        for s in self.shards.iter() {
            let mut t = s.table.lock();
            let n = t.len();
            old.push(std::mem::take(&mut *t));
            s.hint.note(&t);
            s.items.store(0, Ordering::Relaxed);
            drop(t);
            self.keys.fetch_sub(n, Ordering::Relaxed);
        }
        Cleared(old)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn add(t: &KeyTable, key: &[u8], id: u64, oldest: u64) {
        t.add(hash(key), key, id, oldest);
    }

    #[test]
    fn counts_keys_and_items_through_adds_and_removals() {
        let t = KeyTable::default();
        add(&t, b"a", 1, 0);
        add(&t, b"a", 1, 0);
        add(&t, b"a", 2, 0);
        add(&t, b"b", 1, 0);
        assert_eq!((t.keys(), t.items()), (2, 3));
        assert_eq!(t.take(b"a").map(|i| i.to_vec()), Some(vec![1, 2]));
        for id in 0..100 {
            add(&t, b"hot", id, 0);
            add(&t, b"hot", id, 0);
        }
        assert_eq!(t.items(), 101, "b, and each of the hundred once");
        let mut hot = t.take(b"hot").map(|ids| ids.to_vec()).unwrap_or_default();
        hot.sort();
        assert_eq!(hot, (0..100).collect::<Vec<u64>>(), "in the window");
        // Ids far from the first one, on either side, go to the set beside the window.
        let far = [1000, 1001, 1127, 1128, 5, 900, u64::MAX, 1_000_000];
        for id in far {
            add(&t, b"spread", id, 0);
            add(&t, b"spread", id, 0);
        }
        assert_eq!(t.items(), 1 + far.len());
        let mut got = t
            .take(b"spread")
            .map(|ids| ids.to_vec())
            .unwrap_or_default();
        got.sort();
        let mut want = far.to_vec();
        want.sort();
        assert_eq!(got, want);
        assert_eq!(t.take(b"a"), None);
        assert_eq!((t.keys(), t.items()), (1, 1));
        let (k, ids) = t.take_any(12345).expect("one key left");
        assert_eq!((&k[..], ids.to_vec()), (&b"b"[..], vec![1]));
        assert!(t.take_any(7).is_none());
        let long = [b'x'; 40];
        add(&t, &long, 9, 0);
        add(&t, b"short", 9, 0);
        assert_eq!(
            t.take(&long),
            Some(Ids::one(9)),
            "a key kept outside the entry"
        );
        assert_eq!(t.take(b"short"), Some(Ids::one(9)));
        for i in 0..1000u64 {
            add(&t, format!("k{i}").as_bytes(), i % 3, 0);
        }
        assert_eq!((t.keys(), t.items()), (1000, 1000));
        let mut seen = std::collections::HashSet::new();
        for pick in 0..10u64 {
            let (k, _) = t
                .take_any(pick.wrapping_mul(0x9E37_79B9_7F4A_7C15))
                .unwrap();
            assert!(seen.insert(k), "a key is taken once");
        }
        assert_eq!(t.keys(), 990);
        t.clear();
        assert_eq!((t.keys(), t.items()), (0, 0));
    }

    /// An id past the window moves it there once every id it holds is a gone client's;
    /// while one of them is still connected, the new id goes to the set instead.
    #[test]
    fn a_window_of_gone_clients_moves_to_the_new_ones() {
        let t = KeyTable::default();
        for id in 10..20 {
            add(&t, b"k", id, 10);
        }
        add(&t, b"k", 500, 15);
        assert_eq!(t.items(), 11, "client 19 is connected: 500 goes to the set");
        add(&t, b"k", 600, 400);
        assert_eq!(t.items(), 2, "10..20 gone: the window moved to 600");
        let mut ids = t.take(b"k").map(|i| i.to_vec()).unwrap_or_default();
        ids.sort();
        assert_eq!(ids, vec![500, 600]);
    }

    /// A generation of clients that straddles the window's upper edge: the window moves up
    /// a word (its lower word held only gone clients), so the later ids land in it too,
    /// not in the set; a lower word that still holds a connected client keeps it in place.
    #[test]
    fn a_window_moves_up_a_word_past_gone_clients() {
        let t = KeyTable::default();
        for id in 53..103 {
            add(&t, b"k", id, 53);
        }
        // The next generation, 103..153: the window (0..128) holds 103..128.
        for id in 103..153 {
            add(&t, b"k", id, 103);
        }
        let e = |t: &KeyTable| {
            let h = hash(b"k");
            let g = t.shard(h).table.lock();
            let e = g.find(h, |e| e.is(h, b"k")).expect("recorded");
            (e.ids.base, e.ids.more.as_ref().map_or(0, |s| s.len()))
        };
        assert_eq!(e(&t), (64, 0), "moved up a word, nothing in the set");
        assert_eq!(t.items(), 50 + (103 - 64), "53..64 let go; 64..103 kept");
        // Client 60 still connected: the lower word stays, 200 goes to the set.
        let t = KeyTable::default();
        add(&t, b"k", 60, 60);
        add(&t, b"k", 100, 60);
        add(&t, b"k", 130, 60);
        assert_eq!(e(&t), (0, 1));
        assert_eq!(t.items(), 3);
    }

    /// An entry, with a short key inside, stays within one cache line.
    #[test]
    fn entries_fit_a_cache_line() {
        assert!(std::mem::size_of::<Entry>() <= 64);
    }
}
