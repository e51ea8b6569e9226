//! Stream entry IDs (`<ms>-<seq>`, two u64s), their text forms as the commands parse them,
//! and the errors the stream operations report.

use std::fmt;

/// A stream entry ID. Ordered by `ms`, then `seq`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct StreamId {
    pub ms: u64,
    pub seq: u64,
}

/// The longest text an ID can take (`u64::MAX` twice and the dash).
pub const ID_TEXT_MAX: usize = 41;

impl StreamId {
    pub const MIN: StreamId = StreamId { ms: 0, seq: 0 };
    pub const MAX: StreamId = StreamId {
        ms: u64::MAX,
        seq: u64::MAX,
    };

    pub const fn new(ms: u64, seq: u64) -> StreamId {
        StreamId { ms, seq }
    }

    pub fn is_zero(self) -> bool {
        self == StreamId::MIN
    }

    /// The next ID, or None after the last possible one.
    pub fn incr(self) -> Option<StreamId> {
        match self.seq.checked_add(1) {
            Some(seq) => Some(StreamId { ms: self.ms, seq }),
            None => Some(StreamId {
                ms: self.ms.checked_add(1)?,
                seq: 0,
            }),
        }
    }

    /// The previous ID, or None before 0-0.
    pub fn decr(self) -> Option<StreamId> {
        match self.seq.checked_sub(1) {
            Some(seq) => Some(StreamId { ms: self.ms, seq }),
            None => Some(StreamId {
                ms: self.ms.checked_sub(1)?,
                seq: u64::MAX,
            }),
        }
    }

    /// Writes `<ms>-<seq>` into `buf`; returns the text.
    pub fn write<'b>(&self, buf: &'b mut [u8; ID_TEXT_MAX]) -> &'b [u8] {
        let mut at = 0;
        for (k, part) in [self.ms, self.seq].into_iter().enumerate() {
            if k == 1 {
                buf[at] = b'-';
                at += 1;
            }
            let mut digits = [0u8; 20];
            let mut i = digits.len();
            let mut v = part;
            loop {
                i -= 1;
                digits[i] = b'0' + (v % 10) as u8;
                v /= 10;
                if v == 0 {
                    break;
                }
            }
            let n = digits.len() - i;
            buf[at..at + n].copy_from_slice(&digits[i..]);
            at += n;
        }
        &buf[..at]
    }

    /// Parses an ID as Redis's stream commands do (streamGenericParseIDOrReply):
    /// `<ms>-<seq>`, or `<ms>` alone with `missing_seq` as the sequence; `-` and `+` are
    /// the smallest and largest IDs unless `strict`. The parts are read as strtoull reads
    /// them after string2ll (so " 7", "+7" and "007" are 7, a negative canonical integer is
    /// refused), and the text ends at a NUL byte, as C strings do.
    pub fn parse(text: &[u8], missing_seq: u64, strict: bool) -> Option<StreamId> {
        match parse_parts(text, strict, false)? {
            Parts::Full(id) => Some(id),
            Parts::MsOnly(ms) => Some(StreamId {
                ms,
                seq: missing_seq,
            }),
            Parts::AutoSeq(_) => None,
        }
    }

    /// A range bound (XRANGE, XREVRANGE, XPENDING): an ID or `-`/`+` (incomplete IDs take
    /// `missing_seq`), or `(` and a strict ID for an exclusive bound, which moves one step
    /// inwards (`start`: up, else down).
    pub fn parse_bound(
        text: &[u8],
        missing_seq: u64,
        start: bool,
    ) -> Result<StreamId, StreamError> {
        if text.len() > 1 && text[0] == b'(' {
            let id =
                StreamId::parse(&text[1..], missing_seq, true).ok_or(StreamError::InvalidId)?;
            if start {
                id.incr().ok_or(StreamError::InvalidStartInterval)
            } else {
                id.decr().ok_or(StreamError::InvalidEndInterval)
            }
        } else {
            StreamId::parse(text, missing_seq, false).ok_or(StreamError::InvalidId)
        }
    }
}

impl fmt::Display for StreamId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}-{}", self.ms, self.seq)
    }
}

/// The ID argument of XADD.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AddId {
    /// `*`: from the clock and the last ID.
    Auto,
    /// `<ms>-*`: this ms, the sequence generated.
    AutoSeq(u64),
    /// `<ms>-<seq>` or `<ms>` (sequence 0).
    Exact(StreamId),
}

