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

/// A `maxmemory` of one byte: every entry goes to the tier after each command, and what
/// the shards have not yet folded into the hot bytes' total (up to 64 bytes each) must
/// not read as memory nothing can free. Before, once reads had brought entries back and
/// they had moved out again, the total stayed a few hundred bytes over with no entry in
/// RAM, and every write was refused with -OOM (Redis's own unit/sort, run against a
/// server so configured, stopped that way).
#[test]
fn a_budget_of_one_byte_keeps_taking_writes() {
    let s = common::strata(&["--maxmemory", "1", "--tiering", "yes"]);
    let mut c = s.client();
    for i in 0..1000 {
        let _: () = redis::pipe()
            .cmd("LPUSH")
            .arg("tosort")
            .arg(i)
            .ignore()
            .cmd("SET")
            .arg(format!("weight_{i}"))
            .arg((i * 7919) % 1000)
            .ignore()
            .cmd("HSET")
            .arg(format!("wobj_{i}"))
            .arg("weight")
            .arg((i * 104_729) % 1000)
            .ignore()
            .query(&mut c)
            .unwrap();
    }
    // Each SORT BY reads the weights back into RAM; the next command moves them out.
    for _ in 0..3 {
        let by_key: Vec<i64> = redis::cmd("SORT")
            .arg("tosort")
            .arg("BY")
            .arg("weight_*")
            .arg("LIMIT")
            .arg(0)
            .arg(1)
            .query(&mut c)
            .unwrap();
        assert_eq!(by_key.len(), 1);
        let by_field: Vec<i64> = redis::cmd("SORT")
            .arg("tosort")
            .arg("BY")
            .arg("wobj_*->weight")
            .query(&mut c)
            .unwrap();
        assert_eq!(by_field.len(), 1000);
    }
    assert!(
        tiering_field(&mut c, "moved_to_ram") >= 3000,
        "the reads brought entries back"
    );
    let _: () = redis::cmd("SET")
        .arg("after")
        .arg("v")
        .query(&mut c)
        .unwrap();
    assert_eq!(get(&mut c, b"after").as_deref(), Some(&b"v"[..]));
    assert_eq!(tiering_field(&mut c, "tier_errors"), 0);
}

fn memory_usage(c: &mut redis::Connection, key: &str) -> u64 {
    redis::cmd("MEMORY").arg("USAGE").arg(key).query(c).unwrap()
}

/// A list larger than `maxmemory` that a client keeps pushing to stays in RAM while it is
/// in use, the other entries fitting the budget around it; once idle it moves as any entry
/// does. Before, every push moved the whole list to disk and read it back (9 pushes a
/// second at 40 MB under a budget of 30 MB).
#[test]
fn a_value_larger_than_maxmemory_stays_in_ram_while_in_use() {
    const MAX: u64 = 1 << 20;
    let s = tiered(&[]);
    let mut c = s.client();
    let elem = [b'e'; 1000];
    // 2 MB of list under a budget of 1 MB.
    for _ in 0..20 {
        let mut push = redis::cmd("RPUSH");
        push.arg("big");
        for _ in 0..100 {
            push.arg(&elem[..]);
        }
        let _: i64 = push.query(&mut c).unwrap();
    }
    let back = tiering_field(&mut c, "moved_to_ram");
    for i in 0..200 {
        let n: i64 = redis::cmd("RPUSH").arg("big").arg(i).query(&mut c).unwrap();
        assert_eq!(n, 2001 + i);
    }
    let reads = tiering_field(&mut c, "moved_to_ram") - back;
    assert!(reads <= 2, "{reads} of 200 pushes read the list back");

    // The others still fit in the budget beside it (or without it, if it went meanwhile).
    let list = memory_usage(&mut c, "big");
    assert!(list > MAX, "the list takes {list} bytes");
    set_many(&mut c, "k", 2000, &elem);
    let hot = tiering_field(&mut c, "hot_bytes");
    assert!(hot <= MAX + list + MAX / 8, "{hot} hot bytes");

    // Idle, it goes to the tier at the next eviction, whole and readable.
    std::thread::sleep(std::time::Duration::from_millis(3500));
    set_many(&mut c, "j", 20, &elem);
    let hot = tiering_field(&mut c, "hot_bytes");
    assert!(
        hot <= MAX + MAX / 8,
        "{hot} hot bytes once the list is idle"
    );
    let last: Vec<String> = redis::cmd("LRANGE")
        .arg("big")
        .arg(-1)
        .arg(-1)
        .query(&mut c)
        .unwrap();
    assert_eq!(last, ["199"]);
    let len: i64 = redis::cmd("LLEN").arg("big").query(&mut c).unwrap();
    assert_eq!(len, 2200);
    assert_eq!(tiering_field(&mut c, "tier_errors"), 0);
}
