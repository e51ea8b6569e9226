//! `keyspace`'s tests: locking, TTLs, SCAN, active expiry, SWAPDB and the shard's size.

use super::*;
use crate::locked::Ttl;
use crate::value::Value;
use std::time::Duration;

#[test]
fn set_get_remove_expire() {
    let ks = Keyspace::new(2, 4);
    let db = ks.db(0);
    let mut l = db.lock1(b"a");
    assert_eq!(l.get_str(b"a"), Ok(None));
    l.set_str(b"a", b"1", Ttl::Clear);
    assert_eq!(l.get_str(b"a"), Ok(Some(&b"1"[..])));
    let past = l.now() - 1;
    assert!(l.set_expire(b"a", Some(past)));
    assert_eq!(l.get_str(b"a"), Ok(None));
    drop(l);
    assert_eq!(db.len(), 0);
    assert_eq!(db.stats(), (1, 2, 1)); // a miss before the SET and one after expiry
}

#[test]
fn keep_ttl_and_str_mut() {
    let ks = Keyspace::new(1, 2);
    let db = ks.db(0);
    let mut l = db.lock(&[b"k".as_slice(), b"j".as_slice()]);
    let at = l.now() + 100_000;
    l.set_str(b"k", b"v", Ttl::At(at));
    l.set_str(b"k", b"w", Ttl::Keep);
    assert_eq!(l.expire_at(b"k"), Some(Some(at)));
    l.str_mut(b"k").unwrap().unwrap().extend_from_slice(b"xyz");
    assert_eq!(l.get_str(b"k"), Ok(Some(&b"wxyz"[..])));
    assert_eq!(l.peek(b"k").unwrap().encoding(), "raw");
    let o = l.take(b"k").unwrap();
    assert_eq!(o.value, Value::Str(b"wxyz".to_vec()));
    l.put_owned(b"j", o);
    assert_eq!(l.expire_at(b"j"), Some(Some(at)));
    drop(l);
    assert_eq!(db.volatile_len(), 1);
}

#[test]
fn scan_visits_every_key_once() {
    let ks = Keyspace::new(1, 6);
    let db = ks.db(0);
    for i in 0..1000u32 {
        let k = i.to_string();
        db.lock1(k.as_bytes())
            .set_str(k.as_bytes(), b"v", Ttl::Clear);
    }
    let mut seen = Vec::new();
    let mut cursor = 0;
    loop {
        let (next, mut keys) = db.scan(cursor, 10, ScanFilter::default());
        seen.append(&mut keys);
        if next == 0 {
            break;
        }
        cursor = next;
    }
    seen.sort();
    seen.dedup();
    assert_eq!(seen.len(), 1000);
    assert_eq!(db.keys(b"99*").len(), 11);
    assert!(db.random_key(42).is_some());
}

#[test]
fn active_expiry_and_swap() {
    let ks = Keyspace::new(2, 3);
    let db = ks.db(0);
    for i in 0..100u32 {
        let k = i.to_string();
        let mut l = db.lock1(k.as_bytes());
        let at = if i % 2 == 0 { Ttl::At(1) } else { Ttl::Clear };
        l.set_str(k.as_bytes(), b"v", at);
    }
    assert_eq!(ks.active_expire_cycle(Duration::from_secs(1), 1), 50);
    assert_eq!(db.len(), 50);
    ks.swap(0, 1);
    assert_eq!(ks.db(0).len(), 0);
    assert_eq!(ks.db(1).len(), 50);
}

/// A server has 16 x 1024 shards before it holds a key: a shard's fifth cache line is a
/// megabyte of every server's memory (MEMORY DOCTOR's "empty" threshold is 5 MB).
#[test]
fn a_shard_fits_four_cache_lines() {
    assert!(
        std::mem::size_of::<Shard>() <= 256,
        "{}",
        std::mem::size_of::<Shard>()
    );
}

