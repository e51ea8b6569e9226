//! Wall-clock time in milliseconds and the 24-bit LRU clock Redis uses for idle times.

use std::time::{SystemTime, UNIX_EPOCH};

/// Milliseconds since the Unix epoch.
pub fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0)
}

/// Resolution of the LRU clock, as Redis's LRU_CLOCK_RESOLUTION.
pub const LRU_RESOLUTION_MS: u64 = 1000;
/// The LRU clock wraps at 24 bits, as Redis's.
pub const LRU_MAX: u32 = (1 << 24) - 1;

/// The current LRU clock: seconds, wrapped to 24 bits.
pub fn lru_clock(now_ms: u64) -> u32 {
    ((now_ms / LRU_RESOLUTION_MS) & LRU_MAX as u64) as u32
}

/// Milliseconds since an entry with LRU stamp `lru` was last touched.
pub fn idle_ms(lru: u32, now_ms: u64) -> u64 {
    let now = lru_clock(now_ms);
    let ticks = if now >= lru {
        now - lru
    } else {
        (LRU_MAX - lru) + now
    };
    ticks as u64 * LRU_RESOLUTION_MS
}
