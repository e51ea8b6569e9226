//! Edge cases of the stream type, most taken from Redis's own stream tests (the consumer
//! groups' in `group_tests.rs`).

use super::*;
use std::sync::atomic::Ordering::Relaxed;

pub(super) fn enc(entries: u64, bytes: u64) -> Encodings {
    let e = Encodings::default();
    e.stream_node_max_entries.store(entries, Relaxed);
    e.stream_node_max_bytes.store(bytes, Relaxed);
    e
}

pub(super) fn id(ms: u64, seq: u64) -> StreamId {
    StreamId::new(ms, seq)
}

pub(super) fn add_at(
    s: &mut StreamValue,
    text: &str,
    flat: &[&str],
    now: u64,
    e: &Encodings,
) -> Result<StreamId, StreamError> {
    let parsed = AddId::parse(text.as_bytes()).ok_or(StreamError::InvalidId)?;
    s.add(parsed, flat, now, e)
}

pub(super) fn add(s: &mut StreamValue, text: &str, flat: &[&str]) -> Result<StreamId, StreamError> {
    add_at(s, text, flat, 1_000, &Encodings::default())
}

/// A stream with entries 1-0 ..= n-0, each `f v`.
pub(super) fn numbered(n: u64, e: &Encodings) -> StreamValue {
    let mut s = StreamValue::new();
    for i in 1..=n {
        add_at(&mut s, &format!("{i}-0"), &["f", "v"], 0, e).unwrap();
    }
    s
}

pub(super) fn ids(r: Range<'_>) -> Vec<StreamId> {
    r.map(|e| e.id()).collect()
}

pub(super) fn all(s: &StreamValue) -> Vec<StreamId> {
    ids(s.range(StreamId::MIN, StreamId::MAX, false))
}

pub(super) fn fields(e: Entry<'_>) -> Vec<(String, String)> {
    e.fields()
        .map(|(f, v)| {
            (
                String::from_utf8_lossy(f).into_owned(),
                String::from_utf8_lossy(v).into_owned(),
            )
        })
        .collect()
}

pub(super) fn maxlen(n: u64, approx: bool, limit: u64) -> Trim {
    Trim {
        strategy: TrimStrategy::MaxLen(n),
        approx,
        limit,
    }
}

#[test]
fn ids_are_generated_as_redis_does() {
    let e = Encodings::default();
    let mut s = StreamValue::new();
    assert_eq!(add_at(&mut s, "*", &["a", "1"], 50, &e), Ok(id(50, 0)));
    assert_eq!(add_at(&mut s, "*", &["a", "1"], 50, &e), Ok(id(50, 1)));
    // The clock went back: the last ID's ms is kept.
    assert_eq!(add_at(&mut s, "*", &["a", "1"], 10, &e), Ok(id(50, 2)));
    assert_eq!(add_at(&mut s, "*", &["a", "1"], 60, &e), Ok(id(60, 0)));
    assert_eq!(add(&mut s, "60-*", &["a", "1"]), Ok(id(60, 1)));
    assert_eq!(add(&mut s, "70-*", &["a", "1"]), Ok(id(70, 0)));
    assert_eq!(
        add(&mut s, "69-*", &["a", "1"]),
        Err(StreamError::IdNotGreater)
    );
    assert_eq!(
        add(&mut s, "70-0", &["a", "1"]),
        Err(StreamError::IdNotGreater)
    );
    assert_eq!(add(&mut s, "0-0", &["a", "1"]), Err(StreamError::IdZero));
    assert_eq!((s.len(), s.entries_added(), s.last_id()), (6, 6, id(70, 0)));

    let mut t = StreamValue::new();
    assert_eq!(
        add(&mut t, "0-*", &["a", "b"]),
        Ok(id(0, 1)),
        "0-* skips 0-0"
    );
    assert_eq!(
        add(&mut t, "1-18446744073709551615", &["a", "b"]),
        Ok(id(1, u64::MAX))
    );
    assert_eq!(add(&mut t, "1-*", &["a", "b"]), Err(StreamError::TooLarge));
    assert_eq!(
        add(
            &mut t,
            "18446744073709551615-18446744073709551615",
            &["a", "b"]
        ),
        Ok(StreamId::MAX)
    );
    assert_eq!(add(&mut t, "*", &["c", "d"]), Err(StreamError::Exhausted));
    // An ID in the future of the clock, then `*`.
    let mut u = StreamValue::new();
    add(&mut u, "2577343934890-18446744073709551615", &["f", "v"]).unwrap();
    assert_eq!(add(&mut u, "*", &["f2", "v2"]), Ok(id(2577343934891, 0)));
}

