//! A snapshot that fails (here: its file system fills up halfway through the file) leaves
//! nothing behind and loses nothing, and, as in Redis with `stop-writes-on-bgsave-error
//! yes` and save rules set, writes are refused with MISCONF until a snapshot succeeds,
//! while reads go on. Runs on a tmpfs of its own (`mount_tmpfs`: root only).

mod common;

use common::hogs::Hogs;
use common::{info_field, mount_tmpfs, serve_in, temp_dir, wait_snapshot_end};
use redis::Connection;

const VALUES: usize = 6;
const VALUE_BYTES: usize = 1 << 20;

/// Bytes no compression shrinks much, different for each `seed`.
fn value(seed: u64) -> Vec<u8> {
    let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    (0..VALUE_BYTES)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        })
        .collect()
}

fn error_of(c: &mut Connection, cmd: &redis::Cmd) -> String {
    cmd.query::<redis::Value>(c)
        .map(|v| format!("no error: {v:?}"))
        .unwrap_or_else(|e| e.to_string())
}

/// BGSAVE on the full file system: it fails, and leaves no partial file.
fn failing_bgsave(c: &mut Connection, data: &std::path::Path) {
    let r: String = redis::cmd("BGSAVE").query(c).unwrap();
    assert_eq!(r, "Background saving started");
    wait_snapshot_end(c);
    assert_eq!(info_field(c, "rdb_last_bgsave_status"), "err");
    let left: Vec<_> = std::fs::read_dir(data)
        .unwrap()
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with("snapshot"))
        .collect();
    assert!(left.is_empty(), "a failed snapshot left {left:?}");
}

/// What a refused write looks like, command by command.
fn writes_refused(c: &mut Connection) {
    let set = error_of(c, redis::cmd("SET").arg("refused").arg(1));
    assert!(
        set.contains("MISCONF") && set.contains("stop-writes-on-bgsave-error"),
        "{set}"
    );
    let ping = error_of(c, &redis::cmd("PING"));
    assert!(ping.contains("MISCONF"), "{ping}");
    // A write inside MULTI dooms the transaction.
    let _: () = redis::cmd("MULTI").query(c).unwrap();
    let queued = error_of(c, redis::cmd("SET").arg("refused").arg(1));
    assert!(queued.contains("MISCONF"), "{queued}");
    let exec = error_of(c, &redis::cmd("EXEC"));
    assert!(exec.contains("Transaction discarded"), "{exec}");
    // A script's write, and a script that may write.
    let eval = error_of(
        c,
        redis::cmd("EVAL")
            .arg("return redis.call('set', KEYS[1], 1)")
            .arg(1)
            .arg("refused"),
    );
    assert!(eval.contains("MISCONF"), "{eval}");
    let flagged = error_of(
        c,
        redis::cmd("EVAL")
            .arg("#!lua\nreturn redis.call('set', KEYS[1], 1)")
            .arg(1)
            .arg("refused"),
    );
    assert!(flagged.contains("MISCONF"), "{flagged}");
    // Reads go on, a read-only script's included.
    let v: Vec<u8> = redis::cmd("GET").arg("v0").query(c).unwrap();
    assert_eq!(v, value(0));
    let n: usize = redis::cmd("EVAL")
        .arg("#!lua flags=no-writes\nreturn redis.call('strlen', KEYS[1])")
        .arg(1)
        .arg("v1")
        .query(c)
        .unwrap();
    assert_eq!(n, VALUE_BYTES);
    let exists: bool = redis::cmd("EXISTS").arg("refused").query(c).unwrap();
    assert!(!exists, "a refused write was applied");
    // The journal itself is fine: the refusal is the snapshot's.
    assert_eq!(info_field(c, "aof_last_write_status"), "ok");
}

