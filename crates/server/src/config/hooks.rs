//! What a change of configuration does beyond storing the value: pushing it into the
//! component that reads it on its own (the engine's encoding thresholds, the journal, the
//! pub/sub limits...). Directives read where they are used (`hz`,
//! `maxclients`...) need no hook. Hooks run once at start and after a CONFIG SET, each at
//! most once per change however many of its directives changed.

use crate::server::Server;
use std::sync::atomic::Ordering;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Hook {
    /// The listpack/intset thresholds the engine checks as collections grow.
    Encodings,
    /// The flags the keyspace-notification fast path reads.
    Notify,
    /// When a running script makes other clients get -BUSY.
    ScriptTimeout,
    /// When worker threads help a starved background snapshot.
    SnapshotHelp,
    /// The journal's fsync policy.
    Fsync,
    /// The pub/sub clients' output buffer limits.
    PubsubLimit,
    /// The slow log's threshold and length.
    Slowlog,
    /// Turning the journal on or off (at start the data directory opens it).
    Appendonly,
    /// The default user's password.
    Requirepass,
    /// The replication backlog's size and the min-replicas-to-write rule.
    Replication,
    /// The client-side caching table's key limit.
    Tracking,
    /// The latency monitor's threshold, and whether commands' latency histograms are kept.
    Latency,
    /// maxmemory and its policy: the evictor's settings and what accesses stamp (LRU
    /// clocks or LFU counters).
    Maxmemory,
    /// Rebuilding the TLS configuration (certificates, CAs, protocols...). This one and
    /// the listeners' can fail; CONFIG SET then puts the old values back.
    Tls,
    /// Listening on the addresses `bind` names (`net::listeners`).
    Bind,
    /// Listening on `port` and `tls-port` (TLS configured first if it was off, as Redis).
    Port,
    /// The process's OOM score (`services::oom`).
    OomScoreAdj,
    /// A lower `maxmemory-clients` evicts clients at once, as Redis does before the next
    /// command (not at the next once-a-second pass).
    ClientEviction,
}

