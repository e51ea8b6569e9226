//! The set commands: SADD SREM SMEMBERS SISMEMBER SMISMEMBER SCARD SPOP SRANDMEMBER SMOVE
//! SINTER SINTERCARD SUNION SDIFF SINTERSTORE SUNIONSTORE SDIFFSTORE SSCAN. Semantics follow
//! Redis 7.0's t_set.c, including which algorithm builds a result (it decides the result's
//! encoding, and an intset's ascending order is visible in replies); the value type
//! (intset / hashtable forms) is `strata_engine::SetValue`.
//!
//! Each write command changes the keyspace in one place (between its lock and its reply)
//! and then emits its keyspace events where Redis 7.0's t_set.c calls notifyKeyspaceEvent:
//! sadd (when a member is added), srem (then del when the set is emptied), spop (then del
//! when emptied; SPOP with a count emits one spop), SMOVE's srem on the source (del when
//! emptied) then sadd on the destination (when the member is new there), and the *STORE
//! commands' sinterstore / sunionstore / sdiffstore, or del when the result is empty and
//! the destination existed.

use super::random::{random_count_arg, sample_distinct, Rng, RANDOM_REPLY_CAP};
use super::scan;
use crate::exec::command::{flags, CmdError, CmdResult, Command, Keys};
use crate::exec::ctx::Ctx;
use crate::services::notify;
use bytes::Bytes;
use strata_engine::{Kind, SetValue, Ttl, Value};

/// Writes a set element (`SetValue`'s iterator item) as a bulk string.
macro_rules! bulk_elem {
    ($ctx:expr, $e:expr) => {{
        let mut buf = [0u8; 20];
        $ctx.out.bulk($e.bytes(&mut buf));
    }};
}

const KEY1: Keys = Keys::Range {
    first: 1,
    last: 1,
    step: 1,
};
const ALL_KEYS: Keys = Keys::Range {
    first: 1,
    last: -1,
    step: 1,
};

