//! The server: the state every connection on every thread shares, and its background
//! cycle. Start-up is `net::start`.

use crate::commands;
use crate::config::Config;
use crate::exec::client::Registry;
use crate::exec::table::Table;
use crate::net::conn;
use crate::services::stats::Stats;
use crate::tick::Tick;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};
use strata_engine::Keyspace;
use tokio::sync::mpsc;

/// State shared by every connection on every thread.
pub struct Server {
    pub keyspace: Keyspace,
    pub config: Config,
    pub table: Table,
    pub clients: Registry,
    pub stats: Stats,
    pub started: Instant,
    pub run_id: String,
    pub threads: usize,
    /// The workers' loads: where connections run (`net::balance`).
    pub balance: crate::net::balance::Balance,
    /// The listening sockets (CONFIG SET bind/port/tls-port changes them).
    pub listeners: crate::net::listeners::Listeners,
    /// Unix seconds of the last successful save (the start time until persistence lands).
    pub last_save: AtomicU64,
    pub shutting_down: AtomicBool,
    /// The data directory is being loaded (INFO persistence `loading`).
    pub loading: AtomicBool,
    /// Peak and start-up memory (INFO, MEMORY STATS).
    pub memory: crate::services::memory::Memory,
    /// maxmemory: the eviction settings, pool and counters.
    pub evict: crate::services::evict::Evictor,
    /// The on-disk tier of cold entries, when `tiering yes`.
    pub tier: std::sync::OnceLock<Arc<crate::services::tiering::Tier>>,
    /// Commands per second over the last second, sampled by the background cycle.
    pub ops_per_sec: AtomicU64,
    /// DEBUG SET-ACTIVE-EXPIRE: tests turn the active cycle off to observe lazy expiry.
    pub active_expire: AtomicBool,
    /// The other switches DEBUG flips for tests.
    pub debug: crate::services::debug::DebugSwitches,
    pub clock: Clock,
    /// Channel and pattern subscriptions of every client.
    pub pubsub: crate::services::pubsub::Hub,
    pub slowlog: crate::services::slowlog::SlowLog,
    /// Clients blocked on keys.
    pub blocking: crate::services::blocking::Blocking,
    /// `notify-keyspace-events` as flags (crate::services::notify), 0 when nothing can be published.
    pub notify_flags: AtomicU32,
    /// Keys clients WATCH.
    pub watches: crate::services::watch::Watches,
    /// Client-side caching: which clients may cache which keys.
    pub tracking: crate::services::tracking::Tracking,
    /// Clients in MONITOR mode.
    pub monitors: crate::services::monitor::Monitors,
    /// The latency monitor's events.
    pub latency: crate::services::latency::Latency,
    /// CLIENT PAUSE.
    pub pause: crate::services::pause::Pause,
    /// A shutdown under way (SHUTDOWN, SIGTERM, SIGINT).
    pub shutdown: crate::services::shutdown::Shutdown,
    /// The journal and snapshots.
    pub persist: crate::services::persist::Persist,
    /// Where the effects of writes go (the journal; a replication backlog).
    pub sinks: crate::exec::sink::Sinks,
    /// Script bodies, function libraries and running scripts.
    pub scripts: crate::services::scripting::Scripts,
    /// ACL users and the log of refusals.
    pub acl: crate::services::acl::Acl,
    /// MIGRATE's cached connections to its targets.
    pub migrations: crate::services::migrate::Migrations,
    /// The TLS configurations (`net::tls`).
    pub tls: crate::net::tls::Tls,
    /// Replication: the backlog, replicas, the link to a primary.
    pub repl: crate::services::replication::Replication,
    /// This server's own Arc, for work that outlives a command (BGSAVE's thread).
    me: std::sync::OnceLock<std::sync::Weak<Server>>,
    /// Each worker thread's queue of connections: new ones, and ones moved to it.
    pub workers: std::sync::OnceLock<Vec<mpsc::UnboundedSender<conn::Incoming>>>,
}

/// Wall-clock milliseconds derived from a monotonic `Tick`, so a command needs one
/// clock read for both its latency statistics and its expiry time. The offset to the wall
/// clock is re-read every second, so changes to the system time are followed.
pub struct Clock {
    base: Tick,
    /// Unix time of `base`, in microseconds (finer than the ms we hand out, so rounding
    /// never puts our clock behind the wall clock).
    offset_us: AtomicU64,
}

