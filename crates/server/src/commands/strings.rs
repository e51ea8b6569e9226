//! The string commands: GET SET SETNX SETEX PSETEX MGET MSET MSETNX GETSET GETDEL GETEX
//! APPEND STRLEN INCR DECR INCRBY DECRBY INCRBYFLOAT GETRANGE SUBSTR SETRANGE LCS.
//! Semantics, argument checks and error texts follow Redis 7.0's t_string.c. The bit
//! commands (SETBIT, BITCOUNT, BITFIELD...) live in `bitmap.rs`.
//!
//! Lookups mirror Redis's flavours: `lookupKeyRead` (counts a hit or miss, touches the
//! access time) is `Locked::get`; `lookupKeyWrite` (no statistics) is `peek`/`contains`.

use crate::exec::command::{flags, parse_i64, CmdError, CmdResult, Command, Keys};
use crate::exec::ctx::Ctx;
use crate::num::longdouble;
use crate::services::notify;
use bytes::Bytes;
use std::cell::Cell;
use strata_engine::{Locked, Ttl};

const KEY1: Keys = Keys::Range {
    first: 1,
    last: 1,
    step: 1,
};

const GETRANGE_COMPLEXITY: &str = "O(N) where N is the length of the returned string. The complexity is ultimately determined by the returned length, but because creating a substring from an existing string is very cheap, it can be considered O(1) for small strings.";

