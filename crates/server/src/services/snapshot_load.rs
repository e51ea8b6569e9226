//! Loading the newest snapshot of the data directory into the keyspace: at start-up
//! (`load`) and for DEBUG RELOAD (`reload`); `load_newest` does the work for both and for
//! DEBUG LOADAOF. The entries' values are built by `strata_storage`'s decoder, each
//! collection whole.

use crate::server::Server;
use std::sync::atomic::Ordering;
use std::time::Instant;
use strata_engine::{Keyspace, Locked, Owned, Ttl, Value};
use strata_storage::{Loaded, Place, Position, Want};

/// Loads the newest snapshot in the data directory into the keyspace. Returns its epoch
/// and the journal position to replay from.
pub fn load(server: &Server) -> Result<Option<(u64, Position)>, String> {
    // A store a crash left is checked against the snapshot's cold entries first; the rest
    // of the snapshot then loads as ever (`tier_recovery.rs`).
    let checked = server
        .tier
        .get()
        .is_some_and(|t| t.start.how() == strata_tier::recover::How::Checked);
    if checked {
        crate::services::tier_recovery::check(server)?;
    }
    let how = Load {
        skip_expired: false,
        replace: true,
        skip_cold: checked,
    };
    let Some((loaded, _)) = load_newest(server, how)? else {
        return Ok(None);
    };
    server.persist.snapshots.set_loaded(loaded.epoch);
    server.persist.epoch.store(loaded.epoch, Ordering::SeqCst);
    Ok(Some((loaded.epoch, loaded.replay_from)))
}

/// At start, once the data is loaded and the replication history restored: on a primary,
/// the keys whose time passed while the server was down go now, as Redis drops them when
/// it loads its RDB. Their DELs go to the journal and to the history the replicas resume
/// from, whose offset counts them. A replica keeps them: its primary's DELs remove them.
pub fn expire_at_start(server: &Server) {
    if server.config.get().replicaof.0.is_some() {
        return;
    }
    let gone = server.keyspace.purge_all_expired() as u64;
    if gone > 0 {
        tracing::info!("{gone} keys had expired while the server was down: removed");
    }
    server
        .persist
        .load_keys_expired
        .fetch_add(gone, Ordering::Relaxed);
}

/// DEBUG RELOAD: empties the keyspace (when `flush`) and loads the newest snapshot into
/// it, holding every shard meanwhile so that no command sees it half loaded. Keys whose
/// time has passed are not loaded (Redis drops them on load too). With `merge` a key of
/// the snapshot replaces one of its name; without, such a key is kept and the reload
/// fails once loaded. The journal and the snapshot epochs are left as they are.
pub fn reload(server: &Server, flush: bool, merge: bool) -> Result<(), String> {
    let ks = &server.keyspace;
    let _all = (!Keyspace::in_session()).then(|| ks.session_all());
    if flush {
        drop(ks.flush_all());
    }
    let load = Load {
        skip_expired: true,
        replace: merge,
        skip_cold: false,
    };
    match load_newest(server, load)? {
        Some((_, 0)) | None => Ok(()),
        Some((_, clashes)) => Err(format!("{clashes} keys of the snapshot exist already")),
    }
}

/// How `load_newest` treats the snapshot's keys.
#[derive(Clone, Copy)]
pub(crate) struct Load {
    /// Leave out keys whose time has passed.
    pub skip_expired: bool,
    /// A key of the snapshot replaces one of its name (else the one there stays).
    pub replace: bool,
    /// Leave out the entries that were in the tier's store: a check of the store after a
    /// crash has counted them (`tier_recovery.rs`).
    pub skip_cold: bool,
}

