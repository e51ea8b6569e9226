//! `evict`'s tests: each policy picks from the right class of keys, in the right order.

use super::*;
use crate::locked::Ttl;

const POLICIES: [Policy; 7] = [
    Policy::AllKeysLru,
    Policy::AllKeysLfu,
    Policy::AllKeysRandom,
    Policy::VolatileLru,
    Policy::VolatileLfu,
    Policy::VolatileRandom,
    Policy::VolatileTtl,
];

fn set(ks: &Keyspace, db: usize, key: &str, ttl: Option<u64>) {
    let d = ks.db(db);
    let mut l = d.lock1(key.as_bytes());
    let ttl = ttl.map_or(Ttl::Clear, |s| Ttl::At(l.now() + s * 1000));
    l.set_str(key.as_bytes(), b"a value long enough not to be inline", ttl);
}

/// Evicts up to `n` keys under `policy`; returns them.
fn evict(ks: &Keyspace, policy: Policy, n: usize) -> Vec<(usize, String)> {
    let mut pool = Pool::default();
    let mut out = Vec::new();
    while out.len() < n {
        let Some((db, key)) = ks.evict_pick(policy, 5, &mut pool) else {
            break;
        };
        if ks
            .evict_remove(db, &key, policy.volatile(), || {})
            .is_some()
        {
            out.push((db, String::from_utf8(key).expect("utf8")));
        }
    }
    out
}

/// Every policy finds keys spread over two databases, the volatile ones only keys with a
/// TTL, until none is left; NoEviction never picks.
#[test]
fn each_policy_takes_its_class_of_keys_until_none_is_left() {
    for policy in POLICIES {
        let ks = Keyspace::new(3, 6);
        for i in 0..150 {
            set(&ks, i % 2, &format!("plain:{i}"), None);
        }
        for i in 0..40 {
            set(&ks, 2 * (i % 2), &format!("ttl:{i}"), Some(1000 + i as u64));
        }
        let gone = evict(&ks, policy, usize::MAX);
        let keys = |k: &str| gone.iter().filter(|(_, g)| g.starts_with(k)).count();
        if policy.volatile() {
            assert_eq!((keys("ttl:"), keys("plain:")), (40, 0), "{policy:?}");
            assert_eq!(ks.db(0).len() + ks.db(1).len(), 150, "{policy:?}");
        } else {
            assert_eq!((keys("ttl:"), keys("plain:")), (40, 150), "{policy:?}");
        }
        assert_eq!(ks.db(2).len(), 0, "{policy:?}");
        assert!(gone.iter().all(|(db, k)| *db != 2 || k.starts_with("ttl:")));
        let mut pool = Pool::default();
        assert!(ks.evict_pick(policy, 5, &mut pool).is_none(), "{policy:?}");
    }
    let ks = Keyspace::new(1, 2);
    set(&ks, 0, "k", Some(1));
    assert!(ks
        .evict_pick(Policy::NoEviction, 5, &mut Pool::default())
        .is_none());
}

/// One key in one shard of the last of 16 databases of 1024 shards is found at once.
#[test]
fn a_lone_key_in_a_large_keyspace_is_found() {
    let ks = Keyspace::new(16, 10);
    set(&ks, 15, "lone", Some(100));
    for policy in POLICIES {
        let mut pool = Pool::default();
        let (db, key) = ks.evict_pick(policy, 5, &mut pool).expect("a victim");
        assert_eq!((db, &key[..]), (15, &b"lone"[..]), "{policy:?}");
    }
    assert_eq!(evict(&ks, Policy::AllKeysLru, 5).len(), 1);
    assert!(ks
        .evict_pick(Policy::AllKeysRandom, 5, &mut Pool::default())
        .is_none());
}

/// The mean rank (0: the best victim) of the first `n` keys evicted of `total`.
fn mean_rank(gone: &[(usize, String)], rank: impl Fn(&str) -> usize) -> f64 {
    gone.iter().map(|(_, k)| rank(k) as f64).sum::<f64>() / gone.len() as f64
}

/// volatile-ttl takes the nearest expiries first: the first fifth evicted lies mostly in
/// the first fifth by TTL (random picks would average the middle).
#[test]
fn volatile_ttl_takes_the_nearest_expiries_first() {
    let ks = Keyspace::new(1, 4);
    for i in 0..1000u64 {
        set(&ks, 0, &format!("{i}"), Some(100 + i));
    }
    let gone = evict(&ks, Policy::VolatileTtl, 200);
    let mean = mean_rank(&gone, |k| k.parse().expect("number"));
    assert!(mean < 250.0, "mean rank {mean}");
}

