//! CONFIG SET appendonly while the server runs: every write survives, whichever way the
//! journal is switched, and the directory always opens again.

mod common;

use common::{info_field, serve_in, temp_dir};
use std::time::{Duration, Instant};

fn set(c: &mut redis::Connection, k: &str, v: &str) {
    redis::cmd("SET").arg(k).arg(v).query::<()>(c).unwrap();
}

fn get(c: &mut redis::Connection, k: &str) -> Option<String> {
    redis::cmd("GET").arg(k).query(c).unwrap()
}

fn config_set(c: &mut redis::Connection, name: &str, value: &str) {
    redis::cmd("CONFIG")
        .arg("SET")
        .arg(name)
        .arg(value)
        .query::<()>(c)
        .unwrap();
}

/// Waits until INFO persistence says the journal is `want` ("1" on, "0" off) and no
/// snapshot or rewrite is running.
fn wait_switched(c: &mut redis::Connection, want: &str) {
    let end = Instant::now() + Duration::from_secs(30);
    loop {
        let done = info_field(c, "aof_enabled") == want
            && info_field(c, "rdb_bgsave_in_progress") == "0"
            && info_field(c, "aof_rewrite_in_progress") == "0";
        if done {
            return;
        }
        assert!(Instant::now() < end, "appendonly never became {want}");
        std::thread::sleep(Duration::from_millis(10));
    }
}

fn check_dir(dir: &std::path::Path) {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_strata"))
        .arg("check")
        .arg(dir)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "strata check:\n{}",
        String::from_utf8_lossy(&out.stdout)
    );
}

/// Off at start, switched on at run time: writes made before the switch reach the
/// snapshot it takes, writes after it the journal; a kill -9 then loses nothing.
#[test]
fn switching_the_journal_on_at_run_time_keeps_every_write() {
    let dir = temp_dir("aof-on-live");
    let p = serve_in(&dir, &["--appendonly", "no", "--save", ""]);
    let mut c = p.client();
    for i in 0..200 {
        set(&mut c, &format!("before:{i}"), "journal off");
    }
    config_set(&mut c, "appendonly", "yes");
    let got: Vec<String> = redis::cmd("CONFIG")
        .arg("GET")
        .arg("appendonly")
        .query(&mut c)
        .unwrap();
    assert_eq!(got, ["appendonly", "yes"]);
    wait_switched(&mut c, "1");
    for i in 0..200 {
        set(&mut c, &format!("after:{i}"), "journal on");
    }
    drop(c);
    drop(p); // kill -9
    check_dir(&dir);
    for mode in ["yes", "no"] {
        let p = serve_in(&dir, &["--appendonly", mode]);
        let mut c = p.client();
        for i in 0..200 {
            assert_eq!(
                get(&mut c, &format!("before:{i}")).as_deref(),
                Some("journal off"),
                "restart with appendonly {mode}"
            );
            assert_eq!(
                get(&mut c, &format!("after:{i}")).as_deref(),
                Some("journal on"),
                "restart with appendonly {mode}"
            );
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// On at start, switched off at run time: what the journal holds stays valid, and writes
/// after the switch persist through the snapshot a clean stop takes.
#[test]
fn switching_the_journal_off_at_run_time_keeps_every_write() {
    let dir = temp_dir("aof-off-live");
    let mut p = serve_in(&dir, &["--appendonly", "yes"]);
    let mut c = p.client();
    set(&mut c, "journaled", "1");
    redis::cmd("RPUSH")
        .arg("l")
        .arg("a")
        .query::<()>(&mut c)
        .unwrap();
    config_set(&mut c, "appendonly", "no");
    wait_switched(&mut c, "0");
    set(&mut c, "after", "journal off");
    redis::cmd("RPUSH")
        .arg("l")
        .arg("b")
        .query::<()>(&mut c)
        .unwrap();
    // SHUTDOWN takes a snapshot (default save rules); it closes the connection.
    let _ = redis::cmd("SHUTDOWN").query::<()>(&mut c);
    assert!(
        p.wait_exit(Duration::from_secs(10)),
        "still running after SHUTDOWN"
    );
    check_dir(&dir);
    for mode in ["no", "yes"] {
        let p = serve_in(&dir, &["--appendonly", mode]);
        let mut c = p.client();
        assert_eq!(get(&mut c, "journaled").as_deref(), Some("1"));
        assert_eq!(get(&mut c, "after").as_deref(), Some("journal off"));
        let l: Vec<String> = redis::cmd("LRANGE")
            .arg("l")
            .arg(0)
            .arg(-1)
            .query(&mut c)
            .unwrap();
        assert_eq!(l, ["a", "b"], "restart with appendonly {mode}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// Off, on, off, on again in one run, with writes between, then kill -9: every write made
/// while the journal was on is back, and every write made while it was off too (the
/// switch to on snapshots them).
#[test]
fn switching_back_and_forth_then_kill_keeps_every_write() {
    let dir = temp_dir("aof-flip");
    let p = serve_in(&dir, &["--appendonly", "no", "--save", ""]);
    let mut c = p.client();
    let mut n = 0;
    for (round, mode) in ["yes", "no", "yes"].iter().enumerate() {
        for _ in 0..50 {
            redis::cmd("INCR")
                .arg("counter")
                .query::<()>(&mut c)
                .unwrap();
            n += 1;
        }
        set(&mut c, &format!("round:{round}"), "x");
        config_set(&mut c, "appendonly", mode);
        wait_switched(&mut c, if *mode == "yes" { "1" } else { "0" });
    }
    for _ in 0..50 {
        redis::cmd("INCR")
            .arg("counter")
            .query::<()>(&mut c)
            .unwrap();
        n += 1;
    }
    drop(c);
    drop(p);
    check_dir(&dir);
    let p = serve_in(&dir, &["--appendonly", "yes"]);
    let mut c = p.client();
    let counter: i64 = redis::cmd("GET").arg("counter").query(&mut c).unwrap();
    assert_eq!(counter, n, "every INCR exactly once");
    for round in 0..3 {
        assert!(
            get(&mut c, &format!("round:{round}")).is_some(),
            "round {round}"
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}
