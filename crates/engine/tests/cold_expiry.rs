//! The background pass over cold keys with a TTL (`Keyspace::cold_expire_step`) reads
//! whole shards of the store: it rests while what it reads is not due, and removes what
//! is once it comes due.

mod common;

use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};
use strata_engine::{clock, Ttl, COLD_REST_MAX};

#[test]
fn the_cold_pass_rests_until_its_keys_come_due() {
    // Four shards, each with cold keys that expire in 1.5 s.
    let (ks, store) = common::tiered();
    let db = ks.db(0);
    let due = clock::now_ms() + 1500;
    let start = Instant::now();
    for i in 0..40 {
        let k = format!("k{i}");
        db.lock1(k.as_bytes())
            .set_str(k.as_bytes(), b"v", Ttl::At(due));
        db.evict_to_cold(k.as_bytes(), false).unwrap();
    }
    assert_eq!(store.map.lock().len(), 40);

    // A hundred steps before they are due: each step that runs walks the four shards.
    for _ in 0..100 {
        assert_eq!(ks.cold_expire_step(), 0);
    }
    assert!(
        start.elapsed() < Duration::from_millis(1500),
        "a slow machine"
    );
    let walks = store.walks.load(Ordering::Relaxed);
    assert!(
        (4..100).contains(&walks),
        "{walks} shard walks in 100 steps: the pass did not rest"
    );

    // Once they are due, the pass wakes within its longest rest and takes them all.
    std::thread::sleep(Duration::from_millis(1500).saturating_sub(start.elapsed()));
    std::thread::sleep(Duration::from_millis(50));
    let mut removed = 0;
    for _ in 0..=COLD_REST_MAX + 4 {
        removed += ks.cold_expire_step();
    }
    assert_eq!(removed, 40);
    assert_eq!(db.len(), 0);
    assert!(store.map.lock().is_empty());
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
