//! Changes of role (REPLICAOF, `replicaof` at start, FAILOVER) and of the backlog that
//! goes with them, as Redis's replicationSetMaster / replicationUnsetMaster do them.

use super::backlog::mode;
use super::{link, random_hex, NO_ID};
use crate::server::Server;
use std::sync::atomic::Ordering;
use std::sync::Arc;

/// At start, once the worker threads run: follows the configured `replicaof`, if any.
pub fn start(server: &Arc<Server>) {
    super::configure(server);
    let target = server.config.get().replicaof.0.clone();
    if let Some((host, port)) = target {
        become_replica(server, &host, port);
    }
}

/// The outcome of REPLICAOF host port.
#[derive(Debug, PartialEq, Eq)]
pub enum Switched {
    Now,
    /// Already following that primary: nothing changes.
    Already,
}

/// Follows the primary at `host:port` from now on.
pub fn become_replica(server: &Arc<Server>, host: &str, port: u16) -> Switched {
    let repl = &server.repl;
    {
        let mut m = repl.master.lock();
        if m.as_ref()
            .is_some_and(|(h, p)| h.eq_ignore_ascii_case(host) && *p == port)
        {
            return Switched::Already;
        }
        *m = Some((host.to_string(), port));
    }
    let was_master = !repl.replica.swap(true, Ordering::SeqCst);
    repl.generation.fetch_add(1, Ordering::SeqCst);
    repl.stop_link();
    remember_target(server, Some((host, port)));
    server.keyspace.set_keep_expired(true);
    if repl.backlog.mode() != mode::OFF {
        repl.backlog.set_mode(mode::RAW);
    }
    if was_master {
        // Our own history may let the new primary (a former replica of ours) resume us
        // with a partial resync; the link reads it once writes in flight are done.
        repl.set_cached(None);
        repl.cache_from_self.store(true, Ordering::SeqCst);
    }
    repl.link.state.store(link::CONNECT, Ordering::SeqCst);
    repl.link.down_since.store(0, Ordering::SeqCst);
    repl.refresh_restrict(server);
    let _ = crate::services::oom::apply(server);
    tracing::info!("Connecting to MASTER {host}:{port}");
    super::replica::spawn(server, repl.generation());
    Switched::Now
}

/// Stops following a primary and serves writes (REPLICAOF NO ONE): the history so far
/// stays valid as the secondary ID, so its replicas, and its former primary's other
/// replicas, resume with a partial resync.
pub fn become_master(server: &Arc<Server>) {
    let repl = &server.repl;
    if !repl.replica.swap(false, Ordering::SeqCst) {
        return;
    }
    *repl.master.lock() = None;
    repl.generation.fetch_add(1, Ordering::SeqCst);
    repl.stop_link();
    remember_target(server, None);
    let _ = crate::services::oom::apply(server);
    repl.set_cached(None);
    repl.cache_from_self.store(false, Ordering::SeqCst);
    let end = repl.backlog.end();
    repl.set_ids(|ids| {
        ids.replid2 = std::mem::replace(&mut ids.replid, random_hex());
        ids.second_offset = end as i64 + 1;
        tracing::warn!(
            "Setting secondary replication ID to {}, valid up to offset: {}. New replication ID is {}",
            ids.replid2,
            ids.second_offset,
            ids.replid
        );
    });
    if repl.backlog.mode() != mode::OFF {
        repl.backlog.set_mode(mode::EFFECTS);
    }
    repl.backlog.forget_db();
    repl.disconnect_replicas();
    repl.link.state.store(link::NONE, Ordering::SeqCst);
    repl.link.down_since.store(0, Ordering::SeqCst);
    repl.loading.store(false, Ordering::SeqCst);
    server.keyspace.set_keep_expired(false);
    repl.no_peers_since
        .store(Server::now_unix(), Ordering::Relaxed);
    repl.refresh_restrict(server);
}

/// Keeps `replicaof` in the configuration in step with the role (CONFIG GET, CONFIG
/// REWRITE write what this server follows now, as Redis does).
fn remember_target(server: &Server, target: Option<(&str, u16)>) {
    let value = match target {
        Some((h, p)) => format!("{h} {p}"),
        None => "no one".to_string(),
    };
    let mut load = server.config.load();
    let words: Vec<&str> = value.split(' ').collect();
    if load.directive("replicaof", &words).is_ok() {
        load.finish();
    }
}

/// A primary's first replica: the backlog starts (a new replication ID, as Redis starts
/// a new history with it) and becomes an effect sink. Returns true when it was created now,
/// and the caller must let writes that began without it end before taking a cut.
pub(crate) fn ensure_backlog(server: &Server) -> bool {
    let repl = &server.repl;
    if repl.backlog.is_active() {
        repl.attach_sink(server);
        return false;
    }
    repl.set_ids(|ids| {
        ids.replid = random_hex();
        ids.replid2 = NO_ID.into();
        ids.second_offset = -1;
    });
    repl.backlog.create();
    repl.backlog.set_mode(if repl.is_replica() {
        mode::RAW
    } else {
        mode::EFFECTS
    });
    repl.attach_sink(server);
    let ids = repl.ids();
    tracing::info!(
        "Replication backlog created, my new replication IDs are '{}' and '{}'",
        ids.replid,
        ids.replid2
    );
    true
}

/// `repl-backlog-ttl` passed with no replica: the history goes, and with it the ID (a
/// new one, since the offset stops counting).
pub(crate) fn drop_backlog(server: &Server) {
    let repl = &server.repl;
    repl.backlog.set_mode(mode::OFF);
    repl.detach_sink(server);
    repl.backlog.free();
    repl.set_ids(|ids| {
        ids.replid = random_hex();
        ids.replid2 = NO_ID.into();
        ids.second_offset = -1;
    });
}

/// A replica after a full sync of a primary's data at `offset`, under replication ID
/// `replid`: its history starts there (Redis: a new backlog, ID2 cleared).
pub(crate) fn synced(server: &Server, replid: &str, offset: u64, db: i64) {
    let repl = &server.repl;
    repl.set_ids(|ids| {
        ids.replid = replid.to_string();
        ids.replid2 = NO_ID.into();
        ids.second_offset = -1;
    });
    repl.backlog.restart_at(offset, db);
    repl.backlog.set_mode(mode::RAW);
    repl.attach_sink(server);
}

/// A replica whose primary changed its replication ID (it was promoted): the old ID stays
/// valid up to `offset` for our own replicas, which must reconnect to learn the new one.
pub(crate) fn primary_changed_id(server: &Server, new: &str, offset: i64) {
    let repl = &server.repl;
    repl.set_ids(|ids| {
        ids.replid2 = std::mem::replace(&mut ids.replid, new.to_string());
        ids.second_offset = offset + 1;
    });
    tracing::warn!("Master replication ID changed to {new}");
    repl.disconnect_replicas();
}

/// Before the first PSYNC of a former primary: our own ID and offset as the history to
/// resume (Redis's replicationCacheMasterUsingMyself).
pub(crate) fn cache_own_history(server: &Server) {
    let repl = &server.repl;
    if repl.cache_from_self.swap(false, Ordering::SeqCst) && repl.backlog.is_active() {
        let ids = repl.ids();
        let offset = repl.backlog.end() as i64;
        tracing::info!(
            "Before turning into a replica, using my own master parameters to synthesize a cached master: I may be able to synchronize with the new master with just a partial transfer."
        );
        repl.set_cached(Some(super::Cached {
            replid: ids.replid,
            offset,
            db: 0,
        }));
    }
}
