//! A command's hold on the shards of its keys. Every read and write of an entry goes through
//! here, so lazy expiry, hit/miss counting and LRU touching happen in exactly one place.

use crate::access::Stamp;
use crate::clock;
use crate::entry::{EntryRef, Kind};
use crate::keyspace::Db;
use crate::session::ShardGuard;
use crate::shard::{hash, FoundMut, Removed, ShardData};
use crate::value::{Owned, Value};
use std::cell::Cell;

/// The key holds a value of another type (Redis's WRONGTYPE).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WrongType;

/// What a write does to the key's expiry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ttl {
    /// Keep the existing expiry (SET KEEPTTL, SETRANGE, INCR...).
    Keep,
    /// No expiry (a plain SET).
    Clear,
    /// Expire at this absolute Unix time in milliseconds.
    At(u64),
}

pub(crate) enum Guards<'a> {
    One(usize, ShardGuard<'a>),
    /// Sorted by shard index, locked in that order.
    Many(Vec<(usize, ShardGuard<'a>)>),
}

/// Locked shards of one database. Dropping it unlocks them.
pub struct Locked<'a> {
    pub(crate) db: &'a Db,
    pub(crate) guards: Guards<'a>,
    /// The command's time in Unix ms; 0 until first needed when the caller gave none
    /// (most lookups touch no entry with an expiry and need no clock at all).
    now: Cell<u64>,
    /// What an access at `now` writes in an entry's access bits; None until first needed.
    stamp: Cell<Option<Stamp>>,
    touch: bool,
    /// A collection was edited in place under the embedded table's accounting: measure it
    /// again when this guard lets go (`crate::ledger`).
    edited: Cell<bool>,
    /// Keys created through this guard are not announced (`Db::created`): loading.
    quiet: bool,
}

impl<'a> Locked<'a> {
    /// `now` = 0: read the clock lazily, on first need.
    pub(crate) fn new(db: &'a Db, guards: Guards<'a>, now: u64) -> Self {
        Locked {
            db,
            guards,
            now: Cell::new(now),
            stamp: Cell::new(None),
            touch: true,
            edited: Cell::new(false),
            quiet: false,
        }
    }

    /// Keys created through this guard are not announced to the created-key hook (a
    /// snapshot being loaded creates keys that are not new).
    pub fn quiet(mut self) -> Self {
        self.quiet = true;
        self
    }

    /// Before a store: whether it creates `key` and must announce it. Only when someone
    /// listens does it look the key up (expiring it if its time has passed, as Redis's
    /// write lookup does first); otherwise it costs one relaxed load.
    fn creating(&mut self, key: &[u8]) -> bool {
        !self.quiet && self.db.announcing() && !self.live(key).1
    }

    /// Reads through this guard stop updating access times (CLIENT NO-TOUCH).
    pub fn no_touch(mut self, no_touch: bool) -> Self {
        self.touch = !no_touch;
        self
    }

    /// The time this command runs at, in Unix milliseconds (one value for the whole command).
    pub fn now(&self) -> u64 {
        match self.now.get() {
            0 => {
                let t = clock::now_ms();
                self.now.set(t);
                t
            }
            t => t,
        }
    }

    /// What entries written or read now get in their access bits.
    fn stamp(&self) -> Stamp {
        if let Some(s) = self.stamp.get() {
            return s;
        }
        let s = self.db.access.stamp(self.now());
        self.stamp.set(Some(s));
        s
    }

    fn shard(&mut self, h: u64) -> &mut ShardData {
        let idx = self.db.shard_index(h);
        match &mut self.guards {
            Guards::One(i, g) if *i == idx => g,
            Guards::Many(v) => match v.binary_search_by_key(&idx, |(i, _)| *i) {
                Ok(pos) => &mut v[pos].1,
                Err(_) => not_locked(),
            },
            Guards::One(..) => not_locked(),
        }
    }

    /// Brings `key` back from the cold tier first if it is there (tiering): every lookup
    /// of a key through this guard starts here, so commands see one keyspace.
    #[inline]
    fn fault(&mut self, h: u64, key: &[u8]) {
        let db = self.db;
        db.fault(self.shard(h), h, key, false);
    }

    /// `fault` before a change of `key`: its store copy, if any, stops being its.
    #[inline]
    fn fault_w(&mut self, h: u64, key: &[u8]) {
        let db = self.db;
        db.fault(self.shard(h), h, key, true);
    }

    /// `fault_w` before `key` is replaced whole or deleted: true when a cold entry was
    /// dropped unread (`Db::fault_replace`), so the key existed and is now gone.
    #[inline]
    fn fault_replace(&mut self, h: u64, key: &[u8]) -> bool {
        if !crate::cold::has_store_entries(self.shard(h)) {
            return false;
        }
        let (db, now) = (self.db, self.now());
        db.fault_replace(self.shard(h), h, key, now)
    }

    /// Finds a live entry, deleting it first if it has expired.
    fn live(&mut self, key: &[u8]) -> (u64, bool) {
        self.live_hashed(hash(key), key)
    }

    /// `live` for a key whose hash the caller has computed.
    fn live_hashed(&mut self, h: u64, key: &[u8]) -> (u64, bool) {
        self.fault(h, key);
        let expire_at = match self.shard(h).find(h, key) {
            None => return (h, false),
            Some(s) => s.expire_at(),
        };
        let expired = expire_at.is_some_and(|at| at <= self.now());
        if expired && !self.db.may_expire(self.now()) {
            // Frozen: the key reads as gone but stays (writes replace it in place).
            return (h, false);
        }
        let db = self.db;
        let shard = self.shard(h);
        if expired {
            db.remove_expired(shard, h, key);
            return (h, false);
        }
        (h, true)
    }

    /// A read lookup: counts a keyspace hit or miss and touches the entry's access time.
    pub fn get(&mut self, key: &[u8]) -> Option<EntryRef<'_>> {
        self.get_hashed(hash(key), key)
    }

    /// `get` for a key whose hash the caller has already computed (`Db::read1`).
    pub(crate) fn get_hashed(&mut self, h: u64, key: &[u8]) -> Option<EntryRef<'_>> {
        self.fault(h, key);
        // Expiry can only remove a key from a shard that holds keys with a TTL; elsewhere
        // the lookup below is the only probe.
        if self.shard(h).volatile != 0 && !self.live(key).1 {
            self.shard(h).misses += 1;
            return None;
        }
        let stamp = if self.touch { Some(self.stamp()) } else { None };
        self.shard(h).read(h, key, stamp)
    }

    /// A lookup that changes no statistics and no access time (write paths, TYPE, TTL...).
    pub fn peek(&mut self, key: &[u8]) -> Option<EntryRef<'_>> {
        let (h, found) = self.live(key);
        if !found {
            return None;
        }
        self.shard(h).find(h, key)
    }

    /// GET's lookup: the string value, a miss, or WRONGTYPE.
    pub fn get_str(&mut self, key: &[u8]) -> Result<Option<&[u8]>, WrongType> {
        match self.get(key) {
            None => Ok(None),
            Some(e) => e.as_str().map(Some).ok_or(WrongType),
        }
    }

    pub fn contains(&mut self, key: &[u8]) -> bool {
        let h = hash(key);
        if let Some(found) = self.cold_presence(h, key) {
            return found.is_some();
        }
        self.live_hashed(h, key).1
    }

    /// A read lookup of whether `key` lives, and its expiry (EXISTS, TTL): None when it
    /// does not. Counts a keyspace hit or miss as `get` does; a cold key is not brought
    /// back (its value is not read).
    pub fn presence(&mut self, key: &[u8]) -> Option<Option<u64>> {
        let h = hash(key);
        if let Some(found) = self.cold_presence(h, key) {
            return self.counted(h, found);
        }
        self.get_hashed(h, key).map(|e| e.expire_at())
    }

    /// TYPE's lookup: the type of `key` (None: it does not exist), counted and touched as
    /// `get` does; a cold key's value is neither built nor brought back.
    pub fn kind(&mut self, key: &[u8]) -> Option<Kind> {
        let h = hash(key);
        if crate::cold::has_store_entries(self.shard(h)) {
            let (db, now) = (self.db, self.now());
            if let Some(found) = db.cold_kind(self.shard(h), h, key, now) {
                return self.counted(h, found);
            }
        }
        self.get_hashed(h, key).map(|e| e.kind())
    }

    /// A lookup answered without `get`: counted as a keyspace hit or miss as `get` counts.
    fn counted<T>(&mut self, h: u64, found: Option<T>) -> Option<T> {
        let g = self.shard(h);
        if found.is_some() {
            g.hits += 1;
        } else {
            g.misses += 1;
        }
        found
    }

    /// `Db::cold_presence` for `key`, if its shard has entries in the store.
    fn cold_presence(&mut self, h: u64, key: &[u8]) -> Option<crate::cold::Presence> {
        if !crate::cold::has_store_entries(self.shard(h)) {
            return None;
        }
        let (db, now) = (self.db, self.now());
        db.cold_presence(self.shard(h), h, key, now)
    }

    /// Stores a string value (packed with its key).
    /// INCRBY: adds `by` to the integer in the string at `key` (0 when absent) and returns
    /// the sum. The key keeps its expiry. Fails, changing nothing, on a key of another
    /// type, a string that is not the canonical decimal text of an i64, or an overflow.
    /// The server's INCR family and the embedded `Table::incr` both run this.
    pub fn incr_by(&mut self, key: &[u8], by: i64) -> Result<i64, crate::embedded::Error> {
        use crate::embedded::Error;
        let (old, ttl) = match self.peek(key) {
            None => (0, Ttl::Clear),
            Some(e) => {
                let s = e.as_str().ok_or(Error::WrongType)?;
                let ttl = e.expire_at().map_or(Ttl::Clear, Ttl::At);
                (crate::int::parse_i64(s).ok_or(Error::NotInteger)?, ttl)
            }
        };
        let new = old.checked_add(by).ok_or(Error::Overflow)?;
        let mut buf = [0u8; 20];
        self.set_str(key, crate::int::fmt_i64(new, &mut buf), ttl);
        Ok(new)
    }

    pub fn set_str(&mut self, key: &[u8], value: &[u8], ttl: Ttl) {
        let h = hash(key);
        let replaced = self.fault_replacing(h, key, ttl);
        let expire_at = self.resolve_ttl(key, ttl);
        let created = !replaced && self.creating(key);
        let stamp = self.stamp();
        self.shard(h).put_str(h, key, value, expire_at, stamp);
        if created {
            self.db.created(key);
        }
    }

    /// Stores a value of any type.
    pub fn set_value(&mut self, key: &[u8], value: Value, ttl: Ttl) {
        let h = hash(key);
        let replaced = self.fault_replacing(h, key, ttl);
        let expire_at = self.resolve_ttl(key, ttl);
        let created = !replaced && self.creating(key);
        let stamp = self.stamp();
        self.shard(h).put(h, key, value, expire_at, stamp);
        if created {
            self.db.created(key);
        }
    }

    /// The fault of a write that stores a whole value: the old one is read only when
    /// the new one keeps its TTL. True: a cold entry was dropped unread.
    fn fault_replacing(&mut self, h: u64, key: &[u8], ttl: Ttl) -> bool {
        if matches!(ttl, Ttl::Keep) {
            self.fault_w(h, key);
            return false;
        }
        self.fault_replace(h, key)
    }

    fn resolve_ttl(&mut self, key: &[u8], ttl: Ttl) -> Option<u64> {
        match ttl {
            Ttl::Clear => None,
            Ttl::At(at) => Some(at),
            Ttl::Keep => self.peek(key).and_then(|e| e.expire_at()),
        }
    }

    /// The string value for editing in place (APPEND, SETRANGE, SETBIT...). The entry moves
    /// to its growable form, so repeated edits are amortized.
    pub fn str_mut(&mut self, key: &[u8]) -> Result<Option<&mut Vec<u8>>, WrongType> {
        self.fault_w(hash(key), key);
        let (h, found) = self.live(key);
        if !found {
            return Ok(None);
        }
        let stamp = self.stamp();
        let shard = self.shard(h);
        // The block form first (a change of size accounted by itself), then the edit.
        if shard.block_mut(h, key).is_none() {
            return Ok(None);
        }
        if shard.mark_dirty(h, key) {
            self.edited.set(true);
        }
        let shard = self.shard(h);
        let Some(slot) = shard.block_mut(h, key) else {
            return Ok(None);
        };
        slot.touch(stamp.touched(slot.lru()));
        if slot.view().kind() != crate::Kind::String {
            return Err(WrongType);
        }
        match &mut slot.obj_mut().value {
            Value::Str(s) => Ok(Some(s)),
            _ => Err(WrongType),
        }
    }

    /// A collection for editing in place: `Ok(None)` when the key is missing, WRONGTYPE
    /// when it holds a string. The caller matches the variant it wants (and answers
    /// WRONGTYPE for the others); the type modules add typed shortcuts (`hash_mut`...).
    pub fn collection_mut(&mut self, key: &[u8]) -> Result<Option<&mut Value>, WrongType> {
        self.fault_w(hash(key), key);
        let h = hash(key);
        // As in `get_hashed`: only a shard with keys that expire needs `live`'s probe.
        if self.shard(h).volatile != 0 && !self.live(key).1 {
            return Ok(None);
        }
        let stamp = self.stamp();
        if self.shard(h).mark_dirty(h, key) {
            self.edited.set(true);
        }
        let slot = match self.shard(h).find_mut(h, key) {
            None => return Ok(None),
            Some(FoundMut::Inline(_)) => return Err(WrongType),
            Some(FoundMut::Block(slot)) => slot,
        };
        match slot.obj_if_mut() {
            None => Err(WrongType),
            Some(o) => {
                o.set_lru(stamp.touched(o.lru()));
                match o.value {
                    Value::Str(_) => Err(WrongType),
                    _ => Ok(Some(&mut o.value)),
                }
            }
        }
    }

    /// `collection_mut`, with the value `make` builds stored first when the key is missing
    /// (the caller must not leave it empty). One lookup when the key exists.
    pub fn collection_mut_or_create(
        &mut self,
        key: &[u8],
        make: impl FnOnce() -> Value,
    ) -> Result<&mut Value, WrongType> {
        if let Some(v) = self.collection_mut(key)? {
            let v: *mut Value = v;
            // SAFETY: `v` borrows `self` and is returned at once. Today's borrow checker
            // would keep that borrow alive on the path below as well (rust-lang/rust#54663,
            // which Polonius accepts), where `self` is used again only when there was no `v`.
            return Ok(unsafe { &mut *v });
        }
        self.set_value(key, make(), Ttl::Clear);
        self.collection_mut(key)?.ok_or(WrongType)
    }

    /// Deletes a key; true if it existed (and had not expired). A cold key goes unread.
    pub fn remove(&mut self, key: &[u8]) -> bool {
        self.delete(key).0
    }

    /// Deletes a key (UNLINK): whether it existed, and its entry when it was in RAM, for
    /// the caller to free as `unlink`'s. A cold key goes unread (`Db::fault_replace`):
    /// there is nothing in RAM to free for it.
    pub fn delete(&mut self, key: &[u8]) -> (bool, Option<Unlinked>) {
        let h = hash(key);
        if self.fault_replace(h, key) {
            return (true, None);
        }
        let gone = self.unlink_faulted(h, key);
        (gone.is_some(), gone)
    }

    /// Deletes a key and hands back its entry (UNLINK), for the caller to free once the
    /// shard is unlocked, or on another thread when it is large.
    pub fn unlink(&mut self, key: &[u8]) -> Option<Unlinked> {
        let h = hash(key);
        self.fault_w(h, key);
        self.unlink_faulted(h, key)
    }

    /// `unlink` once the key's fault is done (`h`: its hash).
    fn unlink_faulted(&mut self, h: u64, key: &[u8]) -> Option<Unlinked> {
        let (h, found) = self.live_hashed(h, key);
        if !found {
            return None;
        }
        self.shard(h).remove(h, key).map(Unlinked)
    }

    /// Removes and returns an entry (RENAME, MOVE).
    pub fn take(&mut self, key: &[u8]) -> Option<Owned> {
        let Unlinked(entry) = self.unlink(key)?;
        let view = entry.view();
        let (expire_at, raw) = (view.expire_at(), view.is_raw_str());
        Some(Owned {
            value: entry.into_value(),
            expire_at,
            raw,
        })
    }

    /// A copy of an entry (COPY).
    pub fn clone_owned(&mut self, key: &[u8]) -> Option<Owned> {
        let (h, found) = self.live(key);
        if !found {
            return None;
        }
        Some(self.shard(h).find(h, key)?.to_owned_value())
    }

    /// Inserts an entry lifted out by `take` or `clone_owned`, replacing any existing one;
    /// a string keeps its form ("raw" stays raw).
    pub fn put_owned(&mut self, key: &[u8], owned: Owned) {
        let h = hash(key);
        let created = !self.fault_replace(h, key) && self.creating(key);
        let stamp = self.stamp();
        let shard = self.shard(h);
        if owned.raw {
            shard.put_general(h, key, owned.value, owned.expire_at, stamp);
        } else {
            shard.put(h, key, owned.value, owned.expire_at, stamp);
        }
        if created {
            self.db.created(key);
        }
    }

    /// Sets an existing entry's LRU stamp (a loaded or restored key's idle time); false if
    /// there is no such key.
    pub fn set_lru(&mut self, key: &[u8], lru: u32) -> bool {
        let (h, found) = self.live(key);
        if found {
            self.shard(h).set_access(h, key, lru);
        }
        found
    }

    /// The entry as stored, without expiring it first (DEBUG looks at keys whose time has
    /// passed as they are).
    pub fn peek_raw(&mut self, key: &[u8]) -> Option<EntryRef<'_>> {
        self.fault(hash(key), key);
        let h = hash(key);
        self.shard(h).find(h, key)
    }

    /// The entry's expiry as stored, without expiring it first (WATCH needs to know that a
    /// key has expired before anything removes it). None: no entry at all.
    pub fn peek_raw_expire(&mut self, key: &[u8]) -> Option<Option<u64>> {
        self.fault(hash(key), key);
        let h = hash(key);
        self.shard(h).find(h, key).map(|s| s.expire_at())
    }

    /// None: no such key. Some(None): the key has no expiry.
    pub fn expire_at(&mut self, key: &[u8]) -> Option<Option<u64>> {
        self.peek(key).map(|e| e.expire_at())
    }

    /// Sets or clears an existing key's expiry; false if there is no such key.
    /// Like Redis's write lookups, this refreshes the key's access time.
    pub fn set_expire(&mut self, key: &[u8], expire_at: Option<u64>) -> bool {
        self.fault_w(hash(key), key);
        let (h, found) = self.live(key);
        let stamp = self.stamp();
        let shard = self.shard(h);
        if !(found && shard.set_expire(h, key, expire_at)) {
            return false;
        }
        shard.touch(h, key, stamp);
        true
    }
}

