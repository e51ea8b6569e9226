//! Buffered input with byte offsets, a running CRC64 and cheap string allocation.
//!
//! Strings up to [`ARENA_MAX`] bytes are copied into a shared chunk and handed out as
//! [`Bytes`] views of it, so a file of millions of small keys and values costs one
//! allocation per chunk instead of one per string. Larger strings get their own buffer,
//! grown only as their bytes actually arrive (a hostile length cannot reserve memory).
//! Collection members skip both: [`Source::string_into`] appends them straight to their
//! collection's buffer.

use crate::crc64;
use crate::error::{Error, ErrorKind};
use crate::lzf;
use crate::num::{format_i64, IntBuf};
use crate::packed::DecodeSpace;
use bytes::{Bytes, BytesMut};
use std::io::{self, Read};
use std::ops::Range;

/// Strings up to this size share arena chunks.
pub const ARENA_MAX: usize = 4096;
const DEFAULT_BUF: usize = 64 * 1024;
const DEFAULT_CHUNK: usize = 64 * 1024;
/// The buffer must hold any arena-sized string plus a little.
const MIN_BUF: usize = ARENA_MAX + 64;
/// A large string's buffer grows by at most this much ahead of its data.
const GROW_STEP: usize = 1 << 20;

/// A length field, or the special-encoding marker that can stand in a string's length.
pub enum Len {
    Plain(u64),
    Encoded(u8),
}

/// An element decoded from a packed blob: a range of the blob or an integer.
pub enum Elem {
    Str(Range<usize>),
    Int(i64),
}

pub struct Source<R> {
    inner: R,
    buf: Box<[u8]>,
    pos: usize,
    end: usize,
    /// Input offset of `buf[0]`.
    base: u64,
    crc: u64,
    /// `buf[..crc_pos]` is already folded into `crc`.
    crc_pos: usize,
    checksum: bool,
    arena: BytesMut,
    chunk: usize,
    scratch: Vec<u8>,
    /// Scratch for the decoders (their duplicate checks).
    pub space: DecodeSpace,
    /// Hand packed hashes and sorted sets out undecoded (`Reader::set_defer_packed`).
    pub defer_packed: bool,
}

impl<R: Read> Source<R> {
    pub fn new(inner: R) -> Self {
        Self::with_sizes(inner, DEFAULT_BUF, DEFAULT_CHUNK)
    }

    /// Smaller buffers for small inputs (a DUMP payload), so a short value neither costs
    /// nor pins a full-size chunk.
    pub fn with_sizes(inner: R, buf: usize, chunk: usize) -> Self {
        Source {
            inner,
            buf: vec![0u8; buf.max(MIN_BUF)].into_boxed_slice(),
            pos: 0,
            end: 0,
            base: 0,
            crc: 0,
            crc_pos: 0,
            checksum: true,
            arena: BytesMut::new(),
            chunk: chunk.clamp(64, DEFAULT_CHUNK),
            scratch: Vec::new(),
            space: DecodeSpace::default(),
            defer_packed: false,
        }
    }

    pub fn set_checksum(&mut self, on: bool) {
        self.checksum = on;
    }

    /// Offset of the next unread byte.
    pub fn offset(&self) -> u64 {
        self.base + self.pos as u64
    }

    fn fold_crc(&mut self) {
        if self.checksum && self.crc_pos < self.pos {
            self.crc = crc64::update(self.crc, &self.buf[self.crc_pos..self.pos]);
        }
        self.crc_pos = self.pos;
    }

    /// The CRC64 of everything consumed so far.
    pub fn crc(&mut self) -> u64 {
        self.fold_crc();
        self.crc
    }

    pub fn truncated(&self) -> Error {
        Error::new(self.base + self.end as u64, ErrorKind::Truncated)
    }

