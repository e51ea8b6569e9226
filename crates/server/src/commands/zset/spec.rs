//! Sorted-set range specs: score and lex range parsing with Redis's rules and error
//! texts (zslParseRange, zslParseLexRange), as `ZSetValue::span` takes them.

use crate::exec::command::CmdError;
use strata_engine::ZSetValue;

const NOT_FLOAT_RANGE: CmdError = CmdError::Static("ERR min or max is not a float");
const NOT_LEX_RANGE: CmdError = CmdError::Static("ERR min or max not valid string range item");

use crate::num::strtod::strtod_all;

/// Redis's getDoubleFromObject: the whole argument one number, no leading space, no
/// overflow or underflow to zero, not NaN.
pub(crate) fn parse_score(s: &[u8]) -> Option<f64> {
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
    pub(super) fn gte_min(&self, m: &[u8], s: f64) -> bool {
        match self {
            Spec::Score(r) => r.gte_min(s),
            Spec::Lex(r) => r.gte_min(m),
        }
    }
    pub(super) fn lte_max(&self, m: &[u8], s: f64) -> bool {
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
}
