//! The hash commands against the real binary: behaviour computed from first principles (a
//! model of each hash), the contracts of the random and scanning commands (HRANDFIELD's
//! distinctness and spread, HSCAN's guarantee under concurrent deletes), and a property
//! test of random hash command sequences run on redis-server and Strata with replies
//! compared (sorted only where Redis's order is unspecified).

mod common;
mod diff_common;

use common::{encode_command, int, query, setup, RawReply, RespConn};
use diff_common::sorted_elems;
use proptest::prelude::*;
use proptest::test_runner::{Config as PtConfig, TestCaseError, TestRunner};
use redis::Connection;
use std::cell::RefCell;
use std::collections::{BTreeMap, BTreeSet, HashMap};

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

fn hgetall(c: &mut Connection, key: &str) -> BTreeMap<String, String> {
    let v: Vec<String> = query::<Vec<String>>(c, &["HGETALL", key]);
    v.chunks(2).map(|p| (p[0].clone(), p[1].clone())).collect()
}

#[test]
fn model_of_writes_and_reads() {
    let (_p, mut c, _r) = setup();
    let mut model: BTreeMap<String, String> = BTreeMap::new();
    // Cross the listpack limit (128 entries) on the way up, then delete most.
    for i in 0..300 {
        let (f, v) = (format!("f{}", i % 200), format!("v{i}"));
        let created = int(&mut c, &["HSET", "h", &f, &v]);
        assert_eq!(created, model.insert(f, v).is_none() as i64);
        if i == 100 {
            assert_eq!(encoding(&mut c, "h"), "listpack");
        }
    }
    assert_eq!(encoding(&mut c, "h"), "hashtable");
    assert_eq!(hgetall(&mut c, "h"), model);
    assert_eq!(int(&mut c, &["HLEN", "h"]), model.len() as i64);
    for i in (0..200).step_by(3) {
        let f = format!("f{i}");
        assert_eq!(int(&mut c, &["HDEL", "h", &f, "nosuch"]), 1);
        model.remove(&f);
    }
    assert_eq!(hgetall(&mut c, "h"), model);
    assert_eq!(encoding(&mut c, "h"), "hashtable", "never converts back");
    let keys: BTreeSet<String> = query::<Vec<String>>(&mut c, &["HKEYS", "h"])
        .into_iter()
        .collect();
    assert_eq!(keys, model.keys().cloned().collect());
    let mut vals = query::<Vec<String>>(&mut c, &["HVALS", "h"]);
    vals.sort();
    let mut want: Vec<String> = model.values().cloned().collect();
    want.sort();
    assert_eq!(vals, want);
    for (f, v) in &model {
        assert_eq!(int(&mut c, &["HSTRLEN", "h", f]), v.len() as i64);
        assert_eq!(int(&mut c, &["HEXISTS", "h", f]), 1);
    }
    let fields: Vec<String> = model.keys().cloned().collect();
    for f in fields {
        int(&mut c, &["HDEL", "h", &f]);
    }
    assert_eq!(
        int(&mut c, &["EXISTS", "h"]),
        0,
        "the last HDEL deletes the key"
    );
}

#[test]
fn listpack_keeps_insertion_order_and_updates_in_place() {
    let (_p, mut c, _r) = setup();
    int(&mut c, &["HSET", "h", "z", "1", "a", "2", "m", "3"]);
    int(&mut c, &["HSET", "h", "a", "22"]);
    int(&mut c, &["HDEL", "h", "z"]);
    int(&mut c, &["HSET", "h", "z", "4"]);
    assert_eq!(
        query::<Vec<String>>(&mut c, &["HKEYS", "h"]),
        ["a", "m", "z"]
    );
    assert_eq!(
        query::<Vec<String>>(&mut c, &["HVALS", "h"]),
        ["22", "3", "4"]
    );
}

#[test]
fn increments() {
    let (_p, mut c, mut r) = setup();
    assert_eq!(int(&mut c, &["HINCRBY", "h", "n", "5"]), 5);
    assert_eq!(int(&mut c, &["HINCRBY", "h", "n", "-7"]), -2);
    int(&mut c, &["HSET", "h", "max", &i64::MAX.to_string()]);
    assert_eq!(
        err(&mut r, &["HINCRBY", "h", "max", "1"]),
        "ERR increment or decrement would overflow"
    );
    let f: String = redis::cmd("HINCRBYFLOAT")
        .arg("h")
        .arg("x")
        .arg("0.1")
        .query(&mut c)
        .unwrap();
    assert_eq!(f, "0.1");
    let f: String = redis::cmd("HINCRBYFLOAT")
        .arg("h")
        .arg("x")
        .arg("0.2")
        .query(&mut c)
        .unwrap();
    assert_eq!(f, "0.3", "long double arithmetic, as Redis");
    assert_eq!(
        err(&mut r, &["HINCRBYFLOAT", "h", "x", "inf"]),
        "ERR value is NaN or Infinity"
    );
    int(&mut c, &["HSET", "h", "s", "abc"]);
    assert_eq!(
        err(&mut r, &["HINCRBYFLOAT", "h", "s", "1"]),
        "ERR hash value is not a float"
    );
    assert_eq!(
        err(&mut r, &["HINCRBY", "h", "s", "1"]),
        "ERR hash value is not an integer"
    );
}

