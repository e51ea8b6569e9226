//! A replica applies runs of one-key writes on several workers (`replica-apply-lanes`).
//! Under pipelined, order-sensitive writes of every type from several clients, broken up
//! by commands that must wait for everything before them (MSET, MULTI/EXEC, SELECT, a
//! script), it ends with exactly the primary's data; so do a replica that applies in
//! stream order and a replica chained to the first that full-synced in the middle of
//! the load (its cut falls between runs).

mod common;
mod rdb_common;
mod repl_common;

use rdb_common::{assert_same_values, populate};
use repl_common::{number, replicaof, strata, wait_acks, wait_synced};

/// Pipelines of `PIPELINE` commands: one-key writes whose result depends on their order
/// (INCR, RPUSH/LPOP, APPEND, HINCRBY, ZINCRBY, XADD, SETRANGE), over 40 keys of each
/// type, with a command that ends a run every `BARRIER_EVERY`. Returns commands sent.
fn pipelined_writes(c: &mut redis::Connection, tag: &str, rounds: usize) -> usize {
    const PIPELINE: usize = 400;
    const BARRIER_EVERY: usize = 130;
    let mut sent = 0;
    for round in 0..rounds {
        let mut p = redis::pipe();
        for i in 0..PIPELINE {
            let n = round * PIPELINE + i;
            let k = |ty: &str| format!("{tag}:{ty}:{}", (n / 8) % 40);
            if i % BARRIER_EVERY == BARRIER_EVERY - 1 {
                match (n / BARRIER_EVERY) % 4 {
                    0 => p.cmd("MSET").arg(k("m1")).arg(n).arg(k("m2")).arg(n),
                    1 => p
                        .cmd("MULTI")
                        .cmd("INCR")
                        .arg(k("ctr"))
                        .cmd("RPUSH")
                        .arg(k("list"))
                        .arg(n)
                        .cmd("EXEC"),
                    2 => p
                        .cmd("SELECT")
                        .arg(3)
                        .cmd("INCR")
                        .arg(k("ctr"))
                        .cmd("SELECT")
                        .arg(0),
                    _ => p
                        .cmd("EVAL")
                        .arg("return redis.call('APPEND', KEYS[1], ARGV[1])")
                        .arg(1)
                        .arg(k("app"))
                        .arg(format!("e{n},")),
                };
            } else {
                match i % 8 {
                    0 => p.cmd("INCR").arg(k("ctr")),
                    1 => p.cmd("RPUSH").arg(k("list")).arg(n),
                    2 => p.cmd("APPEND").arg(k("app")).arg(format!("{n},")),
                    3 => p.cmd("HINCRBY").arg(k("hash")).arg(n % 3).arg(n),
                    4 => p.cmd("ZINCRBY").arg(k("zset")).arg(n % 7).arg(n % 5),
                    5 => p.cmd("LPOP").arg(k("list")),
                    6 => p.cmd("XADD").arg(k("stream")).arg("*").arg("n").arg(n),
                    _ => p.cmd("SETRANGE").arg(k("range")).arg(n % 16).arg(n % 10),
                };
            }
        }
        let _: Vec<redis::Value> = p.query(c).expect("pipeline");
        sent += PIPELINE;
    }
    sent
}

#[test]
fn replicas_applying_on_several_workers_end_with_the_primary_data() {
    let p = strata(&[]);
    let mut pc = p.client();
    populate(&mut pc, true);
    let split = strata(&["--threads", "2", "--replica-apply-lanes", "0"]);
    let ordered = strata(&["--threads", "2", "--replica-apply-lanes", "1"]);
    let chained = strata(&[]);
    let (mut sc, mut oc, mut cc) = (split.client(), ordered.client(), chained.client());
    replicaof(&mut sc, &p);
    replicaof(&mut oc, &p);
    wait_synced(&mut pc, &mut sc);
    wait_synced(&mut pc, &mut oc);
    let writers: Vec<_> = (0..3)
        .map(|w| {
            let mut c = p.client();
            std::thread::spawn(move || pipelined_writes(&mut c, &format!("w{w}"), 40))
        })
        .collect();
    // The chained replica's full sync happens while the first one applies the load.
    std::thread::sleep(std::time::Duration::from_millis(300));
    replicaof(&mut cc, &split);
    let sent: usize = writers.into_iter().map(|t| t.join().expect("writer")).sum();
    assert_eq!(sent, 3 * 40 * 400);
    assert_eq!(wait_acks(&mut pc, 2, 20_000), 2);
    wait_synced(&mut pc, &mut sc);
    wait_synced(&mut pc, &mut oc);
    wait_synced(&mut sc, &mut cc);
    let runs = number(&mut sc, "replication", "replica_apply_split_runs");
    let writes = number(&mut sc, "replication", "replica_apply_split_writes");
    assert!(runs > 0, "no run was applied on several workers");
    assert!(writes >= 64 * runs, "{writes} writes in {runs} runs");
    assert_eq!(
        number(&mut oc, "replication", "replica_apply_split_runs"),
        0,
        "replica-apply-lanes 1 applies in order"
    );
    let keys = assert_same_values(&mut pc, &mut sc, true).len();
    assert_eq!(assert_same_values(&mut pc, &mut oc, true).len(), keys);
    assert_eq!(assert_same_values(&mut pc, &mut cc, true).len(), keys);
    // Each writer's 40 keys of each of 8 types (a list may be empty, hence gone).
    assert!(keys > 3 * 40 * 7, "{keys} keys");
}
