mod common;

use std::collections::{BTreeMap, BTreeSet};

use common::TempDir;
use proptest::prelude::*;
use strata_engine::stream::{AddId, ClaimOpts, ReadFrom, ReadGroup, StreamId, Trim, TrimStrategy};
use strata_engine::{
    Encodings, HashValue, Keyspace, ListValue, SetValue, StreamValue, Ttl, Value, ZSetValue,
};
use strata_storage::*;

#[derive(Clone, Debug)]
enum V {
    Str(Vec<u8>),
    Hash(BTreeMap<Vec<u8>, Vec<u8>>),
    List(Vec<Vec<u8>>),
    Set(BTreeSet<Vec<u8>>),
    ZSet(BTreeMap<Vec<u8>, f64>),
    Stream(StreamRecipe),
}

/// How to build a stream: entries, deletions, a trim, groups and reads, in nodes of up to
/// `node` entries.
#[derive(Clone, Debug)]
struct StreamRecipe {
    node: u64,
    entries: Vec<(u8, Vec<u8>)>,
    deletes: Vec<u8>,
    trim: Option<u8>,
    reads: Vec<(u8, u8, u8, bool)>,
}

fn stream_recipe() -> impl Strategy<Value = StreamRecipe> {
    (
        1u64..5,
        proptest::collection::vec((0u8..3, bytes()), 0..30),
        proptest::collection::vec(any::<u8>(), 0..8),
        proptest::option::of(0u8..20),
        proptest::collection::vec((0u8..2, 0u8..3, 0u8..5, any::<bool>()), 0..6),
    )
        .prop_map(|(node, entries, deletes, trim, reads)| StreamRecipe {
            node,
            entries,
            deletes,
            trim,
            reads,
        })
}

fn build_stream(r: &StreamRecipe) -> StreamValue {
    let enc = Encodings::default();
    enc.stream_node_max_entries
        .store(r.node, std::sync::atomic::Ordering::Relaxed);
    let mut s = StreamValue::new();
    for (i, (shape, v)) in r.entries.iter().enumerate() {
        let flat: Vec<&[u8]> = match shape {
            0 => vec![b"f1", v, b"f2", b"x"],
            1 => vec![b"other", v],
            _ => vec![],
        };
        s.add(AddId::Auto, &flat, 1_000 + (i as u64) / 3, &enc)
            .unwrap();
    }
    let ids: Vec<StreamId> = s
        .range(StreamId::MIN, StreamId::MAX, false)
        .map(|e| e.id())
        .collect();
    if !ids.is_empty() {
        let del: Vec<StreamId> = r
            .deletes
            .iter()
            .map(|&d| ids[d as usize % ids.len()])
            .collect();
        s.delete(&del);
    }
    if let Some(n) = r.trim {
        s.trim(&Trim {
            strategy: TrimStrategy::MaxLen(u64::from(n)),
            approx: n % 2 == 0,
            limit: 0,
        });
    }
    s.create_group(b"g0", StreamId::MIN, None).unwrap();
    s.create_group(b"g1", StreamId::MIN, Some(0)).unwrap();
    for (k, (g, c, count, noack)) in r.reads.iter().enumerate() {
        let group = [b'g', b'0' + g];
        let consumer = [b'c', b'0' + c];
        let req = ReadGroup {
            group: &group,
            consumer: &consumer,
            from: ReadFrom::New,
            count: usize::from(*count),
            noack: *noack,
        };
        s.read_group(&req, 5_000 + k as u64, &mut |_, _| {});
    }
    s
}

fn bytes() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        proptest::collection::vec(any::<u8>(), 0..12),
        (-1000i64..1000).prop_map(|n| n.to_string().into_bytes()),
        proptest::collection::vec(any::<u8>(), 60..120),
    ]
}

fn score() -> impl Strategy<Value = f64> {
    prop_oneof![
        Just(-0.0),
        Just(0.0),
        Just(f64::INFINITY),
        Just(f64::NEG_INFINITY),
        Just(f64::MIN_POSITIVE),
        any::<f64>().prop_filter("no NaN", |f| !f.is_nan()),
    ]
}

