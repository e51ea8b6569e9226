//! Choosing keys to evict, as Redis's evict.c does: each round samples `samples` keys of
//! every database into a pool of the [`POOL_SIZE`] best candidates seen so far (longest
//! idle for LRU, lowest counter for LFU, nearest expiry for volatile-ttl), and the best of
//! the pool goes; the random policies take a random key of the next database in turn. The
//! volatile policies consider only keys with a TTL.
//!
//! Redis samples a database's dict; here a database is many shards, so a round samples one
//! shard of each database, picked at random among those that hold keys (with a TTL): each
//! database keeps a map of them ([`Occupancy`]), so a sparse database costs no walk over
//! empty shards, and "no key can be evicted" is known exactly. The caller removes the
//! chosen key ([`Keyspace::evict_remove`]) and does what a removal entails for it (the
//! server: journal, keyspace event, WATCH; the embedded table: nothing).

use crate::clock;
use crate::entry::EntryRef;
use crate::keyspace::{xorshift, Db, Keyspace};
use crate::locked::Unlinked;
use crate::shard::{hash, ShardData};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering::Relaxed};

/// What to do when memory is over its limit (Redis's maxmemory-policy).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Policy {
    /// Evict nothing: writes that need memory are refused.
    NoEviction,
    AllKeysLru,
    AllKeysLfu,
    AllKeysRandom,
    VolatileLru,
    VolatileLfu,
    VolatileRandom,
    VolatileTtl,
}

impl Policy {
    /// Only keys with a TTL may go.
    pub fn volatile(self) -> bool {
        matches!(
            self,
            Policy::VolatileLru
                | Policy::VolatileLfu
                | Policy::VolatileRandom
                | Policy::VolatileTtl
        )
    }

    /// Access bits are LFU counters under this policy (`crate::access`).
    pub fn lfu(self) -> bool {
        matches!(self, Policy::AllKeysLfu | Policy::VolatileLfu)
    }

    fn random(self) -> bool {
        matches!(self, Policy::AllKeysRandom | Policy::VolatileRandom)
    }

    /// The policy as a small number, to keep one in an atomic (`from_code` reads it back).
    pub fn code(self) -> u8 {
        Self::ALL.iter().position(|&q| q == self).unwrap_or(0) as u8
    }

    /// The policy `code` gave; NoEviction for a number no policy has.
    pub fn from_code(code: u8) -> Policy {
        Self::ALL
            .get(usize::from(code))
            .copied()
            .unwrap_or(Policy::NoEviction)
    }

    const ALL: [Policy; 8] = [
        Policy::NoEviction,
        Policy::AllKeysLru,
        Policy::AllKeysLfu,
        Policy::AllKeysRandom,
        Policy::VolatileLru,
        Policy::VolatileLfu,
        Policy::VolatileRandom,
        Policy::VolatileTtl,
    ];
}

/// Redis's EVPOOL_SIZE: how many candidates the pool keeps between rounds.
pub const POOL_SIZE: usize = 16;

/// Whether eviction to a cold store leaves in RAM an entry of `bytes` that was used lately
/// (`Db::evict_to_cold_unless_in_use`), with `total` bytes in RAM against a limit of
/// `limit`: when it is at least an eighth of the limit and 64 KiB, and everything else fits
/// in the limit beside it. Entries move whole, so one larger than the limit that a client
/// keeps changing would otherwise go to disk and back on every change (a list of 40 MB
/// under 30 MB took 9 pushes a second); RAM then passes the limit by that entry at most.
pub fn spares_in_use(limit: u64, total: u64, bytes: u64) -> bool {
    bytes >= (limit / 8).max(64 << 10) && total.saturating_sub(bytes) <= limit
}

struct Candidate {
    /// Higher is a better victim.
    score: u64,
    db: usize,
    key: Vec<u8>,
}

/// The eviction pool: the best candidates of the rounds so far, kept between calls (and
/// between commands) as Redis keeps its own. One per evicting thread, or behind a lock.
pub struct Pool {
    /// Ascending by score: the best candidate last.
    best: Vec<Candidate>,
    /// Key buffers of candidates that left, reused for the next ones.
    spare: Vec<Vec<u8>>,
    /// The database the random policies take from next.
    next_db: usize,
    rng: u64,
}

impl Default for Pool {
    fn default() -> Self {
        Pool {
            best: Vec::with_capacity(POOL_SIZE),
            spare: Vec::new(),
            next_db: 0,
            rng: clock::now_ms() | 1,
        }
    }
}

impl Pool {
    fn random(&mut self) -> u64 {
        self.rng = xorshift(self.rng);
        self.rng
    }

