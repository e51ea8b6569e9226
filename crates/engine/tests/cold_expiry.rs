//! The background pass over cold keys with a TTL (`Keyspace::cold_expire_step`) reads
//! whole shards of the store: it rests while what it reads is not due, and removes what
//! is once it comes due.

mod common;

use common::Store;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};
use strata_engine::{clock, Keyspace, Ttl, COLD_REST_MAX};

#[test]
fn the_cold_pass_rests_until_its_keys_come_due() {
    // Four shards, each with cold keys that expire in 1.5 s.
    let ks = Keyspace::new(1, 2);
    let store = Arc::new(Store::default());
    ks.set_cold_store(store.clone());
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
