//! Every directive, declared once: field and type, `[syntax and bounds]` for numbers,
//! default, name and aliases, flags, an optional check and the hook its change runs.
//! Names, aliases, bounds, defaults and mutability follow Redis 7.0 unless the entry says
//! otherwise; INERT marks what is accepted and kept but has no effect yet.

use super::choices::*;
use super::declare::{directives, HIDDEN, INERT, LIVE, OWN, PROTECTED, SENSITIVE, START};
use super::special::*;
use super::value::{int, memory, Kind, INT_MAX, INT_MIN, LONG_MAX, UINT_MAX, ULLONG_MAX};

const PERCENT: Kind = Kind::MemoryOrPercent {
    min: -100,
    max: LONG_MAX,
};
const PERMISSIONS: Kind = Kind::Octal { min: 0, max: 0o777 };

directives! {
    // --- Network and clients
    /// Addresses to listen on; a `-` prefix skips one that is unavailable. Strata's
    /// default is loopback only (Redis: `* -::*`, what an empty list means).
    bind: Addresses = "127.0.0.1", "bind", LIVE => Bind;
    /// TCP port (0 without a TLS port: one the OS picks at start, kept after).
    port: u16 [int(0, 65535)] = "6379", "port", LIVE => Port;
    /// Worker threads, each an event loop with its own connections (0: one per core).
    threads: u32 [int(0, 256)] = "0", "threads", START | OWN;
    /// Scheduling policy of the worker threads: batch (SCHED_BATCH, a waking worker does
    /// not preempt the running thread) or normal (SCHED_OTHER).
    worker_sched: WorkerSched = "batch", "worker-sched", START | OWN;
    /// Where new connections go: balanced (on the first worker while it is not busy, so
    /// clients' commands run in the order they arrive as on Redis's one thread; spread as
    /// load grows) or round-robin (dealt to each worker in turn, never moved for load).
    worker_placement: WorkerPlacement = "balanced", "worker-placement", START | OWN;
    /// Refuse clients from beyond loopback while no password is set.
    protected_mode: bool = "yes", "protected-mode", LIVE;
    /// The password clients must AUTH with (empty: none).
    requirepass: String = "", "requirepass", LIVE | SENSITIVE => Requirepass;
    maxclients: u32 [int(1, UINT_MAX)] = "10000", "maxclients", LIVE;
    /// Close a client idle this many seconds (0: never).
    timeout: u64 [int(0, INT_MAX)] = "0", "timeout", LIVE;
    /// Largest bulk string a client may send (Strata allows below Redis's 1mb floor).
    proto_max_bulk_len: u64 [memory(0, LONG_MAX)] = "512mb", "proto-max-bulk-len", LIVE;
    /// Largest query buffer of a client.
    client_query_buffer_limit: u64 [memory(1 << 20, LONG_MAX)] = "1gb",
        "client-query-buffer-limit", LIVE;
    /// Output buffer limits per client class; Strata enforces the pubsub class.
    client_output_buffer_limit: OutputBufferLimits =
        "normal 0 0 0 slave 268435456 67108864 60 pubsub 33554432 8388608 60",
        "client-output-buffer-limit", LIVE => PubsubLimit;
    /// Seconds of idleness before a client's connection is probed (0: never); applies to
    /// connections accepted after a change.
    tcp_keepalive: u32 [int(0, INT_MAX)] = "300", "tcp-keepalive", LIVE;
    tcp_backlog: u32 [int(0, INT_MAX)] = "511", "tcp-backlog", START;
    unixsocket: String = "", "unixsocket", START;
    unixsocketperm: u32 [PERMISSIONS] = "0", "unixsocketperm", START;
    socket_mark_id: u32 [int(0, UINT_MAX)] = "0", "socket-mark-id", START | INERT;
    bind_source_addr: String = "", "bind-source-addr", LIVE;
    io_threads: u32 [int(1, 128)] = "1", "io-threads", START | INERT;
    io_threads_do_reads: bool = "no", "io-threads-do-reads", START | INERT;
    maxmemory_clients: i64 [PERCENT] = "0", "maxmemory-clients", LIVE => ClientEviction;
    tracking_table_max_keys: u64 [int(0, LONG_MAX)] = "1000000",
        "tracking-table-max-keys", LIVE => Tracking;

    // --- Keyspace
    /// Logical databases (Strata's bound: a million).
    databases: u32 [int(1, 1_000_000)] = "16", "databases", START;
    /// Shards per database, rounded up to a power of two.
    shards: u32 [int(1, 1 << 20)] = "1024", "shards", START | OWN;
    /// Background cycles (active expiry, idle clients) per second, kept within 1..500.
    hz: u32 [int(0, INT_MAX)] = "10", "hz", LIVE, check clamp_hz;
    dynamic_hz: bool = "yes", "dynamic-hz", LIVE | INERT;
    active_expire_effort: u32 [int(1, 10)] = "1", "active-expire-effort", LIVE;
    activerehashing: bool = "yes", "activerehashing", LIVE | INERT;
    /// Memory limit (0: none): over it, keys are evicted per maxmemory-policy, or
    /// commands that need memory are refused.
    maxmemory: u64 [memory(0, ULLONG_MAX)] = "0", "maxmemory", LIVE => Maxmemory;
    /// Which keys go when memory is over the limit.
    maxmemory_policy: MaxmemoryPolicy = "noeviction", "maxmemory-policy", LIVE => Maxmemory;
    /// Keys sampled per eviction round.
    maxmemory_samples: u32 [int(1, INT_MAX)] = "5", "maxmemory-samples", LIVE => Maxmemory;
    /// How long one command may spend evicting before the rest goes to the background.
    maxmemory_eviction_tenacity: u32 [int(0, 100)] = "10",
        "maxmemory-eviction-tenacity", LIVE => Maxmemory;
    /// Evicted entries move to an on-disk tier instead of being deleted, and come back on
    /// access (docs/tiering.md). Set at start only.
    tiering: bool = "no", "tiering", START | OWN;
    /// Where the tier lives; empty: `tier` inside `dir`. Emptied at start.
    tiering_dir: String = "", "tiering-dir", START | OWN;
    /// Disk the tier may take (0: no limit); once reached, eviction deletes as without it.
    tiering_max_disk: u64 [memory(0, ULLONG_MAX)] = "0", "tiering-max-disk", LIVE | OWN;
    /// The tier's block cache (its filters, index and data blocks), outside maxmemory.
    tiering_cache_size: u64 [memory(1 << 20, ULLONG_MAX)] = "64mb", "tiering-cache-size",
        START | OWN;
    /// Cold reads run in place while the tier's reads average under this many
    /// microseconds (they come from memory); above it, or at 0, they go to the blocking
    /// pool first so the worker serves others meanwhile.
    tiering_inline_read_us: u64 [int(0, INT_MAX)] = "20", "tiering-inline-read-us",
        LIVE | OWN;
    /// How slowly LFU counters grow with accesses.
    lfu_log_factor: u32 [int(0, INT_MAX)] = "10", "lfu-log-factor", LIVE => Maxmemory;
    /// Minutes per decrement of the LFU counter (OBJECT FREQ).
    lfu_decay_time: u64 [int(0, INT_MAX)] = "1", "lfu-decay-time", LIVE => Maxmemory;
    /// FLUSHALL/FLUSHDB free memory in the background by default.
    lazyfree_lazy_user_flush: bool = "no", "lazyfree-lazy-user-flush", LIVE;
    /// Evicted values are freed in the background (and the journal records UNLINK).
    lazyfree_lazy_eviction: bool = "no", "lazyfree-lazy-eviction", LIVE => Maxmemory;
    lazyfree_lazy_expire: bool = "no", "lazyfree-lazy-expire", LIVE | INERT;
    lazyfree_lazy_server_del: bool = "no", "lazyfree-lazy-server-del", LIVE | INERT;
    lazyfree_lazy_user_del: bool = "no", "lazyfree-lazy-user-del", LIVE;
    /// Keyspace notification classes (K E g $ l s h z x e t m d n A).
    notify_keyspace_events: KeyspaceEvents = "", "notify-keyspace-events", LIVE => Notify;

    // --- Encodings: collections up to these sizes use the compact forms
    /// Strata's default is redis.conf's 128 (redis-server compiled in: 512).
    hash_max_listpack_entries: u64 [int(0, LONG_MAX)] = "128",
        "hash-max-listpack-entries" | "hash-max-ziplist-entries", LIVE => Encodings;
    hash_max_listpack_value: u64 [memory(0, LONG_MAX)] = "64",
        "hash-max-listpack-value" | "hash-max-ziplist-value", LIVE => Encodings;
    set_max_intset_entries: u64 [int(0, LONG_MAX)] = "512",
        "set-max-intset-entries", LIVE => Encodings;
    zset_max_listpack_entries: u64 [int(0, LONG_MAX)] = "128",
        "zset-max-listpack-entries" | "zset-max-ziplist-entries", LIVE => Encodings;
    zset_max_listpack_value: u64 [memory(0, LONG_MAX)] = "64",
        "zset-max-listpack-value" | "zset-max-ziplist-value", LIVE => Encodings;
    /// List node size: entries (> 0) or -1..-5 for 4..64 KiB.
    list_max_listpack_size: i32 [int(INT_MIN, INT_MAX)] = "-2",
        "list-max-listpack-size" | "list-max-ziplist-size", LIVE => Encodings;
    list_compress_depth: u32 [int(0, INT_MAX)] = "0", "list-compress-depth", LIVE | INERT;
    /// HyperLogLogs use the sparse form up to this many bytes.
    hll_sparse_max_bytes: u64 [memory(0, LONG_MAX)] = "3000", "hll-sparse-max-bytes", LIVE;
    /// A stream node takes no more entries once it weighs this many bytes (0: no limit).
    stream_node_max_bytes: u64 [memory(0, LONG_MAX)] = "4096",
        "stream-node-max-bytes", LIVE => Encodings;
    /// ... or holds this many entries, deleted ones included (0: no limit).
    stream_node_max_entries: i64 [int(0, LONG_MAX)] = "100",
        "stream-node-max-entries", LIVE => Encodings;

    // --- Persistence
    /// The data directory: journal, snapshots, LOCK.
    dir: String = "./data", "dir", LIVE | PROTECTED;
    /// Snapshot rules: <seconds> <changes> pairs.
    save: SaveRules = "3600 1 300 100 60 10000", "save", LIVE;
    /// Journal every write in `dir` (no: a pure cache). Strata's default is yes; set at
    /// start only.
    appendonly: bool = "yes", "appendonly", LIVE => Appendonly;
    /// Journal fsync policy.
    appendfsync: Appendfsync = "everysec", "appendfsync", LIVE => Fsync;
    /// Worker threads help a background snapshot that captured nothing for this long
    /// (its thread runs SCHED_IDLE, starved on a saturated machine); 0: always.
    snapshot_help_after_ms: u64 [int(0, LONG_MAX)] = "50",
        "snapshot-help-after-ms", LIVE | OWN => SnapshotHelp;
    dbfilename: String = "dump.rdb", "dbfilename", LIVE | PROTECTED,
        check file_name;
    appendfilename: String = "appendonly.aof", "appendfilename", START | INERT,
        check aof_file_name;
    appenddirname: String = "appendonlydir", "appenddirname", START | INERT,
        check aof_dir_name;
    /// LZF-compress strings in RDB files and DUMP payloads (strata export, DUMP, MIGRATE).
    rdbcompression: bool = "yes", "rdbcompression", LIVE;
    /// End RDB files with a CRC64 (strata export; 0, "not computed", otherwise).
    rdbchecksum: bool = "yes", "rdbchecksum", START;
    rdb_del_sync_files: bool = "no", "rdb-del-sync-files", LIVE | INERT;
    rdb_save_incremental_fsync: bool = "yes", "rdb-save-incremental-fsync", LIVE | INERT;
    /// Refuse writes (and PING) with MISCONF while the last snapshot failed and save
    /// rules are set.
    stop_writes_on_bgsave_error: bool = "yes", "stop-writes-on-bgsave-error", LIVE;
    sanitize_dump_payload: SanitizeDumpPayload = "no", "sanitize-dump-payload", LIVE | INERT;
    aof_rewrite_incremental_fsync: bool = "yes", "aof-rewrite-incremental-fsync",
        LIVE | INERT;
    no_appendfsync_on_rewrite: bool = "no", "no-appendfsync-on-rewrite", LIVE | INERT;
    aof_load_truncated: bool = "yes", "aof-load-truncated", LIVE | INERT;
    aof_use_rdb_preamble: bool = "yes", "aof-use-rdb-preamble", LIVE | INERT;
    aof_timestamp_enabled: bool = "no", "aof-timestamp-enabled", LIVE | INERT;
    aof_disable_auto_gc: bool = "no", "aof-disable-auto-gc", LIVE | INERT;
    /// A rewrite (a snapshot, then the journal before it deleted) starts by itself once
    /// the journal has grown this much in percent since the last one (0: never) ...
    auto_aof_rewrite_percentage: u32 [int(0, INT_MAX)] = "100",
        "auto-aof-rewrite-percentage", LIVE;
    /// ... and is larger than this.
    auto_aof_rewrite_min_size: i64 [memory(0, LONG_MAX)] = "67108864",
        "auto-aof-rewrite-min-size", LIVE;
    /// Size of a journal segment file (a rewrite deletes whole segments).
    journal_segment_size: u64 [memory(1 << 16, 1 << 40)] = "64mb", "journal-segment-size",
        START | OWN;

    // --- Logging, slow log, latency
    /// Log verbosity (read at start).
    loglevel: Loglevel = "notice", "loglevel", LIVE;
    /// Log file (empty: standard output).
    logfile: String = "", "logfile", START;
    /// Slow log threshold in microseconds (-1: off, 0: everything).
    slowlog_log_slower_than: i64 [int(-1, LONG_MAX)] = "10000",
        "slowlog-log-slower-than", LIVE => Slowlog;
    slowlog_max_len: u64 [int(0, LONG_MAX)] = "128", "slowlog-max-len", LIVE => Slowlog;
    latency_monitor_threshold: i64 [int(0, LONG_MAX)] = "0",
        "latency-monitor-threshold", LIVE => Latency;
    /// Keep each command's latency histogram (LATENCY HISTOGRAM, INFO latencystats).
    latency_tracking: bool = "yes", "latency-tracking", LIVE => Latency;
    /// The percentiles INFO latencystats shows.
    latency_tracking_info_percentiles: Percentiles = "50 99 99.9",
        "latency-tracking-info-percentiles", LIVE;
    syslog_enabled: bool = "no", "syslog-enabled", START | INERT;
    syslog_ident: String = "redis", "syslog-ident", START | INERT;
    syslog_facility: SyslogFacility = "local0", "syslog-facility", START | INERT;
    crash_log_enabled: bool = "yes", "crash-log-enabled", LIVE | INERT;
    crash_memcheck_enabled: bool = "yes", "crash-memcheck-enabled", LIVE | INERT;
    always_show_logo: bool = "no", "always-show-logo", START | INERT;
    ignore_warnings: String = "", "ignore-warnings", LIVE | INERT;

    // --- Scripts
    /// Milliseconds a script runs before other clients get -BUSY.
    busy_reply_threshold: u64 [int(0, LONG_MAX)] = "5000",
        "busy-reply-threshold" | "lua-time-limit", LIVE => ScriptTimeout;

    // --- Process
    /// Always no: Strata runs under a supervisor.
    daemonize: Daemonize = "no", "daemonize", START;
    /// A file to hold the process id while it runs (empty: none).
    pidfile: String = "", "pidfile", START;
    supervised: Supervised = "no", "supervised", START;
    set_proc_title: bool = "yes", "set-proc-title", START | INERT;
    proc_title_template: String = "{title} {listen-addr} {server-mode}",
        "proc-title-template", LIVE | INERT, check proc_title;
    oom_score_adj: OomScoreAdj = "no", "oom-score-adj", LIVE => OomScoreAdj;
    oom_score_adj_values: OomScoreAdjValues = "0 200 800", "oom-score-adj-values",
        LIVE => OomScoreAdj;
    disable_thp: bool = "yes", "disable-thp", START | INERT;
    jemalloc_bg_thread: bool = "yes", "jemalloc-bg-thread", LIVE | INERT;
    server_cpulist: String = "", "server_cpulist", START | INERT;
    bio_cpulist: String = "", "bio_cpulist", START | INERT;
    aof_rewrite_cpulist: String = "", "aof_rewrite_cpulist", START | INERT;
    bgsave_cpulist: String = "", "bgsave_cpulist", START | INERT;
    shutdown_on_sigint: ShutdownFlags = "default", "shutdown-on-sigint", LIVE;
    shutdown_on_sigterm: ShutdownFlags = "default", "shutdown-on-sigterm", LIVE;
    shutdown_timeout: u32 [int(0, INT_MAX)] = "10", "shutdown-timeout", LIVE;
    /// Active defragmentation: Strata has none, so it stays off.
    activedefrag: bool = "no", "activedefrag", LIVE, check no_defrag;
    active_defrag_ignore_bytes: u64 [memory(1, LONG_MAX)] = "104857600",
        "active-defrag-ignore-bytes", LIVE | INERT;
    active_defrag_threshold_lower: u32 [int(0, 1000)] = "10",
        "active-defrag-threshold-lower", LIVE | INERT;
    active_defrag_threshold_upper: u32 [int(0, 1000)] = "100",
        "active-defrag-threshold-upper", LIVE | INERT;
    active_defrag_cycle_min: u32 [int(1, 99)] = "1", "active-defrag-cycle-min", LIVE | INERT;
    active_defrag_cycle_max: u32 [int(1, 99)] = "25", "active-defrag-cycle-max", LIVE | INERT;
    active_defrag_max_scan_fields: u64 [int(1, LONG_MAX)] = "1000",
        "active-defrag-max-scan-fields", LIVE | INERT;

    // --- Security
    /// Who may CONFIG SET the protected directives (`dir`, `dbfilename`).
    enable_protected_configs: ProtectedAction = "no", "enable-protected-configs", START;
    /// DEBUG is always enabled in Strata.
    enable_debug_command: ProtectedAction = "no", "enable-debug-command", START;
    enable_module_command: ProtectedAction = "no", "enable-module-command", START | INERT;
    /// The ACL file (relative to `dir`): users at start, ACL LOAD and ACL SAVE.
    aclfile: String = "", "aclfile", START;
    /// Entries ACL LOG keeps.
    acllog_max_len: u64 [int(0, LONG_MAX)] = "128", "acllog-max-len", LIVE;
    /// Whether new users and selectors start with every channel (`reset` too).
    acl_pubsub_default: AclPubsubDefault = "resetchannels", "acl-pubsub-default", LIVE;

    // --- Replication (docs/replication.md)
    /// The primary to follow at start (REPLICAOF changes it at run time).
    replicaof: ReplicaOf = "", "replicaof" | "slaveof", START;
    masterauth: String = "", "masterauth", LIVE | SENSITIVE;
    masteruser: String = "", "masteruser", LIVE | SENSITIVE;
    replica_serve_stale_data: bool = "yes", "replica-serve-stale-data"
        | "slave-serve-stale-data", LIVE;
    replica_read_only: bool = "yes", "replica-read-only" | "slave-read-only", LIVE;
    replica_ignore_maxmemory: bool = "yes", "replica-ignore-maxmemory"
        | "slave-ignore-maxmemory", LIVE;
    replica_lazy_flush: bool = "no", "replica-lazy-flush" | "slave-lazy-flush", LIVE | INERT;
    replica_priority: u32 [int(0, INT_MAX)] = "100", "replica-priority" | "slave-priority",
        LIVE;
    replica_announce_ip: String = "", "replica-announce-ip" | "slave-announce-ip", LIVE;
    replica_announce_port: u16 [int(0, 65535)] = "0", "replica-announce-port"
        | "slave-announce-port", LIVE;
    replica_announced: bool = "yes", "replica-announced", LIVE;
    /// Workers a replica applies its primary's stream on: writes of one key each are
    /// split by key among them (1: all in stream order, as Redis; 0: every worker).
    replica_apply_lanes: u32 [int(0, 1024)] = "1", "replica-apply-lanes", LIVE | OWN;
    replica_ignore_disk_write_errors: bool = "no", "replica-ignore-disk-write-errors",
        LIVE | INERT;
    repl_ping_replica_period: u32 [int(1, INT_MAX)] = "10", "repl-ping-replica-period"
        | "repl-ping-slave-period", LIVE;
    repl_timeout: u32 [int(1, INT_MAX)] = "60", "repl-timeout", LIVE;
    repl_disable_tcp_nodelay: bool = "no", "repl-disable-tcp-nodelay", LIVE;
    /// Full syncs stream the RDB to replicas that take it (`capa eof`) without a file.
    repl_diskless_sync: bool = "yes", "repl-diskless-sync", LIVE;
    repl_diskless_sync_delay: u32 [int(0, INT_MAX)] = "5", "repl-diskless-sync-delay", LIVE;
    repl_diskless_sync_max_replicas: u32 [int(0, INT_MAX)] = "0",
        "repl-diskless-sync-max-replicas", LIVE;
    /// Strata's replicas always receive the RDB into a file before loading it.
    repl_diskless_load: ReplDisklessLoad = "disabled", "repl-diskless-load", LIVE | INERT;
    repl_backlog_size: i64 [memory(1, LONG_MAX)] = "1048576", "repl-backlog-size",
        LIVE => Replication;
    repl_backlog_ttl: u64 [int(0, LONG_MAX)] = "3600", "repl-backlog-ttl", LIVE;
    min_replicas_to_write: u32 [int(0, INT_MAX)] = "0", "min-replicas-to-write"
        | "min-slaves-to-write", LIVE => Replication;
    min_replicas_max_lag: u32 [int(0, INT_MAX)] = "10", "min-replicas-max-lag"
        | "min-slaves-max-lag", LIVE => Replication;
    propagation_error_behavior: PropagationErrorBehavior = "ignore",
        "propagation-error-behavior", LIVE;

    // --- Cluster
    cluster_enabled: bool = "no", "cluster-enabled", START | INERT;
    cluster_config_file: String = "nodes.conf", "cluster-config-file", START | INERT;
    cluster_node_timeout: i64 [int(0, LONG_MAX)] = "15000", "cluster-node-timeout",
        LIVE | INERT;
    cluster_port: u16 [int(0, 65535)] = "0", "cluster-port", START | INERT;
    cluster_announce_ip: String = "", "cluster-announce-ip", LIVE | INERT;
    cluster_announce_hostname: String = "", "cluster-announce-hostname", LIVE | INERT,
        check host_name;
    cluster_announce_port: u16 [int(0, 65535)] = "0", "cluster-announce-port", LIVE | INERT;
    cluster_announce_bus_port: u16 [int(0, 65535)] = "0", "cluster-announce-bus-port",
        LIVE | INERT;
    cluster_announce_tls_port: u16 [int(0, 65535)] = "0", "cluster-announce-tls-port",
        LIVE | INERT;
    cluster_preferred_endpoint_type: ClusterEndpointType = "ip",
        "cluster-preferred-endpoint-type", LIVE | INERT;
    cluster_replica_validity_factor: u32 [int(0, INT_MAX)] = "10",
        "cluster-replica-validity-factor" | "cluster-slave-validity-factor", LIVE | INERT;
    cluster_replica_no_failover: bool = "no", "cluster-replica-no-failover"
        | "cluster-slave-no-failover", LIVE | INERT;
    cluster_migration_barrier: u32 [int(0, INT_MAX)] = "1", "cluster-migration-barrier",
        LIVE | INERT;
    cluster_require_full_coverage: bool = "yes", "cluster-require-full-coverage",
        LIVE | INERT;
    cluster_allow_reads_when_down: bool = "no", "cluster-allow-reads-when-down",
        LIVE | INERT;
    cluster_allow_pubsubshard_when_down: bool = "yes",
        "cluster-allow-pubsubshard-when-down", LIVE | INERT;
    cluster_allow_replica_migration: bool = "yes", "cluster-allow-replica-migration",
        LIVE | INERT;
    cluster_link_sendbuf_limit: u64 [memory(0, ULLONG_MAX)] = "0",
        "cluster-link-sendbuf-limit", LIVE | INERT;

    // --- TLS (net::tls): a change rebuilds the configuration; one that does not build is
    // refused and the old one stays. No cluster here, so tls-cluster only asks for TLS.
    tls_port: u16 [int(0, 65535)] = "0", "tls-port", LIVE => Port;
    tls_cert_file: String = "", "tls-cert-file", LIVE => Tls;
    tls_key_file: String = "", "tls-key-file", LIVE => Tls;
    tls_key_file_pass: String = "", "tls-key-file-pass", LIVE | SENSITIVE => Tls;
    tls_client_cert_file: String = "", "tls-client-cert-file", LIVE => Tls;
    tls_client_key_file: String = "", "tls-client-key-file", LIVE => Tls;
    tls_client_key_file_pass: String = "", "tls-client-key-file-pass", LIVE | SENSITIVE => Tls;
    tls_dh_params_file: String = "", "tls-dh-params-file", LIVE => Tls;
    tls_ca_cert_file: String = "", "tls-ca-cert-file", LIVE => Tls;
    tls_ca_cert_dir: String = "", "tls-ca-cert-dir", LIVE => Tls;
    tls_protocols: String = "", "tls-protocols", LIVE => Tls;
    tls_ciphers: String = "", "tls-ciphers", LIVE => Tls;
    tls_ciphersuites: String = "", "tls-ciphersuites", LIVE => Tls;
    tls_prefer_server_ciphers: bool = "no", "tls-prefer-server-ciphers", LIVE => Tls;
    tls_session_caching: bool = "yes", "tls-session-caching", LIVE => Tls;
    tls_session_cache_size: u32 [int(0, INT_MAX)] = "20480", "tls-session-cache-size",
        LIVE => Tls;
    tls_session_cache_timeout: u32 [int(0, INT_MAX)] = "300", "tls-session-cache-timeout",
        LIVE => Tls;
    tls_auth_clients: TlsAuthClients = "yes", "tls-auth-clients", LIVE => Tls;
    tls_replication: bool = "no", "tls-replication", LIVE => Tls;
    tls_cluster: bool = "no", "tls-cluster", LIVE => Tls;

    // --- Test hooks Redis keeps out of CONFIG GET *
    rdb_key_save_delay: i32 [int(INT_MIN, INT_MAX)] = "0", "rdb-key-save-delay",
        LIVE | HIDDEN;
    key_load_delay: i32 [int(INT_MIN, INT_MAX)] = "0", "key-load-delay",
        LIVE | HIDDEN | INERT;
    loading_process_events_interval_bytes: i64 [int(1024, INT_MAX)] = "2097152",
        "loading-process-events-interval-bytes", LIVE | HIDDEN | INERT;
    watchdog_period: u32 [int(0, INT_MAX)] = "0", "watchdog-period", LIVE | HIDDEN | INERT;
    use_exit_on_panic: bool = "no", "use-exit-on-panic", LIVE | HIDDEN | INERT;
}

