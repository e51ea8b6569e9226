//! Snapshot capture in chunks (`Db::capture_chunk`) while writes go on between chunks:
//! whatever the writes do (overwrite keys given already or not yet, delete and re-insert
//! them, move them between the inline and the block table, grow either until it rehashes), the capture gives every key exactly once, with
//! its value at the snapshot's start. Checked against a model of the writes.

mod common;

use proptest::prelude::*;
use std::collections::BTreeMap;
use strata_engine::{Capture, Db, Keyspace, Ttl};

const EPOCH: u64 = 1;

#[derive(Debug, Clone)]
enum Step {
    /// Capture up to this many more buckets.
    Chunk(usize),
    Set(u16, u8),
    Del(u16),
    /// The second half of a command that deleted the key earlier (as RENAME onto an
    /// existing key may): sets it again without a second `preserve`.
    Readd(u16, u8),
    /// A read-only command that edits the value in place without changing it (PFCOUNT
    /// writing its cache), so without `preserve`: an inline string moves to the block table.
    Edit(u16),
}

fn step() -> impl Strategy<Value = Step> {
    // Keys 0..600 over an initial fill of keys below 200: writes hit keys given already,
    // keys not reached yet and new keys (which grow the table and make it rehash).
    prop_oneof![
        (1usize..48).prop_map(Step::Chunk),
        (0u16..600, any::<u8>()).prop_map(|(k, v)| Step::Set(k, v)),
        (0u16..600).prop_map(Step::Del),
        (0u16..600).prop_map(Step::Edit),
    ]
}

fn key(k: u16) -> Vec<u8> {
    format!("key:{k}").into_bytes()
}

/// The value `v` stands for: short (inline) when even, a block when odd, so writes move
/// keys between a shard's two tables as well as within them.
fn value(v: u8) -> Vec<u8> {
    vec![v; if v.is_multiple_of(2) { 3 } else { 24 }]
}

/// A write as the server does it during a snapshot: preserve, then change.
fn write(db: &Db, s: &Step) {
    match *s {
        Step::Set(k, v) => {
            db.preserve(&key(k), EPOCH);
            db.lock1(&key(k)).set_str(&key(k), &value(v), Ttl::Clear);
        }
        Step::Del(k) => {
            db.preserve(&key(k), EPOCH);
            db.lock1(&key(k)).remove(&key(k));
        }
        Step::Readd(k, v) => db.lock1(&key(k)).set_str(&key(k), &value(v), Ttl::Clear),
        Step::Edit(k) => {
            let _ = db.lock1(&key(k)).str_mut(&key(k));
        }
        Step::Chunk(_) => {}
    }
}

/// One capture call (`common::capture_into`).
fn chunk(db: &Db, buckets: usize, got: &mut BTreeMap<Vec<u8>, Vec<u8>>) -> Capture {
    common::capture_into(db, EPOCH, buckets, got)
}

fn run(initial: &[(u16, u8)], steps: &[Step]) {
    // One shard, so the whole keyspace is one table walked in many chunks.
    let ks = Keyspace::new(1, 0);
    let db = ks.db(0);
    let mut at_start = BTreeMap::new();
    for &(k, v) in initial {
        db.lock1(&key(k)).set_str(&key(k), &value(v), Ttl::Clear);
        at_start.insert(key(k), value(v));
    }
    let chunk_of = |s: &Step| match s {
        Step::Chunk(n) => Some(*n),
        _ => None,
    };
    let got = common::capture_during(db, EPOCH, steps, chunk_of, |s| write(db, s));
    assert_eq!(got, at_start);
    assert_eq!(chunk(db, 16, &mut BTreeMap::new()), Capture::Already);
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]
    #[test]
    fn chunked_capture_is_point_in_time(
        initial in prop::collection::vec((0u16..200, any::<u8>()), 0..200),
        steps in prop::collection::vec(step(), 0..400),
    ) {
        run(&initial, &steps);
    }
}

/// A key given by a chunk, deleted, its slot taken by another key, then re-inserted by the
/// same command: it lands in a bucket the walk has yet to reach, and must not be given
/// again.
#[test]
fn reinserted_keys_are_not_given_twice() {
    // 1700 keys fill the table (2048 buckets, room for 1792) densely, so a re-inserted key
    // often lands away from its old bucket; rounds of 40 keys never make it rehash.
    let initial: Vec<(u16, u8)> = (0..1700).map(|k| (k, 1)).collect();
    let mut steps = vec![];
    for round in 0..40u16 {
        steps.push(Step::Chunk(50));
        let old = round * 40..round * 40 + 40;
        let fresh = 5000 + round * 40..5040 + round * 40;
        steps.extend(old.clone().map(Step::Del));
        steps.extend(fresh.clone().map(|k| Step::Set(k, 3)));
        steps.extend(old.map(|k| Step::Readd(k, 2)));
        steps.extend(fresh.map(Step::Del));
    }
    run(&initial, &steps);
}

/// Keys a chunk gave already move from the inline table to the block table, ahead of the
/// walk, by a read-only edit that does not `preserve` them: none is given twice.
#[test]
fn keys_moved_by_a_read_only_edit_are_given_once() {
    // 50 inline keys (64 buckets, walked first) and 200 block keys (256 buckets, room for
    // 224): the first chunk gives the inline table, then 20 of its keys move into the
    // block table, which the walk has yet to reach, without making it grow.
    let mut initial: Vec<(u16, u8)> = (0..50).map(|k| (k, 2)).collect();
    initial.extend((100..300).map(|k| (k, 1)));
    let mut steps = vec![Step::Chunk(64)];
    steps.extend((0..20).map(Step::Edit));
    run(&initial, &steps);
}

/// Inserts mid-walk until the table grows: entries move, none is lost or given twice.
#[test]
fn a_table_growing_mid_walk_keeps_start_values() {
    let initial: Vec<(u16, u8)> = (0..100).map(|k| (k, 1)).collect();
    let mut steps = vec![Step::Chunk(40)];
    for k in 200..600 {
        steps.push(Step::Set(k, 3));
        if k % 50 == 0 {
            steps.push(Step::Chunk(8));
        }
    }
    run(&initial, &steps);
}

/// A writer that captures a shard whole (as FLUSHALL does) after the walk started gets the
/// rest of it, and the walk then finds the shard captured.
#[test]
fn whole_capture_finishes_a_started_walk() {
    let ks = Keyspace::new(1, 0);
    let db = ks.db(0);
    for k in 0..300 {
        db.lock1(&key(k)).set_str(&key(k), b"v", Ttl::Clear);
    }
    let mut got = BTreeMap::new();
    assert_eq!(chunk(db, 64, &mut got), Capture::More);
    assert_eq!(chunk(db, usize::MAX, &mut got), Capture::Done);
    assert_eq!(got.len(), 300);
    assert!(!db.capture_shard(0, EPOCH, |_| {}));
}
