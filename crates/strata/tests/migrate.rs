//! MIGRATE between Strata and redis-server 7.0 in every direction: single keys and KEYS,
//! TTLs, COPY, REPLACE and a key that exists at the target, AUTH and AUTH2, Redis's
//! replies for missing keys, unreachable and silent targets, the cached connection, the
//! journal's DEL, a worker thread that keeps serving while a transfer waits, and TLS
//! to the target with `tls-cluster yes`.

mod common;
mod rdb_common;
mod tls_common;

use common::{free_port, redis, redis_requiring_auth, serve_in, strata, temp_dir, Proc};
use rdb_common::{dump_all, populate};
use redis::Value;
use std::net::TcpListener;
use std::time::{Duration, Instant};
use tls_common::{tls_server, Pki};

fn q(con: &mut redis::Connection, args: &[&str]) -> Result<Value, String> {
    let mut c = redis::cmd(args[0]);
    for a in &args[1..] {
        c.arg(*a);
    }
    c.query(con).map_err(|e| e.to_string())
}

fn ok(con: &mut redis::Connection, args: &[&str]) -> Value {
    q(con, args).unwrap_or_else(|e| panic!("{args:?}: {e}"))
}

fn migrate(src: &mut redis::Connection, to: &Proc, rest: &[&str]) -> Result<Value, String> {
    let port = to.port.to_string();
    let mut args = vec!["MIGRATE", "127.0.0.1", &port];
    args.extend_from_slice(rest);
    q(src, &args)
}

fn okay() -> Value {
    Value::Okay
}

/// The basic cases, run from `src` to `dst` (any mix of Strata and redis-server).
fn migrate_cases(src: &Proc, dst: &Proc) {
    let (mut s, mut d) = (src.client(), dst.client());
    let tag = format!("{}->{}", src.name, dst.name);
    ok(&mut s, &["SET", "k", "v", "PX", "100000"]);
    assert_eq!(
        migrate(&mut s, dst, &["k", "0", "5000"]),
        Ok(okay()),
        "{tag}"
    );
    assert_eq!(ok(&mut s, &["EXISTS", "k"]), Value::Int(0), "{tag}");
    assert_eq!(
        ok(&mut d, &["GET", "k"]),
        Value::BulkString(b"v".to_vec()),
        "{tag}"
    );
    let pttl = ok(&mut d, &["PTTL", "k"]);
    assert!(
        matches!(pttl, Value::Int(t) if (90_000..=100_000).contains(&t)),
        "{tag} {pttl:?}"
    );
    // COPY keeps the source; a key at the target needs REPLACE.
    ok(&mut s, &["RPUSH", "l", "a", "b", "c"]);
    assert_eq!(
        migrate(&mut s, dst, &["l", "0", "5000", "COPY"]),
        Ok(okay()),
        "{tag}"
    );
    assert_eq!(ok(&mut s, &["EXISTS", "l"]), Value::Int(1), "{tag}");
    let err = migrate(&mut s, dst, &["l", "0", "5000", "COPY"]).unwrap_err();
    assert!(
        err.contains("Target instance replied with error: BUSYKEY"),
        "{tag}: {err}"
    );
    ok(&mut s, &["RPUSH", "l", "d"]);
    assert_eq!(
        migrate(&mut s, dst, &["l", "0", "5000", "REPLACE"]),
        Ok(okay()),
        "{tag}"
    );
    assert_eq!(ok(&mut d, &["LLEN", "l"]), Value::Int(4), "{tag}");
    // Another database at the target; KEYS with missing ones; NOKEY.
    ok(&mut s, &["MSET", "a", "1", "b", "2", "c", "3"]);
    let r = migrate(
        &mut s,
        dst,
        &["", "5", "5000", "KEYS", "nope", "a", "b", "c"],
    );
    assert_eq!(r, Ok(okay()), "{tag}");
    assert_eq!(ok(&mut s, &["DBSIZE"]), Value::Int(0), "{tag}");
    ok(&mut d, &["SELECT", "5"]);
    assert_eq!(
        ok(&mut d, &["MGET", "a", "b", "c"]),
        ok(&mut d, &["MGET", "a", "b", "c"])
    );
    assert_eq!(ok(&mut d, &["DBSIZE"]), Value::Int(3), "{tag}");
    ok(&mut d, &["SELECT", "0"]);
    let r = migrate(&mut s, dst, &["", "0", "5000", "KEYS", "x", "y"]);
    assert_eq!(r, Ok(Value::SimpleString("NOKEY".into())), "{tag}");
    // Only the acknowledged keys are deleted.
    ok(&mut s, &["MSET", "p", "1", "q", "2", "r", "3"]);
    ok(&mut d, &["SET", "q", "busy"]);
    let err = migrate(&mut s, dst, &["", "0", "5000", "KEYS", "p", "q", "r"]).unwrap_err();
    assert!(err.contains("BUSYKEY"), "{tag}: {err}");
    assert_eq!(
        ok(&mut s, &["EXISTS", "p", "q", "r"]),
        Value::Int(1),
        "{tag}"
    );
    assert_eq!(
        ok(&mut s, &["GET", "q"]),
        Value::BulkString(b"2".to_vec()),
        "{tag}"
    );
    // Large values cross (the payload is written in several chunks).
    for i in 0..40 {
        let items: Vec<String> = (0..1000).map(|j| format!("item {i} {j}")).collect();
        let mut args = vec!["RPUSH", "big"];
        args.extend(items.iter().map(String::as_str));
        ok(&mut s, &args);
    }
    assert_eq!(
        migrate(&mut s, dst, &["big", "0", "10000"]),
        Ok(okay()),
        "{tag}"
    );
    assert_eq!(ok(&mut d, &["LLEN", "big"]), Value::Int(40_000), "{tag}");
    // Errors before anything is sent.
    let err = migrate(&mut s, dst, &["k", "0", "1000", "KEYS", "a"]).unwrap_err();
    assert!(
        err.contains("must be set to the empty string"),
        "{tag}: {err}"
    );
    let err = migrate(&mut s, dst, &["k", "0", "1000", "AUTH"]).unwrap_err();
    assert!(err.contains("syntax error"), "{tag}: {err}");
    let err = migrate(&mut s, dst, &["k", "zero", "1000"]).unwrap_err();
    assert!(err.contains("not an integer"), "{tag}: {err}");
}

