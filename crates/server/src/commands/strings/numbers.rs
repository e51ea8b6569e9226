//! The counters: INCR DECR INCRBY DECRBY INCRBYFLOAT.

use crate::exec::command::{CmdError, CmdResult};
use crate::exec::ctx::Ctx;
use crate::num::longdouble;
use crate::services::notify;
use strata_engine::{Locked, Ttl};

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
    let new = ctx.lock1(key).incr_by(key, delta)?;
    ctx.notify(notify::STRING, "incrby", key);
    ctx.out.int(new);
    Ok(())
}

pub(super) fn incr(ctx: &mut Ctx<'_>) -> CmdResult {
    incr_decr(ctx, 1)
}

pub(super) fn decr(ctx: &mut Ctx<'_>) -> CmdResult {
    incr_decr(ctx, -1)
}

pub(super) fn incrby(ctx: &mut Ctx<'_>) -> CmdResult {
    let delta = ctx.int_arg(2)?;
    incr_decr(ctx, delta)
}

pub(super) fn decrby(ctx: &mut Ctx<'_>) -> CmdResult {
    let delta = ctx.int_arg(2)?;
    if delta == i64::MIN {
        return Err(CmdError::Static("ERR decrement would overflow"));
    }
    incr_decr(ctx, -delta)
}

pub(super) fn incrbyfloat(ctx: &mut Ctx<'_>) -> CmdResult {
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
    // As Redis: the result goes to the journal and replicas, not the addition (float
    // arithmetic need not agree elsewhere).
    ctx.rewrite1(crate::exec::effects::cmd(&[
        b"SET",
        key,
        text.as_bytes(),
        b"KEEPTTL",
    ]));
    ctx.notify(notify::STRING, "incrbyfloat", key);
    ctx.out.bulk(text.as_bytes());
    Ok(())
}
