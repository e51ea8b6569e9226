//! Streams (Redis 7.0 semantics): entries with increasing IDs, in nodes of up to
//! stream-node-max-entries entries (`node.rs`) kept in an ordered map by their first ID
//! (Redis uses a radix tree of listpacks), plus consumer groups (`group.rs`,
//! `deliver.rs`).
//!
//! Deleting an entry (XDEL, exact trimming inside a node) only marks it, as Redis does; a
//! node is freed when XDEL deletes its last live entry, or when trimming removes it whole.
//! Where nodes split follows Redis exactly, so XINFO's node count and approximate
//! trimming (whole nodes only) answer as Redis's do.
//!
//! Complexities are Redis's: appending O(1) amortized, finding an ID O(log N) plus a
//! walk within one node, ranges O(log N + returned), trimming O(removed), and O(log P)
//! for each pending-entry operation.
//!
//! Nothing here reads the clock: operations that need the time take `now` (Unix ms), so
//! the server and journal replay decide it.

mod build;
mod deliver;
mod group;
mod id;
mod node;
mod range;
mod trim;

#[cfg(test)]
mod group_tests;
#[cfg(test)]
mod tests;

pub use build::{NodeView, StreamBuilder};
pub use deliver::{
    AutoClaim, AutoClaimOutcome, ClaimOpts, ClaimOutcome, ClaimTime, Emit, GroupRead, ReadFrom,
    ReadGroup,
};
pub use group::{ConsumerRef, GroupRef, PendingRef, PendingSummary};
pub use id::{AddId, StreamError, StreamId, ID_TEXT_MAX};
pub use node::Fields;

pub use range::{Entry, Range};
pub use trim::{Trim, TrimStrategy};

use crate::entry::EntryRef;
use crate::locked::{Locked, WrongType};
use crate::types::list::class_round;
use crate::types::Encodings;
use crate::value::Value;
use group::Groups;
use node::Node;
use std::collections::BTreeMap;

/// A node never grows past this (listpack's 32-bit sizes), whatever stream-node-max-bytes
/// says; a single entry's fields and values may not total more either.
const NODE_MAX_BYTES: u64 = 1 << 30;

/// A stream value.
#[derive(Clone, Default, PartialEq)]
pub struct StreamValue {
    /// Nodes by their master ID (the ID of the first entry written to them).
    nodes: BTreeMap<StreamId, Node>,
    meta: Meta,
    groups: Groups,
}

/// A stream's counters and marks (apart from its entries, so that the groups' read
/// counters can follow them while the entries are being read).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
struct Meta {
    /// Live entries.
    length: u64,
    /// The last ID added (or set by XSETID); 0-0 when none.
    last_id: StreamId,
    /// The first live entry's ID as Redis records it ("recorded-first-entry-id").
    first_id: StreamId,
    /// The largest ID XDEL removed (or XSETID set).
    max_deleted: StreamId,
    /// Entries ever added.
    entries_added: u64,
}

impl std::fmt::Debug for StreamValue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StreamValue")
            .field("meta", &self.meta)
            .field("nodes", &self.nodes.len())
            .field(
                "entries",
                &self
                    .range(StreamId::MIN, StreamId::MAX, false)
                    .collect::<Vec<_>>(),
            )
            .field("groups", &self.groups)
            .finish()
    }
}

impl StreamValue {
    pub fn new() -> StreamValue {
        StreamValue::default()
    }