#[test]
fn strata_to_strata() {
    migrate_cases(&strata(&[]), &strata(&[]));
}

#[test]
fn strata_to_redis() {
    migrate_cases(&strata(&[]), &redis(&[]));
}

#[test]
fn redis_to_strata() {
    migrate_cases(&redis(&[]), &strata(&[]));
}

/// Every sample value of every type and encoding, migrated from Strata to redis-server
/// and back: the same data where it lands.
#[test]
fn every_type_crosses_and_comes_back() {
    let (s, r) = (strata(&[]), redis(&[]));
    let (mut sc, mut rc) = (s.client(), r.client());
    populate(&mut sc, false);
    let before = dump_all(&mut sc, false);
    let keys: Vec<&str> = before
        .iter()
        .filter(|e| e.0 == 0)
        .map(|e| std::str::from_utf8(&e.1).unwrap())
        .collect();
    let mut args = vec!["", "0", "10000", "KEYS"];
    args.extend(keys.iter().copied());
    assert_eq!(migrate(&mut sc, &r, &args), Ok(okay()));
    let db0: Vec<_> = before.iter().filter(|e| e.0 == 0).cloned().collect();
    assert_same(&dump_all(&mut rc, false), &db0);
    assert_eq!(migrate(&mut rc, &s, &args), Ok(okay()));
    assert_same(&dump_all(&mut sc, false), &before);
}

type Dumped = Vec<(u64, bytes::Bytes, Option<strata_rdb::RdbValue>, Option<i64>)>;

/// The same keys and values; expiries within a second (MIGRATE sends the TTL left).
fn assert_same(got: &Dumped, want: &Dumped) {
    assert_eq!(got.len(), want.len());
    for (g, w) in got.iter().zip(want) {
        assert!(g.0 == w.0 && g.1 == w.1 && g.2 == w.2, "{:?} differs", w.1);
        match (g.3, w.3) {
            (None, None) => {}
            (Some(a), Some(b)) => assert!((a - b).abs() < 1000, "{:?}: {a} {b}", w.1),
            other => panic!("{:?}: expiries {other:?}", w.1),
        }
    }
}

