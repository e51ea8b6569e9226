//! Sorted-set commands: ZADD ZINCRBY ZREM ZSCORE ZMSCORE ZCARD ZRANK ZREVRANK ZPOPMIN
//! ZPOPMAX ZMPOP ZRANDMEMBER ZUNION ZINTER ZDIFF ZUNIONSTORE ZINTERSTORE ZDIFFSTORE
//! ZINTERCARD ZSCAN here; the range commands (ZRANGE family, ZCOUNT, ZLEXCOUNT,
//! ZREMRANGEBY*) in `zset_range.rs`. Semantics, reply shapes and error texts follow Redis
//! 7.0's t_zset.c; the type itself is `strata_engine::ZSetValue`.
//!
//! The blocking pops (BZPOPMIN, BZPOPMAX, BZMPOP) reuse [`zpop_reply`] and
//! [`notify_popped`]. Keyspace events are emitted where Redis 7.0's t_zset.c emits them,
//! after the write with the lock released; writes that add members signal the key as
//! ready for blocked clients.

#[path = "zset_range.rs"]
mod range;

use super::random::Rng;
use crate::exec::command::{flags, parse_i64, CmdError, CmdResult, Command, Keys};
use crate::exec::ctx::Ctx;
use crate::services::notify;
use bytes::Bytes;
use strata_engine::{Locked, Ttl, Value, ZSetValue};
use strata_resp::{format_g17, Protocol, Reply};

use range::parse_score;

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

/// Keys of `CMD numkeys key...` (ZUNION, ZINTER, ZDIFF, ZINTERCARD, ZMPOP).
fn numkeys_keys(argv: &[Bytes]) -> Vec<usize> {
    keys_after_count(argv, 1)
}

/// Keys of `CMD destination numkeys key...` (ZUNIONSTORE, ZINTERSTORE, ZDIFFSTORE).
fn store_keys(argv: &[Bytes]) -> Vec<usize> {
    let mut k = vec![1];
    if argv.len() > 1 {
        k.extend(keys_after_count(argv, 2));
    }
    k
}

fn keys_after_count(argv: &[Bytes], at: usize) -> Vec<usize> {
    let n = argv.get(at).and_then(|a| parse_i64(a)).unwrap_or(0);
    let avail = argv.len().saturating_sub(at + 1);
    let n = usize::try_from(n).unwrap_or(0).min(avail);
    (at + 1..at + 1 + n).collect()
}

/// Defaults shared by this family's declarations.
const FAMILY: Command = Command {
    group: "sorted-set",
    ..Command::DEFAULT
};

const W: u32 = flags::WRITE;
const R: u32 = flags::READONLY;
const F: u32 = flags::FAST;
const D: u32 = flags::DENYOOM;
const M: u32 = flags::MOVABLEKEYS;

const RANGE_CPLX: &str = "O(log(N)+M) with N being the number of elements in the sorted set and M the number of elements being returned. If M is constant (e.g. always asking for the first 10 elements with LIMIT), you can consider it O(log(N)).";
const REM_CPLX: &str = "O(log(N)+M) with N being the number of elements in the sorted set and M the number of elements removed by the operation.";

