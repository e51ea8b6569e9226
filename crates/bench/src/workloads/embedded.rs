//! `strata bench embedded`: the classic ETS benchmark's shape ("etsb") in-process, against
//! strata-engine's keyspace and, for reference, `dashmap` (the best-known Rust concurrent
//! map); `scripts/ets-bench.escript` is the same shape over an ETS table, drawing the same
//! keys. One table of `rows` keys filled in parallel by `threads` threads; then, for each
//! writes-per-1000 ratio, `rounds` timed rounds in which every thread does `loops`
//! operations on random keys, `w` of every 1000 of them updates (spread evenly by an
//! accumulator), the rest lookups. Keys are the row number as 8 big-endian bytes, values an
//! 8-byte integer (the escript stores `{I, I}` tuples). Output mirrors the escript's line by
//! line: a fill line, then per ratio the rounds and `best=… median=…` in Mops/s.

use std::hint::black_box;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Barrier;
use std::time::{Duration, Instant};
use strata_engine::Table;

/// The maps the benchmark can run against.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MapKind {
    Strata,
    Dashmap,
}

impl MapKind {
    pub fn name(self) -> &'static str {
        match self {
            MapKind::Strata => "strata",
            MapKind::Dashmap => "dashmap",
        }
    }

    /// `strata`, `dashmap` or `both` (strata first, then dashmap).
    pub fn parse_list(s: &str) -> Result<Vec<MapKind>, String> {
        match s {
            "strata" => Ok(vec![MapKind::Strata]),
            "dashmap" => Ok(vec![MapKind::Dashmap]),
            "both" => Ok(vec![MapKind::Strata, MapKind::Dashmap]),
            _ => Err(format!("bad --map {s:?}: expected strata, dashmap or both")),
        }
    }
}

#[derive(Clone, Debug)]
pub struct Opts {
    pub rows: u64,
    pub threads: usize,
    pub writes_per_1000: Vec<u32>,
    pub loops: u64,
    pub rounds: usize,
    pub maps: Vec<MapKind>,
    /// strata-engine: 2^shard_bits shards.
    pub shard_bits: u32,
    /// Fill progress interval (etsb-style "every 5 s").
    pub progress: Duration,
    /// Each lookup's key depends on the value the previous lookup read, so no two lookups'
    /// cache misses overlap: the per-lookup latency rather than the throughput.
    pub chained: bool,
}

/// What one map did: fill rate, bytes per row, and per ratio the rounds' ops/s.
#[derive(Clone, Debug)]
pub struct MapResult {
    pub map: MapKind,
    pub fill_rows_per_s: f64,
    pub bytes_per_row: f64,
    pub ratios: Vec<(u32, Vec<f64>)>,
}

/// The operations the workload needs; implemented for both maps so the hot loop is the same
/// monomorphized code for each.
trait Map: Sync {
    /// The value read out, None when the key is missing. The value is copied, as
    /// `ets:lookup` copies the object it returns: a lookup that only locates the value
    /// would skip the memory access a caller always makes, and maps that keep values apart
    /// from keys (dashmap's `Box<[u8]>` values) pay for that access where packed entries
    /// do not.
    fn lookup(&self, key: &[u8]) -> Option<u64>;
    fn update(&self, key: &[u8], value: &[u8]);
}

struct StrataMap {
    table: Table,
}

impl Map for StrataMap {
    #[inline]
    fn lookup(&self, key: &[u8]) -> Option<u64> {
        // `get_with` does not stamp the LRU clock (no write to the entry): as ets:lookup.
        self.table.get_with(key, read_value)
    }

    #[inline]
    fn update(&self, key: &[u8], value: &[u8]) {
        self.table.set(key, value);
    }
}

type Dash = dashmap::DashMap<Box<[u8]>, Box<[u8]>, foldhash::fast::RandomState>;

struct DashMapMap {
    map: Dash,
}

impl Map for DashMapMap {
    #[inline]
    fn lookup(&self, key: &[u8]) -> Option<u64> {
        self.map.get(key).map(|v| read_value(&v))
    }

