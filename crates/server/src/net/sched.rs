//! Linux scheduling policies for the server's own threads.
//!
//! Worker threads default to SCHED_BATCH: a worker woken by a request does not preempt the
//! thread already running on that core; it waits for that thread to block or finish its
//! slice. When the workers alone can fill every core (the default: one per core), the
//! second worker to wake on a core otherwise preempts the first, or a client on the same
//! machine, at nearly every request. Measured on 2 cores with redis-benchmark -P 1, 50
//! clients (docs/benchmarks.md, "Worker scheduling"): EVALSHA 73–87k req/s under
//! SCHED_OTHER, 99–117k under SCHED_BATCH. `worker-sched normal` restores SCHED_OTHER.
//!
//! The background snapshot thread runs under SCHED_IDLE (snapshot.rs says why).

/// The policies Strata sets.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Policy {
    Normal,
    Batch,
    Idle,
}

/// Sets the calling thread's policy. Where SCHED_IDLE is refused the thread is niced
/// instead; any other failure leaves the thread as it was and is reported.
pub fn set_current(policy: Policy) -> Result<(), std::io::Error> {
    let r = set(0, policy);
    #[cfg(target_os = "linux")]
    if r.is_err() && policy == Policy::Idle {
        // SAFETY: a plain syscall; only this thread's nice value changes.
        unsafe { libc::setpriority(libc::PRIO_PROCESS, libc::gettid() as libc::id_t, 10) };
    }
    r
}

/// The calling thread's id, for [`set_thread`] (0 where there is none).
pub fn current_tid() -> i32 {
    #[cfg(target_os = "linux")]
    {
        // SAFETY: gettid has no arguments and cannot fail.
        unsafe { libc::gettid() }
    }
    #[cfg(not(target_os = "linux"))]
    {
        0
    }
}

/// Sets the policy of thread `tid` of this process. Taking a thread out of SCHED_IDLE
/// needs CAP_SYS_NICE (or an RLIMIT_NICE that allows it): refused otherwise.
pub fn set_thread(tid: i32, policy: Policy) -> Result<(), std::io::Error> {
    if tid == 0 {
        return Ok(());
    }
    set(tid, policy)
}

fn set(tid: i32, policy: Policy) -> Result<(), std::io::Error> {
    #[cfg(target_os = "linux")]
    {
        let raw = match policy {
            Policy::Normal => libc::SCHED_OTHER,
            Policy::Batch => libc::SCHED_BATCH,
            Policy::Idle => libc::SCHED_IDLE,
        };
        let param = libc::sched_param { sched_priority: 0 };
        // SAFETY: a plain syscall on a thread of this process (0: the calling one) with a
        // valid parameter block.
        if unsafe { libc::sched_setscheduler(tid, raw, &param) } == 0 {
            return Ok(());
        }
        Err(std::io::Error::last_os_error())
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = (tid, policy);
        Ok(())
    }
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::*;

    /// The calling thread's policy, as the kernel reports it.
    fn current() -> Option<Policy> {
        // SAFETY: a plain syscall on this thread.
        match unsafe { libc::sched_getscheduler(0) } {
            libc::SCHED_OTHER => Some(Policy::Normal),
            libc::SCHED_BATCH => Some(Policy::Batch),
            libc::SCHED_IDLE => Some(Policy::Idle),
            _ => None,
        }
    }

    /// Another thread's policy is set by its id (to SCHED_BATCH, which needs no privilege).
    #[test]
    fn a_thread_sets_another_by_its_id() {
        let (tx, rx) = std::sync::mpsc::channel();
        let (done_tx, done_rx) = std::sync::mpsc::channel::<()>();
        let other = std::thread::spawn(move || {
            set_current(Policy::Normal).expect("SCHED_OTHER");
            tx.send(current_tid()).expect("send tid");
            done_rx.recv().ok();
        });
        let tid = rx.recv().expect("tid");
        assert_ne!(tid, 0);
        set_thread(tid, Policy::Batch).expect("SCHED_BATCH for another thread");
        // SAFETY: a plain syscall on a live thread of this process.
        assert_eq!(unsafe { libc::sched_getscheduler(tid) }, libc::SCHED_BATCH);
        done_tx.send(()).ok();
        other.join().expect("other thread");
    }

    #[test]
    fn a_thread_takes_each_policy_and_reports_it() {
        std::thread::spawn(|| {
            for p in [Policy::Batch, Policy::Normal, Policy::Idle] {
                set_current(p).expect("unprivileged threads may take these policies");
                assert_eq!(current(), Some(p));
            }
        })
        .join()
        .expect("policy thread");
    }
}
