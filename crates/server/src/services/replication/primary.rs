//! A replica's connection on this primary, from its SYNC or PSYNC on: a partial
//! resynchronization from the backlog (+CONTINUE), or a full one (+FULLRESYNC, the RDB of
//! a capture, see `fullsync`), then the stream, while its REPLCONF ACKs come back. The
//! connection is a plain socket or a TLS session (a replica with `tls-replication yes`
//! connecting to the TLS port).

use super::fullsync::{Piece, SyncRequest};
use super::{peer, Handoff, Peer};
use crate::exec::client::{kind, Client};
use crate::server::Server;
use bytes::{BufMut, BytesMut};
use std::io::Read as _;
use std::sync::atomic::{AtomicI64, AtomicU64, AtomicU8, Ordering};
use std::sync::Arc;
use std::time::Duration;
use strata_resp::{Limits, Parser};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};

/// Bytes of stream copied out of the backlog per write.
const SEND_CHUNK: usize = 256 * 1024;

/// Serves the replica that sent SYNC or PSYNC on this connection until it goes.
pub async fn serve_replica<S: AsyncRead + AsyncWrite + Unpin>(
    server: &Server,
    stream: &mut S,
    client: &mut Client,
    inbuf: BytesMut,
    h: Handoff,
) {
    let info = client.info.clone();
    info.kind.store(kind::REPLICA, Ordering::Relaxed);
    let ip = h.conf.ip_address.clone().unwrap_or_else(|| {
        info.addr
            .rsplit_once(':')
            .map_or(info.addr.clone(), |(ip, _)| {
                ip.trim_matches(['[', ']']).to_string()
            })
    });
    let peer = Arc::new(Peer {
        id: client.id,
        addr: ip,
        listening_port: h.conf.listening_port,
        info,
        state: AtomicU8::new(peer::WAIT_BGSAVE),
        ack_off: AtomicI64::new(0),
        ack_time: AtomicU64::new(Server::now_unix()),
        pre_psync: h.psync.is_none(),
        soft_since: AtomicU64::new(0),
    });
    let name = format!("{}:{}", peer.addr, peer.listening_port);
    tracing::info!("Replica {name} asks for synchronization");
    let mut link = Link {
        server,
        stream,
        peer: peer.clone(),
        inbuf,
        parser: Parser::new(Limits::default()),
    };
    let repl = &server.repl;
    let partial = h
        .psync
        .as_ref()
        .and_then(|(id, off)| partial_from(server, &name, id, *off));
    let next = match partial {
        Some(from) => {
            repl.backlog.pin(peer.id, from);
            repl.counters
                .sync_partial_ok
                .fetch_add(1, Ordering::Relaxed);
            peer.state.store(peer::ONLINE, Ordering::SeqCst);
            repl.add_peer(peer.clone());
            let reply = if h.conf.capa_psync2 {
                format!("+CONTINUE {}\r\n", repl.ids().replid)
            } else {
                "+CONTINUE\r\n".to_string()
            };
            let held = repl.backlog.end() + 1 - from;
            tracing::info!(
                "Partial resynchronization request from {name} accepted. Sending {held} bytes of backlog starting from offset {from}."
            );
            link.write(reply.as_bytes()).await.then_some((from, false))
        }
        None => {
            if h.psync.as_ref().is_some_and(|(id, _)| id != "?") {
                repl.counters
                    .sync_partial_err
                    .fetch_add(1, Ordering::Relaxed);
            }
            repl.counters.sync_full.fetch_add(1, Ordering::Relaxed);
            repl.add_peer(peer.clone());
            link.full_sync(&h, &name).await
        }
    };
    if let Some((from, wait_ack)) = next {
        repl.refresh_good(server);
        link.stream(from, wait_ack).await;
    }
    tracing::info!("Connection with replica {name} lost.");
    repl.backlog.unpin(peer.id);
    repl.remove_peer(peer.id);
    repl.refresh_good(server);
    repl.acks.notify_waiters();
}

/// Where a PSYNC for `replid` at `offset` resumes, if it can (Redis's
/// masterTryPartialResynchronization).
fn partial_from(server: &Server, name: &str, replid: &str, offset: i64) -> Option<u64> {
    let repl = &server.repl;
    let ids = repl.ids();
    let ours = replid.eq_ignore_ascii_case(&ids.replid);
    let former = replid.eq_ignore_ascii_case(&ids.replid2);
    if !ours && (!former || offset > ids.second_offset) {
        if replid == "?" {
            tracing::info!("Full resync requested by replica {name}");
        } else if !ours && !former {
            tracing::info!(
                "Partial resynchronization not accepted: Replication ID mismatch (Replica asked for '{replid}', my replication IDs are '{}' and '{}')",
                ids.replid,
                ids.replid2
            );
        } else {
            tracing::info!(
                "Partial resynchronization not accepted: Requested offset for second ID was {offset}, but I can reply up to {}",
                ids.second_offset
            );
        }
        return None;
    }
    let from = u64::try_from(offset).ok()?;
    if !repl.backlog.holds(from) {
        tracing::info!(
            "Unable to partial resync with replica {name} for lack of backlog (Replica request was: {offset})."
        );
        return None;
    }
    Some(from)
}

