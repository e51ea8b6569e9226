//! A start that checks the tier's store after a crash (`strata_tier::recover`): before the
//! snapshot loads, its cold entries are compared with the store's records, one pass over
//! the file that reads their bytes and builds nothing unless a record differs; then the
//! store's other records go. The snapshot's other entries load afterwards as on any start
//! (`snapshot_load.rs`), then the journal replays.

use crate::server::Server;
use crate::services::tiering::Tier;
use std::collections::{HashMap, HashSet};
use std::path::Path;
use std::sync::atomic::Ordering::Relaxed;
use std::time::Instant;
use strata_engine::Owned;
use strata_storage::{Loaded, Place, Want};
use strata_tier::recover::Walk;

/// Checks the store against the newest snapshot's cold entries; see the module's doc.
pub fn check(server: &Server) -> Result<(), String> {
    let Some(tier) = server.tier.get() else {
        return Ok(());
    };
    let dir = server.data_dir();
    let Some(meta) = strata_storage::latest_snapshot(&dir).map_err(|e| e.to_string())? else {
        return Ok(());
    };
    let started = Instant::now();
    let ks = &server.keyspace;
    compare_cold_entries(server, tier, &meta.path)?;
    let compared = started.elapsed();
    let matched = tier.start.matched.load(Relaxed);
    let rewritten = tier.start.rewritten.load(Relaxed);
    let dropped = drop_stray_records(server, &meta.path)?;
    tier.start.dropped.fetch_add(dropped, Relaxed);
    let mut expiries = 0;
    for db in 0..ks.db_count() {
        for idx in 0..ks.db(db).shard_count() {
            expiries += tier.drop_stray_expiries(db, idx);
        }
    }
    // The store is whole again: a crash from here on may check it in turn.
    strata_tier::kept::note_origin(&crate::services::tiering::kept_origin(server), tier.path())?;
    tracing::info!(
        "tiering: the store checked against snapshot {} in {} ms ({} ms comparing): {matched} records as they were, {rewritten} written anew, {dropped} dropped, and {expiries} stray expiry records",
        meta.epoch,
        started.elapsed().as_millis(),
        compared.as_millis(),
    );
    Ok(())
}

/// Removes every record that is no cold entry of the snapshot at `path` (once those are
/// counted), and returns how many went.
fn drop_stray_records(server: &Server, path: &Path) -> Result<u64, String> {
    let ks = &server.keyspace;
    let mut unsure = HashMap::new();
    let mut dropped = 0;
    for db in 0..ks.db_count() {
        for idx in 0..ks.db(db).shard_count() {
            let (n, complete) = ks.db(db).sweep_store(idx, None);
            dropped += n;
            if !complete {
                unsure.insert((db, idx), HashSet::new());
            }
        }
    }
    if !unsure.is_empty() {
        // The filter of cold keys let a stray record through: those shards' cold keys, from
        // the snapshot, tell which.
        strata_storage::load_snapshot_placed(
            path,
            &ks.encodings,
            |_| Want::Skip,
            |place, db, key, _, _| {
                if let (Place::Cold, Ok(db)) = (place, usize::try_from(db)) {
                    if db < ks.db_count() {
                        if let Some(keys) = unsure.get_mut(&ks.shard_of(db, &key)) {
                            keys.insert(key);
                        }
                    }
                }
            },
        )
        .map_err(|e| e.to_string())?;
        for ((db, idx), keys) in &unsure {
            let (n, complete) = ks.db(*db).sweep_store(*idx, Some(keys));
            dropped += n;
            if !complete {
                return Err(format!(
                    "tiering: shard {idx} of database {db} counts other cold keys than its store holds"
                ));
            }
        }
    }
    Ok(dropped)
}

/// A cold entry of the snapshot: its database, key, whether it has a TTL, and its bytes.
struct Cold<'a> {
    db: usize,
    key: &'a [u8],
    volatile: bool,
    entry: &'a [u8],
}

/// Compares each cold entry of the snapshot at `path` with its record: one that holds it
/// stays and its shard counts the key cold; one that does not is written anew. The
/// records are read in the snapshot's order, which is the store's (`strata_tier::recover::
/// Walk`).
fn compare_cold_entries(server: &Server, tier: &Tier, path: &Path) -> Result<(), String> {
    let ks = &server.keyspace;
    let mut failed = None;
    let mut walk = Walk::default();
    let wanted = |place| match place {
        Place::Cold => Want::Raw,
        _ => Want::Skip,
    };
    strata_storage::load_snapshot_placed(path, &ks.encodings, wanted, |_, db, key, exp, value| {
        let (Loaded::Raw(entry), Ok(db)) = (value, usize::try_from(db)) else {
            return;
        };
        if db >= ks.db_count() || failed.is_some() {
            return;
        }
        let cold = Cold {
            db,
            key: &key,
            volatile: exp.is_some(),
            entry,
        };
        if let Err(e) = compare(server, tier, &mut walk, cold) {
            failed = Some(e);
        }
    })
    .map_err(|e| e.to_string())?;
    failed.map_or(Ok(()), Err)
}

/// One cold entry against its record.
fn compare(server: &Server, tier: &Tier, walk: &mut Walk, cold: Cold<'_>) -> Result<(), String> {
    let ks = &server.keyspace;
    let d = ks.db(cold.db);
    let (_, shard) = ks.shard_of(cold.db, cold.key);
    if tier.holds(walk, cold.db, shard, cold.key, cold.entry) {
        d.adopt_cold(cold.key, cold.volatile);
        return Ok(());
    }
    let mut owned = None;
    let decoded =
        strata_storage::decode_entries(cold.entry, &ks.encodings, |_, _, expire_at, value| {
            owned = Some(Owned {
                value,
                expire_at,
                raw: false,
            });
        });
    let Some(owned) = owned.filter(|_| decoded.is_ok()) else {
        return Err(format!(
            "a cold entry of the snapshot does not decode: {decoded:?}"
        ));
    };
    if let Err(e) = d.restore_cold(cold.key, &owned) {
        // The store takes no more (a full disk): the entry loads into RAM, as on a
        // rebuild, and eviction applies its policy.
        tracing::warn!("tiering: a cold entry stays in RAM: {e}");
        let mut l = d.lock1_at(strata_engine::clock::now_ms(), cold.key).quiet();
        super::snapshot_load::insert(&mut l, cold.key, owned.expire_at, owned.value);
    }
    Ok(())
}
