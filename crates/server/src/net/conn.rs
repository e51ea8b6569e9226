//! One connection: read what the client sent, run every complete command in it, answer
//! the whole batch with one write.

use crate::exec::client::{Client, ClientInfo};
use crate::exec::{self, blocked, After, Call, Origin, Worker};
use crate::server::Server;
use crate::services::blocking::{self, BlockRequest};
use crate::services::stats::ThreadStats;
use crate::tick::Tick;
use bytes::{Bytes, BytesMut};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use strata_resp::{Limits, Parser};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

const READ_CHUNK: usize = 16 * 1024;
/// Reserve at most this much ahead of what has arrived, whatever a frame header claims.
const MAX_RESERVE: usize = 1024 * 1024;

/// Limits the connection enforces, refreshed when CONFIG SET changes the config epoch.
struct ConnLimits {
    epoch: u64,
    authenticated: bool,
    query_buffer: usize,
}

impl ConnLimits {
    fn load(server: &Server, parser: &mut Parser, authenticated: bool) -> ConnLimits {
        let epoch = server.config.epoch();
        let config = server.config.get();
        parser.set_limits(Limits {
            max_bulk_len: config.proto_max_bulk_len as usize,
            unauthenticated: !authenticated,
            ..Limits::default()
        });
        ConnLimits {
            epoch,
            authenticated,
            query_buffer: config.client_query_buffer_limit as usize,
        }
    }

    fn stale(&self, server: &Server, client: &Client) -> bool {
        server.config.epoch() != self.epoch || client.authenticated != self.authenticated
    }
}

/// What a worker thread's queue brings it.
pub enum Incoming {
    /// A connection just accepted.
    New(std::net::TcpStream),
    /// A connection another worker handed over (a hot key's, see `serve_client`).
    Moved(Box<Moved>),
    /// Not a connection: the worker answers as it takes it (`workers::barrier`).
    Barrier(std::sync::mpsc::SyncSender<()>),
    /// A long-lived task to run on the worker, as a connection runs (a replica's link to
    /// its primary).
    Task(Task),
}

/// See [`Incoming::Task`].
pub type Task = Box<
    dyn FnOnce(
            Arc<Server>,
            Arc<ThreadStats>,
        ) -> std::pin::Pin<Box<dyn std::future::Future<Output = ()>>>
        + Send,
>;

/// How `serve_client` ended.
enum Exit {
    Close,
    /// Hand the connection to worker N.
    Move(usize),
    /// SYNC or PSYNC: the connection is a replica's now, with the bytes it sent after.
    Replica(Box<crate::services::replication::Handoff>, BytesMut),
}

/// A connection between two workers: its socket and its state, taken between two reads
/// (nothing half-parsed, nothing unwritten).
pub struct Moved {
    stream: std::net::TcpStream,
    client: Client,
}

pub async fn serve(server: Arc<Server>, stats: Arc<ThreadStats>, incoming: Incoming, me: usize) {
    let stream = match incoming {
        Incoming::New(stream) => stream,
        Incoming::Moved(m) => {
            let Moved { stream, mut client } = *m;
            if let Ok(mut stream) = TcpStream::from_std(stream) {
                let exit = serve_client(&server, &stats, &mut stream, &mut client, me).await;
                return finish(&server, stream, client, exit).await;
            }
            return finish_client(&server, client);
        }
        Incoming::Barrier(passed) => {
            let _ = passed.send(());
            return;
        }
        Incoming::Task(task) => return task(server, stats).await,
    };
    let (peer, local) = match (stream.peer_addr(), stream.local_addr()) {
        (Ok(p), Ok(l)) => (p, l),
        _ => return,
    };
    let _ = stream.set_nodelay(true);
    if stream.set_nonblocking(true).is_err() {
        return;
    }
    let Ok(mut stream) = TcpStream::from_std(stream) else {
        return;
    };
    if let Some(refusal) =
        crate::net::listen::refuse(&server.config, server.clients.connected(), &peer)
    {
        server
            .stats
            .rejected_connections
            .fetch_add(1, Ordering::Relaxed);
        let _ = stream.write_all(format!("-{refusal}\r\n").as_bytes()).await;
        return;
    }
    let info = Arc::new(ClientInfo::new(
        server.clients.next_id(),
        peer.to_string(),
        local.to_string(),
    ));
    server.clients.add(info.clone());
    let authenticated = server.config.get().requirepass.is_empty();
    let mut client = Client::new(info, authenticated);
    let exit = serve_client(&server, &stats, &mut stream, &mut client, me).await;
    finish(&server, stream, client, exit).await;
}

