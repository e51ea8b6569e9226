//! Changes in place: LSET LINSERT LREM LTRIM.

use super::{clamp_range, resolve_index};
use crate::exec::command::{CmdError, CmdResult};
use crate::exec::ctx::Ctx;
use crate::services::notify;

pub(super) fn lset(ctx: &mut Ctx<'_>) -> CmdResult {
    let key = ctx.arg(1);
    let mut l = ctx.lock1(key);
    let Some(list) = l.list_mut(key)? else {
        return Err(CmdError::NO_SUCH_KEY);
    };
    let index = ctx.int_arg(2)?;
    match resolve_index(index, list.len()) {
        Some(i) if list.set(i, ctx.arg(3)) => {
            drop(l);
            ctx.notify(notify::LIST, "lset", key);
            ctx.out.ok();
            Ok(())
        }
        _ => Err(CmdError::Static("ERR index out of range")),
    }
}

pub(super) fn linsert(ctx: &mut Ctx<'_>) -> CmdResult {
    let w = ctx.arg(2);
    let after = if w.eq_ignore_ascii_case(b"after") {
        true
    } else if w.eq_ignore_ascii_case(b"before") {
        false
    } else {
        return Err(CmdError::SYNTAX);
    };
    let key = ctx.arg(1);
    let mut l = ctx.lock1(key);
    let Some(list) = l.list_mut(key)? else {
        ctx.no_effect();
        ctx.out.int(0);
        return Ok(());
    };
    if list.insert_at_pivot(ctx.arg(3), ctx.arg(4), after) {
        let len = list.len();
        drop(l);
        ctx.notify(notify::LIST, "linsert", key);
        ctx.out.int(len as i64);
    } else {
        ctx.no_effect();
        ctx.out.int(-1);
    }
    Ok(())
}

pub(super) fn lrem(ctx: &mut Ctx<'_>) -> CmdResult {
    let toremove = ctx.int_arg(2)?;
    let key = ctx.arg(1);
    let mut l = ctx.lock1(key);
    let Some(list) = l.list_mut(key)? else {
        ctx.no_effect();
        ctx.out.int(0);
        return Ok(());
    };
    // LREM key i64::MIN: Redis negates it to itself, a limit never reached.
    let limit = usize::try_from(toremove.unsigned_abs()).unwrap_or(usize::MAX);
    let removed = list.remove_matching(ctx.arg(3), limit, toremove < 0);
    let deleted = l.remove_if_empty_list(key);
    drop(l);
    if removed > 0 {
        ctx.notify(notify::LIST, "lrem", key);
    } else {
        ctx.no_effect();
    }
    if deleted {
        ctx.notify(notify::GENERIC, "del", key);
    }
    ctx.out.int(removed as i64);
    Ok(())
}

pub(super) fn ltrim(ctx: &mut Ctx<'_>) -> CmdResult {
    let start = ctx.int_arg(2)?;
    let end = ctx.int_arg(3)?;
    let key = ctx.arg(1);
    let mut l = ctx.lock1(key);
    // A trim that removes nothing is not journaled or replicated (Redis's dirty stays).
    let mut trimmed = false;
    if let Some(list) = l.list_mut(key)? {
        let before = list.len();
        let keep = clamp_range(start, end, before);
        list.trim(keep);
        trimmed = list.len() != before;
        let deleted = l.remove_if_empty_list(key);
        drop(l);
        ctx.notify(notify::LIST, "ltrim", key);
        if deleted {
            ctx.notify(notify::GENERIC, "del", key);
        }
    }
    if !trimmed {
        ctx.no_effect();
    }
    ctx.out.ok();
    Ok(())
}
