//! The cold tier's seam: entries that left RAM for a store outside the engine (the
//! server's on-disk tier), and the keyspace operations that must see them.
//!
//! Invariants (docs/tiering.md):
//! - A key is in RAM or in the store, never both, and it moves only under its shard's lock
//!   (eviction to the store, `Db::evict_to_cold`; back on any access through `Locked`,
//!   `Db::fault`). So a command holding a shard sees each of its keys in one place, and
//!   `ShardData::cold` counts the shard's keys in the store exactly.
//! - A move is not a change: no effect, no keyspace event, no WATCH touch.
//! - A snapshot sees the logical state: while a shard's capture is in progress, a key
//!   brought back first saves its value aside (as a write saves its pre-image), and the
//!   shard's stored entries are given with its last chunk, except keys saved aside.

use crate::entry::Kind;
use crate::keyspace::{Captured, Db};
use crate::shard::{hash, ShardData};
use crate::value::Owned;
use std::sync::atomic::Ordering::Relaxed;

/// Entries of one shard the cold expiry pass reads in one step, at most (it holds the
/// shard's lock meanwhile; the rest wait for the shard's next turn).
const COLD_DUE_PER_SHARD: usize = 256;

/// What `ColdStore::each_kind` calls with each entry's key, type and expiry; false stops
/// the walk.
pub type KindVisitor<'a> = dyn FnMut(&[u8], Kind, Option<u64>) -> bool + 'a;

/// Where cold entries live. The engine calls it under the shard's lock of the key, so an
/// implementation needs no ordering of its own between calls for one shard.
pub trait ColdStore: Send + Sync {
    /// Stores `key`'s entry with its access bits (its LRU clock or LFU pair, which come
    /// back with it: OBJECT IDLETIME and FREQ, and eviction, see a cold key as they saw it
    /// hot). It leaves RAM once this returned Ok; an error (a full disk) leaves it in RAM.
    fn put(
        &self,
        db: usize,
        shard: usize,
        key: &[u8],
        entry: &Owned,
        access: u32,
    ) -> Result<(), String>;
    /// Removes `key`'s entry from the store and returns it with its access bits, if it
    /// is there.
    fn take(&self, db: usize, shard: usize, key: &[u8]) -> Option<(Owned, u32)>;
    /// `key`'s entry and its access bits, left in the store.
    fn get(&self, db: usize, shard: usize, key: &[u8]) -> Option<(Owned, u32)>;
    /// Drops `key`'s entry, unread.
    fn remove(&self, db: usize, shard: usize, key: &[u8]);
    /// Whether `key` has an entry, without reading it (an LSM store answers from its
    /// index, not from the value).
    fn contains(&self, db: usize, shard: usize, key: &[u8]) -> bool {
        self.get(db, shard, key).is_some()
    }
    /// Drops `key`'s entry unread if it is there, and says whether it was (all a write
    /// that replaces the key whole needs to know). `volatile`: it has an expiry (which a
    /// store that keeps expiries apart drops with it).
    fn discard(&self, db: usize, shard: usize, key: &[u8], volatile: bool) -> bool {
        let _ = volatile;
        self.take(db, shard, key).is_some()
    }
    /// The expiry (Unix ms) of `key`'s entry, None when it has none (or there is no
    /// entry); a store that keeps expiries apart from values answers without reading the
    /// value.
    fn expiry(&self, db: usize, shard: usize, key: &[u8]) -> Option<u64> {
        self.get(db, shard, key).and_then(|(o, _)| o.expire_at)
    }
    /// The key of every entry of one shard whose expiry is at or before `now` (Unix ms),
    /// until `f` returns false; a store that orders entries by expiry reads only those.
    fn each_due(&self, db: usize, shard: usize, now: u64, f: &mut dyn FnMut(&[u8]) -> bool) {
        self.each(db, shard, &mut |key, o| {
            o.expire_at.is_none_or(|at| at > now || f(key))
        });
    }
    /// A clean entry (in RAM, its copy in the store unchanged) with expiry `at` left RAM
    /// again without a write: a store that skips shards with nothing due must count it.
    fn cold_again(&self, db: usize, shard: usize, at: u64) {
        let _ = (db, shard, at);
    }
    /// The type of `key`'s entry (TYPE); a store that can reads it without building the
    /// value.
    fn kind(&self, db: usize, shard: usize, key: &[u8]) -> Option<Kind> {
        self.get(db, shard, key)
            .map(|(o, _)| crate::entry::kind_of(&o.value))
    }
    /// Every entry of one shard, in key order, until `f` returns false.
    fn each(&self, db: usize, shard: usize, f: &mut dyn FnMut(&[u8], Owned) -> bool);
    /// The type and expiry of every entry of one shard whose key `wanted` accepts, in key
    /// order, until `f` returns false (SCAN TYPE); a store that can reads only the values
    /// of those keys, and builds none.
    fn each_kind(
        &self,
        db: usize,
        shard: usize,
        wanted: &dyn Fn(&[u8]) -> bool,
        f: &mut KindVisitor<'_>,
    ) {
        self.each(db, shard, &mut |key, o| {
            !wanted(key) || f(key, crate::entry::kind_of(&o.value), o.expire_at)
        });
    }
    /// The key of every entry of one shard, in key order, until `f` returns false; a store
    /// that can reads its index only, not the values (SCAN, KEYS, RANDOMKEY).
    fn each_key(&self, db: usize, shard: usize, f: &mut dyn FnMut(&[u8]) -> bool) {
        self.each(db, shard, &mut |key, _| f(key));
    }
    /// Drops every entry of database `db` (FLUSHDB, FLUSHALL).
    fn clear(&self, db: usize);
    /// SWAPDB: the two databases' entries change places.
    fn swap(&self, a: usize, b: usize);
}

