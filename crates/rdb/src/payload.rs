//! DUMP / RESTORE payloads: a type byte, the value as in an RDB file, the RDB version as
//! 2 bytes little-endian, and the CRC64 of all that as 8 bytes little-endian.

use crate::crc64::crc64;
use crate::decode::read_value;
use crate::encode::{Encoder, WriteOptions};
use crate::error::{Error, PayloadError};
use crate::source::Source;
use crate::value::RdbValue;
use crate::{types, RDB_VERSION};

const FOOTER: usize = 10;
const SMALL_BUF: usize = 64 * 1024;

/// Serializes values as DUMP payloads, reusing its buffers across calls (MIGRATE of many
/// keys). [`dump`] is the one-off form.
#[derive(Default)]
pub struct Dumper {
    enc: Encoder,
}

impl Dumper {
    pub fn new(opts: WriteOptions) -> Self {
        Dumper {
            enc: Encoder::new(opts),
        }
    }

    /// The DUMP payload of `value`.
    pub fn dump(&mut self, value: &RdbValue) -> Vec<u8> {
        let mut out = Vec::new();
        let ty = self.enc.type_of(value);
        out.push(ty);
        // Writing into a Vec cannot fail.
        let _ = self.enc.write_value(&mut out, value, ty);
        out.extend_from_slice(&RDB_VERSION.to_le_bytes());
        let crc = crc64(&out);
        out.extend_from_slice(&crc.to_le_bytes());
        out
    }
}

/// The DUMP payload of `value`, encoded as Redis 7.0 would with default settings.
pub fn dump(value: &RdbValue) -> Vec<u8> {
    Dumper::default().dump(value)
}

/// Decodes a DUMP payload, checking it like RESTORE does: a footer with an RDB version
/// no newer than 10 and a matching CRC64 ([`PayloadError::VersionOrChecksum`]), then a
/// well-formed, non-empty value filling the rest ([`PayloadError::BadData`]).
pub fn restore(payload: &[u8]) -> Result<RdbValue, PayloadError> {
    let body_len = payload
        .len()
        .checked_sub(FOOTER)
        .ok_or(PayloadError::VersionOrChecksum)?;
    let version = u16::from_le_bytes([payload[body_len], payload[body_len + 1]]);
    let mut crc = [0u8; 8];
    crc.copy_from_slice(&payload[body_len + 2..]);
    if version > RDB_VERSION || u64::from_le_bytes(crc) != crc64(&payload[..body_len + 2]) {
        return Err(PayloadError::VersionOrChecksum);
    }
    let body = &payload[..body_len];
    let size = body.len().min(SMALL_BUF);
    let mut src = Source::with_sizes(body, size, size);
    src.set_checksum(false);
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
