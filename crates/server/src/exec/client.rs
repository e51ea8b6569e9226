//! Per-connection state, and the registry of all clients that CLIENT LIST/KILL and INFO read
//! from any thread.

use crate::tick::Tick;
use bytes::Bytes;
use parking_lot::Mutex;
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicU8, AtomicUsize, Ordering};
use std::sync::Arc;
use std::task::{Poll, Waker};
use std::time::Instant;
use strata_resp::Protocol;

/// CLIENT REPLY mode.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReplyMode {
    On,
    Off,
    /// Suppress the reply of the next command only.
    Skip,
}

/// State owned by the connection's task.
pub struct Client {
    pub id: u64,
    pub db: usize,
    pub proto: Protocol,
    pub authenticated: bool,
    pub reply: ReplyMode,
    pub no_evict: bool,
    pub no_touch: bool,
    /// Set by QUIT and protocol errors: flush the reply, then close.
    pub close_after_reply: bool,
    pub info: Arc<ClientInfo>,
    /// RESP2 with subscriptions: only (P)SUBSCRIBE, (P)UNSUBSCRIBE, PING, QUIT, RESET run.
    pub pubsub_mode: bool,
    /// Pub/sub state, from the first (P)SUBSCRIBE on.
    pub subs: Option<Box<crate::services::pubsub::Subscriptions>>,
    /// Commands queued since MULTI.
    pub multi: Option<Box<crate::commands::transactions::Multi>>,
    /// Keys this client WATCHes.
    pub watch: crate::services::watch::ClientWatch,
    /// The journal position of this client's last write: under `appendfsync always` its
    /// replies wait until the journal is durable up to here.
    pub last_lsn: u64,
    /// Replication: what a replica announced with REPLCONF before its SYNC, or the mark
    /// of a replica's link to its primary (`services::replication`).
    pub repl: Option<Box<crate::services::replication::ClientRepl>>,
    /// The replication offset that covers this client's last write (WAIT waits for it).
    pub woff: u64,
}

impl Client {
    pub fn new(info: Arc<ClientInfo>, authenticated: bool) -> Client {
        Client {
            id: info.id,
            db: 0,
            proto: Protocol::Resp2,
            authenticated,
            reply: ReplyMode::On,
            no_evict: false,
            no_touch: false,
            close_after_reply: false,
            info,
            pubsub_mode: false,
            subs: None,
            multi: None,
            watch: Default::default(),
            last_lsn: 0,
            repl: None,
            woff: 0,
        }
    }

    /// True for a replica's link to its primary: the primary's stream obeys no client
    /// rule (read-only replica, paused writes...).
    pub fn is_master(&self) -> bool {
        self.repl.as_ref().is_some_and(|r| r.master)
    }

    /// Re-derives the pub/sub flags after a subscription or protocol change.
    pub fn update_pubsub(&mut self) {
        let (c, p, sh) = self.subs.as_ref().map_or((0, 0, 0), |s| {
            (s.channels.len(), s.patterns.len(), s.shard.len())
        });
        self.info.sub.store(c, Ordering::Relaxed);
        self.info.psub.store(p, Ordering::Relaxed);
        self.info.ssub.store(sh, Ordering::Relaxed);
        self.pubsub_mode = c + p + sh > 0 && self.proto == Protocol::Resp2;
    }

    pub fn set_db(&mut self, db: usize) {
        self.db = db;
        self.info.db.store(db, Ordering::Relaxed);
    }

    pub fn set_proto(&mut self, proto: Protocol) {
        self.proto = proto;
        self.info.resp.store(
            if proto == Protocol::Resp3 { 3 } else { 2 },
            Ordering::Relaxed,
        );
        if let Some(s) = &self.subs {
            s.mailbox.set_proto(proto);
        }
        self.update_pubsub();
    }
}

/// The values of [`ClientInfo::kind`].
pub mod kind {
    pub const NORMAL: u8 = 0;
    pub const REPLICA: u8 = 1;
    pub const MASTER: u8 = 2;
}

