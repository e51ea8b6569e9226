//! Writes refused for the disk's sake, as Redis's writeCommandsDeniedByDiskError: while
//! the last snapshot failed with save rules set and `stop-writes-on-bgsave-error yes`, or
//! while the journal cannot be written. Clients' writes (and PING, so that a health check
//! sees it) get MISCONF; reads go on. A snapshot that succeeds, or a journal that can be
//! written again, lifts it.

use crate::exec::command::CmdError;
use crate::server::Server;
use std::sync::atomic::Ordering;

pub enum DiskRefusal {
    Snapshot,
    /// The journal's error.
    Journal(String),
}

const SNAPSHOT_FAILED: &str = "MISCONF Redis is configured to save RDB snapshots, but it's currently unable to persist to disk. Commands that may modify the data set are disabled, because this instance is configured to report errors during writes if RDB snapshotting fails (stop-writes-on-bgsave-error option). Please check the Redis logs for details about the RDB error.";

const SNAPSHOT_FAILED_SCRIPT: &str = "MISCONF Redis is configured to save RDB snapshots, but it's currently unable to persist to disk. Writable scripts are blocked. Use 'no-writes' flag for read only scripts.";

impl DiskRefusal {
    /// Why writes are refused now, if they are.
    #[inline]
    pub fn now(server: &Server) -> Option<DiskRefusal> {
        if server.persist.snapshots.last_failed.load(Ordering::Relaxed) {
            let config = server.config.get();
            if config.stop_writes_on_bgsave_error && !config.save.0.is_empty() {
                return Some(DiskRefusal::Snapshot);
            }
        }
        server.sinks.write_error().map(DiskRefusal::Journal)
    }

    /// The refusal of a command (and of a script's `redis.call`).
    pub fn command_error(&self) -> CmdError {
        match self {
            DiskRefusal::Snapshot => CmdError::Static(SNAPSHOT_FAILED),
            DiskRefusal::Journal(e) => {
                CmdError::Custom(format!("MISCONF Errors writing to the AOF file: {e}"))
            }
        }
    }

    /// The refusal of a script that may write, before it starts.
    pub fn script_error(&self) -> CmdError {
        match self {
            DiskRefusal::Snapshot => CmdError::Static(SNAPSHOT_FAILED_SCRIPT),
            DiskRefusal::Journal(e) => CmdError::Custom(format!(
                "MISCONF Redis is configured to persist data to AOF, but it's currently unable to persist to disk. Writable scripts are blocked. Use 'no-writes' flag for read only scripts. AOF error: {e}"
            )),
        }
    }
}
