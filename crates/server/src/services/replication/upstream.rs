//! The replica's connection to its primary: a TCP connection, in a TLS session when
//! `tls-replication` is on (read when the connection starts, so CONFIG SET applies to the
//! next one, as in Redis), and the handshake's reading of lines and writing of commands.
//! The link's logic (`replica`) runs the same over both.

use crate::net::tls::{self, TlsStream};
use crate::server::Server;
use bytes::BytesMut;
use std::io;
use std::pin::Pin;
use std::sync::atomic::Ordering;
use std::task::{Context, Poll};
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, ReadBuf};
use tokio::net::TcpStream;

/// Why a link attempt ended.
pub(super) struct LinkError {
    pub text: String,
    /// The link had been up (its stream flowing).
    pub was_up: bool,
}

impl std::fmt::Display for LinkError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.text)
    }
}

pub(super) fn fail<T>(text: impl Into<String>) -> Result<T, LinkError> {
    Err(LinkError {
        text: text.into(),
        was_up: false,
    })
}

/// The socket to the primary, plain or in a TLS session.
pub(super) enum Stream {
    Plain(TcpStream),
    Tls(Box<TlsStream>),
}

impl AsyncRead for Stream {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Stream::Plain(s) => Pin::new(s).poll_read(cx, buf),
            Stream::Tls(s) => Pin::new(s.as_mut()).poll_read(cx, buf),
        }
    }
}

impl AsyncWrite for Stream {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        match self.get_mut() {
            Stream::Plain(s) => Pin::new(s).poll_write(cx, buf),
            Stream::Tls(s) => Pin::new(s.as_mut()).poll_write(cx, buf),
        }
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Stream::Plain(s) => Pin::new(s).poll_flush(cx),
            Stream::Tls(s) => Pin::new(s.as_mut()).poll_flush(cx),
        }
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Stream::Plain(s) => Pin::new(s).poll_shutdown(cx),
            Stream::Tls(s) => Pin::new(s.as_mut()).poll_shutdown(cx),
        }
    }
}

/// A connection to the primary: lines in, commands out during the handshake, then the
/// stream.
pub(super) struct Conn {
    pub stream: Stream,
    pub buf: BytesMut,
    pub timeout: Duration,
    /// This side's address and the socket's descriptor (the link's CLIENT LIST entry).
    pub local: String,
    pub fd: i32,
}

/// Connects to `host`:`port`, from the address `source` when one is given
/// (`bind-source-addr`; as Redis, best effort: one that cannot be bound is left out).
async fn connect_from(host: &str, port: u16, source: &str) -> io::Result<TcpStream> {
    let Ok(ip) = source.parse::<std::net::IpAddr>() else {
        return TcpStream::connect((host, port)).await;
    };
    let mut last = io::Error::new(io::ErrorKind::NotFound, "the host resolves to nothing");
    for addr in tokio::net::lookup_host((host, port)).await? {
        let socket = match addr {
            std::net::SocketAddr::V4(_) => tokio::net::TcpSocket::new_v4()?,
            std::net::SocketAddr::V6(_) => tokio::net::TcpSocket::new_v6()?,
        };
        if ip.is_ipv4() == addr.is_ipv4() {
            if let Err(e) = socket.bind(std::net::SocketAddr::new(ip, 0)) {
                tracing::warn!("bind-source-addr {source}: {e}");
            }
        }
        match socket.connect(addr).await {
            Ok(s) => return Ok(s),
            Err(e) => last = e,
        }
    }
    Err(last)
}

impl Conn {
    /// Connects to the primary, in TLS when `tls-replication` is on; each step within
    /// `timeout`.
    pub async fn open(
        server: &Server,
        host: &str,
        port: u16,
        timeout: Duration,
    ) -> Result<Conn, LinkError> {
        let source = server.config.get().bind_source_addr.clone();
        let tcp = match tokio::time::timeout(timeout, connect_from(host, port, &source)).await {
            Ok(Ok(s)) => s,
            Ok(Err(e)) => return fail(format!("Error condition on socket for SYNC: {e}")),
            Err(_) => return fail("Timeout connecting to the MASTER..."),
        };
        let c = server.config.get();
        let _ = tcp.set_nodelay(!c.repl_disable_tcp_nodelay);
        let tls = c.tls_replication;
        drop(c);
        let local = tcp.local_addr().map(|a| a.to_string()).unwrap_or_default();
        let fd = std::os::fd::AsRawFd::as_raw_fd(&tcp);
        let stream = if tls {
            match tokio::time::timeout(timeout, tls::connect(server, tcp, host)).await {
                Ok(Ok(s)) => Stream::Tls(Box::new(s)),
                Ok(Err(e)) => {
                    return fail(format!(
                        "Unable to connect to MASTER {host}:{port}: TLS handshake failed: {e}"
                    ))
                }
                Err(_) => {
                    return fail(format!(
                        "Unable to connect to MASTER {host}:{port}: TLS handshake timed out (is it a TLS port?)"
                    ))
                }
            }
        } else {
            Stream::Plain(tcp)
        };
        Ok(Conn {
            stream,
            buf: BytesMut::with_capacity(64 * 1024),
            timeout,
            local,
            fd,
        })
    }

    pub async fn send(&mut self, argv: &[&[u8]]) -> Result<(), LinkError> {
        let mut b = Vec::new();
        crate::exec::effects::encode(&mut b, argv);
        self.write(&b).await
    }

    pub async fn write(&mut self, b: &[u8]) -> Result<(), LinkError> {
        match tokio::time::timeout(self.timeout, self.put(b)).await {
            Ok(Ok(())) => Ok(()),
            _ => fail("Sending command to master in replication handshake: write error"),
        }
    }

    /// Writes `b` whole and out of the TLS session's buffer, if any.
    pub async fn put(&mut self, b: &[u8]) -> io::Result<()> {
        self.stream.write_all(b).await?;
        self.stream.flush().await
    }

    /// Reads more; false at the end of the stream. Times out after `repl-timeout`.
    pub async fn fill(&mut self) -> Result<bool, LinkError> {
        if self.buf.capacity() - self.buf.len() < 16 * 1024 {
            self.buf.reserve(64 * 1024);
        }
        match tokio::time::timeout(self.timeout, self.stream.read_buf(&mut self.buf)).await {
            Ok(Ok(n)) => Ok(n > 0),
            Ok(Err(e)) => fail(format!("I/O error reading from MASTER: {e}")),
            Err(_) => fail("Timeout connecting to the MASTER..."),
        }
    }

    /// One line, without its `\r\n` (an empty one for a keep-alive newline).
    async fn line(&mut self) -> Result<String, LinkError> {
        loop {
            if let Some(nl) = self.buf.iter().position(|&c| c == b'\n') {
                let line = self.buf.split_to(nl + 1);
                let text = line.strip_suffix(b"\n").unwrap_or(&line);
                let text = text.strip_suffix(b"\r").unwrap_or(text);
                return Ok(String::from_utf8_lossy(text).into_owned());
            }
            if self.buf.len() > 64 * 1024 {
                return fail("Bad protocol from MASTER: a reply line too long");
            }
            if !self.fill().await? {
                return fail("Master did not respond to command during SYNC handshake");
            }
        }
    }

    /// The next line that is not a keep-alive newline.
    pub async fn reply(&mut self, server: &Server) -> Result<String, LinkError> {
        loop {
            let l = self.line().await?;
            server
                .repl
                .link
                .last_io
                .store(Server::now_unix(), Ordering::Relaxed);
            if !l.is_empty() {
                return Ok(l);
            }
        }
    }
}
