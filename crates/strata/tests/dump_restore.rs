//! DUMP and RESTORE against real redis-server 7.0: payloads cross both ways for every
//! type and encoding (values and encodings compared), RESTORE's options, replies and
//! errors are Redis's, TTLs are journaled in their absolute form, and a corpus of
//! damaged payloads is refused whole, never half restored.

mod common;
mod rdb_common;

use common::{encode_command, redis, serve_in, strata, temp_dir, RawReply, RespConn};
use rdb_common::codec::fetch;
use rdb_common::codec::fixtures::seal;
use rdb_common::{dump_all, populate};
use std::io::Write;

fn dump(con: &mut ::redis::Connection, key: &[u8]) -> Option<Vec<u8>> {
    ::redis::cmd("DUMP").arg(key).query(con).expect("DUMP")
}

fn restore(
    con: &mut ::redis::Connection,
    key: &[u8],
    ttl: i64,
    p: &[u8],
    opts: &[&str],
) -> Result<(), String> {
    let mut c = ::redis::cmd("RESTORE");
    c.arg(key).arg(ttl).arg(p);
    for o in opts {
        c.arg(*o);
    }
    c.query::<()>(con).map_err(|e| e.to_string())
}

fn encoding(con: &mut ::redis::Connection, key: &[u8]) -> String {
    ::redis::cmd("OBJECT")
        .arg("ENCODING")
        .arg(key)
        .query(con)
        .expect("OBJECT ENCODING")
}

/// redis-server's payloads of every sample restore into Strata with the same value and
/// encoding; Strata's payloads of those keys restore into redis-server with the same value
/// again, streams included.
#[test]
fn payloads_cross_both_ways() {
    let r = redis(&[]);
    let s = strata(&[]);
    let (mut rc, mut sc) = (r.client(), s.client());
    populate(&mut rc, true);
    let mut n = 0;
    for (db, key, value, _) in dump_all(&mut rc, true) {
        if db != 0 {
            continue;
        }
        let theirs = dump(&mut rc, &key).expect("exists");
        restore(&mut sc, &key, 0, &theirs, &[]).unwrap_or_else(|e| panic!("{key:?}: {e}"));
        let ours = dump(&mut sc, &key).expect("restored");
        let back = [b"back:", &key[..]].concat();
        restore(&mut rc, &back, 0, &ours, &[]).unwrap_or_else(|e| panic!("{key:?}: {e}"));
        assert!(
            fetch(&mut rc, &back) == value,
            "{key:?} came back different"
        );
        if value.as_ref().is_some_and(|v| v.type_name() != "stream") {
            assert!(fetch(&mut sc, &key) == value, "{key:?} differs in Strata");
            assert_eq!(encoding(&mut sc, &key), encoding(&mut rc, &key), "{key:?}");
        }
        n += 1;
    }
    assert!(n > 40, "only {n} keys");
    assert_eq!(dump(&mut sc, b"missing"), None);
}

/// Data written into Strata with commands, under small thresholds, restores into
/// redis-server under the same thresholds with the same values and encodings.
#[test]
fn strata_payloads_restore_into_redis_in_the_same_encodings() {
    let small = [
        "--hash-max-listpack-entries",
        "16",
        "--zset-max-listpack-value",
        "10",
        "--set-max-intset-entries",
        "10",
        "--list-max-listpack-size",
        "4",
    ];
    let r = redis(&small);
    let s = strata(&small);
    let (mut rc, mut sc) = (r.client(), s.client());
    populate(&mut sc, false);
    for (db, key, value, _) in dump_all(&mut sc, false) {
        if db != 0 {
            continue;
        }
        let p = dump(&mut sc, &key).expect("exists");
        restore(&mut rc, &key, 0, &p, &[]).unwrap_or_else(|e| panic!("{key:?}: {e}"));
        assert!(fetch(&mut rc, &key) == value, "{key:?}");
        assert_eq!(encoding(&mut rc, &key), encoding(&mut sc, &key), "{key:?}");
    }
}

/// Sends each command to both servers and asserts the same reply (errors included).
fn same_replies(a: &mut RespConn, b: &mut RespConn, cmds: &[Vec<Vec<u8>>]) {
    for c in cmds {
        let (x, y) = (a.call(c).expect("strata"), b.call(c).expect("redis"));
        assert_eq!(
            x.raw,
            y.raw,
            "{:?}: strata {} redis {}",
            c,
            x.shown(),
            y.shown()
        );
    }
}

fn args(parts: &[&[u8]]) -> Vec<Vec<u8>> {
    parts.iter().map(|p| p.to_vec()).collect()
}

