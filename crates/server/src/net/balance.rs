//! Which worker a connection runs on. At low load every plain connection runs on the first
//! worker, as Redis runs every client on its one thread: commands sent at about the same
//! time on different connections then run in the order they arrived (a blocking pop sent
//! before a push on another connection is served by it, as Redis's tests expect). Under
//! load the connections spread over the workers.
//!
//! Each worker measures, over windows of `WINDOW`, its busy share (the time its event loop
//! did not sleep) and how many connections ran a batch, and publishes both when a window
//! ends. A worker whose turns ran one batch each (one client at a time, which no other
//! worker could take a part of) never counts as heavy, however busy.
//!
//! A new connection goes to the first worker (`Dealer`), unless that one is heavy beside
//! one `GAP` lighter, or has taken `BURST` new connections in this window. At the end of a
//! batch a connection may be told to move (`after_batch`): off a heavy worker to the one
//! with the fewest active connections, if no busier (half the difference at a time), or
//! back to the first worker, a few at a time, once both are under `PACK` together; only
//! when two windows in a row say so, and not in the window after a move. A connection
//! whose batches keep to one shard is left to the hot-shard rule (`conn.rs`, `Streak`).
//! Under `worker-placement round-robin` nothing is measured (`start_worker` is not called,
//! so every hook below finds no window).

use crate::tick::Tick;
use std::cell::RefCell;
use std::sync::atomic::{AtomicU32, Ordering::Relaxed};

/// The measuring window, in nanoseconds: a connection moves at most every other window.
const WINDOW: u64 = 5_000_000;
/// Busy shares, in thousandths: heavy from `HEAVY` (when connections queue, see above).
const HEAVY: u32 = 500;
const GAP: u32 = 300;
/// Both the worker and the first under this together: the worker's connections go back.
const PACK: u32 = 300;
/// New connections a light worker takes in one window before the next takes them: a
/// burst (a pool or a benchmark opening its connections) spreads at once, where the
/// connections of a test opening a few clients one after the other stay together.
const BURST: u32 = 16;
/// Connections that go back to the first worker per window: a few, as the plan may be
/// followed by a window that brings a burst of new ones.
const PACK_MOVES: u32 = 2;

/// One worker's figures of its last window, for the others (its own cache line: written
/// once a window, read by the accept threads and by the other workers' windows).
#[derive(Default)]
#[repr(align(64))]
struct Load {
    busy: AtomicU32,
    active: AtomicU32,
}

/// Every worker's published load.
pub struct Balance {
    loads: Box<[Load]>,
    /// `worker-placement balanced`; else connections are dealt in turn and never moved.
    pub on: bool,
}

impl Balance {
    pub fn new(workers: usize, on: bool) -> Balance {
        Balance {
            loads: (0..workers.max(1)).map(|_| Load::default()).collect(),
            on,
        }
    }

    fn busy(&self, w: usize) -> u32 {
        self.loads[w].busy.load(Relaxed)
    }

    fn active(&self, w: usize) -> u32 {
        self.loads[w].active.load(Relaxed)
    }

    /// The worker for a new connection, given how many each took in this window
    /// (`dealt`): the first that has not taken `BURST` and is not heavy beside a worker
    /// `GAP` lighter, else the one that took the fewest (then the least busy). A test
    /// that opens clients one after another right after a busy moment still gets them
    /// on one worker, unless that worker was heavy and another was idle.
    fn pick(&self, dealt: &[u32]) -> usize {
        let n = self.loads.len();
        let least = (0..n).map(|w| self.busy(w)).min().unwrap_or(0);
        (0..n)
            .find(|&w| {
                let busy = self.busy(w);
                dealt[w] < BURST && (busy < HEAVY || busy < least + GAP)
            })
            .or_else(|| (0..n).min_by_key(|&w| (dealt[w], self.busy(w))))
            .unwrap_or(0)
    }

    /// Where `me`'s connections should go in its next window, and how many of them, from
    /// its figures of the window that ended: half the difference in active connections to
    /// the worker with the fewest, or back to the first.
    fn plan(&self, me: usize, busy: u32, active: u32) -> (usize, u32) {
        // Toward as many active connections on each worker as on the others (what dealing
        // in turn gives a uniform load), from a heavy one to one no busier.
        if busy >= HEAVY && active >= 2 {
            let fewer = (0..self.loads.len())
                .filter(|&w| w != me)
                .filter(|&w| self.busy(w) <= busy && self.active(w) + 1 < active)
                .min_by_key(|&w| (self.active(w), self.busy(w)));
            if let Some(to) = fewer {
                return (to, (active - self.active(to)) / 2);
            }
        }
        if me != 0 && busy + self.busy(0) < PACK {
            return (0, PACK_MOVES);
        }
        (me, 0)
    }
}