fn value() -> impl Strategy<Value = V> {
    prop_oneof![
        bytes().prop_map(V::Str),
        proptest::collection::btree_map(bytes(), bytes(), 1..40).prop_map(V::Hash),
        proptest::collection::vec(bytes(), 1..40).prop_map(V::List),
        proptest::collection::btree_set(bytes(), 1..40).prop_map(V::Set),
        proptest::collection::btree_map(bytes(), score(), 1..40).prop_map(V::ZSet),
        stream_recipe().prop_map(V::Stream),
    ]
}

fn build(v: &V, enc: &Encodings) -> Value {
    match v {
        V::Str(s) => Value::Str(s.clone()),
        V::Hash(m) => {
            let mut h = HashValue::default();
            for (f, x) in m {
                h.set(f, x, enc);
            }
            Value::Hash(h)
        }
        V::List(l) => Value::List(Box::new(ListValue::from_elems(enc.list_size(), l))),
        V::Set(s) => {
            let mut it = s.iter();
            let first = it.next().cloned().unwrap_or_default();
            let mut sv = SetValue::new_for(&first);
            sv.add(&first, enc);
            for m in it {
                sv.add(m, enc);
            }
            Value::Set(sv)
        }
        V::ZSet(z) => Value::ZSet(Box::new(ZSetValue::from_members(
            z.iter().map(|(m, s)| (m.clone(), *s)).collect(),
            enc,
        ))),
        V::Stream(r) => Value::Stream(Box::new(build_stream(r))),
    }
}

/// Score bits must survive exactly (-0.0 vs 0.0), which `==` on f64 would not notice.
fn zset_bits(v: &Value) -> Vec<(Vec<u8>, u64)> {
    let mut out = Vec::new();
    if let Value::ZSet(z) = v {
        z.for_range(0, z.len(), false, |m, s| {
            out.push((m.to_vec(), s.to_bits()))
        });
    }
    out
}

type Entry = (u32, Vec<u8>, Option<u64>, Value);

fn write_snapshot(dir: &std::path::Path, epoch: u64, entries: &[Entry]) -> SnapshotInfo {
    let ks = Keyspace::new(16, 1);
    let mut w = SnapshotWriter::create(
        dir,
        epoch,
        Position {
            segment: 3,
            offset: 99,
        },
    )
    .unwrap();
    let mut raw = Vec::new();
    let mut raw_n = 0;
    for (i, (db, key, exp, v)) in entries.iter().enumerate() {
        match i % 3 {
            // Through the table, as the server does (strings end up packed).
            0 => {
                let mut l = ks.db(*db as usize).lock1_at(1, key);
                let ttl = exp.map(Ttl::At).unwrap_or(Ttl::Clear);
                match v {
                    Value::Str(s) => l.set_str(key, s, ttl),
                    other => l.set_value(key, other.clone(), ttl),
                }
                let e = l.peek(key).unwrap();
                w.entry(*db, key, e.expire_at(), e).unwrap();
            }
            1 => w.value(*db, key, *exp, v).unwrap(),
            _ => {
                encode_value(&mut raw, *db, key, *exp, v);
                raw_n += 1;
            }
        }
    }
    w.raw_chunk(&raw, raw_n).unwrap();
    w.finish().unwrap()
}

fn load(path: &std::path::Path) -> Result<(SnapshotMeta, Vec<Entry>), RecoveryError> {
    let enc = Encodings::default();
    let mut out = Vec::new();
    let m = load_snapshot(path, &enc, |db, k, e, v| out.push((db, k, e, v)))?;
    Ok((m, out))
}

fn gen_entries() -> impl Strategy<Value = Vec<(u32, Vec<u8>, Option<u64>, V)>> {
    proptest::collection::vec(
        (
            0u32..16,
            bytes(),
            proptest::option::of(2u64..u64::MAX / 2),
            value(),
        ),
        0..30,
    )
}

