//! Tiering (`tiering yes`): entries evicted under `maxmemory` move, key and value, to an
//! on-disk store instead of being deleted, and come back into RAM on their next access.
//! The engine decides when entries move and keeps the invariants (`strata_engine::ColdStore`,
//! docs/tiering.md); the store is the `strata-tier` crate's. Here: opening it at start,
//! spilling while the data loads, reading a command's cold keys ahead, and INFO.

use crate::exec::command::ks;
use crate::server::Server;
use std::path::PathBuf;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;
use strata_tier::kept::Found;
use strata_tier::recover::How;
pub use strata_tier::Tier;

/// Opens the tier when `tiering yes`, before anything is loaded.
pub fn open_at_start(server: &Server) -> Result<Option<Arc<Tier>>, String> {
    let cfg = server.config.get();
    if !cfg.tiering {
        return Ok(None);
    }
    let path = if cfg.tiering_dir.is_empty() {
        server.data_dir().join("tier")
    } else {
        PathBuf::from(&cfg.tiering_dir)
    };
    let (dbs, shards) = (
        server.keyspace.db_count(),
        server.keyspace.db(0).shard_count(),
    );
    let origin = kept_origin(server);
    let mut found = strata_tier::kept::at_start(&origin, &path)?;
    let open = |keep| {
        let enc = server.keyspace.encodings.clone();
        Tier::open(&path, dbs, shards, cfg.tiering_cache_size, enc, keep)
    };
    let tier = match open(found != Found::Empty) {
        Err(e) if found == Found::Check => {
            tracing::warn!("tiering: {e}: the store a crash left is emptied and rebuilt");
            found = Found::Empty;
            open(false)?
        }
        opened => opened?,
    };
    let tier = Arc::new(tier);
    match found {
        Found::Kept(epoch) => {
            tier.watch.kept_for(epoch);
            tier.start.set(How::Kept);
        }
        Found::Check => tier.start.set(How::Checked),
        Found::Empty => {}
    }
    if found != Found::Check {
        // A checked store is noted once the check is done (`tier_recovery.rs`).
        strata_tier::kept::note_origin(&origin, &path)?;
    }
    server.keyspace.set_cold_store(tier.clone());
    // Shards fold their counts in every `fold` bytes: the total is within a sixteenth of
    // `maxmemory` of the exact sum.
    let shards = server.keyspace.db_count() * server.keyspace.db(0).shard_count();
    let fold = (cfg.maxmemory as usize / (16 * shards)).clamp(64, 4096);
    let _ = tier.hot.set(server.keyspace.count_hot_bytes(fold));
    let shown = path.display();
    match found {
        Found::Kept(_) => tracing::info!(
            "tiering: cold entries go to {shown}, which the last exit kept: the snapshot's cold entries stay there"
        ),
        Found::Check => tracing::info!(
            "tiering: cold entries go to {shown}, which no exit kept: it is checked against the snapshot"
        ),
        Found::Empty => tracing::info!("tiering: cold entries go to {shown}"),
    }
    Ok(Some(tier))
}

/// The server's data directory and keyspace layout, which a kept store must match.
pub fn kept_origin(server: &Server) -> strata_tier::kept::Origin {
    strata_tier::kept::Origin {
        data_dir: server.data_dir(),
        databases: server.keyspace.db_count(),
        shards: server.keyspace.db(0).shard_count(),
    }
}

/// While the server loads its data at start (snapshot, journal): with tiering, entries
/// spill to the tier as they would under clients' commands, so data larger than
/// `maxmemory` loads within it. Until the hot entries fit, not for one eviction call's
/// time (`maxmemory-eviction-tenacity`): no client waits for a load, and a load that
/// outran its spills held several times `maxmemory` (2M keys of 1 KiB, 256 MiB: 1.4 GB
/// of hot entries at the first PONG).
pub fn spill_while_loading(server: &Server) {
    if server.tier.get().is_some() && server.loading.load(std::sync::atomic::Ordering::Relaxed) {
        while server.evict.perform(server) == crate::services::evict::State::Running {}
    }
}

