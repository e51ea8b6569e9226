//! Checking the tier after a crash (docs/tiering.md, "Restarts").
//!
//! A start that finds no marker (`kept.rs`) keeps the store anyway when a process of the
//! same layout filed it under a hash seed this one can take (the `ORIGIN` file), and
//! checks it against the snapshot it loads instead of emptying it and writing every cold
//! entry again. The server's `services/tier_recovery.rs` drives the check:
//! - each cold entry of the snapshot is compared with its record, value and expiry byte
//!   for byte ([`Tier::holds`]): a record that matches stays, one that differs or is
//!   missing is written anew;
//! - every other record goes (`strata_engine::Db::sweep_store`): records of keys written,
//!   created or deleted after the snapshot began, whose journal records replay afterwards
//!   as they would over a rebuilt store;
//! - so do expiry records left without their entry ([`Tier::drop_stray_expiries`]): a
//!   record is written after its expiry records and deleted before them.
//!
//! So before the journal replays, the store holds the snapshot's cold entries and nothing
//! else, whatever the crash left in it: what a rebuilt store would hold, read instead of
//! written. `ORIGIN` is removed while the check runs, so a check that fails (a store that
//! cannot be read stops the process) leaves the next start to rebuild the tier.

use crate::records::{
    expiry_of, order_key, order_prefix, ordered, split_record, ttl_key, ttl_prefix,
};
use crate::Tier;
use std::sync::atomic::{AtomicU64, AtomicU8, Ordering::Relaxed};

/// How a start took the store it found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum How {
    /// Emptied: the snapshot and the journal refill it.
    Rebuilt = 0,
    /// As the last exit kept it (its marker named the snapshot).
    Kept = 1,
    /// Checked against the snapshot, after a crash.
    Checked = 2,
}

/// What this start did with the store (INFO tiering's `tier_start*` fields).
#[derive(Default)]
pub struct StartReport {
    how: AtomicU8,
    /// Cold entries of the snapshot whose records held them already.
    pub matched: AtomicU64,
    /// Cold entries of the snapshot written anew (their records differed or were missing).
    pub rewritten: AtomicU64,
    /// Records that were no cold entry of the snapshot, dropped.
    pub dropped: AtomicU64,
}

impl StartReport {
    pub fn set(&self, how: How) {
        self.how.store(how as u8, Relaxed);
    }

    pub fn how(&self) -> How {
        match self.how.load(Relaxed) {
            1 => How::Kept,
            2 => How::Checked,
            _ => How::Rebuilt,
        }
    }

    pub fn name(&self) -> &'static str {
        match self.how() {
            How::Rebuilt => "rebuilt",
            How::Kept => "kept",
            How::Checked => "checked",
        }
    }
}

/// Reads records in key order for lookups that mostly come in that order: a snapshot's
/// cold entries come shard by shard, each shard's in the store's order (its capture read
/// them so). One iterator over a shard's records reads each in turn, where a lookup per
/// key searches the store's tables for it.
#[derive(Default)]
pub struct Walk {
    /// The database and shard walked, and the last key looked up.
    at: Option<(usize, usize, Vec<u8>)>,
    iter: Option<fjall::Iter>,
    /// A record read past the last key looked up, with its value: the next key's, most
    /// likely.
    ahead: Option<(fjall::UserKey, fjall::UserValue)>,
}

