//! The HyperLogLog commands against the real binary: estimates within HyperLogLog's error,
//! union semantics of PFCOUNT and PFMERGE, the representation (sparse -> dense at
//! hll-sparse-max-bytes, cached cardinality), TTL preservation, corrupted values, and a
//! property test of random PFADD/PFCOUNT/PFMERGE/GET sequences run on redis-server and
//! Strata whose replies — including GET of the HLL strings — must be byte-identical.

mod common;

use common::{encode_command, RespConn};
use proptest::prelude::*;
use proptest::test_runner::{Config as PtConfig, TestCaseError, TestRunner};
use redis::Connection;
use std::cell::RefCell;

fn pfadd(c: &mut Connection, key: &str, elems: &[String]) -> i64 {
    redis::cmd("PFADD")
        .arg(key)
        .arg(elems)
        .query(c)
        .expect("pfadd")
}

fn pfcount(c: &mut Connection, keys: &[&str]) -> i64 {
    redis::cmd("PFCOUNT").arg(keys).query(c).expect("pfcount")
}

fn encoding(c: &mut Connection, key: &str) -> String {
    redis::cmd("PFDEBUG")
        .arg("ENCODING")
        .arg(key)
        .query(c)
        .expect("pfdebug encoding")
}

#[test]
fn estimates_within_error() {
    let p = common::strata(&[]);
    let mut c = p.client();
    let mut added = 0usize;
    for target in [10usize, 100, 1000, 10_000, 100_000] {
        while added < target {
            let n = (target - added).min(5000);
            let elems: Vec<String> = (added..added + n).map(|i| format!("elem:{i}")).collect();
            pfadd(&mut c, "h", &elems);
            added += n;
        }
        let est = pfcount(&mut c, &["h"]) as f64;
        let err = (est - target as f64).abs() / target as f64;
        // 1.04/sqrt(16384) = 0.81% standard error; allow 5 sigma (and small-set slack).
        assert!(
            err < 0.041 || (est - target as f64).abs() <= 1.0,
            "{target}: {est}"
        );
    }
    assert_eq!(encoding(&mut c, "h"), "dense");
}

#[test]
fn union_merge_and_representation() {
    let p = common::strata(&[]);
    let mut c = p.client();
    let a: Vec<String> = (0..3000).map(|i| format!("a{i}")).collect();
    let b: Vec<String> = (1500..4500).map(|i| format!("a{i}")).collect();
    assert_eq!(pfadd(&mut c, "a", &a[..10]), 1);
    assert_eq!(encoding(&mut c, "a"), "sparse");
    assert_eq!(pfadd(&mut c, "a", &a[..10]), 0, "nothing new");
    pfadd(&mut c, "a", &a);
    assert_eq!(encoding(&mut c, "a"), "dense", "grew past 3000 bytes");
    pfadd(&mut c, "b", &b);
    let union = pfcount(&mut c, &["a", "b"]);
    let _: () = redis::cmd("PFMERGE")
        .arg(&["m", "a", "b"])
        .query(&mut c)
        .unwrap();
    assert_eq!(pfcount(&mut c, &["m"]), union);
    assert!((union - 4500).abs() < 4500 / 20, "{union}");
    // The header: magic, encoding, and a cached cardinality PFCOUNT fills in.
    let v: Vec<u8> = redis::cmd("GET").arg("m").query(&mut c).unwrap();
    assert_eq!(&v[..4], b"HYLL");
    assert_eq!(v.len(), 16 + 12288);
    assert_eq!(
        u64::from_le_bytes(v[8..16].try_into().unwrap()),
        union as u64
    );
    // A tiny sparse limit makes the first add dense.
    let _: () = redis::cmd("CONFIG")
        .arg(&["SET", "hll-sparse-max-bytes", "0"])
        .query(&mut c)
        .unwrap();
    pfadd(&mut c, "tiny", &["x".to_string()]);
    assert_eq!(encoding(&mut c, "tiny"), "dense");
}