pub const COMMANDS: &[Command] = &[
    Command {
    name: "zadd",
    arity: -4,
    flags: W | D | F,
    keys: KEY1,
    summary: "Add one or more members to a sorted set, or update its score if it already exists",
    since: "1.2.0",
    complexity: "O(log(N)) for each item added, where N is the number of elements in the sorted set.",
    handler: zadd,
    ..FAMILY
},
    Command {
    name: "zincrby",
    arity: 4,
    flags: W | D | F,
    keys: KEY1,
    summary: "Increment the score of a member in a sorted set",
    since: "1.2.0",
    complexity: "O(log(N)) where N is the number of elements in the sorted set.",
    handler: zincrby,
    ..FAMILY
},
    Command {
    name: "zrem",
    arity: -3,
    flags: W | F,
    keys: KEY1,
    summary: "Remove one or more members from a sorted set",
    since: "1.2.0",
    complexity: "O(M*log(N)) with N being the number of elements in the sorted set and M the number of elements to be removed.",
    handler: zrem,
    ..FAMILY
},
    Command {
    name: "zscore",
    arity: 3,
    flags: R | F,
    keys: KEY1,
    summary: "Get the score associated with the given member in a sorted set",
    since: "1.2.0",
    complexity: "O(1)",
    handler: zscore,
    ..FAMILY
},
    Command {
    name: "zmscore",
    arity: -3,
    flags: R | F,
    keys: KEY1,
    summary: "Get the score associated with the given members in a sorted set",
    since: "6.2.0",
    complexity: "O(N) where N is the number of members being requested.",
    handler: zmscore,
    ..FAMILY
},
    Command {
    name: "zcard",
    arity: 2,
    flags: R | F,
    keys: KEY1,
    summary: "Get the number of members in a sorted set",
    since: "1.2.0",
    complexity: "O(1)",
    handler: zcard,
    ..FAMILY
},
    Command {
    name: "zcount",
    arity: 4,
    flags: R | F,
    keys: KEY1,
    summary: "Count the members in a sorted set with scores within the given values",
    since: "2.0.0",
    complexity: "O(log(N)) with N being the number of elements in the sorted set.",
    handler: range::zcount,
    ..FAMILY
},
    Command {
    name: "zlexcount",
    arity: 4,
    flags: R | F,
    keys: KEY1,
    summary: "Count the number of members in a sorted set between a given lexicographical range",
    since: "2.8.9",
    complexity: "O(log(N)) with N being the number of elements in the sorted set.",
    handler: range::zlexcount,
    ..FAMILY
},
    Command {
    name: "zrange",
    arity: -4,
    flags: R,
    keys: KEY1,
    summary: "Return a range of members in a sorted set",
    since: "1.2.0",
    complexity: "O(log(N)+M) with N being the number of elements in the sorted set and M the number of elements returned.",
    handler: range::zrange,
    ..FAMILY
},
    Command {
    name: "zrangestore",
    arity: -5,
    flags: W | D,
    keys: KEYS_1_2,
    summary: "Store a range of members from sorted set into another key",
    since: "6.2.0",
    complexity: "O(log(N)+M) with N being the number of elements in the sorted set and M the number of elements stored into the destination key.",
    handler: range::zrangestore,
    ..FAMILY
},
    Command {
    name: "zrangebyscore",
    arity: -4,
    flags: R,
    keys: KEY1,
    summary: "Return a range of members in a sorted set, by score",
    since: "1.0.5",
    complexity: RANGE_CPLX,
    handler: range::zrangebyscore,
    ..FAMILY
},
    Command {
    name: "zrevrangebyscore",
    arity: -4,
    flags: R,
    keys: KEY1,
    summary: "Return a range of members in a sorted set, by score, with scores ordered from high to low",
    since: "2.2.0",
    complexity: RANGE_CPLX,
    handler: range::zrevrangebyscore,
    ..FAMILY
},
    Command {
    name: "zrangebylex",
    arity: -4,
    flags: R,
    keys: KEY1,
    summary: "Return a range of members in a sorted set, by lexicographical range",
    since: "2.8.9",
    complexity: RANGE_CPLX,
    handler: range::zrangebylex,
    ..FAMILY
},
    Command {
    name: "zrevrangebylex",
    arity: -4,
    flags: R,
    keys: KEY1,
    summary: "Return a range of members in a sorted set, by lexicographical range, ordered from higher to lower strings.",
    since: "2.8.9",
    complexity: RANGE_CPLX,
    handler: range::zrevrangebylex,
    ..FAMILY
},
    Command {
    name: "zrevrange",
    arity: -4,
    flags: R,
    keys: KEY1,
    summary: "Return a range of members in a sorted set, by index, with scores ordered from high to low",
    since: "1.2.0",
    complexity: "O(log(N)+M) with N being the number of elements in the sorted set and M the number of elements returned.",
    handler: range::zrevrange,
    ..FAMILY
},
    Command {
    name: "zrank",
    arity: 3,
    flags: R | F,
    keys: KEY1,
    summary: "Determine the index of a member in a sorted set",
    since: "2.0.0",
    complexity: "O(log(N))",
    handler: zrank,
    ..FAMILY
},
    Command {
    name: "zrevrank",
    arity: 3,
    flags: R | F,
    keys: KEY1,
    summary: "Determine the index of a member in a sorted set, with scores ordered from high to low",
    since: "2.0.0",
    complexity: "O(log(N))",
    handler: zrevrank,
    ..FAMILY
},
    Command {
    name: "zremrangebyrank",
    arity: 4,
    flags: W,
    keys: KEY1,
    summary: "Remove all members in a sorted set within the given indexes",
    since: "2.0.0",
    complexity: REM_CPLX,
    handler: range::zremrangebyrank,
    ..FAMILY
},
    Command {
    name: "zremrangebyscore",
    arity: 4,
    flags: W,
    keys: KEY1,
    summary: "Remove all members in a sorted set within the given scores",
    since: "1.2.0",
    complexity: REM_CPLX,
    handler: range::zremrangebyscore,
    ..FAMILY
},
    Command {
    name: "zremrangebylex",
    arity: 4,
    flags: W,
    keys: KEY1,
    summary: "Remove all members in a sorted set between the given lexicographical range",
    since: "2.8.9",
    complexity: REM_CPLX,
    handler: range::zremrangebylex,
    ..FAMILY
},
    Command {
    name: "zpopmin",
    arity: -2,
    flags: W | F,
    keys: KEY1,
    summary: "Remove and return members with the lowest scores in a sorted set",
    since: "5.0.0",
    complexity: "O(log(N)*M) with N being the number of elements in the sorted set, and M being the number of elements popped.",
    handler: zpopmin,
    ..FAMILY
},
    Command {
    name: "zpopmax",
    arity: -2,
    flags: W | F,
    keys: KEY1,
    summary: "Remove and return members with the highest scores in a sorted set",
    since: "5.0.0",
    complexity: "O(log(N)*M) with N being the number of elements in the sorted set, and M being the number of elements popped.",
    handler: zpopmax,
    ..FAMILY
},
    Command {
    name: "zrandmember",
    arity: -2,
    flags: R,
    keys: KEY1,
    summary: "Get one or multiple random elements from a sorted set",
    since: "6.2.0",
    complexity: "O(N) where N is the number of elements returned",
    handler: zrandmember,
    ..FAMILY
},
    Command {
    name: "zunion",
    arity: -3,
    flags: R | M,
    keys: Keys::Custom(numkeys_keys),
    summary: "Add multiple sorted sets",
    since: "6.2.0",
    complexity: "O(N)+O(M*log(M)) with N being the sum of the sizes of the input sorted sets, and M being the number of elements in the resulting sorted set.",
    handler: zunion,
    ..FAMILY
},
    Command {
    name: "zinter",
    arity: -3,
    flags: R | M,
    keys: Keys::Custom(numkeys_keys),
    summary: "Intersect multiple sorted sets",
    since: "6.2.0",
    complexity: "O(N*K)+O(M*log(M)) worst case with N being the smallest input sorted set, K being the number of input sorted sets and M being the number of elements in the resulting sorted set.",
    handler: zinter,
    ..FAMILY
},
    Command {
    name: "zdiff",
    arity: -3,
    flags: R | M,
    keys: Keys::Custom(numkeys_keys),
    summary: "Subtract multiple sorted sets",
    since: "6.2.0",
    complexity: "O(L + (N-K)log(N)) worst case where L is the total number of elements in all the sets, N is the size of the first set, and K is the size of the result set.",
    handler: zdiff,
    ..FAMILY
},
    Command {
    name: "zunionstore",
    arity: -4,
    flags: W | D | M,
    keys: Keys::Custom(store_keys),
    summary: "Add multiple sorted sets and store the resulting sorted set in a new key",
    since: "2.0.0",
    complexity: "O(N)+O(M log(M)) with N being the sum of the sizes of the input sorted sets, and M being the number of elements in the resulting sorted set.",
    handler: zunionstore,
    ..FAMILY
},
    Command {
    name: "zinterstore",
    arity: -4,
    flags: W | D | M,
    keys: Keys::Custom(store_keys),
    summary: "Intersect multiple sorted sets and store the resulting sorted set in a new key",
    since: "2.0.0",
    complexity: "O(N*K)+O(M*log(M)) worst case with N being the smallest input sorted set, K being the number of input sorted sets and M being the number of elements in the resulting sorted set.",
    handler: zinterstore,
    ..FAMILY
},
    Command {
    name: "zdiffstore",
    arity: -4,
    flags: W | D | M,
    keys: Keys::Custom(store_keys),
    summary: "Subtract multiple sorted sets and store the resulting sorted set in a new key",
    since: "6.2.0",
    complexity: "O(L + (N-K)log(N)) worst case where L is the total number of elements in all the sets, N is the size of the first set, and K is the size of the result set.",
    handler: zdiffstore,
    ..FAMILY
},
    Command {
    name: "zintercard",
    arity: -3,
    flags: R | M,
    keys: Keys::Custom(numkeys_keys),
    summary: "Intersect multiple sorted sets and return the cardinality of the result",
    since: "7.0.0",
    complexity: "O(N*K) worst case with N being the smallest input sorted set, K being the number of input sorted sets.",
    handler: zintercard,
    ..FAMILY
},
    Command {
    name: "zmpop",
    arity: -4,
    flags: W | M,
    keys: Keys::Custom(numkeys_keys),
    summary: "Remove and return members with scores in a sorted set",
    since: "7.0.0",
    complexity: "O(K) + O(M*log(N)) where K is the number of provided keys, N being the number of elements in the sorted set, and M being the number of elements popped.",
    handler: zmpop,
    ..FAMILY
},
    Command {
    name: "zscan",
    arity: -3,
    flags: R,
    keys: KEY1,
    summary: "Incrementally iterate sorted sets elements and associated scores",
    since: "2.8.0",
    complexity: "O(1) for every call. O(N) for a complete iteration, including enough command calls for the cursor to return back to 0. N is the number of elements inside the collection..",
    handler: zscan,
    ..FAMILY
},
];

