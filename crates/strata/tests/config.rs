//! Configuration against redis-server 7.0: the directive names CONFIG GET * lists and
//! their defaults, CONFIG SET's replies and errors for directives of every kind, CONFIG
//! GET by pattern and alias, config files and command lines using old names, and CONFIG
//! REWRITE.

mod common;

use common::{Proc, RawReply};
use std::collections::{BTreeMap, BTreeSet};
use std::io::{BufReader, Write};
use std::net::TcpStream;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};
use strata_server::config::{DIRECTIVES, HIDDEN, LIVE, OWN};

/// A connection to a server on `port` that sends a command and reads its reply.
struct Conn(BufReader<TcpStream>);

impl Conn {
    fn to(port: u16) -> Conn {
        let s = TcpStream::connect(("127.0.0.1", port)).expect("connect");
        s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        Conn(BufReader::new(s))
    }

    fn call(&mut self, args: &[&str]) -> RawReply {
        self.0
            .get_mut()
            .write_all(&common::encode_command(args))
            .expect("send");
        common::read_reply(&mut self.0).expect("reply")
    }
}

/// Strata started as the redis-server of the harness is (no persistence).
fn strata() -> Proc {
    common::strata(&["--appendonly", "no", "--save", ""])
}

/// A CONFIG GET reply as name → value.
fn pairs(r: &RawReply) -> BTreeMap<String, String> {
    let text = |e: &RawReply| {
        let s = String::from_utf8_lossy(&e.raw).into_owned();
        // "$<len>\r\n<value>\r\n"
        s.split_once("\r\n")
            .map(|(_, v)| v.trim_end_matches("\r\n").to_string())
            .unwrap_or(s)
    };
    assert!(r.is_aggregate(), "not a CONFIG GET reply: {}", r.shown());
    r.elems
        .chunks(2)
        .map(|kv| (text(&kv[0]), text(&kv[1])))
        .collect()
}

fn config_get(c: &mut Conn, patterns: &[&str]) -> BTreeMap<String, String> {
    let mut args = vec!["CONFIG", "GET"];
    args.extend(patterns);
    pairs(&c.call(&args))
}

/// Defaults that differ from redis-server's on purpose (docs/compatibility.md), or that
/// depend on the host: the port, the working directory, the open-file limit (Redis lowers
/// maxclients to fit it).
const OWN_DEFAULTS: &[&str] = &[
    "port",
    "dir",
    "maxclients",
    "hash-max-listpack-entries",
    "hash-max-ziplist-entries",
];

#[test]
fn every_directive_redis_lists_is_there_with_its_default() {
    let redis = common::redis(&[]);
    let strata = strata();
    let want = config_get(&mut Conn::to(redis.port), &["*"]);
    let got = config_get(&mut Conn::to(strata.port), &["*"]);
    let own: BTreeSet<String> = DIRECTIVES
        .iter()
        .filter(|d| d.has(OWN))
        .map(|d| d.name.to_string())
        .collect();
    let got_names: BTreeSet<String> = got.keys().cloned().collect();
    let want_names: BTreeSet<String> = want.keys().cloned().chain(own.clone()).collect();
    assert_eq!(
        got_names
            .symmetric_difference(&want_names)
            .collect::<Vec<_>>(),
        Vec::<&String>::new(),
        "CONFIG GET * names differ from redis-server's (plus Strata's own)"
    );
    for name in &own {
        assert!(!want.contains_key(name), "{name} is redis-server's too");
    }
    let mut differ = Vec::new();
    for (name, value) in &want {
        if !OWN_DEFAULTS.contains(&name.as_str()) && got[name] != *value {
            differ.push(format!("{name}: redis {value:?}, strata {:?}", got[name]));
        }
    }
    assert!(differ.is_empty(), "defaults differ:\n{}", differ.join("\n"));
    // Each name by itself, exactly: the same name, the same value as in the full list.
    let mut c = Conn::to(strata.port);
    for (name, value) in &got {
        let one = config_get(&mut c, &[name]);
        assert_eq!(one.len(), 1, "{name}");
        assert_eq!(one.get(name), Some(value), "{name}");
    }
    // Hidden directives answer only to their exact name, on both servers.
    let mut r = Conn::to(redis.port);
    for d in DIRECTIVES.iter().filter(|d| d.has(HIDDEN)) {
        assert_eq!(
            config_get(&mut c, &[d.name]),
            config_get(&mut r, &[d.name]),
            "{}",
            d.name
        );
        assert!(!got.contains_key(d.name), "{} listed by *", d.name);
    }
}

