//! The set commands against the real binary: behaviour computed from first principles (a
//! model of each set), the contracts of the random and scanning commands (SPOP and
//! SRANDMEMBER distinctness and spread, SSCAN's guarantee under concurrent deletes), and a
//! property test of random set command sequences run on redis-server and Strata with
//! replies compared (sorted only where Redis's order is unspecified).

mod common;

use common::{cmd, encode_command, int, query, setup, RawReply, RespConn};
use proptest::prelude::*;
use proptest::test_runner::{Config as PtConfig, TestCaseError, TestRunner};
use redis::{Connection, Value};
use std::cell::RefCell;
use std::collections::{BTreeSet, HashMap};

fn members(c: &mut Connection, key: &str) -> BTreeSet<String> {
    let v = query::<Vec<String>>(c, &["SMEMBERS", key]);
    let s: BTreeSet<String> = v.iter().cloned().collect();
    assert_eq!(s.len(), v.len(), "SMEMBERS repeated a member");
    s
}

fn err(r: &mut RespConn, args: &[&str]) -> String {
    let rep = r.call(args).expect("call");
    assert_eq!(rep.kind, b'-', "{args:?} should fail, got {}", rep.shown());
    String::from_utf8_lossy(&rep.raw[1..rep.raw.len() - 2]).into_owned()
}

fn encoding(c: &mut Connection, key: &str) -> String {
    redis::cmd("OBJECT")
        .arg("ENCODING")
        .arg(key)
        .query(c)
        .expect("OBJECT ENCODING")
}

fn sadd(c: &mut Connection, key: &str, members: impl IntoIterator<Item = String>) -> i64 {
    let mut r = redis::cmd("SADD");
    r.arg(key);
    for m in members {
        r.arg(m);
    }
    r.query(c).expect("SADD")
}

#[test]
fn model_and_algebra() {
    let (_p, mut c, _r) = setup();
    let a: BTreeSet<String> = (0..700).map(|i| (i * 3).to_string()).collect();
    let b: BTreeSet<String> = (0..500).map(|i| (i * 5).to_string()).collect();
    let w: BTreeSet<String> = (0..50)
        .map(|i| format!("w{i}"))
        .chain(["15".into()])
        .collect();
    assert_eq!(sadd(&mut c, "a", a.iter().cloned()), a.len() as i64);
    sadd(&mut c, "b", b.iter().cloned());
    sadd(&mut c, "w", w.iter().cloned());
    assert_eq!(encoding(&mut c, "a"), "hashtable", "past 512 integers");
    assert_eq!(encoding(&mut c, "b"), "intset");
    assert_eq!(encoding(&mut c, "w"), "hashtable");
    // An intset answers in ascending numeric order.
    let sm = query::<Vec<String>>(&mut c, &["SMEMBERS", "b"]);
    let mut asc: Vec<i64> = b.iter().map(|s| s.parse().unwrap()).collect();
    asc.sort();
    assert_eq!(sm, asc.iter().map(|n| n.to_string()).collect::<Vec<_>>());
    let set = |v: Vec<String>| v.into_iter().collect::<BTreeSet<String>>();
    let inter: BTreeSet<String> = a.intersection(&b).cloned().collect();
    assert_eq!(
        set(query::<Vec<String>>(&mut c, &["SINTER", "a", "b"])),
        inter
    );
    assert_eq!(
        int(&mut c, &["SINTERCARD", "2", "a", "b"]),
        inter.len() as i64
    );
    assert_eq!(int(&mut c, &["SINTERCARD", "2", "a", "b", "LIMIT", "7"]), 7);
    let union: BTreeSet<String> = a.union(&b).chain(w.iter()).cloned().collect();
    assert_eq!(
        set(query::<Vec<String>>(&mut c, &["SUNION", "a", "b", "w"])),
        union
    );
    let diff: BTreeSet<String> = a
        .difference(&b)
        .filter(|m| !w.contains(*m))
        .cloned()
        .collect();
    assert_eq!(
        set(query::<Vec<String>>(&mut c, &["SDIFF", "a", "b", "w"])),
        diff
    );
    assert_eq!(
        int(&mut c, &["SDIFFSTORE", "d", "a", "b", "w"]),
        diff.len() as i64
    );
    assert_eq!(members(&mut c, "d"), diff);
    assert_eq!(
        int(&mut c, &["SINTERSTORE", "i", "b", "a"]),
        inter.len() as i64
    );
    assert_eq!(encoding(&mut c, "i"), "intset");
    assert_eq!(
        int(&mut c, &["SUNIONSTORE", "u", "b", "w"]),
        (b.len() + w.len() - 1) as i64
    );
    assert_eq!(encoding(&mut c, "u"), "hashtable");
    // SREM down to nothing deletes the key; the form never converts back.
    for m in a.iter().take(690) {
        assert_eq!(int(&mut c, &["SREM", "a", m]), 1);
    }
    assert_eq!(encoding(&mut c, "a"), "hashtable");
    let rest: Vec<String> = a.iter().skip(690).cloned().collect();
    assert_eq!(members(&mut c, "a"), rest.iter().cloned().collect());
    let mut args = vec!["SREM", "a"];
    args.extend(rest.iter().map(String::as_str));
    assert_eq!(int(&mut c, &args), 10);
    assert_eq!(int(&mut c, &["EXISTS", "a"]), 0);
}

