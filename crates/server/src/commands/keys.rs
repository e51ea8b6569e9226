//! The generic keyspace commands: DEL UNLINK EXISTS TYPE RENAME RENAMENX COPY MOVE KEYS SCAN
//! RANDOMKEY TOUCH OBJECT, and expiry: EXPIRE PEXPIRE EXPIREAT PEXPIREAT EXPIRETIME
//! PEXPIRETIME TTL PTTL PERSIST. Semantics follow Redis 7.0's db.c, expire.c and object.c.
//!
//! Lookups mirror Redis's lookup flavours:
//! - `lookupKeyRead` (counts a keyspace hit/miss and touches the access time): `Locked::get`
//!   through `ctx.lock` (TOUCH, COPY's source);
//! - `lookupKeyReadWithFlags(LOOKUP_NOTOUCH)` (counts, does not touch): `Locked::get` through
//!   a guard with `no_touch(true)` (EXISTS, TYPE, TTL, OBJECT);
//! - `lookupKeyWrite` (no statistics): `contains` / `peek` / `take` / `remove`.

use super::scan;
use crate::exec::command::{flags, parse_i64, CmdError, CmdResult, Command, Keys};
use crate::exec::ctx::Ctx;
use crate::services::notify;
use bytes::Bytes;
use strata_engine::{clock, Kind, Locked, ScanFilter};

const ALL_KEYS: Keys = Keys::Range {
    first: 1,
    last: -1,
    step: 1,
};
const KEY1: Keys = Keys::Range {
    first: 1,
    last: 1,
    step: 1,
};
const KEYS_1_2: Keys = Keys::Range {
    first: 1,
    last: 2,
    step: 1,
};
const KEY2: Keys = Keys::Range {
    first: 2,
    last: 2,
    step: 1,
};