    /// Offers a candidate: it enters if the pool has room or it beats the worst one there,
    /// which then leaves.
    fn offer(&mut self, score: u64, db: usize, key: &[u8]) {
        let at = self.best.partition_point(|c| c.score < score);
        if self.best.len() == POOL_SIZE {
            if at == 0 {
                return;
            }
            let worst = self.best.remove(0);
            self.spare.push(worst.key);
            self.insert(at - 1, score, db, key);
        } else {
            self.insert(at, score, db, key);
        }
    }

    fn insert(&mut self, at: usize, score: u64, db: usize, key: &[u8]) {
        let mut buf = self.spare.pop().unwrap_or_default();
        buf.clear();
        buf.extend_from_slice(key);
        self.best.insert(
            at,
            Candidate {
                score,
                db,
                key: buf,
            },
        );
    }

    /// Hands a key buffer back for reuse.
    pub fn recycle(&mut self, key: Vec<u8>) {
        if self.spare.len() < POOL_SIZE {
            self.spare.push(key);
        }
    }

    /// Candidates in the pool (tests and diagnostics).
    pub fn len(&self) -> usize {
        self.best.len()
    }

    pub fn is_empty(&self) -> bool {
        self.best.is_empty()
    }
}

/// Which shards of a database hold keys, and which hold keys with a TTL: one bit each. A
/// shard sets its bit, under its lock, on the insert that makes it hold keys (with a TTL);
/// the sampler clears it, under the same lock, when it finds it holds none. A set bit may
/// thus be stale, a clear one never is. Beside each map, how many bits it has set: an
/// eviction samples every database, and the maps of empty ones are then skipped unread.
pub(crate) struct Occupancy {
    keys: Box<[AtomicU64]>,
    volatile: Box<[AtomicU64]>,
    marked: [AtomicUsize; 2],
}

impl Occupancy {
    pub(crate) fn new(shards: usize) -> Occupancy {
        let words = || {
            (0..shards.div_ceil(64))
                .map(|_| AtomicU64::new(0))
                .collect()
        };
        Occupancy {
            keys: words(),
            volatile: words(),
            marked: Default::default(),
        }
    }

    fn map(&self, volatile: bool) -> &[AtomicU64] {
        if volatile {
            &self.volatile
        } else {
            &self.keys
        }
    }

    pub(crate) fn mark(&self, shard: usize, volatile: bool) {
        let bit = 1 << (shard % 64);
        if let Some(w) = self.map(volatile).get(shard / 64) {
            if w.fetch_or(bit, Relaxed) & bit == 0 {
                self.marked[usize::from(volatile)].fetch_add(1, Relaxed);
            }
        }
    }

    fn unmark(&self, shard: usize, volatile: bool) {
        let bit = 1 << (shard % 64);
        if let Some(w) = self.map(volatile).get(shard / 64) {
            if w.fetch_and(!bit, Relaxed) & bit != 0 {
                self.marked[usize::from(volatile)].fetch_sub(1, Relaxed);
            }
        }
    }

    /// The first marked shard at or after `from`, wrapping around; None when none is.
    pub(crate) fn next(&self, volatile: bool, from: usize) -> Option<usize> {
        let map = self.map(volatile);
        let n = map.len();
        if n == 0 {
            return None;
        }
        let first = from / 64 % n;
        (0..=n).find_map(|k| {
            let at = (first + k) % n;
            let mut w = map[at].load(Relaxed);
            if k == 0 {
                // The first word's bits below `from`, only when it comes round again.
                w &= u64::MAX << (from % 64);
            }
            (w != 0).then(|| at * 64 + w.trailing_zeros() as usize)
        })
    }

    /// A marked shard, chosen at random (uniformly while most words have a bit set; a
    /// word after empty ones is likelier in a sparse map); None when none is marked.
    pub(crate) fn pick(&self, volatile: bool, rnd: u64) -> Option<usize> {
        if self.marked[usize::from(volatile)].load(Relaxed) == 0 {
            return None;
        }
        let map = self.map(volatile);
        let n = map.len();
        let start = (rnd as usize) % n.max(1);
        // Each word once from `start`, wrapping (no division a word: with every empty
        // database's map walked on each eviction, it showed in profiles).
        let words = map[start..].iter().chain(&map[..start]);
        words.zip((start..n).chain(0..start)).find_map(|(w, at)| {
            let mut w = w.load(Relaxed);
            if w == 0 {
                return None;
            }
            // The i-th set bit, i uniform among them.
            for _ in 0..(rnd >> 32) % u64::from(w.count_ones()) {
                w &= w - 1;
            }
            Some(at * 64 + w.trailing_zeros() as usize)
        })
    }
}

