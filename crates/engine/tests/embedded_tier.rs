//! The embedded table over a cold store (`Table::with_cold_store`): it keeps within its
//! budget by moving entries to the store, and every method sees them as in RAM.

mod common;

use std::sync::Arc;
use std::time::Duration;
use strata_engine::{Budget, Policy, Table};

const BUDGET: usize = 200_000;

fn value(i: usize) -> Vec<u8> {
    format!("{i:0200}").into_bytes()
}

fn within_budget(t: &Table) {
    let used = t.memory_used();
    assert!(used <= BUDGET + BUDGET / 16 + 1024, "{used} bytes in RAM");
}

#[test]
fn a_table_over_a_cold_store_keeps_its_keys_within_its_budget() {
    let store = Arc::new(common::Store::default());
    let t = Table::with_cold_store(Budget::new(BUDGET, Policy::NoEviction), store.clone());
    // Five times the budget; none of it is lost.
    for i in 0..5000 {
        t.set(format!("k{i}").as_bytes(), &value(i));
    }
    t.with_hash_mut(b"h", |h, enc| h.set(b"f", b"v", enc))
        .unwrap();
    within_budget(&t);
    assert_eq!(t.len(), 5001);
    assert_eq!(t.evicted_keys(), 0);
    let cold = t.cold_keys();
    assert!(cold > 3000, "{cold} cold keys");
    assert_eq!(store.map.lock().len() as u64, cold);

    // Reads bring keys back, and push others out: still within the budget.
    for i in (0..5000).step_by(7) {
        assert_eq!(t.get(format!("k{i}").as_bytes()), Some(value(i)), "k{i}");
    }
    assert_eq!(
        t.with_hash(b"h", |h| h.get(b"f").map(<[u8]>::to_vec)),
        Ok(Some(Some(b"v".to_vec())))
    );
    within_budget(&t);

    // Writes and deletes of cold keys: no key is in both places.
    for i in 0..100 {
        t.set(format!("k{i}").as_bytes(), b"new");
    }
    for i in 100..200 {
        assert!(t.delete(format!("k{i}").as_bytes()));
    }
    assert_eq!(t.len(), 4901);
    let mut keys: Vec<Vec<u8>> = t.keys().collect();
    keys.sort();
    keys.dedup();
    assert_eq!(keys.len(), 4901, "a scan sees each key once");
    for i in 0..300 {
        let want = match i {
            0..100 => Some(b"new".to_vec()),
            100..200 => None,
            _ => Some(value(i)),
        };
        assert_eq!(t.get(format!("k{i}").as_bytes()), want, "k{i}");
    }
    // The store holds the cold entries, and copies of keys read back (clean: a key
    // that leaves RAM again unchanged is not written twice).
    assert!(store.map.lock().len() as u64 >= t.cold_keys());
    t.clear();
    assert!(t.is_empty());
    assert!(store.map.lock().is_empty());
}

#[test]
fn expired_cold_keys_go_with_purge_expired() {
    let store = Arc::new(common::Store::default());
    let t = Table::with_cold_store(Budget::new(BUDGET, Policy::AllKeysLru), store.clone());
    for i in 0..3000 {
        let ttl = if i % 2 == 0 {
            Duration::from_millis(50)
        } else {
            Duration::from_secs(3600)
        };
        t.set_with_ttl(format!("k{i}").as_bytes(), &value(i), ttl);
    }
    assert!(t.cold_keys() > 1000);
    std::thread::sleep(Duration::from_millis(100));
    assert_eq!(t.purge_expired(), 1500);
    assert_eq!(t.len(), 1500);
    assert_eq!(t.get(b"k1"), Some(value(1)));
    assert_eq!(t.get(b"k2"), None);
}

/// A hash larger than the budget that is written to stays in RAM while in use, the other
/// entries fitting the budget beside it; before, each write moved it whole to the store
/// and the next brought it back.
#[test]
fn a_large_entry_in_use_stays_in_ram() {
    let store = Arc::new(common::Store::default());
    let t = Table::with_cold_store(Budget::new(BUDGET, Policy::AllKeysLru), store.clone());
    let field = |i: usize| format!("field:{i}").into_bytes();
    for i in 0..3000 {
        t.with_hash_mut(b"h", |h, enc| h.set(&field(i), &value(i), enc))
            .unwrap();
    }
    assert!(t.memory_used() > BUDGET, "{} bytes", t.memory_used());
    let puts = store.puts.load(std::sync::atomic::Ordering::Relaxed);
    for i in 3000..3200 {
        t.with_hash_mut(b"h", |h, enc| h.set(&field(i), &value(i), enc))
            .unwrap();
    }
    let moved = store.puts.load(std::sync::atomic::Ordering::Relaxed) - puts;
    assert!(
        moved <= 2,
        "the hash moved to the store {moved} times in 200 writes"
    );
    let hash = t.memory_used();
    for i in 0..1000 {
        t.try_set(format!("k{i}").as_bytes(), &value(i)).unwrap();
    }
    let used = t.memory_used();
    assert!(
        used <= hash + BUDGET + BUDGET / 16 + 1024,
        "{used} bytes in RAM"
    );
    assert_eq!(
        t.with_hash(b"h", |h| h.len()),
        Ok(Some(3200)),
        "every field is there"
    );
}