/// CONFIG SET of every directive (and alias) redis-server lists, to the value each server
/// has: accepted, or refused (immutable, protected), alike.
#[test]
fn every_directive_sets_as_in_redis() {
    let redis = common::redis(&[]);
    let strata = strata();
    let (mut r, mut s) = (Conn::to(redis.port), Conn::to(strata.port));
    let want = config_get(&mut r, &["*"]);
    let got = config_get(&mut s, &["*"]);
    let mut mismatches = Vec::new();
    for name in want.keys() {
        let redis_said = r.call(&["CONFIG", "SET", name, &want[name]]);
        let strata_said = s.call(&["CONFIG", "SET", name, &got[name]]);
        if redis_said.raw != strata_said.raw {
            mismatches.push(format!(
                "{name}: redis {}, strata {}",
                redis_said.shown(),
                strata_said.shown()
            ));
        }
    }
    assert!(mismatches.is_empty(), "{}", mismatches.join("\n"));
    // Strata's own start-only directives take the value they have (what replays CONFIG
    // GET * through CONFIG SET works), and no other.
    let own_start: Vec<&str> = DIRECTIVES
        .iter()
        .filter(|d| d.has(OWN) && !d.has(LIVE))
        .map(|d| d.name)
        .collect();
    let others = [
        ("threads", "3"),
        ("worker-sched", "normal"),
        ("worker-placement", "round-robin"),
        ("shards", "64"),
        ("tiering", "yes"),
        ("tiering-dir", "elsewhere"),
        ("tiering-cache-size", "2mb"),
        ("journal-segment-size", "1mb"),
    ];
    assert_eq!(own_start, others.map(|(n, _)| n), "a value for each");
    for (name, other) in others {
        assert_ne!(got[name], other, "{name}");
        let same = s.call(&["CONFIG", "SET", name, &got[name]]);
        assert_eq!(same.raw, b"+OK\r\n", "{name}: {}", same.shown());
        let changed = s.call(&["CONFIG", "SET", name, other]);
        assert!(
            changed.shown().contains("can't set immutable config"),
            "{name}: {}",
            changed.shown()
        );
        assert_eq!(config_get(&mut s, &[name])[name], got[name], "{name}");
    }
}

