//! Hands a CPU to a worker thread that is waiting for one: the SCHED_IDLE snapshot thread
//! does it between chunks, and a worker does it at the end of its turn.
//!
//! **The snapshot thread.**
//! With the snapshot thread running, a CPU whose worker goes to sleep switches to that
//! thread instead of going idle, and only a CPU going idle pulls a waiting thread over at
//! once. A worker woken onto the CPU of a busy client then waited behind it for
//! milliseconds (docs/benchmarks.md, "SET p99 during snapshots: where the workers wait").
//! So between chunks the snapshot thread looks for a worker that is runnable on another
//! CPU and moves it onto its own, where it preempts the snapshot thread at once. (A worker
//! found running there, not waiting, moves too: it leaves its CPU to whatever waited on it.)
//! Measured: SET p99 during snapshots 0.84–2.13x steady (median 1.14x), against 1.46–2.63x
//! without.
//!
//! **A worker at the end of its turn.** Workers run SCHED_BATCH (`sched`): one woken onto
//! the CPU where another is running does not preempt it, and a worker that always has more
//! input never sleeps, so the woken one waited for the scheduler tick (4 ms). So as its turn
//! ends, a worker looks (at most every CHECK_EVERY) for another worker runnable on its own
//! CPU, and yields to it (`end_of_turn`). Measured on 2 cores with redis-benchmark on the
//! same machine: MSET's p99 at -P 1 and SET's at -P 16 roughly halve, throughput does not
//! change, and the server spends 1–11% more CPU per request at -P 1 (docs/benchmarks.md,
//! "Workers yield to a worker waiting on their CPU").

use std::cell::RefCell;
use std::fs::File;
use std::os::unix::fs::FileExt;
use std::time::{Duration, Instant};

/// How often a busy worker looks for another waiting on its CPU: a /proc read per other
/// worker each time, so a few microseconds in every CHECK_EVERY of its running time.
const CHECK_EVERY: Duration = Duration::from_micros(200);

struct Worker {
    tid: libc::pid_t,
    stat: File,
    /// The worker's own CPU mask, put back after the move.
    mask: libc::cpu_set_t,
}

pub struct Stranded {
    workers: Vec<Worker>,
    buf: [u8; 512],
    /// Workers moved over, for the log.
    pub moved: u64,
}

impl Stranded {
    /// Finds this process's worker threads by name. None where /proc is not available.
    pub fn find() -> Option<Stranded> {
        let mut workers = Vec::new();
        for entry in std::fs::read_dir("/proc/self/task").ok()?.flatten() {
            let Some(tid) = entry.file_name().to_str().and_then(|s| s.parse().ok()) else {
                continue;
            };
            let comm = std::fs::read_to_string(entry.path().join("comm")).unwrap_or_default();
            if !comm.starts_with(crate::net::workers::WORKER_THREAD) {
                continue;
            }
            let Ok(stat) = File::open(entry.path().join("stat")) else {
                continue;
            };
            let Some(mask) = affinity(tid) else {
                continue;
            };
            workers.push(Worker { tid, stat, mask });
        }
        (!workers.is_empty()).then_some(Stranded {
            workers,
            buf: [0; 512],
            moved: 0,
        })
    }

    /// Moves every worker that is runnable on another CPU onto this thread's CPU.
    pub fn take_over(&mut self) {
        // SAFETY: a plain call.
        let here = unsafe { libc::sched_getcpu() };
        if here < 0 || here as usize >= libc::CPU_SETSIZE as usize {
            return;
        }
        for i in 0..self.workers.len() {
            let Some((state, cpu)) = self.state(i) else {
                continue;
            };
            let w = &self.workers[i];
            // A worker kept off this CPU by its own mask (`taskset`) stays where it is.
            // SAFETY: `here` is below CPU_SETSIZE (checked above).
            if state != b'R' || cpu == here || !unsafe { libc::CPU_ISSET(here as usize, &w.mask) } {
                continue;
            }
            // A worker that has exited makes this fail.
            if set_affinity(w.tid, &only_cpu(here as usize)) {
                set_affinity(w.tid, &w.mask);
                self.moved += 1;
            }
        }
    }

