//! The string commands against the real binary: GET SET (and its options) SETNX SETEX
//! PSETEX MGET MSET MSETNX GETSET GETDEL GETEX APPEND STRLEN INCR DECR INCRBY DECRBY
//! INCRBYFLOAT GETRANGE SUBSTR SETRANGE LCS (the bit commands: `bits.rs`). Expected values
//! are computed here from first principles: a model of the string each key should hold, a
//! textbook LCS, the clock. Hostile numeric arguments reach the bit commands too.

mod common;

use common::{
    arity, bulk, cmd, err, get, int, ints, now_ms, ok, raw, setup, RespConn, Rng, NOT_INT, SYNTAX,
};
use redis::{Connection, Value};
use std::time::Duration;

#[test]
fn get_and_set_round_trip() {
    let (_p, mut c, mut r) = setup();
    assert_eq!(get(&mut c, "nokey"), None);
    ok(&mut c, &["SET", "k", "hello"]);
    assert_eq!(get(&mut c, "k").as_deref(), Some(&b"hello"[..]));
    ok(&mut c, &["SET", "k", "world"]);
    assert_eq!(get(&mut c, "k").as_deref(), Some(&b"world"[..]));

    // Every byte value, the empty string, an empty key, a large value.
    let all: Vec<u8> = (0..=255u8).collect();
    ok(&mut c, &[&b"SET"[..], b"\x00bin\xff", &all]);
    assert_eq!(
        bulk(&mut c, &[&b"GET"[..], b"\x00bin\xff"]),
        Some(all.clone())
    );
    ok(&mut c, &["SET", "empty", ""]);
    assert_eq!(get(&mut c, "empty"), Some(Vec::new()));
    ok(&mut c, &["SET", "", "empty key"]);
    assert_eq!(get(&mut c, "").as_deref(), Some(&b"empty key"[..]));
    let big: Vec<u8> = (0..1_000_000u32).map(|i| (i * 7 % 251) as u8).collect();
    ok(&mut c, &[&b"SET"[..], b"big", &big]);
    assert_eq!(bulk(&mut c, &[&b"GET"[..], b"big"]), Some(big));
    assert_eq!(int(&mut c, &["STRLEN", "big"]), 1_000_000);

    // Exact reply bytes in RESP2.
    assert_eq!(raw(&mut r, &["GET", "nokey"]), b"$-1\r\n");
    assert_eq!(raw(&mut r, &["GET", "k"]), b"$5\r\nworld\r\n");
    assert_eq!(raw(&mut r, &["SET", "k", "v"]), b"+OK\r\n");

    assert_eq!(err(&mut r, &["GET"]), arity("get"));
    assert_eq!(err(&mut r, &["GET", "a", "b"]), arity("get"));
    assert_eq!(err(&mut r, &["SET", "k"]), arity("set"));
}

