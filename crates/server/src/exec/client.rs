//! Per-connection state, and the registry of all clients that CLIENT LIST/KILL and INFO read
//! from any thread.

use crate::services::acl::user::User;
use crate::services::mailbox::{Delivery, Mailbox};
use crate::services::pubsub::BufferLimit;
use crate::services::tracking::ClientTracking;
use crate::tick::Tick;
use bytes::Bytes;
use parking_lot::Mutex;
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, AtomicU8, AtomicUsize, Ordering};
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
    /// The ACL user the client runs as; None for the server's own (journal replay), which
    /// may run anything.
    pub user: Option<Arc<User>>,
    /// This connection's copy of its user's rules (the ACL check's fast path).
    pub acl_rules: crate::services::acl::user::CachedRules,
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
    /// CLIENT CACHING YES/NO was given for the next command (or transaction).
    pub caching: bool,
    /// A blocked client's command re-run by the connection that served it once a key it
    /// waits on is ready (`exec/blocked.rs`): it was already admitted, paused and shown to
    /// MONITOR when it blocked, and it is not refused for memory now (Redis serves blocked
    /// clients without processCommand's checks).
    pub rerun: bool,
    /// Memory was over `maxmemory` with nothing left to evict when this client's current
    /// command was admitted (Redis's pre_command_oom_state): a script it runs may then not
    /// start writing.
    pub oom_at_start: bool,
    /// The result of the work its last command deferred (`Ctx::defer`), for that command's
    /// second run.
    pub resume: Option<Box<dyn std::any::Any + Send>>,
}

