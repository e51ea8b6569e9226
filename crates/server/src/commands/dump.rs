//! DUMP and RESTORE: a key's value as Redis's serialized payload (an RDB-encoded value,
//! the RDB version, a CRC64) and back, interchangeable with redis-server's, with Redis
//! 7.0's options, replies and errors (cluster.c). The payload codec is strata-rdb; the
//! bridge to the engine's values is `crate::rdb`. MIGRATE, which sends such payloads to
//! another server, is in `migrate.rs`.
//!
//! Payloads are always checked in full (Redis's `sanitize-dump-payload yes`): a malformed
//! one is refused before anything changes, never half restored.

use crate::exec::command::{flags, ks, CmdError, CmdResult, Command, KeySpec, Keys};
use crate::exec::ctx::Ctx;
use crate::rdb::{self, meta::loaded_stamp};
use crate::services::notify;
use bytes::Bytes;
use strata_rdb::KeyMeta;

const KEY1: Keys = Keys::Range {
    first: 1,
    last: 1,
    step: 1,
};

pub const COMMANDS: &[Command] = &[
    Command {
        name: "dump",
        arity: 2,
        flags: flags::READONLY,
        keys: KEY1,
        summary: "Return a serialized version of the value stored at the specified key.",
        since: "2.6.0",
        complexity: "O(1) to access the key and additional O(N*M) to serialize it, where N is the number of Redis objects composing the value and M their average size. For small string values the time complexity is thus O(1)+O(1*M) where M is small, so simply O(1).",
        args: "key#key",
        tips: &["nondeterministic_output"],
        handler: dump,
        ..Command::DEFAULT
    },
    Command {
        name: "restore",
        arity: -4,
        flags: flags::WRITE | flags::DENYOOM,
        keys: Keys::Specs(&[KeySpec::range(ks::OW | ks::UPDATE, 1, 0, 1)]),
        acl: &["@keyspace", "@dangerous"],
        summary: "Create a key using the provided serialized value, previously obtained using DUMP.",
        since: "2.6.0",
        complexity: "O(1) to create the new key and additional O(N*M) to reconstruct the serialized value, where N is the number of Redis objects composing the value and M their average size. For small string values the time complexity is thus O(1)+O(1*M) where M is small, so simply O(1). However for sorted set values the complexity is O(N*M*log(N)) because inserting values into sorted sets is O(log(N)).",
        args: "key#key ttl#int serialized-value [REPLACE] [ABSTTL] [IDLETIME:seconds#int] [FREQ:frequency#int]",
        handler: restore,
        ..Command::DEFAULT
    },
];

/// Redis's shared.busykeyerr.
pub const BUSY_KEY: CmdError = CmdError::Static("BUSYKEY Target key name already exists.");

/// DUMP key: the value is copied out under the lock and encoded after it is released.
fn dump(ctx: &mut Ctx<'_>) -> CmdResult {
    let key = ctx.arg(1);
    let mut l = ctx.lock1(key);
    let Some(value) = l.get(key).map(rdb::entry_to_rdb) else {
        drop(l);
        ctx.out.null();
        return Ok(());
    };
    drop(l);
    let payload = rdb::dump_payload(ctx.server(), &value);
    ctx.out.bulk(&payload);
    Ok(())
}

/// RESTORE's options after the payload.
#[derive(Default)]
struct Options {
    replace: bool,
    absttl: bool,
    /// IDLETIME and FREQ, as the file attributes of the same meaning.
    meta: KeyMeta,
}

fn options(ctx: &Ctx<'_>) -> Result<Options, CmdError> {
    let mut o = Options::default();
    let mut j = 4;
    while j < ctx.argv.len() {
        let more = ctx.argv.len() - j - 1;
        match ctx.lower(j).as_slice() {
            b"replace" => o.replace = true,
            b"absttl" => o.absttl = true,
            // IDLETIME and FREQ exclude each other: the second is a syntax error.
            b"idletime" if more >= 1 && o.meta.lfu_freq.is_none() => {
                let idle = ctx.int_arg(j + 1)?;
                let idle = u64::try_from(idle)
                    .map_err(|_| CmdError::err("Invalid IDLETIME value, must be >= 0"))?;
                o.meta.idle_secs = Some(idle);
                j += 1;
            }
            b"freq" if more >= 1 && o.meta.idle_secs.is_none() => {
                let freq = ctx.int_arg(j + 1)?;
                let freq = u8::try_from(freq)
                    .map_err(|_| CmdError::err("Invalid FREQ value, must be >= 0 and <= 255"))?;
                o.meta.lfu_freq = Some(freq);
                j += 1;
            }
            _ => return Err(CmdError::SYNTAX),
        }
        j += 1;
    }
    Ok(o)
}

/// RESTORE key ttl payload [REPLACE] [ABSTTL] [IDLETIME seconds] [FREQ frequency].
/// The payload is decoded and the value built before the key's shard is locked to store
/// it. A relative TTL is journaled as the absolute time it gave, with ABSTTL, as Redis
/// propagates it; a TTL already past stores nothing (and journals the DEL of a replaced
/// key, or nothing).
fn restore(ctx: &mut Ctx<'_>) -> CmdResult {
    let o = options(ctx)?;
    let key = ctx.arg(1);
    if !o.replace && ctx.lock1(key).contains(key) {
        return Err(BUSY_KEY);
    }
    let ttl = ctx.int_arg(2)?;
    if ttl < 0 {
        return Err(CmdError::err("Invalid TTL value, must be >= 0"));
    }
    let verify = rdb::verify(ctx.server());
    let value = strata_rdb::restore_with(ctx.arg(3), verify).map_err(|e| rdb::payload_error(&e))?;
    let ks = ctx.keyspace();
    let prepared =
        rdb::prepare(&value, &ks.encodings).map_err(|_| CmdError::Static("ERR Bad data format"))?;
    let now = ctx.now_ms;
    let expire_at = match (ttl as u64, o.absttl) {
        (0, _) => None,
        (t, true) => Some(t),
        (t, false) => Some(now.saturating_add(t)),
    };
    let mut l = ctx.lock1(key);
    let replaced = if o.replace {
        l.remove(key)
    } else if l.contains(key) {
        return Err(BUSY_KEY);
    } else {
        false
    };
    if expire_at.is_some_and(|at| at <= now) {
        drop(l);
        if replaced {
            ctx.rewrite1(vec![Bytes::from_static(b"DEL"), ctx.argv[1].clone()]);
            ctx.notify(notify::GENERIC, "del", key);
        } else {
            ctx.no_effect();
        }
        ctx.out.ok();
        return Ok(());
    }
    prepared.store(&mut l, key, expire_at);
    let lfu = ks.access().is_lfu();
    if let Some(stamp) = loaded_stamp(&o.meta, lfu, now) {
        l.set_lru(key, stamp);
    }
    drop(l);
    if let (Some(at), false) = (expire_at, o.absttl) {
        let mut argv = ctx.argv.to_vec();
        argv[2] = Bytes::from(at.to_string());
        argv.push(Bytes::from_static(b"ABSTTL"));
        ctx.rewrite1(argv);
    }
    ctx.signal_key_ready(key);
    ctx.notify(notify::GENERIC, "restore", key);
    ctx.out.ok();
    Ok(())
}
