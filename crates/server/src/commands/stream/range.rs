//! XRANGE, XREVRANGE.

use super::{count_arg, reply_entry, stream_err};
use crate::exec::command::{CmdError, CmdResult};
use crate::exec::ctx::Ctx;
use strata_engine::stream::StreamId;

pub(super) fn xrange(ctx: &mut Ctx<'_>) -> CmdResult {
    range_generic(ctx, false)
}

pub(super) fn xrevrange(ctx: &mut Ctx<'_>) -> CmdResult {
    range_generic(ctx, true)
}

/// Redis's xrangeGenericCommand: the bounds (an incomplete start takes sequence 0, an
/// incomplete end the largest; `(` excludes), then COUNT, then the key.
fn range_generic(ctx: &mut Ctx<'_>, rev: bool) -> CmdResult {
    let argv = ctx.argv;
    let (start, end) = if rev {
        (&argv[3], &argv[2])
    } else {
        (&argv[2], &argv[3])
    };
    let lo = StreamId::parse_bound(start, 0, true).map_err(stream_err)?;
    let hi = StreamId::parse_bound(end, u64::MAX, false).map_err(stream_err)?;
    let mut count = None;
    let mut j = 4;
    while j < argv.len() {
        if ctx.lower(j) == b"count" && j + 1 < argv.len() {
            count = Some(count_arg(&argv[j + 1])?);
            j += 2;
        } else {
            return Err(CmdError::SYNTAX);
        }
    }
    let key = ctx.arg(1);
    let mut l = ctx.lock1(key);
    let Some(s) = l.stream_get(key)? else {
        drop(l);
        ctx.out.array(0);
        return Ok(());
    };
    if count == Some(0) {
        drop(l);
        ctx.out.null_array();
        return Ok(());
    }
    let take = count.map_or(usize::MAX, |n| usize::try_from(n).unwrap_or(usize::MAX));
    let entries: Vec<_> = s.range(lo, hi, rev).take(take).collect();
    ctx.out.array(entries.len());
    for e in &entries {
        reply_entry(&mut ctx.out, e);
    }
    Ok(())
}
