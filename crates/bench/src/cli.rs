//! The `strata bench` command line.

use crate::driver::Settings;
use crate::keys::{parse_count, KeySpec, ValueSize, Values};
use crate::output::{self, Report};
use crate::run::{self, RunOpts, Sweep, Target};
use crate::workloads::{embedded, kv, rdb, voter, ycsb, Workload};
use clap::{Args, Subcommand};
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

#[derive(Args, Debug)]
pub struct BenchArgs {
    // Boxed: the options are large, and BenchArgs sits in the binary's command enum.
    #[command(subcommand)]
    cmd: Box<BenchCmd>,
}

#[derive(Subcommand, Debug)]
enum BenchCmd {
    /// redis-benchmark style: --ops set,get,... (each a test of -n requests) or --mix get=90,set=10.
    Kv(KvArgs),
    /// DUMP and RESTORE (Redis's serialized values) of a string and a hash the workload
    /// writes and dumps first: --ops dump-string,restore-string,dump-hash,restore-hash.
    Rdb(RdbArgs),
    /// YCSB core workloads A-F, stored as YCSB's Redis binding stores them (hashes + `_indices`).
    Ycsb(YcsbArgs),
    /// VoltDB's voter, as a Redis 7 function library (examples/voter/voter.lua).
    Voter(VoterArgs),
    /// In-process, the ETS benchmark's shape: strata-engine (and dashmap) filled in parallel,
    /// then rounds of random lookups with U updates per 1000 operations.
    Embedded(EmbeddedArgs),
    /// Combine runs made at the same time from several client processes or machines.
    Merge(MergeArgs),
    /// One self-contained HTML page comparing runs (inline SVG charts).
    Report(ReportArgs),
}

/// Options every network workload takes.
#[derive(Args, Debug, Clone)]
pub struct Common {
    /// A server to benchmark, NAME=HOST:PORT. Repeat for a side-by-side run: the same
    /// workload on each target in alternation, --rounds times.
    #[arg(long = "target", value_name = "NAME=HOST:PORT")]
    targets: Vec<String>,
    /// Server host, when no --target is given.
    #[arg(long, default_value = "127.0.0.1")]
    host: String,
    /// Server port, when no --target is given.
    #[arg(short = 'p', long, default_value_t = 6379)]
    port: u16,
    /// Connections (clients), spread over --threads.
    #[arg(short = 'c', long, default_value_t = 50)]
    clients: usize,
    /// Requests sent together per connection; the next batch once all replies are in
    /// (redis-benchmark's -P). With --rate: the most in flight per connection.
    #[arg(short = 'P', long, default_value_t = 1)]
    pipeline: usize,
    /// Client threads, each an event loop over its share of the connections.
    #[arg(long, default_value_t = 1)]
    threads: usize,
    /// Requests per test (kv), calls (voter); accepts 100k, 1m.
    #[arg(short = 'n', long)]
    requests: Option<String>,
    /// Run each test for this long instead (e.g. 10s, 500ms, 2m).
    #[arg(long)]
    duration: Option<String>,
    /// Run unmeasured for this long before each test.
    #[arg(long)]
    warmup: Option<String>,
    /// Open loop: this many operations per second in total, latency measured from each
    /// operation's intended start time.
    #[arg(long)]
    rate: Option<f64>,
    /// Live progress interval.
    #[arg(long, default_value = "5s")]
    progress: String,
    /// No live progress.
    #[arg(short = 'q', long)]
    quiet: bool,
    /// Check replies (GET returns what SET wrote, replies have the expected type).
    #[arg(long)]
    verify: bool,
    /// Rounds per target (default 3 with several targets, else 1).
    #[arg(long)]
    rounds: Option<usize>,
    /// Write the full result (config, figures, histograms, INFO server) as JSON.
    #[arg(long, value_name = "FILE")]
    json: Option<PathBuf>,
    /// Write one CSV row per target, round and op ("-" for standard output).
    #[arg(long, value_name = "FILE")]
    csv: Option<String>,
    /// Run once per value and report the knee: clients=1,2,4,8 or pipeline=1,4,16.
    #[arg(long)]
    sweep: Option<String>,
    /// AUTH password.
    #[arg(short = 'a', long)]
    password: Option<String>,
    /// A command every connection sends before the test, e.g. "CLIENT TRACKING on"
    /// (arguments split on spaces; repeatable). An error reply stops the run.
    #[arg(long, value_name = "COMMAND")]
    init: Vec<String>,
}

