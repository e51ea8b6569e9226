//! A look at the request waiting after the one being run, without parsing it: its first
//! argument (usually its key), so the server can start loading that key's table slots
//! while it runs the current command. Only a hint: anything unusual gives None.

/// Length fields longer than this are not a request worth a hint.
const MAX_DIGITS: usize = 10;

/// The first argument of the multibulk request at the start of `buf` (the bulk string
/// after the command name), if `buf` holds it whole; None for anything else. Reads
/// nothing past `buf`.
pub fn peek_first_arg(buf: &[u8]) -> Option<&[u8]> {
    let (n, rest) = length(buf.strip_prefix(b"*")?)?;
    if n < 2 {
        return None;
    }
    let (_, rest) = bulk(rest)?;
    bulk(rest).map(|(arg, _)| arg)
}

/// A bulk string at the start of `b` and what follows it.
fn bulk(b: &[u8]) -> Option<(&[u8], &[u8])> {
    let (len, rest) = length(b.strip_prefix(b"$")?)?;
    let arg = rest.get(..len)?;
    (rest.get(len..len + 2)? == b"\r\n").then(|| (arg, &rest[len + 2..]))
}

/// A decimal length ended by CRLF at the start of `b`, and what follows it.
fn length(b: &[u8]) -> Option<(usize, &[u8])> {
    let digits = b.iter().take(MAX_DIGITS + 1).position(|&c| c == b'\r')?;
    if digits == 0 || digits > MAX_DIGITS || b.get(digits + 1) != Some(&b'\n') {
        return None;
    }
    let mut n = 0usize;
    for &c in &b[..digits] {
        n = n * 10 + usize::from(c.checked_sub(b'0').filter(|d| *d <= 9)?);
    }
    Some((n, &b[digits + 2..]))
}

#[cfg(test)]
mod tests {
    use super::peek_first_arg;

    #[test]
    fn finds_the_key_of_a_whole_request() {
        assert_eq!(
            peek_first_arg(b"*3\r\n$3\r\nSET\r\n$5\r\nmykey\r\n$1\r\nv\r\n"),
            Some(&b"mykey"[..])
        );
        // The rest of the request need not have arrived.
        assert_eq!(
            peek_first_arg(b"*2\r\n$3\r\nGET\r\n$1\r\nk\r\n*2"),
            Some(&b"k"[..])
        );
        assert_eq!(
            peek_first_arg(b"*2\r\n$3\r\nGET\r\n$0\r\n\r\n"),
            Some(&b""[..])
        );
    }

    #[test]
    fn anything_else_gives_none() {
        for bad in [
            &b""[..],
            b"PING\r\n",
            b"*1\r\n$4\r\nPING\r\n",
            b"*2\r\n$3\r\nGET\r\n$5\r\nkey",
            b"*2\r\n$3\r\nGET\r\n$3\r\nkey\n",
            b"*2\r\n$3\r\nGET\r\n$-1\r\n",
            b"*2\r\n$3\r\nGET\r\n$99999999999\r\nk\r\n",
            b"*x\r\n$3\r\nGET\r\n$1\r\nk\r\n",
            b"*2\r$3\r\nGET\r\n$1\r\nk\r\n",
            b"*2\r\n:3\r\nGET\r\n$1\r\nk\r\n",
        ] {
            assert_eq!(
                peek_first_arg(bad),
                None,
                "{:?}",
                String::from_utf8_lossy(bad)
            );
        }
    }
}
