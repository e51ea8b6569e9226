//! A memory budget for the embedded [`Table`]: the server's `maxmemory` and
//! `maxmemory-policy`, counted by the table itself (`crate::ledger`), since inside someone
//! else's process it cannot count the allocator.

use crate::embedded::{Error, Table};
use crate::evict::{Policy, Pool};
use crate::ledger::Books;
use parking_lot::Mutex;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicU8, AtomicUsize, Ordering::Relaxed};
use std::sync::Arc;

/// How much memory a [`Table`] may hold, and what goes when it is full.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Budget {
    /// Bytes the table's entries may take, as [`Table::memory_used`] counts them.
    pub bytes: usize,
    /// Which keys go when a write finds the table over budget. [`Policy::NoEviction`] (or
    /// a volatile policy with no key with a TTL left) evicts nothing: the fallible writes
    /// fail with [`Error::OutOfMemory`].
    pub policy: Policy,
    /// Keys sampled per eviction round (Redis's maxmemory-samples): more is closer to
    /// true LRU/LFU and slower. Also the elements a collection is measured from.
    pub samples: usize,
}

impl Budget {
    /// `bytes` under `policy`, sampling 5 keys a round (Redis's default).
    pub fn new(bytes: usize, policy: Policy) -> Budget {
        Budget {
            bytes,
            policy,
            samples: 5,
        }
    }
}

/// A table's budget state: read on every write, so all of it atomics but the pool.
pub(crate) struct Budgeted {
    books: Arc<Books>,
    /// 0: no budget.
    limit: AtomicUsize,
    policy: AtomicU8,
    samples: AtomicUsize,
    /// Reads update access bits (an LRU or LFU policy needs them).
    pub(crate) touch: AtomicBool,
    pool: Mutex<Pool>,
    evicted: AtomicU64,
}

impl Default for Budgeted {
    fn default() -> Self {
        Budgeted {
            books: Arc::default(),
            limit: AtomicUsize::new(0),
            policy: AtomicU8::new(0),
            samples: AtomicUsize::new(5),
            touch: AtomicBool::new(false),
            pool: Mutex::new(Pool::default()),
            evicted: AtomicU64::new(0),
        }
    }
}

impl Table {
    /// A table of 1024 shards that keeps within `budget`.
    ///
    /// ```
    /// use strata_engine::{Budget, Policy, Table};
    ///
    /// // Room for about a thousand 100-byte values; the least frequently used go first.
    /// let t = Table::with_budget(Budget::new(160_000, Policy::AllKeysLfu));
    /// t.set(b"hot", &[0u8; 100]);
    /// for i in 0..10_000 {
    ///     t.set(format!("key:{i}").as_bytes(), &[1u8; 100]);
    ///     t.get(b"hot"); // often read: it stays
    /// }
    /// assert!(t.memory_used() <= 160_000 + 160_000 / 16);
    /// assert!(t.len() < 2_000 && t.evicted_keys() > 8_000);
    /// assert!(t.contains(b"hot"));
    /// ```
    pub fn with_budget(budget: Budget) -> Table {
        let t = Table::new();
        t.set_memory_budget(Some(budget));
        t
    }

    /// Sets (or with None lifts) the table's memory budget. From then on every write that
    /// may add memory first evicts keys under the budget's policy until the table is within
    /// it; the fallible ones ([`try_set`](Table::try_set), [`incr`](Table::incr),
    /// [`update`](Table::update), the `with_*_mut` methods) fail with
    /// [`Error::OutOfMemory`] when it cannot be, the others store anyway. Setting a budget
    /// counts the table's entries once (O(keys)); a table without one counts nothing.
    /// Under an LRU or LFU policy reads update the keys' access bits (without a budget
    /// they write nothing, see [`Table`]).
    ///
    /// ```
    /// use strata_engine::{embedded::Error, Budget, Policy, Table};
    ///
    /// let t = Table::with_shards(4);
    /// t.set_memory_budget(Some(Budget::new(1 << 20, Policy::NoEviction)));
    /// for i in 0..100 {
    ///     t.set(format!("k{i}").as_bytes(), b"some value");
    /// }
    /// let used = t.memory_used();
    /// assert!(used >= 100 * 24);
    /// t.set_memory_budget(Some(Budget::new(used / 2, Policy::NoEviction)));
    /// assert_eq!(t.try_set(b"more", b"value"), Err(Error::OutOfMemory));
    /// assert_eq!(t.len(), 100); // nothing evicted
    /// t.set_memory_budget(Some(Budget::new(used / 2, Policy::AllKeysRandom)));
    /// assert_eq!(t.try_set(b"more", b"value"), Ok(()));
    /// assert!(t.len() < 60 && t.memory_used() <= used / 2 + 1024);
    /// ```
    pub fn set_memory_budget(&self, budget: Option<Budget>) {
        let b = &self.budget;
        let _pool = b.pool.lock();
        let db = self.db();
        for i in 0..db.shard_count() {
            db.shard_ref(i).acquire().close_ledger();
        }
        let Some(budget) = budget else {
            b.limit.store(0, Relaxed);
            b.touch.store(false, Relaxed);
            self.ks.access().set_lfu(false);
            return;
        };
        // Each shard folds its changes in every `fold` bytes: the total is then within a
        // sixteenth of the budget of the exact sum.
        let fold = (budget.bytes / (16 * db.shard_count())).clamp(1, 4096);
        for i in 0..db.shard_count() {
            db.shard_ref(i)
                .acquire()
                .open_ledger(&b.books, fold, budget.samples.max(1));
        }
        self.ks.access().set_lfu(budget.policy.lfu());
        b.policy.store(budget.policy.code(), Relaxed);
        b.samples.store(budget.samples.max(1), Relaxed);
        b.touch.store(
            matches!(
                budget.policy,
                Policy::AllKeysLru | Policy::VolatileLru | Policy::AllKeysLfu | Policy::VolatileLfu
            ),
            Relaxed,
        );
        b.limit.store(budget.bytes.max(1), Relaxed);
    }

