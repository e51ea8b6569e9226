//! Snapshots of the real server: `save` rules without a journal, a snapshot taken during
//! writes is one point in time (scripts that began before it included), BGREWRITEAOF
//! then restart keeps everything.

mod common;

use common::{info_field, serve_in, temp_dir, wait_snapshot_done};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// A cache with RDB-style snapshots only (`appendonly no`): plain writes count as changes,
/// so a `save` rule fires and what it saved survives a SIGKILL.
#[test]
fn save_rule_snapshots_plain_writes_without_a_journal() {
    let dir = temp_dir("saverule");
    let p = serve_in(&dir, &["--appendonly", "no", "--save", "2 3"]);
    let mut c = p.client();
    let before: i64 = redis::cmd("LASTSAVE").query(&mut c).unwrap();
    for (k, v) in [("a", "1"), ("b", "2")] {
        redis::cmd("SET").arg(k).arg(v).query::<()>(&mut c).unwrap();
    }
    redis::cmd("INCR").arg("n").query::<()>(&mut c).unwrap();
    // Three changes (the rule's count), and none saved yet: the rule waits 2 s.
    assert_eq!(info_field(&mut c, "rdb_changes_since_last_save"), "3");
    let end = std::time::Instant::now() + Duration::from_secs(20);
    while info_field(&mut c, "rdb_changes_since_last_save") != "0" {
        assert!(std::time::Instant::now() < end, "the save rule never fired");
        std::thread::sleep(Duration::from_millis(20));
    }
    wait_snapshot_done(&mut c);
    let after: i64 = redis::cmd("LASTSAVE").query(&mut c).unwrap();
    assert!(after >= before);
    drop(p); // SIGKILL
    let p = serve_in(&dir, &["--appendonly", "no", "--save", ""]);
    let mut c = p.client();
    let got: Vec<Option<String>> = redis::cmd("MGET")
        .arg(&["a", "b", "n"])
        .query(&mut c)
        .unwrap();
    assert_eq!(
        got,
        vec![Some("1".into()), Some("2".into()), Some("1".into())]
    );
    drop(p);
    let _ = std::fs::remove_dir_all(&dir);
}