/// Whether a key lives, and its expiry: None when it does not.
pub(crate) type Presence = Option<Option<u64>>;

/// What an eviction to the store did with a key.
pub enum ToCold {
    /// The entry left RAM: the caller frees it.
    Moved(crate::Unlinked),
    /// Not in RAM (gone since it was sampled, or without a TTL for a volatile policy).
    Absent,
    /// Left in RAM: large and in use (`Db::evict_to_cold_unless_in_use`).
    InUse,
}

/// Whether the cold entry of the key of hash `h` surely has no TTL, so that it cannot
/// have expired unseen (a read ahead then need not bring its value).
fn unread_ok(g: &ShardData, h: u64) -> bool {
    !g.cold_ttl.may_contain(h)
}

/// Whether any entry of the shard is in the store (cold keys, clean keys' copies): a
/// shard with none pays this check alone on a whole write.
#[inline]
pub(crate) fn has_store_entries(g: &ShardData) -> bool {
    g.cold != 0 || !g.clean.is_empty()
}

/// Whether `key` is in RAM with its copy in the store still its value (a clean key: its
/// copy is no cold entry). The set is empty in most shards: that test comes first.
pub(crate) fn is_clean(g: &ShardData, key: &[u8]) -> bool {
    !g.clean.is_empty() && g.clean.contains(key)
}

/// A cold entry with an expiry left the store.
fn forget_ttl(g: &mut ShardData, h: u64) {
    g.cold_ttl.remove(h);
    if g.cold_ttl.is_empty() {
        // Empty: its memory goes, and a filter that had filled up starts afresh.
        g.cold_ttl = Default::default();
    }
}

/// A cold entry of the key of hash `h` goes to the store; `volatile`: it has a TTL.
pub(crate) fn count_cold(g: &mut ShardData, h: u64, volatile: bool) {
    g.cold += 1;
    if volatile {
        g.cold_ttl.insert(h);
    }
}

/// Puts an entry read from the store into RAM, in the form it was stored from.
pub(crate) fn put_back(
    g: &mut ShardData,
    h: u64,
    key: &[u8],
    owned: Owned,
    stamp: crate::access::Stamp,
) {
    if owned.raw {
        g.put_general(h, key, owned.value, owned.expire_at, stamp);
    } else {
        g.put(h, key, owned.value, owned.expire_at, stamp);
    }
}