impl Clock {
    fn new() -> Clock {
        let c = Clock {
            base: Tick::now(),
            offset_us: AtomicU64::new(0),
        };
        c.sync();
        c
    }

    /// Re-reads the wall clock.
    pub fn sync(&self) {
        let since_base = Tick::now().micros_since(self.base);
        let wall = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_micros() as u64)
            .unwrap_or(0);
        self.offset_us
            .store(wall.saturating_sub(since_base), Ordering::Relaxed);
    }

    /// Unix milliseconds at `at`.
    pub fn unix_ms(&self, at: Tick) -> u64 {
        (self.offset_us.load(Ordering::Relaxed) + at.micros_since(self.base)) / 1000
    }
}

impl Server {
    /// Runs every configuration hook: pushes the values components keep their own copy
    /// of (encoding thresholds, fsync policy...) into them. Called once at start; CONFIG
    /// SET then runs the hooks of what it changed.
    pub fn apply_config(&self) {
        crate::config::hooks::run_all(self);
    }

    /// A key the server removed by itself, `event` "expired" or "evicted", under the key's
    /// shard lock: WATCH sees it modified, so does client-side caching, the effect sinks
    /// record a DEL (UNLINK if `lazy`) so that a replay or a replica removes it too, and
    /// the keyspace event goes out.
    pub fn removed_by_server(&self, db: usize, key: &[u8], event: &str, lazy: bool) {
        use crate::services::notify;
        if event == "expired" {
            self.watches.touch_expired(db, key);
        } else {
            self.watches.touch(db, key);
        }
        if self.tracking.active() {
            self.tracking.touched(key, None);
        }
        let epoch = self.persist.epoch.load(Ordering::Relaxed);
        self.sinks.record_removed(db, epoch, key, lazy);
        let class = if event == "evicted" {
            notify::EVICTED
        } else {
            notify::EXPIRED
        };
        let flags = self.notify_flags.load(Ordering::Relaxed);
        if flags & class != 0 {
            notify::emit(&self.pubsub, flags, event, key, db, None);
        }
    }

    /// This server as an Arc (None only while it is being dropped).
    pub fn arc(&self) -> Option<Arc<Server>> {
        self.me.get().and_then(|w| w.upgrade())
    }

    pub fn now_unix() -> u64 {
        SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_secs())
            .unwrap_or(0)
    }

    /// Stops serving: every connection closes and the worker threads exit.
    pub fn stop(&self) {
        self.shutting_down.store(true, Ordering::SeqCst);
        // A script stuck in a loop would keep its worker thread from exiting.
        for r in self.scripts.running.lock().iter() {
            r.kill.store(true, Ordering::Relaxed);
        }
        for c in self.clients.snapshot() {
            c.kill();
        }
    }
}

