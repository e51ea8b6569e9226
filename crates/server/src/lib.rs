//! strata-server: the Redis-protocol server, in four parts (docs/architecture.md):
//!
//! - `net/`: listeners, connections, worker threads; it knows commands only through
//!   `exec::execute`.
//! - `exec/`: one command's life, stage by stage: resolve, admit, plan and lock, run the
//!   handler, record its effect, reply.
//! - `commands/`: one file per command family, each declaring its commands next to their
//!   handlers.
//! - `services/`: pub/sub, blocking, WATCH, notifications, slowlog, scripts, durability:
//!   each owns its state behind its own type.

pub mod commands;
pub mod config;
pub mod exec;
pub mod net;
pub mod num;
pub mod rdb;
pub mod server;
pub mod services;
pub mod tick;

pub use config::Config;
pub use net::start::{run, serve, start, StartOptions};
pub use server::Server;
