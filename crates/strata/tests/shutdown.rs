//! Shutting down a primary whose replica lags, as Redis 7.0 does: SHUTDOWN and SIGTERM wait
//! (writes held, INFO `shutdown_in_milliseconds`) until the replica has acknowledged the
//! whole stream, or `shutdown-timeout` passes (the lagging replica logged), or SHUTDOWN
//! ABORT cancels the wait (every waiting SHUTDOWN gets Redis's error, writes go on);
//! `shutdown-on-sigterm now` skips the wait. The replica is stopped for real (SIGSTOP) so
//! it cannot acknowledge, and the argument rules are compared with redis-server's.

mod common;
mod repl_common;

use common::{logged, read_text, send_only, Proc, RespConn};
use repl_common::{error_text, field, number, replicaof, run, strata, wait_synced, wait_until};
use std::time::Duration;

/// Waits for `text` in the server's log: a reply may arrive before the thread that reads
/// the log has read the line written just before it.
fn wait_logged(p: &Proc, text: &str) {
    wait_until(&format!("the log line {text:?}"), 5, || logged(p, text));
}

fn signal(p: &Proc, sig: libc::c_int) {
    // SAFETY: kill(2) on the pid of a child the test spawned and has not reaped.
    let r = unsafe { libc::kill(p.pid() as libc::pid_t, sig) };
    assert_eq!(r, 0, "signal {sig}: {}", std::io::Error::last_os_error());
}

/// A primary with `extra` options and a Strata replica in sync with it, holding k = 1.
fn primary_and_replica(extra: &[&str]) -> (Proc, redis::Connection, Proc, redis::Connection) {
    let p = strata(extra);
    let mut pc = p.client();
    let r = strata(&[]);
    let mut rc = r.client();
    replicaof(&mut rc, &p);
    let _: () = run(&mut pc, &["SET", "k", "1"]);
    wait_synced(&mut pc, &mut rc);
    (p, pc, r, rc)
}

fn waiting_ms(c: &mut redis::Connection) -> Option<i64> {
    let text: String = run(c, &["INFO", "server"]);
    text.lines()
        .find_map(|l| l.strip_prefix("shutdown_in_milliseconds:"))
        .and_then(|v| v.trim().parse().ok())
}

/// Waits for the primary to announce its wait for replicas.
fn until_waiting(pc: &mut redis::Connection) -> i64 {
    let mut left = None;
    wait_until("the shutdown to wait for the replica", 10, || {
        left = waiting_ms(pc);
        left.is_some()
    });
    left.unwrap_or_default()
}

/// A write sent now gets no reply within `ms` (held by the shutdown).
fn held_write(p: &Proc, ms: u64) -> RespConn {
    let mut c = send_only(p, &["SET", "during", "shutdown"]);
    c.stream()
        .set_read_timeout(Some(Duration::from_millis(ms)))
        .expect("timeout");
    assert!(c.read().is_err(), "a write was served while shutting down");
    c.stream()
        .set_read_timeout(Some(Duration::from_secs(10)))
        .expect("timeout");
    c
}

/// Writes 1 KiB values until the stream a stopped replica has not read passes 2 MiB in
/// the primary's memory (the kernel's socket buffers take the first of it), then checks
/// INFO memory splits it as Redis does.
fn fill_the_replicas_buffer(pc: &mut redis::Connection) {
    let value = "v".repeat(1024);
    let mut written = 0usize;
    while number(pc, "memory", "mem_total_replication_buffers") <= 2 << 20 {
        assert!(
            written < 256 << 20,
            "the replica's unread stream never grew"
        );
        let mut pipe = redis::pipe();
        for i in 0..1024 {
            pipe.cmd("SET")
                .arg(format!("fill:{written}:{i}"))
                .arg(&value)
                .ignore();
        }
        let _: () = pipe.query(pc).expect("fill");
        written += 1 << 20;
    }
    let total = number(pc, "memory", "mem_total_replication_buffers");
    let backlog = number(pc, "memory", "mem_replication_backlog");
    assert_eq!(backlog, 1 << 20, "repl-backlog-size");
    assert_eq!(number(pc, "memory", "mem_clients_slaves"), total - backlog);
}

