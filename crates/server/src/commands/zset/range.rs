//! Sorted-set ranges: the ZRANGE family (ZRANGE ZRANGESTORE ZREVRANGE ZRANGEBYSCORE
//! ZREVRANGEBYSCORE ZRANGEBYLEX ZREVRANGEBYLEX), ZCOUNT, ZLEXCOUNT and
//! ZREMRANGEBYRANK/SCORE/LEX. Follows Redis 7.0's t_zset.c (zrangeGenericCommand and friends).

use super::spec::{LexRange, ScoreRange, Spec};
use super::{reply_pairs, zset_of};
use crate::exec::command::{CmdError, CmdResult};
use crate::exec::ctx::Ctx;
use strata_engine::{Ttl, Value, ZSetValue};

// ---------------------------------------------------------------------------------------
// ZRANGE and friends

#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum RangeType {
    Auto,
    Rank,
    Score,
    Lex,
}

#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Direction {
    Auto,
    Forward,
    Reverse,
}

/// Rank range `start..=end` (negative from the end) clamped to `len`: ascending ranks
/// `lo..hi`, or None when empty.
pub(super) fn rank_range(start: i64, end: i64, len: usize) -> Option<(usize, usize)> {
    let llen = i64::try_from(len).unwrap_or(i64::MAX);
    let mut start = if start < 0 { start + llen } else { start };
    let mut end = if end < 0 { end + llen } else { end };
    if start < 0 {
        start = 0;
    }
    if start > end || start >= llen {
        return None;
    }
    if end >= llen {
        end = llen - 1;
    }
    Some((start as usize, end as usize + 1))
}

