//! The expiry commands against the real binary: EXPIRE PEXPIRE EXPIREAT PEXPIREAT (and
//! their NX XX GT LT options) TTL PTTL EXPIRETIME PEXPIRETIME PERSIST, and keys expiring
//! lazily and actively. Expected values are computed here from the clock.

mod common;

use common::{err, get, int, keys_of, now_ms, ok, setup};
use std::collections::BTreeSet;
use std::time::Duration;

#[test]
fn expire_sets_and_reports_ttl() {
    let (_p, mut c, _r) = setup();
    ok(&mut c, &["SET", "k", "v"]);
    assert_eq!(int(&mut c, &["TTL", "k"]), -1);
    assert_eq!(int(&mut c, &["PTTL", "k"]), -1);
    assert_eq!(int(&mut c, &["EXPIRETIME", "k"]), -1);
    assert_eq!(int(&mut c, &["PEXPIRETIME", "k"]), -1);
    assert_eq!(int(&mut c, &["TTL", "nokey"]), -2);
    assert_eq!(int(&mut c, &["PTTL", "nokey"]), -2);
    assert_eq!(int(&mut c, &["EXPIRETIME", "nokey"]), -2);
    assert_eq!(int(&mut c, &["PEXPIRETIME", "nokey"]), -2);

    let before = now_ms();
    assert_eq!(int(&mut c, &["EXPIRE", "k", "100"]), 1);
    let after = now_ms();
    assert_eq!(int(&mut c, &["TTL", "k"]), 100);
    let pttl = int(&mut c, &["PTTL", "k"]);
    assert!(pttl > 99_000 && pttl <= 100_000, "PTTL {pttl}");
    let at = int(&mut c, &["PEXPIRETIME", "k"]);
    assert!(
        at >= before + 100_000 && at <= after + 100_000,
        "PEXPIRETIME {at}"
    );
    assert_eq!(int(&mut c, &["EXPIRETIME", "k"]), (at + 500) / 1000);

    assert_eq!(int(&mut c, &["PEXPIRE", "k", "5000"]), 1);
    let pttl = int(&mut c, &["PTTL", "k"]);
    assert!(pttl > 4000 && pttl <= 5000, "PTTL {pttl}");
    assert_eq!(int(&mut c, &["TTL", "k"]), 5);

    let when = now_ms() / 1000 + 1000;
    assert_eq!(int(&mut c, &["EXPIREAT", "k", &when.to_string()]), 1);
    assert_eq!(int(&mut c, &["EXPIRETIME", "k"]), when);
    assert_eq!(int(&mut c, &["PEXPIRETIME", "k"]), when * 1000);
    let ttl = int(&mut c, &["TTL", "k"]);
    assert!((999..=1000).contains(&ttl), "TTL {ttl}");
    let pwhen = now_ms() + 123_456;
    assert_eq!(int(&mut c, &["PEXPIREAT", "k", &pwhen.to_string()]), 1);
    assert_eq!(int(&mut c, &["PEXPIRETIME", "k"]), pwhen);

    // Missing keys.
    for name in ["EXPIRE", "PEXPIRE", "EXPIREAT", "PEXPIREAT"] {
        assert_eq!(int(&mut c, &[name, "nokey", "100"]), 0);
    }
    assert_eq!(int(&mut c, &["EXISTS", "nokey"]), 0);

    // PERSIST
    assert_eq!(int(&mut c, &["PERSIST", "k"]), 1);
    assert_eq!(int(&mut c, &["TTL", "k"]), -1);
    assert_eq!(int(&mut c, &["PERSIST", "k"]), 0);
    assert_eq!(int(&mut c, &["PERSIST", "nokey"]), 0);
    assert_eq!(get(&mut c, "k").as_deref(), Some(&b"v"[..]));
}