#[test]
fn restore_options_replies_and_errors_are_redis_s() {
    let r = redis(&["--sanitize-dump-payload", "yes"]);
    let s = strata(&[]);
    let (mut a, mut b) = (RespConn::new(&s), RespConn::new(&r));
    same_replies(&mut a, &mut b, &[args(&[b"SET", b"foo", b"bar"])]);
    let p = b.call(&[&b"DUMP"[..], b"foo"]).expect("DUMP");
    let payload =
        p.raw[p.raw.iter().position(|&c| c == b'\n').unwrap() + 1..p.raw.len() - 2].to_vec();
    let pl = &payload[..];
    let mut bad_body = payload[..payload.len() - 10].to_vec();
    bad_body[0] = 42;
    let bad_body = seal(bad_body);
    let cases: Vec<Vec<Vec<u8>>> = vec![
        args(&[b"RESTORE", b"foo", b"0", pl]),
        args(&[b"RESTORE", b"foo", b"0", b"..."]),
        args(&[b"RESTORE", b"new", b"0", pl, b"bogus"]),
        args(&[b"RESTORE", b"new", b"-1", pl]),
        args(&[b"RESTORE", b"new", b"abc", pl]),
        args(&[b"RESTORE", b"new", b"0", pl, b"IDLETIME", b"-1"]),
        args(&[b"RESTORE", b"new", b"0", pl, b"IDLETIME", b"x"]),
        args(&[b"RESTORE", b"new", b"0", pl, b"FREQ", b"256"]),
        args(&[
            b"RESTORE",
            b"new",
            b"0",
            pl,
            b"IDLETIME",
            b"1",
            b"FREQ",
            b"1",
        ]),
        args(&[
            b"RESTORE",
            b"new",
            b"0",
            pl,
            b"FREQ",
            b"1",
            b"IDLETIME",
            b"1",
        ]),
        args(&[b"RESTORE", b"new", b"0", pl, b"IDLETIME"]),
        args(&[b"RESTORE", b"new", b"0", b"short"]),
        args(&[b"RESTORE", b"new", b"0", &bad_body]),
        args(&[b"EXISTS", b"new"]),
        args(&[b"RESTORE", b"foo", b"0", pl, b"REPLACE"]),
        args(&[b"RESTORE", b"new", b"0", pl, b"FREQ", b"7", b"REPLACE"]),
        args(&[b"GET", b"new"]),
        // A time already past: nothing is stored; REPLACE still deletes.
        args(&[b"RESTORE", b"foo", b"1000", pl, b"REPLACE", b"ABSTTL"]),
        args(&[b"EXISTS", b"foo"]),
        args(&[b"RESTORE", b"gone", b"1000", pl, b"ABSTTL"]),
        args(&[b"EXISTS", b"gone"]),
        args(&[b"RESTORE", b"far", b"4102444800000", pl, b"ABSTTL"]),
        args(&[b"PEXPIRETIME", b"far"]),
        args(&[b"DUMP", b"nothing"]),
    ];
    same_replies(&mut a, &mut b, &cases);
    // A relative TTL lands within the TTL given.
    for c in [&mut a, &mut b] {
        c.call(&[&b"RESTORE"[..], b"ttl", b"5000", pl])
            .expect("RESTORE");
        let t = c.call(&[&b"PTTL"[..], b"ttl"]).expect("PTTL");
        let t: i64 = String::from_utf8_lossy(&t.raw[1..t.raw.len() - 2])
            .parse()
            .unwrap();
        assert!((4000..=5000).contains(&t), "{} pttl {t}", c.name);
    }
    // IDLETIME under an LRU policy, FREQ under an LFU one.
    let lfu: &[&[u8]] = &[b"CONFIG", b"SET", b"maxmemory-policy", b"allkeys-lfu"];
    let lru: &[&[u8]] = &[b"CONFIG", b"SET", b"maxmemory-policy", b"allkeys-lru"];
    same_replies(
        &mut a,
        &mut b,
        &[
            args(lfu),
            args(&[b"RESTORE", b"hot", b"0", pl, b"FREQ", b"100"]),
            args(&[b"OBJECT", b"FREQ", b"hot"]),
            args(lru),
            args(&[b"RESTORE", b"cold", b"0", pl, b"IDLETIME", b"1000"]),
        ],
    );
    let idle = a
        .call(&[&b"OBJECT"[..], b"IDLETIME", b"cold"])
        .expect("IDLETIME");
    assert!(idle.raw.starts_with(b":100"), "{}", idle.shown());
}

