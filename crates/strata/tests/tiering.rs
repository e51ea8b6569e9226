//! Tiering (`tiering yes`): with a `maxmemory` far below the data, entries of every type
//! move to the on-disk tier and back all the time; every command must see what a server
//! holding everything in memory sees, and a SIGKILL must lose nothing acknowledged.

mod common;
use common::model::{all_keys, contents, dataset, random_command, run};
use common::{
    serve_in, set_many, strata, temp_dir, tiered, tiering_field, tiering_value, Proc, Rng, TIERED,
};

/// Cold reads deferred to the blocking pool first (`tiering-inline-read-us 0`): the
/// commands waited for them.
#[test]
fn every_command_sees_what_an_in_memory_server_sees_with_reads_deferred() {
    assert!(sees_what_memory_sees("0") > 0);
}

/// Cold reads in place (the store's reads always count as fast): none waited.
#[test]
fn every_command_sees_what_an_in_memory_server_sees_with_reads_in_place() {
    assert_eq!(sees_what_memory_sees("100000000"), 0);
}

/// Runs the model comparison with `tiering-inline-read-us` set to `inline_read_us`;
/// returns how many commands waited for a cold read.
fn sees_what_memory_sees(inline_read_us: &str) -> u64 {
    let tiered = tiered(&[
        "--enable-debug-command",
        "yes",
        "--tiering-inline-read-us",
        inline_read_us,
    ]);
    let plain = strata(&["--enable-debug-command", "yes"]);
    let (mut t, mut p) = (tiered.client(), plain.client());
    let mut r = Rng(0x5eed_7113);
    for i in 0..6000 {
        let args = random_command(&mut r);
        let (a, b) = (run(&mut t, &args), run(&mut p, &args));
        assert_eq!(a, b, "command {i}: {:?}", String::from_utf8_lossy(&args[0]));
    }
    // Entries moved both ways, and the data is larger than maxmemory.
    assert!(tiering_field(&mut t, "moved_to_disk") > 100);
    assert!(tiering_field(&mut t, "moved_to_ram") > 100);
    assert!(tiering_field(&mut t, "cold_keys") > 0);
    let waited = tiering_field(&mut t, "cold_reads_waited");
    let hot: u64 = tiering_field(&mut t, "hot_bytes");
    assert!(
        hot <= 1024 * 1024 + 64 * 1024,
        "hot bytes {hot} over maxmemory"
    );
    // The whole keyspace, key by key.
    let keys = all_keys(&mut p);
    assert_eq!(all_keys(&mut t), keys);
    let size = |c: &mut redis::Connection| redis::cmd("DBSIZE").query::<u64>(c).unwrap();
    assert_eq!(size(&mut t), size(&mut p));
    for k in &keys {
        assert_eq!(contents(&mut t, k), contents(&mut p, k), "key {k}");
    }
    // SCAN visits every key, cold ones included.
    let mut scanned = Vec::new();
    let mut cursor = 0u64;
    loop {
        let (next, mut batch): (u64, Vec<String>) = redis::cmd("SCAN")
            .arg(cursor)
            .arg("COUNT")
            .arg(50)
            .query(&mut t)
            .unwrap();
        scanned.append(&mut batch);
        if next == 0 {
            break;
        }
        cursor = next;
    }
    scanned.sort();
    scanned.dedup();
    assert_eq!(scanned, keys);
    // The whole data set's digest, cold entries read in place: push most back out first.
    for i in 0..300 {
        let filler = vec![b'q'; 4000];
        let _: () = redis::cmd("SET")
            .arg(format!("q{i}"))
            .arg(&filler)
            .query(&mut t)
            .unwrap();
        let _: () = redis::cmd("SET")
            .arg(format!("q{i}"))
            .arg(&filler)
            .query(&mut p)
            .unwrap();
    }
    assert!(tiering_field(&mut t, "cold_keys") > 200);
    let digest = |c: &mut redis::Connection| {
        redis::cmd("DEBUG")
            .arg("DIGEST")
            .query::<String>(c)
            .unwrap()
    };
    assert_eq!(digest(&mut t), digest(&mut p));
    waited
}

