//! A TLS session over a connection's own socket: rustls does the protocol, this file moves
//! its records through the same non-blocking socket calls plain connections use, so the
//! connection's code (reads, partial writes, waiting for readiness) is the same for both.

use crate::net::wire::Wire;
use bytes::BytesMut;
use rustls::Connection;
use std::future::Future;
use std::io::{self, Read, Write};
use std::pin::Pin;
use std::task::{ready, Context, Poll};
use tokio::io::{AsyncRead, AsyncWrite, Interest, ReadBuf};
use tokio::net::TcpStream;

/// TLS records waiting for the socket, at most: past it the session takes no more plain
/// bytes and the writer sees the socket as full (rustls's own default).
const RECORD_BUFFER: usize = 64 * 1024;

/// The socket as rustls's `Read`/`Write`: one non-blocking call each, `WouldBlock` when
/// the socket has nothing or takes nothing.
struct Sock<'a>(&'a TcpStream);

impl Read for Sock<'_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.0.try_read(buf)?;
        if n < buf.len() {
            // A short read emptied the socket. Forget its readiness (without a syscall),
            // so the next read waits for the socket's next edge: otherwise it would be a
            // recvfrom that finds nothing, after nearly every request at -P 1, where a
            // TLS reply leaves at once and the connection then reads again.
            let _ = self.0.try_io(Interest::READABLE, || {
                Err::<(), _>(io::ErrorKind::WouldBlock.into())
            });
        }
        Ok(n)
    }
}