#[test]
fn set_conditions_and_get_option() {
    let (_p, mut c, mut r) = setup();
    ok(&mut c, &["SET", "k", "v1", "NX"]);
    assert_eq!(cmd(&mut c, &["SET", "k", "v2", "NX"]), Value::Nil);
    assert_eq!(get(&mut c, "k").as_deref(), Some(&b"v1"[..]));
    ok(&mut c, &["SET", "k", "v3", "xx"]);
    assert_eq!(get(&mut c, "k").as_deref(), Some(&b"v3"[..]));
    assert_eq!(cmd(&mut c, &["SET", "nokey", "v", "XX"]), Value::Nil);
    assert_eq!(get(&mut c, "nokey"), None);

    // GET returns the old value (or nil) instead of OK, whether or not the set happens.
    assert_eq!(
        bulk(&mut c, &["SET", "k", "v4", "GET"]).as_deref(),
        Some(&b"v3"[..])
    );
    assert_eq!(bulk(&mut c, &["SET", "new", "n1", "GET"]), None);
    assert_eq!(get(&mut c, "new").as_deref(), Some(&b"n1"[..]));
    assert_eq!(
        bulk(&mut c, &["SET", "k", "v5", "NX", "GET"]).as_deref(),
        Some(&b"v4"[..])
    );
    assert_eq!(get(&mut c, "k").as_deref(), Some(&b"v4"[..]));
    assert_eq!(bulk(&mut c, &["SET", "none", "v", "XX", "GET"]), None);
    assert_eq!(get(&mut c, "none"), None);

    for bad in [
        &["SET", "k", "v", "NX", "XX"][..],
        &["SET", "k", "v", "XX", "NX"],
        &["SET", "k", "v", "EX", "10", "PX", "10"],
        &["SET", "k", "v", "EX", "10", "KEEPTTL"],
        &["SET", "k", "v", "KEEPTTL", "PXAT", "10"],
        &["SET", "k", "v", "EX"],
        &["SET", "k", "v", "PERSIST"],
        &["SET", "k", "v", "FOO"],
        &["SET", "k", "v", "NXX"],
    ] {
        assert_eq!(err(&mut r, bad), SYNTAX, "{bad:?}");
    }
    let invalid = "ERR invalid expire time in 'set' command";
    for bad in ["0", "-1", "9223372036854775807"] {
        assert_eq!(
            err(&mut r, &["SET", "k", "v", "EX", bad]),
            invalid,
            "EX {bad}"
        );
    }
    assert_eq!(err(&mut r, &["SET", "k", "v", "PX", "0"]), invalid);
    assert_eq!(
        err(&mut r, &["SET", "k", "v", "PX", "9223372036854775807"]),
        invalid
    );
    assert_eq!(
        err(&mut r, &["SET", "k", "v", "EXAT", "9223372036854776"]),
        invalid
    );
    assert_eq!(err(&mut r, &["SET", "k", "v", "EX", "1.5"]), NOT_INT);
    assert_eq!(err(&mut r, &["SET", "k", "v", "EX", "abc"]), NOT_INT);
    // Nothing was written by the failed commands.
    assert_eq!(get(&mut c, "k").as_deref(), Some(&b"v4"[..]));
}

#[test]
fn set_expiry_options() {
    let (_p, mut c, _r) = setup();
    ok(&mut c, &["SET", "k", "v", "EX", "100"]);
    let ttl = int(&mut c, &["TTL", "k"]);
    assert!((99..=100).contains(&ttl), "{ttl}");
    ok(&mut c, &["SET", "k", "v", "PX", "50000"]);
    let pttl = int(&mut c, &["PTTL", "k"]);
    assert!((49_000..=50_000).contains(&pttl), "{pttl}");

    // Absolute times: a future one sets the matching TTL, a past one leaves no key.
    let at = now_ms() / 1000 + 1000;
    ok(&mut c, &["SET", "k", "v", "EXAT", &at.to_string()]);
    let ttl = int(&mut c, &["TTL", "k"]);
    assert!((998..=1000).contains(&ttl), "{ttl}");
    let pat = now_ms() + 30_000;
    ok(&mut c, &["SET", "k", "v", "PXAT", &pat.to_string()]);
    let pttl = int(&mut c, &["PTTL", "k"]);
    assert!((28_000..=30_000).contains(&pttl), "{pttl}");
    ok(&mut c, &["SET", "past", "v", "PXAT", "1"]);
    assert_eq!(get(&mut c, "past"), None);
    ok(&mut c, &["SET", "past", "v", "EXAT", "1"]);
    assert_eq!(int(&mut c, &["EXISTS", "past"]), 0);

    // KEEPTTL keeps it, a plain SET clears it, a later EX replaces it.
    ok(&mut c, &["SET", "k", "v", "EX", "100"]);
    ok(&mut c, &["SET", "k", "v2", "KEEPTTL"]);
    assert!(int(&mut c, &["TTL", "k"]) > 90);
    assert_eq!(get(&mut c, "k").as_deref(), Some(&b"v2"[..]));
    ok(&mut c, &["SET", "k", "v3"]);
    assert_eq!(int(&mut c, &["TTL", "k"]), -1);
    ok(&mut c, &["SET", "k", "v", "EX", "100", "EX", "2000"]);
    assert!(int(&mut c, &["TTL", "k"]) > 1000);
    // SET ... NX that does not set leaves the TTL alone.
    assert_eq!(cmd(&mut c, &["SET", "k", "x", "NX"]), Value::Nil);
    assert!(int(&mut c, &["TTL", "k"]) > 1000);

    // The key really goes away.
    ok(&mut c, &["SET", "short", "v", "PX", "400"]);
    assert!(get(&mut c, "short").is_some());
    std::thread::sleep(Duration::from_millis(600));
    assert_eq!(get(&mut c, "short"), None);
}

