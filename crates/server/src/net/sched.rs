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
    #[cfg(target_os = "linux")]
    {
        let raw = match policy {
            Policy::Normal => libc::SCHED_OTHER,
            Policy::Batch => libc::SCHED_BATCH,
            Policy::Idle => libc::SCHED_IDLE,
        };
        let param = libc::sched_param { sched_priority: 0 };
        // SAFETY: a plain syscall on this thread (pid 0) with a valid parameter block.
        if unsafe { libc::sched_setscheduler(0, raw, &param) } == 0 {
            return Ok(());
        }
        let err = std::io::Error::last_os_error();
        if policy == Policy::Idle {
            // SAFETY: as above; only this thread's nice value changes.
            unsafe { libc::setpriority(libc::PRIO_PROCESS, libc::gettid() as libc::id_t, 10) };
        }
        Err(err)
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = policy;
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