fn dedup(raw: Vec<(u32, Vec<u8>, Option<u64>, V)>) -> Vec<Entry> {
    let enc = Encodings::default();
    let mut seen = BTreeSet::new();
    raw.into_iter()
        .filter(|(db, k, _, _)| seen.insert((*db, k.clone())))
        .map(|(db, k, e, v)| (db, k, e, build(&v, &enc)))
        .collect()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]
    #[test]
    fn snapshot_round_trip(raw in gen_entries()) {
        let d = TempDir::new("snap-rt");
        let entries = dedup(raw);
        let info = write_snapshot(d.path(), 7, &entries);
        prop_assert_eq!(info.entries, entries.len() as u64);
        let (meta, got) = load(&info.path).unwrap();
        prop_assert_eq!(meta.epoch, 7);
        prop_assert_eq!(meta.replay_from, Position { segment: 3, offset: 99 });
        prop_assert_eq!(meta.entries, entries.len() as u64);
        prop_assert_eq!(meta.bytes, info.bytes);
        // Order: the raw chunk (every third entry) comes last.
        let mut want: Vec<&Entry> = entries.iter().enumerate().filter(|(i, _)| i % 3 != 2).map(|(_, e)| e).collect();
        want.extend(entries.iter().enumerate().filter(|(i, _)| i % 3 == 2).map(|(_, e)| e));
        prop_assert_eq!(got.len(), want.len());
        for (g, w) in got.iter().zip(want) {
            prop_assert_eq!(g.0, w.0);
            prop_assert_eq!(&g.1, &w.1);
            prop_assert_eq!(g.2, w.2);
            prop_assert_eq!(&g.3, &w.3);
            prop_assert_eq!(zset_bits(&g.3), zset_bits(&w.3));
        }
        let latest = latest_snapshot(d.path()).unwrap().unwrap();
        prop_assert_eq!(latest.path, info.path);
    }
}

fn sample() -> Vec<Entry> {
    let enc = Encodings::default();
    let mut z = BTreeMap::new();
    z.insert(b"neg0".to_vec(), -0.0);
    z.insert(b"inf".to_vec(), f64::INFINITY);
    z.insert(b"ninf".to_vec(), f64::NEG_INFINITY);
    z.insert(b"pi".to_vec(), std::f64::consts::PI);
    vec![
        (0, b"s".to_vec(), None, Value::Str(b"hello".to_vec())),
        (1, b"z".to_vec(), Some(1 << 50), build(&V::ZSet(z), &enc)),
        (
            2,
            b"l".to_vec(),
            None,
            build(&V::List(vec![b"1".to_vec(), b"a".to_vec()]), &enc),
        ),
        (
            3,
            b"h".to_vec(),
            Some(5),
            build(&V::Hash([(b"f".to_vec(), b"v".to_vec())].into()), &enc),
        ),
        (
            4,
            b"set".to_vec(),
            None,
            build(&V::Set([b"1".to_vec(), b"2".to_vec()].into()), &enc),
        ),
    ]
}

#[test]
fn negative_zero_and_infinities_survive() {
    // The engine's compact (listpack) form stores integral scores as integers, so -0.0
    // becomes 0 there, as in Redis; the skiplist form keeps the bits, and so must we.
    let enc = Encodings::default();
    enc.zset_max_listpack_entries
        .store(0, std::sync::atomic::Ordering::Relaxed);
    let mut z = BTreeMap::new();
    z.insert(b"neg0".to_vec(), -0.0);
    z.insert(b"inf".to_vec(), f64::INFINITY);
    z.insert(b"ninf".to_vec(), f64::NEG_INFINITY);
    z.insert(b"pi".to_vec(), std::f64::consts::PI);
    let v = build(&V::ZSet(z), &enc);
    let d = TempDir::new("snap-f64");
    let mut w = SnapshotWriter::create(d.path(), 1, Position::default()).unwrap();
    w.value(1, b"z", Some(1 << 50), &v).unwrap();
    let info = w.finish().unwrap();
    let mut got = Vec::new();
    load_snapshot(&info.path, &enc, |db, k, e, v| got.push((db, k, e, v))).unwrap();
    assert_eq!(got.len(), 1);
    let bits = zset_bits(&got[0].3);
    assert_eq!(bits, zset_bits(&v));
    assert_eq!(bits[0], (b"ninf".to_vec(), f64::NEG_INFINITY.to_bits()));
    assert_eq!(bits[1], (b"neg0".to_vec(), (-0.0f64).to_bits()));
    assert_eq!(bits[3], (b"inf".to_vec(), f64::INFINITY.to_bits()));
    assert_eq!(got[0].2, Some(1 << 50));
    assert_eq!(got[0].3, v);
}

