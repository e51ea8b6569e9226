//! The store: an LSM tree (fjall) with one tree per database, records keyed by (shard,
//! key) so a shard's cold keys read together (SCAN, KEYS, a snapshot's capture). Only the
//! tree's filters, index blocks, caches and write buffers stay in RAM, not the keys.
//!
//! The store is not part of the truth: snapshots hold cold entries like hot ones and the
//! journal holds the writes, so the tier is emptied at start and refilled from them
//! (docs/tiering.md says what that costs), unless the last exit kept it (`kept.rs`). So it
//! is never fsynced but then.

use crate::records::{
    decode_record, encode_record, expiry_of, kind_of_len, order_key, order_range, ordered,
    record_key, record_kind, record_prefix, ttl_key, NextDue, MAX_KEY_LEN,
};
use fjall::config::PinningPolicy;
use fjall::AbstractTree;
use parking_lot::RwLock;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};
use std::sync::Arc;
use strata_engine::{ColdStore, Kind, KindVisitor, Owned};

/// The tier's memory besides its cache (`tiering-cache-size`): each database's write
/// buffer (only those of databases with cold keys fill), all of them bounded together.
/// Outside `maxmemory` (as Redis leaves out its replication buffers); shown in INFO.
/// Measured on a fill of 5x `maxmemory` (docs/tiering.md): 16 MiB buffers took a tenth
/// less CPU per spilled entry than 8 MiB ones, 4 MiB ones a third more (more, smaller
/// tables for compaction to merge).
const WRITE_BUFFER_BYTES: u64 = 16 << 20;
const WRITE_BUFFERS_BYTES: u64 = 64 << 20;

/// Records larger than this keep their value in the store's blob files, out of the tree:
/// compaction then moves the key and a pointer, not the value (measured: 40% less CPU
/// per spilled 1 KiB entry, docs/tiering.md). A read of such a value costs one more
/// block read.
const SEPARATE_ABOVE: u32 = 512;

/// Free space the tier leaves on its file system: room for the write buffers to flush and
/// for a compaction to write its output before it deletes its inputs. A store that meets
/// a full disk takes no more writes until it is reopened (fjall poisons itself), and then
/// a DEL of a cold key cannot delete its record (`dead.rs`); so spills stop short of
/// it and the eviction policy applies instead, as at `tiering-max-disk`.
fn disk_reserve(disk: u64) -> u64 {
    2 * WRITE_BUFFERS_BYTES + disk / 4
}

/// Spills between two looks at the file system's free space (a system call per spill
/// would add a tenth to its cost; the reserve covers what this many spills can write).
const ROOM_EVERY: u64 = 64;

pub struct Tier {
    path: PathBuf,
    db: fjall::Database,
    /// The tree of each logical database (SWAPDB exchanges two).
    trees: RwLock<Vec<fjall::Keyspace>>,
    /// The keyspace's encoding thresholds, for values coming back.
    encodings: Arc<strata_engine::Encodings>,
    /// Bytes read back from and written to the store (records, not disk pages).
    pub read_bytes: AtomicU64,
    pub written_bytes: AtomicU64,
    /// Store errors met (reads and writes); the last is logged.
    pub errors: AtomicU64,
    /// What the store could not delete once a write failed (`dead.rs`).
    pub dead: crate::dead::Dead,
    /// Commands that waited for a read from the tier.
    pub prefetches: AtomicU64,
    /// Cold entries that writes replaced or deleted without reading them back.
    pub discards: AtomicU64,
    /// The store's recent read time (ns, a moving average of one in eight): whether cold
    /// reads come from memory or from the device.
    pub read_ns: AtomicU64,
    /// Reads ahead in flight, which commands needing the same key share.
    pub reads: crate::reads::ReadMerger,
    /// Bit i: database i's tree has been written (it has a write buffer).
    written_trees: AtomicU64,
    /// Calls of [`Tier::disk_has_room`], and what its last look at the file system found.
    room_calls: AtomicU64,
    room: AtomicBool,
    /// What `maxmemory` bounds under tiering: the hot entries' bytes.
    pub hot: std::sync::OnceLock<strata_engine::HotBytes>,
    /// What this start did with the store it found (`recover.rs`).
    pub start: crate::recover::StartReport,
    /// Whether the store still matches a snapshot, for the next start (`kept.rs`).
    pub watch: crate::kept::Watch,
    /// When each shard next has a cold entry due (`each_due`).
    next_due: NextDue,
}

