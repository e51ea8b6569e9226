//! The RDB of a full resynchronization, made on a thread of its own for every replica
//! waiting for one: a point-in-time capture of the keyspace (the snapshot machinery's),
//! cut while every shard is held, so that the offset read in that same instant splits the
//! writes exactly: each is in the RDB or in the stream after the offset, never both,
//! never neither (writes record their effects into the backlog while they hold their
//! shards).
//!
//! Diskless (`repl-diskless-sync yes`, replicas announcing `capa eof`): the RDB streams to
//! the replicas as it is encoded, framed `$EOF:<mark>` ... `<mark>`, after waiting
//! `repl-diskless-sync-delay` seconds for more replicas to share it. Otherwise (or for a
//! replica without `capa eof`, SYNC's) it is written to a temporary file in the data
//! directory first and sent as `$<length>`.

use super::{role, RdbFilter};
use crate::rdb::{aux_fields, value_to_rdb, write_options};
use crate::server::Server;
use crate::services::snapshot::PointInTime;
use bytes::Bytes;
use parking_lot::Mutex;
use std::io::{self, BufWriter, Write};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use strata_rdb::{KeyMeta, ReplAux, Writer};
use tokio::sync::{mpsc, oneshot};

/// A replica waiting for a full sync.
pub(crate) struct SyncRequest {
    pub id: u64,
    pub eof: bool,
    /// What the RDB keeps (`REPLCONF rdb-filter-only`); None for all.
    pub filter: Option<RdbFilter>,
    pub tx: oneshot::Sender<Result<SyncStart, String>>,
}

/// A full sync that took a replica: the offset of its cut and the RDB's bytes to come.
pub(crate) struct SyncStart {
    pub replid: String,
    pub offset: u64,
    pub rdb: mpsc::Receiver<Piece>,
}

pub(crate) enum Piece {
    /// Bytes to write as they are (diskless: the `$EOF:` line, the RDB, the end mark).
    Bytes(Bytes),
    /// The RDB in a file, to send as `$<len>` and its bytes.
    File(Arc<TempFile>, u64),
    Done,
}

/// A file removed when the last replica is done with it.
pub(crate) struct TempFile(pub PathBuf);

impl Drop for TempFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

/// Replicas waiting for a full sync, and whether the sync thread runs.
#[derive(Default)]
pub(crate) struct Queue {
    waiting: Mutex<Vec<SyncRequest>>,
    running: AtomicBool,
}

impl Queue {
    /// Queues a replica; the sync thread starts if it does not run.
    pub fn request(&self, server: &Arc<Server>, req: SyncRequest) {
        self.waiting.lock().push(req);
        if !self.running.swap(true, Ordering::SeqCst) {
            let server = server.clone();
            let spawned = std::thread::Builder::new()
                .name("strata-repl-sync".into())
                .spawn(move || sync_thread(&server));
            if let Err(e) = spawned {
                tracing::warn!("cannot start the replication sync thread: {e}");
                self.running.store(false, Ordering::SeqCst);
                for r in self.waiting.lock().drain(..) {
                    let _ = r.tx.send(Err(e.to_string()));
                }
            }
        }
    }
}

fn sync_thread(server: &Arc<Server>) {
    let queue = &server.repl.sync;
    loop {
        let batch = next_batch(server);
        if batch.is_empty() {
            queue.running.store(false, Ordering::SeqCst);
            // A request that came after the last look finds the thread still running.
            if queue.waiting.lock().is_empty() || queue.running.swap(true, Ordering::SeqCst) {
                return;
            }
            continue;
        }
        run(server, batch);
    }
}