/// Deals the new connections of one accept thread (`pick`).
pub struct Dealer {
    start: u64,
    dealt: Vec<u32>,
    /// The next worker in turn (round-robin).
    next: usize,
}

impl Dealer {
    pub fn new(balance: &Balance) -> Dealer {
        Dealer {
            start: Tick::now().nanos(),
            dealt: vec![0; balance.loads.len()],
            next: 0,
        }
    }

    /// The worker for a new connection (`round_robin`: the next in turn).
    pub fn deal(&mut self, balance: &Balance, round_robin: bool) -> usize {
        if round_robin || !balance.on {
            let w = self.next % self.dealt.len();
            self.next = w + 1;
            return w;
        }
        let now = Tick::now().nanos();
        if now.saturating_sub(self.start) >= WINDOW {
            self.start = now;
            self.dealt.fill(0);
        }
        let w = balance.pick(&self.dealt);
        self.dealt[w] += 1;
        w
    }
}

/// A worker's window as it runs (thread-local: only its worker reads and writes it).
struct Window {
    me: usize,
    /// Nanoseconds (`Tick`) when the window began.
    start: u64,
    /// When the event loop last woke, or 0 while it sleeps.
    running_since: u64,
    /// Busy nanoseconds of this window before `running_since`.
    busy: u64,
    active: u32,
    /// Stamps connections as active in this window (the worker's number in the high
    /// half, so a connection that came from another worker is counted here too).
    id: u64,
    /// Where connections move in this window, and how many more may; how many did.
    to: usize,
    moves: u32,
    left: u32,
    /// Where the last window's figures said connections should go.
    wanted: Option<usize>,
    /// Batches run in this window, turns of the event loop that ran any, and batches
    /// run in the turn under way.
    batches: u32,
    turns: u32,
    in_turn: u32,
    /// Commands in this window's batches.
    commands: u32,
}

thread_local! {
    static WINDOW_NOW: RefCell<Option<Window>> = const { RefCell::new(None) };
}

/// Starts the measuring on worker thread `me`.
pub fn start_worker(me: usize) {
    let now = Tick::now().nanos();
    WINDOW_NOW.replace(Some(Window {
        me,
        start: now,
        running_since: now,
        busy: 0,
        active: 0,
        id: (me as u64) << 32 | 1,
        to: me,
        moves: 0,
        left: 0,
        wanted: None,
        batches: 0,
        turns: 0,
        in_turn: 0,
        commands: 0,
    }));
}

/// Runs `f` on this thread's window, if it is a worker's (none of the callers nest).
fn with_window<R>(f: impl FnOnce(&mut Window) -> R) -> Option<R> {
    WINDOW_NOW.with_borrow_mut(|w| w.as_mut().map(f))
}

/// The event loop woke.
pub fn unparked() {
    with_window(|w| w.running_since = Tick::now().nanos());
}

/// The event loop is about to sleep.
pub fn parked(balance: &Balance) {
    with_window(|w| {
        let now = Tick::now().nanos();
        if w.running_since != 0 {
            w.busy += now.saturating_sub(w.running_since.max(w.start));
            w.running_since = 0;
        }
        if w.in_turn > 0 {
            w.turns += 1;
            w.in_turn = 0;
        }
        roll(balance, w, now);
    });
}

/// The worker's periodic tick: a worker that sleeps for long still ends its windows.
pub fn tick(balance: &Balance) {
    with_window(|w| roll(balance, w, Tick::now().nanos()));
}