#[test]
fn expire_in_the_past_deletes() {
    let (_p, mut c, _r) = setup();
    let past_s = (now_ms() / 1000 - 10).to_string();
    let past_ms = (now_ms() - 1).to_string();
    for args in [
        vec!["EXPIRE", "k", "0"],
        vec!["EXPIRE", "k", "-100"],
        vec!["PEXPIRE", "k", "0"],
        vec!["PEXPIRE", "k", "-1"],
        vec!["EXPIREAT", "k", &past_s],
        vec!["PEXPIREAT", "k", &past_ms],
        vec!["EXPIREAT", "k", "-9223372036854775"],
        vec!["EXPIRE", "k", "-9223372036854775"],
        vec!["PEXPIREAT", "k", "-9223372036854775808"],
    ] {
        ok(&mut c, &["SET", "k", "v"]);
        assert_eq!(int(&mut c, &args), 1, "{args:?}");
        assert_eq!(int(&mut c, &["EXISTS", "k"]), 0, "{args:?}");
        assert_eq!(int(&mut c, &["DBSIZE"]), 0, "{args:?}");
    }
}

#[test]
fn expire_options() {
    let (_p, mut c, mut r) = setup();
    ok(&mut c, &["SET", "k", "v"]);
    // No expiry yet: XX and GT refuse, NX and LT accept.
    assert_eq!(int(&mut c, &["EXPIRE", "k", "100", "XX"]), 0);
    assert_eq!(int(&mut c, &["EXPIRE", "k", "100", "GT"]), 0);
    assert_eq!(int(&mut c, &["TTL", "k"]), -1);
    assert_eq!(int(&mut c, &["EXPIRE", "k", "100", "NX"]), 1);
    assert_eq!(int(&mut c, &["TTL", "k"]), 100);
    assert_eq!(int(&mut c, &["EXPIRE", "k", "200", "nx"]), 0);
    assert_eq!(int(&mut c, &["EXPIRE", "k", "200", "xx"]), 1);
    assert_eq!(int(&mut c, &["TTL", "k"]), 200);
    assert_eq!(int(&mut c, &["EXPIRE", "k", "100", "GT"]), 0);
    assert_eq!(int(&mut c, &["EXPIRE", "k", "300", "GT"]), 1);
    assert_eq!(int(&mut c, &["EXPIRE", "k", "400", "LT"]), 0);
    assert_eq!(int(&mut c, &["EXPIRE", "k", "50", "LT", "XX"]), 1);
    assert_eq!(int(&mut c, &["TTL", "k"]), 50);
    assert_eq!(int(&mut c, &["PEXPIRE", "k", "50000", "LT"]), 0);
    ok(&mut c, &["SET", "j", "v"]);
    assert_eq!(int(&mut c, &["EXPIRE", "j", "100", "LT"]), 1);
    assert_eq!(int(&mut c, &["TTL", "j"]), 100);
    // An option that refuses keeps the key even when the time is in the past.
    ok(&mut c, &["SET", "p", "v"]);
    assert_eq!(int(&mut c, &["EXPIRE", "p", "-1", "XX"]), 0);
    assert_eq!(int(&mut c, &["EXISTS", "p"]), 1);

    for (args, e) in [
        (
            vec!["EXPIRE", "k", "10", "FOO"],
            "ERR Unsupported option FOO",
        ),
        (
            vec!["EXPIRE", "k", "10", "NX", "XX"],
            "ERR NX and XX, GT or LT options at the same time are not compatible",
        ),
        (
            vec!["EXPIRE", "k", "10", "NX", "GT"],
            "ERR NX and XX, GT or LT options at the same time are not compatible",
        ),
        (
            vec!["PEXPIRE", "k", "10", "lt", "nx"],
            "ERR NX and XX, GT or LT options at the same time are not compatible",
        ),
        (
            vec!["EXPIREAT", "k", "10", "GT", "LT"],
            "ERR GT and LT options at the same time are not compatible",
        ),
        (
            vec!["EXPIRE", "k", "abc", "NX", "XX"],
            "ERR NX and XX, GT or LT options at the same time are not compatible",
        ),
        (
            vec!["EXPIRE", "k", "abc"],
            "ERR value is not an integer or out of range",
        ),
        (
            vec!["EXPIRE", "k", "1.5"],
            "ERR value is not an integer or out of range",
        ),
        (
            vec!["EXPIRE", "k", "9223372036854775807"],
            "ERR invalid expire time in 'expire' command",
        ),
        (
            vec!["EXPIRE", "k", "9223372036854775"],
            "ERR invalid expire time in 'expire' command",
        ),
        (
            vec!["EXPIRE", "k", "-9223372036854776"],
            "ERR invalid expire time in 'expire' command",
        ),
        (
            vec!["PEXPIRE", "k", "9223372036854775807"],
            "ERR invalid expire time in 'pexpire' command",
        ),
        (
            vec!["EXPIREAT", "k", "9223372036854775807"],
            "ERR invalid expire time in 'expireat' command",
        ),
        (
            vec!["expireat", "k", "9223372036854776"],
            "ERR invalid expire time in 'expireat' command",
        ),
        (
            vec!["EXPIRE", "k"],
            "ERR wrong number of arguments for 'expire' command",
        ),
        (
            vec!["PERSIST"],
            "ERR wrong number of arguments for 'persist' command",
        ),
        (
            vec!["TTL", "a", "b"],
            "ERR wrong number of arguments for 'ttl' command",
        ),
    ] {
        assert_eq!(err(&mut r, &args), e, "{args:?}");
    }
    // The errors changed nothing.
    assert_eq!(int(&mut c, &["TTL", "k"]), 50);

    // The largest absolute time is accepted, and reported without overflow.
    assert_eq!(int(&mut c, &["PEXPIREAT", "k", "9223372036854775807"]), 1);
    assert_eq!(int(&mut c, &["PEXPIRETIME", "k"]), i64::MAX);
    assert_eq!(int(&mut c, &["EXPIRETIME", "k"]), 9_223_372_036_854_776);
    let ttl = int(&mut c, &["TTL", "k"]);
    let expected = (i64::MAX - now_ms()) / 1000;
    assert!((ttl - expected).abs() <= 2, "TTL {ttl} vs {expected}");
}

