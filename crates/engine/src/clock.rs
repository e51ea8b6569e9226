//! Wall-clock time in milliseconds, the 24-bit LRU clock Redis uses for idle times, and
//! the LFU form of the same 24 bits (an access minute and a logarithmic counter).

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

/// Redis's LFU_INIT_VAL: the counter a new key starts with.
pub const LFU_INIT_VAL: u8 = 5;

/// Minutes since the epoch, wrapped to 16 bits (Redis's LFUGetTimeInMinutes).
pub fn lfu_minutes(now_ms: u64) -> u32 {
    ((now_ms / 60_000) & 0xffff) as u32
}

/// An entry's 24 access bits in LFU form: the minute of the last access (16 bits), then
/// the counter (8 bits).
pub fn lfu_stamp(minutes: u32, counter: u8) -> u32 {
    (minutes & 0xffff) << 8 | u32::from(counter)
}

/// The counter of LFU stamp `stamp`, less one per `decay_minutes` elapsed since its
/// access minute (Redis's LFUDecrAndReturn; a decay of 0 never decays).
pub fn lfu_counter(stamp: u32, now_ms: u64, decay_minutes: u64) -> u8 {
    let then = stamp >> 8;
    let now = lfu_minutes(now_ms);
    let elapsed = if now >= then {
        now - then
    } else {
        0xffff - then + now
    };
    let periods = u64::from(elapsed).checked_div(decay_minutes).unwrap_or(0);
    (stamp as u8).saturating_sub(periods.min(255) as u8)
}

thread_local! {
    static LFU_RNG: std::cell::Cell<u64> = std::cell::Cell::new(now_ms() | 1);
}

/// The counter after one more access: up by one with probability
/// 1 / ((counter - LFU_INIT_VAL) * log_factor + 1), saturating at 255 (LFULogIncr).
pub fn lfu_log_incr(counter: u8, log_factor: u32) -> u8 {
    if counter == 255 {
        return 255;
    }
    let r = LFU_RNG.with(|c| {
        let mut x = c.get();
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        c.set(x);
        (x >> 11) as f64 / (1u64 << 53) as f64
    });
    let base = f64::from(counter.saturating_sub(LFU_INIT_VAL));
    let p = 1.0 / (base * f64::from(log_factor) + 1.0);
    if r < p {
        counter + 1
    } else {
        counter
    }
}

/// How an access stamps an entry: with the LRU clock, or, under an LFU policy, with the
/// minute and a counter decayed then counted up from the entry's previous stamp.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stamp {
    Lru(u32),
    Lfu {
        minutes: u32,
        now_ms: u64,
        log_factor: u32,
        decay_minutes: u64,
    },
}

impl Stamp {
    /// The stamp an entry gets from an access, given the one it had.
    pub fn touched(self, old: u32) -> u32 {
        match self {
            Stamp::Lru(v) => v,
            Stamp::Lfu {
                minutes,
                now_ms,
                log_factor,
                decay_minutes,
            } => {
                let counter = lfu_counter(old, now_ms, decay_minutes);
                lfu_stamp(minutes, lfu_log_incr(counter, log_factor))
            }
        }
    }

    /// The stamp of an entry created now.
    pub fn fresh(self) -> u32 {
        match self {
            Stamp::Lru(v) => v,
            Stamp::Lfu { minutes, .. } => lfu_stamp(minutes, LFU_INIT_VAL),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lfu_counters_decay_and_count_up_logarithmically() {
        let t = 1_000 * 60_000;
        let s = lfu_stamp(lfu_minutes(t), 100);
        assert_eq!(lfu_counter(s, t, 1), 100);
        assert_eq!(lfu_counter(s, t + 30 * 60_000, 1), 70);
        assert_eq!(lfu_counter(s, t + 30 * 60_000, 10), 97);
        assert_eq!(lfu_counter(s, t + 30 * 60_000, 0), 100);
        assert_eq!(lfu_counter(s, t + 500 * 60_000, 1), 0);
        // Near LFU_INIT_VAL a hit almost always counts; far above it, rarely.
        let n = 10_000;
        let low = (0..n)
            .filter(|_| lfu_log_incr(LFU_INIT_VAL, 10) > LFU_INIT_VAL)
            .count();
        let high = (0..n).filter(|_| lfu_log_incr(105, 10) > 105).count();
        assert_eq!(low, n);
        assert!(high < n / 500, "{high}");
        assert_eq!(lfu_log_incr(255, 0), 255);
        let lfu = Stamp::Lfu {
            minutes: lfu_minutes(t),
            now_ms: t,
            log_factor: 10,
            decay_minutes: 1,
        };
        assert_eq!(lfu.fresh(), lfu_stamp(lfu_minutes(t), LFU_INIT_VAL));
        assert_eq!(lfu.touched(s) >> 8, lfu_minutes(t));
        assert_eq!(Stamp::Lru(7).touched(s), 7);
    }

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