pub const COMMANDS: &[Command] = &[
    Command {
    name: "del",
    arity: -2,
    flags: flags::WRITE,
    keys: ALL_KEYS,
    summary: "Delete a key",
    since: "1.0.0",
    complexity: "O(N) where N is the number of keys that will be removed. When a key to remove holds a value other than a string, the individual complexity for this key is O(M) where M is the number of elements in the list, set, sorted set or hash. Removing a single key that holds a string value is O(1).",
    handler: del,
    ..Command::DEFAULT
},
    Command {
    name: "unlink",
    arity: -2,
    flags: flags::WRITE | flags::FAST,
    keys: ALL_KEYS,
    summary: "Delete a key asynchronously in another thread. Otherwise it is just as DEL, but non blocking.",
    since: "4.0.0",
    complexity: "O(1) for each key removed regardless of its size. Then the command does O(N) work in a different thread in order to reclaim memory, where N is the number of allocations the deleted objects where composed of.",
    handler: unlink,
    ..Command::DEFAULT
},
    Command {
    name: "exists",
    arity: -2,
    flags: flags::READONLY | flags::FAST,
    keys: ALL_KEYS,
    summary: "Determine if a key exists",
    since: "1.0.0",
    complexity: "O(N) where N is the number of keys to check.",
    handler: exists,
    ..Command::DEFAULT
},
    Command {
    name: "type",
    arity: 2,
    flags: flags::READONLY | flags::FAST,
    keys: KEY1,
    summary: "Determine the type stored at key",
    since: "1.0.0",
    complexity: "O(1)",
    handler: type_,
    ..Command::DEFAULT
},
    Command {
    name: "rename",
    arity: 3,
    flags: flags::WRITE,
    keys: KEYS_1_2,
    summary: "Rename a key",
    since: "1.0.0",
    complexity: "O(1)",
    handler: rename,
    ..Command::DEFAULT
},
    Command {
    name: "renamenx",
    arity: 3,
    flags: flags::WRITE | flags::FAST,
    keys: KEYS_1_2,
    summary: "Rename a key, only if the new key does not exist",
    since: "1.0.0",
    complexity: "O(1)",
    handler: renamenx,
    ..Command::DEFAULT
},
    Command {
    name: "copy",
    arity: -3,
    flags: flags::WRITE | flags::DENYOOM | flags::ALL_SHARDS,
    keys: KEYS_1_2,
    summary: "Copy a key",
    since: "6.2.0",
    complexity: "O(N) worst case for collections, where N is the number of nested items. O(1) for string values.",
    handler: copy,
    ..Command::DEFAULT
},
    Command {
    name: "move",
    arity: 3,
    flags: flags::WRITE | flags::FAST | flags::ALL_SHARDS,
    keys: KEY1,
    summary: "Move a key to another database",
    since: "1.0.0",
    complexity: "O(1)",
    handler: move_,
    ..Command::DEFAULT
},
    Command {
    name: "keys",
    arity: 2,
    flags: flags::READONLY | flags::ALL_SHARDS,
    summary: "Find all keys matching the given pattern",
    since: "1.0.0",
    complexity: "O(N) with N being the number of keys in the database, under the assumption that the key names in the database and the given pattern have limited length.",
    handler: keys,
    ..Command::DEFAULT
},
    Command {
    name: "scan",
    arity: -2,
    flags: flags::READONLY | flags::ALL_SHARDS,
    summary: "Incrementally iterate the keys space",
    since: "2.8.0",
    complexity: "O(1) for every call. O(N) for a complete iteration, including enough command calls for the cursor to return back to 0. N is the number of elements inside the collection.",
    handler: scan,
    ..Command::DEFAULT
},
    Command {
    name: "randomkey",
    arity: 1,
    flags: flags::READONLY | flags::ALL_SHARDS,
    summary: "Return a random key from the keyspace",
    since: "1.0.0",
    complexity: "O(1)",
    handler: randomkey,
    ..Command::DEFAULT
},
    Command {
    name: "touch",
    arity: -2,
    flags: flags::READONLY | flags::FAST,
    keys: ALL_KEYS,
    summary: "Alters the last access time of a key(s). Returns the number of existing keys specified.",
    since: "3.2.1",
    complexity: "O(N) where N is the number of keys that will be touched.",
    handler: touch,
    ..Command::DEFAULT
},
    Command {
    name: "object",
    arity: -2,
    flags: 0,
    summary: "A container for object introspection commands",
    since: "2.2.3",
    complexity: "Depends on subcommand.",
    handler: super::container,
    subcommands: OBJECT_SUBCOMMANDS,
    ..Command::DEFAULT
},
    Command {
    name: "expire",
    arity: -3,
    flags: flags::WRITE | flags::FAST,
    keys: KEY1,
    summary: "Set a key's time to live in seconds",
    since: "1.0.0",
    complexity: "O(1)",
    handler: expire,
    ..Command::DEFAULT
},
    Command {
    name: "pexpire",
    arity: -3,
    flags: flags::WRITE | flags::FAST,
    keys: KEY1,
    summary: "Set a key's time to live in milliseconds",
    since: "2.6.0",
    complexity: "O(1)",
    handler: pexpire,
    ..Command::DEFAULT
},
    Command {
    name: "expireat",
    arity: -3,
    flags: flags::WRITE | flags::FAST,
    keys: KEY1,
    summary: "Set the expiration for a key as a UNIX timestamp",
    since: "1.2.0",
    complexity: "O(1)",
    handler: expireat,
    ..Command::DEFAULT
},
    Command {
    name: "pexpireat",
    arity: -3,
    flags: flags::WRITE | flags::FAST,
    keys: KEY1,
    summary: "Set the expiration for a key as a UNIX timestamp specified in milliseconds",
    since: "2.6.0",
    complexity: "O(1)",
    handler: pexpireat,
    ..Command::DEFAULT
},
    Command {
    name: "expiretime",
    arity: 2,
    flags: flags::READONLY | flags::FAST,
    keys: KEY1,
    summary: "Get the expiration Unix timestamp for a key",
    since: "7.0.0",
    complexity: "O(1)",
    handler: expiretime,
    ..Command::DEFAULT
},
    Command {
    name: "pexpiretime",
    arity: 2,
    flags: flags::READONLY | flags::FAST,
    keys: KEY1,
    summary: "Get the expiration Unix timestamp for a key in milliseconds",
    since: "7.0.0",
    complexity: "O(1)",
    handler: pexpiretime,
    ..Command::DEFAULT
},
    Command {
    name: "ttl",
    arity: 2,
    flags: flags::READONLY | flags::FAST,
    keys: KEY1,
    summary: "Get the time to live for a key in seconds",
    since: "1.0.0",
    complexity: "O(1)",
    handler: ttl,
    ..Command::DEFAULT
},
    Command {
    name: "pttl",
    arity: 2,
    flags: flags::READONLY | flags::FAST,
    keys: KEY1,
    summary: "Get the time to live for a key in milliseconds",
    since: "2.6.0",
    complexity: "O(1)",
    handler: pttl,
    ..Command::DEFAULT
},
    Command {
    name: "persist",
    arity: 2,
    flags: flags::WRITE | flags::FAST,
    keys: KEY1,
    summary: "Remove the expiration from a key",
    since: "2.2.0",
    complexity: "O(1)",
    handler: persist,
    ..Command::DEFAULT
},
];

