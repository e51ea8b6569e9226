//! MULTI/EXEC/WATCH under concurrency: optimistic read-modify-write from many clients on
//! both worker threads never loses an update, no reader ever sees half of a transaction,
//! and a watch fired from another connection fails the EXEC. (Single-connection semantics
//! are compared with redis-server in tests/diff/transactions.txt.)

mod common;

use common::{strata, Proc};
use redis::Value;

/// INCR done the optimistic way: WATCH, GET, MULTI, SET, EXEC, retried until EXEC succeeds.
fn watched_incr(c: &mut redis::Connection, key: &str) -> u32 {
    let mut retries = 0;
    loop {
        redis::cmd("WATCH").arg(key).query::<()>(c).unwrap();
        let v: Option<i64> = redis::cmd("GET").arg(key).query(c).unwrap();
        let next = v.unwrap_or(0) + 1;
        let r: Value = redis::pipe()
            .atomic()
            .cmd("SET")
            .arg(key)
            .arg(next)
            .query(c)
            .unwrap();
        if r != Value::Nil {
            return retries;
        }
        retries += 1;
    }
}

#[test]
fn watch_multi_exec_loses_no_update() {
    let p = strata(&["--threads", "2"]);
    let clients = 8;
    let per = 300;
    let handles: Vec<_> = (0..clients)
        .map(|_| {
            let mut c = p.client();
            std::thread::spawn(move || {
                (0..per)
                    .map(|_| watched_incr(&mut c, "counter"))
                    .sum::<u32>()
            })
        })
        .collect();
    let retries: u32 = handles.into_iter().map(|h| h.join().unwrap()).sum();
    let total: i64 = redis::cmd("GET")
        .arg("counter")
        .query(&mut p.client())
        .unwrap();
    assert_eq!(total, (clients * per) as i64);
    // With 8 clients racing on one key some EXECs must have failed: the watch is live.
    assert!(retries > 0, "no EXEC ever failed: WATCH did nothing?");
}

#[test]
fn readers_never_see_half_a_transaction() {
    let p = strata(&["--threads", "2"]);
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let writers: Vec<_> = (0..2)
        .map(|_| {
            let mut c = p.client();
            std::thread::spawn(move || {
                for _ in 0..1000 {
                    let _: Value = redis::pipe()
                        .atomic()
                        .cmd("INCR")
                        .arg("a")
                        .cmd("INCR")
                        .arg("b")
                        .cmd("RPUSH")
                        .arg("log")
                        .arg("x")
                        .query(&mut c)
                        .unwrap();
                }
            })
        })
        .collect();
    let readers: Vec<_> = (0..2)
        .map(|_| {
            let mut c = p.client();
            let stop = stop.clone();
            std::thread::spawn(move || {
                let mut seen = 0;
                while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                    let (a, b): (Option<i64>, Option<i64>) =
                        redis::cmd("MGET").arg("a").arg("b").query(&mut c).unwrap();
                    assert_eq!(a, b, "saw one INCR of a transaction without the other");
                    let (n, a2): (i64, Option<i64>) = redis::pipe()
                        .atomic()
                        .cmd("LLEN")
                        .arg("log")
                        .cmd("GET")
                        .arg("a")
                        .query(&mut c)
                        .unwrap();
                    assert_eq!(Some(n), a2.or(Some(0)), "list and counter out of step");
                    seen += 1;
                }
                seen
            })
        })
        .collect();
    for w in writers {
        w.join().unwrap();
    }
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    for r in readers {
        assert!(r.join().unwrap() > 0);
    }
    let a: i64 = redis::cmd("GET").arg("a").query(&mut p.client()).unwrap();
    assert_eq!(a, 2000);
}

/// Runs WATCH on one connection, a write on another (on either worker thread), and
/// checks the EXEC fails; then a write to another key leaves it alone.
#[test]
fn watch_fires_on_writes_from_other_connections() {
    let p: Proc = strata(&["--threads", "2"]);
    let mut w = p.client();
    let mut others: Vec<_> = (0..4).map(|_| p.client()).collect();
    let writes: &[&[&str]] = &[
        &["SET", "k", "1"],
        &["DEL", "k"],
        &["EXPIRE", "k", "100"],
        &["APPEND", "k", "x"],
        &["RENAME", "src", "k"],
        &["FLUSHALL"],
    ];
    for (i, write) in writes.iter().enumerate() {
        let o = &mut others[i % 4];
        redis::cmd("SET").arg("k").arg("v").query::<()>(o).unwrap();
        redis::cmd("SET")
            .arg("src")
            .arg("s")
            .query::<()>(o)
            .unwrap();
        redis::cmd("WATCH").arg("k").query::<()>(&mut w).unwrap();
        let mut c = redis::cmd(write[0]);
        for a in &write[1..] {
            c.arg(*a);
        }
        c.query::<Value>(o).unwrap();
        let r: Value = redis::pipe().atomic().cmd("PING").query(&mut w).unwrap();
        assert_eq!(
            r,
            Value::Nil,
            "{write:?} from another connection did not fire WATCH"
        );
    }
    redis::cmd("WATCH").arg("k").query::<()>(&mut w).unwrap();
    redis::cmd("SET")
        .arg("other")
        .arg("1")
        .query::<()>(&mut others[1])
        .unwrap();
    let r: Vec<String> = redis::pipe().atomic().cmd("PING").query(&mut w).unwrap();
    assert_eq!(r, vec!["PONG".to_string()]);
}
