//! Lookups that answer for a cold key without bringing it back to RAM: its type
//! (`Locked::kind`, TYPE) and SCAN's TYPE filter, through the store's default `kind` and
//! `each_kind`.

mod common;

use std::time::Duration;
use strata_engine::{clock, Kind, ListValue, ScanFilter, Ttl, Value};

#[test]
fn the_type_of_a_cold_key_comes_from_the_store_and_the_key_stays_there() {
    let (ks, store) = common::tiered();
    let db = ks.db(0);
    let now = clock::now_ms();
    for (k, ttl) in [
        ("plain", Ttl::Clear),
        ("timed", Ttl::At(now + 3_600_000)),
        ("gone", Ttl::At(now + 100)),
    ] {
        db.lock1(k.as_bytes()).set_str(k.as_bytes(), b"v", ttl);
        db.evict_to_cold(k.as_bytes(), false).unwrap();
    }
    let list = Value::List(Box::new(ListValue::from_elems(-2, [b"a".as_slice()])));
    db.lock1(b"list").set_value(b"list", list, Ttl::Clear);
    db.evict_to_cold(b"list", false).unwrap();
    assert_eq!(store.map.lock().len(), 4);
    std::thread::sleep(Duration::from_millis(150));

    for (k, kind) in [
        ("plain", Kind::String),
        ("timed", Kind::String),
        ("list", Kind::List),
    ] {
        assert_eq!(db.lock1(k.as_bytes()).kind(k.as_bytes()), Some(kind), "{k}");
    }
    assert_eq!(db.lock1(b"none").kind(b"none"), None);
    assert_eq!(store.map.lock().len(), 4, "a key came back to RAM");
    let (hits, misses, _) = db.stats();
    assert_eq!((hits, misses), (3, 1));

    let scan = |kind| {
        let filter = ScanFilter {
            pattern: None,
            kind: Some(kind),
        };
        let (mut cursor, mut found) = (0, Vec::new());
        loop {
            let (next, keys) = db.scan(cursor, 10, filter);
            found.extend(keys);
            cursor = next;
            if cursor == 0 {
                found.sort();
                return found;
            }
        }
    };
    assert_eq!(scan(Kind::List), [b"list".to_vec()]);
    // The expired key is not listed (SCAN removes it, as it removes an expired hot key).
    assert_eq!(scan(Kind::String), [b"plain".to_vec(), b"timed".to_vec()]);
    assert_eq!(scan(Kind::Hash), Vec::<Vec<u8>>::new());
    assert_eq!(db.lock1(b"gone").kind(b"gone"), None);
    assert_eq!(store.map.lock().len(), 3);
}
