//! Consumer groups: reads, acknowledgements, claims, read counters and lag, as Redis's
//! stream-cgroups tests exercise them.

use super::tests::{add, enc, id, maxlen, numbered};
use super::*;

fn read(
    s: &mut StreamValue,
    group: &str,
    consumer: &str,
    from: ReadFrom,
    count: usize,
    noack: bool,
    now: u64,
) -> Vec<(StreamId, bool)> {
    let mut got = Vec::new();
    let req = ReadGroup {
        group: group.as_bytes(),
        consumer: consumer.as_bytes(),
        from,
        count,
        noack,
    };
    s.read_group(&req, now, &mut |i, e| got.push((i, e.is_some())))
        .unwrap();
    got
}

fn pel(s: &StreamValue, group: &str) -> Vec<(StreamId, String, i64, u64)> {
    s.group(group.as_bytes())
        .unwrap()
        .pending(StreamId::MIN, StreamId::MAX)
        .map(|p| {
            (
                p.id,
                String::from_utf8_lossy(p.consumer).into_owned(),
                p.delivery_time,
                p.delivery_count,
            )
        })
        .collect()
}

#[test]
fn groups_and_consumers() {
    let mut s = numbered(3, &Encodings::default());
    assert_eq!(s.create_group(b"g", StreamId::MIN, None), Ok(()));
    assert_eq!(
        s.create_group(b"g", StreamId::MIN, None),
        Err(StreamError::BusyGroup)
    );
    assert_eq!(s.create_consumer(b"g", b"alice", 5), Some(true));
    assert_eq!(s.create_consumer(b"g", b"alice", 6), Some(false));
    assert_eq!(s.create_consumer(b"nope", b"alice", 6), None);
    assert_eq!(
        read(&mut s, "g", "bob", ReadFrom::New, 2, false, 10).len(),
        2
    );
    let g = s.group(b"g").unwrap();
    let names: Vec<&[u8]> = g.consumers().map(|c| c.name()).collect();
    assert_eq!(names, vec![&b"alice"[..], b"bob"]);
    assert_eq!(
        g.consumer(b"alice").map(|c| (c.seen_time(), c.idle(3))),
        Some((5, 0))
    );
    assert_eq!(
        g.consumer(b"bob").map(|c| (c.seen_time(), c.pending_len())),
        Some((10, 2))
    );
    assert_eq!(s.delete_consumer(b"g", b"bob"), Some(2));
    assert_eq!(s.delete_consumer(b"g", b"bob"), Some(0));
    assert_eq!(s.group(b"g").map(|g| g.pending_len()), Some(0));
    // A new consumer takes the freed slot; nothing of bob's is left to it.
    assert_eq!(
        read(
            &mut s,
            "g",
            "carol",
            ReadFrom::History(StreamId::MIN),
            0,
            false,
            11
        ),
        vec![]
    );
    assert!(s.set_group_id(b"g", id(1, 0), Some(1)));
    assert_eq!(
        s.group(b"g").map(|g| (g.last_id(), g.entries_read())),
        Some((id(1, 0), Some(1)))
    );
    assert!(!s.set_group_id(b"none", id(1, 0), None));
    assert!(s.destroy_group(b"g"));
    assert!(!s.destroy_group(b"g"));
    assert_eq!(s.group_count(), 0);
}

