//! A stream in a snapshot: its whole state, node by node, so that it loads exactly as it
//! was (where nodes split and the deleted entries they keep decide what XINFO, XADD and
//! approximate trims do next). Layout in docs/persistence.md.

use strata_engine::stream::{StreamBuilder, StreamId};
use strata_engine::StreamValue;

use crate::snapshot::{put_bytes, put_varint};
use crate::snapshot_decode::{Cur, DecodeResult};

const F_DELETED: u8 = 1;

fn put_id(buf: &mut Vec<u8>, id: StreamId) {
    put_varint(buf, id.ms);
    put_varint(buf, id.seq);
}

/// IDs are written as deltas from the previous entry's (0-0 before the first).
fn put_id_delta(buf: &mut Vec<u8>, prev: StreamId, id: StreamId) {
    let ms = id.ms.wrapping_sub(prev.ms);
    put_varint(buf, ms);
    put_varint(
        buf,
        if ms == 0 {
            id.seq.wrapping_sub(prev.seq)
        } else {
            id.seq
        },
    );
}

fn get_id(c: &mut Cur<'_>) -> DecodeResult<StreamId> {
    Ok(StreamId::new(c.varint()?, c.varint()?))
}

fn get_id_delta(c: &mut Cur<'_>, prev: StreamId) -> DecodeResult<StreamId> {
    let ms = c.varint()?;
    let seq = c.varint()?;
    let bad = "stream entry ID out of range";
    Ok(if ms == 0 {
        StreamId::new(prev.ms, prev.seq.checked_add(seq).ok_or(bad)?)
    } else {
        StreamId::new(prev.ms.checked_add(ms).ok_or(bad)?, seq)
    })
}

/// Encodes a stream's value (after the entry head).
pub(crate) fn encode_stream(buf: &mut Vec<u8>, s: &StreamValue) {
    put_id(buf, s.last_id());
    put_id(buf, s.recorded_first_id());
    put_id(buf, s.max_deleted_id());
    put_varint(buf, s.entries_added());
    put_varint(buf, s.node_count() as u64);
    let mut prev = StreamId::MIN;
    for node in s.nodes() {
        put_varint(buf, node.len());
        for e in node.entries() {
            put_id_delta(buf, prev, e.id());
            prev = e.id();
            buf.push(if e.is_deleted() { F_DELETED } else { 0 });
            put_varint(buf, e.len() as u64);
            for (f, v) in e.fields() {
                put_bytes(buf, f);
                put_bytes(buf, v);
            }
        }
    }
    put_varint(buf, s.group_count() as u64);
    for g in s.groups() {
        put_bytes(buf, g.name());
        put_id(buf, g.last_id());
        buf.extend_from_slice(&g.entries_read().unwrap_or(-1).to_le_bytes());
        put_varint(buf, g.consumer_count() as u64);
        let mut names = Vec::with_capacity(g.consumer_count());
        for c in g.consumers() {
            put_bytes(buf, c.name());
            buf.extend_from_slice(&c.seen_time().to_le_bytes());
            names.push(c.name());
        }
        put_varint(buf, g.pending_len() as u64);
        for p in g.pending(StreamId::MIN, StreamId::MAX) {
            put_id(buf, p.id);
            // The owner as its index in the (name-ordered) consumer list above.
            let owner = names.binary_search(&p.consumer).unwrap_or(0);
            put_varint(buf, owner as u64);
            buf.extend_from_slice(&p.delivery_time.to_le_bytes());
            put_varint(buf, p.delivery_count);
        }
    }
}

/// Decodes a stream written by `encode_stream`, checking everything.
pub(crate) fn decode_stream(c: &mut Cur<'_>) -> DecodeResult<StreamValue> {
    let mut b = StreamBuilder::new();
    let last_id = get_id(c)?;
    let first_id = get_id(c)?;
    let max_deleted = get_id(c)?;
    let entries_added = c.varint()?;
    let nodes = c.count()?;
    let mut prev = StreamId::MIN;
    let mut flat: Vec<&[u8]> = Vec::new();
    for _ in 0..nodes {
        let n = c.count()?;
        if n == 0 {
            return Err("empty stream node");
        }
        for k in 0..n {
            let id = get_id_delta(c, prev)?;
            prev = id;
            let flags = c.u8()?;
            if flags & !F_DELETED != 0 {
                return Err("unknown stream entry flags");
            }
            let pairs = c.count()?;
            flat.clear();
            for _ in 0..pairs {
                flat.push(c.bytes()?);
                flat.push(c.bytes()?);
            }
            b.push(k == 0, id, flags & F_DELETED != 0, &flat)?;
        }
    }
    b.meta(last_id, first_id, max_deleted, entries_added);
    let groups = c.count()?;
    for _ in 0..groups {
        let name = c.bytes()?;
        let last = get_id(c)?;
        let entries_read = c.u64le()? as i64;
        b.group(name, last, (entries_read != -1).then_some(entries_read))?;
        let consumers = c.count()?;
        let mut names = Vec::with_capacity(consumers);
        for _ in 0..consumers {
            let cname = c.bytes()?;
            let seen = c.u64le()? as i64;
            b.consumer(name, cname, seen)?;
            names.push(cname);
        }
        let pending = c.count()?;
        for _ in 0..pending {
            let id = get_id(c)?;
            let owner = usize::try_from(c.varint()?).map_err(|_| "bad consumer index")?;
            let owner = *names
                .get(owner)
                .ok_or("pending entry of an unknown consumer")?;
            let time = c.u64le()? as i64;
            let count = c.varint()?;
            b.pending(name, id, owner, time, count)?;
        }
    }
    b.finish()
}