#[test]
fn spop_and_srandmember_contract() {
    let (_p, mut c, mut r) = setup();
    for (key, n, text) in [
        ("ints", 300usize, false),
        ("strs", 300, true),
        ("tiny", 7, false),
    ] {
        let all: BTreeSet<String> = (0..n)
            .map(|i| if text { format!("m{i}") } else { i.to_string() })
            .collect();
        sadd(&mut c, key, all.iter().cloned());
        for count in [1, 2, n / 3, n - 1, n, n + 10] {
            let got = query::<Vec<String>>(&mut c, &["SRANDMEMBER", key, &count.to_string()]);
            let s: BTreeSet<&String> = got.iter().collect();
            assert_eq!(got.len(), count.min(n), "{key} {count}");
            assert_eq!(s.len(), got.len(), "{key} {count}: repeats");
            assert!(got.iter().all(|m| all.contains(m)));
        }
        let picks = 30_000;
        let got = query::<Vec<String>>(&mut c, &["SRANDMEMBER", key, &format!("-{picks}")]);
        assert_eq!(got.len(), picks);
        let mut freq: HashMap<String, usize> = HashMap::new();
        for m in got {
            *freq.entry(m).or_default() += 1;
        }
        assert_eq!(freq.len(), n, "{key}: every member is picked");
        let expect = picks as f64 / n as f64;
        let chi2: f64 = freq
            .values()
            .map(|&o| (o as f64 - expect).powi(2) / expect)
            .sum();
        assert!(chi2 < 2.0 * n as f64 + 50.0, "{key}: chi-square {chi2}");
        // SPOP in pieces returns every member exactly once.
        let mut popped = BTreeSet::new();
        for count in [1, 2, n / 3] {
            for m in query::<Vec<String>>(&mut c, &["SPOP", key, &count.to_string()]) {
                assert!(popped.insert(m.clone()), "{key}: {m} popped twice");
            }
        }
        let left = members(&mut c, key);
        assert!(left.is_disjoint(&popped));
        assert_eq!(left.len() + popped.len(), n);
        let single = match cmd(&mut c, &["SPOP", key]) {
            Value::BulkString(b) => String::from_utf8(b).unwrap(),
            other => panic!("{other:?}"),
        };
        assert!(left.contains(&single));
        let rest = query::<Vec<String>>(&mut c, &["SPOP", key, "1000000"]);
        assert_eq!(rest.len(), left.len() - 1);
        assert_eq!(int(&mut c, &["EXISTS", key]), 0);
    }
    // Every pop position is possible: pop one of 3 members many times.
    let mut seen = BTreeSet::new();
    for _ in 0..200 {
        sadd(&mut c, "three", ["a", "b", "c"].map(String::from));
        if let Value::BulkString(b) = cmd(&mut c, &["SPOP", "three"]) {
            seen.insert(b);
        }
        cmd(&mut c, &["DEL", "three"]);
    }
    assert_eq!(seen.len(), 3);
    assert_eq!(
        err(&mut r, &["SPOP", "x", "-1"]),
        "ERR value is out of range, must be positive"
    );
    assert_eq!(
        err(&mut r, &["SRANDMEMBER", "x", &i64::MIN.to_string()]),
        "ERR value is out of range, value must between -9223372036854775807 and 9223372036854775807"
    );
    sadd(&mut c, "t", ["1".to_string()]);
    let all = query::<Vec<String>>(&mut c, &["SRANDMEMBER", "t", &i64::MAX.to_string()]);
    assert_eq!(all, ["1"]);
}