#[test]
fn xreadgroup_delivers_new_entries_and_history() {
    let mut s = numbered(4, &Encodings::default());
    s.create_group(b"g", StreamId::MIN, None).unwrap();
    let got = read(&mut s, "g", "c1", ReadFrom::New, 2, false, 100);
    assert_eq!(got, vec![(id(1, 0), true), (id(2, 0), true)]);
    assert_eq!(
        pel(&s, "g"),
        vec![
            (id(1, 0), "c1".into(), 100, 1),
            (id(2, 0), "c1".into(), 100, 1)
        ]
    );
    // NOACK advances the group but leaves no pending entry.
    assert_eq!(
        read(&mut s, "g", "c1", ReadFrom::New, 1, true, 101).len(),
        1
    );
    assert_eq!(
        s.group(b"g").map(|g| (g.last_id(), g.pending_len())),
        Some((id(3, 0), 2))
    );
    // History: the consumer's own pending entries above the ID, each delivered again.
    let got = read(
        &mut s,
        "g",
        "c1",
        ReadFrom::History(id(1, 0)),
        0,
        false,
        150,
    );
    assert_eq!(got, vec![(id(2, 0), true)]);
    assert_eq!(pel(&s, "g")[1], (id(2, 0), "c1".into(), 150, 2));
    assert_eq!(
        read(
            &mut s,
            "g",
            "c2",
            ReadFrom::History(StreamId::MIN),
            0,
            false,
            150
        ),
        vec![]
    );
    // A deleted pending entry comes back as its ID alone, untouched.
    s.delete(&[id(1, 0)]);
    let got = read(
        &mut s,
        "g",
        "c1",
        ReadFrom::History(StreamId::MIN),
        0,
        false,
        160,
    );
    assert_eq!(got, vec![(id(1, 0), false), (id(2, 0), true)]);
    assert_eq!(pel(&s, "g")[0], (id(1, 0), "c1".into(), 100, 1));
    assert_eq!(
        s.group(b"g")
            .and_then(|g| g.consumer(b"c1"))
            .map(|c| c.seen_time()),
        Some(160)
    );
}

#[test]
fn xreadgroup_reassigns_entries_after_setid() {
    let mut s = StreamValue::new();
    for t in ["1-0", "2-0", "3-0", "4-0"] {
        add(&mut s, t, &["f1", "v1"]).unwrap();
    }
    s.create_group(b"g1", s.last_id(), None).unwrap();
    add(&mut s, "5-0", &["f1", "v1"]).unwrap();
    assert_eq!(
        read(&mut s, "g1", "c1", ReadFrom::New, 0, false, 7).len(),
        1
    );
    assert!(s.set_group_id(b"g1", StreamId::MIN, None));
    assert_eq!(
        read(&mut s, "g1", "c2", ReadFrom::New, 0, false, 8).len(),
        5
    );
    let owners: Vec<String> = pel(&s, "g1").into_iter().map(|p| p.1).collect();
    assert_eq!(owners, vec!["c2"; 5]);
    let g = s.group(b"g1").unwrap();
    assert_eq!(g.consumer(b"c1").map(|c| c.pending_len()), Some(0));
    assert_eq!(g.consumer(b"c2").map(|c| c.pending_len()), Some(5));
}

#[test]
fn ack_and_pending() {
    let mut s = numbered(5, &Encodings::default());
    s.create_group(b"g", StreamId::MIN, None).unwrap();
    read(&mut s, "g", "a", ReadFrom::New, 2, false, 100);
    read(&mut s, "g", "b", ReadFrom::New, 3, false, 200);
    let sum = s.group(b"g").unwrap().pending_summary();
    assert_eq!(sum.count, 5);
    assert_eq!(sum.bounds, Some((id(1, 0), id(5, 0))));
    assert_eq!(sum.consumers, vec![(&b"a"[..], 2), (&b"b"[..], 3)]);
    let g = s.group(b"g").unwrap();
    let ext = |count, consumer: Option<&[u8]>, idle| {
        g.pending_extended(id(2, 0), StreamId::MAX, count, consumer, idle, 250)
            .iter()
            .map(|p| p.id)
            .collect::<Vec<_>>()
    };
    assert_eq!(
        ext(10, None, 0),
        vec![id(2, 0), id(3, 0), id(4, 0), id(5, 0)]
    );
    assert_eq!(ext(2, None, 0), vec![id(2, 0), id(3, 0)]);
    assert_eq!(
        ext(10, None, 100),
        vec![id(2, 0)],
        "idle 150 >= 100, the others 50"
    );
    assert_eq!(ext(10, Some(b"b"), 0), vec![id(3, 0), id(4, 0), id(5, 0)]);
    assert_eq!(ext(10, Some(b"zed"), 0), vec![]);
    assert_eq!(ext(0, None, 0), vec![]);
    assert_eq!(s.ack(b"g", &[id(1, 0), id(1, 0), id(4, 0), id(9, 0)]), 2);
    assert_eq!(s.ack(b"nope", &[id(2, 0)]), 0);
    let sum = s.group(b"g").unwrap().pending_summary();
    assert_eq!(
        (sum.count, sum.consumers),
        (3, vec![(&b"a"[..], 1), (&b"b"[..], 2)])
    );
    s.ack(b"g", &[id(2, 0), id(3, 0), id(5, 0)]);
    let sum = s.group(b"g").unwrap().pending_summary();
    assert_eq!((sum.count, sum.bounds, sum.consumers.len()), (0, None, 0));
}