    /// True when a worker other than `me` is runnable on this thread's CPU: this thread
    /// is the one running there, so that worker is waiting for it.
    fn waiting_here(&mut self, me: libc::pid_t) -> bool {
        // SAFETY: a plain call.
        let here = unsafe { libc::sched_getcpu() };
        (0..self.workers.len()).any(|i| {
            self.workers[i].tid != me && matches!(self.state(i), Some((b'R', cpu)) if cpu == here)
        })
    }

    /// Worker `i`'s scheduling state and the CPU it is on, from /proc/self/task/TID/stat.
    fn state(&mut self, i: usize) -> Option<(u8, i32)> {
        let n = self.workers[i].stat.read_at(&mut self.buf, 0).ok()?;
        let text = &self.buf[..n];
        // The command name may hold anything: fields count from the last ')'.
        let after = text.iter().rposition(|&b| b == b')')? + 2;
        let mut fields = text.get(after..)?.split(|&b| b == b' ');
        let state = *fields.next()?.first()?;
        // `processor` is field 39; the state is field 3.
        let cpu = fields.nth(35)?;
        let cpu = std::str::from_utf8(cpu).ok()?.parse().ok()?;
        Some((state, cpu))
    }
}

/// Called by a worker as its event loop runs out of ready work (`workers`: how many the
/// server runs): at most every CHECK_EVERY, if another worker waits on this CPU, yields it.
pub fn end_of_turn(workers: usize) {
    struct Turns {
        checked: Option<Instant>,
        others: Option<Stranded>,
        found: Option<Instant>,
    }
    thread_local! {
        static TURNS: RefCell<Turns> = const {
            RefCell::new(Turns { checked: None, others: None, found: None })
        };
    }
    /// How often to look for workers until all are found (they start one after another).
    const FIND_EVERY: Duration = Duration::from_millis(100);
    if workers < 2 {
        return;
    }
    TURNS.with_borrow_mut(|t| {
        let now = Instant::now();
        if t.checked
            .is_some_and(|at| now.duration_since(at) < CHECK_EVERY)
        {
            return;
        }
        t.checked = Some(now);
        let incomplete = t.others.as_ref().is_none_or(|s| s.workers.len() < workers);
        if incomplete
            && t.found
                .is_none_or(|at| now.duration_since(at) >= FIND_EVERY)
        {
            t.found = Some(now);
            t.others = Stranded::find();
        }
        // SAFETY: plain calls on this thread.
        if let Some(s) = t.others.as_mut() {
            if s.waiting_here(unsafe { libc::gettid() }) {
                unsafe { libc::sched_yield() };
            }
        }
    });
}

/// The set of `cpu` alone (below CPU_SETSIZE).
fn only_cpu(cpu: usize) -> libc::cpu_set_t {
    let mut set = empty_set();
    // SAFETY: callers pass a CPU below CPU_SETSIZE.
    unsafe { libc::CPU_SET(cpu, &mut set) };
    set
}

fn empty_set() -> libc::cpu_set_t {
    // SAFETY: a zeroed cpu_set_t is a valid empty set.
    unsafe { std::mem::zeroed() }
}

/// Thread `tid`'s CPU mask.
fn affinity(tid: libc::pid_t) -> Option<libc::cpu_set_t> {
    let mut mask = empty_set();
    let size = std::mem::size_of::<libc::cpu_set_t>();
    // SAFETY: valid pointer and size for the mask.
    (unsafe { libc::sched_getaffinity(tid, size, &mut mask) } == 0).then_some(mask)
}