/// Commands sent to both servers in order; CONFIG GET replies are compared as maps
/// (Redis lists them in hash order), everything else byte for byte.
const SCRIPT: &[&[&str]] = &[
    // yes/no
    &["CONFIG", "SET", "protected-mode", "maybe"],
    &["CONFIG", "SET", "repl-diskless-sync", "NO"],
    &["CONFIG", "GET", "repl-diskless-sync"],
    &["CONFIG", "SET", "slave-read-only", "no"],
    &["CONFIG", "GET", "replica-read-only", "slave-read-only"],
    // integers
    &["CONFIG", "SET", "hz", "abc"],
    &["CONFIG", "SET", "hz", "-1"],
    &["CONFIG", "SET", "hz", "007"],
    &["CONFIG", "SET", "hz", "1000"],
    &["CONFIG", "GET", "hz"],
    &["CONFIG", "SET", "hz", "0"],
    &["CONFIG", "GET", "hz"],
    &["CONFIG", "SET", "hz", "10"],
    &["CONFIG", "SET", "timeout", "99999999999"],
    &["CONFIG", "SET", "maxmemory-samples", "0"],
    &["CONFIG", "SET", "active-expire-effort", "11"],
    &["CONFIG", "SET", "maxclients", "-1"],
    &["CONFIG", "SET", "slowlog-log-slower-than", "-2"],
    &["CONFIG", "SET", "repl-ping-replica-period", "0"],
    &["CONFIG", "SET", "repl-ping-slave-period", "5"],
    &["CONFIG", "GET", "repl-ping-*"],
    &["CONFIG", "SET", "list-max-ziplist-size", "-3"],
    &["CONFIG", "GET", "list-max-listpack-size"],
    &["CONFIG", "SET", "list-max-ziplist-size", "99999999999"],
    &["CONFIG", "SET", "lua-time-limit", "100"],
    &["CONFIG", "GET", "busy-reply-threshold"],
    &["CONFIG", "SET", "latency-monitor-threshold", "100"],
    &["CONFIG", "GET", "latency-monitor-threshold"],
    &["CONFIG", "SET", "databases", "4"],
    &["CONFIG", "SET", "io-threads", "2"],
    &["CONFIG", "SET", "tcp-backlog", "1"],
    &["CONFIG", "SET", "unixsocketperm", "700"],
    // memory, percentages
    &["CONFIG", "SET", "maxmemory", "1gb"],
    &["CONFIG", "GET", "maxmemory"],
    &["CONFIG", "SET", "maxmemory", "1KB"],
    &["CONFIG", "GET", "maxmemory"],
    &["CONFIG", "SET", "maxmemory", "1.5mb"],
    &["CONFIG", "SET", "maxmemory", "-1"],
    &["CONFIG", "SET", "maxmemory", "99999999999999999999"],
    &["CONFIG", "GET", "maxmemory"],
    &["CONFIG", "SET", "maxmemory", "0"],
    &["CONFIG", "SET", "client-query-buffer-limit", "1k"],
    &["CONFIG", "SET", "hash-max-ziplist-value", "1k"],
    &["CONFIG", "GET", "hash-max-listpack-value"],
    &["CONFIG", "SET", "hash-max-ziplist-value", "64"],
    &["CONFIG", "SET", "repl-backlog-size", "0"],
    &["CONFIG", "SET", "auto-aof-rewrite-min-size", "32mb"],
    &["CONFIG", "GET", "auto-aof-rewrite-min-size"],
    &["CONFIG", "SET", "maxmemory-clients", "50%"],
    &["CONFIG", "GET", "maxmemory-clients"],
    &["CONFIG", "SET", "maxmemory-clients", "200%"],
    &["CONFIG", "SET", "maxmemory-clients", "-101"],
    &["CONFIG", "SET", "maxmemory-clients", "x%"],
    &["CONFIG", "SET", "maxmemory-clients", "0"],
    // one of a set
    &["CONFIG", "SET", "maxmemory-policy", "ALLKEYS-LRU"],
    &["CONFIG", "GET", "maxmemory-policy"],
    &["CONFIG", "SET", "maxmemory-policy", "bogus"],
    &["CONFIG", "SET", "maxmemory-policy", "noeviction"],
    &["CONFIG", "SET", "appendfsync", "sometimes"],
    &["CONFIG", "SET", "oom-score-adj", "relative"],
    &["CONFIG", "GET", "oom-score-adj"],
    &["CONFIG", "SET", "oom-score-adj", "bogus"],
    &["CONFIG", "SET", "acl-pubsub-default", "allchannels"],
    &["CONFIG", "SET", "sanitize-dump-payload", "clients"],
    &["CONFIG", "SET", "repl-diskless-load", "swapdb"],
    &["CONFIG", "SET", "tls-auth-clients", "maybe"],
    &[
        "CONFIG",
        "GET",
        "acl-pubsub-default",
        "sanitize-dump-payload",
        "repl-diskless-load",
    ],
    &["CONFIG", "SET", "supervised", "systemd"],
    &["CONFIG", "SET", "enable-debug-command", "yes"],
    &["CONFIG", "SET", "shutdown-on-sigint", "now save"],
    &["CONFIG", "GET", "shutdown-on-sigint"],
    &["CONFIG", "SET", "shutdown-on-sigint", "save nosave"],
    &["CONFIG", "SET", "shutdown-on-sigint", "bogus"],
    &["CONFIG", "SET", "shutdown-on-sigint", "default"],
    // strings
    &["CONFIG", "SET", "masterauth", "secret"],
    &["CONFIG", "GET", "masterauth"],
    &["CONFIG", "SET", "slave-announce-ip", "10.0.0.9"],
    &["CONFIG", "GET", "replica-announce-ip", "slave-announce-ip"],
    &["CONFIG", "SET", "cluster-announce-hostname", "bad host"],
    &["CONFIG", "SET", "proc-title-template", "{bogus}"],
    &["CONFIG", "SET", "proc-title-template", "{title}"],
    &["CONFIG", "SET", "proc-title-template", "{title} {{x}"],
    &["CONFIG", "GET", "proc-title-template"],
    &["CONFIG", "SET", "dir", "/tmp"],
    &["CONFIG", "SET", "dbfilename", "a/b"],
    &["CONFIG", "SET", "appendfilename", "x"],
    // their own syntaxes
    &["CONFIG", "SET", "save", "100 10 20 5"],
    &["CONFIG", "GET", "save"],
    &["CONFIG", "SET", "save", "10"],
    &["CONFIG", "SET", "save", "10 x"],
    &["CONFIG", "SET", "save", ""],
    &["CONFIG", "GET", "save"],
    &["CONFIG", "SET", "client-output-buffer-limit", "normal 1"],
    &[
        "CONFIG",
        "SET",
        "client-output-buffer-limit",
        "master 1 1 1",
    ],
    &[
        "CONFIG",
        "SET",
        "client-output-buffer-limit",
        "normal 1 1 x",
    ],
    &[
        "CONFIG",
        "SET",
        "client-output-buffer-limit",
        "pubsub 1mb 512kb 1",
    ],
    &["CONFIG", "GET", "client-output-buffer-limit"],
    &["CONFIG", "SET", "notify-keyspace-events", "KEA"],
    &["CONFIG", "GET", "notify-keyspace-events"],
    &["CONFIG", "SET", "notify-keyspace-events", "Kq"],
    &["CONFIG", "SET", "notify-keyspace-events", ""],
    &["CONFIG", "SET", "oom-score-adj-values", "1 2"],
    &["CONFIG", "SET", "oom-score-adj-values", "1 2 3000"],
    &["CONFIG", "SET", "oom-score-adj-values", "0 100 800"],
    &["CONFIG", "GET", "oom-score-adj-values"],
    &[
        "CONFIG",
        "SET",
        "latency-tracking-info-percentiles",
        "50 99.99 100",
    ],
    &["CONFIG", "GET", "latency-tracking-info-percentiles"],
    &["CONFIG", "SET", "latency-tracking-info-percentiles", "101"],
    &["CONFIG", "SET", "latency-tracking-info-percentiles", "x"],
    &["CONFIG", "SET", "latency-tracking-info-percentiles", ""],
    &["CONFIG", "GET", "latency-tracking-info-percentiles"],
    &["CONFIG", "SET", "replicaof", "no one"],
    &["CONFIG", "SET", "slaveof", "a b"],
    // several at once: all or nothing, the first failure reported
    &[
        "CONFIG",
        "SET",
        "maxmemory",
        "1mb",
        "maxmemory-policy",
        "bogus",
    ],
    &["CONFIG", "GET", "maxmemory"],
    &["CONFIG", "SET", "hz", "5", "HZ", "6"],
    &["CONFIG", "SET", "nosuch", "1", "hz", "5"],
    &["CONFIG", "SET", "hz", "5", "nosuch", "1"],
    &["CONFIG", "SET", "databases", "4", "nosuch", "1"],
    &["CONFIG", "SET", "maxmemory", "1", "foo"],
    &["CONFIG", "SET", "maxmemory", "2mb", "lua-time-limit", "200"],
    &[
        "CONFIG",
        "GET",
        "maxmemory",
        "lua-time-limit",
        "busy-reply-threshold",
    ],
    &["CONFIG", "SET", "maxmemory", "0", "lua-time-limit", "5000"],
    // CONFIG GET by pattern and by alias
    &["CONFIG", "GET", "*ziplist*"],
    &["CONFIG", "GET", "hash-max-*-entries"],
    &["CONFIG", "GET", "*slave*"],
    &["CONFIG", "GET", "HZ"],
    &["CONFIG", "GET", "hz", "HZ", "h?"],
    &["CONFIG", "GET", "slaveof", "replicaof"],
    &["CONFIG", "GET", "key-load-*"],
    &["CONFIG", "GET", "nosuch"],
    &["CONFIG", "GET", "maxmemory*", "*policy"],
    &["CONFIG", "REWRITE"],
];

