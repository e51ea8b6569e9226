//! SLOWLOG against redis-server: the same commands, with every command logged, leave the
//! same entries (arguments as logged, cut and redacted; client names; script calls and
//! EXEC's commands), and the log's length follows slowlog-max-len and switches off at -1.

mod common;

use common::{bulk_strings, cmd, int, query};
use redis::Value;

/// Each entry, newest first, as "<arguments> name=<client name> script=<logged for a
/// script's call>" (ids, times, durations and addresses differ between servers).
fn entries(c: &mut redis::Connection) -> Vec<String> {
    let Value::Array(list) = cmd(c, &["slowlog", "get", "-1"]) else {
        panic!("SLOWLOG GET is an array");
    };
    let text = |v: Value| match v {
        Value::BulkString(b) => common::quote_arg(&b),
        other => panic!("expected a bulk string, got {other:?}"),
    };
    list.into_iter()
        .map(|e| match e {
            Value::Array(mut f) if f.len() == 6 => {
                let name = text(f.pop().expect("name"));
                let script = text(f.pop().expect("addr")) == "?:0";
                let args: Vec<String> = bulk_strings(f.pop().expect("args"))
                    .iter()
                    .map(|a| common::quote_arg(a))
                    .collect();
                assert!(matches!(
                    f[..],
                    [Value::Int(_), Value::Int(_), Value::Int(_)]
                ));
                format!("{} name={name} script={script}", args.join(" "))
            }
            other => panic!("an entry has six fields, got {other:?}"),
        })
        .collect()
}

/// Runs the same session on a server; returns its log and lengths seen along the way.
fn session(c: &mut redis::Connection) -> (Vec<String>, Vec<i64>) {
    let _: () = query(c, &["config", "set", "slowlog-log-slower-than", "0"]);
    let _: () = query(c, &["slowlog", "reset"]);
    let _: () = query(c, &["set", "k", "v"]);
    let many: Vec<String> = (3..40).map(|i| i.to_string()).collect();
    let mut sadd = vec!["sadd", "s"];
    sadd.extend(many.iter().map(String::as_str));
    let _: i64 = query(c, &sadd);
    let long = "A".repeat(129);
    let _: i64 = query(c, &["sadd", "s", "foo", &long]);
    let _: () = query(c, &["client", "setname", "tester"]);
    let _: Value = redis::pipe()
        .atomic()
        .cmd("set")
        .arg("a")
        .arg("1")
        .cmd("incr")
        .arg("a")
        .query(c)
        .expect("MULTI/EXEC");
    assert!(redis::cmd("auth").arg("secret").query::<()>(c).is_err());
    // Logged whether or not it succeeds.
    let _ = redis::cmd("hello")
        .arg("2")
        .arg("auth")
        .arg("default")
        .arg("pw")
        .query::<Value>(c);
    let _: () = query(c, &["config", "set", "maxmemory", "0", "requirepass", ""]);
    let _: i64 = query(c, &["eval", "return redis.call('incr', KEYS[1])", "1", "n"]);
    let log = entries(c);
    let mut lens = vec![int(c, &["slowlog", "len"])];
    let _: () = query(c, &["config", "set", "slowlog-max-len", "3"]);
    lens.push(int(c, &["slowlog", "len"]));
    let _: Value = query(c, &["slowlog", "get", "2"]);
    lens.push(int(c, &["slowlog", "len"]));
    lens.push(match cmd(c, &["slowlog", "get", "2"]) {
        Value::Array(v) => v.len() as i64,
        other => panic!("{other:?}"),
    });
    let _: () = query(c, &["config", "set", "slowlog-log-slower-than", "-1"]);
    let _: () = query(c, &["slowlog", "reset"]);
    let _: () = query(c, &["set", "k", "v"]);
    lens.push(int(c, &["slowlog", "len"]));
    (log, lens)
}

#[test]
fn slowlog_entries_match_redis() {
    let strata = common::strata(&[]);
    let redis = common::redis(&[]);
    let ours = session(&mut strata.client());
    let theirs = session(&mut redis.client());
    assert_eq!(ours.1, theirs.1, "SLOWLOG LEN along the way");
    assert_eq!(ours.0, theirs.0);
    // The session's commands are all there, newest first.
    assert!(ours.0.len() >= 12, "{:?}", ours.0);
}
