//! Keyspace notifications (`notify-keyspace-events`), as Redis 7.0's notify.c.
//!
//! A command calls `ctx.notify(class, event, key)` right where Redis calls
//! notifyKeyspaceEvent: after the mutation, before writing its reply (never in the middle
//! of an aggregate reply: an event for the client itself is placed before the reply). When
//! notifications are off that costs one relaxed atomic load. For each event, with `K` a
//! message `<event>` goes to `__keyspace@<db>__:<key>`, with `E` a message `<key>` to
//! `__keyevent@<db>__:<event>`.
//!
//! Events emitted (Redis's names and classes):
//! - strings ($): set (SET, SETNX, SETEX, PSETEX, MSET, MSETNX, GETSET, SET ... GET, GETEX
//!   doesn't set), setrange (SETRANGE), append (APPEND), incrby (INCR, INCRBY, DECR,
//!   DECRBY), incrbyfloat (INCRBYFLOAT); GETDEL: del; GETEX: expire / persist (g);
//!   SETBIT, BITFIELD (when it writes), BITOP: setbit / setbit / set or del.
//! - generic (g): del (DEL, UNLINK), rename_from / rename_to (RENAME, RENAMENX),
//!   move_from / move_to (MOVE; move_to in the target database), copy_to (COPY),
//!   expire (EXPIRE, PEXPIRE, EXPIREAT, PEXPIREAT, SET EX..., GETEX EX...), del from
//!   EXPIRE with a time in the past, persist (PERSIST), and SET with an expiry emits
//!   `set` then `expire`.
//! - expired (x): keys removed by lazy expiry (any command touching an expired key) and by
//!   the active expiry cycle, reported by the engine through its expired-key hook.
//! - evicted (e): keys evicted for maxmemory (`services::evict`).
//! - new (n): a key created, by any command (and DEBUG POPULATE), before the command's
//!   own event; RENAME and COPY ... REPLACE create their destination anew, as Redis's
//!   delete-then-add does. Reported by the engine through its created-key hook, which
//!   stores look up their key for only while this class is on.
//! - Not emitted: key-miss (m) and module (d).
//! - lists (l), sorted sets (z), hashes (h), sets (s), SORT STORE, HyperLogLog ($) and the
//!   blocking pops: the events of Redis 7.0's t_list.c, t_zset.c, t_hash.c, t_set.c, sort.c
//!   and hyperloglog.c, emitted from
//!   commands/{list,zset,hash,set,sort,hyperloglog,blocking}.
//! - streams (t): xadd, xtrim, xdel, xsetid and the xgroup-* events of Redis 7.0's
//!   t_stream.c, emitted from commands/stream/.

use crate::services::pubsub::Hub;
use crate::services::pubsub::Publisher;

pub const KEYSPACE: u32 = 1 << 0;
pub const KEYEVENT: u32 = 1 << 1;
pub const GENERIC: u32 = 1 << 2;
pub const STRING: u32 = 1 << 3;
pub const LIST: u32 = 1 << 4;
pub const SET: u32 = 1 << 5;
pub const HASH: u32 = 1 << 6;
pub const ZSET: u32 = 1 << 7;
pub const EXPIRED: u32 = 1 << 8;
pub const EVICTED: u32 = 1 << 9;
pub const STREAM: u32 = 1 << 10;
pub const KEY_MISS: u32 = 1 << 11;
pub const MODULE: u32 = 1 << 13;
pub const NEW: u32 = 1 << 14;
/// 'A': every class but key-miss and new.
pub const ALL: u32 =
    GENERIC | STRING | LIST | SET | HASH | ZSET | EXPIRED | EVICTED | STREAM | MODULE;

/// Parses the flag letters (Redis's keyspaceEventsStringToFlags).
pub fn parse_flags(s: &str) -> Option<u32> {
    let mut f = 0;
    for c in s.chars() {
        f |= match c {
            'A' => ALL,
            'g' => GENERIC,
            '$' => STRING,
            'l' => LIST,
            's' => SET,
            'h' => HASH,
            'z' => ZSET,
            'x' => EXPIRED,
            'e' => EVICTED,
            'K' => KEYSPACE,
            'E' => KEYEVENT,
            't' => STREAM,
            'm' => KEY_MISS,
            'd' => MODULE,
            'n' => NEW,
            _ => return None,
        };
    }
    Some(f)
}

/// Renders flags as CONFIG GET shows them (Redis's keyspaceEventsFlagsToString).
pub fn render_flags(f: u32) -> String {
    let mut s = String::new();
    if f & ALL == ALL {
        s.push('A');
    } else {
        for (bit, c) in [
            (GENERIC, 'g'),
            (STRING, '$'),
            (LIST, 'l'),
            (SET, 's'),
            (HASH, 'h'),
            (ZSET, 'z'),
            (EXPIRED, 'x'),
            (EVICTED, 'e'),
            (STREAM, 't'),
            (MODULE, 'd'),
            (NEW, 'n'),
        ] {
            if f & bit != 0 {
                s.push(c);
            }
        }
    }
    for (bit, c) in [(KEYSPACE, 'K'), (KEYEVENT, 'E'), (KEY_MISS, 'm')] {
        if f & bit != 0 {
            s.push(c);
        }
    }
    s
}

/// `notify-keyspace-events`' text as CONFIG GET shows it, or Redis's error.
pub fn normalize(_old: &str, new: &str) -> Result<String, String> {
    parse_flags(new)
        .map(render_flags)
        .ok_or_else(|| "Invalid event class character. Use 'Ag$lshzxeKEtmdn'.".to_string())
}

/// The flags the fast check reads: zero unless some class can actually publish (a class
/// without K or E publishes nothing, as in Redis).
pub fn effective(f: u32) -> u32 {
    if f & (KEYSPACE | KEYEVENT) == 0 {
        0
    } else {
        f
    }
}

/// Publishes one event. `flags` is the current setting; `me` the client whose command
/// caused it (None from the expiry cycle).
#[cold]
pub fn emit(
    hub: &Hub,
    flags: u32,
    event: &str,
    key: &[u8],
    db: usize,
    me: Option<&mut Publisher<'_>>,
) {
    if !hub.anyone() {
        return;
    }
    match me {
        Some(me) => publish(hub, flags, event, key, db, me),
        None => {
            let mut nobody = Vec::new();
            let mut me = Publisher {
                id: 0,
                self_push: &mut nobody,
                proto: strata_resp::Protocol::Resp2,
                clients_limit: None,
            };
            publish(hub, flags, event, key, db, &mut me)
        }
    }
}

fn publish(hub: &Hub, flags: u32, event: &str, key: &[u8], db: usize, me: &mut Publisher<'_>) {
    if flags & KEYSPACE != 0 {
        let mut chan = format!("__keyspace@{db}__:").into_bytes();
        chan.extend_from_slice(key);
        hub.publish(&chan, event.as_bytes(), me);
    }
    if flags & KEYEVENT != 0 {
        let chan = format!("__keyevent@{db}__:{event}");
        hub.publish(chan.as_bytes(), key, me);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flags_round_trip_as_redis() {
        let n = |s| normalize("", s).unwrap();
        assert_eq!(n("KEA"), "AKE");
        assert_eq!(n("Kgx$"), "g$xK");
        assert_eq!(n("KEn"), "nKE");
        assert_eq!(n("An"), "A");
        assert_eq!(n("Em"), "Em");
        assert_eq!(n("AmKd"), "AKm");
        assert_eq!(n(""), "");
        assert!(normalize("", "Kq").is_err());
        assert_eq!(effective(parse_flags("A").unwrap()), 0);
    }
}