// ---------------------------------------------------------------------------------------
// Shared helpers

/// The sorted set in `v`, or WRONGTYPE.
fn zset_of(v: Option<&Value>) -> Result<&ZSetValue, CmdError> {
    match v {
        Some(Value::ZSet(z)) => Ok(z),
        _ => Err(CmdError::WRONG_TYPE),
    }
}

fn resp3(out: &Reply<'_>) -> bool {
    out.proto == Protocol::Resp3
}

/// Members, with scores if asked: RESP2 a flat array, RESP3 an array of [member, score].
fn reply_pairs(out: &mut Reply<'_>, items: &[(&[u8], f64)], withscores: bool) {
    if withscores && !resp3(out) {
        out.array(items.len() * 2);
    } else {
        out.array(items.len());
    }
    for (m, s) in items {
        if withscores && resp3(out) {
            out.array(2);
        }
        out.bulk(m);
        if withscores {
            out.double(*s);
        }
    }
}

/// Redis's getPositiveLongFromObjectOrReply, or getRangeLongFromObjectOrReply(min,
/// LONG_MAX) with a message: the same error for text that is no integer and for one < min.
fn positive_arg(
    ctx: &Ctx<'_>,
    i: usize,
    min: i64,
    msg: Option<&'static str>,
) -> Result<i64, CmdError> {
    let fail = || match msg {
        Some(m) => CmdError::Custom(format!("ERR {m}")),
        None => CmdError::Static("ERR value is out of range, must be positive"),
    };
    match parse_i64(ctx.arg(i)) {
        Some(n) if n >= min => Ok(n),
        _ => Err(fail()),
    }
}

