//! Reply writer: RESP2/RESP3 encodings of Redis 7.0's `addReply*` family.

mod g17;

use crate::num::{itoa, push_header};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Protocol {
    Resp2,
    Resp3,
}

/// `printf("%.17g", d)` as glibc formats it (`inf`, `-inf`, `nan`, `-nan` included).
pub fn format_g17(d: f64) -> String {
    let mut b = g17::StackBuf::new();
    g17::write_g17(&mut b, d);
    String::from_utf8_lossy(b.as_bytes()).into_owned()
}

/// Writes replies into an output buffer in the client's protocol.
pub struct Reply<'a> {
    pub buf: &'a mut Vec<u8>,
    pub proto: Protocol,
}

impl<'a> Reply<'a> {
    pub fn new(buf: &'a mut Vec<u8>, proto: Protocol) -> Self {
        Reply { buf, proto }
    }

    fn resp3(&self) -> bool {
        self.proto == Protocol::Resp3
    }

    #[inline]
    fn header(&mut self, prefix: u8, n: i64) {
        push_header(self.buf, prefix, n);
    }

    #[inline]
    fn len_header(&mut self, prefix: u8, n: usize) {
        self.header(prefix, i64::try_from(n).unwrap_or(i64::MAX));
    }

    pub fn ok(&mut self) {
        self.buf.extend_from_slice(b"+OK\r\n");
    }

    /// `+s`; the caller guarantees `s` has no CR or LF.
    pub fn simple(&mut self, s: &str) {
        self.buf.push(b'+');
        self.buf.extend_from_slice(s.as_bytes());
        self.buf.extend_from_slice(b"\r\n");
    }

    /// `-msg`, where `msg` starts with its code ("ERR ..."). Like Redis, trailing CR/LF
    /// are trimmed and inner ones become spaces, so the reply stays one line.
    pub fn error(&mut self, msg: &str) {
        let msg = msg.strip_prefix('-').unwrap_or(msg);
        let msg = msg.trim_end_matches(['\r', '\n']);
        self.buf.push(b'-');
        self.buf.extend(
            msg.bytes()
                .map(|b| if b == b'\r' || b == b'\n' { b' ' } else { b }),
        );
        self.buf.extend_from_slice(b"\r\n");
    }

    pub fn int(&mut self, n: i64) {
        self.header(b':', n);
    }

    pub fn bulk(&mut self, b: &[u8]) {
        self.len_header(b'$', b.len());
        self.buf.extend_from_slice(b);
        self.buf.extend_from_slice(b"\r\n");
    }

    pub fn null(&mut self) {
        self.buf
            .extend_from_slice(if self.resp3() { b"_\r\n" } else { b"$-1\r\n" });
    }

    pub fn null_array(&mut self) {
        self.buf
            .extend_from_slice(if self.resp3() { b"_\r\n" } else { b"*-1\r\n" });
    }

    pub fn array(&mut self, len: usize) {
        self.len_header(b'*', len);
    }

    /// RESP3 `%pairs`; RESP2 a flat array of `2 * pairs`.
    pub fn map(&mut self, pairs: usize) {
        if self.resp3() {
            self.len_header(b'%', pairs);
        } else {
            self.len_header(b'*', pairs.saturating_mul(2));
        }
    }

    pub fn set(&mut self, len: usize) {
        let p = if self.resp3() { b'~' } else { b'*' };
        self.len_header(p, len);
    }

    pub fn push(&mut self, len: usize) {
        let p = if self.resp3() { b'>' } else { b'*' };
        self.len_header(p, len);
    }

    /// Redis 7.0 `addReplyDouble`: RESP2 a bulk string, RESP3 a `,` double, both "%.17g".
    pub fn double(&mut self, d: f64) {
        let mut s = g17::StackBuf::new();
        g17::write_g17(&mut s, d);
        if self.resp3() {
            self.buf.push(b',');
            self.buf.extend_from_slice(s.as_bytes());
            self.buf.extend_from_slice(b"\r\n");
        } else {
            self.bulk(s.as_bytes());
        }
    }

    pub fn boolean(&mut self, b: bool) {
        if self.resp3() {
            self.buf
                .extend_from_slice(if b { b"#t\r\n" } else { b"#f\r\n" });
        } else {
            self.buf
                .extend_from_slice(if b { b":1\r\n" } else { b":0\r\n" });
        }
    }

    /// RESP3 `=len\r\nfmt:text`; `format` is cut or space-padded to 3 bytes, as Redis does.
    /// RESP2: a plain bulk string of `text`.
    pub fn verbatim(&mut self, format: &str, text: &[u8]) {
        if !self.resp3() {
            return self.bulk(text);
        }
        self.len_header(b'=', text.len().saturating_add(4));
        let f = format.as_bytes();
        for i in 0..3 {
            self.buf.push(f.get(i).copied().unwrap_or(b' '));
        }
        self.buf.push(b':');
        self.buf.extend_from_slice(text);
        self.buf.extend_from_slice(b"\r\n");
    }

    /// RESP3 `(digits` (a big number); RESP2 a bulk string of the same digits. The caller
    /// guarantees `digits` has no CR or LF.
    pub fn bignum(&mut self, digits: &str) {
        if !self.resp3() {
            return self.bulk(digits.as_bytes());
        }
        self.buf.push(b'(');
        self.buf.extend_from_slice(digits.as_bytes());
        self.buf.extend_from_slice(b"\r\n");
    }

    /// RESP3 `|pairs`: an attribute map whose `pairs` keys and values follow, then the
    /// reply it annotates. RESP2 has no attributes: the caller writes none there.
    pub fn attribute(&mut self, pairs: usize) {
        debug_assert!(self.resp3());
        self.len_header(b'|', pairs);
    }

    /// A bulk string holding the decimal text of `n`.
    pub fn bulk_int(&mut self, n: i64) {
        let mut tmp = [0u8; 20];
        let start = itoa(n, &mut tmp);
        self.bulk(&tmp[start..]);
    }

    /// Already-encoded bytes.
    pub fn raw(&mut self, bytes: &[u8]) {
        self.buf.extend_from_slice(bytes);
    }
}

#[cfg(test)]
mod tests;
