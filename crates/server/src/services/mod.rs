//! Services that commands and the request path use, each owning its state.

pub mod acl;
pub mod blocking;
pub mod debug;
pub mod disk_refusal;
pub mod evict;
pub mod latency;
pub mod lazyfree;
pub mod mailbox;
pub mod memory;
pub mod migrate;
pub mod monitor;
pub mod notify;
pub mod oom;
pub mod pause;
pub mod persist;
pub mod pubsub;
pub mod replication;
pub mod scripting;
pub mod shutdown;
pub mod slowlog;
pub mod snapshot;
mod snapshot_load;
pub mod stats;
mod tier_recovery;
pub mod tiering;
pub mod tracking;
pub mod watch;
