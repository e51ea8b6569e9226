//! Counters for INFO. Per-command counters are per worker thread (only that thread writes
//! them, so no cache line bounces between cores); INFO sums them.

use parking_lot::Mutex;
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed, Ordering::SeqCst};
use std::sync::Arc;

/// Buckets of a command's latency histogram (LATENCY HISTOGRAM): bucket `k` counts runs
/// under 1024·2^k ns, as Redis reports its histograms (up to 1 s, where it stops).
pub const LATENCY_BUCKETS: usize = 21;

/// What HdrHistogram's value_at_percentile answers for `percentile` of histogram `h`, in
/// microseconds, as INFO latencystats prints it: the highest value of the bucket that
/// holds the run at that rank (Redis's buckets have two significant digits, these are
/// powers of two, so this is the bucket's top: 1.023, 2.047 ... µs).
pub fn latency_percentile_usec(h: &[u64; LATENCY_BUCKETS], percentile: f64) -> f64 {
    let total: u64 = h.iter().sum();
    if total == 0 {
        return 0.0;
    }
    let rank = ((percentile.clamp(0.0, 100.0) / 100.0 * total as f64) + 0.5) as u64;
    let mut seen = 0;
    let k = h
        .iter()
        .position(|&n| {
            seen += n;
            seen >= rank.max(1)
        })
        .unwrap_or(LATENCY_BUCKETS - 1);
    let top_ns = if k + 1 >= LATENCY_BUCKETS {
        (1u64 << 30) - 1
    } else {
        (1024u64 << k) - 1
    };
    top_ns as f64 / 1000.0
}

/// The bucket of a run of `us` microseconds.
#[inline]
pub fn latency_bucket(us: u64) -> usize {
    let ns = us.saturating_mul(1000).clamp(1, 1_000_000_000);
    ((u64::BITS - (ns >> 10).leading_zeros()) as usize).min(LATENCY_BUCKETS - 1)
}

pub struct ThreadStats {
    calls: Box<[AtomicU64]>,
    /// `LATENCY_BUCKETS` counters per command.
    latency: Box<[AtomicU64]>,
    usec: Box<[AtomicU64]>,
    rejected: Box<[AtomicU64]>,
    failed: Box<[AtomicU64]>,
    pub net_input: AtomicU64,
    pub net_output: AtomicU64,
    /// Writes this thread has in flight, by the parity of their snapshot epoch (see
    /// `snapshot::InFlight`): per thread, so a write touches no line another core writes.
    pub writes_in_flight: [AtomicU64; 2],
    /// Writes that changed something (INFO rdb_changes_since_last_save, `save` rules).
    changes: AtomicU64,
}

fn counters(n: usize) -> Box<[AtomicU64]> {
    (0..n).map(|_| AtomicU64::new(0)).collect()
}

impl ThreadStats {
    pub fn new(commands: usize) -> ThreadStats {
        ThreadStats {
            calls: counters(commands),
            latency: counters(commands * LATENCY_BUCKETS),
            usec: counters(commands),
            rejected: counters(commands),
            failed: counters(commands),
            net_input: AtomicU64::new(0),
            net_output: AtomicU64::new(0),
            writes_in_flight: Default::default(),
            changes: AtomicU64::new(0),
        }
    }

    // Only the owning thread writes, so a load and a store suffice (no locked instruction).
    fn bump(c: &AtomicU64, by: u64) {
        c.store(c.load(Relaxed) + by, Relaxed);
    }

    /// A run of command `id`; in its latency histogram too with `histogram`
    /// (`latency-tracking`).
    pub fn called(&self, id: usize, took_us: u64, histogram: bool) {
        Self::bump(&self.calls[id], 1);
        Self::bump(&self.usec[id], took_us);
        if histogram {
            Self::bump(
                &self.latency[id * LATENCY_BUCKETS + latency_bucket(took_us)],
                1,
            );
        }
    }

    /// A blocked client's command ran again to serve it: its call was counted when it
    /// blocked (as Redis counts it), so only its time adds up.
    pub fn ran_again(&self, id: usize, took_us: u64) {
        Self::bump(&self.usec[id], took_us);
    }

    /// A write changed the data set.
    pub fn changed(&self) {
        Self::bump(&self.changes, 1);
    }

    pub fn rejected(&self, id: usize) {
        Self::bump(&self.rejected[id], 1);
    }

    pub fn failed(&self, id: usize) {
        self.failed_by(id, 1);
    }

    pub fn failed_by(&self, id: usize, n: u64) {
        Self::bump(&self.failed[id], n);
    }

    pub fn add_net(&self, input: usize, output: usize) {
        Self::bump(&self.net_input, input as u64);
        Self::bump(&self.net_output, output as u64);
    }

    fn reset(&self) {
        for c in self
            .calls
            .iter()
            .chain(self.usec.iter())
            .chain(self.rejected.iter())
            .chain(self.failed.iter())
            .chain(self.latency.iter())
        {
            c.store(0, Relaxed);
        }
    }
}

/// Per-command totals over all threads.
#[derive(Default, Clone, Copy)]
pub struct CommandTotals {
    pub calls: u64,
    pub usec: u64,
    pub rejected: u64,
    pub failed: u64,
}

/// Server-wide counters.
#[derive(Default)]
pub struct Stats {
    threads: Mutex<Vec<Arc<ThreadStats>>>,
    /// `latency-tracking`: commands' runs go into their latency histograms.
    pub latency_tracking: std::sync::atomic::AtomicBool,
    pub connections_received: AtomicU64,
    pub rejected_connections: AtomicU64,
    /// Error replies a replica gave to its primary's stream (INFO, each logged).
    pub unexpected_error_replies: AtomicU64,
    /// Clients closed by client eviction (`maxmemory-clients`).
    pub evicted_clients: AtomicU64,
    /// Connections handed to another worker (a hot key's, see conn::serve_client).
    pub connections_moved: AtomicU64,
    /// Reply buffers resized (`net::replybuf`).
    pub reply_buffer: crate::net::replybuf::ResizeCounts,
    errors: Mutex<BTreeMap<String, u64>>,
}

