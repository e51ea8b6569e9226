//! Set algebra: SINTER SMEMBERS SINTERCARD SINTERSTORE, SUNION SDIFF SUNIONSTORE
//! SDIFFSTORE, and how a *STORE writes its result.

use super::union_of;
use crate::exec::command::{CmdError, CmdResult};
use crate::exec::ctx::Ctx;
use crate::services::notify;
use strata_engine::{SetValue, Ttl, Value};

pub(super) fn smembers(ctx: &mut Ctx<'_>) -> CmdResult {
    sinter_generic(ctx, 1, 2, None, None)
}

pub(super) fn sinter(ctx: &mut Ctx<'_>) -> CmdResult {
    sinter_generic(ctx, 1, ctx.argv.len(), None, None)
}

pub(super) fn sinterstore(ctx: &mut Ctx<'_>) -> CmdResult {
    sinter_generic(ctx, 2, ctx.argv.len(), Some(ctx.arg(1)), None)
}

/// SINTERCARD numkeys key [key ...] [LIMIT limit]
pub(super) fn sintercard(ctx: &mut Ctx<'_>) -> CmdResult {
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

/// A set *STORE's events (lock released): see `commands::stored`.
fn notify_store(ctx: &mut Ctx<'_>, dst: &[u8], event: &str, n: usize, removed: bool) {
    crate::commands::stored(ctx, dst, (notify::SET, event), n, removed, false);
}

// ---------------------------------------------------------------------------------------
// SUNION SDIFF SUNIONSTORE SDIFFSTORE

#[derive(Clone, Copy, PartialEq, Eq)]
enum Op {
    Union,
    Diff,
}

pub(super) fn sunion(ctx: &mut Ctx<'_>) -> CmdResult {
    sunion_diff(ctx, 1, None, Op::Union)
}

pub(super) fn sdiff(ctx: &mut Ctx<'_>) -> CmdResult {
    sunion_diff(ctx, 1, None, Op::Diff)
}

pub(super) fn sunionstore(ctx: &mut Ctx<'_>) -> CmdResult {
    sunion_diff(ctx, 2, Some(ctx.arg(1)), Op::Union)
}

pub(super) fn sdiffstore(ctx: &mut Ctx<'_>) -> CmdResult {
    sunion_diff(ctx, 2, Some(ctx.arg(1)), Op::Diff)
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
