//! Listeners, connections and worker threads.

pub(crate) mod conn;
pub mod listen;
pub mod sched;
pub mod signals;
pub mod start;
#[cfg(target_os = "linux")]
pub(crate) mod stranded;
pub(crate) mod turn;
pub mod workers;
