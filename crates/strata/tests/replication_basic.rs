//! A Strata replica of a Strata primary: REPLICAOF, the full sync (an RDB of every type,
//! several databases, expiries, function libraries), the command stream after it, INFO
//! replication and ROLE on both sides, a read-only replica's refusal, WAIT's count and
//! promotion with REPLICAOF NO ONE.

mod common;
mod rdb_common;
mod repl_common;

use rdb_common::{assert_same_values, populate};
use redis::Value;
use repl_common::{
    error_text, field, info, number, replicaof, run, strata, wait_acks, wait_synced, write_mix,
};
use std::time::{Duration, Instant};

#[test]
fn full_sync_then_stream() {
    let p = strata(&[]);
    let mut pc = p.client();
    let keys = populate(&mut pc, true);
    write_mix(&mut pc, "before", 20);
    let r = strata(&[]);
    let mut rc = r.client();
    let _: () = run(&mut rc, &["SET", "only-on-replica", "1"]);
    replicaof(&mut rc, &p);
    wait_synced(&mut pc, &mut rc);
    // The full sync replaced the replica's data with the primary's.
    let synced = assert_same_values(&mut pc, &mut rc, true).len();
    assert!(
        synced >= keys,
        "{synced} keys after the sync, {keys} populated"
    );
    let gone: i64 = run(&mut rc, &["EXISTS", "only-on-replica"]);
    assert_eq!(gone, 0);
    assert_eq!(number(&mut pc, "stats", "sync_full"), 1);

    // Writes after the sync arrive through the stream.
    write_mix(&mut pc, "after", 40);
    assert_eq!(wait_acks(&mut pc, 1, 10_000), 1);
    wait_synced(&mut pc, &mut rc);
    assert_same_values(&mut pc, &mut rc, true);
    let ctr: i64 = run(&mut rc, &["GET", "after:ctr:3"]);
    let expected: i64 = (0..40).filter(|i| i % 7 == 3).sum();
    assert_eq!(ctr, expected);
}