impl Drop for Locked<'_> {
    /// Collections edited in place through this guard are measured again for the embedded
    /// table's memory accounting (`crate::ledger`); without it, one check.
    #[inline(always)]
    fn drop(&mut self) {
        if self.edited.get() {
            self.settle_edits();
        }
    }
}

impl Locked<'_> {
    #[cold]
    #[inline(never)]
    fn settle_edits(&mut self) {
        match &mut self.guards {
            Guards::One(_, g) => g.settle_all(),
            Guards::Many(v) => v.iter_mut().for_each(|(_, g)| g.settle_all()),
        }
    }
}

#[cold]
fn not_locked() -> ! {
    // A command touched a key it did not declare when locking: a bug in that command.
    panic!("strata-engine: key accessed without locking its shard")
}

/// An entry UNLINK took out of the table; dropping it frees it.
pub struct Unlinked(pub(crate) Removed);

impl Unlinked {
    /// The bytes the entry takes (`crate::memory::entry_bytes`, collections estimated
    /// from five elements, as MEMORY USAGE by default).
    pub fn memory_usage(&self) -> usize {
        crate::memory::entry_bytes(&self.0.view(), 5)
    }

    /// About how many allocations freeing it takes, as Redis's lazyfreeGetFreeEffort
    /// counts them: 1 for a string or a collection in a compact form, else its element
    /// count (a list's node count).
    pub fn free_effort(&self) -> usize {
        let Some(value) = self.0.view().value() else {
            return 1; // a compact string
        };
        let compact = |enc: &str| matches!(enc, "listpack" | "intset");
        match value {
            Value::Str(_) => 1,
            Value::Hash(h) if compact(h.encoding()) => 1,
            Value::Set(s) if compact(s.encoding()) => 1,
            Value::ZSet(z) if compact(z.encoding()) => 1,
            Value::List(l) if compact(l.encoding()) => 1,
            Value::Hash(h) => h.len(),
            Value::Set(s) => s.len(),
            Value::ZSet(z) => z.len(),
            Value::List(l) => l.node_count(),
            Value::Stream(s) => s.free_effort(),
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::Table;

    /// UNLINK's effort counts what freeing takes: one allocation for a string or a compact
    /// collection, the elements of a scalable one, a list's nodes.
    #[test]
    fn free_effort_counts_allocations_as_redis_does() {
        let t = Table::new();
        let db = t.db();
        let effort = |key: &[u8]| db.lock1(key).unlink(key).map(|u| u.free_effort());
        t.set(b"s", &[7u8; 1000]);
        assert_eq!(effort(b"s"), Some(1));
        assert_eq!(effort(b"s"), None, "unlinked once");
        let fields = |n: usize| {
            t.with_hash_mut(b"h", |h, enc| {
                for i in 0..n {
                    h.set(format!("f{i}").as_bytes(), b"v", enc);
                }
            })
            .unwrap();
        };
        fields(10);
        assert_eq!(effort(b"h"), Some(1), "a listpack is one allocation");
        fields(1000);
        assert_eq!(effort(b"h"), Some(1000));
        t.with_set_mut(b"set", |s, enc| {
            for i in 0..600 {
                s.add(format!("m{i}").as_bytes(), enc);
            }
        })
        .unwrap();
        assert_eq!(effort(b"set"), Some(600));
        let enc = t.encodings().list_size();
        db.lock1(b"l")
            .list_mut_or_create(b"l", enc)
            .map(|l| (0..100_000).for_each(|i| l.push(false, format!("{i:08}").as_bytes())))
            .unwrap();
        let nodes = effort(b"l").unwrap();
        assert!(
            (50..=400).contains(&nodes),
            "{nodes} nodes for 100k elements"
        );
    }
}
