//! What SCAN, HSCAN, SSCAN and ZSCAN share: the cursor's parsing, the options, the MATCH
//! filter and the empty reply.

use crate::exec::command::CmdError;
use crate::exec::ctx::Ctx;

/// Redis's parseScanCursorOrReply: strtoul in base 10 over the C string (up to the first
/// NUL), refusing leading white space, trailing garbage and overflow. As with strtoul, an
/// empty string is 0, a '+' or '-' sign is accepted and "-N" wraps around.
pub(crate) fn parse_cursor(arg: &[u8]) -> Result<u64, CmdError> {
    let invalid = || CmdError::err("invalid cursor");
    let s = arg.split(|&b| b == 0).next().unwrap_or_default();
    let Some(&first) = s.first() else {
        return Ok(0);
    };
    if first.is_ascii_whitespace() || first == 0x0b {
        return Err(invalid());
    }
    let (neg, digits) = match first {
        b'-' => (true, &s[1..]),
        b'+' => (false, &s[1..]),
        _ => (false, s),
    };
    if digits.is_empty() {
        return Err(invalid());
    }
    let mut v: u64 = 0;
    for &d in digits {
        if !d.is_ascii_digit() {
            return Err(invalid());
        }
        v = v
            .checked_mul(10)
            .and_then(|v| v.checked_add(u64::from(d - b'0')))
            .ok_or_else(invalid)?;
    }
    Ok(if neg { v.wrapping_neg() } else { v })
}

/// COUNT, MATCH and (SCAN only) TYPE.
pub(crate) struct ScanOptions<'a> {
    pub count: usize,
    /// None for no MATCH or MATCH "*".
    pub pattern: Option<&'a [u8]>,
    pub type_name: Option<&'a [u8]>,
}

impl<'a> ScanOptions<'a> {
    /// Parses options from argv[first..]; TYPE is accepted only when `allow_type` (SCAN).
    /// HSCAN/SSCAN/ZSCAN parse them only once the key is found and of the right type, as
    /// Redis does.
    pub(crate) fn parse(ctx: &Ctx<'a>, first: usize, allow_type: bool) -> Result<Self, CmdError> {
        let mut o = ScanOptions {
            count: 10,
            pattern: None,
            type_name: None,
        };
        let mut i = first;
        while i < ctx.argv.len() {
            let more = ctx.argv.len() - i;
            let opt = ctx.lower(i);
            if opt == b"count" && more >= 2 {
                let n = ctx.int_arg(i + 1)?;
                if n < 1 {
                    return Err(CmdError::SYNTAX);
                }
                o.count = usize::try_from(n).unwrap_or(usize::MAX);
            } else if opt == b"match" && more >= 2 {
                let p = ctx.arg(i + 1);
                o.pattern = (p != b"*").then_some(p);
            } else if allow_type && opt == b"type" && more >= 2 {
                o.type_name = Some(ctx.arg(i + 1));
            } else {
                return Err(CmdError::SYNTAX);
            }
            i += 2;
        }
        Ok(o)
    }

    /// The MATCH filter.
    pub(crate) fn matches(&self, s: &[u8]) -> bool {
        self.pattern
            .is_none_or(|p| strata_engine::glob::matches(p, s, false))
    }
}

/// Redis's emptyscan reply: cursor "0" and no elements.
pub(crate) fn empty_scan(ctx: &mut Ctx<'_>) {
    ctx.out.array(2);
    ctx.out.bulk(b"0");
    ctx.out.array(0);
}

#[cfg(test)]
mod tests {
    use super::parse_cursor;

    #[test]
    fn cursor_follows_strtoul() {
        for (s, v) in [
            (&b""[..], 0),
            (b"0", 0),
            (b"+7", 7),
            (b"-0", 0),
            (b"-1", u64::MAX),
            (b"007", 7),
            (b"18446744073709551615", u64::MAX),
            (b"5\0junk", 5),
        ] {
            assert_eq!(parse_cursor(s), Ok(v), "{s:?}");
        }
        for bad in [
            &b" 0"[..],
            b"0 ",
            b"x",
            b"+",
            b"-",
            b"1x",
            b"1.5",
            b"18446744073709551616",
            b"\x0b1",
        ] {
            assert!(parse_cursor(bad).is_err(), "{bad:?}");
        }
    }
}