impl Tier {
    /// Opens the tier in `path` for `databases` of `shards` shards each: empty (what a
    /// previous run left there goes first: the snapshot and the journal refill it), or as
    /// it is when `keep` (`kept.rs`).
    pub fn open(
        dir: &Path,
        databases: usize,
        shards: usize,
        cache_bytes: u64,
        encodings: Arc<strata_engine::Encodings>,
        keep: bool,
    ) -> Result<Tier, String> {
        let path = prepare_dir(dir, keep)?;
        let (db, trees) = open_store(&path, databases, cache_bytes)?;
        Ok(Tier {
            path: dir.to_path_buf(),
            db,
            trees: RwLock::new(trees),
            encodings,
            read_bytes: AtomicU64::new(0),
            written_bytes: AtomicU64::new(0),
            errors: AtomicU64::new(0),
            dead: Default::default(),
            // A kept store's trees may all hold entries.
            written_trees: AtomicU64::new(if keep { u64::MAX } else { 0 }),
            room_calls: AtomicU64::new(0),
            room: AtomicBool::new(true),
            prefetches: AtomicU64::new(0),
            discards: AtomicU64::new(0),
            reads: Default::default(),
            read_ns: AtomicU64::new(0),
            hot: Default::default(),
            watch: Default::default(),
            start: Default::default(),
            next_due: NextDue::new(databases, shards),
        })
    }
}

/// Opens the store in `path` (a tier's `store` directory) as it is, with a tree per
/// database: for a tier, and for `strata check` (`check.rs`).
pub fn open_store(
    path: &Path,
    databases: usize,
    cache_bytes: u64,
) -> Result<(fjall::Database, Vec<fjall::Keyspace>), String> {
    let err = |e: fjall::Error| format!("cannot open the tier at {}: {e}", path.display());
    // The bound on all write buffers together is what keeps the tier's memory bounded
    // while flushes lag behind a burst of spills (hidden in fjall's docs for now).
    #[allow(deprecated)]
    let db = fjall::Database::builder(path)
        .cache_size(cache_bytes)
        .max_write_buffer_size(Some(WRITE_BUFFERS_BYTES))
        .manual_journal_persist(true)
        // Never one: fjall's worker that rotates a write buffer then waits to queue its
        // flush on the workers' own bounded queue, which a lone worker never drains
        // (measured: flushes stopped and the write buffers grew to 1.9 GB).
        .worker_threads(3)
        .open()
        .map_err(err)?;
    let trees = (0..databases)
        .map(|i| {
            db.keyspace(&format!("db{i}"), || {
                // No write of the store's journal per record: the tier is rebuilt at
                // start, its journal is never needed.
                // Every table's filter and index blocks stay in RAM (fjall pins only
                // the first levels'): read through the block cache, a large tier's
                // filters and indexes pushed each other out, and every cold read
                // re-read and re-checksummed them. 27M cold keys of 50 bytes: uniform
                // GETs 22k/s at 77 µs of server CPU each, pinned 50k/s at 31 µs, for
                // 1.3 bytes of RAM a cold key (docs/tiering.md, "Memory").
                fjall::KeyspaceCreateOptions::default()
                    .filter_block_pinning_policy(PinningPolicy::all(true))
                    .index_block_pinning_policy(PinningPolicy::all(true))
                    .max_memtable_size(WRITE_BUFFER_BYTES)
                    .manual_journal_persist(true)
                    .with_kv_separation(Some(
                        fjall::KvSeparationOptions::default().separation_threshold(SEPARATE_ABOVE),
                    ))
            })
        })
        .collect::<Result<Vec<_>, _>>()
        .map_err(err)?;
    Ok((db, trees))
}

