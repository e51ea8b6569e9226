//! Redis's data format for Strata's data: the bridge between the engine's values and the
//! strata-rdb codec, and what is built on it (the `strata import`/`export` tools,
//! `--rdb-import`, DUMP/RESTORE, MIGRATE, FUNCTION DUMP/RESTORE). The codec knows nothing
//! of the engine; this module is the only place that knows both.
//!
//! The API, small on purpose:
//!
//! - Values: [`entry_to_rdb`] / [`value_to_rdb`] copy an engine value out as an
//!   `RdbValue`; [`rdb_to_value`] builds the engine's value (in the form the engine would
//!   choose under the server's `Encodings`, every byte copied out of the codec's chunks).
//!   [`meta::key_meta`] gives a key's expiry and LRU/LFU attributes.
//! - Writing: [`write_options`] (the codec's options from the configuration),
//!   [`write_functions`], [`write_keyspace`] (every key, shard by shard, a short lock hold
//!   per batch of keys, encoding outside the lock; see its notes on consistency), and
//!   [`write_rdb`] for a whole file.
//! - Loading: [`load_key`] stores one key (`strata_rdb::Entry`) with its expiry and idle
//!   time; [`Loader`] feeds every item of a `strata_rdb::Reader` (keys, function
//!   libraries) into a server with progress reports and a [`Summary`]; `strata import`'s
//!   Loader encodes the keys straight into a snapshot file instead (`to_snapshot.rs`).
//! - Payloads: [`dump_payload`] (DUMP, MIGRATE; a per-thread encoder under the server's
//!   options), [`payload_error`] (RESTORE's replies), [`prepare`] and
//!   [`Prepared::store`] for a decoded value.
//! - Tools: [`tools::export`], [`tools::import`], [`tools::import_at_start`].

mod convert;
mod lanes;
mod load;
pub mod meta;
mod payload;
mod save;
mod to_snapshot;
pub mod tools;

pub use convert::{entry_to_rdb, rdb_to_value, value_to_rdb};
pub use load::{
    load_key, prepare, LoadError, LoadOptions, Loaded, Loader, Prepared, Progress, Summary,
};
pub use payload::{dump_payload, payload_error, verify};
pub use save::{aux_fields, write_functions, write_keyspace, write_options, write_rdb, Written};

#[cfg(test)]
mod tests;
