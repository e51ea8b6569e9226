//! Redis's RDB format as Redis 7.0 reads and writes it: RDB files (version 10 written,
//! versions 1 to 10 read) and DUMP/RESTORE payloads. A codec only: it reads from any
//! [`std::io::Read`] and writes to any [`std::io::Write`], and leaves every policy (which
//! databases exist, what to do with expired keys, functions, module data) to the caller.
//!
//! # Reading a file
//!
//! ```no_run
//! use strata_rdb::{Item, Reader};
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let mut r = Reader::new(std::fs::File::open("dump.rdb")?)?;
//! while let Some(item) = r.next_item()? {
//!     match item {
//!         Item::Key(e) => { /* e.db, e.key, e.value, e.meta.expire_ms ... */ }
//!         Item::Aux { .. } | Item::ResizeDb { .. } | Item::SelectDb(_) => {}
//!         Item::Function(code) => { /* FUNCTION LOAD it */ }
//!         Item::ModuleAux { module, .. } => return Err(format!("module {module}").into()),
//!     }
//! }
//! // Here the EOF record was read and the CRC64 checked.
//! # Ok(()) }
//! ```
//!
//! [`Reader`] buffers internally and holds one value at a time, so files far larger than
//! memory stream through. The CRC64 covers the whole file and is checked at its end, after
//! the items have been handed out: a loader should treat what it loaded as provisional
//! until `next_item` returns `Ok(None)`. For a replication socket, the caller handles the transfer's
//! framing (`$<len>` or the diskless `$EOF:<mark>`); [`Reader::into_parts`] returns the
//! bytes read ahead past the RDB data (the end mark, the replication stream, or an AOF
//! tail). Errors ([`Error`]) carry the byte offset and say what is wrong;
//! [`Error::is_truncated`] tells an early end of input from bad data.
//! A loader that stores keys on other threads can have small hashes and sorted sets
//! handed out still packed ([`Reader::set_defer_packed`], [`RdbValue::Packed`]) and
//! decode each on the thread that stores it ([`PackedValue::decode_in`]): the same
//! checks and errors, off the reading thread.
//!
//! Every type and encoding Redis ever wrote is read: strings (raw, integer, LZF), lists
//! (plain, ziplist, quicklist of ziplists, quicklist of listpacks and plain nodes), sets
//! (plain, intset), sorted sets (text and binary scores, ziplist, listpack), hashes (plain,
//! zipmap, ziplist, listpack) and streams (types 15 and 19). Packed encodings are validated
//! fully, as Redis's deep sanitization does (sizes, back-lengths, terminators, counts,
//! ordering), and duplicates or NaN scores are refused. Keys holding module values
//! (types 6 and 7) and pre-release function records are refused with an error naming them;
//! empty collections are skipped like Redis does ([`Reader::empty_keys_skipped`]).
//!
//! # Writing a file
//!
//! ```
//! use strata_rdb::{AuxFields, KeyMeta, RdbValue, WriteOptions, Writer};
//! # fn main() -> std::io::Result<()> {
//! let mut w = Writer::new(Vec::new(), WriteOptions::default())?;
//! w.standard_aux(&AuxFields { redis_ver: "7.0.15", ctime: 1_700_000_000, used_mem: 0,
//!                             repl: None, aof_base: false })?;
//! w.select_db(0, 1, 1)?;
//! let meta = KeyMeta { expire_ms: Some(1_900_000_000_000), ..KeyMeta::default() };
//! w.key(b"greeting", &RdbValue::String("hello".into()), &meta)?;
//! let file: Vec<u8> = w.finish()?;
//! # assert!(file.starts_with(b"REDIS0010")); Ok(()) }
//! ```
//!
//! [`WriteOptions`] carries the thresholds (same names and defaults as redis.conf) under
//! which collections are written in Redis's compact forms (listpacks, intsets,
//! quicklist nodes) and over which in the plain ones, plus `rdbcompression`/`rdbchecksum`.
//!
//! # DUMP and RESTORE
//!
//! [`dump`] (or a reusable [`Dumper`]) makes a payload Redis's RESTORE accepts; [`restore`]
//! checks one like RESTORE does. [`PayloadError`]'s `Display` is Redis's reply text:
//! "DUMP payload version or checksum are wrong" or "Bad data format" (the detail is its
//! [`std::error::Error::source`]). [`dump_functions`] and [`restore_functions`] do the same
//! for FUNCTION DUMP and FUNCTION RESTORE's payloads (function library records).
//!
//! # Values
//!
//! [`RdbValue`] is the decoded value. Strings, keys and stream contents are
//! [`bytes::Bytes`]; small ones are carved out of shared chunks (one allocation per chunk,
//! not per string), so a `Bytes` kept long keeps its chunk alive: copy out (`to_vec`) what
//! you store. Lists, sets, hashes and sorted sets keep their members back to back in one
//! buffer ([`Members`], [`Pairs`], [`Scored`]): two allocations per collection whatever its
//! size, iterated as `&[u8]`, built with `collect()` or `From<Vec<_>>`. Collections keep
//! the file's order; [`RdbValue::normalized`] sorts what has no meaningful order, for
//! comparing.
//!
//! [`crc64`] and [`lzf`] are exposed for other users of the same formats.