/// Redis's d2string, as ZSCAN prints scores: integers plainly, others as "%.17g".
fn d2string(v: f64) -> String {
    if v.is_nan() {
        "nan".into()
    } else if v.is_infinite() {
        if v > 0.0 { "inf" } else { "-inf" }.into()
    } else if v == 0.0 {
        if v.is_sign_negative() { "-0" } else { "0" }.into()
    } else {
        const LIM: f64 = (i64::MAX / 2) as f64;
        if (-LIM..=LIM).contains(&v) && (v as i64) as f64 == v {
            (v as i64).to_string()
        } else {
            format_g17(v)
        }
    }
}

// ---------------------------------------------------------------------------------------
// ZADD ZINCRBY ZREM

fn zadd(ctx: &mut Ctx<'_>) -> CmdResult {
    zadd_generic(ctx, 0)
}

fn zincrby(ctx: &mut Ctx<'_>) -> CmdResult {
    zadd_generic(ctx, ZSetValue::INCR)
}

/// Redis's zaddGenericCommand (ZINCRBY is ZADD with INCR, options included).
fn zadd_generic(ctx: &mut Ctx<'_>, mut fl: u8) -> CmdResult {
    let argc = ctx.argv.len();
    let mut ch = false;
    let mut idx = 2;
    while idx < argc {
        match ctx.lower(idx).as_slice() {
            b"nx" => fl |= ZSetValue::NX,
            b"xx" => fl |= ZSetValue::XX,
            b"ch" => ch = true,
            b"incr" => fl |= ZSetValue::INCR,
            b"gt" => fl |= ZSetValue::GT,
            b"lt" => fl |= ZSetValue::LT,
            _ => break,
        }
        idx += 1;
    }
    let has = |f: u8| fl & f != 0;
    let elements = argc - idx;
    if !elements.is_multiple_of(2) || elements == 0 {
        return Err(CmdError::SYNTAX);
    }
    let elements = elements / 2;
    if has(ZSetValue::NX) && has(ZSetValue::XX) {
        return Err(CmdError::err(
            "XX and NX options at the same time are not compatible",
        ));
    }
    if (has(ZSetValue::GT) && has(ZSetValue::NX))
        || (has(ZSetValue::LT) && has(ZSetValue::NX))
        || (has(ZSetValue::GT) && has(ZSetValue::LT))
    {
        return Err(CmdError::err(
            "GT, LT, and/or NX options at the same time are not compatible",
        ));
    }
    let incr = has(ZSetValue::INCR);
    if incr && elements > 1 {
        return Err(CmdError::err(
            "INCR option supports a single increment-element pair",
        ));
    }
    let mut scores = Vec::with_capacity(elements);
    for j in 0..elements {
        scores.push(parse_score(ctx.arg(idx + 2 * j)).ok_or(CmdError::NOT_FLOAT)?);
    }
    let key = ctx.arg(1);
    let enc = &ctx.keyspace().encodings;
    let mut l = ctx.lock1(key);
    let mut created = None;
    let z = match l.zset_mut(key)? {
        Some(z) => z,
        None if has(ZSetValue::XX) => {
            if incr {
                ctx.out.null();
            } else {
                ctx.out.int(0);
            }
            return Ok(());
        }
        None => created.insert(ZSetValue::with_hint(0, ctx.arg(idx + 1).len(), enc)),
    };
    let (mut added, mut updated, mut processed) = (0i64, 0i64, 0i64);
    let mut score = 0.0;
    let mut failure = None;
    // The one place ZADD/ZINCRBY write.
    for (j, &s) in scores.iter().enumerate() {
        let member = ctx.arg(idx + 1 + 2 * j);
        let (out, newscore) = z.add(member, s, fl, enc);
        if out & ZSetValue::NAN != 0 {
            failure = Some(CmdError::err("resulting score is not a number (NaN)"));
            break;
        }
        if out & ZSetValue::FULL != 0 {
            failure = Some(CmdError::err("sorted set is at its maximum size"));
            break;
        }
        if out & ZSetValue::ADDED != 0 {
            added += 1;
        }
        if out & ZSetValue::UPDATED != 0 {
            updated += 1;
        }
        if out & ZSetValue::NOP == 0 {
            processed += 1;
            score = newscore;
        }
    }
    if let Some(z) = created {
        if !z.is_empty() {
            l.set_value(key, Value::ZSet(Box::new(z)), Ttl::Clear);
        }
    }
    drop(l);
    // Redis notifies even when a later pair failed (its cleanup path).
    if added > 0 || updated > 0 {
        ctx.signal_key_ready(key);
        ctx.notify(notify::ZSET, if incr { "zincr" } else { "zadd" }, key);
    }
    if let Some(e) = failure {
        return Err(e);
    }
    if incr {
        if processed > 0 {
            ctx.out.double(score);
        } else {
            ctx.out.null();
        }
    } else {
        ctx.out.int(if ch { added + updated } else { added });
    }
    Ok(())
}

fn zrem(ctx: &mut Ctx<'_>) -> CmdResult {
    super::remove_members(
        ctx,
        Locked::zset_mut,
        |z, m| z.remove(m).is_some(),
        ZSetValue::is_empty,
        notify::ZSET,
        "zrem",
    )
}

// ---------------------------------------------------------------------------------------
// Reads of single members

fn zscore(ctx: &mut Ctx<'_>) -> CmdResult {
    let key = ctx.arg(1);
    let mut l = ctx.lock1(key);
    let Some(z) = l.zset_get(key)? else {
        ctx.out.null();
        return Ok(());
    };
    match z.score(ctx.arg(2)) {
        Some(s) => ctx.out.double(s),
        None => ctx.out.null(),
    }
    Ok(())
}

