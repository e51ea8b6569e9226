//! Fork-less, point-in-time snapshots (SAVE, BGSAVE, BGREWRITEAOF, `save` rules).
//!
//! A snapshot has an epoch E. It starts by appending a marker block to the journal and, in
//! the same critical section, making E the epoch writers see; then it walks shard after
//! shard, a chunk of table buckets per hold of the shard's lock (`Db::capture_chunk`). A
//! writer that sees E first copies aside the entry of each key it touches in a shard not
//! captured yet, unless a chunk gave that key already (`Db::preserve`); a command that
//! reaches keys it does not name (FLUSHALL...) captures the shards it holds whole. So the
//! snapshot is one point in time, and its extra memory is bounded by the keys written
//! meanwhile, not by the data set.
//!
//! Who captures and who writes the chunks of the walk: `walk.rs`.
//!
//! Each journal block carries the epoch its writer saw when it locked its shards. A block
//! with an epoch below E was applied before its shards were captured, so the snapshot holds
//! it; recovery loads the snapshot, then replays the journal from the marker skipping those.

use crate::exec::plan::LockPlan;
use crate::server::Server;
use crate::services::stats::ThreadStats;
use bytes::Bytes;
use parking_lot::Mutex;
use std::cell::Cell;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Instant;
use strata_engine::{Keyspace, Session};
use strata_storage::{Position, SnapshotWriter};
use walk::{capture, end_walk, walk, walk_beside, Consume};

mod schedule;
mod walk;
pub use schedule::cron;
pub use walk::help;

pub use super::snapshot_load::{expire_at_start, load, reload};
pub(crate) use super::snapshot_load::{load_newest, Load};

/// The journal record a snapshot starts with: a no-op when replayed.
const MARKER: &[u8] = b"*1\r\n$4\r\nPING\r\n";

#[derive(Default)]
pub struct Snapshots {
    /// The epoch of the snapshot being taken; 0 when none is.
    active: AtomicU64,
    /// The epoch the next snapshot gets.
    next: AtomicU64,
    /// Chunks captured by writers and helping workers, for the snapshot thread to write:
    /// (encoded entries, count).
    early: Mutex<Vec<(Vec<u8>, u64)>>,
    /// The walk's position: the shard (numbered across databases) being captured;
    /// usize::MAX before the walk opens.
    next_shard: AtomicUsize,
    /// Chunks captured by helping workers (`help`).
    helped: AtomicU64,
    /// When the snapshot thread last captured a chunk (Unix ms).
    progress_ms: AtomicU64,
    /// `snapshot-help-after-ms`.
    pub help_after_ms: AtomicU64,
    /// Workers inside `help`: the snapshot thread waits for them before its last write.
    helpers: AtomicUsize,
    running: AtomicBool,
    /// A BGREWRITEAOF is running (the snapshot drops the journal before it when done).
    pub rewriting: AtomicBool,
    /// Status of the last snapshot other than a rewrite (INFO rdb_last_bgsave_status;
    /// with `stop-writes-on-bgsave-error`, writes are refused while it failed).
    pub last_failed: AtomicBool,
    /// Rewrites (BGREWRITEAOF, automatic ones) that failed in a row; 0 after a success
    /// (INFO aof_last_bgrewrite_status).
    pub rewrite_failures: AtomicU64,
    /// The journal's size when its last rewrite ended, or when it was opened (Redis's
    /// aof_rewrite_base_size): `auto-aof-rewrite-percentage` counts growth from it.
    pub rewrite_base: AtomicU64,
    pub last_secs: AtomicU64,
    /// When the running snapshot started (Unix seconds).
    pub started_unix: AtomicU64,
    /// BGSAVE SCHEDULE / BGREWRITEAOF asked while one was running: start when it ends.
    pub scheduled: AtomicBool,
    pub scheduled_rewrite: AtomicBool,
}

impl Snapshots {
    pub fn in_progress(&self) -> bool {
        self.running.load(Ordering::Relaxed)
    }

    /// True while writers must capture their shards before writing.
    #[inline]
    pub fn active(&self) -> bool {
        self.active.load(Ordering::Relaxed) != 0
    }

    /// Snapshot chunks captured by workers for a starved snapshot thread (INFO
    /// persistence `snapshot_chunks_by_workers`, a Strata field).
    pub fn chunks_by_workers(&self) -> u64 {
        self.helped.load(Ordering::Relaxed)
    }

