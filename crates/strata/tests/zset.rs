//! Sorted sets against the real binary: behaviour that a byte-for-byte corpus cannot pin
//! down (random picks, ZSCAN over the scalable form, large sets checked against a model),
//! and a property test running random sequences of sorted-set commands on redis-server and
//! Strata with every reply compared.

mod common;

use common::{quote_arg, RawReply, RespConn};
use proptest::prelude::*;
use proptest::test_runner::{Config as PtConfig, TestCaseError, TestRunner};
use std::cell::RefCell;
use std::collections::{BTreeMap, HashSet};

fn call(c: &mut RespConn, args: &[&str]) -> RawReply {
    c.call(args).unwrap_or_else(|e| panic!("{args:?}: {e}"))
}

fn text(r: &RawReply) -> String {
    String::from_utf8_lossy(&r.raw).into_owned()
}

/// The bulk strings of a flat array reply.
fn bulks(r: &RawReply) -> Vec<String> {
    r.elems
        .iter()
        .map(|e| {
            let s = String::from_utf8_lossy(&e.raw).into_owned();
            // "$3\r\nabc\r\n" -> "abc"
            s.split("\r\n").nth(1).unwrap_or_default().to_string()
        })
        .collect()
}

fn int(r: &RawReply) -> i64 {
    assert_eq!(r.kind, b':', "expected an integer, got {}", r.shown());
    text(r)[1..].trim_end().parse().expect("integer")
}

#[test]
fn zrandmember_picks_members() {
    let s = common::strata(&[]);
    let mut c = RespConn::new(&s);
    for enc in ["128", "2"] {
        call(&mut c, &["CONFIG", "SET", "zset-max-listpack-entries", enc]);
        call(&mut c, &["DEL", "z"]);
        let members: Vec<String> = (0..20).map(|i| format!("m{i}")).collect();
        for (i, m) in members.iter().enumerate() {
            call(&mut c, &["ZADD", "z", &i.to_string(), m]);
        }
        let all: HashSet<String> = members.iter().cloned().collect();
        // Distinct picks: every count from 1 to 25.
        for n in 1..=25 {
            let r = call(&mut c, &["ZRANDMEMBER", "z", &n.to_string()]);
            let got = bulks(&r);
            assert_eq!(got.len(), n.min(20));
            let set: HashSet<String> = got.iter().cloned().collect();
            assert_eq!(set.len(), got.len(), "repeated member in {got:?}");
            assert!(set.is_subset(&all));
        }
        // With repetitions: the count is exact and every member shows up eventually.
        let r = call(&mut c, &["ZRANDMEMBER", "z", "-2000"]);
        let got = bulks(&r);
        assert_eq!(got.len(), 2000);
        let set: HashSet<String> = got.into_iter().collect();
        assert_eq!(set, all);
        // WITHSCORES pairs each member with its own score.
        let r = call(&mut c, &["ZRANDMEMBER", "z", "-50", "WITHSCORES"]);
        let got = bulks(&r);
        for pair in got.chunks(2) {
            let i: usize = pair[0][1..].parse().unwrap();
            assert_eq!(pair[1], i.to_string());
        }
        let r = call(&mut c, &["ZRANDMEMBER", "z"]);
        assert!(all.contains(text(&r).split("\r\n").nth(1).unwrap()));
    }
}

#[test]
fn zscan_returns_every_member_of_a_skiplist() {
    let s = common::strata(&[]);
    let mut c = RespConn::new(&s);
    for i in 0..3000 {
        call(&mut c, &["ZADD", "big", &i.to_string(), &format!("m{i}")]);
    }
    // Shrink so the slab compacts mid-way: elements present throughout must still appear.
    let mut seen = HashSet::new();
    let mut cursor = "0".to_string();
    let mut rounds = 0;
    loop {
        let r = call(&mut c, &["ZSCAN", "big", &cursor, "COUNT", "50"]);
        cursor = bulks(&RawReply {
            raw: r.elems[0].raw.clone(),
            kind: b'*',
            elems: vec![r.elems[0].clone()],
        })[0]
            .clone();
        let items = bulks(&r.elems[1]);
        for pair in items.chunks(2) {
            let i: usize = pair[0][1..].parse().unwrap();
            assert_eq!(pair[1], i.to_string());
            seen.insert(i);
        }
        if rounds == 5 {
            // Delete the top 2900 members (never those below 100).
            for i in 100..3000 {
                call(&mut c, &["ZREM", "big", &format!("m{i}")]);
            }
        }
        rounds += 1;
        if cursor == "0" {
            break;
        }
        assert!(rounds < 10_000);
    }
    for i in 0..100 {
        assert!(seen.contains(&i), "m{i} missed");
    }
    assert_eq!(int(&call(&mut c, &["ZCARD", "big"])), 100);
}