pub const COMMANDS: &[Command] = &[
    Command {
    name: "get",
    arity: 2,
    flags: flags::READONLY | flags::FAST,
    keys: KEY1,
    group: "string",
    summary: "Get the value of a key",
    since: "1.0.0",
    handler: get,
    ..Command::DEFAULT
},
    Command {
    name: "set",
    arity: -3,
    flags: flags::WRITE | flags::DENYOOM,
    keys: KEY1,
    group: "string",
    summary: "Set the string value of a key",
    since: "1.0.0",
    handler: set,
    ..Command::DEFAULT
},
    Command {
    name: "setnx",
    arity: 3,
    flags: flags::WRITE | flags::DENYOOM | flags::FAST,
    keys: KEY1,
    group: "string",
    summary: "Set the value of a key, only if the key does not exist",
    since: "1.0.0",
    handler: setnx,
    ..Command::DEFAULT
},
    Command {
    name: "setex",
    arity: 4,
    flags: flags::WRITE | flags::DENYOOM,
    keys: KEY1,
    group: "string",
    summary: "Set the value and expiration of a key",
    since: "2.0.0",
    handler: setex,
    ..Command::DEFAULT
},
    Command {
    name: "psetex",
    arity: 4,
    flags: flags::WRITE | flags::DENYOOM,
    keys: KEY1,
    group: "string",
    summary: "Set the value and expiration in milliseconds of a key",
    since: "2.6.0",
    handler: psetex,
    ..Command::DEFAULT
},
    Command {
    name: "mget",
    arity: -2,
    flags: flags::READONLY | flags::FAST,
    keys: Keys::Range {
            first: 1,
            last: -1,
            step: 1,
        },
    group: "string",
    summary: "Get the values of all the given keys",
    since: "1.0.0",
    complexity: "O(N) where N is the number of keys to retrieve.",
    handler: mget,
    ..Command::DEFAULT
},
    Command {
    name: "mset",
    arity: -3,
    flags: flags::WRITE | flags::DENYOOM,
    keys: Keys::Range {
            first: 1,
            last: -1,
            step: 2,
        },
    group: "string",
    summary: "Set multiple keys to multiple values",
    since: "1.0.1",
    complexity: "O(N) where N is the number of keys to set.",
    handler: mset,
    ..Command::DEFAULT
},
    Command {
    name: "msetnx",
    arity: -3,
    flags: flags::WRITE | flags::DENYOOM,
    keys: Keys::Range {
            first: 1,
            last: -1,
            step: 2,
        },
    group: "string",
    summary: "Set multiple keys to multiple values, only if none of the keys exist",
    since: "1.0.1",
    complexity: "O(N) where N is the number of keys to set.",
    handler: msetnx,
    ..Command::DEFAULT
},
    Command {
    name: "getset",
    arity: 3,
    flags: flags::WRITE | flags::DENYOOM | flags::FAST,
    keys: KEY1,
    group: "string",
    summary: "Set the string value of a key and return its old value",
    since: "1.0.0",
    handler: getset,
    ..Command::DEFAULT
},
    Command {
    name: "getdel",
    arity: 2,
    flags: flags::WRITE | flags::FAST,
    keys: KEY1,
    group: "string",
    summary: "Get the value of a key and delete the key",
    since: "6.2.0",
    handler: getdel,
    ..Command::DEFAULT
},
    Command {
    name: "getex",
    arity: -2,
    flags: flags::WRITE | flags::FAST,
    keys: KEY1,
    group: "string",
    summary: "Get the value of a key and optionally set its expiration",
    since: "6.2.0",
    handler: getex,
    ..Command::DEFAULT
},
    Command {
    name: "append",
    arity: 3,
    flags: flags::WRITE | flags::DENYOOM | flags::FAST,
    keys: KEY1,
    group: "string",
    summary: "Append a value to a key",
    since: "2.0.0",
    complexity: "O(1). The amortized time complexity is O(1) assuming the appended value is small and the already present value is of any size, since the dynamic string library used by Redis will double the free space available on every reallocation.",
    handler: append,
    ..Command::DEFAULT
},
    Command {
    name: "strlen",
    arity: 2,
    flags: flags::READONLY | flags::FAST,
    keys: KEY1,
    group: "string",
    summary: "Get the length of the value stored in a key",
    since: "2.2.0",
    handler: strlen,
    ..Command::DEFAULT
},
    Command {
    name: "incr",
    arity: 2,
    flags: flags::WRITE | flags::DENYOOM | flags::FAST,
    keys: KEY1,
    group: "string",
    summary: "Increment the integer value of a key by one",
    since: "1.0.0",
    handler: incr,
    ..Command::DEFAULT
},
    Command {
    name: "decr",
    arity: 2,
    flags: flags::WRITE | flags::DENYOOM | flags::FAST,
    keys: KEY1,
    group: "string",
    summary: "Decrement the integer value of a key by one",
    since: "1.0.0",
    handler: decr,
    ..Command::DEFAULT
},
    Command {
    name: "incrby",
    arity: 3,
    flags: flags::WRITE | flags::DENYOOM | flags::FAST,
    keys: KEY1,
    group: "string",
    summary: "Increment the integer value of a key by the given amount",
    since: "1.0.0",
    handler: incrby,
    ..Command::DEFAULT
},
    Command {
    name: "decrby",
    arity: 3,
    flags: flags::WRITE | flags::DENYOOM | flags::FAST,
    keys: KEY1,
    group: "string",
    summary: "Decrement the integer value of a key by the given number",
    since: "1.0.0",
    handler: decrby,
    ..Command::DEFAULT
},
    Command {
    name: "incrbyfloat",
    arity: 3,
    flags: flags::WRITE | flags::DENYOOM | flags::FAST,
    keys: KEY1,
    group: "string",
    summary: "Increment the float value of a key by the given amount",
    since: "2.6.0",
    handler: incrbyfloat,
    ..Command::DEFAULT
},
    Command {
    name: "getrange",
    arity: 4,
    flags: flags::READONLY,
    keys: KEY1,
    group: "string",
    summary: "Get a substring of the string stored at a key",
    since: "2.4.0",
    complexity: GETRANGE_COMPLEXITY,
    handler: getrange,
    ..Command::DEFAULT
},
    Command {
    name: "setrange",
    arity: 4,
    flags: flags::WRITE | flags::DENYOOM,
    keys: KEY1,
    group: "string",
    summary: "Overwrite part of a string at key starting at the specified offset",
    since: "2.2.0",
    complexity: "O(1), not counting the time taken to copy the new string in place. Usually, this string is very small so the amortized complexity is O(1). Otherwise, complexity is O(M) with M being the length of the value argument.",
    handler: setrange,
    ..Command::DEFAULT
},
    Command {
    name: "substr",
    arity: 4,
    flags: flags::READONLY,
    keys: KEY1,
    group: "string",
    summary: "Get a substring of the string stored at a key",
    since: "1.0.0",
    complexity: GETRANGE_COMPLEXITY,
    handler: getrange,
    ..Command::DEFAULT
},
    Command {
    name: "lcs",
    arity: -3,
    flags: flags::READONLY,
    keys: Keys::Range {
            first: 1,
            last: 2,
            step: 1,
        },
    group: "string",
    summary: "Find longest common substring",
    since: "7.0.0",
    complexity: "O(N*M) where N and M are the lengths of s1 and s2, respectively",
    handler: lcs,
    ..Command::DEFAULT
},
];