#[test]
fn config_set_and_get_reply_as_redis() {
    // Strata's one deliberately different default of a directive the script reads.
    let redis = common::redis(&["--hash-max-listpack-entries", "128"]);
    let strata = strata();
    let (mut r, mut s) = (Conn::to(redis.port), Conn::to(strata.port));
    let mut mismatches = Vec::new();
    for cmd in SCRIPT {
        let want = r.call(cmd);
        let got = s.call(cmd);
        let same = if cmd[1] == "GET" && want.is_aggregate() {
            pairs(&want) == pairs(&got)
        } else {
            want.raw == got.raw
        };
        if !same {
            mismatches.push(format!(
                "{}\n  redis:  {}\n  strata: {}",
                cmd.join(" "),
                want.shown(),
                got.shown()
            ));
        }
    }
    assert!(
        mismatches.is_empty(),
        "{} of {} commands differ:\n{}",
        mismatches.len(),
        SCRIPT.len(),
        mismatches.join("\n")
    );
}

/// redis-server started with a config file (which must come first) and options.
struct RedisWithFile {
    port: u16,
    child: Child,
}

impl Drop for RedisWithFile {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn redis_with_file(file: &std::path::Path, args: &[&str]) -> RedisWithFile {
    let port = common::free_port();
    let child = Command::new("redis-server")
        .arg(file)
        .args(["--port", &port.to_string(), "--bind", "127.0.0.1"])
        .args(args)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap_or_else(|e| panic!("redis-server is required: {e}"));
    let end = Instant::now() + Duration::from_secs(10);
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(Instant::now() < end, "redis-server did not start");
        std::thread::sleep(Duration::from_millis(20));
    }
    RedisWithFile { port, child }
}

