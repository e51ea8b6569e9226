//! Streams (RDB types 15 and 19): listpack nodes of delta-encoded entries, metadata, and
//! consumer groups with their pending entries.
//!
//! A node is a 16-byte big-endian master ID and a listpack: `count, deleted, nfields,
//! field..., 0` (the master entry), then per entry `flags, ms-delta, seq-delta,
//! [nfields, field, value, ... | value, ...], lp-count`. Flag 1 marks a deleted entry, flag
//! 2 an entry with the master's fields (so only values are stored).

use crate::decode::prealloc;
use crate::encode::{Encoder, Sink, LISTPACK_MAX};
use crate::error::{BlobError, Error};
use crate::listpack::Listpack;
use crate::num::parse_canonical_i64;
use crate::source::{Elem, Source};
use crate::value::{PendingEntry, StreamConsumer, StreamEntry, StreamGroup, StreamId, StreamValue};
use bytes::Bytes;
use std::io::{self, Read};

const FLAG_DELETED: i64 = 1;
const FLAG_SAMEFIELDS: i64 = 2;

/// Walks a node's listpack, reporting a premature end as an error.
struct Node<'a> {
    lp: Listpack<'a>,
    blob: &'a Bytes,
}

impl Node<'_> {
    fn elem(&mut self) -> Result<Elem, BlobError> {
        let at = self.lp.position();
        self.lp
            .next()?
            .ok_or_else(|| BlobError::new(at, "stream listpack ends inside an entry"))
    }

    fn int(&mut self) -> Result<i64, BlobError> {
        let at = self.lp.position();
        match self.elem()? {
            Elem::Int(v) => Ok(v),
            Elem::Str(r) => parse_canonical_i64(&self.blob[r])
                .ok_or_else(|| BlobError::new(at, "expected an integer")),
        }
    }

    fn count(&mut self, what: &str) -> Result<u64, BlobError> {
        let at = self.lp.position();
        u64::try_from(self.int()?).map_err(|_| BlobError::new(at, format!("negative {what}")))
    }

    fn string<R: Read>(&mut self, src: &mut Source<R>) -> Result<Bytes, BlobError> {
        let e = self.elem()?;
        Ok(src.elem(self.blob, e))
    }
}

/// Decodes one node's live entries into `out`.
fn read_node<R: Read>(
    blob: &Bytes,
    master: StreamId,
    src: &mut Source<R>,
    out: &mut Vec<StreamEntry>,
) -> Result<(), BlobError> {
    let mut n = Node {
        lp: Listpack::new(blob)?,
        blob,
    };
    if n.lp.header_count() == Some(0) {
        return Err(BlobError::new(4, "empty listpack inside a stream"));
    }
    let live = n.count("entry count")?;
    let deleted = n.count("deleted count")?;
    let nfields = n.count("field count")?;
    let mut master_fields = Vec::with_capacity(prealloc(nfields));
    for _ in 0..nfields {
        master_fields.push(n.string(src)?);
    }
    let at = n.lp.position();
    if n.int()? != 0 {
        return Err(BlobError::new(at, "master entry not terminated by 0"));
    }
    let total = live
        .checked_add(deleted)
        .ok_or_else(|| BlobError::new(0, "entry count overflows"))?;
    for _ in 0..total {
        let flags = n.int()?;
        let ms = master.ms.wrapping_add(n.int()? as u64);
        let seq = master.seq.wrapping_add(n.int()? as u64);
        let same = flags & FLAG_SAMEFIELDS != 0;
        let mut fields = Vec::new();
        if same {
            fields.reserve(master_fields.len());
            for f in &master_fields {
                fields.push((f.clone(), n.string(src)?));
            }
        } else {
            let nf = n.count("field count")?;
            fields.reserve(prealloc(nf));
            for _ in 0..nf {
                let f = n.string(src)?;
                fields.push((f, n.string(src)?));
            }
        }
        let at = n.lp.position();
        let nf = fields.len() as i64;
        let want = if same { nf + 3 } else { 2 * nf + 4 };
        if n.int()? != want {
            return Err(BlobError::new(
                at,
                "entry's element count (lp-count) is wrong",
            ));
        }
        if flags & FLAG_DELETED == 0 {
            out.push(StreamEntry {
                id: StreamId { ms, seq },
                fields,
            });
        }
    }
    let at = n.lp.position();
    if n.lp.next()?.is_some() {
        return Err(BlobError::new(at, "elements after the node's last entry"));
    }
    Ok(())
}

