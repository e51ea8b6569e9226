//! Worker threads: each runs one event loop (a tokio current-thread runtime) with its own
//! connections, flushing the journal and helping a starved snapshot before it sleeps.

use crate::net::conn;
use crate::server::Server;
use crate::services::stats::ThreadStats;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::mpsc;

/// Worker threads are named WORKER_THREAD-N (`stranded` finds them by it).
pub const WORKER_THREAD: &str = "strata-worker";

pub fn worker(
    server: Arc<Server>,
    stats: Arc<ThreadStats>,
    rx: mpsc::UnboundedReceiver<conn::Incoming>,
    me: usize,
) {
    if server.config.get().worker_sched == crate::config::WorkerSched::Batch {
        if let Err(e) = crate::net::sched::set_current(crate::net::sched::Policy::Batch) {
            tracing::warn!("worker thread stays SCHED_OTHER: SCHED_BATCH refused: {e}");
        }
    }
    // A busy script's hook serves this thread's connections and takes from its queue.
    crate::exec::script::set_while_busy(crate::net::busy::serve_idle);
    crate::net::busy::install(server.clone(), stats.clone(), rx, me);
    if server.balance.on {
        crate::net::balance::start_worker(me);
    }
    let leader = server.clone();
    #[cfg(target_os = "linux")]
    let workers = server.threads;
    let rt = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        // Before the loop sleeps, the writes it just journalled are written and (under
        // `always`) fsynced on this thread, as Redis does in beforeSleep: no hand-off to the
        // journal thread and back for each batch.
        // Then, if a running snapshot's own thread is starved, it captures a chunk of it;
        // and another worker waiting for this CPU gets it (`stranded::end_of_turn`).
        .on_thread_unpark(crate::net::balance::unparked)
        .on_thread_park(move || {
            crate::net::balance::parked(&leader.balance);
            leader.persist.with_journal(|j| j.flush_pending());
            crate::services::snapshot::help(&leader);
            crate::net::turn::ended();
            #[cfg(target_os = "linux")]
            crate::net::stranded::end_of_turn(workers);
        })
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            tracing::error!("cannot start a worker event loop: {e}");
            server.stop();
            return;
        }
    };
    let local = tokio::task::LocalSet::new();
    local.block_on(&rt, async move {
        let mut cron = tokio::time::interval(Duration::from_millis(100));
        cron.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tokio::select! {
                s = crate::net::busy::next() => match s {
                    Some(conn::Incoming::Barrier(passed)) => { let _ = passed.send(()); }
                    Some(conn::Incoming::Task(task)) => { tokio::task::spawn_local(task(server.clone(), stats.clone())); }
                    Some(s) => { crate::net::accept::start(&server, &stats, s, me); }
                    None => break,
                },
                _ = cron.tick() => {
                    if server.shutting_down.load(Ordering::SeqCst) { break; }
                    crate::net::replybuf::resize_idle(&server);
                    crate::net::balance::tick(&server.balance);
                }
            }
        }
    });
}

/// Returns once every worker thread has finished what it was running when this was called:
/// each passes a barrier between two tasks, so no command that began before is still
/// running. Never call it on a worker thread (it would wait for itself).
pub fn barrier(server: &Server) {
    let Some(queues) = server.workers.get() else {
        return;
    };
    let (tx, rx) = std::sync::mpsc::sync_channel(queues.len());
    let sent = queues
        .iter()
        .filter(|q| q.send(conn::Incoming::Barrier(tx.clone())).is_ok())
        .count();
    drop(tx);
    for _ in 0..sent {
        // A worker that exits (shutdown) drops its sender: nothing left to wait for.
        if rx.recv().is_err() {
            break;
        }
    }
}
