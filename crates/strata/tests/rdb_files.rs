//! RDB files in and out of Strata against real redis-server 7.0: `strata import` of a
//! file redis-server saved, `strata export` of a data directory into a file redis-server
//! loads (and redis-check-rdb accepts), `strata serve --rdb-import`; every type in its
//! small and large encodings, expiries, idle times, function libraries, several
//! databases; and files Strata must refuse.

mod common;
mod rdb_common;

use common::{serve_in, temp_dir, wait_snapshot_done};
use rdb_common::codec::fixtures::{listpack, module_id, Lp, Rdb};
use rdb_common::codec::{assert_file_matches_server, check_rdb, Redis, TempDir};
use rdb_common::{assert_same_data, export, import, populate, strata_tool};
use std::time::Duration;

fn redis_cmd(con: &mut redis::Connection, args: &[&str]) -> redis::Value {
    let mut c = redis::cmd(args[0]);
    for a in &args[1..] {
        c.arg(*a);
    }
    c.query(con).unwrap_or_else(|e| panic!("{args:?}: {e}"))
}

/// redis-server populated, with one key already expired (kept by SAVE, which writes
/// expired keys too), saved.
fn redis_file(tmp: &TempDir, args: &[&str]) -> (Redis, std::path::PathBuf) {
    let mut all = vec!["--enable-debug-command", "yes"];
    all.extend_from_slice(args);
    let r = Redis::start(tmp.path(), &all);
    let mut con = r.con();
    populate(&mut con, true);
    redis_cmd(&mut con, &["DEBUG", "SET-ACTIVE-EXPIRE", "0"]);
    redis_cmd(&mut con, &["SET", "gone", "x", "PX", "1"]);
    std::thread::sleep(Duration::from_millis(20));
    let path = r.save();
    (r, path)
}

/// Stops a Strata server with SHUTDOWN (its data stays in its directory).
fn shutdown(mut s: common::Proc) {
    let _: () = redis::cmd("SHUTDOWN")
        .query(&mut s.client())
        .or_else(|e| if e.is_io_error() { Ok(()) } else { Err(e) })
        .expect("SHUTDOWN");
    assert!(s.wait_exit(Duration::from_secs(10)), "strata did not exit");
}

/// redis-server's file imported into Strata holds the same data; exported again, it
/// loads into a second redis-server with the same data as the first, streams included.
#[test]
fn a_file_redis_saved_imports_into_strata_and_back() {
    let tmp = TempDir::new("import");
    let (r, file) = redis_file(&tmp, &[]);
    let dir = tmp.path().join("strata");
    let out = import(&file, &dir, &[]);
    assert!(out.contains("expired keys skipped: 1"), "{out}");
    assert!(out.contains("function libraries: 1"), "{out}");
    assert!(out.contains("db3: 1 string, 1 list"), "{out}");
    let s = serve_in(&dir, &[]);
    let n = assert_same_data(&mut r.con(), &mut s.client(), false);
    assert!(n > 40, "only {n} keys compared");
    shutdown(s);
    let back = tmp.path().join("back");
    std::fs::create_dir_all(&back).unwrap();
    export(&back.join("dump.rdb"), &dir, &[]);
    check_rdb(&back.join("dump.rdb"));
    let r2 = Redis::start(&back, &[]);
    assert_eq!(assert_same_data(&mut r.con(), &mut r2.con(), true), n);
}

/// DEBUG RELOAD NOSAVE with redis-server's file in place of `dir`/`dbfilename` replaces
/// Strata's data set and function libraries with the file's, as Redis loads its dump.rdb
/// (what `redis-cli --rdb` users do); the snapshot that follows keeps it across a restart.
#[test]
fn debug_reload_nosave_loads_a_redis_rdb_in_place() {
    let tmp = TempDir::new("reload");
    let (r, file) = redis_file(&tmp, &[]);
    let dir = tmp.path().join("strata");
    std::fs::create_dir_all(&dir).unwrap();
    let args = ["--enable-debug-command", "yes"];
    let s = serve_in(&dir, &args);
    let mut c = s.client();
    redis_cmd(&mut c, &["SET", "should-not-exist", "1"]);
    let other = "#!lua name=other\nredis.register_function('other', function() return 1 end)";
    redis_cmd(&mut c, &["FUNCTION", "LOAD", other]);
    std::fs::copy(&file, dir.join("dump.rdb")).unwrap();
    assert_eq!(
        redis_cmd(&mut c, &["DEBUG", "RELOAD", "NOSAVE"]),
        redis::Value::Okay
    );
    let n = assert_same_data(&mut r.con(), &mut c, false);
    assert!(n > 40, "only {n} keys compared");
    assert_eq!(
        redis_cmd(&mut c, &["EXISTS", "should-not-exist"]),
        redis::Value::Int(0)
    );
    let list = |c: &mut redis::Connection| redis_cmd(c, &["FUNCTION", "LIST"]);
    assert_eq!(list(&mut c), list(&mut r.con()));
    wait_snapshot_done(&mut c);
    shutdown(s);
    let s = serve_in(&dir, &args);
    assert_eq!(assert_same_data(&mut r.con(), &mut s.client(), false), n);
    shutdown(s);
}

