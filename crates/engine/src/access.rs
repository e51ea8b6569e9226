//! What the 24 access bits of every entry hold, and how an access changes them.
//!
//! Under an LRU policy (and any policy that is not LFU) they are the LRU clock of the last
//! access (`clock::lru_clock`). Under an LFU policy they are Redis's LFU pair: the top 16
//! bits the minutes (Unix time / 60, wrapped) of the counter's last decrement, the low 8 a
//! logarithmic access counter that new keys start at [`LFU_INIT_VAL`], that grows with
//! probability 1 / ((counter - 5) * lfu-log-factor + 1) per access, and that loses one per
//! `lfu-decay-time` minutes without access. Switching policy reinterprets the bits, as in
//! Redis: stamps written under one policy read as noise under the other until the keys are
//! accessed again.

use crate::clock;
use std::cell::Cell;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering::Relaxed};

/// The counter of a key just created (Redis's LFU_INIT_VAL): a new key survives a few
/// eviction rounds before its lack of accesses counts against it.
pub const LFU_INIT_VAL: u8 = 5;

/// A keyspace's access policy: which of the two meanings the access bits have, and the
/// LFU parameters. Changed at run time (CONFIG SET maxmemory-policy, lfu-log-factor,
/// lfu-decay-time); every command reads it once.
#[derive(Debug)]
pub struct Access {
    lfu: AtomicBool,
    log_factor: AtomicU32,
    decay_minutes: AtomicU32,
}

impl Default for Access {
    fn default() -> Self {
        Access {
            lfu: AtomicBool::new(false),
            log_factor: AtomicU32::new(10),
            decay_minutes: AtomicU32::new(1),
        }
    }
}

impl Access {
    /// Access bits are LFU pairs from now on (true) or LRU clocks (false).
    pub fn set_lfu(&self, lfu: bool) {
        self.lfu.store(lfu, Relaxed);
    }

    pub fn is_lfu(&self) -> bool {
        self.lfu.load(Relaxed)
    }

    /// Redis's lfu-log-factor and lfu-decay-time (minutes; 0: counters never decay).
    pub fn set_lfu_params(&self, log_factor: u32, decay_minutes: u32) {
        self.log_factor.store(log_factor, Relaxed);
        self.decay_minutes.store(decay_minutes, Relaxed);
    }

    pub fn decay_minutes(&self) -> u32 {
        self.decay_minutes.load(Relaxed)
    }

    /// The stamp of an access at `now_ms` (Unix ms).
    #[inline]
    pub fn stamp(&self, now_ms: u64) -> Stamp {
        if !self.lfu.load(Relaxed) {
            return Stamp::Lru(clock::lru_clock(now_ms));
        }
        Stamp::Lfu {
            minutes: lfu_minutes(now_ms),
            log_factor: self.log_factor.load(Relaxed),
            decay: self.decay_minutes.load(Relaxed),
        }
    }

    /// Whether access bits `bits` say the entry was used in the last second or two (the
    /// LRU clock's current or previous tick); under LFU, whose pair keeps only the minute
    /// of the last access, in the current minute.
    pub fn used_lately(&self, bits: u32, now_ms: u64) -> bool {
        if self.lfu.load(Relaxed) {
            return (bits >> 8) as u16 == lfu_minutes(now_ms);
        }
        clock::idle_ms(bits, now_ms) < 2 * clock::LRU_RESOLUTION_MS
    }

    /// `stamp` at the kernel's coarse clock (see `clock::lru_now`).
    #[inline]
    pub fn stamp_now(&self) -> Stamp {
        if !self.lfu.load(Relaxed) {
            return Stamp::Lru(clock::lru_now());
        }
        self.stamp(clock::now_ms())
    }
}

/// How an access at one instant stamps an entry: the LRU clock, or the inputs of an LFU
/// update.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stamp {
    Lru(u32),
    Lfu {
        minutes: u16,
        log_factor: u32,
        decay: u32,
    },
}

impl Stamp {
    /// The bits of an entry created now.
    #[inline(always)]
    pub fn fresh(self) -> u32 {
        match self {
            Stamp::Lru(clock) => clock,
            Stamp::Lfu { minutes, .. } => lfu_pair(minutes, LFU_INIT_VAL),
        }
    }

    /// The bits of an entry whose bits were `old`, accessed now. A write that replaces a
    /// value counts as an access of the key (Redis keeps an overwritten key's counter).
    #[inline(always)]
    pub fn touched(self, old: u32) -> u32 {
        match self {
            Stamp::Lru(clock) => clock,
            Stamp::Lfu {
                minutes,
                log_factor,
                decay,
            } => {
                let counter = lfu_decayed(old, minutes, decay);
                lfu_pair(minutes, lfu_log_incr(counter, log_factor))
            }
        }
    }
}

/// The 24 access bits in LFU form: the access minute, then the counter.
pub fn lfu_pair(minutes: u16, counter: u8) -> u32 {
    (u32::from(minutes) << 8) | u32::from(counter)
}

/// Unix minutes, wrapped to 16 bits: the LFU pair's decrement time.
pub fn lfu_minutes(now_ms: u64) -> u16 {
    (now_ms / 60_000) as u16
}

