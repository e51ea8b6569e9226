//! Replication as Redis 7.0 speaks it, both ways: a primary serving replicas (SYNC and
//! PSYNC, full and partial resynchronization, the command stream, REPLCONF ACK, WAIT,
//! min-replicas-to-write) and a replica following a primary (REPLICAOF, the handshake,
//! loading the primary's RDB, applying its stream, acknowledging it, promotion).
//!
//! - `backlog`: the stream and its history, an effect sink on a primary.
//! - `primary`: a replica's connection on this primary, from PSYNC on.
//! - `fullsync`: the RDB of a full resynchronization, from a point-in-time capture.
//! - `replica`: this replica's link to its primary; `upstream`: its connection (TCP or TLS).
//! - `role`: turning into a replica or a primary, and the replication IDs.
//! - `persisted`: the replication ID and offset kept across a clean restart.
//! - `report`: INFO replication, ROLE.
//!
//! docs/replication.md says how to set it up and how it works.

pub mod backlog;
mod failover;
mod fullsync;
mod lanes;
mod load;
pub mod own_keys;
mod persisted;
pub mod primary;
pub mod replica;
mod report;
mod role;
mod upstream;

pub use failover::{failover_command, FailoverArgs};
pub use persisted::{load_at_start, offset_now, save_at_shutdown};
pub use report::{info_section, role_reply, RoleReply};
pub use role::{become_master, become_replica, start, Switched};

use crate::exec::client::Client;
use crate::exec::command::{flags, CmdError, Command};
use crate::exec::sink::EffectSink;
use crate::exec::{Nest, Origin};
use crate::server::Server;
use backlog::Backlog;
use parking_lot::Mutex;
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, AtomicU8, AtomicUsize, Ordering};
use std::sync::Arc;
use tokio::sync::Notify;

/// What a client announced with REPLCONF before SYNC/PSYNC, or the mark of this
/// replica's link to its primary.
#[derive(Debug, Clone, Default)]
pub struct ClientRepl {
    /// This client is the link to our primary.
    pub master: bool,
    pub listening_port: u16,
    pub ip_address: Option<String>,
    /// `capa eof`: takes the RDB without a length (`$EOF:<mark>`).
    pub capa_eof: bool,
    /// `capa psync2`: understands `+CONTINUE <replid>`.
    pub capa_psync2: bool,
    /// `rdb-only 1`: wants the RDB and no stream (`redis-cli --rdb`).
    pub rdb_only: bool,
    /// `rdb-filter-only`: what the RDB keeps (`redis-cli --functions-rdb`); None for all.
    pub rdb_filter: Option<RdbFilter>,
}

/// What an RDB filtered with `REPLCONF rdb-filter-only` holds: never the keys; the
/// function libraries if `functions` was named.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RdbFilter {
    pub functions: bool,
}

/// SYNC or PSYNC: what the connection does once it leaves the request path.
#[derive(Debug, Clone)]
pub struct Handoff {
    /// PSYNC's replication ID and offset; None for SYNC (no +FULLRESYNC line, no ACKs).
    pub psync: Option<(String, i64)>,
    pub conf: ClientRepl,
}

/// A primary's stream as far as this replica applied it: what PSYNC resumes.
#[derive(Debug, Clone)]
pub struct Cached {
    pub replid: String,
    /// Offset of the last byte applied.
    pub offset: i64,
    /// The database its commands applied to then.
    pub db: usize,
}

/// The replication IDs (Redis's replid, replid2 and second_replid_offset).
#[derive(Debug, Clone)]
pub struct Ids {
    pub replid: String,
    pub replid2: String,
    pub second_offset: i64,
}

pub const NO_ID: &str = "0000000000000000000000000000000000000000";

/// The replica side's state of its link, for INFO, ROLE and admission.
pub mod link {
    pub const NONE: u8 = 0;
    pub const CONNECT: u8 = 1;
    pub const CONNECTING: u8 = 2;
    pub const HANDSHAKE: u8 = 3;
    pub const TRANSFER: u8 = 4;
    pub const CONNECTED: u8 = 5;
}