#[test]
fn spop_keeps_the_expiry() {
    let (_p, mut c, _r) = setup();
    sadd(&mut c, "s", (0..20).map(|i| i.to_string()));
    int(&mut c, &["EXPIRE", "s", "1000"]);
    query::<Vec<String>>(&mut c, &["SPOP", "s", "18"]);
    assert!(int(&mut c, &["TTL", "s"]) > 0);
    query::<Vec<String>>(&mut c, &["SPOP", "s", "1"]);
    assert!(int(&mut c, &["TTL", "s"]) > 0);
}

#[test]
fn sscan_returns_every_member_present_throughout() {
    let (_p, mut c, _r) = setup();
    let n = 3000;
    sadd(&mut c, "s", (0..n).map(|i| format!("m{i}")));
    let mut seen = BTreeSet::new();
    let mut deleted = BTreeSet::new();
    let mut cursor = "0".to_string();
    let mut calls = 0;
    loop {
        let (next, items): (String, Vec<String>) = redis::cmd("SSCAN")
            .arg("s")
            .arg(&cursor)
            .arg("COUNT")
            .arg(50)
            .query(&mut c)
            .unwrap();
        seen.extend(items);
        for k in 0..4 {
            let victim = format!("m{}", (calls * 13 + k * 701) % n);
            int(&mut c, &["SREM", "s", &victim]);
            deleted.insert(victim);
            int(&mut c, &["SADD", "s", &format!("new{calls}_{k}")]);
        }
        calls += 1;
        cursor = next;
        if cursor == "0" {
            break;
        }
        assert!(calls < 10_000);
    }
    for i in 0..n {
        let m = format!("m{i}");
        assert!(
            deleted.contains(&m) || seen.contains(&m),
            "SSCAN missed {m}"
        );
    }
}

#[test]
fn smove_between_forms() {
    let (_p, mut c, _r) = setup();
    sadd(&mut c, "src", ["1", "x"].map(String::from));
    assert_eq!(int(&mut c, &["SMOVE", "src", "dst", "1"]), 1);
    assert_eq!(encoding(&mut c, "dst"), "intset");
    assert_eq!(int(&mut c, &["SMOVE", "src", "dst", "x"]), 1);
    assert_eq!(encoding(&mut c, "dst"), "hashtable");
    assert_eq!(int(&mut c, &["EXISTS", "src"]), 0);
    assert_eq!(members(&mut c, "dst"), ["1", "x"].map(String::from).into());
}

// ---------------------------------------------------------------------------------------
// Random command sequences on both servers.

fn sorted_elems(r: &RawReply) -> Vec<Vec<u8>> {
    let mut v: Vec<Vec<u8>> = r.elems.iter().map(|e| e.raw.clone()).collect();
    v.sort();
    v
}

/// How a reply is compared: exactly, as a sorted collection, or by shape (random picks).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Cmp {
    Exact,
    Sorted,
    Shape,
}

