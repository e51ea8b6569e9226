//! Serving a worker's idle connections while a script on that worker is busy.
//!
//! A script runs inside its connection's turn on the worker thread: until it ends, the
//! worker's event loop does not run, so no other connection of the worker would be read.
//! Redis serves every client while a script is past `busy-reply-threshold`: it answers
//! -BUSY, and runs the few commands flagged allow-busy (SCRIPT KILL, FUNCTION KILL,
//! SHUTDOWN NOSAVE, MULTI, DISCARD, WATCH...). Here the script's periodic hook calls
//! [`serve_idle`] (`exec::script::set_while_busy`): every connection of this worker waiting
//! for input (its [`Conn`] is not borrowed by its task then, see `conn::wait_input`) is read
//! once, its complete commands run through `exec::execute` as usual, where admission
//! refuses all but the allowed ones before they touch a key or the Lua state, and the
//! replies are written. The script's own connection, and those waiting for anything else
//! (blocked, paused, writing, TLS sessions), are borrowed by their tasks or not registered:
//! they are served once the script ends, as before.

use crate::exec::{self, After, Call, Origin, Worker};
use crate::net::conn::{self, Conn, ConnLimits, Incoming, READ_CHUNK};
use crate::net::output;
use crate::net::wire::Wire;
use crate::server::Server;
use crate::services::stats::ThreadStats;
use crate::tick::Tick;
use bytes::BytesMut;
use std::cell::RefCell;
use std::collections::HashMap;
use std::future::Future;
use std::io;
use std::rc::{Rc, Weak};
use std::sync::Arc;
use std::task::Poll;
use tokio::sync::mpsc;

thread_local! {
    /// This worker's connections that may be served from a script's hook, by client id.
    static IDLE: RefCell<HashMap<u64, Weak<RefCell<Conn>>>> = RefCell::new(HashMap::new());
}

/// A connection's place in this worker's registry, for as long as it is served here.
pub(super) struct Registration(u64);

impl Registration {
    pub(super) fn new(conn: &Rc<RefCell<Conn>>) -> Registration {
        let id = conn.borrow().client.id;
        IDLE.with_borrow_mut(|m| m.insert(id, Rc::downgrade(conn)));
        Registration(id)
    }
}

/// This worker's queue of connections to serve, which a busy script's hook empties too:
/// Redis accepts clients while a script is busy.
struct Queue {
    rx: mpsc::UnboundedReceiver<Incoming>,
    server: Arc<Server>,
    stats: Arc<ThreadStats>,
    me: usize,
}

thread_local! {
    static QUEUE: RefCell<Option<Queue>> = const { RefCell::new(None) };
}

/// Gives this (worker) thread its queue, which [`next`] reads.
pub fn install(
    server: Arc<Server>,
    stats: Arc<ThreadStats>,
    rx: mpsc::UnboundedReceiver<Incoming>,
    me: usize,
) {
    QUEUE.set(Some(Queue {
        rx,
        server,
        stats,
        me,
    }));
}

/// The next item of this worker's queue; None once the queue is closed (or none was
/// installed).
pub async fn next() -> Option<Incoming> {
    std::future::poll_fn(|cx| {
        QUEUE.with_borrow_mut(|q| match q {
            Some(q) => q.rx.poll_recv(cx),
            None => Poll::Ready(None),
        })
    })
    .await
}

/// Takes what waits in this worker's queue, as the worker's loop does (`accept::start`): a
/// new connection is registered at once, so the round that follows serves it.
fn take_incoming() {
    loop {
        let next = QUEUE.with_borrow_mut(|q| {
            let q = q.as_mut()?;
            let incoming = q.rx.try_recv().ok()?;
            Some((incoming, q.server.clone(), q.stats.clone(), q.me))
        });
        let Some((incoming, server, stats, me)) = next else {
            return;
        };
        crate::net::accept::start(&server, &stats, incoming, me);
    }
}

impl Drop for Registration {
    fn drop(&mut self) {
        // try_with: the thread may be tearing its locals down.
        let _ = IDLE.try_with(|m| m.borrow_mut().remove(&self.0));
    }
}

/// Serves, once, each connection of this worker that waits for input. Called from a busy
/// script's hook on this thread, so no connection task runs meanwhile.
pub fn serve_idle(server: &Server, stats: &ThreadStats) {
    take_incoming();
    // Those borrowed are held by their tasks (the script's own connection, a blocked
    // one...).
    each_waiting(|c| serve_one(server, stats, c));
}

/// Calls `f` with each connection of this worker that waits for input (see
/// [`serve_idle`]), outside any script.
pub(super) fn each_waiting(mut f: impl FnMut(&mut Conn)) {
    let conns: Vec<Rc<RefCell<Conn>>> =
        IDLE.with_borrow(|m| m.values().filter_map(Weak::upgrade).collect());
    for conn in conns {
        if let Ok(mut c) = conn.try_borrow_mut() {
            f(&mut c);
        }
    }
}