    #[inline]
    fn update(&self, key: &[u8], value: &[u8]) {
        // An existing key keeps its key allocation (dashmap's best case); a new one is inserted.
        match self.map.get_mut(key) {
            Some(mut v) => *v = value.into(),
            None => {
                self.map.insert(key.into(), value.into());
            }
        }
    }
}

/// Resident set size of this process in bytes (VmRSS from /proc/self/status), 0 if unknown.
pub fn rss_bytes() -> u64 {
    proc_kb("/proc/self/status", "VmRSS:")
}

/// Bytes of this process's memory in transparent huge pages (AnonHugePages), 0 if unknown.
pub fn huge_page_bytes() -> u64 {
    proc_kb("/proc/self/smaps_rollup", "AnonHugePages:")
}

/// A `Field:   N kB` line of a /proc file, in bytes.
fn proc_kb(file: &str, field: &str) -> u64 {
    std::fs::read_to_string(file)
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix(field))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        })
        .map_or(0, |kb| kb * 1024)
}

/// The value copied out (every value here is the 8-byte row number).
#[inline]
fn read_value(v: &[u8]) -> u64 {
    // Every value here is 8 bytes: a fixed-size copy, not a call to memcpy.
    if let Ok(b) = <[u8; 8]>::try_from(v) {
        return u64::from_le_bytes(b);
    }
    let mut b = [0u8; 8];
    let n = v.len().min(8);
    b[..n].copy_from_slice(&v[..n]);
    u64::from_le_bytes(b)
}

#[inline]
fn key_bytes(i: u64) -> [u8; 8] {
    i.to_be_bytes()
}

/// The xorshift32 step (the escript's too).
#[inline]
fn xorshift32(mut x: u32) -> u32 {
    x ^= x << 13;
    x ^= x >> 17;
    x ^= x << 5;
    x
}

/// Worker `worker`'s seed for round `round` (never 0; the escript seeds its processes alike).
fn seed(worker: usize, round: usize) -> u32 {
    let s = (worker as u64)
        .wrapping_mul(2_654_435_761)
        .wrapping_add(round as u64 * 40503 + 12345) as u32;
    s.max(1)
}

/// Inserts keys 1..=rows from `threads` threads (each a contiguous range), printing progress
/// every `progress`. Returns the elapsed time.
fn fill<M: Map>(m: &M, o: &Opts, out: &mut dyn FnMut(String)) -> Duration {
    let done = AtomicU64::new(0);
    let finished = AtomicU64::new(0);
    let t = o.threads as u64;
    let start = Instant::now();
    std::thread::scope(|s| {
        for w in 0..t {
            let (done, finished) = (&done, &finished);
            s.spawn(move || {
                let lo = 1 + o.rows * w / t;
                let hi = 1 + o.rows * (w + 1) / t;
                let mut pending = 0;
                for i in lo..hi {
                    m.update(&key_bytes(i), &i.to_le_bytes());
                    pending += 1;
                    if pending == 4096 {
                        done.fetch_add(pending, Ordering::Relaxed);
                        pending = 0;
                    }
                }
                done.fetch_add(pending, Ordering::Relaxed);
                finished.fetch_add(1, Ordering::Release);
            });
        }
        let mut next = start + o.progress;
        while finished.load(Ordering::Acquire) < t {
            std::thread::sleep(Duration::from_millis(10));
            let now = Instant::now();
            if now >= next {
                let n = done.load(Ordering::Relaxed);
                let secs = (now - start).as_secs_f64();
                out(format!(
                    "# fill: {n} rows after {secs:.1} s ({:.2} Mins/s)",
                    n as f64 / secs / 1e6
                ));
                next += o.progress;
            }
        }
    });
    start.elapsed()
}

/// One round: every thread does `loops` operations, `writes` per 1000 of them updates.
/// Returns the ops/s and the number of lookups that missed (must be 0).
fn round<M: Map>(m: &M, o: &Opts, writes: u32, round: usize) -> (f64, u64) {
    if o.chained {
        round_as::<M, true>(m, o, writes, round)
    } else {
        round_as::<M, false>(m, o, writes, round)
    }
}

