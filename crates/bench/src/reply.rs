//! The RESP reply reader: finds one complete reply at the front of a buffer and returns it
//! borrowed from that buffer (no copy, no allocation for the scalar replies that make up
//! nearly all benchmark traffic). strata-resp parses *requests*; replies are parsed here.
//!
//! Accepts RESP2 and RESP3. Input comes off the network, so every length is checked and
//! nothing panics on malformed bytes: a malformed reply is an error that ends the
//! connection, an incomplete one asks for more bytes.

use std::fmt;

/// One reply, borrowing its bytes from the read buffer.
#[derive(Clone, Debug, PartialEq)]
pub enum Value<'a> {
    /// `+...` (and RESP3 doubles `,` and big numbers `(` as their text).
    Simple(&'a [u8]),
    /// `-...` or a RESP3 blob error `!`.
    Error(&'a [u8]),
    Int(i64),
    /// `$n` or a RESP3 verbatim string `=` (its `txt:` prefix removed).
    Bulk(&'a [u8]),
    /// `$-1`, `*-1` or RESP3 `_`.
    Nil,
    Bool(bool),
    /// `*`, `~` (set), `>` (push), and `%` (map, keys and values alternating).
    Array(Vec<Value<'a>>),
}

impl Value<'_> {
    pub fn is_error(&self) -> bool {
        matches!(self, Value::Error(_))
    }

    /// The bytes of a string-like reply.
    pub fn bytes(&self) -> Option<&[u8]> {
        match self {
            Value::Simple(b) | Value::Bulk(b) | Value::Error(b) => Some(b),
            _ => None,
        }
    }

    /// An integer reply, or a string reply holding an integer.
    pub fn int(&self) -> Option<i64> {
        match self {
            Value::Int(n) => Some(*n),
            Value::Simple(b) | Value::Bulk(b) => std::str::from_utf8(b).ok()?.parse().ok(),
            _ => None,
        }
    }

    pub fn array(&self) -> Option<&[Value<'_>]> {
        match self {
            Value::Array(a) => Some(a),
            _ => None,
        }
    }

    /// A short human form for error messages and the blocking client's callers.
    pub fn show(&self) -> String {
        match self {
            Value::Simple(b) => String::from_utf8_lossy(b).into_owned(),
            Value::Error(b) => format!("(error) {}", String::from_utf8_lossy(b)),
            Value::Int(n) => format!("(integer) {n}"),
            Value::Bulk(b) if b.len() > 60 => {
                format!(
                    "\"{}...\" ({} bytes)",
                    String::from_utf8_lossy(&b[..60]),
                    b.len()
                )
            }
            Value::Bulk(b) => format!("\"{}\"", String::from_utf8_lossy(b)),
            Value::Nil => "(nil)".into(),
            Value::Bool(b) => format!("(boolean) {b}"),
            Value::Array(a) => {
                let parts: Vec<String> = a.iter().take(8).map(|v| v.show()).collect();
                let more = if a.len() > 8 { ", ..." } else { "" };
                format!("[{}{more}] ({} elements)", parts.join(", "), a.len())
            }
        }
    }
}

/// The reply stream is not RESP: the connection cannot continue.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReplyError(pub String);

impl fmt::Display for ReplyError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "protocol error in reply: {}", self.0)
    }
}

impl std::error::Error for ReplyError {}

/// Bounds on what a reply may claim, so a corrupt length cannot make the reader wait
/// forever or allocate without limit. Redis's own defaults are far below these.
const MAX_BULK: usize = 1 << 30;
const MAX_COUNT: usize = 1 << 30;
const MAX_DEPTH: usize = 64;

/// Parses one reply at the start of `buf`: `Ok(Some((value, bytes used)))`, `Ok(None)` when
/// the reply is not complete yet, `Err` when the bytes are not RESP.
pub fn parse(buf: &[u8]) -> Result<Option<(Value<'_>, usize)>, ReplyError> {
    let mut pos = 0;
    match parse_at(buf, &mut pos, 0)? {
        Some(v) => Ok(Some((v, pos))),
        None => Ok(None),
    }
}

