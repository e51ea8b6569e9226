//! Replication with tiering on both sides: a tiered primary's full sync carries its cold
//! entries, and its stream the writes to them; a tiered replica moves what the sync and
//! the stream bring beyond its own `maxmemory` to its own tier. A tiered Strata replica
//! and a redis-server replica of a tiered Strata primary end with its data, key by key.

mod common;
mod rdb_common;
mod repl_common;

use common::{set_many, tiering_field, TIERED};
use rdb_common::{assert_same_values, populate};
use repl_common::{redis, replicaof, run, strata, wait_acks, wait_synced, write_mix};

#[test]
fn tiered_primaries_and_replicas_converge() {
    let p = strata(&TIERED);
    let mut pc = p.client();
    populate(&mut pc, true);
    set_many(&mut pc, "big:", 3000, &[b'v'; 1000]);
    assert!(tiering_field(&mut pc, "cold_keys") > 1000);

    let (sr, rr) = (strata(&TIERED), redis(&[]));
    let (mut sc, mut rc) = (sr.client(), rr.client());
    replicaof(&mut sc, &p);
    replicaof(&mut rc, &p);
    wait_synced(&mut pc, &mut sc);
    wait_synced(&mut pc, &mut rc);
    assert!(
        tiering_field(&mut sc, "cold_keys") > 1000,
        "the replica's sync went to its tier"
    );

    // Writes to cold keys (each brought back, changed and sent on), and every type.
    let writers: Vec<_> = (0..2)
        .map(|w| {
            let mut c = p.client();
            std::thread::spawn(move || write_mix(&mut c, &format!("w{w}"), 40))
        })
        .collect();
    for i in (0..3000).step_by(7) {
        let key = format!("big:{i}");
        let _: i64 = run(&mut pc, &["APPEND", &key, "-more"]);
        let _: i64 = run(&mut pc, &["EXPIRE", &key, "1000"]);
    }
    for t in writers {
        t.join().expect("writer");
    }
    assert_eq!(wait_acks(&mut pc, 2, 20_000), 2);
    wait_synced(&mut pc, &mut sc);
    wait_synced(&mut pc, &mut rc);
    assert!(
        tiering_field(&mut pc, "cold_keys") > 1000 && tiering_field(&mut sc, "cold_keys") > 1000
    );
    let keys = assert_same_values(&mut pc, &mut sc, true).len();
    assert!(keys > 3000, "{keys} keys");
    assert_eq!(assert_same_values(&mut pc, &mut rc, true).len(), keys);
}
