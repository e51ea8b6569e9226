//! The server: shared state, start-up, worker threads and the background cycle.

use crate::commands;
use crate::config::Config;
use crate::exec::client::Registry;
use crate::exec::table::Table;
use crate::net::conn;
use crate::services::stats::{Stats, ThreadStats};
use crate::tick::Tick;
use std::net::{SocketAddr, TcpListener};
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
    /// Addresses actually bound (port 0 resolves to the port the OS chose).
    pub listen: Vec<SocketAddr>,
    /// Unix seconds of the last successful save (the start time until persistence lands).
    pub last_save: AtomicU64,
    pub shutting_down: AtomicBool,
    /// Peak and start-up memory (INFO, MEMORY STATS).
    pub memory: crate::services::memory::Memory,
    /// maxmemory: the eviction settings, pool and counters.
    pub evict: crate::services::evict::Evictor,
    /// Commands per second over the last second, sampled by the background cycle.
    pub ops_per_sec: AtomicU64,
    /// DEBUG SET-ACTIVE-EXPIRE: tests turn the active cycle off to observe lazy expiry.
    pub active_expire: AtomicBool,
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
    /// The journal and snapshots.
    pub persist: crate::services::persist::Persist,
    /// Where the effects of writes go (the journal; a replication backlog).
    pub sinks: crate::exec::sink::Sinks,
    /// Script bodies, function libraries and running scripts.
    pub scripts: crate::services::scripting::Scripts,
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
    /// shard lock: WATCH sees it modified, the effect sinks record a DEL (UNLINK if `lazy`)
    /// so that a replay or a replica removes it too, and the keyspace event goes out.
    pub fn removed_by_server(&self, db: usize, key: &[u8], event: &str, lazy: bool) {
        use crate::services::notify;
        self.watches.touch(db, key);
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

/// Binds the listeners, starts the worker threads and serves until SHUTDOWN.
/// Returns once the server has stopped.
pub fn run(config: Config) -> std::io::Result<()> {
    let (server, listeners) = start(config)?;
    for addr in &server.listen {
        tracing::info!(
            "Ready to accept connections on {addr} with {} worker threads",
            server.threads
        );
    }
    serve(server, listeners)
}

/// Binds and builds the shared state without serving yet.
pub fn start(config: Config) -> std::io::Result<(Arc<Server>, Vec<TcpListener>)> {
    let values = config.get();
    let port = values.port;
    let mut listeners = Vec::new();
    let mut listen = Vec::new();
    for host in values.bind.0.iter().map(String::as_str) {
        // Redis's "-" prefix means "optional": skip it if the address is unavailable.
        let (optional, host) = match host.strip_prefix('-') {
            Some(h) => (true, h),
            None => (false, host),
        };
        let addr = if host.contains(':') {
            format!("[{host}]:{port}")
        } else {
            format!("{host}:{port}")
        };
        match TcpListener::bind(&addr) {
            Ok(l) => {
                listen.push(l.local_addr()?);
                listeners.push(l);
            }
            Err(e) if optional => tracing::warn!("skipping optional bind address {addr}: {e}"),
            Err(e) => {
                return Err(std::io::Error::new(
                    e.kind(),
                    format!("could not bind {addr}: {e}"),
                ))
            }
        }
    }
    if listeners.is_empty() {
        return Err(std::io::Error::other("no address to listen on"));
    }
    let mut threads = values.threads as usize;
    if threads == 0 {
        threads = std::thread::available_parallelism()
            .map(|n| n.get())
            .unwrap_or(1);
    }
    let shards = (values.shards as usize).next_power_of_two();
    let databases = values.databases as usize;
    drop(values);
    let table = Table::new(commands::FAMILIES);
    let server = Arc::new(Server {
        keyspace: Keyspace::new(databases, shards.trailing_zeros()),
        config,
        table,
        clients: Registry::default(),
        stats: Stats::default(),
        started: Instant::now(),
        run_id: run_id(),
        threads,
        listen,
        last_save: AtomicU64::new(Server::now_unix()),
        shutting_down: AtomicBool::new(false),
        memory: Default::default(),
        evict: Default::default(),
        ops_per_sec: AtomicU64::new(0),
        active_expire: AtomicBool::new(true),
        clock: Clock::new(),
        pubsub: Default::default(),
        slowlog: Default::default(),
        blocking: Default::default(),
        notify_flags: AtomicU32::new(0),
        watches: Default::default(),
        persist: Default::default(),
        sinks: Default::default(),
        me: Default::default(),
        scripts: Default::default(),
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
    crate::services::persist::open(&server).map_err(std::io::Error::other)?;
    server
        .memory
        .startup
        .store(server.memory.sample(), Ordering::Relaxed);
    Ok((server, listeners))
}

/// Serves on already-bound listeners until SHUTDOWN.
pub fn serve(server: Arc<Server>, listeners: Vec<TcpListener>) -> std::io::Result<()> {
    let mut workers = Vec::new();
    let mut senders = Vec::new();
    let mut queues = Vec::new();
    for _ in 0..server.threads {
        let (tx, rx) = mpsc::unbounded_channel::<conn::Incoming>();
        senders.push(tx);
        queues.push(rx);
    }
    let _ = server.workers.set(senders.clone());
    for (i, rx) in queues.into_iter().enumerate() {
        let server = server.clone();
        let stats = Arc::new(ThreadStats::new(server.table.commands.len()));
        server.stats.register(stats.clone());
        workers.push(
            std::thread::Builder::new()
                .name(format!("{WORKER_THREAD}-{i}"))
                .spawn(move || worker(server, stats, rx, i))?,
        );
    }
    let background = {
        let server = server.clone();
        std::thread::Builder::new()
            .name("strata-cron".into())
            .spawn(move || cron(&server))?
    };
    for listener in listeners {
        let server = server.clone();
        let senders = senders.clone();
        std::thread::Builder::new()
            .name("strata-accept".into())
            .spawn(move || accept_loop(&server, listener, &senders))?;
    }
    drop(senders);
    {
        let server = server.clone();
        std::thread::Builder::new()
            .name("strata-signals".into())
            .spawn(move || watch_signals(server))?;
    }
    background.join().ok();
    for w in workers {
        w.join().ok();
    }
    server.persist.close();
    tracing::info!("Strata is now ready to exit, bye bye...");
    Ok(())
}

fn accept_loop(
    server: &Arc<Server>,
    listener: TcpListener,
    workers: &[mpsc::UnboundedSender<conn::Incoming>],
) {
    let mut next = 0usize;
    loop {
        let stream = match listener.accept() {
            Ok((s, _)) => s,
            Err(e) => {
                if server.shutting_down.load(Ordering::SeqCst) {
                    return;
                }
                // EMFILE and friends: back off instead of spinning.
                tracing::warn!("accept failed: {e}");
                std::thread::sleep(Duration::from_millis(10));
                continue;
            }
        };
        if server.shutting_down.load(Ordering::SeqCst) {
            return;
        }
        server
            .stats
            .connections_received
            .fetch_add(1, Ordering::Relaxed);
        if workers[next % workers.len()]
            .send(conn::Incoming::New(stream))
            .is_err()
        {
            return;
        }
        next = next.wrapping_add(1);
    }
}

/// Worker threads are named WORKER_THREAD-N (`stranded` finds them by it).
pub const WORKER_THREAD: &str = "strata-worker";

fn worker(
    server: Arc<Server>,
    stats: Arc<ThreadStats>,
    mut rx: mpsc::UnboundedReceiver<conn::Incoming>,
    me: usize,
) {
    if server.config.get().worker_sched == crate::config::WorkerSched::Batch {
        if let Err(e) = crate::net::sched::set_current(crate::net::sched::Policy::Batch) {
            tracing::warn!("worker thread stays SCHED_OTHER: SCHED_BATCH refused: {e}");
        }
    }
    let leader = server.clone();
    #[cfg(target_os = "linux")]
    let workers = server.threads;
    let rt = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        // Before the loop sleeps, the writes it just journalled are written and (under
        // `always`) fsynced on this thread, as Redis does in beforeSleep: no hand-off to the
        // journal thread and back for each batch.
        // Then, if a running snapshot's own thread is starved, it captures a chunk of it;
        // and another worker waiting for this CPU gets it (`stranded::end_of_turn`).
        .on_thread_park(move || {
            if let Some(j) = leader.persist.journal() {
                j.flush_pending();
            }
            crate::services::snapshot::help(&leader);
            crate::net::turn::ended();
            #[cfg(target_os = "linux")]
            crate::net::stranded::end_of_turn(workers);
        })
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            tracing::error!("cannot start a worker event loop: {e}");
            server.stop();
            return;
        }
    };
    let local = tokio::task::LocalSet::new();
    local.block_on(&rt, async move {
        loop {
            tokio::select! {
                s = rx.recv() => match s {
                    Some(s) => { tokio::task::spawn_local(conn::serve(server.clone(), stats.clone(), s, me)); }
                    None => break,
                },
                _ = tokio::time::sleep(Duration::from_millis(100)) => {
                    if server.shutting_down.load(Ordering::SeqCst) { break; }
                }
            }
        }
    });
}

/// The background cycle, `hz` times a second: active expiry, idle-client timeouts, the
/// ops/sec sample, and the shutdown check.
fn cron(server: &Arc<Server>) {
    let mut last = (Instant::now(), 0u64);
    while !server.shutting_down.load(Ordering::SeqCst) {
        let hz = u64::from(server.config.get().hz.clamp(1, 500));
        let period = Duration::from_millis(1000 / hz);
        if server.active_expire.load(Ordering::Relaxed) {
            // Redis lets its slow expire cycle use up to 25% of each period.
            server.keyspace.active_expire_cycle(period / 4);
        }
        server.memory.sample();
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
            close_idle_clients(server);
            crate::services::snapshot::cron(server);
        }
        std::thread::sleep(period);
    }
}

/// `timeout N`: closes clients idle for longer than N seconds.
fn close_idle_clients(server: &Server) {
    let timeout = server.config.get().timeout;
    if timeout == 0 {
        return;
    }
    for c in server.clients.snapshot() {
        if c.idle_secs() > timeout {
            c.kill();
        }
    }
}

/// SIGTERM and SIGINT stop the server cleanly, as redis-server does.
fn watch_signals(server: Arc<Server>) {
    let Ok(rt) = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    else {
        return;
    };
    rt.block_on(async {
        use tokio::signal::unix::{signal, SignalKind};
        let (Ok(mut term), Ok(mut int)) = (
            signal(SignalKind::terminate()),
            signal(SignalKind::interrupt()),
        ) else {
            return;
        };
        tokio::select! {
            _ = term.recv() => tracing::warn!("Received SIGTERM scheduling shutdown..."),
            _ = int.recv() => tracing::warn!("Received SIGINT scheduling shutdown..."),
        }
        if let Err(e) = crate::services::snapshot::on_shutdown(&server, false) {
            tracing::warn!("shutdown snapshot failed: {e}");
        }
        server.stop();
    });
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