/// The header line starting at `*pos` (after the type byte): its body, advancing past CRLF.
fn line<'a>(buf: &'a [u8], pos: &mut usize) -> Result<Option<&'a [u8]>, ReplyError> {
    let start = *pos;
    let Some(rel) = buf[start..].iter().position(|&b| b == b'\r') else {
        return Ok(None);
    };
    let cr = start + rel;
    match buf.get(cr + 1) {
        None => Ok(None),
        Some(b'\n') => {
            *pos = cr + 2;
            Ok(Some(&buf[start..cr]))
        }
        Some(_) => Err(ReplyError(format!(
            "CR not followed by LF in {:?}",
            String::from_utf8_lossy(&buf[start.saturating_sub(1)..(cr + 2).min(buf.len())])
        ))),
    }
}

fn int(body: &[u8]) -> Result<i64, ReplyError> {
    let bad = || ReplyError(format!("bad integer {:?}", String::from_utf8_lossy(body)));
    let (neg, digits) = match body.split_first() {
        Some((b'-', rest)) => (true, rest),
        Some((b'+', rest)) => (false, rest),
        _ => (false, body),
    };
    if digits.is_empty() || digits.len() > 19 {
        return Err(bad());
    }
    let mut n: i64 = 0;
    for &d in digits {
        if !d.is_ascii_digit() {
            return Err(bad());
        }
        n = n
            .checked_mul(10)
            .and_then(|n| n.checked_add((d - b'0') as i64))
            .ok_or_else(bad)?;
    }
    Ok(if neg { -n } else { n })
}

/// A length or count: -1 (null) up to `max`.
fn length(body: &[u8], max: usize) -> Result<i64, ReplyError> {
    let n = int(body)?;
    if n < -1 || n > max as i64 {
        return Err(ReplyError(format!("length {n} out of range")));
    }
    Ok(n)
}

fn parse_at<'a>(
    buf: &'a [u8],
    pos: &mut usize,
    depth: usize,
) -> Result<Option<Value<'a>>, ReplyError> {
    if depth > MAX_DEPTH {
        return Err(ReplyError("reply nested too deep".into()));
    }
    let Some(&kind) = buf.get(*pos) else {
        return Ok(None);
    };
    *pos += 1;
    let Some(body) = line(buf, pos)? else {
        return Ok(None);
    };
    let v = match kind {
        b'+' | b',' | b'(' => Value::Simple(body),
        b'-' => Value::Error(body),
        b':' => Value::Int(int(body)?),
        b'_' => Value::Nil,
        b'#' => match body {
            b"t" => Value::Bool(true),
            b"f" => Value::Bool(false),
            _ => return Err(ReplyError("bad boolean".into())),
        },
        b'$' | b'=' | b'!' => {
            let n = length(body, MAX_BULK)?;
            if n < 0 {
                if kind != b'$' {
                    return Err(ReplyError("negative length".into()));
                }
                return Ok(Some(Value::Nil));
            }
            let n = n as usize;
            let start = *pos;
            if buf.len() < start + n + 2 {
                return Ok(None);
            }
            if &buf[start + n..start + n + 2] != b"\r\n" {
                return Err(ReplyError("bulk string not ended by CRLF".into()));
            }
            *pos = start + n + 2;
            let data = &buf[start..start + n];
            match kind {
                b'$' => Value::Bulk(data),
                b'!' => Value::Error(data),
                _ => Value::Bulk(data.get(4..).unwrap_or_default()),
            }
        }
        b'*' | b'~' | b'>' | b'%' | b'|' => {
            let n = length(body, MAX_COUNT)?;
            if n < 0 {
                if kind != b'*' {
                    return Err(ReplyError("negative count".into()));
                }
                return Ok(Some(Value::Nil));
            }
            let count = if matches!(kind, b'%' | b'|') {
                2 * n as usize
            } else {
                n as usize
            };
            // Never trust a count for the allocation: the elements may not be there yet.
            let mut items = Vec::with_capacity(count.min(1024));
            for _ in 0..count {
                match parse_at(buf, pos, depth + 1)? {
                    Some(v) => items.push(v),
                    None => return Ok(None),
                }
            }
            if kind == b'|' {
                // An attribute annotates the reply that follows: that one is the reply.
                return parse_at(buf, pos, depth + 1);
            }
            Value::Array(items)
        }
        other => {
            return Err(ReplyError(format!(
                "unknown reply type byte {:?}",
                other as char
            )))
        }
    };
    Ok(Some(v))
}

#[cfg(test)]
mod tests {
    use super::*;
    use strata_resp::{Protocol, Reply};