/// This replica's link to its primary, as other threads see it.
#[derive(Default)]
pub struct LinkStatus {
    pub state: AtomicU8,
    /// Offset of the last byte of the primary's stream applied (-1 unknown).
    pub reploff: AtomicI64,
    /// ... and read.
    pub read_reploff: AtomicI64,
    /// Unix seconds of the last byte read from the primary.
    pub last_io: AtomicU64,
    /// Unix seconds the link went down (0: never up, or up).
    pub down_since: AtomicU64,
    /// The RDB being received: its size (-1 unknown) and bytes so far.
    pub transfer_size: AtomicI64,
    pub transfer_read: AtomicU64,
    pub transfer_last_io: AtomicU64,
}

/// A replica connected to this primary.
pub struct Peer {
    pub id: u64,
    pub addr: String,
    pub listening_port: u16,
    pub info: Arc<crate::exec::client::ClientInfo>,
    pub state: AtomicU8,
    pub ack_off: AtomicI64,
    /// Unix seconds of its last ACK.
    pub ack_time: AtomicU64,
    /// SYNC: it sends no ACKs.
    pub pre_psync: bool,
    /// Unix seconds since its unread stream passed the soft output buffer limit (0: not).
    pub soft_since: AtomicU64,
}

/// The states of a [`Peer`], named as INFO names them.
pub mod peer {
    pub const WAIT_BGSAVE: u8 = 0;
    pub const SEND_BULK: u8 = 1;
    pub const ONLINE: u8 = 2;
    pub const RDB_TRANSMITTED: u8 = 3;

    pub fn name(s: u8) -> &'static str {
        match s {
            WAIT_BGSAVE => "wait_bgsave",
            SEND_BULK => "send_bulk",
            ONLINE => "online",
            _ => "rdb_transmitted",
        }
    }
}

/// INFO stats fields of replication.
#[derive(Default)]
pub struct Counters {
    pub sync_full: AtomicU64,
    pub sync_partial_ok: AtomicU64,
    pub sync_partial_err: AtomicU64,
    /// Runs of the stream a replica applied on several workers, and their writes
    /// (`lanes`; INFO replication, Strata's own fields).
    pub split_runs: AtomicU64,
    pub split_writes: AtomicU64,
}

impl Counters {
    /// CONFIG RESETSTAT.
    pub fn reset(&self) {
        for c in [
            &self.sync_full,
            &self.sync_partial_ok,
            &self.sync_partial_err,
            &self.split_runs,
            &self.split_writes,
        ] {
            c.store(0, Ordering::Relaxed);
        }
    }
}

/// Replication's state, a field of `Server`.
pub struct Replication {
    pub backlog: Arc<Backlog>,
    /// The backlog's registration among the effect sinks.
    sink: Mutex<Option<Arc<dyn EffectSink>>>,
    ids: Mutex<Ids>,
    /// The primary this server follows (None: it is a primary).
    master: Mutex<Option<(String, u16)>>,
    replica: AtomicBool,
    /// Changes with every change of role: a link started for an older one stops.
    generation: AtomicU64,
    /// Some replication rule may refuse commands (see `admit`).
    restrict: AtomicBool,
    /// A full sync is loading the primary's data.
    pub(crate) loading: AtomicBool,
    pub link: LinkStatus,
    /// Where to resume the primary's stream from (Redis's cached master).
    cached: Mutex<Option<Cached>>,
    /// Turned from primary into replica: the link caches our own history first.
    cache_from_self: AtomicBool,
    /// Held by the running link task: a new one (another primary) starts once the old
    /// one stopped and remembered where it was.
    pub(crate) link_lock: tokio::sync::Mutex<()>,
    /// Held by the link while it applies a run of the stream on several workers, and by
    /// a full sync's cut: the cut falls between runs (`lanes`).
    pub(crate) apply_gate: tokio::sync::Mutex<()>,
    /// The running link's client, killed to stop it at once on a change of role.
    pub(crate) link_client: Mutex<Option<Arc<crate::exec::client::ClientInfo>>>,
    pub(crate) peers: Mutex<Vec<Arc<Peer>>>,
    /// Replicas online within `min-replicas-max-lag`.
    good: AtomicUsize,
    /// Woken by every ACK (WAIT, FAILOVER).
    pub acks: Notify,
    pub(crate) sync: fullsync::Queue,
    pub(crate) failover: failover::Failover,
    pub counters: Counters,
    /// Unix seconds since when no replica is connected (`repl-backlog-ttl`).
    no_peers_since: AtomicU64,
    cron_loops: AtomicU64,
    /// Keys a writable replica's own clients wrote (`own_keys`).
    pub own_keys: own_keys::OwnKeys,
}

