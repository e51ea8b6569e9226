//! A snapshot's capture over the cold store: the capture gives every key exactly once with
//! its value at the snapshot's start, whatever the writes, reads and evictions between its
//! chunks do to cold and hot keys (docs/tiering.md, invariant 3). Checked against a model.

mod common;

use proptest::prelude::*;
use std::collections::BTreeMap;
use strata_engine::{Db, Keyspace, Ttl};

const EPOCH: u64 = 1;

#[derive(Debug, Clone)]
enum Step {
    /// Capture up to this many more buckets.
    Chunk(usize),
    Set(u16, u8),
    Append(u16),
    Del(u16),
    Get(u16),
    Evict(u16),
}

fn step() -> impl Strategy<Value = Step> {
    prop_oneof![
        (1usize..24).prop_map(Step::Chunk),
        (0u16..300, any::<u8>()).prop_map(|(k, v)| Step::Set(k, v)),
        (0u16..300).prop_map(Step::Append),
        (0u16..300).prop_map(Step::Del),
        (0u16..300).prop_map(Step::Get),
        (0u16..300).prop_map(Step::Evict),
    ]
}

fn key(k: u16) -> Vec<u8> {
    format!("key:{k}").into_bytes()
}

fn value(v: u8) -> Vec<u8> {
    vec![v; 1 + v as usize % 40]
}

/// A write as the server does it during a snapshot: preserve, then change.
fn apply(db: &Db, s: &Step) {
    match *s {
        Step::Set(k, v) => {
            db.preserve(&key(k), EPOCH);
            db.lock1(&key(k)).set_str(&key(k), &value(v), Ttl::Clear);
        }
        Step::Append(k) => {
            db.preserve(&key(k), EPOCH);
            let mut l = db.lock1(&key(k));
            let mut v = l
                .get_str(&key(k))
                .ok()
                .flatten()
                .unwrap_or_default()
                .to_vec();
            v.push(b'+');
            l.set_str(&key(k), &v, Ttl::Keep);
        }
        Step::Del(k) => {
            db.preserve(&key(k), EPOCH);
            db.lock1(&key(k)).remove(&key(k));
        }
        Step::Get(k) => {
            let _ = db.lock1(&key(k)).get_str(&key(k));
        }
        Step::Evict(k) => {
            db.evict_to_cold(&key(k), false).unwrap();
        }
        Step::Chunk(_) => {}
    }
}

/// Fills one shard with `initial`, moves the keys `cold` picks to the store, then runs
/// `steps` and the capture to its end.
fn run(initial: &[(u16, u8)], cold: impl Fn(u16) -> bool, steps: &[Step]) {
    let ks = Keyspace::new(1, 0);
    ks.set_cold_store(std::sync::Arc::new(common::Store::default()));
    let db = ks.db(0);
    let mut at_start = BTreeMap::new();
    for &(k, v) in initial {
        db.lock1(&key(k)).set_str(&key(k), &value(v), Ttl::Clear);
        at_start.insert(key(k), value(v));
    }
    for &(k, _) in initial {
        if cold(k) {
            db.evict_to_cold(&key(k), false).unwrap();
        }
    }
    let chunk_of = |s: &Step| match s {
        Step::Chunk(n) => Some(*n),
        _ => None,
    };
    let got = common::capture_during(db, EPOCH, steps, chunk_of, |s| apply(db, s));
    assert_eq!(got, at_start);
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]
    #[test]
    fn capture_over_cold_keys_is_point_in_time(
        initial in prop::collection::vec((0u16..200, any::<u8>()), 0..150),
        steps in prop::collection::vec(step(), 0..300),
    ) {
        run(&initial, |k| k % 3 != 0, &steps);
    }
}

/// Keys evicted during the capture, before and after their shard saves entries aside,
/// then rewritten, deleted or read back.
#[test]
fn keys_evicted_during_the_capture_keep_their_start_values() {
    let initial = [(1, 1), (2, 2), (3, 3)];
    let steps = [
        Step::Evict(1),
        Step::Evict(3),
        Step::Set(1, 5),
        Step::Evict(2),
        Step::Del(2),
        Step::Get(3),
    ];
    run(&initial, |_| false, &steps);
}

/// Cold keys read back during the capture (clean), then changed or evicted again.
#[test]
fn cold_keys_read_back_then_changed_keep_their_start_values() {
    let initial: Vec<(u16, u8)> = (0..50).map(|k| (k, 3)).collect();
    let mut steps = vec![];
    for k in 0..50 {
        steps.push(Step::Get(k));
        steps.push(match k % 3 {
            0 => Step::Append(k),
            1 => Step::Evict(k),
            _ => Step::Set(k, 4),
        });
        if k % 10 == 0 {
            steps.push(Step::Chunk(8));
        }
    }
    run(&initial, |_| true, &steps);
}