#[test]
fn ttl_and_errors() {
    let p = common::strata(&[]);
    let mut c = p.client();
    let mut r = RespConn::new(&p);
    pfadd(&mut c, "t", &["a".to_string()]);
    let _: i64 = redis::cmd("EXPIRE")
        .arg(&["t", "1000"])
        .query(&mut c)
        .unwrap();
    pfadd(&mut c, "t", &["b".to_string()]);
    pfcount(&mut c, &["t"]);
    let ttl: i64 = redis::cmd("TTL").arg("t").query(&mut c).unwrap();
    assert!(ttl > 990, "{ttl}");
    let call = |r: &mut RespConn, a: &[&str]| r.call(a).expect("call").raw;
    call(&mut r, &["SET", "s", "not an hll"]);
    assert_eq!(
        call(&mut r, &["PFADD", "s", "x"]),
        b"-WRONGTYPE Key is not a valid HyperLogLog string value.\r\n"
    );
    call(&mut r, &["RPUSH", "l", "x"]);
    assert_eq!(
        call(&mut r, &["PFCOUNT", "l"]),
        b"-WRONGTYPE Operation against a key holding the wrong kind of value\r\n"
    );
    // A sparse body that covers too few registers.
    // (The cache byte's top bit marks the cached cardinality stale, else PFCOUNT trusts it.)
    let mut bad = b"HYLL\x01".to_vec();
    bad.extend_from_slice(&[0; 10]);
    bad.push(0x80);
    bad.extend_from_slice(&[0x7f, 0xfe]);
    let mut req = encode_command(&[&b"SET"[..], b"bad", &bad]);
    r.send(&req).unwrap();
    assert_eq!(r.read().unwrap().raw, b"+OK\r\n");
    req = encode_command(&["PFCOUNT", "bad"]);
    r.send(&req).unwrap();
    assert_eq!(
        r.read().unwrap().raw,
        b"-INVALIDOBJ Corrupted HLL object detected\r\n"
    );
    // Random garbage after a valid header never crashes the server.
    let mut x = 12345u64;
    for i in 0..300 {
        let mut v = b"HYLL".to_vec();
        v.push((i % 3) as u8);
        v.extend_from_slice(&[0; 11]);
        for _ in 0..(i % 40) {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            v.push(x as u8);
        }
        r.call(&[&b"SET"[..], b"g", &v]).unwrap();
        for cmd in [
            &["PFADD", "g", "a", "b", "c"][..],
            &["PFCOUNT", "g"],
            &["PFCOUNT", "g", "t"],
            &["PFMERGE", "m2", "g"],
            &["PFDEBUG", "DECODE", "g"],
            &["PFDEBUG", "TODENSE", "g"],
        ] {
            r.call(cmd).unwrap();
        }
    }
    assert_eq!(call(&mut r, &["PING"]), b"+PONG\r\n");
}

fn hkey() -> impl Strategy<Value = String> {
    prop::sample::select(vec!["h1", "h2", "h3", "str"]).prop_map(str::to_string)
}

fn hll_command() -> impl Strategy<Value = Vec<String>> {
    let elems = prop::collection::vec((0u32..3000).prop_map(|i| format!("e{i}")), 0..60);
    prop_oneof![
        6 => (hkey(), elems).prop_map(|(k, e)| {
            std::iter::once("PFADD".to_string()).chain(std::iter::once(k)).chain(e).collect()
        }),
        1 => (hkey(), 0u32..200).prop_map(|(k, n)| {
            // A burst that usually turns the HLL dense.
            let mut c = vec!["PFADD".to_string(), k];
            c.extend((0..n * 10).map(|i| format!("b{n}-{i}")));
            c
        }),
        3 => prop::collection::vec(hkey(), 1..4).prop_map(|k| {
            std::iter::once("PFCOUNT".to_string()).chain(k).collect()
        }),
        2 => prop::collection::vec(hkey(), 1..4).prop_map(|k| {
            std::iter::once("PFMERGE".to_string()).chain(k).collect()
        }),
        3 => hkey().prop_map(|k| vec!["GET".to_string(), k]),
        1 => hkey().prop_map(|k| vec!["PFDEBUG".to_string(), "ENCODING".into(), k]),
        1 => hkey().prop_map(|k| vec!["PFDEBUG".to_string(), "TODENSE".into(), k]),
        1 => hkey().prop_map(|k| vec!["DEL".to_string(), k]),
        1 => Just(vec!["SET".to_string(), "str".into(), "v".into()]),
    ]
}