/// Whether a replica with `pending` bytes unread passed the replica class's output buffer
/// limits: `hard` at once, `soft` for `soft_secs` in a row (0: no limit).
pub fn over_limit(p: &Peer, pending: u64, hard: u64, soft: u64, soft_secs: u64) -> bool {
    if hard > 0 && pending >= hard {
        return true;
    }
    if soft > 0 && pending >= soft {
        let now = Server::now_unix();
        let since = p.soft_since.load(Ordering::Relaxed);
        if since == 0 {
            p.soft_since.store(now, Ordering::Relaxed);
            return soft_secs == 0;
        }
        return now.saturating_sub(since) >= soft_secs;
    }
    p.soft_since.store(0, Ordering::Relaxed);
    false
}

/// A replica's connection: a plain socket or a TLS session.
struct Link<'a, S> {
    server: &'a Server,
    stream: &'a mut S,
    peer: Arc<Peer>,
    inbuf: BytesMut,
    parser: Parser,
}

impl<S: AsyncRead + AsyncWrite + Unpin> Link<'_, S> {
    /// Writes `buf` whole (out of the TLS session's buffer too); false if the replica
    /// went (or was killed) meanwhile.
    async fn write(&mut self, buf: &[u8]) -> bool {
        let info = self.peer.info.clone();
        let stream = &mut *self.stream;
        let write = async move {
            stream.write_all(buf).await?;
            stream.flush().await
        };
        tokio::select! {
            biased;
            _ = info.killed() => false,
            r = write => r.is_ok(),
        }
    }

    /// A full sync: waits for a capture to take this replica, writes +FULLRESYNC and the
    /// RDB. Returns where the stream starts and whether it waits for the first ACK.
    async fn full_sync(&mut self, h: &Handoff, name: &str) -> Option<(u64, bool)> {
        let server = self.server;
        let (tx, mut rx) = tokio::sync::oneshot::channel();
        let arc = server.arc()?;
        server.repl.sync.request(
            &arc,
            SyncRequest {
                id: self.peer.id,
                eof: h.conf.capa_eof,
                filter: h.conf.rdb_filter,
                tx,
            },
        );
        let start = loop {
            tokio::select! {
                biased;
                r = &mut rx => break r.ok()?,
                alive = self.idle_second() => if !alive { return None },
            }
        };
        let start = match start {
            Ok(s) => s,
            Err(e) => {
                tracing::warn!("BGSAVE for replication failed: {e}");
                self.write(b"-ERR BGSAVE failed, replication can't continue\r\n")
                    .await;
                return None;
            }
        };
        if h.psync.is_some() {
            let line = format!("+FULLRESYNC {} {}\r\n", start.replid, start.offset);
            if !self.write(line.as_bytes()).await {
                return None;
            }
        }
        let mut rdb = start.rdb;
        let mut eof = false;
        loop {
            let piece = tokio::select! {
                biased;
                p = rdb.recv() => p,
                // Disk-based: newlines keep the replica waiting while the file is written.
                alive = self.idle_second(), if !eof => { if !alive { return None } continue }
            };
            match piece {
                Some(Piece::Bytes(b)) => {
                    eof = true;
                    if !self.write(&b).await {
                        return None;
                    }
                }
                Some(Piece::File(file, len)) => {
                    self.peer.state.store(peer::SEND_BULK, Ordering::SeqCst);
                    if !self.send_file(&file.0, len).await {
                        return None;
                    }
                }
                Some(Piece::Done) => break,
                None => return None,
            }
        }
        if h.conf.rdb_only {
            self.peer
                .state
                .store(peer::RDB_TRANSMITTED, Ordering::SeqCst);
            tracing::info!(
                "RDB transfer completed, rdb only replica ({name}) should be disconnected asap"
            );
            return None;
        }
        self.peer.state.store(peer::ONLINE, Ordering::SeqCst);
        self.peer
            .ack_time
            .store(Server::now_unix(), Ordering::Relaxed);
        tracing::info!("Synchronization with replica {name} succeeded");
        // After an RDB with an end mark, the stream waits for the replica's first ACK: it
        // must not follow the mark in the same read.
        Some((start.offset + 1, eof))
    }

    /// One second of waiting for the RDB: a newline to keep the replica's patience, and
    /// a look at its socket. False when the replica is gone.
    async fn idle_second(&mut self) -> bool {
        let info = self.peer.info.clone();
        tokio::select! {
            biased;
            _ = info.killed() => false,
            r = self.stream.read_buf(&mut self.inbuf) => matches!(r, Ok(n) if n > 0),
            _ = tokio::time::sleep(Duration::from_secs(1)) => self.write(b"\n").await,
        }
    }

    /// `$<len>` and the RDB file.
    async fn send_file(&mut self, path: &std::path::Path, len: u64) -> bool {
        if !self.write(format!("${len}\r\n").as_bytes()).await {
            return false;
        }
        let Ok(mut f) = std::fs::File::open(path) else {
            tracing::warn!(
                "cannot open the RDB file for the replica: {}",
                path.display()
            );
            return false;
        };
        let mut buf = vec![0u8; SEND_CHUNK];
        let mut left = len;
        while left > 0 {
            let want = buf.len().min(left as usize);
            let n = match f.read(&mut buf[..want]) {
                Ok(0) | Err(_) => {
                    tracing::warn!("Read error sending DB to replica: premature EOF");
                    return false;
                }
                Ok(n) => n,
            };
            if !self.write(&buf[..n]).await {
                return false;
            }
            left -= n as u64;
        }
        true
    }

    /// The stream from offset `from` on, and the ACKs coming back.
    async fn stream(&mut self, mut next: u64, mut wait_ack: bool) {
        let repl = &self.server.repl;
        let backlog = repl.backlog.clone();
        let info = self.peer.info.clone();
        let mut out = Vec::with_capacity(SEND_CHUNK);
        // ACKs that arrived with the PSYNC.
        if !self.inbuf.is_empty() {
            match self.acks() {
                None => return,
                Some(acked) => wait_ack &= !acked,
            }
        }
        loop {
            if !wait_ack {
                // The writes of this worker's turn go out in one send, as Redis writes to
                // its replicas once per event loop: a send per woken write cost the
                // primary and its replica a packet per client batch.
                crate::net::turn::end(crate::tick::Tick::now()).await;
                out.clear();
                match backlog.read(self.peer.id, next, SEND_CHUNK, &mut out) {
                    super::backlog::Read::Data(n) if n > 0 => {
                        if !self.write(&out).await {
                            return;
                        }
                        next += n as u64;
                        continue;
                    }
                    super::backlog::Read::Gone => {
                        tracing::warn!(
                            "replica {}:{} fell behind the replication backlog",
                            self.peer.addr,
                            self.peer.listening_port
                        );
                        return;
                    }
                    _ => {}
                }
            }
            if self.inbuf.capacity() - self.inbuf.len() < 1024 {
                self.inbuf.reserve(4096);
            }
            tokio::select! {
                biased;
                _ = info.killed() => return,
                r = self.stream.read_buf(&mut self.inbuf) => {
                    if !matches!(r, Ok(n) if n > 0) {
                        return;
                    }
                    match self.acks() {
                        None => return,
                        Some(acked) => wait_ack &= !acked,
                    }
                }
                _ = backlog.wait_beyond(next), if !wait_ack => {}
            }
        }
    }

    /// Handles what the replica sent: REPLCONF ACK <offset> (and FACK); everything else is
    /// ignored, as a replica has nothing else to ask. Whether an ACK came; None on a
    /// protocol error.
    fn acks(&mut self) -> Option<bool> {
        let repl = &self.server.repl;
        let mut acked = false;
        loop {
            match self.parser.parse(&mut self.inbuf) {
                Ok(Some(argv)) => {
                    let is =
                        |i: usize, w: &[u8]| argv.get(i).is_some_and(|a| a.eq_ignore_ascii_case(w));
                    if is(0, b"replconf") && is(1, b"ack") {
                        let off = argv
                            .get(2)
                            .and_then(|a| crate::exec::command::parse_i64(a))
                            .unwrap_or(0);
                        self.peer.ack_off.fetch_max(off, Ordering::SeqCst);
                        self.peer
                            .ack_time
                            .store(Server::now_unix(), Ordering::Relaxed);
                        repl.acks.notify_waiters();
                        acked = true;
                    }
                }
                Ok(None) => return Some(acked),
                Err(_) => return None,
            }
        }
    }
}