pub const COMMANDS: &[Command] = &[
    Command {
    name: "sadd",
    arity: -3,
    flags: flags::WRITE | flags::DENYOOM | flags::FAST,
    keys: KEY1,
    group: "set",
    summary: "Add one or more members to a set",
    since: "1.0.0",
    complexity: "O(1) for each element added, so O(N) to add N elements when the command is called with multiple arguments.",
    handler: sadd,
    ..Command::DEFAULT
},
    Command {
    name: "srem",
    arity: -3,
    flags: flags::WRITE | flags::FAST,
    keys: KEY1,
    group: "set",
    summary: "Remove one or more members from a set",
    since: "1.0.0",
    complexity: "O(N) where N is the number of members to be removed.",
    handler: srem,
    ..Command::DEFAULT
},
    Command {
    name: "smembers",
    arity: 2,
    flags: flags::READONLY,
    keys: KEY1,
    group: "set",
    summary: "Get all the members in a set",
    since: "1.0.0",
    complexity: "O(N) where N is the set cardinality.",
    handler: smembers,
    ..Command::DEFAULT
},
    Command {
    name: "sismember",
    arity: 3,
    flags: flags::READONLY | flags::FAST,
    keys: KEY1,
    group: "set",
    summary: "Determine if a given value is a member of a set",
    since: "1.0.0",
    complexity: "O(1)",
    handler: sismember,
    ..Command::DEFAULT
},
    Command {
    name: "smismember",
    arity: -3,
    flags: flags::READONLY | flags::FAST,
    keys: KEY1,
    group: "set",
    summary: "Returns the membership associated with the given elements for a set",
    since: "6.2.0",
    complexity: "O(N) where N is the number of elements being checked for membership",
    handler: smismember,
    ..Command::DEFAULT
},
    Command {
    name: "scard",
    arity: 2,
    flags: flags::READONLY | flags::FAST,
    keys: KEY1,
    group: "set",
    summary: "Get the number of members in a set",
    since: "1.0.0",
    complexity: "O(1)",
    handler: scard,
    ..Command::DEFAULT
},
    Command {
    name: "spop",
    arity: -2,
    flags: flags::WRITE | flags::FAST,
    keys: KEY1,
    group: "set",
    summary: "Remove and return one or multiple random members from a set",
    since: "1.0.0",
    complexity: "Without the count argument O(1), otherwise O(N) where N is the value of the passed count.",
    handler: spop,
    ..Command::DEFAULT
},
    Command {
    name: "srandmember",
    arity: -2,
    flags: flags::READONLY,
    keys: KEY1,
    group: "set",
    summary: "Get one or multiple random members from a set",
    since: "1.0.0",
    complexity: "Without the count argument O(1), otherwise O(N) where N is the absolute value of the passed count.",
    handler: srandmember,
    ..Command::DEFAULT
},
    Command {
    name: "smove",
    arity: 4,
    flags: flags::WRITE | flags::FAST,
    keys: Keys::Range {
            first: 1,
            last: 2,
            step: 1,
        },
    group: "set",
    summary: "Move a member from one set to another",
    since: "1.0.0",
    complexity: "O(1)",
    handler: smove,
    ..Command::DEFAULT
},
    Command {
    name: "sinter",
    arity: -2,
    flags: flags::READONLY,
    keys: ALL_KEYS,
    group: "set",
    summary: "Intersect multiple sets",
    since: "1.0.0",
    complexity: "O(N*M) worst case where N is the cardinality of the smallest set and M is the number of sets.",
    handler: sinter,
    ..Command::DEFAULT
},
    Command {
    name: "sintercard",
    arity: -3,
    flags: flags::READONLY | flags::MOVABLEKEYS,
    keys: Keys::Custom(numkeys_at_1),
    group: "set",
    summary: "Intersect multiple sets and return the cardinality of the result",
    since: "7.0.0",
    complexity: "O(N*M) worst case where N is the cardinality of the smallest set and M is the number of sets.",
    handler: sintercard,
    ..Command::DEFAULT
},
    Command {
    name: "sunion",
    arity: -2,
    flags: flags::READONLY,
    keys: ALL_KEYS,
    group: "set",
    summary: "Add multiple sets",
    since: "1.0.0",
    complexity: "O(N) where N is the total number of elements in all given sets.",
    handler: sunion,
    ..Command::DEFAULT
},
    Command {
    name: "sdiff",
    arity: -2,
    flags: flags::READONLY,
    keys: ALL_KEYS,
    group: "set",
    summary: "Subtract multiple sets",
    since: "1.0.0",
    complexity: "O(N) where N is the total number of elements in all given sets.",
    handler: sdiff,
    ..Command::DEFAULT
},
    Command {
    name: "sinterstore",
    arity: -3,
    flags: flags::WRITE | flags::DENYOOM,
    keys: ALL_KEYS,
    group: "set",
    summary: "Intersect multiple sets and store the resulting set in a key",
    since: "1.0.0",
    complexity: "O(N*M) worst case where N is the cardinality of the smallest set and M is the number of sets.",
    handler: sinterstore,
    ..Command::DEFAULT
},
    Command {
    name: "sunionstore",
    arity: -3,
    flags: flags::WRITE | flags::DENYOOM,
    keys: ALL_KEYS,
    group: "set",
    summary: "Add multiple sets and store the resulting set in a key",
    since: "1.0.0",
    complexity: "O(N) where N is the total number of elements in all given sets.",
    handler: sunionstore,
    ..Command::DEFAULT
},
    Command {
    name: "sdiffstore",
    arity: -3,
    flags: flags::WRITE | flags::DENYOOM,
    keys: ALL_KEYS,
    group: "set",
    summary: "Subtract multiple sets and store the resulting set in a key",
    since: "1.0.0",
    complexity: "O(N) where N is the total number of elements in all given sets.",
    handler: sdiffstore,
    ..Command::DEFAULT
},
    Command {
    name: "sscan",
    arity: -3,
    flags: flags::READONLY,
    keys: KEY1,
    group: "set",
    summary: "Incrementally iterate Set elements",
    since: "2.8.0",
    complexity: "O(1) for every call. O(N) for a complete iteration, including enough command calls for the cursor to return back to 0. N is the number of elements inside the collection..",
    handler: sscan,
    ..Command::DEFAULT
},
];