// ---------------------------------------------------------------------------------------
// Shared helpers

/// The largest string a command may build (proto-max-bulk-len), in bytes. Cached per
/// thread and re-read when the configuration changes (GETBIT, SETBIT... are hot paths).
pub(crate) fn max_string_len(ctx: &Ctx<'_>) -> u64 {
    thread_local! {
        // (server address, config epoch, value)
        static CACHE: Cell<(usize, u64, u64)> = const { Cell::new((0, u64::MAX, 0)) };
    }
    let config = &ctx.config();
    let id = ctx.server() as *const _ as usize;
    let epoch = config.epoch();
    CACHE.with(|c| {
        let (cid, cepoch, v) = c.get();
        if cid == id && cepoch == epoch {
            return v;
        }
        let v = config.get().proto_max_bulk_len;
        c.set((id, epoch, v));
        v
    })
}

/// Redis's checkStringLength: `size + append` must stay within proto-max-bulk-len.
pub(crate) fn check_string_length(size: u64, append: u64, max: u64) -> CmdResult {
    match size.checked_add(append) {
        Some(total) if total <= max => Ok(()),
        _ => Err(CmdError::Static(
            "ERR string exceeds maximum allowed size (proto-max-bulk-len)",
        )),
    }
}

/// An option argument as C's string functions see it: up to its first NUL byte.
fn opt_name(arg: &[u8]) -> &[u8] {
    match arg.iter().position(|&b| b == 0) {
        Some(n) => &arg[..n],
        None => arg,
    }
}

/// Case-insensitive option match, as Redis's strcasecmp on the argument.
pub(crate) fn is_opt(arg: &[u8], name: &[u8]) -> bool {
    opt_name(arg).eq_ignore_ascii_case(name)
}

fn invalid_expire(cmd: &str) -> CmdError {
    CmdError::Static(match cmd {
        "set" => "ERR invalid expire time in 'set' command",
        "setex" => "ERR invalid expire time in 'setex' command",
        "psetex" => "ERR invalid expire time in 'psetex' command",
        _ => "ERR invalid expire time in 'getex' command",
    })
}

// SET/GETEX option flags, as Redis's OBJ_* flags.
const NX: u32 = 1;
const XX: u32 = 1 << 1;
const EX: u32 = 1 << 2;
const PX: u32 = 1 << 3;
const KEEPTTL: u32 = 1 << 4;
const GET: u32 = 1 << 5;
const EXAT: u32 = 1 << 6;
const PXAT: u32 = 1 << 7;
const PERSIST: u32 = 1 << 8;
const ANY_EXPIRE: u32 = EX | PX | EXAT | PXAT;

/// Parsed SET/GETEX options: flags and the index of the expire argument.
struct ExtOpts {
    flags: u32,
    expire: Option<usize>,
}

/// Redis's parseExtendedStringArgumentsOrReply for SET (`is_set`) or GETEX.
fn parse_ext(argv: &[bytes::Bytes], is_set: bool) -> Result<ExtOpts, CmdError> {
    let mut f = 0u32;
    let mut expire = None;
    let mut j = if is_set { 3 } else { 2 };
    while j < argv.len() {
        let opt = opt_name(&argv[j]);
        let has_next = j + 1 < argv.len();
        let eq = |name: &[u8]| opt.eq_ignore_ascii_case(name);
        let mut expire_flag = 0;
        if eq(b"nx") && f & XX == 0 && is_set {
            f |= NX;
        } else if eq(b"xx") && f & NX == 0 && is_set {
            f |= XX;
        } else if eq(b"get") && is_set {
            f |= GET;
        } else if eq(b"keepttl") && f & (PERSIST | ANY_EXPIRE) == 0 && is_set {
            f |= KEEPTTL;
        } else if eq(b"persist") && !is_set && f & (ANY_EXPIRE | KEEPTTL) == 0 {
            f |= PERSIST;
        } else if eq(b"ex") && f & (KEEPTTL | PERSIST | EXAT | PX | PXAT) == 0 && has_next {
            expire_flag = EX;
        } else if eq(b"px") && f & (KEEPTTL | PERSIST | EX | EXAT | PXAT) == 0 && has_next {
            expire_flag = PX;
        } else if eq(b"exat") && f & (KEEPTTL | PERSIST | EX | PX | PXAT) == 0 && has_next {
            expire_flag = EXAT;
        } else if eq(b"pxat") && f & (KEEPTTL | PERSIST | EX | EXAT | PX) == 0 && has_next {
            expire_flag = PXAT;
        } else {
            return Err(CmdError::SYNTAX);
        }
        if expire_flag != 0 {
            f |= expire_flag;
            j += 1;
            expire = Some(j);
        }
        j += 1;
    }
    Ok(ExtOpts { flags: f, expire })
}

