//! Memory accounting and reporting against the real server: used_memory follows what is
//! stored and what is freed, INFO memory and MEMORY STATS carry every field redis-server
//! reports (names read from redis-server at test time), MEMORY USAGE answers what keys
//! hold, the other MEMORY subcommands answer, and redis-cli's --bigkeys and --memkeys work.

mod common;

use common::{int, query, RespConn};
use redis::{Connection, Value};
use std::collections::BTreeSet;
use std::process::Command;

const CACHE: &[&str] = &["--appendonly", "no", "--save", ""];

fn info_fields(c: &mut Connection, section: &str) -> Vec<(String, String)> {
    let text: String = redis::cmd("INFO").arg(section).query(c).expect("INFO");
    text.lines()
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.to_string(), v.trim().to_string()))
        .collect()
}

fn info_u64(c: &mut Connection, section: &str, field: &str) -> u64 {
    info_fields(c, section)
        .into_iter()
        .find(|(k, _)| k == field)
        .and_then(|(_, v)| v.parse().ok())
        .unwrap_or_else(|| panic!("no numeric {field}"))
}

fn used(c: &mut Connection) -> u64 {
    info_u64(c, "memory", "used_memory")
}

/// used_memory grows by about what is stored (the values and their keys, rounded to
/// the allocator's classes) and falls back once it is deleted; the peak stays.
#[test]
fn used_memory_follows_the_data() {
    let s = common::strata(CACHE);
    let mut c = s.client();
    let base = used(&mut c);
    let value = vec![b'x'; 1000];
    for chunk in 0..20 {
        let mut p = redis::pipe();
        for i in 0..500 {
            p.cmd("SET")
                .arg(format!("k:{chunk}:{i}"))
                .arg(&value[..])
                .ignore();
        }
        p.query::<()>(&mut c).expect("writes");
    }
    let full = used(&mut c);
    let data = 10_000 * 1000;
    assert!(full - base >= data, "grew by {} for {data}", full - base);
    assert!(
        full - base <= data * 13 / 10,
        "grew by {} for {data}",
        full - base
    );
    let _: () = query(&mut c, &["flushall", "sync"]);
    let after = used(&mut c);
    assert!(
        after < base + data / 10,
        "{after} after the flush, {base} before the load"
    );
    assert!(info_u64(&mut c, "memory", "used_memory_peak") >= full);
    // jemalloc's own count agrees with ours within a few percent plus its metadata.
    let allocated = info_u64(&mut c, "memory", "allocator_allocated");
    assert!(
        allocated + (1 << 20) >= after && allocated <= after * 2 + (4 << 20),
        "{allocated} against {after}"
    );
}

/// What outlives a command (a slow-log entry, a script's body, a client's name, a
/// tracking prefix, a channel) keeps a copy of its argument, not the connection's input
/// buffer it was read into. Before, one slow SADD of 100,000 members kept its 2 MB
/// buffer for as long as its slow-log entry lived (unit/lazyfree of Redis's suite saw
/// the memory not come back after UNLINK).
/// A database costs nothing until a key is written to it, as Redis's empty databases cost
/// next to nothing: the suite's client-eviction cases fill 5 MB under an 11 MB maxmemory
/// and need the clients, not an idle server's own tables, to reach the limit. Reads over
/// a whole database (DBSIZE, SCAN, KEYS, RANDOMKEY, INFO keyspace) and a snapshot leave the
/// other databases without shards; the first write to one makes them.
#[test]
fn a_database_costs_memory_once_written_to() {
    // Without the journal, whose second buffer is made at its first flush after a write.
    let s = common::strata(CACHE);
    let mut c = s.client();
    redis::cmd("SET")
        .arg("k")
        .arg("v")
        .query::<()>(&mut c)
        .unwrap();
    let before = used(&mut c);
    for db in 1..16 {
        redis::cmd("SELECT").arg(db).query::<()>(&mut c).unwrap();
        let n: u64 = redis::cmd("DBSIZE").query(&mut c).unwrap();
        assert_eq!(n, 0);
        redis::cmd("SCAN").arg(0).query::<Value>(&mut c).unwrap();
        redis::cmd("KEYS").arg("*").query::<Value>(&mut c).unwrap();
        redis::cmd("RANDOMKEY").query::<Value>(&mut c).unwrap();
    }
    info_fields(&mut c, "keyspace");
    redis::cmd("SAVE").query::<()>(&mut c).unwrap();
    let read = used(&mut c) as i64 - before as i64;
    redis::cmd("SELECT").arg(7).query::<()>(&mut c).unwrap();
    redis::cmd("SET")
        .arg("k")
        .arg("v")
        .query::<()>(&mut c)
        .unwrap();
    let written = used(&mut c) as i64 - before as i64 - read;
    // One database's shards are a few hundred KB; the reads over fifteen made none.
    assert!(written > 100_000, "the write made a database: {written}");
    assert!(
        read.abs() < written / 4,
        "reads over fifteen databases grew used_memory by {read} (a write to one: {written})"
    );
    let n: u64 = redis::cmd("DBSIZE").query(&mut c).unwrap();
    assert_eq!(n, 1);
}

