//! WATCH: which clients watch which keys, and the flag that makes a watcher's EXEC fail once
//! one of its keys is modified. Writers report modified keys through `Ctx::notify` (every
//! command that changes a key emits a keyspace event there), expiry, FLUSHDB/FLUSHALL and
//! SWAPDB; each costs one relaxed load while nobody watches anything.
//!
//! As in Redis 7, a watch remembers whether its key had already expired when it was
//! watched ("stale"): removing such a key (lazily, by the active cycle, by a flush) changes
//! nothing logically, so it does not fail the EXEC; it only turns the watch into a plain
//! one on a missing key.

use bytes::Bytes;
use parking_lot::Mutex;
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;

/// A client's "a watched key changed" flag.
pub type Dirty = Arc<AtomicBool>;

/// One client's watch of one key.
struct Watcher {
    dirty: Dirty,
    /// The key had expired, unremoved, when watched, and has not been removed since.
    stale: bool,
}

#[derive(Default)]
pub struct Watches {
    /// (db, key) → its watchers.
    keys: Mutex<HashMap<(usize, Bytes), Vec<Watcher>>>,
    /// Number of (client, key) watches; 0 lets writers skip the map.
    count: AtomicUsize,
}

/// What one client watches.
#[derive(Default)]
pub struct ClientWatch {
    pub dirty: Dirty,
    /// (db, key).
    pub keys: Vec<(usize, Bytes)>,
}

impl Watches {
    #[inline]
    pub fn active(&self) -> bool {
        self.count.load(Ordering::Relaxed) != 0
    }

    /// Watches `key` of `db`; `stale`: it has expired but is still stored.
    pub fn watch(&self, cw: &mut ClientWatch, db: usize, key: Bytes, stale: bool) {
        if cw.keys.iter().any(|(d, k)| *d == db && *k == key) {
            return;
        }
        self.keys
            .lock()
            .entry((db, key.clone()))
            .or_default()
            .push(Watcher {
                dirty: cw.dirty.clone(),
                stale,
            });
        self.count.fetch_add(1, Ordering::Relaxed);
        cw.keys.push((db, key));
    }

    /// UNWATCH, EXEC, DISCARD, RESET and disconnect: forget the client's keys and clear
    /// its flag.
    pub fn unwatch(&self, cw: &mut ClientWatch) {
        if cw.keys.is_empty() {
            cw.dirty.store(false, Ordering::Relaxed);
            return;
        }
        let mut map = self.keys.lock();
        for k in cw.keys.drain(..) {
            if let Some(v) = map.get_mut(&k) {
                v.retain(|w| !Arc::ptr_eq(&w.dirty, &cw.dirty));
                if v.is_empty() {
                    map.remove(&k);
                }
            }
            self.count.fetch_sub(1, Ordering::Relaxed);
        }
        cw.dirty.store(false, Ordering::Relaxed);
    }

    /// Whether the client's watch of `key` is still stale (EXEC: a key that expires after
    /// its WATCH fails the transaction; one already expired then does not).
    pub fn is_stale(&self, cw: &ClientWatch, db: usize, key: &Bytes) -> bool {
        self.keys
            .lock()
            .get(&(db, key.clone()))
            .and_then(|v| v.iter().find(|w| Arc::ptr_eq(&w.dirty, &cw.dirty)))
            .is_some_and(|w| w.stale)
    }

    /// A key was written: every client watching it will fail its EXEC.
    #[inline]
    pub fn touch(&self, db: usize, key: &[u8]) {
        if self.active() {
            self.touch_slow(db, key, false);
        }
    }

    /// A key was removed because it expired (lazily, by the active cycle, or found so by
    /// a flush): watchers that saw it expired already see no change; the others do.
    #[inline]
    pub fn touch_expired(&self, db: usize, key: &[u8]) {
        if self.active() {
            self.touch_slow(db, key, true);
        }
    }

    #[cold]
    fn touch_slow(&self, db: usize, key: &[u8], removed_expired: bool) {
        let mut map = self.keys.lock();
        if let Some(v) = map.get_mut(&(db, Bytes::copy_from_slice(key))) {
            for w in v {
                if removed_expired && w.stale {
                    w.stale = false;
                } else {
                    w.dirty.store(true, Ordering::Relaxed);
                }
            }
        }
    }

    /// Keys currently watched in `db` (FLUSHDB checks which of them exist before flushing).
    pub fn keys_in(&self, db: usize) -> Vec<Bytes> {
        if !self.active() {
            return Vec::new();
        }
        self.keys
            .lock()
            .keys()
            .filter(|(d, _)| *d == db)
            .map(|(_, k)| k.clone())
            .collect()
    }

    /// Flags the watchers of exactly these keys (after a flush found which existed).
    pub fn touch_keys(&self, keys: &[(usize, Bytes)]) {
        if keys.is_empty() {
            return;
        }
        let map = self.keys.lock();
        for k in keys {
            if let Some(v) = map.get(k) {
                for w in v {
                    w.dirty.store(true, Ordering::Relaxed);
                }
            }
        }
    }
}