#[test]
fn entries_read_back_with_their_fields() {
    let mut s = StreamValue::new();
    add(&mut s, "1-0", &["item", "1", "value", "a"]).unwrap();
    add(&mut s, "2-0", &["item", "2", "value", "b"]).unwrap(); // the master's fields
    add(&mut s, "3-0", &["item", "3", "other", "x"]).unwrap(); // different names
    add(&mut s, "4-0", &["item", "4"]).unwrap(); // fewer
    add(&mut s, "5-0", &[]).unwrap(); // none
    add(&mut s, "6-0", &["", "", "item", "-0"]).unwrap();
    let got: Vec<_> = s
        .range(StreamId::MIN, StreamId::MAX, false)
        .map(fields)
        .collect();
    let want: Vec<Vec<(&str, &str)>> = vec![
        vec![("item", "1"), ("value", "a")],
        vec![("item", "2"), ("value", "b")],
        vec![("item", "3"), ("other", "x")],
        vec![("item", "4")],
        vec![],
        vec![("", ""), ("item", "-0")],
    ];
    let want: Vec<Vec<(String, String)>> = want
        .into_iter()
        .map(|v| v.into_iter().map(|(a, b)| (a.into(), b.into())).collect())
        .collect();
    assert_eq!(got, want);
    assert_eq!(s.get(id(4, 0)).map(|e| e.len()), Some(1));
    assert!(s.get(id(4, 1)).is_none());
}

#[test]
fn nodes_split_where_redis_splits_them() {
    // By entries: 100 a node, deleted entries counted.
    let mut s = numbered(1000, &enc(100, 4096));
    assert_eq!(s.node_count(), 10);
    s.delete(&[id(1000, 0)]);
    add_at(&mut s, "1001-0", &["f", "v"], 0, &enc(100, 4096)).unwrap();
    assert_eq!(
        s.node_count(),
        11,
        "the tail node holds 99 live and 1 deleted"
    );
    // By bytes. A listpack node for `f v` entries costs 7 (header and end) + 2 (count)
    // + 2 (deleted) + 2 (field count) + 3 ("f") + 2 (terminator) = 18, and 11 an entry
    // (flags, ms and seq deltas, "v", lp-count). A node takes an entry while its size plus
    // the entry's field and value bytes (2) stays below the limit: at 60 bytes, after 1,
    // 2 and 3 entries the sizes are 29, 40 and 51 (< 58), then 62: 4 entries a node.
    assert_eq!(numbered(20, &enc(0, 60)).node_count(), 5);
    // "12345" is a 16-bit listpack integer (4 bytes with its backlen): 12 bytes an entry,
    // 30, 42, 54 (>= 60 - 6 ends the node): 3 a node.
    let e = enc(0, 60);
    let mut s = StreamValue::new();
    for i in 1..=20 {
        add_at(&mut s, &format!("{i}-0"), &["f", "12345"], 0, &e).unwrap();
    }
    assert_eq!(s.node_count(), 7);
    // One node at most holds 1 GiB; 0 means that limit.
    assert_eq!(numbered(300, &enc(0, 0)).node_count(), 1);
}

