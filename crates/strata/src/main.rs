//! The one Strata binary: `strata serve`, `strata bench`, `strata check`, and
//! `strata import`/`export` (Redis RDB files in and out of a data directory).

use clap::{Parser, Subcommand};
use std::process::ExitCode;
use strata_server::config::{Config, Loglevel};

// jemalloc, as Redis uses: size classes fit small entries tightly and it scales across
// threads. Counted (INFO used_memory, maxmemory) by a thread-local add per allocation that
// joins a shared counter every few KiB: see strata_server::services::memory for why, and
// docs/memory.md for its measured cost per request.
#[global_allocator]
static GLOBAL: strata_server::services::memory::Counting<tikv_jemallocator::Jemalloc> =
    strata_server::services::memory::Counting(tikv_jemallocator::Jemalloc);

#[derive(Parser)]
#[command(
    name = "strata",
    version,
    about = "Strata: a Redis-compatible database"
)]
struct Cli {
    #[command(subcommand)]
    command: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    /// Start the server. Durable by default: every write is journaled in --dir
    /// (appendfsync everysec); `--appendonly no --save ""` makes it a pure in-memory cache.
    #[command(
        after_help = "Any other config directive can be given as --name value \
(for example --hz 100 --proto-max-bulk-len 1mb), as with redis-server. \
The config file uses redis.conf syntax: one `name value` per line, # for comments."
    )]
    Serve(ServeArgs),
    /// Load generator: kv (redis-benchmark style), ycsb A-F, voter; several targets side
    /// by side, percentiles from HdrHistogram, JSON/CSV/HTML reports.
    Bench(strata_bench::cli::BenchArgs),
    /// Check a data directory's journal and snapshots, and a tier the last exit kept:
    /// reports each file, the records in it and the first problem (file and byte offset).
    /// Changes nothing unless --truncate.
    Check(CheckArgs),
    /// Load a Redis RDB file (any version Redis 7.0 reads) into a data directory, which
    /// `strata serve --dir` then serves. The directory must hold no data unless --force.
    #[command(
        after_help = "Config directives can be given as --name value, as for serve \
(for example --databases 32)."
    )]
    Import(ImportArgs),
    /// Write a data directory's contents (its snapshot and journal, loaded as start-up
    /// loads them) as an RDB file redis-server 7.0 loads, function libraries included.
    /// The directory must not be in use by a running server.
    #[command(
        after_help = "Config directives can be given as --name value, as for serve \
(for example --hash-max-listpack-entries 256 for the encodings written)."
    )]
    Export(ExportArgs),
}

#[derive(clap::Args)]
struct ImportArgs {
    /// The RDB file to load.
    file: std::path::PathBuf,
    /// Data directory to import into (default ./data).
    #[arg(long)]
    dir: Option<String>,
    /// Replace whatever the data directory holds: the file becomes the whole data set.
    #[arg(long)]
    force: bool,
    /// A config file in redis.conf syntax, applied before --name value directives.
    #[arg(long)]
    config: Option<String>,
}

#[derive(clap::Args)]
struct ExportArgs {
    /// The RDB file to write (replaced if it exists).
    file: std::path::PathBuf,
    /// Data directory to export (default ./data).
    #[arg(long)]
    dir: Option<String>,
    /// A config file in redis.conf syntax, applied before --name value directives.
    #[arg(long)]
    config: Option<String>,
}

#[derive(clap::Args)]
struct CheckArgs {
    /// The data directory (what `strata serve --dir` was given; default ./data).
    #[arg(value_name = "DIR")]
    dir_arg: Option<std::path::PathBuf>,
    /// The data directory, as `strata serve`, `import` and `export` take it.
    #[arg(long = "dir", value_name = "DIR", conflicts_with = "dir_arg")]
    dir: Option<std::path::PathBuf>,
    /// The tier's directory, if `tiering-dir` set one (default: DIR/tier). A tier the last
    /// exit kept is read record by record against the newest snapshot.
    #[arg(long)]
    tiering_dir: Option<std::path::PathBuf>,
    /// Cut the journal back to its last good record, dropping everything after it. Run
    /// it only when the server refuses to start and you accept losing those records.
    #[arg(long)]
    truncate: bool,
}

#[derive(clap::Args)]
struct ServeArgs {
    /// A config file in redis.conf syntax, applied before the options below.
    config: Option<String>,
    /// TCP port to listen on (0 picks a free one).
    #[arg(long)]
    port: Option<u16>,
    /// Addresses to listen on, space separated (default 127.0.0.1: loopback only).
    #[arg(long)]
    bind: Option<String>,
    /// Worker threads, each an event loop with its own connections (default: one per core).
    #[arg(long)]
    threads: Option<u32>,
    /// Require clients to AUTH with this password.
    #[arg(long)]
    requirepass: Option<String>,
    /// Maximum number of connected clients (default 10000).
    #[arg(long)]
    maxclients: Option<u32>,
    /// Data directory: the journal, snapshots and a LOCK file (default ./data).
    #[arg(long)]
    dir: Option<String>,
    /// Log level: debug, verbose, notice (default), warning or nothing.
    #[arg(long)]
    loglevel: Option<String>,
    /// Load this Redis RDB file at start-up, after the data directory, which must hold no
    /// data; a snapshot taken right after makes the import durable.
    #[arg(long, value_name = "FILE")]
    rdb_import: Option<std::path::PathBuf>,
}

