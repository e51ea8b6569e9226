//! One connection: read what the client sent, run every complete command in it, answer
//! the whole batch with one write.

use crate::exec::client::{Client, ClientInfo};
use crate::exec::{self, blocked, After, Call, Origin, Worker};
use crate::net::clients::{self, MemTracker};
use crate::net::output::{self, flush_all, Output, MAX_RESERVE};
use crate::net::waits::{run_deferred, wait_blocked, wait_later, wait_unpaused};
use crate::net::wire::{read_some, Wire};
use crate::server::Server;
use crate::services::blocking::BlockRequest;
use crate::services::pubsub::BufferLimit;
use crate::services::stats::ThreadStats;
use crate::tick::Tick;
use bytes::{Bytes, BytesMut};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;
use strata_resp::{Limits, Parser};
use tokio::net::TcpStream;

pub(super) const READ_CHUNK: usize = 16 * 1024;

/// Limits the connection enforces, refreshed when CONFIG SET changes the config epoch.
pub(super) struct ConnLimits {
    epoch: u64,
    authenticated: bool,
    pub(super) query_buffer: usize,
    /// `client-output-buffer-limit` per class, and whether any class has one.
    obuf: [BufferLimit; 3],
    obuf_on: bool,
    /// Pending output past which commands wait for the socket, per class.
    cap: [usize; 3],
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
        let obuf = config.client_output_buffer_limit.0;
        ConnLimits {
            epoch,
            authenticated,
            query_buffer: config.client_query_buffer_limit as usize,
            obuf,
            obuf_on: obuf.iter().any(|l| l.hard > 0 || l.soft > 0),
            cap: obuf.map(output::cap),
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
    /// A connection just accepted on the TLS port: the worker runs the handshake.
    NewTls(std::net::TcpStream),
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

/// How `serve_client` ended, when the connection stays open.
enum Exit {
    /// Hand the connection to worker N.
    Move(usize),
    /// SYNC or PSYNC: the connection is a replica's now, with the bytes it sent after.
    Replica(Box<crate::services::replication::Handoff>, BytesMut),
}

/// A connection between two workers: its socket and its state, taken between two reads
/// (nothing half-parsed, nothing unwritten). TLS connections stay where they started.
pub struct Moved {
    stream: std::net::TcpStream,
    client: Client,
}

pub async fn serve(server: Arc<Server>, stats: Arc<ThreadStats>, incoming: Incoming, me: usize) {
    let (stream, tls) = match incoming {
        Incoming::New(stream) => (stream, false),
        Incoming::NewTls(stream) => (stream, true),
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
    let nopass = server.acl.default_user().rules().nopass;
    let refusal =
        crate::net::listen::refuse(&server.config, nopass, server.clients.connected(), &peer);
    // A refused connection gets no client id and is not listed.
    let id = match refusal {
        None => server.clients.next_id(),
        Some(_) => 0,
    };
    let fd = std::os::fd::AsRawFd::as_raw_fd(&stream);
    let info = Arc::new(ClientInfo::new(id, peer.to_string(), local.to_string(), fd));
    if refusal.is_none() {
        server.clients.add(info.clone());
    }
    // Authenticated at once when the default user is on and needs no password.
    let authenticated = !server.acl.auth_required();
    let default = server.acl.default_user().clone();
    if tls {
        let Some(mut wire) = crate::net::tls::accept(&server, stream, &info).await else {
            server.clients.remove(info.id);
            return;
        };
        if let Some(refusal) = refusal {
            return refuse(&server, &mut wire, &info, refusal).await;
        }
        let mut client = Client::new(info, Some(default), authenticated);
        // A TLS session never moves to another worker, nor serves a replica.
        if let Some(Exit::Replica(..)) =
            serve_client(&server, &stats, &mut wire, &mut client, me).await
        {
            tracing::warn!("replication over TLS is not supported: closing the replica's link");
        }
        wire.close();
        return finish_client(&server, client);
    }
    if let Some(refusal) = refusal {
        return refuse(&server, &mut stream, &info, refusal).await;
    }
    let mut client = Client::new(info, Some(default), authenticated);
    let exit = serve_client(&server, &stats, &mut stream, &mut client, me).await;
    finish(&server, stream, client, exit).await;
}

/// Tells a turned-away client why (maxclients, protected mode) before it is closed.
async fn refuse<W: Wire>(server: &Server, wire: &mut W, info: &ClientInfo, why: &str) {
    server
        .stats
        .rejected_connections
        .fetch_add(1, Ordering::Relaxed);
    let mut out = Output::new(0);
    out.buf.extend_from_slice(format!("-{why}\r\n").as_bytes());
    flush_all(wire, info, &mut out).await;
}

/// After `serve_client`: hands the connection to worker `to` if it asked to move, serves
/// it as a replica's after SYNC/PSYNC, else closes it.
async fn finish(server: &Server, mut stream: TcpStream, mut client: Client, exit: Option<Exit>) {
    let to = match exit {
        None => return finish_client(server, client),
        Some(Exit::Move(to)) => to,
        Some(Exit::Replica(h, inbuf)) => {
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

/// A closed connection's client leaves its subscriptions, transaction, tracking, MONITOR,
/// the client memory figures and the registry.
fn finish_client(server: &Server, mut client: Client) {
    clients::forget(server, &client.info);
    if let Some(mut subs) = client.subs.take() {
        server.pubsub.remove_all(&mut subs);
    }
    server.tracking.forget(&client.info);
    server.monitors.remove(&client.info);
    crate::commands::transactions::forget(&server.watches, &mut client);
    server.clients.remove(client.info.id);
}

/// Serves the connection until it closes (None), should move to another worker, or becomes
/// a replica's.
async fn serve_client<W: Wire>(
    server: &Server,
    stats: &ThreadStats,
    stream: &mut W,
    client: &mut Client,
    me: usize,
) -> Option<Exit> {
    let mut parser = Parser::new(Limits::default());
    let mut limits = ConnLimits::load(server, &mut parser, client.authenticated);
    let mut inbuf = BytesMut::with_capacity(READ_CHUNK);
    let mut out = Output::new(READ_CHUNK);
    let info = client.info.clone();
    // Set when a batch stopped early (its replies grew large, or too much output waits
    // for the socket): the buffer may still hold complete commands, so run them before
    // reading more.
    let mut more = false;
    let mut streak = Streak::default();
    let mut after = After::default();
    let mut mem = MemTracker::default();
    // A command CLIENT PAUSE held back: it runs first once the pause lets it.
    let mut resume: Option<Vec<Bytes>> = None;
    loop {
        let mut n = 0;
        let room = !out.stalled() || out.pending(stream.held()) < limits.cap[output::class(client)];
        if !(more && room) {
            if inbuf.capacity() - inbuf.len() < READ_CHUNK / 4 {
                let want = parser.frame_hint().unwrap_or(0).saturating_sub(inbuf.len());
                inbuf.reserve(want.clamp(READ_CHUNK, MAX_RESERVE));
            }
            let woke = if out.stalled() {
                wait_stalled(stream, &info, &mut inbuf, &mut out, room).await
            } else {
                wait_input(stream, client, &mut inbuf).await
            };
            match woke {
                Woke::Input(k) => n = k,
                Woke::Mail => {}
                Woke::Wrote => {
                    if !out.stalled() {
                        written(client, &mut out);
                    }
                    info.mem
                        .omem
                        .store(out.pending(stream.held()), Ordering::Relaxed);
                    continue;
                }
                Woke::Tick => {
                    if over_output_limit(&limits, client, &mut out, stream.held()) {
                        return None;
                    }
                    continue;
                }
                Woke::Closed => return None,
            }
        }
        let mut wk = Worker {
            server,
            stats,
            clock: Tick::now(),
        };
        info.touch(wk.clock);
        // CLIENT LIST's qbuf counts the commands of this read while they run, as Redis's
        // query buffer holds them until the batch is done.
        info.qbuf.store(inbuf.len(), Ordering::Relaxed);
        if n > 0 {
            // A client whose input alone passes `maxmemory-clients` is evicted before its
            // commands run.
            info.mem.qbuf_cap.store(inbuf.capacity(), Ordering::Relaxed);
            let buffers = inbuf.capacity() + out.buf.capacity() + stream.held();
            clients::report(server, &info, mem.measure(client, buffers));
            if info.is_killed() {
                return None;
            }
        }
        more = false;
        let fresh = out.buf.len();
        let mut blocked = None;
        let mut paused = None;
        let mut deferred = None;
        let mut later = None;
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
                    let start = out.buf.len();
                    let call = Call { argv: &argv, frame };
                    let outcome = exec::execute(
                        &mut wk,
                        client,
                        call,
                        Origin::Client,
                        &mut out.buf,
                        &mut after,
                    );
                    if let exec::Outcome::Paused = outcome {
                        // Answer what came before, then wait; what follows stays buffered.
                        paused = Some(argv);
                        break;
                    }
                    if !after.is_empty() {
                        match after_command(&mut wk, &mut after, &mut out.buf, start) {
                            // Blocked: answer what came before, then wait; the commands
                            // after it stay in the buffer until it is served.
                            Some(Wait::Block(req)) => {
                                let held: usize = argv.iter().map(|a| a.len()).sum();
                                info.mem.argv.store(held, Ordering::Relaxed);
                                blocked = Some(blocked::begin(&mut wk, client, &argv, *req));
                                break;
                            }
                            // Deferred work: the same, until it is done and the command
                            // has run again.
                            Some(Wait::Defer(work)) => {
                                deferred = Some((argv.to_vec(), work));
                                break;
                            }
                            // A reply that comes later (WAIT): what came before is
                            // answered first.
                            Some(Wait::Later(reply)) => {
                                later = Some(reply);
                                break;
                            }
                            // SYNC, PSYNC: the connection becomes a replica's once what
                            // came before is answered.
                            Some(Wait::Handoff(h)) => {
                                drop(sticky);
                                if !flush_all(stream, &info, &mut out).await {
                                    return None;
                                }
                                written(client, &mut out);
                                let rest = std::mem::take(&mut inbuf);
                                return Some(Exit::Replica(h, rest));
                            }
                            None => {}
                        }
                    }
                    if client.close_after_reply {
                        break;
                    }
                    if limits.obuf_on && over_output_limit(&limits, client, &mut out, stream.held())
                    {
                        drop(sticky);
                        if let Some(w) = blocked {
                            server.blocking.abandon(&w);
                        }
                        return None;
                    }
                    // Bound this connection's reply memory: write what we have first.
                    if out.buf.len() >= MAX_RESERVE {
                        more = true;
                        break;
                    }
                }
                Ok(None) => break,
                Err(e) => {
                    // Redis echoes an offending byte raw, which a &str can't carry.
                    out.buf.extend_from_slice(&e.reply_bytes());
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
            query_buffer_exceeded(&info, &inbuf);
            if let Some(w) = blocked {
                server.blocking.abandon(&w);
            }
            return None;
        }
        if info.mail.has_mail() {
            out.mail += info.mail.take(&mut out.buf);
        }
        stats.add_net(n, out.buf.len() - fresh);
        // appendfsync always: nothing is acknowledged before the fsync that covers it. That
        // fsync runs as the loop goes idle, so these replies are at the end of a turn already;
        // the others wait for it (crate::net::turn).
        if server.persist.must_wait(client.last_lsn) {
            server.persist.wait_durable(client.last_lsn).await;
        } else if out.buf.len() > fresh && fresh == 0 {
            crate::net::turn::end(wk.clock).await;
        }
        if out.stalled() {
            match out.push(stream) {
                Ok(true) => written(client, &mut out),
                Ok(false) => {}
                Err(_) => {
                    if let Some(w) = blocked {
                        server.blocking.abandon(&w);
                    }
                    return None;
                }
            }
        }
        let held = stream.held();
        info.mem.omem.store(out.pending(held), Ordering::Relaxed);
        info.mem.qbuf_cap.store(inbuf.capacity(), Ordering::Relaxed);
        let buffers = inbuf.capacity() + out.buf.capacity() + held;
        clients::report(server, &info, mem.measure(client, buffers));
        if paused.is_some() || deferred.is_some() || later.is_some() {
            // What came before the held command goes out before it waits.
            if !flush_all(stream, &info, &mut out).await {
                return None;
            }
            written(client, &mut out);
            info.mem.omem.store(0, Ordering::Relaxed);
        }
        if let Some(argv) = paused {
            if !wait_unpaused(server, stats, stream, client, &mut inbuf, &limits, &argv).await {
                return None;
            }
            resume = Some(argv);
            more = true;
        }
        if let Some((argv, work)) = deferred {
            if !run_deferred(server, stats, client, &argv, work, &mut out.buf).await {
                return None;
            }
            // Write its reply, and run what was pipelined after it.
            more = true;
        }
        if let Some(reply) = later {
            let r = wait_later(stats, stream, client, &mut inbuf, &limits, reply).await?;
            out.buf.extend_from_slice(&r);
            more = true;
        }
        if let Some(w) = blocked {
            // A blocked client's earlier replies go out before it waits.
            let flushed = flush_all(stream, &info, &mut out).await;
            if flushed {
                written(client, &mut out);
                info.mem.omem.store(0, Ordering::Relaxed);
            }
            let reply = match flushed {
                true => wait_blocked(server, stats, stream, client, &mut inbuf, &limits, &w).await,
                false => {
                    server.blocking.abandon(&w);
                    None
                }
            };
            info.mem.argv.store(0, Ordering::Relaxed);
            match reply {
                Some(reply) => {
                    // The write that served this client was logged by another connection.
                    client.last_lsn = server.persist.last_lsn();
                    out.buf.extend_from_slice(&reply);
                    // Run what was pipelined after the blocking command.
                    more = true;
                }
                None => return None,
            }
        }
        if client.close_after_reply {
            // What the client was told before it goes (QUIT's +OK, a protocol error).
            flush_all(stream, &info, &mut out).await;
            return None;
        }
        if info.is_killed() {
            return None;
        }
        // A hot shard's connection moves to the worker that serves that shard's hot
        // connections (shard number modulo the workers): a hot key's connections then run on
        // one worker instead of handing its lock and its data back and forth (see `Streak`).
        if let Some(shard) = hot {
            let to = shard % server.threads.max(1);
            if W::MOVABLE
                && to != me
                && inbuf.is_empty()
                && !more
                && !out.stalled()
                && movable(client)
            {
                return Some(Exit::Move(to));
            }
        }
    }
}

/// What a waiting connection woke for.
enum Woke {
    /// This many bytes arrived.
    Input(usize),
    /// Pub/sub messages arrived.
    Mail,
    /// Pending output moved (or the wake-up was spurious): look again.
    Wrote,
    /// Time to re-check the soft output limit of a client that reads nothing.
    Tick,
    Closed,
}

/// Waits for input, mail (messages, invalidations, MONITOR lines) or a kill, with nothing
/// pending for the socket.
async fn wait_input<W: Wire>(stream: &mut W, client: &Client, inbuf: &mut BytesMut) -> Woke {
    let info = &client.info;
    tokio::select! {
        biased;
        _ = info.signalled() => {
            if info.is_killed() {
                Woke::Closed
            } else {
                Woke::Mail
            }
        }
        r = read_some(stream, inbuf) => match r {
            Ok(0) | Err(_) => Woke::Closed,
            Ok(n) => Woke::Input(n),
        },
    }
}

/// Waits while output is pending: for the socket to take more, for input when the client
/// still has `room` to run commands, for a kill, or for the next soft-limit check.
async fn wait_stalled<W: Wire>(
    stream: &mut W,
    info: &ClientInfo,
    inbuf: &mut BytesMut,
    out: &mut Output,
    room: bool,
) -> Woke {
    enum Ready {
        Write,
        Read,
    }
    let ready = tokio::select! {
        biased;
        _ = info.killed() => return Woke::Closed,
        r = stream.writable() => match r {
            Ok(()) => Ready::Write,
            Err(_) => return Woke::Closed,
        },
        r = stream.readable(), if room => match r {
            Ok(()) => Ready::Read,
            Err(_) => return Woke::Closed,
        },
        _ = tokio::time::sleep(Duration::from_secs(1)) => return Woke::Tick,
    };
    match ready {
        Ready::Write => match out.push(stream) {
            Ok(_) => Woke::Wrote,
            Err(_) => Woke::Closed,
        },
        Ready::Read => match stream.try_read_buf(inbuf) {
            Ok(0) => Woke::Closed,
            Ok(n) => Woke::Input(n),
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => Woke::Wrote,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => Woke::Wrote,
            Err(_) => Woke::Closed,
        },
    }
}

/// Everything pending was written: the mailbox learns its messages are out.
fn written(client: &Client, out: &mut Output) {
    if out.mail > 0 {
        client.info.mail.written(out.mail);
        out.mail = 0;
    }
}

/// Checks the client's pending output (with its undelivered messages) against its class's
/// limits; true (and logged) when it must close.
fn over_output_limit(limits: &ConnLimits, client: &Client, out: &mut Output, held: usize) -> bool {
    let class = output::class(client);
    let queued = client.info.mail.queued();
    if !out.over_limit(limits.obuf[class], out.pending(held) + queued) {
        return false;
    }
    let info = &client.info;
    tracing::warn!(
        "Client id={} addr={} laddr={} omem={} scheduled to be closed ASAP for overcoming of output buffer limits.",
        info.id,
        info.addr,
        info.laddr,
        out.pending(held)
    );
    true
}

/// Logs the close of a client whose query buffer passed `client-query-buffer-limit`,
/// with the start of what it sent, as Redis does.
#[cold]
fn query_buffer_exceeded(info: &ClientInfo, inbuf: &[u8]) {
    let head: String = inbuf
        .iter()
        .take(64)
        .flat_map(|&b| std::ascii::escape_default(b))
        .map(char::from)
        .collect();
    tracing::warn!(
        "Closing client that reached max query buffer length: id={} addr={} laddr={} qbuf={} (qbuf initial bytes: \"{head}\")",
        info.id,
        info.addr,
        info.laddr,
        inbuf.len()
    );
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

/// What a command asked its connection to wait for.
pub(super) enum Wait {
    Block(Box<BlockRequest>),
    /// Blocking work for the worker's blocking pool, then the command again (MIGRATE).
    Defer(exec::Deferred),
    /// The reply, once this future gives it (WAIT).
    Later(exec::LaterReply),
    /// SYNC, PSYNC: the connection leaves the request path for the replica's.
    Handoff(Box<crate::services::replication::Handoff>),
}

/// The slow path after a command that left something in `after`: place the client's own
/// push messages before its reply, serve clients blocked on keys the command made ready,
/// and return what to wait for if the command asked to block or deferred work.
#[cold]
#[inline(never)]
pub(super) fn after_command(
    wk: &mut Worker<'_>,
    after: &mut After,
    out: &mut Vec<u8>,
    start: usize,
) -> Option<Wait> {
    if !after.self_push.is_empty() {
        let push = std::mem::take(&mut after.self_push);
        out.splice(start..start, push);
    }
    if !after.ready_keys.is_empty() {
        let keys = std::mem::take(&mut after.ready_keys);
        blocked::serve_ready(wk, keys);
    }
    if let Some(req) = after.block.take() {
        return Some(Wait::Block(req));
    }
    if let Some(h) = after.handoff.take() {
        return Some(Wait::Handoff(h));
    }
    if let Some(reply) = after.later.take() {
        return Some(Wait::Later(reply));
    }
    after.defer.take().map(Wait::Defer)
}