impl Tier {
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Writes what the store holds in memory to disk and syncs it (its own journal
    /// included), so that a restart finds every record (`kept.rs`).
    pub fn sync(&self) -> Result<(), String> {
        self.db
            .persist(fjall::PersistMode::SyncAll)
            .map_err(|e| format!("cannot sync the store: {e}"))
    }

    /// Bytes the store takes on disk (its trees and its journal).
    pub fn disk_bytes(&self) -> u64 {
        self.db.disk_space().unwrap_or(0)
    }

    /// Whether the file system has more than [`disk_reserve`] free; a change is logged.
    pub fn disk_has_room(&self) -> bool {
        if !self
            .room_calls
            .fetch_add(1, Relaxed)
            .is_multiple_of(ROOM_EVERY)
        {
            return self.room.load(Relaxed);
        }
        let Some(free) = free_bytes(&self.path) else {
            return true;
        };
        let reserve = disk_reserve(self.disk_bytes());
        let room = free > reserve;
        if self.room.swap(room, Relaxed) != room {
            let dir = self.path.display();
            if room {
                tracing::info!(
                    "tier at {dir}: its file system has room again; cold entries move to it again"
                );
            } else {
                tracing::warn!(
                    "tier at {dir}: {free} bytes free on its file system, under the {reserve} kept for the store's flushes and compactions; the eviction policy applies until there is room"
                );
            }
        }
        room
    }

    /// The hot entries' bytes (what `maxmemory` bounds under tiering).
    pub fn hot_bytes(&self) -> u64 {
        self.hot.get().map_or(0, |h| h.total())
    }

    /// The RAM set aside for the store: its block cache, and two write buffers (one
    /// filling, one being flushed) per database that has had cold entries. What fjall
    /// reports of its own use (`cache_size`, `write_buffer_size`) leaves out its
    /// structures' overhead (measured: a third of the total), so the budget is reserved
    /// whole rather than measured (docs/tiering.md).
    pub fn memory_bytes(&self) -> u64 {
        let written = self.written_trees.load(Relaxed) != 0;
        self.db.cache_capacity() + if written { WRITE_BUFFERS_BYTES } else { 0 }
    }

    /// Bytes in the store's block cache and in its write buffers now (INFO).
    pub fn cache_and_buffers_used(&self) -> (u64, u64) {
        (self.db.cache_size(), self.db.write_buffer_size())
    }

    /// Compactions the store completed, and the time they took (INFO).
    pub fn compactions(&self) -> (usize, std::time::Duration) {
        (self.db.compactions_completed(), self.db.time_compacting())
    }

    /// RAM of the filter and index blocks the store keeps pinned (a few bytes a cold key).
    pub fn pinned_bytes(&self) -> u64 {
        let trees = self.trees.read();
        let pinned =
            |t: &fjall::Keyspace| t.tree.pinned_filter_size() + t.tree.pinned_block_index_size();
        trees.iter().map(pinned).sum::<usize>() as u64
    }

    pub(crate) fn tree(&self, db: usize) -> Option<fjall::Keyspace> {
        self.trees.read().get(db).cloned()
    }

    fn decode(&self, bytes: &[u8]) -> Result<(Owned, u32), String> {
        decode_record(bytes, &self.encodings)
    }

    /// The type a record's length says; a length no record has is a damaged store.
    fn kind_of_len(&self, len: u32) -> Kind {
        kind_of_len(len as usize)
            .unwrap_or_else(|| self.fatal("decode", format!("a record of {len} bytes")))
    }

    /// A store that cannot be read holds acknowledged data this process can no longer
    /// serve or snapshot: stop, and let the restart rebuild the tier from the snapshot and
    /// the journal (which lose nothing).
    pub(crate) fn fatal(&self, what: &str, e: impl std::fmt::Display) -> ! {
        tracing::error!("tier at {}: {what}: {e}; stopping", self.path.display());
        std::process::abort()
    }

    /// A write of the store failed: it takes no more (`dead.rs`), and `record` of
    /// database `db`, if any, reads as gone from now on.
    fn write_failed(
        &self,
        what: &str,
        e: impl std::fmt::Display,
        db: usize,
        record: Option<&[u8]>,
    ) {
        self.errors.fetch_add(1, Relaxed);
        if !self.dead.broken() {
            tracing::error!(
                "tier at {}: {what}: {e}; the tier takes no more entries until a restart \
                 (the eviction policy applies), and what it could not delete reads as gone",
                self.path.display()
            );
        }
        self.dead.failed(db, record);
    }

    /// Whether the store takes `key` (`MAX_KEY_LEN`): a longer key has no record, and
    /// eviction leaves its entry in RAM.
    pub fn takes_key(key: &[u8]) -> bool {
        key.len() <= MAX_KEY_LEN
    }

    /// The store of `db` and `key`'s record key in it, unless that record reads as gone
    /// (`dead.rs`) or cannot exist: where every lookup starts.
    pub(crate) fn live(
        &self,
        db: usize,
        shard: usize,
        key: &[u8],
    ) -> Option<(fjall::Keyspace, Vec<u8>)> {
        if !Self::takes_key(key) {
            return None;
        }
        let tree = self.tree(db)?;
        let rk = record_key(shard, key);
        (!self.dead.is_dead(db, &rk)).then_some((tree, rk))
    }

    /// Whether `key` has a record, from the store's index: a value kept in a blob file
    /// is not read.
    pub fn has_record(&self, db: usize, shard: usize, key: &[u8]) -> bool {
        self.live(db, shard, key)
            .is_some_and(|(tree, rk)| self.indexed(&tree, &rk))
    }

    /// Reads `key`'s record into the store's cache and the page cache without decoding
    /// it: a command's read ahead, whose command then reads and decodes it in place.
    pub fn warm(&self, db: usize, shard: usize, key: &[u8]) {
        self.read_record(db, shard, key);
    }

    pub(crate) fn indexed(&self, tree: &fjall::Keyspace, rk: &[u8]) -> bool {
        tree.contains_key(rk)
            .unwrap_or_else(|e| self.fatal("read", e))
    }

    /// Deletes record `rk` of `db`'s store; a failure is the store's (`write_failed`).
    pub(crate) fn delete(&self, tree: &fjall::Keyspace, db: usize, rk: &[u8]) {
        if let Err(e) = tree.remove(rk) {
            self.write_failed("remove", e, db, Some(rk));
        }
    }

    /// Deletes `key`'s expiry record and its place in the expiry order, for expiry `at`,
    /// or, when `at` is not known, for the expiry its record holds, if it has one.
    fn delete_expiry(
        &self,
        tree: &fjall::Keyspace,
        db: usize,
        shard: usize,
        key: &[u8],
        at: Option<u64>,
    ) {
        let tk = ttl_key(shard, key);
        let at = at.or_else(|| {
            let found = tree.get(&tk).unwrap_or_else(|e| self.fatal("read", e))?;
            Some(expiry_of(&found).unwrap_or_else(|e| self.fatal("decode", e)))
        });
        if let Some(at) = at {
            self.delete(tree, db, &order_key(shard, at, key));
            self.delete(tree, db, &tk);
        }
    }

    /// The bytes of `key`'s record, timed into the reads' average, with its tree and
    /// record key.
    pub(crate) fn read_record(
        &self,
        db: usize,
        shard: usize,
        key: &[u8],
    ) -> Option<(fjall::Keyspace, Vec<u8>, fjall::Slice)> {
        self.watch.touched();
        let (tree, rk) = self.live(db, shard, key)?;
        let started = std::time::Instant::now();
        let found = tree.get(&rk);
        let ns = started.elapsed().as_nanos() as u64;
        let avg = self.read_ns.load(Relaxed);
        self.read_ns.store(avg - avg / 8 + ns / 8, Relaxed);
        let bytes = match found {
            Ok(b) => b?,
            Err(e) => self.fatal("read", e),
        };
        self.read_bytes.fetch_add(bytes.len() as u64, Relaxed);
        Some((tree, rk, bytes))
    }

    fn read(&self, db: usize, shard: usize, key: &[u8], remove: bool) -> Option<(Owned, u32)> {
        let (tree, rk, bytes) = self.read_record(db, shard, key)?;
        let read = self
            .decode(&bytes)
            .unwrap_or_else(|e| self.fatal("decode", e));
        if remove {
            self.delete(&tree, db, &rk);
            if let Some(at) = read.0.expire_at {
                self.delete_expiry(&tree, db, shard, key, Some(at));
            }
        }
        Some(read)
    }
}

impl ColdStore for Tier {
    fn put(
        &self,
        db: usize,
        shard: usize,
        key: &[u8],
        entry: &Owned,
        access: u32,
    ) -> Result<(), String> {
        self.watch.touched();
        let tree = self.tree(db).ok_or("no such database")?;
        if self.dead.broken() {
            return Err("the tier's store failed a write; it takes no more until a restart".into());
        }
        // Refused before any write, so the store stays whole (fjall panics on either).
        if !Self::takes_key(key) {
            return Err(format!(
                "a key of {} bytes is longer than the tier takes ({MAX_KEY_LEN})",
                key.len()
            ));
        }
        let value = encode_record(entry, access);
        if u32::try_from(value.len()).is_err() {
            return Err(format!(
                "a value of {} bytes is larger than the tier takes (4 GiB)",
                value.len()
            ));
        }
        let mut n = value.len() + key.len() + 4;
        let failed = |e: fjall::Error| {
            self.write_failed("write", &e, db, None);
            format!("tier write: {e}")
        };
        if let Some(at) = entry.expire_at {
            // First: a record whose expiry records are missing could be dropped unread
            // after it expired, or never be found due; expiry records alone are harmless
            // (see `expiry` and `each_due`).
            tree.insert(order_key(shard, at, key), []).map_err(failed)?;
            tree.insert(ttl_key(shard, key), at.to_be_bytes())
                .map_err(failed)?;
            n += 2 * key.len() + 24;
            self.next_due.lower(db, shard, at);
        }
        tree.insert(record_key(shard, key), value).map_err(failed)?;
        self.written_bytes.fetch_add(n as u64, Relaxed);
        self.written_trees.fetch_or(1 << (db % 64), Relaxed);
        Ok(())
    }

