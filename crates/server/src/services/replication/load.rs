//! A replica loading its primary's RDB in place of its data set, on a thread of its own,
//! while its clients get -LOADING.

use crate::rdb::{LoadOptions, Loader};
use crate::server::Server;
use std::path::Path;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use strata_rdb::{Item, Reader};

/// Replaces the data set with the RDB at `path`. Returns the database the primary's
/// stream continues in (the `repl-stream-db` field, 0 without one). On an error the data
/// set is left empty, as Redis leaves it.
pub(crate) fn load(server: &Arc<Server>, path: &Path) -> Result<usize, String> {
    let repl = &server.repl;
    repl.loading.store(true, Ordering::SeqCst);
    server.loading.store(true, Ordering::SeqCst);
    repl.refresh_restrict(server);
    let result = replace(server, path);
    if result.is_err() {
        flush(server);
    }
    server.loading.store(false, Ordering::SeqCst);
    repl.loading.store(false, Ordering::SeqCst);
    repl.refresh_restrict(server);
    result
}

fn flush(server: &Server) {
    let ks = &server.keyspace;
    let mut watched = Vec::new();
    for db in 0..ks.db_count() {
        watched.extend(server.watches.keys_in(db).into_iter().map(|k| (db, k)));
    }
    server.watches.touch_keys(&watched);
    let keys = (0..ks.db_count()).map(|d| ks.db(d).len() as u64).sum();
    crate::services::lazyfree::free_later(ks.flush_all(), keys);
    server.scripts.libraries.write().clear();
    server.scripts.functions_changed();
}

fn replace(server: &Server, path: &Path) -> Result<usize, String> {
    flush(server);
    let file = std::fs::File::open(path).map_err(|e| e.to_string())?;
    let mut reader = Reader::new(file).map_err(|e| e.to_string())?;
    // Packed values are decoded where the loader stores keys (`Loader::load` does the same).
    reader.set_defer_packed(true);
    // A replica keeps keys whose expiry passed: its primary's DEL removes them.
    let mut loader = Loader::new(
        server,
        LoadOptions {
            skip_expired: false,
            replace: true,
        },
    );
    let mut stream_db = 0;
    let started = std::time::Instant::now();
    while let Some(item) = reader.next_item().map_err(|e| e.to_string())? {
        if let Item::Aux { key, value } = &item {
            if &key[..] == b"repl-stream-db" {
                stream_db = std::str::from_utf8(value)
                    .ok()
                    .and_then(|v| v.parse::<usize>().ok())
                    .unwrap_or(0);
            }
        }
        loader.item(item).map_err(|e| e.to_string())?;
    }
    let summary = loader.finish().map_err(|e| e.to_string())?;
    tracing::info!(
        "MASTER <-> REPLICA sync: loaded {} keys in {} ms",
        summary.keys(),
        started.elapsed().as_millis()
    );
    Ok(stream_db.min(server.keyspace.db_count().saturating_sub(1)))
}

/// After a full sync: the journal starts again from a snapshot of the new data (the data
/// loaded is not in it), as Redis rewrites its AOF after a sync.
pub(crate) fn rewrite_after_sync(server: &Arc<Server>) {
    if server.persist.journal().is_none() {
        return;
    }
    if let Err(e) = crate::services::snapshot::start(server, true, true) {
        if e == crate::services::snapshot::ALREADY {
            server
                .persist
                .snapshots
                .scheduled_rewrite
                .store(true, Ordering::Relaxed);
        } else {
            tracing::warn!("snapshot after the sync with the master failed: {e}");
        }
    }
}
