//! Sorted-set ranges: score and lex range parsing with Redis's rules and error texts, the
//! ZRANGE family (ZRANGE ZRANGESTORE ZREVRANGE ZRANGEBYSCORE ZREVRANGEBYSCORE ZRANGEBYLEX
//! ZREVRANGEBYLEX), ZCOUNT, ZLEXCOUNT and ZREMRANGEBYRANK/SCORE/LEX. Follows Redis 7.0's
//! t_zset.c (zrangeGenericCommand and friends).

use super::{reply_pairs, zset_of};
use crate::exec::command::{CmdError, CmdResult};
use crate::exec::ctx::Ctx;
use strata_engine::{Ttl, Value, ZSetValue};

const NOT_FLOAT_RANGE: CmdError = CmdError::Static("ERR min or max is not a float");
const NOT_LEX_RANGE: CmdError = CmdError::Static("ERR min or max not valid string range item");

use crate::num::strtod::strtod_all;

/// Redis's getDoubleFromObject: the whole argument one number, no leading space, no
/// overflow or underflow to zero, not NaN.
pub(super) fn parse_score(s: &[u8]) -> Option<f64> {
    if s.first()
        .is_none_or(|c| c.is_ascii_whitespace() || *c == 0x0b)
    {
        return None;
    }
    match strtod_all(s)? {
        (v, false) if !v.is_nan() => Some(v),
        _ => None,
    }
}

/// zslParseRange's reading of one end: strtod over the C string (up to a NUL), which
/// skips leading white space, accepts an empty string as 0 and lets overflow be infinite.
fn parse_range_float(s: &[u8]) -> Option<f64> {
    let s = s.split(|&b| b == 0).next().unwrap_or_default();
    if s.is_empty() {
        return Some(0.0);
    }
    let start = s
        .iter()
        .position(|c| !(c.is_ascii_whitespace() || *c == 0x0b))?;
    let (v, _) = strtod_all(&s[start..])?;
    (!v.is_nan()).then_some(v)
}

// ---------------------------------------------------------------------------------------
// Range specs

/// A score range (Redis's zrangespec).
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) struct ScoreRange {
    pub min: f64,
    pub max: f64,
    pub minex: bool,
    pub maxex: bool,
}

impl ScoreRange {
    pub fn parse(min: &[u8], max: &[u8]) -> Result<ScoreRange, CmdError> {
        let one = |s: &[u8]| -> Option<(f64, bool)> {
            match s.first() {
                Some(b'(') => parse_range_float(&s[1..]).map(|v| (v, true)),
                _ => parse_range_float(s).map(|v| (v, false)),
            }
        };
        let (min, minex) = one(min).ok_or(NOT_FLOAT_RANGE)?;
        let (max, maxex) = one(max).ok_or(NOT_FLOAT_RANGE)?;
        Ok(ScoreRange {
            min,
            max,
            minex,
            maxex,
        })
    }

    pub fn empty(&self) -> bool {
        self.min > self.max || (self.min == self.max && (self.minex || self.maxex))
    }
    pub fn gte_min(&self, s: f64) -> bool {
        if self.minex {
            s > self.min
        } else {
            s >= self.min
        }
    }
    pub fn lte_max(&self, s: f64) -> bool {
        if self.maxex {
            s < self.max
        } else {
            s <= self.max
        }
    }
}

/// One end of a lex range.
#[derive(Debug, Clone, PartialEq, Eq)]
enum LexItem {
    Min,
    Max,
    Str(Vec<u8>),
}

/// A lex range (Redis's zlexrangespec); `-` and `+` count as exclusive, as in Redis.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct LexRange {
    min: LexItem,
    max: LexItem,
    minex: bool,
    maxex: bool,
}

fn cmp_items(a: &LexItem, b: &LexItem) -> std::cmp::Ordering {
    use std::cmp::Ordering::*;
    match (a, b) {
        (LexItem::Min, LexItem::Min) | (LexItem::Max, LexItem::Max) => Equal,
        (LexItem::Min, _) | (_, LexItem::Max) => Less,
        (LexItem::Max, _) | (_, LexItem::Min) => Greater,
        (LexItem::Str(x), LexItem::Str(y)) => x.cmp(y),
    }
}

fn cmp_member(m: &[u8], item: &LexItem) -> std::cmp::Ordering {
    match item {
        LexItem::Min => std::cmp::Ordering::Greater,
        LexItem::Max => std::cmp::Ordering::Less,
        LexItem::Str(s) => m.cmp(s),
    }
}

