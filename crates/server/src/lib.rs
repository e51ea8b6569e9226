//! strata-server: the Redis-protocol server. See ../../shared/DESIGN.md, "The way a request
//! travels": socket bytes -> strata_resp::Parser -> table::execute (the command table) ->
//! commands::<family> -> strata_engine -> reply bytes, one write per batch.

pub mod blocking;
pub mod client;
pub mod command;
pub mod commands;
pub mod config;
mod conn;
pub mod effects;
pub mod hll;
pub mod info;
pub mod lazyfree;
pub mod longdouble;
pub mod notify;
pub mod persist;
pub mod pubsub;
pub mod sched;
pub mod scripting;
pub mod server;
pub mod slowlog;
pub mod snapshot;
pub mod stats;
#[cfg(target_os = "linux")]
mod stranded;
pub mod strtod;
pub mod table;
pub mod tick;
mod turn;
pub mod watch;

pub use config::Config;
pub use server::{run, serve, start, Server};
