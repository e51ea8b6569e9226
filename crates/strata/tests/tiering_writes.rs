//! Writes that replace or delete a cold key whole (SET, MSET, DEL, UNLINK), or only ask
//! whether it exists (SET NX, MSETNX), leave its entry in the tier unread: nothing comes
//! back to RAM, and replies, DBSIZE and keyspace events are those of a key in RAM.

mod common;
use common::{active_expire_off, set_many, tiered, tiering_field};

fn dbsize(c: &mut redis::Connection) -> u64 {
    redis::cmd("DBSIZE").query(c).unwrap()
}

/// The keyspace events published until `end`'s `set`, as (key, event).
fn events_until_end(sub: &mut redis::Connection) -> Vec<(String, String)> {
    let mut ps = sub.as_pubsub();
    ps.set_read_timeout(Some(std::time::Duration::from_secs(10)))
        .unwrap();
    let mut seen = Vec::new();
    loop {
        let msg = ps.get_message().expect("a keyspace event");
        let channel = msg.get_channel_name().to_string();
        let key = channel.trim_start_matches("__keyspace@0__:").to_string();
        let event: String = msg.get_payload().unwrap();
        if key == "end" && event == "set" {
            return seen;
        }
        seen.push((key, event));
    }
}

#[test]
fn whole_writes_of_cold_keys_leave_them_unread() {
    let s = tiered(&["--notify-keyspace-events", "KAn"]);
    let mut c = s.client();
    let big = vec![b'z'; 8000];
    set_many(&mut c, "a", 400, &big);
    assert!(tiering_field(&mut c, "cold_keys") > 200);
    let mut sub = s.client();
    let _: () = redis::cmd("PSUBSCRIBE")
        .arg("__keyspace@0__:*")
        .query(&mut sub)
        .unwrap();
    let faults = tiering_field(&mut c, "moved_to_ram");

    // The oldest keys are the cold ones: replace 0..100, delete 100..150 and 150..200.
    let set_nx: Option<String> = redis::cmd("SET")
        .arg("a0")
        .arg("x")
        .arg("NX")
        .query(&mut c)
        .unwrap();
    assert_eq!(set_nx, None, "a cold key exists for SET NX");
    let msetnx: u64 = redis::cmd("MSETNX")
        .arg("a1")
        .arg("x")
        .arg("fresh")
        .arg("x")
        .query(&mut c)
        .unwrap();
    assert_eq!(msetnx, 0);
    for i in 0..100 {
        let _: () = redis::cmd("SET")
            .arg(format!("a{i}"))
            .arg(format!("new{i}"))
            .query(&mut c)
            .unwrap();
    }
    let mut del = redis::cmd("DEL");
    for i in 100..150 {
        del.arg(format!("a{i}"));
    }
    del.arg("missing");
    assert_eq!(del.query::<u64>(&mut c).unwrap(), 50);
    let mut unlink = redis::cmd("UNLINK");
    for i in 150..200 {
        unlink.arg(format!("a{i}"));
    }
    assert_eq!(unlink.query::<u64>(&mut c).unwrap(), 50);
    let _: () = redis::cmd("SET").arg("end").arg("1").query(&mut c).unwrap();

    // Nothing was read back, and most of those keys were cold.
    assert_eq!(tiering_field(&mut c, "moved_to_ram"), faults);
    let unread = tiering_field(&mut c, "cold_replaced_unread");
    assert!(
        unread >= 100,
        "only {unread} of 200 cold writes went unread"
    );
    eprintln!("{unread} of 200 writes found their key cold");
    assert_eq!(dbsize(&mut c), 400 - 100 + 1);

    // Events as for keys in RAM: a replaced key is not new, a deleted one is.
    let events = events_until_end(&mut sub);
    let of = |key: &str| -> Vec<&str> {
        events
            .iter()
            .filter(|(k, _)| k == key)
            .map(|(_, e)| e.as_str())
            .collect()
    };
    for i in 0..100 {
        assert_eq!(of(&format!("a{i}")), ["set"], "a{i}");
    }
    for i in 100..200 {
        assert_eq!(of(&format!("a{i}")), ["del"], "a{i}");
    }
    assert!(of("missing").is_empty() && of("fresh").is_empty());
    assert_eq!(of("end"), ["new"], "a new key's events");

    // The values are the new ones; the deleted keys are gone for good.
    for i in (0..100).step_by(7) {
        let v: String = redis::cmd("GET")
            .arg(format!("a{i}"))
            .query(&mut c)
            .unwrap();
        assert_eq!(v, format!("new{i}"));
    }
    for i in (100..200).step_by(7) {
        let v: Option<Vec<u8>> = redis::cmd("GET")
            .arg(format!("a{i}"))
            .query(&mut c)
            .unwrap();
        assert_eq!(v, None, "a{i}");
    }
    for i in (200..400).step_by(13) {
        let v: Vec<u8> = redis::cmd("GET")
            .arg(format!("a{i}"))
            .query(&mut c)
            .unwrap();
        assert_eq!(v, big, "a{i}");
    }
}