    /// Reads more input behind what is buffered. False at end of input.
    fn fill(&mut self) -> Result<bool, Error> {
        self.fold_crc();
        if self.pos > 0 {
            self.buf.copy_within(self.pos..self.end, 0);
            self.base += self.pos as u64;
            self.end -= self.pos;
            self.pos = 0;
            self.crc_pos = 0;
        }
        loop {
            match self.inner.read(&mut self.buf[self.end..]) {
                Ok(0) => return Ok(false),
                Ok(n) => {
                    self.end += n;
                    return Ok(true);
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(Error::new(self.base + self.end as u64, ErrorKind::Io(e))),
            }
        }
    }

    /// Makes `n` (at most the buffer size) bytes available at `pos`.
    fn ensure(&mut self, n: usize) -> Result<(), Error> {
        while self.end - self.pos < n {
            if !self.fill()? {
                return Err(self.truncated());
            }
        }
        Ok(())
    }

    /// True when no input is left (reads ahead to find out).
    pub fn at_end(&mut self) -> Result<bool, Error> {
        Ok(self.pos == self.end && !self.fill()?)
    }

    pub fn u8(&mut self) -> Result<u8, Error> {
        self.ensure(1)?;
        let b = self.buf[self.pos];
        self.pos += 1;
        Ok(b)
    }

    pub fn array<const N: usize>(&mut self) -> Result<[u8; N], Error> {
        self.ensure(N)?;
        let mut a = [0u8; N];
        a.copy_from_slice(&self.buf[self.pos..self.pos + N]);
        self.pos += N;
        Ok(a)
    }

    pub fn i64_le(&mut self) -> Result<i64, Error> {
        Ok(i64::from_le_bytes(self.array()?))
    }

    /// A length, or the marker of a specially encoded string.
    pub fn len_or_encoding(&mut self) -> Result<Len, Error> {
        let at = self.offset();
        let b = self.u8()?;
        Ok(match b >> 6 {
            0 => Len::Plain((b & 0x3f) as u64),
            1 => Len::Plain(((b & 0x3f) as u64) << 8 | self.u8()? as u64),
            3 => Len::Encoded(b & 0x3f),
            _ => match b {
                0x80 => Len::Plain(u32::from_be_bytes(self.array()?) as u64),
                0x81 => Len::Plain(u64::from_be_bytes(self.array()?)),
                _ => {
                    return Err(Error::corrupt(
                        at,
                        format!("unknown length encoding 0x{b:02x}"),
                    ))
                }
            },
        })
    }

    pub fn length(&mut self) -> Result<u64, Error> {
        let at = self.offset();
        match self.len_or_encoding()? {
            Len::Plain(n) => Ok(n),
            Len::Encoded(_) => Err(Error::corrupt(
                at,
                "a string encoding marker where a length was expected",
            )),
        }
    }

    /// The value of an integer-encoded string (encodings 0, 1, 2: 8, 16, 32 bits).
    fn encoded_int(&mut self, enc: u8) -> Result<i64, Error> {
        Ok(match enc {
            0 => self.u8()? as i8 as i64,
            1 => i16::from_le_bytes(self.array()?) as i64,
            _ => i32::from_le_bytes(self.array()?) as i64,
        })
    }

    /// A string in any of its encodings: raw, an 8/16/32-bit integer, or LZF-compressed.
    pub fn string(&mut self) -> Result<Bytes, Error> {
        let at = self.offset();
        match self.len_or_encoding()? {
            Len::Plain(n) => self.raw(n, at),
            Len::Encoded(e @ 0..=2) => {
                let v = self.encoded_int(e)?;
                Ok(self.int_bytes(v))
            }
            Len::Encoded(3) => self.lzf_with(at, decompress_to_bytes),
            Len::Encoded(e) => Err(Error::corrupt(at, format!("unknown string encoding {e}"))),
        }
    }

    /// Like [`Source::string`], appending the string's bytes to `out` instead.
    pub fn string_into(&mut self, out: &mut Vec<u8>) -> Result<(), Error> {
        let at = self.offset();
        match self.len_or_encoding()? {
            Len::Plain(n) => {
                let n = usize::try_from(n)
                    .map_err(|_| Error::corrupt(at, format!("string length {n} is too large")))?;
                if n <= self.buf.len() {
                    self.ensure(n)?;
                    out.extend_from_slice(&self.buf[self.pos..self.pos + n]);
                    self.pos += n;
                    Ok(())
                } else {
                    self.read_into(out, n)
                }
            }
            Len::Encoded(e @ 0..=2) => {
                let v = self.encoded_int(e)?;
                out.extend_from_slice(format_i64(v, &mut IntBuf::default()));
                Ok(())
            }
            Len::Encoded(3) => self.lzf_with(at, |input, len, _, _| {
                let start = out.len();
                out.resize(start + len, 0);
                lzf::decompress(input, &mut out[start..]).inspect_err(|_| out.truncate(start))
            }),
            Len::Encoded(e) => Err(Error::corrupt(at, format!("unknown string encoding {e}"))),
        }
    }

    fn raw(&mut self, n: u64, at: u64) -> Result<Bytes, Error> {
        if n == 0 {
            return Ok(Bytes::new());
        }
        if n <= ARENA_MAX as u64 {
            let n = n as usize;
            self.ensure(n)?;
            let Source {
                buf,
                pos,
                arena,
                chunk,
                ..
            } = self;
            let b = arena_put(arena, *chunk, &buf[*pos..*pos + n]);
            *pos += n;
            return Ok(b);
        }
        let n = usize::try_from(n)
            .map_err(|_| Error::corrupt(at, format!("string length {n} is too large")))?;
        let mut v = Vec::with_capacity(n.min(GROW_STEP));
        self.read_into(&mut v, n)?;
        Ok(Bytes::from(v))
    }

    /// Appends `n` input bytes to `v`, growing it only as data arrives.
    fn read_into(&mut self, v: &mut Vec<u8>, n: usize) -> Result<(), Error> {
        let mut left = n;
        while left > 0 {
            if self.pos == self.end && !self.fill()? {
                return Err(self.truncated());
            }
            let take = left.min(self.end - self.pos);
            v.extend_from_slice(&self.buf[self.pos..self.pos + take]);
            self.pos += take;
            left -= take;
        }
        Ok(())
    }

    /// Reads an LZF string's lengths and compressed bytes, and hands them to `f` with the
    /// uncompressed length (checked against what the data can expand to) and the arena.
    fn lzf_with<T>(
        &mut self,
        at: u64,
        f: impl FnOnce(&[u8], usize, &mut BytesMut, usize) -> Result<T, lzf::LzfError>,
    ) -> Result<T, Error> {
        let clen = self.length()?;
        let len = self.length()?;
        if len > clen.saturating_mul(lzf::MAX_EXPANSION) {
            return Err(Error::corrupt(
                at,
                format!("LZF string of {clen} bytes cannot expand to {len} bytes"),
            ));
        }
        let too_large = || Error::corrupt(at, format!("LZF string length {len} is too large"));
        let clen = usize::try_from(clen).map_err(|_| too_large())?;
        let len = usize::try_from(len).map_err(|_| too_large())?;
        let fail = |e: lzf::LzfError| Error::corrupt(at, format!("invalid LZF string: {e}"));
        if clen <= self.buf.len() {
            self.ensure(clen)?;
            let Source {
                buf,
                pos,
                arena,
                chunk,
                ..
            } = self;
            let out = f(&buf[*pos..*pos + clen], len, arena, *chunk);
            *pos += clen;
            out.map_err(fail)
        } else {
            let mut scratch = std::mem::take(&mut self.scratch);
            scratch.clear();
            let read = self.read_into(&mut scratch, clen);
            let out =
                read.and_then(|()| f(&scratch, len, &mut self.arena, self.chunk).map_err(fail));
            if scratch.capacity() <= GROW_STEP {
                self.scratch = scratch;
            }
            out
        }
    }

    /// The decimal text of `v`, as a string.
    pub fn int_bytes(&mut self, v: i64) -> Bytes {
        let mut b = IntBuf::default();
        arena_put(&mut self.arena, self.chunk, format_i64(v, &mut b))
    }

    /// A packed-blob element as a string: a view of the blob or an integer's text.
    pub fn elem(&mut self, blob: &Bytes, e: Elem) -> Bytes {
        match e {
            Elem::Str(r) => blob.slice(r),
            Elem::Int(v) => self.int_bytes(v),
        }
    }

    /// Gives back the reader and the bytes buffered beyond what was consumed.
    pub fn into_parts(self) -> (R, Vec<u8>) {
        (self.inner, self.buf[self.pos..self.end].to_vec())
    }
}

/// Copies `data` into the arena and returns it as a shared view.
fn arena_put(arena: &mut BytesMut, chunk: usize, data: &[u8]) -> Bytes {
    if data.is_empty() {
        return Bytes::new();
    }
    if arena.capacity() < data.len() {
        *arena = BytesMut::with_capacity(chunk.max(data.len()));
    }
    arena.extend_from_slice(data);
    arena.split_to(data.len()).freeze()
}

fn decompress_to_bytes(
    input: &[u8],
    len: usize,
    arena: &mut BytesMut,
    chunk: usize,
) -> Result<Bytes, lzf::LzfError> {
    if len == 0 {
        return lzf::decompress(input, &mut []).map(|()| Bytes::new());
    }
    if len <= ARENA_MAX {
        if arena.capacity() < len {
            *arena = BytesMut::with_capacity(chunk.max(len));
        }
        arena.resize(len, 0);
        match lzf::decompress(input, &mut arena[..]) {
            Ok(()) => Ok(arena.split_to(len).freeze()),
            Err(e) => {
                arena.clear();
                Err(e)
            }
        }
    } else {
        let mut v = vec![0u8; len];
        lzf::decompress(input, &mut v)?;
        Ok(Bytes::from(v))
    }
}
