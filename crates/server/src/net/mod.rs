//! Listeners, connections and worker threads.

pub(crate) mod accept;
pub mod balance;
pub(crate) mod busy;
pub mod clients;
pub(crate) mod conn;
pub(crate) mod inbuf;
pub mod listen;
pub mod listeners;
pub(crate) mod output;
pub(crate) mod replybuf;
pub mod sched;
pub mod signals;
pub mod start;
#[cfg(target_os = "linux")]
pub(crate) mod stranded;
pub mod tls;
pub(crate) mod turn;
pub mod unix;
mod waits;
pub(crate) mod wire;
pub mod workers;