/// A config file written by hand for an older Redis: its old names are read as the new
/// ones, and command-line directives override it, as redis-server does.
#[test]
fn old_names_in_a_file_and_on_the_command_line() {
    let dir = common::temp_dir("conf");
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("old.conf");
    std::fs::write(
        &file,
        "# an older redis.conf\n\
         hash-max-ziplist-entries 2\n\
         list-max-ziplist-size -3\n\
         lua-time-limit 250\n\
         slave-read-only no\n\
         repl-ping-slave-period 7\n\
         save 900 1\n\
         save 60 100\n\
         list-max-ziplist-entries 512\n\
         appendonly no\n",
    )
    .unwrap();
    let args = [
        "--enable-debug-command",
        "yes",
        "--list-max-ziplist-size",
        "-2",
        "--lua-time-limit",
        "100",
    ];
    let redis = redis_with_file(&file, &args);
    let mut all = vec![file.to_str().unwrap()];
    all.extend(args);
    let strata = common::strata(&all);
    let names = [
        "hash-max-listpack-entries",
        "list-max-listpack-size",
        "busy-reply-threshold",
        "lua-time-limit",
        "replica-read-only",
        "repl-ping-replica-period",
        "save",
        "enable-debug-command",
    ];
    let (mut r, mut s) = (Conn::to(redis.port), Conn::to(strata.port));
    let want = config_get(&mut r, &names);
    assert_eq!(want["lua-time-limit"], "100");
    assert_eq!(config_get(&mut s, &names), want);
    // The old name has its effect: a hash of three fields is no longer a listpack.
    for c in [&mut r, &mut s] {
        c.call(&["HSET", "h", "a", "1", "b", "2", "c", "3"]);
    }
    let encoding = r.call(&["OBJECT", "ENCODING", "h"]).raw;
    assert_eq!(encoding, b"$9\r\nhashtable\r\n");
    assert_eq!(s.call(&["OBJECT", "ENCODING", "h"]).raw, encoding);
    drop(strata);
    std::fs::remove_dir_all(&dir).ok();
}