#[test]
fn info_role_and_read_only() {
    let p = strata(&[]);
    let r = strata(&[]);
    let (mut pc, mut rc) = (p.client(), r.client());
    // Before REPLICAOF both are primaries.
    assert_eq!(field(&mut rc, "replication", "role"), "master");
    assert_eq!(field(&mut pc, "replication", "connected_slaves"), "0");
    replicaof(&mut rc, &p);
    wait_synced(&mut pc, &mut rc);
    write_mix(&mut pc, "w", 5);
    assert_eq!(wait_acks(&mut pc, 1, 10_000), 1);
    wait_synced(&mut pc, &mut rc);

    // The replica acknowledges what it applied every second: its ACK reaches the
    // primary's offset.
    repl_common::wait_until("the replica's ACK of the whole stream", 10, || {
        let pi = info(&mut pc, "replication");
        pi["slave0"].contains(&format!("offset={},", pi["master_repl_offset"]))
    });
    let pi = info(&mut pc, "replication");
    let ri = info(&mut rc, "replication");
    assert_eq!(pi["role"], "master");
    assert_eq!(pi["connected_slaves"], "1");
    let slave0 = &pi["slave0"];
    assert!(
        slave0.contains(&format!("port={}", r.port)) && slave0.contains("state=online"),
        "slave0:{slave0}"
    );
    let offset: i64 = pi["master_repl_offset"].parse().unwrap();
    assert!(offset > 0, "master_repl_offset {offset}");
    assert!(
        slave0.contains(&format!("offset={offset}")),
        "slave0:{slave0}"
    );
    assert_eq!(ri["role"], "slave");
    assert_eq!(ri["master_host"], "127.0.0.1");
    assert_eq!(ri["master_port"], p.port.to_string());
    assert_eq!(ri["master_link_status"], "up");
    assert_eq!(ri["master_sync_in_progress"], "0");
    assert_eq!(ri["slave_read_only"], "1");
    // The replica's stream is its primary's: same replication ID, same offset.
    assert_eq!(ri["master_replid"], pi["master_replid"]);
    assert_eq!(ri["master_repl_offset"], pi["master_repl_offset"]);
    assert_eq!(ri["slave_repl_offset"], pi["master_repl_offset"]);

    // ROLE: the primary lists its replica, the replica names its primary.
    let role: Value = run(&mut pc, &["ROLE"]);
    let Value::Array(items) = role else {
        panic!("ROLE: {role:?}")
    };
    assert_eq!(items[0], Value::BulkString(b"master".to_vec()));
    assert_eq!(items[1], Value::Int(offset));
    let replica = Value::Array(vec![
        Value::BulkString(b"127.0.0.1".to_vec()),
        Value::BulkString(r.port.to_string().into_bytes()),
        Value::BulkString(offset.to_string().into_bytes()),
    ]);
    assert_eq!(items[2], Value::Array(vec![replica]));
    let role: Value = run(&mut rc, &["ROLE"]);
    assert_eq!(
        role,
        Value::Array(vec![
            Value::BulkString(b"slave".to_vec()),
            Value::BulkString(b"127.0.0.1".to_vec()),
            Value::Int(i64::from(p.port)),
            Value::BulkString(b"connected".to_vec()),
            Value::Int(offset),
        ])
    );

    // A read-only replica refuses writes, also inside MULTI and from scripts, and serves
    // reads.
    let text = error_text(&mut rc, &["SET", "k", "v"]);
    assert_eq!(
        text,
        "READONLY You can't write against a read only replica."
    );
    let script = error_text(&mut rc, &["EVAL", "return redis.call('SET','k','v')", "0"]);
    assert!(script.contains("READONLY"), "{script}");
    let read: String = run(&mut rc, &["GET", "w:str:1"]);
    let primary_read: String = run(&mut pc, &["GET", "w:str:1"]);
    assert_eq!(read, primary_read);
    // replica-read-only no lets it take writes of its own.
    let _: () = run(&mut rc, &["CONFIG", "SET", "replica-read-only", "no"]);
    let _: () = run(&mut rc, &["SET", "local", "1"]);
    assert_eq!(field(&mut rc, "replication", "slave_read_only"), "0");
}

#[test]
fn wait_counts_acknowledging_replicas() {
    let p = strata(&[]);
    let mut pc = p.client();
    let r1 = strata(&[]);
    let r2 = strata(&[]);
    let (mut c1, mut c2) = (r1.client(), r2.client());
    replicaof(&mut c1, &p);
    replicaof(&mut c2, &p);
    wait_synced(&mut pc, &mut c1);
    wait_synced(&mut pc, &mut c2);
    let _: () = run(&mut pc, &["SET", "a", "1"]);
    assert_eq!(wait_acks(&mut pc, 2, 10_000), 2);
    // More replicas than there are: WAIT times out and says how many acknowledged.
    let _: () = run(&mut pc, &["SET", "a", "2"]);
    let started = Instant::now();
    assert_eq!(wait_acks(&mut pc, 3, 300), 2);
    assert!(started.elapsed() >= Duration::from_millis(300));
    // One replica gone: a new write is acknowledged by the other only.
    drop(r2);
    let _: () = run(&mut pc, &["SET", "a", "3"]);
    assert_eq!(wait_acks(&mut pc, 2, 500), 1);
    let v: String = run(&mut c1, &["GET", "a"]);
    assert_eq!(v, "3");
    // With no write since, WAIT 0 answers at once with the replicas in sync.
    assert_eq!(wait_acks(&mut pc, 0, 0), 1);
    // A replica may not WAIT.
    let text = error_text(&mut c1, &["WAIT", "1", "0"]);
    assert!(text.contains("replica"), "{text}");
}