#[test]
fn truncated_or_flipped_snapshot_is_detected() {
    let d = TempDir::new("snap-bad");
    let info = write_snapshot(d.path(), 2, &sample());
    let orig = std::fs::read(&info.path).unwrap();
    let enc = Encodings::default();
    for cut in 0..orig.len() {
        let r = load_snapshot_bytes(&orig[..cut], &enc, |_, _, _, _| {});
        assert!(matches!(r, Err(RecoveryError::Corrupt { .. })), "cut {cut}");
    }
    for at in 0..orig.len() {
        for bit in [0x01u8, 0x80] {
            let mut b = orig.clone();
            b[at] ^= bit;
            let r = load_snapshot_bytes(&b, &enc, |_, _, _, _| {});
            assert!(
                matches!(r, Err(RecoveryError::Corrupt { .. })),
                "flip at {at}"
            );
        }
    }
    // On disk: a truncated newest snapshot is skipped in favour of an older complete one.
    let older = write_snapshot(d.path(), 1, &sample());
    std::fs::write(&info.path, &orig[..orig.len() - 3]).unwrap();
    assert_eq!(latest_snapshot(d.path()).unwrap().unwrap().path, older.path);
    let e = load(&info.path).unwrap_err().to_string();
    assert!(
        e.starts_with("snapshot corrupt: ") && e.contains("at offset"),
        "{e}"
    );
    let rep = check(d.path()).unwrap();
    assert!(!rep.ok() && rep.snapshot.unwrap().error.is_some());
}

#[test]
fn tmp_files_are_ignored_and_old_snapshots_removed() {
    let d = TempDir::new("snap-old");
    write_snapshot(d.path(), 1, &sample());
    write_snapshot(d.path(), 2, &sample());
    // An abandoned writer leaves nothing; a stray tmp file is ignored.
    let w = SnapshotWriter::create(d.path(), 9, Position::default()).unwrap();
    drop(w);
    std::fs::write(
        d.path().join("snapshot-00000000000000000010.snap.tmp"),
        b"junk",
    )
    .unwrap();
    let m = latest_snapshot(d.path()).unwrap().unwrap();
    assert_eq!(m.epoch, 2);
    remove_older_snapshots(d.path(), 2).unwrap();
    assert!(!snapshot_path(d.path(), 1).exists());
    assert!(snapshot_path(d.path(), 2).exists());
    assert!(!d
        .path()
        .join("snapshot-00000000000000000009.snap.tmp")
        .exists());
    let rep = check(d.path()).unwrap();
    assert!(rep.ok(), "{rep}");
    assert_eq!(rep.snapshot.unwrap().entries, 5);
    // At start-up the server clears what a crash left mid-write.
    let tmp10 = d.path().join("snapshot-00000000000000000010.snap.tmp");
    assert!(tmp10.exists());
    assert_eq!(remove_unfinished_snapshots(d.path()).unwrap(), 1);
    assert!(!tmp10.exists());
    assert!(snapshot_path(d.path(), 2).exists());
    assert_eq!(remove_unfinished_snapshots(d.path()).unwrap(), 0);
}

#[test]
fn large_snapshot_loads_quickly() {
    // 200k 64-byte strings: a scaled-down version of the 10M-key target.
    let d = TempDir::new("snap-big");
    let n = 200_000u32;
    let mut w = SnapshotWriter::create(d.path(), 1, Position::default()).unwrap();
    let val = Value::Str(vec![b'v'; 64]);
    for i in 0..n {
        w.value(0, format!("key:{i:08}").as_bytes(), None, &val)
            .unwrap();
    }
    let info = w.finish().unwrap();
    let t = std::time::Instant::now();
    let mut count = 0u32;
    load_snapshot(&info.path, &Encodings::default(), |_, _, _, _| count += 1).unwrap();
    eprintln!(
        "loaded {n} entries ({} bytes) in {:?}",
        info.bytes,
        t.elapsed()
    );
    assert_eq!(count, n);
}