/// CONFIG REWRITE writes what differs from the defaults under the current names, and a
/// restart with the file comes back with the same configuration.
#[test]
fn config_rewrite_round_trip() {
    let dir = common::temp_dir("rewrite");
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("strata.conf");
    std::fs::write(&file, "slave-priority 50\nhz 20\nappendonly no\n").unwrap();
    let path = file.to_str().unwrap();
    let strata = common::strata(&[path]);
    let mut c = Conn::to(strata.port);
    for cmd in [
        &["CONFIG", "SET", "maxmemory", "2mb", "lua-time-limit", "300"][..],
        &[
            "CONFIG",
            "SET",
            "save",
            "100 10",
            "requirepass",
            "a \"quoted\" word",
        ],
        &["CONFIG", "REWRITE"],
    ] {
        assert_eq!(c.call(cmd).raw, b"+OK\r\n", "{cmd:?}");
    }
    let text = std::fs::read_to_string(&file).unwrap();
    for name in [
        "replica-priority",
        "busy-reply-threshold",
        "maxmemory",
        "hz",
        "save",
    ] {
        assert!(
            text.lines().any(|l| l.starts_with(&format!("{name} "))),
            "{name} missing from:\n{text}"
        );
    }
    assert!(
        !text.contains("slave-") && !text.contains("lua-time-limit"),
        "{text}"
    );
    c.call(&["AUTH", "a \"quoted\" word"]);
    let before = config_get(&mut c, &["*"]);
    drop(c);
    drop(strata);
    let again = common::strata(&[path]);
    let mut c = Conn::to(again.port);
    assert_eq!(c.call(&["AUTH", "a \"quoted\" word"]).raw, b"+OK\r\n");
    let after = config_get(&mut c, &["*"]);
    for (name, value) in &before {
        if name != "port" && name != "dir" {
            assert_eq!(after.get(name), Some(value), "{name} after a restart");
        }
    }
    std::fs::remove_dir_all(&dir).ok();
}

/// An unknown directive, or a wrong number of words, stops the start as it stops
/// redis-server's, with its text.
#[test]
fn bad_directives_stop_the_start_as_in_redis() {
    let dir = common::temp_dir("bad");
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("bad.conf");
    std::fs::write(&file, "hz 1 2\n").unwrap();
    let file = file.to_str().unwrap();
    let strata_bin = env!("CARGO_BIN_EXE_strata");
    for (strata_args, redis_args) in [
        (vec!["serve", "--nosuch", "1"], vec!["--nosuch", "1"]),
        (vec!["serve", file], vec![file]),
        (
            vec!["serve", "--maxmemory", "lots"],
            vec!["--maxmemory", "lots"],
        ),
    ] {
        let run = |bin: &str, args: &[&str]| {
            let out = Command::new(bin)
                .args(args)
                .args(["--port", "0", "--dir"])
                .arg(&dir)
                .output()
                .unwrap_or_else(|e| panic!("{bin}: {e}"));
            let text = String::from_utf8_lossy(&out.stderr).into_owned()
                + &String::from_utf8_lossy(&out.stdout);
            (out.status.success(), text)
        };
        let (redis_ok, redis_said) = run("redis-server", &redis_args);
        let (strata_ok, strata_said) = run(strata_bin, &strata_args);
        assert!(!redis_ok && !strata_ok, "{strata_args:?} was accepted");
        let reason = redis_said
            .lines()
            .rev()
            .find(|l| !l.trim().is_empty())
            .unwrap_or_default()
            .trim();
        assert!(
            !reason.is_empty(),
            "redis-server gave no reason for {redis_args:?}"
        );
        assert!(
            strata_said.contains(reason),
            "{strata_args:?}: redis-server said {reason:?}, strata said {strata_said:?}"
        );
    }
    std::fs::remove_dir_all(&dir).ok();
}