#[test]
fn diff_random_hll_commands() {
    let cases = common::proptest_cases(60);
    let redis = common::redis(&[]);
    let strata = common::strata(&[]);
    let conns = RefCell::new((RespConn::new(&redis), RespConn::new(&strata)));
    let config = PtConfig {
        cases,
        failure_persistence: None,
        max_shrink_iters: 500,
        ..PtConfig::default()
    };
    let mut runner = TestRunner::new(config);
    let strategy = (
        prop::sample::select(vec![60u32, 300, 3000, 20000]),
        prop::collection::vec(hll_command(), 1..30),
    );
    let result = runner.run(&strategy, |(max_bytes, cmds)| {
        let mut guard = conns.borrow_mut();
        let (a, b) = &mut *guard;
        let setup = [
            vec!["FLUSHALL".to_string()],
            vec![
                "CONFIG".into(),
                "SET".into(),
                "hll-sparse-max-bytes".into(),
                max_bytes.to_string(),
            ],
        ];
        for s in &setup {
            let (x, y) = (a.call(s), b.call(s));
            if !matches!((&x, &y), (Ok(x), Ok(y)) if x.raw == b"+OK\r\n" && y.raw == b"+OK\r\n") {
                return Err(TestCaseError::fail(format!("setup {s:?} failed")));
            }
        }
        let mut history = String::new();
        for c in &cmds {
            let req = encode_command(c);
            let x = a.send(&req).and_then(|_| a.read());
            let y = b.send(&req).and_then(|_| b.read());
            let (x, y) = match (x, y) {
                (Ok(x), Ok(y)) => (x, y),
                (x, y) => return Err(TestCaseError::fail(format!("{c:?}: io {x:?} / {y:?}"))),
            };
            let shown: String = c.iter().take(6).cloned().collect::<Vec<_>>().join(" ");
            history.push_str(&format!("  {shown} ... -> {:.80}\n", x.shown()));
            if x.raw != y.raw {
                return Err(TestCaseError::fail(format!(
                    "{history}mismatch\n    redis:  {:.400}\n    strata: {:.400}",
                    x.shown(),
                    y.shown()
                )));
            }
        }
        Ok(())
    });
    if let Err(e) = result {
        panic!("random HyperLogLog differential test failed: {e}");
    }
}

fn get_bytes(c: &mut Connection, key: &str) -> Vec<u8> {
    redis::cmd("GET").arg(key).query(c).expect("get")
}

/// PFCOUNT stores the cardinality it computed in the HLL's header, a change of the key's
/// bytes: as Redis, it goes to the journal and the replicas, so a restart after a SIGKILL
/// and a replica hold the same bytes as the server that counted.
#[test]
fn pfcount_cache_survives_a_kill_and_reaches_replicas() {
    let dir = common::temp_dir("hll-cache");
    let elems: Vec<String> = (0..500).map(|i| format!("e{i}")).collect();
    let before = {
        let s = common::serve_in(&dir, &[]);
        let mut c = s.client();
        let r = common::strata(&["--repl-diskless-sync-delay", "0"]);
        let mut rc = r.client();
        let _: () = redis::cmd("REPLICAOF")
            .arg("127.0.0.1")
            .arg(s.port)
            .query(&mut rc)
            .unwrap();
        // Synced first, so that the count reaches the replica by the stream.
        let end = std::time::Instant::now() + std::time::Duration::from_secs(10);
        while common::section_field(&mut rc, "replication", "master_link_status") != "up" {
            assert!(std::time::Instant::now() < end, "the replica never synced");
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        pfadd(&mut c, "h", &elems);
        let stale = get_bytes(&mut c, "h");
        let n = pfcount(&mut c, &["h"]);
        assert!((450..=550).contains(&n), "{n} for 500");
        let counted = get_bytes(&mut c, "h");
        assert_ne!(stale, counted, "PFCOUNT stored its count in the header");
        let acked: i64 = redis::cmd("WAIT").arg(1).arg(10_000).query(&mut c).unwrap();
        assert_eq!(acked, 1);
        let end = std::time::Instant::now() + std::time::Duration::from_secs(10);
        while get_bytes(&mut rc, "h") != counted {
            assert!(
                std::time::Instant::now() < end,
                "the replica's bytes differ"
            );
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        counted
    };
    // Both servers were killed; the restart replays the journal.
    let s = common::serve_in(&dir, &[]);
    let mut c = s.client();
    assert_eq!(get_bytes(&mut c, "h"), before);
    drop(s);
    let _ = std::fs::remove_dir_all(&dir);
}

/// A PFCOUNT that stores its count modifies the key for WATCH, as in Redis: a transaction
/// watching it fails; one whose PFCOUNT found the count stored already goes through.
/// Run against redis-server and Strata alike.
#[test]
fn pfcount_that_stores_its_count_touches_watched_keys() {
    let outcomes = |p: &common::Proc| {
        let (mut a, mut b) = (p.client(), p.client());
        let mut seen = Vec::new();
        pfadd(&mut a, "w", &["x".to_string(), "y".to_string()]);
        for _ in 0..2 {
            let _: () = redis::cmd("WATCH").arg("w").query(&mut a).unwrap();
            pfcount(&mut b, &["w"]);
            let r: Option<(i64,)> = redis::pipe()
                .atomic()
                .cmd("PFCOUNT")
                .arg("w")
                .query(&mut a)
                .unwrap();
            seen.push(r);
        }
        seen
    };
    let (r, s) = (common::redis(&[]), common::strata(&[]));
    let expected = outcomes(&r);
    assert_eq!(expected, vec![None, Some((2,))]);
    assert_eq!(outcomes(&s), expected);
}
