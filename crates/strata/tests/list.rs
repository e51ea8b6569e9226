//! The list commands against the real binary: LPUSH RPUSH LPUSHX RPUSHX LPOP RPOP LLEN
//! LRANGE LINDEX LSET LINSERT LREM LTRIM LPOS LMOVE RPOPLPUSH LMPOP.
//!
//! - model tests: long random command sequences on Strata checked against a `VecDeque`
//!   model, over lists far larger than one node, under several node size settings;
//! - `random_list_commands_match_redis`: a property test running random list command
//!   sequences on redis-server and Strata (with a random `list-max-listpack-size`) and
//!   comparing every reply byte for byte (`PROPTEST_CASES`, default 300);
//! - concurrency: pushes and moves from several clients (on different worker threads).

mod common;

use common::{bulk, cmd, encode_command, err, int, raw, Proc, RawReply, RespConn};
use proptest::prelude::*;
use proptest::test_runner::{Config as PtConfig, TestCaseError, TestRunner};
use redis::{Connection, Value};
use std::cell::RefCell;
use std::collections::VecDeque;
use std::fmt::Write as _;

fn strings<A: redis::ToRedisArgs>(c: &mut Connection, args: &[A]) -> Vec<Vec<u8>> {
    common::bulk_strings(cmd(c, args))
}

struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
    fn elem(&mut self) -> Vec<u8> {
        match self.below(7) {
            0 => self.below(300).to_string().into_bytes(),
            1 => (self.next() as i64).to_string().into_bytes(),
            2 => vec![b'a' + self.below(3) as u8; self.below(4)],
            3 if self.below(10) == 0 => vec![b'y'; 8000 + self.below(4000)],
            3 => vec![b'x'; self.below(2000)],
            4 => format!("-{}", self.below(70000)).into_bytes(),
            5 => vec![0, 255, b'\r', b'\n'],
            _ => format!("e{}", self.below(20)).into_bytes(),
        }
    }
}

/// Redis's index normalisation for LRANGE/LTRIM.
fn clamp(start: i64, end: i64, len: usize) -> Option<(usize, usize)> {
    let llen = len as i64;
    let mut s = if start < 0 { llen + start } else { start };
    let e = if end < 0 { llen + end } else { end };
    if s < 0 {
        s = 0;
    }
    if s > e || s >= llen {
        None
    } else {
        Some((s as usize, e.min(llen - 1) as usize))
    }
}

