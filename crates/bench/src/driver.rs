//! The measured run: `--threads` client threads, each one event loop (mio/epoll) over its
//! share of the `--clients` connections, each connection keeping up to `--pipeline`
//! operations in flight. Workloads plug in as a [`Session`] per connection; an operation
//! may take several round trips (YCSB's scan, read-modify-write).
//!
//! Closed loop (default): a connection starts an operation as soon as one finishes.
//! Open loop (`--rate`): each connection starts operations on a fixed schedule and an
//! operation's latency runs from its *intended* start, so a stall that delays later sends
//! shows in their latency instead of being hidden (coordinated omission).

use crate::hist::Hist;
use crate::reply::Value;
use mio::net::TcpStream;
use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{mpsc, Arc, Mutex};
use std::time::{Duration, Instant};

mod worker;

use worker::{Budget, Conn, Live, Slot, Worker};

/// An operation just started by a session.
pub struct Started {
    /// Index into the phase's op names.
    pub op: usize,
    /// Requests appended for it.
    pub requests: u32,
}

/// A workload's per-connection logic.
pub trait Session: Send {
    /// Starts an operation in `slot` (0..pipeline), appending its first request(s) to
    /// `out`. `None`: this connection has no more work (e.g. its `seq:` range is done).
    fn begin(&mut self, slot: usize, out: &mut Vec<u8>) -> Option<Started>;
    /// A non-error reply to a request of the operation in `slot`: `Ok(n)` with `n` more
    /// requests appended to `out` for it, or `Err` when the reply is wrong (`--verify`).
    fn reply(&mut self, slot: usize, v: &Value, out: &mut Vec<u8>) -> Result<u32, String>;
    /// The operation in `slot` finished, successfully or not.
    fn done(&mut self, _slot: usize, _ok: bool) {}
}

/// What to run: sessions (one per client) and when to stop.
pub struct Phase {
    pub name: String,
    pub ops: Vec<String>,
    /// Total operations (shared by all clients); `None`: until sessions end or `duration`.
    pub requests: Option<u64>,
    pub sessions: Vec<Box<dyn Session>>,
    /// Whether --duration and --warmup apply (not to a load phase, which must complete).
    pub timed: bool,
}

#[derive(Clone, Debug)]
pub struct Settings {
    pub threads: usize,
    pub pipeline: usize,
    pub duration: Option<Duration>,
    pub warmup: Duration,
    pub rate: Option<f64>,
    pub progress: Option<Duration>,
    pub password: Option<String>,
    /// Commands each connection sends once before the phase (`--init`).
    pub init: Vec<Vec<String>>,
}

/// One operation's figures from a phase.
#[derive(Clone, Debug, Default)]
pub struct OpStats {
    pub name: String,
    /// Completed operations, failed ones included.
    pub count: u64,
    pub errors: u64,
    /// Latencies of the successful operations.
    pub hist: Hist,
    /// A few error messages, to show what went wrong.
    pub samples: Vec<String>,
}

impl OpStats {
    fn merge(&mut self, o: &OpStats) {
        self.count += o.count;
        self.errors += o.errors;
        self.hist.add(&o.hist);
        for s in &o.samples {
            if self.samples.len() < 5 && !self.samples.contains(s) {
                self.samples.push(s.clone());
            }
        }
    }
}

#[derive(Clone, Debug, Default)]
pub struct PhaseResult {
    pub name: String,
    pub elapsed: Duration,
    pub ops: Vec<OpStats>,
    /// Connection-level failures (closed, protocol error), each ending a connection.
    pub conn_errors: Vec<String>,
    /// Client CPU time (user + system) over the phase, for "is the client the bottleneck".
    pub client_cpu: Duration,
    /// The server's CPU seconds over the phase, when it reports them (`INFO cpu`) and no
    /// warm-up ran (its operations are not counted).
    pub server_cpu_s: Option<f64>,
}

impl PhaseResult {
    pub fn errors(&self) -> u64 {
        self.ops.iter().map(|o| o.errors).sum::<u64>() + self.conn_errors.len() as u64
    }
}