/// The replicas the next capture serves. A diskless sync first waits
/// `repl-diskless-sync-delay` seconds (or until `repl-diskless-sync-max-replicas` wait).
fn next_batch(server: &Server) -> Vec<SyncRequest> {
    let queue = &server.repl.sync;
    let started = Instant::now();
    loop {
        let c = server.config.get();
        let waiting = queue.waiting.lock();
        let eof = !waiting.is_empty() && waiting.iter().all(|r| r.eof);
        let delay = Duration::from_secs(u64::from(c.repl_diskless_sync_delay));
        let max = c.repl_diskless_sync_max_replicas as usize;
        let ready = !(c.repl_diskless_sync && eof)
            || started.elapsed() >= delay
            || (max > 0 && waiting.len() >= max)
            || server.shutting_down.load(Ordering::Relaxed);
        if ready {
            drop(waiting);
            let mut waiting = queue.waiting.lock();
            waiting.retain(|r| !r.tx.is_closed());
            // One capture serves the replicas that asked for the same parts of the RDB;
            // the others wait for the next.
            let first = waiting.first().map(|r| r.filter);
            let (batch, later) = std::mem::take(&mut *waiting)
                .into_iter()
                .partition(|r| Some(r.filter) == first);
            *waiting = later;
            return batch;
        }
        drop(waiting);
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// One capture, serving every replica of `batch`.
fn run(server: &Arc<Server>, batch: Vec<SyncRequest>) {
    let repl = &server.repl;
    let filter = batch.first().and_then(|r| r.filter);
    let socket =
        filter.is_some() || (server.config.get().repl_diskless_sync && batch.iter().all(|r| r.eof));
    if role::ensure_backlog(server) {
        // Writes that began before the backlog was a sink are not in it: let them end
        // before the cut.
        crate::net::workers::barrier(server);
    }
    let mut capture = loop {
        if let Some(c) = PointInTime::reserve(server) {
            break c;
        }
        // A snapshot runs: this capture starts when it ends.
        if batch.iter().all(|r| r.tx.is_closed()) || server.shutting_down.load(Ordering::Relaxed) {
            return;
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    let ids: Vec<u64> = batch.iter().map(|r| r.id).collect();
    let (libs, offset, db) = {
        // The cut: no write holds a shard now, so every write recorded so far is before
        // the offset and in the capture, every later one after both. On a replica, no
        // run of the stream is half applied either.
        // (A thread of its own: blocking here stops no worker.)
        let _between_runs = repl.apply_gate.blocking_lock();
        let _all = server.keyspace.session_all();
        capture.cut();
        let libs: Vec<Bytes> = if filter.is_some_and(|f| !f.functions) {
            Vec::new()
        } else {
            server
                .scripts
                .libraries
                .read()
                .values()
                .map(|l| l.code.clone())
                .collect()
        };
        // A primary's stream starts again with a SELECT; a replica's is its primary's,
        // whose database it names in the RDB.
        let (offset, db) = repl.backlog.cut(&ids, !repl.is_replica());
        (libs, offset, db)
    };
    let replid = repl.ids().replid;
    tracing::info!(
        "Starting BGSAVE for SYNC with target: {}",
        if socket { "replicas sockets" } else { "disk" }
    );
    let mut outs = Vec::new();
    for r in batch {
        let (tx, rx) = mpsc::channel(16);
        let start = SyncStart {
            replid: replid.clone(),
            offset,
            rdb: rx,
        };
        if r.tx.send(Ok(start)).is_ok() {
            outs.push((r.id, tx));
        } else {
            repl.backlog.unpin(r.id);
        }
    }
    let aux = ReplAux {
        stream_db: db.max(0),
        repl_id: &replid,
        offset: offset as i64,
    };
    let started = Instant::now();
    // A filtered RDB holds no keys: nothing to walk.
    let capture = filter.is_none().then_some(capture);
    let result = if socket {
        diskless(server, capture, &libs, &aux, outs)
    } else {
        disk(server, capture, &libs, &aux, outs)
    };
    match result {
        Ok(keys) => tracing::info!(
            "Background RDB transfer for replication: {keys} keys in {} ms",
            started.elapsed().as_millis()
        ),
        Err(e) => tracing::warn!("Background RDB transfer for replication failed: {e}"),
    }
}

fn diskless(
    server: &Server,
    capture: Option<PointInTime<'_>>,
    libs: &[Bytes],
    aux: &ReplAux<'_>,
    outs: Vec<(u64, mpsc::Sender<Piece>)>,
) -> Result<u64, String> {
    let mark = super::random_hex();
    let timeout = Duration::from_secs(u64::from(server.config.get().repl_timeout));
    let mut fan = Fanout {
        outs,
        buf: Vec::with_capacity(FANOUT_CHUNK),
        timeout,
    };
    fan.send(Piece::Bytes(Bytes::from(format!("$EOF:{mark}\r\n"))))?;
    let (mut fan, keys) = write_rdb(server, capture, libs, aux, fan).map_err(|e| e.to_string())?;
    fan.send(Piece::Bytes(Bytes::from(mark.into_bytes())))?;
    fan.send(Piece::Done)?;
    Ok(keys)
}

fn disk(
    server: &Server,
    capture: Option<PointInTime<'_>>,
    libs: &[Bytes],
    aux: &ReplAux<'_>,
    outs: Vec<(u64, mpsc::Sender<Piece>)>,
) -> Result<u64, String> {
    let dir = server.data_dir();
    let path = dir.join(format!(
        "temp-repl-{}-{}.rdb",
        std::process::id(),
        super::random_hex().get(..8).unwrap_or("0")
    ));
    let file = Arc::new(TempFile(path));
    let f = std::fs::File::create(&file.0)
        .map_err(|e| format!("creating {}: {e}", file.0.display()))?;
    let (w, keys) = write_rdb(
        server,
        capture,
        libs,
        aux,
        BufWriter::with_capacity(1 << 20, f),
    )
    .map_err(|e| e.to_string())?;
    let f = w.into_inner().map_err(|e| e.to_string())?;
    let len = f.metadata().map_err(|e| e.to_string())?.len();
    drop(f);
    for (_, tx) in outs {
        let _ = tx.blocking_send(Piece::File(file.clone(), len));
        let _ = tx.blocking_send(Piece::Done);
    }
    Ok(keys)
}

/// Bytes per piece sent to the replicas' connections.
const FANOUT_CHUNK: usize = 64 * 1024;

/// The RDB going to every replica of a diskless sync. A replica that takes nothing for
/// `repl-timeout` is left behind (its connection closes); with none left, the RDB stops.
struct Fanout {
    outs: Vec<(u64, mpsc::Sender<Piece>)>,
    buf: Vec<u8>,
    timeout: Duration,
}

impl Fanout {
    fn send(&mut self, piece: Piece) -> Result<(), String> {
        let mut left = Vec::with_capacity(self.outs.len());
        for (id, tx) in self.outs.drain(..) {
            let p = match &piece {
                Piece::Bytes(b) => Piece::Bytes(b.clone()),
                Piece::File(f, n) => Piece::File(f.clone(), *n),
                Piece::Done => Piece::Done,
            };
            if send_within(&tx, p, self.timeout) {
                left.push((id, tx));
            }
        }
        self.outs = left;
        if self.outs.is_empty() {
            return Err("no replica is left to receive the RDB".into());
        }
        Ok(())
    }

    fn send_buf(&mut self) -> io::Result<()> {
        if self.buf.is_empty() {
            return Ok(());
        }
        let bytes = Bytes::from(std::mem::replace(
            &mut self.buf,
            Vec::with_capacity(FANOUT_CHUNK),
        ));
        self.send(Piece::Bytes(bytes)).map_err(io::Error::other)
    }
}

/// Hands `p` to a replica's connection, waiting while its queue is full; false when it
/// is gone or took nothing for `timeout`.
fn send_within(tx: &mpsc::Sender<Piece>, mut p: Piece, timeout: Duration) -> bool {
    let until = Instant::now() + timeout;
    loop {
        match tx.try_send(p) {
            Ok(()) => return true,
            Err(mpsc::error::TrySendError::Closed(_)) => return false,
            Err(mpsc::error::TrySendError::Full(back)) => {
                if Instant::now() >= until {
                    tracing::warn!("Disconnecting timedout replica (full sync)");
                    return false;
                }
                p = back;
                std::thread::sleep(Duration::from_micros(200));
            }
        }
    }
}

impl Write for Fanout {
    fn write(&mut self, b: &[u8]) -> io::Result<usize> {
        self.buf.extend_from_slice(b);
        if self.buf.len() >= FANOUT_CHUNK {
            self.send_buf()?;
        }
        Ok(b.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        self.send_buf()
    }
}

/// The whole RDB of the capture: AUX fields (with the replication ones), the function
/// libraries as of the cut, every key (none without a capture). Returns the output and
/// the number of keys.
fn write_rdb<W: Write>(
    server: &Server,
    capture: Option<PointInTime<'_>>,
    libs: &[Bytes],
    aux: &ReplAux<'_>,
    out: W,
) -> io::Result<(W, u64)> {
    let mut w = Writer::new(out, write_options(server))?;
    let mut fields = aux_fields();
    fields.repl = Some(aux.clone());
    w.standard_aux(&fields)?;
    for code in libs {
        w.function(code)?;
    }
    let Some(capture) = capture else {
        return Ok((w.finish()?, 0));
    };
    let ks = &server.keyspace;
    let mut cur_db: Option<u32> = None;
    let mut keys = 0u64;
    let mut failed: Option<io::Error> = None;
    let walked = capture.run(&mut |bytes, _| {
        strata_storage::decode_entries(bytes, &ks.encodings, |db, key, exp, value| {
            if failed.is_some() || db as usize >= ks.db_count() {
                return;
            }
            let mut put = || -> io::Result<()> {
                if cur_db != Some(db) {
                    let d = ks.db(db as usize);
                    w.select_db(u64::from(db), d.len() as u64, d.volatile_len() as u64)?;
                    cur_db = Some(db);
                }
                let meta = KeyMeta {
                    expire_ms: exp.map(|t| i64::try_from(t).unwrap_or(i64::MAX)),
                    ..KeyMeta::default()
                };
                w.key(&key, &value_to_rdb(&value), &meta)
            };
            match put() {
                Ok(()) => keys += 1,
                Err(e) => failed = Some(e),
            }
        })?;
        match failed.take() {
            Some(e) => Err(e.to_string()),
            None => Ok(()),
        }
    });
    walked.map_err(io::Error::other)?;
    Ok((w.finish()?, keys))
}
