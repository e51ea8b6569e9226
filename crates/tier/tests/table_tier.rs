//! The embedded table over the on-disk tier: data five times its budget, every
//! key kept, in RAM or on disk.

use std::sync::Arc;
use strata_engine::{Budget, Policy, Table};
use strata_tier::Tier;

#[test]
fn a_table_tiers_to_disk() {
    let dir = std::env::temp_dir().join(format!("strata-table-tier-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let budget = 300_000;
    let t = Table::with_budget(Budget::new(budget, Policy::AllKeysLru));
    let tier = Tier::open(
        &dir,
        1,
        t.db().shard_count(),
        8 << 20,
        t.shared_encodings(),
        false,
    )
    .expect("the tier opens");
    assert!(t.set_cold_store(Arc::new(tier)));
    let value = |i: usize| format!("{i:0300}").into_bytes();
    for i in 0..5000 {
        t.set(format!("k{i}").as_bytes(), &value(i));
    }
    // A hash large enough to be a hashtable, rebuilt from disk under the table's thresholds.
    t.encodings()
        .hash_max_listpack_entries
        .store(4, std::sync::atomic::Ordering::Relaxed);
    t.with_hash_mut(b"h", |h, enc| {
        for f in 0..10 {
            h.set(format!("f{f}").as_bytes(), b"v", enc);
        }
    })
    .unwrap();
    for i in 5000..10_000 {
        t.set(format!("k{i}").as_bytes(), &value(i));
    }
    assert!(t.memory_used() <= budget + budget / 16 + 1024);
    assert_eq!(t.len(), 10_001);
    assert_eq!(t.evicted_keys(), 0);
    assert!(t.cold_keys() > 5000, "{} cold keys", t.cold_keys());
    assert!(dir.join("store").exists());
    for i in (0..10_000).step_by(13) {
        assert_eq!(t.get(format!("k{i}").as_bytes()), Some(value(i)), "k{i}");
    }
    // Written early, it went to disk; it comes back a hashtable, as the table's
    // thresholds (not the defaults, 128 entries) make 10 fields.
    assert!(t.db().maybe_cold(b"h").is_some(), "the hash is on disk");
    assert_eq!(
        t.with_hash(b"h", |h| (h.len(), h.encoding())),
        Ok(Some((10, "hashtable")))
    );
    assert!(t.delete(b"k1"));
    assert_eq!(t.get(b"k1"), None);
    assert_eq!(t.keys().count(), 10_000);
    assert!(!t.set_cold_store(Arc::new(
        Tier::open(
            &dir.join("other"),
            1,
            1,
            1 << 20,
            t.shared_encodings(),
            false
        )
        .unwrap()
    )));
    drop(t);
    let _ = std::fs::remove_dir_all(&dir);
}
