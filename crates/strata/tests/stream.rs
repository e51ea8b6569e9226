//! Streams against the real server: blocked XREAD and XREADGROUP (arrival order,
//! timeouts, `$` resolved when the reader blocks, BLOCK 0 woken from another connection,
//! a stream or group removed while a reader waits, its statistics), served replies in
//! RESP2 and RESP3 compared byte for byte with redis-server, and the journal: group reads,
//! claims, `*` IDs and `~` trims come back exactly after a SIGKILL, with and without a
//! snapshot, and an empty stream survives.

mod common;

use common::{
    call_text as call, encode_command, read_text as read, send_only, serve_in, temp_dir,
    wait_blocked, Proc, RespConn,
};
use redis::Value;
use std::time::{Duration, Instant};

/// A stream entry as RESP2 text: `[id, [field, value]]`.
fn entry(id: &str, f: &str, v: &str) -> String {
    format!(
        "*2\\r\\n${}\\r\\n{id}\\r\\n*2\\r\\n${}\\r\\n{f}\\r\\n${}\\r\\n{v}\\r\\n",
        id.len(),
        f.len(),
        v.len()
    )
}

/// XREAD's RESP2 reply for one stream.
fn one_stream(key: &str, entries: &[String]) -> String {
    format!(
        "*1\\r\\n*2\\r\\n${}\\r\\n{key}\\r\\n*{}\\r\\n{}",
        key.len(),
        entries.len(),
        entries.concat()
    )
}

#[test]
fn group_readers_are_served_in_arrival_order() {
    let s = common::strata(&["--threads", "4"]);
    let mut w = RespConn::new(&s);
    call(&mut w, &["xgroup", "create", "s", "g", "$", "mkstream"]);
    let mut readers = Vec::new();
    for (i, name) in ["a", "b", "c"].iter().enumerate() {
        readers.push(send_only(
            &s,
            &[
                "xreadgroup",
                "group",
                "g",
                name,
                "count",
                "1",
                "block",
                "0",
                "streams",
                "s",
                ">",
            ],
        ));
        wait_blocked(&mut w, i + 1);
    }
    // Each entry goes to one reader, the one that has waited longest.
    for (i, id) in ["1-1", "2-1", "3-1"].iter().enumerate() {
        call(&mut w, &["xadd", "s", id, "f", &i.to_string()]);
        wait_blocked(&mut w, 2 - i);
    }
    for (i, (r, id)) in readers.iter_mut().zip(["1-1", "2-1", "3-1"]).enumerate() {
        assert_eq!(read(r), one_stream("s", &[entry(id, "f", &i.to_string())]));
    }
    let owners = call(&mut w, &["xpending", "s", "g", "-", "+", "10"]);
    let names: Vec<&str> = owners
        .split("\\r\\n")
        .filter(|p| ["a", "b", "c"].contains(p))
        .collect();
    assert_eq!(names, ["a", "b", "c"], "{owners}");

    // Plain readers all get the same new entry; `$` means what was last when they blocked.
    let mut readers: Vec<_> = (0..3)
        .map(|_| send_only(&s, &["xread", "block", "0", "streams", "s", "$"]))
        .collect();
    wait_blocked(&mut w, 3);
    call(&mut w, &["xadd", "s", "4-1", "f", "new"]);
    for r in &mut readers {
        assert_eq!(read(r), one_stream("s", &[entry("4-1", "f", "new")]));
    }
}

#[test]
fn blocked_readers_time_out_with_nulls() {
    let s = common::strata(&["--threads", "2"]);
    let mut w = RespConn::new(&s);
    call(&mut w, &["xgroup", "create", "s", "g", "$", "mkstream"]);
    let cases: [(&[&str], u64, &str, &str); 3] = [
        (
            &["xread", "block", "120", "streams", "s", "nokey", "$", "$"],
            120,
            "2",
            "*-1",
        ),
        (&["xread", "block", "60", "streams", "s", "$"], 60, "3", "_"),
        (
            &[
                "xreadgroup",
                "group",
                "g",
                "c",
                "block",
                "80",
                "streams",
                "s",
                ">",
            ],
            80,
            "2",
            "*-1",
        ),
    ];
    for (cmd, ms, proto, want) in cases {
        let mut c = RespConn::new(&s);
        call(&mut c, &["hello", proto]);
        let start = Instant::now();
        c.send(&encode_command(cmd)).unwrap();
        assert_eq!(read(&mut c), format!("{want}\\r\\n"), "{cmd:?}");
        let took = start.elapsed();
        assert!(
            took >= Duration::from_millis(ms) && took < Duration::from_secs(3),
            "{cmd:?} took {took:?}"
        );
    }
    // Nothing was delivered, and no consumer was created by the wait.
    assert_eq!(call(&mut w, &["xinfo", "consumers", "s", "g"]), "*0\\r\\n");
}