/// Loads the newest snapshot's entries. Returns its description and how many of its keys
/// existed already; None when there is no snapshot.
pub(crate) fn load_newest(
    server: &Server,
    how: Load,
) -> Result<Option<(strata_storage::SnapshotMeta, u64)>, String> {
    let dir = server.data_dir();
    let Some(meta) = strata_storage::latest_snapshot(&dir).map_err(|e| e.to_string())? else {
        return Ok(None);
    };
    let started = Instant::now();
    let ks = &server.keyspace;
    let now = strata_engine::clock::now_ms();
    let mut n = 0u64;
    let mut last_log = Instant::now();
    let total = meta.entries.max(1);
    let mut clashes = 0u64;
    let mut expired = 0u64;
    // A start that kept the tier's store (`strata_tier::kept`): the entries the snapshot found
    // there are there still; the shards count them, and clean ones keep their copies.
    let kept = server
        .tier
        .get()
        .is_some_and(|t| t.watch.kept.load(Ordering::Relaxed));
    // Their values are skipped, not built.
    let wanted = |place| match place {
        Place::Cold if kept || how.skip_cold => Want::Skip,
        _ => Want::Value,
    };
    let on_load = |place, db: u32, key: Vec<u8>, exp: Option<u64>, value: Loaded<'_>| {
        if (db as usize) >= ks.db_count() {
            return;
        }
        let d = ks.db(db as usize);
        let Loaded::Value(value) = value else {
            if kept {
                // An expired one goes as expired cold keys go.
                d.adopt_cold(&key, exp.is_some());
            }
            n += 1;
            return;
        };
        if n % 1024 == 1023 {
            crate::services::tiering::spill_while_loading(server);
        }
        if kept && place == Place::Clean {
            // Even when expired: its copy goes when it expires.
            let owned = Owned {
                value,
                expire_at: exp,
                raw: false,
            };
            d.adopt_clean(&key, owned);
            n += 1;
            return;
        }
        if how.skip_expired && exp.is_some_and(|at| at <= now) {
            expired += 1;
            return;
        }
        // Stores take the load's time as the keys' access time; nothing expires meanwhile
        // (no store looks at expiry).
        let mut l = d.lock1_at(now, &key).quiet();
        if !how.replace && l.peek_raw_expire(&key).is_some() {
            clashes += 1;
            return;
        }
        insert(&mut l, &key, exp, value);
        n += 1;
        if n.is_multiple_of(65536) && last_log.elapsed().as_secs() >= 1 {
            last_log = Instant::now();
            let secs = started.elapsed().as_secs_f64().max(0.001);
            tracing::info!(
                "loading snapshot: {n} keys, {:.0} keys/s, {:.0}%",
                n as f64 / secs,
                100.0 * n as f64 / total as f64
            );
        }
    };
    // Database 0's tables grow toward the snapshot's key count instead of doubling (a
    // sixth of a 3M-key start). The file does not say how its keys split between
    // databases, and most data sets live in database 0; should its keys be a small part
    // of the file, what `expect` reserves is bounded by what the shards hold. Not with a
    // tier, which takes keys out of RAM as they come, nor when this thread holds the
    // shards (DEBUG RELOAD): telling a shard takes its lock.
    let sized = server.tier.get().is_none() && !Keyspace::in_session();
    if sized {
        ks.db(0)
            .expect(usize::try_from(meta.entries).unwrap_or(usize::MAX));
    }
    let loaded = strata_storage::load_snapshot_placed(&meta.path, &ks.encodings, wanted, on_load)
        .map_err(|e| e.to_string());
    if sized {
        ks.db(0).expect(0);
    }
    let loaded = loaded?;
    if let Some(codes) = &loaded.functions {
        let codes = codes
            .iter()
            .map(|c| bytes::Bytes::copy_from_slice(c))
            .collect();
        server
            .scripts
            .restore_libraries(codes, crate::services::scripting::RestorePolicy::Flush)
            .map_err(|e| format!("the function libraries of {}: {e}", meta.path.display()))?;
    }
    let p = &server.persist;
    p.load_keys_loaded.store(n, Ordering::Relaxed);
    p.load_keys_expired.store(expired, Ordering::Relaxed);
    tracing::info!(
        "snapshot {} loaded: {n} keys in {} ms",
        loaded.epoch,
        started.elapsed().as_millis()
    );
    Ok(Some((loaded, clashes)))
}

/// Stores a loaded entry through `l` (its key's shard locked).
pub(crate) fn insert(l: &mut Locked<'_>, key: &[u8], exp: Option<u64>, value: Value) {
    match value {
        Value::Str(s) => l.set_str(key, &s, exp.map_or(Ttl::Clear, Ttl::At)),
        value => l.put_owned(
            key,
            Owned {
                value,
                expire_at: exp,
                raw: false,
            },
        ),
    }
}
