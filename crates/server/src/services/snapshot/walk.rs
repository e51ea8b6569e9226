//! The walk of a snapshot over every shard: who captures each chunk, and who writes it.
//!
//! A foreground snapshot (SAVE) and a replica's full sync walk on their own thread. A
//! background snapshot's capture runs on a thread of its own under SCHED_IDLE: it uses the
//! CPU the workers leave, and a worker that wakes takes its core at once (docs/benchmarks.md,
//! "Snapshot p99"). While it captures nothing for `snapshot-help-after-ms`, workers capture
//! a chunk each before their event loop sleeps (`help`), and the snapshot's own thread, which
//! writes the chunks and ends the walk, captures too (`walk_beside`).

use super::Snapshots;
use crate::net::sched::{self, Policy};
use crate::server::Server;
use parking_lot::Mutex;
use std::cell::Cell;
use std::sync::atomic::{AtomicI32, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use strata_engine::{Capture, Captured, ShardId};
use strata_storage::{Place, SnapshotWriter};

/// Table buckets the snapshot thread captures per hold of a shard's lock: about 150
/// entries, so a client waits microseconds for a capture, not a whole shard's. Shorter
/// holds than 1024 buckets' halved SET's median p99 during snapshots (1.9 to 1.0 ms in 9
/// interleaved runs, docs/benchmarks.md "Snapshot chunks of 256 buckets") at no cost in
/// snapshot time.
const CHUNK_BUCKETS: usize = 256;

/// A worker helps at most once per HELP_EVERY: a chunk takes tens of microseconds, so
/// helping takes about a tenth of a worker's time.
const HELP_EVERY: Duration = Duration::from_micros(500);

thread_local! {
    /// When this worker last helped the snapshot.
    static LAST_HELP: Cell<Option<Instant>> = const { Cell::new(None) };
}

/// Called by a worker before its event loop sleeps: if a snapshot runs and its thread has
/// captured nothing for `snapshot-help-after-ms`, captures the next chunk of its walk. One
/// chunk (tens of microseconds) per call, so a request arriving meanwhile waits no longer.
pub fn help(server: &Server) {
    let snap = &server.persist.snapshots;
    if !snap.active() || !stalled(snap) {
        return;
    }
    let now = Instant::now();
    if LAST_HELP
        .get()
        .is_some_and(|t| now.duration_since(t) < HELP_EVERY)
    {
        return;
    }
    LAST_HELP.set(Some(now));
    if step_beside(server, None).is_some() {
        snap.helped.fetch_add(1, Ordering::Relaxed);
    }
}

/// One step of the walk by a thread other than the one that ends it, for the snapshot
/// `epoch` (None: whichever is active). Counted in `helpers` before `active` is read again
/// (both SeqCst): the thread that clears `active` and then waits for `helpers` to reach 0
/// never writes its last chunks while another still holds one. None once the walk is over.
fn step_beside(server: &Server, epoch: Option<u64>) -> Option<u64> {
    let snap = &server.persist.snapshots;
    snap.helpers.fetch_add(1, Ordering::SeqCst);
    let active = snap.active.load(Ordering::SeqCst);
    let step = if active != 0 && epoch.is_none_or(|e| e == active) {
        walk_step(server, active)
    } else {
        None
    };
    snap.helpers.fetch_sub(1, Ordering::SeqCst);
    step
}

/// Captures one chunk of the walk for snapshot `epoch` and queues it for the file: the
/// entries it held. None when the walk is over (every shard captured).
fn walk_step(server: &Server, epoch: u64) -> Option<u64> {
    let snap = &server.persist.snapshots;
    let ks = &server.keyspace;
    let per_db = ks.db(0).shard_count();
    let total = ks.db_count() * per_db;
    let mut passed = 0;
    loop {
        let i = snap.next_shard.load(Ordering::SeqCst);
        if i >= total {
            return None;
        }
        let (state, chunk) = capture(server, (i / per_db, i % per_db), epoch, CHUNK_BUCKETS);
        let entries = chunk.as_ref().map_or(0, |c| c.1);
        if let Some(chunk) = chunk {
            snap.early.lock().push(chunk);
        }
        if state != Capture::More {
            // Only the first to see the shard finished moves the walk on.
            let _ = snap
                .next_shard
                .compare_exchange(i, i + 1, Ordering::SeqCst, Ordering::SeqCst);
        }
        // A shard captured already (by a writer, or by another helper's last chunk) cost
        // nothing, an empty one little: go on to the next.
        let empty = chunk_was_empty(state, entries);
        if state != Capture::Already && !(empty && passed < EMPTY_PER_STEP) {
            return Some(entries);
        }
        passed += u32::from(empty);
    }
}

/// Empty shards one step passes over before it returns: each is a lock and a look, and
/// the databases a server leaves empty hold most shards (16 databases of 1,024 shards:
/// one step each kept a starved snapshot of 1,000 keys going for most of a second).
const EMPTY_PER_STEP: u32 = 128;

fn chunk_was_empty(state: Capture, entries: u64) -> bool {
    state == Capture::Done && entries == 0
}

/// Encodes up to `buckets` more table buckets of shard `id` for the snapshot of `epoch`
/// (none if it was captured already): whether the shard is done, and the entries, if any.
pub(super) fn capture(
    server: &Server,
    (db, idx): ShardId,
    epoch: u64,
    buckets: usize,
) -> (Capture, Option<(Vec<u8>, u64)>) {
    let mut buf = Vec::new();
    let mut n = 0u64;
    let state = server
        .keyspace
        .db(db)
        .capture_chunk(idx, epoch, buckets, |c| {
            // Where the entry is, for a restart that keeps the tier (`strata_tier::kept`).
            let (place, live, saved) = match c {
                Captured::Entry(e) => (Place::Ram, Some(e), None),
                Captured::Clean(e) => (Place::Clean, Some(e), None),
                Captured::Value(key, o) => (Place::Ram, None, Some((key, o))),
                Captured::Cold(key, o) => (Place::Cold, None, Some((key, o))),
            };
            let (start, db) = (buf.len(), db as u32);
            if let Some(e) = live {
                strata_storage::encode_entry(&mut buf, db, e.key(), e.expire_at(), e);
            } else if let Some((key, o)) = saved {
                strata_storage::encode_value(&mut buf, db, key, o.expire_at, &o.value);
            }
            strata_storage::mark_place(&mut buf, start, place);
            n += 1;
        });
    (state, (n > 0).then_some((buf, n)))
}

/// Takes each chunk of encoded entries of a walk, and their count.
pub(super) type Consume<'a> = dyn FnMut(&[u8], u64) -> Result<(), String> + 'a;

/// The walk of snapshot `epoch` over every shard, on this thread (workers join in while it
/// is starved, `help`): each chunk of encoded entries (`strata_storage::encode_entry`'s
/// form) goes to `consume` as it is captured. Returns the number of entries. With
/// `stranded`, the thread hands its CPU to workers waiting for one (`net::stranded`).
pub(super) fn walk(
    server: &Server,
    epoch: u64,
    stranded: bool,
    consume: &mut Consume<'_>,
) -> Result<u64, String> {
    let snap = &server.persist.snapshots;
    open(snap);
    let mut handing = Handing::new(stranded);
    let mut entries = 0u64;
    while walk_step(server, epoch).is_some() {
        moved(snap);
        let n = flush_early(snap, consume)?;
        entries += n;
        key_save_delay(server, n);
        handing.between_chunks();
    }
    handing.report(epoch);
    Ok(entries + close(snap, consume)?)
}

/// How often a background snapshot's thread checks that its walk moves.
const CHECK_EVERY: Duration = Duration::from_millis(10);

/// What that thread spends capturing per CHECK_EVERY while the walk is starved: about a
/// tenth of a core, as a helping worker.
const STEP_BUDGET: Duration = Duration::from_millis(1);

/// Chunks the workers capture per CHECK_EVERY that leave the walk to them: under a load
/// that keeps them busy they help at up to two chunks a millisecond each; a request now and
/// then (a poll of INFO) is not a load that can carry a walk.
const WORKERS_CARRY: u64 = 4;

/// A snapshot file written by two threads: the walker while it runs, the snapshot's own
/// thread while the walker is starved and at the end, which takes the writer back.
struct Shared {
    writer: Mutex<Option<SnapshotWriter>>,
    entries: AtomicU64,
    failed: Mutex<Option<String>>,
    /// The walker's thread id until it leaves (0 once it has).
    walker: AtomicI32,
}

impl Shared {
    /// Writes the chunks queued so far, unless the file is closed already. A failure is
    /// kept before the file is let go, so that whoever takes it next knows.
    fn flush(&self, snap: &Snapshots) -> Result<(), String> {
        let mut guard = self.writer.lock();
        let Some(w) = guard.as_mut() else {
            return Ok(());
        };
        let written = flush_early(snap, &mut |bytes, count| {
            w.raw_chunk(bytes, count).map_err(|e| e.to_string())
        });
        match written {
            Ok(n) => {
                self.entries.fetch_add(n, Ordering::Relaxed);
                Ok(())
            }
            Err(e) => {
                *self.failed.lock() = Some(e.clone());
                Err(e)
            }
        }
    }

    /// The first write that failed, if one did.
    fn failure(&self) -> Result<(), String> {
        match self.failed.lock().clone() {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }
}

/// The walk of a background snapshot, into `w`: returns the entries and the writer. The
/// walker, a thread under SCHED_IDLE, captures and writes as the snapshot's only thread
/// once did. A SCHED_IDLE thread gets almost no CPU while other processes keep every core
/// busy (measured: a BGSAVE of 10k keys beside three CPU hogs took 33-49 s), and workers
/// help only while they serve requests; so once the walker has captured nothing for
/// `snapshot-help-after-ms`, and the workers too little to carry the walk, this thread
/// (SCHED_BATCH) captures and writes too, STEP_BUDGET at a time; and it ends the walk. A
/// starved walker is not waited for, unless it holds the file: it leaves when it next runs.
/// (This thread writing every chunk instead raised SET's p99 during snapshots by a third.)
pub(super) fn walk_beside(
    server: &Arc<Server>,
    epoch: u64,
    w: SnapshotWriter,
) -> Result<(u64, SnapshotWriter), String> {
    let snap = &server.persist.snapshots;
    open(snap);
    let shared = Arc::new(Shared {
        writer: Mutex::new(Some(w)),
        entries: AtomicU64::new(0),
        failed: Mutex::new(None),
        walker: AtomicI32::new(0),
    });
    let me = std::thread::current();
    let (walker, theirs) = (server.clone(), shared.clone());
    std::thread::Builder::new()
        .name("strata-snapshot-walk".into())
        .spawn(move || {
            theirs.walker.store(sched::current_tid(), Ordering::SeqCst);
            let _ = sched::set_current(Policy::Idle);
            let snap = &walker.persist.snapshots;
            let mut handing = Handing::new(true);
            while let Some(n) = step_beside(&walker, Some(epoch)) {
                moved(snap);
                if theirs.flush(snap).is_err() {
                    break;
                }
                key_save_delay(&walker, n);
                handing.between_chunks();
            }
            handing.report(epoch);
            theirs.walker.store(0, Ordering::SeqCst);
            me.unpark();
        })
        .map_err(|e| e.to_string())?;
    let shared = LetWalkerGo(shared);
    let shared = &shared.0;
    let (per_db, dbs) = (
        server.keyspace.db(0).shard_count(),
        server.keyspace.db_count(),
    );
    let mut helped = snap.helped.load(Ordering::Relaxed);
    loop {
        std::thread::park_timeout(CHECK_EVERY);
        shared.failure()?;
        if snap.next_shard.load(Ordering::SeqCst) >= per_db * dbs {
            break;
        }
        let by_workers = snap.helped.load(Ordering::Relaxed) - helped;
        helped += by_workers;
        if stalled(snap) && by_workers < WORKERS_CARRY {
            let until = Instant::now() + STEP_BUDGET;
            while Instant::now() < until && step_beside(server, Some(epoch)).is_some() {}
            shared.flush(snap)?;
        }
    }
    // The file back from the walker: what it still writes after this goes nowhere, and
    // nothing is left for it to write (every shard is captured, `close` waits for steps).
    let mut w = shared
        .writer
        .lock()
        .take()
        .ok_or("the snapshot's file was closed twice")?;
    shared.failure()?;
    let last = close(snap, &mut |bytes, count| {
        w.raw_chunk(bytes, count).map_err(|e| e.to_string())
    })?;
    Ok((shared.entries.load(Ordering::Relaxed) + last, w))
}

/// On the way out of `walk_beside`, however it ends: a walker starved mid-walk is still
/// waiting to run its last lines, and until it has, the process cannot end: a SIGKILL, or
/// the exit after a SIGTERM, waits for it (beside two busy processes per core, measured
/// 1.8-3.4 s, and once minutes). Where the process may (CAP_SYS_NICE), it leaves
/// SCHED_IDLE to leave at once. A walk that failed drops the file here, which removes its
/// partial file at once: left to the walker, a full disk stayed full until it ran.
struct LetWalkerGo(Arc<Shared>);

impl Drop for LetWalkerGo {
    fn drop(&mut self) {
        let _ = sched::set_thread(self.0.walker.load(Ordering::SeqCst), Policy::Batch);
        drop(self.0.writer.lock().take());
    }
}

/// Opens the walk at its first shard.
fn open(snap: &Snapshots) {
    moved(snap);
    snap.next_shard.store(0, Ordering::SeqCst);
}

/// The walking thread captured a chunk (or slept for `rdb-key-save-delay`).
fn moved(snap: &Snapshots) {
    snap.progress_ms
        .store(strata_engine::clock::now_ms(), Ordering::Relaxed);
}

/// Whether the walking thread has captured nothing for `snapshot-help-after-ms`.
fn stalled(snap: &Snapshots) -> bool {
    let since =
        strata_engine::clock::now_ms().saturating_sub(snap.progress_ms.load(Ordering::Relaxed));
    since >= snap.help_after_ms.load(Ordering::Relaxed)
}

/// Writes the chunks queued so far; returns their entries.
fn flush_early(snap: &Snapshots, consume: &mut Consume<'_>) -> Result<u64, String> {
    let early = std::mem::take(&mut *snap.early.lock());
    let mut n = 0;
    for (bytes, count) in early {
        consume(&bytes, count)?;
        n += count;
    }
    Ok(n)
}

/// Ends a walk whose every shard is captured: no writer adds to `early` any more, but a
/// thread that saw the snapshot active may still be queueing its last chunk.
fn close(snap: &Snapshots, consume: &mut Consume<'_>) -> Result<u64, String> {
    snap.active.store(0, Ordering::SeqCst);
    wait_for_helpers(snap);
    flush_early(snap, consume)
}

/// Until no other thread is inside a step of the walk. A starved walker may be in one: this
/// thread then sleeps rather than spin against it.
fn wait_for_helpers(snap: &Snapshots) {
    let mut spins = 0;
    while snap.helpers.load(Ordering::SeqCst) != 0 {
        if spins < 64 {
            std::thread::yield_now();
        } else {
            std::thread::sleep(Duration::from_micros(100));
        }
        spins += 1;
    }
}

/// A walking thread's hand-over of its CPU to workers waiting for one (Linux only).
struct Handing {
    #[cfg(target_os = "linux")]
    stranded: Option<crate::net::stranded::Stranded>,
}

impl Handing {
    fn new(on: bool) -> Handing {
        #[cfg(not(target_os = "linux"))]
        let _ = on;
        Handing {
            #[cfg(target_os = "linux")]
            stranded: on.then(crate::net::stranded::Stranded::find).flatten(),
        }
    }

    fn between_chunks(&mut self) {
        #[cfg(target_os = "linux")]
        if let Some(s) = self.stranded.as_mut() {
            s.take_over();
        }
    }

    fn report(&self, _epoch: u64) {
        #[cfg(target_os = "linux")]
        if let Some(s) = &self.stranded {
            tracing::debug!("snapshot {_epoch}: {} workers moved onto its CPU", s.moved);
        }
    }
}

/// `rdb-key-save-delay` (a test hook, as in Redis, where tests use it to keep a save or a
/// full sync running): microseconds per entry written, or for -n one microsecond every n
/// entries. Slept by the walk between chunks, outside every lock, keeping its progress
/// fresh so that workers do not take the walk over (`help`).
fn key_save_delay(server: &Server, entries: u64) {
    let us = match server.config.get().rdb_key_save_delay {
        0 => return,
        d if d > 0 => entries.saturating_mul(d as u64),
        d => entries / u64::from(d.unsigned_abs()),
    };
    let mut left = std::time::Duration::from_micros(us);
    while !left.is_zero() {
        let nap = left.min(std::time::Duration::from_millis(10));
        std::thread::sleep(nap);
        left -= nap;
        moved(&server.persist.snapshots);
    }
}

/// After a walk, complete or abandoned: writers stop capturing, and once no helper holds
/// a chunk any more, what is left queued is dropped (so it never reaches the next one).
pub(super) fn end_walk(snap: &Snapshots) {
    snap.active.store(0, Ordering::SeqCst);
    wait_for_helpers(snap);
    snap.early.lock().clear();
}