impl AddId {
    /// Parses XADD's ID: `*`, `<ms>-*`, or a strict ID (no `-`/`+`).
    pub fn parse(text: &[u8]) -> Option<AddId> {
        if c_str(text) == b"*" {
            return Some(AddId::Auto);
        }
        Some(match parse_parts(text, true, true)? {
            Parts::Full(id) => AddId::Exact(id),
            Parts::MsOnly(ms) => AddId::Exact(StreamId { ms, seq: 0 }),
            Parts::AutoSeq(ms) => AddId::AutoSeq(ms),
        })
    }

    /// XADD refuses an explicit 0-0 before it looks the key up (so no stream is created).
    pub fn is_zero(self) -> bool {
        self == AddId::Exact(StreamId::MIN)
    }
}

enum Parts {
    Full(StreamId),
    MsOnly(u64),
    AutoSeq(u64),
}

/// The text up to the first NUL: what the C code sees of an argument.
fn c_str(text: &[u8]) -> &[u8] {
    match text.iter().position(|&b| b == 0) {
        Some(n) => &text[..n],
        None => text,
    }
}

fn parse_parts(text: &[u8], strict: bool, auto_seq: bool) -> Option<Parts> {
    // Redis copies the argument into a 128-byte buffer and refuses anything longer.
    if text.len() > 127 {
        return None;
    }
    let s = c_str(text);
    match s {
        b"-" | b"+" if strict => None,
        b"-" => Some(Parts::Full(StreamId::MIN)),
        b"+" => Some(Parts::Full(StreamId::MAX)),
        _ => {
            let Some(dash) = s.iter().position(|&b| b == b'-') else {
                return parse_u64(s).map(Parts::MsOnly);
            };
            let ms = parse_u64(&s[..dash])?;
            let rest = &s[dash + 1..];
            if auto_seq && rest == b"*" {
                return Some(Parts::AutoSeq(ms));
            }
            Some(Parts::Full(StreamId {
                ms,
                seq: parse_u64(rest)?,
            }))
        }
    }
}

/// Redis's string2ull: a canonical integer must not be negative; anything else goes to
/// strtoull (leading white space, an optional sign, at least one digit, no overflow, the
/// whole text used; a '-' negates modulo 2^64).
fn parse_u64(s: &[u8]) -> Option<u64> {
    if let Some(v) = crate::int::parse_i64(s) {
        return u64::try_from(v).ok();
    }
    let mut i = 0;
    while i < s.len() && matches!(s[i], b' ' | b'\t' | b'\n' | b'\x0b' | b'\x0c' | b'\r') {
        i += 1;
    }
    let neg = match s.get(i) {
        Some(b'-') => {
            i += 1;
            true
        }
        Some(b'+') => {
            i += 1;
            false
        }
        _ => false,
    };
    let digits = &s[i..];
    if digits.is_empty() || !digits.iter().all(u8::is_ascii_digit) {
        return None;
    }
    let mut v: u64 = 0;
    for &d in digits {
        v = v.checked_mul(10)?.checked_add(u64::from(d - b'0'))?;
    }
    Some(if neg { v.wrapping_neg() } else { v })
}

/// Errors of the stream operations, with Redis's texts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StreamError {
    InvalidId,
    InvalidStartInterval,
    InvalidEndInterval,
    /// XADD: the ID is not above the stream's last ID.
    IdNotGreater,
    /// XADD: an explicit 0-0.
    IdZero,
    /// XADD: the last ID is the largest possible.
    Exhausted,
    /// XADD: the fields and values total more than a node can take (1 GiB).
    TooLarge,
    /// XSETID: the ID is below the last entry's.
    SetIdBelowTop,
    /// XSETID: ENTRIESADDED is below the length.
    EntriesAddedBelowLength,
    /// XSETID: the ID is below MAXDELETEDID.
    SetIdBelowMaxDeleted,
    /// XGROUP CREATE: the group exists.
    BusyGroup,
}

impl StreamError {
    /// The error line (without the leading '-').
    pub fn text(self) -> &'static str {
        match self {
            StreamError::InvalidId => "ERR Invalid stream ID specified as stream command argument",
            StreamError::InvalidStartInterval => "ERR invalid start ID for the interval",
            StreamError::InvalidEndInterval => "ERR invalid end ID for the interval",
            StreamError::IdNotGreater => {
                "ERR The ID specified in XADD is equal or smaller than the target stream top item"
            }
            StreamError::IdZero => "ERR The ID specified in XADD must be greater than 0-0",
            StreamError::Exhausted => {
                "ERR The stream has exhausted the last possible ID, unable to add more items"
            }
            StreamError::TooLarge => "ERR Elements are too large to be stored",
            StreamError::SetIdBelowTop => {
                "ERR The ID specified in XSETID is smaller than the target stream top item"
            }
            StreamError::EntriesAddedBelowLength => {
                "ERR The entries_added specified in XSETID is smaller than the target stream length"
            }
            StreamError::SetIdBelowMaxDeleted => {
                "ERR The ID specified in XSETID is smaller than the provided max_deleted_entry_id"
            }
            StreamError::BusyGroup => "BUSYGROUP Consumer Group name already exists",
        }
    }
}