/// A stream with deleted entries inside nodes, a node left with none live, groups, NOACK
/// reads, claims and an idle consumer.
fn busy_stream() -> StreamValue {
    let enc = Encodings::default();
    enc.stream_node_max_entries
        .store(3, std::sync::atomic::Ordering::Relaxed);
    let mut s = StreamValue::new();
    for i in 1..=10u64 {
        let v = i.to_string();
        let flat: [&[u8]; 4] = [b"f", v.as_bytes(), b"g", b"big value that is not short"];
        s.add(AddId::Exact(StreamId::new(i, i)), &flat, 0, &enc)
            .unwrap();
    }
    s.delete(&[StreamId::new(3, 3), StreamId::new(5, 5)]);
    s.trim(&Trim {
        strategy: TrimStrategy::MinId(StreamId::new(3, 3)),
        approx: false,
        limit: 0,
    });
    s.set_id(StreamId::new(20, 0), Some(30), Some(StreamId::new(6, 0)))
        .unwrap();
    s.create_group(b"readers", StreamId::MIN, Some(0)).unwrap();
    s.create_group(b"later", StreamId::new(8, 8), None).unwrap();
    s.create_consumer(b"later", b"idle", 77).unwrap();
    let read = |s: &mut StreamValue, c: &[u8], noack, at| {
        let req = ReadGroup {
            group: b"readers",
            consumer: c,
            from: ReadFrom::New,
            count: 2,
            noack,
        };
        s.read_group(&req, at, &mut |_, _| {});
    };
    read(&mut s, b"alice", false, 100);
    read(&mut s, b"bob", true, 200);
    read(&mut s, b"bob", false, 300);
    let opts = ClaimOpts {
        retry_count: Some(9),
        ..ClaimOpts::default()
    };
    s.claim(
        b"readers",
        b"carol",
        &[StreamId::new(4, 4)],
        &opts,
        400,
        &mut |_, _| {},
    );
    s
}

#[test]
fn streams_round_trip_exactly() {
    let s = busy_stream();
    assert_eq!(
        (s.node_count(), s.len()),
        (4, 6),
        "a node of deleted entries only is kept"
    );
    let d = TempDir::new("snap-stream");
    let mut w = SnapshotWriter::create(d.path(), 1, Position::default()).unwrap();
    let v = Value::Stream(Box::new(s.clone()));
    w.value(0, b"x", None, &v).unwrap();
    let empty = Value::Stream(Box::default());
    w.value(0, b"empty", Some(9), &empty).unwrap();
    let info = w.finish().unwrap();
    let (_, got) = load(&info.path).unwrap();
    assert_eq!(got.len(), 2);
    assert_eq!(got[0].3, v);
    assert_eq!(
        (&got[1].1[..], got[1].2, &got[1].3),
        (&b"empty"[..], Some(9), &empty)
    );
    // What comes next goes the same way: the tail node is as full as it was.
    let Value::Stream(mut loaded) = got[0].3.clone() else {
        panic!("not a stream")
    };
    let mut orig = Box::new(s);
    let enc = Encodings::default();
    enc.stream_node_max_entries
        .store(3, std::sync::atomic::Ordering::Relaxed);
    for t in [&mut orig, &mut loaded] {
        t.add(AddId::Auto, &[b"f", b"v"], 50, &enc).unwrap();
    }
    assert_eq!(loaded, orig);
    assert_eq!(
        loaded.group(b"readers").and_then(|g| g.lag()),
        orig.group(b"readers").and_then(|g| g.lag())
    );
}

/// Damage inside a stream that still passes the chunk CRC (a bug, or a hostile file)
/// must give an error or a consistent value, never a panic.
#[test]
fn damaged_streams_never_panic() {
    let d = TempDir::new("snap-stream-bad");
    let mut w = SnapshotWriter::create(d.path(), 1, Position::default()).unwrap();
    w.value(0, b"x", None, &Value::Stream(Box::new(busy_stream())))
        .unwrap();
    let info = w.finish().unwrap();
    let orig = std::fs::read(&info.path).unwrap();
    let enc = Encodings::default();
    // One chunk: 44 bytes of header, then its length and CRC, then the body.
    let body = 52..orig.len() - 24;
    let mut errors = 0;
    for at in body.clone() {
        for bit in [0x01u8, 0x04, 0x80] {
            let mut b = orig.clone();
            b[at] ^= bit;
            let crc = crc32fast::hash(&b[body.clone()]);
            b[48..52].copy_from_slice(&crc.to_le_bytes());
            if load_snapshot_bytes(&b, &enc, |_, _, _, _| {}).is_err() {
                errors += 1;
            }
        }
    }
    assert!(errors > 0);
}