    /// OBJECT ENCODING's name.
    pub fn encoding(&self) -> &'static str {
        "stream"
    }

    /// Live entries (XLEN).
    pub fn len(&self) -> u64 {
        self.meta.length
    }

    pub fn is_empty(&self) -> bool {
        self.meta.length == 0
    }

    /// The last ID generated or set ("last-generated-id"; XREAD's `$`).
    pub fn last_id(&self) -> StreamId {
        self.meta.last_id
    }

    /// "recorded-first-entry-id": the first live entry's ID as Redis tracks it (0-0 when
    /// the stream is empty).
    pub fn recorded_first_id(&self) -> StreamId {
        self.meta.first_id
    }

    /// "max-deleted-entry-id".
    pub fn max_deleted_id(&self) -> StreamId {
        self.meta.max_deleted
    }

    /// "entries-added": entries ever added.
    pub fn entries_added(&self) -> u64 {
        self.meta.entries_added
    }

    /// Nodes ("radix-tree-keys" in XINFO STREAM).
    pub fn node_count(&self) -> usize {
        self.nodes.len()
    }

    /// Entries with IDs in `lo..=hi`, ascending, or descending when `rev` (XRANGE,
    /// XREVRANGE; COUNT is the caller's `take`).
    pub fn range(&self, lo: StreamId, hi: StreamId, rev: bool) -> Range<'_> {
        Range::new(&self.nodes, lo, hi, rev)
    }

    /// Entries with IDs above `id` (XREAD).
    pub fn after(&self, id: StreamId) -> Range<'_> {
        match id.incr() {
            Some(lo) => self.range(lo, StreamId::MAX, false),
            None => self.range(StreamId::MAX, StreamId::MIN, false),
        }
    }

    /// The entry with this ID, if it exists and is not deleted.
    pub fn get(&self, id: StreamId) -> Option<Entry<'_>> {
        self.range(id, id, false).next()
    }

    pub fn first_entry(&self) -> Option<Entry<'_>> {
        self.range(StreamId::MIN, StreamId::MAX, false).next()
    }

    pub fn last_entry(&self) -> Option<Entry<'_>> {
        self.range(StreamId::MIN, StreamId::MAX, true).next()
    }

    /// The last live entry's ID (XREAD and XREADGROUP compare it with what a reader has).
    pub fn last_entry_id(&self) -> Option<StreamId> {
        match self.nodes.last_key_value() {
            // Without deleted entries in the tail node, its last entry is live.
            Some((_, tail)) if tail.deleted == 0 => Some(tail.last),
            _ => self.last_entry().map(|e| e.id()),
        }
    }

    /// Redis's streamGetEdgeID: the first (or last) entry's ID, counting deleted entries
    /// unless `skip_deleted`; with none, MAX for the first and 0-0 for the last. XADD and
    /// XTRIM write the first one, deleted entries counted, into the journal for MINID ~.
    pub fn edge_id(&self, first: bool, skip_deleted: bool) -> StreamId {
        let mut walk = Range::new(&self.nodes, StreamId::MIN, StreamId::MAX, !first);
        if !skip_deleted {
            walk = walk.with_deleted();
        }
        match walk.next() {
            Some(e) => e.id(),
            None if first => StreamId::MAX,
            None => StreamId::MIN,
        }
    }

    /// Whether a group (or XREAD) positioned at `id` has entries to read now.
    pub fn has_entries_after(&self, id: StreamId) -> bool {
        self.meta.length > 0 && self.last_entry_id().is_some_and(|last| last > id)
    }

    /// Appends an entry (XADD) whose fields and values are `flat` (`[f1, v1, f2, v2...]`,
    /// an even number; a trailing odd one is ignored). `now` is the clock for `*` IDs.
    /// Refuses an explicit 0-0 (the caller checks that first too, before creating the
    /// stream, as Redis does), an ID not above the last one, and more than 1 GiB of fields
    /// and values. Trimming is a separate call (`trim`).
    pub fn add<A: AsRef<[u8]>>(
        &mut self,
        id: AddId,
        flat: &[A],
        now: u64,
        enc: &Encodings,
    ) -> Result<StreamId, StreamError> {
        if id.is_zero() {
            return Err(StreamError::IdZero);
        }
        if self.meta.last_id == StreamId::MAX {
            return Err(StreamError::Exhausted);
        }
        let last = self.meta.last_id;
        let id = match id {
            AddId::Auto if now > last.ms => StreamId::new(now, 0),
            AddId::Auto => last.incr().ok_or(StreamError::IdNotGreater)?,
            // Redis reports a sequence that would overflow as "too large".
            AddId::AutoSeq(ms) if ms == last.ms => last
                .incr()
                .filter(|n| n.ms == ms)
                .ok_or(StreamError::TooLarge)?,
            AddId::AutoSeq(ms) => StreamId::new(ms, 0),
            AddId::Exact(id) => id,
        };
        if id <= last {
            return Err(StreamError::IdNotGreater);
        }
        let flat = &flat[..flat.len() & !1];
        let elems: u64 = flat.iter().map(|e| e.as_ref().len() as u64).sum();
        if elems > NODE_MAX_BYTES {
            return Err(StreamError::TooLarge);
        }
        self.append_entry(id, flat, elems, enc);
        self.meta.entries_added += 1;
        self.meta.last_id = id;
        if self.meta.length == 1 {
            self.meta.first_id = id;
        }
        Ok(id)
    }

    /// Appends live entry `id` (above every ID in the stream) whose fields and values
    /// total `elems` bytes: in the tail node if it takes it under `enc`'s node limits,
    /// else in a new node, exactly where XADD puts it. Counts it in the length only.
    fn append_entry<A: AsRef<[u8]>>(
        &mut self,
        id: StreamId,
        flat: &[A],
        elems: u64,
        enc: &Encodings,
    ) {
        let max_bytes = match enc.stream_node_bytes() {
            0 => NODE_MAX_BYTES,
            b => b.min(NODE_MAX_BYTES),
        };
        let max_entries = enc.stream_node_entries();
        match self.nodes.last_entry() {
            Some(mut tail) if tail.get().takes(elems, max_bytes, max_entries) => {
                let master = *tail.key();
                tail.get_mut().push(master, id, flat, false);
            }
            tail => {
                if let Some(mut tail) = tail {
                    tail.get_mut().seal();
                }
                self.nodes.insert(id, Node::new(id, flat, false));
            }
        }
        self.meta.length += 1;
    }

    /// Marks one live entry deleted (freeing its node if it was the node's last live
    /// one). True if it was there.
    fn delete_one(&mut self, id: StreamId) -> bool {
        let Some((&master, node)) = self.nodes.range_mut(..=id).next_back() else {
            return false;
        };
        if node.last < id {
            return false;
        }
        let Some(raw) = node.cursor(master).find(|r| r.id >= id) else {
            return false;
        };
        if raw.id != id || raw.deleted {
            return false;
        }
        if node.live == 1 {
            self.nodes.remove(&master);
        } else {
            node.mark_deleted(raw.head_at);
        }
        self.meta.length -= 1;
        true
    }

    /// XDEL: deletes these IDs; returns how many were live entries. Tracks the largest
    /// deleted ID and the recorded first ID as Redis does.
    pub fn delete(&mut self, ids: &[StreamId]) -> usize {
        let mut deleted = 0;
        let mut first_went = false;
        for &id in ids {
            if self.delete_one(id) {
                first_went |= id == self.meta.first_id;
                self.meta.max_deleted = self.meta.max_deleted.max(id);
                deleted += 1;
            }
        }
        if deleted > 0 {
            if self.meta.length == 0 {
                self.meta.first_id = StreamId::MIN;
            } else if first_went {
                self.meta.first_id = self.edge_id(true, true);
            }
        }
        deleted
    }

    /// XSETID: sets the last ID, and optionally entries-added and max-deleted-entry-id (a
    /// 0-0 max-deleted ID leaves it unchanged, as in Redis). The caller checks
    /// `id >= max_deleted` when parsing, before looking the key up; it is checked here too.
    pub fn set_id(
        &mut self,
        id: StreamId,
        entries_added: Option<u64>,
        max_deleted: Option<StreamId>,
    ) -> Result<(), StreamError> {
        if max_deleted.is_some_and(|m| id < m) {
            return Err(StreamError::SetIdBelowMaxDeleted);
        }
        if self.meta.length > 0 {
            if self.last_entry_id().is_some_and(|top| id < top) {
                return Err(StreamError::SetIdBelowTop);
            }
            if entries_added.is_some_and(|n| n < self.meta.length) {
                return Err(StreamError::EntriesAddedBelowLength);
            }
        }
        self.meta.last_id = id;
        if let Some(n) = entries_added {
            self.meta.entries_added = n;
        }
        if let Some(m) = max_deleted.filter(|m| !m.is_zero()) {
            self.meta.max_deleted = m;
        }
        Ok(())
    }

    /// Heap bytes held (MEMORY USAGE): node buffers and the map, groups and their PELs,
    /// rounded up to the allocator's size classes.
    pub fn heap_bytes(&self) -> usize {
        // A B-tree leaf holds 11 (ID, node) slots in one allocation; appending leaves them
        // about 8 full.
        let leaf =
            class_round(11 * (std::mem::size_of::<StreamId>() + std::mem::size_of::<Node>()) + 16);
        std::mem::size_of::<StreamValue>()
            + self.nodes.len() * leaf / 8
            + self
                .nodes
                .values()
                .map(|n| class_round(n.capacity()))
                .sum::<usize>()
            + self.groups.heap_bytes()
    }

    /// About how many allocations freeing it takes (lazyfreeGetFreeEffort): one a node,
    /// and for the groups, each group and its pending entries (the first group's count
    /// standing for all, as in Redis).
    pub fn free_effort(&self) -> usize {
        self.nodes.len() + self.groups.free_effort()
    }
}

