//! Membership: SADD SREM SMOVE, SISMEMBER SMISMEMBER SCARD, and SSCAN.

use crate::commands::scan;
use crate::exec::command::{CmdError, CmdResult};
use crate::exec::ctx::Ctx;
use crate::services::notify;
use strata_engine::{Kind, SetValue};

pub(super) fn sadd(ctx: &mut Ctx<'_>) -> CmdResult {
    let key = ctx.arg(1);
    let members = &ctx.argv[2..];
    let enc = &ctx.keyspace().encodings;
    let mut l = ctx.lock1(key);
    let s = l.set_mut_or_create(key, &members[0])?;
    let added = members.iter().filter(|m| s.add(m, enc)).count();
    drop(l);
    if added > 0 {
        ctx.notify(notify::SET, "sadd", key);
    } else {
        ctx.no_effect();
    }
    ctx.out.int(added as i64);
    Ok(())
}

pub(super) fn srem(ctx: &mut Ctx<'_>) -> CmdResult {
    crate::commands::remove_members(
        ctx,
        strata_engine::Locked::set_mut,
        SetValue::remove,
        SetValue::is_empty,
        notify::SET,
        "srem",
    )
}

/// SMOVE source destination member
pub(super) fn smove(ctx: &mut Ctx<'_>) -> CmdResult {
    let (src, dst, member) = (ctx.arg(1), ctx.arg(2), ctx.arg(3));
    let enc = &ctx.keyspace().encodings;
    let mut l = ctx.lock(&[src, dst]);
    let kind = |l: &mut strata_engine::Locked<'_>, k: &[u8]| l.peek(k).map(|e| e.kind());
    let Some(src_kind) = kind(&mut l, src) else {
        drop(l);
        ctx.no_effect();
        ctx.out.int(0);
        return Ok(());
    };
    let dst_kind = kind(&mut l, dst);
    if src_kind != Kind::Set || dst_kind.is_some_and(|k| k != Kind::Set) {
        return Err(CmdError::WRONG_TYPE);
    }
    if src == dst {
        // A no-op (and no event), as in Redis.
        let found = l.set_mut(src)?.is_some_and(|s| s.contains(member));
        drop(l);
        ctx.no_effect();
        ctx.out.int(found as i64);
        return Ok(());
    }
    let (removed, src_deleted) = match l.set_mut(src)? {
        Some(s) => {
            let removed = s.remove(member);
            (removed, removed && s.is_empty() && l.remove(src))
        }
        None => (false, false),
    };
    // The source's events come before the destination is touched (and so before the
    // `new` event of a destination created), as in Redis.
    if removed {
        ctx.notify(notify::SET, "srem", src);
        if src_deleted {
            ctx.notify(notify::GENERIC, "del", src);
        }
    }
    let added = removed && l.set_mut_or_create(dst, member)?.add(member, enc);
    drop(l);
    if added {
        ctx.notify(notify::SET, "sadd", dst);
    }
    if !removed {
        ctx.no_effect();
    }
    ctx.out.int(removed as i64);
    Ok(())
}

// ---------------------------------------------------------------------------------------
// SISMEMBER SMISMEMBER SCARD

pub(super) fn sismember(ctx: &mut Ctx<'_>) -> CmdResult {
    let (key, member) = (ctx.arg(1), ctx.arg(2));
    let mut l = ctx.lock1(key);
    let found = l.get_set(key)?.is_some_and(|s| s.contains(member));
    drop(l);
    ctx.out.int(found as i64);
    Ok(())
}

pub(super) fn smismember(ctx: &mut Ctx<'_>) -> CmdResult {
    let key = ctx.arg(1);
    let members = &ctx.argv[2..];
    let mut l = ctx.lock1(key);
    let s = l.get_set(key)?;
    ctx.out.array(members.len());
    for m in members {
        ctx.out.int(s.is_some_and(|s| s.contains(m)) as i64);
    }
    Ok(())
}

pub(super) fn scard(ctx: &mut Ctx<'_>) -> CmdResult {
    let key = ctx.arg(1);
    let mut l = ctx.lock1(key);
    let n = l.get_set(key)?.map_or(0, SetValue::len);
    drop(l);
    ctx.out.int(n as i64);
    Ok(())
}

// ---------------------------------------------------------------------------------------
// SSCAN

/// SSCAN key cursor [MATCH pattern] [COUNT count]
pub(super) fn sscan(ctx: &mut Ctx<'_>) -> CmdResult {
    let cursor = scan::parse_cursor(ctx.arg(2))?;
    let key = ctx.arg(1);
    let mut l = ctx.lock1(key);
    let Some(s) = l.get_set(key)? else {
        drop(l);
        scan::empty_scan(ctx);
        return Ok(());
    };
    let opts = scan::ScanOptions::parse(ctx, 3, false)?;
    let count = opts.count;
    let (next, members) = s.scan(cursor, count);
    let mut out: Vec<Vec<u8>> = Vec::with_capacity(members.len());
    for e in members {
        let mut buf = [0u8; 20];
        let b = e.bytes(&mut buf);
        if opts.matches(b) {
            out.push(b.to_vec());
        }
    }
    drop(l);
    ctx.out.array(2);
    ctx.out.bulk(next.to_string().as_bytes());
    ctx.out.array(out.len());
    for m in &out {
        ctx.out.bulk(m);
    }
    Ok(())
}