#[test]
fn kept_arguments_do_not_keep_the_request() {
    let s = common::strata(CACHE);
    let mut c = s.client();
    let _: () = query(&mut c, &["config", "set", "slowlog-log-slower-than", "0"]);
    let base = used(&mut c);
    let big = vec![b'x'; 2 << 20];
    let members: Vec<String> = (0..100_000).map(|i| i.to_string()).collect();
    let mut open = Vec::new();
    for round in 0..3 {
        let mut other = s.client();
        let _: i64 = redis::cmd("SADD")
            .arg(format!("set{round}"))
            .arg(&members)
            .query(&mut other)
            .expect("SADD");
        let _: i64 = redis::cmd("UNLINK")
            .arg(format!("set{round}"))
            .query(&mut other)
            .expect("UNLINK");
        // Each of these reads its small argument in the same buffer as the 2 MB one.
        let mut p = redis::pipe();
        p.cmd("SET").arg("big").arg(&big[..]).ignore();
        p.cmd("EVAL").arg(format!("return {round}")).arg(0).ignore();
        p.cmd("CLIENT")
            .arg("SETNAME")
            .arg(format!("n{round}"))
            .ignore();
        p.cmd("CLIENT")
            .arg("TRACKING")
            .arg("on")
            .arg("BCAST")
            .arg("PREFIX")
            .arg(format!("p{round}"))
            .ignore();
        p.cmd("DEL").arg("big").ignore();
        p.query::<()>(&mut other).expect("pipeline");
        // The connection stays open (its name and prefix live on) until the check; the
        // slow log and the script cache keep their entries.
        open.push(other);
    }
    std::thread::sleep(std::time::Duration::from_millis(300)); // lazy frees done
    let after = used(&mut c);
    assert!(
        after < base + (2 << 20),
        "{after} bytes after the rounds, {base} before: arguments kept their requests"
    );
}

/// used_memory_startup is what the server takes before it loads anything, as in Redis: a
/// restart that loads a data set reports it in used_memory_dataset, as the server that
/// wrote it did, and not in the startup figure.
#[test]
fn a_restart_counts_loaded_data_as_dataset() {
    let dir = common::temp_dir("startup");
    let value = vec![b'x'; 1000];
    let (startup, dataset) = {
        let s = common::serve_in(&dir, &[]);
        let mut c = s.client();
        let startup = info_u64(&mut c, "memory", "used_memory_startup");
        let mut p = redis::pipe();
        for i in 0..10_000 {
            p.cmd("SET").arg(format!("k:{i}")).arg(&value[..]).ignore();
        }
        p.query::<()>(&mut c).expect("writes");
        let dataset = info_u64(&mut c, "memory", "used_memory_dataset");
        (startup, dataset)
    };
    let data = 10_000 * 1000;
    assert!(dataset >= data, "dataset {dataset} for {data} bytes");
    let s = common::serve_in(&dir, &[]);
    let mut c = s.client();
    assert_eq!(int(&mut c, &["dbsize"]), 10_000);
    let loaded = info_u64(&mut c, "memory", "used_memory_dataset");
    let restarted = info_u64(&mut c, "memory", "used_memory_startup");
    assert!(
        loaded >= dataset * 9 / 10,
        "dataset {loaded} after the restart, {dataset} before"
    );
    assert!(
        restarted < startup + data / 10,
        "startup {restarted} after the restart, {startup} before"
    );
    let stats: Vec<Value> = redis::cmd("MEMORY").arg("STATS").query(&mut c).unwrap();
    let bytes = stats
        .chunks(2)
        .find(|kv| kv[0] == Value::BulkString(b"dataset.bytes".to_vec()))
        .and_then(|kv| redis::from_redis_value::<u64>(&kv[1]).ok())
        .expect("dataset.bytes");
    assert!(
        bytes >= dataset * 9 / 10,
        "MEMORY STATS dataset.bytes {bytes}"
    );
    drop(s);
    let _ = std::fs::remove_dir_all(&dir);
}

