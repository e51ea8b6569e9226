//! The engine as a library: [`Table`], a concurrent in-process key-value table (think
//! Erlang's ETS, or a `HashMap` behind many locks) with Redis's string semantics, atomic
//! counters, compare-and-swap, expiry, scanning and the collection types the server uses.
//!
//! A `Table` is one database of the server's [`Keyspace`]: keys are spread over many shards
//! (1024 by default), each a hash table behind its own short-held lock, so threads working
//! on different keys almost never wait for each other. Every method is atomic with respect
//! to the key(s) it touches; [`Table::transaction`] makes several keys change together.
//!
//! ```
//! use std::sync::Arc;
//! use strata_engine::Table;
//!
//! let table = Arc::new(Table::new());
//! let workers: Vec<_> = (0..4)
//!     .map(|_| {
//!         let t = Arc::clone(&table);
//!         std::thread::spawn(move || {
//!             for _ in 0..1000 {
//!                 t.incr(b"hits", 1).unwrap();
//!             }
//!         })
//!     })
//!     .collect();
//! for w in workers {
//!     w.join().unwrap();
//! }
//! assert_eq!(table.get(b"hits").as_deref(), Some(&b"4000"[..]));
//! ```

use crate::keyspace::{Db, Keyspace, ScanFilter};
use crate::locked::{Locked, Ttl, WrongType};
use crate::types::{Encodings, HashValue, SetValue};
use crate::Kind;
use std::fmt;
use std::time::Duration;

/// Shard bits of [`Table::new`]: 2^10 = 1024 shards, the server's default.
pub const DEFAULT_SHARD_BITS: u32 = 10;

/// Why an operation on a [`Table`] failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Error {
    /// The key holds a value of another type (a collection where a string was expected,
    /// or the reverse): Redis's WRONGTYPE.
    WrongType,
    /// [`Table::incr`] on a string that is not the canonical decimal text of an `i64`.
    NotInteger,
    /// [`Table::incr`] would leave the `i64` range.
    Overflow,
    /// The table is over its memory budget and nothing can be evicted (see
    /// [`Table::set_memory_budget`]).
    OutOfMemory,
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Error::WrongType => "WRONGTYPE Operation against a key holding the wrong kind of value",
            Error::NotInteger => "ERR value is not an integer or out of range",
            Error::Overflow => "ERR increment or decrement would overflow",
            Error::OutOfMemory => {
                "OOM the table's memory budget is used up and nothing can be evicted"
            }
        })
    }
}

impl std::error::Error for Error {}

impl From<WrongType> for Error {
    fn from(_: WrongType) -> Self {
        Error::WrongType
    }
}

/// A concurrent in-process table of byte-string keys. `Table` is `Send + Sync`: share it
/// between threads with an `Arc` (or a `&'static`, or scoped threads).
///
/// Values are byte strings, or collections (hashes, sets) reached through the `with_*`
/// methods. String reads ([`get`](Table::get), [`get_with`](Table::get_with),
/// [`contains`](Table::contains)) do not update the entry's LRU access time, so a read
/// writes nothing but the shard's hit counter, which shares the cache line the shard's
/// lock already owns.
///
/// Expired keys disappear at once for every reader; their memory is reclaimed when they
/// are next touched or by [`purge_expired`](Table::purge_expired).
///
/// ```
/// use strata_engine::Table;
///
/// let t = Table::new();
/// t.set(b"user:1", b"ada");
/// assert_eq!(t.get(b"user:1"), Some(b"ada".to_vec()));
/// assert!(t.delete(b"user:1"));
/// assert!(!t.contains(b"user:1"));
/// ```
pub struct Table {
    pub(crate) ks: Keyspace,
    pub(crate) budget: crate::embedded_budget::Budgeted,
}

impl Default for Table {
    fn default() -> Self {
        Table::new()
    }
}

impl fmt::Debug for Table {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Table")
            .field("shards", &self.db().shard_count())
            .field("len", &self.len())
            .finish()
    }
}

