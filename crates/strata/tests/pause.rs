//! CLIENT PAUSE and UNPAUSE. Each check runs on Strata (one worker thread, so a paused
//! client provably waits without holding up the others on its thread) and on
//! redis-server, and must hold on both: WRITE holds back writes and the commands Redis
//! treats as such (may-replicate PUBLISH and PFCOUNT, EXEC of writes, scripts without
//! `no-writes`) while reads run; ALL holds back everything until its timeout; a pause
//! keeps expired keys in place; paused clients count as blocked.

mod common;

use common::{encode_command, Proc, RespConn};
use std::time::{Duration, Instant};

fn info_field(c: &mut RespConn, field: &str) -> i64 {
    let info = String::from_utf8_lossy(&c.call(&["info"]).unwrap().raw).into_owned();
    info.lines()
        .find_map(|l| l.strip_prefix(&format!("{field}:")))
        .unwrap_or_else(|| panic!("no {field} in INFO"))
        .trim()
        .parse()
        .unwrap()
}

/// Waits until INFO blocked_clients reads `n`.
fn wait_blocked(c: &mut RespConn, n: i64) {
    let end = Instant::now() + Duration::from_secs(5);
    while info_field(c, "blocked_clients") != n {
        assert!(Instant::now() < end, "blocked_clients never reached {n}");
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// Sends a command on a new connection without reading its reply.
fn deferred(p: &Proc, args: &[&str]) -> RespConn {
    let mut c = RespConn::new(p);
    c.send(&encode_command(args)).unwrap();
    c
}

fn write_pause_holds_writes_only(p: &Proc) {
    let mut a = RespConn::new(p);
    a.call(&["flushall"]).unwrap();
    a.call(&["pfadd", "hll", "x"]).unwrap();
    let loaded = a
        .call(&["script", "load", "#!lua flags=no-writes\nreturn 2"])
        .unwrap();
    let sha = String::from_utf8_lossy(&loaded.raw[5..45]).into_owned();
    let lib = "#!lua name=pl\nredis.register_function{function_name='ro', \
               callback=function() return 7 end, flags={'no-writes'}}";
    a.call(&["function", "load", "replace", lib]).unwrap();
    // A transaction of writes queued before the pause.
    let mut tx = RespConn::new(p);
    tx.call(&["multi"]).unwrap();
    tx.call(&["set", "t", "1"]).unwrap();
    assert_eq!(
        a.call(&["client", "pause", "100000", "write"]).unwrap().raw,
        b"+OK\r\n"
    );
    let held: Vec<(RespConn, &[u8])> = vec![
        (deferred(p, &["set", "foo", "bar"]), b"+OK\r\n"),
        (deferred(p, &["pfcount", "hll"]), b":1\r\n"),
        (deferred(p, &["publish", "ch", "m"]), b":0\r\n"),
        (deferred(p, &["eval", "return 1", "0"]), b":1\r\n"),
        (deferred(p, &["eval", "#!lua\nreturn 3", "0"]), b":3\r\n"),
    ];
    wait_blocked(&mut a, 5);
    tx.send(&encode_command(&["exec"])).unwrap();
    wait_blocked(&mut a, 6);
    // Reads, read-only scripts and transactions of reads run meanwhile.
    let mut b = RespConn::new(p);
    assert_eq!(b.call(&["get", "foo"]).unwrap().raw, b"$-1\r\n");
    assert_eq!(b.call(&["ping"]).unwrap().raw, b"+PONG\r\n");
    assert_eq!(
        b.call(&["eval_ro", "return 5", "0"]).unwrap().raw,
        b":5\r\n"
    );
    let ro = "#!lua flags=no-writes\nreturn redis.call('get', 'foo')";
    assert_eq!(b.call(&["eval", ro, "0"]).unwrap().raw, b"$-1\r\n");
    assert_eq!(b.call(&["evalsha", &sha, "0"]).unwrap().raw, b":2\r\n");
    assert_eq!(b.call(&["fcall", "ro", "0"]).unwrap().raw, b":7\r\n");
    b.call(&["multi"]).unwrap();
    b.call(&["get", "foo"]).unwrap();
    assert_eq!(b.call(&["exec"]).unwrap().raw, b"*1\r\n$-1\r\n");
    // A syntax error is answered at once.
    let e = b.call(&["set", "k"]).unwrap();
    assert!(
        e.shown().contains("wrong number of arguments"),
        "{}",
        e.shown()
    );
    let list = String::from_utf8_lossy(&b.call(&["client", "list"]).unwrap().raw).into_owned();
    let flagged = list
        .lines()
        .filter_map(|l| l.split(' ').find_map(|f| f.strip_prefix("flags=")))
        .filter(|f| f.contains('b'))
        .count();
    assert_eq!(flagged, 6, "{list}");
    assert_eq!(info_field(&mut b, "blocked_clients"), 6);
    assert_eq!(a.call(&["client", "unpause"]).unwrap().raw, b"+OK\r\n");
    for (mut c, want) in held {
        assert_eq!(c.read().unwrap().raw, want, "on {}", p.name);
    }
    assert_eq!(tx.read().unwrap().raw, b"*1\r\n+OK\r\n");
    assert_eq!(info_field(&mut b, "blocked_clients"), 0);
}

fn all_pause_holds_everything_until_its_end(p: &Proc) {
    let mut a = RespConn::new(p);
    let started = Instant::now();
    a.call(&["client", "pause", "400", "all"]).unwrap();
    let mut b = deferred(p, &["ping"]);
    let mut c = deferred(p, &["client", "unpause"]);
    assert_eq!(b.read().unwrap().raw, b"+PONG\r\n");
    assert_eq!(c.read().unwrap().raw, b"+OK\r\n");
    let waited = started.elapsed();
    assert!(
        waited >= Duration::from_millis(350),
        "{waited:?} on {}",
        p.name
    );
    assert!(waited < Duration::from_secs(3), "{waited:?} on {}", p.name);
}

fn pause_keeps_expired_keys(p: &Proc) {
    let mut a = RespConn::new(p);
    a.call(&["flushall"]).unwrap();
    let expired = info_field(&mut a, "expired_keys");
    // The pause starts once the transaction is over.
    a.call(&["multi"]).unwrap();
    a.call(&["set", "foo", "bar", "px", "10"]).unwrap();
    a.call(&["set", "bar", "foo", "px", "10"]).unwrap();
    a.call(&["client", "pause", "50000", "write"]).unwrap();
    assert_eq!(
        a.call(&["exec"]).unwrap().raw,
        b"*3\r\n+OK\r\n+OK\r\n+OK\r\n"
    );
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(a.call(&["get", "foo"]).unwrap().raw, b"$-1\r\n");
    assert_eq!(a.call(&["get", "bar"]).unwrap().raw, b"$-1\r\n");
    assert_eq!(info_field(&mut a, "expired_keys"), expired, "on {}", p.name);
    a.call(&["client", "unpause"]).unwrap();
    a.call(&["get", "foo"]).unwrap();
    a.call(&["get", "bar"]).unwrap();
    assert_eq!(
        info_field(&mut a, "expired_keys"),
        expired + 2,
        "on {}",
        p.name
    );
}

fn errors(p: &Proc) {
    let mut a = RespConn::new(p);
    for (args, want) in [
        (
            &["client", "pause", "x"][..],
            "-ERR timeout is not an integer or out of range\r\n",
        ),
        (&["client", "pause", "-1"], "-ERR timeout is negative\r\n"),
        (
            &["client", "pause", "10", "read"],
            "-ERR CLIENT PAUSE mode must be WRITE or ALL\r\n",
        ),
        (&["client", "pause", "0", "write"], "+OK\r\n"),
        (&["client", "unpause"], "+OK\r\n"),
    ] {
        assert_eq!(
            a.call(args).unwrap().raw,
            want.as_bytes(),
            "{args:?} on {}",
            p.name
        );
    }
}

#[test]
fn pause_behaves_as_redis() {
    let s = common::strata(&["--threads", "1"]);
    let r = common::redis(&[]);
    for p in [&s, &r] {
        write_pause_holds_writes_only(p);
        all_pause_holds_everything_until_its_end(p);
        pause_keeps_expired_keys(p);
        errors(p);
    }
}
