//! The monotonic clock commands are timed with, as a plain count of nanoseconds.

/// A reading of CLOCK_MONOTONIC (the clock `Instant` reads on Linux) in nanoseconds. A
/// command costs one reading; its duration and its wall-clock millisecond are integer
/// arithmetic on it. With `Instant`, `saturating_duration_since` and `as_micros` (u128)
/// cost about 100 instructions per command (callgrind, docs/benchmarks.md).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Tick(u64);

impl Tick {
    pub fn now() -> Tick {
        let mut ts = libc::timespec {
            tv_sec: 0,
            tv_nsec: 0,
        };
        // SAFETY: clock_gettime only writes the timespec it is given, and CLOCK_MONOTONIC
        // exists on every system we build for (it cannot fail with a valid pointer).
        unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
        Tick(ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64)
    }

    /// Microseconds from `earlier` to this reading, 0 if `earlier` is later.
    pub fn micros_since(self, earlier: Tick) -> u64 {
        self.0.saturating_sub(earlier.0) / 1000
    }

    /// Nanoseconds since the clock's (arbitrary) origin.
    pub fn nanos(self) -> u64 {
        self.0
    }

    /// Milliseconds since the clock's (arbitrary) origin.
    pub fn millis(self) -> u64 {
        self.0 / 1_000_000
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Readings never go back, and measure what `Instant` measures.
    #[test]
    fn ticks_follow_instant() {
        let (t0, i0) = (Tick::now(), std::time::Instant::now());
        std::thread::sleep(std::time::Duration::from_millis(20));
        let (i1, t1) = (std::time::Instant::now(), Tick::now());
        assert!(t1 >= t0);
        let tick_us = t1.micros_since(t0);
        let instant_us = i1.duration_since(i0).as_micros() as u64;
        assert!(tick_us >= 20_000, "{tick_us}");
        assert!(tick_us >= instant_us, "{tick_us} < {instant_us}");
        assert!(tick_us - instant_us < 5_000, "{tick_us} vs {instant_us}");
        assert_eq!(t0.micros_since(t1), 0);
        assert!(
            (19..30).contains(&(t1.millis() - t0.millis())),
            "{t0:?} {t1:?}"
        );
    }
}