#[derive(Args, Debug)]
struct KvArgs {
    #[command(flatten)]
    common: Common,
    /// Tests to run in turn, e.g. set,get,incr,lpush,lrange_100.
    #[arg(long, default_value = "set,get", conflicts_with = "mix")]
    ops: String,
    /// One test mixing ops by weight, e.g. get=90,set=10.
    #[arg(long)]
    mix: Option<String>,
    /// Keys: random:N, seq:START..END (each key once, in order, split across clients) or
    /// zipf:N:THETA.
    #[arg(long, default_value = "random:100000")]
    keys: String,
    /// Value size in bytes (3 is redis-benchmark's default), or a range like 1k-100k.
    #[arg(short = 'd', long, default_value = "3")]
    value_size: String,
}

#[derive(Args, Debug)]
struct RdbArgs {
    #[command(flatten)]
    common: Common,
    /// Tests to run in turn: dump-string, restore-string, dump-hash, restore-hash.
    #[arg(
        long,
        default_value = "dump-string,restore-string,dump-hash,restore-hash"
    )]
    ops: String,
    /// String keys (rdb:string:N), each restored from the template before the tests.
    #[arg(long, default_value = "100000")]
    string_keys: String,
    /// Hash keys (rdb:hash:N), each restored from the template before the tests.
    #[arg(long, default_value = "10000")]
    hash_keys: String,
    /// The template string's length in bytes (64, 1k, 10k...).
    #[arg(short = 'd', long, default_value = "1k")]
    value_size: String,
    /// The template hash's fields (field000, field001...).
    #[arg(long, default_value_t = 100)]
    fields: usize,
    /// Bytes per value of the template hash.
    #[arg(long, default_value_t = 12)]
    field_length: usize,
}

#[derive(Args, Debug)]
struct YcsbArgs {
    #[command(flatten)]
    common: Common,
    /// Core workload: a (50/50 read/update), b (95/5), c (read only), d (read latest,
    /// 5% insert), e (short scans, 5% insert), f (read-modify-write).
    #[arg(long, default_value = "a")]
    workload: String,
    /// Records inserted by the load phase (YCSB's recordcount).
    #[arg(long, default_value = "100000")]
    records: String,
    /// Operations in the run phase (YCSB's operationcount).
    #[arg(long, default_value = "100000")]
    operations: String,
    /// Fields per record (YCSB's fieldcount).
    #[arg(long, default_value_t = 10)]
    fields: usize,
    /// Bytes per field (YCSB's fieldlength).
    #[arg(long, default_value_t = 100)]
    field_length: usize,
    /// Request distribution: zipfian, uniform or latest (default: the workload's own).
    #[arg(long)]
    distribution: Option<String>,
    /// Phases: load,run (default), load or run.
    #[arg(long, default_value = "load,run")]
    phases: String,
}

#[derive(Args, Debug)]
struct VoterArgs {
    #[command(flatten)]
    common: Common,
    /// Contestants (VoltDB's voter uses 6; at most 10).
    #[arg(long, default_value_t = 6)]
    contestants: u32,
    /// Votes accepted per phone number.
    #[arg(long, default_value_t = 2)]
    max_votes: u32,
    /// Split the tables by phone number as VoltDB partitions them (reference tables
    /// replicated), keys voter:{p}:<table>; calls in different partitions touch disjoint keys.
    #[arg(long, default_value_t = 1)]
    partitions: u32,
}

