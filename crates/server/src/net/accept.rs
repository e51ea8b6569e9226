//! A connection's start and end on a worker: what the worker's queue brings is set up
//! (a plain socket at once, see `start`; a TLS session after its handshake), a turned-away
//! client is told why, and a connection that stops being served here is handed to another
//! worker, to the replication code, or closed. Serving it is `conn.rs`.

use crate::exec::client::{Client, ClientInfo};
use crate::net::busy::Registration;
use crate::net::clients;
use crate::net::conn::{new_conn, serve_client, Conn, Exit, Incoming, Moved};
use crate::net::output::{flush_all, Output};
use crate::net::replybuf::ReplyBuf;
use crate::net::wire::Wire;
use crate::server::Server;
use crate::services::stats::ThreadStats;
use std::cell::RefCell;
use std::rc::Rc;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use tokio::net::TcpStream;

/// Starts serving what a worker's queue brought: a plain connection is set up and
/// registered for `net::busy` at once (so a script that gets busy before its task first
/// runs still serves it); anything else becomes a task of its own.
pub(crate) fn start(server: &Arc<Server>, stats: &Arc<ThreadStats>, incoming: Incoming, me: usize) {
    let (stream, client, reply) = match incoming {
        Incoming::New(stream) => {
            let Some((mut stream, info, refusal)) = open(server, stream) else {
                return;
            };
            if let Some(why) = refusal {
                let server = server.clone();
                tokio::task::spawn_local(async move {
                    refuse(&server, &mut stream, &info, why).await;
                });
                return;
            }
            let client = new_client(server, info);
            (stream, client, ReplyBuf::new())
        }
        Incoming::Moved(m) => {
            let Moved {
                stream,
                client,
                reply,
            } = *m;
            match TcpStream::from_std(stream) {
                Ok(stream) => (stream, client, reply),
                Err(_) => {
                    finish_client(server, client);
                    return;
                }
            }
        }
        Incoming::NewUnix(stream) => {
            let Some((stream, info, refusal)) = crate::net::unix::open(server, stream) else {
                return;
            };
            let serving = serve_pinned(server.clone(), stats.clone(), stream, info, refusal, me);
            tokio::task::spawn_local(serving);
            return;
        }
        other => {
            tokio::task::spawn_local(serve(server.clone(), stats.clone(), other, me));
            return;
        }
    };
    let conn = new_conn(server, client, reply);
    let idle = Registration::new(&conn);
    tokio::task::spawn_local(serve_plain(
        server.clone(),
        stats.clone(),
        stream,
        conn,
        idle,
        me,
    ));
}

/// Serves what `start` does not set up itself: a TLS connection (its handshake first), a
/// barrier, a task.
async fn serve(server: Arc<Server>, stats: Arc<ThreadStats>, incoming: Incoming, me: usize) {
    let stream = match incoming {
        Incoming::NewTls(stream) => stream,
        Incoming::Barrier(passed) => {
            let _ = passed.send(());
            return;
        }
        Incoming::Task(task) => return task(server, stats).await,
        // Set up by `start`.
        Incoming::New(_) | Incoming::NewUnix(_) | Incoming::Moved(_) => return,
    };
    let Some((stream, info, refusal)) = open(&server, stream) else {
        return;
    };
    let Some(wire) = crate::net::tls::accept(&server, stream, &info).await else {
        server.clients.remove(info.id);
        return;
    };
    serve_pinned(server, stats, wire, info, refusal, me).await
}

/// Serves a connection that stays on this worker (a TLS session, a Unix socket) until it
/// closes, or turns it away. It may become a replica's. A Unix socket is read and written
/// by its descriptor while a busy script serves the idle ones (`net::busy`); a TLS
/// session's state is not reachable that way.
async fn serve_pinned<W: Wire + tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin>(
    server: Arc<Server>,
    stats: Arc<ThreadStats>,
    mut wire: W,
    info: Arc<ClientInfo>,
    refusal: Option<&'static str>,
    me: usize,
) {
    if let Some(refusal) = refusal {
        return refuse(&server, &mut wire, &info, refusal).await;
    }
    let busy_serves = info.unix;
    let conn = new_conn(&server, new_client(&server, info), ReplyBuf::new());
    let idle = busy_serves.then(|| Registration::new(&conn));
    let (mut client, exit) = serve_client(&server, &stats, &mut wire, conn, idle, me).await;
    if let Some(Exit::Replica(h, inbuf)) = exit {
        crate::services::replication::primary::serve_replica(
            &server,
            &mut wire,
            &mut client,
            inbuf,
            *h,
        )
        .await;
    }
    wire.close();
    finish_client(&server, client);
}