impl Locked<'_> {
    /// A read lookup (counts a hit or miss, touches the key) of a stream.
    pub fn stream_get(&mut self, key: &[u8]) -> Result<Option<&StreamValue>, WrongType> {
        match self.get(key) {
            None => Ok(None),
            Some(e) => e.as_stream().map(Some),
        }
    }

    /// A write-path lookup (no statistics) of a stream.
    pub fn stream_peek(&mut self, key: &[u8]) -> Result<Option<&StreamValue>, WrongType> {
        match self.peek(key) {
            None => Ok(None),
            Some(e) => e.as_stream().map(Some),
        }
    }

    /// The stream for editing, None when the key is missing, or WRONGTYPE.
    pub fn stream_mut(&mut self, key: &[u8]) -> Result<Option<&mut StreamValue>, WrongType> {
        match self.collection_mut(key)? {
            None => Ok(None),
            Some(Value::Stream(s)) => Ok(Some(s)),
            Some(_) => Err(WrongType),
        }
    }

    /// The stream for editing, created empty when the key is missing (an empty stream is
    /// a valid value: XADD MAXLEN 0, XGROUP CREATE MKSTREAM), or WRONGTYPE.
    pub fn stream_mut_or_create(&mut self, key: &[u8]) -> Result<&mut StreamValue, WrongType> {
        match self.collection_mut_or_create(key, || Value::Stream(Box::default()))? {
            Value::Stream(s) => Ok(s),
            _ => Err(WrongType),
        }
    }
}

impl<'a> EntryRef<'a> {
    /// The stream held here, or WRONGTYPE.
    pub fn as_stream(&self) -> Result<&'a StreamValue, WrongType> {
        match self.value() {
            Some(Value::Stream(s)) => Ok(s),
            _ => Err(WrongType),
        }
    }
}
