//! How a directive's words become a typed value and back: the [`Value`] trait, its
//! implementations for yes/no, numbers and strings, and Redis's number syntaxes (plain
//! integers, memory units, percentages, octal) with its error texts.

use strata_engine::int::parse_i64;

/// How a numeric directive's text is read, and its bounds (Redis's `long long` bounds; an
/// unsigned field compares them as unsigned, so `-1` stands for `u64::MAX`).
#[derive(Clone, Copy, Debug)]
pub enum Kind {
    /// Not a number: the field's type alone decides its syntax.
    Plain,
    /// A decimal integer, strictly (no `+`, no leading zeros or spaces).
    Int { min: i64, max: i64 },
    /// A byte count with an optional unit: b, k (1000), kb (1024), m, mb, g, gb.
    Memory { min: i64, max: i64 },
    /// A byte count, or a percentage (`50%`, kept as a negative number as Redis does).
    MemoryOrPercent { min: i64, max: i64 },
    /// An octal number (file permissions).
    Octal { min: i64, max: i64 },
}

pub const fn int(min: i64, max: i64) -> Kind {
    Kind::Int { min, max }
}

pub const fn memory(min: i64, max: i64) -> Kind {
    Kind::Memory { min, max }
}

/// Redis's C bounds, named as in its declarations.
pub const INT_MAX: i64 = i32::MAX as i64;
pub const INT_MIN: i64 = i32::MIN as i64;
pub const UINT_MAX: i64 = u32::MAX as i64;
pub const LONG_MAX: i64 = i64::MAX;
/// `u64::MAX` seen as a `long long`: an unsigned field compares it as unsigned.
pub const ULLONG_MAX: i64 = -1;

/// A directive's value type.
pub trait Value: Clone + PartialEq + Default + Send + Sync + 'static {
    /// Takes several words (`save 900 1`, `bind a b`): CONFIG SET splits its value at
    /// spaces, a file line passes them all. Other directives take exactly one word.
    const MULTI: bool = false;
    /// Bounds compare as unsigned (numbers only).
    const UNSIGNED: bool = false;

    /// Parses the words after the directive's name (one word unless MULTI). `current` is
    /// the value now, for syntaxes that change only part of it.
    fn parse(words: &[&str], kind: &Kind, current: &Self) -> Result<Self, String>;

    /// The text CONFIG GET shows (and CONFIG REWRITE writes).
    fn render(&self, kind: &Kind) -> String;

    /// A later line of the same load adds to the value instead of replacing it (`save`).
    fn accumulate(&mut self, later: Self) {
        *self = later;
    }
}

/// The one word of a single-word directive (callers check the count first).
pub fn one<'w>(words: &[&'w str]) -> &'w str {
    words.first().copied().unwrap_or("")
}

impl Value for bool {
    fn parse(words: &[&str], _: &Kind, _: &bool) -> Result<bool, String> {
        let w = one(words);
        if w.eq_ignore_ascii_case("yes") {
            Ok(true)
        } else if w.eq_ignore_ascii_case("no") {
            Ok(false)
        } else {
            Err("argument must be 'yes' or 'no'".into())
        }
    }

    fn render(&self, _: &Kind) -> String {
        if *self { "yes" } else { "no" }.into()
    }
}

impl Value for String {
    fn parse(words: &[&str], _: &Kind, _: &String) -> Result<String, String> {
        Ok(one(words).to_string())
    }

    fn render(&self, _: &Kind) -> String {
        self.clone()
    }
}

/// Integer field types: Redis keeps every number as a `long long` while parsing.
pub trait Int: Copy {
    fn from_ll(v: i64) -> Self;
    fn to_ll(self) -> i64;
}

macro_rules! int_values {
    ($($t:ty: $unsigned:expr),*) => {$(
        impl Int for $t {
            // The bounds check before this keeps the value within the field's type.
            fn from_ll(v: i64) -> $t {
                v as $t
            }
            fn to_ll(self) -> i64 {
                self as i64
            }
        }
        impl Value for $t {
            const UNSIGNED: bool = $unsigned;
            fn parse(words: &[&str], kind: &Kind, _: &$t) -> Result<$t, String> {
                parse_number(one(words), kind, $unsigned).map(<$t>::from_ll)
            }
            fn render(&self, kind: &Kind) -> String {
                render_number(self.to_ll(), kind)
            }
        }
    )*};
}

int_values!(i32: false, i64: false, u16: true, u32: true, u64: true);