#[derive(Args, Debug)]
struct EmbeddedArgs {
    /// Rows (keys 1..N) filled before the rounds; accepts 1m, 10m.
    #[arg(long, default_value = "1000000")]
    rows: String,
    /// Threads filling and then looking up (etsb's p).
    #[arg(long, default_value_t = 2)]
    threads: usize,
    /// Ratios to run in turn: updates per 1000 operations (etsb's updates).
    #[arg(long, default_value = "0,1,50,100")]
    writes_per_1000: String,
    /// Operations per thread per round (etsb's l); accepts 1m.
    #[arg(long, default_value = "1000000")]
    loops: String,
    /// Timed rounds per ratio (after one untimed warm-up round of lookups).
    #[arg(long, default_value_t = 3)]
    rounds: usize,
    /// strata (strata-engine's keyspace), dashmap, or both one after the other.
    #[arg(long, default_value = "strata")]
    map: String,
    /// strata-engine: 2^BITS shards.
    #[arg(long, default_value_t = 8)]
    shards: u32,
    /// Fill progress interval.
    #[arg(long, default_value = "5s")]
    progress: String,
    /// Make each lookup's key depend on the value the previous one read: no two lookups'
    /// cache misses overlap, so a round measures latency instead of throughput.
    #[arg(long)]
    chained: bool,
    /// Back the heap with transparent huge pages (jemalloc's thp:always; the strata
    /// binary re-runs itself with it set). The fill line reports how much ended up in them.
    #[arg(long)]
    huge_pages: bool,
}

#[derive(Args, Debug)]
struct MergeArgs {
    /// JSON results (from --json) of runs made at the same time.
    #[arg(required = true)]
    files: Vec<PathBuf>,
    /// Write the merged result here.
    #[arg(long, value_name = "FILE")]
    json: Option<PathBuf>,
}

#[derive(Args, Debug)]
struct ReportArgs {
    /// JSON results (from --json) to compare.
    #[arg(required = true)]
    files: Vec<PathBuf>,
    /// The HTML page to write.
    #[arg(long, value_name = "FILE")]
    html: PathBuf,
}

/// Runs `strata bench ...`: 0 when every operation succeeded, 1 on errors.
pub fn run(a: BenchArgs) -> ExitCode {
    let r = match *a.cmd {
        BenchCmd::Kv(k) => run_kv(k),
        BenchCmd::Rdb(r) => run_rdb(r),
        BenchCmd::Ycsb(y) => run_ycsb(y),
        BenchCmd::Voter(v) => run_voter(v),
        BenchCmd::Embedded(e) => run_embedded(e),
        BenchCmd::Merge(m) => crate::merge::run(&m.files, m.json.as_deref()),
        BenchCmd::Report(r) => crate::report::run(&r.files, &r.html),
    };
    match r {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::FAILURE,
        Err(e) => {
            eprintln!("strata bench: {e}");
            ExitCode::FAILURE
        }
    }
}

/// `10`, `10s`, `500ms`, `2m`, `1.5s`.
pub fn parse_duration(s: &str) -> Result<Duration, String> {
    let t = s.trim();
    let (num, mul) = if let Some(n) = t.strip_suffix("ms") {
        (n, 0.001)
    } else if let Some(n) = t.strip_suffix('s') {
        (n, 1.0)
    } else if let Some(n) = t.strip_suffix('m') {
        (n, 60.0)
    } else if let Some(n) = t.strip_suffix('h') {
        (n, 3600.0)
    } else {
        (t, 1.0)
    };
    num.trim()
        .parse::<f64>()
        .ok()
        .filter(|v| v.is_finite() && *v >= 0.0)
        .map(|v| Duration::from_secs_f64(v * mul))
        .ok_or_else(|| format!("bad duration {s:?}: expected e.g. 10s, 500ms, 2m"))
}

struct Prepared {
    opts: RunOpts,
    requests: Option<u64>,
    sweep: Option<Sweep>,
}

