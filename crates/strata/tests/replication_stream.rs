//! What goes down the replication stream, compared with redis-server's: the same commands
//! against a Strata primary and a redis-server primary, each watched by `redis-cli
//! --replica` (a real replica's handshake, then every command it is sent, one per line).
//! Commands that pick their key or block go down as the plain pops they amounted to
//! (LMPOP, BLMPOP, ZMPOP, BZMPOP, BZPOPMIN), BLMOVE and BRPOPLPUSH as the moves they
//! amounted to, GETDEL as DEL, GETSET as SET; one that changed nothing (a
//! pop of nothing, a DEL of missing keys, a trim of nothing, an LREM, SREM or ZADD that
//! found nothing to do, an empty *STORE) not at all, as Redis sends only what moved its
//! dirty counter. PUBLISH reaches the replicas, inside MULTI too; a transaction's
//! consumer-group reads go down as their XCLAIMs; keys SCAN expires go down as DELs of
//! their own.

mod common;
mod repl_common;

use common::Proc;
use repl_common::{redis, run, strata};
use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// `redis-cli --replica` against `p`, its lines (stdout and stderr) sent to the returned
/// channel.
fn watch(p: &Proc) -> (Child, mpsc::Receiver<String>) {
    let mut child = Command::new("stdbuf")
        .args(["-oL", "redis-cli", "-p", &p.port.to_string(), "--replica"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run redis-cli --replica (Debian: redis-tools, coreutils' stdbuf)");
    let (tx, rx) = mpsc::channel();
    let out = child.stdout.take().expect("redis-cli's stdout");
    let err = child.stderr.take().expect("redis-cli's stderr");
    forward(out, tx.clone());
    forward(err, tx);
    (child, rx)
}

fn forward(from: impl std::io::Read + Send + 'static, tx: mpsc::Sender<String>) {
    std::thread::spawn(move || {
        for line in BufReader::new(from).lines().map_while(Result::ok) {
            if tx.send(line).is_err() {
                return;
            }
        }
    });
}

/// Waits for redis-cli's "SYNC done" line: writes before the primary's sync point go into
/// the RDB, not the stream, and a primary may count the replica before it takes that point.
fn wait_synced(rx: &mpsc::Receiver<String>) {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        let line = rx
            .recv_timeout(left)
            .unwrap_or_else(|_| panic!("redis-cli --replica never finished its sync"));
        if line.contains("SYNC done") {
            return;
        }
    }
}

/// The commands the stream carried until `SET <mark> 1`, lower-cased, without the
/// keepalive PINGs and SELECTs, an XCLAIM's TIME (a clock reading) shown as `<time>`.
fn commands_until(rx: &mpsc::Receiver<String>, mark: &str) -> Vec<String> {
    let deadline = Instant::now() + Duration::from_secs(20);
    let mut seen = Vec::new();
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        let line = rx
            .recv_timeout(left)
            .unwrap_or_else(|_| panic!("no `SET {mark} 1` in the stream; saw {seen:?}"));
        // Only the commands are quoted (redis-cli's own lines go to stderr).
        if !line.starts_with('"') {
            continue;
        }
        let cmd = line.to_ascii_lowercase();
        if cmd.starts_with("\"ping\"") || cmd.starts_with("\"select\"") {
            continue;
        }
        if cmd == format!("\"set\",\"{mark}\",\"1\"") {
            return seen;
        }
        let mut words: Vec<&str> = cmd.split(',').collect();
        for i in 1..words.len() {
            if words[i - 1] == "\"time\"" {
                words[i] = "<time>";
            }
        }
        seen.push(words.join(","));
    }
}

/// Runs `before`, then `writes` while `redis-cli --replica` watches `p`; returns what the
/// stream carried for `writes`.
fn stream_of(p: &Proc, before: &[&[&str]], writes: &[&[&str]]) -> Vec<String> {
    let mut c = p.client();
    for w in before {
        let _: redis::Value = run(&mut c, w);
    }
    let (mut child, rx) = watch(p);
    wait_synced(&rx);
    for w in writes {
        let _: redis::Value = run(&mut c, w);
    }
    let _: redis::Value = run(&mut c, &["SET", "end", "1"]);
    let seen = commands_until(&rx, "end");
    let _ = child.kill();
    let _ = child.wait();
    seen
}

/// The streams `writes` (after `before`) make on redis-server and on Strata are the
/// same; the reference one has a line starting with `expected`, so that the comparison
/// covers what it is meant to.
fn assert_same_stream(before: &[&[&str]], writes: &[&[&str]], expected: &str) {
    let want = stream_of(&redis(&[]), before, writes);
    let got = stream_of(&strata(&[]), before, writes);
    assert!(
        want.iter().any(|c| c.starts_with(expected)),
        "the reference stream has no {expected}: {want:?}"
    );
    assert_eq!(got, want);
}

#[test]
fn pops_and_getdel_go_down_the_stream_as_redis_sends_them() {
    let writes: &[&[&str]] = &[
        &["RPUSH", "l1", "a", "b", "c"],
        &["RPUSH", "l2", "x", "y"],
        &["LMPOP", "2", "l0", "l1", "LEFT", "COUNT", "2"],
        &["LMPOP", "2", "l0", "l1", "RIGHT", "COUNT", "10"],
        &["LMPOP", "2", "l0", "l1", "RIGHT", "COUNT", "10"],
        &["BLMPOP", "0", "2", "l1", "l2", "LEFT", "COUNT", "5"],
        &["RPUSH", "l3", "p", "q"],
        &["BLPOP", "l3", "0"],
        &["BRPOP", "l3", "0"],
        &["ZADD", "z1", "1", "a", "2", "b", "3", "c"],
        &["ZMPOP", "1", "z1", "MIN", "COUNT", "2"],
        &["ZMPOP", "1", "z0", "MIN"],
        &["BZPOPMAX", "z1", "0"],
        &["ZADD", "z2", "1", "a", "2", "b"],
        &["BZMPOP", "0", "2", "z0", "z2", "MAX", "COUNT", "5"],
        &["SET", "s", "v"],
        &["GETDEL", "s"],
        &["GETDEL", "s"],
        &["DEL", "nothing", "here"],
        &["UNLINK", "nothing"],
        &["SET", "gone", "1"],
        &["DEL", "gone", "nothing"],
        &["SPOP", "noset"],
        &["SPOP", "noset", "3"],
        &["EVAL", "return redis.call('spop', KEYS[1])", "1", "noset"],
        &["INCRBYFLOAT", "f", "1.5"],
        &["SET", "g", "1"],
        &["GETSET", "g", "2"],
        &["SET", "g", "3", "GET"],
        &["RPUSH", "l4", "a", "b", "c"],
        &["BRPOPLPUSH", "l4", "l5", "0"],
        &["BLMOVE", "l4", "l5", "LEFT", "RIGHT", "0"],
        &["BLMOVE", "l5", "l4", "RIGHT", "LEFT", "0"],
        &[
            "EVAL",
            "return redis.call('incrbyfloat', KEYS[1], '2.25')",
            "1",
            "f",
        ],
    ];
    assert_same_stream(&[], writes, "\"lpop\"");
}

/// Writes that change nothing are not sent, and HINCRBYFLOAT goes down as the HSET of its
/// result.
#[test]
fn writes_that_change_nothing_go_down_as_redis_sends_them() {
    let before: &[&[&str]] = &[
        &["RPUSH", "l", "a", "b", "c"],
        &["SADD", "s", "a"],
        &["ZADD", "z", "1", "a"],
        &["HSET", "h", "a", "1"],
        &["SET", "k", "v"],
        &["PFADD", "hll", "a"],
    ];
    let writes: &[&[&str]] = &[
        &["LTRIM", "l", "0", "-1"],
        &["LREM", "l", "0", "zz"],
        &["LINSERT", "l", "BEFORE", "zz", "q"],
        &["LINSERT", "nol", "BEFORE", "zz", "q"],
        &["LPUSHX", "nol", "a"],
        &["RPUSHX", "nol", "a"],
        &["LPOP", "l", "0"],
        &["RPOP", "nol"],
        &["SADD", "s", "a"],
        &["SREM", "s", "zz"],
        &["SREM", "nos", "a"],
        &["SMOVE", "s", "s", "a"],
        &["SMOVE", "nos", "s2", "a"],
        &["SINTERSTORE", "sd", "nos1", "nos2"],
        &["ZADD", "z", "1", "a"],
        &["ZADD", "z", "NX", "5", "a"],
        &["ZADD", "noz", "XX", "5", "a"],
        &["ZREM", "z", "zz"],
        &["ZREMRANGEBYSCORE", "z", "10", "20"],
        &["ZREMRANGEBYRANK", "z", "5", "10"],
        &["ZPOPMIN", "noz"],
        &["ZUNIONSTORE", "zd", "1", "noz"],
        &["ZRANGESTORE", "zd", "noz", "0", "-1"],
        &["SORT", "nol", "STORE", "sd"],
        &["HDEL", "h", "zz"],
        &["HSETNX", "h", "a", "2"],
        &["HINCRBYFLOAT", "h", "f", "1.5"],
        &["SETNX", "k", "v"],
        &["MSETNX", "k", "v", "k2", "v"],
        &["PERSIST", "k"],
        &["SETRANGE", "k", "0", ""],
        &["PFADD", "hll", "a"],
        &["BITOP", "AND", "dk", "nok1", "nok2"],
        &["COPY", "nok", "dst"],
        &["RENAME", "k", "k"],
        &["RENAMENX", "k", "l"],
    ];
    assert_same_stream(before, writes, "\"hset\",\"h\",\"f\"");
}

#[test]
fn publish_and_group_reads_in_transactions_go_down_as_redis_sends_them() {
    let before: &[&[&str]] = &[
        &["XADD", "mystream", "1-1", "foo", "bar"],
        &["XADD", "mystream", "1-2", "foo2", "bar2"],
        &["XADD", "mystream", "1-3", "foo3", "bar3"],
        &["XGROUP", "CREATE", "mystream", "mygroup", "0"],
    ];
    let writes: &[&[&str]] = &[
        // PUBLISH alone, alone in MULTI, with a write in MULTI, from a script.
        &["PUBLISH", "ch", "m1"],
        &["MULTI"],
        &["PUBLISH", "bla", "bla"],
        &["EXEC"],
        &["MULTI"],
        &["SET", "k", "v"],
        &["PUBLISH", "ch", "m2"],
        &["EXEC"],
        &["EVAL", "return redis.call('publish', 'ch', 'm3')", "0"],
        &["SPUBLISH", "sch", "m4"],
        // Reads that deliver: their XCLAIMs, one transaction, the consumer created by them.
        &["MULTI"],
        &[
            "XREADGROUP",
            "GROUP",
            "mygroup",
            "consumer1",
            "COUNT",
            "2",
            "STREAMS",
            "mystream",
            ">",
        ],
        &[
            "XREADGROUP",
            "GROUP",
            "mygroup",
            "consumer1",
            "STREAMS",
            "mystream",
            ">",
        ],
        &["EXEC"],
        // A history read (nothing goes down), a read of nothing by a new consumer, NOACK.
        &[
            "XREADGROUP",
            "GROUP",
            "mygroup",
            "consumer1",
            "STREAMS",
            "mystream",
            "0",
        ],
        &[
            "XREADGROUP",
            "GROUP",
            "mygroup",
            "consumer2",
            "STREAMS",
            "mystream",
            "0",
        ],
        &["XADD", "mystream", "1-4", "foo4", "bar4"],
        &[
            "XREADGROUP",
            "GROUP",
            "mygroup",
            "consumer3",
            "NOACK",
            "STREAMS",
            "mystream",
            ">",
        ],
    ];
    assert_same_stream(before, writes, "\"publish\"");
}

#[test]
fn keys_scan_expires_go_down_as_dels_of_their_own() {
    let before: &[&[&str]] = &[
        &["DEBUG", "SET-ACTIVE-EXPIRE", "0"],
        &["SET", "foo1", "bar", "PX", "1"],
        &["SET", "foo2", "bar", "PX", "1"],
        &["SET", "other", "bar", "PX", "1"],
        &["DEBUG", "SLEEP", "0.01"],
    ];
    // Only the keys the MATCH pattern passes expire.
    let writes: &[&[&str]] = &[&["SCAN", "0", "MATCH", "foo*", "COUNT", "1000"]];
    let debug = ["--enable-debug-command", "yes"];
    let mut want = stream_of(&redis(&debug), before, writes);
    let mut got = stream_of(&strata(&debug), before, writes);
    assert_eq!(want.len(), 2, "two DELs, no MULTI: {want:?}");
    // Which of the two keys SCAN meets first is each server's own order.
    want.sort();
    got.sort();
    assert_eq!(got, want);
}