/// `round`, compiled apart for chained lookups so the independent loop carries no
/// dependency on the values it reads.
fn round_as<M: Map, const CHAINED: bool>(m: &M, o: &Opts, writes: u32, round: usize) -> (f64, u64) {
    let barrier = Barrier::new(o.threads + 1);
    let misses = AtomicU64::new(0);
    let n = o.rows.max(1);
    let elapsed = std::thread::scope(|s| {
        for w in 0..o.threads {
            let (barrier, misses) = (&barrier, &misses);
            s.spawn(move || {
                let mut x = seed(w + 1, round);
                let mut acc = 0u32;
                let mut missed = 0u64;
                barrier.wait();
                for left in (1..=o.loops).rev() {
                    x = xorshift32(x);
                    let key = key_bytes(x as u64 % n + 1);
                    acc += writes;
                    if acc >= 1000 {
                        acc -= 1000;
                        m.update(&key, &left.to_le_bytes());
                    } else {
                        match m.lookup(&key) {
                            // Bit 0 of a value feeds the next key: a data dependency the
                            // CPU cannot predict its way past (max: xorshift sticks at 0).
                            Some(v) if CHAINED => x = (x ^ (v as u32 & 1)).max(1),
                            Some(v) => {
                                black_box(v);
                            }
                            None => missed += 1,
                        }
                    }
                }
                misses.fetch_add(missed, Ordering::Relaxed);
            });
        }
        barrier.wait();
        let start = Instant::now();
        // The scope joins every worker before returning.
        start
    })
    .elapsed();
    let ops = (o.threads as u64 * o.loops) as f64;
    (
        ops / elapsed.as_secs_f64().max(1e-9),
        misses.load(Ordering::Relaxed),
    )
}

fn best_median_avg(rates: &[f64]) -> (f64, f64, f64) {
    let mut s = rates.to_vec();
    s.sort_by(|a, b| b.total_cmp(a));
    let avg = s.iter().sum::<f64>() / s.len().max(1) as f64;
    (s[0], s[s.len().div_ceil(2) - 1], avg)
}

fn run_map<M: Map>(
    kind: MapKind,
    make: impl FnOnce() -> M,
    o: &Opts,
    out: &mut dyn FnMut(String),
) -> Result<MapResult, String> {
    let rss0 = rss_bytes();
    let m = make();
    let took = fill(&m, o, out);
    let rss1 = rss_bytes();
    let bytes_per_row = rss1.saturating_sub(rss0) as f64 / o.rows.max(1) as f64;
    let fill_rate = o.rows as f64 / took.as_secs_f64().max(1e-9);
    out(format!(
        "# fill: {} rows in {:.3} s ({:.2} Mins/s), RSS +{:.1} MiB ({:.1} bytes/row), {:.1} MiB in huge pages",
        o.rows,
        took.as_secs_f64(),
        fill_rate / 1e6,
        rss1.saturating_sub(rss0) as f64 / 1048576.0,
        bytes_per_row,
        huge_page_bytes() as f64 / 1048576.0
    ));
    // Untimed warm-up round of lookups, as the escript's.
    let (_, missed) = round(&m, o, 0, 0);
    if missed > 0 {
        return Err(format!(
            "{}: {missed} lookups missed after the fill",
            kind.name()
        ));
    }
    let mut ratios = Vec::new();
    for &w in &o.writes_per_1000 {
        let mut rates = Vec::new();
        for r in 1..=o.rounds {
            let (rate, missed) = round(&m, o, w, r);
            if missed > 0 {
                return Err(format!("{}: {missed} lookups missed", kind.name()));
            }
            out(format!(
                "{:<8} updates/1000={w:<4} round {r}: {:.2} Mops/s",
                kind.name(),
                rate / 1e6
            ));
            rates.push(rate);
        }
        let (best, median, avg) = best_median_avg(&rates);
        out(format!(
            "{:<8} {:<18} p={} n={} ops/round={}  best={:.2} Mops/s  median={:.2} Mops/s  avg={:.2} Mops/s  ({} ops/s)",
            kind.name(),
            format!("updates/1000={w}"),
            o.threads,
            o.rows,
            o.threads as u64 * o.loops,
            best / 1e6,
            median / 1e6,
            avg / 1e6,
            best.round() as u64
        ));
        ratios.push((w, rates));
    }
    // Free the table before the next map is measured (its RSS delta starts after this).
    drop(m);
    Ok(MapResult {
        map: kind,
        fill_rows_per_s: fill_rate,
        bytes_per_row,
        ratios,
    })
}