/// INFO memory holds every field redis-server's does, in the same order, and INFO stats
/// the eviction counters; MEMORY STATS the same names as redis-server's.
#[test]
fn info_and_memory_stats_name_every_redis_field() {
    let r = common::redis(&[]);
    let s = common::strata(CACHE);
    let (mut rc, mut sc) = (r.client(), s.client());
    for c in [&mut rc, &mut sc] {
        let _: () = query(c, &["set", "k", "v"]);
    }
    let names = |c: &mut Connection| -> Vec<String> {
        info_fields(c, "memory")
            .into_iter()
            .map(|(k, _)| k)
            .collect()
    };
    let theirs = names(&mut rc);
    let ours = names(&mut sc);
    let ours_in_theirs: Vec<&String> = ours.iter().filter(|n| theirs.contains(n)).collect();
    assert_eq!(
        ours_in_theirs,
        theirs.iter().collect::<Vec<_>>(),
        "INFO memory"
    );
    let stats: BTreeSet<String> = info_fields(&mut sc, "stats")
        .into_iter()
        .map(|(k, _)| k)
        .collect();
    for field in info_fields(&mut rc, "stats").into_iter().map(|(k, _)| k) {
        if field.contains("evict") || field.contains("expire") {
            assert!(stats.contains(&field), "INFO stats lacks {field}");
        }
    }
    let keys = |c: &mut Connection| -> BTreeSet<String> {
        let Value::Array(items) = query::<Value>(c, &["memory", "stats"]) else {
            panic!("MEMORY STATS is a flat list in RESP2");
        };
        items
            .iter()
            .step_by(2)
            .map(|k| match k {
                Value::BulkString(b) => String::from_utf8_lossy(b).into_owned(),
                other => panic!("a name, got {other:?}"),
            })
            .collect()
    };
    assert_eq!(keys(&mut sc), keys(&mut rc));
    assert_eq!(info_u64(&mut sc, "stats", "evicted_keys"), 0);
}

/// MEMORY USAGE: none for a missing key; a string costs its bytes plus a small fixed part;
/// a collection grows with its elements, and SAMPLES 0 reads them all.
#[test]
fn memory_usage_measures_keys() {
    let s = common::strata(CACHE);
    let mut c = s.client();
    assert_eq!(
        query::<Value>(&mut c, &["memory", "usage", "none"]),
        Value::Nil
    );
    let _: () = query(&mut c, &["set", "big", &"x".repeat(10_000)]);
    let big = int(&mut c, &["memory", "usage", "big"]);
    assert!((10_000..10_000 + 300).contains(&big), "{big}");
    let _: () = query(&mut c, &["set", "small", "v"]);
    let small = int(&mut c, &["memory", "usage", "small"]);
    assert!((1..100).contains(&small), "{small}");
    let mut sizes = Vec::new();
    for n in [10, 1000, 10_000] {
        let mut p = redis::pipe();
        for i in 0..n {
            p.cmd("HSET")
                .arg("h")
                .arg(format!("field:{i:05}"))
                .arg("v".repeat(50))
                .ignore();
        }
        p.query::<()>(&mut c).expect("HSET");
        let all = int(&mut c, &["memory", "usage", "h", "samples", "0"]);
        let sampled = int(&mut c, &["memory", "usage", "h"]);
        assert!(all >= n * 61, "{n} fields of 61 bytes in {all}");
        assert!(
            (all - sampled).abs() <= all / 5,
            "sampled {sampled}, all {all}"
        );
        sizes.push(all);
    }
    assert!(sizes.windows(2).all(|w| w[0] < w[1]), "{sizes:?}");
    // MEMORY USAGE is a read that touches nothing.
    let _: () = query(
        &mut c,
        &["config", "set", "maxmemory-policy", "allkeys-lfu"],
    );
    let _: () = query(&mut c, &["set", "f", "v"]);
    for _ in 0..50 {
        let _: i64 = query(&mut c, &["memory", "usage", "f"]);
    }
    assert_eq!(int(&mut c, &["object", "freq", "f"]), 5);
}