#[test]
fn setnx_setex_psetex() {
    let (_p, mut c, mut r) = setup();
    assert_eq!(int(&mut c, &["SETNX", "k", "a"]), 1);
    assert_eq!(int(&mut c, &["SETNX", "k", "b"]), 0);
    assert_eq!(get(&mut c, "k").as_deref(), Some(&b"a"[..]));

    ok(&mut c, &["SETEX", "k", "100", "v"]);
    assert_eq!(get(&mut c, "k").as_deref(), Some(&b"v"[..]));
    assert!((99..=100).contains(&int(&mut c, &["TTL", "k"])));
    ok(&mut c, &["PSETEX", "k", "20000", "w"]);
    assert_eq!(get(&mut c, "k").as_deref(), Some(&b"w"[..]));
    let pttl = int(&mut c, &["PTTL", "k"]);
    assert!((19_000..=20_000).contains(&pttl), "{pttl}");

    assert_eq!(
        err(&mut r, &["SETEX", "k", "0", "v"]),
        "ERR invalid expire time in 'setex' command"
    );
    assert_eq!(
        err(&mut r, &["SETEX", "k", "-5", "v"]),
        "ERR invalid expire time in 'setex' command"
    );
    assert_eq!(
        err(&mut r, &["PSETEX", "k", "0", "v"]),
        "ERR invalid expire time in 'psetex' command"
    );
    assert_eq!(err(&mut r, &["SETEX", "k", "x", "v"]), NOT_INT);
    assert_eq!(err(&mut r, &["SETEX", "k", "10"]), arity("setex"));
    assert_eq!(get(&mut c, "k").as_deref(), Some(&b"w"[..]));
}

#[test]
fn multi_key_commands() {
    let (_p, mut c, mut r) = setup();
    // Enough keys to span many shards.
    let keys: Vec<String> = (0..200).map(|i| format!("key:{i}")).collect();
    let mut args = vec!["MSET".to_string()];
    for k in &keys {
        args.push(k.clone());
        args.push(format!("value of {k}"));
    }
    ok(&mut c, &args);
    let mut margs = vec!["MGET".to_string()];
    margs.extend(keys.iter().cloned());
    margs.push("missing".into());
    match cmd(&mut c, &margs) {
        Value::Array(v) => {
            assert_eq!(v.len(), keys.len() + 1);
            for (k, got) in keys.iter().zip(&v) {
                assert_eq!(
                    got,
                    &Value::BulkString(format!("value of {k}").into_bytes())
                );
            }
            assert_eq!(v[keys.len()], Value::Nil);
        }
        other => panic!("{other:?}"),
    }
    // Later pairs win; MSET clears a TTL.
    ok(&mut c, &["SET", "t", "v", "EX", "100"]);
    ok(&mut c, &["MSET", "a", "1", "a", "2", "t", "x"]);
    assert_eq!(get(&mut c, "a").as_deref(), Some(&b"2"[..]));
    assert_eq!(int(&mut c, &["TTL", "t"]), -1);

    // MSETNX sets all or nothing.
    assert_eq!(int(&mut c, &["MSETNX", "n1", "1", "n2", "2"]), 1);
    assert_eq!(int(&mut c, &["MSETNX", "n3", "3", "n2", "x"]), 0);
    assert_eq!(get(&mut c, "n3"), None);
    assert_eq!(get(&mut c, "n2").as_deref(), Some(&b"2"[..]));

    assert_eq!(err(&mut r, &["MSET", "a", "1", "b"]), arity("mset"));
    assert_eq!(err(&mut r, &["MSETNX", "a", "1", "b"]), arity("msetnx"));
    assert_eq!(err(&mut r, &["MSET"]), arity("mset"));
    assert_eq!(err(&mut r, &["MGET"]), arity("mget"));
}

