//! What the tier cannot take stays in RAM, and the tier keeps working: a key longer than
//! the store's keys allow (65,523 bytes, its longest record key adding 12) never moves,
//! other keys move instead, and it reads, expires and deletes as any key does. Before,
//! such a key reached the store, which panicked and took no more entries.

mod common;
use common::{set_many, tiered, tiering_field};

/// The longest key the tier takes.
const LONGEST: usize = 65_523;

fn get(c: &mut redis::Connection, key: &[u8]) -> Option<Vec<u8>> {
    redis::cmd("GET").arg(key).query(c).unwrap()
}

#[test]
fn keys_longer_than_the_store_takes_stay_in_ram() {
    let s = tiered(&[]);
    let mut c = s.client();
    let longest = vec![b'a'; LONGEST];
    let longer = vec![b'b'; LONGEST + 1];
    let huge = vec![b'c'; 200_000];
    for (key, value) in [(&longest, "v1"), (&longer, "v2")] {
        let _: () = redis::cmd("SET")
            .arg(key)
            .arg(value)
            .arg("EX")
            .arg(1000)
            .query(&mut c)
            .unwrap();
    }
    let _: () = redis::cmd("SET")
        .arg(&huge)
        .arg("v3")
        .query(&mut c)
        .unwrap();
    // Twice the 1 MB budget after them: the least recently used go to the tier.
    set_many(&mut c, "k", 2000, &[b'x'; 1000]);
    assert_eq!(tiering_field(&mut c, "tier_errors"), 0);
    assert_eq!(tiering_field(&mut c, "tier_write_failed"), 0);
    assert!(tiering_field(&mut c, "cold_keys") >= 1000);

    assert_eq!(get(&mut c, &longest).as_deref(), Some(&b"v1"[..]));
    assert_eq!(get(&mut c, &longer).as_deref(), Some(&b"v2"[..]));
    assert_eq!(get(&mut c, &huge).as_deref(), Some(&b"v3"[..]));
    for key in [&longest, &longer] {
        let ttl: i64 = redis::cmd("TTL").arg(key).query(&mut c).unwrap();
        assert!(ttl > 900 && ttl <= 1000, "TTL {ttl}");
    }

    // The tier still takes entries, the long keys included once they are least used.
    let moved = tiering_field(&mut c, "moved_to_disk");
    set_many(&mut c, "j", 1000, &[b'y'; 1000]);
    assert!(tiering_field(&mut c, "moved_to_disk") > moved);
    assert_eq!(tiering_field(&mut c, "tier_write_failed"), 0);
    for key in [&longest, &longer, &huge] {
        let gone: i64 = redis::cmd("DEL").arg(key).query(&mut c).unwrap();
        assert_eq!(gone, 1);
        let there: i64 = redis::cmd("EXISTS").arg(key).query(&mut c).unwrap();
        assert_eq!(there, 0);
    }
    let _: () = redis::cmd("SET")
        .arg(&longer)
        .arg("v4")
        .query(&mut c)
        .unwrap();
    assert_eq!(get(&mut c, &longer).as_deref(), Some(&b"v4"[..]));
    assert_eq!(tiering_field(&mut c, "tier_errors"), 0);
}
