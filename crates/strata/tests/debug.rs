//! DEBUG against the real binary: `enable-debug-command`, the digests (equal for equal
//! contents whatever the encoding), RELOAD, the RESP3 push sample, and the switches that
//! change other parts (scripts, the background cycle). The replies that Redis gives too
//! are compared byte for byte in tests/diff/debug.txt.

mod common;

use common::{cmd, int, query, RespConn};
use std::time::{Duration, Instant};

const ON: [&str; 2] = ["--enable-debug-command", "yes"];

fn digest(c: &mut redis::Connection) -> String {
    query(c, &["DEBUG", "DIGEST"])
}

fn digest_value(c: &mut redis::Connection, key: &str) -> String {
    let v: Vec<String> = query(c, &["DEBUG", "DIGEST-VALUE", key]);
    v.into_iter().next().unwrap_or_default()
}

fn encoding(c: &mut redis::Connection, key: &str) -> String {
    query(c, &["OBJECT", "ENCODING", key])
}

/// Refused by default with Redis's error (taken from redis-server at test time), run when
/// the directive says `yes`, or `local` for a loopback client.
#[test]
fn debug_follows_enable_debug_command() {
    let redis = common::redis(&[]);
    let off = common::strata(&[]);
    let refused = RespConn::new(&redis)
        .call(&["DEBUG", "SLEEP", "0"])
        .unwrap();
    assert!(refused.raw.starts_with(b"-ERR DEBUG command not allowed"));
    let got = RespConn::new(&off).call(&["DEBUG", "SLEEP", "0"]).unwrap();
    assert_eq!(got.shown(), refused.shown());
    // Refused before anything else: inside MULTI it is not queued, and EXEC aborts.
    let mut m = RespConn::new(&off);
    m.call(&["MULTI"]).unwrap();
    assert_eq!(m.call(&["DEBUG", "HELP"]).unwrap().shown(), refused.shown());
    let exec = m.call(&["EXEC"]).unwrap();
    assert!(exec.raw.starts_with(b"-EXECABORT"), "{}", exec.shown());
    for setting in ["yes", "local"] {
        let p = common::strata(&["--enable-debug-command", setting]);
        let ok = RespConn::new(&p).call(&["DEBUG", "SLEEP", "0"]).unwrap();
        assert_eq!(ok.raw, b"+OK\r\n", "enable-debug-command {setting}");
    }
}

/// Values with the same contents digest alike in every encoding; the data set's digest
/// follows every change and is zeros when empty.
#[test]
fn digests_follow_contents_not_encodings() {
    let p = common::strata(&ON);
    let mut c = p.client();
    assert_eq!(digest(&mut c), "0".repeat(40));
    // The same contents, built once in the compact encodings and once in the scalable ones.
    let fill = |c: &mut redis::Connection, suffix: &str| {
        let h = format!("h{suffix}");
        let s = format!("s{suffix}");
        let t = format!("t{suffix}");
        let z = format!("z{suffix}");
        let l = format!("l{suffix}");
        cmd(c, &["HSET", &h, "a", "1", "b", "2", "c", "3"]);
        cmd(c, &["SADD", &s, "1", "2", "3"]);
        cmd(c, &["SADD", &t, "x", "y", "z"]);
        cmd(c, &["ZADD", &z, "1", "a", "2.5", "b", "-3", "c"]);
        cmd(c, &["RPUSH", &l, "a", "b", "1", "2"]);
    };
    fill(&mut c, "1");
    for (k, v) in [
        ("hash-max-listpack-entries", "0"),
        ("set-max-intset-entries", "0"),
        ("zset-max-listpack-entries", "0"),
        ("list-max-listpack-size", "1"),
    ] {
        cmd(&mut c, &["CONFIG", "SET", k, v]);
    }
    fill(&mut c, "2");
    cmd(&mut c, &["SET", "str1", "hello"]);
    cmd(&mut c, &["SET", "str2", "hel"]);
    cmd(&mut c, &["APPEND", "str2", "lo"]);
    for (a, b) in [("h1", "h2"), ("s1", "s2"), ("z1", "z2"), ("str1", "str2")] {
        assert_ne!(encoding(&mut c, a), encoding(&mut c, b), "{a} {b}");
        assert_eq!(digest_value(&mut c, a), digest_value(&mut c, b), "{a} {b}");
    }
    // Lists are all quicklists: the same elements in one node and in four.
    let nodes = |c: &mut redis::Connection, key: &str| {
        let text: String = query(c, &["DEBUG", "OBJECT", key]);
        text.split_once("ql_nodes:")
            .and_then(|(_, r)| r.split(' ').next().map(str::to_string))
    };
    assert_eq!(nodes(&mut c, "l1").as_deref(), Some("1"));
    assert_eq!(nodes(&mut c, "l2").as_deref(), Some("4"));
    assert_eq!(digest_value(&mut c, "l1"), digest_value(&mut c, "l2"));
    // Different contents, and different types of the same elements, differ.
    assert_ne!(digest_value(&mut c, "s1"), digest_value(&mut c, "t1"));
    assert_ne!(digest_value(&mut c, "s1"), digest_value(&mut c, "l1"));
    cmd(&mut c, &["ZADD", "z2", "2.6", "b"]);
    assert_ne!(digest_value(&mut c, "z1"), digest_value(&mut c, "z2"));
    cmd(&mut c, &["ZADD", "z2", "2.5", "b"]);
    // The data set: a change moves it, undoing the change brings it back; so do expiries.
    let before = digest(&mut c);
    assert_ne!(before, "0".repeat(40));
    cmd(&mut c, &["RPUSH", "l1", "x"]);
    let changed = digest(&mut c);
    assert_ne!(changed, before);
    cmd(&mut c, &["RPOP", "l1"]);
    assert_eq!(digest(&mut c), before);
    cmd(&mut c, &["EXPIRE", "h1", "1000"]);
    assert_ne!(digest(&mut c), before);
    cmd(&mut c, &["PERSIST", "h1"]);
    assert_eq!(digest(&mut c), before);
    // A key moved to another database changes the digest.
    cmd(&mut c, &["MOVE", "str1", "3"]);
    assert_ne!(digest(&mut c), before);
    cmd(&mut c, &["FLUSHALL"]);
    assert_eq!(digest(&mut c), "0".repeat(40));
}