fn zmscore(ctx: &mut Ctx<'_>) -> CmdResult {
    let key = ctx.arg(1);
    let mut l = ctx.lock1(key);
    let z = l.zset_get(key)?;
    ctx.out.array(ctx.argv.len() - 2);
    for m in &ctx.argv[2..] {
        match z.and_then(|z| z.score(m)) {
            Some(s) => ctx.out.double(s),
            None => ctx.out.null(),
        }
    }
    Ok(())
}

fn zcard(ctx: &mut Ctx<'_>) -> CmdResult {
    let key = ctx.arg(1);
    let mut l = ctx.lock1(key);
    let n = l.zset_get(key)?.map_or(0, ZSetValue::len);
    ctx.out.int(n as i64);
    Ok(())
}

fn rank_generic(ctx: &mut Ctx<'_>, rev: bool) -> CmdResult {
    let key = ctx.arg(1);
    let mut l = ctx.lock1(key);
    let Some(z) = l.zset_get(key)? else {
        ctx.out.null();
        return Ok(());
    };
    match z.rank(ctx.arg(2)) {
        Some(r) if rev => ctx.out.int((z.len() - 1 - r) as i64),
        Some(r) => ctx.out.int(r as i64),
        None => ctx.out.null(),
    }
    Ok(())
}

fn zrank(ctx: &mut Ctx<'_>) -> CmdResult {
    rank_generic(ctx, false)
}

fn zrevrank(ctx: &mut Ctx<'_>) -> CmdResult {
    rank_generic(ctx, true)
}

// ---------------------------------------------------------------------------------------
// Pops

/// Redis's genericZpopCommand, for ZPOPMIN/ZPOPMAX/ZMPOP and the blocking pops: pops from
/// the first of `keys` that exists (WRONGTYPE if it is not a sorted set) and writes the
/// reply. `count` -1 means "one, reply flat"; `emitkey` puts the key first (ZMPOP,
/// BZPOPMIN); `nested` answers [member, score] pairs; `nil_when_empty` answers a null
/// array rather than an empty one when no key exists. Returns the key popped from and
/// whether it was deleted (for notifications and propagation).
#[allow(clippy::too_many_arguments)]
pub fn zpop_reply<K: AsRef<[u8]>>(
    out: &mut Reply<'_>,
    l: &mut Locked<'_>,
    keys: &[K],
    max: bool,
    emitkey: bool,
    count: i64,
    nested: bool,
    nil_when_empty: bool,
) -> Result<Option<(Vec<u8>, bool)>, CmdError> {
    let mut found = None;
    for k in keys {
        if l.zset_peek(k.as_ref())?.is_some() {
            found = Some(k.as_ref());
            break;
        }
    }
    let Some(key) = found else {
        if nil_when_empty {
            out.null_array();
        } else {
            out.array(0);
        }
        return Ok(None);
    };
    if count == 0 {
        out.array(0);
        return Ok(None);
    }
    let count = if count < 0 { 1 } else { count as usize };
    let Some(z) = l.zset_mut(key)? else {
        out.array(0);
        return Ok(None);
    };
    // The one place the pops write.
    let popped = z.pop(max, count);
    let deleted = z.is_empty();
    if deleted {
        l.remove(key);
    }
    let n = popped.len();
    match (nested, emitkey) {
        (false, false) => out.array(n * 2),
        (true, false) => out.array(n),
        (false, true) => {
            out.array(n * 2 + 1);
            out.bulk(key);
        }
        (true, true) => {
            out.array(2);
            out.bulk(key);
            out.array(n);
        }
    }
    for (m, s) in &popped {
        if nested {
            out.array(2);
        }
        out.bulk(m);
        out.double(*s);
    }
    Ok(Some((key.to_vec(), deleted)))
}

/// The keyspace events of a pop: `zpopmin`/`zpopmax`, then `del` if the key was deleted.
pub fn notify_popped(ctx: &mut Ctx<'_>, key: &[u8], max: bool, deleted: bool) {
    ctx.notify(notify::ZSET, if max { "zpopmax" } else { "zpopmin" }, key);
    if deleted {
        ctx.notify(notify::GENERIC, "del", key);
    }
}

fn zpop_generic(ctx: &mut Ctx<'_>, max: bool) -> CmdResult {
    if ctx.argv.len() > 3 {
        return Err(CmdError::SYNTAX);
    }
    let count = if ctx.argv.len() == 3 {
        positive_arg(ctx, 2, 0, None)?
    } else {
        -1
    };
    let nested = resp3(&ctx.out) && count != -1;
    let key = ctx.arg(1);
    let mut l = ctx.lock1(key);
    let popped = zpop_reply(
        &mut ctx.out,
        &mut l,
        &[key],
        max,
        false,
        count,
        nested,
        false,
    )?;
    drop(l);
    if let Some((k, deleted)) = popped {
        notify_popped(ctx, &k, max, deleted);
    }
    Ok(())
}

fn zpopmin(ctx: &mut Ctx<'_>) -> CmdResult {
    zpop_generic(ctx, false)
}

fn zpopmax(ctx: &mut Ctx<'_>) -> CmdResult {
    zpop_generic(ctx, true)
}