/// Data written into Strata with commands, exported, loaded by redis-server: the same
/// keys, values, expiries and encodings, under default and under small thresholds.
#[test]
fn an_exported_directory_loads_into_redis() {
    let small = [
        "--hash-max-listpack-entries",
        "16",
        "--zset-max-listpack-entries",
        "8",
        "--zset-max-listpack-value",
        "10",
        "--set-max-intset-entries",
        "10",
        "--list-max-listpack-size",
        "4",
        "--stream-node-max-entries",
        "7",
    ];
    for config in [&[][..], &small[..]] {
        let tmp = TempDir::new("export");
        let dir = tmp.path().join("strata");
        let s = serve_in(&dir, config);
        populate(&mut s.client(), false);
        shutdown(s);
        let rdb_dir = tmp.path().join("redis");
        std::fs::create_dir_all(&rdb_dir).unwrap();
        let file = rdb_dir.join("dump.rdb");
        let out = export(&file, &dir, config);
        assert!(out.contains("1 function libraries"), "{out}");
        check_rdb(&file);
        let r = Redis::start(&rdb_dir, config);
        let again = serve_in(&dir, config);
        let n = assert_same_data(&mut r.con(), &mut again.client(), true);
        assert_eq!(assert_file_matches_server(&file, &mut r.con()), n);
    }
}

/// Runs `strata serve` expecting it to exit at start-up; returns what it printed.
fn serve_fails(args: &[&str]) -> String {
    let out = strata_tool(&[&["serve", "--port", "0"][..], args].concat());
    assert!(!out.status.success(), "strata serve {args:?} started");
    String::from_utf8_lossy(&out.stdout).to_string() + &String::from_utf8_lossy(&out.stderr)
}

#[test]
fn serve_rdb_import_loads_once_and_persists() {
    let tmp = TempDir::new("rdb-import");
    let (r, file) = redis_file(&tmp, &[]);
    let dir = tmp.path().join("strata");
    let f = file.to_str().unwrap();
    let s = serve_in(&dir, &["--rdb-import", f]);
    let mut con = s.client();
    assert_same_data(&mut r.con(), &mut con, false);
    // The snapshot taken after the import makes it durable.
    wait_snapshot_done(&mut con);
    drop(con);
    drop(s);
    let s = serve_in(&dir, &[]);
    assert_same_data(&mut r.con(), &mut s.client(), false);
    drop(s);
    let text = serve_fails(&["--dir", dir.to_str().unwrap(), "--rdb-import", f]);
    assert!(text.contains("already holds data"), "{text}");
}

/// A Redis data directory used as is: its `dump.rdb` loads at the first start, and once
/// Strata's own files hold the data it is left alone (a FLUSHALL stays flushed). A corrupt
/// one stops the start with its reason.
#[test]
fn a_dump_rdb_in_a_fresh_directory_loads_at_start() {
    let tmp = TempDir::new("rdb-in-dir");
    let (r, file) = redis_file(&tmp, &[]);
    let dir = tmp.path().join("strata");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::copy(&file, dir.join("dump.rdb")).unwrap();
    let s = serve_in(&dir, &[]);
    let mut con = s.client();
    assert_same_data(&mut r.con(), &mut con, false);
    let _: () = redis::cmd("FLUSHALL").query(&mut con).unwrap();
    drop(con);
    drop(s);
    let s = serve_in(&dir, &[]);
    let n: i64 = redis::cmd("DBSIZE").query(&mut s.client()).unwrap();
    assert_eq!(n, 0, "the RDB file was loaded again over Strata's own data");
    drop(s);
    let bad = tmp.path().join("bad");
    std::fs::create_dir_all(&bad).unwrap();
    let bytes = std::fs::read(&file).unwrap();
    std::fs::write(bad.join("dump.rdb"), &bytes[..bytes.len() / 2]).unwrap();
    let text = serve_fails(&["--dir", bad.to_str().unwrap()]);
    assert!(text.contains("dump.rdb"), "{text}");
}