/// Whole writes leave cold keys unread whether they have a TTL or not: the store keeps
/// expiries apart from values. Only a cold key whose TTL has passed is read back first,
/// so that it expires as a hot key would. One shard a database, so every key shares it.
#[test]
fn whole_writes_read_back_only_cold_keys_that_expired() {
    let s = tiered(&["--shards", "1", "--enable-debug-command", "yes"]);
    let mut c = s.client();
    // Only the writes below may find the short-lived keys expired.
    active_expire_off(&mut c);
    for i in 0..20 {
        let _: () = redis::cmd("SET")
            .arg(format!("short{i}"))
            .arg("x")
            .arg("PX")
            .arg(1500)
            .query(&mut c)
            .unwrap();
    }
    let set_at = std::time::Instant::now();
    let big = vec![b'z'; 8000];
    // Every fourth key has a TTL; the oldest go cold.
    for i in 0..400 {
        let mut set = redis::cmd("SET");
        set.arg(format!("t{i}")).arg(&big[..]);
        if i % 4 == 0 {
            set.arg("EX").arg(3600);
        }
        let _: () = set.query(&mut c).unwrap();
    }
    assert!(tiering_field(&mut c, "cold_keys") > 200);
    let faults = tiering_field(&mut c, "moved_to_ram");
    let unread = tiering_field(&mut c, "cold_replaced_unread");
    for i in 0..200 {
        let _: () = redis::cmd("SET")
            .arg(format!("t{i}"))
            .arg(format!("new{i}"))
            .query(&mut c)
            .unwrap();
    }
    let read_back = tiering_field(&mut c, "moved_to_ram") - faults;
    let unread = tiering_field(&mut c, "cold_replaced_unread") - unread;
    eprintln!("{read_back} read back, {unread} unread");
    assert_eq!(read_back, 0, "no key of these writes had expired");
    assert!(
        unread >= 150,
        "only {unread} of 200 writes found their key cold"
    );
    for i in (0..200).step_by(9) {
        let v: String = redis::cmd("GET")
            .arg(format!("t{i}"))
            .query(&mut c)
            .unwrap();
        assert_eq!(v, format!("new{i}"));
        let ttl: i64 = redis::cmd("TTL")
            .arg(format!("t{i}"))
            .query(&mut c)
            .unwrap();
        assert_eq!(ttl, -1, "SET cleared t{i}'s TTL");
    }
    let ttl: i64 = redis::cmd("TTL").arg("t200").query(&mut c).unwrap();
    assert!(ttl > 3000, "t200 keeps its TTL: {ttl}");

    // The short-lived keys expired while cold: DEL reads them back, finds them expired,
    // and counts none of them.
    std::thread::sleep(std::time::Duration::from_millis(1600).saturating_sub(set_at.elapsed()));
    let faults = tiering_field(&mut c, "moved_to_ram");
    let mut del = redis::cmd("DEL");
    for i in 0..20 {
        del.arg(format!("short{i}"));
    }
    assert_eq!(del.query::<u64>(&mut c).unwrap(), 0);
    assert!(
        tiering_field(&mut c, "moved_to_ram") > faults,
        "none of the expired keys was cold"
    );
    assert_eq!(dbsize(&mut c), 400);
}

/// A snapshot holds cold keys as they were when it began, however writes replace them
/// while it captures: a BGSAVE held open by `rdb-key-save-delay` while every key is set
/// anew, then a restart without a journal (the snapshot alone) finds the old values.
#[test]
fn a_snapshot_keeps_cold_keys_replaced_while_it_captures() {
    let dir = common::temp_dir("tier-capture-replaced");
    let mut args = common::TIERED.to_vec();
    args.extend_from_slice(&["--appendonly", "no", "--save", ""]);
    let s = common::serve_in(&dir, &args);
    let mut c = s.client();
    let big = vec![b'z'; 8000];
    set_many(&mut c, "a", 400, &big);
    assert!(tiering_field(&mut c, "cold_keys") > 200);
    let save_delay = |c: &mut redis::Connection, us: u32| {
        let _: () = redis::cmd("CONFIG")
            .arg("SET")
            .arg("rdb-key-save-delay")
            .arg(us)
            .query(c)
            .unwrap();
    };
    // 20 ms for each entry written keeps the capture of these 400 going for seconds.
    save_delay(&mut c, 20_000);
    let _: () = redis::cmd("BGSAVE").query(&mut c).unwrap();
    set_many(&mut c, "a", 400, b"new");
    assert_eq!(
        common::info_field(&mut c, "rdb_bgsave_in_progress"),
        "1",
        "the writes ran while the snapshot captured"
    );
    save_delay(&mut c, 0);
    common::wait_snapshot_done(&mut c);
    assert_eq!(common::get(&mut c, "a7"), Some(b"new".to_vec()));
    // Dropping the Proc is a SIGKILL.
    drop(c);
    drop(s);
    let s = common::serve_in(&dir, &args);
    let mut c = s.client();
    assert_eq!(dbsize(&mut c), 400);
    for i in 0..400 {
        let v = common::get(&mut c, &format!("a{i}"));
        assert_eq!(v.as_deref(), Some(&big[..]), "a{i}");
    }
    drop(s);
    let _ = std::fs::remove_dir_all(&dir);
}