fn model_run(fill: &str, seed: u64, steps: usize) {
    let p = common::strata(&["--list-max-listpack-size", fill]);
    let mut c = p.client();
    let mut r = Rng(seed);
    let mut m: VecDeque<Vec<u8>> = VecDeque::new();
    for step in 0..steps {
        let len = m.len();
        let ctx = format!("fill {fill} seed {seed} step {step} len {len}");
        match r.below(14) {
            0..=2 => {
                let n = 1 + r.below(20);
                let es: Vec<Vec<u8>> = (0..n).map(|_| r.elem()).collect();
                let head = r.below(2) == 0;
                let mut args: Vec<&[u8]> = vec![if head { b"LPUSH" } else { b"RPUSH" }, b"k"];
                args.extend(es.iter().map(|e| e.as_slice()));
                for e in es.iter() {
                    if head {
                        m.push_front(e.clone());
                    } else {
                        m.push_back(e.clone());
                    }
                }
                assert_eq!(int(&mut c, &args), m.len() as i64, "{ctx}");
            }
            3 => {
                let head = r.below(2) == 0;
                let name = if head { "LPOP" } else { "RPOP" };
                let want = if head { m.pop_front() } else { m.pop_back() };
                assert_eq!(bulk(&mut c, &[name, "k"]), want, "{ctx}");
            }
            4 => {
                let head = r.below(2) == 0;
                let n = r.below(30);
                let name = if head { "LPOP" } else { "RPOP" };
                let got = cmd(&mut c, &[name, "k", &n.to_string()]);
                if len == 0 {
                    assert_eq!(got, Value::Nil, "{ctx}");
                    continue;
                }
                let mut want = Vec::new();
                for _ in 0..n.min(len) {
                    want.push(Value::BulkString(if head {
                        m.pop_front().unwrap()
                    } else {
                        m.pop_back().unwrap()
                    }));
                }
                assert_eq!(got, Value::Array(want), "{ctx}");
            }
            5 | 6 => {
                let a = r.below(len + 3) as i64 - (len as i64 + 1) * (r.below(2) as i64);
                let b = r.below(len + 3) as i64 - (len as i64 + 1) * (r.below(2) as i64);
                let got = strings(&mut c, &["LRANGE", "k", &a.to_string(), &b.to_string()]);
                let want: Vec<Vec<u8>> = match clamp(a, b, len) {
                    Some((s, e)) => m.range(s..=e).cloned().collect(),
                    None => Vec::new(),
                };
                assert_eq!(got, want, "{ctx} LRANGE {a} {b}");
            }
            7 => {
                let i = r.below(len + 2) as i64 - (len as i64 + 1) * (r.below(2) as i64);
                let want = if i < 0 {
                    (len as i64 + i >= 0).then(|| m[(len as i64 + i) as usize].clone())
                } else {
                    m.get(i as usize).cloned()
                };
                assert_eq!(
                    bulk(&mut c, &["LINDEX", "k", &i.to_string()]),
                    want,
                    "{ctx}"
                );
            }
            8 if len > 0 => {
                let i = r.below(len);
                let e = r.elem();
                let got = cmd(&mut c, &[&b"LSET"[..], b"k", i.to_string().as_bytes(), &e]);
                assert_eq!(got, Value::Okay, "{ctx}");
                m[i] = e;
            }
            9 if len > 0 => {
                let pivot = m[r.below(len)].clone();
                let e = r.elem();
                let after = r.below(2) == 0;
                let pos = m.iter().position(|x| *x == pivot).unwrap();
                let w: &[u8] = if after { b"AFTER" } else { b"BEFORE" };
                let got = int(&mut c, &[&b"LINSERT"[..], b"k", w, &pivot, &e]);
                m.insert(pos + usize::from(after), e);
                assert_eq!(got, m.len() as i64, "{ctx}");
            }
            10 => {
                let e = if len > 0 && r.below(2) == 0 {
                    m[r.below(len)].clone()
                } else {
                    r.elem()
                };
                let count = r.below(5) as i64 - 2;
                let got = int(
                    &mut c,
                    &[&b"LREM"[..], b"k", count.to_string().as_bytes(), &e],
                );
                let mut idx: Vec<usize> = (0..len).filter(|&i| m[i] == e).collect();
                let limit = count.unsigned_abs() as usize;
                if limit != 0 && idx.len() > limit {
                    if count < 0 {
                        idx.drain(..idx.len() - limit);
                    } else {
                        idx.truncate(limit);
                    }
                }
                for &i in idx.iter().rev() {
                    m.remove(i);
                }
                assert_eq!(got, idx.len() as i64, "{ctx}");
            }
            11 if r.below(8) == 0 => {
                let a = r.below(len / 10 + 2) as i64;
                let b = -(r.below(len / 10 + 2) as i64) - 1;
                cmd(&mut c, &["LTRIM", "k", &a.to_string(), &b.to_string()]);
                m = match clamp(a, b, len) {
                    Some((s, e)) => m.range(s..=e).cloned().collect(),
                    None => VecDeque::new(),
                };
            }
            12 if len > 0 => {
                let e = m[r.below(len)].clone();
                let rank = r.below(3) as i64 + 1;
                let neg = r.below(2) == 0;
                let rank_arg = if neg { -rank } else { rank };
                let got = cmd(
                    &mut c,
                    &[
                        &b"LPOS"[..],
                        b"k",
                        &e,
                        b"RANK",
                        rank_arg.to_string().as_bytes(),
                        b"COUNT",
                        b"0",
                    ],
                );
                let mut hits: Vec<usize> = (0..len).filter(|&i| m[i] == e).collect();
                if neg {
                    hits.reverse();
                }
                let want: Vec<Value> = hits
                    .into_iter()
                    .skip(rank as usize - 1)
                    .map(|i| Value::Int(i as i64))
                    .collect();
                assert_eq!(got, Value::Array(want), "{ctx}");
            }
            _ => {
                let from_head = r.below(2) == 0;
                let to_head = r.below(2) == 0;
                let w = |h: bool| if h { "LEFT" } else { "RIGHT" };
                let got = bulk(&mut c, &["LMOVE", "k", "k", w(from_head), w(to_head)]);
                let v = if from_head {
                    m.pop_front()
                } else {
                    m.pop_back()
                };
                if let Some(v) = &v {
                    if to_head {
                        m.push_front(v.clone());
                    } else {
                        m.push_back(v.clone());
                    }
                }
                assert_eq!(got, v, "{ctx}");
            }
        }
        assert_eq!(int(&mut c, &["LLEN", "k"]), m.len() as i64, "{ctx}");
    }
    let all = strings(&mut c, &["LRANGE", "k", "0", "-1"]);
    assert_eq!(all, Vec::from(m));
}

