//! Start-up: bind the listeners, build the server, load the data directory, start the
//! worker threads and the background cycle, and serve until SHUTDOWN.

use crate::config::Config;
use crate::net::conn;
use crate::net::listen::Listener;
use crate::net::workers::{worker, WORKER_THREAD};
use crate::server::Server;
use crate::services::stats::ThreadStats;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use tokio::sync::mpsc;

/// Start-up choices that are not configuration directives.
#[derive(Debug, Clone, Default)]
pub struct StartOptions {
    /// `--rdb-import FILE`: an RDB file loaded after the data directory (which must hold
    /// no data), then made durable by a snapshot (`rdb::tools::import_at_start`).
    pub rdb_import: Option<std::path::PathBuf>,
}

/// Binds the listeners, starts the worker threads and serves until SHUTDOWN.
/// Returns once the server has stopped.
pub fn run(config: Config, opts: StartOptions) -> std::io::Result<()> {
    let (server, listeners) = start(config, &opts)?;
    crate::services::supervise::ready(server.repl.is_replica());
    for l in &listeners {
        tracing::info!(
            "Ready to accept connections on {}{} with {} worker threads",
            l.addr,
            if l.tls { " (tls)" } else { "" },
            server.threads
        );
    }
    serve(server, listeners)
}

/// Binds, builds the shared state and loads the data directory, without serving yet.
pub fn start(config: Config, opts: &StartOptions) -> std::io::Result<(Arc<Server>, Vec<Listener>)> {
    let listeners = crate::net::listen::bind(&config)?;
    let server = Server::new(config);
    crate::services::supervise::begin(&server.config);
    if let Some(unix) = crate::net::unix::bind(&server)? {
        server.listeners.set_unix(unix);
    }
    pidfile(&server, true);
    crate::services::acl::file::load_at_start(&server).map_err(std::io::Error::other)?;
    // Certificates and keys are read now, so a bad one stops the start with its reason.
    crate::net::tls::reload(&server)
        .map_err(|e| std::io::Error::other(format!("TLS configuration: {e}")))?;
    // Signals are watched from here on, so one that arrives while loading is handled.
    crate::net::signals::watch(&server)?;
    if let Some(tier) =
        crate::services::tiering::open_at_start(&server).map_err(std::io::Error::other)?
    {
        let _ = server.tier.set(tier);
    }
    // Redis's used_memory_startup: what the server takes before any data loads, so that
    // used_memory_dataset after a restart is the data set, not 0.
    server
        .memory
        .startup
        .store(server.memory.sample(), Ordering::Relaxed);
    // A data directory Strata never wrote to may hold a Redis RDB file at
    // `dir`/`dbfilename` (Redis's own data file, copied there): it is loaded, as Redis
    // loads it at start. Once Strata has a snapshot or a journal there, they hold the data.
    let fresh = {
        let dir = server.data_dir();
        strata_storage::latest_snapshot(&dir)
            .ok()
            .flatten()
            .is_none()
            && strata_storage::list_segments(&dir).map_or(true, |s| s.is_empty())
    };
    crate::services::persist::open(&server).map_err(std::io::Error::other)?;
    if let Some(tier) = server.tier.get() {
        // Only the start's own load adopts a kept store's entries (not DEBUG RELOAD's).
        tier.watch.kept.store(false, Ordering::Relaxed);
    }
    let redis_rdb = || {
        fresh
            .then(|| crate::rdb::tools::rdb_in_dir(&server))
            .flatten()
    };
    if let Some(path) = opts.rdb_import.clone().or_else(redis_rdb) {
        crate::rdb::tools::import_at_start(&server, &path).map_err(|e| {
            // Redis's words, which its tests and operators' scripts look for.
            tracing::warn!("{e}");
            tracing::warn!("Terminating server after rdb file reading failure.");
            std::io::Error::other(e)
        })?;
    }
    crate::services::replication::load_at_start(&server);
    crate::services::snapshot::expire_at_start(&server);
    // Loading spills every so many keys: what the last ones brought over goes now, before
    // any client is served.
    crate::services::tiering::spill_while_loading(&server);
    server.loading.store(false, Ordering::SeqCst);
    Ok((server, listeners))
}

/// Serves on already-bound listeners until SHUTDOWN.
pub fn serve(server: Arc<Server>, listeners: Vec<Listener>) -> std::io::Result<()> {
    let mut workers = Vec::new();
    let mut senders = Vec::new();
    let mut queues = Vec::new();
    for _ in 0..server.threads {
        let (tx, rx) = mpsc::unbounded_channel::<conn::Incoming>();
        senders.push(tx);
        queues.push(rx);
    }
    let _ = server.workers.set(senders);
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
    // Follows `replicaof`, now that the link has a worker to run on.
    crate::services::replication::start(&server);
    let background = {
        let server = server.clone();
        std::thread::Builder::new()
            .name("strata-cron".into())
            .spawn(move || crate::server::cron(&server))?
    };
    server.listeners.serve(&server, listeners)?;
    background.join().ok();
    for w in workers {
        w.join().ok();
    }
    let journal = server.persist.journal().is_some();
    server.persist.close();
    if let Some(tier) = server.tier.get() {
        strata_tier::kept::at_exit(&crate::services::tiering::kept_origin(&server), tier);
    }
    // No command runs any more: the replication offset is exactly that of the data.
    crate::services::replication::save_at_shutdown(&server, journal);
    pidfile(&server, false);
    crate::net::unix::remove(&server);
    tracing::info!("Strata is now ready to exit, bye bye...");
    Ok(())
}

/// `pidfile`, as Redis keeps it: written with the process id before the data loads,
/// removed on a clean exit. A file that cannot be written is logged, not fatal.
fn pidfile(server: &Server, at_start: bool) {
    let path = server.config.get().pidfile.clone();
    if path.is_empty() {
        return;
    }
    if at_start {
        if let Err(e) = std::fs::write(&path, format!("{}\n", std::process::id())) {
            tracing::warn!("Failed to write PID file {path}: {e}");
        }
    } else if let Err(e) = std::fs::remove_file(&path) {
        tracing::warn!("Failed to remove PID file {path}: {e}");
    }
}
