//! DUMP payloads both ways with real redis-server 7.0: DUMP from redis restores to the
//! server's value, `dump` output is accepted by RESTORE (with deep sanitization on), and
//! refusals match Redis's own replies.

mod common;

use bytes::Bytes;
use common::fixtures::seal_version;
use common::samples::{samples, store};
use common::{fetch, Redis, TempDir};
use strata_rdb::{crc64, dump, restore, Dumper, PayloadError, RdbValue, WriteOptions};

fn redis_dump(con: &mut redis::Connection, key: &[u8]) -> Vec<u8> {
    redis::cmd("DUMP").arg(key).query(con).expect("DUMP")
}

fn redis_restore(con: &mut redis::Connection, key: &[u8], payload: &[u8]) -> Result<(), String> {
    redis::cmd("RESTORE")
        .arg(key)
        .arg(0)
        .arg(payload)
        .arg("REPLACE")
        .query::<()>(con)
        .map_err(|e| e.to_string())
}

#[test]
fn payloads_dumped_by_redis_restore_to_the_servers_values() {
    let dir = TempDir::new("dump");
    let r = Redis::start(dir.path(), &[]);
    let mut con = r.con();
    let all = samples();
    for (k, v, _) in &all {
        store(&mut con, k, v);
    }
    for (k, _, _) in &all {
        let payload = redis_dump(&mut con, k);
        // The footer: RDB version 10, then the CRC64 redis computed over the rest.
        let n = payload.len();
        assert_eq!(&payload[n - 10..n - 8], &10u16.to_le_bytes());
        assert_eq!(
            &payload[n - 8..],
            &crc64::crc64(&payload[..n - 8]).to_le_bytes(),
            "{k:?}"
        );
        let got = restore(&payload)
            .unwrap_or_else(|e| panic!("{k:?}: {e}: {:?}", std::error::Error::source(&e)));
        assert!(
            got.clone().normalized() == fetch(&mut con, k).expect("exists"),
            "{k:?}"
        );
    }
}

#[test]
fn redis_restores_what_dump_makes() {
    let dir = TempDir::new("restore");
    let r = Redis::start(dir.path(), &["--sanitize-dump-payload", "yes"]);
    let mut con = r.con();
    let small = WriteOptions {
        compression: false,
        hash_max_listpack_entries: 1,
        zset_max_listpack_entries: 1,
        set_max_intset_entries: 1,
        list_max_listpack_size: 1,
        stream_node_max_entries: 2,
        ..WriteOptions::default()
    };
    for opts in [WriteOptions::default(), small] {
        let mut dumper = Dumper::new(opts.clone());
        for (k, v, _) in samples() {
            let payload = dumper.dump(&v);
            redis_restore(&mut con, &k, &payload).unwrap_or_else(|e| panic!("{k:?} {opts:?}: {e}"));
            assert!(
                fetch(&mut con, &k).expect("restored") == v.clone().normalized(),
                "{k:?}"
            );
            // And the payload decodes here to the same value.
            assert!(restore(&payload).expect("own payload").normalized() == v.normalized());
        }
    }
}

#[test]
fn lzf_strings_cross_both_ways() {
    let dir = TempDir::new("lzf");
    let r = Redis::start(dir.path(), &[]);
    let mut con = r.con();
    let text: Vec<u8> = b"lorem ipsum dolor sit amet, ".repeat(200);
    let _: () = redis::cmd("SET")
        .arg("t")
        .arg(&text)
        .query(&mut con)
        .expect("SET");
    let theirs = redis_dump(&mut con, b"t");
    assert_eq!(theirs[1], 0xc3, "redis compressed it");
    assert_eq!(
        restore(&theirs).expect("restore"),
        RdbValue::String(Bytes::from(text.clone()))
    );
    let ours = dump(&RdbValue::String(Bytes::from(text.clone())));
    assert_eq!(ours[1], 0xc3, "compressed here too");
    assert!(ours.len() < text.len() / 4);
    redis_restore(&mut con, b"u", &ours).expect("RESTORE");
    let back: Vec<u8> = redis::cmd("GET").arg("u").query(&mut con).expect("GET");
    assert_eq!(back, text);
}