fn claim(
    s: &mut StreamValue,
    consumer: &str,
    ids: &[StreamId],
    opts: &ClaimOpts,
    now: u64,
) -> (Vec<(StreamId, bool)>, ClaimOutcome) {
    let mut got = Vec::new();
    let out = s
        .claim(b"grp", consumer.as_bytes(), ids, opts, now, &mut |i, e| {
            got.push((i, e.is_some()))
        })
        .unwrap();
    (got, out)
}

#[test]
fn xclaim() {
    let mut s = numbered(3, &Encodings::default());
    s.create_group(b"grp", StreamId::MIN, None).unwrap();
    read(&mut s, "grp", "alice", ReadFrom::New, 0, false, 1000);
    let all3 = [id(1, 0), id(2, 0), id(3, 0)];
    let idle = |ms| ClaimOpts {
        min_idle: ms,
        ..ClaimOpts::default()
    };
    // Not idle long enough: nothing.
    assert_eq!(claim(&mut s, "bob", &all3, &idle(500), 1200).0, vec![]);
    assert!(
        s.group(b"grp").unwrap().consumer(b"bob").is_none(),
        "created at the first claim only"
    );
    // XCLAIM with XDEL: the deleted entry leaves the PEL.
    s.delete(&[id(2, 0)]);
    let (got, out) = claim(&mut s, "bob", &all3, &idle(0), 1300);
    assert_eq!(got, vec![(id(1, 0), true), (id(3, 0), true)]);
    assert_eq!((out.dropped, out.consumer_created), (vec![id(2, 0)], true));
    assert_eq!(
        pel(&s, "grp"),
        vec![
            (id(1, 0), "bob".into(), 1300, 2),
            (id(3, 0), "bob".into(), 1300, 2)
        ]
    );
    assert_eq!(
        s.group(b"grp")
            .unwrap()
            .consumer(b"alice")
            .map(|c| c.pending_len()),
        Some(0)
    );
    // JUSTID leaves the count; RETRYCOUNT sets it; TIME in the future means now; LASTID.
    let justid = ClaimOpts {
        justid: true,
        ..ClaimOpts::default()
    };
    assert_eq!(
        claim(&mut s, "carol", &[id(1, 0)], &justid, 1400).0,
        vec![(id(1, 0), false)]
    );
    let opts = ClaimOpts {
        retry_count: Some(7),
        time: Some(ClaimTime::At(99_999)),
        last_id: id(9, 0),
        ..ClaimOpts::default()
    };
    let (_, out) = claim(&mut s, "carol", &[id(3, 0)], &opts, 1500);
    assert!(out.last_id_moved && !out.consumer_created);
    assert_eq!(
        pel(&s, "grp"),
        vec![
            (id(1, 0), "carol".into(), 1400, 2),
            (id(3, 0), "carol".into(), 1500, 7)
        ]
    );
    let opts = ClaimOpts {
        time: Some(ClaimTime::Idle(100)),
        ..ClaimOpts::default()
    };
    claim(&mut s, "carol", &[id(3, 0)], &opts, 1600);
    assert_eq!(
        pel(&s, "grp")[1],
        (id(3, 0), "carol".into(), 1500, 8),
        "same consumer keeps it"
    );
    assert_eq!(s.group(b"grp").map(|g| g.last_id()), Some(id(9, 0)));
    // FORCE: an existing entry not pending becomes pending (idle ignored); a missing one not.
    s.ack(b"grp", &[id(1, 0)]);
    let force = ClaimOpts {
        force: true,
        min_idle: 10_000,
        ..ClaimOpts::default()
    };
    let (got, _) = claim(&mut s, "dave", &[id(1, 0), id(2, 0)], &force, 1700);
    assert_eq!(got, vec![(id(1, 0), true)]);
    assert_eq!(pel(&s, "grp")[0], (id(1, 0), "dave".into(), 1700, 2));
    assert_eq!(
        claim(&mut s, "x", &all3, &idle(0), 1700).0.len(),
        2,
        "idle 0: all pending"
    );
    assert!(s
        .claim(b"nope", b"x", &all3, &idle(0), 1, &mut |_, _| {})
        .is_none());
}