impl Walk {
    /// `key`'s record in shard `shard` of `tree` (database `db`'s), read on from the last
    /// key looked up when it comes after it in the same shard, else from a new iterator.
    pub(crate) fn record(
        &mut self,
        tree: &fjall::Keyspace,
        db: usize,
        shard: usize,
        key: &[u8],
    ) -> Result<Option<fjall::UserValue>, fjall::Error> {
        let rk = crate::records::record_key(shard, key);
        let in_order = matches!(&self.at, Some((d, s, last)) if (*d, *s) == (db, shard) && last.as_slice() < key);
        if !in_order {
            let end = crate::records::record_prefix(shard + 1).to_vec();
            self.iter = Some(tree.range(rk.clone()..end));
            self.ahead = None;
        }
        self.at = Some((db, shard, key.to_vec()));
        loop {
            if let Some((k, v)) = self.ahead.take() {
                match k[..].cmp(&rk[..]) {
                    std::cmp::Ordering::Less => {}
                    std::cmp::Ordering::Equal => return Ok(Some(v)),
                    std::cmp::Ordering::Greater => {
                        self.ahead = Some((k, v));
                        return Ok(None);
                    }
                }
            }
            let Some(guard) = self.iter.as_mut().and_then(Iterator::next) else {
                return Ok(None);
            };
            // A record before the key is none of the snapshot's: its value is not read.
            let (k, v) = guard.into_inner_if(|k| k[..] >= rk[..])?;
            if let Some(v) = v {
                self.ahead = Some((k, v));
            }
        }
    }
}

/// Whether `record` (a record's bytes) holds `entry` (an entry in the snapshot file's
/// encoding): the same value with the same expiry. A record that does not decode differs.
pub(crate) fn record_holds(record: &[u8], entry: &[u8]) -> bool {
    split_record(record).is_ok_and(|(_, _, rest)| strata_storage::same_entry(rest, entry))
}

impl Tier {
    /// Whether `key`'s record holds `entry` (an entry in the snapshot file's encoding).
    /// Lookups in key order within a shard read on from the last through `walk`.
    pub fn holds(
        &self,
        walk: &mut Walk,
        db: usize,
        shard: usize,
        key: &[u8],
        entry: &[u8],
    ) -> bool {
        let record = self.tree(db).and_then(|tree| {
            walk.record(&tree, db, shard, key)
                .unwrap_or_else(|e| self.fatal("scan", e))
        });
        if let Some(r) = &record {
            self.read_bytes.fetch_add(r.len() as u64, Relaxed);
        }
        let same = record.is_some_and(|r| record_holds(&r, entry));
        let counter = if same {
            &self.start.matched
        } else {
            &self.start.rewritten
        };
        counter.fetch_add(1, Relaxed);
        same
    }

