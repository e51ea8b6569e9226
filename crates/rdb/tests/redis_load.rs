//! The Writer against real redis-server 7.0: files written here must pass redis-check-rdb,
//! load into redis-server, and hold exactly the values written (and read back the same
//! with the Reader), under default and non-default encoding thresholds.

mod common;

use bytes::Bytes;
use common::samples::samples;
use common::{assert_file_matches_server, check_rdb, expire_ms, fetch, Redis, TempDir};
use std::path::Path;
use strata_rdb::{AuxFields, KeyMeta, RdbValue, ReplAux, WriteOptions, Writer};

const LIBRARY: &str =
    "#!lua name=written\nredis.register_function('seven', function() return 7 end)";

fn write_samples(path: &Path, opts: WriteOptions) -> Vec<(Bytes, RdbValue, KeyMeta)> {
    let all = samples();
    let f = std::fs::File::create(path).expect("create");
    let mut w = Writer::new(f, opts).expect("header");
    w.standard_aux(&AuxFields {
        redis_ver: "7.0.15",
        ctime: 1_700_000_000,
        used_mem: 1 << 20,
        repl: Some(ReplAux {
            stream_db: 0,
            repl_id: "0123456789012345678901234567890123456789",
            offset: 7,
        }),
        aof_base: false,
    })
    .expect("aux");
    w.aux(b"strata-note", b"written by the strata-rdb tests")
        .expect("aux");
    w.function(LIBRARY.as_bytes()).expect("function");
    let expiring = all.iter().filter(|s| s.2.expire_ms.is_some()).count() as u64;
    w.select_db(0, all.len() as u64, expiring).expect("select");
    for (k, v, m) in &all {
        w.key(k, v, m).expect("key");
    }
    w.select_db(7, 1, 0).expect("select");
    w.key(
        b"elsewhere",
        &RdbValue::List(vec!["x"].into()),
        &KeyMeta::default(),
    )
    .expect("key");
    w.finish().expect("finish");
    all
}

fn encoding(con: &mut redis::Connection, key: &str) -> String {
    redis::cmd("OBJECT")
        .arg("ENCODING")
        .arg(key)
        .query(con)
        .expect("OBJECT ENCODING")
}

fn assert_loaded(r: &Redis, path: &Path, all: &[(Bytes, RdbValue, KeyMeta)]) {
    let mut con = r.con();
    for (k, v, m) in all {
        let got = fetch(&mut con, k).unwrap_or_else(|| panic!("{k:?} missing"));
        assert!(
            got == v.clone().normalized(),
            "{k:?}:\nwritten: {v:?}\nloaded:  {got:?}"
        );
        assert_eq!(expire_ms(&mut con, k), m.expire_ms, "{k:?}");
    }
    assert_eq!(assert_file_matches_server(path, &mut con), all.len() + 1);
    let code: redis::Value = redis::cmd("FUNCTION")
        .arg("LIST")
        .arg("WITHCODE")
        .query(&mut con)
        .expect("FUNCTION LIST");
    assert!(
        format!("{code:?}").contains("seven"),
        "library not loaded: {code:?}"
    );
    let seven: i64 = redis::cmd("FCALL")
        .arg("seven")
        .arg(0)
        .query(&mut con)
        .expect("FCALL");
    assert_eq!(seven, 7);
}

#[test]
fn redis_loads_what_the_writer_writes() {
    for compression in [true, false] {
        let dir = TempDir::new("load");
        let path = dir.path().join("dump.rdb");
        let all = write_samples(
            &path,
            WriteOptions {
                compression,
                ..WriteOptions::default()
            },
        );
        check_rdb(&path);
        let r = Redis::start(dir.path(), &[]);
        assert_loaded(&r, &path, &all);
        let mut con = r.con();
        for (key, enc) in [
            ("hash:small", "listpack"),
            ("hash:long-value", "hashtable"),
            ("hash:large", "hashtable"),
            ("set:intset", "intset"),
            ("set:intset16", "intset"),
            ("set:big-ints", "hashtable"),
            ("set:strings", "hashtable"),
            ("zset:small", "listpack"),
            ("zset:long-member", "skiplist"),
            ("zset:large", "skiplist"),
            ("list:nodes", "quicklist"),
        ] {
            assert_eq!(encoding(&mut con, key), enc, "{key}");
        }
    }
}

