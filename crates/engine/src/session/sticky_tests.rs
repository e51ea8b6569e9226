//! The sticky scope, one-shard sessions and the `*1` fast paths against other threads.

use super::*;
use crate::shard::hash;

/// Whether another thread could lock `key`'s shard right now.
fn free(ks: &Keyspace, key: &[u8]) -> bool {
    let db = ks.db(0);
    let shard = db.shard_ref(db.shard_index(hash(key)));
    std::thread::scope(|s| s.spawn(|| shard.0.try_lock().is_some()).join().unwrap())
}

/// Two keys in different shards.
fn two_keys(ks: &Keyspace) -> (Vec<u8>, Vec<u8>) {
    let db = ks.db(0);
    let a = b"k0".to_vec();
    let b = (1..)
        .map(|i| format!("k{i}").into_bytes())
        .find(|k| db.shard_index(hash(k)) != db.shard_index(hash(&a)))
        .unwrap();
    (a, b)
}

#[test]
fn a_scope_keeps_the_last_shard_until_another_is_asked_for() {
    let ks = Keyspace::new(1, 4);
    let (a, b) = two_keys(&ks);
    {
        let _s = ks.sticky();
        ks.db(0).lock1(&a).set_str(&a, b"1", crate::Ttl::Clear);
        assert!(!free(&ks, &a), "kept after the command");
        // The same shard again: served from the kept lock (no self-deadlock).
        assert_eq!(ks.db(0).lock1(&a).get_str(&a).unwrap(), Some(&b"1"[..]));
        // Another shard: the kept one is let go first, the new one kept.
        ks.db(0).lock1(&b).set_str(&b, b"2", crate::Ttl::Clear);
        assert!(free(&ks, &a));
        assert!(!free(&ks, &b));
        // A session (EXEC, scripts) over both: nothing kept meanwhile or after it.
        let ids = vec![ks.shard_of(0, &a), ks.shard_of(0, &b)];
        {
            let _session = ks.session(ids);
            ks.db(0).lock1(&a).set_str(&a, b"3", crate::Ttl::Clear);
        }
        assert!(free(&ks, &a) && free(&ks, &b));
        // A one-shard session (a journalled write) keeps its shard; the next session
        // on it takes the kept lock over, one elsewhere lets it go first.
        for _ in 0..2 {
            let _session = ks.session(vec![ks.shard_of(0, &a)]);
            ks.db(0).lock1(&a).set_str(&a, b"4", crate::Ttl::Clear);
        }
        assert!(!free(&ks, &a));
        drop(ks.session(vec![ks.shard_of(0, &b)]));
        assert!(free(&ks, &a) && !free(&ks, &b));
        ks.db(0).lock1(&a).get_str(&a).unwrap();
        assert!(!free(&ks, &a));
        Keyspace::release_sticky();
        assert!(free(&ks, &a));
        ks.db(0).lock1(&b).get_str(&b).unwrap();
    }
    // The scope's end lets go of what it kept.
    assert!(free(&ks, &b));
    // Outside a scope nothing is kept.
    ks.db(0).lock1(&a).get_str(&a).unwrap();
    assert!(free(&ks, &a));
}

/// A one-shard session (ONE, no lists) lends its lock to the thread's commands, says
/// what it holds, goes over to the list form when a script extends it, and unlocks
/// everything at its end.
#[test]
fn a_one_shard_session_lends_extends_and_unlocks() {
    let ks = Keyspace::new(1, 4);
    let (a, b) = two_keys(&ks);
    let (ia, ib) = (ks.shard_of(0, &a), ks.shard_of(0, &b));
    {
        let _session = ks.session1(ia);
        assert!(Keyspace::in_session());
        assert_eq!(Keyspace::session_shards(), vec![ia]);
        assert!(Keyspace::session_holds(&[ia]) && !Keyspace::session_holds(&[ib]));
        // Borrowed twice in a row: the first guard's drop gave the lock back.
        ks.db(0).lock1(&a).set_str(&a, b"1", crate::Ttl::Clear);
        assert_eq!(ks.db(0).lock1(&a).get_str(&a).unwrap(), Some(&b"1"[..]));
        assert!(!free(&ks, &a) && free(&ks, &b));
        let deadline = Instant::now() + std::time::Duration::from_secs(5);
        assert!(ks.extend_session(&[ib], deadline));
        let mut both = vec![ia, ib];
        both.sort_unstable();
        assert_eq!(Keyspace::session_shards(), both);
        assert!(Keyspace::session_holds(&[ia, ib]));
        ks.db(0).lock1(&b).set_str(&b, b"2", crate::Ttl::Clear);
        assert_eq!(ks.db(0).lock1(&a).get_str(&a).unwrap(), Some(&b"1"[..]));
        assert!(!free(&ks, &a) && !free(&ks, &b));
    }
    assert!(!Keyspace::in_session());
    assert!(free(&ks, &a) && free(&ks, &b));
    // `session` of one shard (after dedup) opens the same kind.
    {
        let _session = ks.session(vec![ia, ia]);
        assert_eq!(Keyspace::session_shards(), vec![ia]);
        ks.db(0).lock1(&a).get_str(&a).unwrap();
    }
    assert!(free(&ks, &a));
}