/// Redis's zrangeGenericCommand. `argc_start` is the source key's position; `store` is
/// ZRANGESTORE (destination at argv[1]).
pub(super) fn zrange_generic(
    ctx: &mut Ctx<'_>,
    argc_start: usize,
    store: bool,
    mut rangetype: RangeType,
    mut direction: Direction,
) -> CmdResult {
    let argc = ctx.argv.len();
    let mut withscores = false;
    let mut offset: i64 = 0;
    let mut limit: i64 = -1;
    let mut j = argc_start + 3;
    while j < argc {
        let left = argc - j - 1;
        let opt = ctx.lower(j);
        if !store && opt == b"withscores" {
            withscores = true;
        } else if opt == b"limit" && left >= 2 {
            offset = ctx.int_arg(j + 1)?;
            limit = ctx.int_arg(j + 2)?;
            j += 2;
        } else if direction == Direction::Auto && opt == b"rev" {
            direction = Direction::Reverse;
        } else if rangetype == RangeType::Auto && opt == b"bylex" {
            rangetype = RangeType::Lex;
        } else if rangetype == RangeType::Auto && opt == b"byscore" {
            rangetype = RangeType::Score;
        } else {
            return Err(CmdError::SYNTAX);
        }
        j += 1;
    }
    if direction == Direction::Auto {
        direction = Direction::Forward;
    }
    if rangetype == RangeType::Auto {
        rangetype = RangeType::Rank;
    }
    if limit != -1 && rangetype == RangeType::Rank {
        return Err(CmdError::err(
            "syntax error, LIMIT is only supported in combination with either BYSCORE or BYLEX",
        ));
    }
    if withscores && rangetype == RangeType::Lex {
        return Err(CmdError::err(
            "syntax error, WITHSCORES not supported in combination with BYLEX",
        ));
    }
    let rev = direction == Direction::Reverse;
    let (mut minidx, mut maxidx) = (argc_start + 1, argc_start + 2);
    if rev && rangetype != RangeType::Rank {
        std::mem::swap(&mut minidx, &mut maxidx);
    }
    enum Parsed {
        Rank(i64, i64),
        Range(Spec),
    }
    let parsed = match rangetype {
        RangeType::Score => Parsed::Range(Spec::Score(ScoreRange::parse(
            ctx.arg(minidx),
            ctx.arg(maxidx),
        )?)),
        RangeType::Lex => Parsed::Range(Spec::Lex(LexRange::parse(
            ctx.arg(minidx),
            ctx.arg(maxidx),
        )?)),
        _ => Parsed::Rank(ctx.int_arg(minidx)?, ctx.int_arg(maxidx)?),
    };
    let withscores = withscores || store;
    let key = ctx.arg(argc_start);
    let dst = if store { Some(ctx.arg(1)) } else { None };
    let mut l = match dst {
        Some(d) => ctx.lock(&[d, key]),
        None => ctx.lock1(key),
    };
    let z = match l.get(key) {
        None => None,
        Some(e) => Some(zset_of(e.value())?),
    };
    // The selected elements, in reply order.
    let mut items: Vec<(&[u8], f64)> = Vec::new();
    if let Some(z) = z {
        match &parsed {
            Parsed::Rank(start, end) => {
                let n = z.len();
                if let Some((lo, hi)) = rank_range(*start, *end, n) {
                    // REV counts ranks from the top.
                    let (lo, hi) = if rev { (n - hi, n - lo) } else { (lo, hi) };
                    items.reserve(hi - lo);
                    z.for_range(lo, hi, rev, |m, s| items.push((m, s)));
                }
            }
            Parsed::Range(spec) => {
                let n = z.len();
                let skip = offset > 0 && offset as u64 >= n as u64;
                if let (false, Some((lo, hi))) = (skip, spec.span(z, rev)) {
                    // Redis steps `offset` elements from the first in range (a negative
                    // offset steps off the end), then takes up to `limit` (negative: all)
                    // while each stays within the far end of the range.
                    let first = if rev {
                        usize::try_from(offset).ok().and_then(|o| hi.checked_sub(o))
                    } else {
                        usize::try_from(offset)
                            .ok()
                            .and_then(|o| lo.checked_add(o))
                            .filter(|&f| f < n)
                    };
                    if let Some(first) = first {
                        let mut left = limit;
                        let (start, end) = if rev { (0, first + 1) } else { (first, n) };
                        z.walk(start, end, rev, |m, s| {
                            if left == 0 {
                                return false;
                            }
                            let inside = if rev {
                                spec.gte_min(m, s)
                            } else {
                                spec.lte_max(m, s)
                            };
                            if !inside {
                                return false;
                            }
                            items.push((m, s));
                            left = left.saturating_sub(1);
                            true
                        });
                    }
                }
            }
        }
    }
    match dst {
        None => {
            reply_pairs(&mut ctx.out, &items, withscores);
        }
        Some(dst) => {
            let count = items.len();
            let owned: Vec<(Vec<u8>, f64)> = items.iter().map(|(m, s)| (m.to_vec(), *s)).collect();
            // The one place ZRANGESTORE writes.
            let removed = if count > 0 {
                let v = ZSetValue::from_members(owned, &ctx.keyspace().encodings);
                l.set_value(dst, Value::ZSet(Box::new(v)), Ttl::Clear);
                false
            } else {
                l.remove(dst)
            };
            drop(l);
            let event = (crate::services::notify::ZSET, "zrangestore");
            crate::commands::stored(ctx, dst, event, count, removed, true);
            ctx.out.int(count as i64);
        }
    }
    Ok(())
}

pub(super) fn zrange(ctx: &mut Ctx<'_>) -> CmdResult {
    zrange_generic(ctx, 1, false, RangeType::Auto, Direction::Auto)
}

pub(super) fn zrangestore(ctx: &mut Ctx<'_>) -> CmdResult {
    zrange_generic(ctx, 2, true, RangeType::Auto, Direction::Auto)
}

pub(super) fn zrevrange(ctx: &mut Ctx<'_>) -> CmdResult {
    zrange_generic(ctx, 1, false, RangeType::Rank, Direction::Reverse)
}

pub(super) fn zrangebyscore(ctx: &mut Ctx<'_>) -> CmdResult {
    zrange_generic(ctx, 1, false, RangeType::Score, Direction::Forward)
}

pub(super) fn zrevrangebyscore(ctx: &mut Ctx<'_>) -> CmdResult {
    zrange_generic(ctx, 1, false, RangeType::Score, Direction::Reverse)
}