#[test]
fn ranges_walk_both_ways_across_nodes_and_deletions() {
    let e = enc(3, 4096);
    let mut s = numbered(10, &e);
    s.delete(&[id(2, 0), id(4, 0), id(5, 0), id(6, 0)]);
    let live = vec![1, 3, 7, 8, 9, 10];
    let live: Vec<StreamId> = live.into_iter().map(|m| id(m, 0)).collect();
    assert_eq!(all(&s), live);
    let mut rev = live.clone();
    rev.reverse();
    assert_eq!(ids(s.range(StreamId::MIN, StreamId::MAX, true)), rev);
    assert_eq!(ids(s.range(id(3, 0), id(8, 0), false)), &live[1..4]);
    assert_eq!(ids(s.range(id(3, 1), id(7, 0), true)), vec![id(7, 0)]);
    assert_eq!(ids(s.range(id(4, 0), id(6, 9), false)), vec![]);
    assert_eq!(ids(s.range(id(9, 0), id(2, 0), false)), vec![], "lo > hi");
    assert_eq!(ids(s.after(id(8, 0))), vec![id(9, 0), id(10, 0)]);
    assert_eq!(ids(s.after(StreamId::MAX)), vec![]);
    assert_eq!(
        s.range(StreamId::MIN, StreamId::MAX, true).take(2).count(),
        2
    );
    assert_eq!(s.first_entry().map(|e| e.id()), Some(id(1, 0)));
    assert_eq!(s.last_entry_id(), Some(id(10, 0)));
    assert!(s.has_entries_after(id(9, 5)));
    assert!(!s.has_entries_after(id(10, 0)));
    // Exclusive bounds as XRANGE parses them.
    let lo = StreamId::parse_bound(b"(3-0", 0, true).unwrap();
    let hi = StreamId::parse_bound(b"(9", u64::MAX, false).unwrap();
    // "(9" ends below 9-18446744073709551615: 9-0 is in.
    assert_eq!(
        ids(s.range(lo, hi, false)),
        vec![id(7, 0), id(8, 0), id(9, 0)]
    );
}

#[test]
fn xdel_tracks_first_and_max_deleted_ids() {
    let mut s = numbered(5, &Encodings::default());
    assert_eq!(
        (s.recorded_first_id(), s.max_deleted_id()),
        (id(1, 0), StreamId::MIN)
    );
    assert_eq!(s.delete(&[id(2, 0)]), 1);
    assert_eq!(
        (s.recorded_first_id(), s.max_deleted_id()),
        (id(1, 0), id(2, 0))
    );
    assert_eq!(
        s.delete(&[id(1, 0), id(1, 0), id(9, 0)]),
        1,
        "once, and only live IDs"
    );
    assert_eq!(
        (s.recorded_first_id(), s.max_deleted_id()),
        (id(3, 0), id(2, 0))
    );
    assert_eq!(s.trim(&maxlen(2, false, 0)), 1);
    assert_eq!((s.len(), s.recorded_first_id()), (2, id(4, 0)));
    assert_eq!(s.max_deleted_id(), id(2, 0), "trimming is not deletion");
    assert_eq!(s.delete(&[id(4, 0), id(5, 0)]), 2);
    assert_eq!(
        (s.len(), s.recorded_first_id(), s.node_count()),
        (0, StreamId::MIN, 0)
    );
    // The first entry ever, deleted entries included, and its absence.
    assert_eq!(s.edge_id(true, false), StreamId::MAX);
    assert_eq!(s.edge_id(false, false), StreamId::MIN);
    let mut t = numbered(3, &Encodings::default());
    t.delete(&[id(1, 0)]);
    assert_eq!(
        (t.edge_id(true, false), t.edge_id(true, true)),
        (id(1, 0), id(2, 0))
    );
}

#[test]
fn xdel_frees_a_node_with_its_last_live_entry() {
    let e = enc(2, 4096);
    let mut s = numbered(6, &e);
    assert_eq!(s.node_count(), 3);
    s.delete(&[id(3, 0)]);
    assert_eq!(s.node_count(), 3);
    s.delete(&[id(4, 0)]);
    assert_eq!(s.node_count(), 2);
    assert_eq!(all(&s), vec![id(1, 0), id(2, 0), id(5, 0), id(6, 0)]);
}