/// Redis's getExpireMillisecondsOrReply: the absolute expiry in Unix ms. `flags` says
/// the unit (EX/EXAT seconds) and whether it is relative to `now` (EX/PX).
fn expire_ms(arg: &[u8], flags: u32, now: u64, cmd: &str) -> Result<u64, CmdError> {
    let mut ms = parse_i64(arg).ok_or(CmdError::NOT_INTEGER)?;
    let seconds = flags & (EX | EXAT) != 0;
    if ms <= 0 || (seconds && ms > i64::MAX / 1000) {
        return Err(invalid_expire(cmd));
    }
    if seconds {
        ms *= 1000;
    }
    if flags & (EX | PX) != 0 {
        ms = ms.wrapping_add(now as i64);
    }
    if ms <= 0 {
        return Err(invalid_expire(cmd));
    }
    Ok(ms as u64)
}

// ---------------------------------------------------------------------------------------
// GET and SET family

fn get(ctx: &mut Ctx<'_>) -> CmdResult {
    let key = ctx.arg(1);
    let mut l = ctx.lock1(key);
    match l.get_str(key)? {
        Some(v) => ctx.out.bulk(v),
        None => ctx.out.null(),
    }
    Ok(())
}

fn set(ctx: &mut Ctx<'_>) -> CmdResult {
    let key = ctx.arg(1);
    let val = ctx.arg(2);
    if ctx.argv.len() == 3 {
        ctx.lock1(key).set_str(key, val, Ttl::Clear);
        ctx.notify(notify::STRING, "set", key);
        ctx.out.ok();
        return Ok(());
    }
    let opts = parse_ext(ctx.argv, true)?;
    let f = opts.flags;
    let mut l = ctx.lock1(key);
    let ttl = match opts.expire {
        Some(i) => Ttl::At(expire_ms(ctx.arg(i), f, l.now(), "set")?),
        None if f & KEEPTTL != 0 => Ttl::Keep,
        None => Ttl::Clear,
    };
    let found = if f & GET != 0 {
        match l.get_str(key)? {
            Some(v) => {
                ctx.out.bulk(v);
                true
            }
            None => {
                ctx.out.null();
                false
            }
        }
    } else {
        l.contains(key)
    };
    if (f & NX != 0 && found) || (f & XX != 0 && !found) {
        if f & GET == 0 {
            ctx.out.null();
        }
        ctx.no_effect();
        return Ok(());
    }
    l.set_str(key, val, ttl);
    drop(l);
    if let Ttl::At(at) = ttl {
        // The journal gets the absolute time, not "EX 10" counted from the replay.
        ctx.rewrite1(set_pxat(key, val, at));
    }
    ctx.notify(notify::STRING, "set", key);
    if opts.expire.is_some() {
        ctx.notify(notify::GENERIC, "expire", key);
    }
    if f & GET == 0 {
        ctx.out.ok();
    }
    Ok(())
}

fn setnx(ctx: &mut Ctx<'_>) -> CmdResult {
    let key = ctx.arg(1);
    let mut l = ctx.lock1(key);
    if l.contains(key) {
        ctx.out.int(0);
    } else {
        l.set_str(key, ctx.arg(2), Ttl::Clear);
        drop(l);
        ctx.notify(notify::STRING, "set", key);
        ctx.out.int(1);
    }
    Ok(())
}

fn setex_generic(ctx: &mut Ctx<'_>, unit_flag: u32, cmd: &str) -> CmdResult {
    let key = ctx.arg(1);
    let mut l = ctx.lock1(key);
    let at = expire_ms(ctx.arg(2), unit_flag, l.now(), cmd)?;
    l.set_str(key, ctx.arg(3), Ttl::At(at));
    drop(l);
    ctx.rewrite1(set_pxat(key, ctx.arg(3), at));
    ctx.notify(notify::STRING, "set", key);
    ctx.notify(notify::GENERIC, "expire", key);
    ctx.out.ok();
    Ok(())
}

