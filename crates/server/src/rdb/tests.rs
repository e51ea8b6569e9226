//! The bridge on its own: values both ways for every type and form, the forms chosen
//! under the thresholds, loading one key (expiry, duplicates, databases, idle time), and
//! the keyspace written as a file and read back with the codec's reader.

use super::*;
use crate::config::Config;
use crate::server::Server;
use bytes::Bytes;
use std::sync::Arc;
use strata_engine::stream::{AddId, StreamBuilder, StreamId};
use strata_engine::{clock, Encodings, Ttl, Value};
use strata_rdb::{Entry, Item, KeyMeta, RdbValue, Reader};

fn server(directives: &[(&str, &str)]) -> Arc<Server> {
    let config = Config::new(None);
    for (name, value) in directives {
        config.set(name, value, false).expect("directive");
    }
    Server::new(config)
}

fn b(s: &str) -> Bytes {
    Bytes::copy_from_slice(s.as_bytes())
}

/// A stream with entries in several nodes, a group with a consumer and pending entries,
/// and counters that differ from what the entries alone would give.
fn stream(enc: &Encodings) -> strata_engine::StreamValue {
    let mut s = strata_engine::StreamValue::new();
    for i in 1..=250u64 {
        let flat: Vec<Vec<u8>> = if i % 9 == 0 {
            vec![b"other".to_vec(), i.to_string().into_bytes()]
        } else {
            vec![b"name".to_vec(), format!("item-{i}").into_bytes()]
        };
        s.add(AddId::Exact(StreamId::new(i, 1)), &flat, 0, enc)
            .expect("XADD");
    }
    s.create_group(b"g", StreamId::new(20, 1), Some(20))
        .expect("group");
    let mut b = StreamBuilder::new();
    for e in s.range(StreamId::MIN, StreamId::MAX, false) {
        let flat: Vec<&[u8]> = e.fields().flat_map(|(f, v)| [f, v]).collect();
        b.append(e.id(), &flat, enc).expect("append");
    }
    b.meta(
        StreamId::new(999, 0),
        StreamId::new(1, 1),
        StreamId::new(0, 7),
        300,
    );
    b.group(b"g", StreamId::new(20, 1), Some(20))
        .expect("group");
    b.group(b"idle", StreamId::new(0, 0), None).expect("group");
    b.consumer(b"g", b"alice", 1_700_000_000_000)
        .expect("consumer");
    b.consumer(b"g", b"bob", 1_700_000_000_500)
        .expect("consumer");
    for i in [3u64, 5, 8] {
        b.pending(
            b"g",
            StreamId::new(i, 1),
            b"alice",
            1_700_000_000_000 + i as i64,
            i,
        )
        .expect("pending");
    }
    b.pending(b"g", StreamId::new(13, 1), b"bob", 1_700_000_000_900, 1)
        .expect("pending");
    b.finish().expect("stream")
}

/// One value of every type in its small and its large form, and the form expected.
fn values(enc: &Encodings) -> Vec<(RdbValue, &'static str)> {
    let n = |k: usize, f: &dyn Fn(usize) -> String| (0..k).map(f).collect::<Vec<_>>();
    vec![
        (RdbValue::String(b("hello")), "embstr"),
        (RdbValue::List(n(3, &|i| i.to_string()).into()), "quicklist"),
        (
            RdbValue::List(n(5000, &|i| format!("e{i}")).into()),
            "quicklist",
        ),
        (
            RdbValue::Set(n(10, &|i| (i * 3).to_string()).into()),
            "intset",
        ),
        (
            RdbValue::Set(n(600, &|i| i.to_string()).into()),
            "hashtable",
        ),
        (RdbValue::Set(vec!["1", "a"].into()), "hashtable"),
        (
            RdbValue::Hash(vec![("f", "v"), ("g", "")].into()),
            "listpack",
        ),
        (
            RdbValue::Hash(vec![("f", "v".repeat(65))].into()),
            "hashtable",
        ),
        (
            RdbValue::Hash(
                n(600, &|i| i.to_string())
                    .into_iter()
                    .map(|f| (f.clone(), f))
                    .collect(),
            ),
            "hashtable",
        ),
        (
            RdbValue::SortedSet(vec![("a", 1.5), ("b", -2.0)].into()),
            "listpack",
        ),
        (
            RdbValue::SortedSet((0..200).map(|i| (format!("m{i}"), i as f64)).collect()),
            "skiplist",
        ),
        (
            value_to_rdb(&Value::Stream(Box::new(stream(enc)))),
            "stream",
        ),
    ]
}

