//! A primary stopped cleanly and restarted on its data directory keeps its replicas: they
//! resume its stream with a partial resync (its former replication ID becomes its
//! secondary one, as Redis does with the ID its RDB holds), whether its data persisted
//! through the journal or only through the shutdown's snapshot (`appendonly no`). The
//! keys whose time passed while it was down are removed at start, counted in INFO's
//! `rdb_last_load_keys_expired`, and their DELs reach the replicas through the resumed
//! stream.

mod common;
mod rdb_common;
mod repl_common;

use common::{active_expire_off, serve_in, temp_dir};
use rdb_common::{assert_same_values, populate};
use repl_common::{field, number, replicaof, run, strata, wait_acks, wait_synced, wait_until};
use std::time::Duration;

/// Keys given a short TTL just before the primary stops, spread over two databases.
const SHORT_LIVED: usize = 40;

fn restart_keeps_replicas(persistence: &[&str]) {
    let dir = temp_dir("primary");
    let port = common::free_port().to_string();
    let mut args = vec![
        "--port",
        &port,
        "--enable-debug-command",
        "yes",
        "--repl-diskless-sync-delay",
        "0",
    ];
    args.extend_from_slice(persistence);
    let mut p = serve_in(&dir, &args);
    let mut pc = p.client();
    populate(&mut pc, true);
    let r = strata(&[]);
    let mut rc = r.client();
    replicaof(&mut rc, &p);
    wait_synced(&mut pc, &mut rc);
    // Expired keys stay on the primary until it stops: its restart finds them.
    active_expire_off(&mut pc);
    for i in 0..SHORT_LIVED {
        let db = (i % 2 * 5).to_string();
        let _: () = run(&mut pc, &["SELECT", &db]);
        let _: () = run(&mut pc, &["SET", &format!("short:{i}"), "v", "PX", "300"]);
    }
    let _: () = run(&mut pc, &["SELECT", "0"]);
    assert_eq!(wait_acks(&mut pc, 1, 10_000), 1);
    // The replica has acknowledged the whole stream, WAIT's GETACK included: the shutdown
    // has no replica to wait for, and sends nothing more.
    wait_until("the replica to acknowledge everything", 10, || {
        let end = number(&mut pc, "replication", "master_repl_offset");
        field(&mut pc, "replication", "slave0").contains(&format!(",offset={end},"))
    });
    let replid = field(&mut pc, "replication", "master_replid");
    let offset = number(&mut pc, "replication", "master_repl_offset");
    drop(pc);
    p.terminate();
    assert!(
        p.wait_exit(Duration::from_secs(20)),
        "primary never stopped; its log:\n{}",
        p.log.lock().unwrap().join("\n")
    );
    drop(p);
    std::thread::sleep(Duration::from_millis(400));

    // Again, on its port and data directory.
    let p = serve_in(&dir, &args);
    let mut pc = p.client();
    let expired = number(&mut pc, "persistence", "rdb_last_load_keys_expired");
    assert_eq!(expired, SHORT_LIVED as i64, "keys found expired at start");
    assert_eq!(field(&mut pc, "replication", "master_replid2"), replid);
    assert_eq!(
        number(&mut pc, "replication", "second_repl_offset"),
        offset + 1
    );
    // The history starts where the former one ended and holds the expired keys' DELs.
    assert_eq!(
        number(&mut pc, "replication", "repl_backlog_first_byte_offset"),
        offset + 1
    );
    let held = number(&mut pc, "replication", "repl_backlog_histlen");
    assert!(held > 0, "the DELs of the expired keys are in the history");
    assert_eq!(
        number(&mut pc, "replication", "master_repl_offset"),
        offset + held
    );
    wait_until("the replica to resume its restarted primary", 30, || {
        number(&mut pc, "stats", "sync_partial_ok") == 1
    });
    wait_synced(&mut pc, &mut rc);
    assert_eq!(number(&mut pc, "stats", "sync_full"), 0);
    // A replica keeps expired keys until its primary's DELs come: they came.
    for db in ["0", "5"] {
        let _: () = run(&mut pc, &["SELECT", db]);
        let _: () = run(&mut rc, &["SELECT", db]);
        let (pn, rn): (i64, i64) = (run(&mut pc, &["DBSIZE"]), run(&mut rc, &["DBSIZE"]));
        assert_eq!(rn, pn, "keys in database {db}");
    }
    let _: () = run(&mut pc, &["SELECT", "0"]);
    let _: () = run(&mut rc, &["SELECT", "0"]);
    assert_same_values(&mut pc, &mut rc, true);
    // CONFIG RESETSTAT clears the sync counters, as Redis's does.
    let _: () = run(&mut pc, &["CONFIG", "RESETSTAT"]);
    assert_eq!(number(&mut pc, "stats", "sync_partial_ok"), 0);
    drop(r);
    drop(p);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn replicas_resume_a_primary_restarted_from_its_journal() {
    restart_keeps_replicas(&["--appendonly", "yes"]);
}

#[test]
fn replicas_resume_a_primary_restarted_from_its_shutdown_snapshot() {
    restart_keeps_replicas(&["--appendonly", "no", "--save", "3600 1"]);
}