impl Default for Replication {
    fn default() -> Self {
        Replication {
            backlog: Arc::new(Backlog::default()),
            sink: Mutex::new(None),
            ids: Mutex::new(Ids {
                replid: random_hex(),
                replid2: NO_ID.into(),
                second_offset: -1,
            }),
            master: Mutex::new(None),
            replica: AtomicBool::new(false),
            generation: AtomicU64::new(0),
            restrict: AtomicBool::new(false),
            loading: AtomicBool::new(false),
            link: LinkStatus::default(),
            cached: Mutex::new(None),
            cache_from_self: AtomicBool::new(false),
            link_lock: tokio::sync::Mutex::new(()),
            apply_gate: tokio::sync::Mutex::const_new(()),
            link_client: Mutex::new(None),
            peers: Mutex::new(Vec::new()),
            good: AtomicUsize::new(0),
            acks: Notify::new(),
            sync: Default::default(),
            failover: Default::default(),
            counters: Counters::default(),
            no_peers_since: AtomicU64::new(Server::now_unix()),
            cron_loops: AtomicU64::new(0),
            own_keys: Default::default(),
        }
    }
}

/// 40 random hex digits (a replication ID), from the standard library's random hash keys.
pub fn random_hex() -> String {
    use std::hash::{BuildHasher, Hasher};
    let mut s = String::with_capacity(40);
    while s.len() < 40 {
        let mut h = std::collections::hash_map::RandomState::new().build_hasher();
        h.write_usize(s.len());
        s.push_str(&format!("{:016x}", h.finish()));
    }
    s.truncate(40);
    s
}

impl Replication {
    /// True while this server is a replica.
    #[inline]
    pub fn is_replica(&self) -> bool {
        self.replica.load(Ordering::Relaxed)
    }

    /// True when some replication rule may refuse a command (one relaxed load).
    #[inline]
    pub fn restricts(&self) -> bool {
        self.restrict.load(Ordering::Relaxed)
    }

    pub fn ids(&self) -> Ids {
        self.ids.lock().clone()
    }

    pub fn master_addr(&self) -> Option<(String, u16)> {
        self.master.lock().clone()
    }

    pub fn generation(&self) -> u64 {
        self.generation.load(Ordering::SeqCst)
    }

    /// True while the link is up (a replica's `master_link_status:up`).
    pub fn link_up(&self) -> bool {
        self.link.state.load(Ordering::Relaxed) == link::CONNECTED
    }

    /// The replication buffer's memory as Redis 7 splits it: (all of it, the backlog's
    /// part, the replicas' part). Beyond `repl-backlog-size`, what connected replicas have
    /// still to read is theirs (INFO mem_clients_slaves), and maxmemory does not count it.
    pub fn buffers(&self) -> (u64, u64, u64) {
        let (held, size) = self.backlog.memory();
        match self.peers.lock().is_empty() || held <= size {
            true => (held, held, 0),
            false => (held, size, held - size),
        }
    }

    pub fn peers(&self) -> Vec<Arc<Peer>> {
        self.peers.lock().clone()
    }

    /// Replicas that acknowledged offset `offset` (WAIT).
    pub fn acked(&self, offset: u64) -> usize {
        self.peers
            .lock()
            .iter()
            .filter(|p| {
                p.state.load(Ordering::Relaxed) == peer::ONLINE
                    && p.ack_off.load(Ordering::Relaxed) >= offset as i64
            })
            .count()
    }

