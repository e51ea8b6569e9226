//! Keyspace notifications of the collection families (lists, sorted sets, SORT STORE,
//! HyperLogLog, the blocking pops, hashes, sets, streams): the same writes on Strata and
//! redis-server, each watched by a `__keyspace@*__:*` + `__keyevent@*__:*` subscriber
//! with `notify-keyspace-events KEA`; the replies and the event streams must be identical.

mod common;

use common::{encode_command, Proc, RespConn};
use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

fn drain(s: &mut TcpStream, wait: Duration) -> Vec<u8> {
    let mut out = Vec::new();
    let end = Instant::now() + wait;
    s.set_read_timeout(Some(Duration::from_millis(30))).unwrap();
    let mut buf = [0u8; 65536];
    while Instant::now() < end {
        match s.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => out.extend_from_slice(&buf[..n]),
            Err(_) => {}
        }
    }
    out
}

/// One message per line: "channel payload".
fn messages(v: &[u8]) -> Vec<String> {
    let mut r = std::io::BufReader::new(v);
    let mut out = Vec::new();
    while let Ok(m) = common::read_reply(&mut r) {
        out.push(m.shown());
    }
    out
}

/// A step of a scenario: a command on the main connection; the same with a reply that is
/// not compared (a random pick); a blocking command sent on a new connection; or a write
/// that serves every client blocked so far (their replies are read after it, in blocking
/// order).
enum Step<'a> {
    Call(&'a [&'a str]),
    Random(&'a [&'a str]),
    Block(&'a [&'a str]),
    Wake(&'a [&'a str]),
}

/// Runs `steps` on `p` with `notify-keyspace-events` set to `flags` and returns
/// (replies, events).
fn run(p: &Proc, flags: &str, steps: &[Step<'_>]) -> (Vec<String>, Vec<String>) {
    let mut w = RespConn::new(p);
    w.call(&["flushall"]).unwrap();
    w.call(&["config", "set", "notify-keyspace-events", flags])
        .unwrap();
    let mut sub = p.raw();
    sub.write_all(&encode_command(&[
        "psubscribe",
        "__keyspace@*__:*",
        "__keyevent@*__:*",
    ]))
    .unwrap();
    drain(&mut sub, Duration::from_millis(60));
    let mut replies = Vec::new();
    let mut blocked: Vec<RespConn> = Vec::new();
    for s in steps {
        match s {
            Step::Call(c) => replies.push(w.call(c).unwrap().shown()),
            Step::Random(c) => {
                w.call(c).unwrap();
                replies.push(format!("(random) {c:?}"));
            }
            Step::Wake(c) => {
                replies.push(w.call(c).unwrap().shown());
                // Replies of the clients this write served, in their blocking order.
                for mut b in blocked.drain(..) {
                    replies.push(format!("served: {}", b.read().unwrap().shown()));
                }
            }
            Step::Block(c) => {
                let mut b = RespConn::new(p);
                b.send(&encode_command(c)).unwrap();
                // Let it register before the next step.
                let end = Instant::now() + Duration::from_secs(2);
                loop {
                    let info = w.call(&["info", "clients"]).unwrap().shown();
                    let want = format!("blocked_clients:{}", blocked.len() + 1);
                    if info.contains(&want) || Instant::now() > end {
                        break;
                    }
                    std::thread::sleep(Duration::from_millis(5));
                }
                blocked.push(b);
            }
        }
    }
    w.call(&["config", "set", "notify-keyspace-events", ""])
        .unwrap();
    (
        replies,
        messages(&drain(&mut sub, Duration::from_millis(150))),
    )
}

fn compare(steps: &[Step<'_>], min_events: usize) {
    compare_with("KEA", steps, min_events)
}

fn compare_with(flags: &str, steps: &[Step<'_>], min_events: usize) {
    let s = common::strata(&["--threads", "4"]);
    let r = common::redis(&[]);
    let (sr, se) = run(&s, flags, steps);
    let (rr, re) = run(&r, flags, steps);
    assert_eq!(sr, rr, "replies");
    assert!(
        re.len() >= min_events,
        "redis produced {} messages",
        re.len()
    );
    for (i, (a, b)) in se.iter().zip(re.iter()).enumerate() {
        assert_eq!(a, b, "message {i}");
    }
    assert_eq!(se.len(), re.len(), "message count\n{se:#?}\n{re:#?}");
}

fn calls<'a>(cmds: &'a [&'a [&'a str]]) -> Vec<Step<'a>> {
    cmds.iter().map(|c| Step::Call(c)).collect()
}