/// The counter of LFU pair `bits` as of `now_ms`, after the decay due since its last
/// decrement (Redis's LFUDecrAndReturn; OBJECT FREQ reports it).
pub fn lfu_counter(bits: u32, now_ms: u64, decay_minutes: u32) -> u8 {
    lfu_decayed(bits, lfu_minutes(now_ms), decay_minutes)
}

fn lfu_decayed(bits: u32, now_minutes: u16, decay: u32) -> u8 {
    let last = (bits >> 8) as u16;
    let counter = (bits & 0xff) as u8;
    // Minutes since the last decrement, the 16-bit clock taken to have wrapped at most once.
    let elapsed = u32::from(now_minutes.wrapping_sub(last));
    let periods = elapsed.checked_div(decay).unwrap_or(0);
    counter.saturating_sub(periods.min(255) as u8)
}

thread_local! {
    static RNG: Cell<u64> = const { Cell::new(0) };
}

/// A uniform number in [0, 1) from a per-thread xorshift generator.
fn unit_random() -> f64 {
    RNG.with(|r| {
        let mut x = r.get();
        if x == 0 {
            // Seeded from the thread's stack address and the clock: distinct per thread.
            x = (std::ptr::from_ref(r).addr() as u64) ^ clock::now_ms().rotate_left(17) | 1;
        }
        x = crate::keyspace::xorshift(x);
        r.set(x);
        (x >> 11) as f64 / (1u64 << 53) as f64
    })
}

/// Redis's LFULogIncr: one more access, counted with a probability that shrinks as the
/// counter grows past LFU_INIT_VAL, so 255 stands for about a million accesses at the
/// default factor of 10.
pub fn lfu_log_incr(counter: u8, log_factor: u32) -> u8 {
    if counter == u8::MAX {
        return counter;
    }
    let base = f64::from(counter.saturating_sub(LFU_INIT_VAL));
    let p = 1.0 / (base * f64::from(log_factor) + 1.0);
    if unit_random() < p {
        counter + 1
    } else {
        counter
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MIN: u64 = 60_000;

    /// A new key starts at LFU_INIT_VAL; a counter decays by one per decay period without
    /// access, never below zero, across the 16-bit minute clock's wrap; decay 0 keeps it.
    #[test]
    fn lfu_counters_start_at_five_and_decay_per_period() {
        let t0 = 1_000 * MIN;
        let s = Access::default();
        s.set_lfu(true);
        let bits = s.stamp(t0).fresh();
        assert_eq!(lfu_counter(bits, t0, 1), LFU_INIT_VAL);
        assert_eq!(lfu_counter(bits, t0 + 3 * MIN, 1), LFU_INIT_VAL - 3);
        assert_eq!(lfu_counter(bits, t0 + 4 * MIN, 2), LFU_INIT_VAL - 2);
        assert_eq!(lfu_counter(bits, t0 + 400 * MIN, 1), 0);
        assert_eq!(lfu_counter(bits, t0 + 400 * MIN, 0), LFU_INIT_VAL);
        // Stamped one minute before the clock wraps, read two minutes later.
        let before_wrap = 65_535 * MIN;
        let bits = s.stamp(before_wrap).fresh();
        assert_eq!(
            lfu_counter(bits, before_wrap + 2 * MIN, 1),
            LFU_INIT_VAL - 2
        );
    }

    /// Accesses raise the counter logarithmically: the first ones almost surely, later ones
    /// ever more rarely (at factor 10, about 10 thousand accesses reach 50 and a million
    /// 255), and a higher factor grows it more slowly.
    #[test]
    fn lfu_counters_grow_logarithmically() {
        let grow = |accesses: u32, factor: u32| {
            let mut c = LFU_INIT_VAL;
            for _ in 0..accesses {
                c = lfu_log_incr(c, factor);
            }
            c
        };
        assert_eq!(
            lfu_log_incr(0, 10),
            1,
            "below LFU_INIT_VAL every access counts"
        );
        let some = grow(10_000, 10);
        assert!((38..=62).contains(&some), "{some}");
        let many = grow(2_000_000, 10);
        assert!(many >= 240, "{many}");
        assert!(grow(100_000, 100) < grow(100_000, 1));
        assert_eq!(lfu_log_incr(255, 0), 255);
    }

    /// An access refreshes the decrement time and keeps the decayed counter; under LRU it
    /// writes the clock.
    #[test]
    fn touching_follows_the_policy() {
        let t0 = 5_000 * MIN;
        let s = Access::default();
        assert_eq!(s.stamp(t0).touched(123), clock::lru_clock(t0));
        s.set_lfu(true);
        s.set_lfu_params(1_000_000, 1);
        let old = lfu_pair(lfu_minutes(t0), 40);
        let new = s.stamp(t0 + 10 * MIN).touched(old);
        assert_eq!(new >> 8, u32::from(lfu_minutes(t0 + 10 * MIN)));
        // Decayed by 10, then (at this factor) almost never incremented.
        assert!((30..=31).contains(&(new & 0xff)), "{}", new & 0xff);
    }
}
