//! Strata and Debian's redis-server 7.0 replicating each other: a redis-server replica of
//! a Strata primary, and a Strata replica of a redis-server primary (both through a full
//! sync in Redis's RDB format, then the command stream), holding the same data after
//! writes of every type; a Strata replica answers ROLE, INFO and a refused write as a
//! redis-server replica does.

mod common;
mod rdb_common;
mod repl_common;

use rdb_common::{assert_same_values, populate};
use redis::Value;
use repl_common::{
    error_text, info, number, redis, replicaof, run, strata, wait_acks, wait_synced, write_mix,
};

#[test]
fn redis_server_replicates_strata() {
    let p = strata(&[]);
    let mut pc = p.client();
    populate(&mut pc, true);
    write_mix(&mut pc, "before", 20);
    let r = redis(&[]);
    let mut rc = r.client();
    replicaof(&mut rc, &p);
    wait_synced(&mut pc, &mut rc);
    assert_same_values(&mut pc, &mut rc, true);
    write_mix(&mut pc, "after", 40);
    assert_eq!(wait_acks(&mut pc, 1, 10_000), 1);
    wait_synced(&mut pc, &mut rc);
    assert_same_values(&mut pc, &mut rc, true);
    // redis-server agrees on where the stream is.
    assert_eq!(
        number(&mut rc, "replication", "master_repl_offset"),
        number(&mut pc, "replication", "master_repl_offset")
    );
    assert_eq!(
        info(&mut rc, "replication")["master_replid"],
        info(&mut pc, "replication")["master_replid"]
    );
}

#[test]
fn strata_replicates_redis_server() {
    let p = redis(&[]);
    let mut pc = p.client();
    populate(&mut pc, true);
    write_mix(&mut pc, "before", 20);
    let r = strata(&[]);
    let mut rc = r.client();
    replicaof(&mut rc, &p);
    wait_synced(&mut pc, &mut rc);
    assert_same_values(&mut pc, &mut rc, true);
    write_mix(&mut pc, "after", 40);
    // redis-server counts Strata's acknowledgements.
    assert_eq!(wait_acks(&mut pc, 1, 10_000), 1);
    wait_synced(&mut pc, &mut rc);
    assert_same_values(&mut pc, &mut rc, true);
    let pi = info(&mut pc, "replication");
    assert_eq!(pi["connected_slaves"], "1");
    assert!(
        pi["slave0"].contains(&format!("port={}", r.port)) && pi["slave0"].contains("state=online"),
        "{}",
        pi["slave0"]
    );
    // Promoted (a live migration's last step), Strata keeps the data and takes writes.
    let _: () = run(&mut rc, &["REPLICAOF", "NO", "ONE"]);
    let v: i64 = run(&mut rc, &["INCR", "after:ctr:2"]);
    let old: i64 = run(&mut pc, &["GET", "after:ctr:2"]);
    assert_eq!(v, old + 1);
}

#[test]
fn strata_replica_answers_as_redis_replica() {
    let p = redis(&[]);
    let mut pc = p.client();
    let _: () = run(&mut pc, &["SET", "k", "v"]);
    let _: String = run(&mut pc, &["FUNCTION", "LOAD", rdb_common::LIBRARY]);
    let (sr, rr) = (strata(&[]), redis(&[]));
    let (mut sc, mut rc) = (sr.client(), rr.client());
    replicaof(&mut sc, &p);
    replicaof(&mut rc, &p);
    wait_synced(&mut pc, &mut sc);
    wait_synced(&mut pc, &mut rc);
    for args in [
        &["SET", "k", "w"][..],
        &["EVAL", "return redis.call('SET','k','v')", "0"],
        &["WAIT", "1", "0"],
        &["FCALL", "seven", "0"],
    ] {
        assert_eq!(
            error_text(&mut sc, args),
            error_text(&mut rc, args),
            "{args:?}"
        );
    }
    // ROLE: the same shape, the same primary, the same offset once both caught up.
    let role = |c: &mut redis::Connection| -> Vec<Value> {
        match run::<Value>(c, &["ROLE"]) {
            Value::Array(items) => items,
            other => panic!("ROLE: {other:?}"),
        }
    };
    let (s, r) = (role(&mut sc), role(&mut rc));
    assert_eq!(s.len(), r.len());
    assert_eq!(s[..4], r[..4]);
    // INFO replication: Strata prints every field redis-server's replica prints.
    let (si, ri) = (info(&mut sc, "replication"), info(&mut rc, "replication"));
    let mut missing: Vec<&String> = ri.keys().filter(|k| !si.contains_key(*k)).collect();
    missing.sort();
    assert!(missing.is_empty(), "INFO replication lacks {missing:?}");
    for f in [
        "role",
        "master_host",
        "master_port",
        "master_link_status",
        "master_replid",
    ] {
        assert_eq!(si[f], ri[f], "{f}");
    }
}