#[test]
fn random_commands_against_a_model() {
    for (fill, seed) in [("-2", 1u64), ("-1", 2), ("3", 3), ("1", 4), ("-5", 5)] {
        model_run(fill, seed.wrapping_mul(0x9E37_79B9_7F4A_7C15), 1500);
    }
}

#[test]
fn large_lists() {
    let p = common::strata(&[]);
    let mut c = p.client();
    let n = 200_000usize;
    let mut pipe = redis::pipe();
    for chunk in 0..n / 1000 {
        let elems: Vec<String> = (chunk * 1000..(chunk + 1) * 1000)
            .map(|i| format!("element:{i}"))
            .collect();
        pipe.cmd("RPUSH").arg("big").arg(&elems).ignore();
        let heads: Vec<String> = (chunk * 1000..(chunk + 1) * 1000)
            .map(|i| i.to_string())
            .collect();
        pipe.cmd("LPUSH").arg("ints").arg(&heads).ignore();
    }
    let () = pipe.query(&mut c).expect("pipeline");
    assert_eq!(int(&mut c, &["LLEN", "big"]), n as i64);
    assert_eq!(
        bulk(&mut c, &["LINDEX", "big", "123456"]),
        Some(b"element:123456".to_vec())
    );
    assert_eq!(
        bulk(&mut c, &["LINDEX", "big", "-1"]),
        Some(format!("element:{}", n - 1).into_bytes())
    );
    assert_eq!(
        bulk(&mut c, &["LINDEX", "ints", "0"]),
        Some((n - 1).to_string().into_bytes())
    );
    let all = strings(&mut c, &["LRANGE", "big", "0", "-1"]);
    assert_eq!(all.len(), n);
    assert!(all
        .iter()
        .enumerate()
        .all(|(i, e)| *e == format!("element:{i}").into_bytes()));
    let mid = strings(&mut c, &["LRANGE", "ints", "100000", "100004"]);
    let want: Vec<Vec<u8>> = (0..5)
        .map(|k| (n - 1 - 100_000 - k).to_string().into_bytes())
        .collect();
    assert_eq!(mid, want);
    assert_eq!(
        int(&mut c, &["LPOS", "big", "element:150000", "MAXLEN", "0"]),
        150_000
    );
    assert_eq!(
        int(
            &mut c,
            &["LINSERT", "big", "AFTER", "element:100000", "new"]
        ),
        n as i64 + 1
    );
    assert_eq!(
        bulk(&mut c, &["LINDEX", "big", "100001"]),
        Some(b"new".to_vec())
    );
    assert_eq!(int(&mut c, &["LREM", "big", "0", "new"]), 1);
    cmd(&mut c, &["LTRIM", "big", "1000", "-1001"]);
    assert_eq!(int(&mut c, &["LLEN", "big"]), n as i64 - 2000);
    assert_eq!(
        bulk(&mut c, &["LPOP", "big"]),
        Some(b"element:1000".to_vec())
    );
    let popped = strings(&mut c, &["RPOP", "big", "100000"]);
    assert_eq!(popped.len(), 100_000);
    assert_eq!(popped[0], format!("element:{}", n - 1001).into_bytes());
    assert_eq!(
        cmd(&mut c, &["OBJECT", "ENCODING", "big"]),
        Value::BulkString(b"quicklist".to_vec())
    );
    // Draining a list deletes it.
    let left = int(&mut c, &["LLEN", "big"]);
    assert_eq!(
        strings(&mut c, &["LPOP", "big", &left.to_string()]).len() as i64,
        left
    );
    assert_eq!(int(&mut c, &["EXISTS", "big"]), 0);
}