#[test]
fn flushdb_swapdb_and_randomkey_reach_cold_keys() {
    let s = tiered(&[]);
    let mut c = s.client();
    let big = vec![b'z'; 8000];
    set_many(&mut c, "a", 400, &big);
    let cold = tiering_field(&mut c, "cold_keys");
    assert!(cold > 200, "only {cold} cold keys");
    assert!(tiering_field(&mut c, "cold_filter_bytes") > 0);
    // RANDOMKEY returns keys whichever tier holds them.
    for _ in 0..20 {
        let k: String = redis::cmd("RANDOMKEY").query(&mut c).unwrap();
        assert!(k.starts_with('a'));
    }
    let _: () = redis::cmd("SWAPDB").arg(0).arg(1).query(&mut c).unwrap();
    let n: u64 = redis::cmd("DBSIZE").query(&mut c).unwrap();
    assert_eq!(n, 0);
    let _: () = redis::cmd("SELECT").arg(1).query(&mut c).unwrap();
    let n: u64 = redis::cmd("DBSIZE").query(&mut c).unwrap();
    assert_eq!(n, 400);
    for i in (0..400).step_by(37) {
        let v: Vec<u8> = redis::cmd("GET")
            .arg(format!("a{i}"))
            .query(&mut c)
            .unwrap();
        assert_eq!(v, big);
    }
    let _: () = redis::cmd("FLUSHDB").query(&mut c).unwrap();
    let n: u64 = redis::cmd("DBSIZE").query(&mut c).unwrap();
    assert_eq!(n, 0);
    assert_eq!(tiering_field(&mut c, "cold_keys"), 0);
    assert_eq!(tiering_field(&mut c, "cold_filter_bytes"), 0);
    let v: Option<Vec<u8>> = redis::cmd("GET").arg("a5").query(&mut c).unwrap();
    assert_eq!(v, None);
}

