//! C printf's "%.17g" (glibc), without allocating.

use std::fmt::Write;

/// A small stack buffer that `write!` can fill.
pub(super) struct StackBuf {
    buf: [u8; 40],
    len: usize,
}

impl StackBuf {
    pub(super) fn new() -> Self {
        StackBuf {
            buf: [0; 40],
            len: 0,
        }
    }
    pub(super) fn as_bytes(&self) -> &[u8] {
        &self.buf[..self.len]
    }
    fn push(&mut self, b: u8) {
        // %.17g never needs more than 24 bytes; drop anything past the end rather than panic.
        if self.len < self.buf.len() {
            self.buf[self.len] = b;
            self.len += 1;
        }
    }
    fn extend(&mut self, s: &[u8]) {
        for &b in s {
            self.push(b);
        }
    }
}

impl Write for StackBuf {
    fn write_str(&mut self, s: &str) -> std::fmt::Result {
        self.extend(s.as_bytes());
        Ok(())
    }
}

/// Writes `d` as C's `printf("%.17g", d)` does.
pub(super) fn write_g17(out: &mut StackBuf, d: f64) {
    // Whole numbers below 1e17 print as plain integers under %.17g (an exponent below the
    // precision). Scripts pass counters and increments as Lua numbers on every call, so
    // this path skips the exact decimal expansion for them.
    if d.fract() == 0.0 && d.abs() < 1e17 {
        if d == 0.0 && d.is_sign_negative() {
            out.push(b'-');
        }
        let _ = write!(out, "{}", d as i64);
        return;
    }
    write_g17_general(out, d);
}

fn write_g17_general(out: &mut StackBuf, d: f64) {
    if d.is_nan() {
        out.extend(if d.is_sign_negative() {
            b"-nan"
        } else {
            b"nan"
        });
        return;
    }
    if d.is_infinite() {
        out.extend(if d < 0.0 { b"-inf" } else { b"inf" });
        return;
    }
    // Rust's exact formatting rounds half to even on the exact value, as glibc does.
    let mut sci = StackBuf::new();
    let _ = write!(sci, "{d:.16e}");
    let s = sci.as_bytes();
    let (neg, s) = match s.first() {
        Some(b'-') => (true, &s[1..]),
        _ => (false, s),
    };
    let e_at = s.iter().position(|&b| b == b'e').unwrap_or(s.len());
    let exp: i32 = std::str::from_utf8(&s[e_at.min(s.len())..])
        .ok()
        .and_then(|t| t.get(1..))
        .and_then(|t| t.parse().ok())
        .unwrap_or(0);
    // The 17 significant digits, without the point.
    let mut digits = [b'0'; 17];
    let mut n = 0;
    for &b in &s[..e_at] {
        if b.is_ascii_digit() && n < 17 {
            digits[n] = b;
            n += 1;
        }
    }
    // %g drops trailing zeros (no '#' flag).
    let mut sig = 17;
    while sig > 1 && digits[sig - 1] == b'0' {
        sig -= 1;
    }
    let digits = &digits[..sig];
    if neg {
        out.push(b'-');
    }
    if (-4..17).contains(&exp) {
        if exp < 0 {
            out.extend(b"0.");
            for _ in 0..(-exp - 1) {
                out.push(b'0');
            }
            out.extend(digits);
        } else {
            let int_len = exp as usize + 1;
            for i in 0..int_len {
                out.push(digits.get(i).copied().unwrap_or(b'0'));
            }
            if digits.len() > int_len {
                out.push(b'.');
                out.extend(&digits[int_len..]);
            }
        }
    } else {
        out.push(digits[0]);
        if digits.len() > 1 {
            out.push(b'.');
            out.extend(&digits[1..]);
        }
        out.push(b'e');
        out.push(if exp < 0 { b'-' } else { b'+' });
        let a = exp.unsigned_abs();
        if a < 10 {
            out.push(b'0');
        }
        let _ = write!(out, "{a}");
    }
}

#[cfg(test)]
mod tests {
    use super::super::format_g17;

    // Expected values are glibc printf("%.17g") outputs (checked with a C program).
    #[test]
    fn matches_c_printf() {
        let cases: &[(f64, &str)] = &[
            (1.1, "1.1000000000000001"),
            (0.1, "0.10000000000000001"),
            (1e20, "1e+20"),
            (100.0, "100"),
            (1.5e-5, "1.5e-05"),
            (1e-5, "1.0000000000000001e-05"),
            (3.0, "3"),
            (-0.0, "-0"),
            (0.0, "0"),
            (0.0001, "0.0001"),
            (0.5, "0.5"),
            (1e16, "10000000000000000"),
            (1e17, "1e+17"),
            (123456789012345678.0, "1.2345678901234568e+17"),
            (1e15 + 0.25, "1000000000000000.2"),
            (1e15 + 0.75, "1000000000000000.8"),
            (5e-324, "4.9406564584124654e-324"),
            (f64::MAX, "1.7976931348623157e+308"),
            (-2.5, "-2.5"),
            (f64::INFINITY, "inf"),
            (f64::NEG_INFINITY, "-inf"),
            (f64::NAN, "nan"),
            (-f64::NAN, "-nan"),
        ];
        for &(d, want) in cases {
            assert_eq!(format_g17(d), want, "{d:e}");
        }
    }

    proptest::proptest! {
        /// The whole-number shortcut writes what the general path writes.
        #[test]
        fn whole_numbers_match_the_general_path(
            n in -99_999_999_999_999_999i64..=99_999_999_999_999_999i64,
            shift in 0u32..60,
        ) {
            for d in [n as f64, (n >> shift) as f64] {
                let (mut fast, mut general) = (super::StackBuf::new(), super::StackBuf::new());
                super::write_g17(&mut fast, d);
                super::write_g17_general(&mut general, d);
                proptest::prop_assert_eq!(fast.as_bytes(), general.as_bytes(), "{}", d);
            }
        }
    }
}