/// Ends the window if it is over: publishes its figures and plans the next.
fn roll(balance: &Balance, w: &mut Window, now: u64) {
    let len = now.saturating_sub(w.start);
    if len < WINDOW {
        return;
    }
    let running = match w.running_since {
        0 => 0,
        since => now.saturating_sub(since.max(w.start)),
    };
    let mut busy = (((w.busy + running) * 1000) / len).min(1000) as u32;
    // One client at a time, sending a command and waiting for its reply (turns of the
    // event loop that ran one batch each, of a command or two), is a load no other worker
    // can take a part of: it never counts as heavy. Connections that queue behind each
    // other (more batches a turn) or pipeline (long batches) do.
    let turns = w.turns + u32::from(w.in_turn > 0);
    if w.batches * 2 < turns * 3 && w.commands < w.batches * 4 {
        busy = busy.min(HEAVY - 1);
    }
    w.batches = 0;
    w.turns = 0;
    w.commands = 0;
    // Those that moved away during the window are not here any more.
    let active = w.active.saturating_sub(w.left);
    let load = &balance.loads[w.me];
    load.busy.store(busy, Relaxed);
    load.active.store(active, Relaxed);
    // A plan is followed when the window before gave the same and moved nobody (whose
    // figures then counted connections in their old place): a window's figures move
    // with the noise of the machine, and every move is a request that waits for its
    // new worker to take the connection.
    let (to, moves) = balance.plan(w.me, busy, active);
    let wanted = (moves > 0).then_some(to);
    let go = wanted.is_some() && wanted == w.wanted && w.left == 0;
    (w.to, w.moves) = if go { (to, moves) } else { (w.me, 0) };
    w.wanted = wanted;
    w.left = 0;
    w.start = now;
    if w.running_since != 0 {
        w.running_since = now;
    }
    w.busy = 0;
    w.active = 0;
    w.id = (w.me as u64) << 32 | (w.id as u32).wrapping_add(1).max(1) as u64;
}

/// A connection's batch, as `after_batch` counts it.
pub struct Batch {
    /// A clock reading from the batch.
    pub now: Tick,
    pub commands: u32,
    /// Whether the connection could move now.
    pub can_move: bool,
}

