//! Integers as Redis writes them: string2ll's canonical decimal text and its formatting.
//! (strata-resp has its own copy for the parser: the crates may not depend on each other.)

/// Redis's string2ll (isSdsRepresentableAsLongLong): the canonical decimal text of an i64
/// (optional '-', no '+', no leading zeros or spaces, "-0" refused).
pub fn parse_i64(s: &[u8]) -> Option<i64> {
    if s.is_empty() || s.len() > 20 {
        return None;
    }
    if s == b"0" {
        return Some(0);
    }
    let (neg, digits) = match s[0] {
        b'-' => (true, &s[1..]),
        _ => (false, s),
    };
    match digits.first() {
        Some(b'1'..=b'9') => {}
        _ => return None,
    }
    let mut v: u64 = 0;
    for &b in digits {
        let d = b.wrapping_sub(b'0');
        if d > 9 {
            return None;
        }
        v = v.checked_mul(10)?.checked_add(u64::from(d))?;
    }
    if neg {
        if v > i64::MIN.unsigned_abs() {
            return None;
        }
        Some((v as i64).wrapping_neg())
    } else {
        i64::try_from(v).ok()
    }
}

/// Formats `n` in decimal at the end of `buf` (20 bytes hold any i64, sign included).
pub fn fmt_i64(n: i64, buf: &mut [u8; 20]) -> &[u8] {
    let mut i = buf.len();
    let neg = n < 0;
    let mut v = n.unsigned_abs();
    loop {
        i -= 1;
        buf[i] = b'0' + (v % 10) as u8;
        v /= 10;
        if v == 0 {
            break;
        }
    }
    if neg {
        // i64::MIN has 19 digits plus the sign, which fits in 20 bytes.
        i -= 1;
        buf[i] = b'-';
    }
    &buf[i..]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn canonical_integers() {
        assert_eq!(parse_i64(b"0"), Some(0));
        assert_eq!(parse_i64(b"-12"), Some(-12));
        assert_eq!(parse_i64(b"-9223372036854775808"), Some(i64::MIN));
        for bad in [
            &b"-0"[..],
            b"01",
            b"+1",
            b" 1",
            b"",
            b"9223372036854775808",
            b"1a",
        ] {
            assert_eq!(parse_i64(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn format_round_trips() {
        let mut buf = [0u8; 20];
        for n in [0, 7, -1, 1234567890, i64::MIN, i64::MAX] {
            assert_eq!(fmt_i64(n, &mut buf), n.to_string().as_bytes());
        }
    }
}
