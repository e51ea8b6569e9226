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
use crate::reply::{self, Value};
use mio::net::TcpStream;
use mio::unix::SourceFd;
use mio::{Events, Interest, Poll, Token};
use std::collections::VecDeque;
use std::io::{ErrorKind, Read, Write};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{mpsc, Arc, Mutex};
use std::time::{Duration, Instant};

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
}

impl PhaseResult {
    pub fn errors(&self) -> u64 {
        self.ops.iter().map(|o| o.errors).sum::<u64>() + self.conn_errors.len() as u64
    }
}

/// Shared between a worker and the progress printer.
struct Live {
    completed: AtomicU64,
    interval: Mutex<Hist>,
}

struct Slot {
    op: usize,
    start: Instant,
    waiting: u32,
    failed: Option<String>,
    measured: bool,
}

struct Conn {
    stream: TcpStream,
    session: Box<dyn Session>,
    out: Vec<u8>,
    out_pos: usize,
    inbuf: Vec<u8>,
    in_start: usize,
    in_end: usize,
    /// The slot of each request awaiting its reply, in send order.
    fifo: VecDeque<u16>,
    slots: Vec<Slot>,
    free: Vec<u16>,
    exhausted: bool,
    dead: bool,
    next_send: Instant,
    interval: Duration,
}

/// Operations budget shared by all connections; claimed a few at a time to keep the
/// atomic off the per-request path.
struct Budget {
    left: Option<AtomicU64>,
}

impl Budget {
    fn claim(&self, want: u64) -> u64 {
        let Some(left) = &self.left else {
            return want;
        };
        let mut cur = left.load(Ordering::Relaxed);
        loop {
            let take = cur.min(want);
            if take == 0 {
                return 0;
            }
            match left.compare_exchange_weak(cur, cur - take, Ordering::Relaxed, Ordering::Relaxed)
            {
                Ok(_) => return take,
                Err(now) => cur = now,
            }
        }
    }

    fn give_back(&self, n: u64) {
        if let (Some(left), true) = (&self.left, n > 0) {
            left.fetch_add(n, Ordering::Relaxed);
        }
    }
}

struct Worker {
    conns: Vec<Conn>,
    stats: Vec<OpStats>,
    interval: Hist,
    live: Arc<Live>,
    budget: Arc<Budget>,
    allowance: u64,
    pipeline: usize,
    measure_start: Instant,
    deadline: Option<Instant>,
    open_loop: bool,
    completed: u64,
    conn_errors: Vec<String>,
    last_done: Instant,
    /// Connections whose replies were read in this loop iteration, to refill once every
    /// ready connection has been read (see [`Worker::run`]).
    refill: Vec<usize>,
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

const FLUSH_EVERY: Duration = Duration::from_millis(100);
const TIMER: Token = Token(usize::MAX);

impl Worker {
    fn run(&mut self, stop: &AtomicBool) -> Result<(), String> {
        let mut poll = Poll::new().map_err(|e| format!("epoll: {e}"))?;
        for (i, c) in self.conns.iter_mut().enumerate() {
            poll.registry()
                .register(
                    &mut c.stream,
                    Token(i),
                    Interest::READABLE | Interest::WRITABLE,
                )
                .map_err(|e| format!("epoll register: {e}"))?;
        }
        let timer = if self.open_loop {
            let t = crate::timer::Timer::new().map_err(|e| format!("timerfd: {e}"))?;
            poll.registry()
                .register(&mut SourceFd(&t.raw()), TIMER, Interest::READABLE)
                .map_err(|e| format!("epoll register: {e}"))?;
            Some(t)
        } else {
            None
        };
        let mut events = Events::with_capacity(1024);
        let mut next_flush = Instant::now() + FLUSH_EVERY;
        let mut now = Instant::now();
        for i in 0..self.conns.len() {
            self.fill(i, now);
        }
        loop {
            if self
                .conns
                .iter()
                .all(|c| c.dead || (c.exhausted && c.fifo.is_empty()))
            {
                break;
            }
            if stop.load(Ordering::Relaxed) {
                break;
            }
            let mut timeout = self.timeout(now);
            if let Some(t) = &timer {
                // The timerfd wakes the loop for the next scheduled send, to the microsecond.
                if !timeout.is_zero() && timeout < FLUSH_EVERY {
                    t.arm(timeout).map_err(|e| format!("timerfd: {e}"))?;
                    timeout = FLUSH_EVERY;
                }
            }
            if let Err(e) = poll.poll(&mut events, Some(timeout)) {
                if e.kind() != ErrorKind::Interrupted {
                    return Err(format!("epoll wait: {e}"));
                }
            }
            // Two passes over the ready connections, as redis-benchmark's ae loop does: first
            // read every reply that is in (each connection's clock stops before its read),
            // then write the next requests (each clock starts just before its write).
            // Writing each connection's next request right after reading its reply would
            // put those writes inside the latency of every connection read after it in
            // the same pass: a client-side delay that is not the server's.
            let mut idle = true;
            for ev in events.iter() {
                if ev.token() == TIMER {
                    if let Some(t) = &timer {
                        t.clear();
                    }
                    continue;
                }
                idle = false;
                let i = ev.token().0;
                if ev.is_readable() || ev.is_read_closed() || ev.is_error() {
                    self.read(i);
                }
                if ev.is_writable() {
                    self.flush(i);
                }
            }
            let refill = std::mem::take(&mut self.refill);
            for &i in &refill {
                self.fill(i, Instant::now());
            }
            self.refill = refill;
            self.refill.clear();
            now = Instant::now();
            // Open-loop schedules, and deadlines of connections that had nothing to read.
            // (Closed loop refills the connections it read from, above.)
            if self.open_loop || idle {
                for i in 0..self.conns.len() {
                    self.fill(i, now);
                }
            }
            if now >= next_flush {
                self.flush_live();
                next_flush = now + FLUSH_EVERY;
            }
        }
        self.flush_live();
        self.budget.give_back(self.allowance);
        self.allowance = 0;
        Ok(())
    }