const OBJECT_SUBCOMMANDS: &[Command] = &[
    Command {
        name: "encoding",
        arity: 3,
        flags: flags::READONLY,
        keys: KEY2,
        summary: "Inspect the internal encoding of a Redis object",
        since: "2.2.3",
        complexity: "O(1)",
        handler: object_encoding,
        ..Command::DEFAULT
    },
    Command {
        name: "freq",
        arity: 3,
        flags: flags::READONLY,
        keys: KEY2,
        summary: "Get the logarithmic access frequency counter of a Redis object",
        since: "4.0.0",
        complexity: "O(1)",
        handler: object_freq,
        ..Command::DEFAULT
    },
    Command {
        name: "help",
        arity: 2,
        flags: flags::LOADING | flags::STALE,
        summary: "Show helpful text about the different subcommands",
        since: "6.2.0",
        complexity: "O(1)",
        handler: object_help,
        ..Command::DEFAULT
    },
    Command {
        name: "idletime",
        arity: 3,
        flags: flags::READONLY,
        keys: KEY2,
        summary: "Get the time since a Redis object was last accessed",
        since: "2.2.3",
        complexity: "O(1)",
        handler: object_idletime,
        ..Command::DEFAULT
    },
    Command {
        name: "refcount",
        arity: 3,
        flags: flags::READONLY,
        keys: KEY2,
        summary: "Get the number of references to the value of the key",
        since: "2.2.3",
        complexity: "O(1)",
        handler: object_refcount,
        ..Command::DEFAULT
    },
];

/// Redis's shared.sameobjecterr.
const SAME_OBJECT: CmdError = CmdError::Static("ERR source and destination objects are the same");

/// A lock on `keys` whose reads count keyspace hits/misses but never update access times
/// (Redis's LOOKUP_NOTOUCH).
fn lock_notouch<'a, K: AsRef<[u8]>>(ctx: &Ctx<'a>, keys: &[K]) -> Locked<'a> {
    ctx.db().lock(keys).no_touch(true)
}

fn now_i64(l: &Locked<'_>) -> i64 {
    i64::try_from(l.now()).unwrap_or(i64::MAX)
}

fn to_i64(at: u64) -> i64 {
    i64::try_from(at).unwrap_or(i64::MAX)
}

// ---------------------------------------------------------------------------------------
// DEL UNLINK EXISTS TYPE TOUCH

/// DEL and UNLINK: the number of keys removed (a key named twice counts once).
fn del(ctx: &mut Ctx<'_>) -> CmdResult {
    let keys = &ctx.argv[1..];
    let mut l = ctx.lock(keys);
    if !ctx.notifying(notify::GENERIC) {
        let removed = keys.iter().filter(|k| l.remove(k)).count();
        drop(l);
        ctx.out.int(removed as i64);
        return Ok(());
    }
    let gone: Vec<bool> = keys.iter().map(|k| l.remove(k)).collect();
    drop(l);
    let removed = notify_deleted(ctx, keys, gone.into_iter());
    ctx.out.int(removed as i64);
    Ok(())
}

