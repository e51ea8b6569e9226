//! What the engine's tests share: a cold store in memory, and a capture call that collects
//! what it gives.
// Each test crate uses a part of it.
#![allow(dead_code)]

use parking_lot::Mutex;
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use strata_engine::{ColdStore, Keyspace, Owned, Value};

/// Where a cold store files an entry: (db, shard, key).
type Place = (usize, usize, Vec<u8>);

/// A cold store in memory; `walks` counts the shard walks (`each`) it served, `puts` the
/// entries written to it.
#[derive(Default)]
pub struct Store {
    /// Each entry with its access bits.
    pub map: Mutex<BTreeMap<Place, (Owned, u32)>>,
    pub walks: AtomicUsize,
    pub puts: AtomicUsize,
}

impl ColdStore for Store {
    fn put(&self, db: usize, shard: usize, key: &[u8], e: &Owned, a: u32) -> Result<(), String> {
        self.puts.fetch_add(1, Ordering::Relaxed);
        self.map
            .lock()
            .insert((db, shard, key.to_vec()), (e.clone(), a));
        Ok(())
    }
    fn take(&self, db: usize, shard: usize, key: &[u8]) -> Option<(Owned, u32)> {
        self.map.lock().remove(&(db, shard, key.to_vec()))
    }
    fn get(&self, db: usize, shard: usize, key: &[u8]) -> Option<(Owned, u32)> {
        self.map.lock().get(&(db, shard, key.to_vec())).cloned()
    }
    fn remove(&self, db: usize, shard: usize, key: &[u8]) {
        self.take(db, shard, key);
    }
    fn each(&self, db: usize, shard: usize, f: &mut dyn FnMut(&[u8], Owned) -> bool) {
        self.walks.fetch_add(1, Ordering::Relaxed);
        let m = self.map.lock().clone();
        for ((d, s, k), (e, _)) in m {
            if d == db && s == shard && !f(&k, e) {
                return;
            }
        }
    }
    fn clear(&self, db: usize) {
        self.map.lock().retain(|(d, _, _), _| *d != db);
    }
    fn swap(&self, _: usize, _: usize) {}
}

/// A keyspace of one database in four shards, with `store` as its cold tier (a fresh
/// keyspace over an old store is a restart that keeps it).
pub fn keyspace_over(store: &Arc<Store>) -> Keyspace {
    let ks = Keyspace::new(1, 2);
    ks.set_cold_store(store.clone());
    ks
}

/// `keyspace_over` a new, empty store.
pub fn tiered() -> (Keyspace, Arc<Store>) {
    let store = Arc::new(Store::default());
    (keyspace_over(&store), store)
}

/// A string entry without a TTL, as a cold store holds it.
pub fn string(v: &[u8]) -> Owned {
    Owned {
        value: Value::Str(v.to_vec()),
        expire_at: None,
        raw: false,
    }
}

/// One capture call of shard 0 for snapshot `epoch`; every entry it gives goes into `got`,
/// as key -> string value (empty for other types). A key given twice fails.
pub fn capture_into(
    db: &strata_engine::Db,
    epoch: u64,
    buckets: usize,
    got: &mut BTreeMap<Vec<u8>, Vec<u8>>,
) -> strata_engine::Capture {
    use strata_engine::Captured;
    let mut dup = None;
    let state = db.capture_chunk(0, epoch, buckets, |c| {
        let (k, v) = match c {
            Captured::Entry(e) | Captured::Clean(e) => {
                (e.key().to_vec(), e.as_str().map(<[u8]>::to_vec))
            }
            Captured::Value(k, o) | Captured::Cold(k, o) => match &o.value {
                Value::Str(s) => (k.to_vec(), Some(s.clone())),
                _ => (k.to_vec(), None),
            },
        };
        if got.insert(k.clone(), v.unwrap_or_default()).is_some() {
            dup = Some(k);
        }
    });
    assert_eq!(dup, None, "a key was given twice");
    state
}

/// Runs `steps` against shard 0 while snapshot `epoch` captures it: a step that
/// `chunk_of` names a chunk of buckets captures that many more (until the capture is
/// done), any other is `apply`'d; then the capture runs to its end. Returns what it gave.
pub fn capture_during<S>(
    db: &strata_engine::Db,
    epoch: u64,
    steps: &[S],
    chunk_of: impl Fn(&S) -> Option<usize>,
    mut apply: impl FnMut(&S),
) -> BTreeMap<Vec<u8>, Vec<u8>> {
    use strata_engine::Capture;
    let mut got = BTreeMap::new();
    let mut done = false;
    for s in steps {
        match chunk_of(s) {
            Some(n) => done = done || capture_into(db, epoch, n, &mut got) == Capture::Done,
            None => apply(s),
        }
    }
    while !done {
        done = capture_into(db, epoch, 16, &mut got) == Capture::Done;
    }
    got
}
