//! maxmemory across a primary and its replica, as in Redis: the primary's evictions reach
//! the replica as DELs, and a replica under `replica-ignore-maxmemory yes` (the default)
//! evicts nothing itself, however far over its own maxmemory it is, until that is set
//! to `no`.

mod common;
mod repl_common;

use repl_common::{number, replicaof, run, strata, wait_synced};

/// Writes `n` keys of 1 KiB on `c`, 500 a pipeline (a pipeline of megabytes would sit in
/// the connection's input buffer, which maxmemory counts).
fn fill(c: &mut redis::Connection, prefix: &str, n: usize) {
    let value = "x".repeat(1024);
    for start in (0..n).step_by(500) {
        let mut pipe = redis::pipe();
        for i in start..(start + 500).min(n) {
            pipe.cmd("SET")
                .arg(format!("{prefix}:{i}"))
                .arg(&value)
                .ignore();
        }
        let _: () = pipe.query(c).expect("fill");
    }
}

#[test]
fn a_replica_keeps_its_primarys_keys_over_its_own_maxmemory_unless_told_not_to() {
    let p = strata(&[]);
    let mut pc = p.client();
    let r = strata(&["--maxmemory", "4mb", "--maxmemory-policy", "allkeys-lru"]);
    let mut rc = r.client();
    replicaof(&mut rc, &p);
    fill(&mut pc, "k", 20_000);
    wait_synced(&mut pc, &mut rc);
    // Reads admit the replica's clients' commands, where eviction would run.
    for i in 0..100 {
        let _: Option<String> = run(&mut rc, &["GET", &format!("k:{i}")]);
    }
    let used = number(&mut rc, "memory", "used_memory");
    assert!(
        used > 8 << 20,
        "the replica holds {used} bytes, not over its limit"
    );
    assert_eq!(number(&mut rc, "stats", "evicted_keys"), 0);
    assert_eq!(run::<i64>(&mut rc, &["DBSIZE"]), 20_000);

    let _: () = run(
        &mut rc,
        &["CONFIG", "SET", "replica-ignore-maxmemory", "no"],
    );
    let _: Option<String> = run(&mut rc, &["GET", "k:0"]);
    assert!(number(&mut rc, "stats", "evicted_keys") > 0);
    assert!(run::<i64>(&mut rc, &["DBSIZE"]) < 20_000);
}

#[test]
fn the_primarys_evictions_reach_its_replica() {
    // Above what an empty server takes (a debug build's is near 5 MB).
    let p = strata(&["--maxmemory", "12mb", "--maxmemory-policy", "allkeys-lru"]);
    let mut pc = p.client();
    let r = strata(&[]);
    let mut rc = r.client();
    replicaof(&mut rc, &p);
    fill(&mut pc, "k", 40_000);
    wait_synced(&mut pc, &mut rc);
    let evicted = number(&mut pc, "stats", "evicted_keys");
    assert!(evicted > 0, "the primary evicted nothing");
    let keys: i64 = run(&mut pc, &["DBSIZE"]);
    assert_eq!(keys, 40_000 - evicted);
    assert_eq!(run::<i64>(&mut rc, &["DBSIZE"]), keys);
}