/// UNLINK: DEL, with each value freed after the shards are unlocked, and on the lazyfree
/// thread when freeing it takes more than LAZYFREE_THRESHOLD allocations (as Redis).
fn unlink(ctx: &mut Ctx<'_>) -> CmdResult {
    let keys = &ctx.argv[1..];
    let mut l = ctx.lock(keys);
    let gone: Vec<Option<strata_engine::Unlinked>> = keys.iter().map(|k| l.unlink(k)).collect();
    drop(l);
    let removed = notify_deleted(ctx, keys, gone.iter().map(Option::is_some));
    let large: Vec<_> = gone
        .into_iter()
        .flatten()
        .filter(|u| u.free_effort() > crate::services::lazyfree::LAZYFREE_THRESHOLD)
        .collect();
    if !large.is_empty() {
        crate::services::lazyfree::free_later(large);
    }
    ctx.out.int(removed as i64);
    Ok(())
}

/// Publishes `del` for each of `keys` that `gone` says was deleted (when anyone listens or
/// watches); returns how many were.
fn notify_deleted(ctx: &mut Ctx<'_>, keys: &[Bytes], gone: impl Iterator<Item = bool>) -> usize {
    let notifying = ctx.notifying(notify::GENERIC);
    let mut removed = 0;
    for (k, g) in keys.iter().zip(gone) {
        if g {
            removed += 1;
            if notifying {
                ctx.notify(notify::GENERIC, "del", k);
            }
        }
    }
    removed
}

/// EXISTS: the number of arguments naming a live key (repeats count each time).
fn exists(ctx: &mut Ctx<'_>) -> CmdResult {
    let keys = &ctx.argv[1..];
    let mut l = lock_notouch(ctx, keys);
    let n = keys.iter().filter(|k| l.get(k).is_some()).count();
    drop(l);
    ctx.out.int(n as i64);
    Ok(())
}

fn type_(ctx: &mut Ctx<'_>) -> CmdResult {
    let key = ctx.arg(1);
    let mut l = lock_notouch(ctx, &[key]);
    let name = l.get(key).map_or("none", |e| e.kind().name());
    drop(l);
    ctx.out.simple(name);
    Ok(())
}

/// TOUCH: reads each key as GET would, updating its access time. Like Redis 7.2, CLIENT
/// NO-TOUCH does not stop TOUCH itself.
fn touch(ctx: &mut Ctx<'_>) -> CmdResult {
    let keys = &ctx.argv[1..];
    let mut l = ctx.db().lock(keys);
    let n = keys.iter().filter(|k| l.get(k).is_some()).count();
    drop(l);
    ctx.out.int(n as i64);
    Ok(())
}

// ---------------------------------------------------------------------------------------
// RENAME RENAMENX COPY MOVE

fn rename(ctx: &mut Ctx<'_>) -> CmdResult {
    rename_generic(ctx, false)
}

fn renamenx(ctx: &mut Ctx<'_>) -> CmdResult {
    rename_generic(ctx, true)
}

fn rename_generic(ctx: &mut Ctx<'_>, nx: bool) -> CmdResult {
    let (src, dst) = (ctx.arg(1), ctx.arg(2));
    let mut l = ctx.lock(&[src, dst]);
    if !l.contains(src) {
        return Err(CmdError::NO_SUCH_KEY);
    }
    // Same name: nothing to do, but a missing key was still an error above.
    let done = if src == dst {
        !nx
    } else if nx && l.contains(dst) {
        false
    } else {
        let Some(owned) = l.take(src) else {
            return Err(CmdError::NO_SUCH_KEY);
        };
        // The value keeps its expiry; whatever `dst` held is replaced.
        l.put_owned(dst, owned);
        true
    };
    drop(l);
    if done && src != dst {
        ctx.signal_key_ready(dst);
        ctx.notify(notify::GENERIC, "rename_from", src);
        ctx.notify(notify::GENERIC, "rename_to", dst);
    }
    if nx {
        ctx.out.int(done as i64);
    } else {
        ctx.out.ok();
    }
    Ok(())
}

