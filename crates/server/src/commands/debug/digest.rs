//! DEBUG DIGEST and DIGEST-VALUE: SHA-1 signatures of logical contents, so that two data
//! sets (or two values) that hold the same things have the same digest whatever their
//! encodings, node boundaries or iteration orders. Tests compare digests taken before and
//! after a reload, a COPY or a rewrite.
//!
//! The scheme is Strata's own (Redis's digests are not reproduced): every string goes in
//! length-prefixed, so no two sequences of parts collide by concatenation; ordered
//! contents (a list, a stream's entries) are hashed in order, unordered ones (a set's
//! members, a hash's pairs, a sorted set's members with their scores) as the XOR of one
//! digest per element. A key's digest covers its name, its value's digest and its expiry;
//! the data set's is the XOR of (database, key digest) over every key, so an empty data
//! set digests to twenty zero bytes, as in Redis.

use crate::exec::command::CmdResult;
use crate::exec::ctx::Ctx;
use crate::server::Server;
use sha1_smol::Sha1;
use strata_engine::stream::StreamId;
use strata_engine::{Captured, EntryRef, StreamValue, Value};

pub type Digest = [u8; 20];

/// A hasher fed with length-prefixed parts.
struct Parts(Sha1);

impl Parts {
    fn new(tag: &[u8]) -> Parts {
        let mut p = Parts(Sha1::new());
        p.add(tag);
        p
    }

    fn add(&mut self, part: &[u8]) -> &mut Self {
        self.0.update(&(part.len() as u64).to_le_bytes());
        self.0.update(part);
        self
    }

    fn num(&mut self, n: u64) -> &mut Self {
        self.add(&n.to_le_bytes())
    }

    fn id(&mut self, id: StreamId) -> &mut Self {
        self.num(id.ms).num(id.seq)
    }

    fn finish(&self) -> Digest {
        self.0.digest().bytes()
    }
}

fn xor(into: &mut Digest, d: &Digest) {
    into.iter_mut().zip(d).for_each(|(a, b)| *a ^= b);
}

/// The XOR of `parts`' digests: the same whatever order they come in.
fn unordered<I: Iterator<Item = Digest>>(parts: I) -> Digest {
    let mut acc = [0u8; 20];
    parts.for_each(|d| xor(&mut acc, &d));
    acc
}

/// The digest of a value alone (DEBUG DIGEST-VALUE).
fn value_digest(e: &EntryRef<'_>) -> Digest {
    match e.value() {
        Some(value) => general_digest(value),
        None => Parts::new(b"string")
            .add(e.as_str().unwrap_or_default())
            .finish(),
    }
}

/// The digest of a value in its general form (a packed string is digested as this
/// string would be).
fn general_digest(value: &Value) -> Digest {
    let mut buf = [0u8; 20];
    match value {
        Value::Str(s) => Parts::new(b"string").add(s).finish(),
        Value::List(l) => {
            let mut p = Parts::new(b"list");
            l.iter().for_each(|el| {
                p.add(el.bytes(&mut buf));
            });
            p.finish()
        }
        Value::Set(s) => {
            let members = s
                .iter()
                .map(|m| Parts::new(b"").add(m.bytes(&mut buf)).finish());
            Parts::new(b"set").add(&unordered(members)).finish()
        }
        Value::Hash(h) => {
            let pairs = h
                .iter()
                .map(|(f, v)| Parts::new(b"").add(f).add(v).finish());
            Parts::new(b"hash").add(&unordered(pairs)).finish()
        }
        Value::ZSet(z) => {
            let mut acc = [0u8; 20];
            z.for_range(0, z.len(), false, |m, score| {
                // +0 and -0 are one score.
                let bits = if score == 0.0 { 0 } else { score.to_bits() };
                xor(&mut acc, &Parts::new(b"").add(m).num(bits).finish());
            });
            Parts::new(b"zset").add(&acc).finish()
        }
        Value::Stream(s) => stream_digest(s),
    }
}

/// A stream: its entries in order, its IDs and counters, and its groups with their
/// pending entries and consumers. Not a group's read counter (XINFO's `entries-read`):
/// Redis's replication stream carries it only for NOACK reads, so a replica's, Redis's
/// or Strata's, is unknown where its primary's is not, and their digests must still
/// agree.
fn stream_digest(s: &StreamValue) -> Digest {
    let mut p = Parts::new(b"stream");
    for e in s.range(StreamId::MIN, StreamId::MAX, false) {
        p.id(e.id()).num(e.len() as u64);
        for (f, v) in e.fields() {
            p.add(f).add(v);
        }
    }
    p.id(s.last_id())
        .id(s.max_deleted_id())
        .num(s.entries_added());
    let groups = s.groups().map(|g| {
        let mut gp = Parts::new(g.name());
        gp.id(g.last_id());
        for n in g.pending(StreamId::MIN, StreamId::MAX) {
            gp.id(n.id).add(n.consumer).num(n.delivery_count);
        }
        for c in g.consumers() {
            gp.add(c.name()).num(c.pending_len() as u64);
        }
        gp.finish()
    });
    p.add(&unordered(groups));
    p.finish()
}

/// The digest of one key: its name, its value and its expiry.
fn key_digest(key: &[u8], value: &Digest, expire_at: Option<u64>) -> Digest {
    let mut p = Parts::new(b"key");
    p.add(key).add(value);
    if let Some(at) = expire_at {
        p.num(at);
    }
    p.finish()
}

/// The digest of every database (DEBUG DIGEST): zeros when there is no key at all.
fn dataset_digest(server: &Server) -> Digest {
    let ks = &server.keyspace;
    let mut acc = [0u8; 20];
    for db in 0..ks.db_count() {
        ks.db(db).for_each_entry(|c| {
            let key = match c {
                Captured::Entry(e) | Captured::Clean(e) => {
                    key_digest(e.key(), &value_digest(&e), e.expire_at())
                }
                Captured::Value(key, o) | Captured::Cold(key, o) => {
                    key_digest(key, &general_digest(&o.value), o.expire_at)
                }
            };
            let d = Parts::new(b"db").num(db as u64).add(&key).finish();
            xor(&mut acc, &d);
        });
    }
    acc
}

fn hex(d: &Digest) -> String {
    d.iter().map(|b| format!("{b:02x}")).collect()
}

pub(super) fn digest(ctx: &mut Ctx<'_>) -> CmdResult {
    let d = dataset_digest(ctx.server());
    ctx.out.simple(&hex(&d));
    Ok(())
}

/// One digest per key given; a missing key's is zeros. Keys whose time has passed are
/// digested as they are (a debugging command looks at what is stored).
pub(super) fn digest_value(ctx: &mut Ctx<'_>) -> CmdResult {
    let keys = &ctx.argv[2..];
    ctx.out.array(keys.len());
    for key in keys {
        let d = ctx
            .lock1(key)
            .peek_raw(key)
            .map_or([0; 20], |e| value_digest(&e));
        ctx.out.simple(&hex(&d));
    }
    Ok(())
}
