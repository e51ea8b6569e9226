//! DUMP / RESTORE payloads: a type byte, the value as in an RDB file, the RDB version as
//! 2 bytes little-endian, and the CRC64 of all that as 8 bytes little-endian.

use crate::crc64::crc64;
use crate::decode::read_value;
use crate::encode::{Encoder, WriteOptions};
use crate::error::{Error, PayloadError};
use crate::source::Source;
use crate::value::RdbValue;
use crate::{opcodes, types, RDB_VERSION};
use bytes::Bytes;

const FOOTER: usize = 10;
const SMALL_BUF: usize = 64 * 1024;

/// Serializes values as DUMP payloads, reusing its buffers across calls (MIGRATE of many
/// keys). [`dump`] is the one-off form.
#[derive(Default)]
pub struct Dumper {
    enc: Encoder,
    /// The payload is built here, then copied out at its exact size: growing a fresh
    /// vector to a few KiB would reallocate it a dozen times.
    buf: Vec<u8>,
}

/// A scratch buffer above this is not kept between payloads.
const KEEP_BUF: usize = 1 << 20;

impl Dumper {
    pub fn new(opts: WriteOptions) -> Self {
        Dumper {
            enc: Encoder::new(opts),
            buf: Vec::new(),
        }
    }

    /// The DUMP payload of `value`.
    pub fn dump(&mut self, value: &RdbValue) -> Vec<u8> {
        let mut out = std::mem::take(&mut self.buf);
        out.clear();
        let ty = self.enc.type_of(value);
        out.push(ty);
        // Writing into a Vec cannot fail.
        let _ = self.enc.write_value(&mut out, value, ty);
        seal(&mut out);
        let payload = out.as_slice().to_vec();
        if out.capacity() <= KEEP_BUF {
            self.buf = out;
        }
        payload
    }
}

/// The DUMP payload of `value`, encoded as Redis 7.0 would with default settings.
pub fn dump(value: &RdbValue) -> Vec<u8> {
    Dumper::default().dump(value)
}

/// FUNCTION DUMP's payload: one FUNCTION2 record per library (its full code, the
/// `#!<engine> name=<lib>` line included), then the RDB version and CRC64, as Redis 7.0
/// writes it.
pub fn dump_functions<'a>(codes: impl IntoIterator<Item = &'a [u8]>) -> Vec<u8> {
    let mut enc = Encoder::new(WriteOptions::default());
    let mut out = Vec::new();
    for code in codes {
        out.push(opcodes::FUNCTION2);
        // Writing into a Vec cannot fail.
        let _ = enc.write_string(&mut out, code);
    }
    seal(&mut out);
    out
}

/// Appends the footer: the RDB version and the CRC64 of everything before it.
fn seal(out: &mut Vec<u8>) {
    out.extend_from_slice(&RDB_VERSION.to_le_bytes());
    let crc = crc64(out);
    out.extend_from_slice(&crc.to_le_bytes());
}

/// What a payload's footer must satisfy besides its RDB version.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verify {
    /// A matching CRC64 too (RESTORE, FUNCTION RESTORE).
    Checksum,
    /// The version only: DEBUG SET-SKIP-CHECKSUM-VALIDATION 1, with which Redis's tests
    /// hand-edit payloads.
    VersionOnly,
}

/// Checks a payload's footer (at least 10 bytes, an RDB version no newer than 10, a
/// matching CRC64 unless `verify` says not) and returns its body.
fn body(payload: &[u8], verify: Verify) -> Result<&[u8], PayloadError> {
    let body_len = payload
        .len()
        .checked_sub(FOOTER)
        .ok_or(PayloadError::VersionOrChecksum)?;
    let version = u16::from_le_bytes([payload[body_len], payload[body_len + 1]]);
    let mut crc = [0u8; 8];
    crc.copy_from_slice(&payload[body_len + 2..]);
    let crc_ok = || u64::from_le_bytes(crc) == crc64(&payload[..body_len + 2]);
    if version > RDB_VERSION || (verify == Verify::Checksum && !crc_ok()) {
        return Err(PayloadError::VersionOrChecksum);
    }
    Ok(&payload[..body_len])
}

