//! What a connection reads from and writes to: a plain TCP socket, a Unix socket, or a TLS
//! session over TCP (`net::tls`). The connection code is generic over it, so the plain path compiles to
//! the socket calls it always made and pays nothing for TLS.
//!
//! Every method takes the socket's readiness as tokio reports it: `readable`/`writable` wait
//! (and take `&self`, so one `select!` can wait for both), `try_read_buf`/`try_write` never
//! wait and answer `WouldBlock` when there is nothing to do yet.

use bytes::BytesMut;
use std::future::Future;
use std::io;
use tokio::net::{TcpStream, UnixStream};

pub(crate) trait Wire {
    /// The connection may move to another worker between two batches (a plain socket
    /// can; a TLS session's state stays where it is).
    const MOVABLE: bool;
    /// Resolves when `try_read_buf` may have something (or an error or the end to report).
    fn readable(&self) -> impl Future<Output = io::Result<()>>;
    /// Appends what arrived to `buf` (its spare capacity); 0 at the end of the stream.
    fn try_read_buf(&mut self, buf: &mut BytesMut) -> io::Result<usize>;
    /// Resolves when `try_write` may take more.
    fn writable(&self) -> impl Future<Output = io::Result<()>>;
    /// Takes what it can of `buf` without waiting; 0 only for an empty `buf`.
    fn try_write(&mut self, buf: &[u8]) -> io::Result<usize>;
    /// Bytes taken by `try_write` and not on the socket yet (a TLS session's records):
    /// pushes them out, `WouldBlock` while some remain.
    fn try_flush(&mut self) -> io::Result<()> {
        Ok(())
    }
    /// How many bytes `try_write` took that are still held here (output-buffer accounting).
    fn held(&self) -> usize {
        0
    }
    /// Ends the session before the socket closes (a TLS session's close_notify).
    fn close(&mut self) {}
}

/// A socket read and written by tokio's own calls: TCP, which may move between workers
/// (`conn::Moved` carries a TCP socket), and the Unix socket, which stays where it is.
macro_rules! socket_wire {
    ($socket:ty, $movable:expr) => {
        impl Wire for $socket {
            const MOVABLE: bool = $movable;

            #[inline]
            fn readable(&self) -> impl Future<Output = io::Result<()>> {
                <$socket>::readable(self)
            }

            #[inline]
            fn try_read_buf(&mut self, buf: &mut BytesMut) -> io::Result<usize> {
                <$socket>::try_read_buf(self, buf)
            }

            #[inline]
            fn writable(&self) -> impl Future<Output = io::Result<()>> {
                <$socket>::writable(self)
            }

            #[inline]
            fn try_write(&mut self, buf: &[u8]) -> io::Result<usize> {
                <$socket>::try_write(self, buf)
            }
        }
    };
}

socket_wire!(TcpStream, true);
socket_wire!(UnixStream, false);

/// Reads once, waiting for readiness as often as needed: `Ok(0)` at the end of the stream.
/// Cancel-safe (what was read is in `buf`; nothing is held in the future).
pub(crate) async fn read_some<W: Wire>(wire: &mut W, buf: &mut BytesMut) -> io::Result<usize> {
    loop {
        match wire.try_read_buf(buf) {
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => wire.readable().await?,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            r => return r,
        }
    }
}