    /// The bytes the table's entries take, as it counts them (`memory::entry_bytes`: the
    /// allocator's size classes for each entry's blocks, collections measured from their
    /// first `samples` elements); 0 while it has no budget. Exact: it visits every shard
    /// (writes check a running total instead, within a sixteenth of the budget of this).
    pub fn memory_used(&self) -> usize {
        let db = self.db();
        (0..db.shard_count())
            .map(|i| db.shard_ref(i).acquire().ledger_bytes())
            .sum()
    }

    /// Keys evicted to keep within the budget so far.
    pub fn evicted_keys(&self) -> u64 {
        self.budget.evicted.load(Relaxed)
    }

    /// [`set`](Table::set), refused with [`Error::OutOfMemory`] when the table is over its
    /// budget and nothing can be evicted.
    pub fn try_set(&self, key: &[u8], value: &[u8]) -> Result<(), Error> {
        self.make_room()?;
        self.db().set_str1(key, value);
        Ok(())
    }

    /// Before a write: evicts until the table is within its budget. Err when it is still
    /// over and nothing more can go.
    pub(crate) fn make_room(&self) -> Result<(), Error> {
        let b = &self.budget;
        let limit = b.limit.load(Relaxed);
        if limit == 0 || b.books.total() <= limit {
            return Ok(());
        }
        let mut pool = b.pool.lock();
        let books = &b.books;
        let policy = Policy::from_code(b.policy.load(Relaxed));
        let samples = b.samples.load(Relaxed);
        if self.ks.tiering() {
            // As the server's tiering: the policy picks what moves; noeviction lets LRU.
            let policy = match policy {
                Policy::NoEviction => Policy::AllKeysLru,
                p => p,
            };
            let total = || books.total() as u64;
            // A store that failed a write keeps what it could not take in RAM: the
            // fallible writes then fail as over budget.
            let moved = self
                .ks
                .move_cold_until(policy, samples, &mut pool, limit as u64, total);
            if moved == Ok(true) {
                // Over only by a large entry in use, which stays.
                return Ok(());
            }
        } else {
            let enough = || books.total() <= limit;
            let n = self.ks.evict_until(policy, samples, &mut pool, enough);
            b.evicted.fetch_add(n, Relaxed);
        }
        if books.total() > limit {
            return Err(Error::OutOfMemory);
        }
        Ok(())
    }

    /// A table of 1024 shards that keeps within `budget` by moving entries (key and value,
    /// any type) to `store` instead of deleting them, under the budget's policy
    /// ([`Policy::NoEviction`] moves the least recently used). They come back into RAM on
    /// their next access, and every method sees them as it sees the others: lookups,
    /// [`len`](Table::len), [`scan`](Table::scan), [`clear`](Table::clear),
    /// [`purge_expired`](Table::purge_expired). The store is called under the key's shard
    /// lock ([`ColdStore`](crate::ColdStore) says what it must do); the server's on-disk
    /// tier is one.
    pub fn with_cold_store(budget: Budget, store: Arc<dyn crate::ColdStore>) -> Table {
        let t = Table::new();
        t.set_cold_store(store);
        t.set_memory_budget(Some(budget));
        t
    }

    /// Gives an empty table its cold store (see [`with_cold_store`](Table::with_cold_store)),
    /// for a store that needs the table first (its [`shared_encodings`](Table::shared_encodings)).
    /// False, and nothing changes, when the table holds keys or has a store already.
    pub fn set_cold_store(&self, store: Arc<dyn crate::ColdStore>) -> bool {
        if !self.is_empty() || self.ks.tiering() {
            return false;
        }
        self.ks.set_cold_store(store);
        true
    }

    /// The table's encoding thresholds ([`encodings`](Table::encodings)), shared: a cold
    /// store rebuilds the values it gives back under them.
    pub fn shared_encodings(&self) -> Arc<crate::Encodings> {
        self.ks.encodings.clone()
    }

    /// Keys whose entries are in the cold store (see [`with_cold_store`](Table::with_cold_store)).
    pub fn cold_keys(&self) -> u64 {
        self.db().cold_stats().0
    }
}
