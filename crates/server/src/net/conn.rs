//! One connection: read what the client sent, run every complete command in it, answer
//! the whole batch with one write.

use crate::exec::client::{Client, ClientInfo};
use crate::exec::{self, blocked, After, Call, Origin, Worker};
use crate::net::balance;
use crate::net::clients::{self, MemTracker};
use crate::net::output::{self, flush_all, Output, MAX_RESERVE};
use crate::net::replybuf::ReplyBuf;
use crate::net::waits::{run_deferred, wait_blocked, wait_later, wait_unpaused};
use crate::net::wire::Wire;
use crate::server::Server;
use crate::services::blocking::BlockRequest;
use crate::services::pubsub::BufferLimit;
use crate::services::stats::ThreadStats;
use crate::tick::Tick;
use bytes::{Bytes, BytesMut};
use std::cell::RefCell;
use std::rc::Rc;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;
use strata_resp::{Limits, Parser};

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
    pub(super) cap: [usize; 3],
}

impl ConnLimits {
    pub(super) fn load(server: &Server, parser: &mut Parser, authenticated: bool) -> ConnLimits {
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

    pub(super) fn stale(&self, server: &Server, client: &Client) -> bool {
        server.config.epoch() != self.epoch || client.authenticated != self.authenticated
    }
}

/// What a worker thread's queue brings it.
pub enum Incoming {
    /// A connection just accepted.
    New(std::net::TcpStream),
    /// A connection just accepted on the TLS port: the worker runs the handshake.
    NewTls(std::net::TcpStream),
    /// A connection just accepted on the Unix socket (`unixsocket`).
    NewUnix(std::os::unix::net::UnixStream),
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
pub(super) enum Exit {
    /// Hand the connection to worker N, with its reply buffer's sizing (the buffer is
    /// made anew there at that size, not at the size a new connection starts with).
    Move(usize, ReplyBuf),
    /// SYNC or PSYNC: the connection is a replica's now, with the bytes it sent after.
    Replica(Box<crate::services::replication::Handoff>, BytesMut),
}

/// A connection between two workers: its socket and its state, taken between two reads
/// (nothing half-parsed, nothing unwritten). TLS connections stay where they started.
pub struct Moved {
    pub(super) stream: std::net::TcpStream,
    pub(super) client: Client,
    pub(super) reply: ReplyBuf,
}

/// The state a connection keeps between reads, for `client`, its reply buffer sized by
/// `reply` (`ReplyBuf::new()` for a new connection).
pub(super) fn new_conn(server: &Server, client: Client, reply: ReplyBuf) -> Rc<RefCell<Conn>> {
    let mut parser = Parser::new(Limits::default());
    let limits = ConnLimits::load(server, &mut parser, client.authenticated);
    let out = Output::with_reply(reply);
    let mem = &client.info.mem;
    mem.rbs.store(out.reply.size(), Ordering::Relaxed);
    Rc::new(RefCell::new(Conn {
        client,
        parser,
        limits,
        inbuf: BytesMut::with_capacity(READ_CHUNK),
        inbuf_grown: false,
        out,
        resume: None,
        served: false,
    }))
}

/// What a connection keeps from one read to the next. Its task holds it borrowed while it
/// works or waits for anything but input; while it waits for input, a busy script's hook
/// on the same worker may borrow it to serve the client (`net::busy`).
pub(super) struct Conn {
    pub(super) client: Client,
    pub(super) parser: Parser,
    pub(super) limits: ConnLimits,
    pub(super) inbuf: BytesMut,
    /// The input buffer grew past eight read chunks (see `reserve_input`).
    inbuf_grown: bool,
    pub(super) out: Output,
    /// A command CLIENT PAUSE held back: it runs first once the pause lets it.
    pub(super) resume: Option<Vec<Bytes>>,
    /// Served by a busy script's hook while it waited: replies may wait to be written, a
    /// command to be resumed, or the client to be closed.
    pub(super) served: bool,
}

/// Serves the connection until it closes (None), should move to another worker, or becomes
/// a replica's; gives the client back (`idle`: its place in the busy registry, given up
/// first).
pub(super) async fn serve_client<W: Wire>(
    server: &Server,
    stats: &ThreadStats,
    stream: &mut W,
    conn: Rc<RefCell<Conn>>,
    idle: Option<crate::net::busy::Registration>,
    me: usize,
) -> (Client, Option<Exit>) {
    let exit = serve_conn(server, stats, stream, &conn, me).await;
    drop(idle);
    match Rc::try_unwrap(conn) {
        Ok(c) => (c.into_inner().client, exit),
        Err(_) => unreachable!(
            "the busy registry holds weak references, upgraded only inside a script's hook"
        ),
    }
}

/// The connection's state stays borrowed across its waits but one (`wait_input`, and the
/// end of a turn): that is what keeps a busy script's hook (`net::busy`, which only ever
/// tries to borrow it) from serving a connection that waits for anything else.
#[allow(clippy::await_holding_refcell_ref)]
async fn serve_conn<W: Wire>(
    server: &Server,
    stats: &ThreadStats,
    stream: &mut W,
    conn: &RefCell<Conn>,
    me: usize,
) -> Option<Exit> {
    let info = conn.borrow().client.info.clone();
    // Set when a batch stopped early (its replies grew large, or too much output waits
    // for the socket): the buffer may still hold complete commands, so run them before
    // reading more.
    let mut more = false;
    let mut streak = Streak::default();
    // This connection's mark as active in its worker's window (`net::balance`).
    let mut stamp = 0;
    let mut after = After::default();
    let mut mem = MemTracker::default();
    loop {
        let mut n = 0;
        let (stalled, room) = {
            let c = conn.borrow();
            let class = output::class(&c.client);
            let room = !c.out.stalled() || c.out.pending(stream.held()) < c.limits.cap[class];
            (c.out.stalled(), room)
        };
        if !(more && room) {
            let woke = if stalled {
                let mut g = conn.borrow_mut();
                let c = &mut *g;
                reserve_input(c);
                wait_stalled(stream, &info, &mut c.inbuf, &mut c.out, room).await
            } else {
                wait_input(stream, conn, &info).await
            };
            let mut g = conn.borrow_mut();
            let Conn {
                client,
                limits,
                out,
                ..
            } = &mut *g;
            match woke {
                Woke::Input(k) => n = k,
                Woke::Mail => {}
                Woke::Wrote => {
                    if !out.stalled() {
                        written(client, out);
                    }
                    info.mem
                        .omem
                        .store(out.pending(stream.held()), Ordering::Relaxed);
                    continue;
                }
                Woke::Tick => {
                    if over_output_limit(limits, client, out, stream.held()) {
                        return None;
                    }
                    continue;
                }
                Woke::Closed => return None,
            }
        }
        let mut g = conn.borrow_mut();
        let Conn {
            client,
            parser,
            limits,
            inbuf,
            out,
            resume,
            ..
        } = &mut *g;
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
        // What of the next request's first argument was prefetched.
        let mut ahead = exec::Ahead::Nothing;
        let mut commands = 0;
        loop {
            if limits.stale(server, client) {
                *limits = ConnLimits::load(server, parser, client.authenticated);
            }
            let next = match resume.take() {
                // Its frame is gone: the journal records it from its arguments.
                Some(argv) => Ok(Some((argv, None))),
                None => parser
                    .parse(inbuf)
                    .map(|a| a.map(|argv| (argv, parser.take_frame()))),
            };
            match next {
                Ok(Some((argv, frame))) => {
                    commands += 1;
                    let prefetched = std::mem::take(&mut ahead);
                    if let Some(key) = strata_resp::peek_first_arg(inbuf) {
                        ahead = exec::tracking::prefetch_next(server, client, key);
                    }
                    let start = out.buf.len();
                    let call = Call {
                        ahead: prefetched,
                        ..Call::framed(&argv, frame)
                    };
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
                                if !flush_all(stream, &info, out).await {
                                    return None;
                                }
                                written(client, out);
                                let rest = std::mem::take(inbuf);
                                return Some(Exit::Replica(h, rest));
                            }
                            None => {}
                        }
                    }
                    if client.close_after_reply {
                        break;
                    }
                    if limits.obuf_on && over_output_limit(limits, client, out, stream.held()) {
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
        let clock = wk.clock;
        drop(sticky);
        let counted = inbuf.len().saturating_sub(parser.big_arg_offset());
        info.qbuf.store(counted, Ordering::Relaxed);
        if inbuf.len() > limits.query_buffer {
            query_buffer_exceeded(&info, inbuf);
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
            if blocked.is_none() && paused.is_none() && deferred.is_none() && later.is_none() {
                // Let go while the replies wait: a script that gets busy on this worker
                // before the turn ends writes them (`net::busy`). Not while a command
                // waits: what the client sent after it must not run first.
                drop(g);
                crate::net::turn::end(wk.clock).await;
                g = conn.borrow_mut();
            } else {
                crate::net::turn::end(wk.clock).await;
            }
        }
        let Conn {
            client,
            limits,
            inbuf,
            out,
            resume,
            ..
        } = &mut *g;
        if out.stalled() {
            match out.push(stream) {
                Ok(true) => written(client, out),
                Ok(false) => client.info.mail.stuck(),
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
            if !flush_all(stream, &info, out).await {
                return None;
            }
            written(client, out);
            info.mem.omem.store(0, Ordering::Relaxed);
        }
        if let Some(argv) = paused {
            if !wait_unpaused(server, stats, stream, client, inbuf, limits, &argv).await {
                return None;
            }
            *resume = Some(argv);
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
            let r = wait_later(server, stats, stream, client, inbuf, limits, reply).await?;
            out.buf.extend_from_slice(&r);
            more = true;
        }
        if let Some(w) = blocked {
            // A blocked client's earlier replies go out before it waits.
            let flushed = flush_all(stream, &info, out).await;
            if flushed {
                written(client, out);
                info.mem.omem.store(0, Ordering::Relaxed);
            }
            let reply = match flushed {
                true => wait_blocked(server, stats, stream, client, inbuf, limits, &w).await,
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
            flush_all(stream, &info, out).await;
            return None;
        }
        if info.is_killed() {
            return None;
        }
        // A hot shard's connection moves to the worker that serves that shard's hot
        // connections (shard number modulo the workers): a hot key's connections then run on
        // one worker instead of handing its lock and its data back and forth (see `Streak`).
        let can_move = W::MOVABLE && inbuf.is_empty() && !more && !out.stalled() && movable(client);
        if let Some(shard) = hot {
            let to = shard % server.threads.max(1);
            if can_move && to != me {
                return Some(Exit::Move(to, out.reply.clone()));
            }
        }
        // The workers' balance (`net::balance`): a connection whose batches keep to one
        // shard is the hot-shard rule's.
        let can_move = can_move && hot.is_none() && streak.batches < 2;
        let batch = balance::Batch {
            now: clock,
            commands,
            can_move,
        };
        if let Some(to) = balance::after_batch(&server.balance, &mut stamp, batch) {
            return Some(Exit::Move(to, out.reply.clone()));
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

/// Grows the input buffer when little room is left, to the size of the frame being read.
/// Once what a large request (or a long pipeline) grew it for is consumed, a small buffer
/// replaces it, as Redis shrinks its query buffer: an idle connection kept the largest
/// request it had sent (its capacity reads as the free part only, so CLIENT LIST did not
/// show it), a 2 MB SET two megabytes for as long as the connection lived.
fn reserve_input(c: &mut Conn) {
    let inbuf = &mut c.inbuf;
    if c.inbuf_grown && inbuf.is_empty() && c.parser.frame_hint().is_none() {
        *inbuf = BytesMut::with_capacity(READ_CHUNK);
        c.inbuf_grown = false;
    }
    if inbuf.capacity() - inbuf.len() < READ_CHUNK / 4 {
        crate::net::inbuf::make_room(inbuf, c.parser.big_arg_end());
        c.inbuf_grown |= inbuf.capacity() > 8 * READ_CHUNK;
    }
}

/// Waits for input, mail (messages, invalidations, MONITOR lines) or a kill, with nothing
/// pending for the socket. While it waits the connection's state is not borrowed: a busy
/// script's hook on this worker may serve the client meanwhile (`net::busy`), and then
/// wakes it (`Woke::Mail`: look at what it left).
async fn wait_input<W: Wire>(stream: &mut W, conn: &RefCell<Conn>, info: &ClientInfo) -> Woke {
    loop {
        // As the select below: a kill, then mail, before any input (mail that arrived
        // before the next command goes out before its reply).
        if info.is_killed() {
            return Woke::Closed;
        }
        if info.mail.has_mail() {
            return Woke::Mail;
        }
        {
            let mut g = conn.borrow_mut();
            let c = &mut *g;
            if std::mem::take(&mut c.served) {
                return Woke::Mail;
            }
            reserve_input(c);
            match stream.try_read_buf(&mut c.inbuf) {
                Ok(0) => return Woke::Closed,
                Ok(n) => return Woke::Input(n),
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(_) => return Woke::Closed,
            }
        }
        let served = std::future::poll_fn(|_| match conn.borrow().served {
            true => std::task::Poll::Ready(()),
            false => std::task::Poll::Pending,
        });
        tokio::select! {
            biased;
            _ = info.signalled() => {
                return if info.is_killed() {
                    Woke::Closed
                } else {
                    Woke::Mail
                };
            }
            _ = served => {}
            r = stream.readable() => {
                if r.is_err() {
                    return Woke::Closed;
                }
            }
        }
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
pub(super) fn written(client: &Client, out: &mut Output) {
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