    /// After loading snapshot `epoch` at start: later snapshots get higher epochs.
    pub fn set_loaded(&self, epoch: u64) {
        self.next.store(epoch + 1, Ordering::Relaxed);
    }
}

/// A write's hold: the session on its shards, its mark as a write in flight, and the
/// snapshot epoch it saw once its shards were locked (its effects are tagged with it).
pub struct WriteHold<'a> {
    _session: Session<'a>,
    _in_flight: InFlight<'a>,
    pub epoch: u64,
}

/// Locks what `plan` names for a write (a command, an EXEC, a script) run by the worker
/// thread of `stats`.
pub fn open_write<'a>(server: &'a Server, stats: &'a ThreadStats, plan: LockPlan) -> WriteHold<'a> {
    let session = plan.open(server);
    let (epoch, in_flight) = begin_write(server, stats);
    WriteHold {
        _session: session,
        _in_flight: in_flight,
        epoch,
    }
}

thread_local! {
    /// The epoch of the write this thread has in flight, if any: a SAVE inside that
    /// write's EXEC must not wait for it.
    static OWN_WRITE: Cell<Option<u64>> = const { Cell::new(None) };
}

/// A write in flight, counted on its worker thread under its epoch's parity until dropped
/// (after its block is in the journal). A snapshot waits for the writes of the epoch before
/// its own to end before it captures anything: a script that began before the cut may
/// still take a shard it did not declare, and its block is skipped at replay (tagged below
/// the snapshot's epoch), so the snapshot must hold all of its writes.
pub struct InFlight<'a> {
    count: &'a AtomicU64,
}

impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        self.count.fetch_sub(1, Ordering::SeqCst);
        OWN_WRITE.set(None);
    }
}

/// The epoch a write is tagged with, counted in flight. The count goes up before the epoch
/// is read again, so a snapshot that switched the epoch meanwhile either sees the count or
/// the write sees the new epoch (both SeqCst). The counter is the thread's own: no other
/// core writes its cache line.
fn begin_write<'a>(server: &Server, stats: &'a ThreadStats) -> (u64, InFlight<'a>) {
    let mut epoch = server.persist.epoch.load(Ordering::SeqCst);
    loop {
        let count = &stats.writes_in_flight[(epoch & 1) as usize];
        count.fetch_add(1, Ordering::SeqCst);
        let now = server.persist.epoch.load(Ordering::SeqCst);
        if now == epoch {
            OWN_WRITE.set(Some(epoch));
            return (epoch, InFlight { count });
        }
        count.fetch_sub(1, Ordering::SeqCst);
        epoch = now;
    }
}

/// Waits until no write tagged with `older` (the epoch before this snapshot's) is in
/// flight, except the calling thread's own (SAVE inside an EXEC).
fn wait_for_older_writes(server: &Server, older: u64) {
    let own = OWN_WRITE.get().is_some_and(|e| e & 1 == older & 1) as u64;
    while server.stats.writes_in_flight((older & 1) as usize) > own {
        std::thread::sleep(std::time::Duration::from_millis(1));
    }
}

/// Called before each write command runs, under its shards' locks, while a snapshot is
/// being taken: keeps what the command is about to change as it was at the snapshot's
/// start. A key of a shard not captured yet gets its entry copied aside (once); a command
/// that reaches keys it does not name (FLUSHALL...) has every shard it holds captured
/// whole. A write whose session began before the snapshot (`write_epoch` below the
/// snapshot's) is part of the snapshot instead, as its journal block is skipped. `world`:
/// the write's lock plan is `LockPlan::World`.
pub fn before_write(server: &Server, write_epoch: u64, db: usize, world: bool, keys: &[&[u8]]) {
    let snap = &server.persist.snapshots;
    let epoch = snap.active.load(Ordering::SeqCst);
    if epoch == 0 || write_epoch != epoch {
        return;
    }
    if world {
        for id in Keyspace::session_shards() {
            if let (_, Some(chunk)) = capture(server, id, epoch, usize::MAX) {
                snap.early.lock().push(chunk);
            }
        }
    } else {
        for key in keys {
            server.keyspace.db(db).preserve(key, epoch);
        }
    }
}

/// Why a snapshot could not start.
pub const ALREADY: &str = "ERR Background save already in progress";

/// Takes a snapshot: on this thread (SAVE) or on a new one (BGSAVE). With `rewrite`, the
/// journal segments the snapshot covers are deleted afterwards (BGREWRITEAOF).
pub fn start(server: &Arc<Server>, background: bool, rewrite: bool) -> Result<(), String> {
    begin(server, background, rewrite)
}