#[test]
fn values_cross_both_ways_in_the_engines_forms() {
    let s = server(&[]);
    let enc = &s.keyspace.encodings;
    for (v, form) in values(enc) {
        let engine = rdb_to_value(&v, enc).expect("builds");
        let back = value_to_rdb(&engine);
        assert_eq!(back.clone().normalized(), v.clone().normalized(), "{form}");
        assert_eq!(rdb_to_value(&back, enc).expect("builds"), engine, "{form}");
        let mut l = s.keyspace.db(0).lock1(b"k");
        match engine {
            Value::Str(x) => l.set_str(b"k", &x, Ttl::Clear),
            engine => l.set_value(b"k", engine, Ttl::Clear),
        }
        assert_eq!(l.peek(b"k").map(|e| e.encoding()), Some(form), "{v:?}");
    }
}

#[test]
fn a_stream_keeps_its_groups_counters_and_node_limits() {
    let s = server(&[("stream-node-max-entries", "10")]);
    let enc = &s.keyspace.encodings;
    let original = stream(enc);
    let RdbValue::Stream(r) = value_to_rdb(&Value::Stream(Box::new(original.clone()))) else {
        panic!("not a stream")
    };
    assert_eq!((r.entries.len(), r.entries_added), (250, 300));
    assert_eq!(r.last_id, strata_rdb::StreamId::new(999, 0));
    assert_eq!(r.groups.len(), 2);
    let g = r
        .groups
        .iter()
        .find(|g| &g.name[..] == b"g")
        .expect("group g");
    assert_eq!(
        (g.pending.len(), g.consumers.len(), g.entries_read),
        (4, 2, Some(20))
    );
    let Value::Stream(back) = rdb_to_value(&RdbValue::Stream(r), enc).expect("builds") else {
        panic!("not a stream")
    };
    // The same entries, groups and counters, and the nodes XADD would make.
    assert_eq!(*back, original);
    assert_eq!(back.node_count(), 25);
}

#[test]
fn streams_the_engine_cannot_hold_are_refused() {
    let s = server(&[]);
    let enc = &s.keyspace.encodings;
    let RdbValue::Stream(mut r) = value_to_rdb(&Value::Stream(Box::new(stream(enc)))) else {
        panic!("not a stream")
    };
    r.last_id = strata_rdb::StreamId::new(1, 0);
    assert!(rdb_to_value(&RdbValue::Stream(r.clone()), enc).is_err());
    r.last_id = strata_rdb::StreamId::new(999, 0);
    r.groups[0].pending[0].consumer = b("nobody");
    assert!(rdb_to_value(&RdbValue::Stream(r), enc).is_err());
}

fn entry(db: u64, key: &str, value: RdbValue, meta: KeyMeta) -> Entry {
    Entry {
        db,
        key: b(key),
        value,
        meta,
    }
}

#[test]
fn load_key_stores_expires_refuses_and_replaces() {
    let s = server(&[]);
    let ks = &s.keyspace;
    let now = clock::now_ms();
    let opts = LoadOptions::default();
    let v = RdbValue::String(b("v"));
    let at = |ms: i64| KeyMeta {
        expire_ms: Some(ms),
        ..KeyMeta::default()
    };
    let past = entry(0, "old", v.clone(), at(now as i64 - 1));
    assert_eq!(load_key(ks, &past, now, &opts).unwrap(), Loaded::Expired);
    let kept = LoadOptions {
        skip_expired: false,
        ..opts
    };
    assert_eq!(load_key(ks, &past, now, &kept).unwrap(), Loaded::Stored);
    let later = entry(2, "k", v.clone(), at(now as i64 + 60_000));
    assert_eq!(load_key(ks, &later, now, &opts).unwrap(), Loaded::Stored);
    let mut l = ks.db(2).lock1(b"k");
    assert_eq!(l.expire_at(b"k"), Some(Some(now + 60_000)));
    drop(l);
    let err = load_key(ks, &later, now, &opts).unwrap_err();
    assert!(
        err.to_string().contains("'k' of database 2 is there twice"),
        "{err}"
    );
    let replace = LoadOptions {
        replace: true,
        ..opts
    };
    let hash = entry(
        2,
        "k",
        RdbValue::Hash(vec![("f", "v")].into()),
        KeyMeta::default(),
    );
    assert_eq!(load_key(ks, &hash, now, &replace).unwrap(), Loaded::Stored);
    assert_eq!(
        ks.db(2).lock1(b"k").peek(b"k").map(|e| e.kind().name()),
        Some("hash")
    );
    let far = entry(16, "k", v.clone(), KeyMeta::default());
    let err = load_key(ks, &far, now, &opts).unwrap_err();
    assert!(err.to_string().contains("database 16"), "{err}");
    let idle = entry(
        0,
        "idle",
        v,
        KeyMeta {
            idle_secs: Some(300),
            ..KeyMeta::default()
        },
    );
    load_key(ks, &idle, now, &opts).unwrap();
    let lru = ks
        .db(0)
        .lock1(b"idle")
        .peek(b"idle")
        .map(|e| e.lru())
        .unwrap();
    assert_eq!(clock::idle_ms(lru, now) / 1000, 300);
}