/// A database index argument as Redis's getIntFromObjectOrReply + selectDb check it.
fn db_index_arg(ctx: &Ctx<'_>, i: usize) -> Result<usize, CmdError> {
    let n = ctx.int_arg(i)?;
    if n < i32::MIN as i64 || n > i32::MAX as i64 {
        return Err(CmdError::err(format_args!(
            "value is out of range, value must between {} and {}",
            i32::MIN,
            i32::MAX
        )));
    }
    match usize::try_from(n) {
        Ok(db) if db < ctx.keyspace().db_count() => Ok(db),
        _ => Err(CmdError::DB_RANGE),
    }
}

/// COPY source destination [DB destination-db] [REPLACE]
fn copy(ctx: &mut Ctx<'_>) -> CmdResult {
    let src_db = ctx.client.db;
    let mut dst_db = src_db;
    let mut replace = false;
    let mut j = 3;
    while j < ctx.argv.len() {
        let more = ctx.argv.len() - j - 1;
        let opt = ctx.lower(j);
        if opt == b"replace" {
            replace = true;
        } else if opt == b"db" && more >= 1 {
            dst_db = db_index_arg(ctx, j + 1)?;
            j += 1;
        } else {
            return Err(CmdError::SYNTAX);
        }
        j += 1;
    }
    let (key, newkey) = (ctx.arg(1), ctx.arg(2));
    if src_db == dst_db && key == newkey {
        return Err(SAME_OBJECT);
    }
    let no_touch = ctx.client.no_touch;
    let copied = if src_db == dst_db {
        let mut l = ctx.lock(&[key, newkey]);
        copy_between(&mut l, key, None, newkey, replace)
    } else {
        let (ls, ld) = ctx.keyspace().lock_pair(src_db, key, dst_db, newkey);
        let (mut ls, mut ld) = (ls.no_touch(no_touch), ld.no_touch(no_touch));
        copy_between(&mut ls, key, Some(&mut ld), newkey, replace)
    };
    if copied {
        ctx.signal_key_ready_db(newkey, dst_db);
        ctx.notify_db(notify::GENERIC, "copy_to", newkey, dst_db);
    }
    ctx.out.int(copied as i64);
    Ok(())
}

/// Copies `key` from `src` to `newkey` in `dst` (or in `src` itself when `dst` is None).
fn copy_between<'a>(
    src: &mut Locked<'a>,
    key: &[u8],
    dst: Option<&mut Locked<'a>>,
    newkey: &[u8],
    replace: bool,
) -> bool {
    // lookupKeyRead: the source read counts as an access.
    if src.get(key).is_none() {
        return false;
    }
    let Some(owned) = src.clone_owned(key) else {
        return false;
    };
    let dst = match dst {
        Some(d) => d,
        None => src,
    };
    if dst.contains(newkey) && !replace {
        return false;
    }
    dst.put_owned(newkey, owned);
    true
}

/// MOVE key db
fn move_(ctx: &mut Ctx<'_>) -> CmdResult {
    let src_db = ctx.client.db;
    let dst_db = db_index_arg(ctx, 2)?;
    if src_db == dst_db {
        return Err(SAME_OBJECT);
    }
    let key = ctx.arg(1);
    let (mut ls, mut ld) = ctx.keyspace().lock_pair(src_db, key, dst_db, key);
    let moved = if !ls.contains(key) || ld.contains(key) {
        false
    } else if let Some(owned) = ls.take(key) {
        ld.put_owned(key, owned);
        true
    } else {
        false
    };
    drop((ls, ld));
    if moved {
        ctx.signal_key_ready_db(key, dst_db);
        ctx.notify_db(notify::GENERIC, "move_from", key, src_db);
        ctx.notify_db(notify::GENERIC, "move_to", key, dst_db);
    }
    ctx.out.int(moved as i64);
    Ok(())
}

// ---------------------------------------------------------------------------------------
// KEYS SCAN RANDOMKEY

fn keys(ctx: &mut Ctx<'_>) -> CmdResult {
    let found = ctx.db().keys(ctx.arg(1));
    ctx.out.array(found.len());
    for k in &found {
        ctx.out.bulk(k);
    }
    Ok(())
}