/// `one_shard` names the one shard a scope locked, says when another thread's scope
/// locked it last, and has no answer for a scope that locked two.
#[test]
fn one_shard_says_when_another_thread_locked_it_last() {
    let ks = Keyspace::new(1, 4);
    let (a, b) = two_keys(&ks);
    let batch = |keys: &[&[u8]]| {
        let s = ks.sticky();
        for k in keys {
            ks.db(0).lock1(k).get_str(k).unwrap();
        }
        s.one_shard()
    };
    let first = batch(&[&a]).expect("one shard");
    let number = |s: &Shard| s as *const Shard as usize / std::mem::size_of::<Shard>();
    assert_eq!(first.index, number(ks.shard_at(ks.shard_of(0, &a))));
    assert!(!first.shared && !first.waited, "nobody had it before");
    assert!(!batch(&[&a, &a]).unwrap().shared, "still this thread's");
    std::thread::scope(|t| {
        let other = t.spawn(|| batch(&[&a]).unwrap().shared);
        assert!(
            other.join().unwrap(),
            "the other thread finds it this one's"
        );
    });
    assert!(
        batch(&[&a]).unwrap().shared,
        "and this one finds it the other's"
    );
    assert!(!batch(&[&a]).unwrap().shared);
    assert_eq!(batch(&[&a, &b]), None);
}

/// Commands that keep changing shards (random keys) soon stop keeping any, for a while.
#[test]
fn keeping_pauses_when_no_kept_shard_is_reused() {
    let ks = Keyspace::new(1, 4);
    let (a, b) = two_keys(&ks);
    let _s = ks.sticky();
    for i in 0..UNUSED_LIMIT as usize {
        let k = if i % 2 == 0 { &a } else { &b };
        ks.db(0).lock1(k).get_str(k).unwrap();
        assert!(!free(&ks, k), "command {i} keeps its shard");
    }
    // The last kept shard went unused too: keeping pauses.
    ks.db(0).lock1(&a).get_str(&a).unwrap();
    assert!(free(&ks, &a) && free(&ks, &b));
    for _ in 0..COOLDOWN {
        ks.db(0).lock1(&a).get_str(&a).unwrap();
    }
    ks.db(0).lock1(&a).get_str(&a).unwrap();
    assert!(!free(&ks, &a), "keeping resumes after the pause");
}

#[test]
fn another_keyspace_is_never_kept() {
    let (ks, other) = (Keyspace::new(1, 2), Keyspace::new(1, 2));
    let _s = ks.sticky();
    other
        .db(0)
        .lock1(b"x")
        .set_str(b"x", b"1", crate::Ttl::Clear);
    assert!(free(&other, b"x"));
    drop(other);
    ks.db(0).lock1(b"x").get_str(b"x").unwrap();
    assert!(!free(&ks, b"x"));
}

/// A thread waiting for a kept shard gets it within STICKY_REUSES commands.
#[test]
fn a_waiting_thread_is_not_starved() {
    let ks = Keyspace::new(1, 0);
    let done = std::sync::atomic::AtomicBool::new(false);
    std::thread::scope(|s| {
        let _sticky = ks.sticky();
        ks.db(0).lock1(b"k").set_str(b"k", b"0", crate::Ttl::Clear);
        let waiter = s.spawn(|| {
            ks.db(0).lock1(b"k").set_str(b"k", b"w", crate::Ttl::Clear);
            done.store(true, std::sync::atomic::Ordering::SeqCst);
        });
        // Give the waiter time to queue on the lock, then keep using the shard.
        std::thread::sleep(std::time::Duration::from_millis(50));
        let mut n = 0;
        while !done.load(std::sync::atomic::Ordering::SeqCst) {
            ks.db(0).lock1(b"k").get_str(b"k").unwrap();
            n += 1;
            assert!(n <= 10 * STICKY_REUSES, "waiter starved");
            std::thread::sleep(std::time::Duration::from_micros(100));
        }
        waiter.join().unwrap();
    });
}

