//! Stopping the server as Redis 7.0 does, for SHUTDOWN, SIGTERM and SIGINT. Writes are held
//! (CLIENT PAUSE WRITE's wait, which CLIENT UNPAUSE does not lift) from the start, so no
//! write is acknowledged that the final snapshot or a replica would miss. Unless the
//! shutdown says NOW or `shutdown-timeout` is 0, a primary whose replicas have not all
//! acknowledged its whole stream asks them for an ACK and waits, up to `shutdown-timeout`
//! seconds (INFO `shutdown_in_milliseconds` counts down); SHUTDOWN ABORT cancels that
//! wait (only while it waits: a shutdown saving its snapshot is past that). Then each
//! lagging replica is logged, the final snapshot is taken (where save rules are set, or
//! SAVE; never NOSAVE) and the server stops. A snapshot that fails, or a journal switched
//! on whose first rewrite has not succeeded, cancels the shutdown unless FORCE: the
//! SHUTDOWN callers get [`FAILED`] and the server goes on serving.
//!
//! The sequence runs on a thread of its own: the wait must not hold a worker, whose
//! replicas' streams it is waiting for.

use crate::config::ShutdownFlags;
use crate::server::Server;
use parking_lot::Mutex;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::sync::Notify;

/// The reply of every SHUTDOWN waiting on a shutdown that was cancelled.
pub const FAILED: &str = "Errors trying to SHUTDOWN. Check logs.";

#[derive(Default)]
pub struct Shutdown {
    /// A shutdown is under way (waiting, saving or stopping).
    active: AtomicBool,
    /// While it waits for replicas: when the wait ends.
    waiting_until: Mutex<Option<Instant>>,
    /// SHUTDOWN ABORT asked the wait to end.
    abort: AtomicBool,
    /// Shutdowns cancelled so far: a SHUTDOWN caller that sees it move was cancelled.
    cancelled: AtomicU64,
    /// Woken when a shutdown is cancelled.
    ended: Notify,
    /// The replication offset of the data the final snapshot holds, if one was taken.
    saved_at: Mutex<Option<i64>>,
}

/// What a SHUTDOWN caller waits for.
pub struct Ticket {
    cancelled: u64,
}

impl Shutdown {
    /// A shutdown is under way.
    pub fn active(&self) -> bool {
        self.active.load(Ordering::SeqCst)
    }

    /// The replication offset of the data the final snapshot holds, if one was taken.
    pub fn snapshot_offset(&self) -> Option<i64> {
        *self.saved_at.lock()
    }

    /// Milliseconds left of the wait for replicas (INFO `shutdown_in_milliseconds`), if a
    /// shutdown is waiting.
    pub fn waiting_ms(&self) -> Option<u64> {
        let until = (*self.waiting_until.lock())?;
        Some(until.saturating_duration_since(Instant::now()).as_millis() as u64)
    }

    /// SHUTDOWN ABORT: true if a shutdown was waiting for its replicas (it is cancelled).
    pub fn abort(&self) -> bool {
        let waiting = self.waiting_until.lock().is_some();
        if waiting {
            self.abort.store(true, Ordering::SeqCst);
        }
        waiting
    }

    /// Resolves when the shutdown `ticket` waits on is cancelled (if it succeeds, the server
    /// stops and the caller's connection closes first).
    pub async fn cancelled(&self, ticket: Ticket) {
        loop {
            let ended = self.ended.notified();
            tokio::pin!(ended);
            ended.as_mut().enable();
            if self.cancelled.load(Ordering::SeqCst) != ticket.cancelled {
                return;
            }
            ended.await;
        }
    }
}

/// Starts a shutdown with `flags` (ShutdownFlags bits), unless one is under way; either
/// way, the ticket to wait on it.
pub fn begin(server: &Arc<Server>, flags: u8) -> std::io::Result<Ticket> {
    let s = &server.shutdown;
    let ticket = Ticket {
        cancelled: s.cancelled.load(Ordering::SeqCst),
    };
    if s.active.swap(true, Ordering::SeqCst) {
        return Ok(ticket);
    }
    tracing::warn!("User requested shutdown...");
    crate::services::supervise::notify("STOPPING=1\n");
    server.pause.hold_for_shutdown(true);
    let run = server.clone();
    let spawned = std::thread::Builder::new()
        .name("strata-shutdown".into())
        .spawn(move || match sequence(&run, flags) {
            Ok(()) => run.stop(),
            Err(()) => cancel(&run),
        });
    if let Err(e) = spawned {
        cancel(server);
        return Err(e);
    }
    Ok(ticket)
}

