//! ZADD, ZINCRBY and ZREM: adding, rescoring and removing members.

use super::spec::parse_score;
use crate::exec::command::{CmdError, CmdResult};
use crate::exec::ctx::Ctx;
use crate::services::notify;
use strata_engine::{Locked, Ttl, Value, ZSetValue};

pub(super) fn zadd(ctx: &mut Ctx<'_>) -> CmdResult {
    zadd_generic(ctx, 0)
}

pub(super) fn zincrby(ctx: &mut Ctx<'_>) -> CmdResult {
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
    let mut pairs = Vec::with_capacity(elements);
    for j in 0..elements {
        let score = parse_score(ctx.arg(idx + 2 * j)).ok_or(CmdError::NOT_FLOAT)?;
        pairs.push((score, ctx.arg(idx + 1 + 2 * j)));
    }
    zadd_pairs(ctx, fl, ch, &pairs)
}

/// Adds or updates `pairs` (score, member) in the sorted set at argv[1] under ZADD's
/// flags (`ZSetValue::NX`...), creating it unless XX, and replies as ZADD (or, with INCR,
/// ZINCRBY) does: the rest of Redis's zaddGenericCommand once the arguments are parsed.
/// GEOADD adds its points through here, as Redis's GEOADD runs ZADD.
pub(crate) fn zadd_pairs(ctx: &mut Ctx<'_>, fl: u8, ch: bool, pairs: &[(f64, &[u8])]) -> CmdResult {
    let has = |f: u8| fl & f != 0;
    let incr = has(ZSetValue::INCR);
    let key = ctx.arg(1);
    let enc = &ctx.keyspace().encodings;
    let mut l = ctx.lock1(key);
    let mut created = None;
    let z = match l.zset_mut(key)? {
        Some(z) => z,
        None if has(ZSetValue::XX) => {
            ctx.no_effect();
            if incr {
                ctx.out.null();
            } else {
                ctx.out.int(0);
            }
            return Ok(());
        }
        None => {
            let first_len = pairs.first().map_or(0, |p| p.1.len());
            created.insert(ZSetValue::with_hint(0, first_len, enc))
        }
    };
    let (mut added, mut updated, mut processed) = (0i64, 0i64, 0i64);
    let mut score = 0.0;
    let mut failure = None;
    // The one place ZADD/ZINCRBY write.
    for &(s, member) in pairs {
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
    } else {
        ctx.no_effect();
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

pub(super) fn zrem(ctx: &mut Ctx<'_>) -> CmdResult {
    crate::commands::remove_members(
        ctx,
        Locked::zset_mut,
        |z, m| z.remove(m).is_some(),
        ZSetValue::is_empty,
        notify::ZSET,
        "zrem",
    )
}
