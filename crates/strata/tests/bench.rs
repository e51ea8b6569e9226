//! `strata bench` end to end: the real binary against a real Strata (kv, ycsb) and a real
//! redis-server (kv, ycsb, voter), voter partitioned against Strata,
//! a dead port, a deliberately wrong fake server, merge and report. Runs are small so the whole file stays within a few seconds.

mod common;

use common::Proc;
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use strata_bench::output::Report;

fn bench(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_strata"))
        .arg("bench")
        .args(args)
        .output()
        .expect("run strata bench")
}

fn text(o: &Output) -> String {
    format!(
        "status {:?}\n--- stdout\n{}\n--- stderr\n{}",
        o.status.code(),
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

/// A file path in a directory of its own, removed with the directory when dropped, so the
/// tests leave nothing behind in the temp dir.
struct Tmp(PathBuf);

impl std::ops::Deref for Tmp {
    type Target = Path;
    fn deref(&self) -> &Path {
        &self.0
    }
}

impl AsRef<Path> for Tmp {
    fn as_ref(&self) -> &Path {
        &self.0
    }
}

impl Drop for Tmp {
    fn drop(&mut self) {
        if let Some(dir) = self.0.parent() {
            let _ = std::fs::remove_dir_all(dir);
        }
    }
}

fn tmp(name: &str) -> Tmp {
    static NEXT: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let dir = std::env::temp_dir().join(format!("strata-bench-test-{}-{n}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    Tmp(dir.join(name))
}

fn json(path: &Path) -> Report {
    strata_bench::merge::load(path).expect("a --json result")
}

/// (op, count, errors) of every op in every round of every target.
fn counts(j: &Report) -> Vec<(String, u64, u64)> {
    j.targets
        .iter()
        .flat_map(|t| &t.rounds)
        .flat_map(|r| &r.phases)
        .flat_map(|p| &p.ops)
        .map(|o| (o.op.clone(), o.count, o.errors))
        .collect()
}

#[test]
fn kv_seq_fill_then_read_against_strata_writes_every_key_once() {
    let s = common::strata(&[]);
    let (start, end) = (1000u64, 13_000u64);
    let keys = format!("seq:{start}..{end}");
    let out = tmp("seq.json");
    let target = format!("strata={}", s.addr());
    let o = bench(&[
        "kv",
        "--target",
        &target,
        "--ops",
        "set,get",
        "--keys",
        &keys,
        "-d",
        "100",
        "-c",
        "8",
        "-P",
        "4",
        "--threads",
        "2",
        "--verify",
        "-q",
        "--json",
        out.to_str().unwrap_or_default(),
    ]);
    assert!(o.status.success(), "{}", text(&o));
    let want = end - start;
    let got = counts(&json(&out));
    assert_eq!(
        got,
        vec![("SET".to_string(), want, 0), ("GET".to_string(), want, 0)],
        "{}",
        text(&o)
    );
    // The printed table says the same.
    let stdout = String::from_utf8_lossy(&o.stdout);
    for op in ["SET", "GET"] {
        let line = stdout
            .lines()
            .find(|l| l.split_whitespace().next() == Some(op))
            .unwrap_or_else(|| panic!("no {op} row:\n{stdout}"));
        let count: u64 = line
            .split_whitespace()
            .nth(1)
            .and_then(|c| c.parse().ok())
            .unwrap_or(0);
        assert_eq!(count, want, "{line}");
    }
    // Every key of the range exists, and nothing else was written.
    let mut c = s.client();
    let dbsize: u64 = redis::cmd("DBSIZE").query(&mut c).expect("DBSIZE");
    assert_eq!(dbsize, want);
    let mut pipe = redis::pipe();
    for k in start..end {
        pipe.cmd("EXISTS").arg(format!("key:{k:012}"));
    }
    let exists: Vec<u64> = pipe.query(&mut c).expect("EXISTS");
    assert_eq!(exists.iter().sum::<u64>(), want);
    let len: u64 = redis::cmd("STRLEN")
        .arg(format!("key:{start:012}"))
        .query(&mut c)
        .expect("STRLEN");
    assert_eq!(len, 100);
}

/// One run of `strata bench WORKLOAD` against a fresh Strata and a fresh redis-server,
/// two rounds, quiet, with `extra` arguments: the servers (for checks afterwards), the
/// run's output, its --json report and the path of its --csv file.
fn side_by_side(workload: &str, extra: &[&str]) -> (Proc, Proc, Output, Report, Tmp) {
    let s = common::strata(&[]);
    let r = common::redis(&[]);
    let out = tmp(&format!("{workload}.json"));
    let csv = tmp(&format!("{workload}.csv"));
    let (ta, tb) = (
        format!("strata={}", s.addr()),
        format!("redis={}", r.addr()),
    );
    let mut args = vec![workload, "--target", &ta, "--target", &tb, "--rounds", "2"];
    args.extend_from_slice(extra);
    let (out_s, csv_s) = (out.to_string_lossy(), csv.to_string_lossy());
    args.extend_from_slice(&["-q", "--json", &out_s, "--csv", &csv_s]);
    let o = bench(&args);
    assert!(o.status.success(), "{}", text(&o));
    let j = json(&out);
    (s, r, o, j, csv)
}

#[test]
fn kv_mix_against_strata_and_redis_side_by_side() {
    let extra = [
        "--mix",
        "get=80,set=15,incr=5",
        "--keys",
        "zipf:1000:0.99",
        "-n",
        "3000",
        "-c",
        "4",
        "--verify",
    ];
    let (_s, _r, o, j, csv) = side_by_side("kv", &extra);
    // Per target and round the ops add up to the requests asked for.
    assert_eq!(j.targets.len(), 2);
    for t in &j.targets {
        assert!(t.info_server.contains("redis_version"), "{}", t.info_server);
        assert_eq!(t.rounds.len(), 2);
        for round in &t.rounds {
            let total: u64 = round.phases[0].ops.iter().map(|o| o.count).sum();
            assert_eq!(total, 3000);
        }
    }
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(stdout.contains("ratio to strata"), "{stdout}");
    // One CSV row per target, round and op, plus the header.
    let rows = std::fs::read_to_string(&csv).expect("csv").lines().count();
    assert_eq!(rows, 1 + 2 * 2 * 3);
}

#[test]
fn rdb_dump_and_restore_against_strata_and_redis_side_by_side() {
    let extra = [
        "--string-keys",
        "300",
        "--hash-keys",
        "40",
        "-n",
        "2000",
        "-c",
        "4",
        "-P",
        "8",
        "--verify",
    ];
    let (s, r, o, j, csv) = side_by_side("rdb", &extra);
    let want: Vec<(String, u64, u64)> =
        ["DUMP string", "RESTORE string", "DUMP hash", "RESTORE hash"]
            .iter()
            .map(|op| (op.to_string(), 2000, 0))
            .collect();
    for t in &j.targets {
        for round in &t.rounds {
            let got: Vec<_> = round
                .phases
                .iter()
                .flat_map(|p| &p.ops)
                .map(|o| (o.op.clone(), o.count, o.errors))
                .collect();
            assert_eq!(got, want, "{} round {}", t.name, round.round);
            // Both servers report their CPU time, so every op has its cost per request.
            for p in &round.phases {
                let cpu = p.ops[0].server_cpu_us_per_op;
                assert!(
                    cpu.is_some_and(|c| c > 0.0),
                    "{} {}: {cpu:?}",
                    t.name,
                    p.name
                );
            }
        }
    }
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(stdout.contains("server CPU/op"), "{stdout}");
    let rows = std::fs::read_to_string(&*csv).expect("csv");
    assert_eq!(rows.lines().count(), 1 + 2 * 2 * 4);
    assert!(
        rows.starts_with("target,")
            && rows
                .lines()
                .next()
                .is_some_and(|h| h.ends_with(",server_cpu_us_per_op"))
    );
    // Every key of both spaces was restored from the template (plus the two templates),
    // and a restored hash dumps as its template does.
    for p in [&s, &r] {
        let mut c = p.client();
        let dbsize: u64 = redis::cmd("DBSIZE").query(&mut c).expect("DBSIZE");
        assert_eq!(dbsize, 300 + 40 + 2);
        let fields: u64 = redis::cmd("HLEN")
            .arg("rdb:hash:000000000039")
            .query(&mut c)
            .expect("HLEN");
        assert_eq!(fields, 100);
        let len: u64 = redis::cmd("STRLEN")
            .arg("rdb:string:000000000299")
            .query(&mut c)
            .expect("STRLEN");
        assert_eq!(len, 1024);
    }
}

#[test]
fn ycsb_load_and_run_against_redis_checks_writes() {
    let r = common::redis(&[]);
    let port = r.port.to_string();
    let out = tmp("ycsb.json");
    let o = bench(&[
        "ycsb",
        "-p",
        &port,
        "--workload",
        "d",
        "--records",
        "2000",
        "--operations",
        "4000",
        "--fields",
        "4",
        "--field-length",
        "20",
        "-c",
        "8",
        "--verify",
        "-q",
        "--json",
        out.to_str().unwrap_or_default(),
    ]);
    assert!(o.status.success(), "{}", text(&o));
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(stdout.contains("check writes: ok"), "{stdout}");
    let got = counts(&json(&out));
    let load: u64 = got
        .iter()
        .filter(|c| c.0 == "INSERT")
        .map(|c| c.1)
        .next()
        .unwrap_or(0);
    assert_eq!(load, 2000, "{got:?}");
    let run: u64 = got.iter().skip(1).map(|c| c.1).sum();
    assert_eq!(run, 4000, "{got:?}");
    assert!(got.iter().all(|c| c.2 == 0), "{got:?}");
    // The records are hashes indexed in `_indices`, as YCSB's Redis binding stores them.
    let inserted = got[1..]
        .iter()
        .find(|c| c.0 == "INSERT")
        .map(|c| c.1)
        .unwrap_or(0);
    let mut c = r.client();
    let indexed: u64 = redis::cmd("ZCARD")
        .arg("_indices")
        .query(&mut c)
        .expect("ZCARD");
    assert_eq!(indexed, 2000 + inserted);

    // Workload E's scans run against the loaded records.
    let o = bench(&[
        "ycsb",
        "-p",
        &port,
        "--workload",
        "e",
        "--records",
        "2000",
        "--operations",
        "300",
        "--fields",
        "4",
        "--field-length",
        "20",
        "-c",
        "4",
        "--phases",
        "run",
        "--verify",
        "-q",
    ]);
    assert!(o.status.success(), "{}", text(&o));
    assert!(
        String::from_utf8_lossy(&o.stdout).contains("SCAN"),
        "{}",
        text(&o)
    );
}

#[test]
fn ycsb_a_and_e_against_strata_check_writes() {
    // The same workloads as against Redis above, now that Strata has hashes and sorted
    // sets: A (read/update, zipfian) with its load phase, then E's scans over the records.
    let s = common::strata(&[]);
    let port = s.port.to_string();
    let out = tmp("ycsb-strata.json");
    let o = bench(&[
        "ycsb",
        "-p",
        &port,
        "--workload",
        "a",
        "--records",
        "2000",
        "--operations",
        "4000",
        "--fields",
        "4",
        "--field-length",
        "20",
        "-c",
        "8",
        "-P",
        "2",
        "--verify",
        "-q",
        "--json",
        out.to_str().unwrap_or_default(),
    ]);
    assert!(o.status.success(), "{}", text(&o));
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(stdout.contains("check writes: ok"), "{stdout}");
    let got = counts(&json(&out));
    assert!(got.iter().all(|c| c.2 == 0), "{got:?}");
    assert_eq!(got.first().map(|c| c.1), Some(2000), "{got:?}");
    let run: u64 = got.iter().skip(1).map(|c| c.1).sum();
    assert_eq!(run, 4000, "{got:?}");
    let ops: Vec<&str> = got[1..].iter().map(|c| c.0.as_str()).collect();
    assert!(ops.contains(&"READ") && ops.contains(&"UPDATE"), "{ops:?}");
    let mut c = s.client();
    let indexed: u64 = redis::cmd("ZCARD")
        .arg("_indices")
        .query(&mut c)
        .expect("ZCARD");
    assert_eq!(indexed, 2000);

    let o = bench(&[
        "ycsb",
        "-p",
        &port,
        "--workload",
        "e",
        "--records",
        "2000",
        "--operations",
        "300",
        "--fields",
        "4",
        "--field-length",
        "20",
        "-c",
        "4",
        "--phases",
        "run",
        "--verify",
        "-q",
    ]);
    assert!(o.status.success(), "{}", text(&o));
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(stdout.contains("SCAN"), "{}", text(&o));
    assert!(stdout.contains("check writes: ok"), "{stdout}");
}

#[test]
fn voter_against_redis_checks_writes_and_prints_results() {
    let r = common::redis(&[]);
    let port = r.port.to_string();
    let o = bench(&[
        "voter", "-p", &port, "-n", "5000", "-c", "16", "-P", "2", "-q",
    ]);
    assert!(o.status.success(), "{}", text(&o));
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(stdout.contains("check writes: ok"), "{stdout}");
    assert!(stdout.contains("The Winner is:"), "{stdout}");
    // The votes in the server add up to the accepted votes the bench printed.
    let accepted = accepted_votes(&stdout);
    let mut c = r.client();
    let votes: i64 = redis::cmd("LLEN")
        .arg("voter:votes")
        .query(&mut c)
        .expect("LLEN");
    assert_eq!(votes, accepted);
    assert!(accepted > 4500 && accepted <= 5000, "{accepted}");
}

/// The accepted vote count a voter run printed.
fn accepted_votes(stdout: &str) -> i64 {
    stdout
        .split("Accepted votes: ")
        .nth(1)
        .and_then(|s| s.split_whitespace().next())
        .map(|s| s.replace(',', ""))
        .and_then(|s| s.parse().ok())
        .expect("accepted count")
}

#[test]
fn partitioned_voter_against_strata_spreads_votes_over_disjoint_keys() {
    let s = common::strata(&[]);
    let port = s.port.to_string();
    let o = bench(&[
        "voter",
        "-p",
        &port,
        "-n",
        "6000",
        "-c",
        "16",
        "--partitions",
        "3",
        "-q",
    ]);
    assert!(o.status.success(), "{}", text(&o));
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(stdout.contains("check writes: ok"), "{stdout}");
    let accepted = accepted_votes(&stdout);
    // Every partition has its own tables and got a share of the votes; together they hold
    // exactly the accepted votes, and the unpartitioned keys were never written.
    let mut c = s.client();
    let mut total = 0;
    for p in 0..3 {
        let votes: i64 = redis::cmd("LLEN")
            .arg(format!("voter:{{{p}}}:votes"))
            .query(&mut c)
            .expect("LLEN");
        let contestants: i64 = redis::cmd("HLEN")
            .arg(format!("voter:{{{p}}}:contestants"))
            .query(&mut c)
            .expect("HLEN");
        assert!(votes > 1000, "partition {p}: {votes} votes");
        assert_eq!(contestants, 6, "partition {p}");
        total += votes;
    }
    assert_eq!(total, accepted);
    let plain: i64 = redis::cmd("EXISTS")
        .arg("voter:votes")
        .query(&mut c)
        .expect("EXISTS");
    assert_eq!(plain, 0);
}

#[test]
fn a_dead_port_exits_non_zero() {
    let port = common::free_port().to_string();
    let o = bench(&["kv", "-p", &port, "-n", "10", "-q"]);
    assert!(!o.status.success(), "{}", text(&o));
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("cannot connect"),
        "{}",
        text(&o)
    );
}

/// A server that answers everything plausibly but returns the wrong value for GET.
fn broken_server() -> u16 {
    let l = TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = l.local_addr().expect("addr").port();
    std::thread::spawn(move || {
        for s in l.incoming().flatten() {
            std::thread::spawn(move || serve_broken(s));
        }
    });
    port
}

fn serve_broken(mut s: TcpStream) {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 4096];
    loop {
        // Answer every complete multibulk request in the buffer.
        while let Some((args, used)) = parse_request(&buf) {
            buf.drain(..used);
            let reply: &[u8] = match args.first().map(|a| a.to_ascii_uppercase()).as_deref() {
                Some(b"PING") => b"+PONG\r\n",
                Some(b"INFO") => b"$0\r\n\r\n",
                Some(b"GET") => b"$5\r\nWRONG\r\n",
                _ => b"+OK\r\n",
            };
            if s.write_all(reply).is_err() {
                return;
            }
        }
        match s.read(&mut chunk) {
            Ok(0) | Err(_) => return,
            Ok(n) => buf.extend_from_slice(&chunk[..n]),
        }
    }
}

fn parse_request(b: &[u8]) -> Option<(Vec<Vec<u8>>, usize)> {
    fn line(b: &[u8], at: usize) -> Option<(usize, usize)> {
        let end = at + b.get(at..)?.windows(2).position(|w| w == b"\r\n")?;
        let n = std::str::from_utf8(b.get(at + 1..end)?)
            .ok()?
            .parse()
            .ok()?;
        Some((n, end + 2))
    }
    let (argc, mut at) = line(b, 0)?;
    let mut args = Vec::new();
    for _ in 0..argc {
        let (len, start) = line(b, at)?;
        args.push(b.get(start..start + len)?.to_vec());
        at = start + len + 2;
        if b.len() < at {
            return None;
        }
    }
    Some((args, at))
}

#[test]
fn verify_catches_a_wrong_reply() {
    let port = broken_server().to_string();
    let o = bench(&[
        "kv", "-p", &port, "--ops", "set,get", "-n", "200", "-c", "2", "-q", "--verify",
    ]);
    assert!(!o.status.success(), "{}", text(&o));
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(stdout.contains("*** 200 ERRORS"), "{}", text(&o));
    assert!(stdout.contains("not the one SET wrote"), "{}", text(&o));
    // Without --verify the same replies are not errors.
    let o = bench(&[
        "kv", "-p", &port, "--ops", "set,get", "-n", "200", "-c", "2", "-q",
    ]);
    assert!(o.status.success(), "{}", text(&o));
}

#[test]
fn merge_sums_counts_and_report_writes_html() {
    let r = common::redis(&[]);
    let port = r.port.to_string();
    let (a, b, m) = (tmp("a.json"), tmp("b.json"), tmp("merged.json"));
    for (f, n) in [(&a, "1500"), (&b, "2500")] {
        let o = bench(&[
            "kv",
            "-p",
            &port,
            "--ops",
            "set",
            "-n",
            n,
            "-c",
            "4",
            "-q",
            "--json",
            f.to_str().unwrap_or_default(),
        ]);
        assert!(o.status.success(), "{}", text(&o));
    }
    let o = bench(&[
        "merge",
        a.to_str().unwrap_or_default(),
        b.to_str().unwrap_or_default(),
        "--json",
        m.to_str().unwrap_or_default(),
    ]);
    assert!(o.status.success(), "{}", text(&o));
    let (ca, cb, cm) = (counts(&json(&a)), counts(&json(&b)), counts(&json(&m)));
    assert_eq!(cm.len(), 1);
    assert_eq!(cm[0].1, ca[0].1 + cb[0].1);
    assert_eq!(cm[0].1, 4000);
    let rate = |j: &Report| j.targets[0].best[0].ops_per_sec;
    let sum = rate(&json(&a)) + rate(&json(&b));
    assert!((rate(&json(&m)) - sum).abs() < 1e-6 * sum.max(1.0));

    let html = tmp("report.html");
    let o = bench(&[
        "report",
        a.to_str().unwrap_or_default(),
        m.to_str().unwrap_or_default(),
        "--html",
        html.to_str().unwrap_or_default(),
    ]);
    assert!(o.status.success(), "{}", text(&o));
    let page = std::fs::read_to_string(&html).expect("html");
    assert!(
        page.contains("<svg") && page.contains("SET"),
        "{}",
        &page[..page.len().min(500)]
    );
}

#[test]
fn embedded_runs_both_maps_in_the_ets_shape() {
    let o = bench(&[
        "embedded",
        "--rows",
        "2000",
        "--threads",
        "2",
        "--writes-per-1000",
        "0,100",
        "--loops",
        "5000",
        "--rounds",
        "2",
        "--map",
        "both",
        "--shards",
        "4",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let out = String::from_utf8_lossy(&o.stdout);
    for map in ["strata", "dashmap"] {
        assert!(out.contains(&format!("# map={map}")), "{}", text(&o));
        for w in ["0", "100"] {
            // Per round, then etsb's summary line (best, median) plus the average.
            let rounds = out
                .lines()
                .filter(|l| {
                    l.starts_with(map)
                        && l.contains(&format!("updates/1000={w} "))
                        && l.contains(" round ")
                })
                .count();
            assert_eq!(rounds, 2, "{}", text(&o));
            assert!(
                out.lines().any(|l| l.starts_with(map)
                    && l.contains(&format!("updates/1000={w} "))
                    && l.contains("p=2 n=2000 ops/round=10000")
                    && l.contains("best=")
                    && l.contains("median=")
                    && l.contains("avg=")),
                "{}",
                text(&o)
            );
        }
    }
    assert_eq!(
        out.lines()
            .filter(|l| l.starts_with("# fill: 2000 rows in") && l.contains("bytes/row"))
            .count(),
        2,
        "{}",
        text(&o)
    );
    assert!(
        out.contains("# updates/1000=100: strata best"),
        "{}",
        text(&o)
    );
}

#[test]
fn embedded_rejects_bad_options() {
    for args in [
        &["embedded", "--map", "btree"][..],
        &["embedded", "--writes-per-1000", "2000"][..],
        &["embedded", "--rows", "lots"][..],
        &["embedded", "--threads", "0"][..],
    ] {
        let o = bench(args);
        assert_eq!(o.status.code(), Some(1), "{args:?}: {}", text(&o));
        assert!(!o.stderr.is_empty(), "{args:?}: {}", text(&o));
    }
}

/// `--init` runs on every connection before the test: with CLIENT TRACKING on, the GETs
/// of a seq range leave every key in the tracking table; a command the server refuses
/// stops the run with its error.
#[test]
fn init_commands_run_on_every_connection() {
    let s = common::strata(&[]);
    let target = format!("strata={}", s.addr());
    let o = bench(&[
        "kv",
        "--target",
        &target,
        "--ops",
        "get",
        "--keys",
        "seq:0..500",
        "-c",
        "4",
        "-q",
        "--init",
        "CLIENT TRACKING on",
    ]);
    assert!(o.status.success(), "{}", text(&o));
    let mut c = s.client();
    let stats: String = redis::cmd("INFO").arg("stats").query(&mut c).unwrap();
    assert!(stats.contains("tracking_total_keys:500\r\n"), "{stats}");
    let o = bench(&[
        "kv",
        "--target",
        &target,
        "--ops",
        "get",
        "-n",
        "10",
        "-q",
        "--init",
        "CLIENT TRACKING maybe",
    ]);
    assert!(!o.status.success(), "{}", text(&o));
    assert!(text(&o).contains("syntax error"), "{}", text(&o));
}
