//! Shared by the RDB tests (files, DUMP/RESTORE, MIGRATE): strata-rdb's own test helpers
//! (sample values of every type and encoding, reading whole values back over RESP,
//! redis-check-rdb), plus filling a server with them and comparing two servers.
//!
//! Streams are compared between redis-servers only (XINFO STREAM FULL reads them whole):
//! a stream crosses Strata in the tests as import then export, compared where it lands.
#![allow(dead_code)]

#[path = "../../../rdb/tests/common/mod.rs"]
pub mod codec;

use bytes::Bytes;
use codec::samples::{samples, store};
use codec::{expire_ms, fetch};
use std::path::Path;
use std::process::{Command, Output};
use strata_rdb::RdbValue;

pub const LIBRARY: &str =
    "#!lua name=rdblib\nredis.register_function('seven', function() return 7 end)";

/// Stores every sample value (with their expiries), a counter, keys in databases 3 and 9,
/// a function library and, with `streams`, a stream with deleted entries and a consumer
/// group: the same data set on any server, through ordinary commands. Returns the number
/// of keys.
pub fn populate(con: &mut redis::Connection, streams: bool) -> usize {
    let all: Vec<_> = samples()
        .into_iter()
        .filter(|s| streams || s.1.type_name() != "stream")
        .collect();
    for (k, v, meta) in &all {
        store(con, k, v);
        if let Some(t) = meta.expire_ms {
            let _: i64 = redis::cmd("PEXPIREAT")
                .arg(&k[..])
                .arg(t)
                .query(con)
                .expect("PEXPIREAT");
        }
    }
    let run = |con: &mut redis::Connection, args: &[&str]| {
        let mut c = redis::cmd(args[0]);
        for a in &args[1..] {
            c.arg(*a);
        }
        let _: redis::Value = c.query(con).unwrap_or_else(|e| panic!("{args:?}: {e}"));
    };
    run(con, &["INCRBY", "counter", "1000000007"]);
    if streams {
        for i in 1..=300 {
            run(
                con,
                &[
                    "XADD",
                    "stream:holes",
                    &format!("{i}-1"),
                    "k",
                    &i.to_string(),
                ],
            );
        }
        for i in (1..=300).step_by(7) {
            run(con, &["XDEL", "stream:holes", &format!("{i}-1")]);
        }
        run(con, &["XGROUP", "CREATE", "stream:holes", "g", "0"]);
        run(
            con,
            &[
                "XREADGROUP",
                "GROUP",
                "g",
                "c1",
                "COUNT",
                "20",
                "STREAMS",
                "stream:holes",
                ">",
            ],
        );
    }
    run(con, &["SELECT", "3"]);
    run(con, &["SET", "in-three", "3"]);
    run(con, &["RPUSH", "list-three", "a", "b"]);
    run(con, &["SELECT", "9"]);
    run(con, &["HSET", "in-nine", "f", "v"]);
    run(con, &["SELECT", "0"]);
    run(con, &["FUNCTION", "LOAD", "REPLACE", LIBRARY]);
    all.len() + 4 + streams as usize
}

/// Every key of every database of a server: (db, key, value, expiry), values normalized,
/// read with ordinary commands; stream keys only with `streams` (else just their names).
pub fn dump_all(
    con: &mut redis::Connection,
    streams: bool,
) -> Vec<(u64, Bytes, Option<RdbValue>, Option<i64>)> {
    let mut out = Vec::new();
    for db in 0..16u64 {
        let _: () = redis::cmd("SELECT").arg(db).query(con).expect("SELECT");
        let mut keys: Vec<Vec<u8>> = redis::cmd("KEYS").arg("*").query(con).expect("KEYS");
        keys.sort();
        for k in keys {
            let ty: String = redis::cmd("TYPE").arg(&k[..]).query(con).expect("TYPE");
            let v = if ty != "stream" || streams {
                Some(fetch(con, &k).unwrap_or_else(|| panic!("db {db} key {k:?} vanished")))
            } else {
                None
            };
            let t = expire_ms(con, &k);
            out.push((db, Bytes::from(k), v, t));
        }
    }
    let _: () = redis::cmd("SELECT").arg(0).query(con).expect("SELECT");
    out
}

