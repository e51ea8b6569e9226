//! `unixsocket`: a listener on a Unix domain socket, beside the TCP ones or instead of
//! them (`port 0`), as Redis keeps it. The path is unlinked before it is bound (a file a
//! crashed server left behind) and after a clean exit, and given `unixsocketperm` when
//! that is set. Its clients are local (protected mode and the `enable-*` settings of
//! `local` admit them), show the path as their address and `U` among their CLIENT LIST
//! flags, and stay on the worker they were dealt to (`Wire::MOVABLE`).

use crate::exec::client::ClientInfo;
use crate::net::accept::register;
use crate::net::conn::Incoming;
use crate::net::listen::accept_loop;
use crate::server::Server;
use std::os::unix::fs::PermissionsExt;
use std::os::unix::net::{UnixListener, UnixStream};
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

/// Binds `unixsocket` if it is set, with `tcp-backlog` as Redis does. Err names the path.
pub fn bind(server: &Server) -> std::io::Result<Option<UnixListener>> {
    let config = server.config.get();
    let path = config.unixsocket.as_str();
    if path.is_empty() {
        return Ok(None);
    }
    let failed = |e: std::io::Error| {
        std::io::Error::new(e.kind(), format!("Failed opening Unix socket {path}: {e}"))
    };
    // Redis does not care whether this fails: a missing file is the usual case.
    let _ = std::fs::remove_file(path);
    let socket =
        socket2::Socket::new(socket2::Domain::UNIX, socket2::Type::STREAM, None).map_err(failed)?;
    socket
        .bind(&socket2::SockAddr::unix(path).map_err(failed)?)
        .map_err(failed)?;
    if config.unixsocketperm != 0 {
        let perm = std::fs::Permissions::from_mode(config.unixsocketperm);
        std::fs::set_permissions(path, perm).map_err(failed)?;
    }
    socket
        .listen(i32::try_from(config.tcp_backlog).unwrap_or(i32::MAX))
        .map_err(failed)?;
    Ok(Some(socket.into()))
}

/// Starts the accept thread of the socket `bind` opened.
pub(crate) fn serve(server: &Arc<Server>, socket: UnixListener) -> std::io::Result<()> {
    tracing::info!(
        "The server is now ready to accept connections at {}",
        server.config.get().unixsocket
    );
    let server = server.clone();
    // Never closed while the server runs (`unixsocket` cannot change): no stop flag.
    let stop = AtomicBool::new(false);
    std::thread::Builder::new()
        .name("strata-accept-unix".into())
        .spawn(move || {
            let accept = || socket.accept().map(|(s, _)| s);
            accept_loop(&server, accept, Incoming::NewUnix, false, &stop)
        })?;
    Ok(())
}

/// A connection just accepted on the socket, made non-blocking and registered with this
/// worker's event loop, with its client's entry; or the reason it is turned away.
pub(crate) fn open(
    server: &Server,
    stream: UnixStream,
) -> Option<(
    tokio::net::UnixStream,
    Arc<ClientInfo>,
    Option<&'static str>,
)> {
    stream.set_nonblocking(true).ok()?;
    let stream = tokio::net::UnixStream::from_std(stream).ok()?;
    // Redis's address for such a client: the socket's path and port 0, both ends.
    let addr = format!("{}:0", server.config.get().unixsocket);
    let fd = std::os::fd::AsRawFd::as_raw_fd(&stream);
    let (info, refusal) = register(server, true, |id| {
        let mut info = ClientInfo::new(id, addr.clone(), addr, fd);
        info.unix = true;
        info
    });
    Some((stream, info, refusal))
}

/// Removes the socket's file after a clean exit, as Redis does.
pub(crate) fn remove(server: &Server) {
    let path = server.config.get().unixsocket.clone();
    if !path.is_empty() {
        if let Err(e) = std::fs::remove_file(&path) {
            tracing::warn!("Error removing the unix socket file {path}: {e}");
        }
    }
}
