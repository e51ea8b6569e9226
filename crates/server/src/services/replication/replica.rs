//! This replica's link to its primary: a long-lived task on a worker thread, as a client
//! connection is. It connects, shakes hands as Redis's replicas do (PING, AUTH, REPLCONF
//! listening-port / ip-address / capa eof psync2), asks PSYNC to resume where it stopped
//! (or `?` for a full sync), receives and loads the RDB of a full sync, then applies the
//! primary's stream through `exec::execute` as `Origin::Master` (runs of one-key writes
//! through `lanes`), acknowledging it every second and when asked (REPLCONF GETACK). When
//! the link drops it comes back with PSYNC from the last applied offset. The connection,
//! plain or TLS, is `upstream`'s.

use super::backlog::{set_applying, take_applying};
use super::lanes::{self, apply_one, Run};
use super::upstream::{fail, Conn, LinkError};
use super::{link, role, Cached};
use crate::exec::client::{kind, Client, ClientInfo};
use crate::exec::Worker;
use crate::server::Server;
use crate::services::stats::ThreadStats;
use crate::tick::Tick;
use bytes::{Bytes, BytesMut};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;
use strata_resp::Parser;
use tokio::io::AsyncReadExt;

/// Starts the link for role `generation` on a worker thread.
pub fn spawn(server: &Arc<Server>, generation: u64) {
    let Some(queues) = server.workers.get() else {
        // Before the workers run: `net::start` calls `replication::start` once they do.
        return;
    };
    let worker = link_worker(server, generation);
    let task = crate::net::conn::Incoming::Task(Box::new(move |server, stats| {
        Box::pin(run(server, stats, generation))
    }));
    if let Some(q) = queues.get(worker) {
        let _ = q.send(task);
    }
}

/// The worker the link of role `generation` runs on.
fn link_worker(server: &Server, generation: u64) -> usize {
    let workers = server.workers.get().map_or(1, |q| q.len()).max(1);
    (generation as usize) % workers
}

fn current(server: &Server, generation: u64) -> bool {
    server.repl.generation() == generation
        && server.repl.is_replica()
        && !server.shutting_down.load(Ordering::SeqCst)
}

async fn run(server: Arc<Server>, stats: Arc<ThreadStats>, generation: u64) {
    let repl = &server.repl;
    // The link of the former role stops first and says where it was.
    let _running = repl.link_lock.lock().await;
    if !current(&server, generation) {
        return;
    }
    if repl.cache_from_self.load(Ordering::SeqCst) {
        // Writes that began while this server was a primary end first: our history is
        // then exactly what the backlog says.
        let s = server.clone();
        let _ = tokio::task::spawn_blocking(move || crate::net::workers::barrier(&s)).await;
        role::cache_own_history(&server);
    }
    while current(&server, generation) {
        let Some((host, port)) = repl.master_addr() else {
            break;
        };
        let was_up = match connect(&server, &stats, generation, &host, port).await {
            Ok(up) => up,
            Err(e) => {
                tracing::warn!("{e}");
                e.was_up
            }
        };
        if !current(&server, generation) {
            break;
        }
        repl.link.state.store(link::CONNECT, Ordering::SeqCst);
        if repl.link.down_since.load(Ordering::SeqCst) == 0 {
            repl.link
                .down_since
                .store(Server::now_unix(), Ordering::SeqCst);
        }
        // A link that was up comes back at once (its backlog may be recycled soon);
        // a failed attempt is retried a second later.
        if !was_up {
            for _ in 0..10 {
                tokio::time::sleep(Duration::from_millis(100)).await;
                if !current(&server, generation) {
                    return;
                }
            }
        }
        tracing::info!("Reconnecting to MASTER {host}:{port}");
    }
}

/// Under `appendfsync always`, an ACK waits until the journal holds every write applied
/// before it, as Redis writes its ACK only after its AOF fsync: a primary's WAIT then
/// counts this replica for writes that survive its `kill -9`.
async fn durable_before_ack(server: &Server) {
    let lsn = server.persist.last_lsn();
    if server.persist.must_wait(lsn) {
        server.persist.wait_durable(lsn).await;
    }
}