impl Db {
    pub(crate) fn cold_store(&self) -> Option<&dyn ColdStore> {
        self.hooks.cold.get().map(|c| &**c)
    }

    /// Brings `key` back into RAM if its shard has entries in the cold store and it is one
    /// of them. Called with the shard locked, before any lookup of the key. A read leaves
    /// the store's copy in place (the key is then `clean`: evicted again unchanged, it
    /// needs no write); a `write` drops it, since the entry is about to change.
    #[inline]
    pub(crate) fn fault(&self, g: &mut ShardData, h: u64, key: &[u8], write: bool) {
        if g.cold != 0 || (write && !g.clean.is_empty()) {
            self.fault_slow(g, h, key, write);
        }
    }

    #[cold]
    #[inline(never)]
    fn fault_slow(&self, g: &mut ShardData, h: u64, key: &[u8], write: bool) {
        let Some(store) = self.cold_store() else {
            return;
        };
        let idx = self.shard_index(h);
        if g.position(h, key).is_some() {
            if write {
                self.forget_copy(g, h, key);
            }
            return;
        }
        if g.cold == 0 || !g.cold_filter.may_contain(h) {
            return;
        }
        let found = if write {
            store.take(self.index(), idx, key)
        } else {
            store.get(self.index(), idx, key)
        };
        let Some((owned, access)) = found else {
            return;
        };
        g.cold -= 1;
        if owned.expire_at.is_some() {
            forget_ttl(g, h);
        }
        g.faults += 1;
        if write {
            g.cold_filter.remove(h);
        } else {
            g.clean.insert(key.into());
        }
        if let Some(pre) = g.pre.as_mut() {
            if g.captured < pre.epoch && !pre.map.contains_key(key) {
                // The key's value at the snapshot's start is the one it brings back.
                pre.map.insert(key.into(), Some(owned.clone()));
            }
        }
        put_back(g, h, key, owned, self.stamp_now());
        // As it left RAM: the command's own lookup stamps it, unless it does not touch
        // keys (OBJECT, TYPE, EXISTS, TTL).
        g.set_access(h, key, access);
    }

    /// Before a write at `now` that replaces `key` whole, or deletes it (SET, DEL): a cold
    /// entry is dropped from the store unread and this returns true (the key existed and
    /// is gone). Otherwise the entry comes back as for any write (`fault`), and this
    /// returns false. Unread only while it cannot matter what the entry was: it has not
    /// expired (which a write must see; for a key with an expiry the store says when,
    /// without reading the value), and no snapshot is capturing the shard (it would need
    /// the entry's value).
    /// The caller checks `has_store_entries` first, and reads its clock only then.
    #[cold]
    #[inline(never)]
    pub(crate) fn fault_replace(&self, g: &mut ShardData, h: u64, key: &[u8], now: u64) -> bool {
        let capturing = g.pre.as_ref().is_some_and(|p| g.captured < p.epoch);
        let Some(store) = self.cold_store().filter(|_| !capturing) else {
            self.fault_slow(g, h, key, true);
            return false;
        };
        if g.position(h, key).is_some() {
            self.forget_copy(g, h, key);
            return false;
        }
        if g.cold == 0 || !g.cold_filter.may_contain(h) {
            return false;
        }
        let Some(expiry) = self.live_expiry(store, g, h, key, now) else {
            // It may have expired unseen: it comes back, and expires as a hot key does.
            self.fault_slow(g, h, key, true);
            return false;
        };
        if !store.discard(self.index(), self.shard_index(h), key, expiry.is_some()) {
            return false;
        }
        g.cold -= 1;
        g.cold_filter.remove(h);
        if expiry.is_some() {
            forget_ttl(g, h);
        }
        true
    }

    /// The expiry of `key`'s cold entry as of `now`: Some(None) when it has none (the
    /// shard's filter of keys with a TTL rules it out, or the store says so), Some(at)
    /// when it is still to come, None when it has passed.
    fn live_expiry(
        &self,
        store: &dyn ColdStore,
        g: &ShardData,
        h: u64,
        key: &[u8],
        now: u64,
    ) -> Option<Option<u64>> {
        if unread_ok(g, h) {
            return Some(None);
        }
        match store.expiry(self.index(), self.shard_index(h), key) {
            Some(at) if at <= now => None,
            at => Some(at),
        }
    }