#[test]
fn list_events_match_redis() {
    compare(
        &calls(&[
            &["lpush", "l", "a", "b", "c"],
            &["rpush", "l", "d"],
            &["lpushx", "l", "x"],
            &["rpushx", "l", "y"],
            &["lpushx", "none", "x"],
            &["lpop", "l"],
            &["rpop", "l"],
            &["lpop", "l", "0"],
            &["lpop", "l", "2"],
            &["rpop", "none"],
            &["linsert", "l", "before", "a", "z"],
            &["linsert", "l", "before", "nope", "z"],
            &["lset", "l", "0", "q"],
            &["lrem", "l", "0", "nope"],
            &["lrem", "l", "1", "q"],
            &["ltrim", "l", "0", "-1"],
            &["ltrim", "none", "0", "-1"],
            &["rpush", "m", "1", "2", "3"],
            &["lmove", "m", "n", "left", "right"],
            &["lmove", "m", "m", "left", "right"],
            &["rpoplpush", "m", "n"],
            &["rpoplpush", "m", "n"],
            &["lmove", "gone", "n", "left", "left"],
            &["lmpop", "2", "gone", "n", "right", "count", "5"],
            &["lmpop", "1", "gone", "left"],
            &["rpush", "t", "1", "2"],
            &["lrem", "t", "0", "1"],
            &["lrem", "t", "0", "2"],
            &["rpush", "t", "1", "2"],
            &["ltrim", "t", "5", "6"],
            &["rpush", "t", "1"],
            &["rpop", "t", "3"],
            &["rpush", "s", "3", "1", "2"],
            &["sort", "s", "store", "sorted"],
            &["sort", "nothing", "store", "sorted"],
            &["sort", "nothing", "store", "sorted"],
        ]),
        70,
    );
}

#[test]
fn zset_events_match_redis() {
    compare(
        &calls(&[
            &["zadd", "z", "1", "a", "2", "b", "3", "c"],
            &["zadd", "z", "1", "a"],
            &["zadd", "z", "xx", "ch", "5", "a"],
            &["zadd", "z", "nx", "5", "a"],
            &["zadd", "z", "incr", "1", "a"],
            &["zincrby", "z", "2", "b"],
            &["zadd", "inf", "inf", "m"],
            &["zadd", "inf", "1", "n", "incr", "-inf", "m"],
            &["zincrby", "inf", "-inf", "m"],
            &["zrem", "z", "nope"],
            &["zrem", "z", "a"],
            &["zadd", "z", "1", "a", "2", "d", "3", "e"],
            &["zremrangebyrank", "z", "0", "0"],
            &["zremrangebyrank", "z", "10", "20"],
            &["zremrangebyscore", "z", "2", "2"],
            &["zremrangebylex", "z", "-", "(c"],
            &["zpopmin", "z"],
            &["zpopmax", "z", "0"],
            &["zpopmax", "z", "1"],
            &["zpopmin", "z", "10"],
            &["zpopmin", "z"],
            &["zadd", "x", "1", "a", "2", "b"],
            &["zadd", "y", "1", "b", "2", "c"],
            &["zunionstore", "u", "2", "x", "y"],
            &["zinterstore", "i", "2", "x", "y"],
            &["zdiffstore", "d", "2", "x", "y"],
            &["zdiffstore", "d", "2", "x", "x"],
            &["zdiffstore", "d", "2", "x", "x"],
            &["zrangestore", "r", "x", "0", "-1"],
            &["zrangestore", "r", "x", "5", "6"],
            &["zrangestore", "r", "x", "5", "6"],
            &["zmpop", "2", "none", "x", "min", "count", "5"],
            &["zmpop", "1", "none", "max"],
            &["zadd", "w", "1", "a"],
            &["zrem", "w", "a", "b"],
            &["zadd", "w", "1", "a"],
            &["zremrangebyscore", "w", "-inf", "+inf"],
            &["set", "s", "1"],
            &["zadd", "s", "1", "a"],
        ]),
        55,
    );
}