/// Two keys in different shards of a keyspace: a = "1", b missing.
fn a_set_b_missing() -> (Keyspace, Vec<u8>, Vec<u8>) {
    let ks = Keyspace::new(1, 4);
    let (a, b) = two_keys(&ks);
    ks.db(0).lock1(&a).set_str(&a, b"1", crate::Ttl::Clear);
    (ks, a, b)
}

/// The string at `k` through `Db::read1`.
fn read1_str(db: &crate::Db, k: &[u8]) -> Option<Vec<u8>> {
    db.read1(k, false, |e| e.and_then(|e| e.as_str()).map(<[u8]>::to_vec))
}

/// `Db::read1`'s short path (no session, nothing kept, no TTL in the shard) counts
/// hits and misses and unlocks; with a TTL in the shard it expires as `Locked::get`.
#[test]
fn read1_counts_reads_and_expires_through_the_general_path() {
    let (ks, a, b) = a_set_b_missing();
    let db = ks.db(0);
    let val = |k: &[u8]| read1_str(db, k);
    assert_eq!(val(&a), Some(b"1".to_vec()));
    assert_eq!(val(&b), None);
    assert!(free(&ks, &a) && free(&ks, &b));
    assert_eq!(db.stats(), (1, 1, 0));
    // An expired key in a shard with TTLs: removed and counted, as a GET would.
    db.lock1_at(1000, &b)
        .set_str(&b, b"2", crate::Ttl::At(1001));
    assert_eq!(val(&b), None);
    assert_eq!(db.stats(), (1, 2, 1));
    assert_eq!(db.len(), 1);
}

/// `Db::set_str1` stores as `set_str(.., Ttl::Clear)` on both its paths: the short one
/// (unlocks after), and the general one for a shard with TTLs (clears the key's TTL),
/// inside a session (borrows its lock) or with a shard kept (lets it go first).
#[test]
fn set_str1_stores_and_unlocks_on_both_paths() {
    let (ks, a, b) = a_set_b_missing();
    let db = ks.db(0);
    db.set_str1(&a, b"2");
    assert_eq!(read1_str(db, &a), Some(b"2".to_vec()));
    assert!(free(&ks, &a));
    db.lock1(&b).set_str(&b, b"x", crate::Ttl::At(u64::MAX));
    assert_eq!(db.volatile_len(), 1);
    db.set_str1(&b, b"3");
    assert_eq!(db.volatile_len(), 0, "the TTL is cleared");
    assert_eq!(read1_str(db, &b), Some(b"3".to_vec()));
    assert!(free(&ks, &b));
    {
        let _session = ks.session(vec![ks.shard_of(0, &a)]);
        db.set_str1(&a, b"4");
        assert!(!free(&ks, &a), "still the session's");
    }
    assert_eq!(read1_str(db, &a), Some(b"4".to_vec()));
    let _s = ks.sticky();
    db.lock1(&a).get_str(&a).unwrap();
    assert!(!free(&ks, &a), "kept");
    db.set_str1(&b, b"5");
    assert!(free(&ks, &a), "the kept shard was let go before locking b");
    assert_eq!(db.len(), 2);
}

/// Inside a session, or while a shard is kept, `read1` goes through `acquire`: it
/// borrows the session's lock (no self-deadlock) and lets a kept shard go first.
#[test]
fn read1_borrows_the_sessions_shard_and_releases_a_kept_one() {
    let (ks, a, b) = a_set_b_missing();
    let db = ks.db(0);
    let val = |k: &[u8]| read1_str(db, k);
    {
        let _session = ks.session(vec![ks.shard_of(0, &a)]);
        assert_eq!(val(&a), Some(b"1".to_vec()));
        assert!(!free(&ks, &a), "still the session's");
    }
    let _s = ks.sticky();
    db.lock1(&a).get_str(&a).unwrap();
    assert!(!free(&ks, &a), "kept");
    assert_eq!(val(&b), None);
    // The kept shard was let go before locking b (which the scope now keeps).
    assert!(free(&ks, &a) && !free(&ks, &b));
}