/// SINTERCARD's keys: `numkeys` at argv[1], the keys after it (none when malformed).
fn numkeys_at_1(argv: &[Bytes]) -> Vec<usize> {
    let n = argv
        .get(1)
        .and_then(|a| crate::exec::command::parse_i64(a))
        .and_then(|n| usize::try_from(n).ok())
        .unwrap_or(0);
    if n == 0 || n > argv.len().saturating_sub(2) {
        return Vec::new();
    }
    (2..2 + n).collect()
}

// ---------------------------------------------------------------------------------------
// SADD SREM SMOVE

fn sadd(ctx: &mut Ctx<'_>) -> CmdResult {
    let key = ctx.arg(1);
    let members = &ctx.argv[2..];
    let enc = &ctx.keyspace().encodings;
    let mut l = ctx.lock1(key);
    let s = l.set_mut_or_create(key, &members[0])?;
    let added = members.iter().filter(|m| s.add(m, enc)).count();
    drop(l);
    if added > 0 {
        ctx.notify(notify::SET, "sadd", key);
    }
    ctx.out.int(added as i64);
    Ok(())
}

fn srem(ctx: &mut Ctx<'_>) -> CmdResult {
    super::remove_members(
        ctx,
        strata_engine::Locked::set_mut,
        SetValue::remove,
        SetValue::is_empty,
        notify::SET,
        "srem",
    )
}

/// SMOVE source destination member
fn smove(ctx: &mut Ctx<'_>) -> CmdResult {
    let (src, dst, member) = (ctx.arg(1), ctx.arg(2), ctx.arg(3));
    let enc = &ctx.keyspace().encodings;
    let mut l = ctx.lock(&[src, dst]);
    let kind = |l: &mut strata_engine::Locked<'_>, k: &[u8]| l.peek(k).map(|e| e.kind());
    let Some(src_kind) = kind(&mut l, src) else {
        drop(l);
        ctx.out.int(0);
        return Ok(());
    };
    let dst_kind = kind(&mut l, dst);
    if src_kind != Kind::Set || dst_kind.is_some_and(|k| k != Kind::Set) {
        return Err(CmdError::WRONG_TYPE);
    }
    if src == dst {
        // A no-op (and no event), as in Redis.
        let found = l.set_mut(src)?.is_some_and(|s| s.contains(member));
        drop(l);
        ctx.out.int(found as i64);
        return Ok(());
    }
    let (removed, src_deleted) = match l.set_mut(src)? {
        Some(s) => {
            let removed = s.remove(member);
            (removed, removed && s.is_empty() && l.remove(src))
        }
        None => (false, false),
    };
    let added = removed && l.set_mut_or_create(dst, member)?.add(member, enc);
    drop(l);
    if removed {
        ctx.notify(notify::SET, "srem", src);
        if src_deleted {
            ctx.notify(notify::GENERIC, "del", src);
        }
        if added {
            ctx.notify(notify::SET, "sadd", dst);
        }
    }
    ctx.out.int(removed as i64);
    Ok(())
}

// ---------------------------------------------------------------------------------------
// SISMEMBER SMISMEMBER SCARD

fn sismember(ctx: &mut Ctx<'_>) -> CmdResult {
    let (key, member) = (ctx.arg(1), ctx.arg(2));
    let mut l = ctx.lock1(key);
    let found = l.get_set(key)?.is_some_and(|s| s.contains(member));
    drop(l);
    ctx.out.int(found as i64);
    Ok(())
}

fn smismember(ctx: &mut Ctx<'_>) -> CmdResult {
    let key = ctx.arg(1);
    let members = &ctx.argv[2..];
    let mut l = ctx.lock1(key);
    let s = l.get_set(key)?;
    ctx.out.array(members.len());
    for m in members {
        ctx.out.int(s.is_some_and(|s| s.contains(m)) as i64);
    }
    Ok(())
}

fn scard(ctx: &mut Ctx<'_>) -> CmdResult {
    let key = ctx.arg(1);
    let mut l = ctx.lock1(key);
    let n = l.get_set(key)?.map_or(0, SetValue::len);
    drop(l);
    ctx.out.int(n as i64);
    Ok(())
}

// ---------------------------------------------------------------------------------------
// SPOP SRANDMEMBER