/// The journal's form of a string write with an expiry: SET key value PXAT <unix ms>.
fn set_pxat(key: &[u8], val: &[u8], at: u64) -> Vec<Bytes> {
    vec![
        Bytes::from_static(b"SET"),
        Bytes::copy_from_slice(key),
        Bytes::copy_from_slice(val),
        Bytes::from_static(b"PXAT"),
        Bytes::from(at.to_string()),
    ]
}

fn setex(ctx: &mut Ctx<'_>) -> CmdResult {
    setex_generic(ctx, EX, "setex")
}

fn psetex(ctx: &mut Ctx<'_>) -> CmdResult {
    setex_generic(ctx, PX, "psetex")
}

fn mget(ctx: &mut Ctx<'_>) -> CmdResult {
    let keys = &ctx.argv[1..];
    let mut l = ctx.lock(keys);
    ctx.out.array(keys.len());
    for k in keys {
        // Redis answers nil for a key of another type rather than failing.
        match l.get(k).and_then(|e| e.as_str()) {
            Some(v) => ctx.out.bulk(v),
            None => ctx.out.null(),
        }
    }
    Ok(())
}

/// The keys of MSET/MSETNX, after Redis's check that the arguments come in pairs.
fn mset_keys<'a>(ctx: &Ctx<'a>, name: &str) -> Result<Vec<&'a [u8]>, CmdError> {
    if ctx.argv.len().is_multiple_of(2) {
        return Err(CmdError::arity(name));
    }
    Ok(ctx.argv[1..].iter().step_by(2).map(|k| &k[..]).collect())
}

fn mset(ctx: &mut Ctx<'_>) -> CmdResult {
    let keys = mset_keys(ctx, "mset")?;
    let mut l = ctx.lock(&keys);
    for pair in ctx.argv[1..].chunks_exact(2) {
        l.set_str(&pair[0], &pair[1], Ttl::Clear);
    }
    drop(l);
    notify_each_set(ctx);
    ctx.out.ok();
    Ok(())
}

fn msetnx(ctx: &mut Ctx<'_>) -> CmdResult {
    let keys = mset_keys(ctx, "msetnx")?;
    let mut l = ctx.lock(&keys);
    if keys.iter().any(|k| l.contains(k)) {
        ctx.out.int(0);
        return Ok(());
    }
    for pair in ctx.argv[1..].chunks_exact(2) {
        l.set_str(&pair[0], &pair[1], Ttl::Clear);
    }
    drop(l);
    notify_each_set(ctx);
    ctx.out.int(1);
    Ok(())
}

/// MSET/MSETNX: a `set` event per key, in argument order.
fn notify_each_set(ctx: &mut Ctx<'_>) {
    let argv = ctx.argv;
    for pair in argv[1..].chunks_exact(2) {
        ctx.notify(notify::STRING, "set", &pair[0]);
    }
}

/// Redis's getGenericCommand: replies with the value or nil; false when there is none.
fn reply_value(l: &mut Locked<'_>, key: &[u8], ctx: &mut Ctx<'_>) -> Result<bool, CmdError> {
    match l.get_str(key)? {
        Some(v) => {
            ctx.out.bulk(v);
            Ok(true)
        }
        None => {
            ctx.out.null();
            Ok(false)
        }
    }
}

fn getset(ctx: &mut Ctx<'_>) -> CmdResult {
    let key = ctx.arg(1);
    let mut l = ctx.lock1(key);
    reply_value(&mut l, key, ctx)?;
    l.set_str(key, ctx.arg(2), Ttl::Clear);
    drop(l);
    ctx.notify(notify::STRING, "set", key);
    Ok(())
}

fn getdel(ctx: &mut Ctx<'_>) -> CmdResult {
    let key = ctx.arg(1);
    let mut l = ctx.lock1(key);
    if reply_value(&mut l, key, ctx)? {
        l.remove(key);
        drop(l);
        ctx.notify(notify::GENERIC, "del", key);
    }
    Ok(())
}