#[test]
fn refusals_match_redis_replies() {
    let dir = TempDir::new("refuse");
    let r = Redis::start(dir.path(), &["--sanitize-dump-payload", "yes"]);
    let mut con = r.con();
    let good = dump(&RdbValue::Hash(vec![("f", "v")].into()));
    let body = good[..good.len() - 10].to_vec();
    let mut bad_crc = good.clone();
    let last = bad_crc.len() - 1;
    bad_crc[last] ^= 1;
    // A hash listpack of f=v, g=v with the "g" turned into a second "f".
    let two = dump(&RdbValue::Hash(vec![("f", "v"), ("g", "v")].into()));
    let mut dup_field = two[..two.len() - 10].to_vec();
    let g = dup_field.iter().rposition(|&b| b == b'g').expect("g");
    dup_field[g] = b'f';
    let cases: Vec<(&str, Vec<u8>, bool)> = vec![
        ("short", vec![1, 2, 3], true),
        ("newer version", seal_version(body.clone(), 11), true),
        ("bad crc", bad_crc, true),
        ("unknown type", seal_version(vec![8, 0], 10), false),
        (
            "truncated value",
            seal_version(body[..body.len() - 2].to_vec(), 10),
            false,
        ),
        ("duplicate field", seal_version(dup_field, 10), false),
        ("empty set", seal_version(vec![2, 0], 10), false),
    ];
    for (what, payload, footer) in cases {
        let ours = restore(&payload).expect_err(what);
        assert_eq!(
            matches!(ours, PayloadError::VersionOrChecksum),
            footer,
            "{what}: {ours:?}"
        );
        let theirs = redis_restore(&mut con, b"k", &payload).expect_err(what);
        assert!(
            theirs.contains(&ours.to_string()),
            "{what}: redis said {theirs:?}, we say {ours}"
        );
    }
    // An older version is fine.
    assert!(restore(&seal_version(body, 9)).is_ok());
}

const LIB_A: &str = "#!lua name=liba\nredis.register_function('fa', function() return 'a' end)";
const LIB_B: &str = "#!lua name=libb\nredis.register_function{function_name='fb', \
                     callback=function() return 'b' end, flags={'no-writes'}}";

fn function_restore(con: &mut redis::Connection, payload: &[u8]) -> Result<(), String> {
    redis::cmd("FUNCTION")
        .arg("RESTORE")
        .arg(payload)
        .arg("FLUSH")
        .query::<()>(con)
        .map_err(|e| e.to_string())
}

#[test]
fn function_payloads_cross_both_ways() {
    let dir = TempDir::new("functions");
    let r = Redis::start(dir.path(), &[]);
    let mut con = r.con();
    for lib in [LIB_A, LIB_B] {
        let _: String = redis::cmd("FUNCTION")
            .arg("LOAD")
            .arg(lib)
            .query(&mut con)
            .expect("FUNCTION LOAD");
    }
    let theirs: Vec<u8> = redis::cmd("FUNCTION").arg("DUMP").query(&mut con).unwrap();
    let mut codes = strata_rdb::restore_functions(&theirs).expect("redis's payload");
    codes.sort();
    assert_eq!(codes, [Bytes::from(LIB_A), Bytes::from(LIB_B)]);
    let ours = strata_rdb::dump_functions([LIB_B.as_bytes(), LIB_A.as_bytes()]);
    let _: () = redis::cmd("FUNCTION").arg("FLUSH").query(&mut con).unwrap();
    function_restore(&mut con, &ours).expect("redis takes ours");
    let b: String = redis::cmd("FCALL")
        .arg("fb")
        .arg(0)
        .query(&mut con)
        .unwrap();
    assert_eq!(b, "b");
    assert_eq!(
        strata_rdb::restore_functions(&strata_rdb::dump_functions([])).unwrap(),
        Vec::<Bytes>::new()
    );

    // Refusals: Redis's texts, for the same payloads.
    let mut bad_crc = ours.clone();
    let last = bad_crc.len() - 1;
    bad_crc[last] ^= 1;
    let body = ours[..ours.len() - 10].to_vec();
    let cases: Vec<(&str, Vec<u8>)> = vec![
        ("bad crc", bad_crc),
        ("short", vec![0; 5]),
        (
            "a value, not a function",
            seal_version(vec![0, 1, b'x'], 10),
        ),
        (
            "cut library",
            seal_version(body[..body.len() - 20].to_vec(), 10),
        ),
    ];
    for (what, payload) in cases {
        let err = strata_rdb::restore_functions(&payload).expect_err(what);
        let text = match &err {
            PayloadError::VersionOrChecksum => err.to_string(),
            PayloadError::BadData(e) => e.kind().to_string(),
        };
        let theirs = function_restore(&mut con, &payload).expect_err(what);
        assert!(
            theirs.contains(&text),
            "{what}: redis said {theirs:?}, we say {text}"
        );
    }
}

/// The release candidates' record (opcode 246: name, engine, description, code) is
/// read as the code with its shebang line, as Redis reads it.
#[test]
fn pre_release_function_records_are_translated() {
    let mut body = vec![246u8];
    for s in [&b"old"[..], b"LUA"] {
        body.push(s.len() as u8);
        body.extend_from_slice(s);
    }
    body.push(1);
    body.push(4);
    body.extend_from_slice(b"desc");
    let code = b"redis.register_function('fo', function() return 1 end)";
    body.push(code.len() as u8);
    body.extend_from_slice(code);
    let codes = strata_rdb::restore_functions(&seal_version(body, 10)).expect("decodes");
    let mut want = b"#!LUA name=old\n".to_vec();
    want.extend_from_slice(code);
    assert_eq!(codes, [Bytes::from(want)]);
}