/// Redis's SPOP_MOVE_STRATEGY_MUL.
const SPOP_MOVE_STRATEGY_MUL: usize = 5;

/// SPOP key [count]
fn spop(ctx: &mut Ctx<'_>) -> CmdResult {
    match ctx.argv.len() {
        3 => return spop_count(ctx),
        n if n > 3 => return Err(CmdError::SYNTAX),
        _ => {}
    }
    let key = ctx.arg(1);
    let mut rng = Rng::new(ctx);
    let mut l = ctx.lock1(key);
    let Some(s) = l.set_mut(key)? else {
        drop(l);
        ctx.out.null();
        return Ok(());
    };
    let popped = s.remove_nth(rng.below(s.len()));
    let removed = s.is_empty() && l.remove(key);
    drop(l);
    // The journal gets which member went, not "pop one at random".
    match &popped {
        Some(m) => ctx.rewrite1(crate::exec::effects::cmd(&[b"SREM", key, m])),
        None => ctx.no_effect(),
    }
    ctx.notify(notify::SET, "spop", key);
    if removed {
        ctx.notify(notify::GENERIC, "del", key);
    }
    match popped {
        Some(m) => ctx.out.bulk(&m),
        None => ctx.out.null(),
    }
    Ok(())
}

fn spop_count(ctx: &mut Ctx<'_>) -> CmdResult {
    // Redis's getPositiveLongFromObjectOrReply: one message for any failure.
    let Some(count) =
        crate::exec::command::parse_i64(ctx.arg(2)).and_then(|n| usize::try_from(n).ok())
    else {
        return Err(CmdError::err("value is out of range, must be positive"));
    };
    let key = ctx.arg(1);
    let enc = &ctx.keyspace().encodings;
    let mut rng = Rng::new(ctx);
    let mut l = ctx.lock1(key);
    let Some(s) = l.set_mut(key)? else {
        drop(l);
        ctx.out.set(0);
        return Ok(());
    };
    if count == 0 {
        drop(l);
        ctx.out.set(0);
        return Ok(());
    }
    let size = s.len();
    // CASE 1: everything. Redis answers through SUNION of the one set (whose result
    // decides the order) and deletes the key.
    if count >= size {
        let all = union_of(std::iter::once(&*s), enc);
        l.remove(key);
        drop(l);
        ctx.rewrite1(crate::exec::effects::cmd(&[b"DEL", key]));
        ctx.notify(notify::SET, "spop", key);
        ctx.notify(notify::GENERIC, "del", key);
        ctx.out.set(all.len());
        for e in all.iter() {
            bulk_elem!(ctx, e);
        }
        return Ok(());
    }
    ctx.out.set(count);
    let remaining = size - count;
    // The journal gets the members that went: SREM key m1 m2 ...
    let mut srem = crate::exec::effects::cmd(&[b"SREM", key]);
    if remaining * SPOP_MOVE_STRATEGY_MUL > count {
        // CASE 2: pop `count` random members one by one.
        for _ in 0..count {
            if let Some(m) = s.remove_nth(rng.below(s.len())) {
                ctx.out.bulk(&m);
                srem.push(m.into());
            }
        }
    } else {
        // CASE 3: move the `remaining` members that stay into a new set (which decides
        // the encoding the key ends with), and reply with what is left in the old one.
        let mut kept: Option<SetValue> = None;
        for _ in 0..remaining {
            if let Some(m) = s.remove_nth(rng.below(s.len())) {
                kept.get_or_insert_with(|| SetValue::new_for(&m))
                    .add(&m, enc);
            }
        }
        for e in s.iter() {
            bulk_elem!(ctx, e);
            srem.push(e.to_vec().into());
        }
        if let Some(kept) = kept {
            // In place: the key keeps its expiry, as Redis's dbOverwrite.
            *s = kept;
        }
    }
    drop(l);
    ctx.rewrite1(srem);
    // Redis emits it before popping (the reply above is written already; the event
    // reaches the client itself, if subscribed, ahead of it anyway).
    ctx.notify(notify::SET, "spop", key);
    Ok(())
}