    fn take(&self, db: usize, shard: usize, key: &[u8]) -> Option<(Owned, u32)> {
        self.read(db, shard, key, true)
    }

    fn get(&self, db: usize, shard: usize, key: &[u8]) -> Option<(Owned, u32)> {
        self.read(db, shard, key, false)
    }

    fn contains(&self, db: usize, shard: usize, key: &[u8]) -> bool {
        self.has_record(db, shard, key)
    }

    /// From the record's length, which the index knows (`records::kind_of_len`): no value
    /// is read.
    fn kind(&self, db: usize, shard: usize, key: &[u8]) -> Option<Kind> {
        let (tree, rk) = self.live(db, shard, key)?;
        let len = tree
            .size_of(&rk)
            .unwrap_or_else(|e| self.fatal("read", e))?;
        Some(self.kind_of_len(len))
    }

    fn discard(&self, db: usize, shard: usize, key: &[u8], volatile: bool) -> bool {
        // One lookup of the store and the dead list for both the check and the delete.
        let Some((tree, rk)) = self.live(db, shard, key) else {
            return false;
        };
        if !self.indexed(&tree, &rk) {
            return false;
        }
        self.watch.touched();
        self.delete(&tree, db, &rk);
        if volatile {
            self.delete_expiry(&tree, db, shard, key, None);
        }
        self.discards.fetch_add(1, Relaxed);
        true
    }