/// Each writer sets its keys w:i in order, one per command, while BGSAVE runs. Keys land
/// in different shards, captured at different times; a point-in-time snapshot must still
/// hold, for every writer, exactly a prefix w:0..w:m (a shard-by-shard copy without the
/// capture-before-write rule would show holes). Without a journal, what restarts is the
/// snapshot alone.
#[test]
fn snapshot_taken_during_writes_is_one_point_in_time() {
    let dir = temp_dir("pit");
    // Four shards of ~5000 keys: the snapshot walks each in several chunks, with the
    // writers' inserts growing the tables in between (see `Db::capture_chunk`). Workers
    // help with the walk at once (as when the snapshot thread is starved), so chunks are
    // captured by several threads at a time.
    let p = serve_in(
        &dir,
        &[
            "--appendonly",
            "no",
            "--save",
            "",
            "--shards",
            "4",
            "--snapshot-help-after-ms",
            "0",
        ],
    );
    let mut c = p.client();
    // Some data first, so the snapshot takes a while.
    for chunk in 0..20 {
        let mut pipe = redis::pipe();
        for i in 0..1000 {
            pipe.cmd("SET")
                .arg(format!("bulk:{chunk}:{i}"))
                .arg("x".repeat(64))
                .ignore();
        }
        pipe.query::<()>(&mut c).unwrap();
    }
    let stop = Arc::new(AtomicBool::new(false));
    let writers: Vec<_> = (0..3)
        .map(|w| {
            let (port, stop) = (p.port, stop.clone());
            std::thread::spawn(move || {
                let mut c = redis::Client::open(format!("redis://127.0.0.1:{port}/"))
                    .and_then(|c| c.get_connection())
                    .unwrap();
                let mut i = 0u64;
                while !stop.load(Ordering::Relaxed) {
                    redis::cmd("SET")
                        .arg(format!("w{w}:{i}"))
                        .arg(i)
                        .query::<()>(&mut c)
                        .unwrap();
                    // And an overwrite of one existing key, which the snapshot must hold
                    // as it was at the cut (the engine saves its old value aside).
                    redis::cmd("SET")
                        .arg(format!("c{w}"))
                        .arg(i)
                        .query::<()>(&mut c)
                        .unwrap();
                    i += 1;
                }
                i
            })
        })
        .collect();
    // Every writer has written some keys before the snapshot starts...
    let grown = |c: &mut redis::Connection, by: i64| {
        let start: i64 = redis::cmd("DBSIZE").query(c).unwrap();
        let end = std::time::Instant::now() + Duration::from_secs(20);
        while redis::cmd("DBSIZE").query::<i64>(c).unwrap() < start + by {
            assert!(std::time::Instant::now() < end, "writers stalled");
            std::thread::sleep(Duration::from_millis(2));
        }
    };
    grown(&mut c, 300);
    // The snapshot checked below is one the workers helped with (`snapshot::help`): a
    // worker helps when it is about to sleep, so on a loaded machine the snapshot thread
    // may now and then finish before any worker wakes and sleeps again; then take another.
    let by_workers = |c: &mut redis::Connection| -> u64 {
        info_field(c, "snapshot_chunks_by_workers").parse().unwrap()
    };
    let mut helped = false;
    for _ in 0..20 {
        let before = by_workers(&mut c);
        let r: String = redis::cmd("BGSAVE").query(&mut c).unwrap();
        assert_eq!(r, "Background saving started");
        wait_snapshot_done(&mut c);
        if by_workers(&mut c) > before {
            helped = true;
            break;
        }
    }
    assert!(helped, "no worker helped in 20 snapshots");
    // ...and more after it ends.
    grown(&mut c, 300);
    stop.store(true, Ordering::Relaxed);
    let written: Vec<u64> = writers.into_iter().map(|h| h.join().unwrap()).collect();
    drop(p); // SIGKILL: only the snapshot remains
    let p = serve_in(&dir, &["--appendonly", "no", "--save", ""]);
    let mut c = p.client();
    let bulk: Vec<String> = redis::cmd("KEYS").arg("bulk:*").query(&mut c).unwrap();
    assert_eq!(bulk.len(), 20_000);
    let mut partial = 0;
    for (w, n) in written.iter().enumerate() {
        let keys: Vec<String> = redis::cmd("KEYS")
            .arg(format!("w{w}:*"))
            .query(&mut c)
            .unwrap();
        let mut idx: Vec<u64> = keys
            .iter()
            .map(|k| k.split(':').nth(1).unwrap().parse().unwrap())
            .collect();
        idx.sort_unstable();
        let m = idx.len() as u64;
        assert!(
            idx.iter().enumerate().all(|(i, v)| *v == i as u64),
            "writer {w}: snapshot holds {m} keys but not the prefix 0..{m}"
        );
        assert!(m <= *n);
        // The writer set w{w}:i then c{w} = i: at a cut, c{w} is m-1 or m-2.
        let cval: Option<i64> = redis::cmd("GET")
            .arg(format!("c{w}"))
            .query(&mut c)
            .unwrap();
        let mi = m as i64;
        match cval {
            None => assert!(mi <= 1, "writer {w}: c{w} missing with {m} keys"),
            Some(v) => assert!(
                v == mi - 1 || v == mi - 2,
                "writer {w}: c{w} = {v} with {m} keys"
            ),
        }
        partial += (m > 0 && m < *n) as usize;
    }
    // The writers ran before, during and after the snapshot: it caught them mid-way.
    assert!(
        partial > 0,
        "snapshot did not overlap the writes: {written:?}"
    );
    drop(p);
    let _ = std::fs::remove_dir_all(&dir);
}

