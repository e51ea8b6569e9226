//! Listeners, connections and worker threads.

pub(crate) mod conn;
pub mod sched;
#[cfg(target_os = "linux")]
pub(crate) mod stranded;
pub(crate) mod turn;
