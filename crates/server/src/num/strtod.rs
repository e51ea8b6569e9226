//! glibc's strtod, exactly: Redis parses scores, ranges and SORT weights with it, and
//! which strings it accepts (hex floats, "inf", "nan(...)") and when it reports ERANGE
//! decide Redis's replies. Callers apply their own Redis check on top (ZADD accepts a
//! subnormal, SORT refuses any ERANGE).

/// `ldexp`: x * 2^e without intermediate overflow or underflow.
fn ldexp(mut x: f64, mut e: i64) -> f64 {
    while e > 1000 {
        x *= 2f64.powi(1000);
        e -= 1000;
        if x.is_infinite() {
            return x;
        }
    }
    while e < -1000 {
        x *= 2f64.powi(-1000);
        e += 1000;
        if x == 0.0 {
            return x;
        }
    }
    x * 2f64.powi(e as i32)
}

/// glibc's strtod over all of `s` (no leading white space): the value and whether it
/// overflowed or underflowed to zero (ERANGE), or None when `s` is not exactly one number.
/// Decimal, hexadecimal (`0x1.8p3`), `inf`/`infinity` and `nan` forms, optional sign.
pub fn strtod_all(s: &[u8]) -> Option<(f64, bool)> {
    let (neg, body) = match s.first() {
        Some(b'-') => (true, &s[1..]),
        Some(b'+') => (false, &s[1..]),
        _ => (false, s),
    };
    let sign = if neg { -1.0 } else { 1.0 };
    if body.eq_ignore_ascii_case(b"inf") || body.eq_ignore_ascii_case(b"infinity") {
        return Some((sign * f64::INFINITY, false));
    }
    if body.len() >= 3 && body[..3].eq_ignore_ascii_case(b"nan") {
        let rest = &body[3..];
        let ok = rest.is_empty()
            || (rest.len() >= 2
                && rest[0] == b'('
                && rest[rest.len() - 1] == b')'
                && rest[1..rest.len() - 1]
                    .iter()
                    .all(|c| c.is_ascii_alphanumeric() || *c == b'_'));
        return ok.then_some((f64::NAN, false));
    }
    let is_hex = body.len() > 2
        && body[0] == b'0'
        && (body[1] | 0x20) == b'x'
        && (body[2].is_ascii_hexdigit()
            || (body[2] == b'.' && body.get(3).is_some_and(|c| c.is_ascii_hexdigit())));
    if is_hex {
        return hex_float(&body[2..]).map(|(v, e)| (sign * v, e));
    }
    // Decimal: digits [. digits] [e [sign] digits], at least one mantissa digit.
    let mut i = 0;
    let mut digits = 0;
    let mut nonzero = false;
    while i < body.len() && body[i].is_ascii_digit() {
        nonzero |= body[i] != b'0';
        i += 1;
        digits += 1;
    }
    if i < body.len() && body[i] == b'.' {
        i += 1;
        while i < body.len() && body[i].is_ascii_digit() {
            nonzero |= body[i] != b'0';
            i += 1;
            digits += 1;
        }
    }
    if digits == 0 {
        return None;
    }
    if i < body.len() && (body[i] | 0x20) == b'e' {
        i += 1;
        if i < body.len() && (body[i] == b'+' || body[i] == b'-') {
            i += 1;
        }
        let start = i;
        while i < body.len() && body[i].is_ascii_digit() {
            i += 1;
        }
        if i == start {
            return None;
        }
    }
    if i != body.len() {
        return None;
    }
    let v: f64 = std::str::from_utf8(s).ok()?.parse().ok()?;
    let erange = v.is_infinite() || (v == 0.0 && nonzero);
    Some((v, erange))
}

/// The part after "0x": hex digits [. hex digits] [p [sign] decimal digits].
fn hex_float(b: &[u8]) -> Option<(f64, bool)> {
    let mut mant: u64 = 0;
    let mut exp: i64 = 0;
    let mut sticky = false;
    let mut i = 0;
    let mut seen_point = false;
    while i < b.len() {
        let c = b[i];
        if c == b'.' && !seen_point {
            seen_point = true;
        } else if let Some(d) = (c as char).to_digit(16) {
            if mant >> 56 == 0 {
                mant = mant * 16 + u64::from(d);
                if seen_point {
                    exp -= 4;
                }
            } else {
                sticky |= d != 0;
                if !seen_point {
                    exp += 4;
                }
            }
        } else {
            break;
        }
        i += 1;
    }
    if i < b.len() {
        if (b[i] | 0x20) != b'p' {
            return None;
        }
        i += 1;
        let neg = match b.get(i) {
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
        let start = i;
        let mut e: i64 = 0;
        while i < b.len() && b[i].is_ascii_digit() {
            e = e.saturating_mul(10).saturating_add(i64::from(b[i] - b'0'));
            i += 1;
        }
        if i == start || i != b.len() {
            return None;
        }
        exp = exp.saturating_add(if neg { -e } else { e });
    }
    if mant == 0 {
        return Some((0.0, false));
    }
    // The sticky bit only matters past 56 significant bits; fold it into the lowest bit.
    let m = (mant | u64::from(sticky)) as f64;
    let v = ldexp(m, exp);
    Some((v, v.is_infinite() || v == 0.0))
}
