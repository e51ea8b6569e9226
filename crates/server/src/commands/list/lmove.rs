//! LMOVE and RPOPLPUSH, and the move and its events that BLMOVE and BRPOPLPUSH reuse.

use super::pop::notify_popped;
use super::push::notify_pushed;
use super::{fill, Where};
use crate::exec::command::CmdResult;
use crate::exec::ctx::Ctx;
use strata_engine::{Locked, WrongType};

/// LMOVE's effect (also RPOPLPUSH, BLMOVE, BRPOPLPUSH): pops from `src`'s `from_head` end
/// and pushes onto `dst`'s `to_head` end, creating `dst` and deleting an emptied `src`.
/// Returns the element and whether `src` was deleted; `Ok(None)` when `src` does not
/// exist; WRONGTYPE (and no change) when either key holds another type.
pub fn move_element(
    l: &mut Locked<'_>,
    src: &[u8],
    dst: &[u8],
    from_head: bool,
    to_head: bool,
    fill: i64,
) -> Result<Option<(Vec<u8>, bool)>, WrongType> {
    let Some(list) = l.list_mut(src)? else {
        return Ok(None);
    };
    if src == dst {
        let Some(v) = list.pop(from_head) else {
            return Ok(None);
        };
        list.push(to_head, &v);
        return Ok(Some((v, false)));
    }
    // The destination's type is checked before anything moves.
    l.list_mut(dst)?;
    let Some(v) = l.list_mut(src)?.and_then(|s| s.pop(from_head)) else {
        return Ok(None);
    };
    l.list_mut_or_create(dst, fill)?.push(to_head, &v);
    let deleted = l.remove_if_empty_list(src);
    Ok(Some((v, deleted)))
}

/// LMOVE's events, in Redis's order (lmoveHandlePush, then the pop): the push on `dst`,
/// the pop on `src`, `del` if `src` was emptied; and `dst` signalled as ready.
pub fn notify_moved(
    ctx: &mut Ctx<'_>,
    src: &[u8],
    dst: &[u8],
    from_head: bool,
    to_head: bool,
    src_deleted: bool,
) {
    notify_pushed(ctx, dst, to_head);
    notify_popped(ctx, src, from_head, src_deleted);
}

pub(super) fn lmove(ctx: &mut Ctx<'_>) -> CmdResult {
    let from = Where::parse(ctx.arg(3))?;
    let to = Where::parse(ctx.arg(4))?;
    lmove_generic(ctx, from, to)
}

pub(super) fn rpoplpush(ctx: &mut Ctx<'_>) -> CmdResult {
    lmove_generic(ctx, Where::Right, Where::Left)
}

fn lmove_generic(ctx: &mut Ctx<'_>, from: Where, to: Where) -> CmdResult {
    let (src, dst) = (ctx.arg(1), ctx.arg(2));
    let fill = fill(ctx);
    let mut l = ctx.lock(&[src, dst]);
    let moved = move_element(&mut l, src, dst, from.head(), to.head(), fill)?;
    drop(l);
    match moved {
        Some((v, deleted)) => {
            notify_moved(ctx, src, dst, from.head(), to.head(), deleted);
            ctx.out.bulk(&v);
        }
        None => ctx.out.null(),
    }
    Ok(())
}