#[test]
fn entries_keep_the_place_they_were_captured_in() {
    let enc = Encodings::default();
    let d = TempDir::new("snap-place");
    let mut w = SnapshotWriter::create(d.path(), 1, Position::default()).unwrap();
    let mut chunk = Vec::new();
    let places = [Place::Ram, Place::Cold, Place::Clean];
    for (i, place) in places.iter().enumerate() {
        let start = chunk.len();
        let expire = (i == 1).then_some(1 << 50);
        encode_value(
            &mut chunk,
            0,
            &[b'k', i as u8],
            expire,
            &Value::Str(vec![b'v'; i]),
        );
        mark_place(&mut chunk, start, *place);
    }
    w.raw_chunk(&chunk, 3).unwrap();
    let info = w.finish().unwrap();
    // Cold entries' values skipped, the others built.
    let mut got = Vec::new();
    let wanted = |p| {
        if p == Place::Cold {
            Want::Skip
        } else {
            Want::Value
        }
    };
    load_snapshot_placed(&info.path, &enc, wanted, |p, _, k, e, v| {
        got.push((p, k, e, matches!(v, Loaded::Value(_))))
    })
    .unwrap();
    let want: Vec<_> = (0..3u8)
        .map(|i| {
            let place = places[usize::from(i)];
            let key = vec![b'k', i];
            (
                place,
                key,
                (i == 1).then_some(1 << 50),
                place != Place::Cold,
            )
        })
        .collect();
    assert_eq!(got, want);
    // Readers that do not ask get the same entries.
    let mut plain = 0;
    load_snapshot(&info.path, &enc, |_, _, _, _| plain += 1).unwrap();
    assert_eq!(plain, 3);
    // Raw: each entry's bytes, which compare equal to another copy of the same value and
    // expiry whatever its database, key and place, and unequal to any other.
    let mut raw = Vec::new();
    load_snapshot_placed(
        &info.path,
        &enc,
        |_| Want::Raw,
        |_, _, _, _, v| {
            if let Loaded::Raw(b) = v {
                raw.push(b.to_vec());
            }
        },
    )
    .unwrap();
    assert_eq!(raw.len(), 3);
    for (i, bytes) in raw.iter().enumerate() {
        let expire = (i == 1).then_some(1 << 50);
        let mut copy = Vec::new();
        encode_value(&mut copy, 7, b"other", expire, &Value::Str(vec![b'v'; i]));
        assert!(same_entry(bytes, &copy), "entry {i}");
        let mut longer = Vec::new();
        encode_value(
            &mut longer,
            0,
            &[b'k', i as u8],
            expire,
            &Value::Str(vec![b'v'; i + 1]),
        );
        assert!(
            !same_entry(bytes, &longer),
            "entry {i} against a longer value"
        );
        let mut later = Vec::new();
        encode_value(
            &mut later,
            0,
            &[b'k', i as u8],
            Some(1 << 51),
            &Value::Str(vec![b'v'; i]),
        );
        assert!(
            !same_entry(bytes, &later),
            "entry {i} against another expiry"
        );
        assert!(
            !same_entry(bytes, &bytes[..bytes.len() - 1]),
            "entry {i} cut short"
        );
    }
    // Both flags at once is damage.
    let mut bad = Vec::new();
    encode_value(&mut bad, 0, b"x", None, &Value::Str(vec![]));
    mark_place(&mut bad, 0, Place::Cold);
    mark_place(&mut bad, 0, Place::Clean);
    assert!(decode_entries(&bad, &enc, |_, _, _, _| {}).is_err());
}