#[test]
fn hrandfield_contract() {
    let (_p, mut c, mut r) = setup();
    // Both forms: 10 fields (listpack) and 300 (hashtable).
    for (key, n) in [("small", 10usize), ("big", 300)] {
        let mut args = vec!["HSET".to_string(), key.to_string()];
        for i in 0..n {
            args.push(format!("f{i}"));
            args.push(format!("v{i}"));
        }
        let a: Vec<&str> = args.iter().map(String::as_str).collect();
        int(&mut c, &a);
        // Positive counts: distinct fields, min(count, size) of them.
        for count in [1, 3, n / 2, n - 1, n, n + 5] {
            let got = query::<Vec<String>>(&mut c, &["HRANDFIELD", key, &count.to_string()]);
            let set: BTreeSet<&String> = got.iter().collect();
            assert_eq!(got.len(), count.min(n), "{key} {count}");
            assert_eq!(set.len(), got.len(), "{key} {count}: repeated fields");
            assert!(got.iter().all(|f| f[1..].parse::<usize>().unwrap() < n));
        }
        // WITHVALUES pairs each field with its own value.
        let got = query::<Vec<String>>(&mut c, &["HRANDFIELD", key, "-50", "WITHVALUES"]);
        assert_eq!(got.len(), 100);
        for p in got.chunks(2) {
            assert_eq!(p[0][1..], p[1][1..], "field and value belong together");
        }
        // Negative counts: exactly |count| picks, repeats allowed, roughly uniform.
        let picks = 20_000;
        let got = query::<Vec<String>>(&mut c, &["HRANDFIELD", key, &format!("-{picks}")]);
        assert_eq!(got.len(), picks);
        let mut freq: HashMap<String, usize> = HashMap::new();
        for f in got {
            *freq.entry(f).or_default() += 1;
        }
        assert_eq!(freq.len(), n, "{key}: every field is picked at some point");
        let expect = picks as f64 / n as f64;
        let chi2: f64 = freq
            .values()
            .map(|&o| (o as f64 - expect).powi(2) / expect)
            .sum();
        // df = n - 1; a fair sampler stays far below this bound.
        assert!(
            chi2 < 2.0 * n as f64 + 50.0,
            "{key}: chi-square {chi2} too high"
        );
    }
    // Huge counts are answered without allocating for them.
    let all = query::<Vec<String>>(&mut c, &["HRANDFIELD", "small", &i64::MAX.to_string()]);
    assert_eq!(all.len(), 10);
    assert_eq!(
        err(
            &mut r,
            &[
                "HRANDFIELD",
                "small",
                &(-i64::MAX).to_string(),
                "WITHVALUES"
            ]
        ),
        "ERR value is out of range"
    );
    assert_eq!(
        err(&mut r, &["HRANDFIELD", "small", &i64::MIN.to_string()]),
        "ERR value is out of range, value must between -9223372036854775807 and 9223372036854775807"
    );
}