#[test]
fn getset_getdel_getex() {
    let (_p, mut c, mut r) = setup();
    assert_eq!(bulk(&mut c, &["GETSET", "k", "a"]), None);
    ok(&mut c, &["SET", "k", "v", "EX", "100"]);
    assert_eq!(
        bulk(&mut c, &["GETSET", "k", "b"]).as_deref(),
        Some(&b"v"[..])
    );
    assert_eq!(int(&mut c, &["TTL", "k"]), -1, "GETSET clears the TTL");

    assert_eq!(bulk(&mut c, &["GETDEL", "k"]).as_deref(), Some(&b"b"[..]));
    assert_eq!(int(&mut c, &["EXISTS", "k"]), 0);
    assert_eq!(bulk(&mut c, &["GETDEL", "k"]), None);

    assert_eq!(bulk(&mut c, &["GETEX", "k", "EX", "10"]), None);
    ok(&mut c, &["SET", "k", "v"]);
    assert_eq!(bulk(&mut c, &["GETEX", "k"]).as_deref(), Some(&b"v"[..]));
    assert_eq!(int(&mut c, &["TTL", "k"]), -1);
    assert_eq!(
        bulk(&mut c, &["GETEX", "k", "EX", "100"]).as_deref(),
        Some(&b"v"[..])
    );
    assert!((99..=100).contains(&int(&mut c, &["TTL", "k"])));
    assert_eq!(
        bulk(&mut c, &["GETEX", "k", "PX", "5000"]).as_deref(),
        Some(&b"v"[..])
    );
    assert!((4..=5).contains(&int(&mut c, &["TTL", "k"])));
    let at = now_ms() / 1000 + 500;
    bulk(&mut c, &["GETEX", "k", "EXAT", &at.to_string()]);
    assert!((498..=500).contains(&int(&mut c, &["TTL", "k"])));
    assert_eq!(
        bulk(&mut c, &["GETEX", "k", "PERSIST"]).as_deref(),
        Some(&b"v"[..])
    );
    assert_eq!(int(&mut c, &["TTL", "k"]), -1);
    // A past absolute time answers the value, then deletes the key.
    assert_eq!(
        bulk(&mut c, &["GETEX", "k", "PXAT", "1"]).as_deref(),
        Some(&b"v"[..])
    );
    assert_eq!(int(&mut c, &["EXISTS", "k"]), 0);

    ok(&mut c, &["SET", "k", "v"]);
    assert_eq!(
        err(&mut r, &["GETEX", "k", "EX", "0"]),
        "ERR invalid expire time in 'getex' command"
    );
    assert_eq!(err(&mut r, &["GETEX", "k", "EX", "10", "PERSIST"]), SYNTAX);
    assert_eq!(err(&mut r, &["GETEX", "k", "KEEPTTL"]), SYNTAX);
    assert_eq!(err(&mut r, &["GETEX", "k", "NX"]), SYNTAX);
    assert_eq!(int(&mut c, &["TTL", "k"]), -1);
}