/// SCAN cursor [MATCH pattern] [COUNT count] [TYPE type]. The cursor is a shard index (see
/// `Db::scan`): every key present for the whole iteration is returned, and a call may
/// return more than COUNT keys, as Redis's may.
fn scan(ctx: &mut Ctx<'_>) -> CmdResult {
    let cursor = scan::parse_cursor(ctx.arg(1))?;
    let opts = scan::ScanOptions::parse(ctx, 2, true)?;
    let (pattern, type_name, count) = (opts.pattern, opts.type_name, opts.count);
    let kind = type_name.map(Kind::parse);
    let filter = ScanFilter {
        pattern,
        kind: kind.flatten(),
    };
    let (next, mut found) = ctx.db().scan(cursor, count, filter);
    // An unknown type name matches no key (Redis 7.0 does not reject it).
    if matches!(kind, Some(None)) {
        found.clear();
    }
    ctx.out.array(2);
    ctx.out.bulk(next.to_string().as_bytes());
    ctx.out.array(found.len());
    for k in &found {
        ctx.out.bulk(k);
    }
    Ok(())
}

fn randomkey(ctx: &mut Ctx<'_>) -> CmdResult {
    let seed = ctx.keyspace().random();
    match ctx.db().random_key(seed) {
        Some(k) => ctx.out.bulk(&k),
        None => ctx.out.null(),
    }
    Ok(())
}

// ---------------------------------------------------------------------------------------
// OBJECT

const OBJECT_HELP: &[&str] = &[
    "OBJECT <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
    "ENCODING <key>",
    "    Return the kind of internal representation used in order to store the value",
    "    associated with a <key>.",
    "FREQ <key>",
    "    Return the access frequency index of the <key>. The returned integer is",
    "    proportional to the logarithm of the recent access frequency of the key.",
    "IDLETIME <key>",
    "    Return the idle time of the <key>, that is the approximated number of",
    "    seconds elapsed since the last access to the key.",
    "REFCOUNT <key>",
    "    Return the number of references of the value associated with the specified",
    "    <key>.",
    "HELP",
    "    Prints this help.",
];

fn object_help(ctx: &mut Ctx<'_>) -> CmdResult {
    ctx.out.array(OBJECT_HELP.len());
    for line in OBJECT_HELP {
        ctx.out.simple(line);
    }
    Ok(())
}

/// Redis's OBJ_SHARED_REFCOUNT, reported for the shared integers 0..9999.
const SHARED_REFCOUNT: i64 = i32::MAX as i64;
/// Redis's OBJ_SHARED_INTEGERS.
const SHARED_INTEGERS: i64 = 10_000;
/// Redis's LFU_INIT_VAL: the counter of a new key.
const LFU_INIT_VAL: u64 = 5;

fn lfu_policy(ctx: &Ctx<'_>) -> bool {
    ctx.config().get().maxmemory_policy.is_lfu()
}

/// What an OBJECT subcommand needs of an entry, read under the lock.
struct ObjInfo {
    encoding: &'static str,
    small_int: bool,
    lru: u32,
}

/// objectCommandLookup: counts a hit or miss, touches nothing. None replies a null.
fn object_lookup(ctx: &mut Ctx<'_>) -> Option<ObjInfo> {
    let key = ctx.arg(2);
    let mut l = lock_notouch(ctx, &[key]);
    let info = l.get(key).map(|e| {
        let encoding = e.encoding();
        let small_int = encoding == "int"
            && e.as_str()
                .and_then(parse_i64)
                .is_some_and(|n| (0..SHARED_INTEGERS).contains(&n));
        ObjInfo {
            encoding,
            small_int,
            lru: e.lru(),
        }
    });
    drop(l);
    if info.is_none() {
        ctx.out.null();
    }
    info
}

fn object_encoding(ctx: &mut Ctx<'_>) -> CmdResult {
    if let Some(info) = object_lookup(ctx) {
        ctx.out.bulk(info.encoding.as_bytes());
    }
    Ok(())
}