#[test]
fn import_refuses_a_directory_with_data_unless_forced() {
    let tmp = TempDir::new("force");
    let (r, file) = redis_file(&tmp, &[]);
    let dir = tmp.path().join("strata");
    {
        let s = serve_in(&dir, &[]);
        let _: () = redis::cmd("SET")
            .arg("old")
            .arg("1")
            .query(&mut s.client())
            .unwrap();
    }
    let f = file.to_str().unwrap();
    let out = strata_tool(&["import", f, "--dir", dir.to_str().unwrap()]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("already holds data") && err.contains("--force"),
        "{err}"
    );
    import(&file, &dir, &["--force"]);
    let s = serve_in(&dir, &[]);
    // The file replaced the directory's data: `old` is gone.
    assert_same_data(&mut r.con(), &mut s.client(), false);
}

/// An import with --force that fails part-way through the file leaves the directory's
/// keys and function libraries as they were: the import writes a new snapshot and only
/// replaces the old one once the whole file is in it.
#[test]
fn a_failed_forced_import_keeps_the_directory() {
    let tmp = TempDir::new("keep");
    let dir = tmp.path().join("strata");
    let lib = "#!lua name=kept\nredis.register_function('kept', function() return 7 end)";
    {
        let s = serve_in(&dir, &[]);
        let mut c = s.client();
        redis_cmd(&mut c, &["SET", "old", "1"]);
        redis_cmd(&mut c, &["FUNCTION", "LOAD", lib]);
        shutdown(s);
    }
    let mut f = Rdb::new(10);
    f.key(0, b"a").str(b"1").key(0, b"dup").str(b"1");
    f.key(0, b"dup").str(b"2");
    let file = tmp.path().join("dup.rdb");
    std::fs::write(&file, f.finish()).unwrap();
    let args = [
        "import",
        file.to_str().unwrap(),
        "--dir",
        dir.to_str().unwrap(),
        "--force",
    ];
    let out = strata_tool(&args);
    assert!(!out.status.success(), "imported a file with a key twice");
    let s = serve_in(&dir, &[]);
    let mut c = s.client();
    assert_eq!(redis_cmd(&mut c, &["DBSIZE"]), redis::Value::Int(1));
    assert_eq!(
        redis_cmd(&mut c, &["GET", "old"]),
        redis::Value::BulkString(b"1".to_vec())
    );
    assert_eq!(
        redis_cmd(&mut c, &["FCALL", "kept", "0"]),
        redis::Value::Int(7)
    );
}

/// Runs `strata import` on `bytes` into a fresh directory, expecting it to fail; returns
/// its error output, and checks the directory holds no data after.
fn import_fails(bytes: &[u8], extra: &[&str]) -> String {
    let tmp = TempDir::new("refuse");
    let file = tmp.path().join("bad.rdb");
    std::fs::write(&file, bytes).unwrap();
    let dir = tmp.path().join("strata");
    let mut args = vec![
        "import",
        file.to_str().unwrap(),
        "--dir",
        dir.to_str().unwrap(),
    ];
    args.extend_from_slice(extra);
    let out = strata_tool(&args);
    assert!(!out.status.success(), "imported a bad file");
    let s = serve_in(&dir, &[]);
    let n: i64 = redis::cmd("DBSIZE").query(&mut s.client()).unwrap();
    assert_eq!(n, 0, "a failed import left keys");
    String::from_utf8_lossy(&out.stderr).to_string()
}