fn shutdown_waits_for_the_replica(by_signal: bool) {
    let (mut p, mut pc, r, mut rc) =
        primary_and_replica(&["--shutdown-timeout", "300", "--repl-backlog-size", "1mb"]);
    // The replica's connection is not a client (INFO's count, as Redis's).
    assert_eq!(number(&mut pc, "clients", "connected_clients"), 1);
    signal(&r, libc::SIGSTOP);
    fill_the_replicas_buffer(&mut pc);
    let _: i64 = run(&mut pc, &["INCR", "k"]);
    let _caller = match by_signal {
        true => {
            p.terminate();
            None
        }
        false => Some(send_only(&p, &["SHUTDOWN"])),
    };
    let left = until_waiting(&mut pc);
    assert!(left > 290_000 && left <= 300_000, "{left} ms left");
    // Reads are served, writes wait.
    assert_eq!(run::<String>(&mut pc, &["GET", "k"]), "2");
    let _held = held_write(&p, 300);
    assert!(
        !p.wait_exit(Duration::from_millis(200)),
        "exited while waiting"
    );
    signal(&r, libc::SIGCONT);
    assert!(
        p.wait_exit(Duration::from_secs(20)),
        "the primary never exited"
    );
    assert_eq!(run::<String>(&mut rc, &["GET", "k"]), "2");
    assert!(logged(
        &p,
        "1 of 1 replicas are in sync when shutting down."
    ));
    assert!(!logged(&p, "Lagging replica"));
}

#[test]
fn shutdown_waits_for_a_stopped_replica() {
    shutdown_waits_for_the_replica(false);
}

#[test]
fn sigterm_waits_for_a_stopped_replica() {
    shutdown_waits_for_the_replica(true);
}

#[test]
fn the_wait_ends_at_shutdown_timeout_and_logs_the_lagging_replica() {
    let (mut p, mut pc, r, mut rc) = primary_and_replica(&["--shutdown-timeout", "1"]);
    signal(&r, libc::SIGSTOP);
    let _: i64 = run(&mut pc, &["INCR", "k"]);
    p.terminate();
    until_waiting(&mut pc);
    assert!(
        p.wait_exit(Duration::from_secs(10)),
        "the primary never exited"
    );
    wait_logged(&p, "Lagging replica 127.0.0.1:");
    assert!(logged(
        &p,
        "0 of 1 replicas are in sync when shutting down."
    ));
    signal(&r, libc::SIGCONT);
    // The replica lives on, with what it received.
    let _: String = run(&mut rc, &["PING"]);
}

#[test]
fn shutdown_abort_cancels_the_wait_and_every_shutdown_gets_an_error() {
    let (mut p, mut pc, r, _rc) = primary_and_replica(&["--shutdown-timeout", "300"]);
    signal(&r, libc::SIGSTOP);
    let _: i64 = run(&mut pc, &["INCR", "k"]);
    let mut first = send_only(&p, &["SHUTDOWN"]);
    until_waiting(&mut pc);
    let mut second = send_only(&p, &["SHUTDOWN", "SAVE"]);
    let mut held = held_write(&p, 200);
    wait_until("both SHUTDOWNs and the write to be held", 10, || {
        number(&mut pc, "clients", "blocked_clients") == 3
    });
    let _: () = run(&mut pc, &["SHUTDOWN", "ABORT"]);
    let failed = "-ERR Errors trying to SHUTDOWN. Check logs.\\r\\n";
    assert_eq!(read_text(&mut first), failed);
    assert_eq!(read_text(&mut second), failed);
    // The held write goes on, and the server serves as before.
    assert_eq!(read_text(&mut held), "+OK\\r\\n");
    assert_eq!(waiting_ms(&mut pc), None);
    assert_eq!(run::<i64>(&mut pc, &["INCR", "k"]), 3);
    assert_eq!(
        error_text(&mut pc, &["SHUTDOWN", "ABORT"]),
        "ERR No shutdown in progress."
    );
    wait_logged(&p, "Shutdown manually aborted.");
    signal(&r, libc::SIGCONT);
    assert!(
        !p.wait_exit(Duration::from_millis(300)),
        "the server exited"
    );
    // A later SIGTERM starts a new shutdown, which now finds the replica in sync.
    p.terminate();
    assert!(p.wait_exit(Duration::from_secs(20)));
}