/// SRANDMEMBER key [count]
fn srandmember(ctx: &mut Ctx<'_>) -> CmdResult {
    match ctx.argv.len() {
        3 => return srandmember_count(ctx),
        n if n > 3 => return Err(CmdError::SYNTAX),
        _ => {}
    }
    let key = ctx.arg(1);
    let mut rng = Rng::new(ctx);
    let mut l = ctx.lock1(key);
    match l.get_set(key)?.and_then(|s| s.nth(rng.below(s.len()))) {
        Some(e) => bulk_elem!(ctx, e),
        None => ctx.out.null(),
    }
    Ok(())
}

fn srandmember_count(ctx: &mut Ctx<'_>) -> CmdResult {
    let n = random_count_arg(ctx, 2)?;
    let key = ctx.arg(1);
    let mut rng = Rng::new(ctx);
    let mut l = ctx.lock1(key);
    let Some(s) = l.get_set(key)? else {
        ctx.out.array(0);
        return Ok(());
    };
    let (uniq, count) = (n >= 0, n.unsigned_abs());
    if count == 0 {
        ctx.out.array(0);
        return Ok(());
    }
    let size = s.len();
    // CASE 1: repeats allowed (or one pick): independent uniform picks.
    if !uniq || count == 1 {
        ctx.out.array(usize::try_from(count).unwrap_or(usize::MAX));
        let start = ctx.out.buf.len();
        for _ in 0..count {
            if let Some(e) = s.nth(rng.below(size)) {
                bulk_elem!(ctx, e);
            }
            if ctx.out.buf.len() - start > RANDOM_REPLY_CAP {
                ctx.client.close_after_reply = true;
                break;
            }
        }
        return Ok(());
    }
    // CASE 2: the whole set, in storage order.
    let count = usize::try_from(count).unwrap_or(usize::MAX);
    if count >= size {
        ctx.out.array(size);
        for e in s.iter() {
            bulk_elem!(ctx, e);
        }
        return Ok(());
    }
    // CASES 3 and 4: distinct members.
    ctx.out.array(count);
    for i in sample_distinct(&mut rng, size, count) {
        if let Some(e) = s.nth(i) {
            bulk_elem!(ctx, e);
        }
    }
    Ok(())
}

// ---------------------------------------------------------------------------------------
// SINTER SMEMBERS SINTERCARD SINTERSTORE

fn smembers(ctx: &mut Ctx<'_>) -> CmdResult {
    sinter_generic(ctx, 1, 2, None, None)
}

fn sinter(ctx: &mut Ctx<'_>) -> CmdResult {
    sinter_generic(ctx, 1, ctx.argv.len(), None, None)
}

fn sinterstore(ctx: &mut Ctx<'_>) -> CmdResult {
    sinter_generic(ctx, 2, ctx.argv.len(), Some(ctx.arg(1)), None)
}

/// SINTERCARD numkeys key [key ...] [LIMIT limit]
fn sintercard(ctx: &mut Ctx<'_>) -> CmdResult {
    // Redis's getRangeLongFromObjectOrReply with a message: the message for any failure.
    let numkeys = match crate::exec::command::parse_i64(ctx.arg(1)) {
        Some(n) if n >= 1 => n,
        _ => return Err(CmdError::err("numkeys should be greater than 0")),
    };
    let argc = ctx.argv.len();
    let numkeys = match usize::try_from(numkeys) {
        Ok(n) if n <= argc - 2 => n,
        _ => {
            return Err(CmdError::err(
                "Number of keys can't be greater than number of args",
            ))
        }
    };
    let mut limit = 0usize;
    let mut j = 2 + numkeys;
    while j < argc {
        let more = argc - 1 - j;
        if ctx.lower(j) == b"limit" && more > 0 {
            j += 1;
            limit = crate::exec::command::parse_i64(ctx.arg(j))
                .and_then(|n| usize::try_from(n).ok())
                .ok_or_else(|| CmdError::err("LIMIT can't be negative"))?;
        } else {
            return Err(CmdError::SYNTAX);
        }
        j += 1;
    }
    sinter_generic(ctx, 2, 2 + numkeys, None, Some(limit))
}