/// allkeys-lru takes the longest idle first: of keys last touched 20 minutes ago and
/// keys touched now, the old ones go.
#[test]
fn lru_takes_the_longest_idle_first() {
    let ks = Keyspace::new(1, 4);
    let now = crate::clock::now_ms();
    for i in 0..1000 {
        let at = if i % 2 == 0 { now - 1_200_000 } else { now };
        let key = format!("{i}");
        ks.db(0)
            .lock1_at(at, key.as_bytes())
            .set_str(key.as_bytes(), b"v", Ttl::Clear);
    }
    let gone = evict(&ks, Policy::AllKeysLru, 300);
    let old = gone
        .iter()
        .filter(|(_, k)| k.parse::<u32>().expect("n") % 2 == 0)
        .count();
    assert!(old >= 290, "{old} of 300 were idle");
}

/// allkeys-lfu takes the least often read first, and OBJECT FREQ's counter says why.
#[test]
fn lfu_takes_the_least_often_read_first() {
    let ks = Keyspace::new(1, 4);
    ks.access().set_lfu(true);
    // A log factor of 1: 50 reads take a counter from 5 to about 15.
    ks.access().set_lfu_params(1, 1);
    let db = ks.db(0);
    for i in 0..1000 {
        set(&ks, 0, &format!("{i}"), None);
        if i % 2 == 0 {
            for _ in 0..50 {
                db.lock1(format!("{i}").as_bytes())
                    .get(format!("{i}").as_bytes());
            }
        }
    }
    let now = crate::clock::now_ms();
    let counter = |k: &str| {
        crate::access::lfu_counter(
            db.lock1(k.as_bytes())
                .peek(k.as_bytes())
                .expect("key")
                .lru(),
            now,
            1,
        )
    };
    assert_eq!(counter("1"), crate::access::LFU_INIT_VAL);
    assert!(counter("0") > crate::access::LFU_INIT_VAL + 5);
    let gone = evict(&ks, Policy::AllKeysLfu, 300);
    let unread = gone
        .iter()
        .filter(|(_, k)| k.parse::<u32>().expect("n") % 2 == 1)
        .count();
    assert!(unread >= 290, "{unread} of 300 were never read");
}

/// The pool keeps the best candidates: a full pool turns away worse ones and lets the
/// best leave last.
#[test]
fn the_pool_keeps_the_best_sixteen() {
    let mut pool = Pool::default();
    for score in [5u64, 1, 9, 3, 7] {
        for i in 0..5 {
            pool.offer(score * 10 + i, 0, format!("{score}:{i}").as_bytes());
        }
    }
    assert_eq!(pool.len(), POOL_SIZE);
    pool.offer(0, 0, b"worst");
    assert!(pool.best.iter().all(|c| c.key != b"worst"));
    let scores: Vec<u64> = pool.best.iter().map(|c| c.score).collect();
    let mut sorted = scores.clone();
    sorted.sort_unstable();
    assert_eq!(scores, sorted);
    assert_eq!(pool.best.last().map(|c| c.score), Some(94));
    assert_eq!(pool.best.first().map(|c| c.score), Some(34));
}

/// The count of set bits follows marks and unmarks (a repeated one counts once), and a
/// map whose count is zero is not walked: pick finds nothing there.
#[test]
fn occupancy_counts_its_marked_shards() {
    let o = Occupancy::new(200);
    assert_eq!(o.pick(false, 7), None);
    o.mark(130, false);
    o.mark(130, false);
    o.mark(3, true);
    assert_eq!(o.marked[0].load(Relaxed), 1);
    assert_eq!(o.marked[1].load(Relaxed), 1);
    for rnd in [0, 1, 2, 3, u64::MAX] {
        assert_eq!(o.pick(false, rnd), Some(130));
        assert_eq!(o.pick(true, rnd), Some(3));
    }
    o.unmark(130, false);
    o.unmark(130, false);
    assert_eq!(o.marked[0].load(Relaxed), 0);
    assert_eq!(o.pick(false, 5), None);
    assert_eq!(o.pick(true, 5), Some(3));
}
