//! MONITOR and LATENCY against redis-server: the lines a monitor receives for the same
//! commands (timestamps and client addresses aside), and the per-command latency
//! histograms of LATENCY HISTOGRAM.

mod common;

use common::{Proc, RawReply, RespConn};
use std::time::{SystemTime, UNIX_EPOCH};

/// Runs `steps` on one connection while another monitors, and returns the monitor's lines
/// with the timestamp cut off and this connection's address written `client`. Checks
/// that each timestamp is the time of the command (within a few seconds).
fn monitored(p: &Proc, steps: &[&[&str]]) -> Vec<String> {
    let mut m = RespConn::new(p);
    assert_eq!(m.call(&["monitor"]).unwrap().raw, b"+OK\r\n");
    let mut c = RespConn::new(p);
    let me = c.stream().local_addr().unwrap().to_string();
    for s in steps {
        c.call(s).unwrap();
    }
    c.call(&["echo", "the end"]).unwrap();
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs_f64();
    let mut lines = Vec::new();
    loop {
        let l = m.read().unwrap();
        assert_eq!(l.kind, b'+', "{}", l.shown());
        let text = String::from_utf8_lossy(&l.raw[1..l.raw.len() - 2]).into_owned();
        let (stamp, rest) = text.split_once(' ').unwrap();
        let micros = stamp.split_once('.').map(|(_, f)| f.len());
        assert_eq!(micros, Some(6), "seconds.microseconds: {stamp}");
        let ts: f64 = stamp.parse().unwrap();
        assert!((now - ts).abs() < 10.0, "timestamp {ts} vs now {now}");
        let line = rest.replace(&me, "client");
        if line.contains("\"the end\"") {
            return lines;
        }
        lines.push(line);
    }
}

#[test]
fn monitor_lines_match_redis() {
    let steps: &[&[&str]] = &[
        &["set", "foo", "bar"],
        &["get", "foo"],
        &["set", "bin", "a \"q\"\\ \r\n\t\x07\x08\x01\u{7f}é"],
        &["select", "1"],
        &["set", "x", "y"],
        &["select", "0"],
        // A transaction: its commands, then EXEC.
        &["multi"],
        &["set", "a", "1"],
        &["incr", "a"],
        &["exec"],
        // A refused command is not shown; the EXEC it dooms is.
        &["multi"],
        &["nosuchcommand"],
        &["exec"],
        &["set", "k"],
        // Scripts: EVAL first, then its calls, from "lua".
        &["eval", "redis.call('set', KEYS[1], ARGV[1]); return redis.call('select', '2')", "1", "k", "v"],
        &["evalsha", "0000000000000000000000000000000000000000", "0"],
        &["function", "load", "replace", "#!lua name=lib\nredis.register_function('f', function(keys) return redis.call('get', keys[1]) end)"],
        &["fcall", "f", "1", "k"],
        // Passwords never show.
        &["auth", "secret"],
        &["auth", "user", "secret"],
        &["hello", "2", "auth", "user", "secret"],
        &["hello", "2", "setname", "me"],
        // Admin commands are not shown.
        &["config", "get", "maxmemory"],
        &["client", "list"],
        &["client", "id"],
        &["ping"],
    ];
    let s = common::strata(&[]);
    let r = common::redis(&[]);
    let got = monitored(&s, steps);
    let want = monitored(&r, steps);
    assert!(want.iter().any(|l| l.contains(" lua]")), "{want:#?}");
    assert_eq!(got, want);
}

/// A monitor stops receiving lines after RESET, and inside a transaction MONITOR is an
/// error, as in Redis.
#[test]
fn monitor_ends_with_reset() {
    let s = common::strata(&[]);
    let mut m = RespConn::new(&s);
    let mut c = RespConn::new(&s);
    m.call(&["monitor"]).unwrap();
    c.call(&["set", "a", "1"]).unwrap();
    let line = m.read().unwrap();
    assert!(
        line.shown().contains("\\\"set\\\" \\\"a\\\" \\\"1\\\""),
        "{}",
        line.shown()
    );
    let list = c.call(&["client", "list"]).unwrap();
    assert!(String::from_utf8_lossy(&list.raw).contains("flags=O "));
    assert_eq!(m.call(&["reset"]).unwrap().raw, b"+RESET\r\n");
    c.call(&["set", "a", "2"]).unwrap();
    assert_eq!(
        m.call(&["ping"]).unwrap().raw,
        b"+PONG\r\n",
        "no line in between"
    );
    c.call(&["multi"]).unwrap();
    c.call(&["monitor"]).unwrap();
    let exec = c.call(&["exec"]).unwrap();
    assert!(
        exec.shown().contains("MONITOR isn't allowed"),
        "{}",
        exec.shown()
    );
}

