//! An RDB file's keys encoded straight into a snapshot file (`strata import`): no key is
//! stored in the keyspace, so an import takes the time of decoding and encoding, not that
//! of building a data set and then walking it, and memory for 16 bytes a key.
//!
//! A key found twice (in one database) is refused as a load into the keyspace refuses
//! it. Each sink keeps a 128-bit hash of every (database, key) it wrote, and once the file
//! is read, sorts them and looks for two alike; both records of one key reach the same
//! sink (lanes route by key). A set probed per key cost a cache miss per key, 85% of a
//! sink's time; the hashes go into 256 vectors by their top byte instead, each sorted at
//! the end within the cache. Two alike fail the load with [`LoadError::HashTwice`], and
//! the import then loads the file into memory, which names the key, or, if two different
//! keys shared a hash (odds of n² / 2^129, 1e-25 for 10M keys), loads it.

use super::convert::rdb_to_value;
use super::load::{placement, with_unpacked, LoadError, LoadOptions, Loaded, Loader, Sink};
use crate::server::Server;
use crate::services::snapshot::ChunkSink;
use std::hash::BuildHasher;
use std::ops::Deref;
use std::sync::Arc;
use strata_rdb::{DecodeSpace, Entry, RdbValue};
use strata_storage::snapshot::{put_collection, put_item, put_score, put_str, Collection};

/// A load of `server`'s file whose keys go into `out` (function libraries still go to
/// `server`'s registry).
pub(super) fn loader<'s>(server: &'s Arc<Server>, out: &Arc<ChunkSink>) -> Loader<'s> {
    Loader::with_sinks(server, LoadOptions::default(), || {
        Box::new(SnapshotSink::new(server.clone(), out.clone()))
    })
}

/// A chunk is written once it holds about this much.
const CHUNK: usize = 256 << 10;

/// Keys into the snapshot `out`; `server` (`&Server` or `Arc<Server>`) gives the
/// databases and the encodings a stream is checked against.
pub(super) struct SnapshotSink<S> {
    server: S,
    out: Arc<ChunkSink>,
    opts: LoadOptions,
    buf: Vec<u8>,
    entries: u64,
    /// The hashes of the keys written, by their top byte.
    seen: Vec<Vec<u128>>,
    hash: [foldhash::fast::FixedState; 2],
    space: DecodeSpace,
}

impl<S> SnapshotSink<S> {
    pub fn new(server: S, out: Arc<ChunkSink>) -> Self {
        SnapshotSink {
            server,
            out,
            // An import drops expired keys and refuses a key twice.
            opts: LoadOptions::default(),
            buf: Vec::with_capacity(CHUNK + 4096),
            entries: 0,
            seen: vec![Vec::new(); 256],
            hash: [
                foldhash::fast::FixedState::with_seed(0x9e37_79b9_7f4a_7c15),
                foldhash::fast::FixedState::with_seed(0xc2b2_ae3d_27d4_eb4f),
            ],
            space: DecodeSpace::default(),
        }
    }

    fn flush(&mut self) -> Result<(), LoadError> {
        if self.entries > 0 {
            self.out
                .write(&self.buf, self.entries)
                .map_err(LoadError::Io)?;
            self.buf.clear();
            self.entries = 0;
        }
        Ok(())
    }
}

impl<S: Deref<Target = Server> + Send> Sink for SnapshotSink<S> {
    fn put(&mut self, e: &Entry, now_ms: u64) -> Result<Loaded, LoadError> {
        let mut space = std::mem::take(&mut self.space);
        let put = with_unpacked(&e.value, &mut space, |v| self.put_value(e, v, now_ms));
        self.space = space;
        put
    }

    fn finish(&mut self) -> Result<(), LoadError> {
        for ids in &mut self.seen {
            ids.sort_unstable();
            if ids.windows(2).any(|w| w[0] == w[1]) {
                return Err(LoadError::HashTwice);
            }
        }
        self.flush()
    }
}

impl<S: Deref<Target = Server> + Send> SnapshotSink<S> {
    /// Writes key `e` with the value `v` (`e`'s own, or what it decoded to).
    fn put_value(&mut self, e: &Entry, v: &RdbValue, now_ms: u64) -> Result<Loaded, LoadError> {
        let ks = &self.server.keyspace;
        let Some((db, expire_at)) = placement(e, now_ms, &self.opts, ks.db_count())? else {
            return Ok(Loaded::Expired);
        };
        let id = (db, &e.key[..]);
        let (hi, lo) = (self.hash[0].hash_one(id), self.hash[1].hash_one(id));
        self.seen[(hi >> 56) as usize].push((u128::from(hi) << 64) | u128::from(lo));
        encode(
            &mut self.buf,
            db as u32,
            &e.key,
            expire_at,
            v,
            &ks.encodings,
        )
        .map_err(|why| LoadError::BadValue {
            db: e.db,
            key: e.key.clone(),
            why,
        })?;
        self.entries += 1;
        if self.buf.len() >= CHUNK {
            self.flush()?;
        }
        Ok(Loaded::Stored)
    }
}

/// One key in the snapshot's form. Collections go member by member from the decoder's
/// buffers; a stream, the one type the engine checks further (`rdb_to_value`), is built
/// first (and a packed value, which `put` has decoded already, would be decoded there).
fn encode(
    buf: &mut Vec<u8>,
    db: u32,
    key: &[u8],
    expire_at: Option<u64>,
    v: &RdbValue,
    enc: &strata_engine::Encodings,
) -> Result<(), &'static str> {
    let head = |buf: &mut Vec<u8>, kind, len| put_collection(buf, kind, db, key, expire_at, len);
    match v {
        RdbValue::String(s) => put_str(buf, db, key, expire_at, s),
        RdbValue::List(m) | RdbValue::Set(m) => {
            let kind = match v {
                RdbValue::List(_) => Collection::List,
                _ => Collection::Set,
            };
            head(buf, kind, m.len());
            for member in m.iter() {
                put_item(buf, member);
            }
        }
        RdbValue::Hash(p) => {
            head(buf, Collection::Hash, p.len());
            for (f, v) in p.iter() {
                put_item(buf, f);
                put_item(buf, v);
            }
        }
        RdbValue::SortedSet(z) => {
            head(buf, Collection::ZSet, z.len());
            for (m, score) in z.iter() {
                put_item(buf, m);
                put_score(buf, score);
            }
        }
        RdbValue::Stream(_) | RdbValue::Packed(_) => {
            strata_storage::encode_value(buf, db, key, expire_at, &rdb_to_value(v, enc)?)
        }
    }
    Ok(())
}