fn begin(server: &Arc<Server>, background: bool, rewrite: bool) -> Result<(), String> {
    let snap = &server.persist.snapshots;
    if snap.running.swap(true, Ordering::SeqCst) {
        return Err(ALREADY.into());
    }
    snap.rewriting.store(rewrite, Ordering::Relaxed);
    snap.started_unix
        .store(Server::now_unix(), Ordering::Relaxed);
    let epoch = snap.next.fetch_add(1, Ordering::SeqCst).max(1);
    snap.next.fetch_max(epoch + 1, Ordering::SeqCst);
    let changes_before = server.stats.changes();
    // Whether the tier's store stays untouched while this captures it (`strata_tier::kept`).
    let tier_count = server.tier.get().map(|t| t.watch.begin());
    // Closed until the snapshot thread opens the walk (after older writes end).
    snap.next_shard.store(usize::MAX, Ordering::SeqCst);
    // The cut: writers that lock after this see `epoch` and capture before writing.
    // The function libraries as of the cut go into the file. With a journal, its marker
    // re-creates them too (replay runs it after the load); the registry stays locked until
    // the marker is in the journal.
    let (from, older, libraries) = match server.persist.journal() {
        Some(j) => {
            let libs = server.scripts.libraries.read();
            let codes: Vec<Bytes> = libs.values().map(|l| l.code.clone()).collect();
            let mut marker = MARKER.to_vec();
            marker.extend(functions_block(codes.iter().map(|c| &c[..])));
            let cut = |_, pos| {
                // `active` first: a writer that sees the new epoch sees it active.
                snap.active.store(epoch, Ordering::SeqCst);
                let older = server.persist.epoch.swap(epoch, Ordering::SeqCst);
                (pos, older)
            };
            // A rewrite's marker opens a segment, so that the rewrite deletes every
            // segment before it: what stays is what was written since it began.
            let (_, (pos, older)) = if rewrite {
                j.append_opening_segment(0, epoch, &marker, cut)
            } else {
                j.append_with_pos(0, epoch, &marker, cut)
            };
            drop(libs);
            (pos, older, codes)
        }
        None => {
            let libs = server.scripts.libraries.read();
            let codes = libs.values().map(|l| l.code.clone()).collect();
            snap.active.store(epoch, Ordering::SeqCst);
            let older = server.persist.epoch.swap(epoch, Ordering::SeqCst);
            (Position::default(), older, codes)
        }
    };
    let run = {
        let server = server.clone();
        move || {
            let started = Instant::now();
            if older & 1 != epoch & 1 {
                wait_for_older_writes(&server, older);
            }
            let result = write(&server, epoch, from, &libraries, rewrite, background);
            let snap = &server.persist.snapshots;
            end_walk(snap);
            snap.last_secs
                .store(started.elapsed().as_secs(), Ordering::Relaxed);
            if !rewrite {
                snap.last_failed.store(result.is_err(), Ordering::Relaxed);
            } else if result.is_ok() {
                snap.rewrite_failures.store(0, Ordering::Relaxed);
                server.persist.journal_based();
            } else {
                snap.rewrite_failures.fetch_add(1, Ordering::Relaxed);
            }
            match &result {
                Ok(entries) => {
                    if let (Some(t), Some(count)) = (server.tier.get(), tier_count) {
                        t.watch.captured(epoch, count);
                    }
                    server
                        .last_save
                        .store(Server::now_unix(), Ordering::Relaxed);
                    server
                        .persist
                        .saved_changes
                        .fetch_max(changes_before, Ordering::Relaxed);
                    tracing::info!(
                        "snapshot {epoch} saved: {entries} keys in {} ms",
                        started.elapsed().as_millis()
                    );
                }
                Err(e) => tracing::warn!("snapshot {epoch} failed: {e}"),
            }
            snap.rewriting.store(false, Ordering::Relaxed);
            snap.running.store(false, Ordering::SeqCst);
            result
        }
    };
    if background {
        std::thread::Builder::new()
            .name("strata-snapshot".into())
            .spawn(move || {
                // The capture runs under SCHED_IDLE on a thread of its own (`walk_beside`:
                // niced, a thread once picked keeps its core for a time slice, which cost
                // GET -P 1 under back-to-back snapshots of 10M keys a p99 of 3.5–3.8 ms
                // against 0.8–1.3). This thread writes the file and must end even on a
                // machine whose every core is busy: it runs as the workers do, and a
                // worker woken onto its core does not wait for its time slice to end.
                let _ = crate::net::sched::set_current(crate::net::sched::Policy::Batch);
                let _ = run();
            })
            .map_err(|e| e.to_string())?;
        Ok(())
    } else {
        run().map(|_| ())
    }
}