pub fn client_cpu() -> Duration {
    // utime + stime of this process from /proc/self/stat (fields 14 and 15, in ticks).
    let Ok(stat) = std::fs::read_to_string("/proc/self/stat") else {
        return Duration::ZERO;
    };
    let Some(rest) = stat.rsplit(')').next() else {
        return Duration::ZERO;
    };
    let f: Vec<&str> = rest.split_whitespace().collect();
    let ticks: u64 = [11, 12]
        .iter()
        .filter_map(|&i| f.get(i).and_then(|v| v.parse::<u64>().ok()))
        .sum();
    Duration::from_millis(ticks * 10)
}

/// Opens the connections and runs the phase to its end. `Err` when a connection cannot be
/// opened (nothing is measured then).
pub fn run(addr: &str, phase: Phase, s: &Settings, quiet: bool) -> Result<PhaseResult, String> {
    let nclients = phase.sessions.len();
    let threads = s.threads.clamp(1, nclients.max(1));
    let pipeline = s.pipeline.clamp(1, u16::MAX as usize);
    let mut streams = Vec::with_capacity(nclients);
    for _ in 0..nclients {
        let mut c = crate::conn::Client::connect(addr, s.password.as_deref())?;
        // Fail early and clearly if the server rejects commands (e.g. NOAUTH).
        if let crate::conn::Owned::Error(e) = c.call(&["PING"])? {
            return Err(format!("{addr}: PING: {e}"));
        }
        for cmd in s.init.iter().filter(|c| !c.is_empty()) {
            c.ok(cmd)?;
        }
        streams.push(c.into_stream()?);
    }
    let budget = Arc::new(Budget {
        left: phase.requests.map(AtomicU64::new),
    });
    let start = Instant::now();
    let measure_start = if phase.timed { start + s.warmup } else { start };
    let deadline = s
        .duration
        .filter(|_| phase.timed)
        .map(|d| measure_start + d);
    let open_loop = s.rate.is_some();
    let per_conn_interval = s
        .rate
        .map(|r| Duration::from_secs_f64(nclients as f64 / r.max(1e-9)))
        .unwrap_or_default();

    // Clients spread over threads round-robin, as the connections are numbered.
    let mut per_thread: Vec<Vec<Conn>> = (0..threads).map(|_| Vec::new()).collect();
    for (i, (session, stream)) in phase.sessions.into_iter().zip(streams).enumerate() {
        // Stagger the open-loop schedules so connections do not send in lockstep.
        let offset = per_conn_interval.mul_f64(i as f64 / nclients as f64);
        per_thread[i % threads].push(Conn {
            stream,
            session,
            out: Vec::with_capacity(64 * 1024),
            out_pos: 0,
            inbuf: vec![0; 64 * 1024],
            in_start: 0,
            in_end: 0,
            fifo: VecDeque::with_capacity(pipeline * 2),
            slots: (0..pipeline)
                .map(|_| Slot {
                    op: 0,
                    start,
                    waiting: 0,
                    failed: None,
                    measured: false,
                })
                .collect(),
            free: (0..pipeline as u16).rev().collect(),
            exhausted: false,
            dead: false,
            next_send: start + offset,
            interval: per_conn_interval,
        });
    }

    let lives: Vec<Arc<Live>> = (0..threads)
        .map(|_| {
            Arc::new(Live {
                completed: AtomicU64::new(0),
                interval: Mutex::new(Hist::new()),
            })
        })
        .collect();
    let total = phase.requests;
    let cpu0 = client_cpu();
    let (tx, rx) = mpsc::channel::<()>();
    let stop = Arc::new(AtomicBool::new(false));
    let results = std::thread::scope(|scope| {
        let mut handles = Vec::new();
        for (conns, live) in per_thread.into_iter().zip(&lives) {
            let tx = tx.clone();
            let mut w = Worker {
                conns,
                stats: phase
                    .ops
                    .iter()
                    .map(|n| OpStats {
                        name: n.clone(),
                        ..Default::default()
                    })
                    .collect(),
                interval: Hist::new(),
                live: live.clone(),
                budget: budget.clone(),
                allowance: 0,
                pipeline,
                measure_start,
                deadline,
                open_loop,
                completed: 0,
                conn_errors: Vec::new(),
                last_done: measure_start,
                refill: Vec::new(),
            };
            let stop = stop.clone();
            handles.push(scope.spawn(move || {
                let r = w.run(&stop);
                let _ = tx.send(());
                r.map(|_| w)
            }));
        }
        drop(tx);
        // A phase that --duration does not bound shows no time-based progress bar.
        let shown = Settings {
            duration: s.duration.filter(|_| phase.timed),
            ..s.clone()
        };
        progress_loop(
            &phase.name,
            &rx,
            &lives,
            &shown,
            total,
            measure_start,
            quiet,
            threads,
        );
        handles
            .into_iter()
            .map(|h| h.join().map_err(|_| "client thread panicked".to_string()))
            .collect::<Vec<_>>()
    });
    let client_cpu = client_cpu().saturating_sub(cpu0);

    let mut ops: Vec<OpStats> = phase
        .ops
        .iter()
        .map(|n| OpStats {
            name: n.clone(),
            ..Default::default()
        })
        .collect();
    let mut conn_errors = Vec::new();
    let mut last = measure_start;
    for r in results {
        let w = r??;
        for (o, st) in ops.iter_mut().zip(&w.stats) {
            o.merge(st);
        }
        conn_errors.extend(w.conn_errors);
        last = last.max(w.last_done);
    }
    Ok(PhaseResult {
        name: phase.name,
        elapsed: last.saturating_duration_since(measure_start),
        ops,
        conn_errors,
        client_cpu,
        server_cpu_s: None,
    })
}