/// SIGKILL under `appendfsync always` while entries move between tiers, across a
/// snapshot taken in the middle: every acknowledged INCR, RPUSH and MULTI group is there
/// after the restart, none twice, and the cold values are the snapshot's and journal's.
#[test]
fn sigkill_while_entries_move_loses_nothing() {
    let dir = temp_dir("tiering-kill");
    let args = TIERED;
    let s = serve_in(&dir, &args);
    let mut c = s.client();
    let filler = vec![b'f'; 6000];
    let mut counts = [0i64; 20];
    let mut lists = [0i64; 20];
    for round in 0..1500i64 {
        let i = (round % 20) as usize;
        let n: i64 = redis::cmd("INCR")
            .arg(format!("ctr{i}"))
            .query(&mut c)
            .unwrap();
        counts[i] += 1;
        assert_eq!(n, counts[i]);
        let _: i64 = redis::cmd("RPUSH")
            .arg(format!("seq{i}"))
            .arg(lists[i])
            .query(&mut c)
            .unwrap();
        lists[i] += 1;
        let _: () = redis::pipe()
            .atomic()
            .cmd("SET")
            .arg(format!("pair{i}:a"))
            .arg(round)
            .cmd("SET")
            .arg(format!("pair{i}:b"))
            .arg(round)
            .query(&mut c)
            .unwrap();
        // Filler pushes the counters and lists out to the tier again and again.
        let _: () = redis::cmd("SET")
            .arg(format!("fill{}", round % 300))
            .arg(&filler)
            .query(&mut c)
            .unwrap();
        if round == 700 {
            let _: () = redis::cmd("BGSAVE").query(&mut c).unwrap();
        }
    }
    // Entries left the tier all along: read back for the INCRs and RPUSHes, or replaced
    // unread by the SETs (most of the filler's).
    let back = tiering_field(&mut c, "moved_to_ram");
    let replaced = tiering_field(&mut c, "cold_replaced_unread");
    assert!(
        back + replaced > 100,
        "{back} read back, {replaced} replaced"
    );
    // Dropping the Proc is a SIGKILL.
    drop(c);
    drop(s);
    let s2 = serve_in(&dir, &args);
    let mut c = s2.client();
    for i in 0..20 {
        let n: i64 = redis::cmd("GET")
            .arg(format!("ctr{i}"))
            .query(&mut c)
            .unwrap();
        assert_eq!(n, counts[i], "ctr{i}");
        let seq: Vec<i64> = redis::cmd("LRANGE")
            .arg(format!("seq{i}"))
            .arg(0)
            .arg(-1)
            .query(&mut c)
            .unwrap();
        assert_eq!(seq, (0..lists[i]).collect::<Vec<_>>(), "seq{i}");
        let a: i64 = redis::cmd("GET")
            .arg(format!("pair{i}:a"))
            .query(&mut c)
            .unwrap();
        let b: i64 = redis::cmd("GET")
            .arg(format!("pair{i}:b"))
            .query(&mut c)
            .unwrap();
        assert_eq!(a, b, "pair{i}");
    }
    let n: u64 = redis::cmd("DBSIZE").query(&mut c).unwrap();
    assert_eq!(n, 20 * 4 + 300);
    // The restart spilled what did not fit, as the live server had.
    assert!(tiering_field(&mut c, "cold_keys") > 0);
    let f: Vec<u8> = redis::cmd("GET").arg("fill7").query(&mut c).unwrap();
    assert_eq!(f, filler);
    drop(s2);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn expired_cold_keys_go_by_the_background_pass() {
    let s = tiered(&["--hz", "50"]);
    let mut c = s.client();
    let big = vec![b'e'; 8000];
    for i in 0..300 {
        let _: () = redis::cmd("SET")
            .arg(format!("t{i}"))
            .arg(&big)
            .arg("PX")
            .arg(1500)
            .query(&mut c)
            .unwrap();
    }
    assert!(tiering_field(&mut c, "cold_keys") > 150);
    // Nothing reads them: only the background pass can remove the cold ones.
    let end = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while redis::cmd("DBSIZE").query::<u64>(&mut c).unwrap() != 0 {
        assert!(std::time::Instant::now() < end, "expired cold keys stayed");
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    assert_eq!(tiering_field(&mut c, "cold_keys"), 0);
    let info: String = redis::cmd("INFO").arg("stats").query(&mut c).unwrap();
    assert!(info.contains("expired_keys:300"), "{info}");
}

/// Once the tier takes `tiering-max-disk`, the eviction policy applies as without
/// tiering: allkeys-lru deletes, noeviction refuses writes. (The store's journal takes
/// 64 MiB from the start, so a limit of 64mb is reached at once.)
#[test]
fn a_full_tier_falls_back_to_the_eviction_policy() {
    let big = vec![b'd'; 8000];
    let s = tiered(&["--tiering-max-disk", "64mb"]);
    let mut c = s.client();
    set_many(&mut c, "d", 300, &big);
    assert_eq!(tiering_field(&mut c, "cold_keys"), 0);
    let info: String = redis::cmd("INFO").arg("stats").query(&mut c).unwrap();
    let evicted: u64 = info
        .lines()
        .find_map(|l| l.strip_prefix("evicted_keys:"))
        .and_then(|v| v.trim().parse().ok())
        .unwrap();
    assert!(evicted > 100, "{info}");

    let s = strata(&[
        "--maxmemory",
        "1mb",
        "--tiering",
        "yes",
        "--tiering-max-disk",
        "64mb",
    ]);
    let mut c = s.client();
    let refused = (0..300).find_map(|i| {
        redis::cmd("SET")
            .arg(format!("d{i}"))
            .arg(&big)
            .query::<()>(&mut c)
            .err()
    });
    let e = refused.expect("a write must be refused once nothing can go");
    assert_eq!(e.code(), Some("OOM"), "{e}");
}

/// The store's write buffers are flushed to disk as they fill: writing several times their
/// bound through the tier leaves them within it. (With one fjall worker they once stopped
/// flushing under a release build's load and grew with the data; this debug-build test
/// does not reach that timing, scripts/bench-tiering.sh did.)
#[test]
fn the_tier_write_buffers_stay_bounded() {
    let s = tiered(&[]);
    let mut c = s.client();
    let big = vec![b'w'; 4000];
    for chunk in 0..240 {
        let mut p = redis::pipe();
        for i in 0..250 {
            p.cmd("SET").arg(format!("w{chunk}:{i}")).arg(&big).ignore();
        }
        let _: () = p.query(&mut c).unwrap();
    }
    // 240 MB written; the bound on all write buffers is 64 MiB (docs/tiering.md).
    let end = std::time::Instant::now() + std::time::Duration::from_secs(20);
    loop {
        let used = tiering_field(&mut c, "tier_write_buffers_used");
        if used <= 72 << 20 {
            break;
        }
        assert!(
            std::time::Instant::now() < end,
            "write buffers at {used} bytes"
        );
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    let cold: u64 = tiering_field(&mut c, "cold_keys");
    assert!(cold > 45_000);
    // What stays in RAM per cold key to rule out keys the store lacks: a few bytes.
    let filters: u64 = tiering_field(&mut c, "cold_filter_bytes");
    assert!(filters > 0 && filters < cold * 16, "{filters} bytes");
    // With the store's pinned blocks, per cold key: the filters and blocks, and no more.
    let pinned: u64 = tiering_field(&mut c, "tier_pinned_bytes");
    let index: f64 = tiering_value(&mut c, "cold_key_index_ram");
    let expected = (filters + pinned) as f64 / cold as f64;
    assert!(
        index > 0.0 && (index - expected).abs() <= expected / 20.0 + 0.1,
        "{index} bytes a cold key, {expected} from the fields"
    );
    // The store wrote its records at least once (its journal), plus its flushes.
    let amplification: f64 = tiering_value(&mut c, "tier_write_amplification");
    assert!(amplification > 1.0, "write amplification {amplification}");
}

/// The tier directory is emptied at every start, so a `tiering-dir` that holds anything but
/// a tier is refused, and its files are left alone.
#[test]
fn a_tiering_dir_with_other_files_is_refused() {
    let dir = temp_dir("tiering-foreign");
    let tier = dir.join("mine");
    std::fs::create_dir_all(&tier).unwrap();
    std::fs::write(tier.join("notes.txt"), b"keep me").unwrap();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_strata"))
        .args(["serve", "--port", "0", "--tiering", "yes", "--tiering-dir"])
        .arg(&tier)
        .arg("--dir")
        .arg(dir.join("data"))
        .output()
        .unwrap();
    assert!(!out.status.success());
    let text =
        String::from_utf8_lossy(&out.stdout).to_string() + &String::from_utf8_lossy(&out.stderr);
    assert!(text.contains("refusing to empty it"), "{text}");
    assert_eq!(std::fs::read(tier.join("notes.txt")).unwrap(), b"keep me");
    let _ = std::fs::remove_dir_all(&dir);
}

/// An RDB file from redis-server several times `maxmemory`, loaded with `--rdb-import`:
/// the entries spill to the tier as they load, and every key reads back as Redis has it.
#[test]
fn an_rdb_import_larger_than_maxmemory_spills_to_the_tier() {
    let dir = temp_dir("tier-rdb-import");
    let rdb_dir = dir.join("redis");
    std::fs::create_dir_all(&rdb_dir).unwrap();
    let r = common::redis(&["--dir", rdb_dir.to_str().unwrap()]);
    let mut rc = r.client();
    let mut p = redis::pipe();
    for i in 0..1500 {
        let value = format!("{i:04}").repeat(500);
        p.cmd("SET").arg(format!("s{i}")).arg(value).ignore();
        if i % 10 == 0 {
            p.cmd("RPUSH")
                .arg(format!("l{i}"))
                .arg(i)
                .arg("x".repeat(300))
                .ignore();
            p.cmd("HSET").arg(format!("h{i}")).arg("f").arg(i).ignore();
            p.cmd("EXPIRE").arg(format!("h{i}")).arg(3600).ignore();
        }
    }
    let _: () = p.query(&mut rc).unwrap();
    let _: () = redis::cmd("SAVE").query(&mut rc).unwrap();
    let file = rdb_dir.join("dump.rdb");
    let mut args = TIERED.to_vec();
    args.extend(["--rdb-import", file.to_str().unwrap()]);
    let s = serve_in(&dir.join("strata"), &args);
    let mut c = s.client();
    let keys = all_keys(&mut rc);
    assert_eq!(all_keys(&mut c), keys);
    // Loading spills as it goes; under a loaded machine the last of it may be left to the
    // background eviction, which must bring the hot bytes within maxmemory (1 MiB, a
    // sixteenth loose) soon.
    let end = std::time::Instant::now() + std::time::Duration::from_secs(20);
    while tiering_field(&mut c, "hot_bytes") > (1 << 20) * 17 / 16 {
        assert!(
            std::time::Instant::now() < end,
            "hot bytes stay over maxmemory"
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let cold = tiering_field(&mut c, "cold_keys");
    assert!(cold > 1000, "only {cold} cold keys");
    for key in &keys {
        assert_eq!(contents(&mut c, key), contents(&mut rc, key), "{key}");
    }
}

/// SHUTDOWN (which saves a snapshot: save rules are set) or SHUTDOWN NOSAVE.
fn shut_down(mut s: Proc, c: &mut redis::Connection, how: &[&str]) {
    let _ = redis::cmd("SHUTDOWN").arg(how).query::<()>(c);
    assert!(s.wait_exit(std::time::Duration::from_secs(30)), "SHUTDOWN");
}

/// Waits for the hot entries to fit `maxmemory` (1 MiB; commands let them run a
/// sixteenth over while the background eviction catches up), then gives the number of
/// cold keys: what a clean exit now keeps, and the restart finds without a write.
fn settled_cold(c: &mut redis::Connection) -> u64 {
    let end = std::time::Instant::now() + std::time::Duration::from_secs(20);
    while tiering_field(c, "hot_bytes") > 1 << 20 {
        assert!(
            std::time::Instant::now() < end,
            "hot bytes stay over maxmemory"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    tiering_field(c, "cold_keys")
}

/// The start kept the tier: it wrote nothing to it, and found `cold` keys there.
fn kept_the_tier(c: &mut redis::Connection, cold: u64) {
    assert_eq!(tiering_field(c, "tier_bytes_written"), 0);
    assert_eq!(tiering_field(c, "moved_to_disk"), 0);
    assert_eq!(tiering_field(c, "cold_keys"), cold);
}

#[test]
fn a_clean_shutdown_keeps_the_tier_and_a_kill_has_it_checked() {
    let dir = temp_dir("tiering-kept");
    let s = serve_in(&dir, &TIERED);
    let mut c = s.client();
    let mut r = Rng(0x06e5_7a27);
    for _ in 0..3000 {
        run(&mut c, &random_command(&mut r));
    }
    // Reading every key leaves clean copies (in RAM and in the tier) besides cold keys.
    let before = dataset(&mut c);
    let cold = settled_cold(&mut c);
    assert!(cold > 100, "{cold} cold keys");
    shut_down(s, &mut c, &[]);

    // The restart takes the tier as the exit left it: nothing written to it, every cold key
    // still there. An exit without a snapshot keeps it again while nothing touched it.
    let s = serve_in(&dir, &TIERED);
    let mut c = s.client();
    kept_the_tier(&mut c, cold);
    shut_down(s, &mut c, &["NOSAVE"]);
    let s = serve_in(&dir, &TIERED);
    let mut c = s.client();
    kept_the_tier(&mut c, cold);
    assert_eq!(dataset(&mut c), before);
    // It serves as before: writes to cold and clean keys, deletes, spills.
    for _ in 0..1500 {
        run(&mut c, &random_command(&mut r));
    }
    assert!(tiering_field(&mut c, "moved_to_disk") > 0);
    let after = dataset(&mut c);
    drop(c);
    // A SIGKILL: no exit kept the tier, so the next start checks it against the
    // snapshot (tests/tiering_crash.rs), then replays the journal.
    drop(s);
    let s = serve_in(&dir, &TIERED);
    let mut c = s.client();
    assert_eq!(tiering_value::<String>(&mut c, "tier_start"), "checked");
    assert!(tiering_field(&mut c, "tier_start_matched") > 0);
    assert_eq!(dataset(&mut c), after);
    drop(s);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_rebuilt_tier_takes_what_does_not_fit_before_the_first_reply() {
    let dir = temp_dir("tiering-rebuild");
    let s = serve_in(&dir, &TIERED);
    let mut c = s.client();
    let value = vec![b'r'; 1000];
    let mut pipe = redis::pipe();
    for i in 0..20_000 {
        pipe.cmd("SET").arg(format!("r{i}")).arg(&value).ignore();
    }
    let _: () = pipe.query(&mut c).unwrap();
    let _: () = redis::cmd("SAVE").query(&mut c).unwrap();
    drop(c);
    // A SIGKILL, and no ORIGIN file to say how the store was filed (as from a version
    // that wrote none): the start rebuilds the tier, and has spilled what does not fit by
    // the time it answers (a load is not bounded by one eviction call's time).
    drop(s);
    std::fs::remove_file(dir.join("tier").join("ORIGIN")).unwrap();
    let s = serve_in(&dir, &TIERED);
    let mut c = s.client();
    assert_eq!(tiering_value::<String>(&mut c, "tier_start"), "rebuilt");
    let hot = tiering_field(&mut c, "hot_bytes");
    assert!(
        hot <= 1024 * 1024 + 64 * 1024,
        "hot bytes {hot} over maxmemory"
    );
    assert_eq!(redis::cmd("DBSIZE").query::<u64>(&mut c).unwrap(), 20_000);
    let v: Vec<u8> = redis::cmd("GET").arg("r7").query(&mut c).unwrap();
    assert_eq!(v, value);
    drop(s);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn kept_tiers_across_restarts_hold_what_memory_holds() {
    let dir = temp_dir("tiering-kept-model");
    let plain = strata(&[]);
    let mut p = plain.client();
    let mut r = Rng(0x0bad_5eed);
    let mut cold = 0;
    for cycle in 0..3 {
        let s = serve_in(&dir, &TIERED);
        let mut t = s.client();
        if cycle > 0 {
            kept_the_tier(&mut t, cold);
            assert_eq!(dataset(&mut t), dataset(&mut p), "cycle {cycle}");
        }
        for i in 0..1000 {
            let args = random_command(&mut r);
            let (a, b) = (run(&mut t, &args), run(&mut p, &args));
            assert_eq!(a, b, "cycle {cycle}, command {i}");
        }
        cold = settled_cold(&mut t);
        shut_down(s, &mut t, &[]);
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// `strata check DIR`: whether it succeeded, and what it printed.
fn check(dir: &std::path::Path) -> (bool, String) {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_strata"))
        .arg("check")
        .arg(dir)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout).to_string();
    (
        out.status.success(),
        text + &String::from_utf8_lossy(&out.stderr),
    )
}

#[test]
fn strata_check_reads_a_kept_tier_and_leaves_a_crashed_one_to_the_start() {
    let dir = temp_dir("tiering-check");
    let s = serve_in(&dir, &TIERED);
    let mut c = s.client();
    let mut r = Rng(0x0c4e_c4ed);
    for _ in 0..3000 {
        run(&mut c, &random_command(&mut r));
    }
    let cold = tiering_field(&mut c, "cold_keys");
    assert!(cold > 100, "{cold} cold keys");
    shut_down(s, &mut c, &[]);

    // Kept: every cold entry (and clean copy) is read from the store against the snapshot.
    let (ok, text) = check(&dir);
    assert!(ok, "{text}");
    let line = text.lines().find(|l| l.starts_with("tier ")).unwrap_or("");
    assert!(
        line.contains("kept for the newest snapshot") && line.ends_with("OK"),
        "{text}"
    );
    let checked: u64 = line
        .split("snapshot, ")
        .nth(1)
        .and_then(|rest| rest.split(' ').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or(0);
    assert!(checked >= cold, "{checked} checked, {cold} cold: {text}");

    // A kept tier whose store is gone: the next start would serve the cold keys from an
    // empty store. Every one is reported missing, and the check fails.
    let store = dir.join("tier").join("store");
    let away = dir.join("tier").join("store.away");
    std::fs::rename(&store, &away).unwrap();
    let (ok, text) = check(&dir);
    assert!(!ok, "{text}");
    assert!(
        text.contains(&format!("missing {checked},")) && text.contains("DAMAGED"),
        "{text}"
    );
    std::fs::rename(&away, &store).unwrap();
    assert!(check(&dir).0);

    // The checks left the store as the exit kept it: the start keeps it. Then writes and
    // a SIGKILL leave no marker: `strata check` reads the store as the next start's check
    // will, and says what it will find.
    let s = serve_in(&dir, &TIERED);
    let mut c = s.client();
    kept_the_tier(&mut c, cold);
    for _ in 0..500 {
        run(&mut c, &random_command(&mut r));
    }
    drop(c);
    drop(s);
    let (ok, text) = check(&dir);
    assert!(ok, "{text}");
    let line = text.lines().find(|l| l.starts_with("tier ")).unwrap_or("");
    assert!(
        line.contains("not kept") && line.contains("will find"),
        "{text}"
    );
    let said: Vec<u64> = line
        .split("will find ")
        .nth(1)
        .unwrap_or("")
        .split(|ch: char| !ch.is_ascii_digit())
        .filter_map(|n| n.parse().ok())
        .collect();
    let s = serve_in(&dir, &TIERED);
    let mut c = s.client();
    assert_eq!(tiering_value::<String>(&mut c, "tier_start"), "checked");
    let found: Vec<u64> = ["matched", "rewritten", "dropped"]
        .iter()
        .map(|f| tiering_field(&mut c, &format!("tier_start_{f}")))
        .collect();
    assert_eq!(said, found, "{text}");
    assert!(found[0] > 0, "{text}");
    drop(c);
    drop(s);
    // Without ORIGIN the next start cannot check the store: it rebuilds it, unread here.
    std::fs::remove_file(dir.join("tier").join("ORIGIN")).unwrap();
    let (ok, text) = check(&dir);
    assert!(
        ok && text.contains("rebuilds it") && text.contains("not read"),
        "{text}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}
