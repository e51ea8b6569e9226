//! Integer and score text, the way Redis converts them when it packs values.

/// Parses `s` as an i64 only when formatting the result gives back exactly `s`: no sign
/// other than a leading `-`, no leading zeros, no `-0`, at most 20 bytes. Redis packs a
/// string as an integer only then (so the original bytes can always be recovered).
pub fn parse_canonical_i64(s: &[u8]) -> Option<i64> {
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
    for &d in digits {
        if !d.is_ascii_digit() {
            return None;
        }
        v = v.checked_mul(10)?.checked_add((d - b'0') as u64)?;
    }
    if neg {
        if v > i64::MAX as u64 + 1 {
            return None;
        }
        Some((v as i64).wrapping_neg())
    } else {
        i64::try_from(v).ok()
    }
}

/// Room for any i64 in decimal.
pub type IntBuf = [u8; 20];

/// Formats `v` in decimal into `buf`, returning the digits.
pub fn format_i64(v: i64, buf: &mut IntBuf) -> &[u8] {
    let mut n = v.unsigned_abs();
    let mut i = buf.len();
    loop {
        i -= 1;
        buf[i] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    if v < 0 {
        i -= 1;
        buf[i] = b'-';
    }
    &buf[i..]
}

/// The i64 a double equals exactly, when Redis would print it as an integer: within
/// ±2^62 (Redis's bound for a safe conversion) and with no fractional part.
pub fn double_as_i64(d: f64) -> Option<i64> {
    const LIMIT: f64 = (i64::MAX / 2) as f64;
    if !(-LIMIT..=LIMIT).contains(&d) {
        return None;
    }
    let i = d as i64;
    (i as f64 == d).then_some(i)
}

/// A score as text for a listpack: integers as integers (so the listpack stores them as
/// numbers, like Redis), `inf`/`-inf`, `-0`, otherwise the shortest text that parses back
/// to the same double (decimal when short, exponent form for very large or small values).
pub fn format_score(d: f64, out: &mut Vec<u8>) {
    out.clear();
    if d == 0.0 {
        out.extend_from_slice(if d.is_sign_negative() { b"-0" } else { b"0" });
    } else if let Some(i) = double_as_i64(d) {
        let mut buf = IntBuf::default();
        out.extend_from_slice(format_i64(i, &mut buf));
    } else if d.is_infinite() {
        out.extend_from_slice(if d < 0.0 { b"-inf" } else { b"inf" });
    } else if d.is_nan() {
        out.extend_from_slice(b"nan");
    } else {
        let exp = d.abs().log10().floor();
        let s = if (-5.0..17.0).contains(&exp) {
            format!("{d}")
        } else {
            format!("{d:e}")
        };
        out.extend_from_slice(s.as_bytes());
    }
}

/// Parses a score written as text (listpack and ziplist members of sorted sets, RDB ZSET
/// values): decimal or exponent notation, `inf`, `-inf`, `nan`. Garbage is `None`.
pub fn parse_score(s: &[u8]) -> Option<f64> {
    let s = std::str::from_utf8(s).ok()?;
    if s.is_empty() || s.len() > 400 {
        return None;
    }
    s.parse::<f64>().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn canonical_integers_only() {
        for ok in [
            "0",
            "1",
            "-1",
            "9223372036854775807",
            "-9223372036854775808",
            "12345",
        ] {
            let v = parse_canonical_i64(ok.as_bytes()).expect(ok);
            assert_eq!(v.to_string(), ok);
        }
        for bad in [
            "",
            "-",
            "-0",
            "01",
            "+1",
            " 1",
            "1 ",
            "1a",
            "9223372036854775808",
            "-9223372036854775809",
            "123456789012345678901",
            "1.0",
        ] {
            assert_eq!(parse_canonical_i64(bad.as_bytes()), None, "{bad:?}");
        }
    }

    #[test]
    fn formats_every_edge() {
        let mut buf = IntBuf::default();
        for v in [0, 1, -1, 10, -10, i64::MAX, i64::MIN, 1234567890] {
            assert_eq!(format_i64(v, &mut buf), v.to_string().as_bytes());
        }
    }

    #[test]
    fn scores_round_trip_through_text() {
        let mut out = Vec::new();
        for d in [
            0.0,
            -0.0,
            1.0,
            -3.0,
            0.1,
            1.5e-7,
            2.5e300,
            -1e-300,
            123456.789,
            f64::INFINITY,
            f64::NEG_INFINITY,
            4611686018427387904.0,
            1e17,
            f64::MIN_POSITIVE,
            5e-324,
            f64::MAX,
        ] {
            format_score(d, &mut out);
            let back = parse_score(&out).expect("parses");
            assert_eq!(
                back.to_bits(),
                d.to_bits(),
                "{d} as {:?}",
                String::from_utf8_lossy(&out)
            );
        }
        format_score(3.0, &mut out);
        assert_eq!(out, b"3");
        assert!(parse_score(b"abc").is_none());
    }
}