fn getex(ctx: &mut Ctx<'_>) -> CmdResult {
    let key = ctx.arg(1);
    let opts = parse_ext(ctx.argv, false)?;
    let f = opts.flags;
    let mut l = ctx.lock1(key);
    let now = l.now();
    ctx.no_effect();
    let Some(v) = l.get_str(key)? else {
        ctx.out.null();
        return Ok(());
    };
    let at = match opts.expire {
        Some(i) => Some(expire_ms(ctx.arg(i), f, now, "getex")?),
        None => None,
    };
    ctx.out.bulk(v);
    match at {
        // An absolute time already past deletes the key, as Redis does.
        Some(at) if f & (EXAT | PXAT) != 0 && at <= now => {
            l.remove(key);
            drop(l);
            ctx.rewrite1(crate::exec::effects::cmd(&[b"DEL", key]));
            ctx.notify(notify::GENERIC, "del", key);
        }
        Some(at) => {
            l.set_expire(key, Some(at));
            drop(l);
            let at = at.to_string();
            ctx.rewrite1(crate::exec::effects::cmd(&[
                b"PEXPIREAT",
                key,
                at.as_bytes(),
            ]));
            ctx.notify(notify::GENERIC, "expire", key);
        }
        None if f & PERSIST != 0 => {
            let had = l.expire_at(key).flatten().is_some();
            l.set_expire(key, None);
            drop(l);
            ctx.rewrite1(crate::exec::effects::cmd(&[b"PERSIST", key]));
            if had {
                ctx.notify(notify::GENERIC, "persist", key);
            }
        }
        None => {}
    }
    Ok(())
}

fn append(ctx: &mut Ctx<'_>) -> CmdResult {
    let key = ctx.arg(1);
    let val = ctx.arg(2);
    let max = max_string_len(ctx);
    let mut l = ctx.lock1(key);
    let len = match l.str_mut(key)? {
        Some(s) => {
            check_string_length(s.len() as u64, val.len() as u64, max)?;
            s.extend_from_slice(val);
            s.len()
        }
        None => {
            l.set_str(key, val, Ttl::Clear);
            val.len()
        }
    };
    drop(l);
    ctx.notify(notify::STRING, "append", key);
    ctx.out.int(len as i64);
    Ok(())
}

fn strlen(ctx: &mut Ctx<'_>) -> CmdResult {
    let key = ctx.arg(1);
    let len = ctx.lock1(key).get_str(key)?.map_or(0, |v| v.len());
    ctx.out.int(len as i64);
    Ok(())
}

// ---------------------------------------------------------------------------------------
// Counters

/// The current string value of a write lookup and the expiry to keep when replacing it.
fn current<'l>(l: &'l mut Locked<'_>, key: &[u8]) -> Result<Option<(&'l [u8], Ttl)>, CmdError> {
    match l.peek(key) {
        None => Ok(None),
        Some(e) => {
            let ttl = e.expire_at().map_or(Ttl::Clear, Ttl::At);
            let s = e.as_str().ok_or(CmdError::WRONG_TYPE)?;
            Ok(Some((s, ttl)))
        }
    }
}

fn incr_decr(ctx: &mut Ctx<'_>, delta: i64) -> CmdResult {
    let key = ctx.arg(1);
    let mut l = ctx.lock1(key);
    let (old, ttl) = match current(&mut l, key)? {
        None => (0, Ttl::Clear),
        Some((s, ttl)) => (parse_i64(s).ok_or(CmdError::NOT_INTEGER)?, ttl),
    };
    let new = old.checked_add(delta).ok_or(CmdError::OVERFLOW)?;
    l.set_str(key, strata_resp::Digits::of(new).as_ref(), ttl);
    drop(l);
    ctx.notify(notify::STRING, "incrby", key);
    ctx.out.int(new);
    Ok(())
}

fn incr(ctx: &mut Ctx<'_>) -> CmdResult {
    incr_decr(ctx, 1)
}

fn decr(ctx: &mut Ctx<'_>) -> CmdResult {
    incr_decr(ctx, -1)
}

fn incrby(ctx: &mut Ctx<'_>) -> CmdResult {
    let delta = ctx.int_arg(2)?;
    incr_decr(ctx, delta)
}

fn decrby(ctx: &mut Ctx<'_>) -> CmdResult {
    let delta = ctx.int_arg(2)?;
    if delta == i64::MIN {
        return Err(CmdError::Static("ERR decrement would overflow"));
    }
    incr_decr(ctx, -delta)
}

