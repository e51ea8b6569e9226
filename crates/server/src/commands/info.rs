//! INFO: Redis 7.0's sections and field names, so tools that parse INFO (redis-cli --stat,
//! monitoring exporters, client libraries) read Strata unchanged.

use crate::server::Server;
use crate::services::pubsub::Space;
use std::fmt::Write;
use std::sync::atomic::Ordering;

/// The Redis version whose behaviour Strata follows; clients gate features on it.
pub const REDIS_VERSION: &str = "7.0.15";

const DEFAULT: &[&str] = &[
    "server",
    "clients",
    "memory",
    "persistence",
    "stats",
    "replication",
    "cpu",
    "modules",
    "errorstats",
    "cluster",
    "keyspace",
];

/// Builds the INFO text for the requested sections (none = "default").
pub fn render(server: &Server, requested: &[String]) -> String {
    let mut wanted: Vec<&str> = Vec::new();
    let requested: Vec<String> = requested.iter().map(|s| s.to_ascii_lowercase()).collect();
    if requested.is_empty() {
        wanted.extend(DEFAULT);
    }
    for r in &requested {
        match r.as_str() {
            "default" => wanted.extend(DEFAULT),
            "all" | "everything" => {
                wanted.extend(DEFAULT);
                wanted.push("commandstats");
                wanted.push("latencystats");
                wanted.push("tiering");
            }
            s => wanted.push(s),
        }
    }
    let mut out = String::new();
    let mut seen = Vec::new();
    for name in wanted {
        if seen.contains(&name) {
            continue;
        }
        seen.push(name);
        let body = match section(server, name) {
            Some(b) => b,
            None => continue,
        };
        if !out.is_empty() {
            out.push_str("\r\n");
        }
        out.push_str(&body);
    }
    out
}

fn section(server: &Server, name: &str) -> Option<String> {
    let mut s = String::new();
    match name {
        "server" => server_section(server, &mut s),
        "clients" => {
            s.push_str("# Clients\r\n");
            // As Redis counts them: replicas' connections are not clients here.
            let replicas = server.repl.peers().len();
            let clients = server.clients.connected().saturating_sub(replicas);
            field(&mut s, "connected_clients", clients);
            field(&mut s, "cluster_connections", 0);
            field(&mut s, "maxclients", server.config.get().maxclients);
            let (input, output) = server.clients.mem.recent_max();
            field(&mut s, "client_recent_max_input_buffer", input);
            field(&mut s, "client_recent_max_output_buffer", output);
            field(
                &mut s,
                "blocked_clients",
                server.blocking.all() + server.pause.waiting(),
            );
            field(&mut s, "tracking_clients", server.tracking.counts().0);
            field(&mut s, "clients_in_timeout_table", 0);
        }
        "memory" => memory_section(server, &mut s),
        "persistence" => {
            s.push_str("# Persistence\r\n");
            let p = &server.persist;
            let snap = &p.snapshots;
            let flag = |b: bool| if b { "1" } else { "0" }.to_string();
            let status = |ok: bool| if ok { "ok" } else { "err" }.to_string();
            let running = snap.in_progress();
            let since =
                Server::now_unix().saturating_sub(snap.started_unix.load(Ordering::Relaxed));
            let mut fields = vec![
                ("loading", flag(server.loading.load(Ordering::Relaxed))),
                ("async_loading", "0".into()),
                (
                    "rdb_changes_since_last_save",
                    p.dirty(&server.stats).to_string(),
                ),
                ("rdb_bgsave_in_progress", flag(running)),
                (
                    "rdb_last_save_time",
                    server.last_save.load(Ordering::Relaxed).to_string(),
                ),
                (
                    "rdb_last_bgsave_status",
                    status(!snap.last_failed.load(Ordering::Relaxed)),
                ),
                (
                    "rdb_last_bgsave_time_sec",
                    snap.last_secs.load(Ordering::Relaxed).to_string(),
                ),
                (
                    "rdb_current_bgsave_time_sec",
                    if running {
                        since.to_string()
                    } else {
                        "-1".into()
                    },
                ),
                (
                    "rdb_last_load_keys_expired",
                    p.load_keys_expired.load(Ordering::Relaxed).to_string(),
                ),
                (
                    "rdb_last_load_keys_loaded",
                    p.load_keys_loaded.load(Ordering::Relaxed).to_string(),
                ),
                (
                    "aof_rewrite_in_progress",
                    flag(snap.rewriting.load(Ordering::Relaxed) || p.switching()),
                ),
                (
                    "aof_last_bgrewrite_status",
                    status(snap.rewrite_failures.load(Ordering::Relaxed) == 0),
                ),
            ];
            fields.extend(p.aof_fields());
            let loaded = p.loaded.lock().clone();
            fields.push(("loading_loaded_records", loaded.blocks.to_string()));
            fields.push(("loading_time_ms", loaded.millis.to_string()));
            fields.push((
                "snapshot_chunks_by_workers",
                snap.chunks_by_workers().to_string(),
            ));
            for (k, v) in fields {
                field(&mut s, k, v);
            }
        }
        "stats" => stats_section(server, &mut s),
        "replication" => {
            s.push_str("# Replication\r\n");
            crate::services::replication::info_section(server, &mut s);
        }
        "cpu" => {
            s.push_str("# CPU\r\n");
            let (user, sys) = cpu_seconds();
            field(&mut s, "used_cpu_sys", format!("{sys:.6}"));
            field(&mut s, "used_cpu_user", format!("{user:.6}"));
            field(&mut s, "used_cpu_sys_children", "0.000000");
            field(&mut s, "used_cpu_user_children", "0.000000");
        }
        "modules" => s.push_str("# Modules\r\n"),
        "errorstats" => {
            s.push_str("# Errorstats\r\n");
            for (code, n) in server.stats.errors() {
                field(&mut s, &format!("errorstat_{code}"), format!("count={n}"));
            }
        }
        "tiering" => {
            s.push_str("# Tiering\r\n");
            crate::services::tiering::info(server, &mut s);
        }
        "cluster" => {
            s.push_str("# Cluster\r\n");
            field(&mut s, "cluster_enabled", 0);
        }
        "keyspace" => {
            s.push_str("# Keyspace\r\n");
            for i in 0..server.keyspace.db_count() {
                let db = server.keyspace.db(i);
                let keys = db.len();
                if keys > 0 {
                    field(
                        &mut s,
                        &format!("db{i}"),
                        format!("keys={keys},expires={},avg_ttl=0", db.volatile_len()),
                    );
                }
            }
        }
        "commandstats" => {
            s.push_str("# Commandstats\r\n");
            let totals = server.stats.command_totals(server.table.commands.len());
            for (id, t) in totals.iter().enumerate() {
                if t.calls == 0 && t.rejected == 0 && t.failed == 0 {
                    continue;
                }
                let per_call = if t.calls > 0 {
                    t.usec as f64 / t.calls as f64
                } else {
                    0.0
                };
                field(
                    &mut s,
                    &format!("cmdstat_{}", server.table.fullnames[id]),
                    format!(
                        "calls={},usec={},usec_per_call={per_call:.2},rejected_calls={},failed_calls={}",
                        t.calls, t.usec, t.rejected, t.failed
                    ),
                );
            }
        }
        "latencystats" => {
            s.push_str("# Latencystats\r\n");
            latencystats(server, &mut s);
        }
        _ => return None,
    }
    Some(s)
}

