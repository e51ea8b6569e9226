//! Keeping the tier across a restart (docs/tiering.md, "Restarts").
//!
//! The snapshot stays the truth: it holds every entry, cold ones included, and says where
//! each one was when it was captured (`strata_storage::Place`). A start may take the store
//! as it finds it instead of rebuilding it only when the store holds exactly the newest
//! snapshot's cold entries and its clean copies: when nothing touched the store from the
//! moment that snapshot began until the process ended. [`Watch`] counts every call that
//! reads or changes the store; a snapshot during which the count did not move is a
//! candidate, and at exit, if the count has not moved since either, the store is synced
//! and the marker file [`KEPT`] names the snapshot. A start that finds the marker naming
//! the snapshot it is about to load keeps the store, and removes the marker before loading
//! anything: a crash from then on finds no marker, and the next start checks the store
//! against its snapshot instead (`recover.rs`).

use parking_lot::Mutex;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::SeqCst};
use strata_storage::SnapshotMeta;

/// The marker file, in the tier's directory: "<snapshot epoch> <its creation time> <its
/// size> <databases> <shards> <hash seed>" (an epoch alone could name another directory's
/// snapshot, an import's say). Records are filed by shard, and a key's shard follows from
/// the keyspace's hash seed: a kept store is read under the seed it was written with.
const KEPT: &str = "KEPT";

/// What tells whether the store still matches a snapshot.
#[derive(Default)]
pub struct Watch {
    /// Calls that read or changed the store (a read may leave a clean copy behind).
    touched: AtomicU64,
    /// SWAPDB exchanged two databases' trees: their names no longer say whose they are.
    swapped: AtomicBool,
    /// The last snapshot that captured an untouched store, and the count it saw.
    captured: Mutex<Option<(u64, u64)>>,
    /// This start kept the store: the snapshot's cold entries are adopted, not loaded.
    pub kept: AtomicBool,
}

impl Watch {
    #[inline]
    pub fn touched(&self) {
        self.touched.fetch_add(1, SeqCst);
    }

    pub fn swapped(&self) {
        self.swapped.store(true, SeqCst);
        self.touched();
    }

    /// A snapshot begins: the count to compare at its end.
    pub fn begin(&self) -> u64 {
        self.touched.load(SeqCst)
    }

    /// The store was kept for snapshot `epoch`: it matches it until touched, and an exit
    /// that took no snapshot may keep it again.
    pub fn kept_for(&self, epoch: u64) {
        self.kept.store(true, SeqCst);
        *self.captured.lock() = Some((epoch, self.touched.load(SeqCst)));
    }

    /// Snapshot `epoch`, begun at `count`, is written.
    pub fn captured(&self, epoch: u64, count: u64) {
        let mut c = self.captured.lock();
        *c = (self.touched.load(SeqCst) == count).then_some((epoch, count));
    }
}

/// The store's layout, last in the marker: a store another layout wrote is rebuilt.
/// 2: records with an expiry have an expiry record beside them. 3: and a place in their
/// shard's expiry order (`records.rs`). 4: records hold their entry's access bits. 5: long
/// records are padded to say their type in their length.
const FORMAT: u64 = 5;

/// Where a store's records come from: the data directory whose snapshots it follows, and
/// the keyspace's numbers of databases and shards a database.
pub struct Origin {
    pub data_dir: PathBuf,
    pub databases: usize,
    pub shards: usize,
}

/// The marker's text for snapshot `snap`.
fn marker_text(snap: &SnapshotMeta, origin: &Origin, seed: u64) -> String {
    let (dbs, shards) = (origin.databases, origin.shards);
    let (epoch, created, bytes) = (snap.epoch, snap.created_ms, snap.bytes);
    format!("{epoch} {created} {bytes} {dbs} {shards} {seed} {FORMAT}\n")
}

/// What a marker in `dir` says, if there is one (`strata check`, `check.rs`).
pub struct Marker {
    pub epoch: u64,
    pub created_ms: u64,
    pub bytes: u64,
    pub databases: usize,
    pub shards: usize,
    pub seed: u64,
}

impl Marker {
    pub fn read(dir: &Path) -> Result<Option<Marker>, String> {
        let path = dir.join(KEPT);
        let Some(f) = read_file(&path)?.map(|t| numbers(&t)) else {
            return Ok(None);
        };
        let &[epoch, created_ms, bytes, databases, shards, seed, FORMAT] = &f[..] else {
            return Err(format!(
                "{} is not a marker this version wrote",
                path.display()
            ));
        };
        let size = |n: u64| usize::try_from(n).map_err(|_| format!("{}: {n}", path.display()));
        Ok(Some(Marker {
            epoch,
            created_ms,
            bytes,
            databases: size(databases)?,
            shards: size(shards)?,
            seed,
        }))
    }

    /// Whether it names `snap`.
    pub fn names(&self, snap: &SnapshotMeta) -> bool {
        (self.epoch, self.created_ms, self.bytes) == (snap.epoch, snap.created_ms, snap.bytes)
    }
}

/// The newest snapshot in the data directory: the one a start loads.
fn newest(origin: &Origin) -> Result<Option<SnapshotMeta>, String> {
    strata_storage::latest_snapshot(&origin.data_dir).map_err(|e| e.to_string())
}