#[test]
fn errors_and_reply_shapes() {
    let p = common::strata(&[]);
    let mut r = RespConn::new(&p);
    let wrongtype = "WRONGTYPE Operation against a key holding the wrong kind of value";
    raw(&mut r, &["SET", "s", "x"]);
    for c in [
        &["LPUSH", "s", "a"][..],
        &["RPUSHX", "s", "a"],
        &["LPOP", "s"],
        &["LLEN", "s"],
        &["LRANGE", "s", "0", "1"],
        &["LINDEX", "s", "0"],
        &["LSET", "s", "0", "a"],
        &["LINSERT", "s", "BEFORE", "a", "b"],
        &["LREM", "s", "0", "a"],
        &["LTRIM", "s", "0", "1"],
        &["LPOS", "s", "a"],
        &["LMOVE", "s", "d", "LEFT", "LEFT"],
        &["LMPOP", "1", "s", "LEFT"],
    ] {
        assert_eq!(err(&mut r, c), wrongtype, "{c:?}");
    }
    assert_eq!(raw(&mut r, &["GET", "s"]), b"$1\r\nx\r\n");
    assert_eq!(raw(&mut r, &["RPUSH", "l", "a"]), b":1\r\n");
    assert_eq!(err(&mut r, &["LMOVE", "l", "s", "LEFT", "LEFT"]), wrongtype);
    assert_eq!(raw(&mut r, &["LLEN", "l"]), b":1\r\n");
    assert_eq!(raw(&mut r, &["LPOP", "nokey"]), b"$-1\r\n");
    assert_eq!(raw(&mut r, &["LPOP", "nokey", "1"]), b"*-1\r\n");
    assert_eq!(raw(&mut r, &["LPOP", "l", "0"]), b"*0\r\n");
    assert_eq!(raw(&mut r, &["LMPOP", "1", "nokey", "LEFT"]), b"*-1\r\n");
    assert_eq!(
        raw(&mut r, &["LMPOP", "2", "nokey", "l", "RIGHT", "COUNT", "5"]),
        b"*2\r\n$1\r\nl\r\n*1\r\n$1\r\na\r\n"
    );
    assert_eq!(
        err(&mut r, &["LPOP", "l", "-1"]),
        "ERR value is out of range, must be positive"
    );
    assert_eq!(
        err(&mut r, &["LMPOP", "0", "l", "LEFT"]),
        "ERR numkeys should be greater than 0"
    );
    assert_eq!(
        err(&mut r, &["LMPOP", "9223372036854775807", "l", "LEFT"]),
        "ERR syntax error"
    );
    raw(&mut r, &["HELLO", "3"]);
    assert_eq!(raw(&mut r, &["LPOP", "nokey"]), b"_\r\n");
    assert_eq!(raw(&mut r, &["LPOP", "nokey", "1"]), b"_\r\n");
    assert_eq!(raw(&mut r, &["LPOS", "nokey", "a"]), b"_\r\n");
    assert_eq!(
        raw(&mut r, &["LPOS", "nokey", "a", "COUNT", "0"]),
        b"*0\r\n"
    );
}

#[test]
fn command_table_entries() {
    let p = common::strata(&[]);
    let mut c = p.client();
    let info = cmd(&mut c, &["COMMAND", "INFO", "lmpop", "lpush", "lrange"]);
    let text = format!("{info:?}");
    assert!(text.contains("movablekeys"), "{text}");
    assert!(text.contains("@list"), "{text}");
    assert!(text.contains("denyoom"), "{text}");
    assert_eq!(
        strings(
            &mut c,
            &["COMMAND", "GETKEYS", "LMPOP", "2", "a", "b", "LEFT"]
        ),
        vec![b"a".to_vec(), b"b".to_vec()]
    );
    assert_eq!(
        strings(
            &mut c,
            &["COMMAND", "GETKEYS", "LMOVE", "a", "b", "LEFT", "LEFT"]
        ),
        vec![b"a".to_vec(), b"b".to_vec()]
    );
}

#[test]
fn concurrent_pushes_and_moves() {
    let p = common::strata(&["--threads", "4"]);
    let clients = 8;
    let per = 2000;
    std::thread::scope(|s| {
        for t in 0..clients {
            let p = &p;
            s.spawn(move || {
                let mut c = p.client();
                for i in 0..per {
                    let v = format!("{t}:{i}");
                    if i % 2 == 0 {
                        int(&mut c, &["LPUSH", "shared", &v]);
                    } else {
                        int(&mut c, &["RPUSH", "shared", &v]);
                    }
                    // Rotate between two lists in opposite orders: locking must not deadlock.
                    let (a, b) = if t % 2 == 0 {
                        ("ra", "rb")
                    } else {
                        ("rb", "ra")
                    };
                    cmd(&mut c, &["RPUSH", a, &v]);
                    cmd(&mut c, &["LMOVE", a, b, "LEFT", "RIGHT"]);
                }
            });
        }
    });
    let mut c = p.client();
    assert_eq!(int(&mut c, &["LLEN", "shared"]), (clients * per) as i64);
    let total = int(&mut c, &["LLEN", "ra"]) + int(&mut c, &["LLEN", "rb"]);
    assert_eq!(total, (clients * per) as i64);
    // Every pushed element is there exactly once.
    let mut all = strings(&mut c, &["LRANGE", "shared", "0", "-1"]);
    all.sort();
    all.dedup();
    assert_eq!(all.len(), clients * per);
}