/// `latency_percentiles_usec_<command>:p50=..,p99=..` for each command with runs in its
/// histogram, at the percentiles `latency-tracking-info-percentiles` names; nothing while
/// `latency-tracking` is off, as Redis.
fn latencystats(server: &Server, s: &mut String) {
    let config = server.config.get();
    if !config.latency_tracking {
        return;
    }
    let percentiles = &config.latency_tracking_info_percentiles.0;
    for (id, name) in server.table.fullnames.iter().enumerate() {
        let h = server.stats.latency_histogram(id);
        if h.iter().all(|&n| n == 0) {
            continue;
        }
        let values: Vec<String> = percentiles
            .iter()
            .map(|&p| {
                let v = crate::services::stats::latency_percentile_usec(&h, p);
                format!("p{p}={v:.3}")
            })
            .collect();
        field(
            s,
            &format!("latency_percentiles_usec_{name}"),
            values.join(","),
        );
    }
}

fn field(s: &mut String, k: &str, v: impl std::fmt::Display) {
    let _ = write!(s, "{k}:{v}\r\n");
}

fn server_section(server: &Server, s: &mut String) {
    let uptime = server.started.elapsed().as_secs();
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default();
    s.push_str("# Server\r\n");
    field(s, "redis_version", REDIS_VERSION);
    field(s, "strata_version", env!("CARGO_PKG_VERSION"));
    field(s, "redis_git_sha1", "00000000");
    field(s, "redis_git_dirty", 0);
    field(s, "redis_mode", "standalone");
    field(
        s,
        "os",
        format!("{} {}", std::env::consts::OS, std::env::consts::ARCH),
    );
    field(s, "arch_bits", usize::BITS);
    field(s, "multiplexing_api", "epoll");
    field(s, "process_id", std::process::id());
    field(s, "process_supervised", "no");
    field(s, "run_id", &server.run_id);
    field(s, "tcp_port", server.listeners.port().unwrap_or(0));
    field(s, "server_time_usec", now.as_micros());
    field(s, "uptime_in_seconds", uptime);
    field(s, "uptime_in_days", uptime / 86400);
    field(s, "hz", server.config.get().hz);
    field(s, "configured_hz", server.config.get().hz);
    field(
        s,
        "lru_clock",
        strata_engine::clock::lru_clock(now.as_millis() as u64),
    );
    field(
        s,
        "executable",
        std::env::current_exe()
            .map(|p| p.display().to_string())
            .unwrap_or_default(),
    );
    field(
        s,
        "config_file",
        server.config.file.as_deref().unwrap_or(""),
    );
    field(s, "io_threads_active", 0);
    if let Some(ms) = server.shutdown.waiting_ms() {
        field(s, "shutdown_in_milliseconds", ms);
    }
    field(s, "worker_threads", server.threads);
}