#[test]
fn geo_events_match_redis() {
    compare(
        &calls(&[
            // GEOADD is ZADD underneath: its event is "zadd".
            &[
                "geoadd",
                "g",
                "13.361389",
                "38.115556",
                "Palermo",
                "15.087269",
                "37.502669",
                "Catania",
            ],
            &["geoadd", "g", "13.361389", "38.115556", "Palermo"],
            &["geoadd", "g", "xx", "ch", "13", "38", "Palermo"],
            &["geoadd", "g", "nx", "13", "38", "Palermo"],
            &["geoadd", "g", "200", "38", "bad"],
            &["georadius", "g", "15", "37", "200", "km"],
            &["georadius", "g", "15", "37", "200", "km", "store", "r"],
            &["georadius", "g", "15", "37", "200", "km", "storedist", "r"],
            &[
                "georadiusbymember",
                "g",
                "Palermo",
                "200",
                "km",
                "store",
                "r2",
            ],
            &[
                "geosearchstore",
                "s",
                "g",
                "fromlonlat",
                "15",
                "37",
                "byradius",
                "200",
                "km",
            ],
            &[
                "geosearchstore",
                "s",
                "g",
                "frommember",
                "Palermo",
                "bybox",
                "1",
                "1",
                "m",
                "storedist",
            ],
            // Nothing found: the destination is deleted, then there is nothing to delete.
            &[
                "geosearchstore",
                "s",
                "g",
                "fromlonlat",
                "0",
                "0",
                "byradius",
                "1",
                "m",
            ],
            &[
                "geosearchstore",
                "s",
                "g",
                "fromlonlat",
                "0",
                "0",
                "byradius",
                "1",
                "m",
            ],
            &["georadius", "g", "0", "0", "1", "m", "store", "r"],
            &["georadius", "nokey", "0", "0", "1", "m", "store", "r2"],
            &[
                "geosearchstore",
                "s",
                "nokey",
                "fromlonlat",
                "0",
                "0",
                "byradius",
                "1",
                "m",
            ],
            &["set", "str", "v"],
            &[
                "geosearchstore",
                "str",
                "g",
                "fromlonlat",
                "15",
                "37",
                "byradius",
                "200",
                "km",
            ],
            &["type", "str"],
        ]),
        16,
    );
}

#[test]
fn hll_events_match_redis() {
    compare(
        &calls(&[
            &["pfadd", "h", "a", "b"],
            &["pfadd", "h", "a"],
            &["pfadd", "h2"],
            &["pfadd", "h2"],
            &["pfmerge", "h3", "h", "h2"],
            &["pfmerge", "h3"],
            &["pfcount", "h", "h3"],
        ]),
        8,
    );
}