pub mod crc64;
mod decode;
mod dups;
mod encode;
mod error;
mod intset;
mod listpack;
pub mod lzf;
mod members;
mod num;
mod packed;
mod payload;
mod reader;
mod source;
mod stream;
mod value;
mod writer;
mod ziplist;
mod zipmap;

pub use encode::WriteOptions;
pub use error::{Error, ErrorKind, PayloadError};
pub use members::{Members, MembersIter, Pairs, Scored};
pub use packed::{DecodeSpace, PackedValue};
pub use payload::{
    dump, dump_functions, restore, restore_functions, restore_functions_with, restore_with, Dumper,
    Verify,
};
pub use reader::{Entry, Item, KeyMeta, Reader};
pub use value::{
    PendingEntry, RdbValue, StreamConsumer, StreamEntry, StreamGroup, StreamId, StreamValue,
};
pub use writer::{AuxFields, ReplAux, Writer};

/// The RDB version written (and the newest read).
pub const RDB_VERSION: u16 = 10;

/// Value type bytes.
pub(crate) mod types {
    pub const STRING: u8 = 0;
    pub const LIST: u8 = 1;
    pub const SET: u8 = 2;
    pub const ZSET: u8 = 3;
    pub const HASH: u8 = 4;
    pub const ZSET_2: u8 = 5;
    pub const MODULE: u8 = 6;
    pub const MODULE_2: u8 = 7;
    pub const HASH_ZIPMAP: u8 = 9;
    pub const LIST_ZIPLIST: u8 = 10;
    pub const SET_INTSET: u8 = 11;
    pub const ZSET_ZIPLIST: u8 = 12;
    pub const HASH_ZIPLIST: u8 = 13;
    pub const LIST_QUICKLIST: u8 = 14;
    pub const STREAM_LISTPACKS: u8 = 15;
    pub const HASH_LISTPACK: u8 = 16;
    pub const ZSET_LISTPACK: u8 = 17;
    pub const LIST_QUICKLIST_2: u8 = 18;
    pub const STREAM_LISTPACKS_2: u8 = 19;

    pub fn is_value_type(t: u8) -> bool {
        matches!(t, 0..=7 | 9..=19)
    }
}

/// Record opcodes.
pub(crate) mod opcodes {
    pub const FUNCTION2: u8 = 245;
    pub const FUNCTION_PRE_GA: u8 = 246;
    pub const MODULE_AUX: u8 = 247;
    pub const IDLE: u8 = 248;
    pub const FREQ: u8 = 249;
    pub const AUX: u8 = 250;
    pub const RESIZEDB: u8 = 251;
    pub const EXPIRETIME_MS: u8 = 252;
    pub const EXPIRETIME: u8 = 253;
    pub const SELECTDB: u8 = 254;
    pub const EOF: u8 = 255;
}
