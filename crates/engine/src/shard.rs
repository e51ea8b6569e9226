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

#[derive(Default)]
pub(crate) struct ShardData {
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
}

/// Pre-images for the snapshot of `epoch`: key -> its entry then (None: it did not exist).
pub struct PreImages {
    pub epoch: u64,
    pub map: hashbrown::HashMap<Box<[u8]>, Option<crate::value::Owned>>,
}

impl ShardData {
    pub fn find(&self, h: u64, key: &[u8]) -> Option<&Slot> {
        self.table.find(h, |s| s.key() == key)
    }

    pub fn find_mut(&mut self, h: u64, key: &[u8]) -> Option<&mut Slot> {
        self.table.find_mut(h, |s| s.key() == key)
    }

    /// Inserts or replaces; returns the previous slot. One probe either way.
    pub fn put(&mut self, h: u64, slot: Slot) -> Option<Slot> {
        use hashbrown::hash_table::Entry;
        if slot.expire_at().is_some() {
            self.volatile += 1;
        }
        let old = match self
            .table
            .entry(h, |s| s.key() == slot.key(), |s| hash(s.key()))
        {
            Entry::Occupied(mut e) => Some(std::mem::replace(e.get_mut(), slot)),
            Entry::Vacant(e) => {
                e.insert(slot);
                None
            }
        };
        if old.as_ref().is_some_and(|o| o.expire_at().is_some()) {
            self.volatile -= 1;
        }
        old
    }

    pub fn remove(&mut self, h: u64, key: &[u8]) -> Option<Slot> {
        let slot = self
            .table
            .find_entry(h, |s| s.key() == key)
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
        std::mem::take(&mut self.table)
    }
}