/// Parses and bounds-checks a number as Redis's numericConfigSet does.
pub fn parse_number(s: &str, kind: &Kind, unsigned: bool) -> Result<i64, String> {
    let (min, max) = match *kind {
        Kind::Plain => return Err("no bounds declared for a number".into()),
        Kind::Int { min, max }
        | Kind::Memory { min, max }
        | Kind::MemoryOrPercent { min, max }
        | Kind::Octal { min, max } => (min, max),
    };
    let memory = matches!(kind, Kind::Memory { .. } | Kind::MemoryOrPercent { .. });
    let percent = matches!(kind, Kind::MemoryOrPercent { .. });
    let octal = matches!(kind, Kind::Octal { .. });
    let parsed = if memory {
        memtoull(s).map(|v| v as i64).or_else(|| {
            s.strip_suffix('%')
                .filter(|n| percent && !n.is_empty())
                .and_then(|n| parse_i64(n.as_bytes()))
                .filter(|&n| n >= 0)
                .map(|n| -n)
        })
    } else if octal {
        match strtoll(s, 8) {
            Strtoll::Full(v) => Some(v),
            _ => None,
        }
    } else {
        parse_i64(s.as_bytes())
    };
    let v = parsed.ok_or(match kind {
        Kind::MemoryOrPercent { .. } => "argument must be a memory or percent value",
        Kind::Memory { .. } => "argument must be a memory value",
        Kind::Octal { .. } => "argument couldn't be parsed as an octal number",
        _ => "argument couldn't be parsed into an integer",
    })?;
    if unsigned {
        let (u, lo, hi) = (v as u64, min as u64, max as u64);
        if u < lo || u > hi {
            return Err(if octal {
                format!("argument must be between {lo:o} and {hi:o} inclusive")
            } else {
                format!("argument must be between {lo} and {hi} inclusive")
            });
        }
    } else if percent && v < 0 {
        if v < min {
            return Err(format!(
                "percentage argument must be less or equal to {}",
                -min
            ));
        }
    } else if v < min || v > max {
        return Err(format!(
            "argument must be between {min} and {max} inclusive"
        ));
    }
    Ok(v)
}

/// The text CONFIG GET shows for a number.
pub fn render_number(v: i64, kind: &Kind) -> String {
    match kind {
        Kind::MemoryOrPercent { .. } if v < 0 => format!("{}%", v.unsigned_abs()),
        Kind::Memory { .. } | Kind::MemoryOrPercent { .. } => (v as u64).to_string(),
        Kind::Octal { .. } => format!("{:o}", v as u64),
        _ => v.to_string(),
    }
}

/// Redis's memtoull: digits and an optional unit (b, k, kb, m, mb, g, gb, any case).
/// As in Redis, no digits read as 0, too many digits saturate, and the unit multiplies
/// with wrap-around.
pub fn memtoull(s: &str) -> Option<u64> {
    let split = s.find(|c: char| !c.is_ascii_digit()).unwrap_or(s.len());
    let (digits, unit) = s.split_at(split);
    let mul: u64 = match unit.to_ascii_lowercase().as_str() {
        "" | "b" => 1,
        "k" => 1000,
        "kb" => 1024,
        "m" => 1000 * 1000,
        "mb" => 1024 * 1024,
        "g" => 1000 * 1000 * 1000,
        "gb" => 1024 * 1024 * 1024,
        _ => return None,
    };
    if digits.len() >= 128 {
        return None;
    }
    let n = digits.bytes().fold(0u64, |n, d| {
        n.saturating_mul(10).saturating_add(u64::from(d - b'0'))
    });
    Some(n.wrapping_mul(mul))
}

/// What C's strtoll made of a whole string.
#[derive(Debug, PartialEq, Eq)]
pub enum Strtoll {
    /// Every character was used and the number fit.
    Full(i64),
    /// Every character was used but the number did not fit (clamped, as C does).
    Overflow(i64),
    /// Characters were left over.
    Partial,
}

/// C's strtoll over a whole string: leading white space, an optional sign, digits of
/// `base`. No digits at all leaves the string unread, except an empty string, which C
/// reads as 0 with nothing left over.
pub fn strtoll(s: &str, base: u32) -> Strtoll {
    let t = s.trim_start_matches([' ', '\t', '\n', '\r', '\x0b', '\x0c']);
    let (neg, body) = match t.as_bytes().first() {
        Some(b'-') => (true, &t[1..]),
        Some(b'+') => (false, &t[1..]),
        _ => (false, t),
    };
    if body.is_empty() || !body.chars().all(|c| c.is_digit(base)) {
        return if s.is_empty() {
            Strtoll::Full(0)
        } else {
            Strtoll::Partial
        };
    }
    let mut v: i128 = 0;
    let mut over = false;
    for c in body.chars() {
        v = v * i128::from(base) + i128::from(c.to_digit(base).unwrap_or(0));
        if v > i128::from(i64::MAX) + 1 {
            over = true;
            v = i128::from(i64::MAX) + 1;
        }
    }
    let v = if neg { -v } else { v };
    match i64::try_from(v) {
        Ok(v) if !over => Strtoll::Full(v),
        _ => Strtoll::Overflow(if neg { i64::MIN } else { i64::MAX }),
    }
}