/// REFCOUNT: Redis shares the integer objects 0..9999 (refcount INT_MAX) unless maxmemory
/// is set with an LRU/LFU policy; every other value has one reference.
fn object_refcount(ctx: &mut Ctx<'_>) -> CmdResult {
    let Some(info) = object_lookup(ctx) else {
        return Ok(());
    };
    let config = ctx.config().get();
    let no_shared = config.maxmemory != 0 && config.maxmemory_policy.is_lru_or_lfu();
    ctx.out.int(if info.small_int && !no_shared {
        SHARED_REFCOUNT
    } else {
        1
    });
    Ok(())
}

fn object_idletime(ctx: &mut Ctx<'_>) -> CmdResult {
    let Some(info) = object_lookup(ctx) else {
        return Ok(());
    };
    if lfu_policy(ctx) {
        return Err(CmdError::err("An LFU maxmemory policy is selected, idle time not tracked. Please note that when switching between policies at runtime LRU and LFU data will take some time to adjust."));
    }
    let idle = clock::idle_ms(info.lru, ctx.now_ms) / 1000;
    ctx.out.int(i64::try_from(idle).unwrap_or(i64::MAX));
    Ok(())
}

/// FREQ. The engine keeps an access clock but no LFU counter, so this reports Redis's
/// initial counter (LFU_INIT_VAL) decayed by the time since the last access, as
/// LFUDecrAndReturn would for a key never read more than once.
fn object_freq(ctx: &mut Ctx<'_>) -> CmdResult {
    let Some(info) = object_lookup(ctx) else {
        return Ok(());
    };
    if !lfu_policy(ctx) {
        return Err(CmdError::err("An LFU maxmemory policy is not selected, access frequency not tracked. Please note that when switching between policies at runtime LRU and LFU data will take some time to adjust."));
    }
    let decay = ctx.config().get().lfu_decay_time;
    let idle_min = clock::idle_ms(info.lru, ctx.now_ms) / 60_000;
    let periods = idle_min.checked_div(decay).unwrap_or(0);
    ctx.out.int(LFU_INIT_VAL.saturating_sub(periods) as i64);
    Ok(())
}

// ---------------------------------------------------------------------------------------
// EXPIRE PEXPIRE EXPIREAT PEXPIREAT PERSIST

const EXPIRE_NX: u8 = 1;
const EXPIRE_XX: u8 = 2;
const EXPIRE_GT: u8 = 4;
const EXPIRE_LT: u8 = 8;

fn expire(ctx: &mut Ctx<'_>) -> CmdResult {
    expire_generic(ctx, true, true)
}

fn pexpire(ctx: &mut Ctx<'_>) -> CmdResult {
    expire_generic(ctx, true, false)
}

fn expireat(ctx: &mut Ctx<'_>) -> CmdResult {
    expire_generic(ctx, false, true)
}

fn pexpireat(ctx: &mut Ctx<'_>) -> CmdResult {
    expire_generic(ctx, false, false)
}

/// Redis's parseExtendedExpireArgumentsOrReply.
fn expire_flags(ctx: &Ctx<'_>) -> Result<u8, CmdError> {
    let mut f = 0;
    for j in 3..ctx.argv.len() {
        f |= match ctx.lower(j).as_slice() {
            b"nx" => EXPIRE_NX,
            b"xx" => EXPIRE_XX,
            b"gt" => EXPIRE_GT,
            b"lt" => EXPIRE_LT,
            _ => {
                return Err(CmdError::err(format_args!(
                    "Unsupported option {}",
                    String::from_utf8_lossy(ctx.arg(j))
                )))
            }
        };
    }
    if f & EXPIRE_NX != 0 && f & (EXPIRE_XX | EXPIRE_GT | EXPIRE_LT) != 0 {
        return Err(CmdError::err(
            "NX and XX, GT or LT options at the same time are not compatible",
        ));
    }
    if f & EXPIRE_GT != 0 && f & EXPIRE_LT != 0 {
        return Err(CmdError::err(
            "GT and LT options at the same time are not compatible",
        ));
    }
    Ok(f)
}