#[test]
fn append_setrange_getrange_against_a_model() {
    let (_p, mut c, mut r) = setup();
    let mut rng = Rng(0x5eed);
    let mut model: Option<Vec<u8>> = None;
    for step in 0..600 {
        match rng.below(4) {
            0 => {
                let v = rng.bytes_upto(8, b"ab\x00\xff");
                let n = int(&mut c, &[&b"APPEND"[..], b"s", &v]);
                let m = model.get_or_insert_with(Vec::new);
                m.extend_from_slice(&v);
                assert_eq!(n, m.len() as i64, "step {step}");
            }
            1 => {
                let off = rng.below(40) as usize;
                let v = rng.bytes_upto(6, b"xyz");
                let n = int(
                    &mut c,
                    &[&b"SETRANGE"[..], b"s", off.to_string().as_bytes(), &v],
                );
                let want = match (&mut model, v.is_empty()) {
                    (None, true) => 0,
                    (Some(m), true) => m.len(),
                    (m, false) => {
                        let m = m.get_or_insert_with(Vec::new);
                        if m.len() < off + v.len() {
                            m.resize(off + v.len(), 0);
                        }
                        m[off..off + v.len()].copy_from_slice(&v);
                        m.len()
                    }
                };
                assert_eq!(n, want as i64, "step {step}");
            }
            2 => {
                let (a, b) = (rng.range(-50, 50), rng.range(-50, 50));
                let got = bulk(&mut c, &["GETRANGE", "s", &a.to_string(), &b.to_string()]);
                let m = model.clone().unwrap_or_default();
                let len = m.len() as i64;
                let norm = |i: i64| if i < 0 { (len + i).max(0) } else { i };
                let (s, e) = (norm(a), norm(b).min(len - 1));
                let want = if (a < 0 && b < 0 && a > b) || s > e || len == 0 {
                    Vec::new()
                } else {
                    m[s as usize..=e as usize].to_vec()
                };
                assert_eq!(got, Some(want), "GETRANGE {a} {b} step {step}");
            }
            _ => {
                if rng.below(10) == 0 {
                    cmd(&mut c, &["DEL", "s"]);
                    model = None;
                }
                assert_eq!(
                    int(&mut c, &["STRLEN", "s"]),
                    model.as_ref().map_or(0, |m| m.len() as i64)
                );
            }
        }
    }
    assert_eq!(get(&mut c, "s"), model);

    // APPEND and SETRANGE keep the TTL.
    ok(&mut c, &["SET", "t", "v", "EX", "100"]);
    int(&mut c, &["APPEND", "t", "w"]);
    int(&mut c, &["SETRANGE", "t", "5", "z"]);
    assert!(int(&mut c, &["TTL", "t"]) > 90);
    assert_eq!(get(&mut c, "t").as_deref(), Some(&b"vw\0\0\0z"[..]));
    assert_eq!(
        bulk(&mut c, &["SUBSTR", "t", "0", "1"]).as_deref(),
        Some(&b"vw"[..])
    );

    assert_eq!(
        err(&mut r, &["SETRANGE", "t", "-1", "x"]),
        "ERR offset is out of range"
    );
    assert_eq!(
        err(&mut r, &["SETRANGE", "t", "536870912", "x"]),
        "ERR string exceeds maximum allowed size (proto-max-bulk-len)"
    );
    assert_eq!(err(&mut r, &["GETRANGE", "t", "a", "1"]), NOT_INT);
    assert_eq!(
        bulk(
            &mut c,
            &[
                "GETRANGE",
                "t",
                "-9223372036854775808",
                "9223372036854775807"
            ]
        )
        .as_deref(),
        Some(&b"vw\0\0\0z"[..])
    );
}

