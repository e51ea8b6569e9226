//! Databases and their shards, and the operations that span a whole database: counting,
//! flushing, SCAN, KEYS, RANDOMKEY, SWAPDB and the active expiry cycle.

use crate::access::{Access, Stamp};
use crate::clock;
use crate::entry::{EntryRef, Kind, Slot};
use crate::evict::Occupancy;
use crate::glob;
use crate::locked::{Guards, Locked};
use crate::shard::{hash, ShardData};
use hashbrown::HashTable;
use parking_lot::{Mutex, MutexGuard};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

/// Redis's default number of databases (SELECT 0..15).
pub const DB_COUNT: usize = 16;

/// Padded so two shards' locks never share a cache line.
#[repr(align(64))]
pub(crate) struct Shard(pub Mutex<ShardData>);

/// Called with (database index, key) for every key removed because it expired, lazily
/// or by the active cycle (the server publishes `expired` keyspace events from it). It runs
/// under the key's shard lock: it must not lock shards.
pub type ExpiredHook = Box<dyn Fn(usize, &[u8]) + Send + Sync>;

/// Called with (database index, key) for every key a store creates, while
/// `Keyspace::announce_created` is on (the server publishes `new` keyspace events from
/// it). Same rules as `ExpiredHook`: it runs under the key's shard lock.
pub type CreatedHook = Box<dyn Fn(usize, &[u8]) + Send + Sync>;

/// What every database shares: the hooks told of expired and created keys, and the
/// expiry freeze.
#[derive(Default)]
pub(crate) struct Hooks {
    expired: std::sync::OnceLock<ExpiredHook>,
    created: std::sync::OnceLock<CreatedHook>,
    /// Whether stores look up and announce the keys they create.
    announce_created: std::sync::atomic::AtomicBool,
    /// Until this Unix ms, expired keys stay in place (reading as missing): nothing is
    /// removed, lazily or actively (the server's CLIENT PAUSE keeps the data set still).
    frozen_until: AtomicU64,
    /// A replica's keys expire only when its primary's DEL arrives
    /// ([`Keyspace::set_keep_expired`]): while set, nothing is removed either.
    keep: std::sync::atomic::AtomicBool,
    /// The cold tier, when tiering is on (`crate::cold`), and where its expiry pass is.
    pub(crate) cold: std::sync::OnceLock<std::sync::Arc<dyn crate::cold::ColdStore>>,
    pub(crate) cold_cursor: AtomicUsize,
}

/// One logical database (SELECT n): a fixed, power-of-two number of shards.
pub struct Db {
    /// Made by the first access that needs them (`shards`): a database never used costs
    /// no shard, as Redis's empty databases cost next to nothing (16 × 1024 shards of 256
    /// bytes were 4 MB of an idle server's used_memory). Walks over a whole database
    /// (counting, SCAN, flushing, capturing) read `allocated`: one never used is empty.
    shards: std::sync::OnceLock<Box<[Shard]>>,
    /// A snapshot epoch that found this database's shards not made yet (`capture_chunk`):
    /// shards made later count as captured at it, as they were empty when it started.
    skipped_epoch: AtomicU64,
    owner: usize,
    mask: usize,
    index: usize,
    pub(crate) hooks: std::sync::Arc<Hooks>,
    /// The keyspace's access policy (what an access writes in an entry's access bits).
    pub(crate) access: std::sync::Arc<Access>,
    /// Which shards hold keys (with a TTL), for eviction's sampling (`crate::evict`).
    pub(crate) occupancy: std::sync::Arc<Occupancy>,
    /// Where active expiry's walk goes on: shard << 32 | bucket (`crate::expiry`).
    pub(crate) expire_cursor: AtomicU64,
}

/// What SCAN returns besides matching the cursor: an optional pattern and type.
#[derive(Default, Clone, Copy)]
pub struct ScanFilter<'p> {
    pub pattern: Option<&'p [u8]>,
    pub kind: Option<Kind>,
}

