//! A busy script does not stop the other clients of its own worker thread: with one worker
//! thread, every connection shares the script's thread, and still gets -BUSY, can kill the
//! script (SCRIPT KILL, FUNCTION KILL) or shut the server down, as in Redis. Connections
//! opened while the script runs are served too, a transaction touched by the busy script is
//! aborted as Redis aborts it, and the script's own connection reads nothing more until the
//! script ends.

mod common;

use common::{encode_command, strata, Proc, RespConn};
use std::time::{Duration, Instant};

/// A connection whose replies must come within 5 s (the script's thread must answer).
fn conn(p: &Proc) -> RespConn {
    let mut c = RespConn::new(p);
    c.stream()
        .set_read_timeout(Some(Duration::from_secs(5)))
        .expect("timeout");
    c
}

/// A reply as text, errors with their code ("BUSY Redis is busy...").
fn text(c: &mut RespConn, args: &[&str]) -> String {
    let r = c
        .call(args)
        .unwrap_or_else(|e| panic!("no reply to {args:?}: {e}"));
    shown(&r.raw)
}

fn shown(raw: &[u8]) -> String {
    String::from_utf8_lossy(raw)
        .trim_start_matches(['-', '+'])
        .trim_end()
        .to_string()
}

/// Sends `args` on `c` without reading (the script's connection).
fn start(c: &mut RespConn, args: &[&str]) {
    c.send(&encode_command(args)).expect("send");
}

/// Waits until `c` gets -BUSY for PING: the script is past busy-reply-threshold.
fn until_busy(c: &mut RespConn) -> String {
    let end = Instant::now() + Duration::from_secs(10);
    loop {
        let r = text(c, &["PING"]);
        if r.starts_with("BUSY") {
            return r;
        }
        assert_eq!(r, "PONG");
        assert!(Instant::now() < end, "the script never got busy");
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn one_worker() -> Proc {
    strata(&["--threads", "1", "--busy-reply-threshold", "100"])
}

#[test]
fn clients_of_the_scripts_worker_get_busy_and_script_kill_ends_it() {
    let p = one_worker();
    let mut other = conn(&p);
    let mut script = conn(&p);
    assert_eq!(text(&mut other, &["SET", "xx", "1"]), "OK");
    // MULTI before the script, a command queued during it: the transaction is doomed.
    assert_eq!(text(&mut other, &["MULTI"]), "OK");
    assert_eq!(text(&mut other, &["INCR", "xx"]), "QUEUED");
    // The script's own connection pipelines a PING after it: not run until the script ends.
    let mut req = encode_command(&["EVAL", "while true do end", "0"]);
    req.extend_from_slice(&encode_command(&["PING", "after"]));
    script.send(&req).expect("send");
    let mut watcher = conn(&p);
    let busy = until_busy(&mut watcher);
    assert!(
        busy.starts_with("BUSY Redis is busy running a script. You can only call SCRIPT KILL"),
        "{busy}"
    );
    let e = text(&mut other, &["INCR", "xx"]);
    assert!(
        e.starts_with("BUSY"),
        "INCR in MULTI during the script: {e}"
    );
    // A connection opened while the script runs is served as well.
    let mut late = conn(&p);
    let e = text(&mut late, &["GET", "xx"]);
    assert!(e.starts_with("BUSY"), "GET on a new connection: {e}");
    let e = text(&mut late, &["FUNCTION", "KILL"]);
    assert!(e.starts_with("BUSY"), "FUNCTION KILL of an EVAL: {e}");
    assert_eq!(text(&mut late, &["SCRIPT", "KILL"]), "OK");
    let killed = shown(&script.read().expect("the script's reply").raw);
    assert!(killed.contains("Script killed by user"), "{killed}");
    assert_eq!(
        shown(&script.read().expect("PING's reply").raw),
        "$5\r\nafter"
    );
    let e = text(&mut other, &["EXEC"]);
    assert!(e.starts_with("EXECABORT"), "{e}");
    assert_eq!(text(&mut other, &["GET", "xx"]), "$1\r\n1");
    assert_eq!(text(&mut watcher, &["PING"]), "PONG");
    let e = text(&mut watcher, &["SCRIPT", "KILL"]);
    assert!(e.starts_with("NOTBUSY"), "{e}");
}

#[test]
fn exec_during_a_busy_script_aborts_the_transaction() {
    let p = one_worker();
    let mut other = conn(&p);
    let mut script = conn(&p);
    assert_eq!(text(&mut other, &["SET", "xx", "1"]), "OK");
    assert_eq!(text(&mut other, &["MULTI"]), "OK");
    assert_eq!(text(&mut other, &["INCR", "xx"]), "QUEUED");
    start(&mut script, &["EVAL", "while true do end", "0"]);
    until_busy(&mut conn(&p));
    let e = text(&mut other, &["EXEC"]);
    assert!(e.starts_with("EXECABORT") && e.contains("BUSY"), "{e}");
    assert_eq!(text(&mut other, &["SCRIPT", "KILL"]), "OK");
    let killed = shown(&script.read().expect("the script's reply").raw);
    assert!(killed.contains("Script killed by user"), "{killed}");
    // Out of the transaction, which did not run.
    assert_eq!(text(&mut other, &["GET", "xx"]), "$1\r\n1");
}

#[test]
fn function_kill_ends_a_busy_function_from_the_same_worker() {
    let p = one_worker();
    let mut other = conn(&p);
    let lib = "#!lua name=spin\nredis.register_function{function_name='spin', \
               callback=function() while true do end end, flags={'no-writes'}}";
    assert_eq!(text(&mut other, &["FUNCTION", "LOAD", lib]), "$4\r\nspin");
    let mut call = conn(&p);
    start(&mut call, &["FCALL", "spin", "0"]);
    let busy = until_busy(&mut other);
    assert!(
        busy.starts_with("BUSY Redis is busy running a script. You can only call FUNCTION KILL"),
        "{busy}"
    );
    let e = text(&mut other, &["SCRIPT", "KILL"]);
    assert!(e.starts_with("BUSY"), "SCRIPT KILL of a function: {e}");
    let stats = text(&mut other, &["FUNCTION", "STATS"]);
    assert!(stats.contains("spin"), "{stats}");
    assert_eq!(text(&mut other, &["FUNCTION", "KILL"]), "OK");
    let killed = shown(&call.read().expect("FCALL's reply").raw);
    assert!(killed.contains("Script killed by user"), "{killed}");
    assert_eq!(text(&mut other, &["PING"]), "PONG");
}

#[test]
fn shutdown_nosave_from_the_scripts_worker_stops_the_server() {
    let mut p = one_worker();
    let mut other = conn(&p);
    let mut script = conn(&p);
    // A script that wrote cannot be killed: only SHUTDOWN NOSAVE ends it.
    start(
        &mut script,
        &["EVAL", "redis.call('set', 'w', 1) while true do end", "0"],
    );
    until_busy(&mut other);
    let e = text(&mut other, &["SCRIPT", "KILL"]);
    assert!(e.starts_with("UNKILLABLE"), "{e}");
    // A save would wait for the script: only NOSAVE is allowed, as in Redis.
    let e = text(&mut other, &["SHUTDOWN"]);
    assert!(e.starts_with("BUSY"), "SHUTDOWN during the script: {e}");
    let _ = other.call(&["SHUTDOWN", "NOSAVE"]);
    assert!(
        p.wait_exit(Duration::from_secs(10)),
        "server still running 10 s after SHUTDOWN NOSAVE"
    );
}