    /// Drops the expiry records of shard `shard` of database `db` whose entry record is
    /// gone, and the places in its expiry order that no expiry record names. A crash can
    /// leave them: a record's expiry records are written before it and deleted after it.
    /// Left, a stray expiry record would give its expiry to the next record of its key.
    /// Returns how many records went.
    pub fn drop_stray_expiries(&self, db: usize, shard: usize) -> u64 {
        let Some(tree) = self.tree(db) else {
            return 0;
        };
        let mut stray = Vec::new();
        for kv in tree.prefix(ttl_prefix(shard)) {
            let (k, v) = kv.into_inner().unwrap_or_else(|e| self.fatal("scan", e));
            let key = &k[4..];
            if !self.indexed(&tree, &crate::records::record_key(shard, key)) {
                if let Ok(at) = expiry_of(&v) {
                    stray.push(order_key(shard, at, key));
                }
                stray.push(k.to_vec());
            }
        }
        for kv in tree.prefix(order_prefix(shard)) {
            let k = kv.key().unwrap_or_else(|e| self.fatal("scan", e));
            let named = ordered(&k).is_some_and(|(at, key)| {
                let found = tree
                    .get(ttl_key(shard, key))
                    .unwrap_or_else(|e| self.fatal("read", e));
                found.is_some_and(|v| expiry_of(&v) == Ok(at))
            });
            if !named {
                stray.push(k.to_vec());
            }
        }
        for k in &stray {
            self.delete(&tree, db, k);
        }
        stray.len() as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::records::record_key;
    use strata_engine::{ColdStore, Owned, Value};

    fn open(tag: &str) -> (Tier, std::path::PathBuf) {
        let dir = std::env::temp_dir().join(format!("strata-recover-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let tier = Tier::open(&dir, 1, 4, 1 << 20, Default::default(), false).unwrap();
        (tier, dir)
    }

    fn owned(v: &[u8], expire_at: Option<u64>) -> Owned {
        Owned {
            value: Value::Str(v.to_vec()),
            expire_at,
            raw: false,
        }
    }

    fn entry(v: &[u8], expire_at: Option<u64>) -> Vec<u8> {
        let mut buf = Vec::new();
        // Another database and key than the record's: only value and expiry count.
        strata_storage::encode_value(&mut buf, 5, b"other", expire_at, &Value::Str(v.to_vec()));
        buf
    }

    #[test]
    fn a_record_holds_a_snapshot_entry_of_the_same_value_and_expiry() {
        let (tier, dir) = open("holds");
        tier.put(0, 1, b"k", &owned(b"value", Some(9 << 40)), 7)
            .unwrap();
        let holds = |shard, entry: &[u8]| tier.holds(&mut Walk::default(), 0, shard, b"k", entry);
        assert!(holds(1, &entry(b"value", Some(9 << 40))));
        assert!(!holds(1, &entry(b"value", None)));
        assert!(!holds(1, &entry(b"valuf", Some(9 << 40))));
        assert!(!holds(2, &entry(b"value", Some(9 << 40))), "another shard");
        assert!(!holds(1, b"\xff"), "damage");
        assert_eq!(tier.start.matched.load(Relaxed), 1);
        assert_eq!(tier.start.rewritten.load(Relaxed), 4);
        drop(tier);
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn a_walk_finds_what_lookups_find_in_order_or_not() {
        let (tier, dir) = open("walk");
        for k in [b"b", b"d", b"f", b"h"] {
            tier.put(0, 1, k, &owned(k, None), 0).unwrap();
        }
        tier.put(0, 2, b"a", &owned(b"a", None), 0).unwrap();
        // In order with keys missing before, between and after records, a value that
        // differs, then back to an earlier key, to another shard, and back again.
        let asks: [(usize, &[u8], &[u8], bool); 11] = [
            (1, b"a", b"a", false),
            (1, b"b", b"b", true),
            (1, b"c", b"c", false),
            (1, b"d", b"x", false),
            (1, b"f", b"f", true),
            (1, b"g", b"g", false),
            (1, b"h", b"h", true),
            (1, b"i", b"i", false),
            (1, b"d", b"d", true),
            (2, b"a", b"a", true),
            (1, b"b", b"b", true),
        ];
        let mut walk = Walk::default();
        for (shard, key, v, found) in asks {
            let e = entry(v, None);
            let shown = String::from_utf8_lossy(key);
            assert_eq!(
                tier.holds(&mut walk, 0, shard, key, &e),
                found,
                "{shard} {shown}"
            );
            let alone = tier.holds(&mut Walk::default(), 0, shard, key, &e);
            assert_eq!(alone, found, "{shard} {shown} alone");
        }
        drop(tier);
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn expiry_records_without_their_entry_go() {
        let (tier, dir) = open("stray");
        let at = 5 << 40;
        tier.put(0, 1, b"gone", &owned(b"a", Some(at)), 0).unwrap();
        tier.put(0, 1, b"kept", &owned(b"b", Some(at + 1)), 0)
            .unwrap();
        tier.put(0, 1, b"plain", &owned(b"c", None), 0).unwrap();
        let tree = tier.tree(0).unwrap();
        // What a crash between a record's deletion and its expiry records' leaves, and a
        // place in the expiry order that no expiry record names.
        tree.remove(record_key(1, b"gone")).unwrap();
        tree.insert(order_key(1, at - 1, b"plain"), []).unwrap();
        assert_eq!(tier.drop_stray_expiries(0, 1), 3);
        assert_eq!(tier.expiry(0, 1, b"gone"), None);
        assert_eq!(tier.expiry(0, 1, b"kept"), Some(at + 1));
        let mut due = Vec::new();
        tier.each_due(0, 1, u64::MAX, &mut |k| {
            due.push(k.to_vec());
            true
        });
        assert_eq!(due, vec![b"kept".to_vec()]);
        assert!(tier.contains(0, 1, b"plain") && tier.contains(0, 1, b"kept"));
        drop(tree);
        drop(tier);
        let _ = std::fs::remove_dir_all(&dir);
    }
}