/// Bytes as Redis's "human" memory format (e.g. "1.50M").
pub fn human(bytes: u64) -> String {
    let b = bytes as f64;
    match bytes {
        0..=1023 => format!("{bytes}B"),
        1024..=1048575 => format!("{:.2}K", b / 1024.0),
        1048576..=1073741823 => format!("{:.2}M", b / 1048576.0),
        _ => format!("{:.2}G", b / 1073741824.0),
    }
}

fn memory_section(server: &Server, s: &mut String) {
    use crate::commands::memory::Report;
    let r = Report::gather(server);
    let c = server.config.get();
    let a = &r.allocator;
    let libraries = server.scripts.libraries.read();
    let functions: usize = libraries.values().map(|l| l.info.functions.len()).sum();
    let system = crate::services::memory::system_memory();
    let pct = |x: f64| format!("{x:.2}%");
    let ratio = |x: f64| format!("{x:.2}");
    s.push_str("# Memory\r\n");
    field(s, "used_memory", r.used);
    field(s, "used_memory_human", human(r.used));
    field(s, "used_memory_rss", r.rss);
    field(s, "used_memory_rss_human", human(r.rss));
    field(s, "used_memory_peak", r.peak);
    field(s, "used_memory_peak_human", human(r.peak));
    field(
        s,
        "used_memory_peak_perc",
        pct(Report::percent(r.used, r.peak)),
    );
    field(s, "used_memory_overhead", r.overhead());
    field(s, "used_memory_startup", r.startup);
    field(s, "used_memory_dataset", r.dataset());
    field(
        s,
        "used_memory_dataset_perc",
        pct(Report::percent(
            r.dataset(),
            r.used.saturating_sub(r.startup),
        )),
    );
    field(s, "allocator_allocated", a.allocated);
    field(s, "allocator_active", a.active);
    field(s, "allocator_resident", a.resident);
    field(s, "total_system_memory", system);
    field(s, "total_system_memory_human", human(system));
    // Lua states are per worker thread and their memory is counted in used_memory; they
    // are not measured apart.
    for name in ["used_memory_lua", "used_memory_vm_eval"] {
        field(s, name, 0);
    }
    field(s, "used_memory_lua_human", human(0));
    field(s, "used_memory_scripts_eval", 0);
    field(s, "number_of_cached_scripts", server.scripts.cached());
    field(s, "number_of_functions", functions);
    field(s, "number_of_libraries", libraries.len());
    drop(libraries);
    for name in ["used_memory_vm_functions", "used_memory_vm_total"] {
        field(s, name, 0);
    }
    field(s, "used_memory_vm_total_human", human(0));
    for name in ["used_memory_functions", "used_memory_scripts"] {
        field(s, name, 0);
    }
    field(s, "used_memory_scripts_human", human(0));
    field(s, "maxmemory", c.maxmemory);
    field(s, "maxmemory_human", human(c.maxmemory));
    field(s, "maxmemory_policy", c.maxmemory_policy);
    field(
        s,
        "allocator_frag_ratio",
        ratio(Report::ratio(a.active, a.allocated)),
    );
    field(
        s,
        "allocator_frag_bytes",
        a.active.saturating_sub(a.allocated),
    );
    field(
        s,
        "allocator_rss_ratio",
        ratio(Report::ratio(a.resident, a.active)),
    );
    field(
        s,
        "allocator_rss_bytes",
        a.resident.saturating_sub(a.active),
    );
    field(
        s,
        "rss_overhead_ratio",
        ratio(Report::ratio(r.rss, a.resident)),
    );
    field(s, "rss_overhead_bytes", r.rss.saturating_sub(a.resident));
    field(
        s,
        "mem_fragmentation_ratio",
        ratio(Report::ratio(r.rss, r.used)),
    );
    field(s, "mem_fragmentation_bytes", r.rss.saturating_sub(r.used));
    field(
        s,
        "mem_not_counted_for_evict",
        crate::services::evict::Evictor::not_counted(server),
    );
    let (held, backlog, replicas) = server.repl.buffers();
    field(s, "mem_replication_backlog", backlog);
    field(s, "mem_total_replication_buffers", held);
    field(s, "mem_clients_slaves", replicas);
    field(s, "mem_clients_normal", r.clients);
    field(s, "mem_cluster_links", 0);
    field(s, "mem_aof_buffer", r.journal);
    field(s, "mem_allocator", "jemalloc");
    field(s, "active_defrag_running", 0);
    field(
        s,
        "lazyfree_pending_objects",
        crate::services::lazyfree::pending_objects(),
    );
    field(
        s,
        "lazyfreed_objects",
        crate::services::lazyfree::freed_objects(),
    );
}