/// `active-expire-effort` takes effect at run time. Keys due among ten times as many with
/// a long TTL (under the 10% of a round at which the default effort stops) mostly stay at
/// the default effort, as in Redis; at effort 10 the cycle goes on until it finds almost
/// none, and they all go without a client touching them.
#[test]
fn active_expire_effort_takes_effect() {
    let p = common::strata(&[]);
    let mut c = p.client();
    let mut pipe = redis::pipe();
    let keys = (0..20_000).map(|i| (format!("long:{i}"), "EX", 100_000));
    for (key, unit, ttl) in keys.chain((0..2_000).map(|i| (format!("due:{i}"), "PX", 200))) {
        pipe.cmd("SET")
            .arg(key)
            .arg("v")
            .arg(unit)
            .arg(ttl)
            .ignore();
    }
    let () = pipe.query(&mut c).expect("the SETs");
    let dbsize =
        |c: &mut redis::Connection| -> i64 { redis::cmd("DBSIZE").query(c).expect("DBSIZE") };
    std::thread::sleep(Duration::from_millis(1200));
    let left = dbsize(&mut c) - 20_000;
    assert!(
        left > 1_000,
        "at effort 1, {left} of 2000 due keys left after 1 s"
    );

    let () = redis::cmd("CONFIG")
        .arg(&["SET", "active-expire-effort", "10"])
        .query(&mut c)
        .expect("CONFIG SET");
    let deadline = Instant::now() + Duration::from_secs(8);
    while dbsize(&mut c) != 20_000 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
    }
    assert_eq!(
        dbsize(&mut c),
        20_000,
        "at effort 10, due keys left after 8 s"
    );
}

/// `pidfile` holds the server's process id while it runs; a clean exit (SIGTERM, as a
/// supervisor stops it) removes it.
#[test]
fn pidfile_holds_the_pid_until_a_clean_exit() {
    let dir = common::temp_dir("pidfile");
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("strata.pid");
    let mut p = common::strata(&["--pidfile", path.to_str().unwrap()]);
    let written = std::fs::read_to_string(&path).expect("the pid file");
    assert_eq!(written, format!("{}\n", p.pid()));
    p.terminate();
    assert!(
        p.wait_exit(Duration::from_secs(20)),
        "SIGTERM did not stop it"
    );
    assert!(!path.exists(), "the pid file outlived a clean exit");
    let _ = std::fs::remove_dir_all(&dir);
}

/// `oom-score-adj`: the process's /proc/PID/oom_score_adj follows the role (primary,
/// replica) as Redis sets it, relative to the score it started with or absolute, and goes
/// back to that score with `no`.
#[test]
fn oom_score_adj_follows_the_role() {
    let p = common::strata(&[]);
    let mut c = p.client();
    let path = format!("/proc/{}/oom_score_adj", p.pid());
    let score = || -> i32 {
        std::fs::read_to_string(&path)
            .expect("oom_score_adj")
            .trim()
            .parse()
            .expect("a number")
    };
    let base = score();
    let relative = |v: i32| (base + v).clamp(-1000, 1000);
    let set = |c: &mut redis::Connection, name: &str, value: &str| {
        let _: () = common::query(c, &["CONFIG", "SET", name, value]);
    };
    set(&mut c, "oom-score-adj-values", "10 200 800");
    assert_eq!(score(), base, "`no` leaves the score alone");
    set(&mut c, "oom-score-adj", "yes");
    assert_eq!(score(), relative(10));
    let nowhere = common::free_port().to_string();
    let _: () = common::query(&mut c, &["REPLICAOF", "127.0.0.1", &nowhere]);
    assert_eq!(score(), relative(200), "a replica's score");
    let _: () = common::query(&mut c, &["REPLICAOF", "NO", "ONE"]);
    assert_eq!(score(), relative(10));
    set(&mut c, "oom-score-adj", "absolute");
    assert_eq!(score(), 10);
    set(&mut c, "oom-score-adj", "no");
    assert_eq!(score(), base, "`no` puts the starting score back");
}