/// Waits for the replicas, logs those that lag, takes the final snapshot. Err: cancelled.
fn sequence(server: &Arc<Server>, flags: u8) -> Result<(), ()> {
    let timeout = u64::from(server.config.get().shutdown_timeout);
    if flags & ShutdownFlags::NOW == 0 && timeout != 0 && !replicas_caught_up(server) {
        let until = Instant::now() + Duration::from_secs(timeout);
        *server.shutdown.waiting_until.lock() = Some(until);
        server
            .repl
            .backlog
            .feed_command(&[b"REPLCONF", b"GETACK", b"*"]);
        tracing::info!("Waiting for replicas before shutting down.");
        while Instant::now() < until && !replicas_caught_up(server) {
            if server.shutdown.abort.swap(false, Ordering::SeqCst) {
                tracing::info!("Shutdown manually aborted.");
                return Err(());
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        *server.shutdown.waiting_until.lock() = None;
        // An ABORT that came as the wait ended is too late.
        server.shutdown.abort.store(false, Ordering::SeqCst);
    }
    log_lagging(server);
    if server.persist.journal_unbased() {
        if flags & ShutdownFlags::FORCE == 0 {
            tracing::warn!("Writing initial AOF, can't exit.");
            return refused();
        }
        tracing::warn!("Writing initial AOF. Exit anyway.");
    }
    if flags & ShutdownFlags::NOSAVE == 0 {
        let save = flags & ShutdownFlags::SAVE != 0;
        if save || !server.config.get().save.0.is_empty() {
            crate::services::supervise::notify("STATUS=Saving the final RDB snapshot\n");
        }
        let offset = crate::services::replication::offset_now(server);
        let saved = crate::services::snapshot::on_shutdown(server, save);
        if matches!(saved, Ok(true)) && offset == crate::services::replication::offset_now(server) {
            *server.shutdown.saved_at.lock() = Some(offset);
        }
        if let Err(e) = saved {
            tracing::warn!("shutdown snapshot failed: {e}");
            if flags & ShutdownFlags::FORCE == 0 {
                tracing::warn!("Error trying to save the DB, can't exit.");
                crate::services::supervise::notify(
                    "STATUS=Error trying to save the DB, can't exit.\n",
                );
                return refused();
            }
            tracing::warn!("Error trying to save the DB. Exit anyway.");
        }
    }
    Ok(())
}

/// The shutdown gives up (its reason is logged before): logged as Redis does.
fn refused() -> Result<(), ()> {
    tracing::warn!("Errors trying to shut down the server. Check the logs for more information.");
    Err(())
}

/// Every replica has acknowledged the whole stream (true with none), as Redis's
/// isReadyToShutdown.
fn replicas_caught_up(server: &Server) -> bool {
    let end = server.repl.backlog.end() as i64;
    server
        .repl
        .peers()
        .iter()
        .all(|p| p.ack_off.load(Ordering::Relaxed) == end)
}

/// Redis's lines about the replicas as the shutdown goes on without waiting more.
fn log_lagging(server: &Server) {
    let peers = server.repl.peers();
    if peers.is_empty() {
        return;
    }
    let end = server.repl.backlog.end() as i64;
    let now = Server::now_unix();
    let mut lagging = 0;
    for p in &peers {
        let acked = p.ack_off.load(Ordering::Relaxed);
        if acked == end {
            continue;
        }
        lagging += 1;
        let state = p.state.load(Ordering::Relaxed);
        let online = state == crate::services::replication::peer::ONLINE;
        let lag = match online {
            true => now.saturating_sub(p.ack_time.load(Ordering::Relaxed)),
            false => 0,
        };
        tracing::warn!(
            "Lagging replica {}:{} reported offset {} behind master, lag={lag}, state={}.",
            p.addr,
            p.listening_port,
            end - acked,
            crate::services::replication::peer::name(state)
        );
    }
    tracing::info!(
        "{} of {} replicas are in sync when shutting down.",
        peers.len() - lagging,
        peers.len()
    );
}

/// The shutdown did not happen: writes go on, and every SHUTDOWN waiting gets its error.
fn cancel(server: &Server) {
    let s = &server.shutdown;
    *s.waiting_until.lock() = None;
    s.active.store(false, Ordering::SeqCst);
    server.pause.hold_for_shutdown(false);
    s.cancelled.fetch_add(1, Ordering::SeqCst);
    s.ended.notify_waiters();
}