#[test]
fn proto_max_bulk_len_bounds_growth() {
    let p = common::strata(&["--proto-max-bulk-len", "1000"]);
    let mut c = p.client();
    let mut r = RespConn::new(&p);
    let too_big = "ERR string exceeds maximum allowed size (proto-max-bulk-len)";
    ok(&mut c, &["SET", "s", &"x".repeat(600)]);
    assert_eq!(int(&mut c, &["APPEND", "s", &"y".repeat(400)]), 1000);
    assert_eq!(err(&mut r, &["APPEND", "s", "z"]), too_big);
    assert_eq!(int(&mut c, &["SETRANGE", "n", "999", "a"]), 1000);
    assert_eq!(err(&mut r, &["SETRANGE", "n", "999", "ab"]), too_big);
    assert_eq!(int(&mut c, &["SETRANGE", "n", "5000", ""]), 1000);
    // A bit offset must address a byte below the limit.
    assert_eq!(int(&mut c, &["SETBIT", "b", "7999", "1"]), 0);
    assert_eq!(
        err(&mut r, &["SETBIT", "b", "8000", "1"]),
        "ERR bit offset is not an integer or out of range"
    );
    assert_eq!(int(&mut c, &["STRLEN", "b"]), 1000);
    // LCS's table must fit in the limit too.
    ok(
        &mut c,
        &["MSET", "x", &"a".repeat(20), "y", &"a".repeat(20)],
    );
    assert_eq!(
        err(&mut r, &["LCS", "x", "y"]),
        "ERR Insufficient memory, transient memory for LCS exceeds proto-max-bulk-len"
    );
    ok(&mut c, &["MSET", "x", "abc", "y", "abd"]);
    assert_eq!(int(&mut c, &["LCS", "x", "y", "LEN"]), 2);
}

#[test]
fn counters() {
    let (_p, mut c, mut r) = setup();
    let mut rng = Rng(42);
    let mut model: i64 = 0;
    for _ in 0..300 {
        let (got, want) = match rng.below(4) {
            0 => (int(&mut c, &["INCR", "n"]), model + 1),
            1 => (int(&mut c, &["DECR", "n"]), model - 1),
            2 => {
                let d = rng.range(-1_000_000, 1_000_000);
                (int(&mut c, &["INCRBY", "n", &d.to_string()]), model + d)
            }
            _ => {
                let d = rng.range(-1_000_000, 1_000_000);
                (int(&mut c, &["DECRBY", "n", &d.to_string()]), model - d)
            }
        };
        assert_eq!(got, want);
        model = want;
    }
    assert_eq!(get(&mut c, "n"), Some(model.to_string().into_bytes()));

    let overflow = "ERR increment or decrement would overflow";
    ok(&mut c, &["SET", "n", &(i64::MAX - 1).to_string()]);
    assert_eq!(int(&mut c, &["INCR", "n"]), i64::MAX);
    assert_eq!(err(&mut r, &["INCR", "n"]), overflow);
    assert_eq!(get(&mut c, "n"), Some(i64::MAX.to_string().into_bytes()));
    ok(&mut c, &["SET", "n", &i64::MIN.to_string()]);
    assert_eq!(err(&mut r, &["DECR", "n"]), overflow);
    assert_eq!(err(&mut r, &["INCRBY", "n", "-1"]), overflow);
    assert_eq!(
        err(&mut r, &["DECRBY", "n", "-9223372036854775808"]),
        "ERR decrement would overflow"
    );
    assert_eq!(int(&mut c, &["INCRBY", "n", &i64::MAX.to_string()]), -1);

    for bad in [
        "abc",
        "",
        " 1",
        "1 ",
        "+1",
        "01",
        "-0",
        "1.0",
        "9223372036854775808",
    ] {
        ok(&mut c, &["SET", "s", bad]);
        assert_eq!(err(&mut r, &["INCR", "s"]), NOT_INT, "{bad:?}");
    }
    assert_eq!(err(&mut r, &["INCRBY", "n", "1.5"]), NOT_INT);
    assert_eq!(err(&mut r, &["INCRBY", "fresh", "x"]), NOT_INT);
    assert_eq!(int(&mut c, &["EXISTS", "fresh"]), 0);

    // Counters keep their TTL.
    ok(&mut c, &["SET", "t", "10", "EX", "100"]);
    assert_eq!(int(&mut c, &["INCRBY", "t", "5"]), 15);
    assert!(int(&mut c, &["TTL", "t"]) > 90);
}