    /// Whether `key` exists at `now` and its expiry (None: it does not), answered for a
    /// cold key by the store's index and expiry record without reading or bringing back
    /// its entry (EXISTS, TTL, SET NX, MSETNX, RESTORE's check); None: look it up in RAM
    /// as usual (after the usual fault), as for a key that has expired.
    /// The caller checks `has_store_entries` first, and reads its clock only then.
    pub(crate) fn cold_presence(
        &self,
        g: &mut ShardData,
        h: u64,
        key: &[u8],
        now: u64,
    ) -> Option<Presence> {
        self.cold_lookup(g, h, key, now, |store, expiry| {
            store
                .contains(self.index(), self.shard_index(h), key)
                .then_some(expiry)
        })
    }

    /// The type of `key` at `now` (None: it does not exist), answered for a cold key by
    /// the head of its record, without building or bringing back its value (TYPE); None:
    /// look it up in RAM as usual, as `cold_presence`.
    pub(crate) fn cold_kind(
        &self,
        g: &mut ShardData,
        h: u64,
        key: &[u8],
        now: u64,
    ) -> Option<Option<Kind>> {
        self.cold_lookup(g, h, key, now, |store, _| {
            store.kind(self.index(), self.shard_index(h), key)
        })
    }

    /// `ask` the store about `key`, given its live expiry, when it may be cold (its
    /// shard's filter may hold it and it is not in RAM) and has not expired at `now`.
    fn cold_lookup<T>(
        &self,
        g: &ShardData,
        h: u64,
        key: &[u8],
        now: u64,
        ask: impl FnOnce(&dyn ColdStore, Option<u64>) -> T,
    ) -> Option<T> {
        if g.cold == 0 || !g.cold_filter.may_contain(h) {
            return None;
        }
        let store = self.cold_store()?;
        if g.position(h, key).is_some() {
            return None;
        }
        let expiry = self.live_expiry(store, g, h, key, now)?;
        Some(ask(store, expiry))
    }

    /// `key` (in RAM, or just removed from it) no longer owns a copy in the store: the
    /// copy goes, so it can never come back in its place.
    pub(crate) fn forget_copy(&self, g: &mut ShardData, h: u64, key: &[u8]) {
        if g.clean.is_empty() || !g.clean.remove(key) {
            return;
        }
        if let Some(store) = self.cold_store() {
            store.remove(self.index(), self.shard_index(h), key);
            g.cold_filter.remove(h);
        }
    }

    /// Removes the shard's expired keys from RAM (`ShardData::purge_expired`), with the
    /// store copies of clean ones.
    pub(crate) fn purge_expired(&self, g: &mut ShardData, now: u64) -> usize {
        self.purge_expired_where(g, now, |_| true)
    }

    /// `purge_expired` for the expired keys that pass `which`.
    pub(crate) fn purge_expired_where(
        &self,
        g: &mut ShardData,
        now: u64,
        which: impl Fn(&[u8]) -> bool,
    ) -> usize {
        if g.clean.is_empty() {
            return g.purge_expired_where(now, which, |k| self.expired(k));
        }
        let mut gone = Vec::new();
        let n = g.purge_expired_where(now, which, |k| {
            self.expired(k);
            gone.push(k.to_vec());
        });
        for k in gone {
            self.forget_copy(g, hash(&k), &k);
        }
        n
    }

    /// Whether `key` may be in the cold store (its shard has cold keys and it is not in
    /// RAM): Some(its shard's index, and whether a write may replace it unread), for a
    /// read ahead of the command that needs it.
    pub fn maybe_cold(&self, key: &[u8]) -> Option<(usize, bool)> {
        self.cold_store()?;
        let h = hash(key);
        let idx = self.shard_index(h);
        let g = self.shard_ref(idx).acquire();
        (g.cold != 0 && g.position(h, key).is_none() && g.cold_filter.may_contain(h))
            .then_some((idx, unread_ok(&g, h)))
    }