#[allow(clippy::too_many_arguments)]
fn progress_loop(
    name: &str,
    rx: &mpsc::Receiver<()>,
    lives: &[Arc<Live>],
    s: &Settings,
    total: Option<u64>,
    measure_start: Instant,
    quiet: bool,
    threads: usize,
) {
    let every = s.progress.filter(|_| !quiet);
    let mut finished = 0;
    let mut last_count = 0u64;
    let mut last_t = measure_start;
    let mut next = measure_start + every.unwrap_or(Duration::from_secs(3600));
    let mut interval = Hist::new();
    while finished < threads {
        let wait = next.saturating_duration_since(Instant::now());
        match rx.recv_timeout(wait) {
            Ok(()) => {
                finished += 1;
                continue;
            }
            Err(mpsc::RecvTimeoutError::Disconnected) => break,
            Err(mpsc::RecvTimeoutError::Timeout) => {}
        }
        let Some(every) = every else {
            next += Duration::from_secs(3600);
            continue;
        };
        let now = Instant::now();
        next += every;
        if now < measure_start {
            continue;
        }
        interval.reset();
        let mut count = 0;
        for l in lives {
            count += l.completed.load(Ordering::Relaxed);
            if let Ok(mut h) = l.interval.lock() {
                interval.add(&h);
                h.reset();
            }
        }
        let secs = now.duration_since(last_t).as_secs_f64().max(1e-9);
        let rate = (count - last_count) as f64 / secs;
        let bar = match (total, s.duration) {
            (Some(t), _) if t > 0 => bar(count as f64 / t as f64),
            (_, Some(d)) => bar(now.duration_since(measure_start).as_secs_f64() / d.as_secs_f64()),
            _ => String::new(),
        };
        eprintln!(
            "[{:>7.1}s] {name}: {count} ops, {rate:.0} ops/s, interval p99 {} ms {bar}",
            now.duration_since(measure_start).as_secs_f64(),
            crate::hist::ms(interval.quantile(0.99) as f64),
        );
        last_count = count;
        last_t = now;
    }
}

fn bar(f: f64) -> String {
    let f = f.clamp(0.0, 1.0);
    let n = (f * 30.0).round() as usize;
    format!(
        "[{}{}] {:>3.0}%",
        "#".repeat(n),
        ".".repeat(30 - n),
        f * 100.0
    )
}

impl crate::conn::Client {
    /// The connection as a non-blocking mio stream for the event loop.
    pub fn into_stream(self) -> Result<TcpStream, String> {
        let s = self.take_stream();
        s.set_nonblocking(true)
            .map_err(|e| format!("set non-blocking: {e}"))?;
        Ok(TcpStream::from_std(s))
    }
}