/// Redis's sinterGenericCommand over the keys `argv[from..to]`: stored into `dst`, counted
/// (`card`: Some(limit), 0 for none), or replied as a set.
fn sinter_generic(
    ctx: &mut Ctx<'_>,
    from: usize,
    to: usize,
    dst: Option<&[u8]>,
    card: Option<usize>,
) -> CmdResult {
    let keys = &ctx.argv[from..to];
    let enc = &ctx.keyspace().encodings;
    let mut lock_keys: Vec<&[u8]> = keys.iter().map(|k| &k[..]).collect();
    lock_keys.extend(dst);
    let mut l = ctx.lock(&lock_keys);
    let sets = l.get_sets(keys)?;
    let mut sets: Vec<&SetValue> = match sets.into_iter().collect::<Option<Vec<_>>>() {
        Some(s) => s,
        None => {
            // An empty (missing) set empties the intersection.
            if let Some(dst) = dst {
                let removed = l.remove(dst);
                drop(l);
                notify_store(ctx, dst, "sinterstore", 0, removed);
                ctx.out.int(0);
            } else if card.is_some() {
                drop(l);
                ctx.out.int(0);
            } else {
                drop(l);
                ctx.out.set(0);
            }
            return Ok(());
        }
    };
    // Smallest first (a stable sort, like glibc's qsort on small arrays): its order is
    // the reply's order.
    sets.sort_by_key(|s| s.len());
    let first = sets[0];
    let others = &sets[1..];
    let in_all = |e| {
        others
            .iter()
            .all(|o| std::ptr::eq(*o, first) || o.contains_elem(e))
    };
    if let Some(limit) = card {
        let mut n = 0usize;
        for e in first.iter() {
            if in_all(e) {
                n += 1;
                if limit != 0 && n >= limit {
                    break;
                }
            }
        }
        drop(l);
        ctx.out.int(n as i64);
        return Ok(());
    }
    if let Some(dst) = dst {
        let mut result = SetValue::default();
        for e in first.iter().filter(|&e| in_all(e)) {
            let mut buf = [0u8; 20];
            result.add(e.bytes(&mut buf), enc);
        }
        let (n, removed) = store(&mut l, dst, result);
        drop(l);
        notify_store(ctx, dst, "sinterstore", n, removed);
        ctx.out.int(n as i64);
        return Ok(());
    }
    let found: Vec<_> = first.iter().filter(|&e| in_all(e)).collect();
    ctx.out.set(found.len());
    for e in found {
        bulk_elem!(ctx, e);
    }
    Ok(())
}

/// Stores a *STORE result (replacing whatever `dst` held, expiry included) or deletes
/// `dst` when the result is empty: (the result's size, which is the reply, and whether
/// `dst` was deleted).
fn store(l: &mut strata_engine::Locked<'_>, dst: &[u8], result: SetValue) -> (usize, bool) {
    let n = result.len();
    if n > 0 {
        l.set_value(dst, Value::Set(result), Ttl::Clear);
        (n, false)
    } else {
        (0, l.remove(dst))
    }
}

/// A *STORE's event (lock released): `event` when it stored `n > 0` members, `del` when
/// an empty result deleted the destination.
fn notify_store(ctx: &mut Ctx<'_>, dst: &[u8], event: &str, n: usize, removed: bool) {
    if n > 0 {
        ctx.notify(notify::SET, event, dst);
    } else if removed {
        ctx.notify(notify::GENERIC, "del", dst);
    }
}

// ---------------------------------------------------------------------------------------
// SUNION SDIFF SUNIONSTORE SDIFFSTORE

#[derive(Clone, Copy, PartialEq, Eq)]
enum Op {
    Union,
    Diff,
}

fn sunion(ctx: &mut Ctx<'_>) -> CmdResult {
    sunion_diff(ctx, 1, None, Op::Union)
}

fn sdiff(ctx: &mut Ctx<'_>) -> CmdResult {
    sunion_diff(ctx, 1, None, Op::Diff)
}

fn sunionstore(ctx: &mut Ctx<'_>) -> CmdResult {
    sunion_diff(ctx, 2, Some(ctx.arg(1)), Op::Union)
}

fn sdiffstore(ctx: &mut Ctx<'_>) -> CmdResult {
    sunion_diff(ctx, 2, Some(ctx.arg(1)), Op::Diff)
}

