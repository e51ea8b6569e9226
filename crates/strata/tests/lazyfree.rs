//! Lazy freeing against the real binary: what FLUSHDB/FLUSHALL ASYNC and large UNLINKs
//! hand to the background thread is counted as Redis counts it (INFO
//! lazyfree_pending_objects, lazyfreed_objects).

mod common;

use common::{int, setup};
use redis::Connection;
use std::time::Duration;

fn ok(c: &mut Connection, args: &[&str]) {
    let r: String = common::query(c, args);
    assert_eq!(r, "OK", "{args:?}");
}

fn info_num(c: &mut Connection, field: &str) -> u64 {
    let info: String = redis::cmd("INFO").arg("everything").query(c).expect("INFO");
    info.lines()
        .find_map(|l| l.strip_prefix(&format!("{field}:")))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or_else(|| panic!("no {field} in INFO"))
}

/// Waits for the lazyfree thread to have nothing pending; returns lazyfreed_objects.
fn lazyfree_done(c: &mut Connection) -> u64 {
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while info_num(c, "lazyfree_pending_objects") != 0 {
        assert!(std::time::Instant::now() < deadline, "lazyfree never done");
        std::thread::sleep(Duration::from_millis(10));
    }
    info_num(c, "lazyfreed_objects")
}

/// FLUSHDB/FLUSHALL ASYNC and large UNLINKs count what they free in the background as
/// Redis does (a value is one object, a flushed database its keys); SYNC frees in place;
/// CONFIG RESETSTAT zeroes the count.
#[test]
fn lazyfree_counts_objects_freed_in_the_background() {
    let (_p, mut c, _r) = setup();
    assert_eq!(lazyfree_done(&mut c), 0);
    for i in 0..100 {
        ok(&mut c, &["SET", &format!("k{i}"), "v"]);
    }
    ok(&mut c, &["FLUSHDB", "SYNC"]);
    assert_eq!(lazyfree_done(&mut c), 0);
    for i in 0..100 {
        ok(&mut c, &["SET", &format!("k{i}"), "v"]);
    }
    ok(&mut c, &["FLUSHDB", "ASYNC"]);
    assert_eq!(lazyfree_done(&mut c), 100);
    ok(&mut c, &["SET", "a", "1"]);
    ok(&mut c, &["SELECT", "2"]);
    ok(&mut c, &["SET", "b", "1"]);
    ok(&mut c, &["FLUSHALL", "ASYNC"]);
    assert_eq!(lazyfree_done(&mut c), 102);
    let members: Vec<String> = (0..200).map(|i| format!("m{i}")).collect();
    let mut args = vec!["SADD", "big"];
    args.extend(members.iter().map(String::as_str));
    assert_eq!(int(&mut c, &args), 200);
    assert_eq!(int(&mut c, &["UNLINK", "big"]), 1);
    assert_eq!(lazyfree_done(&mut c), 103);
    // DEL frees in place, unless `lazyfree-lazy-user-del yes` makes it UNLINK.
    assert_eq!(int(&mut c, &args), 200);
    assert_eq!(int(&mut c, &["DEL", "big"]), 1);
    assert_eq!(lazyfree_done(&mut c), 103);
    ok(&mut c, &["CONFIG", "SET", "lazyfree-lazy-user-del", "yes"]);
    assert_eq!(int(&mut c, &args), 200);
    assert_eq!(int(&mut c, &["DEL", "big"]), 1);
    assert_eq!(lazyfree_done(&mut c), 104);
    ok(&mut c, &["CONFIG", "RESETSTAT"]);
    assert_eq!(lazyfree_done(&mut c), 0);
}