#[test]
fn replicaof_no_one_promotes() {
    let p = strata(&[]);
    let r = strata(&[]);
    let (mut pc, mut rc) = (p.client(), r.client());
    replicaof(&mut rc, &p);
    wait_synced(&mut pc, &mut rc);
    write_mix(&mut pc, "w", 10);
    assert_eq!(wait_acks(&mut pc, 1, 10_000), 1);
    let before = field(&mut pc, "replication", "master_replid");
    let _: () = run(&mut rc, &["REPLICAOF", "NO", "ONE"]);
    let ri = info(&mut rc, "replication");
    assert_eq!(ri["role"], "master");
    // A promoted replica keeps its data, takes a new replication ID and remembers the old
    // one (so its former peers may continue partially).
    assert_ne!(ri["master_replid"], before);
    assert_eq!(ri["master_replid2"], before);
    let _: () = run(&mut rc, &["SET", "after-promotion", "1"]);
    let v: i64 = run(&mut rc, &["INCR", "w:ctr:1"]);
    let old: i64 = run(&mut pc, &["GET", "w:ctr:1"]);
    assert_eq!(v, old + 1);
    // The old primary has no replica left.
    repl_common::wait_until("the primary to drop its replica", 10, || {
        field(&mut pc, "replication", "connected_slaves") == "0"
    });
}

#[test]
fn failover_command_hands_the_role_to_a_replica() {
    let p = strata(&[]);
    let r = strata(&[]);
    let (mut pc, mut rc) = (p.client(), r.client());
    populate(&mut pc, true);
    replicaof(&mut rc, &p);
    wait_synced(&mut pc, &mut rc);
    write_mix(&mut pc, "w", 10);
    let _: () = run(&mut pc, &["FAILOVER"]);
    repl_common::wait_until("the roles to swap", 20, || {
        field(&mut pc, "replication", "role") == "slave"
            && field(&mut rc, "replication", "role") == "master"
            && field(&mut pc, "replication", "master_link_status") == "up"
    });
    assert_eq!(
        field(&mut pc, "replication", "master_port"),
        r.port.to_string()
    );
    // No write was lost, and the new primary streams to the old one.
    assert_same_values(&mut rc, &mut pc, true);
    let _: () = run(&mut rc, &["SET", "after-failover", "1"]);
    assert_eq!(wait_acks(&mut rc, 1, 10_000), 1);
    let v: String = run(&mut pc, &["GET", "after-failover"]);
    assert_eq!(v, "1");
    // The former primary continued partially from the new one (its stream, its offsets).
    assert_eq!(number(&mut rc, "stats", "sync_full"), 0);
    assert_eq!(number(&mut rc, "stats", "sync_partial_ok"), 1);
}

#[test]
fn chained_replica_keeps_the_primary_stream() {
    // primary -> r1 -> r2: r1's replicas get its primary's stream byte for byte.
    let p = strata(&[]);
    let (r1, r2) = (strata(&[]), strata(&[]));
    let (mut pc, mut c1, mut c2) = (p.client(), r1.client(), r2.client());
    populate(&mut pc, true);
    replicaof(&mut c1, &p);
    wait_synced(&mut pc, &mut c1);
    replicaof(&mut c2, &r1);
    wait_synced(&mut c1, &mut c2);
    write_mix(&mut pc, "chain", 20);
    assert_eq!(wait_acks(&mut pc, 1, 10_000), 1);
    wait_synced(&mut pc, &mut c1);
    wait_synced(&mut c1, &mut c2);
    assert_same_values(&mut pc, &mut c2, true);
    let ids: Vec<String> = [&mut pc, &mut c1, &mut c2]
        .into_iter()
        .map(|c| field(c, "replication", "master_replid"))
        .collect();
    assert!(ids.iter().all(|i| *i == ids[0]), "{ids:?}");
    let offsets: Vec<i64> = [&mut pc, &mut c1, &mut c2]
        .into_iter()
        .map(|c| number(c, "replication", "master_repl_offset"))
        .collect();
    assert!(offsets.iter().all(|o| *o == offsets[0]), "{offsets:?}");
}