/// Sets thread `tid`'s CPU mask; false if the kernel refused.
fn set_affinity(tid: libc::pid_t, mask: &libc::cpu_set_t) -> bool {
    let size = std::mem::size_of::<libc::cpu_set_t>();
    // SAFETY: valid pointer and size for the mask.
    unsafe { libc::sched_setaffinity(tid, size, mask) == 0 }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::{mpsc, Arc};

    /// A thread named as a worker that spins until told to stop, held to `cpu` if given.
    struct Spinner {
        tid: libc::pid_t,
        stop: Arc<AtomicBool>,
        thread: std::thread::JoinHandle<()>,
    }

    impl Spinner {
        fn start(name: &str, cpu: Option<usize>) -> Spinner {
            let stop = Arc::new(AtomicBool::new(false));
            let (tx, rx) = mpsc::channel();
            let spinning = stop.clone();
            let thread = std::thread::Builder::new()
                .name(format!("{}-{name}", crate::net::workers::WORKER_THREAD))
                .spawn(move || {
                    // SAFETY: a plain call.
                    let tid = unsafe { libc::gettid() };
                    if let Some(cpu) = cpu {
                        set_affinity(tid, &only_cpu(cpu));
                    }
                    tx.send(tid).expect("test thread waits");
                    while !spinning.load(Ordering::Relaxed) {
                        std::hint::spin_loop();
                    }
                })
                .expect("spawn");
            let tid = rx.recv().expect("spinner's tid");
            Spinner { tid, stop, thread }
        }

        fn stop(self) {
            self.stop.store(true, Ordering::Relaxed);
            self.thread.join().expect("spinner");
        }
    }

    /// The workers found, kept to `tids`: other tests run their own at the same time.
    fn ours(tids: &[libc::pid_t]) -> Stranded {
        let mut s = Stranded::find().expect("workers found");
        s.workers.retain(|w| tids.contains(&w.tid));
        assert_eq!(s.workers.len(), tids.len(), "found by their names");
        s
    }

    #[test]
    fn finds_a_runnable_worker_and_leaves_its_mask_as_it_was() {
        let spinner = Spinner::start("t", None);
        let tid = spinner.tid;
        let before = affinity(tid).expect("worker's mask");
        let mut s = ours(&[tid]);
        let (state, cpu) = s.state(0).expect("its stat parses");
        assert_eq!(state, b'R', "a spinning thread is runnable");
        assert!(cpu >= 0);
        for _ in 0..100 {
            s.take_over();
        }
        let after = affinity(tid).expect("worker's mask");
        // SAFETY: both are initialised sets.
        assert!(unsafe { libc::CPU_EQUAL(&before, &after) }, "mask restored");
        spinner.stop();
    }

    /// A worker sees another worker waiting on its CPU (both held to one CPU, the other
    /// spinning), and does not see one that sleeps.
    #[test]
    fn sees_a_worker_waiting_on_its_cpu_and_not_a_sleeping_one() {
        // SAFETY: plain calls on this thread.
        let (me, here) = unsafe { (libc::gettid(), libc::sched_getcpu()) };
        let mine = affinity(me).expect("this thread's mask");
        assert!(
            set_affinity(me, &only_cpu(here as usize)),
            "held to this CPU"
        );

        let spinner = Spinner::start("spins", Some(here as usize));
        let (tx, rx) = mpsc::channel();
        let (wake, sleep) = mpsc::channel::<()>();
        let sleeper = std::thread::Builder::new()
            .name(format!("{}-sleeps", crate::net::workers::WORKER_THREAD))
            .spawn(move || {
                // SAFETY: a plain call.
                tx.send(unsafe { libc::gettid() })
                    .expect("test thread waits");
                sleep.recv().ok()
            })
            .expect("spawn");
        let sleeper_tid = rx.recv().expect("sleeper's tid");
        let seen = ours(&[spinner.tid, sleeper_tid]).waiting_here(me);
        spinner.stop();
        // With the spinner gone, the only other worker sleeps (until it is woken below),
        // once it has gone from sending its tid to waiting on its channel.
        let mut s = ours(&[sleeper_tid]);
        let after = (0..1000).all(|_| {
            let waits = s.waiting_here(me);
            if waits {
                std::thread::sleep(std::time::Duration::from_millis(1));
            }
            waits
        });
        wake.send(()).expect("sleeper wakes");
        sleeper.join().expect("sleeper");
        assert!(set_affinity(me, &mine), "mask restored");
        assert!(seen, "the spinner waits on this CPU");
        assert!(!after, "a sleeping worker is not seen waiting");
    }
}