/// Before a client's command runs: if any of its keys may be in the tier (its shard has
/// cold keys, it is not in RAM, the store's filter does not rule it out), the work that reads them on the blocking pool. The
/// read only warms the store's cache and the page cache: the command, run again, brings
/// the keys back under their locks as any access does, so a key that moved meanwhile is
/// still found where it is.
pub fn prefetch(
    server: &Server,
    db: usize,
    cmd: &crate::exec::command::Command,
    argv: &[bytes::Bytes],
) -> Option<crate::exec::Deferred> {
    let tier = server.tier.get()?;
    // Reads served from memory (the store's cache, the page cache) cost less than the
    // trip to the pool and back: under `tiering-inline-read-us` they run in place, under
    // the shard's lock (measured: zipfian GETs over a tier in the page cache ran 14%
    // faster, uniform ones 47%, docs/tiering.md).
    let inline_ns = server.config.get().tiering_inline_read_us * 1000;
    if tier.read_ns.load(Relaxed) < inline_ns {
        return None;
    }
    // A blocking command may block on its second run, which nothing would then wait
    // for: its cold keys come back synchronously instead.
    if cmd.has(crate::exec::command::flags::BLOCKING) {
        return None;
    }
    // While a script is busy its worker serves others from the script's hook
    // (`net/busy.rs`), which runs commands through and cannot wait for them.
    if server.scripts.busy.load(Relaxed) {
        return None;
    }
    let d = server.keyspace.db(db);
    let presence = cmd.has(crate::exec::command::flags::PRESENCE);
    let mut cold = Vec::new();
    cmd.for_each_key_and_flags(argv, |k| {
        if let Some(key) = argv.get(k.pos) {
            if let Some((shard, unread_ok)) = d.maybe_cold(key) {
                // A key the command overwrites or deletes without reading it is dropped
                // unread (`ColdStore::discard`), or found so (SET NX), and one whose
                // presence alone is asked (EXISTS, TTL): only the store's index is warmed.
                let unread = presence
                    || unread_ok && k.flags & (ks::OW | ks::RM) != 0 && k.flags & ks::ACCESS == 0;
                cold.push((shard, key.clone(), unread));
            }
        }
    });
    if cold.is_empty() {
        return None;
    }
    let tier = tier.clone();
    tier.prefetches.fetch_add(1, Relaxed);
    Some(Box::new(move || {
        for (shard, key, unread) in cold {
            if unread {
                tier.has_record(db, shard, &key);
                continue;
            }
            let read = || tier.warm(db, shard, &key);
            tier.reads.read((db, shard, key.clone()), read);
        }
        Box::new(())
    }))
}

/// Whether the tier may take more: below `tiering-max-disk` (0: no limit), and short of
/// filling its file system.
pub fn has_room(server: &Server, tier: &Tier) -> bool {
    let max = server.config.get().tiering_max_disk;
    (max == 0 || tier.disk_bytes() < max) && !tier.dead.broken() && tier.disk_has_room()
}

/// INFO's `tiering` section.
pub fn info(server: &Server, out: &mut String) {
    use std::fmt::Write;
    let Some(tier) = server.tier.get() else {
        let _ = write!(out, "tiering_enabled:0\r\n");
        return;
    };
    let ks = &server.keyspace;
    let (mut cold, mut spills, mut faults, mut keys, mut filters) = (0, 0, 0, 0u64, 0);
    for d in 0..ks.db_count() {
        filters += ks.db(d).cold_filter_bytes() as u64;
        let (c, s, f) = ks.db(d).cold_stats();
        cold += c;
        spills += s;
        faults += f;
        keys += ks.db(d).len() as u64;
    }
    let disk = tier.disk_bytes();
    let mem = tier.memory_bytes();
    let pinned = tier.pinned_bytes();
    let written = tier.written_bytes.load(Relaxed);
    let (cache_used, buffers_used) = tier.cache_and_buffers_used();
    let (compactions, compacting) = tier.compactions();
    // The store's cache and write buffers are a fixed reserve; its pinned blocks and the
    // shards' filters are what each further cold key adds.
    let per_cold = |bytes: u64| match cold {
        0 => 0.0,
        n => bytes as f64 / n as f64,
    };
    let _ = write!(
        out,
        "tiering_enabled:1\r\ntiering_dir:{}\r\nhot_keys:{}\r\nhot_bytes:{}\r\ncold_keys:{cold}\r\n\
         cold_disk_bytes:{disk}\r\ntier_memory_bytes:{mem}\r\ntier_pinned_bytes:{pinned}\r\n\
         cold_filter_bytes:{filters}\r\n\
         tier_ram_per_cold_key:{:.1}\r\ncold_key_index_ram:{:.1}\r\nmoved_to_disk:{spills}\r\nmoved_to_ram:{faults}\r\n\
         tier_bytes_written:{written}\r\ntier_write_amplification:{:.2}\r\n\
         tier_bytes_read:{}\r\ntier_errors:{}\r\ntier_write_failed:{}\r\n\
         tier_cache_used:{}\r\ntier_write_buffers_used:{}\r\ncold_reads_waited:{}\r\ncold_reads_merged:{}\r\ntier_read_avg_us:{:.1}\r\n\
         cold_replaced_unread:{}\r\n\
         tier_compactions:{}\r\ntier_compacting_ms:{}\r\n\
         tier_start:{}\r\ntier_start_matched:{}\r\ntier_start_rewritten:{}\r\ntier_start_dropped:{}\r\n",
        tier.path().display(),
        keys - cold,
        tier.hot_bytes(),
        per_cold(mem + pinned + filters),
        per_cold(pinned + filters),
        strata_tier::write_amplification(written),
        tier.read_bytes.load(Relaxed),
        tier.errors.load(Relaxed),
        u8::from(tier.dead.broken()),
        cache_used,
        buffers_used,
        tier.prefetches.load(Relaxed),
        tier.reads.merged.load(Relaxed),
        tier.read_ns.load(Relaxed) as f64 / 1000.0,
        tier.discards.load(Relaxed),
        compactions,
        compacting.as_millis(),
        tier.start.name(),
        tier.start.matched.load(Relaxed),
        tier.start.rewritten.load(Relaxed),
        tier.start.dropped.load(Relaxed),
    );
}