fn incrbyfloat(ctx: &mut Ctx<'_>) -> CmdResult {
    let key = ctx.arg(1);
    // Parsed before locking; its error is reported in Redis's order below.
    let incr = longdouble::parse(ctx.arg(2));
    let mut l = ctx.lock1(key);
    let (old, ttl) = match current(&mut l, key)? {
        None => (longdouble::Ld::Zero, Ttl::Clear),
        Some((s, ttl)) => (longdouble::parse(s).ok_or(CmdError::NOT_FLOAT)?, ttl),
    };
    let incr = incr.ok_or(CmdError::NOT_FLOAT)?;
    let sum = longdouble::add(old, incr);
    if !sum.is_finite() {
        return Err(CmdError::Static(
            "ERR increment would produce NaN or Infinity",
        ));
    }
    let text = longdouble::to_human(sum);
    l.set_str(key, text.as_bytes(), ttl);
    drop(l);
    ctx.notify(notify::STRING, "incrbyfloat", key);
    ctx.out.bulk(text.as_bytes());
    Ok(())
}

// ---------------------------------------------------------------------------------------
// Ranges

fn getrange(ctx: &mut Ctx<'_>) -> CmdResult {
    let start = ctx.int_arg(2)?;
    let end = ctx.int_arg(3)?;
    let key = ctx.arg(1);
    let mut l = ctx.lock1(key);
    let Some(s) = l.get_str(key)? else {
        ctx.out.bulk(b"");
        return Ok(());
    };
    if start < 0 && end < 0 && start > end {
        ctx.out.bulk(b"");
        return Ok(());
    }
    let len = s.len() as i128;
    let (mut start, mut end) = (start as i128, end as i128);
    if start < 0 {
        start += len;
    }
    if end < 0 {
        end += len;
    }
    start = start.max(0);
    end = end.max(0);
    if end >= len {
        end = len - 1;
    }
    if start > end || len == 0 {
        ctx.out.bulk(b"");
    } else {
        ctx.out.bulk(&s[start as usize..=end as usize]);
    }
    Ok(())
}

fn setrange(ctx: &mut Ctx<'_>) -> CmdResult {
    let offset = ctx.int_arg(2)?;
    if offset < 0 {
        return Err(CmdError::err("offset is out of range"));
    }
    let offset = offset as u64;
    let key = ctx.arg(1);
    let val = ctx.arg(3);
    let max = max_string_len(ctx);
    let mut l = ctx.lock1(key);
    let exists = match l.peek(key) {
        None => false,
        Some(e) => {
            let s = e.as_str().ok_or(CmdError::WRONG_TYPE)?;
            if val.is_empty() {
                ctx.out.int(s.len() as i64);
                return Ok(());
            }
            true
        }
    };
    if !exists && val.is_empty() {
        ctx.out.int(0);
        return Ok(());
    }
    check_string_length(offset, val.len() as u64, max)?;
    // Both fit in usize: their sum is at most proto-max-bulk-len.
    let start = offset as usize;
    let end = start + val.len();
    let len = if exists {
        let Some(s) = l.str_mut(key)? else {
            return Err(CmdError::NO_SUCH_KEY);
        };
        if s.len() < end {
            s.resize(end, 0);
        }
        s[start..end].copy_from_slice(val);
        s.len()
    } else {
        let mut s = vec![0u8; end];
        s[start..end].copy_from_slice(val);
        l.set_value(key, strata_engine::Value::Str(s), Ttl::Clear);
        end
    };
    drop(l);
    ctx.notify(notify::STRING, "setrange", key);
    ctx.out.int(len as i64);
    Ok(())
}

// ---------------------------------------------------------------------------------------
// LCS

