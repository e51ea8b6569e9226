//! A start that takes the tier's store as it finds it (`strata_tier::kept`): the entries a
//! snapshot says are in the store are counted in their shards instead of loaded, and after
//! a crash, the store's other records go (docs/tiering.md, "Restarts").

use crate::cold::{count_cold, put_back};
use crate::keyspace::Db;
use crate::shard::hash;
use crate::value::Owned;
use std::collections::HashSet;

impl Db {
    /// A restart that keeps the store (`strata_tier::kept`): `key`'s entry is in
    /// the store already, not in RAM; its shard counts it as cold. `volatile`: it has a
    /// TTL.
    pub fn adopt_cold(&self, key: &[u8], volatile: bool) {
        let h = hash(key);
        let mut g = self.shard_ref(self.shard_index(h)).acquire();
        if g.position(h, key).is_some() {
            // Given clean first: a clean key evicted while its shard was captured moves
            // to the store without a write (its copy is its value), and is given again
            // with the store's entries. It is clean.
            return;
        }
        count_cold(&mut g, h, volatile);
        g.cold_filter.insert(h);
    }

    /// A restart that keeps the store: `key`'s entry goes into RAM, clean (its copy in
    /// the store is the same value, as after a read brought it back). Not through a
    /// write, which would take the copy out of the store first.
    pub fn adopt_clean(&self, key: &[u8], owned: Owned) {
        let h = hash(key);
        let mut g = self.shard_ref(self.shard_index(h)).acquire();
        if g.position(h, key).is_some() {
            return;
        }
        g.clean.insert(key.into());
        g.cold_filter.insert(h);
        put_back(&mut g, h, key, owned, self.stamp_now());
    }

    /// A start that checks the store after a crash: `owned` becomes `key`'s cold entry,
    /// in place of whatever record the store had for it (its access bits those of an
    /// entry written now, as a load gives its entries). An error (a full disk) leaves the
    /// key nowhere: the caller loads it into RAM.
    pub fn restore_cold(&self, key: &[u8], owned: &Owned) -> Result<(), String> {
        let store = self.cold_store().ok_or("no cold store")?;
        let h = hash(key);
        let idx = self.shard_index(h);
        let mut g = self.shard_ref(idx).acquire();
        // Removed first, with its expiry records: a put leaves another expiry's in place.
        store.remove(self.index(), idx, key);
        store.put(self.index(), idx, key, owned, self.stamp_now().fresh())?;
        count_cold(&mut g, h, owned.expire_at.is_some());
        g.cold_filter.insert(h);
        Ok(())
    }

    /// A start that checks the store after a crash, once the snapshot's cold entries are
    /// counted: removes the records of shard `idx` that are none of them. Returns how many
    /// went, and false if some may remain that only `listed` would tell. `listed`: the shard's cold
    /// entries' keys, when the caller has them. Without them, a record whose key RAM
    /// holds, or that the shard's filter of cold keys rules out, goes; the others stay if
    /// they are as many as the shard's cold keys (each of which has its record), and
    /// otherwise a false positive of the filter hides a stray record among them.
    pub fn sweep_store(&self, idx: usize, listed: Option<&HashSet<Vec<u8>>>) -> (u64, bool) {
        let Some(store) = self.cold_store() else {
            return (0, true);
        };
        let g = self.shard_ref(idx).acquire();
        let (mut stray, mut kept) = (Vec::new(), 0usize);
        store.each_key(self.index(), idx, &mut |key| {
            let h = hash(key);
            let cold = g.position(h, key).is_none()
                && match listed {
                    Some(keys) => keys.contains(key),
                    None => g.cold_filter.may_contain(h),
                };
            if cold {
                kept += 1;
            } else {
                stray.push(key.to_vec());
            }
            true
        });
        for key in &stray {
            store.remove(self.index(), idx, key);
        }
        (stray.len() as u64, kept == g.cold)
    }
}
