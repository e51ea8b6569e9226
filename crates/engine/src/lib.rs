//! strata-engine: the keyspace. Sharded hash tables of compact entries with expiry,
//! usable from many threads at once. No networking and no persistence here.
//!
//! A key's shard is chosen by a hash of the key; a command locks the shards of the keys it
//! touches (ascending order, so multi-key commands never deadlock), works on them through a
//! [`Locked`] guard, and unlocks. Expired keys are removed lazily on access and by
//! [`Keyspace::active_expire_cycle`].

pub mod access;
pub mod clock;
mod cold;
mod cold_filter;
mod cold_recover;
pub mod embedded;
mod embedded_budget;
mod entry;
pub mod evict;
mod expiry;
pub mod glob;
mod inline;
pub mod int;
mod keyspace;
mod ledger;
mod locked;
pub mod memory;
mod probe_hint;
mod session;
mod shard;
mod types;
mod value;
mod walk;

pub use cold::{ColdStore, HotBytes, KindVisitor, ToCold};
pub use embedded::Table;
pub use embedded_budget::Budget;
pub use entry::{prefetch as prefetch_line, EntryRef, Kind};
pub use evict::{spares_in_use, Policy, Pool};
pub use expiry::expire_cycle_percent;
pub use keyspace::{
    shard_pick, Capture, Captured, CreatedHook, Db, ExpiredHook, Keyspace, ScanFilter, DB_COUNT,
};
pub use locked::{Locked, Ttl, Unlinked, WrongType};
pub use probe_hint::ProbeHint;
pub use session::{OneShard, Session, ShardId};
pub use shard::{hash_seed, key_eq, use_hash_seed};
pub use types::{stream, Encodings, HashValue, ListValue, SetValue, StreamValue, ZSetValue};
pub use value::{Owned, Value};
pub use walk::ShardWalk;
