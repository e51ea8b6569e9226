//! TLS: the server's side for connections on `tls-port`, and the client side for the
//! replication link (`connect`) and MIGRATE (`client_side`), all from the `tls-*`
//! directives.
//!
//! rustls does the protocol; `stream::TlsStream` drives it over the connection's own
//! non-blocking socket, so a TLS connection runs the same connection code as a plain one
//! (`net::wire`), and plain connections run exactly the code they ran before TLS existed.
//! The configurations are rebuilt whole when a `tls-*` directive changes (CONFIG SET
//! included): connections accepted afterwards use the new certificates, established ones
//! keep their session; a configuration that does not build leaves the old one in place.

mod settings;
mod stream;

pub use stream::TlsStream;

use crate::exec::client::ClientInfo;
use crate::server::Server;
use arc_swap::ArcSwapOption;
use rustls::pki_types::ServerName;
use rustls::{ClientConfig, ClientConnection, Connection, ServerConfig, ServerConnection};
use std::io;
use std::sync::Arc;
use tokio::net::TcpStream;

/// What CONFIG SET answers when the new TLS configuration does not build (the reason goes
/// to the log), as Redis words it.
pub const UPDATE_FAILED: &str = "Unable to update TLS configuration. Check server logs.";

/// The current configurations (None: TLS is off).
#[derive(Default)]
pub struct Tls {
    server: ArcSwapOption<ServerConfig>,
    client: ArcSwapOption<ClientConfig>,
}

impl Tls {
    /// TLS is configured for incoming connections.
    pub fn serving(&self) -> bool {
        self.server.load().is_some()
    }
}

/// Builds the configurations from the current directives and puts them in place: when
/// `tls-port`, `tls-replication` or `tls-cluster` asks for TLS. On failure the previous
/// configurations stay and the reason is logged and returned.
pub fn reload(server: &Server) -> Result<(), String> {
    let c = server.config.get();
    if c.tls_port == 0 && !c.tls_replication && !c.tls_cluster {
        server.tls.server.store(None);
        server.tls.client.store(None);
        return Ok(());
    }
    let built = settings::build(&c).inspect_err(|e| tracing::warn!("TLS: {e}"))?;
    server.tls.server.store(Some(built.server));
    server.tls.client.store(built.client);
    Ok(())
}

/// Runs the server side of the handshake on a connection accepted on the TLS port.
/// None when it fails (logged), when TLS was turned off meanwhile, or when the client is
/// killed first (`timeout` applies during the handshake too).
pub(crate) async fn accept(
    server: &Server,
    tcp: TcpStream,
    info: &ClientInfo,
) -> Option<TlsStream> {
    let config = server.tls.server.load_full()?;
    let conn = ServerConnection::new(config)
        .inspect_err(|e| tracing::warn!("TLS: cannot start a session: {e}"))
        .ok()?;
    let mut s = TlsStream::new(tcp, Connection::Server(conn));
    tokio::select! {
        biased;
        _ = info.killed() => None,
        r = s.handshake() => match r {
            Ok(()) => Some(s),
            Err(e) => {
                tracing::debug!("Error accepting a client connection: {e} (addr={})", info.addr);
                None
            }
        },
    }
}

/// The client side's configuration as it is now: for the replication link
/// (`tls-replication`) and MIGRATE (`tls-cluster`). Taken when a connection starts, so a
/// change by CONFIG SET applies to the next connection.
pub struct ClientSide(Option<Arc<ClientConfig>>);

/// The outgoing configuration now (it may be missing: then sessions fail to start).
pub fn client_side(server: &Server) -> ClientSide {
    ClientSide(server.tls.client.load_full())
}

impl ClientSide {
    /// A new session to `host`, presenting `tls-client-cert-file` (or the server's own
    /// certificate) and checking the peer's chain against the CA certificates, not its
    /// name, as Redis does.
    pub fn session(&self, host: &str) -> io::Result<ClientConnection> {
        let config = self.0.clone().ok_or_else(|| {
            io::Error::other("TLS is not configured for outgoing connections (see the log)")
        })?;
        // The name only rides in the handshake (SNI); it is not checked against the peer.
        let name = ServerName::try_from(host.to_string())
            .or_else(|_| ServerName::try_from("strata".to_string()))
            .map_err(io::Error::other)?;
        ClientConnection::new(config, name).map_err(io::Error::other)
    }
}

/// The client side of a TLS session over an already connected socket, its handshake done
/// (the replication link, `tls-replication yes`).
pub async fn connect(server: &Server, tcp: TcpStream, host: &str) -> io::Result<TlsStream> {
    let conn = client_side(server).session(host)?;
    let mut s = TlsStream::new(tcp, Connection::Client(conn));
    s.handshake().await?;
    Ok(s)
}