#[test]
fn blocking_events_match_redis() {
    use Step::*;
    compare(
        &[
            // Served at once: the events of the non-blocking commands.
            Call(&["rpush", "l", "a", "b", "c"]),
            Call(&["blpop", "none", "l", "0"]),
            Call(&["brpop", "l", "0"]),
            Call(&["blmove", "l", "m", "left", "right", "0"]),
            Call(&["rpush", "l", "x", "y"]),
            Call(&["brpoplpush", "l", "m", "0"]),
            Call(&["blmpop", "0", "2", "none", "m", "right", "count", "9"]),
            Call(&["zadd", "z", "1", "a", "2", "b"]),
            Call(&["bzpopmin", "none", "z", "0"]),
            Call(&["bzpopmax", "z", "0"]),
            Call(&["zadd", "z", "1", "a", "2", "b"]),
            Call(&["bzmpop", "0", "1", "z", "max", "count", "5"]),
            // Served by a later write.
            Block(&["blpop", "q", "0"]),
            Block(&["brpop", "q", "0"]),
            Wake(&["rpush", "q", "1", "2", "3"]),
            Block(&["blmove", "src", "dst", "right", "left", "0"]),
            Block(&["blpop", "dst", "0"]),
            Wake(&["lpush", "src", "v"]),
            Block(&["bzpopmin", "zz", "0"]),
            Wake(&["zadd", "zz", "1", "a", "2", "b"]),
            Block(&["bzmpop", "0", "1", "zz2", "max", "count", "2"]),
            Wake(&["zadd", "zz2", "1", "a", "2", "b", "3", "c"]),
            Block(&["blmpop", "0", "1", "lm", "left", "count", "5"]),
            Wake(&["rpush", "lm", "1", "2"]),
            Block(&["blpop", "renamed", "0"]),
            Call(&["rpush", "tmp", "1"]),
            Wake(&["rename", "tmp", "renamed"]),
            Block(&["bzpopmax", "stored", "0"]),
            Call(&["zadd", "zs", "1", "a"]),
            Wake(&["zunionstore", "stored", "1", "zs"]),
            Block(&["blpop", "sorted", "0"]),
            Call(&["sort", "l2", "store", "sorted"]),
            Call(&["rpush", "l2", "2", "1"]),
            Wake(&["sort", "l2", "store", "sorted"]),
        ],
        60,
    );
}

#[test]
fn hash_set_events_match_redis() {
    use Step::*;
    compare(
        &[
            // Hashes.
            Call(&["hset", "h", "f1", "v1", "f2", "v2"]),
            Call(&["hset", "h", "f1", "v1"]),
            Call(&["hmset", "h", "f3", "v3"]),
            Call(&["hsetnx", "h", "f1", "x"]),
            Call(&["hsetnx", "h", "f4", "v4"]),
            Call(&["hsetnx", "h2", "f", "v"]),
            Call(&["hincrby", "h", "n", "5"]),
            Call(&["hincrby", "h", "f1", "1"]),
            Call(&["hincrbyfloat", "h", "fl", "1.5"]),
            Call(&["hincrbyfloat", "h", "n", "0.5"]),
            Call(&["hincrbyfloat", "h", "f1", "1"]),
            Call(&["hdel", "h", "nope"]),
            Call(&["hdel", "h", "f1", "f2", "nope"]),
            Call(&["hdel", "none", "f"]),
            Call(&["hdel", "h2", "f"]),
            Call(&["hdel", "h", "f3", "f4", "n", "fl", "nope"]),
            Call(&["hgetall", "h"]),
            Call(&["set", "str", "1"]),
            Call(&["hset", "str", "f", "v"]),
            Call(&["hdel", "str", "f"]),
            // Sets: SADD, SREM.
            Call(&["sadd", "s", "a", "b", "c"]),
            Call(&["sadd", "s", "a"]),
            Call(&["sadd", "s", "a", "d"]),
            Call(&["srem", "s", "nope"]),
            Call(&["srem", "none", "a"]),
            Call(&["srem", "s", "a"]),
            Call(&["sadd", "t", "x"]),
            Call(&["srem", "t", "x", "y"]),
            Call(&["sadd", "str", "a"]),
            // SPOP, with and without a count (all three cases of the count form).
            Call(&["sadd", "p", "1"]),
            Call(&["spop", "p"]),
            Call(&["spop", "none"]),
            Call(&["sadd", "p", "1", "2", "3"]),
            Call(&["spop", "p", "0"]),
            Call(&["spop", "none", "2"]),
            Random(&["spop", "p", "1"]),
            Random(&["spop", "p"]),
            Random(&["spop", "p", "5"]),
            Call(&["exists", "p"]),
            Call(&[
                "sadd", "q", "1", "2", "3", "4", "5", "6", "7", "8", "9", "10",
            ]),
            Random(&["spop", "q", "9"]),
            Call(&["scard", "q"]),
            Random(&["spop", "q"]),
            Call(&["sadd", "q", "1", "2", "3"]),
            Call(&["spop", "q", "3"]),
            // SMOVE.
            Call(&["sadd", "m1", "a", "b"]),
            Call(&["sadd", "m2", "b"]),
            Call(&["smove", "m1", "m2", "a"]),
            Call(&["smove", "m1", "m2", "b"]),
            Call(&["smove", "m1", "m2", "b"]),
            Call(&["smove", "m2", "m2", "b"]),
            Call(&["smove", "m2", "m3", "zzz"]),
            Call(&["smove", "m2", "m3", "a"]),
            Call(&["smove", "m2", "m4", "b"]),
            Call(&["smove", "m3", "str", "a"]),
            // The *STORE forms.
            Call(&["sadd", "x", "1", "2", "3"]),
            Call(&["sadd", "y", "2", "3", "4"]),
            Call(&["sadd", "z", "7"]),
            Call(&["sinterstore", "i", "x", "y"]),
            Call(&["sunionstore", "u", "x", "y"]),
            Call(&["sdiffstore", "d", "x", "y"]),
            Call(&["sinterstore", "i", "x", "nokey"]),
            Call(&["sinterstore", "i", "x", "nokey"]),
            Call(&["sinterstore", "i", "x", "y"]),
            Call(&["sinterstore", "i", "x", "z"]),
            Call(&["sinterstore", "i", "x", "z"]),
            Call(&["sdiffstore", "d", "x", "x"]),
            Call(&["sdiffstore", "d", "x", "x"]),
            Call(&["sdiffstore", "d", "nokey", "x"]),
            Call(&["sunionstore", "u", "nokey", "nokey2"]),
            Call(&["sunionstore", "u", "nokey", "nokey2"]),
            Call(&["set", "str2", "v"]),
            Call(&["sdiffstore", "str2", "x", "y"]),
            Call(&["type", "str2"]),
            Call(&["set", "str2", "v"]),
            Call(&["sinterstore", "str2", "x", "z"]),
            Call(&["sintercard", "2", "x", "y"]),
            Call(&["sinter", "x", "y"]),
        ],
        120,
    );
}