/// Collections are built whole from a chunk: a hash and a set keep their fields and
/// members, small and large, in either order; a damaged chunk that repeats a hash field
/// loads it once with the last value (as HSET would), a repeated set member once, and a
/// repeated sorted-set member is refused.
#[test]
fn collections_load_whole_and_repeats_load_as_writes_would() {
    use strata_storage::snapshot::{put_collection, put_item, put_score, Collection};
    let enc = Encodings::default();
    let decode = |buf: &[u8]| {
        let mut out = Vec::new();
        decode_entries(buf, &enc, |_, key, _, v| out.push((key, v))).map(|_| out)
    };
    let names = |n: usize| {
        (0..n)
            .map(|i| format!("m{i}").into_bytes())
            .collect::<Vec<_>>()
    };
    for n in [3, 40] {
        let mut fields = names(n);
        fields.push(fields[0].clone());
        let mut buf = Vec::new();
        put_collection(&mut buf, Collection::Hash, 0, b"h", None, fields.len());
        for (i, f) in fields.iter().enumerate() {
            put_item(&mut buf, f);
            put_item(&mut buf, format!("v{i}").as_bytes());
        }
        put_collection(&mut buf, Collection::Set, 0, b"s", None, fields.len());
        for f in &fields {
            put_item(&mut buf, f);
        }
        let got = decode(&buf).expect("repeats in a hash or set still load");
        let Value::Hash(h) = &got[0].1 else {
            panic!("not a hash")
        };
        assert_eq!(h.len(), n, "{n} distinct fields");
        assert_eq!(h.get(&fields[0]), Some(&format!("v{n}").into_bytes()[..]));
        assert_eq!(
            h.get(&fields[n - 1]),
            Some(&format!("v{}", n - 1).into_bytes()[..])
        );
        let Value::Set(s) = &got[1].1 else {
            panic!("not a set")
        };
        assert_eq!(s.len(), n);
        assert!(fields.iter().all(|f| s.contains(f)));

        // Scores written in descending order: the set comes out in ascending order.
        let mut buf = Vec::new();
        put_collection(&mut buf, Collection::ZSet, 0, b"z", None, n);
        for (i, m) in names(n).iter().enumerate() {
            put_item(&mut buf, m);
            put_score(&mut buf, (n - i) as f64);
        }
        let got = decode(&buf).expect("a sorted set in any order loads");
        let Value::ZSet(z) = &got[0].1 else {
            panic!("not a sorted set")
        };
        let mut order = Vec::new();
        z.for_range(0, z.len(), false, |m, s| order.push((m.to_vec(), s)));
        let mut want: Vec<_> = names(n)
            .into_iter()
            .zip((1..=n).rev().map(|s| s as f64))
            .collect();
        want.reverse();
        assert_eq!(order, want);

        let mut buf = Vec::new();
        put_collection(&mut buf, Collection::ZSet, 0, b"z", None, fields.len());
        for (i, m) in fields.iter().enumerate() {
            put_item(&mut buf, m);
            put_score(&mut buf, i as f64);
        }
        let err = decode(&buf).expect_err("a repeated member is damage");
        assert!(err.contains("duplicate sorted set member"), "{err}");
    }
}

#[test]
fn function_libraries_come_back_beside_the_entries() {
    let d = TempDir::new("snap-functions");
    let codes: [&[u8]; 2] = [b"#!lua name=a\n-- one", b"#!lua name=b\n-- two"];
    let mut w = SnapshotWriter::create(d.path(), 1, Position::default()).unwrap();
    w.functions(codes.iter().copied()).unwrap();
    w.value(0, b"k", None, &Value::Str(b"v".to_vec())).unwrap();
    let info = w.finish().unwrap();
    assert_eq!(info.entries, 1, "the libraries' record is not an entry");
    let (meta, entries) = load(&info.path).unwrap();
    assert_eq!(entries.len(), 1);
    let want: Vec<Vec<u8>> = codes.iter().map(|c| c.to_vec()).collect();
    assert_eq!(meta.functions, Some(want));
    // A file written without the record (older files, streamed imports) says so.
    let mut w = SnapshotWriter::create(d.path(), 2, Position::default()).unwrap();
    w.value(0, b"k", None, &Value::Str(b"v".to_vec())).unwrap();
    let (meta, _) = load(&w.finish().unwrap().path).unwrap();
    assert_eq!(meta.functions, None);
}
