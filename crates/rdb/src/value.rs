//! The value model: what a key holds, independent of how Redis encoded it.

use crate::members::{Members, Pairs, Scored, Sorted};
use crate::packed::PackedValue;
use bytes::Bytes;

/// A value as stored under a key. Collections keep the order found in the input (for
/// lists that order is the value; for the others it is only the file's order).
#[derive(Debug, Clone, PartialEq)]
pub enum RdbValue {
    String(Bytes),
    List(Members),
    /// Distinct members.
    Set(Members),
    /// Distinct members with their scores (never NaN).
    SortedSet(Scored),
    /// Distinct fields with their values.
    Hash(Pairs),
    Stream(Box<StreamValue>),
    /// A hash or sorted set still packed as the file holds it, checked when decoded: only
    /// from a reader asked for it ([`crate::Reader::set_defer_packed`]).
    Packed(PackedValue),
}

impl RdbValue {
    /// True for a collection without elements (not a valid value: Redis never keeps one).
    pub fn is_empty_collection(&self) -> bool {
        match self {
            RdbValue::String(_) | RdbValue::Stream(_) | RdbValue::Packed(_) => false,
            RdbValue::List(v) | RdbValue::Set(v) => v.is_empty(),
            RdbValue::SortedSet(v) => v.is_empty(),
            RdbValue::Hash(v) => v.is_empty(),
        }
    }

    /// The name `TYPE` replies with.
    pub fn type_name(&self) -> &'static str {
        match self {
            RdbValue::String(_) => "string",
            RdbValue::List(_) => "list",
            RdbValue::Set(_) => "set",
            RdbValue::SortedSet(_) => "zset",
            RdbValue::Hash(_) => "hash",
            RdbValue::Stream(_) => "stream",
            RdbValue::Packed(p) => p.type_name(),
        }
    }

    /// The same value with the order that carries no meaning made canonical: set members,
    /// hash fields and sorted-set members sorted bytewise; stream consumer groups and
    /// consumers by name, pending entries by ID. Two values hold the same data exactly when
    /// their normalized forms are equal.
    pub fn normalized(mut self) -> Self {
        match &mut self {
            // Decoded first; one that does not decode stays as it is (and equals no value).
            RdbValue::Packed(p) => {
                if let Ok(v) = p.decode() {
                    return v.normalized();
                }
            }
            RdbValue::Set(m) => *m = m.sorted(),
            RdbValue::Hash(f) => *f = f.sorted(),
            RdbValue::SortedSet(m) => *m = m.sorted(),
            RdbValue::Stream(s) => {
                s.groups.sort_unstable_by(|a, b| a.name.cmp(&b.name));
                for g in &mut s.groups {
                    g.consumers.sort_unstable_by(|a, b| a.name.cmp(&b.name));
                    g.pending.sort_unstable_by_key(|p| p.id);
                }
            }
            RdbValue::String(_) | RdbValue::List(_) => {}
        }
        self
    }
}

/// A stream entry ID, `<ms>-<seq>`. Orders like Redis orders IDs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct StreamId {
    pub ms: u64,
    pub seq: u64,
}

impl StreamId {
    pub const fn new(ms: u64, seq: u64) -> Self {
        StreamId { ms, seq }
    }

    /// The 16-byte big-endian form RDB files use for node keys and pending entries.
    pub fn to_be_bytes(self) -> [u8; 16] {
        let mut b = [0u8; 16];
        b[..8].copy_from_slice(&self.ms.to_be_bytes());
        b[8..].copy_from_slice(&self.seq.to_be_bytes());
        b
    }

    pub fn from_be_bytes(b: [u8; 16]) -> Self {
        let mut ms = [0u8; 8];
        let mut seq = [0u8; 8];
        ms.copy_from_slice(&b[..8]);
        seq.copy_from_slice(&b[8..]);
        StreamId {
            ms: u64::from_be_bytes(ms),
            seq: u64::from_be_bytes(seq),
        }
    }
}

impl std::fmt::Display for StreamId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}-{}", self.ms, self.seq)
    }
}

/// One stream entry: its ID and field/value pairs in order.
#[derive(Debug, Clone, PartialEq)]
pub struct StreamEntry {
    pub id: StreamId,
    pub fields: Vec<(Bytes, Bytes)>,
}

/// A stream with its metadata and consumer groups (Redis 7.0's view of it).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct StreamValue {
    /// Live entries in ascending ID order (deleted ones are not kept).
    pub entries: Vec<StreamEntry>,
    /// The greatest ID ever added (XADD's lower bound).
    pub last_id: StreamId,
    /// The ID of the first entry (Redis keeps it even when the stream is empty).
    pub first_id: StreamId,
    /// The greatest ID ever deleted (0-0 if none).
    pub max_deleted_entry_id: StreamId,
    /// How many entries were ever added.
    pub entries_added: u64,
    pub groups: Vec<StreamGroup>,
}

/// A consumer group.
#[derive(Debug, Clone, PartialEq)]
pub struct StreamGroup {
    pub name: Bytes,
    pub last_delivered_id: StreamId,
    /// The group's logical read counter, `None` when Redis does not know it.
    pub entries_read: Option<u64>,
    /// Delivered but not acknowledged entries, each owned by one of `consumers`.
    pub pending: Vec<PendingEntry>,
    pub consumers: Vec<StreamConsumer>,
}

/// An entry of a group's pending entries list.
#[derive(Debug, Clone, PartialEq)]
pub struct PendingEntry {
    pub id: StreamId,
    /// Unix time in milliseconds of the last delivery.
    pub delivery_time: i64,
    pub delivery_count: u64,
    /// Name of the consumer that owns it.
    pub consumer: Bytes,
}

/// A consumer of a group.
#[derive(Debug, Clone, PartialEq)]
pub struct StreamConsumer {
    pub name: Bytes,
    /// Unix time in milliseconds the consumer was last seen.
    pub seen_time: i64,
}