/// A source over a payload's body (no checksum to fold: the footer was checked).
fn source(body: &[u8]) -> Source<&[u8]> {
    let size = body.len().clamp(1, SMALL_BUF);
    let mut src = Source::with_sizes(body, size, size);
    src.set_checksum(false);
    src
}

/// Decodes a FUNCTION DUMP payload as FUNCTION RESTORE does: the footer is checked
/// ([`PayloadError::VersionOrChecksum`]), then the body must be function records up to
/// it: FUNCTION2 (a library's code) or the 7.0 release candidates' form (name, engine,
/// description, code), turned into the code with its `#!<engine> name=<lib>` line. A
/// malformed body is [`PayloadError::BadData`], whose detail is Redis's reply text ("given
/// type is not a function", "Failed loading library payload"...).
pub fn restore_functions(payload: &[u8]) -> Result<Vec<Bytes>, PayloadError> {
    restore_functions_with(payload, Verify::Checksum)
}

/// [`restore_functions`], with the footer checked as `verify` says.
pub fn restore_functions_with(payload: &[u8], verify: Verify) -> Result<Vec<Bytes>, PayloadError> {
    let mut src = source(body(payload, verify)?);
    let bad = |at: u64, what: &str| PayloadError::BadData(Error::corrupt(at, what));
    let mut codes = Vec::new();
    while !src.at_end().map_err(PayloadError::BadData)? {
        let at = src.offset();
        let ty = src.u8().map_err(|_| bad(at, "can not read data type"))?;
        let code = match ty {
            opcodes::FUNCTION2 => src
                .string()
                .map_err(|_| bad(at, "Failed loading library payload"))?,
            opcodes::FUNCTION_PRE_GA => {
                pre_release_function(&mut src).map_err(|what| bad(at, what))?
            }
            _ => return Err(bad(at, "given type is not a function")),
        };
        codes.push(code);
    }
    Ok(codes)
}

/// A library in the release candidates' record: its name, engine, an optional
/// description (dropped, as Redis drops it) and code, as one code with its shebang line.
fn pre_release_function(src: &mut Source<&[u8]>) -> Result<Bytes, &'static str> {
    let name = src.string().map_err(|_| "Failed loading library name")?;
    let engine = src.string().map_err(|_| "Failed loading engine name")?;
    let has_desc = src
        .length()
        .map_err(|_| "Failed loading library description indicator")?;
    if has_desc != 0 {
        src.string()
            .map_err(|_| "Failed loading library description")?;
    }
    let blob = src.string().map_err(|_| "Failed loading library blob")?;
    let mut code = Vec::with_capacity(blob.len() + name.len() + engine.len() + 9);
    code.extend_from_slice(b"#!");
    code.extend_from_slice(&engine);
    code.extend_from_slice(b" name=");
    code.extend_from_slice(&name);
    code.push(b'\n');
    code.extend_from_slice(&blob);
    Ok(code.into())
}

/// Decodes a DUMP payload, checking it like RESTORE does: a footer with an RDB version
/// no newer than 10 and a matching CRC64 ([`PayloadError::VersionOrChecksum`]), then a
/// well-formed, non-empty value filling the rest ([`PayloadError::BadData`]).
pub fn restore(payload: &[u8]) -> Result<RdbValue, PayloadError> {
    restore_with(payload, Verify::Checksum)
}

/// [`restore`], with the footer checked as `verify` says.
pub fn restore_with(payload: &[u8], verify: Verify) -> Result<RdbValue, PayloadError> {
    let mut src = source(body(payload, verify)?);
    let bad = |e: Error| PayloadError::BadData(e);
    let ty = src.u8().map_err(bad)?;
    if !types::is_value_type(ty) {
        return Err(bad(Error::corrupt(0, format!("unknown value type {ty}"))));
    }
    let value = read_value(&mut src, ty, None)
        .map_err(bad)?
        .ok_or_else(|| bad(Error::corrupt(1, "empty collection")))?;
    if !src.at_end().map_err(bad)? {
        return Err(bad(Error::corrupt(
            src.offset(),
            "trailing bytes after the value",
        )));
    }
    Ok(value)
}