fn read_id<R: Read>(src: &mut Source<R>) -> Result<StreamId, Error> {
    Ok(StreamId {
        ms: src.length()?,
        seq: src.length()?,
    })
}

/// Redis's estimate of a group's read counter for streams saved before it was recorded
/// (type 15): exact at the stream's ends, unknown where deletions make it ambiguous.
fn estimate_entries_read(s: &StreamValue, id: StreamId) -> Option<u64> {
    let len = s.entries.len() as u64;
    if s.entries_added == 0 {
        return Some(0);
    }
    if id == s.last_id || (len == 0 && id < s.last_id) {
        return Some(s.entries_added);
    }
    if id > s.last_id {
        return None;
    }
    let zero = StreamId::default();
    if s.max_deleted_entry_id == zero || s.max_deleted_entry_id < s.first_id {
        if id < s.first_id {
            return Some(s.entries_added.wrapping_sub(len));
        }
        if id == s.first_id {
            return Some(s.entries_added.wrapping_sub(len).wrapping_add(1));
        }
    }
    None
}

/// Reads a stream value; `v2` for type 19 (with first ID, max deleted ID, entries added
/// and group read counters), else type 15 where Redis derives them.
pub(crate) fn read<R: Read>(src: &mut Source<R>, v2: bool) -> Result<StreamValue, Error> {
    let at = src.offset();
    let nodes = src.length()?;
    let mut by_node: Vec<(StreamId, Vec<StreamEntry>)> = Vec::with_capacity(prealloc(nodes));
    for _ in 0..nodes {
        let key_at = src.offset();
        let key = src.string()?;
        let master = <[u8; 16]>::try_from(&key[..])
            .map(StreamId::from_be_bytes)
            .map_err(|_| Error::corrupt(key_at, "stream node key is not a 16-byte ID"))?;
        let lp_at = src.offset();
        let blob = src.string()?;
        let mut entries = Vec::new();
        read_node(&blob, master, src, &mut entries)
            .map_err(|e| e.at_file(lp_at, "stream listpack"))?;
        by_node.push((master, entries));
    }
    // Redis keeps nodes in a radix tree, so their order in the file does not matter.
    by_node.sort_by_key(|n| n.0);
    if by_node.windows(2).any(|w| w[0].0 == w[1].0) {
        return Err(Error::corrupt(
            at,
            "two stream nodes have the same master ID",
        ));
    }
    let entries: Vec<StreamEntry> = by_node.into_iter().flat_map(|n| n.1).collect();
    if entries.windows(2).any(|w| w[0].id >= w[1].id) {
        return Err(Error::corrupt(
            at,
            "stream entries are not in ascending ID order",
        ));
    }
    let meta_at = src.offset();
    let length = src.length()?;
    if length != entries.len() as u64 {
        return Err(Error::corrupt(
            meta_at,
            format!(
                "stream length is {length} but it holds {} entries",
                entries.len()
            ),
        ));
    }
    let last_id = read_id(src)?;
    if entries.last().is_some_and(|e| e.id > last_id) {
        return Err(Error::corrupt(
            meta_at,
            "stream entry after the stream's last ID",
        ));
    }
    let mut s = StreamValue {
        last_id,
        ..StreamValue::default()
    };
    if v2 {
        s.first_id = read_id(src)?;
        s.max_deleted_entry_id = read_id(src)?;
        s.entries_added = src.length()?;
    } else {
        s.first_id = entries
            .first()
            .map_or(StreamId::new(u64::MAX, u64::MAX), |e| e.id);
        s.entries_added = length;
    }
    s.entries = entries;
    let ngroups = src.length()?;
    for _ in 0..ngroups {
        let g = read_group(src, v2, &s)?;
        s.groups.push(g);
    }
    if src.space.dups.any(s.groups.len(), |i| &s.groups[i].name) {
        return Err(Error::corrupt(at, "duplicate consumer group name"));
    }
    Ok(s)
}