#[test]
fn hscan_returns_every_field_present_throughout() {
    let (_p, mut c, _r) = setup();
    let n = 2000;
    for i in 0..n {
        int(&mut c, &["HSET", "h", &format!("f{i}"), &i.to_string()]);
    }
    assert_eq!(encoding(&mut c, "h"), "hashtable");
    let mut seen: BTreeSet<String> = BTreeSet::new();
    let mut cursor = "0".to_string();
    let mut deleted = BTreeSet::new();
    let mut calls = 0;
    loop {
        let (next, items): (String, Vec<String>) = redis::cmd("HSCAN")
            .arg("h")
            .arg(&cursor)
            .arg("COUNT")
            .arg(37)
            .query(&mut c)
            .unwrap();
        assert!(items.len() <= 2 * 37);
        for p in items.chunks(2) {
            if p[0].starts_with('f') {
                assert_eq!(p[0][1..], p[1], "a field comes with its value");
            }
            seen.insert(p[0].clone());
        }
        // Delete and add fields while scanning.
        for k in 0..5 {
            let victim = format!("f{}", (calls * 7 + k * 311) % n);
            int(&mut c, &["HDEL", "h", &victim]);
            deleted.insert(victim);
            int(&mut c, &["HSET", "h", &format!("new{calls}_{k}"), "x"]);
        }
        calls += 1;
        cursor = next;
        if cursor == "0" {
            break;
        }
        assert!(calls < 10_000, "HSCAN does not terminate");
    }
    for i in 0..n {
        let f = format!("f{i}");
        if !deleted.contains(&f) {
            assert!(seen.contains(&f), "HSCAN missed {f}");
        }
    }
    // MATCH filters on the field.
    let (_, items): (String, Vec<String>) = redis::cmd("HSCAN")
        .arg("h")
        .arg(0)
        .arg("MATCH")
        .arg("f1*")
        .arg("COUNT")
        .arg(100_000)
        .query(&mut c)
        .unwrap();
    assert!(!items.is_empty());
    assert!(items.chunks(2).all(|p| p[0].starts_with("f1")));
}

// ---------------------------------------------------------------------------------------
// Random command sequences on both servers.

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Cmp {
    Exact,
    /// Elements sorted (HKEYS, HVALS of a hashtable).
    Sorted,
    /// Pairs of elements sorted (HGETALL, HRANDFIELD ... WITHVALUES).
    SortedPairs,
    /// Only the type and the number of elements (random picks).
    Shape,
}

fn same(cmp: Cmp, a: &RawReply, b: &RawReply) -> bool {
    if a.kind != b.kind || !a.is_aggregate() {
        return a.raw == b.raw;
    }
    match cmp {
        Cmp::Exact => a.raw == b.raw,
        Cmp::Sorted => sorted_elems(a, false) == sorted_elems(b, false),
        Cmp::SortedPairs => sorted_elems(a, true) == sorted_elems(b, true),
        Cmp::Shape => a.elems.len() == b.elems.len(),
    }
}

fn field() -> impl Strategy<Value = String> {
    prop_oneof![
        8 => prop::sample::select(vec!["a", "b", "c", "d", "e", "f", "1", "22"]).prop_map(str::to_string),
        1 => Just("longfield_123456789".to_string()),
    ]
}

fn value() -> impl Strategy<Value = String> {
    prop_oneof![
        4 => prop::sample::select(vec!["x", "", "0", "17", "-3", "2.5", "abc"]).prop_map(str::to_string),
        1 => Just("a_value_longer_than_sixteen".to_string()),
    ]
}

fn hkey() -> impl Strategy<Value = String> {
    prop::sample::select(vec!["h1", "h2", "str"]).prop_map(str::to_string)
}