fn prepare(c: &Common, default_requests: u64) -> Result<Prepared, String> {
    let mut targets = Vec::new();
    for t in &c.targets {
        let (name, addr) = t
            .split_once('=')
            .ok_or_else(|| format!("bad --target {t:?}: expected NAME=HOST:PORT"))?;
        if name.is_empty() || !addr.contains(':') {
            return Err(format!("bad --target {t:?}: expected NAME=HOST:PORT"));
        }
        targets.push(Target {
            name: name.into(),
            addr: addr.into(),
        });
    }
    if targets.is_empty() {
        targets.push(Target {
            name: "target".into(),
            addr: format!("{}:{}", c.host, c.port),
        });
    }
    if c.clients == 0 || c.pipeline == 0 || c.threads == 0 {
        return Err("--clients, --pipeline and --threads must be at least 1".into());
    }
    let duration = c.duration.as_deref().map(parse_duration).transpose()?;
    let requests = match (&c.requests, duration) {
        (Some(n), _) => Some(parse_count(n).ok_or_else(|| format!("bad --requests {n:?}"))?),
        (None, Some(_)) => None,
        (None, None) => Some(default_requests),
    };
    if let Some(r) = c.rate {
        if !(r.is_finite() && r > 0.0) {
            return Err("--rate must be above 0".into());
        }
    }
    let progress = parse_duration(&c.progress)?;
    let rounds = c
        .rounds
        .unwrap_or(if targets.len() > 1 { 3 } else { 1 })
        .max(1);
    Ok(Prepared {
        opts: RunOpts {
            targets,
            rounds,
            settings: Settings {
                threads: c.threads,
                pipeline: c.pipeline,
                duration,
                warmup: c
                    .warmup
                    .as_deref()
                    .map(parse_duration)
                    .transpose()?
                    .unwrap_or_default(),
                rate: c.rate,
                progress: (!progress.is_zero()).then_some(progress),
                password: c.password.clone(),
                init: c
                    .init
                    .iter()
                    .map(|l| l.split_whitespace().map(String::from).collect())
                    .collect(),
            },
            quiet: c.quiet,
        },
        requests,
        sweep: c.sweep.as_deref().map(Sweep::parse).transpose()?,
    })
}

fn settings_json(c: &Common, p: &Prepared) -> serde_json::Value {
    serde_json::json!({
        "clients": c.clients,
        "pipeline": c.pipeline,
        "threads": c.threads,
        "requests": p.requests,
        "duration_s": p.opts.settings.duration.map(|d| d.as_secs_f64()),
        "warmup_s": p.opts.settings.warmup.as_secs_f64(),
        "rate": c.rate,
        "rounds": p.opts.rounds,
        "verify": c.verify,
        "init": c.init,
        "targets": p.opts.targets.iter().map(|t| format!("{}={}", t.name, t.addr)).collect::<Vec<_>>(),
        "command": std::env::args().collect::<Vec<_>>().join(" "),
    })
}

/// Runs a workload built for (clients, pipeline), once or as a sweep, and writes outputs.
fn execute(
    c: &Common,
    p: &Prepared,
    make: &dyn Fn(usize, usize) -> Result<Box<dyn Workload>, String>,
) -> Result<bool, String> {
    let Some(sweep) = &p.sweep else {
        let w = make(c.clients, c.pipeline)?;
        let mut config = settings_json(c, p);
        config["workload"] = w.config();
        let report = run::execute(w.as_ref(), &p.opts, config)?;
        print!("{}", run::summary(&report));
        write_outputs(c, &report)?;
        return Ok(!run::has_errors(&report));
    };
    let mut steps = Vec::new();
    let mut ok = true;
    for &v in &sweep.values {
        let (clients, pipeline) = if sweep.param == "clients" {
            (v, c.pipeline)
        } else {
            (c.clients, v)
        };
        let w = make(clients, pipeline)?;
        let mut opts = p.opts.clone();
        opts.settings.pipeline = pipeline;
        let mut config = settings_json(c, p);
        config["clients"] = clients.into();
        config["pipeline"] = pipeline.into();
        config["workload"] = w.config();
        if !c.quiet {
            eprintln!("== sweep {}={v}", sweep.param);
        }
        let report = run::execute(w.as_ref(), &opts, config)?;
        if !c.quiet {
            print!("{}", run::summary(&report));
        }
        ok &= !run::has_errors(&report);
        steps.push((v, report));
    }
    print!("{}", run::sweep_summary(&sweep.param, &steps));
    if let Some(path) = &c.json {
        let doc = serde_json::json!({
            "sweep": {
                "param": sweep.param,
                "steps": steps.iter().map(|(v, r)| serde_json::json!({"value": v, "report": r})).collect::<Vec<_>>(),
            }
        });
        write_file(
            path,
            &serde_json::to_string_pretty(&doc).map_err(|e| e.to_string())?,
        )?;
    }
    if let Some(csv) = &c.csv {
        let text: String = steps
            .iter()
            .enumerate()
            .map(|(i, (_, r))| {
                let t = output::csv(r);
                if i == 0 {
                    t
                } else {
                    t.lines().skip(1).map(|l| format!("{l}\n")).collect()
                }
            })
            .collect();
        write_csv(csv, &text)?;
    }
    Ok(ok)
}

