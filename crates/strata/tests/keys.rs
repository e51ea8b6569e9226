//! The generic keyspace commands against the real binary: DEL UNLINK EXISTS TYPE RENAME
//! RENAMENX COPY MOVE KEYS SCAN RANDOMKEY TOUCH OBJECT (the expiry commands: `expire.rs`).
//! Expected values are computed here from first principles (the keys the test wrote, the
//! clock).

mod common;

use common::{arity, cmd, err, int, keys_of, ok, query, raw, setup, RespConn};
use redis::{Connection, Value};
use std::collections::{BTreeSet, HashMap};
use std::time::Duration;

fn get(c: &mut Connection, key: &str) -> Option<String> {
    redis::cmd("GET").arg(key).query(c).expect("GET")
}

#[test]
fn del_unlink_exists() {
    let (_p, mut c, mut r) = setup();
    for k in ["a", "b", "c", "d"] {
        ok(&mut c, &["SET", k, "v"]);
    }
    assert_eq!(int(&mut c, &["DEL", "nokey"]), 0);
    assert_eq!(int(&mut c, &["DEL", "a"]), 1);
    assert_eq!(int(&mut c, &["DEL", "a"]), 0);
    // Each key is removed once, however often it is named.
    assert_eq!(int(&mut c, &["DEL", "b", "b", "nokey", "c"]), 2);
    assert_eq!(int(&mut c, &["UNLINK", "d", "d", "nokey"]), 1);
    assert_eq!(int(&mut c, &["EXISTS", "a", "b", "c", "d"]), 0);

    ok(&mut c, &["SET", "e", "v"]);
    ok(&mut c, &["SET", "", "empty key"]);
    // EXISTS counts every argument naming a live key, repeats included.
    assert_eq!(int(&mut c, &["EXISTS", "e", "e", "nokey", "e", ""]), 4);
    assert_eq!(int(&mut c, &["DEL", ""]), 1);

    // Many keys spread over many shards, deleted in one command.
    let many: Vec<String> = (0..300).map(|i| format!("many:{i}")).collect();
    for k in &many {
        ok(&mut c, &["SET", k, "v"]);
    }
    let mut args: Vec<&str> = vec!["EXISTS"];
    args.extend(many.iter().map(String::as_str));
    assert_eq!(int(&mut c, &args), 300);
    args[0] = "DEL";
    args.push("nokey");
    assert_eq!(int(&mut c, &args), 300);
    args[0] = "EXISTS";
    assert_eq!(int(&mut c, &args), 0);

    for name in ["del", "unlink", "exists"] {
        assert_eq!(err(&mut r, &[name]), arity(name));
    }
}

/// The names of the server's threads.
fn thread_names(pid: u32) -> Vec<String> {
    let tasks = std::fs::read_dir(format!("/proc/{pid}/task")).expect("task list");
    tasks
        .filter_map(|t| std::fs::read_to_string(t.ok()?.path().join("comm")).ok())
        .map(|n| n.trim().to_string())
        .collect()
}

fn used_memory(c: &mut Connection) -> u64 {
    let info: String = redis::cmd("INFO").arg("memory").query(c).expect("INFO");
    info.lines()
        .find_map(|l| l.strip_prefix("used_memory:"))
        .and_then(|v| v.trim().parse().ok())
        .expect("used_memory")
}