/// What other threads may read or signal about a client.
pub struct ClientInfo {
    pub id: u64,
    pub addr: String,
    pub laddr: String,
    pub created: Instant,
    pub name: Mutex<Option<Bytes>>,
    pub db: AtomicUsize,
    pub resp: AtomicU8,
    /// Index of the last command run, into the command table.
    pub last_cmd: AtomicUsize,
    /// `Tick::millis` of the last interaction.
    pub last_active: AtomicU64,
    pub qbuf: AtomicUsize,
    pub no_evict: AtomicBool,
    pub no_touch: AtomicBool,
    /// Channel and pattern subscriptions (CLIENT LIST sub= psub=, flags=P).
    pub sub: AtomicUsize,
    pub psub: AtomicUsize,
    /// Shard channel subscriptions (CLIENT LIST ssub=).
    pub ssub: AtomicUsize,
    /// In a blocking command (CLIENT LIST flags=b).
    pub blocked: AtomicBool,
    /// What the connection is for: [`kind::NORMAL`], a replica ([`kind::REPLICA`], CLIENT
    /// LIST flags=S) or this replica's link to its primary ([`kind::MASTER`], flags=M).
    pub kind: AtomicU8,
    killed: AtomicBool,
    /// The task to wake on `kill`: the connection's (its waker is the same at every await).
    kill_waker: Mutex<Option<Waker>>,
}

impl ClientInfo {
    pub fn new(id: u64, addr: String, laddr: String) -> ClientInfo {
        ClientInfo {
            id,
            addr,
            laddr,
            created: Instant::now(),
            name: Mutex::new(None),
            db: AtomicUsize::new(0),
            resp: AtomicU8::new(2),
            last_cmd: AtomicUsize::new(usize::MAX),
            last_active: AtomicU64::new(Tick::now().millis()),
            qbuf: AtomicUsize::new(0),
            no_evict: AtomicBool::new(false),
            no_touch: AtomicBool::new(false),
            sub: AtomicUsize::new(0),
            psub: AtomicUsize::new(0),
            ssub: AtomicUsize::new(0),
            blocked: AtomicBool::new(false),
            kind: AtomicU8::new(kind::NORMAL),
            killed: AtomicBool::new(false),
            kill_waker: Mutex::new(None),
        }
    }

    /// Asks the connection to close (CLIENT KILL, SHUTDOWN). It closes at its next wake-up.
    pub fn kill(&self) {
        self.killed.store(true, Ordering::SeqCst);
        if let Some(w) = self.kill_waker.lock().as_ref() {
            w.wake_by_ref();
        }
    }

    pub fn is_killed(&self) -> bool {
        self.killed.load(Ordering::SeqCst)
    }

    /// Resolves once `kill` was called. Polled next to every read and write of the
    /// connection, so it is cheap: one uncontended lock, and the waker is cloned only when
    /// it changed (a connection's task keeps one waker, until it moves to another worker).
    pub fn killed(&self) -> impl std::future::Future<Output = ()> + '_ {
        std::future::poll_fn(|cx| {
            if self.is_killed() {
                return Poll::Ready(());
            }
            {
                let mut w = self.kill_waker.lock();
                if !w.as_ref().is_some_and(|w| w.will_wake(cx.waker())) {
                    *w = Some(cx.waker().clone());
                }
            }
            // `kill` sets the flag before it takes the lock: one that ran since the check
            // above either finds the waker just stored or left the flag for this look.
            if self.is_killed() {
                Poll::Ready(())
            } else {
                Poll::Pending
            }
        })
    }

    pub fn touch(&self, now: Tick) {
        self.last_active.store(now.millis(), Ordering::Relaxed);
    }

    pub fn idle_secs(&self) -> u64 {
        let now = Tick::now().millis();
        now.saturating_sub(self.last_active.load(Ordering::Relaxed)) / 1000
    }
}

/// All connected clients, by id (CLIENT LIST orders by id, as Redis).
#[derive(Default)]
pub struct Registry {
    clients: Mutex<BTreeMap<u64, Arc<ClientInfo>>>,
    next_id: AtomicU64,
    connected: AtomicUsize,
}

impl Registry {
    pub fn next_id(&self) -> u64 {
        self.next_id.fetch_add(1, Ordering::Relaxed) + 1
    }

    pub fn add(&self, info: Arc<ClientInfo>) {
        self.clients.lock().insert(info.id, info);
        self.connected.fetch_add(1, Ordering::Relaxed);
    }

    pub fn remove(&self, id: u64) {
        if self.clients.lock().remove(&id).is_some() {
            self.connected.fetch_sub(1, Ordering::Relaxed);
        }
    }

    pub fn connected(&self) -> usize {
        self.connected.load(Ordering::Relaxed)
    }

    pub fn snapshot(&self) -> Vec<Arc<ClientInfo>> {
        self.clients.lock().values().cloned().collect()
    }

    pub fn get(&self, id: u64) -> Option<Arc<ClientInfo>> {
        self.clients.lock().get(&id).cloned()
    }
}