#[test]
fn large_set_ranks_match_a_model() {
    let s = common::strata(&[]);
    let mut c = RespConn::new(&s);
    let mut model: BTreeMap<(i64, String), ()> = BTreeMap::new();
    let mut scores: BTreeMap<String, i64> = BTreeMap::new();
    let mut x: u64 = 0x2545f4914f6cdd1d;
    let mut rnd = move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    // Pipelined ZADDs for speed.
    let mut batch = Vec::new();
    for _ in 0..20_000 {
        let m = format!("m{}", rnd() % 8000);
        let sc = (rnd() % 1000) as i64 - 500;
        if let Some(old) = scores.insert(m.clone(), sc) {
            model.remove(&(old, m.clone()));
        }
        model.insert((sc, m.clone()), ());
        batch.extend(common::encode_command(&["ZADD", "z", &sc.to_string(), &m]));
    }
    c.send(&batch).unwrap();
    for _ in 0..20_000 {
        c.read().unwrap();
    }
    assert_eq!(int(&call(&mut c, &["ZCARD", "z"])), model.len() as i64);
    let order: Vec<&(i64, String)> = model.keys().collect();
    for (i, (_, m)) in order.iter().enumerate().step_by(97) {
        assert_eq!(int(&call(&mut c, &["ZRANK", "z", m])), i as i64);
        let rev = order.len() - 1 - i;
        assert_eq!(int(&call(&mut c, &["ZREVRANK", "z", m])), rev as i64);
    }
    let r = call(&mut c, &["ZRANGE", "z", "1000", "1009"]);
    let want: Vec<String> = order[1000..1010].iter().map(|k| k.1.clone()).collect();
    assert_eq!(bulks(&r), want);
    let cnt = model.keys().filter(|k| (-100..=100).contains(&k.0)).count();
    assert_eq!(
        int(&call(&mut c, &["ZCOUNT", "z", "-100", "100"])),
        cnt as i64
    );
    let removed = int(&call(&mut c, &["ZREMRANGEBYSCORE", "z", "-100", "100"]));
    assert_eq!(removed, cnt as i64);
    assert_eq!(
        int(&call(&mut c, &["ZCARD", "z"])),
        (model.len() - cnt) as i64
    );
    let r = call(&mut c, &["OBJECT", "ENCODING", "z"]);
    assert_eq!(text(&r), "$8\r\nskiplist\r\n");
}

#[test]
fn zrange_huge_indexes_and_counts_do_not_panic() {
    let s = common::strata(&[]);
    let mut c = RespConn::new(&s);
    call(&mut c, &["ZADD", "z", "1", "a", "2", "b"]);
    for args in [
        vec!["ZRANGE", "z", "-9223372036854775808", "9223372036854775807"],
        vec!["ZRANGE", "z", "9223372036854775807", "-9223372036854775808"],
        vec![
            "ZRANGE",
            "z",
            "-inf",
            "+inf",
            "BYSCORE",
            "LIMIT",
            "9223372036854775807",
            "9223372036854775807",
        ],
        vec![
            "ZRANGE",
            "z",
            "+inf",
            "-inf",
            "BYSCORE",
            "REV",
            "LIMIT",
            "-9223372036854775808",
            "-1",
        ],
        vec![
            "ZREMRANGEBYRANK",
            "z",
            "9223372036854775807",
            "-9223372036854775808",
        ],
        vec!["ZPOPMIN", "z", "9223372036854775807"],
        vec!["ZRANDMEMBER", "z", "-9223372036854775807"],
        vec!["ZMPOP", "18446744073709551615", "z", "MIN"],
        vec!["ZUNION", "9223372036854775807", "z"],
    ] {
        let r = call(&mut c, &args);
        assert!(!r.raw.is_empty());
    }
    assert_eq!(text(&call(&mut c, &["PING"])), "+PONG\r\n");
}