#[test]
fn auth_and_auth2_reach_a_protected_target() {
    for target in [
        redis_requiring_auth(&["--requirepass", "sesame"]),
        strata(&["--requirepass", "sesame"]),
    ] {
        let s = strata(&[]);
        let mut sc = s.client();
        ok(&mut sc, &["SET", "k", "v"]);
        let err = migrate(&mut sc, &target, &["k", "0", "1000", "COPY"]).unwrap_err();
        assert!(err.contains("NOAUTH"), "{}: {err}", target.name);
        let err = migrate(
            &mut sc,
            &target,
            &["k", "0", "1000", "COPY", "AUTH", "wrong"],
        )
        .unwrap_err();
        assert!(err.contains("WRONGPASS"), "{}: {err}", target.name);
        let r = migrate(
            &mut sc,
            &target,
            &["k", "0", "1000", "COPY", "AUTH", "sesame"],
        );
        assert_eq!(r, Ok(okay()), "{}", target.name);
        let r = migrate(
            &mut sc,
            &target,
            &["k", "0", "1000", "REPLACE", "AUTH2", "default", "sesame"],
        );
        assert_eq!(r, Ok(okay()), "{}", target.name);
        assert_eq!(ok(&mut sc, &["EXISTS", "k"]), Value::Int(0));
    }
}

/// A target that accepts and never answers: IOERR once the timeout passes, the key kept;
/// meanwhile the worker thread (there is only one) goes on serving other clients.
#[test]
fn a_silent_target_times_out_without_stalling_the_worker() {
    let silent = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = silent.local_addr().unwrap().port().to_string();
    let s = strata(&["--threads", "1"]);
    let mut sc = s.client();
    ok(&mut sc, &["SET", "k", "v"]);
    let started = Instant::now();
    let waiter = std::thread::spawn({
        let mut c = s.client();
        let port = port.clone();
        move || q(&mut c, &["MIGRATE", "127.0.0.1", &port, "k", "0", "1500"])
    });
    std::thread::sleep(Duration::from_millis(200));
    let t = Instant::now();
    assert_eq!(ok(&mut sc, &["PING"]), Value::SimpleString("PONG".into()));
    assert!(
        t.elapsed() < Duration::from_millis(500),
        "PING waited {:?}",
        t.elapsed()
    );
    let err = waiter.join().unwrap().unwrap_err();
    assert!(
        err.contains("IOERR") && err.contains("error or timeout reading to target instance"),
        "{err}"
    );
    assert!(started.elapsed() >= Duration::from_millis(1400));
    assert_eq!(ok(&mut sc, &["EXISTS", "k"]), Value::Int(1));
    // Nobody listening at all.
    drop(silent);
    let err = q(&mut sc, &["MIGRATE", "127.0.0.1", &port, "k", "0", "500"]).unwrap_err();
    assert!(
        err.contains("IOERR") && err.contains("error or timeout connecting to the client"),
        "{err}"
    );
}

/// Inside MULTI the transfer runs in place; the DEL it makes is journaled and survives a
/// restart.
#[test]
fn migrate_in_a_transaction_and_its_journaled_del() {
    let r = redis(&[]);
    let dir = temp_dir("migrate-journal");
    {
        let s = serve_in(&dir, &[]);
        let mut sc = s.client();
        ok(&mut sc, &["SET", "k", "v"]);
        ok(&mut sc, &["SET", "j", "w"]);
        let port = r.port.to_string();
        let reply: Value = redis::pipe()
            .atomic()
            .cmd("MIGRATE")
            .arg("127.0.0.1")
            .arg(&port)
            .arg("k")
            .arg(0)
            .arg(1000)
            .cmd("EXISTS")
            .arg("k")
            .query(&mut sc)
            .unwrap();
        assert_eq!(reply, Value::Array(vec![okay(), Value::Int(0)]));
        assert_eq!(migrate(&mut sc, &r, &["j", "0", "1000"]), Ok(okay()));
    }
    let s = serve_in(&dir, &[]);
    assert_eq!(ok(&mut s.client(), &["EXISTS", "k", "j"]), Value::Int(0));
    assert_eq!(ok(&mut r.client(), &["EXISTS", "k", "j"]), Value::Int(2));
    let _ = std::fs::remove_dir_all(&dir);
}