/// Every key a server holds, as the file `write_rdb` makes of it, read back.
fn written(s: &Server) -> Vec<Entry> {
    let (file, _, _) = write_rdb(s, Vec::new()).expect("write");
    Reader::new(&file[..])
        .expect("header")
        .filter_map(|i| match i.expect("item") {
            Item::Key(e) => Some(e),
            _ => None,
        })
        .collect()
}

#[test]
fn the_keyspace_is_written_with_expiries_and_access_times() {
    let s = server(&[("maxmemory-policy", "allkeys-lru")]);
    let ks = &s.keyspace;
    let now = clock::now_ms();
    let opts = LoadOptions::default();
    let idle = KeyMeta {
        idle_secs: Some(120),
        ..KeyMeta::default()
    };
    load_key(
        ks,
        &entry(0, "a", RdbValue::String(b("1")), idle),
        now,
        &opts,
    )
    .unwrap();
    let ttl = KeyMeta {
        expire_ms: Some(now as i64 + 10_000),
        ..KeyMeta::default()
    };
    load_key(
        ks,
        &entry(5, "b", RdbValue::List(vec!["x"].into()), ttl),
        now,
        &opts,
    )
    .unwrap();
    // Expired by the time it is written: left out.
    ks.db(0)
        .lock1(b"gone")
        .set_str(b"gone", b"x", Ttl::At(now - 1));
    let mut out = written(&s);
    out.sort_by_key(|e| e.db);
    assert_eq!(out.len(), 2);
    assert_eq!((out[0].db, &out[0].key[..]), (0, &b"a"[..]));
    assert!(
        matches!(out[0].meta.idle_secs, Some(120..=121)),
        "{:?}",
        out[0].meta
    );
    assert_eq!(
        (out[1].db, out[1].meta.expire_ms),
        (5, Some(now as i64 + 10_000))
    );

    s.config
        .set("maxmemory-policy", "allkeys-lfu", false)
        .unwrap();
    let out = written(&s);
    assert!(out.iter().all(|e| e.meta.idle_secs.is_none()));
    assert!(out.iter().all(|e| e.meta.lfu_freq.is_some()));
    s.config
        .set("maxmemory-policy", "noeviction", false)
        .unwrap();
    let out = written(&s);
    assert!(out
        .iter()
        .all(|e| e.meta.idle_secs.is_none() && e.meta.lfu_freq.is_none()));
}

/// A file's RESIZEDB sizes the keyspace's tables (`Db::expect`); one that announces far
/// more keys than it holds loads what it holds and reserves no table for the rest.
#[test]
fn a_file_announcing_a_trillion_keys_loads_the_few_it_has() {
    // Few shards, so each holds enough keys for the expectation to count.
    let s = server(&[("shards", "16")]);
    let mut w =
        strata_rdb::Writer::new(Vec::new(), strata_rdb::WriteOptions::default()).expect("header");
    w.select_db(0, 1 << 40, 0).expect("selectdb");
    let value = RdbValue::String(b("a value too long to be stored inline with its key"));
    for i in 0..20_000 {
        let key = format!("key:{i}");
        w.key(key.as_bytes(), &value, &KeyMeta::default())
            .expect("key");
    }
    let file = w.finish().expect("footer");
    let reader = Reader::new(&file[..]).expect("reader");
    let summary = Loader::new(&s, LoadOptions::default())
        .load(reader, |_| {})
        .expect("loads");
    assert_eq!(summary.keys(), 20_000);
    assert_eq!(s.keyspace.db(0).len(), 20_000);
}