    pub fn good_replicas(&self) -> usize {
        self.good.load(Ordering::Relaxed)
    }

    /// Registers the backlog as an effect sink (once).
    pub(crate) fn attach_sink(&self, server: &Server) {
        let mut sink = self.sink.lock();
        if sink.is_none() {
            let s: Arc<dyn EffectSink> = self.backlog.clone();
            server.sinks.add(s.clone());
            *sink = Some(s);
        }
    }

    /// Unregisters the backlog as an effect sink.
    fn detach_sink(&self, server: &Server) {
        if let Some(s) = self.sink.lock().take() {
            server.sinks.remove(&s);
        }
    }

    /// Recomputes whether `admit` has anything to check.
    pub fn refresh_restrict(&self, server: &Server) {
        let c = server.config.get();
        let on = self.is_replica()
            || (c.min_replicas_to_write > 0 && c.min_replicas_max_lag > 0)
            || self.loading.load(Ordering::Relaxed)
            || self.failover.pausing();
        self.restrict.store(on, Ordering::Relaxed);
    }

    /// Recounts the replicas online within `min-replicas-max-lag` (Redis's
    /// refreshGoodSlavesCount).
    pub fn refresh_good(&self, server: &Server) {
        let c = server.config.get();
        if c.min_replicas_to_write == 0 || c.min_replicas_max_lag == 0 {
            return;
        }
        let now = Server::now_unix();
        let good = self
            .peers
            .lock()
            .iter()
            .filter(|p| {
                p.state.load(Ordering::Relaxed) == peer::ONLINE
                    && now.saturating_sub(p.ack_time.load(Ordering::Relaxed))
                        <= u64::from(c.min_replicas_max_lag)
            })
            .count();
        self.good.store(good, Ordering::Relaxed);
    }

    pub(crate) fn add_peer(&self, p: Arc<Peer>) {
        self.peers.lock().push(p);
    }

    pub(crate) fn remove_peer(&self, id: u64) {
        let mut peers = self.peers.lock();
        peers.retain(|p| p.id != id);
        if peers.is_empty() {
            self.no_peers_since
                .store(Server::now_unix(), Ordering::Relaxed);
        }
    }

    /// Closes every replica's connection (they resynchronize).
    pub fn disconnect_replicas(&self) {
        for p in self.peers.lock().iter() {
            p.info.kill();
        }
    }

    /// Stops the running link at once (its task then remembers where it was).
    pub(crate) fn stop_link(&self) {
        if let Some(c) = self.link_client.lock().as_ref() {
            c.kill();
        }
    }

    pub(crate) fn cached(&self) -> Option<Cached> {
        self.cached.lock().clone()
    }

    pub(crate) fn set_cached(&self, c: Option<Cached>) {
        *self.cached.lock() = c;
    }

    pub(crate) fn set_ids(&self, f: impl FnOnce(&mut Ids)) {
        f(&mut self.ids.lock());
    }
}

