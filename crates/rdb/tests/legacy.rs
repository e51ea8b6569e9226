//! Encodings Redis 7.0 reads but no longer writes (zipmap, ziplists, quicklists of
//! ziplists, text scores, plain lists, type-15 streams, second-resolution expiries, old
//! versions without checksum), built here with small encoders. Each fixture is read by
//! the Reader and by redis-server, which must agree; and refusals of what cannot load.

mod common;

use bytes::Bytes;
use common::fixtures::{listpack, module_id, ziplist, zipmap, Lp, Rdb};
use common::{assert_file_matches_server, check_rdb, fetch, Redis, TempDir};
use strata_rdb::{
    restore, ErrorKind, Item, KeyMeta, PendingEntry, RdbValue, Reader, StreamConsumer, StreamEntry,
    StreamGroup, StreamId, StreamValue,
};

fn b(s: &str) -> Bytes {
    Bytes::copy_from_slice(s.as_bytes())
}

fn strs(items: &[&[u8]]) -> strata_rdb::Members {
    items.iter().collect()
}

/// A type-15 stream: one node with entries sharing the master fields, one with its own
/// fields and one deleted; three groups whose read counters Redis must estimate.
fn stream_v1() -> (Vec<u8>, StreamValue) {
    let lp = listpack(&[
        Lp::Int(3),
        Lp::Int(1),
        Lp::Int(2),
        Lp::Str(b"a"),
        Lp::Str(b"b"),
        Lp::Int(0),
        Lp::Int(2),
        Lp::Int(0),
        Lp::Int(0),
        Lp::Str(b"1"),
        Lp::Str(b"2"),
        Lp::Int(5),
        Lp::Int(2),
        Lp::Int(0),
        Lp::Int(1),
        Lp::Str(b"3"),
        Lp::Str(b"4"),
        Lp::Int(5),
        Lp::Int(0),
        Lp::Int(1),
        Lp::Int(0),
        Lp::Int(1),
        Lp::Str(b"c"),
        Lp::Str(b"5"),
        Lp::Int(6),
        Lp::Int(3),
        Lp::Int(2),
        Lp::Int(0),
        Lp::Str(b"x"),
        Lp::Str(b"y"),
        Lp::Int(5),
    ]);
    let id = |ms, seq| StreamId::new(ms, seq);
    let mut r = Rdb::payload();
    r.len(1).str(&id(100, 0).to_be_bytes()).str(&lp);
    r.len(3).len(102).len(0); // length, last id
    r.len(3);
    for (name, last) in [("g", id(100, 1)), ("g2", id(102, 0)), ("g3", id(0, 0))] {
        r.str(name.as_bytes()).len(last.ms).len(last.seq);
        if name == "g" {
            r.len(1)
                .raw(&id(100, 0).to_be_bytes())
                .raw(&1_700_000_000_123i64.to_le_bytes())
                .len(2);
            r.len(1)
                .str(b"c1")
                .raw(&1_700_000_000_456i64.to_le_bytes())
                .len(1)
                .raw(&id(100, 0).to_be_bytes());
        } else {
            r.len(0).len(0);
        }
    }
    let fields = |kv: &[(&str, &str)]| kv.iter().map(|(k, v)| (b(k), b(v))).collect();
    let value = StreamValue {
        entries: vec![
            StreamEntry {
                id: id(100, 0),
                fields: fields(&[("a", "1"), ("b", "2")]),
            },
            StreamEntry {
                id: id(100, 1),
                fields: fields(&[("a", "3"), ("b", "4")]),
            },
            StreamEntry {
                id: id(101, 0),
                fields: fields(&[("c", "5")]),
            },
        ],
        last_id: id(102, 0),
        first_id: id(100, 0),
        max_deleted_entry_id: id(0, 0),
        entries_added: 3,
        groups: vec![
            StreamGroup {
                name: b("g"),
                last_delivered_id: id(100, 1),
                entries_read: None,
                pending: vec![PendingEntry {
                    id: id(100, 0),
                    delivery_time: 1_700_000_000_123,
                    delivery_count: 2,
                    consumer: b("c1"),
                }],
                consumers: vec![StreamConsumer {
                    name: b("c1"),
                    seen_time: 1_700_000_000_456,
                }],
            },
            StreamGroup {
                name: b("g2"),
                last_delivered_id: id(102, 0),
                entries_read: Some(3),
                pending: vec![],
                consumers: vec![],
            },
            StreamGroup {
                name: b("g3"),
                last_delivered_id: id(0, 0),
                entries_read: Some(0),
                pending: vec![],
                consumers: vec![],
            },
        ],
    };
    (r.buf.clone(), value)
}