/// ZMPOP's arguments after the command (or BZMPOP's after the timeout): numkeys at
/// `numkeys_idx`, then the keys, MIN|MAX and [COUNT n]. Returns (keys range, max, count).
pub fn parse_zmpop(
    ctx: &Ctx<'_>,
    numkeys_idx: usize,
) -> Result<(usize, usize, bool, i64), CmdError> {
    let numkeys = positive_arg(
        ctx,
        numkeys_idx,
        1,
        Some("numkeys should be greater than 0"),
    )?;
    let argc = ctx.argv.len();
    let where_idx = usize::try_from(numkeys)
        .ok()
        .and_then(|n| n.checked_add(numkeys_idx + 1))
        .filter(|&w| w < argc)
        .ok_or(CmdError::SYNTAX)?;
    let max = match ctx.lower(where_idx).as_slice() {
        b"min" => false,
        b"max" => true,
        _ => return Err(CmdError::SYNTAX),
    };
    let mut count = -1;
    let mut j = where_idx + 1;
    while j < argc {
        if count == -1 && ctx.lower(j) == b"count" && j + 1 < argc {
            j += 1;
            count = positive_arg(ctx, j, 1, Some("count should be greater than 0"))?;
        } else {
            return Err(CmdError::SYNTAX);
        }
        j += 1;
    }
    if count == -1 {
        count = 1;
    }
    Ok((numkeys_idx + 1, where_idx, max, count))
}

fn zmpop(ctx: &mut Ctx<'_>) -> CmdResult {
    let (first, end, max, count) = parse_zmpop(ctx, 1)?;
    let keys: Vec<&[u8]> = ctx.argv[first..end].iter().map(|b| &b[..]).collect();
    let mut l = ctx.lock(&keys);
    let popped = zpop_reply(&mut ctx.out, &mut l, &keys, max, true, count, true, true)?;
    drop(l);
    if let Some((k, deleted)) = popped {
        notify_popped(ctx, &k, max, deleted);
    }
    Ok(())
}

// ---------------------------------------------------------------------------------------
// ZRANDMEMBER

/// Counts beyond this (with repetitions, so never capped by the set's size) are refused
/// rather than building a reply of gigabytes; Redis would try and run out of memory.
const MAX_RANDOM_REPLY: u64 = 1 << 26;

fn zrandmember(ctx: &mut Ctx<'_>) -> CmdResult {
    let argc = ctx.argv.len();
    let key = ctx.arg(1);
    if argc >= 3 {
        let l = parse_i64(ctx.arg(2)).ok_or(CmdError::NOT_INTEGER)?;
        if l == i64::MIN {
            return Err(CmdError::err(
                "value is out of range, value must between -9223372036854775807 and 9223372036854775807",
            ));
        }
        if argc > 4 || (argc == 4 && ctx.lower(3) != b"withscores") {
            return Err(CmdError::SYNTAX);
        }
        let withscores = argc == 4;
        if withscores && !(i64::MIN / 2..=i64::MAX / 2).contains(&l) {
            return Err(CmdError::err("value is out of range"));
        }
        return zrandmember_count(ctx, key, l, withscores);
    }
    let mut rng = Rng::new(ctx);
    let mut lk = ctx.lock1(key);
    let Some(z) = lk.zset_get(key)? else {
        ctx.out.null();
        return Ok(());
    };
    match z.get(rng.below(z.len())) {
        Some((m, _)) => ctx.out.bulk(m),
        None => ctx.out.null(),
    }
    Ok(())
}

fn zrandmember_count(ctx: &mut Ctx<'_>, key: &[u8], l: i64, withscores: bool) -> CmdResult {
    let mut rng = Rng::new(ctx);
    let mut lk = ctx.lock1(key);
    let Some(z) = lk.zset_get(key)? else {
        ctx.out.array(0);
        return Ok(());
    };
    let size = z.len();
    let uniq = l >= 0;
    let count = l.unsigned_abs();
    if count == 0 {
        ctx.out.array(0);
        return Ok(());
    }
    let header = |out: &mut Reply<'_>, n: usize| {
        if withscores && !resp3(out) {
            out.array(n * 2);
        } else {
            out.array(n);
        }
    };
    let item = |out: &mut Reply<'_>, m: &[u8], s: f64| {
        if withscores && resp3(out) {
            out.array(2);
        }
        out.bulk(m);
        if withscores {
            out.double(s);
        }
    };
    if !uniq || count == 1 {
        if count > MAX_RANDOM_REPLY {
            return Err(CmdError::err("value is out of range"));
        }
        let count = count as usize;
        header(&mut ctx.out, count);
        for _ in 0..count {
            if let Some((m, s)) = z.get(rng.below(size)) {
                item(&mut ctx.out, m, s);
            }
        }
        return Ok(());
    }
    let count = usize::try_from(count).unwrap_or(usize::MAX);
    if count >= size {
        // The whole set, iterated from the highest element down as Redis's zuiNext does.
        header(&mut ctx.out, size);
        let out = &mut ctx.out;
        z.for_range(0, size, true, |m, s| item(out, m, s));
        return Ok(());
    }
    // Redis's ZRANDMEMBER_SUB_STRATEGY_MUL (3) is the threshold sample_distinct uses.
    let ranks = super::random::sample_distinct(&mut rng, size, count);
    header(&mut ctx.out, ranks.len());
    for r in ranks {
        if let Some((m, s)) = z.get(r) {
            item(&mut ctx.out, m, s);
        }
    }
    Ok(())
}

