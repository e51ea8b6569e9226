//! `strata check` of a tier (docs/tiering.md, "Recovery"). A tier the last exit did not
//! keep is emptied and rebuilt by the next start: nothing in it is needed, and it is not
//! read. A kept one is what the next start serves the snapshot's cold entries from, so
//! each of them (and each clean copy) must be in the store with the snapshot's value, and
//! the store must hold nothing else.

use crate::kept::Marker;
use crate::records::{decode_record, expiry_of, order_key, record_key, ttl_key};
use crate::recover::{record_holds, Walk};
use crate::store::open_store;
use std::fmt;
use std::path::{Path, PathBuf};
use strata_engine::Encodings;
use strata_storage::{Loaded, Place, Want};

/// What checking a tier found.
#[derive(Debug)]
pub enum TierCheck {
    /// No tier in this directory.
    None,
    /// The next start rebuilds it (why): not read.
    Rebuilt(String),
    /// No exit kept it (why): the next start checks it against the newest snapshot
    /// (`recover.rs`), and this is what that check will find, read the same way.
    Crashed {
        why: String,
        /// Records that hold the snapshot's cold entries: they stay.
        matched: u64,
        /// The snapshot's cold entries whose records differ or are missing: written anew.
        rewrite: u64,
        /// Records that are no cold entry of the snapshot: dropped.
        stray: u64,
    },
    /// A kept tier, read record by record.
    Kept {
        /// The snapshot's cold entries and clean copies the store should hold.
        expected: u64,
        /// Of those, not in the store.
        missing: u64,
        /// In the store with another value or expiry, or undecodable.
        differing: u64,
        /// Records of the store that the snapshot does not name.
        extra: u64,
        /// The first problem, for the report.
        first: Option<String>,
    },
}

impl TierCheck {
    pub fn ok(&self) -> bool {
        match self {
            TierCheck::Kept {
                missing,
                differing,
                extra,
                ..
            } => missing + differing + extra == 0,
            _ => true,
        }
    }
}

/// The report's lines for the tier in `path`.
pub struct TierReport {
    pub path: PathBuf,
    pub check: TierCheck,
}

impl fmt::Display for TierReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let p = self.path.display();
        match &self.check {
            TierCheck::None => write!(f, "tier {p}: none"),
            TierCheck::Crashed {
                why,
                matched,
                rewrite,
                stray,
            } => write!(
                f,
                "tier {p}: not kept ({why}): the next start checks it against the newest \
                 snapshot and will find {matched} records as they are, {rewrite} to write \
                 anew, {stray} to drop"
            ),
            TierCheck::Rebuilt(why) => {
                write!(
                    f,
                    "tier {p}: not kept ({why}): the next start rebuilds it from the snapshot \
                     and the journal; not read"
                )
            }
            TierCheck::Kept {
                expected,
                missing,
                differing,
                extra,
                first,
            } => {
                let verdict = if self.check.ok() { "OK" } else { "DAMAGED" };
                write!(
                    f,
                    "tier {p}: kept for the newest snapshot, {expected} cold entries and clean \
                     copies; missing {missing}, differing {differing}, not in the snapshot \
                     {extra}: {verdict}"
                )?;
                if let Some(e) = first {
                    write!(f, "\n  first problem: {e}")?;
                }
                if !self.check.ok() {
                    write!(
                        f,
                        "\n  remove {p}/KEPT and the next start rebuilds the tier from the \
                         snapshot and the journal"
                    )?;
                }
                Ok(())
            }
        }
    }
}