/// (key, type, encoded value, expected value).
fn legacy_values() -> Vec<(&'static str, u8, Vec<u8>, RdbValue)> {
    let big = vec![b'z'; 300];
    let huge = vec![b'h'; 20_000];
    let list_items: Vec<&[u8]> = vec![
        b"0",
        b"12",
        b"13",
        b"-1",
        b"200",
        b"-30000",
        b"100000",
        b"-8388608",
        b"2147483648",
        b"1099511627776",
        b"-9223372036854775808",
        b"a",
        b"",
        b"007",
        &big,
        b"after big",
        &huge,
        b"end",
    ];
    let zset_items: Vec<&[u8]> = vec![
        b"a", b"1", b"b", b"1.5", b"c", b"-inf", b"d", b"100000", b"e", b"2.5e10",
    ];
    let hash_items: Vec<&[u8]> = vec![b"f1", b"v1", b"12", b"-5", b"long", &big];
    let mut out = Vec::new();
    let one = |f: &dyn Fn(&mut Rdb)| {
        let mut r = Rdb::payload();
        f(&mut r);
        r.buf
    };
    out.push((
        "zipmap",
        9u8,
        one(&|r| {
            r.str(&zipmap(
                &[(b"f1", b"v1"), (b"f2", &big), (b"", b"empty field")],
                2,
            ));
        }),
        RdbValue::Hash(
            vec![
                (b("f1"), b("v1")),
                (b("f2"), Bytes::from(big.clone())),
                (b(""), b("empty field")),
            ]
            .into(),
        ),
    ));
    out.push((
        "ziplist:list",
        10,
        one(&|r| {
            r.str(&ziplist(&list_items));
        }),
        RdbValue::List(strs(&list_items)),
    ));
    out.push((
        "ziplist:zset",
        12,
        one(&|r| {
            r.str(&ziplist(&zset_items));
        }),
        RdbValue::SortedSet(
            vec![
                (b("a"), 1.0),
                (b("b"), 1.5),
                (b("c"), f64::NEG_INFINITY),
                (b("d"), 100000.0),
                (b("e"), 2.5e10),
            ]
            .into(),
        ),
    ));
    out.push((
        "ziplist:hash",
        13,
        one(&|r| {
            r.str(&ziplist(&hash_items));
        }),
        RdbValue::Hash(
            vec![
                (b("f1"), b("v1")),
                (b("12"), b("-5")),
                (b("long"), Bytes::from(big.clone())),
            ]
            .into(),
        ),
    ));
    out.push((
        "quicklist",
        14,
        one(&|r| {
            r.len(3)
                .str(&ziplist(&[b"x", b"1"]))
                .str(&ziplist(&[]))
                .lzf(&ziplist(&[b"y", &huge]));
        }),
        RdbValue::List(strs(&[b"x", b"1", b"y", &huge])),
    ));
    out.push((
        "zset:text",
        3,
        one(&|r| {
            r.len(4)
                .str(b"m1")
                .byte(4)
                .raw(b"3.25")
                .str(b"m2")
                .byte(254)
                .str(b"m3")
                .byte(255)
                .str(b"m4")
                .byte(2)
                .raw(b"-7");
        }),
        RdbValue::SortedSet(
            vec![
                (b("m1"), 3.25),
                (b("m2"), f64::INFINITY),
                (b("m3"), f64::NEG_INFINITY),
                (b("m4"), -7.0),
            ]
            .into(),
        ),
    ));
    out.push((
        "list:plain",
        1,
        one(&|r| {
            r.len(4)
                .str(b"a")
                .raw(&[0xc0, 0x85])
                .raw(&[0xc1, 0x39, 0x30])
                .raw(&[0xc2, 0, 0, 0, 0x80]);
        }),
        RdbValue::List(vec![b("a"), b("-123"), b("12345"), b("-2147483648")].into()),
    ));
    out.push((
        "set:plain",
        2,
        one(&|r| {
            r.len(3).str(b"x").str(b"1").str(b"y");
        }),
        RdbValue::Set(vec![b("x"), b("1"), b("y")].into()),
    ));
    out.push((
        "hash:plain",
        4,
        one(&|r| {
            r.len(2).str(b"f").lzf(&big).str(b"g").str(b"");
        }),
        RdbValue::Hash(vec![(b("f"), Bytes::from(big.clone())), (b("g"), b(""))].into()),
    ));
    out.push((
        "zset:binary",
        5,
        one(&|r| {
            r.len(2)
                .str(b"p")
                .raw(&0.5f64.to_le_bytes())
                .str(b"q")
                .raw(&(-2e-300f64).to_le_bytes());
        }),
        RdbValue::SortedSet(vec![(b("p"), 0.5), (b("q"), -2e-300)].into()),
    ));
    out.push((
        "intset:64",
        11,
        one(&|r| {
            let mut is = vec![8, 0, 0, 0, 3, 0, 0, 0];
            for v in [i64::MIN, -1, 1 << 40] {
                is.extend_from_slice(&v.to_le_bytes());
            }
            r.str(&is);
        }),
        RdbValue::Set(
            vec![
                b(&i64::MIN.to_string()),
                b("-1"),
                b(&(1i64 << 40).to_string()),
            ]
            .into(),
        ),
    ));
    let (stream, value) = stream_v1();
    out.push(("stream:v1", 15, stream, RdbValue::Stream(Box::new(value))));
    out
}