/// The cycle removes due keys among many that are not, in several databases, and
/// never a live one; a shard left with no key with a TTL leaves the volatile map.
#[test]
fn active_expiry_walks_until_little_is_due() {
    let ks = Keyspace::new(4, 6);
    let far = clock::now_ms() + 3_600_000;
    for d in [0, 3] {
        let db = ks.db(d);
        for i in 0..4000u32 {
            let k = format!("k{i}");
            let at = if i % 4 == 0 { Ttl::At(1) } else { Ttl::At(far) };
            db.lock1(k.as_bytes()).set_str(k.as_bytes(), b"v", at);
        }
    }
    // Each round samples 20 keys with a TTL: now and then one finds none due in either
    // database and the cycle ends having removed nothing, as Redis's can. While many are
    // due, that must not last: a cycle that stopped walking would.
    let (mut removed, mut cycles, mut idle) = (0, 0, 0);
    while removed < 2000 && cycles < 1000 {
        let gone = ks.active_expire_cycle(Duration::from_secs(1), 1);
        idle = if gone == 0 { idle + 1 } else { 0 };
        assert!(
            idle < 4 || removed > 1500,
            "{idle} cycles in a row removed nothing, the last cycle {cycles}, at {removed}"
        );
        removed += gone;
        cycles += 1;
    }
    assert_eq!(removed, 2000, "after {cycles} cycles");
    for d in [0, 3] {
        assert_eq!(ks.db(d).len(), 3000);
    }
    // Only long-lived keys are left: a cycle finds nothing due.
    assert_eq!(ks.active_expire_cycle(Duration::from_secs(1), 1), 0);
    // A flush leaves the map's bits; rounds clear them, at most 20 shards a round.
    ks.db(0).flush();
    for _ in 0..4 {
        ks.active_expire_cycle(Duration::from_secs(1), 1);
    }
    assert_eq!(ks.db(0).occupancy.pick(true, 12345), None);
    assert!(ks.db(3).occupancy.pick(true, 12345).is_some());
}

/// `purge_all_expired` removes every due key at once, whatever else the shards hold.
#[test]
fn purge_all_expired_takes_every_due_key() {
    let ks = Keyspace::new(2, 3);
    let far = clock::now_ms() + 3_600_000;
    for i in 0..1000u32 {
        let k = i.to_string();
        let at = if i % 10 == 0 {
            Ttl::At(1)
        } else {
            Ttl::At(far)
        };
        ks.db(1).lock1(k.as_bytes()).set_str(k.as_bytes(), b"v", at);
    }
    assert_eq!(ks.purge_all_expired(), 100);
    assert_eq!(ks.db(1).len(), 900);
}

/// RANDOMKEY's draw: only live keys come out, the expired keys it draws go, and a
/// database of expired keys only answers None and ends empty.
#[test]
fn random_key_skips_and_removes_expired_keys() {
    let ks = Keyspace::new(2, 4);
    let db = ks.db(0);
    for i in 0..1000u32 {
        let k = format!("k{i}");
        let at = if i % 100 == 0 { Ttl::Clear } else { Ttl::At(1) };
        db.lock1(k.as_bytes()).set_str(k.as_bytes(), b"v", at);
    }
    let live: Vec<String> = (0..10).map(|i| format!("k{}", i * 100)).collect();
    let mut seen = std::collections::BTreeSet::new();
    for seed in 0..200u64 {
        let key = db.random_key(seed * 7919).expect("a live key");
        let key = String::from_utf8(key).expect("utf-8");
        assert!(live.contains(&key), "{key} is expired");
        seen.insert(key);
    }
    assert!(seen.len() > 5, "only {seen:?} drawn");
    assert!(db.len() < 1000, "no expired key drawn was removed");
    for k in &live {
        db.lock1(k.as_bytes()).remove(k.as_bytes());
    }
    assert_eq!(db.random_key(3), None);
    assert_eq!(db.len(), 0);
}

#[test]
fn a_database_gets_its_shards_from_the_first_access_to_a_key() {
    let ks = Keyspace::new(4, 4);
    let db = ks.db(2);
    // Walks over the whole database read it as empty and make nothing.
    assert_eq!((db.len(), db.volatile_len()), (0, 0));
    assert!(db.is_empty());
    assert_eq!(db.scan(0, 10, ScanFilter::default()), (0, vec![]));
    assert_eq!(db.random_key(7), None);
    assert_eq!(db.stats(), (0, 0, 0));
    db.reset_stats();
    drop(db.flush());
    db.for_each_entry(|_| panic!("an empty database has no entry"));
    assert_eq!(db.shard_count(), 16);
    assert!(!db.is_allocated());
    // A snapshot that finds it so leaves the shards made later captured at its epoch: a
    // write during it keeps no copy of what it changes (the database was empty then).
    assert_eq!(db.capture_chunk(3, 5, usize::MAX, |_| {}), Capture::Done);
    assert!(!db.is_allocated());
    db.lock1(b"k").set_str(b"k", b"v", Ttl::Clear);
    assert!(db.is_allocated());
    db.preserve(b"k", 5);
    let idx = db.shard_index(hash(b"k"));
    assert!(db.shard_ref(idx).acquire().pre.is_none());
    assert_eq!(
        db.capture_chunk(idx, 5, usize::MAX, |_| {}),
        Capture::Already
    );
    // The next snapshot captures it as any other.
    let mut seen = 0;
    assert_eq!(
        db.capture_chunk(idx, 6, usize::MAX, |_| seen += 1),
        Capture::Done
    );
    assert_eq!((seen, db.len()), (1, 1));
    // The other databases still have none.
    assert!(!ks.db(1).is_allocated() && !ks.db(3).is_allocated());
}