fn serve_one(server: &Server, stats: &ThreadStats, c: &mut Conn) {
    let info = c.client.info.clone();
    // Left for its task: a client closing, or a command waiting for CLIENT PAUSE to end.
    if info.is_killed() || c.client.close_after_reply || c.resume.is_some() {
        return;
    }
    let mut socket = Socket(info.fd);
    let mut n = 0;
    // Bounded as its task bounds it: no more input past the query buffer limit, and none
    // while the client leaves as much output unread as its class may hold.
    let class = output::class(&c.client);
    if c.inbuf.len() < c.limits.query_buffer && c.out.pending(0) < c.limits.cap[class] {
        // The end of the stream (Ok(0)) and errors are the task's to find.
        if let Ok(k) = socket.try_read_buf(&mut c.inbuf) {
            n = k;
        }
    }
    if n == 0 {
        // Replies its task left for the end of a turn that the script holds up.
        if c.out.stalled() {
            push(c, &mut socket);
        }
        return;
    }
    let mut wk = Worker {
        server,
        stats,
        clock: Tick::now(),
    };
    info.touch(wk.clock);
    let fresh = c.out.buf.len();
    let mut after = After::default();
    loop {
        if c.limits.stale(server, &c.client) {
            c.limits = ConnLimits::load(server, &mut c.parser, c.client.authenticated);
        }
        match c.parser.parse(&mut c.inbuf) {
            Ok(Some(argv)) => {
                let call = Call::framed(&argv, c.parser.take_frame());
                let start = c.out.buf.len();
                let outcome = exec::execute(
                    &mut wk,
                    &mut c.client,
                    call,
                    Origin::Client,
                    &mut c.out.buf,
                    &mut after,
                );
                if let exec::Outcome::Paused = outcome {
                    // Its task waits for the pause, then runs it.
                    c.resume = Some(argv);
                    break;
                }
                // The commands that run while a script is busy leave nothing for the
                // connection to do but their own push messages (RESET, HELLO).
                if !after.self_push.is_empty() {
                    let push = std::mem::take(&mut after.self_push);
                    c.out.buf.splice(start..start, push);
                }
                after = After::default();
                if c.client.close_after_reply {
                    // QUIT, SHUTDOWN: what the client sent after is never run.
                    c.inbuf.clear();
                    break;
                }
            }
            Ok(None) => break,
            Err(e) => {
                c.out.buf.extend_from_slice(&e.reply_bytes());
                server.stats.count_error("ERR");
                c.client.close_after_reply = true;
                c.inbuf.clear();
                break;
            }
        }
    }
    stats.add_net(n, c.out.buf.len() - fresh);
    push(c, &mut socket);
    c.served = true;
    info.wake_task();
}

/// Writes what the socket takes now; the rest, an error and a close are left to the task.
fn push(c: &mut Conn, socket: &mut Socket) {
    if let Ok(true) = c.out.push(socket) {
        conn::written(&c.client, &mut c.out);
    }
}

/// A plain connection's socket, read and written directly by its descriptor while its task
/// is suspended (the task keeps the socket open, and tokio's readiness only ever tells it
/// to try: a read that finds nothing is harmless).
struct Socket(i32);

impl Wire for Socket {
    const MOVABLE: bool = false;

    fn readable(&self) -> impl Future<Output = io::Result<()>> {
        std::future::ready(Ok(()))
    }

    fn try_read_buf(&mut self, buf: &mut BytesMut) -> io::Result<usize> {
        let mut chunk = [0u8; READ_CHUNK];
        // SAFETY: a non-blocking recv into a buffer of the length given; the descriptor
        // is the open socket of a suspended connection task on this thread.
        let n = unsafe {
            libc::recv(
                self.0,
                chunk.as_mut_ptr().cast(),
                chunk.len(),
                libc::MSG_DONTWAIT,
            )
        };
        let n = usize::try_from(n).map_err(|_| io::Error::last_os_error())?;
        buf.extend_from_slice(&chunk[..n]);
        Ok(n)
    }

    fn writable(&self) -> impl Future<Output = io::Result<()>> {
        std::future::ready(Ok(()))
    }

    fn try_write(&mut self, buf: &[u8]) -> io::Result<usize> {
        // SAFETY: as in try_read_buf; MSG_NOSIGNAL: a closed peer is an error, not SIGPIPE.
        let n = unsafe {
            libc::send(
                self.0,
                buf.as_ptr().cast(),
                buf.len(),
                libc::MSG_DONTWAIT | libc::MSG_NOSIGNAL,
            )
        };
        usize::try_from(n).map_err(|_| io::Error::last_os_error())
    }
}