/// RELOAD saves and loads the data set back: same digest, expiries kept, keys whose time
/// has passed dropped; NOSAVE loads the last snapshot, NOFLUSH keeps what is not in it.
#[test]
fn reload_round_trips_the_data_set() {
    let p = common::strata(&ON);
    let mut c = p.client();
    cmd(&mut c, &["DEBUG", "SET-ACTIVE-EXPIRE", "0"]);
    cmd(&mut c, &["HSET", "h", "a", "1", "b", "2"]);
    cmd(&mut c, &["RPUSH", "l", "a", "b", "c"]);
    cmd(&mut c, &["SADD", "s", "1", "x"]);
    cmd(&mut c, &["ZADD", "z", "1", "a"]);
    cmd(&mut c, &["SET", "ttl", "v", "EX", "1000"]);
    cmd(&mut c, &["SELECT", "5"]);
    cmd(&mut c, &["SET", "other", "db5"]);
    cmd(&mut c, &["SELECT", "0"]);
    let before = digest(&mut c);
    let q: String = query(&mut c, &["DEBUG", "RELOAD"]);
    assert_eq!(q, "OK");
    assert_eq!(digest(&mut c), before);
    assert!(int(&mut c, &["TTL", "ttl"]) > 990);
    // A key whose time passed before the save is not loaded back.
    cmd(&mut c, &["SET", "gone", "v", "PX", "1"]);
    std::thread::sleep(Duration::from_millis(5));
    assert_eq!(int(&mut c, &["DBSIZE"]), 6);
    cmd(&mut c, &["DEBUG", "RELOAD"]);
    assert_eq!(int(&mut c, &["DBSIZE"]), 5);
    assert_eq!(digest(&mut c), before);
    // NOSAVE: what changed since the last save is undone.
    cmd(&mut c, &["SET", "late", "1"]);
    cmd(&mut c, &["DEL", "h"]);
    cmd(&mut c, &["DEBUG", "RELOAD", "NOSAVE"]);
    assert_eq!(digest(&mut c), before);
    // NOFLUSH without MERGE: keys of the snapshot that exist make it fail (Redis stops).
    let clash: redis::RedisResult<String> = redis::cmd("DEBUG")
        .arg("RELOAD")
        .arg("NOSAVE")
        .arg("NOFLUSH")
        .query(&mut c);
    let e = clash.expect_err("keys of the snapshot exist");
    assert!(
        e.to_string().contains("Error trying to load the RDB dump"),
        "{e}"
    );
    // NOFLUSH MERGE: keys outside the snapshot stay.
    cmd(&mut c, &["SET", "late", "1"]);
    cmd(&mut c, &["DEBUG", "RELOAD", "NOSAVE", "NOFLUSH", "MERGE"]);
    assert_eq!(int(&mut c, &["EXISTS", "late", "h"]), 2);
}

/// `push` answers a push message and then a reply, in RESP3 only.
#[test]
fn protocol_push_sends_a_push_then_a_reply() {
    let p = common::strata(&ON);
    let mut r = RespConn::new(&p);
    r.call(&["HELLO", "3"]).unwrap();
    let push = r.call(&["DEBUG", "PROTOCOL", "push"]).unwrap();
    assert_eq!(push.raw, b">2\r\n$16\r\nserver-cpu-usage\r\n:42\r\n");
    let reply = r.read().unwrap();
    assert_eq!(
        reply.raw,
        b"$40\r\nSome real reply following the push reply\r\n"
    );
}

