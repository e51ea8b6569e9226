//! A background snapshot ends on a machine whose every core other processes keep busy.
//! Its capture runs under SCHED_IDLE, which gets almost no CPU there (a BGSAVE of 10k keys
//! took 33-49 s beside three CPU hogs when the whole snapshot ran on that thread), so
//! writing the file and ending the walk must not wait on it, nor the server's exit. In a file of its own: the
//! hogs would slow every other test of a shared binary.

mod common;

use common::hogs::Hogs;
use common::{info_field, serve_in, temp_dir};
use std::time::{Duration, Instant};

const KEYS: usize = 20_000;

/// Whether a thread of this process may leave SCHED_IDLE once in it, as the server's may
/// when it runs with the same privileges.
fn can_leave_sched_idle() -> bool {
    std::thread::spawn(|| {
        let param = libc::sched_param { sched_priority: 0 };
        // SAFETY: plain syscalls on this new thread (0: the calling one) with a valid
        // parameter block.
        unsafe {
            libc::sched_setscheduler(0, libc::SCHED_IDLE, &param) == 0
                && libc::sched_setscheduler(0, libc::SCHED_OTHER, &param) == 0
        }
    })
    .join()
    .unwrap_or(false)
}

/// Seconds until the running BGSAVE ends (INFO polled every 20 ms), at most `limit`.
fn bgsave_secs(c: &mut redis::Connection, limit: Duration) -> f64 {
    let start = Instant::now();
    while info_field(c, "rdb_bgsave_in_progress") != "0" && start.elapsed() < limit {
        std::thread::sleep(Duration::from_millis(20));
    }
    start.elapsed().as_secs_f64()
}

#[test]
fn background_snapshots_end_while_every_core_is_busy() {
    let dir = temp_dir("starved");
    // `save` rules on: a SIGTERM then writes a last snapshot.
    let mut p = serve_in(&dir, &["--save", "3600 1"]);
    let mut c = p.client();
    let mut pipe = redis::pipe();
    for i in 0..KEYS {
        pipe.cmd("SET").arg(format!("k{i}")).arg(i).ignore();
    }
    pipe.query::<()>(&mut c).unwrap();
    let hogs = Hogs::start();
    for round in 0..3 {
        let r: String = redis::cmd("BGSAVE").query(&mut c).unwrap();
        assert_eq!(r, "Background saving started", "round {round}");
        let secs = bgsave_secs(&mut c, Duration::from_secs(30));
        assert!(secs < 15.0, "round {round}: BGSAVE took {secs:.1} s");
        assert_eq!(info_field(&mut c, "rdb_last_bgsave_status"), "ok");
    }
    // A SIGTERM while a snapshot runs: the server waits for it, saves, and exits. A process
    // ends only once each of its threads has run, and a walker thread starved in SCHED_IDLE
    // may wait minutes for that: the server takes it out of SCHED_IDLE where it may
    // (CAP_SYS_NICE). Without that privilege the hogs stop first.
    let privileged = can_leave_sched_idle();
    let hogs = if privileged {
        Some(hogs)
    } else {
        drop(hogs);
        None
    };
    let _: String = redis::cmd("BGSAVE").query(&mut c).unwrap();
    p.terminate();
    let stopped = Instant::now();
    let exited = p.wait_exit(Duration::from_secs(30));
    drop(hogs);
    assert!(
        exited && stopped.elapsed() < Duration::from_secs(15),
        "SIGTERM during a snapshot (may leave SCHED_IDLE: {privileged}): exited {exited} after {:.1} s",
        stopped.elapsed().as_secs_f64()
    );
    drop(p);
    let p = serve_in(&dir, &[]);
    let mut c = p.client();
    let n: usize = redis::cmd("DBSIZE").query(&mut c).unwrap();
    assert_eq!(n, KEYS);
    let v: String = redis::cmd("GET").arg("k12345").query(&mut c).unwrap();
    assert_eq!(v, "12345");
    drop(p);
    let _ = std::fs::remove_dir_all(&dir);
}