    fn timeout(&self, now: Instant) -> Duration {
        let mut t = FLUSH_EVERY;
        if let Some(d) = self.deadline {
            t = t.min(d.saturating_duration_since(now));
        }
        if self.open_loop {
            for c in &self.conns {
                if !c.exhausted && !c.dead && !c.free.is_empty() {
                    t = t.min(c.next_send.saturating_duration_since(now));
                }
            }
        }
        t
    }

    fn flush_live(&mut self) {
        if let Ok(mut h) = self.live.interval.lock() {
            h.add(&self.interval);
        }
        self.interval.reset();
        self.live.completed.store(self.completed, Ordering::Relaxed);
    }

    /// Starts as many operations on connection `i` as its pipeline, budget, deadline and
    /// (open loop) schedule allow, then writes them.
    fn fill(&mut self, i: usize, now: Instant) {
        let measuring = now >= self.measure_start;
        if let Some(d) = self.deadline {
            if now >= d {
                self.conns[i].exhausted = true;
            }
        }
        let c = &mut self.conns[i];
        if c.dead || c.exhausted {
            return;
        }
        // Closed loop sends a whole pipeline and waits for all of it, as redis-benchmark's
        // -P does: refilling each freed slot at once would turn one write of P requests
        // into many small ones, costing both sides syscalls and skewing the comparison.
        if !self.open_loop && c.free.len() < c.slots.len() {
            self.flush(i);
            return;
        }
        let mut started = false;
        while let Some(&slot) = c.free.last() {
            // Closed loop: the start is set again after encoding, just before the write.
            let start = if self.open_loop {
                if c.next_send > now {
                    break;
                }
                c.next_send
            } else {
                now
            };
            let measured = start >= self.measure_start && measuring;
            if measured {
                if self.allowance == 0 {
                    self.allowance = self.budget.claim(self.pipeline as u64);
                    if self.allowance == 0 {
                        c.exhausted = true;
                        break;
                    }
                }
                self.allowance -= 1;
            }
            let Some(st) = c.session.begin(slot as usize, &mut c.out) else {
                if measured {
                    self.allowance += 1;
                }
                c.exhausted = true;
                break;
            };
            c.free.pop();
            let s = &mut c.slots[slot as usize];
            s.op = st.op;
            s.start = start;
            s.waiting = st.requests;
            s.failed = None;
            s.measured = measured;
            for _ in 0..st.requests {
                c.fifo.push_back(slot);
            }
            if self.open_loop {
                c.next_send += c.interval;
            }
            started = true;
        }
        if started && !self.open_loop {
            // Closed loop starts a batch only when every slot is free, so the slots in
            // use are exactly this batch: its clock starts now, the write follows at once
            // (redis-benchmark sets `c->start` in writeHandler, before its write).
            let t = Instant::now();
            for s in c.slots.iter_mut().filter(|s| s.waiting > 0) {
                s.start = t;
            }
        }
        self.flush(i);
    }