    /// Moves `key`'s entry to the cold store (eviction with tiering on), if it is still in
    /// RAM (and has a TTL, if `volatile`). Returns the RAM entry for the caller to free,
    /// None if there was nothing to move, or the store's error (the entry stays).
    pub fn evict_to_cold(
        &self,
        key: &[u8],
        volatile: bool,
    ) -> Result<Option<crate::Unlinked>, String> {
        match self.to_cold(key, volatile, None)? {
            ToCold::Moved(e) => Ok(Some(e)),
            ToCold::Absent | ToCold::InUse => Ok(None),
        }
    }

    /// [`evict_to_cold`](Db::evict_to_cold), except that an entry used lately
    /// (`Access::used_lately`) stays when `spare` says so of its size: moving a large one
    /// would cost its whole size in writes, and bringing it back at its next use as much
    /// in reads.
    pub fn evict_to_cold_unless_in_use(
        &self,
        key: &[u8],
        volatile: bool,
        spare: &dyn Fn(usize) -> bool,
    ) -> Result<ToCold, String> {
        self.to_cold(key, volatile, Some(spare))
    }

    fn to_cold(
        &self,
        key: &[u8],
        volatile: bool,
        spare: Option<&dyn Fn(usize) -> bool>,
    ) -> Result<ToCold, String> {
        let Some(store) = self.cold_store() else {
            return Ok(ToCold::Absent);
        };
        let h = hash(key);
        let idx = self.shard_index(h);
        let mut g = self.shard_ref(idx).acquire();
        if let Some(spare) = spare {
            let now = crate::clock::now_ms();
            let in_use = g
                .find(h, key)
                .is_some_and(|e| self.access.used_lately(e.lru(), now) && spare(e.memory_usage(5)));
            if in_use {
                return Ok(ToCold::InUse);
            }
        }
        Ok(
            match self.to_cold_locked(store, &mut g, (idx, h), key, volatile, false)? {
                Some(e) => ToCold::Moved(e),
                None => ToCold::Absent,
            },
        )
    }

    /// Moves clean entries (their store copy is still their value, so nothing is written)
    /// out of RAM, from shard `from` on, handing each to `f` until it returns false or none
    /// is left (then this returns false). A full tier takes no new entries, but what reads
    /// brought back from it can leave again for free, before the eviction policy deletes
    /// keys or refuses writes.
    pub fn drop_clean_entries(
        &self,
        from: usize,
        f: &mut dyn FnMut(crate::Unlinked) -> bool,
    ) -> bool {
        let Some(store) = self.cold_store() else {
            return false;
        };
        let n = self.shard_count();
        for i in 0..n {
            let idx = (from + i) % n;
            let mut g = self.shard_ref(idx).acquire();
            while let Some(key) = g.clean.iter().next().cloned() {
                let at = (idx, hash(&key));
                match self.to_cold_locked(store, &mut g, at, &key, false, true) {
                    Ok(Some(e)) => {
                        if !f(e) {
                            return true;
                        }
                    }
                    // Not in RAM any more: it is no one's clean copy.
                    _ => {
                        g.clean.remove(&key);
                    }
                }
            }
        }
        false
    }

    /// `to_cold` with the key's shard (`idx`, its hash `h`) locked; with `clean_only`, a
    /// key that would need a write stays.
    fn to_cold_locked(
        &self,
        store: &dyn ColdStore,
        g: &mut ShardData,
        (idx, h): (usize, u64),
        key: &[u8],
        volatile: bool,
        clean_only: bool,
    ) -> Result<Option<crate::Unlinked>, String> {
        let Some(e) = g.find(h, key) else {
            return Ok(None);
        };
        let at = e.expire_at();
        let expires = at.is_some();
        if volatile && !expires {
            return Ok(None);
        }
        // A clean entry's copy in the store is its value already.
        let dirty = !is_clean(g, key);
        if dirty && clean_only {
            return Ok(None);
        }
        let owned = dirty.then(|| e.to_owned_value());
        if let Some(owned) = owned {
            store.put(self.index(), idx, key, &owned, e.lru())?;
            g.cold_filter.insert(h);
        } else {
            g.clean.remove(key);
            if let Some(at) = at {
                store.cold_again(self.index(), idx, at);
            }
        }
        if g.pre.is_some() {
            // A capture in progress: the entry as it is now, if no chunk gave it yet.
            g.preserve(h, key);
        }
        let removed = g.remove(h, key);
        count_cold(g, h, expires);
        g.spills += 1;
        Ok(removed.map(crate::Unlinked))
    }