/// A key given PEXPIRE 100 is gone after 200 ms: for GET, and for DBSIZE and KEYS without
/// anyone touching it (the active expiry cycle runs 10 times a second).
#[test]
fn keys_expire_lazily_and_actively() {
    let (_p, mut c, _r) = setup();
    ok(&mut c, &["SET", "lazy", "v"]);
    assert_eq!(int(&mut c, &["PEXPIRE", "lazy", "100"]), 1);
    std::thread::sleep(Duration::from_millis(200));
    assert_eq!(get(&mut c, "lazy"), None);

    ok(&mut c, &["SET", "stay", "v"]);
    // One round trip, so that all 50 exist when DBSIZE looks, however slow the machine
    // (one at a time, CI took longer than their TTL).
    let mut pipe = redis::pipe();
    for i in 0..50 {
        let k = format!("active:{i}");
        pipe.cmd("SET").arg(&k).arg("v").ignore();
        pipe.cmd("PEXPIRE").arg(&k).arg(300).ignore();
    }
    pipe.cmd("DBSIZE");
    let (dbsize,): (i64,) = pipe.query(&mut c).expect("the pipeline");
    assert_eq!(dbsize, 51);
    // The active cycle runs every 100 ms (hz 10), so the last key can outlive its TTL by
    // up to a period on a busy machine. DBSIZE touches no key: only the cycle can shrink it.
    let deadline = std::time::Instant::now() + Duration::from_secs(3);
    std::thread::sleep(Duration::from_millis(300));
    while int(&mut c, &["DBSIZE"]) != 1 && std::time::Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert_eq!(int(&mut c, &["DBSIZE"]), 1);
    assert_eq!(keys_of(&mut c, "*"), BTreeSet::from(["stay".to_string()]));

    // Expired keys are also gone for EXISTS, TTL and the write commands.
    ok(&mut c, &["SET", "e", "v", "PX", "50"]);
    std::thread::sleep(Duration::from_millis(100));
    assert_eq!(int(&mut c, &["EXISTS", "e"]), 0);
    assert_eq!(int(&mut c, &["TTL", "e"]), -2);
    assert_eq!(int(&mut c, &["EXPIRE", "e", "100"]), 0);
    assert_eq!(int(&mut c, &["PERSIST", "e"]), 0);
}
