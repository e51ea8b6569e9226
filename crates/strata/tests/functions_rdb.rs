//! `redis-cli --functions-rdb` (REPLCONF rdb-filter-only): the RDB a filtered full sync
//! sends holds the function libraries and no key, and redis-server loads it so; its
//! refusals match redis-server's (run at test time).

mod common;

use common::{call_text, redis, strata, temp_dir, RespConn};
use std::process::Command;

/// Runs `redis-cli -p <port> <mode> <path>`; returns its output.
fn dump(port: u16, mode: &str, path: &std::path::Path) -> String {
    let out = Command::new("redis-cli")
        .args(["-p", &port.to_string(), mode])
        .arg(path)
        .output()
        .expect("run redis-cli (Debian: redis-tools)");
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

#[test]
fn functions_rdb_holds_the_libraries_and_no_key() {
    let s = strata(&["--repl-diskless-sync-delay", "0"]);
    let mut c = RespConn::new(&s);
    for i in 0..100 {
        call_text(&mut c, &["SET", &format!("k{i}"), "v"]);
    }
    let lib = "#!lua name=lib1\nredis.register_function('func1', function() return 123 end)";
    assert_eq!(
        call_text(&mut c, &["FUNCTION", "LOAD", lib]),
        "$4\\r\\nlib1\\r\\n"
    );
    let dir = temp_dir("functions-rdb");
    std::fs::create_dir_all(&dir).expect("create the directory");
    for (mode, file, keys) in [("--functions-rdb", "f.rdb", 0), ("--rdb", "all.rdb", 100)] {
        let out = dump(s.port, mode, &dir.join(file));
        assert!(
            out.contains("Transfer finished with success"),
            "{mode}: {out}"
        );
        // redis-server loads it at start.
        let r = redis(&[
            "--dir",
            dir.to_str().expect("utf-8 path"),
            "--dbfilename",
            file,
        ]);
        let mut rc = RespConn::new(&r);
        assert_eq!(
            call_text(&mut rc, &["DBSIZE"]),
            format!(":{keys}\\r\\n"),
            "{mode}"
        );
        let libs = call_text(&mut rc, &["FUNCTION", "LIST"]);
        assert!(
            libs.contains("lib1") && libs.contains("func1"),
            "{mode}: {libs}"
        );
        assert_eq!(call_text(&mut rc, &["FCALL", "func1", "0"]), ":123\\r\\n");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn rdb_filter_refusals_match_redis() {
    let s = strata(&[]);
    let r = redis(&[]);
    let calls: &[&[&str]] = &[
        &["REPLCONF", "rdb-filter-only", "functions keys"],
        &["REPLCONF", "rdb-filter-only", ""],
        &["REPLCONF", "rdb-filter-only", "FUNCTIONS"],
        // A filtered RDB needs the EOF capability.
        &["SYNC"],
    ];
    let (mut sc, mut rc) = (RespConn::new(&s), RespConn::new(&r));
    for cmd in calls {
        assert_eq!(call_text(&mut sc, cmd), call_text(&mut rc, cmd), "{cmd:?}");
    }
}