/// A version-9 file of all legacy values, the first with a second-resolution expiry.
fn legacy_file() -> Vec<u8> {
    let mut r = Rdb::new(9);
    r.byte(254).len(0);
    for (i, (key, ty, body, _)) in legacy_values().iter().enumerate() {
        if i == 0 {
            r.byte(253).raw(&2_000_000_000i32.to_le_bytes());
        }
        r.key(*ty, key.as_bytes()).raw(body);
    }
    r.finish()
}

#[test]
fn reader_and_redis_agree_on_legacy_encodings() {
    let dir = TempDir::new("legacy");
    let path = dir.path().join("dump.rdb");
    std::fs::write(&path, legacy_file()).expect("write");
    check_rdb(&path);
    let items: Vec<Item> = Reader::new(std::fs::File::open(&path).expect("open"))
        .expect("header")
        .collect::<Result<_, _>>()
        .expect("reads");
    let keys: Vec<_> = items
        .iter()
        .filter_map(|i| if let Item::Key(e) = i { Some(e) } else { None })
        .collect();
    let want = legacy_values();
    assert_eq!(keys.len(), want.len());
    for (e, (key, _, _, value)) in keys.iter().zip(&want) {
        assert_eq!(&e.key[..], key.as_bytes());
        assert_eq!(&e.value, value, "{key}");
    }
    assert_eq!(
        keys[0].meta,
        KeyMeta {
            expire_ms: Some(2_000_000_000_000),
            ..KeyMeta::default()
        }
    );
    let r = Redis::start(dir.path(), &[]);
    assert_eq!(assert_file_matches_server(&path, &mut r.con()), want.len());
}

#[test]
fn legacy_payloads_restore_here_and_in_redis() {
    let dir = TempDir::new("legacy-payload");
    let r = Redis::start(dir.path(), &["--sanitize-dump-payload", "yes"]);
    let mut con = r.con();
    for (key, ty, body, value) in legacy_values() {
        let payload = Rdb::payload().byte(ty).raw(&body).seal();
        assert_eq!(restore(&payload).expect(key), value, "{key}");
        let _: () = redis::cmd("RESTORE")
            .arg(key)
            .arg(0)
            .arg(&payload)
            .query(&mut con)
            .expect(key);
        assert!(
            fetch(&mut con, key.as_bytes()) == Some(value.normalized()),
            "{key}"
        );
    }
}

#[test]
fn version_3_files_have_no_checksum() {
    let dir = TempDir::new("v3");
    let path = dir.path().join("dump.rdb");
    let mut r = Rdb::new(3);
    for (key, ty, body, _) in legacy_values().into_iter().filter(|v| v.1 != 15) {
        r.key(ty, key.as_bytes()).raw(&body);
    }
    std::fs::write(&path, r.finish()).expect("write");
    let mut reader = Reader::new(std::fs::File::open(&path).expect("open")).expect("header");
    assert_eq!(reader.version(), 3);
    let items: Vec<Item> = reader.by_ref().collect::<Result<_, _>>().expect("items");
    let n = items.len();
    assert_eq!(reader.stored_checksum(), None);
    let server = Redis::start(dir.path(), &[]);
    assert_eq!(assert_file_matches_server(&path, &mut server.con()), n);
}