#[test]
fn block_0_waits_until_another_connection_adds() {
    let s = common::strata(&["--threads", "4"]);
    let mut w = RespConn::new(&s);
    call(&mut w, &["xadd", "s", "1-1", "f", "old"]);
    let mut r = send_only(
        &s,
        &["xread", "block", "0", "streams", "nokey", "s", "$", "$"],
    );
    wait_blocked(&mut w, 1);
    std::thread::sleep(Duration::from_millis(150));
    // Added and deleted again: nothing to serve, the reader stays blocked.
    call(&mut w, &["multi"]);
    call(&mut w, &["xadd", "s", "2-1", "f", "gone"]);
    call(&mut w, &["xdel", "s", "2-1"]);
    call(&mut w, &["exec"]);
    wait_blocked(&mut w, 1);
    // Several entries in one transaction: served once, with all of them.
    call(&mut w, &["multi"]);
    call(&mut w, &["xadd", "s", "3-1", "f", "a"]);
    call(&mut w, &["xadd", "s", "3-2", "f", "b"]);
    call(&mut w, &["exec"]);
    assert_eq!(
        read(&mut r),
        one_stream("s", &[entry("3-1", "f", "a"), entry("3-2", "f", "b")])
    );
    wait_blocked(&mut w, 0);
}

/// A reader blocked on a stream that is deleted or replaced: XREAD keeps waiting (a key of
/// another type does not serve it), XREADGROUP answers Redis's errors.
#[test]
fn removed_streams_and_groups_answer_blocked_group_readers() {
    let s = common::strata(&["--threads", "4"]);
    let mut w = RespConn::new(&s);
    let nogroup = "-NOGROUP the consumer group this client was blocked on no longer exists\\r\\n";
    let unblocked = "-UNBLOCKED the stream key no longer exists\\r\\n";
    let cases: &[(&[&[&str]], &str)] = &[
        (&[&["xgroup", "destroy", "s", "g"]], nogroup),
        (&[&["del", "s"]], unblocked),
        (&[&["unlink", "s"]], unblocked),
        (&[&["set", "s", "v"]], unblocked),
        (&[&["flushall"]], unblocked),
        (&[&["flushdb"]], unblocked),
        (
            &[&["multi"], &["del", "s"], &["sadd", "s", "m"], &["exec"]],
            unblocked,
        ),
        (
            &[&["xadd", "t", "5-1", "f", "v"], &["rename", "t", "s"]],
            nogroup,
        ),
        (&[&["swapdb", "0", "1"]], unblocked),
    ];
    call(&mut w, &["config", "resetstat"]);
    for (writes, want) in cases {
        call(&mut w, &["flushall"]);
        call(&mut w, &["xgroup", "create", "s", "g", "$", "mkstream"]);
        let mut r = send_only(
            &s,
            &[
                "xreadgroup",
                "group",
                "g",
                "c",
                "block",
                "0",
                "streams",
                "s",
                ">",
            ],
        );
        let mut plain = send_only(&s, &["xread", "block", "0", "streams", "s", "$"]);
        wait_blocked(&mut w, 2);
        for c in *writes {
            call(&mut w, c);
        }
        assert_eq!(read(&mut r), *want, "{writes:?}");
        // The stream RENAME brought serves XREAD at once; otherwise a new one does.
        call(&mut w, &["del", "s"]);
        call(&mut w, &["xadd", "s", "5-1", "f", "v"]);
        assert_eq!(read(&mut plain), one_stream("s", &[entry("5-1", "f", "v")]));
        wait_blocked(&mut w, 0);
    }
    // Each blocked XREADGROUP counts one call, failed.
    let stats = call(&mut w, &["info", "commandstats"]);
    let n = cases.len();
    assert!(
        stats.contains(&format!("cmdstat_xreadgroup:calls={n},"))
            && stats.contains(&format!("rejected_calls=0,failed_calls={n}")),
        "{stats}"
    );
}