    fn remove(&self, db: usize, shard: usize, key: &[u8]) {
        self.watch.touched();
        if let Some(tree) = self.tree(db).filter(|_| Self::takes_key(key)) {
            self.delete(&tree, db, &record_key(shard, key));
            // The copy's expiry, if it had one (not known here: its record says).
            self.delete_expiry(&tree, db, shard, key, None);
        }
    }

    /// From the key's expiry record, beside its record: the value is not read. An expiry
    /// record outlives its record only where a write failed (the store then takes no
    /// more): one whose deletion failed is on the dead list and reads as none; one whose
    /// record was never written names a key the store does not hold, which the callers
    /// then find missing.
    fn expiry(&self, db: usize, shard: usize, key: &[u8]) -> Option<u64> {
        let tree = self.tree(db).filter(|_| Self::takes_key(key))?;
        let tk = ttl_key(shard, key);
        if self.dead.is_dead(db, &tk) {
            return None;
        }
        let found = tree.get(&tk).unwrap_or_else(|e| self.fatal("read", e))?;
        Some(expiry_of(&found).unwrap_or_else(|e| self.fatal("decode", e)))
    }

    /// From the shard's expiry order: only the due entries are read (and the deletion
    /// markers of those removed before, until compaction drops them), and nothing until
    /// the shard's next expiry.
    fn each_due(&self, db: usize, shard: usize, now: u64, f: &mut dyn FnMut(&[u8]) -> bool) {
        let Some(tree) = self
            .tree(db)
            .filter(|_| now >= self.next_due.get(db, shard))
        else {
            return;
        };
        let mut next = u64::MAX;
        for kv in tree.range(order_range(shard)) {
            let k = kv.key().unwrap_or_else(|e| self.fatal("scan", e));
            let (at, key) =
                ordered(&k).unwrap_or_else(|| self.fatal("decode", "a short order key"));
            if at > now {
                next = at;
                break;
            }
            if self.dead.is_dead(db, &k) {
                continue;
            }
            if !f(key) {
                // Stopped early: more may be due.
                next = at;
                break;
            }
        }
        self.next_due.set(db, shard, next);
    }