#[test]
fn a_snapshot_that_fills_the_disk_stops_writes_until_one_succeeds() {
    let test = "a_snapshot_that_fills_the_disk_stops_writes_until_one_succeeds";
    let dir = temp_dir("snapfail");
    let Some(_mounted) = mount_tmpfs(&dir, "16m", test) else {
        return;
    };
    let data = dir.join("data");
    let p = serve_in(&data, &["--save", "3600 1"]);
    let mut c = p.client();
    for i in 0..VALUES {
        let _: () = redis::cmd("SET")
            .arg(format!("v{i}"))
            .arg(value(i as u64))
            .query(&mut c)
            .unwrap();
    }
    // About 6 MiB in the journal; leave about 3 MiB free, less than a snapshot needs.
    std::fs::write(dir.join("filler"), vec![1u8; 6 << 20]).unwrap();
    failing_bgsave(&mut c, &data);
    assert!(
        common::logged(&p, "No space left"),
        "the log names the cause"
    );
    writes_refused(&mut c);
    // SAVE fails as an ERR that says why; SHUTDOWN, which must save, refuses to exit.
    let save = redis::cmd("SAVE").query::<()>(&mut c).unwrap_err();
    assert_eq!(save.kind(), redis::ErrorKind::ResponseError, "{save}");
    assert!(save.to_string().contains("No space left"), "{save}");
    let shutdown = error_of(&mut c, &redis::cmd("SHUTDOWN"));
    assert!(shutdown.contains("Errors trying to SHUTDOWN"), "{shutdown}");
    let n: usize = redis::cmd("DBSIZE").query(&mut c).unwrap();
    assert_eq!(n, VALUES);

    // Again on a machine whose cores are all busy: the snapshot's own thread then
    // captures and writes beside its starved walker, and a failure is the same.
    let hogs = Hogs::start();
    failing_bgsave(&mut c, &data);
    drop(hogs);
    writes_refused(&mut c);

    // The switch is live.
    let _: () = redis::cmd("CONFIG")
        .arg("SET")
        .arg("stop-writes-on-bgsave-error")
        .arg("no")
        .query(&mut c)
        .unwrap();
    let _: () = redis::cmd("SET")
        .arg("during")
        .arg("allowed")
        .query(&mut c)
        .unwrap();
    let _: () = redis::cmd("CONFIG")
        .arg("SET")
        .arg("stop-writes-on-bgsave-error")
        .arg("yes")
        .query(&mut c)
        .unwrap();
    let set = error_of(&mut c, redis::cmd("SET").arg("refused").arg(1));
    assert!(set.contains("MISCONF"), "{set}");

    // Room again: a snapshot succeeds and writes resume.
    std::fs::remove_file(dir.join("filler")).unwrap();
    let _: String = redis::cmd("BGSAVE").query(&mut c).unwrap();
    wait_snapshot_end(&mut c);
    assert_eq!(info_field(&mut c, "rdb_last_bgsave_status"), "ok");
    // (The SHUTDOWN's snapshot, which would have ended the journal, failed as a rewrite.)
    assert_eq!(info_field(&mut c, "aof_last_bgrewrite_status"), "err");
    let _: () = redis::cmd("SET")
        .arg("after")
        .arg("allowed")
        .query(&mut c)
        .unwrap();

    // Nothing acknowledged was lost along the way.
    drop(p); // SIGKILL
    let p = serve_in(&data, &["--save", "3600 1"]);
    let mut c = p.client();
    for i in 0..VALUES {
        let v: Vec<u8> = redis::cmd("GET")
            .arg(format!("v{i}"))
            .query(&mut c)
            .unwrap();
        assert!(v == value(i as u64), "v{i} differs after the restart");
    }
    for k in ["during", "after"] {
        let v: Option<String> = redis::cmd("GET").arg(k).query(&mut c).unwrap();
        assert_eq!(v.as_deref(), Some("allowed"), "{k}");
    }
    let n: usize = redis::cmd("DBSIZE").query(&mut c).unwrap();
    assert_eq!(n, VALUES + 2);
}
