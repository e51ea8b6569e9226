//! A client's mailbox: what other clients send it outside its own replies (pub/sub messages,
//! client-side caching invalidations, MONITOR lines), encoded by the sender on any thread.
//!
//! Every client has one, inside its `ClientInfo`, so anyone holding the client's info can
//! write to it. Delivering sets a flag and wakes the connection's task through the same
//! waker its kill signal uses (`ClientInfo::signalled`): a connection waiting on its socket
//! wakes for mail at no extra cost per wait, and writes what arrived after its replies.
//!
//! Output-buffer limits (`client-output-buffer-limit`) bound a mailbox: bytes queued plus
//! bytes handed to the socket but not yet written. Passing the hard limit, or staying over
//! the soft limit for longer than its seconds, closes the client and drops its queue, so a
//! client that stops reading costs at most about the hard limit.

use crate::services::pubsub::BufferLimit;
use parking_lot::Mutex;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Instant;

/// Bytes of messages on their way to sockets, over every mailbox (`in_transit`).
static IN_TRANSIT: AtomicU64 = AtomicU64::new(0);

/// Memory held by messages on their way from the thread that sent them to their
/// clients' sockets: queued (the buffers' whole allocations), or taken by the connection
/// and being written. Eviction leaves it out, as Redis's event loop has written what one
/// command sent other clients before it runs the next: an eviction's own invalidations
/// must not count as memory still to free. Messages a socket did not take (`stuck`)
/// count again, as they do in Redis's reply buffers.
pub fn in_transit() -> u64 {
    IN_TRANSIT.load(Ordering::Relaxed)
}

struct MailState {
    buf: Vec<u8>,
    /// What this mailbox last added to `IN_TRANSIT`.
    counted: usize,
    /// The socket did not take all of `inflight` (`Mailbox::stuck`): nothing of this
    /// mailbox is in transit until it has.
    stuck: bool,
    /// Bytes taken by the connection and not yet confirmed written.
    inflight: usize,
    /// When the queue first passed the soft limit (cleared when it drops under).
    soft_since: Option<Instant>,
    /// Closed for exceeding its limits: further messages are dropped.
    dead: bool,
}

impl MailState {
    /// Brings `IN_TRANSIT` up to date with this mailbox.
    fn recount(&mut self) {
        // What the allocator handed out for the buffer, as used memory counts it.
        let cap = match self.buf.capacity() {
            0 => 0,
            c => strata_engine::memory::size_class(c),
        };
        // Once the socket refused some, everything queued for it waits with it.
        let cap = if self.stuck { 0 } else { cap + self.inflight };
        if cap >= self.counted {
            IN_TRANSIT.fetch_add((cap - self.counted) as u64, Ordering::Relaxed);
        } else {
            IN_TRANSIT.fetch_sub((self.counted - cap) as u64, Ordering::Relaxed);
        }
        self.counted = cap;
    }
}

impl Drop for MailState {
    fn drop(&mut self) {
        IN_TRANSIT.fetch_sub(self.counted as u64, Ordering::Relaxed);
    }
}

/// Queued bytes for one client.
pub struct Mailbox {
    state: Mutex<MailState>,
    has_mail: AtomicBool,
}

/// What became of a delivery.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Delivery {
    Queued,
    /// Dropped: the client was already cut off.
    Dropped,
    /// This delivery passed the limit: the caller must close the client.
    Overflow,
}

impl Default for Mailbox {
    fn default() -> Self {
        Mailbox {
            state: Mutex::new(MailState {
                buf: Vec::new(),
                counted: 0,
                stuck: false,
                inflight: 0,
                soft_since: None,
                dead: false,
            }),
            has_mail: AtomicBool::new(false),
        }
    }
}

