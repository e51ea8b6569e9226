//! Replicas converge while several clients write every type at once, and while their
//! full sync happens in the middle of those writes: the RDB's cut and the stream after it
//! must split the writes exactly (each in one of them, never both, never neither). A
//! Strata replica and a redis-server replica of one Strata primary end with its data.

mod common;
mod rdb_common;
mod repl_common;

use rdb_common::{assert_same_values, populate};
use repl_common::{redis, replicaof, strata, wait_acks, wait_synced, write_mix};

#[test]
fn replicas_converge_under_concurrent_writes() {
    let p = strata(&[]);
    let mut pc = p.client();
    populate(&mut pc, true);
    let (sr, rr) = (strata(&[]), redis(&[]));
    let writers: Vec<_> = (0..4)
        .map(|w| {
            let mut c = p.client();
            std::thread::spawn(move || write_mix(&mut c, &format!("w{w}"), 60))
        })
        .collect();
    // The full syncs start while the writers run.
    std::thread::sleep(std::time::Duration::from_millis(200));
    let (mut sc, mut rc) = (sr.client(), rr.client());
    replicaof(&mut sc, &p);
    replicaof(&mut rc, &p);
    let sent: usize = writers.into_iter().map(|t| t.join().expect("writer")).sum();
    assert!(sent > 4 * 60 * 20, "{sent} commands sent");
    assert_eq!(wait_acks(&mut pc, 2, 20_000), 2);
    wait_synced(&mut pc, &mut sc);
    wait_synced(&mut pc, &mut rc);
    let keys = assert_same_values(&mut pc, &mut sc, true).len();
    assert_eq!(assert_same_values(&mut pc, &mut rc, true).len(), keys);
    // Every writer's last counter value is there (the counters add up all rounds).
    for w in 0..4 {
        for k in 0..7 {
            let expected: i64 = (0..60).filter(|i| i % 7 == k).sum();
            let key = format!("w{w}:ctr:{k}");
            for c in [&mut sc, &mut rc] {
                let v: i64 = repl_common::run(c, &["GET", &key]);
                assert_eq!(v, expected, "{key}");
            }
        }
    }
}