/// Milliseconds of a duration, saturating.
fn ms(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

impl Table {
    /// An empty table of 1024 shards (see [`DEFAULT_SHARD_BITS`]).
    ///
    /// ```
    /// let t = strata_engine::Table::new();
    /// assert!(t.is_empty());
    /// ```
    pub fn new() -> Table {
        Table::with_shards(DEFAULT_SHARD_BITS)
    }

    /// An empty table of 2^`bits` shards. More shards mean fewer collisions between
    /// threads on different keys; a few times the thread count is plenty, and each empty
    /// shard costs about 100 bytes.
    ///
    /// ```
    /// let t = strata_engine::Table::with_shards(4); // 16 shards
    /// t.set(b"k", b"v");
    /// assert_eq!(t.len(), 1);
    /// ```
    pub fn with_shards(bits: u32) -> Table {
        Table {
            ks: Keyspace::new(1, bits),
            budget: Default::default(),
        }
    }

    /// The underlying database, for the engine's full lock-level API ([`Db::lock1`],
    /// [`Db::lock`], [`Locked`]). Reads through it touch LRU times unless the guard is made
    /// with [`Locked::no_touch`].
    ///
    /// ```
    /// let t = strata_engine::Table::with_shards(2);
    /// assert_eq!(t.db().shard_count(), 4);
    /// ```
    pub fn db(&self) -> &Db {
        self.ks.db(0)
    }

    /// The collection encoding thresholds (Redis's `hash-max-listpack-entries`...), which
    /// the `with_*_mut` methods pass to their closures. They may be changed at run time.
    pub fn encodings(&self) -> &Encodings {
        &self.ks.encodings
    }

    /// A read's lock: it updates access bits only under an LRU or LFU budget.
    fn read(&self, key: &[u8]) -> Locked<'_> {
        if self.ks.tiering() {
            self.room_for_read();
        }
        let touch = self.budget.touch.load(std::sync::atomic::Ordering::Relaxed);
        self.db().lock1(key).no_touch(!touch)
    }

    /// With a cold store, a read may bring an entry back into RAM: as before a write, the
    /// table first moves entries out until it is within its budget. Out of line: the
    /// lookups of a table without a store stay as short as they were.
    #[cold]
    #[inline(never)]
    fn room_for_read(&self) {
        let _ = self.make_room();
    }

    /// A write's lock, after making room under the memory budget (if any). The infallible
    /// writes store even when no room could be made.
    fn write(&self, key: &[u8]) -> Locked<'_> {
        let _ = self.make_room();
        self.db().lock1(key)
    }

    /// `write`, failing when no room could be made.
    fn try_write(&self, key: &[u8]) -> Result<Locked<'_>, Error> {
        self.make_room()?;
        Ok(self.db().lock1(key))
    }

    /// A copy of the string at `key`; None when the key is missing, expired, or holds a
    /// collection (see [`kind`](Table::kind)). Does not update the LRU time.
    ///
    /// ```
    /// let t = strata_engine::Table::new();
    /// assert_eq!(t.get(b"k"), None);
    /// t.set(b"k", b"v");
    /// assert_eq!(t.get(b"k"), Some(b"v".to_vec()));
    /// ```
    pub fn get(&self, key: &[u8]) -> Option<Vec<u8>> {
        self.get_with(key, <[u8]>::to_vec)
    }

    /// Runs `f` on the string at `key` without copying it, under the key's shard lock
    /// (keep `f` short, and do not call back into the table from it: the shard is locked).
    /// None when the key is missing, expired, or holds a collection.
    ///
    /// ```
    /// let t = strata_engine::Table::new();
    /// t.set(b"greeting", b"hello world");
    /// assert_eq!(t.get_with(b"greeting", |v| v.len()), Some(11));
    /// ```
    pub fn get_with<R>(&self, key: &[u8], f: impl FnOnce(&[u8]) -> R) -> Option<R> {
        if self.ks.tiering() {
            self.room_for_read();
        }
        let touch = self.budget.touch.load(std::sync::atomic::Ordering::Relaxed);
        self.db().read1(key, touch, |e| e?.as_str().map(f))
    }

    /// True when `key` exists (any type) and has not expired.
    ///
    /// ```
    /// let t = strata_engine::Table::new();
    /// t.set(b"k", b"");
    /// assert!(t.contains(b"k"));
    /// assert!(!t.contains(b"other"));
    /// ```
    pub fn contains(&self, key: &[u8]) -> bool {
        self.read(key).contains(key)
    }

    /// The type of the value at `key`, or None when there is no such key.
    ///
    /// ```
    /// use strata_engine::{Kind, Table};
    /// let t = Table::new();
    /// t.set(b"s", b"1");
    /// t.with_hash_mut(b"h", |h, enc| h.set(b"f", b"v", enc)).unwrap();
    /// assert_eq!(t.kind(b"s"), Some(Kind::String));
    /// assert_eq!(t.kind(b"h"), Some(Kind::Hash));
    /// assert_eq!(t.kind(b"none"), None);
    /// ```
    pub fn kind(&self, key: &[u8]) -> Option<Kind> {
        self.read(key).peek(key).map(|e| e.kind())
    }

    /// Stores a string, replacing any value of any type and clearing any expiry (Redis's
    /// SET).
    ///
    /// ```
    /// let t = strata_engine::Table::new();
    /// t.set(b"k", b"1");
    /// t.set(b"k", b"2");
    /// assert_eq!(t.get(b"k"), Some(b"2".to_vec()));
    /// ```
    pub fn set(&self, key: &[u8], value: &[u8]) {
        let _ = self.make_room();
        self.db().set_str1(key, value);
    }

    /// Stores a string that expires after `ttl` (Redis's SET PX). A zero `ttl` stores a
    /// key that is already expired.
    ///
    /// ```
    /// use std::time::Duration;
    /// let t = strata_engine::Table::new();
    /// t.set_with_ttl(b"session", b"abc", Duration::from_secs(60));
    /// let left = t.ttl(b"session").unwrap().unwrap();
    /// assert!(left <= Duration::from_secs(60) && left > Duration::from_secs(50));
    /// ```
    pub fn set_with_ttl(&self, key: &[u8], value: &[u8], ttl: Duration) {
        let mut l = self.write(key);
        let at = l.now().saturating_add(ms(ttl));
        l.set_str(key, value, Ttl::At(at));
    }

    /// Deletes `key` (any type); true if it existed and had not expired.
    ///
    /// ```
    /// let t = strata_engine::Table::new();
    /// t.set(b"k", b"v");
    /// assert!(t.delete(b"k"));
    /// assert!(!t.delete(b"k"));
    /// ```
    pub fn delete(&self, key: &[u8]) -> bool {
        self.db().lock1(key).remove(key)
    }

    /// Adds `by` to the integer stored as a string at `key` and returns the new value,
    /// atomically (Redis's INCRBY): a missing key counts as 0, the key's expiry is kept.
    /// [`Error::NotInteger`] if the string is not the canonical decimal text of an `i64`,
    /// [`Error::Overflow`] if the sum leaves the `i64` range, [`Error::WrongType`] for a
    /// collection; the value is unchanged on error.
    ///
    /// ```
    /// use strata_engine::{embedded::Error, Table};
    /// let t = Table::new();
    /// assert_eq!(t.incr(b"n", 5), Ok(5));
    /// assert_eq!(t.incr(b"n", -7), Ok(-2));
    /// t.set(b"s", b"abc");
    /// assert_eq!(t.incr(b"s", 1), Err(Error::NotInteger));
    /// t.set(b"max", i64::MAX.to_string().as_bytes());
    /// assert_eq!(t.incr(b"max", 1), Err(Error::Overflow));
    /// ```
    pub fn incr(&self, key: &[u8], by: i64) -> Result<i64, Error> {
        self.try_write(key)?.incr_by(key, by)
    }

    /// Atomically replaces the string at `key` with `new` if it currently equals
    /// `expected`; true if it did. `None` as `expected` means "the key is absent", `None` as
    /// `new` deletes the key. A key holding a collection never matches. A replaced key
    /// keeps its expiry; a created one has none.
    ///
    /// ```
    /// let t = strata_engine::Table::new();
    /// assert!(t.compare_and_swap(b"lock", None, Some(b"owner-1"))); // acquire
    /// assert!(!t.compare_and_swap(b"lock", None, Some(b"owner-2"))); // already held
    /// assert!(!t.compare_and_swap(b"lock", Some(b"owner-2"), None)); // not the owner
    /// assert!(t.compare_and_swap(b"lock", Some(b"owner-1"), None)); // release
    /// assert!(!t.contains(b"lock"));
    /// ```
    pub fn compare_and_swap(
        &self,
        key: &[u8],
        expected: Option<&[u8]>,
        new: Option<&[u8]>,
    ) -> bool {
        let mut l = self.write(key);
        let matches = match (l.peek(key), expected) {
            (None, None) => true,
            (Some(e), Some(want)) => e.as_str() == Some(want),
            _ => false,
        };
        if !matches {
            return false;
        }
        match new {
            Some(v) => l.set_str(key, v, Ttl::Keep),
            None => {
                l.remove(key);
            }
        }
        true
    }

    /// Atomically replaces the string at `key` with what `f` returns for its current value
    /// (None when absent): `Some(v)` stores `v` (keeping any expiry), `None` deletes the key.
    /// Returns what `f` returned. [`Error::WrongType`] (and `f` is not called) if the key
    /// holds a collection. `f` runs under the shard lock: keep it short and do not call
    /// back into the table.
    ///
    /// ```
    /// let t = strata_engine::Table::new();
    /// let append = |old: Option<&[u8]>| {
    ///     let mut v = old.unwrap_or_default().to_vec();
    ///     v.extend_from_slice(b"!");
    ///     Some(v)
    /// };
    /// t.update(b"k", append).unwrap();
    /// t.update(b"k", append).unwrap();
    /// assert_eq!(t.get(b"k"), Some(b"!!".to_vec()));
    /// ```
    pub fn update(
        &self,
        key: &[u8],
        f: impl FnOnce(Option<&[u8]>) -> Option<Vec<u8>>,
    ) -> Result<Option<Vec<u8>>, Error> {
        let mut l = self.try_write(key)?;
        let new = match l.peek(key) {
            None => f(None),
            Some(e) => f(Some(e.as_str().ok_or(Error::WrongType)?)),
        };
        match &new {
            Some(v) => l.set_str(key, v, Ttl::Keep),
            None => {
                l.remove(key);
            }
        }
        Ok(new)
    }

    /// Makes an existing key expire after `ttl` (Redis's PEXPIRE); false if there is no
    /// such key. A zero `ttl` deletes the key.
    ///
    /// ```
    /// use std::time::Duration;
    /// let t = strata_engine::Table::new();
    /// assert!(!t.expire(b"k", Duration::from_secs(1)));
    /// t.set(b"k", b"v");
    /// assert!(t.expire(b"k", Duration::ZERO));
    /// assert!(!t.contains(b"k"));
    /// ```
    pub fn expire(&self, key: &[u8], ttl: Duration) -> bool {
        let mut l = self.write(key);
        let at = l.now().saturating_add(ms(ttl));
        if ttl.is_zero() {
            return l.remove(key);
        }
        l.set_expire(key, Some(at))
    }

    /// Removes the expiry of `key` (Redis's PERSIST); true if the key existed and had one.
    ///
    /// ```
    /// use std::time::Duration;
    /// let t = strata_engine::Table::new();
    /// t.set_with_ttl(b"k", b"v", Duration::from_secs(10));
    /// assert!(t.persist(b"k"));
    /// assert_eq!(t.ttl(b"k"), Some(None));
    /// assert!(!t.persist(b"k"));
    /// ```
    pub fn persist(&self, key: &[u8]) -> bool {
        let mut l = self.write(key);
        match l.expire_at(key) {
            Some(Some(_)) => l.set_expire(key, None),
            _ => false,
        }
    }

    /// The time left before `key` expires: None when there is no such key, `Some(None)`
    /// when it never expires.
    ///
    /// ```
    /// let t = strata_engine::Table::new();
    /// assert_eq!(t.ttl(b"k"), None);
    /// t.set(b"k", b"v");
    /// assert_eq!(t.ttl(b"k"), Some(None));
    /// ```
    pub fn ttl(&self, key: &[u8]) -> Option<Option<Duration>> {
        let mut l = self.read(key);
        let now = l.now();
        l.expire_at(key)
            .map(|at| at.map(|at| Duration::from_millis(at.saturating_sub(now))))
    }

    /// Number of keys, counting expired keys not yet reclaimed (as Redis's DBSIZE; call
    /// [`purge_expired`](Table::purge_expired) first for an exact live count). Locks each
    /// shard in turn, so it is O(shards) and not a snapshot.
    ///
    /// ```
    /// let t = strata_engine::Table::new();
    /// t.set(b"a", b"1");
    /// t.set(b"b", b"2");
    /// assert_eq!(t.len(), 2);
    /// ```
    pub fn len(&self) -> usize {
        self.db().len()
    }

    /// True when the table holds no keys (expired ones included, as [`len`](Table::len)).
    pub fn is_empty(&self) -> bool {
        self.db().is_empty()
    }

    /// Removes every key.
    ///
    /// ```
    /// let t = strata_engine::Table::new();
    /// t.set(b"a", b"1");
    /// t.clear();
    /// assert!(t.is_empty());
    /// ```
    pub fn clear(&self) {
        drop(self.db().flush());
    }

    /// Reclaims every expired key now (otherwise reclaimed lazily when touched); returns
    /// how many were removed.
    ///
    /// ```
    /// use std::time::Duration;
    /// let t = strata_engine::Table::new();
    /// t.set_with_ttl(b"k", b"v", Duration::ZERO);
    /// assert_eq!(t.len(), 1); // expired, not yet reclaimed
    /// assert_eq!(t.purge_expired(), 1);
    /// assert_eq!(t.len(), 0);
    /// ```
    pub fn purge_expired(&self) -> usize {
        let mut n = self.ks.purge_all_expired();
        // The cold pass visits 16 shards a step and takes up to 256 keys a shard: rounds
        // of the shards until one finds none.
        while self.ks.tiering() {
            let round: usize = (0..self.db().shard_count().div_ceil(16))
                .map(|_| self.ks.cold_expire_step())
                .sum();
            if round == 0 {
                break;
            }
            n += round;
        }
        n
    }

    /// One step of a full scan (Redis's SCAN): start with cursor 0, pass the returned
    /// cursor back until it is 0. Each step returns whole shards until about `count` keys
    /// were visited. Every key present for the whole scan is returned exactly once,
    /// whatever is written meanwhile; keys added or removed during it may or may not be.
    ///
    /// ```
    /// let t = strata_engine::Table::new();
    /// for i in 0..100 {
    ///     t.set(format!("k{i}").as_bytes(), b"v");
    /// }
    /// let (mut cursor, mut all) = (0, Vec::new());
    /// loop {
    ///     let (next, mut keys) = t.scan(cursor, 10);
    ///     all.append(&mut keys);
    ///     if next == 0 {
    ///         break;
    ///     }
    ///     cursor = next;
    /// }
    /// assert_eq!(all.len(), 100);
    /// ```
    pub fn scan(&self, cursor: u64, count: usize) -> (u64, Vec<Vec<u8>>) {
        self.db().scan(cursor, count, ScanFilter::default())
    }

    /// An iterator over all live keys, with [`scan`](Table::scan)'s guarantees (it locks
    /// one shard at a time, never the whole table).
    ///
    /// ```
    /// let t = strata_engine::Table::new();
    /// t.set(b"a", b"1");
    /// t.set(b"b", b"2");
    /// let mut keys: Vec<_> = t.keys().collect();
    /// keys.sort();
    /// assert_eq!(keys, vec![b"a".to_vec(), b"b".to_vec()]);
    /// ```
    pub fn keys(&self) -> Keys<'_> {
        Keys {
            table: self,
            cursor: 0,
            buf: Vec::new(),
            done: false,
        }
    }

    /// Runs `f` on the hash at `key` (a read: no LRU update). `Ok(None)` when the key is
    /// missing, [`Error::WrongType`] when it holds another type.
    ///
    /// ```
    /// let t = strata_engine::Table::new();
    /// t.with_hash_mut(b"user", |h, enc| h.set(b"name", b"ada", enc)).unwrap();
    /// let name = t.with_hash(b"user", |h| h.get(b"name").map(<[u8]>::to_vec));
    /// assert_eq!(name, Ok(Some(Some(b"ada".to_vec()))));
    /// assert_eq!(t.with_hash(b"nobody", |h| h.len()), Ok(None));
    /// ```
    pub fn with_hash<R>(
        &self,
        key: &[u8],
        f: impl FnOnce(&HashValue) -> R,
    ) -> Result<Option<R>, Error> {
        let mut l = self.read(key);
        Ok(l.get_hash(key)?.map(f))
    }

    /// Runs `f` on the hash at `key` for editing, creating an empty one when the key is
    /// missing; a hash `f` leaves empty is deleted (Redis never keeps empty collections).
    /// `f` gets the table's [`Encodings`], which `HashValue::set` needs.
    /// [`Error::WrongType`] when the key holds another type.
    ///
    /// ```
    /// let t = strata_engine::Table::new();
    /// let added = t.with_hash_mut(b"h", |h, enc| h.set(b"a", b"1", enc) as u8 + h.set(b"b", b"2", enc) as u8);
    /// assert_eq!(added, Ok(0)); // `set` is true when it replaced an existing field
    /// assert_eq!(t.with_hash(b"h", |h| h.len()), Ok(Some(2)));
    /// t.with_hash_mut(b"h", |h, _| { h.remove(b"a"); h.remove(b"b"); }).unwrap();
    /// assert!(!t.contains(b"h"));
    /// ```
    pub fn with_hash_mut<R>(
        &self,
        key: &[u8],
        f: impl FnOnce(&mut HashValue, &Encodings) -> R,
    ) -> Result<R, Error> {
        let mut l = self.try_write(key)?;
        let h = l.hash_mut_or_create(key)?;
        let r = f(h, &self.ks.encodings);
        if h.is_empty() {
            l.remove(key);
        }
        Ok(r)
    }

    /// Runs `f` on the set at `key` (a read: no LRU update). `Ok(None)` when the key is
    /// missing, [`Error::WrongType`] when it holds another type.
    ///
    /// ```
    /// let t = strata_engine::Table::new();
    /// t.with_set_mut(b"tags", |s, enc| s.add(b"rust", enc)).unwrap();
    /// assert_eq!(t.with_set(b"tags", |s| s.contains(b"rust")), Ok(Some(true)));
    /// ```
    pub fn with_set<R>(
        &self,
        key: &[u8],
        f: impl FnOnce(&SetValue) -> R,
    ) -> Result<Option<R>, Error> {
        let mut l = self.read(key);
        Ok(l.get_set(key)?.map(f))
    }

    /// Runs `f` on the set at `key` for editing, creating an empty one when the key is
    /// missing; a set `f` leaves empty is deleted. [`Error::WrongType`] when the key holds
    /// another type.
    ///
    /// ```
    /// let t = strata_engine::Table::new();
    /// let added = t.with_set_mut(b"s", |s, enc| s.add(b"1", enc) && !s.add(b"1", enc));
    /// assert_eq!(added, Ok(true)); // `add` is true when the member was new
    /// assert_eq!(t.with_set(b"s", |s| s.len()), Ok(Some(1)));
    /// ```
    pub fn with_set_mut<R>(
        &self,
        key: &[u8],
        f: impl FnOnce(&mut SetValue, &Encodings) -> R,
    ) -> Result<R, Error> {
        let mut l = self.try_write(key)?;
        let s = l.set_mut_or_create(key, b"0")?;
        let r = f(s, &self.ks.encodings);
        if s.is_empty() {
            l.remove(key);
        }
        Ok(r)
    }

    /// Locks the shards of all `keys` (in ascending order, so concurrent transactions
    /// never deadlock) and runs `f` with the engine's [`Locked`] guard: everything `f` does
    /// to those keys is atomic with respect to every other thread. `f` may touch only the
    /// keys it declared (others panic), and must not call back into the table.
    ///
    /// ```
    /// use strata_engine::{Table, Ttl};
    /// let t = Table::new();
    /// t.set(b"alice", b"10");
    /// // Move the whole balance from alice to bob in one step.
    /// t.transaction(&["alice", "bob"], |l| {
    ///     let v = l.get_str(b"alice").unwrap().unwrap_or_default().to_vec();
    ///     l.remove(b"alice");
    ///     l.set_str(b"bob", &v, Ttl::Clear);
    /// });
    /// assert_eq!(t.get(b"bob"), Some(b"10".to_vec()));
    /// assert!(!t.contains(b"alice"));
    /// ```
    pub fn transaction<K: AsRef<[u8]>, R>(
        &self,
        keys: &[K],
        f: impl FnOnce(&mut Locked<'_>) -> R,
    ) -> R {
        let _ = self.make_room();
        let mut l = self.db().lock(keys);
        f(&mut l)
    }
}