/// Redis's string2d: one whole floating point number, no leading space, not NaN, and not
/// out of range.
pub fn string2d(s: &str) -> Option<f64> {
    let (v, erange) = crate::num::strtod::strtod_all(s.as_bytes())?;
    if v.is_nan() || (erange && (v.is_infinite() || v == 0.0)) {
        return None;
    }
    Some(v)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn memory_units_as_memtoull() {
        assert_eq!(memtoull("512mb"), Some(512 << 20));
        assert_eq!(memtoull("1k"), Some(1000));
        assert_eq!(memtoull("1GB"), Some(1 << 30));
        assert_eq!(memtoull("1Kb"), Some(1024));
        assert_eq!(memtoull("12"), Some(12));
        assert_eq!(memtoull("5b"), Some(5));
        assert_eq!(memtoull("007"), Some(7));
        assert_eq!(memtoull(""), Some(0));
        assert_eq!(memtoull("99999999999999999999"), Some(u64::MAX));
        assert_eq!(
            memtoull("20000000000gb"),
            Some(20_000_000_000u64.wrapping_mul(1 << 30))
        );
        for bad in ["x", "-1", "+5", "1 kb", "0x10", "1.5mb", "1tb"] {
            assert_eq!(memtoull(bad), None, "{bad}");
        }
    }

    #[test]
    fn numbers_bounds_and_redis_error_texts() {
        let k = int(0, INT_MAX);
        assert_eq!(parse_number("42", &k, false), Ok(42));
        for bad in ["", "007", "+5", "-0", " 5", "abc"] {
            assert_eq!(
                parse_number(bad, &k, false).unwrap_err(),
                "argument couldn't be parsed into an integer",
                "{bad:?}"
            );
        }
        assert_eq!(
            parse_number("99999999999", &k, false).unwrap_err(),
            "argument must be between 0 and 2147483647 inclusive"
        );
        // An unsigned field reads -1 as its largest value, so it is out of range.
        assert_eq!(
            parse_number("-1", &int(1, UINT_MAX), true).unwrap_err(),
            "argument must be between 1 and 4294967295 inclusive"
        );
        let m = memory(1 << 20, LONG_MAX);
        assert_eq!(parse_number("1gb", &m, false), Ok(1 << 30));
        assert_eq!(
            parse_number("1k", &m, false).unwrap_err(),
            "argument must be between 1048576 and 9223372036854775807 inclusive"
        );
        // Past i64::MAX the value turns negative as a long long: out of range.
        assert!(parse_number("9223372036854775808", &m, false).is_err());
        assert_eq!(
            parse_number("-1", &m, false).unwrap_err(),
            "argument must be a memory value"
        );
        let all = memory(0, ULLONG_MAX);
        assert_eq!(parse_number("18446744073709551615", &all, true), Ok(-1));
        assert_eq!(render_number(-1, &all), "18446744073709551615");
        let p = Kind::MemoryOrPercent {
            min: -100,
            max: LONG_MAX,
        };
        assert_eq!(parse_number("50%", &p, false), Ok(-50));
        assert_eq!(render_number(-50, &p), "50%");
        assert_eq!(
            parse_number("200%", &p, false).unwrap_err(),
            "percentage argument must be less or equal to 100"
        );
        assert_eq!(
            parse_number("x%", &p, false).unwrap_err(),
            "argument must be a memory or percent value"
        );
        let o = Kind::Octal { min: 0, max: 0o777 };
        assert_eq!(parse_number("700", &o, true), Ok(0o700));
        assert_eq!(render_number(0o700, &o), "700");
        assert_eq!(
            parse_number("1000", &o, true).unwrap_err(),
            "argument must be between 0 and 777 inclusive"
        );
        assert_eq!(
            parse_number("9", &o, true).unwrap_err(),
            "argument couldn't be parsed as an octal number"
        );
    }

    #[test]
    fn strtoll_and_string2d_as_c() {
        assert_eq!(strtoll("", 10), Strtoll::Full(0));
        assert_eq!(strtoll(" +12", 10), Strtoll::Full(12));
        assert_eq!(strtoll("-3", 10), Strtoll::Full(-3));
        assert_eq!(strtoll("12x", 10), Strtoll::Partial);
        assert_eq!(strtoll(" ", 10), Strtoll::Partial);
        assert_eq!(strtoll("-", 10), Strtoll::Partial);
        assert_eq!(
            strtoll("99999999999999999999", 10),
            Strtoll::Overflow(i64::MAX)
        );
        assert_eq!(strtoll("-9223372036854775808", 10), Strtoll::Full(i64::MIN));
        assert_eq!(string2d("99.9"), Some(99.9));
        assert_eq!(string2d("1e2"), Some(100.0));
        for bad in ["", " 1", "nan", "1e999", "x", "1 "] {
            assert_eq!(string2d(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn yes_no() {
        assert_eq!(bool::parse(&["YES"], &Kind::Plain, &false), Ok(true));
        assert_eq!(bool::parse(&["no"], &Kind::Plain, &true), Ok(false));
        assert_eq!(
            bool::parse(&["maybe"], &Kind::Plain, &true).unwrap_err(),
            "argument must be 'yes' or 'no'"
        );
    }
}