impl LexRange {
    pub fn parse(min: &[u8], max: &[u8]) -> Result<LexRange, CmdError> {
        // zslParseLexRangeItem reads a C string: "+" and "-" may only be followed by a NUL.
        let one = |s: &[u8]| -> Option<(LexItem, bool)> {
            let alone = s.get(1).is_none_or(|&b| b == 0);
            match s.first()? {
                b'+' if alone => Some((LexItem::Max, true)),
                b'-' if alone => Some((LexItem::Min, true)),
                b'(' => Some((LexItem::Str(s[1..].to_vec()), true)),
                b'[' => Some((LexItem::Str(s[1..].to_vec()), false)),
                _ => None,
            }
        };
        let (min, minex) = one(min).ok_or(NOT_LEX_RANGE)?;
        let (max, maxex) = one(max).ok_or(NOT_LEX_RANGE)?;
        Ok(LexRange {
            min,
            max,
            minex,
            maxex,
        })
    }

    pub fn empty(&self) -> bool {
        let c = cmp_items(&self.min, &self.max);
        c.is_gt() || (c.is_eq() && (self.minex || self.maxex))
    }
    pub fn gte_min(&self, m: &[u8]) -> bool {
        let c = cmp_member(m, &self.min);
        if self.minex {
            c.is_gt()
        } else {
            c.is_ge()
        }
    }
    pub fn lte_max(&self, m: &[u8]) -> bool {
        let c = cmp_member(m, &self.max);
        if self.maxex {
            c.is_lt()
        } else {
            c.is_le()
        }
    }
}

/// A parsed BYSCORE or BYLEX range, as the closures `ZSetValue::span` takes.
pub(super) enum Spec {
    Score(ScoreRange),
    Lex(LexRange),
}

impl Spec {
    fn empty(&self) -> bool {
        match self {
            Spec::Score(r) => r.empty(),
            Spec::Lex(r) => r.empty(),
        }
    }
    fn gte_min(&self, m: &[u8], s: f64) -> bool {
        match self {
            Spec::Score(r) => r.gte_min(s),
            Spec::Lex(r) => r.gte_min(m),
        }
    }
    fn lte_max(&self, m: &[u8], s: f64) -> bool {
        match self {
            Spec::Score(r) => r.lte_max(s),
            Spec::Lex(r) => r.lte_max(m),
        }
    }
    /// Ascending ranks lo..=hi in range, found as Redis does (forward or backward).
    pub fn span(&self, z: &ZSetValue, rev: bool) -> Option<(usize, usize)> {
        z.span(
            self.empty(),
            &|m, s| self.gte_min(m, s),
            &|m, s| self.lte_max(m, s),
            rev,
        )
    }
}

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
            if count > 0 {
                ctx.signal_key_ready(dst);
                ctx.notify(crate::services::notify::ZSET, "zrangestore", dst);
            } else if removed {
                ctx.notify(crate::services::notify::GENERIC, "del", dst);
            }
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
    fn strtod_forms() {
        let ok =
            |s: &str, v: f64| assert_eq!(strtod_all(s.as_bytes()).map(|x| x.0), Some(v), "{s}");
        ok("1", 1.0);
        ok("-1.5", -1.5);
        ok("+.5", 0.5);
        ok("5.", 5.0);
        ok("1e3", 1000.0);
        ok("1E+03", 1000.0);
        ok("inf", f64::INFINITY);
        ok("-Infinity", f64::NEG_INFINITY);
        ok("0x10", 16.0);
        ok("0x1.8p1", 3.0);
        ok("0X.8", 0.5);
        ok("-0x1p-2", -0.25);
        for bad in [
            "", ".", "e5", "1e", "1e+", "0x", "0xg", "1 ", " 1", "1.2.3", "infinit", "0x1p",
        ] {
            assert_eq!(strtod_all(bad.as_bytes()), None, "{bad}");
        }
        assert!(strtod_all(b"nan").unwrap().0.is_nan());
        assert_eq!(strtod_all(b"1e400"), Some((f64::INFINITY, true)));
        assert_eq!(strtod_all(b"1e-400"), Some((0.0, true)));
        assert_eq!(strtod_all(b"0e-400"), Some((0.0, false)));
        assert_eq!(parse_score(b"1e400"), None);
        assert_eq!(parse_score(b" 1"), None);
        assert_eq!(parse_score(b"nan"), None);
        assert_eq!(parse_range_float(b""), Some(0.0));
        assert_eq!(parse_range_float(b"  2"), Some(2.0));
        assert_eq!(parse_range_float(b" "), None);
        assert_eq!(parse_range_float(b"1e400"), Some(f64::INFINITY));
        assert_eq!(parse_range_float(b"3\x00junk"), Some(3.0));
    }

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