/// A reply the connection writes once `numreplicas` replicas acknowledged `offset`, or at
/// `deadline` with how many did (WAIT).
pub fn wait_for_acks(
    server: Arc<Server>,
    offset: u64,
    numreplicas: usize,
    deadline: Option<tokio::time::Instant>,
    proto: strata_resp::Protocol,
) -> crate::exec::LaterReply {
    Box::pin(async move {
        let repl = &server.repl;
        let acked = loop {
            let notified = repl.acks.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            let acked = repl.acked(offset);
            if acked >= numreplicas {
                break acked;
            }
            let sleep = async {
                match deadline {
                    Some(d) => tokio::time::sleep_until(d).await,
                    None => std::future::pending().await,
                }
            };
            tokio::select! {
                _ = notified => {}
                _ = sleep => break repl.acked(offset),
            }
        };
        let mut out = Vec::new();
        strata_resp::Reply::new(&mut out, proto).int(acked as i64);
        out
    })
}

/// `REPLCONF ACK <offset>` as a replica sends it.
pub fn ack_command(offset: i64) -> BytesMut {
    let mut b = BytesMut::with_capacity(48);
    let off = offset.to_string();
    b.put_slice(b"*3\r\n$8\r\nREPLCONF\r\n$3\r\nACK\r\n$");
    b.put_slice(off.len().to_string().as_bytes());
    b.put_slice(b"\r\n");
    b.put_slice(off.as_bytes());
    b.put_slice(b"\r\n");
    b
}
