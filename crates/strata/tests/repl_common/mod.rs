//! Shared by the replication tests: servers set up to replicate (Strata and Debian's
//! redis-server), INFO replication read as fields, waiting for a replica to catch up, and a
//! mix of writes of every type to replicate.
#![allow(dead_code)]

use crate::common::{self, Proc};
use std::collections::HashMap;
use std::time::{Duration, Instant};

/// Diskless full syncs start at once (Redis waits 5 seconds by default for more replicas).
pub const FAST_SYNC: &[&str] = &["--repl-diskless-sync-delay", "0"];

/// A Strata server ready to serve replicas at once, with `extra` options.
pub fn strata(extra: &[&str]) -> Proc {
    let mut args = FAST_SYNC.to_vec();
    args.extend_from_slice(extra);
    common::strata(&args)
}

/// Debian's redis-server, ready to serve replicas at once (the common helper panics with
/// the install hint when it is missing), in a directory of its own: a replica saves the
/// RDB it receives there.
pub fn redis(extra: &[&str]) -> Proc {
    let dir = common::temp_dir("redis");
    std::fs::create_dir_all(&dir).expect("create the redis-server directory");
    let mut args = FAST_SYNC.to_vec();
    args.extend_from_slice(&["--dir", dir.to_str().expect("utf-8 temp dir")]);
    args.extend_from_slice(extra);
    let mut p = common::redis(&args);
    p.own_dir = Some(dir);
    p
}

/// Runs a command, panicking with its text when it fails.
pub fn run<T: redis::FromRedisValue>(c: &mut redis::Connection, args: &[&str]) -> T {
    let mut cmd = redis::cmd(args[0]);
    for a in &args[1..] {
        cmd.arg(*a);
    }
    cmd.query(c).unwrap_or_else(|e| panic!("{args:?}: {e}"))
}

/// The error text a command gets (panics if it succeeds).
pub fn error_text(c: &mut redis::Connection, args: &[&str]) -> String {
    let mut cmd = redis::cmd(args[0]);
    for a in &args[1..] {
        cmd.arg(*a);
    }
    match cmd.query::<redis::Value>(c) {
        Ok(v) => panic!("{args:?} succeeded: {v:?}"),
        Err(e) => {
            // The redis crate splits "CODE detail" into a kind and a detail.
            let code = e.code().unwrap_or_default().to_string();
            let detail = e.detail().unwrap_or_default().to_string();
            format!("{code} {detail}").trim().to_string()
        }
    }
}

/// The fields of an INFO section.
pub fn info(c: &mut redis::Connection, section: &str) -> HashMap<String, String> {
    let text: String = run(c, &["INFO", section]);
    text.lines()
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.to_string(), v.trim().to_string()))
        .collect()
}

/// One field of an INFO section, panicking with the section when it is missing.
pub fn field(c: &mut redis::Connection, section: &str, name: &str) -> String {
    let all = info(c, section);
    all.get(name)
        .cloned()
        .unwrap_or_else(|| panic!("no {name} in INFO {section}: {all:?}"))
}

/// A numeric INFO field.
pub fn number(c: &mut redis::Connection, section: &str, name: &str) -> i64 {
    let v = field(c, section, name);
    v.parse()
        .unwrap_or_else(|_| panic!("INFO {section} {name} is not a number: {v}"))
}

