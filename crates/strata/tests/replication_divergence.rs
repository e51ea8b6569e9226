//! A command of the primary's stream that fails on the replica, as Redis 7.0 handles it:
//! logged as `== CRITICAL ==` with the error and the command, counted in INFO
//! `unexpected_error_replies`, and with `propagation-error-behavior panic-on-replicas` a
//! read-only replica stops instead of serving data that diverged. The failing command is
//! sent with DEBUG REPLICATE (the primary never runs it) or comes from a key a writable
//! replica changed on its own.

mod common;
mod repl_common;

use common::logged;
use repl_common::{number, replicaof, run, strata, wait_synced, wait_until};
use std::time::Duration;

/// Waits for `text` in the server's log (read on a thread of its own).
fn logs(p: &common::Proc, text: &str) {
    wait_until(&format!("{text:?} in the log"), 10, || logged(p, text));
}

fn primary() -> common::Proc {
    strata(&["--enable-debug-command", "yes"])
}

#[test]
fn a_failing_command_from_the_primary_is_logged_and_counted() {
    let p = primary();
    let mut pc = p.client();
    let r = strata(&[]);
    let mut rc = r.client();
    replicaof(&mut rc, &p);
    wait_synced(&mut pc, &mut rc);
    let _: () = run(&mut pc, &["DEBUG", "REPLICATE", "fake-command-1"]);
    let _: () = run(&mut pc, &["SET", "foo", "bar"]);
    wait_synced(&mut pc, &mut rc);
    assert_eq!(number(&mut rc, "stats", "unexpected_error_replies"), 1);
    logs(
        &r,
        "== CRITICAL == This replica is sending an error to its master",
    );
    logs(&r, "fake-command-1");
    assert_eq!(run::<String>(&mut rc, &["GET", "foo"]), "bar");

    // A writable replica's own change makes the primary's INCRBY fail there.
    let _: () = run(&mut rc, &["CONFIG", "SET", "replica-read-only", "no"]);
    let _: () = run(&mut rc, &["SET", "n", "foo"]);
    let _: i64 = run(&mut pc, &["INCRBY", "n", "1"]);
    wait_synced(&mut pc, &mut rc);
    assert_eq!(number(&mut rc, "stats", "unexpected_error_replies"), 2);
    logs(&r, "after processing the command 'incrby'");
    assert_eq!(run::<String>(&mut rc, &["GET", "n"]), "foo");
    assert_eq!(number(&mut pc, "stats", "unexpected_error_replies"), 0);
}

#[test]
fn panic_on_replicas_stops_a_read_only_replica() {
    let p = primary();
    let mut pc = p.client();
    let mut r = strata(&["--propagation-error-behavior", "panic-on-replicas"]);
    let mut rc = r.client();
    replicaof(&mut rc, &p);
    wait_synced(&mut pc, &mut rc);
    let _: () = run(&mut pc, &["DEBUG", "REPLICATE", "fake-command-2"]);
    assert!(
        r.wait_exit(Duration::from_secs(10)),
        "the replica served on after the failed command"
    );
    logs(&r, "This replica panicked sending an error to its master");
    wait_until("the primary to see its replica gone", 10, || {
        number(&mut pc, "replication", "connected_slaves") == 0
    });
}