impl fmt::Display for StreamError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.text())
    }
}

impl std::error::Error for StreamError {}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(s: &str) -> Option<StreamId> {
        StreamId::parse(s.as_bytes(), 7, false)
    }

    #[test]
    fn parses_as_redis_does() {
        assert_eq!(p("1-2"), Some(StreamId::new(1, 2)));
        assert_eq!(p("5"), Some(StreamId::new(5, 7)), "missing seq");
        assert_eq!(p("-"), Some(StreamId::MIN));
        assert_eq!(p("+"), Some(StreamId::MAX));
        assert_eq!(StreamId::parse(b"-", 0, true), None);
        assert_eq!(StreamId::parse(b"+", 0, true), None);
        assert_eq!(
            p("18446744073709551615-18446744073709551615"),
            Some(StreamId::MAX)
        );
        assert_eq!(p("18446744073709551616-0"), None, "overflow");
        assert_eq!(p("1-18446744073709551616"), None, "overflow");
        // strtoull's leniency after string2ll refuses.
        assert_eq!(p(" 7-+3"), Some(StreamId::new(7, 3)));
        assert_eq!(p("007-0"), Some(StreamId::new(7, 0)));
        assert_eq!(p("1--05"), Some(StreamId::new(1, 5u64.wrapping_neg())));
        assert_eq!(p("1--5"), None, "canonical negative");
        assert_eq!(p("-5"), None, "empty ms");
        assert_eq!(p("1-"), None);
        assert_eq!(p("1-2-3"), None);
        assert_eq!(p("a-1"), None);
        assert_eq!(p(""), None);
        assert_eq!(p("1-*"), None, "only XADD takes ms-*");
        assert_eq!(p("3\0garbage"), Some(StreamId::new(3, 7)), "C string");
        assert_eq!(p(&"1".repeat(128)), None, "too long");
    }

    #[test]
    fn xadd_ids() {
        assert_eq!(AddId::parse(b"*"), Some(AddId::Auto));
        assert_eq!(AddId::parse(b"12-*"), Some(AddId::AutoSeq(12)));
        assert_eq!(
            AddId::parse(b"12"),
            Some(AddId::Exact(StreamId::new(12, 0)))
        );
        assert_eq!(AddId::parse(b"-"), None);
        assert_eq!(AddId::parse(b"+"), None);
        assert_eq!(AddId::parse(b"*-1"), None);
        assert!(AddId::parse(b"0-0").is_some_and(AddId::is_zero));
        assert!(!AddId::parse(b"0-*").is_some_and(AddId::is_zero));
    }

    #[test]
    fn bounds_and_steps() {
        let b = |s: &str, start| {
            StreamId::parse_bound(s.as_bytes(), if start { 0 } else { u64::MAX }, start)
        };
        assert_eq!(b("(1-0", true), Ok(StreamId::new(1, 1)));
        assert_eq!(b("(1-0", false), Ok(StreamId::new(0, u64::MAX)));
        assert_eq!(b("(5", false), Ok(StreamId::new(5, u64::MAX - 1)));
        assert_eq!(b("(-", true), Err(StreamError::InvalidId));
        assert_eq!(b("(+", false), Err(StreamError::InvalidId));
        assert_eq!(
            b("(18446744073709551615-18446744073709551615", true),
            Err(StreamError::InvalidStartInterval)
        );
        assert_eq!(b("(0-0", false), Err(StreamError::InvalidEndInterval));
        assert_eq!(
            b("(", true),
            Err(StreamError::InvalidId),
            "'(' alone is an ID"
        );
        assert_eq!(StreamId::MAX.incr(), None);
        assert_eq!(StreamId::MIN.decr(), None);
        assert_eq!(StreamId::new(1, u64::MAX).incr(), Some(StreamId::new(2, 0)));
        let mut buf = [0u8; ID_TEXT_MAX];
        assert_eq!(
            StreamId::MAX.write(&mut buf),
            b"18446744073709551615-18446744073709551615"
        );
        assert_eq!(StreamId::new(0, 12).write(&mut buf), b"0-12");
        assert_eq!(StreamId::new(3, 4).to_string(), "3-4");
    }
}