#[test]
fn files_strata_cannot_load_are_refused() {
    // Module auxiliary data.
    let mut f = Rdb::new(10);
    f.byte(247).len(module_id("scriptmod", 1)).len(2).len(2);
    f.len(2).len(7).len(0);
    let err = import_fails(&f.finish(), &[]);
    assert!(err.contains("module 'scriptmod'"), "{err}");

    // A key holding a module value: the error names the key.
    let mut f = Rdb::new(10);
    f.key(0, b"fine").str(b"v");
    f.key(7, b"mod-key").len(module_id("graphdata", 2)).len(0);
    let err = import_fails(&f.finish(), &[]);
    assert!(
        err.contains("mod-key") && err.contains("graphdata"),
        "{err}"
    );

    // A database the server does not have.
    let mut f = Rdb::new(10);
    f.byte(254).len(20).key(0, b"k").str(b"v");
    let bytes = f.finish();
    let err = import_fails(&bytes, &[]);
    assert!(
        err.contains("database 20") && err.contains("databases"),
        "{err}"
    );
    let tmp = temp_dir("db20");
    let file = tmp.with_extension("rdb");
    std::fs::write(&file, &bytes).unwrap();
    let out = import(&file, &tmp, &["--databases", "32"]);
    assert!(out.contains("db20: 1 string"), "{out}");
    let _ = std::fs::remove_dir_all(&tmp);
    let _ = std::fs::remove_file(&file);

    // A key twice.
    let mut f = Rdb::new(10);
    f.key(0, b"twice").str(b"1").key(0, b"twice").str(b"2");
    let err = import_fails(&f.finish(), &[]);
    assert!(err.contains("'twice'") && err.contains("twice"), "{err}");

    // Cut short, and a bad checksum: nothing is kept.
    let mut f = Rdb::new(10);
    f.key(0, b"a").str(b"1").key(0, b"b").str(b"2");
    let whole = f.finish();
    let err = import_fails(&whole[..whole.len() - 5], &[]);
    assert!(err.contains("unexpected end"), "{err}");
    let mut flipped = whole.clone();
    let last = flipped.len() - 1;
    flipped[last] ^= 1;
    let err = import_fails(&flipped, &[]);
    assert!(err.contains("checksum"), "{err}");

    // Damage inside a packed hash or sorted set, which the loading threads decode: the
    // load fails with the reader's own message and offset, after good keys of each kind.
    let lp = |items: &[&[u8]]| listpack(&items.iter().map(|s| Lp::Str(s)).collect::<Vec<_>>());
    let damaged = |ty: u8, blob: &[u8]| {
        let mut f = Rdb::new(10);
        f.key(16, b"good-hash").str(&lp(&[b"f", b"v"]));
        f.key(17, b"good-zset").str(&lp(&[b"m", b"1"]));
        let at = f.buf.len() + 1 + 1 + 3; // type byte, key length, key
        f.key(ty, b"bad").str(blob);
        (f.finish(), at)
    };
    let mut counted = lp(&[b"f", b"v"]);
    counted[4] = 4;
    for (ty, blob, what) in [
        (16, lp(&[b"f", b"1", b"f", b"2"]), "duplicate hash field"),
        (
            17,
            lp(&[b"m", b"1", b"m", b"2"]),
            "duplicate sorted set member",
        ),
        (16, counted, "header counts 4 entries"),
    ] {
        let (bytes, at) = damaged(ty, &blob);
        let err = import_fails(&bytes, &[]);
        assert!(err.contains(what) && err.contains(&at.to_string()), "{err}");
        let tmp = TempDir::new("packed");
        let file = tmp.path().join("bad.rdb");
        std::fs::write(&file, &bytes).unwrap();
        let dir = tmp.path().join("strata");
        let text = serve_fails(&[
            "--dir",
            dir.to_str().unwrap(),
            "--rdb-import",
            file.to_str().unwrap(),
        ]);
        assert!(text.contains(what), "{text}");
    }
}

/// Idle times reach Strata under an LRU policy: RESTORE ... IDLETIME in redis-server,
/// SAVE, --rdb-import: Strata reports them. (Its snapshots keep no access times: after a
/// restart, or `strata import`, keys count as read when the server loaded them. Writing
/// idle times out is checked by the server crate's tests of `write_keyspace`.)
#[test]
fn idle_times_reach_strata_under_an_lru_policy() {
    let lru = ["--maxmemory-policy", "allkeys-lru"];
    let tmp = TempDir::new("idle");
    let r = Redis::start(tmp.path(), &lru);
    let mut con = r.con();
    redis_cmd(&mut con, &["SET", "k", "v"]);
    let payload: Vec<u8> = redis::cmd("DUMP").arg("k").query(&mut con).unwrap();
    redis_cmd(&mut con, &["DEL", "k"]);
    let _: () = redis::cmd("RESTORE")
        .arg("k")
        .arg(0)
        .arg(payload)
        .arg("IDLETIME")
        .arg(5000)
        .query(&mut con)
        .unwrap();
    let file = r.save();
    let dir = tmp.path().join("strata");
    let idle = |con: &mut redis::Connection| -> i64 {
        redis::cmd("OBJECT")
            .arg("IDLETIME")
            .arg("k")
            .query(con)
            .unwrap()
    };
    let f = file.to_str().unwrap();
    let s = serve_in(&dir, &[&lru[..], &["--rdb-import", f][..]].concat());
    let t = idle(&mut s.client());
    assert!((5000..5010).contains(&t), "idle {t}");
    wait_snapshot_done(&mut s.client());
    drop(s);
    let s = serve_in(&dir, &lru);
    let t = idle(&mut s.client());
    assert!(t < 100, "idle {t} after a restart from the snapshot");
}