#[test]
fn stream_events_match_redis() {
    use Step::*;
    compare(
        &[
            Call(&["xadd", "s", "1-1", "f", "v"]),
            Call(&["xadd", "s", "2-1", "f", "v"]),
            Call(&["xadd", "s", "maxlen", "2", "3-1", "f", "v"]),
            Call(&["xadd", "s", "maxlen", "~", "1", "4-1", "f", "v"]),
            Call(&["xadd", "s", "nomkstream", "1-1", "f", "v"]),
            Call(&["xadd", "none", "nomkstream", "1-1", "f", "v"]),
            Call(&["xtrim", "s", "maxlen", "5"]),
            Call(&["xtrim", "s", "minid", "4"]),
            Call(&["xdel", "s", "9-9"]),
            Call(&["xdel", "s", "4-1"]),
            Call(&["xsetid", "s", "10-0"]),
            Call(&["xadd", "s", "11-1", "f", "v"]),
            Call(&["xadd", "s", "12-1", "f", "v"]),
            Call(&["xgroup", "create", "s", "g", "0"]),
            Call(&["xgroup", "create", "s", "g", "0"]),
            Call(&["xgroup", "create", "mk", "g", "$", "mkstream"]),
            Call(&["xgroup", "createconsumer", "s", "g", "c1"]),
            Call(&["xgroup", "createconsumer", "s", "g", "c1"]),
            Call(&[
                "xreadgroup",
                "group",
                "g",
                "c2",
                "count",
                "1",
                "streams",
                "s",
                ">",
            ]),
            Call(&["xreadgroup", "group", "g", "c2", "streams", "s", "0"]),
            Call(&["xreadgroup", "group", "g", "c3", "streams", "s", "0"]),
            Call(&[
                "xreadgroup",
                "group",
                "g",
                "c4",
                "noack",
                "streams",
                "s",
                ">",
            ]),
            Call(&["xclaim", "s", "g", "c5", "0", "11-1"]),
            Call(&["xclaim", "s", "g", "c6", "0", "99-1"]),
            Call(&["xautoclaim", "s", "g", "c7", "0", "0"]),
            Call(&["xack", "s", "g", "11-1"]),
            Call(&["xgroup", "setid", "s", "g", "0"]),
            Call(&["xgroup", "delconsumer", "s", "g", "c1"]),
            Call(&["xgroup", "delconsumer", "s", "g", "nobody"]),
            Call(&["xgroup", "destroy", "s", "g"]),
            Call(&["xgroup", "destroy", "s", "g"]),
            // Readers served by a later write; a group reader whose group goes.
            Block(&["xread", "block", "0", "streams", "s", "$"]),
            Block(&["xread", "block", "0", "streams", "s", "$"]),
            Wake(&["xadd", "s", "13-1", "f", "v"]),
            Call(&["xgroup", "create", "s", "g2", "$"]),
            Block(&[
                "xreadgroup",
                "group",
                "g2",
                "r1",
                "block",
                "0",
                "streams",
                "s",
                ">",
            ]),
            Wake(&["xadd", "s", "14-1", "f", "v"]),
            Block(&[
                "xreadgroup",
                "group",
                "g2",
                "r2",
                "block",
                "0",
                "streams",
                "s",
                ">",
            ]),
            Wake(&["xgroup", "destroy", "s", "g2"]),
            Call(&["xgroup", "create", "s", "g3", "$"]),
            Block(&[
                "xreadgroup",
                "group",
                "g3",
                "r3",
                "block",
                "0",
                "streams",
                "s",
                ">",
            ]),
            Wake(&["del", "s"]),
        ],
        40,
    );
}