/// Checks the tier in `tier_dir` against the newest snapshot in `data_dir`. Opens the
/// store (which may tidy its own files) but writes no record to it.
pub fn check(data_dir: &Path, tier_dir: &Path) -> Result<TierReport, String> {
    let report = |check| TierReport {
        path: tier_dir.to_path_buf(),
        check,
    };
    let store = tier_dir.join("store");
    let marker = Marker::read(tier_dir)?;
    if !store.exists() && marker.is_none() {
        return Ok(report(TierCheck::None));
    }
    let Some(marker) = marker else {
        let why = "no KEPT marker: the last exit was not a clean one, or the store changed \
                   after its last snapshot";
        return crashed(data_dir, tier_dir, why).map(report);
    };
    let snap = strata_storage::latest_snapshot(data_dir).map_err(|e| e.to_string())?;
    let Some(snap) = snap.filter(|s| marker.names(s)) else {
        return Ok(report(TierCheck::Rebuilt(
            "its KEPT marker names another snapshot than the newest".into(),
        )));
    };
    let shard_of = filer(marker.seed, marker.shards)?;
    // A kept tier without its store: the next start would serve the cold entries from an
    // empty one. Every one of them is missing (the store is not created to find out).
    let (_db, trees) = if store.exists() {
        let (db, trees) = open_store(&store, marker.databases, 64 << 20)?;
        (Some(db), trees)
    } else {
        (None, Vec::new())
    };
    let enc = Encodings::default();
    let (mut expected, mut missing, mut differing, mut first) = (0u64, 0u64, 0u64, None);
    strata_storage::load_snapshot_placed(
        &snap.path,
        &enc,
        |p| {
            if p == Place::Ram {
                Want::Skip
            } else {
                Want::Value
            }
        },
        |place, db, key, expire_at, value| {
            if place == Place::Ram {
                return;
            }
            expected += 1;
            let value = match value {
                Loaded::Value(v) => Some(v),
                _ => None,
            };
            let shard = shard_of(&key);
            // Err((missing rather than differing, why)).
            let found = match trees.get(db as usize) {
                None => Err((true, "no such tree".to_string())),
                Some(tree) => match tree.get(record_key(shard, &key)) {
                    Ok(None) => Err((true, "not in the store".into())),
                    Err(e) => Err((false, e.to_string())),
                    Ok(Some(bytes)) => match decode_record(&bytes, &enc) {
                        Ok((o, _))
                            if value.as_ref() == Some(&o.value) && o.expire_at == expire_at =>
                        {
                            expiry_records(tree, shard, &key, expire_at)
                        }
                        Ok(_) => Err((false, "another value in the store".into())),
                        Err(e) => Err((false, e)),
                    },
                },
            };
            if let Err((gone, why)) = found {
                *if gone { &mut missing } else { &mut differing } += 1;
                let shown = String::from_utf8_lossy(&key);
                first.get_or_insert_with(|| format!("key '{shown}' of database {db}: {why}"));
            }
        },
    )
    .map_err(|e| e.to_string())?;
    let mut records = 0u64;
    for tree in &trees {
        records += crate::records::records(tree).map_err(|e| e.to_string())?;
    }
    let extra = records.saturating_sub(expected - missing);
    Ok(report(TierCheck::Kept {
        expected,
        missing,
        differing,
        extra,
        first,
    }))
}

/// Whether an entry's expiry records match its expiry `at`: the expiry record, and its
/// place in the shard's expiry order (without which the background pass never finds it).
fn expiry_records(
    tree: &fjall::Keyspace,
    shard: usize,
    key: &[u8],
    at: Option<u64>,
) -> Result<(), (bool, String)> {
    let Some(at) = at else {
        return Ok(());
    };
    let stored = tree
        .get(ttl_key(shard, key))
        .map_err(|e| (false, e.to_string()))?;
    let ordered = tree
        .contains_key(order_key(shard, at, key))
        .map_err(|e| (false, e.to_string()))?;
    match stored.map(|b| expiry_of(&b)) {
        Some(Ok(t)) if t == at && ordered => Ok(()),
        _ => Err((false, "its expiry records do not match its expiry".into())),
    }
}

/// A tier no exit kept: what the next start's check will find (`recover.rs`), when it can
/// check it (the tier's `ORIGIN` says how records are filed, and there is a snapshot).
fn crashed(data_dir: &Path, tier_dir: &Path, why: &str) -> Result<TierCheck, String> {
    let snap = strata_storage::latest_snapshot(data_dir).map_err(|e| e.to_string())?;
    let (Some((databases, shards, seed)), Some(snap)) = (crate::kept::filed(tier_dir)?, snap)
    else {
        return Ok(TierCheck::Rebuilt(format!(
            "{why}; no ORIGIN file or no snapshot to check it against"
        )));
    };
    let shard_of = filer(seed, shards)?;
    let (_db, trees) = open_store(&tier_dir.join("store"), databases, 64 << 20)?;
    let (mut matched, mut rewrite, mut differing) = (0u64, 0u64, 0u64);
    let mut walk = Walk::default();
    let mut failed = None;
    strata_storage::load_snapshot_placed(
        &snap.path,
        &Encodings::default(),
        |p| {
            if p == Place::Cold {
                Want::Raw
            } else {
                Want::Skip
            }
        },
        |_, db, key, _, value| {
            let (Loaded::Raw(entry), Some(tree)) = (value, trees.get(db as usize)) else {
                return;
            };
            let shard = shard_of(&key);
            match walk.record(tree, db as usize, shard, &key) {
                Ok(Some(r)) if record_holds(&r, entry) => matched += 1,
                Ok(Some(_)) => {
                    differing += 1;
                    rewrite += 1;
                }
                Ok(None) => rewrite += 1,
                Err(e) => failed = failed.take().or(Some(e.to_string())),
            }
        },
    )
    .map_err(|e| e.to_string())?;
    if let Some(e) = failed {
        return Err(format!("cannot read the tier's store: {e}"));
    }
    let mut records = 0u64;
    for tree in &trees {
        records += crate::records::records(tree).map_err(|e| e.to_string())?;
    }
    Ok(TierCheck::Crashed {
        why: why.to_string(),
        matched,
        rewrite,
        stray: records.saturating_sub(matched + differing),
    })
}

/// Which shard of `shards` the tier filed a key in, under the hash seed it wrote with.
fn filer(seed: u64, shards: usize) -> Result<impl Fn(&[u8]) -> usize, String> {
    if !strata_engine::use_hash_seed(seed) || !shards.is_power_of_two() {
        return Err("cannot file keys by shard as the tier did".into());
    }
    Ok(move |key: &[u8]| (strata_engine::shard_pick(key) as usize) & (shards - 1))
}