#[test]
fn incrbyfloat() {
    let (_p, mut c, mut r) = setup();
    let f = |c: &mut Connection, key: &str, by: &str| -> String {
        String::from_utf8(bulk(c, &["INCRBYFLOAT", key, by]).expect("value")).expect("utf8")
    };
    // Sums of binary fractions are exact; integral results print without a point.
    assert_eq!(f(&mut c, "x", "0.5"), "0.5");
    assert_eq!(f(&mut c, "x", "0.25"), "0.75");
    assert_eq!(f(&mut c, "x", "-0.75"), "0");
    assert_eq!(f(&mut c, "x", "3.0e3"), "3000");
    assert_eq!(f(&mut c, "x", "0x10"), "3016");
    ok(&mut c, &["SET", "x", "10.50"]);
    assert_eq!(f(&mut c, "x", "0.1"), "10.6");
    assert_eq!(f(&mut c, "x", "-5"), "5.6");
    assert_eq!(get(&mut c, "x").as_deref(), Some(&b"5.6"[..]));
    // Large magnitudes print in full, never with an exponent.
    ok(&mut c, &["SET", "x", "0"]);
    assert_eq!(f(&mut c, "x", "1e20"), "100000000000000000000");
    // Repeated small steps stay close to the exact decimal sum.
    ok(&mut c, &["SET", "y", "0"]);
    let mut last = String::new();
    for _ in 0..100 {
        last = f(&mut c, "y", "0.01");
    }
    let v: f64 = last.parse().expect("decimal");
    assert!((v - 1.0).abs() < 1e-12, "{last}");
    assert!(!last.contains('e'), "{last}");

    assert_eq!(
        err(&mut r, &["INCRBYFLOAT", "x", "abc"]),
        "ERR value is not a valid float"
    );
    assert_eq!(
        err(&mut r, &["INCRBYFLOAT", "x", "nan"]),
        "ERR value is not a valid float"
    );
    assert_eq!(
        err(&mut r, &["INCRBYFLOAT", "x", " 1"]),
        "ERR value is not a valid float"
    );
    assert_eq!(
        err(&mut r, &["INCRBYFLOAT", "x", "inf"]),
        "ERR increment would produce NaN or Infinity"
    );
    ok(&mut c, &["SET", "s", "hello"]);
    assert_eq!(
        err(&mut r, &["INCRBYFLOAT", "s", "1"]),
        "ERR value is not a valid float"
    );

    ok(&mut c, &["SET", "t", "1.5", "EX", "100"]);
    assert_eq!(f(&mut c, "t", "1"), "2.5");
    assert!(int(&mut c, &["TTL", "t"]) > 90);
}

/// Length of the longest common subsequence, textbook DP.
fn lcs_len(a: &[u8], b: &[u8]) -> usize {
    let mut prev = vec![0usize; b.len() + 1];
    for &x in a {
        let mut cur = vec![0usize; b.len() + 1];
        for (j, &y) in b.iter().enumerate() {
            cur[j + 1] = if x == y {
                prev[j] + 1
            } else {
                prev[j + 1].max(cur[j])
            };
        }
        prev = cur;
    }
    prev[b.len()]
}

fn is_subsequence(s: &[u8], of: &[u8]) -> bool {
    let mut it = of.iter();
    s.iter().all(|c| it.any(|d| d == c))
}