// ---------------------------------------------------------------------------------------
// Random command sequences, compared with redis-server.

const ZKEYS: &[&str] = &["z0", "z1", "z2", "s0"];
const LKEYS: &[&str] = &["l0", "l1"];

fn zkey() -> impl Strategy<Value = String> {
    prop::sample::select(&ZKEYS[..3]).prop_map(str::to_string)
}

fn lkey() -> impl Strategy<Value = String> {
    prop::sample::select(LKEYS).prop_map(str::to_string)
}

fn member() -> impl Strategy<Value = String> {
    prop_oneof![
        6 => prop::sample::select(vec!["a", "b", "c", "d", "e", "f", "g", "h"]).prop_map(str::to_string),
        1 => prop::sample::select(vec!["", "1", "-2", "aa", "longer-member-name", "b\u{e9}"]).prop_map(str::to_string),
    ]
}

fn score() -> impl Strategy<Value = String> {
    prop_oneof![
        8 => (-5i64..6).prop_map(|n| n.to_string()),
        2 => prop::sample::select(vec!["1.5", "-0.25", "0.1", "-0", "inf", "-inf", "1e20", "3.0000000000000004"]).prop_map(str::to_string),
        1 => prop::sample::select(vec!["abc", "nan", "", "1e400"]).prop_map(str::to_string),
    ]
}

fn bound() -> impl Strategy<Value = String> {
    prop_oneof![
        4 => (-5i64..6).prop_map(|n| n.to_string()),
        3 => (-5i64..6).prop_map(|n| format!("({n}")),
        2 => prop::sample::select(vec!["-inf", "+inf", "(-inf", "1.5", "(0.1", "x"]).prop_map(str::to_string),
    ]
}

fn lex_bound() -> impl Strategy<Value = String> {
    prop_oneof![
        4 => member().prop_map(|m| format!("[{m}")),
        3 => member().prop_map(|m| format!("({m}")),
        2 => prop::sample::select(vec!["-", "+", "x", "[", "("]).prop_map(str::to_string),
    ]
}

fn small_int() -> impl Strategy<Value = String> {
    prop_oneof![
        8 => (-6i64..8).prop_map(|n| n.to_string()),
        1 => prop::sample::select(vec!["9223372036854775807", "-9223372036854775808", "x"]).prop_map(str::to_string),
    ]
}

fn with(name: &str, rest: Vec<String>) -> Vec<String> {
    std::iter::once(name.to_string()).chain(rest).collect()
}

fn zadd_cmd() -> impl Strategy<Value = Vec<String>> {
    let opts = prop::sample::subsequence(vec!["NX", "XX", "GT", "LT", "CH", "INCR"], 0..=2);
    (
        zkey(),
        prop::bool::weighted(0.3),
        opts,
        prop::collection::vec((score(), member()), 1..=4),
    )
        .prop_map(|(k, use_opts, opts, pairs)| {
            let mut c = vec!["ZADD".to_string(), k];
            if use_opts {
                c.extend(opts.into_iter().map(str::to_string));
            }
            for (s, m) in pairs {
                c.push(s);
                c.push(m);
            }
            c
        })
}