fn write_file(path: &std::path::Path, text: &str) -> Result<(), String> {
    std::fs::write(path, text).map_err(|e| format!("cannot write {}: {e}", path.display()))
}

fn write_csv(dest: &str, text: &str) -> Result<(), String> {
    if dest == "-" {
        print!("{text}");
        Ok(())
    } else {
        write_file(std::path::Path::new(dest), text)
    }
}

fn write_outputs(c: &Common, report: &Report) -> Result<(), String> {
    if let Some(path) = &c.json {
        let text = serde_json::to_string_pretty(report).map_err(|e| e.to_string())?;
        write_file(path, &text)?;
    }
    if let Some(csv) = &c.csv {
        write_csv(csv, &output::csv(report))?;
    }
    Ok(())
}

fn run_kv(a: KvArgs) -> Result<bool, String> {
    let keys = KeySpec::parse(&a.keys)?;
    let size = ValueSize::parse(&a.value_size)?;
    let tests: Vec<Vec<(kv::Op, u32)>> = match &a.mix {
        Some(m) => vec![kv::parse_mix(m)?],
        None => a
            .ops
            .split(',')
            .filter(|s| !s.trim().is_empty())
            .map(|s| kv::Op::parse(s).map(|o| vec![(o, 1)]))
            .collect::<Result<_, _>>()?,
    };
    if tests.is_empty() {
        return Err("--ops names no op".into());
    }
    if let KeySpec::Seq(s, e) = keys {
        if let Some(n) = &a.common.requests {
            if parse_count(n) != Some(e - s) {
                return Err(format!(
                    "--keys seq:{s}..{e} writes each of its {} keys once: leave out -n or give -n {}",
                    e - s,
                    e - s
                ));
            }
        }
        if a.common.warmup.is_some() {
            return Err("--warmup would write seq: keys twice; leave it out with seq: keys".into());
        }
    }
    let p = prepare(&a.common, 100_000)?;
    let values = Values::new(size);
    let verify = a.common.verify;
    let requests = p.requests;
    execute(&a.common, &p, &|clients, pipeline| {
        Ok(Box::new(kv::Kv {
            tests: tests.clone(),
            keys: keys.clone(),
            values: values.clone(),
            requests,
            verify,
            clients,
            pipeline,
            written: kv::Kv::new_written(verify, &keys),
        }))
    })
}

fn run_rdb(a: RdbArgs) -> Result<bool, String> {
    let ops = a
        .ops
        .split(',')
        .filter(|s| !s.trim().is_empty())
        .map(rdb::Op::parse)
        .collect::<Result<Vec<_>, _>>()?;
    if ops.is_empty() {
        return Err("--ops names no op".into());
    }
    let count = |what: &str, v: &str| {
        parse_count(v)
            .filter(|&n| n > 0)
            .ok_or_else(|| format!("bad --{what} {v:?}: expected a count above 0"))
    };
    let value_size = crate::keys::parse_size(&a.value_size)
        .filter(|&n| n <= 512 * 1024 * 1024)
        .ok_or_else(|| format!("bad --value-size {:?}", a.value_size))?;
    if a.fields == 0 {
        return Err("--fields must be at least 1".into());
    }
    let spec = rdb::Spec {
        ops,
        keys: [
            count("string-keys", &a.string_keys)?,
            count("hash-keys", &a.hash_keys)?,
        ],
        value_size,
        fields: a.fields,
        field_length: a.field_length,
    };
    let p = prepare(&a.common, 100_000)?;
    let (requests, verify) = (p.requests, a.common.verify);
    execute(&a.common, &p, &|clients, _pipeline| {
        Ok(Box::new(rdb::Rdb::new(
            spec.clone(),
            requests,
            verify,
            clients,
        )))
    })
}