/// Redis accepts any `hz` and keeps it within 1..500.
fn clamp_hz(hz: u32) -> Result<u32, &'static str> {
    Ok(hz.clamp(1, 500))
}

fn no_defrag(on: bool) -> Result<bool, &'static str> {
    if on {
        Err("Active defragmentation cannot be enabled: this server does not defragment")
    } else {
        Ok(on)
    }
}

fn is_path(s: &str) -> bool {
    s.contains(['/', '\\'])
}

fn file_name(s: String) -> Result<String, &'static str> {
    if is_path(&s) {
        return Err("dbfilename can't be a path, just a filename");
    }
    Ok(s)
}

fn aof_file_name(s: String) -> Result<String, &'static str> {
    if s.is_empty() {
        return Err("appendfilename can't be empty");
    }
    if is_path(&s) {
        return Err("appendfilename can't be a path, just a filename");
    }
    Ok(s)
}

fn aof_dir_name(s: String) -> Result<String, &'static str> {
    if s.is_empty() {
        return Err("appenddirname can't be empty");
    }
    if is_path(&s) {
        return Err("appenddirname can't be a path, just a dirname");
    }
    Ok(s)
}

fn host_name(s: String) -> Result<String, &'static str> {
    if s.len() >= 256 {
        return Err("Hostnames must be less than 256 characters");
    }
    if !s
        .bytes()
        .all(|c| c.is_ascii_alphanumeric() || c == b'-' || c == b'.')
    {
        return Err("Hostnames may only contain alphanumeric characters, hyphens or dots");
    }
    Ok(s)
}

/// A process title template: known `{variables}`, `{{` for a brace, and something left
/// once the title and server mode (which may be empty) are taken out.
fn proc_title(s: String) -> Result<String, &'static str> {
    const INVALID: &str = "template format is invalid or contains unknown variables";
    let mut rest = s.as_str();
    let mut visible = false;
    while let Some(open) = rest.find('{') {
        visible |= !rest[..open].trim_matches(' ').is_empty();
        let after = &rest[open + 1..];
        if let Some(quoted) = after.strip_prefix('{') {
            visible = true;
            rest = quoted;
            continue;
        }
        let close = after.find('}').ok_or(INVALID)?;
        match &after[..close] {
            "title" | "server-mode" => {}
            "listen-addr" | "config-file" | "port" | "tls-port" | "unixsocket" => visible = true,
            _ => return Err(INVALID),
        }
        rest = &after[close + 1..];
    }
    visible |= !rest.trim_matches(' ').is_empty();
    if visible {
        Ok(s)
    } else {
        Err(INVALID)
    }
}
