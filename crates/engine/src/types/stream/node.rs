//! One node of a stream: up to stream-node-max-entries entries in one byte buffer.
//!
//! Like Redis's listpack nodes, a node starts with a "master" list of field names (those of
//! its first entry); an entry with the same field names stores only its values. Unlike a
//! listpack, nothing is stored to walk an entry backwards (no per-element backlen, no
//! lp-count), IDs are deltas from the previous entry, and lengths are LEB128 varints:
//!
//! ```text
//! node:  varint(master field count) (varint(len) name)* entry*
//! entry: head [varint(ms delta - 63)] varint(seq part) fields
//!   head:   bit 7 deleted, bit 6 same fields as the master, bits 0-5 ms delta (63: more
//!           follows as a varint)
//!   seq:    the seq minus the previous entry's when the ms delta is 0, else the seq itself
//!   fields: same fields: (varint(len) value)* for each master field;
//!           otherwise varint(count) (varint(len) field varint(len) value)*
//! ```
//!
//! The first entry's "previous" is the node's master ID (the ID of its first entry, the
//! node's key in the stream's map). An entry of `f1 v1 f2 v2 f3 v3` thus takes 11 bytes,
//! where a listpack takes 20 or more. Reading backwards decodes a node forwards first
//! (nodes are small, so a reverse walk still costs O(1) an entry).
//!
//! Where nodes split must match Redis (XINFO's node count, and approximate trimming, which
//! removes whole nodes, depend on it), so each node also counts the bytes its listpack
//! would take in Redis (`lp_body`).

use super::id::StreamId;
use crate::types::hash::table::{get_varint, put_varint};
use crate::types::list::{Elem, Enc};

// Varints carry u64 IDs through the usize helpers.
const _: () = assert!(usize::BITS == 64);

const DELETED: u8 = 0x80;
const SAME: u8 = 0x40;
const MS_MASK: u8 = 0x3f;

/// A listpack's header (6 bytes) and terminator (1).
const LP_OVERHEAD: u64 = 7;

/// Bytes of a listpack element holding `s` (integers in canonical form are stored as
/// integers, as listpack does).
fn lp_str(s: &[u8]) -> u64 {
    Enc::new(Elem::of(s)).total() as u64
}

fn lp_int(v: i64) -> u64 {
    Enc::new(Elem::Int(v)).total() as u64
}

/// 64 bytes besides its buffer (the master field count and where entries start are read
/// from the buffer), so that a B-tree leaf of 11 nodes fits in a 896-byte allocation.
#[derive(Clone, Debug, PartialEq)]
pub(super) struct Node {
    buf: Vec<u8>,
    /// The last entry's ID, deleted or not.
    pub last: StreamId,
    /// Entries not deleted.
    pub live: u64,
    /// Entries marked deleted (still in the buffer, as in Redis).
    pub deleted: u64,
    /// The Redis listpack's size, without its live and deleted counters.
    lp_body: u64,
}

/// An entry as decoded from a node: where it is and what it holds.
#[derive(Clone, Copy, Debug)]
pub(super) struct Raw {
    pub id: StreamId,
    pub deleted: bool,
    pub same: bool,
    /// Field-value pairs.
    pub pairs: usize,
    /// Offset of the head byte.
    pub head_at: usize,
    /// Offset of the fields.
    pub fields_at: usize,
}

fn read_varint(buf: &[u8], at: usize) -> Option<(u64, usize)> {
    let (v, n) = get_varint(buf.get(at..)?);
    (n > 0).then_some((v as u64, at + n))
}

fn read_bytes(buf: &[u8], at: usize) -> Option<(&[u8], usize)> {
    let (len, at) = read_varint(buf, at)?;
    let end = at.checked_add(usize::try_from(len).ok()?)?;
    Some((buf.get(at..end)?, end))
}

fn put_bytes(buf: &mut Vec<u8>, b: &[u8]) {
    put_varint(buf, b.len());
    buf.extend_from_slice(b);
}