fn read_group<R: Read>(
    src: &mut Source<R>,
    v2: bool,
    s: &StreamValue,
) -> Result<StreamGroup, Error> {
    let at = src.offset();
    let name = src.string()?;
    let last_delivered_id = read_id(src)?;
    let entries_read = if v2 {
        Some(src.length()?).filter(|&v| v != u64::MAX)
    } else {
        estimate_entries_read(s, last_delivered_id)
    };
    let npending = src.length()?;
    let mut pel: Vec<(StreamId, i64, u64)> = Vec::with_capacity(prealloc(npending));
    for _ in 0..npending {
        let id = StreamId::from_be_bytes(src.array()?);
        let time = src.i64_le()?;
        pel.push((id, time, src.length()?));
    }
    pel.sort_by_key(|p| p.0);
    if pel.windows(2).any(|w| w[0].0 == w[1].0) {
        return Err(Error::corrupt(
            at,
            "duplicate pending entry in a consumer group",
        ));
    }
    let mut owners: Vec<Option<Bytes>> = vec![None; pel.len()];
    let nconsumers = src.length()?;
    let mut consumers = Vec::with_capacity(prealloc(nconsumers));
    for _ in 0..nconsumers {
        let name = src.string()?;
        let seen_time = src.i64_le()?;
        let owned = src.length()?;
        for _ in 0..owned {
            let id_at = src.offset();
            let id = StreamId::from_be_bytes(src.array()?);
            let slot = pel
                .binary_search_by_key(&id, |p| p.0)
                .ok()
                .and_then(|i| owners.get_mut(i))
                .ok_or_else(|| {
                    Error::corrupt(
                        id_at,
                        format!("consumer's pending entry {id} is not in its group's list"),
                    )
                })?;
            if slot.is_some() {
                return Err(Error::corrupt(
                    id_at,
                    format!("pending entry {id} is owned twice"),
                ));
            }
            *slot = Some(name.clone());
        }
        consumers.push(StreamConsumer { name, seen_time });
    }
    if src.space.dups.any(consumers.len(), |i| &consumers[i].name) {
        return Err(Error::corrupt(at, "Duplicate stream consumer detected"));
    }
    let mut pending = Vec::with_capacity(pel.len());
    for ((id, delivery_time, delivery_count), owner) in pel.into_iter().zip(owners) {
        let consumer = owner.ok_or_else(|| {
            Error::corrupt(at, format!("pending entry {id} is owned by no consumer"))
        })?;
        pending.push(PendingEntry {
            id,
            delivery_time,
            delivery_count,
            consumer,
        });
    }
    Ok(StreamGroup {
        name,
        last_delivered_id,
        entries_read,
        pending,
        consumers,
    })
}