/// A socket just accepted, made non-blocking and registered with this worker's event
/// loop, with its client's entry in the registry; or the reason it is turned away (then it
/// has no client id and is not listed).
pub(super) fn open(
    server: &Server,
    stream: std::net::TcpStream,
) -> Option<(TcpStream, Arc<ClientInfo>, Option<&'static str>)> {
    let (peer, local) = match (stream.peer_addr(), stream.local_addr()) {
        (Ok(p), Ok(l)) => (p, l),
        _ => return None,
    };
    let _ = stream.set_nodelay(true);
    keepalive(&stream, server.config.get().tcp_keepalive);
    stream.set_nonblocking(true).ok()?;
    let stream = TcpStream::from_std(stream).ok()?;
    let fd = std::os::fd::AsRawFd::as_raw_fd(&stream);
    let loopback = peer.ip().is_loopback();
    let (info, refusal) = register(server, loopback, |id| {
        ClientInfo::new(id, peer.to_string(), local.to_string(), fd)
    });
    Some((stream, info, refusal))
}

/// A new connection's client entry (`info` builds it from its id), listed in the registry
/// unless the connection is turned away (maxclients, protected mode: then its id is 0).
pub(crate) fn register(
    server: &Server,
    local: bool,
    info: impl FnOnce(u64) -> ClientInfo,
) -> (Arc<ClientInfo>, Option<&'static str>) {
    let nopass = server.acl.default_user().rules().nopass;
    let connected = server.clients.connected();
    let refusal = crate::net::listen::refuse(&server.config, nopass, connected, local);
    let id = match refusal {
        None => server.clients.next_id(),
        Some(_) => 0,
    };
    let info = Arc::new(info(id));
    if refusal.is_none() {
        server.clients.add(info.clone());
    }
    (info, refusal)
}

/// `tcp-keepalive` (seconds; 0: off), as Redis's anetKeepAlive sets it: probes once the
/// connection has been idle that long, then every third of it, and three unanswered close
/// it, so a client whose host vanished (crashed, cut off) does not hold its connection
/// and its memory forever.
fn keepalive(stream: &std::net::TcpStream, secs: u32) {
    if secs == 0 {
        return;
    }
    let every = |s: u32| std::time::Duration::from_secs(u64::from(s.max(1)));
    let probes = socket2::TcpKeepalive::new()
        .with_time(every(secs))
        .with_interval(every(secs / 3))
        .with_retries(3);
    if let Err(e) = socket2::SockRef::from(stream).set_tcp_keepalive(&probes) {
        tracing::debug!("tcp-keepalive on an accepted socket: {e}");
    }
}

/// A new connection's client: authenticated at once when the default user is on and
/// needs no password.
pub(super) fn new_client(server: &Server, info: Arc<ClientInfo>) -> Client {
    let authenticated = !server.acl.auth_required();
    Client::new(info, Some(server.acl.default_user().clone()), authenticated)
}

/// Serves a plain connection (set up by `open` and `new_conn`) until it closes, moves to
/// another worker or becomes a replica's. While it waits for input, a busy script on this
/// worker may serve it (`net::busy`).
async fn serve_plain(
    server: Arc<Server>,
    stats: Arc<ThreadStats>,
    mut stream: TcpStream,
    conn: Rc<RefCell<Conn>>,
    idle: Registration,
    me: usize,
) {
    let (client, exit) = serve_client(&server, &stats, &mut stream, conn, Some(idle), me).await;
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
    let (to, reply) = match exit {
        None => return finish_client(server, client),
        Some(Exit::Move(to, reply)) => (to, reply),
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
            if let Err(e) = q.send(Incoming::Moved(Box::new(Moved {
                stream,
                client,
                reply,
            }))) {
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