#[test]
fn xclaim_after_trimming() {
    let mut s = numbered(3, &enc(2, 4096));
    s.create_group(b"grp", StreamId::MIN, None).unwrap();
    read(&mut s, "grp", "alice", ReadFrom::New, 0, false, 0);
    s.trim(&maxlen(1, false, 0));
    let (got, out) = claim(
        &mut s,
        "bob",
        &[id(1, 0), id(2, 0), id(3, 0)],
        &ClaimOpts::default(),
        5,
    );
    assert_eq!(
        (got, out.dropped),
        (vec![(id(3, 0), true)], vec![id(1, 0), id(2, 0)])
    );
    assert_eq!(
        s.group(b"grp")
            .unwrap()
            .consumer(b"alice")
            .map(|c| c.pending_len()),
        Some(0)
    );
}

fn autoclaim(
    s: &mut StreamValue,
    consumer: &str,
    min_idle: i64,
    start: StreamId,
    count: usize,
    justid: bool,
    now: u64,
) -> (StreamId, Vec<(StreamId, bool)>, Vec<StreamId>) {
    let mut got = Vec::new();
    let req = AutoClaim {
        min_idle,
        start,
        count,
        justid,
    };
    let out = s
        .autoclaim(b"grp", consumer.as_bytes(), &req, now, &mut |i, e| {
            got.push((i, e.is_some()))
        })
        .unwrap();
    (out.cursor, got, out.deleted)
}

#[test]
fn xautoclaim() {
    // With XDEL and COUNT: deleted entries count.
    let mut s = numbered(3, &Encodings::default());
    s.create_group(b"grp", StreamId::MIN, None).unwrap();
    read(&mut s, "grp", "alice", ReadFrom::New, 0, false, 0);
    s.delete(&[id(1, 0), id(2, 0)]);
    assert_eq!(
        autoclaim(&mut s, "bob", 0, StreamId::MIN, 1, false, 5),
        (id(2, 0), vec![], vec![id(1, 0)])
    );
    assert_eq!(
        autoclaim(&mut s, "bob", 0, id(2, 0), 1, false, 5),
        (id(3, 0), vec![], vec![id(2, 0)])
    );
    assert_eq!(
        autoclaim(&mut s, "bob", 0, id(3, 0), 1, false, 5),
        (StreamId::MIN, vec![(id(3, 0), true)], vec![])
    );
    assert_eq!(pel(&s, "grp"), vec![(id(3, 0), "bob".into(), 5, 2)]);
    // As an iterator, with an idle filter and JUSTID.
    let mut s = numbered(5, &Encodings::default());
    s.create_group(b"grp", StreamId::MIN, None).unwrap();
    read(&mut s, "grp", "c1", ReadFrom::New, 2, false, 100);
    read(&mut s, "grp", "c1", ReadFrom::New, 0, false, 300);
    let (cursor, got, _) = autoclaim(&mut s, "c2", 150, StreamId::MIN, 1, true, 320);
    assert_eq!((cursor, got), (id(2, 0), vec![(id(1, 0), false)]));
    let (cursor, got, _) = autoclaim(&mut s, "c2", 150, cursor, 5, false, 320);
    assert_eq!(
        (cursor, got),
        (StreamId::MIN, vec![(id(2, 0), true)]),
        "3..5 idle 20"
    );
    assert_eq!(
        pel(&s, "grp")[..2],
        [
            (id(1, 0), "c2".into(), 320, 1),
            (id(2, 0), "c2".into(), 320, 2)
        ]
    );
    // At most 10 * COUNT pending entries are examined.
    let mut s = numbered(30, &Encodings::default());
    s.create_group(b"grp", StreamId::MIN, None).unwrap();
    read(&mut s, "grp", "c1", ReadFrom::New, 0, false, 100);
    let (cursor, got, _) = autoclaim(&mut s, "c2", 1000, StreamId::MIN, 2, false, 200);
    assert_eq!((cursor, got.len()), (id(21, 0), 0));
}