    fn cold_again(&self, db: usize, shard: usize, at: u64) {
        self.next_due.lower(db, shard, at);
    }

    fn each(&self, db: usize, shard: usize, f: &mut dyn FnMut(&[u8], Owned) -> bool) {
        let Some(tree) = self.tree(db) else {
            return;
        };
        for kv in tree.prefix(record_prefix(shard)) {
            let (k, v) = kv.into_inner().unwrap_or_else(|e| self.fatal("scan", e));
            if self.dead.is_dead(db, &k) {
                continue;
            }
            let (owned, _) = self.decode(&v).unwrap_or_else(|e| self.fatal("decode", e));
            self.read_bytes.fetch_add(v.len() as u64, Relaxed);
            if !f(&k[4..], owned) {
                return;
            }
        }
    }

    fn each_kind(
        &self,
        db: usize,
        shard: usize,
        wanted: &dyn Fn(&[u8]) -> bool,
        f: &mut KindVisitor<'_>,
    ) {
        let Some(tree) = self.tree(db) else {
            return;
        };
        // A second walk of the same records in step gives each one's length from the index:
        // the shard's lock keeps its records as they are meanwhile. A short record, which
        // the index holds, is read for its type and expiry; a long one (its value in a blob
        // file) is not: its length says its type, its expiry record its expiry.
        let lengths = tree.prefix(record_prefix(shard)).map(|kv| kv.size());
        for (kv, len) in tree.prefix(record_prefix(shard)).zip(lengths) {
            let len = len.unwrap_or_else(|e| self.fatal("scan", e));
            let long = (len >= SEPARATE_ABOVE).then(|| self.kind_of_len(len));
            let want = |k: &[u8]| !self.dead.is_dead(db, k) && wanted(&k[4..]);
            let (k, v) = kv
                .into_inner_if(|k| long.is_none() && want(k))
                .unwrap_or_else(|e| self.fatal("scan", e));
            let (kind, expire_at) = match (long, v) {
                (_, Some(v)) => {
                    self.read_bytes.fetch_add(v.len() as u64, Relaxed);
                    record_kind(&v).unwrap_or_else(|e| self.fatal("decode", e))
                }
                (Some(kind), None) if want(&k) => (kind, self.expiry(db, shard, &k[4..])),
                _ => continue,
            };
            if !f(&k[4..], kind, expire_at) {
                return;
            }
        }
    }

    fn each_key(&self, db: usize, shard: usize, f: &mut dyn FnMut(&[u8]) -> bool) {
        let Some(tree) = self.tree(db) else {
            return;
        };
        // The keys come from the tree's index: a value in a blob file is not read.
        for kv in tree.prefix(record_prefix(shard)) {
            let k = kv.key().unwrap_or_else(|e| self.fatal("scan", e));
            if !self.dead.is_dead(db, &k) && !f(&k[4..]) {
                return;
            }
        }
    }