/// (command, calls, [(bucket label, cumulative count)]) of a LATENCY HISTOGRAM reply.
type Histograms = Vec<(String, i64, Vec<(i64, i64)>)>;

fn text(r: &RawReply) -> String {
    let raw = String::from_utf8_lossy(&r.raw).into_owned();
    raw.split("\r\n").nth(1).unwrap_or("").to_string()
}

fn number(r: &RawReply) -> i64 {
    String::from_utf8_lossy(&r.raw[1..r.raw.len() - 2])
        .parse()
        .unwrap()
}

fn histograms(r: &RawReply) -> Histograms {
    r.elems
        .chunks(2)
        .map(|pair| {
            let body = &pair[1].elems;
            let buckets = body[3]
                .elems
                .chunks(2)
                .map(|b| (number(&b[0]), number(&b[1])))
                .collect();
            (text(&pair[0]), number(&body[1]), buckets)
        })
        .collect()
}

fn latency_histograms(p: &Proc, resp3: bool) -> Histograms {
    let mut c = RespConn::new(p);
    if resp3 {
        c.call(&["hello", "3"]).unwrap();
    }
    c.call(&["config", "resetstat"]).unwrap();
    // Sleeps well inside their buckets (16.8-33.5 ms, 67-134 ms), whatever the load.
    c.call(&["debug", "sleep", "0.02"]).unwrap();
    c.call(&["debug", "sleep", "0.09"]).unwrap();
    c.call(&["set", "a", "b"]).unwrap();
    c.call(&["client", "id"]).unwrap();
    let all = histograms(&c.call(&["latency", "histogram"]).unwrap());
    let some = c
        .call(&["latency", "histogram", "nosuch", "client", "debug"])
        .unwrap();
    let mut h = histograms(&some);
    h.extend(all);
    for (name, calls, buckets) in &mut h {
        // How long a fast command takes differs between servers: keep its count only.
        if name != "debug" {
            *buckets = vec![(0, *calls)];
        }
    }
    h.sort();
    h
}

#[test]
fn latency_histograms_match_redis() {
    let s = common::strata(&["--enable-debug-command", "yes"]);
    let r = common::redis(&["--enable-debug-command", "yes"]);
    for resp3 in [false, true] {
        // On a loaded machine a sleep can overrun into the next bucket on either server:
        // the labels must match in one of a few rounds (a wrong label never would).
        let mut rounds = Vec::new();
        for _ in 0..5 {
            let got = latency_histograms(&s, resp3);
            let want = latency_histograms(&r, resp3);
            assert!(
                want.iter()
                    .any(|(n, calls, b)| n == "debug" && *calls == 2 && b.len() == 2),
                "{want:?}"
            );
            if got == want {
                break;
            }
            rounds.push((got, want));
        }
        assert!(
            rounds.len() < 5,
            "resp3: {resp3}, (strata, redis): {rounds:#?}"
        );
    }
}

/// LATENCY's replies when nothing was recorded, and its errors, as redis-server gives
/// them (the monitor is off by default on both).
#[test]
fn latency_replies_match_redis() {
    let s = common::strata(&[]);
    let r = common::redis(&[]);
    let steps: &[&[&str]] = &[
        &["latency", "latest"],
        &["latency", "history", "command"],
        &["latency", "reset"],
        &["latency", "reset", "command", "nope"],
        &["latency", "graph", "command"],
        &["latency", "help", "x"],
        &["latency", "nosuch"],
        &["latency", "help"],
    ];
    for step in steps {
        let (a, b) = (
            RespConn::new(&s).call(step).unwrap(),
            RespConn::new(&r).call(step).unwrap(),
        );
        assert_eq!(a.shown(), b.shown(), "{step:?}");
    }
    let doctor = RespConn::new(&s).call(&["latency", "doctor"]).unwrap();
    assert!(doctor.raw.len() > 40, "{}", doctor.shown());
}
