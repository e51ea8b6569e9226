//! The server's data written as RDB: the options from its configuration, its function
//! libraries, and its keyspace, database by database and shard by shard.

use super::convert::{entry_to_rdb, value_to_rdb};
use super::meta::{key_meta, Access};
use crate::server::Server;
use std::io::{self, Write};
use strata_engine::{clock, Captured};
use strata_rdb::{AuxFields, KeyMeta, RdbValue, WriteOptions, Writer};

/// How values are written under the server's configuration: its encoding thresholds
/// (so a file loads into redis-server in the forms Strata reports) and `rdbcompression`,
/// `rdbchecksum`.
pub fn write_options(server: &Server) -> WriteOptions {
    let enc = &server.keyspace.encodings;
    let config = server.config.get();
    WriteOptions {
        compression: config.rdbcompression,
        checksum: config.rdbchecksum,
        hash_max_listpack_entries: enc.hash_entries(),
        hash_max_listpack_value: enc.hash_value(),
        zset_max_listpack_entries: enc.zset_entries(),
        zset_max_listpack_value: enc.zset_value(),
        set_max_intset_entries: enc.set_intset_entries(),
        list_max_listpack_size: enc.list_size(),
        stream_node_max_bytes: usize::try_from(enc.stream_node_bytes()).unwrap_or(usize::MAX),
        stream_node_max_entries: usize::try_from(enc.stream_node_entries()).unwrap_or(usize::MAX),
        ..WriteOptions::default()
    }
}

/// The AUX fields Redis starts a file with, for this process now.
pub fn aux_fields() -> AuxFields<'static> {
    AuxFields {
        redis_ver: crate::commands::info::REDIS_VERSION,
        ctime: i64::try_from(Server::now_unix()).unwrap_or(0),
        used_mem: crate::services::memory::used(),
        repl: None,
        aof_base: false,
    }
}

/// Writes every function library (FUNCTION2 records). Returns how many.
pub fn write_functions<W: Write>(server: &Server, w: &mut Writer<W>) -> io::Result<u64> {
    let libs = server.scripts.libraries.read();
    for l in libs.values() {
        w.function(&l.code)?;
    }
    Ok(libs.len() as u64)
}

/// Keys written per lock hold: the values are copied out under the shard's lock and
/// encoded after it is released.
const BATCH: usize = 64;

/// What [`write_keyspace`] wrote.
#[derive(Debug, Clone, Copy, Default)]
pub struct Written {
    pub keys: u64,
}

/// Writes every key of every database (a SELECTDB with the database's sizes, then its
/// keys), shard by shard: a shard's keys are listed under one hold of its lock, then their
/// values copied out `BATCH` keys per hold and encoded with no lock held
/// (`Db::walk_shard`). Keys expired by now are left out; with an LRU or LFU
/// `maxmemory-policy` each key's idle time or counter goes with it, as Redis writes them.
///
/// Not a point-in-time image: each key is read atomically, but a key written during
/// the walk may be seen before or after that write, and one added to a shard already
/// walked is not written. Callers that need one instant (a replica's full sync) take the
/// snapshot machinery's capture, converting with `entry_to_rdb`/`value_to_rdb`.
pub fn write_keyspace<W: Write>(server: &Server, w: &mut Writer<W>) -> io::Result<Written> {
    let ks = &server.keyspace;
    let access = Access::of(&server.config.get());
    let mut written = Written::default();
    let mut batch: Vec<(Vec<u8>, RdbValue, KeyMeta)> = Vec::with_capacity(BATCH);
    for i in 0..ks.db_count() {
        let db = ks.db(i);
        if db.is_empty() {
            continue;
        }
        w.select_db(i as u64, db.len() as u64, db.volatile_len() as u64)?;
        for idx in 0..db.shard_count() {
            let now = clock::now_ms();
            let mut walk = db.walk_shard(idx, now);
            while walk.next_batch(BATCH, |c| {
                batch.push(match c {
                    Captured::Entry(e) | Captured::Clean(e) => {
                        (e.key().to_vec(), entry_to_rdb(e), key_meta(e, access, now))
                    }
                    // A cold entry (tiering): its access time stayed in RAM's past.
                    Captured::Value(key, o) | Captured::Cold(key, o) => {
                        let meta = KeyMeta {
                            expire_ms: o.expire_at.map(|t| i64::try_from(t).unwrap_or(i64::MAX)),
                            ..KeyMeta::default()
                        };
                        (key.to_vec(), value_to_rdb(&o.value), meta)
                    }
                })
            }) {
                for (key, value, meta) in batch.drain(..) {
                    w.key(&key, &value, &meta)?;
                    written.keys += 1;
                }
            }
        }
    }
    Ok(written)
}

/// A whole RDB file of the server's data: the AUX fields, the function libraries, every
/// key, the EOF record and checksum. Returns the output and what was written.
pub fn write_rdb<W: Write>(server: &Server, out: W) -> io::Result<(W, Written, u64)> {
    let mut w = Writer::new(out, write_options(server))?;
    w.standard_aux(&aux_fields())?;
    let functions = write_functions(server, &mut w)?;
    let written = write_keyspace(server, &mut w)?;
    Ok((w.finish()?, written, functions))
}
