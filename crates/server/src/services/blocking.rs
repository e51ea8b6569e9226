//! Blocking commands (BLPOP, BZPOPMIN...): clients waiting for keys, and serving them.
//!
//! A blocking command's handler that finds nothing to pop calls `ctx.block_on(keys,
//! deadline, on_timeout)` and returns without a reply. The connection then registers a
//! [`Waiter`] (its argv, db and protocol) under each key, in arrival order, and waits on
//! its socket (to notice a disconnect), its kill signal, its deadline and the waiter.
//!
//! A write that can satisfy waiters (LPUSH, ZADD, ...) calls `ctx.signal_key_ready(key)`;
//! that costs one relaxed load when nobody is blocked. After the writing command, its
//! connection serves the waiters of each ready key in FIFO order **on its own thread**:
//! it re-runs each waiter's command with the waiter's db and protocol, and hands the reply
//! to the waiter's connection, which writes it and carries on. A waiter whose re-run would
//! block again stays queued (the key has nothing left); the next waiters wait too. So
//! blocked clients are served in arrival order whichever threads they and the writer live
//! on, and a chain (BLMOVE pushing to a key another client waits on) is served the same
//! way. Right after registering, a waiter serves its own keys once, which closes the race
//! with a push that landed between its first attempt and its registration.
//!
//! A waiter ends exactly once (served, timed out, CLIENT UNBLOCK, or its client closed):
//! whoever moves its state from `Blocked` removes it from the registry, so nothing leaks.

use crate::exec::client::{Client, ClientInfo};
use crate::services::stats::Stats;
use bytes::Bytes;
use parking_lot::{Mutex, MutexGuard};
use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use strata_resp::{Protocol, Reply};
use tokio::sync::Notify;

/// What a blocking handler asks for when there is nothing to serve yet.
pub struct BlockRequest {
    pub keys: Vec<Bytes>,
    /// Unix milliseconds; 0 waits forever.
    pub deadline_ms: u64,
    /// Writes the command's reply for a timeout (a null array for BLPOP, ...).
    pub on_timeout: fn(&mut Reply<'_>),
    /// The command to re-run instead of the one that blocked (XREAD's `$` becomes the ID
    /// it stood for when the client blocked).
    pub argv: Option<Vec<Bytes>>,
    /// Also woken by any change of its keys, their deletion included: XREADGROUP answers
    /// an error when its stream goes away (see `Ctx::notify_db`).
    pub wake_on_change: bool,
}

impl BlockRequest {
    pub fn new(keys: Vec<Bytes>, deadline_ms: u64, on_timeout: fn(&mut Reply<'_>)) -> Self {
        BlockRequest {
            keys,
            deadline_ms,
            on_timeout,
            argv: None,
            wake_on_change: false,
        }
    }
}

/// Parses a blocking command's timeout in seconds, as Redis 7's getTimeoutFromObjectOrReply
/// (long double seconds, truncated to ms), into a deadline in Unix ms (0 = forever).
pub fn parse_timeout(arg: &[u8], now_ms: u64) -> Result<u64, crate::exec::command::CmdError> {
    use crate::exec::command::CmdError;
    use crate::num::longdouble::Ld;
    let v = crate::num::longdouble::parse(arg).ok_or(CmdError::Static(
        "ERR timeout is not a float or out of range",
    ))?;
    // (long long)(ftval * 1000.0) with x86's conversion: out of range gives LLONG_MIN.
    let ms: i64 = match v {
        Ld::Zero => 0,
        Ld::Nan => {
            return Err(CmdError::Static(
                "ERR timeout is not a float or out of range",
            ))
        }
        Ld::Inf(_) => i64::MIN,
        Ld::Fin { neg, mant, exp } => {
            let f = mant as f64 * 2f64.powi(exp.clamp(-2000, 2000) as i32) * 1000.0;
            let f = if neg { -f } else { f };
            // 2^63 is exact in f64.
            if !(-9_223_372_036_854_775_808.0..9_223_372_036_854_775_808.0).contains(&f) {
                i64::MIN
            } else {
                f.trunc() as i64
            }
        }
    };
    if ms < 0 {
        return Err(CmdError::Static("ERR timeout is negative"));
    }
    if ms == 0 {
        return Ok(0);
    }
    Ok(now_ms.saturating_add(ms as u64))
}

#[derive(Debug)]
pub(crate) enum State {
    Blocked,
    /// The reply of the re-run command, ready to write.
    Served(Vec<u8>),
    TimedOut,
    /// CLIENT UNBLOCK ... ERROR.
    Errored,
    /// The client went away.
    Gone,
}

/// One blocked client.
pub struct Waiter {
    pub info: Arc<ClientInfo>,
    pub(crate) db: usize,
    pub(crate) proto: Protocol,
    pub(crate) no_touch: bool,
    pub(crate) argv: Vec<Bytes>,
    pub(crate) keys: Vec<Bytes>,
    pub(crate) wake_on_change: bool,
    pub deadline_ms: u64,
    on_timeout: fn(&mut Reply<'_>),
    state: Mutex<State>,
    wake: Notify,
}

/// How a wait ended, for the waiting connection.
pub enum Outcome {
    Reply(Vec<u8>),
    /// An error reply (CLIENT UNBLOCK ERROR): the command counts as failed.
    Failed(Vec<u8>),
    Closed,
}

#[derive(Default)]
struct Inner {
    keys: HashMap<(usize, Bytes), VecDeque<Arc<Waiter>>>,
    by_client: HashMap<u64, Arc<Waiter>>,
}

/// All blocked clients.
#[derive(Default)]
pub struct Blocking {
    count: AtomicUsize,
    /// Blocked clients woken by any change of their keys (`BlockRequest::wake_on_change`).
    change_watchers: AtomicUsize,
    /// Clients waiting for a reply that comes later (WAIT, SHUTDOWN): blocked for INFO
    /// as in Redis, but woken by no key.
    later: AtomicUsize,
    inner: Mutex<Inner>,
}

/// A client counted among those waiting for a later reply while it lives.
pub struct Later<'a>(&'a Blocking);

impl Drop for Later<'_> {
    fn drop(&mut self) {
        self.0.later.fetch_sub(1, Ordering::Relaxed);
    }
}

impl Blocking {
    /// Blocked clients (INFO blocked_clients); zero makes `signal_key_ready` free.
    pub fn count(&self) -> usize {
        self.count.load(Ordering::Relaxed)
    }

