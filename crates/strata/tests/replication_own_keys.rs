//! A writable replica's own keys expire there, as Redis's do: a key its own client gave a
//! TTL (directly or inside MULTI) is removed once due (INFO `slave_expires_tracked_keys`
//! counts them meanwhile), while a key its primary sent with a TTL stays until the
//! primary's DEL (it only reads as missing).

mod common;
mod repl_common;

use repl_common::{number, replicaof, run, strata, wait_synced, wait_until};

#[test]
fn a_writable_replicas_own_keys_expire_there_and_the_primarys_wait_for_its_del() {
    let p = strata(&["--enable-debug-command", "yes"]);
    let mut pc = p.client();
    let r = strata(&["--replica-read-only", "no"]);
    let mut rc = r.client();
    replicaof(&mut rc, &p);
    // The primary's keys do not expire by themselves while its active expiry is off.
    let _: () = run(&mut pc, &["DEBUG", "SET-ACTIVE-EXPIRE", "0"]);
    let _: () = run(&mut pc, &["SET", "from-primary", "1", "PX", "200"]);
    wait_synced(&mut pc, &mut rc);

    let _: () = run(&mut rc, &["SET", "own", "1", "PX", "200"]);
    let _: () = run(&mut rc, &["SET", "own-in-multi", "1"]);
    let _: () = redis::pipe()
        .atomic()
        .cmd("PEXPIRE")
        .arg("own-in-multi")
        .arg(200)
        .query(&mut rc)
        .expect("MULTI");
    let _: () = run(&mut rc, &["SET", "own-without-ttl", "1"]);
    assert_eq!(number(&mut rc, "stats", "slave_expires_tracked_keys"), 2);
    assert_eq!(run::<i64>(&mut rc, &["DBSIZE"]), 4);

    wait_until("the replica's own keys to expire", 10, || {
        run::<i64>(&mut rc, &["DBSIZE"]) == 2
    });
    assert_eq!(number(&mut rc, "stats", "slave_expires_tracked_keys"), 0);
    // What stays: the key without a TTL, and the primary's, which reads as missing.
    assert_eq!(run::<i64>(&mut rc, &["EXISTS", "own-without-ttl"]), 1);
    assert_eq!(run::<i64>(&mut rc, &["EXISTS", "from-primary"]), 0);

    // The primary's DEL removes its key.
    let _: () = run(&mut pc, &["DEBUG", "SET-ACTIVE-EXPIRE", "1"]);
    wait_until("the primary's DEL to reach the replica", 10, || {
        run::<i64>(&mut rc, &["DBSIZE"]) == 1
    });
}
