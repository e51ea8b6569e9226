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

const SHARDS: usize = 64;

/// The clients of one key: almost always one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Ids {
    One(u64),
    Many(Vec<u64>),
}

impl Ids {
    pub(crate) fn as_slice(&self) -> &[u64] {
        match self {
            Ids::One(id) => std::slice::from_ref(id),
            Ids::Many(v) => v,
        }
    }

    /// Adds `id`; false if it was there.
    fn add(&mut self, id: u64) -> bool {
        match self {
            Ids::One(x) if *x == id => false,
            Ids::One(x) => {
                *self = Ids::Many(vec![*x, id]);
                true
            }
            Ids::Many(v) if v.contains(&id) => false,
            Ids::Many(v) => {
                v.push(id);
                true
            }
        }
    }
}

struct Entry {
    hash: u64,
    key: Bytes,
    ids: Ids,
}

#[repr(align(64))]
#[derive(Default)]
struct Shard(Mutex<HashTable<Entry>>);

fn hash(key: &[u8]) -> u64 {
    static STATE: OnceLock<foldhash::fast::RandomState> = OnceLock::new();
    let mut h = STATE.get_or_init(Default::default).build_hasher();
    h.write(key);
    h.finish()
}

/// What `clear` took out; dropping it frees it.
pub(crate) struct Cleared(#[allow(dead_code)] Vec<HashTable<Entry>>);

pub(crate) struct KeyTable {
    shards: Box<[Shard]>,
    /// Keys in the table (INFO tracking_total_keys, `tracking-table-max-keys`).
    keys: AtomicUsize,
    /// (key, client) pairs (INFO tracking_total_items).
    items: AtomicUsize,
}

impl Default for KeyTable {
    fn default() -> Self {
        KeyTable {
            shards: (0..SHARDS).map(|_| Shard::default()).collect(),
            keys: AtomicUsize::new(0),
            items: AtomicUsize::new(0),
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

    pub(crate) fn items(&self) -> usize {
        self.items.load(Ordering::Relaxed)
    }

    /// Records that client `id` may cache `key`.
    pub(crate) fn add(&self, key: &[u8], id: u64) {
        let h = hash(key);
        let mut t = self.shard(h).0.lock();
        match t.find_mut(h, |e| e.key == key) {
            Some(e) => {
                if e.ids.add(id) {
                    self.items.fetch_add(1, Ordering::Relaxed);
                }
            }
            None => {
                t.insert_unique(
                    h,
                    Entry {
                        hash: h,
                        key: Bytes::copy_from_slice(key),
                        ids: Ids::One(id),
                    },
                    |e| e.hash,
                );
                self.keys.fetch_add(1, Ordering::Relaxed);
                self.items.fetch_add(1, Ordering::Relaxed);
            }
        }
    }

    /// Removes `key` and returns the clients that had it.
    pub(crate) fn take(&self, key: &[u8]) -> Option<Ids> {
        let h = hash(key);
        let e = {
            let mut t = self.shard(h).0.lock();
            t.find_entry(h, |e| e.key == key).ok()?.remove().0
        };
        self.forget(&e.ids);
        Some(e.ids)
    }

    fn forget(&self, ids: &Ids) {
        self.keys.fetch_sub(1, Ordering::Relaxed);
        self.items
            .fetch_sub(ids.as_slice().len(), Ordering::Relaxed);
    }

    /// Removes some key, chosen by `pick` (a random number), and returns it with its
    /// clients; None when the table is empty.
    pub(crate) fn take_any(&self, pick: u64) -> Option<(Bytes, Ids)> {
        for i in 0..SHARDS {
            let shard = &self.shards[(pick as usize).wrapping_add(i) % SHARDS];
            let mut t = shard.0.lock();
            if t.is_empty() {
                continue;
            }
            // Entries sit in hash order: one of the first few is as good as a random one.
            let skip = (pick >> 32) as usize % t.len().min(64);
            let (h, key) = t.iter().nth(skip).map(|e| (e.hash, e.key.clone()))?;
            let e = t.find_entry(h, |e| e.key == key).ok()?.remove().0;
            drop(t);
            self.forget(&e.ids);
            return Some((e.key, e.ids));
        }
        None
    }

    /// Empties the table (FLUSHDB, FLUSHALL), returning what it held for the caller to
    /// free where it likes.
    pub(crate) fn clear(&self) -> Cleared {
        let mut old = Vec::new();
        for s in self.shards.iter() {
            let mut t = s.0.lock();
            let n = t.len();
            let items: usize = t.iter().map(|e| e.ids.as_slice().len()).sum();
            old.push(std::mem::take(&mut *t));
            drop(t);
            self.keys.fetch_sub(n, Ordering::Relaxed);
            self.items.fetch_sub(items, Ordering::Relaxed);
        }
        Cleared(old)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_keys_and_items_through_adds_and_removals() {
        let t = KeyTable::default();
        t.add(b"a", 1);
        t.add(b"a", 1);
        t.add(b"a", 2);
        t.add(b"b", 1);
        assert_eq!((t.keys(), t.items()), (2, 3));
        assert_eq!(t.take(b"a"), Some(Ids::Many(vec![1, 2])));
        assert_eq!(t.take(b"a"), None);
        assert_eq!((t.keys(), t.items()), (1, 1));
        let (k, ids) = t.take_any(12345).expect("one key left");
        assert_eq!((&k[..], ids), (&b"b"[..], Ids::One(1)));
        assert!(t.take_any(7).is_none());
        for i in 0..1000u64 {
            t.add(format!("k{i}").as_bytes(), i % 3);
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
}