impl Hook {
    /// Runs the hook; Err (with the text CONFIG SET answers) only from `Tls`, `Bind`,
    /// `Port` and `OomScoreAdj`.
    pub fn run(self, server: &Server) -> Result<(), String> {
        let c = server.config.get();
        match self {
            Hook::Encodings => {
                let e = &server.keyspace.encodings;
                let store = |a: &std::sync::atomic::AtomicUsize, v: u64| {
                    a.store(v as usize, Ordering::Relaxed)
                };
                store(&e.hash_max_listpack_entries, c.hash_max_listpack_entries);
                store(&e.hash_max_listpack_value, c.hash_max_listpack_value);
                store(&e.set_max_intset_entries, c.set_max_intset_entries);
                store(&e.zset_max_listpack_entries, c.zset_max_listpack_entries);
                store(&e.zset_max_listpack_value, c.zset_max_listpack_value);
                e.list_max_listpack_size
                    .store(i64::from(c.list_max_listpack_size), Ordering::Relaxed);
                e.stream_node_max_bytes
                    .store(c.stream_node_max_bytes, Ordering::Relaxed);
                e.stream_node_max_entries
                    .store(c.stream_node_max_entries as u64, Ordering::Relaxed);
            }
            Hook::Notify => {
                let flags = crate::services::notify::effective(c.notify_keyspace_events.0);
                server.notify_flags.store(flags, Ordering::Relaxed);
                // `new` events need the engine to say which stores create keys.
                server
                    .keyspace
                    .announce_created(flags & crate::services::notify::NEW != 0);
            }
            Hook::ScriptTimeout => server
                .scripts
                .busy_threshold_ms
                .store(c.busy_reply_threshold, Ordering::Relaxed),
            Hook::SnapshotHelp => server
                .persist
                .snapshots
                .help_after_ms
                .store(c.snapshot_help_after_ms, Ordering::Relaxed),
            Hook::Fsync => {
                if let Some(j) = server.persist.journal() {
                    j.set_fsync(crate::services::persist::fsync_policy(c.appendfsync));
                }
            }
            Hook::PubsubLimit => server
                .pubsub
                .set_limit(c.client_output_buffer_limit.pubsub()),
            Hook::Slowlog => server
                .slowlog
                .configure(c.slowlog_log_slower_than, c.slowlog_max_len as usize),
            Hook::Requirepass => {
                let env = crate::services::acl::env(server);
                server
                    .acl
                    .set_default_password(&env, c.requirepass.as_bytes());
            }
            Hook::Replication => crate::services::replication::configure(server),
            Hook::OomScoreAdj => crate::services::oom::apply(server)?,
            Hook::ClientEviction => crate::net::clients::evict_if_over(server),
            Hook::Tracking => server.tracking.set_max_keys(c.tracking_table_max_keys),
            Hook::Latency => {
                server
                    .latency
                    .set_threshold(c.latency_monitor_threshold.max(0) as u64);
                server
                    .stats
                    .latency_tracking
                    .store(c.latency_tracking, Ordering::Relaxed);
            }
            Hook::Tls => {
                // Start-up builds it once everything is read (`net::start`), and fails there.
                if !server.loading.load(Ordering::SeqCst) {
                    crate::net::tls::reload(server)
                        .map_err(|_| crate::net::tls::UPDATE_FAILED.to_string())?;
                }
            }
            // Start-up binds the listeners itself (`net::start`).
            Hook::Bind | Hook::Port if server.loading.load(Ordering::SeqCst) => {}
            Hook::Bind => {
                if let Some(s) = server.arc() {
                    crate::net::listeners::rebind(&s)
                        .map_err(|_| "Failed to bind to specified addresses.".to_string())?;
                }
            }
            Hook::Port => {
                if c.tls_port != 0 && !server.tls.serving() {
                    crate::net::tls::reload(server)
                        .map_err(|_| crate::net::tls::UPDATE_FAILED.to_string())?;
                }
                if let Some(s) = server.arc() {
                    crate::net::listeners::rebind(&s).map_err(|_| {
                        "Unable to listen on this port. Check server logs.".to_string()
                    })?;
                }
            }
            Hook::Appendonly => {
                // Before start-up has opened the data directory there is nothing to switch.
                if server.loading.load(Ordering::SeqCst) {
                    return Ok(());
                }
                let on = c.appendonly;
                if on != server.persist.journal().is_some() {
                    if let Some(s) = server.arc() {
                        crate::services::persist::switch_journal(&s, on);
                    }
                }
            }
            Hook::Maxmemory => {
                // A `maxmemory-clients` given in percent of it went down with it.
                crate::net::clients::evict_if_over(server);
                let access = server.keyspace.access();
                access.set_lfu(c.maxmemory_policy.is_lfu());
                access.set_lfu_params(
                    c.lfu_log_factor,
                    c.lfu_decay_time.min(u32::MAX as u64) as u32,
                );
                server.evict.configure(
                    c.maxmemory,
                    c.maxmemory_policy,
                    c.maxmemory_samples,
                    c.maxmemory_eviction_tenacity,
                    c.lazyfree_lazy_eviction,
                );
                // What the limit bounds: with tiering the hot entries' bytes, of which
                // there are none before the start opens the tier.
                let tiering = c.tiering;
                let used = match server.tier.get() {
                    None if tiering => 0,
                    _ => crate::services::evict::Evictor::counted(server),
                };
                if c.maxmemory != 0 && used > c.maxmemory {
                    if tiering {
                        tracing::warn!(
                            "maxmemory {} is below the hot entries' bytes ({used}): entries will move to the tier",
                            c.maxmemory
                        );
                    } else {
                        tracing::warn!(
                            "maxmemory {} is below the memory in use ({used} bytes): keys will be evicted per maxmemory-policy {}, or writes refused",
                            c.maxmemory,
                            c.maxmemory_policy
                        );
                    }
                    server.evict.start_background(server);
                }
            }
        }
        Ok(())
    }
}

/// Runs each hook in `hooks` once; stops at the first that fails, returning it.
pub fn run(server: &Server, hooks: impl IntoIterator<Item = Hook>) -> Result<(), (Hook, String)> {
    let mut done: Vec<Hook> = Vec::new();
    for h in hooks {
        if !done.contains(&h) {
            h.run(server).map_err(|e| (h, e))?;
            done.push(h);
        }
    }
    Ok(())
}

/// Runs every hook (at start, before the directives that can fail are checked: see
/// `Hook::Tls`).
pub fn run_all(server: &Server) {
    let _ = run(server, super::DIRECTIVES.iter().filter_map(|d| d.hook));
}