#[test]
fn thresholds_choose_the_encodings_redis_would() {
    let opts = WriteOptions {
        hash_max_listpack_entries: 1000,
        hash_max_listpack_value: 100,
        zset_max_listpack_entries: 2,
        zset_max_listpack_value: 10,
        set_max_intset_entries: 5,
        list_max_listpack_size: 3,
        stream_node_max_bytes: 0,
        stream_node_max_entries: 7,
        ..WriteOptions::default()
    };
    let dir = TempDir::new("thresholds");
    let path = dir.path().join("dump.rdb");
    let all = write_samples(&path, opts);
    check_rdb(&path);
    let r = Redis::start(
        dir.path(),
        &[
            "--hash-max-listpack-entries",
            "1000",
            "--hash-max-listpack-value",
            "100",
            "--zset-max-listpack-entries",
            "2",
            "--zset-max-listpack-value",
            "10",
            "--set-max-intset-entries",
            "5",
            "--list-max-listpack-size",
            "3",
        ],
    );
    assert_loaded(&r, &path, &all);
    let mut con = r.con();
    for (key, enc) in [
        ("hash:small", "listpack"),
        ("hash:long-value", "listpack"),
        ("hash:large", "listpack"),
        ("set:intset", "hashtable"),
        ("zset:ties", "skiplist"),
    ] {
        assert_eq!(encoding(&mut con, key), enc, "{key}");
    }
}

#[test]
fn redis_applies_written_lru_and_lfu_attributes() {
    for (policy, meta) in [
        (
            "allkeys-lfu",
            KeyMeta {
                lfu_freq: Some(200),
                ..KeyMeta::default()
            },
        ),
        (
            "allkeys-lru",
            KeyMeta {
                idle_secs: Some(5000),
                ..KeyMeta::default()
            },
        ),
    ] {
        let dir = TempDir::new("attrs");
        let path = dir.path().join("dump.rdb");
        let mut w = Writer::new(
            std::fs::File::create(&path).expect("create"),
            WriteOptions::default(),
        )
        .expect("w");
        w.select_db(0, 1, 0).expect("select");
        w.key(b"k", &RdbValue::String(Bytes::from_static(b"v")), &meta)
            .expect("key");
        w.finish().expect("finish");
        check_rdb(&path);
        let r = Redis::start(dir.path(), &["--maxmemory-policy", policy]);
        let mut con = r.con();
        if let Some(f) = meta.lfu_freq {
            let got: i64 = redis::cmd("OBJECT")
                .arg("FREQ")
                .arg("k")
                .query(&mut con)
                .expect("FREQ");
            assert_eq!(got, f as i64);
        } else {
            let got: i64 = redis::cmd("OBJECT")
                .arg("IDLETIME")
                .arg("k")
                .query(&mut con)
                .expect("IDLETIME");
            assert!((5000..5010).contains(&got), "idle {got}");
        }
    }
}

#[test]
fn a_file_without_checksum_loads() {
    let dir = TempDir::new("nocrc");
    let path = dir.path().join("dump.rdb");
    let all = write_samples(
        &path,
        WriteOptions {
            checksum: false,
            ..WriteOptions::default()
        },
    );
    let bytes = std::fs::read(&path).expect("read");
    assert_eq!(&bytes[bytes.len() - 8..], &[0u8; 8]);
    check_rdb(&path);
    let r = Redis::start(dir.path(), &[]);
    assert_loaded(&r, &path, &all);
}