fn member() -> impl Strategy<Value = String> {
    prop_oneof![
        6 => (-5i64..20).prop_map(|n| n.to_string()),
        3 => prop::sample::select(vec!["a", "b", "c", "07", "", "member_longer_than_22_bytes"]).prop_map(str::to_string),
        1 => prop::sample::select(vec!["100000", "-5000000000", "9223372036854775807"]).prop_map(str::to_string),
    ]
}

fn skey() -> impl Strategy<Value = String> {
    prop::sample::select(vec!["s1", "s2", "s3", "str"]).prop_map(str::to_string)
}

fn skeys() -> impl Strategy<Value = Vec<String>> {
    prop::collection::vec(skey(), 1..4)
}

fn with(name: &str, rest: Vec<String>) -> Vec<String> {
    std::iter::once(name.to_string()).chain(rest).collect()
}

fn set_command() -> impl Strategy<Value = (Cmp, Vec<String>)> {
    prop_oneof![
        6 => (skey(), prop::collection::vec(member(), 1..5))
            .prop_map(|(k, m)| (Cmp::Exact, with("SADD", std::iter::once(k).chain(m).collect()))),
        3 => (skey(), prop::collection::vec(member(), 1..4))
            .prop_map(|(k, m)| (Cmp::Exact, with("SREM", std::iter::once(k).chain(m).collect()))),
        2 => skey().prop_map(|k| (Cmp::Sorted, with("SMEMBERS", vec![k]))),
        2 => (skey(), member()).prop_map(|(k, m)| (Cmp::Exact, with("SISMEMBER", vec![k, m]))),
        1 => (skey(), prop::collection::vec(member(), 1..4))
            .prop_map(|(k, m)| (Cmp::Exact, with("SMISMEMBER", std::iter::once(k).chain(m).collect()))),
        2 => skey().prop_map(|k| (Cmp::Exact, with("SCARD", vec![k]))),
        2 => (skey(), skey(), member()).prop_map(|(a, b, m)| (Cmp::Exact, with("SMOVE", vec![a, b, m]))),
        2 => skeys().prop_map(|k| (Cmp::Sorted, with("SINTER", k))),
        2 => skeys().prop_map(|k| (Cmp::Sorted, with("SUNION", k))),
        2 => skeys().prop_map(|k| (Cmp::Sorted, with("SDIFF", k))),
        2 => (skey(), skeys()).prop_map(|(d, k)| (Cmp::Exact, with("SINTERSTORE", std::iter::once(d).chain(k).collect()))),
        2 => (skey(), skeys()).prop_map(|(d, k)| (Cmp::Exact, with("SUNIONSTORE", std::iter::once(d).chain(k).collect()))),
        2 => (skey(), skeys()).prop_map(|(d, k)| (Cmp::Exact, with("SDIFFSTORE", std::iter::once(d).chain(k).collect()))),
        1 => (skeys(), prop::sample::select(vec!["0", "1", "2"])).prop_map(|(k, lim)| {
            let mut c = vec!["SINTERCARD".to_string(), k.len().to_string()];
            c.extend(k);
            c.extend(["LIMIT".to_string(), lim.to_string()]);
            (Cmp::Exact, c)
        }),
        2 => (skey(), prop::sample::select(vec!["-4", "2", "0", "1"]))
            .prop_map(|(k, n)| (Cmp::Shape, with("SRANDMEMBER", vec![k, n.into()]))),
        1 => skey().prop_map(|k| (Cmp::Sorted, with("SRANDMEMBER", vec![k, "1000".into()]))),
        // Only SPOPs that take everything keep both servers' sets equal.
        1 => skey().prop_map(|k| (Cmp::Sorted, with("SPOP", vec![k, "1000".into()]))),
        1 => (skey(), prop::sample::select(vec!["*", "1*", "?", "[a-c]"])).prop_map(|(k, m)| {
            (Cmp::Sorted, with("SSCAN", vec![k, "0".into(), "MATCH".into(), m.into(), "COUNT".into(), "1000".into()]))
        }),
        1 => skey().prop_map(|k| (Cmp::Exact, with("OBJECT", vec!["ENCODING".into(), k]))),
        1 => skey().prop_map(|k| (Cmp::Exact, with("DEL", vec![k]))),
        1 => Just((Cmp::Exact, vec!["SET".to_string(), "str".into(), "v".into()])),
    ]
}