fn run_ycsb(a: YcsbArgs) -> Result<bool, String> {
    let records =
        parse_count(&a.records).ok_or_else(|| format!("bad --records {:?}", a.records))?;
    let operations =
        parse_count(&a.operations).ok_or_else(|| format!("bad --operations {:?}", a.operations))?;
    let mut spec = ycsb::Spec::new(
        &a.workload,
        records,
        operations,
        a.fields,
        a.field_length,
        a.distribution.as_deref(),
        &a.phases,
    )?;
    let p = prepare(&a.common, operations)?;
    // -n overrides --operations; --duration alone runs until it ends.
    spec.operations = p.requests;
    let verify = a.common.verify;
    execute(&a.common, &p, &|clients, pipeline| {
        Ok(Box::new(ycsb::Ycsb::new(
            spec.clone(),
            clients,
            pipeline,
            verify,
        )))
    })
}

fn run_voter(a: VoterArgs) -> Result<bool, String> {
    if a.contestants == 0 || a.contestants > 10 {
        return Err("--contestants must be 1..10".into());
    }
    if a.partitions == 0 || a.partitions > 1024 {
        return Err("--partitions must be 1..1024".into());
    }
    let p = prepare(&a.common, 100_000)?;
    let requests = p.requests;
    execute(&a.common, &p, &|clients, _pipeline| {
        Ok(Box::new(voter::Voter::new(
            a.contestants,
            a.max_votes,
            a.partitions,
            requests,
            clients,
        )))
    })
}

fn run_embedded(a: EmbeddedArgs) -> Result<bool, String> {
    let rows = parse_count(&a.rows).ok_or_else(|| format!("bad --rows {:?}", a.rows))?;
    let loops = parse_count(&a.loops).ok_or_else(|| format!("bad --loops {:?}", a.loops))?;
    let writes_per_1000 = a
        .writes_per_1000
        .split(',')
        .filter(|s| !s.trim().is_empty())
        .map(|s| {
            s.trim()
                .parse::<u32>()
                .map_err(|_| format!("bad --writes-per-1000 {:?}", a.writes_per_1000))
        })
        .collect::<Result<Vec<_>, _>>()?;
    if writes_per_1000.is_empty() {
        return Err("--writes-per-1000 names no ratio".into());
    }
    if a.shards > 16 {
        return Err("--shards: at most 16 (65536 shards)".into());
    }
    if a.huge_pages && thp_off() {
        return Err(
            "--huge-pages: transparent huge pages are off in this kernel \
                    (/sys/kernel/mm/transparent_hugepage/enabled says never)"
                .into(),
        );
    }
    let opts = embedded::Opts {
        rows,
        threads: a.threads,
        writes_per_1000,
        loops,
        rounds: a.rounds,
        maps: embedded::MapKind::parse_list(&a.map)?,
        shard_bits: a.shards,
        progress: parse_duration(&a.progress)?.max(Duration::from_millis(100)),
        chained: a.chained,
    };
    embedded::run(&opts, &mut |line| println!("{line}"))?;
    Ok(true)
}

/// Whether the kernel refuses transparent huge pages even where a program asks for them.
fn thp_off() -> bool {
    std::fs::read_to_string("/sys/kernel/mm/transparent_hugepage/enabled")
        .map_or(true, |s| s.contains("[never]"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_parse() {
        assert_eq!(parse_duration("5s"), Ok(Duration::from_secs(5)));
        assert_eq!(parse_duration("500ms"), Ok(Duration::from_millis(500)));
        assert_eq!(parse_duration("2m"), Ok(Duration::from_secs(120)));
        assert_eq!(parse_duration("1.5"), Ok(Duration::from_millis(1500)));
        assert!(parse_duration("fast").is_err());
        assert!(parse_duration("-1s").is_err());
    }
}
