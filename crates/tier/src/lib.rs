//! Strata's on-disk tier: where entries evicted under a memory budget go, key and value,
//! instead of being deleted, and come back from on their next access. The engine decides
//! when entries move and keeps the invariants (`strata_engine::ColdStore`,
//! docs/tiering.md); this crate is the store, for a server's keyspace or for an embedded
//! `strata_engine::Table` (`Table::set_cold_store`), with what keeps it across a clean
//! restart (`kept`), what checks it after a crash (`recover`) and `strata check`'s look at
//! it (`check`).

pub mod check;
pub mod dead;
pub mod kept;
pub mod reads;
mod records;
pub mod recover;
mod store;

pub use store::{open_store, write_amplification, Tier};