impl ShardData {
    /// Clears this shard's bits when it no longer holds what they say (see `Occupancy`).
    pub(crate) fn refresh_marks(&mut self) {
        let Some(o) = self.occupancy.clone() else {
            return;
        };
        if self.marked && self.len() == 0 {
            self.marked = false;
            o.unmark(self.index as usize, false);
        }
        if self.marked_volatile && self.volatile == 0 {
            self.marked_volatile = false;
            o.unmark(self.index as usize, true);
        }
    }

    /// Calls `f` with up to `n` entries (only those with a TTL if `volatile`) found walking
    /// the buckets from a random one: Redis's dictGetSomeKeys. The walk is bounded as
    /// Redis bounds it (ten buckets a key), stretched for a sparse table so that a sample
    /// of a shard that holds such keys is rarely empty; `whole` walks every bucket if need
    /// be (a random pick must find the one key a large, emptied table still holds).
    pub(crate) fn sample(
        &self,
        rnd: u64,
        n: usize,
        volatile: bool,
        whole: bool,
        mut f: impl FnMut(EntryRef<'_>),
    ) {
        let (first, held) = if volatile {
            (self.small.num_buckets(), self.volatile)
        } else {
            (0, self.len())
        };
        let positions = self.positions() - first;
        if positions == 0 || held == 0 || n == 0 {
            return;
        }
        let steps = if whole {
            positions
        } else {
            (n * 10)
                .max(n.saturating_mul(positions) / held)
                .min(positions)
        };
        let start = (rnd as usize) % positions;
        // The walk gathers a few entries and starts loading their headers before reading
        // any (their LRU times, their TTLs): one cache miss each, which overlap instead
        // of following one another (measured: the header reads were three quarters of a
        // tiered fill's sampling time, docs/benchmarks.md).
        const GATHER: usize = 8;
        let mut found = 0;
        let mut step = 0;
        while step < steps {
            let want = if volatile {
                GATHER
            } else {
                (n - found).min(GATHER)
            };
            let mut gathered: [Option<EntryRef<'_>>; GATHER] = [None; GATHER];
            let mut k = 0;
            while k < want && step < steps {
                if let Some(e) = self.entry_at(first + (start + step) % positions) {
                    e.prefetch();
                    gathered[k] = Some(e);
                    k += 1;
                }
                step += 1;
            }
            for e in gathered.into_iter().flatten() {
                if volatile && e.expire_at().is_none() {
                    continue;
                }
                f(e);
                found += 1;
                if found == n {
                    return;
                }
            }
        }
    }
}

impl Db {
    /// A shard holding keys (with a TTL if `volatile`), locked, with the sampler's view of
    /// the map refreshed; None when the database holds no such key.
    fn lock_occupied(
        &self,
        volatile: bool,
        pool: &mut Pool,
    ) -> Option<crate::session::ShardGuard<'_>> {
        loop {
            let i = self.occupancy.pick(volatile, pool.random())?;
            let mut g = self.shard_ref(i).acquire();
            g.refresh_marks();
            let held = if volatile { g.volatile } else { g.len() };
            if held != 0 {
                return Some(g);
            }
        }
    }

    /// Samples `samples` keys into the pool: from one shard, or from several when shards
    /// hold fewer (a small database spread over many shards). False: no key qualifies.
    fn sample_into(
        &self,
        policy: Policy,
        samples: usize,
        pool: &mut Pool,
        now_ms: u64,
        decay: u32,
    ) -> bool {
        let db = self.index();
        let mut taken = 0;
        for _ in 0..samples {
            let Some(g) = self.lock_occupied(policy.volatile(), pool) else {
                return taken > 0;
            };
            let rnd = pool.random();
            g.sample(rnd, samples - taken, policy.volatile(), false, |e| {
                let score = match policy {
                    Policy::VolatileTtl => u64::MAX - e.expire_at().unwrap_or(u64::MAX),
                    p if p.lfu() => {
                        255 - u64::from(crate::access::lfu_counter(e.lru(), now_ms, decay))
                    }
                    _ => clock::idle_ms(e.lru(), now_ms),
                };
                pool.offer(score, db, e.key());
                taken += 1;
            });
            if taken >= samples {
                break;
            }
        }
        true
    }

    /// A random key (with a TTL if `volatile`), or None when there is none.
    fn random_victim(&self, volatile: bool, pool: &mut Pool) -> Option<Vec<u8>> {
        let g = self.lock_occupied(volatile, pool)?;
        let mut key = pool.spare.pop().unwrap_or_default();
        key.clear();
        g.sample(pool.random(), 1, volatile, true, |e| {
            key.extend_from_slice(e.key())
        });
        Some(key)
    }
}

impl Keyspace {
    /// The next key to evict under `policy`, as (database, key): None when no key
    /// qualifies (none at all, or none with a TTL for a volatile policy, or NoEviction).
    /// The key may have gone since it was sampled (`evict_remove` then says so; ask again).
    pub fn evict_pick(
        &self,
        policy: Policy,
        samples: usize,
        pool: &mut Pool,
    ) -> Option<(usize, Vec<u8>)> {
        if policy == Policy::NoEviction {
            return None;
        }
        let n = self.db_count();
        if policy.random() {
            for _ in 0..n {
                pool.next_db = (pool.next_db + 1) % n;
                if let Some(key) = self.db(pool.next_db).random_victim(policy.volatile(), pool) {
                    return Some((pool.next_db, key));
                }
            }
            return None;
        }
        let now = clock::now_ms();
        let decay = self.access().decay_minutes();
        // Each pick samples afresh, then takes the best of the pool: old candidates stay
        // only while nothing better is seen.
        loop {
            let mut any = false;
            for d in 0..n {
                any |= self
                    .db(d)
                    .sample_into(policy, samples.max(1), pool, now, decay);
            }
            if !any {
                return None;
            }
            if let Some(c) = pool.best.pop() {
                return Some((c.db, c.key));
            }
        }
    }

