//! Strata's engine inside a Rust program: threads sharing one `Table`.
//!
//! `cargo run -p strata-embedded-example` shows counters, compare-and-swap and expiry.
//! `cargo run --release -p strata-embedded-example -- bench [secs] [threads,...] [rows]` runs the
//! thread-scaling micro-benchmark of docs/scaling.md: more threads than cores, to show
//! that throughput holds (no lock convoy) rather than collapsing.
//! `cargo run --release -p strata-embedded-example -- tier DIR` keeps a table five times
//! larger than its memory budget, the rest on disk in DIR (`strata-tier`, docs/memory.md).

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};
use strata_engine::{Budget, Policy, Table};
use strata_tier::Tier;

#[global_allocator]
static ALLOC: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.first().map(String::as_str) {
        Some("bench") => bench(&args[1..]),
        Some("tier") if args.len() == 2 => tier(std::path::Path::new(&args[1])),
        None | Some("demo") => demo(),
        Some(other) => {
            eprintln!("usage: strata-embedded-example [demo | bench [secs] [threads,...] [rows] | tier DIR] (got {other:?})");
            std::process::exit(2);
        }
    }
}

/// A table with a 16 MiB budget holding 80 MiB of values: what does not fit moves, key
/// and value, to an on-disk store in `dir` (emptied first) and comes back when read.
fn tier(dir: &std::path::Path) {
    let budget = 16 << 20;
    let table = Table::with_budget(Budget::new(budget, Policy::AllKeysLru));
    let store = Tier::open(
        dir,
        1,
        table.db().shard_count(),
        8 << 20,
        table.shared_encodings(),
        false,
    )
    .unwrap_or_else(|e| {
        eprintln!("{e}");
        std::process::exit(1);
    });
    table.set_cold_store(Arc::new(store));
    let value = |i: u64| format!("{i:01024}").into_bytes();
    let rows = 80 * 1024;
    let start = Instant::now();
    for i in 0..rows {
        table.set(format!("row:{i}").as_bytes(), &value(i));
    }
    println!(
        "wrote {rows} rows of 1 KiB in {:.2?}: {} in RAM ({} bytes, budget {budget}), {} on disk",
        start.elapsed(),
        table.len() as u64 - table.cold_keys(),
        table.memory_used(),
        table.cold_keys(),
    );
    let start = Instant::now();
    let intact = (0..rows)
        .step_by(7)
        .all(|i| table.get(format!("row:{i}").as_bytes()) == Some(value(i)));
    println!(
        "read back every 7th row in {:.2?}: {}",
        start.elapsed(),
        if intact { "all intact" } else { "MISMATCH" }
    );
    assert!(intact);
}

fn demo() {
    let table = Arc::new(Table::new());
    let threads = 8;

    // Counters: every thread increments shared counters; no update is lost.
    let handles: Vec<_> = (0..threads)
        .map(|i| {
            let t = Arc::clone(&table);
            thread::spawn(move || {
                for n in 0..10_000 {
                    t.incr(b"requests", 1).unwrap();
                    if n % 10 == i % 10 {
                        t.incr(b"errors", 1).unwrap();
                    }
                }
            })
        })
        .collect();
    handles.into_iter().for_each(|h| h.join().unwrap());
    println!(
        "counters: requests = {}, errors = {}",
        show(table.get(b"requests")),
        show(table.get(b"errors"))
    );

    // Compare-and-swap: a lock-free read-modify-write of a non-integer value (a list of
    // thread ids appended in turn), retried until it wins.
    let retries = Arc::new(AtomicU64::new(0));
    let handles: Vec<_> = (0..threads)
        .map(|i| {
            let (t, retries) = (Arc::clone(&table), Arc::clone(&retries));
            thread::spawn(move || {
                for _ in 0..100 {
                    loop {
                        let cur = t.get(b"log");
                        let mut next = cur.clone().unwrap_or_default();
                        next.push(b'0' + i as u8);
                        if t.compare_and_swap(b"log", cur.as_deref(), Some(&next)) {
                            break;
                        }
                        retries.fetch_add(1, Ordering::Relaxed);
                    }
                }
            })
        })
        .collect();
    handles.into_iter().for_each(|h| h.join().unwrap());
    let log = table.get(b"log").unwrap_or_default();
    println!(
        "cas: {} appends from {threads} threads ({} CAS retries)",
        log.len(),
        retries.load(Ordering::Relaxed)
    );

    // A CAS-based lease: one owner at a time, released by its owner only.
    assert!(table.compare_and_swap(b"lease", None, Some(b"worker-1")));
    assert!(!table.compare_and_swap(b"lease", None, Some(b"worker-2")));
    println!("lease: held by {}", show(table.get(b"lease")));
    assert!(table.compare_and_swap(b"lease", Some(b"worker-1"), None));

    // Expiry: a session that lives 100 ms.
    table.set_with_ttl(b"session:42", b"alice", Duration::from_millis(100));
    println!(
        "ttl: session:42 = {} (expires in {:?})",
        show(table.get(b"session:42")),
        table.ttl(b"session:42").flatten().unwrap_or_default()
    );
    thread::sleep(Duration::from_millis(150));
    println!(
        "ttl: after 150 ms session:42 = {}",
        show(table.get(b"session:42"))
    );

    // Hashes, as the server's HSET/HGET.
    table
        .with_hash_mut(b"user:1", |h, enc| {
            h.set(b"name", b"Ada", enc);
            h.set(b"lang", b"Rust", enc);
        })
        .unwrap();
    let fields = table
        .with_hash(b"user:1", |h| h.len())
        .unwrap()
        .unwrap_or(0);
    println!("hash: user:1 has {fields} fields");

    let mut keys: Vec<String> = table
        .keys()
        .map(|k| String::from_utf8_lossy(&k).into_owned())
        .collect();
    keys.sort();
    println!("keys: {keys:?}");
}

