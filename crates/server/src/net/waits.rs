//! How a connection waits while its client's command is held: blocked on keys, paused by
//! CLIENT PAUSE, or waiting for work it deferred to the blocking pool (MIGRATE's network
//! round trips). Meanwhile the client still gets its mail, and its socket is read to
//! notice a disconnect.

use crate::exec::client::Client;
use crate::exec::{self, After, Call, Origin, Worker};
use crate::net::conn::{after_command, ConnLimits, READ_CHUNK};
use crate::net::output::{flush_all, Output};
use crate::net::wire::{read_some, Wire};
use crate::server::Server;
use crate::services::blocking;
use crate::services::stats::ThreadStats;
use crate::tick::Tick;
use bytes::{Bytes, BytesMut};
use std::sync::atomic::Ordering;
use std::sync::Arc;

/// Runs a command's deferred work on the blocking pool, then the command again with its
/// result, writing the reply into `out`. False when the client went away meanwhile (the
/// work's result is dropped).
pub(super) async fn run_deferred(
    server: &Server,
    stats: &ThreadStats,
    client: &mut Client,
    argv: &[bytes::Bytes],
    work: exec::Deferred,
    out: &mut Vec<u8>,
) -> bool {
    let mut work = work;
    loop {
        let done = tokio::select! {
            biased;
            _ = client.info.killed() => return false,
            r = tokio::task::spawn_blocking(work) => r,
        };
        let Ok(result) = done else {
            return false;
        };
        client.resume = Some(result);
        let mut wk = Worker {
            server,
            stats,
            clock: Tick::now(),
        };
        let mut after = After::default();
        let start = out.len();
        exec::execute(
            &mut wk,
            client,
            Call::new(argv),
            Origin::Client,
            out,
            &mut after,
        );
        client.resume = None;
        // A command whose keys came from the tier may then defer work of its own
        // (MIGRATE's round trips).
        if let Some(next) = after.defer.take() {
            work = next;
            continue;
        }
        if !after.is_empty() {
            // A second run finishes what the first began: it does not block.
            let _ = after_command(&mut wk, &mut after, out, start);
        }
        return true;
    }
}

/// Waits while the client is blocked: until it is served, times out, is unblocked (CLIENT
/// UNBLOCK) or goes away. Returns the reply to write, or None when the connection must
/// close.
pub(super) async fn wait_blocked<W: Wire>(
    server: &Server,
    stats: &ThreadStats,
    stream: &mut W,
    client: &Client,
    inbuf: &mut BytesMut,
    limits: &ConnLimits,
    w: &Arc<blocking::Waiter>,
) -> Option<Vec<u8>> {
    let deadline = w.deadline(server.clock.unix_ms(Tick::now()));
    loop {
        if let Some(o) = w.outcome(&server.stats) {
            return match o {
                blocking::Outcome::Reply(r) => Some(r),
                blocking::Outcome::Failed(r) => {
                    if let Some(id) = server.table.lookup_call(&w.argv) {
                        stats.failed(server.table.stat_id(id));
                    }
                    Some(r)
                }
                blocking::Outcome::Closed => None,
            };
        }
        // True when the deadline passed.
        let woken = async {
            tokio::select! {
                biased;
                _ = w.woken() => false,
                _ = async {
                    match deadline {
                        Some(d) => tokio::time::sleep_until(d).await,
                        None => std::future::pending().await,
                    }
                } => true,
            }
        };
        match idle(stats, stream, client, inbuf, limits, woken).await {
            Some(true) => server.blocking.time_out(w),
            Some(false) => {}
            None => {
                server.blocking.abandon(w);
                return None;
            }
        }
    }
}

/// Waits for a reply that comes later (WAIT, SHUTDOWN), serving the client meanwhile as
/// `idle` does: its mail goes out and a disconnect is noticed. Counted in INFO
/// blocked_clients and flagged `b` in CLIENT LIST meanwhile, as Redis blocks such a client.
/// None when the connection must close.
pub(super) async fn wait_later<W: Wire>(
    server: &Server,
    stats: &ThreadStats,
    stream: &mut W,
    client: &Client,
    inbuf: &mut BytesMut,
    limits: &ConnLimits,
    reply: exec::LaterReply,
) -> Option<Vec<u8>> {
    let _counted = server.blocking.later();
    client.info.blocked.store(true, Ordering::Relaxed);
    let r = idle(stats, stream, client, inbuf, limits, reply).await;
    client.info.blocked.store(false, Ordering::Relaxed);
    r
}

/// Waits while CLIENT PAUSE holds the client's command `argv` back (counted in INFO
/// blocked_clients, flagged `b` in CLIENT LIST). False when the connection must close.
pub(super) async fn wait_unpaused<W: Wire>(
    server: &Server,
    stats: &ThreadStats,
    stream: &mut W,
    client: &Client,
    inbuf: &mut BytesMut,
    limits: &ConnLimits,
    argv: &[Bytes],
) -> bool {
    let _counted = server.pause.wait();
    client.info.blocked.store(true, Ordering::Relaxed);
    let open = loop {
        // Made before looking, so a change from now on wakes it.
        let changed = server.pause.changed();
        let now = server.clock.unix_ms(Tick::now());
        let writes = match server.table.resolve(argv) {
            Ok(id) => exec::admit::call_flags(server, client, id, argv),
            Err(_) => 0,
        } & (exec::command::flags::WRITE | exec::command::flags::MAY_REPLICATE)
            != 0;
        if !server.pause.holds(now, writes) {
            break true;
        }
        // A shutdown's hold has no end (it wakes the waiters when it lets go).
        let left = (server.pause.end_ms().saturating_sub(now).saturating_add(1)).min(3_600_000);
        let end = tokio::time::Instant::now() + std::time::Duration::from_millis(left);
        let woken = async {
            tokio::select! {
                _ = changed => {}
                _ = tokio::time::sleep_until(end) => {}
            }
        };
        if idle(stats, stream, client, inbuf, limits, woken)
            .await
            .is_none()
        {
            break false;
        }
    };
    client.info.blocked.store(false, Ordering::Relaxed);
    open
}

/// Waits for `wake` while the client's command is held (blocked or paused), serving the
/// client meanwhile: its mail is written as it arrives, and its socket is read to notice
/// a disconnect (what arrives is buffered for later). None when the connection must
/// close (killed, gone, or past its query buffer limit).
async fn idle<T, W: Wire>(
    stats: &ThreadStats,
    stream: &mut W,
    client: &Client,
    inbuf: &mut BytesMut,
    limits: &ConnLimits,
    wake: impl std::future::Future<Output = T>,
) -> Option<T> {
    let info = &client.info;
    let mut mail_out = Output::new(0);
    tokio::pin!(wake);
    loop {
        if inbuf.capacity() - inbuf.len() < READ_CHUNK / 4 {
            inbuf.reserve(READ_CHUNK);
        }
        tokio::select! {
            biased;
            _ = info.signalled() => {
                if info.is_killed() {
                    return None;
                }
                let n = info.mail.take(&mut mail_out.buf);
                stats.add_net(0, n);
                let ok = flush_all(stream, info, &mut mail_out).await;
                info.mail.written(n);
                if !ok {
                    return None;
                }
            }
            v = &mut wake => return Some(v),
            r = read_some(stream, inbuf) => match r {
                Ok(n) if n > 0 && inbuf.len() <= limits.query_buffer => {
                    stats.add_net(n, 0);
                    info.qbuf.store(inbuf.len(), Ordering::Relaxed);
                }
                _ => return None,
            },
        }
    }
}
