//! The background pass over cold keys with a TTL (`Keyspace::cold_expire_step`) asks the
//! store for each shard's due entries and removes them as expired keys are.

mod common;

use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};
use strata_engine::{clock, Ttl};

#[test]
fn the_cold_pass_removes_what_comes_due_and_nothing_else() {
    // Four shards, each with cold keys: 40 that expire in 1.5 s, 8 in an hour.
    let (ks, store) = common::tiered();
    let db = ks.db(0);
    let now = clock::now_ms();
    let start = Instant::now();
    let keys = (0..48).map(|i| format!("k{i}"));
    for (i, k) in keys.enumerate() {
        let due = now + if i < 40 { 1500 } else { 3_600_000 };
        db.lock1(k.as_bytes())
            .set_str(k.as_bytes(), b"v", Ttl::At(due));
        db.evict_to_cold(k.as_bytes(), false).unwrap();
    }
    assert_eq!(store.map.lock().len(), 48);

    // Before they are due, steps visit the shards and remove nothing.
    for _ in 0..20 {
        assert_eq!(ks.cold_expire_step(), 0);
    }
    assert!(
        start.elapsed() < Duration::from_millis(1500),
        "a slow machine"
    );
    assert!(store.walks.load(Ordering::Relaxed) >= 4);
    assert_eq!(store.map.lock().len(), 48);

    // Once they are due, one step (it visits every shard of four) takes them all.
    std::thread::sleep(Duration::from_millis(1550).saturating_sub(start.elapsed()));
    assert_eq!(ks.cold_expire_step(), 40);
    assert_eq!(ks.cold_expire_step(), 0);
    assert_eq!(db.len(), 8);
    let mut left: Vec<Vec<u8>> = store.map.lock().keys().map(|p| p.2.clone()).collect();
    left.sort();
    let long: Vec<Vec<u8>> = (40..48).map(|i| format!("k{i}").into_bytes()).collect();
    assert_eq!(left, long);
}

/// A whole write of a cold key with a TTL: a live one counts as there (DEL deletes it),
/// one whose TTL passed while it was cold counts as gone, as a hot key would.
#[test]
fn whole_writes_see_the_expiry_of_cold_keys() {
    let (ks, store) = common::tiered();
    let db = ks.db(0);
    let now = clock::now_ms();
    for (k, at) in [("live", now + 3_600_000), ("gone", now + 100), ("plain", 0)] {
        let ttl = if at == 0 { Ttl::Clear } else { Ttl::At(at) };
        db.lock1(k.as_bytes()).set_str(k.as_bytes(), b"v", ttl);
        db.evict_to_cold(k.as_bytes(), false).unwrap();
    }
    assert_eq!(store.map.lock().len(), 3);
    std::thread::sleep(Duration::from_millis(150));
    for (k, existed) in [("live", true), ("gone", false), ("plain", true)] {
        assert_eq!(db.lock1(k.as_bytes()).remove(k.as_bytes()), existed, "{k}");
    }
    assert!(store.map.lock().is_empty());
    assert_eq!(db.len(), 0);
    // No cold key with a TTL is left for the pass to visit.
    let walks = store.walks.load(Ordering::Relaxed);
    ks.cold_expire_step();
    assert_eq!(store.walks.load(Ordering::Relaxed), walks);
}