    fn flush(&mut self, i: usize) {
        let c = &mut self.conns[i];
        while c.out_pos < c.out.len() {
            match c.stream.write(&c.out[c.out_pos..]) {
                Ok(0) => {
                    self.kill(i, "connection closed while writing".into());
                    return;
                }
                Ok(n) => c.out_pos += n,
                Err(e) if e.kind() == ErrorKind::WouldBlock => return,
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(e) => {
                    self.kill(i, format!("write: {e}"));
                    return;
                }
            }
        }
        c.out.clear();
        c.out_pos = 0;
    }

    fn read(&mut self, i: usize) {
        loop {
            let c = &mut self.conns[i];
            if c.dead {
                return;
            }
            if c.in_end == c.inbuf.len() {
                if c.in_start > 0 {
                    c.inbuf.copy_within(c.in_start..c.in_end, 0);
                    c.in_end -= c.in_start;
                    c.in_start = 0;
                } else {
                    // A reply larger than the buffer: grow it.
                    let n = c.inbuf.len() * 2;
                    c.inbuf.resize(n, 0);
                }
            }
            let room = c.inbuf.len() - c.in_end;
            let end = c.in_end;
            // The replies in this read were in by now: the clock stops before the read, as
            // redis-benchmark's readHandler stops it before redisBufferRead (so neither
            // the read nor parsing is counted). One clock read per read call.
            let now = Instant::now();
            match c.stream.read(&mut c.inbuf[end..]) {
                Ok(0) => {
                    self.kill(i, "connection closed by the server".into());
                    return;
                }
                Ok(n) => {
                    c.in_end += n;
                    if let Err(e) = self.process(i, now) {
                        self.kill(i, e);
                        return;
                    }
                    // Edge-triggered: a read that did not fill the room drained the socket
                    // (later data raises a new event); a full one may have left more.
                    if n < room {
                        break;
                    }
                }
                Err(e) if e.kind() == ErrorKind::WouldBlock => break,
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(e) => {
                    self.kill(i, format!("read: {e}"));
                    return;
                }
            }
        }
        // New operations for the slots that just freed: written once every ready
        // connection has been read.
        self.refill.push(i);
    }

    /// Handles every complete reply in connection `i`'s buffer.
    fn process(&mut self, i: usize, now: Instant) -> Result<(), String> {
        let c = &mut self.conns[i];
        loop {
            let (v, used) = match reply::parse(&c.inbuf[c.in_start..c.in_end]) {
                Ok(Some(x)) => x,
                Ok(None) => break,
                Err(e) => return Err(e.to_string()),
            };
            let Some(slot) = c.fifo.pop_front() else {
                return Err(format!("reply with no request outstanding: {}", v.show()));
            };
            let s = &mut c.slots[slot as usize];
            s.waiting -= 1;
            if s.failed.is_none() {
                let r = if let Value::Error(e) = &v {
                    Err(String::from_utf8_lossy(e).into_owned())
                } else {
                    c.session.reply(slot as usize, &v, &mut c.out)
                };
                match r {
                    Ok(more) => {
                        for _ in 0..more {
                            c.fifo.push_back(slot);
                        }
                        s.waiting += more;
                    }
                    Err(e) => s.failed = Some(e),
                }
            }
            c.in_start += used;
            if s.waiting == 0 {
                let ok = s.failed.is_none();
                c.session.done(slot as usize, ok);
                if s.measured {
                    let st = &mut self.stats[s.op];
                    st.count += 1;
                    self.completed += 1;
                    if let Some(e) = s.failed.take() {
                        st.errors += 1;
                        if st.samples.len() < 5 && !st.samples.contains(&e) {
                            st.samples.push(e);
                        }
                    } else {
                        let us = now.saturating_duration_since(s.start).as_micros() as u64;
                        st.hist.record(us);
                        self.interval.record(us);
                    }
                    self.last_done = now;
                }
                c.free.push(slot);
            }
        }
        if c.in_start == c.in_end {
            c.in_start = 0;
            c.in_end = 0;
        }
        Ok(())
    }

    /// Ends connection `i`: its operations in flight count as errors.
    fn kill(&mut self, i: usize, why: String) {
        let c = &mut self.conns[i];
        if c.dead {
            return;
        }
        c.dead = true;
        let mut seen = vec![false; c.slots.len()];
        for &slot in &c.fifo {
            let s = &c.slots[slot as usize];
            if !seen[slot as usize] && s.measured {
                seen[slot as usize] = true;
                let st = &mut self.stats[s.op];
                st.count += 1;
                st.errors += 1;
                self.completed += 1;
            }
        }
        c.fifo.clear();
        self.conn_errors.push(why);
    }
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