fn same(cmp: Cmp, c: &[String], a: &RawReply, b: &RawReply) -> bool {
    if a.kind != b.kind || !a.is_aggregate() {
        return a.raw == b.raw;
    }
    match cmp {
        Cmp::Exact => a.raw == b.raw,
        Cmp::Shape => a.elems.len() == b.elems.len(),
        Cmp::Sorted if c[0] == "SSCAN" => {
            a.elems.len() == 2
                && b.elems.len() == 2
                && a.elems[0].raw == b.elems[0].raw
                && sorted_elems(&a.elems[1]) == sorted_elems(&b.elems[1])
        }
        Cmp::Sorted => sorted_elems(a) == sorted_elems(b),
    }
}

#[test]
fn diff_random_set_commands() {
    let cases = common::proptest_cases(150);
    let redis = common::redis(&[]);
    let strata = common::strata(&[]);
    let conns = RefCell::new((RespConn::new(&redis), RespConn::new(&strata)));
    let config = PtConfig {
        cases,
        failure_persistence: None,
        max_shrink_iters: 2000,
        ..PtConfig::default()
    };
    let mut runner = TestRunner::new(config);
    let strategy = (
        prop::sample::select(vec![3usize, 8, 512]),
        prop::collection::vec(set_command(), 1..40),
    );
    let result = runner.run(&strategy, |(max_intset, cmds)| {
        let mut guard = conns.borrow_mut();
        let (a, b) = &mut *guard;
        let setup: [Vec<String>; 2] = [
            vec!["FLUSHALL".into()],
            vec![
                "CONFIG".into(),
                "SET".into(),
                "set-max-intset-entries".into(),
                max_intset.to_string(),
            ],
        ];
        for s in &setup {
            let (x, y) = (a.call(s), b.call(s));
            if !matches!((&x, &y), (Ok(x), Ok(y)) if x.raw == b"+OK\r\n" && y.raw == b"+OK\r\n") {
                return Err(TestCaseError::fail(format!("setup {s:?} failed")));
            }
        }
        let mut history = String::new();
        for (cmp, c) in &cmds {
            // An intset's order is Redis's too (ascending): compare it exactly.
            let mut cmp = *cmp;
            let single = ["SMEMBERS", "SSCAN", "SRANDMEMBER", "SPOP"].contains(&c[0].as_str());
            if cmp == Cmp::Sorted && single {
                let enc = a.call(&["OBJECT", "ENCODING", c[1].as_str()]);
                if matches!(&enc, Ok(e) if e.raw.ends_with(b"intset\r\n")) {
                    cmp = Cmp::Exact;
                }
            }
            let req = encode_command(c);
            let x = a.send(&req).and_then(|_| a.read());
            let y = b.send(&req).and_then(|_| b.read());
            let (x, y) = match (x, y) {
                (Ok(x), Ok(y)) => (x, y),
                (x, y) => return Err(TestCaseError::fail(format!("{c:?}: io {x:?} / {y:?}"))),
            };
            history.push_str(&format!("  {} -> {}\n", c.join(" "), x.shown()));
            if !same(cmp, c, &x, &y) {
                return Err(TestCaseError::fail(format!(
                    "{history}mismatch ({cmp:?})\n    redis:  {}\n    strata: {}",
                    x.shown(),
                    y.shown()
                )));
            }
        }
        Ok(())
    });
    if let Err(e) = result {
        panic!("random set differential test failed: {e}");
    }
}
