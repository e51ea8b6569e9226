//! Integer text conversions shared by the parser and the reply writer.

/// Redis's `string2ll`: optional '-', no '+', no leading zeros (except "0"), no spaces,
/// fewer than 21 bytes, fits in i64.
#[inline]
pub(crate) fn string2ll(s: &[u8]) -> Option<i64> {
    // LONG_STR_SIZE is 21 in Redis: longer input is rejected before looking at it.
    if s.is_empty() || s.len() >= 21 {
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

/// Writes the decimal text of `n` at the end of `buf`; returns where the text starts.
/// No allocation: for hot paths that format integers (replies, INCR's stored value).
#[inline]
pub fn itoa(n: i64, buf: &mut [u8; 20]) -> usize {
    digits_before(n, buf, 20)
}

/// Writes the decimal text of `n` to end just before `buf[end]`; returns where it starts.
fn digits_before(n: i64, buf: &mut [u8], end: usize) -> usize {
    let mut v = n.unsigned_abs();
    let mut i = end;
    loop {
        i -= 1;
        buf[i] = b'0' + (v % 10) as u8;
        v /= 10;
        if v == 0 {
            break;
        }
    }
    if n < 0 {
        i -= 1;
        buf[i] = b'-';
    }
    i
}

/// Appends a RESP header line (`*3\r\n`, `$64\r\n`, `:-1\r\n`...) with one copy: replies and
/// journal records write several per command.
#[inline]
pub fn push_header(out: &mut Vec<u8>, prefix: u8, n: i64) {
    // Fixed-size copies for the usual one and two digits (argument counts, key lengths).
    match n {
        0..=9 => return out.extend_from_slice(&[prefix, b'0' + n as u8, b'\r', b'\n']),
        10..=99 => {
            let (t, u) = (b'0' + (n / 10) as u8, b'0' + (n % 10) as u8);
            return out.extend_from_slice(&[prefix, t, u, b'\r', b'\n']);
        }
        _ => {}
    }
    let mut line = [0u8; 23];
    let start = digits_before(n, &mut line, 21) - 1;
    line[start] = prefix;
    line[21] = b'\r';
    line[22] = b'\n';
    out.extend_from_slice(&line[start..]);
}

/// An integer with its decimal text, on the stack: a value to store that was computed
/// from a number (INCR, HINCRBY).
pub struct Digits {
    pub value: i64,
    buf: [u8; 20],
    start: usize,
}

impl Digits {
    pub fn of(value: i64) -> Digits {
        let mut buf = [0u8; 20];
        let start = itoa(value, &mut buf);
        Digits { value, buf, start }
    }
}

impl AsRef<[u8]> for Digits {
    fn as_ref(&self) -> &[u8] {
        &self.buf[self.start..]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn headers_hold_prefix_digits_and_crlf() {
        for n in [0, 7, 10, 64, 99, 100, 123_456, -1, -10, i64::MAX, i64::MIN] {
            let mut out = b"x".to_vec();
            push_header(&mut out, b'$', n);
            assert_eq!(out, format!("x${n}\r\n").into_bytes());
        }
    }

    #[test]
    fn string2ll_matches_redis() {
        let ok: &[(&[u8], i64)] = &[
            (b"0", 0),
            (b"1", 1),
            (b"-1", -1),
            (b"9223372036854775807", i64::MAX),
            (b"-9223372036854775808", i64::MIN),
            (b"1234", 1234),
        ];
        for (s, v) in ok {
            assert_eq!(string2ll(s), Some(*v), "{:?}", s);
        }
        let bad: &[&[u8]] = &[
            b"",
            b"-",
            b"-0",
            b"00",
            b"01",
            b"+1",
            b" 1",
            b"1 ",
            b"1a",
            b"9223372036854775808",
            b"-9223372036854775809",
            b"18446744073709551616",
            b"99999999999999999999",
            b"000000000000000000001",
        ];
        for s in bad {
            assert_eq!(string2ll(s), None, "{:?}", s);
        }
    }

    #[test]
    fn digits_hold_the_value_and_its_text() {
        for n in [0, 7, -7, 1234567890, i64::MAX, i64::MIN] {
            let d = Digits::of(n);
            assert_eq!(d.value, n);
            assert_eq!(d.as_ref(), n.to_string().as_bytes());
        }
    }

    #[test]
    fn itoa_edges() {
        for n in [0, 1, -1, 9, 10, -10, 12345, i64::MAX, i64::MIN] {
            let mut b = [0u8; 20];
            let start = itoa(n, &mut b);
            assert_eq!(&b[start..], n.to_string().as_bytes());
        }
    }
}