fn main() -> ExitCode {
    // For `serve`, options clap does not name are config directives (`--hz 100`); take
    // them out first. Other subcommands get their arguments untouched.
    let args: Vec<String> = std::env::args().collect();
    if let Some(code) = rerun_with_huge_pages(&args) {
        return code;
    }
    let named: &[&str] = match args.get(1).map(String::as_str) {
        Some("serve") => SERVE_NAMED,
        Some("import" | "export") => TOOL_NAMED,
        _ => &[],
    };
    let (args, directives) = if named.is_empty() {
        (args, Vec::new())
    } else {
        split_directives(args, named)
    };
    let cli = Cli::parse_from(args);
    match cli.command {
        Cmd::Serve(a) => serve(a, directives),
        Cmd::Bench(a) => strata_bench::cli::run(a),
        Cmd::Check(a) => check(a),
        Cmd::Import(a) => import(a, directives),
        Cmd::Export(a) => export(a, directives),
    }
}

/// `bench embedded --huge-pages`: jemalloc reads its options once, before main, so the
/// process runs itself again with thp:always in the environment variable this (prefixed)
/// jemalloc build reads. None when there is nothing to do.
fn rerun_with_huge_pages(args: &[String]) -> Option<ExitCode> {
    use std::os::unix::process::CommandExt;
    const VAR: &str = "_RJEM_MALLOC_CONF";
    let asked = args.get(1..3).is_some_and(|a| a == ["bench", "embedded"])
        && args.iter().any(|a| a == "--huge-pages");
    let conf = std::env::var(VAR).unwrap_or_default();
    if !asked || conf.contains("thp:always") {
        return None;
    }
    let conf = if conf.is_empty() {
        "thp:always".to_string()
    } else {
        format!("{conf},thp:always")
    };
    let err = match std::env::current_exe() {
        Ok(exe) => std::process::Command::new(exe)
            .args(&args[1..])
            .env(VAR, conf)
            .exec(),
        Err(e) => e,
    };
    eprintln!("--huge-pages: cannot run strata again with {VAR} set: {err}");
    Some(ExitCode::FAILURE)
}

fn check(a: CheckArgs) -> ExitCode {
    let dir = a.dir.or(a.dir_arg).unwrap_or_else(|| "./data".into());
    // The tier first: it files keys under the hash seed it was written with, which this
    // process can take only before it hashes a key (a snapshot's check does).
    let tier_dir = a.tiering_dir.clone().unwrap_or_else(|| dir.join("tier"));
    let tier = strata_tier::check::check(&dir, &tier_dir);
    let report = match strata_storage::check(&dir) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("cannot check {}: {e}", dir.display());
            return ExitCode::FAILURE;
        }
    };
    println!("{report}");
    let tier_ok = match tier {
        Ok(t) => {
            println!("{t}");
            t.check.ok()
        }
        Err(e) => {
            println!("tier {}: cannot check: {e}", tier_dir.display());
            false
        }
    };
    if !a.truncate {
        return if report.ok() && tier_ok {
            ExitCode::SUCCESS
        } else {
            ExitCode::FAILURE
        };
    }
    match strata_storage::truncate(&dir) {
        Ok(t) => {
            println!("{t}");
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("truncate failed: {e}");
            ExitCode::FAILURE
        }
    }
}

/// Options clap parses itself, per subcommand; any other `--name` is a directive.
const SERVE_NAMED: &[&str] = &[
    "port",
    "bind",
    "threads",
    "requirepass",
    "maxclients",
    "dir",
    "loglevel",
    "rdb-import",
];
const TOOL_NAMED: &[&str] = &["dir", "force", "config"];

/// Splits `--name value...` directives other than the named options out of the
/// arguments. As in redis-server, a directive takes every following word up to the next
/// `--`; names clap does not know are left for the configuration to judge.
fn split_directives(
    args: Vec<String>,
    named: &[&str],
) -> (Vec<String>, Vec<(String, Vec<String>)>) {
    let mut rest = Vec::new();
    let mut directives = Vec::new();
    let mut it = args.into_iter().peekable();
    while let Some(a) = it.next() {
        let name = a
            .strip_prefix("--")
            .filter(|n| !n.is_empty() && !n.contains('=') && *n != "help" && !named.contains(n));
        match name {
            Some(name) => {
                let mut words = Vec::new();
                while let Some(w) = it.next_if(|w| !w.starts_with("--")) {
                    words.push(w);
                }
                directives.push((name.to_string(), words));
            }
            None => rest.push(a),
        }
    }
    (rest, directives)
}