/// At exit, once no command runs: when the newest snapshot captured the store as it is
/// now, syncs the store and writes the marker. Anything else leaves no marker.
pub fn at_exit(origin: &Origin, tier: &crate::Tier) {
    let w = &tier.watch;
    let Some((epoch, count)) = *w.captured.lock() else {
        return;
    };
    let Ok(Some(snap)) = newest(origin) else {
        return;
    };
    if w.touched.load(SeqCst) != count
        || w.swapped.load(SeqCst)
        || tier.dead.broken()
        || snap.epoch != epoch
    {
        return;
    }
    let dir = tier.path();
    let text = marker_text(&snap, origin, strata_engine::hash_seed());
    let written = tier.sync().and_then(|()| {
        strata_storage::replace_file(&dir.join(KEPT), text.as_bytes()).map_err(|e| e.to_string())
    });
    match written {
        Ok(()) => tracing::info!(
            "tier at {}: kept for the next start (it matches snapshot {epoch})",
            dir.display()
        ),
        Err(e) => tracing::warn!("tier at {}: not kept: {e}", dir.display()),
    }
}

/// How a start takes the store it finds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Found {
    /// As the last exit kept it for the snapshot of this epoch (the marker names it).
    Kept(u64),
    /// Kept, and checked against the snapshot while it loads (`recover.rs`): a crash, or
    /// an exit that could not keep it, left it as it was.
    Check,
    /// Emptied: the snapshot and the journal refill it.
    Empty,
}

/// The file that says how the store's records are filed ("<databases> <shards> <hash
/// seed> <layout>"), written once the store is known to be whole (`note_origin`): what a
/// start needs to check a store no exit kept.
const ORIGIN: &str = "ORIGIN";

/// A file's text, None if there is no such file.
fn read_file(path: &Path) -> Result<Option<String>, String> {
    match std::fs::read_to_string(path) {
        Ok(t) => Ok(Some(t)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(format!("cannot read {}: {e}", path.display())),
    }
}

/// The numbers a marker or `ORIGIN` holds, up to the first that is not one.
fn numbers(text: &str) -> Vec<u64> {
    text.split_whitespace()
        .map_while(|s| s.parse().ok())
        .collect()
}

/// Reads a file of the tier directory and removes it (a crash from then on finds none).
fn take_file(dir: &Path, name: &str) -> Result<Option<String>, String> {
    let path = dir.join(name);
    let Some(text) = read_file(&path)? else {
        return Ok(None);
    };
    std::fs::remove_file(&path)
        .and_then(|()| strata_storage::fsync_dir(dir))
        .map_err(|e| format!("cannot remove {}: {e}", path.display()))?;
    Ok(Some(text))
}

fn origin_text(origin: &Origin, seed: u64) -> String {
    format!("{} {} {seed} {FORMAT}\n", origin.databases, origin.shards)
}

/// At start, before the store opens: how to take it. The marker and `ORIGIN` go either
/// way (`note_origin` writes the latter again once the store is whole).
pub fn at_start(origin: &Origin, dir: &Path) -> Result<Found, String> {
    let marker = take_file(dir, KEPT)?;
    let filed = take_file(dir, ORIGIN)?;
    let seed_at = |text: &str, i: usize| numbers(text).get(i).copied();
    let Some(snap) = newest(origin)? else {
        // Nothing to check a store against: the journal alone refills it.
        return Ok(Found::Empty);
    };
    if let Some((text, seed)) = marker.as_deref().and_then(|t| Some((t, seed_at(t, 5)?))) {
        // The seed last: nothing else may take it from a marker that does not match.
        if text == marker_text(&snap, origin, seed) && strata_engine::use_hash_seed(seed) {
            return Ok(Found::Kept(snap.epoch));
        }
    }
    match filed.as_deref().and_then(|t| Some((t, seed_at(t, 2)?))) {
        Some((text, seed))
            if text == origin_text(origin, seed) && strata_engine::use_hash_seed(seed) =>
        {
            Ok(Found::Check)
        }
        _ => Ok(Found::Empty),
    }
}

/// What `ORIGIN` in `dir` says, if it is there and this version wrote it (`strata check`):
/// the numbers of databases and shards, and the hash seed.
pub fn filed(dir: &Path) -> Result<Option<(usize, usize, u64)>, String> {
    let Some(f) = read_file(&dir.join(ORIGIN))?.map(|t| numbers(&t)) else {
        return Ok(None);
    };
    Ok(match f[..] {
        [dbs, shards, seed, FORMAT] => usize::try_from(dbs)
            .ok()
            .zip(usize::try_from(shards).ok())
            .map(|(d, s)| (d, s, seed)),
        _ => None,
    })
}

/// Writes `ORIGIN`: the store in `dir` is whole (emptied, kept, or checked), filed under
/// this process's hash seed; a later start may check it instead of emptying it.
pub fn note_origin(origin: &Origin, dir: &Path) -> Result<(), String> {
    let text = origin_text(origin, strata_engine::hash_seed());
    strata_storage::replace_file(&dir.join(ORIGIN), text.as_bytes())
        .map_err(|e| format!("cannot write {}: {e}", dir.join(ORIGIN).display()))
}