    /// The shard's cold entries for its capture's last chunk, except keys saved aside.
    pub(crate) fn capture_cold(&self, g: &ShardData, idx: usize, f: &mut impl FnMut(Captured<'_>)) {
        let (Some(store), true) = (self.cold_store(), g.cold != 0) else {
            return;
        };
        let saved = g.pre.as_ref().map(|p| &p.map);
        store.each(self.index(), idx, &mut |key, owned| {
            // Clean keys are in RAM: the walk gave them.
            let in_ram = is_clean(g, key);
            if !in_ram && !saved.is_some_and(|m| m.contains_key(key)) {
                f(Captured::Cold(key, &owned));
            }
            true
        });
    }

    /// Calls `f` with each cold entry of shard `idx` (its lock held by the caller) until
    /// `f` returns false.
    pub(crate) fn each_cold(
        &self,
        g: &ShardData,
        idx: usize,
        f: &mut dyn FnMut(&[u8], Owned) -> bool,
    ) {
        if let (Some(store), true) = (self.cold_store(), g.cold != 0) {
            // Clean keys' copies are their RAM entries' too: only the others are cold.
            store.each(self.index(), idx, &mut |key, o| {
                is_clean(g, key) || f(key, o)
            });
        }
    }

    /// `each_cold` for the type and expiry of the keys `wanted` accepts: the store reads
    /// only their values, and builds none (SCAN TYPE).
    pub(crate) fn each_cold_kind(
        &self,
        g: &ShardData,
        idx: usize,
        wanted: &dyn Fn(&[u8]) -> bool,
        f: &mut KindVisitor<'_>,
    ) {
        if let (Some(store), true) = (self.cold_store(), g.cold != 0) {
            let wanted = |key: &[u8]| !is_clean(g, key) && wanted(key);
            store.each_kind(self.index(), idx, &wanted, f);
        }
    }

    /// `each_cold` for keys alone: the store reads no value.
    pub(crate) fn each_cold_key(
        &self,
        g: &ShardData,
        idx: usize,
        f: &mut dyn FnMut(&[u8]) -> bool,
    ) {
        if let (Some(store), true) = (self.cold_store(), g.cold != 0) {
            store.each_key(self.index(), idx, &mut |key| is_clean(g, key) || f(key));
        }
    }

    /// Whether cold `key` of shard `g` (locked by the caller) has not expired at `now`.
    pub(crate) fn cold_live(&self, g: &ShardData, key: &[u8], now: u64) -> bool {
        self.cold_store()
            .is_some_and(|store| self.live_expiry(store, g, hash(key), key, now).is_some())
    }

    /// A cold entry of shard `idx` read in place (an export's walk).
    pub(crate) fn get_cold(&self, idx: usize, key: &[u8]) -> Option<Owned> {
        self.cold_store()?
            .get(self.index(), idx, key)
            .map(|(o, _)| o)
    }

    /// FLUSHDB: the cold entries go with the hot ones (the caller holds every shard).
    pub(crate) fn clear_cold(&self) {
        if let Some(store) = self.cold_store() {
            store.clear(self.index());
        }
    }

    /// The RAM of the shards' filters of cold keys, and of those with a TTL
    /// (`crate::cold_filter`).
    pub fn cold_filter_bytes(&self) -> usize {
        self.shard_iter()
            .map(|g| g.cold_filter.bytes() + g.cold_ttl.bytes())
            .sum()
    }

    /// Keys in the cold store, and moves each way since start: (keys, to disk, back).
    pub fn cold_stats(&self) -> (u64, u64, u64) {
        self.shard_iter().fold((0, 0, 0), |(k, s, f), g| {
            (k + g.cold as u64, s + g.spills, f + g.faults)
        })
    }
}

impl crate::Keyspace {
    /// Installs the cold store (tiering on), once, before any key is stored.
    pub fn set_cold_store(&self, store: std::sync::Arc<dyn ColdStore>) {
        let _ = self.hooks().cold.set(store);
    }

