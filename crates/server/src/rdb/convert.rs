//! Values both ways between the engine and strata-rdb: an engine value read out as an
//! [`RdbValue`], and an [`RdbValue`] built into the engine's value in the form the engine
//! would have given it (`Encodings`, the thresholds of the running configuration).

use bytes::Bytes;
use strata_engine::stream::{StreamBuilder, StreamId};
use strata_engine::{Encodings, EntryRef, HashValue, ListValue, SetValue, Value, ZSetValue};
use strata_rdb::{
    Members, Pairs, PendingEntry, RdbValue, Scored, StreamConsumer, StreamEntry, StreamGroup,
    StreamValue as RdbStream,
};

/// The value of an entry, copied out (a compact string included).
pub fn entry_to_rdb(e: EntryRef<'_>) -> RdbValue {
    match e.value() {
        Some(v) => value_to_rdb(v),
        None => RdbValue::String(Bytes::copy_from_slice(e.as_str().unwrap_or_default())),
    }
}

/// An engine value, copied out.
pub fn value_to_rdb(v: &Value) -> RdbValue {
    let mut ib = [0u8; 20];
    match v {
        Value::Str(s) => RdbValue::String(Bytes::copy_from_slice(s)),
        Value::List(l) => {
            let mut m = Members::with_capacity(l.len(), 0);
            for e in l.iter() {
                m.push(e.bytes(&mut ib));
            }
            RdbValue::List(m)
        }
        Value::Set(s) => {
            let mut m = Members::with_capacity(s.len(), 0);
            for e in s.iter() {
                m.push(e.bytes(&mut ib));
            }
            RdbValue::Set(m)
        }
        Value::Hash(h) => {
            // Sized once: the memory the hash holds bounds its bytes in the listpack form
            // (the common one for a DUMP), and is of the order of them in the table form.
            let mut p = Pairs::with_capacity(h.len(), h.heap_bytes(0));
            for (f, v) in h.iter() {
                p.push(f, v);
            }
            RdbValue::Hash(p)
        }
        Value::ZSet(z) => {
            let mut s = Scored::new();
            z.for_range(0, z.len(), false, |m, score| s.push(m, score));
            RdbValue::SortedSet(s)
        }
        Value::Stream(s) => RdbValue::Stream(Box::new(stream_to_rdb(s))),
    }
}

fn rdb_id(id: StreamId) -> strata_rdb::StreamId {
    strata_rdb::StreamId::new(id.ms, id.seq)
}

fn engine_id(id: strata_rdb::StreamId) -> StreamId {
    StreamId::new(id.ms, id.seq)
}

fn stream_to_rdb(s: &strata_engine::StreamValue) -> RdbStream {
    let b = Bytes::copy_from_slice;
    let entries = s
        .range(StreamId::MIN, StreamId::MAX, false)
        .map(|e| StreamEntry {
            id: rdb_id(e.id()),
            fields: e.fields().map(|(f, v)| (b(f), b(v))).collect(),
        })
        .collect();
    let groups = s
        .groups()
        .map(|g| StreamGroup {
            name: b(g.name()),
            last_delivered_id: rdb_id(g.last_id()),
            entries_read: g.entries_read().and_then(|n| u64::try_from(n).ok()),
            pending: g
                .pending(StreamId::MIN, StreamId::MAX)
                .map(|p| PendingEntry {
                    id: rdb_id(p.id),
                    delivery_time: p.delivery_time,
                    delivery_count: p.delivery_count,
                    consumer: b(p.consumer),
                })
                .collect(),
            consumers: g
                .consumers()
                .map(|c| StreamConsumer {
                    name: b(c.name()),
                    seen_time: c.seen_time(),
                })
                .collect(),
        })
        .collect();
    RdbStream {
        entries,
        last_id: rdb_id(s.last_id()),
        first_id: rdb_id(s.recorded_first_id()),
        max_deleted_entry_id: rdb_id(s.max_deleted_id()),
        entries_added: s.entries_added(),
        groups,
    }
}

/// The engine value for `v`, in the form the engine gives such a value under `enc`
/// (HSET's, SADD's, the STORE commands' choices). Every byte is copied out of the
/// decoder's shared chunks. A stream the engine cannot hold (an entry above its last ID,
/// a pending entry of no consumer...) is refused with the reason.
pub fn rdb_to_value(v: &RdbValue, enc: &Encodings) -> Result<Value, &'static str> {
    Ok(match v {
        RdbValue::String(s) => Value::Str(s.to_vec()),
        RdbValue::List(m) => Value::List(Box::new(ListValue::from_elems(enc.list_size(), m))),
        RdbValue::Set(m) => Value::Set(SetValue::from_distinct(m.iter(), enc)),
        RdbValue::Hash(p) => Value::Hash(HashValue::from_distinct(p.iter(), enc)),
        RdbValue::SortedSet(s) => Value::ZSet(Box::new(ZSetValue::from_ordered(s.iter(), enc))),
        RdbValue::Stream(s) => Value::Stream(Box::new(rdb_to_stream(s, enc)?)),
        RdbValue::Packed(p) => rdb_to_value(
            &p.decode().map_err(|_| "its packed form does not decode")?,
            enc,
        )?,
    })
}

fn rdb_to_stream(
    s: &RdbStream,
    enc: &Encodings,
) -> Result<strata_engine::StreamValue, &'static str> {
    let mut b = StreamBuilder::new();
    let mut flat: Vec<&[u8]> = Vec::new();
    for e in &s.entries {
        flat.clear();
        for (f, v) in &e.fields {
            flat.push(f);
            flat.push(v);
        }
        b.append(engine_id(e.id), &flat, enc)?;
    }
    b.meta(
        engine_id(s.last_id),
        engine_id(s.first_id),
        engine_id(s.max_deleted_entry_id),
        s.entries_added,
    );
    for g in &s.groups {
        let entries_read = match g.entries_read {
            None => None,
            Some(n) => Some(i64::try_from(n).map_err(|_| "consumer group read counter too large")?),
        };
        b.group(&g.name, engine_id(g.last_delivered_id), entries_read)?;
        for c in &g.consumers {
            b.consumer(&g.name, &c.name, c.seen_time)?;
        }
        for p in &g.pending {
            b.pending(
                &g.name,
                engine_id(p.id),
                &p.consumer,
                p.delivery_time,
                p.delivery_count,
            )?;
        }
    }
    b.finish()
}
