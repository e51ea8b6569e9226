//! The server's side of durability: what reaches the journal and when a reply may leave,
//! the data directory's lock, and recovery at start-up. strata-storage owns the files.
//!
//! A write holds its shards until its effect is appended (see `table::run`), so the journal
//! orders writes to a key as memory saw them. Under `appendfsync always` a connection's
//! replies wait until the journal is durable up to that connection's last write; the
//! journal's one flusher thread covers every write appended meanwhile with one fsync.

use crate::client::{Client, ClientInfo};
use crate::effects::{Effect, Group};
use crate::server::Server;
use crate::stats::ThreadStats;
use bytes::{Bytes, BytesMut};
use parking_lot::Mutex;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};
use strata_resp::{Limits, Parser};
use strata_storage::{DirLock, Fsync, Journal, JournalOptions, Position};
use tokio::sync::Notify;

#[derive(Default)]
pub struct Persist {
    journal: OnceLock<Arc<Journal>>,
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
    pub snapshots: crate::snapshot::Snapshots,
}

#[derive(Default, Clone, Debug)]
pub struct LoadReport {
    pub blocks: u64,
    pub commands: u64,
    pub millis: u64,
    pub torn_tail: Option<String>,
}

pub fn fsync_policy(name: &str) -> Fsync {
    match name {
        "always" => Fsync::Always,
        "no" => Fsync::No,
        _ => Fsync::EverySec,
    }
}

impl Persist {
    /// The journal, when `appendonly yes`.
    pub fn journal(&self) -> Option<&Arc<Journal>> {
        self.journal.get()
    }

    /// True when writes must reach the journal.
    #[inline]
    pub fn journal_on(&self) -> bool {
        self.journal.get().is_some()
    }

    /// Changes since the last successful snapshot began (Redis's `server.dirty`).
    pub fn dirty(&self, stats: &crate::stats::Stats) -> u64 {
        stats
            .changes()
            .saturating_sub(self.saved_changes.load(Ordering::Relaxed))
    }

    /// Logs one write command's effect as its own journal block. Runs while the command
    /// still holds its shards.
    /// `frame` is the request as received, if canonical RESP (`Client::frame`).
    pub fn log(
        &self,
        client: &mut Client,
        db: usize,
        argv: &[Bytes],
        effect: Effect,
        frame: Option<&[u8]>,
    ) {
        let Some(j) = self.journal.get() else {
            return;
        };
        if client.replaying {
            return;
        }
        // Encoded straight into this thread's journal lane. The epoch is the one seen
        // when the write locked its shards (see crate::snapshot).
        // The request is its own record when it was canonical: copied, not encoded again.
        let frame = frame
            .filter(|f| matches!(effect, Effect::Argv) && crate::effects::is_frame_of(f, argv));
        let write = |buf: &mut Vec<u8>| match frame {
            Some(f) => buf.extend_from_slice(f),
            None => effect.encode(buf, argv),
        };
        if let Some(lsn) = j.append_encoded(db as u32, client.write_epoch, write) {
            client.last_lsn = lsn;
        }
    }

    /// Starts gathering the writes of an EXEC or a script (database `db`) into one group;
    /// returns the group being gathered around it (an EXEC inside a script), if any.
    pub fn begin_group(client: &mut Client, db: usize) -> Option<Group> {
        client.group.replace(Group::new(db))
    }

    /// Ends what `begin_group` started: the group becomes one journal block, or part of the
    /// outer group it ran inside. Call it while the shards are still held.
    pub fn end_group(&self, client: &mut Client, outer: Option<Group>) {
        let group = client.group.take();
        match (outer, group) {
            (Some(mut o), Some(g)) => {
                o.append(g);
                client.group = Some(o);
            }
            (Some(o), None) => client.group = Some(o),
            (None, Some(g)) if !g.is_empty() => self.log_group(client, g),
            (None, _) => {}
        }
    }

    /// Logs a group (one command's effects, an EXEC, a script) as one block.
    pub fn log_group(&self, client: &mut Client, group: Group) {
        self.append(client, &group);
    }

    fn append(&self, client: &mut Client, group: &Group) {
        let Some(j) = self.journal.get() else {
            return;
        };
        if group.is_empty() || client.replaying {
            return;
        }
        // The epoch seen when the write locked its shards (see crate::snapshot).
        client.last_lsn = j.append(group.db as u32, client.write_epoch, &group.buf);
    }

    /// A key removed because it expired: logged as a DEL, so that a replay, which expires
    /// nothing, ends with the same keys (Redis propagates expiry the same way).
    pub fn log_expired(&self, db: usize, key: &[u8]) {
        if let Some(j) = self.journal.get() {
            let mut g = Group::new(db);
            g.push(db, &[b"DEL".as_slice(), key]);
            j.append(db as u32, self.epoch.load(Ordering::Relaxed), &g.buf);
        }
    }

    /// The error writes are refused with while the journal cannot be written
    /// (a full disk, an I/O error); None when healthy.
    #[inline]
    pub fn write_error(&self) -> Option<String> {
        let j = self.journal.get()?;
        j.last_error()
            .map(|e| format!("MISCONF Errors writing to the AOF file: {e}"))
    }

