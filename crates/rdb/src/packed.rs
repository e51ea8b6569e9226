//! Hashes and sorted sets handed out still packed, to be decoded later on another thread.
//!
//! Most small hashes and sorted sets in a file are one listpack (or ziplist) blob each.
//! Decoding one means walking every element, checking it and copying it out: with a
//! loader's other threads waiting for the one that reads the file, that walk is better
//! done by them. [`crate::Reader::set_defer_packed`] makes the reader hand such values
//! out as [`RdbValue::Packed`]; whoever stores the key decodes it with
//! [`PackedValue::decode_in`], with the same checks and errors as the reader's own, and
//! reusing the buffers of a [`DecodeSpace`] from one value to the next.

use crate::decode::packed_value;
use crate::dups::DupFinder;
use crate::error::Error;
use crate::listpack::Listpack;
use crate::members::Members;
use crate::types;
use crate::value::RdbValue;
use crate::ziplist::Ziplist;
use bytes::Bytes;

/// Buffers kept up to this many bytes for the next value (a rare large one is freed).
const KEEP_BYTES: usize = 1 << 16;

/// A hash or sorted set as the file packed it (RDB types 10, 12, 16 and 17), at least one
/// element long by its header, not yet checked.
#[derive(Debug, Clone, PartialEq)]
pub struct PackedValue {
    ty: u8,
    blob: Bytes,
    /// Where the blob starts in the input, for errors.
    at: u64,
}

impl PackedValue {
    /// `blob` of type `ty` if it can wait: a packed hash or sorted set whose header counts
    /// its elements, and counts some (an empty one is skipped by the reader, so that
    /// question is answered now; a count too large for the header is rare and decoded now).
    pub(crate) fn deferrable(ty: u8, blob: Bytes, at: u64) -> Result<PackedValue, Bytes> {
        let count = match ty {
            types::HASH_LISTPACK | types::ZSET_LISTPACK => {
                Listpack::new(&blob).ok().and_then(|l| l.header_count())
            }
            types::HASH_ZIPLIST | types::ZSET_ZIPLIST => {
                Ziplist::new(&blob).ok().and_then(|z| z.header_count())
            }
            _ => None,
        };
        match count {
            Some(n) if n > 0 => Ok(PackedValue { ty, blob, at }),
            _ => Err(blob),
        }
    }

    /// The packed bytes, as the file holds them (decompressed).
    pub fn blob(&self) -> &[u8] {
        &self.blob
    }

    /// The name `TYPE` replies with.
    pub fn type_name(&self) -> &'static str {
        match self.ty {
            types::HASH_LISTPACK | types::HASH_ZIPLIST => "hash",
            _ => "zset",
        }
    }

    /// The value, decoded and checked as the reader checks what it decodes itself.
    pub fn decode(&self) -> Result<RdbValue, Error> {
        self.decode_in(&mut DecodeSpace::default())
    }

    /// [`PackedValue::decode`] into buffers of `space`; give the value back with
    /// [`DecodeSpace::recycle`] once it is used, for the next one to reuse them.
    pub fn decode_in(&self, space: &mut DecodeSpace) -> Result<RdbValue, Error> {
        packed_value(self.ty, &self.blob, self.at, space)
    }
}

/// Scratch space for decoding packed values one after the other on one thread.
#[derive(Default)]
pub struct DecodeSpace {
    pub(crate) dups: DupFinder,
    members: Members,
    scores: Vec<f64>,
}

impl DecodeSpace {
    /// An empty member buffer with room for `items` members of `bytes` bytes.
    pub(crate) fn members(&mut self, items: usize, bytes: usize) -> Members {
        std::mem::take(&mut self.members).reused(items, bytes)
    }

    /// An empty score buffer with room for `n` scores.
    pub(crate) fn scores(&mut self, n: usize) -> Vec<f64> {
        let mut s = std::mem::take(&mut self.scores);
        s.clear();
        s.reserve(n);
        s
    }

    /// Takes back the buffers of a value decoded here (or of any value: only small ones
    /// are kept).
    pub fn recycle(&mut self, v: RdbValue) {
        let members = match v {
            RdbValue::Hash(p) => p.into_flat(),
            RdbValue::SortedSet(s) => {
                let (members, scores) = s.into_parts();
                if scores.capacity() * std::mem::size_of::<f64>() <= KEEP_BYTES {
                    self.scores = scores;
                }
                members
            }
            _ => return,
        };
        if members.capacity_bytes() <= KEEP_BYTES {
            self.members = members;
        }
    }
}