    /// Clients blocked on anything (INFO blocked_clients, with the paused ones).
    pub fn all(&self) -> usize {
        self.count() + self.later.load(Ordering::Relaxed)
    }

    /// Counts a client waiting for a later reply until the guard drops.
    pub fn later(&self) -> Later<'_> {
        self.later.fetch_add(1, Ordering::Relaxed);
        Later(self)
    }

    /// Blocked clients that any change of a key they wait on must wake.
    pub fn change_watchers(&self) -> usize {
        self.change_watchers.load(Ordering::Relaxed)
    }

    pub fn register(&self, w: &Arc<Waiter>) {
        let mut inner = self.inner.lock();
        for k in &w.keys {
            let q = inner.keys.entry((w.db, k.clone())).or_default();
            // A key named twice (BLPOP k k 0) queues the client once.
            if !q.iter().any(|o| Arc::ptr_eq(o, w)) {
                q.push_back(w.clone());
            }
        }
        inner.by_client.insert(w.info.id, w.clone());
        self.count.fetch_add(1, Ordering::SeqCst);
        if w.wake_on_change {
            self.change_watchers.fetch_add(1, Ordering::SeqCst);
        }
        w.info.blocked.store(true, Ordering::Relaxed);
    }

    pub(crate) fn unregister(&self, w: &Arc<Waiter>) {
        let mut inner = self.inner.lock();
        if inner
            .by_client
            .get(&w.info.id)
            .is_none_or(|o| !Arc::ptr_eq(o, w))
        {
            return;
        }
        inner.by_client.remove(&w.info.id);
        for k in &w.keys {
            let slot = (w.db, k.clone());
            if let Some(q) = inner.keys.get_mut(&slot) {
                q.retain(|o| !Arc::ptr_eq(o, w));
                if q.is_empty() {
                    inner.keys.remove(&slot);
                }
            }
        }
        self.count.fetch_sub(1, Ordering::SeqCst);
        if w.wake_on_change {
            self.change_watchers.fetch_sub(1, Ordering::SeqCst);
        }
        w.info.blocked.store(false, Ordering::Relaxed);
    }

    /// Ends a wait if it is still blocked; true if this call ended it.
    fn finish(&self, w: &Arc<Waiter>, to: State) -> bool {
        let mut st = w.state();
        if !matches!(*st, State::Blocked) {
            return false;
        }
        *st = to;
        drop(st);
        self.unregister(w);
        w.wake.notify_one();
        true
    }

