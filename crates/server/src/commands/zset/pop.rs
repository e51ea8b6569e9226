//! ZPOPMIN, ZPOPMAX and ZMPOP, and the pop and its events that the blocking pops reuse.

use super::{positive_arg, resp3};
use crate::exec::command::{CmdError, CmdResult};
use crate::exec::ctx::Ctx;
use crate::services::notify;
use bytes::Bytes;
use strata_engine::Locked;
use strata_resp::Reply;

/// Redis's genericZpopCommand, for ZPOPMIN/ZPOPMAX/ZMPOP and the blocking pops: pops from
/// the first of `keys` that exists (WRONGTYPE if it is not a sorted set) and writes the
/// reply. `count` -1 means "one, reply flat"; `emitkey` puts the key first (ZMPOP,
/// BZPOPMIN); `nested` answers [member, score] pairs; `nil_when_empty` answers a null
/// array rather than an empty one when no key exists. Returns the key popped from, how
/// many members, and whether it was deleted (for notifications and propagation).
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
) -> Result<Option<(Vec<u8>, usize, bool)>, CmdError> {
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
    Ok(Some((key.to_vec(), n, deleted)))
}

/// A pop by ZMPOP or a blocking pop goes to the journal and replicas as the
/// ZPOPMIN/ZPOPMAX (with the count popped, if any) it amounts to, as Redis propagates it.
pub fn propagate_pop(ctx: &mut Ctx<'_>, key: &[u8], max: bool, count: Option<usize>) {
    let name: &'static [u8] = if max { b"ZPOPMAX" } else { b"ZPOPMIN" };
    let mut argv = vec![Bytes::from_static(name), Bytes::copy_from_slice(key)];
    if let Some(n) = count {
        argv.push(Bytes::from(n.to_string()));
    }
    ctx.rewrite1(argv);
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
    match popped {
        Some((k, _, deleted)) => notify_popped(ctx, &k, max, deleted),
        None => ctx.no_effect(),
    }
    Ok(())
}

pub(super) fn zpopmin(ctx: &mut Ctx<'_>) -> CmdResult {
    zpop_generic(ctx, false)
}

pub(super) fn zpopmax(ctx: &mut Ctx<'_>) -> CmdResult {
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

pub(super) fn zmpop(ctx: &mut Ctx<'_>) -> CmdResult {
    let (first, end, max, count) = parse_zmpop(ctx, 1)?;
    let keys: Vec<&[u8]> = ctx.argv[first..end].iter().map(|b| &b[..]).collect();
    let mut l = ctx.lock(&keys);
    let popped = zpop_reply(&mut ctx.out, &mut l, &keys, max, true, count, true, true)?;
    drop(l);
    match popped {
        Some((k, n, deleted)) => {
            propagate_pop(ctx, &k, max, Some(n));
            notify_popped(ctx, &k, max, deleted);
        }
        // Nothing changed: nothing to journal or replicate.
        None => ctx.no_effect(),
    }
    Ok(())
}