impl Write for Sock<'_> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.0.try_write(buf)
    }

    fn write_vectored(&mut self, bufs: &[io::IoSlice<'_>]) -> io::Result<usize> {
        self.0.try_write_vectored(bufs)
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// One TLS session (server or client side) over a socket.
pub struct TlsStream {
    tcp: TcpStream,
    tls: Connection,
    /// Decrypted bytes rustls holds for us.
    plain: usize,
    /// The peer closed (TCP end or close_notify).
    eof: bool,
    /// Plain bytes taken since the session last had nothing to send: what it holds, to
    /// within a record's overhead (rustls does not say how much it has queued).
    unsent: usize,
}

impl TlsStream {
    pub(crate) fn new(tcp: TcpStream, mut tls: Connection) -> TlsStream {
        tls.set_buffer_limit(Some(RECORD_BUFFER));
        TlsStream {
            tcp,
            tls,
            plain: 0,
            eof: false,
            unsent: 0,
        }
    }

    /// The session as rustls sees it (negotiated version, cipher suite, peer certificates).
    pub fn session(&self) -> &Connection {
        &self.tls
    }

    /// Pushes pending TLS records to the socket; `WouldBlock` while some remain.
    fn flush_tls(&mut self) -> io::Result<()> {
        while self.tls.wants_write() {
            self.tls.write_tls(&mut Sock(&self.tcp))?;
        }
        self.unsent = 0;
        Ok(())
    }

    /// Reads records from the socket and decrypts them. Ok(false) at the peer's end.
    fn read_tls(&mut self) -> io::Result<bool> {
        if self.tls.read_tls(&mut Sock(&self.tcp))? == 0 {
            return Ok(false);
        }
        match self.tls.process_new_packets() {
            Ok(state) => {
                self.plain = state.plaintext_bytes_to_read();
                if state.peer_has_closed() && self.plain == 0 {
                    self.eof = true;
                }
                // An alert, a key update or session tickets to answer: best effort now,
                // the next write carries the rest.
                if self.tls.wants_write() {
                    let _ = self.flush_tls();
                }
                Ok(true)
            }
            Err(e) => {
                // rustls queued an alert saying why: let the peer have it.
                let _ = self.flush_tls();
                Err(io::Error::new(io::ErrorKind::InvalidData, e))
            }
        }
    }

    /// Makes decrypted bytes available: Ok(n > 0) when there are some, Ok(0) at the end,
    /// `WouldBlock` when a whole record has not arrived yet.
    fn fill(&mut self) -> io::Result<usize> {
        loop {
            if self.plain > 0 || self.eof {
                return Ok(self.plain);
            }
            if !self.read_tls()? {
                self.eof = true;
            }
        }
    }

    /// Copies up to `dst.len()` decrypted bytes out.
    fn take(&mut self, dst: &mut [u8]) -> io::Result<usize> {
        match self.tls.reader().read(dst) {
            Ok(n) => {
                self.plain -= n.min(self.plain);
                Ok(n)
            }
            // The peer closed without close_notify: an end like any other here.
            Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => {
                self.plain = 0;
                self.eof = true;
                Ok(0)
            }
            Err(e) => Err(e),
        }
    }

    /// Runs the handshake to its end.
    pub async fn handshake(&mut self) -> io::Result<()> {
        while self.tls.is_handshaking() {
            match self.flush_tls() {
                Ok(()) => {}
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                    self.tcp.writable().await?;
                    continue;
                }
                Err(e) => return Err(e),
            }
            if !self.tls.is_handshaking() {
                break;
            }
            match self.read_tls() {
                Ok(true) => {}
                Ok(false) => return Err(io::ErrorKind::UnexpectedEof.into()),
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => self.tcp.readable().await?,
                Err(e) => return Err(e),
            }
        }
        // The last flight (and a TLS 1.3 server's tickets) leave before anything else.
        loop {
            match self.flush_tls() {
                Ok(()) => return Ok(()),
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => self.tcp.writable().await?,
                Err(e) => return Err(e),
            }
        }
    }
}

impl Wire for TlsStream {
    const MOVABLE: bool = false;

    /// Tells the peer the session ends (close_notify), if the socket takes it now.
    fn close(&mut self) {
        self.tls.send_close_notify();
        let _ = self.flush_tls();
    }

    fn readable(&self) -> impl Future<Output = io::Result<()>> {
        let ready = self.plain > 0 || self.eof;
        async move {
            if ready {
                return Ok(());
            }
            self.tcp.readable().await
        }
    }

    fn try_read_buf(&mut self, buf: &mut BytesMut) -> io::Result<usize> {
        let n = self.fill()?;
        if n == 0 {
            return Ok(0);
        }
        let start = buf.len();
        let room = (buf.capacity() - start).max(4096);
        buf.resize(start + n.min(room), 0);
        let got = self.take(&mut buf[start..]);
        buf.truncate(start + *got.as_ref().unwrap_or(&0));
        got
    }

    fn writable(&self) -> impl Future<Output = io::Result<()>> {
        self.tcp.writable()
    }

    fn try_write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let mut taken = 0;
        loop {
            match self.flush_tls() {
                Ok(()) => {}
                Err(e) if e.kind() == io::ErrorKind::WouldBlock && taken > 0 => return Ok(taken),
                Err(e) => return Err(e),
            }
            if taken == buf.len() {
                return Ok(taken);
            }
            match self.tls.writer().write(&buf[taken..])? {
                0 => return Err(io::ErrorKind::WouldBlock.into()),
                n => {
                    taken += n;
                    self.unsent += n;
                }
            }
        }
    }

    fn try_flush(&mut self) -> io::Result<()> {
        self.flush_tls()
    }

    fn held(&self) -> usize {
        self.unsent
    }
}

/// For code that wants tokio's traits (the replication link's client side).
impl AsyncRead for TlsStream {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let me = self.get_mut();
        loop {
            match me.fill() {
                Ok(0) => return Poll::Ready(Ok(())),
                Ok(_) => {
                    let n = me.take(buf.initialize_unfilled())?;
                    buf.advance(n);
                    return Poll::Ready(Ok(()));
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                    ready!(me.tcp.poll_read_ready(cx))?;
                }
                Err(e) => return Poll::Ready(Err(e)),
            }
        }
    }
}

impl AsyncWrite for TlsStream {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let me = self.get_mut();
        loop {
            match me.try_write(buf) {
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                    ready!(me.tcp.poll_write_ready(cx))?;
                }
                r => return Poll::Ready(r),
            }
        }
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let me = self.get_mut();
        loop {
            match me.flush_tls() {
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                    ready!(me.tcp.poll_write_ready(cx))?;
                }
                r => return Poll::Ready(r),
            }
        }
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        if !self.tls.is_handshaking() {
            self.tls.send_close_notify();
        }
        ready!(self.as_mut().poll_flush(cx))?;
        Pin::new(&mut self.get_mut().tcp).poll_shutdown(cx)
    }
}
