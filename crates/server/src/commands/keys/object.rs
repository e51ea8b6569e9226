//! OBJECT ENCODING REFCOUNT IDLETIME FREQ HELP: what Redis would say of a value's object.

use super::lock_notouch;
use crate::exec::command::{parse_i64, CmdError, CmdResult};
use crate::exec::ctx::Ctx;
use strata_engine::clock;

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

pub(super) fn object_help(ctx: &mut Ctx<'_>) -> CmdResult {
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

pub(super) fn object_encoding(ctx: &mut Ctx<'_>) -> CmdResult {
    if let Some(info) = object_lookup(ctx) {
        ctx.out.bulk(info.encoding.as_bytes());
    }
    Ok(())
}

/// REFCOUNT: Redis shares the integer objects 0..9999 (refcount INT_MAX) unless maxmemory
/// is set with an LRU/LFU policy; every other value has one reference.
pub(super) fn object_refcount(ctx: &mut Ctx<'_>) -> CmdResult {
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

pub(super) fn object_idletime(ctx: &mut Ctx<'_>) -> CmdResult {
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

/// FREQ: the key's LFU counter, decayed to now (under an LFU policy the access bits hold
/// it; see `strata_engine::access`).
pub(super) fn object_freq(ctx: &mut Ctx<'_>) -> CmdResult {
    let Some(info) = object_lookup(ctx) else {
        return Ok(());
    };
    if !lfu_policy(ctx) {
        return Err(CmdError::err("An LFU maxmemory policy is not selected, access frequency not tracked. Please note that when switching between policies at runtime LRU and LFU data will take some time to adjust."));
    }
    let decay = ctx.keyspace().access().decay_minutes();
    let counter = strata_engine::access::lfu_counter(info.lru, ctx.now_ms, decay);
    ctx.out.int(i64::from(counter));
    Ok(())
}