/// The configuration: the config file, then `--name value` directives, then the options
/// clap parsed (`named`). None (after printing why) when any of it is refused.
fn build_config(
    file: Option<String>,
    directives: Vec<(String, Vec<String>)>,
    named: Vec<(&str, Option<String>)>,
) -> Option<Config> {
    let config = Config::new(file.clone());
    let mut load = config.load();
    if let Some(path) = &file {
        let loaded = std::fs::read_to_string(path)
            .map_err(|e| format!("cannot read config file {path}: {e}"))
            .and_then(|text| load.text(&text).map_err(|e| format!("{path}: {e}")));
        if let Err(e) = loaded {
            eprintln!("*** FATAL CONFIG FILE ERROR ***\n{e}");
            return None;
        }
    }
    let given = named
        .into_iter()
        .filter_map(|(n, v)| v.map(|v| (n.to_string(), vec![v])));
    for (name, words) in directives.into_iter().chain(given) {
        // `--save` with nothing after it means `save ""`, as in redis-server.
        let words: Vec<&str> = if words.is_empty() {
            vec![""]
        } else {
            words.iter().map(String::as_str).collect()
        };
        if let Err(e) = load.directive(&name, &words) {
            eprintln!(
                "*** FATAL CONFIG ERROR *** --{name} {}: {e}",
                words.join(" ")
            );
            return None;
        }
    }
    load.finish();
    Some(config)
}

fn serve(a: ServeArgs, directives: Vec<(String, Vec<String>)>) -> ExitCode {
    let named = vec![
        ("port", a.port.map(|v| v.to_string())),
        ("bind", a.bind),
        ("threads", a.threads.map(|v| v.to_string())),
        ("requirepass", a.requirepass),
        ("maxclients", a.maxclients.map(|v| v.to_string())),
        ("dir", a.dir),
        ("loglevel", a.loglevel),
    ];
    let Some(config) = build_config(a.config, directives, named) else {
        return ExitCode::FAILURE;
    };
    init_logging(&config);
    tracing::info!(
        "Strata {} (Redis 7.0 protocol), pid {}",
        env!("CARGO_PKG_VERSION"),
        std::process::id()
    );
    let opts = strata_server::StartOptions {
        rdb_import: a.rdb_import,
    };
    match strata_server::run(config, opts) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            tracing::error!("{e}");
            ExitCode::FAILURE
        }
    }
}

fn import(a: ImportArgs, directives: Vec<(String, Vec<String>)>) -> ExitCode {
    let Some(config) = build_config(a.config, directives, vec![("dir", a.dir)]) else {
        return ExitCode::FAILURE;
    };
    init_logging(&config);
    let opts = strata_server::rdb::tools::ImportOptions { force: a.force };
    match strata_server::rdb::tools::import(config, &a.file, opts, |line| eprintln!("{line}")) {
        Ok(summary) => {
            println!("imported {summary}");
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("import failed: {e}");
            ExitCode::FAILURE
        }
    }
}

fn export(a: ExportArgs, directives: Vec<(String, Vec<String>)>) -> ExitCode {
    let Some(config) = build_config(a.config, directives, vec![("dir", a.dir)]) else {
        return ExitCode::FAILURE;
    };
    init_logging(&config);
    match strata_server::rdb::tools::export(config, &a.file) {
        Ok(done) => {
            println!("exported {done} to {}", a.file.display());
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("export failed: {e}");
            ExitCode::FAILURE
        }
    }
}

fn init_logging(config: &Config) {
    let level = match config.get().loglevel {
        Loglevel::Debug | Loglevel::Verbose => "debug",
        Loglevel::Warning => "warn",
        Loglevel::Nothing => "error",
        Loglevel::Notice => "info",
    };
    // The tier's store logs a line per tree it opens: only its warnings are ours to show.
    let filter = tracing_subscriber::EnvFilter::new(format!("{level},fjall=warn,lsm_tree=warn"));
    // Colour only for a terminal: logs piped to a file or a supervisor stay plain text.
    let tty = std::io::IsTerminal::is_terminal(&std::io::stdout());
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_target(false)
        .with_ansi(tty);
    let logfile = config.get().logfile.clone();
    if logfile.is_empty() {
        builder.init();
        return;
    }
    match std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&logfile)
    {
        Ok(f) => builder
            .with_ansi(false)
            .with_writer(std::sync::Mutex::new(f))
            .init(),
        Err(e) => {
            builder.init();
            tracing::warn!("cannot open logfile {logfile}: {e}; logging to standard output");
        }
    }
}