    /// True when a reply covering a write at `lsn` must wait for the journal's fsync.
    #[inline]
    pub fn must_wait(&self, lsn: u64) -> bool {
        lsn != 0
            && self
                .journal
                .get()
                .is_some_and(|j| j.fsync() == Fsync::Always && j.durable_lsn() < lsn)
    }

    /// Waits until the journal is durable up to `lsn`.
    pub async fn wait_durable(&self, lsn: u64) {
        let Some(j) = self.journal.get() else { return };
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
        self.journal.get().map_or(0, |j| j.next_lsn() - 1)
    }

    /// INFO persistence's journal fields.
    pub fn aof_fields(&self) -> Vec<(&'static str, String)> {
        let Some(j) = self.journal.get() else {
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
        if let Some(j) = self.journal.get() {
            if let Err(e) = j.close() {
                tracing::warn!("closing the journal: {e}");
            }
        }
    }
}

impl Server {
    /// Writes hold their shards until logged when the journal is on, and while any client
    /// WATCHes keys (a watcher's EXEC must see every write that happened before it).
    #[inline]
    pub fn orders_writes(&self) -> bool {
        self.persist.journal_on() || self.watches.active() || self.persist.snapshots.active()
    }

    /// The data directory (`dir`).
    pub fn data_dir(&self) -> PathBuf {
        PathBuf::from(self.config.get("dir"))
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
    let appendonly = server.config.get_bool("appendonly");
    if appendonly {
        tracing::info!(
            "journal in {} (appendfsync {})",
            dir.display(),
            server.config.get("appendfsync")
        );
    }
    let loaded = crate::snapshot::load(server)?;
    let (min_epoch, from) = match loaded {
        Some((epoch, from)) => (epoch, Some(from)),
        None => (0, None),
    };
    let report = replay(server, &dir, from, min_epoch)?;
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
    let mut opts = JournalOptions::new(&dir);
    opts.fsync = fsync_policy(&server.config.get("appendfsync"));
    let j = Journal::open(opts)
        .map_err(|e| format!("opening the journal in {}: {e}", dir.display()))?;
    let notify = server.persist.durable.clone();
    j.on_durable(Box::new(move |_| notify.notify_waiters()));
    // Worker threads flush their own batches before they idle (server::worker).
    j.set_leaders(true);
    let _ = server.persist.journal.set(j);
    Ok(())
}

/// Replays journal blocks from `from` (the start when None), skipping blocks tagged with
/// an epoch below `min_epoch` (a snapshot already holds them).
fn replay(
    server: &Arc<Server>,
    dir: &Path,
    from: Option<Position>,
    min_epoch: u64,
) -> Result<LoadReport, String> {
    let started = Instant::now();
    let total = journal_bytes(dir);
    let stats = ThreadStats::new(server.table.commands.len());
    let info = Arc::new(ClientInfo::new(0, "journal".into(), "journal".into()));
    let mut client = Client::new(info, true);
    client.replaying = true;
    let mut parser = Parser::new(Limits {
        max_bulk_len: usize::MAX / 2,
        max_multibulk_len: usize::MAX / 2,
        ..Limits::default()
    });
    let mut out = Vec::new();
    let mut clock = crate::tick::Tick::now();
    let mut report = LoadReport::default();
    let mut read = 0u64;
    let mut last_log = Instant::now();
    let summary = strata_storage::read_blocks(dir, from, |block| {
        read += block.payload.len() as u64;
        if block.epoch < min_epoch {
            return Ok(());
        }
        client.set_db(block.db as usize);
        let mut buf = BytesMut::from(&block.payload[..]);
        loop {
            match parser.parse(&mut buf) {
                Ok(Some(argv)) => {
                    crate::table::execute(server, &mut client, &stats, &argv, &mut out, &mut clock);
                    out.clear();
                    report.commands += 1;
                }
                Ok(None) if buf.is_empty() => break,
                Ok(None) => return Err(format!("block {} ends inside a command", block.lsn)),
                Err(e) => return Err(format!("block {}: {e:?}", block.lsn)),
            }
        }
        report.blocks += 1;
        if last_log.elapsed() >= Duration::from_secs(1) {
            last_log = Instant::now();
            let secs = started.elapsed().as_secs_f64().max(0.001);
            tracing::info!(
                "loading the journal: {} records, {:.0} records/s, {:.0}%",
                report.blocks,
                report.blocks as f64 / secs,
                100.0 * read as f64 / total.max(1) as f64
            );
        }
        Ok(())
    })
    .map_err(|e| format!("{e}. Run `strata check {}` to inspect it.", dir.display()))?;
    report.millis = started.elapsed().as_millis() as u64;
    report.torn_tail = summary.torn.as_ref().map(|t| t.to_string());
    if report.blocks > 0 {
        tracing::info!(
            "journal loaded: {} records ({} commands) in {} ms",
            report.blocks,
            report.commands,
            report.millis
        );
    }
    Ok(report)
}

fn journal_bytes(dir: &Path) -> u64 {
    std::fs::read_dir(strata_storage::journal_dir(dir))
        .map(|rd| {
            rd.filter_map(|e| e.ok()?.metadata().ok())
                .map(|m| m.len())
                .sum()
        })
        .unwrap_or(0)
}