    /// Removes `key` of database `db` if it is still there (and has a TTL, if
    /// `volatile`), calling `under_lock` while its shard is still locked (to record the
    /// removal in order with the key's other writes). Returns the entry, for the caller to
    /// free (here, or on another thread).
    pub fn evict_remove(
        &self,
        db: usize,
        key: &[u8],
        volatile: bool,
        under_lock: impl FnOnce(),
    ) -> Option<Unlinked> {
        let db = self.db(db);
        let h = hash(key);
        let mut g = db.shard_ref(db.shard_index(h)).acquire();
        let ttl = g.find(h, key)?.expire_at();
        if volatile && ttl.is_none() {
            return None;
        }
        let removed = g.remove(h, key)?;
        db.forget_copy(&mut g, h, key);
        under_lock();
        Some(Unlinked(removed))
    }

    /// Removes keys under `policy` until `enough` says to stop or none qualifies; returns
    /// how many went. For callers that need nothing more (the embedded table).
    pub fn evict_until(
        &self,
        policy: Policy,
        samples: usize,
        pool: &mut Pool,
        enough: impl FnMut() -> bool,
    ) -> u64 {
        let gone = |db: usize, key: &[u8]| {
            Ok::<_, String>(
                self.evict_remove(db, key, policy.volatile(), || {})
                    .is_some(),
            )
        };
        self.pick_until(policy, samples, pool, enough, gone)
            .unwrap_or_default()
    }

    /// [`evict_until`](Keyspace::evict_until) for a keyspace with a cold store: the keys
    /// `policy` picks move to the store instead of going, until `total()` is within
    /// `limit`, or until it picks a large entry in use that stays (`spares_in_use`; then
    /// this returns true: the rest fits). Stops early, with the store's error, when a move
    /// fails (the entry stays in RAM).
    pub fn move_cold_until(
        &self,
        policy: Policy,
        samples: usize,
        pool: &mut Pool,
        limit: u64,
        total: impl Fn() -> u64,
    ) -> Result<bool, String> {
        let spare = |bytes: usize| spares_in_use(limit, total(), bytes as u64);
        let spared = std::cell::Cell::new(false);
        let moved = |db: usize, key: &[u8]| {
            let d = self.db(db);
            Ok(
                match d.evict_to_cold_unless_in_use(key, policy.volatile(), &spare)? {
                    crate::ToCold::Moved(_) => true,
                    crate::ToCold::Absent => false,
                    crate::ToCold::InUse => {
                        spared.set(true);
                        false
                    }
                },
            )
        };
        // A spared entry ends the round: the next pick would find it again.
        let enough = || spared.get() || total() <= limit;
        self.pick_until(policy, samples, pool, enough, moved)?;
        Ok(spared.get())
    }

    /// Picks keys under `policy` and hands each to `act` (true: it went) until `enough`,
    /// until none qualifies, or until `act` fails; returns how many went.
    fn pick_until(
        &self,
        policy: Policy,
        samples: usize,
        pool: &mut Pool,
        mut enough: impl FnMut() -> bool,
        mut act: impl FnMut(usize, &[u8]) -> Result<bool, String>,
    ) -> Result<u64, String> {
        let mut went = 0;
        while !enough() {
            let Some((db, key)) = self.evict_pick(policy, samples, pool) else {
                break;
            };
            let done = act(db, &key);
            pool.recycle(key);
            went += u64::from(done?);
        }
        Ok(went)
    }
}

#[cfg(test)]
#[path = "evict_tests.rs"]
mod tests;