impl Client {
    pub fn new(info: Arc<ClientInfo>, user: Option<Arc<User>>, authenticated: bool) -> Client {
        info.set_user(user.clone());
        let dirty = info.watch_dirty.clone();
        Client {
            id: info.id,
            db: 0,
            proto: Protocol::Resp2,
            authenticated,
            user,
            acl_rules: Default::default(),
            reply: ReplyMode::On,
            no_evict: false,
            no_touch: false,
            close_after_reply: false,
            info,
            pubsub_mode: false,
            subs: None,
            multi: None,
            watch: crate::services::watch::ClientWatch {
                dirty,
                keys: Vec::new(),
            },
            last_lsn: 0,
            repl: None,
            woff: 0,
            caching: false,
            rerun: false,
            oom_at_start: false,
            resume: None,
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

    /// Runs as `user` from now on (AUTH, HELLO AUTH, RESET).
    pub fn set_user(&mut self, user: Arc<User>) {
        self.info.set_user(Some(user.clone()));
        self.user = Some(user);
    }

    /// Starts (Some) or ends (None) a transaction, keeping CLIENT LIST's `multi=` true.
    pub fn set_multi(&mut self, m: Option<Box<crate::commands::transactions::Multi>>) {
        let queued = m.as_ref().map_or(-1, |m| m.queued.len() as i64);
        self.info.multi.store(queued, Ordering::Relaxed);
        self.multi = m;
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
    /// The socket's descriptor (-1 for the journal's replay client).
    pub fd: i32,
    /// Connected through `unixsocket` (CLIENT LIST flags=U; local for protected mode and
    /// the `enable-*` settings).
    pub unix: bool,
    pub created: Instant,
    pub name: Mutex<Option<Bytes>>,
    pub db: AtomicUsize,
    pub resp: AtomicU8,
    /// Index of the last command run, into the command table.
    pub last_cmd: AtomicUsize,
    /// `Tick::millis` of the last interaction.
    pub last_active: AtomicU64,
    /// Memory figures CLIENT LIST and client eviction read (`net::clients`).
    pub mem: crate::net::clients::MemFigures,
    /// Bytes in the query buffer: the batch being run, then what waits for more input.
    pub qbuf: AtomicUsize,
    pub no_evict: AtomicBool,
    pub no_touch: AtomicBool,
    /// Channel and pattern subscriptions (CLIENT LIST sub= psub=, flags=P).
    pub sub: AtomicUsize,
    pub psub: AtomicUsize,
    /// Shard channel subscriptions (CLIENT LIST ssub=).
    pub ssub: AtomicUsize,
    /// In a blocking command, or held by CLIENT PAUSE (CLIENT LIST flags=b).
    pub blocked: AtomicBool,
    /// The client's ACL user, for other threads (CLIENT LIST user=, CLIENT KILL USER,
    /// ACL DELUSER); the connection's own copy is `Client::user`.
    user: Mutex<Option<Arc<User>>>,
    /// What the connection is for: [`kind::NORMAL`], a replica ([`kind::REPLICA`], CLIENT
    /// LIST flags=S) or this replica's link to its primary ([`kind::MASTER`], flags=M).
    pub kind: AtomicU8,
    /// In MONITOR mode (CLIENT LIST flags=O).
    pub monitor: AtomicBool,
    /// Client-side caching state (CLIENT TRACKING), read by writers on any thread.
    pub tracking: ClientTracking,
    /// What other clients send it: pub/sub messages, invalidations, MONITOR lines.
    pub mail: Mailbox,
    /// Commands queued since MULTI, -1 outside a transaction (CLIENT LIST multi=, flags=x).
    pub multi: AtomicI64,
    /// The bytes of the queued commands' arguments (CLIENT LIST multi-mem=).
    pub multi_mem: AtomicUsize,
    /// A key this client WATCHes was modified (CLIENT LIST flags=d); the client's
    /// `ClientWatch` shares it.
    pub watch_dirty: crate::services::watch::Dirty,
    killed: AtomicBool,
    /// Left the registry: the connection is gone.
    closed: AtomicBool,
    /// The task to wake on `kill` or mail: the connection's (its waker is the same at every
    /// await).
    waker: Mutex<Option<Waker>>,
}

impl ClientInfo {
    pub fn new(id: u64, addr: String, laddr: String, fd: i32) -> ClientInfo {
        ClientInfo {
            id,
            addr,
            laddr,
            fd,
            unix: false,
            created: Instant::now(),
            name: Mutex::new(None),
            db: AtomicUsize::new(0),
            resp: AtomicU8::new(2),
            last_cmd: AtomicUsize::new(usize::MAX),
            last_active: AtomicU64::new(Tick::now().millis()),
            mem: Default::default(),
            qbuf: AtomicUsize::new(0),
            no_evict: AtomicBool::new(false),
            no_touch: AtomicBool::new(false),
            sub: AtomicUsize::new(0),
            psub: AtomicUsize::new(0),
            ssub: AtomicUsize::new(0),
            blocked: AtomicBool::new(false),
            user: Mutex::new(None),
            kind: AtomicU8::new(kind::NORMAL),
            monitor: AtomicBool::new(false),
            tracking: ClientTracking::default(),
            mail: Mailbox::default(),
            multi: AtomicI64::new(-1),
            multi_mem: AtomicUsize::new(0),
            watch_dirty: Default::default(),
            killed: AtomicBool::new(false),
            closed: AtomicBool::new(false),
            waker: Mutex::new(None),
        }
    }

    /// Asks the connection to close (CLIENT KILL, SHUTDOWN). It closes at its next wake-up.
    pub fn kill(&self) {
        self.killed.store(true, Ordering::SeqCst);
        self.wake();
    }

    /// Wakes the connection's task (a busy script's hook served it: `net::busy`).
    pub(crate) fn wake_task(&self) {
        self.wake();
    }

    fn wake(&self) {
        if let Some(w) = self.waker.lock().as_ref() {
            w.wake_by_ref();
        }
    }

    pub fn user(&self) -> Option<Arc<User>> {
        self.user.lock().clone()
    }

    pub fn set_user(&self, user: Option<Arc<User>>) {
        *self.user.lock() = user;
    }

    /// The user's name as CLIENT LIST shows it ("(superuser)" for the server's own).
    pub fn user_name(&self) -> String {
        self.user
            .lock()
            .as_ref()
            .map_or_else(|| "(superuser)".to_string(), |u| u.name_lossy())
    }

    /// A replica's connection or this replica's link to its primary: never timed out nor
    /// evicted; a replica's output counts in the `replica` class.
    pub fn is_replication_link(&self) -> bool {
        self.kind.load(Ordering::Relaxed) != kind::NORMAL
    }

    pub fn is_killed(&self) -> bool {
        self.killed.load(Ordering::SeqCst)
    }

    /// True once the connection is gone (it left the registry).
    pub fn is_closed(&self) -> bool {
        self.closed.load(Ordering::Acquire)
    }

    /// The protocol the client speaks now.
    pub fn proto(&self) -> Protocol {
        if self.resp.load(Ordering::Relaxed) == 3 {
            Protocol::Resp3
        } else {
            Protocol::Resp2
        }
    }

    /// True while the client has subscriptions (Redis's CLIENT_PUBSUB).
    pub fn subscribed(&self) -> bool {
        self.sub.load(Ordering::Relaxed)
            + self.psub.load(Ordering::Relaxed)
            + self.ssub.load(Ordering::Relaxed)
            > 0
    }

    /// Queues what `write` encodes (in the client's protocol, which it is given) in the
    /// client's mailbox and wakes its connection. A client past `limit` is closed; false
    /// then, or when it was already cut off.
    pub fn send(&self, limit: BufferLimit, write: impl FnOnce(&mut Vec<u8>, Protocol)) -> bool {
        let proto = self.proto();
        match self.mail.queue(limit, |buf| write(buf, proto)) {
            Delivery::Queued => {
                self.wake();
                true
            }
            Delivery::Dropped => false,
            Delivery::Overflow => {
                tracing::warn!(
                    "Client id={} addr={} scheduled to be closed ASAP for overcoming of output buffer limits.",
                    self.id,
                    self.addr
                );
                self.kill();
                false
            }
        }
    }

    /// Resolves once `kill` was called (`is_killed` tells) or mail arrived (`mail`).
    /// Polled next to every read and write of the connection, so it is cheap: one
    /// uncontended lock, and the waker is cloned only when it changed (a connection's task
    /// keeps one waker, until it moves to another worker).
    pub fn signalled(&self) -> impl std::future::Future<Output = ()> + '_ {
        self.wait_for(|| self.is_killed() || self.mail.has_mail())
    }

    /// Resolves once `kill` was called.
    pub fn killed(&self) -> impl std::future::Future<Output = ()> + '_ {
        self.wait_for(|| self.is_killed())
    }

    fn wait_for<'s>(
        &'s self,
        ready: impl Fn() -> bool + 's,
    ) -> impl std::future::Future<Output = ()> + 's {
        std::future::poll_fn(move |cx| {
            if ready() {
                return Poll::Ready(());
            }
            {
                let mut w = self.waker.lock();
                if !w.as_ref().is_some_and(|w| w.will_wake(cx.waker())) {
                    *w = Some(cx.waker().clone());
                }
            }
            // `kill` and `send` set their flag before they take the lock: one that ran
            // since the check above either finds the waker just stored or left the flag
            // for this look.
            if ready() {
                Poll::Ready(())
            } else {
                Poll::Pending
            }
        })
    }

    /// Connected over the loopback interface or the Unix socket (`enable-*` settings of `local` admit it).
    pub fn is_local(&self) -> bool {
        self.unix
            || self
                .addr
                .parse::<std::net::SocketAddr>()
                .is_ok_and(|a| a.ip().is_loopback())
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
    /// Their memory, for client eviction and INFO (`net::clients`).
    pub mem: crate::net::clients::ClientsMem,
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
        if let Some(info) = self.clients.lock().remove(&id) {
            info.closed.store(true, Ordering::Release);
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