/// The union of `sets`, built as Redis builds it: into a new intset that converts as
/// members arrive.
fn union_of<'s>(
    sets: impl Iterator<Item = &'s SetValue>,
    enc: &strata_engine::Encodings,
) -> SetValue {
    let mut out = SetValue::default();
    for s in sets {
        for e in s.iter() {
            let mut buf = [0u8; 20];
            out.add(e.bytes(&mut buf), enc);
        }
    }
    out
}

/// Redis's sunionDiffGenericCommand over the keys `argv[from..]`.
fn sunion_diff(ctx: &mut Ctx<'_>, from: usize, dst: Option<&[u8]>, op: Op) -> CmdResult {
    let keys = &ctx.argv[from..];
    let enc = &ctx.keyspace().encodings;
    let mut lock_keys: Vec<&[u8]> = keys.iter().map(|k| &k[..]).collect();
    lock_keys.extend(dst);
    let mut l = ctx.lock(&lock_keys);
    let sets = l.get_sets(keys)?;
    let result = match (op, sets[0]) {
        (Op::Union, _) => union_of(sets.iter().flatten().copied(), enc),
        (Op::Diff, None) => SetValue::default(),
        (Op::Diff, Some(first)) => {
            let others: Vec<&SetValue> = sets[1..].iter().flatten().copied().collect();
            if others.iter().any(|o| std::ptr::eq(*o, first)) {
                // The first set minus itself.
                SetValue::default()
            } else {
                // Redis's choice of algorithm (it decides the result's encoding).
                let algo_one = (first.len() * (others.len() + 1)) / 2;
                let algo_two: usize = first.len() + others.iter().map(|o| o.len()).sum::<usize>();
                let mut out = SetValue::default();
                if algo_one <= algo_two {
                    // 1: each member of the first set that no other set has.
                    for e in first.iter() {
                        if !others.iter().any(|o| o.contains_elem(e)) {
                            let mut buf = [0u8; 20];
                            out.add(e.bytes(&mut buf), enc);
                        }
                    }
                } else {
                    // 2: all of the first set, then remove the others' members.
                    for e in first.iter() {
                        let mut buf = [0u8; 20];
                        out.add(e.bytes(&mut buf), enc);
                    }
                    for o in &others {
                        if out.is_empty() {
                            break;
                        }
                        for e in o.iter() {
                            let mut buf = [0u8; 20];
                            out.remove(e.bytes(&mut buf));
                        }
                    }
                }
                out
            }
        }
    };
    if let Some(dst) = dst {
        let (n, removed) = store(&mut l, dst, result);
        drop(l);
        let event = match op {
            Op::Union => "sunionstore",
            Op::Diff => "sdiffstore",
        };
        notify_store(ctx, dst, event, n, removed);
        ctx.out.int(n as i64);
        return Ok(());
    }
    drop(l);
    ctx.out.set(result.len());
    for e in result.iter() {
        bulk_elem!(ctx, e);
    }
    Ok(())
}

// ---------------------------------------------------------------------------------------
// SSCAN

/// SSCAN key cursor [MATCH pattern] [COUNT count]
fn sscan(ctx: &mut Ctx<'_>) -> CmdResult {
    let cursor = scan::parse_cursor(ctx.arg(2))?;
    let key = ctx.arg(1);
    let mut l = ctx.lock1(key);
    let Some(s) = l.get_set(key)? else {
        drop(l);
        scan::empty_scan(ctx);
        return Ok(());
    };
    let opts = scan::ScanOptions::parse(ctx, 3, false)?;
    let count = opts.count;
    let (next, members) = s.scan(cursor, count);
    let mut out: Vec<Vec<u8>> = Vec::with_capacity(members.len());
    for e in members {
        let mut buf = [0u8; 20];
        let b = e.bytes(&mut buf);
        if opts.matches(b) {
            out.push(b.to_vec());
        }
    }
    drop(l);
    ctx.out.array(2);
    ctx.out.bulk(next.to_string().as_bytes());
    ctx.out.array(out.len());
    for m in &out {
        ctx.out.bulk(m);
    }
    Ok(())
}