#[test]
fn trims_as_redis_tests_expect() {
    // XTRIM with MAXLEN option basic test.
    let e = enc(100, 4096);
    let mut s = numbered(1000, &e);
    assert_eq!(s.trim(&maxlen(666, false, 0)), 334);
    assert_eq!(s.trim(&maxlen(555, false, 0)), 111);
    assert_eq!(s.trim(&maxlen(444, true, Trim::default_limit(100))), 55);
    assert_eq!(s.len(), 500);
    s.trim(&maxlen(400, true, Trim::default_limit(100)));
    assert_eq!(s.len(), 400);
    // XADD with LIMIT consecutive calls (nodes of 10).
    let e = enc(10, 4096);
    let mut s = numbered(100, &e);
    add_at(&mut s, "*", &["f", "v"], 0, &e).unwrap();
    s.trim(&maxlen(55, true, 30));
    assert_eq!(s.len(), 71);
    add_at(&mut s, "*", &["f", "v"], 0, &e).unwrap();
    s.trim(&maxlen(55, true, 30));
    assert_eq!(s.len(), 62);
    // XTRIM with ~ is limited (default limit: 100 nodes of 1).
    let e = enc(1, 4096);
    let mut s = numbered(102, &e);
    s.trim(&maxlen(1, true, Trim::default_limit(1)));
    assert_eq!(s.len(), 2);
    let mut s = numbered(102, &e);
    s.trim(&maxlen(1, false, 0));
    assert_eq!(s.len(), 1, "exact trims are not limited");
    // XTRIM with LIMIT deletes no more than the limit (whole nodes).
    let mut s = numbered(3, &enc(2, 4096));
    assert_eq!(s.trim(&maxlen(0, true, 1)), 0);
    assert_eq!(s.trim(&maxlen(0, true, 2)), 2);
    // XADD with MAXLEN ~ 555 on 1000 entries leaves whole nodes: 600.
    let e = enc(100, 4096);
    let mut s = StreamValue::new();
    for i in 1..=1000 {
        add_at(&mut s, &format!("{i}-0"), &["xitem", &i.to_string()], 0, &e).unwrap();
        s.trim(&maxlen(555, true, Trim::default_limit(100)));
    }
    assert_eq!(s.len(), 600);
    // MAXLEN 0 empties the stream, which stays.
    let mut s = numbered(3, &Encodings::default());
    assert_eq!(s.trim(&maxlen(0, false, 0)), 3);
    assert_eq!((s.len(), s.last_id(), s.entries_added()), (0, id(3, 0), 3));
}

#[test]
fn trims_by_min_id() {
    let minid = |m: StreamId, approx| Trim {
        strategy: TrimStrategy::MinId(m),
        approx,
        limit: 0,
    };
    let mut s = numbered(5, &Encodings::default());
    assert_eq!(s.trim(&minid(id(3, 0), false)), 2);
    assert_eq!(all(&s), vec![id(3, 0), id(4, 0), id(5, 0)]);
    // A big delta from the node's master ID.
    let mut s = StreamValue::new();
    for t in ["1-0", "1641544570597-0", "1641544570597-1"] {
        add(&mut s, t, &["f", "v"]).unwrap();
    }
    s.trim(&minid(id(1641544570597, 0), false));
    assert_eq!(all(&s), vec![id(1641544570597, 0), id(1641544570597, 1)]);
    // Approximate: whole nodes whose last ID is below the minimum.
    let mut s = numbered(100, &enc(10, 4096));
    assert_eq!(s.trim(&minid(id(55, 0), true)), 50);
    assert_eq!(s.recorded_first_id(), id(51, 0));
    // A node whose live entries all go, up to a deleted last entry, stays (as in Redis).
    let mut s = numbered(6, &enc(3, 4096));
    s.delete(&[id(3, 0)]);
    assert_eq!(s.trim(&minid(id(3, 0), false)), 2);
    assert_eq!(
        (s.node_count(), s.len(), all(&s)),
        (2, 3, vec![id(4, 0), id(5, 0), id(6, 0)])
    );
}

