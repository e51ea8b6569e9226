//! The server's side of durability: what reaches the journal and when a reply may leave,
//! the data directory's lock, and recovery at start-up. strata-storage owns the files.
//!
//! A write holds its shards until its effect is appended (see `exec`), so the journal
//! orders writes to a key as memory saw them. Under `appendfsync always` a connection's
//! replies wait until the journal is durable up to that connection's last write; the
//! journal's one flusher thread covers every write appended meanwhile with one fsync.

use crate::config::Appendfsync;
use crate::exec::effects::Audience;
use crate::exec::sink::{Block, EffectSink};
use crate::server::Server;
use arc_swap::ArcSwapOption;
use parking_lot::Mutex;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;
use strata_storage::{DirLock, Fsync, Journal, JournalOptions};
use tokio::sync::Notify;

#[derive(Default)]
pub struct Persist {
    /// The journal while `appendonly yes`; CONFIG SET appendonly attaches and detaches it.
    journal: ArcSwapOption<Journal>,
    /// The journal's registration among the effect sinks, to remove it on detach.
    sink: Mutex<Option<Arc<dyn EffectSink>>>,
    /// Serialises attaching and detaching the journal.
    switching: Mutex<()>,
    /// A journal switched on at run time has no snapshot under it yet (Redis's
    /// AOF_WAIT_REWRITE): until a rewrite succeeds, exiting would lose what was written
    /// before it was attached, so a shutdown without FORCE refuses.
    unbased: AtomicBool,
    dir_lock: Mutex<Option<DirLock>>,
    /// Wakes connections waiting for an fsync (appendfsync always).
    durable: Arc<Notify>,
    /// `Stats::changes` as it was when the last successful snapshot began: the changes
    /// since are INFO's rdb_changes_since_last_save and what `save` rules count.
    pub saved_changes: AtomicU64,
    /// Snapshot epoch writers tag their journal blocks with (recovery skips blocks a
    /// snapshot already holds).
    pub epoch: AtomicU64,
    /// What recovery did at start (INFO, logs).
    pub loaded: Mutex<LoadReport>,
    /// Keys the last load of a snapshot stored, and those it found expired (INFO's
    /// rdb_last_load_keys_loaded and rdb_last_load_keys_expired).
    pub load_keys_loaded: AtomicU64,
    pub load_keys_expired: AtomicU64,
    pub snapshots: crate::services::snapshot::Snapshots,
}

#[derive(Default, Clone, Debug)]
pub struct LoadReport {
    pub blocks: u64,
    pub commands: u64,
    pub millis: u64,
    pub torn_tail: Option<String>,
}

pub fn fsync_policy(policy: Appendfsync) -> Fsync {
    match policy {
        Appendfsync::Always => Fsync::Always,
        Appendfsync::No => Fsync::No,
        Appendfsync::Everysec => Fsync::EverySec,
    }
}

impl Persist {
    /// True while CONFIG SET appendonly is switching the journal (INFO counts a switch to
    /// on as a rewrite in progress until its snapshot has started).
    pub fn switching(&self) -> bool {
        self.switching.is_locked()
    }

    /// The journal was switched on and no rewrite has given it a snapshot to start from.
    pub fn journal_unbased(&self) -> bool {
        self.unbased.load(Ordering::SeqCst)
    }

    /// A rewrite succeeded: the journal starts from its snapshot.
    pub fn journal_based(&self) {
        self.unbased.store(false, Ordering::SeqCst);
    }

    /// The journal, when `appendonly yes`.
    pub fn journal(&self) -> Option<Arc<Journal>> {
        self.journal.load_full()
    }

    /// Runs `f` with the journal, if any, without taking a reference count (the worker
    /// threads do it as they go idle).
    pub fn with_journal<R>(&self, f: impl FnOnce(&Journal) -> R) -> Option<R> {
        self.journal.load().as_deref().map(f)
    }

    /// Changes since the last successful snapshot began (Redis's `server.dirty`).
    pub fn dirty(&self, stats: &crate::services::stats::Stats) -> u64 {
        stats
            .changes()
            .saturating_sub(self.saved_changes.load(Ordering::Relaxed))
    }

    /// True when a reply covering a write at `lsn` must wait for the journal's fsync.
    #[inline]
    pub fn must_wait(&self, lsn: u64) -> bool {
        lsn != 0
            && self
                .with_journal(|j| j.fsync() == Fsync::Always && j.durable_lsn() < lsn)
                .unwrap_or(false)
    }

    /// Waits until the journal is durable up to `lsn`.
    pub async fn wait_durable(&self, lsn: u64) {
        let Some(j) = self.journal() else { return };
        loop {
            let notified = self.durable.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            if j.durable_lsn() >= lsn || j.fsync() != Fsync::Always {
                return;
            }
            // The timeout guards against a missed wake-up only; the flusher notifies.
            let _ = tokio::time::timeout(Duration::from_millis(100), notified).await;
        }
    }

