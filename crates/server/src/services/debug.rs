//! The switches DEBUG flips for tests (Redis keeps them as server globals). Each is read
//! where it acts; those kept for features other parts own are read by them.

use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64};

/// Redis's default for DEBUG QUICKLIST-PACKED-THRESHOLD: 1 GiB.
pub const PACKED_THRESHOLD_DEFAULT: u64 = 1 << 30;
/// Redis's default time between reply buffer peak resets, in milliseconds.
pub const PEAK_RESET_DEFAULT_MS: i64 = 5000;

pub struct DebugSwitches {
    /// PAUSE-CRON: the background cycle does nothing while set.
    pub pause_cron: AtomicBool,
    /// SET-DISABLE-DENY-SCRIPTS: scripts may call commands flagged `noscript`.
    pub allow_noscript: AtomicBool,
    /// SET-SKIP-CHECKSUM-VALIDATION: payloads are loaded without checking their checksum.
    pub skip_checksum: AtomicBool,
    /// QUICKLIST-PACKED-THRESHOLD, in bytes. Strata's list nodes have no plain form for
    /// large elements, so this is kept and nothing else.
    pub packed_threshold: AtomicU64,
    /// REPLYBUFFER PEAK-RESET-TIME (ms, -1: never) and RESIZING, read by `net::replybuf`.
    pub reply_peak_reset_ms: AtomicI64,
    pub reply_resizing: AtomicBool,
    /// AOF-FLUSH-SLEEP, in microseconds: kept; the journal flushes on its own thread.
    pub aof_flush_sleep_us: AtomicU64,
    /// DEBUG SLEEPs under way. Redis's sleeps its whole server, its replication link
    /// included; a Strata one holds its worker, and the link does not reconnect meanwhile.
    pub sleeping: AtomicU64,
}

impl Default for DebugSwitches {
    fn default() -> Self {
        DebugSwitches {
            pause_cron: AtomicBool::new(false),
            allow_noscript: AtomicBool::new(false),
            skip_checksum: AtomicBool::new(false),
            packed_threshold: AtomicU64::new(PACKED_THRESHOLD_DEFAULT),
            reply_peak_reset_ms: AtomicI64::new(PEAK_RESET_DEFAULT_MS),
            reply_resizing: AtomicBool::new(true),
            aof_flush_sleep_us: AtomicU64::new(0),
            sleeping: AtomicU64::new(0),
        }
    }
}