    /// CLIENT UNBLOCK: true if the client was blocked.
    pub fn unblock(&self, id: u64, error: bool) -> bool {
        let w = self.inner.lock().by_client.get(&id).cloned();
        match w {
            Some(w) => self.finish(
                &w,
                if error {
                    State::Errored
                } else {
                    State::TimedOut
                },
            ),
            None => false,
        }
    }

    /// The keys clients wait on in database `db` (SWAPDB signals them all).
    pub fn keys_in_db(&self, db: usize) -> Vec<Bytes> {
        let inner = self.inner.lock();
        inner
            .keys
            .keys()
            .filter(|(d, _)| *d == db)
            .map(|(_, k)| k.clone())
            .collect()
    }

    /// Keys (db, key) with waiters, for tests and introspection.
    pub fn waiting_keys(&self) -> usize {
        self.inner.lock().keys.len()
    }
}

impl Waiter {
    /// A waiter for `client`'s command `argv`, blocked as `req` asks.
    pub fn new(client: &Client, argv: &[Bytes], req: BlockRequest) -> Waiter {
        Waiter {
            info: client.info.clone(),
            db: client.db,
            proto: client.proto,
            no_touch: client.no_touch,
            argv: req.argv.unwrap_or_else(|| argv.to_vec()),
            keys: req.keys,
            wake_on_change: req.wake_on_change,
            deadline_ms: req.deadline_ms,
            on_timeout: req.on_timeout,
            state: Mutex::new(State::Blocked),
            wake: Notify::new(),
        }
    }

    /// The waiter's state. Whoever holds it may run the waiter's command, which locks
    /// shards, so this thread must keep no shard locked while it waits for it (see
    /// `Keyspace::sticky`): two threads could otherwise each wait for the other.
    pub(crate) fn state(&self) -> MutexGuard<'_, State> {
        strata_engine::Keyspace::release_sticky();
        self.state.lock()
    }

    /// The deadline on tokio's clock (`now_ms` is the Unix time now), None for `timeout 0`.
    /// Both times are truncated to the millisecond, so one more keeps a wait from ending
    /// before its timeout.
    pub fn deadline(&self, now_ms: u64) -> Option<tokio::time::Instant> {
        (self.deadline_ms > 0).then(|| {
            tokio::time::Instant::now()
                + std::time::Duration::from_millis(self.deadline_ms.saturating_sub(now_ms) + 1)
        })
    }

    /// Resolves when the wait may have ended.
    pub async fn woken(&self) {
        self.wake.notified().await
    }

    /// How the wait ended, or None while still blocked. An UNBLOCKED error is counted in
    /// `stats`.
    pub fn outcome(&self, stats: &Stats) -> Option<Outcome> {
        let mut st = self.state();
        match std::mem::replace(&mut *st, State::Gone) {
            State::Blocked => {
                *st = State::Blocked;
                None
            }
            State::Served(bytes) => Some(Outcome::Reply(bytes)),
            State::TimedOut => {
                let mut out = Vec::new();
                (self.on_timeout)(&mut Reply::new(&mut out, self.proto));
                Some(Outcome::Reply(out))
            }
            State::Errored => {
                let mut out = Vec::new();
                const UNBLOCKED: &str = "UNBLOCKED client unblocked via CLIENT UNBLOCK";
                Reply::new(&mut out, self.proto).error(UNBLOCKED);
                stats.count_error(UNBLOCKED);
                Some(Outcome::Failed(out))
            }
            State::Gone => Some(Outcome::Closed),
        }
    }
}

impl Blocking {
    /// A waiter whose command ran with reply `out`: it leaves the registry and its
    /// connection wakes to write the reply. `st` is its state, held since it was re-run.
    pub(crate) fn served(&self, w: &Arc<Waiter>, mut st: MutexGuard<'_, State>, out: Vec<u8>) {
        *st = State::Served(out);
        drop(st);
        self.unregister(w);
        w.wake.notify_one();
    }

    /// The deadline passed.
    pub fn time_out(&self, w: &Arc<Waiter>) {
        self.finish(w, State::TimedOut);
    }

    /// The client went away while blocked: forget it.
    pub fn abandon(&self, w: &Arc<Waiter>) {
        self.finish(w, State::Gone);
    }

    /// The waiters of key `key` in database `db`, in arrival order.
    pub(crate) fn waiters(&self, db: usize, key: &Bytes) -> Option<Vec<Arc<Waiter>>> {
        let inner = self.inner.lock();
        let q = inner.keys.get(&(db, key.clone()))?;
        Some(q.iter().cloned().collect())
    }
}