impl ScanFilter<'_> {
    fn accepts(&self, e: &EntryRef<'_>) -> bool {
        self.pattern
            .is_none_or(|p| glob::matches(p, e.key(), false))
            && self.kind.is_none_or(|k| e.kind() == k)
    }
}

/// One entry of a shard being captured: live, or as it was before a write saved it. With
/// tiering, a capture also says which live entries have a copy in the cold store (`Clean`)
/// and which are only there (`Cold`): a restart may keep the store (`crate::cold`).
pub enum Captured<'a> {
    Entry(EntryRef<'a>),
    Value(&'a [u8], &'a crate::value::Owned),
    Clean(EntryRef<'a>),
    Cold(&'a [u8], &'a crate::value::Owned),
}

/// What one `Db::capture_chunk` call did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Capture {
    /// The shard was captured at this epoch before the call.
    Already,
    /// Buckets remain: call again.
    More,
    /// This call captured the shard's last entries.
    Done,
}

/// Tables taken out of a flushed database; drop them wherever freeing is cheapest
/// (FLUSHALL ASYNC drops them on a background thread).
pub struct Flushed(#[allow(dead_code)] Vec<HashTable<Slot>>);

fn shard_bits(h: u64) -> u64 {
    h >> 32
}

/// What picks `key`'s shard in any database (its low bits, as many as the shard count
/// has): threads that split keys by it, the same way for all of them, never share a shard.
pub fn shard_pick(key: &[u8]) -> u64 {
    shard_bits(hash(key))
}

impl Db {
    fn new(
        index: usize,
        shard_bits: u32,
        hooks: &std::sync::Arc<Hooks>,
        access: &std::sync::Arc<Access>,
        owner: usize,
    ) -> Db {
        let n = 1usize << shard_bits;
        Db {
            shards: std::sync::OnceLock::new(),
            skipped_epoch: AtomicU64::new(0),
            owner,
            mask: n - 1,
            index,
            hooks: hooks.clone(),
            access: access.clone(),
            occupancy: std::sync::Arc::new(Occupancy::new(n)),
            expire_cursor: AtomicU64::new(0),
        }
    }

    /// This database's shards, made now if no access needed them before.
    #[inline]
    pub(crate) fn shards(&self) -> &[Shard] {
        match self.shards.get() {
            Some(s) => s,
            None => self.make_shards(),
        }
    }

    #[cold]
    fn make_shards(&self) -> &[Shard] {
        self.shards.get_or_init(|| {
            let captured = self.skipped_epoch.load(Ordering::SeqCst);
            (0..self.shard_count())
                .map(|i| {
                    Shard(Mutex::new(ShardData {
                        owner: self.owner,
                        index: i as u32,
                        occupancy: Some(self.occupancy.clone()),
                        captured,
                        ..Default::default()
                    }))
                })
                .collect()
        })
    }

    /// The shards if an access made them, else none: what a walk over the whole database
    /// reads, to which a database never used is empty.
    pub(crate) fn allocated(&self) -> &[Shard] {
        self.shards.get().map_or(&[], |s| s)
    }

    /// Whether an access made this database's shards (a walk may skip it otherwise: it
    /// has never held a key).
    pub fn is_allocated(&self) -> bool {
        self.shards.get().is_some()
    }

    /// The stamp of an access now (the coarse clock; see `Access::stamp_now`).
    pub(crate) fn stamp_now(&self) -> Stamp {
        self.access.stamp_now()
    }

    /// This database's number (SELECT n).
    pub fn index(&self) -> usize {
        self.index
    }

    /// Reports an expired key to the hook, if one is set.
    pub(crate) fn expired(&self, key: &[u8]) {
        if let Some(h) = self.hooks.expired.get() {
            h(self.index, key);
        }
    }

    /// Whether stores announce the keys they create (one relaxed load).
    #[inline]
    pub(crate) fn announcing(&self) -> bool {
        self.hooks.announce_created.load(Ordering::Relaxed)
    }

    /// Reports a created key to the hook, if one is set.
    pub(crate) fn created(&self, key: &[u8]) {
        if let Some(h) = self.hooks.created.get() {
            h(self.index, key);
        }
    }

    /// Whether expired keys may be removed at `now` (Unix ms): not while expiry is frozen.
    #[inline]
    pub(crate) fn may_expire(&self, now: u64) -> bool {
        now > self.hooks.frozen_until.load(Ordering::Relaxed)
            && !self.hooks.keep.load(Ordering::Relaxed)
    }

    /// The shard a key hash lands in. The table inside the shard uses the hash's low bits
    /// and top 7 bits, so shard selection takes bits from the middle.
    pub(crate) fn shard_index(&self, h: u64) -> usize {
        shard_bits(h) as usize & self.mask
    }

    pub(crate) fn shard_ref(&self, idx: usize) -> &Shard {
        &self.shards()[idx]
    }

    pub fn shard_count(&self) -> usize {
        self.mask + 1
    }

    /// Locks the shard of one key.
    pub fn lock1(&self, key: &[u8]) -> Locked<'_> {
        // 0: the clock is read only if the command needs it.
        self.lock1_at(0, key)
    }

    /// A read of one key that changes no access time unless `touch` (the embedded
    /// table's lookups): `f` gets the live entry or None, under the key's shard lock.
    ///
    /// The common case (no session or kept shard on this thread, no key with a TTL in the
    /// shard) takes the mutex directly and probes once. Measured: that short path lets the
    /// CPU overlap the cache misses of consecutive independent lookups, which the general
    /// `Locked` path does not (1M rows: 2x; docs/benchmarks.md, issue 7). Inlined, with the
    /// hash and the probe, into the caller's loop, it overlaps further: 1.25x at 1M and 10M
    /// rows (docs/benchmarks.md, "Short strings inline").
    #[inline]
    pub fn read1<R>(
        &self,
        key: &[u8],
        touch: bool,
        f: impl FnOnce(Option<EntryRef<'_>>) -> R,
    ) -> R {
        let h = hash(key);
        if let Some(mut g) = self.short_lock(h, false) {
            return f(g.read(h, key, touch.then(|| self.stamp_now())));
        }
        let idx = self.shard_index(h);
        let guard = self.shards()[idx].acquire();
        let mut l = Locked::new(self, Guards::One(idx, guard), 0).no_touch(!touch);
        f(l.get_hashed(h, key))
    }

    /// Stores a string with no expiry at `key` (the embedded table's `set`), as
    /// `lock1(key).set_str(key, value, Ttl::Clear)`. The common case (as `read1`'s: no
    /// session or kept shard on this thread, no key with a TTL in the shard) takes the mutex
    /// directly and hashes the key once, without the general path's lazy clock and guards.
    pub fn set_str1(&self, key: &[u8], value: &[u8]) {
        let h = hash(key);
        if let Some(mut g) = self.short_lock(h, true) {
            return g.put_str(h, key, value, None, self.stamp_now());
        }
        self.lock1(key)
            .set_str(key, value, crate::locked::Ttl::Clear);
    }

    /// The short path of `read1` and `set_str1`: the lock of the shard of hash `h`, taken
    /// directly, if this thread holds no shard (no session, nothing kept) and the shard has
    /// no key with a TTL (nothing to expire) and none in a cold store (for a `write`, no
    /// store copy either); None sends the caller to the general path.
    #[inline]
    fn short_lock(&self, h: u64, write: bool) -> Option<MutexGuard<'_, ShardData>> {
        if crate::session::thread_holds_shards() {
            return None;
        }
        let g = self.shards()[self.shard_index(h)].0.lock();
        // A shard with keys in a cold store takes the general path, which brings a key
        // back; a write also when keys in RAM have copies there (clean), which it drops.
        let stored = g.cold != 0 || (write && !g.clean.is_empty());
        (g.volatile == 0 && !stored).then_some(g)
    }

    /// A load is about to add about `keys` keys (an RDB file's RESIZEDB hint), or has
    /// ended (0): each shard's tables then grow straight to their share of them. Each
    /// shard's share is its even part plus three standard deviations of how a hash
    /// spreads keys, so few shards outgrow it.
    pub fn expect(&self, keys: usize) {
        let even = keys.div_ceil(self.shard_count());
        let share = if keys == 0 {
            0
        } else {
            even.saturating_add(3 * (even as f64).sqrt() as usize)
        };
        for s in self.shards() {
            s.0.lock().expected = u32::try_from(share).unwrap_or(u32::MAX);
        }
    }

    /// Starts bringing into the cache the table slots a lookup of `key` reads, for a caller
    /// that knows the key ahead of its lookup (a load's next keys, a pipeline's next
    /// request, a tracked read): the misses then overlap with the work done before the
    /// key's turn. Does nothing if the shard is locked.
    pub fn prefetch(&self, key: &[u8]) {
        let h = hash(key);
        if let Some(d) = self.shards()[self.shard_index(h)].0.try_lock() {
            d.prefetch_ahead(h);
        }
    }

    /// Starts bringing `key`'s shard itself (its lock and the fields a lookup reads) into
    /// the cache, without reading it: a caller that knows keys two ahead calls this for
    /// the farther one, so that `prefetch` of it, a step later, does not stall on the
    /// shard (a replica's runs of writes: that stall was 16% of its samples).
    pub fn prefetch_shard(&self, key: &[u8]) {
        let shard: *const Shard = &self.shards()[self.shard_index(hash(key))];
        let mut line = 0;
        while line < std::mem::size_of::<Shard>() {
            crate::entry::prefetch(shard.cast::<u8>().wrapping_add(line));
            line += 64;
        }
    }

    /// Locks the shards of all `keys`, in ascending shard order.
    pub fn lock<K: AsRef<[u8]>>(&self, keys: &[K]) -> Locked<'_> {
        self.lock_at(0, keys)
    }

    /// `lock1` for a command running at `now` (Unix ms): a server reads the clock once per
    /// command and every key it touches expires against that same instant.
    pub fn lock1_at(&self, now: u64, key: &[u8]) -> Locked<'_> {
        let idx = self.shard_index(hash(key));
        Locked::new(self, Guards::One(idx, self.shards()[idx].acquire()), now)
    }

    /// `lock` for a command running at `now` (Unix ms).
    pub fn lock_at<K: AsRef<[u8]>>(&self, now: u64, keys: &[K]) -> Locked<'_> {
        if keys.len() == 1 {
            return self.lock1_at(now, keys[0].as_ref());
        }
        Locked::new(
            self,
            Guards::Many(self.lock_indices(self.indices(keys))),
            now,
        )
    }

    fn indices<K: AsRef<[u8]>>(&self, keys: &[K]) -> Vec<usize> {
        let mut idx: Vec<usize> = keys
            .iter()
            .map(|k| self.shard_index(hash(k.as_ref())))
            .collect();
        idx.sort_unstable();
        idx.dedup();
        idx
    }

    fn lock_indices(&self, idx: Vec<usize>) -> Vec<(usize, crate::session::ShardGuard<'_>)> {
        let refs: Vec<&Shard> = idx.iter().map(|&i| &self.shards()[i]).collect();
        idx.into_iter()
            .zip(crate::session::acquire_all(&refs))
            .collect()
    }

    /// Captures shard `idx` for snapshot `epoch` in one go: `capture_chunk` with no limit.
    /// Returns whether it captured anything (false: captured at that epoch already).
    pub fn capture_shard(&self, idx: usize, epoch: u64, f: impl FnMut(Captured<'_>)) -> bool {
        self.capture_chunk(idx, epoch, usize::MAX, f) != Capture::Already
    }

    /// Captures the next `buckets` table buckets of shard `idx` (its inline table's, then
    /// its main table's: `ShardData::entry_at`) for snapshot `epoch`, under its lock,
    /// calling `f` with every entry as it was when the snapshot started (expired ones
    /// included); the last chunk also gives the entries writes saved aside. The lock is
    /// held for one chunk only, so clients wait for a chunk, not a whole shard.
    ///
    /// Between chunks the shard stays "not captured": a write first saves the key's entry
    /// unless its bucket was given already (`preserve`), so a string moving between the
    /// two tables is a write like any other. Buckets do not move unless a table rehashes;
    /// an insert that may rehash first saves every entry not given yet and ends the walk
    /// (`ShardData::end_capture_walk`). Inside a session holding the shard it is served
    /// from the session.
    pub fn capture_chunk(
        &self,
        idx: usize,
        epoch: u64,
        buckets: usize,
        mut f: impl FnMut(Captured<'_>),
    ) -> Capture {
        let Some(shards) = self.shards.get() else {
            // Never used: empty when the snapshot started, so captured whole by this call.
            // Shards made from now on count as captured (`make_shards`), unless they were
            // made meanwhile.
            self.skipped_epoch.fetch_max(epoch, Ordering::SeqCst);
            if self.shards.get().is_none() {
                return Capture::Done;
            }
            return self.capture_chunk(idx, epoch, buckets, f);
        };
        let mut g = shards[idx].acquire();
        if g.captured >= epoch {
            return Capture::Already;
        }
        let mut pre = g.pre.take();
        let p = crate::shard::PreImages::for_epoch(&mut pre, epoch);
        let end = p.cursor.saturating_add(buckets).min(g.positions());
        for i in p.cursor..end {
            if let Some(e) = g.entry_at(i) {
                if !p.map.contains_key(e.key()) {
                    if crate::cold::is_clean(&g, e.key()) {
                        f(Captured::Clean(e));
                    } else {
                        f(Captured::Entry(e));
                    }
                }
            }
        }
        p.cursor = p.cursor.max(end);
        if p.cursor < g.positions() {
            g.pre = pre;
            return Capture::More;
        }
        for (key, old) in p.map.iter() {
            if let Some(o) = old {
                f(Captured::Value(key, o));
            }
        }
        g.pre = pre;
        self.capture_cold(&g, idx, &mut f);
        g.pre = None;
        g.captured = epoch;
        Capture::Done
    }

    /// Before a write to `key` during snapshot `epoch`: if the key's shard is not captured
    /// yet, saves the key's entry as it is now (once per key), so the capture still sees the
    /// state at the snapshot's start.
    /// Costs one copy of the entry, not of the shard.
    pub fn preserve(&self, key: &[u8], epoch: u64) {
        let h = hash(key);
        let mut g = self.shards()[self.shard_index(h)].acquire();
        if g.captured >= epoch {
            return;
        }
        crate::shard::PreImages::for_epoch(&mut g.pre, epoch);
        // A cold key comes back first: its value is the one to keep (`crate::cold`).
        self.fault(&mut g, h, key, true);
        g.preserve(h, key);
    }

    /// Calls `f` with every entry, expired ones not yet collected and cold ones (tiering)
    /// included, one shard after another, each under its shard's lock (DEBUG DIGEST: `f`
    /// must not lock shards).
    pub fn for_each_entry(&self, mut f: impl FnMut(Captured<'_>)) {
        for (idx, s) in self.allocated().iter().enumerate() {
            let g = s.acquire();
            g.iter().for_each(|e| f(Captured::Entry(e)));
            self.each_cold(&g, idx, &mut |key, o| {
                f(Captured::Value(key, &o));
                true
            });
        }
    }

    /// Number of keys, including expired ones not yet collected (as Redis's DBSIZE).
    pub fn len(&self) -> usize {
        self.shard_iter().map(|g| g.len() + g.cold).sum()
    }

    pub fn is_empty(&self) -> bool {
        self.shard_iter().all(|g| g.len() + g.cold == 0)
    }

    /// Each shard in turn, locked.
    pub(crate) fn shard_iter(&self) -> impl Iterator<Item = crate::session::ShardGuard<'_>> {
        self.allocated().iter().map(|s| s.acquire())
    }

    /// Keys that carry an expiry (INFO keyspace `expires=`), cold ones included.
    pub fn volatile_len(&self) -> usize {
        self.shard_iter()
            .map(|g| g.volatile + g.cold_ttl.len())
            .sum()
    }

    /// (keyspace hits, misses, expired keys) counted in this database.
    pub fn stats(&self) -> (u64, u64, u64) {
        self.allocated().iter().fold((0, 0, 0), |(h, m, e), s| {
            let g = s.acquire();
            (h + g.hits, m + g.misses, e + g.expired)
        })
    }

    pub fn reset_stats(&self) {
        for s in self.allocated() {
            let mut g = s.acquire();
            g.hits = 0;
            g.misses = 0;
            g.expired = 0;
        }
    }

    /// Empties the database, returning its tables to be dropped by the caller.
    pub fn flush(&self) -> Flushed {
        if self.hooks.cold.get().is_none() {
            return Flushed(
                self.allocated()
                    .iter()
                    .map(|s| s.acquire().clear())
                    .collect(),
            );
        }
        // Every shard held while the cold entries go: none moves meanwhile.
        let mut held: Vec<_> = self.shard_iter().collect();
        self.clear_cold();
        Flushed(held.iter_mut().map(|g| g.clear()).collect())
    }

    /// One SCAN step. The cursor is a shard index: each call returns whole shards (at least
    /// one, until `count` keys are gathered), so every key present for the whole scan is
    /// returned exactly once, whatever is inserted or deleted meanwhile. Returns 0 when done.
    pub fn scan(&self, cursor: u64, count: usize, filter: ScanFilter<'_>) -> (u64, Vec<Vec<u8>>) {
        let now = clock::now_ms();
        let mut out = Vec::new();
        let mut idx = cursor as usize;
        let mut visited = 0usize;
        let expire = self.may_expire(now);
        let shards = self.allocated();
        while idx < shards.len() {
            let mut g = shards[idx].acquire();
            // Expired keys the scan meets go, as Redis's SCAN expires those that pass its
            // MATCH pattern (each removal is recorded as a DEL of its own).
            if expire {
                let pattern = filter.pattern;
                self.purge_expired_where(&mut g, now, |k| {
                    pattern.is_none_or(|p| glob::matches(p, k, false))
                });
            }
            visited += g.len() + g.cold;
            out.extend(
                g.iter()
                    .filter(|e| !e.is_expired(now) && filter.accepts(e))
                    .map(|e| e.key().to_vec()),
            );
            if let Some(wanted) = filter.kind {
                // The type is at the head of the record: only the records whose keys
                // match are read.
                let matches =
                    |key: &[u8]| filter.pattern.is_none_or(|p| glob::matches(p, key, false));
                self.each_cold_kind(&g, idx, &matches, &mut |key, kind, expire_at| {
                    if kind == wanted && expire_at.is_none_or(|at| at > now) {
                        out.push(key.to_vec());
                    }
                    true
                });
            } else {
                self.each_cold_key(&g, idx, &mut |key| {
                    if filter.pattern.is_none_or(|p| glob::matches(p, key, false))
                        && self.cold_live(&g, key, now)
                    {
                        out.push(key.to_vec());
                    }
                    true
                });
            }
            idx += 1;
            // COUNT bounds the work done, as in Redis: stop once that many were visited.
            if visited >= count.max(1) {
                break;
            }
        }
        let next = if idx >= shards.len() { 0 } else { idx as u64 };
        (next, out)
    }

    /// All live keys matching `pattern` (KEYS).
    pub fn keys(&self, pattern: &[u8]) -> Vec<Vec<u8>> {
        let filter = ScanFilter {
            pattern: (pattern != b"*").then_some(pattern),
            kind: None,
        };
        let mut out = Vec::new();
        let mut cursor = 0;
        loop {
            let (next, mut keys) = self.scan(cursor, usize::MAX, filter);
            out.append(&mut keys);
            if next == 0 {
                return out;
            }
            cursor = next;
        }
    }

    /// A random live key (RANDOMKEY), or None when the database is empty.
    pub fn random_key(&self, seed: u64) -> Option<Vec<u8>> {
        let now = clock::now_ms();
        let shards = self.allocated();
        let n = shards.len();
        let mut rng = seed | 1;
        // Random shards first; an almost-empty database falls through to a full sweep.
        for attempt in 0..(2 * n) {
            rng = xorshift(rng);
            let idx = if attempt < n {
                rng as usize & self.mask
            } else {
                attempt - n
            };
            let mut g = shards[idx].acquire();
            // An expired pick goes (unless expiry is frozen) and the shard is drawn from
            // again: each such draw removes a key, so this ends.
            loop {
                let len = g.len();
                if len + g.cold == 0 {
                    break;
                }
                rng = xorshift(rng);
                let pick = (rng % (len + g.cold) as u64) as usize;
                if pick >= len {
                    let Some(key) = self.nth_cold(&g, idx, pick - len) else {
                        break;
                    };
                    if !self.may_expire(now) || self.cold_live(&g, &key, now) {
                        return Some(key);
                    }
                    // Expired while cold: it goes as a hot pick does.
                    let h = hash(&key);
                    self.fault(&mut g, h, &key, true);
                    self.remove_expired(&mut g, h, &key);
                    continue;
                }
                // From a random bucket on to the first entry: a step or two in a table
                // that is at least half full, where walking to the pick-th entry was a
                // walk of half the shard.
                let mut found = None;
                g.sample(rng >> 11, 1, false, true, |e| {
                    found = Some((e.key().to_vec(), e.is_expired(now)));
                });
                let Some((key, expired)) = found else { break };
                if !expired || !self.may_expire(now) {
                    return Some(key);
                }
                self.remove_expired(&mut g, hash(&key), &key);
            }
        }
        None
    }

    /// The `skip`-th key of shard `idx`'s cold keys (RANDOMKEY).
    fn nth_cold(&self, g: &ShardData, idx: usize, mut skip: usize) -> Option<Vec<u8>> {
        let mut found = None;
        self.each_cold_key(g, idx, &mut |key| {
            if skip == 0 {
                found = Some(key.to_vec());
                return false;
            }
            skip -= 1;
            true
        });
        found
    }
}

pub(crate) fn xorshift(mut x: u64) -> u64 {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    x
}

/// All databases.
pub struct Keyspace {
    pub(crate) dbs: Box<[Db]>,
    /// Encoding thresholds for collections (from the server's config).
    pub encodings: std::sync::Arc<crate::types::Encodings>,
    /// The database the active expiry cycle resumes at (`crate::expiry`).
    pub(crate) expire_cursor: AtomicUsize,
    rng: AtomicU64,
    hooks: std::sync::Arc<Hooks>,
    access: std::sync::Arc<Access>,
    /// Unique per keyspace (never 0): which keyspace a kept shard belongs to (`Sticky`).
    id: usize,
}

impl Keyspace {
    /// `databases` logical databases of 2^`shard_bits` shards each.
    pub fn new(databases: usize, shard_bits: u32) -> Keyspace {
        static NEXT_ID: AtomicUsize = AtomicUsize::new(1);
        let id = NEXT_ID.fetch_add(1, Ordering::Relaxed);
        let hooks = std::sync::Arc::new(Hooks::default());
        let access = std::sync::Arc::new(Access::default());
        Keyspace {
            dbs: (0..databases.max(1))
                .map(|i| Db::new(i, shard_bits, &hooks, &access, id))
                .collect(),
            access,
            id,
            encodings: Default::default(),
            expire_cursor: AtomicUsize::new(0),
            rng: AtomicU64::new(clock::now_ms() | 1),
            hooks,
        }
    }

    pub(crate) fn hooks(&self) -> &Hooks {
        &self.hooks
    }

    pub(crate) fn id(&self) -> usize {
        self.id
    }

    /// What accesses write in entries' access bits: LRU clocks or LFU counters, and the
    /// LFU parameters (the server sets them from its configuration).
    pub fn access(&self) -> &Access {
        &self.access
    }

    /// Installs the expired-key hook (once; later calls are ignored).
    pub fn set_expired_hook(&self, hook: ExpiredHook) {
        let _ = self.hooks.expired.set(hook);
    }

    /// Keeps expired keys in place until `until_ms` (Unix ms; 0 lifts it): they read as
    /// missing, but neither lookups nor the active cycle remove them, so the data set does
    /// not change (Redis does so while clients are paused).
    pub fn freeze_expiry_until(&self, until_ms: u64) {
        self.hooks.frozen_until.store(until_ms, Ordering::Relaxed);
    }

    /// Installs the created-key hook (once; later calls are ignored).
    pub fn set_created_hook(&self, hook: CreatedHook) {
        let _ = self.hooks.created.set(hook);
    }

    /// Turns the announcing of created keys on or off. Off (the default), stores cost
    /// nothing more; on, each first looks its key up.
    pub fn announce_created(&self, on: bool) {
        self.hooks.announce_created.store(on, Ordering::Relaxed);
    }

    /// With `keep` set, a lookup of an expired key reports it missing but leaves it in
    /// place (and reports nothing to the expired-key hook): a replica's keys expire only
    /// when its primary's DEL arrives, so that a later write the primary sends for that
    /// key still finds it. Lookups at time 1 (what a replayed or replicated command runs
    /// at) see every key.
    pub fn set_keep_expired(&self, keep: bool) {
        self.hooks.keep.store(keep, Ordering::Relaxed);
    }

    pub fn db(&self, index: usize) -> &Db {
        &self.dbs[index]
    }

    pub fn db_count(&self) -> usize {
        self.dbs.len()
    }

    /// A cheap random number for sampling (not for security).
    pub fn random(&self) -> u64 {
        let x = xorshift(self.rng.load(Ordering::Relaxed));
        self.rng.store(x, Ordering::Relaxed);
        x
    }

    /// Locks `ka` in database `a` and `kb` in database `b` (MOVE, COPY ... DB), taking
    /// locks in (database, shard) order. `a` and `b` must differ.
    pub fn lock_pair<'a>(
        &'a self,
        a: usize,
        ka: &[u8],
        b: usize,
        kb: &[u8],
    ) -> (Locked<'a>, Locked<'a>) {
        debug_assert_ne!(a, b);
        if a < b {
            let la = self.dbs[a].lock1(ka);
            (la, self.dbs[b].lock1(kb))
        } else {
            let lb = self.dbs[b].lock1(kb);
            (self.dbs[a].lock1(ka), lb)
        }
    }

    /// SWAPDB: exchanges two databases' contents atomically (all shards of both are held).
    pub fn swap(&self, a: usize, b: usize) {
        if a == b {
            return;
        }
        let (lo, hi) = (a.min(b), a.max(b));
        let mut ga: Vec<_> = self.dbs[lo].shards().iter().map(|s| s.acquire()).collect();
        let mut gb: Vec<_> = self.dbs[hi].shards().iter().map(|s| s.acquire()).collect();
        for (x, y) in ga.iter_mut().zip(gb.iter_mut()) {
            x.swap_entries(y);
        }
        self.swap_cold(a, b);
    }

    /// Flushes every database.
    pub fn flush_all(&self) -> Vec<Flushed> {
        self.dbs.iter().map(Db::flush).collect()
    }
}

#[cfg(test)]
#[path = "keyspace_tests.rs"]
mod tests;
