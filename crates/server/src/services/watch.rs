//! WATCH: which clients watch which keys, and the flag that makes a watcher's EXEC fail once
//! one of its keys is modified. Writers report modified keys through `Ctx::notify` (every
//! command that changes a key emits a keyspace event there), expiry, FLUSHDB/FLUSHALL and
//! SWAPDB; each costs one relaxed load while nobody watches anything.

use bytes::Bytes;
use parking_lot::Mutex;
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;

/// A client's "a watched key changed" flag.
pub type Dirty = Arc<AtomicBool>;

#[derive(Default)]
pub struct Watches {
    /// (db, key) → the flags of the clients watching it.
    keys: Mutex<HashMap<(usize, Bytes), Vec<Dirty>>>,
    /// Number of (client, key) watches; 0 lets writers skip the map.
    count: AtomicUsize,
}

/// What one client watches.
#[derive(Default)]
pub struct ClientWatch {
    pub dirty: Dirty,
    /// (db, key, whether the key had already expired when watched).
    pub keys: Vec<(usize, Bytes, bool)>,
}

impl Watches {
    #[inline]
    pub fn active(&self) -> bool {
        self.count.load(Ordering::Relaxed) != 0
    }

    pub fn watch(&self, cw: &mut ClientWatch, db: usize, key: Bytes, expired: bool) {
        if cw.keys.iter().any(|(d, k, _)| *d == db && *k == key) {
            return;
        }
        self.keys
            .lock()
            .entry((db, key.clone()))
            .or_default()
            .push(cw.dirty.clone());
        self.count.fetch_add(1, Ordering::Relaxed);
        cw.keys.push((db, key, expired));
    }

    /// UNWATCH, EXEC, DISCARD, RESET and disconnect: forget the client's keys and clear
    /// its flag.
    pub fn unwatch(&self, cw: &mut ClientWatch) {
        if cw.keys.is_empty() {
            cw.dirty.store(false, Ordering::Relaxed);
            return;
        }
        let mut map = self.keys.lock();
        for (db, key, _) in cw.keys.drain(..) {
            let k = (db, key);
            if let Some(v) = map.get_mut(&k) {
                v.retain(|d| !Arc::ptr_eq(d, &cw.dirty));
                if v.is_empty() {
                    map.remove(&k);
                }
            }
            self.count.fetch_sub(1, Ordering::Relaxed);
        }
        cw.dirty.store(false, Ordering::Relaxed);
    }

    /// A key was modified: every client watching it will fail its EXEC.
    #[inline]
    pub fn touch(&self, db: usize, key: &[u8]) {
        if self.active() {
            self.touch_slow(db, key);
        }
    }

    #[cold]
    fn touch_slow(&self, db: usize, key: &[u8]) {
        let map = self.keys.lock();
        if let Some(v) = map.get(&(db, Bytes::copy_from_slice(key))) {
            for d in v {
                d.store(true, Ordering::Relaxed);
            }
        }
    }

    /// Keys currently watched in `db` (FLUSHDB checks which of them exist before flushing).
    pub fn keys_in(&self, db: Option<usize>) -> Vec<(usize, Bytes)> {
        if !self.active() {
            return Vec::new();
        }
        self.keys
            .lock()
            .keys()
            .filter(|(d, _)| db.is_none_or(|x| x == *d))
            .cloned()
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
                for f in v {
                    f.store(true, Ordering::Relaxed);
                }
            }
        }
    }
}