/// SET-DISABLE-DENY-SCRIPTS lets scripts call noscript commands (the suite calls DEBUG
/// PROTOCOL from Lua so).
#[test]
fn scripts_may_call_noscript_commands_when_allowed() {
    let p = common::strata(&ON);
    let mut c = p.client();
    let script = "return redis.call('debug', 'protocol', 'integer')";
    let denied: redis::RedisResult<i64> = redis::cmd("EVAL").arg(script).arg(0).query(&mut c);
    let e = denied.expect_err("noscript command from a script");
    assert!(e.to_string().contains("not allowed from script"), "{e}");
    cmd(&mut c, &["DEBUG", "SET-DISABLE-DENY-SCRIPTS", "1"]);
    assert_eq!(int(&mut c, &["EVAL", script, "0"]), 12345);
    cmd(&mut c, &["DEBUG", "SET-DISABLE-DENY-SCRIPTS", "0"]);
    let denied: redis::RedisResult<i64> = redis::cmd("EVAL").arg(script).arg(0).query(&mut c);
    assert!(denied.is_err());
}

/// PAUSE-CRON stops the background cycle: keys past their time stay until it resumes.
#[test]
fn pause_cron_stops_active_expiry() {
    let p = common::strata(&["--enable-debug-command", "yes", "--hz", "100"]);
    let mut c = p.client();
    cmd(&mut c, &["DEBUG", "PAUSE-CRON", "1"]);
    cmd(&mut c, &["SET", "k", "v", "PX", "20"]);
    std::thread::sleep(Duration::from_millis(300));
    // DBSIZE counts keys without expiring them: only the cycle could have removed it.
    assert_eq!(int(&mut c, &["DBSIZE"]), 1);
    cmd(&mut c, &["DEBUG", "PAUSE-CRON", "0"]);
    let end = Instant::now() + Duration::from_secs(5);
    while int(&mut c, &["DBSIZE"]) != 0 {
        assert!(Instant::now() < end, "the cycle never resumed");
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// OBJECT gives Redis's fields, with the quicklist's for a list; POPULATE's keys are there.
#[test]
fn object_and_populate() {
    let p = common::strata(&ON);
    let mut c = p.client();
    cmd(&mut c, &["DEBUG", "POPULATE", "1000", "k", "10"]);
    assert_eq!(int(&mut c, &["DBSIZE"]), 1000);
    let v: String = query(&mut c, &["GET", "k:999"]);
    assert_eq!(v, "value:999\0");
    cmd(&mut c, &["RPUSH", "l", "a", "b", "c"]);
    let text: String = query(&mut c, &["DEBUG", "OBJECT", "l"]);
    for field in [
        "Value at:",
        " refcount:1 encoding:quicklist serializedlength:",
        " lru_seconds_idle:0 ql_nodes:1 ql_avg_node:3.00 ql_listpack_max:-2 ql_compressed:0",
    ] {
        assert!(text.contains(field), "{text}");
    }
    let text: String = query(&mut c, &["DEBUG", "OBJECT", "k:1"]);
    assert!(text.contains("encoding:embstr"), "{text}");
}

/// LOADAOF loads what a restart would: the newest snapshot and the journal after it.
/// POPULATE's keys are not journaled (as in Redis), so they are gone after it.
#[test]
fn loadaof_loads_what_a_restart_would() {
    let p = common::strata(&["--enable-debug-command", "yes", "--appendonly", "yes"]);
    let mut c = p.client();
    cmd(&mut c, &["RPUSH", "l", "a", "b"]);
    cmd(&mut c, &["SET", "ttl", "v", "EX", "1000"]);
    cmd(&mut c, &["SAVE"]);
    cmd(&mut c, &["HSET", "h", "f", "v"]);
    cmd(&mut c, &["LPUSH", "l", "z"]);
    cmd(&mut c, &["DEL", "ttl"]);
    let journaled = digest(&mut c);
    cmd(&mut c, &["DEBUG", "POPULATE", "10"]);
    assert_eq!(int(&mut c, &["DBSIZE"]), 12);
    let q: String = query(&mut c, &["DEBUG", "LOADAOF"]);
    assert_eq!(q, "OK");
    assert_eq!(int(&mut c, &["DBSIZE"]), 2);
    assert_eq!(digest(&mut c), journaled);
    let l: Vec<String> = query(&mut c, &["LRANGE", "l", "0", "-1"]);
    assert_eq!(l, ["z", "a", "b"]);
}