/// Replication's admission rules, checked (in Redis's order) only while `restricts()`.
/// `call` is this call's flags (`admit::call_flags`: a script's declared ones, EXEC's
/// queued commands').
pub fn admit(
    server: &Server,
    client: &Client,
    cmd: &Command,
    call: u32,
    origin: &Origin<'_>,
) -> Result<(), CmdError> {
    let script = match origin {
        Origin::Client => false,
        Origin::Nested(Nest {
            script: Some(_), ..
        }) => true,
        // EXEC's commands were checked when queued, and EXEC itself before it ran.
        Origin::Nested(_) | Origin::Master | Origin::Replay => return Ok(()),
    };
    let repl = &server.repl;
    let config = server.config.get();
    let exec = !script && cmd.name == "exec" && cmd.subcommands.is_empty();
    let write = call & flags::WRITE != 0;
    if write && !client.is_master() {
        if !repl.is_replica()
            && config.min_replicas_to_write > 0
            && config.min_replicas_max_lag > 0
            && repl.good_replicas() < config.min_replicas_to_write as usize
        {
            return Err(CmdError::Static(
                "NOREPLICAS Not enough good replicas to write.",
            ));
        }
        if repl.is_replica() && config.replica_read_only {
            return Err(CmdError::Static(
                "READONLY You can't write against a read only replica.",
            ));
        }
    }
    if script || client.is_master() {
        return Ok(());
    }
    let stale = !cmd.has(flags::STALE) || (exec && queued_lacks(server, client, flags::STALE));
    if repl.is_replica() && !repl.link_up() && !config.replica_serve_stale_data && stale {
        return Err(CmdError::Static(
            "MASTERDOWN Link with MASTER is down and replica-serve-stale-data is set to 'no'.",
        ));
    }
    let loading =
        !cmd.has(flags::LOADING) || (exec && queued_lacks(server, client, flags::LOADING));
    if repl.loading.load(Ordering::Relaxed) && loading {
        return Err(CmdError::Static(
            "LOADING Redis is loading the dataset in memory",
        ));
    }
    if repl.failover.pausing() && call & (flags::WRITE | flags::MAY_REPLICATE) != 0 {
        return Err(CmdError::Static(
            "ERR the server is failing over: writes are paused until it completes",
        ));
    }
    Ok(())
}

/// True when some command queued in the client's MULTI lacks `flag`.
fn queued_lacks(server: &Server, client: &Client, flag: u32) -> bool {
    client.multi.as_ref().is_some_and(|m| {
        m.queued
            .iter()
            .any(|(id, _)| !server.table.commands[*id].has(flag))
    })
}

/// Once a second, from the server's background cycle.
pub fn cron(server: &Arc<Server>) {
    let repl = &server.repl;
    // Redis's count of its replication cron's runs: its first runs as the server starts,
    // this one's a second later, so this is that count's value for the same moment.
    let loops = repl.cron_loops.fetch_add(1, Ordering::Relaxed) + 1;
    let config = server.config.get();
    failover::cron(server);
    if !repl.is_replica() {
        let peers = repl.peers();
        let period = u64::from(config.repl_ping_replica_period.max(1));
        if !peers.is_empty() && loops.is_multiple_of(period) && !repl.failover.pausing() {
            repl.backlog.feed_command(&[b"PING"]);
        }
        let now = Server::now_unix();
        for p in &peers {
            if p.state.load(Ordering::Relaxed) == peer::ONLINE
                && !p.pre_psync
                && now.saturating_sub(p.ack_time.load(Ordering::Relaxed))
                    > u64::from(config.repl_timeout)
            {
                tracing::warn!(
                    "Disconnecting timedout replica (streaming sync): {}",
                    p.addr
                );
                p.info.kill();
            }
        }
        // A replica that does not read its stream holds the backlog's memory: past the
        // replica class's output buffer limits it is disconnected, as in Redis.
        let limit = config.client_output_buffer_limit.replica();
        for (id, pending) in repl.backlog.pending() {
            if let Some(p) = peers.iter().find(|p| p.id == id) {
                if primary::over_limit(p, pending, limit.hard, limit.soft, limit.soft_secs) {
                    tracing::warn!(
                        "Client {} scheduled to be closed ASAP for overcoming of output buffer limits.",
                        p.addr
                    );
                    p.info.kill();
                }
            }
        }
        let ttl = config.repl_backlog_ttl;
        let idle = now.saturating_sub(repl.no_peers_since.load(Ordering::Relaxed));
        if peers.is_empty() && ttl > 0 && idle > ttl && repl.backlog.is_active() {
            role::drop_backlog(server);
            tracing::info!(
                "Replication backlog freed after {ttl} seconds without connected replicas."
            );
        }
    }
    repl.refresh_good(server);
}

/// `repl-backlog-size` and `min-replicas-*` changed (and once at start).
pub fn configure(server: &Server) {
    let c = server.config.get();
    server
        .repl
        .backlog
        .set_size(u64::try_from(c.repl_backlog_size).unwrap_or(1));
    drop(c);
    server.repl.refresh_good(server);
    server.repl.refresh_restrict(server);
}
