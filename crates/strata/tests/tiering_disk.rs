//! The tier's file system filling up: spills stop short of a full disk, and when another
//! process fills it anyway, the server keeps serving and loses nothing. Each test runs on a
//! tmpfs of its own (`mount_tmpfs`: root only; elsewhere the test says it skipped).

mod common;
use common::{serve_in, temp_dir, tiering_field, Rng};
use std::path::PathBuf;

/// A data directory, a tier directory on a 320 MB tmpfs of its own, and the options of a
/// server tiering into it under `maxmemory 4mb` (None when no tmpfs can be mounted;
/// `mount_tmpfs` says so).
struct TierFs {
    data: PathBuf,
    tier_dir: PathBuf,
    args: Vec<String>,
    _mounted: common::Tmpfs,
}

fn tier_on_tmpfs(name: &str, test: &str) -> Option<TierFs> {
    let dir = temp_dir(name);
    let tier_dir = dir.join("tier");
    let mounted = common::mount_tmpfs(&tier_dir, "320m", test)?;
    let tier = tier_dir.to_str().unwrap();
    let args = [
        "--maxmemory",
        "4mb",
        "--tiering",
        "yes",
        "--tiering-dir",
        tier,
    ];
    Some(TierFs {
        data: dir.join("data"),
        args: args.iter().map(|a| a.to_string()).collect(),
        tier_dir,
        _mounted: mounted,
    })
}

impl TierFs {
    fn serve(&self, extra: &[&str]) -> common::Proc {
        let mut args: Vec<&str> = self.args.iter().map(String::as_str).collect();
        args.extend_from_slice(extra);
        serve_in(&self.data, &args)
    }
}

/// SET k`i` to `value(i)`.
fn set(c: &mut redis::Connection, i: u64) -> redis::RedisResult<()> {
    redis::cmd("SET")
        .arg(format!("k{i}"))
        .arg(value(i))
        .query(c)
}

/// 8000 bytes the store cannot compress, different for each `i`.
fn value(i: u64) -> Vec<u8> {
    let mut r = Rng(i * 7919 + 1);
    (0..1000).flat_map(|_| r.next().to_le_bytes()).collect()
}

/// A tier on a file system that fills: spills stop short of the end (a store that meets a
/// full disk takes no more writes until reopened), the eviction policy applies instead
/// (noeviction: writes refused with OOM), reads and deletes of cold keys keep working,
/// and a restart on the same nearly full file system loses nothing.
#[test]
fn a_tier_on_a_filling_file_system_stops_short_of_it() {
    let test = "a_tier_on_a_filling_file_system_stops_short_of_it";
    let Some(fs) = tier_on_tmpfs("tiering-fs-full", test) else {
        return;
    };
    let extra = [
        "--appendfsync",
        "everysec",
        "--maxmemory-policy",
        "noeviction",
    ];
    let s = fs.serve(&extra);
    let mut c = s.client();
    let mut acked = 0;
    let refused = loop {
        assert!(acked < 40_000, "320 MB written and nothing refused");
        match set(&mut c, acked) {
            Ok(()) => acked += 1,
            Err(e) => break e,
        }
    };
    assert_eq!(refused.code(), Some("OOM"), "{refused}");
    // Thousands went to the tier before it stopped, and the store never met the full disk.
    assert!(tiering_field(&mut c, "cold_keys") > 5000);
    assert_eq!(tiering_field(&mut c, "tier_errors"), 0);
    let log = s.log.lock().unwrap().join("\n");
    assert!(log.contains("kept for the store's flushes"), "{log}");
    // Cold keys read back whole (about a hundred), and deleting hot keys lets writes in
    // again.
    for i in (0..acked).step_by((acked as usize / 100).max(1)) {
        let v: Vec<u8> = redis::cmd("GET")
            .arg(format!("k{i}"))
            .query(&mut c)
            .unwrap();
        assert!(v == value(i), "k{i}");
    }
    // The first keys are cold, the last hot.
    const HOT_GONE: u64 = 400;
    let gone: Vec<u64> = (0..20).chain(acked - HOT_GONE..acked).collect();
    let keys: Vec<String> = gone.iter().map(|i| format!("k{i}")).collect();
    let n: u64 = redis::cmd("DEL").arg(&keys).query(&mut c).unwrap();
    assert_eq!(n, 20 + HOT_GONE);
    let _: () = redis::cmd("SET")
        .arg("after")
        .arg("1")
        .query(&mut c)
        .unwrap();
    // Reads bring back more than the budget holds (600 keys of 8000 bytes against 4mb).
    // The full tier takes nothing new, but these copies are its own: they leave RAM
    // again for nothing, and a write is let in (it was refused while they stayed).
    let read_back = 100..700;
    for i in read_back.clone() {
        let v: Vec<u8> = redis::cmd("GET")
            .arg(format!("k{i}"))
            .query(&mut c)
            .unwrap();
        assert!(v == value(i), "k{i}");
    }
    let _: () = redis::cmd("SET")
        .arg("after-reads")
        .arg("1")
        .query(&mut c)
        .unwrap();
    // What maxmemory bounds with tiering on (the store's caches are outside it).
    let hot = tiering_field(&mut c, "hot_bytes");
    assert!(hot <= 4 << 20, "hot_bytes {hot} over maxmemory 4mb");
    for i in read_back.step_by(50) {
        let v: Vec<u8> = redis::cmd("GET")
            .arg(format!("k{i}"))
            .query(&mut c)
            .unwrap();
        assert!(v == value(i), "k{i} after its copy left RAM");
    }
    // The restart refills the tier from the journal, on the same file system.
    let _ = redis::cmd("SHUTDOWN").query::<()>(&mut c);
    drop(c);
    drop(s);
    let s = fs.serve(&extra);
    let mut c = s.client();
    let n: u64 = redis::cmd("DBSIZE").query(&mut c).unwrap();
    assert_eq!(n, acked - 20 - HOT_GONE + 2);
    for i in (20..acked - HOT_GONE).step_by(101) {
        let v: Vec<u8> = redis::cmd("GET")
            .arg(format!("k{i}"))
            .query(&mut c)
            .unwrap();
        assert!(v == value(i), "k{i}");
    }
    assert_eq!(tiering_field(&mut c, "tier_errors"), 0);
    drop(c);
    drop(s);
    let _ = std::fs::remove_dir_all(&fs.data);
}