/// UNLINK answers at once and frees a large value on the lazyfree thread (started by the
/// first such value; small ones are freed in place, as Redis's LAZYFREE_THRESHOLD says),
/// and the memory does come back.
#[test]
fn unlink_frees_large_values_in_the_background() {
    let (p, mut c, _r) = setup();
    let lazyfree = |pid| thread_names(pid).iter().any(|n| n == "strata-lazyfree");
    ok(&mut c, &["SET", "s", "v"]);
    query::<i64>(&mut c, &["HSET", "small", "f", "v"]);
    assert_eq!(int(&mut c, &["UNLINK", "s", "small"]), 2);
    assert!(!lazyfree(p.pid()), "small values are freed in place");

    let fill = |c: &mut redis::Connection, key: &str| {
        for chunk in 0..20 {
            let mut args = vec!["ZADD".to_string(), key.to_string()];
            for i in 0..5000 {
                args.push(format!("{}", chunk * 5000 + i));
                args.push(format!("member:{chunk}:{i}"));
            }
            let args: Vec<&str> = args.iter().map(String::as_str).collect();
            assert_eq!(int(c, &args), 5000);
        }
    };
    // A first set, deleted in place, leaves the connection's buffers at the size such
    // requests need: the growth measured below is then the set's own.
    fill(&mut c, "warm-up");
    assert_eq!(int(&mut c, &["DEL", "warm-up"]), 1);
    let before = used_memory(&mut c);
    fill(&mut c, "big");
    let grown = used_memory(&mut c).saturating_sub(before);
    assert!(
        grown > 1 << 20,
        "a 100k-member sorted set took {grown} bytes"
    );
    assert_eq!(int(&mut c, &["UNLINK", "big", "nokey"]), 1);
    assert_eq!(int(&mut c, &["EXISTS", "big"]), 0);
    // The value is handed to the lazyfree thread once the reply is on its way: wait for
    // the thread rather than race the reply.
    let until = std::time::Instant::now() + Duration::from_secs(5);
    while !lazyfree(p.pid()) && std::time::Instant::now() < until {
        std::thread::sleep(Duration::from_millis(10));
    }
    assert!(lazyfree(p.pid()), "no lazyfree thread after a large UNLINK");
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    loop {
        let now = used_memory(&mut c);
        if now < before + grown / 2 {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "memory not freed: {now} bytes, {before} before the set, {grown} for it"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn type_command() {
    let (_p, mut c, mut r) = setup();
    ok(&mut c, &["SET", "s", "v"]);
    assert_eq!(
        cmd(&mut c, &["TYPE", "s"]),
        Value::SimpleString("string".into())
    );
    assert_eq!(
        cmd(&mut c, &["TYPE", "nokey"]),
        Value::SimpleString("none".into())
    );
    assert_eq!(raw(&mut r, &["TYPE", "s"]), b"+string\r\n");
    assert_eq!(err(&mut r, &["TYPE"]), arity("type"));
    assert_eq!(err(&mut r, &["TYPE", "a", "b"]), arity("type"));
}

#[test]
fn rename_and_renamenx() {
    let (_p, mut c, mut r) = setup();
    ok(&mut c, &["SET", "src", "value"]);
    ok(&mut c, &["RENAME", "src", "dst"]);
    assert_eq!(get(&mut c, "src"), None);
    assert_eq!(get(&mut c, "dst").as_deref(), Some("value"));
    assert_eq!(err(&mut r, &["RENAME", "src", "x"]), "ERR no such key");
    assert_eq!(
        err(&mut r, &["RENAME", "nokey", "nokey"]),
        "ERR no such key"
    );
    // Renaming a key to itself is a no-op that still answers OK.
    ok(&mut c, &["RENAME", "dst", "dst"]);
    assert_eq!(get(&mut c, "dst").as_deref(), Some("value"));

    // RENAME overwrites, and the destination takes the source's expiry (or none).
    ok(&mut c, &["SET", "other", "old", "EX", "1000"]);
    ok(&mut c, &["RENAME", "dst", "other"]);
    assert_eq!(get(&mut c, "other").as_deref(), Some("value"));
    assert_eq!(int(&mut c, &["TTL", "other"]), -1);
    ok(&mut c, &["SET", "t", "v", "EX", "1000"]);
    ok(&mut c, &["RENAME", "t", "t2"]);
    let ttl = int(&mut c, &["TTL", "t2"]);
    assert!((999..=1000).contains(&ttl), "TTL after RENAME: {ttl}");
    assert_eq!(int(&mut c, &["EXISTS", "t"]), 0);

    // RENAMENX
    ok(&mut c, &["SET", "n1", "one"]);
    ok(&mut c, &["SET", "n2", "two"]);
    assert_eq!(int(&mut c, &["RENAMENX", "n1", "n2"]), 0);
    assert_eq!(get(&mut c, "n1").as_deref(), Some("one"));
    assert_eq!(get(&mut c, "n2").as_deref(), Some("two"));
    assert_eq!(int(&mut c, &["RENAMENX", "n1", "n3"]), 1);
    assert_eq!(get(&mut c, "n3").as_deref(), Some("one"));
    assert_eq!(int(&mut c, &["EXISTS", "n1"]), 0);
    assert_eq!(int(&mut c, &["RENAMENX", "n3", "n3"]), 0);
    assert_eq!(err(&mut r, &["RENAMENX", "nokey", "n9"]), "ERR no such key");

    // An expired source is no key.
    ok(&mut c, &["SET", "gone", "v", "PX", "10"]);
    std::thread::sleep(Duration::from_millis(30));
    assert_eq!(err(&mut r, &["RENAME", "gone", "x"]), "ERR no such key");

    assert_eq!(err(&mut r, &["RENAME", "a"]), arity("rename"));
    assert_eq!(err(&mut r, &["RENAMENX", "a", "b", "c"]), arity("renamenx"));
}

#[test]
fn copy_within_and_across_databases() {
    let (_p, mut c, mut r) = setup();
    ok(&mut c, &["SET", "c1", "hello", "EX", "1000"]);
    assert_eq!(int(&mut c, &["COPY", "c1", "c2"]), 1);
    assert_eq!(get(&mut c, "c2").as_deref(), Some("hello"));
    assert_eq!(get(&mut c, "c1").as_deref(), Some("hello"));
    let ttl = int(&mut c, &["TTL", "c2"]);
    assert!((999..=1000).contains(&ttl), "COPY keeps the expiry: {ttl}");
    assert_eq!(int(&mut c, &["COPY", "c1", "c2"]), 0);
    ok(&mut c, &["SET", "c3", "other"]);
    assert_eq!(int(&mut c, &["COPY", "c3", "c2", "REPLACE"]), 1);
    assert_eq!(get(&mut c, "c2").as_deref(), Some("other"));
    assert_eq!(int(&mut c, &["TTL", "c2"]), -1);
    assert_eq!(int(&mut c, &["COPY", "nokey", "c9"]), 0);
    assert_eq!(int(&mut c, &["EXISTS", "c9"]), 0);
    // The copy is independent of its source.
    ok(&mut c, &["SET", "c1", "changed"]);
    assert_eq!(get(&mut c, "c2").as_deref(), Some("other"));

    // Across databases.
    assert_eq!(int(&mut c, &["COPY", "c1", "c1", "DB", "5"]), 1);
    assert_eq!(int(&mut c, &["COPY", "c1", "c1", "DB", "5"]), 0);
    assert_eq!(int(&mut c, &["COPY", "c3", "c1", "DB", "5", "REPLACE"]), 1);
    ok(&mut c, &["SELECT", "5"]);
    assert_eq!(get(&mut c, "c1").as_deref(), Some("other"));
    assert_eq!(int(&mut c, &["DBSIZE"]), 1);
    // From database 5 back to 0, under a new name.
    assert_eq!(int(&mut c, &["COPY", "c1", "back", "db", "0"]), 1);
    ok(&mut c, &["SELECT", "0"]);
    assert_eq!(get(&mut c, "back").as_deref(), Some("other"));

    for (args, e) in [
        (
            vec!["COPY", "c1", "c1"],
            "ERR source and destination objects are the same",
        ),
        (
            vec!["COPY", "c1", "c1", "DB", "0"],
            "ERR source and destination objects are the same",
        ),
        (vec!["COPY", "c1", "x", "FOO"], "ERR syntax error"),
        (vec!["COPY", "c1", "x", "DB"], "ERR syntax error"),
        (
            vec!["COPY", "c1", "x", "DB", "16"],
            "ERR DB index is out of range",
        ),
        (
            vec!["COPY", "c1", "x", "DB", "-1"],
            "ERR DB index is out of range",
        ),
        (
            vec!["COPY", "c1", "x", "DB", "x"],
            "ERR value is not an integer or out of range",
        ),
        (
            vec!["COPY", "c1", "x", "DB", "4294967296"],
            "ERR value is out of range, value must between -2147483648 and 2147483647",
        ),
        (
            vec!["COPY", "c1"],
            "ERR wrong number of arguments for 'copy' command",
        ),
    ] {
        assert_eq!(err(&mut r, &args), e, "{args:?}");
    }
    assert_eq!(int(&mut c, &["EXISTS", "x"]), 0);
}

#[test]
fn move_between_databases() {
    let (_p, mut c, mut r) = setup();
    ok(&mut c, &["SET", "m", "v", "EX", "1000"]);
    assert_eq!(int(&mut c, &["MOVE", "m", "3"]), 1);
    assert_eq!(int(&mut c, &["EXISTS", "m"]), 0);
    assert_eq!(int(&mut c, &["MOVE", "m", "3"]), 0);
    ok(&mut c, &["SELECT", "3"]);
    assert_eq!(get(&mut c, "m").as_deref(), Some("v"));
    let ttl = int(&mut c, &["TTL", "m"]);
    assert!((999..=1000).contains(&ttl), "MOVE keeps the expiry: {ttl}");
    // `c` is in database 3 now; moving to 0 from there finds nothing in 0 to clash with.
    assert_eq!(int(&mut c, &["MOVE", "m", "0"]), 1);
    assert_eq!(int(&mut c, &["EXISTS", "m"]), 0);
    ok(&mut c, &["SELECT", "0"]);
    assert_eq!(int(&mut c, &["MOVE", "m", "3"]), 1);
    ok(&mut c, &["SELECT", "3"]);
    ok(&mut c, &["SET", "clash", "in3"]);
    ok(&mut c, &["SELECT", "0"]);
    ok(&mut c, &["SET", "clash", "in0"]);
    assert_eq!(int(&mut c, &["MOVE", "clash", "3"]), 0);
    assert_eq!(get(&mut c, "clash").as_deref(), Some("in0"));
    assert_eq!(int(&mut c, &["MOVE", "nokey", "3"]), 0);

    for (args, e) in [
        (
            vec!["MOVE", "clash", "0"],
            "ERR source and destination objects are the same",
        ),
        (vec!["MOVE", "clash", "16"], "ERR DB index is out of range"),
        (vec!["MOVE", "clash", "-1"], "ERR DB index is out of range"),
        (
            vec!["MOVE", "clash", "1.5"],
            "ERR value is not an integer or out of range",
        ),
        (
            vec!["MOVE", "clash", "99999999999"],
            "ERR value is out of range, value must between -2147483648 and 2147483647",
        ),
        (
            vec!["MOVE", "clash"],
            "ERR wrong number of arguments for 'move' command",
        ),
    ] {
        assert_eq!(err(&mut r, &args), e, "{args:?}");
    }
    // The raw connection moves a key out of its own database 0 into 1.
    assert_eq!(raw(&mut r, &["MOVE", "clash", "1"]), b":1\r\n");
    ok(&mut c, &["SELECT", "1"]);
    assert_eq!(get(&mut c, "clash").as_deref(), Some("in0"));
}

#[test]
fn keys_patterns() {
    let (_p, mut c, mut r) = setup();
    let mut all = BTreeSet::new();
    for i in 0..200 {
        let k = if i % 2 == 0 {
            format!("user:{i}")
        } else {
            format!("item:{i}")
        };
        ok(&mut c, &["SET", &k, "v"]);
        all.insert(k);
    }
    assert_eq!(keys_of(&mut c, "*"), all);
    let users: BTreeSet<String> = all
        .iter()
        .filter(|k| k.starts_with("user:"))
        .cloned()
        .collect();
    assert_eq!(keys_of(&mut c, "user:*"), users);
    let ones: BTreeSet<String> = all
        .iter()
        .filter(|k| k.starts_with("user:1"))
        .cloned()
        .collect();
    assert_eq!(keys_of(&mut c, "user:1*"), ones);
    // One character after "item:1": item:11 .. item:19 (odd ones exist).
    let two_digit: BTreeSet<String> = all
        .iter()
        .filter(|k| k.len() == 7 && k.starts_with("item:1"))
        .cloned()
        .collect();
    assert_eq!(keys_of(&mut c, "item:1?"), two_digit);
    let ends_in_5: BTreeSet<String> = all.iter().filter(|k| k.ends_with('5')).cloned().collect();
    assert_eq!(keys_of(&mut c, "*5"), ends_in_5);
    let classes: BTreeSet<String> = all
        .iter()
        .filter(|k| {
            k.starts_with("user:") && k.len() == 6 && matches!(k.as_bytes()[5], b'2' | b'4')
        })
        .cloned()
        .collect();
    assert_eq!(keys_of(&mut c, "user:[24]"), classes);
    assert!(keys_of(&mut c, "nomatch*").is_empty());
    // Expired keys are not listed.
    ok(&mut c, &["SET", "short", "v", "PX", "10"]);
    std::thread::sleep(Duration::from_millis(30));
    assert_eq!(keys_of(&mut c, "*"), all);
    assert_eq!(err(&mut r, &["KEYS"]), arity("keys"));
}

/// SCAN with COUNT 10 over 5000 keys returns each of them (at least once), and nothing else.
#[test]
fn scan_is_complete() {
    let (_p, mut c, mut r) = setup();
    let mut all = BTreeSet::new();
    let mut pipe = redis::pipe();
    for i in 0..5000 {
        let k = format!("key:{i}");
        pipe.cmd("SET").arg(&k).arg(i).ignore();
        all.insert(k);
    }
    pipe.query::<()>(&mut c).expect("pipeline");
    assert_eq!(int(&mut c, &["DBSIZE"]), 5000);

    let scan_all = |c: &mut Connection, extra: &[&str]| -> (BTreeSet<String>, usize) {
        let mut seen = BTreeSet::new();
        let mut cursor = "0".to_string();
        let mut calls = 0;
        loop {
            let mut q = redis::cmd("SCAN");
            q.arg(&cursor);
            for a in extra {
                q.arg(*a);
            }
            let (next, keys): (String, Vec<String>) = q.query(c).expect("SCAN");
            seen.extend(keys);
            calls += 1;
            assert!(calls < 100_000, "SCAN does not terminate");
            if next == "0" {
                return (seen, calls);
            }
            cursor = next;
        }
    };
    let (seen, calls) = scan_all(&mut c, &["COUNT", "10"]);
    assert_eq!(seen, all);
    assert!(calls > 10, "COUNT 10 should take many calls, took {calls}");

    let (seen, _) = scan_all(&mut c, &["MATCH", "key:1*", "COUNT", "10"]);
    let expected: BTreeSet<String> = all
        .iter()
        .filter(|k| k.starts_with("key:1"))
        .cloned()
        .collect();
    assert_eq!(seen, expected);
    let (seen, _) = scan_all(&mut c, &["TYPE", "string", "COUNT", "100"]);
    assert_eq!(seen, all);
    let (seen, _) = scan_all(&mut c, &["TYPE", "hash"]);
    assert!(seen.is_empty());
    let (seen, _) = scan_all(&mut c, &["TYPE", "nosuchtype"]);
    assert!(seen.is_empty());

    // Keys deleted during the scan are never returned after their deletion; keys present
    // throughout are all returned.
    let mut seen = BTreeSet::new();
    let mut cursor = "0".to_string();
    let mut deleted = BTreeSet::new();
    let mut step = 0;
    loop {
        let (next, keys): (String, Vec<String>) = redis::cmd("SCAN")
            .arg(&cursor)
            .arg("COUNT")
            .arg(50)
            .query(&mut c)
            .expect("SCAN");
        for k in keys {
            assert!(!deleted.contains(&k), "{k} returned after its deletion");
            seen.insert(k);
        }
        let victim = format!("key:{}", 4999 - step);
        if int(&mut c, &["DEL", &victim]) == 1 {
            deleted.insert(victim);
        }
        step += 1;
        if next == "0" {
            break;
        }
        cursor = next;
    }
    let survivors: BTreeSet<String> = all.difference(&deleted).cloned().collect();
    assert!(survivors.is_subset(&seen));

    for (args, e) in [
        (vec!["SCAN", "x"], "ERR invalid cursor"),
        (vec!["SCAN", " 0"], "ERR invalid cursor"),
        (vec!["SCAN", "0 "], "ERR invalid cursor"),
        (vec!["SCAN", "18446744073709551616"], "ERR invalid cursor"),
        (vec!["SCAN", "0", "COUNT", "0"], "ERR syntax error"),
        (vec!["SCAN", "0", "COUNT", "-5"], "ERR syntax error"),
        (
            vec!["SCAN", "0", "COUNT", "ten"],
            "ERR value is not an integer or out of range",
        ),
        (vec!["SCAN", "0", "COUNT"], "ERR syntax error"),
        (vec!["SCAN", "0", "MATCH"], "ERR syntax error"),
        (vec!["SCAN", "0", "BOGUS", "x"], "ERR syntax error"),
        (
            vec!["SCAN"],
            "ERR wrong number of arguments for 'scan' command",
        ),
    ] {
        assert_eq!(err(&mut r, &args), e, "{args:?}");
    }
    // A cursor past the end finishes the scan.
    assert_eq!(raw(&mut r, &["SCAN", "-1"]), b"*2\r\n$1\r\n0\r\n*0\r\n");
}

#[test]
fn randomkey() {
    let (_p, mut c, mut r) = setup();
    assert_eq!(cmd(&mut c, &["RANDOMKEY"]), Value::Nil);
    let keys: BTreeSet<String> = (0..20).map(|i| format!("r{i}")).collect();
    for k in &keys {
        ok(&mut c, &["SET", k, "v"]);
    }
    let mut picked = BTreeSet::new();
    for _ in 0..200 {
        let k: String = redis::cmd("RANDOMKEY").query(&mut c).expect("RANDOMKEY");
        assert!(keys.contains(&k), "{k} is not a key");
        picked.insert(k);
    }
    assert!(picked.len() > 1, "RANDOMKEY always returns the same key");
    for k in &keys {
        int(&mut c, &["DEL", k]);
    }
    assert_eq!(cmd(&mut c, &["RANDOMKEY"]), Value::Nil);
    // Only expired keys left: none is returned.
    ok(&mut c, &["SET", "e", "v", "PX", "10"]);
    std::thread::sleep(Duration::from_millis(30));
    assert_eq!(cmd(&mut c, &["RANDOMKEY"]), Value::Nil);
    assert_eq!(err(&mut r, &["RANDOMKEY", "x"]), arity("randomkey"));
}

/// TOUCH and reads reset the idle time; EXISTS, TYPE, TTL and OBJECT do not.
#[test]
fn touch_and_idletime() {
    let (_p, mut c, mut r) = setup();
    ok(&mut c, &["SET", "a", "v"]);
    ok(&mut c, &["SET", "b", "v"]);
    assert_eq!(int(&mut c, &["OBJECT", "IDLETIME", "a"]), 0);
    std::thread::sleep(Duration::from_millis(2100));
    for args in [
        vec!["EXISTS", "a"],
        vec!["TYPE", "a"],
        vec!["TTL", "a"],
        vec!["PTTL", "a"],
        vec!["OBJECT", "ENCODING", "a"],
    ] {
        cmd(&mut c, &args);
    }
    let idle = int(&mut c, &["OBJECT", "IDLETIME", "a"]);
    assert!((2..=3).contains(&idle), "idle time {idle}");
    assert_eq!(int(&mut c, &["TOUCH", "a", "nokey", "a"]), 2);
    assert_eq!(int(&mut c, &["OBJECT", "IDLETIME", "a"]), 0);
    get(&mut c, "b");
    assert_eq!(int(&mut c, &["OBJECT", "IDLETIME", "b"]), 0);
    assert_eq!(int(&mut c, &["TOUCH", "nokey"]), 0);
    assert_eq!(err(&mut r, &["TOUCH"]), arity("touch"));
}

#[test]
fn object_subcommands() {
    let (_p, mut c, mut r) = setup();
    for (k, v) in [
        ("int", "12345"),
        ("zero", "0"),
        ("neg", "-42"),
        ("max", "9223372036854775807"),
        ("over", "9223372036854775808"),
        ("lead", "0123"),
        ("short", "abc"),
        ("e44", &"x".repeat(44)),
        ("e45", &"x".repeat(45)),
    ] {
        ok(&mut c, &["SET", k, v]);
    }
    let enc = |c: &mut Connection, k: &str| -> String {
        redis::cmd("OBJECT")
            .arg("ENCODING")
            .arg(k)
            .query(c)
            .expect("OBJECT ENCODING")
    };
    for (k, e) in [
        ("int", "int"),
        ("zero", "int"),
        ("neg", "int"),
        ("max", "int"),
        ("over", "embstr"),
        ("lead", "embstr"),
        ("short", "embstr"),
        ("e44", "embstr"),
        ("e45", "raw"),
    ] {
        assert_eq!(enc(&mut c, k), e, "OBJECT ENCODING {k}");
    }
    assert_eq!(cmd(&mut c, &["OBJECT", "ENCODING", "nokey"]), Value::Nil);
    assert_eq!(cmd(&mut c, &["OBJECT", "REFCOUNT", "nokey"]), Value::Nil);
    assert_eq!(
        int(&mut c, &["OBJECT", "REFCOUNT", "zero"]),
        i32::MAX as i64
    );
    assert_eq!(int(&mut c, &["OBJECT", "REFCOUNT", "int"]), 1);
    assert_eq!(int(&mut c, &["OBJECT", "REFCOUNT", "short"]), 1);
    ok(&mut c, &["SET", "n9999", "9999"]);
    ok(&mut c, &["SET", "n10000", "10000"]);
    assert_eq!(
        int(&mut c, &["OBJECT", "REFCOUNT", "n9999"]),
        i32::MAX as i64
    );
    assert_eq!(int(&mut c, &["OBJECT", "REFCOUNT", "n10000"]), 1);

    let help = cmd(&mut c, &["OBJECT", "HELP"]);
    let Value::Array(lines) = help else {
        panic!("OBJECT HELP: {help:?}")
    };
    assert_eq!(lines.len(), 15);
    assert_eq!(
        lines[0],
        Value::SimpleString(
            "OBJECT <subcommand> [<arg> [value] [opt] ...]. Subcommands are:".into()
        )
    );

    let lfu_off = "ERR An LFU maxmemory policy is not selected, access frequency not tracked. Please note that when switching between policies at runtime LRU and LFU data will take some time to adjust.";
    let lfu_on = "ERR An LFU maxmemory policy is selected, idle time not tracked. Please note that when switching between policies at runtime LRU and LFU data will take some time to adjust.";
    assert_eq!(err(&mut r, &["OBJECT", "FREQ", "short"]), lfu_off);
    ok(
        &mut c,
        &["CONFIG", "SET", "maxmemory-policy", "allkeys-lfu"],
    );
    // A key written under an LFU policy starts at LFU_INIT_VAL (one written before the
    // switch holds an LRU clock, read as noise until accessed again, as in Redis).
    ok(&mut c, &["SET", "fresh", "v"]);
    assert_eq!(int(&mut c, &["OBJECT", "FREQ", "fresh"]), 5);
    assert_eq!(err(&mut r, &["OBJECT", "IDLETIME", "short"]), lfu_on);
    assert_eq!(cmd(&mut c, &["OBJECT", "FREQ", "nokey"]), Value::Nil);
    ok(&mut c, &["CONFIG", "SET", "maxmemory-policy", "noeviction"]);

    assert_eq!(err(&mut r, &["OBJECT"]), arity("object"));
    assert_eq!(
        err(&mut r, &["OBJECT", "ENCODING"]),
        arity("object|encoding")
    );
    assert_eq!(err(&mut r, &["OBJECT", "HELP", "x"]), arity("object|help"));
    assert_eq!(
        err(&mut r, &["OBJECT", "nope", "k"]),
        "ERR unknown subcommand 'nope'. Try OBJECT HELP."
    );
}

/// RESP3 shapes: nulls are `_`, TYPE is a simple string, SCAN an array of two.
#[test]
fn resp3_replies() {
    let p = common::strata(&[]);
    let mut r = RespConn::new(&p);
    let hello = r.call(&["HELLO", "3"]).expect("HELLO 3");
    assert_eq!(hello.kind, b'%');
    assert_eq!(raw(&mut r, &["RANDOMKEY"]), b"_\r\n");
    assert_eq!(raw(&mut r, &["OBJECT", "ENCODING", "nokey"]), b"_\r\n");
    assert_eq!(raw(&mut r, &["SET", "k", "42"]), b"+OK\r\n");
    assert_eq!(raw(&mut r, &["TYPE", "k"]), b"+string\r\n");
    assert_eq!(raw(&mut r, &["OBJECT", "ENCODING", "k"]), b"$3\r\nint\r\n");
    assert_eq!(raw(&mut r, &["KEYS", "*"]), b"*1\r\n$1\r\nk\r\n");
    assert_eq!(
        raw(&mut r, &["SCAN", "0", "COUNT", "1000000"]),
        b"*2\r\n$1\r\n0\r\n*1\r\n$1\r\nk\r\n"
    );
    assert_eq!(raw(&mut r, &["RANDOMKEY"]), b"$1\r\nk\r\n");
    assert_eq!(raw(&mut r, &["TTL", "k"]), b":-1\r\n");
    assert_eq!(raw(&mut r, &["EXISTS", "k", "k"]), b":2\r\n");
}

/// Odd arguments never crash the server or wedge a connection.
#[test]
fn odd_arguments_are_answered() {
    let (_p, mut c, mut r) = setup();
    ok(&mut c, &["SET", "k", "v"]);
    let odd = [
        "",
        "-",
        "+",
        "-0",
        "0x1",
        "\u{0}",
        "9223372036854775808",
        "-9223372036854775809",
        "k",
        "NX",
        "db",
        "REPLACE",
        "*",
        "[",
        "\\",
    ];
    let cmds = [
        "DEL",
        "UNLINK",
        "EXISTS",
        "TYPE",
        "RENAME",
        "RENAMENX",
        "COPY",
        "MOVE",
        "KEYS",
        "SCAN",
        "RANDOMKEY",
        "TOUCH",
        "OBJECT",
        "EXPIRE",
        "PEXPIRE",
        "EXPIREAT",
        "PEXPIREAT",
        "EXPIRETIME",
        "PEXPIRETIME",
        "TTL",
        "PTTL",
        "PERSIST",
    ];
    let mut replies: HashMap<&str, usize> = HashMap::new();
    for name in cmds {
        for n in 0..4 {
            for (i, a) in odd.iter().enumerate() {
                let mut args = vec![name];
                for j in 0..n {
                    args.push(odd[(i + j * 7) % odd.len()]);
                }
                args.push(a);
                r.call(&args).unwrap_or_else(|e| panic!("{args:?}: {e}"));
                *replies.entry(name).or_default() += 1;
                ok(&mut c, &["SET", "k", "v"]);
            }
        }
    }
    assert_eq!(replies.len(), cmds.len());
    assert_eq!(cmd(&mut c, &["PING"]), Value::SimpleString("PONG".into()));
}
