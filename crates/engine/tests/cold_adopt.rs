//! A start that keeps the cold store adopts its entries (`Db::adopt_cold`,
//! `Db::adopt_clean`): the keyspace must count and find each key once, in one place.

mod common;

use strata_engine::{ColdStore, Ttl};

#[test]
fn a_key_given_clean_then_cold_is_one_clean_key() {
    let (ks, store) = common::tiered();
    let db = ks.db(0);
    // Spill two keys: the store files them by shard, as the engine hashes them.
    for (k, v) in [(&b"k"[..], &b"v"[..]), (b"cold", b"c")] {
        db.lock1(k).set_str(k, v, Ttl::Clear);
        db.evict_to_cold(k, false).unwrap();
    }
    let shard = |key: &[u8]| {
        let m = store.map.lock();
        m.keys().find(|(_, _, k)| k == key).unwrap().1
    };
    let shard_k = shard(b"k");
    // A fresh keyspace over the same store: the capture gave "k" clean, then again with
    // the store's entries (evicted while its shard was captured); "cold" only there.
    let ks = common::keyspace_over(&store);
    let db = ks.db(0);
    db.adopt_clean(b"k", common::string(b"v"));
    db.adopt_cold(b"k", false);
    db.adopt_cold(b"cold", false);
    assert_eq!(ks.db(0).len(), 2);
    assert_eq!(db.lock1(b"k").get_str(b"k").unwrap(), Some(&b"v"[..]));
    assert_eq!(db.lock1(b"cold").get_str(b"cold").unwrap(), Some(&b"c"[..]));
    // A write drops the clean copy: the store keeps no stale value of "k".
    db.lock1(b"k").set_str(b"k", b"w", Ttl::Clear);
    assert!(store.get(0, shard_k, b"k").is_none());
    assert_eq!(ks.db(0).len(), 2);
}