/// HELP's first line and shape, PURGE, DOCTOR, MALLOC-STATS.
#[test]
fn memory_subcommands_answer() {
    let r = common::redis(&[]);
    let s = common::strata(CACHE);
    let first = |p: &common::Proc| {
        let reply = RespConn::new(p).call(&["memory", "help"]).expect("help");
        assert_eq!(reply.kind, b'*');
        (reply.elems[0].raw.clone(), reply.elems.len())
    };
    let (theirs, ours) = (first(&r), first(&s));
    assert_eq!(ours.0, theirs.0, "first line");
    assert_eq!(ours.1, theirs.1, "lines");
    let mut c = s.client();
    let _: () = query(&mut c, &["memory", "purge"]);
    let doctor: String = query(&mut c, &["memory", "doctor"]);
    assert!(doctor.contains("less than 5 MB"), "{doctor}");
    let stats: String = query(&mut c, &["memory", "malloc-stats"]);
    assert!(
        stats.contains("jemalloc"),
        "{}",
        &stats[..stats.len().min(200)]
    );
    let mut p = redis::pipe();
    for i in 0..10_000 {
        p.cmd("SET")
            .arg(format!("k{i}"))
            .arg("v".repeat(1000))
            .ignore();
    }
    p.query::<()>(&mut c).expect("writes");
    let doctor: String = query(&mut c, &["memory", "doctor"]);
    assert!(!doctor.contains("less than 5 MB"), "{doctor}");
}

fn redis_cli(port: u16, mode: &str) -> String {
    let out = Command::new("redis-cli")
        .args(["-p", &port.to_string(), mode])
        .output()
        .unwrap_or_else(|e| panic!("redis-cli is required (apt-get install -y redis-tools): {e}"));
    assert!(out.status.success(), "redis-cli {mode}: {out:?}");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// redis-cli --bigkeys and --memkeys scan Strata and name the biggest key of each type,
/// --memkeys with MEMORY USAGE's bytes.
#[test]
fn redis_cli_bigkeys_and_memkeys() {
    let s = common::strata(CACHE);
    let mut c = s.client();
    let _: () = query(&mut c, &["set", "s:small", "v"]);
    let _: () = query(&mut c, &["set", "s:big", &"x".repeat(5000)]);
    let _: i64 = query(&mut c, &["rpush", "l", "a", "b", "c"]);
    let _: i64 = query(&mut c, &["hset", "h", "f", "v"]);
    let _: i64 = query(&mut c, &["sadd", "st", "a", "b"]);
    let _: i64 = query(&mut c, &["zadd", "z", "1", "a"]);
    let big = redis_cli(s.port, "--bigkeys");
    assert!(
        big.contains("Biggest string found '\"s:big\"' has 5000 bytes"),
        "{big}"
    );
    assert!(
        big.contains("Biggest   list found '\"l\"' has 3 items"),
        "{big}"
    );
    let mem = redis_cli(s.port, "--memkeys");
    let usage = int(&mut c, &["memory", "usage", "s:big"]);
    assert!(
        mem.contains(&format!(
            "Biggest string found '\"s:big\"' has {usage} bytes"
        )),
        "{mem}"
    );
    assert!(mem.contains("Sampled 6 keys"), "{mem}");
}
