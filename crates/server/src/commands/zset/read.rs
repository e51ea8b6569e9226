//! Reads of a sorted set: ZSCORE ZMSCORE ZCARD ZRANK ZREVRANK, ZRANDMEMBER and ZSCAN.

use super::resp3;
use crate::commands::random::Rng;
use crate::exec::command::{parse_i64, CmdError, CmdResult};
use crate::exec::ctx::Ctx;
use strata_engine::ZSetValue;
use strata_resp::{format_g17, Reply};

pub(super) fn zscore(ctx: &mut Ctx<'_>) -> CmdResult {
    let key = ctx.arg(1);
    let mut l = ctx.lock1(key);
    let Some(z) = l.zset_get(key)? else {
        ctx.out.null();
        return Ok(());
    };
    match z.score(ctx.arg(2)) {
        Some(s) => ctx.out.double(s),
        None => ctx.out.null(),
    }
    Ok(())
}

pub(super) fn zmscore(ctx: &mut Ctx<'_>) -> CmdResult {
    let key = ctx.arg(1);
    let mut l = ctx.lock1(key);
    let z = l.zset_get(key)?;
    ctx.out.array(ctx.argv.len() - 2);
    for m in &ctx.argv[2..] {
        match z.and_then(|z| z.score(m)) {
            Some(s) => ctx.out.double(s),
            None => ctx.out.null(),
        }
    }
    Ok(())
}

pub(super) fn zcard(ctx: &mut Ctx<'_>) -> CmdResult {
    let key = ctx.arg(1);
    let mut l = ctx.lock1(key);
    let n = l.zset_get(key)?.map_or(0, ZSetValue::len);
    ctx.out.int(n as i64);
    Ok(())
}

fn rank_generic(ctx: &mut Ctx<'_>, rev: bool) -> CmdResult {
    let key = ctx.arg(1);
    let mut l = ctx.lock1(key);
    let Some(z) = l.zset_get(key)? else {
        ctx.out.null();
        return Ok(());
    };
    match z.rank(ctx.arg(2)) {
        Some(r) if rev => ctx.out.int((z.len() - 1 - r) as i64),
        Some(r) => ctx.out.int(r as i64),
        None => ctx.out.null(),
    }
    Ok(())
}

pub(super) fn zrank(ctx: &mut Ctx<'_>) -> CmdResult {
    rank_generic(ctx, false)
}

pub(super) fn zrevrank(ctx: &mut Ctx<'_>) -> CmdResult {
    rank_generic(ctx, true)
}

// ---------------------------------------------------------------------------------------
// ZRANDMEMBER

pub(super) fn zrandmember(ctx: &mut Ctx<'_>) -> CmdResult {
    let argc = ctx.argv.len();
    let key = ctx.arg(1);
    if argc >= 3 {
        let l = parse_i64(ctx.arg(2)).ok_or(CmdError::NOT_INTEGER)?;
        if l == i64::MIN {
            return Err(CmdError::err(
                "value is out of range, value must between -9223372036854775807 and 9223372036854775807",
            ));
        }
        if argc > 4 || (argc == 4 && ctx.lower(3) != b"withscores") {
            return Err(CmdError::SYNTAX);
        }
        let withscores = argc == 4;
        if withscores && !(-i64::MAX / 2..=i64::MAX / 2).contains(&l) {
            return Err(CmdError::err("value is out of range"));
        }
        return zrandmember_count(ctx, key, l, withscores);
    }
    let mut rng = Rng::new(ctx);
    let mut lk = ctx.lock1(key);
    let Some(z) = lk.zset_get(key)? else {
        ctx.out.null();
        return Ok(());
    };
    match z.get(rng.below(z.len())) {
        Some((m, _)) => ctx.out.bulk(m),
        None => ctx.out.null(),
    }
    Ok(())
}

fn zrandmember_count(ctx: &mut Ctx<'_>, key: &[u8], l: i64, withscores: bool) -> CmdResult {
    let mut rng = Rng::new(ctx);
    let mut lk = ctx.lock1(key);
    let Some(z) = lk.zset_get(key)? else {
        ctx.out.array(0);
        return Ok(());
    };
    let size = z.len();
    let uniq = l >= 0;
    let count = l.unsigned_abs();
    if count == 0 {
        ctx.out.array(0);
        return Ok(());
    }
    let header = |out: &mut Reply<'_>, n: usize| {
        if withscores && !resp3(out) {
            out.array(n * 2);
        } else {
            out.array(n);
        }
    };
    let item = |out: &mut Reply<'_>, m: &[u8], s: f64| {
        if withscores && resp3(out) {
            out.array(2);
        }
        out.bulk(m);
        if withscores {
            out.double(s);
        }
    };
    if !uniq || count == 1 {
        let count = usize::try_from(count).unwrap_or(usize::MAX);
        header(&mut ctx.out, count);
        let picks = crate::commands::random::Picks::new(ctx);
        for _ in 0..count {
            if let Some((m, s)) = z.get(rng.below(size)) {
                item(&mut ctx.out, m, s);
            }
            if picks.stop(ctx) {
                break;
            }
        }
        return Ok(());
    }
    let count = usize::try_from(count).unwrap_or(usize::MAX);
    if count >= size {
        // The whole set, iterated from the highest element down as Redis's zuiNext does.
        header(&mut ctx.out, size);
        let out = &mut ctx.out;
        z.for_range(0, size, true, |m, s| item(out, m, s));
        return Ok(());
    }
    // Redis's ZRANDMEMBER_SUB_STRATEGY_MUL (3) is the threshold sample_distinct uses.
    let ranks = crate::commands::random::sample_distinct(&mut rng, size, count);
    header(&mut ctx.out, ranks.len());
    for r in ranks {
        if let Some((m, s)) = z.get(r) {
            item(&mut ctx.out, m, s);
        }
    }
    Ok(())
}

// ---------------------------------------------------------------------------------------
// ZSCAN

/// Redis's d2string, as ZSCAN prints scores: integers plainly, others as "%.17g".
fn d2string(v: f64) -> String {
    if v.is_nan() {
        "nan".into()
    } else if v.is_infinite() {
        if v > 0.0 { "inf" } else { "-inf" }.into()
    } else if v == 0.0 {
        if v.is_sign_negative() { "-0" } else { "0" }.into()
    } else {
        const LIM: f64 = (i64::MAX / 2) as f64;
        if (-LIM..=LIM).contains(&v) && (v as i64) as f64 == v {
            (v as i64).to_string()
        } else {
            format_g17(v)
        }
    }
}

pub(super) fn zscan(ctx: &mut Ctx<'_>) -> CmdResult {
    let cursor = crate::commands::scan::parse_cursor(ctx.arg(2))?;
    let key = ctx.arg(1);
    let mut l = ctx.lock1(key);
    let Some(z) = l.zset_get(key)? else {
        ctx.out.array(2);
        ctx.out.bulk(b"0");
        ctx.out.array(0);
        return Ok(());
    };
    let opts = crate::commands::scan::ScanOptions::parse(ctx, 3, false)?;
    let mut found: Vec<(&[u8], f64)> = Vec::new();
    let next = z.scan(cursor, opts.count, |m, s| {
        if opts.matches(m) {
            found.push((m, s));
        }
    });
    ctx.out.array(2);
    ctx.out.bulk(next.to_string().as_bytes());
    ctx.out.array(found.len() * 2);
    for (m, s) in &found {
        ctx.out.bulk(m);
        ctx.out.bulk(d2string(*s).as_bytes());
    }
    Ok(())
}
