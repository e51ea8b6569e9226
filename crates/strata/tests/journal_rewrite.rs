//! The journal does not grow without bound: once it has grown by
//! `auto-aof-rewrite-percentage` past `auto-aof-rewrite-min-size`, a rewrite (a snapshot,
//! then the journal it covers deleted) starts by itself, as Redis rewrites its AOF. Writes
//! acknowledged across rewrites survive a SIGKILL.

mod common;

use common::{info_field, serve_in, temp_dir};
use std::time::{Duration, Instant};

/// Small segments, so that a rewrite can delete some in a short test.
const OPTIONS: [&str; 4] = [
    "--journal-segment-size",
    "256kb",
    "--auto-aof-rewrite-min-size",
    "1mb",
];

fn journal_size(c: &mut redis::Connection) -> u64 {
    info_field(c, "aof_current_size").parse().unwrap()
}

/// Overwrites 100 keys `rounds` times with 1 KiB values and counts each round in an
/// INCR and an RPUSH (order-sensitive writes), one pipeline a round.
fn write_rounds(c: &mut redis::Connection, from: usize, rounds: usize) {
    for r in from..from + rounds {
        let mut pipe = redis::pipe();
        for k in 0..100 {
            pipe.cmd("SET")
                .arg(format!("k{k}"))
                .arg(format!("{r:04}").repeat(256))
                .ignore();
        }
        pipe.cmd("INCR").arg("rounds").ignore();
        pipe.cmd("RPUSH").arg("order").arg(r).ignore();
        pipe.query::<()>(c).unwrap();
    }
}

#[test]
fn the_journal_is_rewritten_once_it_has_grown_and_nothing_is_lost() {
    let dir = temp_dir("rewrite");
    let p = serve_in(&dir, &OPTIONS);
    let mut c = p.client();
    // About 10 MB of journal, far past the minimum and the growth.
    write_rounds(&mut c, 0, 100);
    // The check runs `hz` times a second; a rewrite under this load takes a moment.
    let end = Instant::now() + Duration::from_secs(20);
    while journal_size(&mut c) > 4 << 20 || info_field(&mut c, "rdb_bgsave_in_progress") != "0" {
        assert!(
            Instant::now() < end,
            "the journal was never rewritten: {} bytes",
            journal_size(&mut c)
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(common::logged(&p, "Starting automatic rewriting of AOF"));
    assert_eq!(info_field(&mut c, "aof_last_bgrewrite_status"), "ok");
    let base: u64 = info_field(&mut c, "aof_base_size").parse().unwrap();
    assert!(base > 0 && base < 4 << 20, "aof_base_size {base}");
    // More rounds after the rewrite, then a SIGKILL.
    write_rounds(&mut c, 100, 20);
    drop(p);
    let p = serve_in(&dir, &OPTIONS);
    let mut c = p.client();
    let rounds: usize = redis::cmd("GET").arg("rounds").query(&mut c).unwrap();
    assert_eq!(rounds, 120);
    let order: Vec<usize> = redis::cmd("LRANGE")
        .arg("order")
        .arg(0)
        .arg(-1)
        .query(&mut c)
        .unwrap();
    assert_eq!(order, (0..120).collect::<Vec<_>>());
    for k in [0, 57, 99] {
        let v: String = redis::cmd("GET")
            .arg(format!("k{k}"))
            .query(&mut c)
            .unwrap();
        assert_eq!(v, "0119".repeat(256), "k{k}");
    }
    drop(p);
    let _ = std::fs::remove_dir_all(&dir);
}

/// `auto-aof-rewrite-percentage 0` turns automatic rewrites off: the journal keeps
/// everything (what the test above relies on the rewrite to shrink).
#[test]
fn no_rewrite_starts_by_itself_with_percentage_zero() {
    let dir = temp_dir("norewrite");
    let mut options = OPTIONS.to_vec();
    options.extend_from_slice(&["--auto-aof-rewrite-percentage", "0"]);
    let p = serve_in(&dir, &options);
    let mut c = p.client();
    write_rounds(&mut c, 0, 100);
    std::thread::sleep(Duration::from_millis(2500));
    assert!(journal_size(&mut c) > 8 << 20);
    assert!(!common::logged(&p, "Starting automatic rewriting of AOF"));
    drop(p);
    let _ = std::fs::remove_dir_all(&dir);
}