#[test]
fn lcs() {
    let (_p, mut c, mut r) = setup();
    let mut rng = Rng(7);
    for round in 0..40 {
        let a = rng.bytes_upto(30, b"abc");
        let b = rng.bytes_upto(30, b"abcd");
        ok(&mut c, &[&b"MSET"[..], b"a", &a, b"b", &b]);
        let want = lcs_len(&a, &b);
        assert_eq!(
            int(&mut c, &["LCS", "a", "b", "LEN"]),
            want as i64,
            "round {round}"
        );
        let s = bulk(&mut c, &["LCS", "a", "b"]).expect("string");
        assert_eq!(s.len(), want);
        assert!(
            is_subsequence(&s, &a) && is_subsequence(&s, &b),
            "round {round}"
        );

        // IDX: disjoint matching ranges whose lengths add up to the LCS length.
        let Value::Array(reply) = cmd(&mut c, &["LCS", "a", "b", "IDX", "WITHMATCHLEN"]) else {
            panic!("IDX reply");
        };
        assert_eq!(reply[0], Value::BulkString(b"matches".to_vec()));
        assert_eq!(reply[2], Value::BulkString(b"len".to_vec()));
        assert_eq!(reply[3], Value::Int(want as i64));
        let Value::Array(matches) = &reply[1] else {
            panic!()
        };
        let mut total = 0;
        for m in matches {
            let Value::Array(parts) = m else { panic!() };
            let (ra, rb) = (ints(&parts[0]), ints(&parts[1]));
            let len = match parts[2] {
                Value::Int(n) => n,
                _ => panic!(),
            };
            assert_eq!(ra[1] - ra[0] + 1, len);
            assert_eq!(rb[1] - rb[0] + 1, len);
            assert_eq!(
                a[ra[0] as usize..=ra[1] as usize],
                b[rb[0] as usize..=rb[1] as usize]
            );
            total += len;
        }
        assert_eq!(total, want as i64, "round {round}");
    }
    ok(&mut c, &["MSET", "a", "ohmytext", "b", "mynewtext"]);
    assert_eq!(
        bulk(&mut c, &["LCS", "a", "b"]).as_deref(),
        Some(&b"mytext"[..])
    );
    assert_eq!(bulk(&mut c, &["LCS", "a", "missing"]), Some(Vec::new()));
    assert_eq!(
        err(&mut r, &["LCS", "a", "b", "LEN", "IDX"]),
        "ERR If you want both the length and indexes, please just use IDX."
    );
    assert_eq!(err(&mut r, &["LCS", "a", "b", "FOO"]), SYNTAX);
    assert_eq!(err(&mut r, &["LCS", "a", "b", "MINMATCHLEN", "x"]), NOT_INT);
    // RESP3: IDX answers a map.
    r.call(&["HELLO", "3"]).expect("hello");
    let rep = r
        .call(&["LCS", "a", "b", "IDX", "MINMATCHLEN", "4"])
        .expect("lcs");
    assert_eq!(
        rep.raw,
        b"%2\r\n$7\r\nmatches\r\n*1\r\n*2\r\n*2\r\n:4\r\n:7\r\n*2\r\n:5\r\n:8\r\n$3\r\nlen\r\n:6\r\n"
    );
    assert_eq!(raw(&mut r, &["GET", "missing"]), b"_\r\n");
}

#[test]
fn hostile_arguments_do_not_break_the_server() {
    let (_p, mut c, mut r) = setup();
    ok(&mut c, &["SET", "s", "abc"]);
    let extremes = [
        "-9223372036854775808",
        "9223372036854775807",
        "-1",
        "0",
        "4294967295",
        "#9223372036854775807",
    ];
    for a in extremes {
        for b in extremes {
            for line in [
                vec!["GETRANGE", "s", a, b],
                vec!["BITCOUNT", "s", a, b],
                vec!["BITCOUNT", "s", a, b, "BIT"],
                vec!["BITPOS", "s", "0", a, b, "BIT"],
                vec!["BITPOS", "s", "1", a, b],
                vec!["BITFIELD", "s", "GET", "i64", a],
                vec!["BITFIELD_RO", "s", "GET", "u1", b],
                vec!["LCS", "s", "s", "IDX", "MINMATCHLEN", a],
                vec!["SETRANGE", "s", a, ""],
            ] {
                let rep = r.call(&line).expect("reply");
                assert!(rep.kind != b'-' || rep.raw.starts_with(b"-ERR"), "{line:?}");
            }
        }
    }
    assert_eq!(get(&mut c, "s").as_deref(), Some(&b"abc"[..]));
    assert_eq!(raw(&mut r, &["PING"]), b"+PONG\r\n");
}
