//! Incremental request parser, matching Redis 7.0 `networking.c`.
//!
//! Quirks kept on purpose, because Redis has them:
//! - Header lines end at the first `\r`; the byte after it is skipped unchecked, as are
//!   the two bytes after bulk data.
//! - Redis searches lines with `strchr`, which stops at a NUL byte: a NUL before the
//!   terminator means "no terminator yet", so such a request waits until the pending
//!   bytes exceed `max_inline_len` and then fails with the "too big" error.

mod inline;

pub use inline::split_owned as split_args;

use bytes::{Buf, Bytes, BytesMut};
use std::fmt;

use crate::num::string2ll;

/// Bounds on what a client may send.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Limits {
    /// `proto-max-bulk-len`.
    pub max_bulk_len: usize,
    /// Largest accepted multibulk count (Redis: INT_MAX).
    pub max_multibulk_len: usize,
    /// Pending bytes allowed without a line terminator (PROTO_INLINE_MAX_SIZE).
    pub max_inline_len: usize,
    /// The client has not authenticated yet: as Redis, refuse more than 10 arguments or a
    /// bulk over 16 KiB, so an unauthenticated client cannot make the server buffer much.
    pub unauthenticated: bool,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_bulk_len: 512 * 1024 * 1024,
            max_multibulk_len: i32::MAX as usize,
            max_inline_len: 64 * 1024,
            unauthenticated: false,
        }
    }
}

/// A protocol violation; the text is Redis's, without the "ERR " prefix.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProtocolError(pub String);

impl fmt::Display for ProtocolError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for ProtocolError {}

impl ProtocolError {
    /// The exact reply Redis sends, `-ERR <msg>\r\n`. Unlike going through `&str`, this
    /// writes a byte >= 0x80 in "expected '$', got 'X'" as the single raw byte Redis sends.
    pub fn reply_bytes(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(self.0.len() + 7);
        out.extend_from_slice(b"-ERR ");
        // Messages are ASCII plus at most one Latin-1 char, so this is lossless.
        out.extend(self.0.chars().map(|c| u8::try_from(c).unwrap_or(b'?')));
        out.extend_from_slice(b"\r\n");
        out
    }
}

pub(crate) const TOO_BIG_MBULK: &str = "Protocol error: too big mbulk count string";
pub(crate) const INVALID_MBULK: &str = "Protocol error: invalid multibulk length";
pub(crate) const TOO_BIG_BULK: &str = "Protocol error: too big bulk count string";
pub(crate) const INVALID_BULK: &str = "Protocol error: invalid bulk length";
pub(crate) const TOO_BIG_INLINE: &str = "Protocol error: too big inline request";
pub(crate) const UNBALANCED: &str = "Protocol error: unbalanced quotes in request";
pub(crate) const UNAUTH_MBULK: &str = "Protocol error: unauthenticated multibulk length";
pub(crate) const UNAUTH_BULK: &str = "Protocol error: unauthenticated bulk length";

fn err<T>(msg: &str) -> Result<T, ProtocolError> {
    Err(ProtocolError(msg.to_owned()))
}

/// Redis formats the byte with `%c` and then maps CR/LF to spaces. Bytes >= 0x80 become
/// the Latin-1 char (Redis sends the raw byte; a `String` cannot hold it).
fn expected_dollar(b: u8) -> ProtocolError {
    let c = match b {
        b'\r' | b'\n' => ' ',
        _ => char::from(b),
    };
    ProtocolError(format!("Protocol error: expected '$', got '{c}'"))
}