impl Stats {
    pub fn register(&self, t: Arc<ThreadStats>) {
        self.threads.lock().push(t);
    }

    /// Counts an error reply (its text, without the '-') by its code, for INFO errorstats:
    /// the first word, when a space follows it within the reply's first 32 bytes (as
    /// Redis looks for it), else ERR.
    pub fn count_error(&self, text: &str) {
        let head = &text.as_bytes()[..text.len().min(31)];
        let code = match head.iter().position(|&b| b == b' ') {
            Some(sp) => &text[..sp],
            None => "ERR",
        };
        *self.errors.lock().entry(code.to_string()).or_default() += 1;
    }

    pub fn errors(&self) -> Vec<(String, u64)> {
        self.errors
            .lock()
            .iter()
            .map(|(k, v)| (k.clone(), *v))
            .collect()
    }

    /// Writes in flight on every worker thread with an epoch of this parity.
    pub fn writes_in_flight(&self, parity: usize) -> u64 {
        self.threads
            .lock()
            .iter()
            .map(|t| t.writes_in_flight[parity].load(SeqCst))
            .sum()
    }

    pub fn command_totals(&self, commands: usize) -> Vec<CommandTotals> {
        let mut t = vec![CommandTotals::default(); commands];
        for ts in self.threads.lock().iter() {
            for (i, c) in t.iter_mut().enumerate() {
                c.calls += ts.calls[i].load(Relaxed);
                c.usec += ts.usec[i].load(Relaxed);
                c.rejected += ts.rejected[i].load(Relaxed);
                c.failed += ts.failed[i].load(Relaxed);
            }
        }
        t
    }

    /// Command `id`'s latency histogram over all threads: runs per bucket.
    pub fn latency_histogram(&self, id: usize) -> [u64; LATENCY_BUCKETS] {
        let mut h = [0; LATENCY_BUCKETS];
        for ts in self.threads.lock().iter() {
            let mine = &ts.latency[id * LATENCY_BUCKETS..(id + 1) * LATENCY_BUCKETS];
            for (total, c) in h.iter_mut().zip(mine) {
                *total += c.load(Relaxed);
            }
        }
        h
    }

    /// Writes that changed the data set since start, over all threads.
    pub fn changes(&self) -> u64 {
        self.threads
            .lock()
            .iter()
            .map(|t| t.changes.load(Relaxed))
            .sum()
    }

    /// (bytes read, bytes written) over all threads.
    pub fn net(&self) -> (u64, u64) {
        self.threads.lock().iter().fold((0, 0), |(i, o), t| {
            (
                i + t.net_input.load(Relaxed),
                o + t.net_output.load(Relaxed),
            )
        })
    }

    pub fn reset(&self) {
        for t in self.threads.lock().iter() {
            t.reset();
        }
        self.errors.lock().clear();
        self.connections_received.store(0, Relaxed);
        self.rejected_connections.store(0, Relaxed);
        self.evicted_clients.store(0, Relaxed);
        self.connections_moved.store(0, Relaxed);
        self.reply_buffer.shrinks.store(0, Relaxed);
        self.reply_buffer.expands.store(0, Relaxed);
        self.unexpected_error_replies.store(0, Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_percentile_is_the_top_of_the_bucket_holding_its_rank() {
        let mut h = [0; LATENCY_BUCKETS];
        h[0] = 1; // a run under 1,024 ns
        h[5] = 1; // one under 32,768 ns
        assert_eq!(latency_percentile_usec(&h, 0.0), 1.023);
        assert_eq!(latency_percentile_usec(&h, 50.0), 1.023);
        assert_eq!(latency_percentile_usec(&h, 99.0), 32.767);
        assert_eq!(latency_percentile_usec(&h, 100.0), 32.767);
        h[LATENCY_BUCKETS - 1] = 8; // runs of a second or more, where Redis stops
        assert_eq!(latency_percentile_usec(&h, 99.9), 1_073_741.823);
        // An empty histogram answers 0, as HdrHistogram's does.
        assert_eq!(latency_percentile_usec(&[0; LATENCY_BUCKETS], 50.0), 0.0);
    }

    #[test]
    fn latency_buckets_double_from_1024_ns() {
        // 0 and 1 µs are under 1024 ns; 2 µs under 2048; 100 ms under 2^27 ns.
        assert_eq!(latency_bucket(0), 0);
        assert_eq!(latency_bucket(1), 0);
        assert_eq!(latency_bucket(2), 1);
        assert_eq!(latency_bucket(4), 2);
        assert_eq!(latency_bucket(100_000), 17);
        // Everything from 2^29 ns on shares the last bucket, as Redis clamps at 1 s.
        assert_eq!(latency_bucket(600_000), LATENCY_BUCKETS - 1);
        assert_eq!(latency_bucket(u64::MAX), LATENCY_BUCKETS - 1);
        let s = Stats::default();
        let t = Arc::new(ThreadStats::new(2));
        s.register(t.clone());
        t.called(1, 3, true);
        t.called(1, 3, true);
        t.called(1, 3, false);
        let h = s.latency_histogram(1);
        assert_eq!((h[2], h.iter().sum::<u64>()), (2, 2));
        s.reset();
        assert_eq!(s.latency_histogram(1).iter().sum::<u64>(), 0);
    }
}