/// expireGenericCommand: `relative` adds the command's time, `seconds` scales by 1000.
fn expire_generic(ctx: &mut Ctx<'_>, relative: bool, seconds: bool) -> CmdResult {
    let flags = expire_flags(ctx)?;
    let when = ctx.int_arg(2)?;
    let key = ctx.arg(1);
    let mut l = ctx.lock1(key);
    let basetime = if relative { now_i64(&l) } else { 0 };
    let when = if seconds {
        when.checked_mul(1000)
    } else {
        Some(when)
    }
    .and_then(|w| w.checked_add(basetime));
    let Some(when) = when else {
        return Err(CmdError::err(format_args!(
            "invalid expire time in '{}' command",
            String::from_utf8_lossy(&ctx.argv[0]).to_ascii_lowercase()
        )));
    };
    ctx.no_effect();
    let Some(current) = l.expire_at(key) else {
        drop(l);
        ctx.out.int(0);
        return Ok(());
    };
    // -1: no expiry, which GT treats as infinite and LT as "any expiry is less".
    let current = current.map_or(-1, to_i64);
    let refused = (flags & EXPIRE_NX != 0 && current != -1)
        || (flags & EXPIRE_XX != 0 && current == -1)
        || (flags & EXPIRE_GT != 0 && (when <= current || current == -1))
        || (flags & EXPIRE_LT != 0 && current != -1 && when >= current);
    if refused {
        drop(l);
        ctx.out.int(0);
        return Ok(());
    }
    let event = if when <= now_i64(&l) {
        // A time already past deletes the key (as Redis, which propagates a DEL).
        l.remove(key);
        ctx.rewrite1(crate::exec::effects::cmd(&[b"DEL", key]));
        "del"
    } else {
        // when > now >= 0, so the conversion cannot fail.
        l.set_expire(key, u64::try_from(when).ok());
        let at = when.to_string();
        ctx.rewrite1(crate::exec::effects::cmd(&[
            b"PEXPIREAT",
            key,
            at.as_bytes(),
        ]));
        "expire"
    };
    drop(l);
    ctx.notify(notify::GENERIC, event, key);
    ctx.out.int(1);
    Ok(())
}

fn persist(ctx: &mut Ctx<'_>) -> CmdResult {
    let key = ctx.arg(1);
    let mut l = ctx.lock1(key);
    let cleared = matches!(l.expire_at(key), Some(Some(_))) && l.set_expire(key, None);
    drop(l);
    if cleared {
        ctx.notify(notify::GENERIC, "persist", key);
    }
    ctx.out.int(cleared as i64);
    Ok(())
}

// ---------------------------------------------------------------------------------------
// TTL PTTL EXPIRETIME PEXPIRETIME

fn ttl(ctx: &mut Ctx<'_>) -> CmdResult {
    ttl_generic(ctx, false, false)
}

fn pttl(ctx: &mut Ctx<'_>) -> CmdResult {
    ttl_generic(ctx, true, false)
}

fn expiretime(ctx: &mut Ctx<'_>) -> CmdResult {
    ttl_generic(ctx, false, true)
}

fn pexpiretime(ctx: &mut Ctx<'_>) -> CmdResult {
    ttl_generic(ctx, true, true)
}

/// ttlGenericCommand: -2 for no key, -1 for no expiry, else the remaining time (or the
/// absolute time), seconds rounded to the nearest.
fn ttl_generic(ctx: &mut Ctx<'_>, ms: bool, absolute: bool) -> CmdResult {
    let key = ctx.arg(1);
    let mut l = lock_notouch(ctx, &[key]);
    let now = now_i64(&l);
    let found = l.get(key).map(|e| e.expire_at());
    drop(l);
    let reply = match found {
        None => -2,
        Some(None) => -1,
        Some(Some(at)) => {
            let at = to_i64(at);
            let t = if absolute {
                at
            } else {
                at.saturating_sub(now).max(0)
            };
            if ms {
                t
            } else {
                // Redis computes (t + 500) / 1000 in a way that does not overflow near
                // i64::MAX; i128 does the same.
                ((i128::from(t) + 500) / 1000) as i64
            }
        }
    };
    ctx.out.int(reply);
    Ok(())
}
