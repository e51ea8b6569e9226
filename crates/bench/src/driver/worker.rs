//! One client thread's event loop: its connections on one epoll instance, each keeping up
//! to `--pipeline` operations in flight (closed loop) or sending on its schedule (open
//! loop), replies matched to their operations and timed into the thread's histograms.

use super::{OpStats, Session};
use crate::hist::Hist;
use crate::reply::{self, Value};
use mio::net::TcpStream;
use mio::unix::SourceFd;
use mio::{Events, Interest, Poll, Token};
use std::collections::VecDeque;
use std::io::{ErrorKind, Read, Write};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Shared between a worker and the progress printer.
pub(super) struct Live {
    pub(super) completed: AtomicU64,
    pub(super) interval: Mutex<Hist>,
}

pub(super) struct Slot {
    pub(super) op: usize,
    pub(super) start: Instant,
    pub(super) waiting: u32,
    pub(super) failed: Option<String>,
    pub(super) measured: bool,
}

pub(super) struct Conn {
    pub(super) stream: TcpStream,
    pub(super) session: Box<dyn Session>,
    pub(super) out: Vec<u8>,
    pub(super) out_pos: usize,
    pub(super) inbuf: Vec<u8>,
    pub(super) in_start: usize,
    pub(super) in_end: usize,
    /// The slot of each request awaiting its reply, in send order.
    pub(super) fifo: VecDeque<u16>,
    pub(super) slots: Vec<Slot>,
    pub(super) free: Vec<u16>,
    pub(super) exhausted: bool,
    pub(super) dead: bool,
    pub(super) next_send: Instant,
    pub(super) interval: Duration,
}

/// Operations budget shared by all connections; claimed a few at a time to keep the
/// atomic off the per-request path.
pub(super) struct Budget {
    pub(super) left: Option<AtomicU64>,
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

pub(super) struct Worker {
    pub(super) conns: Vec<Conn>,
    pub(super) stats: Vec<OpStats>,
    pub(super) interval: Hist,
    pub(super) live: Arc<Live>,
    pub(super) budget: Arc<Budget>,
    pub(super) allowance: u64,
    pub(super) pipeline: usize,
    pub(super) measure_start: Instant,
    pub(super) deadline: Option<Instant>,
    pub(super) open_loop: bool,
    pub(super) completed: u64,
    pub(super) conn_errors: Vec<String>,
    pub(super) last_done: Instant,
    /// Connections whose replies were read in this loop iteration, to refill once every
    /// ready connection has been read (see [`Worker::run`]).
    pub(super) refill: Vec<usize>,
}

const FLUSH_EVERY: Duration = Duration::from_millis(100);
const TIMER: Token = Token(usize::MAX);

impl Worker {
    pub(super) fn run(&mut self, stop: &AtomicBool) -> Result<(), String> {
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