    /// A corpus of replies written by strata-resp's reply writer (the server's own), in
    /// RESP2 and RESP3, each with the value the reader must produce.
    fn corpus(proto: Protocol) -> Vec<(Vec<u8>, Value<'static>)> {
        let r3 = proto == Protocol::Resp3;
        let mut out = Vec::new();
        let mut add = |f: &dyn Fn(&mut Reply), v: Value<'static>| {
            let mut buf = Vec::new();
            f(&mut Reply::new(&mut buf, proto));
            out.push((buf, v));
        };
        add(&|r| r.ok(), Value::Simple(b"OK"));
        add(&|r| r.error("ERR boom"), Value::Error(b"ERR boom"));
        add(&|r| r.int(-1234567), Value::Int(-1234567));
        add(&|r| r.int(i64::MAX), Value::Int(i64::MAX));
        add(
            &|r| r.bulk(b"hello\r\nworld"),
            Value::Bulk(b"hello\r\nworld"),
        );
        add(&|r| r.bulk(b""), Value::Bulk(b""));
        add(&|r| r.null(), Value::Nil);
        add(
            &|r| {
                r.array(3);
                r.bulk(b"a");
                r.int(2);
                r.array(0);
            },
            Value::Array(vec![Value::Bulk(b"a"), Value::Int(2), Value::Array(vec![])]),
        );
        add(
            &|r| {
                r.map(1);
                r.bulk(b"k");
                r.bulk(b"v");
            },
            Value::Array(vec![Value::Bulk(b"k"), Value::Bulk(b"v")]),
        );
        add(
            &|r| r.boolean(true),
            if r3 { Value::Bool(true) } else { Value::Int(1) },
        );
        add(
            &|r| r.verbatim("txt", b"some text"),
            Value::Bulk(b"some text"),
        );
        out
    }

    #[test]
    fn every_reply_split_at_every_byte() {
        for proto in [Protocol::Resp2, Protocol::Resp3] {
            let items = corpus(proto);
            // One stream of all replies, as a pipelined connection receives them.
            let stream: Vec<u8> = items.iter().flat_map(|(b, _)| b.clone()).collect();
            for cut in 0..=stream.len() {
                // Deliver the first `cut` bytes, read what is complete, then the rest.
                let mut got = Vec::new();
                let mut at = 0;
                let mut avail = cut;
                loop {
                    match parse(&stream[at..avail]).expect("valid RESP") {
                        Some((v, used)) => {
                            assert!(used > 0);
                            got.push(format!("{v:?}"));
                            at += used;
                        }
                        None if avail < stream.len() => avail = stream.len(),
                        None => break,
                    }
                }
                let want: Vec<String> = items.iter().map(|(_, v)| format!("{v:?}")).collect();
                assert_eq!(got, want, "{proto:?} cut at {cut}");
                assert_eq!(at, stream.len());
            }
            // And each reply alone: every strict prefix is incomplete, never an error.
            for (bytes, want) in &items {
                for cut in 0..bytes.len() {
                    assert_eq!(parse(&bytes[..cut]), Ok(None), "prefix {cut} of {bytes:?}");
                }
                assert_eq!(parse(bytes), Ok(Some((want.clone(), bytes.len()))));
            }
        }
    }

    #[test]
    fn attribute_is_skipped_and_nulls_read() {
        let b = b"|1\r\n+key\r\n+val\r\n:7\r\n";
        assert_eq!(parse(b), Ok(Some((Value::Int(7), b.len()))));
        assert_eq!(parse(b"*-1\r\n"), Ok(Some((Value::Nil, 5))));
        assert_eq!(parse(b"_\r\n"), Ok(Some((Value::Nil, 3))));
    }

    #[test]
    fn malformed_input_is_an_error_not_a_panic() {
        for bad in [
            &b"?x\r\n"[..],
            b"$abc\r\n",
            b"$-5\r\n",
            b"$3\r\nabcXY",
            b":12a\r\n",
            b"*99999999999999999999\r\n",
            b"+OK\rX",
            b"#x\r\n",
            b":\r\n",
        ] {
            assert!(parse(bad).is_err(), "{bad:?}");
        }
        // Deep nesting is refused rather than recursing without bound.
        let deep = b"*1\r\n".repeat(100);
        assert!(parse(&deep).is_err());
    }
}
