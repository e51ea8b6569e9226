//! Pub/sub and keyspace notifications: RESP2 subscribed mode and RESP3 pushes compared
//! byte for byte with redis-server, many subscribers across worker threads, patterns,
//! a slow subscriber cut off at its output-buffer limit, and keyspace event streams
//! compared with redis-server's for the same writes.

mod common;

use common::{encode_command, Proc, RespConn};
use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

/// Sends every command at once and reads everything that arrives within `wait`.
fn exchange(p: &Proc, cmds: &[&[&str]], wait: Duration) -> Vec<u8> {
    let mut s = p.raw();
    for c in cmds {
        s.write_all(&encode_command(c)).unwrap();
    }
    drain(&mut s, wait)
}

fn drain(s: &mut TcpStream, wait: Duration) -> Vec<u8> {
    let mut out = Vec::new();
    let end = Instant::now() + wait;
    s.set_read_timeout(Some(Duration::from_millis(50))).unwrap();
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

fn both() -> (Proc, Proc) {
    (common::strata(&["--threads", "4"]), common::redis(&[]))
}

#[test]
fn subscribed_modes_match_redis() {
    let (s, r) = both();
    let resp2: &[&[&str]] = &[
        &["subscribe", "a", "b"],
        &["ping"],
        &["ping", "x"],
        &["get", "x"],
        &["unsubscribe", "zz"],
        &["psubscribe", "p*"],
        &["punsubscribe"],
        &["punsubscribe"],
        // Redis answers an argument-less UNSUBSCRIBE in its dict's order: name them.
        &["unsubscribe", "b"],
        &["unsubscribe"],
        &["unsubscribe"],
        &["ping"],
        &["pubsub", "numpat"],
        &["get", "x"],
    ];
    let resp3: &[&[&str]] = &[
        &["hello", "3"],
        &["subscribe", "ch"],
        &["publish", "ch", "x"],
        &["psubscribe", "c*"],
        &["publish", "ch", "y"],
        &["get", "k"],
        &["ping"],
        &["unsubscribe"],
        &["punsubscribe"],
        &["unsubscribe"],
    ];
    // Shard channels (Redis 7): a namespace of their own, counted apart from the others.
    let shard2: &[&[&str]] = &[
        &["ssubscribe", "q", "r"],
        &["subscribe", "q"],
        &["ssubscribe", "q2"],
        &["sunsubscribe", "zz"],
        &["get", "x"],
        &["unsubscribe"],
        &["get", "x"],
        &["spublish", "q", "m"],
        &["sunsubscribe", "q2", "r"],
        &["sunsubscribe"],
        &["sunsubscribe"],
        &["ping"],
        &["get", "x"],
    ];
    let shard3: &[&[&str]] = &[
        &["hello", "3"],
        &["ssubscribe", "z"],
        &["spublish", "z", "self"],
        &["publish", "z", "global"],
        &["psubscribe", "*"],
        &["spublish", "z", "again"],
        &["pubsub", "shardnumsub", "z", "y"],
        &["pubsub", "shardchannels"],
        &["pubsub", "numsub", "z"],
        &["sunsubscribe"],
        &["spublish", "z", "gone"],
    ];
    let resets: &[&[&str]] = &[
        &["subscribe", "a"],
        &["ssubscribe", "b"],
        &["reset"],
        &["get", "x"],
        &["pubsub", "numsub", "a", "b"],
        &["pubsub", "channels", "*", "x"],
        &["pubsub", "shardnumsub", "b"],
    ];
    for cmds in [resp2, resp3, shard2, shard3, resets] {
        let w = Duration::from_millis(200);
        let (a, b) = (exchange(&s, cmds, w), exchange(&r, cmds, w));
        // HELLO's reply names versions and ids: compare from the first push on.
        let cut = |v: &[u8]| {
            if cmds[0][0] == "hello" {
                let i = v.windows(2).position(|w| w == b">3").unwrap_or(0);
                v[i..].to_vec()
            } else {
                v.to_vec()
            }
        };
        assert_eq!(
            common::show(&cut(&a)),
            common::show(&cut(&b)),
            "for {cmds:?}"
        );
    }
}

#[test]
fn many_subscribers_across_threads_with_patterns() {
    let s = common::strata(&["--threads", "4"]);
    let mut subs: Vec<RespConn> = (0..12).map(|_| RespConn::new(&s)).collect();
    for (i, c) in subs.iter_mut().enumerate() {
        let r = if i % 3 == 0 {
            c.call(&["psubscribe", "news.*"]).unwrap()
        } else {
            c.call(&["subscribe", "news.sport"]).unwrap()
        };
        assert!(r.shown().contains("subscribe"), "{}", r.shown());
    }
    let mut p = RespConn::new(&s);
    assert_eq!(p.call(&["pubsub", "numpat"]).unwrap().raw, b":1\r\n");
    assert_eq!(
        p.call(&["pubsub", "numsub", "news.sport", "x"])
            .unwrap()
            .raw,
        b"*4\r\n$10\r\nnews.sport\r\n:8\r\n$1\r\nx\r\n:0\r\n"
    );
    let info = String::from_utf8_lossy(&p.call(&["info", "stats"]).unwrap().raw).into_owned();
    assert!(info.contains("pubsub_channels:1"), "{info}");
    assert!(info.contains("pubsub_patterns:1"), "{info}");
    let list = String::from_utf8_lossy(&p.call(&["client", "list"]).unwrap().raw).into_owned();
    assert_eq!(list.matches("flags=P").count(), 12, "{list}");
    assert!(list.contains("sub=1 psub=0"), "{list}");
    assert!(list.contains("sub=0 psub=1"), "{list}");
    for i in 0..50 {
        let n = p.call(&["publish", "news.sport", &i.to_string()]).unwrap();
        assert_eq!(n.raw, b":12\r\n");
    }
    assert_eq!(
        p.call(&["publish", "news.tech", "t"]).unwrap().raw,
        b":4\r\n"
    );
    for (i, c) in subs.iter_mut().enumerate() {
        for j in 0..50 {
            let m = c.read().unwrap();
            let want = if i % 3 == 0 {
                format!(
                    "*4\r\n$8\r\npmessage\r\n$6\r\nnews.*\r\n$10\r\nnews.sport\r\n${}\r\n{j}\r\n",
                    j.to_string().len()
                )
            } else {
                format!(
                    "*3\r\n$7\r\nmessage\r\n$10\r\nnews.sport\r\n${}\r\n{j}\r\n",
                    j.to_string().len()
                )
            };
            assert_eq!(common::show(&m.raw), common::show(want.as_bytes()));
        }
        if i % 3 == 0 {
            assert!(c.read().unwrap().shown().contains("news.tech"));
        }
    }
    // Disconnected subscribers leave nothing behind.
    drop(subs);
    std::thread::sleep(Duration::from_millis(200));
    assert_eq!(p.call(&["pubsub", "numpat"]).unwrap().raw, b":0\r\n");
    assert_eq!(
        p.call(&["publish", "news.sport", "x"]).unwrap().raw,
        b":0\r\n"
    );
    assert_eq!(p.call(&["pubsub", "channels"]).unwrap().raw, b"*0\r\n");
}

#[test]
fn slow_subscriber_is_disconnected_at_its_limit() {
    let s = common::strata(&["--threads", "2"]);
    let mut p = RespConn::new(&s);
    assert_eq!(
        p.call(&[
            "config",
            "set",
            "client-output-buffer-limit",
            "pubsub 1mb 512kb 1"
        ])
        .unwrap()
        .raw,
        b"+OK\r\n"
    );
    assert_eq!(
        p.call(&["config", "get", "client-output-buffer-limit"]).unwrap().shown(),
        common::show(b"*2\r\n$26\r\nclient-output-buffer-limit\r\n$64\r\nnormal 0 0 0 slave 268435456 67108864 60 pubsub 1048576 524288 1\r\n")
    );
    // A subscriber that never reads, with a tiny receive buffer.
    let slow = p_subscriber(&s, "flood");
    let mut fast = RespConn::new(&s);
    fast.call(&["subscribe", "flood"]).unwrap();
    let payload = "x".repeat(16 * 1024);
    let mut receivers = Vec::new();
    for _ in 0..400 {
        let n = p.call(&["publish", "flood", &payload]).unwrap();
        receivers.push(n.raw);
        // Keep the fast subscriber drained.
        let _ = fast.read();
    }
    // 400 * 16 KiB = 6.4 MB: far past the 1 MiB hard limit, so the slow one is gone.
    assert_eq!(receivers.last().unwrap(), b":1\r\n");
    let list = String::from_utf8_lossy(&p.call(&["client", "list"]).unwrap().raw).into_owned();
    assert_eq!(list.matches("flags=P").count(), 1, "{list}");
    drop(slow);
    // Soft limit alone (no hard limit): over 512kb for more than a second disconnects.
    p.call(&[
        "config",
        "set",
        "client-output-buffer-limit",
        "pubsub 0 512kb 1",
    ])
    .unwrap();
    let slow = p_subscriber(&s, "trickle");
    let start = Instant::now();
    let mut last = Vec::new();
    while start.elapsed() < Duration::from_secs(10) {
        last = p.call(&["publish", "trickle", &payload]).unwrap().raw;
        if last == b":0\r\n" {
            break;
        }
        std::thread::sleep(Duration::from_millis(4));
    }
    assert_eq!(last, b":0\r\n", "the soft limit did not disconnect");
    assert!(start.elapsed() >= Duration::from_millis(900));
    drop(slow);
}

fn p_subscriber(s: &Proc, channel: &str) -> TcpStream {
    let sock = socket2_small(s);
    let mut c = sock.try_clone().unwrap();
    c.write_all(&encode_command(&["subscribe", channel]))
        .unwrap();
    let mut buf = [0u8; 64];
    let _ = c.read(&mut buf);
    sock
}

/// A plain connection (std has no SO_RCVBUF setter; the kernel's default is small
/// compared with the limits tested).
fn socket2_small(s: &Proc) -> TcpStream {
    let t = s.raw();
    t.set_read_timeout(Some(Duration::from_secs(2))).unwrap();
    t
}

/// The same writes on both servers, with a `__key*__:*` subscriber on each: the event
/// streams must be identical.
#[test]
fn keyspace_events_match_redis() {
    let (s, r) = both();
    let writes: &[&[&str]] = &[
        &["config", "set", "notify-keyspace-events", "KEA"],
        &["set", "k", "v"],
        &["set", "k", "v", "ex", "100"],
        &["set", "k", "v", "keepttl"],
        &["set", "k", "w", "nx"],
        &["set", "k", "w", "xx", "get"],
        &["setnx", "k", "z"],
        &["setnx", "k2", "z"],
        &["setex", "se", "100", "v"],
        &["psetex", "pse", "100000", "v"],
        &["getset", "k2", "v2"],
        &["append", "k", "x"],
        &["append", "new", "x"],
        &["incr", "n"],
        &["decr", "n"],
        &["incrby", "n", "5"],
        &["decrby", "n", "2"],
        &["incrbyfloat", "n", "1.5"],
        &["setrange", "k", "1", "zz"],
        &["setrange", "k", "1", ""],
        &["rename", "k", "k3"],
        &["renamenx", "k3", "k2"],
        &["renamenx", "k3", "k4"],
        &["move", "k4", "1"],
        &["copy", "n", "n2"],
        &["copy", "n", "n3", "db", "2"],
        &["expire", "n", "100"],
        &["pexpire", "n", "100000"],
        &["expireat", "n", "99999999999"],
        &["persist", "n"],
        &["persist", "n"],
        &["expire", "n2", "-1"],
        &["del", "n", "n2", "nope"],
        &["unlink", "se"],
        &["setbit", "b", "3", "1"],
        &["bitfield", "bf", "set", "u8", "0", "255", "get", "u8", "0"],
        &[
            "bitfield", "bf", "overflow", "fail", "incrby", "u8", "0", "10",
        ],
        &["bitop", "or", "d", "b"],
        &["bitop", "and", "d", "nothing"],
        &["bitop", "and", "d", "nothing"],
        &["getdel", "pse"],
        &["mset", "a", "1", "b", "2"],
        &["msetnx", "a", "1", "c", "2"],
        &["msetnx", "c", "1", "e", "2"],
        &["getex", "a", "px", "100000"],
        &["getex", "a", "persist"],
        &["getex", "a", "persist"],
        &["getex", "b", "exat", "1"],
        &["pexpire", "c", "1"],
        &["config", "set", "notify-keyspace-events", "Kx"],
        &["set", "silent", "1"],
        &["pexpire", "e", "1"],
        &["config", "set", "notify-keyspace-events", "Eg$"],
        &["set", "ev", "1"],
        &["del", "ev"],
        &["config", "set", "notify-keyspace-events", ""],
        &["set", "off", "1"],
    ];
    let mut streams = Vec::new();
    for p in [&s, &r] {
        let mut sub = p.raw();
        sub.write_all(&encode_command(&["psubscribe", "__key*__:*"]))
            .unwrap();
        drain(&mut sub, Duration::from_millis(100));
        let mut w = RespConn::new(p);
        for c in writes {
            w.call(c).unwrap();
            if c[0] == "pexpire" && c[2] == "1" {
                std::thread::sleep(Duration::from_millis(5));
                // Lazy expiry on access emits `expired`.
                w.call(&["get", c[1]]).unwrap();
            }
        }
        streams.push(drain(&mut sub, Duration::from_millis(300)));
    }
    let lines = |v: &[u8]| {
        String::from_utf8_lossy(v)
            .replace("\r\n", " ")
            .split("*4 ")
            .map(str::to_string)
            .collect::<Vec<_>>()
    };
    let (a, b) = (lines(&streams[0]), lines(&streams[1]));
    assert!(b.len() > 60, "redis produced {} events", b.len());
    assert_eq!(a, b);
}

#[test]
fn active_expiry_publishes_expired() {
    let s = common::strata(&["--threads", "2"]);
    let mut w = RespConn::new(&s);
    w.call(&["config", "set", "notify-keyspace-events", "Ex"])
        .unwrap();
    assert_eq!(
        w.call(&["config", "get", "notify-keyspace-events"])
            .unwrap()
            .shown(),
        common::show(b"*2\r\n$22\r\nnotify-keyspace-events\r\n$2\r\nxE\r\n")
    );
    let mut sub = RespConn::new(&s);
    sub.call(&["subscribe", "__keyevent@0__:expired"]).unwrap();
    w.call(&["set", "gone", "1", "px", "20"]).unwrap();
    // Nobody touches the key: only the active cycle can report it.
    let m = sub.read().unwrap();
    assert_eq!(
        m.shown(),
        common::show(b"*3\r\n$7\r\nmessage\r\n$22\r\n__keyevent@0__:expired\r\n$4\r\ngone\r\n")
    );
    let err = w
        .call(&["config", "set", "notify-keyspace-events", "Kq"])
        .unwrap();
    assert!(err.shown().contains("Invalid event class character"));
}