fn show(v: Option<Vec<u8>>) -> String {
    v.map_or("(nil)".into(), |v| String::from_utf8_lossy(&v).into_owned())
}

// ---------------------------------------------------------------------------------------
// The scaling micro-benchmark

struct Workload {
    name: &'static str,
    /// Updates per 1000 operations (the rest are lookups).
    writes_per_1000: u64,
    /// All operations on one key (the worst case for a sharded design).
    hot_key: bool,
}

const WORKLOADS: &[Workload] = &[
    Workload {
        name: "uniform, read-only",
        writes_per_1000: 0,
        hot_key: false,
    },
    Workload {
        name: "uniform, 100 writes/1000",
        writes_per_1000: 100,
        hot_key: false,
    },
    Workload {
        name: "one hot key, INCR only",
        writes_per_1000: 1000,
        hot_key: true,
    },
];

fn bench(args: &[String]) {
    let secs: f64 = args.first().and_then(|s| s.parse().ok()).unwrap_or(1.0);
    let threads: Vec<usize> = args
        .get(1)
        .map(|s| s.split(',').filter_map(|t| t.parse().ok()).collect())
        .unwrap_or_else(|| vec![1, 2, 4, 8, 16]);
    let rows: u64 = args
        .get(2)
        .and_then(|s| s.parse().ok())
        .unwrap_or(1_000_000);
    let cores = thread::available_parallelism().map_or(1, |n| n.get());
    let table = Arc::new(Table::new());
    let keys: Arc<Vec<Vec<u8>>> =
        Arc::new((0..rows).map(|i| format!("key:{i}").into_bytes()).collect());
    let start = Instant::now();
    for k in keys.iter() {
        table.set(k, b"0123456789abcdef");
    }
    println!(
        "{} rows filled in {:.2} s; {cores} cores; {:.1} s per point",
        rows,
        start.elapsed().as_secs_f64(),
        secs
    );
    for w in WORKLOADS {
        println!("{}:", w.name);
        let mut base = None;
        for &n in &threads {
            let (ops, per_thread) = run(&table, &keys, w, n, Duration::from_secs_f64(secs));
            let base = *base.get_or_insert(ops);
            let min = per_thread.iter().min().copied().unwrap_or(0) as f64;
            let max = per_thread.iter().max().copied().unwrap_or(0) as f64;
            println!(
                "  {n:>3} threads: {:>7.2} Mops/s ({:.2}x the first; slowest thread did {:.2}x the fastest's ops)",
                ops / 1e6,
                ops / base,
                min / max.max(1.0)
            );
        }
    }
}

/// Runs `threads` threads for `dur`; returns operations per second (all threads) and each
/// thread's operation count.
fn run(
    table: &Arc<Table>,
    keys: &Arc<Vec<Vec<u8>>>,
    w: &Workload,
    threads: usize,
    dur: Duration,
) -> (f64, Vec<u64>) {
    let stop = Arc::new(AtomicBool::new(false));
    let handles: Vec<_> = (0..threads)
        .map(|i| {
            let (table, keys, stop) = (Arc::clone(table), Arc::clone(keys), Arc::clone(&stop));
            let (writes, hot) = (w.writes_per_1000, w.hot_key);
            thread::spawn(move || {
                let mut rng = 0x9E37_79B9_7F4A_7C15u64.wrapping_mul(i as u64 + 1) | 1;
                let mut done = 0u64;
                let mut sink = 0usize;
                while !stop.load(Ordering::Relaxed) {
                    for _ in 0..256 {
                        rng ^= rng << 13;
                        rng ^= rng >> 7;
                        rng ^= rng << 17;
                        if hot {
                            table.incr(b"hot", 1).unwrap();
                            continue;
                        }
                        let k = &keys[(rng % keys.len() as u64) as usize];
                        if (rng >> 40) % 1000 < writes {
                            table.set(k, b"fedcba9876543210");
                        } else {
                            sink += table.get_with(k, |v| v.len()).unwrap_or(0);
                        }
                    }
                    done += 256;
                }
                std::hint::black_box(sink);
                done
            })
        })
        .collect();
    let start = Instant::now();
    thread::sleep(dur);
    stop.store(true, Ordering::Relaxed);
    let per_thread: Vec<u64> = handles.into_iter().map(|h| h.join().unwrap()).collect();
    let secs = start.elapsed().as_secs_f64();
    (per_thread.iter().sum::<u64>() as f64 / secs, per_thread)
}