/// Writes a stream as type 19, splitting entries into nodes the way XADD does
/// (a new node when the current one reaches the byte or entry limit).
pub(crate) fn write<S: Sink>(enc: &mut Encoder, out: &mut S, s: &StreamValue) -> io::Result<()> {
    let max_bytes = match enc.opts.stream_node_max_bytes {
        0 => LISTPACK_MAX,
        n => n.min(LISTPACK_MAX),
    };
    let max_entries = enc.opts.stream_node_max_entries as i64;
    // All nodes are built first (into one buffer): their count comes before them.
    let mut nodes_buf = std::mem::take(&mut enc.nodes);
    nodes_buf.clear();
    let mut nodes: Vec<(StreamId, usize, usize)> = Vec::new();
    // The open node: master ID, master fields, entry count.
    type OpenNode<'a> = (StreamId, &'a [(Bytes, Bytes)], i64);
    let mut cur: Option<OpenNode> = None;
    let lp = &mut enc.lp;
    let mut close =
        |lp: &mut crate::listpack::ListpackWriter, master: StreamId, buf: &mut Vec<u8>| {
            let start = buf.len();
            buf.extend_from_slice(lp.finish());
            lp.clear();
            nodes.push((master, start, buf.len()));
        };
    for e in &s.entries {
        let size: usize = e.fields.iter().map(|(f, v)| f.len() + v.len()).sum();
        if let Some((master, _, count)) = cur {
            if lp.bytes() + size >= max_bytes || (max_entries != 0 && count >= max_entries) {
                close(lp, master, &mut nodes_buf);
                cur = None;
            }
        }
        let (master, same) = match &mut cur {
            None => {
                lp.push_int(1);
                lp.push_int(0);
                lp.push_int(e.fields.len() as i64);
                for (f, _) in &e.fields {
                    lp.push(f);
                }
                lp.push_int(0);
                cur = Some((e.id, &e.fields[..], 1));
                (e.id, true)
            }
            Some((master, master_fields, count)) => {
                lp.replace_first_int(*count, *count + 1);
                *count += 1;
                let same = master_fields.len() == e.fields.len()
                    && master_fields.iter().zip(&e.fields).all(|(a, b)| a.0 == b.0);
                (*master, same)
            }
        };
        lp.push_int(if same { FLAG_SAMEFIELDS } else { 0 });
        lp.push_int(e.id.ms.wrapping_sub(master.ms) as i64);
        lp.push_int(e.id.seq.wrapping_sub(master.seq) as i64);
        if !same {
            lp.push_int(e.fields.len() as i64);
        }
        for (f, v) in &e.fields {
            if !same {
                lp.push(f);
            }
            lp.push(v);
        }
        let nf = e.fields.len() as i64;
        lp.push_int(if same { nf + 3 } else { 2 * nf + 4 });
    }
    if let Some((master, _, _)) = cur {
        close(lp, master, &mut nodes_buf);
    }
    let r = write_nodes_and_meta(enc, out, s, &nodes_buf, &nodes);
    enc.nodes = nodes_buf;
    r
}

fn write_nodes_and_meta<S: Sink>(
    enc: &mut Encoder,
    out: &mut S,
    s: &StreamValue,
    buf: &[u8],
    nodes: &[(StreamId, usize, usize)],
) -> io::Result<()> {
    enc.write_len(out, nodes.len() as u64)?;
    for &(master, start, end) in nodes {
        enc.write_string(out, &master.to_be_bytes())?;
        enc.write_string(out, &buf[start..end])?;
    }
    enc.write_len(out, s.entries.len() as u64)?;
    for id in [s.last_id, s.first_id, s.max_deleted_entry_id] {
        enc.write_len(out, id.ms)?;
        enc.write_len(out, id.seq)?;
    }
    enc.write_len(out, s.entries_added)?;
    // Groups, consumers and pending entries in the sorted order of Redis's radix trees.
    let mut groups: Vec<&StreamGroup> = s.groups.iter().collect();
    groups.sort_by(|a, b| a.name.cmp(&b.name));
    enc.write_len(out, groups.len() as u64)?;
    for g in groups {
        enc.write_string(out, &g.name)?;
        enc.write_len(out, g.last_delivered_id.ms)?;
        enc.write_len(out, g.last_delivered_id.seq)?;
        enc.write_len(out, g.entries_read.unwrap_or(u64::MAX))?;
        let mut pending: Vec<&PendingEntry> = g.pending.iter().collect();
        pending.sort_by_key(|p| p.id);
        enc.write_len(out, pending.len() as u64)?;
        let mut owned: hashbrown::HashMap<&[u8], Vec<StreamId>> = hashbrown::HashMap::new();
        for p in &pending {
            out.put(&p.id.to_be_bytes())?;
            out.put(&p.delivery_time.to_le_bytes())?;
            enc.write_len(out, p.delivery_count)?;
            owned.entry(&p.consumer[..]).or_default().push(p.id);
        }
        let mut consumers: Vec<&StreamConsumer> = g.consumers.iter().collect();
        consumers.sort_by(|a, b| a.name.cmp(&b.name));
        enc.write_len(out, consumers.len() as u64)?;
        for c in consumers {
            enc.write_string(out, &c.name)?;
            out.put(&c.seen_time.to_le_bytes())?;
            let ids = owned.get(&c.name[..]).map_or(&[][..], |v| &v[..]);
            enc.write_len(out, ids.len() as u64)?;
            for id in ids {
                out.put(&id.to_be_bytes())?;
            }
        }
    }
    Ok(())
}