    /// The LSN of the last block appended so far (a served blocked client waits for it).
    pub fn last_lsn(&self) -> u64 {
        self.with_journal(|j| j.next_lsn() - 1).unwrap_or(0)
    }

    /// INFO persistence's journal fields.
    pub fn aof_fields(&self) -> Vec<(&'static str, String)> {
        let Some(j) = self.journal() else {
            return vec![("aof_enabled", "0".into())];
        };
        let st = j.stats();
        let status = if j.last_error().is_some() {
            "err"
        } else {
            "ok"
        };
        vec![
            ("aof_enabled", "1".into()),
            ("aof_last_write_status", status.into()),
            ("aof_current_size", st.size_bytes.to_string()),
            (
                "aof_base_size",
                self.snapshots
                    .rewrite_base
                    .load(Ordering::Relaxed)
                    .to_string(),
            ),
            ("aof_buffer_length", st.pending_bytes.to_string()),
            ("aof_segments", st.segments.to_string()),
            ("aof_fsyncs", st.fsyncs.to_string()),
            ("aof_last_fsync_usec", st.last_fsync_micros.to_string()),
            ("aof_written_lsn", st.written_lsn.to_string()),
            ("aof_durable_lsn", st.durable_lsn.to_string()),
        ]
    }

    /// Flushes and fsyncs the journal (SHUTDOWN).
    pub fn close(&self) {
        if let Some(j) = self.journal() {
            if let Err(e) = j.close() {
                tracing::warn!("closing the journal: {e}");
            }
        }
    }
}

impl Server {
    /// Writes hold their shards until recorded when effects have a sink, and while any client
    /// WATCHes keys (a watcher's EXEC must see every write that happened before it).
    #[inline]
    pub fn orders_writes(&self) -> bool {
        self.sinks.any() || self.watches.active() || self.persist.snapshots.active()
    }

    /// The data directory (`dir`).
    pub fn data_dir(&self) -> PathBuf {
        PathBuf::from(&self.config.get().dir)
    }
}

/// Locks the data directory, loads the newest snapshot, replays the journal after it and,
/// under `appendonly yes`, opens the journal for appending. Called once at start, before
/// any client connects. The journal is replayed whatever `appendonly` says now: it may
/// hold writes from a run that had it on, which a snapshot taken without it then keeps.
pub fn open(server: &Arc<Server>) -> Result<(), String> {
    let dir = server.data_dir();
    let lock = strata_storage::lock_dir(&dir).map_err(|e| e.to_string())?;
    *server.persist.dir_lock.lock() = Some(lock);
    match strata_storage::remove_unfinished_snapshots(&dir) {
        Ok(0) => {}
        Ok(n) => tracing::info!("removed {n} unfinished snapshot file(s) left by a crash"),
        Err(e) => tracing::warn!("cannot remove unfinished snapshot files: {e}"),
    }
    let appendonly = server.config.get().appendonly;
    if appendonly {
        tracing::info!(
            "journal in {} (appendfsync {})",
            dir.display(),
            server.config.get().appendfsync
        );
    }
    let loaded = crate::services::snapshot::load(server)?;
    let (min_epoch, from) = match loaded {
        Some((epoch, from)) => (epoch, Some(from)),
        None => (0, None),
    };
    let report = crate::exec::replay::replay(server, &dir, from, min_epoch)?;
    if let Some(t) = &report.torn_tail {
        tracing::warn!("dropped a torn final journal record: {t}");
    }
    *server.persist.loaded.lock() = report;
    if !appendonly {
        tracing::warn!(
            "appendonly no: writes persist only through snapshots (save rules, SAVE, SHUTDOWN)"
        );
        return Ok(());
    }
    attach_journal(server)
}

/// DEBUG LOADAOF: the data set as a restart would load it. What the journal holds is
/// written out first; then, holding every shard, the keyspace is emptied, the newest
/// snapshot loaded and the journal after it replayed.
pub fn reload_all(server: &Arc<Server>) -> Result<(), String> {
    if let Some(j) = server.persist.journal() {
        j.sync().map_err(|e| e.to_string())?;
    }
    let ks = &server.keyspace;
    let _all = (!strata_engine::Keyspace::in_session()).then(|| ks.session_all());
    drop(ks.flush_all());
    let how = crate::services::snapshot::Load {
        skip_expired: false,
        replace: true,
        skip_cold: false,
    };
    let (min_epoch, from) = match crate::services::snapshot::load_newest(server, how)? {
        Some((meta, _)) => (meta.epoch, Some(meta.replay_from)),
        None => (0, None),
    };
    crate::exec::replay::replay(server, &server.data_dir(), from, min_epoch).map(|_| ())
}