/// Iterator over a [`Table`]'s keys, from [`Table::keys`]: fetches one shard at a time.
pub struct Keys<'a> {
    table: &'a Table,
    cursor: u64,
    buf: Vec<Vec<u8>>,
    done: bool,
}

impl Iterator for Keys<'_> {
    type Item = Vec<u8>;

    fn next(&mut self) -> Option<Vec<u8>> {
        loop {
            if let Some(k) = self.buf.pop() {
                return Some(k);
            }
            if self.done {
                return None;
            }
            let (next, keys) = self.table.scan(self.cursor, 1);
            self.buf = keys;
            self.cursor = next;
            self.done = next == 0;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::int::{fmt_i64, parse_i64};

    #[test]
    fn formats_and_parses_i64() {
        for n in [0, 1, -1, 9, 10, -10, i64::MAX, i64::MIN, 1234567890] {
            let mut b = [0u8; 20];
            let s = fmt_i64(n, &mut b);
            assert_eq!(s, n.to_string().as_bytes());
            assert_eq!(parse_i64(s), Some(n));
        }
        for bad in [
            &b""[..],
            b"-",
            b"+1",
            b"01",
            b"-0",
            b" 1",
            b"1 ",
            b"9223372036854775808",
        ] {
            assert_eq!(parse_i64(bad), None, "{:?}", bad);
        }
    }

    #[test]
    fn table_is_send_sync() {
        fn check<T: Send + Sync>() {}
        check::<Table>();
    }

    #[test]
    fn reads_do_not_touch_lru_writes_do() {
        let t = Table::with_shards(2);
        // Store the entry as if written long ago (LRU stamp of time 1000 ms).
        t.db().lock1_at(1000, b"k").set_str(b"k", b"v", Ttl::Clear);
        let lru_of = |t: &Table| t.db().lock1(b"k").peek(b"k").unwrap().lru();
        let old = lru_of(&t);
        assert_eq!(t.get(b"k"), Some(b"v".to_vec()));
        assert!(t.contains(b"k"));
        assert_eq!(
            lru_of(&t),
            old,
            "reads through Table must not update the LRU clock"
        );
        t.incr(b"n", 1).unwrap();
        t.set(b"k", b"w");
        assert_ne!(lru_of(&t), old);
    }
}