/// After `serve_client`: hands the connection to worker `to` if it asked to move, serves
/// it as a replica's after SYNC/PSYNC, else closes it.
async fn finish(server: &Server, mut stream: TcpStream, mut client: Client, exit: Exit) {
    let to = match exit {
        Exit::Close => return finish_client(server, client),
        Exit::Move(to) => to,
        Exit::Replica(h, inbuf) => {
            crate::services::replication::primary::serve_replica(
                server,
                &mut stream,
                &mut client,
                inbuf,
                *h,
            )
            .await;
            return finish_client(server, client);
        }
    };
    let queue = server.workers.get().and_then(|w| w.get(to));
    match (stream.into_std(), queue) {
        (Ok(stream), Some(q)) => {
            server
                .stats
                .connections_moved
                .fetch_add(1, Ordering::Relaxed);
            if let Err(e) = q.send(Incoming::Moved(Box::new(Moved { stream, client }))) {
                // The worker is gone (shutting down): the connection closes.
                if let Incoming::Moved(m) = e.0 {
                    finish_client(server, m.client);
                }
            }
        }
        _ => finish_client(server, client),
    }
}

/// A closed connection's client leaves its subscriptions, transaction, tracking, MONITOR
/// and the registry.
fn finish_client(server: &Server, mut client: Client) {
    if let Some(mut subs) = client.subs.take() {
        server.pubsub.remove_all(&mut subs);
    }
    server.tracking.forget(&client.info);
    server.monitors.remove(&client.info);
    crate::commands::transactions::forget(&server.watches, &mut client);
    server.clients.remove(client.info.id);
}

/// Serves the connection until it closes, should move to another worker, or becomes a
/// replica's.
async fn serve_client(
    server: &Server,
    stats: &ThreadStats,
    stream: &mut TcpStream,
    client: &mut Client,
    me: usize,
) -> Exit {
    match serve_requests(server, stats, stream, client, me).await {
        Some(exit) => exit,
        None => Exit::Close,
    }
}