/// The connection to a target is kept (INFO migrate_cached_sockets) and closed after 10
/// idle seconds.
#[test]
fn connections_are_cached_then_released() {
    let (s, r) = (strata(&[]), redis(&[]));
    let mut sc = s.client();
    let cached = |c: &mut redis::Connection| -> String {
        let info: String = redis::cmd("INFO").arg("stats").query(c).unwrap();
        info.lines()
            .find_map(|l| l.strip_prefix("migrate_cached_sockets:"))
            .expect("migrate_cached_sockets")
            .trim()
            .to_string()
    };
    assert_eq!(cached(&mut sc), "0");
    ok(&mut sc, &["SET", "k", "v"]);
    assert_eq!(
        migrate(&mut sc, &r, &["k", "0", "1000", "COPY"]),
        Ok(okay())
    );
    assert_eq!(
        migrate(&mut sc, &r, &["k", "3", "1000", "COPY"]),
        Ok(okay())
    );
    assert_eq!(cached(&mut sc), "1");
    let end = Instant::now() + Duration::from_secs(15);
    while cached(&mut sc) != "0" {
        assert!(Instant::now() < end, "never released");
        std::thread::sleep(Duration::from_millis(250));
    }
}

/// `tls-cluster yes`: MIGRATE reaches the TLS port of a Strata and of a redis-server that
/// require client certificates; with `no` it speaks plain TCP there and fails.
#[test]
fn tls_cluster_makes_migrate_speak_tls() {
    let pki = Pki::new();
    let mut args = pki.server_args("a");
    args.extend(["--tls-cluster".to_string(), "no".to_string()]);
    let src = strata(&args.iter().map(String::as_str).collect::<Vec<_>>());
    let mut sc = src.client();
    let (st, strata_tls) = tls_server(&pki, false, &[]);
    let redis_tls = free_port();
    let mut args = vec!["--tls-port".to_string(), redis_tls.to_string()];
    args.extend(pki.server_args("a"));
    let rt = redis(&args.iter().map(String::as_str).collect::<Vec<_>>());
    assert_eq!(st.port, strata_tls);
    let to = |c: &mut redis::Connection, port: u16, key: &str| {
        q(
            c,
            &["MIGRATE", "127.0.0.1", &port.to_string(), key, "0", "2000"],
        )
    };

    ok(&mut sc, &["SET", "k1", "v1"]);
    ok(&mut sc, &["RPUSH", "k2", "a", "b"]);
    for port in [strata_tls, redis_tls] {
        let e = to(&mut sc, port, "k1").expect_err("plain TCP to a TLS port");
        assert!(e.contains("IOERR"), "{e}");
    }
    assert_eq!(ok(&mut sc, &["EXISTS", "k1"]), Value::Int(1));

    ok(&mut sc, &["CONFIG", "SET", "tls-cluster", "yes"]);
    assert_eq!(to(&mut sc, strata_tls, "k1"), Ok(okay()));
    assert_eq!(to(&mut sc, redis_tls, "k2"), Ok(okay()));
    assert_eq!(ok(&mut sc, &["EXISTS", "k1", "k2"]), Value::Int(0));
    assert_eq!(
        ok(&mut pki.client(strata_tls), &["GET", "k1"]),
        Value::BulkString(b"v1".to_vec())
    );
    assert_eq!(
        ok(&mut rt.client(), &["LRANGE", "k2", "0", "-1"]),
        Value::Array(vec![
            Value::BulkString(b"a".to_vec()),
            Value::BulkString(b"b".to_vec())
        ])
    );

    // Back to `no`: the cached TLS connection is not reused, so plain TCP fails again.
    ok(&mut sc, &["CONFIG", "SET", "tls-cluster", "no"]);
    ok(&mut sc, &["SET", "k3", "v3"]);
    let e = to(&mut sc, strata_tls, "k3").expect_err("plain TCP to a TLS port");
    assert!(e.contains("IOERR"), "{e}");
}