/// FUNCTION FLUSH then a FUNCTION LOAD of each library's code: what re-creates the
/// registry at replay, after the snapshot's own copy.
fn functions_block<'a>(codes: impl Iterator<Item = &'a [u8]>) -> Vec<u8> {
    let mut out = Vec::new();
    crate::exec::effects::encode(&mut out, &[b"FUNCTION".as_slice(), b"FLUSH"]);
    for code in codes {
        crate::exec::effects::encode(&mut out, &[b"FUNCTION".as_slice(), b"LOAD", code]);
    }
    out
}

/// Where a streamed snapshot's entries go (`save_streamed`): chunks of entries encoded
/// with `strata_storage::snapshot::put_*`, from any thread.
pub struct ChunkSink(Mutex<SnapshotWriter>);

impl ChunkSink {
    /// Writes `entries` whole entries encoded in `bytes`.
    pub fn write(&self, bytes: &[u8], entries: u64) -> Result<(), String> {
        self.0
            .lock()
            .raw_chunk(bytes, entries)
            .map_err(|e| format!("writing the snapshot: {e}"))
    }
}

/// A snapshot whose entries come from `produce` rather than from the keyspace: `strata
/// import` encodes a file's keys straight into one, so they are never held in memory. The
/// function libraries in the registry when `produce` returns go into the journal after
/// the snapshot's marker, in a block of their own (so a failed import leaves the journal
/// replaying as before). Needs the journal; the journal before the snapshot is dropped,
/// as by BGREWRITEAOF. The keyspace is not part of it: the caller owns a server that
/// serves nothing.
pub fn save_streamed<T, E: From<String>>(
    server: &Server,
    produce: impl FnOnce(&Arc<ChunkSink>) -> Result<T, E>,
) -> Result<T, E> {
    let snap = &server.persist.snapshots;
    if snap.running.swap(true, Ordering::SeqCst) {
        return Err(E::from(ALREADY.into()));
    }
    let result = write_streamed(server, produce);
    snap.running.store(false, Ordering::SeqCst);
    result
}

fn write_streamed<T, E: From<String>>(
    server: &Server,
    produce: impl FnOnce(&Arc<ChunkSink>) -> Result<T, E>,
) -> Result<T, E> {
    let snap = &server.persist.snapshots;
    let j = server
        .persist
        .journal()
        .ok_or_else(|| "a streamed snapshot needs the journal (appendonly yes)".to_string())?;
    let epoch = snap.next.fetch_add(1, Ordering::SeqCst).max(1);
    snap.next.fetch_max(epoch + 1, Ordering::SeqCst);
    let (_, from) = j.append_opening_segment(0, epoch, MARKER, |_, pos| {
        server.persist.epoch.store(epoch, Ordering::SeqCst);
        pos
    });
    let dir = server.data_dir();
    let w = SnapshotWriter::create(&dir, epoch, from).map_err(|e| e.to_string())?;
    let sink = Arc::new(ChunkSink(Mutex::new(w)));
    let out = produce(&sink)?;
    finish_streamed(server, &j, epoch, from, sink)?;
    Ok(out)
}

/// The end of `save_streamed` once every entry is written: the function libraries into
/// the journal, the snapshot into place, what it replaces deleted.
fn finish_streamed(
    server: &Server,
    j: &strata_storage::Journal,
    epoch: u64,
    from: Position,
    sink: Arc<ChunkSink>,
) -> Result<(), String> {
    let functions = functions_block(
        server
            .scripts
            .libraries
            .read()
            .values()
            .map(|l| &l.code[..]),
    );
    // Tagged with the snapshot's epoch: replayed after loading it.
    j.append_with_pos(0, epoch, &functions, |_, _| ());
    j.sync().map_err(|e| e.to_string())?;
    let w = Arc::into_inner(sink)
        .ok_or("a thread still holds the snapshot being written")?
        .0
        .into_inner();
    let dir = server.data_dir();
    w.finish().map_err(|e| e.to_string())?;
    strata_storage::remove_older_snapshots(&dir, epoch).map_err(|e| e.to_string())?;
    j.drop_before(from).map_err(|e| e.to_string())?;
    server
        .last_save
        .store(Server::now_unix(), Ordering::Relaxed);
    Ok(())
}