fn read_all(bytes: &[u8]) -> Result<Vec<Item>, strata_rdb::Error> {
    Reader::new(bytes)?.collect()
}

#[test]
fn module_data_is_skipped_or_refused_by_name() {
    let id = module_id("testmodul", 3);
    // Module aux data (typed opcodes up to EOF) is skipped; the key after it reads.
    let mut r = Rdb::new(10);
    r.byte(247).len(id).len(2).len(1);
    r.len(1)
        .len(7)
        .len(2)
        .len(9)
        .len(3)
        .raw(&1.5f32.to_le_bytes())
        .len(4)
        .raw(&2.5f64.to_le_bytes());
    r.len(5).str(b"opaque").len(0);
    r.key(0, b"after").str(b"ok");
    let bytes = r.finish();
    let items = read_all(&bytes).expect("reads");
    assert_eq!(
        items[0],
        Item::ModuleAux {
            module: "testmodul".into(),
            when: 1
        }
    );
    assert!(matches!(&items[1], Item::Key(e) if &e.key[..] == b"after"));
    let dir = TempDir::new("modaux");
    let path = dir.path().join("m.rdb");
    std::fs::write(&path, &bytes).expect("write");
    check_rdb(&path);

    // A key holding a module value cannot be decoded without the module.
    let mut r = Rdb::new(10);
    r.key(7, b"mod:key").len(id).len(2).len(5).len(0);
    let err = read_all(&r.finish()).expect_err("module value");
    match err.kind() {
        ErrorKind::ModuleValue { key, module } => {
            assert_eq!(key.as_deref(), Some(&b"mod:key"[..]));
            assert_eq!(module, "testmodul");
        }
        other => panic!("{other:?}"),
    }
    assert!(err.to_string().contains("mod:key") && err.to_string().contains("testmodul"));
    let payload = Rdb::payload().byte(6).len(id).seal();
    assert!(matches!(
        restore(&payload),
        Err(strata_rdb::PayloadError::BadData(_))
    ));
}

#[test]
fn headers_and_records_that_cannot_load_are_refused() {
    let kind = |bytes: &[u8]| read_all(bytes).expect_err("refused").into_kind();
    assert!(matches!(
        kind(b"REDIS0011\xff"),
        ErrorKind::UnsupportedVersion(11)
    ));
    assert!(matches!(
        kind(b"REDIS0000\xff"),
        ErrorKind::UnsupportedVersion(0)
    ));
    assert!(matches!(kind(b"RADIS0009\xff"), ErrorKind::BadSignature));
    assert!(matches!(kind(b"REDIS00a9\xff"), ErrorKind::BadSignature));
    assert!(matches!(kind(b"REDIS"), ErrorKind::Truncated));
    let pre_ga = Rdb::new(10)
        .byte(246)
        .str(b"lib")
        .str(b"LUA")
        .len(0)
        .str(b"code")
        .finish();
    assert!(matches!(kind(&pre_ga), ErrorKind::PreReleaseFunctions));
    assert!(matches!(
        kind(&Rdb::new(10).byte(8).finish()),
        ErrorKind::Corrupt(_)
    ));
    let mut bad_crc = Rdb::new(10).key(0, b"k").str(b"v").finish();
    let last = bad_crc.len() - 1;
    bad_crc[last] ^= 0x10;
    assert!(matches!(kind(&bad_crc), ErrorKind::Checksum { .. }));
    // Zero means "not computed", as Redis treats it.
    let mut zero = Rdb::new(10).key(0, b"k").str(b"v").finish();
    let n = zero.len();
    zero[n - 8..].fill(0);
    assert_eq!(read_all(&zero).expect("zero checksum").len(), 1);
    // Empty collections are skipped, like Redis does.
    let empty = Rdb::new(10)
        .key(2, b"empty")
        .len(0)
        .key(0, b"k")
        .str(b"v")
        .finish();
    let mut reader = Reader::new(&empty[..]).expect("header");
    assert_eq!(reader.by_ref().count(), 1);
    assert_eq!(reader.empty_keys_skipped(), 1);
    // Their names, for the log, once.
    assert_eq!(
        reader.take_skipped_keys(),
        vec![Bytes::from_static(b"empty")]
    );
    assert!(reader.take_skipped_keys().is_empty());
}
