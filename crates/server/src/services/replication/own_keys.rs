//! The keys a writable replica's own clients wrote, which expire on the replica itself
//! (Redis's slaveKeysWithExpire): a replica removes nothing by itself, since its primary's
//! DELs do that for the keys it sent, but no DEL will ever come for a key the primary
//! never had. The keys of a non-primary client's write that may set a TTL (SET EX,
//! EXPIRE, RESTORE, RENAME...) are noted, at the stage that records a write's effect, so
//! MULTI and scripts included; each cron tick removes those whose TTL has passed and
//! forgets those gone or without a TTL. INFO
//! `slave_expires_tracked_keys` counts them.

use crate::server::Server;
use bytes::Bytes;
use parking_lot::Mutex;
use std::collections::HashSet;

#[derive(Default)]
pub struct OwnKeys {
    keys: Mutex<HashSet<(usize, Bytes)>>,
}

impl OwnKeys {
    /// Keys noted (INFO `slave_expires_tracked_keys`).
    pub fn len(&self) -> usize {
        self.keys.lock().len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// The writes that give a key a TTL, as those that call Redis's setExpire: only their
/// keys are noted (a key the primary sent with a TTL expires by the primary's DEL).
const SET_TTL: &[&str] = &[
    "setex",
    "psetex",
    "getex",
    "expire",
    "pexpire",
    "expireat",
    "pexpireat",
    "restore",
    "copy",
    "rename",
    "renamenx",
    "move",
];

/// Whether `argv`, the command `name`, may give its keys a TTL.
fn sets_ttl(name: &str, argv: &[Bytes]) -> bool {
    if name == "set" {
        let option = |a: &Bytes| {
            [&b"ex"[..], b"px", b"exat", b"pxat"]
                .iter()
                .any(|o| a.eq_ignore_ascii_case(o))
        };
        return argv.iter().skip(3).any(option);
    }
    SET_TTL.contains(&name)
}

/// Notes the keys of `argv`, a write a replica's own client made in database `db`, if it
/// may have given them a TTL.
#[cold]
pub fn note(server: &Server, db: usize, argv: &[Bytes]) {
    let Ok(id) = server.table.resolve(argv) else {
        return;
    };
    let name = server.table.fullnames.get(id).map_or("", String::as_str);
    if !sets_ttl(name, argv) {
        return;
    }
    let mut keys = server.repl.own_keys.keys.lock();
    server.table.for_each_key_position(id, argv, |i| {
        if let Some(key) = argv.get(i) {
            keys.insert((db, key.clone()));
        }
    });
}

/// The cron's pass: on a replica, removes the noted keys whose TTL has passed; on a
/// primary (promoted since), forgets them all, as its active expiry now covers every key.
pub fn expire(server: &Server) {
    let own = &server.repl.own_keys;
    if own.is_empty() {
        return;
    }
    if !server.repl.is_replica() {
        own.keys.lock().clear();
        return;
    }
    let noted: Vec<(usize, Bytes)> = own.keys.lock().iter().cloned().collect();
    let mut done = Vec::new();
    for (db, key) in noted {
        let Some(d) = (db < server.keyspace.db_count()).then(|| server.keyspace.db(db)) else {
            done.push((db, key));
            continue;
        };
        if d.expire_if_due(&key) != Some(false) {
            done.push((db, key));
        }
    }
    // Not held while keys are checked (a write notes its keys under its shard's lock). A
    // key written again between its check and here is forgotten: it then expires when
    // its primary's DEL comes, or its next local write notes it again.
    let mut keys = own.keys.lock();
    for k in &done {
        keys.remove(k);
    }
}
