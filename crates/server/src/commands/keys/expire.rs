//! Expiry: EXPIRE PEXPIRE EXPIREAT PEXPIREAT PERSIST, and reading it: TTL PTTL
//! EXPIRETIME PEXPIRETIME.

use super::lock_notouch;
use crate::exec::command::{CmdError, CmdResult};
use crate::exec::ctx::Ctx;
use crate::services::notify;
use strata_engine::Locked;

fn now_i64(l: &Locked<'_>) -> i64 {
    i64::try_from(l.now()).unwrap_or(i64::MAX)
}

fn to_i64(at: u64) -> i64 {
    i64::try_from(at).unwrap_or(i64::MAX)
}

const EXPIRE_NX: u8 = 1;
const EXPIRE_XX: u8 = 2;
const EXPIRE_GT: u8 = 4;
const EXPIRE_LT: u8 = 8;

pub(super) fn expire(ctx: &mut Ctx<'_>) -> CmdResult {
    expire_generic(ctx, true, true)
}

pub(super) fn pexpire(ctx: &mut Ctx<'_>) -> CmdResult {
    expire_generic(ctx, true, false)
}

pub(super) fn expireat(ctx: &mut Ctx<'_>) -> CmdResult {
    expire_generic(ctx, false, true)
}

pub(super) fn pexpireat(ctx: &mut Ctx<'_>) -> CmdResult {
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

pub(super) fn persist(ctx: &mut Ctx<'_>) -> CmdResult {
    let key = ctx.arg(1);
    let mut l = ctx.lock1(key);
    let cleared = matches!(l.expire_at(key), Some(Some(_))) && l.set_expire(key, None);
    drop(l);
    if cleared {
        ctx.notify(notify::GENERIC, "persist", key);
    } else {
        ctx.no_effect();
    }
    ctx.out.int(cleared as i64);
    Ok(())
}

// ---------------------------------------------------------------------------------------
// TTL PTTL EXPIRETIME PEXPIRETIME

pub(super) fn ttl(ctx: &mut Ctx<'_>) -> CmdResult {
    ttl_generic(ctx, false, false)
}

pub(super) fn pttl(ctx: &mut Ctx<'_>) -> CmdResult {
    ttl_generic(ctx, true, false)
}

pub(super) fn expiretime(ctx: &mut Ctx<'_>) -> CmdResult {
    ttl_generic(ctx, false, true)
}

pub(super) fn pexpiretime(ctx: &mut Ctx<'_>) -> CmdResult {
    ttl_generic(ctx, true, true)
}

/// ttlGenericCommand: -2 for no key, -1 for no expiry, else the remaining time (or the
/// absolute time), seconds rounded to the nearest.
fn ttl_generic(ctx: &mut Ctx<'_>, ms: bool, absolute: bool) -> CmdResult {
    let key = ctx.arg(1);
    let mut l = lock_notouch(ctx, &[key]);
    let now = now_i64(&l);
    let found = l.presence(key);
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