/// Opens the journal in the data directory, after its last valid block, and makes it an
/// effect sink: every write recorded from now on reaches it.
fn attach_journal(server: &Arc<Server>) -> Result<(), String> {
    let dir = server.data_dir();
    let mut opts = JournalOptions::new(&dir);
    opts.fsync = fsync_policy(server.config.get().appendfsync);
    opts.segment_bytes = server.config.get().journal_segment_size;
    let j = Journal::open(opts)
        .map_err(|e| format!("opening the journal in {}: {e}", dir.display()))?;
    // Automatic rewrites count the journal's growth from here (Redis: the AOF's size at
    // load).
    server
        .persist
        .snapshots
        .rewrite_base
        .store(j.size_bytes(), Ordering::Relaxed);
    let notify = server.persist.durable.clone();
    j.on_durable(Box::new(move |_| notify.notify_waiters()));
    // Worker threads flush their own batches before they idle (net::workers).
    j.set_leaders(true);
    let sink: Arc<dyn EffectSink> = Arc::new(JournalSink(j.clone()));
    server.sinks.add(sink.clone());
    *server.persist.sink.lock() = Some(sink);
    server.persist.journal.store(Some(j));
    Ok(())
}

/// CONFIG SET appendonly: turns the journal on or off while the server runs, in the
/// background (the switch waits for every worker thread, and CONFIG SET runs on one).
///
/// On: the journal is attached, then every worker passes a barrier (so no write that
/// began before the journal was attached, unrecorded, is still in flight), then a
/// snapshot is taken as BGREWRITEAOF takes one. Every write is then in that snapshot or
/// in the journal after it, and the journal before it is dropped.
/// Off: the journal stops being a sink, every worker passes a barrier (writes recording
/// into it are done), and it is flushed, fsynced and closed. What it holds stays valid:
/// the next start replays it after the newest snapshot.
pub fn switch_journal(server: &Arc<Server>, on: bool) {
    let server = server.clone();
    let spawned = std::thread::Builder::new()
        .name("strata-appendonly".into())
        .spawn(move || {
            let _g = server.persist.switching.lock();
            let result = if on {
                turn_on(&server)
            } else {
                turn_off(&server)
            };
            if let Err(e) = result {
                tracing::warn!(
                    "CONFIG SET appendonly {}: {e}",
                    if on { "yes" } else { "no" }
                );
            }
        });
    if let Err(e) = spawned {
        tracing::warn!("CONFIG SET appendonly: cannot start its thread: {e}");
    }
}

fn turn_on(server: &Arc<Server>) -> Result<(), String> {
    if server.persist.journal().is_some() {
        return Ok(());
    }
    server.persist.unbased.store(true, Ordering::SeqCst);
    if let Err(e) = attach_journal(server) {
        server.persist.journal_based();
        return Err(e);
    }
    crate::net::workers::barrier(server);
    tracing::info!("appendonly yes: journal attached; taking a snapshot to start it from");
    loop {
        match crate::services::snapshot::start(server, true, true) {
            Ok(()) => return Ok(()),
            // One is running: it does not cover the writes before the journal; wait.
            Err(e) if e == crate::services::snapshot::ALREADY => {
                std::thread::sleep(Duration::from_millis(10))
            }
            Err(e) => return Err(e),
        }
    }
}

fn turn_off(server: &Arc<Server>) -> Result<(), String> {
    let Some(sink) = server.persist.sink.lock().take() else {
        return Ok(());
    };
    server.sinks.remove(&sink);
    crate::net::workers::barrier(server);
    // A running snapshot may still append its marker or drop old segments: let it end.
    while server.persist.snapshots.in_progress() {
        std::thread::sleep(Duration::from_millis(10));
    }
    server.persist.journal_based();
    if let Some(j) = server.persist.journal.swap(None) {
        j.close().map_err(|e| e.to_string())?;
    }
    tracing::info!("appendonly no: journal closed; writes persist through snapshots only");
    Ok(())
}

/// The journal as an effect sink: each block goes to this thread's journal lane.
struct JournalSink(Arc<Journal>);

impl EffectSink for JournalSink {
    fn append(
        &self,
        db: u32,
        epoch: u64,
        block: Block<'_>,
        write: &mut dyn FnMut(&mut Vec<u8>),
    ) -> u64 {
        self.0
            .append_encoded(db, epoch, |buf| block.write_to(buf, write))
            .unwrap_or(0)
    }

    fn audience(&self) -> Audience {
        Audience::Journal
    }

    fn write_error(&self) -> Option<String> {
        self.0.last_error()
    }
}

pub(crate) fn journal_bytes(dir: &Path) -> u64 {
    std::fs::read_dir(strata_storage::journal_dir(dir))
        .map(|rd| {
            rd.filter_map(|e| e.ok()?.metadata().ok())
                .map(|m| m.len())
                .sum()
        })
        .unwrap_or(0)
}