impl Server {
    /// Builds the shared state for `config`, with an empty keyspace (start-up then loads
    /// the data directory into it) and no listener yet (`net::start` serves them).
    pub fn new(config: Config) -> Arc<Server> {
        let values = config.get();
        let mut threads = values.threads as usize;
        if threads == 0 {
            threads = std::thread::available_parallelism()
                .map(|n| n.get())
                .unwrap_or(1);
        }
        let shards = (values.shards as usize).next_power_of_two();
        let databases = values.databases as usize;
        let balanced = values.worker_placement == crate::config::WorkerPlacement::Balanced;
        let pubsub_all = values.acl_pubsub_default == crate::config::AclPubsubDefault::Allchannels;
        drop(values);
        let table = Table::new(commands::FAMILIES);
        let acl = crate::services::acl::Acl::new(&table, pubsub_all);
        let server = Arc::new(Server {
            loading: AtomicBool::new(true),
            keyspace: Keyspace::new(databases, shards.trailing_zeros()),
            config,
            table,
            clients: Registry::default(),
            stats: Stats::default(),
            started: Instant::now(),
            run_id: run_id(),
            threads,
            balance: crate::net::balance::Balance::new(threads, balanced),
            listeners: Default::default(),
            last_save: AtomicU64::new(Server::now_unix()),
            shutting_down: AtomicBool::new(false),
            memory: Default::default(),
            evict: Default::default(),
            tier: Default::default(),
            ops_per_sec: AtomicU64::new(0),
            active_expire: AtomicBool::new(true),
            debug: Default::default(),
            clock: Clock::new(),
            pubsub: Default::default(),
            slowlog: Default::default(),
            blocking: Default::default(),
            notify_flags: AtomicU32::new(0),
            watches: Default::default(),
            tracking: Default::default(),
            monitors: Default::default(),
            latency: Default::default(),
            pause: Default::default(),
            shutdown: Default::default(),
            persist: Default::default(),
            sinks: Default::default(),
            me: Default::default(),
            scripts: Default::default(),
            acl,
            migrations: Default::default(),
            tls: Default::default(),
            repl: Default::default(),
            workers: Default::default(),
        });
        let _ = server.me.set(Arc::downgrade(&server));
        server.apply_config();
        // Keys removed by lazy or active expiry publish `expired` events.
        let weak = Arc::downgrade(&server);
        server
            .keyspace
            .set_expired_hook(Box::new(move |db: usize, key: &[u8]| {
                if let Some(s) = weak.upgrade() {
                    s.removed_by_server(db, key, "expired", false);
                }
            }));
        // Keys created while `new` events are asked for publish them.
        let weak = Arc::downgrade(&server);
        server
            .keyspace
            .set_created_hook(Box::new(move |db: usize, key: &[u8]| {
                let Some(s) = weak.upgrade() else { return };
                let flags = s.notify_flags.load(Ordering::Relaxed);
                if flags & crate::services::notify::NEW != 0 {
                    crate::services::notify::emit(&s.pubsub, flags, "new", key, db, None);
                }
            }));
        server
    }
}

/// The background cycle, `hz` times a second: active expiry, snapshots that start by
/// themselves, the tracking table's limit, idle-client timeouts, the ops/sec sample, and
/// the shutdown check.
pub(crate) fn cron(server: &Arc<Server>) {
    let mut last = (Instant::now(), 0u64);
    while !server.shutting_down.load(Ordering::SeqCst) {
        let hz = u64::from(server.config.get().hz.clamp(1, 500));
        let period = Duration::from_millis(1000 / hz);
        if server.debug.pause_cron.load(Ordering::Relaxed) {
            std::thread::sleep(period);
            continue;
        }
        // A replica's keys expire when its primary's DELs arrive; those its own clients
        // wrote, here (both only while active expiry is on, as in Redis).
        if server.active_expire.load(Ordering::Relaxed) {
            crate::services::replication::own_keys::expire(server);
        }
        if server.active_expire.load(Ordering::Relaxed) && !server.repl.is_replica() {
            // Redis lets its slow expire cycle use up to 25% of each period (more at a
            // higher active-expire-effort).
            let started = Instant::now();
            let effort = server.config.get().active_expire_effort;
            let budget = period * strata_engine::expire_cycle_percent(effort) / 100;
            server.keyspace.active_expire_cycle(budget, effort);
            server.keyspace.cold_expire_step();
            let ms = started.elapsed().as_millis() as u64;
            server.latency.observe("expire-cycle", ms);
        }
        server.memory.sample();
        // Save rules and automatic rewrites, each tick as Redis's serverCron checks them:
        // a journal written at full speed grows by a hundred MB a second.
        crate::services::snapshot::cron(server);
        if server.tracking.active() {
            // Keys the cycle expired under BCAST prefixes go out now.
            server.tracking.broadcast(None);
            server.tracking.enforce_limit(None);
        }
        if last.0.elapsed() >= Duration::from_secs(1) {
            server.clock.sync();
            let total: u64 = server
                .stats
                .command_totals(server.table.commands.len())
                .iter()
                .map(|t| t.calls)
                .sum();
            let rate = total.saturating_sub(last.1) as f64 / last.0.elapsed().as_secs_f64();
            server.ops_per_sec.store(rate as u64, Ordering::Relaxed);
            last = (Instant::now(), total);
            crate::net::clients::cron(server);
            server.migrations.close_idle();
            crate::services::replication::cron(server);
        }
        std::thread::sleep(period);
    }
}

fn run_id() -> String {
    let mut x =
        (Server::now_unix() ^ std::process::id() as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    let mut s = String::with_capacity(40);
    for _ in 0..40 {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        s.push(char::from_digit((x % 16) as u32, 16).unwrap_or('0'));
    }
    s
}