#[test]
fn a_journal_switched_on_and_not_yet_written_refuses_a_shutdown_without_force() {
    let mut p = common::strata(&["--appendonly", "no", "--save", ""]);
    let mut c = p.client();
    for i in 0..20 {
        let _: () = run(&mut c, &["SET", &format!("k{i}"), "v"]);
    }
    // The snapshot that starts the journal takes 20 x 0.5 s.
    let _: () = run(&mut c, &["CONFIG", "SET", "rdb-key-save-delay", "500000"]);
    let _: () = run(&mut c, &["CONFIG", "SET", "appendonly", "yes"]);
    wait_until("the journal's first rewrite to start", 10, || {
        field(&mut c, "persistence", "aof_rewrite_in_progress") == "1"
    });
    assert_eq!(
        error_text(&mut c, &["SHUTDOWN"]),
        "ERR Errors trying to SHUTDOWN. Check logs."
    );
    wait_logged(&p, "Writing initial AOF, can't exit.");
    assert_eq!(run::<String>(&mut c, &["GET", "k3"]), "v");
    let _ = redis::cmd("SHUTDOWN")
        .arg("NOSAVE")
        .arg("FORCE")
        .query::<()>(&mut c);
    assert!(p.wait_exit(Duration::from_secs(10)), "FORCE did not exit");
    wait_logged(&p, "Writing initial AOF. Exit anyway.");
}

#[test]
fn shutdown_on_sigterm_now_does_not_wait() {
    let (mut p, mut pc, r, _rc) =
        primary_and_replica(&["--shutdown-timeout", "300", "--shutdown-on-sigterm", "now"]);
    assert_eq!(field(&mut pc, "server", "tcp_port"), p.port.to_string());
    signal(&r, libc::SIGSTOP);
    let _: i64 = run(&mut pc, &["INCR", "k"]);
    p.terminate();
    assert!(
        p.wait_exit(Duration::from_secs(10)),
        "the primary waited for its replica"
    );
    assert!(!logged(&p, "Waiting for replicas"));
    assert!(logged(
        &p,
        "0 of 1 replicas are in sync when shutting down."
    ));
    signal(&r, libc::SIGCONT);
}

/// The replies redis-server and Strata give to SHUTDOWN's argument mistakes and to the
/// forms that do not shut down, over a raw connection.
#[test]
fn argument_rules_as_redis() {
    let ours = common::strata(&[]);
    let theirs = common::redis(&[]);
    let cases: &[&[&str]] = &[
        &["SHUTDOWN", "ABORT"],
        &["SHUTDOWN", "ABORT", "NOW"],
        &["SHUTDOWN", "SAVE", "NOSAVE"],
        &["SHUTDOWN", "LATER"],
    ];
    let replies = |p: &Proc| {
        let mut c = RespConn::new(p);
        let mut out = Vec::new();
        for case in cases {
            out.push(common::call_text(&mut c, case));
        }
        out.push(common::call_text(&mut c, &["MULTI"]));
        out.push(common::call_text(&mut c, &["SHUTDOWN"]));
        out.push(common::call_text(&mut c, &["EXEC"]));
        out.push(common::call_text(&mut c, &["PING"]));
        out
    };
    assert_eq!(replies(&ours), replies(&theirs));
}
