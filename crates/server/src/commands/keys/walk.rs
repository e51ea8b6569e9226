//! KEYS SCAN RANDOMKEY: walking the keyspace.

use crate::commands::scan;
use crate::exec::command::CmdResult;
use crate::exec::ctx::Ctx;
use strata_engine::{Kind, ScanFilter};

pub(super) fn keys(ctx: &mut Ctx<'_>) -> CmdResult {
    let found = ctx.db().keys(ctx.arg(1));
    ctx.out.array(found.len());
    for k in &found {
        ctx.out.bulk(k);
    }
    Ok(())
}

/// SCAN cursor [MATCH pattern] [COUNT count] [TYPE type]. The cursor is a shard index (see
/// `Db::scan`): every key present for the whole iteration is returned, and a call may
/// return more than COUNT keys, as Redis's may.
pub(super) fn scan(ctx: &mut Ctx<'_>) -> CmdResult {
    let cursor = scan::parse_cursor(ctx.arg(1))?;
    let opts = scan::ScanOptions::parse(ctx, 2, true)?;
    let (pattern, type_name, count) = (opts.pattern, opts.type_name, opts.count);
    let kind = type_name.map(Kind::parse);
    let filter = ScanFilter {
        pattern,
        kind: kind.flatten(),
    };
    let (next, mut found) = ctx.db().scan(cursor, count, filter);
    // An unknown type name matches no key (Redis 7.0 does not reject it).
    if matches!(kind, Some(None)) {
        found.clear();
    }
    ctx.out.array(2);
    ctx.out.bulk(next.to_string().as_bytes());
    ctx.out.array(found.len());
    for k in &found {
        ctx.out.bulk(k);
    }
    Ok(())
}

pub(super) fn randomkey(ctx: &mut Ctx<'_>) -> CmdResult {
    let seed = ctx.keyspace().random();
    match ctx.db().random_key(seed) {
        Some(k) => ctx.out.bulk(&k),
        None => ctx.out.null(),
    }
    Ok(())
}