/// Polls `f` until it holds, panicking with `what` after `secs` seconds.
pub fn wait_until(what: &str, secs: u64, mut f: impl FnMut() -> bool) {
    let end = Instant::now() + Duration::from_secs(secs);
    while !f() {
        assert!(Instant::now() < end, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// REPLICAOF the server `primary`.
pub fn replicaof(c: &mut redis::Connection, primary: &Proc) {
    let port = primary.port.to_string();
    let _: () = run(c, &["REPLICAOF", "127.0.0.1", &port]);
}

/// Waits until the replica's link is up and it applied everything the primary streamed.
pub fn wait_synced(primary: &mut redis::Connection, replica: &mut redis::Connection) {
    wait_until("the replica to catch up with its primary", 60, || {
        let r = info(replica, "replication");
        if r.get("master_link_status").map(String::as_str) != Some("up") {
            return false;
        }
        let p = number(primary, "replication", "master_repl_offset");
        r.get("slave_repl_offset")
            .and_then(|o| o.parse::<i64>().ok())
            .is_some_and(|o| o >= p)
    });
}

/// WAIT `n` replicas for up to `ms` milliseconds; returns how many acknowledged.
pub fn wait_acks(c: &mut redis::Connection, n: usize, ms: u64) -> i64 {
    run(c, &["WAIT", &n.to_string(), &ms.to_string()])
}

/// Writes of every type and the ways a write reaches a replica: plain commands in several
/// databases, MULTI/EXEC, a script, relative expiries (replicated as absolute ones),
/// deletions, and a key that expires. `tag` keeps the keys of one call apart from
/// another's. Returns the number of commands sent.
pub fn write_mix(c: &mut redis::Connection, tag: &str, rounds: usize) -> usize {
    let mut sent = 0;
    for i in 0..rounds {
        let k = |name: &str| format!("{tag}:{name}:{}", i % 7);
        let n = i.to_string();
        let cmds: Vec<Vec<String>> = vec![
            vec!["SET".into(), k("str"), n.clone()],
            vec!["INCRBY".into(), k("ctr"), n.clone()],
            vec!["APPEND".into(), k("app"), n.clone()],
            vec!["RPUSH".into(), k("list"), n.clone(), "x".into()],
            vec!["LPOP".into(), k("list")],
            vec!["HSET".into(), k("hash"), format!("f{}", i % 5), n.clone()],
            vec!["SADD".into(), k("set"), n.clone()],
            vec!["SREM".into(), k("set"), (i / 2).to_string()],
            vec!["ZADD".into(), k("zset"), n.clone(), format!("m{}", i % 9)],
            vec!["ZINCRBY".into(), k("zset"), "1.5".into(), "m0".into()],
            vec![
                "XADD".into(),
                k("stream"),
                "*".into(),
                "i".into(),
                n.clone(),
            ],
            vec!["PFADD".into(), k("hll"), n.clone()],
            vec!["SETBIT".into(), k("bits"), (i * 3).to_string(), "1".into()],
            vec!["EXPIRE".into(), k("str"), "1000".into()],
            vec![
                "SET".into(),
                k("ex"),
                n.clone(),
                "PX".into(),
                "100000".into(),
            ],
            vec!["DEL".into(), format!("{tag}:str:{}", (i + 3) % 7)],
            vec!["SELECT".into(), "5".into()],
            vec!["SET".into(), k("in5"), n.clone()],
            vec!["SELECT".into(), "0".into()],
            vec![
                "EVAL".into(),
                "redis.call('INCR', KEYS[1]); return redis.call('LPUSH', KEYS[2], ARGV[1])".into(),
                "2".into(),
                k("lua-ctr"),
                k("lua-list"),
                n.clone(),
            ],
        ];
        for cmd in &cmds {
            let args: Vec<&str> = cmd.iter().map(String::as_str).collect();
            let _: redis::Value = run(c, &args);
            sent += 1;
        }
        let mut tx = redis::pipe();
        tx.atomic()
            .cmd("INCR")
            .arg(k("tx"))
            .cmd("HINCRBY")
            .arg(k("tx-hash"))
            .arg("n")
            .arg(i)
            .cmd("SMOVE")
            .arg(k("set"))
            .arg(k("set2"))
            .arg(n.as_str());
        let _: redis::Value = tx.query(c).expect("MULTI/EXEC");
        sent += 1;
    }
    // A key that expires on the primary (read after its time, so that it goes now): a
    // replica loses it by the primary's DEL.
    let short = format!("{tag}:short");
    let _: () = run(c, &["SET", &short, "v", "PX", "1"]);
    std::thread::sleep(Duration::from_millis(5));
    let exists: i64 = run(c, &["EXISTS", &short]);
    assert_eq!(exists, 0, "{short} outlived its expiry");
    sent + 1
}

/// Sends SIGKILL to a server and waits for it to be gone (its data directory stays).
pub fn kill9(p: &Proc) {
    // SAFETY: kill(2) on the pid of a child the test spawned and has not reaped.
    let r = unsafe { libc::kill(p.pid() as libc::pid_t, libc::SIGKILL) };
    assert_eq!(
        r,
        0,
        "kill -9 {}: {}",
        p.pid(),
        std::io::Error::last_os_error()
    );
    wait_until("the killed server's port to close", 10, || {
        std::net::TcpStream::connect(("127.0.0.1", p.port)).is_err()
    });
}