fn lcs(ctx: &mut Ctx<'_>) -> CmdResult {
    let (ka, kb) = (ctx.arg(1), ctx.arg(2));
    // Copy the values out, so the quadratic work below runs without the lock.
    let (a, b) = {
        let mut l = ctx.lock(&[ka, kb]);
        let not_string = || CmdError::err("The specified keys must contain string values");
        let a = match l.get(ka) {
            None => Vec::new(),
            Some(e) => e.as_str().ok_or_else(not_string)?.to_vec(),
        };
        let b = match l.get(kb) {
            None => Vec::new(),
            Some(e) => e.as_str().ok_or_else(not_string)?.to_vec(),
        };
        (a, b)
    };
    let (mut getlen, mut getidx, mut withmatchlen) = (false, false, false);
    let mut minmatchlen: i64 = 0;
    let mut j = 3;
    while j < ctx.argv.len() {
        let opt = ctx.arg(j);
        let more = j + 1 < ctx.argv.len();
        if is_opt(opt, b"idx") {
            getidx = true;
        } else if is_opt(opt, b"len") {
            getlen = true;
        } else if is_opt(opt, b"withmatchlen") {
            withmatchlen = true;
        } else if is_opt(opt, b"minmatchlen") && more {
            minmatchlen = ctx.int_arg(j + 1)?.max(0);
            j += 1;
        } else {
            return Err(CmdError::SYNTAX);
        }
        j += 1;
    }
    if getidx && getlen {
        return Err(CmdError::err(
            "If you want both the length and indexes, please just use IDX.",
        ));
    }
    if a.len() as u64 >= u64::from(u32::MAX - 1) || b.len() as u64 >= u64::from(u32::MAX - 1) {
        return Err(CmdError::err("String too long for LCS"));
    }
    let (alen, blen) = (a.len(), b.len());
    let cells = (alen as u128 + 1) * (blen as u128 + 1);
    if cells * 4 > u128::from(max_string_len(ctx)) {
        return Err(CmdError::err(
            "Insufficient memory, transient memory for LCS exceeds proto-max-bulk-len",
        ));
    }
    let w = blen + 1;
    let mut table: Vec<u32> = Vec::new();
    if table.try_reserve_exact(cells as usize).is_err() {
        return Err(CmdError::err(
            "Insufficient memory, failed allocating transient memory for LCS",
        ));
    }
    table.resize(cells as usize, 0);
    for i in 1..=alen {
        for jj in 1..=blen {
            table[i * w + jj] = if a[i - 1] == b[jj - 1] {
                table[(i - 1) * w + jj - 1] + 1
            } else {
                table[(i - 1) * w + jj].max(table[i * w + jj - 1])
            };
        }
    }
    let total = table[alen * w + blen];

    // Walk back from the end, building the string and the matching ranges as Redis does.
    let computelcs = getidx || !getlen;
    let mut result = vec![0u8; if computelcs { total as usize } else { 0 }];
    let mut idx = total as usize;
    let mut ranges: Vec<[u32; 5]> = Vec::new();
    let (mut i, mut jj) = (alen, blen);
    let (mut a_start, mut a_end, mut b_start, mut b_end) = (alen, 0usize, 0usize, 0usize);
    while computelcs && i > 0 && jj > 0 {
        let mut emit = false;
        if a[i - 1] == b[jj - 1] {
            result[idx - 1] = a[i - 1];
            if a_start == alen {
                a_start = i - 1;
                a_end = i - 1;
                b_start = jj - 1;
                b_end = jj - 1;
            } else if a_start == i && b_start == jj {
                a_start -= 1;
                b_start -= 1;
            } else {
                emit = true;
            }
            if a_start == 0 || b_start == 0 {
                emit = true;
            }
            idx -= 1;
            i -= 1;
            jj -= 1;
        } else {
            if table[(i - 1) * w + jj] > table[i * w + jj - 1] {
                i -= 1;
            } else {
                jj -= 1;
            }
            if a_start != alen {
                emit = true;
            }
        }
        let match_len = a_end.wrapping_sub(a_start).wrapping_add(1);
        if emit {
            if (minmatchlen == 0 || match_len as u64 >= minmatchlen as u64) && getidx {
                ranges.push([
                    a_start as u32,
                    a_end as u32,
                    b_start as u32,
                    b_end as u32,
                    match_len as u32,
                ]);
            }
            a_start = alen;
        }
    }
    drop(table);
    if getidx {
        ctx.out.map(2);
        ctx.out.bulk(b"matches");
        ctx.out.array(ranges.len());
        for r in &ranges {
            ctx.out.array(if withmatchlen { 3 } else { 2 });
            ctx.out.array(2);
            ctx.out.int(i64::from(r[0]));
            ctx.out.int(i64::from(r[1]));
            ctx.out.array(2);
            ctx.out.int(i64::from(r[2]));
            ctx.out.int(i64::from(r[3]));
            if withmatchlen {
                ctx.out.int(i64::from(r[4]));
            }
        }
        ctx.out.bulk(b"len");
        ctx.out.int(i64::from(total));
    } else if getlen {
        ctx.out.int(i64::from(total));
    } else {
        ctx.out.bulk(&result);
    }
    Ok(())
}
