//! A connection's replies on their way to the socket, and `client-output-buffer-limit`.
//!
//! Replies gather in one buffer while a batch runs and leave in one write. What the socket
//! does not take stays in the buffer (the connection then waits for the socket to become
//! writable, and may read and run more commands meanwhile): the bytes not yet written, plus
//! what a TLS session holds, are the client's pending output, which Redis calls omem and
//! checks against its class's limits after every command. Passing the hard limit, or
//! staying over the soft one for longer than its seconds, closes the client without
//! writing what is pending.

use crate::exec::client::Client;
use crate::net::replybuf::ReplyBuf;
use crate::net::wire::Wire;
use crate::services::pubsub::BufferLimit;
use std::io;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

/// Reply bytes a batch gathers before it stops to write them.
pub(crate) const MAX_RESERVE: usize = 1024 * 1024;
/// A buffer grown past this by one big reply is not kept once written.
const KEEP_CAPACITY: usize = 4 * MAX_RESERVE;

/// The output-buffer classes, in `client-output-buffer-limit`'s order.
pub(crate) const NORMAL: usize = 0;
pub(crate) const REPLICA: usize = 1;
pub(crate) const PUBSUB: usize = 2;

/// The client's class: replicas, then clients subscribed to anything, then the rest.
pub(crate) fn class(client: &Client) -> usize {
    if client.info.kind.load(Ordering::Relaxed) == crate::exec::client::kind::REPLICA {
        REPLICA
    } else if client
        .subs
        .as_ref()
        .is_some_and(|s| s.count() + s.shard.len() > 0)
    {
        PUBSUB
    } else {
        NORMAL
    }
}

/// How much output may be pending before the connection stops running commands and only
/// waits for the socket: up to the limit that would close the client, and no bound when
/// its class has none, as Redis buffers such a client's replies whatever they come to (a
/// client that writes a long pipeline before reading any reply would otherwise wait for
/// a server that waits for it; `maxmemory-clients` is what bounds it).
pub(crate) fn cap(limit: BufferLimit) -> usize {
    let bound = match (limit.hard, limit.soft) {
        (0, 0) => return usize::MAX,
        (0, soft) => soft,
        (hard, _) => hard,
    };
    usize::try_from(bound)
        .unwrap_or(usize::MAX)
        .max(MAX_RESERVE)
}

pub(crate) struct Output {
    pub buf: Vec<u8>,
    /// Bytes of `buf` the socket has taken.
    sent: usize,
    /// When the pending output first reached the soft limit (Redis's
    /// obuf_soft_limit_reached_time).
    soft_since: Option<Instant>,
    /// Pub/sub message bytes in `buf`, confirmed to the mailbox once written.
    pub mail: usize,
    /// The size Redis's rules give the buffer while it is empty (`net::replybuf`).
    pub reply: ReplyBuf,
}

impl Output {
    pub fn new(capacity: usize) -> Output {
        Output {
            buf: Vec::with_capacity(capacity),
            sent: 0,
            soft_since: None,
            mail: 0,
            reply: ReplyBuf::new(),
        }
    }

    /// A connection's buffer, of the size `reply` gives it.
    pub fn with_reply(reply: ReplyBuf) -> Output {
        Output {
            buf: Vec::with_capacity(reply.size()),
            reply,
            ..Output::new(0)
        }
    }

    /// Some output waits for the socket.
    #[inline]
    pub fn stalled(&self) -> bool {
        !self.buf.is_empty()
    }

    /// Bytes on their way to the client: unwritten replies and `held` (what the wire
    /// took and has not sent).
    #[inline]
    pub fn pending(&self, held: usize) -> usize {
        self.buf.len() - self.sent + held
    }

    /// Writes what the socket takes now. Ok(true): everything is out (the buffer is
    /// empty again); Ok(false): the rest waits until the socket is writable.
    pub fn push<W: Wire>(&mut self, wire: &mut W) -> io::Result<bool> {
        while self.sent < self.buf.len() {
            match wire.try_write(&self.buf[self.sent..]) {
                Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
                Ok(n) => self.sent += n,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(false),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
        match wire.try_flush() {
            Ok(()) => {}
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(false),
            Err(e) => return Err(e),
        }
        self.reply.note(self.buf.len());
        self.buf.clear();
        self.sent = 0;
        if self.buf.capacity() > KEEP_CAPACITY {
            self.buf = Vec::with_capacity(MAX_RESERVE / 64);
        } else if self.mail > 0 && self.buf.capacity() > self.reply.size() {
            // Other clients' messages grew it (Redis frees such reply blocks once
            // written): used memory must not keep a burst of invalidations that an
            // eviction caused, or the next eviction would count them as still there.
            self.buf = Vec::with_capacity(self.reply.size());
        }
        Ok(true)
    }

    /// Redis's check of a client's output buffer against its class's limits: the hard
    /// limit at once, the soft one once it has been passed continuously for longer than
    /// its seconds. `used` is the pending output.
    pub fn over_limit(&mut self, limit: BufferLimit, used: usize) -> bool {
        let used = used as u64;
        let hard = limit.hard > 0 && used >= limit.hard;
        let mut soft = false;
        if limit.soft > 0 && used >= limit.soft {
            match self.soft_since {
                None => self.soft_since = Some(Instant::now()),
                Some(t) => soft = t.elapsed() > Duration::from_secs(limit.soft_secs),
            }
        } else {
            self.soft_since = None;
        }
        hard || soft
    }
}

/// Writes everything in `out`, waiting for the socket as needed; false if the client was
/// killed meanwhile or the socket failed (a client that stops reading must not pin its
/// connection).
pub(crate) async fn flush_all<W: Wire>(
    wire: &mut W,
    info: &crate::exec::client::ClientInfo,
    out: &mut Output,
) -> bool {
    loop {
        match out.push(wire) {
            Ok(true) => return true,
            Ok(false) => info.mail.stuck(),
            Err(_) => return false,
        }
        tokio::select! {
            biased;
            _ = info.killed() => return false,
            r = wire.writable() => if r.is_err() { return false },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hard_limit_at_once_soft_limit_only_after_its_seconds() {
        let mut o = Output::new(0);
        let hard = BufferLimit {
            hard: 100,
            soft: 0,
            soft_secs: 0,
        };
        assert!(!o.over_limit(hard, 99));
        assert!(o.over_limit(hard, 100));
        let soft = BufferLimit {
            hard: 0,
            soft: 10,
            soft_secs: 0,
        };
        // The first time over the soft limit only starts its clock.
        assert!(!o.over_limit(soft, 10));
        std::thread::sleep(Duration::from_millis(5));
        assert!(o.over_limit(soft, 10), "over for longer than 0 seconds");
        assert!(!o.over_limit(soft, 9), "under again: the clock resets");
        assert!(!o.over_limit(soft, 11));
        let slow = BufferLimit {
            hard: 0,
            soft: 10,
            soft_secs: 60,
        };
        assert!(!o.over_limit(slow, 11), "still within its seconds");
    }

    #[test]
    fn cap_follows_the_limit_that_would_close_the_client() {
        let l = |hard, soft| BufferLimit {
            hard,
            soft,
            soft_secs: 1,
        };
        assert_eq!(cap(l(0, 0)), usize::MAX, "no limit, no bound");
        assert_eq!(cap(l(64 << 20, 8 << 20)), 64 << 20);
        assert_eq!(cap(l(0, 8 << 20)), 8 << 20);
        assert_eq!(cap(l(1000, 0)), MAX_RESERVE, "never below a batch's output");
    }
}
