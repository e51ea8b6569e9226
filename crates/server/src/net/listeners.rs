//! The listening sockets in use, each with its accept thread, and changing them at run
//! time when CONFIG SET changes `bind`, `port` or `tls-port`, as Redis 7.0 does.
//!
//! A change binds what is new before closing what is no longer wanted, so a failure leaves
//! the server listening where it was (CONFIG SET then puts the old values back). Addresses
//! the old and new settings share keep their socket. When a new address cannot be bound
//! while an old one is open (a wildcard overlapping a specific address on the same port),
//! the old ones are closed first and, if the new ones still do not bind, opened again.

use crate::net::conn::Incoming;
use crate::net::listen::{accept_loop, bind_each, wanted, Listener};
use crate::server::Server;
use parking_lot::Mutex;
use std::net::{Shutdown, SocketAddr, TcpListener};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;

/// The open listeners.
#[derive(Default)]
pub struct Listeners {
    open: Mutex<Vec<Open>>,
    /// The plain port the OS picked at start (`port 0`), which `port 0` keeps meaning.
    chosen: Mutex<Option<u16>>,
    /// The Unix socket bound at start, until `serve` starts accepting on it.
    unix: Mutex<Option<std::os::unix::net::UnixListener>>,
}

/// A listener with its accept thread.
struct Open {
    addr: SocketAddr,
    tls: bool,
    socket: Arc<TcpListener>,
    /// Tells the accept thread that a failed accept means "closed": stop.
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl Listeners {
    /// Starts an accept thread for each listener bound at start (the workers must exist).
    pub fn serve(&self, server: &Arc<Server>, listeners: Vec<Listener>) -> std::io::Result<()> {
        let mut open = self.open.lock();
        if server.config.get().port == 0 {
            *self.chosen.lock() = listeners.iter().find(|l| !l.tls).map(|l| l.addr.port());
        }
        for l in listeners {
            open.push(spawn(server, l)?);
        }
        if let Some(unix) = self.unix.lock().take() {
            crate::net::unix::serve(server, unix)?;
        }
        Ok(())
    }

    /// Keeps the Unix socket bound at start for `serve`.
    pub fn set_unix(&self, socket: std::os::unix::net::UnixListener) {
        *self.unix.lock() = Some(socket);
    }

    /// The addresses listened on, plain ones first.
    pub fn addrs(&self) -> Vec<SocketAddr> {
        self.open.lock().iter().map(|o| o.addr).collect()
    }

    /// The port clients connect to: the plain listeners', else the TLS ones' (INFO
    /// `tcp_port`, the port a replica announces).
    pub fn port(&self) -> Option<u16> {
        let open = self.open.lock();
        open.iter()
            .find(|o| !o.tls)
            .or_else(|| open.first())
            .map(|o| o.addr.port())
    }
}

/// Makes the listeners match the current `bind`, `port` and `tls-port`. Port 0 is the
/// port the OS chose at start when it chose one (Strata's "any free port"), else no plain
/// listener, as in Redis. Err (logged) leaves the listeners as they were.
pub fn rebind(server: &Arc<Server>) -> std::io::Result<()> {
    let mut open = server.listeners.open.lock();
    let chosen = *server.listeners.chosen.lock();
    let wanted = wanted(&server.config.get(), chosen);
    // What is wanted and already open stays; the rest of `wanted` is bound anew.
    let mut keep = Vec::new();
    let mut drop_old = Vec::new();
    for o in open.drain(..) {
        let still = wanted
            .iter()
            .any(|w| w.tls == o.tls && w.resolved() == Some(o.addr));
        if still {
            keep.push(o);
        } else {
            drop_old.push(o);
        }
    }
    let kept: Vec<(SocketAddr, bool)> = keep.iter().map(|o| (o.addr, o.tls)).collect();
    let new: Vec<_> = wanted
        .into_iter()
        .filter(|w| !w.resolved().is_some_and(|a| kept.contains(&(a, w.tls))))
        .collect();
    // An old socket may hold the port a new address needs (0.0.0.0 and 127.0.0.1 on one
    // port cannot both listen).
    let shares_port = drop_old.iter().any(|o| {
        new.iter()
            .any(|w| w.resolved().map(|a| a.port()) == Some(o.addr.port()))
    });
    // The Unix socket counts as a listener kept: with it, no TCP listener is fine.
    let already = kept.len() + usize::from(!server.config.get().unixsocket.is_empty());
    let bound = match bind_each(&new, server.config.get().tcp_backlog, already) {
        Ok(b) => b,
        Err(first) if shares_port => {
            // Retry without the old sockets, and open them again if that fails too.
            let old: Vec<_> = drop_old.iter().map(|o| (o.addr, o.tls)).collect();
            drop_old.drain(..).for_each(close);
            match bind_each(&new, server.config.get().tcp_backlog, already) {
                Ok(b) => b,
                Err(_) => {
                    reopen(server, &mut keep, &old);
                    *open = keep;
                    tracing::warn!("failed to bind: {first}");
                    return Err(first);
                }
            }
        }
        Err(e) => {
            *open = keep;
            tracing::warn!("failed to bind: {e}");
            return Err(e);
        }
    };
    drop_old.into_iter().for_each(close);
    for l in bound {
        tracing::info!(
            "Listening on {}{}",
            l.addr,
            if l.tls { " (tls)" } else { "" }
        );
        match spawn(server, l) {
            Ok(o) => keep.push(o),
            Err(e) => tracing::warn!("could not start an accept thread: {e}"),
        }
    }
    // Plain listeners first, as at start.
    keep.sort_by_key(|o| o.tls);
    *open = keep;
    Ok(())
}

/// Binds the addresses that were just closed again (a change that failed after closing
/// them), each on its own: one that no longer binds is logged and left out.
fn reopen(server: &Arc<Server>, keep: &mut Vec<Open>, old: &[(SocketAddr, bool)]) {
    let backlog = server.config.get().tcp_backlog;
    for &(addr, tls) in old {
        let l = crate::net::listen::listen_on(&addr.to_string(), backlog).map(|socket| Listener {
            socket,
            tls,
            addr,
        });
        match l.and_then(|l| spawn(server, l)) {
            Ok(o) => keep.push(o),
            Err(e) => tracing::warn!("could not listen on {addr} again: {e}"),
        }
    }
    keep.sort_by_key(|o| o.tls);
}

/// Starts `l`'s accept thread.
fn spawn(server: &Arc<Server>, l: Listener) -> std::io::Result<Open> {
    let socket = Arc::new(l.socket);
    let stop = Arc::new(AtomicBool::new(false));
    let thread = {
        let (server, socket, stop, tls) = (server.clone(), socket.clone(), stop.clone(), l.tls);
        std::thread::Builder::new()
            .name("strata-accept".into())
            .spawn(move || {
                let incoming = match tls {
                    false => Incoming::New,
                    true => Incoming::NewTls,
                };
                accept_loop(
                    &server,
                    || socket.accept().map(|(s, _)| s),
                    incoming,
                    !tls,
                    &stop,
                )
            })?
    };
    Ok(Open {
        addr: l.addr,
        tls: l.tls,
        socket,
        stop,
        thread: Some(thread),
    })
}

/// Stops a listener: shutting a listening socket down wakes the accept blocked on it (an
/// error, which the flag tells the loop to take as the end), and refuses new connections
/// at once; the socket closes when the thread has let it go.
fn close(mut o: Open) {
    o.stop.store(true, Ordering::SeqCst);
    let _ = socket2::SockRef::from(&*o.socket).shutdown(Shutdown::Both);
    if let Some(t) = o.thread.take() {
        let _ = t.join();
    }
    tracing::info!("Closed the listener on {}", o.addr);
}