/// `serve_client`'s loop; None: close.
async fn serve_requests(
    server: &Server,
    stats: &ThreadStats,
    stream: &mut TcpStream,
    client: &mut Client,
    me: usize,
) -> Option<Exit> {
    let mut parser = Parser::new(Limits::default());
    let mut limits = ConnLimits::load(server, &mut parser, client.authenticated);
    let mut inbuf = BytesMut::with_capacity(READ_CHUNK);
    let mut out: Vec<u8> = Vec::with_capacity(READ_CHUNK);
    let info = client.info.clone();
    // Set when a batch stopped early because its replies grew large: the buffer may still
    // hold complete commands, so run them before reading more.
    let mut pending = false;
    let mut streak = Streak::default();
    let mut after = After::default();
    // A command CLIENT PAUSE held back: it runs first once the pause lets it.
    let mut resume: Option<Vec<Bytes>> = None;
    loop {
        let mut n = 0;
        if !pending {
            if inbuf.capacity() - inbuf.len() < READ_CHUNK / 4 {
                let want = parser.frame_hint().unwrap_or(0).saturating_sub(inbuf.len());
                inbuf.reserve(want.clamp(READ_CHUNK, MAX_RESERVE));
            }
            // A client wakes for input, for mail (messages, invalidations, MONITOR
            // lines) and for its kill signal.
            n = tokio::select! {
                biased;
                _ = info.signalled() => {
                    if info.is_killed() {
                        return None;
                    }
                    0
                }
                r = stream.read_buf(&mut inbuf) => match r {
                    Ok(0) | Err(_) => return None,
                    Ok(n) => n,
                },
            };
        }
        let mut wk = Worker {
            server,
            stats,
            clock: Tick::now(),
        };
        info.touch(wk.clock);
        pending = false;
        let mut blocked = None;
        let mut deferred = None;
        let mut paused = None;
        // The commands parsed from this read run with sticky shards: a pipeline on one
        // key locks its shard once, not once per command. Let go before any await.
        let sticky = server.keyspace.sticky();
        loop {
            if limits.stale(server, client) {
                limits = ConnLimits::load(server, &mut parser, client.authenticated);
            }
            let next = match resume.take() {
                // Its frame is gone: the journal records it from its arguments.
                Some(argv) => Ok(Some((argv, None))),
                None => parser
                    .parse(&mut inbuf)
                    .map(|a| a.map(|argv| (argv, parser.take_frame()))),
            };
            match next {
                Ok(Some((argv, frame))) => {
                    let start = out.len();
                    let call = Call { argv: &argv, frame };
                    let outcome =
                        exec::execute(&mut wk, client, call, Origin::Client, &mut out, &mut after);
                    if let exec::Outcome::Paused = outcome {
                        // Answer what came before, then wait; what follows stays buffered.
                        paused = Some(argv);
                        break;
                    }
                    if !after.is_empty() {
                        if let Some(req) = after_command(&mut wk, &mut after, &mut out, start) {
                            // Blocked: answer what came before, then wait; the commands
                            // after it stay in the buffer until it is served.
                            blocked = Some(blocked::begin(&mut wk, client, &argv, *req));
                            break;
                        }
                        // A reply that comes later (WAIT), or the connection becomes a
                        // replica's (SYNC, PSYNC): what came before is answered first.
                        if after.deferred.is_some() || after.handoff.is_some() {
                            deferred = after.deferred.take();
                            if let Some(h) = after.handoff.take() {
                                drop(sticky);
                                if !out.is_empty() && !write_out(stream, &info, &out).await {
                                    return None;
                                }
                                let rest = std::mem::take(&mut inbuf);
                                return Some(Exit::Replica(h, rest));
                            }
                            break;
                        }
                    }
                    if client.close_after_reply {
                        break;
                    }
                    // Bound this connection's reply memory: write what we have first.
                    if out.len() >= MAX_RESERVE {
                        pending = true;
                        break;
                    }
                }
                Ok(None) => break,
                Err(e) => {
                    // Redis echoes an offending byte raw, which a &str can't carry.
                    out.extend_from_slice(&e.reply_bytes());
                    server.stats.count_error("ERR");
                    client.close_after_reply = true;
                    break;
                }
            }
        }
        if client.close_after_reply {
            // Gone for everyone else from now on (a redirect to it is broken), before its
            // last reply is out: Redis frees such a client before serving any other.
            server.clients.remove(info.id);
        }
        let hot = streak.hot(sticky.one_shard());
        drop(sticky);
        info.qbuf.store(inbuf.len(), Ordering::Relaxed);
        if inbuf.len() > limits.query_buffer {
            tracing::warn!(
                "closing client {} that reached max query buffer length",
                info.addr
            );
            if let Some(w) = blocked {
                server.blocking.abandon(&w);
            }
            return None;
        }
        let mail = if info.mail.has_mail() {
            info.mail.take(&mut out)
        } else {
            0
        };
        stats.add_net(n, out.len());
        // appendfsync always: nothing is acknowledged before the fsync that covers it. That
        // fsync runs as the loop goes idle, so these replies are at the end of a turn already;
        // the others wait for it (crate::net::turn).
        if server.persist.must_wait(client.last_lsn) {
            server.persist.wait_durable(client.last_lsn).await;
        } else if !out.is_empty() {
            crate::net::turn::end(wk.clock).await;
        }
        if !out.is_empty() {
            if !write_out(stream, &info, &out).await {
                if let Some(w) = blocked {
                    server.blocking.abandon(&w);
                }
                return None;
            }
            out.clear();
            // Don't keep a huge buffer around after one big reply.
            if out.capacity() > 4 * MAX_RESERVE {
                out = Vec::with_capacity(READ_CHUNK);
            }
        }
        info.mail.written(mail);
        if let Some(argv) = paused {
            if !wait_unpaused(server, stats, stream, client, &mut inbuf, &limits, &argv).await {
                return None;
            }
            resume = Some(argv);
            pending = true;
        }
        if let Some(reply) = deferred {
            tokio::select! {
                biased;
                _ = info.killed() => return None,
                r = reply => out.extend_from_slice(&r),
            }
            pending = true;
        }
        if let Some(w) = blocked {
            match wait_blocked(server, stats, stream, client, &mut inbuf, &limits, &w).await {
                Some(reply) => {
                    // The write that served this client was logged by another connection.
                    client.last_lsn = server.persist.last_lsn();
                    out.extend_from_slice(&reply);
                    // Run what was pipelined after the blocking command.
                    pending = true;
                }
                None => return None,
            }
        }
        if client.close_after_reply || info.is_killed() {
            return None;
        }
        // A hot shard's connection moves to the worker that serves that shard's hot
        // connections (shard number modulo the workers): a hot key's connections then run on
        // one worker instead of handing its lock and its data back and forth (see `Streak`).
        if let Some(shard) = hot {
            let to = shard % server.threads.max(1);
            if to != me && inbuf.is_empty() && !pending && movable(client) {
                return Some(Exit::Move(to));
            }
        }
    }
}