/// `new` (flag n): every command that creates a key announces it, before its own event;
/// storing over an existing key does not, except RENAME and COPY ... REPLACE, which
/// create their destination anew. Alone (`KEn`) and with everything else (`KEAn`).
#[test]
fn new_events_match_redis() {
    let cmds: &[&[&str]] = &[
        &["set", "s", "1"],
        &["set", "s", "2"],
        &["setnx", "s2", "1"],
        &["mset", "m1", "1", "m2", "2", "s", "3"],
        &["getset", "g", "1"],
        &["incr", "i"],
        &["incrbyfloat", "f", "1.5"],
        &["append", "a", "x"],
        &["setrange", "r", "2", "x"],
        &["setbit", "b", "7", "1"],
        &["bitfield", "bf", "set", "u8", "0", "1"],
        &["bitop", "or", "bo", "b", "b"],
        &["pfadd", "h", "x"],
        &["lpush", "l", "a", "b"],
        &["rpush", "l", "c"],
        &["lmove", "l", "l2", "left", "right"],
        &["hset", "hh", "f", "v"],
        &["hincrby", "hi", "f", "1"],
        &["sadd", "st", "a", "b"],
        &["sunionstore", "su", "st"],
        &["sunionstore", "su", "st"],
        &["smove", "st", "st2", "a"],
        &["zadd", "z", "1", "a"],
        &["zincrby", "zi", "1", "a"],
        &["zunionstore", "zu", "1", "z"],
        &["sort", "l", "alpha", "store", "so"],
        &["rename", "s", "s3"],
        &["rename", "s3", "m1"],
        &["copy", "m1", "c1"],
        &["copy", "m1", "c1", "replace"],
        &["copy", "m1", "c1"],
        &["move", "c1", "5"],
        &["set", "ex", "1", "px", "100000"],
        &["expire", "ex", "1000"],
        &["del", "a"],
    ];
    compare_with("KEn", &calls(cmds), 25);
    compare_with("KEAn", &calls(cmds), 60);
}