    fn clear(&self, db: usize) {
        self.watch.touched();
        if let Some(tree) = self.tree(db) {
            match tree.clear() {
                Ok(()) => self.dead.cleared(db),
                Err(e) => {
                    self.write_failed("clear", e, db, None);
                    self.dead.failed_all(db);
                }
            }
        }
    }

    fn swap(&self, a: usize, b: usize) {
        self.watch.swapped();
        let mut trees = self.trees.write();
        if a < trees.len() && b < trees.len() {
            trees.swap(a, b);
            self.dead.swap(a, b);
            self.next_due.swap(a, b);
        }
    }
}

/// The marker file of a tier directory: only a directory that has it (or is empty) is
/// emptied at start, so a mistyped `tiering-dir` never deletes someone's files.
const MARKER: &str = "STRATA-TIER";

/// Makes `dir` a tier directory with a store in it (`dir/store`, emptied unless `keep`),
/// returning the store's path. Refuses a directory that holds other things.
fn prepare_dir(dir: &Path, keep: bool) -> Result<PathBuf, String> {
    let shown = dir.display();
    let marker = dir.join(MARKER);
    let empty = match std::fs::read_dir(dir) {
        Ok(mut entries) => entries.next().is_none(),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => true,
        Err(e) => return Err(format!("cannot read tiering-dir {shown}: {e}")),
    };
    if !empty && !marker.exists() {
        return Err(format!(
            "tiering-dir {shown} is not empty and holds no Strata tier (no {MARKER} file): \
             refusing to empty it; point tiering-dir at an empty or new directory"
        ));
    }
    let store = dir.join("store");
    if store.exists() && !keep {
        std::fs::remove_dir_all(&store)
            .map_err(|e| format!("cannot empty the tier at {}: {e}", store.display()))?;
    }
    std::fs::create_dir_all(dir).map_err(|e| format!("cannot create tiering-dir {shown}: {e}"))?;
    std::fs::write(
        &marker,
        b"Strata's on-disk tier: emptied at start unless the last exit kept it\n",
    )
    .map_err(|e| format!("cannot write {}: {e}", marker.display()))?;
    Ok(store)
}

/// Bytes an unprivileged process may still write on `path`'s file system.
fn free_bytes(path: &Path) -> Option<u64> {
    use std::os::unix::ffi::OsStrExt;
    let c = std::ffi::CString::new(path.as_os_str().as_bytes()).ok()?;
    // SAFETY: statvfs reads a NUL-terminated path and fills the struct it is given.
    let mut st: libc::statvfs = unsafe { std::mem::zeroed() };
    let ok = unsafe { libc::statvfs(c.as_ptr(), &mut st) } == 0;
    ok.then(|| st.f_bavail.saturating_mul(st.f_frsize))
}

/// Bytes the store's own threads (flushes, blob files, compactions: fjall names them
/// `fjall:*`) have written, from Linux's per-thread I/O counters; None elsewhere.
fn store_thread_writes() -> Option<u64> {
    let mut total = 0;
    for task in std::fs::read_dir("/proc/self/task").ok()?.flatten() {
        let comm = std::fs::read_to_string(task.path().join("comm")).unwrap_or_default();
        if !comm.starts_with("fjall") {
            continue;
        }
        let io = std::fs::read_to_string(task.path().join("io")).unwrap_or_default();
        total += io
            .lines()
            .find_map(|l| l.strip_prefix("wchar:"))
            .and_then(|v| v.trim().parse::<u64>().ok())
            .unwrap_or(0);
    }
    Some(total)
}

/// Write amplification: what the store wrote to disk per byte of records put into it.
/// Records reach its journal once on the spilling thread; the rest is the store's threads'.
pub fn write_amplification(records: u64) -> f64 {
    match store_thread_writes() {
        Some(w) if records > 0 => (records + w) as f64 / records as f64,
        _ => 0.0,
    }
}