/// The replies of readers served after blocking, in both protocols, as redis-server gives
/// them.
#[test]
fn served_replies_match_redis() {
    fn run(p: &Proc) -> Vec<String> {
        let mut w = RespConn::new(p);
        let mut out = Vec::new();
        for proto in ["2", "3"] {
            w.call(&["flushall"]).unwrap();
            out.push(call(&mut w, &["xadd", "s", "1-1", "a", "1", "b", "2"]));
            out.push(call(&mut w, &["xgroup", "create", "s", "g", "$"]));
            let mut readers = Vec::new();
            for cmd in [
                &["xread", "block", "0", "streams", "s", "t", "$", "0"][..],
                &[
                    "xreadgroup",
                    "group",
                    "g",
                    "c",
                    "block",
                    "0",
                    "streams",
                    "s",
                    ">",
                ],
                &[
                    "xreadgroup",
                    "group",
                    "g",
                    "d",
                    "noack",
                    "block",
                    "0",
                    "streams",
                    "s",
                    ">",
                ],
            ] {
                let mut r = RespConn::new(p);
                r.call(&["hello", proto]).unwrap();
                r.send(&encode_command(cmd)).unwrap();
                wait_blocked(&mut w, readers.len() + 1);
                readers.push(r);
            }
            // The first group reader takes the entry; the second waits for the next one.
            out.push(call(&mut w, &["xadd", "s", "2-1", "f", "v"]));
            for r in &mut readers[..2] {
                out.push(read(r));
            }
            out.push(call(&mut w, &["xadd", "s", "3-1", "f", "w"]));
            out.push(read(&mut readers[2]));
            out.push(call(&mut w, &["xinfo", "groups", "s"]));
        }
        out
    }
    let strata = run(&common::strata(&["--threads", "4"]));
    let redis = run(&common::redis(&[]));
    assert_eq!(strata, redis);
}

// ---------------------------------------------------------------------------------------
// The journal

/// Everything XINFO STREAM FULL shows of `key`, consumers' seen times left out: a replayed
/// record sets those to the time of the replay, in Redis's AOF too.
fn full_info(c: &mut redis::Connection, key: &str) -> Value {
    fn mask(v: Value) -> Value {
        match v {
            Value::Array(items) => {
                let mut out = Vec::with_capacity(items.len());
                let mut seen = false;
                for x in items {
                    let is_seen = matches!(&x, Value::BulkString(b) if b == b"seen-time");
                    out.push(if seen { Value::Nil } else { mask(x) });
                    seen = is_seen;
                }
                Value::Array(out)
            }
            other => other,
        }
    }
    let v = redis::cmd("XINFO")
        .arg("STREAM")
        .arg(key)
        .arg("FULL")
        .arg("COUNT")
        .arg(0)
        .query(c)
        .unwrap_or_else(|e| panic!("XINFO STREAM {key} FULL: {e}"));
    mask(v)
}

fn q(c: &mut redis::Connection, args: &[&str]) -> Value {
    let mut cmd = redis::cmd(args[0]);
    for a in &args[1..] {
        cmd.arg(*a);
    }
    cmd.query(c).unwrap_or_else(|e| panic!("{args:?}: {e}"))
}

/// The IDs of a stream's entries.
fn ids(c: &mut redis::Connection, key: &str) -> Vec<String> {
    let v: Vec<(String, Vec<String>)> = redis::cmd("XRANGE")
        .arg(key)
        .arg("-")
        .arg("+")
        .query(c)
        .unwrap();
    v.into_iter().map(|(id, _)| id).collect()
}