/// A script that began before a BGSAVE and reaches keys it did not declare once the
/// snapshot has started: its journal block is tagged before the snapshot (skipped at
/// replay), so the snapshot must hold all of its writes. Without the snapshot waiting for
/// writes that began before it, the keys in shards it captured early are lost.
#[test]
fn snapshot_holds_a_script_that_began_before_it() {
    let dir = temp_dir("pit-script");
    let p = serve_in(&dir, &["--save", "", "--threads", "2"]);
    // Two connections in a row land on different worker threads (dealt in turn).
    let (mut a, mut b) = (p.client(), p.client());
    // Spins 400 ms, then writes 32 keys it did not declare, spread over many shards.
    const SLOW: &str = "local s = redis.call('TIME') \
        repeat local n = redis.call('TIME') \
        until (n[1] - s[1]) * 1000000 + (n[2] - s[2]) > 400000 \
        for i = 1, 32 do redis.call('SET', 'late:' .. i, ARGV[1]) end \
        return redis.call('SET', KEYS[1], ARGV[1])";
    let script = std::thread::spawn(move || {
        redis::cmd("EVAL")
            .arg(SLOW)
            .arg(1)
            .arg("declared")
            .arg("v1")
            .query::<String>(&mut a)
    });
    std::thread::sleep(Duration::from_millis(100));
    let started = std::time::Instant::now();
    let r: String = redis::cmd("BGSAVE").query(&mut b).unwrap();
    assert_eq!(r, "Background saving started");
    // BGSAVE was served while the script still ran (on the other worker).
    assert!(
        !script.is_finished() && started.elapsed() < Duration::from_millis(200),
        "BGSAVE did not run alongside the script"
    );
    assert_eq!(script.join().unwrap().unwrap(), "OK");
    wait_snapshot_done(&mut b);
    drop(p); // SIGKILL: the snapshot plus the journal after it
    let p = serve_in(&dir, &["--save", ""]);
    let mut c = p.client();
    let mut keys = vec!["declared".to_string()];
    keys.extend((1..=32).map(|i| format!("late:{i}")));
    let lost: Vec<&String> = keys
        .iter()
        .filter(|k| {
            redis::cmd("GET")
                .arg(k)
                .query::<Option<String>>(&mut c)
                .unwrap()
                != Some("v1".into())
        })
        .collect();
    assert!(lost.is_empty(), "lost after restart: {lost:?}");
    drop(p);
    let _ = std::fs::remove_dir_all(&dir);
}

/// BGREWRITEAOF: a snapshot, then the journal before it is dropped; a restart loads the
/// snapshot and replays only what came after it.
#[test]
fn rewrite_then_restart_keeps_everything() {
    let dir = temp_dir("rewrite");
    let p = serve_in(&dir, &["--save", ""]);
    let mut c = p.client();
    for i in 0..2000 {
        redis::cmd("RPUSH")
            .arg("l")
            .arg(i)
            .query::<()>(&mut c)
            .unwrap();
    }
    redis::cmd("HSET")
        .arg("h")
        .arg("f")
        .arg("v")
        .query::<()>(&mut c)
        .unwrap();
    redis::cmd("ZADD")
        .arg("z")
        .arg("1.5")
        .arg("m")
        .query::<()>(&mut c)
        .unwrap();
    redis::cmd("SADD")
        .arg("s")
        .arg("a")
        .arg("1")
        .query::<()>(&mut c)
        .unwrap();
    redis::cmd("SET")
        .arg("ttl")
        .arg("v")
        .arg("EX")
        .arg("500")
        .query::<()>(&mut c)
        .unwrap();
    let r: String = redis::cmd("BGREWRITEAOF").query(&mut c).unwrap();
    assert_eq!(r, "Background append only file rewriting started");
    wait_snapshot_done(&mut c);
    for i in 2000..2100 {
        redis::cmd("RPUSH")
            .arg("l")
            .arg(i)
            .query::<()>(&mut c)
            .unwrap();
    }
    let lastsave: i64 = redis::cmd("LASTSAVE").query(&mut c).unwrap();
    assert!(lastsave > 0);
    drop(p);
    let snaps: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .filter_map(|e| e.ok())
        .filter(|e| e.file_name().to_string_lossy().ends_with(".snap"))
        .collect();
    assert_eq!(snaps.len(), 1, "one snapshot file expected");
    let p = serve_in(&dir, &[]);
    let mut c = p.client();
    let l: Vec<i64> = redis::cmd("LRANGE")
        .arg("l")
        .arg(0)
        .arg(-1)
        .query(&mut c)
        .unwrap();
    assert_eq!(l, (0..2100).collect::<Vec<i64>>());
    let h: String = redis::cmd("HGET").arg("h").arg("f").query(&mut c).unwrap();
    assert_eq!(h, "v");
    let z: f64 = redis::cmd("ZSCORE")
        .arg("z")
        .arg("m")
        .query(&mut c)
        .unwrap();
    assert_eq!(z, 1.5);
    let s: i64 = redis::cmd("SCARD").arg("s").query(&mut c).unwrap();
    assert_eq!(s, 2);
    let ttl: i64 = redis::cmd("TTL").arg("ttl").query(&mut c).unwrap();
    assert!((490..=500).contains(&ttl), "ttl {ttl}");
    drop(p);
    let _ = std::fs::remove_dir_all(&dir);
}