fn setop_cmd() -> impl Strategy<Value = Vec<String>> {
    (
        prop::sample::select(vec![
            "ZUNION",
            "ZINTER",
            "ZDIFF",
            "ZUNIONSTORE",
            "ZINTERSTORE",
            "ZDIFFSTORE",
            "ZINTERCARD",
        ]),
        prop::collection::vec(prop::sample::select(ZKEYS).prop_map(str::to_string), 1..=3),
        prop::bool::weighted(0.3),
        prop::sample::select(vec!["", "SUM", "MIN", "MAX"]),
        prop::bool::weighted(0.5),
        zkey(),
    )
        .prop_map(|(op, keys, weights, agg, ws, dst)| {
            let mut c = vec![op.to_string()];
            if op.ends_with("STORE") {
                c.push(dst);
            }
            c.push(keys.len().to_string());
            let n = keys.len();
            c.extend(keys);
            let plain = op == "ZDIFF" || op == "ZDIFFSTORE" || op == "ZINTERCARD";
            if weights && !plain {
                c.push("WEIGHTS".into());
                for i in 0..n {
                    c.push(["2", "0.5", "-1", "0"][i % 4].to_string());
                }
            }
            if !agg.is_empty() && !plain {
                c.push("AGGREGATE".into());
                c.push(agg.into());
            }
            if ws && !op.ends_with("STORE") && op != "ZINTERCARD" {
                c.push("WITHSCORES".into());
            }
            if op == "ZINTERCARD" && ws {
                c.push("LIMIT".into());
                c.push("1".into());
            }
            c
        })
}

fn command() -> impl Strategy<Value = Vec<String>> {
    prop_oneof![
        8 => zadd_cmd(),
        2 => (zkey(), score(), member()).prop_map(|(k, s, m)| with("ZINCRBY", vec![k, s, m])),
        3 => (zkey(), prop::collection::vec(member(), 1..=3)).prop_map(|(k, ms)| with("ZREM", [vec![k], ms].concat())),
        2 => (zkey(), member()).prop_map(|(k, m)| with("ZSCORE", vec![k, m])),
        1 => (zkey(), prop::collection::vec(member(), 1..=3)).prop_map(|(k, ms)| with("ZMSCORE", [vec![k], ms].concat())),
        2 => zkey().prop_map(|k| with("ZCARD", vec![k])),
        2 => (zkey(), bound(), bound()).prop_map(|(k, a, b)| with("ZCOUNT", vec![k, a, b])),
        2 => (zkey(), member(), prop::bool::ANY).prop_map(|(k, m, r)| with(if r { "ZREVRANK" } else { "ZRANK" }, vec![k, m])),
        4 => (zkey(), small_int(), small_int(), prop::bool::ANY, prop::bool::ANY).prop_map(|(k, a, b, rev, ws)| {
            let mut c = vec!["ZRANGE".to_string(), k, a, b];
            if rev { c.push("REV".into()); }
            if ws { c.push("WITHSCORES".into()); }
            c
        }),
        4 => (zkey(), bound(), bound(), prop::bool::ANY, prop::bool::ANY, prop::option::of((small_int(), small_int()))).prop_map(|(k, a, b, rev, ws, lim)| {
            let mut c = vec![if rev { "ZREVRANGEBYSCORE" } else { "ZRANGEBYSCORE" }.to_string(), k, a, b];
            if ws { c.push("WITHSCORES".into()); }
            if let Some((o, n)) = lim { c.extend(["LIMIT".to_string(), o, n]); }
            c
        }),
        2 => (zkey(), bound(), bound(), prop::bool::ANY, prop::option::of((small_int(), small_int()))).prop_map(|(k, a, b, rev, lim)| {
            let mut c = vec!["ZRANGE".to_string(), k, a, b, "BYSCORE".into()];
            if rev { c.push("REV".into()); }
            if let Some((o, n)) = lim { c.extend(["LIMIT".to_string(), o, n]); }
            c
        }),
        2 => (zkey(), small_int(), small_int()).prop_map(|(k, a, b)| with("ZREMRANGEBYRANK", vec![k, a, b])),
        2 => (zkey(), bound(), bound()).prop_map(|(k, a, b)| with("ZREMRANGEBYSCORE", vec![k, a, b])),
        2 => (zkey(), prop::option::of(small_int()), prop::bool::ANY).prop_map(|(k, n, max)| {
            let mut c = vec![if max { "ZPOPMAX" } else { "ZPOPMIN" }.to_string(), k];
            c.extend(n);
            c
        }),
        1 => (prop::collection::vec(zkey(), 1..=2), prop::bool::ANY, prop::option::of(small_int())).prop_map(|(ks, max, n)| {
            let mut c = vec!["ZMPOP".to_string(), ks.len().to_string()];
            c.extend(ks);
            c.push(if max { "MAX" } else { "MIN" }.into());
            if let Some(n) = n { c.extend(["COUNT".to_string(), n]); }
            c
        }),
        3 => setop_cmd(),
        1 => (zkey(), zkey(), small_int(), small_int()).prop_map(|(d, s, a, b)| with("ZRANGESTORE", vec![d, s, a, b])),
        1 => (zkey(), prop::sample::select(vec!["100", "0"])).prop_map(|(k, n)| with("ZRANDMEMBER", vec![k, n.to_string(), "WITHSCORES".into()])),
        1 => zkey().prop_map(|k| with("OBJECT", vec!["ENCODING".into(), k])),
        1 => prop::collection::vec(member(), 1..=3).prop_map(|ms| with("SADD", [vec!["s0".to_string()], ms].concat())),
        // Lex commands only on keys whose scores are all 0 (Redis's order is unspecified
        // otherwise).
        3 => (lkey(), prop::collection::vec(member(), 1..=3)).prop_map(|(k, ms)| {
            let mut c = vec!["ZADD".to_string(), k];
            for m in ms { c.push("0".into()); c.push(m); }
            c
        }),
        3 => (lkey(), lex_bound(), lex_bound(), prop::bool::ANY, prop::option::of((small_int(), small_int()))).prop_map(|(k, a, b, rev, lim)| {
            let mut c = vec![if rev { "ZREVRANGEBYLEX" } else { "ZRANGEBYLEX" }.to_string(), k, a, b];
            if let Some((o, n)) = lim { c.extend(["LIMIT".to_string(), o, n]); }
            c
        }),
        2 => (lkey(), lex_bound(), lex_bound()).prop_map(|(k, a, b)| with("ZLEXCOUNT", vec![k, a, b])),
        1 => (lkey(), lex_bound(), lex_bound()).prop_map(|(k, a, b)| with("ZREMRANGEBYLEX", vec![k, a, b])),
        1 => (lkey(), member()).prop_map(|(k, m)| with("ZREM", vec![k, m])),
        1 => lkey().prop_map(|k| with("ZRANGE", vec![k, "0".into(), "-1".into(), "WITHSCORES".into()])),
    ]
}