impl Mailbox {
    /// Appends what `write` encodes, enforcing `limit`. The caller wakes the connection on
    /// `Queued` and closes the client on `Overflow`.
    pub(crate) fn queue(&self, limit: BufferLimit, write: impl FnOnce(&mut Vec<u8>)) -> Delivery {
        let mut st = self.state.lock();
        if st.dead {
            return Delivery::Dropped;
        }
        write(&mut st.buf);
        let used = (st.buf.len() + st.inflight) as u64;
        let over_hard = limit.hard > 0 && used >= limit.hard;
        let mut over_soft = false;
        if limit.soft > 0 && used >= limit.soft {
            let since = *st.soft_since.get_or_insert_with(Instant::now);
            over_soft = since.elapsed().as_secs() >= limit.soft_secs;
        } else {
            st.soft_since = None;
        }
        if over_hard || over_soft {
            st.dead = true;
            st.buf = Vec::new();
            st.recount();
            return Delivery::Overflow;
        }
        st.recount();
        drop(st);
        self.has_mail.store(true, Ordering::Release);
        Delivery::Queued
    }

    /// Bytes queued or taken and not yet written: what the limits count.
    pub fn pending(&self) -> usize {
        let st = self.state.lock();
        st.buf.len() + st.inflight
    }

    /// Bytes queued and not yet taken by the connection.
    pub fn queued(&self) -> usize {
        self.state.lock().buf.len()
    }

    pub fn has_mail(&self) -> bool {
        self.has_mail.load(Ordering::Acquire)
    }

    /// Moves the queued messages to `out`; returns how many bytes (to pass to `written`
    /// once they are on the socket).
    pub fn take(&self, out: &mut Vec<u8>) -> usize {
        let mut st = self.state.lock();
        self.has_mail.store(false, Ordering::Release);
        let n = st.buf.len();
        out.extend_from_slice(&st.buf);
        st.buf.clear();
        // Mail comes in bursts (an eviction's or a flush's invalidations): the memory a
        // burst took goes back once taken, not kept idle for the next one.
        if st.buf.capacity() > crate::net::replybuf::MAX {
            st.buf = Vec::new();
        }
        st.inflight += n;
        st.recount();
        n
    }

    /// `n` bytes from `take` were written.
    pub fn written(&self, n: usize) {
        if n > 0 {
            let mut st = self.state.lock();
            st.inflight = st.inflight.saturating_sub(n);
            if st.inflight == 0 {
                st.stuck = false;
            }
            if st.buf.is_empty() && st.inflight == 0 {
                st.soft_since = None;
            }
            st.recount();
        }
    }

    /// The client's socket did not take all it was given: what this mailbox holds, taken
    /// or queued, counts as memory in use until the connection has written mail again.
    pub fn stuck(&self) {
        let mut st = self.state.lock();
        if !st.stuck {
            st.stuck = true;
            st.recount();
        }
    }

    /// Takes what is queued into `out` and counts it written at once: for a command that
    /// places pending messages before its own reply (SUBSCRIBE), or a client whose reply
    /// buffer is written with them.
    pub fn drain_into(&self, out: &mut Vec<u8>) {
        if self.has_mail() {
            let n = self.take(out);
            self.written(n);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn limits_cut_a_client_off_and_taking_resets_the_flag() {
        let m = Mailbox::default();
        let limit = BufferLimit {
            hard: 10,
            soft: 0,
            soft_secs: 0,
        };
        assert_eq!(
            m.queue(limit, |b| b.extend_from_slice(b"abc")),
            Delivery::Queued
        );
        assert!(m.has_mail());
        let mut out = Vec::new();
        let n = m.take(&mut out);
        assert_eq!((n, out.as_slice()), (3, &b"abc"[..]));
        assert!(!m.has_mail());
        // Unwritten bytes still count against the limit.
        assert_eq!(
            m.queue(limit, |b| b.extend_from_slice(b"1234567")),
            Delivery::Overflow
        );
        assert_eq!(m.queue(limit, |b| b.push(b'x')), Delivery::Dropped);
        let fresh = Mailbox::default();
        fresh.queue(limit, |b| b.extend_from_slice(b"abc"));
        let n = fresh.take(&mut Vec::new());
        fresh.written(n);
        assert_eq!(
            fresh.queue(limit, |b| b.extend_from_slice(b"1234567")),
            Delivery::Queued,
            "written bytes no longer count"
        );
    }
}