/// Group reads (new entries, NOACK, history), claims (with IDLE, RETRYCOUNT, JUSTID,
/// LASTID), XAUTOCLAIM over deleted entries, acknowledgements, consumers created and
/// deleted, `*` IDs and `~` trims.
fn group_work(c: &mut redis::Connection, s: &str) {
    for i in 0..6 {
        q(c, &["XADD", s, "*", "n", &i.to_string()]);
    }
    let id = ids(c, s);
    q(c, &["XGROUP", "CREATE", s, "g", "0"]);
    q(c, &["XGROUP", "CREATE", s, "g2", "$"]);
    q(
        c,
        &[
            "XREADGROUP",
            "GROUP",
            "g",
            "alice",
            "COUNT",
            "2",
            "STREAMS",
            s,
            ">",
        ],
    );
    q(c, &["XREADGROUP", "GROUP", "g", "bob", "STREAMS", s, ">"]);
    q(c, &["XADD", s, "*", "n", "6"]);
    q(
        c,
        &[
            "XREADGROUP",
            "GROUP",
            "g2",
            "carol",
            "NOACK",
            "STREAMS",
            s,
            ">",
        ],
    );
    std::thread::sleep(Duration::from_millis(3));
    q(c, &["XREADGROUP", "GROUP", "g", "alice", "STREAMS", s, "0"]);
    q(
        c,
        &["XREADGROUP", "GROUP", "g", "newbie", "STREAMS", s, "0"],
    );
    q(c, &["XCLAIM", s, "g", "dave", "0", &id[0]]);
    q(
        c,
        &[
            "XCLAIM",
            s,
            "g",
            "dave",
            "0",
            &id[2],
            "IDLE",
            "100000",
            "RETRYCOUNT",
            "9",
        ],
    );
    q(
        c,
        &[
            "XCLAIM", s, "g", "erin", "0", &id[3], "JUSTID", "LASTID", &id[5],
        ],
    );
    q(c, &["XDEL", s, &id[4]]);
    q(
        c,
        &["XAUTOCLAIM", s, "g", "frank", "0", &id[3], "COUNT", "2"],
    );
    q(c, &["XACK", s, "g", &id[5]]);
    q(c, &["XGROUP", "CREATECONSUMER", s, "g", "gina"]);
    q(c, &["XGROUP", "DELCONSUMER", s, "g", "bob"]);
    q(c, &["XGROUP", "SETID", s, "g2", &id[1]]);
    q(
        c,
        &[
            "XREADGROUP",
            "GROUP",
            "g2",
            "henry",
            "COUNT",
            "1",
            "STREAMS",
            s,
            ">",
        ],
    );
}

/// Long streams trimmed with `~` (whole nodes only), and empty streams.
fn trims(c: &mut redis::Connection, big: &str) {
    let script = "for i=1,350 do redis.call('XADD', KEYS[1], '*', 'f', i) end";
    q(c, &["EVAL", script, "1", big]);
    q(c, &["XADD", big, "MAXLEN", "~", "180", "*", "f", "v"]);
    let first = ids(c, big)[60].clone();
    q(c, &["XTRIM", big, "MINID", "~", &first]);
    q(
        c,
        &[
            "XADD", big, "MAXLEN", "~", "10", "LIMIT", "100", "*", "f", "v",
        ],
    );
    q(
        c,
        &[
            "XADD",
            &format!("{big}:empty"),
            "MAXLEN",
            "0",
            "*",
            "f",
            "v",
        ],
    );
    q(
        c,
        &[
            "XGROUP",
            "CREATE",
            &format!("{big}:mk"),
            "g",
            "$",
            "MKSTREAM",
        ],
    );
}

fn snapshot_of(c: &mut redis::Connection, keys: &[String]) -> Vec<(String, Value)> {
    keys.iter().map(|k| (k.clone(), full_info(c, k))).collect()
}

#[test]
fn group_state_and_trims_survive_sigkill_exactly() {
    let dir = temp_dir("streams");
    let keys: Vec<String> = [
        "s1",
        "big1",
        "big1:empty",
        "big1:mk",
        "s2",
        "big2",
        "big2:empty",
        "big2:mk",
    ]
    .iter()
    .map(|k| k.to_string())
    .collect();
    // Phase 1: the journal alone.
    let p = serve_in(&dir, &[]);
    let mut c = p.client();
    group_work(&mut c, "s1");
    trims(&mut c, "big1");
    let before = snapshot_of(&mut c, &keys[..4]);
    drop(p); // SIGKILL
    let p = serve_in(&dir, &[]);
    let mut c = p.client();
    assert_eq!(
        snapshot_of(&mut c, &keys[..4]),
        before,
        "after the journal's replay"
    );
    // Phase 2: a snapshot, then more work in the journal after it.
    q(&mut c, &["BGSAVE"]);
    common::wait_snapshot_done(&mut c);
    group_work(&mut c, "s2");
    trims(&mut c, "big2");
    q(
        &mut c,
        &["XREADGROUP", "GROUP", "g", "alice", "STREAMS", "s1", "0"],
    );
    let before = snapshot_of(&mut c, &keys);
    drop(p); // SIGKILL
    let p = serve_in(&dir, &[]);
    let mut c = p.client();
    assert_eq!(
        snapshot_of(&mut c, &keys),
        before,
        "after snapshot + journal"
    );
    for k in ["big1:empty", "big2:mk"] {
        assert_eq!(
            q(&mut c, &["TYPE", k]),
            Value::SimpleString("stream".into())
        );
        assert_eq!(q(&mut c, &["XLEN", k]), Value::Int(0));
    }
    drop(p);
    let _ = std::fs::remove_dir_all(&dir);
}