/// Asserts that two servers hold the same keys with the same values (streams: only
/// their names, unless `streams`), expiries and encodings (OBJECT ENCODING), and the same
/// function library. Returns the key count.
pub fn assert_same_data(
    a: &mut redis::Connection,
    b: &mut redis::Connection,
    streams: bool,
) -> usize {
    let da = assert_same_values(a, b, streams);
    for x in &da {
        let enc = |c: &mut redis::Connection| -> String {
            let _: () = redis::cmd("SELECT").arg(x.0).query(c).expect("SELECT");
            redis::cmd("OBJECT")
                .arg("ENCODING")
                .arg(&x.1[..])
                .query(c)
                .expect("OBJECT ENCODING")
        };
        assert_eq!(enc(a), enc(b), "encoding of db {} key {:?}", x.0, x.1);
    }
    for c in [&mut *a, &mut *b] {
        let _: () = redis::cmd("SELECT").arg(0).query(c).expect("SELECT");
        let seven: i64 = redis::cmd("FCALL")
            .arg("seven")
            .arg(0)
            .query(c)
            .expect("FCALL seven");
        assert_eq!(seven, 7);
    }
    da.len()
}

/// Asserts what `assert_same_data` does but encodings (a replica loading an RDB encodes a
/// value as loading it does, not as the commands that built it did). Returns the keys.
pub fn assert_same_values(
    a: &mut redis::Connection,
    b: &mut redis::Connection,
    streams: bool,
) -> Vec<(u64, Bytes, Option<RdbValue>, Option<i64>)> {
    let (da, db) = (dump_all(a, streams), dump_all(b, streams));
    let keys = |d: &[(u64, Bytes, Option<RdbValue>, Option<i64>)]| {
        d.iter().map(|e| (e.0, e.1.clone())).collect::<Vec<_>>()
    };
    assert_eq!(keys(&da), keys(&db), "the two servers hold different keys");
    for (x, y) in da.iter().zip(&db) {
        assert!(x == y, "db {} key {:?}:\n{x:?}\n{y:?}", x.0, x.1);
    }
    // The function libraries (FUNCTION LIST: a read-only replica may not FCALL a function
    // without the no-writes flag).
    let libs = |c: &mut redis::Connection| -> redis::Value {
        let _: () = redis::cmd("SELECT").arg(0).query(c).expect("SELECT");
        redis::cmd("FUNCTION")
            .arg("LIST")
            .arg("WITHCODE")
            .query(c)
            .expect("FUNCTION LIST")
    };
    let la = libs(a);
    assert_ne!(la, redis::Value::Array(vec![]), "no function library");
    assert_eq!(la, libs(b), "function libraries differ");
    da
}

/// The expiry of `key` in database 0 (PEXPIRETIME), None when it has none.
pub fn pexpiretime(con: &mut redis::Connection, key: &[u8]) -> Option<i64> {
    expire_ms(con, key)
}

/// Runs `strata <args>`, returning its output (stdout, stderr, status).
pub fn strata_tool(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_strata"))
        .args(args)
        .output()
        .expect("run strata")
}

/// `strata import FILE --dir DIR [extra...]`; panics with its output unless it succeeds.
pub fn import(file: &Path, dir: &Path, extra: &[&str]) -> String {
    let mut args = vec![
        "import",
        file.to_str().unwrap(),
        "--dir",
        dir.to_str().unwrap(),
    ];
    args.extend_from_slice(extra);
    let out = strata_tool(&args);
    let text = String::from_utf8_lossy(&out.stdout).to_string();
    assert!(
        out.status.success(),
        "strata import failed:\n{text}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    text
}

/// `strata export FILE --dir DIR [extra...]`; panics with its output unless it succeeds.
pub fn export(file: &Path, dir: &Path, extra: &[&str]) -> String {
    let mut args = vec![
        "export",
        file.to_str().unwrap(),
        "--dir",
        dir.to_str().unwrap(),
    ];
    args.extend_from_slice(extra);
    let out = strata_tool(&args);
    let text = String::from_utf8_lossy(&out.stdout).to_string();
    assert!(
        out.status.success(),
        "strata export failed:\n{text}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    text
}