fn stats_section(server: &Server, s: &mut String) {
    let st = &server.stats;
    let totals = st.command_totals(server.table.commands.len());
    let commands: u64 = totals.iter().map(|t| t.calls).sum();
    let (input, output) = st.net();
    let (mut hits, mut misses, mut expired) = (0, 0, 0);
    for i in 0..server.keyspace.db_count() {
        let (h, m, e) = server.keyspace.db(i).stats();
        hits += h;
        misses += m;
        expired += e;
    }
    let errors: u64 = st.errors().iter().map(|(_, n)| n).sum();
    s.push_str("# Stats\r\n");
    field(
        s,
        "total_connections_received",
        st.connections_received.load(Ordering::Relaxed),
    );
    field(s, "total_commands_processed", commands);
    // Strata's own: connections moved to the worker serving their hot shard.
    field(
        s,
        "strata_connections_moved",
        st.connections_moved.load(Ordering::Relaxed),
    );
    field(
        s,
        "instantaneous_ops_per_sec",
        server.ops_per_sec.load(Ordering::Relaxed),
    );
    field(s, "total_net_input_bytes", input);
    field(s, "total_net_output_bytes", output);
    field(
        s,
        "rejected_connections",
        st.rejected_connections.load(Ordering::Relaxed),
    );
    field(s, "expired_keys", expired);
    field(s, "expired_stale_perc", "0.00");
    field(s, "expired_time_cap_reached_count", 0);
    field(s, "expire_cycle_cpu_milliseconds", 0);
    field(
        s,
        "evicted_keys",
        server.evict.evicted.load(Ordering::Relaxed),
    );
    field(
        s,
        "evicted_clients",
        st.evicted_clients.load(Ordering::Relaxed),
    );
    field(s, "total_eviction_exceeded_time", 0);
    field(s, "current_eviction_exceeded_time", 0);
    field(s, "keyspace_hits", hits);
    field(s, "keyspace_misses", misses);
    field(
        s,
        "pubsub_channels",
        server.pubsub.channel_count(Space::Global),
    );
    field(s, "pubsub_patterns", server.pubsub.pattern_count());
    field(
        s,
        "pubsubshard_channels",
        server.pubsub.channel_count(Space::Shard),
    );
    let repl = &server.repl.counters;
    field(s, "sync_full", repl.sync_full.load(Ordering::Relaxed));
    field(
        s,
        "sync_partial_ok",
        repl.sync_partial_ok.load(Ordering::Relaxed),
    );
    field(
        s,
        "sync_partial_err",
        repl.sync_partial_err.load(Ordering::Relaxed),
    );
    field(s, "latest_fork_usec", 0);
    field(s, "total_forks", 0);
    let (_, keys, items, prefixes) = server.tracking.counts();
    field(s, "tracking_total_keys", keys);
    field(s, "tracking_total_items", items);
    field(s, "tracking_total_prefixes", prefixes);
    field(s, "migrate_cached_sockets", server.migrations.cached());
    field(s, "slave_expires_tracked_keys", server.repl.own_keys.len());
    field(
        s,
        "unexpected_error_replies",
        server
            .stats
            .unexpected_error_replies
            .load(Ordering::Relaxed),
    );
    field(s, "total_error_replies", errors);
    let resized = &st.reply_buffer;
    for (name, count) in [
        ("reply_buffer_shrinks", &resized.shrinks),
        ("reply_buffer_expands", &resized.expands),
    ] {
        field(s, name, count.load(Ordering::Relaxed));
    }
}

/// (user, system) CPU seconds of the whole process, all threads, to the microsecond as
/// Redis gives them (getrusage); /proc's 10 ms ticks read 0 over a short test.
pub fn cpu_seconds() -> (f64, f64) {
    // SAFETY: getrusage only fills the struct it is given, which is plain data.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    if unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut ru) } != 0 {
        return (0.0, 0.0);
    }
    let secs = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    (secs(ru.ru_utime), secs(ru.ru_stime))
}