/// Runs the benchmark, writing lines through `out`; returns each map's figures.
pub fn run(o: &Opts, out: &mut dyn FnMut(String)) -> Result<Vec<MapResult>, String> {
    if o.threads == 0 || o.rows == 0 || o.rounds == 0 {
        return Err("--rows, --threads and --rounds must be at least 1".into());
    }
    if o.rows > u32::MAX as u64 {
        return Err(
            "--rows: at most 2^32 - 1 (keys are drawn by a 32-bit xorshift, as etsb's)".into(),
        );
    }
    if o.writes_per_1000.iter().any(|&w| w > 1000) {
        return Err("--writes-per-1000: each ratio must be 0..1000".into());
    }
    out(format!(
        "# strata bench embedded: rows={} threads={} loops={} rounds={} shards=2^{} cpus={}",
        o.rows,
        o.threads,
        o.loops,
        o.rounds,
        o.shard_bits,
        std::thread::available_parallelism().map_or(0, |n| n.get())
    ));
    let mut results = Vec::new();
    for &kind in &o.maps {
        out(format!("# map={}", kind.name()));
        let r = match kind {
            MapKind::Strata => run_map(
                kind,
                || StrataMap {
                    table: Table::with_shards(o.shard_bits),
                },
                o,
                out,
            )?,
            MapKind::Dashmap => run_map(
                kind,
                || DashMapMap {
                    map: Dash::with_hasher(Default::default()),
                },
                o,
                out,
            )?,
        };
        results.push(r);
    }
    if results.len() > 1 {
        let base = &results[0];
        for other in &results[1..] {
            for ((w, a), (_, b)) in base.ratios.iter().zip(&other.ratios) {
                let (ba, _, _) = best_median_avg(a);
                let (bb, _, _) = best_median_avg(b);
                out(format!(
                    "# updates/1000={w}: {} best {:.2} / {} best {:.2} Mops/s = {:.2}x",
                    base.map.name(),
                    ba / 1e6,
                    other.map.name(),
                    bb / 1e6,
                    ba / bb.max(1e-9)
                ));
            }
        }
    }
    Ok(results)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_maps_run_and_every_lookup_hits() {
        // Chained lookups take their keys from the values read: they must stay in range.
        for chained in [false, true] {
            let o = Opts {
                rows: 2000,
                threads: 2,
                writes_per_1000: vec![0, 100],
                loops: 5000,
                rounds: 2,
                maps: MapKind::parse_list("both").unwrap(),
                shard_bits: 4,
                progress: Duration::from_secs(5),
                chained,
            };
            let mut lines = Vec::new();
            let r = run(&o, &mut |l| lines.push(l)).unwrap();
            assert_eq!(r.len(), 2);
            for m in &r {
                assert_eq!(m.ratios.len(), 2);
                assert!(m
                    .ratios
                    .iter()
                    .all(|(_, v)| v.len() == 2 && v.iter().all(|&x| x > 0.0)));
            }
            assert!(lines
                .iter()
                .any(|l| l.contains("best=") && l.contains("updates/1000=100")));
        }
    }

    #[test]
    fn writes_spread_like_etsb() {
        // 50 per 1000: exactly 50 updates in 1000 ops with the accumulator.
        let mut acc = 0;
        let n = (0..1000)
            .filter(|_| {
                acc += 50;
                if acc >= 1000 {
                    acc -= 1000;
                    true
                } else {
                    false
                }
            })
            .count();
        assert_eq!(n, 50);
        assert!(MapKind::parse_list("nope").is_err());
    }
}
