//! The size of a connection's reply buffer, as Redis 7 sizes it: it shrinks while the
//! client's replies leave most of it unused and grows back, doubling up to 16 KiB, while
//! they fill it. Each worker looks at its connections that wait for input every 100 ms
//! (`resize_idle`); a buffer is only resized while it holds nothing. CLIENT LIST shows the
//! size (rbs) and the largest use since the last reset of the peak (rbp); DEBUG
//! REPLYBUFFER sets how often the peak resets, or stops the resizing.
//!
//! Strata's buffer grows past this size while a batch's replies need it (Redis spills
//! them into a list of blocks instead); the resize gives that memory back once it is
//! written, where the buffer used to keep it.

use crate::net::output::Output;
use crate::server::Server;
use std::sync::atomic::Ordering::Relaxed;
use std::time::Instant;

/// The smallest and largest size the resizing chooses (Redis's PROTO_REPLY_MIN_BYTES and
/// PROTO_REPLY_CHUNK_BYTES).
pub(crate) const MIN: usize = 1024;
pub(crate) const MAX: usize = 16 * 1024;

#[derive(Clone)]
pub(crate) struct ReplyBuf {
    /// The buffer's size (rbs).
    size: usize,
    /// The most reply bytes the buffer held at once since the last reset, at most `size`
    /// (rbp).
    peak: usize,
    reset_at: Instant,
}

/// What a look at the buffer decided.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Resize {
    Shrink(usize),
    Expand(usize),
}

impl ReplyBuf {
    pub fn new() -> ReplyBuf {
        ReplyBuf {
            size: MAX,
            peak: 0,
            reset_at: Instant::now(),
        }
    }

    pub fn size(&self) -> usize {
        self.size
    }

    pub fn peak(&self) -> usize {
        self.peak
    }

    /// The buffer held `len` reply bytes before they were written.
    #[inline]
    pub fn note(&mut self, len: usize) {
        self.peak = self.peak.max(len.min(self.size));
    }

    /// The periodic look: a size to change to, if any, then the peak's reset once
    /// `reset_ms` passed (-1: never). The buffer holds nothing when this runs.
    pub fn look(&mut self, now: Instant, reset_ms: i64) -> Option<Resize> {
        let resize = if self.size / 2 >= MIN && self.peak < self.size / 2 {
            Some(Resize::Shrink(MIN.max(self.peak + 1)))
        } else if self.size < MAX && self.peak == self.size {
            Some(Resize::Expand(MAX.min(self.size * 2)))
        } else {
            None
        };
        if let Ok(ms) = u128::try_from(reset_ms) {
            if now.duration_since(self.reset_at).as_millis() >= ms {
                self.peak = 0;
                self.reset_at = now;
            }
        }
        if let Some(Resize::Shrink(n) | Resize::Expand(n)) = resize {
            self.size = n;
        }
        resize
    }
}

/// Counts of resizes, for INFO's `reply_buffer_shrinks` and `reply_buffer_expands`.
#[derive(Default)]
pub struct ResizeCounts {
    pub shrinks: std::sync::atomic::AtomicU64,
    pub expands: std::sync::atomic::AtomicU64,
}

/// Resizes the reply buffer of each connection of this worker that waits for input.
pub(super) fn resize_idle(server: &Server) {
    if !server.debug.reply_resizing.load(Relaxed) {
        return;
    }
    let reset_ms = server.debug.reply_peak_reset_ms.load(Relaxed);
    let now = Instant::now();
    crate::net::busy::each_waiting(|c| {
        let before = c.out.buf.capacity();
        if let Some(r) = resize(&mut c.out, now, reset_ms) {
            let counts = &server.stats.reply_buffer;
            match r {
                Resize::Shrink(_) => counts.shrinks.fetch_add(1, Relaxed),
                Resize::Expand(_) => counts.expands.fetch_add(1, Relaxed),
            };
        }
        let info = &c.client.info;
        info.mem.rbs.store(c.out.reply.size(), Relaxed);
        info.mem.rbp.store(c.out.reply.peak(), Relaxed);
        let after = c.out.buf.capacity();
        if after != before {
            let total = info.mem.total.load(Relaxed) + after;
            crate::net::clients::report(server, info, total.saturating_sub(before));
        }
    });
}

fn resize(out: &mut Output, now: Instant, reset_ms: i64) -> Option<Resize> {
    if out.stalled() {
        return None;
    }
    let r = out.reply.look(now, reset_ms);
    // Whatever the decision, a buffer a large batch grew is given back.
    let size = out.reply.size();
    if out.buf.capacity() > size {
        out.buf = Vec::with_capacity(size);
    } else if r.is_some() {
        out.buf.reserve(size);
    }
    r
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn an_idle_buffer_shrinks_to_the_minimum_and_a_full_one_doubles_to_the_maximum() {
        let mut r = ReplyBuf::new();
        let t = Instant::now();
        assert_eq!(r.look(t, -1), Some(Resize::Shrink(MIN)));
        assert_eq!(r.look(t, -1), None);
        let mut sizes = Vec::new();
        for _ in 0..6 {
            r.note(40_000);
            if let Some(Resize::Expand(n)) = r.look(t, -1) {
                sizes.push(n);
            }
        }
        assert_eq!(sizes, [2048, 4096, 8192, MAX]);
        assert_eq!((r.size(), r.peak()), (MAX, MAX));
    }

    #[test]
    fn a_buffer_shrinks_to_just_past_its_peak_once_the_peak_resets() {
        let mut r = ReplyBuf::new();
        let t = Instant::now();
        r.note(5000);
        // Half the size or more used: kept.
        r.note(9000);
        assert_eq!(r.look(t, 100), None);
        assert_eq!(r.peak(), 9000);
        // The peak resets after 100 ms; the next look shrinks.
        let later = t + Duration::from_millis(150);
        assert_eq!(r.look(later, 100), None);
        assert_eq!(r.peak(), 0);
        r.note(3000);
        assert_eq!(r.look(later, 100), Some(Resize::Shrink(3001)));
    }
}