fn show_cmd(c: &[String]) -> String {
    c.iter()
        .map(|a| quote_arg(a.as_bytes()))
        .collect::<Vec<_>>()
        .join(" ")
}

fn run_random(listpack_entries: &str, resp3: bool) {
    let cases = common::proptest_cases(150);
    let redis = common::redis(&[]);
    let strata = common::strata(&[]);
    let conns = RefCell::new((RespConn::new(&redis), RespConn::new(&strata)));
    {
        let (r, s) = &mut *conns.borrow_mut();
        for c in [&mut *r, &mut *s] {
            call(
                c,
                &[
                    "CONFIG",
                    "SET",
                    "zset-max-listpack-entries",
                    listpack_entries,
                ],
            );
            if resp3 {
                call(c, &["HELLO", "3"]);
            }
        }
    }
    let mut runner = TestRunner::new(PtConfig {
        cases,
        ..PtConfig::default()
    });
    let strategy = prop::collection::vec(command(), 1..40);
    let result = runner.run(&strategy, |cmds| {
        let (r, s) = &mut *conns.borrow_mut();
        call(r, &["FLUSHALL"]);
        call(s, &["FLUSHALL"]);
        for (i, c) in cmds.iter().enumerate() {
            let a = r.call(c).map_err(|e| TestCaseError::fail(e.to_string()))?;
            let b = s.call(c).map_err(|e| TestCaseError::fail(e.to_string()))?;
            if a != b {
                return Err(TestCaseError::fail(format!(
                    "step {i}: {}\n  redis:  {}\n  strata: {}",
                    show_cmd(c),
                    a.shown(),
                    b.shown()
                )));
            }
        }
        Ok(())
    });
    if let Err(e) = result {
        panic!("random sorted-set commands differ from redis-server: {e}");
    }
}

#[test]
fn diff_random_zset_listpack() {
    run_random("128", false);
}

#[test]
fn diff_random_zset_skiplist() {
    run_random("3", false);
}

#[test]
fn diff_random_zset_resp3() {
    run_random("3", true);
}
