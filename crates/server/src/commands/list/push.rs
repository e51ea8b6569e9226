//! LPUSH RPUSH LPUSHX RPUSHX, and the push and its events that the blocking commands
//! reuse.

use super::fill;
use crate::exec::command::CmdResult;
use crate::exec::ctx::Ctx;
use crate::services::notify;
use bytes::Bytes;
use strata_engine::{Locked, WrongType};

/// Pushes `elems` in order at the head (`head`) or tail of the list at `key`, creating it
/// (with node setting `fill`) unless `only_existing`. Returns the new length, or 0 when
/// `only_existing` and there is no list.
pub fn push_elements(
    l: &mut Locked<'_>,
    key: &[u8],
    elems: &[Bytes],
    head: bool,
    only_existing: bool,
    fill: i64,
) -> Result<usize, WrongType> {
    let list = if only_existing {
        match l.list_mut(key)? {
            Some(list) => list,
            None => return Ok(0),
        }
    } else {
        l.list_mut_or_create(key, fill)?
    };
    for e in elems {
        list.push(head, e);
    }
    Ok(list.len())
}

/// The events of a push (`lpush`/`rpush`), and the wake-up of clients blocked on `key`.
pub fn notify_pushed(ctx: &mut Ctx<'_>, key: &[u8], head: bool) {
    ctx.signal_key_ready(key);
    ctx.notify(notify::LIST, if head { "lpush" } else { "rpush" }, key);
}

pub(super) fn lpush(ctx: &mut Ctx<'_>) -> CmdResult {
    push_generic(ctx, true, false)
}

pub(super) fn rpush(ctx: &mut Ctx<'_>) -> CmdResult {
    push_generic(ctx, false, false)
}

pub(super) fn lpushx(ctx: &mut Ctx<'_>) -> CmdResult {
    push_generic(ctx, true, true)
}

pub(super) fn rpushx(ctx: &mut Ctx<'_>) -> CmdResult {
    push_generic(ctx, false, true)
}

fn push_generic(ctx: &mut Ctx<'_>, head: bool, only_existing: bool) -> CmdResult {
    let argv = ctx.argv;
    let key = &argv[1];
    let fill = fill(ctx);
    let mut l = ctx.lock1(key);
    let len = push_elements(&mut l, key, &argv[2..], head, only_existing, fill)?;
    drop(l);
    if len > 0 {
        notify_pushed(ctx, key, head);
    } else {
        ctx.no_effect();
    }
    ctx.out.int(len as i64);
    Ok(())
}