pub(super) fn zrangebylex(ctx: &mut Ctx<'_>) -> CmdResult {
    zrange_generic(ctx, 1, false, RangeType::Lex, Direction::Forward)
}

pub(super) fn zrevrangebylex(ctx: &mut Ctx<'_>) -> CmdResult {
    zrange_generic(ctx, 1, false, RangeType::Lex, Direction::Reverse)
}

// ---------------------------------------------------------------------------------------
// Counting and removing ranges

fn count_generic(ctx: &mut Ctx<'_>, spec: Spec) -> CmdResult {
    let key = ctx.arg(1);
    let mut l = ctx.lock1(key);
    let n = match l.get(key) {
        None => 0,
        Some(e) => {
            let z = zset_of(e.value())?;
            spec.span(z, false).map_or(0, |(lo, hi)| hi - lo + 1)
        }
    };
    ctx.out.int(n as i64);
    Ok(())
}

pub(super) fn zcount(ctx: &mut Ctx<'_>) -> CmdResult {
    let spec = Spec::Score(ScoreRange::parse(ctx.arg(2), ctx.arg(3))?);
    count_generic(ctx, spec)
}

pub(super) fn zlexcount(ctx: &mut Ctx<'_>) -> CmdResult {
    let spec = Spec::Lex(LexRange::parse(ctx.arg(2), ctx.arg(3))?);
    count_generic(ctx, spec)
}

enum RemRange {
    Rank(i64, i64),
    Range(Spec),
}

fn zremrange_generic(ctx: &mut Ctx<'_>, what: RemRange) -> CmdResult {
    let key = ctx.arg(1);
    let mut l = ctx.lock1(key);
    let Some(z) = l.zset_mut(key)? else {
        ctx.no_effect();
        ctx.out.int(0);
        return Ok(());
    };
    let span = match &what {
        RemRange::Rank(start, end) => rank_range(*start, *end, z.len()),
        RemRange::Range(spec) => spec.span(z, false).map(|(lo, hi)| (lo, hi + 1)),
    };
    // The one place these commands write.
    let removed = span.map_or(0, |(lo, hi)| z.remove_ranks(lo, hi));
    let deleted = z.is_empty() && l.remove(key);
    drop(l);
    if removed > 0 {
        let event = match &what {
            RemRange::Rank(..) => "zremrangebyrank",
            RemRange::Range(Spec::Score(_)) => "zremrangebyscore",
            RemRange::Range(_) => "zremrangebylex",
        };
        ctx.notify(crate::services::notify::ZSET, event, key);
        if deleted {
            ctx.notify(crate::services::notify::GENERIC, "del", key);
        }
    } else {
        ctx.no_effect();
    }
    ctx.out.int(removed as i64);
    Ok(())
}

pub(super) fn zremrangebyrank(ctx: &mut Ctx<'_>) -> CmdResult {
    let start = ctx.int_arg(2)?;
    let end = ctx.int_arg(3)?;
    zremrange_generic(ctx, RemRange::Rank(start, end))
}

pub(super) fn zremrangebyscore(ctx: &mut Ctx<'_>) -> CmdResult {
    let spec = Spec::Score(ScoreRange::parse(ctx.arg(2), ctx.arg(3))?);
    zremrange_generic(ctx, RemRange::Range(spec))
}

pub(super) fn zremrangebylex(ctx: &mut Ctx<'_>) -> CmdResult {
    let spec = Spec::Lex(LexRange::parse(ctx.arg(2), ctx.arg(3))?);
    zremrange_generic(ctx, RemRange::Range(spec))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranks() {
        assert_eq!(rank_range(0, -1, 5), Some((0, 5)));
        assert_eq!(rank_range(i64::MIN, i64::MAX, 5), Some((0, 5)));
        assert_eq!(rank_range(-2, -1, 5), Some((3, 5)));
        assert_eq!(rank_range(3, 1, 5), None);
        assert_eq!(rank_range(5, 10, 5), None);
        assert_eq!(rank_range(0, -1, 0), None);
    }
}