/// Field-value pairs of an entry being added, from a flat `[f1, v1, f2, v2...]`.
fn pairs<A: AsRef<[u8]>>(flat: &[A]) -> impl Iterator<Item = (&[u8], &[u8])> + Clone {
    flat.chunks_exact(2).map(|p| (p[0].as_ref(), p[1].as_ref()))
}

impl Node {
    /// A node whose first entry is `id` with `flat` fields, which become the master fields
    /// (`deleted`: written already deleted, for snapshot loading).
    pub fn new<A: AsRef<[u8]>>(id: StreamId, flat: &[A], deleted: bool) -> Node {
        let n = flat.len() / 2;
        let mut buf = Vec::with_capacity(64);
        put_varint(&mut buf, n);
        let mut lp_body = LP_OVERHEAD + lp_int(n as i64) + lp_int(0);
        for (f, _) in pairs(flat) {
            put_bytes(&mut buf, f);
            lp_body += lp_str(f);
        }
        let mut node = Node {
            buf,
            last: id,
            live: 0,
            deleted: 0,
            lp_body,
        };
        node.push(id, id, flat, deleted);
        node
    }

    /// The size Redis's listpack for this node would have.
    pub fn lp_bytes(&self) -> u64 {
        self.lp_body + lp_int(self.live as i64) + lp_int(self.deleted as i64)
    }

    /// Whether an entry whose fields and values total `elems_len` bytes may join this node
    /// (streamAppendItem's test; a `max_entries` of 0 means no limit).
    pub fn takes(&self, elems_len: u64, max_bytes: u64, max_entries: u64) -> bool {
        if self.lp_bytes().saturating_add(elems_len) >= max_bytes {
            return false;
        }
        max_entries == 0 || self.live + self.deleted < max_entries
    }

    /// The master field count and the offset of its first name.
    fn master(&self) -> (usize, usize) {
        match read_varint(&self.buf, 0) {
            Some((n, at)) => (n as usize, at),
            None => (0, 0),
        }
    }

    /// Where the entries start: after the master field names.
    fn entries_at(&self) -> usize {
        let (n, mut at) = self.master();
        for _ in 0..n {
            at = read_bytes(&self.buf, at).map_or(self.buf.len(), |(_, next)| next);
        }
        at
    }

    fn same_as_master<A: AsRef<[u8]>>(&self, flat: &[A]) -> bool {
        let (n, mut at) = self.master();
        if flat.len() / 2 != n {
            return false;
        }
        for (f, _) in pairs(flat) {
            match read_bytes(&self.buf, at) {
                Some((m, next)) if m == f => at = next,
                _ => return false,
            }
        }
        true
    }

    /// Appends entry `id` (above `last`) with `flat` fields; `master` is the node's key.
    /// `deleted` writes it already deleted (snapshot loading).
    pub fn push<A: AsRef<[u8]>>(
        &mut self,
        master: StreamId,
        id: StreamId,
        flat: &[A],
        deleted: bool,
    ) {
        // The first entry follows the master ID, which `last` already is.
        let prev = if self.live + self.deleted == 0 {
            master
        } else {
            self.last
        };
        let n = flat.len() / 2;
        let same = self.same_as_master(flat);
        let ms_delta = id.ms.wrapping_sub(prev.ms);
        let mut head = if same { SAME } else { 0 } | if deleted { DELETED } else { 0 };
        head |= ms_delta.min(u64::from(MS_MASK)) as u8;
        self.buf.push(head);
        if ms_delta >= u64::from(MS_MASK) {
            put_varint(&mut self.buf, (ms_delta - u64::from(MS_MASK)) as usize);
        }
        let seq = if ms_delta == 0 {
            id.seq.wrapping_sub(prev.seq)
        } else {
            id.seq
        };
        put_varint(&mut self.buf, seq as usize);
        // Redis's entry: flags, ms and seq deltas from the master ID, [count, fields],
        // values, lp-count.
        let mut lp = lp_int(0)
            + lp_int(id.ms.wrapping_sub(master.ms) as i64)
            + lp_int(id.seq.wrapping_sub(master.seq) as i64);
        let mut lp_count = n + 3;
        if !same {
            put_varint(&mut self.buf, n);
            lp += lp_int(n as i64);
            lp_count += n + 1;
        }
        for (f, v) in pairs(flat) {
            if !same {
                put_bytes(&mut self.buf, f);
                lp += lp_str(f);
            }
            put_bytes(&mut self.buf, v);
            lp += lp_str(v);
        }
        lp += lp_int(lp_count as i64);
        self.lp_body += lp;
        self.last = id;
        if deleted {
            self.deleted += 1;
        } else {
            self.live += 1;
        }
    }