/// A connection's run of batches that each locked one and the same shard.
#[derive(Default)]
struct Streak {
    shard: usize,
    batches: u32,
}

/// Batches in a row on one shard, the last finding it another worker's, that make the
/// shard hot. That many in a row almost never happen over spread keys, nor over skewed ones
/// where the hottest key has under a tenth of the requests (YCSB's zipfian: about 0.08^7
/// per batch; with 4 in a row, YCSB-A runs moved more connections than without the rule).
const HOT_STREAK: u32 = 8;

impl Streak {
    /// Counts a batch that locked `one` shard (None: several, or none) and says whether the
    /// connection should move to that shard's worker. It should when the batch waited for
    /// the shard (docs/benchmarks.md, "One hot key at -P 16": the first such batch, "Hot
    /// connections move at once"), or when the shard was another worker's last and the
    /// connection's batches have stayed on it: at -P 1 the lock is rarely busy, but the
    /// shard's data still crossed cores with each request ("Hot keys at -P 1").
    fn hot(&mut self, one: Option<strata_engine::OneShard>) -> Option<usize> {
        let Some(one) = one else {
            self.batches = 0;
            return None;
        };
        if self.batches > 0 && self.shard == one.index {
            self.batches = self.batches.saturating_add(1);
        } else {
            *self = Streak {
                shard: one.index,
                batches: 1,
            };
        }
        (one.waited || (one.shared && self.batches >= HOT_STREAK)).then_some(one.index)
    }
}

/// True when nothing ties the client to this worker: no subscriptions, no transaction in
/// progress.
fn movable(c: &Client) -> bool {
    c.subs.is_none() && c.multi.is_none()
}

/// The slow path after a command that left something in `after`: place the client's own
/// push messages before its reply, serve clients blocked on keys the command made ready,
/// and return a block request if the command asked to block.
#[cold]
#[inline(never)]
fn after_command(
    wk: &mut Worker<'_>,
    after: &mut After,
    out: &mut Vec<u8>,
    start: usize,
) -> Option<Box<BlockRequest>> {
    if !after.self_push.is_empty() {
        let push = std::mem::take(&mut after.self_push);
        out.splice(start..start, push);
    }
    if !after.ready_keys.is_empty() {
        let keys = std::mem::take(&mut after.ready_keys);
        blocked::serve_ready(wk, keys);
    }
    after.block.take()
}

/// Writes `buf` completely, giving up if the client is killed meanwhile (a client that
/// stops reading must not pin its connection). The first attempt is a plain write.
async fn write_out(stream: &mut TcpStream, info: &ClientInfo, buf: &[u8]) -> bool {
    let mut off = 0;
    loop {
        match stream.try_write(&buf[off..]) {
            Ok(0) => return false,
            Ok(n) => {
                off += n;
                if off == buf.len() {
                    return true;
                }
            }
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                tokio::select! {
                    biased;
                    _ = info.killed() => return false,
                    r = stream.writable() => if r.is_err() { return false },
                }
            }
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(_) => return false,
        }
    }
}

/// Waits while the client is blocked: until it is served, times out, is unblocked (CLIENT
/// UNBLOCK) or goes away. Returns the reply to write, or None when the connection must
/// close.
async fn wait_blocked(
    server: &Server,
    stats: &ThreadStats,
    stream: &mut TcpStream,
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

/// Waits while CLIENT PAUSE holds the client's command `argv` back (counted in INFO
/// blocked_clients, flagged `b` in CLIENT LIST). False when the connection must close.
async fn wait_unpaused(
    server: &Server,
    stats: &ThreadStats,
    stream: &mut TcpStream,
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
        let left = server.pause.end_ms().saturating_sub(now) + 1;
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
async fn idle<T>(
    stats: &ThreadStats,
    stream: &mut TcpStream,
    client: &Client,
    inbuf: &mut BytesMut,
    limits: &ConnLimits,
    wake: impl std::future::Future<Output = T>,
) -> Option<T> {
    let info = &client.info;
    let mut mail_out = Vec::new();
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
                let n = info.mail.take(&mut mail_out);
                let ok = write_out(stream, info, &mail_out).await;
                stats.add_net(0, mail_out.len());
                info.mail.written(n);
                mail_out.clear();
                if !ok {
                    return None;
                }
            }
            v = &mut wake => return Some(v),
            r = stream.read_buf(inbuf) => match r {
                Ok(n) if n > 0 && inbuf.len() <= limits.query_buffer => {
                    stats.add_net(n, 0);
                    info.qbuf.store(inbuf.len(), Ordering::Relaxed);
                }
                _ => return None,
            },
        }
    }
}