fn hash_command() -> impl Strategy<Value = (Cmp, Vec<String>)> {
    prop_oneof![
        6 => (hkey(), prop::collection::vec((field(), value()), 1..4)).prop_map(|(k, fv)| {
            let mut c = vec!["HSET".to_string(), k];
            c.extend(fv.into_iter().flat_map(|(f, v)| [f, v]));
            (Cmp::Exact, c)
        }),
        2 => (hkey(), field(), value()).prop_map(|(k, f, v)| (Cmp::Exact, vec!["HSETNX".into(), k, f, v])),
        3 => (hkey(), field()).prop_map(|(k, f)| (Cmp::Exact, vec!["HGET".into(), k, f])),
        2 => (hkey(), prop::collection::vec(field(), 1..4)).prop_map(|(k, f)| {
            let mut c = vec!["HMGET".to_string(), k];
            c.extend(f);
            (Cmp::Exact, c)
        }),
        3 => (hkey(), prop::collection::vec(field(), 1..4)).prop_map(|(k, f)| {
            let mut c = vec!["HDEL".to_string(), k];
            c.extend(f);
            (Cmp::Exact, c)
        }),
        2 => hkey().prop_map(|k| (Cmp::SortedPairs, vec!["HGETALL".into(), k])),
        1 => hkey().prop_map(|k| (Cmp::Sorted, vec!["HKEYS".into(), k])),
        1 => hkey().prop_map(|k| (Cmp::Sorted, vec!["HVALS".into(), k])),
        2 => hkey().prop_map(|k| (Cmp::Exact, vec!["HLEN".into(), k])),
        1 => (hkey(), field()).prop_map(|(k, f)| (Cmp::Exact, vec!["HEXISTS".into(), k, f])),
        1 => (hkey(), field()).prop_map(|(k, f)| (Cmp::Exact, vec!["HSTRLEN".into(), k, f])),
        2 => (hkey(), field(), prop::sample::select(vec!["1", "-5", "abc", "9223372036854775807"]))
            .prop_map(|(k, f, n)| (Cmp::Exact, vec!["HINCRBY".into(), k, f, n.into()])),
        2 => (hkey(), field(), prop::sample::select(vec!["1.5", "-0.1", "1e3", "inf", "x"]))
            .prop_map(|(k, f, n)| (Cmp::Exact, vec!["HINCRBYFLOAT".into(), k, f, n.into()])),
        2 => (hkey(), prop::sample::select(vec!["-3", "2", "0", "x"]), any::<bool>()).prop_map(|(k, n, wv)| {
            let mut c = vec!["HRANDFIELD".to_string(), k, n.to_string()];
            if wv {
                c.push("WITHVALUES".into());
            }
            (Cmp::Shape, c)
        }),
        1 => (hkey(), any::<bool>()).prop_map(|(k, wv)| {
            let mut c = vec!["HRANDFIELD".to_string(), k, "100".into()];
            let cmp = if wv { c.push("WITHVALUES".into()); Cmp::SortedPairs } else { Cmp::Sorted };
            (cmp, c)
        }),
        1 => hkey().prop_map(|k| (Cmp::Exact, vec!["OBJECT".into(), "ENCODING".into(), k])),
        1 => hkey().prop_map(|k| (Cmp::Exact, vec!["TYPE".into(), k])),
        1 => hkey().prop_map(|k| (Cmp::Exact, vec!["DEL".into(), k])),
        1 => Just((Cmp::Exact, vec!["SET".to_string(), "str".into(), "v".into()])),
    ]
}

/// HSCAN compared as a whole: cursor 0 with a COUNT above any size here returns the
/// whole hash from both servers.
fn scan_command() -> impl Strategy<Value = (Cmp, Vec<String>)> {
    (hkey(), prop::sample::select(vec!["*", "a*", "?", "[ab]*"])).prop_map(|(k, m)| {
        (
            Cmp::SortedPairs,
            vec![
                "HSCAN".into(),
                k,
                "0".into(),
                "MATCH".into(),
                m.into(),
                "COUNT".into(),
                "1000".into(),
            ],
        )
    })
}

#[test]
fn diff_random_hash_commands() {
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
    // Small thresholds so sequences cross them.
    let thresholds = prop::sample::select(vec![(2usize, 4usize), (4, 16), (128, 64)]);
    let strategy = (
        thresholds,
        prop::collection::vec(prop_oneof![9 => hash_command(), 1 => scan_command()], 1..40),
    );
    let result = runner.run(&strategy, |((entries, value), cmds)| {
        let mut guard = conns.borrow_mut();
        let (a, b) = &mut *guard;
        let setup: [Vec<String>; 3] = [
            vec!["FLUSHALL".into()],
            vec![
                "CONFIG".into(),
                "SET".into(),
                "hash-max-listpack-entries".into(),
                entries.to_string(),
            ],
            vec![
                "CONFIG".into(),
                "SET".into(),
                "hash-max-listpack-value".into(),
                value.to_string(),
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
            let req = encode_command(c);
            let x = a.send(&req).and_then(|_| a.read());
            let y = b.send(&req).and_then(|_| b.read());
            let (x, y) = match (x, y) {
                (Ok(x), Ok(y)) => (x, y),
                (x, y) => return Err(TestCaseError::fail(format!("{c:?}: io {x:?} / {y:?}"))),
            };
            history.push_str(&format!("  {} -> {}\n", c.join(" "), x.shown()));
            // Orders are compared exactly for a listpack, sorted for a hashtable.
            let mut cmp = *cmp;
            if matches!(cmp, Cmp::Sorted | Cmp::SortedPairs) || c[0] == "HSCAN" {
                let enc = a.call(&["OBJECT", "ENCODING", c[1].as_str()]);
                if matches!(&enc, Ok(e) if e.raw.ends_with(b"listpack\r\n")) {
                    cmp = Cmp::Exact;
                }
            }
            let equal = if c[0] == "HSCAN" && cmp != Cmp::Exact && x.elems.len() == 2 {
                y.elems.len() == 2
                    && x.elems[0].raw == y.elems[0].raw
                    && same(Cmp::SortedPairs, &x.elems[1], &y.elems[1])
            } else {
                same(cmp, &x, &y)
            };
            if !equal {
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
        panic!("random hash differential test failed: {e}");
    }
}