    /// Releases spare capacity once the node stops being the tail.
    pub fn seal(&mut self) {
        self.buf.shrink_to_fit();
    }

    pub fn capacity(&self) -> usize {
        self.buf.capacity()
    }

    /// Marks the entry whose head byte is at `head_at` deleted.
    pub fn mark_deleted(&mut self, head_at: usize) {
        if let Some(h) = self.buf.get_mut(head_at) {
            if *h & DELETED == 0 {
                *h |= DELETED;
                self.live -= 1;
                self.deleted += 1;
            }
        }
    }

    /// A forward walk over all entries, deleted ones included.
    pub fn cursor(&self, master: StreamId) -> Cursor<'_> {
        Cursor {
            node: self,
            at: self.entries_at(),
            master_fields: self.master().0,
            prev: master,
        }
    }

    /// The fields of an entry decoded by `cursor`.
    pub fn fields(&self, raw: &Raw) -> Fields<'_> {
        Fields {
            buf: &self.buf,
            master_at: raw.same.then(|| self.master().1),
            at: raw.fields_at,
            left: raw.pairs,
        }
    }
}

/// Decodes a node's entries in order.
pub(super) struct Cursor<'a> {
    node: &'a Node,
    at: usize,
    master_fields: usize,
    prev: StreamId,
}

impl Iterator for Cursor<'_> {
    type Item = Raw;

    fn next(&mut self) -> Option<Raw> {
        let buf = &self.node.buf;
        let head_at = self.at;
        let head = *buf.get(head_at)?;
        let mut at = head_at + 1;
        let mut ms_delta = u64::from(head & MS_MASK);
        if ms_delta == MS_MASK as u64 {
            let (more, next) = read_varint(buf, at)?;
            ms_delta = ms_delta.wrapping_add(more);
            at = next;
        }
        let (seq_part, next) = read_varint(buf, at)?;
        at = next;
        let ms = self.prev.ms.wrapping_add(ms_delta);
        let seq = if ms_delta == 0 {
            self.prev.seq.wrapping_add(seq_part)
        } else {
            seq_part
        };
        let id = StreamId { ms, seq };
        let same = head & SAME != 0;
        let pairs = if same {
            self.master_fields
        } else {
            let (n, next) = read_varint(buf, at)?;
            at = next;
            usize::try_from(n).ok()?
        };
        let fields_at = at;
        for _ in 0..(if same { pairs } else { pairs.checked_mul(2)? }) {
            at = read_bytes(buf, at)?.1;
        }
        self.at = at;
        self.prev = id;
        Some(Raw {
            id,
            deleted: head & DELETED != 0,
            same,
            pairs,
            head_at,
            fields_at,
        })
    }
}

/// An entry's field-value pairs.
#[derive(Clone)]
pub struct Fields<'a> {
    buf: &'a [u8],
    /// The next master field name, for an entry with the master's fields.
    master_at: Option<usize>,
    at: usize,
    left: usize,
}

impl<'a> Iterator for Fields<'a> {
    type Item = (&'a [u8], &'a [u8]);

    fn next(&mut self) -> Option<Self::Item> {
        if self.left == 0 {
            return None;
        }
        let field = match &mut self.master_at {
            Some(m) => {
                let (f, next) = read_bytes(self.buf, *m)?;
                *m = next;
                f
            }
            None => {
                let (f, next) = read_bytes(self.buf, self.at)?;
                self.at = next;
                f
            }
        };
        let (value, next) = read_bytes(self.buf, self.at)?;
        self.at = next;
        self.left -= 1;
        Some((field, value))
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        (0, Some(self.left))
    }
}