fn lag(s: &StreamValue, g: &str) -> (Option<i64>, Option<i64>) {
    let g = s.group(g.as_bytes()).unwrap();
    (g.entries_read(), g.lag())
}

#[test]
fn read_counter_and_lag_in_empty_streams() {
    let mut s = StreamValue::new();
    s.create_group(b"g1", StreamId::MIN, None).unwrap();
    assert_eq!(lag(&s, "g1"), (None, Some(0)));
    add(&mut s, "1-0", &["data", "a"]).unwrap();
    s.delete(&[id(1, 0)]);
    assert_eq!((s.max_deleted_id(), s.entries_added()), (id(1, 0), 1));
    assert_eq!(lag(&s, "g1"), (None, Some(0)));
}

#[test]
fn read_counter_and_lag() {
    let mut s = numbered(5, &Encodings::default());
    s.create_group(b"g1", StreamId::MIN, None).unwrap();
    assert_eq!(lag(&s, "g1"), (None, Some(5)));
    read(&mut s, "g1", "c11", ReadFrom::New, 1, false, 0);
    assert_eq!(lag(&s, "g1"), (Some(1), Some(4)));
    read(&mut s, "g1", "c12", ReadFrom::New, 10, false, 0);
    assert_eq!(lag(&s, "g1"), (Some(5), Some(0)));
    add(&mut s, "6-0", &["f", "v"]).unwrap();
    assert_eq!(lag(&s, "g1"), (Some(5), Some(1)));
}

#[test]
fn lag_with_xdels() {
    let mut s = numbered(5, &Encodings::default());
    s.delete(&[id(3, 0)]);
    s.create_group(b"g1", StreamId::MIN, None).unwrap();
    s.create_group(b"g2", StreamId::MIN, None).unwrap();
    assert_eq!(lag(&s, "g1"), (None, None));
    for _ in 0..3 {
        read(&mut s, "g1", "c11", ReadFrom::New, 1, false, 0);
        assert_eq!(lag(&s, "g1"), (None, None));
    }
    read(&mut s, "g1", "c11", ReadFrom::New, 1, false, 0);
    assert_eq!(lag(&s, "g1"), (Some(5), Some(0)));
    add(&mut s, "6-0", &["f", "v"]).unwrap();
    assert_eq!(lag(&s, "g1"), (Some(5), Some(1)));
    let minid = |m| Trim {
        strategy: TrimStrategy::MinId(m),
        approx: false,
        limit: 0,
    };
    s.trim(&minid(id(3, 0)));
    assert_eq!(
        (lag(&s, "g1"), lag(&s, "g2")),
        ((Some(5), Some(1)), (None, Some(3)))
    );
    s.trim(&minid(id(5, 0)));
    assert_eq!(
        (lag(&s, "g1"), lag(&s, "g2")),
        ((Some(5), Some(1)), (None, Some(2)))
    );
}