/// First `\r` at or after `from`, as `strchr` would find it (a NUL hides it).
#[inline]
fn find_cr(buf: &[u8], from: usize) -> Result<usize, usize> {
    match buf[from..].iter().position(|&b| b == b'\r' || b == 0) {
        Some(i) if buf[from + i] == b'\r' => Ok(from + i),
        // Stay on the NUL so later calls find it at once.
        Some(i) => Err(from + i),
        None => Err(buf.len()),
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum State {
    /// At the start of a request (always at offset 0 of the buffer).
    Start,
    /// Inside a multibulk request.
    Bulks,
}

/// Incremental, resumable request parser. See [`Parser::parse`].
#[derive(Debug)]
pub struct Parser {
    limits: Limits,
    state: State,
    /// Offset of the line or bulk being read, from the front of the buffer.
    pos: usize,
    /// Offset up to which the current line was searched for its terminator.
    scan: usize,
    /// Bulks still to read.
    remaining: usize,
    /// Declared length of the bulk whose data is awaited.
    bulk_len: Option<usize>,
    /// Argument ranges found so far in the current frame.
    args: Vec<(usize, usize)>,
    /// Every line of the current frame ends in CRLF (Redis only checks the CR, and skips
    /// the two bytes after a bulk's data unread).
    canonical: bool,
    /// The last frame parsed, if it was canonical RESP (see `take_frame`).
    frame: Option<Bytes>,
}

impl Default for Parser {
    fn default() -> Self {
        Parser::new(Limits::default())
    }
}

impl Parser {
    pub fn new(limits: Limits) -> Parser {
        Parser {
            limits,
            state: State::Start,
            pos: 0,
            scan: 0,
            remaining: 0,
            bulk_len: None,
            args: Vec::new(),
            canonical: true,
            frame: None,
        }
    }

    /// The request `parse` last returned, as received, if it was a multibulk in canonical
    /// RESP: then the bytes are exactly the RESP encoding of its arguments, which a
    /// journal can store as they are instead of encoding them again.
    pub fn take_frame(&mut self) -> Option<Bytes> {
        self.frame.take()
    }

    pub fn set_limits(&mut self, limits: Limits) {
        self.limits = limits;
    }

    pub fn limits(&self) -> &Limits {
        &self.limits
    }

    /// Total size of the frame being parsed, when a bulk header has declared it up to
    /// the end of that bulk.
    pub fn frame_hint(&self) -> Option<usize> {
        match (self.state, self.bulk_len) {
            (State::Bulks, Some(len)) => Some(self.pos.saturating_add(len).saturating_add(2)),
            _ => None,
        }
    }

    /// How much of the front of the buffer Redis would no longer count in the client's
    /// query buffer (CLIENT LIST qbuf): the parsed head of a request whose awaited bulk is a
    /// big argument (32 KB or more), which Redis reads into a buffer that starts with its
    /// data. 0 otherwise.
    pub fn big_arg_offset(&self) -> usize {
        self.big_arg().map_or(0, |(start, _)| start)
    }

    /// Where the awaited bulk ends (with its CRLF), when it is a big argument (32 KB or
    /// more): a connection reads it into a buffer of that size.
    pub fn big_arg_end(&self) -> Option<usize> {
        self.big_arg().map(|(_, end)| end)
    }

    /// The awaited bulk's start and end in the buffer, when it is a big argument.
    fn big_arg(&self) -> Option<(usize, usize)> {
        const BIG_ARG: usize = 32 * 1024;
        match self.bulk_len {
            Some(len) if len >= BIG_ARG => Some((self.pos, self.frame_hint()?)),
            _ => None,
        }
    }

    fn reset(&mut self) {
        self.state = State::Start;
        self.pos = 0;
        self.scan = 0;
        self.remaining = 0;
        self.bulk_len = None;
        self.args.clear();
        // Do not keep a huge argv table alive after a huge command.
        if self.args.capacity() > 4096 {
            self.args = Vec::new();
        }
    }

    /// Parses the next complete command at the front of `buf`.
    ///
    /// On success the frame is split off `buf` and the arguments are slices of it.
    /// Empty commands are consumed and skipped. `Ok(None)` means more bytes are needed;
    /// progress inside a partial frame is kept, so the caller must only append to `buf`
    /// between calls. On `Err` the caller replies `-ERR <msg>` and closes.
    pub fn parse(&mut self, buf: &mut BytesMut) -> Result<Option<Vec<Bytes>>, ProtocolError> {
        self.frame = None;
        // A caller that broke the append-only contract must not make us index out of range.
        if buf.len() < self.pos || buf.len() < self.scan {
            self.reset();
        }
        let r = self.parse_inner(buf);
        if r.is_err() {
            self.reset();
        }
        r
    }

    fn parse_inner(&mut self, buf: &mut BytesMut) -> Result<Option<Vec<Bytes>>, ProtocolError> {
        loop {
            if self.state == State::Start {
                match buf.first() {
                    None => return Ok(None),
                    Some(b'*') => {
                        if !self.start_multibulk(buf)? {
                            return Ok(None);
                        }
                        if self.state == State::Start {
                            continue; // empty multibulk consumed
                        }
                    }
                    Some(_) => match self.inline(buf)? {
                        Inline::Partial => return Ok(None),
                        Inline::Empty => continue,
                        Inline::Done(argv) => return Ok(Some(argv)),
                    },
                }
            }
            return self.bulks(buf);
        }
    }

    /// Reads the `*<count>` line. Returns false when more bytes are needed.
    fn start_multibulk(&mut self, buf: &mut BytesMut) -> Result<bool, ProtocolError> {
        let cr = match find_cr(buf, self.scan) {
            Ok(cr) => cr,
            Err(scan) => {
                if buf.len() > self.limits.max_inline_len {
                    return err(TOO_BIG_MBULK);
                }
                self.scan = scan;
                return Ok(false);
            }
        };
        // Redis wants one byte after '\r' (which it does not check is '\n').
        if cr + 1 >= buf.len() {
            self.scan = cr;
            return Ok(false);
        }
        let n = match string2ll(&buf[1..cr]) {
            Some(n) if n <= 0 => {
                buf.advance(cr + 2);
                self.reset();
                return Ok(true);
            }
            Some(n) if (n as u64) <= self.limits.max_multibulk_len as u64 => n as usize,
            _ => return err(INVALID_MBULK),
        };
        if n > 10 && self.limits.unauthenticated {
            return err(UNAUTH_MBULK);
        }
        self.state = State::Bulks;
        self.canonical = buf[cr + 1] == b'\n';
        self.remaining = n;
        self.pos = cr + 2;
        self.scan = self.pos;
        self.bulk_len = None;
        self.args.clear();
        self.args.reserve(n.min(1024));
        Ok(true)
    }

    fn bulks(&mut self, buf: &mut BytesMut) -> Result<Option<Vec<Bytes>>, ProtocolError> {
        while self.remaining > 0 {
            let len = match self.bulk_len {
                Some(len) => len,
                None => {
                    let cr = match find_cr(buf, self.scan) {
                        Ok(cr) => cr,
                        Err(scan) => {
                            if buf.len() - self.pos > self.limits.max_inline_len {
                                return err(TOO_BIG_BULK);
                            }
                            self.scan = scan;
                            return Ok(None);
                        }
                    };
                    if cr + 1 >= buf.len() {
                        self.scan = cr;
                        return Ok(None);
                    }
                    let first = buf[self.pos];
                    if first != b'$' {
                        return Err(expected_dollar(first));
                    }
                    let len = match string2ll(&buf[self.pos + 1..cr]) {
                        Some(n) if n >= 0 && (n as u64) <= self.limits.max_bulk_len as u64 => {
                            n as usize
                        }
                        _ => return err(INVALID_BULK),
                    };
                    if len > 16384 && self.limits.unauthenticated {
                        return err(UNAUTH_BULK);
                    }
                    self.canonical &= buf[cr + 1] == b'\n';
                    self.pos = cr + 2;
                    self.bulk_len = Some(len);
                    len
                }
            };
            // Data plus the two bytes Redis skips after it.
            let end = self.pos.saturating_add(len);
            if buf.len() - self.pos < len.saturating_add(2) {
                return Ok(None);
            }
            self.args.push((self.pos, end));
            self.canonical &= buf[end..end + 2] == *b"\r\n";
            self.pos = end + 2;
            self.scan = self.pos;
            self.bulk_len = None;
            self.remaining -= 1;
        }
        let frame = buf.split_to(self.pos).freeze();
        let argv = self.args.iter().map(|&(s, e)| frame.slice(s..e)).collect();
        if self.canonical {
            self.frame = Some(frame);
        }
        self.reset();
        Ok(Some(argv))
    }

    fn inline(&mut self, buf: &mut BytesMut) -> Result<Inline, ProtocolError> {
        let nl = match buf[self.scan..].iter().position(|&b| b == b'\n' || b == 0) {
            Some(i) if buf[self.scan + i] == b'\n' => self.scan + i,
            found => {
                if buf.len() > self.limits.max_inline_len {
                    return err(TOO_BIG_INLINE);
                }
                // On a NUL, stay on it: Redis never looks past it.
                self.scan = found.map_or(buf.len(), |i| self.scan + i);
                return Ok(Inline::Partial);
            }
        };
        let line_end = if nl > 0 && buf[nl - 1] == b'\r' {
            nl - 1
        } else {
            nl
        };
        let tokens =
            inline::split_args(&buf[..line_end]).ok_or_else(|| ProtocolError(UNBALANCED.into()))?;
        if tokens.is_empty() {
            buf.advance(nl + 1);
            self.reset();
            return Ok(Inline::Empty);
        }
        let frame = buf.split_to(nl + 1).freeze();
        self.reset();
        Ok(Inline::Done(
            tokens.into_iter().map(|t| t.into_bytes(&frame)).collect(),
        ))
    }
}

enum Inline {
    Partial,
    Empty,
    Done(Vec<Bytes>),
}

#[cfg(test)]
mod tests;