// ---------------------------------------------------------------------------------------
// Differential property test.

fn elem() -> impl Strategy<Value = String> {
    prop_oneof![
        6 => prop::sample::select(vec!["a", "b", "c", "1", "2", "-1", "10", "007", "x y", ""])
            .prop_map(String::from),
        1 => (0usize..120).prop_map(|n| "z".repeat(n)),
        1 => any::<i64>().prop_map(|n| n.to_string()),
    ]
}

fn key() -> impl Strategy<Value = String> {
    prop::sample::select(vec!["l1", "l2", "l3", "s"]).prop_map(String::from)
}

fn index() -> impl Strategy<Value = String> {
    prop_oneof![
        8 => (-12i64..12).prop_map(|i| i.to_string()),
        1 => prop::sample::select(vec![i64::MIN, i64::MAX, -9223372036854775807])
            .prop_map(|i| i.to_string()),
        1 => Just("x".to_string()),
    ]
}

fn side() -> impl Strategy<Value = String> {
    prop::sample::select(vec!["LEFT", "RIGHT", "left", "up"]).prop_map(String::from)
}

fn command() -> impl Strategy<Value = Vec<String>> {
    let v = |xs: &[&str]| xs.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    prop_oneof![
        6 => (any::<bool>(), key(), prop::collection::vec(elem(), 1..6)).prop_map(
            move |(l, k, es)| {
                let mut c = v(&[if l { "LPUSH" } else { "RPUSH" }, &k]);
                c.extend(es);
                c
            }
        ),
        1 => (any::<bool>(), key(), prop::collection::vec(elem(), 1..3)).prop_map(
            move |(l, k, es)| {
                let mut c = v(&[if l { "LPUSHX" } else { "RPUSHX" }, &k]);
                c.extend(es);
                c
            }
        ),
        3 => (any::<bool>(), key(), prop::option::of(prop_oneof![
                4 => (0i64..6).prop_map(|n| n.to_string()),
                1 => Just("-1".to_string()),
                1 => Just(i64::MAX.to_string()),
            ]))
            .prop_map(move |(l, k, n)| {
                let mut c = v(&[if l { "LPOP" } else { "RPOP" }, &k]);
                c.extend(n);
                c
            }),
        1 => key().prop_map(move |k| v(&["LLEN", &k])),
        3 => (key(), index(), index()).prop_map(move |(k, a, b)| v(&["LRANGE", &k, &a, &b])),
        2 => (key(), index()).prop_map(move |(k, i)| v(&["LINDEX", &k, &i])),
        2 => (key(), index(), elem()).prop_map(move |(k, i, e)| v(&["LSET", &k, &i, &e])),
        2 => (key(), prop::sample::select(vec!["BEFORE", "after", "x"]), elem(), elem())
            .prop_map(move |(k, w, p, e)| v(&["LINSERT", &k, w, &p, &e])),
        2 => (key(), -3i64..4, elem())
            .prop_map(move |(k, n, e)| v(&["LREM", &k, &n.to_string(), &e])),
        1 => (key(), index(), index()).prop_map(move |(k, a, b)| v(&["LTRIM", &k, &a, &b])),
        3 => (
            key(),
            elem(),
            prop::option::of(prop_oneof![(-3i64..4).prop_map(|n| n.to_string()), Just(i64::MIN.to_string())]),
            prop::option::of((0i64..4).prop_map(|n| n.to_string())),
            prop::option::of((0i64..6).prop_map(|n| n.to_string())),
        )
            .prop_map(move |(k, e, rank, count, maxlen)| {
                let mut c = v(&["LPOS", &k, &e]);
                if let Some(r) = rank {
                    c.extend(v(&["RANK", &r]));
                }
                if let Some(n) = count {
                    c.extend(v(&["COUNT", &n]));
                }
                if let Some(m) = maxlen {
                    c.extend(v(&["MAXLEN", &m]));
                }
                c
            }),
        2 => (key(), key(), side(), side())
            .prop_map(move |(a, b, f, t)| v(&["LMOVE", &a, &b, &f, &t])),
        1 => (key(), key()).prop_map(move |(a, b)| v(&["RPOPLPUSH", &a, &b])),
        2 => (prop::collection::vec(key(), 1..4), side(), prop::option::of(0i64..5))
            .prop_map(move |(ks, w, n)| {
                let mut c = v(&["LMPOP", &ks.len().to_string()]);
                c.extend(ks);
                c.push(w);
                if let Some(n) = n {
                    c.extend(v(&["COUNT", &n.to_string()]));
                }
                c
            }),
        1 => key().prop_map(move |k| v(&["DEL", &k])),
        1 => Just(v(&["SET", "s", "string"])),
        1 => key().prop_map(move |k| v(&["OBJECT", "ENCODING", &k])),
        1 => key().prop_map(move |k| v(&["EXISTS", &k])),
    ]
}

