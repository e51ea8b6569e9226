//! The replication ID and offset kept across a clean restart, so that a restarted replica
//! resumes its primary's stream with a partial resync, and a restarted primary's replicas
//! resume theirs (Redis keeps them in the RDB it saves on shutdown).
//!
//! They are written to `<dir>/replication-state` on a clean shutdown, after the last
//! write was applied and the data made durable (the journal closed, or the shutdown
//! snapshot taken), so the offset is exactly that of the data the next start loads. The
//! next start reads the file and removes it: after a crash there is none, and a replica
//! starts over with a full sync.

use crate::server::Server;
use std::path::PathBuf;
use std::sync::atomic::Ordering;

const FILE: &str = "replication-state";

fn path(server: &Server) -> PathBuf {
    server.data_dir().join(FILE)
}

/// The offset the saved state names: a replica's in its primary's stream (-1 when its link
/// never synced), a primary's in its own.
pub fn offset_now(server: &Server) -> i64 {
    let repl = &server.repl;
    if repl.is_replica() {
        repl.link.reploff.load(Ordering::SeqCst)
    } else {
        repl.backlog.end() as i64
    }
}

/// On a clean shutdown, once no command runs any more. `journal`: the journal was on, so
/// the data directory holds every write; else only a final snapshot of the data at this
/// very offset makes the state worth saving.
pub fn save_at_shutdown(server: &Server, journal: bool) {
    let repl = &server.repl;
    let p = path(server);
    let offset = offset_now(server);
    let durable = journal || server.shutdown.snapshot_offset() == Some(offset);
    if !durable || !repl.backlog.is_active() || offset < 0 {
        let _ = std::fs::remove_file(&p);
        return;
    }
    let ids = repl.ids();
    let db = repl.backlog.cut(&[], false).1;
    let text = format!("replid {}\noffset {offset}\ndb {db}\n", ids.replid);
    match strata_storage::replace_file(&p, text.as_bytes()) {
        Ok(()) => tracing::info!(
            "replication state saved: replication ID {} offset {offset}",
            ids.replid
        ),
        Err(e) => tracing::warn!("cannot save the replication state in {}: {e}", p.display()),
    }
}

/// At start, after the data directory is loaded: takes the saved ID and offset, if any,
/// and removes the file. A replica resumes from them; a primary keeps them as its
/// secondary ID, so that its replicas resume.
pub fn load_at_start(server: &Server) {
    let p = path(server);
    let Ok(text) = std::fs::read_to_string(&p) else {
        return;
    };
    let _ = std::fs::remove_file(&p);
    let mut replid = None;
    let mut offset = None;
    let mut db = 0;
    for line in text.lines() {
        match line.split_once(' ') {
            Some(("replid", v)) if v.len() == 40 => replid = Some(v.to_string()),
            Some(("offset", v)) => offset = v.parse::<i64>().ok().filter(|o| *o >= 0),
            Some(("db", v)) => db = v.parse::<usize>().unwrap_or(0),
            _ => {}
        }
    }
    let (Some(replid), Some(offset)) = (replid, offset) else {
        tracing::warn!("ignoring a malformed {}", p.display());
        return;
    };
    let repl = &server.repl;
    repl.set_ids(|ids| {
        ids.replid = replid.clone();
        ids.replid2 = super::NO_ID.into();
        ids.second_offset = -1;
    });
    repl.backlog.restart_at(offset as u64, db as i64);
    if server.config.get().replicaof.0.is_some() {
        // The link's PSYNC asks for what follows.
        repl.set_cached(Some(super::Cached {
            replid: replid.clone(),
            offset,
            db: db.min(server.keyspace.db_count().saturating_sub(1)),
        }));
        repl.link.reploff.store(offset, Ordering::SeqCst);
        repl.backlog.set_mode(super::backlog::mode::RAW);
    } else {
        // As Redis: the loaded history becomes the secondary ID, a new one starts.
        repl.set_ids(|ids| {
            ids.replid2 = std::mem::replace(&mut ids.replid, super::random_hex());
            ids.second_offset = offset + 1;
        });
        repl.backlog.set_mode(super::backlog::mode::EFFECTS);
    }
    repl.attach_sink(server);
    tracing::info!("replication state loaded: replication ID {replid} offset {offset}");
}
