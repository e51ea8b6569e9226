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

/// The current LRU clock from the kernel's coarse clock (updated every tick, a few ms):
/// ample for a clock of 1 s, and a fraction of the cost of a precise read, which was a
/// third of an in-cache embedded update (docs/benchmarks.md, issue 7). Never ahead of
/// `now_ms`.
pub fn lru_now() -> u32 {
    #[cfg(target_os = "linux")]
    {
        let mut ts = libc::timespec {
            tv_sec: 0,
            tv_nsec: 0,
        };
        // SAFETY: clock_gettime writes only the timespec it is given.
        if unsafe { libc::clock_gettime(libc::CLOCK_REALTIME_COARSE, &mut ts) } == 0 {
            return lru_clock(ts.tv_sec as u64 * 1000 + ts.tv_nsec as u64 / 1_000_000);
        }
    }
    lru_clock(now_ms())
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

#[cfg(test)]
mod tests {
    use super::*;

    /// The coarse LRU clock lags the precise one by at most a tick, never leads it.
    #[test]
    fn the_coarse_lru_clock_agrees_with_the_precise_one() {
        for _ in 0..1000 {
            let before = lru_clock(now_ms());
            let coarse = lru_now();
            let after = lru_clock(now_ms());
            assert!(
                coarse + 1 >= before && coarse <= after,
                "{before} {coarse} {after}"
            );
        }
    }
}