#[test]
fn xsetid_checks() {
    let mut s = numbered(3, &Encodings::default());
    assert_eq!(
        s.set_id(id(2, 0), None, None),
        Err(StreamError::SetIdBelowTop)
    );
    assert_eq!(
        s.set_id(id(5, 0), Some(2), None),
        Err(StreamError::EntriesAddedBelowLength)
    );
    assert_eq!(
        s.set_id(id(5, 0), Some(9), Some(id(6, 0))),
        Err(StreamError::SetIdBelowMaxDeleted)
    );
    assert_eq!(s.set_id(id(5, 0), Some(9), Some(id(4, 0))), Ok(()));
    assert_eq!(
        (s.last_id(), s.entries_added(), s.max_deleted_id()),
        (id(5, 0), 9, id(4, 0))
    );
    assert_eq!(s.set_id(id(5, 0), None, Some(StreamId::MIN)), Ok(()));
    assert_eq!(s.max_deleted_id(), id(4, 0), "0-0 leaves it");
    // The top is the last live entry, not the last ID.
    s.delete(&[id(3, 0)]);
    assert_eq!(s.set_id(id(2, 5), None, None), Ok(()));
    assert_eq!(
        add(&mut s, "2-5", &["a", "b"]),
        Err(StreamError::IdNotGreater)
    );
    let mut empty = StreamValue::new();
    assert_eq!(empty.set_id(StreamId::MIN, Some(0), None), Ok(()));
}

#[test]
fn builder_refuses_damage() {
    let mut b = StreamBuilder::new();
    assert!(
        b.push(false, id(1, 0), false, &["f", "v"]).is_err(),
        "outside a node"
    );
    b.push(true, id(2, 0), false, &["f", "v"]).unwrap();
    assert!(
        b.push(false, id(2, 0), false, &["f", "v"]).is_err(),
        "not increasing"
    );
    assert!(
        b.push(true, id(1, 0), false, &["f", "v"]).is_err(),
        "not increasing"
    );
    assert!(
        b.push(false, id(3, 0), false, &["f"]).is_err(),
        "odd fields"
    );
    b.group(b"g", StreamId::MIN, None).unwrap();
    assert!(b.group(b"g", StreamId::MIN, None).is_err());
    assert!(b.consumer(b"x", b"c", 0).is_err());
    b.consumer(b"g", b"c", 0).unwrap();
    assert!(b.consumer(b"g", b"c", 0).is_err());
    assert!(b.pending(b"g", id(1, 0), b"nobody", 0, 1).is_err());
    b.pending(b"g", id(1, 0), b"c", 0, 1).unwrap();
    assert!(b.pending(b"g", id(1, 0), b"c", 0, 1).is_err());
    b.meta(id(1, 0), id(2, 0), StreamId::MIN, 1);
    assert!(b.finish().is_err(), "last ID below an entry");
}

#[test]
fn a_node_is_64_bytes() {
    // So 11 (ID, node) pairs and a B-tree leaf's header fit jemalloc's 896-byte class.
    assert_eq!(std::mem::size_of::<super::node::Node>(), 64);
    assert_eq!(std::mem::size_of::<crate::value::Value>(), 32);
}

#[test]
fn memory_is_compact() {
    let e = Encodings::default();
    let mut s = StreamValue::new();
    for i in 0..10_000u64 {
        let v = format!("{}", i % 977);
        add_at(
            &mut s,
            "*",
            &["f1", &v, "f2", "abc", "f3", "xyz"],
            1_700_000_000_000 + i / 16,
            &e,
        )
        .unwrap();
    }
    let per_entry = s.heap_bytes() as f64 / 10_000.0;
    // Values 4+4+4 bytes with their lengths, head and ID 2: about 15, nodes' overhead ~1.
    assert!(per_entry < 20.0, "{per_entry} bytes an entry");
    assert!(s.free_effort() >= s.node_count());
}
