//! CLIENT PAUSE: for a while, commands of every client (ALL) or only those that may write
//! (WRITE: write and may-replicate commands, EXEC of such commands, scripts that do not
//! declare `no-writes`) wait before they run. The connection waits, not its worker thread:
//! other connections on the worker go on, and a paused client is counted in INFO
//! blocked_clients. While a pause lasts the data set stays still: keys that expire read as
//! missing but are not removed, lazily or by the active cycle (the engine's
//! `freeze_expiry_until`).
//!
//! Admission (`exec::admit`) asks [`Pause::holds`] for every client command; with no pause
//! that is one relaxed load. The pause starts at the end of a running EXEC or script, since
//! their commands are not admitted one by one.

use parking_lot::Mutex;
use std::sync::atomic::{AtomicBool, AtomicU8, AtomicUsize, Ordering};
use tokio::sync::Notify;

/// What a pause holds back.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Kind {
    Off = 0,
    Write = 1,
    All = 2,
}

#[derive(Default)]
pub struct Pause {
    /// The kind in force (a `Kind` as u8), for the check every command makes.
    kind: AtomicU8,
    /// (kind, end in Unix ms): the pause, changed under this lock.
    state: Mutex<(u8, u64)>,
    /// Woken whenever the pause changes, for the waiting connections to look again.
    changed: Notify,
    /// Connections waiting for the pause to end.
    waiting: AtomicUsize,
    /// Writes held while a shutdown waits for its replicas and saves (`services::shutdown`):
    /// apart from CLIENT PAUSE, which neither lifts nor shortens it (Redis's
    /// PAUSE_DURING_SHUTDOWN).
    shutdown: AtomicBool,
}

/// A connection's registration as a paused client, for as long as it lives.
pub struct Waiting<'a>(&'a Pause);

impl Drop for Waiting<'_> {
    fn drop(&mut self) {
        self.0.waiting.fetch_sub(1, Ordering::Relaxed);
    }
}

impl Pause {
    #[inline]
    pub fn active(&self) -> bool {
        self.kind.load(Ordering::Relaxed) != 0
    }

    /// Pauses until `end_ms` (Unix ms). An earlier pause still running is extended: the
    /// later end and the stricter kind win, as in Redis. Returns the end of the pause in
    /// force, which is also when expiry may resume.
    pub fn pause(&self, kind: Kind, end_ms: u64, now_ms: u64) -> u64 {
        let mut st = self.state.lock();
        let (old_kind, old_end) = if st.0 != 0 && st.1 >= now_ms {
            *st
        } else {
            (0, 0)
        };
        *st = ((kind as u8).max(old_kind), end_ms.max(old_end));
        self.publish(st.0);
        let end = st.1;
        drop(st);
        self.changed.notify_waiters();
        end
    }

    /// CLIENT UNPAUSE.
    pub fn unpause(&self) {
        let mut st = self.state.lock();
        *st = (0, 0);
        self.publish(0);
        drop(st);
        self.changed.notify_waiters();
    }

    /// Holds writes (`on`) for a shutdown, or lets them go.
    pub fn hold_for_shutdown(&self, on: bool) {
        let st = self.state.lock();
        self.shutdown.store(on, Ordering::Relaxed);
        self.publish(st.0);
        drop(st);
        self.changed.notify_waiters();
    }

    /// Stores the kind in force for the fast check, from CLIENT PAUSE's `client` kind and
    /// the shutdown's hold (under the state lock).
    fn publish(&self, client: u8) {
        let shutdown = u8::from(self.shutdown.load(Ordering::Relaxed)) * Kind::Write as u8;
        self.kind.store(client.max(shutdown), Ordering::Relaxed);
    }

    /// The kind in force at `now_ms` (a pause past its end is over).
    pub fn kind(&self, now_ms: u64) -> Kind {
        if !self.active() {
            return Kind::Off;
        }
        let mut st = self.state.lock();
        if st.0 != 0 && st.1 < now_ms {
            *st = (0, 0);
            self.publish(0);
            drop(st);
            self.changed.notify_waiters();
            return self.kind(now_ms);
        }
        match self.kind.load(Ordering::Relaxed) {
            2 => Kind::All,
            1 => Kind::Write,
            _ => Kind::Off,
        }
    }

    /// Whether a command that may write (`writes`) or not waits at `now_ms`.
    pub fn holds(&self, now_ms: u64, writes: bool) -> bool {
        match self.kind(now_ms) {
            Kind::Off => false,
            Kind::Write => writes,
            Kind::All => true,
        }
    }

    /// The end of the pause in force, Unix ms (0: none; `u64::MAX` while a shutdown holds
    /// writes, which ends when the shutdown does or is cancelled).
    pub fn end_ms(&self) -> u64 {
        let st = self.state.lock();
        match self.shutdown.load(Ordering::Relaxed) {
            true => u64::MAX,
            false => st.1,
        }
    }

    /// Resolves when the pause may have changed. Create it before looking at the pause:
    /// a change after its creation wakes it even before it is first polled.
    pub fn changed(&self) -> tokio::sync::futures::Notified<'_> {
        self.changed.notified()
    }

    /// Counts a connection as paused while the returned guard lives.
    pub fn wait(&self) -> Waiting<'_> {
        self.waiting.fetch_add(1, Ordering::Relaxed);
        Waiting(self)
    }

    /// Connections waiting for the pause to end (part of INFO blocked_clients).
    pub fn waiting(&self) -> usize {
        self.waiting.load(Ordering::Relaxed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pauses_merge_expire_and_lift() {
        let p = Pause::default();
        assert!(!p.holds(100, true));
        assert_eq!(p.pause(Kind::Write, 1000, 100), 1000);
        assert!(p.holds(500, true));
        assert!(!p.holds(500, false), "WRITE lets reads run");
        // A shorter ALL pause makes it stricter but not shorter.
        assert_eq!(p.pause(Kind::All, 800, 500), 1000);
        assert!(p.holds(900, false));
        assert!(p.holds(1000, false), "the end millisecond still pauses");
        assert!(!p.holds(1001, true), "past its end the pause is over");
        assert!(!p.active());
        // After it ended, a new pause starts afresh.
        p.pause(Kind::Write, 2000, 1500);
        assert_eq!(p.kind(1600), Kind::Write);
        p.unpause();
        assert_eq!(p.kind(1600), Kind::Off);
        let w = p.wait();
        assert_eq!(p.waiting(), 1);
        drop(w);
        assert_eq!(p.waiting(), 0);
    }

    #[test]
    fn a_shutdowns_hold_outlasts_client_pauses() {
        let p = Pause::default();
        p.hold_for_shutdown(true);
        assert!(p.holds(100, true) && !p.holds(100, false));
        assert_eq!(p.end_ms(), u64::MAX);
        // CLIENT PAUSE ALL is stricter while it lasts; after it, writes stay held.
        p.pause(Kind::All, 200, 100);
        assert!(p.holds(150, false));
        assert!(!p.holds(300, false) && p.holds(300, true));
        p.pause(Kind::All, 500, 300);
        p.unpause();
        assert!(
            p.holds(300, true),
            "CLIENT UNPAUSE does not lift a shutdown's hold"
        );
        p.hold_for_shutdown(false);
        assert!(!p.holds(300, true));
        assert!(!p.active());
    }
}