struct Pair {
    redis: RespConn,
    strata: RespConn,
}

fn shown(r: &std::io::Result<RawReply>) -> String {
    match r {
        Ok(r) => r.shown(),
        Err(e) => format!("<{e}>"),
    }
}

fn call(c: &mut RespConn, args: &[String]) -> std::io::Result<RawReply> {
    c.send(&encode_command(args))?;
    c.read()
}

#[test]
fn random_list_commands_match_redis() {
    let cases = common::proptest_cases(300);
    let redis: Proc = common::redis(&[]);
    let strata: Proc = common::strata(&[]);
    let pair = RefCell::new(Pair {
        redis: RespConn::new(&redis),
        strata: RespConn::new(&strata),
    });
    let mut runner = TestRunner::new(PtConfig {
        cases,
        failure_persistence: None,
        max_shrink_iters: 4000,
        ..PtConfig::default()
    });
    let fill = prop::sample::select(vec!["-2", "-1", "1", "2", "3", "0"]);
    let strategy = (fill, prop::collection::vec(command(), 1..40));
    let result = runner.run(&strategy, |(fill, cmds)| {
        let mut p = pair.borrow_mut();
        let setup = [
            vec!["FLUSHALL".to_string()],
            vec![
                "CONFIG".to_string(),
                "SET".to_string(),
                "list-max-listpack-size".to_string(),
                fill.to_string(),
            ],
        ];
        for c in &setup {
            let a = call(&mut p.redis, c);
            let b = call(&mut p.strata, c);
            if !matches!((&a, &b), (Ok(x), Ok(y)) if x.raw == b"+OK\r\n" && y.raw == x.raw) {
                p.redis = RespConn::new(&redis);
                p.strata = RespConn::new(&strata);
                return Err(TestCaseError::fail(format!(
                    "{c:?}: redis {} strata {}",
                    shown(&a),
                    shown(&b)
                )));
            }
        }
        let mut history = String::new();
        for c in &cmds {
            let a = call(&mut p.redis, c);
            let b = call(&mut p.strata, c);
            writeln!(history, "  {:<50} -> {}", c.join(" "), shown(&a)).unwrap();
            if !matches!((&a, &b), (Ok(x), Ok(y)) if x.raw == y.raw) {
                if a.is_err() || b.is_err() {
                    p.redis = RespConn::new(&redis);
                    p.strata = RespConn::new(&strata);
                }
                return Err(TestCaseError::fail(format!(
                    "list-max-listpack-size {fill}\n{history}mismatch at `{}`\n    redis:  {}\n    strata: {}",
                    c.join(" "),
                    shown(&a),
                    shown(&b)
                )));
            }
        }
        // The whole state must agree too.
        for k in ["l1", "l2", "l3"] {
            let c = vec!["LRANGE".to_string(), k.to_string(), "0".into(), "-1".into()];
            let a = call(&mut p.redis, &c);
            let b = call(&mut p.strata, &c);
            if !matches!((&a, &b), (Ok(x), Ok(y)) if x.raw == y.raw) {
                return Err(TestCaseError::fail(format!(
                    "{history}final LRANGE {k}: redis {} strata {}",
                    shown(&a),
                    shown(&b)
                )));
            }
        }
        Ok(())
    });
    if let Err(e) = result {
        panic!("random differential list test failed: {e}");
    }
}
