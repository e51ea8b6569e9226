//! The Reader against files saved by real redis-server 7.0: every type at small and large
//! encodings, expiries, LRU/LFU data, functions, and several save settings. Every key must
//! read back as exactly the value (and expiry) the server reports.

mod common;

use common::samples::{samples, store};
use common::{assert_file_matches_server, read_items, Redis, TempDir};
use strata_rdb::{crc64, Item, RdbValue};

/// Stores every sample (with expiries) plus a few things only commands produce: an
/// integer-encoded counter, a stream with deleted entries, keys in other databases.
fn populate(con: &mut redis::Connection) -> usize {
    let all = samples();
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
    let _: i64 = redis::cmd("INCRBY")
        .arg("counter")
        .arg(1_000_000_007)
        .query(con)
        .expect("INCRBY");
    for i in 1..=300 {
        let _: String = redis::cmd("XADD")
            .arg("stream:holes")
            .arg(format!("{i}-1"))
            .arg("k")
            .arg(i)
            .query(con)
            .expect("XADD");
    }
    for i in (1..=300).step_by(7) {
        let _: i64 = redis::cmd("XDEL")
            .arg("stream:holes")
            .arg(format!("{i}-1"))
            .query(con)
            .expect("XDEL");
    }
    let _: String = redis::cmd("XGROUP")
        .arg("CREATE")
        .arg("stream:holes")
        .arg("g")
        .arg("0")
        .query(con)
        .expect("XGROUP");
    let _: redis::Value = redis::cmd("XREADGROUP")
        .arg("GROUP")
        .arg("g")
        .arg("c1")
        .arg("COUNT")
        .arg(20)
        .arg("STREAMS")
        .arg("stream:holes")
        .arg(">")
        .query(con)
        .expect("XREADGROUP");
    let _: redis::Value = redis::cmd("XREADGROUP")
        .arg("GROUP")
        .arg("g")
        .arg("c2")
        .arg("COUNT")
        .arg(5)
        .arg("STREAMS")
        .arg("stream:holes")
        .arg(">")
        .query(con)
        .expect("XREADGROUP");
    let _: i64 = redis::cmd("XACK")
        .arg("stream:holes")
        .arg("g")
        .arg("2-1")
        .arg("3-1")
        .query(con)
        .expect("XACK");
    for db in [1, 15] {
        let _: () = redis::cmd("SELECT").arg(db).query(con).expect("SELECT");
        let _: () = redis::cmd("SET")
            .arg("in-db")
            .arg(db)
            .query(con)
            .expect("SET");
        let _: i64 = redis::cmd("RPUSH")
            .arg("l")
            .arg("a")
            .arg(db)
            .query(con)
            .expect("RPUSH");
        let _: i64 = redis::cmd("EXPIRE")
            .arg("l")
            .arg(100_000)
            .query(con)
            .expect("EXPIRE");
    }
    let _: () = redis::cmd("SELECT").arg(0).query(con).expect("SELECT");
    all.len() + 2 + 4
}

#[test]
fn reads_every_type_and_encoding_redis_saves() {
    let dir = TempDir::new("files");
    let r = Redis::start(dir.path(), &[]);
    let mut con = r.con();
    let expected = populate(&mut con);
    let path = r.save();
    assert_eq!(assert_file_matches_server(&path, &mut con), expected);

    // Header records in Redis's order, with the server's own version.
    let items = read_items(&path);
    let info: String = redis::cmd("INFO")
        .arg("server")
        .query(&mut con)
        .expect("INFO");
    let version = info
        .lines()
        .find_map(|l| l.strip_prefix("redis_version:"))
        .expect("redis_version")
        .trim()
        .to_string();
    let aux: Vec<(String, String)> = items
        .iter()
        .take_while(|i| matches!(i, Item::Aux { .. }))
        .map(|i| match i {
            Item::Aux { key, value } => (
                String::from_utf8_lossy(key).to_string(),
                String::from_utf8_lossy(value).to_string(),
            ),
            _ => unreachable!(),
        })
        .collect();
    let names: Vec<&str> = aux.iter().map(|(k, _)| k.as_str()).collect();
    assert_eq!(
        names,
        ["redis-ver", "redis-bits", "ctime", "used-mem", "aof-base"]
    );
    assert_eq!(aux[0].1, version);
    let dbsize: u64 = redis::cmd("DBSIZE").query(&mut con).expect("DBSIZE");
    assert!(items
        .iter()
        .any(|i| matches!(i, Item::ResizeDb { db_size, .. } if *db_size == dbsize)));

    // The reader checked the footer; check it against the CRC64 computed here too.
    let bytes = std::fs::read(&path).expect("read file");
    let (body, footer) = bytes.split_at(bytes.len() - 8);
    assert_eq!(crc64::crc64(body).to_le_bytes(), footer);
}