/// After a connection's batch (`stamp` is the connection's own, 0 at first): counts it and
/// its connection as active and says where the connection should run next, if not here.
pub fn after_batch(balance: &Balance, stamp: &mut u64, batch: Batch) -> Option<usize> {
    if !balance.on {
        return None;
    }
    let Batch {
        now,
        commands,
        can_move,
    } = batch;
    with_window(|w| {
        roll(balance, w, now.nanos());
        if *stamp != w.id {
            *stamp = w.id;
            w.active += 1;
        }
        w.batches += 1;
        w.in_turn += 1;
        w.commands = w.commands.saturating_add(commands);
        if w.moves == 0 || w.to == w.me || !can_move {
            return None;
        }
        w.moves -= 1;
        w.left += 1;
        Some(w.to)
    })
    .flatten()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A batch of one command, now.
    fn one(can_move: bool) -> Batch {
        Batch {
            now: Tick::now(),
            commands: 1,
            can_move,
        }
    }

    fn set(b: &Balance, w: usize, busy: u32, active: u32) {
        b.loads[w].busy.store(busy, Relaxed);
        b.loads[w].active.store(active, Relaxed);
    }

    #[test]
    fn new_connections_go_to_the_first_worker_unless_it_is_heavy_beside_a_light_one() {
        let b = Balance::new(3, true);
        assert_eq!(b.pick(&[0, 0, 0]), 0);
        set(&b, 0, HEAVY - 50, 10);
        assert_eq!(b.pick(&[0, 0, 0]), 0, "not heavy");
        set(&b, 0, 900, 10);
        set(&b, 1, 750, 10);
        set(&b, 2, 700, 10);
        assert_eq!(b.pick(&[0, 0, 0]), 0, "all heavy alike");
        set(&b, 1, 100, 0);
        set(&b, 2, 50, 0);
        assert_eq!(
            b.pick(&[0, 0, 0]),
            1,
            "the first that may, not the lightest"
        );
        assert_eq!(b.pick(&[0, BURST, 0]), 2);
        assert_eq!(
            b.pick(&[BURST, BURST, BURST]),
            2,
            "the least busy of those that took the fewest"
        );
    }

    /// A burst of new connections is shared out as it comes; a few stay together.
    #[test]
    fn a_burst_of_connections_spreads_and_a_few_stay_on_the_first_worker() {
        let b = Balance::new(2, true);
        let mut d = Dealer::new(&b);
        let first: Vec<usize> = (0..BURST).map(|_| d.deal(&b, false)).collect();
        assert!(first.iter().all(|&w| w == 0), "{first:?}");
        let mut n = [BURST as usize, 0];
        for _ in 0..(50 - BURST) {
            n[d.deal(&b, false)] += 1;
        }
        assert_eq!(n, [25, 25]);
        // A new window: the first worker again.
        std::thread::sleep(std::time::Duration::from_nanos(WINDOW));
        assert_eq!(d.deal(&b, false), 0);
        // In turn, whatever the loads.
        let dealt: Vec<usize> = (0..4).map(|_| d.deal(&b, true)).collect();
        assert_eq!(dealt, [0, 1, 0, 1]);
        let off = Balance::new(2, false);
        let mut d = Dealer::new(&off);
        let dealt: Vec<usize> = (0..4).map(|_| d.deal(&off, false)).collect();
        assert_eq!(dealt, [0, 1, 0, 1]);
    }

    #[test]
    fn a_heavy_worker_sends_half_the_difference_to_the_one_with_the_fewest() {
        let b = Balance::new(3, true);
        set(&b, 1, 100, 4);
        set(&b, 2, 300, 2);
        assert_eq!(b.plan(0, 950, 20), (2, 9));
        set(&b, 2, 940, 2);
        assert_eq!(b.plan(0, 950, 20), (2, 9), "busy too, but no busier");
        // Not heavy, alone, or nobody no busier with fewer connections.
        assert_eq!(b.plan(0, HEAVY - 50, 20), (0, 0));
        assert_eq!(b.plan(0, 950, 1), (0, 0));
        set(&b, 1, 960, 4);
        set(&b, 2, 970, 2);
        assert_eq!(b.plan(0, 950, 20), (0, 0));
        set(&b, 2, 100, 19);
        assert_eq!(b.plan(0, 950, 20), (0, 0));
    }

    #[test]
    fn connections_go_back_to_the_first_worker_when_both_are_light() {
        let b = Balance::new(2, true);
        set(&b, 0, 100, 3);
        assert_eq!(b.plan(1, 150, 3), (0, PACK_MOVES));
        set(&b, 0, 200, 3);
        assert_eq!(b.plan(1, 150, 3), (1, 0));
        assert_eq!(b.plan(0, 10, 3), (0, 0), "the first worker stays");
    }

    /// Measured on a thread as its worker would: a window that ran throughout publishes a
    /// full share and its active connections once each, one that slept a low share; a
    /// move needs two windows in a row that want it.
    #[test]
    fn windows_measure_the_busy_share_and_the_active_connections() {
        let b = Balance::new(2, true);
        let window = || std::thread::sleep(std::time::Duration::from_nanos(WINDOW * 2));
        // The first worker busy with many connections: nothing to move to it.
        set(&b, 0, 900, 30);
        start_worker(1);
        let (mut s1, mut s2, mut s3) = (0, 0, 0);
        assert_eq!(after_batch(&b, &mut s1, one(true)), None);
        after_batch(&b, &mut s1, one(true));
        after_batch(&b, &mut s2, one(true));
        window();
        after_batch(&b, &mut s1, one(true));
        assert_eq!(b.active(1), 2);
        assert!(b.busy(1) > 900, "busy {}", b.busy(1));
        parked(&b);
        window();
        unparked();
        tick(&b);
        assert!(b.busy(1) < 100, "busy {}", b.busy(1));
        assert_eq!(b.active(1), 1);
        // The first worker light too: after one more window saying so, this worker's
        // connections go back to it.
        set(&b, 0, 50, 1);
        parked(&b);
        window();
        unparked();
        tick(&b);
        assert_eq!(after_batch(&b, &mut s3, one(true)), None, "one window");
        parked(&b);
        window();
        unparked();
        tick(&b);
        assert_eq!(after_batch(&b, &mut s3, one(false)), None, "cannot move");
        assert_eq!(after_batch(&b, &mut s3, one(true)), Some(0));
    }

    /// Turns that each ran one short batch never make a worker heavy, however busy; turns
    /// that ran two, or one long batch (a pipeline), do.
    #[test]
    fn one_connection_at_a_time_never_counts_as_heavy() {
        let b = Balance::new(2, true);
        start_worker(1);
        let (mut s1, mut s2) = (0, 0);
        let mut turns = |per_turn: usize, commands: u32| {
            let until = std::time::Instant::now() + std::time::Duration::from_nanos(WINDOW * 3);
            while std::time::Instant::now() < until {
                unparked();
                let spin = std::time::Instant::now();
                while spin.elapsed() < std::time::Duration::from_micros(200) {}
                let batch = || Batch {
                    commands,
                    ..one(true)
                };
                after_batch(&b, &mut s1, batch());
                if per_turn == 2 {
                    after_batch(&b, &mut s2, batch());
                }
                parked(&b);
            }
        };
        turns(1, 1);
        assert_eq!(b.busy(1), HEAVY - 1);
        turns(2, 1);
        assert!(b.busy(1) > 900, "busy {}", b.busy(1));
        turns(1, 1);
        assert_eq!(b.busy(1), HEAVY - 1);
        turns(1, 16);
        assert!(b.busy(1) > 900, "busy {}", b.busy(1));
    }
}