/// Another process fills the tier's file system after entries moved there: the store's
/// next write fails (a DEL of a cold key must delete its record). The server stays up:
/// the DELs are carried out (their records read as gone), cold keys still read, the tier
/// takes no more entries (noeviction then refuses writes that need memory), and neither
/// a snapshot nor a restart brings a deleted key back.
#[test]
fn a_tier_whose_disk_another_process_fills_keeps_serving() {
    let test = "a_tier_whose_disk_another_process_fills_keeps_serving";
    let Some(fs) = tier_on_tmpfs("tiering-fs-filled", test) else {
        return;
    };
    let s = fs.serve(&[]);
    let mut c = s.client();
    let n = 3_000u64;
    for i in 0..n {
        set(&mut c, i).unwrap();
    }
    let cold = tiering_field(&mut c, "cold_keys");
    assert!(cold > 2000, "only {cold} cold keys");
    // Fill what is left of the file system.
    {
        use std::io::Write;
        let mut f = std::fs::File::create(fs.tier_dir.join("filler")).unwrap();
        let chunk = vec![7u8; 1 << 20];
        while f.write_all(&chunk).and_then(|()| f.flush()).is_ok() {}
    }
    // The first keys written are cold: delete every other one of the first 2000.
    for i in (0..2000).step_by(2) {
        let d: u64 = redis::cmd("DEL")
            .arg(format!("k{i}"))
            .query(&mut c)
            .unwrap();
        assert_eq!(d, 1, "k{i}");
    }
    assert!(
        tiering_field(&mut c, "tier_errors") > 0,
        "no store write failed"
    );
    assert_eq!(tiering_field(&mut c, "tier_write_failed"), 1);
    let check = |c: &mut redis::Connection| {
        for i in (0..2000).step_by(7) {
            let v: Option<Vec<u8>> = redis::cmd("GET").arg(format!("k{i}")).query(c).unwrap();
            if i % 2 == 0 {
                assert_eq!(v, None, "deleted k{i} is back");
            } else {
                assert!(v == Some(value(i)), "k{i}");
            }
        }
    };
    check(&mut c);
    // The tier takes nothing more: under noeviction, a write that needs memory is refused.
    let e = set(&mut c, n).unwrap_err();
    assert_eq!(e.code(), Some("OOM"), "{e}");
    let _: () = redis::cmd("SAVE").query(&mut c).unwrap();
    check(&mut c);
    drop(c);
    drop(s);
    // Restart with room again: the snapshot holds no deleted key.
    std::fs::remove_file(fs.tier_dir.join("filler")).unwrap();
    let s = fs.serve(&[]);
    let mut c = s.client();
    check(&mut c);
    assert_eq!(tiering_field(&mut c, "tier_write_failed"), 0);
    drop(c);
    drop(s);
    let _ = std::fs::remove_dir_all(&fs.data);
}