#[test]
fn reads_saves_under_other_settings() {
    let configs: &[&[&str]] = &[
        &["--rdbcompression", "no", "--rdbchecksum", "no"],
        &[
            "--list-compress-depth",
            "1",
            "--list-max-listpack-size",
            "4",
        ],
        &[
            "--list-max-listpack-size",
            "-5",
            "--hash-max-listpack-entries",
            "1000",
            "--hash-max-listpack-value",
            "100000",
        ],
        &[
            "--hash-max-listpack-entries",
            "0",
            "--zset-max-listpack-entries",
            "0",
            "--set-max-intset-entries",
            "0",
        ],
        &[
            "--stream-node-max-entries",
            "3",
            "--stream-node-max-bytes",
            "0",
        ],
    ];
    for args in configs {
        let dir = TempDir::new("settings");
        let r = Redis::start(dir.path(), args);
        let mut con = r.con();
        let expected = populate(&mut con);
        let path = r.save();
        assert_eq!(
            assert_file_matches_server(&path, &mut con),
            expected,
            "{args:?}"
        );
        if args.contains(&"--rdbchecksum") {
            let mut reader =
                strata_rdb::Reader::new(std::fs::File::open(&path).expect("open")).expect("header");
            while reader.next_item().expect("item").is_some() {}
            assert_eq!(
                reader.stored_checksum(),
                Some(0),
                "checksum off means a zero footer"
            );
        }
    }
}

#[test]
fn reads_plain_list_nodes() {
    let dir = TempDir::new("plain");
    // Uncompressed, so the plain nodes can be spotted in the file below.
    let r = Redis::start(
        dir.path(),
        &["--enable-debug-command", "yes", "--rdbcompression", "no"],
    );
    let mut con = r.con();
    let _: () = redis::cmd("DEBUG")
        .arg("QUICKLIST-PACKED-THRESHOLD")
        .arg(100)
        .query(&mut con)
        .expect("DEBUG");
    let items: Vec<Vec<u8>> = (0..50)
        .map(|i| vec![b'a' + (i % 26) as u8; if i % 3 == 0 { 300 } else { 10 }])
        .collect();
    let mut c = redis::cmd("RPUSH");
    c.arg("mixed");
    for x in &items {
        c.arg(x);
    }
    let _: i64 = c.query(&mut con).expect("RPUSH");
    let path = r.save();
    assert_eq!(assert_file_matches_server(&path, &mut con), 1);
    // The big elements really were plain nodes (container 1) in the file.
    let bytes = std::fs::read(&path).expect("read");
    assert!(
        bytes
            .windows(3)
            .any(|w| w[0] == 1 && w[1] == 0x41 && w[2] == 0x2c),
        "no plain node of 300 bytes"
    );
}

#[test]
fn reads_lru_and_lfu_attributes() {
    for (policy, lfu) in [("allkeys-lfu", true), ("allkeys-lru", false)] {
        let dir = TempDir::new("evict");
        let r = Redis::start(dir.path(), &["--maxmemory-policy", policy]);
        let mut con = r.con();
        for i in 0..20 {
            let _: () = redis::cmd("SET")
                .arg(format!("k{i}"))
                .arg(i)
                .query(&mut con)
                .expect("SET");
            for _ in 0..i * 20 {
                let _: Option<String> = redis::cmd("GET")
                    .arg(format!("k{i}"))
                    .query(&mut con)
                    .expect("GET");
            }
        }
        let path = r.save();
        for item in read_items(&path) {
            let Item::Key(e) = item else { continue };
            if lfu {
                let freq: i64 = redis::cmd("OBJECT")
                    .arg("FREQ")
                    .arg(&e.key[..])
                    .query(&mut con)
                    .expect("OBJECT FREQ");
                let got = e.meta.lfu_freq.expect("FREQ record") as i64;
                assert!(
                    (got - freq).abs() <= 1,
                    "{:?}: file {got}, server {freq}",
                    e.key
                );
                assert_eq!(e.meta.idle_secs, None);
            } else {
                let idle: i64 = redis::cmd("OBJECT")
                    .arg("IDLETIME")
                    .arg(&e.key[..])
                    .query(&mut con)
                    .expect("OBJECT IDLETIME");
                let got = e.meta.idle_secs.expect("IDLE record") as i64;
                assert!(
                    (got - idle).abs() <= 2,
                    "{:?}: file {got}, server {idle}",
                    e.key
                );
                assert_eq!(e.meta.lfu_freq, None);
            }
        }
    }
}

#[test]
fn reads_function_libraries() {
    let dir = TempDir::new("functions");
    let r = Redis::start(dir.path(), &[]);
    let mut con = r.con();
    let code = "#!lua name=mylib\nredis.register_function('answer', function() return 42 end)";
    let _: String = redis::cmd("FUNCTION")
        .arg("LOAD")
        .arg(code)
        .query(&mut con)
        .expect("FUNCTION LOAD");
    let path = r.save();
    let listed: redis::Value = redis::cmd("FUNCTION")
        .arg("LIST")
        .arg("WITHCODE")
        .query(&mut con)
        .expect("FUNCTION LIST");
    let listed = format!("{listed:?}");
    let functions: Vec<_> = read_items(&path)
        .into_iter()
        .filter_map(|i| match i {
            Item::Function(c) => Some(c),
            _ => None,
        })
        .collect();
    assert_eq!(functions.len(), 1);
    assert_eq!(&functions[0][..], code.as_bytes());
    assert!(listed.contains("mylib"));
    // The value model is untouched by functions: no keys.
    assert!(!read_items(&path)
        .iter()
        .any(|i| matches!(i, Item::Key(e) if matches!(e.value, RdbValue::String(_)))));
}