/// Captures every shard and writes the file. Returns the number of keys. A `background`
/// snapshot captures on a thread of its own (`walk_beside`).
fn write(
    server: &Arc<Server>,
    epoch: u64,
    from: Position,
    libraries: &[Bytes],
    rewrite: bool,
    background: bool,
) -> Result<u64, String> {
    let dir = server.data_dir();
    let mut w = SnapshotWriter::create(&dir, epoch, from).map_err(|e| e.to_string())?;
    w.functions(libraries.iter().map(|c| &c[..]))
        .map_err(|e| e.to_string())?;
    let entries = if background {
        let (entries, back) = walk_beside(server, epoch, w)?;
        w = back;
        entries
    } else {
        walk(server, epoch, false, &mut |bytes, count| {
            w.raw_chunk(bytes, count).map_err(|e| e.to_string())
        })?
    };
    if let Some(j) = server.persist.journal() {
        // The snapshot names a journal position: it must be on disk before the snapshot.
        j.sync().map_err(|e| e.to_string())?;
    }
    w.finish().map_err(|e| e.to_string())?;
    strata_storage::remove_older_snapshots(&dir, epoch).map_err(|e| e.to_string())?;
    if rewrite {
        if let Some(j) = server.persist.journal() {
            j.drop_before(from).map_err(|e| e.to_string())?;
            server
                .persist
                .snapshots
                .rewrite_base
                .store(j.size_bytes(), Ordering::Relaxed);
        }
    }
    Ok(entries)
}

/// A point-in-time capture of the keyspace for another consumer than a snapshot file (a
/// replica's full sync): the same cut and walk as a snapshot, one at a time with them.
/// Its owner takes the cut with [`PointInTime::cut`] while it holds every shard, so that it
/// can read what must match the cut (the replication offset) in the same instant.
pub struct PointInTime<'s> {
    server: &'s Server,
    epoch: u64,
    older: Option<u64>,
}

impl<'s> PointInTime<'s> {
    /// Reserves the capture machinery; None while a snapshot or another capture runs.
    pub fn reserve(server: &'s Server) -> Option<PointInTime<'s>> {
        let snap = &server.persist.snapshots;
        if snap.running.swap(true, Ordering::SeqCst) {
            return None;
        }
        let epoch = snap.next.fetch_add(1, Ordering::SeqCst).max(1);
        snap.next.fetch_max(epoch + 1, Ordering::SeqCst);
        snap.next_shard.store(usize::MAX, Ordering::SeqCst);
        Some(PointInTime {
            server,
            epoch,
            older: None,
        })
    }

    /// The cut: writes that lock their shards after this see the capture's epoch and
    /// keep what they change for it. Hold every shard while calling it.
    pub fn cut(&mut self) {
        self.server
            .persist
            .snapshots
            .active
            .store(self.epoch, Ordering::SeqCst);
        let older = self.server.persist.epoch.swap(self.epoch, Ordering::SeqCst);
        self.older = Some(older);
    }

    /// Walks every shard as of the cut, handing each chunk of encoded entries to
    /// `consume` (decode them with `strata_storage::decode_entries`). Returns how many.
    pub fn run(self, consume: &mut Consume<'_>) -> Result<u64, String> {
        let Some(older) = self.older else {
            return Err("capture run before its cut".into());
        };
        if older & 1 != self.epoch & 1 {
            wait_for_older_writes(self.server, older);
        }
        walk(self.server, self.epoch, true, consume)
    }
}

impl Drop for PointInTime<'_> {
    fn drop(&mut self) {
        let snap = &self.server.persist.snapshots;
        end_walk(snap);
        snap.running.store(false, Ordering::SeqCst);
    }
}

/// On the way out (SHUTDOWN, SIGTERM): as Redis, a snapshot when save rules are set or
/// SAVE was asked for, so the next start loads it instead of replaying the journal. The
/// journal before it is dropped. (The journal itself is flushed and fsynced either way.)
/// Ok(true): a snapshot was taken.
pub fn on_shutdown(server: &Arc<Server>, save: bool) -> Result<bool, String> {
    if !save && server.config.get().save.0.is_empty() {
        return Ok(false);
    }
    // A replica's full sync may be capturing: its connection closes on the way out, which
    // ends it soon.
    let until = Instant::now() + std::time::Duration::from_secs(30);
    loop {
        match start(server, false, true) {
            Err(e) if e == ALREADY && Instant::now() < until => {
                std::thread::sleep(std::time::Duration::from_millis(10))
            }
            r => return r.map(|()| true),
        }
    }
}
