//! A start that checks the cold store after a crash (`Db::adopt_cold`, `Db::restore_cold`,
//! `Db::sweep_store`): the snapshot's cold entries are counted or written anew, and every
//! other record of the store goes.

mod common;

use std::collections::HashSet;
use std::sync::Arc;
use strata_engine::{ColdStore, Ttl};

#[test]
fn records_that_are_no_cold_entry_of_the_snapshot_go() {
    let store = Arc::new(common::Store::default());
    // What the crash left: two records the snapshot has cold, one of a key it holds in
    // RAM, one of a key it does not have.
    let ks = common::keyspace_over(&store);
    let shard = |k: &[u8]| ks.shard_of(0, k).1;
    for k in [b"a".as_slice(), b"b", b"hot", b"stray"] {
        store
            .put(0, shard(k), k, &common::string(b"old"), 0)
            .unwrap();
    }
    let db = ks.db(0);
    db.adopt_cold(b"a", false);
    db.adopt_cold(b"b", false);
    // One the snapshot has cold and the store had not.
    db.restore_cold(b"c", &common::string(b"new")).unwrap();
    db.lock1(b"hot").set_str(b"hot", b"v", Ttl::Clear);

    let (mut dropped, mut complete) = (0, true);
    for idx in 0..db.shard_count() {
        let (n, whole) = db.sweep_store(idx, None);
        dropped += n;
        complete &= whole;
    }
    assert!(complete);
    assert_eq!(dropped, 2);
    let mut left: Vec<Vec<u8>> = store.map.lock().keys().map(|(_, _, k)| k.clone()).collect();
    left.sort();
    assert_eq!(left, [b"a".to_vec(), b"b".to_vec(), b"c".to_vec()]);
    assert_eq!(db.cold_stats().0, 3);
    assert_eq!(db.len(), 4);

    // With the shard's cold keys listed, a stray record beside them goes too.
    store
        .put(0, shard(b"a"), b"x", &common::string(b"old"), 0)
        .unwrap();
    let listed: HashSet<Vec<u8>> = [b"a", b"b", b"c"]
        .iter()
        .filter(|k| shard(k.as_slice()) == shard(b"a"))
        .map(|k| k.to_vec())
        .collect();
    assert_eq!(db.sweep_store(shard(b"a"), Some(&listed)), (1, true));
    assert!(store.get(0, shard(b"a"), b"x").is_none());
    let mut l = db.lock1(b"c");
    assert_eq!(l.get_str(b"c").unwrap(), Some(b"new".as_slice()));
}