/// RESTORE's effect in the journal: a relative TTL as the absolute time it gave (so a
/// restart keeps the same expiry), a TTL already past as nothing, a replaced key past
/// its TTL as its DEL.
#[test]
fn restore_is_journaled_deterministically() {
    let dir = temp_dir("restore-journal");
    let (payload, at) = {
        let s = serve_in(&dir, &[]);
        let mut c = s.client();
        let _: () = ::redis::cmd("SET").arg("k").arg("v").query(&mut c).unwrap();
        let p = dump(&mut c, b"k").unwrap();
        restore(&mut c, b"t", 100_000, &p, &[]).unwrap();
        restore(&mut c, b"k", 1, &p, &["REPLACE", "ABSTTL"]).unwrap();
        let at: i64 = ::redis::cmd("PEXPIRETIME").arg("t").query(&mut c).unwrap();
        (p, at)
    };
    std::thread::sleep(std::time::Duration::from_millis(20));
    let s = serve_in(&dir, &[]);
    let mut c = s.client();
    let again: i64 = ::redis::cmd("PEXPIRETIME").arg("t").query(&mut c).unwrap();
    assert_eq!(again, at);
    let n: i64 = ::redis::cmd("EXISTS").arg("k").query(&mut c).unwrap();
    assert_eq!(n, 0);
    assert!(!payload.is_empty());
    let _ = std::fs::remove_dir_all(&dir);
}

/// Payloads redis-server made, truncated and with bits flipped (the checksum recomputed,
/// so the damage reaches the decoder), all pipelined into Strata: every one is refused
/// with RESTORE's errors and leaves no key, or is restored whole: then redis-server
/// (deep sanitization on) takes Strata's DUMP of it too.
#[test]
fn damaged_payloads_are_refused_whole() {
    let r = redis(&["--sanitize-dump-payload", "yes"]);
    let s = strata(&[]);
    let (mut rc, mut sc) = (r.client(), s.client());
    populate(&mut rc, true);
    let keys: Vec<Vec<u8>> = ::redis::cmd("KEYS").arg("*").query(&mut rc).unwrap();
    let mut corpus: Vec<Vec<u8>> = Vec::new();
    for k in &keys {
        let p = dump(&mut rc, k).unwrap();
        if p.len() > 2000 {
            continue;
        }
        let body = &p[..p.len() - 10];
        for cut in (1..body.len()).step_by(1 + body.len() / 60) {
            corpus.push(seal(body[..cut].to_vec()));
        }
        for i in 0..body.len() {
            let mut b = body.to_vec();
            b[i] ^= 1 << (i % 8);
            corpus.push(seal(b));
        }
        let mut unsealed = p.clone();
        let last = unsealed.len() - 1;
        unsealed[last] ^= 0x80;
        corpus.push(unsealed);
    }
    assert!(corpus.len() > 2000, "corpus of {}", corpus.len());
    let mut conn = RespConn::new(&s);
    let mut batch = Vec::new();
    for (i, p) in corpus.iter().enumerate() {
        batch.extend_from_slice(&encode_command(&[
            &b"RESTORE"[..],
            format!("c{i}").as_bytes(),
            b"0",
            p,
        ]));
    }
    conn.stream().write_all(&batch).unwrap();
    let replies: Vec<RawReply> = (0..corpus.len())
        .map(|_| conn.read().expect("reply"))
        .collect();
    let (mut refused, mut restored) = (0, 0);
    for (i, reply) in replies.iter().enumerate() {
        let key = format!("c{i}");
        let exists: i64 = ::redis::cmd("EXISTS").arg(&key).query(&mut sc).unwrap();
        match &reply.raw[..] {
            b"+OK\r\n" => {
                assert_eq!(exists, 1, "{key} restored but absent");
                let ours = dump(&mut sc, key.as_bytes()).expect("dump");
                restore(&mut rc, key.as_bytes(), 0, &ours, &["REPLACE"])
                    .unwrap_or_else(|e| panic!("{key}: redis refuses what Strata restored: {e}"));
                restored += 1;
            }
            b"-ERR Bad data format\r\n"
            | b"-ERR DUMP payload version or checksum are wrong\r\n" => {
                assert_eq!(exists, 0, "{key} refused but present");
                refused += 1;
            }
            other => panic!(
                "{key}: unexpected reply {:?}",
                String::from_utf8_lossy(other)
            ),
        }
    }
    assert!(
        refused > corpus.len() / 2,
        "{refused} refused, {restored} restored"
    );
    let pong: String = ::redis::cmd("PING").query(&mut sc).unwrap();
    assert_eq!(pong, "PONG");
}
