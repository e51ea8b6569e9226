//! LPOP RPOP LMPOP, and the pops, their arguments and events that the blocking pops
//! reuse.

use super::{non_negative, reply_range, Where};
use crate::exec::command::{parse_i64, CmdError, CmdResult};
use crate::exec::ctx::Ctx;
use crate::services::notify;
use bytes::Bytes;
use std::ops::Range;
use strata_engine::{ListValue, Locked, WrongType};
use strata_resp::Reply;

/// Pops up to `count` elements from the head (`head`) or tail and replies them as an array
/// in pop order (LPOP/RPOP with a count, LMPOP, BLMPOP). The caller deletes the key if the
/// list is left empty. Returns how many were popped.
pub fn pop_count_reply(
    out: &mut Reply<'_>,
    list: &mut ListValue,
    head: bool,
    count: usize,
) -> usize {
    let n = count.min(list.len());
    let start = if head { 0 } else { list.len() - n };
    reply_range(out, list, start, start + n, !head);
    list.remove_range(start, n);
    n
}

/// The keyspace events of a pop (Redis's listElementsRemoved): `lpop`/`rpop`, then `del`
/// when the list was deleted. Call after the write, lock released.
pub fn notify_popped(ctx: &mut Ctx<'_>, key: &[u8], head: bool, deleted: bool) {
    ctx.notify(notify::LIST, if head { "lpop" } else { "rpop" }, key);
    if deleted {
        ctx.notify(notify::GENERIC, "del", key);
    }
}

/// LMPOP/BLMPOP arguments from `numkeys_idx` on: the range of the keys in argv, the end
/// and the count (1 when not given).
pub fn parse_mpop(
    argv: &[Bytes],
    numkeys_idx: usize,
) -> Result<(Range<usize>, bool, usize), CmdError> {
    let numkeys = parse_i64(&argv[numkeys_idx])
        .filter(|&n| n >= 1)
        .ok_or(CmdError::Static("ERR numkeys should be greater than 0"))?;
    let where_idx = usize::try_from(numkeys)
        .ok()
        .and_then(|n| n.checked_add(numkeys_idx + 1))
        .filter(|&i| i < argv.len())
        .ok_or(CmdError::SYNTAX)?;
    let head = Where::parse(&argv[where_idx])?.head();
    let mut count = None;
    let mut j = where_idx + 1;
    while j < argv.len() {
        if count.is_none() && argv[j].eq_ignore_ascii_case(b"count") && j + 1 < argv.len() {
            j += 1;
            let c = parse_i64(&argv[j])
                .filter(|&c| c >= 1)
                .ok_or(CmdError::Static("ERR count should be greater than 0"))?;
            count = Some(usize::try_from(c).unwrap_or(usize::MAX));
        } else {
            return Err(CmdError::SYNTAX);
        }
        j += 1;
    }
    Ok((numkeys_idx + 1..where_idx, head, count.unwrap_or(1)))
}

/// LMPOP's effect: pops from the first non-empty list of `keys`, replying `[key, [elements]]`.
/// Returns the key popped from, how many elements, and whether it was deleted; None (and
/// nothing replied) when every key is missing; WRONGTYPE at the first key of another type
/// met before a list.
pub fn mpop_reply(
    out: &mut Reply<'_>,
    l: &mut Locked<'_>,
    keys: &[Bytes],
    head: bool,
    count: usize,
) -> Result<Option<(Bytes, usize, bool)>, WrongType> {
    for key in keys {
        let Some(list) = l.list_mut(key)? else {
            continue;
        };
        if list.is_empty() {
            continue;
        }
        out.array(2);
        out.bulk(key);
        let popped = pop_count_reply(out, list, head, count);
        let deleted = l.remove_if_empty_list(key);
        return Ok(Some((key.clone(), popped, deleted)));
    }
    Ok(None)
}

pub(super) fn lpop(ctx: &mut Ctx<'_>) -> CmdResult {
    pop_generic(ctx, true)
}

pub(super) fn rpop(ctx: &mut Ctx<'_>) -> CmdResult {
    pop_generic(ctx, false)
}

fn pop_generic(ctx: &mut Ctx<'_>, head: bool) -> CmdResult {
    let argv = ctx.argv;
    if argv.len() > 3 {
        return Err(CmdError::arity(if head { "lpop" } else { "rpop" }));
    }
    let count = match argv.get(2) {
        Some(a) => Some(non_negative(
            a,
            "ERR value is out of range, must be positive",
        )?),
        None => None,
    };
    let key = &argv[1];
    let mut l = ctx.lock1(key);
    let Some(list) = l.list_mut(key)? else {
        ctx.no_effect();
        match count {
            Some(_) => ctx.out.null_array(),
            None => ctx.out.null(),
        }
        return Ok(());
    };
    let popped = match count {
        None => match list.pop(head) {
            Some(v) => {
                ctx.out.bulk(&v);
                true
            }
            None => {
                ctx.out.null();
                false
            }
        },
        Some(0) => {
            ctx.out.array(0);
            false
        }
        Some(n) => {
            let n = usize::try_from(n).unwrap_or(usize::MAX);
            pop_count_reply(&mut ctx.out, list, head, n) > 0
        }
    };
    // Redis never keeps an empty list; asking the list saves a second lookup.
    let deleted = list.is_empty() && l.remove(key);
    drop(l);
    if popped {
        notify_popped(ctx, key, head, deleted);
    } else {
        ctx.no_effect();
    }
    Ok(())
}

pub(super) fn lmpop(ctx: &mut Ctx<'_>) -> CmdResult {
    let argv = ctx.argv;
    let (keys, head, count) = parse_mpop(argv, 1)?;
    let keys = &argv[keys];
    let mut l = ctx.lock(keys);
    let popped = mpop_reply(&mut ctx.out, &mut l, keys, head, count)?;
    drop(l);
    match popped {
        Some((key, n, deleted)) => {
            propagate_pop(ctx, &key, head, Some(n));
            notify_popped(ctx, &key, head, deleted);
        }
        None => {
            // Nothing changed: nothing to journal or replicate.
            ctx.no_effect();
            ctx.out.null_array();
        }
    }
    Ok(())
}

/// A pop by LMPOP or a blocking pop goes to the journal and replicas as the LPOP/RPOP
/// (with the count popped, if any) it amounts to, as Redis propagates it: replayed, the
/// blocking form could block and the multi-key form could pick another key.
pub fn propagate_pop(ctx: &mut Ctx<'_>, key: &[u8], head: bool, count: Option<usize>) {
    let name: &'static [u8] = if head { b"LPOP" } else { b"RPOP" };
    let mut argv = vec![Bytes::from_static(name), Bytes::copy_from_slice(key)];
    if let Some(n) = count {
        argv.push(Bytes::from(n.to_string()));
    }
    ctx.rewrite1(argv);
}
