//! Services that commands and the request path use, each owning its state.

pub mod blocking;
pub mod lazyfree;
pub mod notify;
pub mod persist;
pub mod pubsub;
pub mod replication;
pub mod scripting;
pub mod slowlog;
pub mod snapshot;
pub mod stats;
pub mod watch;