    pub fn tiering(&self) -> bool {
        self.hooks().cold.get().is_some()
    }

    /// One step of the background pass over cold keys (the active expiry's): the next
    /// shards holding cold keys with an expiry (up to 16), round robin, have those whose
    /// time has passed removed as expired keys are (up to [`COLD_DUE_PER_SHARD`] a shard).
    /// Returns how many went. The store gives only the due entries (`each_due`), so a
    /// step costs what expires, not what the shards hold.
    pub fn cold_expire_step(&self) -> usize {
        if self.hooks().cold.get().is_none() || !self.db(0).may_expire(crate::clock::now_ms()) {
            return 0;
        }
        let hooks = self.hooks();
        let per_db = self.db(0).shard_count();
        let total = per_db * self.db_count();
        let start = hooks.cold_cursor.load(Relaxed);
        let (mut removed, mut visited) = (0, 0);
        let mut pos = start % total;
        for _ in 0..total.min(4096) {
            let db = self.db(pos / per_db);
            let idx = pos % per_db;
            pos = (pos + 1) % total;
            let mut g = db.shard_ref(idx).acquire();
            if g.cold_ttl.is_empty() {
                continue;
            }
            let now = crate::clock::now_ms();
            let (mut expired, mut read) = (Vec::new(), 0);
            if let Some(store) = db.cold_store() {
                store.each_due(db.index(), idx, now, &mut |key| {
                    // Clean keys are in RAM: their copies are not cold entries.
                    if !is_clean(&g, key) {
                        expired.push(key.to_vec());
                    }
                    read += 1;
                    read < COLD_DUE_PER_SHARD
                });
            }
            for key in &expired {
                // Back into RAM, then removed as any expired key is (its event, its DEL).
                db.fault(&mut g, hash(key), key, true);
            }
            if !expired.is_empty() {
                removed += db.purge_expired(&mut g, now);
            }
            visited += 1;
            if visited == 16 {
                break;
            }
        }
        hooks.cold_cursor.store(pos, Relaxed);
        removed
    }

    pub(crate) fn swap_cold(&self, a: usize, b: usize) {
        if let Some(store) = self.hooks().cold.get() {
            store.swap(a, b);
        }
    }
}

/// The bytes of the entries in RAM, as the engine counts them (`crate::ledger`), for a
/// server whose `maxmemory` bounds its hot entries (tiering): the store's own memory and
/// the allocator's other users are not the entries' and must not push them out.
pub struct HotBytes(std::sync::Arc<crate::ledger::Books>);

impl HotBytes {
    pub fn total(&self) -> u64 {
        self.0.total() as u64
    }
}

impl crate::Keyspace {
    /// Starts counting the bytes of every database's entries (see [`HotBytes`]): each
    /// shard folds its changes in every `fold` bytes.
    pub fn count_hot_bytes(&self, fold: usize) -> HotBytes {
        let books = std::sync::Arc::new(crate::ledger::Books::default());
        for d in 0..self.db_count() {
            let db = self.db(d);
            for i in 0..db.shard_count() {
                db.shard_ref(i)
                    .acquire()
                    .open_ledger(&books, fold.max(1), 5);
            }
        }
        HotBytes(books)
    }

    /// Makes the hot bytes' total exact: each shard folds in what it has not yet (the
    /// total is otherwise within `fold` bytes a shard of the exact sum, which over many
    /// shards can exceed a small `maxmemory` with no entry left in RAM to move).
    pub fn fold_hot_bytes(&self) {
        for d in 0..self.db_count() {
            let db = self.db(d);
            for i in 0..db.shard_count() {
                db.shard_ref(i).acquire().fold_now();
            }
        }
    }
}