// ---------------------------------------------------------------------------------------
// ZUNION ZINTER ZDIFF and their STORE forms, ZINTERCARD

#[derive(Clone, Copy, PartialEq, Eq)]
enum SetOp {
    Union,
    Inter,
    Diff,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Aggregate {
    Sum,
    Min,
    Max,
}

fn aggregate(target: &mut f64, val: f64, how: Aggregate) {
    match how {
        Aggregate::Sum => {
            *target += val;
            if target.is_nan() {
                *target = 0.0;
            }
        }
        Aggregate::Min => {
            if val < *target {
                *target = val;
            }
        }
        Aggregate::Max => {
            if val > *target {
                *target = val;
            }
        }
    }
}

/// One input of a set operation: a sorted set, a plain set (every score 1), or missing.
#[derive(Clone, Copy)]
enum Src<'a> {
    None,
    Z(&'a ZSetValue),
    S(&'a strata_engine::SetValue),
}

impl<'a> Src<'a> {
    fn len(&self) -> usize {
        match self {
            Src::None => 0,
            Src::Z(z) => z.len(),
            Src::S(s) => s.len(),
        }
    }
    fn score(&self, m: &[u8]) -> Option<f64> {
        match self {
            Src::None => None,
            Src::Z(z) => z.score(m),
            Src::S(s) => s.contains(m).then_some(1.0),
        }
    }
    /// Every element (Redis's zuiNext walks sorted sets from the top down).
    fn each(&self, mut f: impl FnMut(&[u8], f64)) {
        match self {
            Src::None => {}
            Src::Z(z) => z.for_range(0, z.len(), true, f),
            Src::S(s) => {
                let mut buf = [0u8; 20];
                for e in s.iter() {
                    f(e.bytes(&mut buf), 1.0);
                }
            }
        }
    }
    fn same(&self, other: &Src<'_>) -> bool {
        match (self, other) {
            (Src::Z(a), Src::Z(b)) => std::ptr::eq(*a, *b),
            (Src::S(a), Src::S(b)) => std::ptr::eq(*a, *b),
            _ => false,
        }
    }
}

/// Redis's zunionInterDiffGenericCommand. `dst`: the STORE forms; `numkeys_idx`: where
/// numkeys is; `card_only`: ZINTERCARD.
fn set_op_generic(
    ctx: &mut Ctx<'_>,
    dst: bool,
    numkeys_idx: usize,
    op: SetOp,
    card_only: bool,
) -> CmdResult {
    let setnum = ctx.int_arg(numkeys_idx)?;
    if setnum < 1 {
        let name = String::from_utf8_lossy(ctx.arg(0)).to_ascii_lowercase();
        return Err(CmdError::Custom(format!(
            "ERR at least 1 input key is needed for '{name}' command"
        )));
    }
    let argc = ctx.argv.len();
    let setnum = usize::try_from(setnum).unwrap_or(usize::MAX);
    if setnum > argc - (numkeys_idx + 1) {
        return Err(CmdError::SYNTAX);
    }
    let first = numkeys_idx + 1;
    let src_keys: Vec<&[u8]> = ctx.argv[first..first + setnum]
        .iter()
        .map(|b| &b[..])
        .collect();
    let dst_key = if dst { Some(ctx.arg(1)) } else { None };
    let mut lock_keys = src_keys.clone();
    if let Some(d) = dst_key {
        lock_keys.push(d);
    }
    let mut l = ctx.lock(&lock_keys);
    // Lookups first (WRONGTYPE before option errors, as Redis).
    let values = l.values_for_read(&src_keys)?;
    let mut srcs: Vec<(Src<'_>, f64)> = Vec::with_capacity(setnum);
    for v in &values {
        let s = match v {
            None => Src::None,
            Some(Value::ZSet(z)) => Src::Z(z),
            Some(Value::Set(s)) => Src::S(s),
            Some(_) => return Err(CmdError::WRONG_TYPE),
        };
        srcs.push((s, 1.0));
    }
    let mut how = Aggregate::Sum;
    let mut withscores = false;
    let mut limit: i64 = 0;
    let mut j = first + setnum;
    while j < argc {
        let remaining = argc - j;
        let opt = ctx.lower(j);
        if op != SetOp::Diff && !card_only && remaining > setnum && opt == b"weights" {
            j += 1;
            for src in srcs.iter_mut() {
                src.1 = parse_score(ctx.arg(j))
                    .ok_or(CmdError::Static("ERR weight value is not a float"))?;
                j += 1;
            }
        } else if op != SetOp::Diff && !card_only && remaining >= 2 && opt == b"aggregate" {
            how = match ctx.lower(j + 1).as_slice() {
                b"sum" => Aggregate::Sum,
                b"min" => Aggregate::Min,
                b"max" => Aggregate::Max,
                _ => return Err(CmdError::SYNTAX),
            };
            j += 2;
        } else if remaining >= 1 && !dst && !card_only && opt == b"withscores" {
            withscores = true;
            j += 1;
        } else if card_only && remaining >= 2 && opt == b"limit" {
            limit = positive_arg(ctx, j + 1, 0, Some("LIMIT can't be negative"))?;
            j += 2;
        } else {
            return Err(CmdError::SYNTAX);
        }
    }
    if op != SetOp::Diff {
        // Smallest first (a stable sort, as glibc's qsort is a merge sort here).
        srcs.sort_by_key(|(s, _)| s.len());
    }
    let mut result: Vec<(Vec<u8>, f64)> = Vec::new();
    let mut cardinality: u64 = 0;
    match op {
        SetOp::Inter => {
            let (s0, w0) = srcs[0];
            if s0.len() > 0 {
                let mut stop = false;
                s0.each(|m, sc| {
                    if stop {
                        return;
                    }
                    let mut score = w0 * sc;
                    if score.is_nan() {
                        score = 0.0;
                    }
                    for (sj, wj) in &srcs[1..] {
                        let value = if sj.same(&s0) {
                            Some(sc * wj)
                        } else {
                            sj.score(m).map(|v| v * wj)
                        };
                        match value {
                            Some(v) => aggregate(&mut score, v, how),
                            None => return,
                        }
                    }
                    if card_only {
                        cardinality += 1;
                        if limit > 0 && cardinality >= limit as u64 {
                            stop = true;
                        }
                    } else {
                        result.push((m.to_vec(), score));
                    }
                });
            }
        }
        SetOp::Union => {
            let mut acc: std::collections::HashMap<Vec<u8>, f64, foldhash::fast::RandomState> =
                Default::default();
            for (s, w) in &srcs {
                s.each(|m, sc| {
                    let mut score = w * sc;
                    if score.is_nan() {
                        score = 0.0;
                    }
                    match acc.get_mut(m) {
                        Some(t) => aggregate(t, score, how),
                        None => {
                            acc.insert(m.to_vec(), score);
                        }
                    }
                });
            }
            result = acc.into_iter().collect();
        }
        SetOp::Diff => {
            let (s0, _) = srcs[0];
            s0.each(|m, sc| {
                let exists = srcs[1..]
                    .iter()
                    .any(|(sj, _)| sj.same(&s0) || sj.score(m).is_some());
                if !exists {
                    result.push((m.to_vec(), sc));
                }
            });
        }
    }
    drop(values);
    if card_only {
        ctx.out.int(cardinality as i64);
        return Ok(());
    }
    match dst_key {
        Some(d) => {
            let z = ZSetValue::from_members(result, &ctx.keyspace().encodings);
            let n = z.len();
            // The one place the STORE forms write.
            let removed = if n > 0 {
                l.set_value(d, Value::ZSet(Box::new(z)), Ttl::Clear);
                false
            } else {
                l.remove(d)
            };
            drop(l);
            if n > 0 {
                ctx.signal_key_ready(d);
                let event = match op {
                    SetOp::Union => "zunionstore",
                    SetOp::Inter => "zinterstore",
                    SetOp::Diff => "zdiffstore",
                };
                ctx.notify(notify::ZSET, event, d);
            } else if removed {
                ctx.notify(notify::GENERIC, "del", d);
            }
            ctx.out.int(n as i64);
        }
        None => {
            // Redis replies from its skiplist, so a -0 score stays -0 (a listpack would not).
            result.sort_by(|a, b| {
                a.1.partial_cmp(&b.1)
                    .unwrap_or(std::cmp::Ordering::Equal)
                    .then_with(|| a.0.cmp(&b.0))
            });
            let items: Vec<(&[u8], f64)> = result.iter().map(|(m, s)| (&m[..], *s)).collect();
            reply_pairs(&mut ctx.out, &items, withscores);
        }
    }
    Ok(())
}

fn zunion(ctx: &mut Ctx<'_>) -> CmdResult {
    set_op_generic(ctx, false, 1, SetOp::Union, false)
}

fn zinter(ctx: &mut Ctx<'_>) -> CmdResult {
    set_op_generic(ctx, false, 1, SetOp::Inter, false)
}

fn zdiff(ctx: &mut Ctx<'_>) -> CmdResult {
    set_op_generic(ctx, false, 1, SetOp::Diff, false)
}

fn zunionstore(ctx: &mut Ctx<'_>) -> CmdResult {
    set_op_generic(ctx, true, 2, SetOp::Union, false)
}

fn zinterstore(ctx: &mut Ctx<'_>) -> CmdResult {
    set_op_generic(ctx, true, 2, SetOp::Inter, false)
}

fn zdiffstore(ctx: &mut Ctx<'_>) -> CmdResult {
    set_op_generic(ctx, true, 2, SetOp::Diff, false)
}

fn zintercard(ctx: &mut Ctx<'_>) -> CmdResult {
    set_op_generic(ctx, false, 1, SetOp::Inter, true)
}

// ---------------------------------------------------------------------------------------
// ZSCAN

fn zscan(ctx: &mut Ctx<'_>) -> CmdResult {
    let cursor = super::scan::parse_cursor(ctx.arg(2))?;
    let key = ctx.arg(1);
    let mut l = ctx.lock1(key);
    let Some(z) = l.zset_get(key)? else {
        ctx.out.array(2);
        ctx.out.bulk(b"0");
        ctx.out.array(0);
        return Ok(());
    };
    let opts = super::scan::ScanOptions::parse(ctx, 3, false)?;
    let mut found: Vec<(&[u8], f64)> = Vec::new();
    let next = z.scan(cursor, opts.count, |m, s| {
        if opts.matches(m) {
            found.push((m, s));
        }
    });
    ctx.out.array(2);
    ctx.out.bulk(next.to_string().as_bytes());
    ctx.out.array(found.len() * 2);
    for (m, s) in &found {
        ctx.out.bulk(m);
        ctx.out.bulk(d2string(*s).as_bytes());
    }
    Ok(())
}