#[test]
fn min_replicas_to_write_refuses_writes() {
    let p = strata(&[]);
    let r = strata(&[]);
    let (mut pc, mut rc) = (p.client(), r.client());
    replicaof(&mut rc, &p);
    wait_synced(&mut pc, &mut rc);
    let _: () = run(&mut pc, &["CONFIG", "SET", "min-replicas-to-write", "2"]);
    let text = error_text(&mut pc, &["SET", "k", "v"]);
    assert_eq!(text, "NOREPLICAS Not enough good replicas to write.");
    // Reads still work; with one replica asked for, writes do too.
    let _: Option<String> = run(&mut pc, &["GET", "k"]);
    let _: () = run(&mut pc, &["CONFIG", "SET", "min-replicas-to-write", "1"]);
    repl_common::wait_until("the replica to count as good", 10, || {
        redis::cmd("SET")
            .arg("k")
            .arg("v")
            .query::<()>(&mut pc)
            .is_ok()
    });
    // A real redis-server refuses with the same text.
    let redis = repl_common::redis(&["--min-replicas-to-write", "1"]);
    let mut c = redis.client();
    assert_eq!(error_text(&mut c, &["SET", "k", "v"]), text);
}

/// Bytes of every file under `dir`.
fn dir_bytes(dir: &std::path::Path) -> u64 {
    std::fs::read_dir(dir)
        .map(|rd| {
            rd.filter_map(Result::ok)
                .map(|e| match e.metadata() {
                    Ok(m) if m.is_dir() => dir_bytes(&e.path()),
                    Ok(m) => m.len(),
                    Err(_) => 0,
                })
                .sum()
        })
        .unwrap_or(0)
}

#[test]
fn published_messages_reach_the_replicas_subscribers_but_not_the_journal() {
    let p = strata(&["--appendonly", "yes"]);
    let r = strata(&[]);
    let (mut pc, mut rc) = (p.client(), r.client());
    replicaof(&mut rc, &p);
    wait_synced(&mut pc, &mut rc);
    let mut sub = common::RespConn::new(&r);
    assert!(common::call_text(&mut sub, &["SUBSCRIBE", "ch"]).contains("subscribe"));
    let dir = p.own_dir.clone().expect("the primary's data directory");
    let before = dir_bytes(&dir);
    // Nobody listens on the primary; the replica's subscriber gets each message.
    for i in 0..50 {
        let n: i64 = run(&mut pc, &["PUBLISH", "ch", &format!("m{i}")]);
        assert_eq!(n, 0);
        let msg = common::read_text(&mut sub);
        assert!(
            msg.ends_with(&format!(
                "$2\\r\\nch\\r\\n${}\\r\\nm{i}\\r\\n",
                1 + i.to_string().len()
            )),
            "{msg}"
        );
    }
    assert_eq!(dir_bytes(&dir), before, "PUBLISH is not journaled");
    // A write is (the measure sees the journal grow).
    let _: () = run(&mut pc, &["SET", "k", "v"]);
    let start = Instant::now();
    while dir_bytes(&dir) == before {
        assert!(
            start.elapsed() < Duration::from_secs(10),
            "the journal never grew"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// `bind-source-addr`: the replica's link leaves from that address, which its primary
/// then shows (127.0.0.2 is a loopback address of its own on Linux).
#[test]
fn the_link_leaves_from_bind_source_addr() {
    let p = strata(&["--protected-mode", "no"]);
    let r = strata(&["--bind-source-addr", "127.0.0.2"]);
    let (mut pc, mut rc) = (p.client(), r.client());
    replicaof(&mut rc, &p);
    wait_synced(&mut pc, &mut rc);
    let slave = field(&mut pc, "replication", "slave0");
    assert!(slave.starts_with("ip=127.0.0.2,"), "{slave}");
    // Changed at run time, it applies to the next connection.
    let _: () = run(&mut rc, &["CONFIG", "SET", "bind-source-addr", ""]);
    let _: i64 = run(&mut rc, &["CLIENT", "KILL", "TYPE", "master"]);
    repl_common::wait_until("the replica to come back from 127.0.0.1", 20, || {
        // No slave0 while the replica reconnects.
        info(&mut pc, "replication")
            .get("slave0")
            .is_some_and(|s| s.starts_with("ip=127.0.0.1,"))
    });
}