/// One attempt: connect, handshake, sync, then the stream until the link drops. Ok with
/// whether the stream was flowing when it ended (a change of role ends it quietly).
async fn connect(
    server: &Arc<Server>,
    stats: &Arc<ThreadStats>,
    generation: u64,
    host: &str,
    port: u16,
) -> Result<bool, LinkError> {
    let repl = &server.repl;
    let st = &repl.link;
    st.state.store(link::CONNECTING, Ordering::SeqCst);
    let timeout = Duration::from_secs(u64::from(server.config.get().repl_timeout.max(1)));
    let mut conn = Conn::open(server, host, port, timeout).await?;
    tracing::info!("MASTER <-> REPLICA sync started");
    st.state.store(link::HANDSHAKE, Ordering::SeqCst);
    handshake(server, &mut conn).await?;
    // A DEBUG SLEEP stands for a server asleep, whose link would not resume meanwhile
    // (checked after the handshake: a MULTI that kills the link then sleeps is asleep by
    // then).
    while server.debug.sleeping.load(Ordering::SeqCst) > 0 {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    if !current(server, generation) {
        return Ok(false);
    }
    let failover = repl.failover.psync_failover();
    let cached = repl.cached();
    let (id, off) = match &cached {
        Some(c) => {
            tracing::info!(
                "Trying a partial resynchronization (request {}:{}).",
                c.replid,
                c.offset + 1
            );
            (c.replid.clone(), (c.offset + 1).to_string())
        }
        None => {
            tracing::info!("Partial resynchronization not possible (no cached master)");
            ("?".to_string(), "-1".to_string())
        }
    };
    let mut psync: Vec<&[u8]> = vec![b"PSYNC", id.as_bytes(), off.as_bytes()];
    if failover {
        psync.push(b"FAILOVER");
    }
    conn.send(&psync).await?;
    let reply = conn.reply(server).await?;
    if failover {
        repl.failover.psync_answered(
            server,
            reply.starts_with("+FULLRESYNC") || reply.starts_with("+CONTINUE"),
        );
    }
    let start = if let Some(rest) = reply.strip_prefix("+FULLRESYNC") {
        let mut words = rest.split_whitespace();
        let (Some(id), Some(off)) = (words.next(), words.next()) else {
            return fail("Master replied with wrong +FULLRESYNC syntax.");
        };
        let Ok(off) = off.parse::<i64>() else {
            return fail("Master replied with wrong +FULLRESYNC syntax.");
        };
        if id.len() != 40 {
            return fail("Master replied with wrong +FULLRESYNC syntax.");
        }
        tracing::info!("Full resync from master: {id}:{off}");
        full_sync(server, generation, &mut conn, id, off).await?
    } else if let Some(rest) = reply.strip_prefix("+CONTINUE") {
        let Some(c) = cached else {
            return fail("Master accepted a partial resynchronization we did not ask for");
        };
        tracing::info!("Successful partial resynchronization with master.");
        let new = rest.trim();
        if new.len() == 40 && !new.eq_ignore_ascii_case(&c.replid) {
            role::primary_changed_id(server, new, c.offset);
        }
        if !repl.backlog.is_active() {
            role::synced(server, &repl.ids().replid, c.offset as u64, c.db as i64);
        }
        repl.attach_sink(server);
        tracing::info!("MASTER <-> REPLICA sync: Master accepted a Partial Resynchronization.");
        Start {
            offset: c.offset,
            db: c.db,
            pre_psync: false,
        }
    } else if reply.starts_with("-NOMASTERLINK") || reply.starts_with("-LOADING") {
        return fail(format!(
            "Master is currently unable to PSYNC but should be in the future: {reply}"
        ));
    } else {
        tracing::info!("Master does not support PSYNC or is in error state (reply: {reply})");
        tracing::info!("Retrying with SYNC...");
        conn.write(b"SYNC\r\n").await?;
        let replid = super::random_hex();
        full_sync(server, generation, &mut conn, &replid, -1).await?
    };
    repl.set_cached(None);
    follow(server, stats, generation, conn, start, (host, port)).await
}

/// PING, then AUTH, REPLCONF listening-port, ip-address and capa in one write, and their
/// replies in order.
async fn handshake(server: &Server, conn: &mut Conn) -> Result<(), LinkError> {
    conn.send(&[b"PING"]).await?;
    let pong = conn.reply(server).await?;
    if !pong.starts_with('+')
        && !pong.starts_with("-NOAUTH")
        && !pong.starts_with("-NOPERM")
        && !pong.starts_with("-ERR operation not permitted")
    {
        return fail(format!("Error reply to PING from master: '{pong}'"));
    }
    tracing::info!("Master replied to PING, replication can continue...");
    let c = server.config.get();
    let mut out = Vec::new();
    let auth = !c.masterauth.is_empty();
    if auth {
        let mut argv: Vec<&[u8]> = vec![b"AUTH"];
        if !c.masteruser.is_empty() {
            argv.push(c.masteruser.as_bytes());
        }
        argv.push(c.masterauth.as_bytes());
        crate::exec::effects::encode(&mut out, &argv);
    }
    // Where this replica's own clients connect: over TLS when its link is TLS.
    let port = if c.replica_announce_port != 0 {
        c.replica_announce_port
    } else if c.tls_replication && c.tls_port != 0 {
        c.tls_port
    } else {
        server.listeners.port().unwrap_or(c.port)
    };
    let port = port.to_string();
    crate::exec::effects::encode(
        &mut out,
        &[b"REPLCONF".as_slice(), b"listening-port", port.as_bytes()],
    );
    let ip = !c.replica_announce_ip.is_empty();
    if ip {
        crate::exec::effects::encode(
            &mut out,
            &[
                b"REPLCONF".as_slice(),
                b"ip-address",
                c.replica_announce_ip.as_bytes(),
            ],
        );
    }
    crate::exec::effects::encode(
        &mut out,
        &[b"REPLCONF".as_slice(), b"capa", b"eof", b"capa", b"psync2"],
    );
    drop(c);
    conn.write(&out).await?;
    if auth {
        let r = conn.reply(server).await?;
        if r.starts_with('-') {
            return fail(format!("Unable to AUTH to MASTER: {r}"));
        }
    }
    for what in ["listening-port", "ip-address", "capa"] {
        if what == "ip-address" && !ip {
            continue;
        }
        let r = conn.reply(server).await?;
        if r.starts_with('-') {
            tracing::info!("(Non critical) Master does not understand REPLCONF {what}: {r}");
        }
    }
    Ok(())
}

/// Where the stream starts once synchronized.
struct Start {
    offset: i64,
    db: usize,
    /// A primary without PSYNC: it takes no ACKs.
    pre_psync: bool,
}

/// Receives the RDB into a file, then loads it in place of the data set.
async fn full_sync(
    server: &Arc<Server>,
    generation: u64,
    conn: &mut Conn,
    replid: &str,
    offset: i64,
) -> Result<Start, LinkError> {
    let st = &server.repl.link;
    st.state.store(link::TRANSFER, Ordering::SeqCst);
    st.transfer_size.store(-1, Ordering::SeqCst);
    st.transfer_read.store(0, Ordering::SeqCst);
    let pre = conn.reply(server).await?;
    if let Some(e) = pre.strip_prefix('-') {
        return fail(format!("MASTER aborted replication with an error: {e}"));
    }
    let Some(len) = pre.strip_prefix('$') else {
        return fail(format!("Bad protocol from MASTER, the first byte is not '$' (we received '{pre}'), are you sure the host and port are right?"));
    };
    let mark = len
        .strip_prefix("EOF:")
        .filter(|m| m.len() >= 40)
        .map(|m| m.as_bytes()[..40].to_vec());
    let size = match &mark {
        Some(_) => None,
        None => match len.parse::<u64>() {
            Ok(n) => Some(n),
            Err(_) => return fail(format!("Bad protocol from MASTER: '{pre}'")),
        },
    };
    match size {
        Some(n) => {
            st.transfer_size.store(n as i64, Ordering::SeqCst);
            tracing::info!("MASTER <-> REPLICA sync: receiving {n} bytes from master to disk");
        }
        None => tracing::info!(
            "MASTER <-> REPLICA sync: receiving streamed RDB from master with EOF to disk"
        ),
    }
    let file = super::fullsync::TempFile(server.data_dir().join(format!(
        "temp-{}.{}.rdb",
        Server::now_unix(),
        std::process::id()
    )));
    download(server, conn, &file.0, size, mark.as_deref()).await?;
    if !current(server, generation) {
        return fail("the role changed during the sync with the master");
    }
    // Our replicas must sync again from the data that replaces ours.
    server.repl.disconnect_replicas();
    server.repl.backlog.free();
    tracing::info!("MASTER <-> REPLICA sync: Flushing old data");
    tracing::info!("MASTER <-> REPLICA sync: Loading DB in memory");
    let (tx, rx) = tokio::sync::oneshot::channel();
    let (s, path) = (server.clone(), file.0.clone());
    let spawned = std::thread::Builder::new()
        .name("strata-repl-load".into())
        .spawn(move || {
            let _ = tx.send(super::load::load(&s, &path));
        });
    if let Err(e) = spawned {
        return fail(format!("cannot start loading the RDB: {e}"));
    }
    let db = match rx.await {
        Ok(Ok(db)) => db,
        Ok(Err(e)) => {
            return fail(format!(
                "Failed trying to load the MASTER synchronization DB from disk: {e}"
            ))
        }
        Err(_) => return fail("loading the MASTER synchronization DB stopped"),
    };
    drop(file);
    if !current(server, generation) {
        return fail("the role changed while loading the master's data");
    }
    let base = offset.max(0) as u64;
    role::synced(server, replid, base, db as i64);
    crate::services::replication::load::rewrite_after_sync(server);
    tracing::info!("MASTER <-> REPLICA sync: Finished with success");
    Ok(Start {
        offset,
        db,
        pre_psync: offset < 0,
    })
}

/// Receives the RDB: `size` bytes, or up to the end mark.
async fn download(
    server: &Server,
    conn: &mut Conn,
    path: &std::path::Path,
    size: Option<u64>,
    mark: Option<&[u8]>,
) -> Result<(), LinkError> {
    use std::io::Write;
    let st = &server.repl.link;
    let mut f = match std::fs::File::create(path) {
        Ok(f) => f,
        Err(e) => {
            return fail(format!(
                "Opening the temp file needed for MASTER <-> REPLICA synchronization: {e}"
            ))
        }
    };
    let mut read = 0u64;
    let mut tail: Vec<u8> = Vec::with_capacity(80);
    loop {
        if !conn.buf.is_empty() {
            let take = match size {
                Some(n) => ((n - read) as usize).min(conn.buf.len()),
                None => conn.buf.len(),
            };
            let chunk = conn.buf.split_to(take);
            if let Err(e) = f.write_all(&chunk) {
                return fail(format!("Write error or short write writing to the DB dump file needed for MASTER <-> REPLICA synchronization: {e}"));
            }
            read += take as u64;
            if mark.is_some() {
                tail.extend_from_slice(&chunk[chunk.len().saturating_sub(40)..]);
                let cut = tail.len().saturating_sub(40);
                tail.drain(..cut);
            }
            st.transfer_read.store(read, Ordering::Relaxed);
            st.transfer_last_io
                .store(Server::now_unix(), Ordering::Relaxed);
        }
        let done = match (size, mark) {
            (Some(n), _) => read >= n,
            (None, Some(m)) => tail == m,
            (None, None) => false,
        };
        if done {
            break;
        }
        if !conn.fill().await? {
            return fail("I/O error trying to sync with MASTER: connection lost");
        }
    }
    if mark.is_some() {
        let keep = read.saturating_sub(40);
        if let Err(e) = f.set_len(keep) {
            return fail(format!(
                "Error truncating the RDB file received from the master for SYNC: {e}"
            ));
        }
    }
    Ok(())
}

/// The stream: applies the primary's commands as they come, acknowledges them.
async fn follow(
    server: &Arc<Server>,
    stats: &Arc<ThreadStats>,
    generation: u64,
    mut conn: Conn,
    start: Start,
    (host, port): (&str, u16),
) -> Result<bool, LinkError> {
    let repl = &server.repl;
    let st = &repl.link;
    st.reploff.store(start.offset, Ordering::SeqCst);
    st.read_reploff.store(start.offset, Ordering::SeqCst);
    st.state.store(link::CONNECTED, Ordering::SeqCst);
    st.down_since.store(0, Ordering::SeqCst);
    st.last_io.store(Server::now_unix(), Ordering::Relaxed);
    let info = Arc::new(ClientInfo::new(
        server.clients.next_id(),
        format!("{host}:{port}"),
        conn.local.clone(),
        conn.fd,
    ));
    info.kind.store(kind::MASTER, Ordering::Relaxed);
    server.clients.add(info.clone());
    *repl.link_client.lock() = Some(info.clone());
    if !current(server, generation) {
        // A change of role came before the link was registered to be stopped.
        info.kill();
    }
    // The primary's stream is applied without a user: no ACL rule applies to it.
    let mut client = lanes::master_client(info.clone());
    client.set_db(start.db.min(server.keyspace.db_count().saturating_sub(1)));
    let mut apply = Apply {
        parser: lanes::stream_parser(),
        pending: BytesMut::new(),
        reploff: start.offset,
        client,
        acks: Vec::new(),
        generation,
        run: Run::default(),
        link_worker: link_worker(server, generation),
        out: Vec::new(),
    };
    if start.pre_psync {
        tracing::info!("the master does not support PSYNC: no offsets are acknowledged");
    } else {
        // After a full sync the primary waits for this first ACK to start the stream.
        let ack = super::primary::ack_command(apply.reploff);
        if conn.put(&ack).await.is_err() {
            server.clients.remove(info.id);
            return fail("Connection with master lost.");
        }
    }
    let timeout = u64::from(server.config.get().repl_timeout);
    let mut tick = tokio::time::interval(Duration::from_secs(1));
    tick.tick().await;
    let result = loop {
        let r = apply.run(server, stats, &mut conn.buf).await;
        if !apply.acks.is_empty() {
            let acks = std::mem::take(&mut apply.acks);
            durable_before_ack(server).await;
            if conn.put(&acks).await.is_err() {
                break Err("Connection with master lost.".to_string());
            }
        }
        if let Err(e) = r {
            break Err(e);
        }
        if conn.buf.capacity() - conn.buf.len() < 16 * 1024 {
            conn.buf.reserve(64 * 1024);
        }
        tokio::select! {
            biased;
            _ = info.killed() => {
                if !current(server, generation) {
                    break Ok(());
                }
                break Err("Connection with master lost (killed).".to_string());
            }
            r = conn.stream.read_buf(&mut conn.buf) => match r {
                Ok(n) if n > 0 => {
                    st.read_reploff.fetch_add(n as i64, Ordering::Relaxed);
                    st.last_io.store(Server::now_unix(), Ordering::Relaxed);
                }
                _ => break Err("Connection with master lost.".to_string()),
            },
            _ = tick.tick() => {
                if !current(server, generation) {
                    break Ok(());
                }
                let idle = Server::now_unix().saturating_sub(st.last_io.load(Ordering::Relaxed));
                if idle > timeout {
                    break Err("MASTER timeout: no data nor PING received...".to_string());
                }
                if !start.pre_psync {
                    let ack = super::primary::ack_command(apply.reploff);
                    durable_before_ack(server).await;
                    if conn.put(&ack).await.is_err() {
                        break Err("Connection with master lost.".to_string());
                    }
                }
            }
        }
    };
    server.clients.remove(info.id);
    *repl.link_client.lock() = None;
    // Still a replica (of this primary, or of another one REPLICAOF named): what was
    // applied is where the next PSYNC resumes.
    if repl.is_replica() && !start.pre_psync {
        tracing::info!("Caching the disconnected master state.");
        repl.set_cached(Some(Cached {
            replid: repl.ids().replid,
            offset: apply.reploff,
            db: apply.client.db,
        }));
    }
    st.read_reploff.store(apply.reploff, Ordering::SeqCst);
    result
        .map(|()| true)
        .map_err(|text| LinkError { text, was_up: true })
}

/// Applying the stream: the parser, the bytes of an open MULTI, the offset applied.
struct Apply {
    parser: Parser,
    pending: BytesMut,
    reploff: i64,
    client: Client,
    /// ACKs to write (REPLCONF GETACK).
    acks: Vec<u8>,
    /// The role this link serves.
    generation: u64,
    /// Writes of one key each, collected into a run (`lanes`).
    run: Run,
    /// The worker this link runs on (lane 0's).
    link_worker: usize,
    /// Replies, which go nowhere.
    out: Vec<u8>,
}

impl Apply {
    /// Runs every complete command in `buf`.
    async fn run(
        &mut self,
        server: &Arc<Server>,
        stats: &ThreadStats,
        buf: &mut BytesMut,
    ) -> Result<(), String> {
        let repl = &server.repl;
        let mut w = Worker {
            server,
            stats,
            clock: Tick::now(),
        };
        loop {
            if repl.generation() != self.generation {
                // A change of role: what follows is not applied.
                self.apply_run(server, &mut w).await;
                return Ok(());
            }
            let before = buf.len();
            let argv = match self.parser.parse(buf) {
                Ok(Some(argv)) => argv,
                Ok(None) => {
                    self.apply_run(server, &mut w).await;
                    return Ok(());
                }
                Err(e) => {
                    self.apply_run(server, &mut w).await;
                    return Err(format!(
                        "Protocol error from MASTER: {}",
                        String::from_utf8_lossy(&e.reply_bytes())
                    ));
                }
            };
            let consumed = before - buf.len();
            let frame = self.parser.take_frame();
            let raw = raw_bytes(&argv, frame.as_ref(), consumed);
            let in_multi = self.client.multi.is_some();
            let (argv, frame) = if in_multi {
                (argv, frame)
            } else {
                match self.run.take(server, argv, frame, &raw) {
                    Ok(()) => {
                        if self.run.is_full() {
                            self.apply_run(server, &mut w).await;
                        }
                        continue;
                    }
                    Err(back) => back,
                }
            };
            // Anything but a write of one key: what the run holds comes first.
            self.apply_run(server, &mut w).await;
            let is =
                |i: usize, name: &[u8]| argv.get(i).is_some_and(|a| a.eq_ignore_ascii_case(name));
            if is(0, b"replconf") && is(1, b"getack") {
                // Acknowledges what came before it, as Redis does.
                self.acks
                    .extend_from_slice(&super::primary::ack_command(self.reploff));
            }
            let ends_multi = is(0, b"exec") || is(0, b"discard");
            if in_multi && !ends_multi {
                // Queued: nothing is applied until EXEC.
                self.pending.extend_from_slice(&raw);
                apply_one(&mut w, &mut self.client, &argv, frame, &mut self.out);
                continue;
            }
            let whole: Bytes = if self.pending.is_empty() {
                raw
            } else {
                self.pending.extend_from_slice(&raw);
                self.pending.split().freeze()
            };
            let len = whole.len() as i64;
            set_applying(whole);
            apply_one(&mut w, &mut self.client, &argv, frame, &mut self.out);
            let left = take_applying();
            if self.client.multi.is_some() {
                // MULTI itself: its bytes wait for the EXEC.
                if let Some(l) = left {
                    self.pending.extend_from_slice(&l);
                }
                continue;
            }
            if let Some(l) = left {
                repl.backlog.feed(&l);
            }
            self.advance(server, len);
        }
    }

    /// Applies the run collected so far, then records its bytes in the backlog and the
    /// offset, all under the apply gate.
    async fn apply_run(&mut self, server: &Arc<Server>, w: &mut Worker<'_>) {
        if self.run.is_empty() {
            return;
        }
        let _gate = server.repl.apply_gate.lock().await;
        let bytes = self
            .run
            .apply(server, w, &mut self.client, self.link_worker)
            .await;
        server.repl.backlog.feed(&bytes);
        self.advance(server, bytes.len() as i64);
    }

    fn advance(&mut self, server: &Server, len: i64) {
        self.reploff += len;
        server
            .repl
            .link
            .reploff
            .store(self.reploff, Ordering::SeqCst);
    }
}

/// The bytes a command took in the primary's stream: its frame when it was canonical
/// RESP (Redis's always is), preceded by the newlines skipped before it. A command in
/// another form is counted by its canonical encoding, padded to the bytes it took.
fn raw_bytes(argv: &[Bytes], frame: Option<&Bytes>, consumed: usize) -> Bytes {
    match frame {
        Some(f) if f.len() == consumed => f.clone(),
        _ => {
            let mut v = Vec::with_capacity(consumed);
            let mut enc = Vec::new();
            match frame {
                Some(f) => enc.extend_from_slice(f),
                None => crate::exec::effects::encode(&mut enc, argv),
            }
            v.resize(consumed.saturating_sub(enc.len()), b'\n');
            v.extend_from_slice(&enc);
            if v.len() != consumed {
                tracing::warn!("a command of the primary's stream was not in canonical RESP");
            }
            Bytes::from(v)
        }
    }
}
